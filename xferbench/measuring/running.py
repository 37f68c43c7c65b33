"""Run a planned sweep for the command line: progress on stderr, a save after every point, the tables
on stdout, and every way a run can stop early (Ctrl-C, a kill, a save the disk refuses) ending in one
line that says what was kept. The CLI only turns Stopped into its exit code.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Any, Iterator

from rich.console import Console, RenderableType
from rich.constrain import Constrain
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Column

from xferbench.reading import display
from xferbench.core import concurrency
from xferbench.measuring.buffers import unavailable_checks as memory_unavailable
from xferbench.measuring.measure import unavailable_checks as faults_unavailable
from xferbench.core.numa import unavailable_checks as numa_unavailable
from xferbench.core.errors import stop_behind
from xferbench.core.results import STOP_SIGNALS, OutputFile, Point, Result, SaveFailed, Series, csv_path
from xferbench.measuring.sweep import OUT_OF_MEMORY, Plan, absent_frameworks, new_result, run_plan
from xferbench.measuring.sampler import INTERVAL_S


class Stopped(Exception):
    """The sweep ended early; the message says what was kept, `code` is the exit status."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class Terminated(KeyboardInterrupt):
    """SIGTERM (on Windows also SIGBREAK), handled as Ctrl-C is: the file is marked interrupted and says what it holds."""


# The stops a sweep catches besides Ctrl-C: SIGTERM (kill, a CI job's timeout) and, on Windows, SIGBREAK
# (Ctrl-Break, or a CTRL_BREAK_EVENT another program sends): Windows' kill, TerminateProcess, cannot be
# caught, so a Ctrl-Break is the one way to stop a sweep there that keeps the file marked interrupted.
KILL_SIGNALS = tuple(signum for signum in STOP_SIGNALS if signum != signal.SIGINT)


def how_stopped(stop: KeyboardInterrupt) -> tuple[str, int]:
    """A stop's word and exit status: 130 for Ctrl-C, 143 for a kill, as a shell reports them."""
    return ("terminated", 143) if isinstance(stop, Terminated) else ("interrupted", 130)


def save_failed(error: SaveFailed, output: OutputFile, result: Result, err: Console) -> Stopped:
    """A refused save as the run's last line: what the file holds, where every point went, and the exit
    status of the Ctrl-C or kill it happened during, if any (else 1)."""
    stop = stop_behind(error)
    how, code = how_stopped(stop) if stop else ("", 1)
    return Stopped(f"{how + ': ' if how else ''}{error}. {keep_unsaved(output, result, err)}", code)


def keep_unsaved(output: OutputFile, result: Result, err: Console) -> str:
    """After a failed save: the whole result under a fresh name if anywhere takes it, else the points the
    file lacks printed on stderr. Says which, in a sentence for the error line."""
    result.status = "interrupted"
    measured = result.measured_points()
    unsaved = measured - output.saved_points
    rescued = output.rescue(result)
    if rescued is not None:
        return f"All {measured} measured point(s), {unsaved} of them not in that file, are in {rescued}"
    ok = [(s, p) for s in result.series for p in s.points if p.status == "ok"]
    for series, point in ok[output.saved_points :] if unsaved > 0 else []:
        err.print(display.point_line(series, point, "unsaved: "), highlight=False, markup=False, soft_wrap=True)
    return f"No file could take the {unsaved} point(s) measured since: they are printed above (their medians; the samples are lost)"


def terminate(signum: int, frame: object) -> None:
    """The handler a sweep installs for KILL_SIGNALS: stop as Ctrl-C does."""
    raise Terminated()


def ignore_kills() -> dict[int, Any]:
    """Ignore KILL_SIGNALS (a second kill must not cut a save or a close short); the handlers they had."""
    return {signum: signal.signal(signum, signal.SIG_IGN) for signum in KILL_SIGNALS}


@contextlib.contextmanager
def terminated_as_interrupted(plan: Plan | None = None) -> Iterator[None]:
    """While the block runs, SIGTERM (kill, a CI job's timeout) and Windows' SIGBREAK raise Terminated in
    the main thread, so a run stops as Ctrl-C stops it: what was measured saved and marked interrupted.
    On the way out the plan's workers are closed with those ignored, so a second kill cannot leave one
    behind."""
    previous = {signum: signal.signal(signum, terminate) for signum in KILL_SIGNALS}
    try:
        yield
    finally:
        ignore_kills()
        try:
            if plan is not None:
                plan.close()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)


class NarrowProgress(Progress):
    """A progress bar no wider than display.LINE, however wide the terminal: a long description folds."""

    def get_renderable(self) -> RenderableType:
        return Constrain(super().get_renderable(), display.LINE)


def progress_bar(err: Console) -> NarrowProgress:
    """The bar a sweep shows on a terminal: the point being measured, the bar, the count, the time, the last
    point. The bar takes what the text leaves of the line; a label too long for it folds onto a second line."""
    columns = (TextColumn("{task.description}", table_column=Column(overflow="fold")),
               BarColumn(bar_width=None, table_column=Column(ratio=1)), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.fields[last]}", table_column=Column(overflow="fold")))  # fmt: skip
    return NarrowProgress(*columns, console=err, transient=True, expand=True)


def print_tables(out: Console, plan: Plan, result: Result) -> None:
    """Each series' table with its notes, each concurrent run's table, then the busy machine once for the
    whole sweep. After a stop, only what was measured, and which series the stop cut short."""
    shown = [s for s in result.series if s.points or s.status == "failed"]
    for series in shown:
        display.print_series(out, series, result)
    for group in concurrency.groups(result):
        out.print(display.group_table(group))
        out.print()
    display.print_busy(out, shown)
    if result.status != "interrupted":
        return
    wanted = len(plan.config.batch_sizes)
    for series in shown:
        if series.status == "ok" and len(series.points) < wanted:
            display.say(out, f"[yellow]note: {escape(series.label())}: stopped after {len(series.points)} of {wanted} batch sizes[/]")
    started = {s.key for s in result.series}
    left = [p.key.label() for p in plan.runnable if p.key not in started]
    if left:
        display.say(out, f"[yellow]not started: {escape(', '.join(left))}[/]")


def run_sweep(plan: Plan, output: OutputFile, out: Console, err: Console, link_sampling: bool = True, tables: bool = True) -> Result:
    """Measure with progress on stderr, print the tables on stdout (unless `tables` is False: check
    prints its verdicts instead); Ctrl-C keeps what was measured. After a run on CUDA, each GPU's
    replay counter, clocks and P-state are read again, beside the reading taken before."""
    from xferbench.core import environment

    captured = environment.capture(plan.environments())
    # What this OS gives NUMA placement, the memory check and the fault count nothing to do, beside the environment's own list.
    captured["unavailable_checks"] = [*(captured.get("unavailable_checks") or []), *numa_unavailable(), *memory_unavailable(),
                                      *faults_unavailable()]  # fmt: skip
    result = new_result(plan, captured, sys.argv)
    failed: list[SaveFailed] = []

    def save(result: Result) -> None:
        """The output's save; after a failure, a worker thread's save is a no-op and the main thread's raises
        it again, so a concurrent run stops at its next point without a traceback from any thread."""
        if failed and threading.current_thread() is not threading.main_thread():
            return
        if failed:
            raise failed[0]
        try:
            output.save(result)
        except SaveFailed as error:
            failed.append(error)
            if threading.current_thread() is threading.main_thread():
                raise

    output.save(result)  # claims the file (a name of its own if numbered), holding a loadable result from the start
    total = len(plan.runnable) * len(plan.config.batch_sizes)
    target = plan.target
    names = {d["id"]: d["name"] for d in result.environment["devices"]}
    where = ", ".join(f"{device} ({names[device]})" if device in names else device for device in target.split("+"))
    display.say(out, escape(f"xferbench: {len(plan.runnable)} series × {len(plan.config.batch_sizes)} batch sizes on {where},"
                            f" saving to {output.path}"), highlight=False)  # fmt: skip
    if output.replaces:  # --overwrite: said before the earlier result is gone, and kept while nothing replaces it
        display.say(out, f"[yellow]note: {escape(str(output.path))} holds an earlier result: it is replaced when the first"
                         " point is saved, and kept if none is[/]", highlight=False)  # fmt: skip
    for missing in result.environment.get("unavailable_checks") or []:
        display.say(out, f"[yellow]note: not available on {environment.os_name()}: {escape(missing)}[/]", highlight=False)
    for why in absent_frameworks(plan.config, target):
        display.say(out, f"[dim]left out: {escape(why)}[/]", highlight=False)
    for conflict in environment.package_conflicts(result.environment.get("versions") or {}):
        display.say(err, f"[bold yellow]warning: {escape(conflict)}[/]", highlight=False)
    for planned in plan.series:
        if planned.skip:
            display.say(out, f"[dim]skipping {planned.key.label()}: {escape(planned.skip)}[/]", highlight=False)
    # Before measuring: the user may want to pin and start again. A line per device.
    numa = "\n".join(filter(None, (display.numa_line(result, device, plan.config.bind) for device in target.split("+"))))
    if numa:
        display.say(err, numa, highlight=False)

    link_interval_s = INTERVAL_S if link_sampling else None
    try:
        if err.is_terminal:
            with progress_bar(err) as progress:
                task = progress.add_task("measuring", total=total, last="")

                def on_start(series: Series, batch_size: int) -> None:
                    progress.update(task, description=f"{series.label()} batch {batch_size}")

                def on_point(series: Series, point: Point) -> None:
                    progress.update(task, advance=1, last=display.point_brief(point))

                run_plan(plan, result, save, on_point, on_start, link_interval_s)
        else:
            run_plan(plan, result, save, lambda s, p: err.print(display.point_line(s, p), highlight=False, markup=False, soft_wrap=True),
                     link_interval_s=link_interval_s)  # fmt: skip
    except SaveFailed as error:  # after Ctrl-C or a kill too, if the sweep's save that marked the file interrupted failed
        raise save_failed(error, output, result, err) from None
    except KeyboardInterrupt as stop:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut this save short
        ignore_kills()  # nor a second kill (the caller restores them)
        try:
            result.status = "interrupted"
            save(result)
        except SaveFailed as error:  # the disk filled as the run stopped: the stop's status, and every point kept somewhere
            raise save_failed(error, output, result, err) from None
        finally:
            signal.signal(signal.SIGINT, previous)
        if tables:  # saved first: the tables are what was measured, and a second Ctrl-C only cuts them short
            with contextlib.suppress(KeyboardInterrupt):
                out.print()
                print_tables(out, plan, result)
        measured = result.measured_points()
        how, code = how_stopped(stop)
        raise Stopped(f"{how}: {measured} measured point(s) saved to {output.path}", code) from None
    if any(s.device.startswith("cuda") and s.status != "skipped" for s in result.series):
        result.environment["nvml_after"] = environment.nvml_health()
        save(result)
    out.print()
    if tables:
        print_tables(out, plan, result)
    if numa and "warning" in numa:  # a warning bears repeating under the tables; the binding line does not
        display.say(out, numa, highlight=False)
    if output.moved_from:
        display.say(err, f"[bold yellow]warning: {escape(str(output.moved_from))} was replaced by something else during the"
                         f" run; this run's results are in {escape(str(output.path))}[/]", highlight=False)  # fmt: skip
    elif output.rewritten:
        display.say(err, f"[bold yellow]warning: {escape(str(output.path))} was removed during the run; it was written again"
                         " with every point[/]", highlight=False)  # fmt: skip
    saved = f"saved {output.path}" + (f" and {csv_path(output.path)}" if output.csv else "")
    display.say(out, escape(saved), highlight=False)
    return result


def failures(result: Result) -> list[str]:
    """What makes the exit status 1: points that failed, and series cut short by a dead worker.

    Out-of-memory points are not failures: they are how the sweep finds the device's limit.
    """
    found = []
    for series in result.series:
        if series.status == "failed" and not any(p.status == "error" for p in series.points):
            why = (series.reason or "failed").splitlines()[0]
            found.append(f"{series.label()} ({why[:97] + '...' if len(why) > 100 else why})")
        found += [
            f"{series.label()} batch {p.batch_size}"
            for p in series.points
            if p.status == "error" and not (p.error or "").startswith(OUT_OF_MEMORY)
        ]
    return found
