"""`xferbench validate`'s processes, with stand-ins for each so that nothing is started and nothing
waits: a sweep's child (its command, environment, time limit, stopping, Ctrl-C), the sweeps in turn
(what each leaves in the folder, the budget's notes), nvidia-smi, a peer's command (its log, deadline,
budget, binding), and the whole command from the plan to verdict.md, on the H200 run's own files."""

from __future__ import annotations

import copy
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from collections.abc import Sequence
from typing import Any

import peer_outputs as out
import pytest
from test_validate_command_rules import MIB, NUMACTL, RUN5, Peer, checks_of, nvb_at, run5, sweeps5  # noqa: F401  (run5: a fixture)

from xferbench.core.errors import XferbenchError
from xferbench.core.results import Result, load, select
from xferbench.core.verdict import FAIL, PASS, Verdict
from xferbench.health import budget, validation_checks, validate_command
from xferbench.measuring.backends import BACKENDS
from xferbench.measuring.running import Terminated

CHECKOUT = Path(__file__).resolve().parent.parent  # the folder holding the xferbench these tests import
UUID = "GPU-04399c27-c7d8-5a9c-07bb-2fbc387d4a14"  # the H200's, in run 5's files
NVB, BT = "/opt/peers/nvbandwidth", "/opt/peers/bandwidthTest"
TESTS = ["-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce"]


class Clock:
    """time as validation reads it: monotonic() is `now`, moved only by the stand-ins."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now

    strftime = staticmethod(time.strftime)


@pytest.fixture
def clock(monkeypatch) -> Clock:
    found = Clock()
    monkeypatch.setattr(validate_command, "time", found)
    return found


# a sweep's process


class Child:
    """A stand-in for a sweep's process: it exits with `code` at `exits_at` on the clock on its own, or
    `ends_s` after it is told to stop (never, where None); each wait moves the clock on by the time waited.
    `interrupt`: raised from its first wait, as Ctrl-C or a kill reaches the waiting process."""

    def __init__(self, clock: Clock, code: int = 0, exits_at: float | None = None, ends_s: float | None = None,
                 interrupt: BaseException | None = None) -> None:  # fmt: skip
        self.clock, self.code, self.exits_at, self.ends_s, self.interrupt = clock, code, exits_at, ends_s, interrupt
        self.args = ["python", "-m", "xferbench", "sweep"]
        self.signals: list[int] = []
        self.waits: list[float] = []
        self.killed = False
        self.told_at: float | None = None

    def end(self) -> float | None:
        ends = [t for t in (self.exits_at, None if self.told_at is None or self.ends_s is None else self.told_at + self.ends_s) if t is not None]
        return min(ends) if ends else None

    def poll(self) -> int | None:
        end = self.end()
        return self.code if end is not None and end <= self.clock.now else None

    def wait(self, timeout: float | None = None) -> int:
        if self.interrupt is not None:
            stop, self.interrupt = self.interrupt, None
            raise stop
        if self.killed:
            return -9
        assert timeout is not None and timeout > 0, f"a wait of {timeout} s"  # a wait of nothing would spin
        self.waits.append(timeout)
        end = self.end()
        if end is not None and end <= self.clock.now + timeout:
            self.clock.now = max(self.clock.now, end)
            return self.code
        self.clock.now += timeout
        raise subprocess.TimeoutExpired(self.args, timeout)

    def send_signal(self, number: int) -> None:
        self.signals.append(number)
        self.told_at = self.clock.now

    def kill(self) -> None:
        self.killed = True


def test_a_sweep_is_waited_for_in_slices_until_it_ends(clock) -> None:
    child = Child(clock, code=3, exits_at=clock.now + 0.5)
    assert validate_command.wait_for(child) == 3  # type: ignore[arg-type]
    assert child.waits == [0.2, 0.2, 0.2] and clock.now == pytest.approx(1000.5)


def test_a_wait_past_its_limit_raises_timeout_naming_the_command_and_the_limit() -> None:
    clock = Clock(0.0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(validate_command, "time", clock)
        child = Child(clock)
        with pytest.raises(subprocess.TimeoutExpired) as said:
            validate_command.wait_for(child, 0.2)  # type: ignore[arg-type]
        assert (said.value.cmd, said.value.timeout, child.waits, clock.now) == (child.args, 0.2, [0.2], 0.2)
        with pytest.raises(subprocess.TimeoutExpired) as said:
            validate_command.wait_for(child, 0)  # type: ignore[arg-type]
        assert (said.value.cmd, said.value.timeout, child.waits) == (child.args, 0, [0.2])  # no wait at all


def test_a_sweep_is_stopped_as_ctrl_c_stops_it_and_killed_only_past_its_time(clock) -> None:
    saves = Child(clock, ends_s=0.5)
    validate_command.stop_sweep(saves, 1.0)  # type: ignore[arg-type]
    assert (saves.signals, saves.killed, clock.now) == ([signal.SIGTERM], False, pytest.approx(1000.5))
    slow = Child(clock, ends_s=5.0)
    validate_command.stop_sweep(slow, 1.0)  # type: ignore[arg-type]
    assert (slow.signals, slow.killed, clock.now) == ([signal.SIGTERM], True, pytest.approx(1001.5))
    ended = Child(clock, exits_at=clock.now)
    validate_command.stop_sweep(ended, 1.0)  # type: ignore[arg-type]
    assert (ended.signals, ended.killed) == ([], False)  # nothing to tell a sweep that already ended


def test_on_windows_a_sweep_is_stopped_with_ctrl_break(clock, monkeypatch) -> None:
    monkeypatch.setattr(validate_command, "NEW_GROUP", 512)
    monkeypatch.setattr(signal, "CTRL_BREAK_EVENT", 1, raising=False)
    child = Child(clock, ends_s=0.5)
    validate_command.stop_sweep(child, 1.0)  # type: ignore[arg-type]
    assert child.signals == [1] and not child.killed


class Popen:
    """subprocess.Popen's stand-in: the next Child, with what it was started with."""

    def __init__(self, child: Child) -> None:
        self.child = child
        self.started: list[tuple[list[str], dict[str, Any]]] = []

    def __call__(self, command: list[str], **kwargs: Any) -> Child:
        self.started.append((command, kwargs))
        return self.child


def test_a_child_sweep_runs_with_its_environment_and_gives_its_exit_code(clock, monkeypatch) -> None:
    popen = Popen(Child(clock, code=4, exits_at=clock.now + 0.3))
    monkeypatch.setattr(validate_command.subprocess, "Popen", popen)
    env = {"PYTHONPATH": "/here", "ONLY": "this"}
    assert validate_command.run_child_sweep(["python", "-m", "xferbench", "sweep"], env) == 4
    assert popen.started == [(["python", "-m", "xferbench", "sweep"], {"env": env, "creationflags": 0})]


def test_a_child_sweep_past_its_limit_is_stopped_given_the_stop_grace_then_killed(clock, monkeypatch) -> None:
    child = Child(clock, ends_s=budget.STOP_GRACE_S + 10)  # saves too slowly
    monkeypatch.setattr(validate_command.subprocess, "Popen", Popen(child))
    assert validate_command.run_child_sweep(["sweep"], {}, limit_s=3.0) is None
    assert child.signals == [signal.SIGTERM] and child.killed
    assert clock.now == pytest.approx(1000 + 3.0 + budget.STOP_GRACE_S)


def test_after_ctrl_c_a_child_sweep_that_saw_it_too_is_left_to_save(clock, monkeypatch) -> None:
    """Ctrl-C reaches the sweep too: it is given time to end on its own, and is told nothing more."""
    child = Child(clock, code=130, exits_at=clock.now + 1.0, interrupt=KeyboardInterrupt())
    monkeypatch.setattr(validate_command.subprocess, "Popen", Popen(child))
    with pytest.raises(KeyboardInterrupt):
        validate_command.run_child_sweep(["sweep"], {})
    assert (child.signals, child.killed, clock.now) == ([], False, pytest.approx(1001.0))


def test_a_kill_reaching_this_process_alone_is_passed_on_to_the_sweep(clock, monkeypatch) -> None:
    child = Child(clock, ends_s=0.4, interrupt=Terminated())
    monkeypatch.setattr(validate_command.subprocess, "Popen", Popen(child))
    with pytest.raises(Terminated):
        validate_command.run_child_sweep(["sweep"], {})
    assert (child.signals, child.killed, clock.now) == ([signal.SIGTERM], False, pytest.approx(1000.4))


# the sweeps in turn

SWEEP_TEXT: dict[str, str] = {}


def sweep_text(stem: str, device: str) -> str:
    """The H200 run's file of that stem, as a sweep of `device` writes it."""
    if stem not in SWEEP_TEXT:
        SWEEP_TEXT[stem] = (RUN5 / f"{stem}.json").read_text()
    return SWEEP_TEXT[stem].replace('"cuda:0"', json.dumps(device))


class Sweeps:
    """run_child_sweep's stand-in: each sweep writes the H200 run's file of its name to its -o path (or what
    `writes` gives for its stem: None for nothing), takes `took_s` on the clock, and exits with its code."""

    def __init__(self, clock: Clock | None = None, device: str = "cuda:0", codes: dict[str, int | None] | None = None,
                 writes: dict[str, str | None] | None = None, took_s: float = 0.0) -> None:  # fmt: skip
        self.clock, self.device, self.codes, self.writes, self.took_s = clock, device, codes or {}, writes or {}, took_s
        self.calls: list[tuple[list[str], dict[str, str], float | None]] = []

    def __call__(self, command: list[str], env: dict[str, str], limit_s: float | None = None) -> int | None:
        self.calls.append((command, env, limit_s))
        path = Path(command[command.index("-o") + 1])
        text = self.writes.get(path.stem, sweep_text(path.stem, self.device))
        if text is not None:
            path.write_text(text)
        if self.clock is not None:
            self.clock.now += self.took_s
        return self.codes.get(path.stem, 0)


def sweep_command(run: validate_command.Validation, stem: str) -> list[str]:
    return [sys.executable, "-m", "xferbench", "sweep", *run.sweeps()[stem], "-o", str(run.folder / f"{stem}.json")]


def test_pythonpath_puts_this_xferbench_before_the_callers(monkeypatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    assert validate_command._python_path() == f"{CHECKOUT}{os.pathsep}/elsewhere"
    monkeypatch.delenv("PYTHONPATH")
    assert validate_command._python_path() == str(CHECKOUT)


def test_each_sweep_runs_as_a_user_runs_it_and_its_file_is_read(tmp_path, monkeypatch) -> None:
    run = validate_command.Validation(tmp_path, quick=True)
    sweeps = Sweeps()
    monkeypatch.setattr(validate_command, "run_child_sweep", sweeps)
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    echoed: list[str] = []
    notes = ["before"]
    files = validate_command.run_sweeps(run, echoed.append, notes=notes)
    env = {**os.environ, "PYTHONPATH": f"{CHECKOUT}{os.pathsep}/elsewhere"}
    assert sweeps.calls == [(sweep_command(run, stem), env, None) for stem in ("default", "large", "link")]
    assert echoed == [f"$ {shlex.join(sweep_command(run, stem))}" for stem in ("default", "large", "link")]
    assert list(files) == ["default", "large", "link"] and notes == ["before"]
    assert all(files[stem].series == load(tmp_path / f"{stem}.json").series for stem in files)  # type: ignore[union-attr]


def test_a_sweep_that_wrote_nothing_or_a_damaged_file_is_none_and_said(tmp_path, monkeypatch) -> None:
    run = validate_command.Validation(tmp_path, quick=True)
    monkeypatch.setattr(validate_command, "run_child_sweep", Sweeps(codes={"default": 1}, writes={"default": None, "link": "{"}))
    echoed: list[str] = []
    files = validate_command.run_sweeps(run, echoed.append)
    assert files["default"] is None and files["link"] is None and isinstance(files["large"], Result)
    assert echoed[1:] == [f"$ {shlex.join(sweep_command(run, 'large'))}", f"$ {shlex.join(sweep_command(run, 'link'))}",
                          f"warning: {tmp_path / 'link.json'}: not an xferbench result file (not JSON: Expecting property name enclosed"
                          " in double quotes at line 1)"]  # fmt: skip


def test_a_first_sweep_that_refuses_to_start_leaves_the_folder_as_it_was_found(tmp_path, monkeypatch) -> None:
    (tmp_path / "nvidia-smi-q.txt").write_text("written by this run")
    (tmp_path / "notes.txt").write_text("the user's")
    run = validate_command.Validation(tmp_path, quick=True)
    sweeps = Sweeps(codes={"default": 2}, writes={"default": None})
    monkeypatch.setattr(validate_command, "run_child_sweep", sweeps)
    with pytest.raises(XferbenchError) as said:
        validate_command.run_sweeps(run, lambda line: None)
    assert str(said.value) == "the first sweep refused to start (exit 2, see above); nothing was validated"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"] and len(sweeps.calls) == 1
    (tmp_path / "nvidia-smi-topo.txt").write_text("written by this run")
    with pytest.raises(XferbenchError):
        validate_command.run_sweeps(run, lambda line: None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_exit_2_is_refusal_only_from_the_first_sweep_and_only_with_no_file(tmp_path, monkeypatch) -> None:
    run = validate_command.Validation(tmp_path, quick=True)
    (tmp_path / "nvidia-smi-q.txt").write_text("kept")
    monkeypatch.setattr(validate_command, "run_child_sweep", Sweeps(codes={"default": 2, "large": 2}, writes={"large": None}))
    files = validate_command.run_sweeps(run, lambda line: None)
    assert isinstance(files["default"], Result) and files["large"] is None and isinstance(files["link"], Result)
    assert (tmp_path / "nvidia-smi-q.txt").read_text() == "kept"
    other = validate_command.Validation(tmp_path / "other", quick=True)
    other.folder.mkdir()
    (other.folder / "nvidia-smi-q.txt").write_text("kept")
    monkeypatch.setattr(validate_command, "run_child_sweep", Sweeps(codes={"default": 3}, writes={"default": None}))
    assert validate_command.run_sweeps(other, lambda line: None)["default"] is None
    assert (other.folder / "nvidia-smi-q.txt").read_text() == "kept"


def after(run: validate_command.Validation, stem: str) -> float:
    """What the steps after a sweep are estimated to need, as the run counts it."""
    plans = {p.stem: p.seconds(run.rates) for p in run.sweep_plans()}
    stems = list(run.sweeps())
    peers_s = sum(c.seconds for c in run.peer_commands()) + run.rates.finish_s
    return peers_s + sum(plans.get(s, 0.0) for s in stems[stems.index(stem) + 1:]) + budget.STOP_GRACE_S


def budgeted(folder: Path) -> validate_command.Validation:
    return validate_command.Validation(folder, frameworks=("sim",), quick=True, peers={"nvbandwidth": NVB, "bandwidthTest": BT},
                                 max_minutes=5)  # fmt: skip


def test_each_sweep_may_run_until_the_steps_after_it_need_the_rest(tmp_path, monkeypatch) -> None:
    """With a deadline, each sweep's limit is the time left less the later steps' estimate; one with no time
    is not started, one with a moment is, one stopped at its limit is said, and the notes keep the order."""
    run = budgeted(tmp_path)
    sweeps = Sweeps(codes={"default": None})
    monkeypatch.setattr(validate_command, "run_child_sweep", sweeps)
    monkeypatch.setattr(validate_command, "time", Clock(0.0))
    echoed: list[str] = []
    notes: list[str] = []
    files = validate_command.run_sweeps(run, echoed.append, deadline=after(run, "default") + 0.75, notes=notes)
    assert [(Path(c[-1]).stem, limit) for c, _, limit in sweeps.calls] == [
        ("default", pytest.approx(0.75)), ("large", pytest.approx(0.75 + after(run, "default") - after(run, "large")))]
    stopped = ("default.json was stopped after 1 s, keeping what it had measured, so that the rest of the run fits its"
               " --max-minutes budget")  # fmt: skip
    assert notes == [stopped] and echoed[1] == f"warning: {stopped}" and isinstance(files["default"], Result)
    sweeps.calls.clear()
    files = validate_command.run_sweeps(run, echoed.append, deadline=after(run, "large"), notes=notes)
    assert [Path(c[-1]).stem for c, _, _ in sweeps.calls] == []  # the large sweep's limit is exactly nothing
    assert files == {"default": None, "large": None}
    assert notes[1:] == [f"{stem}.json was not started: {after(run, 'large'):.0f} s of the --max-minutes budget were left and the steps"
                         f" after it are estimated to need {after(run, stem):.0f} s (at the rates the plan assumed;"
                         " a longer --max-minutes would have fitted it)" for stem in ("default", "large")]  # fmt: skip


def test_a_sweep_with_under_a_second_or_nothing_left_says_which(tmp_path, monkeypatch) -> None:
    run = budgeted(tmp_path)
    monkeypatch.setattr(validate_command, "run_child_sweep", Sweeps())
    monkeypatch.setattr(validate_command, "time", Clock(0.0))
    echoed: list[str] = []
    assert validate_command.run_sweeps(run, echoed.append, deadline=0.4) == {"default": None, "large": None}  # notes of its own
    assert echoed == [f"warning: {stem}.json was not started: 0 s of the --max-minutes budget were left and the steps after it are"
                      f" estimated to need {after(run, stem):.0f} s (at the rates the plan assumed; a longer"
                      " --max-minutes would have fitted it)" for stem in ("default", "large")]  # fmt: skip
    notes: list[str] = []
    validate_command.run_sweeps(run, echoed.append, deadline=0.0, notes=notes)
    assert notes == [f"{stem}.json was not started: the run's --max-minutes budget was spent" for stem in ("default", "large")]


# a peer's command


def ticks(*times: float) -> Any:
    """time as _run reads it: monotonic() gives these in turn."""
    from types import SimpleNamespace

    return SimpleNamespace(monotonic=iter(times).__next__)


def test_a_peer_command_gives_its_exit_its_seconds_and_its_output_and_errors_as_text(monkeypatch) -> None:
    monkeypatch.setattr(validate_command, "time", ticks(100.0, 102.5))
    script = "import os, sys; print(os.environ['PEER_SAYS']); sys.stdout.flush(); sys.stderr.buffer.write(b'bad \\xff byte'); sys.exit(3)"
    found = validate_command._run([sys.executable, "-c", script], env={**os.environ, "PEER_SAYS": "from its environment"})
    assert found == (3, 2.5, "from its environment\nbad \ufffd byte")


class Stopped:
    """subprocess.run's stand-in for a command that ran past its timeout, with what it had printed."""

    def __init__(self, printed: bytes | str | None, errors: bytes | str | None = None) -> None:
        self.printed, self.errors = printed, errors
        self.given: dict[str, Any] = {}

    def __call__(self, command: list[str], **kwargs: Any) -> Any:
        self.given = kwargs
        if kwargs.get("timeout") is None:  # the real one would wait on the hung command for ever
            raise AssertionError(f"{command} run without a timeout")
        raise subprocess.TimeoutExpired(command, kwargs["timeout"], output=self.printed, stderr=self.errors)


@pytest.mark.parametrize("printed, text", [(b"partial \xff", "partial \ufffd"), ("partial", "partial"), (None, ""), (b"", "")])
def test_a_peer_command_past_its_timeout_keeps_what_it_printed(printed, text, monkeypatch) -> None:
    monkeypatch.setattr(validate_command, "time", ticks(100.0, 100.75))
    monkeypatch.setattr(validate_command.subprocess, "run", Stopped(printed))
    assert validate_command._run(["/opt/peers/nvbandwidth"], timeout_s=0.75) == (None, 0.75, text + "\n(stopped after 0.75 s)")


def test_a_peer_command_past_its_timeout_keeps_its_errors_too(monkeypatch) -> None:
    """A hung peer's error text may be on stderr: the kept output has it after what it printed."""
    monkeypatch.setattr(validate_command, "time", ticks(100.0, 100.75))
    monkeypatch.setattr(validate_command.subprocess, "run", Stopped(b"Running host_to_device\n", b"cuMemcpyAsync hung \xff\n"))
    assert validate_command._run(["/opt/peers/nvbandwidth"], timeout_s=0.75) == (
        None, 0.75, "Running host_to_device\ncuMemcpyAsync hung \ufffd\n\n(stopped after 0.75 s)")


def test_a_peer_command_that_cannot_start_says_why(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(validate_command, "time", ticks(100.0, 100.25, 200.0, 200.5))
    assert validate_command._run([str(tmp_path / "nvbandwidth")]) == (None, 0.25, "could not start: No such file or directory")

    def refuses(command: list[str], **kwargs: Any) -> Any:
        raise OSError("no such thing")

    monkeypatch.setattr(validate_command.subprocess, "run", refuses)
    assert validate_command._run(["x"]) == (None, 0.5, "could not start: no such thing")  # an error with no strerror


def test_the_command_log_starts_empty_and_keeps_each_command_its_exit_and_seconds(tmp_path) -> None:
    path = tmp_path / "validation" / "peers" / "commands.txt"
    echoed: list[str] = []
    log = validate_command.CommandLog(path, echoed.append)
    assert path.read_text() == ""
    log(["/usr/bin/numactl", "--cpunodebind=0", NVB, "-b", "1 MiB"], 0, 1.25)
    log([BT, "--csv"], None, 600.0)
    log([BT, "--csv"], 1, 0.04)
    lines = ["                        exit 0      1.2 s  $ /usr/bin/numactl --cpunodebind=0 /opt/peers/nvbandwidth -b '1 MiB'",
             "  timed out or could not start    600.0 s  $ /opt/peers/bandwidthTest --csv",
             "                        exit 1      0.0 s  $ /opt/peers/bandwidthTest --csv"]  # fmt: skip
    assert path.read_text() == "".join(line + "\n" for line in lines)
    assert echoed == [f"  {line.strip()}" for line in lines]
    validate_command.CommandLog(path, echoed.append)
    assert path.read_text() == ""  # a new run's log


# nvidia-smi


class Tools:
    """shutil.which and validation._run's stand-ins: the tools on PATH, and each command's (exit code,
    output) by its tool's name; each run takes `seconds` on the clock."""

    def __init__(self, clock: Clock | None = None, on_path: tuple[str, ...] = ("nvidia-smi", "numactl"),
                 answers: dict[str, Any] | None = None, seconds: float = 2.0) -> None:  # fmt: skip
        self.clock, self.on_path, self.answers, self.seconds = clock, on_path, answers or {}, seconds
        self.runs: list[tuple[list[str], float, dict[str, str] | None]] = []

    def which(self, name: str) -> str | None:
        return f"/usr/bin/{name}" if name in self.on_path else None

    def __call__(self, command: list[str], timeout_s: float = validate_command.PEER_TIMEOUT_S, env: dict[str, str] | None = None
                 ) -> tuple[int | None, float, str]:  # fmt: skip
        self.runs.append((command, timeout_s, env))
        bare = command[3:] if command[0].endswith("numactl") else command
        answer = self.answers[Path(bare[0]).name]
        code, text = answer(bare[1:]) if callable(answer) else answer
        if self.clock is not None:
            self.clock.now += self.seconds
        return code, self.seconds, text


def test_nvidia_smis_view_is_saved_beside_the_results(tmp_path, monkeypatch) -> None:
    tools = Tools(answers={"nvidia-smi": lambda args: (0, f"nvidia-smi said {' '.join(args)}\n")})
    monkeypatch.setattr(validate_command.shutil, "which", tools.which)
    monkeypatch.setattr(validate_command, "_run", tools)
    echoed: list[str] = []
    assert validate_command.run_nvidia_smi(tmp_path, echoed.append) == [] and echoed == []
    assert tools.runs == [(["/usr/bin/nvidia-smi", "-q"], 120, None), (["/usr/bin/nvidia-smi", "topo", "-m"], 120, None)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nvidia-smi-q.txt", "nvidia-smi-topo.txt"]
    assert (tmp_path / "nvidia-smi-q.txt").read_text() == "nvidia-smi said -q\n"
    assert (tmp_path / "nvidia-smi-topo.txt").read_text() == "nvidia-smi said topo -m\n"


def test_nvidia_smi_failing_or_hanging_is_kept_and_said(tmp_path, monkeypatch) -> None:
    tools = Tools(answers={"nvidia-smi": lambda args: (3, "NVIDIA-SMI has failed\n") if args == ["-q"] else (None, "\n(stopped after 120 s)")})
    monkeypatch.setattr(validate_command.shutil, "which", tools.which)
    monkeypatch.setattr(validate_command, "_run", tools)
    echoed: list[str] = []
    notes = ["nvidia-smi-q.txt: nvidia-smi -q exited 3", "nvidia-smi-topo.txt: nvidia-smi topo -m did not finish"]
    assert validate_command.run_nvidia_smi(tmp_path, echoed.append) == notes
    assert echoed == [f"warning: {note}" for note in notes]
    assert (tmp_path / "nvidia-smi-q.txt").read_text() == "NVIDIA-SMI has failed\n"
    assert (tmp_path / "nvidia-smi-topo.txt").read_text() == "\n(stopped after 120 s)"


def test_without_nvidia_smi_both_views_are_said_missing(tmp_path, monkeypatch) -> None:
    tools = Tools(on_path=("numactl",))
    monkeypatch.setattr(validate_command.shutil, "which", tools.which)
    monkeypatch.setattr(validate_command, "_run", tools)
    echoed: list[str] = []
    notes = ["nvidia-smi-q.txt: nvidia-smi is not on PATH", "nvidia-smi-topo.txt: nvidia-smi is not on PATH"]
    assert validate_command.run_nvidia_smi(tmp_path, echoed.append) == notes
    assert echoed == [f"warning: {note}" for note in notes] and list(tmp_path.iterdir()) == [] and tools.runs == []


# one peer's runs


def peer_run(tmp_path: Path, tools: Tools, monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> validate_command.PeerRun:
    monkeypatch.setattr(validate_command, "_run", tools)
    log = validate_command.CommandLog(tmp_path / "peers" / "commands.txt", lambda line: None)
    return validate_command.PeerRun("bandwidthTest", BT, log, **kwargs)


def test_a_peer_runs_under_its_prefix_with_its_variables_and_is_logged(tmp_path, monkeypatch) -> None:
    tools = Tools(answers={"bandwidthTest": (0, "figures")}, seconds=1.5)
    peer = peer_run(tmp_path, tools, monkeypatch, environment={"CUDA_VISIBLE_DEVICES": UUID}, prefix=["/usr/bin/numactl", "-N", "0"])
    command = ["/usr/bin/numactl", "-N", "0", BT, "--csv"]
    assert peer(["--csv"]) == (0, 1.5, "figures", command)
    assert tools.runs == [(command, validate_command.PEER_TIMEOUT_S, {**os.environ, "CUDA_VISIBLE_DEVICES": UUID})]
    assert (tmp_path / "peers" / "commands.txt").read_text().split() == ["exit", "0", "1.5", "s", "$", *command]
    assert (peer.spent_s, peer.stopped) == (1.5, None)


def test_a_peer_over_its_time_in_all_has_its_other_runs_skipped(tmp_path, monkeypatch) -> None:
    tools = Tools(answers={"bandwidthTest": (0, "figures")}, seconds=900.0)
    peer = peer_run(tmp_path, tools, monkeypatch)
    peer(["a"])
    peer(["b"])
    assert (peer.spent_s, peer.stopped) == (1800.0, None)  # exactly its budget: not over it
    peer(["c"])
    assert peer.spent_s == 2700.0
    assert peer.stopped == "bandwidthTest took over 30 minutes in all; its remaining runs were skipped"
    assert peer(["d"]) is None and len(tools.runs) == 3


def test_a_peer_run_may_take_the_time_left_before_the_deadline_and_no_more(tmp_path, monkeypatch, clock) -> None:
    """A run whose estimate is what is left, or that has no estimate, runs with the time left as its timeout;
    one estimated past it is skipped, with the seconds left and needed, and so are the rest."""
    tools = Tools(answers={"bandwidthTest": (0, "figures")}, seconds=0.0)
    peer = peer_run(tmp_path, tools, monkeypatch, deadline=clock.now + 5.0)
    assert peer(["a"], 5.0) is not None
    clock.now += 4.5
    assert peer(["b"]) is not None
    assert [timeout for _, timeout, _ in tools.runs] == [5.0, 0.5]
    assert peer(["c"], 5.0) is None and len(tools.runs) == 2
    assert peer.stopped == ("bandwidthTest's remaining runs were skipped: 0 s of the --max-minutes budget were left and the next is"
                            " estimated to need 5 s")  # fmt: skip
    assert peer(["d"], 0.0) is None


def environment_of(device: str = "cuda:0", uuid: str | None = UUID, node: Any = 0) -> dict[str, Any]:
    nvml = {"numa_node": node, **({"uuid": uuid} if uuid else {})}
    others = [] if device == "cuda:0" else [{"id": "cuda:0", "kind": "cuda", "nvml": {"uuid": "GPU-other", "numa_node": 1}}]
    return {"devices": [{"id": "cpu"}, *others, {"id": device, "kind": "cuda", "nvml": nvml}]}


def test_nvbandwidth_is_shown_the_validated_gpu_alone_and_bound_to_its_node(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(validate_command.shutil, "which", Tools().which)
    log = validate_command.CommandLog(tmp_path / "commands.txt", lambda line: None)
    run = validate_command.Validation(tmp_path, "cuda:1")
    peer = validate_command.nvbandwidth_peer(NVB, run, log, environment_of("cuda:1"))
    assert (peer.name, peer.executable, peer.log) == ("nvbandwidth", NVB, log)
    assert (peer.environment, peer.prefix, peer.notes) == ({"CUDA_VISIBLE_DEVICES": UUID}, ["/usr/bin/numactl", "--cpunodebind=0", "--membind=0"], [])
    assert peer.placement() == NUMACTL
    unknown = validate_command.nvbandwidth_peer(NVB, run, log, environment_of("cuda:1", uuid=None))
    assert unknown.environment == {}
    assert unknown.notes == ["nvbandwidth measured every GPU it saw: the validated GPU's UUID is not known to show it that one alone"]
    assert validate_command.bandwidthtest_peer(BT, run, log, environment_of("cuda:1")).environment == {}  # it is told --device


def test_a_peer_on_node_0_without_numactl_says_numactl_is_missing(monkeypatch) -> None:
    monkeypatch.setattr(validate_command.shutil, "which", Tools(on_path=()).which)
    peer = validate_command.PeerRun("bandwidthTest", BT, log=None)  # type: ignore[arg-type]
    validate_command._bind(peer, validate_command.Validation(Path("/v")), environment_of(node=0))
    assert peer.unbound == "numactl is not on PATH"
    assert peer.placement() == "without NUMA binding (numactl is not on PATH)"
    assert validate_command.PeerRun("bandwidthTest", BT, log=None).placement() == "without NUMA binding"  # type: ignore[arg-type]


def test_nvbandwidths_sizes_are_written_in_whole_mib(tmp_path) -> None:
    (tmp_path / "peers").mkdir()
    run = validate_command.Validation(tmp_path, quick=True, peers={"nvbandwidth": NVB})
    text = out.nvbandwidth(out.passed(out.H2D_CE, "55.2"), mib=1)
    validate_command.run_nvbandwidth(Peer(NVB, [(0, 1.0, text), None]), run)  # type: ignore[arg-type]
    assert '"buffer_size_mib": 1,' in (tmp_path / "peers" / "nvbandwidth.json").read_text()


def test_bandwidthtest_is_given_each_runs_estimate_for_the_deadline(tmp_path) -> None:
    (tmp_path / "peers").mkdir()
    run = validate_command.Validation(tmp_path, quick=True, peers={"bandwidthTest": BT})
    peer = Peer(BT, [(0, 1.0, "x"), None])
    validate_command.run_bandwidthtest(peer, run)  # type: ignore[arg-type]
    planned = run.peer_commands()
    assert peer.calls == [(planned[0].arguments, planned[0].seconds), (planned[1].arguments, planned[1].seconds)]


# the peers' output imported


def kept_outputs(tmp_path: Path, bandwidthtest: str) -> dict[str, Path]:
    """peers/ as the runs leave it: nvbandwidth's first run died printing no JSON, its second measured;
    bandwidthTest's one run printed `bandwidthtest`."""
    (tmp_path / "peers").mkdir(parents=True, exist_ok=True)
    run = validate_command.Validation(tmp_path, quick=True, peers={"nvbandwidth": NVB, "bandwidthTest": BT})
    passing = out.nvbandwidth(out.passed(out.H2D_CE, "55.2"), out.passed(out.D2H_CE, "55.1"), mib=3, gpus=(("NVIDIA H200", "00000000:00:06"),))
    nvb = validate_command.run_nvbandwidth(Peer(NVB, [(139, 1.0, "Segmentation fault (core dumped)\n"), (0, 2.0, passing), None]), run)  # type: ignore[arg-type]
    bt = validate_command.run_bandwidthtest(Peer(BT, [(0, 1.0, bandwidthtest), None]), run)  # type: ignore[arg-type]
    return {"bandwidthTest": bt, "nvbandwidth": nvb}


def test_a_peer_with_no_figure_is_said_and_the_next_is_still_imported(run5, tmp_path) -> None:
    """Each peer's failures and what was not imported are notes, with the folder's own paths; the machine's
    facts travel with the figures; a GPU validated as cuda:0 keeps its own entry."""
    raw = kept_outputs(tmp_path, "nothing here\n")
    environment = run5["default"].environment
    notes: list[str] = []
    echoed: list[str] = []
    imported = validate_command.import_peers(raw, environment, validate_command.Validation(tmp_path), {"nvbandwidth"}, notes, echoed.append)
    said = ("no host<->device figure in the bandwidthTest output (peers/bandwidthTest.txt run 1 (bandwidthTest pinned 196608 B): no CSV"
            " line or table: run bandwidthTest again with --csv: nothing here); run bandwidthTest --htod --csv and give what it printed")
    assert notes == [f"bandwidthTest's output gave no figure: {said}",
                     "nvbandwidth: peers/nvbandwidth.json run 1 (-b 1): no JSON in nvbandwidth's output (exit 139): Segmentation fault"
                     " (core dumped)"]  # fmt: skip
    assert echoed == [f"warning: bandwidthTest's output gave no figure: {said.replace('peers/', str(tmp_path / 'peers') + os.sep)}"]
    assert imported["bandwidthTest"] is None and sorted(p.name for p in tmp_path.iterdir()) == ["peer-nvbandwidth.json", "peers"]
    saved = load(tmp_path / "peer-nvbandwidth.json")
    assert {s.device for s in saved.series} == {"cuda:0"} and "placement" not in saved.environment["peer"]
    (gpu,) = [d for d in saved.environment["devices"] if d["id"].startswith("cuda")]
    assert (gpu["id"], gpu["nvml"]["uuid"], gpu["nvml"]["numa_node"]) == ("cuda:0", UUID, 0)


def test_bandwidthtests_figures_are_saved_as_its_result_file(run5, tmp_path) -> None:
    text = out.bandwidthtest(out.csv_line("H2D-Pinned", 55.0, 196608), devices=("NVIDIA H200",))
    raw = kept_outputs(tmp_path, text)
    imported = validate_command.import_peers({"bandwidthTest": raw["bandwidthTest"]}, run5["default"].environment, validate_command.Validation(tmp_path),
                                       set(), [], print, {"bandwidthTest": NUMACTL})  # fmt: skip
    saved = load(tmp_path / "peer-bandwidthtest.json")
    assert [(s.label(), [(p.bytes, p.mbps) for p in s.points]) for s in saved.series] == [("bandwidthTest/pinned/copy/streamed@cuda:0", [(196608, 55_000.0)])]
    assert saved.environment["peer"]["placement"] == NUMACTL and imported["bandwidthTest"].series == saved.series  # type: ignore[union-attr]


def test_a_peer_shown_one_gpu_keeps_other_ids_as_they_are(run5, tmp_path) -> None:
    raw = kept_outputs(tmp_path, "")
    from xferbench.reading.peers import read_nvbandwidth

    result = read_nvbandwidth([raw["nvbandwidth"]], environment=run5["default"].environment)
    result.series[0].device = "cuda:2"
    validate_command._shown_one(result, "cuda:1")
    assert [s.device for s in result.series] == ["cuda:2", "cuda:1"]


# the peer check and the table


def test_the_peer_check_sets_the_streamed_copies_alone_beside_nvbandwidth(run5) -> None:
    """Per-call copies at a size the streamed ones lack are no part of it."""
    ours = sweeps5(run5)
    from test_validate_command_rules import set_points

    set_points(ours["large"], "raw_pinned", "streamed", {256 * MIB: 55_000.0, 1024 * MIB: 55_000.0})
    set_points(ours["default"], "raw_pinned", "streamed", {})
    peer = nvb_at(run5, {96 * MIB: 50_000.0, 256 * MIB: 55_000.0, 1024 * MIB: 55_000.0})
    assert 96 * MIB in validate_command._pick(validate_command._ours(ours), "cuda", "raw_pinned", "cuda:0", "per-call")
    check = validate_command.peers_check(validate_command._ours(ours), peer, "cuda:0")
    assert check.status == PASS and check.figure.startswith("median +0.0% over 2 sizes (worst +0.0% at 256 MiB (268 MB): xferbench 55,000"
                                                            " (large.json), nvbandwidth")  # fmt: skip


def keep(result: Result, mode: str, mbps: dict[int, float], method: str | None = None) -> Result:
    """A file's series of `mode` (and `method`) with MB/s at these sizes (bytes) only."""
    for series in result.series:
        if series.mode == mode and series.op == "copy" and method in (None, series.method):
            series.points = [p for p in series.points if p.bytes in mbps]
            for point in series.points:
                point.mbps = mbps[point.bytes]
    return result


def test_the_table_rows_are_where_a_peer_and_the_streamed_copies_both_measured(run5) -> None:
    """Streamed copies decide the rows where there are any; a peer without a figure at a row shows a dash."""
    files = sweeps5(run5)
    for stem, method, mbps in (("default", "streamed", {96 * MIB: 50_000.0}), ("large", "streamed", {256 * MIB: 51_000.0}),
                               ("default", "per-call", {}), ("large", "per-call", {1024 * MIB: 52_000.0})):  # fmt: skip
        keep(files[stem], "raw_pinned", mbps, method)
        keep(files[stem], "raw_pageable", {}, method)
    nvb = keep(nvb_at(run5, {96 * MIB: 49_000.0, 1024 * MIB: 53_000.0}), "device_to_host_memcpy_ce", {})
    bt = keep(keep(copy.deepcopy(run5["peer-bandwidthtest"]), "pageable", {}), "pinned", {256 * MIB: 48_000.0})
    table = validate_command.peers_table(validate_command._ours(files), {"nvbandwidth": nvb, "bandwidthTest": bt}, "cuda:0")
    assert table[2:] == ["| 96 MiB (101 MB) | 50,000 | – | 49,000 | – | 1.020 | – | – |",
                         "| 256 MiB (268 MB) | 51,000 | – | – | 48,000 | – | 1.062 | – |",
                         "", "xferbench's figures in this table are from default.json, large.json."]  # fmt: skip


# the plan


@pytest.fixture
def cuda_here(monkeypatch) -> None:
    """CuPy's paths as if installed, so the plan is the one a GPU machine makes."""
    for name in ("cuda", "cupy"):
        monkeypatch.setattr(BACKENDS[name], "missing", lambda: None)


def test_the_sweep_plans_on_a_gpu_machine(cuda_here) -> None:
    """The default sweep's copies and seeds, the large sweep's copies, and the link run's streamed raw pinned copy alone."""
    plans = validate_command.Validation(Path("/v"), "cuda:1", ("cupy", "cuda"), quick=True).sweep_plans()
    raw = ["cuda/raw_pinned/copy@cuda:1", "cuda/raw_pinned/copy/streamed@cuda:1", "cuda/raw_pageable/copy@cuda:1",
           "cuda/raw_pageable/copy/streamed@cuda:1"]  # fmt: skip
    assert [(p.stem, [k.label() for k in p.keys], p.frameworks) for p in plans] == [
        ("default", ["cupy/asarray/copy@cuda:1", "cupy/asarray/seed@cuda:1", *raw], ("cupy", "cuda")),
        ("large", ["cupy/asarray/copy@cuda:1", *raw], ("cupy", "cuda")),
        ("link", ["cuda/raw_pinned/copy/streamed@cuda:1"], ("cuda",))]  # fmt: skip
    assert [k.shape for k in plans[2].keys] == [(512, 512, 4)]
    torch_only = validate_command.Validation(Path("/v"), "cuda:1", ("cupy",), quick=True).sweep_plans()
    assert [p.stem for p in torch_only] == ["default", "large"]


def sim_run(max_minutes: float | None, **kwargs: Any) -> validate_command.Validation:
    run = validate_command.Validation(Path("/v"), frameworks=("sim",), peers={"nvbandwidth": NVB, "bandwidthTest": BT}, max_minutes=max_minutes, **kwargs)
    run.fit()
    return run


def test_fit_stops_at_the_peer_sizes_from_16_mib_where_that_fits() -> None:
    between = validate_command.Validation(Path("/v"), frameworks=("sim",), peers={"nvbandwidth": NVB, "bandwidthTest": BT}, nvbandwidth_samples=1,
                                    peer_sizes="from16")  # fmt: skip
    assert sim_run((between.estimate_s() + budget.STOP_GRACE_S) / 60).peer_sizes == "from16"


def test_fit_trims_the_quick_large_sweep_to_one_batch_and_never_none() -> None:
    quick = sim_run(0.0001, quick=True)
    assert quick.large_batches == (256,)
    assert quick.trimmed[-1] == "the large sweep left out batches 1, 16 of 1 MiB images (kept 256)"
    alone = sim_run(0.0001, quick=True, large_batches=(1,))
    assert alone.large_batches == (1,) and not any("large sweep" in t for t in alone.trimmed)


def test_a_trim_that_leaves_the_peers_no_size_says_none_and_the_plan_no_span(monkeypatch) -> None:
    monkeypatch.setattr(validate_command, "QUICK_BATCHES", (1,))
    run = sim_run(0.0001, quick=True)
    assert run.trimmed[1] == "the peers measured 0 of 2 sizes (none)"
    assert run.plan_lines()[4:6] == ["  nvbandwidth: 0 runs: about 0.0 min", "  bandwidthTest: 0 runs: about 0.0 min"]


# the whole command

H200 = (("NVIDIA H200", "00000000:00:06"),)


def nvbandwidth_says(args: list[str]) -> tuple[int, str]:
    """nvbandwidth -j at its -b: both copy engines at 55 GB/s, and a crash at 3 MiB."""
    mib = int(args[args.index("-b") + 1])
    if mib == 3:
        return 139, "Segmentation fault (core dumped)\n"
    return 0, out.nvbandwidth(out.passed(out.H2D_CE, "55.2"), out.passed(out.D2H_CE, "55.1"), gpus=H200, mib=mib)


def bandwidthtest_says(args: list[str]) -> tuple[int, str]:
    """bandwidthTest --csv at its --start, from pinned or pageable memory, naming the GPU it was given."""
    opts = dict(a[2:].split("=", 1) for a in args if "=" in a)
    pinned = opts["memory"] == "pinned"
    line = out.csv_line("H2D-Pinned" if pinned else "H2D-Paged", 54.0 if pinned else 20.0, int(opts["start"]))
    return 0, out.bandwidthtest(line, devices=("NVIDIA H200",), first=int(opts["device"]))


class Plots:
    """plot.figure and plot.save's stand-ins: which file's series each figure drew, under what title."""

    def __init__(self) -> None:
        self.saved: list[tuple[Path, Any]] = []

    def figure(self, picks: list[Any], title: str | None = None) -> tuple[Any, ...]:
        return ("figure", sorted({p.path.name for p in picks}), len(picks), title)

    def save(self, fig: Any, path: Path) -> Path:
        self.saved.append((path, fig))
        path.write_bytes(b"\x89PNG")
        return path


@pytest.fixture
def machine(monkeypatch, clock) -> Any:
    """The GPU machine as validate sees it: each sweep writes the H200 run's file and takes a minute; nvidia-smi,
    numactl and the peers are on PATH and answer as the real tools print, 2 s a run; plots are drawn by a stand-in."""
    from types import SimpleNamespace

    from xferbench.reading import plot

    tools = Tools(clock, answers={"nvidia-smi": lambda args: (0, f"nvidia-smi {' '.join(args)}\n"), "nvbandwidth": nvbandwidth_says,
                                  "bandwidthTest": bandwidthtest_says})  # fmt: skip
    sweeps = Sweeps(clock, took_s=60.0)
    plots = Plots()
    monkeypatch.setattr(validate_command.shutil, "which", tools.which)
    monkeypatch.setattr(validate_command, "_run", tools)
    monkeypatch.setattr(validate_command, "run_child_sweep", sweeps)
    monkeypatch.setattr(plot, "figure", plots.figure)
    monkeypatch.setattr(plot, "save", plots.save)
    probe = Probe(clock)
    monkeypatch.setattr(validate_command.calibrate, "calibrate", probe)
    return SimpleNamespace(clock=clock, tools=tools, sweeps=sweeps, plots=plots, probe=probe)


class Probe:
    """calibrate() as validate calls it: it takes `spent_s` on the clock and returns `rates` (the fallback, as where
    nothing can be measured, unless a test sets others), and keeps what it was asked."""

    def __init__(self, clock: Clock, rates: budget.Rates = budget.FALLBACK, spent_s: float = 0.0) -> None:
        self.clock, self.rates, self.spent_s, self.calls = clock, rates, spent_s, []  # type: list[tuple[Any, ...]]

    def __call__(self, device: str, index: int, has_cuda: bool, peers: dict[str, str], sweeps: int, echo: Any, env: Any, *,
                 frameworks: Sequence[str]) -> budget.Rates:  # fmt: skip
        self.calls.append((device, index, has_cuda, dict(peers), sweeps))
        self.frameworks = list(frameworks)
        self.clock.now += self.spent_s
        return self.rates.but(spent_s=self.spent_s) if self.spent_s else self.rates


def took(run: validate_command.Validation) -> str:
    return f"validate took {run.took_s:.1f} s, estimated {run.estimate_s():.1f} s"


def logged(code: int | None, command: list[str], seconds: float = 2.0) -> str:
    said = "timed out or could not start" if code is None else f"exit {code}"
    return f"{said:>30}  {seconds:7.1f} s  $ {shlex.join(command)}"


def test_validate_runs_the_sweeps_the_peers_and_nvidia_smi_and_writes_the_verdict(machine, tmp_path) -> None:
    """The plan, each sweep and peer command echoed as it runs; nvbandwidth shown the validated GPU alone and both
    peers bound to its node; every file in the folder; the verdict made of the run's own files, checks and notes."""
    folder = tmp_path / "not yet" / "validation"
    run = validate_command.Validation(folder, "cuda:1", quick=True, peers={"nvbandwidth": NVB, "bandwidthTest": BT})
    machine.sweeps.device = "cuda:1"
    echoed: list[str] = []
    checks, verdict = validate_command.run(run, echoed.append)

    assert verdict == folder / "verdict.md"
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == [
        "default.json", "default.png", "large.json", "large.png", "link.json", "link.png", "nvidia-smi-q.txt", "nvidia-smi-topo.txt",
        "peer-bandwidthtest.json", "peer-nvbandwidth.json", "peers/bandwidthTest.txt", "peers/commands.txt", "peers/nvbandwidth.json",
        "report.md", "verdict.md"]  # fmt: skip
    assert (folder / "nvidia-smi-topo.txt").read_text() == "nvidia-smi topo -m\n"
    numactl = ["/usr/bin/numactl", "--cpunodebind=0", "--membind=0"]
    nvb = [[*numactl, NVB, *c.arguments] for c in run.peer_commands() if c.peer == "nvbandwidth"]
    bt = [[*numactl, BT, *c.arguments] for c in run.peer_commands() if c.peer == "bandwidthTest"]
    assert bt[0][4:] == ["--device=1", "--htod", "--memory=pinned", "--mode=range", "--start=196608", "--end=196608", "--increment=196608", "--csv"]
    log = [logged(139 if "3" in command else 0, command) for command in nvb] + [logged(0, command) for command in bt]
    assert (folder / "peers" / "commands.txt").read_text() == "".join(line + "\n" for line in log)
    assert echoed == [*run.plan_lines(), *(f"$ {shlex.join(sweep_command(run, stem))}" for stem in ("default", "large", "link")),
                      f"nvbandwidth: {NVB}", *(f"  {line.strip()}" for line in log[:5]), f"bandwidthTest: {BT}",
                      *(f"  {line.strip()}" for line in log[5:]), took(run)]  # fmt: skip
    assert [(limit, env["PYTHONPATH"]) for _, env, limit in machine.sweeps.calls] == [(None, validate_command._python_path())] * 3
    shown = {**os.environ, "CUDA_VISIBLE_DEVICES": UUID}
    assert machine.tools.runs == [(["/usr/bin/nvidia-smi", "-q"], 120, None), (["/usr/bin/nvidia-smi", "topo", "-m"], 120, None),
                                  *((command, validate_command.PEER_TIMEOUT_S, shown) for command in nvb),
                                  *((command, validate_command.PEER_TIMEOUT_S, dict(os.environ)) for command in bt)]  # fmt: skip

    files = {stem: load(folder / f"{stem}.json") for stem in ("default", "large", "link")}
    imported = {"nvbandwidth": load(folder / "peer-nvbandwidth.json"), "bandwidthTest": load(folder / "peer-bandwidthtest.json")}
    assert {s.device for r in imported.values() for s in r.series} == {"cuda:1"}  # nvbandwidth's cuda:0 is the validated GPU
    assert [r.environment["peer"]["placement"] for r in imported.values()] == [NUMACTL, NUMACTL]
    assert [d for d in imported["nvbandwidth"].environment["devices"] if d["id"] == "cuda:1"][0]["nvml"]["uuid"] == UUID
    assert checks == checks_of(files, imported, "cuda:1")
    assert [c.status for c in checks][-1] == PASS and checks[-1].figure.startswith("median +0.4% over 2 sizes")
    crash = "nvbandwidth: peers/nvbandwidth.json run 2 (-b 3): no JSON in nvbandwidth's output (exit 139): Segmentation fault (core dumped)"
    assert verdict.read_text() == validate_command.verdict_page(run, files, imported, checks, [crash])
    assert f"\n- {crash}\n" in verdict.read_text() and "| 256 MiB (268 MB) | 55,473 | 55,310 | 55,200 | 54,000 |" in verdict.read_text()

    assert machine.plots.saved == [(folder / f"{stem}.png", ("figure", [f"{stem}.json"], len(select([folder / f"{stem}.json"])[0]),
                                                             f"xferbench validation: {stem}")) for stem in ("default", "large", "link")]  # fmt: skip
    report = (folder / "report.md").read_text()
    assert report.startswith("## xferbench GPU validation\n\nTransfer throughput: 35 series from 5 result file(s): default (") and "\n![xferbench plot](default.png)\n" in report
    assert "nvbandwidth/host_to_device_memcpy_ce" in report and "bandwidthTest/pageable" in report
    assert report.endswith("\n### Validation checks\n\n" + validation_checks.render(checks))
    assert run.took_s == 3 * 60.0 + 19 * 2.0


def test_a_run_within_a_budget_says_what_it_could_not_do(machine, tmp_path, monkeypatch) -> None:
    """Into a folder that exists: nvidia-smi and numactl missing, two sweeps writing nothing, each sweep limited to
    the time the later steps leave, each peer run to the deadline less the finish and skipped past it: each said,
    in the order it happened, and the budget's line with the time taken. (No stop grace: the stand-in sweeps stop at
    once, and the plan is trimmed to the whole budget, as the figures below count it.)"""
    monkeypatch.setattr(budget, "STOP_GRACE_S", 0.0)
    folder = tmp_path / "validation"
    folder.mkdir()
    machine.tools.on_path = ()
    machine.tools.seconds = 20.0
    machine.tools.answers["nvbandwidth"] = lambda args: (0, out.nvbandwidth(out.passed(out.H2D_CE, "55.2"), out.errored(out.D2H_CE), gpus=H200))
    machine.sweeps.took_s = 30.0
    machine.sweeps.codes = {"default": 1, "large": None}  # the large sweep stopped at its limit before it saved
    machine.sweeps.writes = {"default": None, "large": None, "link": sweep_text("link", "cuda:0").replace(UUID, "")}
    run = validate_command.Validation(folder, quick=True, peers={"nvbandwidth": NVB, "bandwidthTest": BT}, max_minutes=3)
    echoed: list[str] = []
    checks, verdict = validate_command.run(run, echoed.append)

    assert [limit for _, _, limit in machine.sweeps.calls] == [pytest.approx(180 - 30 * at - after(run, stem))
                                                               for at, stem in enumerate(("default", "large", "link"))]  # fmt: skip
    nvb = [[NVB, *c.arguments] for c in run.peer_commands() if c.peer == "nvbandwidth"]
    assert [(command, timeout, env) for command, timeout, env in machine.tools.runs] == [
        (command, left, dict(os.environ)) for command, left in zip(nvb, (60.0, 40.0, 20.0))]  # 150 s: the finish's 30 s kept
    unbound = "ran without NUMA binding (numactl is not on PATH): its pinned figures may reflect where its memory landed"
    every = "nvbandwidth measured every GPU it saw: the validated GPU's UUID is not known to show it that one alone"
    skipped = "bandwidthTest's remaining runs were skipped: 0 s of the --max-minutes budget were left and the next is estimated to need 2 s"
    kept = folder / "peers" / "bandwidthTest.txt"
    no_figure = (f"bandwidthTest's output gave no figure: {kept}: not bandwidthTest's output (no '[CUDA Bandwidth Test]' banner, CSV line"
                 " or table); run bandwidthTest with --csv and save what it prints")  # fmt: skip
    smi = ["nvidia-smi-q.txt: nvidia-smi is not on PATH", "nvidia-smi-topo.txt: nvidia-smi is not on PATH"]
    stopped = (f"large.json was stopped after {180 - 30 - after(run, 'large'):.0f} s, keeping what it had measured, so that the rest of"
               " the run fits its --max-minutes budget")  # fmt: skip
    assert echoed == [*run.plan_lines(), *(f"warning: {note}" for note in smi),
                      *(f"$ {shlex.join(sweep_command(run, stem))}" for stem in ("default", "large")), f"warning: {stopped}",
                      f"$ {shlex.join(sweep_command(run, 'link'))}",
                      f"nvbandwidth: {NVB} ({every}; nvbandwidth {unbound})", *(f"  {logged(0, command, 20.0).strip()}" for command in nvb),
                      f"bandwidthTest: {BT} (bandwidthTest {unbound})", f"warning: {no_figure}", took(run)]  # fmt: skip
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == [
        "link.json", "link.png", "peer-nvbandwidth.json", "peers/bandwidthTest.txt", "peers/commands.txt", "peers/nvbandwidth.json",
        "report.md", "verdict.md"]  # fmt: skip
    assert kept.read_text() == ""

    files = {"default": None, "large": None, "link": load(folder / "link.json")}
    imported = {"nvbandwidth": load(folder / "peer-nvbandwidth.json"), "bandwidthTest": None}
    assert imported["nvbandwidth"].environment["peer"]["placement"] == "without NUMA binding (numactl is not on PATH)"
    assert checks == checks_of(files, imported) and checks[0].status == FAIL
    assert checks[-1] == Verdict(  # the sweeps wrote nothing: link.json's 256 MiB stands beside nvbandwidth, whose placement differs
        validate_command.peers_check({}, None, "cuda:0").name, PASS,
        "median +0.5% over 1 size (worst +0.5% at 256 MiB (268 MB): xferbench 55,468 (link.json), nvbandwidth 55,200 MB/s); nvbandwidth"
        " did not run on the binding xferbench's workers had; placement: xferbench bound to CPUs 0-15, memory preferred on NUMA node 0;"
        " nvbandwidth without NUMA binding (numactl is not on PATH)")
    errored = "device_to_host_memcpy_ce failed (Running, Error): nvbandwidth marked it Error and kept no message"
    d2h = (f"nvbandwidth: nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed@cuda:0: peers/nvbandwidth.json run 1 (-b 16): {errored};"
           f" peers/nvbandwidth.json run 2 (-b 48): {errored}; and 1 more")  # fmt: skip
    notes = [*smi, stopped, every, f"nvbandwidth {unbound}", f"bandwidthTest {unbound}", skipped, d2h, no_figure.replace(f"{folder}{os.sep}", "")]
    assert verdict.read_text() == validate_command.verdict_page(run, files, imported, checks, notes)
    assert ("\n- Placement: nvbandwidth ran without NUMA binding (numactl is not on PATH); xferbench's workers were bound to CPUs 0-15,"
            " memory preferred on NUMA node 0. Their figures may differ by where the memory sat") in verdict.read_text()
    assert run.took_s == 150.0 and "\nRun within --max-minutes 3 (estimated 2.8 min, took 2.5 min): nvbandwidth took 1 sample" in verdict.read_text()
    assert machine.plots.saved == [(folder / "link.png", ("figure", ["link.json"], 1, "xferbench validation: link"))]
    report = (folder / "report.md").read_text()
    assert "![xferbench plot]" not in report and "nvbandwidth/host_to_device_memcpy_ce" in report
    assert "| nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed@cuda:0 (node07) **FAILED** |" in report  # no point, still listed


def test_a_sweep_stopped_before_its_first_point_costs_only_its_figure(machine, tmp_path) -> None:
    """On a busy machine the link run can be stopped for the budget before it measured a point: its file holds
    the series and no point. The run still draws the others, writes its report and verdict, and says so."""
    stopped = json.loads(sweep_text("link", "cuda:0"))
    stopped["status"] = "interrupted"
    for series in stopped["series"]:
        series["points"] = []
    machine.sweeps.writes = {"link": json.dumps(stopped)}
    folder = tmp_path / "validation"
    run = validate_command.Validation(folder, quick=True)
    checks, verdict = validate_command.run(run, lambda line: None)
    assert [path.name for path, _ in machine.plots.saved] == ["default.png", "large.png"]
    assert (folder / "report.md").exists() and verdict.exists()
    assert "link.json holds no measured point: no figure was drawn for it" in verdict.read_text()


def test_a_run_whose_sweeps_wrote_nothing_still_writes_its_verdict(machine, tmp_path) -> None:
    """No file, no peer: no plot and no report, the machine's facts unknown, and the verdict says what was not written."""
    machine.sweeps.codes = {"default": 1, "large": 1, "link": 1}
    machine.sweeps.writes = {"default": None, "large": None, "link": None}
    folder = tmp_path / "validation"
    run = validate_command.Validation(folder, quick=True)
    echoed: list[str] = []
    checks, verdict = validate_command.run(run, echoed.append)
    assert sorted(p.name for p in folder.iterdir()) == ["nvidia-smi-q.txt", "nvidia-smi-topo.txt", "verdict.md"]
    assert checks[0].figure == "default.json: not written; large.json: not written; link.json: not written"
    assert checks == checks_of({"default": None, "large": None, "link": None}, {})
    assert verdict.read_text() == validate_command.verdict_page(run, {"default": None, "large": None, "link": None}, {}, checks, [])
    assert machine.plots.saved == [] and echoed[-2:] == [f"$ {shlex.join(sweep_command(run, 'link'))}", took(run)]


def test_the_run_plans_trims_and_limits_its_sweeps_at_the_rates_its_probe_measured(machine, tmp_path) -> None:
    """The probe runs first and its seconds count against the budget (as nvidia-smi's two runs of 2 s do); a budget its rates fit trims nothing, though the
    fallback's would have trimmed; the plan says the rates are measured; each sweep's limit is counted at them."""
    fast = budget.FALLBACK.but(pinned_bps=55.5e9, pageable_bps=8.4e9, point_s=0.2, sweep_start_s=3.0, worker_start_s=2.0,
                               nvbandwidth_start_s=0.4, bandwidthtest_start_s=0.4, finish_s=10.0, measured=tuple(budget.FIELDS))  # fmt: skip
    machine.probe.rates, machine.probe.spent_s = fast, 8.0
    machine.sweeps.took_s = 1.0
    peers = {"nvbandwidth": NVB, "bandwidthTest": BT}
    planned = validate_command.Validation(tmp_path / "planned", quick=True, peers=dict(peers), rates=fast.but(spent_s=8.0))
    minutes = (planned.estimate_s() + budget.STOP_GRACE_S) / 60 + 0.01
    at_fallback = validate_command.Validation(tmp_path / "planned", quick=True, peers=dict(peers), max_minutes=minutes)
    at_fallback.fit()
    assert at_fallback.trimmed  # the fallback's rates would not have fitted this budget
    run = validate_command.Validation(tmp_path / "v", quick=True, peers=dict(peers), max_minutes=minutes)
    echoed: list[str] = []
    validate_command.run(run, echoed.append)
    assert machine.probe.calls == [("cuda:0", 0, run.has_link_run, peers, len(run.sweeps()))]
    assert machine.probe.frameworks == [name for plan in planned.sweep_plans() for name in plan.frameworks]  # each one's worker start timed
    assert run.rates == fast.but(spent_s=8.0) and run.trimmed == [] and run.peer_sizes == "all" and run.large_batches is None
    assert echoed[:3] == run.plan_lines()[:3] and echoed[0].startswith(f"plan: about {budget.minutes(planned.estimate_s())} in all")
    assert echoed[1].endswith("measured here by a 8.0 s probe") and echoed[2] == "  the probe: 8.0 s, spent"
    assert [limit for _, _, limit in machine.sweeps.calls] == [pytest.approx(minutes * 60 - 8.0 - 2 * 2.0 - 1.0 * at - after(run, stem))
                                                               for at, stem in enumerate(run.sweeps())]  # fmt: skip
