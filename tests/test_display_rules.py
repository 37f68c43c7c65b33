"""The terminal's rules one by one (xferbench.reading.display), each on small inputs whose text is known: how
seconds, rates and sizes are written and where each unit begins, series titles and tables (columns, cells,
captions, what a narrow terminal drops), the curve's summary line, ceilings, published figures, progress lines,
uncertain medians, the busy block, concurrent groups and the NUMA line."""

from __future__ import annotations

import dataclasses
import io
from typing import Any

import pytest
from rich.console import Console
from rich.table import Table

from test_macos import mps_series
from xferbench.core.concurrency import DeviceRow, Group
from xferbench.core.references import measured_for
from xferbench.core.results import Point, Result, Series
from xferbench.core.spec import BIDIR, D2H, STREAMED
from xferbench.core.stats import Summary
from xferbench.reading import display

SHAPE = [256, 256, 3]
ITEM = 196_608  # bytes of one item of SHAPE
H100 = "NVIDIA H100 80GB HBM3"
NAN, INF = float("nan"), float("inf")


def point(batch: int, mbps: float, factors: list[float] | None = None, **fields: Any) -> Point:
    """An ok point of `batch` items whose median moved `mbps`, its samples the median times `factors` (ten
    equal samples unless given), with the figures a measured point carries (p10/p90 MB/s 2% either side)."""
    nbytes = batch * ITEM
    median = nbytes / (mbps * 1e6)
    times = [median * f for f in factors or [1.0] * 10]
    figures = {"n": len(times), "times_s": times, "median_s": median, "p10_s": median, "p90_s": median, "mbps": mbps,
               "mbps_p10": mbps * 0.98, "mbps_p90": mbps * 1.02, "batches_per_s": 1 / median, "images_per_s": batch / median}
    return Point(batch, nbytes, **{**figures, **fields})


def failed(batch: int, error: str | None = "out of memory", status: str = "error") -> Point:
    return Point(batch, batch * ITEM, status=status, error=error)


def series(*points: Point, framework: str = "torch", mode: str = "pinned", device: str = "cpu", summary: Summary | None = None,
           **fields: Any) -> Series:  # fmt: skip
    """A series of these points, its summary refreshed from them unless given."""
    made = Series(framework, mode, "copy", device, list(SHAPE), **{"device_name": "AMD EPYC", "transfer": "host-to-host", **fields})
    made.points = list(points)
    made.refresh_summary()
    if summary is not None:
        made.summary = summary
    return made


def result(*members: Series, **environment: Any) -> Result:
    return Result({"os": "Linux-6.8", **environment}, {}, "2026-11-23T00:00:00+00:00", list(members), "complete")


def console(width: int = 200) -> Console:
    return Console(width=width, file=io.StringIO(), color_system=None)


def printed(out: Console) -> list[str]:
    """What the console printed, a line each, trailing spaces cut."""
    return [line.rstrip() for line in out.file.getvalue().split("\n")]  # type: ignore[attr-defined]


def rendered(table: Table, width: int = 200) -> list[str]:
    out = console(width)
    out.print(table)
    return printed(out)


def columns(table: Table) -> dict[str, list[str]]:
    """Each column's header and its cells as markup."""
    return {str(column.header): [str(cell) for cell in column.cells] for column in table.columns}


# seconds, rate, size, binary_size, fit, say


@pytest.mark.parametrize("value, text", [
    (None, "-"), (1.0, "1 s"), (0.999, "999 ms"), (12.34, "12.3 s"), (1234.5, "1.23e+03 s"), (1e-3, "1 ms"), (0.0123, "12.3 ms"),
    (0.000999, "999 µs"), (1e-6, "1 µs"), (0.0001234, "123 µs"), (9.99e-7, "999 ns"), (1e-9, "1 ns"), (1.234e-10, "0.123 ns"),
    (0.0, "0 ns"), (-1e-3, "-1e+06 ns"), (NAN, "nan ns"), (INF, "inf s"),
])  # fmt: skip
def test_seconds_take_the_largest_unit_they_reach_to_three_figures(value: float | None, text: str) -> None:
    """s from 1 s, ms from 1 ms, µs from 1 µs, ns below; three significant figures; None is a dash."""
    assert display.seconds(value) == text


@pytest.mark.parametrize("value, text", [
    (None, "-"), (100.0, "100"), (99.5, "99.5"), (99.99, "100"), (100.7, "101"), (1234.5, "1,234"), (55_123.4, "55,123"),
    (1_234_567.8, "1,234,568"), (12.345, "12.3"), (0.01234, "0.0123"), (0.0, "0"), (-5.0, "-5"), (NAN, "nan"), (INF, "inf"),
])  # fmt: skip
def test_a_rate_is_whole_with_thousands_separators_from_100_and_three_figures_below(value: float | None, text: str) -> None:
    """From 100 a rate is a whole number with commas; below, three significant figures; None is a dash."""
    assert display.rate(value) == text


@pytest.mark.parametrize("value, text", [
    (None, "-"), (1e9, "1 GB"), (999_999_999, "1e+03 MB"), (1.5e12, "1.5e+03 GB"), (1e6, "1 MB"), (999_999, "1e+03 KB"),
    (2_345_678, "2.35 MB"), (1000, "1 KB"), (999_000, "999 KB"), (999, "999 B"), (12.5, "12.5 B"), (0, "0 B"),
    (NAN, "nan B"), (INF, "inf GB"),
])  # fmt: skip
def test_a_size_takes_the_largest_decimal_unit_it_reaches(value: float | None, text: str) -> None:
    """GB from 10^9 bytes, MB from 10^6, KB from 10^3, B below, to three significant figures."""
    assert display.size(value) == text


@pytest.mark.parametrize("value, text", [
    (1 << 30, "1 GiB"), (5 << 28, "1.25 GiB"), (3 << 29, "1.5 GiB"), ((1 << 30) + (1 << 20), "1.07 GB"), ((1 << 30) - 1, "1.07 GB"),
    (512 << 20, "512 MiB"), (768 << 20, "768 MiB"), (1 << 20, "1 MiB"), (1_966_080, "1.97 MB"), ((1 << 20) - 1, "1.05 MB"),
    (256 << 10, "256 KiB"), (1536, "1.5 KiB"), (1024, "1 KiB"), (1025, "1.02 KB"), (1023, "1.02 KB"), (100, "100 B"),
    (0, "0 B"),
])  # fmt: skip
def test_a_binary_size_is_named_in_the_largest_binary_unit_where_whole_to_a_quarter(value: int, text: str) -> None:
    """GiB, MiB or KiB, the largest it reaches, where a whole number of quarters of it; else size()'s words."""
    assert display.binary_size(value) == text


def test_fit_wraps_at_100_columns_by_default_and_indents_each_further_line() -> None:
    """A line of 100 stays whole; at 101 the last word moves to a line indented two spaces."""
    assert display.fit("a" * 50 + " " + "b" * 49) == "a" * 50 + " " + "b" * 49
    assert display.fit("a" * 50 + " " + "b" * 50) == "a" * 50 + "\n  " + "b" * 50


def test_fit_takes_a_width_and_an_indent_and_splits_at_spaces_never_at_hyphens() -> None:
    """A hyphenated word stays whole unless longer than the line, and further lines take the indent given."""
    assert display.fit("one two-three four", 12, "> ") == "one\n> two-three\n> four"
    assert display.fit("a bbbb-cccc", 8) == "a bbbb-c\n  ccc"  # longer than a line: split where the line ends, not at '-'


def test_fit_gives_text_with_no_words_back_as_it_came() -> None:
    """Nothing to wrap: the text itself, spaces and all."""
    assert display.fit("   ") == "   "
    assert display.fit("") == ""


def test_say_wraps_at_the_console_width_or_100_columns_whichever_is_narrower() -> None:
    """A 60-column console wraps at 60; a 160-column one at 100, never wider."""
    text = "a" * 30 + " " + "b" * 30 + " " + "c" * 30
    narrow = console(60)
    display.say(narrow, text)
    assert printed(narrow) == ["a" * 30, "b" * 30, "c" * 30, ""]
    wide = console(160)
    display.say(wide, "a" * 50 + " " + "b" * 50)
    display.say(wide, "a" * 50 + " " + "b" * 49)
    assert printed(wide) == ["a" * 50, "b" * 50, "a" * 50 + " " + "b" * 49, ""]


def test_say_passes_its_options_to_the_console() -> None:
    """markup=False prints brackets as written."""
    out = console(80)
    display.say(out, "[bold]x[/bold] [red]y[/]", markup=False)
    display.say(out, "[bold]x[/bold]")
    assert printed(out) == ["[bold]x[/bold] [red]y[/]", "x", ""]


# series_title and measured_directions


def test_a_series_title_is_its_label_and_device_name_with_any_unusual_transfer_once() -> None:
    """The device's name, else its id; a transfer other than host-to-device is added unless the title says it already."""
    assert display.series_title(series(transfer="host-to-device")) == "torch/pinned/copy@cpu · AMD EPYC"
    assert display.series_title(series(transfer=None)) == "torch/pinned/copy@cpu · AMD EPYC"
    assert display.series_title(series(transfer="")) == "torch/pinned/copy@cpu · AMD EPYC"
    assert display.series_title(series(device_name=None)) == "torch/pinned/copy@cpu · cpu · host-to-host"
    assert display.series_title(series()) == "torch/pinned/copy@cpu · AMD EPYC · host-to-host"
    sim = series(framework="sim", mode="link", device="sim", device_name="simulated link 20 GB/s", transfer="simulated")
    assert display.series_title(sim) == "sim/link/copy@sim · simulated link 20 GB/s"


def test_the_measured_directions_are_those_any_point_gives_h2d_first() -> None:
    """A direction counts where any point has it; h2d before d2h whatever the file's order; none for one-way points."""
    one_way = point(64, 9000.0, direction_mbps={"d2h": 4000.0})
    both = point(128, 9000.0, direction_mbps={"d2h": 4000.0, "h2d": 5000.0})
    assert display.measured_directions(series(point(1, 900.0), both, direction=BIDIR)) == ["h2d", "d2h"]
    assert display.measured_directions(series(point(1, 900.0), one_way, direction=BIDIR)) == ["d2h"]
    assert display.measured_directions(series(point(1, 900.0), direction=BIDIR)) == []
    assert display.measured_directions(series(direction=BIDIR)) == []


# series_table


def plain_series() -> Series:
    """A per-call host series: a quiet point, a busy one and a failed one, under a summary without a fit."""
    summary = Summary(peak_mbps=12_000.0, peak_batch_size=64, saturation_batch_size=64, busy_batch_sizes=[64])
    return series(point(1, 9000.0), point(64, 12_000.0, others_cpus=1.0, cpus=2), failed(128, "out of memory: [cuda] 2 GiB"),
                  summary=summary)  # fmt: skip


def test_a_series_table_has_the_original_reports_columns_and_each_points_figures() -> None:
    """batch, batch time, batches/s, images/s, MB/s in bold (a busy point starred), p10–p90 and n; every column right-aligned."""
    table = display.series_table(plain_series())
    shown = columns(table)
    assert shown.pop("batch") == ["1", "64", "128"]  # a failed row names its batch too
    assert shown == {
        "batch time": ["21.8 µs", "1.05 ms", "[red]error[/]: out of memory: \\[cuda] 2 GiB"],
        "batches/s": ["45,776", "954", ""],
        "images/s": ["45,776", "61,035", ""],
        "MB/s": ["[bold]9,000[/]", "[bold]12,000[/][yellow]*[/]", ""],
        "p10–p90": ["8,820–9,180", "11,760–12,240", ""],
        "n": ["10", "10", ""],
    }
    assert [column.justify for column in table.columns] == ["right"] * 7
    assert table.title == "torch/pinned/copy@cpu · AMD EPYC · host-to-host"
    assert (table.title_justify, table.caption_justify) == ("left", "left")
    assert table.caption == ("peak 12,000 MB/s @ batch 64 · saturates (≥95% of peak) at batch 64 · no cliff · [yellow]batch 64 measured"
                             " on a busy machine: left out of these figures[/] · *: measured on a busy machine")  # fmt: skip


def test_a_failed_point_spans_its_row_with_its_status_and_escaped_error() -> None:
    """The batch, then the error in the second column, every later cell empty; brackets in it print as written."""
    lines = rendered(display.series_table(plain_series()))
    assert lines[0] == "torch/pinned/copy@cpu · AMD EPYC · host-to-host"
    row = next(line for line in lines if "out of memory" in line)
    cells = [cell.strip() for cell in row.strip("│").split("│")]
    assert cells == ["128", "error: out of memory: [cuda] 2 GiB", "", "", "", "", ""]  # which batch failed, then why
    assert lines[2].startswith("┃ batch ┃") and lines[4].startswith("│     1 │")  # headers and numbers right-aligned
    assert lines[-3].startswith("peak 12,000 MB/s @ batch 64")  # the caption starts at the left


def test_a_failed_point_without_an_error_still_names_its_status() -> None:
    """No error recorded: the status and an empty message."""
    table = display.series_table(series(point(1, 9000.0), failed(4, None, "skipped")))
    assert columns(table)["batch time"] == ["21.8 µs", "[red]skipped[/]: "]


def test_the_busy_mark_and_its_caption_need_an_ok_busy_point() -> None:
    """A quiet series has no star and no busy caption; a failed point's busy reading marks nothing."""
    quiet = series(point(1, 9000.0), failed(4), summary=Summary(peak_mbps=9000.0, peak_batch_size=1, saturation_batch_size=1))
    quiet.points[1].others_cpus, quiet.points[1].cpus = 2.0, 2
    table = display.series_table(quiet)
    assert columns(table)["MB/s"] == ["[bold]9,000[/]", ""]
    assert table.caption == "peak 9,000 MB/s @ batch 1 · saturates (≥95% of peak) at batch 1 · no cliff"


def test_a_streamed_series_has_a_copies_column_and_says_how_it_was_timed() -> None:
    """copies after n ("-" where a point has none); the fit is the streamed one, and batch time is per copy."""
    summary = Summary(peak_mbps=9000.0, peak_batch_size=1, saturation_batch_size=1, latency_s=1e-5, bandwidth_mbps=9500.0,
                      half_bandwidth_bytes=95_000.0, fit_rel_rms=0.01)  # fmt: skip
    table = display.series_table(series(point(1, 9000.0, copies=512), point(4, 9000.0, copies=0), summary=summary, method=STREAMED))
    assert list(columns(table)) == ["batch", "batch time", "batches/s", "images/s", "MB/s", "p10–p90", "n", "copies"]
    assert columns(table)["copies"] == ["512", "-"]
    assert table.caption == ("peak 9,000 MB/s @ batch 1 · saturates (≥95% of peak) at batch 1 · fit: bandwidth 9,500 MB/s (streamed: the"
                             " launch latency is out of every sample) (rms error 1.0%) · no cliff · streamed: each sample is one"
                             " span of queued copies timed by the device's events; batch time is per copy")  # fmt: skip


def test_a_per_call_series_has_no_copies_column_and_no_streamed_caption() -> None:
    """Per call: neither the copies column nor the streamed sentence."""
    table = display.series_table(series(point(1, 9000.0, copies=512)))
    assert "copies" not in columns(table) and "streamed" not in str(table.caption)


def test_device_clock_faults_and_pin_time_each_add_a_column_in_order() -> None:
    """device MB/s where any point has a device median, faults/call where any reaches 16, pin time where any pinned."""
    timed = point(1, 9000.0, device_median_s=2e-5, device_mbps=9830.4, page_faults_per_call=1000.0, pin_s=0.0)
    table = display.series_table(series(timed, point(4, 9000.0), transfer="host-to-device"))
    assert list(columns(table))[7:] == ["device MB/s", "faults/call", "pin time"]
    assert columns(table)["device MB/s"] == ["9,830", "-"]
    assert columns(table)["faults/call"] == ["1,000", "-"]
    assert columns(table)["pin time"] == ["0 ns", "-"]


def test_page_faults_show_from_16_per_call_and_never_on_a_simulated_link() -> None:
    """15.9 faults a call: no column; 16: the column, each point's count beside; a simulated link's faults are no link's."""
    assert "faults/call" not in columns(display.series_table(series(point(1, 9000.0, page_faults_per_call=15.9))))
    shown = display.series_table(series(point(1, 9000.0, page_faults_per_call=16.0), point(4, 9000.0, page_faults_per_call=0.3)))
    assert columns(shown)["faults/call"] == ["16", "0"]
    shown = display.series_table(series(point(1, 9000.0, page_faults_per_call=1234.5), point(4, 9000.0, page_faults_per_call=12.0)))
    assert columns(shown)["faults/call"] == ["1,234", "12"]
    simulated = series(point(1, 9000.0, page_faults_per_call=5000.0), transfer="simulated")
    assert "faults/call" not in columns(display.series_table(simulated))


def test_a_zero_device_median_adds_no_device_column() -> None:
    """A device median of 0 is no device clock."""
    assert "device MB/s" not in columns(display.series_table(series(point(1, 9000.0, device_median_s=0.0, device_mbps=1.0))))


def test_a_bidir_series_has_a_column_per_measured_direction_and_says_what_each_is() -> None:
    """h2d MB/s and d2h MB/s after copies, "-" where a point lacks one; the caption names them."""
    summary = Summary(peak_mbps=18_000.0, peak_batch_size=4, saturation_batch_size=4)
    bidir = series(point(1, 9000.0, copies=8, direction_mbps={"h2d": 5000.0}), point(4, 18_000.0, copies=8,
                   direction_mbps={"d2h": 8000.0, "h2d": 9000.0}), summary=summary, method=STREAMED, direction=BIDIR)  # fmt: skip
    table = display.series_table(bidir)
    assert list(columns(table))[6:] == ["n", "copies", "h2d MB/s", "d2h MB/s"]
    assert columns(table)["h2d MB/s"] == ["5,000", "9,000"] and columns(table)["d2h MB/s"] == ["-", "8,000"]
    assert str(table.caption).endswith(" · bidir: MB/s is both directions together (a batch each way per call); h2d MB/s and d2h MB/s:"
                                       " each direction's stream alone, timed by its own events")  # fmt: skip


def test_a_bidir_series_without_direction_figures_says_each_direction() -> None:
    """No point timed the directions apart: no direction column, and the caption speaks of each direction."""
    table = display.series_table(series(point(1, 9000.0), direction=BIDIR, summary=Summary(peak_mbps=9000.0, peak_batch_size=1)))
    assert list(columns(table)) == ["batch", "batch time", "batches/s", "images/s", "MB/s", "p10–p90", "n"]
    assert str(table.caption).endswith(" · no cliff · bidir: MB/s is both directions together (a batch each way per call); each direction:"
                                       " each direction's stream alone, timed by its own events")  # fmt: skip


def test_a_one_way_series_has_no_bidir_caption_even_with_direction_figures() -> None:
    """Direction figures on an h2d series add their column but not the bidir sentence."""
    table = display.series_table(series(point(1, 9000.0, direction_mbps={"h2d": 9000.0})))
    assert "h2d MB/s" in columns(table) and "bidir" not in str(table.caption)


def overlapped(batch: int, mbps: float, kernel: float = 2.0) -> Point:
    """A point measured with --overlap: its copy median, a kernel of `kernel` times that, and a step of (kernel + 0.5)
    times it: half the copy hidden while the kernel is the longer part."""
    made = point(batch, mbps)
    median = made.median_s or 0.0
    made.compute = {"kernel": "matmul", "compute_times_s": [kernel * median] * 10, "step_times_s": [(kernel + 0.5) * median] * 10}
    return made


def test_an_overlap_run_adds_compute_step_and_hidden_with_their_caption() -> None:
    """compute and step in seconds, hidden as a share; "-" for a point measured without the kernel."""
    table = display.series_table(series(overlapped(1, 9000.0), point(4, 9000.0), summary=Summary(peak_mbps=9000.0)))
    assert list(columns(table))[7:] == ["compute", "step", "hidden"]
    assert columns(table)["compute"] == ["43.7 µs", "-"] and columns(table)["step"] == ["54.6 µs", "-"]
    assert columns(table)["hidden"] == ["50%", "-"]
    assert str(table.caption).endswith(" · compute: the kernel alone, sized to each batch time; step: the next batch, then the kernel fed"
                                       " by it; hidden: the share of the shorter of the two, batch time or kernel, the step hid behind"
                                       " the other")  # fmt: skip
    assert str(table.caption).startswith("peak 9,000 MB/s")  # added to the curve's line, not in its place


def test_a_hidden_share_shows_only_where_the_kernel_took_half_to_twice_the_batch_time() -> None:
    """At 2× and 0.5× the share shows; past them it is n/a with the kernel's ratio, and the caption says why, once."""
    table = display.series_table(series(overlapped(1, 9000.0, 2.0), overlapped(2, 9000.0, 2.01), overlapped(4, 9000.0, 0.5),
                                        overlapped(8, 9000.0, 0.49), summary=Summary(peak_mbps=9000.0)))  # fmt: skip
    assert columns(table)["hidden"] == ["50%", "n/a (kernel 2.01×)", "100%", "n/a (kernel 0.49×)"]
    assert str(table.caption).endswith(" hid behind the other (n/a: the kernel took less than 1/2 or more than 2 times the"
                                       " delivery's time, so the share would show the noise of the longer part, not the pipeline)")  # fmt: skip
    shown = display.series_table(series(overlapped(1, 9000.0, 2.0), summary=Summary(peak_mbps=9000.0)))
    assert "n/a" not in str(shown.caption)


def test_overlap_cells_are_dashes_without_the_kernels_samples() -> None:
    """A point with no compute record, or one without step samples, has no overlap figures."""
    assert display.overlap_cells(point(1, 9000.0)) == {"compute": "-", "step": "-", "hidden": "-"}
    partial = point(1, 9000.0, compute={"compute_times_s": [1e-3] * 3, "step_times_s": []})
    assert display.overlap_cells(partial) == {"compute": "-", "step": "-", "hidden": "-"}
    assert display.overlap_cells(overlapped(4, 9000.0)) == {"compute": "175 µs", "step": "218 µs", "hidden": "50%"}


def test_the_caption_counts_the_distinct_sizes_of_ok_points_for_the_fit() -> None:
    """Two sizes measured (a third failed) make the fit exact by construction; three do not."""
    fitted = Summary(peak_mbps=9000.0, peak_batch_size=4, saturation_batch_size=1, latency_s=1e-5, bandwidth_mbps=9500.0,
                     fit_rel_rms=0.0)  # fmt: skip
    two = display.series_table(series(point(1, 9000.0), point(4, 9000.0), failed(16), summary=fitted))
    assert "fit: latency 10 µs, bandwidth 9,500 MB/s (2 sizes: exact by construction)" in str(two.caption)
    three = display.series_table(series(point(1, 9000.0), point(4, 9000.0), point(16, 9000.0), summary=fitted))
    assert "fit: latency 10 µs, bandwidth 9,500 MB/s (rms error 0.0%)" in str(three.caption)


def test_an_mps_series_without_a_ceiling_says_its_copy_stays_in_unified_memory() -> None:
    """No result, or a chip with no published bandwidth: the unified-memory sentence; with a ceiling, the ceiling instead."""
    mps, env = mps_series({"chip": "Apple M1 Pro", "gpu_cores": 16})
    unified = "unified memory: a copy within the memory the CPU and GPU share, over no bus"
    assert str(display.series_table(mps).caption).endswith(" · no cliff · " + unified)
    caption = str(display.series_table(mps, Result(env, {}, "t", [mps], "complete")).caption)
    assert caption.endswith(" · no cliff · 20% of the unified memory's 200.0 GB/s (Apple's published bandwidth, theoretical; a copy reads"
                            " and writes each byte, so twice its MB/s)")  # fmt: skip
    cpu = series(point(1, 9000.0), summary=Summary(peak_mbps=9000.0))
    assert "unified" not in str(display.series_table(cpu).caption)


def test_the_title_is_escaped_markup() -> None:
    """Brackets in a device's name print as written."""
    table = display.series_table(series(point(1, 9000.0), device_name="Tesla [pcie]"))
    assert table.title == "torch/pinned/copy@cpu · Tesla \\[pcie] · host-to-host"
    assert rendered(table)[0] == "torch/pinned/copy@cpu · Tesla [pcie] · host-to-host"


def droppable() -> Series:
    """Numbers wider than their headers, and a failed point whose long error must not count toward the width."""
    return series(point(1, 9000.0), point(64, 12_000.0), failed(128, "x" * 300), summary=Summary(peak_mbps=12_000.0))


def test_a_table_that_fits_the_console_exactly_keeps_every_column() -> None:
    """At its ok rows' own width nothing is dropped; one column less and batches/s goes first, the caption says so."""
    whole = rendered(display.series_table(series(*droppable().points[:2])))
    width = len(whole[1])
    assert whole[1].startswith("┏") and width == 75
    kept = display.series_table(droppable(), console=console(width))
    assert len(columns(kept)) == 7 and "not shown" not in str(kept.caption)
    narrower = display.series_table(droppable(), console=console(width - 1))
    assert list(columns(narrower)) == ["batch", "batch time", "images/s", "MB/s", "p10–p90", "n"]
    assert str(narrower.caption).endswith(" · no cliff · not shown for width: batches/s (all in the file)")
    assert max(len(line) for line in rendered(narrower, width - 1)) <= width - 1


def test_a_narrow_console_drops_columns_in_the_stated_order_skipping_those_absent() -> None:
    """Only the columns the series has are dropped, in DROP_ORDER, until the table fits or none is left to drop."""
    table = display.series_table(droppable(), console=console(40))
    assert list(columns(table)) == ["batch", "MB/s", "p10–p90"]
    assert str(table.caption).endswith(" · not shown for width: batches/s, images/s, n, batch time (all in the file)")
    middle = display.series_table(droppable(), console=console(51))
    assert list(columns(middle)) == ["batch", "batch time", "MB/s", "p10–p90"]
    assert str(middle.caption).endswith(" · not shown for width: batches/s, images/s, n (all in the file)")
    assert list(columns(display.series_table(droppable(), console=console(52)))) == ["batch", "batch time", "MB/s", "p10–p90", "n"]


def test_every_optional_column_but_hidden_can_be_dropped_in_the_stated_order() -> None:
    """Streamed, device-timed, faulting, pinned and overlapped: each optional column goes in DROP_ORDER; hidden stays."""
    full = overlapped(64, 12_000.0)
    full.copies, full.device_median_s, full.device_mbps, full.page_faults_per_call, full.pin_s = 512, 1e-3, 12_583.0, 3072.0, 0.0123
    wide = series(full, method=STREAMED, transfer="host-to-device", summary=Summary(peak_mbps=12_000.0))
    assert list(columns(display.series_table(wide))) == ["batch", "batch time", "batches/s", "images/s", "MB/s", "p10–p90", "n", "copies",
                                                         "device MB/s", "faults/call", "pin time", "compute", "step", "hidden"]  # fmt: skip
    table = display.series_table(wide, console=console(20))
    assert list(columns(table)) == ["batch", "MB/s", "p10–p90", "hidden"]
    assert str(table.caption).endswith(" · not shown for width: batches/s, images/s, n, faults/call, copies, pin time, device MB/s, compute,"
                                       " step, batch time (all in the file)")  # fmt: skip


def test_without_a_console_no_column_is_dropped() -> None:
    """The table for a file or a test keeps every column however wide."""
    assert len(columns(display.series_table(droppable()))) == 7


# summary_line and busy_summary

FITTED = Summary(peak_mbps=25_123.4, peak_batch_size=64, saturation_batch_size=16, latency_s=1.234e-5, bandwidth_mbps=26_000.0,
                 half_bandwidth_bytes=321_000.0, fit_rel_rms=0.0345)  # fmt: skip
HEAD = "peak 25,123 MB/s @ batch 64 · saturates (≥95% of peak) at batch 16 · "


def test_a_curve_with_no_peak_has_no_successful_points() -> None:
    """No peak: one phrase, whatever else the summary holds."""
    assert display.summary_line(Summary()) == "no successful points"
    assert display.summary_line(Summary(latency_s=1.0, cliff=True), 2, True) == "no successful points"


def test_the_summary_line_gives_peak_saturation_fit_and_cliff() -> None:
    """Peak, saturation, latency and bandwidth, half bandwidth, the fit's error, and no cliff."""
    assert display.summary_line(FITTED) == HEAD + ("fit: latency 12.3 µs, bandwidth 26,000 MB/s, half bandwidth at 321 KB"
                                                   " (rms error 3.5%) · no cliff")  # fmt: skip


def test_a_curve_without_a_fit_gives_peak_saturation_and_cliff_only() -> None:
    """No latency: no fit phrase at all."""
    assert display.summary_line(dataclasses.replace(FITTED, latency_s=None)) == HEAD + "no cliff"


def test_a_streamed_fit_gives_its_bandwidth_alone() -> None:
    """Streamed: no latency and no half bandwidth, and why."""
    assert display.summary_line(FITTED, 3, True) == HEAD + ("fit: bandwidth 26,000 MB/s (streamed: the launch latency is out of"
                                                            " every sample) (rms error 3.5%) · no cliff")  # fmt: skip


def test_a_fit_without_a_per_byte_cost_has_unbounded_bandwidth() -> None:
    """A bandwidth of None or 0 is unbounded, and no half bandwidth is named without one."""
    for bandwidth in (None, 0.0):
        line = display.summary_line(dataclasses.replace(FITTED, bandwidth_mbps=bandwidth, half_bandwidth_bytes=None))
        assert line == HEAD + "fit: latency 12.3 µs, bandwidth unbounded (rms error 3.5%) · no cliff"
    assert "half bandwidth" not in display.summary_line(dataclasses.replace(FITTED, half_bandwidth_bytes=0.0))


@pytest.mark.parametrize("latency, text", [(1e-9, "1 ns"), (9.99e-10, "≈0"), (1e-15, "≈0"), (0.0, "≈0 (clamped)"),
                                           (-1e-6, "≈0 (clamped)"), (2.5e-3, "2.5 ms")])  # fmt: skip
def test_a_latency_under_a_nanosecond_is_about_zero_and_zero_is_clamped(latency: float, text: str) -> None:
    """From 1 ns the latency in seconds' units; above 0 below it ≈0; 0 or less is the fit clamped."""
    assert display.summary_line(dataclasses.replace(FITTED, latency_s=latency)).startswith(HEAD + f"fit: latency {text}, bandwidth")


@pytest.mark.parametrize("rms, sizes, text", [
    (0.2, None, "(rms error 20.0%)"), (0.2000001, None, "(poor fit, rms error 20.0%)"), (0.5, 3, "(poor fit, rms error 50.0%)"),
    (0.0, 2, "(2 sizes: exact by construction)"), (None, 2, "(2 sizes: exact by construction)"),
    (9.99e-7, 2, "(2 sizes: exact by construction)"), (1e-6, 2, "(rms error 0.0%)"), (0.3, 2, "(poor fit, rms error 30.0%)"),
    (0.0, 3, "(rms error 0.0%)"), (0.0, 1, "(rms error 0.0%)"), (0.0, None, "(rms error 0.0%)"),
])  # fmt: skip
def test_the_fit_quality_is_poor_above_20_percent_and_exact_with_two_sizes(rms: float | None, sizes: int | None, text: str) -> None:
    """rms above 20% is a poor fit; two sizes with (near) zero error fit exactly by construction, anything else states its error."""
    line = display.summary_line(dataclasses.replace(FITTED, fit_rel_rms=rms), sizes)
    assert line == HEAD + f"fit: latency 12.3 µs, bandwidth 26,000 MB/s, half bandwidth at 321 KB {text} · no cliff"


def test_a_cliff_is_named_with_its_batch_and_worst_drop_in_bold_yellow() -> None:
    """CLIFF, the first batch below 80% of peak and the worst fall as a whole percentage."""
    line = display.summary_line(dataclasses.replace(FITTED, latency_s=None, cliff=True, cliff_batch_size=256, cliff_drop=0.4567))
    assert line == HEAD + "[bold yellow]CLIFF: falls below 80% of peak at batch 256 (worst 46% below peak)[/]"


def test_busy_points_are_named_last_in_yellow() -> None:
    """Left out, or every point busy: said after the cliff phrase."""
    left_out = dataclasses.replace(FITTED, latency_s=None, busy_batch_sizes=[4, 8])
    assert display.summary_line(left_out) == HEAD + ("no cliff · [yellow]batch 4, 8 measured on a busy machine: left out of"
                                                     " these figures[/]")  # fmt: skip
    only = dataclasses.replace(left_out, busy_only=True)
    assert display.summary_line(only) == HEAD + ("no cliff · [yellow]every point measured on a busy machine (batch 4, 8):"
                                                 " these figures rest on them[/]")  # fmt: skip


def test_the_busy_summary_is_none_without_busy_points() -> None:
    """Nothing busy: None; one busy batch is listed alone."""
    assert display.busy_summary(Summary(peak_mbps=1.0)) is None
    assert display.busy_summary(Summary(busy_batch_sizes=[64])) == "batch 64 measured on a busy machine: left out of these figures"
    every = display.busy_summary(Summary(busy_batch_sizes=[1, 64], busy_only=True))
    assert every == "every point measured on a busy machine (batch 1, 64): these figures rest on them"


# ceiling_parts and published_note

GPU_ENV = {"process_cpus": list(range(8)), "devices": [{"id": "cuda:0", "kind": "cuda", "name": H100, "nvml": {
    "pcie_gen_current": 4, "pcie_width_current": 16, "pcie_gen_max": 4, "pcie_width_max": 16, "numa_node": 0,
    "cpu_affinity": list(range(8))}}]}  # fmt: skip


def on_gpu(framework: str, mode: str, peak: float | None, **fields: Any) -> Series:
    """A host-to-device series on cuda:0 whose summary peaked at `peak` MB/s."""
    made = series(framework=framework, mode=mode, **{"device": "cuda:0", "device_name": H100, "transfer": "host-to-device", **fields})
    made.summary = Summary(peak_mbps=peak, peak_batch_size=64, saturation_batch_size=64)
    return made


def test_the_peak_is_placed_against_the_theoretical_link_and_the_raw_ceiling() -> None:
    """A framework path: its share of the PCIe link's rate and of the raw pinned copy's peak; the raw copy, the link's only."""
    raw, torch = on_gpu("cuda", "raw_pinned", 25_200.0), on_gpu("torch", "pinned", 18_900.0)
    run = Result(GPU_ENV, {}, "t", [raw, torch], "complete")
    assert display.ceiling_parts(torch, run) == ["60% of the link's 31.5 GB/s (theoretical)",
                                                 "75% of the raw ceiling (cuda/raw_pinned/copy)"]  # fmt: skip
    assert display.ceiling_parts(raw, run) == ["80% of the link's 31.5 GB/s (theoretical)"]


def test_a_simulated_link_is_as_configured_and_bidir_counts_both_ways() -> None:
    """sim: the link's configured rate; bidir: twice it, said so."""
    sim = series(point(1, 10_000.0), framework="sim", mode="link", device="sim", transfer="simulated", params={"bandwidth_gbps": 20.0})
    assert display.ceiling_parts(sim, result(sim)) == ["50% of the link's 20.0 GB/s (as configured)"]
    second = dataclasses.replace(sim, device="sim:1")  # one of several simulated devices at once
    assert display.ceiling_parts(second, result(second)) == ["50% of the link's 20.0 GB/s (as configured)"]
    both = dataclasses.replace(sim, direction=BIDIR)
    assert display.ceiling_parts(both, result(both)) == ["25% of the link's 40.0 GB/s (as configured, both ways)"]
    gpu_bidir = on_gpu("torch", "pinned", 18_900.0, direction=BIDIR)
    assert display.ceiling_parts(gpu_bidir, Result(GPU_ENV, {}, "t", [gpu_bidir], "complete")) == [
        "30% of the link's 63.0 GB/s (theoretical, both ways)"]


def test_no_ceiling_is_given_without_the_result_a_peak_or_a_known_link() -> None:
    """No result, no peak, or nothing known about the link and no raw copy: no part."""
    torch = on_gpu("torch", "pinned", 18_900.0)
    assert display.ceiling_parts(torch, None) == []
    assert display.ceiling_parts(on_gpu("torch", "pinned", None), Result(GPU_ENV, {}, "t", [], "complete")) == []
    assert display.ceiling_parts(on_gpu("torch", "pinned", 0.0), Result(GPU_ENV, {}, "t", [], "complete")) == []
    assert display.ceiling_parts(torch, result(torch)) == []
    raw = on_gpu("cuda", "raw_pinned", 25_200.0)
    assert display.ceiling_parts(torch, result(raw, torch)) == ["75% of the raw ceiling (cuda/raw_pinned/copy)"]


def test_an_apple_gpu_is_placed_against_its_unified_memory() -> None:
    """mps: the share of the chip's published memory bandwidth, a copy counted twice."""
    mps, env = mps_series({"chip": "Apple M2", "gpu_cores": 10}, mbps=10_000.0)
    assert display.ceiling_parts(mps, Result(env, {}, "t", [mps], "complete")) == [
        "20% of the unified memory's 100.0 GB/s (Apple's published bandwidth, theoretical; a copy reads and writes each byte, so"
        " twice its MB/s)"]  # fmt: skip


SOURCE = measured_for(H100)[0].source  # the one source published for the H100 host to device: nvbandwidth's tracker
H100_RANGE = f"published for H100: 56.68–57.07 GB/s host to device, 1 source ({SOURCE})"


def test_a_raw_copy_on_a_cuda_gpu_is_placed_among_published_figures() -> None:
    """The raw pinned copy's peak in GB/s beside the model's published range, for its direction; the device's id without a name."""
    assert display.published_note(on_gpu("cuda", "raw_pinned", 55_000.0)) == "55.0 GB/s here, below every published figure; " + H100_RANGE
    d2h = display.published_note(on_gpu("cuda", "raw_pinned", 55_000.0, direction=D2H))
    assert d2h == f"55.0 GB/s here; no published device-to-host figure for this model ({H100})"
    nameless = display.published_note(on_gpu("cuda", "raw_pinned", 12_345.0, device_name=None))
    assert nameless == "12.3 GB/s here; no published host-to-device figure for this model (cuda:0)"


def test_only_a_lone_one_way_raw_copy_on_cuda_with_a_peak_is_placed() -> None:
    """A framework path, another device, several devices at once, both ways at once, or no peak: no note."""
    assert display.published_note(on_gpu("torch", "pinned", 55_000.0)) is None
    assert display.published_note(on_gpu("cuda", "raw_pinned", 55_000.0, device="sim")) is None
    assert display.published_note(on_gpu("cuda", "raw_pinned", 55_000.0, concurrent=2)) is None
    assert display.published_note(on_gpu("cuda", "raw_pinned", 55_000.0, direction=BIDIR)) is None
    assert display.published_note(on_gpu("cuda", "raw_pinned", None)) is None
    assert display.published_note(on_gpu("cuda", "raw_pinned", 0.0)) is None


# point_line and the progress bar's last point


def test_a_point_line_gives_mb_s_median_and_samples() -> None:
    """label batch N: MB/s (median, n), behind an optional prefix."""
    host = series(point(64, 12_000.0))
    assert display.point_line(host, host.points[0]) == "torch/pinned/copy@cpu batch 64: 12,000 MB/s (1.05 ms, n=10)"
    assert display.point_line(host, host.points[0], "unsaved: ") == "unsaved: torch/pinned/copy@cpu batch 64: 12,000 MB/s (1.05 ms, n=10)"


def test_a_busy_point_line_says_how_many_cpus_others_used() -> None:
    """Busy: others' CPUs to two places, of this process's CPUs."""
    busy = point(64, 12_000.0, others_cpus=0.5, cpus=2)
    assert display.point_line(series(busy), busy) == ("torch/pinned/copy@cpu batch 64: 12,000 MB/s (1.05 ms, n=10; busy: others used"
                                                      " 0.50 of 2 CPUs)")  # fmt: skip
    quiet = point(64, 12_000.0, others_cpus=0.49, cpus=2)
    assert "busy" not in display.point_line(series(quiet), quiet)


def test_a_failed_point_line_gives_its_status_and_error_wrapped_at_100_columns() -> None:
    """label batch N: status: error, a long error wrapped with an indent."""
    host = series()
    assert display.point_line(host, failed(4)) == "torch/pinned/copy@cpu batch 4: error: out of memory"
    long = display.point_line(host, failed(4, "word " * 30))
    assert long == "torch/pinned/copy@cpu batch 4: error: " + "word " * 11 + "word\n  " + "word " * 17 + "word"
    assert max(len(line) for line in long.splitlines()) <= 100


def test_the_note_beside_the_progress_bar_is_the_last_batch_and_its_mb_s() -> None:
    """ok: MB/s, with ', busy' when busy; failed: the status."""
    last = display.point_brief
    assert last(point(64, 12_000.0)) == "last: batch 64 12,000 MB/s"
    assert last(point(64, 12_000.0, others_cpus=0.5, cpus=2)) == "last: batch 64 12,000 MB/s, busy"
    assert last(failed(128)) == "last: batch 128 error"


# noisy_points, no_reading_reason, uncertain_note

def test_a_median_is_uncertain_above_10_percent_of_itself() -> None:
    """±10% is not noisy, ±10.5% is; fewer than six samples have no interval; busy and failed points are left out."""
    from xferbench.core.stats import median_uncertainty

    exact = point(1, 9000.0, times_s=[4.5] + [5.0] * 8 + [5.5])  # ten samples: the interval is the extremes, ±(5.5 − 4.5)/2 of 5
    assert median_uncertainty(exact.times_s) == 0.1
    wide = point(2, 9000.0, times_s=[4.475] + [5.0] * 8 + [5.525])
    few = point(4, 9000.0, [0.5, 1.0, 1.5])
    busy = point(8, 9000.0, [0.5] + [1.0] * 8 + [1.5], others_cpus=2.0, cpus=2)
    gone = failed(16)
    gone.times_s = [0.5] + [1.0] * 8 + [1.5]
    assert display.noisy_points(series(exact, wide, few, busy, gone)) == [wide]


@pytest.mark.parametrize("system, reason", [
    ("macOS-14.1-arm64-arm-64bit", "macOS has no /proc to read it from"), ("Darwin-23.1.0", "macOS has no /proc to read it from"),
    ("Windows-10-10.0.19041-SP0", "Windows has no /proc to read it from"), ("windows", "Windows has no /proc to read it from"),
    ("Linux-6.8.0-x86_64-with-glibc2.39", "the file was written before xferbench took that reading"),
    ("LINUX", "the file was written before xferbench took that reading"), ("FreeBSD-14.0", "the file records none"),
    ("", "the file records none"), (None, "the file records none"), ("6.8-Linux", "the file records none"),
])  # fmt: skip
def test_why_a_point_has_no_busy_reading_follows_the_recorded_os(system: str | None, reason: str) -> None:
    """The OS's name, before its first '-', in any case: macOS and Windows have no /proc; Linux's file predates it."""
    assert display.no_reading_reason(system) == reason


def noisy(batch: int, mbps: float = 9000.0, **fields: Any) -> Point:
    """A point whose median is uncertain by ±25%."""
    return point(batch, mbps, [0.75] + [1.0] * 8 + [1.25], **fields)


OWN = "this path's own time varies there, e.g. calls split between two speeds"
SEE = " (see p10–p90; every sample is in the file)"


def test_an_uncertain_median_with_readings_is_the_paths_own() -> None:
    """Each batch with its ± and n; a reading of other processes clears them."""
    points = [noisy(16, others_cpus=0.0, run_wait=None), noisy(64, others_cpus=None, run_wait=0.0)]
    assert display.uncertain_note(points) == f"the median is uncertain at batch 16 (±25%, n=10), 64 (±25%, n=10): {OWN}{SEE}"


def test_an_uncertain_median_without_a_reading_may_be_another_process() -> None:
    """Any point with neither reading: nobody is cleared, and the OS says why."""
    points = [noisy(16, others_cpus=0.0, run_wait=0.0), noisy(64)]
    assert display.uncertain_note(points, system="Windows-11") == (
        "the median is uncertain at batch 16 (±25%, n=10), 64 (±25%, n=10): no reading of other processes' CPU use was recorded"
        " there (Windows has no /proc to read it from), so another process may cause it as well as the path itself" + SEE)  # fmt: skip
    assert "(the file records none)" in display.uncertain_note([noisy(64)])


def test_an_uncertain_median_that_sets_a_figure_says_which() -> None:
    """The peak and saturation share a batch (rest), the cliff its own (rests); figures on quiet batches are not named."""
    summary = Summary(peak_mbps=9000.0, peak_batch_size=64, saturation_batch_size=64, cliff=True, cliff_batch_size=256)
    points = [noisy(64, others_cpus=0.0), noisy(256, others_cpus=0.0)]
    assert display.uncertain_note(points, summary) == (
        f"the median is uncertain at batch 64 (±25%, n=10), 256 (±25%, n=10): {OWN}{SEE}; the peak and the saturation batch rest on"
        " batch 64; the cliff rests on batch 256")  # fmt: skip
    saturation = Summary(peak_mbps=9000.0, peak_batch_size=256, saturation_batch_size=64)
    assert display.uncertain_note(points[:1], saturation).endswith(f"{SEE}; the saturation batch rests on batch 64")
    elsewhere = Summary(peak_mbps=9000.0, peak_batch_size=1, saturation_batch_size=1)
    assert display.uncertain_note(points, elsewhere).endswith(SEE)
    assert display.uncertain_note(points).endswith(SEE)


# is_busy, busy_points, busy_block, print_busy


def test_busy_points_are_the_ok_points_measured_while_others_took_a_quarter_of_the_cpus() -> None:
    """A quarter of the CPUs is busy, just under it is not; failed points are never busy points."""
    at, under = point(1, 900.0, others_cpus=0.5, cpus=2), point(4, 900.0, others_cpus=0.49, cpus=2)
    gone = failed(16)
    gone.others_cpus, gone.cpus = 2.0, 2
    assert display.is_busy(at) is True and display.is_busy(under) is False
    assert display.busy_points(series(at, under, gone)) == [at]


def busy_sweep() -> list[Series]:
    """A series busy at two of three batches, one busy at every batch with no CPU count, and a quiet one."""
    first = series(point(1, 9000.0, others_cpus=0.5, cpus=2, run_wait=0.1), point(64, 12_000.0, others_cpus=0.75, cpus=2, run_wait=0.05),
                   point(128, 13_000.0), failed(256), mode="pageable")  # fmt: skip
    second = series(point(1, 9000.0, others_cpus=1.0), point(4, 9000.0, others_cpus=1.0, run_wait=0.0999))
    quiet = series(point(1, 9000.0), point(4, 9000.0), mode="pinned_into")
    return [first, second, quiet]


ADVICE = ["  A busy machine moves figures either way, by up to several times: measure again on a quiet machine.",
          "  Busy points are marked * in the tables; each one's reading is in the file (others_cpus, run_wait)."]  # fmt: skip


def test_the_busy_block_counts_busy_points_and_gives_each_series_worst_reading() -> None:
    """Busy of all ok points; per series its busy batches, the most CPUs others used, a wait from 0.10 s/s; the advice once."""
    block = "\n".join(display.busy_block(busy_sweep())).split("\n")
    assert block == [
        "warning: the machine was busy at 4 of 7 points (other processes used 25% of the CPUs or more):",
        "  torch/pageable/copy@cpu batch 1, 64: others used up to 0.75 of 2 CPUs; this run waited up to 0.10",
        "    s/s for one",
        "  torch/pinned/copy@cpu every batch: others used up to 1.00 of ? CPUs",
        *ADVICE,
    ]


def test_a_series_busy_at_its_only_point_names_the_batch() -> None:
    """One point, busy: 'batch N', not 'every batch'."""
    lone = series(point(64, 9000.0, others_cpus=1.0, cpus=2))
    assert display.busy_block([lone])[1] == "  torch/pinned/copy@cpu batch 64: others used up to 1.00 of 2 CPUs"


def test_a_quiet_sweep_has_no_busy_block() -> None:
    """No busy point: no line at all."""
    assert display.busy_block([busy_sweep()[2]]) == []
    assert display.busy_block([]) == []


def test_the_busy_block_wraps_at_the_width_given() -> None:
    """Each line within the width, a series' further lines indented four spaces."""
    assert display.busy_block(busy_sweep()[1:2], 60) == [
        "warning: the machine was busy at 2 of 2 points (other\n  processes used 25% of the CPUs or more):",
        "  torch/pinned/copy@cpu every batch: others used up to 1.00\n    of ? CPUs",
        "  A busy machine moves figures either way, by up to several\n  times: measure again on a quiet machine. Busy points are\n"
        "  marked * in the tables; each one's reading is in the file\n  (others_cpus, run_wait).",
    ]  # fmt: skip


def test_print_busy_prints_the_block_in_yellow_as_plain_text_within_the_console() -> None:
    """Yellow, brackets as written, no highlighting, wrapped at the console's width under 100, then a blank line."""
    odd = series(point(64, 9000.0, others_cpus=1.0, cpus=2), mode="x[y]")
    out = Console(width=60, record=True, file=io.StringIO())
    display.print_busy(out, [odd])
    lines = ["warning: the machine was busy at 1 of 1 points (other", "  processes used 25% of the CPUs or more):",
             "  torch/x[y]/copy@cpu batch 64: others used up to 1.00 of 2", "    CPUs",
             "  A busy machine moves figures either way, by up to several", "  times: measure again on a quiet machine. Busy points are",
             "  marked * in the tables; each one's reading is in the file", "  (others_cpus, run_wait)."]  # fmt: skip
    assert out.export_text(styles=True) == "".join(f"\x1b[33m{line}\x1b[0m\n" for line in lines) + "\n"


def test_print_busy_wraps_at_100_columns_on_a_wide_console_and_prints_nothing_when_quiet() -> None:
    """A 160-column console: lines as busy_block gives them at 100; a quiet sweep prints nothing, not even a blank line."""
    out = console(160)
    display.print_busy(out, busy_sweep())
    assert printed(out) == "\n".join(display.busy_block(busy_sweep())).split("\n") + ["", ""]
    quiet = console(160)
    display.print_busy(quiet, busy_sweep()[2:])
    assert printed(quiet) == [""]


# print_series


def after_table(out: Console, shown: Series, run: Result | None = None) -> list[str]:
    """The lines print_series printed after the series' table (as series_table gives it on a console as wide)."""
    like = console(out.width)
    like.print(display.series_table(shown, run, like))
    table = printed(like)[:-1]
    assert printed(out)[: len(table)] == table
    return printed(out)[len(table) :]


def test_a_skipped_series_prints_nothing() -> None:
    """Announced before measuring: no table, no line."""
    out = console()
    display.print_series(out, series(point(1, 9000.0), status="skipped", reason="no torch"))
    assert printed(out) == [""]


def test_a_series_prints_its_table_then_a_blank_line() -> None:
    """A quiet ok series: the table as series_table gives it on this console, then nothing but a blank line."""
    host = series(point(1, 9000.0), point(64, 12_000.0))
    out = console(120)
    display.print_series(out, host)
    like = console(120)
    like.print(display.series_table(host, None, like))
    like.print()
    assert printed(out) == printed(like)
    narrow = console(50)
    display.print_series(narrow, host)
    assert "not shown for width" in narrow.file.getvalue()  # type: ignore[attr-defined]


def test_a_note_and_a_failure_are_said_with_their_label_and_escaped() -> None:
    """note: label: note; FAILED label: reason (empty where none); brackets as written."""
    noted = series(point(1, 9000.0), note="copies [twice]", status="failed", reason="bytes [b0] differ")
    out = console()
    display.print_series(out, noted)
    assert after_table(out, noted) == ["note: torch/pinned/copy@cpu: copies [twice]", "FAILED torch/pinned/copy@cpu: bytes [b0] differ",
                                       "", ""]  # fmt: skip
    unsaid = series(point(1, 9000.0), status="failed")
    bare = console()
    display.print_series(bare, unsaid)
    assert after_table(bare, unsaid) == ["FAILED torch/pinned/copy@cpu:", "", ""]


def test_an_uncertain_median_is_noted_with_the_reason_the_files_os_gives() -> None:
    """The file's OS says why no reading was taken; without a result, or an OS in it, this machine's."""
    host = series(point(1, 9000.0), noisy(64, 12_000.0))
    run = result(host, os="Windows-10-10.0.19041-SP0")
    out = console(100)
    display.print_series(out, host, run)
    assert after_table(out, host, run) == [
        "note: torch/pinned/copy@cpu: the median is uncertain at batch 64 (±25%, n=10): no reading of other",
        "processes' CPU use was recorded there (Windows has no /proc to read it from), so another process may",
        "cause it as well as the path itself (see p10–p90; every sample is in the file); the peak and the",
        "saturation batch rest on batch 64", "", ""]  # fmt: skip


@pytest.mark.parametrize("with_result", [False, True])
def test_without_the_files_os_the_note_names_this_machines(monkeypatch: pytest.MonkeyPatch, with_result: bool) -> None:
    """No result, or one whose environment has no os: platform.platform() says which OS."""
    monkeypatch.setattr(display.platform, "platform", lambda: "macOS-14.1-arm64-arm-64bit")
    host = series(point(1, 9000.0), noisy(64))
    run = Result({}, {}, "t", [host], "complete") if with_result else None
    out = console(160)
    display.print_series(out, host, run)
    assert "(macOS has no /proc to read it from)" in " ".join(after_table(out, host, run))


def test_the_note_lines_wrap_at_100_columns_on_a_wide_console() -> None:
    """A 160-column console: the note wraps at 100."""
    host = series(point(1, 9000.0), noisy(64))
    run = result(host)
    out = console(160)
    display.print_series(out, host, run)
    assert after_table(out, host, run)[:2] == [
        "note: torch/pinned/copy@cpu: the median is uncertain at batch 64 (±25%, n=10): no reading of other",
        "processes' CPU use was recorded there (the file was written before xferbench took that reading), so"]  # fmt: skip


def test_a_raw_copy_on_cuda_is_said_against_published_figures_then_its_warnings() -> None:
    """The published range, then each warning of the series with the file's environment."""
    raw = on_gpu("cuda", "raw_pinned", 55_000.0)
    raw.points = [point(64, 55_000.0, host_nodes={"0": 3, "1": 5})]
    raw.numa = {"requested": True, "reason": "sched_setaffinity: [eperm]"}
    env = {**GPU_ENV, "devices": [{**GPU_ENV["devices"][0], "nvml": {**GPU_ENV["devices"][0]["nvml"], "numa_node": 1}}]}
    run = Result(env, {}, "t", [raw], "complete")
    out = console(400)
    display.print_series(out, raw, run)
    assert after_table(out, raw, run) == [  # each wrapped at 100 columns however wide the console
        "against published figures: 55.0 GB/s here, below every published figure; published for H100:",
        f"56.68–57.07 GB/s host to device, 1 source ({SOURCE})",
        "warning: cuda/raw_pinned/copy@cuda:0: the worker could not be bound as planned: sched_setaffinity:", "[eperm]",
        "warning: cuda/raw_pinned/copy@cuda:0: pages of the source buffer sat off the GPU's NUMA node 1 at",
        "batch 64 (move_pages): copies from them cross the socket link", "", ""]  # fmt: skip
    alone = console(400)
    display.print_series(alone, raw)  # without the file's environment, only the series' own warnings
    assert after_table(alone, raw)[2:] == [
        "warning: cuda/raw_pinned/copy@cuda:0: the worker could not be bound as planned: sched_setaffinity:", "[eperm]", "", ""]


def test_the_published_figures_are_printed_without_highlighting() -> None:
    """Numbers and the source's address in the published line keep the plain style."""
    raw = on_gpu("cuda", "raw_pinned", 55_000.0)
    raw.points = [point(64, 55_000.0)]
    out = Console(width=120, record=True, file=io.StringIO())
    display.print_series(out, raw)
    styled = [line.rstrip() for line in out.export_text(styles=True).split("\n")]
    start = styled.index("against published figures: 55.0 GB/s here, below every published figure; published for H100:")
    assert styled[start + 1 :] == [f"56.68–57.07 GB/s host to device, 1 source ({SOURCE})", "", ""]


# group_table


def test_a_concurrent_group_is_a_row_per_device_and_their_total() -> None:
    """Each device alone, at once, their ratio and overlap; the total's ratio from the sums."""
    group = Group("cuda/raw_pinned/copy/2-at-once", 512, [DeviceRow("cuda:0", H100, 25_000.0, 20_000.0, 0.987),
                                                         DeviceRow("cuda:1", "cuda:1", 24_000.0, 21_000.0, 0.0)])  # fmt: skip
    table = display.group_table(group)
    assert columns(table) == {"device": ["cuda:0 (NVIDIA H100 80GB HBM3)", "cuda:1", "[bold]total[/]"],
                              "alone MB/s": ["25,000", "24,000", "49,000"], "at once MB/s": ["20,000", "21,000", "[bold]41,000[/]"],
                              "ratio": ["0.80×", "0.88×", "0.84×"], "overlap": ["99%", "0%", ""]}  # fmt: skip
    assert [column.justify for column in table.columns] == ["left", "right", "right", "right", "right"]
    assert table.title == "cuda/raw_pinned/copy/2-at-once: every device at once, batch 512"
    assert (table.title_justify, table.caption_justify) == ("left", "left")
    assert table.caption == ("alone: the same path on that device by itself in this run; overlap: the share of the point's sampling"
                             " during which every device sampled (-: unknown, as on a simulated link, which takes no real time)")  # fmt: skip


def test_a_device_without_figures_has_dashes_and_the_total_has_no_ratio() -> None:
    """No figure at once, no overlap: '-' for each, and a total of '-' where a device lacks its figure."""
    group = Group("sim/link/copy/2-at-once", 64, [DeviceRow("sim:0", "sim:0", 25_000.0, 20_000.0, None),
                                                  DeviceRow("sim:1", "sim:1", 25_000.0, None, None)])  # fmt: skip
    assert columns(display.group_table(group)) == {"device": ["sim:0", "sim:1", "[bold]total[/]"],
                                                   "alone MB/s": ["25,000", "25,000", "50,000"],
                                                   "at once MB/s": ["20,000", "-", "[bold]-[/]"], "ratio": ["0.80×", "-", "-"],
                                                   "overlap": ["-", "-", ""]}  # fmt: skip
    none_alone = Group("x", 64, [DeviceRow("sim:0", "sim:0", None, 20_000.0, 0.5)])
    assert columns(display.group_table(none_alone))["ratio"] == ["-", "-"]


# numa_line

NUMA_ENV = {"process_cpus": list(range(8)), "devices": [{"id": "cuda:0", "kind": "cuda", "name": H100,
                                                         "nvml": {"cpu_affinity": [0, 1, 2, 3], "numa_node": 1}}]}  # fmt: skip
OUTSIDE = ("the process may run on CPUs 4-7, outside the GPU's NUMA node 1 (CPUs 0-3); a remote node can cut host-to-device"
           " throughput several-fold. Pin it: numactl --cpunodebind=1 --membind=1 xferbench sweep ...")  # fmt: skip


def test_a_cuda_sweep_binds_each_worker_by_default() -> None:
    """bind (the default): where each worker goes, dim, and how to turn it off."""
    assert display.numa_line(result(**NUMA_ENV), "cuda:0") == ("[dim]binding each cuda:0 worker to CPUs 0-3 and memory to NUMA node 1"
                                                               " before it allocates (--no-bind turns this off)[/]")  # fmt: skip


def test_the_binding_line_escapes_its_reason() -> None:
    """An unknown node's reason is printed as written, brackets and all."""
    nvml = {"cpu_affinity": [0, 1, 2, 3], "numa_node": -1, "numa_node_reason": "sysfs read [node]"}
    env = {**NUMA_ENV, "devices": [{"id": "cuda:0", "kind": "cuda", "nvml": nvml}]}
    assert display.numa_line(result(**env), "cuda:0") == ("[dim]binding each cuda:0 worker to CPUs 0-3; memory not bound: the GPU's NUMA"
                                                          " node is unknown (sysfs read \\[node]) before it allocates (--no-bind turns"
                                                          " this off)[/]")  # fmt: skip


def test_without_binding_the_sweep_warns_of_cpus_off_the_gpus_node() -> None:
    """--no-bind: the NUMA warning alone, in bold yellow."""
    assert display.numa_line(result(**NUMA_ENV), "cuda:0", bind=False) == f"[bold yellow]warning: cuda:0: {OUTSIDE}[/]"


def test_a_binding_that_cannot_be_made_adds_why_to_the_warning() -> None:
    """Asked to bind, none of the GPU's CPUs allowed: the warning and, in brackets, why no binding."""
    env = {**NUMA_ENV, "process_cpus": [4, 5, 6, 7]}
    assert display.numa_line(result(**env), "cuda:0") == (
        f"[bold yellow]warning: cuda:0: {OUTSIDE} (not bound: none of the GPU's ideal CPUs (0-3) is among the CPUs this process may use"
        " (4-7); a cgroup or taskset keeps it off the GPU's node)[/]")  # fmt: skip


def test_nothing_is_said_off_cuda_or_where_nothing_is_known() -> None:
    """Not a CUDA device: None; no NVML facts, bound or not: None."""
    assert display.numa_line(result(**NUMA_ENV), "cpu") is None
    assert display.numa_line(result(**NUMA_ENV), "mps", bind=False) is None
    bare = result(process_cpus=list(range(8)), devices=[{"id": "cuda:0", "kind": "cuda"}])
    assert display.numa_line(bare, "cuda:0") is None
    assert display.numa_line(bare, "cuda:0", bind=False) is None
    inside = result(process_cpus=[0, 1], devices=NUMA_ENV["devices"])
    assert display.numa_line(inside, "cuda:0", bind=False) is None
