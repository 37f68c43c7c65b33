"""A validation's time budget: what it will run, about how long that takes, and what it leaves out
to fit `validate --max-minutes`.

The estimate is read off the plan itself: each sweep's series and points under the timing settings
they run with, and each peer command's copies, at the rates and fixed costs in a Rates: those a short
probe measured on the machine being validated (calibrate.py), else the documented fallback below (a
healthy PCIe Gen4 x16 link's rates and an H200 virtual machine's fixed costs), said as such. The
trims come in a fixed order, cheapest evidence first: nvbandwidth's repeated samples, the peers'
small sizes, the peers' other sizes, then the large sweep's sizes. The raw ceiling (the large
sweep's largest copy), the default sweep and the long link run are never trimmed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from xferbench.measuring.backends import BACKENDS, default_backends
from xferbench.core.spec import H2D, STREAMED, SeriesKey
from xferbench.core.timing import STREAM_PROBE_COPIES, TimingConfig, copies_for

# The documented fallback: the rates and fixed costs the estimate assumes where nothing could be measured (B/s and seconds).
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


@dataclass(frozen=True)
class Rates:
    """The rates and fixed costs an estimate assumes, and where they came from: what the plan prints
    beside its estimate. `measured` names the fields a probe measured on this machine; the others are
    the documented fallback."""

    pinned_bps: float = PINNED_BPS
    pageable_bps: float = PAGEABLE_BPS
    call_s: float = CALL_S
    point_s: float = POINT_S  # a point's cost beside its timed calls...
    host_bps: float = HOST_BPS  # ...and its per-byte part (allocating, filling and verifying its buffers)
    series_s: float = 0.0  # a series' start beside its first point (the fallback's point_s averages it in)
    # Each framework's series' start where the probe timed its worker: importing PyTorch or JAX and starting CUDA
    # in a fresh worker takes longer than CuPy's, and every series pays it. A framework not here costs series_s.
    series_s_by_framework: Mapping[str, float] = field(default_factory=dict)
    # Frameworks whose worker, started by the probe, does not see the validation's device: a sweep skips their
    # series there (after starting their first worker), so those series are not counted.
    unseen: tuple[str, ...] = ()
    sweep_start_s: float = SWEEP_START_S  # a sweep's process: starting, and saving at the end
    worker_start_s: float = WORKER_START_S
    nvbandwidth_start_s: float = PEER_START_S
    bandwidthtest_start_s: float = PEER_START_S
    memset_bps: float = MEMSET_BPS
    finish_s: float = FINISH_S
    spent_s: float = 0.0  # the probe's own seconds, already spent: part of the run's estimate
    measured: tuple[str, ...] = ()
    why_not: str = ""  # why nothing (or not everything) was measured

    def but(self, **changes: float | str | tuple[str, ...] | Mapping[str, float]) -> Rates:
        return replace(self, **changes)  # type: ignore[arg-type]

    def series_start(self, framework: str) -> float:
        """A series' start in this framework's fresh worker: as the probe timed it, else series_s."""
        return self.series_s_by_framework.get(framework, self.series_s)

    def describe(self) -> str:
        """One line for the plan: the rates assumed, and which were measured here."""
        gb = 1e9
        said = (f"pinned {self.pinned_bps / gb:.1f} GB/s, pageable {self.pageable_bps / gb:.1f} GB/s, {self.point_s:.2f} s a point"
                f" + {gb / self.host_bps:.2f} s per GB beside its timed calls, {self.series_starts()} (its fresh worker's"
                f" included), {self.sweep_start_s:.1f} s a sweep's start, {self.worker_start_s:.1f} s more for"
                " a framework's first worker")  # fmt: skip
        if not self.measured:
            return f"{said}: the documented fallback, a PCIe Gen4 x16 link's rates and an H200 virtual machine's costs{self._why()}"
        fallback = [name for name in FIELDS if name not in self.measured]
        rest = f"; {', '.join(FIELDS[n] for n in fallback)} from the documented fallback" if fallback else ""
        return f"{said}: measured here by a {self.spent_s:.1f} s probe{rest}{self._why()}"

    def series_starts(self) -> str:
        """A series' start as the plan says it: one figure, or each framework's where the probe timed their workers."""
        if not self.series_s_by_framework:
            return f"{self.series_s:.2f} s a series' start"
        each = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.series_s_by_framework.items())
        return f"a series' start: {each}, {self.series_s:.2f} s for any other framework"

    def _why(self) -> str:
        return f" ({self.why_not})" if self.why_not else ""


# Each field of Rates a probe can measure, in the plan's words.
FIELDS = {"pinned_bps": "the pinned rate", "pageable_bps": "the pageable rate", "call_s": "a call's cost",
          "point_s": "a point's cost", "host_bps": "a point's per-byte cost", "series_s": "a series' start",
          "sweep_start_s": "a sweep's start", "worker_start_s": "a framework's first worker", "nvbandwidth_start_s": "nvbandwidth's start",
          "bandwidthtest_start_s": "bandwidthTest's start", "memset_bps": "the host memset rate", "finish_s": "the report's time"}  # fmt: skip
FALLBACK = Rates()

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

    def seconds(self, rates: Rates = FALLBACK) -> float:
        total = rates.sweep_start_s + rates.worker_start_s * len(self.frameworks) + sum(rates.series_start(k.framework) for k in self.keys)
        # A sweep starts its frameworks' first workers together before its first series (the probe's sweep_start_s
        # holds cuda's): they cost the slowest one's start beyond cuda's, once; each framework's first series
        # runs in that worker, paying no fresh one's start beyond cuda's.
        extra = {name: rates.series_start(name) - rates.series_s for name in self.frameworks}
        total += max(extra.values(), default=0.0) - sum(extra[name] for name in {k.framework for k in self.keys} if name in extra)
        item = math.prod(self.keys[0].shape) if self.keys else 0
        for key in self.keys:
            rate = rates.pinned_bps if key.host_buffer == "pinned" else rates.pageable_bps
            for batch in self.batches:
                total += point_seconds(batch * item, rate, self.timing, self.fixed_s, rates, key.method == STREAMED)
        return total


def point_seconds(nbytes: int, rate: float, timing: TimingConfig, fixed_s: float | None = None, rates: Rates = FALLBACK,
                  streamed: bool = False) -> float:  # fmt: skip
    """One point: its buffers, its warm-up, its sampling to the minimums (or its caps, whichever comes
    first), and the one call that verifies its bytes. Sampling past the minimums while a median is
    uncertain is not counted: on a quiet GPU it does not happen. A streamed point warms up on runs of
    STREAM_PROBE_COPIES copies, sizes its runs with one more and samples runs of several copies each."""
    call = rates.call_s + nbytes / rate
    unit, extra = call, 0.0  # one sample's calls; the calls that size a streamed point's runs
    if streamed:
        copies = copies_for(nbytes / rate)
        unit, extra = copies * call, (STREAM_PROBE_COPIES + copies) * call
    warm = max(timing.warmup_s, timing.warmup_calls * (STREAM_PROBE_COPIES * call if streamed else call))
    # sampling goes on to min_samples and min_time_s, but stops at max_samples or max_time_s
    wanted = max(timing.min_time_s, timing.min_samples * unit)
    sample = fixed_s if fixed_s is not None else min(timing.max_time_s, wanted, max(timing.max_samples, timing.min_samples) * unit)
    return rates.point_s + nbytes / rates.host_bps + warm + extra + sample + call


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


def nvbandwidth_seconds(nbytes: int, tests: int, samples: int | None, rates: Rates = FALLBACK) -> float:
    copies = tests * (samples or NVBANDWIDTH_SAMPLES) * NVBANDWIDTH_COPIES
    return rates.nvbandwidth_start_s + copies * (rates.call_s + nbytes / rates.pinned_bps)


def bandwidthtest_seconds(nbytes: int, memory: str, rates: Rates = FALLBACK) -> float:
    if memory == "pinned":
        return rates.bandwidthtest_start_s + BANDWIDTHTEST_COPIES * (rates.call_s + nbytes / rates.pinned_bps)
    copy = rates.call_s + nbytes / rates.pageable_bps + MEMSET_BYTES / rates.memset_bps
    return rates.bandwidthtest_start_s + BANDWIDTHTEST_COPIES * copy


def minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


__all__ = ["FALLBACK", "FINISH_S", "LARGE_KEEP", "Rates", "LARGE_TRIM_ORDER", "STOP_GRACE_S", "SweepPlan", "bandwidthtest_seconds",
           "minutes", "nvbandwidth_seconds", "point_seconds", "series_keys"]  # fmt: skip
