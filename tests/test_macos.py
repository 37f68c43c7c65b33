"""What a first run on an Apple-silicon Mac would meet, checked on Linux: PyTorch's MPS through a
stand-in as strict as its sources (fake_mps.py), macOS's memory and /proc-less machine through
patches, and whole sweeps in a simulated macOS (tests/macos: sitecustomize.py, and bin/ for sysctl,
ioreg and system_profiler), through the worker into the result file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from conftest import FAST_ARGS, HAS_TF, HAS_TORCH
from fake_mps import FakeTorch
from xferbench.core.spec import SeriesKey

SHAPE = (8, 8, 3)
SIMULATED_MACOS = Path(__file__).parent / "macos"
M1_PRO = {"chip": "Apple M1 Pro", "gpu_cores": 16, "gpu_cores_source": "ioreg -rc AGXAccelerator (gpu-core-count)",
          "memory_bytes": 17179869184, "macos": "15.5", "apple_silicon": True}  # fmt: skip


def mps_transfer(monkeypatch, torch: FakeTorch, mode: str = "pageable", op: str = "copy"):
    from xferbench.measuring.backends import pytorch

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
    from xferbench.measuring.backends import pytorch

    monkeypatch.setattr(pytorch, "_torch", lambda: FakeTorch())
    info = pytorch.TorchBackend().describe(SeriesKey("torch", "pageable", "copy", "mps", SHAPE), {})
    assert info.device_clock is None and info.sync == "torch.mps.synchronize"
    assert "commits a command buffer of its own" in info.params["device_clock"]


def test_an_apple_gpus_destination_counts_in_host_memory() -> None:
    """Unified memory: a batch copied to MPS takes host memory as a CPU copy would."""
    from xferbench.measuring.backends.pytorch import TorchBackend

    backend = TorchBackend()
    for op in ("copy", "seed"):
        on_mps = backend.host_bytes(SeriesKey("torch", "pageable", op, "mps", SHAPE).at(64))
        on_cpu = backend.host_bytes(SeriesKey("torch", "pageable", op, "cpu", SHAPE).at(64))
        assert on_mps == on_cpu
    from xferbench.measuring.backends.tensorflow import TFBackend

    tf = TFBackend()
    for op in ("copy", "seed"):  # the Metal destination, and the seed op's cast, are host memory too
        on_mps = tf.host_bytes(SeriesKey("tf", "eager", op, "mps", SHAPE).at(64))
        assert on_mps > tf.host_bytes(SeriesKey("tf", "eager", op, "cuda:0", SHAPE).at(64))
    assert tf.host_bytes(SeriesKey("tf", "eager", "copy", "mps", SHAPE).at(64)) == 5 * 64 * 8 * 8 * 3


def test_xla_is_not_asked_to_compile_for_metal() -> None:
    """tensorflow-metal has no XLA compiler: jit is skipped on mps, with the reason, not failed at every point."""
    from xferbench.measuring.backends.tensorflow import TFBackend

    backend = TFBackend()
    for op in ("copy", "seed"):
        assert "no compiler for tensorflow-metal" in backend.skip_reason(SeriesKey("tf", "jit", op, "mps", SHAPE))
        assert backend.skip_reason(SeriesKey("tf", "jit", op, "cuda:0", SHAPE)) is None
    assert backend.skip_reason(SeriesKey("tf", "eager", "copy", "mps", SHAPE)) is None
    assert backend.skip_reason(SeriesKey("tf", "function", "copy", "mps", SHAPE)) is None


def test_macos_memory_is_called_installed_not_available(monkeypatch) -> None:
    """macOS has no MemAvailable; hw.memsize is all the RAM, so the message must not call it available."""
    from xferbench.measuring import buffers, sweep

    real_open = open

    def no_proc(path, *args, **kwargs):
        if str(path).startswith("/proc"):
            raise FileNotFoundError(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", no_proc)
    monkeypatch.setattr(buffers, "sys", SimpleNamespace(platform="darwin"))
    monkeypatch.setattr(buffers, "mac_facts", lambda: dict(M1_PRO))  # sysctl hw.memsize, read with the Mac's other facts
    assert buffers.available_host_memory() == (17179869184, "installed")

    monkeypatch.setattr(sweep, "available_host_memory", lambda: (10**9, "installed"))
    backend = SimpleNamespace(host_bytes_for=lambda spec, params: 2 * 10**9)
    key = SeriesKey("torch", "pageable", "copy", "mps", SHAPE)
    plan = SimpleNamespace(config=sweep.SweepConfig(batch_sizes=(1, 2)), runnable=[SimpleNamespace(backend=backend, key=key)])
    from xferbench.core.errors import XferbenchError

    with pytest.raises(XferbenchError, match=r"needs 2.0 GB of host memory but 1.0 GB is installed; lower --batch-sizes"):
        sweep._check_host_memory(plan)


def test_an_uncertain_median_is_not_blamed_on_the_path_where_nothing_read_the_machine() -> None:
    """With /proc (Linux), a quiet machine clears other processes; without it (macOS) nothing can."""
    from test_contention import BIMODAL, point, series_with
    from xferbench.reading.display import noisy_points, uncertain_note

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
    from xferbench.core import environment

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


def simulated_macos_sweep(tmp_path: Path, *args: str, name: str = "mac", tools: Path | None = None,
                          **mac: str) -> tuple[subprocess.CompletedProcess, dict]:  # fmt: skip
    """A sweep in the simulated macOS; `mac` sets its SIMULATED_MAC* variables (torch="2.14.1": the stand-in
    PyTorch of that release, with its Apple GPU); `tools`, a folder searched before the simulation's bin/."""
    out = tmp_path / f"{name}.json"
    path = os.pathsep.join(str(folder) for folder in (tools, SIMULATED_MACOS / "bin") if folder)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SIMULATED_MACOS), os.environ.get("PYTHONPATH")])),
           "PATH": f"{path}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "100",
           **{f"SIMULATED_MAC_{k.upper()}" if k != "macos" else "SIMULATED_MACOS": v for k, v in mac.items()}}  # fmt: skip
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
    assert env["cpu_features"] is None  # no /proc/cpuinfo on a Mac
    assert env["cpu"] == "Apple M1 Pro"  # from macOS's sysctl, as a Mac names its chip
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
    from xferbench.measuring.backends import jax

    backend = jax.JaxBackend()
    key = SeriesKey("jax", "device_put", "copy", "cpu", SHAPE)
    assert backend.skip_reason(key) is None
    monkeypatch.setattr(jax, "sys", SimpleNamespace(platform="darwin"))
    assert "wraps such an array without copying" in backend.skip_reason(key)
    assert backend.skip_reason(SeriesKey("jax", "device_put", "copy", "cuda:0", SHAPE)) is None


# The Mac, identified once from macOS itself ------------------------------------------------------


def macos_tools(monkeypatch, outputs: dict[str, str | None]) -> list[list[str]]:
    """macOS's tools as environment runs them, answering from `outputs` (command line -> stdout; None:
    the tool is missing); returns the command lines run."""
    from xferbench.core import environment

    ran: list[list[str]] = []

    def run(args, **kwargs):
        ran.append(list(args))
        out = outputs.get(" ".join(args))
        if out is None:
            raise FileNotFoundError(args[0])
        return SimpleNamespace(stdout=out, returncode=0)

    monkeypatch.setattr(environment, "sys", SimpleNamespace(platform="darwin"))
    monkeypatch.setattr(environment.subprocess, "run", run)
    monkeypatch.setattr(environment.platform, "mac_ver", lambda: ("15.5", ("", "", ""), "arm64"))
    monkeypatch.setattr(environment.platform, "machine", lambda: "arm64")
    environment.mac_facts.cache_clear()
    environment.cpu_name.cache_clear()
    return ran


IOREG = '+-o AGXAcceleratorG13X  <class AGXAcceleratorG13X>\n    {\n      "gpu-core-count" = 16\n      "model" = "Apple M1 Pro"\n    }\n'
PROFILER = ("Hardware:\n\n      Total Number of Cores: 10 (8 performance and 2 efficiency)\n\nGraphics/Displays:\n\n    Apple M3 Max:\n\n"
            "      Chipset Model: Apple M3 Max\n      Total Number of Cores: 30\n")  # fmt: skip
SYSCTL = {"sysctl -n machdep.cpu.brand_string": "Apple M1 Pro\n", "sysctl -n hw.memsize": "17179869184\n"}


@pytest.fixture(autouse=True)
def fresh_mac_facts():
    """Each test reads the Mac afresh: the facts are cached per process."""
    from xferbench.core import environment

    def clear() -> None:
        for name in ("mac_facts", "cpu_name"):  # a test may have put a plain function in one's place
            getattr(getattr(environment, name, None), "cache_clear", lambda: None)()

    clear()
    yield
    clear()


def test_the_mac_is_read_from_macos_chip_gpu_cores_memory_and_version(monkeypatch) -> None:
    from xferbench.core import environment

    ran = macos_tools(monkeypatch, {**SYSCTL, "ioreg -rc AGXAccelerator": IOREG})
    assert environment.mac_facts() == M1_PRO
    assert environment.apple_gpu_name() == "Apple M1 Pro (16-core GPU)"
    assert ["system_profiler", "SPDisplaysDataType"] not in ran  # ioreg answered: the slow tool is not run
    # no ioreg entry: system_profiler's displays section, never the hardware section's CPU core count
    macos_tools(monkeypatch, {**SYSCTL, "ioreg -rc AGXAccelerator": "", "system_profiler SPDisplaysDataType": PROFILER.split("\n\n", 2)[2]})
    assert environment.apple_gpu_cores() == (30, "system_profiler SPDisplaysDataType (Total Number of Cores)")
    macos_tools(monkeypatch, SYSCTL)
    cores, why = environment.apple_gpu_cores()
    assert cores is None and "neither ioreg" in why and "system_profiler" in why
    assert environment.apple_gpu_name() == "Apple M1 Pro GPU"


def test_one_mps_device_entry_whichever_framework_answered_first(monkeypatch) -> None:
    """torch says "Apple GPU (MPS) on <chip>", TensorFlow its own words: the file names the GPU once,
    from macOS, with the chip, GPU cores and the memory it shares, and the macOS version."""
    from xferbench.core import environment

    macos_tools(monkeypatch, {**SYSCTL, "ioreg -rc AGXAccelerator": IOREG})
    monkeypatch.setattr(environment, "nvml_info", lambda: {"available": False, "reason": "no NVML on a Mac"})
    for first, second in (("tf", "torch"), ("torch", "tf")):
        said = {"torch": {"version": "2.14.1", "devices": [{"id": "mps", "kind": "mps", "name": "Apple GPU (MPS) on Apple M1 Pro"}]},
                "tf": {"version": "2.21.0", "devices": [{"id": "mps", "kind": "mps", "name": "METAL"}]}}  # fmt: skip
        env = environment.capture({first: said[first], second: said[second]})
        (mps,) = [d for d in env["devices"] if d["id"] == "mps"]
        assert mps["name"] == "Apple M1 Pro (16-core GPU)"
        assert (mps["chip"], mps["gpu_cores"], mps["memory_bytes"], mps["unified_memory"]) == ("Apple M1 Pro", 16, 17179869184, True)
        assert env["macos"] == "15.5" and env["memory_bytes"] == 17179869184 and env["cpu"] == "Apple M1 Pro"


# Apple's published memory bandwidth: the ceiling of an MPS copy --------------------------------------


def mps_series(chip_env: dict[str, Any], mbps: float = 20_000.0, mode: str = "pageable") -> tuple[Any, dict[str, Any]]:
    """An mps series that peaked at `mbps`, and an environment holding `chip_env` as its mps device."""
    from xferbench.core.results import Point, Series
    from xferbench.core.timing import Samples

    key = SeriesKey("torch", mode, "copy", "mps", (1000, 1000))
    series = Series("torch", mode, "copy", "mps", [1000, 1000], device_name="Apple GPU", transfer="host-to-device")
    spec = key.at(64)
    series.points.append(Point.measured(spec, Samples([spec.nbytes / (mbps * 1e6)] * 3), warmup_calls=1))
    series.refresh_summary()
    return series, {"cpu": chip_env.pop("cpu", None), "devices": [{"id": "mps", "kind": "mps", **chip_env}]}


def test_apple_publishes_each_chips_memory_bandwidth_with_kind_date_and_source() -> None:
    from xferbench.core.references import APPLE_BANDWIDTH, APPLE_KIND, bandwidth_for

    figures = {(row.chip, row.gpu_cores): row.gbps for row in APPLE_BANDWIDTH}
    assert figures[("Apple M1 Pro", None)] == 200 and figures[("Apple M1 Max", None)] == 400
    assert figures[("Apple M1 Ultra", None)] == 800 and figures[("Apple M2", None)] == 100
    assert figures[("Apple M2 Pro", None)] == 200 and figures[("Apple M2 Max", None)] == 400
    assert figures[("Apple M3 Pro", None)] == 150 and figures[("Apple M3 Max", (30,))] == 300 and figures[("Apple M3 Max", (40,))] == 400
    assert figures[("Apple M4", None)] == 120 and figures[("Apple M4 Pro", None)] == 273 and figures[("Apple M4 Max", (40,))] == 546
    for row in APPLE_BANDWIDTH:
        assert row.kind == APPLE_KIND == "Apple's published memory bandwidth, theoretical"
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", row.date) and "https://" in row.source and row.checked.startswith("read ")
        assert row.printed.replace("up to ", "") == f"{row.gbps:g}GB/s", row
    # whole names: M2 never takes M2 Pro's figure; a chip Apple gave no figure for has none (M1: a reviewer's arithmetic)
    assert bandwidth_for("Apple M2")[0].gbps == 100 and bandwidth_for("Apple M2 Pro")[0].gbps == 200
    none, why = bandwidth_for("Apple M1")
    assert none is None and "Apple publishes no memory bandwidth for the Apple M1" in why
    assert bandwidth_for("Apple M3 Max", 40)[0].gbps == 400 and bandwidth_for("Apple M3 Max", 30)[0].gbps == 300
    assert "GPU core count is not recorded" in bandwidth_for("Apple M3 Max")[1]
    assert "not for this 32-core GPU" in bandwidth_for("Apple M4 Max", 32)[1]


def test_an_mps_series_reads_against_its_chips_memory_bandwidth_labelled_unified_memory() -> None:
    from xferbench.reading import display
    from xferbench.core import telemetry
    from xferbench.core.results import Result

    series, env = mps_series({"chip": "Apple M1 Pro", "gpu_cores": 16})
    gbps, label = telemetry.link_ceiling(series, env)
    assert gbps == 200.0 and label.startswith("unified memory: Apple M1 Pro, Apple's published memory bandwidth, theoretical")
    assert "2021-10-18" in label and "apple.com/newsroom/2021/10" in label and "twice its MB/s" in label
    # 20 GB/s copied is 40 GB/s through memory (each byte read and written): 20% of 200
    assert telemetry.fraction_of_link(series, env) == (pytest.approx(0.2), 200.0)
    caption = display.ceiling_parts(series, Result(env, {}, "t", [series], "complete"))
    assert caption == ["20% of the unified memory's 200.0 GB/s (Apple's published bandwidth, theoretical; a copy reads"
                       " and writes each byte, so twice its MB/s)"]  # fmt: skip
    # the GPU decides where Apple gives a figure per configuration
    assert telemetry.link_ceiling(*mps_series({"chip": "Apple M3 Max", "gpu_cores": 30}))[0] == 300.0
    gbps, why = telemetry.link_ceiling(*mps_series({"chip": "Apple M3 Max"}))
    assert gbps is None and why.startswith("unknown: unified memory (no link between host and GPU)") and "core count" in why
    # a file from before the chip was recorded: its CPU is the chip (sysctl machdep.cpu.brand_string)
    assert telemetry.link_ceiling(*mps_series({"cpu": "Apple M2", "name": "Apple GPU (MPS) on Apple M2"}))[0] == 100.0
    m1, m1_env = mps_series({"chip": "Apple M1", "gpu_cores": 8})
    gbps, why = telemetry.link_ceiling(m1, m1_env)
    assert gbps is None and "Apple publishes no memory bandwidth for the Apple M1" in why
    # no ceiling to read against: the caption still says what the copy is
    caption = str(display.series_table(m1, Result(m1_env, {}, "t", [m1], "complete")).caption)
    assert "unified memory: a copy within the memory the CPU and GPU share, over no bus" in caption and "link" not in caption


def test_an_mps_plot_keeps_saying_host_to_device_within_unified_memory(tmp_path) -> None:
    from xferbench.reading.plot import figure
    from xferbench.core.results import Result, select

    series, env = mps_series({"chip": "Apple M1 Pro", "gpu_cores": 16, "name": "Apple M1 Pro (16-core GPU)"})
    series.device_name = "Apple M1 Pro (16-core GPU)"
    Result(env, {}, "2026-11-26T00:00:00+00:00", [series], "complete").save(tmp_path / "m.json")
    fig = figure(select([tmp_path / "m.json"])[0])
    assert fig.get_suptitle() == "host-to-device: Apple M1 Pro (16-core GPU) (mps, unified memory)"
    lines = [line.get_label() for line in fig.axes[0].get_lines()]
    assert "Apple M1 Pro unified memory: 200 GB/s (Apple's published bandwidth, theoretical)" in lines
    assert any(line.get_ydata()[0] == 200_000 for line in fig.axes[0].get_lines() if "unified memory" in line.get_label())


# PyTorch's MPS path: what each series says it is, and its pinned modes --------------------------------


def use_torch(monkeypatch, torch: FakeTorch) -> Any:
    from xferbench.core import environment
    from xferbench.measuring.backends import pytorch

    monkeypatch.setattr(pytorch, "_torch", lambda: torch)
    monkeypatch.setattr(environment, "mac_facts", lambda: dict(M1_PRO))
    return pytorch


def test_every_mps_series_says_it_is_a_copy_within_unified_memory(monkeypatch) -> None:
    pytorch = use_torch(monkeypatch, FakeTorch("2.14.1"))
    backend = pytorch.TorchBackend()
    for mode, direction, words in (("pageable", "h2d", "newBufferWithBytesNoCopy"), ("tensor", "h2d", "newBufferWithBytesNoCopy"),
                                   ("pinned", "h2d", "shared Metal buffer"), ("pinned_into", "h2d", "shared Metal buffer"),
                                   ("pageable", "d2h", "newBufferWithBytesNoCopy"), ("pinned_into", "d2h", "shared Metal buffer"),
                                   ("pin_per_call", "h2d", "shared Metal buffer"), ("pin", "h2d", "MPS pinned allocator")):  # fmt: skip
        for op in ("copy", "seed") if direction == "h2d" and mode != "pin" else ("copy",):
            info = backend.describe(SeriesKey("torch", mode, op, "mps", SHAPE, direction=direction), {})
            assert "a copy within unified memory" in info.note and words in info.note, (mode, direction, info.note)
            assert info.device_name == "Apple M1 Pro (16-core GPU)"
    assert backend.environment()["devices"] == [{"id": "mps", "kind": "mps", "name": "Apple M1 Pro (16-core GPU)"}]


def test_pinned_modes_run_on_mps_where_pytorch_pins_for_it(monkeypatch) -> None:
    """PyTorch 2.14 added an MPS pinned allocator (pytorch/pytorch#181720): a pinned CPU tensor backed by a
    shared Metal buffer. Before it, pinning raised (up to 2.6) or gave an mps:0 tensor that is_pinned()
    calls pageable (2.7 to 2.13): measured, a pinned series would time another copy than it names."""
    from xferbench.core.errors import NotSupportedHere
    from xferbench.core.spec import BIDIR, D2H

    pytorch = use_torch(monkeypatch, FakeTorch("2.14.1"))
    backend = pytorch.TorchBackend()
    for mode in pytorch.PIN_MODES:
        source = "pinned" if mode in pytorch.PINNED_MODES else "numpy"
        assert backend.skip_reason(SeriesKey("torch", mode, "copy", "mps", SHAPE, source)) is None
    bidir = SeriesKey("torch", "pinned_into", "copy", "mps", SHAPE, "pinned", direction=BIDIR)
    assert "torch.mps has no streams" in backend.skip_reason(bidir)
    assert "needs a CUDA device" in backend.skip_reason(SeriesKey("torch", "pinned", "copy", "cpu", SHAPE, "pinned"))
    for mode, direction in (("pinned", "h2d"), ("pinned_into", "h2d"), ("pinned_into", D2H), ("pin_per_call", "h2d"), ("pin", "h2d")):
        key = SeriesKey("torch", mode, "copy", "mps", SHAPE, "pinned" if mode in pytorch.PINNED_MODES else "numpy", direction=direction)
        backend.describe(key, {})
        transfer = backend.prepare(key.at(2), {})
        transfer()
        transfer.verify()  # the bytes arrived, from pinned memory
    for version, said in (("2.13.0", "gives a tensor on mps:0 with is_pinned() False"), ("2.6.0", "cannot pin host memory on a Mac")):
        use_torch(monkeypatch, FakeTorch(version))
        with pytest.raises(NotSupportedHere) as refused:
            backend.describe(SeriesKey("torch", "pinned_into", "copy", "mps", SHAPE, "pinned"), {})
        assert said in str(refused.value) and "needs PyTorch 2.14 or newer: pip install -U torch" in str(refused.value)
        assert "\n" not in str(refused.value)


def test_the_stand_in_refuses_what_a_macs_pytorch_refuses() -> None:
    """A call the real torch refuses on a Mac fails in the stand-in too, or a test could pass on a call
    no Mac would run."""
    torch = FakeTorch("2.14.1")
    x = torch.from_numpy(np.zeros((2, 3), np.uint8))
    on_mps = x.to("mps")
    assert on_mps.device == torch.device("mps:0") and not on_mps.is_pinned()
    for call in (lambda: torch.cuda.synchronize(), lambda: torch.cuda.set_device(0), lambda: x.to("cuda:0"),
                 lambda: torch.empty(2, device="cuda")):  # fmt: skip
        with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
            call()
    with pytest.raises(RuntimeError, match="dummy base class"):
        torch.cuda.Event(enable_timing=True)
    with pytest.raises(TypeError, match="doesn't support float64"):
        on_mps.type(torch.float64)
    with pytest.raises(TypeError, match="Use Tensor.cpu"):
        on_mps.numpy()
    with pytest.raises(RuntimeError, match="must match"):
        torch.empty(3, device="mps").copy_(x)
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        on_mps.pin_memory()
    assert torch.cuda.device_count() == 0 and torch.version.cuda is None and not hasattr(torch.mps, "Stream")
    assert torch.empty(4, dtype=torch.uint8, pin_memory=True).is_pinned()
    old = FakeTorch("2.13.0")
    assert old.empty(4, pin_memory=True).device == old.device("mps:0") and not old.empty(4, pin_memory=True).is_pinned()
    with pytest.raises(RuntimeError, match="storage on different device"):
        old.from_numpy(np.zeros(4, np.uint8)).pin_memory()
    with pytest.raises(RuntimeError, match="pin_memory allocator"):
        FakeTorch("2.6.0").empty(4, pin_memory=True)


# Whole sweeps on the simulated Mac ------------------------------------------------------------------


def test_the_simulation_answers_as_macos_on_arm64(tmp_path) -> None:
    """platform as Python on an Apple-silicon Mac answers it: a simulated Mac's file must not say Linux."""
    env = {**os.environ, "PYTHONPATH": str(SIMULATED_MACOS), "PATH": f"{SIMULATED_MACOS / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    probe = ("import platform, subprocess; print(platform.system(), platform.machine(), platform.platform(),"
             " platform.mac_ver()[0], platform.uname().system,"
             " subprocess.run(['sysctl', '-n', 'machdep.cpu.brand_string'], capture_output=True, text=True).stdout.strip())")  # fmt: skip
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert r.stdout.split() == ["Darwin", "arm64", "macOS-15.5-arm64-arm-64bit", "15.5", "Darwin", "Apple", "M1", "Pro"], r.stderr


SWEEP_MPS = ("-f", "torch", "--device", "mps", "-m", "pageable", "-m", "pinned", "-m", "pinned_into")


@pytest.mark.slow
def test_an_mps_series_goes_through_the_worker_into_the_file_as_unified_memory(tmp_path) -> None:
    """The stand-in PyTorch 2.14 on the simulated M1 Pro: planning, the worker, describe, verify and the
    result file, each series saying what an MPS copy is, read against the chip's published bandwidth, and
    the Mac identified from macOS (chip, GPU cores, memory, macOS version)."""
    from xferbench.core.results import load
    from xferbench.core.telemetry import link_ceiling

    r, data = simulated_macos_sweep(tmp_path, *SWEEP_MPS, torch="2.14.1")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    env = data["environment"]
    assert env["os"] == "macOS-15.5-arm64-arm-64bit" and env["macos"] == "15.5" and env["machine"] == "arm64"
    assert env["memory_bytes"] == 17179869184 and env["cpu"] == "Apple M1 Pro"
    (mps,) = [d for d in env["devices"] if d["id"] == "mps"]
    assert (mps["name"], mps["chip"], mps["gpu_cores"]) == ("Apple M1 Pro (16-core GPU)", "Apple M1 Pro", 16)
    assert mps["memory_bytes"] == 17179869184 and mps["unified_memory"] is True
    result = load(tmp_path / "mac.json")
    assert [(s.mode, s.status) for s in result.series] == [("pageable", "ok"), ("pinned", "ok"), ("pinned_into", "ok")]
    for series in result.series:
        assert series.device_name == "Apple M1 Pro (16-core GPU)" and series.transfer == "host-to-device"
        assert series.note.startswith("on MPS a copy within unified memory") and series.device_clock is None
        gbps, label = link_ceiling(series, result.environment)
        assert gbps == 200.0 and label.startswith("unified memory: Apple M1 Pro")
        assert all(p.status == "ok" for p in series.points)
    said = " ".join(r.stdout.split())
    assert said.count("of the unified memory's 200.0 GB/s (Apple's published bandwidth, theoretical; a copy reads and writes each byte, so twice its MB/s)") == 3
    assert said.count("note: torch/pageable/copy@mps: on MPS a copy within unified memory") == 1


@pytest.mark.slow
def test_an_older_pytorch_on_a_mac_skips_pinned_modes_and_an_m3_max_is_told_by_its_gpu(tmp_path) -> None:
    """PyTorch 2.13 has no MPS pinned allocator: its pinned series are skipped with what to do, its pageable
    one measures. ioreg missing: system_profiler gives the GPU cores, which pick the M3 Max's figure."""
    from xferbench.core.results import load
    from xferbench.core.telemetry import link_ceiling

    r, data = simulated_macos_sweep(tmp_path, *SWEEP_MPS, torch="2.13.0", chip="Apple M3 Max", gpu_cores="30", ioreg="absent",
                                    macos="26.1")  # fmt: skip
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    result = load(tmp_path / "mac.json")
    status = {s.mode: (s.status, s.reason) for s in result.series}
    assert status["pageable"] == ("ok", None)
    for mode in ("pinned", "pinned_into"):
        assert status[mode][0] == "skipped" and status[mode][1].startswith("PyTorch 2.13.0's pin_memory on a Mac gives a tensor on mps:0")
        assert status[mode][1].endswith("pinned host memory on MPS needs PyTorch 2.14 or newer: pip install -U torch")
    (mps,) = [d for d in data["environment"]["devices"] if d["id"] == "mps"]
    assert mps["gpu_cores"] == 30 and mps["gpu_cores_source"].startswith("system_profiler SPDisplaysDataType")
    assert data["environment"]["os"] == "macOS-26.1-arm64-arm-64bit" and data["environment"]["macos"] == "26.1"
    assert link_ceiling(result.series[0], result.environment)[0] == 300.0


def counted_tools(tmp_path: Path) -> tuple[Path, Path]:
    """A folder of sysctl, ioreg and system_profiler that each write their command line to a log, then run
    the simulated Mac's own; the folder and the log."""
    folder, log = tmp_path / "counted", tmp_path / "tools.log"
    folder.mkdir()
    for tool in ("sysctl", "ioreg", "system_profiler"):
        script = folder / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{log}"\nexec "{SIMULATED_MACOS / "bin" / tool}" "$@"\n')
        script.chmod(0o755)
    return folder, log


@pytest.mark.slow
def test_macos_tools_run_once_per_sweep_however_many_workers_it_starts(tmp_path) -> None:
    """Each series gets a worker of its own, and each would read the Mac again (ioreg for the GPU cores,
    sysctl for the chip and memory): the sweep reads it once and hands its facts to every worker."""
    tools, log = counted_tools(tmp_path)
    r, data = simulated_macos_sweep(tmp_path, "-f", "host", "-m", "numpy", *SWEEP_MPS, torch="2.14.1", tools=tools)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    torch_series = [s for s in data["series"] if s["framework"] == "torch"]
    assert len(torch_series) == 3 and all(s["status"] == "ok" for s in torch_series)  # three workers, one per series
    assert sorted(log.read_text().splitlines()) == ["ioreg -rc AGXAccelerator", "sysctl -n hw.memsize",
                                                    "sysctl -n machdep.cpu.brand_string"]  # fmt: skip
    env = data["environment"]
    (mps,) = [d for d in env["devices"] if d["id"] == "mps"]
    assert (mps["name"], env["cpu"], env["memory_bytes"]) == ("Apple M1 Pro (16-core GPU)", "Apple M1 Pro", 17179869184)
    assert all(s["device_name"] == "Apple M1 Pro (16-core GPU)" for s in torch_series)  # each worker named the GPU from them


def test_a_worker_takes_the_macs_facts_the_sweep_handed_it_and_runs_no_tool(monkeypatch) -> None:
    """The facts travel as JSON in the worker's environment; one the worker cannot read is gathered afresh."""
    from xferbench.core import environment

    ran = macos_tools(monkeypatch, {**SYSCTL, "ioreg -rc AGXAccelerator": IOREG})
    handed = environment.facts_for_workers()
    assert json.loads(handed[environment.MAC_FACTS_ENV]) == M1_PRO and len(ran) == 3
    environment.mac_facts.cache_clear()
    environment.cpu_name.cache_clear()
    ran.clear()
    monkeypatch.setenv(environment.MAC_FACTS_ENV, handed[environment.MAC_FACTS_ENV])
    assert environment.mac_facts() == M1_PRO and environment.cpu_name() == "Apple M1 Pro" and environment._total_memory() == 17179869184
    assert environment.apple_gpu_name() == "Apple M1 Pro (16-core GPU)" and ran == []
    for unreadable in ("{", "[]", "{}"):
        monkeypatch.setenv(environment.MAC_FACTS_ENV, unreadable)
        environment.mac_facts.cache_clear()
        assert environment.mac_facts() == M1_PRO and len(ran) == 3
        ran.clear()
    monkeypatch.setattr(environment, "sys", SimpleNamespace(platform="linux"))
    assert environment.facts_for_workers() == {}  # nothing to hand on where no tool is run


def test_an_intel_macs_gpu_is_no_unified_memory(monkeypatch) -> None:
    """PyTorch up to 2.2 and tensorflow-metal ran MPS on Intel Macs' AMD cards: a PCIe transfer, never
    labelled unified memory nor read against an Apple chip's bandwidth."""
    from xferbench.core import environment, telemetry
    from xferbench.reading.pairs import copy_kind

    macos_tools(monkeypatch, {"sysctl -n machdep.cpu.brand_string": "Intel(R) Core(TM) i9-9980HK CPU @ 2.40GHz\n",
                              "sysctl -n hw.memsize": "34359738368\n"})  # fmt: skip
    monkeypatch.setattr(environment.platform, "machine", lambda: "x86_64")
    assert not environment.apple_silicon() and environment.apple_gpu_name() == "the GPU of an Intel Mac (MPS)"
    entry = environment.mps_device()
    assert entry["unified_memory"] is False and entry["name"] == "the GPU of an Intel Mac (MPS)"
    series, env = mps_series({"chip": None, "unified_memory": False})
    gbps, label = telemetry.link_ceiling(series, env)
    assert gbps is None and "shares no unified memory" in label
    assert telemetry.fraction_of_link(series, env) == (None, None)
    series.params = {"unified_memory": False}  # as the backends record an Intel Mac's GPU
    assert copy_kind(series) == "a transfer to an Intel Mac's GPU (MPS)"
