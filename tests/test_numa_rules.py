"""NUMA placement rule by rule, with the kernel stood in for: the binding planned from NVML's facts and
what it says, the record a worker keeps of what it applied, the system calls' arguments, and how
sampled pages are counted. The real calls run in test_numa.py."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys
from typing import Any

import pytest

from xferbench.core import numa
from xferbench.core.environment import os_name

PAGE = os.sysconf("SC_PAGE_SIZE")


def gpu(nvml: dict[str, Any], process: list[int] | None = None, **environment: Any) -> dict[str, Any]:
    return {"process_cpus": process, "devices": [{"id": "cuda:0", "kind": "cuda", "nvml": nvml}], **environment}


# the plan


def test_a_binding_says_where_cpus_and_memory_go() -> None:
    assert numa.Binding((0, 1, 2, 5), 0).describe() == "CPUs 0-2,5 and memory to NUMA node 0"
    assert numa.Binding((4,), None).describe() == "CPUs 4; memory not bound (the GPU's NUMA node is unknown)"
    assert numa.Binding((0, 1), None).to_env() == '{"cpus": [0, 1], "node": null}'


def test_without_nvml_facts_the_reason_is_nvmls_own_or_said_plainly() -> None:
    assert numa.plan_binding({"devices": [{"id": "cuda:0"}]}, "cuda:0") == (
        None, "not bound: the GPU's NUMA placement is unknown (NVML did not describe this GPU)")
    assert numa.plan_binding(gpu({"uuid": "GPU-1"}), "cuda:0") == (
        None, "not bound: NVML gives no ideal CPUs or NUMA node for this GPU")


def test_the_nodes_cpus_stand_in_for_missing_ideal_cpus() -> None:
    binding, said = numa.plan_binding(gpu({"numa_cpus": [6, 7, 8], "numa_node": 1}), "cuda:0")
    assert binding == numa.Binding((6, 7, 8), 1) and said == "CPUs 6-8 and memory to NUMA node 1"
    binding, _ = numa.plan_binding(gpu({"cpu_affinity": [3], "numa_cpus": [6, 7], "numa_node": 1}), "cuda:0")
    assert binding == numa.Binding((3,), 1)  # NVML's ideal CPUs first


def test_node_zero_is_a_node_and_a_node_holding_gpu_memory_is_none() -> None:
    assert numa.plan_binding(gpu({"cpu_affinity": [0, 1], "numa_node": 0}), "cuda:0")[0] == numa.Binding((0, 1), 0)
    binding, said = numa.plan_binding(gpu({"cpu_affinity": [0, 1], "numa_node": 2, "gpu_memory_numa_node": 2}), "cuda:0")
    assert binding == numa.Binding((0, 1), None)
    assert said == "CPUs 0-1; memory not bound: the GPU's NUMA node is unknown (the recorded facts give no host node for this GPU)"
    binding, said = numa.plan_binding(gpu({"cpu_affinity": [0, 1], "numa_node": None, "numa_node_reason": "no sysfs"}), "cuda:0")
    assert binding == numa.Binding((0, 1), None) and said.endswith("unknown (no sysfs)")


def test_windows_plans_no_binding_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "win32")
    assert numa.plan_binding(gpu({"cpu_affinity": [0], "numa_node": 0}), "cuda:0") == (None, f"not bound: {numa.WINDOWS_NO_BINDING}")
    assert numa.unavailable_checks() == [f"NUMA placement: {numa.WINDOWS_NO_BINDING}"]
    monkeypatch.setattr(sys, "platform", "linux")
    assert numa.unavailable_checks() == []


# what a worker applies and keeps


@pytest.fixture
def kernel(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """set_cpus and set_memory_node stood in for: each call is listed, each succeeds."""
    calls: list[tuple[str, Any]] = []
    monkeypatch.setattr(numa, "set_cpus", lambda cpus: calls.append(("cpus", cpus)) or sorted(cpus))
    monkeypatch.setattr(numa, "set_memory_node", lambda node: calls.append(("node", node)) or None)
    return calls


def test_a_binding_applied_is_recorded_whole(kernel: list[tuple[str, Any]]) -> None:
    record = numa.apply_binding(numa.Binding((3, 2), 1).to_env())
    assert kernel == [("cpus", (3, 2)), ("node", 1)]
    assert record == {"requested": {"cpus": [3, 2], "node": 1}, "cpus": [2, 3], "node": 1,
                      "how": "sched_setaffinity on every thread; set_mempolicy(MPOL_PREFERRED, node 1)", "reason": None}  # fmt: skip


def test_a_binding_without_a_node_binds_cpus_only(kernel: list[tuple[str, Any]]) -> None:
    record = numa.apply_binding(numa.Binding((0,), None).to_env())
    assert kernel == [("cpus", (0,))]
    assert record == {"requested": {"cpus": [0], "node": None}, "cpus": [0], "node": None,
                      "how": "sched_setaffinity on every thread", "reason": None}  # fmt: skip


def test_where_nothing_could_be_applied_the_record_says_why_and_how_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "sched_setaffinity", raising=False)
    monkeypatch.setattr(numa, "set_memory_node", lambda node: f"refused node {node}")
    record = numa.apply_binding(numa.Binding((0,), 0).to_env())
    assert record == {"requested": {"cpus": [0], "node": 0}, "cpus": None, "node": None, "how": None,
                      "reason": f"CPU affinity cannot be set on {os_name()}; refused node 0"}  # fmt: skip


# the system calls


class Syscall:
    """libc's syscall() stood in for: keeps each call's arguments and answers as told."""

    def __init__(self, answer: int = 0, fill: list[int] | None = None, error: int = 0) -> None:
        self.answer, self.fill, self.error, self.calls = answer, fill, error, []

    def __call__(self, *args: Any) -> int:
        self.calls.append(args)
        if self.fill is not None:
            status = args[5]
            for i, value in enumerate(self.fill[: len(status)]):
                status[i] = value
        ctypes.set_errno(self.error)
        return self.answer


def test_set_mempolicy_gets_the_preferred_mode_and_a_mask_with_only_the_node(monkeypatch: pytest.MonkeyPatch) -> None:
    call = Syscall()
    monkeypatch.setattr(numa, "_syscall", lambda name: (call, {"set_mempolicy": 238}[name]))
    assert numa.set_memory_node(65) is None
    number, mode, mask, maxnode = call.calls[0]
    assert (number, mode, list(mask), maxnode.value) == (238, numa.MPOL_PREFERRED, [0, 2], 129)
    numa.set_memory_node(0)
    assert list(call.calls[1][2]) == [1] and call.calls[1][3].value == 65
    numa.set_memory_node(64)  # the first node of the second word
    assert list(call.calls[2][2]) == [0, 1] and call.calls[2][3].value == 129


def test_a_refused_set_mempolicy_says_the_kernels_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(numa, "_syscall", lambda name: (Syscall(answer=-1, error=errno.EPERM), 238))
    assert numa.set_memory_node(1) == f"the kernel refused set_mempolicy(MPOL_PREFERRED, node 1): {os.strerror(errno.EPERM)}"
    monkeypatch.setattr(numa, "_syscall", lambda name: None)
    assert numa.set_memory_node(1) == f"set_mempolicy is not available on {os_name()} {platform.machine()}"


def test_every_thread_is_pinned_and_this_one_last(monkeypatch: pytest.MonkeyPatch) -> None:
    pinned: list[tuple[int, tuple[int, ...]]] = []

    def setaffinity(task: int, cpus: tuple[int, ...]) -> None:
        if task == 13:
            raise ProcessLookupError(task)  # a thread that ended meanwhile
        pinned.append((task, cpus))

    monkeypatch.setattr(os.path, "isdir", lambda path: path == "/proc/self/task")
    monkeypatch.setattr(os, "listdir", lambda path: {"/proc/self/task": ["11", "13", "12"]}[path])
    monkeypatch.setattr(os, "sched_setaffinity", setaffinity, raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda task: {0: {5, 4}}[task], raising=False)  # this thread's
    assert numa.set_cpus((4, 5)) == [4, 5]
    assert pinned == [(11, (4, 5)), (12, (4, 5)), (0, (4, 5))]
    monkeypatch.setattr(os.path, "isdir", lambda path: False)
    pinned.clear()
    numa.set_cpus((4,))
    assert pinned == [(0, (4,)), (0, (4,))]  # no task list: this thread, twice


def test_the_syscall_numbers_are_this_machines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    found = numa._syscall("move_pages")
    assert found is not None and found[1] == 239 and callable(found[0])
    assert numa._syscall("set_mempolicy")[1] == 237  # type: ignore[index]
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    assert numa._syscall("move_pages") is None
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    assert numa._syscall("move_pages")[1] == 279  # type: ignore[index]
    monkeypatch.setattr(os.path, "exists", lambda path: path != "/proc/self")
    assert numa._syscall("move_pages") is None  # no /proc: not Linux


def test_the_syscall_is_none_where_libc_cannot_be_opened(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(os.path, "exists", lambda path: True)

    def no_libc(*args: Any, **kwargs: Any) -> None:
        raise OSError("no libc")

    monkeypatch.setattr(ctypes, "CDLL", no_libc)
    assert numa._syscall("move_pages") is None


# where the pages are


def test_move_pages_is_asked_about_pages_spread_over_the_whole_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    call = Syscall(fill=[0, 1, -errno.ENOENT, -errno.EFAULT, -9999, 1])
    monkeypatch.setattr(numa, "_syscall", lambda name: (call, {"move_pages": 279}[name]))
    address = 10 * PAGE + 100  # 6 pages touched: the first partly, the last partly
    assert numa.page_nodes(address, 5 * PAGE) == {"0": 1, "1": 2, numa.NOT_RESIDENT: 1, "EFAULT": 1, "-9999": 1}
    number, pid, count, pages, nodes, status, flags = call.calls[0]
    assert (number, pid, count.value, nodes, flags) == (279, 0, 6, None, 0)
    assert list(pages) == [(10 + i) * PAGE for i in range(6)] and len(status) == 6
    numa.page_nodes(address, 5 * PAGE, samples=3)
    assert list(call.calls[1][3]) == [10 * PAGE, 12 * PAGE, 15 * PAGE]  # first, middle, last
    numa.page_nodes(10 * PAGE, 1)
    assert list(call.calls[2][3]) == [10 * PAGE]
    numa.page_nodes(10 * PAGE, 1000 * PAGE)
    assert call.calls[3][2].value == numa.PAGES_SAMPLED and call.calls[3][3][-1] == 1009 * PAGE
    numa.page_nodes(10 * PAGE + 1, PAGE)  # one page's bytes over two pages
    assert list(call.calls[4][3]) == [10 * PAGE, 11 * PAGE]


def test_page_nodes_is_none_where_it_cannot_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(numa, "_syscall", lambda name: (Syscall(answer=-1), 279))
    assert numa.page_nodes(PAGE, PAGE) is None  # refused
    monkeypatch.setattr(numa, "_syscall", lambda name: (Syscall(fill=[0]), 279))
    assert numa.page_nodes(PAGE, 0) is None and numa.page_nodes(PAGE, 1) == {"0": 1}
    monkeypatch.setattr(numa, "_syscall", lambda name: None)
    assert numa.page_nodes(PAGE, PAGE) is None


def test_pages_off_the_gpus_node_and_pages_placed_count_only_nodes() -> None:
    counts = {"0": 50, "1": 6, "2": 2, numa.NOT_RESIDENT: 4, "EFAULT": 2}
    assert numa.pages_off_node(counts, 0) == 8 and numa.pages_off_node(counts, 1) == 52
    assert numa.pages_off_node(counts, None) == 0 and numa.pages_off_node(counts, -1) == 0 and numa.pages_off_node(None, 0) == 0
    assert numa.pages_off_node(counts, "0") == 0  # a node that is no number: nothing is off it
    assert numa.placed_pages(counts) == 58 and numa.placed_pages(None) == 0 and numa.placed_pages({}) == 0
