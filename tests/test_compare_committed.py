"""compare on committed result files, as a CI log gets it: what it calls each file, and how its lines wrap."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from xferbench.reading.compare import compare_files, render

REPO = Path(__file__).resolve().parent.parent
H200 = REPO / "results/nvidia-h200/2026-11-26"


def shown(base: Path, new: Path, width: int = 160) -> str:
    """What compare prints into a file or a pipe at `width` columns (no terminal, no colour)."""
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, emoji=False).print(render(compare_files(base, new), base, new))
    return out.getvalue()


def test_files_of_one_name_are_called_by_the_folder_that_differs_once_the_first_line_named_them() -> None:
    base, new = H200 / "run-2/validation/default.json", H200 / "run-4/validation/default.json"
    text = shown(base, new)
    assert " ".join(text.split()).startswith(f"run-2 ({base}) → run-4 ({new}): median MB/s")
    assert "each path, NEW (run-4) against BASE (run-2):" in text
