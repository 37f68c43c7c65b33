"""NUMA placement: the binding planned from NVML's facts, applied in a real worker before it imports its
framework, the kernel's refusals recorded, and the node of a buffer's pages read back."""

from __future__ import annotations

import ctypes
import importlib.util
import mmap
import os
import sys
from typing import Any

import numpy as np
import pytest
from conftest import FAST, FakeBackend

from xferbench.core import numa
from xferbench.measuring.backends import BACKENDS
from xferbench.core.results import Point, Series
from xferbench.core.spec import SeriesKey
from xferbench.measuring.sweep import Plan, PlannedSeries, SweepConfig, new_result, run_plan
from xferbench.core.telemetry import numa_warning, pages_warning
from xferbench.measuring.worker import LocalRunner, WorkerRunner

linux = pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(os, "sched_setaffinity"), reason="Linux only")


def gpu_env(ideal: list[int] | None, process: list[int] | None, node: int | None = 1) -> dict[str, Any]:
    nvml = {"cpu_affinity": ideal, "numa_node": node}
    return {"process_cpus": process, "devices": [{"id": "cuda:0", "kind": "cuda", "nvml": nvml}]}


def test_the_binding_is_the_gpus_ideal_cpus_this_process_may_use() -> None:
    binding, said = numa.plan_binding(gpu_env(list(range(8, 16)), list(range(32))), "cuda:0")
    assert binding == numa.Binding(tuple(range(8, 16)), 1) and said == "CPUs 8-15 and memory to NUMA node 1"
    binding, _ = numa.plan_binding(gpu_env(list(range(8, 16)), [10, 11, 20]), "cuda:0")  # a cgroup allows fewer
    assert binding == numa.Binding((10, 11), 1)
    binding, said = numa.plan_binding(gpu_env(list(range(8, 16)), None, node=-1), "cuda:0")  # NVML: no node
    assert binding == numa.Binding(tuple(range(8, 16)), None) and "memory not bound: the GPU's NUMA node is unknown" in said


def test_where_no_binding_is_possible_the_reason_says_why() -> None:
    none, why = numa.plan_binding(gpu_env(list(range(8, 16)), [0, 1]), "cuda:0")
    assert none is None and "none of the GPU's ideal CPUs (8-15) is among the CPUs this process may use (0-1)" in why
    assert "NVML gives no ideal CPUs" in numa.plan_binding(gpu_env(None, [0, 1]), "cuda:0")[1]
    no_nvml = {"nvml": {"reason": "nvidia-ml-py is not installed"}, "devices": [{"id": "cuda:0"}]}
    assert "unknown (nvidia-ml-py is not installed)" in numa.plan_binding(no_nvml, "cuda:0")[1]
    assert numa.plan_binding(gpu_env([0], [0]), "cpu") == (None, "nothing to bind: cpu is no CUDA GPU")


def test_the_kernels_refusals_are_recorded_not_raised(monkeypatch) -> None:
    monkeypatch.setattr(numa, "set_memory_node", lambda node: "the kernel refused set_mempolicy(MPOL_PREFERRED, node 1): Operation not permitted")

    def refuse(cpus: tuple[int, ...]) -> list[int]:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(numa, "set_cpus", refuse)
    record = numa.apply_binding(numa.Binding((2, 3), 1).to_env())
    assert record["requested"] == {"cpus": [2, 3], "node": 1} and record["cpus"] is None and record["node"] is None
    assert record["reason"] == ("the kernel refused the CPU affinity 2-3: Operation not permitted; the kernel refused"
                                " set_mempolicy(MPOL_PREFERRED, node 1): Operation not permitted")  # fmt: skip
    series = Series("torch", "pinned_into", "copy", "cuda:0", [4], numa=record)
    env = gpu_env([2, 3], list(range(8)))
    assert "(the kernel refused the CPU affinity" in (numa_warning(env, "cuda:0", series.numa) or "")


@linux
def test_page_nodes_reads_where_a_buffers_pages_are() -> None:
    touched = np.ones(8 * 2**20, np.uint8)
    nodes = numa.page_nodes(touched.ctypes.data, touched.size)
    if nodes is None:
        pytest.skip("move_pages is refused here (a container's seccomp profile)")
    assert sum(nodes.values()) == numa.PAGES_SAMPLED and all(name.isdigit() for name in nodes)
    fresh = mmap.mmap(-1, 64 * 2**20)  # a mapping of its own, no page touched yet (malloc may hand back touched memory)
    address = ctypes.addressof(ctypes.c_char.from_buffer(fresh))
    assert numa.page_nodes(address, len(fresh)) == {numa.NOT_RESIDENT: numa.PAGES_SAMPLED}
    assert numa.pages_off_node({"0": 60, "1": 4}, 0) == 4 and numa.pages_off_node({"0": 64}, 0) == 0
    assert numa.pages_off_node({"1": 64}, -1) == 0  # the GPU's node unknown: nothing is off it
    off = Series("torch", "pinned_into", "copy", "cuda:0", [4])
    off.points = [Point(1, 4, host_nodes={"1": 64}), Point(2, 8, host_nodes={"0": 64})]
    assert "off the GPU's NUMA node 0 at batch 1 (move_pages)" in (pages_warning(off, gpu_env([0], [0], node=0)) or "")


@pytest.mark.slow
@linux
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs a framework that runs in a worker: JAX")
def test_a_worker_is_bound_before_it_imports_its_framework() -> None:
    """A real worker on the CPU, bound to one CPU: the binding applies whatever the device."""
    cpu = min(os.sched_getaffinity(0))
    runner = WorkerRunner(BACKENDS["jax"])
    try:
        runner.hello()
        first = runner.pid
        key = SeriesKey("jax", "device_put", "copy", "cpu", (8, 8, 3))
        bound = Series.of(key)
        runner.measure_series(key, (1,), {}, FAST, bound, binding=numa.Binding((cpu,), 0))
        assert runner.pid != first  # started afresh, with the binding in place before the framework loaded
        assert bound.numa["cpus"] == [cpu] and bound.numa["requested"] == {"cpus": [cpu], "node": 0}
        assert bound.numa["node"] == 0 or "set_mempolicy" in (bound.numa["reason"] or "")
        assert bound.points[0].status == "ok" and bound.points[0].host_nodes
        free = Series.of(key)
        runner.measure_series(key, (1,), {}, FAST, free)
        assert free.numa == {} and free.points[0].status == "ok"  # an unbound series gets an unbound worker
    finally:
        runner.close()


def test_run_plan_binds_only_cuda_series_and_says_why_not(monkeypatch) -> None:
    backend = FakeBackend()
    backend.fixed_device = None  # a framework that goes wherever --device says, as every GPU framework does
    keys = [SeriesKey("fake", "a", "copy", "cuda:0", (4,)), SeriesKey("fake", "b", "copy", "cpu", (4,))]
    env = gpu_env([0], [0, 1], node=0)
    for bind, expected in ((True, "not bound: measured in the main process"), (False, "not bound: --no-bind")):
        config = SweepConfig(frameworks=("fake",), batch_sizes=(1,), shape=(4,), timing=FAST, bind=bind)
        plan = Plan(config, "cuda:0", [PlannedSeries(k, backend) for k in keys], {"fake": LocalRunner(backend)})
        gpu, cpu = run_plan(plan, new_result(plan, env), lambda r: None, link_interval_s=None).series
        assert gpu.numa == {"reason": expected} and cpu.numa == {}


# Where the GPU's host node comes from: NVML's memory affinity, else the kernel's PCI facts; never
# nvmlDeviceGetNumaNodeId, which a PCIe GPU in an x86 server answers Not Supported and a Grace
# Hopper answers with the node of the GPU's own memory.

BUS_ID = "00000000:3B:00.0"  # NVML's form; sysfs names the device 0000:3b:00.0


def sysfs_tree(root, cpus: dict[int, str], pci_node: str | None = None):
    """A /sys with these NUMA nodes (node -> cpulist text) and, where given, the GPU's numa_node file."""
    for node, cpulist in cpus.items():
        folder = root / "devices" / "system" / "node" / f"node{node}"
        folder.mkdir(parents=True)
        (folder / "cpulist").write_text(cpulist + "\n")
    if pci_node is not None:
        device = root / "bus" / "pci" / "devices" / "0000:3b:00.0"
        device.mkdir(parents=True)
        (device / "numa_node").write_text(pci_node + "\n")
    return root


@pytest.fixture
def pcie_gpu(monkeypatch, tmp_path):
    """A fake NVML for one PCIe GPU at BUS_ID in an x86 server (nvmlDeviceGetNumaNodeId: Not Supported)
    and a sysfs tree in a temporary folder; the test sets the answers."""
    from types import SimpleNamespace

    from fake_nvml import FakeNVML

    from xferbench.core import environment

    def install(sysfs: dict, **answers: Any) -> Any:
        fake = FakeNVML(**answers)
        fake.nvmlDeviceGetCount = lambda: 1
        fake.nvmlDeviceGetPciInfo = lambda handle: SimpleNamespace(busId=BUS_ID.encode())
        monkeypatch.setitem(sys.modules, "pynvml", fake)
        root = tmp_path / f"sys{len(list(tmp_path.iterdir()))}"  # a fresh tree per call
        monkeypatch.setattr(environment, "SYSFS", str(sysfs_tree(root, **sysfs)))
        return environment.nvml_info()["gpus"][0]

    return install


def test_the_host_node_comes_from_nvmls_memory_affinity_not_the_gpus_own_node(pcie_gpu) -> None:
    gpu = pcie_gpu({"cpus": {0: "0-3", 1: "4-7"}}, memory_node=1)
    assert (gpu["numa_node"], gpu["numa_cpus"], gpu["gpu_memory_numa_node"]) == (1, [4, 5, 6, 7], None)
    assert gpu["numa_node_source"] == "NVML memory affinity (node scope)" and gpu["numa_node_reason"] is None
    binding, said = numa.plan_binding({"process_cpus": list(range(8)), "devices": [{"id": "cuda:0", "nvml": gpu}]}, "cuda:0")
    assert binding == numa.Binding((4, 5, 6, 7), 1) and said == "CPUs 4-7 and memory to NUMA node 1"


def test_without_memory_affinity_the_kernels_pci_facts_give_the_node(pcie_gpu) -> None:
    gpu = pcie_gpu({"cpus": {0: "0-3", 1: "4-7"}, "pci_node": "0"}, memory_node=None)
    assert (gpu["numa_node"], gpu["numa_node_source"]) == (0, "the kernel's PCI facts (sysfs numa_node)")
    unknown = pcie_gpu({"cpus": {0: "0-7"}, "pci_node": "-1"}, memory_node=None)  # -1: the kernel does not know
    assert unknown["numa_node"] is None and unknown["numa_cpus"] is None
    assert unknown["numa_node_reason"] == "NVML gives no memory affinity, and the kernel gives no node for its PCI address"
    binding, said = numa.plan_binding({"process_cpus": list(range(8)), "devices": [{"id": "cuda:0", "nvml": unknown}]}, "cuda:0")
    assert binding == numa.Binding((4, 5, 6, 7), None)  # the CPUs NVML calls ideal still apply
    assert said.startswith("CPUs 4-7; memory not bound: the GPU's NUMA node is unknown (NVML gives no memory affinity")


def test_host_memory_is_never_bound_to_a_node_that_holds_gpu_memory(pcie_gpu) -> None:
    # A Grace Hopper: the GPU's memory is node 1, with no CPUs; a wrong affinity answer naming it must not be followed.
    hbm = pcie_gpu({"cpus": {0: "0-7", 1: ""}}, memory_node=1, gpu_memory_node=1)
    assert hbm["numa_node"] is None and hbm["gpu_memory_numa_node"] == 1
    assert hbm["numa_node_reason"] == "node 1 holds the GPU's own memory: host buffers are not bound there"
    memory_only = pcie_gpu({"cpus": {0: "0-7", 2: ""}}, memory_node=2)  # a node with memory and no CPUs
    assert memory_only["numa_node"] is None and "has no CPUs" in memory_only["numa_node_reason"]
    grace = pcie_gpu({"cpus": {0: "0-7", 1: ""}}, memory_node=0, gpu_memory_node=1)
    assert (grace["numa_node"], grace["gpu_memory_numa_node"]) == (0, 1)
    # A file recorded before the host node was told apart from the GPU's own: never bind to the GPU's memory.
    old = {"cpu_affinity": [0, 1], "numa_node": 1, "gpu_memory_numa_node": 1}
    binding, _ = numa.plan_binding({"process_cpus": [0, 1], "devices": [{"id": "cuda:0", "nvml": old}]}, "cuda:0")
    assert binding == numa.Binding((0, 1), None)
