"""Worker processes: TensorFlow and PyTorch never share a process, and each series gets a fresh one.

They fight over GPU memory and CUDA libraries, and a crash in one must cost only its own series.
A fresh process per series also keeps one series' allocator state out of the next one's figures.
The main process talks to each worker over JSON lines: the worker's stdout carries the protocol
(anything else it prints is moved to stderr), its stderr goes to a log whose tail explains a death.

    parent -> worker   {"run": {key, batch_sizes, params, timing, together}} | {"quit": true} | {"go": at}
    worker -> parent   {"hello": {devices, environment}} | {"error": message}
                       {"start": batch} | {"ready": batch} | {"point": point, "series": header} | {"done": header}

In a concurrent run (`together`), a worker says "ready" once a point is prepared, warmed up and
verified, and samples only after the parent's "go", which comes when every device's worker is ready
and names the moment to start (time.monotonic; true where another worker died: start at once).

Run as `python -m xferbench.worker FRAMEWORK`, with any interpreter that has numpy and the framework.
A worker for a CUDA series is started with a binding in its environment (numa.BIND_ENV), which it
applies before it imports the framework, so every buffer it allocates lands on the GPU's node.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Protocol

from xferbench import contention
from xferbench.backends import Backend, get_backend
from xferbench.errors import XferbenchError
from xferbench.measure import OnPoint, OnStart, first_line, measure_series
from xferbench.numa import BIND_ENV, Binding, apply_binding
from xferbench.results import Point, Series
from xferbench.spec import SeriesKey
from xferbench.timing import TimingConfig

HEADER_FIELDS = ("device_name", "transfer", "clock", "sync", "device_clock", "params", "note", "status", "reason", "numa")


STARTUP_TIMEOUT_S = 300.0  # a cold TensorFlow import on a slow disk takes a minute; a wedged driver forever
STALL_TIMEOUT_S = 300.0  # the longest a worker may go without a message beyond one point's timing caps
DEATH_WAIT_S = 30.0  # how long a dying worker may take to exit before it is reported as stuck


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
    """
    folder = Path(tempfile.mkdtemp(prefix="xferbench-worker-"))
    (folder / "xferbench").symlink_to(Path(__file__).resolve().parent, target_is_directory=True)
    return folder


class WorkerRunner:
    """A framework in its own process. Starting it returns at once; hello() waits until it is ready."""

    def __init__(self, backend: Backend, python: str | None = None, start_timeout_s: float = STARTUP_TIMEOUT_S,
                 binding: Binding | None = None) -> None:  # fmt: skip
        self.backend = backend
        self.start_timeout_s = start_timeout_s
        self.python = python or sys.executable
        self.folder = _source_folder()
        # Also on PYTHONPATH, for a user who set PYTHONSAFEPATH (then -m does not add the working directory).
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(self.folder), os.environ.get("PYTHONPATH")]))}
        self.first_hello: dict[str, Any] | None = None  # the framework as the first worker saw it
        self.startup_errors: list[str] = []  # error lines the first worker logged before it was ready
        self._spawn(binding)  # a concurrent run's worker is bound from the start: it measures one device only

    def _spawn(self, binding: Binding | None = None) -> None:
        self.log = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # a framework may log any bytes
        self.log_start = 0  # where this series' part of the log begins
        self._hello: dict[str, Any] | None = None
        self.dead: str | None = None  # why the worker is gone, once it is
        self.used = self.busy = False
        self.binding = binding  # what this worker was bound to before it imported its framework
        env = {**self.env, BIND_ENV: binding.to_env()} if binding else {k: v for k, v in self.env.items() if k != BIND_ENV}
        try:
            self.process = subprocess.Popen(
                [self.python, "-m", "xferbench.worker", self.backend.name], cwd=self.folder,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1, env=env,
            )  # fmt: skip
        except OSError as error:
            self.close()
            raise XferbenchError(
                f"cannot start a {self.backend.name} worker with {self.python}: {error.strerror or error}"
            ) from None

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

    def _receive(self, timeout_s: float | None = None) -> dict[str, Any]:
        """The worker's next message. After `timeout_s` without one, the worker is taken for hung
        (a stuck framework, a stopped process) and killed, so one series cannot stall the sweep."""
        assert self.process.stdout is not None
        stalled: list[str] = []
        answered = threading.Lock()  # held by whichever comes first: the line, or the kill

        def kill_hung() -> None:
            if answered.acquire(blocking=False):
                stalled.append(f" after sending nothing for {timeout_s:g} s (taken for hung and killed)")
                self.process.kill()

        timer = threading.Timer(timeout_s, kill_hung) if timeout_s else None
        if timer:
            timer.daemon = True
            timer.start()
        try:
            line = self.process.stdout.readline()
        finally:
            if timer:
                answered.acquire(blocking=False)  # too late for the timer to kill a worker that answered
                timer.cancel()
        if not line:
            raise WorkerDied(self._death("".join(stalled)))
        try:
            return json.loads(line)
        except json.JSONDecodeError:  # a message cut short by a dying worker, or a stray print
            self.process.kill()
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
        if code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with status {code}"
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
                assert self.process.stdout is not None
                ready, _, _ = select.select([self.process.stdout], [], [], self.start_timeout_s)
                if not ready:  # nothing read yet, so nothing can wait in Python's buffer: select is exact
                    self.process.kill()
                    raise WorkerDied(self._death(f" after not starting within {self.start_timeout_s:g} s"))
                message = self._receive()
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

    def _stop(self) -> None:
        """End the process: ask an idle worker to quit; kill one still measuring (an interrupted sweep)."""
        if self.process.poll() is None:
            try:
                if self.busy:
                    raise WorkerDied("interrupted")
                self._send({"quit": True})
                self.process.wait(timeout=10)
            except (WorkerDied, subprocess.TimeoutExpired):
                self.process.kill()
                try:
                    self.process.wait(timeout=DEATH_WAIT_S)
                except subprocess.TimeoutExpired:  # stuck in a driver: nothing more can be done from here
                    pass
        for stream in (self.process.stdin, self.process.stdout):
            if stream:
                try:
                    stream.close()
                except OSError:  # flushing to a killed worker's pipe: a broken pipe, and nothing left to tell it
                    pass
        self.log.close()

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


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python -m xferbench.worker FRAMEWORK (started by xferbench sweep)")
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything else printed, by Python or by a C library, goes to the log instead
    binding = os.environ.pop(BIND_ENV, None)  # applied before the framework is imported, so before it allocates
    numa = apply_binding(binding) if binding else None
    contention.count_tree_of(os.getppid())  # the sweep and its other workers are this run, not competition
    try:
        sys.exit(serve(sys.argv[1], sys.stdin, replies, numa))
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group; the main process reports it
        os._exit(130)


if __name__ == "__main__":
    main()
