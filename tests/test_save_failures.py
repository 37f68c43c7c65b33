"""A save that fails mid-sweep for an OS reason: one line, a valid file, and no point measured lost."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xferbench.reading import display
from xferbench.core import results
from xferbench.cli import app
from xferbench.core.results import load

REPO = Path(__file__).resolve().parent.parent
SWEEP = ["sweep", "-f", "sim", "--batch-sizes", "1,2,4,8,16,32,64,128", "--max-samples", "50"]


@pytest.mark.slow
def test_a_file_size_limit_ends_in_one_line_a_valid_file_and_the_rest_printed(tmp_path) -> None:
    # In the child only, set before xferbench starts: every file it writes stops at 60 kB (EFBIG; Python
    # ignores SIGXFSZ). Not preexec_fn: forking this multithreaded test process is unsafe.
    limited = ("import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000));"
               " sys.argv = ['xferbench', *sys.argv[1:]]; runpy.run_module('xferbench', run_name='__main__')")  # fmt: skip
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-c", limited, *SWEEP, "--max-samples", "1000", "-o", str(out)], capture_output=True,
                       text=True, cwd=REPO, env={**os.environ, "TMPDIR": str(tmp_path)})  # fmt: skip
    assert r.returncode == 1 and "Traceback" not in r.stderr + r.stdout, r.stderr
    (error,) = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert error.startswith(f"error: cannot save to {out}: File too large; it holds the last complete save (")
    assert "No file could take the" in error and "they are printed above" in error
    kept = load(out)  # the last complete save, whole
    saved = kept.measured_points()
    assert saved >= 1 and f"({saved} measured point(s))" in error
    unsaved = [line for line in r.stderr.splitlines() if line.startswith("unsaved: sim/link/copy@sim batch ")]
    assert len(unsaved) >= 1 and f"the {len(unsaved)} point(s) measured since" in error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no torn temp or rescue file left behind


def test_no_space_keeps_every_point_under_a_fresh_name_beside_the_file(tmp_path, monkeypatch) -> None:
    out = tmp_path / "r.json"
    real = results.write_whole

    def full(path: Path, text: str):  # the disk fills once batch 2 is measured
        if path == out and '"batch_size": 2,' in text:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, text)

    monkeypatch.setattr(results, "write_whole", full)
    r = CliRunner().invoke(app, [*SWEEP, "-o", str(out)])
    assert r.exit_code == 1, r.output
    rescued = tmp_path / "r-unsaved-1.json"
    assert f"cannot save to {out}: No space left on device; it holds the last complete save (1 measured point(s))" in r.stderr
    assert f"are in {rescued}" in " ".join(r.stderr.split())
    whole = load(rescued)
    assert whole.status == "interrupted" and [p.batch_size for p in whole.series[0].ok_points()] == [1, 2]
    assert [p.batch_size for p in load(out).series[0].points] == [1]  # the last complete save, as it was


def test_a_folder_that_vanishes_for_a_file_sends_the_points_to_the_temp_folder(tmp_path, monkeypatch) -> None:
    folder = tmp_path / "runs"
    out = folder / "r.json"
    spare = tmp_path / "tmp"
    spare.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spare))
    line = display.point_line

    def vanish(series, point):  # after the first point: the folder is gone, and a file holds its name
        if folder.is_dir():
            shutil.rmtree(folder)
            folder.write_text("not a folder")
        return line(series, point)

    monkeypatch.setattr(display, "point_line", vanish)
    r = CliRunner().invoke(app, [*SWEEP, "-o", str(out)])
    assert r.exit_code == 1, r.output
    assert f"cannot save to {out}: Not a directory" in " ".join(r.stderr.split())
    (rescued,) = spare.glob("r-unsaved-*.json")
    assert [p.batch_size for p in load(rescued).series[0].ok_points()] == [1, 2]


def test_a_report_or_plot_cut_short_leaves_the_last_one_whole_and_no_temp_file(tmp_path, monkeypatch) -> None:
    import matplotlib.pyplot as plt

    from xferbench.reading import plot, report

    md, png = tmp_path / "r.md", tmp_path / "r.png"
    report.save("the last report\n", md)
    plot.save(plt.figure(), png)
    before = png.read_bytes()
    real = results._write_durably

    def cut(handle, data):  # type: ignore[no-untyped-def]
        handle.write(data[: len(data) // 2])
        raise KeyboardInterrupt  # Ctrl-C halfway through the write

    monkeypatch.setattr(results, "_write_durably", cut)
    with pytest.raises(KeyboardInterrupt):
        report.save("a new report that never lands\n", md)
    with pytest.raises(KeyboardInterrupt):
        plot.save(plt.figure(figsize=(3, 2)), png)
    assert md.read_text() == "the last report\n" and png.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.md", "r.png"]
    monkeypatch.setattr(results, "_write_durably", real)
    assert plot.save(plt.figure(figsize=(3, 2)), png).read_bytes()[:4] == b"\x89PNG"


def test_a_rescue_takes_the_next_free_name_readable_by_others_and_moves_on_when_a_write_fails(tmp_path, monkeypatch) -> None:
    from xferbench.core.results import OutputFile, Result

    result = Result(environment={}, config={}, created="2026-11-24T00:00:00+00:00")
    output = OutputFile(tmp_path / "r.json")
    (tmp_path / "r-unsaved-1.json").write_text("another run's rescue")
    previous = os.umask(0o022)
    try:
        rescued = output.rescue(result)
    finally:
        os.umask(previous)
    assert rescued == tmp_path / "r-unsaved-2.json" and (tmp_path / "r-unsaved-1.json").read_text() == "another run's rescue"
    assert rescued.stat().st_mode & 0o777 == 0o644 and load(rescued).created == result.created
    spare = tmp_path / "spare"
    spare.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spare))
    real, calls = results._write_durably, []

    def full_once(handle, text):  # type: ignore[no-untyped-def]
        calls.append(handle.name)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(handle, text)

    monkeypatch.setattr(results, "_write_durably", full_once)
    moved = output.rescue(result)
    assert moved == spare / "r-unsaved-1.json" and load(moved).created == result.created
    assert not (tmp_path / "r-unsaved-3.json").exists()  # the torn attempt beside the file was removed
