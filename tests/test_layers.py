"""Readers only read: plot, report, compare, validate, fleet, pairs and the results file import nothing
that measures (backends, measure, sweep, worker), so a reader can run where no framework is installed."""

from __future__ import annotations

import subprocess
import sys

import pytest

READERS = ("reading.plot", "reading.report", "reading.compare", "validate", "fleet", "reading.pairs", "core.results", "reading.display",
           "core.references", "reading.peers", "reading.pipeline_report")
MEASURING = ("xferbench.backends", "xferbench.measure", "xferbench.sweep", "xferbench.worker", "xferbench.sampler")


@pytest.mark.parametrize("reader", READERS)
def test_a_reader_imports_nothing_that_measures(reader: str) -> None:
    probe = (f"import sys, xferbench.{reader}; "
             f"print(' '.join(sorted(m for m in sys.modules if m.split('.')[:2] in [x.split('.') for x in {MEASURING!r}])))")  # fmt: skip
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == [], f"xferbench.{reader} imports {found.stdout.strip()}"


def test_check_validate_and_fleet_judge_in_one_vocabulary() -> None:
    """One verdict type and one set of statuses: those the files hold, whichever command wrote or reads them."""
    import ast
    import importlib
    from pathlib import Path

    from xferbench import check, validate
    from xferbench.core import verdict

    assert check.Verdict is validate.Verdict is verdict.Verdict
    assert (check.PASS, check.FAIL, check.WARN, check.NA, check.INFO) == verdict.STATUSES
    for name in ("check", "validate", "fleet", "validation"):
        tree = ast.parse(Path(importlib.import_module(f"xferbench.{name}").__file__).read_text())
        literals = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
        assert not literals & set(verdict.STATUSES), f"{name}.py spells a status itself: {literals & set(verdict.STATUSES)}"
