"""Terminal output fits the terminal: columns dropped in a stated order, never a number cut."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from rich.console import Console

from xferbench.reading import display
from xferbench.core.results import Point, Series


def wide_series() -> Series:
    """Every optional column at once, with numbers as wide as a GPU run gives."""
    series = Series("cuda", "raw_pinned", "copy", "cuda:0", [256, 256, 3], method="streamed", device_name="NVIDIA H100 80GB HBM3",
                    transfer="host-to-device")  # fmt: skip
    for batch in (1, 64, 512):
        nbytes = batch * 196608
        median = nbytes / 55_123e6
        series.points.append(Point(batch, nbytes, n=1000, median_s=median, p10_s=median * 0.99, p90_s=median * 1.01,
                                   mbps=55_123.4, mbps_p10=54_321.0, mbps_p90=55_987.0, batches_per_s=1 / median,
                                   images_per_s=batch / median, copies=512, device_median_s=median, device_mbps=55_234.0,
                                   page_faults_per_call=12_289.0))  # fmt: skip
    series.points.append(Point(1024, 1024 * 196608, status="error", error="out of memory: CUDA error: out of memory"))
    series.refresh_summary()
    return series


def render(width: int) -> str:
    console = Console(width=width, record=True, file=open(os.devnull, "w"))
    display.print_series(console, wide_series())
    return console.export_text()


def header_cells(text: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith("┃"))
    return [cell.strip() for cell in line.strip("┃").split("┃")]


def test_at_80_columns_columns_are_dropped_in_order_and_no_number_is_cut() -> None:
    text = render(80)
    assert max(len(line) for line in text.splitlines()) <= 80
    shown, present = header_cells(text), header_cells(render(200))
    order = [name for name in display.DROP_ORDER if name in present]  # the columns this series has, in the stated order
    dropped = [name for name in order if name not in shown]
    assert dropped and dropped == order[: len(dropped)]  # the stated order, from its start
    assert {"batch", "MB/s", "p10–p90"} <= set(shown)  # never dropped
    assert f"not shown for width: {', '.join(dropped)}" in " ".join(text.split())
    for number in ("55,123", "54,321–55,987"):  # whole, never "55,1…"
        assert number in text
    assert "…" not in text


def test_a_wide_terminal_keeps_every_column() -> None:
    text = render(200)
    assert header_cells(text) == ["batch", "batch time", "batches/s", "images/s", "MB/s", "p10–p90", "n", "copies",
                                  "device MB/s", "faults/call"]  # fmt: skip
    assert "not shown for width" not in text


def test_piped_sweep_fits_columns(tmp_path) -> None:
    for width in (80, 120):
        r = subprocess.run([sys.executable, "-m", "xferbench", "sweep", "-f", "sim", "--batch-sizes", "1,64,512", "--min-time", "0",
                            "--min-samples", "3", "--warmup-time", "0", "-o", f"{tmp_path}/{width}/"],
                           capture_output=True, text=True, env={**os.environ, "COLUMNS": str(width)})  # fmt: skip
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert max(len(line) for line in lines) <= width
        assert any(re.search(r"\d,\d{3}", line) for line in lines)  # the numbers are there, whole


def test_what_pinning_in_place_took_is_a_column() -> None:
    series = wide_series()
    for point in series.points[:3]:
        point.pin_s = 0.0123
    console = Console(width=200, record=True, file=open(os.devnull, "w"))
    display.print_series(console, series)
    text = console.export_text()
    assert "pin time" in header_cells(text) and "12.3 ms" in text


def test_a_raw_ceiling_on_cuda_is_placed_among_the_published_figures_for_its_model() -> None:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from nodes import node

    from xferbench.reading.display import published_note

    raw, torch = node("a", raw_gbps=55).series
    said = published_note(raw)
    assert said is not None and said.endswith("published for H100: 56.68–57.07 GB/s host to device, 1 source"
                                              " (https://github.com/NVIDIA/nvbandwidth/issues/6)")  # fmt: skip
    assert "below every published figure" in said  # a simulated 55 GB/s: under what H100 owners published
    assert published_note(torch) is None  # a framework path is read against the raw ceiling, not the published figures
    unknown, _ = node("b", name="NVIDIA L4").series
    assert "no published host-to-device figure for this model (NVIDIA L4)" in (published_note(unknown) or "")
