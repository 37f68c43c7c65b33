"""validate's calibration: the probe's file and the times its lines arrived give the rates and fixed costs
the estimate assumes (on fake clocks: each time is set by the test), and the estimate, the trims for
--max-minutes and the plan follow them; where nothing is measured, the documented fallback is used and
said."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from xferbench.core.errors import XferbenchError
from xferbench.core.results import Point, Result, load
from xferbench.core.spec import SeriesKey
from xferbench.core.timing import TimingConfig
from xferbench.health import budget, calibrate, validate_command

REPO = Path(__file__).resolve().parent.parent
DEFAULT5 = REPO / "results" / "nvidia-h200" / "2026-11-26" / "run-5" / "validation" / "default.json"
PEERS = {"nvbandwidth": "/opt/peers/nvbandwidth", "bandwidthTest": "/opt/peers/bandwidthTest"}


def probe_file() -> Result:
    """A probe's file: the H200 run's raw per-call copies (pinned, then pageable; 192 KiB to 96 MiB), nothing else."""
    result = load(DEFAULT5)
    result.series = [s for s in result.series if s.key.framework == "cuda" and s.key.method == "per-call" and s.key.op == "copy"]
    return result


def landed(result: Result, point_s: float, per_gb_s: float, series_s: float, worker_s: float, start_s: float = 3.0,
           end_s: float = 0.5) -> tuple[calibrate.Landed, list[Point]]:  # fmt: skip
    """The lines of a probe whose every point costs `point_s` + `per_gb_s` a GB beside its timed calls, each series
    `series_s` more at its first point, its worker `worker_s` and its process `start_s` before and `end_s` after."""
    at = 10.0 + start_s
    lines = [(at, "xferbench: 2 series × 2 batch sizes on cuda:0 (NVIDIA H200), saving to probe.json"), (at, "binding each worker")]
    at += worker_s
    points = []
    for series in result.series:
        at += series_s
        for point in series.ok_points():
            at += point_s + point.bytes / 1e9 * per_gb_s + calibrate.timed_s(point)
            lines.append((at, f"{series.label()} batch {point.batch_size}: {point.mbps:,.0f} MB/s (n={point.n})"))
            points.append(point)
    return calibrate.Landed(10.0, lines, at + end_s), points


def test_the_probe_gives_the_copy_rates_and_every_fixed_cost_it_times() -> None:
    result = probe_file()
    seen, points = landed(result, point_s=0.3, per_gb_s=0.8, series_s=0.2, worker_s=2.5)
    rates = calibrate.sweep_rates(result, seen, budget.FALLBACK)
    pinned, pageable = (max(s.ok_points(), key=lambda p: p.bytes) for s in result.series)
    assert math.isclose(rates.pinned_bps, pinned.bytes / pinned.median_s) and rates.pinned_bps > 55e9  # a Gen5 link's, not 25e9
    assert math.isclose(rates.pageable_bps, pageable.bytes / pageable.median_s)
    assert math.isclose(rates.point_s, 0.3, abs_tol=1e-6) and math.isclose(1e9 / rates.host_bps, 0.8, rel_tol=1e-6)
    assert math.isclose(rates.series_s, 0.2, abs_tol=1e-6) and math.isclose(rates.worker_start_s, 2.5, abs_tol=1e-6)
    assert math.isclose(rates.sweep_start_s, 3.0 + 0.5)
    smallest = min(result.series[0].ok_points(), key=lambda p: p.bytes)
    assert math.isclose(rates.call_s, smallest.median_s - smallest.bytes / rates.pinned_bps)
    assert set(rates.measured) == {"pinned_bps", "pageable_bps", "call_s", "point_s", "host_bps", "series_s", "worker_start_s",
                                   "sweep_start_s"}  # fmt: skip
    assert rates.nvbandwidth_start_s == budget.PEER_START_S and rates.finish_s == budget.FINISH_S  # not timed by the sweep


def test_a_probe_with_too_few_points_or_no_header_measured_nothing() -> None:
    result = probe_file()
    seen, _ = landed(result, 0.3, 0.8, 0.2, 2.5)
    with pytest.raises(XferbenchError, match="too few points"):
        calibrate.sweep_rates(result, calibrate.Landed(seen.spawned, seen.lines[2:4], seen.ended), budget.FALLBACK)
    with pytest.raises(XferbenchError, match="too few points"):  # no header: its start cannot be told from its worker's
        calibrate.sweep_rates(result, calibrate.Landed(seen.spawned, seen.lines[2:], seen.ended), budget.FALLBACK)


def test_the_fixed_cost_fit_is_never_negative() -> None:
    assert calibrate.fit_line([(0, 0.5), (2**30, 1.5)]) == pytest.approx((0.5, 1.0 / 2**30))
    assert calibrate.fit_line([(0, 0.5), (2**30, 0.2)]) == (pytest.approx(0.35), 0.0)  # no per-byte part below zero
    intercept, slope = calibrate.fit_line([(2**20, 0.0), (2**30, 1.0)])
    assert intercept == 0.0 and slope > 0  # no fixed part below zero


def test_a_peers_start_is_its_runs_seconds_less_its_copies() -> None:
    fast = budget.FALLBACK.but(pinned_bps=50e9, call_s=0.0)
    copies = 100 * calibrate.PEER_PROBE_BYTES / 50e9
    assert math.isclose(calibrate.peer_start("bandwidthTest", 0.3 + copies, fast), 0.3)
    assert math.isclose(calibrate.peer_start("nvbandwidth", 0.3 + 20 * calibrate.PEER_PROBE_BYTES / 50e9, fast), 0.3)
    assert calibrate.peer_start("bandwidthTest", 0.0, fast) == 0.0


def gen5(**changes: float) -> budget.Rates:
    """Rates as a probe measures them on a Gen5 H200 (run-5's raw copies), with lower fixed costs than the fallback's."""
    rates = budget.FALLBACK.but(pinned_bps=55.5e9, pageable_bps=8.4e9, point_s=0.2, sweep_start_s=3.0, worker_start_s=2.0,
                                nvbandwidth_start_s=0.4, bandwidthtest_start_s=0.4, finish_s=10.0, spent_s=8.0,
                                measured=tuple(budget.FIELDS))  # fmt: skip
    return rates.but(**changes)


def validation(rates: budget.Rates, max_minutes: float | None = None) -> validate_command.Validation:
    run = validate_command.Validation(Path("/nonexistent/v"), "cuda:0", ("sim",), peers=dict(PEERS), max_minutes=max_minutes,
                                      rates=rates)  # fmt: skip
    run.fit()
    return run


def test_a_faster_link_and_cheaper_points_give_a_shorter_estimate() -> None:
    slow, fast = validation(budget.FALLBACK), validation(gen5())
    assert fast.estimate_s() < slow.estimate_s()
    assert validation(gen5(pinned_bps=100e9, pageable_bps=20e9)).estimate_s() < fast.estimate_s()  # the rates alone
    assert validation(gen5(point_s=0.1)).estimate_s() < fast.estimate_s()  # the fixed cost alone
    for peer in PEERS:  # each peer's runs at the rates and starts measured
        assert sum(c.seconds for c in fast.peer_commands() if c.peer == peer) < sum(c.seconds for c in slow.peer_commands() if c.peer == peer)
    # every part of the plan is counted at the rates given, and the probe's own seconds are in the estimate
    rates = fast.rates
    expected = (rates.spent_s + sum(p.seconds(rates) for p in fast.sweep_plans()) + sum(c.seconds for c in fast.peer_commands())
                + rates.finish_s)  # fmt: skip
    assert fast.estimate_s() == expected and fast.estimate_s() - validation(gen5(spent_s=0.0)).estimate_s() == 8.0


def test_a_budget_that_fits_the_measured_rates_trims_nothing() -> None:
    budget_min = (validation(gen5()).estimate_s() + budget.STOP_GRACE_S) / 60 + 0.01  # the plan and a sweep's stop grace
    assert budget_min * 60 < validation(budget.FALLBACK).estimate_s()  # at the fallback's rates it would not fit
    assert validation(budget.FALLBACK, budget_min).trimmed != []
    measured = validation(gen5(), budget_min)
    assert measured.trimmed == [] and measured.large_batches is None and measured.peer_sizes == "all"
    assert measured.nvbandwidth_samples is None


def test_the_plan_says_the_rates_it_assumed_and_where_they_came_from() -> None:
    lines = validation(gen5()).plan_lines()
    assert lines[1] == ("  the estimate assumes pinned 55.5 GB/s, pageable 8.4 GB/s, 0.20 s a point + 1.00 s per GB beside its timed"
                        " calls, 0.00 s a series' start (its fresh worker's included), 3.0 s a sweep's start, 2.0 s more for a framework's"
                        " first worker: measured here by a 8.0 s probe")  # fmt: skip
    assert lines[2] == "  the probe: 8.0 s, spent"
    partly = validation(gen5(measured=("pinned_bps", "pageable_bps"))).plan_lines()[1]
    assert partly.endswith("measured here by a 8.0 s probe; a call's cost, a point's cost, a point's per-byte cost, a series' start,"
                           " a sweep's start, a framework's first worker, nvbandwidth's start, bandwidthTest's start, the host memset rate,"
                           " the report's time from the documented fallback")  # fmt: skip
    fallback = validation(budget.FALLBACK.but(why_not="nothing measured: CuPy is not installed")).plan_lines()[1]
    assert fallback.endswith("5.0 s more for a framework's first worker: the documented fallback, a PCIe Gen4 x16 link's rates and an H200 virtual machine's"
                             " costs (nothing measured: CuPy is not installed)")  # fmt: skip


def test_without_cuda_nothing_is_probed_and_the_fallback_says_why() -> None:
    said: list[str] = []
    rates = calibrate.calibrate("cuda:0", 0, False, dict(PEERS), 2, said.append)
    assert rates.measured == () and rates.spent_s == 0.0 and said == []
    assert "--framework leaves cuda out" in rates.why_not and rates.pinned_bps == budget.PINNED_BPS


def test_streamed_points_count_their_runs_of_copies() -> None:
    timing = TimingConfig()
    nbytes, rate = 2**28, 25e9
    per_call = budget.point_seconds(nbytes, rate, timing)
    streamed = budget.point_seconds(nbytes, rate, timing, streamed=True)
    call = budget.CALL_S + nbytes / rate
    copies = max(2, math.ceil(0.002 / (nbytes / rate) - 1e-9))
    # warm-up on runs of 4 copies, a run to size the samples and one more, then samples of `copies` copies
    expected = (budget.POINT_S + nbytes / budget.HOST_BPS + max(timing.warmup_s, timing.warmup_calls * 4 * call)
                + (4 + copies) * call + max(timing.min_time_s, timing.min_samples * copies * call) + call)  # fmt: skip
    assert math.isclose(streamed, expected) and streamed > per_call


class Ticks:
    """A clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_a_timed_commands_lines_are_kept_in_order_with_the_time_each_arrived() -> None:
    import sys

    script = "import sys\nprint('xferbench: one')\nsys.stdout.flush()\nprint('two', file=sys.stderr)\n"
    seen = calibrate.run_timed([sys.executable, "-c", script], {}, 60.0, Ticks())
    assert seen is not None and [line for _, line in seen.lines] == ["xferbench: one", "two"]
    times = [seen.spawned, *(at for at, _ in seen.lines), seen.ended]
    assert times == sorted(times) and len(set(times)) == len(times)  # each read of the clock after the one before


class Hangs:
    """A probe sweep that runs past any timeout until it is told to stop, then ends as a sweep does on Ctrl-C
    (`ends` False: never, until killed); it keeps what was done to it."""

    ends = True

    def __init__(self, command, **kwargs) -> None:  # type: ignore[no-untyped-def]
        import io

        self.stdout, self.done, self.returncode = io.StringIO("xferbench: started\n"), [], None  # type: ignore[var-annotated]

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        import subprocess

        self.done.append(("wait", timeout))
        if self.returncode is None:
            raise subprocess.TimeoutExpired("sweep", timeout or 0)
        return self.returncode

    def terminate(self) -> None:
        self.done.append(("terminate", None))
        if self.ends:
            self.returncode = 130

    def kill(self) -> None:
        self.done.append(("kill", None))
        self.returncode = -9


@pytest.mark.parametrize("ends, done", [
    (True, [("wait", 120.0), ("terminate", None), ("wait", calibrate.STOP_WAIT_S)]),
    (False, [("wait", 120.0), ("terminate", None), ("wait", calibrate.STOP_WAIT_S), ("kill", None), ("wait", None)]),
])  # fmt: skip
def test_a_probe_past_its_time_is_stopped_as_ctrl_c_stops_a_sweep_and_killed_only_past_its_grace(ends, done, monkeypatch) -> None:
    made: list[Hangs] = []

    def popen(command, **kwargs):  # type: ignore[no-untyped-def]
        made.append(Hangs(command))
        made[-1].ends = ends
        return made[-1]

    monkeypatch.setattr(calibrate.subprocess, "Popen", popen)
    assert calibrate.run_timed(["sweep"], {}, 120.0, Ticks()) is None
    assert made[0].done == done


def test_a_probe_stopped_here_is_stopped_too(monkeypatch) -> None:
    made: list[Hangs] = []

    class Interrupted(Hangs):
        def wait(self, timeout: float | None = None) -> int:
            if not self.done:
                self.done.append(("wait", timeout))
                raise KeyboardInterrupt
            return super().wait(timeout)

    monkeypatch.setattr(calibrate.subprocess, "Popen", lambda command, **kwargs: made.append(Interrupted(command)) or made[-1])
    with pytest.raises(KeyboardInterrupt):
        calibrate.run_timed(["sweep"], {}, 120.0, Ticks())
    assert made[0].done == [("wait", 120.0), ("terminate", None), ("wait", calibrate.STOP_WAIT_S)]


def test_calibrate_times_the_probe_sweep_each_peer_and_the_finish_and_keeps_the_fallback_where_one_fails(monkeypatch) -> None:
    """The probe as validate runs it, each process a stand-in: the sweep's figures, each peer's start (its run's
    seconds less its copies), the memset rate; a figure that cannot be drawn keeps the finish's fallback, said."""
    from xferbench.measuring.backends import BACKENDS

    result = probe_file()
    seen, _ = landed(result, point_s=0.3, per_gb_s=0.8, series_s=0.2, worker_s=2.5)
    clock = Ticks()
    ran: list[list[str]] = []

    def sweep(command, env, timeout_s, clock_):  # type: ignore[no-untyped-def]
        ran.append(command)
        Path(command[command.index("-o") + 1]).write_text(result.to_json())
        clock.now += 30.0
        return seen

    def peer(command, **kwargs):  # type: ignore[no-untyped-def]
        ran.append(command)
        clock.now += 0.5

    def cannot_draw(path, sweeps):  # type: ignore[no-untyped-def]
        raise RuntimeError("no display\nmore")

    monkeypatch.setattr(BACKENDS["cuda"], "missing", lambda: None)
    monkeypatch.setattr(calibrate, "run_timed", sweep)
    monkeypatch.setattr(calibrate.subprocess, "run", peer)
    monkeypatch.setattr(calibrate, "memset_bps", lambda: 12e9)
    monkeypatch.setattr(calibrate, "finish_s", cannot_draw)
    said: list[str] = []
    rates = calibrate.calibrate("cuda:1", 1, True, dict(PEERS), 3, said.append, {}, clock)
    assert said == ["probe: timing this machine's copies and fixed costs for the estimate"]
    assert ran[0][3:] == ["sweep", *calibrate.probe_arguments("cuda:1"), "-o", ran[0][-1]]
    assert ran[1] == [PEERS["nvbandwidth"], "-j", "-b", "1", "-i", "1", "-t", "host_to_device_memcpy_ce"]
    assert ran[2][:2] == [PEERS["bandwidthTest"], "--device=1"] and "--memory=pinned" in ran[2]
    assert rates == calibrate.sweep_rates(result, seen, budget.FALLBACK).but(
        nvbandwidth_start_s=calibrate.peer_start("nvbandwidth", 1.5, rates), bandwidthtest_start_s=calibrate.peer_start("bandwidthTest", 1.5, rates),
        memset_bps=12e9, spent_s=rates.spent_s, measured=rates.measured, why_not="the report's time not measured: no display")  # fmt: skip
    assert set(budget.FIELDS) - set(rates.measured) == {"finish_s"} and rates.finish_s == budget.FINISH_S
    assert rates.spent_s == clock.now - 1.0  # the whole probe on its clock, from its first reading
    assert "the report's time from the documented fallback (the report's time not measured: no display)" in rates.describe()


class Workers:
    """Fake framework workers on a fake clock, as strict as WorkerRunner: started, hello() waits `starts[name]`
    seconds until it is ready (or raises what a worker that cannot start raises, XferbenchError, or what
    `raises` names), close() ends it; a hello after close is refused. It keeps what was done, and which were
    alive at once."""

    def __init__(self, starts: dict[str, float], raises: dict[str, BaseException] | None = None) -> None:
        self.clock = Ticks()
        self.starts, self.raises = starts, raises or {}
        self.done: list[tuple[str, str]] = []
        self.alive: set[str] = set()
        self.most_alive = 0

    def start(self, name: str) -> Workers.One:
        self.done.append(("start", name))
        self.alive.add(name)
        self.most_alive = max(self.most_alive, len(self.alive))
        return Workers.One(self, name)

    class One:
        def __init__(self, workers: Workers, name: str) -> None:
            self.workers, self.name, self.closed = workers, name, False

        def hello(self) -> dict[str, object]:
            if self.closed:
                raise AssertionError("hello after close")
            if self.name in self.workers.raises:
                raise self.workers.raises[self.name]
            self.workers.clock.now += self.workers.starts[self.name]
            return {"devices": ["cuda:0"], "environment": {}}

        def close(self) -> None:
            self.workers.done.append(("close", self.name))
            self.workers.alive.discard(self.name)
            self.closed = True


def keys(framework: str, count: int) -> tuple[SeriesKey, ...]:
    return tuple(SeriesKey(framework, f"mode{i}", "copy", "cuda:0", (512, 512, 4), "pinned") for i in range(count))


def test_a_slower_frameworks_series_raise_the_estimate_by_their_count_times_its_extra_start() -> None:
    workers = Workers({"cuda": 0.5, "torch": 2.5, "jax": 3.5})
    rates = calibrate.series_starts(gen5(series_s=0.2), ["cuda", "torch", "jax"], workers.start, workers.clock)
    # each framework's series pays its own worker's start in place of cuda's, timed one after another, each closed
    assert rates.series_s_by_framework == pytest.approx({"cuda": 0.2, "torch": 2.2, "jax": 3.2})
    assert workers.most_alive == 1 and workers.alive == set()
    assert workers.done == [("start", "cuda"), ("close", "cuda"), ("start", "torch"), ("close", "torch"), ("start", "jax"), ("close", "jax")]
    plan = budget.SweepPlan("default", (*keys("cuda", 3), *keys("torch", 5)), (1, 16), ("cuda", "torch"), TimingConfig())
    assert plan.seconds(rates) - plan.seconds(gen5(series_s=0.2)) == pytest.approx(5 * 2.0)  # 5 torch series, 2 s more each
    # a sweep starts its frameworks' first workers together: the slowest one's extra start is paid once, in place of
    # each framework's first series' (which runs in that worker); a framework whose series are all skipped still pays it
    both = budget.SweepPlan("default", (*keys("cuda", 3), *keys("torch", 5), *keys("jax", 3)), (1, 16), ("cuda", "torch", "jax"), TimingConfig())
    assert both.seconds(rates) - both.seconds(gen5(series_s=0.2)) == pytest.approx(4 * 2.0 + 2 * 3.0 + 3.0)
    idle = budget.SweepPlan("default", keys("cuda", 3), (1, 16), ("cuda", "torch"), TimingConfig())
    assert idle.seconds(rates) - idle.seconds(gen5(series_s=0.2)) == pytest.approx(2.0)
    assert "a series' start: cuda 0.20 s, torch 2.20 s, jax 3.20 s, 0.20 s for any other framework (its fresh worker's included)" in rates.describe()


def test_a_cuda_only_validation_starts_no_worker_to_time() -> None:
    workers = Workers({"cuda": 0.5})
    assert calibrate.series_starts(gen5(), ["cuda"], workers.start, workers.clock) == gen5() and workers.done == []


def test_a_framework_whose_worker_cannot_start_keeps_the_probes_series_start_said_in_the_plan() -> None:
    workers = Workers({"cuda": 0.5, "jax": 3.5}, {"torch": XferbenchError("torch failed to start: ImportError: libcudnn\nmore")})
    rates = calibrate.series_starts(gen5(series_s=0.2), ["cuda", "torch", "jax"], workers.start, workers.clock)
    assert rates.series_s_by_framework == pytest.approx({"cuda": 0.2, "jax": 3.2}) and rates.series_start("torch") == 0.2
    assert ("close", "torch") in workers.done and workers.alive == set()
    assert rates.describe().endswith("(the torch worker did not start in the probe (torch failed to start: ImportError: libcudnn), so its"
                                     " series are counted at 0.20 s)")  # fmt: skip
    # without cuda's own worker start there is nothing to exchange: every framework keeps series_s, said
    nothing = Workers({"torch": 2.5}, {"cuda": XferbenchError("the cuda worker process exited with status 1")})
    rates = calibrate.series_starts(gen5(series_s=0.2), ["cuda", "torch"], nothing.start, nothing.clock)
    assert rates.series_s_by_framework == {} and "the cuda worker did not start (the cuda worker process exited" in rates.why_not


def test_ctrl_c_while_a_workers_start_is_timed_closes_it_and_stops() -> None:
    workers = Workers({"cuda": 0.5, "torch": 2.5, "jax": 3.5}, {"torch": KeyboardInterrupt()})
    with pytest.raises(KeyboardInterrupt):
        calibrate.series_starts(gen5(), ["cuda", "torch", "jax"], workers.start, workers.clock)
    assert workers.done == [("start", "cuda"), ("close", "cuda"), ("start", "torch"), ("close", "torch")] and workers.alive == set()


def test_calibrate_times_each_isolated_frameworks_worker_and_counts_it_in_the_probes_seconds(monkeypatch) -> None:
    from xferbench.measuring.backends import BACKENDS

    result = probe_file()
    seen, _ = landed(result, point_s=0.3, per_gb_s=0.8, series_s=0.2, worker_s=2.5)

    def probe(frameworks: tuple[str, ...]) -> tuple[budget.Rates, Workers]:
        workers = Workers({"cuda": 0.5, "torch": 2.5})

        def sweep(command, env, timeout_s, clock_):  # type: ignore[no-untyped-def]
            Path(command[command.index("-o") + 1]).write_text(result.to_json())
            workers.clock.now += 30.0
            return seen

        monkeypatch.setattr(calibrate, "run_timed", sweep)
        rates = calibrate.calibrate("cuda:0", 0, True, {}, 2, lambda line: None, {}, workers.clock, frameworks=frameworks,
                                    start=workers.start)  # fmt: skip
        return rates, workers

    monkeypatch.setattr(BACKENDS["cuda"], "missing", lambda: None)
    monkeypatch.setattr(calibrate, "memset_bps", lambda: 12e9)
    monkeypatch.setattr(calibrate, "finish_s", lambda path, sweeps: 4.0)
    alone, none = probe(("cuda",))
    rates, workers = probe(("cuda", "torch", "numpy"))
    assert none.done == [] and alone.series_s_by_framework == {}
    assert ("start", "numpy") not in workers.done  # measured in the sweep's own process: no worker to start
    assert rates.series_s_by_framework == pytest.approx({"cuda": 0.2, "torch": 2.2})
    # the workers' starts are the probe's seconds too: each timed from one reading of the clock (a tick) to the next
    assert rates.spent_s - alone.spent_s == pytest.approx((1 + 0.5 + 1) + (1 + 2.5 + 1))


def test_a_framework_whose_worker_sees_no_such_device_has_its_series_left_out_of_the_estimate_and_its_worker_kept() -> None:
    class Blind(Workers):
        def start(self, name: str) -> Workers.One:
            one = super().start(name)
            hello = one.hello
            one.hello = lambda: {**hello(), "devices": ["cpu"] if name == "torch" else ["cpu", "cuda:0"]}  # type: ignore[method-assign]
            return one

    workers = Blind({"cuda": 0.5, "torch": 2.5, "jax": 3.5})
    rates = calibrate.series_starts(gen5(series_s=0.2), ["cuda", "torch", "jax"], workers.start, workers.clock, "cuda:0")
    assert rates.unseen == ("torch",) and workers.alive == set()
    assert "the torch worker sees no cuda:0 (only cpu), so the sweeps will skip its series: they are not counted" in rates.describe()
    run = validate_command.Validation(Path("/nonexistent/v"), "cuda:0", ("torch", "sim"), rates=gen5())
    seen = validate_command.Validation(Path("/nonexistent/v"), "cuda:0", ("torch", "sim"), rates=gen5(unseen=("torch",)))
    for counted, skipped in zip(run.sweep_plans(), seen.sweep_plans()):
        assert {k.framework for k in counted.keys} == {"torch", "sim"} and {k.framework for k in skipped.keys} == {"sim"}
        assert skipped.frameworks == counted.frameworks  # the sweep still starts torch's first worker, to find it sees no GPU
    assert seen.estimate_s() < run.estimate_s()
