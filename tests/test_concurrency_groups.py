"""Reading a concurrent run from a file, without running one: which batch each group is read at, each
device's figure alone and at once, their ratio and totals, and the devices that measured nothing."""

from __future__ import annotations

import pytest

from xferbench.core.concurrency import DeviceRow, Group, groups
from xferbench.core.results import Point, Result, Series
from xferbench.core.spec import SeriesKey
from xferbench.core.timing import Samples

SHAPE = (1000,)


def series(device: str, at_once: int, seconds: dict[int, float], name: str | None = None, mode: str = "raw_pinned") -> Series:
    """A raw copy on `device`, `at_once` devices together, one point per batch taking `seconds[batch]`."""
    key = SeriesKey("cuda", mode, "copy", device, SHAPE, concurrent=at_once)
    made = Series.of(key)
    made.device_name = name or f"GPU {device[-1]}"
    for batch, taken in seconds.items():
        point = Point.measured(key.at(batch), Samples([taken]), 1)
        point.overlap = 0.9
        made.points.append(point)
    return made


def made(series: list[Series]) -> Result:
    return Result({}, {}, "2026-11-26T00:00:00+00:00", series)


def mbps(batch: int, seconds: float) -> float:
    return batch * 1000 / seconds / 1e6


def test_each_device_alone_and_at_once_at_the_largest_batch_all_measured() -> None:
    result = made([
        series("cuda:0", 1, {1: 1e-3, 8: 2e-3, 64: 4e-3}),
        series("cuda:1", 1, {1: 1e-3, 8: 2e-3, 64: 8e-3}),
        series("cuda:0", 2, {1: 2e-3, 8: 4e-3, 64: 16e-3}),
        series("cuda:1", 2, {1: 2e-3, 8: 8e-3}),  # batch 64 did not run at once here: 8 is the largest both have
    ])  # fmt: skip
    [group] = groups(result)
    assert group.label == "cuda/raw_pinned/copy/2-at-once" and group.batch_size == 8
    assert [r.device for r in group.rows] == ["cuda:0", "cuda:1"]
    first, second = group.rows
    assert first.alone_mbps == pytest.approx(mbps(8, 2e-3)) and first.at_once_mbps == pytest.approx(mbps(8, 4e-3))
    assert second.alone_mbps == pytest.approx(mbps(8, 2e-3)) and second.at_once_mbps == pytest.approx(mbps(8, 8e-3))
    assert first.ratio == pytest.approx(0.5) and second.ratio == pytest.approx(0.25) and first.overlap == 0.9
    assert group.total_alone == pytest.approx(2 * mbps(8, 2e-3))
    assert group.total_at_once == pytest.approx(mbps(8, 4e-3) + mbps(8, 8e-3))
    assert first.name == "cuda:0 (GPU 0)"


def test_a_device_that_measured_nothing_is_a_row_without_figures_and_totals_need_every_row() -> None:
    failed = series("cuda:1", 2, {})
    result = made([series("cuda:0", 1, {4: 1e-3}), series("cuda:0", 2, {4: 2e-3}), failed])
    [group] = groups(result)
    assert group.batch_size == 4 and group.rows[1] == DeviceRow("cuda:1", "GPU 1", None, None, None)
    assert group.rows[1].ratio is None and group.total_alone is None and group.total_at_once is None


def test_no_group_without_a_batch_every_device_measured_and_none_for_runs_alone() -> None:
    assert groups(made([series("cuda:0", 2, {1: 1e-3}), series("cuda:1", 2, {8: 1e-3})])) == []
    assert groups(made([series("cuda:0", 1, {1: 1e-3}), series("cuda:1", 1, {1: 1e-3})])) == []
    assert groups(made([series("cuda:0", 2, {}), series("cuda:1", 2, {})])) == []


def test_two_paths_run_at_once_make_two_groups_and_a_run_without_its_solo_has_no_ratio() -> None:
    other = series("cuda:0", 2, {2: 1e-3}, mode="raw_pageable")
    result = made([series("cuda:0", 2, {2: 1e-3}), series("cuda:1", 2, {2: 1e-3}), other])
    found = groups(result)
    assert [g.label for g in found] == ["cuda/raw_pinned/copy/2-at-once", "cuda/raw_pageable/copy/2-at-once"]
    assert found[0].rows[0].alone_mbps is None and found[0].rows[0].ratio is None and found[0].total_alone is None


def test_a_simulated_device_or_one_named_by_its_id_shows_its_id_alone() -> None:
    assert DeviceRow("sim:0", "simulated link", 1.0, 1.0, None).name == "sim:0"
    assert DeviceRow("cuda:0", "cuda:0", 1.0, 1.0, None).name == "cuda:0"
    assert DeviceRow("cuda:0", "H200", 2.0, None, None).ratio is None
    assert Group("x", 1, [DeviceRow("cuda:0", "H200", 2.0, 3.0, None)]).total_at_once == 3.0


def test_a_run_with_no_common_batch_does_not_hide_the_next_and_a_solo_without_the_batch_has_no_figure() -> None:
    empty_first = [series("cuda:0", 2, {1: 1e-3}, mode="raw_pageable"), series("cuda:1", 2, {8: 1e-3}, mode="raw_pageable")]
    then = [series("cuda:0", 1, {1: 1e-3}), series("cuda:0", 2, {2: 1e-3}), series("cuda:1", 2, {2: 1e-3})]
    [group] = groups(made(empty_first + then))
    assert group.label == "cuda/raw_pinned/copy/2-at-once" and group.rows[0].alone_mbps is None  # alone, batch 2 never ran
