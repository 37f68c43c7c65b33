"""Real small sweeps on the CPU, and the failure handling of the sweep loop."""

import math
import mmap
import platform
import subprocess
import sys

import numpy as np
import pytest

from conftest import FAST, needs_torch
from xferbench.measuring.backends import BACKENDS
from xferbench.measuring.backends.host import HostCopy
from xferbench.measuring.measure import measure_series
from xferbench.core.results import Result, Series
from xferbench.core.spec import SeriesKey
from xferbench.measuring.sweep import SweepConfig, make_plan, new_result, run_plan

SMALL = (32, 32, 3)


def sweep(**kwargs) -> Result:
    config = SweepConfig(shape=SMALL, timing=FAST, **kwargs)
    plan = make_plan(config)
    try:
        return run_plan(plan, new_result(plan, {}), save=lambda r: None)
    finally:
        plan.close()


def in_process(framework: str, mode: str, batch_sizes=(1,), op: str = "copy", device: str = "cpu") -> Series:
    """One series measured in this process, so a test can patch the path's code."""
    key = SeriesKey(framework, mode, op, device, SMALL)
    series = Series(framework, mode, op, device, list(SMALL))
    measure_series(BACKENDS[framework], key, batch_sizes, {}, FAST, series)
    return series


def by_label(result: Result) -> dict:
    return {s.label(): s for s in result.series}


def test_host_path_copies_real_bytes() -> None:
    series = sweep(frameworks=("host",), batch_sizes=(1, 8, 64)).series[0]
    assert series.transfer == "host-to-host" and series.status == "ok"
    assert [p.status for p in series.points] == ["ok"] * 3
    assert all(p.mbps > 0 and len(p.times_s) == p.n >= 3 for p in series.points)
    # The peak rests on the points measured while the machine was not busy, where any is left.
    clean = [p for p in series.points if not p.busy] or series.points
    assert series.summary.peak_mbps == max(p.mbps for p in clean)


def test_host_verification_catches_a_copy_that_does_nothing(monkeypatch) -> None:
    monkeypatch.setattr(HostCopy, "__call__", lambda self: None)
    series = sweep(frameworks=("host",), batch_sizes=(1, 2)).series[0]
    assert series.status == "failed" and "did not deliver" in series.reason
    assert [p.status for p in series.points] == ["error", "skipped"]


@pytest.mark.slow
@needs_torch
def test_torch_cpu_pageable_copy_and_seed_are_real_copies() -> None:
    series = by_label(sweep(frameworks=("torch",), ops=("copy", "seed"), batch_sizes=(1, 4), device="cpu"))
    for op in ("copy", "seed"):
        s = series[f"torch/pageable/{op}@cpu"]
        assert s.status == "ok" and s.transfer == "host-to-host"
        assert [p.status for p in s.points] == ["ok", "ok"], [p.error for p in s.points]
    assert "fetched to the host" in series["torch/pageable/seed@cpu"].sync
    assert series["torch/pageable/copy@cpu"].params["intra_op_threads"] >= 1


@pytest.mark.slow
@needs_torch
def test_torch_pinned_modes_skip_on_cpu_with_reason() -> None:
    series = by_label(sweep(frameworks=("torch",), batch_sizes=(1,), device="cpu"))
    for mode in ("pinned", "pinned_into"):
        s = series[f"torch/{mode}/copy@cpu"]
        assert s.status == "skipped" and "CUDA" in s.reason and not s.points


@pytest.mark.slow
@needs_torch
def test_torch_tensor_mode_is_a_fresh_host_copy_and_pin_per_call_needs_cuda() -> None:
    """torch.tensor(x) copies the NumPy batch into a fresh tensor on every call, as TensorFlow does
    before its transfer; on the CPU that copy is the whole path, and the series says so."""
    series = by_label(sweep(frameworks=("torch",), modes=("tensor", "pin_per_call", "pin"), ops=("copy", "seed"),
                            batch_sizes=(1, 4), device="cpu"))  # fmt: skip
    for op in ("copy", "seed"):
        s = series[f"torch/tensor/{op}@cpu"]
        assert s.status == "ok" and s.transfer == "host-to-host" and "torch.tensor's host copy" in s.note
        assert [p.status for p in s.points] == ["ok", "ok"], [p.error for p in s.points]
        for mode in ("pin_per_call", "pin"):
            skipped = series[f"torch/{mode}/{op}@cpu"]
            assert skipped.status == "skipped" and "CUDA" in skipped.reason and not skipped.points
    assert not {"tensor", "pin_per_call", "pin"} & set(BACKENDS["torch"].default_modes)


@needs_torch
def test_torch_tensor_mode_that_hands_back_the_source_fails_verification(monkeypatch) -> None:
    from xferbench.measuring.backends.pytorch import TorchTransfer

    import torch

    monkeypatch.setattr(TorchTransfer, "_move", lambda self: torch.from_numpy(self.host))  # no copy at all
    s = in_process("torch", "tensor")
    assert s.status == "failed" and "nothing was copied" in s.reason


@needs_torch
def test_torch_to_cpu_without_copy_fails_verification(monkeypatch) -> None:
    from xferbench.measuring.backends.pytorch import TorchTransfer

    import torch

    # The trap the issue names: .to("cpu") returns the same tensor, so nothing is copied.
    monkeypatch.setattr(TorchTransfer, "_move", lambda self: torch.from_numpy(self.host).to("cpu"))
    s = in_process("torch", "pageable")
    assert s.status == "failed" and "nothing was copied" in s.reason


@needs_torch
def test_torch_copy_that_stops_after_warm_up_fails_verification(monkeypatch) -> None:
    from xferbench.measuring.backends.pytorch import TorchTransfer

    original, kept = TorchTransfer._move, {}

    def stale(self):  # copies once, then keeps returning that tensor, as a recycled block would look
        if "tensor" not in kept:
            kept["tensor"] = original(self)
        return kept["tensor"]

    monkeypatch.setattr(TorchTransfer, "_move", stale)
    s = in_process("torch", "pageable", batch_sizes=(2,))
    assert s.status == "failed" and "differ from the source" in s.reason


@needs_torch
def test_torch_verification_compares_bytes(monkeypatch) -> None:
    from xferbench.measuring.backends.pytorch import TorchTransfer

    original = TorchTransfer._move

    def corrupt(self):  # a copy that delivers the wrong bytes
        moved = original(self)
        moved.reshape(-1)[::7] += 1
        return moved

    monkeypatch.setattr(TorchTransfer, "_move", corrupt)
    s = in_process("torch", "pageable", batch_sizes=(2,))
    assert s.status == "failed" and "differ from the source" in s.reason


@needs_torch
def test_torch_recognises_out_of_memory_errors() -> None:
    import torch

    backend = BACKENDS["torch"]
    assert backend.is_out_of_memory(torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"))
    assert backend.is_out_of_memory(RuntimeError("MPS backend out of memory (MPS allocated: 1 GB)"))
    assert backend.is_out_of_memory(MemoryError())
    assert not backend.is_out_of_memory(RuntimeError("device-side assert triggered"))


def test_progress_hears_of_each_point_before_and_after(fake_backend) -> None:
    fake_backend(raise_at={4: MemoryError()})
    plan = make_plan(SweepConfig(frameworks=("fake",), modes=("a",), batch_sizes=(2, 4, 8), timing=FAST))
    events = []
    run_plan(plan, new_result(plan, {}), save=lambda r: None,
             on_point=lambda s, p: events.append(("done", p.batch_size, p.status)),
             on_start=lambda s, b: events.append(("start", b)))  # fmt: skip
    assert events == [("start", 2), ("done", 2, "ok"), ("start", 4), ("done", 4, "error"), ("done", 8, "skipped")]


def test_out_of_memory_skips_larger_batches_and_the_sweep_goes_on(fake_backend) -> None:
    fake_backend(raise_at={8: MemoryError("cannot allocate")})
    result = sweep(frameworks=("fake", "host"), batch_sizes=(2, 4, 8, 16, 32))
    fake_a = result.series[0]
    assert [p.status for p in fake_a.points] == ["ok", "ok", "error", "skipped", "skipped"]
    assert fake_a.points[2].error.startswith("out of memory")
    assert "batch 8 ran out of memory" in fake_a.points[3].error
    assert fake_a.status == "ok" and fake_a.summary.peak_batch_size in (2, 4)
    assert all(p.status == "ok" for p in result.series[-1].points)  # host, after the fake series


def test_unexpected_error_is_recorded_and_later_points_run(fake_backend) -> None:
    fake_backend(raise_at={4: RuntimeError("driver hiccup\nsecond line")})
    s = sweep(frameworks=("fake",), modes=("a",), batch_sizes=(2, 4, 8)).series[0]
    assert [p.status for p in s.points] == ["ok", "error", "ok"]
    assert s.points[1].error == "RuntimeError: driver hiccup"


def test_interrupt_keeps_measured_points(fake_backend, tmp_path) -> None:
    fake_backend(raise_at={8: KeyboardInterrupt()})
    path = tmp_path / "r.json"
    plan = make_plan(SweepConfig(frameworks=("fake",), modes=("a",), batch_sizes=(2, 4, 8, 16), timing=FAST))
    result = new_result(plan, {})
    with pytest.raises(KeyboardInterrupt):
        run_plan(plan, result, save=lambda r: r.save(path))
    from xferbench import load

    saved = load(path)
    assert saved.status == "interrupted"
    assert [p.batch_size for p in saved.series[0].points] == [2, 4]


def test_the_check_reads_every_byte_and_catches_a_short_gap() -> None:
    from xferbench.measuring.buffers import check_all, make_source
    from xferbench.core.errors import VerificationError

    source = make_source((1000, 1000))  # 1 MB, read back in 64 KiB chunks: the last one short
    reads: list[tuple[int, int]] = []

    def read_from(dest: np.ndarray):
        def read(offset: int, out: np.ndarray) -> None:
            reads.append((offset, out.size))
            out[...] = dest.reshape(-1)[offset : offset + out.size]

        return read

    staging = np.empty(65536, np.uint8)
    check_all(source, read_from(source.copy()), "whole", staging)
    assert sum(size for _, size in reads) == source.size and reads[-1] == (983040, 16960)
    gap = source.copy().reshape(-1)
    gap[500_000 : 500_000 + 4096] = 0  # one page missing in the middle: 4,096 sampled bytes would likely miss it
    with pytest.raises(VerificationError, match=r"4,096 of 1,000,000 bytes differ .* first at byte 500,000"):
        check_all(source, read_from(gap), "gap", staging)
    one = source.copy().reshape(-1)
    one[-1] ^= 0xFF
    with pytest.raises(VerificationError, match="1 of 1,000,000 bytes differ"):
        check_all(source, read_from(one), "last byte")
    odd = make_source((1001,))  # a tail past the last whole 8 bytes is compared too
    tail = odd.copy()
    tail[-1] ^= 0xFF
    check_all(odd, read_from(odd.copy()), "odd")
    with pytest.raises(VerificationError, match="1 of 1,001 bytes differ .* first at byte 1,000"):
        check_all(odd, read_from(tail), "odd tail")


def test_pattern_has_no_zeros_and_does_not_repeat_per_image() -> None:
    from xferbench.measuring.buffers import make_source

    x = make_source((3, 256, 256, 3))
    assert x.min() >= 1
    assert not np.array_equal(x[0], x[1])


def test_series_label_and_point_size() -> None:
    spec = SeriesKey("torch", "pinned", "copy", "cuda:0", (256, 256, 3)).at(171)
    assert spec.series.label() == "torch/pinned/copy@cuda:0"
    assert spec.nbytes == 171 * 196_608 and spec.batch_shape == (171, 256, 256, 3)
    # The host buffer shows wherever it is not the path's own source, so two sources never share a label.
    assert SeriesKey("host", "numpy", "copy", "cpu", (1,), "aligned").label() == "host/numpy/copy@cpu"
    assert SeriesKey("host", "numpy", "copy", "cpu", (1,), "numpy").label() == "host/numpy/copy+numpy@cpu"
    assert SeriesKey("tf", "eager", "copy", "cpu", (1,), "aligned").label() == "tf/eager/copy+aligned@cpu"


def test_aligned_buffers_start_on_64_bytes() -> None:
    from xferbench.measuring.buffers import aligned_empty, make_source

    for shape in [(1,), (3, 5), (2, 256, 256, 3)]:
        a = aligned_empty(shape)
        assert a.shape == shape and a.ctypes.data % 64 == 0
    assert make_source((4, 4), aligned=True).ctypes.data % 64 == 0
    assert make_source((4, 4), offset=16).ctypes.data % 64 == 16


def test_the_numpy_source_is_where_this_platform_puts_a_batch(monkeypatch) -> None:
    """A plain np.empty of the batch's size: glibc's large block sits 16 bytes past a page, and macOS's
    libmalloc serves one from whole pages (simulated here), which is what xferbench calls aligned."""
    from xferbench.measuring.buffers import address_offset, make_source

    assert address_offset(make_source((192, 256, 256, 3))) == address_offset(np.empty(192 * 196608, np.uint8))
    if platform.libc_ver()[0] == "glibc":  # above glibc's largest mmap threshold (32 MiB): mapped, in a fresh process
        probe = "import numpy as np; print(np.empty(192 * 196608, np.uint8).ctypes.data % 64)"
        assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip() == "16"
    real_empty = np.empty

    def libmalloc_empty(shape, dtype=float, **kwargs):  # a large block on its own pages, as on a Mac
        size = math.prod(shape if isinstance(shape, tuple) else (shape,)) * np.dtype(dtype).itemsize
        raw = real_empty(size + 16384, np.uint8)
        start = -raw.ctypes.data % 16384
        return raw[start : start + size].view(dtype).reshape(shape)

    monkeypatch.setattr(np, "empty", libmalloc_empty)
    source = make_source((64, 256, 256, 3))
    assert address_offset(source) == 0 and source.reshape(-1)[:4].tolist() != [0, 0, 0, 0]  # and filled


def test_host_path_records_its_aligned_buffers() -> None:
    series = sweep(frameworks=("host",), batch_sizes=(1,)).series[0]
    assert "64-byte aligned" in series.params["buffers"]


def test_path_availability_without_torch(monkeypatch) -> None:
    import sys

    from xferbench.measuring.backends import path_availability

    for name in ("torch", "jax", "cupy"):
        monkeypatch.setitem(sys.modules, name, None)  # find_spec now reports them as not installed
    rows = path_availability({"tf": ["cpu"], "host": ["cpu"], "sim": ["sim"]})
    assert all("pip install 'xferbench[cupy]'" in r.reason for r in rows if r.framework in ("cuda", "cupy"))
    torch_rows = [r for r in rows if r.framework == "torch"]
    assert len(torch_rows) == 44  # 11 modes (7 copies, 4 DataLoaders) x cpu, cuda, xpu, mps
    assert all("pip install 'xferbench[torch]'" in r.reason for r in torch_rows)
    assert [r for r in rows if r.framework == "host"] == [("host", "numpy", ("copy",), "cpu", None), ("host", "staged", ("copy",), "cpu", None)]


@pytest.mark.slow
@needs_torch
def test_torch_host_buffer_axis() -> None:
    result = sweep(frameworks=("torch",), host_buffers=("numpy", "aligned", "pinned"), batch_sizes=(1,), device="cpu")
    labels = [s.label() for s in result.series]
    assert labels == [
        "torch/pageable/copy@cpu", "torch/pageable/copy+aligned@cpu", "torch/pageable/copy+pinned@cpu",
        "torch/pinned/copy@cpu", "torch/pinned_into/copy@cpu",
    ]  # fmt: skip  (a pinned mode has one source of its own: not repeated per host buffer)
    series = by_label(result)
    assert series["torch/pageable/copy+aligned@cpu"].points[0].host_offset == 0
    assert "choose them with --mode" in series["torch/pageable/copy+pinned@cpu"].reason
    assert series["torch/pinned/copy@cpu"].host_buffer == "pinned"


def test_points_count_the_page_faults_of_fresh_memory(monkeypatch) -> None:
    quiet = sweep(frameworks=("host",), batch_sizes=(1,)).series[0].points[0]
    assert quiet.page_faults_per_call is not None and quiet.page_faults_per_call < 1000  # reused buffers
    pages = 40 * 2**20 // 4096
    original = HostCopy.__call__

    def copy_and_touch_fresh_pages(self) -> None:
        """Fresh pages from the kernel itself on every call, whatever the allocator would keep (glibc maps
        large blocks afresh; macOS's libmalloc caches freed ones up to 128 MiB)."""
        original(self)
        with mmap.mmap(-1, pages * 4096) as fresh:
            touched = np.frombuffer(fresh, np.uint8)
            touched[::4096] = 1
            del touched

    monkeypatch.setattr(HostCopy, "__call__", copy_and_touch_fresh_pages)
    fresh = sweep(frameworks=("host",), batch_sizes=(1,)).series[0].points[0]
    # At least one fault per 2 MiB: transparent huge pages may map that much with one fault.
    assert fresh.page_faults_per_call > quiet.page_faults_per_call + pages / 512
