"""Peers' own output read into result files (xferbench import), on outputs built as each tool prints
them (peer_outputs.py): figures, sizes and batches, failed and waived testcases and N/A cells, text
around the JSON, and the readers (report, plot, compare, fleet) on an imported file beside one made
on the simulated link."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import peer_outputs as out
from conftest import FAST
from xferbench import compare, fleet, plot, report
from xferbench.cli import app
from xferbench.errors import XferbenchError
from xferbench.peers import read_bandwidthtest, read_nvbandwidth
from xferbench.results import Result, load, select

H2D_CE, D2H_CE = "host_to_device_memcpy_ce", "device_to_host_memcpy_ce"
IMAGE = 256 * 256 * 3


def write(tmp_path: Path, text: str, name: str = "peer.txt") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def by_label(result: Result) -> dict[str, object]:
    return {s.label(): s for s in result.series}


def test_nvbandwidth_figures_land_at_the_batches_of_the_same_bytes(tmp_path) -> None:
    text = out.nvbandwidth(out.passed(H2D_CE, "55.3112", "56.0207"), out.passed(D2H_CE, "55.1", "54.9"), mib=96,
                           gpus=((out.H100, "00000000:1b:00"), (out.H100, "00000000:43:00")))  # fmt: skip
    result = read_nvbandwidth([write(tmp_path, text)], buffer_size_mib=96)
    series = by_label(result)
    h2d = series["nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:1"]
    (point,) = h2d.ok_points()
    assert (tuple(h2d.shape), point.batch_size, point.bytes) == ((256, 256, 3), 512, 96 * 2**20)  # 96 MiB = batch 512
    assert point.mbps == pytest.approx(56_020.7) and point.median_s == pytest.approx(96 * 2**20 / 56.0207e9)
    assert point.times_s == [] and point.n == 3 and point.copies == 16  # the peer keeps no raw samples
    assert h2d.host_buffer == "pinned" and h2d.device_name == out.H100 and "the median of 3 samples" in h2d.note
    d2h = series["nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed@cuda:0"]
    assert d2h.direction == "d2h" and d2h.ok_points()[0].mbps == pytest.approx(55_100)
    env = result.environment
    assert env["host"] == "node07" and env["driver"] == "570.124.06" and env["cuda_driver"] == "12.8"
    assert [d["pci_bus_id"] for d in env["devices"]] == ["00000000:1b:00.0", "00000000:43:00.0"]
    assert env["peer"]["tool"] == "nvbandwidth" and env["peer"]["version"] == "v0.8" and env["peer"]["sizes_bytes"] == [96 * 2**20]


def test_a_size_not_recorded_is_the_versions_default_and_says_so(tmp_path) -> None:
    new = read_nvbandwidth([write(tmp_path, out.nvbandwidth(out.passed(H2D_CE, "55.3")))])
    (series,) = new.series
    assert series.ok_points()[0].bytes == 512 * 2**20 and tuple(series.shape) == (512, 512, 4)  # 1 MiB items, batch 512
    assert "buffer size assumed to be nvbandwidth v0.8's default (512 MiB)" in series.note
    old = read_nvbandwidth([write(tmp_path, out.nvbandwidth(out.passed(H2D_CE, "25.9"), version="v0.4"))])
    assert old.series[0].ok_points()[0].bytes == 64 * 2**20
    with pytest.raises(XferbenchError, match="does not record its buffer size; give the run's -b with --buffer-size"):
        read_nvbandwidth([write(tmp_path, out.nvbandwidth(out.passed(H2D_CE, "25.9"), version="custom"))])


def test_waived_errored_and_na_are_kept_with_their_reason(tmp_path) -> None:
    text = out.nvbandwidth(out.passed(H2D_CE, "55.3", "N/A"), out.waived("host_to_device_memcpy_sm"),
                           out.errored(D2H_CE), out.passed("device_to_device_memcpy_read_ce", "N/A", "N/A"),
                           gpus=((out.H100, "00000000:1b:00"), (out.H100, "00000000:43:00")), mib=3)  # fmt: skip
    result = read_nvbandwidth([write(tmp_path, text)], buffer_size_mib=3)
    series = by_label(result)
    gap = series["nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:1"]
    assert gap.status == "ok" and gap.points[0].status == "skipped" and "N/A in nvbandwidth's matrix" in gap.points[0].error
    assert series["nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:0"].ok_points()[0].batch_size == 16  # 3 MiB
    sm = series["nvbandwidth/host_to_device_memcpy_sm/copy/streamed@cuda:0"]
    assert sm.status == "skipped" and "waived" in sm.reason
    broken = series["nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed@cuda:0"]
    assert broken.status == "failed" and "stopped during it (status Running, Error)" in broken.reason
    assert any("device_to_device_memcpy_read_ce: not a copy between the host and one GPU" in n for n in result.environment["peer"]["not_imported"])


def test_a_fatal_error_and_text_around_the_json(tmp_path) -> None:
    fatal = out.nvbandwidth(error="[CUDA_ERROR_NO_DEVICE] no CUDA-capable device is detected in expression cuInit(0)")
    with pytest.raises(XferbenchError, match="nvbandwidth said: \\[CUDA_ERROR_NO_DEVICE\\] no CUDA-capable device"):
        read_nvbandwidth([write(tmp_path, fatal)], buffer_size_mib=512)
    noisy = out.nvbandwidth(out.passed(H2D_CE, "24.1"), before="note: added the driver folder to LD_LIBRARY_PATH\n",
                            after="NOTE: The reported results may not reflect the full capabilities of the platform.\n")  # fmt: skip
    assert read_nvbandwidth([write(tmp_path, noisy)]).series[0].ok_points()[0].mbps == pytest.approx(24_100)
    with pytest.raises(XferbenchError, match="not nvbandwidth's JSON output"):
        read_nvbandwidth([write(tmp_path, '{"something": "else"}')])
    with pytest.raises(XferbenchError, match="no such file"):
        read_nvbandwidth([tmp_path / "missing.json"])


def test_runs_kept_together_each_with_its_size_and_command(tmp_path) -> None:
    text = out.kit_runs((512, out.nvbandwidth(out.passed(H2D_CE, "55.6")), 0), (3, out.nvbandwidth(out.passed(H2D_CE, "40.2"), mib=3), 0),
                        (96, None, 139))  # fmt: skip
    result = read_nvbandwidth([write(tmp_path, text, "nvbandwidth.json")])
    (series,) = result.series
    assert [(p.batch_size, p.bytes) for p in series.ok_points()] == [(3, 3 * 2**20), (512, 512 * 2**20)]  # 1 MiB items
    assert "assumed" not in series.note and len(result.environment["peer"]["commands"]) == 3
    assert any("-b 96" in n and "no JSON in nvbandwidth's output (exit 139): Segmentation fault" in n
               for n in result.environment["peer"]["not_imported"])  # fmt: skip


def test_bandwidthtest_lines_sizes_sums_and_failures(tmp_path) -> None:
    shmoo = out.bandwidthtest(*(out.csv_line("H2D-Pinned", 25.9, size) for size in (1000, 64_000_000, 68_000_000)), mode="Shmoo")
    (pinned,) = read_bandwidthtest([write(tmp_path, shmoo)]).series
    assert pinned.label() == "bandwidthTest/pinned/copy/streamed@cuda:0" and tuple(pinned.shape) == (1000,)
    assert [p.batch_size for p in pinned.ok_points()] == [1, 64_000, 68_000] and pinned.ok_points()[0].copies == 100
    kept = out.kit_sections(
        ("range pinned b=16", "--htod --memory=pinned --mode=range --csv", out.bandwidthtest(out.csv_line("H2D-Pinned", 24.2, 16 * IMAGE))),
        ("range pageable b=16", "--htod --memory=pageable --mode=range --csv", out.bandwidthtest(out.csv_line("H2D-Paged", 11.0, 16 * IMAGE), result="FAIL")),
        ("all", "--htod --device=all --csv", out.bandwidthtest(out.csv_line("H2D-Pinned-WriteCombined", 49.8, 32_000_000, 2), devices=(out.H100, out.H100))),
        ("d2d", "--dtod --csv", out.bandwidthtest("bandwidthTest-D2D, Bandwidth = 1500.0 GB/s, Time = 0.00002 s, Size = 32000000 bytes, NumDevsUsed = 1")),
    )  # fmt: skip
    series = by_label(read_bandwidthtest([write(tmp_path, kept, "bandwidthTest.txt")]))
    assert series["bandwidthTest/pinned/copy/streamed@cuda:0"].ok_points()[0].batch_size == 16  # 16 images of 256x256x3
    paged = series["bandwidthTest/pageable/copy@cuda:0"]
    assert paged.status == "failed" and "Result = FAIL" in paged.reason and paged.ok_points()  # the figure is kept
    assert paged.method == "per-call" and paged.host_buffer == "numpy"
    summed = series["bandwidthTest/pinned_wc/copy/streamed@cuda:all"]
    assert "the sum over 2 GPUs" in summed.note and summed.ok_points()[0].mbps == pytest.approx(49_800)
    with pytest.raises(XferbenchError, match="run bandwidthTest with --csv"):
        read_bandwidthtest([write(tmp_path, "[CUDA Bandwidth Test] - Starting...\n   32000000\t\t\t25.9\nResult = PASS\n")])


def test_an_imported_file_reads_beside_a_simulated_one(tmp_path) -> None:
    from xferbench.backends.sim import SimLink
    from xferbench.sweep import SweepConfig

    from conftest import run_config

    text = out.kit_runs(*((mib, out.nvbandwidth(out.passed(H2D_CE, f"{50 + mib / 100:.2f}"), mib=mib), 0) for mib in (3, 6, 12, 24, 48, 96)))
    peer = tmp_path / "peer.json"
    read_nvbandwidth([write(tmp_path, text, "raw.json")]).save(peer)
    sim = tmp_path / "sim.json"
    made = run_config(SweepConfig(frameworks=("sim",), batch_sizes=(16, 64, 512), timing=FAST, sim=SimLink(bandwidth_gbps=50)))
    made.save(sim)
    loaded = load(peer)
    assert loaded.series[0].ok_points()[-1].batch_size == 512 and tuple(loaded.series[0].shape) == (256, 256, 3)
    picks, empty = select([peer, sim])
    text = report.render(picks, empty)
    assert "nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:0" in text and "sim/link/copy@sim" in text
    assert "holds nvbandwidth's own figures" in text and "-j -b 96 -t" in text  # the peer's commands stand for reproduce
    plot.figure(picks)
    found = fleet.read_fleet([peer])
    (row,) = found.rows
    assert row.source == "nvbandwidth" and row.ceiling_mbps == pytest.approx(50_960) and not row.flags
    assert "(nvbandwidth)" in row.measured
    with pytest.raises(XferbenchError, match="no matching series"):  # no raw samples: nothing to test significance on
        compare.compare_files(peer, peer, 0.05)


def test_import_commands_write_a_result_file_and_refuse_bad_input(tmp_path) -> None:
    raw = write(tmp_path, out.nvbandwidth(out.passed(H2D_CE, "55.3"), mib=96), "nvb.json")
    said = CliRunner().invoke(app, ["import", "nvbandwidth", str(raw), "--buffer-size", "96", "-o", str(tmp_path / "nvb-result.json")])
    assert said.exit_code == 0, said.output
    assert "1 series, 1 points from nvbandwidth" in said.output and load(tmp_path / "nvb-result.json").series
    bt = write(tmp_path, out.bandwidthtest(out.csv_line("H2D-Pinned", 25.9, 32_000_000)), "bt.txt")
    said = CliRunner().invoke(app, ["import", "bandwidthtest", str(bt), "-o", str(tmp_path / "bt-result.json")])
    assert said.exit_code == 0 and load(tmp_path / "bt-result.json").series[0].mode == "pinned"
    for args, message in ((["nvbandwidth", str(bt)], "not nvbandwidth's JSON output"),
                          (["nvbandwidth", str(raw), "-o", str(raw)], "is one of the result files"),
                          (["bandwidthtest", str(raw)], "no bandwidthTest CSV line"),
                          (["nvbandwidth", str(raw), "--buffer-size", "0"], "give nvbandwidth's -b")):  # fmt: skip
        said = CliRunner().invoke(app, ["import", *args])
        assert said.exit_code == 2 and message in said.output and "Traceback" not in said.output, said.output
