"""`xferbench check`'s verdicts: PASS or FAIL per GPU, from the result of a short run.

The run (cli.check) measures the raw pinned copy on every GPU, and any paths asked for, at one
large batch. This module only reads that result, so each threshold is tested on files made on the
CPU. A GPU fails when one of these fails:
- link: the raw ceiling below a share of the link's theoretical rate (default 75%: published healthy
  runs reach 79-83% of Gen4 x16 (A100) and 90% of Gen5 x16 (H100); Azure's floors sit at 67% and 76%);
- reference: the raw ceiling below the published health-check floor for the GPU's model (references.py:
  the lowest floor an operator publishes for it, cited with its source and date);
- link state: the link under load below its maximum generation or width in most samples (a
  down-trained link);
- raw copy: any raw series or point failed (a byte check, say), even where another measured;
- GPU count: NVML sees GPUs that were not checked (one that dropped off CUDA's list).
- baseline: a checked series significantly slower than in the user's baseline file (compare's test).
The PCIe replay counter rising during the run is a warning; the paths' figures are shown, not
judged, though a path that measured nothing fails. A GPU that nothing could judge (no NVML link
facts, no reference for its model, no baseline) is n/a, never PASS.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from rich.markup import escape
from rich.table import Table

from xferbench.reading.compare import INCONCLUSIVE, SLOWER, compare_point
from xferbench.core import c2c, vendors
from xferbench.core.environment import device_entry, link_readings, pcie_ceiling
from xferbench.core.references import floor_for, floor_line, published_line
from xferbench.core.results import Point, Result, Series
from xferbench.core.spec import H2D, STREAMED
from xferbench.core.telemetry import is_raw_reference, link_ceiling, ran_below_max
from xferbench.core.verdict import FAIL, INFO, NA, PASS, WARN, Verdict

LINK_SHARE = 0.75  # the raw ceiling must reach this share of the link's theoretical rate
JUDGED = ("link", "reference", "link state", "baseline")  # findings that can pass or fail a GPU (baseline: by prefix)


@dataclass
class DeviceVerdict:
    device: str
    device_name: str
    ceiling_mbps: float | None  # the raw pinned copy at the checked batch, streamed where it ran
    findings: list[Verdict] = field(default_factory=list)

    @property
    def status(self) -> str:
        """FAIL if any finding failed; PASS if one that judges passed; else n/a: warnings and
        missing facts neither fail a GPU nor pass it."""
        if any(f.status == FAIL for f in self.findings):
            return FAIL
        judged = [f for f in self.findings if (f.name in JUDGED or f.name.startswith("baseline")) and f.status == PASS]
        return PASS if judged else NA


def checked(series: Series) -> bool:
    """A series check and fleet judge: a copy, host to device, on one device alone."""
    return series.direction == H2D and series.concurrent == 1 and series.op == "copy"


def best_point(series: list[Series]) -> tuple[Series, Point] | None:
    """The largest measured batch of the best-timed series: streamed where it measured, else per call."""
    for method in (STREAMED, None):
        for s in series:
            if method is None or s.method == method:
                ok = s.ok_points()
                if ok:
                    return s, max(ok, key=lambda p: p.batch_size)
    return None


def _link_findings(series: Series, environment: dict[str, Any], mbps: float, share: float) -> list[Verdict]:
    device = device_entry(environment, series.device)
    ceiling = pcie_ceiling(device, series.link)
    if ceiling is None and c2c.is_c2c(device):  # a Grace node: never judged by its PCIe reading
        link = Verdict("link", NA, f"no theoretical rate to judge by: {c2c.unknown_ceiling(device).removeprefix('unknown: ')}")
    elif ceiling is None and vendors.vendor(device) not in (None, vendors.NVIDIA):  # NVML's sampling is not why: amdsmi's facts are
        link = Verdict("link", NA, f"no theoretical rate to judge by: {link_ceiling(series, environment)[1].removeprefix('unknown: ')}")
    elif ceiling is None:
        why = (series.link or {}).get("reason") or (environment.get("nvml") or {}).get("reason") or "NVML gave no PCIe link"
        link = Verdict("link", NA, f"no theoretical rate to judge by: {why}")
    else:
        gbps, label = ceiling
        reached = mbps / (gbps * 1e3)
        link = Verdict("link", PASS if reached >= share else FAIL,
                       f"{mbps / 1e3:.1f} GB/s, {reached:.0%} of {label}; at least {share:.0%} needed")  # fmt: skip
    state = _link_state(series, environment)
    return [link, state]


def _link_state(series: Series, environment: dict[str, Any]) -> Verdict:
    """Down-trained when most samples under load ran below the maximum (telemetry.ran_below_max)."""
    if c2c.is_c2c(device_entry(environment, series.device)):
        return Verdict("link state", NA, f"the host link is {c2c.C2C} (a Grace node): NVML's PCIe generation and width are not the host link")
    down = ran_below_max(series, environment)
    if down:
        return Verdict("link state", FAIL, down)
    readings = link_readings(device_entry(environment, series.device), series.link)
    under = [r for r in readings if r[0] == "under load"]
    maxima = [r for r in readings if r[0] != "under load"]
    if not under:
        top = f" (max Gen{maxima[0][1]} x{maxima[0][2]})" if maxima else ""
        return Verdict("link state", NA, f"no NVML reading while data moved{top}")
    if not maxima:
        return Verdict("link state", NA, f"Gen{under[0][1]} x{under[0][2]} under load; NVML gave no maximum")
    return Verdict("link state", PASS, f"Gen{under[0][1]} x{under[0][2]} under load, its maximum Gen{maxima[0][1]} x{maxima[0][2]}")


def _reference_finding(name: str, mbps: float) -> Verdict:
    """The raw ceiling against the model's published health-check floor, which alone judges, cited with
    its source and date; the published measurements of the model are shown beside it, never judged."""
    gbps = mbps / 1e3
    published = published_line(name, None)
    floor = floor_for(name)
    if floor is None:
        return Verdict("reference", INFO, f"{gbps:.1f} GB/s; no published health-check floor for this model ({name}): only the"
                                          f" link and a baseline judge it; {published}")  # fmt: skip
    return Verdict("reference", PASS if gbps >= floor.low_gbps else FAIL,
                   f"{gbps:.1f} GB/s against the floor of {floor_line(floor)}; {published}")  # fmt: skip


def _replay_finding(environment: dict[str, Any], device_id: str) -> Verdict:
    before_entry = device_entry(environment, device_id).get("nvml") or {}
    before = before_entry.get("pcie_replay_counter")
    after_gpus = (environment.get("nvml_after") or {}).get("gpus") or []
    after_entry = next((g for g in after_gpus if g.get("uuid") and g.get("uuid") == before_entry.get("uuid")), None)
    after_entry = after_entry or next((g for g in after_gpus if g.get("index") == before_entry.get("index")), {})
    after = after_entry.get("pcie_replay_counter")
    if before is None or after is None:
        return Verdict("replays", NA, "NVML gave no PCIe replay counter before and after")
    if after > before:
        return Verdict("replays", WARN, f"the PCIe replay counter rose by {after - before:,} during the check ({before:,} → {after:,}):"
                                        " the link retransmitted packets")  # fmt: skip
    return Verdict("replays", PASS, f"no replays during the check (counter {after:,})")


def _baseline_findings(checked: list[Series], baseline: Result, threshold: float) -> list[Verdict]:
    found = []
    by_key = {s.key: s for s in baseline.series if s.ok_points()}
    for series in checked:
        base = by_key.get(series.key)
        points = {p.batch_size: p for p in series.ok_points()}
        shared = sorted(points.keys() & {p.batch_size for p in base.ok_points()}) if base else []
        if not shared:
            continue
        batch = shared[-1]
        row = compare_point(series.label(), next(p for p in base.ok_points() if p.batch_size == batch), points[batch], threshold)  # type: ignore[union-attr]
        status = FAIL if row.verdict == SLOWER else WARN if row.verdict == INCONCLUSIVE else PASS
        found.append(Verdict(f"baseline {series.label()}", status,
                             f"{row.base_mbps:,.0f} → {row.new_mbps:,.0f} MB/s at batch {batch} ({row.ratio:.2f}×, {row.verdict})"))  # fmt: skip
    return found or [Verdict("baseline", NA, "the baseline has no series measured on this GPU at a batch checked here")]


def verdicts(result: Result, link_share: float = LINK_SHARE, baseline: Result | None = None,
             threshold: float = 0.05) -> list[DeviceVerdict]:  # fmt: skip
    """A verdict per CUDA device that a checked series ran on."""
    environment = result.environment
    devices = list(dict.fromkeys(s.device for s in result.series if s.device.startswith("cuda") and s.status != "skipped"))
    out = []
    for device in devices:
        on_device = [s for s in result.series if s.device == device and checked(s)]
        raws = [s for s in on_device if is_raw_reference(s)]
        raw = best_point(raws)
        name = next((s.device_name for s in on_device if s.device_name), device)
        verdict = DeviceVerdict(device, name, raw[1].mbps if raw else None)
        broken = [f"{s.label()} {p.batch_size}: {p.error}" for s in raws for p in s.points if p.status == "error"]
        broken += [f"{s.label()}: {s.reason}" for s in raws if s.status == "failed"]
        if raw is None:
            why = [s.reason for s in raws if s.reason] + [p.error for s in raws for p in s.points if p.error] + ["no point"]
            verdict.findings.append(Verdict("raw copy", FAIL, f"the raw pinned copy measured nothing: {why[0]}"))
        else:
            if broken:
                verdict.findings.append(Verdict("raw copy", FAIL, f"a raw copy failed: {broken[0]}"))
            series, point = raw
            verdict.findings += _link_findings(series, environment, point.mbps or 0.0, link_share)
            verdict.findings.append(_reference_finding(name, point.mbps or 0.0))
        verdict.findings.append(_replay_finding(environment, device))
        if raw is not None:  # the other paths, beside the ceiling
            for series in [s for s in on_device if not is_raw_reference(s) and s.status != "skipped"]:
                point = best_point([series])
                if point is None:
                    verdict.findings.append(Verdict(series.label(), FAIL, f"measured nothing: {series.reason or 'see the result file'}"))
                else:
                    share = (point[1].mbps or 0.0) / (verdict.ceiling_mbps or 1.0)
                    verdict.findings.append(Verdict(series.label(), INFO, f"{point[1].mbps:,.0f} MB/s at batch {point[1].batch_size},"
                                                                          f" {share:.0%} of the raw ceiling"))  # fmt: skip
        if baseline is not None:
            verdict.findings += _baseline_findings(on_device, baseline, threshold)
        out.append(verdict)
    missing = _unchecked_gpus(environment, devices)
    if missing:
        out.append(DeviceVerdict("node", str(environment.get("host") or "this node"), None, [missing]))
    return out


def _unchecked_gpus(environment: dict[str, Any], checked: list[str]) -> Verdict | None:
    """A GPU NVML sees that no series measured: it fell off CUDA's list (unless CUDA_VISIBLE_DEVICES
    chose which GPUs CUDA sees)."""
    nvml = environment.get("nvml") or {}
    gpus = nvml.get("gpus") or []
    if not nvml.get("available") or len(gpus) <= len(checked):
        return None
    if (environment.get("settings") or {}).get("CUDA_VISIBLE_DEVICES") is not None:
        return None  # the user chose which GPUs CUDA sees
    return Verdict("GPU count", FAIL, f"NVML sees {len(gpus)} GPUs but CUDA let {len(checked)} be checked: a GPU may have"
                                      " fallen off the bus or failed to initialize (see nvidia-smi and the kernel log)")  # fmt: skip


VERDICT_STYLE = {PASS: "green", FAIL: "bold red", WARN: "yellow", NA: "dim", INFO: ""}


def verdict_table(verdict: DeviceVerdict) -> Table:
    """One GPU's check: its verdict in the title, a row per finding."""
    # pragma: no mutate block (drawing: scripts/mutation.sh plants bugs in logic; the verdicts are in the file)
    style = VERDICT_STYLE[verdict.status]
    table = Table(title=f"{escape(verdict.device)} · {escape(verdict.device_name)}: [{style}]{verdict.status.upper()}[/]",
                  title_justify="left", show_lines=False)  # fmt: skip
    table.add_column("check")
    table.add_column("result")
    table.add_column("figure")
    for finding in verdict.findings:
        status = finding.status.upper() if finding.status != INFO else INFO  # shown as written: never a verdict
        table.add_row(escape(finding.name), f"[{VERDICT_STYLE[finding.status]}]{status}[/]" if VERDICT_STYLE[finding.status] else status,
                      escape(finding.figure))  # fmt: skip
    return table


def overall(found: list[DeviceVerdict]) -> str:
    """The node's verdict: FAIL if any GPU (or the GPU count) failed; n/a if nothing was checked or a
    GPU could not be judged, for a job scheduler must never read "nothing judged" as healthy; else PASS."""
    if any(v.status == FAIL for v in found):
        return FAIL
    if not found or any(v.status == NA for v in found):
        return NA
    return PASS


EXIT_CODES = {PASS: 0, FAIL: 1, NA: 2}  # what `xferbench check` exits with for each overall verdict


def to_dict(found: list[DeviceVerdict], link_share: float, baseline: str | None) -> dict[str, Any]:
    """What the result file keeps of the verdicts (its `check` field)."""
    return {"status": overall(found), "link_share": link_share, "baseline": baseline,
            "devices": [{**dataclasses.asdict(v), "status": v.status} for v in found]}  # fmt: skip


__all__ = ["EXIT_CODES", "FAIL", "INFO", "LINK_SHARE", "NA", "PASS", "WARN", "DeviceVerdict", "Verdict", "best_point", "checked",
           "overall", "to_dict", "verdict_table", "verdicts"]
