"""How close `xferbench validate`'s time estimate comes to the time the run takes, and whether an H200
run's plan fits a budget once the estimate follows the measured rates.

1. The dry run: `xferbench validate` as a user runs it, on this CPU with the tests' stand-ins for a GPU
   machine (CuPy, NVML, nvidia-smi, nvbandwidth and bandwidthTest: tests/test_validate_command.py's
   gpu_machine_environment, the set-up the slow tests use). validate probes the machine, prints its
   plan and, at the end, the seconds it took beside its estimate; the ratio estimate / took is printed.
   Target: 0.85 to 1.15 (exit 1 where missed).
2. A recorded run's plan (default: results/nvidia-h200/2026-11-26/run-5): its sweeps' series and
   points read from its files, at the copy rates its own raw copies measured, with the points' fixed
   costs a probe measures here, the documented fallback's process starts and finish, and its peer
   commands' seconds as they ran; printed beside the budget (--fit-minutes, default 3), with where
   the time goes; then once more with this machine's process starts and finish as well.

    .venv/bin/python scripts/bench_validate_estimate.py [--args "--quick -f cuda"] [--run DIR] [--fit-minutes 3] [--plan-only]

The ratio is measured in one run; the machine may be busy, so run it twice and look at both.
"""

from __future__ import annotations

import argparse
import math
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


COMMAND_LINE = re.compile(r"^\s*(?:exit \d+|timed out or could not start)\s+([0-9.]+) s  \$ ")


def recorded_peers(folder: Path) -> tuple[int, float]:
    """A recorded run's peer commands and the seconds they took, as its peers/commands.txt says."""
    path = folder / "peers" / "commands.txt"
    found = [COMMAND_LINE.match(line) for line in (path.read_text().splitlines() if path.exists() else [])]
    return len([f for f in found if f]), sum(float(f.group(1)) for f in found if f)


def fixed_part(plan: budget.SweepPlan, rates: budget.Rates) -> float:
    """A sweep's points' and series' costs beside their timed calls: what the fixed cost per point sets."""
    item = math.prod(plan.keys[0].shape) if plan.keys else 0
    per_byte = 1.0 / rates.host_bps
    return len(plan.keys) * (rates.series_s + sum(rates.point_s + b * item * per_byte for b in plan.batches))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--args", default="--quick -f cuda", help="validate's arguments for the dry run")
    parser.add_argument("--run", type=Path, default=RUN_5, help="a recorded GPU run (its validation/ folder is read)")
    parser.add_argument("--fit-minutes", type=float, default=3.0)
    parser.add_argument("--plan-only", action="store_true", help="the recorded run's plan alone (no dry run, no ratio)")
    options = parser.parse_args()
    ratio = None

    scratch = Path(tempfile.mkdtemp(prefix="bench-validate-estimate-"))
    try:
        if not options.plan_only:
            took, estimated, printed = dry_run(shlex.split(options.args), scratch / "dry")
            ratio = estimated / took
            print(f"## 1. validate {options.args} on this CPU with the stand-ins")
            print(PLAN.search(printed).group(0) if PLAN.search(printed) else "(no plan printed)")
            assumes = ASSUMES.search(printed)
            print(f"assumed: {assumes.group(1) if assumes else '(not printed)'}")
            print(f"estimated {estimated:.1f} s, took {took:.1f} s: estimate / took = {ratio:.2f} (target {LOW}..{HIGH})\n")

        folder = options.run / "validation"
        plans = recorded_plans(folder)
        here = probe_here(scratch / "probe", len(plans))
        pinned, pageable = recorded_rates(folder)
        rates = budget.FALLBACK.but(pinned_bps=pinned, pageable_bps=pageable, point_s=here.point_s, host_bps=here.host_bps,
                                    series_s=here.series_s)  # fmt: skip
        sweeps = {p.stem: p.seconds(rates) for p in plans}
        commands, peers = recorded_peers(folder)
        total = sum(sweeps.values()) + peers + rates.finish_s
        print(f"## 2. {options.run.relative_to(REPO) if options.run.is_relative_to(REPO) else options.run}'s plan")
        print(f"rates from its files: pinned {pinned / 1e9:.1f} GB/s, pageable {pageable / 1e9:.1f} GB/s (its raw copies, largest per-call point)")
        print(f"fixed costs measured here: {here.point_s:.3f} s a point + {1e9 / here.host_bps:.2f} s per GB, {here.series_s:.3f} s a series'"
              f" start; starts and finish from the documented fallback: {rates.sweep_start_s:g} s a sweep, {rates.worker_start_s:g} s a"
              f" worker, {rates.finish_s:g} s the finish")  # fmt: skip
        for plan in plans:
            starts = rates.sweep_start_s + rates.worker_start_s * len(plan.frameworks)
            fixed = fixed_part(plan, rates)
            print(f"  {plan.stem}.json: {plan.points} points, {len(plan.frameworks)} worker(s): {sweeps[plan.stem]:.1f} s (starts"
                  f" {starts:.1f} s, points' fixed costs {fixed:.1f} s, their timed calls {sweeps[plan.stem] - starts - fixed:.1f} s)")  # fmt: skip
        print(f"  peers: {commands} commands, {peers:.1f} s as they ran (peers/commands.txt)")
        print(f"  the report, plots and verdict: {rates.finish_s:.1f} s")
        fits = "fits" if total <= options.fit_minutes * 60 else "does not fit"
        print(f"estimated {total:.1f} s ({total / 60:.2f} min): {fits} {options.fit_minutes:g} minutes")
        # The same plan with this machine's starts and finish too: the part the fixed costs here do not set.
        local = rates.but(sweep_start_s=here.sweep_start_s, worker_start_s=here.worker_start_s, finish_s=here.finish_s)
        other = sum(p.seconds(local) for p in plans) + peers + local.finish_s
        print(f"with this machine's starts and finish as well ({here.sweep_start_s:.1f} s a sweep, {here.worker_start_s:.1f} s a worker,"
              f" {here.finish_s:.1f} s the finish): {other:.1f} s ({other / 60:.2f} min):"
              f" {'fits' if other <= options.fit_minutes * 60 else 'does not fit'} {options.fit_minutes:g} minutes")  # fmt: skip
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if ratio is None or LOW <= ratio <= HIGH else 1


if __name__ == "__main__":
    sys.exit(main())
