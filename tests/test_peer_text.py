"""The text nvbandwidth (without -j) and bandwidthTest (without --csv) print by default, as people
paste it into bug reports, read into result files: every figure equal to the printed one in value,
unit, size and direction, whatever surrounds it, and text that is neither refused in one line."""

from __future__ import annotations

import pytest

import peer_outputs as out
from conftest import FAST
from xferbench.reading import report
from xferbench.reading.peers import read_bandwidthtest, read_nvbandwidth
from xferbench.core.results import Series, select
from test_peers import D2H_CE, H2D_CE, IMAGE, MIB, TWO_GPUS, find, one_line_error, write


def figures(series: Series) -> list[tuple[int, float, str]]:
    """(bytes, GB/s, direction) of each measured point."""
    return [(p.bytes, round(p.mbps / 1e3, 6), series.direction) for p in series.ok_points()]


@pytest.mark.parametrize("verbose", [False, True])
def test_nvbandwidth_v08_text_figures_equal_the_printed_ones(tmp_path, verbose: bool) -> None:
    text = out.nvbandwidth_text(out.passed(H2D_CE, "55.3112", "N/A"), out.passed(D2H_CE, "54.996", "53.1"),
                                out.waived("host_to_device_memcpy_sm"), out.errored("device_to_host_memcpy_sm"),
                                out.passed("device_to_device_memcpy_read_ce", "N/A", "N/A"), out.not_found("host_to_device_memcpy_cee"),
                                gpus=TWO_GPUS, verbose=verbose)  # fmt: skip
    assert "55.31       N/A" in text and "SUM host_to_device_memcpy_ce 55.31" in text  # as printed: 2 places, ten wide
    result = read_nvbandwidth([write(tmp_path, text)])
    h2d = find(result, H2D_CE)
    assert figures(h2d) == [(512 * MIB, 55.31, "h2d")]  # the printed 55.31, not the 55.3112 measured
    assert h2d.points[0].median_s == pytest.approx(512 * MIB / 55.31e9) and h2d.points[0].batch_size == 512
    assert "nvbandwidth v0.8's default (512 MiB): its text does not record -b" in h2d.note
    gap = find(result, H2D_CE, "cuda:1")
    assert [(p.status, p.bytes) for p in gap.points] == [("skipped", 512 * MIB)] and gap.points[0].error.startswith("N/A")
    assert figures(find(result, D2H_CE)) == [(512 * MIB, 55.0, "d2h")]
    assert figures(find(result, D2H_CE, "cuda:1")) == [(512 * MIB, 53.1, "d2h")]
    broken = find(result, "device_to_host_memcpy_sm")
    assert broken.status == "failed" and f"nvbandwidth's error: {out.TESTCASE_ERROR}" in broken.reason
    env = result.environment
    assert (env["host"], env["driver"], env["cuda_driver"]) == ("node07", "570.124.06", "12.8")
    assert [(d["id"], d["name"], d["pci_bus_id"]) for d in env["devices"]] == [
        ("cuda:0", out.H100, "00000000:1b:00.0"), ("cuda:1", out.H100, "00000000:43:00.0")]
    peer = env["peer"]
    assert (peer["tool"], peer["version"], peer["sizes_bytes"]) == ("nvbandwidth", "v0.8", [512 * MIB])
    left = peer["not_imported"]
    assert any("a testcase was waived (nvbandwidth's text does not name it" in n for n in left)
    assert any("device_to_device_memcpy_read_ce: not a copy between the host and one GPU" in n for n in left)
    assert any("host_to_device_memcpy_cee: nvbandwidth has no such testcase" in n for n in left)
    assert not any("not understood" in n for n in left), left


@pytest.mark.parametrize("version", ["v0.4", "v0.5"])
def test_early_nvbandwidth_text_has_no_address_and_a_64_mib_default(tmp_path, version: str) -> None:
    text = out.nvbandwidth_text(out.passed(H2D_CE, "25.9", "24.87"), out.waived("host_to_device_memcpy_sm"), out.errored(D2H_CE),
                                gpus=TWO_GPUS, version=version)  # fmt: skip
    result = read_nvbandwidth([write(tmp_path, text)])
    assert figures(find(result, H2D_CE)) == [(64 * MIB, 25.9, "h2d")] and figures(find(result, H2D_CE, "cuda:1")) == [(64 * MIB, 24.87, "h2d")]
    assert find(result, H2D_CE).points[0].batch_size == 64 and f"{version}'s default (64 MiB)" in find(result, H2D_CE).note
    assert [(d["id"], d["name"], d.get("pci_bus_id")) for d in result.environment["devices"]] == [("cuda:0", out.H100, None),
                                                                                                  ("cuda:1", out.H100, None)]  # fmt: skip
    assert result.environment["host"] is None and not any("not understood" in n for n in result.environment["peer"]["not_imported"])
    assert find(result, D2H_CE).status == "failed" and out.TESTCASE_ERROR in find(result, D2H_CE).reason
    if version == "v0.4":  # "Waiving NAME." names the testcase
        sm = find(result, "host_to_device_memcpy_sm")
        assert sm.status == "skipped" and sm.reason.startswith("nvbandwidth waived it")
    small = write(tmp_path, out.nvbandwidth_text(out.passed(H2D_CE, "20.01"), version=version, mib=16), "small.txt")
    one_line_error(lambda: read_nvbandwidth([small]), "smaller than its default, and its text does not record -b; give the run's -b")
    assert figures(read_nvbandwidth([small], buffer_size_mib=16).series[0]) == [(16 * MIB, 20.01, "h2d")]


def test_a_pasted_log_gives_its_command_and_holds_several_runs(tmp_path) -> None:
    asked = "Here is what I get on node07:\n\n```\n$ ./nvbandwidth -b 96 -t host_to_device_memcpy_ce\n"
    first = out.nvbandwidth_text(out.passed(H2D_CE, "55.3"), mib=96, before=asked)
    second = out.nvbandwidth_text(out.passed(H2D_CE, "50.12"), mib=3, before="$ /opt/nvbandwidth/nvbandwidth -t host_to_device_memcpy_ce -b 3 -i 5\n",
                                  after="```\nThanks!\n")  # fmt: skip
    result = read_nvbandwidth([write(tmp_path, first + second)])
    series = find(result, H2D_CE)
    assert figures(series) == [(3 * MIB, 50.12, "h2d"), (96 * MIB, 55.3, "h2d")] and [p.batch_size for p in series.points] == [16, 512]
    assert [p.n for p in series.points] == [5, 3]  # -i 5 in the second run's command
    commands = result.environment["peer"]["commands"]
    assert commands == ["./nvbandwidth -b 96 -t host_to_device_memcpy_ce", "/opt/nvbandwidth/nvbandwidth -t host_to_device_memcpy_ce -b 3 -i 5"]
    assert "assumed" not in series.note
    unsaid = read_nvbandwidth([write(tmp_path, out.nvbandwidth_text(out.passed(H2D_CE, "55.3")) + second, "unsaid.txt")])
    assert figures(find(unsaid, H2D_CE)) == [(3 * MIB, 50.12, "h2d"), (512 * MIB, 55.3, "h2d")]  # the first run: v0.8's default
    assert len(unsaid.environment["peer"]["commands"]) == 1


def test_a_fatal_error_in_the_text_fails_its_run(tmp_path) -> None:
    at_start = write(tmp_path, out.nvbandwidth_text(error=out.NO_DEVICE, started=False))
    one_line_error(lambda: read_nvbandwidth([at_start]), r"nvbandwidth stopped with an error: \[CUDA_ERROR_NO_DEVICE\].*fix what it reports")
    midway = write(tmp_path, out.nvbandwidth_text(out.passed(H2D_CE, "55.2"), out.running(D2H_CE), error=out.ILLEGAL), "midway.txt")
    result = read_nvbandwidth([midway])
    h2d, d2h = find(result, H2D_CE), find(result, D2H_CE)
    assert figures(h2d) == [(512 * MIB, 55.2, "h2d")] and h2d.status == "failed" and "CUDA_ERROR_ILLEGAL_ADDRESS" in h2d.reason
    assert d2h.status == "failed" and "failed (Running): nvbandwidth's error: [CUDA_ERROR_ILLEGAL_ADDRESS]" in d2h.reason


@pytest.mark.parametrize("mode", ["Quick", "Range", "Shmoo"])
def test_bandwidthtest_text_figures_equal_the_printed_ones(tmp_path, mode: str) -> None:
    rows = ((1000, 0.4), (4000, 1.6), (32_000_000, 25.9)) if mode == "Shmoo" else ((32_000_000, 26.2),)
    text = out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", rows), out.bt_table("Device to Host", "PINNED", rows[-1:]),
                                  out.bt_table("Device to Device", "PINNED", ((32_000_000, 1480.3),)), mode=mode)  # fmt: skip
    result = read_bandwidthtest([write(tmp_path, text)])
    h2d = [s for s in result.series if s.direction == "h2d"]
    assert [(s.mode, s.device, s.device_name) for s in h2d] == [("pinned", "cuda:0", out.H100)]
    assert figures(h2d[0]) == [(size, gbps, "h2d") for size, gbps in rows]
    (d2h,) = [s for s in result.series if s.direction == "d2h"]
    assert figures(d2h) == [(rows[-1][0], rows[-1][1], "d2h")] and d2h.status == "ok"
    assert any("bandwidthTest-D2D at 32000000 B: a copy within the GPU" in n for n in result.environment["peer"]["not_imported"])
    assert h2d[0].points[-1].median_s == pytest.approx(rows[-1][0] / (rows[-1][1] * 1e9))


def test_bandwidthtest_text_memory_kinds_devices_and_failures(tmp_path) -> None:
    size = 16 * IMAGE
    kinds = out.bandwidthtest_text(out.bt_table("Host to Device", "PAGEABLE", ((size, 11.3),)), devices=("NVIDIA H200",), first=1, mode="Range")
    wc = out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((size, 24.0),), wc=True), mode="Range", result="FAIL")
    every = out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((32_000_000, 49.8),), devices=2), devices=(out.H100, out.H100),
                                   every=True)  # fmt: skip
    paged = read_bandwidthtest([write(tmp_path, kinds, "paged.txt")])
    (series,) = paged.series
    assert (series.mode, series.device, series.device_name, series.method) == ("pageable", "cuda:1", "NVIDIA H200", "per-call")
    assert figures(series) == [(size, 11.3, "h2d")] and series.points[0].batch_size == 16
    (combined,) = read_bandwidthtest([write(tmp_path, wc, "wc.txt")]).series
    assert (combined.mode, combined.host_buffer, combined.status) == ("pinned_wc", "pinned", "failed") and "Result = FAIL" in combined.reason
    assert figures(combined) == [(size, 24.0, "h2d")]  # the figure is kept
    (summed,) = read_bandwidthtest([write(tmp_path, every, "all.txt")]).series
    assert (summed.device, figures(summed)) == ("cuda:all", [(32_000_000, 49.8, "h2d")]) and "the sum of 2 GPUs' figures" in summed.note
    stopped = out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((32_000_000, 25.1),)), tail="CUDA error at bandwidthTest.cu:630 code=700\n")
    (cut,) = read_bandwidthtest([write(tmp_path, stopped, "cut.txt")]).series
    assert cut.status == "failed" and "stopped before its Result line: CUDA error at bandwidthTest.cu:630" in cut.reason


def test_a_pasted_bandwidthtest_log_with_its_command(tmp_path) -> None:
    text = out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((32_000_000, 25.9),)), devices=("NVIDIA H200",), first=1,
                                  before="I ran it like this:\n$ ./bandwidthTest --device=1 --htod --cputiming\n", after="$ echo done\ndone\n")  # fmt: skip
    result = read_bandwidthtest([write(tmp_path, text)])
    (series,) = result.series
    assert (series.device, figures(series)) == ("cuda:1", [(32_000_000, 25.9, "h2d")]) and "gettimeofday, --cputiming" in series.clock


def test_megabytes_and_text_of_neither_tool_are_refused_in_one_line(tmp_path) -> None:
    old = write(tmp_path, out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((33_554_432, 12123.4),), unit="MB")), "old.txt")
    one_line_error(lambda: read_bandwidthtest([old]), "printed MB/s.*give --mb 1024000 .* or --mb 1048576 .*v10.1 or later.*with --csv")
    old_csv = write(tmp_path, out.bandwidthtest("bandwidthTest-H2D-Pinned, Bandwidth = 12123.4 MB/s, Time = 0.00264 s, Size = 33554432 bytes,"
                                                " NumDevsUsed = 1"), "old-csv.txt")  # fmt: skip
    one_line_error(lambda: read_bandwidthtest([old_csv]), "printed MB/s")
    bt = write(tmp_path, out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((32_000_000, 25.9),))), "bt.txt")
    one_line_error(lambda: read_nvbandwidth([bt]), "not nvbandwidth's JSON output nor its text.*run nvbandwidth with -j")
    nvb = write(tmp_path, out.nvbandwidth_text(out.passed(H2D_CE, "55.3")), "nvb.txt")
    one_line_error(lambda: read_bandwidthtest([nvb]), "not bandwidthTest's output.*run bandwidthTest with --csv")
    prose = write(tmp_path, "The copy was slow, about 12 GB/s.\nDevice 0: NVIDIA H100\n", "prose.txt")
    one_line_error(lambda: read_nvbandwidth([prose]), "not nvbandwidth's JSON output nor its text.*run nvbandwidth with -j")
    one_line_error(lambda: read_bandwidthtest([prose]), "not bandwidthTest's output.*run bandwidthTest with --csv")
    header_only = write(tmp_path, "[CUDA Bandwidth Test] - Starting...\nRunning on...\n\n Device 0: NVIDIA H100\n", "header.txt")
    one_line_error(lambda: read_bandwidthtest([header_only]), "no host<->device figure.*run bandwidthTest again with --csv")


def test_an_imported_text_file_reads_beside_a_simulated_one(tmp_path) -> None:
    from typer.testing import CliRunner

    from conftest import run_config
    from xferbench.measuring.backends.sim import SimLink
    from xferbench.cli import app
    from xferbench.measuring.sweep import SweepConfig

    raw = write(tmp_path, out.nvbandwidth_text(out.passed(H2D_CE, "50.96"), out.passed(D2H_CE, "49.5"), mib=96,
                                               before="$ nvbandwidth -b 96 -t host_to_device_memcpy_ce device_to_host_memcpy_ce\n"), "nvb.txt")  # fmt: skip
    bt_raw = write(tmp_path, out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((16 * IMAGE, 25.9),)), mode="Range"), "bt.txt")
    peer, bt = tmp_path / "peer.json", tmp_path / "bt.json"
    for args, path in ((["nvbandwidth", str(raw)], peer), (["bandwidthtest", str(bt_raw), "--host", "node07"], bt)):
        said = CliRunner().invoke(app, ["import", *args, "-o", str(path)])
        assert said.exit_code == 0, said.output
    sim = tmp_path / "sim.json"
    run_config(SweepConfig(frameworks=("sim",), batch_sizes=(16, 512), timing=FAST, sim=SimLink(bandwidth_gbps=50))).save(sim)
    picks, empty = select([peer, bt, sim])
    text = report.render(picks, empty)
    assert "nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:0" in text and "sim/link/copy@sim" in text
    assert "bandwidthTest/pinned/copy/streamed@cuda:0" in text and "-b 96 -t" in text


def test_an_older_bandwidthtests_mb_is_settled_by_the_user(tmp_path) -> None:
    """Before cuda-samples v10.1 bandwidthTest printed MB/s without saying which MB: --mb settles it,
    and every figure is the printed one in that unit."""
    from typer.testing import CliRunner

    from xferbench.cli import app
    from xferbench.core.results import load

    old = write(tmp_path, out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((33_554_432, 12123.4),), unit="MB")), "old.txt")
    (series,) = read_bandwidthtest([old], mb=1_024_000).series
    assert series.ok_points()[0].mbps == pytest.approx(12123.4 * 1.024)
    old_csv = write(tmp_path, out.bandwidthtest("bandwidthTest-H2D-Pinned, Bandwidth = 12123.4 MB/s, Time = 0.00264 s, Size = 33554432 bytes,"
                                                " NumDevsUsed = 1"), "old-csv.txt")  # fmt: skip
    (series,) = read_bandwidthtest([old_csv], mb=2**20).series
    assert series.ok_points()[0].mbps == pytest.approx(12123.4 * 1.048576)  # its Time is not used: its arithmetic is unstated
    done = CliRunner().invoke(app, ["import", "bandwidthtest", str(old), "--mb", "1024000", "-o", str(tmp_path / "old.json")])
    assert done.exit_code == 0, done.output
    assert load(tmp_path / "old.json").series[0].ok_points()[0].mbps == pytest.approx(12123.4 * 1.024)
    bad = CliRunner().invoke(app, ["import", "bandwidthtest", str(old), "--mb", "0", "-o", str(tmp_path / "bad.json")])
    assert bad.exit_code == 2 and "--mb 0: give the bytes in one of the output's MB, such as 1048576 or 1024000" in bad.output
