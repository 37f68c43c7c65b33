"""How CPU contention is read from Linux's /proc, checked against a fake /proc tree shaped as the real one."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from xferbench.measuring import contention

# /proc/stat as Linux writes it: the machine's line (two spaces after 'cpu'), one line per CPU, then
# other counters. Fields: user nice system idle iowait irq softirq steal guest guest_nice.
STAT = (
    "cpu  2891232 836591 529377 3311191 22892 71 5419 1967 13 17\n"
    "cpu0 1123185 371478 202435 2088564 8561 31 1459 945 5 7\n"
    "cpu1 1768046 465113 326942 1222627 14330 29 3960 1021 3 2\n"
    "cpu2 1000 200 30 4000 500 6 7 8 9 11\n"
    "intr 22922617 0 0 0 0 0 0 0 0 0 0 1 1 12 0 0 0 0 7616 6239 0 632\n"
    "ctxt 32188541\n"
    "btime 1795689526\n"
    "processes 262528\n"
    "procs_running 6\n"
    "procs_blocked 0\n"
    "softirq 14287824 0 2255129 3 406098 3952331 0 7 2516476 0 5157780\n"
)


def busy(user: int, nice: int, system: int, idle: int, iowait: int, irq: int, softirq: int, steal: int) -> int:
    return user + nice + system + irq + softirq + steal


CPU0 = busy(1123185, 371478, 202435, 2088564, 8561, 31, 1459, 945)
CPU1 = busy(1768046, 465113, 326942, 1222627, 14330, 29, 3960, 1021)
CPU2 = busy(1000, 200, 30, 4000, 500, 6, 7, 8)
MACHINE = busy(2891232, 836591, 529377, 3311191, 22892, 71, 5419, 1967)


def stat_line(pid: int, name: str, utime: int, stime: int, cutime: int, cstime: int) -> str:
    """A /proc/PID/stat line: fields 14-17 are utime stime cutime cstime, field 18 the priority."""
    return (f"{pid} ({name}) R 2880 2880 1571 0 -1 4194304 2857 6597 3 4 {utime} {stime} {cutime} {cstime} 20 0 1 0"
            " 3808421 16965632 3351 18446744073709551615 94577401917440 94577401917781 140731494902128 0 0 0 0"
            " 16781312 2 0 0 0 17 0 0 0 0 0 0 94577401929136 94577401929752 94577959624704 140731494905680"
            " 140731494905956 140731494905956 140731494907855 0\n")  # fmt: skip


class FakeOs:
    """The os module, with /proc/... listings read from a fake tree, a chosen pid, CPU count and tick rate."""

    def __init__(self, root: Path, pid: int = 500, cpu_count: int | None = 8, tick: int = 250) -> None:
        self.root, self.pid, self.cpus, self.tick = root, pid, cpu_count, tick

    def __getattr__(self, name: str):
        return getattr(os, name)

    def listdir(self, path=None):
        if isinstance(path, str) and path.startswith("/proc/"):
            return sorted(os.listdir(self.root / path[1:]))  # a fixed order, as the kernel's may be any
        return os.listdir(path)

    def getpid(self) -> int:
        return self.pid

    def cpu_count(self) -> int | None:
        return self.cpus

    def sysconf(self, name):
        if name == "SC_CLK_TCK":
            return self.tick
        return os.sysconf(name)  # rejects what the real one rejects


@pytest.fixture
def proc(tmp_path, monkeypatch):
    """A fake /proc under tmp_path, seen by the contention module alone."""
    root = tmp_path

    def path(*args):
        real = Path(*args)  # rejects what Path rejects
        text = str(real)
        if text.startswith("/proc/"):
            return root / text[1:]
        return real

    fake_os = FakeOs(root)
    monkeypatch.setattr(contention, "Path", path)
    monkeypatch.setattr(contention, "os", fake_os)
    monkeypatch.setattr(contention, "process_cpus", lambda: [0, 2])
    monkeypatch.setattr(contention, "_root", [])
    (root / "proc").mkdir()

    class Proc:
        os = fake_os

        def write(self, relative: str, text: str) -> None:
            file = root / "proc" / relative
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(text)

        def process(self, pid: int, children: dict[int, str], ticks: tuple[int, int, int, int] | None = None,
                    name: str = "python3") -> None:  # fmt: skip
            """A process with threads (tid: its children file's text) and, if given, its CPU ticks."""
            (root / "proc" / str(pid) / "task").mkdir(parents=True, exist_ok=True)
            for tid, text in children.items():
                self.write(f"{pid}/task/{tid}/children", text)
            if ticks is not None:
                self.write(f"{pid}/stat", stat_line(pid, name, *ticks))

    return Proc()


def test_a_process_children_are_gathered_from_every_thread(proc) -> None:
    """A process's children are those listed by each of its threads, in thread order."""
    proc.process(500, {500: "501 502 ", 503: "", 504: "507\n", 505: "506 "})
    assert contention._children(500) == [501, 502, 507, 506]


def test_an_unreadable_thread_does_not_hide_the_other_threads_children(proc) -> None:
    """A thread that ended, or whose list is not numbers, is skipped and the rest still count."""
    proc.process(500, {501: "610 "})
    (proc.os.root / "proc/500/task/400").mkdir()  # a thread gone before its children list was read
    proc.write("500/task/450/children", "oops ")
    assert contention._children(500) == [610]


def test_a_process_that_is_gone_has_no_children(proc) -> None:
    """A process no longer in /proc has no children."""
    assert contention._children(999) == []


def test_the_tree_holds_the_root_and_every_descendant_once(proc) -> None:
    """The run's tree is the root and everything below it, each process once."""
    proc.process(10, {10: "11 12 "})
    proc.process(11, {11: "13 "})
    proc.process(12, {12: "13 14 "})
    proc.process(13, {13: ""})
    proc.process(14, {14: "15 "})
    tree = contention._tree(10)
    assert tree[0] == 10 and sorted(tree) == [10, 11, 12, 13, 14, 15]


def test_a_tree_of_one_is_its_root(proc) -> None:
    """A process without children is a tree of itself alone."""
    assert contention._tree(77) == [77]


def test_the_clock_tick_comes_from_the_system(proc) -> None:
    """CPU ticks are turned into seconds at the system's own tick rate."""
    assert contention._ticks() == 250.0


@pytest.mark.parametrize("error", [ValueError, OSError, AttributeError])
def test_without_a_tick_rate_a_hundred_per_second_is_assumed(proc, monkeypatch, error) -> None:
    """Where the system does not give its tick rate, Linux's usual 100 per second is used."""

    def sysconf(name):
        raise error("no such configuration name")

    monkeypatch.setattr(proc.os, "sysconf", sysconf, raising=False)
    assert contention._ticks() == 100.0


def test_busy_time_is_every_non_idle_field_of_the_chosen_cpus() -> None:
    """Busy time is user, nice, system, irq, softirq and steal of the CPUs this process may use."""
    assert contention._busy_ticks(STAT, {1}) == CPU1
    assert contention._busy_ticks(STAT, {0, 2}) == CPU0 + CPU2
    assert contention._busy_ticks(STAT, {0, 1, 2}) == CPU0 + CPU1 + CPU2


def test_busy_time_of_the_machine_when_the_cpus_are_unknown() -> None:
    """Without a list of CPUs, the machine-wide line alone is counted."""
    assert contention._busy_ticks(STAT, None) == MACHINE


def test_cpus_missing_from_the_file_count_nothing() -> None:
    """CPUs the file does not list add no busy time."""
    assert contention._busy_ticks(STAT, {7}) == 0
    assert contention._busy_ticks("", None) == 0


def test_a_process_time_is_its_own_and_its_reaped_children_time(proc) -> None:
    """A process's CPU time is its user and system time plus that of the children it waited for."""
    proc.process(500, {}, (1234, 567, 89, 10), name="python3")
    assert contention._process_ticks(500) == 1234 + 567 + 89 + 10


def test_a_command_name_with_spaces_and_parentheses_is_read_past(proc) -> None:
    """A command name holding spaces and ')' does not shift the fields read after it."""
    proc.process(501, {}, (31, 41, 59, 26), name="tricky) name (x) y")
    assert contention._process_ticks(501) == 31 + 41 + 59 + 26


def test_a_process_gone_took_no_time(proc) -> None:
    """A process that has ended counts no CPU time."""
    assert contention._process_ticks(4242) == 0


def schedstat(run_ns: int, wait_ns: int, slices: int) -> str:
    return f"{run_ns} {wait_ns} {slices}\n"


def test_the_run_queue_wait_adds_every_thread_wait_in_seconds(proc) -> None:
    """This process's wait for a CPU is the sum of its threads' waits, in seconds."""
    proc.write("self/task/1000/schedstat", schedstat(36202451, 33889333, 23))
    proc.write("self/task/1001/schedstat", schedstat(1000, 5000007, 2))
    proc.write("self/task/1002/schedstat", schedstat(2000, 123456789, 9))
    assert contention._run_queue_wait_s() == (33889333 + 5000007 + 123456789) / 1e9


def test_an_ended_or_odd_thread_is_left_out_of_the_wait(proc) -> None:
    """Threads that ended or whose schedstat cannot be read are skipped; the others still count."""
    (proc.os.root / "proc/self/task/0999").mkdir(parents=True)  # a thread that ended before its file was read
    proc.write("self/task/1000/schedstat", "\n")
    proc.write("self/task/1001/schedstat", "12 x 3\n")
    proc.write("self/task/1002/schedstat", schedstat(2000, 7000003, 9))
    assert contention._run_queue_wait_s() == 7000003 / 1e9


def test_no_wait_is_said_without_any_readable_thread(proc) -> None:
    """Without any readable schedstat, the wait is unknown rather than zero."""
    (proc.os.root / "proc/self/task/1000").mkdir(parents=True)
    assert contention._run_queue_wait_s() is None


def test_no_wait_is_said_without_a_task_list(proc) -> None:
    """Where /proc has no task list, the wait is unknown."""
    assert contention._run_queue_wait_s() is None


def whole_machine(proc) -> None:
    """This process (500) with a child (501), its waits, and /proc/stat."""
    proc.write("stat", STAT)
    proc.process(500, {500: "501 ", 502: ""}, (1000, 500, 250, 125))
    proc.process(501, {501: ""}, (2000, 750, 0, 0))
    proc.write("self/task/500/schedstat", schedstat(1, 2500000, 3))
    proc.write("self/task/502/schedstat", schedstat(1, 500000, 3))


def test_a_snapshot_reads_the_allowed_cpus_this_tree_and_the_wait(proc) -> None:
    """A snapshot holds the busy time of the allowed CPUs, this process tree's time and its threads' wait."""
    whole_machine(proc)
    start = time.perf_counter()
    snap = contention.snapshot()
    assert snap is not None and start <= snap.wall_s <= time.perf_counter()
    assert snap.busy_s == (CPU0 + CPU2) / 250
    assert snap.own_s == (1000 + 500 + 250 + 125 + 2000 + 750) / 250
    assert snap.wait_s == 3000000 / 1e9
    assert snap.cpus == 2


def test_a_snapshot_without_known_cpus_counts_the_machine(proc, monkeypatch) -> None:
    """Where the allowed CPUs are unknown, the machine's busy time and CPU count are used."""
    whole_machine(proc)
    monkeypatch.setattr(contention, "process_cpus", lambda: None)
    snap = contention.snapshot()
    assert snap is not None and (snap.busy_s, snap.cpus) == (MACHINE / 250, 8)


def test_the_tree_counted_may_start_above_this_process(proc, monkeypatch) -> None:
    """Once told the sweep's pid, the whole tree under the sweep is this run's own time, each once."""
    whole_machine(proc)
    proc.process(400, {400: "500 "}, (7, 3, 0, 0))
    proc.process(300, {300: "400 "}, (100000, 0, 0, 0))  # the sweep's parent: not ours
    contention.count_tree_of(400)
    assert contention._root == [400]
    snap = contention.snapshot()
    assert snap is not None and snap.own_s == (7 + 3 + 1000 + 500 + 250 + 125 + 2000 + 750) / 250


def test_this_process_counts_even_outside_the_named_tree(proc) -> None:
    """This process's own time is counted even when the named tree does not reach it."""
    whole_machine(proc)
    proc.process(400, {400: ""}, (7, 3, 0, 0))
    contention.count_tree_of(400)
    snap = contention.snapshot()
    assert snap is not None and snap.own_s == (1000 + 500 + 250 + 125 + 7 + 3) / 250


def test_no_snapshot_without_proc_stat(proc) -> None:
    """Where /proc/stat cannot be read (not Linux), there is no snapshot."""
    proc.process(500, {500: ""}, (1, 2, 3, 4))
    assert contention.snapshot() is None


def test_no_snapshot_from_a_damaged_proc_stat(proc) -> None:
    """A /proc/stat whose numbers cannot be read gives no snapshot rather than an error."""
    whole_machine(proc)
    proc.write("stat", "cpu  1 2 x 4 5 6 7 8 9 10\ncpu0 1 2 x 4 5 6 7 8 9 10\ncpu2 1 2 3 4 5 6 7 8 9 10\n")
    assert contention.snapshot() is None


def snap(wall: float, busy_s: float, own: float, wait: float | None, cpus: int | None = 4) -> contention.Snapshot:
    return contention.Snapshot(wall_s=wall, busy_s=busy_s, own_s=own, wait_s=wait, cpus=cpus)


def test_usage_is_per_second_of_the_window() -> None:
    """Others' CPUs and the wait are what changed between the snapshots, per second between them."""
    before = snap(10.0, 100.0, 40.0, 3.0, cpus=2)
    after = snap(10.5, 101.0, 40.25, 3.125, cpus=4)
    assert contention.usage(before, after) == contention.Usage((0.75 / 0.5), 0.125 / 0.5, 4)


def test_usage_never_goes_below_zero() -> None:
    """Tick rounding, or a thread that ended, never makes others' time or the wait negative."""
    before = snap(10.0, 100.0, 40.0, 3.0)
    after = snap(10.5, 100.25, 40.5, 2.5)
    assert contention.usage(before, after) == contention.Usage(0.0, 0.0, 4)


def test_a_window_of_exactly_the_minimum_reads_others() -> None:
    """A window exactly as long as the minimum is long enough for others' time."""
    before = snap(0.0, 1.0, 0.5, 0.0)
    after = snap(contention.OTHERS_MIN_WINDOW_S, 1.03, 0.51, 0.01)
    window = contention.OTHERS_MIN_WINDOW_S
    assert contention.usage(before, after) == contention.Usage(((1.03 - 1.0) - (0.51 - 0.5)) / window, 0.01 / window, 4)


def test_a_short_window_says_nothing_of_others() -> None:
    """Below the minimum window others' time is unknown, while the wait is still given."""
    before = snap(5.0, 1.0, 0.5, 0.25)
    after = snap(5.03125, 9.0, 0.5, 0.28125)
    assert contention.usage(before, after) == contention.Usage(None, 1.0, 4)


@pytest.mark.parametrize("waits", [(None, 1.0), (1.0, None), (None, None)])
def test_the_wait_is_unknown_unless_both_snapshots_have_it(waits) -> None:
    """Without schedstat at either end, the wait is unknown."""
    before = snap(10.0, 100.0, 40.0, waits[0])
    after = snap(11.0, 102.0, 40.5, waits[1])
    assert contention.usage(before, after) == contention.Usage(1.5, None, 4)


def test_no_usage_without_both_snapshots() -> None:
    """Without a snapshot at either end, there is no usage."""
    one = snap(10.0, 100.0, 40.0, 3.0)
    assert contention.usage(None, one) is None
    assert contention.usage(one, None) is None
    assert contention.usage(None, None) is None


@pytest.mark.parametrize("wait", [3.0, None])
def test_no_usage_from_a_window_of_no_time(wait) -> None:
    """Snapshots taken at the same moment, or out of order, give no usage."""
    before = snap(10.0, 100.0, 40.0, wait)
    assert contention.usage(before, snap(10.0, 101.0, 40.0, wait)) is None
    assert contention.usage(before, snap(9.5, 101.0, 40.0, wait)) is None
