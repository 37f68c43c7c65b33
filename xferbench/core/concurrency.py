"""Reading a concurrent run: the same path on several devices at once, against each device alone.

A sweep with --concurrent measures each path on every device alone, then on all of them together.
This module pairs the two from a result file (it measures nothing), for the terminal and the report:
per device, what it moved alone and at once and the ratio; in total, the sum of both.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xferbench.core.results import Result, Series


@dataclass(frozen=True)
class DeviceRow:
    device: str
    device_name: str
    alone_mbps: float | None  # the same path on this device alone, in the same file, at the same batch
    at_once_mbps: float | None
    overlap: float | None  # the share of the point's sampling during which every device sampled

    @property
    def name(self) -> str:
        """A GPU's id and name; a simulated device's id alone (its link is in its series' title)."""
        if self.device.startswith("sim") or self.device_name == self.device:
            return self.device
        return f"{self.device} ({self.device_name})"

    @property
    def ratio(self) -> float | None:
        return self.at_once_mbps / self.alone_mbps if self.at_once_mbps and self.alone_mbps else None


@dataclass(frozen=True)
class Group:
    """One path run on `len(rows)` devices at once, read at one batch size."""

    label: str  # the path, without its device: cuda/raw_pinned/copy/2-at-once
    batch_size: int
    rows: list[DeviceRow]

    @property
    def total_alone(self) -> float | None:
        found = [r.alone_mbps for r in self.rows]
        return sum(found) if all(found) else None  # type: ignore[arg-type]

    @property
    def total_at_once(self) -> float | None:
        found = [r.at_once_mbps for r in self.rows]
        return sum(found) if all(found) else None  # type: ignore[arg-type]


def _mbps(series: Series | None, batch_size: int) -> float | None:
    point = next((p for p in series.ok_points() if p.batch_size == batch_size), None) if series else None
    return point.mbps if point else None


def groups(result: Result) -> list[Group]:
    """Every concurrent run in the file, each read at the largest batch that every device that measured
    anything measured at once (where a shared host side shows most)."""
    runs: dict[object, list[Series]] = {}
    for series in result.series:
        if series.concurrent > 1:
            runs.setdefault(dataclasses.replace(series.key, device=""), []).append(series)
    alone = {s.key: s for s in result.series if s.concurrent == 1}
    found = []
    for members in runs.values():
        measured = [{p.batch_size for p in s.ok_points()} for s in members if s.ok_points()]
        common = set.intersection(*measured) if measured else set()
        if not common:
            continue
        batch = max(common)  # among the devices that measured: one that failed shows as a row without figures
        rows = []
        for series in members:
            solo = alone.get(dataclasses.replace(series.key, concurrent=1))
            point = next((p for p in series.ok_points() if p.batch_size == batch), None)
            rows.append(DeviceRow(series.device, series.device_name or series.device, _mbps(solo, batch),
                                  point.mbps if point else None, point.overlap if point else None))  # fmt: skip
        found.append(Group(members[0].label().rsplit("@", 1)[0], batch, rows))
    return found


__all__ = ["DeviceRow", "Group", "groups"]
