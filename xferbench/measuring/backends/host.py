"""`host`: a NumPy copy into a preallocated host buffer, the ceiling for every CPU-side path.

Both buffers are 64-byte aligned, so the ceiling does not depend on where malloc happened to
put them (see buffers.aligned_empty).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xferbench.measuring.backends.base import Backend, SeriesInfo, Transfer
from xferbench.measuring.buffers import address_offset, aligned_empty, check_all, fill_pattern, make_source, read_host
from xferbench.core.environment import cpu_name
from xferbench.core.spec import HOST_TO_HOST, SeriesKey, Spec


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


class HostBackend(Backend):
    name = "host"
    modes = default_modes = ("numpy",)
    fixed_device = "cpu"
    host_buffers = ("aligned",)

    def streamed_reason(self, key: SeriesKey) -> str | None:
        return "host/numpy is a synchronous CPU copy with no stream to queue on: it is timed per call only"

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        return SeriesInfo(
            device_name=cpu_name(),
            transfer=HOST_TO_HOST,
            clock="time.perf_counter",
            sync="none needed: np.copyto returns after the copy",
            params={"buffers": "64-byte aligned source and destination"},
        )

    def host_bytes(self, spec: Spec) -> int:
        return 2 * spec.nbytes

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return HostCopy(spec)
