"""The time budget's arithmetic and series selection, rule by rule, against a stand-in backend whose
modes, ops, sources and skips are known, so each rule of the estimate is seen to count."""

from __future__ import annotations

import math
from typing import Any

import pytest

from xferbench.core.spec import PER_CALL, STREAMED, SeriesKey, Spec
from xferbench.core.timing import TimingConfig
from xferbench.health import budget
from xferbench.measuring.backends.base import Backend, SeriesInfo, Transfer

SHAPE = (4, 4, 3)


class Stand(Backend):
    """Two modes (one by default), two ops, a pinned mode, and a seed op with no streamed timing."""

    name = "stand"
    modes = ("plain", "pinned")
    default_modes = ("plain",)
    ops = ("copy", "seed")
    _sources = {"plain": ("aligned", "numpy"), "pinned": ("pinned",)}

    def sources(self, mode: str) -> tuple[str, ...]:
        return self._sources[mode]  # a mode it does not have is an error, as a real planner's would be

    def skip_reason(self, key: SeriesKey) -> str | None:
        return "seed has no streamed run" if key.op == "seed" and key.method == STREAMED else None

    def streamed_reason(self, key: SeriesKey) -> str | None:
        return "pinned mode waits between copies" if key.mode == "pinned" else None

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        raise AssertionError("the estimate describes nothing")

    def host_bytes(self, spec: Spec) -> int:
        raise AssertionError("the estimate allocates nothing")

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        raise AssertionError("the estimate prepares nothing")


class Gone(Stand):
    name = "gone"

    def missing(self) -> str | None:
        return "gone is not installed"


@pytest.fixture
def stands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budget, "BACKENDS", {"stand": Stand(), "gone": Gone()})
    monkeypatch.setattr(budget, "default_backends", lambda: [Stand()])


def labels(keys: list[SeriesKey]) -> list[str]:
    return [k.label() for k in keys]


def test_only_installed_frameworks_that_exist_are_counted(stands: None) -> None:
    keys, used = budget.series_keys(["nope", "gone", "stand"], "cuda:0", ["copy"], [PER_CALL], SHAPE)
    assert used == ["stand"] and labels(keys) == ["stand/plain/copy+aligned@cuda:0"]


def test_no_framework_given_counts_the_default_ones(stands: None) -> None:
    keys, used = budget.series_keys([], "cuda:0", ["copy"], [PER_CALL], SHAPE)
    assert used == ["stand"] and labels(keys) == ["stand/plain/copy+aligned@cuda:0"]


def test_the_modes_asked_for_are_the_modes_counted_each_from_its_own_first_source(stands: None) -> None:
    """--mode picks the modes; each starts from its mode's first host buffer; an op the backend does
    not have is passed over without ending the ops after it; a skipped method or one without streamed
    timing is passed over without ending the methods after it."""
    keys, used = budget.series_keys(["stand"], "cuda:0", ["copy", "scatter", "seed"], [STREAMED, PER_CALL], SHAPE,
                                    modes=["pinned", "plain", "absent"])  # fmt: skip
    assert used == ["stand"]
    assert labels(keys) == [
        "stand/pinned/copy@cuda:0",  # no streamed run: pinned mode waits between copies
        "stand/pinned/seed@cuda:0",
        "stand/plain/copy/streamed+aligned@cuda:0",
        "stand/plain/copy+aligned@cuda:0",
        "stand/plain/seed+aligned@cuda:0",  # its streamed run is skipped
    ]
    assert {k.direction for k in keys} == {"h2d"} and all(k.shape == SHAPE for k in keys)


def test_a_sweep_costs_its_starts_and_every_point_of_every_series() -> None:
    timing = TimingConfig()
    keys = (SeriesKey("cuda", "raw_pinned", "copy", "cuda:0", SHAPE, "pinned"),
            SeriesKey("cuda", "raw_pageable", "copy", "cuda:0", SHAPE, "numpy"))  # fmt: skip
    plan = budget.SweepPlan("s", keys, (1, 8), ("cuda", "torch"), timing)
    item = math.prod(SHAPE)
    expected = budget.SWEEP_START_S + 2 * budget.WORKER_START_S + sum(
        budget.point_seconds(b * item, rate, timing) for rate in (budget.PINNED_BPS, budget.PAGEABLE_BPS) for b in (1, 8))
    assert math.isclose(plan.seconds(), expected)
    assert math.isclose(budget.SweepPlan("s", (), (1, 8), ("cuda",), timing).seconds(),
                        budget.SWEEP_START_S + budget.WORKER_START_S)  # fmt: skip


def test_a_sweep_timed_by_its_own_minimum_time_samples_that_long() -> None:
    timing = TimingConfig()
    key = SeriesKey("cuda", "raw_pinned", "copy", "cuda:0", SHAPE, "pinned")
    plan = budget.SweepPlan("link", (key,), (1,), (), timing, fixed_s=30.0)
    assert math.isclose(plan.seconds(), budget.SWEEP_START_S + budget.point_seconds(math.prod(SHAPE), budget.PINNED_BPS, timing, 30.0))
    assert plan.seconds() > budget.SWEEP_START_S + 30.0


def test_bandwidthtest_costs_its_copies_and_after_each_pageable_one_its_memset() -> None:
    nbytes = 2**30
    pinned = budget.PEER_START_S + budget.BANDWIDTHTEST_COPIES * (budget.CALL_S + nbytes / budget.PINNED_BPS)
    memset = budget.MEMSET_BYTES / budget.MEMSET_BPS
    pageable = budget.PEER_START_S + budget.BANDWIDTHTEST_COPIES * (budget.CALL_S + nbytes / budget.PAGEABLE_BPS + memset)
    assert math.isclose(budget.bandwidthtest_seconds(nbytes, "pinned"), pinned)
    assert math.isclose(budget.bandwidthtest_seconds(nbytes, "pageable"), pageable)
    assert math.isclose(pinned, 2.0 + 100 * (100e-6 + 2**30 / 25e9))  # the figures the docs quote


def test_nvbandwidth_costs_its_samples_of_warm_up_and_timed_copies() -> None:
    nbytes = 2**26
    one = budget.NVBANDWIDTH_COPIES * (budget.CALL_S + nbytes / budget.PINNED_BPS)
    assert math.isclose(budget.nvbandwidth_seconds(nbytes, 2, None), budget.PEER_START_S + 2 * 3 * one)
    assert math.isclose(budget.nvbandwidth_seconds(nbytes, 2, 1), budget.PEER_START_S + 2 * one)
