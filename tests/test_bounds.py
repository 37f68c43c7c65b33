"""Every count and size a user types is bounded before any work starts, in one line that names the limit."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from conftest import unwrapped
from xferbench.cli import app


@pytest.mark.parametrize("args, message", [
    (["--sim-devices", "100000"], "--sim-devices 100000: give 1 to 64"),
    (["--sim-devices", "65", "--device", "all", "--concurrent"], "--sim-devices 65: give 1 to 64"),
    (["--batch-sizes", "1,99999999"], "--batch-sizes: 99999999 is more than 1,048,576 items in one batch"),
    (["--batch-sizes", ",".join(str(b) for b in range(1, 66))], "--batch-sizes: 65 sizes; give at most 64"),
    (["--max-samples", "999999999"], "--max-samples take at most 10,000,000"),
    (["--warmup-calls", "20000000", "--max-samples", "20000000"], "take at most 10,000,000"),
    (["--min-time", "5000", "--max-time", "5000"], "take at most 3600 seconds"),
    (["--shape", "100000x100000x3"], "at most 4,294,967,296 bytes per item"),
    (["--shape", "1x1x1x1x1x1x1x1x1"], "give at most 8 dimensions"),
])  # fmt: skip
def test_a_count_past_its_bound_is_one_line_before_any_work(tmp_path, args, message) -> None:
    out = tmp_path / "r.json"
    result = CliRunner().invoke(app, ["sweep", "-f", "sim", *args, "-o", str(out)])
    assert result.exit_code == 2 and message in result.stderr, result.output
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert not out.exists()  # nothing started


@pytest.mark.parametrize("args, message", [
    (["check", "--batch-size", "1048577"], "--batch-size 1048577: give a whole number of items from 1 to 1,048,576"),
    (["check", "--batch-size", "0"], "--batch-size 0: give a whole number of items from 1 to 1,048,576"),
    (["check", "--shape", "100000x100000x3"], "at most 4,294,967,296 bytes per item"),
    (["import", "nvbandwidth", "--buffer-size", "1048577"], "--buffer-size 1048577: give nvbandwidth's -b, a whole number of MiB from 1 to 1,048,576"),
    (["import", "nvbandwidth", "--buffer-size", "0"], "--buffer-size 0: give nvbandwidth's -b"),
    (["fleet", "--min-group", "1"], "--min-group at least 2"),
])  # fmt: skip
def test_the_other_commands_bound_what_they_are_given(tmp_path, args, message) -> None:
    peer = tmp_path / "nvbandwidth.json"
    peer.write_text("{}")
    result = CliRunner().invoke(app, [*args, str(peer)] if args[0] != "check" else args)
    assert result.exit_code == 2 and message in " ".join(result.stderr.split()), result.output
    assert "Traceback" not in result.output


def test_the_largest_counts_allowed_are_accepted() -> None:
    from xferbench.measuring.backends.sim import MAX_SIM_DEVICES, SimLink
    from xferbench.measuring.sweep import MAX_BATCH, parse_batch_sizes, parse_shape
    from xferbench.core.timing import MAX_POINT_S, MAX_SAMPLES, TimingConfig

    SimLink(devices=MAX_SIM_DEVICES).check()
    assert parse_batch_sizes(f"1,{MAX_BATCH}") == (1, MAX_BATCH)
    assert parse_shape("65536x65536") == (65536, 65536)
    TimingConfig(min_samples=MAX_SAMPLES, max_samples=MAX_SAMPLES, max_time_s=MAX_POINT_S).check()


def test_h_is_help_and_repeatable_options_take_commas(tmp_path) -> None:
    for args in (["-h"], ["sweep", "-h"], ["import", "-h"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0 and "Usage:" in result.stdout, args
    out = tmp_path / "r.json"
    result = CliRunner().invoke(app, ["sweep", "-f", "sim,host", "-m", "link,numpy", "--batch-sizes", "1,2", "-o", str(out)])
    assert result.exit_code == 0, result.output
    from xferbench.core.results import load

    assert [s.label() for s in load(out).series] == ["sim/link/copy@sim", "host/numpy/copy@cpu"]
    shown = CliRunner().invoke(app, ["plot", str(out), "-f", "sim,host", "-o", str(tmp_path / "p.png")])
    assert shown.exit_code == 0 and shown.stdout == "" and unwrapped(f"saved {tmp_path / 'p.png'} (2 series)") in unwrapped(shown.stderr)


def test_piped_progress_keeps_each_point_on_one_line(tmp_path) -> None:
    import os
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "xferbench", "sweep", "-f", "sim", "--batch-sizes", "1,2", "-o", str(tmp_path / "r.json")],
                       capture_output=True, text=True, env={**os.environ, "COLUMNS": "40"})  # fmt: skip
    points = [line for line in r.stderr.splitlines() if "batch" in line]
    assert r.returncode == 0 and len(points) == 2 and all(line.endswith(")") for line in points), r.stderr


def test_a_cuda_path_without_cupy_or_a_gpu_says_both(monkeypatch) -> None:
    import sys

    from xferbench.measuring.backends import cuda

    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setattr(cuda.sys, "platform", "linux")
    monkeypatch.setattr(cuda.os.path, "exists", lambda path: path != "/dev/nvidiactl")
    assert cuda.cupy_missing("The raw CUDA reference").endswith(
        "; it also needs an NVIDIA GPU, and this machine shows none (no /dev/nvidiactl: no NVIDIA driver is loaded)")
    monkeypatch.setattr(cuda.os.path, "exists", lambda path: True)  # a driver is loaded: CuPy is all that is missing
    assert "NVIDIA GPU" not in cuda.cupy_missing("The raw CUDA reference")
    monkeypatch.setattr(cuda.sys, "platform", "darwin")
    assert "CUDA does not run on macOS" in cuda.cupy_missing("The raw CUDA reference")
