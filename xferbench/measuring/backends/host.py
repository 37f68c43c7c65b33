"""`host`: host copies, no device: the ceiling for every CPU-side path, and the driver's staging copy on its own.

Modes:
- numpy: a NumPy copy into a preallocated host buffer, both 64-byte aligned, so the ceiling does not
  depend on where malloc happened to put them (see buffers.aligned_empty);
- staged: the copy a CUDA driver makes of a pageable source before its DMA, made alone: one thread
  copies the batch chunk by chunk (glibc's memmove through ctypes) into a ring of STAGING_SLOTS buffers
  of one chunk each, page-locked through CuPy (cudaHostAlloc) where CuPy sees a CUDA GPU, else plain
  host memory touched before timing, as the series says. It starts from a NumPy array, as the pageable
  copies do. NVIDIA does not document the size of the driver's staging buffers or how many it cycles
  through, so the chunk is --staging-chunk-kib (recorded), and the ring's two slots are this path's
  choice (recorded), not the driver's known figure. Not in the default sweep.
"""

from __future__ import annotations

import ctypes
import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np

from xferbench.measuring.backends.base import Backend, SeriesInfo, Transfer
from xferbench.measuring.buffers import address_offset, aligned_empty, check_all, check_arrived, fill_pattern, make_source, read_host
from xferbench.core.environment import cpu_name
from xferbench.core.errors import VerificationError
from xferbench.core.spec import HOST_TO_HOST, SeriesKey, Spec

STAGING_CHUNK_BYTES = 2 * 2**20  # the chunk when --staging-chunk-kib is not given: a choice, not the driver's (undocumented) size
STAGING_SLOTS = 2  # staging buffers the chunks cycle through, as double buffering does
PINNED_STAGING = "pinned: cudaHostAlloc through CuPy, the kind of memory the driver stages through"
PAGEABLE_STAGING = "pageable: CuPy sees no CUDA GPU here, so plain host memory, touched before timing (not page-locked)"


class HostCopy(Transfer):
    def __init__(self, spec: Spec) -> None:
        self.label = spec.series.label()
        self.source = make_source(spec.batch_shape, aligned=True)
        self.host_offset = address_offset(self.source)
        self.dest = aligned_empty(spec.batch_shape)

    def __call__(self) -> None:
        np.copyto(self.dest, self.source)

    def host_span(self) -> tuple[int, int]:
        return self.source.ctypes.data, self.source.size

    def verify(self) -> None:
        fill_pattern(self.source, variant=1)
        self.dest.fill(0)
        self.once()
        check_all(self.source, read_host(self.dest), self.label)  # every byte, compared where it lies

    def close(self) -> None:
        del self.source, self.dest


def staging_cupy() -> Any | None:
    """CuPy where it is installed and sees a CUDA GPU, to page-lock the staging ring with; else None."""
    if importlib.util.find_spec("cupy") is None:
        return None
    from xferbench.measuring.backends.cuda import _cupy, gpu_count

    try:
        return _cupy() if gpu_count() > 0 else None
    except Exception:  # a CuPy that cannot load its CUDA libraries: no GPU to pin with, as far as this path goes
        return None


def staging_chunk(spec: Spec, params: dict[str, Any]) -> int:
    """The bytes one staging copy moves: --staging-chunk-kib's, at most the batch."""
    return min(int(params.get("staging_chunk_bytes") or STAGING_CHUNK_BYTES), spec.nbytes)


class StagedCopy(Transfer):
    """One thread copies the source chunk by chunk into a ring of staging buffers (see the module's docstring)."""

    def __init__(self, spec: Spec, params: dict[str, Any]) -> None:
        self.label, self.nbytes = spec.series.label(), spec.nbytes
        self.cupy, self.pinned_ptr = staging_cupy(), 0
        self.source = make_source(spec.batch_shape, aligned=spec.series.host_buffer == "aligned")
        self.host_offset = address_offset(self.source)
        self.chunk = self.staging_chunk_bytes = staging_chunk(spec, params)
        ring = self.chunk * STAGING_SLOTS
        if self.cupy is not None:
            self.pinned_ptr = self.cupy.cuda.runtime.hostAlloc(ring, 0)  # freed in close(), after the view below is dropped
            self.ring = np.ctypeslib.as_array((ctypes.c_uint8 * ring).from_address(self.pinned_ptr))
        else:
            self.ring = aligned_empty((ring,), alignment=4096)
        self.ring.fill(0)  # every page touched: no page fault lands in a sample
        base, start = self.ring.ctypes.data, self.source.ctypes.data
        # (destination, source, bytes) of each chunk in turn, worked out once: the calls copy and nothing else
        self.plan = [(base + (index % STAGING_SLOTS) * self.chunk, start + offset, min(self.chunk, self.nbytes - offset))
                     for index, offset in enumerate(range(0, self.nbytes, self.chunk))]  # fmt: skip

    def _copy(self, check: Callable[[int], None] | None = None) -> None:
        move = ctypes.memmove
        for index, (dst, src, count) in enumerate(self.plan):
            move(dst, src, count)
            if check is not None:
                check(index)

    def __call__(self) -> None:
        self._copy()

    def host_span(self) -> tuple[int, int]:
        return self.source.ctypes.data, self.source.size

    def verify(self) -> None:
        """New bytes at the source, zeros in the ring, one copy, and each chunk compared, as soon as it lands (the
        next chunk but one overwrites it), with the bytes due there: chunk i of the batch in slot i mod STAGING_SLOTS.
        Every chunk of the batch must land, in order."""
        fill_pattern(self.source, variant=1)
        self.ring.fill(0)
        flat, staged = self.source.reshape(-1), [0]

        def check(index: int) -> None:
            offset, slot = index * self.chunk, (index % STAGING_SLOTS) * self.chunk
            count = min(self.chunk, self.nbytes - offset)
            check_arrived(flat[offset : offset + count], self.ring[slot : slot + count], f"{self.label} chunk {index}")
            staged[0] = offset + count

        self._copy(check)
        if staged[0] != self.nbytes:
            raise VerificationError(f"{self.label}: {staged[0]:,} of {self.nbytes:,} bytes were staged; the copy did not deliver the data")

    def close(self) -> None:
        self.plan, self.ring, self.source = [], np.empty(0, dtype=np.uint8), np.empty(0, dtype=np.uint8)
        if self.pinned_ptr:
            self.cupy.cuda.runtime.freeHost(self.pinned_ptr)
            self.pinned_ptr = 0


class HostBackend(Backend):
    name = "host"
    modes = ("numpy", "staged")
    default_modes = ("numpy",)
    fixed_device = "cpu"
    host_buffers = ("aligned",)

    def sources(self, mode: str) -> tuple[str, ...]:
        return ("numpy", "aligned") if mode == "staged" else self.host_buffers

    def streamed_reason(self, key: SeriesKey) -> str | None:
        return f"host/{key.mode} is a synchronous CPU copy with no stream to queue on: it is timed per call only"

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        if key.mode == "staged":
            chunk = int(params.get("staging_chunk_bytes") or STAGING_CHUNK_BYTES)
            memory = PINNED_STAGING if staging_cupy() is not None else PAGEABLE_STAGING
            return SeriesInfo(
                device_name=cpu_name(),
                transfer=HOST_TO_HOST,
                clock="time.perf_counter",
                sync="none needed: each memmove returns after its copy",
                params={"staging_chunk_bytes": chunk, "staging_slots": STAGING_SLOTS, "staging_memory": memory},
                note=(f"a pageable copy's staging alone: one thread memmoves the batch {chunk / 2**10:g} KiB at a time (a batch"
                      f" of {chunk / 2**10:g} KiB or less whole, in one chunk: each point records the chunk it used) into"
                      f" {STAGING_SLOTS} staging buffers in turn, {memory.split(':')[0]}; the driver's own chunk and"
                      " buffer count are not documented"),  # fmt: skip
            )
        return SeriesInfo(
            device_name=cpu_name(),
            transfer=HOST_TO_HOST,
            clock="time.perf_counter",
            sync="none needed: np.copyto returns after the copy",
            params={"buffers": "64-byte aligned source and destination"},
        )

    def host_bytes(self, spec: Spec) -> int:
        return self.host_bytes_for(spec, {})

    def host_bytes_for(self, spec: Spec, params: dict[str, Any]) -> int:
        """numpy: source and destination; staged: the source and its ring of staging buffers."""
        if spec.series.mode == "staged":
            return spec.nbytes + STAGING_SLOTS * staging_chunk(spec, params)
        return 2 * spec.nbytes

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return StagedCopy(spec, params) if spec.series.mode == "staged" else HostCopy(spec)
