"""Make this Python look like Windows to xferbench: loaded at start-up by every interpreter that has this
folder on PYTHONPATH (the sweep and each framework worker it starts).

What changes, as on Windows (from Python's and the C runtime's documentation of each call):
- sys.platform is "win32"; platform.system(), platform.platform(), release(), version(), machine(),
  processor(), uname() and win32_ver() answer as Windows 11 on an x86-64 PC does;
- /proc and /sys do not exist for open(), os.listdir(), os.scandir(), os.stat() and the os.path checks;
- os has no sched_getaffinity, sched_setaffinity, fork, forkpty, getloadavg, sysconf,
  killpg, getpgid or setsid; there is no `resource` module; multiprocessing has the spawn method only;
- select.select() takes sockets only: anything else is WinError 10038; select has no poll or epoll;
- a symbolic link needs a privilege an ordinary user lacks (WinError 1314);
- signal.signal() takes SIGINT, SIGILL, SIGFPE, SIGSEGV, SIGTERM, SIGBREAK (21) and SIGABRT (22) only;
  there is no SIGKILL, SIGHUP, SIGALRM, alarm() or pause(); CTRL_C_EVENT and CTRL_BREAK_EVENT exist. A
  process whose SIGBREAK is left alone dies of it, as Windows ends one on Ctrl-Break;
- os.kill(pid, CTRL_BREAK_EVENT) reaches the process group `pid` (one made with CREATE_NEW_PROCESS_GROUP),
  CTRL_C_EVENT reaches no group at all, and any other value ends the process with that exit status
  (TerminateProcess);
- subprocess.Popen: no preexec_fn; start_new_session is ignored and CREATE_NEW_PROCESS_GROUP makes the
  group; kill() and terminate() are TerminateProcess (exit status 1); send_signal() takes SIGTERM (that
  same kill), CTRL_C_EVENT and CTRL_BREAK_EVENT only; a process ended by Ctrl-C exits 0xC000013A, one
  that crashed 0xC0000005, one that called abort() 3;
- ctypes.windll.kernel32.GlobalMemoryStatusEx answers 32 GiB installed, 12 GB available, and fails unless the
  MEMORYSTATUSEX's dwLength is set to its 64 bytes.
The tests also set PYTHONIOENCODING=cp1252, the ANSI code page of a Western-European Windows console.

What stays Linux, and why:
- os.name, os.sep, os.pathsep, os.path and pathlib stay POSIX: this machine's files are still reached by
  Linux paths, so drive letters and backslashes are not simulated;
- every module but xferbench's is imported as on Linux (sys.platform reads "linux" while it runs its
  top level): they are this machine's builds, and a Windows build of each exists. At run time every
  check of sys.platform sees Windows;
- the signals underneath are Linux's: SIGBREAK is delivered as Linux's signal 21 (SIGTTIN).
"""

import builtins
import ctypes
import enum
import errno
import importlib.abc
import io
import multiprocessing
import multiprocessing.context
import os
import platform
import select
import selectors
import signal
import stat
import subprocess
import sys
import sysconfig

sysconfig.get_config_vars()  # computed as Linux, before sys.platform would send it looking for Windows' data
import urllib.request  # noqa: E402,F401  (as in the simulated macOS: native helpers picked at import)

_real_signal, _real_kill, _real_killpg = signal.signal, os.kill, os.killpg  # before Windows' os loses killpg
SIMULATED = {"xferbench"}  # packages that see Windows while they are imported; the rest are this machine's
ABSENT = {"resource"}  # POSIX-only modules xferbench might import: Windows' Python has none of them
HIDDEN = ("/proc", "/sys")


# ---- imports: xferbench's modules see Windows, every other module imports as on Linux


class _Loader(importlib.abc.Loader):
    """A module's own loader, run with sys.platform set to the OS its code was built for."""

    def __init__(self, loader, platform_name: str) -> None:
        self.loader, self.platform_name = loader, platform_name

    def _as(self, run, *args):
        previous = sys.platform
        sys.platform = self.platform_name
        try:
            return run(*args)
        finally:
            sys.platform = previous

    def create_module(self, spec):
        return self._as(self.loader.create_module, spec)

    def exec_module(self, module):
        return self._as(self.loader.exec_module, module)

    def __getattr__(self, name):  # get_data, get_source, get_resource_reader...: the module's own loader's
        return getattr(self.loader, name)


class _Imports(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name in ABSENT:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None) if finder is not self else None
            spec = find(name, path, target) if find else None
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and not isinstance(spec.loader, _Loader):
            spec.loader = _Loader(spec.loader, "win32" if name.partition(".")[0] in SIMULATED else "linux")
        return spec


sys.meta_path.insert(0, _Imports())


def _native() -> bool:
    """Whether a module other than xferbench's is importing: then the call is this machine's own."""
    return sys.platform != "win32"


# ---- files: no /proc, no /sys; no symbolic links for an ordinary user


def _hidden(path) -> bool:
    try:
        text = os.fsdecode(path) if not isinstance(path, int) else ""
    except TypeError:
        return False
    text = os.path.abspath(text) if text else text
    return any(text == root or text.startswith(root + "/") for root in HIDDEN)


def _refuse(path):
    raise FileNotFoundError(2, "The system cannot find the path specified (simulated Windows)", os.fsdecode(path))


def _guard(real, on_hidden=None):
    def wrapper(path, *args, **kwargs):
        if _hidden(path):
            return on_hidden(path) if on_hidden else _refuse(path)
        return real(path, *args, **kwargs)

    wrapper.__wrapped__ = real
    return wrapper


builtins.open = io.open = _guard(builtins.open)
os.listdir = _guard(os.listdir)
os.scandir = _guard(os.scandir)
os.stat = _guard(os.stat)
os.lstat = _guard(os.lstat)
os.access = _guard(os.access, lambda path: False)
os.path.exists = _guard(os.path.exists, lambda path: False)
os.path.isdir = _guard(os.path.isdir, lambda path: False)
os.path.isfile = _guard(os.path.isfile, lambda path: False)


def _symlink(src, dst, target_is_directory=False, *, dir_fd=None):
    raise OSError(errno.EPERM, "[WinError 1314] A required privilege is not held by the client", os.fsdecode(src))


os.symlink = _symlink

# ---- os, resource and multiprocessing: what Windows' Python does not have

for name in ("sched_getaffinity", "sched_setaffinity", "fork", "forkpty", "getloadavg", "sysconf",
             "killpg", "getpgid", "setsid"):  # fmt: skip
    if hasattr(os, name):
        delattr(os, name)
for name in ABSENT:
    sys.modules.pop(name, None)  # imported again, it is not found (_Imports)
multiprocessing.set_start_method("spawn", force=True)
multiprocessing.context._concrete_contexts = {"spawn": multiprocessing.context._concrete_contexts["spawn"]}

# ---- select: sockets only


_select = select.select


def _windows_select(rlist, wlist, xlist, timeout=None):
    for item in (*rlist, *wlist, *xlist):
        fd = item if isinstance(item, int) else item.fileno()
        try:
            socket = stat.S_ISSOCK(os.fstat(fd).st_mode)
        except OSError:
            socket = False
        if not socket:
            raise OSError(errno.ENOTSOCK, "[WinError 10038] An operation was attempted on something that is not a socket")
    if not (rlist or wlist or xlist):
        raise OSError(errno.EINVAL, "[WinError 10022] An invalid argument was supplied")
    return _select(rlist, wlist, xlist, timeout)


select.select = _windows_select
for name in ("poll", "epoll", "devpoll", "kqueue"):
    if hasattr(select, name):
        delattr(select, name)
selectors.DefaultSelector = selectors.SelectSelector

# ---- signals: the C runtime's seven, and the two console events

_REAL_SIGKILL, _REAL_SIGINT = int(signal.SIGKILL), int(signal.SIGINT)
WINDOWS_SIGNALS = {"SIGINT": 2, "SIGILL": 4, "SIGFPE": 8, "SIGSEGV": 11, "SIGTERM": 15, "SIGBREAK": 21, "SIGABRT": 22}
CONSOLE_EVENTS = {"CTRL_C_EVENT": 0, "CTRL_BREAK_EVENT": 1}
for name in [n for n in dir(signal) if (n.startswith("SIG") and not n.startswith("SIG_")) or n.startswith("ITIMER")]:
    delattr(signal, name)
for name in ("SIG_BLOCK", "SIG_UNBLOCK", "SIG_SETMASK", "Sigmasks", "ItimerError", "alarm", "pause", "setitimer",
             "getitimer", "siginterrupt", "pthread_kill", "pthread_sigmask", "sigpending", "sigwait", "sigwaitinfo",
             "sigtimedwait", "pidfd_send_signal", "struct_siginfo"):  # fmt: skip
    if hasattr(signal, name):
        delattr(signal, name)
signal.Signals = enum.IntEnum("Signals", {**WINDOWS_SIGNALS, **CONSOLE_EVENTS})
for name, number in {**WINDOWS_SIGNALS, **CONSOLE_EVENTS}.items():
    setattr(signal, name, signal.Signals[name])
signal.NSIG = 23
signal.valid_signals = lambda: set(signal.Signals(n) for n in WINDOWS_SIGNALS.values())


def _windows_signal(signalnum, handler):
    if not _native() and int(signalnum) not in WINDOWS_SIGNALS.values():
        raise ValueError("signal number out of range" if not 0 < int(signalnum) < 23 else "invalid signal value")
    return _real_signal(signalnum, handler)


signal.signal = _windows_signal


def _die_of_ctrl_break(signum, frame):
    """Windows' own action on Ctrl-Break: the process ends at once, with the status of a Ctrl-C."""
    _real_signal(_REAL_SIGINT, signal.SIG_DFL)
    _real_kill(os.getpid(), _REAL_SIGINT)


_real_signal(WINDOWS_SIGNALS["SIGBREAK"], _die_of_ctrl_break)

_ended_with: dict[int, int] = {}  # pid -> the exit status TerminateProcess gave it


def _terminate(pid: int, status: int) -> None:
    _ended_with[pid] = status
    _real_kill(pid, _REAL_SIGKILL)


def _windows_kill(pid, sig):
    if sig == CONSOLE_EVENTS["CTRL_C_EVENT"]:
        return  # GenerateConsoleCtrlEvent: a process group never receives CTRL_C_EVENT
    if sig == CONSOLE_EVENTS["CTRL_BREAK_EVENT"]:
        try:
            _real_killpg(pid, WINDOWS_SIGNALS["SIGBREAK"])
        except ProcessLookupError:
            pass  # no such process group: nobody receives it
        return
    _terminate(pid, int(sig))


os.kill = _windows_kill

# ---- subprocess: Windows' Popen on top of Linux's

subprocess.CREATE_NEW_PROCESS_GROUP = 0x00000200
subprocess.CREATE_NO_WINDOW = 0x08000000
_popen_init, _popen_exitstatus = subprocess.Popen.__init__, subprocess.Popen._handle_exitstatus
# What a Linux death by signal is as a Windows exit status: Ctrl-C and Ctrl-Break end a console process
# with STATUS_CONTROL_C_EXIT, a crash with its exception code, abort() with 3.
WINDOWS_STATUS = {2: 0xC000013A, 4: 0xC000001D, 6: 3, 7: 0xC0000005, 8: 0xC0000094, 11: 0xC0000005}


def _popen(self, args, *positional, preexec_fn=None, creationflags=0, start_new_session=False, process_group=None,
           **options):  # fmt: skip
    if preexec_fn is not None:
        raise ValueError("preexec_fn is not supported on Windows platforms")
    _popen_init(self, args, *positional, start_new_session=bool(creationflags & subprocess.CREATE_NEW_PROCESS_GROUP),
                **options)  # fmt: skip


def _exitstatus(self, *args, **kwargs):
    _popen_exitstatus(self, *args, **kwargs)
    try:
        if self.returncode is not None and self.returncode < 0:
            signum = -self.returncode
            self.returncode = _ended_with.pop(self.pid, 1) if signum == _REAL_SIGKILL else WINDOWS_STATUS.get(signum, 1)
    except Exception:  # at interpreter shutdown (Popen.__del__) the names above may be gone
        pass


def _kill(self):
    if self.returncode is None:
        _terminate(self.pid, 1)


def _send_signal(self, sig):
    self.poll()
    if self.returncode is not None:
        return
    if sig == signal.SIGTERM:
        self.terminate()
    elif sig in (signal.CTRL_C_EVENT, signal.CTRL_BREAK_EVENT):
        os.kill(self.pid, sig)
    else:
        raise ValueError(f"Unsupported signal: {sig}")


subprocess.Popen.__init__ = _popen
subprocess.Popen._handle_exitstatus = _exitstatus
subprocess.Popen.kill = subprocess.Popen.terminate = _kill
subprocess.Popen.send_signal = _send_signal

# ---- ctypes: the one Windows API call xferbench makes

MEMORY_TOTAL, MEMORY_AVAILABLE = 32 * 2**30, 12 * 10**9
PAGE_FILE, VIRTUAL = 8 * 2**30, 2**47 - 2**17  # the page file beside the RAM; a 64-bit process's user address space


class _Kernel32:
    def GlobalMemoryStatusEx(self, status):  # noqa: N802 (Windows' name)
        """MEMORYSTATUSEX as Windows fills it, behind a pointer (ctypes.byref or ctypes.pointer): only when its
        dwLength is the structure's size (64 bytes), else the call fails (0, ERROR_INVALID_PARAMETER) and
        leaves it as it was. A structure passed by value reaches Windows as a copy (x64 passes one that
        large by reference to a temporary): the call works on the copy and the caller's stays as it was."""
        if isinstance(status, ctypes.Structure):
            return int(ctypes.c_uint32.from_address(ctypes.addressof(status)).value == 64)
        target = status.contents if isinstance(status, ctypes._Pointer) else status._obj
        address = ctypes.addressof(target)
        if ctypes.c_uint32.from_address(address).value != 64:
            return 0
        fields = (MEMORY_TOTAL, MEMORY_AVAILABLE, MEMORY_TOTAL + PAGE_FILE, MEMORY_AVAILABLE + PAGE_FILE, VIRTUAL, VIRTUAL, 0)
        ctypes.c_uint32.from_address(address + 4).value = round(100 * (1 - MEMORY_AVAILABLE / MEMORY_TOTAL))  # dwMemoryLoad
        for offset, value in zip(range(8, 64, 8), fields):  # ullTotalPhys, ullAvailPhys, the page file's, the virtual's
            ctypes.c_uint64.from_address(address + offset).value = value
        return 1


class _WinDLLs:
    kernel32 = _Kernel32()


ctypes.windll = _WinDLLs()

# ---- platform: Windows 11 on an x86-64 PC

_node = platform.node()
platform.system = lambda: "Windows"
platform.release = lambda: "11"
platform.version = lambda: "10.0.26100"
platform.machine = lambda: "AMD64"
platform.processor = lambda: "Intel64 Family 6 Model 143 Stepping 8, GenuineIntel"
platform.platform = lambda aliased=False, terse=False: "Windows-11-10.0.26100-SP0"
platform.uname = lambda: platform.uname_result("Windows", _node, "11", "10.0.26100", "AMD64")
platform.win32_ver = lambda release="", version="", csd="", ptype="": ("11", "10.0.26100", "SP0", "Multiprocessor Free")
platform.win32_edition = lambda: "Professional"

sys.platform = "win32"
