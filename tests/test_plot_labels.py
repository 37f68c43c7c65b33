"""No label of a drawn figure lies on another: tick labels, cliff notes, and each panel's title within its panel, read off
the figure as it is laid out to be saved, on the committed TensorFlow pair and on panels too narrow for their ticks."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from test_plot_rules import curve, picked, run
from xferbench.core.results import Selection, select
from xferbench.reading.plot import figure

matplotlib.use("Agg")

REPO = Path(__file__).resolve().parent.parent
TF_PAIR = [REPO / "results/cpu-amd-epyc-2core/tf-host-buffers.json", REPO / "results/cpu-amd-epyc-2core/tf-host-buffers-glibc-tunables.json"]


def renderer(fig: Figure) -> Any:
    fig.draw_without_rendering()  # the layout savefig makes
    return fig.canvas.get_renderer()  # type: ignore[attr-defined]


def rate_panels(fig: Figure) -> list[Any]:
    return [axes for axes in fig.axes if axes.get_visible() and axes.get_xlabel().startswith(("batch size", "bytes per call"))
            and axes.get_xscale() == "log" and axes.xaxis.get_transform().base == 2]  # fmt: skip


def crossing(boxes: list[Any]) -> list[tuple[Any, Any]]:
    return [(a, b) for a, b in combinations(boxes, 2) if a.overlaps(b)]


def tick_boxes(fig: Figure, axes: Any) -> list[Any]:
    drawn = renderer(fig)
    return [label.get_window_extent(drawn) for label in axes.get_xticklabels() if label.get_text()]


def assert_nothing_stacks(fig: Figure) -> None:
    """No two tick labels of a panel meet, no two notes of a panel meet, and every panel's title lies within its panel."""
    drawn = renderer(fig)
    for axes in [a for a in fig.axes if a.get_visible()]:
        assert not crossing(tick_boxes(fig, axes)), [label.get_text() for label in axes.get_xticklabels()]
        assert not crossing([note.get_window_extent(drawn) for note in axes.texts]), [note.get_text() for note in axes.texts]
        title, panel = axes.title.get_window_extent(drawn), axes.get_window_extent(drawn)
        assert panel.x0 - 0.5 <= title.x0 and title.x1 <= panel.x1 + 0.5, axes.get_title()


@pytest.mark.parametrize("selection", [Selection(), Selection(modes=("eager", "function"), host_buffers=("numpy",))],
                         ids=["every-series", "eager-and-function"])  # fmt: skip
def test_the_committed_tensorflow_pair_draws_no_label_on_another(selection: Selection) -> None:
    """Batches 128, 160, 170, 171, 172 and 192 within 0.6 octaves: the labels kept are apart; so are the notes of the
    cliffs whose batch lost its label, and the throughput panel's title fits its half of the figure."""
    fig = figure(select(TF_PAIR, selection)[0])
    assert_nothing_stacks(fig)
    (rate,) = rate_panels(fig)
    shown = [label.get_text() for label in rate.get_xticklabels() if label.get_text()]
    assert "171" in shown and not {"160", "170", "172"} & set(shown)
    plt.close(fig)


def test_panels_too_narrow_for_their_ticks_keep_only_labels_that_do_not_meet() -> None:
    """Three frameworks a row and four-digit batches half an octave apart: spacing on the axis alone would keep labels
    that meet; as drawn, the later of two that would is blank, and the cliff batch keeps its label first."""
    batches = [1, 8, 64, 512, 1000, 1400, 2000, 2800, 4000, 5600, 8000]
    series = [curve({b: 1000.0 + b for b in batches}, framework, mode) for framework, mode in
              (("torch", "pinned"), ("torch", "pageable"), ("cuda", "raw_pinned"), ("cuda", "raw_pageable"), ("tf", "eager"),
               ("tf", "function"), ("jax", "device_put"))]  # fmt: skip
    cliff = curve({**{b: 1000.0 + b for b in batches}, 2800: 500.0}, "tf", "jit")
    fig = figure(picked(run(*series, cliff)))
    assert_nothing_stacks(fig)
    for axes in rate_panels(fig):
        texts = [label.get_text() for label in axes.get_xticklabels()]
        assert "2800" in texts and "" in texts[4:]  # the cliff's batch kept; some of its crowded neighbours gave way
    plt.close(fig)


def test_a_title_that_fits_its_panel_keeps_its_size_and_its_one_line() -> None:
    """Two simulated GPUs, no cliff: the throughput title fits its half at 9 points, measured in the laid-out figure
    (before the layout, a panel is narrower than it will be saved)."""
    fig = figure(select([REPO / "results/sim/gpu-a-25gbps.json", REPO / "results/sim/gpu-b-12gbps.json"])[0])
    rate, time = fig.axes
    assert (rate.get_title(), rate.title.get_fontsize()) == ("throughput: band p10–p90, ring at saturation (95% of peak)", 9)
    assert (time.get_title(), time.title.get_fontsize()) == (
        "time per call; dashed: fitted latency + bytes / bandwidth (dotted: poor fit, rms > 20%)", 9)  # fmt: skip
    assert_nothing_stacks(fig)
    plt.close(fig)
