"""A validation's time budget: what it will run, about how long that takes, and what it leaves out
to fit `validate --max-minutes`.

The estimate is read off the plan itself: each sweep's series and points under the timing settings
they run with, and each peer command's copies, moved at the rates of a healthy PCIe Gen4 x16 link (a
faster link finishes sooner, so the estimate errs long), plus what starting each process costs. The
trims come in a fixed order, cheapest evidence first: nvbandwidth's repeated samples, the peers'
small sizes, the peers' other sizes, then the large sweep's sizes. The raw ceiling (the large
sweep's largest copy), the default sweep and the long link run are never trimmed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xferbench.measuring.backends import BACKENDS, default_backends
from xferbench.core.spec import H2D, STREAMED, SeriesKey
from xferbench.core.timing import TimingConfig

# Rates and fixed costs the estimate assumes (B/s and seconds).
PINNED_BPS = 25e9  # a pinned copy on a PCIe Gen4 x16 link, as measured
PAGEABLE_BPS = 8e9  # a copy from pageable memory, staged by the driver through its own pinned buffers
CALL_S = 100e-6  # launching and waiting for one call, beside its bytes
# Beside its timed calls, a point allocates, fills and verifies its buffers, samples where its pages
# sit and reads its counters: about 0.43 s a point, and about 1 s per GB more (1 GiB pinned buffers cost most), measured on an H200
# virtual machine (16 cores) in the validation's own sweeps.
POINT_S = 0.45
HOST_BPS = 1e9
SWEEP_START_S = 5.0  # `python -m xferbench sweep`: imports, the environment, NVML
WORKER_START_S = 5.0  # a framework's worker: importing it and starting CUDA, once per framework per sweep
PEER_START_S = 2.0  # a peer's process: CUDA context, allocations, its pattern's fill and check
MEMSET_BPS = 10e9  # bandwidthTest's untimed 256 MiB memset after each pageable copy
MEMSET_BYTES = 256 * 2**20
BANDWIDTHTEST_COPIES = 100  # bandwidthTest's copies per size
NVBANDWIDTH_COPIES = 4 + 16  # nvbandwidth's warm-up and timed copies per sample
NVBANDWIDTH_SAMPLES = 3  # nvbandwidth's default samples per size (-i)
FINISH_S = 30.0  # importing the peers' output, plotting each file, the report and the verdict
STOP_GRACE_S = 20.0  # a sweep stopped at its time limit saves what it measured and closes its workers

LARGE_KEEP = (256, 1024)  # the large sweep's batches never trimmed: the methods check (from 256 MiB) and the raw ceiling
LARGE_TRIM_ORDER = (128, 4, 64, 512, 1, 16)  # the large sweep's batches, in the order they are left out


@dataclass(frozen=True)
class SweepPlan:
    """One sweep of a validation, as the estimate counts it."""

    stem: str
    keys: tuple[SeriesKey, ...]  # the series that will run (those a sweep would skip are not counted)
    batches: tuple[int, ...]
    frameworks: tuple[str, ...]  # one worker each
    timing: TimingConfig
    fixed_s: float | None = None  # a run timed by its own --min-time (the link run): sampling lasts that long

    @property
    def points(self) -> int:
        return len(self.keys) * len(self.batches)

    def seconds(self) -> float:
        total = SWEEP_START_S + WORKER_START_S * len(self.frameworks)
        item = math.prod(self.keys[0].shape) if self.keys else 0
        for key in self.keys:
            rate = PINNED_BPS if key.host_buffer == "pinned" else PAGEABLE_BPS
            for batch in self.batches:
                total += point_seconds(batch * item, rate, self.timing, self.fixed_s)
        return total


def point_seconds(nbytes: int, rate: float, timing: TimingConfig, fixed_s: float | None = None) -> float:
    """One point: its buffers, its warm-up, its sampling to the minimums (or its caps, whichever comes
    first), and the one call that verifies its bytes. Sampling past the minimums while a median is
    uncertain is not counted: on a quiet GPU it does not happen."""
    call = CALL_S + nbytes / rate
    warm = max(timing.warmup_s, timing.warmup_calls * call)
    # sampling goes on to min_samples and min_time_s, but stops at max_samples or max_time_s
    wanted = max(timing.min_time_s, timing.min_samples * call)
    sample = fixed_s if fixed_s is not None else min(timing.max_time_s, wanted, max(timing.max_samples, timing.min_samples) * call)
    return POINT_S + nbytes / HOST_BPS + warm + sample + call


def series_keys(frameworks: Sequence[str], device: str, ops: Sequence[str], methods: Sequence[str], shape: tuple[int, ...],
                modes: Sequence[str] = ()) -> tuple[list[SeriesKey], list[str]]:  # fmt: skip
    """The series a sweep of these frameworks (all installed ones where none is given) will run on the
    device, as make_plan resolves them, leaving out those it would skip; and the frameworks with a worker."""
    if frameworks:
        backends = [BACKENDS[f] for f in frameworks if f in BACKENDS and not BACKENDS[f].missing()]
    else:
        backends = default_backends()
    keys, used = [], []
    for backend in backends:
        target = backend.fixed_device or device
        for mode in backend.chosen_modes(modes):
            for op in ops:
                if op not in backend.ops:
                    continue
                for method in methods:
                    key = SeriesKey(backend.name, mode, op, target, shape, backend.sources(mode)[0], method, H2D)
                    if backend.skip_reason(key) or backend.direction_reason(key):
                        continue
                    if method == STREAMED and backend.streamed_reason(key):
                        continue
                    keys.append(key)
                    if backend.name not in used:
                        used.append(backend.name)
    return keys, used


def nvbandwidth_seconds(nbytes: int, tests: int, samples: int | None) -> float:
    return PEER_START_S + tests * (samples or NVBANDWIDTH_SAMPLES) * NVBANDWIDTH_COPIES * (CALL_S + nbytes / PINNED_BPS)


def bandwidthtest_seconds(nbytes: int, memory: str) -> float:
    if memory == "pinned":
        return PEER_START_S + BANDWIDTHTEST_COPIES * (CALL_S + nbytes / PINNED_BPS)
    return PEER_START_S + BANDWIDTHTEST_COPIES * (CALL_S + nbytes / PAGEABLE_BPS + MEMSET_BYTES / MEMSET_BPS)


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


__all__ = ["FINISH_S", "LARGE_KEEP", "LARGE_TRIM_ORDER", "STOP_GRACE_S", "SweepPlan", "bandwidthtest_seconds",
           "minutes", "nvbandwidth_seconds", "point_seconds", "series_keys"]  # fmt: skip
