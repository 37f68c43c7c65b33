"""Ctrl-C while a figure is drawn or saved, by plot or by report --plot: exit 130 with one line, whatever matplotlib
raises after the interrupt, and the files already there left as they were."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
import pytest
from matplotlib.figure import Figure
from typer.testing import CliRunner

from conftest import wait_for
from test_plot_rules import host, run
from xferbench.cli import app
from xferbench.reading.plot import interrupts_kept, save

matplotlib.use("Agg")

INTERRUPTED = "interrupted: wrote nothing; no file was left half written"
GOOD = b"the figure and report of an earlier run"


def cleanup_fails(*args: Any, **kwargs: Any) -> None:
    """Ctrl-C lands in matplotlib, and its cleanup of the half-laid-out figure raises in the interrupt's place."""
    try:
        raise KeyboardInterrupt
    finally:
        raise ValueError("Invalid bounding box")


def swallowed(*args: Any, **kwargs: Any) -> None:
    """A real SIGINT whose KeyboardInterrupt matplotlib swallows (a callback, a __del__); a later step then fails on
    the half-laid-out figure, with no interrupt left in sight."""
    try:
        signal.raise_signal(signal.SIGINT)
    except KeyboardInterrupt:
        pass
    raise ValueError("Invalid bounding box")


def files(tmp_path: Path) -> list[str]:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    run(host({1: 1000.0, 4: 3000.0, 16: 6000.0})).save(a)
    run(host({1: 1100.0, 4: 3200.0, 16: 6100.0})).save(b)
    return [str(a), str(b)]


@pytest.mark.parametrize("stage", ["savefig", "draw_without_rendering"])
@pytest.mark.parametrize("fault", [cleanup_fails, swallowed], ids=["cleanup-fails", "swallowed"])
@pytest.mark.parametrize("command", ["plot", "report"])
def test_ctrl_c_in_a_figure_exits_130_in_one_line_and_leaves_the_files_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, fault: Callable[..., None], stage: str
) -> None:  # fmt: skip
    inputs = files(tmp_path)
    figure_path, report_path = tmp_path / "old.png", tmp_path / "old.md"
    figure_path.write_bytes(GOOD)
    report_path.write_bytes(GOOD)
    monkeypatch.setattr(Figure, stage, fault)
    args = ["-o", str(figure_path)] if command == "plot" else ["--plot", str(figure_path), "-o", str(report_path)]
    r = CliRunner().invoke(app, [command, *inputs, *args, "--overwrite"])
    assert r.exit_code == 130, (r.output, r.exception)
    assert r.stderr.strip() == INTERRUPTED and r.stdout == ""
    assert figure_path.read_bytes() == GOOD and report_path.read_bytes() == GOOD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json", "old.md", "old.png"]  # no temp file left


def test_an_error_with_no_interrupt_behind_it_is_left_as_it_is() -> None:
    """Only an interrupt turns an error into one: a real fault of matplotlib still says what it is."""
    with pytest.raises(ValueError, match="Invalid bounding box"), interrupts_kept():
        raise ValueError("Invalid bounding box")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler it found is back


def test_an_interrupt_swallowed_inside_the_block_is_raised_when_it_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGINT came, matplotlib swallowed it and saved anyway: the save still stops, before the file is written."""

    def quietly(*args: Any, **kwargs: Any) -> None:
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass

    monkeypatch.setattr(Figure, "savefig", quietly)
    with pytest.raises(KeyboardInterrupt):
        save(Figure(), tmp_path / "f.png")
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


SAVING = """
import sys, time
from matplotlib.figure import Figure
from xferbench import cli

marker = sys.argv[1]

def blocked(*args, **kwargs):
    try:
        open(marker, "w").close()  # the figure is being saved: Ctrl-C now
        while True:
            time.sleep(0.01)
    finally:
        raise ValueError("Invalid bounding box")  # as matplotlib's cleanup of the half-laid-out figure

Figure.savefig = blocked
sys.argv = ["xferbench", *sys.argv[2:]]
cli.main()
"""


@pytest.mark.slow
def test_a_real_ctrl_c_while_report_saves_its_plot_exits_130_in_one_line(tmp_path: Path) -> None:
    marker, figure_path = tmp_path / "saving", tmp_path / "old.png"
    figure_path.write_bytes(GOOD)
    process = subprocess.Popen([sys.executable, "-c", SAVING, str(marker), "report", *files(tmp_path), "--plot", str(figure_path),
                                "-o", str(tmp_path / "r.md"), "--overwrite"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        wait_for(lambda: marker.exists() or process.poll() is not None, timeout_s=120)
        assert marker.exists(), process.communicate()
        os.kill(process.pid, signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert stderr.strip() == INTERRUPTED and stdout == ""
    assert figure_path.read_bytes() == GOOD and not (tmp_path / "r.md").exists()
