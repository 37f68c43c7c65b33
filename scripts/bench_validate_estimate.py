"""How close `xferbench validate`'s time estimate comes to the time the run takes, and whether an H200
run's plan fits a budget once the estimate follows the measured rates.

1. The dry run: `xferbench validate` as a user runs it, on this CPU with the tests' stand-ins for a GPU
   machine (CuPy, NVML, nvidia-smi, nvbandwidth and bandwidthTest: tests/test_validate_command.py's
   gpu_machine_environment, the set-up the slow tests use). validate probes the machine, prints its
   plan and, at the end, the seconds it took beside its estimate; the ratio estimate / took is printed.
   Target: 0.85 to 1.15 (exit 1 where missed).
2. A recorded run's plan (default: results/nvidia-h200/2026-11-26/run-5): its sweeps' series and
   points and its peer commands read from its files, at the copy rates its own raw copies measured,
   with the fixed costs a probe measures here; printed beside the budget (--fit-minutes, default 3).

    .venv/bin/python scripts/bench_validate_estimate.py [--args "--quick -f cuda"] [--run DIR] [--fit-minutes 3]

The ratio is measured in one run; the machine may be busy, so run it twice and look at both.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from test_validate_command import gpu_machine_environment  # noqa: E402  (the stand-ins the slow tests use)

from xferbench.core.results import Result, load  # noqa: E402
from xferbench.core.timing import TimingConfig  # noqa: E402
from xferbench.health import budget  # noqa: E402

TOOK = re.compile(r"^validate took ([0-9.]+) s, estimated ([0-9.]+) s$", re.MULTILINE)
PLAN = re.compile(r"^plan: about .*$", re.MULTILINE)
ASSUMES = re.compile(r"^  the estimate assumes (.*)$", re.MULTILINE)
LOW, HIGH = 0.85, 1.15
RUN_5 = REPO / "results" / "nvidia-h200" / "2026-11-26" / "run-5"


def dry_run(arguments: list[str], folder: Path) -> tuple[float, float, str]:
    """validate on the stand-ins, as a user runs it; its seconds taken and estimated, and what it printed."""
    env = gpu_machine_environment(folder, copies=True)  # the peers' stand-ins make the real tools' copies
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env["PYTHONPATH"]])
    command = [sys.executable, "-m", "xferbench", "validate", str(folder / "validation"), *arguments]
    ran = subprocess.run(command, capture_output=True, text=True, env=env, cwd=folder, timeout=1800)
    printed = ran.stdout + ran.stderr
    found = TOOK.search(printed)
    if found is None:
        raise SystemExit(f"validate printed no time taken (exit {ran.returncode}):\n{printed[-3000:]}")
    return float(found.group(1)), float(found.group(2)), printed


def probe_here(folder: Path, sweeps: int) -> budget.Rates:
    """The probe validate runs, run here on the stand-ins (no peers: only the points' fixed costs are wanted)."""
    env = gpu_machine_environment(folder)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env["PYTHONPATH"]])
    sys.path[:0] = env["PYTHONPATH"].split(os.pathsep)  # CuPy's stand-in, for the backend's own check here
    from xferbench.health import calibrate

    return calibrate.calibrate("cuda:0", 0, True, {}, sweeps, lambda line: None, env)


def recorded_plans(folder: Path) -> list[budget.SweepPlan]:
    """A recorded validation's sweeps as the estimate counts them: each file's series that ran, its batches, its workers, its timing."""
    plans = []
    for stem in ("default", "large", "link"):
        path = folder / f"{stem}.json"
        if not path.exists():
            continue
        result: Result = load(path)
        ran = [s for s in result.series if s.status != "skipped" and s.points]
        batches = tuple(sorted({p.batch_size for s in ran for p in s.points}))
        timing = TimingConfig(**(result.config.get("timing") or {}))
        fixed = timing.min_time_s if stem == "link" else None
        frameworks = tuple(dict.fromkeys(s.key.framework for s in ran))
        plans.append(budget.SweepPlan(stem, tuple(s.key for s in ran), batches, frameworks, timing, fixed))
    return plans


def recorded_rates(folder: Path) -> tuple[float, float]:
    """The pinned and pageable rates a recorded run's raw copies measured: the largest per-call point of each."""
    rates = {}
    for stem in ("large", "default"):
        path = folder / f"{stem}.json"
        if not path.exists():
            continue
        for series in load(path).series:
            if series.key.framework == "cuda" and series.key.method == "per-call" and series.ok_points():
                largest = max(series.ok_points(), key=lambda p: p.bytes)
                rates.setdefault(series.key.mode, largest.bytes / largest.median_s)
    if "raw_pinned" not in rates or "raw_pageable" not in rates:
        raise SystemExit(f"{folder}: no raw pinned and pageable per-call copies to read rates from")
    return rates["raw_pinned"], rates["raw_pageable"]


def recorded_peers(folder: Path, rates: budget.Rates) -> float:
    """A recorded run's peer commands (peers/commands.txt), each estimated at the rates given."""
    path = folder / "peers" / "commands.txt"
    total = 0.0
    for line in path.read_text().splitlines() if path.exists() else []:
        words = shlex.split(line.split("$ ", 1)[1])
        if any(w.endswith("nvbandwidth") for w in words):
            nbytes = int(words[words.index("-b") + 1]) * 2**20
            samples = int(words[words.index("-i") + 1]) if "-i" in words else None
            tests = len(words) - words.index("-t") - 1
            total += budget.nvbandwidth_seconds(nbytes, tests, samples, rates)
        else:
            options = dict(w[2:].split("=", 1) for w in words if w.startswith("--") and "=" in w)
            total += budget.bandwidthtest_seconds(int(options["start"]), options["memory"], rates)
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--args", default="--quick -f cuda", help="validate's arguments for the dry run")
    parser.add_argument("--run", type=Path, default=RUN_5, help="a recorded GPU run (its validation/ folder is read)")
    parser.add_argument("--fit-minutes", type=float, default=3.0)
    options = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="bench-validate-estimate-"))
    try:
        took, estimated, printed = dry_run(shlex.split(options.args), scratch / "dry")
        ratio = estimated / took
        print(f"## 1. validate {options.args} on this CPU with the stand-ins")
        print(PLAN.search(printed).group(0) if PLAN.search(printed) else "(no plan printed)")
        assumes = ASSUMES.search(printed)
        print(f"assumed: {assumes.group(1) if assumes else '(not printed)'}")
        print(f"estimated {estimated:.1f} s, took {took:.1f} s: estimate / took = {ratio:.2f} (target {LOW}..{HIGH})")

        folder = options.run / "validation"
        plans = recorded_plans(folder)
        here = probe_here(scratch / "probe", len(plans))
        pinned, pageable = recorded_rates(folder)
        rates = budget.FALLBACK.but(pinned_bps=pinned, pageable_bps=pageable, point_s=here.point_s, host_bps=here.host_bps,
                                    series_s=here.series_s)  # fmt: skip
        sweeps = {p.stem: p.seconds(rates) for p in plans}
        peers = recorded_peers(folder, rates)
        total = sum(sweeps.values()) + peers + rates.finish_s
        print(f"\n## 2. {options.run.relative_to(REPO) if options.run.is_relative_to(REPO) else options.run}'s plan")
        print(f"rates from its files: pinned {pinned / 1e9:.1f} GB/s, pageable {pageable / 1e9:.1f} GB/s (its raw copies, largest per-call point)")
        print(f"fixed costs measured here: {here.point_s:.3f} s a point + {1e9 / here.host_bps:.2f} s per GB, {here.series_s:.3f} s a series'"
              f" start; starts and finish from the documented fallback: {rates.sweep_start_s:g} s a sweep, {rates.worker_start_s:g} s a"
              f" worker, {rates.nvbandwidth_start_s:g} s a peer run, {rates.finish_s:g} s the finish")  # fmt: skip
        for plan in plans:
            print(f"  {plan.stem}.json: {plan.points} points, {len(plan.frameworks)} worker(s): {sweeps[plan.stem]:.1f} s")
        print(f"  peers' commands (peers/commands.txt): {peers:.1f} s")
        fits = "fits" if total <= options.fit_minutes * 60 else "does not fit"
        print(f"estimated {total:.1f} s ({total / 60:.2f} min): {fits} {options.fit_minutes:g} minutes")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if LOW <= ratio <= HIGH else 1


if __name__ == "__main__":
    sys.exit(main())
