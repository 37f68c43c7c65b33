"""Published host-to-device figures per GPU model, for `xferbench check`: each names its source.

A floor is a figure a published health check fails a GPU below; a typical range is what published
runs measured, shown for context and never judged. Both are nvbandwidth-style copy-engine figures
from pinned memory, in GB/s (10^9 B), per direction: what the raw pinned copy, streamed, measures.
Only figures with a public source are here; a model without one gets "no reference" said plainly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Reference:
    model: str  # a pattern matched against the GPU's name, as a whole word (H200 does not match GH200)
    floor_gbps: float | None  # fail below this; None where no published floor exists
    typical_gbps: tuple[float, float] | None  # what published runs measured, lowest and highest
    source: str  # where the figures come from, and when they were read

    def matches(self, name: str) -> bool:
        return re.search(rf"(?<![A-Za-z0-9]){re.escape(self.model)}(?![A-Za-z0-9])", name) is not None


READ = "read 2026-11-23"
REFERENCES = (
    Reference("H100", 52.0, (55.3, 57.0),
              "floor: Azure HPC health checks (azurehpc-health-checks), the H100 VM's nvbandwidth host-to-device"
              f" copy-engine limit; typical: nvbandwidth issue #6, a public HGX H100 SXM5 burn-in log, Gen5 x16 ({READ})"),
    Reference("A100", 24.0, None,
              f"floor: Azure HPC health checks (azurehpc-health-checks), the A100 VM's nvbandwidth host-to-device limit ({READ})"),
    Reference("H200", None, (55.4, 55.4),
              f"typical: Stas Bekman's ml-engineering network notes, H200 on PCIe Gen5 x16, host to device ({READ})"),
)  # fmt: skip


def reference_for(name: str) -> Reference | None:
    """The published figures for a GPU's model, or None: then there is no reference for it."""
    return next((r for r in REFERENCES if r.matches(name)), None)


__all__ = ["REFERENCES", "Reference", "reference_for"]
