"""Figures from result files only, never by measuring again: MB/s by batch, and time by bytes.

Built on matplotlib's object API (no pyplot), so it needs no display and leaves no global state.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from matplotlib.figure import Figure

from xferbench.display import POOR_FIT
from xferbench.environment import device_entry, pcie_ceiling
from xferbench.errors import XferbenchError
from xferbench.spec import BIDIRECTIONAL, DEVICE_TO_HOST, HOST_TO_DEVICE, HOST_TO_HOST, SIMULATED
from xferbench.results import DEFAULT_FOLDER, Point, Selected, Series, file_labels, refuse_unless_regular
from xferbench.stats import CLIFF_FRACTION

FORMATS = (".png", ".svg", ".pdf")
LINE_STYLES = ("-", "--", ":", "-.")


def series_labels(picks: list[Selected]) -> list[str]:
    """framework/mode/op @ device name per series, plus whatever else tells two lines apart: the
    device id (two GPUs of one model), then, with several files, the host, the file name, or the path.
    A host-to-host series says so: "@ AMD EPYC" alone would pass a CPU copy off as a GPU curve."""
    labels = [f"{p.series.label().rsplit('@', 1)[0]} @ {p.series.device_name or p.series.device}"
              + (f" · {HOST_TO_HOST}" if p.series.transfer == HOST_TO_HOST else "") for p in picks]  # fmt: skip
    if _collide(labels, [p.series.device for p in picks]):
        labels = [f"{label} [{p.series.device}]" for label, p in zip(labels, picks)]
    files = {id(p.result): (p.path, p.result) for p in picks}
    if len(files) > 1:
        names = dict(zip(files, file_labels(list(files.values()))))
        labels = [f"{label} ({names[id(p.result)]})" for label, p in zip(labels, picks)]
    # A series cut short (its worker died) draws only what it measured: the legend must not pass it off as whole.
    return [f"{label} (FAILED)" if p.series.status == "failed" else label for label, p in zip(labels, picks)]


def _collide(labels: list[str], owners: list[str]) -> bool:
    """Whether one label would stand for the series of two different owners (devices)."""
    seen: dict[str, str] = {}
    return any(seen.setdefault(label, owner) != owner for label, owner in zip(labels, owners))


def device_text(series: Series) -> str:
    """The device's name, with its id where that tells GPUs apart: NVIDIA H100 (cuda:0)."""
    name = series.device_name or series.device
    on_gpu = series.transfer in (HOST_TO_DEVICE, DEVICE_TO_HOST, BIDIRECTIONAL)
    return f"{name} ({series.device})" if on_gpu and name != series.device else name


def default_title(picks: list[Selected]) -> str:
    """What the figure shows when no title is given: the transfer and the devices, so a figure pasted
    alone into a bug report cannot be read as a GPU's curve when it is a CPU copy or a simulation."""
    devices: dict[str | None, dict[str, None]] = {}  # transfer -> device texts, in order of appearance
    for pick in picks:
        devices.setdefault(pick.series.transfer, {})[device_text(pick.series)] = None
    what = {HOST_TO_DEVICE: HOST_TO_DEVICE,
            HOST_TO_HOST: "host-to-host on the CPU" + (" (no GPU)" if len(devices) == 1 else "")
            if all(p.series.device == "cpu" for p in picks if p.series.transfer == HOST_TO_HOST) else "host-to-host",
            SIMULATED: "simulated transfer (no data moves)",
            BIDIRECTIONAL: "bidirectional (MB/s both ways together)"}  # fmt: skip
    parts = []
    for transfer, names in devices.items():
        where = ", ".join(names) if len(names) <= 3 else f"{len(names)} devices"
        parts.append(f"{what.get(transfer or '', transfer or 'transfer not recorded')}: {where}")
    return "; ".join(parts)


def cliff_note(series: Series) -> tuple[Point, str] | None:
    """The first batch below CLIFF_FRACTION of the peak and how far it fell there (and at worst, when
    it fell further later): the figures a bug report about the fall quotes. None without a cliff."""
    summary = series.summary
    if not summary.cliff or not summary.peak_mbps:
        return None
    at = next((p for p in series.ok_points() if p.batch_size == summary.cliff_batch_size), None)
    if at is None or at.mbps is None:
        return None
    drop = 1 - at.mbps / summary.peak_mbps
    text = f"cliff: −{drop:.0%} at batch {at.batch_size}"
    if summary.cliff_drop is not None and f"{summary.cliff_drop:.0%}" != f"{drop:.0%}":
        text += f" (worst −{summary.cliff_drop:.0%})"
    return at, text


def default_path(paths: list[Path]) -> Path:
    """runs/STEM.png for one file, runs/STEM-vs-STEM2.png for several (names kept short): beside a
    user's own sweeps, in the folder git ignores, never among a checkout's committed plots/."""
    stem = "-vs-".join(p.stem for p in paths[:3]) + (f"-and-{len(paths) - 3}-more" if len(paths) > 3 else "")
    return DEFAULT_FOLDER / f"{re.sub(r'[^A-Za-z0-9_.-]', '-', stem)[:120]}.png"


def tick_labels(ticks: list[int]) -> list[str]:
    """A label at every batch size, except where it would overlap the one before (170, 171, 172...)."""
    labels, last = [], None
    for tick in ticks:
        if last is None or math.log2(tick) - math.log2(last) >= 0.6:
            labels.append(str(tick))
            last = tick
        else:
            labels.append("")
    return labels


def figure(picks: list[Selected], title: str | None = None) -> Figure:
    """Panel 1: MB/s against batch size with the p10-p90 band, saturation and cliff markers and link ceiling.
    Panel 2: time per call against bytes, log-log, with each curve's latency + bandwidth fit.
    Without a title, the figure is titled by its transfer and devices (default_title)."""
    labels = series_labels(picks)
    fig = Figure(figsize=(13, 5.6 + 0.25 * ((len(picks) + len({p.series.device for p in picks})) // 3)), layout="constrained")
    rate_axes, time_axes = fig.subplots(1, 2)
    batches: set[int] = set()
    ceilings: dict[str, float] = {}
    cliffs = 0  # series marked with a cliff
    for number, (pick, label) in enumerate(zip(picks, labels)):
        series = pick.series
        points = series.ok_points()
        x = [p.batch_size for p in points]
        batches.update(x)
        # Past the ten colours of the cycle, a colour comes back: the line style tells those apart.
        style = LINE_STYLES[number // 10 % len(LINE_STYLES)]
        cliff = cliff_note(series)
        if cliff is not None:  # said in the series' own legend entry: a key of its own would need matching by colour
            label = f"{label} · ▼ {cliff[1]}"
        (line,) = rate_axes.plot(x, [p.mbps for p in points], marker=".", linestyle=style, label=label)
        color = line.get_color()
        spread = [p for p in points if p.mbps_p10 is not None and p.mbps_p90 is not None]  # a peer's figure has none
        if spread:
            rate_axes.fill_between([p.batch_size for p in spread], [p.mbps_p10 for p in spread], [p.mbps_p90 for p in spread],
                                   color=color, alpha=0.15)  # fmt: skip
        saturation = series.summary.saturation_batch_size
        at = next((p for p in points if p.batch_size == saturation), None)
        if at is not None:
            rate_axes.plot([at.batch_size], [at.mbps], marker="o", markersize=9, markerfacecolor="none",
                           color=color, linestyle="none")  # fmt: skip
        if cliff is not None:
            rate_axes.plot([cliff[0].batch_size], [cliff[0].mbps], marker="v", markersize=9, color=color,
                           linestyle="none", label="_cliff")  # fmt: skip
            cliffs += 1
        time_axes.plot([p.bytes for p in points], [p.median_s for p in points], marker=".", linestyle="none",
                       color=color, label=label)  # fmt: skip
        summary = series.summary
        if summary.latency_s is not None and summary.bandwidth_mbps:
            sizes = sorted(p.bytes for p in points)
            model = [summary.latency_s + b / (summary.bandwidth_mbps * 1e6) for b in sizes]
            poor = (summary.fit_rel_rms or 0) > POOR_FIT  # the model does not describe this curve: say so
            time_axes.plot(sizes, model, color=color, linestyle=":" if poor else "--", linewidth=1,
                           label="_poor fit" if poor else "_fit")  # fmt: skip
        ceiling = pcie_ceiling(device_entry(pick.result.environment, series.device), series.link)
        if ceiling:
            ceilings[ceiling[1]] = ceiling[0] * 1e3  # GB/s -> MB/s
    for text, mbps in ceilings.items():
        rate_axes.axhline(mbps, color="grey", linestyle="--", linewidth=1, label=text)
    rate_axes.set_xscale("log", base=2)
    ticks = sorted(batches)
    rate_axes.set_xticks(ticks, tick_labels(ticks))
    rate_axes.minorticks_off()
    rate_axes.set_xlabel("batch size (images)")
    rate_axes.set_ylabel("MB/s (10^6 B of uint8 input per second, median)")
    rate_axes.set_ylim(bottom=0)
    marked = f", ▼ at a cliff (below {CLIFF_FRACTION:.0%} of peak)" if cliffs else ""
    rate_axes.set_title(f"throughput: band p10–p90, ring at saturation (95% of peak){marked}", fontsize=9)
    rate_axes.grid(True, alpha=0.3)
    handles, names = rate_axes.get_legend_handles_labels()
    # As many columns as the longest entry leaves room for: a legend wider than the figure is cut at both edges.
    columns = max(1, min(3, 240 // (max(len(name) for name in names) + 8))) if names else 1
    fig.legend(handles, names, loc="outside lower center", ncols=columns, fontsize=8)
    time_axes.set_xscale("log")
    time_axes.set_yscale("log")
    time_axes.set_xlabel("bytes per call")
    time_axes.set_ylabel("median time per call (s)")
    time_axes.set_title(f"time per call; dashed: fitted latency + bytes / bandwidth (dotted: poor fit, rms > {POOR_FIT:.0%})",
                        fontsize=9)  # fmt: skip
    time_axes.grid(True, which="both", alpha=0.3)
    fig.suptitle(title or default_title(picks))
    return fig


def save(fig: Figure, path: Path, option: str = "--out") -> Path:
    """Write PNG, SVG or PDF by the suffix; a one-line XferbenchError, naming the CLI `option` that
    gave the path, when that is impossible."""
    if path.suffix.lower() not in FORMATS:
        raise XferbenchError(f"{option} {path}: use a .png, .svg or .pdf name")
    refuse_unless_regular(path, option)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=130)
    except OSError as error:
        raise XferbenchError(f"cannot write the plot to {path}: {error.strerror or error}; choose another {option}") from None
    return path
