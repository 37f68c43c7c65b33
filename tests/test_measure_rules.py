"""measure_point and measure_series, field by field, on a virtual clock: every figure a point records,
each error a point can end in, and how a series stops after a failed verification or out of memory."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from xferbench.core.errors import NotSupportedHere, VerificationError
from xferbench.core.results import Point, Series
from xferbench.core.spec import HOST_TO_HOST, STREAMED, SeriesKey
from xferbench.core.timing import Samples, TimingConfig
from xferbench.measuring import contention, measure
from xferbench.measuring.backends.base import Backend, SeriesInfo, Transfer

TICK = 2.0**-10  # host seconds one call (or one streamed copy) takes on the virtual clock: exact in binary
DEVICE_TICK = 2.0**-12  # event seconds per streamed copy: 0.002 s / DEVICE_TICK rounds up to 9 copies a sample
# Warm-up: at least 2 calls and 4.5 ticks (5 calls per call, 2 streamed runs of 4); sampling: 2.5 ticks (3
# calls per call, 1 streamed run of 9). On the real clock both would run far longer than that.
TIMING = TimingConfig(warmup_calls=2, warmup_s=4.5 * TICK, min_samples=1, min_time_s=2.5 * TICK, max_samples=1000,
                      max_time_s=10.0)  # fmt: skip
KEY = SeriesKey("fake", "a", "copy", "cpu", (2, 3))
SPEC = KEY.at(4)


class VirtualClock:
    """Advances only when a transfer is charged; read without end (a loop nothing advances) it raises."""

    def __init__(self) -> None:
        self.now, self.reads = 0.0, 0

    def __call__(self) -> float:
        self.reads += 1
        if self.reads > 5000:
            raise RuntimeError("virtual clock read without end")
        return self.now


class Stand(Transfer):
    """A transfer on a virtual clock that logs what it was asked to do, in order."""

    host_offset, transfers, pin_s = 17, 42, 0.5

    def __init__(self, backend: StandBackend | None = None, batch_size: int = 4, virtual: bool = True) -> None:
        self.clock, self.virtual, self.batch_size = VirtualClock(), virtual, batch_size
        self.events: list[str] = []
        self.raise_in_call = backend.call_errors.get(batch_size) if backend else None
        self.verify_errors = list(backend.verify_errors.get(batch_size, [])) if backend else []
        self.span: tuple[int, int] | None = (4096, 1 << 20)

    def __call__(self) -> None:
        self.events.append("call")
        if self.raise_in_call is not None:
            raise self.raise_in_call
        self.clock.now += TICK

    def streamed(self, copies: int) -> float:
        self.events.append(f"streamed {copies}")
        self.clock.now += copies * TICK
        return copies * DEVICE_TICK

    def verify(self) -> None:
        self.events.append("verify")
        if self.verify_errors:
            error = self.verify_errors.pop(0)
            if error is not None:
                raise error

    def host_span(self) -> tuple[int, int] | None:
        return self.span

    def close(self) -> None:
        self.events.append("close")


class StandBackend(Backend):
    """Prepares Stands; errors by batch size: raised by a call, by verify() (one per verify), or by prepare."""

    name = "fake"

    def __init__(self, transfer_class: type[Stand] | None = None, virtual: bool = True) -> None:
        self.transfer_class, self.virtual = transfer_class or Stand, virtual
        self.call_errors: dict[int, BaseException] = {}
        self.verify_errors: dict[int, list[BaseException | None]] = {}
        self.prepare_errors: dict[int, BaseException] = {}
        self.prepared: list[tuple[Any, Any]] = []
        self.described: list[tuple[Any, Any]] = []
        self.transfers: list[Stand] = []
        self.describe_error: BaseException | None = None

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        self.described.append((key, params))
        if self.describe_error is not None:
            raise self.describe_error
        return SeriesInfo("Stand-in 9000", HOST_TO_HOST, "virtual", "none", device_clock="events",
                          params={"depth": 3}, note="copies nothing")  # fmt: skip

    def host_bytes(self, spec: Any) -> int:
        return 0

    def prepare(self, spec: Any, params: dict[str, Any]) -> Transfer:
        self.prepared.append((spec, params))
        error = self.prepare_errors.get(spec.batch_size)
        if error is not None:
            raise error
        transfer = self.transfer_class(self, spec.batch_size, self.virtual)
        self.transfers.append(transfer)
        return transfer




class Pipeline(Stand):
    verify_after = True


class Overlapping(Stand):
    def overlap(self, copy_median_s: float, timing: TimingConfig) -> dict[str, Any]:
        self.overlapped = (copy_median_s, timing)
        return {"kernel": "saxpy", "repeats": 7}


class FakeTime:
    """measure.py's `time`: perf_counter steps 0.25 s a read, monotonic 2.5 s, so verify_s and window_s are exact."""

    def __init__(self) -> None:
        self.perf, self.mono = 4.75, 47.5

    def perf_counter(self) -> float:
        self.perf += 0.25
        return self.perf

    def monotonic(self) -> float:
        self.mono += 2.5
        return self.mono


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What measure_point reads of the host (time, NUMA nodes, faults, CPU contention), scripted."""
    state: dict[str, Any] = {"faults": [1000, 1030], "usage": contention.Usage(1.23456, 0.123456, 4), "nodes": [],
                             "snapshots": iter(["before", "after"]), "usages": []}  # fmt: skip
    monkeypatch.setattr(measure, "time", FakeTime())

    def page_nodes(address: int, nbytes: int) -> dict[str, int]:
        state["nodes"].append((address, nbytes))
        return {"0": 3, "-1": 1}

    def faults() -> int | None:
        values = state["faults"]
        return values.pop(0) if values else None

    def usage(before: Any, after: Any) -> contention.Usage | None:
        state["usages"].append((before, after))
        return state["usage"]

    monkeypatch.setattr(measure, "page_nodes", page_nodes)
    monkeypatch.setattr(measure, "minor_faults", faults)
    monkeypatch.setattr(contention, "snapshot", lambda: next(state["snapshots"], "later"))
    monkeypatch.setattr(contention, "usage", usage)
    return state


def ok_point(times: list[float], warmup_calls: int, **fields: Any) -> Point:
    point = Point.measured(SPEC, Samples(times_s=times), warmup_calls)
    figures = dict(host_offset=17, transfers=42, verify_s=0.25, host_nodes={"0": 3, "-1": 1}, pin_s=0.5,
                   others_cpus=1.235, run_wait=0.1235, cpus=4, page_faults_per_call=10.0)  # fmt: skip
    figures.update(fields)
    for name, value in figures.items():
        setattr(point, name, value)
    return point


# measure_point: what a measured point records


def test_a_per_call_point_records_every_figure_exactly(host: dict[str, Any]) -> None:
    """Per call: warm-up and samples on the transfer's clock, verify_s around verify(), the source's nodes,
    contention rounded (3 and 4 places), faults per call; no window without on_ready, no copies."""
    backend = StandBackend()
    params = {"depth": 3}
    point = measure.measure_point(backend, SPEC, params, TIMING)
    assert point == ok_point([TICK] * 3, 5)
    assert point.copies is None and point.window_s is None and point.compute is None
    assert backend.prepared == [(SPEC, params)]
    assert backend.transfers[0].events == ["call"] * 5 + ["verify"] + ["call"] * 3 + ["close"]
    assert host["nodes"] == [(4096, 1 << 20)]
    assert host["usages"] == [("before", "after")]


def test_a_streamed_point_warms_up_sizes_and_samples_streamed_runs(host: dict[str, Any]) -> None:
    """Streamed: warm-up runs of STREAM_PROBE_COPIES, a probe that sizes the copies, samples per copy,
    faults divided by samples times copies."""
    backend = StandBackend()
    host["faults"] = [1000, 1036]
    spec = SeriesKey("fake", "a", "copy", "cpu", (2, 3), method=STREAMED).at(4)
    point = measure.measure_point(backend, spec, {}, TIMING)
    expected = Point.measured(spec, Samples(times_s=[DEVICE_TICK]), 2)
    for name, value in dict(host_offset=17, transfers=42, verify_s=0.25, host_nodes={"0": 3, "-1": 1}, pin_s=0.5,
                            others_cpus=1.235, run_wait=0.1235, cpus=4, page_faults_per_call=4.0, copies=9).items():  # fmt: skip
        setattr(expected, name, value)
    assert point == expected
    assert backend.transfers[0].events == ["streamed 4"] * 3 + ["streamed 9", "verify", "streamed 9", "close"]


def test_on_ready_runs_after_verification_and_a_real_clock_keeps_the_window(host: dict[str, Any]) -> None:
    """on_ready gets the batch size between verify() and the samples; a transfer on a real clock keeps
    [start, end] of its sampling (time.monotonic)."""
    backend = StandBackend(virtual=False)
    ready: list[int] = []
    backend_events = lambda: backend.transfers[0].events  # noqa: E731
    point = measure.measure_point(backend, SPEC, {}, TIMING, on_ready=lambda b: (ready.append(b), backend_events().append("ready")))
    assert point == ok_point([TICK] * 3, 5, window_s=[50.0, 52.5])
    assert ready == [4]
    assert backend_events() == ["call"] * 5 + ["verify", "ready"] + ["call"] * 3 + ["close"]


def test_a_virtual_clock_keeps_no_window_even_with_on_ready(host: dict[str, Any]) -> None:
    """Samples that took no real time say nothing of when devices overlapped: no window_s."""
    ready: list[int] = []
    point = measure.measure_point(StandBackend(), SPEC, {}, TIMING, on_ready=ready.append)
    assert point.window_s is None and ready == [4] and point.status == "ok"


def test_a_real_clock_without_on_ready_keeps_no_window(host: dict[str, Any]) -> None:
    """window_s belongs to a concurrent run only (on_ready given)."""
    point = measure.measure_point(StandBackend(virtual=False), SPEC, {}, TIMING)
    assert point == ok_point([TICK] * 3, 5)


def test_no_span_no_faults_no_contention_leave_those_fields_empty(host: dict[str, Any]) -> None:
    """host_span None: page_nodes is not asked; minor_faults None: no faults per call; usage None: no contention."""

    class Unplaced(Stand):
        def host_span(self) -> None:
            return None

    host["faults"], host["usage"] = [], None
    point = measure.measure_point(StandBackend(Unplaced), SPEC, {}, TIMING)
    assert point == ok_point([TICK] * 3, 5, host_nodes=None, others_cpus=None, run_wait=None, cpus=None,
                             page_faults_per_call=None)  # fmt: skip
    assert host["nodes"] == []


def test_contention_figures_that_are_unknown_stay_none(host: dict[str, Any]) -> None:
    """Usage with no others' time and no run-queue wait still records the CPU count."""
    host["usage"] = contention.Usage(None, None, 2)
    point = measure.measure_point(StandBackend(), SPEC, {}, TIMING)
    assert (point.others_cpus, point.run_wait, point.cpus) == (None, None, 2)


def test_a_pipeline_is_verified_again_after_sampling(host: dict[str, Any]) -> None:
    """verify_after: a second verify() after the samples; a plain transfer is verified once."""
    backend = StandBackend(Pipeline)
    point = measure.measure_point(backend, SPEC, {}, TIMING)
    assert point == ok_point([TICK] * 3, 5)
    assert backend.transfers[0].events == ["call"] * 5 + ["verify"] + ["call"] * 3 + ["verify", "close"]


def test_a_pipeline_that_drops_a_batch_while_sampled_fails_verification(host: dict[str, Any]) -> None:
    """The check after sampling fails the point as a verification failure."""
    backend = StandBackend(Pipeline)
    backend.verify_errors[4] = [None, VerificationError("batch 6 repeated")]
    point = measure.measure_point(backend, SPEC, {}, TIMING)
    assert point == Point.failed(SPEC, "error", "verification failed: batch 6 repeated")
    assert backend.transfers[0].events[-1] == "close"


def test_overlap_runs_only_when_asked_and_the_transfer_can(host: dict[str, Any]) -> None:
    """params overlap and an overlap() method: compute from overlap(copy median, timing); either missing: none."""
    backend = StandBackend(Overlapping)
    point = measure.measure_point(backend, SPEC, {"overlap": True}, TIMING)
    assert point == ok_point([TICK] * 3, 5, compute={"kernel": "saxpy", "repeats": 7})
    assert backend.transfers[0].overlapped == (TICK, TIMING)
    host["faults"], host["snapshots"] = [1000, 1030], iter(["before", "after"])
    unasked = measure.measure_point(backend, SPEC, {}, TIMING)
    assert unasked.compute is None and not hasattr(backend.transfers[1], "overlapped")
    host["faults"] = [1000, 1030]
    unable = measure.measure_point(StandBackend(), SPEC, {"overlap": True}, TIMING)
    assert unable.status == "ok" and unable.compute is None


# measure_point: errors become points, and the transfer is closed


def test_an_error_in_prepare_is_recorded_and_nothing_is_closed(host: dict[str, Any]) -> None:
    """A failed prepare: `TypeName: first line`, and no transfer to close."""
    backend = StandBackend()
    backend.prepare_errors[4] = ValueError("bad shape\nsecond line")
    assert measure.measure_point(backend, SPEC, {}, TIMING) == Point.failed(SPEC, "error", "ValueError: bad shape")
    assert backend.transfers == []


def test_an_error_in_a_call_is_recorded_and_the_transfer_closed(host: dict[str, Any]) -> None:
    """A call that raises: `TypeName: first line`, close() still called."""
    backend = StandBackend()
    backend.call_errors[4] = RuntimeError("  launch failed\nat kernel 3")
    assert measure.measure_point(backend, SPEC, {}, TIMING) == Point.failed(SPEC, "error", "RuntimeError: launch failed")
    assert backend.transfers[0].events == ["call", "close"]


def test_out_of_memory_is_told_apart(host: dict[str, Any]) -> None:
    """backend.is_out_of_memory(error): `out of memory: first line`, or the type's name where the message is empty."""
    backend = StandBackend()
    backend.call_errors[4] = MemoryError("cannot allocate 4 GiB\ndetails")
    assert measure.measure_point(backend, SPEC, {}, TIMING) == Point.failed(SPEC, "error", "out of memory: cannot allocate 4 GiB")
    backend.call_errors[4] = MemoryError()
    assert measure.measure_point(backend, SPEC, {}, TIMING) == Point.failed(SPEC, "error", "out of memory: MemoryError")
    assert [t.events[-1] for t in backend.transfers] == ["close", "close"]


def test_a_failed_verification_is_recorded_whole(host: dict[str, Any]) -> None:
    """VerificationError: `verification failed: ` and its whole message; the transfer closed."""
    backend = StandBackend()
    backend.verify_errors[4] = [VerificationError("byte 7 differs\nexpected 3, got 0")]
    point = measure.measure_point(backend, SPEC, {}, TIMING)
    assert point == Point.failed(SPEC, "error", "verification failed: byte 7 differs\nexpected 3, got 0")
    assert backend.transfers[0].events == ["call"] * 5 + ["verify", "close"]


# the helpers


def test_first_line_is_the_stripped_first_line_or_the_type_name() -> None:
    """first_line: the first line of the stripped message; an empty or blank message gives the type's name."""
    assert measure.first_line(ValueError("  one\ntwo")) == "one"
    assert measure.first_line(KeyError()) == "KeyError"
    assert measure.first_line(OSError(" \n ")) == "OSError"


def test_minor_faults_reads_this_process_rusage() -> None:
    """minor_faults: RUSAGE_SELF's ru_minflt, between two readings of it."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    faults = measure.minor_faults()
    assert isinstance(faults, int) and before <= faults <= resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    assert measure.unavailable_checks() == []


def test_without_getrusage_faults_are_unknown_and_said_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """No resource module (Windows): no faults, and the check says why the column is empty."""
    monkeypatch.setitem(sys.modules, "resource", None)
    assert measure.minor_faults() is None
    assert measure.unavailable_checks() == [
        "page faults per call: there is no getrusage here, so a path that touches fresh memory on every call"
        " (TensorFlow's copy past glibc's mmap threshold, say) is not shown as such"
    ]


# measure_series


def run_series(backend: StandBackend, sizes: list[int], params: dict[str, Any] | None = None):  # type: ignore[no-untyped-def]
    series, log = Series.of(KEY), []
    params = {"depth": 3} if params is None else params
    measure.measure_series(backend, KEY, sizes, params, TIMING, series,
                           on_start=lambda s, b: log.append(("start", s, b)),
                           on_point=lambda s, p: log.append(("point", s, p)),
                           on_ready=lambda b: log.append(("ready", b)))  # fmt: skip
    return series, log


def test_a_series_copies_describe_and_measures_each_batch(host: dict[str, Any]) -> None:
    """describe(key, params)'s fields land on the series; each batch: on_start, on_ready, a point, on_point."""
    host["faults"] = [1000, 1030] * 2
    backend = StandBackend()
    series, log = run_series(backend, [1, 2])
    assert backend.described == [(KEY, {"depth": 3})]
    assert (series.device_name, series.transfer, series.clock, series.sync) == ("Stand-in 9000", HOST_TO_HOST, "virtual", "none")
    assert (series.device_clock, series.params, series.note) == ("events", {"depth": 3}, "copies nothing")
    assert (series.status, series.reason) == ("ok", None)
    assert backend.prepared == [(KEY.at(1), {"depth": 3}), (KEY.at(2), {"depth": 3})]
    p1, p2 = series.points
    assert [(p.batch_size, p.status, p.warmup_calls, p.times_s) for p in series.points] == [(1, "ok", 5, [TICK] * 3), (2, "ok", 5, [TICK] * 3)]
    assert log == [("start", series, 1), ("ready", 1), ("point", series, p1), ("start", series, 2), ("ready", 2), ("point", series, p2)]
    assert log[2][2] is p1 and log[5][2] is p2 and log[0][1] is series


def test_a_failed_verification_fails_the_series_and_skips_the_rest(host: dict[str, Any]) -> None:
    """After a verification failure at batch N: the series failed with that error, later batches skipped unmeasured."""
    backend = StandBackend()
    backend.verify_errors[2] = [VerificationError("byte 0 differs")]
    series, log = run_series(backend, [1, 2, 4, 8])
    assert (series.status, series.reason) == ("failed", "verification failed: byte 0 differs")
    stop = "not measured: verification failed at batch 2"
    assert series.points[1:] == [Point.failed(KEY.at(2), "error", "verification failed: byte 0 differs"),
                                 Point.failed(KEY.at(4), "skipped", stop), Point.failed(KEY.at(8), "skipped", stop)]  # fmt: skip
    assert series.points[0].status == "ok" and [s for s, _ in backend.prepared] == [KEY.at(1), KEY.at(2)]
    assert [entry[0] for entry in log] == ["start", "ready", "point", "start", "point", "point", "point"]
    assert [entry[2] for entry in log if entry[0] == "point"] == series.points


def test_out_of_memory_skips_the_larger_batches_and_leaves_the_series_ok(host: dict[str, Any]) -> None:
    """After out of memory at batch N: the larger batches skipped, the series itself not failed."""
    backend = StandBackend()
    backend.call_errors[2] = MemoryError("cannot allocate")
    series, log = run_series(backend, [1, 2, 4, 8])
    assert (series.status, series.reason) == ("ok", None)
    stop = "not measured: batch 2 ran out of memory"
    assert series.points[1:] == [Point.failed(KEY.at(2), "error", "out of memory: cannot allocate"),
                                 Point.failed(KEY.at(4), "skipped", stop), Point.failed(KEY.at(8), "skipped", stop)]  # fmt: skip
    assert [b for _, b in backend.prepared] == [{"depth": 3}] * 2
    assert [entry[0] for entry in log] == ["start", "ready", "point", "start", "point", "point", "point"]


def test_another_error_does_not_stop_the_series(host: dict[str, Any]) -> None:
    """An error that is neither: recorded, and the next batch measured."""
    host["faults"] = []
    backend = StandBackend()
    backend.call_errors[1] = RuntimeError("driver hiccup")
    series, _ = run_series(backend, [1, 2])
    assert series.points[0] == Point.failed(KEY.at(1), "error", "RuntimeError: driver hiccup")
    assert (series.points[1].batch_size, series.points[1].status, series.status) == (2, "ok", "ok")


def test_describe_not_supported_skips_the_series(host: dict[str, Any]) -> None:
    """NotSupportedHere from describe: series skipped, its message the reason, nothing measured."""
    backend = StandBackend()
    backend.describe_error = NotSupportedHere("no such device\nhere")
    series, log = run_series(backend, [1, 2])
    assert (series.status, series.reason, series.points, log) == ("skipped", "no such device\nhere", [], [])
    assert series.device_name is None and backend.prepared == []


def test_describe_failing_otherwise_fails_the_series(host: dict[str, Any]) -> None:
    """Any other error from describe: series failed, `could not set up: TypeName: first line`."""
    backend = StandBackend()
    backend.describe_error = ImportError("no module named x\ntraceback")
    series, log = run_series(backend, [1])
    assert (series.status, series.reason, series.points, log) == ("failed", "could not set up: ImportError: no module named x", [], [])


# Real bytes: what a check must catch across points


class CachedCopy(Transfer):
    """A copy into a destination block the backend keeps between points, as a framework's caching allocator hands
    a freed block back; its verify, as a framework path's, cannot poison a destination made by the call itself."""

    def __init__(self, backend: CachingBackend, spec: Any) -> None:
        from xferbench.measuring.buffers import make_source

        self.backend, self.source = backend, make_source(spec.batch_shape)
        self.dest = backend.blocks.setdefault(spec.nbytes, np.zeros(spec.nbytes, np.uint8))

    def __call__(self) -> None:
        if self.backend.copies:
            np.copyto(self.dest, self.source.reshape(-1))

    def verify(self) -> None:
        from xferbench.measuring.buffers import check_all, fill_pattern, read_host

        fill_pattern(self.source, variant=1)  # new bytes: leftovers from warm-up cannot match
        self.once()
        check_all(self.source, read_host(self.dest), "cached")


class CachingBackend(StandBackend):
    def __init__(self) -> None:
        super().__init__()
        self.blocks: dict[int, np.ndarray] = {}
        self.copies = True

    def prepare(self, spec: Any, params: dict[str, Any]) -> Transfer:
        return CachedCopy(self, spec)


FAST = TimingConfig(warmup_calls=1, warmup_s=0, min_samples=1, min_time_s=0, max_samples=3, settle_s=0)


def test_a_block_left_by_an_earlier_points_check_cannot_pass_for_a_copy_that_stopped() -> None:
    """The first point copies and passes; at the next point of the same size the copy stops, and the destination the
    allocator hands back still holds the first point's checked bytes: each check's bytes are its own, so it fails."""
    backend = CachingBackend()
    assert measure.measure_point(backend, KEY.at(50), {}, FAST).status == "ok"
    backend.copies = False
    point = measure.measure_point(backend, KEY.at(50), {}, FAST)
    assert point.status == "error" and point.error.startswith(f"{measure.VERIFICATION_FAILED}: cached: ")


def test_a_host_copy_that_misses_one_byte_fails_its_point() -> None:
    """The host path's check reads every byte: a copy that leaves out the last byte, or one in the middle, or the
    first, fails the point, at any size around the compare's 8-byte words."""
    from xferbench.measuring.backends.host import HostBackend, HostCopy

    key = SeriesKey("host", "numpy", "copy", "cpu", (1, 1, 3))
    for batch in (1, 3, 5, 700):
        size = batch * 3
        for missed in sorted({0, size // 2, size - 1}):

            class Missing(HostCopy):
                def __call__(self) -> None:
                    keep = self.dest.reshape(-1)[missed]
                    super().__call__()
                    self.dest.reshape(-1)[missed] = keep

            backend = HostBackend()
            backend.prepare = lambda spec, params: Missing(spec)  # type: ignore[method-assign]
            point = measure.measure_point(backend, key.at(batch), {}, FAST)
            assert point.error == (f"{measure.VERIFICATION_FAILED}: host/numpy/copy@cpu: 1 of {size:,} bytes differ from"
                                   f" the source (the first at byte {missed:,}); the transfer did not deliver the data"), (batch, missed)  # fmt: skip
        assert measure.measure_point(HostBackend(), key.at(batch), {}, FAST).status == "ok"
