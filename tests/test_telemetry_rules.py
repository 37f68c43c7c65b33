"""What a series' link record, environment and raw reference say about a curve, word for word and figure for figure."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from xferbench.core import telemetry
from xferbench.core.results import Point, Series
from xferbench.core.stats import Summary

KB = telemetry.KB  # NVML's throughput KB
HALF_TURN = 2**15 / KB  # KB/s: half a 16-bit counter's turn per second


def link_of(gen: list, width: list, tx: list, rx: list, **more: Any) -> dict[str, Any]:
    return {"t_s": [0.1 * i for i in range(len(gen))], "gen": gen, "width": width, "tx_kbps": tx, "rx_kbps": rx, **more}


def cuda(link: dict[str, Any] | None = None, device: str = "cuda:0", peak: float | None = None, **more: Any) -> Series:
    return Series("torch", "pinned", "copy", device, [4], link=link or {}, summary=Summary(peak_mbps=peak), **more)


def env_with(nvml: dict[str, Any] | None = None, device: str = "cuda:0", **more: Any) -> dict[str, Any]:
    return {"devices": [{"id": device, "kind": device.split(":")[0], "nvml": nvml}], **more}


# received_bytes


@pytest.mark.parametrize("link, expected", [
    # samples without a counter reading are left out of the counter's sum
    ({"t_s": [1.0, 1.25, 1.5, 2.0], "rx_bytes": [100, None, 400, 1000]}, (900.0, "NVML's PCIe RX byte counter over 1.0 s")),
    # a counter width of 0 or None is taken as 64 bits
    ({"t_s": [1.0, 1.5], "rx_bytes": [2**64 - 1, 3], "rx_bytes_bits": 0}, (4.0, "NVML's PCIe RX byte counter over 0.5 s")),
    # a 16-bit counter: each step modulo 2**16, while it cannot turn half-way between samples
    ({"t_s": [0.0, 1.0, 2.0], "rx_bytes": [65000, 100, 200], "rx_bytes_bits": 16, "rx_kbps": [31, None, 0]},
     (736.0, "NVML's PCIe RX byte counter over 2.0 s")),
    # exactly half a turn between samples could be a whole turn more: the samples are integrated instead
    ({"t_s": [0.0, 1.0], "rx_bytes": [0, 5], "rx_bytes_bits": 16, "rx_kbps": [HALF_TURN, HALF_TURN / 2]},
     (pytest.approx(2**15 * 0.75), "≈ NVML's RX throughput (approximate: 20 ms windows) integrated over 1.0 s; NVML's 16-bit byte counter"
                 " could wrap more than once between samples")),
    # one step too long among short ones is enough to distrust the counter
    ({"t_s": [0.0, 0.25, 1.25], "rx_bytes": [0, 5, 9], "rx_bytes_bits": 16, "rx_kbps": [HALF_TURN] * 3},
     (pytest.approx(1.25 * 2**15), "≈ NVML's RX throughput (approximate: 20 ms windows) integrated over 1.2 s; NVML's 16-bit byte counter"
                      " could wrap more than once between samples")),
    # a single counter reading says nothing: the samples are integrated, skipping missing reads
    ({"t_s": [0.0, 0.5, 1.0, 3.0], "rx_bytes": [7, None, None, None], "rx_kbps": [100, None, 300, 500]},
     (pytest.approx((1.0 * 200 + 2.0 * 400) * KB), "≈ NVML's RX throughput (approximate: 20 ms windows) integrated over 3.0 s")),
    # too few samples: the link's reason leads, then the field's error, then the count
    ({"t_s": [0.0], "rx_kbps": [5], "reason": "GPU is lost", "field_errors": {"rx_kbps": "Not Supported"}},
     (None, "unknown: GPU is lost")),
    ({"t_s": [0.0], "rx_kbps": [5], "reason": None, "field_errors": {"tx_kbps": "Not Supported"}},
     (None, "unknown: fewer than two RX samples")),
    ({}, (None, "unknown: fewer than two RX samples")),
    ({"t_s": None, "rx_kbps": None, "rx_bytes": None, "field_errors": None}, (None, "unknown: fewer than two RX samples")),
    # a distrusted counter and too few samples: both are said
    ({"t_s": [0.0, 1.0], "rx_bytes": [0, 5], "rx_bytes_bits": 16, "rx_kbps": [40, None]},
     (None, "unknown: fewer than two RX samples; NVML's 16-bit byte counter could wrap more than once between samples")),
])  # fmt: skip
def test_received_bytes_from_the_counter_or_the_integrated_samples(link, expected) -> None:
    """The bytes the GPU received come from its byte counter where it can be trusted, else from the RX samples."""
    assert telemetry.received_bytes(link) == expected


def test_received_bytes_are_a_float_from_the_counter() -> None:
    """The counter's total is given as a float, like the integrated one."""
    total, _ = telemetry.received_bytes({"t_s": [0.0, 1.0], "rx_bytes": [1, 2]})
    assert type(total) is float


# claimed_bytes


def point(batch: int, nbytes: int, transfers: int | None = None, host_nodes: dict[str, int] | None = None) -> Point:
    return Point(batch, nbytes, transfers=transfers, host_nodes=host_nodes)


def test_claimed_bytes_are_every_counted_transfer_of_every_point() -> None:
    """The bytes a series says it moved add each counted point's transfers times its bytes."""
    series = cuda()
    series.points = [point(1, 100, 3), point(2, 200, None), point(4, 400, 5)]
    assert telemetry.claimed_bytes(series) == 3 * 100 + 5 * 400
    series.points = [point(1, 100, None)]
    assert telemetry.claimed_bytes(series) is None
    series.points = [point(1, 100, 0)]
    assert telemetry.claimed_bytes(series) == 0


# loaded_samples and link_summary


def test_a_sample_is_loaded_from_a_hundred_mb_per_second_both_ways_together() -> None:
    """A sample counts as taken under load once RX and TX together reach 100 MB/s."""
    edge = 1e8 / KB  # KB/s making exactly 100 MB/s
    link = {"tx_kbps": [edge, edge / 2, None, edge - 1, 0, edge], "rx_kbps": [0, edge / 2, edge, 0, None, None]}
    assert telemetry.loaded_samples(link) == [0, 1, 2, 5]
    assert telemetry.loaded_samples({"tx_kbps": None, "rx_kbps": [edge]}) == []
    assert telemetry.loaded_samples({}) == []


def test_the_link_summary_in_short() -> None:
    """The summary gives the sample counts, the generation and width range under load, and the peaks in MB/s."""
    link = link_of([1, 3, None, 4, 2], [16, 8, 4, None, 2], [0, 2000000, 0, 0, 0], [0, None, 3000000, 1000000, 0])
    summary = telemetry.link_summary(link)
    assert summary == {
        "samples": 5, "loaded_samples": 3, "gen_under_load": [3, 4], "width_under_load": [4, 8],
        "rx_mbps_peak": round(3000000 * KB / 1e6, 1), "tx_mbps_peak": round(2000000 * KB / 1e6, 1), "rx_bytes": summary["rx_bytes"],
        "rx_bytes_from": "≈ NVML's RX throughput (approximate: 20 ms windows) integrated over 0.4 s",
    }  # fmt: skip
    assert summary["rx_bytes"] == pytest.approx((0.2 * 3000000 / 2 + 0.1 * 4000000 / 2 + 0.1 * 1000000 / 2) * KB)


def test_a_summary_of_an_idle_or_empty_record() -> None:
    """A record with no sample under load has no range, and one without values has no peaks."""
    idle = link_of([1, 1], [16, 16], [0, 0], [10, 20])
    assert telemetry.link_summary(idle) == {
        "samples": 2, "loaded_samples": 0, "gen_under_load": None, "width_under_load": None,
        "rx_mbps_peak": round(20 * KB / 1e6, 1), "tx_mbps_peak": 0.0, "rx_bytes": 0.1 * 15 * KB,
        "rx_bytes_from": "≈ NVML's RX throughput (approximate: 20 ms windows) integrated over 0.1 s",
    }  # fmt: skip
    assert telemetry.link_summary({"gen": [], "width": []}) == {
        "samples": 0, "loaded_samples": 0, "gen_under_load": None, "width_under_load": None, "rx_mbps_peak": None,
        "tx_mbps_peak": None, "rx_bytes": None, "rx_bytes_from": "unknown: fewer than two RX samples",
    }  # fmt: skip


def test_a_loaded_sample_without_a_generation_or_width_is_left_out_of_the_range() -> None:
    """Under load, a sample missing its generation or width does not widen the range."""
    busy = 2000000
    link = link_of([None, 2, 4], [8, None, 16], [busy] * 3, [None, 0, busy])
    summary = telemetry.link_summary(link)
    assert (summary["gen_under_load"], summary["width_under_load"], summary["rx_mbps_peak"]) == ([2, 4], [8, 16], round(busy * KB / 1e6, 1))


# ran_below_max and link_below_max

BUSY = 2000000


def test_the_link_ran_below_its_maximum_in_most_loaded_samples() -> None:
    """Most samples under load below the maximum generation or width make the link down-trained, naming the lowest."""
    link = link_of([3, 4, 2, 4, 4, None], [16, 8, 16, 16, 4, 16], [BUSY] * 6, [0] * 6, pcie_gen_max=4, pcie_width_max=16)
    assert telemetry.ran_below_max(cuda(link)) == (
        "the PCIe link ran below its maximum (Gen4 x16) while data moved: down to Gen2 x4 in 4 of 5 samples;"
        " check the slot, riser, BIOS link speed and power settings")  # fmt: skip


def test_half_the_loaded_samples_below_the_maximum_is_not_enough() -> None:
    """Exactly half the samples under load below the maximum does not count as down-trained."""
    link = link_of([3, 4, 3, 4], [16, 16, 16, 16], [BUSY] * 4, [0] * 4, pcie_gen_max=4, pcie_width_max=16)
    assert telemetry.ran_below_max(cuda(link)) is None
    link = link_of([3, 4, 3], [16, 16, 16], [BUSY] * 3, [0] * 3, pcie_gen_max=4, pcie_width_max=16)
    assert telemetry.ran_below_max(cuda(link)) == (
        "the PCIe link ran below its maximum (Gen4 x16) while data moved: down to Gen3 x16 in 2 of 3 samples;"
        " check the slot, riser, BIOS link speed and power settings")  # fmt: skip


def test_the_maximum_comes_from_the_record_then_from_the_environment() -> None:
    """The link's own maximum leads; the environment's NVML maximum stands in where the record lacks one."""
    link = link_of([3, 3], [8, 8], [BUSY] * 2, [0] * 2)
    env = env_with({"pcie_gen_max": 3, "pcie_width_max": 16})
    assert telemetry.ran_below_max(cuda(link), env) == (
        "the PCIe link ran below its maximum (Gen3 x16) while data moved: down to Gen3 x8 in 2 of 2 samples;"
        " check the slot, riser, BIOS link speed and power settings")  # fmt: skip
    assert telemetry.ran_below_max(cuda({**link, "pcie_gen_max": 4, "pcie_width_max": 8}), env) == (
        "the PCIe link ran below its maximum (Gen4 x8) while data moved: down to Gen3 x8 in 2 of 2 samples;"
        " check the slot, riser, BIOS link speed and power settings")  # fmt: skip
    assert telemetry.ran_below_max(cuda({**link, "pcie_gen_max": 3, "pcie_width_max": 8}), env) is None
    other = env_with({"pcie_gen_max": 9, "pcie_width_max": 32}, device="cuda:1")
    assert telemetry.ran_below_max(cuda(link), other) is None  # another GPU's facts are not this one's
    assert telemetry.ran_below_max(cuda(link), env_with(None)) is None
    assert telemetry.ran_below_max(cuda(link)) is None


@pytest.mark.parametrize("maxima", [{"pcie_gen_max": 4}, {"pcie_width_max": 16}, {"pcie_gen_max": 0, "pcie_width_max": 16}])
def test_without_both_maxima_nothing_is_judged(maxima) -> None:
    """Without both the maximum generation and width, the link is not judged."""
    link = link_of([1, 1], [1, 1], [BUSY] * 2, [0] * 2, **maxima)
    assert telemetry.ran_below_max(cuda(link)) is None
    assert telemetry.link_below_max(cuda(link)) is None


def test_without_a_loaded_sample_nothing_is_said_to_have_run_below() -> None:
    """Samples taken while idle, or under load but without a generation, judge nothing."""
    idle = link_of([1, 1], [1, 1], [0, 0], [0, 0], pcie_gen_max=4, pcie_width_max=16)
    assert telemetry.ran_below_max(cuda(idle)) is None
    blind = link_of([None, 1], [1, None], [BUSY] * 2, [0] * 2, pcie_gen_max=4, pcie_width_max=16)
    assert telemetry.ran_below_max(cuda(blind)) is None
    assert telemetry.ran_below_max(cuda(None)) is None


def idle_env(gen: int | None = 2, width: int | None = 8) -> dict[str, Any]:
    return env_with({"pcie_gen_max": 4, "pcie_width_max": 16, "pcie_gen_current": gen, "pcie_width_current": width})


def test_loaded_samples_decide_over_the_idle_reading() -> None:
    """Where samples caught data moving, they alone decide, whatever the reading before the run said."""
    fine = link_of([4, 4], [16, 16], [BUSY] * 2, [0] * 2)
    assert telemetry.link_below_max(cuda(fine), idle_env()) is None
    slow = link_of([2, 2], [16, 16], [BUSY] * 2, [0] * 2)
    assert telemetry.link_below_max(cuda(slow), idle_env(4, 16)) == (
        "the PCIe link ran below its maximum (Gen4 x16) while data moved: down to Gen2 x16 in 2 of 2 samples;"
        " check the slot, riser, BIOS link speed and power settings")  # fmt: skip


@pytest.mark.parametrize("link, why", [
    ({"reason": "NVML could not start"}, "NVML could not start"),
    ({"t_s": [0.0], "tx_kbps": [0], "rx_kbps": [0], "gen": [1], "width": [16]}, "no sample caught data moving"),
    ({"t_s": []}, "it was not sampled"),
    ({}, "it was not sampled"),
])  # fmt: skip
def test_an_idle_reading_below_the_maximum_is_said_with_why(link, why) -> None:
    """Without samples under load, a reading below the maximum before the run is said to be idle, with why."""
    assert telemetry.link_below_max(cuda(link), idle_env()) == (
        "the PCIe link read Gen2 x8 (max Gen4 x16) before the run, idle, where a lower generation is normal;"
        f" no reading under load ({why})")  # fmt: skip


@pytest.mark.parametrize("gen, width, said", [(4, 8, True), (2, 16, True), (4, 16, False), (5, 32, False),
                                              (None, 8, False), (2, None, False)])  # fmt: skip
def test_an_idle_reading_counts_when_either_generation_or_width_is_below(gen, width, said) -> None:
    """An idle reading below the maximum in generation or in width is said; one at or above it, or half a reading, is not."""
    warning = telemetry.link_below_max(cuda({}), idle_env(gen, width))
    assert (warning is not None) == said
    if said:
        assert warning.startswith(f"the PCIe link read Gen{gen} x{width} (max Gen4 x16) before the run")


def test_no_environment_no_idle_judgement() -> None:
    """Without an environment, and without samples, nothing is said."""
    assert telemetry.link_below_max(cuda({"pcie_gen_max": 4, "pcie_width_max": 16})) is None


# numa_warning, pages_warning, binding_warning


def numa_env(ideal: list[int] | None, process: list[int] | None, node: Any = 1, key: str = "cpu_affinity") -> dict[str, Any]:
    return env_with({key: ideal, "numa_node": node}, process_cpus=process)


def test_the_numa_warning_word_for_word_with_the_node() -> None:
    """A process that may run outside the GPU's node is told which CPUs and how to pin it to the node."""
    assert telemetry.numa_warning(numa_env([4, 5, 6, 7], [0, 1, 4, 9, 9]), "cuda:0") == (
        "the process may run on CPUs 0-1,9, outside the GPU's NUMA node 1 (CPUs 4-7); a remote node can cut host-to-device"
        " throughput several-fold. Pin it: numactl --cpunodebind=1 --membind=1 xferbench sweep ...")  # fmt: skip


@pytest.mark.parametrize("node", [-1, None, "1"])
def test_without_a_node_the_warning_names_the_ideal_cpus(node) -> None:
    """Without a node number, the warning names the GPU's ideal CPUs and pins with taskset."""
    assert telemetry.numa_warning(numa_env([2, 3], [0, 2, 3], node, key="numa_cpus"), "cuda:0") == (
        "the process may run on CPUs 0, outside the GPU's ideal CPU set (CPUs 2-3); a remote node can cut host-to-device"
        " throughput several-fold. Pin it: taskset -c 2-3 xferbench sweep ...")  # fmt: skip


def test_node_zero_is_a_node() -> None:
    """NUMA node 0 is a real node and is named."""
    said = telemetry.numa_warning(numa_env([0], [0, 1], 0), "cuda:0")
    assert said is not None and "NUMA node 0 (CPUs 0)" in said and "numactl --cpunodebind=0 --membind=0" in said


def test_the_affinity_leads_over_the_nodes_cpus() -> None:
    """The GPU's CPU affinity, where NVML gave it, leads over its node's CPU list."""
    env = env_with({"cpu_affinity": [0, 1], "numa_cpus": [0, 1, 2, 3], "numa_node": 0}, process_cpus=[0, 1, 2])
    assert "run on CPUs 2, outside" in telemetry.numa_warning(env, "cuda:0")


def test_the_workers_binding_leads_and_says_why() -> None:
    """A worker's own CPUs count over the sweep's, and the reason it was bound so is said."""
    env = numa_env([4, 5], [0, 1, 2, 3, 4, 5])
    assert telemetry.numa_warning(env, "cuda:0", {"cpus": [5, 6], "reason": "no memory on node 1"}) == (
        "the process may run on CPUs 6, outside the GPU's NUMA node 1 (CPUs 4-5) (no memory on node 1); a remote node can"
        " cut host-to-device throughput several-fold. Pin it: numactl --cpunodebind=1 --membind=1 xferbench sweep ...")  # fmt: skip
    assert telemetry.numa_warning(env, "cuda:0", {"cpus": [], "reason": "x"}).startswith(
        "the process may run on CPUs 0-3, outside the GPU's NUMA node 1 (CPUs 4-5) (x);")  # fmt: skip
    assert telemetry.numa_warning(env, "cuda:0", {"cpus": [4], "reason": "x"}) is None


@pytest.mark.parametrize("env", [numa_env([], [0, 1]), numa_env([0], []), numa_env([0], None), env_with(None, process_cpus=[3]),
                                 {"process_cpus": [3]}])  # fmt: skip
def test_no_numa_warning_without_both_cpu_lists(env) -> None:
    """Without the GPU's ideal CPUs or the process's CPUs, no NUMA warning is guessed."""
    assert telemetry.numa_warning(env, "cuda:0") is None


def test_pages_off_the_gpus_node_are_warned_about_by_batch() -> None:
    """Source pages on another NUMA node than the GPU's are named by batch size."""
    series = cuda()
    series.points = [point(1, 10, host_nodes={"0": 3, "1": 2}), point(2, 20, host_nodes={"1": 5}),
                     point(8, 80, host_nodes={"0": 1, "-1": 4}), point(16, 160)]  # fmt: skip
    assert telemetry.pages_warning(series, numa_env(None, None, 1)) == (
        "pages of the source buffer sat off the GPU's NUMA node 1 at batch 1, 8 (move_pages): copies from them cross"
        " the socket link")  # fmt: skip
    series.points = [point(2, 20, host_nodes={"1": 5})]
    assert telemetry.pages_warning(series, numa_env(None, None, 1)) is None
    assert telemetry.pages_warning(series, env_with(None)) is None


def test_a_refused_binding_is_said() -> None:
    """A worker asked to bind that the kernel refused is said, with the kernel's reason."""
    assert telemetry.binding_warning(cuda(numa={"requested": {"cpus": [1]}, "reason": "EPERM"})) == (
        "the worker could not be bound as planned: EPERM")
    assert telemetry.binding_warning(cuda(numa={"requested": {}, "reason": "EPERM"})) is None
    assert telemetry.binding_warning(cuda()) is None


# series_warnings, link_warnings, link_facts

FACTS = {"pcie_gen_current": 4, "pcie_width_current": 16, "pcie_gen_max": 4, "pcie_width_max": 16, "numa_node": 1,
         "cpu_affinity": [4, 5]}  # fmt: skip


def every_warning_series(device: str = "cuda:0") -> Series:
    series = cuda({"pcie_gen_max": 3, "pcie_width_max": 16, "pcie_gen_gpu_max": 4}, device=device, peak=20_000.0,
                  numa={"requested": {"cpus": [4]}, "reason": "EPERM", "cpus": [0, 4]})  # fmt: skip
    series.points = [point(4, 40, host_nodes={"0": 2})]
    return series


def test_every_warning_of_a_cuda_series_in_order() -> None:
    """A CUDA series' warnings come in order: link, binding, pages, link facts, then NUMA."""
    env = env_with({**FACTS, "pcie_gen_current": 2}, process_cpus=[0, 1, 4])
    series = every_warning_series()
    link = telemetry.link_below_max(series, env)
    binding = telemetry.binding_warning(series)
    pages = telemetry.pages_warning(series, env)
    facts = telemetry.link_facts(series, env)
    numa = telemetry.numa_warning(env, "cuda:0", series.numa)
    assert None not in (link, binding, pages, facts, numa)
    assert telemetry.series_warnings(series, env) == [link, binding, pages, facts]
    assert telemetry.link_warnings(series, env) == [link, binding, pages, facts, numa]
    assert numa == ("the process may run on CPUs 0, outside the GPU's NUMA node 1 (CPUs 4-5) (EPERM); a remote node can cut"
                    " host-to-device throughput several-fold. Pin it: numactl --cpunodebind=1 --membind=1 xferbench sweep ...")  # fmt: skip


def test_a_series_off_cuda_gets_no_link_warning() -> None:
    """A series not on a CUDA device gets no link or placement warning."""
    env = env_with({**FACTS, "pcie_gen_current": 2}, device="mps", process_cpus=[0, 1, 4])
    series = every_warning_series(device="mps")
    assert telemetry.series_warnings(series, env) == []
    assert telemetry.link_warnings(series, env) == []


def test_a_quiet_cuda_series_has_no_warning() -> None:
    """A CUDA series with nothing wrong gets no warning, with or without an environment."""
    assert telemetry.link_warnings(cuda()) == []
    assert telemetry.link_warnings(cuda(), env_with(FACTS, process_cpus=[4])) == []
    assert telemetry.series_warnings(cuda(), env_with(FACTS)) == []


def test_only_the_numa_warning() -> None:
    """The NUMA warning alone is given when it is the only one."""
    assert telemetry.link_warnings(cuda(), env_with(FACTS, process_cpus=[3, 4])) == [
        "the process may run on CPUs 3, outside the GPU's NUMA node 1 (CPUs 4-5); a remote node can cut host-to-device"
        " throughput several-fold. Pin it: numactl --cpunodebind=1 --membind=1 xferbench sweep ..."]  # fmt: skip


def test_link_facts_need_a_peak() -> None:
    """Link facts are only compared against a measured peak."""
    series = every_warning_series()
    env = env_with(FACTS)
    said = telemetry.link_facts(series, env)
    assert said is not None and said.startswith("link facts disagree: 20,000 MB/s exceeds Gen3 x16")
    assert telemetry.link_facts(dataclasses.replace(series, summary=Summary(peak_mbps=0.0)), env) is None
    assert telemetry.link_facts(dataclasses.replace(series, summary=Summary(peak_mbps=10_000.0)), env) is None


def test_link_facts_read_the_series_own_gpu_among_several() -> None:
    """The facts compared are those of the GPU the series ran on: cuda:1's GPU maximum allows 20 GB/s, cuda:0 has none."""
    two = {"devices": [{"id": "cuda:0", "kind": "cuda", "nvml": {"pcie_gen_max": 3, "pcie_width_max": 16}},
                       {"id": "cuda:1", "kind": "cuda", "nvml": {"pcie_gen_max": 3, "pcie_width_max": 16, "pcie_gen_gpu_max": 4}}]}  # fmt: skip
    said = telemetry.link_facts(cuda({}, device="cuda:1", peak=20_000.0), two)
    assert said is not None and said.startswith("link facts disagree: 20,000 MB/s exceeds Gen3 x16 (15.8 GB/s, system maximum)"
                                                " but fits the GPU maximum, Gen4 x16 (31.5 GB/s)")  # fmt: skip
    assert telemetry.link_facts(cuda({}, device="cuda:0", peak=20_000.0), two) is None


# link_ceiling, unified_memory_ceiling, fractions


def test_a_host_to_host_copy_has_no_link_ceiling() -> None:
    """A host-to-host copy on a GPU path crosses no link, so it has no link ceiling."""
    series = dataclasses.replace(cuda(), transfer="host-to-host")
    assert telemetry.link_ceiling(series, env_with(FACTS)) == (None, "unknown: a host-to-host copy (torch pin) crosses no PCIe link")


def test_a_cpu_series_has_no_link_ceiling() -> None:
    """A CPU series copies host to host over no link."""
    series = Series("host", "numpy", "copy", "cpu", [4], transfer="host-to-host")
    assert telemetry.link_ceiling(series, {}) == (None, "unknown: a CPU series copies host to host, over no PCIe link")
    assert telemetry.link_ceiling(Series("host", "numpy", "copy", "cpu", [4]), {}) == (
        None, "unknown: a CPU series copies host to host, over no PCIe link")


def test_a_simulated_link_has_its_configured_ceiling() -> None:
    """A simulated device's ceiling is the bandwidth it was configured with."""
    series = Series("sim", "sim", "copy", "sim:0", [4], params={"bandwidth_gbps": 12.5})
    assert telemetry.link_ceiling(series, {}) == (12.5, "simulated link (12.5 GB/s, as configured)")
    assert telemetry.link_ceiling(Series("sim", "sim", "copy", "sim:0", [4]), {}) == (None, "unknown: simulated link")


def test_a_cuda_link_ceiling_from_nvml_or_why_not() -> None:
    """A CUDA series' ceiling is its PCIe link's theoretical rate, or why it is unknown."""
    gbps, label = telemetry.link_ceiling(cuda(), env_with({"pcie_gen_max": 4, "pcie_width_max": 16}))
    assert (round(gbps, 3), label) == (31.5, "PCIe Gen4 x16 theoretical (31.5 GB/s, system maximum)")
    assert telemetry.link_ceiling(cuda(), env_with({"numa_node": 0})) == (None, "unknown: NVML gave no PCIe link")
    assert telemetry.link_ceiling(cuda(), {**env_with(None), "nvml": {"reason": "Driver Not Loaded"}}) == (
        None, "unknown: Driver Not Loaded")
    assert telemetry.link_ceiling(cuda(), env_with(None)) == (None, "unknown: no NVML facts")
    # the series' own link record serves where the environment has no maximum, and leads where it has one
    assert telemetry.link_ceiling(cuda({"pcie_gen_max": 5, "pcie_width_max": 16}), env_with({"numa_node": 0})) == (
        63.0, "PCIe Gen5 x16 theoretical (63.0 GB/s, system maximum)")
    assert telemetry.link_ceiling(cuda({"pcie_gen_max": 5, "pcie_width_max": 8}), env_with({"pcie_gen_max": 5, "pcie_width_max": 16})) == (
        31.5, "PCIe Gen5 x8 theoretical (31.5 GB/s, system maximum)")
    assert telemetry.link_ceiling(cuda(), {}) == (None, "unknown: no NVML facts")


def mps_env(chip: str | None = "Apple M2", gpu_cores: int | None = None, unified: bool | None = True, cpu: str | None = None) -> dict:
    device: dict[str, Any] = {"id": "mps", "kind": "mps", "chip": chip, "gpu_cores": gpu_cores}
    if unified is not None:
        device["unified_memory"] = unified
    return {"cpu": cpu, "devices": [device]}


def mps(peak: float | None = None) -> Series:
    return Series("torch", "pinned", "copy", "mps", [4], summary=Summary(peak_mbps=peak))


M2 = ("unified memory: Apple M2, Apple's published memory bandwidth, theoretical (100 GB/s, 2022-06-06,"
      " https://www.apple.com/newsroom/2022/06/apple-unveils-m2-with-breakthrough-performance-and-capabilities/);"
      " a copy reads and writes each byte, so it moves twice its MB/s through memory")  # fmt: skip


def test_an_apple_gpu_ceiling_is_its_chips_memory_bandwidth() -> None:
    """An Apple GPU copy is bounded by the chip's published memory bandwidth."""
    assert telemetry.link_ceiling(mps(), mps_env()) == (100.0, M2)
    assert telemetry.link_ceiling(mps(), mps_env(chip=None, cpu="Apple M2")) == (100.0, M2)  # older files: the CPU names the chip
    assert telemetry.link_ceiling(mps(), mps_env(unified=None)) == (100.0, M2)  # files from before: Apple silicon


def test_an_apple_gpu_ceiling_that_depends_on_the_gpu_cores() -> None:
    """Where the chip's figure depends on its GPU, the core count picks it and is named."""
    gbps, label = telemetry.link_ceiling(mps(), mps_env("Apple M3 Max", 40))
    assert gbps == 400.0 and label.startswith("unified memory: Apple M3 Max, 40-core GPU, Apple's published memory bandwidth,"
                                              " theoretical (400 GB/s, 2023-10-30, ")  # fmt: skip
    assert telemetry.link_ceiling(mps(), mps_env("Apple M3 Max", None)) == (
        None, "unknown: unified memory (no link between host and GPU); the Apple M3 Max's figure depends on its GPU"
              " (30-core GPU and 40-core GPU published) and the GPU core count is not recorded")  # fmt: skip


def test_a_chip_figure_published_for_several_gpu_configurations_names_them_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """A figure Apple gave for the 30- and 38-core GPU alike is labelled with both, joined by '/'."""
    from xferbench.core import references

    row = references.ChipBandwidth("Apple Z1", (30, 38), 400.0, "400GB/s", "2030-01-01", "https://example.com/z1", "by hand")
    monkeypatch.setattr(references, "APPLE_BANDWIDTH", (row,))
    assert telemetry.link_ceiling(mps(), mps_env("Apple Z1", 38)) == (
        400.0, "unified memory: Apple Z1, 30/38-core GPU, Apple's published memory bandwidth, theoretical (400 GB/s, 2030-01-01,"
               " https://example.com/z1); a copy reads and writes each byte, so it moves twice its MB/s through memory")  # fmt: skip


def test_an_unknown_chip_has_no_ceiling() -> None:
    """A chip without a published figure has no ceiling, and the reason is said."""
    assert telemetry.link_ceiling(mps(), mps_env(chip=None)) == (
        None, "unknown: unified memory (no link between host and GPU); the chip is not recorded")


def test_an_intel_mac_gpu_has_no_ceiling() -> None:
    """The GPU of an Intel Mac shares no memory with the CPU, and its link is not recorded."""
    assert telemetry.link_ceiling(mps(), mps_env(unified=False)) == (
        None, "unknown: the GPU of an Intel Mac (MPS) shares no unified memory, and its link is not recorded")
    assert telemetry.fraction_of_link(mps(50_000.0), mps_env(unified=False)) == (None, None)


def test_the_fraction_of_unified_memory_counts_each_byte_twice() -> None:
    """An Apple GPU copy's share of memory bandwidth is twice its MB/s over the bandwidth."""
    assert telemetry.fraction_of_link(mps(25_000.0), mps_env()) == (2 * 25_000.0 / (100.0 * 1e3), 100.0)


def test_the_fraction_of_a_pcie_link() -> None:
    """A CUDA series' share of its link is its peak over the link's rate; a bidir series has twice the rate."""
    env = env_with({"pcie_gen_max": 4, "pcie_width_max": 16})
    gbps, _ = telemetry.link_ceiling(cuda(), env)
    assert telemetry.fraction_of_link(cuda(peak=20_000.0), env) == (20_000.0 / (gbps * 1e3), gbps)
    both = dataclasses.replace(cuda(peak=20_000.0), direction="bidir")
    assert telemetry.fraction_of_link(both, env) == (20_000.0 / (2 * gbps * 1e3), 2 * gbps)
    assert telemetry.fraction_of_link(cuda(peak=None), env) == (None, gbps)
    assert telemetry.fraction_of_link(cuda(peak=20_000.0), {}) == (None, None)
    d2h = dataclasses.replace(cuda(peak=20_000.0), direction="d2h")
    assert telemetry.fraction_of_link(d2h, env) == (20_000.0 / (gbps * 1e3), gbps)


def test_unified_memory_is_assumed_unless_recorded_otherwise() -> None:
    """A Mac's GPU is taken to share memory unless its environment recorded that it does not."""
    assert telemetry.unified(mps_env(unified=None)) is True
    assert telemetry.unified({}) is True
    assert telemetry.unified(mps_env(unified=False)) is False
    assert telemetry.unified(mps_env(unified=True)) is True


def raw(device: str = "cuda:0", peak: float | None = 10_000.0, **more: Any) -> Series:
    return Series("cuda", "raw_pinned", "copy", device, [4], summary=Summary(peak_mbps=peak), **more)


def test_the_raw_reference_is_the_same_devices_same_direction_raw_copy() -> None:
    """The raw reference is the raw pinned copy on the same device, direction and concurrency that was not skipped."""
    series = cuda(peak=5_000.0)
    others = [raw("cuda:1"), raw(direction="d2h"), raw(concurrent=2), raw(status="skipped"),
              Series("cuda", "raw_pageable", "copy", "cuda:0", [4], summary=Summary(peak_mbps=1.0)),
              Series("cuda", "raw_pinned", "copy_kernel", "cuda:0", [4], summary=Summary(peak_mbps=1.0)),
              Series("torch", "raw_pinned", "copy", "cuda:0", [4], summary=Summary(peak_mbps=1.0))]  # fmt: skip
    assert telemetry.raw_series(series, others) is None
    assert telemetry.fraction_of_raw(series, others) is None
    right = raw(peak=8_000.0)
    assert telemetry.raw_series(series, [*others, right]) is right
    assert telemetry.raw_reference(series, [*others, right]) is right
    assert telemetry.fraction_of_raw(series, [*others, right]) == 5_000.0 / 8_000.0


def test_the_raw_reference_timed_the_same_way_is_preferred() -> None:
    """Where raw copies ran both per call and streamed, the one timed like the series is used, else the first."""
    first, streamed = raw(peak=8_000.0), raw(peak=9_000.0, method="streamed")
    assert telemetry.raw_series(cuda(), [first, streamed]) is first
    assert telemetry.raw_series(dataclasses.replace(cuda(), method="streamed"), [first, streamed]) is streamed
    assert telemetry.raw_series(dataclasses.replace(cuda(), method="streamed"), [first]) is first
    assert telemetry.raw_series(cuda(), [streamed, first]) is first


def test_a_raw_reference_that_measured_nothing_is_none() -> None:
    """A raw copy without a peak is no reference."""
    empty = raw(peak=None)
    assert telemetry.raw_series(cuda(), [empty]) is empty
    assert telemetry.raw_reference(cuda(), [empty]) is None
    assert telemetry.fraction_of_raw(cuda(peak=5_000.0), [empty]) is None
    assert telemetry.raw_reference(cuda(), []) is None


def test_no_fraction_of_raw_for_host_copies_or_without_a_peak() -> None:
    """A host-to-host copy, or a series without a peak, has no fraction of the raw copy."""
    reference = [raw(peak=8_000.0)]
    assert telemetry.fraction_of_raw(dataclasses.replace(cuda(peak=5_000.0), transfer="host-to-host"), reference) is None
    assert telemetry.fraction_of_raw(cuda(peak=None), reference) is None
    assert telemetry.fraction_of_raw(dataclasses.replace(cuda(peak=5_000.0), transfer="host-to-device"), reference) == 0.625


def test_the_raw_reference_is_recognised_by_framework_mode_and_op() -> None:
    """Only the raw pinned cudaMemcpyAsync copy is the run's own ceiling."""
    assert telemetry.is_raw_reference(raw()) is True
    assert telemetry.is_raw_reference(cuda()) is False


def test_nvmls_throughput_kb_is_a_thousand_bytes_by_its_own_byte_counter_on_the_committed_h200_runs() -> None:
    """NVML's docs give PCIe throughput in "KB/s" and never say which KB. Its 32-bit RX byte counter, read
    beside it in every committed H200 link run, says: between two samples taken while copies streamed,
    the counter's step (its turns restored from the throughput, which a 1000-or-1024 question cannot
    move by a turn) over the throughput's integral is about 1,000 bytes per KB, not 1,024."""
    import json
    import statistics
    from pathlib import Path

    runs = sorted(Path(__file__).parent.parent.glob("results/nvidia-h200/*/run-*/validation/link.json"))
    assert len(runs) >= 5
    for path in runs:
        link = json.loads(path.read_text())["series"][0]["link"]
        t, counter, kbps = link["t_s"], link["rx_bytes"], link["rx_kbps"]
        ratios = []
        for i in range(len(t) - 1):
            if min(kbps[i], kbps[i + 1]) < 50e6:  # streaming: the rate is steady across the step
                continue
            integral = (kbps[i] + kbps[i + 1]) / 2 * (t[i + 1] - t[i])  # in NVML's KB
            step = (counter[i + 1] - counter[i]) % 2**32
            step += round((integral * 1012 - step) / 2**32) * 2**32  # whole turns: 1012 sits between both answers
            ratios.append(step / integral)
        per_kb = statistics.median(ratios)
        assert len(ratios) >= 15 and abs(per_kb - 1000) < 5, f"{path}: {per_kb:.1f} bytes per NVML KB over {len(ratios)} steps"
    assert telemetry.KB == 1000
