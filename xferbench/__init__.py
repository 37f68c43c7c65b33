"""xferbench: how fast does data get from host memory into a GPU, through each framework's real path."""

from __future__ import annotations

import importlib.metadata

try:
    __version__ = importlib.metadata.version("xferbench")
except importlib.metadata.PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"

from xferbench.results import Result, load  # noqa: E402

__all__ = ["Result", "__version__", "load"]
