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
