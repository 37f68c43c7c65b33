"""TensorFlow's paths (backends/tensorflow.py) rule by rule: the quiet import and its one request for memory growth per
GPU, device names, what each mode and op calls (eager, tf.function, tf.function(jit_compile=True) and the keyword an
older TensorFlow takes), the pure copy under tf.device and the call's own scope, what each call waits for, the check
that new bytes arrived and were copied rather than aliased, XLA's program read for the seed op's cast, skip and absence
reasons, every description word for word, host-memory estimates, out-of-memory errors, the device lists and the
environment, on Linux and on a Mac with tensorflow-metal, and the tf.data pipelines' builders and steps.

Real CPU TensorFlow runs where it is cheap; a GPU, a Mac and an older TensorFlow are strict stand-ins of the few calls
involved, with TensorFlow 2.21's own signatures and errors."""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from conftest import needs_tf
from xferbench.core.errors import NotSupportedHere, VerificationError
from xferbench.core.spec import BIDIR, D2H, PIPELINE_MODES, SeriesKey
from xferbench.measuring import buffers
from xferbench.measuring.backends import tensorflow as backend
from xferbench.measuring.backends.base import SeriesInfo
from xferbench.measuring.backends.pipeline import BUFFER_BATCHES, PIPELINE_CLOCK
from xferbench.measuring.backends.tensorflow import TFBackend, TFPipeline, TFTransfer

pytestmark = needs_tf

SHAPE = (8, 8, 3)  # 192 bytes an item
BATCH = 2
MODES = ("eager", "function", "jit")
OPS = ("copy", "seed")
ON_CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
SCOPE = "/job:localhost/replica:0/task:0/device:"  # the eager context's device name under a tf.device scope

# Every text the module writes, spelled out here so that a change to any word shows.
CPU_SYNC = "none needed: TensorFlow runs CPU ops synchronously (eager synchronous execution is on)"
COPY_WAITS = ("TensorFlow's own: the call's host-to-device copy is the NumPy argument's conversion (an _EagerConst on the device,"
              " whose host input EagerCopyToDevice copies, done once the device's event manager has seen it end), before anything"
              " runs on the device; no device-wide sync is added")
JIT_WAITS = ("TensorFlow's own for the copy: the argument's conversion (an _EagerConst on the device, copied by EagerCopyToDevice)"
             " is done before XLA's launch; the compiled computation is only queued, and no device-wide sync is added")
HOST_COPIES = ("each call copies the batch on the host before the device copy: NumPy copies the array as TensorFlow converts it,"
               " and TensorFlow copies that again unless it is aligned for Eigen; the device copy then starts from pageable memory")
SEED_SYNC = "the result fetched to the host with .numpy()"
CPU_NOTE = ("on the CPU this is TensorFlow's host-side copy of the NumPy array into a tensor of its own (NumPy's copy as"
            " TensorFlow converts it, then TensorFlow's of that unless aligned for Eigen)")
XLA_UNKNOWN = ("this TensorFlow cannot show XLA's optimized program (no experimental_get_compiler_ir), so whether XLA casts the"
               " whole batch or only item [0, 0] is unknown")
XLA_FUSES = ("XLA fuses the slice into the cast: only item [0, 0] is converted to float32, so this times the transfer plus a"
             " tiny cast, not a full-batch cast")
ON_A_MAC = " (on a Mac, memory the GPU shares)"
UNIFIED = ("on Apple silicon the device copy stays within unified memory (the CPU and GPU share one memory): tensorflow-metal"
           " copies the tensor into a buffer of its GPU device, over no bus")
INTEL_MAC = ("on an Intel Mac the device copy goes to a GPU of its own (an AMD card over PCIe, or Intel graphics): no unified"
             " memory")
ALIGNED = "the aligned source changes only what NumPy's copy reads: TensorFlow receives that copy"
PINNED = "TensorFlow has no user-facing pinned host memory; torch's pinned modes show what pinning buys"
NO_METAL_XLA = ("XLA has no compiler for tensorflow-metal's GPU (jit_compile=True fails with 'Could not find compiler for platform"
                " METAL'); eager and function run there; for XLA on this Mac's CPU (host to host) run: ")
H2D_ONLY = ("tf times host to device only: on the CPU .numpy() returns the tensor's own buffer and copies nothing, and no GPU"
            " run has yet checked a GPU tensor's .numpy() against the raw copy; cuda, torch, cupy and jax time d2h, and cuda and"
            " torch bidir")
NO_APPLE_GPU = ("TensorFlow sees no Apple GPU: install tensorflow-metal (pip install 'xferbench[tf]' on macOS arm64 with Python"
                " <= 3.12; tensorflow-metal supports TensorFlow up to 2.18)")
NO_CUDA_GPU = ("TensorFlow sees no CUDA GPU: there is none, this TensorFlow is a CPU-only build, or its CUDA libraries are missing"
               " (on Linux: pip install 'xferbench[tf-cuda]')")
PIPELINE_CPU_SYNC = "none needed: TensorFlow runs CPU ops synchronously, and next() returns a finished batch"
PIPELINE_GPU_SYNC = ("one element of the delivered batch fetched to the host with .numpy(): a slice that runs on the device after"
                     " whatever made the batch there, so it returns once the whole batch is there")
COPY_TO_DEVICE = ("copy_to_device(target) wraps the pipeline in a GeneratorDataset placed on the target, whose next function calls"
                  " the CPU (remote_call) for the pipeline's next batch, so the batch comes back onto the target as that call's output")
PREFETCH_TO_DEVICE = ("prefetch_to_device(target, n) is copy_to_device(target) then prefetch(n); the prefetch is placed with the"
                      " copy's dataset and the eager iterator with the prefetch, so a background thread runs the copies on the"
                      " target, up to n batches ahead of the loop")
SAME_PIPELINE = ("in TensorFlow 2.21 copy_to_device then prefetch(n) builds exactly what prefetch_to_device(target, n) builds, so"
                 " the two series time one pipeline (tensorflow#43905's reporter timed them apart on a 2.4 nightly); no tf.device"
                 " scope is needed around iter(): an eager iterator is placed with its dataset, on the target")
PINNED_FINDING = ("tensorflow#43905 reports, from a TensorFlow maintainer, that prefetch_to_device overlaps the copy only when the"
                  " pipeline's output is in pinned host memory; that a plain tf.data batch is not pinned is that report's, not"
                  " verified here (the allocators are in TensorFlow's C++)")
METAL_UNKNOWN = ("whether tensorflow-metal (a PluggableDevice) runs copy_to_device's GeneratorDataset and iterator on its GPU is"
                 " not known: the Python source only checks that the target's type is GPU; each check of the sequence fails the"
                 " series if a batch arrives anywhere but /GPU:0")
BATCH_OP = "the batch op copies b items into a fresh host tensor"
SLICED = f"from_tensor_slices(items).repeat().batch(b): {BATCH_OP}"
INJECTED = (f"{SLICED}, made ahead by the prefetch tf.data injects after a final synchronous transformation (Options"
            " inject_prefetch, on by default)")
CPU_STEP = ("on the CPU the step's tf.identity under tf.device('/CPU:0') returns the iterator's batch and copies nothing, so the"
            " batch op's copy is the host copy timed, at the rate the background thread makes batches")
CPU_SAME_DEVICE = ("on the CPU the copy to '/CPU:0' is the same device and copies nothing, so the batch op's copy is the host"
                   " copy timed, at the rate the background thread makes batches")


def key(mode: str = "eager", op: str = "copy", device: str = "cpu", host_buffer: str = "", **kwargs: Any) -> SeriesKey:
    return SeriesKey("tf", mode, op, device, SHAPE, host_buffer, **kwargs)


def pattern(shape: tuple[int, ...], variant: int) -> np.ndarray:
    """The bytes fill_pattern writes for that variant."""
    filled = np.empty(shape, np.uint8)
    buffers.fill_pattern(filled, variant)
    return filled


@pytest.fixture(scope="module")
def tf() -> Any:
    """Real TensorFlow, imported once through the module (quietly, with growth asked for)."""
    return backend._tf()


@pytest.fixture(scope="module")
def transfers(tf: Any) -> Iterator[dict[tuple[str, str], TFTransfer]]:
    """One CPU transfer of each mode and op, traced once for the whole file."""
    made = {(mode, op): TFTransfer(key(mode, op).at(BATCH)) for mode in MODES for op in OPS}
    yield made
    for transfer in made.values():
        transfer.close()


@pytest.fixture(scope="module")
def elsewhere(tf: Any) -> Iterator[dict[str, TFTransfer]]:
    """Eager transfers for cuda:1, run on this CPU by soft placement: their scope is /GPU:1, their tensors land on CPU:0."""
    made = {op: TFTransfer(key("eager", op, "cuda:1").at(BATCH)) for op in OPS}
    yield made
    for transfer in made.values():
        transfer.close()


def physical(index: int) -> Any:
    import tensorflow as tf

    return tf.config.PhysicalDevice(name=f"/physical_device:GPU:{index}", device_type="GPU")


def show_gpus(monkeypatch: pytest.MonkeyPatch, tf: Any, details: dict[int, dict[str, Any]]) -> list[Any]:
    """TensorFlow believes it has these GPUs (index -> get_device_details' answer), as list_physical_devices and
    get_device_details answer: a device type other than GPU lists none, an unknown device is a ValueError."""
    gpus = [physical(index) for index in sorted(details)]

    def list_physical_devices(device_type: str | None = None) -> list[Any]:
        return list(gpus) if device_type == "GPU" else []

    def get_device_details(device: Any) -> dict[str, Any]:
        if device not in gpus:
            raise ValueError(f"Unrecognized device: {device!r}")
        return dict(details[gpus.index(device)])

    monkeypatch.setattr(tf.config, "list_physical_devices", list_physical_devices)
    monkeypatch.setattr(tf.config.experimental, "get_device_details", get_device_details)
    return gpus


# The quiet import and memory growth


def test_importing_tensorflow_sets_its_cpp_log_level_to_2_only_where_the_user_set_none(monkeypatch: pytest.MonkeyPatch,
                                                                                         tf: Any) -> None:
    """TF_CPP_MIN_LOG_LEVEL becomes 2 (errors still show) unless already set, which is kept."""
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    assert backend._tf() is tf
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "2"
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    backend._tf()
    assert os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"


def test_the_first_import_quiets_the_logger_and_asks_every_gpu_for_memory_growth_once(monkeypatch: pytest.MonkeyPatch,
                                                                                       tf: Any) -> None:
    """Each GPU gets set_memory_growth(gpu, True); one already initialised (RuntimeError) is passed over; later calls ask nothing."""
    gpus = [physical(0), physical(1)]
    listed: list[Any] = []
    asked: list[tuple[Any, bool]] = []
    initialised = {gpus[0]}

    def list_physical_devices(device_type: str | None = None) -> list[Any]:
        listed.append(device_type)
        return list(gpus) if device_type == "GPU" else []

    def set_memory_growth(device: Any, enable: bool) -> None:  # TensorFlow 2.21's checks, in its order
        if device not in gpus:
            raise ValueError(f"Unrecognized device: {device!r}")
        asked.append((device, enable))
        if device in initialised:
            raise RuntimeError("Physical devices cannot be modified after being initialized")

    monkeypatch.setattr(tf.config, "list_physical_devices", list_physical_devices)
    monkeypatch.setattr(tf.config.experimental, "set_memory_growth", set_memory_growth)
    monkeypatch.setattr(backend, "_configured", False)
    logger = tf.get_logger()
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        assert backend._tf() is tf
        assert logger.level == logging.ERROR
    finally:
        logger.setLevel(level)
    assert listed == ["GPU"] and asked == [(gpus[0], True), (gpus[1], True)]
    assert backend._configured is True
    backend._tf()
    assert listed == ["GPU"] and len(asked) == 2  # configured once per process


def test_memory_growth_lets_only_the_runtime_error_of_an_initialised_gpu_pass(monkeypatch: pytest.MonkeyPatch, tf: Any) -> None:
    """set_memory_growth's ValueError (a device it does not know) is not swallowed."""
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda device_type=None: [physical(0)] if device_type == "GPU" else [])

    def set_memory_growth(device: Any, enable: bool) -> None:
        raise ValueError(f"Unrecognized device: {device!r}")

    monkeypatch.setattr(tf.config.experimental, "set_memory_growth", set_memory_growth)
    monkeypatch.setattr(backend, "_configured", False)
    with pytest.raises(ValueError, match="Unrecognized device"):
        backend._tf()


def test_a_fresh_process_has_configured_nothing_until_its_first_import(monkeypatch: pytest.MonkeyPatch, tf: Any) -> None:
    """A fresh copy of the module starts unconfigured, and its first _tf() asks the GPUs for growth."""
    spec = importlib.util.spec_from_file_location("fresh_tensorflow_backend", backend.__file__)
    assert spec is not None and spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    assert fresh._configured is False
    asked: list[tuple[Any, bool]] = []
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda device_type=None: [physical(0)] if device_type == "GPU" else [])
    monkeypatch.setattr(tf.config.experimental, "set_memory_growth", lambda device, enable: asked.append((device, enable)))
    assert fresh._tf() is tf
    assert asked == [(physical(0), True)] and fresh._configured is True


# Device names


def test_device_ids_become_tensorflow_device_names() -> None:
    """cpu is /CPU:0, cuda:N is /GPU:N, and an id without an index (mps) is /GPU:0."""
    assert backend.tf_device("cpu") == "/CPU:0"
    assert backend.tf_device("cuda:0") == "/GPU:0"
    assert backend.tf_device("cuda:3") == "/GPU:3"
    assert backend.tf_device("cuda:12") == "/GPU:12"
    assert backend.tf_device("mps") == "/GPU:0"


def test_a_description_field_is_read_by_its_exact_name_after_a_colon_and_a_space() -> None:
    """desc_field splits on ', ' and ': ', strips both sides, and gives None for a field absent or empty."""
    description = "device: 0, name: NVIDIA H100, pci bus id: 0000:3b:00.0, compute capability: 9.0"
    assert backend.desc_field(description, "pci bus id") == "0000:3b:00.0"
    assert backend.desc_field(description, "name") == "NVIDIA H100"
    assert backend.desc_field(description, "device") == "0"
    assert backend.desc_field(description, "compute capability") == "9.0"
    assert backend.desc_field(description, "bus id") is None
    assert backend.desc_field("device: 0,  name:  Apple M1,Pro ", "name") == "Apple M1,Pro"  # spaces around key and value
    assert backend.desc_field("device: 0, name: , pci bus id: x", "name") is None  # empty
    assert backend.desc_field("pci bus id:0000:3b:00.0", "pci bus id") is None  # no ': ' is no field
    assert backend.desc_field("pci bus id, pci bus id: 0000:5e:00.0", "pci bus id") == "0000:5e:00.0"  # a bare word is skipped
    assert backend.desc_field("name: Board: rev 2", "name") == "Board: rev 2"  # the first ': ' ends the field's name


def test_gpu_descriptions_are_listed_by_name_after_the_eager_context_made_its_gpus_with_growth(monkeypatch: pytest.MonkeyPatch,
                                                                                               tf: Any) -> None:
    """physical_descriptions lists logical GPUs first, then device_lib with allow_growth, keeping GPUs only."""
    from tensorflow.python.client import device_lib

    order: list[Any] = []

    def list_logical_devices(device_type: str | None = None) -> list[Any]:
        order.append(("logical", device_type))
        return []

    def list_local_devices(session_config: Any = None) -> list[Any]:
        order.append(("local", session_config))
        return [SimpleNamespace(name="/device:CPU:0", device_type="CPU", physical_device_desc="cpu"),
                SimpleNamespace(name="/device:GPU:0", device_type="GPU", physical_device_desc="device: 0, name: A"),
                SimpleNamespace(name="/device:GPU:1", device_type="GPU", physical_device_desc="device: 1, name: B")]

    monkeypatch.setattr(tf.config, "list_logical_devices", list_logical_devices)
    monkeypatch.setattr(device_lib, "list_local_devices", list_local_devices)
    assert backend.physical_descriptions() == {"/device:GPU:0": "device: 0, name: A", "/device:GPU:1": "device: 1, name: B"}
    assert [step for step, _ in order] == ["logical", "local"] and order[0][1] == "GPU"
    config = order[1][1]
    assert isinstance(config, tf.compat.v1.ConfigProto) and config.gpu_options.allow_growth is True


def test_a_cuda_gpu_is_named_by_tensorflows_details_of_its_own_index(monkeypatch: pytest.MonkeyPatch, tf: Any) -> None:
    """device_name reads get_device_details of GPU N for cuda:N, 'CUDA GPU' where the details have no name."""
    show_gpus(monkeypatch, tf, {0: {"device_name": "NVIDIA A100-SXM4-80GB"}, 1: {"device_name": "NVIDIA H100 80GB HBM3"}, 2: {}})
    assert backend.device_name("cuda:0") == "NVIDIA A100-SXM4-80GB"
    assert backend.device_name("cuda:1") == "NVIDIA H100 80GB HBM3"
    assert backend.device_name("cuda:2") == "CUDA GPU"


def test_an_apple_gpu_is_named_by_the_mac_and_the_cpu_by_its_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """mps takes the Mac's one name for its GPU, cpu the CPU's model."""
    monkeypatch.setattr(backend, "apple_gpu_name", lambda: "Apple M2 Max (38-core GPU)")
    monkeypatch.setattr(backend, "cpu_name", lambda: "AMD EPYC 9654")
    assert backend.device_name("mps") == "Apple M2 Max (38-core GPU)"
    assert backend.device_name("cpu") == "AMD EPYC 9654"


# What each call waits for


def test_a_cpu_copy_under_synchronous_execution_needs_no_wait_in_any_mode(tf: Any) -> None:
    """On the CPU, with eager execution synchronous (the default), every mode says no wait is needed."""
    assert tf.config.experimental.get_synchronous_execution() is True
    assert [backend.sync_for("cpu", mode) for mode in MODES] == [CPU_SYNC] * 3


def test_a_gpu_copy_waits_for_its_conversion_and_a_jit_call_only_queues_xlas_launch() -> None:
    """eager and function wait for the argument's conversion; jit says its computation is only queued."""
    for device in ("cuda:0", "cuda:1", "mps"):
        assert backend.sync_for(device, "eager") == COPY_WAITS
        assert backend.sync_for(device, "function") == COPY_WAITS
        assert backend.sync_for(device, "jit") == JIT_WAITS


def test_a_cpu_made_asynchronous_waits_as_a_gpu_does(monkeypatch: pytest.MonkeyPatch, tf: Any) -> None:
    """With synchronous execution off, the CPU's calls are only queued too."""
    monkeypatch.setattr(tf.config.experimental, "get_synchronous_execution", lambda: False)
    assert backend.sync_for("cpu", "eager") == COPY_WAITS
    assert backend.sync_for("cpu", "function") == COPY_WAITS
    assert backend.sync_for("cpu", "jit") == JIT_WAITS


# oneDNN


def test_onednn_is_tensorflows_own_answer_as_a_bool(monkeypatch: pytest.MonkeyPatch, tf: Any) -> None:
    """IsMklEnabled's answer, made a bool."""
    from tensorflow.python.util import _pywrap_util_port

    assert isinstance(backend.onednn_enabled(), bool)
    monkeypatch.setattr(_pywrap_util_port, "IsMklEnabled", lambda: 1)
    assert backend.onednn_enabled() is True
    monkeypatch.setattr(_pywrap_util_port, "IsMklEnabled", lambda: 0)
    assert backend.onednn_enabled() is False


def test_onednn_is_unknown_where_this_tensorflow_cannot_say(monkeypatch: pytest.MonkeyPatch, tf: Any) -> None:
    """No IsMklEnabled (AttributeError) or no _pywrap_util_port (ImportError): None."""
    import tensorflow.python.util as util
    from tensorflow.python.util import _pywrap_util_port

    monkeypatch.delattr(_pywrap_util_port, "IsMklEnabled")
    assert backend.onednn_enabled() is None
    monkeypatch.undo()
    monkeypatch.delattr(util, "_pywrap_util_port")
    monkeypatch.setitem(sys.modules, "tensorflow.python.util._pywrap_util_port", None)
    assert backend.onednn_enabled() is None


# XLA's keyword


def test_only_the_jit_mode_asks_tf_function_for_xla_under_its_current_name(tf: Any) -> None:
    """jit gets {'jit_compile': True} from TensorFlow 2.21 (whose tf.function takes both names); other modes get nothing."""
    assert backend.compile_options(tf, "jit") == {"jit_compile": True}
    for mode in ("eager", "function", "dataset"):
        assert backend.compile_options(tf, mode) == {}


class Unreadable:
    """A tf.function whose signature inspect cannot read (ValueError, as for a builtin)."""

    @property
    def __signature__(self) -> Any:
        raise ValueError("no signature found for this tf.function")

    def __call__(self, func: Any = None) -> Any:
        return func


def test_a_tf_function_without_a_readable_signature_gets_the_current_keyword() -> None:
    """inspect.signature's TypeError (not callable) or ValueError (no signature) leave jit_compile=True."""
    assert backend.compile_options(SimpleNamespace(function=42), "jit") == {"jit_compile": True}
    assert backend.compile_options(SimpleNamespace(function=Unreadable()), "jit") == {"jit_compile": True}


def test_tensorflow_2_2_to_2_4_gets_experimental_compile(tf: Any) -> None:
    """A tf.function that takes experimental_compile and not jit_compile is asked under that name."""

    def function(func=None, input_signature=None, autograph=True, experimental_implements=None,  # type: ignore[no-untyped-def]
                 experimental_autograph_options=None, experimental_relax_shapes=False, experimental_compile=None,
                 experimental_follow_type_hints=None):
        return func

    assert backend.compile_options(SimpleNamespace(function=function), "jit") == {"experimental_compile": True}
    assert backend.compile_options(SimpleNamespace(function=function), "function") == {}


def test_a_tensorflow_with_neither_keyword_is_refused_with_its_version_and_what_to_install() -> None:
    """TensorFlow 2.0 and 2.1 have no XLA keyword: NotSupportedHere, word for word, '?' for an unknown version."""

    def function(func=None, input_signature=None, autograph=True, experimental_autograph_options=None,  # type: ignore[no-untyped-def]
                 experimental_relax_shapes=False):
        return func

    said = ("tf jit needs tf.function(jit_compile=True) (TensorFlow 2.5 and later) or experimental_compile=True (2.2 to 2.4),"
            " and TensorFlow {} has neither; install tensorflow>=2.13")
    with pytest.raises(NotSupportedHere) as refused:
        backend.compile_options(SimpleNamespace(function=function, __version__="2.1.0"), "jit")
    assert str(refused.value) == said.format("2.1.0")
    with pytest.raises(NotSupportedHere) as refused:
        backend.compile_options(SimpleNamespace(function=function), "jit")
    assert str(refused.value) == said.format("?")
    assert backend.compile_options(SimpleNamespace(function=function), "eager") == {}


# XLA's program for the seed op


class Compiled:
    """A tf.function(jit_compile=True) as seed_cast_scope uses it: experimental_get_compiler_ir(*args) gives a
    function of (stage='hlo', device_name=None, platform_name=None) that returns the program's text."""

    def __init__(self, xla: XLA, func: Any) -> None:
        self.xla, self.python_function = xla, func

    def experimental_get_compiler_ir(self, *args: Any) -> Any:
        self.xla.calls.append(("compiler_ir", self.xla.scope, args))

        def generate(stage: str = "hlo", device_name: str | None = None, platform_name: str | None = None) -> str:
            self.xla.calls.append(("stage", stage, device_name, platform_name))
            return self.xla.hlo

        return generate


class Uncompiled:
    """A function of a TensorFlow that cannot show XLA's program: callable, nothing more."""

    def __init__(self, func: Any) -> None:
        self.python_function = func


class XLA:
    """tf as seed_cast_scope uses it: device scopes, tf.function with TensorFlow 2.21's keywords, a NumPy cast."""

    float32 = np.float32

    def __init__(self, hlo: str = "", shows_program: bool = True) -> None:
        self.hlo, self.shows_program = hlo, shows_program
        self.calls: list[tuple[Any, ...]] = []
        self.scope: str | None = None

    @contextmanager
    def device(self, device_name: str) -> Iterator[None]:
        outer, self.scope = self.scope, device_name
        try:
            yield
        finally:
            self.scope = outer

    def cast(self, x: Any, dtype: Any) -> np.ndarray:
        return np.asarray(x).astype(dtype)

    def function(self, func=None, input_signature=None, autograph=True, jit_compile=None,  # type: ignore[no-untyped-def]
                 reduce_retracing=False, experimental_implements=None, experimental_autograph_options=None, experimental_attributes=None,
                 experimental_relax_shapes=None, experimental_compile=None, experimental_follow_type_hints=None):
        self.calls.append(("function", self.scope, jit_compile, experimental_compile))
        self.made = Compiled(self, func) if self.shows_program else Uncompiled(func)
        return self.made


def test_the_seed_cast_is_compiled_by_xla_under_the_series_device_from_a_uint8_batch_of_its_shape() -> None:
    """tf.cast(x, float32)[0, 0] with jit_compile=True under the device's scope; the optimized HLO of a zero uint8 batch."""
    xla = XLA("HloModule m\n\nENTRY main {\n  p = u8[2,8,8,3] parameter(0)\n  ROOT c = f32[2,8,8,3] convert(p)\n}")
    assert backend.seed_cast_scope(xla, "cuda:1", (2, 8, 8, 3)) is True
    function, compiler_ir, stage = xla.calls
    assert function == ("function", "/GPU:1", True, None)
    assert compiler_ir[:2] == ("compiler_ir", "/GPU:1") and len(compiler_ir[2]) == 1
    (batch,) = compiler_ir[2]
    assert batch.shape == (2, 8, 8, 3) and batch.dtype == np.uint8 and not batch.any()
    assert stage == ("stage", "optimized_hlo", None, None)
    items = np.arange(2 * 3 * 2 * 1, dtype=np.uint8).reshape(2, 3, 2, 1) + 1
    cast = xla.made.python_function(items)
    assert cast.dtype == np.float32 and np.array_equal(cast, items[0, 0].astype(np.float32))


def test_the_full_batch_cast_is_looked_for_only_after_the_first_entry() -> None:
    """f32[d0,d1,...] after the first 'ENTRY' is a full-batch cast; one in a fused computation before it is not."""
    shape = (4, 16, 16, 3)
    found = {
        "fusion { f32[4,16,16,3] } ENTRY main { ROOT s = f32[16,3] slice }": False,
        "fusion { } ENTRY main { c = f32[4,16,16,3] convert } ENTRY other { }": True,  # after the first ENTRY, before a second
        "ENTRY main { c = f32[4, 16, 16, 3] convert }": False,  # written without commas, no match
        "c = f32[4,16,16,3] convert": True,  # no ENTRY: the whole text is read
        "ENTRY main { c = f32[4,16,16] convert }": False,
    }
    for hlo, full in found.items():
        assert backend.seed_cast_scope(XLA(hlo), "cpu", shape) is full, hlo


def test_a_tensorflow_whose_functions_cannot_show_xlas_program_leaves_the_cast_unknown() -> None:
    """Without experimental_get_compiler_ir seed_cast_scope answers None, having asked XLA for the function all the same."""
    xla = XLA(shows_program=False)
    assert backend.seed_cast_scope(xla, "cpu", (2, *SHAPE)) is None
    assert xla.calls == [("function", "/CPU:0", True, None)]


def test_xla_on_this_cpu_fuses_the_slice_into_the_cast(tf: Any) -> None:
    """Real XLA on the CPU converts only item [0, 0]: the whole batch is never cast to float32."""
    assert backend.seed_cast_scope(tf, "cpu", (BATCH, *SHAPE)) is False


# The transfer: its source, its function, its call


def test_a_transfer_holds_a_patterned_numpy_source_aligned_only_when_asked(monkeypatch: pytest.MonkeyPatch, tf: Any) -> None:
    """The source is make_source(batch shape, aligned=host_buffer == 'aligned'); its offset mod 64 is recorded."""
    made: list[tuple[Any, ...]] = []
    real = backend.make_source

    def make_source(shape: tuple[int, ...], aligned: bool = False, offset: int | None = None) -> np.ndarray:
        made.append((shape, aligned, offset))
        return real(shape, aligned, offset)

    monkeypatch.setattr(backend, "make_source", make_source)
    plain = TFTransfer(key("eager", "copy").at(3))
    aligned = TFTransfer(key("eager", "seed", host_buffer="aligned").at(3))
    assert made == [((3, *SHAPE), False, None), ((3, *SHAPE), True, None)]
    for transfer in (plain, aligned):
        assert transfer.host.shape == (3, *SHAPE) and transfer.host.dtype == np.uint8
        assert np.array_equal(transfer.host, pattern((3, *SHAPE), 0))
        assert transfer.host_offset == transfer.host.ctypes.data % 64
    assert aligned.host_offset == 0
    assert (plain.label, plain.seed, plain.device, plain.target) == ("tf/eager/copy@cpu", False, "cpu", "/CPU:0")
    assert (aligned.label, aligned.seed) == ("tf/eager/seed+aligned@cpu", True)
    assert plain.host_span() == (plain.host.ctypes.data, plain.host.size)
    plain.close()
    assert plain.host is None and plain.function is None


def test_eager_calls_the_body_itself_and_function_and_jit_wrap_it_with_only_jit_compiling(monkeypatch: pytest.MonkeyPatch,
                                                                                          tf: Any) -> None:
    """eager's function is the Python body; function is tf.function(body); jit is tf.function(body, jit_compile=True)."""
    wrapped: list[tuple[str, dict[str, Any]]] = []
    real = tf.function

    @functools.wraps(real)  # inspect.signature reads TensorFlow's own keywords through __wrapped__
    def function(func: Any = None, **kwargs: Any) -> Any:
        wrapped.append((func.__name__, kwargs))
        return real(func, **kwargs)

    monkeypatch.setattr(tf, "function", function)
    for op in OPS:
        before = len(wrapped)
        eager = TFTransfer(key("eager", op, "cuda:0").at(BATCH))
        assert eager.function.__name__ == op and not hasattr(eager.function, "python_function")
        assert len(wrapped) == before  # eager wraps nothing
        for mode in ("function", "jit"):
            made = TFTransfer(key(mode, op, "cuda:0").at(BATCH))
            assert made.function.python_function.__name__ == op and made.target == "/GPU:0"
    assert wrapped == [("copy", {}), ("copy", {"jit_compile": True}), ("seed", {}), ("seed", {"jit_compile": True})]


def test_the_copy_is_tf_identity_and_the_seed_the_float32_cast_of_item_0_0_each_under_the_target(monkeypatch: pytest.MonkeyPatch,
                                                                                                tf: Any, elsewhere: Any) -> None:
    """Called outside any scope, the body's own tf.device(target) places its op: /GPU:1 for cuda:1."""
    from tensorflow.python.eager import context

    seen: list[tuple[str, Any]] = []
    identity, cast = tf.identity, tf.cast
    monkeypatch.setattr(tf, "identity", lambda x: seen.append(("identity", context.context().device_name)) or identity(x))
    monkeypatch.setattr(tf, "cast", lambda x, dtype: seen.append((f"cast {dtype.name}", context.context().device_name)) or cast(x, dtype))
    copy, seed = elsewhere["copy"], elsewhere["seed"]
    assert context.context().device_name == ""
    moved = copy.function(copy.host)
    assert seen == [("identity", SCOPE + "GPU:1")]
    assert moved.dtype == tf.uint8 and np.array_equal(moved.numpy(), copy.host)
    seen.clear()
    item = seed.function(seed.host)
    assert seen == [("cast float32", SCOPE + "GPU:1")]
    assert item.dtype == tf.float32 and np.array_equal(item.numpy(), seed.host[0, 0].astype(np.float32))


def test_each_call_runs_under_the_targets_scope_with_the_numpy_source(monkeypatch: pytest.MonkeyPatch, elsewhere: Any) -> None:
    """_run calls the function with the NumPy source itself inside tf.device(target), so the conversion lands there."""
    from tensorflow.python.eager import context

    transfer = elsewhere["copy"]
    seen: list[tuple[str, bool]] = []
    real = transfer.function
    monkeypatch.setattr(transfer, "function", lambda x: seen.append((context.context().device_name, x is transfer.host)) or real(x))
    transfer()
    assert seen == [(SCOPE + "GPU:1", True)]


class Result:
    """A device tensor as _run and verify use it: where it is, and what .numpy() reads back (counted)."""

    def __init__(self, read: Any, device: str = ON_CPU) -> None:
        self.device, self.read, self.reads = device, read, 0

    def numpy(self) -> Any:
        self.reads += 1
        return self.read(self.reads) if callable(self.read) else self.read


def test_only_the_seed_op_fetches_its_result_within_the_call(monkeypatch: pytest.MonkeyPatch, transfers: Any) -> None:
    """copy's _run returns (tensor, None) and reads nothing back; seed's returns (tensor, tensor.numpy())."""
    copy, seed = transfers["eager", "copy"], transfers["eager", "seed"]
    copied, fetched = Result("not read"), Result("item [0, 0]")
    monkeypatch.setattr(copy, "function", lambda x: copied)
    monkeypatch.setattr(seed, "function", lambda x: fetched)
    assert copy._run() == (copied, None) and copied.reads == 0
    assert seed._run() == (fetched, "item [0, 0]") and fetched.reads == 1
    runs: list[int] = []
    monkeypatch.setattr(copy, "_run", lambda: runs.append(1) or (copied, None))
    assert copy() is None and runs == [1]


# Verification


@pytest.mark.parametrize("mode", MODES)
def test_verification_sends_new_bytes_and_checks_every_one_then_that_they_were_copied(monkeypatch: pytest.MonkeyPatch, tf: Any,
                                                                                     transfers: Any, mode: str) -> None:
    """copy: pattern 1 is sent and checked whole under the series' label, then pattern 2 shows no alias; no device-wide sync."""
    transfer = transfers[mode, "copy"]
    filled: list[tuple[bool, int, int]] = []
    checked: list[tuple[bool, bool, str]] = []
    fill, check_all = backend.fill_pattern, backend.check_all

    def record_fill(buffer: np.ndarray, variant: int = 0) -> None:
        filled.append((buffer.ctypes.data == transfer.host.ctypes.data, buffer.size, variant))
        fill(buffer, variant)

    def record_check(source: np.ndarray, read: Any, what: str, staging: Any = None) -> None:
        checked.append((source is transfer.host, np.array_equal(source, pattern(source.shape, 1)), what))
        check_all(source, read, what, staging)

    def no_sync() -> None:
        raise AssertionError("a device-wide sync")

    monkeypatch.setattr(backend, "fill_pattern", record_fill)
    monkeypatch.setattr(backend, "check_all", record_check)
    monkeypatch.setattr(backend, "check_arrived", lambda *args: pytest.fail("the copy op checks every byte"))
    monkeypatch.setattr(tf.test.experimental, "sync_devices", no_sync)
    transfer()
    transfer.verify()
    assert filled == [(True, transfer.host.size, 1), (True, min(transfer.host.size, backend.ALIAS_PROBE_BYTES), 2)]  # the probe's bytes only
    assert checked == [(True, True, f"tf/{mode}/copy@cpu")]
    assert np.array_equal(transfer.host, pattern(transfer.host.shape, 2))


@pytest.mark.parametrize("mode", MODES)
def test_a_seed_verification_checks_only_the_fetched_item_against_the_new_bytes(monkeypatch: pytest.MonkeyPatch,
                                                                                 transfers: Any, mode: str) -> None:
    """seed: pattern 1 is sent and its item [0, 0] as float32 is checked against the result, '<label> result'."""
    transfer = transfers[mode, "seed"]
    filled: list[int] = []
    arrived: list[tuple[np.ndarray, np.ndarray, str]] = []
    fill, check_arrived = backend.fill_pattern, backend.check_arrived
    monkeypatch.setattr(backend, "fill_pattern", lambda buffer, variant=0: filled.append(variant) or fill(buffer, variant))
    monkeypatch.setattr(backend, "check_all", lambda *args: pytest.fail("the seed op fetches only its item"))

    def record(expected: np.ndarray, got: np.ndarray, what: str) -> None:
        arrived.append((np.array(expected), np.array(got), what))
        check_arrived(expected, got, what)

    monkeypatch.setattr(backend, "check_arrived", record)
    transfer.verify()
    assert filled == [1]
    ((expected, got, what),) = arrived
    sent = pattern(transfer.host.shape, 1)[0, 0].astype(np.float32)
    assert expected.dtype == np.float32 and np.array_equal(expected, sent) and np.array_equal(got, sent)
    assert what == f"tf/{mode}/seed@cpu result"


def test_a_result_on_another_device_than_the_target_fails_with_both_named(elsewhere: Any) -> None:
    """The result's device must end in DEVICE:<target>; a cuda:1 series whose tensor is on CPU:0 fails."""
    for op, transfer in elsewhere.items():
        with pytest.raises(VerificationError) as failed:
            transfer.verify()
        assert str(failed.value) == f"tf/eager/{op}@cuda:1: the result is on {ON_CPU}, not on /GPU:1"


def test_the_device_check_ignores_the_case_of_the_target(monkeypatch: pytest.MonkeyPatch, transfers: Any) -> None:
    """A target written '/cpu:0' matches a tensor on '.../device:CPU:0'."""
    transfer = transfers["eager", "copy"]
    monkeypatch.setattr(transfer, "target", "/cpu:0")
    transfer.verify()


def test_bytes_that_did_not_arrive_fail_verification_word_for_word(monkeypatch: pytest.MonkeyPatch, tf: Any, transfers: Any) -> None:
    """A copy of zeros fails check_all under the label; a seed item of zeros fails check_arrived under '<label> result'."""
    copy, seed = transfers["eager", "copy"], transfers["eager", "seed"]
    monkeypatch.setattr(copy, "function", lambda x: tf.zeros(x.shape, tf.uint8))
    monkeypatch.setattr(seed, "function", lambda x: tf.zeros(x.shape[2:], tf.float32))
    n = BATCH * 8 * 8 * 3
    with pytest.raises(VerificationError) as failed:
        copy.verify()
    assert str(failed.value) == (f"tf/eager/copy@cpu: {n} of {n} bytes differ from the source (the first at byte 0);"
                                 " the transfer did not deliver the data")
    with pytest.raises(VerificationError) as failed:
        seed.verify()
    assert str(failed.value) == ("tf/eager/seed@cpu result: 24 of 24 checked values differ from the source;"
                                 " the transfer did not deliver the data")


@pytest.fixture
def large(tf: Any) -> Iterator[TFTransfer]:
    """An eager copy of 98,304 bytes: more than the 65,536 the alias probe re-reads."""
    transfer = TFTransfer(SeriesKey("tf", "eager", "copy", "cpu", (128, 128, 3)).at(2))
    yield transfer
    transfer.close()


def test_a_result_that_follows_the_sources_first_64_kib_is_no_copy(monkeypatch: pytest.MonkeyPatch, large: TFTransfer) -> None:
    """After the refill, equal first 65,536 bytes (even with the rest unchanged) mean the tensor aliases the source."""

    def read(reads: int) -> np.ndarray:
        if reads == 1:
            return large.host.copy()  # the full check sees the bytes sent
        seen = np.zeros_like(large.host)
        seen.reshape(-1)[:65536] = large.host.reshape(-1)[:65536]
        return seen

    monkeypatch.setattr(large, "function", lambda x: Result(read))
    with pytest.raises(VerificationError) as failed:
        large.verify()
    assert str(failed.value) == "tf/eager/copy@cpu: the result shares memory with the NumPy source; nothing was copied"


def test_a_result_that_differs_from_the_refilled_source_within_the_probe_is_a_copy(monkeypatch: pytest.MonkeyPatch,
                                                                                    large: TFTransfer) -> None:
    """One byte of the first 65,536 that did not follow the refill is enough to call it a copy."""

    def read(reads: int) -> np.ndarray:
        seen = large.host.copy()
        if reads > 1:
            seen.reshape(-1)[65535] = 0  # the pattern has no zero
        return seen

    monkeypatch.setattr(large, "function", lambda x: Result(read))
    large.verify()


# Skip, absence and direction reasons


def test_the_jit_on_cpu_command_adds_only_what_differs_from_the_usual_series() -> None:
    """--op for an op other than copy, --host-buffer for a source other than numpy."""
    assert backend.jit_on_cpu_command(key("jit", "copy", "mps")) == "xferbench sweep -f tf --jit --device cpu"
    assert backend.jit_on_cpu_command(key("jit", "seed", "mps")) == "xferbench sweep -f tf --jit --device cpu --op seed"
    assert backend.jit_on_cpu_command(key("jit", "copy", "mps", "aligned")) == (
        "xferbench sweep -f tf --jit --device cpu --host-buffer aligned")
    assert backend.jit_on_cpu_command(key("jit", "seed", "mps", "pinned")) == (
        "xferbench sweep -f tf --jit --device cpu --op seed --host-buffer pinned")


def test_skip_reasons_word_for_word_and_in_their_order() -> None:
    """A pipeline mode takes only copy; then pinned is refused; then jit on mps, naming its CPU command; else nothing."""
    tf_backend = TFBackend()
    assert tf_backend.skip_reason(key("jit", "copy", "mps")) == NO_METAL_XLA + "xferbench sweep -f tf --jit --device cpu"
    assert tf_backend.skip_reason(key("jit", "seed", "mps", "aligned")) == (
        NO_METAL_XLA + "xferbench sweep -f tf --jit --device cpu --op seed --host-buffer aligned")
    for mode in MODES:
        assert tf_backend.skip_reason(key(mode, "copy", "cuda:0", "pinned")) == PINNED
        assert tf_backend.skip_reason(key(mode, "seed", "cpu")) is None
        assert tf_backend.skip_reason(key(mode, "copy", "cuda:1")) is None
    assert tf_backend.skip_reason(key("jit", "copy", "mps", "pinned")) == PINNED
    assert tf_backend.skip_reason(key("eager", "copy", "mps")) is None
    assert tf_backend.skip_reason(key("function", "seed", "mps")) is None
    for mode in PIPELINE_MODES["tf"]:
        assert tf_backend.skip_reason(key(mode, "copy", "mps", "pinned")) is None  # a pipeline's own rule comes first
        assert tf_backend.skip_reason(key(mode, "seed", "mps")) == (
            "a pipeline series times the batches the pipeline delivers; the seed op is for the single-copy modes")
    assert backend.pipeline_skip_reason(key("dataset", "cast")) == (
        "a pipeline series times the batches the pipeline delivers; the cast op is for the single-copy modes")
    assert backend.pipeline_skip_reason(key("dataset", "copy")) is None


def test_absent_devices_name_what_would_bring_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """mps on a Mac names tensorflow-metal, cuda the CUDA build, anything else the base class's sentence."""
    tf_backend = TFBackend()
    monkeypatch.setattr(backend, "sys", SimpleNamespace(platform="darwin"))
    assert tf_backend.absent_reason("mps", ["cpu"]) == NO_APPLE_GPU
    assert tf_backend.absent_reason("cuda:0", ["cpu", "mps"]) == NO_CUDA_GPU
    monkeypatch.setattr(backend, "sys", SimpleNamespace(platform="linux"))
    assert tf_backend.absent_reason("mps", ["cpu", "cuda:0"]) == "tf sees no mps device here (it sees: cpu, cuda:0)"
    assert tf_backend.absent_reason("cuda:1", ["cpu", "cuda:0"]) == NO_CUDA_GPU
    assert tf_backend.absent_reason("xpu", []) == "tf sees no xpu device here (it sees: none)"


def test_only_host_to_device_is_timed() -> None:
    """h2d has no reason; d2h and bidir are refused word for word."""
    tf_backend = TFBackend()
    assert tf_backend.direction_reason(key()) is None
    assert tf_backend.direction_reason(key(direction=D2H)) == H2D_ONLY
    assert tf_backend.direction_reason(key("jit", "seed", "cuda:0", direction=BIDIR)) == H2D_ONLY


# The backend's facts, devices and environment


def test_the_backend_declares_its_names_modes_ops_and_sources() -> None:
    """tf: three default modes then tf.data's four, copy and seed, numpy and aligned sources (numpy alone for a pipeline)."""
    tf_backend = TFBackend()
    assert (tf_backend.name, tf_backend.title, tf_backend.module, tf_backend.extra) == ("tf", "TensorFlow", "tensorflow", "tf")
    assert tf_backend.default_modes == ("eager", "function", "jit")
    assert tf_backend.modes == ("eager", "function", "jit", "dataset", "prefetch_to_device", "copy_to_device", "generator")
    assert tf_backend.ops == ("copy", "seed") and tf_backend.isolated is True
    assert tf_backend.host_buffers == ("numpy", "aligned")
    for mode in MODES:
        assert tf_backend.sources(mode) == ("numpy", "aligned")
    for mode in PIPELINE_MODES["tf"]:
        assert tf_backend.sources(mode) == ("numpy",)


def test_devices_are_the_cpu_and_each_cuda_gpu_or_on_a_mac_mps_where_tensorflow_metal_shows_one(monkeypatch: pytest.MonkeyPatch,
                                                                                                 tf: Any) -> None:
    """Linux: cpu, cuda:0 ... cuda:N-1; macOS: cpu, plus mps for any GPU TensorFlow lists."""
    tf_backend = TFBackend()
    assert tf_backend.devices() == ["cpu"]  # this CPU-only machine
    monkeypatch.setattr(backend, "sys", SimpleNamespace(platform="linux"))
    show_gpus(monkeypatch, tf, {0: {}, 1: {}})
    assert tf_backend.devices() == ["cpu", "cuda:0", "cuda:1"]
    monkeypatch.setattr(backend, "sys", SimpleNamespace(platform="darwin"))
    assert tf_backend.devices() == ["cpu", "mps"]
    show_gpus(monkeypatch, tf, {})
    assert tf_backend.devices() == ["cpu"]
    monkeypatch.setattr(backend, "sys", SimpleNamespace(platform="linux"))
    assert tf_backend.devices() == ["cpu"]


def test_out_of_memory_is_a_memory_error_or_tensorflows_resource_exhausted(tf: Any) -> None:
    """MemoryError and ResourceExhaustedError (and their subclasses) are out of memory; other errors are not."""
    tf_backend = TFBackend()
    assert tf_backend.is_out_of_memory(MemoryError()) is True
    assert tf_backend.is_out_of_memory(type("Bigger", (MemoryError,), {})()) is True
    assert tf_backend.is_out_of_memory(tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor")) is True
    assert tf_backend.is_out_of_memory(tf.errors.InternalError(None, None, "failed copy")) is False
    assert tf_backend.is_out_of_memory(RuntimeError("CUDA_ERROR_OUT_OF_MEMORY")) is False


BUILD = {"cpu_compiler": "clang", "cuda_version": "12.8.1", "cudnn_version": "9.3", "cuda_compute_capabilities": ["sm_90"],
         "is_cuda_build": True}


def test_the_environment_without_a_gpu_lists_none_and_describes_none(monkeypatch: pytest.MonkeyPatch, tf: Any) -> None:
    """The version, the build's CUDA, cuDNN and capabilities, oneDNN, and no devices; device_lib is not asked."""
    monkeypatch.setattr(tf.sysconfig, "get_build_info", lambda: BUILD)
    monkeypatch.setattr(backend, "onednn_enabled", lambda: False)
    monkeypatch.setattr(backend, "physical_descriptions", lambda: pytest.fail("listed with no GPU"))
    assert TFBackend().environment() == {"version": tf.__version__, "cuda_build": "12.8.1", "cudnn_build": "9.3",
                                         "build_compute_capabilities": ["sm_90"], "onednn": False, "devices": []}


def test_the_environment_names_each_cuda_gpu_with_its_capability_and_pci_address(monkeypatch: pytest.MonkeyPatch, tf: Any) -> None:
    """GPU N: cuda:N, the details' name (else TensorFlow's), capability 'M.m', /device:GPU:N's pci bus id where it is one."""
    show_gpus(monkeypatch, tf, {0: {"device_name": "NVIDIA H100 80GB HBM3", "compute_capability": (9, 0)},
                                1: {"device_name": "NVIDIA A100-SXM4-80GB", "compute_capability": (8, 0)}, 2: {}, 3: {}})
    described = {"/device:GPU:0": "device: 0, name: NVIDIA H100 80GB HBM3, pci bus id: 0000:3b:00.0, compute capability: 9.0",
                 "/device:GPU:1": "device: 1, name: NVIDIA A100-SXM4-80GB, pci bus id: 0000:5e:00.0, compute capability: 8.0",
                 "/device:GPU:2": "device: 2, name: X, pci bus id: <undefined>"}
    monkeypatch.setattr(tf.sysconfig, "get_build_info", lambda: {})
    monkeypatch.setattr(backend, "physical_descriptions", lambda: described)
    monkeypatch.setattr(backend, "onednn_enabled", lambda: None)
    monkeypatch.setattr(backend, "sys", SimpleNamespace(platform="linux"))
    seen = TFBackend().environment()
    devices = [{"id": "cuda:0", "kind": "cuda", "name": "NVIDIA H100 80GB HBM3", "capability": "9.0", "pci_bus_id": "0000:3b:00.0"},
               {"id": "cuda:1", "kind": "cuda", "name": "NVIDIA A100-SXM4-80GB", "capability": "8.0", "pci_bus_id": "0000:5e:00.0"},
               {"id": "cuda:2", "kind": "cuda", "name": "/physical_device:GPU:2", "capability": None, "pci_bus_id": None},
               {"id": "cuda:3", "kind": "cuda", "name": "/physical_device:GPU:3", "capability": None, "pci_bus_id": None}]
    assert seen == {"version": tf.__version__, "cuda_build": None, "cudnn_build": None, "build_compute_capabilities": None,
                    "onednn": None, "devices": devices}


def test_the_environment_on_a_mac_names_tensorflow_metals_gpu_mps(monkeypatch: pytest.MonkeyPatch, tf: Any) -> None:
    """On macOS the GPU TensorFlow lists is mps, named METAL, with no capability and no PCI address."""
    show_gpus(monkeypatch, tf, {0: {"device_name": "METAL"}})
    monkeypatch.setattr(tf.sysconfig, "get_build_info", lambda: {"is_cuda_build": False})
    monkeypatch.setattr(backend, "physical_descriptions", lambda: {"/device:GPU:0": "device: 0, name: METAL, pci bus id: <undefined>"})
    monkeypatch.setattr(backend, "sys", SimpleNamespace(platform="darwin"))
    assert TFBackend().environment()["devices"] == [{"id": "mps", "kind": "mps", "name": "METAL", "capability": None,
                                                    "pci_bus_id": None}]


# Descriptions of the single-copy modes


@pytest.fixture
def described(monkeypatch: pytest.MonkeyPatch, tf: Any) -> dict[str, list[Any]]:
    """describe's helpers recorded: the device named, XLA's keyword asked for, the cast looked for (answering full_cast)."""
    calls: dict[str, list[Any]] = {"device_name": [], "compile_options": [], "seed_cast_scope": [], "full_cast": [False]}
    compile_options = backend.compile_options
    monkeypatch.setattr(backend, "device_name", lambda device: calls["device_name"].append(device) or f"named {device}")
    monkeypatch.setattr(backend, "compile_options",
                        lambda module, mode: calls["compile_options"].append((module is tf, mode)) or compile_options(module, mode))
    monkeypatch.setattr(backend, "seed_cast_scope", lambda module, device, shape: calls["seed_cast_scope"].append(
        (module is tf, device, shape)) or calls["full_cast"][0])
    monkeypatch.setattr(backend, "onednn_enabled", lambda: False)
    monkeypatch.setattr(backend, "apple_silicon", lambda: True)
    return calls


def info(device: str, transfer: str, sync: str, params: dict[str, Any], note: str) -> SeriesInfo:
    return SeriesInfo(device_name=f"named {device}", transfer=transfer, clock="time.perf_counter", sync=sync, params=params, note=note)


def test_a_cpu_copy_is_described_as_tensorflows_host_side_copy(described: dict[str, list[Any]]) -> None:
    """host-to-host, no wait, /CPU:0 and oneDNN, and the host copy; under jit XLA may copy once more."""
    params = {"tf_device": "/CPU:0", "onednn": False}
    for mode in MODES:
        for buffer in ("numpy", "aligned"):
            seen = TFBackend().describe(key(mode, "copy", "cpu", buffer), {})
            note = CPU_NOTE + ("; XLA may copy it once more" if mode == "jit" else "")
            assert seen == info("cpu", "host-to-host", CPU_SYNC, params, note), (mode, buffer)
    assert described["device_name"] == ["cpu"] * 6
    assert described["compile_options"] == [(True, mode) for mode in MODES for _ in range(2)]
    assert described["seed_cast_scope"] == []


def test_a_cpu_seed_is_described_as_the_fetched_cast(described: dict[str, list[Any]]) -> None:
    """eager and function: the copy, then the cast; the sync is the .numpy() fetch."""
    for mode in ("eager", "function"):
        seen = TFBackend().describe(key(mode, "seed"), {})
        assert seen == info("cpu", "host-to-host", SEED_SYNC, {"tf_device": "/CPU:0", "onednn": False}, CPU_NOTE + ", then the cast")
    assert described["seed_cast_scope"] == []


def test_a_jit_seed_says_whether_xla_casts_the_whole_batch_of_two(described: dict[str, list[Any]]) -> None:
    """seed_cast_scope(tf, device, (2, *shape)): True keeps the usual note, False says the slice is fused, None unknown."""
    params = {"tf_device": "/CPU:0", "onednn": False}
    notes = {True: CPU_NOTE + ", then the cast; XLA may copy it once more", False: XLA_FUSES, None: XLA_UNKNOWN}
    for full, note in notes.items():
        described["full_cast"][0] = full
        seen = TFBackend().describe(key("jit", "seed"), {})
        assert seen == info("cpu", "host-to-host", SEED_SYNC, {**params, "xla_casts_full_batch": full}, note)
    assert described["seed_cast_scope"] == [(True, "cpu", (2, *SHAPE))] * 3
    described["full_cast"][0] = False
    seen = TFBackend().describe(key("jit", "seed", "cuda:1"), {})
    assert seen == info("cuda:1", "host-to-device", SEED_SYNC, {"tf_device": "/GPU:1", "onednn": False, "xla_casts_full_batch": False,
                                                                "host_copies": HOST_COPIES}, f"{XLA_FUSES}; {HOST_COPIES}")


def test_a_cuda_copy_is_described_with_its_host_copies_and_its_wait(described: dict[str, list[Any]]) -> None:
    """host-to-device, /GPU:N, the host copies in params and note, the aligned source's note, and no unified memory."""
    for mode in MODES:
        sync = JIT_WAITS if mode == "jit" else COPY_WAITS
        params = {"tf_device": "/GPU:1", "onednn": False, "host_copies": HOST_COPIES}
        assert TFBackend().describe(key(mode, "copy", "cuda:1"), {}) == info("cuda:1", "host-to-device", sync, params, HOST_COPIES)
        aligned = TFBackend().describe(key(mode, "copy", "cuda:1", "aligned"), {})
        assert aligned == info("cuda:1", "host-to-device", sync, params, f"{HOST_COPIES}; {ALIGNED}")
    seed = TFBackend().describe(key("eager", "seed", "cuda:0"), {})
    assert seed == info("cuda:0", "host-to-device", SEED_SYNC, {"tf_device": "/GPU:0", "onednn": False, "host_copies": HOST_COPIES},
                        HOST_COPIES)


def test_an_apple_gpus_copy_says_whether_it_stays_in_unified_memory(monkeypatch: pytest.MonkeyPatch,
                                                                      described: dict[str, list[Any]]) -> None:
    """mps: unified_memory is apple_silicon(); Apple silicon's copy stays in unified memory, an Intel Mac's crosses PCIe."""
    for silicon, said in ((True, UNIFIED), (False, INTEL_MAC)):
        monkeypatch.setattr(backend, "apple_silicon", lambda silicon=silicon: silicon)
        params = {"tf_device": "/GPU:0", "onednn": False, "unified_memory": silicon, "host_copies": HOST_COPIES}
        for mode in ("eager", "function"):
            assert TFBackend().describe(key(mode, "copy", "mps"), {}) == info(
                "mps", "host-to-device", COPY_WAITS, params, f"{HOST_COPIES}{ON_A_MAC}; {said}")
        assert TFBackend().describe(key("eager", "copy", "mps", "aligned"), {}) == info(
            "mps", "host-to-device", COPY_WAITS, params, f"{HOST_COPIES}{ON_A_MAC}; {said}; {ALIGNED}")


def test_describing_jit_on_a_tensorflow_without_xlas_keyword_refuses_it(monkeypatch: pytest.MonkeyPatch,
                                                                          described: dict[str, list[Any]], tf: Any) -> None:
    """describe asks compile_options for the series' mode, whose refusal skips the series with its reason."""

    def refuse(module: Any, mode: str) -> dict[str, bool]:
        raise NotSupportedHere(f"no XLA for {mode}")

    monkeypatch.setattr(backend, "compile_options", refuse)
    with pytest.raises(NotSupportedHere, match="no XLA for jit"):
        TFBackend().describe(key("jit", "copy"), {})


# Host memory and preparation


def test_host_bytes_count_the_source_the_copies_xlas_the_macs_destination_and_the_seed_cast() -> None:
    """4 batches, one more under jit, one more on mps, four more for the seed's float32 cast on the CPU or a Mac."""
    tf_backend = TFBackend()
    n = 4 * 192
    expected = {("eager", "copy", "cpu"): 4, ("function", "copy", "cuda:0"): 4, ("jit", "copy", "cpu"): 5, ("jit", "copy", "cuda:1"): 5,
                ("eager", "copy", "mps"): 5, ("eager", "seed", "cpu"): 8, ("jit", "seed", "cpu"): 9, ("eager", "seed", "cuda:0"): 4,
                ("jit", "seed", "cuda:0"): 5, ("function", "seed", "mps"): 9, ("jit", "seed", "mps"): 10}
    for (mode, op, device), batches in expected.items():
        assert tf_backend.host_bytes(key(mode, op, device).at(4)) == batches * n, (mode, op, device)


def test_pipeline_host_bytes_count_the_items_their_sliced_tensor_and_the_batches_in_flight() -> None:
    """(2b+1) items, twice where from_tensor_slices holds them as a tensor, and 4 + BUFFER_BATCHES batches."""
    tf_backend = TFBackend()
    items, n = 9 * 192, 4 * 192
    for mode in ("dataset", "prefetch_to_device", "copy_to_device"):
        assert tf_backend.host_bytes(key(mode, "copy", "cuda:0").at(4)) == 2 * items + (4 + BUFFER_BATCHES) * n
    assert tf_backend.host_bytes(key("generator", "copy", "cuda:0").at(4)) == items + (4 + BUFFER_BATCHES) * n
    estimate = backend.pipeline_host_bytes(key("dataset").at(1))
    assert estimate == 2 * 3 * 192 + 6 * 192 and type(estimate) is int  # bytes: a whole number, as budgets add them


def test_prepare_makes_a_pipeline_for_a_tf_data_mode_and_a_transfer_for_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    """prepare(spec, params): TFPipeline(spec, params) for tf.data's modes, TFTransfer(spec) for the rest."""
    monkeypatch.setattr(backend, "TFPipeline", lambda spec, params: ("pipeline", spec, params))
    monkeypatch.setattr(backend, "TFTransfer", lambda spec: ("transfer", spec))
    params = {"overlap": True}
    for mode in PIPELINE_MODES["tf"]:
        assert TFBackend().prepare(key(mode).at(2), params) == ("pipeline", key(mode).at(2), params)
    for mode in MODES:
        assert TFBackend().prepare(key(mode, "seed").at(2), params) == ("transfer", key(mode, "seed").at(2))


# The tf.data pipelines: descriptions


@pytest.fixture
def piped(monkeypatch: pytest.MonkeyPatch, tf: Any) -> list[str]:
    """describe_pipeline's helpers: device_name answers 'named <device>', oneDNN False, Apple silicon True."""
    named: list[str] = []
    monkeypatch.setattr(backend, "device_name", lambda device: named.append(device) or f"named {device}")
    monkeypatch.setattr(backend, "onednn_enabled", lambda: False)
    monkeypatch.setattr(backend, "apple_silicon", lambda: True)
    return named


def pipeline_notes(mode: str, target: str, device: str) -> list[str]:
    """The notes a tf.data series' description joins, as the module must write them."""
    if mode == "dataset":
        step = (f"then the step's tf.identity under tf.device('{target}') copies it to the device from the batch's host memory,"
                " in the loop's own thread, as TFTransfer's eager copy does")
        return [INJECTED, CPU_STEP if device == "cpu" else step]
    first = {
        "generator": [f"from_generator over the items (a Python generator run by a py_func, under the GIL, each item converted to"
                      f" a tensor), batch(b): {BATCH_OP}; then prefetch_to_device('{target}', {BUFFER_BATCHES})",
                      "tensorflow#43905 reports that prefetch_to_device 'does not do anything' after from_generator"],
        "copy_to_device": [f"{SLICED}; then copy_to_device('{target}') and prefetch({BUFFER_BATCHES})", SAME_PIPELINE],
        "prefetch_to_device": [f"{SLICED}; then prefetch_to_device('{target}', {BUFFER_BATCHES})"],
    }[mode]
    last = [CPU_SAME_DEVICE] if device == "cpu" else [PINNED_FINDING] + ([METAL_UNKNOWN] if device == "mps" else [])
    return [*first, COPY_TO_DEVICE, PREFETCH_TO_DEVICE, *last]


def pipeline_params(mode: str, target: str) -> dict[str, Any]:
    buffer = "autotuned (tf.data's injected prefetch)" if mode == "dataset" else BUFFER_BATCHES
    return {"tf_device": target, "dataset_items": "2b+1, each its own bytes, repeated without end",
            "iterator": "one, made when the point is prepared", "buffer_size": buffer}


@pytest.mark.parametrize("mode", PIPELINE_MODES["tf"])
def test_a_pipeline_series_is_described_word_for_word_on_the_cpu_a_cuda_gpu_and_an_apple_gpu(piped: list[str], mode: str) -> None:
    """Each device's notes, params (oneDNN on the CPU, unified memory on a Mac), transfer, clock and wait."""
    cases = [("cpu", "/CPU:0", "host-to-host", PIPELINE_CPU_SYNC, {"onednn": False}),
             ("cuda:1", "/GPU:1", "host-to-device", PIPELINE_GPU_SYNC, {}),
             ("mps", "/GPU:0", "host-to-device", PIPELINE_GPU_SYNC, {"unified_memory": True})]
    for device, target, transfer, sync, extra in cases:
        seen = TFBackend().describe(key(mode, "copy", device), {})
        assert seen == SeriesInfo(device_name=f"named {device}", transfer=transfer, clock=PIPELINE_CLOCK, sync=sync,
                                  params={**pipeline_params(mode, target), **extra}, note="; ".join(pipeline_notes(mode, target, device)))
    assert piped == ["cpu", "cuda:1", "mps"]


def test_a_pipeline_on_a_cpu_made_asynchronous_waits_by_fetching(monkeypatch: pytest.MonkeyPatch, piped: list[str], tf: Any) -> None:
    """With synchronous execution off, a CPU series fetches one element, as on a GPU."""
    monkeypatch.setattr(tf.config.experimental, "get_synchronous_execution", lambda: False)
    assert backend.describe_pipeline(key("dataset"), {}).sync == PIPELINE_GPU_SYNC
    assert backend.describe_pipeline(key("generator"), {}).sync == PIPELINE_GPU_SYNC


# The tf.data pipelines: building them


class Dataset:
    """tf.data.Dataset as pipeline_dataset chains it, each step with TensorFlow 2.21's signature, written down."""

    def __init__(self, chain: list[tuple[Any, ...]]) -> None:
        self.chain = chain

    def then(self, *step: Any) -> Dataset:
        return Dataset([*self.chain, step])

    def repeat(self, count: Any = None, name: Any = None) -> Dataset:
        return self.then("repeat", count, name)

    def batch(self, batch_size: int, drop_remainder: bool = False, num_parallel_calls: Any = None, deterministic: Any = None,
              name: Any = None) -> Dataset:
        return self.then("batch", batch_size, drop_remainder, num_parallel_calls, deterministic, name)

    def apply(self, transformation_func: Any) -> Dataset:
        return transformation_func(self)

    def prefetch(self, buffer_size: int, name: Any = None) -> Dataset:
        return self.then("prefetch", buffer_size, name)

    @staticmethod
    def from_tensor_slices(tensors: Any, name: Any = None) -> Dataset:
        return Dataset([("from_tensor_slices", tensors, name)])

    @staticmethod
    def from_generator(generator: Any, output_types: Any = None, output_shapes: Any = None, args: Any = None,
                       output_signature: Any = None, name: Any = None) -> Dataset:
        return Dataset([("from_generator", generator, output_types, output_shapes, args, output_signature, name)])


def copy_to_device(target_device: str, source_device: str = "/cpu:0") -> Any:
    return lambda dataset: dataset.then("copy_to_device", target_device, source_device)


def prefetch_to_device(device: str, buffer_size: Any = None) -> Any:
    return lambda dataset: dataset.then("prefetch_to_device", device, buffer_size)


DATA = SimpleNamespace(data=SimpleNamespace(Dataset=Dataset, experimental=SimpleNamespace(copy_to_device=copy_to_device,
                                                                                          prefetch_to_device=prefetch_to_device)),
                       TensorSpec=lambda shape, dtype="float32", name=None: ("TensorSpec", shape, dtype, name), uint8="uint8")


def test_each_pipeline_mode_builds_its_chain_for_the_target_and_buffer() -> None:
    """dataset: slices, repeat, batch(b); copy_to_device(target) then prefetch(2); prefetch_to_device(target, 2)."""
    items = pattern((5, *SHAPE), 0)
    sliced = [("from_tensor_slices", items, None), ("repeat", None, None), ("batch", 3, False, None, None, None)]
    built = {mode: backend.pipeline_dataset(DATA, mode, [items], 3, "/GPU:1").chain for mode in PIPELINE_MODES["tf"]}
    for mode in ("dataset", "copy_to_device", "prefetch_to_device"):
        assert built[mode][0][1] is items
    assert built["dataset"] == sliced
    assert built["copy_to_device"] == [*sliced, ("copy_to_device", "/GPU:1", "/cpu:0"), ("prefetch", BUFFER_BATCHES, None)]
    assert built["prefetch_to_device"] == [*sliced, ("prefetch_to_device", "/GPU:1", BUFFER_BATCHES)]
    generator = built["generator"]
    assert generator[0][0] == "from_generator" and generator[0][2:] == (None, None, None, ("TensorSpec", SHAPE, "uint8", None), None)
    assert generator[1:] == [("batch", 3, False, None, None, None), ("prefetch_to_device", "/GPU:1", BUFFER_BATCHES)]


def test_the_generator_yields_the_held_items_in_order_without_end_until_they_are_let_go() -> None:
    """from_generator's generator cycles through held[0] and stops once held is emptied."""
    items = pattern((5, *SHAPE), 0)
    held = [items]
    generate = backend.pipeline_dataset(DATA, "generator", held, 2, "/CPU:0").chain[0][1]
    yielded = generate()
    for index in range(12):
        assert np.array_equal(next(yielded), items[index % 5]), index
    held.clear()
    with pytest.raises(StopIteration):
        next(yielded)


# The tf.data pipelines: the transfer


@pytest.fixture
def kernel_made(monkeypatch: pytest.MonkeyPatch, tf: Any) -> dict[str, list[Any]]:
    """How a pipeline makes its kernel: QR's and the random matrix's arguments and scopes, the copies' scopes, TF32 switched."""
    from tensorflow.python.eager import context

    calls: dict[str, list[Any]] = {"normal": [], "qr": [], "identity": [], "zeros": [], "tf32": [], "time_kernel": []}
    normal, qr, identity, zeros = tf.random.stateless_normal, tf.linalg.qr, tf.identity, tf.zeros

    def here() -> str:
        return context.context().device_name

    monkeypatch.setattr(tf.random, "stateless_normal", lambda shape, seed: calls["normal"].append((shape, seed)) or normal(shape, seed))
    monkeypatch.setattr(tf.linalg, "qr", lambda x: calls["qr"].append(here()) or qr(x))
    monkeypatch.setattr(tf, "identity", lambda x: calls["identity"].append(here()) or identity(x))
    monkeypatch.setattr(tf, "zeros", lambda shape, dtype: calls["zeros"].append((shape, dtype, here())) or zeros(shape, dtype))
    monkeypatch.setattr(tf.config.experimental, "enable_tensor_float_32_execution", lambda enabled: calls["tf32"].append(enabled))
    monkeypatch.setattr(TFPipeline, "time_kernel", lambda self: calls["time_kernel"].append("dataset" in vars(self)))
    return calls


def test_a_cpu_pipeline_makes_an_orthogonal_kernel_and_a_resident_zero_and_does_not_fetch(kernel_made: dict[str, list[Any]],
                                                                                          tf: Any) -> None:
    """On the CPU: a 128x128 Q of QR(stateless_normal(seed (0, 0))), zeros([1], uint8), TF32 untouched, no fetch, batches in order."""
    pipeline = TFPipeline(key("dataset").at(2), {})
    try:
        assert (pipeline.label, pipeline.batch_size, pipeline.device_id, pipeline.mode, pipeline.target) == (
            "tf/dataset/copy@cpu", 2, "cpu", "dataset", "/CPU:0")
        assert pipeline.fetch is False and pipeline.depth == 4 * BUFFER_BATCHES and pipeline.transfers == 0
        assert pipeline.items.shape == (5, *SHAPE) and np.array_equal(pipeline.items, pattern((5, *SHAPE), 0))
        assert len(pipeline.held) == 1 and pipeline.held[0] is pipeline.items
        assert kernel_made["normal"] == [((128, 128), (0, 0))] and kernel_made["qr"] == [ON_CPU]
        assert kernel_made["identity"] == [ON_CPU] and kernel_made["zeros"] == [([1], tf.uint8, ON_CPU)]
        assert kernel_made["tf32"] == [] and kernel_made["time_kernel"] == []
        expected = tf.linalg.qr(tf.random.stateless_normal((128, 128), seed=(0, 0)))[0].numpy()
        assert np.array_equal(pipeline.matrix.numpy(), expected)
        assert pipeline.resident.dtype == tf.uint8 and pipeline.resident.numpy().tolist() == [0]
        assert pipeline.kernel == "float32 128x128 matmul"
        pipeline()
        pipeline.verify()  # its iterator delivers the dataset's batches in order
        assert pipeline.transfers == 2 + pipeline.depth
    finally:
        pipeline.close()


def test_a_gpu_pipeline_fetches_turns_tf32_off_and_copies_its_kernel_to_the_target(monkeypatch: pytest.MonkeyPatch,
                                                                                    kernel_made: dict[str, list[Any]]) -> None:
    """On cuda:0: QR on the CPU, the matrix and resident zero under /GPU:0, TF32 disabled, each batch fetched."""
    from tensorflow.python.eager import context

    sides: list[str] = []
    monkeypatch.setattr(backend, "kernel_side", lambda device: sides.append(device) or 4)
    built, build = [], backend.pipeline_dataset
    monkeypatch.setattr(backend, "pipeline_dataset", lambda *args: built.append(args) or build(*args))
    pipeline = TFPipeline(key("dataset", "copy", "cuda:0").at(2), {})
    try:
        assert sides == ["cuda:0"] and kernel_made["normal"] == [((4, 4), (0, 0))]
        assert kernel_made["qr"] == [ON_CPU] and kernel_made["identity"] == [SCOPE + "GPU:0"]
        assert kernel_made["zeros"][0][2] == SCOPE + "GPU:0" and kernel_made["tf32"] == [False]
        assert pipeline.fetch is True and pipeline.target == "/GPU:0"
        assert pipeline.kernel == "float32 1024x1024 matmul"  # named by the device's kind, as the pipeline module sizes it
        assert built == [(pipeline.tf, "dataset", [pipeline.items], 2, "/GPU:0")]  # the series' own mode and target
        scopes, matmul = [], pipeline.tf.matmul
        monkeypatch.setattr(pipeline.tf, "matmul", lambda a, b: scopes.append(context.context().device_name) or matmul(a, b))
        pipeline.repeats = 2
        pipeline._compute(None)
        assert scopes == [SCOPE + "GPU:0"] * 2  # the step's kernel runs on the target
    finally:
        pipeline.close()


def test_a_cpu_pipeline_made_asynchronous_fetches(monkeypatch: pytest.MonkeyPatch, kernel_made: dict[str, list[Any]], tf: Any) -> None:
    """With synchronous execution off the CPU's ops are only queued: each batch is fetched."""
    monkeypatch.setattr(tf.config.experimental, "get_synchronous_execution", lambda: False)
    pipeline = TFPipeline(key("dataset").at(2), {})
    pipeline.close()
    assert pipeline.fetch is True


def test_overlap_times_the_kernel_before_the_pipeline_starts(kernel_made: dict[str, list[Any]]) -> None:
    """params['overlap'] true times the kernel once, before the dataset exists; absent or false, not at all."""
    for params, timed in (({"overlap": True}, [False]), ({"overlap": False}, []), ({}, [])):
        kernel_made["time_kernel"].clear()
        pipeline = TFPipeline(key("prefetch_to_device").at(2), params)
        pipeline.close()
        assert kernel_made["time_kernel"] == timed, params


@pytest.fixture(scope="module")
def pipelines(tf: Any) -> Iterator[dict[str, TFPipeline]]:
    made = {mode: TFPipeline(key(mode).at(2), {}) for mode in ("dataset", "prefetch_to_device")}
    yield made
    for pipeline in made.values():
        pipeline.close()


class Element:
    def __init__(self, fetched: list[str]) -> None:
        self.fetched = fetched

    def numpy(self) -> None:
        self.fetched.append("numpy")


class Batch:
    """A delivered tensor of rank 3: indexing it and fetching the element are written down."""

    shape = SimpleNamespace(rank=3)

    def __init__(self) -> None:
        self.fetched: list[Any] = []

    def __getitem__(self, index: Any) -> Element:
        self.fetched.append(index)
        return Element(self.fetched)


def test_a_pipeline_wait_fetches_one_element_only_where_it_must(monkeypatch: pytest.MonkeyPatch, pipelines: Any) -> None:
    """fetch: tensor[0, 0, 0].numpy(); no fetch: nothing read."""
    pipeline = pipelines["dataset"]
    batch = Batch()
    pipeline._wait(batch)
    assert batch.fetched == []
    monkeypatch.setattr(pipeline, "fetch", True)
    pipeline._wait(batch)
    assert batch.fetched == [(0, 0, 0), "numpy"]


def test_the_dataset_modes_step_copies_each_batch_under_the_target_counts_and_waits(monkeypatch: pytest.MonkeyPatch, tf: Any,
                                                                                      pipelines: Any) -> None:
    """dataset: the next batch through tf.identity under the target; the *_to_device modes' batch as delivered; one counted each."""
    from tensorflow.python.eager import context

    scopes: list[str] = []
    identity = tf.identity
    monkeypatch.setattr(tf, "identity", lambda x: scopes.append(context.context().device_name) or identity(x))
    for mode, pipeline in pipelines.items():
        waited: list[Any] = []
        delivered = tf.constant([[7, 8]], tf.uint8)
        monkeypatch.setattr(pipeline, "batches", iter([delivered]))
        monkeypatch.setattr(pipeline, "_wait", waited.append)
        monkeypatch.setattr(pipeline, "transfers", 4)
        batch = pipeline._deliver()
        assert waited == [batch] and pipeline.transfers == 5
        if mode == "dataset":
            assert batch is not delivered and batch.numpy().tolist() == [[7, 8]] and scopes == [ON_CPU]
        else:
            assert batch is delivered and scopes == [ON_CPU]  # no identity for this mode


def test_a_pipeline_batch_on_another_device_fails_and_one_on_the_target_is_read_back(monkeypatch: pytest.MonkeyPatch,
                                                                                      pipelines: Any) -> None:
    """_read: a batch not on DEVICE:<target> (any case) fails word for word; one there is read whole with no staging."""
    pipeline = pipelines["dataset"]
    bytes_ = np.arange(6, dtype=np.uint8).reshape(2, 3)
    read, staging = pipeline._read(Result(bytes_))
    out = np.empty(4, np.uint8)
    read(2, out)
    assert staging is None and out.tolist() == [2, 3, 4, 5]
    monkeypatch.setattr(pipeline, "target", "/cpu:0")
    pipeline._read(Result(bytes_))
    monkeypatch.setattr(pipeline, "target", "/GPU:0")
    with pytest.raises(VerificationError) as failed:
        pipeline._read(Result(bytes_))
    assert str(failed.value) == f"tf/dataset/copy@cpu: the batch is on {ON_CPU}, not on /GPU:0"


def test_the_kernel_adds_the_fed_first_byte_then_multiplies_by_the_matrix_repeats_times(monkeypatch: pytest.MonkeyPatch, tf: Any,
                                                                                         pipelines: Any) -> None:
    """_compute: (matrix + float32(first byte)) @ matrix, repeats times, fed by the batch or by the resident zero; then waited for."""
    pipeline = pipelines["prefetch_to_device"]
    waited: list[np.ndarray] = []
    monkeypatch.setattr(pipeline, "_wait", lambda product: waited.append(product.numpy()))
    monkeypatch.setattr(pipeline, "repeats", 2)
    matrix = pipeline.matrix.numpy().astype(np.float64)
    pipeline._compute(tf.constant([[9, 4], [5, 6]], tf.uint8))
    pipeline._compute(None)
    for product, first in zip(waited, (9.0, 0.0)):
        assert product.dtype == np.float32 and product.shape == (128, 128)
        assert np.allclose(product, (matrix + first) @ matrix @ matrix, rtol=1e-4, atol=1e-4), first


def test_a_closed_pipeline_lets_go_of_its_iterator_dataset_kernel_and_items(kernel_made: dict[str, list[Any]]) -> None:
    """close: batches, dataset, matrix and resident None; held emptied in place (its generator sees that)."""
    pipeline = TFPipeline(key("generator").at(2), {})
    held = pipeline.held
    pipeline.close()
    assert (pipeline.batches, pipeline.dataset, pipeline.matrix, pipeline.resident, pipeline.items) == (None,) * 5
    assert held == [] and pipeline.held is held
