"""Make this Python look like macOS to xferbench: loaded at start-up by every interpreter that has this
folder on PYTHONPATH (the sweep and each framework worker it starts).

What changes, as on a Mac: sys.platform is "darwin"; os has no sched_getaffinity or
sched_setaffinity; /proc and /sys do not exist for open(), os.listdir(), os.scandir(), os.stat()
and the os.path checks. Native libraries still see Linux: this tests xferbench's own code paths.
"""

import builtins
import io
import os
import sys
import sysconfig

# Modules that pick a platform's native helpers as they are imported are imported as Linux first: they
# would look for macOS's own (_sysconfigdata_darwin..., _scproxy), which this Python does not have.
sysconfig.get_config_vars()
import urllib.request  # noqa: E402,F401

HIDDEN = ("/proc", "/sys")


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
