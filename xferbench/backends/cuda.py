"""`cuda`: the raw reference, one cudaMemcpyAsync into a preallocated device buffer, timed with CUDA events.

Modes:
- raw_pinned: from page-locked host memory by the copy engine, as nvbandwidth copies. Unlike
  nvbandwidth, which times many queued copies, each call is one copy and its wait, so the launch
  and synchronization latency is in every sample: it weighs at small batches, not at large ones;
- raw_pageable: the same call from an ordinary NumPy array, which the driver stages through its
  own pinned buffers.

Made with CuPy's bindings of the CUDA runtime (cupy.cuda.runtime.memcpyAsync, cupy.cuda.Event):
one wheel (xferbench[cupy]) that also serves the `cupy` path, and that the GPU images already
carry, rather than a second binding (cuda-python) for the same three calls. Every framework curve
is measured against this ceiling, on the same machine in the same run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xferbench.backends.base import HOST_TO_DEVICE, Backend, SeriesInfo, Transfer
from xferbench.buffers import address_offset, check_arrived, fill_pattern, make_source, sample_indices
from xferbench.errors import VerificationError
from xferbench.spec import SeriesKey, Spec

RAW_MODES = ("raw_pinned", "raw_pageable")
EVENTS = "cupy.cuda.Event pair on the copy's stream"


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


def cuda_environment() -> dict[str, Any]:
    cupy = _cupy()
    return {"version": cupy.__version__, "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
            "devices": cuda_devices()}  # fmt: skip


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
    """Give CuPy's cached pinned blocks back, so a sweep up to 1 GiB does not hold every earlier size."""
    try:
        cupy.get_default_pinned_memory_pool().free_all_blocks()
    except Exception:  # a cache we cannot empty costs host memory, not correctness
        pass


def is_cuda_out_of_memory(cupy: Any, error: BaseException) -> bool:
    """Device memory, pinned host memory (cudaErrorMemoryAllocation = 2) or host memory ran out."""
    if isinstance(error, (MemoryError, cupy.cuda.memory.OutOfMemoryError)):
        return True
    return isinstance(error, cupy.cuda.runtime.CUDARuntimeError) and getattr(error, "status", None) == 2


class RawCopy(Transfer):
    def __init__(self, spec: Spec) -> None:
        cupy = self.cupy = _cupy()
        key = spec.series
        self.label, self.nbytes = key.label(), spec.nbytes
        self.device = cupy.cuda.Device(device_index(key.device))
        self.device.use()
        if key.mode == "raw_pinned":
            self.pinned = cupy.cuda.alloc_pinned_memory(spec.nbytes)
            self.host = np.frombuffer(self.pinned, np.uint8, spec.nbytes).reshape(spec.batch_shape)
            fill_pattern(self.host)
        else:
            self.pinned = None
            self.host = make_source(spec.batch_shape, aligned=key.host_buffer == "aligned")
            self.host_offset = address_offset(self.host)
        self.dest = cupy.empty(spec.batch_shape, dtype=cupy.uint8)
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.start, self.end = cupy.cuda.Event(), cupy.cuda.Event()

    def __call__(self) -> float:
        runtime = self.cupy.cuda.runtime
        self.start.record(self.stream)
        runtime.memcpyAsync(self.dest.data.ptr, self.host.ctypes.data, self.nbytes, runtime.memcpyHostToDevice, self.stream.ptr)
        self.end.record(self.stream)
        self.end.synchronize()
        return self.cupy.cuda.get_elapsed_time(self.start, self.end) / 1e3

    def verify(self) -> None:
        fill_pattern(self.host, variant=1)  # new bytes: leftovers from warm-up cannot match
        self.dest.fill(0)
        self.device.synchronize()
        self()
        flat_index = sample_indices(self.host.size)
        got = self.dest.reshape(-1)[self.cupy.asarray(flat_index)].get()
        check_arrived(self.host.reshape(-1)[flat_index], got, self.label)
        if self.dest.data.device_id != self.device.id:
            raise VerificationError(f"{self.label}: data landed on cuda:{self.dest.data.device_id}, not cuda:{self.device.id}")

    def close(self) -> None:
        self.dest = self.host = self.pinned = self.stream = None
        free_pinned_pool(self.cupy)


class CudaBackend(Backend):
    name = "cuda"
    title, module, extra = "The raw CUDA reference (CuPy)", "cupy", "cupy"
    modes = default_modes = RAW_MODES
    isolated = True
    cuda_only = True
    host_buffers = ("numpy", "aligned")

    def sources(self, mode: str) -> tuple[str, ...]:
        return ("pinned",) if mode == "raw_pinned" else self.host_buffers

    def devices(self) -> list[str]:
        return [f"cuda:{i}" for i in range(gpu_count())]

    def absent_reason(self, device: str, present: list[str]) -> str:
        return cuda_absent_reason(device, "the raw CUDA reference", present) or super().absent_reason(device, present)

    def skip_reason(self, key: SeriesKey) -> str | None:
        if key.host_buffer == "pinned" and key.mode != "raw_pinned":
            return "a pinned source is what raw_pinned measures; choose it with --mode"
        if not key.device.startswith("cuda"):
            return f"cuda/{key.mode} is CUDA-only: it runs on cuda:N devices, not on {key.device}"
        return None

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        props = _cupy().cuda.runtime.getDeviceProperties(device_index(key.device))
        name = props.get("name", b"CUDA GPU")
        return SeriesInfo(
            device_name=name.decode() if isinstance(name, bytes) else str(name),
            transfer=HOST_TO_DEVICE,
            clock="time.perf_counter",
            sync="cudaEventSynchronize on the event recorded after the copy",
            device_clock=EVENTS,
            params={"call": "cudaMemcpyAsync(HostToDevice) on a non-blocking stream into a preallocated buffer"},
            note=None if key.mode == "raw_pinned" else "from pageable memory the driver stages the copy through pinned buffers of its own",
        )

    def host_bytes(self, spec: Spec) -> int:
        return spec.nbytes

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return RawCopy(spec)

    def is_out_of_memory(self, error: BaseException) -> bool:
        return is_cuda_out_of_memory(_cupy(), error)

    def environment(self) -> dict[str, Any]:
        return cuda_environment()
