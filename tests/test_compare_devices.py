"""Two runs on unlike devices: an Apple M1's copy within unified memory set beside an RTX card's copy over
PCIe. Like devices pair first, and a pair of unlike copies is said to be one before any count of slower or
faster points, which cover the like pairs only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from xferbench.cli import app
from xferbench.core.results import Point, Result, Series
from xferbench.core.spec import HOST_TO_DEVICE, SeriesKey
from xferbench.core.timing import Samples
from xferbench.reading import compare as comparing
from xferbench.reading.pairs import pair

SHAPE = (256, 256, 3)
BATCHES = (1, 4, 16, 64, 256, 512)
M1 = "Apple M1 (8-core GPU)"
RTX = "NVIDIA GeForce RTX 2080 Ti"
MPS_NOTE = "on MPS .to('mps') wraps the NumPy pages and blits them within unified memory"
M1_ENV: dict[str, Any] = {
    "host": "m1-air", "os": "macOS-14.5-arm64-arm-64bit", "machine": "arm64", "cpu": "Apple M1", "cpu_count": 8,
    "memory_bytes": 16 * 2**30, "python": "3.12.4", "python_implementation": "CPython", "macos": "14.5", "cpu_features": None,
    "transparent_hugepages": None, "load_average": [1.9, 1.7, 1.6], "process_cpus": None,
    "unavailable_checks": ["busy-machine detection (no /proc)"], "versions": {"numpy": "2.1.0", "torch": "2.5.1"}, "settings": {},
    "frameworks": {"torch": {"version": "2.5.1", "python": "3.12.4", "executable": "/Users/me/xferbench/.venv/bin/python",
                             "pid": 4242, "threads": 4}},
    "devices": [{"id": "cpu", "kind": "cpu", "name": "Apple M1"},
                {"id": "mps", "kind": "mps", "name": M1, "chip": "Apple M1", "gpu_cores": 8, "gpu_cores_source": "ioreg",
                 "memory_bytes": 16 * 2**30, "unified_memory": True}],
    "nvml": {"available": False, "reason": "nvidia-ml-py is not installed"},
}  # fmt: skip
RTX_GPU = {"index": 0, "name": RTX, "uuid": "GPU-5f1c0c1e-8d1b-4b7e-9a53-3c2f5d0b7a11", "pci_bus_id": "00000000:01:00.0",
           "memory_bytes": 11 * 2**30, "pcie_gen_current": 3, "pcie_width_current": 16, "pcie_gen_max": 3, "pcie_width_max": 16,
           "pcie_gen_gpu_max": 3, "numa_node": 0, "cpu_affinity": [0, 1, 2, 3, 4, 5, 6, 7], "numa_cpus": [0, 1, 2, 3, 4, 5, 6, 7],
           "pcie_replay_counter": 0, "clocks_mhz": {"sm": 1350, "memory": 7000}, "pstate": "P2"}  # fmt: skip
RTX_ENV: dict[str, Any] = {
    "host": "rtx-box", "os": "Linux-6.8.0-45-generic-x86_64-with-glibc2.39", "machine": "x86_64", "cpu": "AMD Ryzen 7 3700X",
    "cpu_count": 8, "memory_bytes": 32 * 2**30, "python": "3.12.4", "python_implementation": "CPython", "macos": None,
    "load_average": [0.4, 0.3, 0.2], "process_cpus": [0, 1, 2, 3, 4, 5, 6, 7], "versions": {"numpy": "2.1.0", "torch": "2.5.1"},
    "settings": {}, "frameworks": {"torch": {"version": "2.5.1", "python": "3.12.4", "executable": "/home/me/xferbench/.venv/bin/python",
                                             "pid": 5151, "cuda": "12.4", "threads": 8}},
    "devices": [{"id": "cpu", "kind": "cpu", "name": "AMD Ryzen 7 3700X"},
                {"id": "cuda:0", "kind": "cuda", "name": RTX, "memory_bytes": 11 * 2**30, "capability": "7.5",
                 "uuid": RTX_GPU["uuid"], "pci_bus_id": "00000000:01:00.0", "driver": "550.107.02", "cuda_driver": "12.4",
                 "nvml": RTX_GPU}],
    "nvml": {"available": True, "driver": "550.107.02", "cuda_driver": "12.4", "gpus": [RTX_GPU]},
}  # fmt: skip


def torch_series(device: str, peak_mbps: float, fixed_s: float, seed: int) -> Series:
    """torch/pageable/copy on `device` as its sweep records it: 20 samples a point, 1% apart, of a fixed cost
    per copy plus the bytes at the peak rate."""
    key = SeriesKey("torch", "pageable", "copy", device, SHAPE)
    series = Series.of(key)
    series.transfer, series.clock = HOST_TO_DEVICE, "time.perf_counter"
    if device == "mps":
        series.device_name, series.sync, series.note = M1, "torch.mps.synchronize", MPS_NOTE
        series.params = {"device_clock": "none: torch.mps events time the CPU side", "unified_memory": True}
    else:
        series.device_name, series.sync, series.device_clock = RTX, "torch.cuda.synchronize", "torch.cuda.Event"
    rng = np.random.default_rng(seed)
    for batch in BATCHES:
        spec = key.at(batch)
        times = [(fixed_s + spec.nbytes / (peak_mbps * 1e6)) * (1 + 0.01 * e) for e in rng.standard_normal(20)]
        device_times = [t * 0.97 for t in times] if device.startswith("cuda") else []
        series.points.append(Point.measured(spec, Samples(times, device_times), warmup_calls=5))
    series.refresh_summary()
    return series


def save(path: Path, environment: dict[str, Any], series: list[Series]) -> Path:
    config = {"argv": ["xferbench", "sweep", "-f", "torch", "-m", "pageable"], "batch_sizes": list(BATCHES), "shape": list(SHAPE)}
    Result(environment, config, "2026-11-28T09:00:00+00:00", series, "complete", xferbench_version="0.1.0").save(path)
    return path


@pytest.fixture()
def m1_and_rtx(tmp_path: Path) -> tuple[Path, Path]:
    """An M1's torch copy, faster at every batch (one memory: no link to cross), and an RTX 2080 Ti's over PCIe Gen3."""
    m1 = save(tmp_path / "m1.json", M1_ENV, [torch_series("mps", 30_000.0, 100e-6, seed=1)])
    rtx = save(tmp_path / "rtx.json", RTX_ENV, [torch_series("cuda:0", 9_350.0, 120e-6, seed=2)])
    return m1, rtx


def test_compare_says_unlike_copies_before_any_count_and_counts_like_pairs_only(m1_and_rtx) -> None:
    m1, rtx = m1_and_rtx
    shown = CliRunner().invoke(app, ["compare", str(rtx), str(m1)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0] == f"rtx-box ({rtx}) → m1-air ({m1}): median MB/s"
    assert lines[1].startswith("unlike copies: torch/pageable/copy@cuda:0→mps: BASE makes a host-to-device transfer over PCIe,"
                               " NEW a copy within unified memory (Apple GPU, MPS); its 6 points compare the time")  # fmt: skip
    said = shown.stdout
    assert said.index("unlike copies") < min(said.index(word) for word in ("faster", "slower") if word in said)
    assert lines[-1] == "6 points between unlike copies (reported, not counted as slower or faster); no like pair compared (alpha 0.01)"
    data = json.loads(CliRunner().invoke(app, ["compare", str(rtx), str(m1), "--json"]).stdout)
    assert data["counts"] == {"slower": 0, "faster": 0, "no change": 0, "inconclusive": 0}
    assert data["unlike_copies"] == {"points": 6, "paths": ["torch/pageable/copy@cuda:0→mps"]}
    assert data["summary"].startswith("6 points between unlike copies") and all(r["unlike"] for r in data["rows"])


def test_report_says_what_each_file_copies_before_any_verdict(m1_and_rtx) -> None:
    m1, rtx = m1_and_rtx
    shown = CliRunner().invoke(app, ["report", str(rtx), str(m1)])
    assert shown.exit_code == 0, shown.output
    text = shown.stdout
    first_verdict = min(text.index(word) for word in (" faster", " slower") if word in text)
    assert text.index("| what is copied | a host-to-device transfer over PCIe | a copy within unified memory") < first_verdict
    assert text.index("unlike copies") < first_verdict


def test_a_file_with_an_mps_and_a_cuda_series_pairs_its_cuda_one_with_the_other_files_cuda_one(tmp_path: Path) -> None:
    both = save(tmp_path / "both.json", {**RTX_ENV, "devices": RTX_ENV["devices"] + M1_ENV["devices"][1:]},
                [torch_series("mps", 30_000.0, 100e-6, seed=1), torch_series("cuda:0", 9_350.0, 120e-6, seed=2)])  # fmt: skip
    gpu = save(tmp_path / "gpu.json", RTX_ENV, [torch_series("cuda:0", 9_350.0, 120e-6, seed=3)])
    for base, new, side in ((both, gpu, "base"), (gpu, both, "new")):
        comparison = comparing.compare_files(base, new)
        assert {r.series for r in comparison.rows} == {"torch/pageable/copy@cuda:0"} and not comparison.unlike
        assert [(u.series, u.batch_size, u.only_in) for u in comparison.unmatched] == [
            ("torch/pageable/copy@mps (256x256x3)", None, side)]  # fmt: skip
        assert comparison.counts()["no change"] == len(BATCHES)
    report = CliRunner().invoke(app, ["report", str(both), str(gpu)]).stdout
    assert "(unlike copies)" not in report


def test_like_devices_pair_first_by_id_then_by_kind_and_only_then_across_kinds() -> None:
    def devices(files: list[list[Series]]) -> list[list[str | None]]:
        return [[m.device if m else None for m in found.members] for found in pair(files)]

    mps, cuda0, cuda1 = (torch_series(d, 9_000.0, 100e-6, seed=1) for d in ("mps", "cuda:0", "cuda:1"))
    other0, other3 = torch_series("cuda:0", 9_000.0, 100e-6, seed=2), torch_series("cuda:3", 9_000.0, 100e-6, seed=3)
    assert devices([[mps, cuda0], [other0]]) == [["mps", None], ["cuda:0", "cuda:0"]]
    assert devices([[mps, cuda1], [other3]]) == [["mps", None], ["cuda:1", "cuda:3"]]  # one GPU with another
    assert devices([[mps], [other3]]) == [["mps", "cuda:3"]]  # nothing like it left: across kinds, as before
    assert devices([[other0], [mps, cuda0]]) == [["cuda:0", "cuda:0"], [None, "mps"]]
    mac = torch_series("mps", 9_000.0, 100e-6, seed=4)
    assert devices([[mps, cuda0], [other0], [mac, other3]]) == [["mps", None, "mps"], ["cuda:0", "cuda:0", "cuda:3"]]
