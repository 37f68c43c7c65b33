"""Compare two result files point by point, with a rank test on the raw samples, to gate a CI job.

A ratio of medians alone cannot tell a slowdown from noise, so each point also gets a
significance test on its raw times (as asv does): Mann-Whitney U where both sides have enough
samples, otherwise whether the two p10–p90 intervals are apart, and no verdict below that. A point
is slower only when the difference is both significant and larger than the threshold. A point or
series that measured in BASE but failed in NEW fails the comparison too.

The samples of one run are not independent draws from every run the machine could make: clocks,
page placement and neighbours change between runs, not within one. The test therefore sees only
within-run noise, and two runs of an unchanged setup can differ "significantly" on real hardware.
The verdict is trustworthy for what it tests; a slowdown near the threshold needs the runs repeated.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from xferbench.reading.display import rate
from xferbench.core.errors import XferbenchError
from xferbench.reading.pairs import Difference, differences, file_names, pair, path_name
from xferbench.core.results import DAMAGED, Point, Result, Series, damaged_points, load
from xferbench.core.spec import SeriesKey
from xferbench.core.stats import point_stats

MIN_RANK_SAMPLES = 8  # per side; below it the normal approximation is poor and p < 0.01 barely reachable
MIN_SAMPLES = 5  # per side; below it p10 and p90 are the extreme samples and nothing can be concluded
MANN_WHITNEY = "mann-whitney"
OVERLAP = "p10-p90 overlap"
TOO_FEW = "too few samples"
SLOWER, FASTER, NO_CHANGE, INCONCLUSIVE = "slower", "faster", "no change", "inconclusive"
FAIL_ON_SLOWER, FAIL_ON_CHANGE = "slower", "change"  # compare --fail-on: what makes the exit status 1
FAIL_ON = (FAIL_ON_SLOWER, FAIL_ON_CHANGE)
CAVEAT = ("the test sees the noise within each run, not between runs: on real hardware, repeat both runs"
          " before trusting a verdict near the threshold")


def parse_threshold(text: str) -> float:
    """'5%' or '5' -> 0.05. A bare number below 1 is refused: '0.05' could mean 5% or 0.05%."""
    value = text.strip()
    percent = value.endswith("%")
    try:
        number = float(value.removesuffix("%").strip())
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or not 0 <= number < 100:
        raise XferbenchError(
            f"--threshold {text!r}: give a percentage from 0% to below 100%, such as 5%"
            " (a point is slower when its MB/s falls by more than this)"
        )
    if not percent and 0 < number < 1:
        raise XferbenchError(f"--threshold {text!r} is ambiguous: write {number:g}% or {number * 100:g}%")
    return number / 100


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of Mann-Whitney U, normal approximation with tie and continuity corrections.

    Rank-based, so a few slow outliers (a busy machine) cannot fake a shift of the whole
    distribution. Matches scipy.stats.mannwhitneyu(a, b, method="asymptotic"), without scipy.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n1, n2 = x.size, y.size
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples must be non-empty")
    _, inverse, counts = np.unique(np.concatenate([x, y]), return_inverse=True, return_counts=True)
    mean_ranks = np.cumsum(counts) - (counts - 1) / 2  # tied values share the mean of their ranks
    u1 = float(mean_ranks[inverse.ravel()[:n1]].sum()) - n1 * (n1 + 1) / 2
    n = n1 + n2
    variance = n1 * n2 / 12 * ((n + 1) - float((counts**3 - counts).sum()) / (n * (n - 1)))
    if variance <= 0:  # every sample equal: no evidence of any difference
        return 1.0
    z = (max(u1, n1 * n2 - u1) - n1 * n2 / 2 - 0.5) / math.sqrt(variance)
    return min(1.0, math.erfc(z / math.sqrt(2)))  # 2 * (1 - Phi(z))


@dataclass(frozen=True)
class Row:
    """One batch size measured in both files."""

    series: str
    batch_size: int
    base_mbps: float
    new_mbps: float
    ratio: float  # new / base MB/s: below 1 is slower
    p_value: float | None  # None for the p10-p90 overlap method and for too few samples
    method: str  # MANN_WHITNEY, OVERLAP or TOO_FEW
    significant: bool  # p < alpha, or the p10-p90 intervals apart
    verdict: str  # SLOWER, FASTER, NO_CHANGE, or INCONCLUSIVE (a change past the threshold, not significant)
    busy: tuple[str, ...] = ()  # "base", "new": the sides measured on a busy machine, whose verdict may show the machine
    unlike: bool = False  # BASE and NEW made unlike copies (unified memory, a GPU's link, host to host): no regression test


@dataclass(frozen=True)
class Unmatched:
    """A series, or one batch size of a matched series, measured in only one file."""

    series: str
    batch_size: int | None  # None: the whole series
    only_in: str  # "base" or "new"


@dataclass(frozen=True)
class Failure:
    """A series, or one batch size, measured in BASE that failed in NEW: a regression, not a gap."""

    series: str
    batch_size: int | None  # None: the whole series
    error: str


@dataclass
class Comparison:
    threshold: float
    alpha: float
    rows: list[Row] = field(default_factory=list)
    unmatched: list[Unmatched] = field(default_factory=list)
    failed: list[Failure] = field(default_factory=list)
    busy: dict[str, list[str]] = field(default_factory=lambda: {"base": [], "new": []})  # compared points measured on a busy machine
    differences: list[Difference] = field(default_factory=list)  # recorded fields whose values differ between the files
    damaged: dict[str, list[str]] = field(default_factory=lambda: {"base": [], "new": []})  # points left out: damaged in the file
    unlike: dict[str, list[str]] = field(default_factory=dict)  # path -> the kinds of copy BASE and NEW make, where they differ
    labels: tuple[str, str] = ("BASE", "NEW")  # each file's short name (pairs.file_names), as report and plot give it

    @property
    def slower(self) -> list[Row]:
        return self._with(SLOWER)

    @property
    def faster(self) -> list[Row]:
        return self._with(FASTER)

    @property
    def regressed(self) -> bool:
        """What makes the exit status 1: a point significantly slower, or one that failed in NEW. A point
        between unlike copies (an M1's unified memory against a GPU's link) is reported, never a regression."""
        return any(not r.unlike for r in self.slower) or bool(self.failed)

    def fails(self, fail_on: str = FAIL_ON_SLOWER) -> bool:
        """Whether a CI job should fail (exit 1): on a regression, or with `fail_on` "change" on any
        significant change, faster ones too (a speed-up nobody expected is news as well)."""
        return self.regressed or (fail_on == FAIL_ON_CHANGE and any(not r.unlike for r in self.faster))

    @property
    def paths(self) -> list[PathChange]:
        return path_changes(self.rows, self.failed)

    @property
    def busy_points(self) -> dict[str, Any]:
        """How many compared points each side measured on a busy machine, and whether that was every one."""
        base, new = len(self.busy["base"]), len(self.busy["new"])
        every = bool(self.rows) and all(r.busy for r in self.rows)
        return {"base": base, "new": new, "compared": len(self.rows), "every_point": every}

    def _with(self, verdict: str) -> list[Row]:
        return [r for r in self.rows if r.verdict == verdict]

    def counts(self) -> dict[str, int]:
        """Each verdict's count over the like pairs: a point between unlike copies (an M1's unified memory
        against a GPU's link) is no slowdown or speed-up of one copy, and is counted apart (unlike_rows)."""
        return {v: sum(not r.unlike for r in self._with(v)) for v in (SLOWER, FASTER, NO_CHANGE, INCONCLUSIVE)}

    @property
    def unlike_rows(self) -> list[Row]:
        return [r for r in self.rows if r.unlike]

    def summary(self) -> str:
        """One line: the points between unlike copies first, where there are any (so no count of slower or
        faster is read as theirs), then each verdict's count over the like pairs, failures and unmatched points."""
        line = ", ".join(f"{n} {v}" for v, n in self.counts().items()) + f" at threshold {self.threshold * 100:g}%"
        unlike = len(self.unlike_rows)
        if unlike:
            like = f"like pairs: {line}" if unlike < len(self.rows) else "no like pair compared"
            line = f"{unlike} {'point' if unlike == 1 else 'points'} between unlike copies (reported, not counted as slower or faster); {like}"
        line += f"; {len(self.failed)} failed in NEW" if self.failed else ""
        return line + (f"; {len(self.unmatched)} measured in one file only" if self.unmatched else "")


JUMP = 1.5  # neighbouring ratios this many times apart split a run: a cliff that moved or went stays in view
MOST_RUNS = 4  # runs a path's sentence names; the rest are counted, and every batch is in the tables
UNTESTED = "untested"  # a side keeps no raw samples (a peer's figures): a ratio of medians, no test
STATES = {NO_CHANGE: "unchanged", UNTESTED: "untested (no raw samples)"}  # a verdict as "B is ..." says it


@dataclass(frozen=True)
class Run:
    """Neighbouring batches of one path that share a verdict: "3.52–12.90× faster from batch 171 to 512"."""

    verdict: str
    batches: tuple[int, ...]
    low: float  # the smallest and largest ratio (new / base MB/s) in the run
    high: float
    busy: int = 0  # points of the run measured on a busy machine, on either side

    def describe(self, place: Callable[[int], str] | None = None) -> str:
        """`place` names a batch where batches mean nothing to the reader (a peer's buffers: "512 MiB")."""
        first, last = self.batches[0], self.batches[-1]
        if place is None:
            span = f"at batch {first}" if first == last else f"from batch {first} to {last}"
        else:
            span = f"at {place(first)}" if first == last else f"from {place(first)} to {place(last)}"
        ratios = _ratio_range(self.low, self.high)
        if self.verdict in (SLOWER, FASTER):
            text = f"{ratios} {self.verdict} {span}"
        else:  # "B is unchanged from batch 1 to 8 (0.99–1.02×)"
            text = f"{STATES.get(self.verdict, self.verdict)} {span} ({ratios})"
        return text + (f" ({self.busy} busy)" if self.busy else "")

    @property
    def strength(self) -> float:
        """How far the run strays from no change, either way: the order a sentence names runs in."""
        return max((abs(math.log(x)) for x in (self.low, self.high) if x > 0 and math.isfinite(x)), default=0.0)


@dataclass(frozen=True)
class PathChange:
    """One path's change from BASE to NEW: its runs, the largest change each way, and whether it regressed."""

    path: str
    runs: list[Run]
    fastest: Row | None  # the largest significant speed-up, at its batch
    slowest: Row | None  # the largest significant slowdown
    failed: tuple[int | None, ...] = ()  # batches measured in BASE that failed in NEW; None: the whole series

    @property
    def regressed(self) -> bool:
        return self.slowest is not None or bool(self.failed)

    @property
    def changed(self) -> bool:
        return self.fastest is not None or self.regressed

    def sentence(self, new: str = "NEW", place: Callable[[int], str] | None = None) -> str:
        """What a maintainer can quote: the runs, strongest change first, then the largest change each way."""
        order = {SLOWER: 0, FASTER: 0, NO_CHANGE: 1, INCONCLUSIVE: 2, UNTESTED: 3}
        ranked = sorted(self.runs, key=lambda r: (order[r.verdict], -r.strength))
        parts = [run.describe(place) for run in ranked[:MOST_RUNS]]
        rest = ranked[MOST_RUNS:]
        if rest:
            parts.append(f"{len(rest)} more {'run' if len(rest) == 1 else 'runs'} (see the tables)")
        text = f"{new} is " + "; ".join(parts) if parts else "no batch measured in both"
        spot = place or (lambda batch: f"batch {batch}")
        largest = [f"{row.ratio:.2f}× {row.verdict} at {spot(row.batch_size)}" for row in (self.fastest, self.slowest) if row]
        text += f". Largest change: {', '.join(largest)}" if largest else ""
        if None in self.failed:
            text += f". The whole series failed in {new}"
        elif self.failed:
            text += f". Failed in {new} at {', '.join(spot(b) for b in self.failed if b is not None)}, measured before"
        return text + "."


def runs(rows: Sequence[Row], gaps: Sequence[int] = ()) -> list[Run]:
    """One path's rows (in batch order) as runs of neighbouring batches that share a verdict, each run
    split again where the ratio jumps JUMP times or more between neighbours, or where a batch between
    them (`gaps`: one that failed) has no ratio: no run spans a failure."""
    found: list[list[Row]] = []
    for row in rows:
        last = found[-1][-1] if found else None
        jump = last is not None and _jumped(last.ratio, row.ratio)
        jump = jump or (last is not None and any(last.batch_size < gap < row.batch_size for gap in gaps))
        if last is not None and last.verdict == row.verdict and not jump:
            found[-1].append(row)
        else:
            found.append([row])
    made = []
    for group in found:
        ratios = [r.ratio for r in group if math.isfinite(r.ratio)] or [math.nan]
        made.append(Run(group[0].verdict, tuple(r.batch_size for r in group), min(ratios), max(ratios), sum(1 for r in group if r.busy)))
    return made


def path_changes(rows: Sequence[Row], failed: Sequence[Failure] = ()) -> list[PathChange]:
    """Each path's runs and extremes, in the order the rows name the paths."""
    by_path: dict[str, list[Row]] = {}
    for row in rows:
        by_path.setdefault(row.series, []).append(row)
    for failure in failed:
        by_path.setdefault(failure.series, [])
    changes = []
    for path, mine in by_path.items():
        mine = sorted(mine, key=lambda r: r.batch_size)
        faster = [r for r in mine if r.verdict == FASTER and math.isfinite(r.ratio)]
        slower = [r for r in mine if r.verdict == SLOWER and math.isfinite(r.ratio)]
        lost = tuple(sorted((f.batch_size for f in failed if f.series == path), key=lambda b: -1 if b is None else b))
        changes.append(PathChange(path, runs(mine, [b for b in lost if b is not None]),
                                  max(faster, key=lambda r: r.ratio, default=None), min(slower, key=lambda r: r.ratio, default=None),
                                  lost))  # fmt: skip
    return changes


def _jumped(before: float, after: float) -> bool:
    if not (before > 0 and after > 0 and math.isfinite(before) and math.isfinite(after)):
        return False
    return max(before, after) / min(before, after) >= JUMP


def _ratio_range(low: float, high: float) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return "-×"
    return f"{low:.2f}×" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}–{high:.2f}×"


def compare_point(series: str, base: Point, new: Point, threshold: float = 0.05, alpha: float = 0.01) -> Row:
    """Median MB/s of each side, their ratio, and a verdict from the raw times."""
    b = point_stats(base.times_s, base.bytes, base.batch_size)
    n = point_stats(new.times_s, new.bytes, new.batch_size)
    ratio = n.mbps / b.mbps if 0 < b.mbps < math.inf and n.mbps < math.inf else math.nan
    p_value: float | None = None
    if min(b.n, n.n) >= MIN_RANK_SAMPLES:
        p_value = mann_whitney_u(base.times_s, new.times_s)
        method, significant = MANN_WHITNEY, p_value < alpha
    elif min(b.n, n.n) >= MIN_SAMPLES:
        method, significant = OVERLAP, b.p90_s < n.p10_s or n.p90_s < b.p10_s
    else:
        method, significant = TOO_FEW, False
    past = ratio < 1 - threshold or ratio > 1 + threshold or not math.isfinite(ratio)
    if method == TOO_FEW or (past and not significant):
        verdict = INCONCLUSIVE
    elif past:
        verdict = SLOWER if ratio < 1 else FASTER
    else:
        verdict = NO_CHANGE
    busy = tuple(side for side, point in (("base", base), ("new", new)) if point.busy)
    return Row(series, base.batch_size, b.mbps, n.mbps, ratio, p_value, method, significant, verdict, busy)


def compare(
    base: Result,
    new: Result,
    threshold: float = 0.05,
    alpha: float = 0.01,
    names: tuple[str, str] = ("BASE", "NEW"),
) -> Comparison:
    """Match series by key and points by batch size; test every point measured in both.

    Raises a one-line XferbenchError naming both files (`names`) when no point is in both,
    so a CI gate never passes by comparing nothing.
    """
    for result, name in ((base, names[0]), (new, names[1])):
        tool = (result.environment.get("peer") or {}).get("tool")
        if tool:
            raise XferbenchError(f"{name} holds {tool}'s figures (xferbench import): a peer keeps no raw samples, so there is nothing"
                                 " to test; set it beside a sweep with xferbench report")  # fmt: skip
    base_series, new_series = _measured(base), _measured(new)
    # A series NEW ran and lost (failed with no point) still pairs with BASE's: a regression, not a gap.
    lost = [s for k, s in _by_key(new).items() if s.status == "failed" and k not in new_series]
    comparison = Comparison(threshold, alpha, differences=differences(
        [(base, list(base_series.values())), (new, [*new_series.values(), *lost])]))  # fmt: skip
    comparison.damaged = {"base": damaged_points(base), "new": damaged_points(new)}
    base_label, new_label = file_names([(Path(names[0]), base), (Path(names[1]), new)])
    comparison.labels = (base_label, new_label)
    for found in pair([list(base_series.values()), [*new_series.values(), *lost]], [base.environment, new.environment]):
        series, other = found.members
        if series is None:
            if other is not None and _points(other):
                comparison.unmatched.append(Unmatched(_name(other), None, "new"))
            continue
        if other is None:
            comparison.unmatched.append(Unmatched(_name(series), None, "base"))
            continue
        name = _pair_label(series, other)
        kinds = found.unlike()  # a copy over NVLink-C2C or within unified memory against one over PCIe
        if kinds:
            comparison.unlike[name] = kinds
        if not _points(other):
            comparison.failed.append(Failure(_name(series), None, other.reason or "no point measured"))
            continue
        base_points, new_points = _points(series), _points(other)
        tried = {p.batch_size: p for p in other.points}
        for batch in sorted(base_points.keys() | new_points.keys()):
            if batch in base_points and batch in new_points:
                row = compare_point(name, base_points[batch], new_points[batch], threshold, alpha)
                row = dataclasses.replace(row, unlike=bool(kinds))
                comparison.rows.append(row)
                for side in row.busy:
                    comparison.busy[side].append(f"{name} batch {batch}")
            elif batch in base_points and batch in tried and (tried[batch].status in ("error", DAMAGED) or other.status == "failed"):
                # An error, or a point skipped after its worker died: the run broke where BASE worked.
                comparison.failed.append(Failure(name, batch, tried[batch].error or other.reason or "not measured"))
            else:
                comparison.unmatched.append(Unmatched(name, batch, "base" if batch in base_points else "new"))
    if not comparison.rows and not comparison.failed:
        base_name, new_name = names
        raise XferbenchError(
            f"no matching series between {base_name} and {new_name}: {base_name} has {_names(base_series)};"
            f" {new_name} has {_names(new_series)}; compare runs of the same framework, mode, op, device,"
            " shape and host buffer with a batch size in common"
        )
    return comparison


def compare_files(
    base_path: str | os.PathLike[str], new_path: str | os.PathLike[str], threshold: float = 0.05, alpha: float = 0.01
) -> Comparison:
    """Load both files (a one-line XferbenchError for a bad one) and compare them."""
    return compare(load(base_path), load(new_path), threshold, alpha, (str(base_path), str(new_path)))


def render(comparison: Comparison, base_path: str | os.PathLike[str], new_path: str | os.PathLike[str],
           fail_on: str = FAIL_ON_SLOWER) -> RenderableType:  # fmt: skip
    """The table, the points measured on one side only, each path's change in a sentence, and the
    one-line summary, for the terminal."""
    # pragma: no mutate block (layout: scripts/mutation.sh plants bugs in logic; --json carries the same figures)
    table = Table()
    table.add_column("series", overflow="fold")  # the one column that may wrap: a narrow terminal folds names, not figures
    for name in ("batch", "base", "new", "ratio", "p"):  # short headers: 80 columns hold every figure
        table.add_column(name, justify="right", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    colours = {SLOWER: "bold red", FASTER: "green", NO_CHANGE: "dim", INCONCLUSIVE: "yellow"}
    for row in comparison.rows:
        p = p_text(row.p_value) if row.p_value is not None else "p10–p90 " + ("apart" if row.significant else "overlap")
        p = f"n<{MIN_SAMPLES}" if row.method == TOO_FEW else p
        table.add_row(
            escape(row.series),
            str(row.batch_size),
            rate(row.base_mbps),
            rate(row.new_mbps),
            f"{row.ratio:.3f}" if math.isfinite(row.ratio) else "-",
            p,
            f"[{colours[row.verdict]}]{row.verdict}[/]" + (" (unlike copies)" if row.unlike else "")
            + (f" [yellow](busy: {', '.join(row.busy)})[/]" if row.busy else ""),
        )
    base_name, new_name = comparison.labels  # the title gives each file's label beside its path, for the heading over the sentences
    paths = {"base": str(base_path), "new": str(new_path)}  # a line about what one file holds names the file to open
    titled = [path if label == str(path) else f"{label} ({path})" for label, path in ((base_name, base_path), (new_name, new_path))]
    lines: list[RenderableType] = [Text(f"{titled[0]} → {titled[1]}: median MB/s", style="bold")]  # a title would wrap at the table's width
    lines += [Text(line, style="bold yellow") for line in unlike_lines(comparison)]  # before any verdict is read as a change
    lines += [Text(line, style="cyan") for line in difference_lines(comparison.differences)]
    lines.append(table)
    for failure in comparison.failed:
        where = failure.series if failure.batch_size is None else f"{failure.series} batch {failure.batch_size}"
        lines.append(Text(f"FAILED in {new_path}, measured in {base_path}: {where}: {failure.error}", style="bold red"))
    for item in comparison.unmatched:
        where = item.series if item.batch_size is None else f"{item.series} batch {item.batch_size}"
        lines.append(Text(f"only in {paths[item.only_in]}: {where}", style="yellow"))
    for side, points in comparison.damaged.items():
        if points:
            listed = "; ".join(points[:3]) + (f"; and {len(points) - 3} more" if len(points) > 3 else "")
            lines.append(Text(f"left out, damaged in {paths[side]}: {listed}", style="bold yellow"))
    if any(r.method == TOO_FEW for r in comparison.rows):
        lines.append(Text(f"inconclusive where a side has fewer than {MIN_SAMPLES} samples: sweep with --min-samples {MIN_RANK_SAMPLES} or more", style="yellow"))
    for side, points in comparison.busy.items():
        if points:
            listed = ", ".join(points[:3]) + (f" and {len(points) - 3} more" if len(points) > 3 else "")
            lines.append(Text(f"warning: {paths[side]} was measured on a busy machine at {listed}: other processes"
                              " used a quarter of its CPUs or more, so those verdicts may show the machine, not the change",
                              style="bold yellow"))  # fmt: skip
    if comparison.slower or comparison.faster:
        lines.append(Text(f"note: {CAVEAT}", style="dim"))
    lines.append(Text(f"each path, NEW ({new_name}) against BASE ({base_name}):" if comparison.labels != ("BASE", "NEW")
                      else "each path, NEW against BASE:", style="bold"))  # fmt: skip
    for change in comparison.paths:
        unlike = change.path in comparison.unlike
        colour = "bold red" if change.regressed and not unlike else "green" if change.changed else "dim"
        lines.append(Text(f"  {change.path}: {unlike_prefix(comparison.unlike.get(change.path))}{change.sentence('NEW')}", style=colour))
    colour = "bold red" if comparison.fails(fail_on) else "bold green"
    lines.append(Text(comparison.summary() + f" (alpha {comparison.alpha:g})", style=colour))
    return Group(*lines)


def unlike_lines(comparison: Comparison) -> list[str]:
    """A line per path whose BASE and NEW make unlike copies: what each copies, and that its points are
    neither slower nor faster, only the time until a batch is usable on each device."""
    lines = []
    for path, kinds in comparison.unlike.items():
        points = sum(1 for r in comparison.rows if r.series == path)
        lines.append(f"unlike copies: {path}: BASE makes {kinds[0]}, NEW {kinds[1]}; its {points} {'point' if points == 1 else 'points'}"
                     " compare the time until a batch is usable on each device and are not counted as slower or faster")  # fmt: skip
    return lines


def unlike_prefix(kinds: Sequence[str] | None) -> str:
    """Before a path's sentence where BASE and NEW make unlike copies: what the ratio compares."""
    if not kinds:
        return ""
    return (f"unlike copies (BASE: {kinds[0]}; NEW: {kinds[1]}), so the ratio compares the time until a batch is"
            " usable on each device: ")


def difference_lines(found: Sequence[Difference], most: int = 8) -> list[str]:
    """What differs between BASE and NEW, a field a line (BASE → NEW), or that nothing recorded does."""
    if not found:
        return ["what differs: no recorded difference (same device, versions, settings and host)"]
    lines = [f"what differs: {d.field}: {d.values[0]} → {d.values[1]}" for d in found[:most]]
    if len(found) > most:
        lines.append(f"what differs: and {len(found) - most} more fields (xferbench report lists them all)")
    return lines


def parse_alpha(text: str) -> float:
    """The rank test's significance level: a probability strictly between 0 and 1, such as 0.01."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 1:
        raise XferbenchError(f"--alpha {text!r}: give a probability between 0 and 1, such as 0.01"
                             " (a difference counts when the rank test's p-value is below it)")  # fmt: skip
    return value


def to_dict(comparison: Comparison, base_path: str | os.PathLike[str], new_path: str | os.PathLike[str],
            fail_on: str = FAIL_ON_SLOWER) -> dict[str, Any]:  # fmt: skip
    """The comparison for scripts and CI (compare --json): every verdict, p-value and ratio, each path's
    runs, and what differs."""

    def number(value: float | None) -> float | None:
        return value if value is not None and math.isfinite(value) else None

    def extreme(row: Row | None) -> dict[str, Any] | None:
        return None if row is None else {"batch_size": row.batch_size, "ratio": number(row.ratio)}

    paths = [{"path": c.path, "sentence": unlike_prefix(comparison.unlike.get(c.path)) + c.sentence("NEW"), "regressed": c.regressed and (c.path not in comparison.unlike or bool(c.failed)),
              "unlike": comparison.unlike.get(c.path, []),
              "runs": [{"verdict": r.verdict, "batch_sizes": list(r.batches), "ratio_min": number(r.low),
                        "ratio_max": number(r.high), "busy": r.busy} for r in c.runs],
              "most_faster": extreme(c.fastest), "most_slower": extreme(c.slowest), "failed": list(c.failed)}
             for c in comparison.paths]  # fmt: skip

    return {
        "base": str(base_path),
        "new": str(new_path),
        "threshold": comparison.threshold,
        "alpha": comparison.alpha,
        "regressed": comparison.regressed,
        "fail_on": fail_on,
        "exit_status": 1 if comparison.fails(fail_on) else 0,
        "summary": comparison.summary(),
        "counts": comparison.counts(),  # over the like pairs
        "unlike_copies": {"points": len(comparison.unlike_rows), "paths": list(comparison.unlike)},
        "busy_points": comparison.busy_points,
        "paths": paths,
        "differences": [{"field": d.field, "base": d.values[0], "new": d.values[1]} for d in comparison.differences],
        "rows": [{"series": r.series, "batch_size": r.batch_size, "base_mbps": number(r.base_mbps),
                  "new_mbps": number(r.new_mbps), "ratio": number(r.ratio), "p_value": r.p_value, "method": r.method,
                  "significant": r.significant, "verdict": r.verdict, "busy": list(r.busy), "unlike": r.unlike}
                 for r in comparison.rows],
        "failed": [dataclasses.asdict(f) for f in comparison.failed],
        "unmatched": [dataclasses.asdict(u) for u in comparison.unmatched],
        "damaged": comparison.damaged,
        "caveat": CAVEAT,
    }  # fmt: skip


def p_text(value: float) -> str:
    # Far out in the tails the normal approximation is no longer accurate: the digits would mislead.
    return "<1e-6" if value < 1e-6 else f"{value:.2g}"


def _measured(result: Result) -> dict[SeriesKey, Series]:
    """Series with at least one measured point, by key."""
    return {key: s for key, s in _by_key(result).items() if _points(s)}


def _by_key(result: Result) -> dict[SeriesKey, Series]:
    """Every series by key; where a key repeats, the first with a measured point wins, else the first."""
    found: dict[SeriesKey, Series] = {}
    for series in result.series:
        if series.key not in found or (_points(series) and not _points(found[series.key])):
            found[series.key] = series
    return found


def _points(series: Series) -> dict[int, Point]:
    return {p.batch_size: p for p in series.ok_points() if p.times_s}


def _name(series: Series) -> str:
    return f"{series.label()} ({'x'.join(map(str, series.shape))})"


def _pair_label(base: Series, new: Series) -> str:
    """The series' label; where the two ran on different device ids, both: path@cuda:0→cuda:1."""
    if base.device == new.device:
        return base.label()
    return f"{path_name(base)}@{base.device}→{new.device}"


def _names(found: dict[SeriesKey, Series]) -> str:
    return ", ".join(_name(s) for s in found.values()) or "no measured series"


__all__ = ["FAIL_ON", "Comparison", "Failure", "PathChange", "Row", "Run", "Unmatched", "compare", "compare_files", "compare_point", "difference_lines",
           "mann_whitney_u", "p_text", "parse_alpha", "parse_threshold", "path_changes", "render", "runs", "to_dict"]  # fmt: skip
