#!/usr/bin/env python3
"""Host copy speed against the relative alignment of source and destination.

Why: on some CPUs a copy between buffers whose addresses differ by a few bytes mod 4096 is an
order of magnitude slower, so where malloc happens to put a NumPy array can decide a host-side
curve. This prints np.copyto MB/s for destination offsets 0..4064 bytes (mod 4096) from the
source, at a cache-resident and a DRAM-sized buffer.

Run: .venv/bin/python scripts/probe_copy_alignment.py
"""

from __future__ import annotations

import statistics
import timeit

import numpy as np

from xferbench.measuring.buffers import aligned_empty, fill_pattern
from xferbench.core.environment import cpu_name

OFFSETS = (0, 8, 16, 32, 48, 64, 128, 1024, 4064)


def page_aligned(nbytes: int) -> np.ndarray:
    """A buffer with 4096 spare bytes after a page-aligned start, so it can be sliced at any offset."""
    buffer = aligned_empty((nbytes + 4096,), alignment=4096)
    fill_pattern(buffer)
    return buffer


def copy_mbps(nbytes: int, offset: int) -> float:
    source = page_aligned(nbytes)[:nbytes]
    dest = page_aligned(nbytes)[offset : offset + nbytes]
    number = max(1, int(2e7 // nbytes))
    per_call = [t / number for t in timeit.repeat(lambda: np.copyto(dest, source), number=number, repeat=15)]
    return nbytes / statistics.median(per_call) / 1e6


if __name__ == "__main__":
    print(f"np.copyto MB/s by (destination - source) mod 4096, on {cpu_name()}")
    print("bytes".rjust(12) + "".join(f"{o:>9}" for o in OFFSETS))
    for nbytes in (196_608, 100_663_296):  # batch 1 and batch 512 of 256x256x3
        print(f"{nbytes:>12}" + "".join(f"{copy_mbps(nbytes, o):>9,.0f}" for o in OFFSETS))
    plain = np.empty(196_608, dtype=np.uint8)
    print(f"a plain NumPy array of 196,608 bytes starts at address mod 64 = {plain.ctypes.data % 64}")
