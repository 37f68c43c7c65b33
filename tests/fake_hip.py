"""A stand-in for libamdhip64, HIP's runtime library, as ctypes.CDLL loads it: its functions take ctypes
arguments and return hipError_t, over host memory ("device" allocations are NumPy buffers).

As strict as HIP (hip_runtime_api.h and HIP's documentation of each call) where xferbench leans on it:
- every function must be declared before it is called, with the header's own prototype: undeclared,
  real ctypes would pass a 64-bit pointer as a C int (where the real call would then fault or corrupt,
  this one refuses at once); an argument ctypes cannot convert is a ctypes.ArgumentError, as in ctypes;
- an unknown symbol is an AttributeError ("undefined symbol"), as dlsym's failure is;
- work queued on a stream runs only when something waits for it: hipEventSynchronize runs its stream up
  to the event, hipStreamSynchronize the stream, hipDeviceSynchronize every stream of the device. A
  non-blocking stream (hipStreamNonBlocking) never waits for the null stream, nor the null stream for it:
  a synchronous hipMemcpy drains the null stream only;
- hipMemcpyAsync checks its kind against the pointers (HostToDevice: a device destination, a host
  source), and every device range against its allocation; from pinned memory the DMA reads the source
  when the copy runs, from pageable memory HIP stages it when the call is made;
- hipEventElapsedTime: hipErrorInvalidHandle (400) unless both events were recorded, hipErrorNotReady
  (600) unless both have completed;
- hipGetDeviceCount answers hipErrorNoDevice (100) where there is no GPU; a device index out of range is
  hipErrorInvalidDevice (101).
Times are host clock readings taken as queued work runs: this models order, not speed.
"""

from __future__ import annotations

import ctypes
import time
from ctypes import POINTER, c_char_p, c_float, c_int, c_size_t, c_uint, c_void_p
from typing import Any

import numpy as np

SUCCESS, INVALID_VALUE, OUT_OF_MEMORY, NO_DEVICE, INVALID_DEVICE, INVALID_HANDLE, NOT_READY = 0, 1, 2, 100, 101, 400, 600
ERRORS = {INVALID_VALUE: b"invalid argument", OUT_OF_MEMORY: b"out of memory", NO_DEVICE: b"no ROCm-capable device is detected",
          INVALID_DEVICE: b"invalid device ordinal", INVALID_HANDLE: b"invalid resource handle", NOT_READY: b"device not ready"}  # fmt: skip
HOST_TO_DEVICE, DEVICE_TO_HOST = 1, 2
# hipHostMalloc's flags (hip_runtime_api.h): Portable, Mapped, WriteCombined, NumaUser, Coherent, NonCoherent
HOST_MALLOC_FLAGS = 0x1 | 0x2 | 0x4 | 0x20000000 | 0x40000000 | 0x80000000
# hip_runtime_api.h's prototypes of the functions the raw HIP path may call; restype hipError_t (int).
HEADER: dict[str, tuple[Any, ...]] = {
    "hipGetDeviceCount": (POINTER(c_int),),
    "hipSetDevice": (c_int,),
    "hipDeviceGetName": (c_char_p, c_int, c_int),
    "hipDeviceGetPCIBusId": (c_char_p, c_int, c_int),
    "hipRuntimeGetVersion": (POINTER(c_int),),
    "hipDriverGetVersion": (POINTER(c_int),),
    "hipMalloc": (POINTER(c_void_p), c_size_t),
    "hipFree": (c_void_p,),
    "hipHostMalloc": (POINTER(c_void_p), c_size_t, c_uint),
    "hipHostFree": (c_void_p,),
    "hipMemset": (c_void_p, c_int, c_size_t),
    "hipMemcpy": (c_void_p, c_void_p, c_size_t, c_int),
    "hipMemcpyAsync": (c_void_p, c_void_p, c_size_t, c_int, c_void_p),
    "hipStreamCreateWithFlags": (POINTER(c_void_p), c_uint),
    "hipStreamSynchronize": (c_void_p,),
    "hipStreamDestroy": (c_void_p,),
    "hipEventCreate": (POINTER(c_void_p),),
    "hipEventDestroy": (c_void_p,),
    "hipEventRecord": (c_void_p, c_void_p),
    "hipEventSynchronize": (c_void_p,),
    "hipEventElapsedTime": (POINTER(c_float), c_void_p, c_void_p),
    "hipDeviceSynchronize": (),
}
RETURNS = {"hipGetErrorString": (c_char_p, (c_int,))}  # the one function that returns no hipError_t


def _value(argtype: Any, arg: Any) -> Any:
    """What the C function would receive, after ctypes' own check of the argument (from_param)."""
    try:
        argtype.from_param(arg)
    except TypeError as error:
        raise ctypes.ArgumentError(f"wrong type: {error}") from None
    if argtype is c_char_p:
        if not isinstance(arg, ctypes.Array):
            raise AssertionError("the stand-in writes strings into a buffer: pass ctypes.create_string_buffer(n)")
        return arg
    if hasattr(argtype, "_type_") and isinstance(argtype._type_, type):  # POINTER(T): what byref() or a pointer points at
        return arg._obj if type(arg).__name__ == "CArgObject" else arg.contents
    return arg.value if isinstance(arg, argtype) else argtype(arg).value


class Stream:
    def __init__(self, device: int, non_blocking: bool) -> None:
        self.device, self.non_blocking, self.queue = device, non_blocking, []  # callables, run in order when waited for

    def run(self, until: Any = None) -> None:
        while self.queue:
            work = self.queue.pop(0)
            work()
            if until is not None and work is until:
                return


class Event:
    def __init__(self) -> None:
        self.recorded = self.done = False
        self.at = 0.0
        self.stamp: Any = None
        self.stream: Stream | None = None


class Function:
    """One exported symbol: argtypes and restype as ctypes' function pointers have them."""

    def __init__(self, lib: "FakeHip", name: str) -> None:
        self.lib, self.name, self.argtypes, self.restype = lib, name, None, c_int

    def __call__(self, *args: Any) -> Any:
        restype, prototype = RETURNS.get(self.name, (c_int, HEADER[self.name]))
        if self.argtypes is None or list(self.argtypes) != list(prototype) or self.restype is not restype:
            raise AssertionError(f"{self.name} called with argtypes {self.argtypes} and restype {self.restype}; hip_runtime_api.h"
                                 f" declares {list(prototype)} -> {restype.__name__}")  # fmt: skip
        if len(args) != len(prototype):
            raise TypeError(f"this function takes at least {len(prototype)} argument{'s' * (len(prototype) != 1)} ({len(args)} given)")
        values = [_value(t, a) for t, a in zip(prototype, args)]
        self.lib.calls.append(self.name)
        return getattr(self.lib, "_" + self.name)(*values)


class FakeHip:
    """libamdhip64 for the GPUs described: [(name, PCI address, memory bytes)]."""

    def __init__(self, gpus: list[tuple[str, str, int]], version: int = 60342131) -> None:
        self.gpus, self.version, self.current, self.calls = gpus, version, 0, []
        self.device_memory: dict[int, tuple[np.ndarray, int]] = {}  # address -> (buffer, device)
        self.pinned: dict[int, np.ndarray] = {}
        self.streams: dict[int, Stream] = {}
        self.null = {i: Stream(i, non_blocking=False) for i in range(len(gpus))}
        self.events: dict[int, Event] = {}
        self.functions: dict[str, Function] = {}

    def __getattr__(self, name: str) -> Function:
        if name.startswith("_") or (name not in HEADER and name not in RETURNS):
            raise AttributeError(f"libamdhip64.so: undefined symbol: {name}")
        return self.functions.setdefault(name, Function(self, name))

    # --- memory and streams -------------------------------------------------------------------------------------------
    def _device_range(self, address: int, size: int) -> np.ndarray | None:
        """The device bytes at [address, address + size), or None where that is no (whole) device range."""
        for start, (buffer, _) in self.device_memory.items():
            if start <= address < start + buffer.size:
                return buffer[address - start : address - start + size] if address - start + size <= buffer.size else None
        return None

    def _host(self, address: int, size: int) -> np.ndarray:
        return np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(address))

    def _is_pinned(self, address: int) -> bool:
        return any(start <= address < start + buffer.size for start, buffer in self.pinned.items())

    def _stream(self, handle: int | None) -> Stream | None:
        return self.null[self.current] if not handle else self.streams.get(handle)

    # --- the API ---------------------------------------------------------------------------------------------
    def _hipGetErrorString(self, status: int) -> bytes:
        return ERRORS.get(status, b"unknown error")

    def _hipGetDeviceCount(self, count: c_int) -> int:
        if not self.gpus:
            return NO_DEVICE
        count.value = len(self.gpus)
        return SUCCESS

    def _hipSetDevice(self, index: int) -> int:
        if not 0 <= index < len(self.gpus):
            return INVALID_DEVICE
        self.current = index
        return SUCCESS

    def _text(self, buffer: ctypes.Array, length: int, index: int, text: str) -> int:
        if not 0 <= index < len(self.gpus):
            return INVALID_DEVICE
        if length < 1 or length > len(buffer):
            return INVALID_VALUE
        data = text.encode()[: length - 1]
        ctypes.memmove(buffer, data + b"\0", len(data) + 1)
        return SUCCESS

    def _hipDeviceGetName(self, buffer: ctypes.Array, length: int, index: int) -> int:
        return self._text(buffer, length, index, self.gpus[index][0] if 0 <= index < len(self.gpus) else "")

    def _hipDeviceGetPCIBusId(self, buffer: ctypes.Array, length: int, index: int) -> int:
        return self._text(buffer, length, index, self.gpus[index][1] if 0 <= index < len(self.gpus) else "")

    def _hipRuntimeGetVersion(self, number: c_int) -> int:
        number.value = self.version
        return SUCCESS

    def _hipDriverGetVersion(self, number: c_int) -> int:
        number.value = self.version
        return SUCCESS

    def _hipMalloc(self, pointer: c_void_p, size: int) -> int:
        used = sum(b.size for b, device in self.device_memory.values() if device == self.current)
        if size == 0 or used + size > self.gpus[self.current][2]:
            return OUT_OF_MEMORY if size else INVALID_VALUE
        buffer = np.zeros(size, np.uint8)  # zeroed, so a copy that never ran leaves zeros to find
        self.device_memory[buffer.ctypes.data] = (buffer, self.current)
        pointer.value = buffer.ctypes.data
        return SUCCESS

    def _hipFree(self, address: int | None) -> int:
        return SUCCESS if self.device_memory.pop(address or 0, None) is not None or not address else INVALID_VALUE

    def _hipHostMalloc(self, pointer: c_void_p, size: int, flags: int) -> int:
        if flags & ~HOST_MALLOC_FLAGS or size == 0:
            return INVALID_VALUE
        buffer = np.zeros(size, np.uint8)
        self.pinned[buffer.ctypes.data] = buffer
        pointer.value = buffer.ctypes.data
        return SUCCESS

    def _hipHostFree(self, address: int | None) -> int:
        return SUCCESS if self.pinned.pop(address or 0, None) is not None or not address else INVALID_VALUE

    def _hipMemset(self, address: int, value: int, size: int) -> int:
        target = self._device_range(address or 0, size)
        if target is None:
            return INVALID_VALUE
        self.null[self.current].queue.append(lambda: target.fill(value & 0xFF))  # asynchronous, on the null stream
        return SUCCESS

    def _copy(self, dst: int, src: int, size: int, kind: int) -> Any:
        """The work of a copy, or an error status: the kind must match the pointers."""
        if kind == HOST_TO_DEVICE:
            target = self._device_range(dst or 0, size)
            if target is None or self._device_range(src or 0, 1) is not None or not src:
                return INVALID_VALUE
            if self._is_pinned(src):
                return lambda: target.__setitem__(slice(None), self._host(src, size))  # the DMA reads the source as it runs
            staged = self._host(src, size).copy()  # pageable: staged as the call is made
            return lambda: target.__setitem__(slice(None), staged)
        if kind == DEVICE_TO_HOST:
            source = self._device_range(src or 0, size)
            if source is None or self._device_range(dst or 0, 1) is not None or not dst:
                return INVALID_VALUE
            return lambda: self._host(dst, size).__setitem__(slice(None), source)
        return INVALID_VALUE

    def _hipMemcpy(self, dst: int, src: int, size: int, kind: int) -> int:
        work = self._copy(dst, src, size, kind)
        if isinstance(work, int):
            return work
        self.null[self.current].run()  # the null stream's earlier work first; a non-blocking stream's is not waited for
        work()
        return SUCCESS

    def _hipMemcpyAsync(self, dst: int, src: int, size: int, kind: int, stream: int | None) -> int:
        queue = self._stream(stream)
        if queue is None:
            return INVALID_HANDLE
        work = self._copy(dst, src, size, kind)
        if isinstance(work, int):
            return work
        queue.queue.append(work)
        return SUCCESS

    def _hipStreamCreateWithFlags(self, pointer: c_void_p, flags: int) -> int:
        if flags not in (0, 1):
            return INVALID_VALUE
        stream = Stream(self.current, non_blocking=flags == 1)
        self.streams[id(stream)] = stream
        pointer.value = id(stream)
        return SUCCESS

    def _hipStreamSynchronize(self, handle: int | None) -> int:
        stream = self._stream(handle)
        if stream is None:
            return INVALID_HANDLE
        stream.run()
        return SUCCESS

    def _hipStreamDestroy(self, handle: int | None) -> int:
        stream = self.streams.pop(handle or 0, None)
        if stream is None:
            return INVALID_HANDLE
        stream.run()  # HIP finishes a destroyed stream's work
        return SUCCESS

    def _hipEventCreate(self, pointer: c_void_p) -> int:
        event = Event()
        self.events[id(event)] = event
        pointer.value = id(event)
        return SUCCESS

    def _hipEventDestroy(self, handle: int | None) -> int:
        return SUCCESS if self.events.pop(handle or 0, None) is not None else INVALID_HANDLE

    def _hipEventRecord(self, handle: int | None, stream: int | None) -> int:
        event, queue = self.events.get(handle or 0), self._stream(stream)
        if event is None or queue is None:
            return INVALID_HANDLE

        def stamp() -> None:
            event.at, event.done = time.perf_counter(), True

        event.recorded, event.done, event.stamp, event.stream = True, False, stamp, queue
        queue.queue.append(stamp)
        return SUCCESS

    def _hipEventSynchronize(self, handle: int | None) -> int:
        event = self.events.get(handle or 0)
        if event is None:
            return INVALID_HANDLE
        if event.recorded and not event.done:
            event.stream.run(until=event.stamp)
        return SUCCESS

    def _hipEventElapsedTime(self, milliseconds: c_float, start: int | None, end: int | None) -> int:
        first, last = self.events.get(start or 0), self.events.get(end or 0)
        if first is None or last is None or not (first.recorded and last.recorded):
            return INVALID_HANDLE
        if not (first.done and last.done):
            return NOT_READY
        milliseconds.value = (last.at - first.at) * 1e3
        return SUCCESS

    def _hipDeviceSynchronize(self) -> int:
        self.null[self.current].run()
        for stream in self.streams.values():
            if stream.device == self.current:
                stream.run()
        return SUCCESS
