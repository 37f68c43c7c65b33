"""A standard stream that cannot be written (stdout sent to a full disk, a closed pipe) costs one line on
the stream that still works, or the exit status alone: never a traceback, never "Exception ignored",
and never a result file left "running" by a sweep that measured nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FULL = "/dev/full"  # Linux's device whose every write fails with ENOSPC
needs_full = pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full on this OS")


def run(args: list[str], stdout: str = FULL, stderr: str | None = None) -> subprocess.CompletedProcess:
    with open(stdout, "w") as out, open(stderr or os.devnull, "w") as errors:
        target = errors if stderr else subprocess.PIPE
        return subprocess.run([sys.executable, "-m", "xferbench", *args], stdout=out, stderr=target, text=True,
                              cwd=REPO, timeout=300)  # fmt: skip


@needs_full
@pytest.mark.parametrize("args", [["report", "results/sim/gpu-a-25gbps.json"],
                                  ["compare", "results/sim/link-10us-25gbps.json", "results/sim/link-10us-20gbps.json"]])  # fmt: skip
def test_a_reader_whose_stdout_is_full_says_so_in_one_line(args) -> None:
    done = run(args)
    assert done.returncode == 74
    assert done.stderr == ("xferbench: cannot write its output: No space left on device; the output stopped there"
                           " (a result file keeps every point saved)\n")  # fmt: skip


@needs_full
def test_a_sweep_whose_stdout_is_full_leaves_no_running_file(tmp_path) -> None:
    out = tmp_path / "sim.json"
    done = run(["sweep", "-f", "sim", "--batch-sizes", "1,2", "--min-samples", "3", "--max-samples", "3", "-o", str(out)])
    assert done.returncode == 74 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert not out.exists()  # claimed, given no point, then removed: a rerun is not blocked


@needs_full
def test_both_streams_full_is_the_exit_status_alone() -> None:
    done = run(["report", "results/sim/gpu-a-25gbps.json"], stderr=FULL)
    assert done.returncode == 74


@pytest.mark.parametrize("args", [["report", "results/sim/gpu-a-25gbps.json"],
                                  ["compare", "results/sim/link-10us-25gbps.json", "results/sim/link-10us-20gbps.json"],
                                  ["compare", "--json", "results/sim/link-10us-25gbps.json", "results/sim/link-10us-20gbps.json"]])  # fmt: skip
def test_a_reader_whose_stdout_pipe_is_closed_says_so_and_exits_74_not_1(args) -> None:
    """`xferbench compare a b | head -1`: the pipe closes before the output ends. Exit 1 would read as compare's
    "slower"; the exit is 74 with one line on stderr, as for a full disk."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([sys.executable, "-m", "xferbench", *args], stdout=write, stderr=subprocess.PIPE, text=True,
                              cwd=REPO, timeout=300)  # fmt: skip
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (74, "xferbench: cannot write its output: Broken pipe; the output stopped there"
                                                  " (a result file keeps every point saved)\n")  # fmt: skip


def test_overwrite_keeps_the_earlier_result_until_a_point_replaces_it(tmp_path, monkeypatch) -> None:
    """--overwrite used to unlink the earlier file at the start: a run that then measured nothing
    (a framework that would not start, Ctrl-C, a full stdout) had destroyed it for nothing."""
    from typer.testing import CliRunner

    from conftest import FAST_ARGS
    from xferbench.measuring import running
    from xferbench.cli import app
    from xferbench.core.results import OutputFile, Result, load

    out = tmp_path / "r.json"
    earlier = Result({"host": "before"}, {}, "2026-11-01T00:00:00+00:00", [], "complete")
    earlier.save(out)
    output = OutputFile(out, overwrite=True)
    assert output.replaces
    output.save(Result({"host": "now"}, {}, "2026-11-26T00:00:00+00:00", [], "running"))  # no point yet
    assert load(out).environment["host"] == "before" and output.written is None
    said = CliRunner().invoke(app, ["sweep", "-f", "sim", "--batch-sizes", "1,2", "-o", str(out), "--overwrite", *FAST_ARGS])
    assert said.exit_code == 0, said.output
    assert "holds an earlier result: it is replaced when the first point is saved, and kept if none is" in " ".join(said.stdout.split())
    replaced = load(out)
    assert replaced.status == "complete" and replaced.environment.get("host") != "before" and replaced.series[0].ok_points()

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    earlier.save(out)
    monkeypatch.setattr(running, "run_plan", stop)  # stopped before the first point
    CliRunner().invoke(app, ["sweep", "-f", "sim", "--batch-sizes", "1,2", "-o", str(out), "--overwrite", *FAST_ARGS])
    assert load(out).environment["host"] == "before"  # nothing measured: the earlier result is still there
