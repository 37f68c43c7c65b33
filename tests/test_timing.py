import pytest

from xferbench.core.timing import TimingConfig, sample, warm_up


class StepClock:
    """A fake clock that each call of the transfer advances by a fixed step."""

    def __init__(self, step: float) -> None:
        self.now, self.step, self.calls = 0.0, step, 0

    def __call__(self) -> float:
        return self.now

    def transfer(self) -> float:
        self.calls += 1
        self.now += self.step
        return self.step / 2  # a device clock reading, kept beside the host clock


def test_sampling_needs_both_min_time_and_min_samples() -> None:
    clock = StepClock(0.01)
    samples = sample(clock.transfer, TimingConfig(min_samples=5, min_time_s=0.2, max_samples=1000), clock)
    assert len(samples.times_s) == 20  # time was the binding constraint
    assert samples.device_times_s == [0.005] * 20
    clock = StepClock(0.1)
    samples = sample(clock.transfer, TimingConfig(min_samples=5, min_time_s=0.2, max_samples=1000), clock)
    assert len(samples.times_s) == 5  # count was the binding constraint


def test_sampling_caps() -> None:
    clock = StepClock(1e-6)
    assert len(sample(clock.transfer, TimingConfig(min_time_s=10, max_samples=50), clock).times_s) == 50
    clock = StepClock(3.0)
    capped = sample(clock.transfer, TimingConfig(min_samples=10, max_time_s=5.0), clock)
    assert len(capped.times_s) == 2  # the time cap stops a very slow point early


def test_every_sample_is_kept_raw() -> None:
    clock = StepClock(0.25)
    samples = sample(clock.transfer, TimingConfig(min_samples=3, min_time_s=0), clock)
    assert samples.times_s == [0.25, 0.25, 0.25]


def test_warm_up_needs_calls_and_time() -> None:
    clock = StepClock(0.001)
    assert warm_up(clock.transfer, TimingConfig(warmup_calls=3, warmup_s=0.05), clock) == 50
    clock = StepClock(1.0)
    assert warm_up(clock.transfer, TimingConfig(warmup_calls=3, warmup_s=0.05), clock) == 3


def test_warm_up_of_fast_calls_is_capped_by_time_only() -> None:
    clock = StepClock(1e-6)  # 50 ms of warm-up is 50,000 such calls, far above max_samples
    assert warm_up(clock.transfer, TimingConfig(warmup_calls=3, warmup_s=0.05, max_samples=1000), clock) == 50_000
    clock = StepClock(4.0)
    assert warm_up(clock.transfer, TimingConfig(warmup_calls=5, warmup_s=0.0, max_time_s=10.0), clock) == 3


def test_streamed_samples_are_seconds_per_copy_and_sized_for_a_span() -> None:
    from xferbench.core.timing import STREAM_MAX_COPIES, STREAM_MIN_COPIES, calibrate_copies, copies_for, sample_streamed

    assert copies_for(4e-6) == 500  # 2 ms of 4 µs copies
    assert copies_for(1e-3) == STREAM_MIN_COPIES and copies_for(1e-9) == STREAM_MAX_COPIES and copies_for(0.0) == STREAM_MAX_COPIES
    runs: list[int] = []
    clock = StepClock(0.0)

    def run(copies: int) -> float:
        runs.append(copies)
        clock.now += 1e-3 + copies * 1e-5  # a hold and a wait per run, then the copies
        return copies * 1e-5

    assert calibrate_copies(run) == 200 and runs == [4, 200]
    samples = sample_streamed(run, 200, TimingConfig(min_samples=4, min_time_s=0), clock)
    assert samples.times_s == pytest.approx([1e-5] * 4) and samples.device_times_s == []


class TwoSpeedClock(StepClock):
    """A path whose calls alternate between two times: its median stays uncertain however long it runs."""

    def transfer(self) -> float:
        self.calls += 1
        self.now += self.step * (1 if self.calls % 2 else 4)
        return self.step


def test_an_uncertain_median_samples_on_for_settle_time_past_the_minimums() -> None:
    from xferbench.core.stats import median_uncertainty

    clock = TwoSpeedClock(0.01)
    config = TimingConfig(min_samples=10, min_time_s=2.0, max_samples=100_000, max_time_s=10.0, settle_s=1.0)
    samples = sample(clock.transfer, config, clock)
    assert median_uncertainty(samples.times_s) > 0.05
    assert 3.0 <= sum(samples.times_s) < 3.1  # the minimums at 2 s, then 1 s of settling: not 1 s from the start
    steady = StepClock(0.01)
    assert len(sample(steady.transfer, config, steady).times_s) == 200  # a certain median stops at the minimums


def test_the_median_is_checked_as_samples_grow_by_a_tenth(monkeypatch) -> None:
    import xferbench.core.timing as timing

    checks: list[int] = []
    monkeypatch.setattr(timing, "median_uncertainty", lambda times: checks.append(len(times)) or 1.0)
    clock = StepClock(1e-4)
    sample(clock.transfer, TimingConfig(min_samples=10, min_time_s=0.0, max_samples=100_000, max_time_s=10, settle_s=1.0), clock)
    assert checks[:4] == [10, 11, 13, 15] and len(checks) < 120  # 10,000 samples, about a hundred checks


def test_warm_up_counts_time_from_its_own_start_and_stops_at_each_limit_exactly() -> None:
    """A clock that does not start at zero; the warm-up time and the time cap each end the warm-up the
    moment they are reached (steps of 0.25 s are exact in binary)."""
    clock = StepClock(0.25)
    clock.now = 1000.0
    assert warm_up(clock.transfer, TimingConfig(warmup_calls=1, warmup_s=0.5), clock) == 2
    assert warm_up(clock.transfer, TimingConfig(warmup_calls=1, warmup_s=60.0, max_time_s=1.0), clock) == 4


AT_LEAST_ONE = "--warmup-calls and --min-samples must be at least 1"
SECONDS = "--warmup-time, --min-time, --max-time and --settle-time must be finite seconds, --max-time > 0"
TOO_MANY = "--warmup-calls, --min-samples and --max-samples take at most 10,000,000 (per point)"
TOO_LONG = "--warmup-time, --min-time, --max-time and --settle-time take at most 3600 seconds (per point)"


@pytest.mark.parametrize("options, message", [
    ({"warmup_calls": 0}, AT_LEAST_ONE), ({"min_samples": 0}, AT_LEAST_ONE),
    ({"min_samples": 11, "max_samples": 10}, "--max-samples must be at least --min-samples"),
    ({"warmup_s": -0.1}, SECONDS), ({"min_time_s": float("nan")}, SECONDS), ({"max_time_s": float("inf")}, SECONDS),
    ({"settle_s": -1.0}, SECONDS), ({"max_time_s": 0.0, "min_time_s": 0.0}, SECONDS),
    ({"min_time_s": 2.0, "max_time_s": 1.0}, "--min-time must not exceed --max-time"),
    ({"warmup_calls": 10_000_001}, TOO_MANY), ({"min_samples": 10_000_001, "max_samples": 10_000_001}, TOO_MANY),
    ({"max_samples": 10_000_001}, TOO_MANY),
    ({"warmup_s": 3600.5}, TOO_LONG), ({"min_time_s": 3600.5, "max_time_s": 3600.5}, TOO_LONG),
    ({"max_time_s": 3600.5}, TOO_LONG), ({"settle_s": 3600.5}, TOO_LONG),
])  # fmt: skip
def test_each_timing_option_out_of_range_is_named_in_one_line(options, message) -> None:
    from xferbench.core.errors import XferbenchError

    with pytest.raises(XferbenchError) as raised:
        TimingConfig(**options).check()
    assert str(raised.value) == message


def test_every_timing_option_at_its_limits_is_taken() -> None:
    TimingConfig(warmup_calls=1, min_samples=1, max_samples=1, warmup_s=0.0, min_time_s=0.0, max_time_s=1e-9, settle_s=0.0).check()
    TimingConfig(warmup_calls=10_000_000, min_samples=10_000_000, max_samples=10_000_000,
                 warmup_s=3600.0, min_time_s=3600.0, max_time_s=3600.0, settle_s=3600.0).check()  # fmt: skip
    TimingConfig(min_samples=7, max_samples=7, min_time_s=2.0, max_time_s=2.0).check()  # equal bounds are allowed
