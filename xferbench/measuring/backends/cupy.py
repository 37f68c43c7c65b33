"""`cupy`: `cupy.asarray(x)` of a NumPy batch, as CuPy users move data to the GPU.

Modes: asarray. Ops:
- copy: cupy.asarray(x) on a stream of its own, then that stream is synchronized;
- seed: the report's expression in CuPy, `cupy.asarray(x).astype(float32)[0, 0]` fetched with .get().

Directions: h2d, and d2h: `device_array.get()` of a device array holding the batch, into a fresh
NumPy array per call, as CuPy users bring results back.

CUDA events around each call give the device-side time beside the wall time. asarray allocates a
new device array every call (from CuPy's memory pool, so after warm-up no cudaMalloc is timed).
It first copies the NumPy array into a pinned staging buffer on the host, while the stream is
idle, so the event time includes that host copy too: it agrees with wall time by construction and
is no link figure.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xferbench.measuring.backends.base import Backend, SeriesInfo, Transfer
from xferbench.measuring.backends.cuda import (
    EVENTS,
    _cupy,
    cuda_absent_reason,
    cuda_devices,
    cuda_environment,
    cupy_missing,
    device_index,
    free_pinned_pool,
    gpu_count,
    is_cuda_out_of_memory,
    pinned_staging,
    pooled_pinned_bytes,
    read_back,
)
from xferbench.measuring.buffers import (ALIAS_PROBE_BYTES, VERIFY_CHUNK_BYTES, address_offset, check_all, check_arrived, fill_pattern,
                               make_source, read_host)  # fmt: skip
from xferbench.core.errors import VerificationError
from xferbench.core.spec import D2H, DEVICE_TO_HOST, H2D, HOST_TO_DEVICE, SeriesKey, Spec


class AsArray(Transfer):
    def __init__(self, spec: Spec) -> None:
        cupy = self.cupy = _cupy()
        key = spec.series
        self.label, self.seed = key.label(), key.op == "seed"
        self.device = cupy.cuda.Device(device_index(key.device))
        self.device.use()
        self.host = make_source(spec.batch_shape, aligned=key.host_buffer == "aligned")
        self.host_offset = address_offset(self.host)
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.start, self.end = cupy.cuda.Event(), cupy.cuda.Event()

    def _run(self) -> tuple[Any, Any, float]:
        """One transfer and its wait: the device array, the seed op's host result, device seconds."""
        cupy = self.cupy
        with self.stream:
            self.start.record(self.stream)
            moved = cupy.asarray(self.host)
            result = moved.astype(cupy.float32)[0, 0].get() if self.seed else None
            self.end.record(self.stream)
        self.end.synchronize()
        return moved, result, cupy.cuda.get_elapsed_time(self.start, self.end) / 1e3

    def __call__(self) -> float:
        return self._run()[2]

    def verify(self) -> None:
        fill_pattern(self.host, variant=1)  # new bytes: leftovers from warm-up cannot match
        moved, result, _ = self._run()
        if moved.data.device_id != self.device.id:
            raise VerificationError(f"{self.label}: data landed on cuda:{moved.data.device_id}, not cuda:{self.device.id}")
        check_all(self.host, read_back(self.cupy, moved), self.label, pinned_staging(self.cupy, self.host.size))
        if self.seed:
            check_arrived(self.host[0, 0].astype(np.float32), result, f"{self.label} result")
        # With CUPY_ENABLE_UMP=1 on a machine with HMM or ATS, asarray may wrap the host buffer
        # instead of copying it: an array that changes with its source was never transferred.
        probe = min(self.host.size, ALIAS_PROBE_BYTES)
        sent = self.host.reshape(-1)[:probe].copy()
        fill_pattern(self.host.reshape(-1)[:probe], variant=2)  # the probed bytes only: a whole refill costs a pass over the batch
        if not np.array_equal(moved.reshape(-1)[:probe].get(), sent):
            raise VerificationError(f"{self.label}: the device array shares memory with the NumPy source; nothing was copied")

    def host_span(self) -> tuple[int, int]:
        return self.host.ctypes.data, self.host.size

    def close(self) -> None:
        self.host = self.stream = None
        free_pinned_pool(self.cupy)


class Get(Transfer):
    """d2h: device_array.get() on a stream of its own, into a fresh NumPy array."""

    def __init__(self, spec: Spec) -> None:
        cupy = self.cupy = _cupy()
        self.label = spec.series.label()
        self.device = cupy.cuda.Device(device_index(spec.series.device))
        self.device.use()
        self.expected = make_source(spec.batch_shape)
        self.on_device = cupy.asarray(self.expected)
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.start, self.end = cupy.cuda.Event(), cupy.cuda.Event()
        self.moved: np.ndarray | None = None

    def __call__(self) -> float:
        with self.stream:
            self.start.record(self.stream)
            self.moved = self.on_device.get(stream=self.stream)
            self.end.record(self.stream)
        self.end.synchronize()
        return self.cupy.cuda.get_elapsed_time(self.start, self.end) / 1e3

    def verify(self) -> None:
        fill_pattern(self.expected, variant=2)  # new bytes on the device: leftovers from warm-up cannot match
        self.on_device = self.cupy.asarray(self.expected)
        self.device.synchronize()
        self()
        check_all(self.expected, read_host(self.moved), f"{self.label} (d2h)")
        if self.moved.ctypes.data == self.expected.ctypes.data:
            raise VerificationError(f"{self.label}: .get() handed back the source array; nothing was copied")

    def close(self) -> None:
        self.on_device = self.expected = self.moved = self.stream = None
        free_pinned_pool(self.cupy)


class CupyBackend(Backend):
    name = "cupy"
    title, module, extra = "CuPy", "cupy", "cupy"
    modes = default_modes = ("asarray",)
    ops = ("copy", "seed")
    isolated = True
    cuda_only = True
    host_buffers = ("numpy", "aligned")

    def missing(self) -> str | None:
        return cupy_missing("The cupy path")

    def devices(self) -> list[str]:
        return [f"cuda:{i}" for i in range(gpu_count())]

    def absent_reason(self, device: str, present: list[str]) -> str:
        return cuda_absent_reason(device, "CuPy", present) or super().absent_reason(device, present)

    def skip_reason(self, key: SeriesKey) -> str | None:
        if key.host_buffer == "pinned":
            return "cupy.asarray takes a NumPy array; cuda/raw_pinned and torch's pinned modes show what pinning buys"
        if not key.device.startswith("cuda"):
            return f"cupy/{key.mode} is CUDA-only: it runs on cuda:N devices, not on {key.device}"
        if key.direction == D2H and key.op != "copy":
            return f"the {key.op} op is the report's host-to-device expression; d2h times .get() alone"
        return None

    def directions(self, mode: str) -> tuple[str, ...]:
        return (H2D, D2H)

    def streamed_reason(self, key: SeriesKey) -> str | None:
        return ("cupy.asarray allocates a new device array and stages the batch through pinned memory on every"
                " call, so its copies cannot be queued on a held stream: it is timed per call only;"
                " cuda/raw_pinned and cuda/raw_pageable give CuPy's streamed figures")  # fmt: skip

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        name = next((d["name"] for d in cuda_devices() if d["id"] == key.device), "CUDA GPU")
        sync = "the result fetched with .get()" if key.op == "seed" else "cupy.cuda.Event.synchronize on the copy's stream"
        note = ("asarray stages the array through pinned host memory before the copy; the event time includes"
                " that host copy, so it is no link figure")  # fmt: skip
        if key.direction == D2H:
            note = "d2h: device_array.get(), the reverse of asarray, into a fresh pageable NumPy array per call"
        return SeriesInfo(device_name=name, transfer=DEVICE_TO_HOST if key.direction == D2H else HOST_TO_DEVICE,
                          clock="time.perf_counter", sync=sync, device_clock=EVENTS, note=note)  # fmt: skip

    def host_bytes(self, spec: Spec) -> int:
        """The source and asarray's pinned staging block for it, as CuPy's pinned pool sizes blocks
        (pooled_pinned_bytes); h2d, the verification's pinned read-back chunk; d2h, .get()'s result,
        twice while a call replaces the last one."""
        nbytes = spec.nbytes
        if spec.series.direction == D2H:
            return 3 * nbytes + pooled_pinned_bytes(nbytes)
        return nbytes + pooled_pinned_bytes(nbytes) + pooled_pinned_bytes(min(nbytes, VERIFY_CHUNK_BYTES))

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return Get(spec) if spec.series.direction == D2H else AsArray(spec)

    def is_out_of_memory(self, error: BaseException) -> bool:
        return is_cuda_out_of_memory(_cupy(), error)

    def environment(self) -> dict[str, Any]:
        return cuda_environment()
