"""Make this Python look like macOS on Apple silicon to xferbench: loaded at start-up by every interpreter
that has this folder on PYTHONPATH (the sweep and each framework worker it starts).

What changes, as on a Mac: sys.platform is "darwin"; platform answers as macOS on arm64 (system,
machine, processor, release, uname, mac_ver, platform); os has no sched_getaffinity or
sched_setaffinity; /proc and /sys do not exist for open(), os.listdir(), os.scandir(), os.stat() and the
os.path checks. The tools in bin/ answer as macOS's do (sysctl, ioreg, system_profiler), each for the
Mac that the SIMULATED_MAC_* variables below describe. With SIMULATED_MAC_TORCH set to a PyTorch
version, `import torch` gives the stand-in for PyTorch on a Mac (tests/fake_mps.py) of that release,
whose Apple GPU (mps) a series can run on from planning to the result file. Native libraries still see
Linux: this tests xferbench's own code paths.

- SIMULATED_MACOS: the macOS version (15.5)
- SIMULATED_MAC_CHIP, SIMULATED_MAC_GPU_CORES, SIMULATED_MAC_MEMSIZE: read by bin/ (Apple M1 Pro, 16, 16 GiB)
- SIMULATED_MAC_IOREG=absent: ioreg finds no AGXAccelerator, so system_profiler must answer
- SIMULATED_MAC_TORCH: the PyTorch release to stand in for (unset: the installed PyTorch, without MPS)
"""

import builtins
import importlib.util
import io
import os
import platform
import sys
import sysconfig
from pathlib import Path

# Modules that pick a platform's native helpers as they are imported are imported as Linux first: they
# would look for macOS's own (_sysconfigdata_darwin..., _scproxy), which this Python does not have.
sysconfig.get_config_vars()
import urllib.request  # noqa: E402,F401

HIDDEN = ("/proc", "/sys")
MACOS = os.environ.get("SIMULATED_MACOS", "15.5")
# The Darwin kernel each macOS ships: 11 to 15 are Darwin 20 to 24, macOS 26 is Darwin 25.
DARWIN = f"{int(MACOS.split('.')[0]) + 9 if int(MACOS.split('.')[0]) <= 15 else 25}.{MACOS.split('.')[1] if '.' in MACOS else 0}.0"


def _hidden(path) -> bool:
    try:
        text = os.fsdecode(path) if not isinstance(path, int) else ""
    except TypeError:
        return False
    text = os.path.abspath(text) if text else text
    return any(text == root or text.startswith(root + "/") for root in HIDDEN)


def _refuse(path):
    raise FileNotFoundError(2, "No such file or directory (simulated macOS)", os.fsdecode(path))


def _guard(real, on_hidden=None):
    def wrapper(path, *args, **kwargs):
        if _hidden(path):
            return on_hidden(path) if on_hidden else _refuse(path)
        return real(path, *args, **kwargs)

    wrapper.__wrapped__ = real
    return wrapper


_open = _guard(builtins.open)
builtins.open = io.open = _open
os.listdir = _guard(os.listdir)
os.scandir = _guard(os.scandir)
os.stat = _guard(os.stat)
os.lstat = _guard(os.lstat)
os.access = _guard(os.access, lambda path: False)
os.path.exists = _guard(os.path.exists, lambda path: False)
os.path.isdir = _guard(os.path.isdir, lambda path: False)
os.path.isfile = _guard(os.path.isfile, lambda path: False)
for name in ("sched_getaffinity", "sched_setaffinity"):
    if hasattr(os, name):
        delattr(os, name)
sys.platform = "darwin"

# platform as Python on an Apple-silicon Mac answers it (the Python of python.org or Homebrew, 3.11), to
# everyone but the frameworks whose import loads this machine's own native libraries by platform.system()
# (PyTorch would look for libtorch_global_deps.dylib): they are Linux builds, and are told so.
NATIVE = ("torch", "functorch", "torchgen")
_real = {name: getattr(platform, name)() for name in ("system", "machine", "processor", "release", "uname", "mac_ver", "platform")}
_mac = {
    "system": "Darwin", "machine": "arm64", "processor": "arm", "release": DARWIN, "mac_ver": (MACOS, ("", "", ""), "arm64"),
    "uname": platform.uname_result("Darwin", platform.node(), DARWIN, f"Darwin Kernel Version {DARWIN}", "arm64"),
    "platform": f"macOS-{MACOS}-arm64-arm-64bit",
}  # fmt: skip


def _answer(name):
    def answer(*args, **kwargs):
        caller = sys._getframe(1).f_globals.get("__name__") or ""
        return _real[name] if caller.split(".")[0] in NATIVE else _mac[name]

    return answer


for _name in _mac:
    setattr(platform, _name, _answer(_name))

if os.environ.get("SIMULATED_MAC_TORCH"):
    _spec = importlib.util.spec_from_file_location("_simulated_mac_torch", Path(__file__).resolve().parent.parent / "fake_mps.py")
    _fake = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_fake)
    sys.modules["torch"] = _fake.FakeTorch(os.environ["SIMULATED_MAC_TORCH"])
