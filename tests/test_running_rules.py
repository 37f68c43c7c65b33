"""The rules of running.py, each on its own: what a sweep prints on stdout and stderr, what its file holds,
and the one line (and exit status) every early stop ends in."""

from __future__ import annotations

import dataclasses
import errno
import io
import re
import signal
import sys
import threading
from pathlib import Path

import pytest
from rich.console import Console
from rich.markup import escape

from conftest import FakeBackend
from xferbench.core import environment
from xferbench.core.results import OutputFile, Point, Result, Series, csv_path, load
from xferbench.core.spec import SeriesKey
from xferbench.core.timing import TimingConfig
from xferbench.measuring import running
from xferbench.measuring.backends import SimLink
from xferbench.measuring.sampler import INTERVAL_S
from xferbench.measuring.sweep import OUT_OF_MEMORY, Plan, PlannedSeries, SweepConfig, make_plan
from xferbench.reading import display

TIMING = TimingConfig(warmup_calls=1, warmup_s=0.0, min_samples=5, min_time_s=0.0, max_samples=5, settle_s=0.0)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
SHAPE = (256, 256, 3)


def console(width: int = 120) -> Console:
    """A stream as a user's pipe or file sees it (no terminal), with colour on, so that any styling shows."""
    return Console(file=io.StringIO(), width=width, color_system="standard", force_terminal=False)


def text(stream: Console) -> str:
    return stream.file.getvalue()  # type: ignore[attr-defined]


def said(*lines: str, width: int = 120, **options: bool) -> str:
    """Each line as display.say prints it on a console like `console(width)`."""
    like = console(width)
    for line in lines:
        display.say(like, line, **options)
    return text(like)


def plain(*lines: str, width: int = 120) -> str:
    """Lines printed as they are: no markup, no highlighting, never wrapped by the console."""
    like = console(width)
    for line in lines:
        like.print(line, highlight=False, markup=False, soft_wrap=True)
    return text(like)


def tables(series: list[Series], result: Result, width: int = 120) -> str:
    like = console(width)
    for one in series:
        display.print_series(like, one, result)
    return text(like)


def busy(series: list[Series], width: int = 120) -> str:
    """The busy block a sweep prints under its tables: empty on a quiet machine, and on a busy one (a
    laptop, a shared CI runner) the points the file itself marks busy, so the test holds on either."""
    like = console(width)
    display.print_busy(like, [s for s in series if s.points or s.status == "failed"])
    return text(like)


@pytest.fixture
def env(monkeypatch):
    """What the machine says, fixed: the devices the plan's workers report, one check of each kind
    unavailable, and a package conflict when the versions hold one."""
    seen = {}

    def capture(frameworks):
        seen["frameworks"] = frameworks
        devices = [d for one in frameworks.values() for d in one.get("devices", [])]
        return {"devices": [{"id": "sim", "kind": "sim", "name": "the [simulated] link"}, *devices],
                "unavailable_checks": ["the os check"], "versions": {"cupy": "13", "cupy-cuda12x": "12"}}  # fmt: skip

    monkeypatch.setattr(environment, "capture", capture)
    monkeypatch.setattr(environment, "os_name", lambda: "TestOS")
    monkeypatch.setattr(environment, "package_conflicts", lambda versions: [f"{' and '.join(versions)} [both] provide cupy"])
    monkeypatch.setattr(environment, "nvml_health", lambda: {"read": "after"})
    monkeypatch.setattr(running, "numa_unavailable", lambda: ["numa [placement]"])
    monkeypatch.setattr(running, "memory_unavailable", lambda: ["the memory check"])
    monkeypatch.setattr(running, "faults_unavailable", lambda: ["the fault count"])
    monkeypatch.setattr(running, "absent_frameworks", lambda config, target: [f"{','.join(config.frameworks)} [absent] for {target}"])
    return seen


HEADER_NOTES = [
    "[yellow]note: not available on TestOS: the os check[/]",
    "[yellow]note: not available on TestOS: numa \\[placement][/]",
    "[yellow]note: not available on TestOS: the memory check[/]",
    "[yellow]note: not available on TestOS: the fault count[/]",
]
CONFLICT = "[bold yellow]warning: cupy and cupy-cuda12x \\[both] provide cupy[/]"


@pytest.fixture
def spy(monkeypatch):
    """The real run_plan, recording the link interval it was given, with a hook after each point's own
    callback (where a test stops the run or changes the disk)."""
    seen = {"intervals": [], "after_point": None}
    real = running.run_plan

    def run_plan(plan, result, save, on_point=None, on_start=None, link_interval_s=INTERVAL_S):
        seen["intervals"].append(link_interval_s)

        def point(series, p):
            if on_point:
                on_point(series, p)
            if seen["after_point"]:
                seen["after_point"](series, p)

        return real(plan, result, save, point, on_start, link_interval_s)

    monkeypatch.setattr(running, "run_plan", run_plan)
    return seen


@pytest.fixture
def sim():
    """Three simulated series (h2d, d2h, bidir) at three batch sizes, and one that cannot run here."""
    made = make_plan(SweepConfig(frameworks=("sim",), batch_sizes=(1, 2, 4), timing=TIMING, sim=SimLink(),
                                 directions=("h2d", "d2h", "bidir")))  # fmt: skip
    backend = made.series[0].backend
    made.series.append(PlannedSeries(SeriesKey("sim", "link", "copy", "cuda:0", SHAPE), backend, "no [GPU] here"))
    yield made
    made.close()


@pytest.fixture
def signals():
    """SIGINT and the kill signals as they were, put back after the test."""
    kept = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, *running.KILL_SIGNALS)}
    yield kept
    for signum, handler in kept.items():
        signal.signal(signum, handler)


def header(plan: Plan, path: Path, where: str = "sim (the [simulated] link)") -> str:
    return said(escape(f"xferbench: {len(plan.runnable)} series × 3 batch sizes on {where}, saving to {path}"), highlight=False)


def point_lines(result: Result, prefix: str = "") -> list[str]:
    return [display.point_line(s, p, prefix) for s in result.series for p in s.points]


def test_a_complete_run_says_what_it_runs_prints_every_point_and_table_and_where_it_saved(sim, env, spy, tmp_path) -> None:
    """A sweep's stdout: what it runs and where it saves, each note, a blank line, the tables, the files
    saved; its stderr: warnings, then each point as it lands, plain and never re-wrapped."""
    path = tmp_path / "r.json"
    Result({"host": "before"}, {}, "2026-01-01T00:00:00+00:00").save(path)
    out, err = console(), console(60)
    result = running.run_sweep(sim, OutputFile(path, csv=True, overwrite=True), out, err)
    kept = load(path)
    assert result.status == kept.status == "complete" and kept.environment.get("host") != "before"
    assert [len(s.points) for s in kept.series] == [3, 3, 3, 0] and kept.series[3].status == "skipped"
    assert kept.environment["unavailable_checks"] == ["the os check", "numa [placement]", "the memory check", "the fault count"]
    assert kept.config["argv"] == sys.argv and "nvml_after" not in kept.environment
    assert env["frameworks"] == sim.environments() and spy["intervals"] == [INTERVAL_S]
    assert text(out) == (
        header(sim, path)
        + said(f"[yellow]note: {path} holds an earlier result: it is replaced when the first point is saved, and kept if none is[/]",
               highlight=False)
        + said(*HEADER_NOTES, highlight=False)
        + said("[dim]left out: sim \\[absent] for sim[/]", "[dim]skipping sim/link/copy@cuda:0: no \\[GPU] here[/]", highlight=False)
        + "\n"
        + tables(kept.series[:3], kept)
        + busy(kept.series)
        + said(f"saved {path} and {csv_path(path)}", highlight=False)
    )  # fmt: skip
    assert text(err) == said(CONFLICT, width=60, highlight=False) + plain(*point_lines(kept), width=60)
    assert csv_path(path).exists()


def test_without_tables_or_link_sampling_a_run_says_only_where_it_saved(sim, env, spy, tmp_path) -> None:
    """tables=False leaves the tables to the caller; link_sampling=False samples no link."""
    path = tmp_path / "r.json"
    out = console()
    running.run_sweep(sim, OutputFile(path), out, console(), link_sampling=False, tables=False)
    assert spy["intervals"] == [None]
    assert text(out).endswith("\n" + said("[dim]skipping sim/link/copy@cuda:0: no \\[GPU] here[/]", highlight=False) + "\n"
                              + said(f"saved {path}", highlight=False))  # fmt: skip


def test_a_file_replaced_during_the_run_moves_the_run_and_stderr_says_so(sim, env, spy, tmp_path) -> None:
    """Something else taking the file mid-run: the run goes on under a fresh name, and stderr names both."""
    path = tmp_path / "r.json"

    def replace(series, point):
        if not path.with_name("r-2.json").exists():
            path.unlink()
            path.write_text("another run's")

    spy["after_point"] = replace
    out, err = console(), console()
    running.run_sweep(sim, OutputFile(path), out, err, tables=False)
    moved = tmp_path / "r-2.json"
    assert load(moved).status == "complete" and path.read_text() == "another run's"
    assert text(err).endswith(said(f"[bold yellow]warning: {path} was replaced by something else during the run; this run's"
                                   f" results are in {moved}[/]", highlight=False))  # fmt: skip
    assert text(out).endswith(said(f"saved {moved}", highlight=False))


def test_a_file_removed_during_the_run_is_written_again_and_stderr_says_so(sim, env, spy, tmp_path) -> None:
    """The file removed mid-run (not replaced): the run writes it again under its own name, and says it was removed."""
    path = tmp_path / "r.json"
    removed = []

    def remove(series, point):
        if not removed:
            path.unlink()
            removed.append(True)

    spy["after_point"] = remove
    out, err = console(), console()
    running.run_sweep(sim, OutputFile(path), out, err, tables=False)
    assert load(path).status == "complete" and not path.with_name("r-2.json").exists()
    assert text(err).endswith(said(f"[bold yellow]warning: {path} was removed during the run; it was written again with every"
                                   " point[/]", highlight=False))  # fmt: skip
    assert text(out).endswith(said(f"saved {path}", highlight=False))


def stop_at(label: str, batch: int, stop: type[KeyboardInterrupt]):
    def after_point(series, point):
        if series.label() == label and point.batch_size == batch:
            raise stop()

    return after_point


@pytest.mark.parametrize("stop, code, how", [(KeyboardInterrupt, 130, "interrupted"), (running.Terminated, 143, "terminated")])
def test_a_stop_saves_with_ctrl_c_and_kills_ignored_prints_what_was_measured_and_says_what_was_kept(
    sim, env, spy, signals, tmp_path, stop, code, how
) -> None:
    """Ctrl-C (130) or a kill (143): the file marked interrupted is saved with a second Ctrl-C or kill
    ignored, then the tables of what was measured, the series cut short and those never started."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    path = tmp_path / "r.json"
    output, saves = OutputFile(path), []
    real = output.save

    def save(result):
        saves.append((result.status, signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)))
        real(result)

    output.save = save  # type: ignore[method-assign]
    spy["after_point"] = stop_at("sim/link/copy/d2h@sim", 2, stop)
    out, err = console(), console(60)
    with pytest.raises(running.Stopped) as stopped:
        running.run_sweep(sim, output, out, err)
    assert (str(stopped.value), stopped.value.code) == (f"{how}: 5 measured point(s) saved to {path}", code)
    kept = load(path)
    assert kept.status == "interrupted" and [len(s.points) for s in kept.series] == [3, 2]
    assert saves[-1] == ("interrupted", signal.SIG_IGN, signal.SIG_IGN) and saves[-2][1:] != (signal.SIG_IGN, signal.SIG_IGN)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler and signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
    assert text(out).endswith(
        said("[dim]skipping sim/link/copy@cuda:0: no \\[GPU] here[/]", highlight=False)
        + "\n"
        + tables(kept.series, kept)
        + busy(kept.series)
        + said("[yellow]note: sim/link/copy/d2h@sim: stopped after 2 of 3 batch sizes[/]", "[yellow]not started: sim/link/copy/bidir@sim[/]")
    )  # fmt: skip
    assert text(err) == said(CONFLICT, width=60, highlight=False) + plain(*point_lines(kept), width=60)


def test_a_stop_without_tables_prints_none_and_a_second_ctrl_c_only_cuts_the_tables_short(sim, env, spy, signals, monkeypatch, tmp_path) -> None:
    """After a stop the file is saved first; the tables are a courtesy a second Ctrl-C may cut short."""
    path = tmp_path / "r.json"
    spy["after_point"] = stop_at("sim/link/copy@sim", 1, KeyboardInterrupt)
    out = console()
    with pytest.raises(running.Stopped) as stopped:
        running.run_sweep(sim, OutputFile(path), out, console(), tables=False)
    assert str(stopped.value) == f"interrupted: 1 measured point(s) saved to {path}" and stopped.value.code == 130
    assert text(out).endswith(said("[dim]skipping sim/link/copy@cuda:0: no \\[GPU] here[/]", highlight=False))

    def second_ctrl_c(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(display, "print_series", second_ctrl_c)
    out = console()
    with pytest.raises(running.Stopped) as stopped:
        running.run_sweep(sim, OutputFile(tmp_path / "s.json"), out, console())
    assert str(stopped.value) == f"interrupted: 1 measured point(s) saved to {tmp_path / 's.json'}" and stopped.value.code == 130
    assert text(out).endswith(said("[dim]skipping sim/link/copy@cuda:0: no \\[GPU] here[/]", highlight=False) + "\n")
    assert load(tmp_path / "s.json").status == "interrupted"


def full_at(output: OutputFile, points: int) -> None:
    """The disk fills when the result holds `points` measured points: that save and every later one fail."""
    real = output._save

    def save(result):
        if result.measured_points() >= points:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(result)

    output._save = save  # type: ignore[method-assign]


def test_a_failed_save_stops_with_code_1_and_the_whole_result_under_a_fresh_name(sim, env, spy, tmp_path) -> None:
    """A save the disk refuses: status 1, what the file holds, and where every point went; no tables."""
    path = tmp_path / "r.json"
    output = OutputFile(path)
    full_at(output, 2)
    out, err = console(), console(40)
    with pytest.raises(running.Stopped) as stopped:
        running.run_sweep(sim, output, out, err)
    rescued = tmp_path / "r-unsaved-1.json"
    assert stopped.value.code == 1 and str(stopped.value) == (
        f"cannot save to {path}: No space left on device; it holds the last complete save (1 measured point(s))."
        f" All 2 measured point(s), 1 of them not in that file, are in {rescued}")  # fmt: skip
    whole = load(rescued)
    assert whole.status == "interrupted" and [p.batch_size for p in whole.series[0].points] == [1, 2]
    assert load(path).status == "running" and len(load(path).series[0].points) == 1
    assert text(out).endswith(said("[dim]skipping sim/link/copy@cuda:0: no \\[GPU] here[/]", highlight=False))
    assert text(err) == said(CONFLICT, width=40, highlight=False) + plain(display.point_line(whole.series[0], whole.series[0].points[0]), width=40)


def test_a_failed_save_nowhere_takes_prints_the_unsaved_points_on_stderr(sim, env, spy, tmp_path) -> None:
    """No rescue file: each point the file lacks is printed on stderr, and the error line says so."""
    path = tmp_path / "r.json"
    output, held = OutputFile(path), []
    full_at(output, 2)
    output.rescue = lambda result: held.append(result)  # type: ignore[method-assign, func-returns-value]
    err = console(40)
    with pytest.raises(running.Stopped) as stopped:
        running.run_sweep(sim, output, console(), err)
    assert stopped.value.code == 1 and str(stopped.value) == (
        f"cannot save to {path}: No space left on device; it holds the last complete save (1 measured point(s))."
        " No file could take the 1 point(s) measured since: they are printed above (their medians; the samples are lost)")  # fmt: skip
    (result,) = held
    series = result.series[0]
    assert result.status == "interrupted" and len(series.points) == 2
    assert text(err) == said(CONFLICT, width=40, highlight=False) + plain(
        display.point_line(series, series.points[0]), display.point_line(series, series.points[1], "unsaved: "), width=40)


@pytest.mark.parametrize("refused", [1, 2])  # the sweep's own save of the stop, or the one after it
def test_a_stop_whose_save_the_disk_refuses_keeps_its_status_and_every_point(sim, env, spy, signals, tmp_path, refused) -> None:
    """Ctrl-C as the disk fills: exit 130 still, what the file holds, and the whole result under a fresh name."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    path = tmp_path / "r.json"
    output = OutputFile(path)
    real, stops = output._save, []

    def save(result):
        stops.append(result.status == "interrupted")
        if sum(stops) >= refused:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(result)

    output._save = save  # type: ignore[method-assign]
    spy["after_point"] = stop_at("sim/link/copy@sim", 2, KeyboardInterrupt)
    with pytest.raises(running.Stopped) as stopped:
        running.run_sweep(sim, output, console(), console())
    rescued = tmp_path / "r-unsaved-1.json"
    assert stopped.value.code == 130 and str(stopped.value) == (
        f"interrupted: cannot save to {path}: No space left on device; it holds the last complete save (2 measured point(s))."
        f" All 2 measured point(s), 0 of them not in that file, are in {rescued}")  # fmt: skip
    assert load(rescued).status == "interrupted" and load(path).status == ("running", "interrupted")[refused - 1]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_stop_whose_save_nowhere_takes_prints_the_unsaved_points_on_stderr(sim, env, spy, signals, tmp_path) -> None:
    """Ctrl-C during a save, the disk full for the save that marks the stop, and no rescue file: exit 130 still,
    and the point the file lacks printed on stderr."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    path = tmp_path / "r.json"
    output, held = OutputFile(path), []
    real = output._save

    def save(result):
        if result.measured_points() >= 2:
            raise KeyboardInterrupt() if result.status != "interrupted" else OSError(errno.ENOSPC, "No space left on device")
        real(result)

    output._save = save  # type: ignore[method-assign]
    output.rescue = lambda result: held.append(result)  # type: ignore[method-assign, func-returns-value]
    err = console(40)
    with pytest.raises(running.Stopped) as stopped:
        running.run_sweep(sim, output, console(), err)
    assert stopped.value.code == 130 and str(stopped.value) == (
        f"interrupted: cannot save to {path}: No space left on device; it holds the last complete save (1 measured point(s))."
        " No file could take the 1 point(s) measured since: they are printed above (their medians; the samples are lost)")  # fmt: skip
    (result,) = held
    series = result.series[0]
    assert text(err).endswith(plain(display.point_line(series, series.points[1], "unsaved: "), width=40))


def frames(err: Console) -> list[str]:
    return [f for f in re.split(r"\r", ANSI.sub("", text(err))) if f.strip()]


def test_on_a_terminal_the_bar_counts_every_point_names_the_last_and_leaves_no_trace(sim, env, spy, tmp_path) -> None:
    """On a terminal the points show in a bar on stderr, not as lines: it starts at 0 of every point,
    ends naming the last point measured, and is erased when the run ends."""
    err = Console(file=io.StringIO(), width=250, force_terminal=True, color_system=None)
    running.run_sweep(sim, OutputFile(tmp_path / "r.json"), console(), err)
    drawn = [re.sub(r"\d+:\d\d:\d\d", "0:00:00", f) for f in frames(err)[1:]]
    assert drawn[0] == "measuring" + " " * 78 + "0/9 0:00:00 "
    busy = ", busy" if load(tmp_path / "r.json").series[2].points[-1].busy else ""  # as the file records the last point
    assert drawn[-1] == "sim/link/copy/bidir@sim batch 4 " + "━" * (30 - len(busy)) + f" 9/9 0:00:00 last: batch 4 20,823 MB/s{busy}\n"
    assert len(drawn[-1].rstrip("\n")) == 100
    assert text(err).endswith("\x1b[?25h\r\x1b[1A\x1b[2K") and spy["intervals"] == [INTERVAL_S]
    running.run_sweep(sim, OutputFile(tmp_path / "s.json"), console(), err, link_sampling=False, tables=False)
    assert spy["intervals"] == [INTERVAL_S, None]


def test_the_bar_is_the_line_wide_and_folds_a_long_label_and_last_point_keeping_every_character() -> None:
    """The bar takes the width the text leaves, up to LINE; a long label or last point folds, whole."""
    bar = running.progress_bar(console())
    bar.add_task("cuda/raw_pinned/copy/bidir/streamed/64-at-once+aligned@cuda:63 batch 1048576", total=4096, completed=2048,
                 last="last: batch 524288 123,456,789 MB/s, busy, and a reason long enough to fold")  # fmt: skip
    wide = Console(file=io.StringIO(), width=250, color_system=None)
    wide.print(bar.get_renderable())
    lines = [re.sub(r"\d+:\d\d:\d\d", "0:00:00", line) for line in text(wide).splitlines()]
    assert lines == ["cuda/raw_pinned/copy/bidir/streamed/64- ╸ 2048/4096 0:00:00 last: batch 524288 123,456,789 MB/s,    ",
                     "at-once+aligned@cuda:63 batch 1048576                       busy, and a reason long enough to fold  "]  # fmt: skip


class AnyDevice(FakeBackend):
    fixed_device = None  # type: ignore[assignment]


class Runner:
    def __init__(self) -> None:
        self.closed = 0

    def environment(self) -> dict:
        return {"devices": [{"id": "cuda:0", "kind": "cuda", "name": "Fake GPU"}]}

    def close(self) -> None:
        self.closed += 1


def gpu_plan(*devices: str) -> Plan:
    backend = AnyDevice()
    series = [PlannedSeries(SeriesKey("fake", "a", "copy", device, SHAPE), backend) for device in devices]
    return Plan(SweepConfig(frameworks=("fake",), batch_sizes=(1, 2, 4), bind=False), devices[0], series, {"fake": Runner()},
                list(devices))  # fmt: skip


@pytest.fixture
def gpus(monkeypatch):
    """A scripted run_plan on CUDA devices: each point made up, the second device's points saved from a
    worker thread as a concurrent run's are; and NUMA lines per device."""
    seen = {"in_worker": [], "worker_errors": [], "path": None}

    def run_plan(plan, result, save, on_point=None, on_start=None, link_interval_s=INTERVAL_S):
        seen["interval"] = link_interval_s
        try:
            for number, planned in enumerate(plan.series):
                series = Series.of(planned.key)
                result.series.append(series)
                save(result)
                for b in plan.config.batch_sizes:
                    if on_start:
                        on_start(series, b)
                    point = Point(b, b * 196608, n=5, median_s=b * 1e-4, mbps=1966.08, times_s=[b * 1e-4] * 5)
                    if number == 1 and b == 4:  # an error whose text looks like markup
                        point = Point(b, b * 196608, status="error", error="RuntimeError: [enforce fail at alloc.cpp:117] no memory")
                    series.points.append(point)
                    series.refresh_summary()
                    if number == 0:
                        save(result)
                    else:
                        worker = threading.Thread(target=lambda: seen["worker_errors"].append(None) if save(result) else None)
                        try:
                            worker.start()
                        finally:
                            worker.join()
                        seen["in_worker"].append(len(load(seen["path"]).series[-1].points) if seen["path"] else None)
                    if on_point:
                        on_point(series, point)
                save(result)
            result.status = "complete"
        except KeyboardInterrupt:
            result.status = "interrupted"
            raise
        return result

    def numa_line(result, device, bind=True):
        assert isinstance(result, Result)
        lines = {"cuda:0": f"[dim]binding cuda:0 workers (bind={bind})[/]", "cuda:1": "[bold yellow]warning: cuda:1: CPUs off its node[/]"}
        return lines.get(device)

    monkeypatch.setattr(running, "run_plan", run_plan)
    monkeypatch.setattr(display, "numa_line", numa_line)
    return seen


def test_a_run_on_gpus_names_them_says_their_numa_placement_and_reads_their_health_again(env, gpus, tmp_path) -> None:
    """On CUDA: each device named where it is known, the NUMA placement on stderr before measuring (a
    warning repeated under the tables), the GPUs' health read again after the run; a worker thread's save
    lands in the file."""
    plan, path = gpu_plan("cuda:0", "cuda:1"), tmp_path / "r.json"
    gpus["path"] = path
    out, err = console(), console()
    result = running.run_sweep(plan, OutputFile(path), out, err)
    kept = load(path)
    assert result.status == kept.status == "complete" and kept.environment["nvml_after"] == {"read": "after"}
    assert gpus["in_worker"] == [1, 2, 3] and gpus["worker_errors"] == [] and gpus["interval"] == INTERVAL_S
    numa = "[dim]binding cuda:0 workers (bind=False)[/]\n[bold yellow]warning: cuda:1: CPUs off its node[/]"
    assert text(out) == (
        header(plan, path, "cuda:0 (Fake GPU), cuda:1")
        + said(*HEADER_NOTES, highlight=False)
        + said("[dim]left out: fake \\[absent] for cuda:0+cuda:1[/]", highlight=False)
        + "\n"
        + tables(kept.series, kept)
        + busy(kept.series)
        + said(numa, highlight=False)
        + said(f"saved {path}", highlight=False)
    )  # fmt: skip
    assert text(err) == said(CONFLICT, highlight=False) + said(numa, highlight=False) + plain(*point_lines(kept))


def test_a_binding_alone_is_not_repeated_under_the_tables(env, gpus, tmp_path) -> None:
    """Only a NUMA warning bears repeating after the tables; the line saying where workers run does not."""
    plan, path = gpu_plan("cuda:0"), tmp_path / "r.json"
    out, err = console(), console()
    running.run_sweep(plan, OutputFile(path), out, err, link_sampling=False)
    assert gpus["interval"] is None
    assert text(out).startswith(header(plan, path, "cuda:0 (Fake GPU)"))
    kept = load(path)
    assert text(out).endswith(tables(kept.series, kept) + busy(kept.series) + said(f"saved {path}", highlight=False))
    assert said("[dim]binding cuda:0 workers (bind=False)[/]", highlight=False) in text(err)


def test_a_save_failing_in_a_worker_thread_stops_the_run_at_the_main_threads_next_save(env, gpus, tmp_path) -> None:
    """A concurrent run's worker whose save fails raises nothing there; later worker saves are no-ops, and
    the main thread's next save stops the run with that first failure."""
    plan, path = gpu_plan("cuda:0", "cuda:1"), tmp_path / "r.json"
    output, tries = OutputFile(path), []
    full_at(output, 4)
    failing = output._save
    output._save = lambda result: (tries.append(threading.current_thread() is threading.main_thread()), failing(result))  # type: ignore[method-assign]
    with pytest.raises(running.Stopped) as stopped:
        running.run_sweep(plan, output, console(), console())
    assert gpus["worker_errors"] == [] and tries[-2:] == [True, False]
    assert stopped.value.code == 1 and str(stopped.value) == (
        f"cannot save to {path}: No space left on device; it holds the last complete save (3 measured point(s))."
        f" All 5 measured point(s), 2 of them not in that file, are in {tmp_path / 'r-unsaved-1.json'}")  # fmt: skip


def made_series(device: str, *points: Point, status: str = "ok", reason: str | None = None, **key: object) -> Series:
    series = Series.of(dataclasses.replace(SeriesKey("fake", "a", "copy", device, SHAPE), **key))
    series.points, series.status, series.reason = list(points), status, reason
    series.refresh_summary()
    return series


def ok(batch: int) -> Point:
    return Point(batch, batch * 196608, n=5, median_s=batch * 1e-4, mbps=1966.08, times_s=[batch * 1e-4] * 5)


def error(batch: int, why: str = "RuntimeError: [enforce fail at alloc.cpp:117] no memory") -> Point:
    return Point(batch, batch * 196608, status="error", error=why)


def test_keep_unsaved_prints_only_the_measured_points_the_file_lacks_when_no_rescue_is_possible(tmp_path) -> None:
    """Nowhere to rescue to: the result is marked interrupted, and each measured point past those the file
    holds is printed on stderr, plain and unwrapped; failed points are no measurement and are skipped."""
    first, second = made_series("cpu", ok(1), error(2), ok(4)), made_series("cpu", ok(1), ok(2), mode="b")
    result = Result({}, {}, "2026-01-01T00:00:00+00:00", [first, second])
    output, offered = OutputFile(tmp_path / "r.json"), []
    output.saved_points = 2
    output.rescue = lambda r: offered.append(r.status)  # type: ignore[method-assign, func-returns-value]
    err = console(30)
    said_ = running.keep_unsaved(output, result, err)
    assert said_ == "No file could take the 2 point(s) measured since: they are printed above (their medians; the samples are lost)"
    assert offered == ["interrupted"] and result.status == "interrupted"
    assert text(err) == plain("unsaved: fake/b/copy@cpu batch 1: 1,966 MB/s (100 µs, n=5)",
                              "unsaved: fake/b/copy@cpu batch 2: 1,966 MB/s (200 µs, n=5)", width=30)  # fmt: skip
    output.saved_points = 3
    assert running.keep_unsaved(output, result, err).startswith("No file could take the 1 point(s) measured since")
    assert text(err).endswith(plain("unsaved: fake/b/copy@cpu batch 1: 1,966 MB/s (100 µs, n=5)",
                                    "unsaved: fake/b/copy@cpu batch 2: 1,966 MB/s (200 µs, n=5)",
                                    "unsaved: fake/b/copy@cpu batch 2: 1,966 MB/s (200 µs, n=5)", width=30))  # fmt: skip
    output.saved_points = 4
    before = text(err)
    assert running.keep_unsaved(output, result, err).startswith("No file could take the 0 point(s) measured since")
    assert text(err) == before


def test_keep_unsaved_names_the_rescue_file_and_prints_nothing(tmp_path) -> None:
    """A rescue file took the whole result: the sentence says how many points, how many the file lacks, where."""
    result = Result({}, {}, "2026-01-01T00:00:00+00:00", [made_series("cpu", ok(1), error(2), ok(4))])
    output = OutputFile(tmp_path / "r.json")
    output.saved_points = 1
    err = console()
    said_ = running.keep_unsaved(output, result, err)
    rescued = tmp_path / "r-unsaved-1.json"
    assert said_ == f"All 2 measured point(s), 1 of them not in that file, are in {rescued}" and text(err) == ""
    assert load(rescued).status == "interrupted" and [p.status for p in load(rescued).series[0].points] == ["ok", "error", "ok"]


def planned(*series: Series, skip: dict[str, str] | None = None) -> Plan:
    backend = FakeBackend()
    return Plan(SweepConfig(frameworks=("fake",), batch_sizes=(1, 2, 4)), "cpu",
                [PlannedSeries(s.key, backend, (skip or {}).get(s.label())) for s in series])  # fmt: skip


def test_tables_after_a_stop_show_what_was_measured_and_name_what_the_stop_cut_short() -> None:
    """After a stop: the tables of the series measured or failed, then a note per series stopped short
    (not one that failed, nor one complete), then the series never started."""
    done, failed, cut = made_series("cpu", ok(1), ok(2), ok(4)), made_series("cpu", ok(1), status="failed", reason="died", mode="b"), \
        made_series("cpu", ok(1), ok(2), mode="c")  # fmt: skip
    empty_fail = made_series("cpu", status="failed", reason="no worker", mode="d")
    left, skipped = made_series("cpu", mode="e[x]"), made_series("cpu", mode="f")
    last = made_series("cpu", mode="g")
    plan = planned(done, failed, cut, empty_fail, left, skipped, last, skip={"fake/f/copy@cpu": "not here"})
    result = Result({}, {}, "2026-01-01T00:00:00+00:00", [done, failed, cut, empty_fail], status="interrupted")
    out = console()
    running.print_tables(out, plan, result)
    shown = [done, failed, cut, empty_fail]
    assert text(out) == tables(shown, result) + said("[yellow]note: fake/c/copy@cpu: stopped after 2 of 3 batch sizes[/]",
                                                     "[yellow]not started: fake/e\\[x]/copy@cpu, fake/g/copy@cpu[/]")  # fmt: skip
    result.status = "complete"
    out = console()
    running.print_tables(out, plan, result)
    assert text(out) == tables(shown, result)


def test_tables_show_each_concurrent_run_and_the_busy_machine_once() -> None:
    """A concurrent run's table follows the series' tables; the busy block comes once, for the whole sweep."""
    busy = ok(1)
    busy.others_cpus, busy.cpus = 1.5, 2
    alone = made_series("cuda:0", busy)
    together = [made_series(device, ok(1), concurrent=2) for device in ("cuda:0", "cuda:1")]
    result = Result({}, {}, "2026-01-01T00:00:00+00:00", [alone, *together], status="complete")
    out = console()
    running.print_tables(out, planned(alone, *together), result)
    (group,) = running.concurrency.groups(result)
    like = console()
    like.print(display.group_table(group))
    like.print()
    display.print_busy(like, [alone, *together])
    assert text(out) == tables([alone, *together], result) + text(like)
    assert "every device at once, batch 1" in text(like) and "the machine was busy at 1 of 3 points" in text(like)


def test_failures_are_failed_points_and_series_a_dead_worker_cut_short_but_not_out_of_memory() -> None:
    """What makes the exit status 1: each failed point, and each failed series with no failed point (its
    reason's first line, cut to 100 characters); an out-of-memory point is how the sweep finds the limit."""
    long_reason = "x" * 101
    result = Result({}, {}, "2026-01-01T00:00:00+00:00", [
        made_series("cpu", ok(1), error(2), error(4, f"{OUT_OF_MEMORY}: 4 GiB"), Point(8, 8, status="error")),
        made_series("cpu", ok(1), status="failed", reason="worker died\nTraceback ...", mode="b"),
        made_series("cpu", status="failed", mode="c"),
        made_series("cpu", status="failed", reason=long_reason, mode="d"),
        made_series("cpu", status="failed", reason="y" * 100, mode="e"),
        made_series("cpu", error(1), status="failed", reason="bytes did not arrive", mode="f"),
        made_series("cpu", status="skipped", reason="not here", mode="g"),
    ])  # fmt: skip
    assert running.failures(result) == [
        "fake/a/copy@cpu batch 2", "fake/a/copy@cpu batch 8", "fake/b/copy@cpu (worker died)", "fake/c/copy@cpu (failed)",
        f"fake/d/copy@cpu ({'x' * 97}...)", f"fake/e/copy@cpu ({'y' * 100})", "fake/f/copy@cpu batch 1"]  # fmt: skip
    assert running.failures(Result({}, {}, "", [made_series("cpu", ok(1))])) == []


def test_a_stop_is_its_message_and_exit_status() -> None:
    """Stopped carries the line to print and the exit status; Ctrl-C is 130, a kill 143."""
    stopped = running.Stopped("interrupted: 1 measured point(s) saved to r.json", 130)
    assert (str(stopped), stopped.code) == ("interrupted: 1 measured point(s) saved to r.json", 130)
    assert running.how_stopped(running.Terminated()) == ("terminated", 143)
    assert running.how_stopped(KeyboardInterrupt()) == ("interrupted", 130)


def test_while_a_sweep_runs_a_kill_raises_terminated_and_on_the_way_out_the_plan_closes_with_kills_ignored(signals) -> None:
    """Inside the block each kill signal raises Terminated; leaving it, the plan closes with kills ignored
    and the handlers from before come back, even when closing fails, and with no plan at all."""
    seen = []

    class Closing:
        def close(self) -> None:
            seen.append({signum: signal.getsignal(signum) for signum in running.KILL_SIGNALS})
            raise OSError("a worker would not stop")

    for signum in running.KILL_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    with pytest.raises(OSError, match="a worker would not stop"):
        with running.terminated_as_interrupted(Closing()):  # type: ignore[arg-type]
            for signum in running.KILL_SIGNALS:
                assert signal.getsignal(signum) is running.terminate
                with pytest.raises(running.Terminated):
                    signal.getsignal(signum)(signum, None)
    assert seen == [{signum: signal.SIG_IGN for signum in running.KILL_SIGNALS}]
    assert all(signal.getsignal(signum) == signal.SIG_DFL for signum in running.KILL_SIGNALS)
    with running.terminated_as_interrupted():
        assert signal.getsignal(signal.SIGTERM) is running.terminate
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_ignore_kills_ignores_every_kill_signal_and_returns_the_handlers_they_had(signals) -> None:
    """ignore_kills: each kill signal ignored; the handlers from before, to put back."""
    signal.signal(signal.SIGTERM, running.terminate)
    before = {signum: signal.getsignal(signum) for signum in running.KILL_SIGNALS}
    assert running.ignore_kills() == before and before[signal.SIGTERM] is running.terminate
    assert all(signal.getsignal(signum) == signal.SIG_IGN for signum in running.KILL_SIGNALS)
