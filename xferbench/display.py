"""Terminal output: per-series tables in the original report's columns, summaries and progress."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from xferbench.numa import plan_binding
from xferbench.results import Point, Result, Series
from xferbench.spec import STREAMED
from xferbench.stats import Summary
from xferbench.telemetry import fraction_of_link, fraction_of_raw, is_raw_reference, numa_warning, series_warnings

NOISY_SPREAD = 0.25  # (p90 - p10) / median above this is worth a warning
FAULTY = 1000  # minor page faults per call from which the table shows them (4 MB of fresh 4 KiB pages)
POOR_FIT = 0.20  # rms relative error above which latency + bandwidth does not describe the curve


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


def size(nbytes: float | None) -> str:
    if nbytes is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {unit}"
    return f"{nbytes:.3g} B"


def series_title(series: Series) -> str:
    title = f"{series.label()} · {series.device_name or series.device}"
    if series.transfer and series.transfer != "host-to-device":
        title += f" · {series.transfer}"
    return title


def series_table(series: Series, result: Result | None = None) -> Table:
    streamed = series.method == STREAMED
    has_device_clock = any(p.device_median_s for p in series.points)
    # Page faults per call explain host-side cliffs (fresh pages on every call); shown only when they happen.
    has_faults = series.transfer != "simulated" and any((p.page_faults_per_call or 0) >= FAULTY for p in series.points)
    sizes = len({p.bytes for p in series.ok_points()})
    caption = " · ".join([summary_line(series.summary, sizes, streamed), *ceiling_parts(series, result)])
    if streamed:
        caption += " · streamed: each sample is one span of queued copies timed by the device's events; batch time is per copy"
    table = Table(title=escape(series_title(series)), title_justify="left", caption=caption, caption_justify="left")
    for name in ("batch", "batch time", "batches/s", "images/s", "MB/s", "MB/s p10–p90", "n"):
        table.add_column(name, justify="right")
    if streamed:
        table.add_column("copies/sample", justify="right")
    if has_device_clock:
        table.add_column("device MB/s", justify="right")
    if has_faults:
        table.add_column("faults/call", justify="right")
    for p in series.points:
        if p.status != "ok":
            cells = [str(p.batch_size), f"[red]{p.status}[/]: {escape(p.error or '')}"] + [""] * (5 + streamed + has_device_clock + has_faults)
        else:
            cells = [
                str(p.batch_size),
                seconds(p.median_s),
                rate(p.batches_per_s),
                rate(p.images_per_s),
                f"[bold]{rate(p.mbps)}[/]",
                f"{rate(p.mbps_p10)}–{rate(p.mbps_p90)}",
                str(p.n),
            ] + ([str(p.copies or "-")] if streamed else []) + ([rate(p.device_mbps)] if has_device_clock else [])
            cells += [f"{p.page_faults_per_call:,.0f}" if p.page_faults_per_call is not None else "-"] if has_faults else []
        table.add_row(*cells)
    return table


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
    return " · ".join(parts)


def ceiling_parts(series: Series, result: Result | None) -> list[str]:
    """The peak as a fraction of the link's theoretical rate and of the run's raw copy, where known
    (the same figures as the report's summary); both need the result the series belongs to."""
    if result is None or not series.summary.peak_mbps:
        return []
    parts = []
    of_link, gbps = fraction_of_link(series, result.environment)
    if of_link:
        which = "as configured" if series.device == "sim" else "theoretical"
        parts.append(f"{of_link:.0%} of the link's {gbps:.1f} GB/s ({which})")
    of_raw = fraction_of_raw(series, result.series)
    if of_raw and not is_raw_reference(series):
        parts.append(f"{of_raw:.0%} of the raw ceiling (cuda/raw_pinned/copy)")
    return parts


def point_line(series: Series, point: Point) -> str:
    where = f"{series.label()} batch {point.batch_size}"
    if point.status != "ok":
        return f"{where}: {point.status}: {point.error}"
    return f"{where}: {rate(point.mbps)} MB/s ({seconds(point.median_s)}, n={point.n})"


def point_brief(point: Point) -> str:
    """The last point, short enough to sit beside the progress bar."""
    result = f"{rate(point.mbps)} MB/s" if point.status == "ok" else point.status
    return f"last: batch {point.batch_size} {result}"


def noisy_points(series: Series) -> list[Point]:
    """Points whose p10–p90 spread is wide: warned about, never dropped."""
    return [p for p in series.ok_points() if p.median_s and (p.p90_s - p.p10_s) / p.median_s > NOISY_SPREAD]  # type: ignore[operator]


def print_series(console: Console, series: Series, result: Result | None = None) -> None:
    """The series' table and warnings; with the result it came from, also its fractions of the link's
    and of the raw copy's ceilings. The sweep's NUMA warning is printed once (numa_line)."""
    if series.status == "skipped":  # announced before measuring; nothing to show
        return
    console.print(series_table(series, result))
    if series.note:
        console.print(f"[yellow]note: {series.label()}: {escape(series.note)}[/]")
    if series.status == "failed":
        console.print(f"[bold red]FAILED {series.label()}: {escape(series.reason or '')}[/]")
    noisy = noisy_points(series)
    if noisy:
        batches = ", ".join(str(p.batch_size) for p in noisy)
        console.print(
            f"[yellow]warning: {series.label()}: wide p10–p90 spread (>{NOISY_SPREAD:.0%} of the median)"
            f" at batch {batches}; the machine may be busy. All samples are kept in the file.[/]"
        )
    for warning in series_warnings(series, result.environment if result else {}):
        console.print(f"[bold yellow]warning: {series.label()}: {escape(warning)}[/]")
    console.print()


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
