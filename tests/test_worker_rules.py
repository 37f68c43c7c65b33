"""Rules of the worker protocol (xferbench.measuring.worker), checked in-process with stand-ins."""

from __future__ import annotations

import io
import json
import os
import queue
import re
import signal
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import xferbench
from xferbench.core.errors import XferbenchError
from xferbench.core.numa import BIND_ENV, Binding
from xferbench.core.results import Point, Series
from xferbench.core.spec import SeriesKey, Spec
from xferbench.core.timing import TimingConfig
from xferbench.measuring import worker
from xferbench.measuring.backends.base import Backend, SeriesInfo, Transfer

KEY = SeriesKey("numpy", "copy", "copy", "cpu", (2, 3))
TIMING = TimingConfig(max_time_s=1.5)


class StandInTransfer(Transfer):
    virtual = True

    def __call__(self) -> None:
        return None

    def verify(self) -> None:
        return None


class StandIn(Backend):
    name = "standin"

    def __init__(self) -> None:
        self.calls: list[Any] = []

    def describe(self, key: Any, params: dict[str, Any]) -> SeriesInfo:
        return SeriesInfo("stand-in", "host-to-host", "perf_counter", "none")

    def host_bytes(self, spec: Spec) -> int:
        return 0

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return StandInTransfer()

    def devices(self) -> list[str]:
        return ["cpu", "cuda:0"]

    def environment(self) -> dict[str, Any]:
        return {"version": "1"}

    def absent_reason(self, device: str, present: list[str]) -> str:
        return f"no {device} among {present}"


class Stdin(io.StringIO):
    def __init__(self, fail: BaseException | None = None, close_fails: bool = False) -> None:
        super().__init__()
        self.fail, self.close_fails, self.flushes, self.was_closed = fail, close_fails, 0, False

    def write(self, text: str) -> int:
        if self.fail:
            raise self.fail
        return super().write(text)

    def flush(self) -> None:
        self.flushes += 1

    def close(self) -> None:
        self.was_closed = True
        if self.close_fails:
            raise OSError("broken pipe")

    def sent(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.getvalue().splitlines()]


class Process:
    """A worker process stand-in: scripted stdout lines, an exit status, recorded waits and kills."""

    def __init__(self, lines: list[Any], code: int = 0, pid: int = 4321, alive: bool = True,
                 stuck: tuple[float, ...] = (), log: str = "", stdin: Stdin | None = None) -> None:  # fmt: skip
        self.stdin = stdin or Stdin()
        self.stdout = io.StringIO("".join(line if isinstance(line, str) else json.dumps(line) + "\n" for line in lines))
        self.code, self.pid, self.alive, self.stuck, self.log = code, pid, alive, stuck, log
        self.waits: list[float | None] = []
        self.kills = 0
        self.signals: list[int] = []

    def poll(self) -> int | None:
        return None if self.alive else self.code

    def wait(self, timeout: float | None = None) -> int:
        self.waits.append(timeout)
        if timeout in self.stuck:
            raise subprocess.TimeoutExpired("worker", timeout)
        self.alive = False
        return self.code

    def kill(self) -> None:
        self.kills += 1

    def send_signal(self, signum: int) -> None:
        self.signals.append(signum)


HELLO = {"hello": {"devices": ["cpu", "cuda:0"], "environment": {"python": "3"}}}


@pytest.fixture
def spawn(monkeypatch, tmp_path):
    """Popen replaced: each start takes the next scripted Process and records how it was started."""
    folder = tmp_path / "src"
    folder.mkdir()
    monkeypatch.setattr(worker, "_source_folder", lambda: folder)
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setenv(BIND_ENV, "stale")
    monkeypatch.delenv("PYTHONIOENCODING", raising=False)
    queue_: list[Process] = []
    started: list[tuple[list[str], dict[str, Any]]] = []

    def popen(args, **kw):
        started.append((args, kw))
        process = queue_.pop(0)
        kw["stderr"].write(process.log)
        kw["stderr"].flush()
        return process

    monkeypatch.setattr(worker.subprocess, "Popen", popen)
    return types.SimpleNamespace(queue=queue_, started=started, folder=folder)


def runner(spawn, *processes: Process, **kw: Any) -> worker.WorkerRunner:
    spawn.queue.extend(processes)
    made = worker.WorkerRunner(StandIn(), python=kw.pop("python", "py"), start_timeout_s=7.0, **kw)
    made.replies.thread.join()
    return made


# --- the pure parts -------------------------------------------------------------------------------------


def test_logged_errors_keep_distinct_error_lines_without_prefix():
    """Only absl and old-TensorFlow error lines count, stripped of their prefix, each once."""
    text = "\n".join([
        "E0000 00:00:1795356588.11 13315 file.cc:52] cuInit failed  ",
        "W0000 00:00:1.0 1 file.cc:1] a warning",
        "2021-08-01 12:00:00.000000: E tensorflow/x.cc:9] tf said a] b",
        "2021-08-01 12:00:00.000000: W tensorflow/x.cc:9] tf warned",
        " E0000 0 indented] no",
        "E1234 5 whole line",
        "E0000 00:00:2.0 7 other.cc:1] cuInit failed",
        "I0000 00:00:1.0 1 file.cc:1] info",
    ])  # fmt: skip
    assert worker.logged_errors(text) == ["cuInit failed", "tf said a] b", "E1234 5 whole line"]
    assert worker.logged_errors("") == []


def test_errors_said_is_the_first_cut_to_300_and_a_count():
    """One error line, cut to 300 characters, and how many more there were."""
    assert worker.errors_said([]) == ""
    assert worker.errors_said(["x" * 400]) == "x" * 300
    assert worker.errors_said(["a", "b"]) == "a (+1 more)"
    assert worker.errors_said(["a", "b", "c"]) == "a (+2 more)"


def test_take_header_sets_header_fields_only_and_keeps_a_sweep_numa_record():
    """Header fields are copied; others are not; an empty worker numa keeps the sweep's record."""
    series = Series.of(KEY)
    series.numa = {"reason": "not bound"}
    worker.take_header(series, {"device_name": "gpu", "note": None, "status": "failed", "reason": "r",
                                "params": {"a": 1}, "numa": {}, "framework": "other", "clock": "c",
                                "sync": "s", "device_clock": "d", "transfer": "t"})  # fmt: skip
    assert (series.device_name, series.note, series.status, series.reason, series.params) == ("gpu", None, "failed", "r", {"a": 1})
    assert (series.clock, series.sync, series.device_clock, series.transfer) == ("c", "s", "d", "t")
    assert series.framework == "numpy" and series.numa == {"reason": "not bound"}
    worker.take_header(series, {"numa": {"node": 1}})
    assert series.numa == {"node": 1}
    blank = Series.of(KEY)
    blank.note = "kept"
    worker.take_header(blank, {"numa": {}})
    assert blank.numa == {} and blank.note == "kept"
    worker.take_header(blank, {"numa": None})
    assert blank.numa is None


def test_header_holds_every_header_field():
    """A series header is exactly the HEADER_FIELDS of the series."""
    series = Series.of(KEY)
    series.note, series.numa = "n", {"node": 0}
    header = worker._header(series)
    assert list(header) == list(worker.HEADER_FIELDS)
    assert header["note"] == "n" and header["numa"] == {"node": 0} and header["status"] == "ok"


def test_how_ended_reads_signals_windows_status_and_exit_codes(monkeypatch):
    """A negative status is a signal, a large one an NTSTATUS, 1 after a kill on Windows a kill."""
    assert worker.how_ended(-9) == "was killed by SIGKILL"
    assert worker.how_ended(-200) == "was killed by signal 200"
    assert worker.how_ended(0) == "exited with status 0"
    assert worker.how_ended(1, killed=True) == "exited with status 1"
    assert worker.how_ended(0xC0000005) == "ended with Windows status 0xC0000005 (access violation)"
    assert worker.how_ended(0xC0000000) == "ended with Windows status 0xC0000000"
    assert worker.how_ended(0xBFFFFFFF) == "exited with status 3221225471"
    monkeypatch.setattr(worker, "sys", types.SimpleNamespace(platform="win32"))
    assert worker.how_ended(1, killed=True) == "was killed (TerminateProcess)"
    assert worker.how_ended(1) == "exited with status 1"
    assert worker.how_ended(2, killed=True) == "exited with status 2"
    assert worker.how_ended(-2, killed=True) == "was killed by SIGINT"


# --- the source folder ----------------------------------------------------------------------------------


def test_source_folder_links_the_package(monkeypatch, tmp_path):
    """The worker's folder holds a link named xferbench to this package, in a fresh temporary folder."""
    monkeypatch.setattr(worker.tempfile, "tempdir", str(tmp_path))
    folder = worker._source_folder()
    assert folder.parent == tmp_path and folder.name.startswith("xferbench-worker-")
    link = folder / "xferbench"
    assert link.is_symlink() and link.resolve() == Path(xferbench.__file__).resolve().parent
    assert sorted(p.name for p in folder.iterdir()) == ["xferbench"]


@pytest.mark.parametrize("refusal", [OSError("no links"), NotImplementedError("no links")])
def test_source_folder_copies_where_links_are_refused(monkeypatch, tmp_path, refusal):
    """A refused link falls back to a copy without __pycache__."""
    monkeypatch.setattr(worker.tempfile, "tempdir", str(tmp_path))

    def refuse(*a, **k):
        raise refusal

    copies = []
    monkeypatch.setattr(worker.Path, "symlink_to", refuse)
    monkeypatch.setattr(worker.shutil, "copytree", lambda src, dst, ignore=None: copies.append((src, dst, ignore)))
    folder = worker._source_folder()
    [(src, dst, ignore)] = copies
    assert src == Path(xferbench.__file__).resolve().parent and dst == folder / "xferbench"
    assert ignore("x", ["__pycache__", "a.py"]) == {"__pycache__"}


@pytest.mark.parametrize("error, said", [(OSError(28, "No space left"), "No space left"), (OSError("plain"), "plain")])
def test_source_folder_says_why_a_copy_failed_and_cleans_up(monkeypatch, tmp_path, error, said):
    """A failed copy removes the folder and says where, why and what to do."""
    monkeypatch.setattr(worker.tempfile, "tempdir", str(tmp_path))

    def refuse(*a, **k):
        raise OSError("no links")

    def fail(*a, **k):
        raise error

    monkeypatch.setattr(worker.Path, "symlink_to", refuse)
    monkeypatch.setattr(worker.shutil, "copytree", fail)
    with pytest.raises(XferbenchError) as raised:
        worker._source_folder()
    [folder] = [p for p in tmp_path.iterdir() if p.name.startswith("xferbench-worker-")] or [None]
    assert folder is None or not folder.exists()
    assert str(raised.value).startswith(f"cannot copy xferbench into {tmp_path}{os.sep}xferbench-worker-")
    assert str(raised.value).endswith(f" for a worker: {said}; free space there or point TMPDIR (TEMP on Windows) elsewhere")
    assert raised.value.__suppress_context__ and raised.value.__cause__ is None
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("error, said", [(OSError(28, "No space left"), "No space left"), (OSError("plain"), "plain")])
def test_source_folder_says_why_no_folder_could_be_made(monkeypatch, error, said):
    """A folder that cannot be made names the temporary folder and the cure."""

    def fail(*a, **k):
        raise error

    monkeypatch.setattr(worker.tempfile, "mkdtemp", fail)
    with pytest.raises(XferbenchError) as raised:
        worker._source_folder()
    assert str(raised.value) == (f"cannot make a folder for a worker in {worker.tempfile.gettempdir()}: {said};"
                                 " free space there or point TMPDIR (TEMP on Windows) elsewhere")  # fmt: skip
    assert raised.value.__suppress_context__


# --- the local runner and the start line ----------------------------------------------------------------


def test_local_runner_asks_its_backend_and_measures_here(monkeypatch):
    """LocalRunner passes everything to the backend; a binding is recorded as not applied."""
    backend = StandIn()
    local = worker.LocalRunner(backend)
    assert local.backend is backend
    assert local.devices() == ["cpu", "cuda:0"] and local.environment() == {"version": "1"}
    assert local.absent_reason("cuda:1", ["cpu"]) == "no cuda:1 among ['cpu']"
    calls = []
    monkeypatch.setattr(worker, "measure_series", lambda *a, **k: calls.append((a, k)))
    series, start, point = Series.of(KEY), (lambda s, b: None), (lambda s, p: None)
    local.measure_series(KEY, [1, 2], {"p": 1}, TIMING, series, start, point, Binding((0,), 0))
    assert calls == [((backend, KEY, [1, 2], {"p": 1}, TIMING, series, start, point), {})]
    assert series.numa == {"reason": "not bound: measured in the main process"}
    other = Series.of(KEY)
    local.measure_series(KEY, [1], {}, TIMING, other)
    assert calls[-1] == ((backend, KEY, [1], {}, TIMING, other, None, None), {}) and other.numa == {}
    assert local.close() is None


def test_start_line_names_a_moment_just_ahead_or_none_when_broken(monkeypatch):
    """Every party gets the same start, MARGIN_S after the last arrives; a broken line gives None."""
    monkeypatch.setattr(worker, "time", types.SimpleNamespace(monotonic=lambda: 100.0))
    line = worker.StartLine(1)
    assert line.at == 0.0 and line.barrier.parties == 1
    assert line.meet(1.0) == 100.02
    three = worker.StartLine(3)
    assert three.barrier.parties == 3
    three.abort()
    assert three.meet(1.0) is None
    assert three.at == 0.0


# --- reading a worker's stdout ---------------------------------------------------------------------------


class ScriptedQueue:
    def __init__(self, clock: list[float], items: list[Any]) -> None:
        self.clock, self.items, self.waits = clock, items, []

    def get(self, timeout: float) -> str:
        self.waits.append(timeout)
        self.clock[0] += timeout
        item = self.items.pop(0)
        if item is queue.Empty:
            raise queue.Empty
        return item


def test_replies_hand_out_lines_then_the_end_for_ever():
    """Each line in order, then "" at the end and on every later read."""
    replies = worker.Replies(io.StringIO("a\nb\n"), "reader")
    assert replies.thread.name == "reader" and replies.thread.daemon
    assert [replies.next(), replies.next(1.0)] == ["a\n", "b\n"]
    assert replies.ended is False
    assert replies.next() == "" and replies.ended is True
    replies.lines.put("late\n")
    assert replies.next() == ""


class Broken(io.StringIO):
    def __init__(self, error: BaseException) -> None:
        super().__init__("x\n")
        self.error, self.reads, self.closed_ = error, 0, 0

    def readline(self, *a) -> str:
        self.reads += 1
        if self.reads > 1:
            raise self.error
        return super().readline()

    def close(self) -> None:
        self.closed_ += 1
        raise OSError("close")


@pytest.mark.parametrize("error", [OSError("broken"), ValueError("closed")])
def test_replies_end_on_a_broken_stream_and_close_it(error):
    """A read error is the end of the stream; the reader closes the stream and survives a failing close."""
    stream = Broken(error)
    replies = worker.Replies(stream, "r")
    replies.thread.join()
    assert [replies.lines.get_nowait(), replies.lines.get_nowait()] == ["x\n", ""]
    assert replies.lines.empty() and stream.closed_ == 1


def test_replies_stream_is_closed_at_the_end():
    """The reader closes a stream that ended normally."""
    stream = io.StringIO("")
    replies = worker.Replies(stream, "r")
    replies.thread.join()
    assert stream.closed and replies.next() == ""


def test_replies_wait_in_slices_until_the_deadline(monkeypatch):
    """Waits are cut into WAIT_SLICE_S slices; at the deadline the answer is None."""
    clock = [50.0]
    monkeypatch.setattr(worker, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    monkeypatch.setattr(worker, "WAIT_SLICE_S", 0.25)
    replies = worker.Replies(io.StringIO(""), "r")
    replies.thread.join()
    replies.lines = ScriptedQueue(clock, [queue.Empty, queue.Empty, queue.Empty])
    assert replies.next(0.5) is None
    assert replies.lines.waits == [0.25, 0.25] and replies.ended is False
    replies.lines = ScriptedQueue(clock, [queue.Empty, "z\n"])
    assert replies.next(0.375) == "z\n"
    assert replies.lines.waits == [0.25, 0.125]
    replies.lines = ScriptedQueue(clock, [queue.Empty, queue.Empty, queue.Empty, "y\n"])
    assert replies.next() == "y\n" and replies.lines.waits == [0.25] * 4
    replies.lines = ScriptedQueue(clock, [])
    assert replies.next(0) is None and replies.lines.waits == []


# --- the worker runner -------------------------------------------------------------------------------------


def test_an_interpreter_says_its_version_or_nothing(tmp_path, monkeypatch):
    """python_version runs the interpreter's -c probe with no stdin: this Python's own version; None from one that is
    missing, fails, answers something else, or does not answer in time."""
    assert worker.python_version(sys.executable) == tuple(sys.version_info[:3])
    assert worker.python_version(str(tmp_path / "missing")) is None

    def interpreter(name: str, script: str) -> str:
        path = tmp_path / name
        path.write_text(f"#!/bin/sh\n{script}\n")
        path.chmod(0o755)
        return str(path)

    assert worker.python_version(interpreter("says", "printf '3.8.18'")) == (3, 8, 18)
    assert worker.python_version(interpreter("fails", "printf '3.8.18'; exit 1")) is None
    assert worker.python_version(interpreter("other", "echo hello")) is None
    assert worker.python_version(interpreter("reads", "cat; printf '3.9.1'")) == (3, 9, 1)  # stdin is empty, never the caller's
    monkeypatch.setattr(worker, "PROBE_TIMEOUT_S", 0.2)
    assert worker.python_version(interpreter("hangs", "exec sleep 30")) is None


def test_an_interpreter_older_than_the_worker_needs_is_refused_in_one_line():
    """Below WORKER_PYTHON: which interpreter, its version, the version needed, what to install; else, or unknown, nothing."""
    with pytest.raises(XferbenchError) as refused:
        worker.check_python("/opt/py/bin/python", StandIn(), (3, 9, 18))
    assert str(refused.value) == ("--python standin=/opt/py/bin/python: that is Python 3.9.18, and the standin worker needs Python"
                                  " 3.10 or newer; give --python standin= a Python 3.10 or newer that has numpy installed")  # fmt: skip
    torch = types.SimpleNamespace(name="torch", module="torch")
    with pytest.raises(XferbenchError, match="that is Python 2.7.18, .* that has numpy and torch installed$"):
        worker.check_python("python2", torch, (2, 7, 18))
    for fine in ((3, 10, 0), (3, 14, 2), None):
        worker.check_python("python", torch, fine)


def test_the_worker_needs_the_python_the_package_says_it_needs():
    """WORKER_PYTHON is pyproject.toml's requires-python: the worker imports the package's own modules."""
    pyproject = (Path(xferbench.__file__).resolve().parent.parent / "pyproject.toml").read_text()
    found = re.search(r'^requires-python = ">=(\d+)\.(\d+)"$', pyproject, re.MULTILINE)
    assert found and worker.WORKER_PYTHON == (int(found.group(1)), int(found.group(2)))


def test_worker_starts_with_its_python_folder_and_environment(spawn):
    """The worker runs -m xferbench.measuring.worker NAME in the source folder, with PYTHONPATH and no binding."""
    made = runner(spawn, Process([HELLO], pid=77))
    [(args, kw)] = spawn.started
    assert args == ["py", "-m", "xferbench.measuring.worker", "standin"]
    assert kw["cwd"] == spawn.folder and kw["stdin"] == subprocess.PIPE and kw["stdout"] == subprocess.PIPE
    assert kw["stderr"] is made.log and kw["encoding"] == "utf-8" and kw["bufsize"] == 1
    env = kw["env"]
    assert env["PYTHONPATH"] == f"{spawn.folder}{os.pathsep}/elsewhere" and env["PYTHONIOENCODING"] == "utf-8"
    assert BIND_ENV not in env and made.env[BIND_ENV] == "stale"
    assert set(kw) == {"cwd", "stdin", "stdout", "stderr", "encoding", "bufsize", "env"}
    assert made.replies.thread.name == "standin worker 77" and made.pid == 77
    assert (made.start_timeout_s, made.python, made.folder, made.binding) == (7.0, "py", spawn.folder, None)
    assert (made.first_hello, made.startup_errors, made.log_start, made._hello, made.dead) == (None, [], 0, None, None)
    assert (made.used, made.busy, made.killed) == (False, False, False)
    assert made.log.encoding == "utf-8" and made.log.errors == "replace"
    made.close()


def test_worker_environment_keeps_a_set_encoding_and_adds_a_binding(spawn, monkeypatch):
    """A set PYTHONIOENCODING stays; a binding goes in BIND_ENV; no PYTHONPATH leaves only the folder."""
    monkeypatch.setenv("PYTHONIOENCODING", "latin-1")
    monkeypatch.delenv("PYTHONPATH")
    binding = Binding((0, 1), 1)
    made = runner(spawn, Process([HELLO]), python=None, binding=binding)
    env = spawn.started[0][1]["env"]
    assert env["PYTHONIOENCODING"] == "latin-1" and env[BIND_ENV] == binding.to_env()
    assert env["PYTHONPATH"] == str(spawn.folder) and made.binding == binding
    assert spawn.started[0][0][0] == sys.executable and made.python == sys.executable
    made.close()


def test_a_worker_given_an_environment_starts_from_it_and_not_this_processes(spawn):
    """validate's probe starts workers from the environment its sweeps get (their PYTHONPATH first), not its own."""
    made = runner(spawn, Process([HELLO]), env={"PYTHONPATH": "/the/sweeps", "ONLY_THERE": "1"})
    env = spawn.started[0][1]["env"]
    assert env["PYTHONPATH"] == f"{spawn.folder}{os.pathsep}/the/sweeps" and env["ONLY_THERE"] == "1"
    assert "PATH" not in env and BIND_ENV not in env  # nothing of this process's own environment
    made.close()


@pytest.mark.parametrize("error, said", [(OSError(2, "No such file"), "No such file"), (OSError("odd"), "odd")])
def test_worker_that_cannot_start_says_why(spawn, monkeypatch, error, said):
    """A failed start is a one-line error naming the framework and interpreter; the folder goes."""

    def refuse(args, **kw):
        raise error

    monkeypatch.setattr(worker.subprocess, "Popen", refuse)
    with pytest.raises(XferbenchError) as raised:
        worker.WorkerRunner(StandIn(), python="py")
    assert str(raised.value) == f"cannot start a standin worker with py: {said}"
    assert raised.value.__suppress_context__ and not spawn.folder.exists()


def test_hello_describes_the_framework_and_keeps_startup_errors(spawn):
    """The first hello is the framework's; error lines logged before it are kept; noise stays out of deaths."""
    log = "E0000 00:00:1.0 1 a.cc:1] failed call to cuInit\nE0000 00:00:1.0 1 b.cc:1] second\n"
    made = runner(spawn, Process([HELLO], log=log))
    assert made.hello() == HELLO["hello"] and made.hello() is made.first_hello
    assert made.startup_errors == ["failed call to cuInit", "second"] and made.log_start == len(log)
    assert made.devices() == ["cpu", "cuda:0"] and made.environment() == {"python": "3"}
    assert made.absent_reason("cuda:1", ["cpu"]) == "no cuda:1 among ['cpu']; at start-up it logged: failed call to cuInit (+1 more)"
    assert made.absent_reason("cpu", []) == "no cpu among []"
    made.startup_errors = []
    assert made.absent_reason("cuda:1", []) == "no cuda:1 among []"
    made.close()


def test_hello_error_stops_the_worker(spawn):
    """A worker that says error is stopped; the first one's error is an XferbenchError, a later one's a death."""
    process = Process([{"error": "no cuda"}])
    made = runner(spawn, process)
    with pytest.raises(XferbenchError, match="^no cuda$"):
        made.hello()
    assert made.dead == "no cuda" and process.stdin.sent() == [{"quit": True}] and process.waits == [10]
    again = runner(spawn, Process([{"error": "later"}]))
    again.first_hello = {"devices": []}
    with pytest.raises(worker.WorkerDied, match="^later$"):
        again.hello()
    assert again.dead == "later"


def test_hello_that_never_comes_names_the_python(spawn):
    """A worker silent past the start timeout is killed; the first says which python failed."""
    made = runner(spawn, Process([], code=-9))
    waits = []
    made.replies = types.SimpleNamespace(next=lambda t=None: waits.append(t))
    with pytest.raises(XferbenchError) as raised:
        made.hello()
    assert str(raised.value) == "the standin worker process was killed by SIGKILL after not starting within 7 s (python: py)"
    assert waits == [7.0] and made.process.kills == 1 and made.killed
    later = runner(spawn, Process([], code=3))
    later.first_hello = {"devices": []}
    with pytest.raises(worker.WorkerDied) as died:
        later.hello()
    assert str(died.value) == "the standin worker process exited with status 3"


def test_receive_reports_end_garbage_and_silence(spawn):
    """End of stream, a cut message and silence each make a death with its own reason and log tail."""
    made = runner(spawn, Process([HELLO], code=1, log="noise\n"))
    made.hello()
    made.log.write("one\n\n  two  \nthree\nfour\n")
    with pytest.raises(worker.WorkerDied) as died:
        made._receive(5.0)
    assert str(died.value) == "the standin worker process exited with status 1; its last output: two | three | four"
    assert made.process.kills == 0 and made.process.waits == [30.0]
    with pytest.raises(worker.WorkerDied) as again:
        made._receive(5.0)
    assert str(again.value) == str(died.value)
    cut = runner(spawn, Process(['{"poi\n'], code=1))
    with pytest.raises(worker.WorkerDied) as died:
        cut._receive(5.0)
    assert str(died.value) == "the standin worker process exited with status 1; its last message was cut short"
    assert cut.process.kills == 1 and died.value.__suppress_context__
    quiet = runner(spawn, Process([], code=-9))
    waits = []
    quiet.replies = types.SimpleNamespace(next=lambda t=None: waits.append(t))
    with pytest.raises(worker.WorkerDied) as died:
        quiet._receive(12.5)
    assert str(died.value) == "the standin worker process was killed by SIGKILL after sending nothing for 12.5 s (taken for hung and killed)"
    assert waits == [12.5] and quiet.process.kills == 1
    zero = runner(spawn, Process([{"a": 1}]))
    assert zero._receive(0) == {"a": 1}


def test_receive_waits_without_limit_for_zero(spawn):
    """A timeout of 0 or None waits as long as it takes."""
    made = runner(spawn, Process([]))
    waits = []
    made.replies = types.SimpleNamespace(next=lambda t=None: waits.append(t) or '{"b": 2}\n')
    assert made._receive(0) == {"b": 2} and made._receive() == {"b": 2} and waits == [None, None]


def test_death_of_a_stuck_process_and_a_long_tail(spawn):
    """A killed worker that does not exit is reported as stuck; a log tail is cut to 600 characters."""
    made = runner(spawn, Process([], stuck=(30.0,)))
    assert made._death(" detail") == "the standin worker process did not exit when killed detail"
    assert made.dead == "the standin worker process did not exit when killed detail"
    long = runner(spawn, Process([], code=0))
    long.log.write("a" * 700 + "\n")
    assert long._death() == "the standin worker process exited with status 0; its last output: " + "a" * 600
    killed = runner(spawn, Process([], code=2))
    killed._kill()
    assert killed.killed and killed.process.kills == 1
    assert killed._death() == "the standin worker process exited with status 2"


@pytest.mark.parametrize("error", [OSError("pipe"), ValueError("closed")])
def test_send_to_a_gone_worker_is_a_death(spawn, error):
    """A message that cannot be written reports the worker's death."""
    made = runner(spawn, Process([], code=1, stdin=Stdin(fail=error)))
    with pytest.raises(worker.WorkerDied, match="^the standin worker process exited with status 1$") as died:
        made._send({"quit": True})
    assert died.value.__suppress_context__


def test_send_writes_one_flushed_json_line(spawn):
    """Each message is one JSON line, flushed."""
    made = runner(spawn, Process([]))
    made._send({"go": 1.5})
    assert made.process.stdin.getvalue() == '{"go": 1.5}\n' and made.process.stdin.flushes == 1


def point(batch: int, **kw: Any) -> dict[str, Any]:
    return {"batch_size": batch, "bytes": batch * 24, **kw}


def test_measure_series_replays_the_worker_messages(spawn):
    """start, point and done messages fill the series and call back; the run message says what to measure."""
    log = "E0000 00:00:1.0 1 a.cc:1] at start\n"
    process = Process([HELLO, {"start": 1}, {"point": point(1), "series": {"device_name": "gpu", "note": "n"}},
                       {"start": 2}, {"point": point(2, status="error", error="oom"), "series": {}},
                       {"done": {"status": "failed", "reason": "why"}}], log=log)  # fmt: skip
    made = runner(spawn, process)
    made.hello()
    made.log.write("E0000 00:00:1.0 1 b.cc:1] during\n")
    series, seen = Series.of(KEY), []
    made.measure_series(KEY, (1, 2), {"p": 1}, TIMING, series, lambda s, b: seen.append(("start", s, b)),
                        lambda s, p: seen.append(("point", s, p)))  # fmt: skip
    assert process.stdin.sent() == [{"run": {"key": {**KEY.__dict__, "shape": [2, 3]}, "batch_sizes": [1, 2], "params": {"p": 1},
                                             "timing": TIMING.__dict__, "together": False}}]  # fmt: skip
    points = [Point(**point(1)), Point(**point(2, status="error", error="oom"))]
    assert series.points == points
    assert seen == [("start", series, 1), ("point", series, points[0]), ("start", series, 2), ("point", series, points[1])]
    assert (series.device_name, series.status, series.reason) == ("gpu", "failed", "why")
    assert series.note == "n; standin logged errors during this series: during"
    assert (made.used, made.busy) == (True, False) and len(spawn.started) == 1


def test_measure_series_without_callbacks_and_with_the_stall_timeout(spawn):
    """Without callbacks points still land; each wait allows STALL_TIMEOUT_S plus two sampling caps."""
    made = runner(spawn, Process([HELLO]))
    made.hello()
    lines = [{"start": 4}, {"point": point(4)}, {"done": {}}]
    waits = []
    made.replies = types.SimpleNamespace(next=lambda t=None: waits.append(t) or json.dumps(lines.pop(0)))
    series = Series.of(KEY)
    made.measure_series(KEY, [4], {}, TIMING, series)
    assert series.points == [Point(**point(4))] and waits == [303.0] * 3 and series.note is None


def test_measure_series_uses_a_fresh_worker_after_a_series_or_a_death_or_a_new_binding(spawn):
    """A used or dead worker, or another binding, is stopped and replaced before the series."""
    first = Process([HELLO, {"done": {}}])
    made = runner(spawn, first)
    made.hello()
    made.measure_series(KEY, [], {}, TIMING, Series.of(KEY))
    second = Process([HELLO, {"done": {"note": "second"}}])
    spawn.queue.append(second)
    series = Series.of(KEY)
    made.measure_series(KEY, [], {}, TIMING, series)
    assert series.note == "second" and made.process is second and first.stdin.sent()[-1] == {"quit": True}
    assert len(spawn.started) == 2 and first.stdin.was_closed
    made.dead = "gone"
    third = Process([HELLO, {"done": {}}])
    spawn.queue.append(third)
    made.used = False
    made.measure_series(KEY, [], {}, TIMING, Series.of(KEY))
    assert made.process is third and made.dead is None
    binding = Binding((2,), 0)
    fourth = Process([HELLO, {"done": {}}])
    spawn.queue.append(fourth)
    made.used = False
    made.measure_series(KEY, [], {}, TIMING, Series.of(KEY), binding=binding)
    assert made.process is fourth and spawn.started[-1][1]["env"][BIND_ENV] == binding.to_env() and made.binding == binding
    assert len(spawn.started) == 4


def test_fresh_worker_that_dies_at_start_costs_the_series(spawn):
    """A replacement worker that says error raises WorkerDied."""
    made = runner(spawn, Process([HELLO, {"done": {}}]))
    made.hello()
    made.measure_series(KEY, [], {}, TIMING, Series.of(KEY))
    spawn.queue.append(Process([{"error": "broke"}]))
    with pytest.raises(worker.WorkerDied, match="^broke$"):
        made.measure_series(KEY, [], {}, TIMING, Series.of(KEY))


class Line:
    def __init__(self, at: list[float | None]) -> None:
        self.at, self.meets = at, []

    def meet(self, timeout_s: float) -> float | None:
        self.meets.append(timeout_s)
        return self.at.pop(0)


def test_measure_series_meets_the_start_line_once_per_batch(spawn):
    """ready gets a go (True when the line is broken); a point never ready and a batch never reached still meet it."""
    process = Process([HELLO, {"ready": 1}, {"point": point(1)}, {"ready": 2}, {"point": point(2)},
                       {"point": point(3)}, {"done": {}}])  # fmt: skip
    made = runner(spawn, process)
    made.hello()
    line = Line([7.5, None, 9.0, 0.0, 0.0])
    made.measure_series(KEY, [1, 2, 3, 4, 5], {}, TIMING, Series.of(KEY), barrier=line)
    sent = process.stdin.sent()
    assert sent[0]["run"]["together"] is True and sent[1:] == [{"go": 7.5}, {"go": True}]
    assert line.meets == [303.0] * 5 and line.at == []


def test_measure_series_done_without_points_meets_for_every_batch(spawn):
    """A series that sent nothing still meets the line once per batch."""
    made = runner(spawn, Process([HELLO, {"done": {"status": "failed"}}]))
    made.hello()
    line = Line([None, None])
    made.measure_series(KEY, [1, 2], {}, TIMING, Series.of(KEY), barrier=line)
    assert line.meets == [303.0, 303.0]


def test_stop_asks_an_idle_worker_to_quit_and_a_busy_one_to_stop(spawn, monkeypatch):
    """Idle: quit and wait 10 s. Busy: SIGTERM (the worker's Ctrl-C, so it closes what it holds) and wait
    STOP_WAIT_S; on Windows, where no such signal can be sent, killed. Deaf or stuck: killed and waited for.
    Stdin and log closed."""
    idle = runner(spawn, Process([]))
    idle._stop()
    assert idle.process.stdin.sent() == [{"quit": True}] and idle.process.waits == [10] and idle.process.kills == 0
    assert idle.process.stdin.was_closed and idle.log.closed
    busy = runner(spawn, Process([], stdin=Stdin(close_fails=True)))
    busy.busy = True
    busy._stop()
    assert busy.process.stdin.sent() == [] and busy.process.signals == [signal.SIGTERM] and busy.process.waits == [15.0]
    assert busy.process.kills == 0 and not busy.killed and busy.log.closed
    stuck = runner(spawn, Process([], stuck=(15.0,)))
    stuck.busy = True
    stuck._stop()
    assert stuck.process.signals == [signal.SIGTERM] and stuck.process.kills == 1 and stuck.killed and stuck.process.waits == [15.0, 30.0]
    deaf = runner(spawn, Process([], stuck=(10, 30.0)))
    deaf._stop()
    assert deaf.process.kills == 1 and deaf.process.waits == [10, 30.0] and deaf.log.closed
    gone = runner(spawn, Process([], alive=False))
    gone._stop()
    assert gone.process.stdin.sent() == [] and gone.process.waits == [] and gone.process.stdin.was_closed
    windows = runner(spawn, Process([]))
    windows.busy = True
    monkeypatch.setattr(worker, "sys", types.SimpleNamespace(platform="win32"))
    windows._stop()
    assert windows.process.signals == [] and windows.process.kills == 1 and windows.killed and windows.process.waits == [30.0]


class Pressed(Process):
    """A worker stand-in whose first wait is cut short by Ctrl-C, as a second press lands while it is stopped."""

    def wait(self, timeout: float | None = None) -> int:
        if not self.waits:
            self.waits.append(timeout)
            raise KeyboardInterrupt
        return super().wait(timeout)


def test_a_ctrl_c_while_a_worker_is_stopped_kills_it_and_waits_for_it_before_it_goes_on(spawn):
    """A second Ctrl-C during the stop must not leave the worker running past the sweep: it is killed and
    waited for, its pipe and log closed, and only then does the Ctrl-C go on."""
    for busy in (False, True):
        made = runner(spawn, Pressed([]))
        made.busy = busy
        with pytest.raises(KeyboardInterrupt):
            made._stop()
        assert made.process.kills == 1 and made.process.waits[1:] == [30.0] and not made.process.alive
        assert made.process.stdin.was_closed and made.log.closed


def test_close_stops_the_worker_and_removes_the_folder(spawn):
    """close ends the worker and removes its folder; without a process only the folder goes."""
    made = runner(spawn, Process([]))
    made.close()
    assert made.process.stdin.sent() == [{"quit": True}] and not spawn.folder.exists()
    spawn.folder.mkdir()
    bare = object.__new__(worker.WorkerRunner)
    bare.folder = spawn.folder
    bare.close()
    assert not spawn.folder.exists()


# --- the worker's side -------------------------------------------------------------------------------------


@pytest.fixture
def serving(monkeypatch):
    """serve() with a stand-in backend, a scripted measure_series and a virtual clock."""
    backend = StandIn()
    monkeypatch.setattr(worker, "get_backend", lambda name: backend if name == "standin" else None)
    clock = types.SimpleNamespace(now=100.0, slept=[])
    monkeypatch.setattr(worker, "time", types.SimpleNamespace(monotonic=lambda: clock.now, sleep=clock.slept.append))
    calls = []

    def measure(backend_, key, batches, params, timing, series, on_start=None, on_point=None, on_ready=None):
        calls.append((backend_, key, batches, params, timing, series.numa, on_ready is not None))
        series.device_name = "gpu"
        on_start(series, batches[0])
        if on_ready:
            on_ready(batches[0])
        on_point(series, Point(batches[0], 24))

    monkeypatch.setattr(worker, "measure_series", measure)
    return types.SimpleNamespace(backend=backend, clock=clock, calls=calls)


def run_request(together: bool = False) -> str:
    return json.dumps({"run": {"key": {**KEY.__dict__, "shape": [2, 3]}, "batch_sizes": [8], "params": {"p": 1},
                               "timing": TIMING.__dict__, "together": together}}) + "\n"  # fmt: skip


def served(requests: str, numa: dict | None = None) -> tuple[int, list[dict[str, Any]]]:
    replies = io.StringIO()
    code = worker.serve("standin", io.StringIO(requests), replies, numa)
    return code, [json.loads(line) for line in replies.getvalue().splitlines()]


def test_serve_says_hello_then_measures_until_quit(serving):
    """hello with the process's python, then start, point with header, done; quit ends with 0."""
    code, said = served(run_request() + '{"quit": true}\n' + run_request(), numa={"node": 1})
    assert code == 0
    hello = said[0]["hello"]
    assert hello["devices"] == ["cpu", "cuda:0"]
    assert hello["environment"] == {"version": "1", "python": worker.platform.python_version(),
                                    "executable": sys.executable, "pid": os.getpid()}  # fmt: skip
    series = Series.of(KEY)
    series.device_name, series.numa = "gpu", {"node": 1}
    header = worker._header(series)
    assert said[1:] == [{"start": 8}, {"point": Point(8, 24).__dict__, "series": header}, {"done": header}]
    assert serving.calls == [(serving.backend, KEY, [8], {"p": 1}, TIMING, {"node": 1}, False)]


def test_serve_without_numa_leaves_the_series_record(serving):
    """An unbound worker sends no numa record of its own; the input's end stops it."""
    code, said = served(run_request())
    assert code == 0 and said[-1]["done"]["numa"] == {} and serving.calls[0][5] == {}
    assert served("")[1] == [said[0]]


def test_serve_waits_for_go_and_the_moment_it_names(serving):
    """Together: ready, then the go's moment is waited for; go true starts at once."""
    code, said = served(run_request(True) + '{"go": 104.5}\n' + run_request(True) + '{"go": true}\n')
    assert code == 0 and serving.clock.slept == [4.5]
    assert [list(m)[0] for m in said] == ["hello", "start", "ready", "point", "done", "start", "ready", "point", "done"]
    assert said[2] == {"ready": 8} and serving.calls[0][6] is True
    serving.clock.now = 200.0
    served(run_request(True) + '{"go": 150.0}\n')
    assert serving.clock.slept == [4.5, 0.0]


@pytest.mark.parametrize("answer", ["", '{"other": 1}\n'])
def test_serve_without_go_fails(serving, answer):
    """A worker told nothing after ready raises rather than sampling alone."""
    with pytest.raises(RuntimeError, match="^the sweep did not say go$"):
        served(run_request(True) + answer)


def test_serve_reports_a_framework_that_cannot_start(monkeypatch):
    """A known failure is said as is (status 2); any other names the exception and the python (status 1)."""

    def missing(name):
        raise XferbenchError("tf is not installed")

    monkeypatch.setattr(worker, "get_backend", missing)
    assert served("") == (2, [{"error": "tf is not installed"}])

    class Crashing(StandIn):
        def devices(self):
            raise RuntimeError("driver gone\nmore")

    monkeypatch.setattr(worker, "get_backend", lambda name: Crashing())
    assert served("") == (1, [{"error": f"standin failed to start in {sys.executable}: RuntimeError: driver gone"}])


# --- the worker's entry point ------------------------------------------------------------------------------


@pytest.fixture
def entry(monkeypatch):
    record: dict[str, Any] = {"dup2": [], "exit": [], "_exit": [], "count": [], "applied": [], "serve": []}

    class Exit(Exception):
        pass

    def sys_exit(code=None):
        record["exit"].append(code)
        raise Exit

    fake_sys = types.SimpleNamespace(argv=["worker", "standin"], exit=sys_exit, stdin="STDIN", executable=sys.executable)
    environ = {BIND_ENV: '{"cpus": [0], "node": 0}', "OTHER": "x"}
    fake_os = types.SimpleNamespace(
        environ=environ, dup=lambda fd: 10 + fd, dup2=lambda a, b: record["dup2"].append((a, b)),
        fdopen=lambda fd, mode, encoding: ("replies", fd, mode, encoding), getppid=lambda: 55,
        _exit=lambda code: record["_exit"].append(code),
    )  # fmt: skip
    monkeypatch.setattr(worker, "sys", fake_sys)
    monkeypatch.setattr(worker, "os", fake_os)
    monkeypatch.setattr(worker, "apply_binding", lambda text: record["applied"].append(text) or {"node": 0})
    monkeypatch.setattr(worker, "contention", types.SimpleNamespace(count_tree_of=record["count"].append))
    monkeypatch.setattr(worker, "serve", lambda *a: record["serve"].append(a) or 0)
    handlers = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    record["signals"] = []

    def set_handler(signum, handler):
        record["signals"].append((signum, handler))
        handlers[signum] = handler

    fake_signal = types.SimpleNamespace(SIGINT=signal.SIGINT, SIGTERM=signal.SIGTERM, SIG_IGN=signal.SIG_IGN,
                                        default_int_handler=signal.default_int_handler, getsignal=handlers.get, signal=set_handler)  # fmt: skip
    monkeypatch.setattr(worker, "signal", fake_signal)  # the test process keeps its own handlers
    return types.SimpleNamespace(record=record, sys=fake_sys, os=fake_os, Exit=Exit, handlers=handlers)


def test_main_moves_stdout_applies_the_binding_and_serves(entry):
    """The protocol gets a copy of stdout, stdout goes to stderr, the binding is applied and removed."""
    with pytest.raises(entry.Exit):
        worker.main()
    record = entry.record
    assert record["dup2"] == [(2, 1)] and record["applied"] == ['{"cpus": [0], "node": 0}']
    assert entry.os.environ == {"OTHER": "x"} and record["count"] == [55]
    assert record["serve"] == [("standin", "STDIN", ("replies", 11, "w", "utf-8"), {"node": 0})]
    assert record["exit"] == [0] and record["_exit"] == []
    assert record["signals"] == [(signal.SIGTERM, worker.stop_once), (signal.SIGINT, worker.stop_once)]


def test_a_worker_takes_the_sweeps_sigterm_as_its_ctrl_c_and_either_only_once(entry):
    """SIGTERM and Ctrl-C raise KeyboardInterrupt, so every close runs; after one, both are ignored, lest a second
    cut a close short. A Ctrl-C ignored from the start (a background job) stays ignored."""
    with pytest.raises(entry.Exit):
        worker.main()
    entry.record["signals"].clear()
    with pytest.raises(KeyboardInterrupt):
        worker.stop_once(signal.SIGTERM, None)
    assert entry.record["signals"] == [(signal.SIGINT, signal.SIG_IGN), (signal.SIGTERM, signal.SIG_IGN)]
    entry.handlers[signal.SIGINT] = signal.SIG_IGN
    entry.record["signals"].clear()
    with pytest.raises(entry.Exit):
        worker.main()
    assert entry.record["signals"] == [(signal.SIGTERM, worker.stop_once)]


def test_main_without_binding_and_with_wrong_arguments(entry, monkeypatch):
    """No binding: numa None; a wrong argument count prints the usage."""
    del entry.os.environ[BIND_ENV]
    with pytest.raises(entry.Exit):
        worker.main()
    assert entry.record["serve"][0][3] is None and entry.record["applied"] == []
    entry.sys.argv = ["worker"]
    with pytest.raises(entry.Exit):
        worker.main()
    assert entry.record["exit"][-1] == "usage: python -m xferbench.measuring.worker FRAMEWORK (started by xferbench sweep)"
    assert len(entry.record["serve"]) == 1
    entry.sys.argv = ["worker", "a", "b"]
    with pytest.raises(entry.Exit):
        worker.main()
    assert len(entry.record["serve"]) == 1


def test_main_ends_at_once_on_ctrl_c(entry, monkeypatch):
    """Ctrl-C (or the sweep's SIGTERM) in the worker exits with 130, without the interpreter's own cleanup."""

    def interrupted(*a):
        raise KeyboardInterrupt

    monkeypatch.setattr(worker, "serve", interrupted)
    worker.main()
    assert entry.record["_exit"] == [130] and entry.record["exit"] == []


def test_source_folder_links_a_directory_and_removes_quietly(monkeypatch, tmp_path):
    """The link is made as a directory link (Windows needs it); a failed copy's removal ignores errors."""
    monkeypatch.setattr(worker.tempfile, "tempdir", str(tmp_path))
    links, removed = [], []

    def refuse(self, target, **kw):
        links.append(kw)
        raise OSError("no links")

    def fail(*a, **k):
        raise OSError("full")

    monkeypatch.setattr(worker.Path, "symlink_to", refuse)
    monkeypatch.setattr(worker.shutil, "copytree", fail)
    monkeypatch.setattr(worker.shutil, "rmtree", lambda path, **kw: removed.append((path, kw)))
    with pytest.raises(XferbenchError):
        worker._source_folder()
    [folder] = list(tmp_path.iterdir())
    assert links == [{"target_is_directory": True}] and removed == [(folder, {"ignore_errors": True})]
