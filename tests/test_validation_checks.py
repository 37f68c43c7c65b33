"""The GPU validation checks on fixture results, and the script's plumbing on the CPU."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import FAST
from xferbench.health import validation_checks
from xferbench.core import telemetry
from xferbench.core.results import Point, Result, Series
from xferbench.core.spec import PER_CALL, STREAMED, SeriesKey
from xferbench.measuring.sweep import Plan, PlannedSeries, SweepConfig, new_result, run_plan
from xferbench.core.timing import Samples
from xferbench.core.verdict import Verdict
from xferbench.measuring.worker import LocalRunner

REPO = Path(__file__).resolve().parent.parent
SHAPE = (512, 512, 4)  # 1 MiB per item
NVML = {"pcie_gen_max": 4, "pcie_width_max": 16, "pcie_gen_current": 4, "pcie_width_current": 16, "numa_node": 0,
        "cpu_affinity": [0, 1, 2, 3]}  # fmt: skip
GEN4_X16: dict[str, Any] = {"devices": [{"id": "cuda:0", "kind": "cuda", "name": "GPU", "nvml": NVML}]}
BOUND = {"requested": {"cpus": [0, 1, 2, 3], "node": 0}, "cpus": [0, 1, 2, 3], "node": 0,
         "how": "sched_setaffinity on every thread; set_mempolicy(MPOL_PREFERRED, node 0)", "reason": None}  # fmt: skip
TRANSFERS = 50  # per point


def link_record(received: float, gen: int = 4, counter: bool = True, seconds: float = 3.0) -> dict[str, Any]:
    """NVML samples, 0.1 s apart and all under load, whose count (or integrated rate) is `received` bytes."""
    n = round(seconds / 0.1) + 1
    times = [round(0.1 * i, 3) for i in range(n)]
    link = {"pcie_gen_max": 4, "pcie_width_max": 16, "t_s": times, "gen": [gen] * n, "width": [16] * n,
            "tx_kbps": [0] * n, "rx_kbps": [received / seconds / telemetry.KB] * n,
            "rx_bytes": [round(received * t / seconds) for t in times] if counter else [None] * n, "reason": None}  # fmt: skip
    link["summary"] = telemetry.link_summary(link)
    return link


def series(framework: str, mode: str, mbps_by_batch: dict[int, float], device_ratio: float | None = 1.0,
           status: str = "ok", method: str = PER_CALL, gen: int = 4, nvml_share: float = 1.0,
           nodes: dict[str, int] | None = None) -> Series:  # fmt: skip
    """Points whose time gives the MB/s asked for; the device clock reads `device_ratio` of it. Each
    point claims TRANSFERS transfers; NVML counts `nvml_share` of the bytes claimed, with the link at
    `gen` under load. The worker was bound to node 0, where the sampled pages (`nodes`) sit."""
    key = SeriesKey(framework, mode, "copy", "cuda:0", SHAPE, method=method)
    made = Series.of(key)
    made.status, made.numa = status, dict(BOUND)
    for batch, mbps in mbps_by_batch.items():
        spec = key.at(batch)
        wall = spec.nbytes / (mbps * 1e6)
        device = [wall * device_ratio] * 3 if device_ratio and method == PER_CALL else []
        point = Point.measured(spec, Samples([wall] * 3, device), warmup_calls=1)
        point.transfers, point.host_nodes = TRANSFERS, nodes or {"0": 64}
        made.points.append(point)
    made.refresh_summary()
    made.link = link_record(nvml_share * telemetry.claimed_bytes(made), gen)
    return made


def result(*made: Series, environment: dict[str, Any] = GEN4_X16) -> Result:
    return Result(environment, {}, "2026-11-22T00:00:00+00:00", list(made), "complete")


def good_raw() -> list[Series]:
    return [series("cuda", "raw_pinned", {64: 20_000, 256: 25_800, 1024: 26_000}),
            series("cuda", "raw_pinned", {64: 26_100, 256: 26_100, 1024: 26_100}, method=STREAMED)]  # fmt: skip


def check(name: str, *made: Series, environment: dict[str, Any] = GEN4_X16) -> Verdict:
    """The one check whose function is `name`, over a file holding these series."""
    return getattr(validation_checks, f"{name}_check")([result(*made, environment=environment)])


def test_a_good_run_passes_every_check() -> None:
    good = result(*good_raw(), series("torch", "pinned_into", {64: 19_000, 1024: 25_500}, device_ratio=0.99))
    checks = validation_checks.run_checks([good])
    assert [c.status for c in checks] == ["pass"] * 7 + ["info"], checks
    assert validation_checks.passed(checks)
    figures = [c.figure for c in checks]
    assert figures[0] == ("cuda/raw_pinned/copy/streamed@cuda:0: 26,100 MB/s = 82.9% of PCIe Gen4 x16 theoretical"
                          " (31.5 GB/s, under load)")  # fmt: skip
    assert figures[1] == "Gen4 x16 under load in 3 series"
    assert figures[2] == "3 series bound to node 0; 512 sampled pages on it, none off it"
    assert figures[3].startswith("25,500 / 26,000 MB/s = 98.1% at batch 1024 (1,024 MiB, per-call)")
    assert figures[4] == "worst +1.2% (streamed vs per call) at batch 256 (268 MB): 26,100 streamed, 25,800 per call MB/s, over 2 sizes"
    assert figures[5].startswith("cuda/raw_pinned/copy@cuda:0: claimed 70.5 GB, NVML 70.5 GB (NVML's PCIe RX byte counter over 3.0 s): +0.0%")
    assert figures[6] == "3 series, 8 points, every byte of each verified"
    assert "worst -1.0% (wall vs device) at torch/pinned_into/copy@cuda:0 batch 1024" in figures[7]


def test_each_check_fails_on_its_own_fault() -> None:
    too_fast = check("raw_ceiling", series("cuda", "raw_pinned", {1024: 70_000}))
    assert too_fast.status == "fail" and "faster than every reading of the link allows" in too_fast.figure
    assert check("raw_ceiling", series("cuda", "raw_pinned", {1024: 12_000})).status == "fail"  # 38% of the link
    slow_link = check("link", series("cuda", "raw_pinned", {1024: 12_000}, gen=3))
    assert slow_link.status == "fail" and "ran below its maximum (Gen4 x16) while data moved: down to Gen3 x16" in slow_link.figure
    remote = check("placement", series("cuda", "raw_pinned", {1024: 26_000}, nodes={"0": 60, "1": 4}))
    assert remote.status == "fail" and "off the GPU's NUMA node 0 at batch 1024" in remote.figure
    over = series("cuda", "raw_pinned", {256: 26_000}, nvml_share=1.5)  # half again more crossed than was claimed
    assert check("bytes", over).status == "fail" and "+50.0%" in check("bytes", over).figure
    slow_torch = check("pinned_into", series("cuda", "raw_pinned", {1024: 26_000}), series("torch", "pinned_into", {1024: 20_000}))
    assert slow_torch.status == "fail"
    apart = check("methods", series("cuda", "raw_pinned", {1024: 24_000}), series("cuda", "raw_pinned", {1024: 26_000}, method=STREAMED))
    assert apart.status == "fail" and "worst +8.3%" in apart.figure
    broken = series("torch", "pinned_into", {1024: 25_000})
    broken.points.append(Point(2048, 2**31, status="error", error="verification failed: bytes differ"))
    failed = check("verified", series("cuda", "raw_pinned", {1024: 26_000}), broken)
    assert failed.status == "fail" and "batch 2048: verification failed" in failed.figure
    oom = series("torch", "pinned_into", {1024: 25_000})
    oom.points.append(Point(2048, 2**31, status="error", error="out of memory: CUDA"))
    assert check("verified", oom).status == "pass"  # running out of memory is a limit, not a wrong byte


def test_a_run_claiming_twice_the_bytes_nvml_counted_fails() -> None:
    for counter in (True, False):  # the driver's byte counter, or the throughput samples integrated
        honest = series("cuda", "raw_pinned", {256: 26_000})
        honest.link = link_record(telemetry.claimed_bytes(honest) * 1.05, counter=counter)
        assert check("bytes", honest).status == "pass"
        boast = series("cuda", "raw_pinned", {256: 26_000})
        boast.link = link_record(telemetry.claimed_bytes(boast) / 2, counter=counter)
        failed = check("bytes", boast)
        assert failed.status == "fail" and "-50.0%" in failed.figure
        assert ("byte counter" if counter else "≈ NVML's RX throughput (approximate") in failed.figure
    short = series("cuda", "raw_pinned", {256: 26_000})
    short.link = link_record(telemetry.claimed_bytes(short), counter=False, seconds=1.0)  # 11 samples: too few to integrate
    assert check("bytes", short).status == "n/a" and "too few to integrate" in check("bytes", short).figure


def test_placement_is_proven_only_by_pages_the_kernel_could_place() -> None:
    pinned = series("cuda", "raw_pinned", {1024: 26_000}, nodes={"EFAULT": 64})  # driver-mapped: the kernel cannot say
    unproven = check("placement", pinned)
    assert unproven.status == "n/a" and "placed none of 64 sampled pages" in unproven.figure
    pageable = series("cuda", "raw_pageable", {1024: 12_000}, nodes={"0": 64})  # the same binding, pages it can place
    proven = check("placement", pinned, pageable)
    assert proven.status == "pass" and proven.figure.endswith("64 sampled pages on it, none off it; 64 the kernel cannot place"
                                                              " (driver-mapped pinned memory)")  # fmt: skip
    refused = series("cuda", "raw_pageable", {1024: 12_000})
    refused.numa = {**BOUND, "node": None, "reason": "the kernel refused set_mempolicy(MPOL_PREFERRED, node 0): Operation not permitted"}
    said = check("placement", refused)
    assert said.status == "n/a" and "could not be put on node 0: the kernel refused set_mempolicy" in said.figure
    overhead = series("cuda", "raw_pinned", {256: 26_000}, nvml_share=1.2)  # NVML may count packet headers
    assert check("bytes", overhead).status == "pass"


def test_placement_with_the_gpus_node_unknown_is_never_a_pass() -> None:
    """A PCIe GPU whose host node NVML and the kernel do not give: the worker is bound to CPUs only,
    so no page can be on or off the GPU's node, however many the kernel placed."""
    nvml = {**NVML, "numa_node": None, "numa_node_reason": "NVML gives no memory affinity, and the kernel gives no node for its PCI address"}
    unknown = {"devices": [{"id": "cuda:0", "kind": "cuda", "name": "GPU", "nvml": nvml}]}
    cpus_only = series("cuda", "raw_pageable", {1024: 12_000}, nodes={"0": 64})
    cpus_only.numa = {**BOUND, "requested": {"cpus": [0, 1, 2, 3], "node": None}, "node": None}
    said = check("placement", cpus_only, environment=unknown)
    assert said.status == "n/a" and said.figure.startswith("node unknown: cuda/raw_pageable/copy@cuda:0 was bound to CPUs only"
                                                          " (NVML gives no memory affinity")  # fmt: skip


def test_a_virtual_machines_understated_port_reads_as_facts_disagreeing() -> None:
    nvml = {**NVML, "pcie_gen_gpu_max": 5}  # the virtual root port says Gen4; the GPU's own maximum is Gen5
    vm = {"devices": [{"id": "cuda:0", "kind": "cuda", "name": "H100", "nvml": nvml}]}
    unsampled = series("cuda", "raw_pinned", {1024: 55_000}, method=STREAMED)
    unsampled.link = {"reason": "not sampled: --no-link-sampling"}
    disagree = check("raw_ceiling", unsampled, environment=vm)
    assert disagree.status == "n/a" and disagree.figure.startswith(
        "link facts disagree: 55,000 MB/s exceeds Gen4 x16 (31.5 GB/s, system maximum) but fits the GPU maximum, Gen5 x16 (63.0 GB/s)")
    sampled = check("raw_ceiling", series("cuda", "raw_pinned", {1024: 55_000}, method=STREAMED, gen=5), environment=vm)
    assert sampled.status == "pass" and "87.3% of PCIe Gen5 x16 theoretical (63.0 GB/s, under load); NVML also reads system maximum Gen4 x16" in sampled.figure
    assert check("link", series("cuda", "raw_pinned", {1024: 55_000}, gen=5), environment=vm).status == "pass"


def test_the_event_and_wall_clocks_are_information_only() -> None:
    wall_too_fast = check("clock", series("cuda", "raw_pinned", {1024: 26_000}, device_ratio=1.2))
    assert wall_too_fast.status == "info" and "worst +20.0% (wall vs device)" in wall_too_fast.figure
    assert validation_checks.passed([wall_too_fast, Verdict("x", "pass", "")])  # shown, never judged: it cannot fail
    pageable = series("torch", "pageable", {64: 10_000, 1024: 12_000}, device_ratio=1.5)  # host staging: not judged
    small = series("cuda", "raw_pinned", {64: 20_000}, device_ratio=1.2)  # 64 MiB: launch costs still weigh
    assert check("clock", pageable, small).status == "n/a" and "no pinned copy of 256 MiB or more" in check("clock", pageable, small).figure


def test_a_sweep_that_did_not_finish_fails_the_run() -> None:
    done = result(series("cuda", "raw_pinned", {1024: 26_000}))
    assert validation_checks.completed_check({"default.json": done, "large.json": done}).status == "pass"
    cut = Result(GEN4_X16, {}, "2026-11-22T00:00:00+00:00", [], "interrupted")
    check = validation_checks.completed_check({"default.json": done, "large.json": cut})
    assert check.status == "fail" and check.figure == "large.json: interrupted"
    assert validation_checks.completed_check({"default.json": done, "large.json": None}).figure == "large.json: not written"


def test_a_check_that_cannot_run_says_why_and_never_passes() -> None:
    lone = series("torch", "pinned_into", {1024: 25_000}, device_ratio=None)
    lone.link, lone.numa = {}, {"reason": "not bound: --no-bind"}
    checks = validation_checks.run_checks([result(lone, environment={})])
    assert [c.status for c in checks] == ["n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "pass", "n/a"], checks
    assert "no cuda/raw_pinned series" in checks[0].figure and "no cuda/raw_pinned series" in checks[3].figure
    assert "no CUDA series has NVML link samples" in checks[1].figure and "not bound: --no-bind" in checks[2].figure
    assert not validation_checks.passed(checks)
    unsampled = series("cuda", "raw_pinned", {1024: 26_000})
    unsampled.link = {}
    unknown_link = validation_checks.raw_ceiling_check([result(unsampled, environment={})])
    assert unknown_link.status == "n/a" and "the link is unknown" in unknown_link.figure
    text = validation_checks.render(checks)
    assert text.startswith("| check | result | figure |\n| --- | --- | --- |\n") and "**N/A**" in text


def test_nvml_counts_what_a_sweep_really_moved_and_a_double_claim_fails(monkeypatch) -> None:
    """End to end through run_plan and the link sampler, against a fake NVML whose RX counter grows by
    the bytes each call really moves: a path that counts every transfer twice fails the check."""
    from conftest import FakeBackend, FakeTransfer
    from test_telemetry import UUID, FakeNVML

    fake = FakeNVML(rx_counter=0)
    monkeypatch.setitem(sys.modules, "pynvml", fake)

    class Moving(FakeTransfer):
        def __init__(self, spec: Any, backend: Any) -> None:
            super().__init__(spec, backend)
            self.transfers = 0

        def __call__(self) -> None:
            fake.rx_counter += self.spec.nbytes  # what crossed the link
            self.transfers += backend.claimed_per_call  # what the path says crossed

        def verify(self) -> None:
            self()

    class Claiming(FakeBackend):
        claimed_per_call = 1

        def prepare(self, spec: Any, params: dict[str, Any]) -> Any:
            return Moving(spec, self)

    backend = Claiming()
    env = {"devices": [{"id": "cuda:0", "kind": "cuda", "uuid": UUID, "nvml": NVML}]}
    for claimed, expected in ((1, "pass"), (2, "fail")):
        backend.claimed_per_call = claimed
        key = SeriesKey("cuda", "raw_pinned", "copy", "cuda:0", SHAPE)
        plan = Plan(SweepConfig(batch_sizes=(1, 4), shape=SHAPE, timing=FAST), "cuda:0", [PlannedSeries(key, backend)],
                    {"cuda": LocalRunner(backend)})  # fmt: skip
        made = run_plan(plan, new_result(plan, env), lambda r: None, link_interval_s=0.002)
        link = made.series[0].link
        assert link["reason"] is None and link["summary"]["rx_bytes_from"].startswith("NVML's PCIe RX byte counter")
        outcome = validation_checks.bytes_check([made])
        assert outcome.status == expected, outcome
    assert "-50.0%" in outcome.figure


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs a framework that can move data: JAX")
def test_script_without_the_device_is_exit_2(tmp_path) -> None:
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "validate_gpu.py"), str(tmp_path / "v"), "--device", "cuda:7",
                          "-f", "jax"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 2, run.stdout + run.stderr
    assert not (tmp_path / "v" / "default.json").exists()
