"""A stand-in for the few CuPy calls the cuda and cupy paths make, over host memory, so their code
runs on a machine with no GPU: "device" arrays are NumPy arrays, copies are memmoves, and each
stream runs its queue in order on a thread of its own, so a host function really holds it.

It models what the paths rely on (stream order, events completing when the stream reaches them,
a held stream running nothing), not CUDA's timing: event times are host clock readings.
"""

from __future__ import annotations

import ctypes
import queue
import threading
import time
import weakref
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

__version__ = "0.0-fake"
uint8, float32 = np.uint8, np.float32


class CUDARuntimeError(RuntimeError):
    def __init__(self, status: int = 1) -> None:
        super().__init__(f"cudaError {status}")
        self.status = status


class OutOfMemoryError(MemoryError):
    pass


class Stream:
    """A stream: its operations run in order on a thread of its own."""

    streams: dict[int, Stream] = {}

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False) -> None:
        # CuPy's own signature: a first positional True asks for the null stream, not a non-blocking one.
        self.null, self.non_blocking, self.ptds = null, non_blocking, ptds
        self.ops: queue.Queue[Callable[[], None]] = queue.Queue()
        self.ptr = id(self)
        Stream.streams[self.ptr] = self
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while True:
            self.ops.get()()
            self.ops.task_done()

    def launch_host_func(self, callback: Callable[[Any], None], arg: Any) -> None:
        self.ops.put(lambda: callback(arg))

    def synchronize(self) -> None:
        self.ops.join()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


class Event:
    """As CUDA's: an event never recorded counts as done (cudaEventQuery and cudaEventSynchronize succeed
    at once), and has no time to give (cudaEventElapsedTime fails)."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.reached.set()
        self.recorded = False
        self.at = 0.0

    def record(self, stream: Stream) -> None:
        self.recorded = True
        self.reached.clear()

        def stamp() -> None:
            self.at = time.perf_counter()
            self.reached.set()

        stream.ops.put(stamp)

    @property
    def done(self) -> bool:
        return self.reached.is_set()

    def synchronize(self) -> None:
        self.reached.wait()


def get_elapsed_time(start: Event, end: Event) -> float:
    """cudaEventElapsedTime: cudaErrorInvalidResourceHandle (400) unless both events were recorded,
    cudaErrorNotReady (600) unless both have completed."""
    if not (start.recorded and end.recorded):
        raise CUDARuntimeError(400)
    if not (start.done and end.done):
        raise CUDARuntimeError(600)
    return (end.at - start.at) * 1e3


class Device:
    def __init__(self, index: int = 0) -> None:
        self.id = index

    def use(self) -> None:
        pass

    def synchronize(self) -> None:
        for stream in list(Stream.streams.values()):
            stream.synchronize()


class ndarray:
    """A device array: a NumPy array whose buffer stands for device memory."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.data = SimpleNamespace(ptr=array.ctypes.data, device_id=0)

    def fill(self, value: int) -> None:
        self.array.fill(value)

    def reshape(self, *shape: Any) -> ndarray:
        return ndarray(self.array.reshape(*shape))

    def __getitem__(self, index: Any) -> ndarray:
        return ndarray(np.asarray(self.array[index]))

    def astype(self, dtype: Any) -> ndarray:
        return ndarray(self.array.astype(dtype))

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    def get(self, stream: Any = None, out: np.ndarray | None = None) -> np.ndarray:
        """As CuPy's ndarray.get: `out` must be a NumPy array of this array's dtype and shape."""
        if out is None:
            return self.array.copy()
        if not isinstance(out, np.ndarray):
            raise TypeError("Only numpy.ndarray can be obtained from cupy.ndarray")
        if self.dtype != out.dtype:
            raise TypeError(f"{out.dtype} array cannot be obtained from {self.dtype} array")
        if self.shape != out.shape:
            raise ValueError(f"Shape mismatch. Expected shape: {self.shape}, actual shape: {out.shape}")
        out[...] = self.array
        return out


def empty(shape: Any, dtype: Any = float) -> ndarray:
    """As cupy.empty: float64 unless a dtype is given."""
    return ndarray(np.empty(shape, dtype))


def asarray(host: np.ndarray) -> ndarray:
    """As CuPy copies a pageable NumPy array (_core/core.pyx, _array_default): through a staging block
    from the pinned pool, watched until its copy is done and released at the next pinned allocation."""
    block = cuda.alloc_pinned_memory(host.nbytes)
    staged = np.frombuffer(block, host.dtype, host.size).reshape(host.shape)
    staged[...] = host
    WATCHED.append(block)
    return ndarray(staged.copy())


class PinnedMemoryPointer(bytearray):
    """A block from the pinned pool: its buffer spans the whole block, as the pool rounded it."""


class PinnedPool:
    """CuPy's PinnedMemoryPool (cupy/cuda/pinned_memory.pyx): a request is rounded up to a multiple of
    512 bytes and then to a power of two (internal.clp2); a block returns to the pool when its last
    reference goes and stays reserved until free_all_blocks(). It records what it holds."""

    def __init__(self) -> None:
        self.emptied = 0
        self.free: dict[int, int] = {}  # released blocks, by size
        self.reserved = self.peak = 0  # bytes the pool holds (in use or released), now and at most
        self.handed_out: list[int] = []  # each block's size, in order

    def malloc(self, nbytes: int) -> PinnedMemoryPointer:
        if nbytes == 0:
            return PinnedMemoryPointer(0)
        size = ((nbytes + 511) // 512) * 512 - 1
        for shift in (1, 2, 4, 8, 16, 32):
            size |= size >> shift
        size += 1
        if self.free.get(size):
            self.free[size] -= 1
        else:
            self.reserved += size
            self.peak = max(self.peak, self.reserved)
        self.handed_out.append(size)
        block = PinnedMemoryPointer(size)
        weakref.finalize(block, self._release, size)
        return block

    def _release(self, size: int) -> None:
        self.free[size] = self.free.get(size, 0) + 1

    def free_all_blocks(self) -> None:
        WATCHED.clear()
        self.emptied += 1
        self.reserved -= sum(size * count for size, count in self.free.items())
        self.free.clear()


POOL = PinnedPool()
WATCHED: list[PinnedMemoryPointer] = []  # staging blocks of asynchronous copies; every fake copy is done at once


def _alloc_pinned_memory(nbytes: int) -> PinnedMemoryPointer:
    WATCHED.clear()  # as CuPy's watch list releases the blocks of finished copies first
    return POOL.malloc(nbytes)


HOST_ALLOCATIONS: dict[int, Any] = {}  # cudaHostAlloc'd buffers not yet freed


def _host_alloc(nbytes: int, flags: int) -> int:
    buffer = (ctypes.c_uint8 * nbytes)()
    HOST_ALLOCATIONS[ctypes.addressof(buffer)] = buffer
    HOST_FLAGS[ctypes.addressof(buffer)] = flags
    return ctypes.addressof(buffer)


HOST_FLAGS: dict[int, int] = {}  # cudaHostAlloc's flags, by pointer
REGISTERED: dict[int, int] = {}  # cudaHostRegister'd ranges not yet unregistered: pointer -> bytes


def _host_register(ptr: int, nbytes: int, flags: int) -> None:
    if ptr in REGISTERED:
        raise CUDARuntimeError(712)  # cudaErrorHostMemoryAlreadyRegistered
    REGISTERED[ptr] = nbytes


def _host_unregister(ptr: int) -> None:
    if REGISTERED.pop(ptr, None) is None:
        raise CUDARuntimeError(713)  # cudaErrorHostMemoryNotRegistered


def _memcpy_async(dst: int, src: int, nbytes: int, kind: int, stream: int) -> None:
    Stream.streams[stream].ops.put(lambda: ctypes.memmove(dst, src, nbytes))


def _nvrtc_version() -> tuple[int, int]:
    raise RuntimeError("libnvrtc.so.13: cannot open shared object file")  # as on a machine without NVRTC


# cudaGetDeviceProperties' answer, as CuPy gives it (bytes for the name): a test may set another GPU's
# (a Grace node's GH200), whose name and UUID NVML's stand-in then gives alike.
PROPERTIES: dict[str, Any] = {"name": b"Fake GPU", "totalGlobalMem": 2**30, "major": 9, "minor": 0, "uuid": bytes(range(1, 17))}

runtime = SimpleNamespace(
    CUDARuntimeError=CUDARuntimeError, memcpyHostToDevice=1, memcpyDeviceToHost=2, getDeviceCount=lambda: 1, runtimeGetVersion=lambda: 13000,
    getDeviceProperties=lambda index: dict(PROPERTIES),
    deviceGetPCIBusId=lambda index: "0000:01:00.0", hostAlloc=_host_alloc, freeHost=lambda ptr: HOST_ALLOCATIONS.pop(ptr),
    memcpyAsync=_memcpy_async, hostRegister=_host_register, hostUnregister=_host_unregister,
)  # fmt: skip
cuda = SimpleNamespace(
    runtime=runtime, Device=Device, Stream=Stream, Event=Event, get_elapsed_time=get_elapsed_time,
    alloc_pinned_memory=_alloc_pinned_memory, memory=SimpleNamespace(OutOfMemoryError=OutOfMemoryError),
    nvrtc=SimpleNamespace(getVersion=_nvrtc_version),
)  # fmt: skip


def get_default_pinned_memory_pool() -> PinnedPool:
    return POOL
