"""compare on committed result files, as a CI log gets it: what it calls each file, and how its lines wrap."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text
from typer.testing import CliRunner

from xferbench.cli import app
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


CPU = REPO / "results/cpu-amd-epyc-2core"
PAIRS = [(CPU / "tf-host-buffers.json", CPU / "tf-host-buffers-glibc-tunables.json"),
         (H200 / "run-2/validation/default.json", H200 / "run-4/validation/default.json")]  # fmt: skip


def prose(printed: str) -> list[str]:
    """The words of the lines that are no table's."""
    return " ".join(line for line in printed.splitlines() if not line.startswith(("┏", "┃", "┡", "│", "└"))).split()


@pytest.mark.parametrize(("base", "new"), PAIRS)
def test_piped_at_160_columns_no_sentence_wraps_mid_word(base: Path, new: Path) -> None:
    """What a CI log gets (stdout no terminal: 160 columns, or COLUMNS=160): lines of at most 160 columns, broken at
    spaces only: the words printed are the words of each line's text, every one whole."""
    said = render(compare_files(base, new), base, new)
    words = " ".join(part.plain for part in said.renderables if isinstance(part, Text)).split()  # type: ignore[attr-defined]
    for env in ({"COLUMNS": "160"}, {"COLUMNS": None}):  # None: unset, as in a CI job
        printed = CliRunner().invoke(app, ["compare", str(base), str(new)], env=env).stdout
        assert max(map(len, printed.splitlines())) <= 160
        assert prose(printed) == words, env
        assert len(printed.splitlines()) > len(said.renderables) + len(compare_files(base, new).rows) + 3  # some lines wrapped
