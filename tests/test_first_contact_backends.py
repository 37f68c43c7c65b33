"""What the GPU paths must get right the first time a GPU runs them, shown without one: planning
imports no framework, torch's streamed hold stays bounded on a simulated GPU whose launch queue
fills, and the host-memory estimate covers the blocks CuPy's pinned pool really reserves."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import pytest

import fake_cupy
from conftest import FAST
from xferbench.measuring.backends import BACKENDS, cuda, cupy, pytorch
from xferbench.measuring.backends.pytorch import ENQUEUE_GUESS_S, HOLD_MAX_S, HOLD_TRIES, TorchBackend, TorchTransfer
from xferbench.core.errors import NotSupportedHere
from xferbench.measuring.measure import measure_series
from xferbench.core.results import Series
from xferbench.core.spec import DIRECTIONS, H2D, HOST_BUFFERS, STREAMED, TIMING_METHODS, SeriesKey
from xferbench.measuring.sweep import _skip_reason
from xferbench.core.timing import STREAM_WARM_COPIES
from xferbench.measuring.worker import STALL_TIMEOUT_S, LocalRunner

SHAPE = (64, 64, 3)  # 12,288 bytes an item
STREAMED_KEY = SeriesKey("torch", "pinned_into", "copy", "cuda:0", SHAPE, method=STREAMED)


# Planning runs in the main process, which must load no framework (a --python worker may be the only
# interpreter that has it), so every planning-side call is made with the framework unimportable.


@pytest.mark.parametrize("framework", ["torch", "cupy", "cuda", "tf", "jax"])
def test_planning_imports_no_framework(monkeypatch: pytest.MonkeyPatch, framework: str) -> None:
    backend = BACKENDS[framework]
    monkeypatch.setitem(sys.modules, str(backend.module), None)  # `import <module>` raises ImportError
    runner = LocalRunner(backend)
    backend.missing()
    for mode in backend.modes:
        backend.sources(mode)
        for device in ("cpu", "cuda:0", "cuda:1", "mps"):
            for op in backend.ops:
                for kind in HOST_BUFFERS:
                    for method in TIMING_METHODS:
                        for direction in DIRECTIONS:
                            key = SeriesKey(framework, mode, op, device, SHAPE, kind, method, direction)
                            _skip_reason(runner, key, ["cpu", "cuda:0"])
                            backend.host_bytes(key.at(8))


def test_torch_streamed_is_plannable_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    assert TorchBackend().streamed_reason(STREAMED_KEY) is None
    assert _skip_reason(LocalRunner(TorchBackend()), STREAMED_KEY, ["cpu", "cuda:0"]) is None


def test_a_torch_without_sleep_skips_its_streamed_series_in_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    cuda_module = SimpleNamespace(get_device_name=lambda device: "Fake GPU")
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=cuda_module, device=lambda name: name))
    with pytest.raises(NotSupportedHere, match=r"torch\.cuda\._sleep"):
        TorchBackend().describe(STREAMED_KEY, {})
    series = Series.of(STREAMED_KEY)
    measure_series(TorchBackend(), STREAMED_KEY, [1, 2], {}, FAST, series)
    assert series.status == "skipped" and "torch.cuda._sleep" in (series.reason or "") and not series.points
    cuda_module._sleep = lambda cycles: None  # type: ignore[attr-defined]
    assert TorchBackend().describe(STREAMED_KEY, {}).device_name == "Fake GPU"


# torch's streamed hold on a simulated GPU: one stream whose operations run in order on a simulated
# clock, and a launch queue that takes `depth` unfinished operations, so queueing one more waits,
# as copy_ does on a real GPU, until the oldest ends: behind a spin kernel, until the spin ends.


class SimGPU:
    def __init__(self, depth: int, launch_s: float = 5e-6, copy_s: float = 20e-6, cycles_per_s: float = 1.5e9) -> None:
        self.depth, self.launch_s, self.copy_s, self.cycles_per_s = depth, launch_s, copy_s, cycles_per_s
        self.now = 0.0
        self.ends: list[float] = []  # when each queued operation ends, in queue order
        self.holds: list[float] = []  # the seconds each torch.cuda._sleep asked for
        self.current: Any = None  # the stream torch.cuda.stream made current

    def perf_counter(self) -> float:
        return self.now

    def launch(self, seconds: float) -> float:
        """Queue an operation on the held stream; the host's clock moves on; returns when it ends."""
        if self.current is None:
            raise AssertionError("queued outside torch.cuda.stream(stream): the held stream would not order it")
        pending = [end for end in self.ends if end > self.now]
        if len(pending) >= self.depth:
            self.now = pending[len(pending) - self.depth]  # the queue is full: wait until a slot frees
        self.now += self.launch_s
        begins = max(self.now, self.ends[-1] if self.ends else 0.0)
        self.ends.append(begins + seconds)
        return begins + seconds


def fake_torch(gpu: SimGPU) -> Any:
    """torch.cuda's stream, event, spin kernel and copy_ as the streamed run uses them, on `gpu`."""

    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            assert enable_timing, "an event without timing has no elapsed_time"
            self.at: float | None = None

        def record(self, stream: Any = None) -> None:
            self.at = gpu.launch(0.0)

        def query(self) -> bool:
            return self.at is None or self.at <= gpu.now  # as CUDA: an unrecorded event has nothing to wait for

        def synchronize(self) -> None:
            gpu.now = max(gpu.now, self.at or 0.0)

        def elapsed_time(self, end: Event) -> float:
            if self.at is None or end.at is None or not (self.query() and end.query()):
                raise RuntimeError("CUDA error: device not ready")  # cudaEventElapsedTime needs both completed
            return (end.at - self.at) * 1e3

    class StreamContext:
        def __init__(self, stream: Any) -> None:
            self.stream = stream

        def __enter__(self) -> None:
            gpu.current = self.stream

        def __exit__(self, *exc: object) -> None:
            gpu.current = None

    def sleep(cycles: int) -> None:
        if not isinstance(cycles, int):
            raise TypeError(f"torch.cuda._sleep(): cycles must be an int, not {type(cycles).__name__}")
        gpu.holds.append(cycles / gpu.cycles_per_s)
        gpu.launch(cycles / gpu.cycles_per_s)

    return SimpleNamespace(cuda=SimpleNamespace(Event=Event, stream=StreamContext, _sleep=sleep))


class Pinned:
    """A tensor whose copy_ queues one copy on the current stream."""

    def __init__(self, gpu: SimGPU) -> None:
        self.gpu = gpu

    def copy_(self, source: Pinned, non_blocking: bool = False) -> Pinned:
        ends = self.gpu.launch(self.gpu.copy_s)
        if not non_blocking:  # a blocking copy_ waits for the copy itself
            self.gpu.now = max(self.gpu.now, ends)
        return self


def streamed_transfer(gpu: SimGPU, monkeypatch: pytest.MonkeyPatch) -> TorchTransfer:
    """A TorchTransfer as __init__ leaves a streamed pinned_into one, over the simulated GPU."""
    monkeypatch.setattr(pytorch, "time", SimpleNamespace(perf_counter=gpu.perf_counter))
    transfer = object.__new__(TorchTransfer)
    transfer.torch, transfer.stream = fake_torch(gpu), object()
    transfer.dest, transfer.source = Pinned(gpu), Pinned(gpu)
    transfer.cycles_per_s, transfer.enqueue_per_copy_s, transfer.hold_scale, transfer.transfers = None, ENQUEUE_GUESS_S, 1, 0
    return transfer


def test_a_full_launch_queue_ends_in_a_bounded_error(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = SimGPU(depth=64)  # copy_ blocks on the held stream long before 514 copies are queued
    transfer = streamed_transfer(gpu, monkeypatch)
    with pytest.raises(RuntimeError, match="launch queue may be full"):
        transfer.streamed(512)
    assert max(gpu.holds) <= HOLD_MAX_S * (1 + 1e-9)
    assert len(gpu.holds) <= 2 + HOLD_TRIES  # the rate's two spins, then the tries
    assert gpu.now < HOLD_TRIES * (HOLD_MAX_S + 1) < STALL_TIMEOUT_S / 10


def test_a_deep_queue_is_held_and_timed_back_to_back(monkeypatch: pytest.MonkeyPatch) -> None:
    gpu = SimGPU(depth=10_000)
    transfer = streamed_transfer(gpu, monkeypatch)
    assert transfer.streamed(512) == pytest.approx(512 * gpu.copy_s, rel=1e-9)
    assert transfer.transfers == 512 + STREAM_WARM_COPIES and len(gpu.holds) == 3  # the rate's two spins, one try
    assert transfer.enqueue_per_copy_s == pytest.approx(gpu.launch_s * (514 + 2) / 514)  # the copies and two events
    assert transfer.cycles_per_s == pytest.approx(gpu.cycles_per_s)


def test_a_hold_too_short_is_lengthened_by_the_factor_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Queueing slower than the first guess: the failed try's queueing is no estimate, the hold grows 4-fold."""
    gpu = SimGPU(depth=10_000, launch_s=200e-6)
    transfer = streamed_transfer(gpu, monkeypatch)
    assert transfer.streamed(512) == pytest.approx(512 * gpu.copy_s, rel=1e-9)
    first, second = gpu.holds[2:]
    assert second == pytest.approx(4 * first, rel=1e-6) and transfer.transfers == 2 * (512 + STREAM_WARM_COPIES)
    assert transfer.enqueue_per_copy_s == pytest.approx(200e-6 * 516 / 514)  # from the run that held


# CuPy's pinned pool rounds each block up to a power of two: the estimate checked before a point is
# allocated must cover what the pool really reserves. The read-back chunk is made small here, so
# batches just above a power of two fall on both sides of it.

CHUNK = 65536


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> fake_cupy.PinnedPool:
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    monkeypatch.setattr(fake_cupy, "POOL", fake_cupy.PinnedPool())
    for module in (cuda, cupy):
        monkeypatch.setattr(module, "VERIFY_CHUNK_BYTES", CHUNK)
    return fake_cupy.POOL


@pytest.mark.parametrize("batch", [1, 3, 5, 6, 11, 16, 21, 43])  # 12,288 to 528,384 bytes; 11 is just above 2**17
@pytest.mark.parametrize("framework, mode, direction", [("cupy", "asarray", H2D), ("cupy", "asarray", "d2h"), ("cuda", "raw_pinned", H2D)])
def test_the_host_estimate_covers_cupys_pinned_pool(pool: fake_cupy.PinnedPool, batch: int, framework: str, mode: str,
                                                    direction: str) -> None:  # fmt: skip
    spec = SeriesKey(framework, mode, "copy", "cuda:0", SHAPE, direction=direction).at(batch)
    transfer = BACKENDS[framework].prepare(spec, {})
    transfer()
    transfer()
    transfer.verify()
    host = spec.nbytes * (3 if direction == "d2h" else 1)  # d2h: the expected bytes, and .get()'s result twice
    assert pool.handed_out and BACKENDS[framework].host_bytes(spec) >= host + pool.peak
    transfer.close()
    assert pool.reserved == 0  # the point gave every block back


def test_pooled_pinned_bytes_follows_cupys_rounding() -> None:
    sizes = {1: 512, 512: 512, 513: 1024, 135_168: 262_144, 33_619_968: 2**26, 2**26: 2**26, 2**26 + 1: 2**27}
    assert {n: cuda.pooled_pinned_bytes(n) for n in sizes} == sizes
    assert cuda.pooled_pinned_bytes(0) == 0
