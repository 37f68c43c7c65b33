"""validate --max-minutes: the estimate counts what the plan will run, the trims come in their
documented order and never touch the default sweep, the raw ceiling or the link run, and the run
holds its deadline (a sweep stopped past its share keeps what it saved, a peer past the deadline is
skipped and said)."""

from __future__ import annotations

import math
import os
import re
import signal
import sys
import time
from pathlib import Path

from test_running import CHILD

from xferbench.health import budget, validate_command
from xferbench.core.results import Series
from xferbench.core.spec import SeriesKey
from xferbench.core.timing import TimingConfig
from xferbench.measuring.worker import take_header

PEERS = {"nvbandwidth": "/opt/peers/nvbandwidth", "bandwidthTest": "/opt/peers/bandwidthTest"}


def planned(max_minutes: float | None = None, frameworks: tuple[str, ...] = ("sim",), **kwargs) -> validate_command.Validation:  # type: ignore[no-untyped-def]
    """A validation of the simulated link, always installed, so the plan is the same on every machine."""
    run = validate_command.Validation(Path("/nonexistent/v"), "cuda:0", frameworks, peers=dict(PEERS), max_minutes=max_minutes, **kwargs)
    run.fit()
    return run


def test_the_estimate_counts_each_sweeps_series_and_points_and_each_peer_command() -> None:
    run = planned()
    plans = {p.stem: p for p in run.sweep_plans()}
    assert set(plans) == {"default", "large"}  # no cuda framework, no link run
    default, large = plans["default"], plans["large"]
    assert [k.label() for k in default.keys] == ["sim/link/copy@sim", "sim/link/copy/streamed@sim"]  # sim has no seed op
    assert default.points == 2 * 10 and large.points == 2 * 8 and default.frameworks == ("sim",)
    sizes = run.sizes()
    commands = run.peer_commands()
    nvbandwidth = [c for c in commands if c.peer == "nvbandwidth"]
    assert [c.nbytes for c in nvbandwidth] == [s for s in sizes if s % 2**20 == 0]  # its -b is in MiB
    assert nvbandwidth[0].arguments == ["-j", "-b", str(nvbandwidth[0].nbytes // 2**20), "-t", *validate_command.NVBANDWIDTH_TESTS]
    assert [c.memory for c in commands if c.peer == "bandwidthTest"] == ["pinned"] * len(sizes) + ["pageable"] * len(sizes)
    assert run.estimate_s() == sum(p.seconds() for p in plans.values()) + sum(c.seconds for c in commands) + budget.FINISH_S


def test_a_point_costs_its_calls_capped_as_sampling_is_and_its_buffers() -> None:
    timing = TimingConfig(warmup_calls=5, warmup_s=0.05, min_samples=10, min_time_s=0.25, max_samples=1000, max_time_s=10.0)
    fast = budget.point_seconds(0, 1e9, timing)  # 100 µs calls: 1000 samples stop sampling at 0.1 s, before min_time
    assert math.isclose(fast, budget.POINT_S + 0.05 + 1000 * budget.CALL_S + budget.CALL_S)
    nbytes, rate = 2**29, 1e9
    call = budget.CALL_S + nbytes / rate
    slow = budget.point_seconds(nbytes, rate, timing)  # 0.54 s calls: 5 to warm up, 10 samples, one to verify
    assert math.isclose(slow, budget.POINT_S + nbytes / budget.HOST_BPS + 5 * call + 10 * call + call)
    assert math.isclose(budget.point_seconds(nbytes, rate, TimingConfig(max_time_s=3.0)) - slow, 3.0 - 10 * call)  # max_time caps
    assert math.isclose(budget.point_seconds(0, rate, timing, fixed_s=10.0) - fast, 10.0 - 1000 * budget.CALL_S)  # the link run's own time


def test_pageable_series_are_counted_at_the_pageable_rate() -> None:
    timing = TimingConfig()
    pinned = SeriesKey("cuda", "raw_pinned", "copy", "cuda:0", (1024,), "pinned")
    pageable = SeriesKey("cuda", "raw_pageable", "copy", "cuda:0", (1024,), "numpy")
    seconds = [budget.SweepPlan("s", (key,), (2**20,), (), timing).seconds() for key in (pinned, pageable)]
    assert seconds[1] - seconds[0] > 0.3  # 1 GiB per call: 8 GB/s against 25 GB/s, over 16 calls


def test_a_budget_the_plan_fits_trims_nothing() -> None:
    run = planned((planned().estimate_s() + budget.STOP_GRACE_S) / 60 + 0.01)  # the plan and a sweep's stop grace
    assert run.trimmed == [] and run.nvbandwidth_samples is None and run.large_batches is None and run.peer_sizes == "all"
    assert "more than it" not in run.plan_lines()[0]


def test_nvbandwidths_samples_go_first() -> None:
    run = planned((planned().estimate_s() + budget.STOP_GRACE_S - 1) / 60)
    assert run.nvbandwidth_samples == 1 and run.peer_sizes == "all" and run.large_batches is None
    assert run.trimmed == ["nvbandwidth took 1 sample per size (-i 1), not its default 3"]
    assert all(c.arguments[3:5] == ["-i", "1"] for c in run.peer_commands() if c.peer == "nvbandwidth")
    assert run.estimate_s() <= run.max_minutes * 60


def test_the_trims_come_in_the_documented_order_and_spare_the_default_sweep_the_ceiling_and_the_link_run() -> None:
    full = planned(frameworks=("sim", "cuda"))
    order = ["nvbandwidth", "the peers measured", "the large sweep"]
    seen = []
    for share in (1.0, 0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.2, 0.0001):
        run = planned(full.estimate_s() * share / 60, frameworks=("sim", "cuda"))
        kinds = [next(k for k in order if t.startswith(k)) for t in run.trimmed]
        assert kinds == order[: len(kinds)], run.trimmed  # each trim only after every one before it
        seen.append(len(kinds))
        assert run.batches[0] == validate_command.DEFAULT_BATCHES and set(budget.LARGE_KEEP) <= set(run.batches[1])
        assert [p.stem for p in run.sweep_plans()] == ["default", "large", "link"]  # the link run stays
    assert seen == sorted(seen) and seen[-1] == 3
    tiny = planned(0.0001, frameworks=("sim", "cuda"))
    assert tiny.large_batches == budget.LARGE_KEEP and "more than it, trimmed as far as it goes" in tiny.plan_lines()[0]
    kept = sorted({c.nbytes for c in tiny.peer_commands()})
    assert kept and min(kept) >= validate_command.AGREEMENT_BYTES and max(kept) == 2**30  # the raw ceiling's size is still compared
    assert tiny.trimmed[-1] == "the large sweep left out batches 1, 4, 16, 64, 128, 512 of 1 MiB images (kept 256, 1024)"


def test_the_large_batches_go_in_their_order() -> None:
    full = planned()
    large_s = next(p for p in full.sweep_plans() if p.stem == "large").seconds()
    everything_but_large = planned(0.0001)  # every peer trim made
    target = everything_but_large.estimate_s() + (large_s - next(p for p in everything_but_large.sweep_plans() if p.stem == "large").seconds()) / 2
    run = planned((target + budget.STOP_GRACE_S) / 60)
    dropped = [b for b in validate_command.LARGE_BATCHES if b not in run.batches[1]]
    assert dropped and dropped == sorted(budget.LARGE_TRIM_ORDER[: len(dropped)])  # a prefix of the order, nothing else


def test_the_verdict_says_what_was_trimmed_and_how_long_the_run_took() -> None:
    run = planned(0.0001)
    run.took_s = 251.0
    page = validate_command.verdict_page(run, {}, {}, [], [])
    line = next(line for line in page.splitlines() if line.startswith("Run within"))
    assert line.startswith(f"Run within --max-minutes 0.0001 (estimated {budget.minutes(run.estimate_s())}, took 4.2 min): nvbandwidth took 1")
    assert "; the peers measured" in line and line.endswith("(kept 256, 1024).")
    assert "Run within" not in validate_command.verdict_page(planned(), {}, {}, [], [])  # no budget, no line


def test_a_peer_command_that_does_not_fit_before_the_deadline_is_skipped_and_said(tmp_path) -> None:
    log = validate_command.CommandLog(tmp_path / "commands.txt", lambda line: None)
    peer = validate_command.PeerRun("bandwidthTest", "/bin/sleep", log, deadline=time.monotonic() + 30)
    assert peer(["30"], estimate_s=60.0) is None
    assert re.fullmatch(r"bandwidthTest's remaining runs were skipped: (29|30) s of the --max-minutes budget were left and"
                        r" the next is estimated to need 60 s", peer.stopped)  # fmt: skip
    assert (tmp_path / "commands.txt").read_text() == ""  # nothing was started


def test_a_peer_command_is_stopped_at_the_deadline(tmp_path) -> None:
    log = validate_command.CommandLog(tmp_path / "commands.txt", lambda line: None)
    peer = validate_command.PeerRun("bandwidthTest", "/bin/sleep", log, deadline=time.monotonic() + 1.0)
    code, seconds, _, _ = peer(["30"], estimate_s=0.1)
    assert code is None and seconds < 20 and peer.stopped.startswith("bandwidthTest did not finish a run within ")


def test_a_sweep_past_its_share_is_stopped_as_ctrl_c_stops_it_and_keeps_what_it_saved(tmp_path) -> None:
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    code = validate_command.run_child_sweep([sys.executable, "-c", CHILD, str(pid_file)], dict(os.environ), limit_s=5.0)
    assert code is None and time.monotonic() - started < 30
    assert (tmp_path / "child.pid.saved").read_text() == signal.Signals.SIGTERM.name  # it was told to stop, and saved


def test_a_sweep_with_no_time_left_is_not_started_and_said(tmp_path) -> None:
    run = planned(1.0)
    notes: list[str] = []
    files = validate_command.run_sweeps(run, lambda line: None, deadline=time.monotonic() - 1, notes=notes)
    assert files == {"default": None, "large": None}
    assert notes == [f"{stem}.json was not started: the run's --max-minutes budget was spent" for stem in ("default", "large")]


def test_a_sweep_the_later_steps_leave_no_time_says_how_much_was_left_and_needed() -> None:
    """A budget under the estimate is not a budget spent: the note says what was left and what the rest needs."""
    run = planned(1.0)
    notes: list[str] = []
    files = validate_command.run_sweeps(run, lambda line: None, deadline=time.monotonic() + 60, notes=notes)
    assert files["default"] is None
    found = re.fullmatch(r"default\.json was not started: (\d+) s of the --max-minutes budget were left and the steps after it"
                         r" are estimated to need (\d+) s \(at the rates the plan assumed; a longer --max-minutes would have"
                         r" fitted it\)", notes[0])  # fmt: skip
    assert found and 58 <= int(found.group(1)) <= 60 and int(found.group(2)) > 60


def test_an_unbound_workers_empty_numa_record_keeps_the_reason_it_was_not_bound() -> None:
    series = Series.of(SeriesKey("cuda", "raw_pinned", "copy", "cuda:0", (1,)))
    series.numa = {"reason": "not bound: NVML gives no ideal CPUs or NUMA node for this GPU"}
    take_header(series, {"numa": {}, "clock": "wall"})
    assert series.numa["reason"].startswith("not bound: NVML") and series.clock == "wall"
    take_header(series, {"numa": {"cpus": [0, 1], "node": 0}})
    assert series.numa == {"cpus": [0, 1], "node": 0}  # a worker's own binding is the record


def test_a_checkout_that_is_not_installed_names_its_version() -> None:
    import xferbench

    assert xferbench._source_version().endswith("+source") and xferbench._source_version()[0].isdigit()


def test_the_estimate_leaves_out_the_series_a_sweep_would_skip() -> None:
    keys, workers = budget.series_keys(("host", "sim"), "cuda:0", ("copy", "seed"), ("per-call", "streamed"), (8,))
    # host copies on the CPU whatever the device, per call only and without a seed op; sim has no seed op either
    assert [k.label() for k in keys] == ["host/numpy/copy@cpu", "sim/link/copy@sim", "sim/link/copy/streamed@sim"]
    assert workers == ["host", "sim"]


def test_the_peers_keep_the_size_the_peer_check_starts_at() -> None:
    run = planned()
    run.peer_sizes = "from16"
    assert min(c.nbytes for c in run.peer_commands()) == validate_command.AGREEMENT_BYTES
    run.peer_sizes = "few"
    assert sorted({c.nbytes for c in run.peer_commands()}) == [validate_command.AGREEMENT_BYTES, 512 * 196608, 256 * 2**20, 2**30]


def test_each_sweep_may_run_until_what_comes_after_it_is_estimated_to_need(monkeypatch) -> None:
    run = planned(10.0)
    limits: list[float | None] = []
    monkeypatch.setattr(validate_command, "run_child_sweep", lambda command, env, limit: limits.append(limit) or 0)
    deadline = time.monotonic() + 600
    validate_command.run_sweeps(run, lambda line: None, deadline=deadline, notes=[])
    later = sum(c.seconds for c in run.peer_commands()) + budget.FINISH_S + budget.STOP_GRACE_S
    large = next(p for p in run.sweep_plans() if p.stem == "large").seconds()
    assert len(limits) == 2 and abs(limits[0] - (600 - later - large)) < 5 and abs(limits[1] - (600 - later)) < 5
