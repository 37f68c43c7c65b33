"""The GPU validation checks on fixture results, and the script's plumbing on the CPU."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from xferbench import validate
from xferbench.results import Point, Result, Series
from xferbench.spec import SeriesKey
from xferbench.timing import Samples

REPO = Path(__file__).resolve().parent.parent
SHAPE = (512, 512, 4)  # 1 MiB per item
GEN4_X16: dict[str, Any] = {"devices": [{"id": "cuda:0", "kind": "cuda", "name": "GPU", "nvml": {
    "pcie_gen_max": 4, "pcie_width_max": 16, "pcie_gen_current": 4, "pcie_width_current": 16}}]}  # fmt: skip


def series(framework: str, mode: str, mbps_by_batch: dict[int, float], device_ratio: float | None = 1.0,
           status: str = "ok") -> Series:  # fmt: skip
    """Points whose wall time gives the MB/s asked for; the device clock reads `device_ratio` of it."""
    key = SeriesKey(framework, mode, "copy", "cuda:0", SHAPE)
    made = Series(framework, mode, "copy", "cuda:0", list(SHAPE), key.host_buffer, status=status)
    for batch, mbps in mbps_by_batch.items():
        spec = key.at(batch)
        wall = spec.nbytes / (mbps * 1e6)
        device = [wall * device_ratio] * 3 if device_ratio else []
        made.points.append(Point.measured(spec, Samples([wall] * 3, device), warmup_calls=1))
    made.refresh_summary()
    return made


def result(*made: Series, environment: dict[str, Any] = GEN4_X16) -> Result:
    return Result(environment, {}, "2026-11-22T00:00:00+00:00", list(made), "complete")


def statuses(*results: Result) -> list[str]:
    return [c.status for c in validate.run_checks(results)]


def test_a_good_run_passes_every_check() -> None:
    good = result(series("cuda", "raw_pinned", {64: 20_000, 1024: 26_000}),
                  series("torch", "pinned_into", {64: 19_000, 1024: 25_500}, device_ratio=0.99))  # fmt: skip
    checks = validate.run_checks([good])
    assert [c.status for c in checks] == ["pass"] * 4, checks
    assert checks[0].figure == "26,000 MB/s = 82.5% of PCIe Gen4 x16 theoretical (31.5 GB/s)"
    assert checks[1].figure.startswith("25,500 / 26,000 MB/s = 98.1% at batch 1024 (1,024 MiB)")
    assert "worst -1.0% (wall vs device) at torch/pinned_into/copy@cuda:0 batch 1024, over 2 points" in checks[2].figure
    assert checks[3].figure == "2 series, 4 points verified"


def test_each_check_fails_on_its_own_fault() -> None:
    assert statuses(result(series("cuda", "raw_pinned", {1024: 40_000})))[0] == "fail"  # faster than the link
    assert statuses(result(series("cuda", "raw_pinned", {1024: 12_000})))[0] == "fail"  # 38% of the link
    slow_torch = result(series("cuda", "raw_pinned", {1024: 26_000}), series("torch", "pinned_into", {1024: 20_000}))
    assert statuses(slow_torch)[1] == "fail"
    wall_too_fast = result(series("cuda", "raw_pinned", {1024: 26_000}, device_ratio=1.2))
    assert statuses(wall_too_fast)[2] == "fail"
    broken = series("torch", "pinned_into", {1024: 25_000})
    broken.points.append(Point(2048, 2**31, status="error", error="verification failed: bytes differ"))
    checks = validate.run_checks([result(series("cuda", "raw_pinned", {1024: 26_000}), broken)])
    assert checks[3].status == "fail" and "batch 2048: verification failed" in checks[3].figure
    oom = series("torch", "pinned_into", {1024: 25_000})
    oom.points.append(Point(2048, 2**31, status="error", error="out of memory: CUDA"))
    assert statuses(result(oom))[3] == "pass"  # running out of memory is a limit, not a wrong byte


def test_the_clocks_are_compared_on_large_pinned_copies_only() -> None:
    pageable = series("torch", "pageable", {64: 10_000, 1024: 12_000}, device_ratio=1.5)  # host staging: not judged
    small = series("cuda", "raw_pinned", {64: 20_000}, device_ratio=1.2)  # 64 MiB: launch costs still weigh
    check = validate.clock_check([result(pageable, small)])
    assert check.status == "n/a" and "no pinned copy of 256 MiB or more" in check.figure


def test_a_sweep_that_did_not_finish_fails_the_run() -> None:
    done = result(series("cuda", "raw_pinned", {1024: 26_000}))
    assert validate.completed_check({"default.json": done, "large.json": done}).status == "pass"
    cut = Result(GEN4_X16, {}, "2026-11-22T00:00:00+00:00", [], "interrupted")
    check = validate.completed_check({"default.json": done, "large.json": cut})
    assert check.status == "fail" and check.figure == "large.json: interrupted"
    assert validate.completed_check({"default.json": done, "large.json": None}).figure == "large.json: not written"


def test_a_check_that_cannot_run_says_why_and_never_passes() -> None:
    checks = validate.run_checks([result(series("torch", "pinned_into", {1024: 25_000}, device_ratio=None), environment={})])
    assert [c.status for c in checks[:3]] == ["n/a"] * 3
    assert "no cuda/raw_pinned series" in checks[0].figure and "no cuda/raw_pinned series" in checks[1].figure
    unknown_link = validate.raw_ceiling_check([result(series("cuda", "raw_pinned", {1024: 26_000}), environment={})])
    assert unknown_link.status == "n/a" and "the link is unknown" in unknown_link.figure
    text = validate.render(checks)
    assert text.startswith("| check | result | figure |\n| --- | --- | --- |\n") and "**N/A**" in text


def test_script_runs_end_to_end_on_the_cpu(tmp_path) -> None:
    out = tmp_path / "val"
    # As with a GPU image's own python3: the packages are there, xferbench is not installed (-S skips
    # the .pth that installs it in this environment), and the script runs from another folder.
    site = os.pathsep.join(p for p in sys.path if p.endswith("site-packages"))
    command = [sys.executable, "-S", str(REPO / "scripts" / "validate_gpu.py"), str(out), "--device", "cpu", "--quick", "-f", "host"]
    env = {**os.environ, "PYTHONPATH": site}
    if subprocess.run([sys.executable, "-S", "-c", "import xferbench"], env=env, cwd=tmp_path).returncode == 0:
        pytest.skip("xferbench is installed into site-packages here, not as an editable .pth: -S cannot hide it")
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert run.returncode == 1, run.stderr  # the GPU checks cannot run on the CPU: not a pass
    assert sorted(p.name for p in out.iterdir()) == ["checks.md", "default.json", "default.png", "large.json", "large.png", "report.md"]
    assert "| every path's bytes verified | **PASS** |" in (out / "checks.md").read_text()
    assert "### Validation checks" in (out / "report.md").read_text()
    again = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert again.returncode == 2 and "already holds results" in again.stderr


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs a framework that can move data: JAX")
def test_script_without_the_device_is_exit_2(tmp_path) -> None:
    run = subprocess.run([sys.executable, str(REPO / "scripts" / "validate_gpu.py"), str(tmp_path / "v"), "--device", "cuda:7",
                          "-f", "jax"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 2, run.stdout + run.stderr
    assert not (tmp_path / "v" / "default.json").exists()
