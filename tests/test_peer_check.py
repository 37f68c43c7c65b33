"""The peer check on both sides of its rule, built from the H200 run's own files with nvbandwidth's
figures set where the rule must turn: the median over the sizes from 16 MiB, each side's placement said,
and a FAIL's likely causes in order of the evidence."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from xferbench.health import validation_checks, validate_command
from xferbench.core.results import Result, load

RUN = Path(__file__).resolve().parent.parent / "results" / "nvidia-h200" / "2026-11-26" / "run-2" / "validation"
MIB = 2**20


@pytest.fixture(scope="module")
def files() -> dict[str, Result]:
    return {stem: load(RUN / f"{stem}.json") for stem in ("default", "large", "peer-nvbandwidth")}


def peer_at(files: dict[str, Result], gbps: dict[int, float], placement: str | None = None, samples: int = 1) -> Result:
    """nvbandwidth's file with its host-to-device figure at each size (MiB) set to `gbps`, the rest dropped."""
    peer = copy.deepcopy(files["peer-nvbandwidth"])
    for series in peer.series:
        series.params["samples"] = samples
        if series.mode != "host_to_device_memcpy_ce":
            continue
        kept = []
        for point in series.points:
            if point.bytes // MIB in gbps:
                point.mbps = gbps[point.bytes // MIB] * 1e3
                point.median_s = point.bytes / (point.mbps * 1e6)
                kept.append(point)
        series.points = kept
    if placement:
        peer.environment["peer"]["placement"] = placement
    return peer


def ours(files: dict[str, Result], mbps: float) -> list[Result]:
    """xferbench's sweeps with its streamed raw pinned copy at `mbps` at every size."""
    found = [copy.deepcopy(files["default"]), copy.deepcopy(files["large"])]
    for result in found:
        for series in result.series:
            if (series.framework, series.mode, series.method) == ("cuda", "raw_pinned", "streamed"):
                for point in series.ok_points():
                    point.mbps = mbps
    return found


def test_within_three_per_cent_at_the_median_passes(files) -> None:
    check = validate_command.peers_check(ours(files, 54_000.0), peer_at(files, {96: 55.0, 256: 55.0, 1024: 55.0}, "under numactl --cpunodebind=0 --membind=0"), "cuda:0")
    assert check.status == validation_checks.PASS and check.name.endswith("from 16 MiB (median)")
    assert check.figure.startswith("median -1.8% over 3 sizes (worst -1.8% at")
    assert "placement: xferbench bound to CPUs 0-15, memory preferred on NUMA node 0; nvbandwidth under numactl" in check.figure


def test_five_per_cent_apart_fails_and_names_the_causes_placement_first(files) -> None:
    check = validate_command.peers_check(ours(files, 52_250.0), peer_at(files, {96: 55.0, 256: 55.0, 1024: 55.0}), "cuda:0")
    assert check.status == validation_checks.FAIL and check.figure.startswith("median -5.0% over 3 sizes")
    causes = check.figure.split("likely causes, in order of the evidence: ", 1)[1].split("; ")
    assert causes[0].startswith("placement: the two ran with different NUMA binding")
    assert causes[1].startswith("timing: nvbandwidth's figure is 1 sample") and causes[-1].startswith("the link itself")
    bound = validate_command.peers_check(ours(files, 52_250.0), peer_at(files, {96: 55.0, 256: 55.0, 1024: 55.0}, "under numactl --cpunodebind=0 --membind=0", samples=3), "cuda:0")
    assert bound.status == validation_checks.FAIL and bound.figure.split("likely causes, in order of the evidence: ", 1)[1] == \
        "the link itself between the two runs: repeat both, one after the other"  # fmt: skip


def test_one_size_apart_does_not_fail_the_median_and_one_shared_size_says_so(files) -> None:
    check = validate_command.peers_check(ours(files, 55_000.0), peer_at(files, {96: 55.0, 256: 55.0, 1024: 60.0}), "cuda:0")
    assert check.status == validation_checks.PASS and "median +0.0% over 3 sizes (worst -8.3% at 1024 MiB" in check.figure
    one = validate_command.peers_check(ours(files, 55_000.0), peer_at(files, {256: 55.0}), "cuda:0")
    assert one.status == validation_checks.PASS and one.figure.startswith("median +0.0% over 1 size (worst")


def test_not_applicable_for_each_reason(files) -> None:
    assert validate_command.peers_check(ours(files, 55_000.0), None, "cuda:0").status == validation_checks.NA
    small = validate_command.peers_check(ours(files, 55_000.0), peer_at(files, {}), "cuda:0")
    assert small.status == validation_checks.NA and small.figure.startswith("no size from 16 MiB measured by both on cuda:0; ")
    nothing = validate_command.peers_check([], peer_at(files, {256: 55.0}), "cuda:0")
    assert nothing.status == validation_checks.NA and "measured nothing on cuda:0" in nothing.figure


@pytest.mark.parametrize("peer", ["nvbandwidth", "bandwidthTest"])
def test_both_peers_run_on_the_gpus_node_as_xferbench_does(peer, tmp_path, monkeypatch) -> None:
    """nvbandwidth binds its CPUs only (and not at all where NVML cannot say): like bandwidthTest, it
    runs under numactl on the GPU's node for CPUs and memory, and says where it could not."""
    from types import SimpleNamespace

    make = validate_command.nvbandwidth_peer if peer == "nvbandwidth" else validate_command.bandwidthtest_peer
    log = validate_command.CommandLog(tmp_path / "commands.txt", lambda line: None)
    environment = {"devices": [{"id": "cuda:0", "kind": "cuda", "nvml": {"numa_node": 1, "uuid": "GPU-1"}}]}
    target = SimpleNamespace(device="cuda:0")
    monkeypatch.setattr(validate_command.shutil, "which", lambda name: "/usr/bin/numactl")
    run = make("/opt/peer", target, log, environment)
    assert run.prefix == ["/usr/bin/numactl", "--cpunodebind=1", "--membind=1"]
    assert run.placement() == "under numactl --cpunodebind=1 --membind=1"
    monkeypatch.setattr(validate_command.shutil, "which", lambda name: None)
    unbound = make("/opt/peer", target, log, environment)
    assert unbound.prefix == [] and unbound.placement() == "without NUMA binding (numactl is not on PATH)"
