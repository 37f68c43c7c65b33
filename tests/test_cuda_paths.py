"""The raw CUDA reference and the cupy path, run on the CPU against a stand-in for CuPy (fake_cupy):
their per-call and streamed timing, the stream hold, the whole-buffer check and the clean-up, with no
GPU and no NVRTC. What only a GPU can show (real rates, real events) is in test_gpu.py."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import numpy as np
import pytest

import fake_cupy
from conftest import FAST
from xferbench.measuring.backends.cuda import CudaBackend, RawCopy
from xferbench.measuring.backends.cupy import CupyBackend
from xferbench.core.errors import VerificationError
from xferbench.measuring.measure import measure_point
from xferbench.core.spec import STREAMED, SeriesKey
from xferbench.core.timing import STREAM_PROBE_COPIES, STREAM_WARM_COPIES

SHAPE = (64, 64, 3)


@pytest.fixture(autouse=True)
def fake(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    fake_cupy.POOL.emptied = 0
    fake_cupy.HOST_ALLOCATIONS.clear()
    fake_cupy.REGISTERED.clear()
    return fake_cupy


def raw(mode: str = "raw_pinned", method: str = "per-call", batch: int = 4) -> RawCopy:
    key = SeriesKey("cuda", mode, "copy", "cuda:0", SHAPE, method=method)
    return CudaBackend().prepare(key.at(batch), {})  # type: ignore[return-value]


def test_a_failed_allocation_frees_the_pinned_buffer(monkeypatch) -> None:
    def out_of_memory(*args: object, **kwargs: object) -> None:
        raise fake_cupy.OutOfMemoryError("out of memory allocating 1 GiB")

    monkeypatch.setattr(fake_cupy, "empty", out_of_memory)
    with pytest.raises(MemoryError):
        raw()
    assert not fake_cupy.HOST_ALLOCATIONS


def test_a_raw_copy_moves_every_byte_and_counts_its_transfers() -> None:
    copy = raw()
    assert copy.pinned_ptr in fake_cupy.HOST_ALLOCATIONS  # cudaHostAlloc, outside CuPy's pool
    assert copy() >= 0
    copy.verify()
    assert np.array_equal(copy.dest.array, copy.host) and copy.transfers == 2
    assert copy.host_span() == (copy.pinned_ptr, copy.nbytes)
    copy.close()
    assert not fake_cupy.HOST_ALLOCATIONS and fake_cupy.POOL.emptied == 1  # freed, and the pool emptied


def test_the_whole_buffer_check_catches_what_a_sample_would_miss(monkeypatch) -> None:
    copy = raw(batch=16)  # 196,608 bytes
    real = fake_cupy.runtime.memcpyAsync

    def short_by_one_page(dst: int, src: int, nbytes: int, kind: int, stream: int) -> None:
        real(dst, src, 100_000, kind, stream)
        real(dst + 104_096, src + 104_096, nbytes - 104_096, kind, stream)

    monkeypatch.setattr(fake_cupy.runtime, "memcpyAsync", short_by_one_page)
    with pytest.raises(VerificationError, match=r"of 196,608 bytes differ from the source \(the first at byte 100,000\)"):
        copy.verify()


def test_streamed_copies_queue_behind_the_hold_then_run_back_to_back() -> None:
    copy = raw(method=STREAMED)
    span = copy.streamed(16)
    assert span > 0 and copy.transfers == 16 + STREAM_WARM_COPIES
    copy.verify()  # a short streamed run into the poisoned destination: every byte checked
    assert copy.transfers == 16 + STREAM_PROBE_COPIES + 2 * STREAM_WARM_COPIES


def test_a_hold_that_does_not_hold_is_an_error_not_a_figure(monkeypatch) -> None:
    copy = raw(method=STREAMED)
    monkeypatch.setattr(copy.stream, "launch_host_func", lambda callback, arg: None)  # no hold at all
    monkeypatch.setattr(copy.stream, "ops", SimpleNamespace(put=lambda op: op(), join=lambda: None))  # runs as queued
    with pytest.raises(RuntimeError, match=r"the stream was not held while 16 copies were queued \(the hold ended before"):
        copy.streamed(16)


def test_pageable_copies_are_queued_without_a_hold(monkeypatch) -> None:
    copy = raw("raw_pageable", method=STREAMED)
    held = []
    monkeypatch.setattr(copy.stream, "launch_host_func", lambda callback, arg: held.append(callback))
    assert copy.streamed(16) >= 0 and held == []  # the driver may wait on the stream: no hold
    copy.verify()
    assert copy.host_offset == copy.host.ctypes.data % 64 and copy.pinned_ptr == 0


def test_measure_point_streams_and_records_copies_transfers_and_the_check() -> None:
    key = SeriesKey("cuda", "raw_pinned", "copy", "cuda:0", SHAPE, method=STREAMED)
    point = measure_point(CudaBackend(), key.at(4), {}, FAST)
    assert point.status == "ok", point.error
    assert point.copies is not None and 2 <= point.copies <= 512 and len(point.times_s) == point.n >= 3
    per_run = point.copies + STREAM_WARM_COPIES
    assert point.transfers is not None and point.transfers >= point.n * per_run
    assert point.verify_s is not None and point.verify_s > 0 and point.device_times_s == []
    assert not fake_cupy.HOST_ALLOCATIONS  # the point closed its transfer


def test_the_cupy_path_verifies_without_nvrtc(fake) -> None:
    from xferbench.measuring.backends.cuda import cuda_environment

    assert cuda_environment()["nvrtc"] == "unavailable: libnvrtc.so.13: cannot open shared object file"
    for op in ("copy", "seed"):
        key = SeriesKey("cupy", "asarray", op, "cuda:0", SHAPE)
        transfer = CupyBackend().prepare(key.at(2), {})
        transfer()
        transfer.verify()  # no integer-array indexing: nothing for NVRTC to compile
        transfer.close()
    assert "cannot be queued on a held stream" in (CupyBackend().streamed_reason(SeriesKey("cupy", "asarray", "copy", "cuda:0", SHAPE)) or "")


def test_a_path_that_aliases_its_source_is_caught(monkeypatch) -> None:
    key = SeriesKey("cupy", "asarray", "copy", "cuda:0", SHAPE)
    transfer = CupyBackend().prepare(key.at(2), {})
    monkeypatch.setattr(fake_cupy, "asarray", lambda host: fake_cupy.ndarray(host))  # UMP: a view, not a copy
    with pytest.raises(VerificationError, match="shares memory with the NumPy source"):
        transfer.verify()


def test_a_registered_source_is_pinned_in_place_once_and_released() -> None:
    """raw_registered pins the NumPy array the user has with cudaHostRegister, outside the samples,
    records what that took, and unregisters it before the array goes."""
    key = SeriesKey("cuda", "raw_registered", "copy", "cuda:0", SHAPE)
    point = measure_point(CudaBackend(), key.at(4), {}, FAST)
    assert point.status == "ok", point.error
    assert point.pin_s is not None and point.pin_s >= 0 and point.host_offset is not None
    assert not fake_cupy.REGISTERED and not fake_cupy.HOST_ALLOCATIONS  # released with the point
    copy = raw("raw_registered", method=STREAMED)
    assert fake_cupy.REGISTERED == {copy.host.ctypes.data: copy.nbytes} and copy.hold  # page-locked: it can be held
    assert copy.streamed(8) > 0
    copy.verify()
    copy.close()
    assert not fake_cupy.REGISTERED


def test_a_write_combined_source_is_allocated_so_and_checked_whole() -> None:
    copy = raw("raw_pinned_wc")
    assert fake_cupy.HOST_FLAGS[copy.pinned_ptr] == 4  # cudaHostAllocWriteCombined
    copy.verify()
    copy.close()
    assert not fake_cupy.HOST_ALLOCATIONS
    info = CudaBackend().describe(SeriesKey("cuda", "raw_pinned_wc", "copy", "cuda:0", SHAPE), {})
    assert "bandwidthTest --wc" in info.note
    assert SeriesKey("cuda", "raw_pinned_wc", "copy", "cuda:0", SHAPE).host_buffer == "pinned"
    assert "raw_registered" not in CudaBackend.default_modes and "raw_pinned_wc" not in CudaBackend.default_modes


def test_a_cold_raw_pageable_series_evicts_before_each_timed_copy_only(monkeypatch) -> None:
    """--cold-source on the raw pageable copy: warm-up and check copy back to back; then every sampled copy follows an
    eviction, none follows another copy directly; the series keeps its own parameters beside the cold source's."""
    from xferbench.core.results import Series
    from xferbench.core.timing import TimingConfig
    from xferbench.measuring import cold, measure

    log: list[str] = []

    class Logged(cold.Eviction):
        def __call__(self) -> None:
            log.append("evict")
            super().__call__()

    monkeypatch.setattr(measure, "take_eviction", lambda params: ({k: v for k, v in params.items() if k != cold.COLD_SOURCE},
                                                                  Logged(4096) if params.get(cold.COLD_SOURCE) else None))  # fmt: skip
    real = fake_cupy.runtime.memcpyAsync

    def copy(dst, src, nbytes, kind, stream):
        if kind == fake_cupy.runtime.memcpyHostToDevice:
            log.append("h2d")
        return real(dst, src, nbytes, kind, stream)

    monkeypatch.setattr(fake_cupy.runtime, "memcpyAsync", copy)
    key = SeriesKey("cuda", "raw_pageable", "copy", "cuda:0", SHAPE)
    series = Series.of(key)
    timing = TimingConfig(warmup_calls=2, warmup_s=0, min_samples=3, min_time_s=0, max_samples=3)
    measure.measure_series(CudaBackend(), key, (2,), {cold.COLD_SOURCE: True}, timing, series)
    assert series.points[0].status == "ok", series.points[0].error
    assert log == ["h2d", "h2d", "h2d", "evict", "h2d", "evict", "h2d", "evict", "h2d"]  # 2 warm-up, the check, 3 samples
    assert series.params["cold_source"] is True and series.params["eviction_bytes"] == 4096 and "call" in series.params
