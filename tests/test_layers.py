"""Readers only read: plot, report, compare, validate, fleet, pairs and the results file import nothing
that measures (backends, measure, sweep, worker), so a reader can run where no framework is installed."""

from __future__ import annotations

import subprocess
import sys

import pytest

READERS = ("plot", "report", "compare", "validate", "fleet", "pairs", "results", "display", "references", "peers", "pipeline_report")
MEASURING = ("xferbench.backends", "xferbench.measure", "xferbench.sweep", "xferbench.worker")


@pytest.mark.parametrize("reader", READERS)
def test_a_reader_imports_nothing_that_measures(reader: str) -> None:
    probe = (f"import sys, xferbench.{reader}; "
             f"print(' '.join(sorted(m for m in sys.modules if m.startswith({MEASURING!r}))))")  # fmt: skip
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == [], f"xferbench.{reader} imports {found.stdout.strip()}"
