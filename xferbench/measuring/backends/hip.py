"""`hip`: the raw reference on an AMD GPU, one hipMemcpyAsync into a preallocated device buffer, timed with HIP events.

Modes:
- raw_pinned: from page-locked host memory (hipHostMalloc), copied by the GPU's DMA engine;
- raw_pageable: the same call from an ordinary NumPy array, which HIP stages through pinned buffers of its own.
Each copies host to device, or with -d d2h device to host (into the same kinds of host buffer). Each
sample is one copy and its wait (per call): the launch and synchronization latency is in every sample.

Made with ctypes over HIP's own runtime library, libamdhip64, rather than CuPy's ROCm build: CuPy's ROCm
wheels are made for single ROCm releases (cupy-rocm-5-0, cupy-rocm-7-0; none for ROCm 6, where it must be
built from source), whereas PyTorch for ROCm bundles libamdhip64 in torch/lib, and every ROCm install has
it in /opt/rocm/lib. Each
function is declared with its prototype from hip_runtime_api.h before it is called: without argtypes,
ctypes would pass a 64-bit pointer as a C int. The device ids are PyTorch's (cuda:N): HIP numbers the
GPUs as PyTorch for ROCm does (both follow HIP_VISIBLE_DEVICES), so this ceiling and the torch curves
share one device entry.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.util
import os
import sys
from ctypes import POINTER, byref, c_char_p, c_float, c_int, c_size_t, c_uint, c_void_p
from typing import Any

import numpy as np

from xferbench.core.spec import D2H, DEVICE_TO_HOST, H2D, HOST_TO_DEVICE, SeriesKey, Spec
from xferbench.core.vendors import AMD
from xferbench.measuring.backends.base import Backend, SeriesInfo, Transfer
from xferbench.measuring.buffers import VERIFY_CHUNK_BYTES, address_offset, check_all, fill_pattern, make_source, read_host

LIBRARY = "libamdhip64.so"
RAW_MODES = ("raw_pinned", "raw_pageable")
HOST_TO_DEVICE_KIND, DEVICE_TO_HOST_KIND = 1, 2  # hipMemcpyHostToDevice, hipMemcpyDeviceToHost
STREAM_NON_BLOCKING = 1  # hipStreamNonBlocking: no implicit wait on the null stream
OUT_OF_MEMORY, NO_DEVICE = 2, 100  # hipErrorOutOfMemory, hipErrorNoDevice
EVENTS = "hipEvent pair on the copy's stream (hipEventElapsedTime)"
# Each function used, as hip_runtime_api.h declares it (every one returns hipError_t, an int enum).
PROTOTYPES: dict[str, tuple[Any, ...]] = {
    "hipGetDeviceCount": (POINTER(c_int),),
    "hipSetDevice": (c_int,),
    "hipDeviceGetName": (c_char_p, c_int, c_int),
    "hipDeviceGetPCIBusId": (c_char_p, c_int, c_int),
    "hipRuntimeGetVersion": (POINTER(c_int),),
    "hipMalloc": (POINTER(c_void_p), c_size_t),
    "hipFree": (c_void_p,),
    "hipHostMalloc": (POINTER(c_void_p), c_size_t, c_uint),
    "hipHostFree": (c_void_p,),
    "hipMemset": (c_void_p, c_int, c_size_t),
    "hipMemcpy": (c_void_p, c_void_p, c_size_t, c_int),
    "hipMemcpyAsync": (c_void_p, c_void_p, c_size_t, c_int, c_void_p),
    "hipStreamCreateWithFlags": (POINTER(c_void_p), c_uint),
    "hipStreamDestroy": (c_void_p,),
    "hipEventCreate": (POINTER(c_void_p),),
    "hipEventDestroy": (c_void_p,),
    "hipEventRecord": (c_void_p, c_void_p),
    "hipEventSynchronize": (c_void_p,),
    "hipEventElapsedTime": (POINTER(c_float), c_void_p, c_void_p),
    "hipDeviceSynchronize": (),
}


class HipError(RuntimeError):
    """A HIP call that returned an error: its name, status and HIP's own words for it."""

    def __init__(self, call: str, status: int, text: str) -> None:
        super().__init__(f"{call} failed: {text} (hipError {status})")
        self.status = status


@functools.cache  # find_library runs ldconfig: once per process is enough
def library_paths() -> list[str]:
    """Where libamdhip64 is, best first: the one PyTorch for ROCm bundles (torch/lib, found without importing
    torch), then ROCm's own ($ROCM_PATH/lib, /opt/rocm/lib), then the loader's search path."""
    found = []
    spec = importlib.util.find_spec("torch")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found.append(os.path.join(folder, "lib", LIBRARY))
    for root in (os.environ.get("ROCM_PATH"), "/opt/rocm"):
        if root:
            found.append(os.path.join(root, "lib", LIBRARY))
    paths = [path for path in dict.fromkeys(found) if os.path.isfile(path)]
    system = ctypes.util.find_library("amdhip64") if sys.platform == "linux" else None
    return paths + ([system] if system and system not in paths else [])


class Runtime:
    """libamdhip64 with every function of PROTOTYPES declared; call() raises HipError on a failure."""

    def __init__(self, path: str) -> None:
        self.path, self.lib = path, ctypes.CDLL(path)
        for name, argtypes in PROTOTYPES.items():
            function = getattr(self.lib, name)
            function.argtypes, function.restype = list(argtypes), c_int
        self.lib.hipGetErrorString.argtypes, self.lib.hipGetErrorString.restype = [c_int], c_char_p

    def call(self, name: str, *args: Any) -> None:
        status = getattr(self.lib, name)(*args)
        if status != 0:
            text = self.lib.hipGetErrorString(status)
            raise HipError(name, status, text.decode() if text else "unknown error")

    def device_count(self) -> int:
        count = c_int(0)
        try:
            self.call("hipGetDeviceCount", byref(count))
        except HipError as error:
            if error.status == NO_DEVICE:
                return 0
            raise
        return count.value

    def text(self, name: str, index: int) -> str | None:
        """A string HIP writes into a caller's buffer (hipDeviceGetName, hipDeviceGetPCIBusId)."""
        buffer = ctypes.create_string_buffer(256)
        try:
            self.call(name, buffer, len(buffer), index)
        except HipError:
            return None
        return buffer.value.decode(errors="replace") or None

    def version(self) -> str:
        """HIP's runtime version, '6.4.43483' (HIP_VERSION: major * 10^7 + minor * 10^5 + patch)."""
        number = c_int(0)
        self.call("hipRuntimeGetVersion", byref(number))
        return f"{number.value // 10**7}.{number.value // 10**5 % 100}.{number.value % 10**5}"

    def pointer(self, name: str, *args: Any) -> int:
        """What a HIP allocator or constructor writes to its first argument (a pointer or a handle)."""
        made = c_void_p()
        self.call(name, byref(made), *args)
        if not made.value:
            raise HipError(name, 0, "returned a null pointer")
        return made.value


@functools.cache
def runtime() -> Runtime:
    paths = library_paths()
    if not paths:
        raise HipError("dlopen", 0, f"{LIBRARY} was not found")
    return Runtime(paths[0])


def device_index(device: str) -> int:
    return int(device.split(":")[1])


def amd_device_name(hip: Runtime, index: int) -> str:
    name = hip.text("hipDeviceGetName", index) or "AMD GPU"
    return name if name.upper().startswith("AMD") else f"AMD {name}"


class HipCopy(Transfer):
    """One hipMemcpyAsync per call between two events on a non-blocking stream of its own: host to device,
    or device to host (d2h: the device buffer holds `expected`, and the host buffer is the destination)."""

    def __init__(self, spec: Spec) -> None:
        self.hip = runtime()
        key = spec.series
        self.label, self.nbytes, self.method, self.transfers = key.label(), spec.nbytes, key.method, 0
        self.d2h = key.direction == D2H
        self.pinned = self.gpu = self.stream = self.start = self.end = 0
        self.host: np.ndarray | None = None
        self.expected: np.ndarray | None = None
        try:
            self._prepare(spec)
        except BaseException:  # out of device memory, say: what was made must not outlive the point
            self.close()
            raise

    def _prepare(self, spec: Spec) -> None:
        hip, key = self.hip, spec.series
        hip.call("hipSetDevice", device_index(key.device))
        if key.mode == "raw_pinned":
            self.pinned = hip.pointer("hipHostMalloc", spec.nbytes, 0)  # hipHostMallocDefault
            self.host = np.ctypeslib.as_array((ctypes.c_uint8 * spec.nbytes).from_address(self.pinned)).reshape(spec.batch_shape)
            fill_pattern(self.host)
        else:
            self.host = make_source(spec.batch_shape, aligned=key.host_buffer == "aligned")
            self.host_offset = address_offset(self.host)
        self.gpu = hip.pointer("hipMalloc", spec.nbytes)
        self.stream = hip.pointer("hipStreamCreateWithFlags", STREAM_NON_BLOCKING)
        self.start, self.end = hip.pointer("hipEventCreate"), hip.pointer("hipEventCreate")
        if self.d2h:  # the device buffer holds bytes to bring back from the start, as a source does
            self.expected = make_source(spec.batch_shape)
            hip.call("hipMemcpy", self.gpu, self.expected.ctypes.data, self.nbytes, HOST_TO_DEVICE_KIND)

    def __call__(self) -> float:
        hip = self.hip
        hip.call("hipEventRecord", self.start, self.stream)
        if self.d2h:
            hip.call("hipMemcpyAsync", self.host.ctypes.data, self.gpu, self.nbytes, DEVICE_TO_HOST_KIND, self.stream)
        else:
            hip.call("hipMemcpyAsync", self.gpu, self.host.ctypes.data, self.nbytes, HOST_TO_DEVICE_KIND, self.stream)
        hip.call("hipEventRecord", self.end, self.stream)
        hip.call("hipEventSynchronize", self.end)
        self.transfers += 1
        elapsed = c_float(0.0)
        hip.call("hipEventElapsedTime", byref(elapsed), self.start, self.end)
        return elapsed.value / 1e3

    def host_span(self) -> tuple[int, int]:
        return self.host.ctypes.data, self.nbytes

    def verify(self) -> None:
        hip = self.hip
        if self.d2h:  # new bytes on the device, zeros in the host buffer, then one copy back and every byte compared
            fill_pattern(self.expected, variant=2)
            hip.call("hipMemcpy", self.gpu, self.expected.ctypes.data, self.nbytes, HOST_TO_DEVICE_KIND)
            self.host.fill(0)
            self.once()
            check_all(self.expected, read_host(self.host), f"{self.label} (d2h)")
            return
        fill_pattern(self.host, variant=1)  # new bytes: leftovers from warm-up cannot match
        hip.call("hipMemset", self.gpu, 0, self.nbytes)
        hip.call("hipDeviceSynchronize")  # the memset ran on the null stream, which a non-blocking stream does not wait for
        self.once()

        def read(offset: int, out: np.ndarray) -> None:  # a plain device-to-host copy, no kernel
            hip.call("hipMemcpy", out.ctypes.data, self.gpu + offset, out.size, DEVICE_TO_HOST_KIND)

        check_all(self.host, read, self.label, np.empty(min(self.nbytes, VERIFY_CHUNK_BYTES), np.uint8))

    def close(self) -> None:
        hip = self.hip
        for name, handle in (("hipEventDestroy", self.start), ("hipEventDestroy", self.end), ("hipStreamDestroy", self.stream),
                             ("hipFree", self.gpu)):  # fmt: skip
            if handle:
                hip.call(name, handle)
        self.start = self.end = self.stream = self.gpu = 0
        self.host = self.expected = None
        if self.pinned:  # after dropping the array that views it
            hip.call("hipHostFree", self.pinned)
            self.pinned = 0


class HipBackend(Backend):
    name = "hip"
    title = "The raw HIP reference (hipMemcpyAsync)"
    default_modes = modes = RAW_MODES
    isolated = True
    cuda_only = True  # AMD GPUs are cuda:N to PyTorch for ROCm, and here too
    host_buffers = ("numpy", "aligned")

    def missing(self) -> str | None:
        if library_paths():
            return None
        return (f"the raw HIP reference needs {LIBRARY}, HIP's runtime: install PyTorch for ROCm, which bundles it"
                " (pip install torch --index-url https://download.pytorch.org/whl/rocm6.4), or ROCm itself into /opt/rocm"
                " (or set ROCM_PATH)")  # fmt: skip

    def sources(self, mode: str) -> tuple[str, ...]:
        return ("pinned",) if mode == "raw_pinned" else self.host_buffers

    def devices(self) -> list[str]:
        return [f"cuda:{i}" for i in range(runtime().device_count())]

    def absent_reason(self, device: str, present: list[str]) -> str:
        if not device.startswith("cuda"):
            return f"the raw HIP reference runs on an AMD GPU (cuda:N with ROCm); it has no {device} path"
        if present:
            return f"HIP sees no {device}; it sees {', '.join(present)}"
        return "HIP sees no AMD GPU: there is none, or the amdgpu driver is not loaded (no /dev/kfd)"

    def skip_reason(self, key: SeriesKey) -> str | None:
        if key.host_buffer == "pinned" and key.mode != "raw_pinned":
            return "a pinned source is what raw_pinned measures; choose it with --mode"
        if not key.device.startswith("cuda"):
            return f"hip/{key.mode} runs on AMD GPUs (cuda:N with ROCm), not on {key.device}"
        return None

    def directions(self, mode: str) -> tuple[str, ...]:
        return (H2D, D2H)

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        hip = runtime()
        d2h = key.direction == D2H
        call = ("hipMemcpyAsync(DeviceToHost) on a non-blocking stream from a device buffer into the host buffer" if d2h
                else "hipMemcpyAsync(HostToDevice) on a non-blocking stream into a preallocated buffer")  # fmt: skip
        info = {"call": call, "hip": hip.version(), "library": hip.path}
        note = None
        if key.mode == "raw_pageable":
            note = f"{'into' if d2h else 'from'} pageable memory HIP stages the copy through pinned buffers of its own"
        return SeriesInfo(
            device_name=amd_device_name(hip, device_index(key.device)),
            transfer=DEVICE_TO_HOST if d2h else HOST_TO_DEVICE,
            clock="time.perf_counter",
            sync="hipEventSynchronize on the event recorded after each copy",
            device_clock=EVENTS,
            params=info,
            note=note,
        )

    def host_bytes(self, spec: Spec) -> int:
        """The host buffer and the verification's read-back chunk; for d2h, what the copy is checked against."""
        return spec.nbytes * (1 + (spec.series.direction == D2H)) + min(spec.nbytes, VERIFY_CHUNK_BYTES)

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return HipCopy(spec)

    def is_out_of_memory(self, error: BaseException) -> bool:
        return isinstance(error, MemoryError) or isinstance(error, HipError) and error.status == OUT_OF_MEMORY

    def environment(self) -> dict[str, Any]:
        hip = runtime()
        version = hip.version()  # HIP's major.minor is its ROCm release's: HIP 6.4.43483 ships in ROCm 6.4.x
        devices = [{"id": f"cuda:{i}", "kind": "cuda", "name": amd_device_name(hip, i), "vendor": AMD,
                    "runtime": "ROCm " + ".".join(version.split(".")[:2]), "hip": version,
                    "pci_bus_id": hip.text("hipDeviceGetPCIBusId", i)} for i in range(hip.device_count())]  # fmt: skip
        return {"hip": version, "library": hip.path, "devices": devices}
