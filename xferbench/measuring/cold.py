"""--cold-source: the source evicted from the CPU's caches before every timed call, as bandwidthTest does.

CUDA samples' bandwidthTest (v12.8) times each pageable copy alone with the host clock and, after each,
memsets a 256 MiB buffer of its own, outside the timing, with a value that changes every copy: the next
copy starts with the source (and whatever the driver staged it through) pushed out of the caches.
xferbench otherwise copies the same source back to back, so a source that fits in the caches is
read from them. This makes the same memset, of the same size, before each timed call of a series, in
the process and on the thread that makes the copy; the warm-up and the byte check stay as they are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xferbench.core.spec import H2D, STREAMED, SeriesKey, is_pipeline

COLD_SOURCE = "cold_source"  # the sweep's parameter, taken out before a backend sees its parameters
EVICTION_BYTES = 256 * 2**20  # bandwidthTest's FLUSH_SIZE
PAGE_LOCKED_MODES = ("raw_registered",)  # pageable arrays pinned in place: no staging copy reads them


def cold_source_reason(key: SeriesKey) -> str | None:
    """Why --cold-source cannot apply to this series, or None where it does: a per-call host-to-device copy,
    or a host copy, from pageable memory, as bandwidthTest evicts between its pageable copies only."""
    if key.framework == "sim":
        return "--cold-source: the simulated link reads no host memory, so there is no cache to make cold"
    if is_pipeline(key.framework, key.mode):
        return "--cold-source evicts between single copies; a pipeline's loader makes each batch between calls"
    if key.direction != H2D:
        return f"--cold-source makes the host source of a host-to-device copy cold; a {key.direction} copy reads the device"
    if key.method == STREAMED:
        return "--cold-source evicts between timed calls; a streamed series queues its copies back to back with nothing between"
    if key.host_buffer == "pinned" or key.mode in PAGE_LOCKED_MODES:
        return (f"--cold-source evicts between pageable copies, as bandwidthTest does; {key.framework}/{key.mode} copies"
                " from page-locked memory")  # fmt: skip
    return None


class Eviction:
    """A buffer of `nbytes`, touched once when made (so its page faults stay out of the samples), that each
    call overwrites whole with a new byte value: the memset bandwidthTest makes between its pageable copies."""

    def __init__(self, nbytes: int = 0) -> None:
        self.nbytes = nbytes or EVICTION_BYTES
        self.buffer = np.empty(self.nbytes, dtype=np.uint8)
        self.buffer.fill(0xFF)
        self.calls = 0

    def __call__(self) -> None:
        self.buffer.fill(self.calls & 0xFF)  # a memset, as bandwidthTest's memset(flush_buf, i, FLUSH_SIZE)
        self.calls += 1

    def params(self) -> dict[str, Any]:
        """What the series records: that its source was cold, and how it was made so."""
        return {COLD_SOURCE: True, "eviction_bytes": self.nbytes}

    def noted(self, note: str | None) -> str:
        """The series' note with the cold source said: the label does not say it, and a report of one file shows notes."""
        said = (f"cold source: a {self.nbytes / 2**20:g} MiB memset before each timed call, untimed, evicts the source from"
                " the CPU caches, as bandwidthTest does between its pageable copies")  # fmt: skip
        return f"{note}; {said}" if note else said


def take_eviction(params: dict[str, Any]) -> tuple[dict[str, Any], Eviction | None]:
    """The backend's parameters without the sweep's cold-source flag, and the eviction it asks for (or None)."""
    rest = {name: value for name, value in params.items() if name != COLD_SOURCE}
    return rest, Eviction() if params.get(COLD_SOURCE) else None
