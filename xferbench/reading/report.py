"""A Markdown report for a bug report, from result files only: environment, summary, MB/s side by side and every point.

GitHub renders it (GFM tables, collapsible per-batch detail) and it still reads as plain text.
"""

from __future__ import annotations

import html
import math
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xferbench.reading.display import FAULTY, POOR_FIT, binary_size, measured_directions, noisy_points, published_note, rate, size, staging_chunk_text, uncertain_note
from xferbench.core import c2c, vendors
from xferbench.core.environment import SETTINGS, cpu_ranges, device_entry, gpu_link_facts, pcie_ceiling
from xferbench.core.errors import XferbenchError
from xferbench.reading import pipeline_report
from xferbench.core.concurrency import groups
from xferbench.reading.compare import FASTER, INCONCLUSIVE, JUMP, NO_CHANGE, SLOWER, UNTESTED, Failure, Row, compare_point, p_text, path_changes
from xferbench.reading.pairs import Pair, differences, file_names, framework_version, pair, pair_key, placement
from xferbench.core.results import Point, Result, Selected, Selection, Series, by_bytes, damaged_points, refuse_unless_regular, why_unwritable, write_whole
from xferbench.core.spec import BIDIR, BIDIRECTIONAL, DEVICE_TO_HOST, HOST_TO_DEVICE, HOST_TO_HOST, SIMULATED, STREAMED
from xferbench.core.stats import CLIFF_FRACTION, SATURATION_FRACTION
from xferbench.core.telemetry import (
    RAW_CALLS,
    expected_raw_reference,
    fraction_of_link,
    fraction_of_raw,
    is_raw_reference,
    link_ceiling,
    link_warnings,
    raw_series,
)

MISSING = "—"  # the file does not record it
FAILED = "FAILED"  # measured in the reference file, an error in this one
NA = "n/a"  # it does not apply to this device
ABSENT = "–"  # the series has no measured point at this batch size
BLANK = " "  # an empty cell ("" reads as MISSING): a path named once at the head of its rows
# How to get each raw reference where a run has none: CuPy's cudaMemcpyAsync; HIP's, through its runtime library
RAW_HOW = {"cuda": "CuPy runs: pip install 'xferbench[cupy]' and sweep with -f cuda too",
           "hip": "xferbench calls through HIP's runtime (libamdhip64, in ROCm or PyTorch for ROCm): sweep with -f hip too"}  # fmt: skip

# The theoretical per-direction rate of a device's host link (PCIe, or NVLink-C2C on a Grace node): kept in environment.
ceiling_gbps = pcie_ceiling
VENDOR_ROWS = ("vendor", "runtime", "host link")  # shown where a file's device is a GPU


def cell(value: Any) -> str:
    """One GFM table cell: a pipe or newline in a value (a host name, an error) must not break the table."""
    text = MISSING if value is None or value == "" else str(value)
    return " ".join(text.split()).replace("|", "\\|")


def table(header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool] = ()) -> list[str]:
    separator = ["---:" if i < len(right) and right[i] else "---" for i in range(len(header))]
    return ["| " + " | ".join(cell(c) for c in row) + " |" for row in (header, separator, *rows)]


# What each figure a peer printed is, by the program that printed it (the first word of the series'
# params["tool"]: TransferBench's rows stay TransferBench's when rocm_bandwidth_test 2.x runs them) and
# the statistic its importer records (params["statistic"]). {samples} and {copies}: the series' params.
PEER_STATISTICS = {
    ("nvbandwidth", "median"): "the median of {samples} sample{s}, each a run of {copies} copies between two CUDA events",
    ("nvbandwidth", "mean"): "the mean of {samples} sample{s} (-m), each a run of {copies} copies between two CUDA events",
    ("bandwidthTest", "aggregate"): "one aggregate time over {copies} copies",
    ("TransferBench", "mean"): "the mean of its timed iterations",
    ("rocm_bandwidth_test", "min time"): "the fastest of {samples} copies",
    ("rocm_bandwidth_test", "mean"): "the mean of {samples} copies less the slowest",
}  # fmt: skip
OWN_STATISTIC = "the median time of each batch"


def figure_statistic(series: Series) -> str:
    """What one MB/s figure of a series is: xferbench's own, the median time of a batch; a peer's, the
    statistic its tool printed (PEER_STATISTICS), or what its params record where the table lacks it."""
    if not series.is_peer:
        return OWN_STATISTIC
    params = series.params
    tool, statistic = str(params["tool"]).split()[0], params.get("statistic")
    known = PEER_STATISTICS.get((tool, str(statistic)))
    samples, copies = params.get("samples"), params.get("copies_per_sample")
    if known is None:
        said = f"its {statistic}" if statistic else "its statistic not recorded"
        return f"as {tool} printed it ({said})"
    return f"as {tool} printed it: " + known.format(samples=samples, copies=copies, s="s" * (samples != 1))


def statistics_sentence(picks: Sequence[Selected], files: Sequence[tuple[Path, Result]], labels: Sequence[str]) -> str:
    """The opening line's word on what a figure is: for xferbench's own files, the median time of each
    batch; with a peer's file among them, what each file's figures are, file by file."""
    head = "MB/s is 10^6 bytes of uint8 input per second"
    if not any(p.series.is_peer for p in picks):
        return f"{head}, from {OWN_STATISTIC}."
    each = {id(r): list(dict.fromkeys(figure_statistic(p.series) for p in picks if p.result is r)) for _, r in files}
    if len(files) == 1:
        return f"{head}; each figure {' or '.join(each[id(files[0][1])])}."
    said = [f"{label}, {' or '.join(each[id(r)])}" for (_, r), label in zip(files, labels) if each[id(r)]]
    return f"{head}; each figure, file by file: " + "; ".join(said) + "."


def peak_sentence(picks: Sequence[Selected]) -> str:
    """The line under the summary: where peak, saturation and the fit come from. A peer printed one
    figure per size, each the statistic the opening line names: its peak is the highest, and it gives
    no saturation or fit."""
    saturation = f"saturation (the smallest {'size' if by_bytes(picks) else 'batch'} reaching {SATURATION_FRACTION:.0%} of the peak)"
    fit = "latency and asymptotic MB/s from a least-squares fit of time = latency + bytes / bandwidth"
    peers = [p.series.is_peer for p in picks]
    if not any(peers):
        return f"Peak and {saturation} come from the medians; {fit}."
    peer = ("a peer's peak is the highest figure it printed (each the statistic the opening line names); one figure per"
            " size, no time per copy, gives it no saturation, latency or fit")  # fmt: skip
    if all(peers):
        return peer[0].upper() + peer[1:] + "."
    return f"Peak and {saturation} come from the medians in xferbench's series, {fit}; {peer}."


def _files(picks: Sequence[Selected]) -> list[tuple[Path, Result]]:
    """Each file once, in the order given: select() loads every path into its own Result."""
    seen: dict[int, tuple[Path, Result]] = {}
    for pick in picks:
        seen.setdefault(id(pick.result), (pick.path, pick.result))
    return list(seen.values())


def _device_fields(env: dict[str, Any], device_id: str, name: str | None) -> dict[str, str]:
    """The device rows of the environment table; a CPU, MPS or simulated device has no driver or PCIe link."""
    device = device_entry(env, device_id)
    fields = {"device": device.get("name") or name or device_id}
    kind = device_id.split(":")[0]
    if kind not in ("cpu", "sim"):
        found = vendors.describe(device, env)
        fields.update({"vendor": vendors.text(found[vendors.VENDOR]), "runtime": vendors.text(found[vendors.RUNTIME]),
                       "host link": vendors.text(found[vendors.HOST_LINK])})  # fmt: skip
    if kind != "cuda":
        return {**fields, "driver": NA, "CUDA (driver)": NA, "PCIe link": NA, "NUMA node": NA, "CPU affinity": NA}
    nvml = gpu_link_facts(device)  # NVML's, or amdsmi's for an AMD GPU (PyTorch on ROCm names it cuda)

    def link(gen: Any, width: Any) -> str:
        return f"Gen{gen} x{width}" if gen and width else "?"

    pcie = (
        f"current {link(nvml.get('pcie_gen_current'), nvml.get('pcie_width_current'))}"
        f" / max {link(nvml.get('pcie_gen_max'), nvml.get('pcie_width_max'))}"
        if nvml
        else MISSING
    )
    if c2c.is_c2c(device):  # NVML still reads a PCIe link on a Grace node: say it is not the host link
        pcie = f"not the host link ({c2c.C2C})" + (f"; NVML reads {pcie}" if nvml else "")
    numa = nvml.get("numa_node")
    process, ideal = env.get("process_cpus"), nvml.get("cpu_affinity") or nvml.get("numa_cpus")
    affinity = f"process {cpu_ranges(process) if process else '?'}; GPU's ideal CPUs {cpu_ranges(ideal) if ideal else '?'}"
    return {**fields, "driver": device.get("driver") or MISSING, "CUDA (driver)": device.get("cuda_driver") or MISSING,
            "PCIe link": pcie, "NUMA node": MISSING if numa is None else str(numa),
            "CPU affinity": affinity if process or ideal else MISSING}  # fmt: skip


def environment_table(picks: Sequence[Selected], files: list[tuple[Path, Result]], labels: list[str]) -> list[str]:
    """One column per file; the device rows describe the devices its picked series ran on."""
    columns: list[dict[str, str]] = []
    frameworks: dict[str, None] = {}
    for path, result in files:
        env = result.environment
        mine = [p.series for p in picks if p.result is result]
        ids = list(dict.fromkeys(s.device for s in mine))
        ids = [d for d in ids if d != "cpu"] or ids
        names = {s.device: s.device_name for s in mine}
        per_device = [_device_fields(env, d, names.get(d)) for d in ids]
        column = {"file": str(path), "host": env.get("host") or MISSING}
        for key in dict.fromkeys(key for fields in per_device for key in fields):
            values = [fields.get(key, NA) for fields in per_device]
            column[key] = "; ".join(f"{d}: {v}" for d, v in zip(ids, values)) if len(ids) > 1 else values[0]
        cores = f" ({env['cpu_count']} logical CPUs)" if env.get("cpu_count") else ""
        memory = env.get("memory_bytes")
        column.update(CPU=f"{env.get('cpu') or MISSING}{cores}", OS=env.get("os") or MISSING,
                      memory=f"{memory / 2**30:,.0f} GiB" if isinstance(memory, (int, float)) else MISSING,
                      Python=env.get("python") or MISSING)  # fmt: skip
        for name in env.get("frameworks") or {}:
            frameworks[name] = None
            column[name] = framework_version(env, name)
        column["numpy"] = (env.get("versions") or {}).get("numpy") or MISSING
        settings = {k: v for k, v in (env.get("settings") or {}).items() if k in SETTINGS}
        column["settings"] = "; ".join(f"{k}={v}" for k, v in settings.items()) or ("none" if "settings" in env else MISSING)
        column.update(xferbench=result.xferbench_version or MISSING, created=result.created, status=result.status)
        columns.append(column)
    shown = [row for row in VENDOR_ROWS if any(column.get(row, NA) != NA for column in columns)]
    rows = ["file", "host", "device", *shown, "driver", "CUDA (driver)", "PCIe link", "NUMA node", "CPU affinity", "CPU", "memory", "OS", "Python",
            *frameworks, "numpy", "settings", "xferbench", "created", "status"]  # fmt: skip
    return table(["field", *labels], [[row, *(c.get(row, MISSING) for c in columns)] for row in rows])


def raw_ceiling(series: Series, result: Result, in_bytes: bool = False) -> str:
    """What the "% of raw ceiling" column divides by on this series' device: the run's own raw copy."""
    reference = raw_series(series, result.series)
    peer = (result.environment.get("peer") or {}).get("tool")
    if reference is None and peer:
        return f"none in this file: it holds {peer}'s own figures (xferbench import), read beside xferbench's in other files"
    if reference is None:
        framework, mode, op = expected_raw_reference(device_entry(result.environment, series.device))
        return f"no raw reference ran ({framework}/{mode}/{op}, the pinned {RAW_CALLS[framework]} that {RAW_HOW[framework]})"
    if not reference.summary.peak_mbps:
        return f"{reference.framework}/{reference.mode}/{reference.op} ran but measured nothing: {reference.reason or 'every point failed'}"
    name = reference.label().rsplit("@", 1)[0]  # per call or streamed, as the series it is read against
    return f"{name} peaked at {rate(reference.summary.peak_mbps)} MB/s @ {where_in(reference, reference.summary.peak_batch_size, in_bytes)}"


def summary_table(
    picks: Sequence[Selected], names: list[str], files: list[str], empty: Sequence[tuple[Selected, str]] = ()
) -> tuple[list[str], dict[str, list[str]], dict[str, list[str]]]:
    """One row per series; the link ceilings the "% of link" column refers to and the raw ceilings
    the "% of raw ceiling" column refers to, each with the devices it applies to (`files`: each
    pick's file label, or "" for a single file). `empty`: series with no measured point and their
    names, kept in the table so a failure cannot go unseen."""
    best_of: dict[tuple[str, ...], float] = {}  # like with like: one device, one transfer kind, one direction
    for p in picks:
        best_of[_yardstick(p.series)] = max(best_of.get(_yardstick(p.series), 0.0), p.series.summary.peak_mbps or 0.0)
    rivals = {key: sum(1 for p in picks if _yardstick(p.series) == key) for key in best_of}
    in_bytes = by_bytes(picks)
    # A raw copy applies only to CUDA series: without one, the column would be all dashes.
    show_raw = any(p.series.device.startswith("cuda") for p in picks)
    # One device for every series: named in the report's opening line, not on every row.
    show_device = len({p.series.device_name or p.series.device for p in (*picks, *(e for e, _ in empty))}) > 1
    rows: list[list[str]] = []
    ceilings: dict[str, list[str]] = {}
    raw: dict[str, list[str]] = {}
    for pick, name, file in zip(picks, names, files):
        series, summary = pick.series, pick.series.summary
        peak = summary.peak_mbps
        where = series.device + (f" ({file})" if file else "")
        _, about = link_ceiling(series, pick.result.environment)
        ceilings.setdefault(about, []).append(where)
        of_link, gbps = fraction_of_link(series, pick.result.environment)
        of_raw = fraction_of_raw(series, pick.result.series)
        if series.device.startswith("cuda"):
            raw.setdefault(raw_ceiling(series, pick.result, in_bytes), []).append(where)
        if summary.latency_s is None:
            latency = bandwidth = "-"
        else:
            latency = rate(summary.latency_s * 1e6) if summary.latency_s > 0 else "≈0 (clamped)"
            latency = "— (streamed)" if series.method == STREAMED else latency  # no per-copy latency by design
            bandwidth = rate(summary.bandwidth_mbps) if summary.bandwidth_mbps else "unbounded"
            bandwidth += " (poor fit)" if (summary.fit_rel_rms or 0) > POOR_FIT else ""
        cliff = "-" if series.is_peer else "no"  # a peer's aggregate figures say nothing of a cliff
        if summary.cliff:
            cliff = f"**yes**: <{CLIFF_FRACTION:.0%} of peak from {where_in(series, summary.cliff_batch_size, in_bytes)}"
            cliff += f" (worst −{summary.cliff_drop:.0%})" if summary.cliff_drop is not None else ""
        best = best_of[_yardstick(series)]
        rows.append([
            name + (" **FAILED**" if series.status == "failed" else ""),
            *([series.device_name or series.device] if show_device else []),
            f"{rate(peak)} @ {at(series, summary.peak_batch_size, in_bytes)}" + (" (busy)" if summary.busy_only else ""),
            f"{peak / best:.2f}×" if peak and best and rivals[_yardstick(series)] > 1 else "-",
            at(series, summary.saturation_batch_size, in_bytes) if summary.saturation_batch_size else "-",
            latency,
            bandwidth,
            (f"{of_link:.0%} of {gbps:.1f} GB/s" + (" unified memory" if series.device == "mps" else "")) if of_link else "unknown",
            *(["reference" if is_raw_reference(series) and of_raw else f"{of_raw:.0%}" if of_raw else "-"] if show_raw else []),
            cliff,
        ])  # fmt: skip
    for pick, name in empty:
        failed = "**FAILED**" if pick.series.status == "failed" else "**no point measured**"
        rows.append([f"{name} {failed}", *([pick.series.device_name or pick.series.device] if show_device else []),
                     *["-"] * (8 if show_raw else 7)])  # fmt: skip
    unit = "bytes per call" if in_bytes else "batch"
    header = ["series", *(["device"] if show_device else []), f"peak MB/s @ {unit}", "vs best of its device", f"saturates at {unit}", "latency (µs)",
              "asymptotic MB/s", "% of link or memory (theoretical)" if any(p.series.device == "mps" for p in picks) else "% of link (theoretical)", *(["% of raw ceiling"] if show_raw else []), "cliff"]  # fmt: skip
    right = [False, *([False] if show_device else []), *[True] * (len(header) - 2 - show_device), False]
    return table(header, rows, right), ceilings, raw


def _yardstick(series: Series) -> tuple[str, ...]:
    """What "vs best" compares within: an A100's host-to-device copy is no yardstick for a CPU's memory copy."""
    return (series.device_name or series.device, series.transfer or MISSING, series.direction)


def at(series: Series, batch: int | None, in_bytes: bool) -> str:
    """Where a figure lies: the batch, or the bytes per call of that batch."""
    if batch is None or not in_bytes:
        return str(batch) if batch is not None else "-"
    nbytes = next((p.bytes for p in series.points if p.batch_size == batch), None)
    return binary_size(nbytes) if nbytes else f"batch {batch}"


def where_in(series: Series, batch: int | None, in_bytes: bool) -> str:
    return at(series, batch, in_bytes) if in_bytes else f"batch {batch}"


def comparison_table(picks: Sequence[Selected], names: list[str]) -> list[str]:
    """MB/s per batch size with the series side by side, each with its ratio to the first series at
    the same batch: the table a comparison of two GPUs, paths or machines in a bug report turns on."""
    by_batch = not by_bytes(picks)  # else a ratio is taken between equal sizes only
    rates = [{(p.batch_size if by_batch else p.bytes): p.mbps for p in pick.series.ok_points() if p.mbps} for pick in picks]
    rows = []
    for batch in sorted({batch for measured in rates for batch in measured}):
        reference = rates[0].get(batch)
        row = [str(batch) if by_batch else binary_size(batch), rate(reference) if reference else ABSENT]
        for measured in rates[1:]:
            mbps = measured.get(batch)
            ratio = f" ({mbps / reference:.2f}×)" if mbps and reference else ""
            row.append(f"{rate(mbps)}{ratio}" if mbps else ABSENT)
        rows.append(row)
    header = ["batch size" if by_batch else "bytes per call", f"reference: {names[0]}", *names[1:]]
    return table(header, rows, [True] * len(header))


MARKS = {SLOWER: "▼", FASTER: "▲", NO_CHANGE: "=", INCONCLUSIVE: "?", UNTESTED: "(untested)"}


def _tested(name: str, reference: Point, other: Point, threshold: float, alpha: float) -> Row:
    """The same rank test and threshold as compare; where a side keeps no raw samples (a peer's
    figures), the ratio of the medians, untested."""
    if reference.times_s and other.times_s:
        return compare_point(name, reference, other, threshold, alpha)
    ratio = other.mbps / reference.mbps if reference.mbps and other.mbps else math.nan
    busy = tuple(side for side, point in (("base", reference), ("new", other)) if point.busy)
    return Row(name, reference.batch_size, reference.mbps or math.nan, other.mbps or math.nan, ratio, None, UNTESTED, False,
               UNTESTED, busy)  # fmt: skip


def _mbps_cell(point: Point | None) -> str:
    if point is None or not point.mbps:
        return ABSENT
    return rate(point.mbps) + (" (busy)" if point.busy else "")


def _peak_cell(series: Series | None, in_bytes: bool = False) -> str:
    if series is None:
        return ABSENT
    summary = series.summary
    return f"{rate(summary.peak_mbps)} @ {at(series, summary.peak_batch_size, in_bytes)}" + (" (busy)" if summary.busy_only else "")


def _counts(rows: Sequence[Row], failed: int = 0) -> str:
    """A path's verdicts over its batches in one phrase: "slower at 8 of 10, no change at 2, failed at 1"."""
    verdicts = [r.verdict for r in rows] + [FAILED.lower()] * failed
    counts = {v: verdicts.count(v) for v in (SLOWER, FASTER, NO_CHANGE, INCONCLUSIVE, UNTESTED, FAILED.lower()) if v in verdicts}
    text = ", ".join(f"{v} at {n}" + (f" of {len(verdicts)}" if i == 0 else "") for i, (v, n) in enumerate(counts.items()))
    busy = sum(1 for r in rows if r and r.busy)
    return (text + (f" ({busy} busy)" if busy else "")) or "no batch in common"


def paired_sections(picks: Sequence[Selected], files: list[tuple[Path, Result]], labels: list[str],
                    empty: Sequence[Selected] = (), threshold: float = 0.05, alpha: float = 0.01
                    ) -> tuple[list[str], list[str]]:  # fmt: skip
    """The answer to "A vs B" (what differs between the files, each path's peak in each file with its
    ratio and verdicts, the ratio at every batch), then every path's MB/s side by side: two parts, so the
    notes can sit between them. Both empty when no series has a counterpart in another file (then series
    stand side by side as in one file)."""
    per_file = [[p.series for p in picks if p.result is r] for _, r in files]
    found = pair(per_file, [result.environment for _, result in files])
    paired = [p for p in found if p.paired]
    if not paired:
        return [], []
    two = len(files) == 2
    in_bytes = by_bytes(picks)
    tests: list[list[dict[int, Row]]] = []  # per pair, per file: batch -> the test against the reference
    errors: list[list[dict[int, str]]] = []  # per pair, per file: batch the reference measured -> the error here
    for p in paired:
        reference = next(m for m in p.members if m is not None)
        ref_points = {q.batch_size: q for q in reference.ok_points()}
        per_member: list[dict[int, Row]] = []
        for member in p.members:
            points = {q.batch_size: q for q in member.ok_points()} if member is not None and member is not reference else {}
            per_member.append({b: _tested(p.name, ref_points[b], q, threshold, alpha) for b, q in points.items() if b in ref_points})
        tests.append(per_member)
        errors.append([{q.batch_size: q.error or q.status for q in m.points if q.status != "ok" and q.batch_size in ref_points}
                     if m is not None and m is not reference else {} for m in p.members])  # fmt: skip
    unit, units = ("size", "sizes") if in_bytes else ("batch", "batches")
    lines = ["### What differs", ""]
    found_differences = differences([(result, series) for (_, result), series in zip(files, per_file)])
    if found_differences:
        lines += table(["field", *labels], [[d.field, *d.values] for d in found_differences]) + [""]
    else:
        lines += ["No recorded difference: the same device, driver, framework versions, settings, CPU, host, xferbench"
                  " version and sampling in every file. Whatever moved the figures, the files do not record it.", ""]  # fmt: skip
    for (_, result), label, series in zip(files, labels, per_file):
        busy = sum(1 for one in series for q in one.ok_points() if q.busy)
        if busy:
            lines += [f"{label} was measured on a busy machine at {busy} of {sum(len(one.ok_points()) for one in series)}"
                      " points (see the notes): their figures may show the machine, not the change.", ""]  # fmt: skip
    sentences = []
    for pairs_seen, (p, per_member) in enumerate(zip(paired, tests)):
        for index, member in enumerate(p.members):
            if member is None or not (per_member[index] or errors[pairs_seen][index]):
                continue
            failures = [Failure(p.name, b, error) for b, error in errors[pairs_seen][index].items()]
            change = path_changes([per_member[index][b] for b in sorted(per_member[index])], failures)[0]
            place = (lambda batch, m=member: at(m, batch, True)) if in_bytes else None
            kinds = p.unlike()
            what = ("; ".join(f"{labels[i]}: {p.kind(i)}" for i, m in enumerate(p.members) if m is not None)
                    if kinds else "")  # fmt: skip
            said = change.sentence(labels[index], place)
            if kinds:  # never a bare "faster" between unlike copies: what the ratio compares comes first
                said = f"unlike copies ({what}), so the ratio compares the time until a batch is usable on each device: {said}"
            sentences.append(f"- {pair_cell(p)}{'' if two else f' ({labels[index]})'}: {said}")
    header = ["path", *(f"peak {label}" + (" @ bytes per call" if in_bytes else "") for label in labels)]
    header += [f"{labels[1]} / {labels[0]}, peak to peak", f"verdict by {unit}"] if two else [f"{label} / first, peak to peak" for label in labels[1:]]
    rows = []
    for p, per_member, failed in zip(paired, tests, errors):
        reference = next(m for m in p.members if m is not None)
        row = [pair_cell(p), *(_peak_cell(m, in_bytes) for m in p.members)]
        for index, member in enumerate(p.members):
            if member is None or member is reference:
                if not two and index > 0:
                    row.append(ABSENT if member is None else "reference")
                continue
            ratio = (member.summary.peak_mbps or 0) / (reference.summary.peak_mbps or 1)
            verdict = _counts([per_member[index][b] for b in sorted(per_member[index])], len(failed[index]))
            row += [f"{ratio:.2f}×", verdict] if two else [f"{ratio:.2f}×: {verdict}"]
        rows.append(row)
    shown = [m for p in paired for m in p.members if m is not None]
    rule = f" {peak_rule(shown)}" if peak_rule(shown) else ""
    lines += [f"### Each path{f', {labels[1]} against {labels[0]}' if two else ', against the first file that has it'}", "",
              f"What changed at each {unit} measured in both, by the rank test of `xferbench compare` (a change counts past"
              f" {threshold:.0%} when p < {alpha:g}); neighbouring {units} with one verdict make a run, split where the"
              f" ratio jumps {JUMP:g}× or more or a {unit} failed:", "", *sentences, "",
              f"Each file's peak MB/s @ {'bytes per call' if in_bytes else 'batch'}, and the ratio of the two peaks wherever"
              f" each lies (the runs above compare like with like, {unit} by {unit}).{rule}", "",
              *table(header, rows, [False, *[True] * (len(header) - 2), not two]), ""]  # fmt: skip
    # A row per batch, or per size where sizes locate the figures (each pair's batch of that size)
    keys = [{b: (_bytes_of(p, b) if in_bytes else b) for per_member, failed in zip(tested_pair, failed_pair)
             for b in (*per_member, *failed)} for p, tested_pair, failed_pair in zip(paired, tests, errors)]  # fmt: skip
    grid = []
    for key in sorted({k for positions in keys for k in positions.values()}):
        cells = []
        for per_member, failed, positions in zip(tests, errors, keys):
            batch = next((b for b, k in positions.items() if k == key), None)
            marks = [_grid_cell(t[batch]) if batch in t else FAILED for t, f in zip(per_member, failed) if batch in t or batch in f]
            cells.append(" · ".join(marks) or ABSENT)
        grid.append([binary_size(key) if in_bytes else str(key), *cells])
    busy_mark = " * a side measured on a busy machine;" if any(t.busy for m in tests for tested in m for t in tested.values()) else ""
    failed_mark = f" {FAILED}: measured in the first, failed here;" if any(f for per_file in errors for f in per_file) else ""
    untested = f" {MARKS[UNTESTED]}: a side keeps no raw samples (a peer's figures);" if any(
        t.verdict == UNTESTED for m in tests for tested in m for t in tested.values()) else ""  # fmt: skip
    lines += [f"### Ratio at each {unit}", "",
              f"MB/s of {' · '.join(labels[1:])} over {labels[0] if two else 'the first file that has the path'} at the same"
              f" {unit}, with the verdict:"
              f" {MARKS[SLOWER]} slower, {MARKS[FASTER]} faster, {MARKS[NO_CHANGE]} no change, {MARKS[INCONCLUSIVE]}"
              f" inconclusive;{untested}{busy_mark}{failed_mark} {ABSENT}: not in both.", "",
              *table(["bytes per call" if in_bytes else "batch", *(pair_cell(p) for p in paired)], grid,
                     [True] * (len(paired) + 1)), ""]  # fmt: skip
    block_header = ["path", "bytes per call" if in_bytes else "batch", *(f"{label} MB/s" for label in labels)]
    block_header += [f"{labels[1]} / {labels[0]}", "p", "verdict"] if two else [f"{label} / first" for label in labels[1:]]
    block_rows = []
    for p, per_member, failed in zip(paired, tests, errors):
        points = [{q.batch_size: q for q in m.ok_points()} if m is not None else {} for m in p.members]
        for number, batch in enumerate(sorted({b for found in (*points, *failed) for b in found})):
            where = binary_size(_bytes_of(p, batch)) if in_bytes else str(batch)
            row = [pair_cell(p) if number == 0 else BLANK, where,
                   *(_mbps_cell(found.get(batch)) if batch not in gone else FAILED for found, gone in zip(points, failed))]
            tested = [per_member[i].get(batch) for i in range(len(p.members))]
            if two:
                t = tested[1]
                verdict = f"{FAILED}: {cell(failed[1][batch])}" if batch in failed[1] else t.verdict if t else ABSENT
                verdict += " (unlike copies)" if t and p.unlike() and t.verdict in (SLOWER, FASTER) else ""
                row += [f"{t.ratio:.2f}×" if t and math.isfinite(t.ratio) else ABSENT,
                        (p_text(t.p_value) if t.p_value is not None else t.method) if t else ABSENT, verdict]  # fmt: skip
            else:
                row += [f"{t.ratio:.2f}× {t.verdict}" if t else FAILED if batch in gone else ABSENT
                        for t, gone in zip(tested[1:], failed[1:])]  # fmt: skip
            block_rows.append(row)
    answer, lines = lines, []
    lines += [f"### MB/s by {unit}, path by path", "",
              f"Median MB/s in each file; the ratio to {labels[0] if two else 'the first file'}; the rank test's p-value"
              " and verdict on the raw samples." + (" (busy): measured while other processes used a quarter of the CPUs"
                                                    " or more." if busy_mark else ""), "", *table(block_header, block_rows, [False, *[True] * (len(block_header) - 1)]), ""]  # fmt: skip
    alone = [p for p in found if not p.paired]
    label_of = {id(result): label for (_, result), label in zip(files, labels)}

    def lost(series: Series) -> str:
        """Where the counterpart ran but measured nothing: a failure, not a gap."""
        failed = [label_of[id(e.result)] for e in empty if id(e.result) in label_of and pair_key(e.series) == pair_key(series)]
        return f" (it measured nothing in {', '.join(failed)}: see the notes)" if failed else ""

    if alone:
        lines += ["Without a counterpart in another file:",
                  *(f"- `{m.label()}`: only in {labels[i]}{lost(m)}" for p in alone for i, m in enumerate(p.members) if m is not None), ""]
    return answer, lines


def peak_rule(series: Sequence[Series]) -> str:
    """The rule busy points follow, said only as it holds for these series: left out of the figures,
    except in a series whose every point was busy (its figures rest on them, marked (busy))."""
    busy = [s for s in series if s.summary.busy_batch_sizes]
    if not busy:
        return ""
    only = [s for s in busy if s.summary.busy_only]
    if not only:
        return "Points measured on a busy machine are left out of the peaks."
    if len(only) == len(series):
        return "Every point was measured on a busy machine, so every peak rests on busy points (marked (busy))."
    return ("Points measured on a busy machine are left out of the peaks, except where every point of a series was busy:"
            " those peaks, marked (busy), rest on busy points.")


def pair_cell(found: Pair) -> str:
    """A pair's name in a table: its path, marked where its members make unlike copies."""
    return f"`{found.name}`" + (" (unlike copies)" if found.unlike() else "")


def _bytes_of(found: Pair, batch: int) -> int:
    """The bytes per call of a pair's batch (every member shares the item shape)."""
    member = next(m for m in found.members if m is not None)
    return batch * math.prod(member.shape)


def _grid_cell(tested: Row | None) -> str:
    if tested is None:
        return ABSENT
    ratio = f"{tested.ratio:.2f}×" if math.isfinite(tested.ratio) else "-"
    return f"{ratio} {MARKS[tested.verdict]}" + ("*" if tested.busy else "")


def at_once_section(picks: Sequence[Selected], files: list[tuple[Path, Result]], labels: list[str]) -> list[str]:
    """Each concurrent run among the picked series: a row per device, alone and at once, and a total."""
    picked = {id(p.series) for p in picks}
    lines: list[str] = []
    for (_, result), label in zip(files, labels):
        for group in groups(result):
            members = [s for s in result.series if s.concurrent > 1 and s.label().rsplit("@", 1)[0] == group.label]
            if not any(id(s) in picked for s in members):
                continue
            rows = [[row.name, rate(row.alone_mbps),
                     rate(row.at_once_mbps), f"{row.ratio:.2f}×" if row.ratio else "-",
                     f"{row.overlap:.0%}" if row.overlap is not None else "-"] for row in group.rows]  # fmt: skip
            alone, at_once = group.total_alone, group.total_at_once
            rows.append(["**total**", rate(alone), f"**{rate(at_once)}**", f"{at_once / alone:.2f}×" if alone and at_once else "-", ""])
            where = f" ({label})" if len(files) > 1 else ""
            lines += [f"`{group.label}` at batch {group.batch_size}{where}:", "",
                      *table(["device", "alone MB/s", "at once MB/s", "ratio to alone", "overlap"], rows,
                             [False, True, True, True, True]), ""]  # fmt: skip
    if not lines:
        return []
    return ["### Every device at once", "",
            "The same path on every device at the same time (a worker per device, each point started together),"
            " beside each device alone in the same run, at the largest batch all of them measured. Overlap: the"
            " share of the point's sampling during which every device sampled (-: unknown, as on a simulated link).",
            "", *lines]  # fmt: skip


def detail(series: Series, name: str, in_bytes: bool = False, environment: dict[str, Any] | None = None) -> list[str]:
    """The original report's columns for every batch, folded away so the summary stays on screen."""
    device_clock = any(p.device_mbps for p in series.points)
    # As in the terminal table: page faults per call explain host-side cliffs, shown only where they happen.
    faults = series.transfer != "simulated" and any((p.page_faults_per_call or 0) >= FAULTY for p in series.points)
    header = ["batch size", "batch time (s)", "BPS", "FPS", "MB/S", "MB/s p10–p90", "n"]
    ways = measured_directions(series)
    header += [f"{way} MB/s" for way in ways]
    header += (["device MB/s"] if device_clock else []) + (["faults/call"] if faults else [])
    staging = any(p.staging_chunk_bytes for p in series.points)  # host/staged: the chunk each batch was copied by
    header += ["staging chunk"] if staging else []
    rows = []
    for p in series.points:
        if p.status != "ok":
            rows.append([str(p.batch_size), f"{p.status}: {p.error or ''}", *[""] * (len(header) - 2)])
            continue
        row = [str(p.batch_size), f"{p.median_s:.4g}" if p.median_s else "-", rate(p.batches_per_s), rate(p.images_per_s), _mbps_cell(p),
               f"{rate(p.mbps_p10)}–{rate(p.mbps_p90)}", str(p.n)]  # fmt: skip
        row += [rate((p.direction_mbps or {}).get(way)) for way in ways]
        row += [rate(p.device_mbps)] if device_clock else []
        row += [f"{p.page_faults_per_call:,.0f}" if p.page_faults_per_call is not None else "-"] if faults else []
        row += [staging_chunk_text(p)] if staging else []
        rows.append(row)
    summary = series.summary
    title = f"{name}: peak {rate(summary.peak_mbps)} MB/s @ {where_in(series, summary.peak_batch_size, in_bytes)}"
    how = (f"{series.device_name or series.device}; {series.transfer or MISSING}; {'x'.join(map(str, series.shape))}"
           f" uint8 per item from {series.host_buffer}; timed {series.method}; clock {series.clock or MISSING};"
           f" sync {series.sync or MISSING}" + (f"; device clock {series.device_clock}" if series.device_clock else ""))  # fmt: skip
    over_c2c = c2c.is_c2c(device_entry(environment or {}, series.device))
    facts = [fact for fact in (placement(series), link_under_load(series, over_c2c), verify_cost(series)) if fact]
    return ["<details>", f"<summary>{html.escape(title)}</summary>", "", how, "", *(f"- {fact}" for fact in facts),
            *([""] if facts else []), *table(header, rows, [True] * len(header)), "", "</details>", ""]  # fmt: skip


def link_under_load(series: Series, over_c2c: bool = False) -> str | None:
    """The link as NVML read it while the series ran; throughput figures are approximate. On a Grace node
    (`over_c2c`) NVML's PCIe reading is said not to be the host link."""
    summary = (series.link or {}).get("summary") or {}
    if not summary.get("samples"):
        return None
    gen, width = summary.get("gen_under_load"), summary.get("width_under_load")
    under = f"Gen{gen[1]} x{width[1]} under load" if gen and width else "no sample under load"
    peak = summary.get("rx_mbps_peak")
    rx = f"; RX peak ≈ {rate(peak)} MB/s (NVML, approximate: 20 ms windows)" if peak is not None else ""
    received = summary.get("rx_bytes")
    count = f"; {received / 1e9:,.2f} GB received ({summary.get('rx_bytes_from')})" if received else ""
    what = f"NVML's PCIe reading (not the host link: {c2c.C2C})" if over_c2c else "PCIe link"
    return f"{what}: {under} in {summary['samples']} NVML samples{rx}{count}"


def verify_cost(series: Series) -> str | None:
    """What verifying every byte cost, kept out of every sample (a simulated link moves no bytes)."""
    timed = [(p.verify_s, p.bytes) for p in series.ok_points() if p.verify_s and series.transfer != SIMULATED]
    if not timed:
        return None
    seconds, nbytes = sum(t for t, _ in timed), sum(b for _, b in timed)
    return f"every byte verified outside the samples: {seconds / (nbytes / 2**30):.2f} s per GiB on average"


def _plot_link(plot: Path, out: Path | None) -> str:
    """The plot's path as seen from the report's folder, so the link works where both are committed."""
    target = plot.as_posix()
    if out is not None:
        try:
            target = Path(os.path.relpath(plot, out.parent)).as_posix()
        except ValueError:  # another drive on Windows: keep the path as given
            pass
    return f"![xferbench plot](<{target}>)" if set(target) & set(" ()") else f"![xferbench plot]({target})"


def _notes(picks: Sequence[Selected], names: list[str], files: list[tuple[Path, Result]],
           empty: Sequence[Selected]) -> list[str]:  # fmt: skip
    """What a reader must know before trusting a number: failures, what a path really computes, noise."""
    notes = [f"- **FAILED** {name}: {p.series.reason or 'see the per-batch detail'}"
             for p, name in zip(picks, names) if p.series.status == "failed"]  # fmt: skip
    noted: dict[str, dict[str, None]] = {}  # one line per note: many series of a file often share one
    for pick, name in zip(picks, names):
        if pick.series.note:  # a note says what a path computes: the same in every file, so named once
            noted.setdefault(pick.series.note, {})[pick.series.label()] = None
    notes += [f"- {', '.join(on)}: {note}" for note, on in noted.items()]
    warned: dict[str, list[str]] = {}  # the link's and the CPUs' warnings: every series on that GPU shares them
    for pick, name in zip(picks, names):
        for warning in link_warnings(pick.series, pick.result.environment):
            warned.setdefault(warning, []).append(name)
    notes += [f"- **warning** {warning} (affects {', '.join(on)})" for warning, on in warned.items()]
    notes += busy_notes(picks, files, len(files) > 1)
    for pick, name in zip(picks, names):
        noisy = noisy_points(pick.series)
        if noisy:
            notes.append(f"- {name}: {uncertain_note(noisy, pick.series.summary, pick.result.environment.get('os'))}")
    for path, result in files:  # named and left out of every figure and verdict above
        damaged = damaged_points(result)
        if damaged:
            notes.append(f"- **damaged** {path}: {len(damaged)} point(s) left out, their samples cannot be what a run"
                         f" wrote: {'; '.join(damaged[:5])}{'; …' if len(damaged) > 5 else ''}")  # fmt: skip
    unfinished = {"running": "did not finish (it died, or is still running)", "interrupted": "was interrupted"}
    notes += [f"- {path}: the sweep {unfinished[r.status]}; curves may be short" for path, r in files if r.status in unfinished]
    return notes + [f"- **{'FAILED' if e.series.status == 'failed' else 'EMPTY'}** {e.why_empty()}" for e in empty]


def busy_notes(picks: Sequence[Selected], files: list[tuple[Path, Result]], several: bool) -> list[str]:
    """One warning per file measured on a busy machine, naming its busy points: a busy machine is the
    file's story, not each series' (six near-identical warnings would bury every other note)."""
    notes = []
    for path, result in files:
        busy = [(pick.series, [p for p in pick.series.ok_points() if p.busy]) for pick in picks if pick.result is result]
        busy = [(series, points) for series, points in busy if points]
        if not busy:
            continue
        every = [(series, p) for series, points in busy for p in points]
        worst_series, worst = max(every, key=lambda found: (found[1].others_cpus or 0) / (found[1].cpus or 1))
        total = sum(len(pick.series.ok_points()) for pick in picks if pick.result is result)
        listed = "; ".join(series.label() + (" (every point)" if len(points) == len(series.ok_points())
                                             else f" batch {', '.join(str(p.batch_size) for p in points)}")
                           for series, points in busy)  # fmt: skip
        listed = "every point" if len(every) == total else listed
        where = f"{path} was" if several else "the machine was"
        only = [series.label() for series, _ in busy if series.summary.busy_only]
        if len(every) == total:
            rule = "every figure here rests on them"
        elif only:
            rule = (f"left out of peak, saturation, cliff and fit, except in {', '.join(only)}, where every point was busy"
                    " and the figures rest on them")  # fmt: skip
        else:
            rule = "left out of peak, saturation, cliff and fit"
        notes.append(f"- **warning** {where} busy at {len(every)} of {total} points: {listed}. Other processes used a"
                     f" quarter of the CPUs or more (at worst {worst.others_cpus:.2f} of its {worst.cpus or '?'}, at"
                     f" {worst_series.label()} batch {worst.batch_size}); a busy machine moves figures either way, by up to"
                     f" several times. Those points are marked (busy), {rule}; measure again on a quiet machine.")  # fmt: skip
    return notes


def command_args(argv: Sequence[str]) -> list[str]:
    """The arguments after the program, however it was started: a script path (/x/.venv/bin/xferbench,
    .../xferbench/__main__.py) or an interpreter (python -m xferbench) from the machine that ran it
    means nothing to a reader, who runs `xferbench`."""
    module = len(argv) > 2 and argv[1] == "-m" and argv[2].split(".")[0] == "xferbench"
    return list(argv[3 if module else 1 :])


def reproduce(result: Result) -> str:
    """The recorded command line as `xferbench ARGS`, preceded by the recorded settings
    (GLIBC_TUNABLES=...) it ran under."""
    settings = result.environment.get("settings") or {}
    prefix = [f"{name}={value}" for name, value in settings.items() if name in SETTINGS]
    return shlex.join([*prefix, "xferbench", *command_args(result.config.get("argv") or [])])


def render(
    picks: list[Selected],
    empty: Sequence[Selected] = (),
    plot: Path | None = None,
    out: Path | None = None,
    selection: Selection | None = None,
    title: str | None = None,
) -> str:
    """The report as Markdown. `empty`: selected series with no measured point (select() gives them),
    shown as FAILED; `out` is where it will be written (for the plot's relative link); `selection`
    keeps series outside it from the "Not measured" list."""
    files = _files(picks)
    labels = file_names(files)
    label_of = {id(r): label for (_, r), label in zip(files, labels)}
    several = len(files) > 1
    where = [label_of[id(p.result)] if several else "" for p in picks]
    names = [p.series.label() + (f" ({file})" if file else "") for p, file in zip(picks, where)]
    kinds = {p.series.transfer for p in picks}
    what = {frozenset({HOST_TO_DEVICE}): "Host-to-device transfer throughput",
            frozenset({SIMULATED}): "Simulated link throughput (no data moves)",
            frozenset({HOST_TO_HOST}): "Host-to-host copy throughput (CPU only: no GPU in these series)",
            frozenset({DEVICE_TO_HOST}): "Device-to-host transfer throughput",
            frozenset({BIDIRECTIONAL}): "Bidirectional transfer throughput",
            }.get(frozenset(kinds), "Transfer throughput")  # fmt: skip
    both = (" For a bidir series (a batch each way per call) MB/s is both directions together; its per-batch"
            " detail gives each direction's own MB/s." if any(p.series.direction == BIDIR for p in picks) else "")  # fmt: skip
    answer, by_batch = paired_sections(picks, files, labels, empty) if several else ([], [])
    paired = bool(answer)
    heading = title or ("xferbench report: " + " vs ".join(labels) if paired else "xferbench report")
    devices = list(dict.fromkeys(p.series.device_name or p.series.device for p in picks))
    on = f" on {devices[0]}" if len(devices) == 1 else ""
    from_files = ": " + ", ".join(f"{label} (`{path}`)" for (path, _), label in zip(files, labels)) if paired else ""
    lines = [f"## {heading}", "",
             f"{what}{on}: {len(picks)} series from {len(files)} result file(s){from_files}."
             f" {statistics_sentence(picks, files, labels)}{both}", ""]  # fmt: skip
    if plot is not None:
        lines += [_plot_link(plot, out), ""]
    notes = _notes(picks, names, files, empty)
    pipelines = pipeline_report.section(picks)
    if paired:  # the answer first: what differs and each path paired, then the notes that qualify it
        lines += answer + pipelines + (["### Notes", "", *notes, ""] if notes else []) + by_batch
    else:  # input pipelines answer which delivers the most: that first
        lines += pipelines
    empty_names = [(e, e.series.label() + (f" ({label_of[id(e.result)]})" if several and id(e.result) in label_of else ""))
                   for e in empty]  # fmt: skip
    summary, ceilings, raw = summary_table(picks, names, where, empty_names)
    lines += ["### Summary" + (" of each series" if paired else ""), "", *summary, "",
              peak_sentence(picks), "",
              "Link ceilings (per direction):",
              *(f"- {', '.join(dict.fromkeys(on))}: {about}" for about, on in ceilings.items()), ""]  # fmt: skip
    if raw:
        calls = dict.fromkeys(RAW_CALLS[expected_raw_reference(device_entry(p.result.environment, p.series.device))[0]]
                              for p in picks if p.series.device.startswith("cuda"))  # fmt: skip
        lines += [f"Raw ceilings (the same run's pinned {' or '.join(calls) or RAW_CALLS['cuda']} on the same GPU):",
                  *(f"- {', '.join(dict.fromkeys(on))}: {about}" for about, on in raw.items()), ""]  # fmt: skip
    published = [f"- {name}: {note}" for pick, name in zip(picks, names) if (note := published_note(pick.series))]
    if published:
        lines += ["Published figures for the same GPU model (healthy host↔device copies others measured; xferbench's"
                  " docs/published-figures.md gives each with its source and date):", *published, ""]  # fmt: skip
    if len(picks) > 1 and not by_bytes(picks) and not paired:
        lines += ["### MB/s by batch size", "",
                  "Median MB/s at each batch size, series side by side; (×): the ratio to the first series,"
                  f" the reference, at the same batch; {ABSENT}: not measured at that batch.", "",
                  *comparison_table(picks, names), ""]  # fmt: skip
    elif len(picks) > 1 and not paired:  # items of several shapes: a batch of one is no batch of another
        lines += ["### MB/s by bytes per call", "",
                  "Median MB/s at each size, series side by side (their items differ in shape, or a peer counts"
                  f" buffers, not images: sizes, not batches, line up); (×): the ratio to the first series, the reference, at the same size; {ABSENT}: not"
                  " measured at that size.", "", *comparison_table(picks, names), ""]  # fmt: skip
    lines += at_once_section(picks, files, labels)
    if notes and not paired:
        lines += ["### Notes", "", *notes, ""]
    skipped = [f"- {s.label()}" + (f" ({label_of[id(r)]})" if several else "") + f": {s.reason or 'no reason recorded'}"
               for _, r in files for s in r.series
               if s.status == "skipped" and (selection is None or selection.matches(s))]  # fmt: skip
    if skipped:
        lines += ["### Not measured", "", *skipped, ""]
    environment = environment_table(picks, files, labels)
    if paired:  # the differences are above; the whole table would push everything else down
        environment = ["<details>", "<summary>Every recorded field of each file</summary>", "", *environment, "", "</details>"]
    lines += ["### Environment", "", *environment, "", "### Reproduce", ""]
    for (path, result), label in zip(files, labels):
        argv = result.config.get("argv") or []
        peer = result.environment.get("peer") or {}
        command = reproduce(result) if argv else "# command line not recorded"
        if peer and not argv:  # an imported peer's file: the peer's own commands, as it ran them
            command = "\n".join(peer.get("commands") or []) or f"# {peer.get('tool')}'s command line was not recorded"
        lines += ["```", f"# {label}: {path} (xferbench {result.xferbench_version or MISSING}, created {result.created})",
                  command, "```", ""]  # fmt: skip
    lines += ["### Per-batch detail", ""]
    for pick, name in zip(picks, names):
        lines += detail(pick.series, name, by_bytes(picks), pick.result.environment)
    return "\n".join(lines).rstrip() + "\n"


def save(text: str, path: Path, option: str = "--out") -> Path:
    """Write the report (or another table, named by the CLI `option` that gave the path); a one-line
    XferbenchError when that is impossible."""
    refuse_unless_regular(path, option)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_whole(path, text)  # a Ctrl-C mid-write leaves the last report whole
    except OSError as error:
        raise XferbenchError(f"cannot write {path}: {why_unwritable(path, error)}; choose another {option}") from None
    return path
