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

Pipeline modes (xferbench.measuring.backends.pipeline): dataset, prefetch_to_device, copy_to_device and generator time
the batches a tf.data pipeline delivers on the device, as tensorflow#43905 compares them (TFPipeline).
"""

from __future__ import annotations

import inspect
import os
import sys
from typing import Any

import numpy as np

from xferbench.measuring.backends.base import Backend, SeriesInfo, Transfer
from xferbench.measuring.buffers import ALIAS_PROBE_BYTES, address_offset, check_all, check_arrived, fill_pattern, make_source, read_host
from xferbench.core.environment import apple_gpu_name, apple_silicon, cpu_name, pci_key
from xferbench.core.errors import NotSupportedHere, VerificationError
from xferbench.measuring.backends.pipeline import BUFFER_BATCHES, PIPELINE_CLOCK, PipelineTransfer, cycled_indices, dataset_items, item_count, kernel_side
from xferbench.core.spec import H2D, HOST_TO_DEVICE, HOST_TO_HOST, PIPELINE_MODES, SeriesKey, Spec, usual_source

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


def device_name(device: str) -> str:
    """The device's own name: TensorFlow's for a CUDA GPU, the Mac's for its GPU, the CPU's model."""
    kind = device.split(":")[0]
    if kind == "cuda":
        tf = _tf()
        gpu = tf.config.list_physical_devices("GPU")[int(device.split(":")[1])]
        return str(tf.config.experimental.get_device_details(gpu).get("device_name", "CUDA GPU"))
    if kind == "mps":
        return apple_gpu_name()  # the Mac's one name for its GPU, whichever framework reached it
    return cpu_name()


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
        fill_pattern(self.host.reshape(-1)[:probe], variant=2)  # the probed bytes only: a whole refill costs a pass over the batch
        if not np.array_equal(moved.numpy().reshape(-1)[:probe], self.host.reshape(-1)[:probe]):
            return
        raise VerificationError(f"{self.label}: the result shares memory with the NumPy source; nothing was copied")

    def host_span(self) -> tuple[int, int]:
        return self.host.ctypes.data, self.host.size

    def close(self) -> None:
        self.host = self.function = None


PIPELINE_CPU_SYNC = "none needed: TensorFlow runs CPU ops synchronously, and next() returns a finished batch"
PIPELINE_GPU_SYNC = ("one element of the delivered batch fetched to the host with .numpy(): a slice that runs on the device"
                     " after whatever made the batch there, so it returns once the whole batch is there")  # fmt: skip
# What TensorFlow 2.21's Python source shows (data/experimental/ops/prefetching_ops.py, data/ops/prefetch_op.py,
# data/ops/iterator_ops.py), said under every series of the modes that copy inside the pipeline.
COPY_TO_DEVICE = ("copy_to_device(target) wraps the pipeline in a GeneratorDataset placed on the target, whose next function"
                  " calls the CPU (remote_call) for the pipeline's next batch, so the batch comes back onto the target as that"
                  " call's output")  # fmt: skip
PREFETCH_TO_DEVICE = ("prefetch_to_device(target, n) is copy_to_device(target) then prefetch(n); the prefetch is placed with"
                      " the copy's dataset and the eager iterator with the prefetch, so a background thread runs the copies"
                      " on the target, up to n batches ahead of the loop")  # fmt: skip
SAME_PIPELINE = ("in TensorFlow 2.21 copy_to_device then prefetch(n) builds exactly what prefetch_to_device(target, n) builds,"
                 " so the two series time one pipeline (tensorflow#43905's reporter timed them apart on a 2.4 nightly); no"
                 " tf.device scope is needed around iter(): an eager iterator is placed with its dataset, on the target")  # fmt: skip
PINNED_FINDING = ("tensorflow#43905 reports, from a TensorFlow maintainer, that prefetch_to_device overlaps the copy only when"
                  " the pipeline's output is in pinned host memory; that a plain tf.data batch is not pinned is that report's,"
                  " not verified here (the allocators are in TensorFlow's C++)")  # fmt: skip
METAL_UNKNOWN = ("whether tensorflow-metal (a PluggableDevice) runs copy_to_device's GeneratorDataset and iterator on its GPU"
                 " is not known: the Python source only checks that the target's type is GPU; each check of the sequence"
                 " fails the series if a batch arrives anywhere but /GPU:0")  # fmt: skip
PIPELINE_ITEMS = "2b+1, each its own bytes, repeated without end"


def pipeline_dataset(tf: Any, mode: str, held: list[np.ndarray], batch_size: int, target: str) -> Any:
    """The mode's tf.data pipeline: the items (held[0]) in order without end, batched by `batch_size`.

    In eager mode from_generator's py_func stays registered for the process's life (script_ops ties it
    to the global graph), and its generator with it: the generator reaches the items only through
    `held`, which the pipeline empties when it stops, so each batch size's items are freed."""
    count, item_shape = len(held[0]), held[0].shape[1:]
    if mode == "generator":

        def generate() -> Any:
            for index in cycled_indices(count):
                if not held:
                    return
                yield held[0][index]

        source = tf.data.Dataset.from_generator(generate, output_signature=tf.TensorSpec(item_shape, tf.uint8))
    else:
        source = tf.data.Dataset.from_tensor_slices(held[0]).repeat()
    batched = source.batch(batch_size)
    if mode == "dataset":
        return batched  # the step's tf.identity under the target's scope moves each batch
    if mode == "copy_to_device":
        return batched.apply(tf.data.experimental.copy_to_device(target)).prefetch(BUFFER_BATCHES)
    return batched.apply(tf.data.experimental.prefetch_to_device(target, BUFFER_BATCHES))


class TFPipeline(PipelineTransfer):
    """A tf.data pipeline with one iterator for the whole point: each call takes the next batch and
    makes it usable on the target, as a training loop's step does."""

    def __init__(self, spec: Spec, params: dict[str, Any]) -> None:
        tf = self.tf = _tf()
        key = spec.series
        self.label, self.batch_size, self.device_id, self.mode = key.label(), spec.batch_size, key.device, key.mode
        self.target = tf_device(key.device)
        # A GPU's ops are only queued when they return; the CPU's have run, unless eager execution is made async.
        self.fetch = key.device != "cpu" or not tf.config.experimental.get_synchronous_execution()
        self.items = dataset_items(spec.batch_size, key.shape)
        self.held = [self.items]
        side = kernel_side(key.device)
        # Orthogonal, so a chain of products neither grows nor fades into denormals; made on the CPU (no GPU
        # plugin need offer a QR), then copied to the target.
        with tf.device("/CPU:0"):
            orthogonal = tf.linalg.qr(tf.random.stateless_normal((side, side), seed=(0, 0)))[0]
        with tf.device(self.target):
            self.matrix = tf.identity(orthogonal)
            self.resident = tf.zeros([1], tf.uint8)  # what feeds the kernel when no batch does
        if key.device != "cpu":  # a float32 kernel, as torch's: TensorFlow would run it as TF32 on a recent GPU
            tf.config.experimental.enable_tensor_float_32_execution(False)
        if params.get("overlap"):
            self.time_kernel()  # before the pipeline's threads start
        self.dataset = pipeline_dataset(tf, key.mode, self.held, spec.batch_size, self.target)
        self.batches = iter(self.dataset)  # placed with the dataset's last op: on the target for the *_to_device modes
        self.depth = 4 * BUFFER_BATCHES  # the prefetch's buffer, and tf.data's own autotuned one ahead of it
        self.transfers = 0

    def _wait(self, tensor: Any) -> None:
        """Fetch one element of the tensor: it is read on the device after the tensor is made there."""
        if self.fetch:
            tensor[(0,) * tensor.shape.rank].numpy()

    def _deliver(self) -> Any:
        batch = next(self.batches)
        if self.mode == "dataset":
            with self.tf.device(self.target):
                batch = self.tf.identity(batch)  # the step's copy to the device; on the CPU the iterator's batch itself
        self.transfers += 1
        self._wait(batch)
        return batch

    def _read(self, batch: Any) -> tuple[Any, np.ndarray | None]:
        expected = self.target.strip("/").upper()  # CPU:0, GPU:1, ...
        if batch.device.rsplit("/", 1)[-1].upper() != f"DEVICE:{expected}":
            raise VerificationError(f"{self.label}: the batch is on {batch.device}, not on {self.target}")
        return read_host(batch.numpy()), None

    def _compute(self, batch: Any | None) -> None:
        tf = self.tf
        with tf.device(self.target):
            fed = self.resident if batch is None else batch  # the step's kernel waits for its batch; the same ops either way
            product = self.matrix + tf.cast(tf.reshape(fed, [-1])[:1], tf.float32)
            for _ in range(self.repeats):
                product = tf.matmul(product, self.matrix)
        self._wait(product)

    def _stop(self) -> None:
        self.batches = self.dataset = self.matrix = self.resident = None  # the iterator's threads and buffers go with the last reference
        self.held.clear()


def pipeline_skip_reason(key: SeriesKey) -> str | None:
    """Why a tf.data mode cannot run with this op, or None."""
    if key.op != "copy":
        return f"a pipeline series times the batches the pipeline delivers; the {key.op} op is for the single-copy modes"
    return None


def describe_pipeline(key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
    """What a tf.data series copies, where, and who does it (TensorFlow's prefetching_ops.py, prefetch_op.py,
    iterator_ops.py and options.py)."""
    tf = _tf()
    kind = key.device.split(":")[0]
    target = tf_device(key.device)
    cpu = kind == "cpu"
    synchronous = tf.config.experimental.get_synchronous_execution()
    sync = PIPELINE_CPU_SYNC if cpu and synchronous else PIPELINE_GPU_SYNC
    batch = "the batch op copies b items into a fresh host tensor"
    if key.mode == "dataset":
        notes = [f"from_tensor_slices(items).repeat().batch(b): {batch}, made ahead by the prefetch tf.data injects after a"
                 " final synchronous transformation (Options inject_prefetch, on by default)"]  # fmt: skip
        if cpu:
            notes.append("on the CPU the step's tf.identity under tf.device('/CPU:0') returns the iterator's batch and copies"
                         " nothing, so the batch op's copy is the host copy timed, at the rate the background thread makes batches")  # fmt: skip
        else:
            notes.append(f"then the step's tf.identity under tf.device('{target}') copies it to the device from the batch's"
                         " host memory, in the loop's own thread, as TFTransfer's eager copy does")  # fmt: skip
    else:
        if key.mode == "generator":
            notes = [f"from_generator over the items (a Python generator run by a py_func, under the GIL, each item converted"
                     f" to a tensor), batch(b): {batch}; then prefetch_to_device('{target}', {BUFFER_BATCHES})",
                     "tensorflow#43905 reports that prefetch_to_device 'does not do anything' after from_generator"]  # fmt: skip
        elif key.mode == "copy_to_device":
            notes = [f"from_tensor_slices(items).repeat().batch(b): {batch}; then copy_to_device('{target}')"
                     f" and prefetch({BUFFER_BATCHES})", SAME_PIPELINE]  # fmt: skip
        else:
            notes = [f"from_tensor_slices(items).repeat().batch(b): {batch}; then prefetch_to_device('{target}', {BUFFER_BATCHES})"]
        notes += [COPY_TO_DEVICE, PREFETCH_TO_DEVICE]
        if cpu:
            notes.append("on the CPU the copy to '/CPU:0' is the same device and copies nothing, so the batch op's copy is"
                         " the host copy timed, at the rate the background thread makes batches")  # fmt: skip
        else:
            notes.append(PINNED_FINDING)
            if kind == "mps":
                notes.append(METAL_UNKNOWN)
    info: dict[str, Any] = {"tf_device": target, "dataset_items": PIPELINE_ITEMS, "iterator": "one, made when the point is prepared",
                            "buffer_size": "autotuned (tf.data's injected prefetch)" if key.mode == "dataset" else BUFFER_BATCHES}  # fmt: skip
    if cpu:
        info["onednn"] = onednn_enabled()
    if kind == "mps":
        info["unified_memory"] = apple_silicon()
    return SeriesInfo(
        device_name=device_name(key.device),
        transfer=HOST_TO_HOST if cpu else HOST_TO_DEVICE,
        clock=PIPELINE_CLOCK,
        sync=sync,
        params=info,
        note="; ".join(notes),
    )


def pipeline_host_bytes(spec: Spec) -> int:
    """The dataset's items (and from_tensor_slices' tensor of them), and the batches in flight: the one being
    made, those prefetched, the delivered one, its read-back and the expected items of a check."""
    items = item_count(spec.batch_size) * (spec.nbytes // spec.batch_size)
    sliced = spec.series.mode != "generator"
    return items * (1 + sliced) + spec.nbytes * (4 + BUFFER_BATCHES)


class TFBackend(Backend):
    name = "tf"
    title, module, extra = "TensorFlow", "tensorflow", "tf"
    default_modes = ("eager", "function", "jit")
    modes = (*default_modes, *PIPELINE_MODES["tf"])
    ops = ("copy", "seed")
    isolated = True
    host_buffers = ("numpy", "aligned")

    def sources(self, mode: str) -> tuple[str, ...]:
        if mode in PIPELINE_MODES["tf"]:
            return ("numpy",)  # the dataset's items are a NumPy array; the pipeline's batch op makes each batch
        return self.host_buffers

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
        if key.mode in PIPELINE_MODES["tf"]:
            return pipeline_skip_reason(key)
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
        if key.mode in PIPELINE_MODES["tf"]:
            return describe_pipeline(key, params)
        tf = _tf()
        kind = key.device.split(":")[0]
        name = device_name(key.device)
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
        if key.mode in PIPELINE_MODES["tf"]:
            return pipeline_host_bytes(spec)
        seed_float = key.op == "seed" and key.device in ("cpu", "mps")
        return spec.nbytes * (4 + (key.mode == "jit") + (key.device == "mps") + 4 * seed_float)

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        if spec.series.mode in PIPELINE_MODES["tf"]:
            return TFPipeline(spec, params)
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
