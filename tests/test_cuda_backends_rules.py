"""The raw CUDA reference (backends/cuda.py) and the cupy path (backends/cupy.py) rule by rule, against the CuPy
stand-in (fake_cupy) with every call into it written down in order: which runtime call, with which pointers, byte
counts, copy kinds (cudaMemcpyHostToDevice is 1, DeviceToHost 2), streams and events; the stream hold of a streamed
run and its timeout; the bytes each verification sends and the chunks it reads back; each message word for word;
each mode, host buffer, direction and timing method; the host estimates, the descriptions and the declared facts."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any
from unittest.mock import ANY

import numpy as np
import pytest

import fake_cupy
from xferbench.core.errors import VerificationError
from xferbench.core.spec import BIDIR, D2H, H2D, PER_CALL, STREAMED, SeriesKey
from xferbench.measuring import buffers
from xferbench.measuring.backends import cuda
from xferbench.measuring.backends import cupy as cupy_path
from xferbench.measuring.backends.base import SeriesInfo
from xferbench.measuring.backends.cuda import CudaBackend, RawCopy
from xferbench.measuring.backends.cupy import AsArray, CupyBackend, Get

SHAPE = (64, 64, 3)  # 12,288 bytes an item
BATCH = 4
N = BATCH * 64 * 64 * 3  # 49,152 bytes a batch
BATCH_SHAPE = (BATCH, *SHAPE)
H2D_KIND, D2H_KIND = 1, 2  # cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost
ELAPSED_MS = 125.0  # the stand-in's event time: 125 ms times (the start event's number + 1), so each pair has its own
CLOSING = [("Device",), ("device.synchronize", ANY), ("alloc_pinned_memory", 0), ("free_all_blocks",)]  # free_pinned_pool
RAW_CALL = {H2D: "cudaMemcpyAsync(HostToDevice) on a non-blocking stream into a preallocated buffer",
            D2H: "cudaMemcpyAsync(DeviceToHost) on a non-blocking stream from a device buffer into the host buffer",
            BIDIR: "cudaMemcpyAsync HostToDevice and DeviceToHost issued together on two non-blocking streams, each between"
                   " buffers of its own"}  # fmt: skip
PER_COPY_EVENTS = "cupy.cuda.Event pair on the copy's stream"
HELD = "a host function (cudaLaunchHostFunc) waits on the stream until every copy is queued"
UNHELD = "none: the driver may wait on the stream while it stages a pageable copy"
STAGED = "from pageable memory the driver stages the copy through pinned buffers of its own"
DIFFER = "bytes differ from the source (the first at byte 0); the transfer did not deliver the data"
INSTALL = ("needs CuPy, which is not installed: pip install 'xferbench[cupy]' (CUDA 12, NVIDIA driver 525 or newer) or"
           " 'xferbench[cupy-cuda13]' (CUDA 13, driver 580 or newer)")  # fmt: skip


class Calls(list):  # type: ignore[type-arg]
    """Every call the paths made into the stand-in, in order, each a tuple of plain values and stand-in objects."""

    def since(self, mark: int) -> list[tuple[Any, ...]]:
        return self[mark:]


@pytest.fixture(autouse=True)
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """fake_cupy installed as cupy, with each call the two paths make written down (and then made)."""
    log = Calls()
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    for held in (fake_cupy.HOST_ALLOCATIONS, fake_cupy.HOST_FLAGS, fake_cupy.REGISTERED):
        held.clear()
    pool = fake_cupy.PinnedPool()
    monkeypatch.setattr(fake_cupy, "POOL", pool)
    real_free_all = pool.free_all_blocks
    monkeypatch.setattr(pool, "free_all_blocks", lambda: (log.append(("free_all_blocks",)), real_free_all())[1])

    def logged(name: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            log.append((name, *args) + ((kwargs,) if kwargs else ()))
            return real(*args, **kwargs)

        return call

    runtime = fake_cupy.runtime
    for name in ("memcpyAsync", "hostAlloc", "freeHost", "hostRegister", "hostUnregister"):
        monkeypatch.setattr(runtime, name, logged(name, getattr(runtime, name)))
    monkeypatch.setattr(fake_cupy.cuda, "alloc_pinned_memory", logged("alloc_pinned_memory", fake_cupy.cuda.alloc_pinned_memory))
    events: list[Any] = []

    class Stream(fake_cupy.Stream):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.errors: list[BaseException] = []
            super().__init__(*args, **kwargs)
            log.append(("Stream", self))

        def _run(self) -> None:  # a failing host function is kept, not the end of the stream's thread
            while True:
                op = self.ops.get()
                try:
                    op()
                except BaseException as error:  # noqa: BLE001
                    self.errors.append(error)
                finally:
                    self.ops.task_done()

        def launch_host_func(self, callback: Any, arg: Any) -> None:
            log.append(("launch_host_func", self, arg))
            super().launch_host_func(callback, arg)

        def synchronize(self) -> None:
            log.append(("stream.synchronize", self))
            super().synchronize()

        def __enter__(self) -> Any:
            log.append(("enter", self))
            return super().__enter__()

        def __exit__(self, *exc: object) -> None:
            log.append(("exit", self))

    class Event(fake_cupy.Event):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.number = len(events)
            events.append(self)
            log.append(("Event", self))

        def record(self, stream: Any) -> None:
            log.append(("record", self, stream))
            super().record(stream)

        def synchronize(self) -> None:
            log.append(("synchronize", self))
            super().synchronize()

    class Device(fake_cupy.Device):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            log.append(("Device", *args))

        def use(self) -> None:
            log.append(("use", self))

        def synchronize(self) -> None:
            log.append(("device.synchronize", self))
            for stream in list(fake_cupy.Stream.streams.values()):  # every stream's queue, as the device waits for all
                stream.ops.join()

    real_elapsed = fake_cupy.cuda.get_elapsed_time

    def elapsed(start: Any, end: Any) -> float:
        log.append(("elapsed", start, end))
        real_elapsed(start, end)  # both recorded and complete, as cudaEventElapsedTime insists
        return ELAPSED_MS * (start.number + 1)

    for name, value in (("Stream", Stream), ("Event", Event), ("Device", Device), ("get_elapsed_time", elapsed)):
        monkeypatch.setattr(fake_cupy.cuda, name, value)
    real_empty, real_asarray = fake_cupy.empty, fake_cupy.asarray

    def empty(shape: Any, dtype: Any = float) -> Any:
        log.append(("empty", shape, dtype))
        return real_empty(shape, dtype)

    def asarray(host: np.ndarray) -> Any:
        log.append(("asarray", host.ctypes.data, host.nbytes))
        return real_asarray(host)

    monkeypatch.setattr(fake_cupy, "empty", empty)
    monkeypatch.setattr(fake_cupy, "asarray", asarray)
    array = fake_cupy.ndarray
    real_get, real_fill, real_astype = array.get, array.fill, array.astype

    def get(self: Any, stream: Any = None, out: np.ndarray | None = None) -> np.ndarray:
        log.append(("get", self.data.ptr, self.array.size, stream, out is not None))
        return real_get(self, stream=stream, out=out)

    monkeypatch.setattr(array, "get", get)
    monkeypatch.setattr(array, "fill", lambda self, value: (log.append(("fill", self.data.ptr, value)), real_fill(self, value))[1])
    monkeypatch.setattr(array, "astype", lambda self, dtype: (log.append(("astype", dtype)), real_astype(self, dtype))[1])
    offsets = iter([16, 32, 48, 8, 24, 40] * 4)  # where each unaligned source starts past a 64-byte boundary

    def make_source(shape: tuple[int, ...], aligned: bool = False) -> np.ndarray:
        log.append(("make_source", shape, aligned))
        return buffers.make_source(shape, aligned=aligned, offset=None if aligned else next(offsets))

    def fill_pattern(buffer: np.ndarray, variant: int = 0) -> None:
        log.append(("fill_pattern", buffer.ctypes.data, buffer.size, variant))
        buffers.fill_pattern(buffer, variant)

    gates: list[Gate] = []

    class Gate:
        """threading.Event as streamed() uses it: the timeout it is given is kept, and it gives up after 2 s at most."""

        def __init__(self) -> None:
            self.event, self.timeouts = threading.Event(), []
            gates.append(self)

        def wait(self, timeout: float | None = None) -> bool:
            self.timeouts.append(timeout)
            return self.event.wait(2.0 if timeout is None else min(timeout, 2.0))

        def set(self) -> None:
            log.append(("gate.set",))
            self.event.set()

    for module in (cuda, cupy_path):
        monkeypatch.setattr(module, "make_source", make_source)
        monkeypatch.setattr(module, "fill_pattern", fill_pattern)
    monkeypatch.setattr(cuda, "threading", SimpleNamespace(Event=Gate))
    log.gates, log.events = gates, events  # type: ignore[attr-defined]
    return log


def raw(mode: str = "raw_pinned", direction: str = H2D, method: str = PER_CALL, host_buffer: str = "", device: str = "cuda:0",
        batch: int = BATCH) -> RawCopy:  # fmt: skip
    key = SeriesKey("cuda", mode, "copy", device, SHAPE, host_buffer, method, direction)
    transfer = CudaBackend().prepare(key.at(batch), {})
    assert isinstance(transfer, RawCopy)
    return transfer


def pattern(variant: int, shape: tuple[int, ...] = BATCH_SHAPE) -> np.ndarray:
    """The bytes fill_pattern writes for `variant`, in a fresh array."""
    buffer = np.empty(shape, np.uint8)
    buffers.fill_pattern(buffer, variant)
    return buffer


def ptr(array: np.ndarray) -> int:
    return int(array.ctypes.data)


def clock(*readings: float) -> SimpleNamespace:
    """time as the module sees it: perf_counter gives these readings, one a call, and no more."""
    values: Iterator[float] = iter(readings)
    return SimpleNamespace(perf_counter=lambda: next(values))


def synchronous() -> SimpleNamespace:
    """A stream queue that runs each operation as it is queued: nothing can hold it."""
    return SimpleNamespace(put=lambda op: op(), join=lambda: None)


def lane_calls(lane: Any, kind: int) -> list[tuple[Any, ...]]:
    """One timed copy of a lane, as the stand-in sees it: start event, the copy, end event."""
    return [("record", lane.start, lane.stream), copy_call(lane, kind), ("record", lane.end, lane.stream)]


def copy_call(lane: Any, kind: int) -> tuple[Any, ...]:
    if kind == H2D_KIND:
        return ("memcpyAsync", lane.gpu.data.ptr, ptr(lane.host), N, H2D_KIND, lane.stream.ptr)
    return ("memcpyAsync", ptr(lane.host), lane.gpu.data.ptr, N, D2H_KIND, lane.stream.ptr)


def reads(device_ptr: int, total: int, chunk: int) -> list[tuple[Any, ...]]:
    """The verification's read-back: one .get(out=...) per chunk, from each chunk's own offset."""
    return [("get", device_ptr + at, min(chunk, total - at), None, True) for at in range(0, total, chunk)]


# the module's helpers


def test_gpu_count_is_the_runtimes_count_and_zero_only_when_the_runtime_says_there_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """getDeviceCount as an int; its CUDARuntimeError means no GPU; any other error is not swallowed."""
    monkeypatch.setattr(fake_cupy.runtime, "getDeviceCount", lambda: 3)
    assert cuda.gpu_count() == 3
    assert CudaBackend().devices() == ["cuda:0", "cuda:1", "cuda:2"] == CupyBackend().devices()

    def no_driver() -> int:
        raise fake_cupy.CUDARuntimeError(35)  # cudaErrorInsufficientDriver

    monkeypatch.setattr(fake_cupy.runtime, "getDeviceCount", no_driver)
    assert cuda.gpu_count() == 0 and CudaBackend().devices() == [] == CupyBackend().devices()

    def broken() -> int:
        raise ValueError("not a CUDA error")

    monkeypatch.setattr(fake_cupy.runtime, "getDeviceCount", broken)
    with pytest.raises(ValueError, match="not a CUDA error"):
        cuda.gpu_count()


def test_a_device_index_is_the_number_after_the_colon() -> None:
    """cuda:N names device N."""
    assert [cuda.device_index(name) for name in ("cuda:0", "cuda:1", "cuda:12")] == [0, 1, 12]


def test_a_uuid_is_written_as_nvml_writes_it_from_sixteen_bytes_only() -> None:
    """CUDA's 16 raw bytes become GPU-8-4-4-4-12 hex; anything else is no UUID."""
    assert cuda._uuid(bytes(range(1, 17))) == "GPU-01020304-0506-0708-090a-0b0c0d0e0f10"
    assert cuda._uuid(bytearray(range(0xF0, 0x100))) == "GPU-f0f1f2f3-f4f5-f6f7-f8f9-fafbfcfdfeff"
    assert [cuda._uuid(raw) for raw in (bytes(15), bytes(17), b"", "0123456789abcdef", None, list(range(16)))] == [None] * 6


def test_each_cuda_device_is_described_by_its_properties_and_bus_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """Names decoded from bytes, taken as text, or 'CUDA GPU' when missing; memory, capability, UUID and bus id per index."""
    asked: list[tuple[str, int]] = []
    props = [{"name": b"First GPU", "totalGlobalMem": 2**30, "major": 9, "minor": 0, "uuid": bytes(range(1, 17))},
             {"name": "Second GPU", "totalGlobalMem": 5, "major": 8, "minor": 6, "uuid": b"cut short"},
             {"totalGlobalMem": 7, "major": 7, "minor": 5}]  # fmt: skip
    monkeypatch.setattr(fake_cupy.runtime, "getDeviceCount", lambda: 3)
    monkeypatch.setattr(fake_cupy.runtime, "getDeviceProperties", lambda index: (asked.append(("props", index)), props[index])[1])
    monkeypatch.setattr(fake_cupy.runtime, "deviceGetPCIBusId", lambda index: (asked.append(("bus", index)), f"0000:0{index + 1}:00.0")[1])
    assert cuda.cuda_devices() == [
        {"id": "cuda:0", "kind": "cuda", "name": "First GPU", "memory_bytes": 2**30, "capability": "9.0",
         "uuid": "GPU-01020304-0506-0708-090a-0b0c0d0e0f10", "pci_bus_id": "0000:01:00.0"},
        {"id": "cuda:1", "kind": "cuda", "name": "Second GPU", "memory_bytes": 5, "capability": "8.6", "uuid": None,
         "pci_bus_id": "0000:02:00.0"},
        {"id": "cuda:2", "kind": "cuda", "name": "CUDA GPU", "memory_bytes": 7, "capability": "7.5", "uuid": None,
         "pci_bus_id": "0000:03:00.0"},
    ]  # fmt: skip
    assert asked == [("props", 0), ("bus", 0), ("props", 1), ("bus", 1), ("props", 2), ("bus", 2)]


def test_a_bus_id_an_older_cupy_cannot_give_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without deviceGetPCIBusId (an AttributeError) the bus id is None; a returned id is made text."""
    monkeypatch.setattr(fake_cupy.runtime, "deviceGetPCIBusId", lambda index: "0000:41:00.0")
    assert cuda._pci_bus_id(fake_cupy, 0) == "0000:41:00.0"
    monkeypatch.delattr(fake_cupy.runtime, "deviceGetPCIBusId")
    assert cuda._pci_bus_id(fake_cupy, 0) is None
    assert cuda.cuda_devices()[0]["pci_bus_id"] is None


def test_nvrtcs_version_is_its_numbers_joined_or_the_first_line_of_why_it_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    """(12, 4) reads 12.4; an error gives its first stripped line, or its type where it says nothing."""
    nvrtc = SimpleNamespace(getVersion=lambda: (12, 4))
    assert cuda.nvrtc_version(SimpleNamespace(cuda=SimpleNamespace(nvrtc=nvrtc))) == "12.4"

    def failing(error: BaseException) -> Any:
        def version() -> tuple[int, int]:
            raise error

        return SimpleNamespace(cuda=SimpleNamespace(nvrtc=SimpleNamespace(getVersion=version)))

    said = failing(OSError("\n  libnvrtc.so.12: cannot open\nsecond line  "))
    assert cuda.nvrtc_version(said) == "unavailable: libnvrtc.so.12: cannot open"
    assert cuda.nvrtc_version(failing(OSError())) == "unavailable: OSError"
    assert cuda.nvrtc_version(failing(RuntimeError(" \n "))) == "unavailable: RuntimeError"


def test_the_environment_records_cupys_version_the_runtime_nvrtc_and_each_device() -> None:
    """The stand-in's own facts, under their keys, the same from either backend."""
    expected = {"version": "0.0-fake", "cuda_runtime": 13000, "nvrtc": "unavailable: libnvrtc.so.13: cannot open shared object file",
                "devices": [{"id": "cuda:0", "kind": "cuda", "name": "Fake GPU", "memory_bytes": 2**30, "capability": "9.0",
                             "uuid": "GPU-01020304-0506-0708-090a-0b0c0d0e0f10", "pci_bus_id": "0000:01:00.0"}]}  # fmt: skip
    assert cuda.cuda_environment() == expected == CudaBackend().environment() == CupyBackend().environment()


def test_a_missing_cupy_names_both_builds_and_then_the_missing_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without CuPy, the message names xferbench[cupy] and xferbench[cupy-cuda13], then why no GPU is here, if one is not."""
    looked: list[str] = []
    found: dict[str, Any] = {"cupy": None}
    find_spec = lambda name: (looked.append(name), found[name])[1]  # noqa: E731
    monkeypatch.setattr(cuda, "importlib", SimpleNamespace(util=SimpleNamespace(find_spec=find_spec)))
    monkeypatch.setattr(cuda, "no_nvidia_gpu", lambda: None)
    assert cuda.cupy_missing("The thing") == f"The thing {INSTALL}"
    assert CudaBackend().missing() == f"The raw CUDA reference {INSTALL}"
    assert CupyBackend().missing() == f"The cupy path {INSTALL}"
    monkeypatch.setattr(cuda, "no_nvidia_gpu", lambda: "none is here")
    assert cuda.cupy_missing("The thing") == f"The thing {INSTALL}; it also needs an NVIDIA GPU, and none is here"
    found["cupy"] = object()
    assert cuda.cupy_missing("The thing") is None and CudaBackend().missing() is None and CupyBackend().missing() is None
    assert set(looked) == {"cupy"}


@pytest.mark.parametrize("platform, driver, said", [
    ("darwin", False, "CUDA does not run on macOS (on Apple silicon, use --device mps)"),
    ("linux", False, "this machine shows none (no /dev/nvidiactl: no NVIDIA driver is loaded)"),
    ("linux", True, None),
    ("win32", False, None),
    ("freebsd14", False, None),
])  # fmt: skip
def test_no_nvidia_gpu_is_sure_only_on_macos_and_on_linux_without_the_driver(monkeypatch: pytest.MonkeyPatch, platform: str,
                                                                             driver: bool, said: str | None) -> None:  # fmt: skip
    """macOS never has one; Linux has none without /dev/nvidiactl; elsewhere nothing is sure."""
    paths: list[str] = []
    monkeypatch.setattr(cuda, "sys", SimpleNamespace(platform=platform))
    monkeypatch.setattr(cuda, "os", SimpleNamespace(path=SimpleNamespace(exists=lambda path: (paths.append(path), driver)[1])))
    assert cuda.no_nvidia_gpu() == said
    assert set(paths) <= {"/dev/nvidiactl"} and (platform != "linux" or paths == ["/dev/nvidiactl"])


def test_a_missing_device_is_explained_for_the_host_for_a_wrong_gpu_and_for_no_gpu() -> None:
    """cpu and mps have no CuPy path; a wrong cuda:N lists the GPUs present; no GPU at all says so; others are generic."""
    assert cuda.cuda_absent_reason("cpu", "Path", ["cpu"]) == "Path needs a CUDA GPU (cuda:N); it has no cpu path"
    assert cuda.cuda_absent_reason("mps", "Path", ["cpu", "mps"]) == "Path needs a CUDA GPU (cuda:N); it has no mps path"
    assert cuda.cuda_absent_reason("cuda:3", "Path", ["cpu", "cuda:0", "cuda:1"]) == "CuPy sees no cuda:3; it sees cuda:0, cuda:1"
    none = "CuPy sees no CUDA GPU: there is none, or no NVIDIA driver that its CUDA runtime can use"
    assert cuda.cuda_absent_reason("cuda:0", "Path", ["cpu", "mps"]) == none == cuda.cuda_absent_reason("cuda:0", "Path", [])
    assert cuda.cuda_absent_reason("xla:0", "Path", ["cpu", "cuda:0"]) is None
    assert CudaBackend().absent_reason("cpu", ["cpu"]) == "the raw CUDA reference needs a CUDA GPU (cuda:N); it has no cpu path"
    assert CupyBackend().absent_reason("mps", ["cpu"]) == "CuPy needs a CUDA GPU (cuda:N); it has no mps path"
    wrong_gpu = "CuPy sees no cuda:2; it sees cuda:0"
    assert CudaBackend().absent_reason("cuda:2", ["cuda:0"]) == wrong_gpu == CupyBackend().absent_reason("cuda:2", ["cuda:0"])
    assert CudaBackend().absent_reason("xla:0", ["cpu"]) == "cuda sees no xla:0 device here (it sees: cpu)"
    assert CupyBackend().absent_reason("xla:0", []) == "cupy sees no xla:0 device here (it sees: none)"


def test_freeing_the_pinned_pool_waits_releases_the_watched_block_then_empties_the_pool(calls: Calls) -> None:
    """Device().synchronize(), a zero-byte pinned allocation, then free_all_blocks on the default pool."""
    cuda.free_pinned_pool(fake_cupy)
    assert calls == CLOSING and calls[1][1].id == 0 and fake_cupy.POOL.emptied == 1


def test_a_pool_that_cannot_be_emptied_is_left_as_it_is_but_an_interrupt_goes_through(monkeypatch: pytest.MonkeyPatch,
                                                                                      calls: Calls) -> None:  # fmt: skip
    """Any error stops the clean-up quietly (it costs memory, not correctness); KeyboardInterrupt is no error to swallow."""
    failure: list[BaseException] = [RuntimeError("device lost")]

    class Lost:
        def synchronize(self) -> None:
            calls.append(("lost.synchronize",))
            raise failure[0]

    monkeypatch.setattr(fake_cupy.cuda, "Device", Lost)
    cuda.free_pinned_pool(fake_cupy)
    failure[0] = AttributeError("no Device in this CuPy")
    cuda.free_pinned_pool(fake_cupy)
    assert calls == [("lost.synchronize",)] * 2 and fake_cupy.POOL.emptied == 0
    failure[0] = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        cuda.free_pinned_pool(fake_cupy)


def test_the_pinned_pool_reserves_multiples_of_512_rounded_up_to_a_power_of_two() -> None:
    """CuPy's PinnedMemoryPool rounding; nothing for no bytes."""
    sizes = {-512: 0, -1: 0, 0: 0, 1: 512, 511: 512, 512: 512, 513: 1024, 1023: 1024, 1024: 1024, 1025: 2048, 5000: 8192,
             49_152: 65_536, 65_536: 65_536, 65_537: 131_072}  # fmt: skip
    assert {n: cuda.pooled_pinned_bytes(n) for n in sizes} == sizes


def test_the_read_back_staging_is_one_pinned_chunk_at_most(monkeypatch: pytest.MonkeyPatch, calls: Calls) -> None:
    """min(batch, VERIFY_CHUNK_BYTES) bytes of uint8 from CuPy's pinned allocator."""
    monkeypatch.setattr(cuda, "VERIFY_CHUNK_BYTES", 1000)
    staged = [cuda.pinned_staging(fake_cupy, n) for n in (999, 1000, 1001)]
    assert [(s.dtype, s.size) for s in staged] == [(np.dtype(np.uint8), 999), (np.dtype(np.uint8), 1000), (np.dtype(np.uint8), 1000)]
    assert calls == [("alloc_pinned_memory", 999), ("alloc_pinned_memory", 1000), ("alloc_pinned_memory", 1000)]


def test_a_read_back_copies_the_flat_slice_at_its_offset_into_the_given_buffer(calls: Calls) -> None:
    """read(offset, out) fills out with the device array's bytes from offset on, by .get(out=out)."""
    device = fake_cupy.ndarray(np.arange(24, dtype=np.uint8).reshape(2, 3, 4))
    out = np.zeros(7, np.uint8)
    cuda.read_back(fake_cupy, device)(5, out)
    assert out.tolist() == list(range(5, 12)) and calls == [("get", device.data.ptr + 5, 7, None, True)]


def test_out_of_memory_is_a_memory_error_or_cuda_status_2_only() -> None:
    """MemoryError, CuPy's OutOfMemoryError, or a CUDARuntimeError whose status is cudaErrorMemoryAllocation (2)."""
    error = fake_cupy.CUDARuntimeError(2)
    no_status = fake_cupy.CUDARuntimeError(2)
    del no_status.status
    imitation = RuntimeError("cudaError 2")
    imitation.status = 2  # type: ignore[attr-defined]
    cases = {MemoryError(): True, fake_cupy.OutOfMemoryError("1 GiB"): True, error: True, fake_cupy.CUDARuntimeError(1): False,
             fake_cupy.CUDARuntimeError(3): False, no_status: False, imitation: False, ValueError("2"): False}  # fmt: skip
    assert {e: cuda.is_cuda_out_of_memory(fake_cupy, e) for e in cases} == cases
    assert {e: CudaBackend().is_out_of_memory(e) for e in cases} == cases == {e: CupyBackend().is_out_of_memory(e) for e in cases}


# the raw copy: allocation


@pytest.mark.parametrize("mode, flags", [("raw_pinned", 0), ("raw_pinned_wc", 4)])
def test_a_pinned_mode_allocates_with_cudahostalloc_and_its_flags(calls: Calls, mode: str, flags: int) -> None:
    """cudaHostAlloc(nbytes, 0 or cudaHostAllocWriteCombined) viewed as the batch, filled, then the device buffer, stream and events."""
    copy = raw(mode)
    (lane,) = copy.lanes
    assert calls == [("Device", 0), ("use", copy.device), ("hostAlloc", N, flags), ("fill_pattern", copy.pinned_ptr, N, 0),
                     ("empty", BATCH_SHAPE, np.uint8), ("Stream", lane.stream), ("Event", lane.start), ("Event", lane.end)]  # fmt: skip
    assert ptr(copy.host) == copy.pinned_ptr == lane.pinned_ptr and fake_cupy.HOST_FLAGS[copy.pinned_ptr] == flags
    assert copy.host.shape == BATCH_SHAPE and np.array_equal(copy.host, pattern(0))
    assert copy.dest is lane.gpu and copy.dest.array.dtype == np.uint8 and copy.dest.shape == BATCH_SHAPE and copy.stream is lane.stream
    assert (lane.stream.non_blocking, lane.stream.null, lane.direction, lane.nbytes) == (True, False, H2D, N)
    assert (copy.label, copy.nbytes, copy.method, copy.transfers) == (f"cuda/{mode}/copy@cuda:0", N, PER_CALL, 0)
    assert (copy.pin_s, copy.host_offset, copy.expected, copy.bidir, copy.hold) == (None, None, None, False, True)
    assert copy.host_span() == (copy.pinned_ptr, N) and lane.registered_ptr == 0 and not fake_cupy.REGISTERED


@pytest.mark.parametrize("host_buffer, aligned, offset", [("numpy", False, 16), ("aligned", True, 0)])
def test_a_pageable_source_is_a_numpy_array_placed_as_its_host_buffer_says(calls: Calls, host_buffer: str, aligned: bool,
                                                                           offset: int) -> None:  # fmt: skip
    """raw_pageable takes make_source's array, aligned only for --host-buffer aligned; its offset is recorded; nothing is pinned."""
    copy = raw("raw_pageable", host_buffer=host_buffer)
    (lane,) = copy.lanes
    assert calls == [("Device", 0), ("use", copy.device), ("make_source", BATCH_SHAPE, aligned), ("empty", BATCH_SHAPE, np.uint8),
                     ("Stream", lane.stream), ("Event", lane.start), ("Event", lane.end)]  # fmt: skip
    assert copy.host_offset == lane.host_offset == offset == ptr(copy.host) % 64
    assert (copy.pinned_ptr, lane.registered_ptr, copy.pin_s, copy.hold) == (0, 0, None, False)
    assert copy.host_span() == (ptr(copy.host), N) and np.array_equal(copy.host, pattern(0))


def test_a_registered_source_is_pinned_in_place_timed_and_unregistered_once(monkeypatch: pytest.MonkeyPatch, calls: Calls) -> None:
    """cudaHostRegister(array, nbytes, 0) between the array and the device buffer; its seconds are pin_s; close unregisters."""
    monkeypatch.setattr(cuda, "time", clock(10.0, 10.5))
    copy = raw("raw_registered")
    (lane,) = copy.lanes
    host = ptr(copy.host)
    assert calls == [("Device", 0), ("use", copy.device), ("make_source", BATCH_SHAPE, False), ("hostRegister", host, N, 0),
                     ("empty", BATCH_SHAPE, np.uint8), ("Stream", lane.stream), ("Event", lane.start), ("Event", lane.end)]  # fmt: skip
    assert (lane.pin_s, copy.pin_s, lane.registered_ptr, copy.host_offset, copy.hold) == (0.5, 0.5, host, 16, True)
    assert fake_cupy.REGISTERED == {host: N} and copy.pinned_ptr == 0
    mark = len(calls)
    copy.close()
    assert calls.since(mark) == [("hostUnregister", host), *CLOSING]
    assert (lane.registered_ptr, lane.gpu, lane.host, lane.stream, copy.expected) == (0, None, None, None, None)
    lane.close()
    assert calls.since(mark) == [("hostUnregister", host), *CLOSING] and not fake_cupy.REGISTERED


def test_a_bidir_copy_has_an_h2d_lane_and_a_d2h_lane_whose_device_buffer_starts_with_the_pattern(monkeypatch: pytest.MonkeyPatch,
                                                                                                 calls: Calls) -> None:  # fmt: skip
    """Two lanes in that order, each its own buffers and stream; pin_s sums both registrations; the first lane's offset is the point's."""
    monkeypatch.setattr(cuda, "time", clock(10.0, 10.5, 20.0, 20.25))
    copy = raw("raw_registered", BIDIR)
    up, down = copy.lanes
    assert [up.direction, down.direction] == [H2D, D2H] and copy.bidir and up.stream is not down.stream
    assert (up.pin_s, down.pin_s, copy.pin_s) == (0.5, 0.25, 0.75)
    assert (up.host_offset, down.host_offset, ptr(copy.expected) % 64, copy.host_offset) == (16, 32, 48, 16)
    assert calls[-3:] == [("make_source", BATCH_SHAPE, False),
                          ("memcpyAsync", down.gpu.data.ptr, ptr(copy.expected), N, H2D_KIND, down.stream.ptr),
                          ("stream.synchronize", down.stream)]  # fmt: skip
    assert np.array_equal(down.gpu.array, pattern(0)) and np.array_equal(copy.expected, pattern(0)) and not down.host.any()
    assert copy.host is up.host and copy.dest is up.gpu and copy.stream is up.stream


def test_a_d2h_copy_fills_its_device_buffer_before_the_first_call(calls: Calls) -> None:
    """The expected bytes go to the device (HostToDevice on the lane's stream), the host buffer is zeroed, the stream waits."""
    copy = raw("raw_pinned", D2H)
    (lane,) = copy.lanes
    assert lane.direction == D2H and copy.expected is not None and copy.label == "cuda/raw_pinned/copy/d2h@cuda:0"
    assert calls[-3:] == [("make_source", BATCH_SHAPE, False),
                          ("memcpyAsync", lane.gpu.data.ptr, ptr(copy.expected), N, H2D_KIND, lane.stream.ptr),
                          ("stream.synchronize", lane.stream)]  # fmt: skip
    assert np.array_equal(lane.gpu.array, pattern(0)) and not copy.host.any()


def test_an_h2d_copy_expects_nothing_and_poisons_nothing_before_its_first_call(calls: Calls) -> None:
    """No expected bytes, no copy queued and no wait while an h2d lane is prepared."""
    copy = raw("raw_pageable")
    assert copy.expected is None and [c[0] for c in calls].count("make_source") == 1
    assert not [c for c in calls if c[0] in ("memcpyAsync", "stream.synchronize")]


# the raw copy: failures while allocating


def test_a_lane_interrupted_after_its_pinned_allocation_frees_it(monkeypatch: pytest.MonkeyPatch, calls: Calls) -> None:
    """Even a KeyboardInterrupt in cupy.empty frees the cudaHostAlloc'd buffer, then the pool is emptied."""
    def interrupted(shape: Any, dtype: Any = float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(fake_cupy, "empty", interrupted)
    with pytest.raises(KeyboardInterrupt):
        raw("raw_pinned")
    pinned = calls[2]
    assert pinned[0] == "hostAlloc" and calls[3:] == [("fill_pattern", ANY, N, 0), ("freeHost", ANY), *CLOSING]
    assert calls[4][1] == calls[3][1] and not fake_cupy.HOST_ALLOCATIONS


def test_a_lane_that_fails_after_registering_unregisters(monkeypatch: pytest.MonkeyPatch, calls: Calls) -> None:
    """Out of device memory after cudaHostRegister: the array is unregistered and the error goes on."""

    def out_of_memory(shape: Any, dtype: Any = float) -> None:
        raise fake_cupy.OutOfMemoryError("out of memory allocating 49,152 bytes")

    monkeypatch.setattr(fake_cupy, "empty", out_of_memory)
    with pytest.raises(fake_cupy.OutOfMemoryError):
        raw("raw_registered")
    registered = calls[3]
    assert registered[0] == "hostRegister" and calls[4:] == [("hostUnregister", registered[1]), *CLOSING] and not fake_cupy.REGISTERED


def test_a_failed_pinned_allocation_frees_nothing_it_did_not_get(monkeypatch: pytest.MonkeyPatch, calls: Calls) -> None:
    """cudaHostAlloc's own failure leaves no pointer to free: the error is the allocation's."""

    def refused(nbytes: int, flags: int) -> int:
        raise fake_cupy.CUDARuntimeError(2)

    monkeypatch.setattr(fake_cupy.runtime, "hostAlloc", refused)
    with pytest.raises(fake_cupy.CUDARuntimeError) as failed:
        raw("raw_pinned")
    assert failed.value.status == 2 and calls == [("Device", 0), ("use", ANY), *CLOSING]


def test_a_bidir_copy_interrupted_in_its_second_lane_frees_the_first(monkeypatch: pytest.MonkeyPatch, calls: Calls) -> None:
    """The d2h lane's allocation is interrupted: the h2d lane's pinned buffer is freed all the same."""
    real = fake_cupy.runtime.hostAlloc
    made: list[int] = []

    def once(nbytes: int, flags: int) -> int:
        if made:
            raise KeyboardInterrupt
        made.append(real(nbytes, flags))
        return made[0]

    monkeypatch.setattr(fake_cupy.runtime, "hostAlloc", once)
    with pytest.raises(KeyboardInterrupt):
        raw("raw_pinned", BIDIR)
    assert calls[-5:] == [("freeHost", made[0]), *CLOSING] and not fake_cupy.HOST_ALLOCATIONS


# the raw copy: per-call timing


@pytest.mark.parametrize("mode", ["raw_pinned", "raw_pageable", "raw_registered", "raw_pinned_wc"])
def test_an_h2d_call_copies_between_its_events_waits_on_the_end_and_reads_the_events(calls: Calls, mode: str) -> None:
    """start.record, memcpyAsync(device, host, nbytes, HostToDevice, stream), end.record, end.synchronize, then the events' ms / 1e3."""
    copy = raw(mode)
    (lane,) = copy.lanes
    mark = len(calls)
    assert copy() == 0.125 and copy.transfers == 1
    assert calls.since(mark) == [*lane_calls(lane, H2D_KIND), ("synchronize", lane.end), ("elapsed", lane.start, lane.end)]
    assert np.array_equal(lane.gpu.array, pattern(0))
    assert copy() == 0.125 and copy.transfers == 2


def test_a_d2h_call_copies_the_device_buffer_into_the_host_buffer(calls: Calls) -> None:
    """memcpyAsync(host, device, nbytes, DeviceToHost, stream) between the lane's events."""
    copy = raw("raw_pinned_wc", D2H)
    (lane,) = copy.lanes
    mark = len(calls)
    assert copy() == 0.125 and copy.transfers == 1
    assert calls.since(mark) == [*lane_calls(lane, D2H_KIND), ("synchronize", lane.end), ("elapsed", lane.start, lane.end)]
    assert np.array_equal(copy.host, pattern(0))


def test_a_bidir_call_issues_both_lanes_before_waiting_and_times_each_with_its_own_events(calls: Calls) -> None:
    """Both copies queued, then both end events waited on; the call gives each direction's seconds; it counts once."""
    copy = raw("raw_pageable", BIDIR)
    up, down = copy.lanes
    mark = len(calls)
    assert copy() == {H2D: 0.125, D2H: 0.375} and copy.transfers == 1
    assert calls.since(mark) == [*lane_calls(up, H2D_KIND), *lane_calls(down, D2H_KIND), ("synchronize", up.end),
                                 ("synchronize", down.end), ("elapsed", up.start, up.end), ("elapsed", down.start, down.end)]  # fmt: skip
    assert np.array_equal(up.gpu.array, pattern(0)) and np.array_equal(down.host, pattern(0))


# the raw copy: streamed timing


@pytest.mark.parametrize("mode, direction", [("raw_pinned", H2D), ("raw_registered", H2D), ("raw_pinned_wc", H2D), ("raw_pinned", D2H)])
def test_a_streamed_run_is_held_while_two_warm_up_copies_and_the_timed_ones_are_queued(calls: Calls, mode: str, direction: str) -> None:
    """A host function waits on the gate (30 s at most); two copies, start, the copies, end; the gate opens; end waited on."""
    copy = raw(mode, direction, STREAMED)
    (lane,) = copy.lanes
    kind = H2D_KIND if direction == H2D else D2H_KIND
    mark = len(calls)
    assert copy.streamed(3) == 0.125 and copy.transfers == 5 and copy.method == STREAMED
    assert calls.since(mark) == [("launch_host_func", lane.stream, None), copy_call(lane, kind), copy_call(lane, kind),
                                 ("record", lane.start, lane.stream), *[copy_call(lane, kind)] * 3, ("record", lane.end, lane.stream),
                                 ("gate.set",), ("synchronize", lane.end), ("elapsed", lane.start, lane.end)]  # fmt: skip
    lane.stream.synchronize()
    (gate,) = calls.gates
    assert gate.timeouts == [30.0] and lane.stream.errors == [] and cuda.HOLD_TIMEOUT_S == 30.0
    assert copy.streamed(1) == 0.125 and copy.transfers == 8


def test_a_pageable_streamed_run_is_queued_without_a_hold_and_is_no_error_unheld(monkeypatch: pytest.MonkeyPatch, calls: Calls) -> None:
    """No host function for raw_pageable; its copies may run as they are queued, and that is what it measures."""
    copy = raw("raw_pageable", method=STREAMED)
    (lane,) = copy.lanes
    monkeypatch.setattr(lane.stream, "ops", synchronous())
    mark = len(calls)
    assert copy.streamed(2) == 0.125 and copy.transfers == 4
    assert calls.since(mark) == [*[copy_call(lane, H2D_KIND)] * 2, ("record", lane.start, lane.stream),
                                 *[copy_call(lane, H2D_KIND)] * 2, ("record", lane.end, lane.stream), ("gate.set",),
                                 ("synchronize", lane.end), ("elapsed", lane.start, lane.end)]  # fmt: skip


@pytest.mark.parametrize("queueing, why", [
    (26.9, "the hold ended before the copies were queued"),
    (27.0, "queueing blocked until the hold gave up after 30 s: the stream's queue may be full"),
    (31.5, "queueing blocked until the hold gave up after 30 s: the stream's queue may be full"),
])  # fmt: skip
def test_a_hold_that_did_not_hold_is_an_error_that_says_why(monkeypatch: pytest.MonkeyPatch, calls: Calls, queueing: float,
                                                            why: str) -> None:  # fmt: skip
    """Copies that ran while being queued are no streamed figure: 90% of the hold's timeout or more means the queue was full."""
    copy = raw("raw_pinned", method=STREAMED)
    (lane,) = copy.lanes
    monkeypatch.setattr(lane.stream, "launch_host_func", lambda callback, arg: None)
    monkeypatch.setattr(lane.stream, "ops", synchronous())
    monkeypatch.setattr(cuda, "time", clock(100.0, 100.0 + queueing))
    with pytest.raises(RuntimeError) as failed:
        copy.streamed(16)
    assert str(failed.value) == f"the stream was not held while 16 copies were queued ({why})"
    assert copy.transfers == 18 and calls[-3:] == [("record", lane.end, lane.stream), ("gate.set",), ("synchronize", lane.end)]


def test_a_start_event_already_reached_means_no_hold_though_the_end_is_still_ahead(monkeypatch: pytest.MonkeyPatch, calls: Calls) -> None:
    """Whether the stream was held is read from the start event: copies already running were not held, whatever the end says."""
    copy = raw("raw_pinned", method=STREAMED)
    (lane,) = copy.lanes
    monkeypatch.setattr(lane.stream, "launch_host_func", lambda callback, arg: None)
    monkeypatch.setattr(lane.stream, "ops", synchronous())
    running = SimpleNamespace(done=False, record=lambda stream: None, synchronize=lambda: None)  # the copies are still running
    monkeypatch.setattr(lane, "end", running)
    monkeypatch.setattr(cuda, "time", clock(0.0, 0.001))
    with pytest.raises(RuntimeError) as failed:
        copy.streamed(4)
    assert str(failed.value) == "the stream was not held while 4 copies were queued (the hold ended before the copies were queued)"


def test_a_streamed_run_of_a_bidir_copy_moves_the_first_lanes_batch(calls: Calls) -> None:
    """bidir is timed per call; asked to stream, the h2d lane is the one driven."""
    copy = raw("raw_pinned", BIDIR, STREAMED)
    up = copy.lanes[0]
    mark = len(calls)
    assert copy.streamed(1) == 0.125
    assert [c for c in calls.since(mark) if c[0] == "memcpyAsync"] == [copy_call(up, H2D_KIND)] * 3


# the raw copy: verification


def test_an_h2d_verification_sends_new_bytes_into_zeros_and_reads_every_chunk_back(monkeypatch: pytest.MonkeyPatch,
                                                                                   calls: Calls) -> None:  # fmt: skip
    """Pattern 1 at the source, zeros on the device, both waited for; one call; a pinned chunk; each chunk read back."""
    monkeypatch.setattr(cuda, "VERIFY_CHUNK_BYTES", 10_000)
    copy = raw("raw_pinned")
    (lane,) = copy.lanes
    mark = len(calls)
    copy.verify()
    device = lane.gpu.data.ptr
    assert calls.since(mark) == [("fill_pattern", copy.pinned_ptr, N, 1), ("fill", device, 0), ("stream.synchronize", lane.stream),
                                 ("device.synchronize", copy.device), *lane_calls(lane, H2D_KIND), ("synchronize", lane.end),
                                 ("elapsed", lane.start, lane.end), ("alloc_pinned_memory", 10_000), *reads(device, N, 10_000)]  # fmt: skip
    assert np.array_equal(lane.gpu.array, pattern(1)) and copy.transfers == 1


def test_a_d2h_verification_refills_the_device_with_new_bytes_and_checks_the_host_buffer(calls: Calls) -> None:
    """Pattern 2 in the expected bytes, copied HostToDevice, the host zeroed; one call; the host buffer compared, no read-back."""
    copy = raw("raw_pinned", D2H)
    (lane,) = copy.lanes
    copy()
    mark = len(calls)
    copy.verify()
    assert calls.since(mark) == [("fill_pattern", ptr(copy.expected), N, 2),
                                 ("memcpyAsync", lane.gpu.data.ptr, ptr(copy.expected), N, H2D_KIND, lane.stream.ptr),
                                 ("stream.synchronize", lane.stream), ("device.synchronize", copy.device), *lane_calls(lane, D2H_KIND),
                                 ("synchronize", lane.end), ("elapsed", lane.start, lane.end)]  # fmt: skip
    assert np.array_equal(copy.host, pattern(2)) and np.array_equal(copy.expected, pattern(2)) and copy.transfers == 2


def test_a_bidir_verification_poisons_both_lanes_and_checks_each(calls: Calls) -> None:
    """The expected bytes change first; the h2d lane is poisoned, then the d2h lane refilled; one call; both checked."""
    copy = raw("raw_pinned", BIDIR)
    up, down = copy.lanes
    mark = len(calls)
    copy.verify()
    assert calls.since(mark)[:7] == [("fill_pattern", ptr(copy.expected), N, 2), ("fill_pattern", ptr(up.host), N, 1),
                                     ("fill", up.gpu.data.ptr, 0), ("stream.synchronize", up.stream),
                                     ("memcpyAsync", down.gpu.data.ptr, ptr(copy.expected), N, H2D_KIND, down.stream.ptr),
                                     ("stream.synchronize", down.stream), ("device.synchronize", copy.device)]  # fmt: skip
    assert calls.since(mark)[-2:] == [("alloc_pinned_memory", N), ("get", up.gpu.data.ptr, N, None, True)]
    assert np.array_equal(up.gpu.array, pattern(1)) and np.array_equal(down.host, pattern(2)) and copy.transfers == 1


def test_a_streamed_copy_is_verified_with_a_short_streamed_run(calls: Calls) -> None:
    """verify() of a streamed series holds the stream and queues STREAM_PROBE_COPIES after the warm-up copies."""
    copy = raw("raw_pinned", method=STREAMED)
    (lane,) = copy.lanes
    mark = len(calls)
    copy.verify()
    assert [c[0] for c in calls.since(mark)].count("launch_host_func") == 1 and copy.transfers == 6
    assert [c for c in calls.since(mark) if c[0] == "memcpyAsync"] == [copy_call(lane, H2D_KIND)] * 6


@pytest.mark.parametrize("direction, label", [(H2D, "cuda/raw_pinned/copy@cuda:0"), (D2H, "cuda/raw_pinned/copy/d2h@cuda:0 (d2h)")])
def test_a_raw_copy_that_moves_nothing_fails_its_check_naming_the_series(monkeypatch: pytest.MonkeyPatch, direction: str,
                                                                         label: str) -> None:  # fmt: skip
    """Every byte of the zeroed destination differs from the pattern: the message names the series, and d2h says so."""
    copy = raw("raw_pinned", direction)
    monkeypatch.setattr(fake_cupy.runtime, "memcpyAsync", lambda *args: None)
    with pytest.raises(VerificationError) as failed:
        copy.verify()
    assert str(failed.value) == f"{label}: 49,152 of 49,152 {DIFFER}"


@pytest.mark.parametrize("make", ["raw", "asarray"])
def test_data_that_lands_on_another_device_fails_verification(calls: Calls, make: str) -> None:
    """A destination whose device id is not the series' device is refused before its bytes are read."""
    transfer: Any = raw(device="cuda:1") if make == "raw" else CupyBackend().prepare(asarray_key(device="cuda:1").at(BATCH), {})
    assert calls[0] == ("Device", 1) and transfer.device.id == 1
    label = "cuda/raw_pinned/copy@cuda:1" if make == "raw" else "cupy/asarray/copy@cuda:1"
    mark = len(calls)
    with pytest.raises(VerificationError) as failed:
        transfer.verify()
    assert str(failed.value) == f"{label}: data landed on cuda:0, not cuda:1"
    assert calls[-1] == ("elapsed", transfer.start if make == "asarray" else transfer.lanes[0].start, ANY)  # nothing read back


def test_closing_a_raw_copy_frees_each_pinned_buffer_once_then_empties_the_pool(calls: Calls) -> None:
    """freeHost for each lane's cudaHostAlloc'd buffer, the expected bytes dropped, then the pool; a second close frees nothing."""
    copy = raw("raw_pinned", BIDIR)
    up, down = copy.lanes
    pointers = (up.pinned_ptr, down.pinned_ptr)
    mark = len(calls)
    copy.close()
    assert calls.since(mark) == [("freeHost", pointers[0]), ("freeHost", pointers[1]), *CLOSING]
    assert (up.pinned_ptr, down.pinned_ptr, copy.expected, up.gpu, down.host) == (0, 0, None, None, None)
    copy.close()
    assert calls.since(mark) == [("freeHost", pointers[0]), ("freeHost", pointers[1]), *CLOSING, *CLOSING]
    assert not fake_cupy.HOST_ALLOCATIONS


# the raw backend's declared facts


def test_the_raw_backend_declares_its_modes_sources_directions_and_streaming() -> None:
    """Two default modes, two more by --mode; pinned modes start from their own buffer; every direction; every mode streams."""
    backend = CudaBackend()
    assert (backend.name, backend.title, backend.module, backend.extra) == ("cuda", "The raw CUDA reference (CuPy)", "cupy", "cupy")
    assert backend.default_modes == ("raw_pinned", "raw_pageable") == cuda.RAW_MODES
    assert backend.modes == ("raw_pinned", "raw_pageable", "raw_registered", "raw_pinned_wc") and backend.ops == ("copy",)
    assert (backend.isolated, backend.cuda_only, backend.host_buffers) == (True, True, ("numpy", "aligned"))
    assert cuda.PINNED_ALLOCS == {"raw_pinned": 0, "raw_pinned_wc": 4}
    assert {mode: backend.sources(mode) for mode in backend.modes} == {
        "raw_pinned": ("pinned",), "raw_pageable": ("numpy", "aligned"), "raw_registered": ("numpy", "aligned"),
        "raw_pinned_wc": ("pinned",)}
    assert {mode: backend.directions(mode) for mode in backend.modes} == dict.fromkeys(backend.modes, (H2D, D2H, BIDIR))
    key = SeriesKey("cuda", "raw_pageable", "copy", "cuda:0", SHAPE, method=STREAMED)
    assert backend.streamed_reason(key) is None and backend.direction_reason(SeriesKey("cuda", "raw_pinned", "copy", "cuda:0", SHAPE,
                                                                                       direction=BIDIR)) is None  # fmt: skip
    assert isinstance(backend.prepare(SeriesKey("cuda", "raw_pageable", "copy", "cuda:0", SHAPE).at(1), {}), RawCopy)


def test_the_raw_backend_skips_a_pinned_source_for_an_unpinned_mode_and_every_device_but_cuda() -> None:
    """A pinned source is only raw_pinned's and raw_pinned_wc's; only cuda:N devices run; the pinned reason comes first."""
    backend = CudaBackend()
    pinned = "a pinned source is what raw_pinned (and raw_pinned_wc) measure; choose it with --mode"

    def skip(mode: str, device: str = "cuda:0", host_buffer: str = "") -> str | None:
        return backend.skip_reason(SeriesKey("cuda", mode, "copy", device, SHAPE, host_buffer))

    assert [skip("raw_pageable", host_buffer="pinned"), skip("raw_registered", host_buffer="pinned")] == [pinned, pinned]
    assert [skip("raw_pinned"), skip("raw_pinned_wc"), skip("raw_pageable"), skip("raw_registered", host_buffer="aligned")] == [None] * 4
    assert skip("raw_pinned", "cuda:3") is None and skip("raw_pageable", "cpu", "pinned") == pinned
    assert skip("raw_pageable", "cpu") == "cuda/raw_pageable is CUDA-only: it runs on cuda:N devices, not on cpu"
    assert skip("raw_pinned", "mps") == "cuda/raw_pinned is CUDA-only: it runs on cuda:N devices, not on mps"


def raw_info(mode: str, direction: str = H2D, method: str = PER_CALL, device: str = "cuda:0") -> SeriesInfo:
    return CudaBackend().describe(SeriesKey("cuda", mode, "copy", device, SHAPE, method=method, direction=direction), {})


def test_the_raw_description_per_call_names_the_call_the_events_and_the_source() -> None:
    """Per call: time.perf_counter around each copy, an event after each, the events as the device clock (not for bidir)."""
    per_call = {"clock": "time.perf_counter", "sync": "cudaEventSynchronize on the event recorded after each copy"}
    assert raw_info("raw_pinned") == SeriesInfo("Fake GPU", "host-to-device", **per_call, device_clock=PER_COPY_EVENTS,
                                                params={"call": RAW_CALL[H2D]}, note=None)  # fmt: skip
    assert raw_info("raw_pageable") == SeriesInfo("Fake GPU", "host-to-device", **per_call, device_clock=PER_COPY_EVENTS,
                                                  params={"call": RAW_CALL[H2D]}, note=STAGED)  # fmt: skip
    assert raw_info("raw_pageable", D2H) == SeriesInfo(
        "Fake GPU", "device-to-host", **per_call, device_clock=PER_COPY_EVENTS, params={"call": RAW_CALL[D2H]},
        note="into pageable memory the driver stages the copy through pinned buffers of its own")  # fmt: skip
    assert raw_info("raw_registered", D2H).note == ("the NumPy array is pinned in place with cudaHostRegister once per point, outside"
                                                    " the samples; each point's pin_s says what that took")  # fmt: skip
    both = ("each call issues a batch each way at once; the point's MB/s is both directions together, h2d and d2h MB/s each stream's"
            " own events")  # fmt: skip
    assert raw_info("raw_pinned", BIDIR) == SeriesInfo("Fake GPU", "bidirectional", **per_call, device_clock=None,
                                                       params={"call": RAW_CALL[BIDIR]}, note=both)  # fmt: skip
    assert raw_info("raw_pageable", BIDIR).note == f"{STAGED}; {both}"


def test_the_raw_description_streamed_names_the_hold_and_the_end_event() -> None:
    """Streamed: the events are the clock, the wait is on the end event, the hold says what holds the stream (none when pageable)."""
    streamed = {"clock": "cupy.cuda.Event pair around the copies queued on the held stream, per copy",
                "sync": "cudaEventSynchronize on the end event", "device_clock": None}  # fmt: skip
    wc = ("write-combined pinned memory (cudaHostAllocWriteCombined), as bandwidthTest --wc: the CPU writes it quickly but reads it"
          " slowly, so the byte check takes longer")  # fmt: skip
    unheld = "; streamed, the copies are queued without a hold, so the span includes that staging"
    assert raw_info("raw_pinned_wc", D2H, STREAMED) == SeriesInfo("Fake GPU", "device-to-host", **streamed,
                                                                  params={"call": RAW_CALL[D2H], "hold": HELD}, note=wc)  # fmt: skip
    assert raw_info("raw_pinned", method=STREAMED) == SeriesInfo("Fake GPU", "host-to-device", **streamed,
                                                                 params={"call": RAW_CALL[H2D], "hold": HELD}, note=None)  # fmt: skip
    assert raw_info("raw_registered", method=STREAMED).params["hold"] == HELD
    assert raw_info("raw_pageable", method=STREAMED) == SeriesInfo(
        "Fake GPU", "host-to-device", **streamed, params={"call": RAW_CALL[H2D], "hold": UNHELD}, note=STAGED + unheld)  # fmt: skip
    into = "into pageable memory the driver stages the copy through pinned buffers of its own"
    assert raw_info("raw_pageable", D2H, STREAMED).note == into + unheld


def test_the_raw_description_names_the_device_it_asked_about(monkeypatch: pytest.MonkeyPatch) -> None:
    """The properties of the key's device index; a name as bytes or text, or 'CUDA GPU' where there is none."""
    names: dict[int, dict[str, Any]] = {0: {"name": b"Zero"}, 1: {"name": "One"}, 2: {}}
    monkeypatch.setattr(fake_cupy.runtime, "getDeviceProperties", lambda index: names[index])
    assert [raw_info("raw_pinned", device=f"cuda:{i}").device_name for i in range(3)] == ["Zero", "One", "CUDA GPU"]


def test_the_raw_host_estimate_counts_a_buffer_a_lane_the_expected_bytes_and_the_read_back_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """h2d: batch + pooled pinned chunk; d2h: two batches + a plain chunk; bidir: three batches + both chunks."""

    def estimate(direction: str) -> int:
        return CudaBackend().host_bytes(SeriesKey("cuda", "raw_pinned", "copy", "cuda:0", SHAPE, direction=direction).at(BATCH))

    monkeypatch.setattr(cuda, "VERIFY_CHUNK_BYTES", 10_000)  # a chunk of 10,000 bytes, 16,384 from the pinned pool
    assert [estimate(H2D), estimate(D2H), estimate(BIDIR)] == [N + 16_384, 2 * N + 10_000, 3 * N + 16_384 + 10_000]
    monkeypatch.setattr(cuda, "VERIFY_CHUNK_BYTES", N)
    assert [estimate(H2D), estimate(D2H), estimate(BIDIR)] == [N + 65_536, 3 * N, 4 * N + 65_536]


# the cupy path


def asarray_key(op: str = "copy", direction: str = H2D, host_buffer: str = "", device: str = "cuda:0") -> SeriesKey:
    return SeriesKey("cupy", "asarray", op, device, SHAPE, host_buffer, PER_CALL, direction)


@pytest.mark.parametrize("host_buffer, aligned, offset", [("", False, 16), ("aligned", True, 0)])
def test_asarray_sets_up_its_source_a_stream_of_its_own_and_two_events(calls: Calls, host_buffer: str, aligned: bool, offset: int) -> None:
    """The device used, the NumPy source as the host buffer says (its offset recorded), a non-blocking stream, an event pair."""
    transfer = CupyBackend().prepare(asarray_key(host_buffer=host_buffer).at(BATCH), {})
    assert isinstance(transfer, AsArray)
    assert calls == [("Device", 0), ("use", transfer.device), ("make_source", BATCH_SHAPE, aligned), ("Stream", transfer.stream),
                     ("Event", transfer.start), ("Event", transfer.end)]  # fmt: skip
    assert (transfer.host_offset, transfer.seed, transfer.stream.non_blocking, transfer.stream.null) == (offset, False, True, False)
    assert transfer.label == ("cupy/asarray/copy+aligned@cuda:0" if host_buffer else "cupy/asarray/copy@cuda:0")
    assert transfer.host_span() == (ptr(transfer.host), N) and np.array_equal(transfer.host, pattern(0))


def test_an_asarray_call_copies_inside_its_stream_between_its_events(calls: Calls) -> None:
    """with stream: start, cupy.asarray (its pinned staging block), end; then the end event waited on and the events read."""
    transfer = CupyBackend().prepare(asarray_key().at(BATCH), {})
    mark = len(calls)
    assert transfer() == 0.125
    s = transfer.stream
    assert calls.since(mark) == [("enter", s), ("record", transfer.start, s), ("asarray", ptr(transfer.host), N),
                                 ("alloc_pinned_memory", N), ("record", transfer.end, s), ("exit", s), ("synchronize", transfer.end),
                                 ("elapsed", transfer.start, transfer.end)]  # fmt: skip


def test_the_seed_op_fetches_the_first_item_as_float32_before_the_end_event(calls: Calls) -> None:
    """asarray(x).astype(float32)[0, 0].get() inside the timed span: 64 x 3 values fetched."""
    transfer = CupyBackend().prepare(asarray_key("seed").at(BATCH), {})
    assert transfer.seed and transfer.label == "cupy/asarray/seed@cuda:0"
    mark = len(calls)
    assert transfer() == 0.125
    s = transfer.stream
    assert calls.since(mark) == [("enter", s), ("record", transfer.start, s), ("asarray", ptr(transfer.host), N),
                                 ("alloc_pinned_memory", N), ("astype", np.float32), ("get", ANY, 64 * 3, None, False),
                                 ("record", transfer.end, s), ("exit", s), ("synchronize", transfer.end),
                                 ("elapsed", transfer.start, transfer.end)]  # fmt: skip
    transfer.verify()


def test_an_asarray_verification_sends_new_bytes_reads_each_chunk_back_then_probes_for_aliasing(monkeypatch: pytest.MonkeyPatch,
                                                                                                calls: Calls) -> None:  # fmt: skip
    """Pattern 1 sent; every byte read back through a pinned chunk; then pattern 2 at the source and the device's first bytes re-read."""
    monkeypatch.setattr(cuda, "VERIFY_CHUNK_BYTES", 10_000)
    sent: list[np.ndarray] = []
    real = fake_cupy.asarray

    def keep(host: np.ndarray) -> Any:
        moved = real(host)
        sent.append(moved)
        return moved

    monkeypatch.setattr(fake_cupy, "asarray", keep)
    transfer = CupyBackend().prepare(asarray_key().at(BATCH), {})
    mark = len(calls)
    transfer.verify()
    (moved,) = sent
    device, s = moved.data.ptr, transfer.stream
    assert calls.since(mark) == [("fill_pattern", ptr(transfer.host), N, 1), ("enter", s), ("record", transfer.start, s),
                                 ("asarray", ptr(transfer.host), N), ("alloc_pinned_memory", N), ("record", transfer.end, s), ("exit", s),
                                 ("synchronize", transfer.end), ("elapsed", transfer.start, transfer.end), ("alloc_pinned_memory", 10_000),
                                 *reads(device, N, 10_000), ("fill_pattern", ptr(transfer.host), N, 2),
                                 ("get", device, N, None, False)]  # fmt: skip
    assert np.array_equal(moved.array, pattern(1)) and np.array_equal(transfer.host, pattern(2))


def test_the_alias_probe_rereads_64_kib_of_a_larger_batch(calls: Calls) -> None:
    """A batch above ALIAS_PROBE_BYTES has only its first 65,536 bytes refilled and re-read."""
    transfer = CupyBackend().prepare(asarray_key().at(8), {})
    transfer.verify()
    assert calls[-1] == ("get", ANY, 65_536, None, False) and calls[-2] == ("fill_pattern", ptr(transfer.host), 65_536, 2)
    assert transfer.host.size == 2 * N > 65_536


def test_an_asarray_that_moves_the_wrong_bytes_fails_naming_the_series(monkeypatch: pytest.MonkeyPatch) -> None:
    """A device array of zeros: every byte differs, and the message is the series' own."""
    transfer = CupyBackend().prepare(asarray_key().at(BATCH), {})
    monkeypatch.setattr(fake_cupy, "asarray", lambda host: fake_cupy.ndarray(np.zeros_like(host)))
    with pytest.raises(VerificationError) as failed:
        transfer.verify()
    assert str(failed.value) == f"cupy/asarray/copy@cuda:0: 49,152 of 49,152 {DIFFER}"


def test_an_asarray_that_shares_memory_with_its_source_is_no_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A device array that changes with its source (UMP) was never transferred."""
    transfer = CupyBackend().prepare(asarray_key().at(BATCH), {})
    monkeypatch.setattr(fake_cupy, "asarray", lambda host: fake_cupy.ndarray(host))
    with pytest.raises(VerificationError) as failed:
        transfer.verify()
    assert str(failed.value) == "cupy/asarray/copy@cuda:0: the device array shares memory with the NumPy source; nothing was copied"


def test_a_seed_result_that_differs_fails_naming_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fetched first item is compared value by value with the source's, as float32."""
    transfer = CupyBackend().prepare(asarray_key("seed").at(BATCH), {})
    real = fake_cupy.ndarray.astype
    monkeypatch.setattr(fake_cupy.ndarray, "astype", lambda self, dtype: fake_cupy.ndarray(real(self, dtype).array + 1))
    with pytest.raises(VerificationError) as failed:
        transfer.verify()
    assert str(failed.value) == ("cupy/asarray/seed@cuda:0 result: 192 of 192 checked values differ from the source; the transfer did"
                                 " not deliver the data")  # fmt: skip


def test_closing_asarray_drops_its_source_and_stream_and_empties_the_pool(calls: Calls) -> None:
    """host and stream gone, then free_pinned_pool."""
    transfer = CupyBackend().prepare(asarray_key().at(BATCH), {})
    mark = len(calls)
    transfer.close()
    assert (transfer.host, transfer.stream) == (None, None) and calls.since(mark) == CLOSING


def test_get_puts_the_expected_bytes_on_the_device_and_sets_up_its_stream_and_events(calls: Calls) -> None:
    """d2h: the device used, a plain source made, asarray'd to the device; a non-blocking stream; an event pair; nothing fetched yet."""
    transfer = CupyBackend().prepare(asarray_key(direction=D2H).at(BATCH), {})
    assert isinstance(transfer, Get) and transfer.moved is None and transfer.label == "cupy/asarray/copy/d2h@cuda:0"
    assert calls == [("Device", 0), ("use", transfer.device), ("make_source", BATCH_SHAPE, False),
                     ("asarray", ptr(transfer.expected), N), ("alloc_pinned_memory", N), ("Stream", transfer.stream),
                     ("Event", transfer.start), ("Event", transfer.end)]  # fmt: skip
    assert (transfer.stream.non_blocking, transfer.stream.null) == (True, False) and np.array_equal(transfer.on_device.array, pattern(0))


def test_a_get_call_fetches_on_its_own_stream_between_its_events(calls: Calls) -> None:
    """with stream: start, device_array.get(stream=stream), end; the end waited on; a fresh array holding the device's bytes."""
    transfer = CupyBackend().prepare(asarray_key(direction=D2H).at(BATCH), {})
    mark = len(calls)
    assert transfer() == 0.125
    s = transfer.stream
    assert calls.since(mark) == [("enter", s), ("record", transfer.start, s), ("get", transfer.on_device.data.ptr, N, s, False),
                                 ("record", transfer.end, s), ("exit", s), ("synchronize", transfer.end),
                                 ("elapsed", transfer.start, transfer.end)]  # fmt: skip
    assert np.array_equal(transfer.moved, pattern(0)) and ptr(transfer.moved) != ptr(transfer.expected)


def test_a_get_verification_puts_new_bytes_on_the_device_waits_and_checks_a_fresh_fetch(calls: Calls) -> None:
    """Pattern 2 into the expected bytes, asarray'd again, the device waited on, one call, every byte compared."""
    transfer = CupyBackend().prepare(asarray_key(direction=D2H).at(BATCH), {})
    first = transfer.on_device
    mark = len(calls)
    transfer.verify()
    s = transfer.stream
    assert transfer.on_device is not first and np.array_equal(transfer.moved, pattern(2))
    assert calls.since(mark) == [("fill_pattern", ptr(transfer.expected), N, 2), ("asarray", ptr(transfer.expected), N),
                                 ("alloc_pinned_memory", N), ("device.synchronize", transfer.device), ("enter", s),
                                 ("record", transfer.start, s), ("get", transfer.on_device.data.ptr, N, s, False),
                                 ("record", transfer.end, s), ("exit", s), ("synchronize", transfer.end),
                                 ("elapsed", transfer.start, transfer.end)]  # fmt: skip


def test_a_get_that_brings_the_wrong_bytes_or_the_source_itself_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """Zeros fail the d2h check; the source array handed back is no copy."""
    transfer = CupyBackend().prepare(asarray_key(direction=D2H).at(BATCH), {})
    monkeypatch.setattr(fake_cupy.ndarray, "get", lambda self, stream=None, out=None: np.zeros_like(self.array))
    with pytest.raises(VerificationError) as failed:
        transfer.verify()
    assert str(failed.value) == f"cupy/asarray/copy/d2h@cuda:0 (d2h): 49,152 of 49,152 {DIFFER}"
    monkeypatch.setattr(fake_cupy, "asarray", lambda host: fake_cupy.ndarray(host))
    monkeypatch.setattr(fake_cupy.ndarray, "get", lambda self, stream=None, out=None: self.array)
    with pytest.raises(VerificationError) as failed:
        transfer.verify()
    assert str(failed.value) == "cupy/asarray/copy/d2h@cuda:0: .get() handed back the source array; nothing was copied"


def test_closing_get_drops_every_array_and_its_stream_and_empties_the_pool(calls: Calls) -> None:
    """on_device, expected, moved and stream gone, then free_pinned_pool."""
    transfer = CupyBackend().prepare(asarray_key(direction=D2H).at(BATCH), {})
    transfer()
    mark = len(calls)
    transfer.close()
    assert (transfer.on_device, transfer.expected, transfer.moved, transfer.stream) == (None,) * 4 and calls.since(mark) == CLOSING


def test_the_cupy_backend_declares_its_mode_ops_directions_and_why_it_is_not_streamed() -> None:
    """asarray, copy and seed, h2d and d2h, per call only."""
    backend = CupyBackend()
    assert (backend.name, backend.title, backend.module, backend.extra) == ("cupy", "CuPy", "cupy", "cupy")
    assert (backend.modes, backend.default_modes, backend.ops) == (("asarray",), ("asarray",), ("copy", "seed"))
    assert (backend.isolated, backend.cuda_only, backend.host_buffers) == (True, True, ("numpy", "aligned"))
    assert backend.directions("asarray") == (H2D, D2H) and backend.sources("asarray") == ("numpy", "aligned")
    assert backend.streamed_reason(asarray_key()) == (
        "cupy.asarray allocates a new device array and stages the batch through pinned memory on every call, so its copies cannot be"
        " queued on a held stream: it is timed per call only; cuda/raw_pinned and cuda/raw_pageable give CuPy's streamed figures")
    assert isinstance(backend.prepare(asarray_key("seed").at(1), {}), AsArray)


def test_the_cupy_backend_skips_pinned_sources_other_devices_and_the_seed_op_coming_back() -> None:
    """A pinned source first, then a device other than cuda:N, then seed d2h; h2d seed and d2h copy run."""
    backend = CupyBackend()
    pinned = "cupy.asarray takes a NumPy array; cuda/raw_pinned and torch's pinned modes show what pinning buys"
    assert backend.skip_reason(asarray_key(host_buffer="pinned")) == pinned
    assert backend.skip_reason(asarray_key(host_buffer="pinned", device="cpu")) == pinned
    assert backend.skip_reason(asarray_key(device="cpu")) == "cupy/asarray is CUDA-only: it runs on cuda:N devices, not on cpu"
    assert backend.skip_reason(asarray_key("seed", D2H, device="mps")) == "cupy/asarray is CUDA-only: it runs on cuda:N devices, not on mps"
    assert backend.skip_reason(asarray_key("seed", D2H)) == "the seed op is the report's host-to-device expression; d2h times .get() alone"
    running = (asarray_key("seed"), asarray_key(direction=D2H), asarray_key(host_buffer="aligned"))
    assert [backend.skip_reason(key) for key in running] == [None] * 3


def test_the_cupy_description_names_the_device_the_wait_and_what_the_events_include(monkeypatch: pytest.MonkeyPatch) -> None:
    """The named device from cuda_devices ('CUDA GPU' if absent); seed waits on .get(); d2h says .get() into a fresh array."""
    monkeypatch.setattr(fake_cupy.runtime, "getDeviceCount", lambda: 2)
    monkeypatch.setattr(fake_cupy.runtime, "getDeviceProperties", lambda index: {"name": [b"Zero", b"One"][index]})
    backend = CupyBackend()
    staged = ("asarray stages the array through pinned host memory before the copy; the event time includes that host copy, so it is"
              " no link figure")  # fmt: skip
    copy_sync = "cupy.cuda.Event.synchronize on the copy's stream"
    assert backend.describe(asarray_key(device="cuda:1"), {}) == SeriesInfo("One", "host-to-device", "time.perf_counter", copy_sync,
                                                                            PER_COPY_EVENTS, {}, staged)  # fmt: skip
    assert backend.describe(asarray_key("seed"), {}) == SeriesInfo(
        "Zero", "host-to-device", "time.perf_counter", "the result fetched with .get()", PER_COPY_EVENTS, {}, staged)  # fmt: skip
    assert backend.describe(asarray_key(direction=D2H), {}) == SeriesInfo(
        "Zero", "device-to-host", "time.perf_counter", copy_sync, PER_COPY_EVENTS, {},
        "d2h: device_array.get(), the reverse of asarray, into a fresh pageable NumPy array per call")  # fmt: skip
    assert backend.describe(asarray_key(device="cuda:7"), {}).device_name == "CUDA GPU"


def test_the_cupy_host_estimate_covers_the_source_its_staging_and_the_read_back_or_the_fetched_copies(
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """h2d: the batch, its pooled staging block and a pooled read-back chunk; d2h: three batches and one pooled staging block."""

    def estimate(direction: str, batch: int = BATCH) -> int:
        return CupyBackend().host_bytes(asarray_key(direction=direction).at(batch))

    monkeypatch.setattr(cupy_path, "VERIFY_CHUNK_BYTES", 10_000)
    assert [estimate(H2D), estimate(D2H)] == [N + 65_536 + 16_384, 3 * N + 65_536]
    monkeypatch.setattr(cupy_path, "VERIFY_CHUNK_BYTES", 2 * N)
    assert [estimate(H2D), estimate(H2D, 1), estimate(D2H, 1)] == [N + 2 * 65_536, 12_288 + 2 * 16_384, 3 * 12_288 + 16_384]
