"""`jax`: `jax.device_put(x, device)` then `block_until_ready()`, as JAX users move a NumPy batch.

Modes:
- device_put: from a NumPy array, as JAX users move a batch;
- pinned_host: from a jax.Array already in the GPU's pinned host memory (memory_kind="pinned_host",
  in JAX releases that have memory kinds) into its device memory: JAX's own pinned path.
Ops:
- copy: the transfer, waited for with block_until_ready();
- seed: the report's expression in JAX, `device_put(x).astype(float32)[0, 0]` fetched with np.asarray.

Directions: h2d, and d2h for device_put on a GPU: `np.asarray(fresh)` fetches a batch from device
memory, where `fresh` is a new jax.Array made by a jitted device-side copy in the same call: a
jax.Array keeps the host copy its first fetch made, so fetching one array again would time that
cache, not the link. The device-side copy runs at device-memory speed, far above the link's.

JAX has no public device-event clock, so only wall time is recorded. On the CPU, device_put of a
64-byte-aligned array is zero-copy (the jax.Array aliases the NumPy buffer), so there is nothing to
time there: that combination is skipped, and verification fails any other result that aliases.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from typing import Any

import numpy as np

from xferbench.measuring.backends.base import Backend, SeriesInfo, Transfer
from xferbench.measuring.buffers import ALIAS_PROBE_BYTES, GLIBC_LARGE_OFFSET, address_offset, check_all, check_arrived, fill_pattern, make_source, read_host
from xferbench.core.environment import cpu_name
from xferbench.core.errors import NotSupportedHere, VerificationError
from xferbench.core.spec import D2H, DEVICE_TO_HOST, H2D, HOST_TO_DEVICE, HOST_TO_HOST, SeriesKey, Spec

PINNED_HOST = "pinned_host"


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


def pinned_host_reason(device: Any) -> str | None:
    """Why this JAX cannot stage a batch in the device's pinned host memory, or None where it can."""
    kinds = {memory.kind for memory in getattr(device, "addressable_memories", lambda: [])()}
    if PINNED_HOST not in kinds:
        jax = _jax()
        return f"JAX {jax.__version__} offers no {PINNED_HOST} memory on {device} (it has: {', '.join(sorted(kinds)) or 'no memory kinds'})"
    return None


class JaxTransfer(Transfer):
    def __init__(self, spec: Spec) -> None:
        self.jax = _jax()
        key = spec.series
        self.label, self.seed = key.label(), key.op == "seed"
        self.device = jax_device(key.device)
        aligned = key.host_buffer == "aligned"
        # On the CPU JAX wraps a 64-byte-aligned array without copying, so the numpy source takes glibc's
        # large-block placement there whatever this batch's allocation got: there is a copy to time.
        offset = GLIBC_LARGE_OFFSET if key.device == "cpu" and not aligned else None
        self.host = make_source(spec.batch_shape, aligned=aligned, offset=offset)
        self.pinned: Any = None  # the pinned_host mode's source: a jax.Array in the device's pinned host memory
        if key.mode == PINNED_HOST:
            from jax.sharding import SingleDeviceSharding

            self.in_pinned = SingleDeviceSharding(self.device, memory_kind=PINNED_HOST)
            self.target: Any = SingleDeviceSharding(self.device, memory_kind="device")
            self._stage()
        else:
            self.host_offset = address_offset(self.host)
            self.target = self.device

    def _stage(self) -> None:
        """Put the batch into pinned host memory, outside the timed call (as torch pins once)."""
        self.pinned = self.jax.device_put(self.host, self.in_pinned).block_until_ready()

    def _run(self) -> tuple[Any, Any]:
        """One transfer and its wait: the device array, and the seed op's fetched result."""
        moved = self.jax.device_put(self.host if self.pinned is None else self.pinned, self.target)
        if self.seed:
            return moved, np.asarray(moved.astype(np.float32)[0, 0])  # the fetch waits for copy and cast
        return moved.block_until_ready(), None

    def __call__(self) -> None:
        self._run()

    def host_span(self) -> tuple[int, int] | None:
        if self.pinned is None:
            return self.host.ctypes.data, self.host.size
        try:
            return self.pinned.unsafe_buffer_pointer(), self.host.size
        except Exception:  # a JAX that does not expose its buffers' addresses
            return None

    def verify(self) -> None:
        fill_pattern(self.host, variant=1)  # new bytes: leftovers from warm-up cannot match
        if self.pinned is not None:
            self._stage()
        moved, result = self._run()
        if moved.devices() != {self.device}:
            raise VerificationError(f"{self.label}: the result is on {moved.devices()}, not on {self.device}")
        if self.pinned is not None and moved.sharding.memory_kind != "device":
            raise VerificationError(f"{self.label}: the result is in {moved.sharding.memory_kind} memory, not the device's")
        check_all(self.host, read_host(np.asarray(moved)), self.label)  # fetched whole by JAX itself: nothing is compiled
        if self.seed:
            check_arrived(self.host[0, 0].astype(np.float32), result, f"{self.label} result")
        # An array that still aliases its source changes with it: that is no transfer at all.
        probe = min(self.host.size, ALIAS_PROBE_BYTES)
        fill_pattern(self.host.reshape(-1)[:probe], variant=2)  # the probed bytes only: a whole refill costs a pass over the batch
        if self.pinned is None and np.array_equal(np.asarray(moved).reshape(-1)[:probe], self.host.reshape(-1)[:probe]):
            raise VerificationError(f"{self.label}: the result shares memory with the NumPy source; nothing was copied")

    def close(self) -> None:
        self.host = self.device = self.pinned = None


class JaxBack(Transfer):
    """d2h: a device-side copy, then its fetch to host memory (see the module's docstring)."""

    def __init__(self, spec: Spec) -> None:
        jax = self.jax = _jax()
        self.label = spec.series.label()
        self.device = jax_device(spec.series.device)
        self.expected = make_source(spec.batch_shape)  # what the device array holds: the bytes the fetch must bring
        self.on_device = jax.device_put(self.expected, self.device).block_until_ready()
        self.fresh_copy = jax.jit(lambda x: x.copy())  # a new array each call, compiled once in warm-up
        self.moved: np.ndarray | None = None

    def __call__(self) -> None:
        self.moved = np.asarray(self.fresh_copy(self.on_device))  # waits for the copy and the fetch

    def verify(self) -> None:
        fill_pattern(self.expected, variant=2)  # new bytes on the device: leftovers from warm-up cannot match
        self.on_device = self.jax.device_put(self.expected, self.device).block_until_ready()
        self()
        if self.moved.ctypes.data == self.expected.ctypes.data:
            raise VerificationError(f"{self.label}: the fetch handed back the source array; nothing was copied")
        check_all(self.expected, read_host(self.moved), f"{self.label} (d2h)")

    def close(self) -> None:
        self.on_device = self.expected = self.moved = None


class JaxBackend(Backend):
    name = "jax"
    title, module, extra = "JAX", "jax", "jax"
    modes = default_modes = ("device_put", PINNED_HOST)
    ops = ("copy", "seed")
    isolated = True
    host_buffers = ("numpy", "aligned")

    def sources(self, mode: str) -> tuple[str, ...]:
        return ("pinned",) if mode == PINNED_HOST else self.host_buffers

    def devices(self) -> list[str]:
        return ["cpu"] + [f"cuda:{i}" for i in range(len(_gpus()))]

    def absent_reason(self, device: str, present: list[str]) -> str:
        if device == "mps":
            return "xferbench has no JAX path on Apple GPUs (jax-metal is experimental); torch and tf measure MPS"
        if device.startswith("cuda"):  # called in the main process: no JAX import here
            if not sys.platform.startswith("linux"):
                return "JAX sees no CUDA GPU: JAX's CUDA plugins are for Linux"
            return ("JAX sees no CUDA GPU: there is none, or this jaxlib has no CUDA plugin (pip install"
                    " 'xferbench[jax-cuda]' for NVIDIA driver 525 or newer, 'xferbench[jax-cuda13]' for 580 or newer)")  # fmt: skip
        return super().absent_reason(device, present)

    def skip_reason(self, key: SeriesKey) -> str | None:
        if key.host_buffer == "pinned" and key.mode != PINNED_HOST:
            return f"a pinned source is what jax's {PINNED_HOST} mode measures; choose it with --mode"
        if key.mode == PINNED_HOST and not key.device.startswith("cuda"):
            return (f"jax/{PINNED_HOST} needs a CUDA GPU: on {key.device} JAX's pinned_host and device memories"
                    " are both host memory, so there is no device copy to pin for")  # fmt: skip
        if key.direction != H2D and key.op != "copy":
            return f"the {key.op} op is the report's host-to-device expression; d2h times the fetch alone"
        if key.device == "cpu" and key.host_buffer == "aligned":
            return "on the CPU, jax.device_put of a 64-byte-aligned array is zero-copy (it aliases the buffer): nothing to time"
        if key.device == "cpu" and sys.platform == "darwin":
            return ("on macOS a NumPy batch starts on a page (64-byte aligned), and jax.device_put on the CPU wraps"
                    " such an array without copying: nothing to time")  # fmt: skip
        return None

    def directions(self, mode: str) -> tuple[str, ...]:
        return (H2D, D2H) if mode == "device_put" else (H2D,)

    def direction_reason(self, key: SeriesKey) -> str | None:
        if key.direction == D2H and key.mode == "device_put" and not key.device.startswith("cuda"):
            return ("jax d2h needs a GPU: on the CPU a jax.Array's host view is its own buffer, so there is nothing to"
                    " fetch; cuda, torch and cupy time d2h and bidir")  # fmt: skip
        return super().direction_reason(key)

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        device = jax_device(key.device)
        if key.mode == PINNED_HOST:
            why = pinned_host_reason(device)
            if why:
                raise NotSupportedHere(why)
        on_cpu = key.device == "cpu"
        name = cpu_name() if on_cpu else getattr(device, "device_kind", "CUDA GPU")
        sync = "the result fetched to the host with np.asarray" if key.op == "seed" else "jax.Array.block_until_ready()"
        note = ("on the CPU this is JAX's host-side copy of the NumPy array into a buffer of its own, from a source"
                f" {GLIBC_LARGE_OFFSET} bytes past a 64-byte boundary, where glibc puts a large block (JAX wraps a"
                " 64-byte-aligned one without copying)") if on_cpu else None
        transfer = HOST_TO_HOST if on_cpu else HOST_TO_DEVICE
        if key.direction == D2H:
            sync, transfer = "np.asarray waits for the copy and the fetch", DEVICE_TO_HOST
            note = ("d2h: np.asarray(jit(copy)(x)): a device-side copy, then its fetch; a jax.Array keeps the host copy"
                    " its first fetch made, so each call fetches a fresh one")  # fmt: skip
        return SeriesInfo(
            device_name=name,
            transfer=transfer,
            clock="time.perf_counter",
            sync=sync,
            params={"jax_device": str(device), "platform": device.platform},
            note=note,
        )

    def host_bytes(self, spec: Spec) -> int:
        """The source, the pinned_host mode's pinned copy, the verification's fetched copy; on the CPU
        JAX's copy of the source and the seed op's float32 cast."""
        on_cpu = spec.series.device == "cpu"
        pinned = spec.series.mode == PINNED_HOST
        return spec.nbytes * (2 + pinned + on_cpu + 4 * (on_cpu and spec.series.op == "seed"))

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return JaxBack(spec) if spec.series.direction == D2H else JaxTransfer(spec)

    def is_out_of_memory(self, error: BaseException) -> bool:
        return isinstance(error, MemoryError) or "RESOURCE_EXHAUSTED" in str(error)

    def environment(self) -> dict[str, Any]:
        jax = _jax()
        import jaxlib

        gpus = _gpus()
        devices = [{"id": f"cuda:{i}", "kind": "cuda", "name": getattr(gpu, "device_kind", "CUDA GPU")}
                   for i, gpu in enumerate(gpus)]  # fmt: skip
        plugins = {}
        for name in ("jax-cuda12-plugin", "jax-cuda13-plugin"):
            try:
                plugins[name] = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                pass
        return {"version": jax.__version__, "jaxlib": getattr(jaxlib, "__version__", None),
                "backend": jax.default_backend(), "cuda_plugins": plugins,
                "pinned_host": not pinned_host_reason(gpus[0]) if gpus else None, "devices": devices}  # fmt: skip
