"""running.run_sweep on its own: every early stop is a Stopped with its exit code, and the file says what it holds."""

from __future__ import annotations

import errno
import io
import os
import signal

import pytest
from rich.console import Console

from xferbench import results, running
from xferbench.backends import SimLink
from xferbench.results import OutputFile, load
from xferbench.sweep import SweepConfig, make_plan
from xferbench.timing import TimingConfig

TIMING = TimingConfig(warmup_calls=1, warmup_s=0.0, min_samples=5, min_time_s=0.0, max_samples=5, settle_s=0.0)


def consoles() -> tuple[Console, Console]:
    return Console(file=io.StringIO(), width=120), Console(file=io.StringIO(), width=120)


@pytest.fixture
def plan():
    made = make_plan(SweepConfig(frameworks=("sim",), batch_sizes=(1, 2, 4), timing=TIMING, sim=SimLink()))
    yield made
    made.close()


def test_a_complete_run_prints_its_tables_and_says_where_it_saved(plan, tmp_path) -> None:
    out, err = consoles()
    result = running.run_sweep(plan, OutputFile(tmp_path / "r.json"), out, err)
    assert result.status == "complete" and load(tmp_path / "r.json").status == "complete"
    assert f"saved {tmp_path / 'r.json'}" in out.file.getvalue() and "sim/link/copy@sim" in out.file.getvalue()


@pytest.mark.parametrize("stop, code, said", [(KeyboardInterrupt, 130, "interrupted"), (running.Terminated, 143, "terminated")])
def test_an_interrupt_is_a_stopped_with_its_code_and_the_file_marked(plan, tmp_path, monkeypatch, stop, code, said) -> None:
    def on_point(series, point):  # type: ignore[no-untyped-def]
        raise stop()  # Ctrl-C or a kill, right after the first point

    monkeypatch.setattr(running.display, "point_line", on_point)
    previous = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        with pytest.raises(running.Stopped) as stopped:
            running.run_sweep(plan, OutputFile(tmp_path / "r.json"), *consoles())
    finally:
        signal.signal(signal.SIGINT, previous[0])
        signal.signal(signal.SIGTERM, previous[1])
    assert stopped.value.code == code and str(stopped.value) == f"{said}: 1 measured point(s) saved to {tmp_path / 'r.json'}"
    assert load(tmp_path / "r.json").status == "interrupted"


def test_a_failed_save_is_a_stopped_with_code_1_and_the_points_kept(plan, tmp_path, monkeypatch) -> None:
    real = results._atomic_write

    def full(path, text):  # type: ignore[no-untyped-def]
        if path == tmp_path / "r.json" and '"batch_size": 2,' in text:
            raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))
        return real(path, text)

    monkeypatch.setattr(results, "_atomic_write", full)
    with pytest.raises(running.Stopped) as stopped:
        running.run_sweep(plan, OutputFile(tmp_path / "r.json"), *consoles())
    assert stopped.value.code == 1 and str(stopped.value).startswith(f"cannot save to {tmp_path / 'r.json'}: Disk quota exceeded")
    assert [p.batch_size for p in load(tmp_path / "r-unsaved-1.json").series[0].ok_points()] == [1, 2]
