"""Terminal output: per-series tables in the original report's columns, summaries and progress."""

from __future__ import annotations

import platform
import textwrap
from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from xferbench.core import c2c
from xferbench.core.environment import device_entry
from xferbench.core.numa import plan_binding
from xferbench.core.references import published_line
from xferbench.core.results import BUSY_SHARE, Point, Result, Series
from xferbench.core.concurrency import Group
from xferbench.core.spec import BIDIR, D2H, H2D, STREAMED
from xferbench.core.stats import Overlap, Summary, median_uncertainty
from xferbench.core.telemetry import fraction_of_link, fraction_of_raw, is_raw_reference, numa_warning, raw_reference, series_warnings

BUSY_WAIT = 0.10  # seconds per second this process's threads waited for a CPU, from which the warning says so
UNCERTAIN = 0.10  # a median uncertain by more than this share, after sampling, gets a note
# Minor page faults per call from which a series' table shows them: a path that touches fresh memory on every call.
# A quiet point takes 0 to 15 in the committed runs (a first call's lazy setup, a stray allocation). Huge pages cut
# the count of a fresh buffer to about one per 77 KiB: NumPy's copy of TensorFlow's 48 MiB batch takes 536.
FAULTY = 16
POOR_FIT = 0.20  # rms relative error above which latency + bandwidth does not describe the curve
# The hidden share is shown only where the kernel took from 1/HIDDEN_SPAN to HIDDEN_SPAN times the delivery's median. It
# divides by the shorter part, so an error of e in the longer part's median moves it by e times their ratio: at the
# sampler's ±5%, ±10 points within 2×, ±75 at 15×, where a tiny kernel leaves nothing to hide and a huge one hides
# any delivery that runs ahead. The kernel is sized to the delivery, so a ratio past 2 is a kernel that missed its size.
HIDDEN_SPAN = 2.0
HIDDEN_RULE = (f"n/a: the kernel took less than 1/{HIDDEN_SPAN:g} or more than {HIDDEN_SPAN:g} times the delivery's time, so the"
               " share would show the noise of the longer part, not the pipeline")  # fmt: skip
LINE = 100  # the widest a line of progress, a point, a warning or a note runs, however wide the terminal


def fit(text: str, width: int = LINE, indent: str = "  ") -> str:
    """Plain text wrapped at spaces to `width` columns, each further line indented, so a log read in a
    narrow window or a review tool keeps its lines whole; a word longer than a line is split."""
    return "\n".join(textwrap.wrap(text, width, subsequent_indent=indent, break_on_hyphens=False)) or text


def say(console: Console, text: str, **options: bool) -> None:
    """Print a line of rich markup wrapped to the console's width or LINE, whichever is narrower."""
    console.print(text, width=min(console.width, LINE), **options)  # type: ignore[arg-type]


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


def rate(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def binary_size(nbytes: int) -> str:
    """A size as the peers and axis ticks name it (512 MiB, 1 GiB, 256 KiB) where it is whole in binary
    units (to a quarter), else in 10^n units as size() gives it."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        scale = 1 << shift
        if nbytes >= scale:  # the largest unit it reaches: 1.875 MiB reads better as 1.97 MB than as 1920 KiB
            return f"{nbytes / scale:g} {unit}" if nbytes % (scale // 4) == 0 else size(nbytes)
    return size(nbytes)


def size(nbytes: float | None) -> str:
    if nbytes is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.3g} B"


def series_title(series: Series) -> str:
    title = f"{series.label()} · {series.device_name or series.device}"
    if series.transfer and series.transfer != "host-to-device" and series.transfer not in title:  # "simulated link": said once
        title += f" · {series.transfer}"
    if (series.params or {}).get("cold_source"):  # --cold-source: not in the label, so said wherever the series is named
        title += " · cold source"
    return title


# Columns a narrow terminal drops, first to last, until the table fits: each is derived from, or
# secondary to, the columns that always stay (batch, MB/s and its p10–p90 band).
DROP_ORDER = ("batches/s", "images/s", "n", "faults/call", "copies", "pin time", "staging chunk", "device MB/s", "compute", "step", "batch time")


def staging_chunk_text(point: Point) -> str:
    """host/staged: the chunk a point copied by; a batch no larger than the chunk asked for went whole, in one chunk."""
    chunk = point.staging_chunk_bytes
    if not chunk:
        return "-"
    return "whole batch, one chunk" if chunk >= point.bytes else f"{chunk / 2**10:,g} KiB"


def measured_directions(series: Series) -> list[str]:
    """The directions a bidir series' points give figures for, h2d first: their table columns."""
    return [way for way in (H2D, D2H) if any(way in (p.direction_mbps or {}) for p in series.points)]


def series_table(series: Series, result: Result | None = None, console: Console | None = None) -> Table:
    """The series' points in the original report's columns. Given a console, columns are dropped in
    DROP_ORDER until the table fits its width (the caption says which), so no number is ever cut."""
    streamed = series.method == STREAMED
    has_device_clock = any(p.device_median_s for p in series.points)
    # Page faults per call explain host-side cliffs (fresh pages on every call); shown where a point reaches FAULTY.
    has_faults = series.transfer != "simulated" and any((p.page_faults_per_call or 0) >= FAULTY for p in series.points)
    sizes = len({p.bytes for p in series.ok_points()})
    ceilings = ceiling_parts(series, result)
    if series.device == "mps" and not ceilings:  # an Apple GPU shares the host's memory: the figures are no link's
        ceilings = ["unified memory: a copy within the memory the CPU and GPU share, over no bus"]
    caption = " · ".join([summary_line(series.summary, sizes, streamed), *ceilings])
    if streamed:
        caption += " · streamed: each sample is one span of queued copies timed by the device's events; batch time is per copy"
    if any(p.busy for p in series.ok_points()):
        caption += " · *: measured on a busy machine"
    ways = measured_directions(series)
    if series.direction == BIDIR:
        caption += (" · bidir: MB/s is both directions together (a batch each way per call);"
                    f" {' and '.join(f'{w} MB/s' for w in ways) or 'each direction'}: each direction's stream alone, timed by its own events")  # fmt: skip
    columns: dict[str, list[str]] = {name: [] for name in ("batch", "batch time", "batches/s", "images/s", "MB/s", "p10–p90", "n")}
    if streamed:
        columns["copies"] = []
    for way in ways:
        columns[f"{way} MB/s"] = []
    if has_device_clock:
        columns["device MB/s"] = []
    if has_faults:
        columns["faults/call"] = []
    if any(p.pin_s is not None for p in series.points):  # what pinning the batch in place took, once per point
        columns["pin time"] = []
    if any(p.staging_chunk_bytes for p in series.points):  # host/staged: the chunk each batch was copied by
        columns["staging chunk"] = []
    if any(p.overlap_figures() for p in series.points):  # --overlap: the kernel alone, a step with both, and what it hid
        caption += (" · compute: the kernel alone, sized to each batch time; step: the next batch, then the kernel fed"
                    " by it; hidden: the share of the shorter of the two, batch time or kernel, the step hid behind the other")  # fmt: skip
        if any((figures := p.overlap_figures()) and not hidden_shown(figures) for p in series.points):
            caption += f" ({HIDDEN_RULE})"
        columns.update({"compute": [], "step": [], "hidden": []})
    failed: dict[int, str] = {}
    for row, p in enumerate(series.points):
        if p.status != "ok":
            failed[row] = f"[red]{p.status}[/]: {escape(p.error or '')}"
        cells = {
            "batch": str(p.batch_size),
            "batch time": seconds(p.median_s),
            "batches/s": rate(p.batches_per_s),
            "images/s": rate(p.images_per_s),
            "MB/s": f"[bold]{rate(p.mbps)}[/]" + ("[yellow]*[/]" if p.status == "ok" and p.busy else ""),
            "p10–p90": f"{rate(p.mbps_p10)}–{rate(p.mbps_p90)}",
            "n": str(p.n),
            "copies": str(p.copies or "-"),
            "device MB/s": rate(p.device_mbps),
            "faults/call": f"{p.page_faults_per_call:,.0f}" if p.page_faults_per_call is not None else "-",
            "pin time": seconds(p.pin_s),
            "staging chunk": staging_chunk_text(p),
            **overlap_cells(p),
            **{f"{way} MB/s": rate((p.direction_mbps or {}).get(way)) for way in ways},
        }
        for name, values in columns.items():
            values.append(cells[name] if p.status == "ok" or name == "batch" else "")  # a failed row still names its batch

    def build(names: list[str], dropped: list[str]) -> Table:
        note = f" · not shown for width: {', '.join(dropped)} (all in the file)" if dropped else ""
        table = Table(title=escape(series_title(series)), title_justify="left", caption=caption + note, caption_justify="left")
        for name in names:
            table.add_column(name, justify="right")
        for row in range(len(series.points)):
            if row in failed:  # the error spans the row: it sits in the second column, the rest empty
                table.add_row(columns["batch"][row], failed[row], *[""] * (len(names) - 2))
            else:
                table.add_row(*[columns[name][row] for name in names])
        return table

    def width(names: list[str]) -> int:
        """Each column's widest cell or header, plus its padding and border (failed rows' messages wrap)."""
        ok = [row for row in range(len(series.points)) if row not in failed]
        return 1 + sum(3 + max([len(name), *(Text.from_markup(columns[name][row]).cell_len for row in ok)]) for name in names)

    names, dropped = list(columns), []
    for name in DROP_ORDER if console is not None else ():
        if width(names) <= console.width:  # type: ignore[union-attr]
            break
        if name in names:
            names.remove(name)
            dropped.append(name)
    return build(names, dropped)


def overlap_cells(point: Point) -> dict[str, str]:
    """The compute, step and hidden cells of a point measured with --overlap ("-" where it was not)."""
    figures = point.overlap_figures()
    if figures is None:
        return {"compute": "-", "step": "-", "hidden": "-"}
    return {"compute": seconds(figures.compute_s), "step": seconds(figures.step_s), "hidden": hidden_text(figures)}


def hidden_shown(figures: Overlap) -> bool:
    """Whether the kernel's length lets the hidden share say something of the pipeline (HIDDEN_SPAN)."""
    return 1 / HIDDEN_SPAN <= figures.balance <= HIDDEN_SPAN


def hidden_text(figures: Overlap, balance: bool = False) -> str:
    """The hidden share ("72%"; with `balance`, the kernel's time over the delivery's beside it: "72% (0.82×)"), or,
    where the kernel was too short or too long for it to mean anything, n/a with that ratio: "n/a (kernel 4.6×)"."""
    if not hidden_shown(figures):
        return f"n/a (kernel {figures.balance:.3g}×)"  # 3 digits: 2.01× is past the rule, "2×" would read as within it
    return f"{figures.hidden:.0%}" + (f" ({figures.balance:.2g}×)" if balance else "")


def summary_line(summary: Summary, sizes: int | None = None, streamed: bool = False) -> str:
    """The curve in one line; `sizes`, the distinct sizes measured, tells an exact two-point fit from a good one.
    A streamed curve has no per-copy latency by design: only its bandwidth is fitted to any purpose."""
    if summary.peak_mbps is None:
        return "no successful points"
    parts = [
        f"peak {rate(summary.peak_mbps)} MB/s @ batch {summary.peak_batch_size}",
        f"saturates (≥95% of peak) at batch {summary.saturation_batch_size}",
    ]
    if summary.latency_s is not None:
        bandwidth = f"{rate(summary.bandwidth_mbps)} MB/s" if summary.bandwidth_mbps else "unbounded"
        latency = seconds(summary.latency_s) if summary.latency_s >= 1e-9 else "≈0" if summary.latency_s > 0 else "≈0 (clamped)"
        fit = f"fit: latency {latency}, bandwidth {bandwidth}"
        if streamed:
            fit = f"fit: bandwidth {bandwidth} (streamed: the launch latency is out of every sample)"
        elif summary.half_bandwidth_bytes:
            fit += f", half bandwidth at {size(summary.half_bandwidth_bytes)}"
        quality = "poor fit, " if (summary.fit_rel_rms or 0) > POOR_FIT else ""
        # Two unknowns, two sizes: any curve fits exactly, so the fit proves nothing (unless clamped, then it is not exact).
        exact = sizes == 2 and (summary.fit_rel_rms or 0.0) < 1e-6
        parts.append(fit + (" (2 sizes: exact by construction)" if exact else f" ({quality}rms error {summary.fit_rel_rms:.1%})"))
    if summary.cliff:
        parts.append(
            f"[bold yellow]CLIFF: falls below 80% of peak at batch {summary.cliff_batch_size}"
            f" (worst {summary.cliff_drop:.0%} below peak)[/]"
        )
    else:
        parts.append("no cliff")
    busy = busy_summary(summary)
    return " · ".join(parts + ([f"[yellow]{busy}[/]"] if busy else []))


def busy_summary(summary: Summary) -> str | None:
    """Which busy points the curve's figures left out, or rest on when every point was busy."""
    if not summary.busy_batch_sizes:
        return None
    listed = ", ".join(map(str, summary.busy_batch_sizes))
    if summary.busy_only:
        return f"every point measured on a busy machine (batch {listed}): these figures rest on them"
    return f"batch {listed} measured on a busy machine: left out of these figures"


def ceiling_parts(series: Series, result: Result | None) -> list[str]:
    """The peak as a fraction of the link's theoretical rate and of the run's raw copy, where known
    (the same figures as the report's summary); both need the result the series belongs to."""
    if result is None or not series.summary.peak_mbps:
        return []
    parts = []
    of_link, gbps = fraction_of_link(series, result.environment)
    if of_link and series.device == "mps":  # no link: the chip's memory, as Apple publishes its bandwidth
        parts.append(f"{of_link:.0%} of the unified memory's {gbps:.1f} GB/s (Apple's published bandwidth, theoretical;"
                     " a copy reads and writes each byte, so twice its MB/s)")  # fmt: skip
    elif of_link:
        which = "as configured" if series.device.split(":")[0] == "sim" else "theoretical"
        both = ", both ways" if series.direction == BIDIR else ""
        named = f"{c2c.C2C} link" if c2c.is_c2c(device_entry(result.environment, series.device)) else "link"  # a Grace node's
        parts.append(f"{of_link:.0%} of the {named}'s {gbps:.1f} GB/s ({which}{both})")
    of_raw = fraction_of_raw(series, result.series)
    if of_raw and not is_raw_reference(series):
        reference = raw_reference(series, result.series)  # cuda's, or hip's on an AMD GPU
        parts.append(f"{of_raw:.0%} of the raw ceiling ({reference.framework if reference else 'cuda'}/raw_pinned/copy)")
    return parts


def published_note(series: Series) -> str | None:
    """On a CUDA GPU, the raw pinned copy's peak among what others published for the same model (a
    range of healthy measurements, or that there is none): is this number normal?"""
    if not (series.device.startswith("cuda") and is_raw_reference(series) and series.concurrent == 1
            and series.direction in (H2D, D2H) and series.summary.peak_mbps):  # fmt: skip
        return None
    return published_line(series.device_name or series.device, series.summary.peak_mbps / 1e3, series.direction)


def point_line(series: Series, point: Point, prefix: str = "") -> str:
    """A point as it lands, for a log: one line, wrapped at LINE where a long label or error needs it."""
    where = f"{prefix}{series.label()} batch {point.batch_size}"
    if point.status != "ok":
        return fit(f"{where}: {point.status}: {point.error}")
    busy = f"; busy: others used {point.others_cpus:.2f} of {point.cpus} CPUs" if is_busy(point) else ""
    return fit(f"{where}: {rate(point.mbps)} MB/s ({seconds(point.median_s)}, n={point.n}{busy})")


def point_brief(point: Point) -> str:
    """The last point, short enough to sit beside the progress bar."""
    if point.status != "ok":
        return f"last: batch {point.batch_size} {point.status}"
    return f"last: batch {point.batch_size} {rate(point.mbps)} MB/s" + (", busy" if is_busy(point) else "")


def noisy_points(series: Series) -> list[Point]:
    """Points whose median is still uncertain after sampling (the half width of its 95% confidence
    interval above UNCERTAIN) with no busy machine to blame, as where a path's calls split between two
    times: noted, never dropped. A wide p10–p90 alone is no reason: on a quiet machine many paths
    spread that wide, and enough samples still pin their median down."""
    return [p for p in series.ok_points() if not is_busy(p) and (median_uncertainty(p.times_s) or 0) > UNCERTAIN]


def no_reading_reason(system: str | None) -> str:
    """Why a point carries no busy reading: the OS has no /proc, or the file predates the reading."""
    name = (system or "").split("-")[0].lower()
    if name in ("macos", "darwin"):
        return "macOS has no /proc to read it from"
    if name == "windows":
        return "Windows has no /proc to read it from"
    if name == "linux":
        return "the file was written before xferbench took that reading"
    return "the file records none"


def uncertain_note(noisy: list[Point], summary: Summary | None = None, system: str | None = None) -> str:
    """A finding about the path, not a fault of the machine: said as a note, not a warning. Where such a
    point sets one of the curve's figures (`summary`), the note says so: no headline rests on it unsaid.
    `system`: the OS the file recorded (platform.platform()), for why no busy reading was taken."""
    listed = ", ".join(f"{p.batch_size} (±{median_uncertainty(p.times_s):.0%}, n={p.n})" for p in noisy)
    if any(p.others_cpus is None and p.run_wait is None for p in noisy):  # no reading: nobody can be cleared
        why = ("no reading of other processes' CPU use was recorded there"
               f" ({no_reading_reason(system)}), so another process may cause it as well as the path itself")
    else:
        why = "this path's own time varies there, e.g. calls split between two speeds"
    note = f"the median is uncertain at batch {listed}: {why} (see p10–p90; every sample is in the file)"
    if summary is not None:
        sets = {"peak": summary.peak_batch_size, "saturation batch": summary.saturation_batch_size,
                "cliff": summary.cliff_batch_size}  # fmt: skip
        on: dict[int, list[str]] = {}
        for figure, batch in sets.items():
            if batch in {p.batch_size for p in noisy}:
                on.setdefault(batch, []).append(f"the {figure}")
        rests = [f"{' and '.join(figures)} {'rest' if len(figures) > 1 else 'rests'} on batch {batch}" for batch, figures in on.items()]
        note += f"; {'; '.join(rests)}" if rests else ""
    return note


def is_busy(point: Point) -> bool:
    """Measured while other processes took a fair share (BUSY_SHARE) of this process's CPUs."""
    return point.busy


def busy_points(series: Series) -> list[Point]:
    return [p for p in series.ok_points() if is_busy(p)]


def busy_block(series: Sequence[Series], width: int = LINE) -> list[str]:
    """Every point a busy machine spoiled, once per sweep: a line per series with its busy batches and
    the worst reading among them, then the advice, once. Each point's own reading is in the file."""
    spoiled = [(s, busy_points(s)) for s in series]
    spoiled = [(s, points) for s, points in spoiled if points]
    if not spoiled:
        return []
    count = sum(len(points) for _, points in spoiled)
    total = sum(len(s.ok_points()) for s in series)
    lines = [fit(f"warning: the machine was busy at {count} of {total} points (other processes used {BUSY_SHARE:.0%} of the"
                 " CPUs or more):", width)]  # fmt: skip
    for one, points in spoiled:
        worst = max(points, key=lambda p: p.others_cpus or 0.0)
        wait = max((p.run_wait or 0.0) for p in points)
        waited = f"; this run waited up to {wait:.2f} s/s for one" if wait >= BUSY_WAIT else ""
        batches = "every batch" if len(points) == len(one.ok_points()) > 1 else "batch " + ", ".join(str(p.batch_size) for p in points)
        lines.append(fit(f"  {one.label()} {batches}: others used up to {worst.others_cpus:.2f} of {worst.cpus or '?'}"
                         f" CPUs{waited}", width, "    "))  # fmt: skip
    lines.append(fit("  A busy machine moves figures either way, by up to several times: measure again on a quiet machine."
                     " Busy points are marked * in the tables; each one's reading is in the file (others_cpus, run_wait).",
                     width))  # fmt: skip
    return lines


def print_busy(console: Console, series: Sequence[Series]) -> None:
    """The sweep's busy block (busy_block), in the warnings' colour."""
    lines = busy_block(series, min(console.width, LINE))
    if lines:
        console.print("\n".join(lines), style="yellow", markup=False, highlight=False, soft_wrap=True)
        console.print()


def print_series(console: Console, series: Series, result: Result | None = None) -> None:
    """The series' table and warnings; with the result it came from, also its fractions of the link's
    and of the raw copy's ceilings. The sweep's NUMA warning is printed once (numa_line), and so is its
    busy machine (print_busy)."""
    if series.status == "skipped":  # announced before measuring; nothing to show
        return
    console.print(series_table(series, result, console))
    if series.note:
        say(console, f"[yellow]note: {series.label()}: {escape(series.note)}[/]")
    if series.status == "failed":
        say(console, f"[bold red]FAILED {series.label()}: {escape(series.reason or '')}[/]")
    noisy = noisy_points(series)
    if noisy:
        system = (result.environment.get("os") if result is not None else None) or platform.platform()
        say(console, f"note: {series.label()}: {escape(uncertain_note(noisy, series.summary, system))}")
    published = published_note(series)
    if published:
        say(console, f"against published figures: {escape(published)}", highlight=False)
    for warning in series_warnings(series, result.environment if result else {}):
        say(console, f"[bold yellow]warning: {series.label()}: {escape(warning)}[/]")
    console.print()


def group_table(group: Group) -> Table:
    """A concurrent run at one batch: a row per device (alone, at once, the ratio) and their total."""
    table = Table(title=escape(f"{group.label}: every device at once, batch {group.batch_size}"), title_justify="left",
                  caption="alone: the same path on that device by itself in this run; overlap: the share of the"
                          " point's sampling during which every device sampled (-: unknown, as on a simulated link,"
                          " which takes no real time)", caption_justify="left")  # fmt: skip
    for name in ("device", "alone MB/s", "at once MB/s", "ratio", "overlap"):
        table.add_column(name, justify="left" if name == "device" else "right")
    for row in group.rows:
        ratio = f"{row.ratio:.2f}×" if row.ratio else "-"
        overlap = f"{row.overlap:.0%}" if row.overlap is not None else "-"
        table.add_row(row.name, rate(row.alone_mbps), rate(row.at_once_mbps), ratio, overlap)
    alone, at_once = group.total_alone, group.total_at_once
    ratio = f"{at_once / alone:.2f}×" if alone and at_once else "-"
    table.add_row("[bold]total[/]", rate(alone), f"[bold]{rate(at_once)}[/]", ratio, "")
    return table


def numa_line(result: Result, device: str, bind: bool = True) -> str | None:
    """Where the sweep's CUDA workers will run, once per sweep: the binding each gets before it
    allocates, or the warning about CPUs off the GPU's NUMA node where there is none (--no-bind, or
    nothing to bind by)."""
    if not device.startswith("cuda"):
        return None
    if bind:
        binding, why = plan_binding(result.environment, device)
        if binding is not None:
            return f"[dim]binding each {device} worker to {escape(why)} before it allocates (--no-bind turns this off)[/]"
    warning = numa_warning(result.environment, device)
    if warning and bind:
        warning = f"{warning} ({why})"
    return f"[bold yellow]warning: {device}: {escape(warning)}[/]" if warning else None
