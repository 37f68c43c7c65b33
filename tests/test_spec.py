"""The key of a measurement: which host buffer a path starts from, which modes are pipelines, the label
every file, table and figure shows, and the bytes a point moves."""

from __future__ import annotations

import pytest

from xferbench.core.spec import BIDIR, D2H, H2D, PER_CALL, STREAMED, SeriesKey, Spec, is_pipeline, usual_source


@pytest.mark.parametrize(("framework", "mode", "source"), [
    ("host", "numpy", "aligned"), ("host", "staged", "numpy"), ("nvbandwidth", "host_to_device_memcpy_ce", "pinned"),
    ("torch", "pinned", "pinned"),
    ("torch", "pinned_into", "pinned"), ("cuda", "raw_pinned", "pinned"), ("torch", "pageable", "numpy"),
    ("tf", "eager", "numpy"), ("cuda", "raw_pageable", "numpy"), ("torch", "unpinned", "numpy"),
])  # fmt: skip
def test_each_path_starts_from_its_usual_host_buffer(framework: str, mode: str, source: str) -> None:
    assert usual_source(framework, mode) == source


def test_pipelines_are_named_per_framework() -> None:
    assert is_pipeline("torch", "loader_pin_workers") and is_pipeline("tf", "prefetch_to_device")
    assert not is_pipeline("tf", "loader") and not is_pipeline("torch", "eager") and not is_pipeline("jax", "loader")


def test_a_label_says_every_way_a_series_differs_from_the_usual() -> None:
    key = SeriesKey("torch", "pinned", "copy", "cuda:0", (256, 256, 3))
    assert key.host_buffer == "pinned" and key.method == PER_CALL and key.direction == H2D and key.concurrent == 1
    assert key.label() == "torch/pinned/copy@cuda:0"
    assert SeriesKey("torch", "pageable", "seed", "cuda:1", (4,), "aligned", STREAMED, D2H, 8).label() == (
        "torch/pageable/seed/d2h/streamed/8-at-once+aligned@cuda:1")
    assert SeriesKey("cuda", "raw_pinned", "copy", "cuda:0", (4,), "pinned", PER_CALL, BIDIR).label() == "cuda/raw_pinned/copy/bidir@cuda:0"
    assert SeriesKey("host", "numpy", "copy", "cpu", (4,), "numpy").label() == "host/numpy/copy+numpy@cpu"
    assert SeriesKey("host", "numpy", "copy", "cpu", (4,)).label() == "host/numpy/copy@cpu"  # the host copy's own: aligned


def test_a_point_moves_its_batch_and_a_bidir_point_a_batch_each_way() -> None:
    key = SeriesKey("cuda", "raw_pinned", "copy", "cuda:0", (256, 256, 3))
    spec = key.at(3)
    assert spec == Spec(key, 3) and spec.batch_shape == (3, 256, 256, 3)
    assert spec.nbytes == spec.moved_bytes == 3 * 196_608
    both = Spec(SeriesKey("cuda", "raw_pinned", "copy", "cuda:0", (256, 256, 3), direction=BIDIR), 3)
    assert both.nbytes == 3 * 196_608 and both.moved_bytes == 6 * 196_608
