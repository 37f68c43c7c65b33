"""NUMA placement: bind a worker to its GPU's CPUs and memory node before it allocates anything, and
read back where a buffer's pages really are.

On a two-socket server, pinned host memory on the socket away from the GPU crosses the socket link
on every copy (one user's P100 fell from 12.4 to 3.9 GB/s host to device from the remote node:
docs/published-figures.md), so a curve measured wherever the scheduler happened to start a worker
depends on chance. nvbandwidth sets
the CPU affinity NVML calls ideal before it allocates host memory; so do xferbench's workers, and
they ask for their memory on that node too, as `numactl --cpunodebind=N --preferred=N` would.

Preferred, not bound: a strict binding (MPOL_BIND) on a node short of memory calls the OOM killer,
which may take the worker or anything else on the machine; a preferred node takes every page it has
room for, and each point reads back where its source's pages really went.

The main process plans the binding from the environment's NVML facts (plan_binding); the worker
applies it first thing, before the framework is imported (apply_binding); the measuring loop then
reads where each source buffer's pages are (page_nodes). Only Linux can do any of this: elsewhere
every step says why not, and the sweep goes on. On Windows the sweep records why there is no binding
at all (WINDOWS_NO_BINDING): NVML gives a GPU's ideal CPUs on Linux only, so there is nothing to bind to.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import sys
from dataclasses import dataclass
from typing import Any

from xferbench.core.environment import cpu_ranges, device_entry, gpu_link_facts, os_name

BIND_ENV = "XFERBENCH_BIND"  # the binding a worker applies before it imports its framework: JSON
MPOL_PREFERRED = 1  # from linux/mempolicy.h
PAGES_SAMPLED = 64  # pages of a buffer whose node is read: spread over the whole buffer
# System call numbers: glibc wraps neither call (libnuma does, and may be absent).
SYSCALLS = {"x86_64": {"set_mempolicy": 238, "move_pages": 279},
            "aarch64": {"set_mempolicy": 237, "move_pages": 239}}  # fmt: skip
NOT_RESIDENT = "not resident"  # a sampled page with no memory behind it yet
WINDOWS_NO_BINDING = ("Windows: no NUMA binding (workers are bound with Linux's sched_setaffinity and set_mempolicy,"
                      " and NVML names a GPU's ideal CPUs on Linux only), so a worker runs and allocates wherever Windows"
                      " places it")  # fmt: skip


def unavailable_checks() -> list[str]:
    """What this OS gives NUMA placement nothing to do, in the words of environment.unavailable_checks."""
    return [f"NUMA placement: {WINDOWS_NO_BINDING}"] if sys.platform == "win32" else []


@dataclass(frozen=True)
class Binding:
    """Where a worker for one GPU should run and allocate."""

    cpus: tuple[int, ...]
    node: int | None  # the NUMA node to bind memory to; None where NVML gives none

    def to_env(self) -> str:
        return json.dumps({"cpus": list(self.cpus), "node": self.node})

    def describe(self) -> str:
        where = f" and memory to NUMA node {self.node}" if self.node is not None else "; memory not bound (the GPU's NUMA node is unknown)"
        return f"CPUs {cpu_ranges(list(self.cpus))}{where}"


def plan_binding(environment: dict[str, Any], device_id: str) -> tuple[Binding | None, str]:
    """The binding for a worker measuring this CUDA device, or None; and what it is, or why not.

    The CPUs are those NVML calls ideal for the GPU (else its node's CPUs), limited to the ones this
    process may use (a cgroup or taskset may allow fewer)."""
    device = device_entry(environment, device_id)
    nvml = gpu_link_facts(device)  # NVML's, or an AMD GPU's from amdsmi
    if not device_id.startswith("cuda"):
        return None, f"nothing to bind: {device_id} is no CUDA GPU"
    if sys.platform == "win32":
        return None, f"not bound: {WINDOWS_NO_BINDING}"
    if not nvml:
        why = device.get("amdsmi_reason") or (environment.get("nvml") or {}).get("reason") or "NVML did not describe this GPU"
        return None, f"not bound: the GPU's NUMA placement is unknown ({why})"
    ideal = nvml.get("cpu_affinity") or nvml.get("numa_cpus")
    if not ideal:
        return None, "not bound: NVML gives no ideal CPUs or NUMA node for this GPU"
    allowed = environment.get("process_cpus")
    cpus = sorted(set(ideal) & set(allowed)) if allowed else sorted(ideal)
    if not cpus:
        return None, (f"not bound: none of the GPU's ideal CPUs ({cpu_ranges(ideal)}) is among the CPUs this"
                      f" process may use ({cpu_ranges(allowed or [])}); a cgroup or taskset keeps it off the GPU's node")  # fmt: skip
    node = nvml.get("numa_node")  # the host node nearest the GPU (environment._host_node), never the GPU's own memory
    known = isinstance(node, int) and node >= 0 and node != nvml.get("gpu_memory_numa_node")
    binding = Binding(tuple(cpus), node if known else None)
    if known:
        return binding, binding.describe()
    why = nvml.get("numa_node_reason") or "the recorded facts give no host node for this GPU"
    return binding, f"CPUs {cpu_ranges(list(cpus))}; memory not bound: the GPU's NUMA node is unknown ({why})"


def _syscall(name: str) -> tuple[Any, int] | None:
    """libc's syscall() and the number of the call, or None where this machine has neither."""
    number = SYSCALLS.get(platform.machine(), {}).get(name)
    if number is None or not os.path.exists("/proc/self"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syscall, number
    except (OSError, AttributeError):
        return None


def set_memory_node(node: int) -> str | None:
    """Prefer one node for this thread's future allocations (and those of the threads it starts
    later); None on success, else why not. The policy is per thread: the allocating thread, the main
    one, sets it before the framework is imported and starts its own threads."""
    call = _syscall("set_mempolicy")
    if call is None:
        return f"set_mempolicy is not available on {os_name()} {platform.machine()}"
    syscall, number = call
    words = node // 64 + 1
    mask = (ctypes.c_ulong * words)()
    mask[node // 64] = 1 << (node % 64)
    if syscall(number, MPOL_PREFERRED, mask, ctypes.c_ulong(64 * words + 1)) != 0:
        code = ctypes.get_errno()
        return f"the kernel refused set_mempolicy(MPOL_PREFERRED, node {node}): {os.strerror(code)}"
    return None


def set_cpus(cpus: tuple[int, ...]) -> list[int]:
    """Pin every thread of this process to `cpus` (a library may have started threads already: NumPy's
    BLAS pool does at import); threads started later inherit it. Returns the CPUs now allowed."""
    tasks = os.listdir("/proc/self/task") if os.path.isdir("/proc/self/task") else ["0"]
    for task in tasks:
        try:
            os.sched_setaffinity(int(task), cpus)
        except ProcessLookupError:  # a thread that ended meanwhile
            pass
    os.sched_setaffinity(0, cpus)  # this thread last, so a refusal raises here
    return sorted(os.sched_getaffinity(0))


def apply_binding(text: str) -> dict[str, Any]:
    """Apply a binding (Binding.to_env) to this process, before it allocates; return the record kept
    with each series it measures: the CPUs and node asked for, what was done, and why not where not."""
    asked = json.loads(text)
    cpus, node = tuple(asked["cpus"]), asked.get("node")
    record: dict[str, Any] = {"requested": {"cpus": list(cpus), "node": node}, "cpus": None, "node": None,
                              "how": [], "reason": None}  # fmt: skip
    problems = []
    if not hasattr(os, "sched_setaffinity"):
        problems.append(f"CPU affinity cannot be set on {os_name()}")
    else:
        try:
            record["cpus"] = set_cpus(cpus)
            record["how"].append("sched_setaffinity on every thread")
        except OSError as error:
            problems.append(f"the kernel refused the CPU affinity {cpu_ranges(list(cpus))}: {error.strerror or error}")
    if node is not None:
        refused = set_memory_node(node)
        if refused:
            problems.append(refused)
        else:
            record["node"] = node
            record["how"].append(f"set_mempolicy(MPOL_PREFERRED, node {node})")
    record["how"] = "; ".join(record["how"]) or None
    record["reason"] = "; ".join(problems) or None
    return record


def page_nodes(address: int, nbytes: int, samples: int = PAGES_SAMPLED) -> dict[str, int] | None:
    """How many of `samples` pages spread over a buffer sit on each NUMA node, by move_pages(2) in
    query mode (nodes=NULL moves nothing). A page the kernel cannot place is counted under its error
    (EFAULT: memory a driver maps outside the kernel's page tables), an absent one as NOT_RESIDENT.
    None where the call is unavailable or refused."""
    call = _syscall("move_pages")
    if call is None or nbytes <= 0:
        return None
    syscall, number = call
    size = os.sysconf("SC_PAGE_SIZE")
    first = address - address % size
    total = (address + nbytes - first + size - 1) // size
    count = min(samples, total)
    offsets = sorted({round(i * (total - 1) / max(1, count - 1)) for i in range(count)})
    pages = (ctypes.c_void_p * len(offsets))(*[first + i * size for i in offsets])
    status = (ctypes.c_int * len(offsets))()
    if syscall(number, 0, ctypes.c_ulong(len(offsets)), pages, None, status, 0) != 0:
        return None
    counts: dict[str, int] = {}
    for value in status:
        name = str(value) if value >= 0 else NOT_RESIDENT if -value == errno.ENOENT else errno.errorcode.get(-value, str(value))
        counts[name] = counts.get(name, 0) + 1
    return counts


def pages_off_node(host_nodes: dict[str, int] | None, node: Any) -> int:
    """How many sampled pages sit on a NUMA node other than `node` (the GPU's)."""
    if not host_nodes or not isinstance(node, int) or node < 0:
        return 0
    return sum(count for name, count in host_nodes.items() if name.isdigit() and int(name) != node)


def placed_pages(host_nodes: dict[str, int] | None) -> int:
    """How many sampled pages the kernel could place on a node at all (not EFAULT, not absent)."""
    return sum(count for name, count in (host_nodes or {}).items() if name.isdigit())
