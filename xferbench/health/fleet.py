"""`xferbench fleet`: many nodes' result and check files read as one table, with stragglers found.

Each node runs its own `xferbench check` (or sweep) as an independent job and writes its own file;
this reads them all and measures nothing. A row per GPU: host, GPU, link, the raw pinned ceiling,
each other path's MB/s at the same batch, the check's verdict. A GPU is flagged when:
- straggler: its ceiling is below its group's median by more than k median absolute deviations
  (scaled to a standard deviation) and by more than a share of the median, the group being the GPUs
  of the same model and maximum link measured the same way (batch bytes, timing method); a group
  needs MIN_GROUP GPUs to be judged at all;
- link below max: its link ran below its maximum generation or width in most samples while data moved;
- check FAIL (and which checks), or a check that could judge nothing; replays that rose are noted;
- no raw ceiling, or a file cut short (a node killed mid-run).
A peer's imported file (nvbandwidth, bandwidthTest) is read the same way, its copy from pinned memory
standing for the ceiling; it is grouped apart from xferbench's own figures, as measured otherwise.
Only CUDA devices are rows. Where one host and device appear in several files, the newest counts
and the others are listed as superseded.
"""

from __future__ import annotations

import collections
import csv
import io
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xferbench.health.check import best_point, checked
from xferbench.core.verdict import FAIL, NA, WARN
from xferbench.core import c2c
from xferbench.core.environment import device_entry, link_readings
from xferbench.core.errors import XferbenchError
from xferbench.reading.peers import PEER_CEILING_RUNS, PEER_CEILINGS
from xferbench.core.results import DAMAGED, Result, Series, damaged_points, load
from xferbench.core.telemetry import is_raw_reference, loaded_states, ran_below_max

MAD_K = 3.0  # how many scaled MADs below the median a straggler lies, at least
MAD_SCALE = 1.4826  # MAD x this estimates the standard deviation of normal data
MIN_SHARE = 0.10  # ...and by at least this share of the median: a tight group's tiny spread flags nothing
MIN_GROUP = 3  # GPUs of one model and link needed before any of them can be called a straggler


@dataclass
class Row:
    host: str
    file: str
    device: str
    device_name: str
    link: str  # the link as it ran, with its maximum where it ran below it; "-" where NVML said nothing
    link_max: str  # the maximum generation and width: with the model, the group a GPU is judged in
    batch_size: int | None
    ceiling_mbps: float | None  # the raw pinned copy at its largest batch, streamed where it ran
    measured: str = "-"  # how the ceiling was measured (bytes, timing method): GPUs are judged only against alike
    created: str = ""  # when the file's run started: the newest of a host's files counts
    paths: dict[str, float | None] = field(default_factory=dict)  # other paths' MB/s at the same batch
    verdict: str = "-"  # the check's PASS or FAIL; "-" for a sweep file
    flags: list[str] = field(default_factory=list)
    source: str = "xferbench"  # who measured: xferbench, or the peer tool whose output was imported
    not_judged: str = ""  # why the GPU is not judged, and what to run: a peer's file without that peer's ceiling figure


@dataclass
class Fleet:
    rows: list[Row]
    unreadable: list[tuple[str, str]]  # (path, why)
    groups: dict[tuple[str, str, str], tuple[float, float, int]]  # (model, link max, measured) -> (median, MAD, GPUs)
    min_group: int = MIN_GROUP
    superseded: list[tuple[str, str]] = field(default_factory=list)  # (path, the newer file that counts instead)
    damaged: list[tuple[str, str]] = field(default_factory=list)  # (path, a point left out: "series batch N (why)")

    @property
    def flagged(self) -> list[Row]:
        return [row for row in self.rows if row.flags]

    @property
    def not_judged(self) -> list[Row]:
        """GPUs with nothing to judge them by and nothing flagged: not counted as failing, nor as passing."""
        return [row for row in self.rows if row.not_judged and not row.flags]

    @property
    def gpus(self) -> int:
        """GPUs, not rows: one GPU measured by xferbench and by a peer is one GPU."""
        return len({(row.host, row.device) for row in self.rows})


def find_files(inputs: Sequence[Path]) -> list[Path]:
    """The files given, and every *.json under each folder given (sorted); a one-line error for
    an input that does not exist or a folder with no result file in it."""
    found: list[Path] = []
    for item in inputs:
        if item.is_dir():
            inside = sorted(p for p in item.rglob("*.json") if p.is_file())
            if not inside:
                raise XferbenchError(f"{item}: no result files (*.json) in this folder; give the folder the nodes wrote to")
            found += inside
        elif item.exists():
            found.append(item)
        else:
            raise XferbenchError(f"{item}: no such file or folder")
    return list(dict.fromkeys(found))


def _link(series: Series, result: Result) -> tuple[str, str, bool]:
    """The link as it ran, its maximum, and whether it ran below the maximum in most samples while
    data moved (telemetry.ran_below_max: a sample taken while the link woke from idle is not enough)."""
    device = device_entry(result.environment, series.device)
    if c2c.is_c2c(device):  # a Grace node: NVML's PCIe readings are not its host link
        return c2c.C2C, c2c.C2C, False
    readings = link_readings(device, series.link)
    maxima = [(g, w) for source, g, w in readings if source != "under load"]
    top = f"Gen{maxima[0][0]} x{maxima[0][1]}" if maxima else "-"
    summary = (series.link or {}).get("summary") or {}
    gen, width = summary.get("gen_under_load"), summary.get("width_under_load")
    if not (gen and width):
        return (f"max {top}" if maxima else "-"), top, False
    below = ran_below_max(series, result.environment) is not None
    if not below:
        return f"Gen{gen[1]} x{width[1]}", top, False
    # What it ran at in most samples while data moved: one sample taken as the link woke from idle
    # (Gen1) is not how it ran. ran_below_max found such samples, so there is at least one.
    (ran_gen, ran_width), _ = collections.Counter(loaded_states(series.link or {})).most_common(1)[0]
    return f"Gen{ran_gen} x{ran_width} (max {top})", top, True


def _check_flags(device_check: dict[str, Any]) -> list[str]:
    """What a device's check said beyond PASS: which checks failed, replays that rose, nothing judged."""
    findings = device_check.get("findings") or []
    failed = [f["name"] for f in findings if f.get("status") == FAIL]
    flags = [f"check FAIL: {', '.join(failed)}"] if failed else []
    if device_check.get("status") == NA:
        flags.append("check judged nothing")
    flags += ["replays rose" for f in findings if f.get("name") == "replays" and f.get("status") == WARN]
    return flags


def rows_of(path: Path, result: Result) -> list[Row]:
    """A row per CUDA device of the file that a raw ceiling or a path measured."""
    host = str(result.environment.get("host") or path.stem)
    checks = {d.get("device"): d for d in (result.check or {}).get("devices", [])}
    usable = [s for s in result.series if checked(s) and s.status != "skipped" and s.device.startswith("cuda")]
    peer = (result.environment.get("peer") or {}).get("tool")  # a peer's figures (xferbench import): its own ceiling
    ceiling = (lambda s: (s.framework, s.mode) in PEER_CEILINGS) if peer else is_raw_reference
    rows = []
    for device in dict.fromkeys(s.device for s in usable):
        on_device = [s for s in usable if s.device == device]
        raw = best_point([s for s in on_device if ceiling(s)])
        first = raw[0] if raw else on_device[0]
        link, link_max, below = _link(first, result)
        batch = raw[1].batch_size if raw else None
        measured = f"{raw[1].bytes / 1e6:,.1f} MB {raw[0].method}{f' ({peer})' if peer else ''}" if raw else "-"
        row = Row(host, str(path), device, first.device_name or device, link, link_max, batch, raw[1].mbps if raw else None,
                  measured, result.created, source=peer or "xferbench")  # fmt: skip
        for series in on_device:
            if ceiling(series):
                continue
            point = next((p for p in series.ok_points() if p.batch_size == batch), None) if batch else None
            label = series.label().rsplit("@", 1)[0]
            row.paths[label] = point.mbps if point else row.paths.get(label)
        if result.check is not None:
            device_check = checks.get(device, {})
            row.verdict = str(device_check.get("status", "-")).upper()
            row.flags += _check_flags(device_check)
            row.flags += [f"node check FAIL: {f['figure']}" for f in (checks.get("node") or {}).get("findings", [])]
        if below:
            row.flags.append("link below max")
        if raw is None:
            torn = any(p.status == DAMAGED for s in on_device if ceiling(s) for p in s.points)
            if torn or not peer:
                row.flags.append("raw ceiling damaged in the file" if torn else "no raw ceiling measured")
            else:  # a peer run that never measured its ceiling (TransferBench's p2p preset by default): nothing failed
                row.not_judged = _missing_ceiling(peer, device)
        if result.status != "complete":
            row.flags.append(f"file {result.status}: the run did not finish")
        rows.append(row)
    return rows


def _missing_ceiling(peer: str, device: str) -> str:
    """Why a peer's GPU is not judged, and what to run for the figure it would be judged by."""
    mode, run = PEER_CEILING_RUNS.get(peer, ("", ""))
    gpu = device.split(":")[-1]
    said = f"no {peer} pinned host-to-device figure{f' ({mode})' if mode else ''} in the file"
    return f"{said}; {run.format(gpu=gpu)}" if run else said


def stragglers(rows: list[Row], k: float = MAD_K, share: float = MIN_SHARE, min_group: int = MIN_GROUP
               ) -> dict[tuple[str, str, str], tuple[float, float, int]]:  # fmt: skip
    """Flag each row whose ceiling lies below its group's median by more than k scaled MADs and by
    more than `share` of the median; return each group's median, MAD and size."""
    groups: dict[tuple[str, str, str], list[Row]] = {}
    for row in rows:
        if row.ceiling_mbps:
            groups.setdefault((row.device_name, row.link_max, row.measured), []).append(row)
    found = {}
    for key, members in groups.items():
        values = [r.ceiling_mbps or 0.0 for r in members]
        median = statistics.median(values)
        mad = statistics.median(abs(v - median) for v in values)
        found[key] = (median, mad, len(members))
        if len(members) < min_group:
            continue
        for row in members:
            value = row.ceiling_mbps or 0.0
            if value < median - k * MAD_SCALE * mad and value < (1 - share) * median:
                row.flags.append(f"straggler: {value / median:.0%} of its group's median")
    return found


def read_fleet(inputs: Sequence[Path], k: float = MAD_K, share: float = MIN_SHARE, min_group: int = MIN_GROUP) -> Fleet:
    rows: list[Row] = []
    unreadable: list[tuple[str, str]] = []
    damaged: list[tuple[str, str]] = []
    for path in find_files(inputs):
        try:
            result = load(path)
        except XferbenchError as error:
            unreadable.append((str(path), str(error).removeprefix(f"{path}: ")))
            continue
        damaged += [(str(path), point) for point in damaged_points(result)]
        found = rows_of(path, result)
        if not found:
            unreadable.append((str(path), "no CUDA series measured anything in it"))
        rows += found
    if not rows:
        listed = "; ".join(f"{p}: {why}" for p, why in unreadable[:3])
        raise XferbenchError(f"no GPU figures in {len(unreadable)} file(s): {listed}")
    newest: dict[tuple[str, str, str], Row] = {}
    for row in rows:  # a host checked twice (a repeated job, a prolog's file per job) counts once per tool: its newest run
        key = (row.host, row.device, row.source)
        if key not in newest or row.created > newest[key].created:
            newest[key] = row
    kept = [row for row in rows if newest[(row.host, row.device, row.source)] is row]
    superseded = list(dict.fromkeys((row.file, newest[(row.host, row.device, row.source)].file) for row in rows if row not in kept))
    return Fleet(kept, unreadable, stragglers(kept, k, share, min_group), min_group, superseded, damaged)


def _paths(fleet: Fleet) -> list[str]:
    return list(dict.fromkeys(label for row in fleet.rows for label in row.paths))


def table_rows(fleet: Fleet) -> tuple[list[str], list[list[str]]]:
    """The header and the cells, shared by the terminal, Markdown and CSV."""
    paths = _paths(fleet)
    header = ["host", "GPU", "link", "batch", "raw ceiling MB/s", *[f"{p} MB/s" for p in paths], "verdict", "flags"]
    rows = []
    for row in sorted(fleet.rows, key=lambda r: (not r.flags, not r.not_judged, r.host, r.device)):
        by = "" if row.source == "xferbench" else f" (by {row.source})"  # a peer's imported figures: a row of their own
        cells = [row.host, f"{row.device} {row.device_name}{by}", row.link, str(row.batch_size or "-"),
                 f"{row.ceiling_mbps:,.0f}" if row.ceiling_mbps else "-",
                 *[f"{row.paths[p]:,.0f}" if row.paths.get(p) else "-" for p in paths], row.verdict,
                 _said(row)]  # fmt: skip
        rows.append(cells)
    return header, rows


def _said(row: Row) -> str:
    """A row's last cell: what is flagged, then why it is not judged; "ok" where neither."""
    return "; ".join([*row.flags, *([f"not judged: {row.not_judged}"] if row.not_judged else [])]) or "ok"


def markdown(fleet: Fleet) -> str:
    # pragma: no mutate block (layout: scripts/mutation.sh plants bugs in logic; --csv carries the same figures)
    header, rows = table_rows(fleet)
    lines = ["## xferbench fleet", "",
             f"{fleet.gpus} GPU(s) from {len({r.file for r in fleet.rows})} file(s); {len(fleet.flagged)} flagged"
             f"{f', {len(fleet.not_judged)} not judged' if fleet.not_judged else ''}.", "",
             "| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |",
             *("| " + " | ".join(c.replace("|", "/") for c in cells) + " |" for cells in rows), ""]  # fmt: skip
    lines += ["Groups (GPUs of one model and maximum link, measured alike), by which stragglers are judged:", ""]
    lines += [f"- {model}, {link}, {measured}: {n} GPU(s), median {median:,.0f} MB/s, MAD {mad:,.0f}"
              + ("" if n >= fleet.min_group else ", too few to judge")
              for (model, link, measured), (median, mad, n) in fleet.groups.items()]  # fmt: skip
    if fleet.unreadable:
        lines += ["", "Files not read:", "", *(f"- {path}: {why}" for path, why in fleet.unreadable)]
    if fleet.damaged:
        lines += ["", "Points left out, damaged in their file:", "", *(f"- {path}: {point}" for path, point in fleet.damaged)]
    if fleet.superseded:
        lines += ["", "Older files of the same host and GPU, not counted:", "",
                  *(f"- {old} (newer: {new})" for old, new in fleet.superseded)]  # fmt: skip
    return "\n".join(lines) + "\n"


def to_csv(fleet: Fleet) -> str:
    """One line per GPU; numbers as numbers (MB/s unformatted), for a spreadsheet or pandas."""
    paths = _paths(fleet)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["host", "file", "device", "device_name", "link", "link_max", "batch_size", "raw_ceiling_mbps",
                     *[f"{p} mbps" for p in paths], "verdict", "flags", "not_judged"])  # fmt: skip
    for row in fleet.rows:
        writer.writerow([row.host, row.file, row.device, row.device_name, row.link, row.link_max, row.batch_size or "",
                         row.ceiling_mbps or "", *[row.paths.get(p) or "" for p in paths], row.verdict, "; ".join(row.flags),
                         row.not_judged])  # fmt: skip
    return buffer.getvalue()


def figure(fleet: Fleet):  # type: ignore[no-untyped-def]
    """Every GPU's raw ceiling, a bar each, grouped by model and link; flagged GPUs in red, each
    group's median as a line."""
    # pragma: no mutate block (drawing: scripts/mutation.sh plants bugs in logic; a figure is checked by eye)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    measured = sorted((r for r in fleet.rows if r.ceiling_mbps), key=lambda r: (r.device_name, r.link_max, r.measured, r.host, r.device))
    fig, ax = plt.subplots(figsize=(8, max(2.5, 0.28 * len(measured) + 1.2)))
    names = [f"{r.host} {r.device}" for r in measured]
    values = [(r.ceiling_mbps or 0) / 1e3 for r in measured]
    ax.barh(names, values, color=["tab:red" if r.flags else "tab:blue" for r in measured])
    for (model, link, how), (median, _, _) in fleet.groups.items():
        at = [i for i, r in enumerate(measured) if (r.device_name, r.link_max, r.measured) == (model, link, how)]
        ax.plot([median / 1e3] * 2, [at[0] - 0.4, at[-1] + 0.4], color="black", linewidth=1)
    ax.invert_yaxis()
    ax.set_xlabel("raw pinned host-to-device copy, GB/s (10^9 B/s)")
    ax.set_title("xferbench fleet: flagged GPUs in red, each group's median as a line", fontsize=10)
    fig.tight_layout()
    return fig


__all__ = ["Fleet", "Row", "find_files", "figure", "markdown", "read_fleet", "rows_of", "stragglers", "table_rows", "to_csv"]
