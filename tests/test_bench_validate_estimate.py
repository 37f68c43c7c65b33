"""scripts/bench_validate_estimate.py's reading of a recorded run: the plan it estimates is the one the run
ran (its series, points, workers and timing from its files), at the rates its own raw copies measured, with
its peers' seconds as they ran; and the stand-in peers it times make the real tools' copies only when asked."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

from conftest import load_script
from test_validate_command import gpu_machine_environment

from xferbench.core.results import load
from xferbench.core.timing import TimingConfig
from xferbench.health import budget

ROOT = Path(__file__).resolve().parent.parent
RUN5 = ROOT / "results" / "nvidia-h200" / "2026-11-26" / "run-5" / "validation"
bench = load_script("bench_validate_estimate")


def test_a_recorded_runs_plan_counts_the_points_and_workers_its_files_hold() -> None:
    plans = {p.stem: p for p in bench.recorded_plans(RUN5)}
    assert {stem: (p.points, len(p.frameworks)) for stem, p in plans.items()} == {"default": (180, 5), "large": (24, 5), "link": (1, 1)}
    assert plans["large"].batches == (256, 1024) and plans["link"].fixed_s == 10.0 and plans["default"].fixed_s is None
    assert plans["default"].timing == TimingConfig(**load(RUN5 / "default.json").config["timing"])


def test_a_recorded_runs_rates_are_its_raw_copies_largest_per_call_points() -> None:
    pinned, pageable = bench.recorded_rates(RUN5)
    series = {s.key.mode: s for s in load(RUN5 / "large.json").series if s.key.framework == "cuda" and s.key.method == "per-call"}
    gib = {mode: next(p for p in s.ok_points() if p.bytes == 2**30) for mode, s in series.items()}
    assert math.isclose(pinned, 2**30 / gib["raw_pinned"].median_s) and math.isclose(pageable, 2**30 / gib["raw_pageable"].median_s)
    assert 55e9 < pinned < 56e9 and 8e9 < pageable < 9e9  # a Gen5 link's, not the fallback's 25 and 8 GB/s


def test_a_recorded_runs_peers_take_the_seconds_they_took() -> None:
    lines = (RUN5 / "peers" / "commands.txt").read_text().splitlines()
    assert bench.recorded_peers(RUN5) == (9, sum(float(line.split()[2]) for line in lines))


def test_the_points_fixed_part_is_each_series_start_and_each_points_cost() -> None:
    plan = budget.SweepPlan("s", tuple(bench.recorded_plans(RUN5)[1].keys[:2]), (256, 1024), ("cuda",), TimingConfig())
    rates = budget.FALLBACK.but(point_s=0.3, host_bps=1e9, series_s=0.2)
    assert math.isclose(bench.fixed_part(plan, rates), 2 * (0.2 + 0.3 * 2 + (256 + 1024) * 2**20 / 1e9))


def test_the_stand_in_peers_make_the_real_tools_copies_only_when_asked(tmp_path) -> None:
    plain, copying = gpu_machine_environment(tmp_path / "a"), gpu_machine_environment(tmp_path / "b", copies=True)
    assert "STANDIN_COPIES" not in plain and copying["STANDIN_COPIES"] == "1"
    tool = tmp_path / "b" / "bin" / "bandwidthTest"
    source = tool.read_text()
    assert "copies(int(opts[\"start\"]), 100, 0 if pinned else 256 * 2**20)" in source  # bandwidthTest's 100 copies and its flush
    ran = subprocess.run([sys.executable, str(tool), "--device=0", "--htod", "--memory=pinned", "--mode=range", "--start=1048576",
                          "--end=1048576", "--increment=1048576", "--csv"], capture_output=True, text=True, env=copying, timeout=120)  # fmt: skip
    assert ran.returncode == 0 and "H2D-Pinned" in ran.stdout
