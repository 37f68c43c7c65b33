"""One verdict, one vocabulary, for every command that judges: check (per GPU), validate (per run)
and fleet (per node, reading check's files). Written into result files as these strings."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# pass and fail judge; warn is a fault worth a look that fails nothing (check's PCIe replays); n/a: the
# fact needed was missing, so nothing was judged; info is shown beside the verdicts, never judged.
PASS, FAIL, WARN, NA, INFO = "pass", "fail", "warn", "n/a", "info"
STATUSES = (PASS, FAIL, WARN, NA, INFO)


@dataclass(frozen=True)
class Verdict:
    name: str  # what was judged: a check's name, or a path's label
    status: str  # one of STATUSES
    figure: str  # what was found, in words and numbers, or why nothing could be judged


def passed(verdicts: Sequence[Verdict]) -> bool:
    """Every verdict that can fail passed: info is shown, not judged (n/a does not pass)."""
    return all(v.status == PASS for v in verdicts if v.status != INFO)
