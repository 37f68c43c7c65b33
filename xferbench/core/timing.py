"""The timing loops: warm up, then sample until enough time and samples, with a cap.

Per call: a path's call does one transfer and returns only once the data is on the device, so the
host clock around it measures the whole synchronized transfer. A call may also return the device
clock's view of the same transfer (CUDA events), which is kept beside it.

Streamed: a path queues many copies behind a held stream and returns the seconds its device events
measured around them; each sample is that span divided by the copies, so launch and wait costs,
paid once per span while the stream is held, stay out of the figure.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from xferbench.core.stats import median_uncertainty

Clock = Callable[[], float]
# A call returns its device-clock seconds, or for a bidir call each direction's own seconds, or None.
TransferCall = Callable[[], "float | dict[str, float] | None"]
StreamedRun = Callable[[int], float]  # queue n copies behind a held stream; the events' seconds around them

# Copies per streamed sample: enough for STREAM_SPAN_S of copying (events resolve about 0.5 µs), at
# least 2 back to back, at most 512: a few hundred commands stay well inside a stream's queue, so
# queueing never blocks on the held stream, and the hold covers only a few milliseconds of queueing.
STREAM_MIN_COPIES, STREAM_MAX_COPIES = 2, 512
STREAM_SPAN_S = 0.002
STREAM_PROBE_COPIES = 4  # the short runs that warm a streamed path up, size its samples and verify it
STREAM_WARM_COPIES = 2  # queued before the start event in every streamed run, so the timed copies start on a busy engine


# Sampling goes on past its minimums while the median is uncertain by more than this share (the half
# width of its 95% confidence interval, stats.median_uncertainty), up to TimingConfig.settle_s.
MEDIAN_TARGET = 0.05


MAX_SAMPLES = 10_000_000  # samples or warm-up calls per point: ten million 1 µs calls take ten seconds
MAX_POINT_S = 3600.0  # seconds of warm-up or sampling per point


@dataclass(frozen=True)
class TimingConfig:
    warmup_calls: int = 5
    warmup_s: float = 0.05
    min_samples: int = 10
    min_time_s: float = 0.25
    max_samples: int = 1000
    max_time_s: float = 10.0  # cap on one point's sampling; at least one sample is always taken
    settle_s: float = 1.0  # how long sampling may go on past the minimums while the median is uncertain

    def check(self) -> None:
        from xferbench.core.errors import XferbenchError

        if self.warmup_calls < 1 or self.min_samples < 1:
            raise XferbenchError("--warmup-calls and --min-samples must be at least 1")
        if self.max_samples < self.min_samples:
            raise XferbenchError("--max-samples must be at least --min-samples")
        times = (self.warmup_s, self.min_time_s, self.max_time_s, self.settle_s)
        if not all(math.isfinite(t) and t >= 0 for t in times) or self.max_time_s == 0:
            raise XferbenchError("--warmup-time, --min-time, --max-time and --settle-time must be finite seconds, --max-time > 0")
        if self.min_time_s > self.max_time_s:
            raise XferbenchError("--min-time must not exceed --max-time")
        # Upper bounds far past any real need, so a typo (an extra zero or two) cannot start a run of days.
        if max(self.warmup_calls, self.min_samples, self.max_samples) > MAX_SAMPLES:
            raise XferbenchError(f"--warmup-calls, --min-samples and --max-samples take at most {MAX_SAMPLES:,} (per point)")
        if max(times) > MAX_POINT_S:
            raise XferbenchError(f"--warmup-time, --min-time, --max-time and --settle-time take at most {MAX_POINT_S:g} seconds (per point)")


@dataclass
class Samples:
    times_s: list[float] = field(default_factory=list)
    device_times_s: list[float] = field(default_factory=list)
    by_direction: dict[str, list[float]] = field(default_factory=dict)  # bidir: each direction's own seconds per call


def warm_up(call: TransferCall, config: TimingConfig, clock: Clock = time.perf_counter) -> int:
    """Run until both a few calls and some time have passed, so lazy set-up stays out of the samples.

    Only time caps it (max_time_s): fast calls still warm up for warmup_s, however many that takes.
    """
    start = clock()
    calls = 0
    while True:
        call()
        calls += 1
        elapsed = clock() - start
        enough = calls >= config.warmup_calls and elapsed >= config.warmup_s
        if enough or elapsed >= config.max_time_s:
            return calls


class _Enough:
    """When to stop sampling: both minimums met and the median known to MEDIAN_TARGET, or settle_s
    spent trying past the moment the minimums were met, or a cap reached.

    The median's uncertainty is checked each time the count of samples has grown by a tenth, so a
    fast path's loop does not sort its samples after every call."""

    def __init__(self, config: TimingConfig) -> None:
        self.config, self.met_at, self.next_check = config, None, 0

    def __call__(self, times: list[float], elapsed: float) -> bool:
        config, n = self.config, len(times)
        if n >= config.max_samples or elapsed >= config.max_time_s:
            return True
        if n < config.min_samples or elapsed < config.min_time_s:
            return False
        if self.met_at is None:
            self.met_at = elapsed
        if elapsed - self.met_at >= config.settle_s:
            return True
        if n < self.next_check:
            return False
        self.next_check = math.ceil(n * 1.1)
        uncertainty = median_uncertainty(times)
        return uncertainty is None or uncertainty <= MEDIAN_TARGET


def sample(call: TransferCall, config: TimingConfig, clock: Clock = time.perf_counter,
           between: Callable[[], None] | None = None) -> Samples:  # fmt: skip
    """Time single calls until min time and min samples are both met, or a cap is reached. `between`, where
    given, runs before each call, outside its timing (--cold-source's eviction); its time counts toward the
    loop's own limits, which bound the point's time on the clock."""
    out = Samples()
    times, device_times = out.times_s, out.device_times_s
    enough, start = _Enough(config), clock()
    while True:
        if between is not None:
            between()
        t0 = clock()
        device_s = call()
        t1 = clock()
        times.append(t1 - t0)
        if isinstance(device_s, dict):
            for way, seconds in device_s.items():
                out.by_direction.setdefault(way, []).append(seconds)
        elif device_s is not None:
            device_times.append(device_s)
        if enough(times, t1 - start):
            return out


def copies_for(per_copy_s: float) -> int:
    """Copies per streamed sample: enough for STREAM_SPAN_S of copying, within the bounds."""
    if not per_copy_s > 0:
        return STREAM_MAX_COPIES
    return max(STREAM_MIN_COPIES, min(STREAM_MAX_COPIES, math.ceil(STREAM_SPAN_S / per_copy_s - 1e-9)))


def calibrate_copies(run: StreamedRun) -> int:
    """Time one short streamed run to size the samples, then warm the longer queue once."""
    copies = copies_for(run(STREAM_PROBE_COPIES) / STREAM_PROBE_COPIES)
    run(copies)
    return copies


def sample_streamed(run: StreamedRun, copies: int, config: TimingConfig, clock: Clock = time.perf_counter) -> Samples:
    """Time streamed runs of `copies` each until the minimums are met or a cap is reached; each sample
    is one run's event seconds per copy. The loop's own limits go by `clock`, as in sample()."""
    out = Samples()
    enough, start = _Enough(config), clock()
    while True:
        out.times_s.append(run(copies) / copies)
        if enough(out.times_s, clock() - start):
            return out
