"""`tf`: TensorFlow's transfer of a NumPy batch to a device, eagerly, in tf.function and under XLA.

Modes: eager; function (tf.function); jit (tf.function(jit_compile=True)).
Ops:
- copy: tf.identity(x) under tf.device(target), then tf.test.experimental.sync_devices(), which
  waits for the copy and nothing more (on the CPU no wait is needed, and sync_devices would add
  about 40 µs per call);
- seed: the original report's tf.cast(x, tf.float32)[0, 0] with .numpy() on the result.
TensorFlow turns the NumPy array into a CPU tensor of its own (a host copy) before any device copy,
so on the CPU the path measures that host-side copy. There is no user-facing pinned path.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

import numpy as np

from xferbench.backends.base import Backend, SeriesInfo, Transfer
from xferbench.buffers import ALIAS_PROBE_BYTES, address_offset, check_all, check_arrived, fill_pattern, make_source, read_host
from xferbench.environment import cpu_name
from xferbench.errors import VerificationError
from xferbench.spec import H2D, HOST_TO_DEVICE, HOST_TO_HOST, SeriesKey, Spec

SYNC_DEVICES = "tf.test.experimental.sync_devices()"
SLICE_FETCH = "fetch of the last byte with .numpy()"
CPU_SYNC = "none needed: TensorFlow runs CPU ops synchronously (eager synchronous execution is on)"
_configured = False


def _tf() -> Any:
    """Import TensorFlow quietly, with memory growth so it does not take the whole GPU."""
    global _configured
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # C++ INFO and WARNING lines; errors still show
    import tensorflow as tf

    if not _configured:
        _configured = True
        tf.get_logger().setLevel("ERROR")
        for gpu in tf.config.list_physical_devices("GPU"):
            try:
                tf.config.experimental.set_memory_growth(gpu, True)
            except RuntimeError:  # the GPU is already initialised: growth can no longer change
                pass
    return tf


def tf_device(device: str) -> str:
    """xferbench's device id as a TensorFlow device name: cuda:N -> /GPU:N, mps -> /GPU:0."""
    if device == "cpu":
        return "/CPU:0"
    return f"/GPU:{device.split(':')[1] if ':' in device else 0}"


def sync_for(device: str) -> str:
    """How a copy to this device is waited for."""
    if device == "cpu" and _tf().config.experimental.get_synchronous_execution():
        return CPU_SYNC
    return sync_method()


@functools.cache
def sync_method() -> str:
    """How a device copy is waited for: sync_devices where TensorFlow has it, else a dependent tiny fetch."""
    tf = _tf()
    sync = getattr(getattr(tf.test, "experimental", None), "sync_devices", None)
    if sync is None:  # TensorFlow < 2.13
        return SLICE_FETCH
    try:
        sync()
        return SYNC_DEVICES
    except Exception:  # a pluggable device (tensorflow-metal) that cannot be synchronized this way
        return SLICE_FETCH


def seed_cast_scope(tf: Any, device: str, batch_shape: tuple[int, ...]) -> bool:
    """Whether XLA's optimized program materializes the float32 cast of the whole batch.

    XLA may fuse the slice into the cast, so only item [0, 0] is converted; the series then must
    not claim to time a full-batch cast. Read from the optimized HLO's entry computation, where
    each instruction is a buffer that really exists.
    """
    with tf.device(tf_device(device)):
        function = tf.function(lambda x: tf.cast(x, tf.float32)[0, 0], jit_compile=True)
        hlo = function.experimental_get_compiler_ir(np.zeros(batch_shape, np.uint8))(stage="optimized_hlo")
    entry = hlo.split("ENTRY", 1)[-1]
    return f"f32[{','.join(map(str, batch_shape))}]" in entry


class TFTransfer(Transfer):
    def __init__(self, spec: Spec, sync: str) -> None:
        tf = self.tf = _tf()
        key = spec.series
        self.label, self.seed, self.device, self.sync = key.label(), key.op == "seed", key.device, sync
        self.host = make_source(spec.batch_shape, aligned=key.host_buffer == "aligned")
        self.host_offset = address_offset(self.host)
        target = tf_device(key.device)

        def copy(x: Any) -> Any:
            with tf.device(target):
                return tf.identity(x)

        def seed(x: Any) -> Any:
            with tf.device(target):
                return tf.cast(x, tf.float32)[0, 0]

        body = seed if self.seed else copy
        if key.mode == "eager":
            self.function = body
        else:
            self.function = tf.function(body, jit_compile=key.mode == "jit")

    def _run(self) -> tuple[Any, Any]:
        """One transfer and its wait: the device tensor, and the seed op's fetched result."""
        moved = self.function(self.host)
        if self.seed:
            return moved, moved.numpy()  # the report's fetch: it waits for the copy and the cast
        if self.sync == SYNC_DEVICES:
            self.tf.test.experimental.sync_devices()
        elif self.sync == SLICE_FETCH:
            self.tf.reshape(moved, [-1])[-1:].numpy()
        return moved, None

    def __call__(self) -> None:
        self._run()

    def verify(self) -> None:
        fill_pattern(self.host, variant=1)  # new bytes: leftovers from warm-up cannot match
        moved, result = self._run()
        expected = tf_device(self.device).strip("/").upper()  # CPU:0, GPU:1, ...
        if moved.device.rsplit("/", 1)[-1].upper() != f"DEVICE:{expected}":
            raise VerificationError(f"{self.label}: the result is on {moved.device}, not on {tf_device(self.device)}")
        if self.seed:
            check_arrived(self.host[0, 0].astype(np.float32), result, f"{self.label} result")
            return
        check_all(self.host, read_host(moved.numpy()), self.label)  # read back whole by TensorFlow's own copy
        # A tensor that still aliases the NumPy buffer would change with it: that is no copy at all.
        probe = min(self.host.size, ALIAS_PROBE_BYTES)
        fill_pattern(self.host, variant=2)
        if not np.array_equal(moved.numpy().reshape(-1)[:probe], self.host.reshape(-1)[:probe]):
            return
        raise VerificationError(f"{self.label}: the result shares memory with the NumPy source; nothing was copied")

    def host_span(self) -> tuple[int, int]:
        return self.host.ctypes.data, self.host.size

    def close(self) -> None:
        self.host = self.function = None


class TFBackend(Backend):
    name = "tf"
    title, module, extra = "TensorFlow", "tensorflow", "tf"
    modes = default_modes = ("eager", "function", "jit")
    ops = ("copy", "seed")
    isolated = True
    host_buffers = ("numpy", "aligned")

    def devices(self) -> list[str]:
        gpus = _tf().config.list_physical_devices("GPU")
        if sys.platform == "darwin":
            return ["cpu"] + (["mps"] if gpus else [])  # tensorflow-metal shows the Apple GPU as GPU:0
        return ["cpu"] + [f"cuda:{i}" for i in range(len(gpus))]

    def absent_reason(self, device: str, present: list[str]) -> str:
        if device == "mps" and sys.platform == "darwin":
            return (
                "TensorFlow sees no Apple GPU: install tensorflow-metal (pip install 'xferbench[tf]' on"
                " macOS arm64 with Python <= 3.12; tensorflow-metal supports TensorFlow up to 2.18)"
            )
        if device.startswith("cuda"):  # called in the main process: no TensorFlow import here
            return (
                "TensorFlow sees no CUDA GPU: there is none, this TensorFlow is a CPU-only build, or its CUDA"
                " libraries are missing (on Linux: pip install 'xferbench[tf-cuda]')"
            )
        return super().absent_reason(device, present)

    def skip_reason(self, key: SeriesKey) -> str | None:
        if key.host_buffer == "pinned":
            return "TensorFlow has no user-facing pinned host memory; torch's pinned modes show what pinning buys"
        return None

    def direction_reason(self, key: SeriesKey) -> str | None:
        if key.direction == H2D:
            return None
        return ("tf times host to device only: on the CPU .numpy() returns the tensor's own buffer and copies"
                " nothing, and no GPU run has yet checked a GPU tensor's .numpy() against the raw copy;"
                " cuda, torch, cupy and jax time d2h, and cuda and torch bidir")  # fmt: skip

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        tf = _tf()
        kind = key.device.split(":")[0]
        if kind == "cuda":
            gpu = tf.config.list_physical_devices("GPU")[int(key.device.split(":")[1])]
            name = tf.config.experimental.get_device_details(gpu).get("device_name", "CUDA GPU")
        elif kind == "mps":
            name = f"Apple GPU (tensorflow-metal) on {cpu_name()}"
        else:
            name = cpu_name()
        sync = sync_for(key.device)
        note = None
        info: dict[str, Any] = {"tf_device": tf_device(key.device)}
        if key.op == "seed":
            sync = "the result fetched to the host with .numpy()"
            if key.mode == "jit":
                full = seed_cast_scope(tf, key.device, (2, *key.shape))
                info["xla_casts_full_batch"] = full
                if not full:
                    note = (
                        "XLA fuses the slice into the cast: only item [0, 0] is converted to float32,"
                        " so this times the transfer plus a tiny cast, not a full-batch cast"
                    )
        if kind == "cpu" and not note:
            note = "on the CPU this is TensorFlow's host-side copy of the NumPy array into a tensor of its own" + (
                ", then the cast" if key.op == "seed" else ""
            ) + ("; XLA may copy it once more" if key.mode == "jit" else "")
        return SeriesInfo(
            device_name=name,
            transfer=HOST_TO_HOST if kind == "cpu" else HOST_TO_DEVICE,
            clock="time.perf_counter",
            sync=sync,
            params=info,
            note=note,
        )

    def host_bytes(self, spec: Spec) -> int:
        """The source, TensorFlow's CPU copy of it, XLA's own copy and the verification's read-back;
        on the CPU also the seed op's cast."""
        key = spec.series
        seed_float = key.op == "seed" and key.device == "cpu"
        return spec.nbytes * (3 + (key.mode == "jit") + 4 * seed_float)

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return TFTransfer(spec, sync_for(spec.series.device))

    def is_out_of_memory(self, error: BaseException) -> bool:
        return isinstance(error, (MemoryError, _tf().errors.ResourceExhaustedError))

    def environment(self) -> dict[str, Any]:
        tf = _tf()
        build = dict(tf.sysconfig.get_build_info())
        devices = []
        for index, gpu in enumerate(tf.config.list_physical_devices("GPU")):
            details = tf.config.experimental.get_device_details(gpu)
            device_id = "mps" if sys.platform == "darwin" else f"cuda:{index}"
            capability = details.get("compute_capability")
            devices.append(
                {
                    "id": device_id,
                    "kind": device_id.split(":")[0],
                    "name": details.get("device_name", gpu.name),
                    "capability": ".".join(map(str, capability)) if capability else None,
                }
            )
        return {
            "version": tf.__version__,
            "built_with_cuda": tf.test.is_built_with_cuda(),
            "cuda_build": build.get("cuda_version"),
            "cudnn_build": build.get("cudnn_version"),
            "sync": sync_method(),
            "devices": devices,
        }
