"""running.run_sweep on its own: every early stop is a Stopped with its exit code, and the file says what it holds."""

from __future__ import annotations

import errno
import io
import os
import re
import signal
import subprocess
import sys

import pytest
from rich.console import Console

from conftest import needs_torch, unwrapped, wait_for
from xferbench.measuring import running
from xferbench.core import results
from xferbench.measuring.backends import SimLink
from xferbench.core.results import OutputFile, load
from xferbench.measuring.sweep import SweepConfig, make_plan
from xferbench.core.timing import TimingConfig

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
    assert unwrapped(f"saved {tmp_path / 'r.json'}") in unwrapped(out.file.getvalue()) and "sim/link/copy@sim" in out.file.getvalue()


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


def test_on_a_wide_terminal_the_progress_bar_stays_within_100_columns(plan, tmp_path, monkeypatch) -> None:
    from xferbench.measuring import contention

    monkeypatch.setattr(contention, "usage", lambda before, after: contention.Usage(others_cpus=1.5, run_wait=0.4, cpus=2))
    out, err = Console(file=io.StringIO(), width=250), Console(file=io.StringIO(), width=250, force_terminal=True)
    running.run_sweep(plan, OutputFile(tmp_path / "r.json"), out, err)
    drawn = re.split(r"[\r\n]", re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", err.file.getvalue()))  # each frame the bar drew
    assert any("sim/link/copy@sim batch 4" in line and "last: batch 4" in line and ", busy" in line for line in drawn)
    assert max(len(line) for line in drawn) <= 100
    # the longest a label and a last point get: the bar folds them, and keeps every character
    label = "cuda/raw_pinned/copy/bidir/streamed/64-at-once+aligned@cuda:63 batch 1048576"
    bar = running.progress_bar(err)
    bar.add_task(label, total=64 * 64, completed=4000, last="last: batch 524288 123,456,789 MB/s, busy")
    wide = Console(file=io.StringIO(), width=250, record=True)
    wide.print(bar.get_renderable())
    lines = wide.export_text().splitlines()
    assert max(len(line) for line in lines) <= 100 and "4000/4096" in lines[0]
    width = min(lines[0].index(c) for c in "━╸" if c in lines[0])  # the description's column, left of the bar
    assert "".join(line[:width] for line in lines).replace(" ", "") == label.replace(" ", "")


def test_a_failed_save_is_a_stopped_with_code_1_and_the_points_kept(plan, tmp_path, monkeypatch) -> None:
    real = results.write_whole

    def full(path, text):  # type: ignore[no-untyped-def]
        if path == tmp_path / "r.json" and '"batch_size": 2,' in text:
            raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))
        return real(path, text)

    monkeypatch.setattr(results, "write_whole", full)
    with pytest.raises(running.Stopped) as stopped:
        running.run_sweep(plan, OutputFile(tmp_path / "r.json"), *consoles())
    assert stopped.value.code == 1 and str(stopped.value).startswith(f"cannot save to {tmp_path / 'r.json'}: Disk quota exceeded")
    assert [p.batch_size for p in load(tmp_path / "r-unsaved-1.json").series[0].ok_points()] == [1, 2]


def test_a_kill_inside_the_block_is_terminated_and_the_plan_closes_with_kills_ignored(monkeypatch) -> None:
    seen = []

    class Plan:
        def close(self) -> None:
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(running.Terminated):
        with running.terminated_as_interrupted(Plan()):  # type: ignore[arg-type]
            os.kill(os.getpid(), signal.SIGTERM)
            signal.pause()  # not reached: the handler raised
    assert seen == [signal.SIG_IGN] and signal.getsignal(signal.SIGTERM) == before
    assert running.how_stopped(running.Terminated()) == ("terminated", 143)
    assert running.how_stopped(KeyboardInterrupt()) == ("interrupted", 130)


# A stand-in for a child sweep: it writes its pid, then waits; a stop makes it "save" (slowly, for
# SIGINT) and exit as a sweep does.
CHILD = """import os, signal, sys, time
def stop(signum, frame):
    time.sleep(1.5 if signum == signal.SIGINT else 0)
    open(sys.argv[1] + ".saved", "w").write(signal.Signals(signum).name)
    sys.exit(130 if signum == signal.SIGINT else 143)
signal.signal(signal.SIGINT, stop)
signal.signal(signal.SIGTERM, stop)
open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(60)
"""


def child_sweep(tmp_path, signals):  # type: ignore[no-untyped-def]
    """Run the stand-in through validation's run_child_sweep; once it has started, send each (pid, signal)
    of `signals` (pid None: this process). Returns what it saved and the seconds the stop took."""
    import sys
    import threading
    import time

    from xferbench.health import validate_command

    pid_file = tmp_path / "child.pid"

    def send() -> None:
        while not pid_file.exists() or not pid_file.read_text():
            time.sleep(0.01)
        for whom, signum in signals:
            os.kill(int(pid_file.read_text()) if whom == "child" else os.getpid(), signum)

    threading.Thread(target=send, daemon=True).start()
    started = time.monotonic()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own, even where pytest was started ignoring Ctrl-C
    try:
        with pytest.raises(KeyboardInterrupt) as stop:
            with running.terminated_as_interrupted():
                validate_command.run_child_sweep([sys.executable, "-c", CHILD, str(pid_file)], dict(os.environ))
    finally:
        signal.signal(signal.SIGINT, previous)
    saved = tmp_path / "child.pid.saved"
    return stop.value, saved.read_text() if saved.exists() else None, time.monotonic() - started


def test_validate_passes_a_kill_on_to_its_sweep_at_once(tmp_path, monkeypatch) -> None:
    from xferbench.health import validate_command

    monkeypatch.setattr(validate_command, "SAVE_GRACE_S", 40.0)  # a kill must not wait for a Ctrl-C's grace
    stop, saved, seconds = child_sweep(tmp_path, [("self", signal.SIGTERM)])
    assert isinstance(stop, running.Terminated) and saved == "SIGTERM" and seconds < 30


@pytest.mark.slow
def test_validate_gives_a_sweep_that_saw_ctrl_c_the_time_to_save(tmp_path, monkeypatch) -> None:
    """subprocess.run would have killed the sweep a quarter of a second into its 1.5 s save, and a SIGTERM at
    once would land inside it. The grace is made long enough for a loaded machine: validate goes on as soon
    as the sweep has exited, not when the grace ends."""
    from xferbench.health import validate_command

    monkeypatch.setattr(validate_command, "SAVE_GRACE_S", 60.0)
    stop, saved, seconds = child_sweep(tmp_path, [("child", signal.SIGINT), ("self", signal.SIGINT)])
    assert type(stop) is KeyboardInterrupt and saved == "SIGINT" and seconds < 60


def test_validate_stops_a_sweep_that_did_not_see_the_ctrl_c(tmp_path, monkeypatch) -> None:
    from xferbench.health import validate_command

    monkeypatch.setattr(validate_command, "SAVE_GRACE_S", 0.2)
    stop, saved, _ = child_sweep(tmp_path, [("self", signal.SIGINT)])
    assert type(stop) is KeyboardInterrupt and saved == "SIGTERM"


def children_of(pid: int) -> list[int]:
    """The processes whose parent is `pid`, from Linux's /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:  # it ended while the folder was read
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


def still_running(pid: int) -> bool:
    """Whether process `pid` has not ended (a zombie has: it only waits to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
@needs_torch
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="finds the DataLoader's processes in Linux's /proc")
def test_a_terminated_sweep_stops_its_dataloader_workers_before_it_exits(tmp_path) -> None:
    """A kill reaches the sweep alone; its worker's DataLoader processes must not outlive it (PyTorch's own
    watchdog would end them seconds later): by the time the sweep has exited, each of them has, and what was
    measured is saved."""
    out = tmp_path / "r.json"
    sweep = subprocess.Popen(
        [sys.executable, "-m", "xferbench", "sweep", "-f", "torch", "-m", "loader_workers", "--loader-workers", "2", "--device",
         "cpu", "--batch-sizes", "1,2,4,8,16,32", "--shape", "32x32x3", "--min-time", "2", "--max-samples", "1000000", "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    loaders: list[int] = []

    def loading_after_a_point() -> bool:
        """A point is saved and the next one's DataLoader has its two processes."""
        loaders[:] = [pid for worker in children_of(sweep.pid) for pid in children_of(worker)]
        return len(loaders) >= 2 and '"points": [\n' in (out.read_text() if out.exists() else "")

    try:
        wait_for(loading_after_a_point, 180)
        os.kill(sweep.pid, signal.SIGTERM)  # kill, or a CI job's timeout: the sweep alone is told
        _, stderr = sweep.communicate(timeout=120)
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGKILL)
    assert sweep.returncode == 143 and "terminated: " in stderr and "Traceback" not in stderr, stderr
    assert [pid for pid in loaders if still_running(pid)] == []
    saved = load(out)
    assert saved.status == "interrupted" and saved.series[0].points[0].status == "ok"
