"""An Intel GPU with PyTorch for XPU, checked on a machine without one: a stand-in for PyTorch's XPU build as
strict as its sources (fake_gpu_torch), and whole sweeps in a simulated XPU machine (tests/xpu/sitecustomize.py),
through the worker into the result file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import FAST_ARGS, needs_torch
from fake_gpu_torch import NO_CUDA, GpuTorch
from xferbench.core.errors import NotSupportedHere
from xferbench.core.spec import BIDIR, SeriesKey

SIMULATED_XPU = Path(__file__).parent / "xpu"
ARC = {"name": "Intel(R) Arc(TM) B580 Graphics", "platform_name": "Intel(R) oneAPI Unified Runtime over Level-Zero", "type": "gpu",
       "driver_version": "1.6.32224+14", "total_memory": 12 * 2**30, "gpu_eu_count": 160}  # fmt: skip
SHAPE = (8, 8, 3)


def simulated_xpu_sweep(tmp_path: Path, *args: str, name: str = "xpu", **settings: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / f"{name}.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SIMULATED_XPU), os.environ.get("PYTHONPATH")])),
           "COLUMNS": "120", **{f"SIMULATED_XPU_{k.upper()}": v for k, v in settings.items()}}  # fmt: skip
    r = subprocess.run([sys.executable, "-m", "xferbench", "sweep", "--batch-sizes", "1,4", "--shape", "16x16x3", *FAST_ARGS,
                        *args, "-o", str(out)], capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    return r, (json.loads(out.read_text()) if out.exists() else {})


@pytest.mark.slow
def test_an_xpu_sweep_measures_pageable_and_pinned_copies_to_the_intel_gpu_through_the_worker(tmp_path) -> None:
    """--device auto picks xpu:0; torch's three default paths measure and verify, synchronized with
    torch.xpu.synchronize and timed by torch.xpu.Event; the file names the GPU as Intel's, on Level Zero,
    discrete on PCIe, and says its link is not read."""
    from xferbench.core.results import load
    from xferbench.core.telemetry import link_ceiling

    r, data = simulated_xpu_sweep(tmp_path, "-f", "torch")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    (gpu,) = [d for d in data["environment"]["devices"] if d["id"] != "cpu"]
    assert (gpu["id"], gpu["kind"], gpu["vendor"], gpu["runtime"], gpu["host_link"]) == ("xpu:0", "xpu", "Intel", "Level Zero", "PCIe")
    assert gpu["name"] == "Intel(R) Arc(TM) B580 Graphics" and gpu["memory_bytes"] == 12 * 2**30
    assert data["environment"]["frameworks"]["torch"]["xpu"] == "20250101"
    result = load(tmp_path / "xpu.json")
    assert [(s.mode, s.status) for s in result.series] == [("pageable", "ok"), ("pinned", "ok"), ("pinned_into", "ok")]
    for series in result.series:
        assert series.device == "xpu:0" and series.device_name == "Intel(R) Arc(TM) B580 Graphics"
        assert (series.transfer, series.sync, series.device_clock) == ("host-to-device", "torch.xpu.synchronize", "torch.xpu.Event")
        assert all(p.status == "ok" and p.device_median_s is not None for p in series.points)
        assert link_ceiling(series, result.environment) == (None, "unknown: xferbench reads no Intel GPU's PCIe link")


@pytest.mark.slow
def test_pytorch_2_5_on_an_intel_gpu_is_timed_by_the_host_clock_and_an_integrated_gpu_shares_memory(tmp_path) -> None:
    """torch.xpu.Event has no elapsed_time before 2.6: the series still measure, host-timed, saying why."""
    from xferbench.core.results import load
    from xferbench.core.telemetry import link_ceiling

    r, data = simulated_xpu_sweep(tmp_path, "-f", "torch", "--device", "xpu", torch="2.5.1+xpu", gpu="Intel(R) Arc(TM) Graphics")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    (gpu,) = [d for d in data["environment"]["devices"] if d["id"] != "cpu"]
    assert gpu["host_link"] == "unified memory"  # a Core Ultra's integrated Arc
    result = load(tmp_path / "xpu.json")
    for series in result.series:
        assert series.status == "ok" and series.device_clock is None
        assert link_ceiling(series, result.environment)[1].startswith("unknown: this Intel GPU is integrated and shares the host's memory")
        assert all(p.status == "ok" and p.device_median_s is None for p in series.points)
        assert series.params["device_clock"].startswith("torch.xpu.Event has no elapsed_time in PyTorch 2.5.1+xpu")


@needs_torch
def test_without_an_intel_gpu_the_default_sweep_is_unchanged_and_xpu_is_refused_in_one_line(tmp_path) -> None:
    """This machine's PyTorch sees no xpu device: --device xpu is one line and exit 2; the default plan has no xpu."""
    from xferbench.measuring import sweep
    from xferbench.measuring.backends import BACKENDS

    r = subprocess.run([sys.executable, "-m", "xferbench", "sweep", "-f", "torch", "--device", "xpu", "--batch-sizes", "1",
                        "-o", str(tmp_path / "x.json")], capture_output=True, text=True, timeout=600)  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert r.stderr.startswith("error: device 'xpu' is not present; devices present: cpu")
    assert sweep.auto_device(["cpu"]) == "cpu" and sweep.auto_device(["cpu", "xpu:0", "mps"]) == "xpu:0"
    assert sweep.auto_device(["cpu", "xpu:0", "cuda:0"]) == "cuda:0"
    assert "xpu:0" not in BACKENDS["torch"].devices()


def test_the_xpu_paths_ask_xpu_for_their_device_wait_and_clock(monkeypatch) -> None:
    """set_device, the events and the wait are torch.xpu's; a non-blocking copy lands only when xpu is
    synchronized, so a call that returned before it would be read as zeros."""
    from xferbench.measuring.backends import pytorch

    torch = GpuTorch("xpu", "2.8.0+xpu", [dict(ARC), dict(ARC)])
    monkeypatch.setattr(pytorch, "_torch", lambda: torch)
    assert pytorch.TorchBackend().devices() == ["cpu", "xpu:0", "xpu:1"]
    for mode in ("pageable", "pinned", "pinned_into"):
        transfer = pytorch.TorchTransfer(SeriesKey("torch", mode, "copy", "xpu:1", SHAPE).at(4))
        assert torch.current == 1 and transfer() >= 0.0
        transfer.verify()
    back = pytorch.TorchBack(SeriesKey("torch", "pinned_into", "copy", "xpu:0", SHAPE, direction="d2h").at(4))
    back()
    back.verify()
    pending = torch.empty(SHAPE, device="xpu:0").copy_(torch.empty(SHAPE, pin_memory=True).zero_(), non_blocking=True)
    assert not np.any(pending.array)
    with pytest.raises(AssertionError, match=NO_CUDA):
        torch.cuda.synchronize()


def test_an_xpu_plan_skips_what_xpu_cannot_do_and_names_each_reason(monkeypatch) -> None:
    from xferbench.measuring.backends import pytorch

    backend = pytorch.TorchBackend()
    assert backend.skip_reason(SeriesKey("torch", "pinned_into", "copy", "xpu:0", SHAPE, direction=BIDIR)).startswith("torch bidir runs")
    assert backend.skip_reason(SeriesKey("torch", "loader_pin", "copy", "xpu:0", SHAPE)).startswith("xferbench times the DataLoader")
    assert backend.skip_reason(SeriesKey("torch", "pinned", "copy", "xpu:0", SHAPE)) is None
    assert backend.streamed_reason(SeriesKey("torch", "pinned_into", "copy", "xpu:0", SHAPE, method="streamed")) is not None
    old = GpuTorch("xpu", "2.4.1", [dict(ARC)])
    monkeypatch.setattr(pytorch, "_torch", lambda: old)
    with pytest.raises(NotSupportedHere, match=r"PyTorch 2.4.1 has no xpu device \(Intel GPUs are in PyTorch's own wheels from 2.5\)"):
        backend.describe(SeriesKey("torch", "pageable", "copy", "xpu:0", SHAPE), {})
    assert backend.devices() == ["cpu"] and backend.absent_reason("xpu:0", ["cpu"]).startswith("PyTorch 2.4.1 has no xpu device")


def test_the_xpu_stand_in_refuses_what_pytorchs_xpu_build_refuses() -> None:
    torch = GpuTorch("xpu", "2.5.1+xpu", [dict(ARC)])
    start, end = torch.xpu.Event(enable_timing=True), torch.xpu.Event(enable_timing=True)
    start.record(), end.record()
    torch.xpu.synchronize()
    with pytest.raises(NotImplementedError, match="elapsed_time is not supported by XPUEvent"):
        start.elapsed_time(end)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        torch.empty(1, device="xpu:1")
    with pytest.raises(AttributeError):
        torch.xpu.get_device_properties(0).is_integrated  # noqa: B018  (no such property in _XpuDeviceProperties)
    with pytest.deprecated_call():
        torch.from_numpy(np.zeros(1, np.uint8)).pin_memory("xpu")
    with pytest.raises(TypeError, match="can't convert xpu:0 device type tensor to numpy"):
        torch.empty(1, device="xpu").numpy()
