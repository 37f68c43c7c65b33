"""A busy machine is seen, measured per point, and warned about: with busy processes the test starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from rich.console import Console

from conftest import wait_for
from xferbench.measuring import contention
from xferbench.reading import display
from xferbench.core.results import Point, Series

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.fixture
def hogs():
    """One busy process per CPU this process may use, pinned to those CPUs and started outside this
    process's tree (a shell starts each and exits): whatever else the machine does, this process's
    thread must then wait for a CPU that someone else holds."""
    cpus = sorted(os.sched_getaffinity(0))
    pids = []
    for cpu in cpus:
        code = f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"
        started = subprocess.run(["sh", "-c", f'"{sys.executable}" -c "{code}" >/dev/null 2>&1 & echo $!'],
                                 capture_output=True, text=True, check=True)  # fmt: skip
        pids.append(int(started.stdout.split()[-1]))
    time.sleep(0.3)  # they are running before anything is measured
    yield len(cpus)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@linux_only
def test_busy_processes_are_measured(hogs) -> None:
    before = contention.snapshot()
    spin(0.5)
    usage = contention.usage(before, contention.snapshot())
    assert usage is not None and usage.others_cpus is not None and usage.run_wait is not None
    # Each hog takes its CPU's share: together far more than half a CPU, and this thread waits for its turn.
    assert usage.others_cpus > 0.5 * hogs / 2
    assert usage.run_wait > 0.2


@pytest.mark.slow
@linux_only
def test_this_runs_own_process_tree_is_not_competition(monkeypatch) -> None:
    """The sweep polls NVML for its worker, and other frameworks' workers sit under it too: their CPU
    time is the run's own. A busy child of this process stands for them. The three ways of counting
    (this process's tree, its parent's, this process alone) are read back to back at each end of one window,
    which lasts until the child has had 0.2 s of CPU, however busy the machine is: only the counting differs."""
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])

    def counted(root: list[int], alone: bool = False) -> contention.Snapshot:
        with monkeypatch.context() as patch:
            patch.setattr(contention, "_root", root)
            if alone:  # a tree of one: the child is someone else's
                patch.setattr(contention, "_children", lambda pid: [])
            snap = contention.snapshot()
        assert snap is not None
        return snap

    def snapshots() -> tuple[contention.Snapshot, contention.Snapshot, contention.Snapshot]:
        """This process's tree, its parent's (as a worker counts: the sweep, this process and its child), alone."""
        return counted([]), counted([os.getppid()]), counted([], alone=True)

    tick = 1 / contention._ticks()
    try:
        wait_for(lambda: contention._process_ticks(child.pid) > 0)  # it runs
        before = snapshots()
        child_before = contention._process_ticks(child.pid)
        wait_for(lambda: contention._process_ticks(child.pid) - child_before >= 20, timeout_s=120)  # 0.2 s of its CPU
        child_s = (contention._process_ticks(child.pid) - child_before) * tick
        after = snapshots()
    finally:
        child.kill()
        child.wait()
    ours, from_parent, alone = ((a.own_s - b.own_s) for b, a in zip(before, after))
    # Counted as ours (from either root), the child's time is the run's own; counted alone, it is not
    # (usage() then leaves it in others' time: tests/test_contention_rules.py holds that arithmetic).
    assert ours >= alone + child_s - 2 * tick and from_parent >= alone + child_s - 2 * tick
    assert ours - alone <= child_s + 0.5  # the window's edges, never a second child's worth


def test_busy_ticks_count_only_this_process_cpus() -> None:
    stat = ("cpu  300 0 100 1000 50 0 0 0 0 0\n"
            "cpu0 100 0 50 500 25 0 0 0 0 0\n"
            "cpu1 200 0 50 500 25 0 0 0 0 0\n"
            "intr 12345\n")  # fmt: skip
    assert contention._busy_ticks(stat, {1}) == 250  # user + system, not idle or iowait
    assert contention._busy_ticks(stat, None) == 400  # the machine's line where the CPUs are unknown


def test_usage_needs_a_window_long_enough_for_the_ticks() -> None:
    before = contention.Snapshot(wall_s=0.0, busy_s=1.0, own_s=0.5, wait_s=0.0, cpus=2)
    short = contention.usage(before, contention.Snapshot(wall_s=0.01, busy_s=1.01, own_s=0.5, wait_s=0.005, cpus=2))
    assert short is not None and short.others_cpus is None and short.run_wait == pytest.approx(0.5)
    long = contention.usage(before, contention.Snapshot(wall_s=1.0, busy_s=2.5, own_s=1.0, wait_s=0.25, cpus=2))
    assert long.others_cpus == pytest.approx(1.0) and long.run_wait == pytest.approx(0.25)
    assert contention.usage(None, before) is None


def series_with(points: list[Point]) -> Series:
    series = Series("torch", "pageable", "copy", "cpu", [256, 256, 3], device_name="AMD EPYC", transfer="host-to-host")
    series.points = points
    series.refresh_summary()
    return series


def point(batch: int, mbps: float, wait: float | None = 0.0, others: float | None = 0.0, times: list[float] | None = None) -> Point:
    nbytes = batch * 196608
    median = nbytes / (mbps * 1e6)
    times = [median * t for t in times] if times else [median * (1 + 0.001 * (i - 10)) for i in range(21)]
    return Point(batch, nbytes, n=len(times), times_s=times, median_s=median, p10_s=min(times), p90_s=max(times), mbps=mbps,
                 mbps_p10=mbps * 0.98, mbps_p90=mbps * 1.02, batches_per_s=1 / median, images_per_s=batch / median,
                 run_wait=wait, others_cpus=others, cpus=2)  # fmt: skip


def printed(series: Series) -> str:
    console = Console(width=80, record=True, file=open(os.devnull, "w"))
    display.print_series(console, series)
    return " ".join(console.export_text().split())


BIMODAL = [0.4] * 5 + [1.6] * 5  # a path whose calls split between two times (median 1.0): no median to trust


def test_spoiled_points_are_warned_about_with_by_how_much() -> None:
    series = series_with([point(1, 9150.0), point(64, 1573.0, wait=0.85, others=0.98, times=BIMODAL),
                          point(128, 9000.0, others=0.2, times=BIMODAL), point(256, 2000.0, wait=0.3, others=0.6)])  # fmt: skip
    said = printed(series)
    assert "busy" not in said.split("*: measured on a busy machine", 1)[1]  # the sweep's busy block says it, once
    block = " ".join(" ".join(display.busy_block([series])).split())
    assert block.startswith("warning: the machine was busy at 2 of 4 points (other processes used 25% of the CPUs or more):")
    # every busy batch, and the worst reading among them
    assert ("torch/pageable/copy@cpu batch 64, 256: others used up to 0.98 of 2 CPUs; this run waited up to 0.85 s/s for one"
            " A busy machine moves figures either way") in block
    assert "batch 1," not in block and "128" not in block  # a fifth of a CPU is below a quarter of the machine
    # the uncertain median is the path's own: a note, kept to points nothing else explains
    assert "note: torch/pageable/copy@cpu: the median is uncertain at batch 128 (±60%, n=10): this path's own time varies" in said


def test_a_quiet_series_gets_no_warning_however_wide_its_steady_spread() -> None:
    wide = [1.0 + 0.5 * i / 198 for i in range(199)]  # p10–p90 of 40%, yet a median pinned down by 199 samples
    said = printed(series_with([point(1, 9150.0, wait=0.3, others=0.1), point(64, 21000.0, times=wide)]))
    assert "warning" not in said and "uncertain" not in said  # a framework's own threads may wait on each other: not a busy machine


def test_the_progress_line_flags_a_busy_point() -> None:
    series = series_with([point(64, 1573.0, wait=0.85, others=0.98)])
    assert "busy: others used 0.98 of 2 CPUs" in display.point_line(series, series.points[0])
    assert display.point_brief(series.points[0]) == "last: batch 64 1,573 MB/s, busy"
    assert "busy" not in display.point_line(series, point(1, 9150.0))


@pytest.mark.slow
@linux_only
def test_a_sweep_beside_busy_processes_records_and_warns(hogs, tmp_path) -> None:
    """End to end: busy processes started here, a host sweep measured beside them, the file and the
    table say so."""
    out = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "xferbench", "sweep", "-f", "host", "--batch-sizes", "1,64", "--shape", "64x64x3",
                        "--min-time", "0.3", "--max-samples", "100000", "-o", str(out)],
                       capture_output=True, text=True, env={**os.environ, "COLUMNS": "80"})  # fmt: skip
    assert r.returncode == 0, r.stderr
    from xferbench import load

    points = load(out).series[0].points
    assert all(p.run_wait is not None and p.run_wait > 0.2 for p in points)
    assert all(p.others_cpus is not None and p.others_cpus > 0.5 and p.cpus == hogs for p in points)
    assert "the machine was busy" in " ".join(r.stdout.split())


def test_the_report_notes_busy_points_and_uncertain_medians(tmp_path) -> None:
    from xferbench.reading import report
    from xferbench.core.results import Result, select

    result = Result({"host": "h"}, {"argv": ["xferbench", "sweep"]}, "2026-01-01T00:00:00+00:00")
    result.series = [series_with([point(1, 9150.0), point(64, 1573.0, others=0.98), point(128, 9000.0, times=BIMODAL)])]
    result.save(tmp_path / "r.json")
    picks, empty = select([tmp_path / "r.json"])
    notes = " ".join(report.render(picks, empty).split("### Notes", 1)[1].split())
    assert ("- **warning** the machine was busy at 1 of 3 points: torch/pageable/copy@cpu batch 64. Other processes used a"
            " quarter of the CPUs or more (at worst 0.98 of its 2, at torch/pageable/copy@cpu batch 64)") in notes
    assert "the median is uncertain at batch 128 (±60%, n=10): this path's own time varies" in notes
