"""Rules of the Markdown report, checked on whole reports of committed result files and on small built ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from xferbench.core.errors import XferbenchError
from xferbench.core.results import Point, Result, Selected, Series, select
from xferbench.core.spec import SeriesKey
from xferbench.core.timing import Samples
from xferbench.reading import report

ROOT = Path(__file__).resolve().parent.parent
H200 = "results/nvidia-h200/2026-11-26"


def whole(*paths: str) -> str:
    """The report of committed files, named as a user in the repository root would name them."""
    picks, empty = select([Path(p) for p in paths], None)
    return report.render(picks, empty)


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


SHAPE = (1000, 1000)
GPU = {"id": "cuda:0", "kind": "cuda", "name": "NVIDIA RTX 4090", "driver": "550.54", "cuda_driver": "12.4",
       "nvml": {"pcie_gen_current": 4, "pcie_width_current": 16, "pcie_gen_max": 4, "pcie_width_max": 16, "numa_node": 1,
                "cpu_affinity": [0, 1, 2, 3]}}


def env(host: str, **more: Any) -> dict[str, Any]:
    return {"host": host, "os": "Linux-6.8", "cpu": "Intel Xeon", "cpu_count": 8, "python": "3.12.1",
            "memory_bytes": 64 * 2**30, "process_cpus": [0, 1, 2, 3, 4, 5, 6, 7],
            "versions": {"numpy": "2.1.0"}, "frameworks": {"torch": {"version": "2.5.0", "cuda": "12.4"}},
            "settings": {}, "devices": [{"id": "cpu", "kind": "cpu", "name": "Intel Xeon"}, GPU], **more}


def curve(framework: str, mode: str, mbps: dict[int, float], spread: float = 0.001, busy: tuple[int, ...] = (),
          failed: dict[int, str] | None = None, device: str = "cuda:0", shape: tuple[int, ...] = SHAPE, **fields: Any) -> Series:
    """Eight samples a point, each `spread` apart, so the rank test can decide."""
    key = SeriesKey(framework, mode, "copy", device, shape)
    fields = {"device_name": "NVIDIA RTX 4090", "transfer": "host-to-device", **fields}
    series = Series(framework, mode, "copy", device, list(shape), **fields)
    for batch in sorted({*mbps, *(failed or {})}):
        spec = key.at(batch)
        if batch in (failed or {}):
            series.points.append(Point.failed(spec, "error", failed[batch]))
            continue
        base = spec.nbytes / (mbps[batch] * 1e6)
        point = Point.measured(spec, Samples([base * (1 + spread * (i - 3.5)) for i in range(8)]), warmup_calls=1)
        if batch in busy:
            point.others_cpus, point.cpus = 3.0, 8
        series.points.append(point)
    series.refresh_summary()
    return series


def picked(files: dict[str, Result]) -> tuple[list[Selected], list[Selected]]:
    picks, empty = [], []
    for path, result in files.items():
        for s in result.series:
            if s.ok_points():
                picks.append(Selected(Path(path), result, s))
            elif s.status != "skipped":
                empty.append(Selected(Path(path), result, s))
    return picks, empty


def three_files() -> str:
    """Three files built in memory: a failed point, busy points, a series empty in one file, a lone one."""
    a = Result(env("a"), {"argv": ["xferbench", "sweep", "-f", "torch"]}, "2026-01-01T00:00:00+00:00", [
        curve("torch", "pinned", {1: 6000.0, 4: 24000.0, 16: 25000.0}),
        curve("torch", "pageable", {1: 3000.0, 4: 10000.0}),
    ], "complete", xferbench_version="0.1.0")
    b = Result(env("b"), {"argv": ["python", "-m", "xferbench", "sweep"]}, "2026-01-02T00:00:00+00:00", [
        curve("torch", "pinned", {1: 6000.0, 16: 20000.0, 64: 21000.0}, busy=(16,), failed={4: "out of memory"}),
        Series("torch", "pageable", "copy", "cuda:0", list(SHAPE), status="failed", reason="worker died"),
        curve("jax", "device_put", {4: 9000.0}),
    ], "interrupted", xferbench_version="0.1.0")
    c = Result(env("c", frameworks={"torch": {"version": "2.6.0"}}), {}, "2026-01-03T00:00:00+00:00", [
        curve("torch", "pinned", {1: 6600.0, 4: 24100.0, 16: 30000.0}),
        curve("torch", "pageable", {1: 2000.0, 4: 10000.0}, busy=(1, 4)),
        Series("jax", "device_put", "copy", "cuda:0", list(SHAPE), status="failed", reason="no GPU left"),
    ], "running")
    picks, empty = picked({"a.json": a, "b.json": b, "c.json": c})
    return report.render(picks, empty)


def one_file() -> str:
    """One file built in memory: a raw reference, a streamed path, a failed series and an empty one."""
    a = Result(env("a", settings={"GLIBC_TUNABLES": "x=1", "HOME": "/h"}), {"argv": ["/v/bin/xferbench", "sweep"]},
               "2026-01-01T00:00:00+00:00", [
        curve("cuda", "raw_pinned", {1: 7000.0, 4: 26000.0, 16: 26500.0}),
        curve("torch", "pinned", {1: 6000.0, 4: 13000.0, 16: 25000.0}, method="streamed"),
        curve("torch", "pageable", {1: 3000.0, 4: 10000.0}, status="failed", reason="bytes differ", note="a copy"),
        Series("jax", "device_put", "copy", "cuda:0", list(SHAPE), status="ok"),
        Series("jax", "pinned", "copy", "cuda:0", list(SHAPE), status="skipped", reason="no jax"),
    ], "complete", xferbench_version="0.1.0")
    picks, empty = picked({"one.json": a})
    return report.render(picks, empty, plot=Path("plots/one.png"), out=Path("reports/one.md"))


def test_two_cpu_files_that_differ_in_one_setting_are_answered_path_by_path() -> None:
    """Two files: what differs, each path's runs and peaks, the ratio grid, MB/s per batch, then the rest."""
    assert whole("results/cpu-amd-epyc-2core/tf-onednn-0.json", "results/cpu-amd-epyc-2core/tf-onednn-1.json") == ONEDNN[1:]


def test_a_gpu_run_beside_a_peers_figures_stands_side_by_side_by_size() -> None:
    """No common path: one summary with link and raw ceilings, MB/s by bytes per call, the peer's commands."""
    assert whole(f"{H200}/run-3/validation/link.json", f"{H200}/run-3/validation/peer-nvbandwidth.json") == GPU_AND_PEER[1:]


def test_a_busy_file_against_a_quiet_one_says_so_at_every_point() -> None:
    """Busy points: marked in every table, counted in the verdicts, one warning naming the worst point."""
    assert whole("results/cpu-amd-epyc-2core/busy-calibration/torch-1-thread/quiet-1.json",
                 "results/cpu-amd-epyc-2core/busy-calibration/torch-1-thread/busy-1.json") == QUIET_AND_BUSY[1:]  # fmt: skip


def test_a_peers_figures_in_two_runs_pair_by_size_untested() -> None:
    """Figures without raw samples: the ratio of the medians, marked untested, located by bytes per call."""
    assert whole(f"{H200}/run-3/validation/peer-nvbandwidth.json", f"{H200}/run-4/validation/peer-nvbandwidth.json") == PEER_RUNS[1:]


def test_three_files_are_each_read_against_the_first_that_has_the_path() -> None:
    """Three files: a column per later file, FAILED where the first measured, a lone path, empty series."""
    assert three_files() == THREE[1:]


def test_every_device_at_once_is_a_table_per_group_with_a_total() -> None:
    """Concurrent groups: each device alone and at once, the ratio, and the total's ratio."""
    picks, _ = select([Path("results/sim/two-devices-shared-host-20gbps.json")])
    files = [(picks[0].path, picks[0].result)]
    assert "\n".join(report.at_once_section(picks, files, ["x"])) == AT_ONCE[1:-1]
    assert report.at_once_section([p for p in picks if p.series.concurrent == 1], files, ["x"]) == []


def test_command_args_drop_the_program_however_it_was_started() -> None:
    """`python -m xferbench ARGS` and a script path both leave ARGS; another module keeps its name."""
    assert report.command_args(["python", "-m", "xferbench", "sweep"]) == ["sweep"]
    assert report.command_args(["python", "-m", "xferbench.cli", "a"]) == ["a"]
    assert report.command_args(["python", "-m", "other", "a"]) == ["-m", "other", "a"]
    assert report.command_args(["python", "-m", "xferbench"]) == []
    assert report.command_args(["/x/xferbench", "-m", "y"]) == ["-m", "y"]
    assert report.command_args(["xferbench"]) == []


def test_the_plot_link_is_relative_and_bracketed_where_a_space_or_parenthesis_would_break_it() -> None:
    """A link relative to the report's folder; <...> around a target with a space or a parenthesis."""
    assert report._plot_link(Path("plots/a.png"), Path("out/r.md")) == "![xferbench plot](../plots/a.png)"
    assert report._plot_link(Path("plots/a.png"), None) == "![xferbench plot](plots/a.png)"
    assert report._plot_link(Path("p/a b.png"), None) == "![xferbench plot](<p/a b.png>)"
    assert report._plot_link(Path("p/a(1).png"), None) == "![xferbench plot](<p/a(1).png>)"
    assert report._plot_link(Path("p/a)1.png"), None) == "![xferbench plot](<p/a)1.png>)"


def test_a_cell_keeps_its_table_whole() -> None:
    """A pipe is escaped, whitespace folds to one space, None and "" read as not recorded."""
    assert report.cell(None) == report.cell("") == "—"
    assert report.cell(" a |\n b ") == "a \\| b"
    assert report.cell(0) == "0"


def test_save_writes_the_report_and_says_why_it_cannot(tmp_path: Path) -> None:
    """The folder is made; an unwritable path is one line naming the option to change."""
    target = tmp_path / "deep" / "r.md"
    assert report.save("text\n", target) == target and target.read_text() == "text\n"
    (tmp_path / "file").write_text("")
    with pytest.raises(XferbenchError) as raised:
        report.save("x", tmp_path / "file" / "r.md", "--table")
    assert str(raised.value).startswith(f"cannot write {tmp_path / 'file' / 'r.md'}: ")
    assert str(raised.value).endswith("; choose another --table")


def test_one_file_reads_each_series_against_its_raw_reference() -> None:
    """One file: the raw column, a streamed latency, a failed and an empty series, the plot, the series side by side."""
    assert one_file() == ONE[1:]


# Whole reports as they read today, from the files and builds above.

ONEDNN = r"""
## xferbench report: tf-onednn-0 vs tf-onednn-1

Host-to-host copy throughput (CPU only: no GPU in these series) on AMD EPYC: 4 series from 2 result file(s): tf-onednn-0 (`results/cpu-amd-epyc-2core/tf-onednn-0.json`), tf-onednn-1 (`results/cpu-amd-epyc-2core/tf-onednn-1.json`). MB/s is 10^6 bytes of uint8 input per second, from the median time of each batch.

### What differs

| field | tf-onednn-0 | tf-onednn-1 |
| --- | --- | --- |
| tf | 2.21.0 (built with CUDA 12.5.1), oneDNN off | 2.21.0 (built with CUDA 12.5.1), oneDNN on |
| TF_ENABLE_ONEDNN_OPTS | 0 | 1 |

### Each path, tf-onednn-1 against tf-onednn-0

What changed at each batch measured in both, by the rank test of `xferbench compare` (a change counts past 5% when p < 0.01); neighbouring batches with one verdict make a run, split where the ratio jumps 1.5× or more or a batch failed:

- `tf/eager/copy`: tf-onednn-1 is 2.52–2.86× faster from batch 171 to 256; 0.45–0.52× slower from batch 128 to 170. Largest change: 2.86× faster at batch 256, 0.45× slower at batch 170.
- `tf/function/copy`: tf-onednn-1 is 2.17–2.50× faster from batch 171 to 256; 0.50–0.64× slower from batch 128 to 170. Largest change: 2.50× faster at batch 256, 0.50× slower at batch 170.

Each file's peak MB/s @ batch, and the ratio of the two peaks wherever each lies (the runs above compare like with like, batch by batch).

| path | peak tf-onednn-0 | peak tf-onednn-1 | tf-onednn-1 / tf-onednn-0, peak to peak | verdict by batch |
| --- | ---: | ---: | ---: | --- |
| `tf/eager/copy` | 6,471 @ 170 | 3,155 @ 128 | 0.49× | slower at 2 of 4, faster at 2 |
| `tf/function/copy` | 5,689 @ 170 | 2,866 @ 170 | 0.50× | slower at 2 of 4, faster at 2 |

### Ratio at each batch

MB/s of tf-onednn-1 over tf-onednn-0 at the same batch, with the verdict: ▼ slower, ▲ faster, = no change, ? inconclusive; –: not in both.

| batch | `tf/eager/copy` | `tf/function/copy` |
| ---: | ---: | ---: |
| 128 | 0.52× ▼ | 0.64× ▼ |
| 170 | 0.45× ▼ | 0.50× ▼ |
| 171 | 2.52× ▲ | 2.17× ▲ |
| 256 | 2.86× ▲ | 2.50× ▲ |

### Notes

- tf/eager/copy@cpu, tf/function/copy@cpu: on the CPU this is TensorFlow's host-side copy of the NumPy array into a tensor of its own

### MB/s by batch, path by path

Median MB/s in each file; the ratio to tf-onednn-0; the rank test's p-value and verdict on the raw samples.

| path | batch | tf-onednn-0 MB/s | tf-onednn-1 MB/s | tf-onednn-1 / tf-onednn-0 | p | verdict |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
| `tf/eager/copy` | 128 | 6,084 | 3,155 | 0.52× | <1e-6 | slower |
|  | 170 | 6,471 | 2,917 | 0.45× | <1e-6 | slower |
|  | 171 | 1,013 | 2,550 | 2.52× | 1.5e-05 | faster |
|  | 256 | 902 | 2,574 | 2.86× | 1.6e-06 | faster |
| `tf/function/copy` | 128 | 4,396 | 2,829 | 0.64× | <1e-6 | slower |
|  | 170 | 5,689 | 2,866 | 0.50× | <1e-6 | slower |
|  | 171 | 970 | 2,105 | 2.17× | 4.2e-06 | faster |
|  | 256 | 1,012 | 2,524 | 2.50× | 2.1e-05 | faster |

### Summary of each series

| series | peak MB/s @ batch | vs best of its device | saturates at batch | latency (µs) | asymptotic MB/s | % of link (theoretical) | cliff |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |
| tf/eager/copy@cpu (tf-onednn-0) | 6,471 @ 170 | 1.00× | 170 | ≈0 (clamped) | 5,579 (poor fit) | unknown | **yes**: <80% of peak from batch 171 (worst −86%) |
| tf/function/copy@cpu (tf-onednn-0) | 5,689 @ 170 | 0.88× | 170 | ≈0 (clamped) | 4,447 (poor fit) | unknown | **yes**: <80% of peak from batch 171 (worst −83%) |
| tf/eager/copy@cpu (tf-onednn-1) | 3,155 @ 128 | 0.49× | 128 | ≈0 (clamped) | 2,822 | unknown | no |
| tf/function/copy@cpu (tf-onednn-1) | 2,866 @ 170 | 0.44× | 128 | ≈0 (clamped) | 2,617 | unknown | **yes**: <80% of peak from batch 171 (worst −27%) |

Peak and saturation (the smallest batch reaching 95% of the peak) come from the medians; latency and asymptotic MB/s from a least-squares fit of time = latency + bytes / bandwidth.

Link ceilings (per direction):
- cpu (tf-onednn-0), cpu (tf-onednn-1): unknown: a CPU series copies host to host, over no PCIe link

### Environment

<details>
<summary>Every recorded field of each file</summary>

| field | tf-onednn-0 | tf-onednn-1 |
| --- | --- | --- |
| file | results/cpu-amd-epyc-2core/tf-onednn-0.json | results/cpu-amd-epyc-2core/tf-onednn-1.json |
| host | vm | vm |
| device | AMD EPYC | AMD EPYC |
| driver | n/a | n/a |
| CUDA (driver) | n/a | n/a |
| PCIe link | n/a | n/a |
| NUMA node | n/a | n/a |
| CPU affinity | n/a | n/a |
| CPU | AMD EPYC (2 logical CPUs) | AMD EPYC (2 logical CPUs) |
| memory | 24 GiB | 24 GiB |
| OS | Linux-6.18.44-fc-v782-x86_64-with-glibc2.36 | Linux-6.18.44-fc-v782-x86_64-with-glibc2.36 |
| Python | 3.11.7 | 3.11.7 |
| tf | 2.21.0 (built with CUDA 12.5.1), oneDNN off | 2.21.0 (built with CUDA 12.5.1), oneDNN on |
| numpy | 2.4.6 | 2.4.6 |
| settings | TF_ENABLE_ONEDNN_OPTS=0 | TF_ENABLE_ONEDNN_OPTS=1 |
| xferbench | 0.1.0 | 0.1.0 |
| created | 2026-11-26T03:28:50+00:00 | 2026-11-26T03:29:10+00:00 |
| status | complete | complete |

</details>

### Reproduce

```
# tf-onednn-0: results/cpu-amd-epyc-2core/tf-onednn-0.json (xferbench 0.1.0, created 2026-11-26T03:28:50+00:00)
TF_ENABLE_ONEDNN_OPTS=0 xferbench sweep -f tf --mode eager --mode function --device cpu --batch-sizes 128,170,171,256 -o results/cpu-amd-epyc-2core/tf-onednn-0.json
```

```
# tf-onednn-1: results/cpu-amd-epyc-2core/tf-onednn-1.json (xferbench 0.1.0, created 2026-11-26T03:29:10+00:00)
TF_ENABLE_ONEDNN_OPTS=1 xferbench sweep -f tf --mode eager --mode function --device cpu --batch-sizes 128,170,171,256 -o results/cpu-amd-epyc-2core/tf-onednn-1.json
```

### Per-batch detail

<details>
<summary>tf/eager/copy@cpu (tf-onednn-0): peak 6,471 MB/s @ batch 170</summary>

AMD EPYC; host-to-host; 256x256x3 uint8 per item from numpy; timed per-call; clock time.perf_counter; sync none needed: TensorFlow runs CPU ops synchronously (eager synchronous execution is on)

- every byte verified outside the samples: 2.59 s per GiB on average

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n | faults/call |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 128 | 0.004137 | 242 | 30,943 | 6,084 | 5,141–6,725 | 85 | 0 |
| 170 | 0.005165 | 194 | 32,915 | 6,471 | 5,408–6,932 | 47 | 10 |
| 171 | 0.0332 | 30.1 | 5,150 | 1,013 | 995–1,023 | 10 | 8,242 |
| 256 | 0.05583 | 17.9 | 4,585 | 902 | 880–931 | 10 | 12,289 |

</details>

<details>
<summary>tf/function/copy@cpu (tf-onednn-0): peak 5,689 MB/s @ batch 170</summary>

AMD EPYC; host-to-host; 256x256x3 uint8 per item from numpy; timed per-call; clock time.perf_counter; sync none needed: TensorFlow runs CPU ops synchronously (eager synchronous execution is on)

- every byte verified outside the samples: 3.34 s per GiB on average

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n | faults/call |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 128 | 0.005725 | 175 | 22,357 | 4,396 | 3,763–4,914 | 43 | 12 |
| 170 | 0.005875 | 170 | 28,938 | 5,689 | 5,053–6,073 | 42 | 11 |
| 171 | 0.03465 | 28.9 | 4,935 | 970 | 931–1,002 | 11 | 8,753 |
| 256 | 0.04975 | 20.1 | 5,146 | 1,012 | 975–1,034 | 11 | 12,825 |

</details>

<details>
<summary>tf/eager/copy@cpu (tf-onednn-1): peak 3,155 MB/s @ batch 128</summary>

AMD EPYC; host-to-host; 256x256x3 uint8 per item from numpy; timed per-call; clock time.perf_counter; sync none needed: TensorFlow runs CPU ops synchronously (eager synchronous execution is on)

- every byte verified outside the samples: 2.68 s per GiB on average

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n | faults/call |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 128 | 0.007977 | 125 | 16,047 | 3,155 | 2,978–3,292 | 32 | 0 |
| 170 | 0.01146 | 87.3 | 14,836 | 2,917 | 2,531–3,218 | 25 | 0 |
| 171 | 0.01319 | 75.8 | 12,968 | 2,550 | 2,456–2,633 | 19 | 544 |
| 256 | 0.01955 | 51.1 | 13,094 | 2,574 | 2,172–2,760 | 37 | 536 |

</details>

<details>
<summary>tf/function/copy@cpu (tf-onednn-1): peak 2,866 MB/s @ batch 170</summary>

AMD EPYC; host-to-host; 256x256x3 uint8 per item from numpy; timed per-call; clock time.perf_counter; sync none needed: TensorFlow runs CPU ops synchronously (eager synchronous execution is on)

- every byte verified outside the samples: 1.91 s per GiB on average

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n | faults/call |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 128 | 0.008895 | 112 | 14,389 | 2,829 | 2,582–2,999 | 28 | 0 |
| 170 | 0.01166 | 85.8 | 14,579 | 2,866 | 2,561–3,060 | 22 | 0 |
| 171 | 0.01597 | 62.6 | 10,709 | 2,105 | 1,963–2,273 | 22 | 544 |
| 256 | 0.01994 | 50.2 | 12,840 | 2,524 | 2,403–2,685 | 15 | 536 |

</details>
"""


GPU_AND_PEER = r"""
## xferbench report

Transfer throughput on NVIDIA H200: 3 series from 2 result file(s). MB/s is 10^6 bytes of uint8 input per second; each figure, file by file: link, the median time of each batch; peer-nvbandwidth, as nvbandwidth printed it: the median of 1 sample, each a run of 16 copies between two CUDA events.

### Summary

| series | peak MB/s @ bytes per call | vs best of its device | saturates at bytes per call | latency (µs) | asymptotic MB/s | % of link (theoretical) | % of raw ceiling | cliff |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |
| cuda/raw_pinned/copy/streamed@cuda:0 (link) | 55,407 @ 256 MiB | 1.00× | 256 MiB | - | - | 88% of 63.0 GB/s | reference | no |
| nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:0 (peer-nvbandwidth) | 55,420 @ 256 MiB | 1.00× | - | - | - | 88% of 63.0 GB/s | - | - |
| nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed@cuda:0 (peer-nvbandwidth) | 55,318 @ 256 MiB | - | - | - | - | 88% of 63.0 GB/s | - | - |

Peak and saturation (the smallest size reaching 95% of the peak) come from the medians in xferbench's series, latency and asymptotic MB/s from a least-squares fit of time = latency + bytes / bandwidth; a peer's peak is the highest figure it printed (each the statistic the opening line names); one figure per size, no time per copy, gives it no saturation, latency or fit.

Link ceilings (per direction):
- cuda:0 (link): PCIe Gen5 x16 theoretical (63.0 GB/s, under load)
- cuda:0 (peer-nvbandwidth): PCIe Gen5 x16 theoretical (63.0 GB/s, system maximum)

Raw ceilings (the same run's pinned cudaMemcpyAsync on the same GPU):
- cuda:0 (link): cuda/raw_pinned/copy/streamed peaked at 55,407 MB/s @ 256 MiB
- cuda:0 (peer-nvbandwidth): none in this file: it holds nvbandwidth's own figures (xferbench import), read beside xferbench's in other files

Published figures for the same GPU model (healthy host↔device copies others measured; xferbench's docs/published-figures.md gives each with its source and date):
- cuda/raw_pinned/copy/streamed@cuda:0 (link): 55.4 GB/s here, above every published figure; published for H200: 55 GB/s host to device, 1 source (Azure/AI-benchmarking-guide Azure_Results/ND_H200_v5_results.md @b408bf8)

### MB/s by bytes per call

Median MB/s at each size, series side by side (their items differ in shape, or a peer counts buffers, not images: sizes, not batches, line up); (×): the ratio to the first series, the reference, at the same size; –: not measured at that size.

| bytes per call | reference: cuda/raw_pinned/copy/streamed@cuda:0 (link) | nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:0 (peer-nvbandwidth) | nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed@cuda:0 (peer-nvbandwidth) |
| ---: | ---: | ---: | ---: |
| 48 MiB | – | 55,264 | 55,298 |
| 256 MiB | 55,407 | 55,420 (1.00×) | 55,318 (1.00×) |

### Notes

- nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:0: nvbandwidth v0.8: host to device, copy-engine cuMemcpyAsync between pinned host memory (cuMemHostAlloc) and device memory; the median of 1 samples of 16 copies each, behind a spin kernel, after 4 warm-up copies
- nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed@cuda:0: nvbandwidth v0.8: device to host, copy-engine cuMemcpyAsync between pinned host memory (cuMemHostAlloc) and device memory; the median of 1 samples of 16 copies each, behind a spin kernel, after 4 warm-up copies

### Environment

| field | link | peer-nvbandwidth |
| --- | --- | --- |
| file | results/nvidia-h200/2026-11-26/run-3/validation/link.json | results/nvidia-h200/2026-11-26/run-3/validation/peer-nvbandwidth.json |
| host | vm | vm |
| device | NVIDIA H200 | NVIDIA H200 |
| vendor | NVIDIA | NVIDIA |
| runtime | CUDA 13.0 | CUDA 13.0 |
| host link | PCIe | PCIe |
| driver | 580.159.04 | 580.159.04 |
| CUDA (driver) | 13.0 | 13.0 |
| PCIe link | current Gen5 x16 / max Gen5 x16 | current Gen5 x16 / max Gen5 x16 |
| NUMA node | 0 | 0 |
| CPU affinity | process 0-15; GPU's ideal CPUs 0-15 | process ?; GPU's ideal CPUs 0-15 |
| CPU | Intel(R) Xeon(R) Processor (16 logical CPUs) | Intel(R) Xeon(R) Processor (16 logical CPUs) |
| memory | 126 GiB | 126 GiB |
| OS | Linux-6.18.44-fc-v657-gpu-x86_64-with-glibc2.39 | Linux-6.18.44-fc-v657-gpu-x86_64-with-glibc2.39 |
| Python | 3.12.3 | — |
| cuda | 14.2.0 | — |
| numpy | 2.5.2 | — |
| settings | NVIDIA_VISIBLE_DEVICES=0 | — |
| xferbench | 0.1.0+source | 0.1.0+source |
| created | 2026-11-26T14:23:32+00:00 | 2026-11-26T14:23:50+00:00 |
| status | complete | complete |

### Reproduce

```
# link: results/nvidia-h200/2026-11-26/run-3/validation/link.json (xferbench 0.1.0+source, created 2026-11-26T14:23:32+00:00)
NVIDIA_VISIBLE_DEVICES=0 xferbench sweep --device cuda:0 -f cuda -m raw_pinned --timing streamed --shape 512x512x4 --batch-sizes 256 --min-time 2 --max-time 4 -o /tmp/xferbench-gpu-run.tResRc/validation/link.json
```

```
# peer-nvbandwidth: results/nvidia-h200/2026-11-26/run-3/validation/peer-nvbandwidth.json (xferbench 0.1.0+source, created 2026-11-26T14:23:50+00:00)
/usr/bin/numactl --cpunodebind=0 --membind=0 /tmp/xferbench-gpu-run.tResRc/peers-build/nvbandwidth/nvbandwidth -j -b 48 -i 1 -t host_to_device_memcpy_ce device_to_host_memcpy_ce
/usr/bin/numactl --cpunodebind=0 --membind=0 /tmp/xferbench-gpu-run.tResRc/peers-build/nvbandwidth/nvbandwidth -j -b 256 -i 1 -t host_to_device_memcpy_ce device_to_host_memcpy_ce
```

### Per-batch detail

<details>
<summary>cuda/raw_pinned/copy/streamed@cuda:0 (link): peak 55,407 MB/s @ 256 MiB</summary>

NVIDIA H200; host-to-device; 512x512x4 uint8 per item from pinned; timed streamed; clock cupy.cuda.Event pair around the copies queued on the held stream, per copy; sync cudaEventSynchronize on the end event

- bound to CPUs 0-15, memory preferred on NUMA node 0
- PCIe link: Gen5 x16 under load in 38 NVML samples; RX peak ≈ 61,085 MB/s (NVML, approximate: 20 ms windows); 135.05 GB received (≈ NVML's RX throughput (approximate: 20 ms windows) integrated over 3.7 s; NVML's 32-bit byte counter could wrap more than once between samples)
- every byte verified outside the samples: 0.65 s per GiB on average

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 256 | 0.004845 | 206 | 52,840 | 55,407 | 55,314–55,485 | 102 |

</details>

<details>
<summary>nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:0 (peer-nvbandwidth): peak 55,420 MB/s @ 256 MiB</summary>

NVIDIA H200; host-to-device; 512x512x4 uint8 per item from pinned; timed streamed; clock CUDA events (cuEventElapsedTime, in whole microseconds) around 16 copies queued behind a spin kernel, per copy (nvbandwidth); sync cuStreamSynchronize once the spin kernel is released

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 48 | 0.0009107 | 1,098 | 52,704 | 55,264 | -–- | 1 |
| 256 | 0.004844 | 206 | 52,853 | 55,420 | -–- | 1 |

</details>

<details>
<summary>nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed@cuda:0 (peer-nvbandwidth): peak 55,318 MB/s @ 256 MiB</summary>

NVIDIA H200; device-to-host; 512x512x4 uint8 per item from pinned; timed streamed; clock CUDA events (cuEventElapsedTime, in whole microseconds) around 16 copies queued behind a spin kernel, per copy (nvbandwidth); sync cuStreamSynchronize once the spin kernel is released

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 48 | 0.0009102 | 1,099 | 52,736 | 55,298 | -–- | 1 |
| 256 | 0.004853 | 206 | 52,756 | 55,318 | -–- | 1 |

</details>
"""


QUIET_AND_BUSY = r"""
## xferbench report: quiet-1 vs busy-1

Host-to-host copy throughput (CPU only: no GPU in these series) on AMD EPYC: 2 series from 2 result file(s): quiet-1 (`results/cpu-amd-epyc-2core/busy-calibration/torch-1-thread/quiet-1.json`), busy-1 (`results/cpu-amd-epyc-2core/busy-calibration/torch-1-thread/busy-1.json`). MB/s is 10^6 bytes of uint8 input per second, from the median time of each batch.

### What differs

No recorded difference: the same device, driver, framework versions, settings, CPU, host, xferbench version and sampling in every file. Whatever moved the figures, the files do not record it.

busy-1 was measured on a busy machine at 10 of 10 points (see the notes): their figures may show the machine, not the change.

### Each path, busy-1 against quiet-1

What changed at each batch measured in both, by the rank test of `xferbench compare` (a change counts past 5% when p < 0.01); neighbouring batches with one verdict make a run, split where the ratio jumps 1.5× or more or a batch failed:

- `torch/pageable/copy`: busy-1 is 1.18× faster at batch 64 (1 busy); unchanged from batch 1 to 32 (0.96–1.02×) (6 busy); unchanged from batch 128 to 512 (0.98–1.04×) (3 busy). Largest change: 1.18× faster at batch 64.

Each file's peak MB/s @ batch, and the ratio of the two peaks wherever each lies (the runs above compare like with like, batch by batch). Points measured on a busy machine are left out of the peaks, except where every point of a series was busy: those peaks, marked (busy), rest on busy points.

| path | peak quiet-1 | peak busy-1 | busy-1 / quiet-1, peak to peak | verdict by batch |
| --- | ---: | ---: | ---: | --- |
| `torch/pageable/copy` | 40,905 @ 16 | 40,666 @ 8 (busy) | 0.99× | faster at 1 of 10, no change at 9 (10 busy) |

### Ratio at each batch

MB/s of busy-1 over quiet-1 at the same batch, with the verdict: ▼ slower, ▲ faster, = no change, ? inconclusive; * a side measured on a busy machine; –: not in both.

| batch | `torch/pageable/copy` |
| ---: | ---: |
| 1 | 0.96× =* |
| 2 | 1.00× =* |
| 4 | 1.00× =* |
| 8 | 1.00× =* |
| 16 | 0.99× =* |
| 32 | 1.02× =* |
| 64 | 1.18× ▲* |
| 128 | 1.04× =* |
| 256 | 0.98× =* |
| 512 | 1.02× =* |

### Notes

- torch/pageable/copy@cpu: on the CPU .to('cpu') returns the same tensor and copies nothing, so xferbench adds copy=True: torch.from_numpy(x).to('cpu', copy=True)
- **warning** results/cpu-amd-epyc-2core/busy-calibration/torch-1-thread/busy-1.json was busy at 10 of 10 points: every point. Other processes used a quarter of the CPUs or more (at worst 1.24 of its 2, at torch/pageable/copy@cpu batch 2); a busy machine moves figures either way, by up to several times. Those points are marked (busy), every figure here rests on them; measure again on a quiet machine.

### MB/s by batch, path by path

Median MB/s in each file; the ratio to quiet-1; the rank test's p-value and verdict on the raw samples. (busy): measured while other processes used a quarter of the CPUs or more.

| path | batch | quiet-1 MB/s | busy-1 MB/s | busy-1 / quiet-1 | p | verdict |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
| `torch/pageable/copy` | 1 | 29,839 | 28,744 (busy) | 0.96× | <1e-6 | no change |
|  | 2 | 31,384 | 31,384 (busy) | 1.00× | 0.11 | no change |
|  | 4 | 36,271 | 36,406 (busy) | 1.00× | 7.1e-06 | no change |
|  | 8 | 40,719 | 40,666 (busy) | 1.00× | 4.1e-05 | no change |
|  | 16 | 40,905 | 40,457 (busy) | 0.99× | <1e-6 | no change |
|  | 32 | 32,414 | 33,161 (busy) | 1.02× | <1e-6 | no change |
|  | 64 | 15,261 | 17,979 (busy) | 1.18× | <1e-6 | faster |
|  | 128 | 12,375 | 12,816 (busy) | 1.04× | 0.00037 | no change |
|  | 256 | 1,965 | 1,927 (busy) | 0.98× | 0.15 | no change |
|  | 512 | 1,906 | 1,942 (busy) | 1.02× | 0.0023 | no change |

### Summary of each series

| series | peak MB/s @ batch | vs best of its device | saturates at batch | latency (µs) | asymptotic MB/s | % of link (theoretical) | cliff |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |
| torch/pageable/copy@cpu (quiet-1) | 40,905 @ 16 | 1.00× | 8 | 0.197 | 33,059 (poor fit) | unknown | **yes**: <80% of peak from batch 32 (worst −95%) |
| torch/pageable/copy@cpu (busy-1) | 40,666 @ 8 (busy) | 0.99× | 8 | 0.393 | 33,218 (poor fit) | unknown | **yes**: <80% of peak from batch 64 (worst −95%) |

Peak and saturation (the smallest batch reaching 95% of the peak) come from the medians; latency and asymptotic MB/s from a least-squares fit of time = latency + bytes / bandwidth.

Link ceilings (per direction):
- cpu (quiet-1), cpu (busy-1): unknown: a CPU series copies host to host, over no PCIe link

### Not measured

- torch/pinned/copy@cpu (quiet-1): pinned host memory needs a CUDA device; on the CPU there is no device copy to pin for
- torch/pinned_into/copy@cpu (quiet-1): pinned host memory needs a CUDA device; on the CPU there is no device copy to pin for
- torch/pinned/copy@cpu (busy-1): pinned host memory needs a CUDA device; on the CPU there is no device copy to pin for
- torch/pinned_into/copy@cpu (busy-1): pinned host memory needs a CUDA device; on the CPU there is no device copy to pin for

### Environment

<details>
<summary>Every recorded field of each file</summary>

| field | quiet-1 | busy-1 |
| --- | --- | --- |
| file | results/cpu-amd-epyc-2core/busy-calibration/torch-1-thread/quiet-1.json | results/cpu-amd-epyc-2core/busy-calibration/torch-1-thread/busy-1.json |
| host | vm | vm |
| device | AMD EPYC | AMD EPYC |
| driver | n/a | n/a |
| CUDA (driver) | n/a | n/a |
| PCIe link | n/a | n/a |
| NUMA node | n/a | n/a |
| CPU affinity | n/a | n/a |
| CPU | AMD EPYC (2 logical CPUs) | AMD EPYC (2 logical CPUs) |
| memory | 24 GiB | 24 GiB |
| OS | Linux-6.18.44-fc-v595-x86_64-with-glibc2.36 | Linux-6.18.44-fc-v595-x86_64-with-glibc2.36 |
| Python | 3.11.7 | 3.11.7 |
| torch | 2.14.1+cu130 (built with CUDA 13.0) | 2.14.1+cu130 (built with CUDA 13.0) |
| numpy | 2.4.6 | 2.4.6 |
| settings | OMP_NUM_THREADS=1 | OMP_NUM_THREADS=1 |
| xferbench | 0.1.0 | 0.1.0 |
| created | 2026-11-23T13:31:27+00:00 | 2026-11-23T13:31:45+00:00 |
| status | complete | complete |

</details>

### Reproduce

```
# quiet-1: results/cpu-amd-epyc-2core/busy-calibration/torch-1-thread/quiet-1.json (xferbench 0.1.0, created 2026-11-23T13:31:27+00:00)
OMP_NUM_THREADS=1 xferbench sweep -o /tmp/thr1/quiet-1.json -f torch
```

```
# busy-1: results/cpu-amd-epyc-2core/busy-calibration/torch-1-thread/busy-1.json (xferbench 0.1.0, created 2026-11-23T13:31:45+00:00)
OMP_NUM_THREADS=1 xferbench sweep -o /tmp/thr1/busy-1.json -f torch
```

### Per-batch detail

<details>
<summary>torch/pageable/copy@cpu (quiet-1): peak 40,905 MB/s @ batch 16</summary>

AMD EPYC; host-to-host; 256x256x3 uint8 per item from numpy; timed per-call; clock time.perf_counter; sync none needed: the CPU copy is synchronous

- every byte verified outside the samples: 1.11 s per GiB on average

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n | faults/call |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 1 | 6.589e-06 | 151,768 | 151,768 | 29,839 | 29,127–30,252 | 1000 | 0 |
| 2 | 1.253e-05 | 79,815 | 159,630 | 31,384 | 30,770–31,767 | 1000 | 0 |
| 4 | 2.168e-05 | 46,121 | 184,485 | 36,271 | 34,995–36,816 | 1000 | 0 |
| 8 | 3.863e-05 | 25,889 | 207,109 | 40,719 | 40,157–41,070 | 1000 | 0 |
| 16 | 7.69e-05 | 13,003 | 208,052 | 40,905 | 38,632–41,342 | 1000 | 0 |
| 32 | 0.0001941 | 5,152 | 164,866 | 32,414 | 28,927–34,779 | 1000 | 0 |
| 64 | 0.0008245 | 1,213 | 77,624 | 15,261 | 13,400–18,300 | 310 | 0 |
| 128 | 0.002034 | 492 | 62,943 | 12,375 | 11,339–13,316 | 130 | 0 |
| 256 | 0.02561 | 39 | 9,995 | 1,965 | 1,944–1,978 | 10 | 12,289 |
| 512 | 0.05283 | 18.9 | 9,692 | 1,906 | 1,628–1,967 | 19 | 24,577 |

</details>

<details>
<summary>torch/pageable/copy@cpu (busy-1): peak 40,666 MB/s @ batch 8</summary>

AMD EPYC; host-to-host; 256x256x3 uint8 per item from numpy; timed per-call; clock time.perf_counter; sync none needed: the CPU copy is synchronous

- every byte verified outside the samples: 1.08 s per GiB on average

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n | faults/call |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 1 | 6.84e-06 | 146,199 | 146,199 | 28,744 (busy) | 28,087–29,084 | 1000 | 0 |
| 2 | 1.253e-05 | 79,815 | 159,630 | 31,384 (busy) | 30,746–31,948 | 1000 | 0 |
| 4 | 2.16e-05 | 46,292 | 185,168 | 36,406 (busy) | 35,197–36,799 | 1000 | 0 |
| 8 | 3.868e-05 | 25,855 | 206,839 | 40,666 (busy) | 40,260–40,931 | 1000 | 0 |
| 16 | 7.776e-05 | 12,861 | 205,775 | 40,457 (busy) | 39,126–41,022 | 1000 | 0 |
| 32 | 0.0001897 | 5,271 | 168,664 | 33,161 (busy) | 27,696–34,925 | 1000 | 0 |
| 64 | 0.0006999 | 1,429 | 91,448 | 17,979 (busy) | 16,053–19,449 | 360 | 0 |
| 128 | 0.001964 | 509 | 65,183 | 12,816 (busy) | 11,416–14,407 | 130 | 0 |
| 256 | 0.02611 | 38.3 | 9,804 | 1,927 (busy) | 1,545–2,064 | 36 | 12,289 |
| 512 | 0.05183 | 19.3 | 9,879 | 1,942 (busy) | 1,934–2,018 | 10 | 24,577 |

</details>
"""


PEER_RUNS = r"""
## xferbench report: run-3 vs run-4

Transfer throughput on NVIDIA H200: 4 series from 2 result file(s): run-3 (`results/nvidia-h200/2026-11-26/run-3/validation/peer-nvbandwidth.json`), run-4 (`results/nvidia-h200/2026-11-26/run-4/validation/peer-nvbandwidth.json`). MB/s is 10^6 bytes of uint8 input per second; each figure, file by file: run-3, as nvbandwidth printed it: the median of 1 sample, each a run of 16 copies between two CUDA events; run-4, as nvbandwidth printed it: the median of 1 sample, each a run of 16 copies between two CUDA events.

### What differs

No recorded difference: the same device, driver, framework versions, settings, CPU, host, xferbench version and sampling in every file. Whatever moved the figures, the files do not record it.

### Each path, run-4 against run-3

What changed at each size measured in both, by the rank test of `xferbench compare` (a change counts past 5% when p < 0.01); neighbouring sizes with one verdict make a run, split where the ratio jumps 1.5× or more or a size failed:

- `nvbandwidth/host_to_device_memcpy_ce/copy/streamed`: run-4 is untested (no raw samples) at 256 MiB (1.00×).
- `nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed`: run-4 is untested (no raw samples) at 256 MiB (1.00×).

Each file's peak MB/s @ bytes per call, and the ratio of the two peaks wherever each lies (the runs above compare like with like, size by size).

| path | peak run-3 @ bytes per call | peak run-4 @ bytes per call | run-4 / run-3, peak to peak | verdict by size |
| --- | ---: | ---: | ---: | --- |
| `nvbandwidth/host_to_device_memcpy_ce/copy/streamed` | 55,420 @ 256 MiB | 55,499 @ 1 GiB | 1.00× | untested at 1 of 1 |
| `nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed` | 55,318 @ 256 MiB | 55,356 @ 1 GiB | 1.00× | untested at 1 of 1 |

### Ratio at each size

MB/s of run-4 over run-3 at the same size, with the verdict: ▼ slower, ▲ faster, = no change, ? inconclusive; (untested): a side keeps no raw samples (a peer's figures); –: not in both.

| bytes per call | `nvbandwidth/host_to_device_memcpy_ce/copy/streamed` | `nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed` |
| ---: | ---: | ---: |
| 256 MiB | 1.00× (untested) | 1.00× (untested) |

### Notes

- nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:0: nvbandwidth v0.8: host to device, copy-engine cuMemcpyAsync between pinned host memory (cuMemHostAlloc) and device memory; the median of 1 samples of 16 copies each, behind a spin kernel, after 4 warm-up copies
- nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed@cuda:0: nvbandwidth v0.8: device to host, copy-engine cuMemcpyAsync between pinned host memory (cuMemHostAlloc) and device memory; the median of 1 samples of 16 copies each, behind a spin kernel, after 4 warm-up copies

### MB/s by size, path by path

Median MB/s in each file; the ratio to run-3; the rank test's p-value and verdict on the raw samples.

| path | bytes per call | run-3 MB/s | run-4 MB/s | run-4 / run-3 | p | verdict |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
| `nvbandwidth/host_to_device_memcpy_ce/copy/streamed` | 48 MiB | 55,264 | – | – | – | – |
|  | 96 MiB | – | 55,454 | – | – | – |
|  | 256 MiB | 55,420 | 55,498 | 1.00× | untested | untested |
|  | 1 GiB | – | 55,499 | – | – | – |
| `nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed` | 48 MiB | 55,298 | – | – | – | – |
|  | 96 MiB | – | 55,279 | – | – | – |
|  | 256 MiB | 55,318 | 55,350 | 1.00× | untested | untested |
|  | 1 GiB | – | 55,356 | – | – | – |

### Summary of each series

| series | peak MB/s @ bytes per call | vs best of its device | saturates at bytes per call | latency (µs) | asymptotic MB/s | % of link (theoretical) | % of raw ceiling | cliff |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |
| nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:0 (run-3) | 55,420 @ 256 MiB | 1.00× | - | - | - | 88% of 63.0 GB/s | - | - |
| nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed@cuda:0 (run-3) | 55,318 @ 256 MiB | 1.00× | - | - | - | 88% of 63.0 GB/s | - | - |
| nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:0 (run-4) | 55,499 @ 1 GiB | 1.00× | - | - | - | 88% of 63.0 GB/s | - | - |
| nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed@cuda:0 (run-4) | 55,356 @ 1 GiB | 1.00× | - | - | - | 88% of 63.0 GB/s | - | - |

A peer's peak is the highest figure it printed (each the statistic the opening line names); one figure per size, no time per copy, gives it no saturation, latency or fit.

Link ceilings (per direction):
- cuda:0 (run-3), cuda:0 (run-4): PCIe Gen5 x16 theoretical (63.0 GB/s, system maximum)

Raw ceilings (the same run's pinned cudaMemcpyAsync on the same GPU):
- cuda:0 (run-3), cuda:0 (run-4): none in this file: it holds nvbandwidth's own figures (xferbench import), read beside xferbench's in other files

### Environment

<details>
<summary>Every recorded field of each file</summary>

| field | run-3 | run-4 |
| --- | --- | --- |
| file | results/nvidia-h200/2026-11-26/run-3/validation/peer-nvbandwidth.json | results/nvidia-h200/2026-11-26/run-4/validation/peer-nvbandwidth.json |
| host | vm | vm |
| device | NVIDIA H200 | NVIDIA H200 |
| vendor | NVIDIA | NVIDIA |
| runtime | CUDA 13.0 | CUDA 13.0 |
| host link | PCIe | PCIe |
| driver | 580.159.04 | 580.159.04 |
| CUDA (driver) | 13.0 | 13.0 |
| PCIe link | current Gen5 x16 / max Gen5 x16 | current Gen5 x16 / max Gen5 x16 |
| NUMA node | 0 | 0 |
| CPU affinity | process ?; GPU's ideal CPUs 0-15 | process ?; GPU's ideal CPUs 0-15 |
| CPU | Intel(R) Xeon(R) Processor (16 logical CPUs) | Intel(R) Xeon(R) Processor (16 logical CPUs) |
| memory | 126 GiB | 126 GiB |
| OS | Linux-6.18.44-fc-v657-gpu-x86_64-with-glibc2.39 | Linux-6.18.44-fc-v657-gpu-x86_64-with-glibc2.39 |
| Python | — | — |
| numpy | — | — |
| settings | — | — |
| xferbench | 0.1.0+source | 0.1.0+source |
| created | 2026-11-26T14:23:50+00:00 | 2026-11-26T14:31:07+00:00 |
| status | complete | complete |

</details>

### Reproduce

```
# run-3: results/nvidia-h200/2026-11-26/run-3/validation/peer-nvbandwidth.json (xferbench 0.1.0+source, created 2026-11-26T14:23:50+00:00)
/usr/bin/numactl --cpunodebind=0 --membind=0 /tmp/xferbench-gpu-run.tResRc/peers-build/nvbandwidth/nvbandwidth -j -b 48 -i 1 -t host_to_device_memcpy_ce device_to_host_memcpy_ce
/usr/bin/numactl --cpunodebind=0 --membind=0 /tmp/xferbench-gpu-run.tResRc/peers-build/nvbandwidth/nvbandwidth -j -b 256 -i 1 -t host_to_device_memcpy_ce device_to_host_memcpy_ce
```

```
# run-4: results/nvidia-h200/2026-11-26/run-4/validation/peer-nvbandwidth.json (xferbench 0.1.0+source, created 2026-11-26T14:31:07+00:00)
/usr/bin/numactl --cpunodebind=0 --membind=0 /tmp/xferbench-gpu-run.w1pui6/peers-build/nvbandwidth/nvbandwidth -j -b 96 -i 1 -t host_to_device_memcpy_ce device_to_host_memcpy_ce
/usr/bin/numactl --cpunodebind=0 --membind=0 /tmp/xferbench-gpu-run.w1pui6/peers-build/nvbandwidth/nvbandwidth -j -b 256 -i 1 -t host_to_device_memcpy_ce device_to_host_memcpy_ce
/usr/bin/numactl --cpunodebind=0 --membind=0 /tmp/xferbench-gpu-run.w1pui6/peers-build/nvbandwidth/nvbandwidth -j -b 1024 -i 1 -t host_to_device_memcpy_ce device_to_host_memcpy_ce
```

### Per-batch detail

<details>
<summary>nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:0 (run-3): peak 55,420 MB/s @ 256 MiB</summary>

NVIDIA H200; host-to-device; 512x512x4 uint8 per item from pinned; timed streamed; clock CUDA events (cuEventElapsedTime, in whole microseconds) around 16 copies queued behind a spin kernel, per copy (nvbandwidth); sync cuStreamSynchronize once the spin kernel is released

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 48 | 0.0009107 | 1,098 | 52,704 | 55,264 | -–- | 1 |
| 256 | 0.004844 | 206 | 52,853 | 55,420 | -–- | 1 |

</details>

<details>
<summary>nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed@cuda:0 (run-3): peak 55,318 MB/s @ 256 MiB</summary>

NVIDIA H200; device-to-host; 512x512x4 uint8 per item from pinned; timed streamed; clock CUDA events (cuEventElapsedTime, in whole microseconds) around 16 copies queued behind a spin kernel, per copy (nvbandwidth); sync cuStreamSynchronize once the spin kernel is released

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 48 | 0.0009102 | 1,099 | 52,736 | 55,298 | -–- | 1 |
| 256 | 0.004853 | 206 | 52,756 | 55,318 | -–- | 1 |

</details>

<details>
<summary>nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:0 (run-4): peak 55,499 MB/s @ 1 GiB</summary>

NVIDIA H200; host-to-device; 512x512x4 uint8 per item from pinned; timed streamed; clock CUDA events (cuEventElapsedTime, in whole microseconds) around 16 copies queued behind a spin kernel, per copy (nvbandwidth); sync cuStreamSynchronize once the spin kernel is released

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 96 | 0.001815 | 551 | 52,885 | 55,454 | -–- | 1 |
| 256 | 0.004837 | 207 | 52,927 | 55,498 | -–- | 1 |
| 1024 | 0.01935 | 51.7 | 52,928 | 55,499 | -–- | 1 |

</details>

<details>
<summary>nvbandwidth/device_to_host_memcpy_ce/copy/d2h/streamed@cuda:0 (run-4): peak 55,356 MB/s @ 1 GiB</summary>

NVIDIA H200; device-to-host; 512x512x4 uint8 per item from pinned; timed streamed; clock CUDA events (cuEventElapsedTime, in whole microseconds) around 16 copies queued behind a spin kernel, per copy (nvbandwidth); sync cuStreamSynchronize once the spin kernel is released

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 96 | 0.001821 | 549 | 52,718 | 55,279 | -–- | 1 |
| 256 | 0.00485 | 206 | 52,786 | 55,350 | -–- | 1 |
| 1024 | 0.0194 | 51.6 | 52,792 | 55,356 | -–- | 1 |

</details>
"""


THREE = r"""
## xferbench report: a vs b vs c

Host-to-device transfer throughput on NVIDIA RTX 4090: 6 series from 3 result file(s): a (`a.json`), b (`b.json`), c (`c.json`). MB/s is 10^6 bytes of uint8 input per second, from the median time of each batch.

### What differs

| field | a | b | c |
| --- | --- | --- | --- |
| torch | 2.5.0 (built with CUDA 12.4) | 2.5.0 (built with CUDA 12.4) | 2.6.0 |
| host | a | b | c |
| xferbench | 0.1.0 | 0.1.0 | — |

b was measured on a busy machine at 1 of 4 points (see the notes): their figures may show the machine, not the change.

c was measured on a busy machine at 2 of 5 points (see the notes): their figures may show the machine, not the change.

### Each path, against the first file that has it

What changed at each batch measured in both, by the rank test of `xferbench compare` (a change counts past 5% when p < 0.01); neighbouring batches with one verdict make a run, split where the ratio jumps 1.5× or more or a batch failed:

- `torch/pinned/copy` (b): b is 0.80× slower at batch 16 (1 busy); unchanged at batch 1 (1.00×). Largest change: 0.80× slower at batch 16. Failed in b at batch 4, measured before.
- `torch/pinned/copy` (c): c is 1.20× faster at batch 16; 1.10× faster at batch 1; unchanged at batch 4 (1.00×). Largest change: 1.20× faster at batch 16.
- `torch/pageable/copy` (c): c is 0.67× slower at batch 1 (1 busy); unchanged at batch 4 (1.00×) (1 busy). Largest change: 0.67× slower at batch 1.

Each file's peak MB/s @ batch, and the ratio of the two peaks wherever each lies (the runs above compare like with like, batch by batch). Points measured on a busy machine are left out of the peaks, except where every point of a series was busy: those peaks, marked (busy), rest on busy points.

| path | peak a | peak b | peak c | b / first, peak to peak | c / first, peak to peak |
| --- | ---: | ---: | ---: | ---: | ---: |
| `torch/pinned/copy` | 25,000 @ 16 | 21,000 @ 64 | 30,000 @ 16 | 0.84×: slower at 1 of 3, no change at 1, failed at 1 (1 busy) | 1.20×: faster at 2 of 3, no change at 1 |
| `torch/pageable/copy` | 10,000 @ 4 | – | 10,000 @ 4 (busy) | – | 1.00×: slower at 1 of 2, no change at 1 (2 busy) |

### Ratio at each batch

MB/s of b · c over the first file that has the path at the same batch, with the verdict: ▼ slower, ▲ faster, = no change, ? inconclusive; * a side measured on a busy machine; FAILED: measured in the first, failed here; –: not in both.

| batch | `torch/pinned/copy` | `torch/pageable/copy` |
| ---: | ---: | ---: |
| 1 | 1.00× = · 1.10× ▲ | 0.67× ▼* |
| 4 | FAILED · 1.00× = | 1.00× =* |
| 16 | 0.80× ▼* · 1.20× ▲ | – |

### Notes

- **warning** the process may run on CPUs 4-7, outside the GPU's NUMA node 1 (CPUs 0-3); a remote node can cut host-to-device throughput several-fold. Pin it: numactl --cpunodebind=1 --membind=1 xferbench sweep ... (affects torch/pinned/copy@cuda:0 (a), torch/pageable/copy@cuda:0 (a), torch/pinned/copy@cuda:0 (b), jax/device_put/copy@cuda:0 (b), torch/pinned/copy@cuda:0 (c), torch/pageable/copy@cuda:0 (c))
- **warning** b.json was busy at 1 of 4 points: torch/pinned/copy@cuda:0 batch 16. Other processes used a quarter of the CPUs or more (at worst 3.00 of its 8, at torch/pinned/copy@cuda:0 batch 16); a busy machine moves figures either way, by up to several times. Those points are marked (busy), left out of peak, saturation, cliff and fit; measure again on a quiet machine.
- **warning** c.json was busy at 2 of 5 points: torch/pageable/copy@cuda:0 (every point). Other processes used a quarter of the CPUs or more (at worst 3.00 of its 8, at torch/pageable/copy@cuda:0 batch 1); a busy machine moves figures either way, by up to several times. Those points are marked (busy), left out of peak, saturation, cliff and fit, except in torch/pageable/copy@cuda:0, where every point was busy and the figures rest on them; measure again on a quiet machine.
- b.json: the sweep was interrupted; curves may be short
- c.json: the sweep did not finish (it died, or is still running); curves may be short
- **FAILED** b.json: torch/pageable/copy@cuda:0 FAILED (worker died); left out of the curves
- **FAILED** c.json: jax/device_put/copy@cuda:0 FAILED (no GPU left); left out of the curves

### MB/s by batch, path by path

Median MB/s in each file; the ratio to the first file; the rank test's p-value and verdict on the raw samples. (busy): measured while other processes used a quarter of the CPUs or more.

| path | batch | a MB/s | b MB/s | c MB/s | b / first | c / first |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
| `torch/pinned/copy` | 1 | 6,000 | 6,000 | 6,600 | 1.00× no change | 1.10× faster |
|  | 4 | 24,000 | FAILED | 24,100 | FAILED | 1.00× no change |
|  | 16 | 25,000 | 20,000 (busy) | 30,000 | 0.80× slower | 1.20× faster |
|  | 64 | – | 21,000 | – | – | – |
| `torch/pageable/copy` | 1 | 3,000 | – | 2,000 (busy) | – | 0.67× slower |
|  | 4 | 10,000 | – | 10,000 (busy) | – | 1.00× no change |

Without a counterpart in another file:
- `jax/device_put/copy@cuda:0`: only in b (it measured nothing in c: see the notes)

### Summary of each series

| series | device | peak MB/s @ batch | vs best of its device | saturates at batch | latency (µs) | asymptotic MB/s | % of link (theoretical) | % of raw ceiling | cliff |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |
| torch/pinned/copy@cuda:0 (a) | NVIDIA RTX 4090 | 25,000 @ 16 | 0.83× | 4 | 107 | 39,257 (poor fit) | 79% of 31.5 GB/s | - | no |
| torch/pageable/copy@cuda:0 (a) | NVIDIA RTX 4090 | 10,000 @ 4 | 0.33× | 4 | 311 | 45,000 | 32% of 31.5 GB/s | - | no |
| torch/pinned/copy@cuda:0 (b) | NVIDIA RTX 4090 | 21,000 @ 64 | 0.70× | 64 | 121 | 21,868 | 67% of 31.5 GB/s | - | no |
| jax/device_put/copy@cuda:0 (b) | NVIDIA RTX 4090 | 9,000 @ 4 | 0.30× | 4 | - | - | 29% of 31.5 GB/s | - | no |
| torch/pinned/copy@cuda:0 (c) | NVIDIA RTX 4090 | 30,000 @ 16 | 1.00× | 16 | 108 | 44,465 | 95% of 31.5 GB/s | - | no |
| torch/pageable/copy@cuda:0 (c) | NVIDIA RTX 4090 | 10,000 @ 4 (busy) | 0.33× | 4 | 439 | unbounded | 32% of 31.5 GB/s | - | no |
| torch/pageable/copy@cuda:0 (b) **FAILED** | cuda:0 | - | - | - | - | - | - | - | - |
| jax/device_put/copy@cuda:0 (c) **FAILED** | cuda:0 | - | - | - | - | - | - | - | - |

Peak and saturation (the smallest batch reaching 95% of the peak) come from the medians; latency and asymptotic MB/s from a least-squares fit of time = latency + bytes / bandwidth.

Link ceilings (per direction):
- cuda:0 (a), cuda:0 (b), cuda:0 (c): PCIe Gen4 x16 theoretical (31.5 GB/s, system maximum)

Raw ceilings (the same run's pinned cudaMemcpyAsync on the same GPU):
- cuda:0 (a), cuda:0 (b), cuda:0 (c): no raw reference ran (cuda/raw_pinned/copy, the pinned cudaMemcpyAsync that CuPy runs: pip install 'xferbench[cupy]' and sweep with -f cuda too)

### Environment

<details>
<summary>Every recorded field of each file</summary>

| field | a | b | c |
| --- | --- | --- | --- |
| file | a.json | b.json | c.json |
| host | a | b | c |
| device | NVIDIA RTX 4090 | NVIDIA RTX 4090 | NVIDIA RTX 4090 |
| vendor | NVIDIA | NVIDIA | NVIDIA |
| runtime | CUDA 12.4 | CUDA 12.4 | CUDA 12.4 |
| host link | unknown | unknown | unknown |
| driver | 550.54 | 550.54 | 550.54 |
| CUDA (driver) | 12.4 | 12.4 | 12.4 |
| PCIe link | current Gen4 x16 / max Gen4 x16 | current Gen4 x16 / max Gen4 x16 | current Gen4 x16 / max Gen4 x16 |
| NUMA node | 1 | 1 | 1 |
| CPU affinity | process 0-7; GPU's ideal CPUs 0-3 | process 0-7; GPU's ideal CPUs 0-3 | process 0-7; GPU's ideal CPUs 0-3 |
| CPU | Intel Xeon (8 logical CPUs) | Intel Xeon (8 logical CPUs) | Intel Xeon (8 logical CPUs) |
| memory | 64 GiB | 64 GiB | 64 GiB |
| OS | Linux-6.8 | Linux-6.8 | Linux-6.8 |
| Python | 3.12.1 | 3.12.1 | 3.12.1 |
| torch | 2.5.0 (built with CUDA 12.4) | 2.5.0 (built with CUDA 12.4) | 2.6.0 |
| numpy | 2.1.0 | 2.1.0 | 2.1.0 |
| settings | none | none | none |
| xferbench | 0.1.0 | 0.1.0 | — |
| created | 2026-01-01T00:00:00+00:00 | 2026-01-02T00:00:00+00:00 | 2026-01-03T00:00:00+00:00 |
| status | complete | interrupted | running |

</details>

### Reproduce

```
# a: a.json (xferbench 0.1.0, created 2026-01-01T00:00:00+00:00)
xferbench sweep -f torch
```

```
# b: b.json (xferbench 0.1.0, created 2026-01-02T00:00:00+00:00)
xferbench sweep
```

```
# c: c.json (xferbench —, created 2026-01-03T00:00:00+00:00)
# command line not recorded
```

### Per-batch detail

<details>
<summary>torch/pinned/copy@cuda:0 (a): peak 25,000 MB/s @ batch 16</summary>

NVIDIA RTX 4090; host-to-device; 1000x1000 uint8 per item from pinned; timed per-call; clock —; sync —

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 1 | 0.0001667 | 6,000 | 6,000 | 6,000 | 5,983–6,017 | 8 |
| 4 | 0.0001667 | 6,000 | 24,000 | 24,000 | 23,933–24,067 | 8 |
| 16 | 0.00064 | 1,562 | 25,000 | 25,000 | 24,930–25,070 | 8 |

</details>

<details>
<summary>torch/pageable/copy@cuda:0 (a): peak 10,000 MB/s @ batch 4</summary>

NVIDIA RTX 4090; host-to-device; 1000x1000 uint8 per item from numpy; timed per-call; clock —; sync —

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 1 | 0.0003333 | 3,000 | 3,000 | 3,000 | 2,992–3,008 | 8 |
| 4 | 0.0004 | 2,500 | 10,000 | 10,000 | 9,972–10,028 | 8 |

</details>

<details>
<summary>torch/pinned/copy@cuda:0 (b): peak 21,000 MB/s @ batch 64</summary>

NVIDIA RTX 4090; host-to-device; 1000x1000 uint8 per item from pinned; timed per-call; clock —; sync —

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 1 | 0.0001667 | 6,000 | 6,000 | 6,000 | 5,983–6,017 | 8 |
| 4 | error: out of memory | — | — | — | — | — |
| 16 | 0.0008 | 1,250 | 20,000 | 20,000 (busy) | 19,944–20,056 | 8 |
| 64 | 0.003048 | 328 | 21,000 | 21,000 | 20,941–21,059 | 8 |

</details>

<details>
<summary>jax/device_put/copy@cuda:0 (b): peak 9,000 MB/s @ batch 4</summary>

NVIDIA RTX 4090; host-to-device; 1000x1000 uint8 per item from numpy; timed per-call; clock —; sync —

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 4 | 0.0004444 | 2,250 | 9,000 | 9,000 | 8,975–9,025 | 8 |

</details>

<details>
<summary>torch/pinned/copy@cuda:0 (c): peak 30,000 MB/s @ batch 16</summary>

NVIDIA RTX 4090; host-to-device; 1000x1000 uint8 per item from pinned; timed per-call; clock —; sync —

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 1 | 0.0001515 | 6,600 | 6,600 | 6,600 | 6,582–6,619 | 8 |
| 4 | 0.000166 | 6,025 | 24,100 | 24,100 | 24,033–24,168 | 8 |
| 16 | 0.0005333 | 1,875 | 30,000 | 30,000 | 29,916–30,084 | 8 |

</details>

<details>
<summary>torch/pageable/copy@cuda:0 (c): peak 10,000 MB/s @ batch 4</summary>

NVIDIA RTX 4090; host-to-device; 1000x1000 uint8 per item from numpy; timed per-call; clock —; sync —

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 1 | 0.0005 | 2,000 | 2,000 | 2,000 (busy) | 1,994–2,006 | 8 |
| 4 | 0.0004 | 2,500 | 10,000 | 10,000 (busy) | 9,972–10,028 | 8 |

</details>
"""


ONE = r"""
## xferbench report

Host-to-device transfer throughput on NVIDIA RTX 4090: 3 series from 1 result file(s). MB/s is 10^6 bytes of uint8 input per second, from the median time of each batch.

![xferbench plot](../plots/one.png)

### Summary

| series | device | peak MB/s @ batch | vs best of its device | saturates at batch | latency (µs) | asymptotic MB/s | % of link (theoretical) | % of raw ceiling | cliff |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |
| cuda/raw_pinned/copy@cuda:0 | NVIDIA RTX 4090 | 26,500 @ 16 | 1.00× | 4 | 92.3 | 40,390 (poor fit) | 84% of 31.5 GB/s | reference | no |
| torch/pinned/copy/streamed@cuda:0 | NVIDIA RTX 4090 | 25,000 @ 16 | 0.94× | 16 | — (streamed) | 30,314 | 79% of 31.5 GB/s | 94% | no |
| torch/pageable/copy@cuda:0 **FAILED** | NVIDIA RTX 4090 | 10,000 @ 4 | 0.38× | 4 | 311 | 45,000 | 32% of 31.5 GB/s | 38% | no |
| jax/device_put/copy@cuda:0 **no point measured** | cuda:0 | - | - | - | - | - | - | - | - |

Peak and saturation (the smallest batch reaching 95% of the peak) come from the medians; latency and asymptotic MB/s from a least-squares fit of time = latency + bytes / bandwidth.

Link ceilings (per direction):
- cuda:0: PCIe Gen4 x16 theoretical (31.5 GB/s, system maximum)

Raw ceilings (the same run's pinned cudaMemcpyAsync on the same GPU):
- cuda:0: cuda/raw_pinned/copy peaked at 26,500 MB/s @ batch 16

Published figures for the same GPU model (healthy host↔device copies others measured; xferbench's docs/published-figures.md gives each with its source and date):
- cuda/raw_pinned/copy@cuda:0: 26.5 GB/s here, above every published figure; published for RTX 4090: 23.85–26.38 GB/s host to device, 2 sources

### MB/s by batch size

Median MB/s at each batch size, series side by side; (×): the ratio to the first series, the reference, at the same batch; –: not measured at that batch.

| batch size | reference: cuda/raw_pinned/copy@cuda:0 | torch/pinned/copy/streamed@cuda:0 | torch/pageable/copy@cuda:0 |
| ---: | ---: | ---: | ---: |
| 1 | 7,000 | 6,000 (0.86×) | 3,000 (0.43×) |
| 4 | 26,000 | 13,000 (0.50×) | 10,000 (0.38×) |
| 16 | 26,500 | 25,000 (0.94×) | – |

### Notes

- **FAILED** torch/pageable/copy@cuda:0: bytes differ
- torch/pageable/copy@cuda:0: a copy
- **warning** the process may run on CPUs 4-7, outside the GPU's NUMA node 1 (CPUs 0-3); a remote node can cut host-to-device throughput several-fold. Pin it: numactl --cpunodebind=1 --membind=1 xferbench sweep ... (affects cuda/raw_pinned/copy@cuda:0, torch/pinned/copy/streamed@cuda:0, torch/pageable/copy@cuda:0)
- **EMPTY** one.json: jax/device_put/copy@cuda:0 has no measured point (no point was measured); left out of the curves

### Not measured

- jax/pinned/copy@cuda:0: no jax

### Environment

| field | a |
| --- | --- |
| file | one.json |
| host | a |
| device | NVIDIA RTX 4090 |
| vendor | NVIDIA |
| runtime | CUDA 12.4 |
| host link | unknown |
| driver | 550.54 |
| CUDA (driver) | 12.4 |
| PCIe link | current Gen4 x16 / max Gen4 x16 |
| NUMA node | 1 |
| CPU affinity | process 0-7; GPU's ideal CPUs 0-3 |
| CPU | Intel Xeon (8 logical CPUs) |
| memory | 64 GiB |
| OS | Linux-6.8 |
| Python | 3.12.1 |
| torch | 2.5.0 (built with CUDA 12.4) |
| numpy | 2.1.0 |
| settings | GLIBC_TUNABLES=x=1 |
| xferbench | 0.1.0 |
| created | 2026-01-01T00:00:00+00:00 |
| status | complete |

### Reproduce

```
# a: one.json (xferbench 0.1.0, created 2026-01-01T00:00:00+00:00)
GLIBC_TUNABLES=x=1 xferbench sweep
```

### Per-batch detail

<details>
<summary>cuda/raw_pinned/copy@cuda:0: peak 26,500 MB/s @ batch 16</summary>

NVIDIA RTX 4090; host-to-device; 1000x1000 uint8 per item from pinned; timed per-call; clock —; sync —

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 1 | 0.0001429 | 7,000 | 7,000 | 7,000 | 6,980–7,020 | 8 |
| 4 | 0.0001538 | 6,500 | 26,000 | 26,000 | 25,927–26,073 | 8 |
| 16 | 0.0006038 | 1,656 | 26,500 | 26,500 | 26,426–26,574 | 8 |

</details>

<details>
<summary>torch/pinned/copy/streamed@cuda:0: peak 25,000 MB/s @ batch 16</summary>

NVIDIA RTX 4090; host-to-device; 1000x1000 uint8 per item from pinned; timed streamed; clock —; sync —

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 1 | 0.0001667 | 6,000 | 6,000 | 6,000 | 5,983–6,017 | 8 |
| 4 | 0.0003077 | 3,250 | 13,000 | 13,000 | 12,964–13,037 | 8 |
| 16 | 0.00064 | 1,562 | 25,000 | 25,000 | 24,930–25,070 | 8 |

</details>

<details>
<summary>torch/pageable/copy@cuda:0: peak 10,000 MB/s @ batch 4</summary>

NVIDIA RTX 4090; host-to-device; 1000x1000 uint8 per item from numpy; timed per-call; clock —; sync —

| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| 1 | 0.0003333 | 3,000 | 3,000 | 3,000 | 2,992–3,008 | 8 |
| 4 | 0.0004 | 2,500 | 10,000 | 10,000 | 9,972–10,028 | 8 |

</details>
"""


AT_ONCE = r"""
### Every device at once

The same path on every device at the same time (a worker per device, each point started together), beside each device alone in the same run, at the largest batch all of them measured. Overlap: the share of the point's sampling during which every device sampled (-: unknown, as on a simulated link).

`sim/link/copy/2-at-once` at batch 512:

| device | alone MB/s | at once MB/s | ratio to alone | overlap |
| --- | ---: | ---: | ---: | ---: |
| sim:0 | 16,027 | 10,008 | 0.62× | - |
| sim:1 | 16,020 | 10,001 | 0.62× | - |
| **total** | 32,047 | **20,009** | 0.62× | — |

`sim/link/copy/d2h/2-at-once` at batch 512:

| device | alone MB/s | at once MB/s | ratio to alone | overlap |
| --- | ---: | ---: | ---: | ---: |
| sim:0 | 16,027 | 10,008 | 0.62× | - |
| sim:1 | 16,020 | 10,001 | 0.62× | - |
| **total** | 32,047 | **20,009** | 0.62× | — |

`sim/link/copy/bidir/2-at-once` at batch 512:

| device | alone MB/s | at once MB/s | ratio to alone | overlap |
| --- | ---: | ---: | ---: | ---: |
| sim:0 | 32,053 | 20,016 | 0.62× | - |
| sim:1 | 32,040 | 20,003 | 0.62× | - |
| **total** | 64,093 | **40,018** | 0.62× | — |

"""


def test_each_peers_file_says_which_statistic_its_figures_are(tmp_path) -> None:
    """TransferBench's mean of iterations, rocm_bandwidth_test's fastest copy, bandwidthTest's aggregate and
    nvbandwidth's median are no median time of a batch: the opening line names each file's own."""
    import amd_outputs as amd

    from xferbench.reading.peers import read_rocm_bandwidth_test, read_transferbench

    (tmp_path / "tb.txt").write_text(amd.tb_env("1.50") + amd.OLD_HEADER_LINE + amd.tb_old_row(1, 0, 64 * 2**20, "C0", "B00.*", "G0", 1, 26.5) + "\n")
    (tmp_path / "rbt.txt").write_text(amd.rbt(amd.XTX_DEVICES, amd.XTX_UNI, amd.XTX_BI))
    files = {"tb.json": read_transferbench([tmp_path / "tb.txt"]), "rbt.json": read_rocm_bandwidth_test([tmp_path / "rbt.txt"]),
             **{f"{name}.json": select([Path(f"{H200}/run-3/validation/peer-{name}.json")])[0][0].result
                for name in ("bandwidthtest", "nvbandwidth")}}  # fmt: skip
    text = report.render(*picked(files))
    opening = text.split("\n")[2]
    assert "from the median time of each batch" not in opening and "come from the medians" not in text
    assert "tb, as TransferBench printed it: the mean of its timed iterations;" in opening
    assert "rbt, as rocm_bandwidth_test printed it: the fastest of 5 copies;" in opening
    assert "bandwidthtest, as bandwidthTest printed it: one aggregate time over 100 copies;" in opening
    assert opening.endswith("nvbandwidth, as nvbandwidth printed it: the median of 1 sample, each a run of 16 copies between two CUDA events.")
    assert "A peer's peak is the highest figure it printed (each the statistic the opening line names)" in text
    alone = report.render(*picked({"tb.json": files["tb.json"]}))
    assert "per second; each figure as TransferBench printed it: the mean of its timed iterations." in alone.split("\n")[2]
    own = curve("torch", "pinned", {1: 6000.0, 4: 13000.0})
    mixed = report.render(*picked({"own.json": Result(env("a"), {}, "2026-01-01T00:00:00+00:00", [own], "complete"), "tb.json": files["tb.json"]}))
    assert "file by file: own, the median time of each batch; tb, as TransferBench printed it" in mixed
    assert "come from the medians in xferbench's series" in mixed


@pytest.mark.parametrize(("tool", "statistic", "said"), [
    ("nvbandwidth v0.8", "mean", "the mean of 3 samples (-m), each a run of 16 copies"),
    ("rocm_bandwidth_test 2.6.0", "mean", "the mean of 3 copies less the slowest"),
    ("TransferBench 1.66", "mean", "the mean of its timed iterations"),  # rocm_bandwidth_test 2.x's rows: TransferBench's
    ("newtool 1.0", "p99", "as newtool printed it (its p99)"),
    ("newtool", None, "as newtool printed it (its statistic not recorded)"),
])  # fmt: skip
def test_a_peer_figure_is_the_statistic_its_tool_and_recorded_statistic_name(tool: str, statistic: str | None, said: str) -> None:
    params = {"tool": tool, "samples": 3, "copies_per_sample": 16, **({"statistic": statistic} if statistic else {})}
    assert said in report.figure_statistic(Series("rocm_bandwidth_test", "m", "copy", "cuda:0", [1], params=params))
    assert report.figure_statistic(curve("torch", "pinned", {1: 6000.0})) == "the median time of each batch"
