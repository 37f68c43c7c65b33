"""More rules of the Markdown report: notes, per-batch columns, device rows, saving, at-once totals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from xferbench.core.errors import XferbenchError
from xferbench.core.results import DAMAGED, Point, Result, Selected, Series
from xferbench.reading import report

from test_report_rules import GPU, SHAPE, curve, env

MAC = {"host": "m", "os": "macOS-14.4", "cpu": "Apple M2", "devices": [{"id": "mps", "kind": "mps", "name": "Apple M2"}]}


def noted(damaged: int) -> list[str]:
    """One file on macOS: a noisy path, `damaged` damaged points of another, a failed path with a busy point."""
    result = Result(env("a", os="macOS-14.4"), {}, "2026-01-01T00:00:00+00:00", [
        curve("torch", "pinned", {1: 6000.0, 4: 24000.0}, spread=0.2),
        curve("torch", "pageable", {2**i: 3000.0 for i in range(damaged)}),
        curve("jax", "device_put", {1: 5000.0, 4: 9000.0}, busy=(4,), status="failed"),
    ], "complete")  # fmt: skip
    for point in result.series[1].points:
        point.status, point.error = DAMAGED, "damaged in the file: times differ"
    result.series[1].points[0].error = None
    picks = [Selected(Path("a.json"), result, result.series[0]), Selected(Path("a.json"), result, result.series[2])]
    return report._notes(picks, ["p", "j"], [(Path("a.json"), result)], [])


NUMA = ("- **warning** the process may run on CPUs 4-7, outside the GPU's NUMA node 1 (CPUs 0-3); a remote node can cut"
        " host-to-device throughput several-fold. Pin it: numactl --cpunodebind=1 --membind=1 xferbench sweep ... (affects p, j)")
BUSY = ("- **warning** the machine was busy at 1 of 4 points: jax/device_put/copy@cuda:0 batch 4. Other processes used a"
        " quarter of the CPUs or more (at worst 3.00 of its 8, at jax/device_put/copy@cuda:0 batch 4); a busy machine moves"
        " figures either way, by up to several times. Those points are marked (busy), left out of peak, saturation, cliff"
        " and fit; measure again on a quiet machine.")
NOISY = ("- p: the median is uncertain at batch 1 (±70%, n=8), 4 (±70%, n=8): no reading of other processes' CPU use was"
         " recorded there (macOS has no /proc to read it from), so another process may cause it as well as the path itself"
         " (see p10–p90; every sample is in the file); the peak and the saturation batch rest on batch 4")
DAMAGED_FIVE = ("torch/pageable/copy@cuda:0 batch 1 (damaged); torch/pageable/copy@cuda:0 batch 2 (times differ);"
                " torch/pageable/copy@cuda:0 batch 4 (times differ); torch/pageable/copy@cuda:0 batch 8 (times differ);"
                " torch/pageable/copy@cuda:0 batch 16 (times differ)")


def test_notes_name_a_failure_the_busy_machine_a_noisy_median_and_damaged_points() -> None:
    """A failure without a reason points at the detail; one busy warning for one file; the OS explains a
    missing reading; damaged points are counted and the first five named, "…" past five."""
    head = ["- **FAILED** j: see the per-batch detail", NUMA, BUSY, NOISY]
    said = "left out, their samples cannot be what a run wrote: "
    assert noted(6) == [*head, f"- **damaged** a.json: 6 point(s) {said}{DAMAGED_FIVE}; …"]
    assert noted(5) == [*head, f"- **damaged** a.json: 5 point(s) {said}{DAMAGED_FIVE}"]


def test_the_link_under_load_says_when_no_sample_was_under_load() -> None:
    """No generation or width under load is said so; an RX peak of 0 is still a reading; bytes in GB."""
    def link(**summary: Any) -> str | None:
        return report.link_under_load(Series("torch", "pinned", "copy", "cuda:0", list(SHAPE), link={"summary": summary}))

    assert link(samples=0) is None
    assert link(samples=7) == "PCIe link: no sample under load in 7 NVML samples"
    assert link(samples=7, gen_under_load=[4, 4], width_under_load=None, rx_mbps_peak=0.0, rx_bytes=0) == (
        "PCIe link: no sample under load in 7 NVML samples; RX peak ≈ 0 MB/s (NVML, approximate: 20 ms windows)")
    assert link(samples=7, gen_under_load=[4, 5], width_under_load=[16, 8], rx_mbps_peak=1234.0, rx_bytes=1_005_000_001,
                rx_bytes_from="NVML counters") == (
        "PCIe link: Gen5 x8 under load in 7 NVML samples; RX peak ≈ 1,234 MB/s (NVML, approximate: 20 ms windows);"
        " 1.01 GB received (NVML counters)")  # fmt: skip


def test_detail_shows_device_clock_directions_and_page_faults_where_recorded() -> None:
    """Columns for each direction, the device clock and faults from FAULTY per call; "-" where a point lacks one;
    a failed point without a message; a simulated link never shows faults."""
    s = curve("torch", "pinned", {1: 6000.0, 4: 24000.0}, device_clock="cuda events")
    s.points[0].device_mbps, s.points[0].page_faults_per_call = 7000.0, 1000.0
    s.points[0].direction_mbps = {"h2d": 5000.0, "d2h": 4000.0}
    s.points[1].median_s = None
    s.points.append(Point(batch_size=16, bytes=16 * 10**6, status="error"))
    assert report.detail(s, "x") == [
        "<details>", "<summary>x: peak 24,000 MB/s @ batch 4</summary>", "",
        "NVIDIA RTX 4090; host-to-device; 1000x1000 uint8 per item from pinned; timed per-call; clock —; sync —;"
        " device clock cuda events", "",
        "| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n | h2d MB/s | d2h MB/s | device MB/s | faults/call |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        "| 1 | 0.0001667 | 6,000 | 6,000 | 6,000 | 5,983–6,017 | 8 | 5,000 | 4,000 | 7,000 | 1,000 |",
        "| 4 | - | 6,000 | 24,000 | 24,000 | 23,933–24,067 | 8 | - | - | - | - |",
        "| 16 | error: | — | — | — | — | — | — | — | — | — |",
        "", "</details>", ""]  # fmt: skip
    s.points[0].page_faults_per_call = 15.9
    assert report.detail(s, "x")[5].endswith("| device MB/s |")
    s.points[0].page_faults_per_call = 16.0
    assert report.detail(s, "x")[5].endswith("| device MB/s | faults/call |")
    sim = curve("sim", "link", {1: 6000.0}, device="sim:0", transfer="simulated")
    sim.points[0].page_faults_per_call = 5000.0
    assert report.detail(sim, "s")[5] == "| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |"


def test_device_rows_of_a_non_cuda_device_and_of_missing_nvml_fields() -> None:
    """MPS has no driver or link; the environment's name wins; a half-read link is "?"; NUMA CPUs stand in for affinity."""
    assert report._device_fields(MAC, "mps", "other") == {
        "device": "Apple M2", "vendor": "Apple", "runtime": "Metal", "host link": "unknown", "driver": "n/a", "CUDA (driver)": "n/a", "PCIe link": "n/a", "NUMA node": "n/a", "CPU affinity": "n/a"}
    nvml = {"pcie_gen_current": 4, "pcie_gen_max": 5, "pcie_width_max": 16, "numa_cpus": [0, 1]}
    assert report._device_fields({"devices": [{"id": "cuda:1", "nvml": nvml}]}, "cuda:1", "GPU B") == {
        "device": "GPU B", "vendor": "NVIDIA", "runtime": "unknown", "host link": "unknown", "driver": "—", "CUDA (driver)": "—", "PCIe link": "current ? / max Gen5 x16", "NUMA node": "—",
        "CPU affinity": "process ?; GPU's ideal CPUs 0-1"}  # fmt: skip
    assert report._device_fields({"devices": [{"id": "cuda:1", "nvml": {}}]}, "cuda:1", None) == {
        "device": "cuda:1", "vendor": "unknown", "runtime": "unknown", "host link": "unknown", "driver": "—", "CUDA (driver)": "—", "PCIe link": "—", "NUMA node": "—", "CPU affinity": "—"}


def test_the_environment_table_names_each_gpu_of_a_file_and_leaves_the_cpu_out() -> None:
    """Two GPUs: every device row is "id: value" per GPU, the CPU series adds none; unrecorded facts read "—"."""
    e = env("a", devices=[{"id": "cpu", "kind": "cpu", "name": "Intel Xeon"}, GPU, {"id": "cuda:1", "kind": "cuda"}],
            settings={"OMP_NUM_THREADS": "4", "GLIBC_TUNABLES": "x=1", "HOME": "/h"}, memory_bytes=None)
    del e["cpu_count"]
    series = [curve("torch", "pinned", {1: 6000.0}), curve("torch", "pinned", {1: 6000.0}, device="cuda:1", device_name="GPU B"),
              curve("numpy", "copy", {1: 6000.0}, device="cpu", device_name="Intel Xeon", transfer="host-to-host")]
    result = Result(e, {}, "2026-01-01T00:00:00+00:00", series, "complete")
    lines = report.environment_table([Selected(Path("a.json"), result, s) for s in series], [(Path("a.json"), result)], ["a"])
    assert lines[4:14] == [
        "| device | cuda:0: NVIDIA RTX 4090; cuda:1: GPU B |", "| vendor | cuda:0: NVIDIA; cuda:1: unknown |",
        "| runtime | cuda:0: CUDA 12.4; cuda:1: unknown |", "| host link | cuda:0: unknown; cuda:1: unknown |",
        "| driver | cuda:0: 550.54; cuda:1: — |",
        "| CUDA (driver) | cuda:0: 12.4; cuda:1: — |", "| PCIe link | cuda:0: current Gen4 x16 / max Gen4 x16; cuda:1: — |",
        "| NUMA node | cuda:0: 1; cuda:1: — |",
        "| CPU affinity | cuda:0: process 0-7; GPU's ideal CPUs 0-3; cuda:1: process 0-7; GPU's ideal CPUs ? |",
        "| CPU | Intel Xeon |"]  # fmt: skip
    assert lines[14] == "| memory | — |" and lines[19] == "| settings | OMP_NUM_THREADS=4; GLIBC_TUNABLES=x=1 |"
    alone = Result(env("c"), {}, "2026-01-01T00:00:00+00:00", series[1:], "complete")
    lines = report.environment_table([Selected(Path("c.json"), alone, series[1])], [(Path("c.json"), alone)], ["c"])
    assert lines[4:6] == ["| device | GPU B |", "| vendor | unknown |"]


def test_an_mps_summary_reads_against_unified_memory_and_locates_cliffs_by_bytes() -> None:
    """MPS: the column covers memory, each ceiling says unified memory; items of two shapes place every figure,
    the cliff included, by bytes per call."""
    shapes = [curve("torch", mode, {1: 6000.0, 4: 24000.0, 16: 25000.0, 64: 5000.0}, device="mps", device_name="Apple M2",
                    shape=shape) for mode, shape in (("pinned", SHAPE), ("pageable", (500, 1000)))]  # fmt: skip
    result = Result(MAC, {}, "2026-01-01T00:00:00+00:00", shapes, "complete")
    lines, _, raw = report.summary_table([Selected(Path("m.json"), result, s) for s in shapes], ["a", "b"], ["", ""])
    assert raw == {}
    assert lines == [
        "| series | peak MB/s @ bytes per call | vs best of its device | saturates at bytes per call | latency (µs) |"
        " asymptotic MB/s | % of link or memory (theoretical) | cliff |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        "| a | 25,000 @ 16 MB | 1.00× | 4 MB | 88.4 | 31,080 (poor fit) | 50% of 100.0 GB/s unified memory |"
        " **yes**: <80% of peak from 64 MB (worst −80%) |",
        "| b | 25,000 @ 8 MB | 1.00× | 2 MB | 44.2 | 31,080 (poor fit) | 50% of 100.0 GB/s unified memory |"
        " **yes**: <80% of peak from 32 MB (worst −80%) |"]  # fmt: skip


def test_a_point_without_samples_is_paired_by_its_median_untested() -> None:
    """Samples on one side only: the ratio of the medians, untested, the busy side named; no median, no ratio;
    samples on both sides: the rank test at the alpha given."""
    ref = curve("torch", "pinned", {4: 24000.0}).points[0]
    peer = Point(batch_size=4, bytes=ref.bytes, mbps=12000.0, others_cpus=3.0, cpus=8)
    assert repr(report._tested("p", ref, peer, 0.05, 0.01)) == (
        "Row(series='p', batch_size=4, base_mbps=24000.0, new_mbps=12000.0, ratio=0.5, p_value=None, method='untested',"
        " significant=False, verdict='untested', busy=('new',), unlike=False)")
    assert repr(report._tested("p", peer, ref, 0.05, 0.01)).endswith("busy=('base',), unlike=False)")
    assert repr(report._tested("p", ref, Point(batch_size=4, bytes=ref.bytes), 0.05, 0.01)) == (
        "Row(series='p', batch_size=4, base_mbps=24000.0, new_mbps=nan, ratio=nan, p_value=None, method='untested',"
        " significant=False, verdict='untested', busy=(), unlike=False)")
    assert repr(report._tested("p", Point(batch_size=4, bytes=ref.bytes), peer, 0.05, 0.01)) == (
        "Row(series='p', batch_size=4, base_mbps=nan, new_mbps=12000.0, ratio=nan, p_value=None, method='untested',"
        " significant=False, verdict='untested', busy=('new',), unlike=False)")
    slower = curve("torch", "pinned", {4: 21600.0}).points[0]
    assert report._tested("p", ref, slower, 0.05, 0.01).verdict == "slower"
    assert report._tested("p", ref, slower, 0.05, 0.0001).verdict == "inconclusive"


def test_save_makes_missing_folders_reuses_an_existing_one_and_says_why_it_cannot(tmp_path: Path) -> None:
    """Folders two deep are made, an existing folder is kept; the reason in words; --out by default."""
    deep = tmp_path / "a" / "b" / "r.md"
    assert report.save("one\n", deep) == deep and deep.read_text() == "one\n"
    assert report.save("two\n", deep) == deep and deep.read_text() == "two\n"
    (tmp_path / "file").write_text("")
    with pytest.raises(XferbenchError) as raised:
        report.save("x", tmp_path / "file" / "r.md")
    assert str(raised.value) == f"cannot write {tmp_path / 'file' / 'r.md'}: {tmp_path / 'file'} is a file, not a folder; choose another --out"
    with pytest.raises(XferbenchError) as raised:
        report.save("x", tmp_path / "a")
    assert str(raised.value) == f"--out {tmp_path / 'a'} is a folder; xferbench writes only regular files: choose another --out"
    with pytest.raises(XferbenchError) as raised:
        report.save("x", tmp_path / "a", "--markdown")  # fleet's tables name their own option
    assert str(raised.value) == f"--markdown {tmp_path / 'a'} is a folder; xferbench writes only regular files: choose another --markdown"
