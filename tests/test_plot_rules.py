"""The figure's rules one by one (xferbench.reading.plot), each on small series whose figures are known: legend labels
and the device ids and file names that tell lines apart, titles by transfer and device, cliff notes, default paths,
tick labels, the busy key, wrapped legend lines, file tags, size ticks, the MB/s scale, colours and line styles per
file, saving, and what figure() draws: panels and their sizes, scales, ticks, curves, bands, rings, triangles, notes,
ceilings, titles and the legend, read off the Figure's own objects."""

from __future__ import annotations

import dataclasses
import errno
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import pytest
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.ticker import NullLocator

from nodes import link
from test_pairing import ENV, TUNABLES
from xferbench.core.environment import pcie_ceiling
from xferbench.core.errors import XferbenchError
from xferbench.core.results import Point, Result, Selected, Series
from xferbench.core.spec import BIDIRECTIONAL, DEVICE_TO_HOST, HOST_TO_DEVICE, HOST_TO_HOST, SIMULATED
from xferbench.reading.pairs import Difference
from xferbench.reading.plot import (
    _collide,
    _file_keys,
    _styles,
    _whole,
    busy_key,
    cliff_note,
    default_path,
    default_title,
    device_text,
    figure,
    file_tags,
    log_rates,
    place_text,
    save,
    series_labels,
    size_ticks,
    tick_labels,
    wrapped,
)

matplotlib.use("Agg")  # no display: figures are read as objects, never shown

SHAPE = (256, 256, 3)
ITEM = 196_608  # bytes of one uint8 item of SHAPE
H100 = "NVIDIA H100"
NVML = {"pcie_gen_max": 4, "pcie_width_max": 16}
GPUS = [{"id": f"cuda:{i}", "kind": "cuda", "name": H100, "nvml": dict(NVML)} for i in range(2)]
GPU_ENV: dict[str, Any] = {"host": "gpu-1", "cpu": "AMD EPYC", "devices": [*GPUS, {"id": "cpu", "kind": "cpu", "name": "AMD EPYC"}]}
CEILING = "PCIe Gen4 x16 theoretical (31.5 GB/s, system maximum)"
WHAT = "throughput: band p10–p90, ring at saturation (95% of peak)"
CLIFF_WHAT = ", ▼ at a cliff (below 80% of peak)"
BUSY = "measured on a busy machine"


def point(batch: int, mbps: float | None, item: int = ITEM, busy: bool = False) -> Point:
    """An ok point of `batch` items of `item` bytes whose ten samples each moved `mbps`, as a measured point carries
    them (p10/p90 MB/s 2% either side); measured while other processes took a whole CPU of two where `busy`."""
    nbytes = batch * item
    median = nbytes / ((mbps or 1.0) * 1e6)
    made = Point(batch, nbytes, warmup_calls=1, times_s=[median] * 10, n=10, median_s=median, p10_s=median, p90_s=median, mbps=mbps,
                 mbps_p10=None if mbps is None else mbps * 0.98, mbps_p90=None if mbps is None else mbps * 1.02,
                 batches_per_s=1 / median, images_per_s=batch / median)  # fmt: skip
    if busy:
        made.others_cpus, made.cpus = 1.0, 2
    return made


def curve(rates: dict[int, float], framework: str = "torch", mode: str = "pinned", device: str = "cuda:0", name: str | None = H100,
          transfer: str | None = HOST_TO_DEVICE, shape: tuple[int, ...] = SHAPE, busy: tuple[int, ...] = (),
          **summary: Any) -> Series:  # fmt: skip
    """A series of exact points at these MB/s, its summary refreshed from them, then with `summary`'s fields set by hand."""
    made = Series(framework, mode, "copy", device, list(shape), device_name=name, transfer=transfer)
    made.points = [point(batch, rate, math.prod(shape), batch in busy) for batch, rate in rates.items()]
    made.refresh_summary()
    if summary:
        made.summary = dataclasses.replace(made.summary, **summary)
    return made


def host(rates: dict[int, float], framework: str = "host", mode: str = "numpy", busy: tuple[int, ...] = (), **summary: Any) -> Series:
    """A host-to-host copy on the CPU, as a CPU-only sweep writes it."""
    return curve(rates, framework, mode, "cpu", "AMD EPYC", HOST_TO_HOST, busy=busy, **summary)


def run(*series: Series, **environment: Any) -> Result:
    return Result({**GPU_ENV, **environment}, {}, "2026-11-23T00:00:00+00:00", list(series), "complete")


def picked(result: Result, path: str = "run.json") -> list[Selected]:
    """Every series of the file as select() picks it."""
    return [Selected(Path(path), result, series) for series in result.series]


def lines(axes: Any, label: str | None = None) -> list[Any]:
    """The axes' lines, or those with this label."""
    return [line for line in axes.get_lines() if label is None or line.get_label() == label]


def curves(axes: Any) -> list[Any]:
    return [line for line in axes.get_lines() if not line.get_label().startswith("_")]


def rings(axes: Any) -> list[Any]:
    return [line for line in axes.get_lines() if line.get_marker() == "o" and line.get_markerfacecolor() == "none"]


def xy(line: Any) -> tuple[list[float], list[float]]:
    return [float(x) for x in line.get_xdata()], [float(y) for y in line.get_ydata()]


def handles(fig: Figure) -> list[Any]:
    return list(fig.legends[0].legend_handles)


def texts(fig: Figure) -> list[str]:
    return [text.get_text() for text in fig.legends[0].get_texts()]


def notes(axes: Any) -> list[tuple[str, tuple[float, float], tuple[float, float], str]]:
    """Each note on the axes: its text, the point it marks, its offset and its colour."""
    return [(t.get_text(), tuple(map(float, t.xy)), tuple(map(float, t.xyann)), t.get_color()) for t in axes.texts]  # type: ignore[misc]


def tick_texts(axes: Any) -> list[str]:
    return [label.get_text() for label in axes.get_xticklabels()]


def one_line(text: str) -> str:
    """A title as written, whatever lines fit_title broke it into."""
    return text.replace("\n", " ")


def drawn(fig: Figure) -> Any:
    """The renderer of the figure as laid out to be saved, for the extents of what it draws."""
    fig.draw_without_rendering()
    return fig.canvas.get_renderer()  # type: ignore[attr-defined]


def title_fits(axes: Any) -> bool:
    """Whether the panel's title lies within the panel's width, as drawn."""
    renderer = drawn(axes.figure)
    box, panel = axes.title.get_window_extent(renderer), axes.get_window_extent(renderer)
    return panel.x0 - 0.5 <= box.x0 and box.x1 <= panel.x1 + 0.5


@pytest.fixture(scope="module")
def one_file() -> Iterator[Figure]:
    """Six series of one GPU run (the most one panel takes): torch and cuda share it, with a cliff at a batch a
    user's 20 crowds, a busy point, fits good, borderline, poor, unstated and missing, and a band left short."""
    cliff = curve({1: 1000, 4: 5000, 16: 3000, 20: 4500, 64: 4800}, latency_s=1e-5, bandwidth_mbps=6000.0, fit_rel_rms=0.05)
    busy = curve({1: 900, 4: 3000, 16: 3500, 20: 3600, 64: 3700}, mode="pageable", busy=(4,), bandwidth_mbps=0.0)
    poor = curve({1: 1000, 4: 2000, 16: 3000, 64: 4000}, "cuda", "raw_pinned", latency_s=2e-5, bandwidth_mbps=5000.0, fit_rel_rms=0.21)
    poor.points[2].mbps_p90 = None  # no band at batch 16
    edge = curve({1: 1100, 4: 2100, 16: 3100, 64: 4100}, "cuda", "raw_pageable", latency_s=3e-5, bandwidth_mbps=4000.0, fit_rel_rms=0.20)
    unstated = curve({1: 1200, 4: 2200, 16: 3200, 64: 4200}, mode="pinned_into", latency_s=4e-5, bandwidth_mbps=4500.0, fit_rel_rms=None)
    bare = curve({1: 1300, 4: 2300, 16: 3300, 64: 4300}, mode="pin_per_call", latency_s=None, saturation_batch_size=999)
    for p in bare.points:
        p.mbps_p10 = p.mbps_p90 = None  # a peer's figures have no spread
    fig = figure(picked(run(cliff, busy, poor, edge, unstated, bare)))
    yield fig
    plt.close(fig)


@pytest.fixture(scope="module")
def two_files() -> Iterator[Figure]:
    """A CPU sweep before and after GLIBC_TUNABLES, on a log MB/s axis with a title: cliffs at batch 16 and at 20 (twice,
    one note below the other), one series partly busy and one busy at every point."""
    before = Result({**ENV, "settings": {}}, {}, "2026-11-23T00:00:00+00:00", [
        host({1: 1000, 4: 5000, 16: 3000, 64: 4500}, "torch", "pageable"),
        host({1: 1000, 4: 4000, 16: 4100, 64: 1200}, busy=(64,))], "complete")  # fmt: skip
    after = Result({**ENV, "settings": {"GLIBC_TUNABLES": TUNABLES}}, {}, "2026-11-23T00:00:00+00:00", [
        host({1: 1000, 4: 5000, 20: 2000, 64: 4500}, "torch", "pageable"),
        host({1: 1000, 4: 5000, 20: 3000, 64: 4000}, busy=(1, 4, 20, 64))], "complete")  # fmt: skip
    fig = figure(picked(before, "before.json") + picked(after, "after.json"), title="mine", y_scale="log")
    yield fig
    plt.close(fig)


@pytest.fixture(scope="module")
def by_bytes() -> Iterator[Figure]:
    """Three item shapes in one file: sizes on the x axis, every cliff noted by its size, two at one size stacked."""
    fig = figure(picked(run(curve({1: 1000, 4: 5000, 16: 3000}),
                            curve({1: 1000, 4: 5000, 16: 2000}, "cuda", "raw_pinned", shape=(1024, 1024)),
                            curve({1: 1000, 4: 5000, 16: 2500}, "tf", "eager", shape=(512, 512, 4)))))  # fmt: skip
    yield fig
    plt.close(fig)


@pytest.fixture(scope="module")
def panels() -> Iterator[Figure]:
    """Seven series on two GPUs from four frameworks, given out of framework order: a panel per framework, two
    rows of three, the last two slots empty."""
    series = [curve({1: 1000, 4: 5000, 16: 3000}), curve({1: 1000, 4: 2000, 16: 3000}, "cuda", "raw_pinned"),
              curve({1: 1100, 4: 2100, 16: 3100}, device="cuda:1"),
              curve({1: 1200, 4: 2200, 16: 3200}, "cuda", "raw_pinned", device="cuda:1"),
              curve({1: 1300, 4: 2300, 16: 3300}, "tf", "eager"), curve({1: 1400, 4: 2400, 16: 3400}, "tf", "eager", device="cuda:1"),
              curve({1: 1500, 4: 2500, 16: 3500}, "jax", "device_put")]  # fmt: skip
    fig = figure(picked(run(*series)))
    yield fig
    plt.close(fig)


@pytest.fixture(scope="module")
def macs() -> Iterator[Figure]:
    """Four Macs: an M2 Max whose chip macOS named, an M2 Pro known by its CPU name only, an M2 that ran only a pin
    (host to host), and an M1, for which Apple publishes no bandwidth."""
    def mac(name: str, cpu: str, chip: str | None, *series: Series) -> tuple[str, Result]:
        device = {"id": "mps", "kind": "mps", **({"chip": chip} if chip else {})}
        return name, Result({"host": name, "cpu": cpu, "devices": [device]}, {}, "2026-11-23T00:00:00+00:00", list(series), "complete")

    def mps(transfer: str = HOST_TO_DEVICE, mode: str = "pageable") -> Series:
        return curve({1: 1000, 4: 2000}, mode=mode, device="mps", name="Apple GPU", transfer=transfer)

    files = [mac("max", "Apple M2", "Apple M2 Max", mps()), mac("pro", "Apple M2 Pro", None, mps()),
             mac("pin", "Apple M2", "Apple M2", mps(HOST_TO_HOST, "pin")), mac("m1", "Apple M1", "Apple M1", mps())]  # fmt: skip
    fig = figure([pick for name, result in files for pick in picked(result, f"{name}.json")])
    yield fig
    plt.close(fig)


# series_labels and _collide


def test_a_label_names_the_path_and_the_device_and_says_host_to_host() -> None:
    """framework/mode/op @ device name, the device id where no name was recorded, and · host-to-host for a CPU copy."""
    picks = picked(run(curve({1: 100}), host({1: 100}), curve({1: 100}, "cuda", "raw_pinned", "cuda:1", name=None)))
    assert series_labels(picks) == ["torch/pinned/copy @ NVIDIA H100", "host/numpy/copy @ AMD EPYC · host-to-host",
                                    "cuda/raw_pinned/copy @ cuda:1"]  # fmt: skip


def test_two_gpus_of_one_model_put_every_device_id_in_every_label() -> None:
    """One label on two devices: each label gets its device id, a CPU copy's too."""
    picks = picked(run(curve({1: 100}), curve({1: 100}, device="cuda:1"), host({1: 100})))
    assert series_labels(picks) == ["torch/pinned/copy @ NVIDIA H100 [cuda:0]", "torch/pinned/copy @ NVIDIA H100 [cuda:1]",
                                    "host/numpy/copy @ AMD EPYC · host-to-host [cpu]"]  # fmt: skip


def test_several_files_name_the_file_and_one_device_in_two_files_needs_no_id() -> None:
    """From several files each label ends with the file's name; a failed series says FAILED after it."""
    a, b = run(curve({1: 100}), host="gpu-a"), run(curve({1: 100}), host="gpu-b")
    b.series[0].status = "failed"
    assert series_labels(picked(a) + picked(b)) == ["torch/pinned/copy @ NVIDIA H100 (gpu-a)",
                                                    "torch/pinned/copy @ NVIDIA H100 (gpu-b) (FAILED)"]  # fmt: skip
    assert series_labels(picked(a)) == ["torch/pinned/copy @ NVIDIA H100"]


def test_files_that_share_a_name_and_a_host_are_named_by_the_folder_that_differs() -> None:
    """run-2/validation/default.json and run-4/validation/default.json: run-2 and run-4, in each series' label and
    in the legend's key for each file, never the whole paths."""
    a, b = run(curve({1: 100, 4: 300})), run(curve({1: 100, 4: 300}))
    picks = picked(a, "r/run-2/validation/default.json") + picked(b, "r/run-4/validation/default.json")
    assert series_labels(picks) == ["torch/pinned/copy @ NVIDIA H100 (run-2)", "torch/pinned/copy @ NVIDIA H100 (run-4)"]
    fig = figure(picks)
    named = [text.get_text() for text in fig.legends[0].get_texts()]
    assert "run-2" in named and "run-4" in named and not any("default.json" in text for text in named)
    plt.close(fig)


def test_labels_collide_only_when_one_label_stands_for_two_owners() -> None:
    """The same label twice for one owner is no collision; for two owners, anywhere in the list, it is."""
    assert not _collide(["a", "b"], ["x", "y"])
    assert not _collide(["a", "a"], ["x", "x"])
    assert _collide(["a", "a", "b"], ["x", "y", "z"])
    assert _collide(["b", "a", "a"], ["z", "x", "y"])
    assert not _collide([], [])


# device_text and default_title


@pytest.mark.parametrize("device, name, transfer, text", [
    ("cuda:0", H100, HOST_TO_DEVICE, "NVIDIA H100 (cuda:0)"), ("cuda:0", H100, DEVICE_TO_HOST, "NVIDIA H100 (cuda:0)"),
    ("cuda:0", H100, BIDIRECTIONAL, "NVIDIA H100 (cuda:0)"), ("cuda:0", H100, HOST_TO_HOST, "NVIDIA H100"),
    ("cuda:0", None, HOST_TO_DEVICE, "cuda:0"), ("cuda:0", H100, SIMULATED, "NVIDIA H100"), ("cuda:0", H100, None, "NVIDIA H100"),
    ("mps", "Apple GPU", HOST_TO_DEVICE, "Apple GPU (mps, unified memory)"), ("mps", None, DEVICE_TO_HOST, "mps (mps, unified memory)"),
    ("mps", "Apple GPU", HOST_TO_HOST, "Apple GPU"), ("cpu", "AMD EPYC", HOST_TO_HOST, "AMD EPYC"),
])  # fmt: skip
def test_a_device_is_named_with_its_id_only_where_data_crosses_to_a_gpu(device: str, name: str | None, transfer: str | None,
                                                                        text: str) -> None:  # fmt: skip
    """H2D, D2H and bidirectional name the id beside the name (an Apple GPU: unified memory); any other copy the name alone."""
    assert device_text(Series("torch", "pinned", "copy", device, [1], device_name=name, transfer=transfer)) == text


def title(*series: Series) -> str:
    return default_title(picked(run(*series)))


def test_the_default_title_names_each_transfer_and_its_devices_in_order() -> None:
    """Transfers in the order they appear, each with its devices, one device text once however many series."""
    assert title(curve({1: 1}), curve({1: 1}, "cuda", "raw_pinned")) == "host-to-device: NVIDIA H100 (cuda:0)"
    a100 = curve({1: 1}, device="cuda:1", name="NVIDIA A100")
    assert title(curve({1: 1}), a100) == "host-to-device: NVIDIA H100 (cuda:0), NVIDIA A100 (cuda:1)"
    assert title(host({1: 1}), curve({1: 1})) == "host-to-host on the CPU: AMD EPYC; host-to-device: NVIDIA H100 (cuda:0)"


def test_a_host_copy_is_on_the_cpu_with_no_gpu_only_when_alone_and_every_host_copy_ran_on_the_cpu() -> None:
    """The CPU alone: (no GPU); beside a GPU's transfer: on the CPU; a pin on the GPU's device among them: host-to-host."""
    assert title(host({1: 1})) == "host-to-host on the CPU (no GPU): AMD EPYC"
    assert title(curve({1: 1}), host({1: 1})) == "host-to-device: NVIDIA H100 (cuda:0); host-to-host on the CPU: AMD EPYC"
    pin = curve({1: 1}, mode="pin", transfer=HOST_TO_HOST)
    assert title(host({1: 1}), pin) == "host-to-host: AMD EPYC, NVIDIA H100"
    assert title(pin, host({1: 1})) == "host-to-host: NVIDIA H100, AMD EPYC"


def test_other_transfers_have_their_own_words_and_an_unrecorded_one_says_so() -> None:
    """Simulated, bidirectional, device-to-host as recorded, and none recorded."""
    assert title(curve({1: 1}, "sim", "link", "sim", "simulated link", SIMULATED)) == "simulated transfer (no data moves): simulated link"
    assert title(curve({1: 1}, transfer=BIDIRECTIONAL)) == "bidirectional (MB/s both ways together): NVIDIA H100 (cuda:0)"
    assert title(curve({1: 1}, transfer=DEVICE_TO_HOST)) == "device-to-host: NVIDIA H100 (cuda:0)"
    assert title(curve({1: 1}, transfer=None)) == "transfer not recorded: NVIDIA H100"


def test_up_to_three_devices_are_named_and_four_are_counted() -> None:
    """Three device texts are listed; a fourth turns them into a count."""
    three = [curve({1: 1}, device=f"cuda:{i}") for i in range(3)]
    assert title(*three) == "host-to-device: NVIDIA H100 (cuda:0), NVIDIA H100 (cuda:1), NVIDIA H100 (cuda:2)"
    assert title(*three, curve({1: 1}, device="cuda:3")) == "host-to-device: 4 devices"


# cliff_note and place_text


def test_a_cliff_note_gives_the_first_fall_and_the_worst_where_they_differ() -> None:
    """−40% at batch 16, worst −75% later; the point returned is the one at the cliff; by size on a bytes axis."""
    series = curve({1: 1000, 4: 5000, 16: 3000, 64: 1250})
    at, text = cliff_note(series)  # type: ignore[misc]
    assert text == "cliff: −40% at batch 16 (worst −75%)" and at is series.points[2]
    assert cliff_note(series, in_bytes=True) == (series.points[2], "cliff: −40% at 3 MiB (worst −75%)")
    assert cliff_note(series, False) == (series.points[2], "cliff: −40% at batch 16 (worst −75%)")


def test_a_worst_fall_that_rounds_to_the_first_is_not_repeated() -> None:
    """The worst is said only where its whole percentage differs from the first fall's."""
    series = curve({1: 1000, 4: 5000, 16: 3000})
    assert cliff_note(series) == (series.points[2], "cliff: −40% at batch 16")
    series.summary = dataclasses.replace(series.summary, cliff_drop=0.404)
    assert cliff_note(series) == (series.points[2], "cliff: −40% at batch 16")
    series.summary = dataclasses.replace(series.summary, cliff_drop=0.406)
    assert cliff_note(series) == (series.points[2], "cliff: −40% at batch 16 (worst −41%)")
    series.summary = dataclasses.replace(series.summary, cliff_drop=None)
    assert cliff_note(series) == (series.points[2], "cliff: −40% at batch 16")


def test_no_cliff_note_without_a_cliff_a_peak_or_a_measured_point_at_its_batch() -> None:
    """No cliff flagged, no peak, a cliff batch with no ok point, or one with no MB/s: no note."""
    series = curve({1: 1000, 4: 5000, 16: 3000})
    flagged = series.summary
    assert flagged.cliff and flagged.cliff_batch_size == 16
    for changed in ({"cliff": False}, {"peak_mbps": None}, {"peak_mbps": 0.0}, {"cliff_batch_size": 32}):
        series.summary = dataclasses.replace(flagged, **changed)
        assert cliff_note(series) is None, changed
    series.summary = flagged
    series.points[2].mbps = None
    assert cliff_note(series) is None
    assert cliff_note(curve({1: 1000, 4: 5000, 16: 4500})) is None


def test_a_place_is_a_batch_or_a_binary_size() -> None:
    """batch N on a batch axis, the point's bytes as a binary size on a bytes axis."""
    assert place_text(point(16, 100.0), False) == "batch 16"
    assert place_text(point(16, 100.0), True) == "3 MiB"


# default_path


def test_the_default_path_joins_up_to_three_stems_under_runs_and_counts_the_rest() -> None:
    """runs/a.png, runs/a-vs-b-vs-c.png, then -and-N-more; never a checkout's plots/."""
    paths = [Path(f"/x/{name}.json") for name in "abcde"]
    assert default_path(paths[:1]) == Path("runs/a.png")
    assert default_path(paths[:3]) == Path("runs/a-vs-b-vs-c.png")
    assert default_path(paths[:4]) == Path("runs/a-vs-b-vs-c-and-1-more.png")
    assert default_path(paths) == Path("runs/a-vs-b-vs-c-and-2-more.png")


def test_the_default_path_keeps_safe_characters_and_the_first_120() -> None:
    """Letters, digits, _ . - stay; anything else becomes -; the name is cut to 120 characters before .png."""
    assert default_path([Path("Az_09.x-y z+é@q.json")]) == Path("runs/Az_09.x-y-z---q.png")
    assert default_path([Path("a" * 119 + "bcd.json")]) == Path("runs/" + "a" * 119 + "b.png")


# tick_labels


def test_ticks_at_least_0_4_octaves_apart_are_all_labelled_and_closer_ones_give_way() -> None:
    """100 and 132 (0.4005 octaves) both; 100 and 131 (0.39) only the first; every tick keeps its place."""
    assert tick_labels([100, 132]) == ["100", "132"]
    assert tick_labels([100, 131]) == ["100", ""]
    assert tick_labels([1, 2, 4]) == ["1", "2", "4"]


def test_a_cliffs_batch_then_a_chosen_batch_then_a_power_of_two_keeps_its_label() -> None:
    """First the batches asked for, then those no power of two, then the rest, each rank in ascending order."""
    assert tick_labels([128, 150]) == ["", "150"]
    assert tick_labels([128, 150], first=[128]) == ["128", ""]
    assert tick_labels([150, 160]) == ["150", ""]
    assert tick_labels([150, 160], first=[160]) == ["", "160"]
    assert tick_labels([96, 100]) == ["96", ""]
    assert tick_labels([64, 72, 512]) == ["", "72", "512"]
    assert tick_labels([]) == []


# busy_key


def busy_picks(*kinds: str) -> list[Selected]:
    """A series per kind: clean, partly busy (one point), or busy at every point."""
    busy = {"clean": (), "partly": (4,), "every": (1, 4, 16)}
    return picked(run(*(curve({1: 1000, 4: 2000, 16: 3000}, mode=f"m{i}", busy=busy[kind]) for i, kind in enumerate(kinds))))


def test_no_busy_point_no_busy_key() -> None:
    """Clean series only: no key."""
    assert busy_key(busy_picks("clean", "clean"), ["A", "B"]) is None


def test_busy_points_left_out_say_so() -> None:
    """Some points busy in each busy series: they are left out of peak, saturation and cliff."""
    assert busy_key(busy_picks("clean", "partly", "partly"), ["A", "B", "C"]) == f"{BUSY} (left out of peak, saturation and cliff)"


def test_series_busy_at_every_point_are_named_up_to_two_then_counted() -> None:
    """Every busy series busy throughout: their marks rest on the busy points, named (A and B) or counted (3 series)."""
    rest = ", so the peak, saturation and cliff marks rest on them"
    assert busy_key(busy_picks("clean", "every"), ["A", "B"]) == f"{BUSY}: every point of B{rest}"
    assert busy_key(busy_picks("every", "clean", "every"), ["A", "B", "C"]) == f"{BUSY}: every point of A and C{rest}"
    assert busy_key(busy_picks("every", "every", "every"), ["A", "B", "C"]) == f"{BUSY}: every point of 3 series{rest}"


def test_busy_series_of_both_kinds_name_the_exceptions() -> None:
    """Some series partly busy, some busy throughout: left out, except in those named or counted."""
    where = ", where every point was busy and the marks rest on them)"
    assert busy_key(busy_picks("partly", "every", "clean"), ["A", "B", "C"]) == (
        f"{BUSY} (left out of peak, saturation and cliff, except in B{where}")  # fmt: skip
    assert busy_key(busy_picks("every", "partly", "every"), ["A", "B", "C"]) == (
        f"{BUSY} (left out of peak, saturation and cliff, except in A and C{where}")  # fmt: skip
    assert busy_key(busy_picks("every", "every", "partly", "every"), ["A", "B", "C", "D"]) == (
        f"{BUSY} (left out of peak, saturation and cliff, except in 3 series{where}")  # fmt: skip


# wrapped


def test_a_line_of_the_width_stays_whole_and_one_more_character_breaks_it() -> None:
    """60 characters by default; trailing spaces do not count, the space a line breaks after is dropped."""
    assert wrapped("a" * 29 + " " + "b" * 30) == "a" * 29 + " " + "b" * 30
    assert wrapped("a" * 29 + " " + "b" * 31) == "a" * 29 + "\n" + "b" * 31
    assert wrapped("ab cd ef", 5) == "ab cd\nef"
    assert wrapped("a b") == "a b"


@pytest.mark.parametrize("separator", [" ", ":", ";", ","])
def test_a_line_breaks_after_a_space_colon_semicolon_or_comma(separator: str) -> None:
    """Each separator stays at the end of its line (a space is dropped there)."""
    assert wrapped(f"aaa{separator}bbb", 5) == f"aaa{separator.strip()}\nbbb"


def test_a_word_longer_than_a_line_is_split_and_nothing_is_dropped() -> None:
    """A word of the width is one line; a longer one is cut at the width; the next word starts on a line of its own."""
    assert wrapped("xxxxx", 5) == "xxxxx"
    assert wrapped("x" * 12, 5) == "xxxxx\nxxxxx\nxx"
    assert wrapped("xxxxx yy", 5) == "xxxxx\nyy"
    assert wrapped("a " + "x" * 7, 5) == "a\nxxxxx\nxx"
    assert wrapped("  abcdef", 5) == "  abc\ndef"  # spaces alone are no line to break after


# _whole and file_tags


def test_a_value_cut_for_the_terminal_is_whole_in_the_legend() -> None:
    """A setting of 49 characters or more is given back whole; 48 is never cut; a short value is kept as described."""
    long, edge = "v" * 49, "w" * 48
    assert _whole(Difference("GLIBC_TUNABLES", ["unset", long]), 1) == f"GLIBC_TUNABLES={long}"
    assert _whole(Difference("GLIBC_TUNABLES", ["unset", long]), 0) is None
    assert _whole(Difference("driver", [edge, long]), 0) == f"driver {edge}"
    assert _whole(Difference("driver", [edge, long]), 1) == f"driver {long}"
    assert _whole(Difference("device", ["A100", long]), 1) == long
    assert _whole(Difference("driver", ["550.54", "560.1"]), 0) == "driver 550.54"


def test_a_file_tag_adds_up_to_two_differences_whole_and_a_file_with_none_keeps_its_label() -> None:
    """label: first; second, by default; `most` more where asked; a file the differences say nothing of: its label."""
    found = [Difference("GLIBC_TUNABLES", ["unset", TUNABLES]), Difference("driver", ["550.1", "560.2"]),
             Difference("OS", ["Linux-6.1", "Linux-6.8"])]  # fmt: skip
    assert file_tags(["a", "b"], found) == ["a: driver 550.1; OS Linux-6.1", f"b: GLIBC_TUNABLES={TUNABLES}; driver 560.2"]
    assert file_tags(["a", "b"], found, most=3)[1] == f"b: GLIBC_TUNABLES={TUNABLES}; driver 560.2; OS Linux-6.8"
    assert file_tags(["a", "b"], found[:1]) == ["a", f"b: GLIBC_TUNABLES={TUNABLES}"]


# size_ticks


def test_size_ticks_are_every_power_of_two_across_the_sizes() -> None:
    """From the power at or below the smallest to the one at or above the largest, named as sizes."""
    assert size_ticks([1000, 5000]) == ([512, 1024, 2048, 4096, 8192], ["512 B", "1 KiB", "2 KiB", "4 KiB", "8 KiB"])
    assert size_ticks([8, 16]) == ([8, 16], ["8 B", "16 B"])
    assert size_ticks([1024]) == ([1024], ["1 KiB"])
    assert size_ticks([1, 2**10]) == ([2**e for e in range(11)], [f"{2**e} B" for e in range(10)] + ["1 KiB"])  # ten octaves: every one


def test_past_ten_octaves_size_ticks_skip_to_about_ten_on_multiples_of_the_step() -> None:
    """11 octaves: every second power from an even one; 24: every third, from a multiple of three."""
    assert size_ticks([1, 2**11])[0] == [1, 4, 16, 64, 256, 1024]
    assert size_ticks([2**3, 2**15])[0] == [2**e for e in range(4, 16, 2)]
    assert size_ticks([3, 2**25])[0] == [2**e for e in range(3, 26, 3)]  # from 2 (one octave) up to the step's next multiple


# log_rates


def rates(*sets: tuple[float | None, ...]) -> list[Selected]:
    """A series per set of MB/s (batches 1, 2, 3...)."""
    made = [Series("torch", f"m{i}", "copy", "cpu", list(SHAPE)) for i in range(len(sets))]
    for series, found in zip(made, sets):
        series.points = [point(batch, rate) for batch, rate in enumerate(found, 1)]
    return picked(run(*made))


def test_auto_goes_log_once_the_medians_span_more_than_ten_times_across_every_series() -> None:
    """Exactly 10×: linear; 10.01×, the ends in different series: log."""
    assert log_rates(rates((100.0, 1000.0)), "auto") is False
    assert log_rates(rates((100.0, 500.0), (1001.0,)), "auto") is True
    assert log_rates(rates((1.0, 10.5)), "auto") is True


def test_auto_ignores_rates_of_zero_and_none_and_without_rates_stays_linear() -> None:
    """Only positive MB/s count; none at all: linear."""
    picks = rates((100.0, 500.0, 1000.0))
    picks[0].series.points[0].mbps = 0.0
    assert log_rates(picks, "auto") is False
    assert log_rates(rates((None, 100.0, 1001.0)), "auto") is True
    assert log_rates(rates((None, 100.0, 1000.0)), "auto") is False
    assert log_rates(rates((None,)), "auto") is False


def test_linear_and_log_are_taken_as_asked_and_anything_else_is_refused() -> None:
    """--y-scale linear or log overrides the span; another word is one line naming the three."""
    assert log_rates(rates((1.0, 1000.0)), "linear") is False
    assert log_rates(rates((100.0, 200.0)), "log") is True
    with pytest.raises(XferbenchError) as raised:
        log_rates(rates((100.0,)), "sqrt")
    assert str(raised.value) == "--y-scale sqrt: give auto, linear or log"


# _styles and _file_keys


def test_one_file_gives_each_series_a_colour_and_a_new_line_style_past_each_ten() -> None:
    """C0..C9 again and again; -, --, :, -. for each ten series in turn, then - again; one marker."""
    series = [Series("torch", f"m{i}", "copy", "cpu", [1]) for i in range(41)]
    colours, styles, markers = _styles(picked(run(*series)))
    assert colours == [f"C{i % 10}" for i in range(41)]
    assert styles == ["-"] * 10 + ["--"] * 10 + [":"] * 10 + ["-."] * 10 + ["-"]
    assert markers == ["."] * 41


def test_several_files_colour_each_path_and_style_and_mark_each_file() -> None:
    """A path's colour in every file (past ten paths the cycle repeats); a file's line style and marker, past four again."""
    first = run(*(Series("torch", f"m{i}", "copy", "cpu", [1]) for i in range(11)))
    others = [run(Series("torch", "m1", "copy", "cpu", [1])) for _ in range(4)]
    picks = picked(first) + [pick for result in others for pick in picked(result)]
    colours, styles, markers = _styles(picks)
    assert colours == [f"C{i % 10}" for i in range(11)] + ["C1"] * 4
    assert styles == ["-"] * 11 + ["--", ":", "-.", "-"]
    assert markers == ["."] * 11 + ["x", "+", "1", "."]


def test_file_keys_name_each_path_in_its_colour_then_each_file_in_black_by_what_sets_it_apart() -> None:
    """A key per path (· host-to-host for a CPU copy), then per file its line style, marker and whole differences."""
    a = run(curve({1: 1}), host({1: 1}), curve({1: 1}, device="cuda:1"))
    b = run(curve({1: 1}), settings={"GLIBC_TUNABLES": TUNABLES})
    picks = picked(a) + picked(b)
    keys = _file_keys(picks, ["C0", "C1", "C5", "C0"], [(Path("a.json"), a), (Path("b.json"), b)], ["a", "b"])
    copied = "a host-to-device transfer over the GPU's link (CUDA); a host-to-host copy (CPU, no GPU)"
    assert [key.get_label() for key in keys] == ["torch/pinned/copy", "host/numpy/copy · host-to-host",
                                                 f"a: {copied}; NVIDIA H100; AMD EPYC",
                                                 "b: a host-to-device transfer over the GPU's link (CUDA); NVIDIA H100"]  # fmt: skip
    assert [key.get_color() for key in keys] == ["C0", "C1", "black", "black"]
    assert [key.get_linestyle() for key in keys] == ["-", "-", "-", "--"]
    assert [key.get_marker() for key in keys] == ["None", "None", ".", "x"]
    assert all(list(key.get_xdata()) == [] for key in keys)


# save


def png_width(data: bytes) -> int:
    return int.from_bytes(data[16:20], "big")


def test_a_figure_is_written_in_the_format_its_suffix_names(tmp_path: Path) -> None:
    """.png at 130 dpi, .svg and .pdf, any case, into a folder made as needed; the path is returned."""
    fig = Figure(figsize=(1, 1))
    for name, magic in (("f.png", b"\x89PNG"), ("f.svg", b"<?xml"), ("f.pdf", b"%PDF"), ("F.PNG", b"\x89PNG")):
        out = tmp_path / "new" / "deeper" / name
        assert save(fig, out) == out
        assert out.read_bytes().startswith(magic)
    assert png_width((tmp_path / "new" / "deeper" / "f.png").read_bytes()) == 130
    assert save(fig, tmp_path / "here.png") == tmp_path / "here.png"  # the folder exists
    plt.close(fig)


def test_another_suffix_is_refused_naming_the_option(tmp_path: Path) -> None:
    """One line naming the option that gave the path, --out unless told."""
    with pytest.raises(XferbenchError) as raised:
        save(Figure(), tmp_path / "x.gif", "--plot")
    assert str(raised.value) == f"--plot {tmp_path / 'x.gif'}: use a .png, .svg or .pdf name"
    with pytest.raises(XferbenchError) as raised:
        save(Figure(), tmp_path / "x.jpg")
    assert str(raised.value) == f"--out {tmp_path / 'x.jpg'}: use a .png, .svg or .pdf name"
    assert not list(tmp_path.iterdir())


def test_a_folder_or_a_file_in_the_way_is_refused_naming_the_option(tmp_path: Path) -> None:
    """A folder at the path, or a file where a folder should be: one line, the option named, no chained error."""
    (tmp_path / "d.png").mkdir()
    with pytest.raises(XferbenchError) as raised:
        save(Figure(), tmp_path / "d.png", "--plot")
    assert str(raised.value) == f"--plot {tmp_path / 'd.png'} is a folder; xferbench writes only regular files: choose another --plot"
    (tmp_path / "file").write_text("")
    inside = tmp_path / "file" / "p.png"
    with pytest.raises(XferbenchError) as raised:
        save(Figure(), inside, "--plot")
    assert str(raised.value) == f"cannot write the plot to {inside}: {tmp_path / 'file'} is a file, not a folder; choose another --plot"
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_a_save_the_os_refuses_says_the_os_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No file in the way, the disk full: the OS's own reason, in one line naming the option."""
    from xferbench.reading import plot as plotting

    def full(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(plotting, "write_whole", full)
    with pytest.raises(XferbenchError) as raised:
        save(Figure(), tmp_path / "p.png", "--plot")
    assert str(raised.value) == f"cannot write the plot to {tmp_path / 'p.png'}: No space left on device; choose another --plot"


# figure(): one file, one panel


def test_six_series_share_one_rate_panel_beside_the_time_panel_sized_by_series_and_devices(one_file: Figure) -> None:
    """Two axes, 13 wide and 5.6 + 0.25 per three series and devices high, laid out by constrained layout."""
    assert len(one_file.axes) == 2 and all(axes.get_visible() for axes in one_file.axes)
    rates, times = (axes.get_subplotspec() for axes in one_file.axes)
    assert (rates.rowspan, rates.colspan, times.rowspan, times.colspan) == (range(0, 1), range(0, 1), range(0, 1), range(1, 2))  # side by side
    assert [float(v) for v in one_file.get_size_inches()] == [13.0, 6.1]
    assert isinstance(one_file.get_layout_engine(), ConstrainedLayoutEngine)


def test_each_series_is_a_curve_in_its_colour_style_and_marker_labelled_with_its_cliff(one_file: Figure) -> None:
    """x the batch, y the MB/s; the legend label names a cliff's fall."""
    drawn = curves(one_file.axes[0])
    assert [line.get_label() for line in drawn] == [
        "torch/pinned/copy @ NVIDIA H100 · ▼ cliff: −40% at batch 16", "torch/pageable/copy @ NVIDIA H100",
        "cuda/raw_pinned/copy @ NVIDIA H100", "cuda/raw_pageable/copy @ NVIDIA H100", "torch/pinned_into/copy @ NVIDIA H100",
        "torch/pin_per_call/copy @ NVIDIA H100", CEILING]  # fmt: skip
    assert xy(drawn[0]) == ([1, 4, 16, 20, 64], [1000, 5000, 3000, 4500, 4800])
    assert xy(drawn[2]) == ([1, 4, 16, 64], [1000, 2000, 3000, 4000])
    assert [line.get_color() for line in drawn[:6]] == [f"C{i}" for i in range(6)]
    assert {line.get_linestyle() for line in drawn[:6]} == {"-"} and {line.get_marker() for line in drawn[:6]} == {"."}


def test_a_busy_point_is_a_hollow_circle_over_its_curve(one_file: Figure) -> None:
    """White-filled circles of size 7 at the busy points only, in the series' colour, unjoined, hidden from the legend."""
    (hollow,) = lines(one_file.axes[0], "_busy")
    assert xy(hollow) == ([4], [3000])
    assert (hollow.get_marker(), hollow.get_markersize(), hollow.get_markerfacecolor(), hollow.get_color(), hollow.get_linestyle()) == (
        "o", 7, "white", "C1", "None")  # fmt: skip


def test_a_ring_marks_each_saturation_batch_and_none_where_it_is_not_drawn(one_file: Figure) -> None:
    """Open circles of size 9 in the series' colour at the saturation batch; none for a batch the curve lacks."""
    drawn = rings(one_file.axes[0])
    assert [xy(line) for line in drawn] == [([4], [5000]), ([20], [3600]), ([64], [4000]), ([64], [4100]), ([64], [4200])]
    assert [line.get_color() for line in drawn] == ["C0", "C1", "C2", "C3", "C4"]
    assert {(line.get_markersize(), line.get_linestyle(), line.get_label()[0]) for line in drawn} == {(9, "None", "_")}


def test_a_cliff_is_a_triangle_at_its_point(one_file: Figure) -> None:
    """A downward triangle of size 9 in the series' colour, unjoined, at the cliff's batch and MB/s."""
    (triangle,) = lines(one_file.axes[0], "_cliff")
    assert xy(triangle) == ([16], [3000])
    assert (triangle.get_marker(), triangle.get_markersize(), triangle.get_color(), triangle.get_linestyle()) == ("v", 9, "C0", "None")


def test_the_band_spans_p10_to_p90_where_a_point_has_both(one_file: Figure) -> None:
    """A band per series with any spread, in its colour at alpha 0.15, only over the points with both ends."""
    bands = one_file.axes[0].collections
    assert len(bands) == 5
    assert [sorted({float(x) for x in band.get_paths()[0].vertices[:, 0]}) for band in bands[:3]] == [
        [1, 4, 16, 20, 64], [1, 4, 16, 20, 64], [1, 4, 64]]  # fmt: skip
    assert {float(y) for y in bands[2].get_paths()[0].vertices[:, 1]} == {980.0, 1020.0, 1960.0, 2040.0, 3920.0, 4080.0}
    assert [tuple(band.get_facecolor()[0]) for band in bands] == [to_rgba(f"C{i}", 0.15) for i in range(5)]


def test_the_time_panel_has_each_series_points_and_its_fit_dashed_or_dotted_when_poor(one_file: Figure) -> None:
    """Points by bytes, unjoined; latency + bytes / bandwidth over them, dotted only above a 20% rms error; none without both figures."""
    time = one_file.axes[1]
    points = [line for line in time.get_lines() if not line.get_label().startswith("_")]
    sizes = [ITEM, 4 * ITEM, 16 * ITEM, 20 * ITEM, 64 * ITEM]
    assert xy(points[0]) == (sizes, pytest.approx([b / (r * 1e6) for b, r in zip(sizes, [1000, 5000, 3000, 4500, 4800])]))
    assert points[0].get_label() == "torch/pinned/copy @ NVIDIA H100 · ▼ cliff: −40% at batch 16"
    assert {(line.get_linestyle(), line.get_marker()) for line in points} == {("None", ".")}
    assert [line.get_color() for line in points] == [f"C{i}" for i in range(6)]
    fits = [line for line in time.get_lines() if line.get_label().startswith("_")]
    assert [(line.get_label(), line.get_linestyle(), line.get_color(), line.get_linewidth()) for line in fits] == [
        ("_fit", "--", "C0", 1), ("_poor fit", ":", "C2", 1), ("_fit", "--", "C3", 1), ("_fit", "--", "C4", 1)]  # fmt: skip
    assert xy(fits[0]) == (sizes, pytest.approx([1e-5 + b / (6000.0 * 1e6) for b in sizes], rel=1e-12))
    assert xy(fits[1])[1] == pytest.approx([2e-5 + b / (5000.0 * 1e6) for b in (ITEM, 4 * ITEM, 16 * ITEM, 64 * ITEM)], rel=1e-12)


def test_the_time_panel_is_log_log_with_its_labels_and_title(one_file: Figure) -> None:
    """Both axes log, bytes per call against median seconds, every gridline at alpha 0.3, the fit's rule in the title."""
    time = one_file.axes[1]
    assert (time.get_xscale(), time.get_yscale()) == ("log", "log")
    assert (time.get_xlabel(), time.get_ylabel()) == ("bytes per call", "median time per call (s)")
    assert one_line(time.get_title()) == "time per call; dashed: fitted latency + bytes / bandwidth (dotted: poor fit, rms > 20%)"
    assert 8 <= time.title.get_fontsize() <= 9 and title_fits(time)  # 9 points where it fits, else smaller, then wrapped
    for axis in (time.xaxis, time.yaxis):
        for which in ("major", "minor"):
            assert (axis.get_tick_params(which=which)["gridOn"], axis.get_tick_params(which=which)["grid_alpha"]) == (True, 0.3)


def test_a_known_link_draws_its_ceiling_once_however_many_frameworks_share_the_panel(one_file: Figure) -> None:
    """One grey dashed line at the theoretical MB/s, labelled with the link it reads."""
    (ceiling,) = lines(one_file.axes[0], CEILING)
    assert xy(ceiling)[1] == [pcie_ceiling(GPUS[0])[0] * 1e3] * 2  # type: ignore[index]
    assert (ceiling.get_color(), ceiling.get_linestyle(), ceiling.get_linewidth()) == ("grey", "--", 1)


def test_the_rate_panel_reads_batches_on_a_log2_axis_from_zero_mbps(one_file: Figure) -> None:
    """Every batch a tick (20 gives way to the cliff's 16), labels in size 8 and shown, no minor ticks, a linear axis from 0."""
    rate = one_file.axes[0]
    assert rate.get_xscale() == "log" and rate.xaxis.get_transform().base == 2
    assert [float(x) for x in rate.get_xticks()] == [1, 4, 16, 20, 64] and tick_texts(rate) == ["1", "4", "16", "", "64"]
    assert {label.get_fontsize() for label in rate.get_xticklabels()} == {8}
    assert rate.xaxis.get_tick_params()["labelbottom"] is True and isinstance(rate.xaxis.get_minor_locator(), NullLocator)
    assert rate.get_xlabel() == "batch size (images)" and rate.get_ylabel() == "median MB/s (10^6 B/s)"
    assert rate.get_yscale() == "linear" and rate.get_ylim()[0] == 0
    assert (rate.xaxis.get_tick_params()["gridOn"], rate.xaxis.get_tick_params()["grid_alpha"]) == (True, 0.3)


def test_a_cliff_whose_batch_keeps_its_tick_needs_no_note(one_file: Figure) -> None:
    """The batch is read off the axis: nothing written at the triangle."""
    assert notes(one_file.axes[0]) == []


def test_the_rate_title_names_the_band_ring_triangle_and_hollow_and_the_figure_its_devices(one_file: Figure) -> None:
    """The panel title lists each mark drawn, in size 9 down to 8 and then on two lines, to fit its panel; the figure is
    titled by transfer and device."""
    assert one_line(one_file.axes[0].get_title()) == f"{WHAT}{CLIFF_WHAT}, hollow: busy machine"
    assert one_file.axes[0].title.get_fontsize() == 8 and "\n" in one_file.axes[0].get_title() and title_fits(one_file.axes[0])
    assert one_file.get_suptitle() == "host-to-device: NVIDIA H100 (cuda:0)"


def test_one_files_legend_is_its_curves_then_the_ceiling_then_the_busy_key(one_file: Figure) -> None:
    """In three columns under the figure, size 8; the busy key a white circle, wrapped like every entry."""
    key = f"{BUSY} (left out of peak, saturation and cliff)"
    assert [h.get_label() for h in handles(one_file)] == [line.get_label() for line in curves(one_file.axes[0])] + [key]
    wrapped_key = "measured on a busy machine (left out of peak, saturation and\ncliff)"  # 60 characters, then the rest
    assert texts(one_file) == [wrapped(line.get_label()) for line in curves(one_file.axes[0])] + [wrapped_key]
    assert texts(one_file)[0] == "torch/pinned/copy @ NVIDIA H100 · ▼ cliff: −40% at batch 16"  # 59 characters: one line
    last = handles(one_file)[-1]
    assert (last.get_marker(), last.get_markerfacecolor(), last.get_color(), last.get_linestyle()) == ("o", "white", "grey", "None")
    legend = one_file.legends[0]
    assert (legend._ncols, legend._loc, legend._outside_loc, legend.get_texts()[0].get_fontsize()) == (3, 8, "lower", 8)


def test_a_legend_of_wide_letters_takes_fewer_columns_and_fits_within_the_figure() -> None:
    """Six entries of 60 characters fit three columns by their count, but capitals are wide: drawn, the legend takes
    two columns and lies inside the figure's width, not cut at both edges."""
    modes = ("pageable", "pinned", "pinned_into", "pin_per_call", "pageable_into", "pinned_nb")
    wide = [dataclasses.replace(curve({1: 1000 + i, 4: 5000, 16: 3000, 64: 4800}, mode=mode), device_name="NVIDIA WWWW MMMM WWWW MMMM")
            for i, mode in enumerate(modes)]  # fmt: skip
    fig = figure(picked(run(*wide)))
    try:
        fig.canvas.draw()
        box = fig.legends[0].get_window_extent()
        legend = fig.legends[0]
        assert len(fig.legends) == 1 and legend._ncols == 2 and 0 <= box.x0 and box.x1 <= fig.bbox.width
        # the legend drawn again is the same legend: its entries, under the figure, at size 8
        assert [t.get_text() for t in legend.get_texts()] == [wrapped(c.get_label()) for c in curves(fig.axes[0])]  # and the ceiling
        assert len(legend.legend_handles) == len(legend.get_texts()) == 7
        assert (legend._loc, legend._outside_loc, legend.get_texts()[0].get_fontsize()) == (8, "lower", 8)
    finally:
        plt.close(fig)


def test_one_files_busy_key_names_a_series_busy_at_every_point_by_its_legend_label() -> None:
    """One file: the key names the series as its curve's label does (path @ GPU), not by path and file."""
    busy = curve({1: 1000, 4: 5000, 16: 3000, 64: 4800}, busy=(1, 4, 16, 64))
    fig = figure(picked(run(busy)))
    try:
        assert fig.legends[0].get_texts()[-1].get_text() == wrapped(
            f"{BUSY}: every point of torch/pinned/copy @ NVIDIA H100, so the peak, saturation and cliff marks rest on them")
    finally:
        plt.close(fig)


# figure(): several files


def test_several_files_key_paths_by_colour_files_by_style_then_cliffs_and_the_busy_key(two_files: Figure) -> None:
    """Paths, then files named by what differs, then each cliff by path and file, then the busy key naming path (file)."""
    busy = (f"{BUSY} (left out of peak, saturation and cliff, except in host/numpy/copy (after), where every point was busy and the marks"
            " rest on them)")  # fmt: skip
    assert [h.get_label() for h in handles(two_files)] == [
        "torch/pageable/copy · host-to-host", "host/numpy/copy · host-to-host", "before", f"after: GLIBC_TUNABLES={TUNABLES}",
        "torch/pageable/copy (before) · ▼ cliff: −40% at batch 16", "torch/pageable/copy (after) · ▼ cliff: −60% at batch 20",
        "host/numpy/copy (after) · ▼ cliff: −40% at batch 20", busy]  # fmt: skip
    assert texts(two_files) == [wrapped(h.get_label()) for h in handles(two_files)]
    assert [(h.get_color(), h.get_linestyle(), h.get_marker()) for h in handles(two_files)[:7]] == [
        ("C0", "-", "None"), ("C1", "-", "None"), ("black", "-", "."), ("black", "--", "x"),
        ("C0", "-", "v"), ("C0", "--", "v"), ("C1", "--", "v")]  # fmt: skip
    assert two_files.legends[0]._ncols == 3


def test_several_files_label_curves_by_file_and_style_each_file(two_files: Figure) -> None:
    """Each curve's label ends with its file; one path keeps its colour across files, a file its line style and marker."""
    drawn = curves(two_files.axes[0])
    assert [line.get_label() for line in drawn] == [
        "torch/pageable/copy @ AMD EPYC · host-to-host (before) · ▼ cliff: −40% at batch 16",
        "host/numpy/copy @ AMD EPYC · host-to-host (before)",
        "torch/pageable/copy @ AMD EPYC · host-to-host (after) · ▼ cliff: −60% at batch 20",
        "host/numpy/copy @ AMD EPYC · host-to-host (after) · ▼ cliff: −40% at batch 20"]  # fmt: skip
    assert [(line.get_color(), line.get_linestyle(), line.get_marker()) for line in drawn] == [
        ("C0", "-", "."), ("C1", "-", "."), ("C0", "--", "x"), ("C1", "--", "x")]  # fmt: skip
    assert [xy(line) for line in lines(two_files.axes[0], "_busy")] == [([64], [1200]), ([1, 4, 20, 64], [1000, 5000, 3000, 4000])]


def test_a_cliff_whose_tick_gave_way_is_noted_below_its_triangle_and_a_second_one_lower(two_files: Figure) -> None:
    """Cliffs at 16 and 20: 16 keeps its tick, 20 is noted at each of its two triangles, 16 points below it: on a log axis
    2,000 and 3,000 MB/s lie far enough apart that neither note needs to go lower."""
    rate = two_files.axes[0]
    assert tick_texts(rate) == ["1", "4", "16", "", "64"]
    assert notes(rate) == [("batch 20", (20.0, 2000.0), (0.0, -16.0), "C0"), ("batch 20", (20.0, 3000.0), (0.0, -16.0), "C1")]
    assert {(t.anncoords, t.get_horizontalalignment(), t.get_fontsize()) for t in rate.texts} == {("offset points", "center", 7)}


def test_a_log_scale_asked_for_is_drawn_and_said_and_a_given_title_is_kept(two_files: Figure) -> None:
    """--y-scale log: a log MB/s axis that says so; the title as given; height 5.6 + 0.25 for five series and devices."""
    rate = two_files.axes[0]
    assert rate.get_yscale() == "log" and rate.get_ylabel() == "median MB/s (10^6 B/s), log scale"
    assert rate.get_ylim()[0] > 0
    assert two_files.get_suptitle() == "mine"
    assert one_line(rate.get_title()) == f"{WHAT}{CLIFF_WHAT}, hollow: busy machine"
    assert [float(v) for v in two_files.get_size_inches()] == [13.0, 5.85]


# figure(): sizes on the x axis


def test_series_of_several_item_shapes_are_placed_by_bytes_with_power_of_two_size_ticks(by_bytes: Figure) -> None:
    """x is bytes per call, ticked at each power of two across the sizes; the time panel stays."""
    rate = by_bytes.axes[0]
    assert rate.get_xlabel() == "bytes per call" and len(by_bytes.axes) == 2
    assert [float(x) for x in rate.get_xticks()] == [2.0**e for e in range(17, 25)]
    assert tick_texts(rate) == ["128 KiB", "256 KiB", "512 KiB", "1 MiB", "2 MiB", "4 MiB", "8 MiB", "16 MiB"]
    assert xy(curves(rate)[1])[0] == [2**20, 4 * 2**20, 16 * 2**20]


def test_on_a_bytes_axis_every_cliff_is_noted_by_its_size_and_stacked_where_they_meet(by_bytes: Figure) -> None:
    """Each cliff is named by its size in the legend and at its triangle; two at 16 MiB, 2,000 and 2,500 MB/s on a linear
    axis, the second moved down past the first."""
    assert [line.get_label().split(" · ▼ ")[1] for line in curves(by_bytes.axes[0])[:3]] == [
        "cliff: −40% at 3 MiB", "cliff: −60% at 16 MiB", "cliff: −50% at 16 MiB"]  # fmt: skip
    assert notes(by_bytes.axes[0]) == [("3 MiB", (3.0 * 2**20, 3000.0), (0.0, -16.0), "C0"),
                                       ("16 MiB", (16.0 * 2**20, 2000.0), (0.0, -16.0), "C1"),
                                       ("16 MiB", (16.0 * 2**20, 2500.0), (0.0, -36.0), "C2")]  # fmt: skip


# figure(): a panel per framework


def test_past_six_series_each_framework_gets_a_panel_three_to_a_row_the_rest_hidden(panels: Figure) -> None:
    """Four frameworks: two rows of three, the last two slots hidden; no time panel; height by rows and series."""
    assert len(panels.axes) == 6
    assert [axes.get_visible() for axes in panels.axes] == [True, True, True, True, False, False]
    assert [axes.get_title() for axes in panels.axes[:4]] == ["torch", "cuda", "tf", "jax"]
    assert {axes.title.get_fontsize() for axes in panels.axes[:4]} == {9}
    assert [float(v) for v in panels.get_size_inches()] == [13.0, 9.2]
    assert all(axes.get_xlabel() == "batch size (images)" for axes in panels.axes[:4])


def test_panels_share_both_axes_keep_their_tick_labels_and_label_mbps_once_a_row(panels: Figure) -> None:
    """Shared x and y; every visible panel shows its tick labels; the first of each row says MB/s."""
    first = panels.axes[0]
    shared_x, shared_y = first.get_shared_x_axes(), first.get_shared_y_axes()
    assert all(shared_x.joined(first, other) and shared_y.joined(first, other) for other in panels.axes[1:])
    assert [axes.xaxis.get_tick_params()["labelbottom"] for axes in panels.axes[:4]] == [True] * 4
    assert [axes.get_ylabel() for axes in panels.axes[:4]] == ["median MB/s (10^6 B/s)", "", "", "median MB/s (10^6 B/s)"]
    assert [[float(y) for y in xy(line)[1]] for line in lines(first)[:1]] == [[1000, 5000, 3000]]
    assert [len(lines(axes, CEILING)) for axes in panels.axes[:4]] == [1, 1, 1, 1]


def test_panels_put_each_series_in_its_frameworks_panel(panels: Figure) -> None:
    """torch's two GPUs in the first panel, cuda's in the second, tf's in the third, jax in the fourth."""
    assert [[line.get_label() for line in curves(axes) if line.get_label() != CEILING] for axes in panels.axes[:4]] == [
        ["torch/pinned/copy @ NVIDIA H100 [cuda:0] · ▼ cliff: −40% at batch 16", "torch/pinned/copy @ NVIDIA H100 [cuda:1]"],
        ["cuda/raw_pinned/copy @ NVIDIA H100 [cuda:0]", "cuda/raw_pinned/copy @ NVIDIA H100 [cuda:1]"],
        ["tf/eager/copy @ NVIDIA H100 [cuda:0]", "tf/eager/copy @ NVIDIA H100 [cuda:1]"],
        ["jax/device_put/copy @ NVIDIA H100 [cuda:0]"]]  # fmt: skip


def test_panels_legend_lists_series_in_panel_order_then_the_ceiling_once(panels: Figure) -> None:
    """One entry a series, by panel, no cliff entries of their own (the label says it), the shared ceiling once."""
    assert [h.get_label() for h in handles(panels)] == [
        "torch/pinned/copy @ NVIDIA H100 [cuda:0] · ▼ cliff: −40% at batch 16", "torch/pinned/copy @ NVIDIA H100 [cuda:1]",
        "cuda/raw_pinned/copy @ NVIDIA H100 [cuda:0]", "cuda/raw_pinned/copy @ NVIDIA H100 [cuda:1]",
        "tf/eager/copy @ NVIDIA H100 [cuda:0]", "tf/eager/copy @ NVIDIA H100 [cuda:1]", "jax/device_put/copy @ NVIDIA H100 [cuda:0]",
        CEILING]  # fmt: skip


def test_panels_figure_title_says_what_the_marks_are_once(panels: Figure) -> None:
    """The panel titles name frameworks, so the figure's title carries the marks' key and says a panel per framework."""
    devices = "host-to-device: NVIDIA H100 (cuda:0), NVIDIA H100 (cuda:1)"
    assert panels.get_suptitle() == f"{devices}\n{WHAT}{CLIFF_WHAT}, a panel per framework"


def test_seven_series_of_one_framework_are_one_panel_of_their_own() -> None:
    """Past six series of torch alone: one panel titled torch, no time panel, 1.5 + 3.6 + 0.25 per three series high."""
    modes = ("pageable", "pinned", "pinned_into", "pin_per_call", "tensor", "loader", "loader_workers")
    series = [curve({1: 1000 + i, 4: 2000 + i}, mode=mode) for i, mode in enumerate(modes)]
    for each in series:
        each.link = link(4, 16)  # NVML's samples: Gen4 x16 while data moved, Gen5 x16 the system's maximum
    fig = figure(picked(run(*series)))
    try:
        assert len(fig.axes) == 1 and fig.axes[0].get_title() == "torch" and fig.axes[0].get_ylabel() == "median MB/s (10^6 B/s)"
        assert [float(v) for v in fig.get_size_inches()] == [13.0, 5.6]
        loaded = "PCIe Gen4 x16 theoretical (31.5 GB/s, under load); NVML also reads system maximum Gen5 x16"
        assert [h.get_label() for h in handles(fig)] == [f"torch/{mode}/copy @ NVIDIA H100" for mode in modes] + [loaded]
    finally:
        plt.close(fig)


def test_a_short_legend_takes_three_columns_and_a_cpu_copy_alone_is_titled_no_gpu() -> None:
    """Two CPU copies: entries of 45 characters leave room for four columns, and three they get; no ceiling, no mark named."""
    fig = figure(picked(run(host({1: 1000, 4: 2000}), host({1: 1500, 4: 2500}, "torch", "pageable"))))
    try:
        assert texts(fig) == ["host/numpy/copy @ AMD EPYC · host-to-host", "torch/pageable/copy @ AMD EPYC · host-to-host"]
        assert fig.legends[0]._ncols == 3
        assert fig.get_suptitle() == "host-to-host on the CPU (no GPU): AMD EPYC" and fig.axes[0].get_title() == WHAT
        assert len(fig.axes[0].get_lines()) == 4  # a curve and a ring each
    finally:
        plt.close(fig)


# figure(): Apple's unified memory


def test_an_apple_gpus_ceiling_is_its_chips_published_bandwidth_and_a_pin_or_unknown_chip_draws_none(macs: Figure) -> None:
    """By the chip macOS named, else the CPU's name; none for a host-to-host pin or a chip Apple gave no figure for."""
    theory = "(Apple's published bandwidth, theoretical)"
    expected = [(f"Apple M2 Max unified memory: 400 GB/s {theory}", 400_000.0),
                (f"Apple M2 Pro unified memory: 200 GB/s {theory}", 200_000.0)]
    drawn = [line for line in macs.axes[0].get_lines() if "unified memory" in line.get_label()]
    assert [(line.get_label(), xy(line)[1][0]) for line in drawn] == expected
    assert [h.get_label() for h in handles(macs)][-2:] == [label for label, _ in expected]
    assert macs.get_suptitle() == "host-to-device: Apple GPU (mps, unified memory); host-to-host: Apple GPU"
    assert macs.axes[0].get_title() == WHAT  # no cliff, no busy point: no mark of theirs named
