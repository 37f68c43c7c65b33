"""What a first run on native Windows would meet, checked on Linux: the worker protocol without select()
on pipes, Windows' exit statuses, signals, memory call and missing /proc, NUMA binding and links, and a
whole sweep through real workers in a simulated Windows (tests/windows/sitecustomize.py)."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import FAST_ARGS, needs_torch
import xferbench
from xferbench.measuring import buffers, running, worker
from xferbench.core import numa
from xferbench.core.errors import XferbenchError
from xferbench.measuring.worker import Replies, how_ended

SIMULATED_WINDOWS = Path(__file__).parent / "windows"
# The simulation stands on Linux's processes, signals and /proc: elsewhere only the unit tests run.
on_linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the simulated Windows is built on Linux")
REPOSITORY = Path(__file__).resolve().parent.parent


def windows_env(**extra: str) -> dict[str, str]:
    """The environment of a process that runs in the simulated Windows, and so do the workers it starts."""
    path = os.pathsep.join([str(SIMULATED_WINDOWS), str(REPOSITORY), *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**os.environ, "PYTHONPATH": path, "PYTHONIOENCODING": "cp1252", "COLUMNS": "100", **extra}


def run_windows(code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Python `code` run in the simulated Windows; its output read as a cp1252 console's."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, encoding="cp1252",
                          env=windows_env(), timeout=timeout)  # fmt: skip


# ---- the worker's reading, on every OS


def pipe() -> tuple:
    read, write = os.pipe()
    return os.fdopen(read, "r", encoding="utf-8"), os.fdopen(write, "w", encoding="utf-8")


def test_replies_hand_out_each_line_then_the_end_and_a_silence_is_a_timeout() -> None:
    reader, writer = pipe()
    replies = Replies(reader, "test")
    assert replies.next(0.01) is None  # nothing was sent: a timeout, not the end
    writer.write('{"start": 1}\n{"point"')
    writer.flush()
    assert replies.next() == '{"start": 1}\n'
    writer.close()
    assert replies.next() == '{"point"'  # a message cut short by a dying worker is handed out as it came
    assert replies.next() == "" and replies.next(0.01) == ""  # the end, every time after
    replies.thread.join()
    assert reader.closed  # the reader closed its stream: closing it from outside could block on its read


def test_a_wait_for_a_worker_returns_to_python_between_slices(monkeypatch) -> None:
    """Before Python 3.14 a lock wait cannot be interrupted by Ctrl-C on Windows: no single wait may be long."""
    waits: list[float | None] = []

    class Silent:
        def get(self, timeout: float | None = None) -> str:
            waits.append(timeout)
            if len(waits) < 5:
                raise queue.Empty
            return "{}\n"

    replies = Replies.__new__(Replies)
    replies.lines, replies.ended = Silent(), False  # type: ignore[assignment]
    assert replies.next() == "{}\n"
    assert len(waits) == 5 and all(w is not None and 0 < w <= worker.WAIT_SLICE_S for w in waits)
    waits.clear()
    assert replies.next(3600.0) == "{}\n" and all(w is not None and 0 < w <= worker.WAIT_SLICE_S for w in waits)


def test_how_a_worker_ended_is_said_in_the_terms_of_its_os(monkeypatch) -> None:
    assert how_ended(-9) == "was killed by SIGKILL" and how_ended(-99) == "was killed by signal 99"
    assert how_ended(130) == "exited with status 130"
    assert how_ended(1, killed=True) == "exited with status 1"  # on Linux a kill is a signal, never status 1
    monkeypatch.setattr(worker, "sys", SimpleNamespace(platform="win32"))
    assert how_ended(1, killed=True) == "was killed (TerminateProcess)"
    assert how_ended(1) == "exited with status 1"
    assert how_ended(0xC0000005) == "ended with Windows status 0xC0000005 (access violation)"
    assert how_ended(0xC0000135) == "ended with Windows status 0xC0000135 (a DLL it needs was not found)"
    assert how_ended(0xC000013A) == "ended with Windows status 0xC000013A (Ctrl-C)"
    assert how_ended(0xC0001234) == "ended with Windows status 0xC0001234"


def test_where_links_are_refused_the_worker_gets_a_copy_of_xferbench(tmp_path, monkeypatch) -> None:
    package = tmp_path / "site" / "xferbench"  # a package as an import leaves it: compiled files beside the code
    for name in ("__init__.py", "worker.py", "backends/cuda.py", "__pycache__/worker.cpython-311.pyc", "backends/__pycache__/cuda.pyc"):
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text("")

    def refused(self, target, target_is_directory=False):  # type: ignore[no-untyped-def]
        raise OSError(errno.EPERM, "[WinError 1314] A required privilege is not held by the client")

    monkeypatch.setattr(xferbench, "__file__", str(package / "__init__.py"))
    monkeypatch.setattr(Path, "symlink_to", refused)
    folder = worker._source_folder()
    try:
        copy = folder / "xferbench"
        assert not copy.is_symlink() and (copy / "worker.py").is_file() and (copy / "backends" / "cuda.py").is_file()
        assert not list(copy.rglob("__pycache__"))  # a worker compiles its own
    finally:
        shutil.rmtree(folder)
    assert (package / "worker.py").is_file()  # removing the copy left the package alone

    def full(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(shutil, "copytree", full)
    with pytest.raises(XferbenchError, match=r"cannot copy xferbench into .*: No space left on device; free space there"):
        worker._source_folder()


# ---- what Windows lacks, said in one line


def test_windows_has_no_numa_binding_and_the_reason_says_so(monkeypatch) -> None:
    env = {"process_cpus": None, "devices": [{"id": "cuda:0", "kind": "cuda", "nvml": {"cpu_affinity": [0, 1], "numa_node": 0}}]}
    assert numa.plan_binding(env, "cuda:0")[0] is not None and numa.unavailable_checks() == []
    monkeypatch.setattr(numa, "sys", SimpleNamespace(platform="win32"))
    binding, why = numa.plan_binding(env, "cuda:0")
    assert binding is None and why.startswith("not bound: Windows: no NUMA binding (")
    assert numa.unavailable_checks() == [f"NUMA placement: {numa.WINDOWS_NO_BINDING}"]
    assert numa.plan_binding(env, "cpu") == (None, "nothing to bind: cpu is no CUDA GPU")


def test_windows_memory_comes_from_global_memory_status_ex(monkeypatch) -> None:
    """MEMORYSTATUSEX as Windows fills it: only with dwLength set to its 64 bytes; ullAvailPhys at byte 16."""
    calls = []

    class Kernel32:
        def GlobalMemoryStatusEx(self, status):  # type: ignore[no-untyped-def]  # noqa: N802
            address = ctypes.addressof(status._obj)
            calls.append(ctypes.c_uint32.from_address(address).value)
            if calls[-1] != 64:
                return 0
            ctypes.c_uint64.from_address(address + 16).value = 12 * 10**9
            return 1

    real_open = open

    def no_proc(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(path).startswith("/proc"):
            raise FileNotFoundError(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", no_proc)
    monkeypatch.setattr(buffers, "sys", SimpleNamespace(platform="win32"))
    monkeypatch.setattr(ctypes, "windll", SimpleNamespace(kernel32=Kernel32()), raising=False)
    assert buffers.available_host_memory() == (12 * 10**9, "available") and calls == [64]
    assert buffers.unavailable_checks() == []
    monkeypatch.delattr(ctypes, "windll")
    assert buffers.available_host_memory() is None
    assert buffers.unavailable_checks() == ["how much memory is free: Windows' GlobalMemoryStatusEx did not answer, so the"
                                            " memory check refuses no batch"]  # fmt: skip


def test_a_second_kill_of_either_kind_cannot_cut_a_save_short(monkeypatch) -> None:
    """Windows' Ctrl-Break is ignored while the sweep saves, as SIGTERM is (SIGUSR1 stands in for it here)."""
    monkeypatch.setattr(running, "KILL_SIGNALS", (signal.SIGTERM, signal.SIGUSR1))
    before = {signum: signal.getsignal(signum) for signum in running.KILL_SIGNALS}
    try:
        assert running.ignore_kills() == before
        assert all(signal.getsignal(signum) == signal.SIG_IGN for signum in running.KILL_SIGNALS)
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


def test_validate_waits_for_its_sweep_in_slices() -> None:
    """On Windows one long Popen.wait would hold Ctrl-C off until the sweep ended."""
    from xferbench.health import validate_command

    class Sweep:
        args = ["xferbench", "sweep"]

        def __init__(self, answers_after: int) -> None:
            self.waits: list[float] = []
            self.answers_after = answers_after

        def wait(self, timeout: float) -> int:
            self.waits.append(timeout)
            if len(self.waits) < self.answers_after:
                raise subprocess.TimeoutExpired(self.args, timeout)
            return 0

    sweep = Sweep(answers_after=6)
    assert validate_command.wait_for(sweep) == 0  # type: ignore[arg-type]
    assert len(sweep.waits) == 6 and all(0 < w <= validate_command.WAIT_SLICE_S for w in sweep.waits)
    silent = Sweep(answers_after=10**9)
    with pytest.raises(subprocess.TimeoutExpired):
        validate_command.wait_for(silent, 0.05)  # type: ignore[arg-type]
    assert all(0 < w <= validate_command.WAIT_SLICE_S for w in silent.waits)


def test_a_tools_output_saved_by_powershell_reads_as_one_saved_on_linux(tmp_path) -> None:
    """PowerShell 5's `>` saves UTF-16 with a byte-order mark and CRLF line ends; Notepad may mark UTF-8."""
    import peer_outputs as out

    from xferbench.reading.peers import read_bandwidthtest

    text = out.bandwidthtest(out.csv_line("H2D-Pinned", 25.9, 16 * 196608), out.csv_line("H2D-Pageable", 12.5, 16 * 196608))
    linux = tmp_path / "linux.txt"
    linux.write_bytes(text.encode("utf-8"))
    figures = [[(p.batch_size, p.median_s) for p in s.points] for s in read_bandwidthtest([linux]).series]
    assert figures and all(figures)
    for name, data in [("powershell.txt", text.replace("\n", "\r\n").encode("utf-16")),
                       ("notepad.txt", "\ufeff".encode("utf-8") + text.replace("\n", "\r\n").encode("utf-8"))]:  # fmt: skip
        (tmp_path / name).write_bytes(data)
        assert [[(p.batch_size, p.median_s) for p in s.points] for s in read_bandwidthtest([tmp_path / name]).series] == figures
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(XferbenchError, match="is a folder; give the file the tool's output was saved in"):
        read_bandwidthtest([folder])


# ---- the simulated Windows


@on_linux
def test_the_simulation_is_windows_to_python() -> None:
    r = run_windows("""
        import ctypes, multiprocessing, os, platform, re, select, signal, subprocess, sys
        print(sys.platform, platform.system(), platform.platform(), hasattr(os, "sched_getaffinity"), hasattr(os, "fork"),
              os.path.exists("/proc/self"), os.path.isdir("/sys/devices"), multiprocessing.get_start_method(),
              hasattr(signal, "SIGKILL"), int(signal.SIGBREAK))
        read, write = os.pipe()
        for attempt in (lambda: select.select([read], [], [], 0), lambda: os.symlink(sys.executable, "link"),
                        lambda: signal.signal(1, signal.SIG_IGN), lambda: __import__("resource")):
            try:
                attempt()
            except (OSError, ValueError, ImportError) as error:
                said = re.search(r"WinError \\d+", str(error))
                print(type(error).__name__, (said.group() if said else str(error)).replace(" ", "_"))
        killed = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        killed.kill()
        crashed = subprocess.Popen([sys.executable, "-c", "import ctypes; ctypes.string_at(0)"])
        print(killed.wait(), hex(crashed.wait()))
        """)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [
        "win32", "Windows", "Windows-11-10.0.26100-SP0", "False", "False", "False", "False", "spawn", "False", "21",
        "OSError", "WinError_10038", "PermissionError", "WinError_1314",
        "ValueError", "invalid_signal_value",
        "ModuleNotFoundError", "No_module_named_'resource'",
        "1", "0xc0000005",
    ]  # fmt: skip


@on_linux
def test_the_simulated_memory_call_is_as_strict_as_windows() -> None:
    """GlobalMemoryStatusEx fails without dwLength set to 64, fills every field with it, and a structure passed
    by value is a copy the caller never sees filled."""
    r = run_windows("""
        import ctypes
        from xferbench.core import environment

        class MemoryStatus(ctypes.Structure):
            _fields_ = [("dwLength", ctypes.c_uint32), ("dwMemoryLoad", ctypes.c_uint32)] + [
                (name, ctypes.c_uint64) for name in ("total", "avail", "page", "page_avail", "virtual", "virtual_avail", "ext")]

        call = ctypes.windll.kernel32.GlobalMemoryStatusEx
        unset, short, whole = MemoryStatus(), MemoryStatus(dwLength=32), MemoryStatus(dwLength=64)
        by_value = MemoryStatus(dwLength=64)
        print(call(ctypes.byref(unset)), unset.total, call(ctypes.byref(short)), short.total)
        print(call(ctypes.pointer(whole)), whole.dwMemoryLoad, whole.total, whole.avail, whole.page > whole.total)
        print(call(by_value), by_value.total, environment.windows_memory())
        """)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["0 0 0 0", f"1 65 {32 * 2**30} {12 * 10**9} True", f"1 0 ({32 * 2**30}, {12 * 10**9})"]


def simulated_windows_sweep(tmp_path: Path, *args: str, name: str = "win") -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / f"{name}.json"
    r = subprocess.run([sys.executable, "-m", "xferbench", "sweep", "--device", "cpu", "--batch-sizes", "1,4", "--shape",
                        "16x16x3", *FAST_ARGS, *args, "-o", str(out)], capture_output=True, encoding="cp1252",
                       env=windows_env(), timeout=600)  # fmt: skip
    return r, (json.loads(out.read_text()) if out.exists() else {})


@on_linux
@pytest.mark.slow
@needs_torch
def test_a_sweep_runs_its_workers_on_simulated_windows_and_says_what_it_cannot_check(tmp_path) -> None:
    """sys.platform win32, select() for sockets only, no links, no /proc, /sys or sched_getaffinity, a cp1252
    console, in the sweep and in every worker it starts: host and torch on the CPU measure, torch in a
    worker of its own, and the file says why nothing was read of NUMA, CPU affinity or a busy machine."""
    r, result = simulated_windows_sweep(tmp_path, "-f", "host", "-f", "torch")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    said = " ".join(r.stdout.split())
    assert "note: not available on Windows: busy-machine detection" in said
    assert "note: not available on Windows: the CPUs this process may run on (no sched_getaffinity)" in said
    assert "note: not available on Windows: NUMA placement: Windows: no NUMA binding (" in said
    assert "note: not available on Windows: page faults per call" in said
    assert ">=95% of peak" in said and "≥" not in said and "| batch |" in said  # cp1252 has no ≥ and no box drawing
    env = result["environment"]
    assert env["os"].startswith("Windows-") and env["machine"] == "AMD64"
    assert env["process_cpus"] is None and env["load_average"] is None and env["transparent_hugepages"] is None
    assert env["cpu_features"] is None  # no /proc/cpuinfo: what TensorFlow's oneDNN default read is not claimed
    assert env["memory_bytes"] == 32 * 2**30  # GlobalMemoryStatusEx's ullTotalPhys: Windows has no sysconf
    missing = env["unavailable_checks"]
    assert any(m.startswith("busy-machine detection") for m in missing)
    assert any("no sched_getaffinity" in m for m in missing)
    assert f"NUMA placement: {numa.WINDOWS_NO_BINDING}" in missing
    assert any(m.startswith("page faults per call: there is no getrusage here") for m in missing)
    assert isinstance(env["frameworks"]["torch"]["pid"], int)  # torch said hello from a worker of its own
    ran = {s["framework"] for s in result["series"] if s["status"] == "ok"}
    assert ran == {"host", "torch"}
    for series in result["series"]:
        for p in series["points"]:
            if p["status"] == "ok":
                assert p["others_cpus"] is None and p["run_wait"] is None and p.get("host_nodes") is None
                assert p.get("page_faults_per_call") is None
    # 32.4 GB a batch: more than the 12 GB GlobalMemoryStatusEx says is available, and than this machine has
    too_big, _ = simulated_windows_sweep(tmp_path, "-f", "host", "--shape", "30000x30000x3", "--batch-sizes", "12",
                                         name="big")  # fmt: skip
    assert too_big.returncode == 2 and "GB of host memory but 12.0 GB is available" in too_big.stderr, too_big.stderr


FAKE_PYTHON = """#!/bin/sh
[ "$1" = -c ] && exec {python} "$@"
exec {python} -c {code!r} "$@"
"""


def fake_python(tmp_path: Path, code: str) -> Path:
    """An interpreter that runs `code` in place of `python -m xferbench.measuring.worker FRAMEWORK` (in the simulated
    Windows too: it inherits the sweep's PYTHONPATH), and code given with -c as this Python does (the sweep asks an
    interpreter its version so)."""
    launcher = tmp_path / "python"
    launcher.write_text(FAKE_PYTHON.format(python=sys.executable, code=code))
    launcher.chmod(0o755)
    return launcher


@on_linux
@pytest.mark.parametrize("body, start_s, said", [
    ("import time; time.sleep(60)", "0.5", "was killed (TerminateProcess) after not starting within 0.5 s"),
    ("import ctypes; ctypes.string_at(0)", "300", "ended with Windows status 0xC0000005 (access violation)"),
])  # fmt: skip
def test_a_worker_that_dies_on_simulated_windows_is_said_in_windows_terms(tmp_path, body, start_s, said) -> None:
    python = fake_python(tmp_path, body)
    r = run_windows("""
        import sys
        from xferbench.measuring.backends import BACKENDS
        from xferbench.core.errors import XferbenchError
        from xferbench.measuring.worker import WorkerRunner
        runner = WorkerRunner(BACKENDS["torch"], sys.argv[1], start_timeout_s=float(sys.argv[2]))
        try:
            runner.hello()
        except XferbenchError as error:
            print(error)
        finally:
            runner.close()
        """, str(python), start_s)  # fmt: skip
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert f"the torch worker process {said}" in r.stdout


@on_linux
@pytest.mark.slow
@needs_torch
@pytest.mark.parametrize("key", ["ctrl-c", "ctrl-break"])
def test_ctrl_c_and_ctrl_break_stop_a_simulated_windows_sweep_and_keep_the_file(tmp_path, key) -> None:
    """A console's Ctrl-C and Ctrl-Break reach every process attached to it: the sweep and its workers."""
    out = tmp_path / "r.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "xferbench", "sweep", "-f", "torch", "-m", "pageable", "--device", "cpu",
         "--batch-sizes", "1,2,4,8,16", "--shape", "1000x1000x3", "--min-time", "2", "--max-samples", "100000",
         "-o", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="cp1252", env=windows_env(), start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (out.exists() and '"points": [\n' in out.read_text()):
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT if key == "ctrl-c" else 21)  # 21: Windows' SIGBREAK, as the simulation delivers it
    stdout, stderr = process.communicate(timeout=60)
    code, word = (130, "interrupted: ") if key == "ctrl-c" else (143, "terminated: ")
    assert process.returncode == code and word in stderr and "Traceback" not in stderr, stderr
    saved = json.loads(out.read_text())
    assert saved["status"] == "interrupted" and saved["series"][0]["points"][0]["status"] == "ok"
    with pytest.raises(ProcessLookupError):
        os.kill(saved["environment"]["frameworks"]["torch"]["pid"], 0)


# A stand-in for the sweep validate starts: it says it is ready, then waits; Ctrl-Break makes it save.
CHILD_SWEEP = """import os, signal, sys, time
def stop(signum, frame):
    open(sys.argv[1] + ".saved", "w").write(signal.Signals(signum).name)
    sys.exit(143)
signal.signal(signal.SIGBREAK, stop)
open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(600)
"""


@on_linux
def test_validate_stops_its_sweep_with_ctrl_break_on_simulated_windows(tmp_path) -> None:
    """Windows' SIGTERM is TerminateProcess, which no program can catch: validate starts each sweep in a
    process group of its own and stops it with Ctrl-Break, at once, since the group kept the terminal's
    Ctrl-C from it (a grace of 300 s here would time the test out)."""
    ready = tmp_path / "child.pid"
    r = run_windows("""
        import _thread, os, sys, threading, time
        from pathlib import Path
        from xferbench.health import validate_command
        from xferbench.measuring import running
        validate_command.SAVE_GRACE_S = 300.0
        ready = Path(sys.argv[1])

        def ctrl_c() -> None:  # the terminal's Ctrl-C, which reaches validate alone
            while not ready.exists() or not ready.read_text():
                time.sleep(0.01)
            _thread.interrupt_main()

        threading.Thread(target=ctrl_c, daemon=True).start()
        try:
            with running.terminated_as_interrupted():
                validate_command.run_child_sweep([sys.executable, "-c", sys.argv[2], str(ready)], dict(os.environ))
        except KeyboardInterrupt as stop:
            print("stopped", type(stop).__name__)
        """, str(ready), CHILD_SWEEP, timeout=120)  # fmt: skip
    assert r.returncode == 0 and r.stdout.split() == ["stopped", "KeyboardInterrupt"], r.stdout + r.stderr
    assert (tmp_path / "child.pid.saved").read_text() == "SIGBREAK"
