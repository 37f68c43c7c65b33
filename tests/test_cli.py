"""The CLI through Typer's runner: real sweeps, and one-line errors for every bad input."""

import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from conftest import FAST_ARGS, HAS_TORCH, needs_tf, needs_torch, unwrapped
from xferbench import load
from xferbench.cli import app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


def test_sim_sweep_end_to_end(tmp_path) -> None:
    out = tmp_path / "sim.json"
    r = invoke("sweep", "-f", "sim", "--batch-sizes", "1,2,4,8", "--sim-latency-us", "20", "--sim-bandwidth-gbps", "10",
               "-o", str(out), "--csv", *FAST_ARGS)  # fmt: skip
    assert r.exit_code == 0, r.output
    for heading in ("batch", "batch time", "batches/s", "images/s", "MB/s", "peak", "latency 20 µs", "10,000 MB/s"):
        assert heading in r.stdout
    result = load(out)
    assert result.status == "complete" and [p.batch_size for p in result.series[0].points] == [1, 2, 4, 8]
    assert out.with_suffix(".csv").exists()
    assert "sim/link/copy@sim batch 8" in r.stderr  # progress lines when stderr is not a terminal


def test_duplicate_batch_sizes_are_merged(tmp_path) -> None:
    out = tmp_path / "r.json"
    assert invoke("sweep", "-f", "sim", "--batch-sizes", "4, 2,4", "-o", str(out), *FAST_ARGS).exit_code == 0
    assert load(out).config["batch_sizes"] == [2, 4]


def test_host_sweep_default_out_path(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    r = invoke("sweep", "-f", "host", "--batch-sizes", "1,2", "--shape", "16x16x3", *FAST_ARGS)
    assert r.exit_code == 0, r.output
    (path,) = (tmp_path / "runs").glob("*-cpu-*.json")  # the default folder, which git ignores in a checkout
    assert load(path).series[0].framework == "host"


@pytest.mark.slow
@needs_torch
def test_default_sweep_runs_torch_and_host_on_cpu(tmp_path) -> None:
    out = tmp_path / "r.json"
    r = invoke("sweep", "--device", "cpu", "--batch-sizes", "1,2", "--shape", "16x16x3", "-o", str(out), *FAST_ARGS)
    assert r.exit_code == 0, r.output
    labels = {s.label(): s.status for s in load(out).series}
    assert labels["torch/pageable/copy@cpu"] == "ok" and labels["host/numpy/copy@cpu"] == "ok"
    assert labels["torch/pinned/copy@cpu"] == "skipped" and "sim/link/copy@sim" not in labels
    assert "skipping torch/pinned/copy@cpu" in r.stdout


def test_default_sweep_without_any_framework_runs_host(tmp_path, monkeypatch) -> None:
    for name in ("torch", "tensorflow", "jax", "cupy"):
        monkeypatch.setitem(sys.modules, name, None)  # find_spec now reports them as not installed
    out = tmp_path / "r.json"
    r = invoke("sweep", "--batch-sizes", "1", "--shape", "8x8", "-o", str(out), *FAST_ARGS)
    assert r.exit_code == 0, r.output
    assert [s.framework for s in load(out).series] == ["host"]
    r = invoke("sweep", "-f", "torch")
    assert r.exit_code == 2 and "pip install 'xferbench[torch]'" in r.stderr


def test_failed_verification_exits_non_zero_but_keeps_the_file(tmp_path, monkeypatch) -> None:
    from xferbench.measuring.backends.host import HostCopy

    monkeypatch.setattr(HostCopy, "__call__", lambda self: None)
    out = tmp_path / "r.json"
    r = invoke("sweep", "-f", "host", "--batch-sizes", "1", "--shape", "8x8", "-o", str(out), *FAST_ARGS)
    assert r.exit_code == 1 and "FAILED host/numpy/copy@cpu" in r.stdout and "Traceback" not in r.output
    assert load(out).series[0].status == "failed"


def test_ctrl_c_saves_and_says_where(tmp_path, fake_backend) -> None:
    fake_backend(raise_at={4: KeyboardInterrupt()})
    out = tmp_path / "r.json"
    r = invoke("sweep", "-f", "fake", "-m", "a", "--batch-sizes", "1,2,4,8", "-o", str(out), *FAST_ARGS)
    assert r.exit_code == 130
    assert "interrupted: 2 measured point(s) saved to" in r.stderr and str(out) in r.stderr.replace("\n", "")
    assert load(out).status == "interrupted"


def test_out_of_memory_is_reported_but_not_a_failure(tmp_path, fake_backend) -> None:
    fake_backend(raise_at={4: MemoryError()})
    out = tmp_path / "r.json"
    r = invoke("sweep", "-f", "fake", "-m", "a", "--batch-sizes", "2,4,8", "-o", str(out), *FAST_ARGS)
    assert r.exit_code == 0, r.output
    assert "out of memory" in r.stdout and "skipped" in r.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch-sizes", "0"], "'0' is not a positive integer"),
        (["--batch-sizes", "-4"], "'-4' is not a positive integer"),
        (["--batch-sizes", "2.5"], "'2.5' is not a positive integer"),
        (["--batch-sizes", ""], "give comma-separated positive integers"),
        (["--batch-sizes", "1,,2"], "give comma-separated positive integers"),
        (["--shape", "256x"], "give positive integers joined by 'x'"),
        (["--shape", "256x0x3"], "give positive integers joined by 'x'"),
        (["--shape", "big"], "give positive integers joined by 'x'"),
        (["-f", "mxnet"], "unknown framework 'mxnet'; choose from: cuda, hip, torch, tf, jax, cupy, host, sim"),
        (["-f", "host", "-m", "warp"], "unknown mode 'warp'; valid modes are host: numpy"),
        (["--op", "cast"], "unknown op 'cast'; choose from: copy, seed"),
        (["-f", "host", "--op", "seed"], "the seed op is not defined for host"),
        (["--device", "tpu"], "unknown device 'tpu'; use auto, all, cpu, cuda, cuda:N, xpu, xpu:N or mps"),
        (["-f", "torch", "--device", "cuda:7"], "device 'cuda:7' is not present; devices present: cpu"),
        (["-f", "host", "--batch-sizes", "1,1000000"], "GB of host memory but"),
        (["-f", "sim", "--sim-bandwidth-gbps", "0"], "--sim-bandwidth-gbps > 0"),
        (["-f", "sim", "--min-samples", "0"], "must be at least 1"),
        (["-f", "host", "--min-time", "nan"], "must be finite seconds"),
        (["-f", "host", "--max-time", "inf"], "must be finite seconds"),
        (["-f", "host", "--min-time", "5", "--max-time", "1"], "--min-time must not exceed --max-time"),
        (["-f", "sim", "--sim-latency-us", "nan"], "must be a finite number"),
        (["-f", "sim", "--sim-bandwidth-gbps", "inf"], "must be a finite number"),
        (["-f", "sim", "--sim-seed", "-1"], "--sim-seed must be a non-negative integer"),
        (["-f", "sim", "--max-samples", "2", "--min-samples", "5"], "--max-samples must be at least --min-samples"),
        (["-f", "sim", "--timing", "burst"], "unknown --timing 'burst'; choose from: per-call, streamed"),
        (["-f", "host", "--timing", "streamed"], "host/numpy is a synchronous CPU copy with no stream to queue on"),
        (["-f", "sim", "--no-bind"], "--no-bind: nothing to bind here: workers are bound to a GPU's CPUs and NUMA node only for CUDA devices"),
        (["-f", "host", "--device", "cpu", "--no-bind"], "and this sweep runs on cpu; drop --no-bind"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message) -> None:
    r = invoke("sweep", *args)
    assert r.exit_code == 2, r.output
    assert message in r.stderr.replace("\n", " ")
    assert r.stderr.startswith("error:") and "Traceback" not in r.output
    assert r.stdout == ""  # nothing was measured


@pytest.mark.slow
@needs_torch
def test_absent_cuda_lists_devices_present() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    r = invoke("sweep", "-f", "torch", "--device", "cuda")
    assert r.exit_code == 2 and "device 'cuda' is not present; devices present: cpu" in r.stderr


def test_unwritable_output_is_refused_before_measuring(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = invoke("sweep", "-f", "sim", "-o", str(blocker / "r.json"))
    assert r.exit_code == 2 and "is a file, not a folder" in r.stderr.replace("\n", "") and r.stdout == ""


def test_env_prints_json() -> None:
    r = invoke("env")
    assert r.exit_code == 0
    env = json.loads(r.stdout)
    assert env["devices"][0]["kind"] == "cpu" and env["python"] and "numpy" in env["versions"]
    nvml = env["nvml"]
    assert nvml["reason"] if not nvml["available"] else nvml["driver"]  # facts, or why there are none


@pytest.mark.slow
@needs_torch
def test_paths_lists_availability_and_reasons() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: pinned modes are available")
    r = runner.invoke(app, ["paths", "--all"], env={"COLUMNS": "250"})
    assert r.exit_code == 0
    rows = [line for line in r.stdout.splitlines() if "│" in line]
    rows = [row for row in rows if row.split("│")[1].strip() in ("torch", "sim")]  # by the framework column: a reason may name torch
    pinned_cpu = next(row for row in rows if "pinned_into" in row and " cpu " in row)
    assert "unavailable" in pinned_cpu and "pinned host memory needs a CUDA device" in pinned_cpu
    pageable_cpu = next(row for row in rows if "pageable" in row and " cpu " in row)
    assert "available" in pageable_cpu and "unavailable" not in pageable_cpu
    cuda_row = next(row for row in rows if "pageable" in row and " cuda " in row)
    assert "torch sees no cuda device here" in cuda_row
    assert any("sim" in row and "link" in row and "available" in row for row in rows)


def test_paths_and_env_without_a_gpu_start_no_framework(monkeypatch) -> None:
    """With no GPU to describe, nothing needs a framework imported: both answer at once, and paths
    lists only this machine's devices, saying what --all adds."""
    monkeypatch.setattr("xferbench.core.environment.accelerator_kinds", lambda: [])

    def no_workers(*args, **kwargs):
        raise AssertionError("a framework was started")

    monkeypatch.setattr("xferbench.cli.start_runners", no_workers)
    r = runner.invoke(app, ["paths"], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    rows = [line for line in r.stdout.splitlines() if "│" in line]
    assert rows and not any(" cuda " in row or " mps " in row for row in rows)
    assert any("torch" in row and "pageable" in row and " cpu " in row for row in rows) == HAS_TORCH
    assert "on devices this machine lacks (cuda, mps, xpu) are not shown; --all lists them" in r.stdout
    r = runner.invoke(app, ["env"])
    assert r.exit_code == 0 and json.loads(r.stdout)["devices"][0]["id"] == "cpu"


def test_version() -> None:
    from xferbench import __version__

    r = invoke("--version")
    assert r.exit_code == 0 and r.stdout.strip() == f"xferbench {__version__}"


def test_existing_result_is_not_overwritten_unless_asked(tmp_path) -> None:
    out = tmp_path / "r.json"
    args = ["sweep", "-f", "sim", "--batch-sizes", "1", "-o", str(out), *FAST_ARGS]
    assert invoke(*args).exit_code == 0
    first = out.read_text()
    r = invoke(*args)
    assert r.exit_code == 2 and "already exists" in r.stderr and "--overwrite" in r.stderr
    assert out.read_text() == first
    assert invoke(*args, "--overwrite", "--sim-latency-us", "99").exit_code == 0
    assert load(out).series[0].params["latency_us"] == 99


def test_csv_may_not_replace_the_json(tmp_path) -> None:
    r = invoke("sweep", "-f", "sim", "-o", str(tmp_path / "r.csv"), "--csv")
    assert r.exit_code == 2 and "would be overwritten by --csv" in r.stderr


def test_default_names_do_not_collide(tmp_path, monkeypatch) -> None:
    from xferbench.cli import default_name
    from xferbench.core.results import OutputFile, Result, output_path

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("time.strftime", lambda fmt: "20260101-000000")
    path, numbered = output_path(None, default_name("sim"))
    first, second = OutputFile(path, numbered=numbered), OutputFile(path, numbered=numbered)  # two runs in one second
    first.save(Result({}, {}, "first"))
    second.save(Result({}, {}, "second"))
    first.save(Result({}, {}, "first again"))
    assert first.path.parent == Path("runs") and second.path.name == first.path.name.replace(".json", "-2.json")
    assert load(first.path).created == "first again" and load(second.path).created == "second"


@pytest.mark.parametrize("framework, module, message", [
    ("jax", "jax", "JAX is not installed: pip install 'xferbench[jax]'"),
    ("cupy", "cupy", "The cupy path needs CuPy, which is not installed: pip install 'xferbench[cupy]' (CUDA 12, NVIDIA"
     " driver 525 or newer) or 'xferbench[cupy-cuda13]' (CUDA 13, driver 580 or newer)"),
    ("cuda", "cupy", "The raw CUDA reference needs CuPy, which is not installed: pip install 'xferbench[cupy]'"),
])  # fmt: skip
def test_a_framework_not_installed_names_its_extra(monkeypatch, framework, module, message) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # find_spec now reports it as not installed
    r = invoke("sweep", "-f", framework)
    assert r.exit_code == 2 and message in r.stderr.replace("\n", " ") and "Traceback" not in r.output


def test_cuda_only_paths_name_the_devices_they_support() -> None:
    from xferbench.measuring.backends import BACKENDS
    from xferbench.core.spec import SeriesKey

    for framework, mode in (("cuda", "raw_pinned"), ("cuda", "raw_pageable"), ("cupy", "asarray")):
        backend = BACKENDS[framework]
        for device in ("cpu", "mps"):
            assert "needs a CUDA GPU (cuda:N)" in backend.absent_reason(device, [])
            key = SeriesKey(framework, mode, "copy", device, (1,), "pinned" if mode == "raw_pinned" else "numpy")
            assert f"is CUDA-only: it runs on cuda:N devices, not on {device}" in backend.skip_reason(key)
        assert backend.absent_reason("cuda:3", ["cuda:0"]) == "CuPy sees no cuda:3; it sees cuda:0"
        assert "CuPy sees no CUDA GPU: there is none" in backend.absent_reason("cuda:0", [])


def test_sim_only_sweep_names_its_target(tmp_path) -> None:
    r = invoke("sweep", "-f", "sim", "--batch-sizes", "1", "-o", str(tmp_path / "r.json"), *FAST_ARGS)
    assert "batch sizes on sim," in r.stdout


def test_module_entry_point() -> None:
    import subprocess

    r = subprocess.run([sys.executable, "-m", "xferbench", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "sweep" in r.stdout


@pytest.mark.parametrize("framework, device, why", [
    ("host", "cuda:5", "--device cuda:5: host copies within host memory and runs on the cpu only"),
    ("host", "mps", "--device mps: host copies within host memory and runs on the cpu only"),
    ("sim", "cpu", "--device cpu: sim is a simulated link and reaches no device"),
])
def test_a_device_a_host_side_path_cannot_reach_is_refused(framework, device, why, tmp_path) -> None:
    out = tmp_path / "r.json"
    r = invoke("sweep", "-f", framework, "--device", device, "--batch-sizes", "1", "--shape", "8x8", "-o", str(out), *FAST_ARGS)
    assert r.exit_code == 2 and why in r.stderr and "Traceback" not in r.output
    assert not out.exists()


@needs_torch
def test_mps_off_a_mac_is_refused_before_any_framework_starts(tmp_path, monkeypatch) -> None:
    from xferbench.measuring import sweep

    monkeypatch.setattr(sweep, "start_runners", lambda *a, **k: pytest.fail("a framework was started"))
    r = invoke("sweep", "-f", "torch", "--device", "mps", "-o", str(tmp_path / "r.json"))
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.stderr.strip() == ("error: --device mps: MPS is the GPU of Apple silicon Macs, and this machine runs Linux; drop"
                                " --device mps (auto picks CUDA where there is a GPU, else the CPU)")  # fmt: skip
    listed = invoke("sweep", "-f", "torch", "--device", "cpu,MPS", "-o", str(tmp_path / "r.json"))  # any case, among others
    assert listed.exit_code == 2 and listed.stderr == r.stderr


def test_host_side_paths_accept_their_own_device(tmp_path) -> None:
    out = tmp_path / "r.json"
    r = invoke("sweep", "-f", "host", "--device", "cpu", "--batch-sizes", "1", "--shape", "8x8", "-o", str(out), *FAST_ARGS)
    assert r.exit_code == 0, r.output
    assert load(out).series[0].device == "cpu"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_uncreatable_folder_is_refused_before_measuring() -> None:
    r = invoke("sweep", "-f", "sim", "-o", "/proc/xferbench-no-such-dir/r.json")
    assert r.exit_code == 2 and "cannot write results to" in r.stderr and r.stdout == ""


@pytest.mark.parametrize(
    "args, message",
    [
        (["-f", "torch", "--jit"], "--jit is TensorFlow's tf.function(jit_compile=True) mode and torch has no such mode"),
        pytest.param(["-f", "tf", "-m", "xla"], "unknown mode 'xla'; valid modes are tf: eager, function, jit", marks=needs_tf),
        (["--jit", "-m", "eager"], "--jit already selects TensorFlow's jit mode"),
        pytest.param(["-f", "tf", "--host-buffer", "huge"], "unknown host buffer 'huge'; choose from: numpy, aligned, pinned",
                     marks=needs_tf),
        (["-f", "tf", "--python", "tf=/no/such/python"], "'/no/such/python' is not an executable Python interpreter"),
        (["-f", "host", "--python", "/usr/bin/env"], "--python /usr/bin/env: say which framework"),
        (["-f", "sim", "--python", "tf=/usr/bin/env"], "--python tf=...: tf is not among the frameworks swept"),
        pytest.param(["-f", "tf", "-f", "torch", "-m", "jit"], "--mode jit selects no torch path; torch modes are pageable",
                     marks=[needs_tf, needs_torch]),
    ],
)
def test_tf_bad_input_is_one_line_and_exit_2(args, message) -> None:
    r = invoke("sweep", *args)
    assert r.exit_code == 2, r.output
    assert message in r.stderr.replace("\n", " ") and "Traceback" not in r.output


def test_tensorflow_not_installed_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tensorflow", None)
    r = invoke("sweep", "-f", "tf")
    assert r.exit_code == 2 and "TensorFlow is not installed: pip install 'xferbench[tf]'" in r.stderr


def test_tensorflow_metal_absent_on_a_mac_names_it(monkeypatch) -> None:
    from xferbench.measuring.backends.tensorflow import TFBackend

    monkeypatch.setattr("xferbench.measuring.backends.tensorflow.sys", SimpleNamespace(platform="darwin"))
    assert "install tensorflow-metal" in TFBackend().absent_reason("mps", ["cpu"])


def test_a_worker_that_cannot_start_is_one_line(tmp_path) -> None:
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'ModuleNotFoundError: No module named numpy' >&2\nexit 1\n")
    broken.chmod(0o755)
    r = invoke("sweep", "-f", "torch", "--python", f"torch={broken}", "-o", str(tmp_path / "r.json"))
    assert r.exit_code == 2, r.output
    line = r.stderr.strip()
    assert "\n" not in line and "Traceback" not in r.output
    assert "the torch worker process exited with status 1" in line and "No module named numpy" in line
    assert not (tmp_path / "r.json").exists()


def test_a_series_cut_short_by_a_dead_worker_makes_the_exit_status_1() -> None:
    from xferbench.measuring.running import failures
    from xferbench.core.results import Point, Result, Series

    result = Result(environment={}, config={}, created="")
    ok = Series("torch", "pageable", "copy", "cpu", [2])
    died = Series("tf", "eager", "copy", "cpu", [2], status="failed", reason="the tf worker process was killed by SIGKILL")
    died.points = [Point(1, 2, status="skipped", error="not measured: the worker died")]
    oom = Series("torch", "pinned_into", "copy", "cuda:0", [2], points=[Point(1, 2, status="error", error="out of memory: CUDA")])
    result.series = [ok, died, oom]
    assert failures(result) == ["tf/eager/copy@cpu (the tf worker process was killed by SIGKILL)"]


def _fake_python(tmp_path, body: str):
    """An executable that runs `body` as a Python script in place of `python -m xferbench.measuring.worker FRAMEWORK`,
    and answers code given with -c as this Python does (the sweep asks an interpreter its version so)."""
    script = tmp_path / "fake_worker.py"
    script.write_text(body)
    launcher = tmp_path / "python"
    launcher.write_text(f"#!/bin/sh\n[ \"$1\" = -c ] && exec {sys.executable} \"$@\"\nexec {sys.executable} {script} \"$@\"\n")
    launcher.chmod(0o755)
    return launcher


HELLO = 'import json, sys\nprint(json.dumps({"hello": {"devices": ["cpu"], "environment": {}}}), flush=True)\n'

# Python 3.8 as the sweep meets it: code given with -c runs with sys.version_info saying 3.8.18; the worker,
# started with -m, fails importing as 3.8 does (PEP 585's subscripted collections.abc types came in 3.9).
PYTHON_38 = """import collections, os, sys
args = sys.argv[1:]
if args[:1] == ["-c"]:
    sys.version_info = collections.namedtuple("version_info", "major minor micro releaselevel serial")(3, 8, 18, "final", 0)
    sys.argv = ["-c", *args[2:]]
    exec(compile(args[1], "<string>", "exec"), {"__name__": "__main__"})
    sys.exit(0)
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker-started"), "w").close()
sys.exit("Traceback (most recent call last): ... TypeError: 'ABCMeta' object is not subscriptable")
"""


def test_a_python_too_old_for_the_worker_is_named_before_the_worker_starts(tmp_path) -> None:
    """--python pointing at Python 3.8: one line naming it, its version, the version the worker needs and what
    to do; its worker never starts, and nothing is written."""
    (tmp_path / "python38.py").write_text(PYTHON_38)
    python = tmp_path / "python3.8"
    python.write_text(f"#!/bin/sh\nexec {sys.executable} {tmp_path / 'python38.py'} \"$@\"\n")
    python.chmod(0o755)
    out = tmp_path / "r.json"
    r = invoke("sweep", "-f", "host", "-f", "torch", "--device", "cpu", "--python", f"torch={python}", "-o", str(out), *FAST_ARGS)
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert r.stderr == (f"error: --python torch={python}: that is Python 3.8.18, and the torch worker needs Python 3.10 or newer;"
                        " give --python torch= a Python 3.10 or newer that has numpy and torch installed\n")  # fmt: skip
    assert not (tmp_path / "worker-started").exists() and not out.exists()


def test_a_torn_message_from_a_worker_fails_its_series_not_the_sweep(tmp_path) -> None:
    python = _fake_python(tmp_path, HELLO + 'sys.stdin.readline()\nprint(\'{"point": {"batch_size"\', end="", flush=True)\n')
    out = tmp_path / "r.json"
    r = invoke("sweep", "-f", "torch", "-m", "pageable", "--op", "copy", "--op", "seed", "--device", "cpu",
               "--python", f"torch={python}", "--batch-sizes", "1,2", "-o", str(out), *FAST_ARGS)  # fmt: skip
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    saved = load(out)
    assert saved.status == "complete" and [s.status for s in saved.series] == ["failed", "failed"]
    assert "its last message was cut short" in saved.series[0].reason


@pytest.mark.slow
def test_a_hung_worker_is_killed_and_costs_only_its_series(tmp_path, monkeypatch) -> None:
    # Short enough that the hung worker is caught in seconds, long enough that a healthy worker on a busy
    # machine (one CPU shared five ways) still sends each message within it.
    monkeypatch.setattr("xferbench.measuring.worker.STALL_TIMEOUT_S", 5.0)
    marker = tmp_path / "hung-once"  # the first worker hangs in its series; the next one measures
    python = _fake_python(tmp_path, f"""import json, os, runpy, sys, time
if not os.path.exists({str(marker)!r}):
    open({str(marker)!r}, "w").close()
    print(json.dumps({{"hello": {{"devices": ["cpu"], "environment": {{}}}}}}), flush=True)
    sys.stdin.readline()
    print(json.dumps({{"start": 1}}), flush=True)
    time.sleep(600)
sys.argv = ["xferbench.measuring.worker", sys.argv[-1]]
runpy.run_module("xferbench.measuring.worker", run_name="__main__")
""")
    out = tmp_path / "r.json"
    r = invoke("sweep", "-f", "host", "-f", "torch", "-m", "numpy", "-m", "pageable", "--op", "copy", "--op", "seed",
               "--device", "cpu", "--python", f"torch={python}", "--batch-sizes", "1,2", "-o", str(out), *FAST_ARGS,
               "--max-time", "0.5")  # fmt: skip
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    hung, *others = [s for s in load(out).series if s.framework == "torch"]
    assert hung.status == "failed" and "after sending nothing for" in hung.reason and "killed" in hung.reason
    assert [p.status for p in hung.points] == ["error", "skipped"]
    assert "torch/pageable/copy@cpu batch 1" in r.stderr
    if HAS_TORCH:
        assert [s.status for s in others] == ["ok"]


def test_error_lines_in_a_framework_log_are_found_without_the_noise() -> None:
    from xferbench.measuring.worker import errors_said, logged_errors

    log = """WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
I0000 00:00:1795356587.174267   13315 cudart_stub.cc:31] Could not find cuda drivers on your machine
E0000 00:00:1795356588.112137   13315 cuda_platform.cc:52] failed call to cuInit: UNKNOWN ERROR (303)
2021-08-01 12:00:00.000000: W tensorflow/core/x.cc:1] a warning
2021-08-01 12:00:00.000001: E tensorflow/core/y.cc:2] an old-style error
E0000 00:00:1795356589.0 13315 cuda_platform.cc:52] failed call to cuInit: UNKNOWN ERROR (303)
"""
    errors = logged_errors(log)
    assert errors == ["failed call to cuInit: UNKNOWN ERROR (303)", "an old-style error"]
    assert errors_said(errors) == "failed call to cuInit: UNKNOWN ERROR (303) (+1 more)" and errors_said([]) == ""


@pytest.mark.slow
@needs_torch
def test_errors_a_framework_logs_during_a_series_land_in_its_note(tmp_path) -> None:
    python = _fake_python(tmp_path, """import sys
import xferbench.measuring.worker as worker
measure = worker.measure_series

def measure_and_complain(*args, **kwargs):
    print("I0000 00:00:1.0 7 chatty.cc:1] noise", file=sys.stderr, flush=True)
    print("E0000 00:00:1.5 7 gpu.cc:9] the device went away and came back", file=sys.stderr, flush=True)
    return measure(*args, **kwargs)

worker.measure_series = measure_and_complain
sys.argv = ["xferbench.measuring.worker", sys.argv[-1]]
worker.main()
""")
    out = tmp_path / "r.json"
    r = invoke("sweep", "-f", "torch", "-m", "pageable", "--device", "cpu", "--python", f"torch={python}",
               "--batch-sizes", "1", "-o", str(out), *FAST_ARGS)  # fmt: skip
    assert r.exit_code == 0, r.output
    (series,) = load(out).series
    assert series.note.endswith("torch logged errors during this series: the device went away and came back")
    assert "noise" not in series.note and "torch logged errors" in " ".join(r.stdout.split())


@pytest.mark.slow
@needs_torch
def test_a_later_worker_that_cannot_start_costs_only_its_series(tmp_path) -> None:
    marker = tmp_path / "started-once"
    python = _fake_python(tmp_path, f"""import json, os, runpy, sys
if os.path.exists({str(marker)!r}):
    print(json.dumps({{"error": "torch failed to start: CUDA driver gone"}}), flush=True)
    sys.exit(1)
open({str(marker)!r}, "w").close()
sys.argv = ["xferbench.measuring.worker", sys.argv[-1]]
runpy.run_module("xferbench.measuring.worker", run_name="__main__")
""")
    out = tmp_path / "r.json"
    r = invoke("sweep", "-f", "torch", "-m", "pageable", "--op", "copy", "--op", "seed", "--host-buffer", "numpy",
               "--host-buffer", "aligned", "--device", "cpu", "--python", f"torch={python}", "--batch-sizes", "1",
               "-o", str(out), *FAST_ARGS)  # fmt: skip
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    first, *later = load(out).series
    assert first.status == "ok" and first.points[0].status == "ok"
    assert len(later) == 3  # each later series tried a fresh worker of its own, and recorded why it failed
    assert all(s.status == "failed" and s.reason == "torch failed to start: CUDA driver gone" for s in later)


@pytest.mark.slow
@needs_torch
def test_workers_import_this_xferbench_not_one_in_the_working_directory(tmp_path) -> None:
    impostor = tmp_path / "xferbench"  # the autouse fixture made tmp_path the working directory
    impostor.mkdir()
    (impostor / "__init__.py").write_text("")
    (impostor / "worker.py").write_text('print(\'{"error": "the wrong xferbench"}\')\n')
    r = invoke("sweep", "-f", "torch", "-m", "pageable", "--device", "cpu", "--batch-sizes", "1",
               "-o", str(tmp_path / "r.json"), *FAST_ARGS)  # fmt: skip
    assert r.exit_code == 0, r.output


@pytest.mark.slow
@needs_torch
@pytest.mark.parametrize("presses", [1, 2, "SIGTERM"])
def test_ctrl_c_keeps_the_file_marked_interrupted_and_leaves_no_worker(tmp_path, presses) -> None:
    import os
    import signal
    import subprocess
    import time

    out = tmp_path / "r.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "xferbench", "sweep", "-f", "torch", "-m", "pageable", "--device", "cpu",
         "--batch-sizes", "1,2,4,8,16", "--shape", "1000x1000x3", "--min-time", "2", "--max-samples", "100000",
         "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    # Points of 3 to 48 MB calls sampled for 2 s each: the signal lands mid-sweep even on a loaded machine.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (out.exists() and '"points": [\n' in out.read_text()):
        time.sleep(0.05)
    if presses == "SIGTERM":  # kill, or a CI job's timeout: the main process alone is told
        os.kill(process.pid, signal.SIGTERM)
    for _ in range(0 if presses == "SIGTERM" else presses):  # a terminal's Ctrl-C reaches the whole process group
        os.killpg(process.pid, signal.SIGINT)
        time.sleep(0.02)
    stdout, stderr = process.communicate(timeout=30)
    code, said = (143, "terminated: ") if presses == "SIGTERM" else (130, "interrupted: ")
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr and said in stderr
    saved = load(out)
    assert saved.status == "interrupted" and saved.series[0].points[0].status == "ok"
    worker = saved.environment["frameworks"]["torch"]["pid"]
    with pytest.raises(ProcessLookupError):
        os.kill(worker, 0)


def test_a_worker_that_never_starts_is_given_up_on(tmp_path) -> None:
    from xferbench.measuring.backends import BACKENDS
    from xferbench.core.errors import XferbenchError
    from xferbench.measuring.worker import WorkerRunner

    python = _fake_python(tmp_path, "import time\ntime.sleep(60)\n")
    runner = WorkerRunner(BACKENDS["torch"], str(python), start_timeout_s=0.5)
    with pytest.raises(XferbenchError, match="killed by SIGKILL after not starting within 0.5 s"):
        runner.hello()
    runner.close()


def test_report_and_compare_bad_input_is_one_line(tmp_path) -> None:
    result_file = tmp_path / "sim.json"
    assert invoke("sweep", "-f", "sim", "--batch-sizes", "1,2", "-o", str(result_file), *FAST_ARGS).exit_code == 0
    (tmp_path / "other.json").write_text(result_file.read_text().replace('"sim"', '"simx"'))
    cases = [
        (["report", str(tmp_path / "missing.json")], "missing.json: no such file"),
        (["report", str(result_file), "-o", str(result_file)], "is one of the result files"),
        (["report", str(result_file), "-o", "/proc/no-such-dir/r.md"], "/proc/no-such-dir/r.md"),
        (["report", str(result_file), "-f", "tf"], "no series matches the selection"),
        (["report", str(result_file), "--plot", str(result_file)], "--plot"),
        (["report", str(result_file), "-o", str(tmp_path / "r.md"), "--plot", str(tmp_path / "r.md")], "--plot"),
        (["report", str(result_file), "--plot", str(tmp_path / "r.gif")], "--plot"),
        (["report", str(result_file), str(result_file)], "given twice"),
        (["plot", str(result_file), str(result_file)], "given twice"),
        (["compare", str(result_file), str(tmp_path / "missing.json")], "missing.json: no such file"),
        (["compare", str(result_file), str(result_file), "--threshold", "lots"], "--threshold 'lots'"),
        (["compare", str(result_file), str(tmp_path / "other.json")], "no matching series between"),
    ]
    for args, message in cases:
        r = invoke(*args)
        assert r.exit_code == 2, (args, r.output)
        assert message in r.stderr.replace("\n", " ") and "Traceback" not in r.output, (args, r.stderr)
    same = invoke("compare", str(result_file), str(result_file))
    assert same.exit_code == 0 and "0 slower" in same.stdout


def test_compare_exits_1_when_a_point_measured_in_base_failed_in_new(tmp_path) -> None:
    base, new = tmp_path / "base.json", tmp_path / "new.json"
    assert invoke("sweep", "-f", "sim", "--batch-sizes", "1,2", "-o", str(base), *FAST_ARGS).exit_code == 0
    data = json.loads(base.read_text())
    data["series"][0]["points"][1].update(status="error", error="verification failed: bytes differ", times_s=[], median_s=None)
    new.write_text(json.dumps(data))
    r = invoke("compare", str(base), str(new))
    assert r.exit_code == 1, r.output
    assert "FAILEDin" in unwrapped(r.stdout) and unwrapped("batch 2: verification failed: bytes differ") in unwrapped(r.stdout)


def test_a_default_sweep_says_which_frameworks_it_left_out(monkeypatch, tmp_path) -> None:
    from xferbench.measuring.backends import BACKENDS

    monkeypatch.setitem(sys.modules, "cupy", None)  # find_spec now reports them as not installed
    monkeypatch.setitem(sys.modules, "jax", None)
    few = {name: BACKENDS[name] for name in ("cuda", "jax", "cupy", "host")}  # no slow framework start-up
    monkeypatch.setattr("xferbench.measuring.sweep.BACKENDS", few)
    monkeypatch.setattr("xferbench.measuring.backends.BACKENDS", few)  # the one a default sweep's frameworks come from
    r = invoke("sweep", "--batch-sizes", "1", "-o", str(tmp_path / "r.json"), *FAST_ARGS)
    assert r.exit_code == 0, r.output
    said = " ".join(r.stdout.split())
    assert "left out: JAX is not installed: pip install 'xferbench[jax]'" in said
    assert "CuPy" not in said  # CUDA-only: nothing to say on a machine without a CUDA GPU
    from xferbench.measuring.sweep import SweepConfig, absent_frameworks

    assert any(why.startswith("The cupy path needs CuPy, which is not installed: pip install 'xferbench[cupy]'")
               for why in absent_frameworks(SweepConfig(), "cuda:0"))  # fmt: skip
    explicit = invoke("sweep", "-f", "host", "--batch-sizes", "1", "-o", str(tmp_path / "h.json"), *FAST_ARGS)
    assert "left out" not in explicit.stdout  # asked for by name: nothing else was expected


def test_the_timing_method_is_part_of_each_series_identity(tmp_path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    timing = ["--min-samples", "8", "--max-samples", "8", "--warmup-calls", "1", "--warmup-time", "0", "--min-time", "0"]
    r = invoke("sweep", "-f", "sim", "--batch-sizes", "1,64", "--timing", "per-call", "--timing", "streamed", "-o", str(a), *timing)
    assert r.exit_code == 0, r.output
    assert "sim/link/copy/streamed@sim" in r.stdout and "copies" in r.stdout
    assert [s.method for s in load(a).series] == ["per-call", "streamed"]
    slower = ["--sim-bandwidth-gbps", "6", "--sim-jitter", "0.01"]
    assert invoke("sweep", "-f", "sim", "--batch-sizes", "1,64", "--timing", "streamed", "-o", str(b), *slower, *timing).exit_code == 0
    compared = invoke("compare", str(a), str(b))
    assert compared.exit_code == 1  # the streamed series halved its rate
    said = unwrapped(compared.stdout)
    assert "sim/link/copy/streamed@sim" in said and unwrapped(f"only in {a}: sim/link/copy@sim") in said
    report = invoke("report", str(a), "--timing", "streamed")
    assert report.exit_code == 0 and "sim/link/copy/streamed@sim" in report.stdout and "timed streamed" in report.stdout
    assert "| sim/link/copy@sim |" not in report.stdout


def test_plot_and_report_outputs_may_be_folders_and_are_regular_files_only(tmp_path) -> None:
    sim = tmp_path / "run.json"
    assert invoke("sweep", "-f", "sim", "--batch-sizes", "1,4", "-o", str(sim), *FAST_ARGS).exit_code == 0
    assert invoke("plot", str(sim), "-o", f"{tmp_path}/figs/").exit_code == 0
    assert (tmp_path / "figs" / "run.png").is_file()
    r = invoke("report", str(sim), "-o", f"{tmp_path}/md/", "--plot", f"{tmp_path}/md/")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "md" / "run.md").is_file() and (tmp_path / "md" / "run.png").is_file()
    precious = tmp_path / "precious.txt"
    precious.write_text("keep")
    (tmp_path / "link.png").symlink_to(precious)
    (tmp_path / "link.md").symlink_to(precious)
    r = invoke("plot", str(sim), "-o", str(tmp_path / "link.png"))
    assert r.exit_code == 2 and "not a regular file" in r.stderr
    r = invoke("report", str(sim), "-o", str(tmp_path / "link.md"))
    assert r.exit_code == 2 and "not a regular file" in r.stderr
    assert precious.read_text() == "keep"


def busy_reading(monkeypatch) -> None:
    """Every point measured in this process reads as taken beside other processes using 1.5 of 2 CPUs."""
    from xferbench.measuring import contention

    monkeypatch.setattr(contention, "usage", lambda before, after: contention.Usage(others_cpus=1.5, run_wait=0.4, cpus=2))


def flat(text: str) -> str:
    """Help or a table as running words: box borders gone, every run of whitespace one space."""
    return " ".join(text.translate({ord(c): " " for c in "│╭╮╰╯─┃┏┓┗┛━┡┩╇┳┻╋┃"}).split())


def paths_rows(text: str) -> dict[tuple[str, str, str], str]:
    """paths' table as (framework, mode, device) -> its default sweep cell."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("│").split("│")] if line.startswith("│") else []
        if len(cells) == 6 and cells[0]:
            rows[(cells[0], cells[1], cells[3])] = cells[4]
    return rows


def test_mode_help_and_paths_say_what_the_planner_runs(fake_backend, monkeypatch) -> None:
    """--mode's help and paths' default sweep column come from the choice make_plan makes, not from a copy of it."""
    from xferbench.measuring.backends import mode_defaults
    from xferbench.measuring.sweep import SweepConfig, make_plan

    assert mode_defaults() in flat(invoke("sweep", "--help").stdout)  # the help is built from it
    backend = fake_backend()
    backend.modes = ("a", "b", "c")  # c: a mode of its own, left to --mode, as torch's tensor is
    plan = make_plan(SweepConfig(frameworks=("fake",), batch_sizes=(1,)))
    plan.close()
    planned = [s.key.mode for s in plan.series]
    assert planned == ["a", "b"]
    said = mode_defaults()
    # fake, like sim, is left out of a default sweep: the help says which option brings its defaults
    assert f"fake: {', '.join(planned)} (with -f fake)." in said and said.endswith("fake: c.")
    assert "sim: link (with -f sim)" in said and "host: numpy;" in said
    monkeypatch.setattr("xferbench.core.environment.accelerator_kinds", lambda: [])
    rows = paths_rows(runner.invoke(app, ["paths"], env={"COLUMNS": "250"}).stdout)
    # fake is left out of a default sweep (as sim is): -f brings the planned modes, -m the rest
    assert {mode: rows[("fake", mode, "cpu")] for mode in "abc"} == {"a": "-f fake", "b": "-f fake", "c": "-f fake -m c"}
    if ("host", "numpy", "cpu") in rows:
        assert rows[("host", "numpy", "cpu")] == "yes"
    if HAS_TORCH:  # a default mode the CPU cannot run is planned, then skipped with its reason
        assert (rows[("torch", "pageable", "cpu")], rows[("torch", "pinned", "cpu")]) == ("yes", "skipped")


@pytest.mark.slow
@needs_torch
def test_sweep_help_and_paths_agree_with_the_plan_for_torch(monkeypatch) -> None:
    from xferbench.measuring.backends import BACKENDS
    from xferbench.measuring.sweep import SweepConfig, make_plan

    plan = make_plan(SweepConfig(frameworks=("torch",), batch_sizes=(1,)))
    plan.close()
    planned = [s.key.mode for s in plan.series]
    runs = [s.key.mode for s in plan.runnable]
    help_text = flat(runner.invoke(app, ["sweep", "--help"], env={"COLUMNS": "250"}).stdout)
    before, named = help_text.split(" Run only when named: ", 1)
    default = before.rsplit("Default: ", 1)[1]
    assert f"torch: {', '.join(planned)};" in default
    others = [m for m in BACKENDS["torch"].modes if m not in planned]
    assert others and re.search(re.escape(f"torch: {', '.join(others)}") + "[.;]", named)
    rows = paths_rows(runner.invoke(app, ["paths"], env={"COLUMNS": "250"}).stdout)
    torch = {mode: cell for (framework, mode, device), cell in rows.items() if framework == "torch" and device == plan.target}
    assert [m for m, cell in torch.items() if cell == "yes"] == runs
    assert [m for m, cell in torch.items() if cell == "skipped"] == [m for m in planned if m not in runs]
    assert {m: cell for m, cell in torch.items() if m in others} == {m: f"-f torch -m {m}" for m in others}


def test_ctrl_c_prints_the_tables_of_what_was_measured_then_exits_130(tmp_path, fake_backend, monkeypatch) -> None:
    """sim's series ends, then Ctrl-C lands in fake's at batch 4: both tables, the busy block once, then the stop."""
    busy_reading(monkeypatch)
    fake_backend(raise_at={4: KeyboardInterrupt()})
    r = invoke("sweep", "-f", "sim,fake", "-m", "link,a,b", "--batch-sizes", "1,2,4,8", "-o", "r.json", *FAST_ARGS)
    assert r.exit_code == 130, r.output
    saved = load(tmp_path / "r.json")
    assert saved.status == "interrupted" and [len(s.ok_points()) for s in saved.series] == [4, 2]
    tables = r.stdout
    assert "sim/link/copy@sim · simulated link" in tables and "fake/a/copy@cpu · fake device" in tables
    assert "note: fake/a/copy@cpu: stopped after 2 of 4 batch sizes" in tables
    assert "not started: fake/b/copy@cpu" in tables
    assert tables.count("warning: the machine was busy at 6 of 6 points") == 1
    assert r.output.index("fake/a/copy@cpu · fake device") < r.output.index("interrupted: 6 measured point(s) saved to")


def test_a_busy_sweep_keeps_its_lines_within_100_columns_and_says_busy_once(tmp_path, monkeypatch) -> None:
    """On a wide terminal's width, every line a busy sweep prints but its tables fits 100 columns."""
    busy_reading(monkeypatch)
    r = runner.invoke(app, ["sweep", "-f", "sim,host", "-d", "h2d,d2h,bidir", "--timing", "per-call,streamed", "--shape", "8x8x3",
                            "--batch-sizes", "1,2,4,8,16,32,64,128,256,512,1024,2048,4096", "-o", "r.json", *FAST_ARGS],
                      env={"COLUMNS": "250"})  # fmt: skip
    assert r.exit_code == 0, r.output
    text = [line for line in (r.stdout + r.stderr).splitlines() if line[:1] not in "┏┃┡│└"]
    assert "skipping host/numpy/copy/bidir@cpu: host/numpy has no bidir path; it copies h2d" in r.stdout  # status lines too
    assert max(len(line) for line in text) <= 100, max(text, key=len)
    assert r.stdout.count("the machine was busy") == 1 and "A busy machine moves figures" in r.stdout
    block = flat(r.stdout.split("the machine was busy", 1)[1])
    measured = [s for s in load(tmp_path / "r.json").series if s.ok_points()]
    assert measured and all(f"{s.label()} every batch: others used up to 1.50 of 2 CPUs" in block for s in measured)
