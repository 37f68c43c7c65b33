"""The report on committed result files: what its first lines call each file, and what it says about a figure's quality."""

from __future__ import annotations

from pathlib import Path

from xferbench.core.results import select
from xferbench.reading import report

REPO = Path(__file__).resolve().parent.parent
H200 = Path("results/nvidia-h200/2026-11-26")


def test_two_files_of_one_name_are_called_by_the_folder_that_tells_them_apart() -> None:
    """run-2/validation/default.json against run-4/validation/default.json: "run-4 is 1.13× faster", the paths named once."""
    text = report.render(*select([REPO / H200 / "run-2/validation/default.json", REPO / H200 / "run-4/validation/default.json"]))
    top = text.split("### Notes")[0]
    assert text.startswith("## xferbench report: run-2 vs run-4\n")
    assert "- `cuda/raw_pinned/copy`: run-4 is 1.13× faster from batch 1 to 2;" in top
    assert top.count("run-4/validation/default.json") == 1  # in the opening line only: run-4 (`results/.../default.json`)
    assert "| path | peak run-2 | peak run-4 | run-4 / run-2, peak to peak | verdict by batch |" in top
