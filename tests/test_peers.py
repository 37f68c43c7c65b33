"""Peers' own output read into result files, on outputs built as each tool prints them
(peer_outputs.py): figures, sizes, batches and item shapes; waived, failed and N/A testcases and
nvbandwidth's fatal error; text around the JSON; bandwidthTest's sums over GPUs and failed runs; bad
input; and the readers (report, plot, compare, fleet) on an imported file beside one made on the
simulated link."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

import peer_outputs as out
from conftest import FAST, unwrapped
from xferbench import __version__
from xferbench.health import fleet
from xferbench.reading import compare, plot, report
from xferbench.core.errors import XferbenchError
from xferbench.reading.peers import item_for, read_bandwidthtest, read_nvbandwidth
from xferbench.core.results import SCHEMA, Result, Series, load, select

H2D_CE, D2H_CE = out.H2D_CE, out.D2H_CE
IMAGE = 256 * 256 * 3  # 196,608 B
MIB = 2**20
TWO_GPUS = ((out.H100, "00000000:1b:00"), (out.H100, "00000000:43:00"))


def write(tmp_path: Path, text: str, name: str = "peer.txt") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def find(result: Result, mode: str, device: str = "cuda:0", shape: tuple[int, ...] | None = None) -> Series:
    (series,) = [s for s in result.series if s.mode == mode and s.device == device and (shape is None or tuple(s.shape) == shape)]
    return series


def one_line_error(call, match: str) -> str:
    with pytest.raises(XferbenchError, match=match) as raised:
        call()
    message = str(raised.value)
    assert "\n" not in message, message
    return message


def test_nvbandwidth_figures_and_the_machine_as_it_saw_it(tmp_path) -> None:
    text = out.nvbandwidth(out.passed(H2D_CE, "55.3112", "56.0207"), out.passed(D2H_CE, "55.1", "54.9"), mib=96, gpus=TWO_GPUS)
    result = read_nvbandwidth([write(tmp_path, text)], buffer_size_mib=96)
    h2d = find(result, H2D_CE, "cuda:1")
    (point,) = h2d.points
    assert (tuple(h2d.shape), point.batch_size, point.bytes) == ((256, 256, 3), 512, 96 * MIB)  # 96 MiB = batch 512
    assert point.mbps == pytest.approx(56_020.7) and point.median_s == pytest.approx(96 * MIB / 56.0207e9)
    assert point.batches_per_s == pytest.approx(1 / point.median_s) and point.images_per_s == pytest.approx(512 / point.median_s)
    assert point.times_s == [] and point.n == 3 and point.copies == 16  # the peer keeps no raw samples
    assert h2d.label() == "nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:1"
    assert (h2d.host_buffer, h2d.method, h2d.transfer, h2d.direction, h2d.op) == ("pinned", "streamed", "host-to-device", "h2d", "copy")
    assert h2d.params == {"tool": "nvbandwidth v0.8", "samples": 3, "copies_per_sample": 16, "statistic": "median"}
    assert h2d.device_name == out.H100 and "the median of 3 samples" in h2d.note and "cuEventElapsedTime" in h2d.clock
    assert h2d.summary.peak_mbps == pytest.approx(56_020.7)
    d2h = find(result, D2H_CE)
    assert (d2h.direction, d2h.transfer, d2h.points[0].mbps) == ("d2h", "device-to-host", pytest.approx(55_100))
    assert [(s.mode, s.device) for s in result.series][:2] == [(H2D_CE, "cuda:0"), (D2H_CE, "cuda:0")]
    env = result.environment
    assert env["host"] == "node07" and env["driver"] == "570.124.06" and env["cuda_driver"] == "12.8"
    assert [(d["id"], d["kind"], d["name"], d["pci_bus_id"]) for d in env["devices"]] == [
        ("cuda:0", "cuda", out.H100, "00000000:1b:00.0"), ("cuda:1", "cuda", out.H100, "00000000:43:00.0")]
    peer = env["peer"]
    assert (peer["tool"], peer["version"], peer["git_version"], peer["sizes_bytes"]) == ("nvbandwidth", "v0.8", None, [96 * MIB])
    assert peer["imported_by"] == f"xferbench {__version__}" and peer["files"] == [str(tmp_path / "peer.txt")]
    assert datetime.fromisoformat(result.created) and result.created == peer["imported"]
    assert (result.status, result.schema) == ("complete", SCHEMA)
    assert "smaller than the default buffer size" in peer["warnings"][0]


def test_bidirectional_testcases_are_one_direction_while_the_other_runs(tmp_path) -> None:
    text = out.nvbandwidth(out.passed("host_to_device_bidirectional_memcpy_ce", "41.2"),
                           out.passed("device_to_host_bidirectional_memcpy_ce", "40.8"), out.passed("host_to_device_memcpy_sm", "50.2"))  # fmt: skip
    result = read_nvbandwidth([write(tmp_path, text)], buffer_size_mib=512)
    h2d = find(result, "host_to_device_bidirectional_memcpy_ce")
    assert h2d.direction == "h2d" and "the host to device stream's figure while a device to host copy" in h2d.note
    d2h = find(result, "device_to_host_bidirectional_memcpy_ce")
    assert d2h.direction == "d2h" and "the device to host stream's figure while a host to device copy" in d2h.note
    sm = find(result, "host_to_device_memcpy_sm")
    assert sm.method == "streamed" and "no copy engine" in sm.note


def test_a_testcase_is_one_series_in_the_first_item_shape_that_divides_every_size(tmp_path) -> None:
    assert [item_for([n]) for n in (3 * MIB, 512 * MIB, 68_000_000, 1001)] == [(256, 256, 3), (512, 512, 4), (1000,), (1,)]
    assert item_for([3 * MIB, 96 * MIB]) == (256, 256, 3) and item_for([3 * MIB, 512 * MIB]) == (512, 512, 4)
    assert item_for([3 * MIB], (224, 224, 3)) == (512, 512, 4)
    images = [(mib, out.nvbandwidth(out.passed(H2D_CE, f"{50 + mib / 1000:.3f}"), mib=mib), 0) for mib in (96, 3, 48)]
    result = read_nvbandwidth([write(tmp_path, out.kit_runs(*images), "images.json")])
    series = find(result, H2D_CE)
    assert tuple(series.shape) == (256, 256, 3)  # 3, 48 and 96 MiB: batches 16, 256 and 512 of the default sweep
    assert [(p.batch_size, p.bytes) for p in series.points] == [(16, 3 * MIB), (256, 48 * MIB), (512, 96 * MIB)]  # sorted by size
    assert series.points[2].images_per_s == pytest.approx(512 * series.points[2].batches_per_s)
    runs = [(mib, out.nvbandwidth(out.passed(H2D_CE, f"{50 + mib / 1000:.3f}"), mib=mib), 0) for mib in (512, 3, 1, 96)]
    result = read_nvbandwidth([write(tmp_path, out.kit_runs(*runs), "nvbandwidth.json")])
    (large,) = result.series  # 512 MiB is no whole number of images: every size counts in 1 MiB items
    assert tuple(large.shape) == (512, 512, 4)
    assert [(p.batch_size, p.bytes) for p in large.points] == [(1, MIB), (3, 3 * MIB), (96, 96 * MIB), (512, 512 * MIB)]
    assert large.points[3].mbps == pytest.approx(50_512)
    assert "assumed" not in large.note and len(result.environment["peer"]["commands"]) == 4
    assert result.environment["peer"]["sizes_bytes"] == [MIB, 3 * MIB, 96 * MIB, 512 * MIB]


def test_a_size_not_recorded_is_the_versions_default_and_says_so(tmp_path) -> None:
    new = read_nvbandwidth([write(tmp_path, out.nvbandwidth(out.passed(H2D_CE, "55.3")))])
    (series,) = new.series
    assert (series.points[0].bytes, series.points[0].batch_size, tuple(series.shape)) == (512 * MIB, 512, (512, 512, 4))
    assert "buffer size assumed to be nvbandwidth v0.8's default (512 MiB)" in series.note
    old = read_nvbandwidth([write(tmp_path, out.nvbandwidth(out.passed(H2D_CE, "25.9"), version="v0.6"))])
    assert old.series[0].points[0].bytes == 64 * MIB and "v0.6's default (64 MiB)" in old.series[0].note
    given = read_nvbandwidth([write(tmp_path, out.nvbandwidth(out.passed(H2D_CE, "40.1"), mib=3))], buffer_size_mib=3)
    assert given.series[0].points[0].batch_size == 16 and "assumed" not in given.series[0].note
    custom = write(tmp_path, out.nvbandwidth(out.passed(H2D_CE, "25.9"), version="custom"))
    one_line_error(lambda: read_nvbandwidth([custom]), "does not record its buffer size.*give the run's -b in MiB with --buffer-size")


def test_waived_errored_and_na_are_kept_with_their_reason(tmp_path) -> None:
    text = out.nvbandwidth(out.passed(H2D_CE, "55.3", "N/A"), out.waived("host_to_device_memcpy_sm"), out.errored(D2H_CE),
                           out.passed("device_to_device_memcpy_read_ce", "N/A", "N/A"), out.not_found("host_to_device_memcpy_cee"),
                           gpus=TWO_GPUS, mib=3)  # fmt: skip
    result = read_nvbandwidth([write(tmp_path, text)], buffer_size_mib=3)
    assert find(result, H2D_CE).points[0].batch_size == 16 and find(result, H2D_CE).status == "ok"
    gap = find(result, H2D_CE, "cuda:1")
    assert gap.status == "ok" and gap.points[0].status == "skipped" and gap.points[0].error.startswith("N/A in nvbandwidth's matrix")
    assert gap.points[0].bytes == 3 * MIB and not gap.ok_points()
    sm = find(result, "host_to_device_memcpy_sm")
    assert sm.status == "skipped" and sm.reason.startswith("nvbandwidth waived it") and not sm.points
    broken = find(result, D2H_CE, "cuda:1")
    assert broken.status == "failed" and "failed (Running, Error): nvbandwidth marked it Error" in broken.reason
    assert [(p.status, p.bytes) for p in broken.points] == [("error", 3 * MIB)]
    left = result.environment["peer"]["not_imported"]
    assert any("device_to_device_memcpy_read_ce: not a copy between the host and one GPU" in n for n in left)
    assert any("host_to_device_memcpy_cee: nvbandwidth has no such testcase" in n for n in left)
    assert result.status == "complete"


def test_a_fatal_error_fails_its_run_and_alone_is_no_figure(tmp_path) -> None:
    at_start = write(tmp_path, out.nvbandwidth(error=out.NO_DEVICE, started=False))
    message = one_line_error(lambda: read_nvbandwidth([at_start]), r"nvbandwidth stopped with an error: \[CUDA_ERROR_NO_DEVICE\] no CUDA")
    assert "fix what it reports" in message
    midway = out.nvbandwidth(out.passed(H2D_CE, "55.2"), out.running(D2H_CE), error=out.ILLEGAL, mib=16)
    runs = out.kit_runs((512, out.nvbandwidth(out.passed(H2D_CE, "55.6"), out.passed(D2H_CE, "55.0")), 0), (16, midway, 1))
    result = read_nvbandwidth([write(tmp_path, runs, "nvbandwidth.json")])
    h2d = find(result, H2D_CE)
    assert h2d.status == "failed" and "-b 16): nvbandwidth stopped with an error: [CUDA_ERROR_ILLEGAL_ADDRESS]" in h2d.reason
    assert [p.mbps for p in h2d.ok_points()] == [pytest.approx(55_200), pytest.approx(55_600)] and "\n" not in h2d.reason  # figures kept
    d2h = find(result, D2H_CE)
    assert d2h.status == "failed" and "failed (Running): nvbandwidth's error: [CUDA_ERROR_ILLEGAL_ADDRESS]" in d2h.reason
    assert [p.status for p in d2h.points] == ["error", "ok"] and "\n" not in d2h.reason
    assert any("ILLEGAL_ADDRESS" in e for e in result.environment["peer"]["errors"])
    crashed = out.kit_runs((512, out.nvbandwidth(out.passed(H2D_CE, "55.6")), 139), (96, None, 139))
    result = read_nvbandwidth([write(tmp_path, crashed, "crashed.json")])
    assert find(result, H2D_CE).status == "failed" and "nvbandwidth exited 139" in find(result, H2D_CE).reason
    assert any("run 2 (-b 96): no JSON in nvbandwidth's output (exit 139): Segmentation fault" in n
               for n in result.environment["peer"]["not_imported"])  # fmt: skip


def test_text_around_the_json_and_output_that_is_not_nvbandwidths(tmp_path) -> None:
    noisy = out.nvbandwidth(out.passed(H2D_CE, "24.1"), before="note: {added} the driver folder to LD_LIBRARY_PATH\n",
                            after="NOTE: The reported results may not reflect the full capabilities of the platform.\n")  # fmt: skip
    assert read_nvbandwidth([write(tmp_path, noisy)]).series[0].points[0].mbps == pytest.approx(24_100)
    whole = out.nvbandwidth(out.passed(H2D_CE, "24.1"))
    cut = write(tmp_path, whole[: whole.index('"status"')], "cut.txt")
    one_line_error(lambda: read_nvbandwidth([cut]), "cut short")
    other = write(tmp_path, '{"something": {"name": "host_to_device_memcpy_ce"}}', "other.json")
    one_line_error(lambda: read_nvbandwidth([other]), "not nvbandwidth's JSON output.*run nvbandwidth with -j")
    bt = write(tmp_path, out.bandwidthtest(out.csv_line("H2D-Pinned", 25.9, 32_000_000)), "bt.txt")
    one_line_error(lambda: read_nvbandwidth([bt]), "not nvbandwidth's JSON output")
    one_line_error(lambda: read_nvbandwidth([tmp_path / "missing.json"]), "missing.json: no such file")
    one_line_error(lambda: read_nvbandwidth([]), "give at least one")
    nothing = write(tmp_path, out.nvbandwidth(out.passed("device_to_device_memcpy_read_ce", "N/A")), "d2d.json")
    one_line_error(lambda: read_nvbandwidth([nothing]), "no host<->device figure")


def test_bandwidthtest_lines_sizes_and_devices(tmp_path) -> None:
    shmoo = out.bandwidthtest(*(out.csv_line("H2D-Pinned", gbps, size) for gbps, size in ((0.0, 1000), (25.9, 64_000_000), (26.0, 68_000_000))),
                              mode="Shmoo")  # fmt: skip
    result = read_bandwidthtest([write(tmp_path, shmoo)])
    (pinned,) = result.series
    assert pinned.label() == "bandwidthTest/pinned/copy/streamed@cuda:0" and tuple(pinned.shape) == (1000,)
    assert [(p.batch_size, p.status) for p in pinned.points] == [(1, "skipped"), (64_000, "ok"), (68_000, "ok")]
    assert "below its 0.1 GB/s resolution" in pinned.points[0].error
    point = pinned.points[2]
    assert (point.mbps, point.n, point.copies, point.times_s) == (pytest.approx(26_000), 1, 100, [])
    assert point.median_s == pytest.approx(68_000_000 / 26.0e9)
    assert pinned.params == {"tool": "bandwidthTest", "samples": 1, "copies_per_sample": 100, "statistic": "aggregate", "devices_summed": 1}
    assert pinned.device_name == out.H100 and "no warm-up" in pinned.note and "cudaEventElapsedTime" in pinned.clock
    assert result.environment["peer"]["tool"] == "bandwidthTest" and result.environment["devices"][0]["name"] == out.H100
    second = out.bandwidthtest(out.csv_line("H2D-Pinned-WriteCombined", 24.0, 16 * IMAGE), devices=("NVIDIA H200",), first=1)
    kept = out.kit_sections(("range wc", "--device=1 --htod --wc --mode=range --csv", second, None))
    (wc,) = read_bandwidthtest([write(tmp_path, kept, "bt.txt")]).series
    assert (wc.mode, wc.device, wc.device_name, wc.host_buffer, tuple(wc.shape)) == ("pinned_wc", "cuda:1", "NVIDIA H200", "pinned", (256, 256, 3))


def test_bandwidthtest_sums_failures_and_what_is_not_imported(tmp_path) -> None:
    kept = out.kit_sections(
        ("range pinned b=16", "--htod --memory=pinned --mode=range --csv", out.bandwidthtest(out.csv_line("H2D-Pinned", 24.2, 16 * IMAGE)), None),
        ("range pageable b=16", "--htod --memory=pageable --mode=range --csv",
         out.bandwidthtest(out.csv_line("H2D-Paged", 11.0, 16 * IMAGE), result="FAIL"), None),
        ("all", "--htod --device=all --mode=range --start=32000000 --end=32000000 --increment=1 --csv",
         out.bandwidthtest(out.csv_line("H2D-Pinned", 49.8, 32_000_000, 2), devices=(out.H100, out.H100)), None),
        ("both ways", "--htod --dtoh --csv",
         out.bandwidthtest(out.csv_line("H2D-Pinned", 25.1, 32_000_000), tail="CUDA error at bandwidthTest.cu:630 code=700\n"), 1),
        ("d2d", "--dtod --csv", out.bandwidthtest("bandwidthTest-D2D, Bandwidth = 1500.0 GB/s, Time = 0.00002 s, Size = 32000000 bytes,"
                                                  " NumDevsUsed = 1"), None),
    )  # fmt: skip
    result = read_bandwidthtest([write(tmp_path, kept, "bandwidthTest.txt")])
    pinned = find(result, "pinned")  # 16 images (3,145,728 B) and 32,000,000 B: one series, counted in bytes
    assert tuple(pinned.shape) == (1,) and [p.bytes for p in pinned.ok_points()] == [16 * IMAGE, 32_000_000]
    assert pinned.status == "failed" and "(both ways): it exited 1" in pinned.reason  # a run that failed marks what it touched
    paged = find(result, "pageable")
    assert paged.status == "failed" and "Result = FAIL" in paged.reason and "exited 1" in paged.reason
    assert paged.ok_points()[0].mbps == pytest.approx(11_000)  # the figure is kept
    assert (paged.method, paged.host_buffer, paged.label()) == ("per-call", "numpy", "bandwidthTest/pageable/copy@cuda:0")
    summed = find(result, "pinned", "cuda:all")
    assert "the sum of 2 GPUs' figures" in summed.note and summed.points[0].mbps == pytest.approx(49_800) and summed.device_name is None
    assert any("(d2d): bandwidthTest-D2D at 32000000 B: a copy within the GPU" in n for n in result.environment["peer"]["not_imported"])
    assert len(result.environment["peer"]["commands"]) == 5


def test_bandwidthtest_bad_input_says_what_to_do(tmp_path) -> None:
    readable = write(tmp_path, "[CUDA Bandwidth Test] - Starting...\n   32000000\t\t\t25.9\nResult = PASS\n")
    one_line_error(lambda: read_bandwidthtest([readable]), "no host<->device figure.*run bandwidthTest again with --csv")
    nvb = write(tmp_path, out.nvbandwidth(out.passed(H2D_CE, "55.3")), "nvb.json")
    one_line_error(lambda: read_bandwidthtest([nvb]), "not bandwidthTest's output.*run bandwidthTest with --csv")
    one_line_error(lambda: read_bandwidthtest([tmp_path / "gone.txt"]), "gone.txt: no such file")
    failed = write(tmp_path, out.bandwidthtest(result="FAIL"), "fail.txt")
    one_line_error(lambda: read_bandwidthtest([failed]), "no host<->device figure.*Result = FAIL")


def test_the_machines_own_capture_is_merged_under_the_peers_facts(tmp_path) -> None:
    from nodes import node_environment

    captured = node_environment("node07.cluster", gpus=1)
    text = out.nvbandwidth(out.passed(H2D_CE, "55.3"), gpus=((out.H100, "00000000:18:00"),), host="node07")
    result = read_nvbandwidth([write(tmp_path, text)], buffer_size_mib=512, environment=captured)
    env = result.environment
    assert env["host"] == "node07" and env["driver"] == "570.124.06" and env["nvml"] == captured["nvml"]
    assert "process_cpus" not in env and "versions" not in env and captured["versions"]  # the capture itself is untouched
    (gpu,) = [d for d in env["devices"] if d["id"] == "cuda:0"]
    assert gpu["nvml"]["pci_bus_id"] == "00000000:18:00.0" and gpu["pci_bus_id"] == "00000000:18:00.0" and gpu["driver"] == "570.124.06"
    assert env["peer"]["tool"] == "nvbandwidth"
    # nvbandwidth run with only the second GPU visible: its cuda:0 is the capture's cuda:1, matched by PCI address
    second = out.nvbandwidth(out.passed(H2D_CE, "55.3"), gpus=((out.H100, "00000000:28:00"),))
    env = read_nvbandwidth([write(tmp_path, second)], environment=node_environment("node07", gpus=2)).environment
    gpu = next(d for d in env["devices"] if d["id"] == "cuda:0")
    assert gpu["pci_bus_id"] == "00000000:28:00.0" and gpu["nvml"]["pci_bus_id"] == "00000000:28:00.0" and gpu["nvml"]["index"] == 1


def test_an_imported_file_reads_beside_a_simulated_one(tmp_path) -> None:
    from conftest import run_config
    from xferbench.measuring.backends.sim import SimLink
    from xferbench.measuring.sweep import SweepConfig

    runs = [(mib, out.nvbandwidth(out.passed(H2D_CE, f"{50 + mib / 100:.2f}"), out.passed(D2H_CE, "49.5"), mib=mib), 0)
            for mib in (3, 12, 96)]  # fmt: skip
    runs.append((1, out.nvbandwidth(out.running(D2H_CE), error=out.ILLEGAL, mib=1), 1))
    peer = tmp_path / "peer.json"
    read_nvbandwidth([write(tmp_path, out.kit_runs(*runs), "raw.json")]).save(peer)
    bt = tmp_path / "bt.json"
    read_bandwidthtest([write(tmp_path, out.bandwidthtest(out.csv_line("H2D-Pinned", 25.9, 16 * IMAGE)), "bt.txt")],
                       environment={"host": "node07"}).save(bt)  # bandwidthTest names no host: the machine's capture does
    sim = tmp_path / "sim.json"
    run_config(SweepConfig(frameworks=("sim",), batch_sizes=(16, 64, 512), timing=FAST, sim=SimLink(bandwidth_gbps=50))).save(sim)
    loaded = load(peer)
    assert [p.batch_size for p in find(loaded, H2D_CE).ok_points()] == [16, 64, 512]  # the sim sweep's batches, the same bytes
    picks, empty = select([peer, bt, sim])
    text = report.render(picks, empty)
    assert "nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:0" in text and "sim/link/copy@sim" in text
    assert "holds nvbandwidth's own figures" in text and "-j -b 96 -t" in text  # the peer's commands stand for reproduce
    names = [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| nvbandwidth/")]
    assert len(names) == len(set(names)) == 2  # a testcase is one series: no row twice
    plot.figure(picks)
    found = fleet.read_fleet([peer, bt])
    assert {row.source for row in found.rows} == {"nvbandwidth", "bandwidthTest"}
    nvb_row = next(row for row in found.rows if row.source == "nvbandwidth")
    assert nvb_row.ceiling_mbps == pytest.approx(50_960) and "(nvbandwidth)" in nvb_row.measured
    assert found.gpus == 1 and len(found.rows) == 2  # one GPU, measured by two tools
    for base, new in ((peer, peer), (peer, sim), (sim, bt)):  # no raw samples: nothing to test significance on
        with pytest.raises(XferbenchError, match="figures \\(xferbench import\\): a peer keeps no raw samples"):
            compare.compare_files(base, new, 0.05)


def test_import_commands_write_a_result_file_and_refuse_bad_input(tmp_path) -> None:
    from typer.testing import CliRunner

    from xferbench.cli import app

    raw = write(tmp_path, out.nvbandwidth(out.passed(H2D_CE, "55.3"), mib=96), "nvb.json")
    said = CliRunner().invoke(app, ["import", "nvbandwidth", str(raw), "--buffer-size", "96", "-o", str(tmp_path / "nvb-result.json")])
    assert said.exit_code == 0, said.output
    assert unwrapped("1 series, 1 points from nvbandwidth") in unwrapped(said.output)
    assert load(tmp_path / "nvb-result.json").series[0].ok_points()[0].batch_size == 512  # 96 MiB: batch 512 of 256x256x3
    bt = write(tmp_path, out.bandwidthtest(out.csv_line("H2D-Pinned", 25.9, 32_000_000)), "bt.txt")
    said = CliRunner().invoke(app, ["import", "bandwidthtest", str(bt), "-o", str(tmp_path / "bt-result.json")])
    assert said.exit_code == 0 and load(tmp_path / "bt-result.json").series[0].mode == "pinned"
    for args, message in ((["nvbandwidth", str(bt)], "not nvbandwidth's JSON output"),
                          (["nvbandwidth", str(raw), "--buffer-size", "96", "-o", str(raw)], "is one of the result files"),
                          (["nvbandwidth", str(raw)], "nvbandwidth says its buffer was smaller than its default"),
                          (["bandwidthtest", str(raw)], "not bandwidthTest's output"),
                          (["nvbandwidth", str(tmp_path)], "is a folder"),
                          (["nvbandwidth", str(raw), "--buffer-size", "0"], "give nvbandwidth's -b")):  # fmt: skip
        said = CliRunner().invoke(app, ["import", *args])
        assert said.exit_code == 2 and message in said.output and "Traceback" not in said.output, said.output
        assert len(said.output.strip().splitlines()) == 1, said.output


def test_bandwidthtest_figures_come_from_time_where_it_was_printed_finer(tmp_path) -> None:
    """At 1 GiB the CSV's Time (to 10 us) holds about four times the precision of its GB/s (to 0.1)."""
    measured = 55.3873  # what the run measured; the CSV prints 55.4 GB/s and Time = 0.01939 s
    line = out.csv_line("H2D-Pinned", measured, 2**30)
    assert "Bandwidth = 55.4 GB/s, Time = 0.01939 s" in line
    (series,) = read_bandwidthtest([write(tmp_path, out.bandwidthtest(line))]).series
    (point,) = series.ok_points()
    assert point.mbps == pytest.approx(2**30 / 0.01939 / 1e6) and abs(point.mbps / 1e3 - measured) < abs(55.4 - measured)
    small = out.csv_line("H2D-Pinned", 24.96, 16 * IMAGE)  # 3 MiB: Time = 0.00013 s, far coarser than 25.0 GB/s
    (series,) = read_bandwidthtest([write(tmp_path, out.bandwidthtest(small), "small.txt")]).series
    assert series.ok_points()[0].mbps == pytest.approx(25_000)
