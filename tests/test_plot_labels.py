"""No label of a drawn figure lies on another: tick labels, cliff notes, and each panel's title within its panel, read off
the figure as it is laid out to be saved, on the committed TensorFlow pair and on panels too narrow for their ticks."""

from __future__ import annotations

import re
from itertools import combinations
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from test_plot_rules import curve, host, picked, run
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


def shown_labels(axes: Any, axis: str = "y") -> list[str]:
    """The texts of an axis's labelled ticks (major and minor) within its limits, as drawn."""
    low, high = axes.get_ylim() if axis == "y" else axes.get_xlim()
    labels = (axes.get_yticklabels if axis == "y" else axes.get_xticklabels)
    place = 1 if axis == "y" else 0
    return [label.get_text() for minor in (False, True) for label in labels(minor=minor)
            if label.get_text() and low <= label.get_position()[place] <= high]  # fmt: skip


def tight(series: Any, spread: float) -> Any:
    """The series with each point's p10–p90 band only `spread` either side: samples that all took the same time."""
    for point in series.points:
        point.mbps_p10, point.mbps_p90 = point.mbps * (1 - spread), point.mbps * (1 + spread)
    return series


@pytest.mark.parametrize("rates", [{1: 12000.0, 4: 12000.0, 16: 12000.0}, {4: 12000.0}, {170: 12000.0, 171: 12000.1, 172: 12000.2}],
                         ids=["flat", "one-point", "batches-apart-by-one"])  # fmt: skip
@pytest.mark.parametrize("spread", [1e-7, 1e-5, 0.02])
def test_a_log_axis_over_a_narrow_range_labels_distinct_short_values(tmp_path: Path, rates: dict[int, float], spread: float) -> None:
    """--y-scale log over a flat series or one point, its band a hair wide: every tick of the MB/s axis was labelled
    1.2×10^4 alike. As saved, each axis (and the time panel's, where calls take one time) shows two labels or more,
    none repeated, none longer than three digits."""
    from xferbench.reading.plot import save

    fig = figure(picked(run(tight(host(rates), spread))), y_scale="log")
    save(fig, tmp_path / "flat.png")
    fig.canvas.draw()
    rate, time = fig.axes
    for axes, axis in ((rate, "y"), (time, "y"), (time, "x")):
        shown = shown_labels(axes, axis)
        assert len(shown) >= 2 and len(set(shown)) == len(shown), (axis, shown)
        digits = [len(re.sub(r"\\times.*|[^0-9]", "", text)) for text in shown]  # the coefficient's digits, not the power's
        assert max(digits) <= 3, (axis, shown)
    plt.close(fig)


def test_a_log_axis_over_a_wide_range_is_left_as_matplotlib_draws_it() -> None:
    """Medians across two decades: the limits stay matplotlib's own (autoscaled), labelled at the decades."""
    fig = figure(picked(run(host({1: 300.0, 4: 3000.0, 16: 30000.0}))), y_scale="log")
    fig.canvas.draw()
    rate, time = fig.axes
    assert rate.get_autoscaley_on() and time.get_autoscalex_on() and time.get_autoscaley_on()
    assert {"$\\mathdefault{10^{3}}$", "$\\mathdefault{10^{4}}$"} <= set(shown_labels(rate))
    plt.close(fig)
