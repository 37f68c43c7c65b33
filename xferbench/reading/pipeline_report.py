"""The report's answer for input pipelines: which pipeline delivers the most batches per second at each
batch size on each device, how far each stands from that device's ceiling, and how much of a batch's
delivery each hid behind compute (--overlap). Read from result files only."""

from __future__ import annotations

from collections.abc import Sequence

from xferbench.reading.display import HIDDEN_RULE, hidden_shown, hidden_text, rate
from xferbench.reading.pairs import file_names
from xferbench.core.results import Point, Selected, Series
from xferbench.core.spec import H2D, is_pipeline
from xferbench.core.telemetry import is_raw_reference, raw_series

ABSENT = "–"
BUSY = " (busy)"  # a figure measured while other processes took a quarter of the CPUs or more (Point.busy), as the report marks it
YARDSTICKS = ("host", "sim")  # no framework's copy: a host memcpy for scale, a simulated link


def _ok(series: Series) -> dict[int, Point]:
    return {p.batch_size: p for p in series.ok_points()}


def _span(batches: Sequence[int]) -> str:
    """'batch 16' or 'batches 1–64' (the batches as measured, in order)."""
    return f"batch {batches[0]}" if len(batches) == 1 else f"batches {batches[0]}–{batches[-1]}"


def _runs(best: list[tuple[int, str]]) -> list[tuple[str, list[int]]]:
    """Neighbouring batches won by the same path, in batch order: [(path, batches), ...]."""
    runs: list[tuple[str, list[int]]] = []
    for batch, name in best:
        if runs and runs[-1][0] == name:
            runs[-1][1].append(batch)
        else:
            runs.append((name, [batch]))
    return runs


def _marked(point: Point) -> str:
    """What follows a figure measured on a busy machine: the report's mark."""
    return BUSY if point.busy else ""


def _busy_sentence(shown: Sequence[tuple[Series, Point]]) -> str:
    """Which of the table's figures a busy machine measured, by series and batch, or nothing where none was: a
    pipeline's lead may be the machine's doing, and it must be said before the reader takes it."""
    busy: dict[str, list[int]] = {}
    for series, point in shown:
        if point.busy:
            busy.setdefault(series.label().rsplit("@", 1)[0], []).append(point.batch_size)
    if not busy:
        return ""
    count = sum(len(batches) for batches in busy.values())
    listed = "; ".join(f"`{name}` at batch {', '.join(map(str, sorted(batches)))}" for name, batches in busy.items())
    return (f" Measured on a busy machine at {count} of the {len(shown)} figures below ({listed}): other"
            " processes used a quarter of the CPUs or more, so those figures, marked (busy), may show the machine, not the"
            " pipeline; measure them again on a quiet machine.")


def _share(values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.0%}" if round(low, 2) == round(high, 2) else f"{low * 100:.0f}–{high:.0%}"


def section(picks: Sequence[Selected]) -> list[str]:
    """The section's Markdown lines, or none where no picked series is a pipeline."""
    files = list({id(p.result): (p.path, p.result) for p in picks}.values())
    label_of = dict(zip((id(r) for _, r in files), file_names(files)))
    devices: dict[tuple[int, str], list[Selected]] = {}  # each file's devices apart: two machines' cuda:0 are two GPUs
    for pick in picks:
        if pick.series.direction == H2D:
            devices.setdefault((id(pick.result), pick.series.device), []).append(pick)
    lines: list[str] = []
    for (file_id, device), here in devices.items():
        pipes = [p.series for p in here if is_pipeline(p.series.framework, p.series.mode) and p.series.ok_points()]
        if not pipes:
            continue
        plain = [p.series for p in here if not is_pipeline(p.series.framework, p.series.mode) and p.series.op == "copy"
                 and p.series.framework not in YARDSTICKS and not is_raw_reference(p.series) and p.series.ok_points()]  # fmt: skip
        result = next(p.result for p in here if p.series is pipes[0])
        raw = raw_series(pipes[0], result.series)
        scale = None if raw else next((p.series for p in here if p.series.framework == "host" and p.series.ok_points()), None)
        raw_points = _ok(raw) if raw is not None else {}
        raw_name = f"{raw.framework}/{raw.mode}" if raw is not None else ""  # cuda/raw_pinned, or hip/raw_pinned on an AMD GPU
        points = {s.label(): _ok(s) for s in pipes}
        series_of = {s.label(): s for s in pipes}
        batches = sorted({b for found in points.values() for b in found})
        best: list[tuple[int, str]] = []
        rows, raw_shares, plain_ratios = [], [], []
        shown: list[tuple[Series, Point]] = []  # every figure the table gives, for the busy sentence
        read_against: list[tuple[Series, Point]] = []  # those of the plain copies and the yardstick
        for batch in batches:
            here_points = {name: found[batch] for name, found in points.items() if batch in found}
            name, top = max(here_points.items(), key=lambda item: item[1].batches_per_s or 0)
            best.append((batch, name))
            plains = [(s, _ok(s)[batch]) for s in plain if batch in _ok(s)]
            best_plain = max(plains, key=lambda item: item[1].mbps or 0) if plains else None
            ceiling = raw_points.get(batch)
            if ceiling and ceiling.mbps and top.mbps:
                raw_shares.append(top.mbps / ceiling.mbps)
            if best_plain and best_plain[1].mbps and top.mbps:
                plain_ratios.append(top.mbps / best_plain[1].mbps)
            cells = []
            for label in points:
                point = here_points.get(label)
                if point is None or not point.batches_per_s:
                    cells.append(ABSENT)
                    continue
                share = f" ({point.mbps / ceiling.mbps:.0%})" if ceiling and ceiling.mbps and point.mbps else ""
                text = f"{rate(point.batches_per_s)}{share}{_marked(point)}"
                cells.append(f"**{text}**" if label == name else text)
                shown.append((series_of[label], point))
            plain_cell = (f"{rate(best_plain[1].batches_per_s)}{_marked(best_plain[1])} (`{best_plain[0].label().rsplit('@', 1)[0]}`)"
                          if best_plain else ABSENT)  # fmt: skip
            yardstick_series = raw if ceiling else scale
            yardstick = ceiling or (_ok(scale).get(batch) if scale else None)
            read_against += [found for found in (best_plain, (yardstick_series, yardstick)) if found and found[0] and found[1]]
            rows.append([str(batch), *cells, plain_cell, rate(yardstick.batches_per_s) + _marked(yardstick) if yardstick else ABSENT])
        name_of = {s.label(): s.label().rsplit("@", 1)[0] for s in pipes}
        won = "; ".join(f"`{name_of[name]}` at {_span(run)}" for name, run in _runs(best))
        device_name = pipes[0].device_name or device
        against = []
        if raw_shares:
            against.append(f"{_share(raw_shares)} of the raw ceiling (`{raw_name}` at the same batch)")
        if plain_ratios:
            low, high = min(plain_ratios), max(plain_ratios)
            span = f"{low:.2f}×" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}–{high:.2f}×"
            against.append(f"{span} the best plain copy of the same batch")
        where = f" in {label_of[file_id]}" if len(files) > 1 else ""
        column = {id(series): number for number, series in enumerate(pipes)}
        busy = _busy_sentence([*sorted(shown, key=lambda found: column[id(found[0])]), *read_against])  # in the columns' order
        lines.append(f"- **{device}** ({device_name}){where}: most batches per second from {won}"
                     + (f"; the best pipeline reaches {' and '.join(against)}." if against else ".") + busy)  # fmt: skip
        lines += ["", f"Batches per second delivered on {device}{where}, the most at each batch in bold"
                  + ("; (%): MB/s as a share of the raw ceiling at the same batch" if raw_points else "")
                  + ("; (busy): measured on a busy machine" if busy else "") + f"; {ABSENT}: not measured:", ""]  # fmt: skip
        last = "raw ceiling" if raw_points else f"host memcpy, for scale (`{scale.label().rsplit('@', 1)[0]}`)" if scale else "raw ceiling (none ran)"
        header = ["batch", *(f"`{name_of[s.label()]}`" for s in pipes), "best plain copy", last]
        lines += [_row(header), _row(["---:"] * len(header)), *(_row(r) for r in rows), ""]
        lines += _overlap(pipes, name_of, where)
    if not lines:
        return []
    return ["### Input pipelines: what a training loop receives", "",
            "Each pipeline series is a training loop with no compute: each call takes the next batch and waits until it is"
            " usable on the device. The batch due is read back whole before the samples, after them and after the"
            " compute's steps, so a batch dropped or repeated in between fails the point. The plain copies are the"
            " single-call paths of the same file on the same device.", "", *lines]  # fmt: skip


def _overlap(pipes: Sequence[Series], name_of: dict[str, str], where: str = "") -> list[str]:
    """Hidden share of each pipeline at each batch, where --overlap measured it."""
    measured = [s for s in pipes if any(p.overlap_figures() for p in s.ok_points())]
    if not measured:
        return []
    batches = sorted({p.batch_size for s in measured for p in s.ok_points() if p.overlap_figures()})
    rows = []
    for series in measured:
        found = {p.batch_size: p for p in series.ok_points()}
        cells = [f"`{name_of[series.label()]}`"]
        for batch in batches:
            point = found.get(batch)
            figures = point.overlap_figures() if point else None
            cells.append(hidden_text(figures, balance=True) + _marked(point) if point and figures else ABSENT)
        rows.append(cells)
    left_out = any(not hidden_shown(f) for s in measured for p in s.ok_points() if (f := p.overlap_figures()))
    return [f"With compute (--overlap){where}: how much of the shorter part, delivering a batch or a kernel sized to the"
            " batch's delivery time, a step hid behind the other (0%: the step took as long as the two one after the other;"
            " 100%: only as long as the longer); (×): the kernel's time over the delivery's, near 1 where it was sized well."
            " Each step waits for its kernel, as a loop that reads its loss does, so only the pipeline's host-side work can"
            " be hidden, never the device copy itself." + (f" {HIDDEN_RULE}." if left_out else ""), "",
            _row(["path", *(f"batch {b}" for b in batches)]), _row(["---", *["---:"] * len(batches)]), *(_row(r) for r in rows), ""]  # fmt: skip


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"
