"""`jax`: `jax.device_put(x, device)` then `block_until_ready()`, as JAX users move a NumPy batch.

Modes: device_put. Ops:
- copy: the transfer, waited for with block_until_ready();
- seed: the report's expression in JAX, `device_put(x).astype(float32)[0, 0]` fetched with np.asarray.

JAX has no public device-event clock, so only wall time is recorded. On the CPU, device_put of a
64-byte-aligned array is zero-copy (the jax.Array aliases the NumPy buffer), so there is nothing to
time there: that combination is skipped, and verification fails any other result that aliases.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

from xferbench.backends.base import HOST_TO_DEVICE, HOST_TO_HOST, Backend, SeriesInfo, Transfer
from xferbench.buffers import address_offset, check_arrived, fill_pattern, make_source, sample_indices
from xferbench.environment import cpu_name
from xferbench.errors import VerificationError
from xferbench.spec import SeriesKey, Spec


def _jax() -> Any:
    """Import JAX without letting it take 75% of every GPU up front (its default preallocation)."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # XLA's C++ INFO and WARNING lines; errors still show
    import jax

    return jax


def _gpus() -> list[Any]:
    try:
        return list(_jax().devices("gpu"))
    except RuntimeError:  # no GPU platform: a CPU-only jaxlib, or no CUDA plugin
        return []


def jax_device(device: str) -> Any:
    """xferbench's device id as a JAX device: cpu -> the first CPU device, cuda:N -> the N-th GPU."""
    if device == "cpu":
        return _jax().devices("cpu")[0]
    return _gpus()[int(device.split(":")[1])]


class JaxTransfer(Transfer):
    def __init__(self, spec: Spec) -> None:
        self.jax = _jax()
        key = spec.series
        self.label, self.seed = key.label(), key.op == "seed"
        self.device = jax_device(key.device)
        self.host = make_source(spec.batch_shape, aligned=key.host_buffer == "aligned")
        self.host_offset = address_offset(self.host)

    def _run(self) -> tuple[Any, Any]:
        """One transfer and its wait: the device array, and the seed op's fetched result."""
        moved = self.jax.device_put(self.host, self.device)
        if self.seed:
            return moved, np.asarray(moved.astype(np.float32)[0, 0])  # the fetch waits for copy and cast
        return moved.block_until_ready(), None

    def __call__(self) -> None:
        self._run()

    def verify(self) -> None:
        fill_pattern(self.host, variant=1)  # new bytes: leftovers from warm-up cannot match
        moved, result = self._run()
        if moved.devices() != {self.device}:
            raise VerificationError(f"{self.label}: the result is on {moved.devices()}, not on {self.device}")
        flat_index = sample_indices(self.host.size)

        def read_back() -> np.ndarray:
            if self.host.size < 2**31:  # JAX indexes in int32 unless x64 is enabled
                return np.asarray(moved.reshape(-1)[flat_index.astype(np.int32)])
            return np.asarray(moved).reshape(-1)[flat_index]

        check_arrived(self.host.reshape(-1)[flat_index], read_back(), self.label)
        if self.seed:
            check_arrived(self.host[0, 0].astype(np.float32), result, f"{self.label} result")
        # An array that still aliases the NumPy buffer changes with it: that is no transfer at all.
        fill_pattern(self.host, variant=2)
        if np.array_equal(read_back(), self.host.reshape(-1)[flat_index]):
            raise VerificationError(f"{self.label}: the result shares memory with the NumPy source; nothing was copied")

    def close(self) -> None:
        self.host = self.device = None


class JaxBackend(Backend):
    name = "jax"
    title, module, extra = "JAX", "jax", "jax"
    modes = default_modes = ("device_put",)
    ops = ("copy", "seed")
    isolated = True
    host_buffers = ("numpy", "aligned")

    def devices(self) -> list[str]:
        return ["cpu"] + [f"cuda:{i}" for i in range(len(_gpus()))]

    def absent_reason(self, device: str, present: list[str]) -> str:
        if device == "mps":
            return "xferbench has no JAX path on Apple GPUs (jax-metal is experimental); torch and tf measure MPS"
        if device.startswith("cuda"):  # called in the main process: no JAX import here
            extra = "jax-cuda" if sys.platform.startswith("linux") else "jax"
            return f"JAX sees no CUDA GPU: there is none, or this jaxlib has no CUDA plugin (pip install 'xferbench[{extra}]')"
        return super().absent_reason(device, present)

    def skip_reason(self, key: SeriesKey) -> str | None:
        if key.host_buffer == "pinned":
            return "JAX has no user-facing pinned host memory; torch's pinned modes and cuda/raw_pinned show what pinning buys"
        if key.device == "cpu" and key.host_buffer == "aligned":
            return "on the CPU, jax.device_put of a 64-byte-aligned array is zero-copy (it aliases the buffer): nothing to time"
        return None

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        device = jax_device(key.device)
        on_cpu = key.device == "cpu"
        name = cpu_name() if on_cpu else getattr(device, "device_kind", "CUDA GPU")
        sync = "the result fetched to the host with np.asarray" if key.op == "seed" else "jax.Array.block_until_ready()"
        note = "on the CPU this is JAX's host-side copy of the NumPy array into a buffer of its own" if on_cpu else None
        return SeriesInfo(
            device_name=name,
            transfer=HOST_TO_HOST if on_cpu else HOST_TO_DEVICE,
            clock="time.perf_counter",
            sync=sync,
            params={"jax_device": str(device), "platform": device.platform},
            note=note,
        )

    def host_bytes(self, spec: Spec) -> int:
        """The source; on the CPU JAX's copy of it and the seed op's float32 cast."""
        on_cpu = spec.series.device == "cpu"
        return spec.nbytes * (1 + on_cpu + 4 * (on_cpu and spec.series.op == "seed"))

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return JaxTransfer(spec)

    def is_out_of_memory(self, error: BaseException) -> bool:
        return isinstance(error, MemoryError) or "RESOURCE_EXHAUSTED" in str(error)

    def environment(self) -> dict[str, Any]:
        jax = _jax()
        import jaxlib

        devices = [{"id": f"cuda:{i}", "kind": "cuda", "name": getattr(gpu, "device_kind", "CUDA GPU")}
                   for i, gpu in enumerate(_gpus())]  # fmt: skip
        return {"version": jax.__version__, "jaxlib": getattr(jaxlib, "__version__", None),
                "backend": jax.default_backend(), "devices": devices}  # fmt: skip
