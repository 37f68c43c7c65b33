"""xferbench: how fast does data get from host memory into a GPU, through each framework's real path."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path


def _source_version() -> str:
    """The version in the source tree's pyproject.toml, marked as such: a GPU image's own python3 runs
    xferbench from a checkout, and its result files must still say which xferbench made them."""
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        found = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(), re.MULTILINE)
    except OSError:
        found = None
    return f"{found.group(1)}+source" if found else "0.0.0+unknown"


try:
    __version__ = importlib.metadata.version("xferbench")
except importlib.metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = _source_version()

from xferbench.core.results import Result, load  # noqa: E402

__all__ = ["Result", "__version__", "load"]
