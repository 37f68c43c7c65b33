"""Worker processes: TensorFlow and PyTorch never share a process, and each series gets a fresh one.

They fight over GPU memory and CUDA libraries, and a crash in one must cost only its own series.
A fresh process per series also keeps one series' allocator state out of the next one's figures.
The main process talks to each worker over JSON lines: the worker's stdout carries the protocol
(anything else it prints is moved to stderr), its stderr goes to a log whose tail explains a death.
The main process reads each worker's stdout with a thread of its own (Replies) and waits for a line
with a timeout, the same on every OS: select() takes only sockets on Windows, and there a blocking
pipe read cannot be cut short by Ctrl-C.

    parent -> worker   {"run": {key, batch_sizes, params, timing, together}} | {"quit": true} | {"go": at}
    worker -> parent   {"hello": {devices, environment}} | {"error": message}
                       {"start": batch} | {"ready": batch} | {"point": point, "series": header} | {"done": header}

In a concurrent run (`together`), a worker says "ready" once a point is prepared, warmed up and
verified, and samples only after the parent's "go", which comes when every device's worker is ready
and names the moment to start (time.monotonic; true where another worker died: start at once).

Run as `python -m xferbench.measuring.worker FRAMEWORK`, with any interpreter that has numpy and the framework.
A worker for a CUDA series is started with a binding in its environment (numa.BIND_ENV), which it
applies before it imports the framework, so every buffer it allocates lands on the GPU's node.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import platform
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

import xferbench
from xferbench.measuring import contention
from xferbench.measuring.backends import Backend, get_backend
from xferbench.core.environment import facts_for_workers
from xferbench.core.errors import XferbenchError
from xferbench.measuring.measure import OnPoint, OnStart, first_line, measure_series
from xferbench.core.numa import BIND_ENV, Binding, apply_binding
from xferbench.core.results import Point, Series
from xferbench.core.spec import SeriesKey
from xferbench.core.timing import TimingConfig

HEADER_FIELDS = ("device_name", "transfer", "clock", "sync", "device_clock", "params", "note", "status", "reason", "numa")


# The oldest Python a worker runs on: xferbench's own, pyproject.toml's requires-python, as the worker imports
# the package's modules, written for it. Python 3.8 fails at their first import (timing.Clock subscripts
# collections.abc.Callable: PEP 585, 3.9); 3.9 may get further, but nothing keeps that code free of what
# came in 3.10 (a `X | None` evaluated at import, PEP 604).
WORKER_PYTHON = (3, 10)
# Asks an interpreter its version, in code any Python runs (2.7 too, so an old one is named rather than failing)
VERSION_PROBE = "import sys; sys.stdout.write('%d.%d.%d' % tuple(sys.version_info[:3]))"
PROBE_TIMEOUT_S = 60.0  # an interpreter that has not said its version by then is left to the worker's own start
STARTUP_TIMEOUT_S = 300.0  # a cold TensorFlow import on a slow disk takes a minute; a wedged driver forever
STALL_TIMEOUT_S = 300.0  # the longest a worker may go without a message beyond one point's timing caps
DEATH_WAIT_S = 30.0  # how long a dying worker may take to exit before it is reported as stuck
# How long a worker told to stop mid-series may take to close what it holds before it is killed: a DataLoader
# waits up to 5 s (MP_STATUS_CHECK_INTERVAL) for each of its processes to leave before it terminates it.
STOP_WAIT_S = 15.0
WAIT_SLICE_S = 0.2  # the longest a wait for a worker blocks at once: Windows delivers Ctrl-C between waits only


# A C++ error line in a framework's log: absl ("E0000 00:00:1795356588.11 13315 file.cc:52] ...")
# or older TensorFlow ("2021-08-01 12:00:00.000000: E tensorflow/...] ..."). INFO and WARNING stay hidden.
ERROR_LINE = re.compile(r"^(?:E\d{4} \d|\d{4}-\d\d-\d\d [\d:.]+: E )")


def logged_errors(text: str) -> list[str]:
    """The distinct error lines of a worker's log, without their time and thread prefix."""
    found = [line.split("] ", 1)[-1].strip() for line in text.splitlines() if ERROR_LINE.match(line)]
    return list(dict.fromkeys(found))


def errors_said(errors: Sequence[str]) -> str:
    return errors[0][:300] + (f" (+{len(errors) - 1} more)" if len(errors) > 1 else "") if errors else ""


def take_header(series: Series, header: dict[str, Any]) -> None:
    """The worker's view of a series' header fields. An unbound worker has no NUMA record of its own:
    it keeps the one the sweep wrote when it chose not to bind (why not), rather than blanking it."""
    for name in HEADER_FIELDS:
        if name in header and not (name == "numa" and not header[name] and series.numa):
            setattr(series, name, header[name])


class WorkerDied(Exception):
    """The worker process ended in the middle of a series; the message says how and why."""


class Runner(Protocol):
    """Where a framework's series are measured: in this process, or in a worker process."""

    backend: Backend

    def devices(self) -> list[str]: ...
    def environment(self) -> dict[str, Any]: ...
    def absent_reason(self, device: str, present: list[str]) -> str: ...
    def measure_series(self, key: SeriesKey, batch_sizes: Sequence[int], params: dict[str, Any],
                       timing: TimingConfig, series: Series, on_start: OnStart | None,
                       on_point: OnPoint | None, binding: Binding | None = None) -> None: ...  # fmt: skip
    def close(self) -> None: ...


class LocalRunner:
    """Host-side paths (numpy copies, the simulated link) need no isolation: run them here."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def devices(self) -> list[str]:
        return self.backend.devices()

    def environment(self) -> dict[str, Any]:
        return self.backend.environment()

    def absent_reason(self, device: str, present: list[str]) -> str:
        return self.backend.absent_reason(device, present)

    def measure_series(self, key: SeriesKey, batch_sizes: Sequence[int], params: dict[str, Any],
                       timing: TimingConfig, series: Series, on_start: OnStart | None = None,
                       on_point: OnPoint | None = None, binding: Binding | None = None) -> None:  # fmt: skip
        """Measure here. A binding needs a process of its own (host-side paths never get one)."""
        if binding is not None:
            series.numa = {"reason": "not bound: measured in the main process"}
        measure_series(self.backend, key, batch_sizes, params, timing, series, on_start, on_point)

    def close(self) -> None:
        pass


def _source_folder() -> Path:
    """A folder holding only this xferbench: the worker starts there, so `python -m` imports this code.

    Python puts the working directory first on sys.path for -m, ahead of PYTHONPATH and
    site-packages: started anywhere else, a worker could import another checkout's xferbench.
    The package is linked in; where links are refused (Windows grants them to administrators and
    Developer Mode only), it is copied, which serves as well.
    """
    try:
        folder = Path(tempfile.mkdtemp(prefix="xferbench-worker-"))
    except OSError as error:
        raise XferbenchError(f"cannot make a folder for a worker in {tempfile.gettempdir()}: {error.strerror or error};"
                             " free space there or point TMPDIR (TEMP on Windows) elsewhere") from None  # fmt: skip
    package = Path(xferbench.__file__).resolve().parent  # the package, wherever this module sits in it
    try:
        (folder / "xferbench").symlink_to(package, target_is_directory=True)
    except (OSError, NotImplementedError):
        try:
            shutil.copytree(package, folder / "xferbench", ignore=shutil.ignore_patterns("__pycache__"))
        except OSError as error:
            shutil.rmtree(folder, ignore_errors=True)
            raise XferbenchError(f"cannot copy xferbench into {folder} for a worker: {error.strerror or error};"
                                 " free space there or point TMPDIR (TEMP on Windows) elsewhere") from None  # fmt: skip
    return folder


# What a Windows exit status means where the process did not exit by itself (NTSTATUS codes).
WINDOWS_STATUS = {
    0xC0000005: "access violation", 0xC000001D: "illegal instruction", 0xC0000017: "out of memory",
    0xC00000FD: "stack overflow", 0xC0000135: "a DLL it needs was not found", 0xC0000142: "a DLL failed to initialise",
    0xC000013A: "Ctrl-C", 0xC0000409: "fail-fast abort",
}  # fmt: skip
WINDOWS_KILLED = 1  # the exit status TerminateProcess gives a process that Popen.kill() ended on Windows


def how_ended(code: int, killed: bool = False) -> str:
    """How a process ended, from its exit status. On POSIX a signal is a negative status; on Windows,
    where there are no signals, a crash or Ctrl-C is an NTSTATUS code, and a process this side killed
    exits with status 1, which by itself would read as an ordinary failure."""
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    if killed and code == WINDOWS_KILLED and sys.platform == "win32":
        return "was killed (TerminateProcess)"
    if code >= 0xC0000000:
        meaning = WINDOWS_STATUS.get(code)
        return f"ended with Windows status 0x{code:08X}" + (f" ({meaning})" if meaning else "")
    return f"exited with status {code}"


def python_version(python: str) -> tuple[int, ...] | None:
    """The version an interpreter says it is, or None where it does not run or answers with no version (the
    worker's own start then says what is wrong)."""
    try:
        done = subprocess.run([python, "-c", VERSION_PROBE], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT_S)  # fmt: skip
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    found = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", done.stdout.strip()) if done.returncode == 0 else None
    return tuple(int(part) for part in found.groups()) if found else None


def check_python(python: str, backend: Backend, version: tuple[int, ...] | None) -> None:
    """Refuse, before its worker starts, an interpreter older than the worker runs on (`version`, as
    python_version read it): there its first import would fail with a traceback that does not say the
    Python is too old."""
    if version is not None and version < WORKER_PYTHON:
        needed, name = ".".join(map(str, WORKER_PYTHON)), backend.name
        packages = " and ".join(["numpy", *([backend.module] if backend.module else [])])
        raise XferbenchError(
            f"--python {name}={python}: that is Python {'.'.join(map(str, version))}, and the {name} worker needs"
            f" Python {needed} or newer; give --python {name}= a Python {needed} or newer that has {packages} installed"
        )


class Replies:
    """A worker's stdout, read line by line by a thread of its own into a queue that the caller waits on
    with a timeout. The same on every OS: select() cannot wait on a pipe on Windows, and a main thread
    blocked in a pipe read there would hold Ctrl-C off until the worker spoke. Waits are cut into
    slices of WAIT_SLICE_S, between which Windows runs the Ctrl-C handler (before Python 3.14 its
    lock waits cannot be interrupted). The thread owns the stream and closes it at its end, so closing
    never blocks on a read in progress."""

    def __init__(self, stream: IO[str], name: str) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.ended = False  # the end of the stream was handed out: every later read is the end too
        self.thread = threading.Thread(target=self._read, args=(stream,), name=name, daemon=True)
        self.thread.start()

    def _read(self, stream: IO[str]) -> None:
        try:
            for line in iter(stream.readline, ""):
                self.lines.put(line)
        except (OSError, ValueError):  # a broken pipe, or one closed under the reader: the end either way
            pass
        finally:
            self.lines.put("")
            try:
                stream.close()
            except OSError:
                pass

    def next(self, timeout_s: float | None = None) -> str | None:
        """The next line ("" at the end of the stream), or None when `timeout_s` passed without one."""
        if self.ended:
            return ""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            wait = WAIT_SLICE_S if deadline is None else min(WAIT_SLICE_S, deadline - time.monotonic())
            if wait <= 0:
                return None
            try:
                line = self.lines.get(timeout=wait)
            except queue.Empty:
                continue
            self.ended = not line
            return line


class WorkerRunner:
    """A framework in its own process. Starting it returns at once; hello() waits until it is ready."""

    def __init__(self, backend: Backend, python: str | None = None, start_timeout_s: float = STARTUP_TIMEOUT_S,
                 binding: Binding | None = None, env: Mapping[str, str] | None = None) -> None:  # fmt: skip
        """`env`: the environment the worker starts from (this process's where None), as a sweep's own is."""
        self.backend = backend
        self.start_timeout_s = start_timeout_s
        self.python = python or sys.executable
        self.folder = _source_folder()
        base = dict(os.environ if env is None else env)
        # Also on PYTHONPATH, for a user who set PYTHONSAFEPATH (then -m does not add the working directory).
        self.env = {**base, "PYTHONPATH": os.pathsep.join(filter(None, [str(self.folder), base.get("PYTHONPATH")]))}
        # The worker's log is read as UTF-8: on Windows its stderr would otherwise be in the ANSI code page.
        self.env.setdefault("PYTHONIOENCODING", "utf-8")
        self.env.update(facts_for_workers())  # the machine as the sweep read it once: no worker runs macOS's tools again
        self.first_hello: dict[str, Any] | None = None  # the framework as the first worker saw it
        self.startup_errors: list[str] = []  # error lines the first worker logged before it was ready
        self._spawn(binding)  # a concurrent run's worker is bound from the start: it measures one device only

    def _spawn(self, binding: Binding | None = None) -> None:
        self.log = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # a framework may log any bytes
        self.log_start = 0  # where this series' part of the log begins
        self._hello: dict[str, Any] | None = None
        self.dead: str | None = None  # why the worker is gone, once it is
        self.used = self.busy = self.killed = False
        self.binding = binding  # what this worker was bound to before it imported its framework
        env = {**self.env, BIND_ENV: binding.to_env()} if binding else {k: v for k, v in self.env.items() if k != BIND_ENV}
        try:
            self.process = subprocess.Popen(
                [self.python, "-m", "xferbench.measuring.worker", self.backend.name], cwd=self.folder,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, encoding="utf-8", bufsize=1, env=env,
            )  # fmt: skip
        except OSError as error:
            self.close()
            raise XferbenchError(
                f"cannot start a {self.backend.name} worker with {self.python}: {error.strerror or error}"
            ) from None
        assert self.process.stdout is not None
        self.replies = Replies(self.process.stdout, f"{self.backend.name} worker {self.process.pid}")

    @property
    def pid(self) -> int:
        return self.process.pid

    def _send(self, message: dict[str, Any]) -> None:
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except (OSError, ValueError):  # a broken pipe, or a pipe already closed
            raise WorkerDied(self._death()) from None

    def _kill(self) -> None:
        """End the worker now (SIGKILL on POSIX, TerminateProcess on Windows), remembering it was this side."""
        self.killed = True
        self.process.kill()

    def _receive(self, timeout_s: float | None = None, silence: str = "after sending nothing for {:g} s (taken for hung and killed)"
                 ) -> dict[str, Any]:  # fmt: skip
        """The worker's next message. After `timeout_s` without one, the worker is taken for hung
        (a stuck framework, a stopped process) and killed, so one series cannot stall the sweep;
        `silence` says so in the reason."""
        line = self.replies.next(timeout_s or None)  # no timeout, or 0: wait as long as it takes
        if line is None:
            self._kill()
            raise WorkerDied(self._death(" " + silence.format(timeout_s)))
        if not line:
            raise WorkerDied(self._death())
        try:
            return json.loads(line)
        except json.JSONDecodeError:  # a message cut short by a dying worker, or a stray print
            self._kill()
            raise WorkerDied(self._death("; its last message was cut short")) from None

    def _death(self, detail: str = "") -> str:
        """How the worker ended, with the last lines it logged during this series: the reason recorded."""
        if self.dead:
            return self.dead
        try:
            code = self.process.wait(timeout=DEATH_WAIT_S)
        except subprocess.TimeoutExpired:  # killed, yet still there: stuck in the kernel or a driver
            self.dead = f"the {self.backend.name} worker process did not exit when killed{detail}"
            return self.dead
        how = how_ended(code, self.killed)
        self.log.seek(self.log_start)
        lines = [line.strip() for line in self.log.read().splitlines() if line.strip()]
        tail = " | ".join(lines[-3:])[-600:]
        self.dead = f"the {self.backend.name} worker process {how}{detail}" + (f"; its last output: {tail}" if tail else "")
        return self.dead

    def hello(self) -> dict[str, Any]:
        """The worker's devices and environment, or a one-line XferbenchError if it could not start.

        The first worker's hello describes the framework; a fresh worker for a later series that
        cannot start raises WorkerDied, which costs that series only.
        """
        if self._hello is None:
            first = self.first_hello is None
            try:
                message = self._receive(self.start_timeout_s, "after not starting within {:g} s")
            except WorkerDied as died:
                if first:
                    raise XferbenchError(f"{died} (python: {self.python})") from None
                raise
            if "error" in message:
                self.dead = message["error"]
                self._stop()
                if first:
                    raise XferbenchError(message["error"])
                raise WorkerDied(message["error"])
            self._hello = message["hello"]
            self.log.flush()
            self.log_start = os.fstat(self.log.fileno()).st_size  # start-up noise stays out of a death's reason
            if first:
                self.first_hello = self._hello
                self.log.seek(0)
                self.startup_errors = logged_errors(self.log.read(self.log_start))
        assert self.first_hello is not None
        return self.first_hello

    def devices(self) -> list[str]:
        return list(self.hello()["devices"])

    def environment(self) -> dict[str, Any]:
        return dict(self.hello()["environment"])

    def absent_reason(self, device: str, present: list[str]) -> str:
        """The backend's reason, and what the framework logged as an error while it started (TensorFlow's
        "failed call to cuInit: ..." says why it sees no GPU)."""
        reason = self.backend.absent_reason(device, present)
        said = errors_said(self.startup_errors) if device != "cpu" else ""
        return f"{reason}; at start-up it logged: {said}" if said else reason

    def measure_series(self, key: SeriesKey, batch_sizes: Sequence[int], params: dict[str, Any],
                       timing: TimingConfig, series: Series, on_start: OnStart | None = None,
                       on_point: OnPoint | None = None, binding: Binding | None = None,
                       barrier: StartLine | None = None) -> None:  # fmt: skip
        """Run the series in a fresh worker and replay its messages here; raise WorkerDied if it dies.

        With a barrier (a concurrent run, one worker per device), each point samples only once every
        worker sharing the barrier is ready: a point that ends without being ready (it failed, or
        was skipped) still meets the barrier, so the others never wait for it in vain.

        Every series gets a new process: the allocator state one series leaves behind (glibc's
        dynamic mmap threshold, TensorFlow's pools) changed later series' figures in our runs, and a
        crash then costs only the series that crashed. A series with a binding gets a worker started
        with it, so the binding holds before the framework allocates anything.
        """
        if self.used or self.dead or binding != self.binding:
            self._stop()
            self._spawn(binding)
            self.hello()
        self.used = self.busy = True
        run = {"key": dataclasses.asdict(key), "batch_sizes": list(batch_sizes), "params": params,
               "timing": dataclasses.asdict(timing), "together": barrier is not None}  # fmt: skip
        self._send({"run": run})
        # Between two messages a worker prepares, warms up (up to max_time_s), verifies and samples
        # (up to max_time_s) one point.
        stall_s = STALL_TIMEOUT_S + 2 * timing.max_time_s
        met: set[int] = set()  # the batches this worker has met the barrier for
        while True:
            message = self._receive(stall_s)
            if "ready" in message and barrier is not None:
                met.add(message["ready"])
                self._send({"go": barrier.meet(stall_s) or True})
                continue
            if "point" in message and barrier is not None and message["point"]["batch_size"] not in met:
                met.add(message["point"]["batch_size"])  # failed or skipped before it was ready: it meets the others now
                barrier.meet(stall_s)
            take_header(series, message.get("series", {}))
            if "start" in message and on_start:
                on_start(series, message["start"])
            elif "point" in message:
                point = Point(**message["point"])
                series.points.append(point)
                if on_point:
                    on_point(series, point)
            elif "done" in message:
                take_header(series, message["done"])
                self.busy = False
                if barrier is not None:  # a series that could not set up sent no point: the others must not wait for it
                    for _ in [batch for batch in batch_sizes if batch not in met]:
                        barrier.meet(stall_s)
                self._note_logged_errors(series)
                return

    def _note_logged_errors(self, series: Series) -> None:
        """Error lines the framework logged during the series, kept in its note: the rest of its log is noise."""
        self.log.flush()
        self.log.seek(self.log_start)
        said = errors_said(logged_errors(self.log.read()))
        if said:
            logged = f"{self.backend.name} logged errors during this series: {said}"
            series.note = f"{series.note}; {logged}" if series.note else logged

    def _interrupt(self) -> None:
        """Tell a worker still measuring (an interrupted sweep) to stop as Ctrl-C stops it: SIGTERM, which the
        worker takes for one (main), so it closes what it holds, a DataLoader's processes among them, and exits.
        Windows has no signal one process can send another but TerminateProcess: there it is killed, and a
        DataLoader's processes, which watch their parent, end once they see it gone."""
        if sys.platform == "win32":
            raise WorkerDied("interrupted")
        self.process.send_signal(signal.SIGTERM)

    def _stop(self) -> None:
        """End the process: ask an idle worker to quit; tell one still measuring (an interrupted sweep) to stop,
        so nothing it started outlives it; kill either where it has not exited in time. A Ctrl-C while it
        is waited for (a second press) kills it at once and still waits for it, then goes on as Ctrl-C."""
        pressed: KeyboardInterrupt | None = None
        if self.process.poll() is None:
            try:
                if self.busy:
                    self._interrupt()
                    self.process.wait(timeout=STOP_WAIT_S)
                else:
                    self._send({"quit": True})
                    self.process.wait(timeout=10)
            except (WorkerDied, subprocess.TimeoutExpired, KeyboardInterrupt) as stop:
                pressed = stop if isinstance(stop, KeyboardInterrupt) else None
                self._kill()
                try:
                    self.process.wait(timeout=DEATH_WAIT_S)
                except subprocess.TimeoutExpired:  # stuck in a driver: nothing more can be done from here
                    pass
        if self.process.stdin:  # its stdout is the reader's to close, once the worker's end is gone
            try:
                self.process.stdin.close()
            except OSError:  # flushing to a killed worker's pipe: a broken pipe, and nothing left to tell it
                pass
        self.log.close()
        if pressed is not None:
            raise pressed

    def close(self) -> None:
        if hasattr(self, "process"):
            self._stop()
        shutil.rmtree(self.folder, ignore_errors=True)  # removes the link, never the package it points to


class StartLine:
    """Where the workers of a concurrent run meet before each point, and when they then start: a
    moment a little ahead, the same for all, so the time each "go" takes to arrive does not stagger
    their starts (time.monotonic is one clock for every process of the machine)."""

    MARGIN_S = 0.02

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, action=self._set)
        self.at = 0.0

    def _set(self) -> None:
        self.at = time.monotonic() + self.MARGIN_S

    def meet(self, timeout_s: float) -> float | None:
        """Wait for the others; the moment to start, or None where one of them died (the barrier is
        broken): then this one goes on alone, and its windows show how little the points overlapped."""
        try:
            self.barrier.wait(timeout_s)
        except threading.BrokenBarrierError:
            return None
        return self.at

    def abort(self) -> None:
        self.barrier.abort()


def _header(series: Series) -> dict[str, Any]:
    return {name: getattr(series, name) for name in HEADER_FIELDS}


def serve(framework: str, requests: IO[str], replies: IO[str], numa: dict[str, Any] | None = None) -> int:
    """The worker's side: say hello, then measure each series asked for until told to quit.
    `numa`: the binding this process applied at start (numa.apply_binding), kept with each series."""

    def send(message: dict[str, Any]) -> None:
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    try:
        backend = get_backend(framework)  # a missing framework says which extra to install
        hello = {"devices": backend.devices(), "environment": backend.environment()}
    except XferbenchError as error:
        send({"error": str(error)})
        return 2
    except Exception as error:
        send({"error": f"{framework} failed to start in {sys.executable}: {type(error).__name__}: {first_line(error)}"})
        return 1
    hello["environment"].update(python=platform.python_version(), executable=sys.executable, pid=os.getpid())
    send({"hello": hello})
    for line in requests:
        request = json.loads(line)
        if "run" not in request:
            break
        run = request["run"]
        key = SeriesKey(**{**run["key"], "shape": tuple(run["key"]["shape"])})
        series = Series.of(key)
        if numa is not None:
            series.numa = numa

        def ready(batch: int) -> None:
            """Tell the parent this point is ready to sample, wait for its go, then for the moment it names."""
            send({"ready": batch})
            go = json.loads(requests.readline() or "{}").get("go")
            if go is None:
                raise RuntimeError("the sweep did not say go")
            if go is not True:
                time.sleep(max(0.0, go - time.monotonic()))

        measure_series(
            backend, key, run["batch_sizes"], run["params"], TimingConfig(**run["timing"]), series,
            on_start=lambda s, batch: send({"start": batch}),
            on_point=lambda s, point: send({"point": dataclasses.asdict(point), "series": _header(s)}),
            on_ready=ready if run.get("together") else None,
        )  # fmt: skip
        send({"done": _header(series)})
    return 0


def stop_once(signum: int, frame: object) -> None:
    """A worker's Ctrl-C, or the sweep's SIGTERM (WorkerRunner._interrupt): stop as Ctrl-C stops it, unwinding
    through each close (a DataLoader's shuts its processes down), once: a second stop, as the sweep's SIGTERM
    after a Ctrl-C that reached both, must not cut a close short."""
    for stop in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(stop) is stop_once:
            signal.signal(stop, signal.SIG_IGN)
    raise KeyboardInterrupt


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python -m xferbench.measuring.worker FRAMEWORK (started by xferbench sweep)")
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything else printed, by Python or by a C library, goes to the log instead
    signal.signal(signal.SIGTERM, stop_once)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where it started ignored (a background job)
        signal.signal(signal.SIGINT, stop_once)
    binding = os.environ.pop(BIND_ENV, None)  # applied before the framework is imported, so before it allocates
    numa = apply_binding(binding) if binding else None
    contention.count_tree_of(os.getppid())  # the sweep and its other workers are this run, not competition
    try:
        sys.exit(serve(sys.argv[1], sys.stdin, replies, numa))
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group; the main process reports it
        pass
    # Past the handler the stop's frames are gone: whatever they alone held (a DataLoader being set up when the
    # stop came) is let go now, its processes shut down, rather than left behind by an exit that skips it.
    gc.collect()
    os._exit(130)


if __name__ == "__main__":
    main()
