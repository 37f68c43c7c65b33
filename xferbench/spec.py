"""The frozen key of one measurement: what was moved, how, and where to."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class SeriesKey:
    """One curve: a framework path on one device, swept over batch sizes."""

    framework: str
    mode: str
    op: str
    device: str
    shape: tuple[int, ...]  # one item's shape; the batch adds a leading dimension

    def label(self) -> str:
        return f"{self.framework}/{self.mode}/{self.op}@{self.device}"

    def at(self, batch_size: int) -> Spec:
        return Spec(self, batch_size)


@dataclass(frozen=True)
class Spec:
    """One point of a curve: a series at one batch size of uint8 items."""

    series: SeriesKey
    batch_size: int

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return (self.batch_size, *self.series.shape)

    @property
    def nbytes(self) -> int:
        return self.batch_size * math.prod(self.series.shape)
