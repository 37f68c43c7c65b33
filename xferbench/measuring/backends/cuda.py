"""`cuda`: the raw reference, one cudaMemcpyAsync into a preallocated device buffer, timed with CUDA events.

Modes:
- raw_pinned: from page-locked host memory (cudaHostAlloc) by the copy engine, as nvbandwidth copies;
- raw_pageable: the same call from an ordinary NumPy array, which the driver stages through its
  own pinned buffers;
- raw_registered: the NumPy array pinned in place with cudaHostRegister, once per point, outside
  the samples (the registration's own seconds are the point's pin_s);
- raw_pinned_wc: write-combined pinned memory (cudaHostAllocWriteCombined), as bandwidthTest --wc.
The last two are not in the default sweep.
Per call, each sample is one copy and its wait, so the launch and synchronization latency is in
every sample: it weighs at small batches, not at large ones. Streamed, as nvbandwidth times, a host
function holds the stream while warm-up copies, the start event, the timed copies and the end event
are queued, then lets them run back to back (a host function needs no kernel, so nothing is compiled).

Made with CuPy's bindings of the CUDA runtime (cupy.cuda.runtime.memcpyAsync, cupy.cuda.Event):
one wheel (xferbench[cupy]) that also serves the `cupy` path, and that the GPU images already
carry, rather than a second binding (cuda-python) for the same three calls. Every framework curve
is measured against this ceiling, on the same machine in the same run.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
import threading
import time
from typing import Any

import numpy as np

from xferbench.measuring.backends.base import Backend, SeriesInfo, Transfer
from xferbench.measuring.buffers import VERIFY_CHUNK_BYTES, ReadBack, address_offset, check_all, fill_pattern, make_source, read_host
from xferbench.core.errors import VerificationError
from xferbench.core.spec import BIDIR, BIDIRECTIONAL, D2H, DEVICE_TO_HOST, DIRECTIONS, H2D, HOST_TO_DEVICE, STREAMED, SeriesKey, Spec
from xferbench.core.timing import STREAM_WARM_COPIES

RAW_MODES = ("raw_pinned", "raw_pageable")  # the default sweep's
PINNED_ALLOCS = {"raw_pinned": 0, "raw_pinned_wc": 4}  # cudaHostAlloc flags: default, cudaHostAllocWriteCombined
EVENTS = "cupy.cuda.Event pair on the copy's stream"
STREAMED_CLOCK = "cupy.cuda.Event pair around the copies queued on the held stream, per copy"
HOLD_TIMEOUT_S = 30.0  # a held stream is released after this whatever happens: a hang must not outlive a point


def _cupy() -> Any:
    import cupy

    return cupy


def gpu_count() -> int:
    """CUDA devices CuPy can use: 0 without a driver or a GPU (CuPy raises then, it does not return 0)."""
    cupy = _cupy()
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except cupy.cuda.runtime.CUDARuntimeError:
        return 0


def device_index(device: str) -> int:
    return int(device.split(":")[1])


def _uuid(raw: Any) -> str | None:
    """CUDA's 16-byte UUID in NVML's text form, so the environment can match the GPU to NVML's facts."""
    if not isinstance(raw, (bytes, bytearray)) or len(raw) != 16:
        return None
    text = bytes(raw).hex()
    return f"GPU-{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def _pci_bus_id(cupy: Any, index: int) -> str | None:
    try:
        return str(cupy.cuda.runtime.deviceGetPCIBusId(index))
    except Exception:  # an older CuPy or a driver that does not say: the UUID may still match
        return None


def cuda_devices() -> list[dict[str, Any]]:
    """Each CUDA device as the environment records it, as CuPy's runtime describes it. The PCI bus
    id matches it to NVML where the UUID cannot: CuPy cuts a UUID short at its first zero byte."""
    cupy, devices = _cupy(), []
    for index in range(gpu_count()):
        props = cupy.cuda.runtime.getDeviceProperties(index)
        name = props.get("name", b"CUDA GPU")
        devices.append({
            "id": f"cuda:{index}",
            "kind": "cuda",
            "name": name.decode() if isinstance(name, bytes) else str(name),
            "memory_bytes": props.get("totalGlobalMem"),
            "capability": f"{props.get('major')}.{props.get('minor')}",
            "uuid": _uuid(props.get("uuid")),
            "pci_bus_id": _pci_bus_id(cupy, index),
        })  # fmt: skip
    return devices


def nvrtc_version(cupy: Any) -> str:
    """NVRTC's version, or why it is unavailable: CuPy needs it for any kernel it compiles, and
    xferbench's own paths and checks need none, so its absence is recorded, not fatal."""
    try:
        return ".".join(map(str, cupy.cuda.nvrtc.getVersion()))
    except Exception as error:  # not installed, or a library that will not load
        text = str(error).strip().splitlines()
        return f"unavailable: {text[0] if text else type(error).__name__}"


def cuda_environment() -> dict[str, Any]:
    cupy = _cupy()
    return {"version": cupy.__version__, "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
            "nvrtc": nvrtc_version(cupy), "devices": cuda_devices()}  # fmt: skip


def cupy_missing(title: str) -> str | None:
    """Why CuPy cannot be used here, naming both builds: which one fits depends on the driver."""
    if importlib.util.find_spec("cupy") is None:
        gpu = no_nvidia_gpu()
        return (f"{title} needs CuPy, which is not installed: pip install 'xferbench[cupy]' (CUDA 12, NVIDIA driver"
                " 525 or newer) or 'xferbench[cupy-cuda13]' (CUDA 13, driver 580 or newer)"
                + (f"; it also needs an NVIDIA GPU, and {gpu}" if gpu else ""))  # fmt: skip
    return None


def no_nvidia_gpu() -> str | None:
    """Why this machine surely has no NVIDIA GPU to use, or None where it may have one: installing CuPy
    on a laptop without one would not help, and the message should say so first."""
    if sys.platform == "darwin":
        return "CUDA does not run on macOS (on Apple silicon, use --device mps)"
    if sys.platform.startswith("linux") and not os.path.exists("/dev/nvidiactl"):
        return "this machine shows none (no /dev/nvidiactl: no NVIDIA driver is loaded)"
    return None


def cuda_absent_reason(device: str, title: str, present: list[str]) -> str | None:
    """Why a CuPy-based path cannot use this device, or None to use the generic message."""
    if device == "mps" or device == "cpu":
        return f"{title} needs a CUDA GPU (cuda:N); it has no {device} path"
    gpus = [d for d in present if d.startswith("cuda")]
    if device.startswith("cuda") and gpus:
        return f"CuPy sees no {device}; it sees {', '.join(gpus)}"
    if device.startswith("cuda"):  # called in the main process: no CuPy import here
        return "CuPy sees no CUDA GPU: there is none, or no NVIDIA driver that its CUDA runtime can use"
    return None


def free_pinned_pool(cupy: Any) -> None:
    """Give CuPy's cached pinned blocks back, so a sweep up to 1 GiB does not hold every earlier size.

    CuPy keeps the staging block of its last asynchronous copy on a watch list until its next pinned
    allocation: a zero-byte allocation, once the device is idle, releases it to the pool, and the
    pool then frees every block it holds."""
    try:
        cupy.cuda.Device().synchronize()
        cupy.cuda.alloc_pinned_memory(0)
        cupy.get_default_pinned_memory_pool().free_all_blocks()
    except Exception:  # a cache we cannot empty costs host memory, not correctness
        pass


def pooled_pinned_bytes(nbytes: int) -> int:
    """What CuPy's pinned memory pool reserves for a request of `nbytes`: PinnedMemoryPool.malloc
    (cupy/cuda/pinned_memory.pyx) rounds it up to a multiple of 512 bytes, then to the next power of
    two (internal.clp2, since CuPy 5; earlier releases stopped at 512). asarray's staging block and
    pinned_staging's chunk come from that pool: a 33.6 MB batch takes a 64 MiB block."""
    if nbytes <= 0:
        return 0
    return 1 << (-(-nbytes // 512) * 512 - 1).bit_length()


def pinned_staging(cupy: Any, nbytes: int) -> np.ndarray:
    """A pinned host buffer for the verification's read-back, one chunk long (CuPy's pinned pool,
    emptied when the point closes): device-to-host copies into it run at the link's speed."""
    size = min(nbytes, VERIFY_CHUNK_BYTES)
    return np.frombuffer(cupy.cuda.alloc_pinned_memory(size), np.uint8, size)


def read_back(cupy: Any, array: Any) -> ReadBack:
    """The verification's read of a device array: plain device-to-host copies of contiguous
    slices (ndarray.get), which need no kernel, so the check runs without NVRTC."""
    flat = array.reshape(-1)

    def read(offset: int, out: np.ndarray) -> None:
        flat[offset : offset + out.size].get(out=out)

    return read


def is_cuda_out_of_memory(cupy: Any, error: BaseException) -> bool:
    """Device memory, pinned host memory (cudaErrorMemoryAllocation = 2) or host memory ran out."""
    if isinstance(error, (MemoryError, cupy.cuda.memory.OutOfMemoryError)):
        return True
    return isinstance(error, cupy.cuda.runtime.CUDARuntimeError) and getattr(error, "status", None) == 2


class _Lane:
    """One direction of a raw copy: a host buffer as the mode allocates it, a device buffer, and a
    stream with its two events. h2d copies the host buffer to the device; d2h the device buffer back."""

    def __init__(self, cupy: Any, spec: Spec, direction: str) -> None:
        self.cupy, self.direction, self.nbytes = cupy, direction, spec.nbytes
        self.pinned_ptr = self.registered_ptr = 0
        self.pin_s: float | None = None
        self.host_offset: int | None = None
        self.host: np.ndarray | None = None
        self.gpu: Any = None
        self.stream: Any = None
        try:
            self._allocate(spec)
        except BaseException:  # a lane that fails half-made frees what it holds
            self.close()
            raise

    def _allocate(self, spec: Spec) -> None:
        cupy, mode = self.cupy, spec.series.mode
        if mode in PINNED_ALLOCS:
            # cudaHostAlloc, as nvbandwidth allocates, outside CuPy's pinned pool: freed in close(), not cached.
            self.pinned_ptr = cupy.cuda.runtime.hostAlloc(spec.nbytes, PINNED_ALLOCS[mode])
            self.host = np.ctypeslib.as_array((ctypes.c_uint8 * spec.nbytes).from_address(self.pinned_ptr))
            self.host = self.host.reshape(spec.batch_shape)
            fill_pattern(self.host)
        else:
            self.host = make_source(spec.batch_shape, aligned=spec.series.host_buffer == "aligned")
            self.host_offset = address_offset(self.host)
            if mode == "raw_registered":  # pinned in place, as a user pins an array they already have
                started = time.perf_counter()
                cupy.cuda.runtime.hostRegister(self.host.ctypes.data, spec.nbytes, 0)
                self.pin_s, self.registered_ptr = time.perf_counter() - started, self.host.ctypes.data
        self.gpu = cupy.empty(spec.batch_shape, dtype=cupy.uint8)
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.start, self.end = cupy.cuda.Event(), cupy.cuda.Event()

    def copy(self) -> None:
        runtime, host = self.cupy.cuda.runtime, self.host.ctypes.data
        if self.direction == H2D:
            runtime.memcpyAsync(self.gpu.data.ptr, host, self.nbytes, runtime.memcpyHostToDevice, self.stream.ptr)
        else:
            runtime.memcpyAsync(host, self.gpu.data.ptr, self.nbytes, runtime.memcpyDeviceToHost, self.stream.ptr)

    def timed_copy(self) -> None:
        """Queue the copy between the lane's two events, without waiting."""
        self.start.record(self.stream)
        self.copy()
        self.end.record(self.stream)

    def seconds(self) -> float:
        return self.cupy.cuda.get_elapsed_time(self.start, self.end) / 1e3

    def poison(self, expected: np.ndarray) -> None:
        """Before a checked copy: new bytes at the source (the host buffer, or the device buffer filled
        from `expected` for d2h), zeros at the destination, and the stream idle."""
        runtime = self.cupy.cuda.runtime
        if self.direction == H2D:
            fill_pattern(self.host, variant=1)
            self.gpu.fill(0)
        else:
            runtime.memcpyAsync(self.gpu.data.ptr, expected.ctypes.data, self.nbytes, runtime.memcpyHostToDevice, self.stream.ptr)
            self.host.fill(0)
        self.stream.synchronize()

    def check(self, label: str, expected: np.ndarray) -> None:
        """Every byte of the destination against what was sent."""
        if self.direction == H2D:
            check_all(self.host, read_back(self.cupy, self.gpu), label, pinned_staging(self.cupy, self.nbytes))
        else:
            check_all(expected, read_host(self.host), f"{label} (d2h)")

    def close(self) -> None:
        if self.registered_ptr:  # before the array it pins is dropped
            self.cupy.cuda.runtime.hostUnregister(self.registered_ptr)
            self.registered_ptr = 0
        self.gpu = self.host = self.stream = None
        if self.pinned_ptr:  # after dropping the array that views it
            self.cupy.cuda.runtime.freeHost(self.pinned_ptr)
            self.pinned_ptr = 0


class RawCopy(Transfer):
    """h2d or d2h: one lane. bidir: an h2d lane and a d2h lane, each with its own buffers and stream,
    issued together so the two copies run at once; each lane's events time its own direction."""

    def __init__(self, spec: Spec) -> None:
        self.cupy = _cupy()
        self.lanes: list[_Lane] = []
        self.expected: np.ndarray | None = None
        try:
            self._prepare(spec)
        except BaseException:  # out of device memory, say: the pinned buffers must not outlive the point
            self.close()
            raise

    def _prepare(self, spec: Spec) -> None:
        cupy, key = self.cupy, spec.series
        self.label, self.nbytes, self.method, self.transfers = key.label(), spec.nbytes, key.method, 0
        self.device = cupy.cuda.Device(device_index(key.device))
        self.device.use()
        for direction in (H2D, D2H) if key.direction == BIDIR else (key.direction,):
            self.lanes.append(_Lane(cupy, spec, direction))
        if key.direction != H2D:  # what the d2h lane's device buffer is filled with before it is checked
            self.expected = make_source(spec.batch_shape)
        pins = [lane.pin_s for lane in self.lanes if lane.pin_s is not None]
        self.pin_s = sum(pins) if pins else None
        self.host_offset = self.lanes[0].host_offset
        self.bidir = key.direction == BIDIR
        # A pageable copy may wait on its stream while the driver stages it: a held stream would never
        # run, so pageable copies are queued without a hold (their staging is part of what they cost).
        self.hold = key.mode != "raw_pageable"
        for lane in self.lanes:
            if lane.direction == D2H:  # its device buffer holds the pattern from the start, as a source does
                lane.poison(self.expected)

    # The first lane's buffers: what a one-way copy moves, and what callers and tests look at.
    host = property(lambda self: self.lanes[0].host)
    dest = property(lambda self: self.lanes[0].gpu)
    stream = property(lambda self: self.lanes[0].stream)
    pinned_ptr = property(lambda self: self.lanes[0].pinned_ptr)

    def __call__(self) -> float | dict[str, float]:
        for lane in self.lanes:
            lane.timed_copy()
        for lane in self.lanes:
            lane.end.synchronize()
        self.transfers += 1  # a call: one batch each way for bidir, whose bytes count both
        if self.bidir:
            return {lane.direction: lane.seconds() for lane in self.lanes}
        return self.lanes[0].seconds()

    def streamed(self, copies: int) -> float:
        lane = self.lanes[0]  # bidir is timed per call only
        gate = threading.Event()
        if self.hold:
            # A host function that waits for the gate holds the stream: every copy is queued before any runs.
            lane.stream.launch_host_func(lambda _: gate.wait(HOLD_TIMEOUT_S), None)
        began = time.perf_counter()
        try:
            for _ in range(STREAM_WARM_COPIES):
                lane.copy()
            lane.start.record(lane.stream)
            for _ in range(copies):
                lane.copy()
            lane.end.record(lane.stream)
            held = lane.start.done is False
        finally:
            gate.set()
        queueing_s = time.perf_counter() - began
        self.transfers += STREAM_WARM_COPIES + copies
        lane.end.synchronize()
        if self.hold and not held:
            why = (f"queueing blocked until the hold gave up after {HOLD_TIMEOUT_S:g} s: the stream's queue may be full"
                   if queueing_s >= 0.9 * HOLD_TIMEOUT_S else "the hold ended before the copies were queued")  # fmt: skip
            raise RuntimeError(f"the stream was not held while {copies} copies were queued ({why})")
        return lane.seconds()

    def host_span(self) -> tuple[int, int]:
        return self.host.ctypes.data, self.nbytes

    def verify(self) -> None:
        if self.expected is not None:
            fill_pattern(self.expected, variant=2)  # new bytes, not the h2d lane's: crossed lanes cannot match
        for lane in self.lanes:
            lane.poison(self.expected)
        self.device.synchronize()
        self.once()
        if self.dest.data.device_id != self.device.id:
            raise VerificationError(f"{self.label}: data landed on cuda:{self.dest.data.device_id}, not cuda:{self.device.id}")
        for lane in self.lanes:
            lane.check(self.label, self.expected)

    def close(self) -> None:
        for lane in self.lanes:
            lane.close()
        self.expected = None
        free_pinned_pool(self.cupy)


class CudaBackend(Backend):
    name = "cuda"
    title, module, extra = "The raw CUDA reference (CuPy)", "cupy", "cupy"
    default_modes = RAW_MODES
    modes = (*RAW_MODES, "raw_registered", "raw_pinned_wc")
    isolated = True
    cuda_only = True
    host_buffers = ("numpy", "aligned")

    def missing(self) -> str | None:
        return cupy_missing("The raw CUDA reference")

    def sources(self, mode: str) -> tuple[str, ...]:
        return ("pinned",) if mode in PINNED_ALLOCS else self.host_buffers

    def devices(self) -> list[str]:
        return [f"cuda:{i}" for i in range(gpu_count())]

    def absent_reason(self, device: str, present: list[str]) -> str:
        return cuda_absent_reason(device, "the raw CUDA reference", present) or super().absent_reason(device, present)

    def skip_reason(self, key: SeriesKey) -> str | None:
        if key.host_buffer == "pinned" and key.mode not in PINNED_ALLOCS:
            return "a pinned source is what raw_pinned (and raw_pinned_wc) measure; choose it with --mode"
        if not key.device.startswith("cuda"):
            return f"cuda/{key.mode} is CUDA-only: it runs on cuda:N devices, not on {key.device}"
        return None

    def streamed_reason(self, key: SeriesKey) -> str | None:
        return None

    def directions(self, mode: str) -> tuple[str, ...]:
        return DIRECTIONS

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        props = _cupy().cuda.runtime.getDeviceProperties(device_index(key.device))
        name = props.get("name", b"CUDA GPU")
        pinned, streamed = key.mode != "raw_pageable", key.method == STREAMED  # page-locked, however it came to be
        calls = {H2D: "cudaMemcpyAsync(HostToDevice) on a non-blocking stream into a preallocated buffer",
                 D2H: "cudaMemcpyAsync(DeviceToHost) on a non-blocking stream from a device buffer into the host buffer",
                 BIDIR: "cudaMemcpyAsync HostToDevice and DeviceToHost issued together on two non-blocking streams,"
                        " each between buffers of its own"}  # fmt: skip
        info = {"call": calls[key.direction]}
        notes = {
            "raw_pageable": "from pageable memory the driver stages the copy through pinned buffers of its own",
            "raw_registered": "the NumPy array is pinned in place with cudaHostRegister once per point, outside the"
                              " samples; each point's pin_s says what that took",
            "raw_pinned_wc": "write-combined pinned memory (cudaHostAllocWriteCombined), as bandwidthTest --wc: the"
                             " CPU writes it quickly but reads it slowly, so the byte check takes longer",
        }  # fmt: skip
        note = notes.get(key.mode)
        if key.direction == D2H and key.mode == "raw_pageable":
            note = "into pageable memory the driver stages the copy through pinned buffers of its own"
        if key.direction == BIDIR:
            both = ("each call issues a batch each way at once; the point's MB/s is both directions together,"
                    " h2d and d2h MB/s each stream's own events")  # fmt: skip
            note = f"{note}; {both}" if note else both
        if streamed:
            info["hold"] = ("a host function (cudaLaunchHostFunc) waits on the stream until every copy is queued" if pinned
                            else "none: the driver may wait on the stream while it stages a pageable copy")  # fmt: skip
            if not pinned:
                note += "; streamed, the copies are queued without a hold, so the span includes that staging"
        return SeriesInfo(
            device_name=name.decode() if isinstance(name, bytes) else str(name),
            transfer={H2D: HOST_TO_DEVICE, D2H: DEVICE_TO_HOST, BIDIR: BIDIRECTIONAL}[key.direction],
            clock=STREAMED_CLOCK if streamed else "time.perf_counter",
            sync="cudaEventSynchronize on the " + ("end event" if streamed else "event recorded after each copy"),
            device_clock=None if streamed or key.direction == BIDIR else EVENTS,  # streamed, the events are the clock itself
            params=info,
            note=note,
        )

    def host_bytes(self, spec: Spec) -> int:
        """A host buffer per direction, what a d2h copy is checked against, and the verification's
        read-back chunks: an h2d lane's pinned one from CuPy's pool (pooled_pinned_bytes), a d2h
        lane's a plain one."""
        direction = spec.series.direction
        lanes = 2 if direction == BIDIR else 1
        expected = direction != H2D
        chunk = min(spec.nbytes, VERIFY_CHUNK_BYTES)
        return spec.nbytes * (lanes + expected) + pooled_pinned_bytes(chunk) * (direction != D2H) + chunk * expected

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return RawCopy(spec)

    def is_out_of_memory(self, error: BaseException) -> bool:
        return is_cuda_out_of_memory(_cupy(), error)

    def environment(self) -> dict[str, Any]:
        return cuda_environment()
