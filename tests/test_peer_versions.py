"""nvbandwidth -j as each of v0.5, v0.6, v0.7 and v0.8 writes it (peer_outputs.nvbandwidth): the
figures as printed, the version's default buffer, the driver from whichever field the version holds,
and notes that describe that version's copies (its SM copy threshold, and a bidirectional SM testcase
as two copies before v0.7 and one split-warp kernel from it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import peer_outputs as out
from xferbench.reading.peers import json_object, read_nvbandwidth
from xferbench.core.results import Result, Series

MIB = 2**20
TWO_GPUS = ((out.H100, "00000000:1b:00"), (out.H100, "00000000:43:00"))
H2D_SM, D2H_SM = "host_to_device_memcpy_sm", "device_to_host_memcpy_sm"
H2D_BIDIR_SM, D2H_BIDIR_SM = "host_to_device_bidirectional_memcpy_sm", "device_to_host_bidirectional_memcpy_sm"
# (version, its default -b in MiB, its SM copy threshold in MiB): common.h and kernels.cu at each tag
VERSIONS = [("v0.5", 64, 64), ("v0.6", 64, 64), ("v0.7", 512, 512), ("v0.8", 512, 64)]
# Each testcase's cells as JsonCpp writes them (std::stringstream's six significant digits)
PRINTED = {out.H2D_CE: ("55.3211", "54.9873"), out.D2H_CE: ("52.1", "N/A"), H2D_SM: ("49.4417", "48.9"),
           D2H_SM: ("47.0032", "46.5"), H2D_BIDIR_SM: ("36.7713", "36.2"), D2H_BIDIR_SM: ("35.9908", "35.1")}  # fmt: skip


def imported(tmp_path: Path, version: str, **given: int) -> tuple[str, Result]:
    """The stand-in's JSON for `version` with every testcase of PRINTED on two GPUs, and its import."""
    text = out.nvbandwidth(*(out.passed(name, *cells) for name, cells in PRINTED.items()), gpus=TWO_GPUS, version=version)
    path = tmp_path / f"nvbandwidth-{version}.json"
    path.write_text(text)
    return text, read_nvbandwidth([path], **given)


def series(result: Result, mode: str, device: str = "cuda:0") -> Series:
    return next(s for s in result.series if s.mode == mode and s.device == device)


@pytest.mark.parametrize("version", ["v0.5", "v0.6", "v0.7", "v0.8"])
def test_the_stand_in_writes_the_fields_of_that_versions_json_writer(version: str) -> None:
    root = json_object(out.nvbandwidth(out.passed(out.H2D_CE, "55.3"), version=version), ("nvbandwidth",))["nvbandwidth"]
    fields = {"version", "git_version", "CUDA Runtime Version", "Driver Version", "testcases"}
    assert set(root) == (fields | {"GPU Device list"} if version == "v0.8" else fields)


@pytest.mark.parametrize(("version", "default_mib", "threshold_mib"), VERSIONS)
def test_every_figure_imports_as_printed_at_the_versions_default_size(tmp_path, version: str, default_mib: int,
                                                                      threshold_mib: int) -> None:  # fmt: skip
    text, result = imported(tmp_path, version)
    printed = {case["name"]: case["bandwidth_matrix"][0] for case in json.loads(text)["nvbandwidth"]["testcases"]}
    assert printed == {name: list(cells) for name, cells in PRINTED.items()}
    for name, cells in printed.items():
        for gpu, cell in enumerate(cells):
            found = series(result, name, f"cuda:{gpu}")
            (point,) = found.points
            assert point.bytes == default_mib * MIB and f"{version}'s default ({default_mib} MiB)" in found.note
            if cell == "N/A":
                assert point.status == "skipped" and point.mbps is None
            else:
                assert point.mbps == pytest.approx(float(cell) * 1e3, rel=1e-12)
    assert result.environment["peer"]["sizes_bytes"] == [default_mib * MIB]


@pytest.mark.parametrize(("version", "default_mib", "threshold_mib"), VERSIONS)
def test_the_sm_copy_threshold_is_the_versions(tmp_path, version: str, default_mib: int, threshold_mib: int) -> None:
    _, result = imported(tmp_path, version)
    for mode in (H2D_SM, D2H_SM):
        assert f"from {threshold_mib} MiB the kernel copies a multiple of 16 B" in series(result, mode).note
    custom = tmp_path / "custom.json"
    custom.write_text(out.nvbandwidth(out.passed(H2D_SM, "49.4"), version="custom"))
    assert "from nvbandwidth's default buffer size the kernel" in read_nvbandwidth([custom], buffer_size_mib=512).series[0].note


@pytest.mark.parametrize(("version", "default_mib", "threshold_mib"), VERSIONS)
def test_a_bidirectional_sm_testcase_is_described_as_that_version_runs_it(tmp_path, version: str, default_mib: int,
                                                                         threshold_mib: int) -> None:  # fmt: skip
    _, result = imported(tmp_path, version)
    for mode in (H2D_BIDIR_SM, D2H_BIDIR_SM):
        note = series(result, mode).note
        if version in ("v0.5", "v0.6"):  # MemcpyInitiatorSM with a second copy of twice the size
            assert "copy of twice the size runs on a second stream" in note and "one kernel" not in note
            assert f"from {threshold_mib} MiB" in note
        else:  # MemcpyInitiatorSMSplitWarp, getAdjustedBandwidth halves what it measured
            assert "one kernel's own copy" in note and "half the kernel's figure for both ways at once" in note
            assert "second stream" not in note and "MiB the kernel copies" not in note
    ce = series(result, out.H2D_CE).note
    assert "copy-engine" in ce and "half" not in ce


@pytest.mark.parametrize(("version", "default_mib", "threshold_mib"), VERSIONS)
def test_driver_and_gpus_come_from_what_the_version_holds(tmp_path, version: str, default_mib: int, threshold_mib: int) -> None:
    _, result = imported(tmp_path, version)
    env = result.environment
    assert env["driver"] == "570.124.06" and env["cuda_driver"] == "12.8"
    devices = {d["id"]: d for d in env["devices"]}
    assert set(devices) == {"cuda:0", "cuda:1"}
    for device in devices.values():
        assert device["driver"] == "570.124.06" and device["cuda_driver"] == "12.8"
    names = {s.device_name for s in result.series}
    if version == "v0.8":
        assert names == {out.H100} and devices["cuda:1"]["pci_bus_id"] == "00000000:43:00.0" and env["host"] == "node07"
        assert "unrecorded" not in env["peer"]
    else:
        assert names == {None} and "name" not in devices["cuda:0"]
        assert env["peer"]["unrecorded"] == [f"nvbandwidth {version}'s JSON names no GPU (its device list is printed in its text only,"
                                             " and in -j from v0.8)"]  # fmt: skip


@pytest.mark.parametrize(("version", "default_mib"), [("v0.6", 64), ("v0.7", 512)])
def test_a_size_below_the_versions_default_warns_and_is_asked_for(tmp_path, version: str, default_mib: int) -> None:
    small = out.nvbandwidth(out.passed(out.H2D_CE, "40.1"), version=version, mib=default_mib // 2)
    assert "smaller than the default buffer size" in json_object(small, ("nvbandwidth",))["nvbandwidth"]["warning"]
    at_default = out.nvbandwidth(out.passed(out.H2D_CE, "40.1"), version=version)
    assert "warning" not in json_object(at_default, ("nvbandwidth",))["nvbandwidth"]
    path = tmp_path / "small.json"
    path.write_text(small)
    with pytest.raises(Exception, match="smaller than its default"):
        read_nvbandwidth([path])
    assert read_nvbandwidth([path], buffer_size_mib=default_mib // 2).series[0].points[0].bytes == default_mib // 2 * MIB
