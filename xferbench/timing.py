"""The timing loop: warm up, then sample until enough time and samples, with a cap.

A path's call does one transfer and returns only once the data is on the device, so the
host clock around it measures the whole synchronized transfer. A call may also return the
device clock's view of the same transfer (CUDA/MPS events), which is kept beside it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

Clock = Callable[[], float]
TransferCall = Callable[[], "float | None"]


@dataclass(frozen=True)
class TimingConfig:
    warmup_calls: int = 5
    warmup_s: float = 0.05
    min_samples: int = 10
    min_time_s: float = 0.25
    max_samples: int = 1000
    max_time_s: float = 10.0  # cap on one point's sampling; at least one sample is always taken

    def check(self) -> None:
        from xferbench.errors import XferbenchError

        if self.warmup_calls < 1 or self.min_samples < 1:
            raise XferbenchError("--warmup-calls and --min-samples must be at least 1")
        if self.max_samples < self.min_samples:
            raise XferbenchError("--max-samples must be at least --min-samples")
        times = (self.warmup_s, self.min_time_s, self.max_time_s)
        if not all(math.isfinite(t) and t >= 0 for t in times) or self.max_time_s == 0:
            raise XferbenchError("--warmup-time, --min-time and --max-time must be finite seconds, --max-time > 0")
        if self.min_time_s > self.max_time_s:
            raise XferbenchError("--min-time must not exceed --max-time")


@dataclass
class Samples:
    times_s: list[float] = field(default_factory=list)
    device_times_s: list[float] = field(default_factory=list)


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


def sample(call: TransferCall, config: TimingConfig, clock: Clock = time.perf_counter) -> Samples:
    """Time single calls until min time and min samples are both met, or a cap is reached."""
    out = Samples()
    times, device_times = out.times_s, out.device_times_s
    min_samples, min_time, max_samples, max_time = (
        config.min_samples,
        config.min_time_s,
        config.max_samples,
        config.max_time_s,
    )
    start = clock()
    while True:
        t0 = clock()
        device_s = call()
        t1 = clock()
        times.append(t1 - t0)
        if device_s is not None:
            device_times.append(device_s)
        n, elapsed = len(times), t1 - start
        if (n >= min_samples and elapsed >= min_time) or n >= max_samples or elapsed >= max_time:
            return out
