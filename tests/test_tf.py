"""Real TensorFlow on the CPU: every mode and op, its verification, and its worker process."""

import importlib.util
import os
import signal
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import FAST, FAST_ARGS, HAS_TORCH
from xferbench.measuring.backends import BACKENDS
from xferbench.measuring.measure import measure_series
from xferbench.core.results import Series, load
from xferbench.core.spec import SeriesKey
from xferbench.measuring.sweep import SweepConfig, make_plan, new_result, run_plan
from xferbench.core.timing import TimingConfig

HAS_TF = importlib.util.find_spec("tensorflow") is not None
pytestmark = pytest.mark.skipif(not HAS_TF, reason="TensorFlow not installed (pip install 'xferbench[tf]')")
SMALL = (32, 32, 3)


def sweep(**kwargs):
    plan = make_plan(SweepConfig(shape=SMALL, timing=FAST, device="cpu", **kwargs))
    try:
        return run_plan(plan, new_result(plan, {}), save=lambda r: None), plan
    finally:
        plan.close()


def in_process(mode: str, op: str = "copy", batch_sizes=(2,), host_buffer: str = "numpy") -> Series:
    key = SeriesKey("tf", mode, op, "cpu", SMALL, host_buffer)
    series = Series("tf", mode, op, "cpu", list(SMALL), host_buffer)
    measure_series(BACKENDS["tf"], key, batch_sizes, {}, FAST, series)
    return series


@pytest.mark.slow
def test_every_mode_and_op_moves_real_bytes_in_a_worker() -> None:
    result, plan = sweep(frameworks=("tf",), ops=("copy", "seed"), batch_sizes=(1, 4))
    labels = {s.label(): s for s in result.series}
    assert sorted(labels) == sorted(f"tf/{m}/{o}@cpu" for m in ("eager", "function", "jit") for o in ("copy", "seed"))
    for series in result.series:
        assert series.status == "ok", series.reason
        assert [p.status for p in series.points] == ["ok", "ok"], [p.error for p in series.points]
        assert series.transfer == "host-to-host" and series.params["tf_device"] == "/CPU:0"
        assert all(p.host_offset in (0, 16, 32, 48) and p.mbps > 0 for p in series.points)  # where malloc put it
    assert labels["tf/eager/copy@cpu"].sync.startswith("none needed")  # CPU ops are synchronous
    assert labels["tf/jit/copy@cpu"].note.endswith("XLA may copy it once more")
    assert ".numpy()" in labels["tf/function/seed@cpu"].sync
    assert plan.environments()["tf"]["pid"] != os.getpid()  # measured in its own process


@pytest.mark.slow
def test_xla_slicing_before_the_cast_is_detected_and_said() -> None:
    seed = in_process("jit", "seed")
    assert seed.status == "ok"
    assert seed.params["xla_casts_full_batch"] is False  # XLA 2.x on the CPU fuses the slice into the cast
    assert "only item [0, 0] is converted" in seed.note


def test_a_copy_that_stops_after_warm_up_fails_verification(monkeypatch) -> None:
    from xferbench.measuring.backends.tensorflow import TFTransfer

    original, kept = TFTransfer._run, {}

    def stale(self):
        if "result" not in kept:
            kept["result"] = original(self)
        return kept["result"]

    monkeypatch.setattr(TFTransfer, "_run", stale)
    series = in_process("eager")
    assert series.status == "failed" and "differ from the source" in series.reason


def test_a_tensor_that_aliases_the_numpy_source_fails_verification(monkeypatch) -> None:
    import tensorflow as tf

    from xferbench.measuring.backends.tensorflow import TFTransfer

    # DLPack wraps the NumPy buffer without copying: the trap a zero-copy conversion would be.
    # (TensorFlow aborts on an unaligned DLPack buffer, hence the aligned source.)
    monkeypatch.setattr(TFTransfer, "_run", lambda self: (tf.experimental.dlpack.from_dlpack(self.host.__dlpack__()), None))
    series = in_process("eager", host_buffer="aligned")
    assert series.status == "failed" and "shares memory with the NumPy source" in series.reason


@pytest.mark.slow
def test_host_buffer_axis() -> None:
    result, _ = sweep(frameworks=("tf",), modes=("eager",), host_buffers=("numpy", "aligned", "pinned"), batch_sizes=(1,))
    labels = {s.label(): s for s in result.series}
    assert set(labels) == {"tf/eager/copy@cpu", "tf/eager/copy+aligned@cpu", "tf/eager/copy+pinned@cpu"}
    assert labels["tf/eager/copy+aligned@cpu"].points[0].host_offset == 0
    assert labels["tf/eager/copy+aligned@cpu"].host_buffer == "aligned"
    pinned = labels["tf/eager/copy+pinned@cpu"]
    assert pinned.status == "skipped" and "no user-facing pinned host memory" in pinned.reason


@pytest.mark.slow
@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
def test_tf_and_torch_run_in_two_workers_into_one_file(tmp_path) -> None:
    from typer.testing import CliRunner

    from xferbench.cli import app

    out = tmp_path / "both.json"
    args = ["sweep", "-f", "tf", "-f", "torch", "-m", "eager", "-m", "pageable", "--device", "cpu",
            "--batch-sizes", "1,2", "--shape", "16x16x3", "-o", str(out), *FAST_ARGS]  # fmt: skip
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    saved = load(out)
    assert [s.label() for s in saved.series] == ["tf/eager/copy@cpu", "torch/pageable/copy@cpu"]
    assert all(s.status == "ok" and len(s.points) == 2 for s in saved.series)
    frameworks = saved.environment["frameworks"]
    assert frameworks["tf"]["pid"] != frameworks["torch"]["pid"]  # never in one process
    assert {"tensorflow", "torch"} <= set(saved.environment["versions"])


@pytest.mark.slow
@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed")
def test_a_killed_worker_costs_only_the_series_it_was_running() -> None:
    # Each point samples for 0.3 s, so the kill lands while batch 2 is being measured.
    slow = TimingConfig(warmup_calls=1, warmup_s=0.0, min_samples=3, min_time_s=0.3, max_samples=10**6, max_time_s=5.0)
    plan = make_plan(SweepConfig(frameworks=("torch", "tf"), modes=("pageable", "eager"), ops=("copy", "seed"),
                                 shape=SMALL, timing=slow, device="cpu", batch_sizes=(1, 2, 4)))  # fmt: skip
    saves = []

    def kill_torch_at_batch_2(series, batch_size) -> None:
        if series.label() == "torch/pageable/copy@cpu" and batch_size == 2:
            os.kill(plan.runners["torch"].pid, signal.SIGKILL)

    try:
        result = run_plan(plan, new_result(plan, {}), save=lambda r: saves.append(r.status), on_start=kill_torch_at_batch_2)
    finally:
        plan.close()
    by_label = {s.label(): s for s in result.series}
    killed = by_label["torch/pageable/copy@cpu"]
    assert killed.status == "failed" and "killed by SIGKILL" in killed.reason
    assert [p.status for p in killed.points] == ["ok", "error", "skipped"]  # batch 1 was measured and is kept
    assert killed.points[1].error == "the worker died while measuring this batch"
    assert killed.points[-1].error == "not measured: the worker died"
    for label in ("torch/pageable/seed@cpu", "tf/eager/copy@cpu", "tf/eager/seed@cpu"):  # fresh workers go on
        assert by_label[label].status == "ok" and [p.status for p in by_label[label].points] == ["ok"] * 3
    assert result.status == "complete" and saves[-1] == "complete"


@pytest.mark.slow
def test_jit_flag_runs_only_tf_jit(tmp_path) -> None:
    from typer.testing import CliRunner

    from xferbench.cli import app

    out = tmp_path / "jit.json"
    r = CliRunner().invoke(app, ["sweep", "--jit", "--device", "cpu", "--batch-sizes", "1", "--shape", "8x8x3",
                                 "-o", str(out), *FAST_ARGS])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert [s.label() for s in load(out).series] == ["tf/jit/copy@cpu"]


@pytest.mark.slow
def test_another_python_runs_the_worker(tmp_path) -> None:
    import sys

    from typer.testing import CliRunner

    from xferbench.cli import app

    out = tmp_path / "py.json"
    r = CliRunner().invoke(app, ["sweep", "-f", "tf", "-m", "eager", "--python", f"tf={sys.executable}", "--device",
                                 "cpu", "--batch-sizes", "1", "--shape", "8x8x3", "-o", str(out), *FAST_ARGS])  # fmt: skip
    assert r.exit_code == 0, r.output
    saved = load(out)
    assert saved.series[0].status == "ok"
    assert saved.config["pythons"] == {"tf": sys.executable}
    assert saved.environment["frameworks"]["tf"]["executable"] == sys.executable


def test_transfer_source_really_is_numpy() -> None:
    from xferbench.measuring.backends.tensorflow import TFTransfer

    transfer = TFTransfer(SeriesKey("tf", "eager", "copy", "cpu", SMALL).at(2))
    assert isinstance(transfer.host, np.ndarray) and transfer.host.shape == (2, *SMALL)
    transfer.verify()
    transfer.close()


@pytest.mark.slow
def test_mps_without_tensorflow_metal_names_it(monkeypatch) -> None:
    from typer.testing import CliRunner

    from xferbench.cli import app

    # The backend in this process believes it is on a Mac; the worker (on this machine) sees no Apple GPU.
    monkeypatch.setattr("xferbench.measuring.backends.tensorflow.sys", SimpleNamespace(platform="darwin"))
    monkeypatch.setattr("xferbench.measuring.sweep.on_macos", lambda: True)
    r = CliRunner().invoke(app, ["sweep", "-f", "tf", "--device", "mps"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "device 'mps' is not present" in r.stderr and "install tensorflow-metal" in r.stderr


# A GPU's device scopes, checked on two logical CPUs with soft placement off: a scope TensorFlow ignores
# shows as a tensor on the wrong one. Run in a fresh process, since logical devices are set before use.
PLACEMENT = """
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
tf.config.set_soft_device_placement(False)
from xferbench.measuring.backends import tensorflow as backend
from xferbench.core.spec import SeriesKey
backend.tf_device = lambda device: "/CPU:1"  # stands in for cuda:1 -> /GPU:1
for mode in ("eager", "function", "jit"):
    for op in ("copy", "seed"):
        transfer = backend.TFTransfer(SeriesKey("tf", mode, op, "cuda:1", (8, 8, 3)).at(2))
        transfer()
        transfer.verify()
        print(mode, op, "on", transfer.target)
"""


@pytest.mark.slow
def test_every_mode_runs_on_the_device_its_series_names() -> None:
    """Under jit_compile=True the tf.device inside the function is ignored and the function runs where it
    is called: GPU:0. Each call is therefore made under the target's scope too."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", PLACEMENT], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split("\n")[:6] == [f"{m} {o} on /CPU:1" for m in ("eager", "function", "jit") for o in ("copy", "seed")]


def fake_gpu(monkeypatch, tf) -> None:
    """TensorFlow on this machine believes it has one CUDA GPU; its ops still run on the CPU."""
    from xferbench.measuring.backends import tensorflow as backend

    gpu = tf.config.PhysicalDevice(name="/physical_device:GPU:0", device_type="GPU")
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: [gpu] if kind == "GPU" else [])
    monkeypatch.setattr(tf.config.experimental, "get_device_details", lambda gpu: {"device_name": "NVIDIA H100 80GB HBM3",
                                                                                   "compute_capability": (9, 0)})  # fmt: skip
    monkeypatch.setattr(backend, "physical_descriptions", lambda: {
        "/device:GPU:0": "device: 0, name: NVIDIA H100 80GB HBM3, pci bus id: 0000:3b:00.0, compute capability: 9.0"})
    monkeypatch.setattr(backend, "tf_device", lambda device: "/CPU:0")


def test_a_gpu_copy_adds_no_device_wide_sync(monkeypatch) -> None:
    """sync_devices waits on every device's compute stream, not the copy's, and is a no-op on Metal:
    a GPU call relies on TensorFlow's own wait for its copy, and says so per mode."""
    from xferbench.measuring.backends import tensorflow as backend

    tf = backend._tf()
    calls = []
    monkeypatch.setattr(tf.test.experimental, "sync_devices", lambda: calls.append(1))
    fake_gpu(monkeypatch, tf)
    for mode in ("eager", "function", "jit"):
        transfer = backend.TFTransfer(SeriesKey("tf", mode, "copy", "cuda:0", SMALL).at(2))
        for _ in range(3):
            transfer()
        transfer.verify()
        info = backend.TFBackend().describe(SeriesKey("tf", mode, "copy", "cuda:0", SMALL), {})
        assert info.sync == (backend.JIT_WAITS if mode == "jit" else backend.COPY_WAITS)
    assert calls == []
    assert "only queued" in backend.JIT_WAITS and "no device-wide sync" in backend.COPY_WAITS


def test_a_gpu_series_says_what_its_call_copies_on_the_host(monkeypatch) -> None:
    from xferbench.measuring.backends import tensorflow as backend

    fake_gpu(monkeypatch, backend._tf())
    info = backend.TFBackend().describe(SeriesKey("tf", "eager", "copy", "cuda:0", SMALL), {})
    assert info.transfer == "host-to-device" and info.device_name == "NVIDIA H100 80GB HBM3"
    assert info.note.startswith("each call copies the batch on the host before the device copy: NumPy copies the array")
    assert info.params["host_copies"] == backend.HOST_COPIES and isinstance(info.params["onednn"], bool)
    aligned = backend.TFBackend().describe(SeriesKey("tf", "function", "copy", "cuda:0", SMALL, "aligned"), {})
    assert "the aligned source changes only what NumPy's copy reads" in aligned.note
    cpu = backend.TFBackend().describe(SeriesKey("tf", "eager", "copy", "cpu", SMALL), {})
    assert "host_copies" not in cpu.params and cpu.note.startswith("on the CPU this is TensorFlow's host-side copy")
    # a GPU call holds the source, NumPy's copy, TensorFlow's copy of that and the read-back, and XLA's under jit
    key = SeriesKey("tf", "eager", "copy", "cuda:0", SMALL)
    assert backend.TFBackend().host_bytes(key.at(8)) == 4 * key.at(8).nbytes
    assert backend.TFBackend().host_bytes(SeriesKey("tf", "jit", "copy", "cuda:0", SMALL).at(8)) == 5 * key.at(8).nbytes


@pytest.mark.parametrize("host_buffer", ["numpy", "aligned"])
def test_numpy_copies_the_batch_on_every_call_aligned_or_not(host_buffer) -> None:
    """What the host-copies label rests on: NumPy allocates a copy of the whole batch inside every call
    (tracemalloc sees NumPy's allocations, not TensorFlow's). If a TensorFlow release stops, this fails."""
    import tracemalloc

    from xferbench.measuring.backends.tensorflow import TFTransfer

    transfer = TFTransfer(SeriesKey("tf", "eager", "copy", "cpu", (64, 256, 3), host_buffer).at(8))
    transfer()
    tracemalloc.start()
    try:
        transfer()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak >= transfer.host.nbytes


def test_tensorflows_gpu_is_matched_to_nvml_by_its_pci_address(monkeypatch) -> None:
    from xferbench.core import environment
    from xferbench.measuring.backends import tensorflow as backend
    from xferbench.measuring.sampler import nvml_target

    assert backend.desc_field("device: 0, name: NVIDIA H100, pci bus id: 0000:3b:00.0, compute capability: 9.0",
                              "pci bus id") == "0000:3b:00.0"  # fmt: skip
    assert backend.desc_field("device: 0, name: METAL, pci bus id: <undefined>", "pci bus id") == "<undefined>"
    assert backend.desc_field("device: 0, name: METAL", "pci bus id") is None
    fake_gpu(monkeypatch, backend._tf())
    seen = backend.TFBackend().environment()
    assert seen["devices"] == [{"id": "cuda:0", "kind": "cuda", "name": "NVIDIA H100 80GB HBM3", "capability": "9.0",
                                "pci_bus_id": "0000:3b:00.0"}]  # fmt: skip
    assert "build_compute_capabilities" in seen and "built_with_cuda" not in seen  # True even for a CPU-only wheel
    assert isinstance(seen["onednn"], bool)
    devices = [dict(d) for d in seen["devices"]]
    environment._attach_nvml(devices, {"gpus": [{"uuid": "GPU-5a1", "pci_bus_id": "00000000:3B:00.0", "index": 0}]})
    assert devices[0]["nvml"]["uuid"] == "GPU-5a1"
    assert nvml_target({"devices": devices}, "cuda:0") == ("GPU-5a1", None)


@pytest.mark.slow
def test_onednn_state_is_recorded_as_tensorflow_decides_it() -> None:
    """Whether oneDNN is on decides where a CPU copy's page faults come from (its allocator pools), and
    unset it depends on the CPU's features: recorded from TensorFlow itself, not from the variable."""
    import subprocess
    import sys

    from xferbench.measuring.backends.tensorflow import onednn_enabled

    script = "from xferbench.measuring.backends.tensorflow import onednn_enabled; print(onednn_enabled())"
    off = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0", "TF_CPP_MIN_LOG_LEVEL": "3"})  # fmt: skip
    assert off.stdout.split() == ["False"], off.stderr[-2000:]
    assert isinstance(onednn_enabled(), bool)  # unset here: TensorFlow's own answer for this CPU


def test_listing_gpus_for_their_pci_address_asks_for_memory_growth(monkeypatch) -> None:
    """device_lib builds devices from a config of its own: without growth it would reserve every GPU's memory."""
    from tensorflow.python.client import device_lib

    from xferbench.measuring.backends import tensorflow as backend

    asked = []
    monkeypatch.setattr(device_lib, "list_local_devices", lambda config=None: asked.append(config) or [])
    assert backend.physical_descriptions() == {}
    assert asked[0].gpu_options.allow_growth is True


# Where a function or jit call copies, seen by TensorFlow's own device-placement log on two logical CPUs:
# CPU:1 stands in for the series' GPU. Executed ops go to stderr, the placer's choices to stdout.
PLACEMENT_LOG = """
import sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
tf.config.set_soft_device_placement(False)
tf.debugging.set_log_device_placement(True)
from xferbench.measuring.backends import tensorflow as backend
from xferbench.core.spec import SeriesKey
backend.tf_device = lambda device: "/CPU:1"
transfer = backend.TFTransfer(SeriesKey("tf", sys.argv[1], "copy", "cuda:1", (8, 8, 3)).at(2))
moved, _ = transfer._run()
sys.stdout.flush()
print("RESULT", moved.device, file=sys.stderr, flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["function", "jit"])
def test_a_function_call_copies_as_its_argument_is_converted_on_the_series_device(mode) -> None:
    """The NumPy argument becomes a tensor on the series' device before the function runs (an _EagerConst
    there, as tf.constant's), as a user's unscoped call does on GPU:0; the function then copies nothing,
    and nothing of the call runs on the other device."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", PLACEMENT_LOG, mode], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0"})  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    executed = [line.split("Executing op ", 1)[1] for line in r.stderr.splitlines() if "Executing op " in line]
    on_cpu1 = " in device /job:localhost/replica:0/task:0/device:CPU:1"
    assert executed[0] == "_EagerConst" + on_cpu1, executed  # the conversion: the copy
    assert len(executed) == 2 and executed[1].startswith("__inference_copy_") and executed[1].endswith(on_cpu1), executed
    assert r.stderr.splitlines()[-1] == "RESULT /job:localhost/replica:0/task:0/device:CPU:1"
    placed = dict(line.split(": ", 1) for line in r.stdout.splitlines() if ": (" in line)
    assert not any(device.endswith("CPU:0") for device in placed.values()), placed
    if mode == "function":  # XLA compiles the body whole; a plain function's nodes are placed one by one
        assert placed["x"] == "(_Arg): /job:localhost/replica:0/task:0/device:CPU:1"  # the argument arrives on CPU:1
        assert placed["Identity"] == "(Identity): /job:localhost/replica:0/task:0/device:CPU:1"


def tensorflow_2_4(real, calls: list):
    """TensorFlow 2.4's tf.function, keyword for keyword: experimental_compile, and no jit_compile."""

    def function(func=None, input_signature=None, autograph=True, experimental_implements=None,
                 experimental_autograph_options=None, experimental_relax_shapes=False,
                 experimental_compile=None, experimental_follow_type_hints=None):  # fmt: skip
        calls.append(experimental_compile)
        return real(func, jit_compile=experimental_compile)

    return function


def tensorflow_2_0(real):
    """TensorFlow 2.0's tf.function, which has neither keyword."""

    def function(func=None, input_signature=None, autograph=True, experimental_autograph_options=None,
                 experimental_relax_shapes=False):  # fmt: skip
        return real(func)

    return function


@pytest.mark.parametrize("op", ["copy", "seed"])
def test_an_older_tensorflow_without_jit_compile_runs_function_and_jit(monkeypatch, op) -> None:
    """tf.function took jit_compile from TensorFlow 2.5; 2.4 named it experimental_compile and rejects
    the new keyword, so passing it to every function failed even the function mode."""
    from xferbench.measuring.backends import tensorflow as backend

    tf, calls = backend._tf(), []
    monkeypatch.setattr(tf, "function", tensorflow_2_4(tf.function, calls))
    with pytest.raises(TypeError, match="jit_compile"):
        tf.function(lambda x: x, jit_compile=False)  # the stand-in is as strict as TensorFlow 2.4
    for mode in ("function", "jit"):
        transfer = backend.TFTransfer(SeriesKey("tf", mode, op, "cpu", SMALL).at(2))
        transfer()
        transfer.verify()
        transfer.close()
        info = backend.TFBackend().describe(SeriesKey("tf", mode, op, "cpu", SMALL), {})
        assert info.transfer == "host-to-host"
    # function: no keyword at all; jit: XLA's under its old name (and again for the seed op's HLO)
    assert calls == [None, True] + ([True] if op == "seed" else [])
    monkeypatch.undo()
    assert backend.compile_options(tf, "jit") == {"jit_compile": True}  # a current TensorFlow: its own name
    assert backend.compile_options(tf, "function") == {} and backend.compile_options(tf, "eager") == {}


def test_a_tensorflow_without_xlas_keyword_skips_jit_and_still_runs_function(monkeypatch) -> None:
    from xferbench.measuring.backends import tensorflow as backend
    from xferbench.core.errors import NotSupportedHere

    tf = backend._tf()
    monkeypatch.setattr(tf, "function", tensorflow_2_0(tf.function))
    transfer = backend.TFTransfer(SeriesKey("tf", "function", "copy", "cpu", SMALL).at(2))
    transfer.verify()
    with pytest.raises(NotSupportedHere) as refused:
        backend.TFBackend().describe(SeriesKey("tf", "jit", "copy", "cpu", SMALL), {})
    said = str(refused.value)
    assert "\n" not in said and "TensorFlow 2.5" in said and "experimental_compile" in said and "tensorflow>=2.13" in said
    series = in_process("jit")
    assert series.status == "skipped" and series.reason == said


def test_jit_skipped_on_mps_names_the_command_that_runs_that_series_on_the_cpu() -> None:
    from xferbench.measuring.backends.tensorflow import TFBackend

    backend = TFBackend()
    reason = backend.skip_reason(SeriesKey("tf", "jit", "copy", "mps", SMALL))
    assert reason.endswith("for XLA on this Mac's CPU (host to host) run: xferbench sweep -f tf --jit --device cpu")
    assert backend.skip_reason(SeriesKey("tf", "jit", "seed", "mps", SMALL, "aligned")).endswith(
        "xferbench sweep -f tf --jit --device cpu --op seed --host-buffer aligned")
    assert backend.skip_reason(SeriesKey("tf", "jit", "copy", "cpu", SMALL)) is None


def test_where_this_tensorflow_cannot_show_xlas_program_the_seed_note_says_so(monkeypatch) -> None:
    """Whether XLA casts the whole batch is read from its optimized program; a TensorFlow whose functions
    cannot show it leaves that unknown, said as such rather than guessed either way."""
    from xferbench.measuring.backends import tensorflow as backend

    tf = backend._tf()
    real = tf.function

    def without_compiler_ir(func=None, jit_compile=None):
        compiled = real(func, jit_compile=jit_compile)
        return lambda *args: compiled(*args)  # callable as a function is, nothing more

    monkeypatch.setattr(tf, "function", without_compiler_ir)
    info = backend.TFBackend().describe(SeriesKey("tf", "jit", "seed", "cpu", SMALL), {})
    assert info.params["xla_casts_full_batch"] is None
    assert info.note.startswith("this TensorFlow cannot show XLA's optimized program") and "is unknown" in info.note
    assert "only item [0, 0] is converted to float32, so" not in info.note


# A simulated Mac whose TensorFlow sees an Apple GPU as tensorflow-metal shows it (GPU:0), on top of
# tests/macos's simulated macOS: every process that has this folder first on PYTHONPATH loads it.
METAL_SITE = """
import importlib.abc, importlib.util, runpy, sys
runpy.run_path({macos!r})


def show_metal(tf):
    gpu = tf.config.PhysicalDevice(name="/physical_device:GPU:0", device_type="GPU")
    listed, experimental = tf.config.list_physical_devices, tf.config.experimental
    growth, details = experimental.set_memory_growth, experimental.get_device_details
    tf.config.list_physical_devices = lambda kind=None: [gpu] if kind == "GPU" else listed(kind)
    tf.config.experimental.set_memory_growth = lambda device, on: None if device == gpu else growth(device, on)
    tf.config.experimental.get_device_details = lambda device: {{"device_name": "METAL"}} if device == gpu else details(device)


class Metal(importlib.abc.MetaPathFinder):
    looking = False  # while it asks the other finders itself

    def find_spec(self, name, path, target=None):
        if name != "tensorflow" or self.looking:
            return None
        self.looking = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.looking = False
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            show_metal(module)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, Metal())
"""


@pytest.mark.slow
def test_jit_on_a_mac_names_the_command_that_runs_it_and_that_command_measures(tmp_path) -> None:
    """On a Mac with tensorflow-metal, --device auto is mps, where XLA has no compiler: `sweep -f tf --jit`
    measures nothing there, so it says which command runs jit on the Mac's CPU; that command measures."""
    import subprocess
    import sys
    from pathlib import Path

    macos = Path(__file__).parent / "macos"
    site = tmp_path / "metal"
    site.mkdir()
    (site / "sitecustomize.py").write_text(METAL_SITE.format(macos=str(macos / "sitecustomize.py")))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), str(macos), os.environ.get("PYTHONPATH")])),
           "PATH": f"{macos / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "200"}  # fmt: skip
    common = ["--batch-sizes", "1,2", "--shape", "8x8x3", *FAST_ARGS]

    def xferbench(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "xferbench", *args], capture_output=True, text=True, env=env, timeout=600)

    r = xferbench("sweep", "-f", "tf", "--jit", *common, "-o", str(tmp_path / "mps.json"))
    said = " ".join(r.stderr.split())
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "nothing can run here: tf/jit/copy@mps: XLA has no compiler for tensorflow-metal's GPU" in said, said
    command = "xferbench sweep -f tf --jit --device cpu"
    assert said.endswith(f"for XLA on this Mac's CPU (host to host) run: {command}"), said
    out = tmp_path / "cpu.json"
    ran = xferbench(*command.split()[1:], *common, "-o", str(out))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    series = load(out).series
    assert [(s.label(), s.status, s.transfer) for s in series] == [("tf/jit/copy@cpu", "ok", "host-to-host")]
    assert [p.status for p in series[0].points] == ["ok", "ok"]


def test_an_mps_series_is_named_by_the_mac_and_says_its_copy_stays_in_unified_memory(monkeypatch) -> None:
    """TensorFlow calls the Apple GPU METAL; the Mac's one name and the unified-memory note are what a
    report set beside a CUDA file needs."""
    import xferbench.measuring.backends.tensorflow as tensorflow_backend
    from xferbench.measuring.backends import BACKENDS
    from xferbench.core.spec import SeriesKey

    monkeypatch.setattr(tensorflow_backend, "apple_gpu_name", lambda: "Apple M1 Pro (16-core GPU)")
    info = BACKENDS["tf"].describe(SeriesKey("tf", "eager", "copy", "mps", (256, 256, 3)), {})
    assert info.device_name == "Apple M1 Pro (16-core GPU)"
    assert "the device copy stays within unified memory" in (info.note or "")
    assert info.params["unified_memory"] is True  # what pairs.copy_kind reads
