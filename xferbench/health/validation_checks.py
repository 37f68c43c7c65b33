"""The checks of a GPU validation run: is the ceiling physical, is the link healthy and the memory
local, do the frameworks reach the ceiling, do the two timing methods agree, and did the bytes
xferbench claims really cross the link.

Plain functions over result files, so scripts/validate_gpu.py stays a thin driver and the checks
are tested on CPU-made fixtures. Each check is pass, fail, n/a with the reason it could not run
(a check that could not run never counts as passed), or info: a figure shown for the record that
cannot fail by construction and so proves nothing either way.

Each check takes the results as a list, or as a mapping from each file's name to its result: then
every figure names the file it rests on, so a reader of the verdict can find it. A check looks in
every file it is given, and is n/a only when none holds what it needs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Union

from xferbench.reading.display import rate, size
from xferbench.core import c2c
from xferbench.core.environment import device_entry, lane_rate, link_disagreement, link_readings, pcie_ceiling
from xferbench.core.results import Point, Result, Series
from xferbench.core.spec import H2D, PER_CALL, STREAMED
from xferbench.core.numa import placed_pages
from xferbench.core.telemetry import claimed_bytes, link_below_max, loaded_samples, pages_warning, received_bytes
from xferbench.core.verdict import FAIL, INFO, NA, PASS, Verdict, passed

CEILING_FLOOR = 0.80  # the raw pinned copy reaches at least this share of the theoretical link
PINNED_INTO_FLOOR = 0.95  # torch pinned_into reaches at least this share of the raw ceiling
CLOCK_AGREEMENT = 0.03  # device-event and wall-clock MB/s agree within this at large sizes
METHOD_AGREEMENT = 0.02  # streamed and per-call MB/s agree within this at large sizes
# NVML's count of bytes received against the bytes claimed: at most 10% fewer (a path that claims
# bytes it did not move fails), and at most 35% more, for NVML's documentation does not say whether
# its count includes PCIe packet headers, which cost 10 to 35% of the payload by packet size.
BYTES_BELOW, BYTES_ABOVE = 0.10, 0.35
MIN_LOADED_SAMPLES = 20  # integrated throughput needs this many samples under load to stand for a count
# "Large sizes": from 256 MiB, a copy takes ≥ 5 ms even on PCIe Gen5, so the 15–30 µs of launch and
# synchronization that a per-call sample adds stay under 1%.
LARGE_BYTES = 256 * 2**20


Files = Mapping[str, Result]  # each result by the name of the file it came from ("large.json")
Results = Union[Sequence[Result], Files]


def named(results: Results) -> list[tuple[str, Result]]:
    """Each result with its file's name ("" where the caller gave a plain list), in the order given."""
    if isinstance(results, Mapping):
        return [(name, result) for name, result in results.items() if result is not None]
    return [("", result) for result in results]


def source(name: str) -> str:
    """Where one figure came from, as a figure says it: " (large.json)", or nothing where no name is known."""
    return f" ({name})" if name else ""


def sources(names: Iterable[str]) -> str:
    """Where a figure over several files came from: " in default.json, link.json", or nothing."""
    kept = list(dict.fromkeys(name for name in names if name))
    return f" in {', '.join(kept)}" if kept else ""


def _series(results: Results, framework: str, mode: str, method: str | None = None) -> list[tuple[str, Result, Series]]:
    return [(name, r, s) for name, r in named(results) for s in r.series
            if (s.framework, s.mode, s.op) == (framework, mode, "copy") and s.ok_points()
            and (method is None or s.method == method)]  # fmt: skip


def _cuda(results: Results) -> list[tuple[str, Result, Series]]:
    return [(name, r, s) for name, r in named(results) for s in r.series if s.device.startswith("cuda") and s.ok_points()]


def _over_c2c(result: Result, series: Series) -> bool:
    """Whether the series' GPU reaches host memory over NVLink-C2C, where NVML's PCIe readings are not the host link."""
    return c2c.is_c2c(device_entry(result.environment, series.device))


def _worst(gaps: Iterable[tuple[float, str]]) -> tuple[tuple[float, str] | None, int]:
    """The relative gap furthest from zero with where it was (None if there was none), and how many there were."""
    found = list(gaps)
    return (max(found, key=lambda gap: abs(gap[0])) if found else None), len(found)


def _largest(series: Series) -> Point:
    return max(series.ok_points(), key=lambda p: p.bytes)


def raw_ceiling_check(results: Results) -> Verdict:
    """The raw pinned copy is at most the link's theoretical rate (else the clock, the byte count or
    the link facts are wrong) and at least 80% of it (else the link, the NUMA placement or the setup
    is poor). The streamed figure counts where there is one: it is the link's own rate."""
    name = f"raw pinned ceiling within {CEILING_FLOOR:.0%}–100% of the theoretical link"
    raw = _series(results, "cuda", "raw_pinned")
    if not raw:
        return Verdict(name, NA, "no cuda/raw_pinned series was measured (pip install 'xferbench[cupy]')")
    file, result, series = max(raw, key=lambda found: (found[2].method == STREAMED, found[2].summary.peak_mbps or 0))
    device = device_entry(result.environment, series.device)
    ceiling = pcie_ceiling(device, series.link)
    peak = series.summary.peak_mbps or 0.0
    if ceiling is None and c2c.is_c2c(device):  # a Grace node: a PCIe reading is never its ceiling
        return Verdict(name, NA, f"peak {rate(peak)} MB/s{source(file)}; the link is {c2c.unknown_ceiling(device).removeprefix('unknown: ')}")
    if ceiling is None:
        return Verdict(name, NA, f"peak {rate(peak)} MB/s{source(file)}; the link is unknown (no NVML PCIe facts for {series.device})")
    share = peak / (ceiling[0] * 1e3)
    figure = f"{series.label()}{source(file)}: {rate(peak)} MB/s = {share:.1%} of {ceiling[1]}"
    if share > 1.0:
        disagreement = link_disagreement(peak, device, series.link)
        if disagreement:
            return Verdict(name, NA, disagreement + source(file))
        readings = ", ".join(f"{where} Gen{g} x{w} ({lane_rate(g, w):.1f} GB/s)" for where, g, w in link_readings(device, series.link))
        return Verdict(name, FAIL, f"{figure}: faster than every reading of the link allows ({readings}): the clock or the byte count is wrong")
    return Verdict(name, PASS if share >= CEILING_FLOOR else FAIL, figure)


def link_check(results: Results) -> Verdict:
    """The PCIe link ran at its maximum generation and width while data moved: a link trained down
    (a bad riser, a BIOS setting, power saving) caps every figure below it."""
    name = "PCIe link at its maximum generation and width under load"
    measured = [(f, r, s) for f, r, s in _cuda(results) if loaded_samples(s.link or {})]
    sampled = [(f, r, s) for f, r, s in measured if not _over_c2c(r, s)]
    if measured and not sampled:
        # not a fact missing but a check that does not apply: shown, never judged, so a Grace node can pass
        return Verdict(name, INFO, f"does not apply: the host link is {c2c.C2C} (a Grace node); NVML's PCIe generation and"
                                   " width are not the host link")  # fmt: skip
    if not sampled:
        return Verdict(name, NA, "no CUDA series has NVML link samples taken while data moved")
    slow = [(f, s, warning) for f, r, s in sampled if (warning := link_below_max(s, r.environment))]
    if slow:
        file, series, warning = slow[0]
        return Verdict(name, FAIL, f"{series.label()}{source(file)}: {warning}")
    summary = sampled[0][2].link["summary"]
    return Verdict(name, PASS, f"Gen{summary['gen_under_load'][1]} x{summary['width_under_load'][1]} under load"
                             f" in {len(sampled)} series{sources(f for f, _, _ in sampled)}")  # fmt: skip


def placement_check(results: Results) -> Verdict:
    """Every CUDA series ran with its worker's CPUs and memory on its GPU's NUMA node, and no sampled
    page of its source buffers sat elsewhere: else its figures depend on where the scheduler happened
    to put it. Pinned memory that a driver maps cannot be placed by the kernel (EFAULT): such pages
    prove nothing either way, so the run must show some pages the kernel could place."""
    name = "workers bound to the GPU's NUMA node, source pages on it"
    measured = _cuda(results)
    if not measured:
        return Verdict(name, NA, "no CUDA series was measured")
    unbound = [(f, s, (s.numa or {}).get("reason") or "no binding recorded") for f, _, s in measured if not (s.numa or {}).get("cpus")]
    if unbound:
        file, series, why = unbound[0]
        return Verdict(name, NA, f"{len(unbound)} series not bound, first {series.label()}{source(file)}: {why}")
    refused = [(f, s) for f, _, s in measured if (s.numa.get("requested") or {}).get("node") is not None and s.numa.get("node") is None]
    if refused:
        file, series = refused[0]
        return Verdict(name, NA, f"{series.label()}{source(file)}: its memory could not be put on node {series.numa['requested']['node']}:"
                               f" {series.numa.get('reason')}")  # fmt: skip
    unknown = [(f, r, s) for f, r, s in measured if (s.numa.get("requested") or {}).get("node") is None]
    if unknown:  # bound to CPUs alone: no page can be said to be on or off a node nobody knows
        file, result, series = unknown[0]
        nvml = device_entry(result.environment, series.device).get("nvml") or {}
        why = nvml.get("numa_node_reason") or "the result records no host node for the GPU"
        return Verdict(name, NA, f"node unknown: {series.label()}{source(file)} was bound to CPUs only ({why})")
    off = [(f, s, warning) for f, r, s in measured if (warning := pages_warning(s, r.environment))]
    if off:
        file, series, warning = off[0]
        return Verdict(name, FAIL, f"{series.label()}{source(file)}: {warning}")
    pages = [p.host_nodes for _, _, s in measured for p in s.points if p.host_nodes]
    placed, sampled = sum(placed_pages(p) for p in pages), sum(sum(p.values()) for p in pages)
    if not placed:
        return Verdict(name, NA, f"the kernel placed none of {sampled} sampled pages on a node (driver-mapped pinned memory"
                               " answers EFAULT; move_pages may be refused): placement unproven")  # fmt: skip
    where = ", ".join(f"node {n}" for n in sorted({s.numa.get("node") for _, _, s in measured}))
    unplaced = f"; {sampled - placed} the kernel cannot place (driver-mapped pinned memory)" if sampled > placed else ""
    return Verdict(name, PASS, f"{len(measured)} series{sources(f for f, _, _ in measured)} bound to {where}; {placed} sampled pages"
                             f" on it, none off it{unplaced}")  # fmt: skip


def _same_file_first(found: list[tuple[str, Result, Series]], result: Result) -> list[tuple[str, Result, Series]]:
    """The series of `result`'s own file first, then those of the other files in their order: a figure
    is set beside one of its own run where there is one, else beside another file's (link.json's long
    run, where the large sweep was cut short), so a check is n/a only where no file has a counterpart."""
    return [entry for entry in found if entry[1] is result] + [entry for entry in found if entry[1] is not result]


def _pair_source(mine: str, theirs: str, mine_as: str, theirs_as: str) -> str:
    """Where a pair of figures came from: one file for both, or each side's own."""
    if not (mine or theirs) or mine == theirs:
        return source(mine)
    return f" ({mine_as} from {mine or 'an unnamed file'}, {theirs_as} from {theirs or 'an unnamed file'})"


def pinned_into_check(results: Results) -> Verdict:
    """torch's best pattern (pinned source, preallocated destination) reaches the raw ceiling at the
    largest batch, where both move the same bytes the same way: what is left is framework overhead.
    The raw figure is taken from torch's own file where it has the size, else from another file's."""
    name = f"torch pinned_into ≥ {PINNED_INTO_FLOOR:.0%} of the raw ceiling at the largest batch"
    raw, torch = _series(results, "cuda", "raw_pinned"), _series(results, "torch", "pinned_into")
    if not raw or not torch:
        missing = " and ".join(n for n, found in (("cuda/raw_pinned", raw), ("torch/pinned_into", torch)) if not found)
        return Verdict(name, NA, f"no {missing} series was measured")
    pairs = []
    for file, result, series in torch:
        at = _largest(series)
        for raw_file, _, reference in _same_file_first(raw, result):
            if reference.device != series.device or reference.method != series.method:
                continue
            match = next((p for p in reference.ok_points() if p.bytes == at.bytes), None)
            if match is not None and match.mbps:
                pairs.append((at, match, series, file, raw_file))
                break
    if not pairs:
        return Verdict(name, NA, "no batch size measured by both on the same device with the same timing, in any file")
    at, match, series, file, raw_file = max(pairs, key=lambda pair: (pair[0].bytes, pair[2].method == PER_CALL))
    share = (at.mbps or 0) / (match.mbps or 1)
    figure = (f"{rate(at.mbps)} / {rate(match.mbps)} MB/s = {share:.1%} at batch {at.batch_size}"
              f" ({at.bytes / 2**20:,.0f} MiB, {series.method}){_pair_source(file, raw_file, 'torch', 'raw')}")  # fmt: skip
    return Verdict(name, PASS if share >= PINNED_INTO_FLOOR else FAIL, figure)


def methods_check(results: Results) -> Verdict:
    """The raw pinned copy's streamed and per-call figures agree on large copies, where a call's launch
    and wait vanish beside the copy: else one of the two methods times something besides the link.
    A per-call point is set beside the streamed one of its own file where there is one, else beside
    another file's at the same size on the same device (link.json's streamed 256 MiB, say)."""
    name = f"streamed and per-call MB/s within {METHOD_AGREEMENT:.0%} from {LARGE_BYTES // 2**20} MiB (cuda/raw_pinned)"
    streamed = _series(results, "cuda", "raw_pinned", STREAMED)

    def gaps() -> Iterator[tuple[float, str]]:
        for file, result, series in _series(results, "cuda", "raw_pinned", PER_CALL):
            for point in series.ok_points():
                if point.bytes < LARGE_BYTES or not point.mbps:
                    continue
                other = next(((f, p) for f, _, s in _same_file_first(streamed, result) if s.device == series.device
                              for p in s.ok_points() if p.bytes == point.bytes and p.mbps), None)  # fmt: skip
                if other is not None:
                    where = (f"batch {point.batch_size} ({size(point.bytes)}): {rate(other[1].mbps)} streamed, {rate(point.mbps)} per call"
                             f" MB/s{_pair_source(other[0], file, 'streamed', 'per call')}")  # fmt: skip
                    yield (other[1].mbps or 0) / point.mbps - 1, where

    worst, count = _worst(gaps())
    if worst is None:
        return Verdict(name, NA, f"no file has cuda/raw_pinned per call at {LARGE_BYTES // 2**20} MiB or more with a streamed figure at"
                               " the same size in it or another file")  # fmt: skip
    status = PASS if abs(worst[0]) <= METHOD_AGREEMENT else FAIL
    return Verdict(name, status, f"worst {worst[0]:+.1%} (streamed vs per call) at {worst[1]}, over {count} sizes")


def bytes_check(results: Results) -> Verdict:
    """What NVML says the GPU received over PCIe during the longest raw run agrees with the bytes
    xferbench says it moved: a wrong byte count, a copy that moved less than claimed, or a clock
    that cut the run short shows here, whatever the timing says."""
    name = (f"NVML's count of bytes received within -{BYTES_BELOW:.0%} / +{BYTES_ABOVE:.0%} of the bytes claimed"
            " (longest cuda/raw_pinned run)")  # fmt: skip
    raw = _series(results, "cuda", "raw_pinned")
    runs = [(claimed_bytes(s), f, s) for f, r, s in raw if s.link.get("t_s") and not _over_c2c(r, s)]
    runs = [(claimed, f, s) for claimed, f, s in runs if claimed]
    if raw and all(_over_c2c(r, s) for _, r, s in raw):
        return Verdict(name, INFO, f"does not apply: the host link is {c2c.C2C} (a Grace node); NVML's PCIe byte count does not"
                                   " count its transfers")  # fmt: skip
    if not runs:
        return Verdict(name, NA, "no cuda/raw_pinned series has both its transfers counted and NVML link samples")
    claimed, file, series = max(runs, key=lambda run: run[0])
    label = series.label() + source(file)
    received, how = received_bytes(series.link)
    if received is None:
        return Verdict(name, NA, f"{label}: NVML's count is {how}")
    loaded = len(loaded_samples(series.link))
    if how.startswith("≈") and loaded < MIN_LOADED_SAMPLES:
        return Verdict(name, NA, f"{label}: only {loaded} samples under load, too few to integrate (needs {MIN_LOADED_SAMPLES}):"
                               " a run of a few seconds or more is needed")  # fmt: skip
    gap = received / claimed - 1
    figure = f"{label}: claimed {size(claimed)}, NVML {size(received)} ({how}): {gap:+.1%}"
    return Verdict(name, PASS if -BYTES_BELOW <= gap <= BYTES_ABOVE else FAIL, figure)


def clock_check(results: Results) -> Verdict:
    """Device-event and wall-clock MB/s of large pinned copies, for the record. Both events are
    recorded after the wall clock starts and complete before it stops, so device time cannot exceed
    wall time, and on large copies the launch costs are too small to show: the two agree by
    construction, so this cannot fail and proves nothing. The bytes and methods checks can fail."""
    name = f"device-event vs wall-clock MB/s from {LARGE_BYTES // 2**20} MiB (pinned copies, information)"
    worst, count = _worst((point.mbps / point.device_mbps - 1, f"{series.label()} batch {point.batch_size}{source(file)}")
                          for file, result in named(results) for series in result.series
                          if series.op == "copy" and series.host_buffer == "pinned"
                          for point in series.ok_points()
                          if point.bytes >= LARGE_BYTES and point.device_mbps and point.mbps)  # fmt: skip
    if worst is None:
        return Verdict(name, NA, f"no pinned copy of {LARGE_BYTES // 2**20} MiB or more has a device clock"
                                 f"{sources(f for f, _ in named(results))}")  # fmt: skip
    return Verdict(name, INFO, f"worst {worst[0]:+.1%} (wall vs device) at {worst[1]}, over {count} points")


def verified_check(results: Results) -> Verdict:
    """Every point of every series that ran passed its byte check; out-of-memory is not a failure."""
    name = "every path's bytes verified"
    ran = [(f, s) for f, r in named(results) for s in r.series if s.status != "skipped"]
    failed = [f"{s.label()}{source(f)}: {s.reason or 'failed'}" for f, s in ran if s.status == "failed"]
    failed += [f"{s.label()} batch {p.batch_size}{source(f)}: {p.error}" for f, s in ran for p in s.points
               if p.status == "error" and not (p.error or "").startswith("out of memory")]  # fmt: skip
    if not ran:
        return Verdict(name, NA, "no series ran")
    points = sum(len(s.ok_points()) for _, s in ran)
    if failed:
        return Verdict(name, FAIL, f"{len(failed)} failure(s), first: {failed[0]}")
    return Verdict(name, PASS, f"{len(ran)} series, {points} point{'s' if points != 1 else ''}{sources(f for f, _ in ran)},"
                               " every byte of each verified")  # fmt: skip


def completed_check(files: Mapping[str, Result | None], absent: str = "not written") -> Verdict:
    """Every sweep of the run wrote its file and ran to the end: checks over a run cut short (the
    1 GiB sweep never started, say) could pass on what little was measured. `absent`: what a file
    that is not there is said to be (a re-read cannot tell a file never written from one lost since)."""
    name = "every sweep ran to the end"
    missing = [f"{label}: {absent}" for label, result in files.items() if result is None]
    short = [f"{label}: {result.status}" for label, result in files.items() if result is not None and result.status != "complete"]
    if missing or short:
        return Verdict(name, FAIL, "; ".join(missing + short))
    return Verdict(name, PASS, f"{len(files)} file(s) complete: {', '.join(files)}")


def run_checks(results: Results) -> list[Verdict]:
    """The checks judge host-to-device figures (the link's own counters count what the GPU received):
    d2h and bidir series in the same files are left out of them."""
    kept = [(name, dataclasses.replace(r, series=[s for s in r.series if s.direction == H2D])) for name, r in named(results)]
    given: Results = dict(kept) if isinstance(results, Mapping) else [r for _, r in kept]
    return [raw_ceiling_check(given), link_check(given), placement_check(given), pinned_into_check(given),
            methods_check(given), bytes_check(given), verified_check(given), clock_check(given)]  # fmt: skip


def render(checks: Sequence[Verdict]) -> str:
    """A Markdown table of the checks, to print and to paste beside the report."""
    lines = ["| check | result | figure |", "| --- | --- | --- |"]
    lines += [f"| {c.name} | **{c.status.upper()}** | {c.figure.replace('|', '/')} |" for c in checks]
    return "\n".join(lines) + "\n"


__all__ = ["Files", "Results", "Verdict", "completed_check", "named", "passed", "run_checks", "render", "source", "sources"]
