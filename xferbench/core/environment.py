"""The environment a result was measured in: enough to compare two bug reports."""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import Any

from xferbench.core import c2c
from xferbench.core.spec import HOST_ENV
from xferbench.core.vendors import label_devices

VERSIONED_PACKAGES = (
    "xferbench", "numpy", "pandas", "torch", "tensorflow", "tensorflow-metal",
    "jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin", "jax-cuda12-pjrt", "jax-cuda13-pjrt",
    "cupy", "cupy-cuda12x", "cupy-cuda13x", "nvidia-cuda-nvrtc-cu12", "nvidia-cuda-nvrtc", "nvidia-ml-py",
)  # fmt: skip
# Distributions that install the same module: two of one group in one environment conflict.
SAME_MODULE = {"cupy": ("cupy", "cupy-cuda12x", "cupy-cuda13x"), "the JAX CUDA plugin": ("jax-cuda12-plugin", "jax-cuda13-plugin")}
# Named one by one, not by prefix: TF_* and CUDA_* also hold tokens and paths of other tools.
SETTINGS = (
    "GLIBC_TUNABLES", "LD_PRELOAD", "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
    "TF_CPP_MIN_LOG_LEVEL", "TF_ENABLE_ONEDNN_OPTS", "TF_FORCE_GPU_ALLOW_GROWTH", "TF_GPU_ALLOCATOR",
    "TF_GPU_THREAD_MODE", "TF_NUM_INTEROP_THREADS", "TF_NUM_INTRAOP_THREADS", "TF_XLA_FLAGS", "XLA_FLAGS",
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING", "CUDA_MODULE_LOADING",
    "NVIDIA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "PYTORCH_MPS_HIGH_WATERMARK_RATIO", "PYTORCH_ENABLE_MPS_FALLBACK", "CUPY_ENABLE_UMP",
    "CUPY_ACCELERATORS", "XLA_PYTHON_CLIENT_PREALLOCATE", "XLA_PYTHON_CLIENT_MEM_FRACTION",
    "XLA_PYTHON_CLIENT_ALLOCATOR",
)  # fmt: skip


def _command(*args: str) -> str | None:
    """What a macOS tool prints (sysctl, ioreg, system_profiler), or None where it is missing or fails."""
    try:
        done = subprocess.run(list(args), capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 and done.stdout.strip() else None


def sysctl(name: str) -> str | None:
    """One of macOS's sysctl values as `sysctl -n NAME` prints it, or None where it has none."""
    out = _command("sysctl", "-n", name)
    return out.strip() if out else None


@functools.cache
def cpu_name() -> str:
    """The CPU's marketing name, which platform.processor() often leaves empty. On a Mac, the chip's:
    "Apple M1 Pro" (sysctl machdep.cpu.brand_string, read once with the Mac's other facts)."""
    if sys.platform == "darwin":
        chip = mac_facts().get("chip")
        if chip:
            return str(chip)
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
                key, _, value = line.partition(":")
                fields.setdefault(key.strip().lower(), value.strip())
    except OSError:
        pass
    return c2c.arm_cpu_name(fields) or platform.processor() or platform.machine() or "unknown CPU"


def package_versions() -> dict[str, str]:
    """Versions of the installed packages that matter, read without importing them."""
    versions = {}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return versions


def package_conflicts(versions: dict[str, str]) -> list[str]:
    """Installed packages that provide the same module, with what to do: pip lets a CUDA 12 and a
    CUDA 13 build of CuPy sit side by side, and whichever was installed last wins, file by file."""
    found = []
    for module, names in SAME_MODULE.items():
        present = [f"{name} {versions[name]}" for name in names if name in versions]
        if len(present) > 1:
            found.append(f"{' and '.join(present)} are all installed and provide {module}: keep the one that matches"
                         " the driver (CUDA 13 builds need driver 580 or newer), pip uninstall the others, then"
                         " reinstall the one kept")  # fmt: skip
    return found


def windows_memory() -> tuple[int, int] | None:
    """Windows' installed and available physical memory in bytes (GlobalMemoryStatusEx's ullTotalPhys and
    ullAvailPhys), read through ctypes as any Windows Python can; None where the call is missing or fails.
    Windows has no sysconf, so this is its one source of both figures."""
    import ctypes

    class MemoryStatus(ctypes.Structure):  # MEMORYSTATUSEX: two DWORDs, then seven 64-bit counts
        _fields_ = [("dwLength", ctypes.c_uint32), ("dwMemoryLoad", ctypes.c_uint32)] + [
            (name, ctypes.c_uint64) for name in ("ullTotalPhys", "ullAvailPhys", "ullTotalPageFile", "ullAvailPageFile",
                                                 "ullTotalVirtual", "ullAvailVirtual", "ullAvailExtendedVirtual")]  # fmt: skip

    status = MemoryStatus(dwLength=ctypes.sizeof(MemoryStatus))  # Windows refuses a call without it
    try:
        done = ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status))  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return None
    return (int(status.ullTotalPhys), int(status.ullAvailPhys)) if done else None


def _total_memory() -> int | None:
    """The installed memory in bytes: on a Mac, macOS's own figure (sysctl hw.memsize), which the GPU shares;
    on Windows, GlobalMemoryStatusEx's."""
    if sys.platform == "darwin":
        memsize = mac_facts().get("memory_bytes")
        if isinstance(memsize, int):
            return memsize
    if sys.platform == "win32":
        memory = windows_memory()
        return memory[0] or None if memory else None
    return _physical_pages_memory()


def _physical_pages_memory() -> int | None:
    """The installed memory as POSIX's sysconf counts it (physical pages times the page size); None without sysconf."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


IOREG_CORES = re.compile(r'"gpu-core-count"\s*=\s*(\d+)')
PROFILER_CORES = re.compile(r"Total Number of Cores:\s*(\d+)")


def apple_gpu_cores() -> tuple[int | None, str]:
    """The Apple GPU's core count and where it was read, or None and why not. Apple gives some chips'
    memory bandwidth per GPU configuration (an M3 Max with 30 or 40 cores), and a Mac's chip name alone
    does not say which it has. ioreg answers at once; system_profiler, the fallback, takes a second or more.
    Only SPDisplaysDataType's count is the GPU's: SPHardwareDataType's "Total Number of Cores" is the CPU's."""
    out = _command("ioreg", "-rc", "AGXAccelerator")
    found = IOREG_CORES.search(out or "")
    if found:
        return int(found.group(1)), "ioreg -rc AGXAccelerator (gpu-core-count)"
    out = _command("system_profiler", "SPDisplaysDataType")
    found = PROFILER_CORES.search(out or "")
    if found:
        return int(found.group(1)), "system_profiler SPDisplaysDataType (Total Number of Cores)"
    return None, "neither ioreg (AGXAccelerator gpu-core-count) nor system_profiler SPDisplaysDataType gave the GPU's core count"


def _memsize() -> int | None:
    """The Mac's installed memory in bytes, as macOS counts it (sysctl hw.memsize), or None where it says no number."""
    memsize = sysctl("hw.memsize")
    return int(memsize) if memsize and memsize.isdigit() else None


# The Mac's facts as the sweep read them (JSON), handed to each worker it starts: a worker per series
# would otherwise run ioreg and sysctl again, each time, for the same answers.
MAC_FACTS_ENV = "XFERBENCH_MAC_FACTS"


def _handed_facts() -> dict[str, Any] | None:
    """The facts the sweep handed this worker (MAC_FACTS_ENV), or None where it handed none it could read."""
    try:
        facts = json.loads(os.environ.get(MAC_FACTS_ENV) or "null")
    except ValueError:
        return None
    return facts if isinstance(facts, dict) and facts else None


@functools.cache
def mac_facts() -> dict[str, Any]:
    """The Mac, read once per sweep from macOS itself rather than from a framework (torch and TensorFlow
    name the Apple GPU each in their own words): its chip, GPU core count, installed memory and macOS
    version. A worker takes the sweep's reading (facts_for_workers) rather than run the tools again.
    {} off macOS."""
    if sys.platform != "darwin":
        return {}
    handed = _handed_facts()
    if handed is not None:
        return handed
    cores, source = apple_gpu_cores()
    return {"chip": sysctl("machdep.cpu.brand_string"), "gpu_cores": cores, "gpu_cores_source": source,
            "memory_bytes": _memsize() or _physical_pages_memory(), "macos": platform.mac_ver()[0] or None,
            "apple_silicon": platform.machine() == "arm64"}  # fmt: skip


def facts_for_workers() -> dict[str, str]:
    """What a worker's environment carries so that it gathers no machine facts of its own: on a Mac, the
    sweep's one reading of macOS's tools (mac_facts); nothing elsewhere, where no tool is run."""
    return {MAC_FACTS_ENV: json.dumps(mac_facts())} if sys.platform == "darwin" else {}


def apple_silicon() -> bool:
    """Whether this Mac's GPU shares the CPU's memory: Apple silicon does; an Intel Mac's MPS runs on an
    AMD or Intel GPU of its own, reached over PCIe or sharing memory by other rules."""
    return bool(mac_facts().get("apple_silicon", True))


def apple_gpu_name() -> str:
    """The Apple GPU's one name, whichever framework reached it: "Apple M1 Pro (16-core GPU)"."""
    facts = mac_facts()
    if not apple_silicon():  # an Intel Mac: its chip name is the CPU's, which says nothing of the GPU
        return "the GPU of an Intel Mac (MPS)"
    chip = facts.get("chip") or "Apple silicon"
    return f"{chip} ({facts['gpu_cores']}-core GPU)" if facts.get("gpu_cores") else f"{chip} GPU"


def mps_device(described: dict[str, Any] | None = None) -> dict[str, Any]:
    """The environment's entry for the Apple GPU: one name, the chip, its GPU cores and the memory it
    shares with the CPU, from macOS (mac_facts), over whatever a framework said of it."""
    facts = mac_facts()
    return {**(described or {}), "id": "mps", "kind": "mps", "name": apple_gpu_name(), "chip": facts.get("chip"),
            "gpu_cores": facts.get("gpu_cores"), "gpu_cores_source": facts.get("gpu_cores_source"),
            "memory_bytes": facts.get("memory_bytes"), "unified_memory": apple_silicon(), "vendor": "Apple",
            "runtime": "Metal", "host_link": "unified memory" if apple_silicon() else None}  # fmt: skip


def _text(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def parse_cpu_list(text: str) -> list[int]:
    """'0-3,8,10-11' (the kernel's cpulist format) -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if part.strip():
            first, _, last = part.partition("-")
            cpus.update(range(int(first), int(last or first) + 1))
    return sorted(cpus)


def cpu_ranges(cpus: list[int]) -> str:
    """[0, 1, 2, 3, 8] -> '0-3,8': the form numactl and taskset take."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(f"{a}-{b}" if b > a else str(a) for a, b in runs)


def process_cpus() -> list[int] | None:
    """The CPUs this process may run on (its workers inherit them), or None where the OS does not say."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS and Windows have no sched_getaffinity
        return None


# The CPU features TensorFlow's Linux build reads to decide whether oneDNN is on when TF_ENABLE_ONEDNN_OPTS
# is unset (tensorflow/core/util/port.cc, DefaultOneDnnPolicy), as /proc/cpuinfo names them. oneDNN in turn
# decides where TensorFlow's host buffers come from, so the same sweep can differ between two CPUs.
ONEDNN_CPU_FEATURES = ("avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16")
NEOVERSE_V1 = ("0x41", "0xd40")  # Arm's implementer code and the Neoverse V1's part number, its other trigger


def cpu_features() -> dict[str, bool] | None:
    """Which of the CPU features behind TensorFlow's oneDNN default this CPU has, from /proc/cpuinfo's
    first processor (its flags on x86, its part number on Arm); None where there is no /proc/cpuinfo
    (macOS, Windows), so a missing feature is never read as an absent one."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if not line.strip():
                    if fields:
                        break  # the first processor's block is enough: the features are the same on every core
                    continue
                key, _, value = line.partition(":")
                fields.setdefault(key.strip().lower(), value.strip().lower())
    except OSError:
        return None
    if "flags" in fields:
        flags = set(fields["flags"].split())
        return {name: name in flags for name in ONEDNN_CPU_FEATURES}
    if "cpu part" in fields:
        return {"neoverse_v1": (fields.get("cpu implementer"), fields["cpu part"]) == NEOVERSE_V1}
    return None


def os_name() -> str:
    """The OS by the name its users know it."""
    return {"darwin": "macOS", "linux": "Linux", "win32": "Windows"}.get(sys.platform, platform.system() or sys.platform)


def unavailable_checks() -> list[str]:
    """The checks this OS gives xferbench nothing to make, each with what it would have read: said once
    before measuring and kept in the result, so a missing warning is never read as a clean bill."""
    missing = []
    if not os.access("/proc/stat", os.R_OK) or not os.path.isdir("/proc/self/task"):
        missing.append("busy-machine detection: other processes' CPU use and this process's wait for a CPU"
                       " are read from Linux's /proc, so no point can be flagged as measured on a busy machine")
    if not hasattr(os, "sched_getaffinity"):
        missing.append("the CPUs this process may run on (no sched_getaffinity), so a cgroup or taskset limit is not recorded")
    if sys.platform == "darwin":
        missing.append("how much memory is free: macOS gives only the installed total, so the memory check stops"
                       " only a batch larger than all of it")
    if sys.platform == "linux" and not os.path.isdir("/sys/devices/system/node"):
        missing.append("NUMA placement: the kernel's NUMA nodes are read from /sys")
    return missing


def load_average() -> list[float] | None:
    """The 1, 5 and 15-minute load averages as the sweep starts: another busy process skews CPU-side
    figures (a torch CPU copy's threads stall behind it), and a bug report should show it."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):  # Windows
        return None


def transparent_hugepages() -> dict[str, str] | None:
    """The kernel's transparent huge page modes (always, madvise or never): a path that touches fresh
    memory on every call faults once per 4 KiB page, or once per 2 MiB where huge pages back it, so
    the same sweep falls by 4x on one kernel and by a quarter on another. None off Linux."""
    found = {}
    for name in ("enabled", "defrag"):
        try:
            with open(f"/sys/kernel/mm/transparent_hugepage/{name}") as file:
                text = file.read()
        except OSError:
            continue
        chosen = re.search(r"\[([^\]]*)\]", text)  # the kernel marks the mode in force: "always [madvise] never"
        found[name] = chosen.group(1) if chosen else text.strip()
    return found or None


SYSFS = "/sys"  # where the kernel's PCI and NUMA facts are read from (a temporary tree in tests)


def numa_node_cpus(node: Any) -> list[int] | None:
    """The CPUs of a NUMA node, from sysfs; None off Linux, for an unknown node, or for a node with
    memory and no CPUs (a GPU's own memory on a Grace Hopper, CXL memory)."""
    if not isinstance(node, int) or node < 0:
        return None
    try:
        with open(f"{SYSFS}/devices/system/node/node{node}/cpulist") as cpulist:
            return parse_cpu_list(cpulist.read()) or None
    except (OSError, ValueError):
        return None


def sysfs_numa_node(bus_id: Any) -> int | None:
    """The NUMA node the kernel gives a PCI device (/sys/bus/pci/devices/<address>/numa_node), or
    None where it does not know (-1: a single-node machine, or firmware that does not say)."""
    key = pci_key(bus_id)
    if key is None:
        return None
    domain, bus, device, function = key
    try:
        with open(f"{SYSFS}/bus/pci/devices/{domain:04x}:{bus:02x}:{device:02x}.{function:x}/numa_node") as found:
            node = int(found.read().strip())
    except (OSError, ValueError):
        return None
    return node if node >= 0 else None


def _host_node(pynvml: Any, handle: Any, bus_id: Any, gpu_memory_node: Any, node_words: int, read: Callable[..., Any]) -> dict[str, Any]:
    """The host NUMA node nearest a GPU: where its pinned host buffers belong.

    NVML's nvmlDeviceGetNumaNodeId answers only where the GPU's own memory is a NUMA node (a Grace
    Hopper); on a PCIe GPU in an x86 server it is Not Supported, and where it answers it names the
    GPU's memory, never a place for host buffers. The host side comes from NVML's memory affinity at
    node scope, else from the kernel's PCI facts in sysfs. A node that holds the GPU's memory, or has
    no CPUs, is never given: binding host buffers there would put them in GPU or far memory."""
    scope = getattr(pynvml, "NVML_AFFINITY_SCOPE_NODE", 0)
    words = read(getattr(pynvml, "nvmlDeviceGetMemoryAffinity", None), handle, node_words, scope)
    nodes = _mask_cpus(words) if words is not None else []
    node, source = (nodes[0], "NVML memory affinity (node scope)") if len(nodes) == 1 else (None, None)
    if node is None:
        node = sysfs_numa_node(bus_id)
        source = "the kernel's PCI facts (sysfs numa_node)" if node is not None else None
    why = None
    if node is None:
        nvml = f"NVML's memory affinity names nodes {', '.join(map(str, nodes))}" if nodes else "NVML gives no memory affinity"
        kernel = "the kernel gives no node for its PCI address" if pci_key(bus_id) else "NVML gives no PCI address to ask the kernel by"
        why = f"{nvml}, and {kernel}"
    elif isinstance(gpu_memory_node, int) and node == gpu_memory_node:
        node, why = None, f"node {gpu_memory_node} holds the GPU's own memory: host buffers are not bound there"
    elif numa_node_cpus(node) is None:
        node, why = None, f"node {node} has no CPUs listed in sysfs (memory only): host buffers are not bound there"
    return {"numa_node": node, "numa_node_source": source, "numa_node_reason": why}


def _node_count() -> int:
    """How many NUMA nodes the kernel may have (for the size of NVML's node mask); 1 off Linux."""
    try:
        return len([n for n in os.listdir(f"{SYSFS}/devices/system/node") if n.startswith("node") and n[4:].isdigit()]) or 1
    except OSError:
        return 1


def _mask_cpus(words: Any) -> list[int]:
    """NVML's CPU affinity bitmask (64-bit words, lowest CPU in bit 0 of the first) -> CPU ids."""
    return [64 * i + bit for i, word in enumerate(words) for bit in range(64) if int(word) >> bit & 1]


def _reader() -> Callable[..., Any]:
    def read(function: Callable[..., Any] | None, *args: Any) -> Any:
        try:
            return _text(function(*args)) if function is not None else None
        except Exception:  # NVML raises per-field errors for unsupported queries: record null
            return None

    return read


def _health(pynvml: Any, handle: Any, read: Callable[..., Any]) -> dict[str, Any]:
    """What a health check compares before and after a run: the PCIe replay counter (links that
    retransmit packets count up), the clocks and the performance state (P0 is full speed)."""
    pstate = read(getattr(pynvml, "nvmlDeviceGetPerformanceState", None), handle)
    return {
        "pcie_replay_counter": read(getattr(pynvml, "nvmlDeviceGetPcieReplayCounter", None), handle),
        "clocks_mhz": {name: read(getattr(pynvml, "nvmlDeviceGetClockInfo", None), handle, getattr(pynvml, constant, value))
                       for name, constant, value in (("sm", "NVML_CLOCK_SM", 1), ("memory", "NVML_CLOCK_MEM", 2))},
        "pstate": f"P{pstate}" if isinstance(pstate, int) else None,
    }  # fmt: skip


def _start_nvml() -> tuple[Any, str | None]:
    """pynvml, started; or None and why not."""
    try:
        import pynvml
    except ImportError:
        return None, "nvidia-ml-py is not installed: pip install 'xferbench[nvml]'"
    try:
        pynvml.nvmlInit()
    except Exception as error:  # NVMLError subclasses: no driver, no library, no permission
        return None, f"NVML could not start: {error}"
    return pynvml, None


def nvml_health() -> dict[str, Any]:
    """Each GPU's replay counter, clocks and P-state now (read after a run, to set beside the before)."""
    pynvml, why = _start_nvml()
    if pynvml is None:
        return {"available": False, "reason": why}
    read = _reader()
    try:
        gpus = []
        for index in range(read(pynvml.nvmlDeviceGetCount) or 0):
            try:
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            except Exception as error:
                gpus.append({"index": index, "reason": f"NVML could not open GPU {index}: {error}"})
                continue
            gpus.append({"index": index, "uuid": read(pynvml.nvmlDeviceGetUUID, handle), **_health(pynvml, handle, read)})
        return {"available": True, "gpus": gpus}
    finally:
        read(pynvml.nvmlShutdown)


def nvml_info() -> dict[str, Any]:
    """Driver, CUDA and per-GPU PCIe link, NUMA and health facts from NVML, or why they are missing."""
    pynvml, why = _start_nvml()
    if pynvml is None:
        return {"available": False, "reason": why}
    read = _reader()

    words = -(-(os.cpu_count() or 64) // 64)  # 64 CPUs per word of NVML's affinity mask
    node_words = 1 + _node_count() // 64  # and 64 NUMA nodes per word of its memory-affinity mask

    try:
        cuda = read(pynvml.nvmlSystemGetCudaDriverVersion)
        gpus = []
        for index in range(read(pynvml.nvmlDeviceGetCount) or 0):
            try:
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            except Exception as error:  # no permission on this GPU, or it fell off the bus: say so, go on
                gpus.append({"index": index, "uuid": None, "reason": f"NVML could not open GPU {index}: {error}"})
                continue
            pci = read(pynvml.nvmlDeviceGetPciInfo, handle)
            bus_id = _text(pci.busId) if pci is not None else None
            memory = read(pynvml.nvmlDeviceGetMemoryInfo, handle)
            gpu_memory_node = read(getattr(pynvml, "nvmlDeviceGetNumaNodeId", None), handle)  # absent from older bindings
            host = _host_node(pynvml, handle, bus_id, gpu_memory_node, node_words, read)
            affinity = read(getattr(pynvml, "nvmlDeviceGetCpuAffinity", None), handle, words)
            gpus.append(
                {
                    "index": index,
                    "name": read(pynvml.nvmlDeviceGetName, handle),
                    "uuid": read(pynvml.nvmlDeviceGetUUID, handle),
                    "pci_bus_id": bus_id,
                    "memory_bytes": memory.total if memory is not None else None,
                    "pcie_gen_current": read(pynvml.nvmlDeviceGetCurrPcieLinkGeneration, handle),
                    "pcie_width_current": read(pynvml.nvmlDeviceGetCurrPcieLinkWidth, handle),
                    "pcie_gen_max": read(pynvml.nvmlDeviceGetMaxPcieLinkGeneration, handle),
                    "pcie_width_max": read(pynvml.nvmlDeviceGetMaxPcieLinkWidth, handle),
                    # The GPU's own maximum, uncapped by the port above it (which a VM's virtual root port may understate).
                    "pcie_gen_gpu_max": read(getattr(pynvml, "nvmlDeviceGetGpuMaxPcieLinkGeneration", None), handle),
                    # The host NUMA node nearest the GPU, where it came from, or why it is unknown (_host_node),
                    # and the node of the GPU's own memory where that is a NUMA node (never one for host buffers).
                    **host,
                    "gpu_memory_numa_node": gpu_memory_node if isinstance(gpu_memory_node, int) and gpu_memory_node >= 0 else None,
                    # The CPUs NVML calls ideal for this GPU (those nearest its PCIe root), and its node's CPUs.
                    "cpu_affinity": _mask_cpus(affinity) if affinity is not None else None,
                    "numa_cpus": numa_node_cpus(host["numa_node"]),
                    **_health(pynvml, handle, read),
                    "c2c": c2c.read_c2c(pynvml, handle),  # NVLink-C2C on a Grace node, where PCIe facts are not the host link
                }
            )
        return {
            "available": True,
            "driver": read(pynvml.nvmlSystemGetDriverVersion),
            "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None,
            "gpus": gpus,
        }
    finally:
        read(pynvml.nvmlShutdown)  # a failing shutdown must not cost the facts already read


def nvidia_gpu_present() -> bool:
    """Whether this machine has an NVIDIA GPU: the driver's /proc entries, else NVML."""
    gpus = "/proc/driver/nvidia/gpus"
    try:
        if os.path.isdir(gpus) and os.listdir(gpus):
            return True
    except OSError:  # a container may hide the driver's entries: NVML is asked instead
        pass
    if sys.platform == "darwin":
        return False
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetCount() > 0
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no binding, no driver, no permission: no NVIDIA GPU to use
        return False


def amd_gpu_present() -> bool:
    """Whether the kernel's amdgpu driver lists a GPU to ROCm: a node of its KFD topology with a gpu_id
    other than 0 (the CPU's nodes have 0), as rocminfo reads it."""
    nodes = f"{SYSFS}/class/kfd/kfd/topology/nodes"
    try:
        for node in os.listdir(nodes):
            with open(f"{nodes}/{node}/gpu_id") as gpu_id:
                if gpu_id.read().strip() not in ("", "0"):
                    return True
    except (OSError, ValueError):
        pass
    return False


def intel_gpu_present() -> bool:
    """Whether the kernel lists an Intel GPU (PCI vendor 0x8086) with a render node that Level Zero can
    open: a DRM card driven by i915 or xe."""
    try:
        cards = [c for c in os.listdir(f"{SYSFS}/class/drm") if re.fullmatch(r"card\d+", c)]
        for card in cards:
            with open(f"{SYSFS}/class/drm/{card}/device/vendor") as vendor:
                if vendor.read().strip().lower() == "0x8086" and os.path.basename(
                        os.path.realpath(f"{SYSFS}/class/drm/{card}/device/driver")) in ("i915", "xe"):  # fmt: skip
                    return True
    except OSError:
        pass
    return False


def accelerator_kinds() -> list[str]:
    """The kinds of GPU this machine has, by the device names frameworks give them, found without importing
    a framework, so commands that only describe the machine answer at once: NVIDIA GPUs by the driver's
    /proc entries or NVML, AMD GPUs by the kernel's KFD topology (PyTorch for ROCm names them cuda, as
    it does NVIDIA's), Intel GPUs by their DRM cards (xpu), Apple GPUs by the platform (every
    Apple-silicon Mac has one)."""
    kinds = []
    if nvidia_gpu_present() or (sys.platform == "linux" and amd_gpu_present()):
        kinds.append("cuda")
    if sys.platform == "linux" and intel_gpu_present():
        kinds.append("xpu")
    if sys.platform == "darwin" and platform.machine() == "arm64":
        kinds.append("mps")
    return kinds


def pci_key(bus_id: Any) -> tuple[int, ...] | None:
    """'00000000:3B:00.0' (NVML) and '0000:3b:00.0' (CUDA) -> (0, 59, 0, 0): one key for both forms."""
    try:
        domain, bus, rest = str(bus_id).strip().split(":")
        device, function = rest.split(".")
        return tuple(int(part, 16) for part in (domain, bus, device, function))
    except (ValueError, AttributeError):
        return None


def _attach_nvml(devices: list[dict[str, Any]], nvml: dict[str, Any]) -> None:
    """Give each CUDA device its NVML facts, matched by UUID, else by PCI bus id: CUDA and NVML may
    number GPUs differently, so an index is never trusted."""
    gpus = nvml.get("gpus", [])
    by_uuid = {str(gpu["uuid"]).removeprefix("GPU-"): gpu for gpu in gpus if gpu.get("uuid")}
    by_pci = {pci_key(gpu.get("pci_bus_id")): gpu for gpu in gpus if pci_key(gpu.get("pci_bus_id"))}
    for device in devices:
        gpu = by_uuid.get(str(device.get("uuid") or "").removeprefix("GPU-")) or by_pci.get(pci_key(device.get("pci_bus_id")))
        if gpu:
            device["nvml"] = gpu
            device.update(driver=nvml.get("driver"), cuda_driver=nvml.get("cuda_driver"))


def settings() -> dict[str, str]:
    """Environment variables that change what a transfer costs (allocator, threads, visible devices)."""
    return {k: os.environ[k] for k in sorted(SETTINGS) if k in os.environ}


def capture(frameworks: Mapping[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Host, OS, CPU, Python, settings, package versions, devices and NVML facts, captured before measuring.

    `frameworks` maps each framework to its environment() as its own process saw it; a device seen
    by several frameworks is listed once, as the first one described it, with the facts it lacked
    (a UUID, say) taken from the others. The Apple GPU is named and described from macOS (mps_device),
    so two runs on one Mac name it alike whichever framework answered first.
    """
    devices: list[dict[str, Any]] = [{"id": "cpu", "kind": "cpu", "name": cpu_name()}]
    known = {"cpu": devices[0]}
    recorded = {}
    for name, info in (frameworks or {}).items():
        if info:
            recorded[name] = {k: v for k, v in info.items() if k != "devices"}
            for device in info.get("devices", []):
                if device["id"] not in known:
                    known[device["id"]] = dict(device)
                    devices.append(known[device["id"]])
                else:
                    first = known[device["id"]]
                    first.update({k: v for k, v in device.items() if first.get(k) is None and v is not None})
    if "mps" in known:
        known["mps"].update(mps_device(known["mps"]))
    nvml = nvml_info()
    _attach_nvml(devices, nvml)
    amd = None
    if any(device.get("vendor") == "AMD" for device in devices):  # amdsmi is asked only where a framework saw an AMD GPU
        from xferbench.core.amdsmi_facts import amdsmi_info, attach_amdsmi

        amd = amdsmi_info()
        attach_amdsmi(devices, amd)
    label_devices(devices, platform.machine())
    return {
        "host": os.environ.get(HOST_ENV) or platform.node(),
        "os": platform.platform(),
        "macos": mac_facts().get("macos"),
        "machine": platform.machine(),
        "cpu": cpu_name(),
        "cpu_count": os.cpu_count(),
        "cpu_features": cpu_features(),
        "process_cpus": process_cpus(),
        "unavailable_checks": unavailable_checks(),
        "load_average": load_average(),
        "transparent_hugepages": transparent_hugepages(),
        "memory_bytes": _total_memory(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "settings": settings(),
        "versions": package_versions(),
        "frameworks": recorded,
        "devices": devices,
        "nvml": nvml,
        **({"amdsmi": amd} if amd is not None else {}),
    }


# Per-lane, per-direction PCIe payload rate in GB/s (10^9 B) after line coding: x16 gives the usual
# 15.75 (Gen3), 31.5 (Gen4) and 63 (Gen5).
PCIE_LANE_GBPS = {1: 0.25, 2: 0.5, 3: 0.984375, 4: 1.96875, 5: 3.9375, 6: 7.5625}


def device_entry(environment: dict[str, Any], device_id: str) -> dict[str, Any]:
    """The environment's description of a device, or {} when it has none."""
    return next((d for d in environment.get("devices", []) if d.get("id") == device_id), {})


def gpu_link_facts(device: dict[str, Any]) -> dict[str, Any]:
    """A GPU's link and NUMA facts: NVML's for an NVIDIA GPU, amdsmi's (under NVML's keys) for an AMD one,
    else the kernel's PCI facts that stood in for amdsmi."""
    return device.get("nvml") or device.get("amdsmi") or device.get("pci_sysfs") or {}


# Where a link's generation and width come from, best supported first: what the link ran at while
# data moved; NVML's maximum for this GPU in this system (capped by the port above it, which a virtual
# machine's virtual root port may understate); the GPU's own maximum (NVML has no such width: the
# system's is used).
UNDER_LOAD, SYSTEM_MAX, GPU_MAX = "under load", "system maximum", "GPU maximum"


def link_readings(device: dict[str, Any], link: dict[str, Any] | None = None) -> list[tuple[str, int, int]]:
    """Every reading of a device's PCIe link as (source, generation, width), best supported first.
    `link` is a series' NVML samples (telemetry), whose highest generation and width under load lead."""
    if c2c.is_c2c(device):  # NVML still reads a PCIe link on a Grace node: it is not the host link
        return []
    nvml, link = gpu_link_facts(device), link or {}
    summary = link.get("summary") or {}
    readings = []
    gen, width = summary.get("gen_under_load"), summary.get("width_under_load")
    if gen and width:
        readings.append((UNDER_LOAD, gen[1], width[1]))
    gen_max = link.get("pcie_gen_max") or nvml.get("pcie_gen_max")
    width_max = link.get("pcie_width_max") or nvml.get("pcie_width_max")
    if gen_max and width_max:
        readings.append((SYSTEM_MAX, gen_max, width_max))
    gpu_gen = link.get("pcie_gen_gpu_max") or nvml.get("pcie_gen_gpu_max")
    if gpu_gen and width_max:
        readings.append((GPU_MAX, gpu_gen, width_max))
    return [(source, g, w) for source, g, w in readings if g in PCIE_LANE_GBPS and w]


def lane_rate(gen: int, width: int) -> float:
    """The theoretical per-direction payload rate of a link, GB/s."""
    return PCIE_LANE_GBPS[gen] * width


def pcie_ceiling(device: dict[str, Any], link: dict[str, Any] | None = None) -> tuple[float, str] | None:
    """The theoretical per-direction link rate of a device NVML described, and a label that says so
    and which reading it came from (link_readings), naming any reading that disagrees with it.

    Never the idle current reading: an idle link drops its generation to save power. On a Grace node, the
    NVLink-C2C link's rate (c2c.ceiling), never a PCIe reading's."""
    if c2c.is_c2c(device):
        return c2c.ceiling(device)
    readings = link_readings(device, link)
    if not readings:
        return None
    source, gen, width = readings[0]
    gbps = lane_rate(gen, width)
    label = f"PCIe Gen{gen} x{width} theoretical ({gbps:.1f} GB/s, {source})"
    others = [f"{other} Gen{g} x{w}" for other, g, w in readings[1:] if (g, w) != (gen, width)]
    if others:
        label += f"; {'amdsmi' if device.get('amdsmi') and not device.get('nvml') else 'NVML'} also reads {', '.join(others)}"
    nvml = gpu_link_facts(device)
    current = (nvml.get("pcie_gen_current"), nvml.get("pcie_width_current"))
    if source != UNDER_LOAD and None not in current and current != (gen, width):
        label += f"; read Gen{current[0]} x{current[1]} before the run"
    return gbps, label


def link_disagreement(mbps: float, device: dict[str, Any], link: dict[str, Any] | None = None) -> str | None:
    """Why a figure above the link's ceiling says the link facts disagree rather than that the
    measurement failed: another reading allows it (a VM's virtual port understating the link, say).
    None when the figure is within the ceiling or when no reading allows it."""
    readings = link_readings(device, link)
    if not readings or mbps <= lane_rate(*readings[0][1:]) * 1e3:
        return None
    allowing = [(source, g, w) for source, g, w in readings[1:] if mbps <= lane_rate(g, w) * 1e3]
    if not allowing:
        return None
    source, gen, width = readings[0]
    other, g, w = allowing[0]
    return (f"link facts disagree: {mbps:,.0f} MB/s exceeds Gen{gen} x{width} ({lane_rate(gen, width):.1f} GB/s, {source})"
            f" but fits the {other}, Gen{g} x{w} ({lane_rate(g, w):.1f} GB/s); in a virtual machine the virtual"
            " root port may advertise less than the GPU's link")  # fmt: skip
