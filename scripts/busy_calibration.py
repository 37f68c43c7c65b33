"""Calibrate the busy-machine and spread warnings: N sweeps on a quiet machine, N with one busy process.

    python scripts/busy_calibration.py [--runs 3] [--out-dir DIR] [-- SWEEP ARGS...]

Runs `xferbench sweep` (the default sweep unless SWEEP ARGS say otherwise) RUNS times alone, then RUNS
times beside a process that keeps one CPU busy, and prints, per series and batch: the median MB/s of
the quiet runs, the busy runs' MB/s as a ratio to it, the worst run-queue wait and others' CPU time in
each condition, and which points the warnings flagged. A point counts as spoiled when a busy run read
below 0.8 or above 1.25 times the quiet median: a busy machine moves figures both ways. The warnings are right when quiet runs raise none and busy runs flag
the spoiled points. Every figure is from this one run of the script; the result files stay in DIR.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from xferbench.reading.display import UNCERTAIN, busy_points, noisy_points
from xferbench.core.results import BUSY_SHARE
from xferbench.core.results import Point, load

SPOILED = (0.8, 1.25)  # a busy run outside this range of the quiet median was spoiled (it goes either way)


def sweep(path: Path, args: list[str], busy: bool) -> None:
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        subprocess.run([sys.executable, "-m", "xferbench", "sweep", "-o", str(path), *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()


def points(paths: list[Path]) -> dict[tuple[str, int], list[tuple[Point, bool, bool]]]:
    """(series, batch) -> each run's point, whether the busy warning flagged it, whether the spread one did."""
    found: dict[tuple[str, int], list[tuple[Point, bool, bool]]] = {}
    for path in paths:
        for series in load(path).series:
            busy = {p.batch_size for p in busy_points(series)}
            noisy = {p.batch_size for p in noisy_points(series)}  # as printed: a busy point is not called uncertain too
            for p in series.ok_points():
                found.setdefault((series.label(), p.batch_size), []).append((p, p.batch_size in busy, p.batch_size in noisy))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out-dir", type=Path, default=None)
    parser.add_argument("sweep_args", nargs="*")
    args = parser.parse_args()
    folder = args.out_dir or Path(tempfile.mkdtemp(prefix="xferbench-busy-"))
    folder.mkdir(parents=True, exist_ok=True)
    runs = {"quiet": [], "busy": []}
    for condition in ("quiet", "busy"):
        for i in range(1, args.runs + 1):
            path = folder / f"{condition}-{i}.json"
            print(f"sweep {condition} {i}/{args.runs} -> {path}", file=sys.stderr, flush=True)
            sweep(path, args.sweep_args, condition == "busy")
            runs[condition].append(path)
    quiet, busy = points(runs["quiet"]), points(runs["busy"])
    print(f"busy warning: other processes used >= {BUSY_SHARE:.0%} of the CPUs; uncertain-median note: median's 95% CI"
          f" > ±{UNCERTAIN:.0%}; spoiled: a busy run outside {SPOILED[0]}-{SPOILED[1]}x the quiet median."
          f" {args.runs} runs each; results in {folder}")
    print(f"{'series':32} {'batch':>5} {'quiet MB/s':>10} {'busy/quiet':>16} {'wait q|b':>11} {'others q|b':>11}"
          f" {'busy warn q|b':>13} {'uncertain q|b':>15}")
    totals = {"quiet busy-warnings": 0, "quiet uncertain-median notes": 0, "busy uncertain-median notes": 0,
              "spoiled busy points": 0, "spoiled and flagged": 0, "flagged, not spoiled": 0}  # fmt: skip
    for key in sorted(quiet, key=lambda k: (k[0], k[1])):
        q, b = quiet[key], busy.get(key, [])
        base = statistics.median(p.mbps or 0 for p, _, _ in q)
        ratios = [(p.mbps or 0) / base for p, _, _ in b] if base else []
        waits = (max(p.run_wait or 0 for p, _, _ in q), max((p.run_wait or 0 for p, _, _ in b), default=0))
        others = (max(p.others_cpus or 0 for p, _, _ in q), max((p.others_cpus or 0 for p, _, _ in b), default=0))
        warned = (sum(w for _, w, _ in q), sum(w for _, w, _ in b))
        spread = (sum(s for _, _, s in q), sum(s for _, _, s in b))
        totals["quiet busy-warnings"] += warned[0]
        totals["quiet uncertain-median notes"] += spread[0]
        totals["busy uncertain-median notes"] += spread[1]
        for (p, flagged, _), ratio in zip(b, ratios):
            spoiled = not SPOILED[0] <= ratio <= SPOILED[1]
            totals["spoiled busy points"] += spoiled
            totals["spoiled and flagged"] += spoiled and flagged
            totals["flagged, not spoiled"] += flagged and not spoiled
        print(f"{key[0]:32} {key[1]:>5} {base:>10,.0f} {' '.join(f'{r:.2f}' for r in ratios):>16}"
              f" {waits[0]:>5.2f}|{waits[1]:<5.2f} {others[0]:>5.2f}|{others[1]:<5.2f} {warned[0]:>6}|{warned[1]:<6} {spread[0]:>7}|{spread[1]:<7}")
    print("; ".join(f"{name}: {count}" for name, count in totals.items()))


if __name__ == "__main__":
    main()
