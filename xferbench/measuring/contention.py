"""Whether other processes competed for this process's CPUs while a point was sampled.

A busy machine slows host-side work (staging copies, page faults, a framework's own threads) and can
do so evenly: every call loses the same time slice, so the samples stay tight around a wrong median
and the spread says nothing. So each point records two things, from Linux's /proc:
- the CPU time other processes took on the CPUs this process may use (/proc/stat, less the time of
  this run's own process tree: the sweep and every worker under it), in CPUs' worth;
- how long this process's threads waited, runnable, for a CPU (/proc/self/task/*/schedstat), in
  seconds per second sampled: the direct measure of a point spoiled by a busy machine.
Elsewhere (macOS, Windows) both are None.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from xferbench.core.environment import process_cpus

OTHERS_MIN_WINDOW_S = 0.05  # /proc/stat counts 10 ms ticks: a shorter window says nothing of others' time
_root: list[int] = []  # the xferbench process whose tree is ours; empty: this process is the root


def count_tree_of(pid: int) -> None:
    """Count the whole tree under `pid` (a worker's parent, the sweep) as this measurement's own: the
    sweep polls NVML for the worker, and other frameworks' idle workers are part of the same run."""
    _root[:] = [pid]


def _children(pid: int) -> list[int]:
    """A process's child processes, from each of its threads' /proc children list."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            found += [int(child) for child in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except (OSError, ValueError):
            continue
    return found


def _tree(root: int) -> list[int]:
    """The root and every process below it."""
    tree, queue = [], [root]
    while queue:
        pid = queue.pop()
        if pid not in tree:
            tree.append(pid)
            queue += _children(pid)
    return tree


@dataclass(frozen=True)
class Snapshot:
    wall_s: float
    busy_s: float  # every process's CPU time on this process's CPUs
    own_s: float  # the CPU time of this run's process tree
    wait_s: float | None  # this process's threads' total run-queue wait; None without schedstat
    cpus: int | None  # how many CPUs this process may run on


@dataclass(frozen=True)
class Usage:
    others_cpus: float | None  # other processes' CPU time per second sampled (1.0: one CPU kept busy)
    run_wait: float | None  # this process's threads' run-queue wait per second sampled
    cpus: int | None  # how many CPUs this process may run on


def _ticks() -> float:
    try:
        return float(os.sysconf("SC_CLK_TCK"))
    except (ValueError, OSError, AttributeError):
        return 100.0


def _busy_ticks(stat: str, cpus: set[int] | None) -> int:
    """Non-idle ticks of the given CPUs ('cpuN' lines), or of the machine ('cpu' line) when unknown.
    Fields: user nice system idle iowait irq softirq steal (guest time is inside user)."""
    total = 0
    for line in stat.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu"):
            continue
        if cpus is None and name != "cpu" or cpus is not None and (name == "cpu" or int(name[3:]) not in cpus):
            continue
        values = [int(v) for v in rest.split()[:8]]
        total += sum(values) - values[3] - values[4]
    return total


def _process_ticks(pid: int) -> int:
    """A process's CPU time from /proc/PID/stat: its threads' (utime, stime) and its reaped children's
    (cutime, cstime), so a compiler a framework runs and waits for stays the run's own; 0 once gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    fields = text.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
    return sum(int(field) for field in fields[11:15])


def _run_queue_wait_s() -> float | None:
    """Seconds this process's live threads have spent runnable but not running."""
    total, found = 0, False
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    for task in tasks:
        try:
            total += int(Path(f"/proc/self/task/{task}/schedstat").read_text().split()[1])
            found = True
        except (OSError, IndexError, ValueError):
            continue
    return total / 1e9 if found else None


def snapshot() -> Snapshot | None:
    """Where CPU time stands now; None where /proc cannot say (not Linux, or an unreadable entry):
    a point is worth more than what the machine was doing around it."""
    try:
        return _snapshot()
    except (OSError, ValueError, IndexError):
        return None


def _snapshot() -> Snapshot:
    stat = Path("/proc/stat").read_text()
    allowed = process_cpus()
    tick, cpus = _ticks(), set(allowed) if allowed else None
    tree = _tree(_root[0] if _root else os.getpid())
    own = sum(_process_ticks(pid) for pid in (tree if os.getpid() in tree else [os.getpid(), *tree]))
    count = len(cpus) if cpus else os.cpu_count()
    return Snapshot(time.perf_counter(), _busy_ticks(stat, cpus) / tick, own / tick, _run_queue_wait_s(), count)


def usage(before: Snapshot | None, after: Snapshot | None) -> Usage | None:
    """What happened between two snapshots, per second of wall time. Others' time needs a window of
    OTHERS_MIN_WINDOW_S; the run-queue wait is counted in nanoseconds and always says.

    A thread that ended inside the window takes its wait with it, so run_wait may undercount, never over.
    """
    if before is None or after is None or after.wall_s <= before.wall_s:
        return None
    wall = after.wall_s - before.wall_s
    others = None
    if wall >= OTHERS_MIN_WINDOW_S:
        others = max(0.0, (after.busy_s - before.busy_s) - (after.own_s - before.own_s)) / wall
    wait = None
    if before.wait_s is not None and after.wait_s is not None:
        wait = max(0.0, after.wait_s - before.wait_s) / wall
    return Usage(others, wait, after.cpus)
