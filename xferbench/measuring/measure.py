"""Measuring one series: prepare, warm up, verify and sample each batch size in turn.

The same loop runs in the main process for host-side paths and inside a framework's worker
process (xferbench.measuring.worker), so a series means the same thing wherever it was measured.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from xferbench.measuring import contention
from xferbench.measuring.cold import Eviction, take_eviction
from xferbench.measuring.backends import Backend
from xferbench.measuring.buffers import verification_round
from xferbench.core.errors import NotSupportedHere, VerificationError
from xferbench.core.numa import page_nodes
from xferbench.core.results import Point, Series
from xferbench.core.spec import STREAMED, SeriesKey, Spec
from xferbench.core.timing import STREAM_PROBE_COPIES, TimingConfig, calibrate_copies, sample, sample_streamed, warm_up

# How a point's error starts: the series stops after these, and the CLI tells them apart.
VERIFICATION_FAILED, OUT_OF_MEMORY = "verification failed", "out of memory"

OnPoint = Callable[[Series, Point], None]
OnStart = Callable[[Series, int], None]
OnReady = Callable[[int], None]  # a point is ready to sample: returns when every device of a concurrent run is


def minor_faults() -> int | None:
    """This process's minor page faults so far: a call that touches fresh pages shows here (Unix only)."""
    try:
        import resource
    except ImportError:
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def unavailable_checks() -> list[str]:
    """Where this OS counts no page faults (Windows has no getrusage): said, since an empty faults/call
    column would otherwise read as calls that touch no fresh memory."""
    try:
        import resource  # noqa: F401
    except ImportError:
        return ["page faults per call: there is no getrusage here, so a path that touches fresh memory on"
                " every call (TensorFlow's copy past glibc's mmap threshold, say) is not shown as such"]  # fmt: skip
    return []


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def measure_point(
    backend: Backend, spec: Spec, params: dict[str, Any], timing: TimingConfig, on_ready: OnReady | None = None,
    eviction: Eviction | None = None,
) -> Point:
    """Prepare, warm up, verify the bytes arrived, then sample, per call or streamed as the series
    says. Errors become a recorded point. `on_ready`, in a concurrent run, waits before sampling until
    every device is ready too, and the point keeps the window it sampled in. `eviction` (--cold-source)
    runs before each sampled call, untimed."""
    transfer = None
    try:
        transfer = backend.prepare(spec, params)
        cpu_before = contention.snapshot()  # from warm-up to the last sample: long enough for /proc's ticks
        streamed = spec.series.method == STREAMED
        copies = None
        if streamed:
            run = transfer.streamed
            warmup_calls = warm_up(lambda: run(STREAM_PROBE_COPIES), timing, transfer.clock)
            copies = calibrate_copies(run)
        else:
            warmup_calls = warm_up(transfer, timing, transfer.clock)
        started = time.perf_counter()
        with verification_round():  # every byte, outside the samples, with bytes no earlier point's check sent
            transfer.verify()
        verify_s = time.perf_counter() - started
        span = transfer.host_span()
        nodes = page_nodes(*span) if span else None
        if on_ready:
            on_ready(spec.batch_size)
        window_start = time.monotonic()
        faults_before = minor_faults()
        if copies:
            samples = sample_streamed(transfer.streamed, copies, timing, transfer.clock)
        else:
            samples = sample(transfer, timing, transfer.clock, between=eviction)
        window_end = time.monotonic()
        faults_after = minor_faults()  # the samples' own, before a check or the compute's phase adds any
        cpu = contention.usage(cpu_before, contention.snapshot())
        if getattr(transfer, "verify_after", False):  # a pipeline: no batch dropped or repeated while sampled either
            with verification_round():
                transfer.verify()
        point = Point.measured(spec, samples, warmup_calls)
        if params.get("overlap") and hasattr(transfer, "overlap"):  # after the copy's figures, outside its window
            point.compute = transfer.overlap(point.median_s, timing)
        if on_ready and not transfer.virtual:
            point.window_s = [window_start, window_end]
        if cpu is not None:
            point.others_cpus = None if cpu.others_cpus is None else round(cpu.others_cpus, 3)
            point.run_wait = None if cpu.run_wait is None else round(cpu.run_wait, 4)
            point.cpus = cpu.cpus
        point.host_offset, point.copies, point.transfers = transfer.host_offset, copies, transfer.transfers
        point.verify_s, point.host_nodes, point.pin_s = verify_s, nodes, transfer.pin_s
        point.staging_chunk_bytes = transfer.staging_chunk_bytes
        if faults_before is not None:
            calls = len(samples.times_s) * (copies or 1)
            point.page_faults_per_call = (faults_after - faults_before) / calls  # type: ignore[operator]
        return point
    except VerificationError as error:
        return Point.failed(spec, "error", f"{VERIFICATION_FAILED}: {error}")
    except Exception as error:
        if backend.is_out_of_memory(error):
            return Point.failed(spec, "error", f"{OUT_OF_MEMORY}: {first_line(error)}")
        return Point.failed(spec, "error", f"{type(error).__name__}: {first_line(error)}")
    finally:
        if transfer is not None:
            transfer.close()


def measure_series(
    backend: Backend,
    key: SeriesKey,
    batch_sizes: Sequence[int],
    params: dict[str, Any],
    timing: TimingConfig,
    series: Series,
    on_start: OnStart | None = None,
    on_point: OnPoint | None = None,
    on_ready: OnReady | None = None,
) -> None:
    """Describe the path into `series`, then append one point per batch size, calling on_point after each.

    After an out-of-memory point the larger batches are recorded as skipped; after a failed
    verification the series is marked failed and the rest skipped. With the sweep's cold-source flag
    in `params`, every sampled call starts from a source evicted from the caches (cold.py).
    """
    params, eviction = take_eviction(params)  # freed when the series ends, with this frame
    try:
        info = backend.describe(key, params)
    except NotSupportedHere as error:
        series.status, series.reason = "skipped", str(error)
        return
    except Exception as error:
        series.status, series.reason = "failed", f"could not set up: {type(error).__name__}: {first_line(error)}"
        return
    for name, value in dataclasses.asdict(info).items():
        setattr(series, name, value)
    if eviction is not None:
        series.params, series.note = {**series.params, **eviction.params()}, eviction.noted(series.note)
    stop: str | None = None
    for batch_size in batch_sizes:
        spec = key.at(batch_size)
        if stop:
            point = Point.failed(spec, "skipped", stop)
        else:
            if on_start:
                on_start(series, batch_size)
            point = measure_point(backend, spec, params, timing, on_ready, eviction)
            error = point.error or ""
            if error.startswith(VERIFICATION_FAILED):
                series.status, series.reason = "failed", error
                stop = f"not measured: verification failed at batch {batch_size}"
            elif error.startswith(OUT_OF_MEMORY):
                stop = f"not measured: batch {batch_size} ran out of memory"
        series.points.append(point)
        if on_point:
            on_point(series, point)
