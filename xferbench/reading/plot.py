"""Figures from result files only, never by measuring again: MB/s by batch, and time by bytes.

Built on matplotlib's object API (no pyplot), so it needs no display and leaves no global state.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import signal
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.transforms import Bbox

from xferbench.reading.display import POOR_FIT, binary_size
from xferbench.core.environment import device_entry, pcie_ceiling
from xferbench.core.errors import XferbenchError, stop_behind
from xferbench.reading.pairs import TAG_WIDTH, Difference, differences, file_names, path_name
from xferbench.core.spec import BIDIRECTIONAL, DEVICE_TO_HOST, HOST_TO_DEVICE, HOST_TO_HOST, SIMULATED
from xferbench.core.results import DEFAULT_FOLDER, Point, Result, Selected, Series, by_bytes, refuse_unless_regular, why_unwritable, write_whole
from xferbench.core.stats import CLIFF_FRACTION
from xferbench.core.telemetry import unified_memory_ceiling

FORMATS = (".png", ".svg", ".pdf")
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = (".", "x", "+", "1")  # a file's points, where no line joins them (time per call)


def series_labels(picks: list[Selected]) -> list[str]:
    """framework/mode/op @ device name per series, plus whatever else tells two lines apart: the
    device id (two GPUs of one model), then, with several files, what names each file (pairs.file_names).
    A host-to-host series says so: "@ AMD EPYC" alone would pass a CPU copy off as a GPU curve."""
    labels = [f"{p.series.label().rsplit('@', 1)[0]} @ {p.series.device_name or p.series.device}"
              + (f" · {HOST_TO_HOST}" if p.series.transfer == HOST_TO_HOST else "") for p in picks]  # fmt: skip
    if _collide(labels, [p.series.device for p in picks]):
        labels = [f"{label} [{p.series.device}]" for label, p in zip(labels, picks)]
    files = {id(p.result): (p.path, p.result) for p in picks}
    if len(files) > 1:
        names = dict(zip(files, file_names(list(files.values()))))
        labels = [f"{label} ({names[id(p.result)]})" for label, p in zip(labels, picks)]
    # A series cut short (its worker died) draws only what it measured: the legend must not pass it off as whole.
    return [f"{label} (FAILED)" if p.series.status == "failed" else label for label, p in zip(labels, picks)]


def _collide(labels: list[str], owners: list[str]) -> bool:
    """Whether one label would stand for the series of two different owners (devices)."""
    seen: dict[str, str] = {}
    return any(seen.setdefault(label, owner) != owner for label, owner in zip(labels, owners))


def device_text(series: Series) -> str:
    """The device's name, with its id where that tells GPUs apart: NVIDIA H100 (cuda:0). An Apple GPU's
    says its copies stay in unified memory, so a pasted figure cannot pass them off as a link's."""
    name = series.device_name or series.device
    on_gpu = series.transfer in (HOST_TO_DEVICE, DEVICE_TO_HOST, BIDIRECTIONAL)
    if on_gpu and series.device == "mps":
        return f"{name} (mps, unified memory)"
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


def cliff_note(series: Series, in_bytes: bool = False) -> tuple[Point, str] | None:
    """The first batch below CLIFF_FRACTION of the peak and how far it fell there (and at worst, when
    it fell further later): the figures a bug report about the fall quotes. None without a cliff.
    `in_bytes`: the figure places points by bytes per call, so the cliff is named by its size."""
    summary = series.summary
    if not summary.cliff or not summary.peak_mbps:
        return None
    at = next((p for p in series.ok_points() if p.batch_size == summary.cliff_batch_size), None)
    if at is None or at.mbps is None:
        return None
    drop = 1 - at.mbps / summary.peak_mbps
    text = f"cliff: −{drop:.0%} at {place_text(at, in_bytes)}"
    if summary.cliff_drop is not None and f"{summary.cliff_drop:.0%}" != f"{drop:.0%}":
        text += f" (worst −{summary.cliff_drop:.0%})"
    return at, text


def place_text(point: Point, in_bytes: bool) -> str:
    """A point's place as the x axis reads it: "batch 171", or "64 MiB" on a bytes axis."""
    return binary_size(point.bytes) if in_bytes else f"batch {point.batch_size}"


def default_path(paths: list[Path]) -> Path:
    """runs/STEM.png for one file, runs/STEM-vs-STEM2.png for several (names kept short): beside a
    user's own sweeps, in the folder git ignores, never among a checkout's committed plots/."""
    stem = "-vs-".join(p.stem for p in paths[:3]) + (f"-and-{len(paths) - 3}-more" if len(paths) > 3 else "")
    return DEFAULT_FOLDER / f"{re.sub(r'[^A-Za-z0-9_.-]', '-', stem)[:120]}.png"


TICK_GAP = 0.4  # octaves between two labelled batch sizes: at fontsize 8, three digits need about this much


def tick_order(ticks: Sequence[int], first: Sequence[int] = ()) -> list[int]:
    """The order in which ticks keep their labels where two would overlap: the batches in `first` (where a cliff
    is marked), then those that are no power of two (a user chose them: 171 is the first batch past glibc's
    32 MiB threshold), then the rest, smallest first."""
    def rank(tick: int) -> int:
        return 0 if tick in first else 1 if tick & (tick - 1) else 2

    return sorted(ticks, key=lambda t: (rank(t), t))


def tick_labels(ticks: list[int], first: Sequence[int] = ()) -> list[str]:
    """A label at every batch size, except where it would overlap one already labelled (170, 171, 172...), by
    spacing on the log axis (TICK_GAP), in tick_order. The drawn figure is checked again (thin_ticks)."""
    labelled: list[int] = []
    for tick in tick_order(ticks, first):
        if all(abs(math.log2(tick) - math.log2(other)) >= TICK_GAP for other in labelled):
            labelled.append(tick)
    return [str(tick) if tick in labelled else "" for tick in ticks]


LABEL_PAD = 3  # pixels kept clear between two tick labels, or two notes, as drawn
TITLE_SMALLEST = 8.0  # points, as the tick labels and the legend: a panel's title shrinks down to this before it is wrapped


def thin_ticks(axes: Any, renderer: Any, order: Sequence[int]) -> set[int]:
    """Blank each x tick label that, as drawn, would overlap one kept before it in `order`, whatever the panel's
    width and the font: spacing on the axis alone cannot know them. Returns the ticks that keep a label."""
    drawn = {round(float(tick)): label for tick, label in zip(axes.get_xticks(), axes.get_xticklabels())}
    kept: dict[int, Bbox] = {}
    for tick in order:
        label = drawn.get(tick)
        if label is None or not label.get_text():
            continue
        box = label.get_window_extent(renderer).padded(LABEL_PAD / 2)
        if not any(box.overlaps(other) for other in kept.values()):
            kept[tick] = box
    ticks = list(drawn)
    axes.set_xticks(ticks, [drawn[tick].get_text() if tick in kept else "" for tick in ticks], fontsize=8)
    return set(kept)


def balanced(text: str, lines: int, between: str = r"(?<=[,;]) ") -> str:
    """`text` in at most `lines` lines of about one length, broken only at the spaces `between` matches (after a
    comma or semicolon by default: a clause stays whole); the text as it is where no such break gives so few lines."""
    parts = re.split(between, text)
    for width in range(max(map(len, parts)), len(text) + 1):
        packed = [parts[0]]
        for part in parts[1:]:
            if len(packed[-1]) + 1 + len(part) <= width:
                packed[-1] += " " + part
            else:
                packed.append(part)
        if len(packed) <= lines:
            return "\n".join(packed)
    return text


def fit_title(axes: Any, renderer: Any) -> None:
    """A panel's title no wider than its panel: a smaller font first, down to TITLE_SMALLEST, then two lines or
    more of about one length, broken between clauses where that fits, else at any space (balanced)."""
    title = axes.title
    room = axes.get_window_extent(renderer).width
    while title.get_window_extent(renderer).width > room and title.get_fontsize() > TITLE_SMALLEST:
        title.set_fontsize(title.get_fontsize() - 0.5)
    text = title.get_text()
    for lines in range(2, 6):
        if title.get_window_extent(renderer).width <= room:
            return
        for between in (r"(?<=[,;]) ", " "):
            title.set_text(balanced(text, lines, between))
            if title.get_window_extent(renderer).width <= room:
                return


def place_notes(marks: Sequence[tuple[Any, Point, str]], renderer: Any, labelled: set[int], in_bytes: bool) -> None:
    """Under each ▼ whose batch has no tick label (or on a bytes axis, every one), its place in words, 7-point,
    moved 10 points lower while it would overlap a note already there."""
    taken: dict[int, list[Bbox]] = {}
    for axes, point, colour in marks:
        if not in_bytes and point.batch_size in labelled:
            continue
        here = taken.setdefault(id(axes), [])
        x = point.bytes if in_bytes else point.batch_size
        for below in range(len(marks) + 1):
            note = axes.annotate(place_text(point, in_bytes), (x, point.mbps), xytext=(0, -16 - 10 * below), textcoords="offset points",
                                 ha="center", fontsize=7, color=colour, zorder=5,  # over the curves and their marks, readable
                                 bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})  # fmt: skip
            note.set_in_layout(False)  # inside the panel: the layout, and so every tick's place, stays as measured
            box = note.get_window_extent(renderer).padded(LABEL_PAD / 2)
            if not any(box.overlaps(other) for other in here):
                break
            note.remove()
        here.append(box)


SMALL_MULTIPLES = 6  # past this many series, one MB/s panel per framework: a dozen curves on one axis are spaghetti
BUSY_KEY = "measured on a busy machine"  # the key's hollow marker is its symbol: the text repeats none
Y_SCALES = ("auto", "linear", "log")
LOG_SPAN = 10  # auto: a log MB/s axis once the medians span more than this factor, or the small ones are a sliver
NARROWEST_LOG = 1.1  # a log axis spans at least this factor: its ticks then differ in the second or third digit
LABEL_WIDTH = 60  # characters of a legend line: a longer entry wraps, never cut


def busy_key(picks: list[Selected], labels: list[str]) -> str | None:
    """The busy key's text, true to the figure: busy points are left out of peak, saturation and cliff
    unless every point of a series was busy, and then its marks rest on them and the key names it."""
    busy = [(pick, label) for pick, label in zip(picks, labels) if any(p.busy for p in pick.series.ok_points())]
    if not busy:
        return None
    only = [label for pick, label in busy if pick.series.summary.busy_only]
    named = " and ".join(only) if len(only) <= 2 else f"{len(only)} series"
    if not only:
        return f"{BUSY_KEY} (left out of peak, saturation and cliff)"
    if len(only) == len(busy):
        return f"{BUSY_KEY}: every point of {named}, so the peak, saturation and cliff marks rest on them"
    return f"{BUSY_KEY} (left out of peak, saturation and cliff, except in {named}, where every point was busy and the marks rest on them)"


def wrapped(text: str, width: int = LABEL_WIDTH) -> str:
    """Lines of at most `width` characters, broken after a space, colon, semicolon or comma where one is:
    a legend entry is wrapped, never cut (the whole GLIBC_TUNABLES value is what tells two files apart)."""
    lines = [""]
    for token in re.split(r"(?<=[\s:;,])", text):
        if lines[-1].strip() and len((lines[-1] + token).rstrip()) > width:
            lines.append("")
        lines[-1] += token
        while len(lines[-1].rstrip()) > width:  # one word longer than a line: split, nothing dropped
            lines[-1:] = [lines[-1][:width], lines[-1][width:]]
    return "\n".join(line.rstrip() for line in lines)


def _whole(found: Difference, index: int) -> str | None:
    """Difference.describe with the value whole where describe cut it: the legend wraps it instead."""
    text, value = found.describe(index), found.values[index]
    cut = value[: TAG_WIDTH - 1] + "…"
    return text[: -len(cut)] + value if text and len(value) > TAG_WIDTH and text.endswith(cut) else text


def file_tags(labels: list[str], found: list[Difference], most: int = 2) -> list[str]:
    """Each file's label with what sets it apart, uncut ("b: GLIBC_TUNABLES=glibc.malloc..."), as pairs.tags."""
    named = []
    for index, label in enumerate(labels):
        parts = [text for d in found if (text := _whole(d, index))][:most]
        named.append(f"{label}: {'; '.join(parts)}" if parts else label)
    return named


def size_ticks(sizes: list[int]) -> tuple[list[int], list[str]]:
    """Powers of two across `sizes`, at most about ten, labelled as sizes read (1 MiB, 64 MiB, 1 GiB)."""
    low, high = math.floor(math.log2(min(sizes))), math.ceil(math.log2(max(sizes)))
    step = max(1, math.ceil((high - low) / 10))
    ticks = [2**e for e in range(math.ceil(low / step) * step, high + 1, step)] or [2**low]
    return ticks, [binary_size(t) for t in ticks]


def log_rates(picks: list[Selected], y_scale: str) -> bool:
    """Whether MB/s goes on a log axis: asked for, or (auto) the medians span more than LOG_SPAN times,
    where a linear axis from 0 would flatten a change at the slow end into a sliver."""
    if y_scale not in Y_SCALES:
        raise XferbenchError(f"--y-scale {y_scale}: give auto, linear or log")
    if y_scale != "auto":
        return y_scale == "log"
    rates = [p.mbps for pick in picks for p in pick.series.ok_points() if p.mbps is not None and p.mbps > 0]
    return bool(rates) and max(rates) > LOG_SPAN * min(rates)


def widen_narrow_log(axes: Any, axis: str = "y") -> None:
    """Widen a log axis that spans less than NARROWEST_LOG about its geometric middle. Over a flat series or a
    single point matplotlib puts ticks a hair apart and prints each to 6 digits, so they read alike ("1.2×10^4"
    five times); a wider axis leaves as it was."""
    low, high = axes.get_ylim() if axis == "y" else axes.get_xlim()
    scale = axes.get_yscale() if axis == "y" else axes.get_xscale()
    if scale != "log" or not 0 < low < high or high >= low * NARROWEST_LOG:
        return
    middle, half = math.sqrt(low * high), math.sqrt(NARROWEST_LOG)
    (axes.set_ylim if axis == "y" else axes.set_xlim)(middle / half, middle * half)


def _styles(picks: list[Selected]) -> tuple[list[str], list[str], list[str]]:
    """Each series' colour, line style and marker. From several files: a colour per path (the same
    path in every file), and a line style and marker per file. From one: a colour per series, and
    past the ten colours of the cycle another line style."""
    cycle = [f"C{i}" for i in range(10)]
    files = list(dict.fromkeys(id(p.result) for p in picks))
    if len(files) == 1:
        return ([cycle[i % 10] for i in range(len(picks))], [LINE_STYLES[i // 10 % len(LINE_STYLES)] for i in range(len(picks))],
                [MARKERS[0]] * len(picks))  # fmt: skip
    paths = list(dict.fromkeys(path_name(p.series) for p in picks))
    colours = [cycle[paths.index(path_name(p.series)) % 10] for p in picks]
    index = [files.index(id(p.result)) for p in picks]
    return colours, [LINE_STYLES[i % len(LINE_STYLES)] for i in index], [MARKERS[i % len(MARKERS)] for i in index]


def _file_keys(picks: list[Selected], colours: list[str], files: list[tuple[Path, Result]], labels: list[str]) -> list[Line2D]:
    """Legend entries for several files: one per path in its colour (`colours`, each pick's), one per file
    in its line style, named by what sets the file apart, whole (differences between the files: "b: GLIBC_TUNABLES=...")."""
    series = [[p.series for p in picks if p.result is result] for _, result in files]
    named = file_tags(labels, differences([(result, mine) for (_, result), mine in zip(files, series)]))
    keys = {}
    for pick, colour in zip(picks, colours):
        path = path_name(pick.series) + (f" · {HOST_TO_HOST}" if pick.series.transfer == HOST_TO_HOST else "")
        keys.setdefault(path, Line2D([], [], color=colour, label=path))
    return [*keys.values(), *(Line2D([], [], color="black", linestyle=LINE_STYLES[i % len(LINE_STYLES)],
                                     marker=MARKERS[i % len(MARKERS)], label=name) for i, name in enumerate(named))]  # fmt: skip


@contextlib.contextmanager
def interrupts_kept() -> Iterator[None]:
    """Ctrl-C while matplotlib draws or saves ends as KeyboardInterrupt, whatever matplotlib does with it. Cut short,
    a figure can be left half laid out, and matplotlib's own cleanup, or its next step where it swallowed the
    interrupt, then raises in its place (ValueError: Invalid bounding box): a traceback where the user pressed
    Ctrl-C. So an error raised once SIGINT has come, or while a KeyboardInterrupt was being handled, is raised as
    that interrupt, and an interrupt swallowed is raised when the block ends. Only the main thread gets signals."""
    pressed: list[int] = []
    watched = threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    if watched:

        def noted(number: int, frame: Any) -> None:
            pressed.append(number)
            signal.default_int_handler(number, frame)

        signal.signal(signal.SIGINT, noted)
    try:
        yield
    except KeyboardInterrupt:
        raise
    except Exception as error:
        stop = stop_behind(error)
        if stop is None and not pressed:
            raise
        raise (stop or KeyboardInterrupt()) from None
    finally:
        if watched:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    if pressed:
        raise KeyboardInterrupt


@interrupts_kept()  # a Ctrl-C while it is drawn ends as Ctrl-C
def figure(picks: list[Selected], title: str | None = None, *, y_scale: str = "auto") -> Figure:
    """Panel 1: MB/s against batch size with the p10-p90 band, saturation and cliff markers and link ceiling.
    Panel 2: time per call against bytes, log-log, with each curve's latency + bandwidth fit.
    Past SMALL_MULTIPLES series, panel 1 becomes one panel per framework on shared axes, and panel 2 goes.
    From several files the legend keys each path by colour and each file by line style and what sets it apart.
    Series of different item shapes, or a peer's, put bytes per call on panel 1's x axis (results.by_bytes): batch 512 of 1 MiB buffers is no
    batch 512 of images. MB/s goes on a log axis as `y_scale` says (auto: log_rates), widened over a flat series (widen_narrow_log). A point measured on a
    busy machine is drawn hollow. Without a title, the figure is titled by its transfer and devices (default_title)."""
    log = log_rates(picks, y_scale)
    in_bytes = by_bytes(picks)
    labels = series_labels(picks)
    colours, styles, markers = _styles(picks)
    files = list({id(p.result): (p.path, p.result) for p in picks}.values())
    labels_of_files = file_names(files)
    file_of = {id(result): label for (_, result), label in zip(files, labels_of_files)}
    several = len(files) > 1
    frameworks = list(dict.fromkeys(p.series.framework for p in picks))
    multiples = len(picks) > SMALL_MULTIPLES
    fig = Figure(figsize=(13, 5.6 + 0.25 * ((len(picks) + len({p.series.device for p in picks})) // 3)), layout="constrained")
    if multiples:
        columns = min(3, len(frameworks))
        rows = math.ceil(len(frameworks) / columns)
        fig.set_size_inches(13, 1.5 + 3.6 * rows + 0.25 * (len(picks) // 3))
        grid = fig.subplots(rows, columns, sharex=True, sharey=True, squeeze=False)
        panels = {name: axes for name, axes in zip(frameworks, grid.flat)}
        for axes in list(grid.flat)[len(frameworks):]:
            axes.set_visible(False)
        time_axes = None
    else:
        rate_axes, time_axes = fig.subplots(1, 2)
        panels = {name: rate_axes for name in frameworks}

    def at_x(point: Point) -> int:
        return point.bytes if in_bytes else point.batch_size

    xs: set[int] = set()
    ceilings: dict[str, float] = {}
    cliffs: list[Line2D] = []  # a triangle per series with a cliff, its fall in the label
    cliff_marks: list[tuple[Any, Point, str]] = []  # (axes, point, colour): each cliff's batch must be read off the figure
    for pick, label, colour, style, marker in zip(picks, labels, colours, styles, markers):
        series = pick.series
        axes = panels[series.framework]
        points = series.ok_points()
        x = [at_x(p) for p in points]
        xs.update(x)
        cliff = cliff_note(series, in_bytes)
        if cliff is not None:  # said in the series' own legend entry: a key of its own would need matching by colour
            label = f"{label} · ▼ {cliff[1]}"
        axes.plot(x, [p.mbps for p in points], marker=marker, linestyle=style, color=colour, label=label)
        busy = [p for p in points if p.busy]
        if busy:  # hollow: the point's figure may show the machine, not the path
            axes.plot([at_x(p) for p in busy], [p.mbps for p in busy], marker="o", markersize=7, markerfacecolor="white",
                      color=colour, linestyle="none", label="_busy")  # fmt: skip
        spread = [p for p in points if p.mbps_p10 is not None and p.mbps_p90 is not None]  # a peer's figure has none
        if spread:
            axes.fill_between([at_x(p) for p in spread], [p.mbps_p10 for p in spread], [p.mbps_p90 for p in spread],
                              color=colour, alpha=0.15)  # fmt: skip
        saturation = series.summary.saturation_batch_size
        at = next((p for p in points if p.batch_size == saturation), None)
        if at is not None:
            axes.plot([at_x(at)], [at.mbps], marker="o", markersize=9, markerfacecolor="none",
                      color=colour, linestyle="none")  # fmt: skip
        if cliff is not None:
            axes.plot([at_x(cliff[0])], [cliff[0].mbps], marker="v", markersize=9, color=colour,
                      linestyle="none", label="_cliff")  # fmt: skip
            cliff_marks.append((axes, cliff[0], colour))
            where = f"{path_name(series)} ({file_of[id(pick.result)]})"  # the legend keys paths and files: no device here
            cliffs.append(Line2D([], [], marker="v", color=colour, linestyle=style, label=f"{where} · ▼ {cliff[1]}"))
        summary = series.summary
        if time_axes is not None:
            time_axes.plot([p.bytes for p in points], [p.median_s for p in points], marker=marker, linestyle="none",
                           color=colour, label=label)  # fmt: skip
            if summary.latency_s is not None and summary.bandwidth_mbps:
                sizes = sorted(p.bytes for p in points)
                model = [summary.latency_s + b / (summary.bandwidth_mbps * 1e6) for b in sizes]
                poor = (summary.fit_rel_rms or 0) > POOR_FIT  # the model does not describe this curve: say so
                time_axes.plot(sizes, model, color=colour, linestyle=":" if poor else "--", linewidth=1,
                               label="_poor fit" if poor else "_fit")  # fmt: skip
        ceiling = pcie_ceiling(device_entry(pick.result.environment, series.device), series.link)
        if series.device == "mps" and series.transfer != HOST_TO_HOST:  # no link: the chip's memory bandwidth
            gbps, _ = unified_memory_ceiling(series, pick.result.environment)
            chip = device_entry(pick.result.environment, "mps").get("chip") or pick.result.environment.get("cpu")
            ceiling = (gbps, f"{chip} unified memory: {gbps:g} GB/s (Apple's published bandwidth, theoretical)") if gbps else None
        if ceiling:
            ceilings[ceiling[1]] = ceiling[0] * 1e3  # GB/s -> MB/s
    # The busy key names series as the legend does: from several files, by path and file.
    key = busy_key(picks, [f"{path_name(p.series)} ({file_of[id(p.result)]})" for p in picks] if several else labels)
    if in_bytes:
        ticks, tick_texts = size_ticks(sorted(xs))
    else:
        ticks = sorted(xs)
        tick_texts = tick_labels(ticks, [p.batch_size for _, p, _ in cliff_marks])
    marked = f", ▼ at a cliff (below {CLIFF_FRACTION:.0%} of peak)" if cliffs else ""
    hollow = ", hollow: busy machine" if key else ""
    what = f"throughput: band p10–p90, ring at saturation (95% of peak){marked}{hollow}"
    lined: set[int] = set()  # several panel names may share one axes: its ceilings are drawn once
    for number, (name, axes) in enumerate(dict.fromkeys(panels.items())):
        for text, mbps in ceilings.items() if id(axes) not in lined else ():
            axes.axhline(mbps, color="grey", linestyle="--", linewidth=1, label=text)
        lined.add(id(axes))
        axes.set_xscale("log", base=2)
        axes.set_xticks(ticks, tick_texts, fontsize=8)
        axes.tick_params(axis="x", labelbottom=True)  # shared axes hide inner labels: a panel above an empty slot keeps its own
        axes.minorticks_off()
        axes.set_xlabel("bytes per call" if in_bytes else "batch size (images)")
        if not multiples or number % 3 == 0:  # shared y: said once per row
            axes.set_ylabel(f"median MB/s (10^6 B/s){', log scale' if log else ''}")
        if log:
            axes.set_yscale("log")
        else:
            axes.set_ylim(bottom=0)
        axes.set_title(name if multiples else what, fontsize=9)
        axes.grid(True, alpha=0.3)
    first = next(iter(panels.values()))
    handles, names = first.get_legend_handles_labels()
    if several or multiples:  # one entry per series would repeat each path once per file: key paths and files instead
        keys = _file_keys(picks, colours, files, labels_of_files) if several else [h for h, n in zip(*_series_handles(panels))
                                                  if not n.startswith("_") and n not in ceilings]  # fmt: skip
        handles = [*keys, *(cliffs if several else []),
                   *(h for h, n in zip(handles, names) if n in ceilings)]  # fmt: skip
        names = [h.get_label() for h in handles]
    if key:
        handles.append(Line2D([], [], marker="o", markerfacecolor="white", color="grey", linestyle="none", label=key))
        names.append(key)
    names = [wrapped(name) for name in names]
    # As many columns as the longest line leaves room for: a legend wider than the figure is cut at both edges.
    # Characters differ in width (capitals, "W"), so the guess from the count is checked against the drawn width.
    columns = max(1, min(3, 240 // (max(len(line) for name in names for line in name.split("\n")) + 8))) if names else 1
    legend = fig.legend(handles, names, loc="outside lower center", ncols=columns, fontsize=8)
    renderer = FigureCanvasAgg(fig).get_renderer()
    while columns > 1 and legend.get_window_extent(renderer).width > fig.bbox.width:
        columns -= 1
        legend.remove()
        legend = fig.legend(handles, names, loc="outside lower center", ncols=columns, fontsize=8)
    if time_axes is not None:
        time_axes.set_xscale("log")
        time_axes.set_yscale("log")
        time_axes.set_xlabel("bytes per call")
        time_axes.set_ylabel("median time per call (s)")
        time_axes.set_title(f"time per call; dashed: fitted latency + bytes / bandwidth (dotted: poor fit, rms > {POOR_FIT:.0%})",
                            fontsize=9)  # fmt: skip
        time_axes.grid(True, which="both", alpha=0.3)
        widen_narrow_log(time_axes, "x")  # one batch size, or 170, 171, 172
        widen_narrow_log(time_axes, "y")  # calls that all take the latency
    if log:
        for axes in dict.fromkeys(panels.values()):
            widen_narrow_log(axes)
    fig.suptitle((title or default_title(picks)) + (f"\n{what}, a panel per framework" if multiples else ""))
    # As drawn: each panel's title fitted to it, then, in the final layout, tick labels that would overlap blanked and
    # the cliffs whose batch lost its label noted under their ▼ (a note per cliff on a bytes axis).
    rate_panels = list(dict.fromkeys(panels.values()))
    fig.draw_without_rendering()  # the constrained layout: each panel's width as it will be saved
    for axes in [*rate_panels, *([time_axes] if time_axes is not None else [])]:
        if axes.get_visible():
            fit_title(axes, renderer)
    fig.draw_without_rendering()
    order = tick_order(ticks, [p.batch_size for _, p, _ in cliff_marks] if not in_bytes else ())
    labelled = set.intersection(*(thin_ticks(axes, renderer, order) for axes in rate_panels if axes.get_visible()))
    place_notes(cliff_marks, renderer, labelled, in_bytes)
    return fig


def _series_handles(panels: dict[str, Any]) -> tuple[list[Any], list[str]]:
    """Every panel's legend entries, in panel order: the series of one file split across frameworks."""
    handles: list[Any] = []
    names: list[str] = []
    for axes in dict.fromkeys(panels.values()):
        found, labels = axes.get_legend_handles_labels()
        handles += found
        names += labels
    return handles, names


def save(fig: Figure, path: Path, option: str = "--out") -> Path:
    """Write PNG, SVG or PDF by the suffix; a one-line XferbenchError, naming the CLI `option` that
    gave the path, when that is impossible."""
    if path.suffix.lower() not in FORMATS:
        raise XferbenchError(f"{option} {path}: use a .png, .svg or .pdf name")
    refuse_unless_regular(path, option)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        drawn = io.BytesIO()
        with interrupts_kept():  # a Ctrl-C in savefig stops here, before the file is touched
            fig.savefig(drawn, dpi=130, format=path.suffix.lower().lstrip("."))
        write_whole(path, drawn.getvalue())  # a Ctrl-C mid-write leaves the last figure whole
    except OSError as error:
        raise XferbenchError(f"cannot write the plot to {path}: {why_unwritable(path, error)}; choose another {option}") from None
    return path
