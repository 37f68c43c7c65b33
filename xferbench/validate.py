"""The checks of a GPU validation run: is the ceiling physical, do the frameworks reach it, do the clocks agree.

Plain functions over result files, so scripts/validate_gpu.py stays a thin driver and the checks
are tested on CPU-made fixtures. Each check is pass, fail, or n/a with the reason it could not run:
a check that could not run never counts as passed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xferbench.display import rate
from xferbench.environment import device_entry, pcie_ceiling
from xferbench.results import Point, Result, Series

PASS, FAIL, NA = "pass", "fail", "n/a"
CEILING_FLOOR = 0.80  # the raw pinned copy reaches at least this share of the theoretical link
PINNED_INTO_FLOOR = 0.95  # torch pinned_into reaches at least this share of the raw ceiling
CLOCK_AGREEMENT = 0.03  # device-event and wall-clock MB/s agree within this at large sizes
# "Large sizes": from 256 MiB, a copy takes ≥ 5 ms even on PCIe Gen5, so the 15–30 µs of launch and
# synchronization that wall time adds stay under 1% and a real disagreement shows above 3%.
LARGE_BYTES = 256 * 2**20


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # PASS, FAIL or NA
    figure: str  # the measured figure, or why the check could not run


def _series(results: Sequence[Result], framework: str, mode: str) -> list[tuple[Result, Series]]:
    return [(r, s) for r in results for s in r.series
            if (s.framework, s.mode, s.op) == (framework, mode, "copy") and s.ok_points()]  # fmt: skip


def _largest(series: Series) -> Point:
    return max(series.ok_points(), key=lambda p: p.bytes)


def raw_ceiling_check(results: Sequence[Result]) -> Check:
    """The raw pinned copy is at most the link's theoretical rate (else the clock or the link facts
    are wrong) and at least 80% of it (else the link, the NUMA placement or the setup is poor)."""
    name = f"raw pinned ceiling within {CEILING_FLOOR:.0%}–100% of the theoretical link"
    raw = _series(results, "cuda", "raw_pinned")
    if not raw:
        return Check(name, NA, "no cuda/raw_pinned series was measured (pip install 'xferbench[cupy]')")
    result, series = max(raw, key=lambda rs: rs[1].summary.peak_mbps or 0)
    ceiling = pcie_ceiling(device_entry(result.environment, series.device))
    peak = series.summary.peak_mbps or 0.0
    if ceiling is None:
        return Check(name, NA, f"peak {rate(peak)} MB/s; the link is unknown (no NVML PCIe facts for {series.device})")
    share = peak / (ceiling[0] * 1e3)
    status = PASS if CEILING_FLOOR <= share <= 1.0 else FAIL
    return Check(name, status, f"{rate(peak)} MB/s = {share:.1%} of {ceiling[1]}")


def pinned_into_check(results: Sequence[Result]) -> Check:
    """torch's best pattern (pinned source, preallocated destination) reaches the raw ceiling at the
    largest batch, where both move the same bytes: what is left is framework overhead."""
    name = f"torch pinned_into ≥ {PINNED_INTO_FLOOR:.0%} of the raw ceiling at the largest batch"
    raw, torch = _series(results, "cuda", "raw_pinned"), _series(results, "torch", "pinned_into")
    if not raw or not torch:
        missing = " and ".join(n for n, found in (("cuda/raw_pinned", raw), ("torch/pinned_into", torch)) if not found)
        return Check(name, NA, f"no {missing} series was measured")
    pairs = []
    for result, series in torch:
        reference = next((s for r, s in raw if r is result and s.device == series.device), None)
        if reference is not None:
            at = _largest(series)
            match = next((p for p in reference.ok_points() if p.bytes == at.bytes), None)
            if match is not None and match.mbps:
                pairs.append((at, match))
    if not pairs:
        return Check(name, NA, "no batch size measured by both in the same file on the same device")
    at, match = max(pairs, key=lambda pair: pair[0].bytes)
    share = (at.mbps or 0) / (match.mbps or 1)
    figure = f"{rate(at.mbps)} / {rate(match.mbps)} MB/s = {share:.1%} at batch {at.batch_size} ({at.bytes / 2**20:,.0f} MiB)"
    return Check(name, PASS if share >= PINNED_INTO_FLOOR else FAIL, figure)


def clock_check(results: Sequence[Result]) -> Check:
    """Where a device clock exists, it and the wall clock agree on large copies: else the sync
    waits for too little (wall faster) or times something besides the copy (wall much slower).
    Only pinned copies count: from pageable memory the host stages the data while the stream is
    idle, inside both clocks, so they agree by construction and prove nothing."""
    name = (f"device-event and wall-clock MB/s within {CLOCK_AGREEMENT:.0%} from {LARGE_BYTES // 2**20} MiB"
            " (pinned copies)")  # fmt: skip
    worst: tuple[float, str] | None = None
    count = 0
    for result in results:
        for series in result.series:
            if series.op != "copy" or series.host_buffer != "pinned":
                continue
            for point in series.ok_points():
                if point.bytes >= LARGE_BYTES and point.device_mbps and point.mbps:
                    count += 1
                    gap = point.mbps / point.device_mbps - 1
                    if worst is None or abs(gap) > abs(worst[0]):
                        worst = (gap, f"{series.label()} batch {point.batch_size}")
    if worst is None:
        return Check(name, NA, f"no pinned copy of {LARGE_BYTES // 2**20} MiB or more has a device clock")
    status = PASS if abs(worst[0]) <= CLOCK_AGREEMENT else FAIL
    return Check(name, status, f"worst {worst[0]:+.1%} (wall vs device) at {worst[1]}, over {count} points")


def verified_check(results: Sequence[Result]) -> Check:
    """Every point of every series that ran passed its byte check; out-of-memory is not a failure."""
    name = "every path's bytes verified"
    ran = [s for r in results for s in r.series if s.status != "skipped"]
    failed = [f"{s.label()}: {s.reason or 'failed'}" for s in ran if s.status == "failed"]
    failed += [f"{s.label()} batch {p.batch_size}: {p.error}" for s in ran for p in s.points
               if p.status == "error" and not (p.error or "").startswith("out of memory")]  # fmt: skip
    if not ran:
        return Check(name, NA, "no series ran")
    points = sum(len(s.ok_points()) for s in ran)
    if failed:
        return Check(name, FAIL, f"{len(failed)} failure(s), first: {failed[0]}")
    return Check(name, PASS, f"{len(ran)} series, {points} points verified")


def completed_check(files: Mapping[str, Result | None]) -> Check:
    """Every sweep of the run wrote its file and ran to the end: checks over a run cut short (the
    1 GiB sweep never started, say) could pass on what little was measured."""
    name = "every sweep ran to the end"
    missing = [f"{label}: not written" for label, result in files.items() if result is None]
    short = [f"{label}: {result.status}" for label, result in files.items() if result is not None and result.status != "complete"]
    if missing or short:
        return Check(name, FAIL, "; ".join(missing + short))
    return Check(name, PASS, f"{len(files)} file(s) complete: {', '.join(files)}")


def run_checks(results: Sequence[Result]) -> list[Check]:
    return [raw_ceiling_check(results), pinned_into_check(results), clock_check(results), verified_check(results)]


def render(checks: Sequence[Check]) -> str:
    """A Markdown table of the checks, to print and to paste beside the report."""
    lines = ["| check | result | figure |", "| --- | --- | --- |"]
    lines += [f"| {c.name} | **{c.status.upper()}** | {c.figure.replace('|', '/')} |" for c in checks]
    return "\n".join(lines) + "\n"


__all__ = ["Check", "completed_check", "run_checks", "render"]
