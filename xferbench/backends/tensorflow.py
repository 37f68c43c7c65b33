"""`tf`: TensorFlow's transfer of a NumPy batch to a device, eagerly, in tf.function and under XLA.

Modes: eager; function (tf.function); jit (tf.function(jit_compile=True), experimental_compile=True
before TensorFlow 2.5).
Ops:
- copy: tf.identity(x) under tf.device(target), called under that scope too;
- seed: the original report's tf.cast(x, tf.float32)[0, 0] with .numpy() on the result.

What each mode's call copies (TensorFlow 2.13 to 2.21, from its source): in every mode the device
copy is the NumPy argument's conversion, made under the call's device scope before anything runs on
the device. The conversion is tf.constant's (eager: the op's input; function and jit: the argument,
through TensorSpec.to_tensors), which runs an _EagerConst op on the scope's device; the eager runtime
copies that op's host input to the device (EagerCopyToDevice, done only once the device's event
manager has seen the copy end). A user's unscoped call converts the same way on the default device,
which is GPU:0 where there is one (CUDA or tensorflow-metal). A function's _Arg then already holds
the device tensor and its Identity copies nothing; a jit call then queues XLA's launch. So no
device-wide sync is added: the one TensorFlow offers, tf.test.experimental.sync_devices(), waits on
every device's compute stream rather than the copy's, and on a PluggableDevice (tensorflow-metal) it
is a no-op.

Before any device copy the batch is copied on the host: NumPy copies the array as TensorFlow converts
it (every call, aligned or not), and TF_NewTensor copies that again unless it is aligned for Eigen.
On the CPU the path is therefore a host-side copy. There is no user-facing pinned path.
"""

from __future__ import annotations

import inspect
import os
import sys
from typing import Any

import numpy as np

from xferbench.backends.base import Backend, SeriesInfo, Transfer
from xferbench.buffers import ALIAS_PROBE_BYTES, address_offset, check_all, check_arrived, fill_pattern, make_source, read_host
from xferbench.environment import apple_gpu_name, apple_silicon, cpu_name, pci_key
from xferbench.errors import NotSupportedHere, VerificationError
from xferbench.spec import H2D, HOST_TO_DEVICE, HOST_TO_HOST, SeriesKey, Spec, usual_source

CPU_SYNC = "none needed: TensorFlow runs CPU ops synchronously (eager synchronous execution is on)"
COPY_WAITS = ("TensorFlow's own: the call's host-to-device copy is the NumPy argument's conversion (an _EagerConst on the"
              " device, whose host input EagerCopyToDevice copies, done once the device's event manager has seen it end),"
              " before anything runs on the device; no device-wide sync is added")
JIT_WAITS = ("TensorFlow's own for the copy: the argument's conversion (an _EagerConst on the device, copied by"
             " EagerCopyToDevice) is done before XLA's launch; the compiled computation is only queued,"
             " and no device-wide sync is added")
# The keyword that asks tf.function for XLA: jit_compile from TensorFlow 2.5, experimental_compile in 2.2 to 2.4.
COMPILE_KEYWORDS = ("jit_compile", "experimental_compile")
# What a call does on the host before the DMA, said under every GPU series: the gap to torch is not all link.
HOST_COPIES = ("each call copies the batch on the host before the device copy: NumPy copies the array as TensorFlow"
               " converts it, and TensorFlow copies that again unless it is aligned for Eigen; the device copy then"
               " starts from pageable memory")
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


def sync_for(device: str, mode: str) -> str:
    """What a copy's call waits for before it returns, by device and mode."""
    if device == "cpu" and _tf().config.experimental.get_synchronous_execution():
        return CPU_SYNC
    return JIT_WAITS if mode == "jit" else COPY_WAITS


def onednn_enabled() -> bool | None:
    """Whether TensorFlow uses oneDNN here (its CPU allocator is then a pool, which changes where a host
    copy's page faults come from). It depends on TF_ENABLE_ONEDNN_OPTS and, unset, on the CPU's features;
    None where this TensorFlow cannot say."""
    try:
        from tensorflow.python.util import _pywrap_util_port

        return bool(_pywrap_util_port.IsMklEnabled())
    except (ImportError, AttributeError):
        return None


def physical_descriptions() -> dict[str, str]:
    """Each GPU's physical description as TensorFlow gives it ('device: 0, name: ..., pci bus id:
    0000:3b:00.0, compute capability: 9.0'), by TensorFlow's device name ('/device:GPU:0').

    device_lib builds devices from a session config of its own, and TensorFlow keeps one GPU allocator
    per process: the eager context makes its GPUs first (with memory growth), and the config asks for
    growth too, so listing never reserves the GPUs' memory."""
    from tensorflow.python.client import device_lib

    tf = _tf()
    tf.config.list_logical_devices("GPU")
    config = tf.compat.v1.ConfigProto(gpu_options=tf.compat.v1.GPUOptions(allow_growth=True))
    return {d.name: d.physical_device_desc for d in device_lib.list_local_devices(config) if d.device_type == "GPU"}


def desc_field(description: str, name: str) -> str | None:
    """One 'name: value' field of a physical device description, or None."""
    for part in description.split(", "):
        key, sep, value = part.partition(": ")
        if sep and key.strip() == name:
            return value.strip() or None
    return None


def jit_on_cpu_command(key: SeriesKey) -> str:
    """The sweep that runs this jit series on the CPU instead, for a device XLA cannot compile for."""
    parts = ["xferbench sweep -f tf --jit --device cpu"]
    if key.op != "copy":
        parts.append(f"--op {key.op}")
    if key.host_buffer != usual_source(key.framework, key.mode):
        parts.append(f"--host-buffer {key.host_buffer}")
    return " ".join(parts)


def compile_options(tf: Any, mode: str) -> dict[str, bool]:
    """tf.function's keywords for a mode: XLA's only under jit, named as this TensorFlow names it.

    Passing jit_compile=False to every function would make the function mode fail too on a
    TensorFlow older than 2.5, whose tf.function rejects the unknown keyword."""
    if mode != "jit":
        return {}
    try:
        accepted = inspect.signature(tf.function).parameters
    except (TypeError, ValueError):  # no signature to read: the current keyword
        return {COMPILE_KEYWORDS[0]: True}
    for keyword in COMPILE_KEYWORDS:
        if keyword in accepted:
            return {keyword: True}
    raise NotSupportedHere(
        f"tf jit needs tf.function(jit_compile=True) (TensorFlow 2.5 and later) or experimental_compile=True"
        f" (2.2 to 2.4), and TensorFlow {getattr(tf, '__version__', '?')} has neither; install tensorflow>=2.13"
    )


def seed_cast_scope(tf: Any, device: str, batch_shape: tuple[int, ...]) -> bool | None:
    """Whether XLA's optimized program materializes the float32 cast of the whole batch; None where
    this TensorFlow cannot show that program.

    XLA may fuse the slice into the cast, so only item [0, 0] is converted; the series then must
    not claim to time a full-batch cast. Read from the optimized HLO's entry computation, where
    each instruction is a buffer that really exists.
    """
    with tf.device(tf_device(device)):
        function = tf.function(lambda x: tf.cast(x, tf.float32)[0, 0], **compile_options(tf, "jit"))
        if not hasattr(function, "experimental_get_compiler_ir"):
            return None
        hlo = function.experimental_get_compiler_ir(np.zeros(batch_shape, np.uint8))(stage="optimized_hlo")
    entry = hlo.split("ENTRY", 1)[-1]
    return f"f32[{','.join(map(str, batch_shape))}]" in entry


class TFTransfer(Transfer):
    def __init__(self, spec: Spec) -> None:
        tf = self.tf = _tf()
        key = spec.series
        self.label, self.seed, self.device = key.label(), key.op == "seed", key.device
        self.host = make_source(spec.batch_shape, aligned=key.host_buffer == "aligned")
        self.host_offset = address_offset(self.host)
        target = self.target = tf_device(key.device)

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
            self.function = tf.function(body, **compile_options(tf, key.mode))

    def _run(self) -> tuple[Any, Any]:
        """One transfer and its wait: the device tensor, and the seed op's fetched result.

        The call itself runs under the target's device scope, which places the argument's conversion,
        the copy, on the target, as a user's unscoped call does on the default device (GPU:0). A
        jit_compile=True function also ignores the tf.device inside its body and runs where it is
        called, and a plain tf.function's result lands there too: without the scope every series
        would end on GPU:0 whatever its device (on two logical CPUs, on the first one)."""
        with self.tf.device(self.target):
            moved = self.function(self.host)
        if self.seed:
            return moved, moved.numpy()  # the report's fetch: it waits for the copy and the cast
        return moved, None

    def __call__(self) -> None:
        self._run()

    def verify(self) -> None:
        fill_pattern(self.host, variant=1)  # new bytes: leftovers from warm-up cannot match
        moved, result = self._run()
        expected = self.target.strip("/").upper()  # CPU:0, GPU:1, ...
        if moved.device.rsplit("/", 1)[-1].upper() != f"DEVICE:{expected}":
            raise VerificationError(f"{self.label}: the result is on {moved.device}, not on {self.target}")
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
        if key.mode == "jit" and key.device == "mps":
            return ("XLA has no compiler for tensorflow-metal's GPU (jit_compile=True fails with 'Could not find"
                    " compiler for platform METAL'); eager and function run there; for XLA on this Mac's CPU"
                    f" (host to host) run: {jit_on_cpu_command(key)}")  # fmt: skip
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
            name = apple_gpu_name()  # the Mac's one name for its GPU, whichever framework reached it
        else:
            name = cpu_name()
        sync = sync_for(key.device, key.mode)
        notes = []
        info: dict[str, Any] = {"tf_device": tf_device(key.device), "onednn": onednn_enabled()}
        if kind == "mps":
            info["unified_memory"] = apple_silicon()  # what a pairing with a CUDA GPU's series compares (pairs.copy_kind)
        compile_options(tf, key.mode)  # a TensorFlow without XLA's keyword skips jit here, with the reason
        if key.op == "seed":
            sync = "the result fetched to the host with .numpy()"
            if key.mode == "jit":
                full = seed_cast_scope(tf, key.device, (2, *key.shape))
                info["xla_casts_full_batch"] = full
                if full is None:
                    notes.append("this TensorFlow cannot show XLA's optimized program (no experimental_get_compiler_ir),"
                                 " so whether XLA casts the whole batch or only item [0, 0] is unknown")  # fmt: skip
                elif not full:
                    notes.append("XLA fuses the slice into the cast: only item [0, 0] is converted to float32,"
                                 " so this times the transfer plus a tiny cast, not a full-batch cast")  # fmt: skip
        if kind == "cpu":
            if not notes:
                notes.append("on the CPU this is TensorFlow's host-side copy of the NumPy array into a tensor of its own"
                             " (NumPy's copy as TensorFlow converts it, then TensorFlow's of that unless aligned for Eigen)"
                             + (", then the cast" if key.op == "seed" else "") + ("; XLA may copy it once more" if key.mode == "jit" else ""))
        else:
            info["host_copies"] = HOST_COPIES
            notes.append(HOST_COPIES + (" (on a Mac, memory the GPU shares)" if kind == "mps" else ""))
            if kind == "mps" and apple_silicon():  # what a ratio against a CUDA GPU's figure compares
                notes.append("on Apple silicon the device copy stays within unified memory (the CPU and GPU share one"
                             " memory): tensorflow-metal copies the tensor into a buffer of its GPU device, over no bus")  # fmt: skip
            elif kind == "mps":
                notes.append("on an Intel Mac the device copy goes to a GPU of its own (an AMD card over PCIe, or Intel"
                             " graphics): no unified memory")  # fmt: skip
            if key.host_buffer == "aligned":
                notes.append("the aligned source changes only what NumPy's copy reads: TensorFlow receives that copy")
        return SeriesInfo(
            device_name=name,
            transfer=HOST_TO_HOST if kind == "cpu" else HOST_TO_DEVICE,
            clock="time.perf_counter",
            sync=sync,
            params=info,
            note="; ".join(notes) or None,
        )

    def host_bytes(self, spec: Spec) -> int:
        """The source, NumPy's copy of it, TensorFlow's aligned copy of that and the verification's read-back;
        XLA's own copy under jit; on the CPU and on a Mac (whose GPU shares the host's memory) the seed op's
        cast too, and on a Mac the destination."""
        key = spec.series
        seed_float = key.op == "seed" and key.device in ("cpu", "mps")
        return spec.nbytes * (4 + (key.mode == "jit") + (key.device == "mps") + 4 * seed_float)

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return TFTransfer(spec)

    def is_out_of_memory(self, error: BaseException) -> bool:
        return isinstance(error, (MemoryError, _tf().errors.ResourceExhaustedError))

    def environment(self) -> dict[str, Any]:
        tf = _tf()
        build = dict(tf.sysconfig.get_build_info())
        gpus = tf.config.list_physical_devices("GPU")
        described = physical_descriptions() if gpus else {}
        devices = []
        for index, gpu in enumerate(gpus):
            details = tf.config.experimental.get_device_details(gpu)
            device_id = "mps" if sys.platform == "darwin" else f"cuda:{index}"
            capability = details.get("compute_capability")
            description = described.get(f"/device:GPU:{index}", "")
            bus_id = desc_field(description, "pci bus id")
            devices.append(
                {
                    "id": device_id,
                    "kind": device_id.split(":")[0],
                    "name": details.get("device_name", gpu.name),
                    "capability": ".".join(map(str, capability)) if capability else None,
                    "pci_bus_id": bus_id if pci_key(bus_id) else None,  # NVML's facts, NUMA binding and the ceiling match by it
                }
            )
        return {
            "version": tf.__version__,
            "cuda_build": build.get("cuda_version"),
            "cudnn_build": build.get("cudnn_version"),
            "build_compute_capabilities": build.get("cuda_compute_capabilities"),
            "onednn": onednn_enabled(),
            "devices": devices,
        }
