#!/usr/bin/env python3
"""`xferbench validate` from a checkout, with any Python that has the frameworks (a GPU image's own
python3, say), without installing xferbench:

    python3 scripts/validate_gpu.py [FOLDER] [--device cuda:N] [-f FRAMEWORK ...] [--quick] [--peer PATH ...]

The same command and options as `xferbench validate` (docs/gpu-validation.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from xferbench.cli import app  # noqa: E402

if __name__ == "__main__":
    app(["validate", *sys.argv[1:]], prog_name="validate_gpu.py")
