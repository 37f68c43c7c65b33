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
import threading
import time
from typing import Any

import numpy as np

from xferbench.backends.base import Backend, SeriesInfo, Transfer
from xferbench.buffers import VERIFY_CHUNK_BYTES, ReadBack, address_offset, check_all, fill_pattern, make_source
from xferbench.errors import VerificationError
from xferbench.spec import HOST_TO_DEVICE, STREAMED, SeriesKey, Spec
from xferbench.timing import STREAM_WARM_COPIES

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
        return (f"{title} needs CuPy, which is not installed: pip install 'xferbench[cupy]' (CUDA 12, NVIDIA driver"
                " 525 or newer) or 'xferbench[cupy-cuda13]' (CUDA 13, driver 580 or newer)")  # fmt: skip
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


class RawCopy(Transfer):
    def __init__(self, spec: Spec) -> None:
        self.cupy = _cupy()
        self.pinned_ptr, self.registered_ptr, self.dest, self.host, self.stream = 0, 0, None, None, None
        try:
            self._prepare(spec)
        except BaseException:  # out of device memory, say: the pinned buffer must not outlive the point
            self.close()
            raise

    def _prepare(self, spec: Spec) -> None:
        cupy, key = self.cupy, spec.series
        self.label, self.nbytes, self.method, self.transfers = key.label(), spec.nbytes, key.method, 0
        self.device = cupy.cuda.Device(device_index(key.device))
        self.device.use()
        if key.mode in PINNED_ALLOCS:
            # cudaHostAlloc, as nvbandwidth allocates, outside CuPy's pinned pool: freed in close(), not cached.
            self.pinned_ptr = cupy.cuda.runtime.hostAlloc(spec.nbytes, PINNED_ALLOCS[key.mode])
            self.host = np.ctypeslib.as_array((ctypes.c_uint8 * spec.nbytes).from_address(self.pinned_ptr))
            self.host = self.host.reshape(spec.batch_shape)
            fill_pattern(self.host)
        else:
            self.host = make_source(spec.batch_shape, aligned=key.host_buffer == "aligned")
            self.host_offset = address_offset(self.host)
            if key.mode == "raw_registered":  # pinned in place, as a user pins an array they already have
                started = time.perf_counter()
                cupy.cuda.runtime.hostRegister(self.host.ctypes.data, spec.nbytes, 0)
                self.pin_s, self.registered_ptr = time.perf_counter() - started, self.host.ctypes.data
        # A pageable copy may wait on its stream while the driver stages it: a held stream would never
        # run, so pageable copies are queued without a hold (their staging is part of what they cost).
        self.hold = key.mode != "raw_pageable"
        self.dest = cupy.empty(spec.batch_shape, dtype=cupy.uint8)
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.start, self.end = cupy.cuda.Event(), cupy.cuda.Event()

    def _copy(self) -> None:
        runtime = self.cupy.cuda.runtime
        runtime.memcpyAsync(self.dest.data.ptr, self.host.ctypes.data, self.nbytes, runtime.memcpyHostToDevice, self.stream.ptr)
        self.transfers += 1

    def __call__(self) -> float:
        self.start.record(self.stream)
        self._copy()
        self.end.record(self.stream)
        self.end.synchronize()
        return self.cupy.cuda.get_elapsed_time(self.start, self.end) / 1e3

    def streamed(self, copies: int) -> float:
        gate = threading.Event()
        if self.hold:
            # A host function that waits for the gate holds the stream: every copy is queued before any runs.
            self.stream.launch_host_func(lambda _: gate.wait(HOLD_TIMEOUT_S), None)
        began = time.perf_counter()
        try:
            for _ in range(STREAM_WARM_COPIES):
                self._copy()
            self.start.record(self.stream)
            for _ in range(copies):
                self._copy()
            self.end.record(self.stream)
            held = self.start.done is False
        finally:
            gate.set()
        queueing_s = time.perf_counter() - began
        self.end.synchronize()
        if self.hold and not held:
            why = (f"queueing blocked until the hold gave up after {HOLD_TIMEOUT_S:g} s: the stream's queue may be full"
                   if queueing_s >= 0.9 * HOLD_TIMEOUT_S else "the hold ended before the copies were queued")  # fmt: skip
            raise RuntimeError(f"the stream was not held while {copies} copies were queued ({why})")
        return self.cupy.cuda.get_elapsed_time(self.start, self.end) / 1e3

    def host_span(self) -> tuple[int, int]:
        return self.host.ctypes.data, self.nbytes

    def verify(self) -> None:
        cupy = self.cupy
        fill_pattern(self.host, variant=1)  # new bytes: leftovers from warm-up cannot match
        self.dest.fill(0)
        self.device.synchronize()
        self.once()
        if self.dest.data.device_id != self.device.id:
            raise VerificationError(f"{self.label}: data landed on cuda:{self.dest.data.device_id}, not cuda:{self.device.id}")
        check_all(self.host, read_back(cupy, self.dest), self.label, pinned_staging(cupy, self.nbytes))

    def close(self) -> None:
        if self.registered_ptr:  # before the array it pins is dropped
            self.cupy.cuda.runtime.hostUnregister(self.registered_ptr)
            self.registered_ptr = 0
        self.dest = self.host = self.stream = None
        if self.pinned_ptr:  # after dropping the array that views it
            self.cupy.cuda.runtime.freeHost(self.pinned_ptr)
            self.pinned_ptr = 0
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

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        props = _cupy().cuda.runtime.getDeviceProperties(device_index(key.device))
        name = props.get("name", b"CUDA GPU")
        pinned, streamed = key.mode != "raw_pageable", key.method == STREAMED  # page-locked, however it came to be
        info = {"call": "cudaMemcpyAsync(HostToDevice) on a non-blocking stream into a preallocated buffer"}
        notes = {
            "raw_pageable": "from pageable memory the driver stages the copy through pinned buffers of its own",
            "raw_registered": "the NumPy array is pinned in place with cudaHostRegister once per point, outside the"
                              " samples; each point's pin_s says what that took",
            "raw_pinned_wc": "write-combined pinned memory (cudaHostAllocWriteCombined), as bandwidthTest --wc: the"
                             " CPU writes it quickly but reads it slowly, so the byte check takes longer",
        }  # fmt: skip
        note = notes.get(key.mode)
        if streamed:
            info["hold"] = ("a host function (cudaLaunchHostFunc) waits on the stream until every copy is queued" if pinned
                            else "none: the driver may wait on the stream while it stages a pageable copy")  # fmt: skip
            if not pinned:
                note += "; streamed, the copies are queued without a hold, so the span includes that staging"
        return SeriesInfo(
            device_name=name.decode() if isinstance(name, bytes) else str(name),
            transfer=HOST_TO_DEVICE,
            clock=STREAMED_CLOCK if streamed else "time.perf_counter",
            sync="cudaEventSynchronize on the " + ("end event" if streamed else "event recorded after the copy"),
            device_clock=None if streamed else EVENTS,  # streamed, the events are the clock itself
            params=info,
            note=note,
        )

    def host_bytes(self, spec: Spec) -> int:
        """The source and the verification's pinned read-back chunk."""
        return spec.nbytes + min(spec.nbytes, VERIFY_CHUNK_BYTES)

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return RawCopy(spec)

    def is_out_of_memory(self, error: BaseException) -> bool:
        return is_cuda_out_of_memory(_cupy(), error)

    def environment(self) -> dict[str, Any]:
        return cuda_environment()
