"""What a first run on an Apple-silicon Mac would meet, checked on Linux: PyTorch's MPS through a
stand-in as strict as its sources (fake_mps.py), macOS's memory and /proc-less machine through
patches, and a whole sweep in a simulated macOS (tests/macos/sitecustomize.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import FAST_ARGS, HAS_TF, HAS_TORCH
from fake_mps import FakeTorch
from xferbench.spec import SeriesKey

SHAPE = (8, 8, 3)
SIMULATED_MACOS = Path(__file__).parent / "macos"


def mps_transfer(monkeypatch, torch: FakeTorch, mode: str = "pageable", op: str = "copy"):
    from xferbench.backends import pytorch

    monkeypatch.setattr(pytorch, "_torch", lambda: torch)
    return pytorch.TorchTransfer(SeriesKey("torch", mode, op, "mps", SHAPE).at(2))


def test_an_mps_call_submits_only_what_the_users_copy_does(monkeypatch) -> None:
    """Each MPS event record commits a command buffer of its own: timed inside the call, it would add
    submissions and waits to the very transfer it times. The call is the copy and its synchronize."""
    torch = FakeTorch()
    transfer = mps_transfer(monkeypatch, torch)
    assert transfer() is None  # no device clock on MPS
    assert torch.event_records == 0
    assert torch.submissions == 2 and torch.waits == 2  # the blit (waited for) and torch.mps.synchronize()


def test_out_of_order_mps_callbacks_cost_no_point(monkeypatch) -> None:
    """PyTorch's elapsed_time raised when Metal's callbacks ran out of order: the point would be lost."""
    torch = FakeTorch(out_of_order=True)
    transfer = mps_transfer(monkeypatch, torch)
    for _ in range(3):
        transfer()
    transfer.verify()  # the bytes arrived, by the stand-in's own copy
    assert torch.event_records == 0


def test_mps_series_claim_no_device_clock_and_say_why(monkeypatch) -> None:
    from xferbench.backends import pytorch

    monkeypatch.setattr(pytorch, "_torch", lambda: FakeTorch())
    info = pytorch.TorchBackend().describe(SeriesKey("torch", "pageable", "copy", "mps", SHAPE), {})
    assert info.device_clock is None and info.sync == "torch.mps.synchronize"
    assert "commits a command buffer of its own" in info.params["device_clock"]


def test_an_apple_gpus_destination_counts_in_host_memory() -> None:
    """Unified memory: a batch copied to MPS takes host memory as a CPU copy would."""
    from xferbench.backends.pytorch import TorchBackend

    backend = TorchBackend()
    for op in ("copy", "seed"):
        on_mps = backend.host_bytes(SeriesKey("torch", "pageable", op, "mps", SHAPE).at(64))
        on_cpu = backend.host_bytes(SeriesKey("torch", "pageable", op, "cpu", SHAPE).at(64))
        assert on_mps == on_cpu
    from xferbench.backends.tensorflow import TFBackend

    tf = TFBackend()
    for op in ("copy", "seed"):  # the Metal destination, and the seed op's cast, are host memory too
        on_mps = tf.host_bytes(SeriesKey("tf", "eager", op, "mps", SHAPE).at(64))
        assert on_mps > tf.host_bytes(SeriesKey("tf", "eager", op, "cuda:0", SHAPE).at(64))
    assert tf.host_bytes(SeriesKey("tf", "eager", "copy", "mps", SHAPE).at(64)) == 5 * 64 * 8 * 8 * 3


def test_xla_is_not_asked_to_compile_for_metal() -> None:
    """tensorflow-metal has no XLA compiler: jit is skipped on mps, with the reason, not failed at every point."""
    from xferbench.backends.tensorflow import TFBackend

    backend = TFBackend()
    for op in ("copy", "seed"):
        assert "no compiler for tensorflow-metal" in backend.skip_reason(SeriesKey("tf", "jit", op, "mps", SHAPE))
        assert backend.skip_reason(SeriesKey("tf", "jit", op, "cuda:0", SHAPE)) is None
    assert backend.skip_reason(SeriesKey("tf", "eager", "copy", "mps", SHAPE)) is None
    assert backend.skip_reason(SeriesKey("tf", "function", "copy", "mps", SHAPE)) is None


def test_macos_memory_is_called_installed_not_available(monkeypatch) -> None:
    """macOS has no MemAvailable; hw.memsize is all the RAM, so the message must not call it available."""
    from xferbench import buffers, sweep

    real_open = open

    def no_proc(path, *args, **kwargs):
        if str(path).startswith("/proc"):
            raise FileNotFoundError(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", no_proc)
    monkeypatch.setattr(buffers, "sys", SimpleNamespace(platform="darwin"))
    monkeypatch.setattr(buffers.subprocess, "run", lambda *a, **k: SimpleNamespace(stdout="17179869184\n"))
    assert buffers.available_host_memory() == (17179869184, "installed")

    monkeypatch.setattr(sweep, "available_host_memory", lambda: (10**9, "installed"))
    backend = SimpleNamespace(host_bytes=lambda spec: 2 * 10**9)
    key = SeriesKey("torch", "pageable", "copy", "mps", SHAPE)
    plan = SimpleNamespace(config=SimpleNamespace(batch_sizes=(1, 2)), runnable=[SimpleNamespace(backend=backend, key=key)])
    from xferbench.errors import XferbenchError

    with pytest.raises(XferbenchError, match=r"needs 2.0 GB of host memory but 1.0 GB is installed; lower --batch-sizes"):
        sweep._check_host_memory(plan)


def test_an_uncertain_median_is_not_blamed_on_the_path_where_nothing_read_the_machine() -> None:
    """With /proc (Linux), a quiet machine clears other processes; without it (macOS) nothing can."""
    from test_contention import BIMODAL, point, series_with
    from xferbench.display import noisy_points, uncertain_note

    unread = series_with([point(128, 9000.0, wait=None, others=None, times=BIMODAL)])
    note = uncertain_note(noisy_points(unread), system="macOS-14.5-arm64-arm-64bit")
    assert "no reading of other processes' CPU use was recorded there (macOS has no /proc" in note
    assert "another process may cause it" in note and "this path's own time varies" not in note
    # the reason follows the file's own OS: a Linux file without the reading predates it
    linux = uncertain_note(noisy_points(unread), system="Linux-6.18.44-fc-v769-x86_64-with-glibc2.36")
    assert "(the file was written before xferbench took that reading)" in linux and "macOS" not in linux
    assert "(Windows has no /proc to read it from)" in uncertain_note(noisy_points(unread), system="Windows-11-10.0.22631-SP0")
    assert "(the file records none)" in uncertain_note(noisy_points(unread))
    quiet = series_with([point(128, 9000.0, times=BIMODAL)])
    assert "this path's own time varies" in uncertain_note(noisy_points(quiet))


def test_missing_checks_are_named_where_the_os_cannot_make_them(monkeypatch) -> None:
    from xferbench import environment

    if os.access("/proc/stat", os.R_OK) and os.path.isdir("/proc/self/task"):
        assert not any(m.startswith("busy-machine detection") for m in environment.unavailable_checks())
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(environment.os, "access", lambda path, mode: False)
    missing = environment.unavailable_checks()
    assert any(m.startswith("busy-machine detection") for m in missing)
    assert any("no sched_getaffinity" in m for m in missing)
    monkeypatch.setattr(environment, "sys", SimpleNamespace(platform="darwin"))
    assert environment.os_name() == "macOS"
    assert any(m.startswith("how much memory is free: macOS gives only the installed total") for m in environment.unavailable_checks())


def simulated_macos_sweep(tmp_path: Path, *args: str, name: str = "mac") -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / f"{name}.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SIMULATED_MACOS), os.environ.get("PYTHONPATH")])),
           "PATH": f"{SIMULATED_MACOS / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "100"}  # fmt: skip
    r = subprocess.run([sys.executable, "-m", "xferbench", "sweep", "--batch-sizes", "1,4", "--shape", "16x16x3", *FAST_ARGS,
                        *args, "-o", str(out)], capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    return r, (json.loads(out.read_text()) if out.exists() else {})


def test_the_simulation_is_macos_to_python(tmp_path) -> None:
    env = {**os.environ, "PYTHONPATH": str(SIMULATED_MACOS)}
    probe = ("import os, sys; print(sys.platform, hasattr(os, 'sched_getaffinity'), os.path.exists('/proc/self'),"
             " os.path.isdir('/sys/devices'), os.access('/proc/stat', os.R_OK))")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert r.stdout.split() == ["darwin", "False", "False", "False", "False"], r.stderr


@pytest.mark.slow
@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed (pip install 'xferbench[torch]')")
def test_a_sweep_finishes_on_simulated_macos_and_says_what_it_cannot_check(tmp_path) -> None:
    """sys.platform darwin, no /proc, no /sys, no sched_getaffinity, in the sweep and in every worker it
    starts: host, torch on the CPU and TensorFlow where installed all measure, and the run says which
    checks this OS cannot make."""
    frameworks = ["-f", "host", "-f", "torch"] + (["-f", "tf", "--mode", "eager", "--mode", "pageable", "--mode", "numpy"]
                                                  if HAS_TF else [])  # fmt: skip
    r, result = simulated_macos_sweep(tmp_path, *frameworks)
    assert r.returncode == 0, r.stdout + r.stderr
    # 32 GB a batch: more than the simulated Mac's 17.2 GB, and more than this machine could ever allocate
    too_big, _ = simulated_macos_sweep(tmp_path, "-f", "host", "--shape", "30000x30000x3", "--batch-sizes", "12", name="big")
    assert too_big.returncode == 2 and "GB of host memory but 17.2 GB is installed" in too_big.stderr, too_big.stderr
    assert "Traceback" not in r.stderr
    said = " ".join(r.stdout.split())
    assert "note: not available on macOS: busy-machine detection" in said
    assert "not available on macOS: the CPUs this process may run on (no sched_getaffinity)" in said
    env = result["environment"]
    assert env["process_cpus"] is None and env["transparent_hugepages"] is None
    assert env["cpu"] == "Apple M2 (simulated)"  # from macOS's sysctl, as a Mac names its chip
    assert any(m.startswith("busy-machine detection") for m in env["unavailable_checks"])
    ran = {s["framework"] for s in result["series"] if s["status"] == "ok"}
    assert ran == {"host", "torch"} | ({"tf"} if HAS_TF else set())
    for series in result["series"]:
        for p in series["points"]:
            if p["status"] == "ok":
                assert p["others_cpus"] is None and p["run_wait"] is None  # nothing read, nothing claimed


def test_jax_on_a_macs_cpu_is_skipped_as_it_would_alias(monkeypatch) -> None:
    """A Mac's NumPy batch is page-aligned, which JAX on the CPU wraps without a copy: nothing to time,
    rather than a copy from a placement no Mac array has."""
    from xferbench.backends import jax

    backend = jax.JaxBackend()
    key = SeriesKey("jax", "device_put", "copy", "cpu", SHAPE)
    assert backend.skip_reason(key) is None
    monkeypatch.setattr(jax, "sys", SimpleNamespace(platform="darwin"))
    assert "wraps such an array without copying" in backend.skip_reason(key)
    assert backend.skip_reason(SeriesKey("jax", "device_put", "copy", "cuda:0", SHAPE)) is None
