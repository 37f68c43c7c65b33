"""The Markdown report: exact figures from built results, valid GFM tables, and a real CPU file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from xferbench.reading import report
from xferbench.measuring.backends import SimLink
from xferbench.core.results import Point, Result, Selection, Series, select
from xferbench.core.spec import SeriesKey
from xferbench.measuring.sweep import SweepConfig, make_plan, new_result, run_plan
from xferbench.core.timing import Samples, TimingConfig

REAL = Path(__file__).resolve().parent.parent / "results" / "cpu-amd-epyc-2core" / "torch-host-copy-seed.json"
SHAPE = (1000, 1000)  # 1 MB per item, so MB/s is batch / time in µs

GPU_ENV: dict[str, Any] = {
    "host": "hostA", "os": "Linux-6.8", "cpu": "Intel Xeon", "cpu_count": 8, "python": "3.12.1",
    "versions": {"xferbench": "0.1.0", "numpy": "2.1.0"},
    "frameworks": {"torch": {"version": "2.5.0+cu124", "cuda": "12.4"}},
    "devices": [
        {"id": "cpu", "kind": "cpu", "name": "Intel Xeon"},
        {"id": "cuda:0", "kind": "cuda", "name": "NVIDIA RTX 4090", "driver": "550.54", "cuda_driver": "12.4",
         "nvml": {"pcie_gen_current": 1, "pcie_width_current": 16, "pcie_gen_max": 4, "pcie_width_max": 16,
                  "numa_node": 0}},
    ],
    "nvml": {"available": True, "driver": "550.54", "cuda_driver": "12.4", "gpus": []},
}  # fmt: skip
CPU_ENV: dict[str, Any] = {
    "host": "hostB", "os": "Linux-6.1", "cpu": "AMD EPYC", "python": "3.11.7", "versions": {"numpy": "2.0.0"},
    "devices": [{"id": "cpu", "kind": "cpu", "name": "AMD EPYC"}], "nvml": {"available": False, "reason": "no driver"},
}  # fmt: skip


def curve(framework: str, mode: str, device: str, mbps_by_batch: dict[int, float], **fields: Any) -> Series:
    """A series whose every point took exactly the time that gives the MB/s asked for."""
    key = SeriesKey(framework, mode, "copy", device, SHAPE)
    series = Series(framework, mode, "copy", device, list(SHAPE), device_name=f"{device} name", **fields)
    for batch, mbps in mbps_by_batch.items():
        spec = key.at(batch)
        series.points.append(Point.measured(spec, Samples([spec.nbytes / (mbps * 1e6)] * 3), warmup_calls=1))
    series.refresh_summary()
    return series


def write(path: Path, environment: dict[str, Any], series: list[Series], argv: list[str] | None = None,
          status: str = "complete") -> Path:  # fmt: skip
    config = {"argv": argv or ["xferbench", "sweep", "--out", path.name]}
    Result(environment, config, "2026-01-02T03:04:05+00:00", series, status, xferbench_version="0.1.0").save(path)
    return path


def gpu_file(tmp_path: Path) -> Path:
    return write(tmp_path / "gpu.json", GPU_ENV, [
        curve("torch", "pinned", "cuda:0", {1: 6300.0, 4: 25200.0, 16: 25000.0}),
        curve("torch", "pageable", "cuda:0", {1: 3000.0, 4: 12600.0, 16: 5000.0}),
        Series("torch", "pinned_into", "copy", "cuda:0", list(SHAPE), status="skipped", reason="needs torch>=9"),
    ])  # fmt: skip


def cpu_file(tmp_path: Path) -> Path:
    return write(tmp_path / "cpu.json", CPU_ENV, [curve("host", "numpy", "cpu", {1: 1000.0, 2: 2000.0}, transfer="host-to-host")])


def render(paths: list[Path], selection: Selection | None = None, **kwargs: Any) -> str:
    picks, warnings = select(paths, selection)
    text = report.render(picks, warnings, selection=selection, **kwargs)
    check_tables(text)
    return text


def cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def check_tables(text: str) -> None:
    """Every GFM table has a header, a separator and rows of the same width."""
    for block in re.findall(r"(?:^\|.*\n)+", text, flags=re.MULTILINE):
        rows = [cells(line) for line in block.splitlines()]
        assert len(rows) >= 2 and all(re.fullmatch(r"-+:?", c) for c in rows[1]), block
        assert {len(r) for r in rows} == {len(rows[0])}, block


def section(text: str, heading: str) -> str:
    return text.split(f"### {heading}\n", 1)[1].split("\n### ", 1)[0]


def summary_rows(text: str) -> dict[str, list[str]]:
    """The summary's rows by series, with the device column at index 1 (a blank where one device for
    every series leaves the column out)."""
    heading = "Summary of each series" if "### Summary of each series" in text else "Summary"
    lines = [line for line in section(text, heading).splitlines() if line.startswith("|")]
    one_device = cells(lines[0])[1] != "device"
    return {row[0]: [row[0], "", *row[1:]] if one_device else row for row in map(cells, lines[2:])}


def test_the_device_is_named_once_when_every_series_shares_it(tmp_path) -> None:
    text = render([gpu_file(tmp_path)])
    header = cells(next(line for line in section(text, "Summary").splitlines() if line.startswith("|")))
    assert "device" not in header and "on cuda:0 name:" in text.split("###", 1)[0]
    other = {"id": "cuda:1", "kind": "cuda", "name": "NVIDIA RTX 4090"}
    two = write(tmp_path / "two.json", {**GPU_ENV, "devices": [*GPU_ENV["devices"], other]},
                [curve("torch", "pinned", "cuda:0", {4: 25200.0}), curve("torch", "pinned", "cuda:1", {4: 20000.0})])  # fmt: skip
    header = cells(next(line for line in section(render([two]), "Summary").splitlines() if line.startswith("|")))
    assert header[1] == "device"


def test_link_ceiling_uses_the_max_pcie_link_and_says_so(tmp_path) -> None:
    text = render([gpu_file(tmp_path)])
    rows = summary_rows(text)
    assert rows["torch/pinned/copy@cuda:0"][7] == "80% of 31.5 GB/s"  # 25,200 / 31,500
    assert rows["torch/pageable/copy@cuda:0"][7] == "40% of 31.5 GB/s"
    assert "cuda:0: PCIe Gen4 x16 theoretical (31.5 GB/s, system maximum); read Gen1 x16 before the run" in text
    assert "| PCIe link | current Gen1 x16 / max Gen4 x16 |" in text
    assert "| driver | 550.54 |" in text and "| NUMA node | 0 |" in text
    assert report.ceiling_gbps(GPU_ENV["devices"][1]) == (31.5, "PCIe Gen4 x16 theoretical (31.5 GB/s, system maximum); read Gen1 x16 before the run")


def test_cuda_device_without_nvml_has_no_invented_link(tmp_path) -> None:
    device = {k: v for k, v in GPU_ENV["devices"][1].items() if k not in ("nvml", "driver", "cuda_driver")}
    env = {**GPU_ENV, "devices": [device], "nvml": {"available": False, "reason": "nvidia-ml-py is not installed"}}
    text = render([write(tmp_path / "g.json", env, [curve("torch", "pinned", "cuda:0", {1: 1.0})])])
    assert summary_rows(text)["torch/pinned/copy@cuda:0"][7] == "unknown"
    assert "- cuda:0: unknown: nvidia-ml-py is not installed" in text
    assert "| PCIe link | — |" in text and "| driver | — |" in text and "Gen" not in section(text, "Environment")


def test_summary_has_one_row_per_measured_series(tmp_path) -> None:
    rows = summary_rows(render([gpu_file(tmp_path)]))
    assert list(rows) == ["torch/pinned/copy@cuda:0", "torch/pageable/copy@cuda:0"]  # the skipped one is not a row
    pinned, pageable = rows.values()
    assert pinned[2:5] == ["25,200 @ 4", "1.00×", "4"] and pinned[9] == "no"
    assert pageable[2:5] == ["12,600 @ 4", "0.50×", "4"] and pageable[9].startswith("**yes**: <80% of peak from batch 16")


def test_raw_ceiling_is_the_same_runs_raw_pinned_copy_on_the_same_gpu(tmp_path) -> None:
    other_gpu = {"id": "cuda:1", "kind": "cuda", "name": "NVIDIA RTX 4090"}
    env = {**GPU_ENV, "devices": [*GPU_ENV["devices"], other_gpu]}
    path = write(tmp_path / "gpu.json", env, [
        curve("cuda", "raw_pinned", "cuda:0", {1: 7000.0, 4: 26000.0, 16: 26250.0}),
        curve("torch", "pinned", "cuda:0", {1: 6300.0, 4: 25200.0}),
        curve("torch", "pageable", "cuda:0", {1: 3000.0, 4: 13125.0}),
        curve("torch", "pinned", "cuda:1", {1: 6300.0, 4: 25200.0}),  # no raw reference ran on this GPU
    ])  # fmt: skip
    text = render([path])
    rows = summary_rows(text)
    assert [row[8] for row in rows.values()] == ["reference", "96%", "50%", "-"]  # 25,200 and 13,125 / 26,250
    assert rows["torch/pinned/copy@cuda:0"][7] == "80% of 31.5 GB/s"  # the theoretical column stays
    assert "Raw ceilings (the same run's pinned cudaMemcpyAsync on the same GPU):" in text
    assert "- cuda:0: cuda/raw_pinned/copy peaked at 26,250 MB/s @ batch 16" in text
    assert "- cuda:1: no raw reference ran (cuda/raw_pinned/copy" in text


def test_a_raw_reference_that_failed_is_not_called_missing(tmp_path) -> None:
    dead = curve("cuda", "raw_pinned", "cuda:0", {}, status="failed", reason="the cuda worker process was killed by SIGKILL")
    path = write(tmp_path / "gpu.json", GPU_ENV, [dead, curve("torch", "pinned", "cuda:0", {1: 6300.0, 4: 25200.0})])
    text = render([path])
    assert "- cuda:0: cuda/raw_pinned/copy ran but measured nothing: the cuda worker process was killed by SIGKILL" in text
    assert "pip install 'xferbench[cupy]'" not in text


def test_without_a_raw_reference_the_column_says_so(tmp_path) -> None:
    text = render([gpu_file(tmp_path)])
    assert all(row[8] == "-" for row in summary_rows(text).values())
    assert "| % of link (theoretical) | % of raw ceiling | cliff |" in text
    assert "- cuda:0: no raw reference ran" in text


def test_link_and_numa_warnings_are_notes_once_per_gpu(tmp_path) -> None:
    gpu = {**GPU_ENV["devices"][1], "nvml": {**GPU_ENV["devices"][1]["nvml"], "cpu_affinity": list(range(8))}}
    env = {**GPU_ENV, "process_cpus": list(range(16)), "devices": [GPU_ENV["devices"][0], gpu]}
    slow = {"pcie_gen_max": 4, "pcie_width_max": 16, "t_s": [0.0, 0.1], "gen": [1, 1], "width": [16, 16],
            "tx_kbps": [0, 0], "rx_kbps": [10**7, 10**7], "reason": None}  # fmt: skip
    path = write(tmp_path / "gpu.json", env, [curve("torch", "pinned", "cuda:0", {1: 100.0}, link=slow),
                                              curve("torch", "pageable", "cuda:0", {1: 50.0}, link=slow)])  # fmt: skip
    notes = section(render([path]), "Notes")
    assert ("- **warning** the PCIe link ran below its maximum (Gen4 x16) while data moved: down to Gen1 x16 in 2 of 2"
            " samples; check the slot, riser, BIOS link speed and power settings"
            " (affects torch/pinned/copy@cuda:0, torch/pageable/copy@cuda:0)") in notes  # fmt: skip
    assert notes.count("outside the GPU's NUMA node 0 (CPUs 0-7)") == 1
    assert "| CPU affinity | process 0-15; GPU's ideal CPUs 0-7 |" in render([path])


def test_fit_from_a_simulated_link_matches_its_settings(tmp_path) -> None:
    config = SweepConfig(frameworks=("sim",), batch_sizes=(1, 4, 16, 64), sim=SimLink(latency_us=20, bandwidth_gbps=10),
                         timing=TimingConfig(min_samples=3, min_time_s=0, max_samples=3))  # fmt: skip
    plan = make_plan(config)
    try:
        result = run_plan(plan, new_result(plan, {"host": "sim"}, ["xferbench", "sweep", "-f", "sim"]), lambda r: None)
    finally:
        plan.close()
    result.save(tmp_path / "sim.json")
    row = summary_rows(render([tmp_path / "sim.json"]))["sim/link/copy@sim"]
    assert row[5:7] == ["20", "10,000"]  # latency (µs), asymptotic MB/s
    assert row[7].endswith("of 10.0 GB/s")
    assert len(row) == 9 and "raw ceiling" not in render([tmp_path / "sim.json"])  # no CUDA series: no raw column


def test_every_series_has_a_details_block_with_every_point(tmp_path) -> None:
    text = render([gpu_file(tmp_path)])
    blocks = re.findall(r"<details>\n<summary>(.*?)</summary>\n\n.*?\n\n(.*?)\n\n</details>", text, flags=re.DOTALL)
    assert [title for title, _ in blocks] == [
        "torch/pinned/copy@cuda:0: peak 25,200 MB/s @ batch 4",
        "torch/pageable/copy@cuda:0: peak 12,600 MB/s @ batch 4",
    ]
    rows = [cells(line) for line in blocks[0][1].splitlines()]
    assert rows[0] == ["batch size", "batch time (s)", "BPS", "FPS", "MB/S", "MB/s p10–p90", "n"]
    assert rows[3] == ["4", "0.0001587", "6,300", "25,200", "25,200", "25,200–25,200", "3"]
    assert len(rows) == 2 + 3


def test_two_files_give_one_column_each_and_labelled_rows(tmp_path) -> None:
    text = render([gpu_file(tmp_path), cpu_file(tmp_path)])
    environment = [cells(line) for line in section(text, "Environment").splitlines() if line.startswith("|")]
    assert environment[0] == ["field", "hostA", "hostB"]
    by_field = {row[0]: row[1:] for row in environment[2:]}
    assert by_field["device"] == ["NVIDIA RTX 4090", "AMD EPYC"]
    assert by_field["PCIe link"][1] == by_field["driver"][1] == "n/a"  # a CPU has neither: never invented
    assert by_field["torch"] == ["2.5.0+cu124 (built with CUDA 12.4)", "—"]
    assert list(summary_rows(text)) == ["torch/pinned/copy@cuda:0 (hostA)", "torch/pageable/copy@cuda:0 (hostA)",
                                        "host/numpy/copy@cpu (hostB)"]  # fmt: skip
    assert "- cpu (hostB): unknown" in text


def test_same_host_falls_back_to_file_stems(tmp_path) -> None:
    other = write(tmp_path / "other.json", {**CPU_ENV, "host": "hostA"}, [curve("host", "numpy", "cpu", {1: 5.0})])
    text = render([gpu_file(tmp_path), other])
    assert "| field | gpu | other |" in text and "host/numpy/copy@cpu (other)" in text


def test_skipped_and_failed_series_are_listed(tmp_path) -> None:
    failed = curve("torch", "pinned", "cuda:0", {1: 100.0}, status="failed", reason="worker died")
    skipped = Series("host", "numpy", "seed", "cpu", [1], status="skipped", reason="the seed op is not defined for host")
    path = write(tmp_path / "f.json", GPU_ENV, [failed, skipped], status="interrupted")
    text = render([path])
    assert f"- {path}: the sweep was interrupted; curves may be short" in section(text, "Notes")
    assert "torch/pinned/copy@cuda:0 **FAILED**" in summary_rows(text)
    assert "- **FAILED** torch/pinned/copy@cuda:0: worker died" in text
    assert "### Not measured\n\n- host/numpy/seed@cpu: the seed op is not defined for host\n" in text
    assert "Not measured" not in render([path], Selection(frameworks=("torch",)))


def test_a_series_that_failed_before_any_point_is_still_in_the_summary(tmp_path) -> None:
    dead = Series("torch", "pageable", "copy", "cuda:0", list(SHAPE), status="failed", reason="worker died (SIGKILL)")
    dead.points = [Point(1, 10**6, status="skipped", error="its worker died")]
    path = write(tmp_path / "gpu.json", GPU_ENV, [curve("torch", "pinned", "cuda:0", {1: 100.0}), dead])
    text = render([path])
    assert "torch/pageable/copy@cuda:0 **FAILED**" in summary_rows(text)
    assert f"- **FAILED** {path}: torch/pageable/copy@cuda:0 FAILED (worker died (SIGKILL)); left out of the curves" in text


def test_heading_names_what_was_measured_and_takes_a_title(tmp_path) -> None:
    assert "Host-to-host copy throughput (CPU only: no GPU in these series)" in render([cpu_file(tmp_path)])
    text = render([cpu_file(tmp_path)], title="TF eager falls at batch 171")
    assert text.startswith("## TF eager falls at batch 171\n")


def test_reproduce_section_has_version_time_and_exact_command(tmp_path) -> None:
    path = write(tmp_path / "gpu.json", GPU_ENV, [curve("torch", "pinned", "cuda:0", {1: 1.0})],
                 argv=["xferbench", "sweep", "--shape", "3 x 3", "-o", "a|b.json"])  # fmt: skip
    reproduce = section(render([path]), "Reproduce")
    assert f"# hostA: {path} (xferbench 0.1.0, created 2026-01-02T03:04:05+00:00)" in reproduce
    assert "xferbench sweep --shape '3 x 3' -o 'a|b.json'" in reproduce


def test_pipes_in_values_keep_tables_valid(tmp_path) -> None:
    path = write(tmp_path / "p.json", {**CPU_ENV, "host": "a|b", "os": "x\ny"}, [curve("host", "numpy", "cpu", {1: 1.0})])
    text = render([path])  # check_tables would fail on a broken row
    assert "| host | a\\|b |" in text and "| OS | x y |" in text


def test_plot_link_is_relative_to_the_report(tmp_path) -> None:
    path = gpu_file(tmp_path)
    text = render([path], plot=tmp_path / "plots" / "gpu.png", out=tmp_path / "reports" / "gpu.md")
    assert "![xferbench plot](../plots/gpu.png)" in text
    assert "![xferbench plot](<plots/my plot.png>)" in render([path], plot=Path("plots/my plot.png"))
    assert "![" not in render([path])


def test_real_cpu_result_renders_with_an_unknown_ceiling() -> None:
    text = render([REAL])
    rows = summary_rows(text)
    assert list(rows) == ["torch/pageable/copy@cpu", "torch/pageable/seed@cpu", "host/numpy/copy@cpu"]
    assert all(row[7] == "unknown" for row in rows.values())
    assert "- cpu: unknown: a CPU series copies host to host, over no PCIe link" in text
    assert "| PCIe link | n/a |" in text and "torch/pinned/copy@cpu: pinned host memory needs a CUDA device" in text
    assert text.count("<details>") == 3 and "--op copy --op seed" in text


def test_two_files_pair_each_path_with_its_counterpart_and_ratio_to_the_first(tmp_path) -> None:
    faster = curve("torch", "pinned", "cuda:0", {4: 12600.0, 16: 27500.0, 64: 30000.0})
    other = write(tmp_path / "other.json", {**GPU_ENV, "host": "hostC"}, [faster])
    text = render([gpu_file(tmp_path), other], Selection(modes=("pinned",)))
    assert text.startswith("## xferbench report: hostA vs hostC")
    assert text.index("### What differs") < text.index("### Each path") < text.index("### MB/s by batch, path by path") \
        < text.index("### Summary of each series") < text.index("### Environment")  # fmt: skip
    assert cells(next(line for line in section(text, "What differs").splitlines() if line.startswith("| host"))) == \
        ["host", "hostA", "hostC"]  # fmt: skip
    rows = [cells(line) for line in section(text, "MB/s by batch, path by path").splitlines() if line.startswith("|")]
    assert rows[0] == ["path", "batch", "hostA MB/s", "hostC MB/s", "hostC / hostA", "p", "verdict"]
    # three identical samples a side: a ratio, but too few samples for a verdict
    assert [row[1:5] for row in rows[2:]] == [["1", "6,300", "–", "–"], ["4", "25,200", "12,600", "0.50×"],
                                              ["16", "25,000", "27,500", "1.10×"], ["64", "–", "30,000", "–"]]  # fmt: skip
    assert rows[2][0] == "`torch/pinned/copy`" and rows[3][0] == "" and rows[3][6] == "inconclusive"


def test_files_without_a_common_path_stand_side_by_side(tmp_path) -> None:
    other = write(tmp_path / "other.json", {**GPU_ENV, "host": "hostC"}, [curve("jax", "device_put", "cuda:0", {4: 9000.0})])
    text = render([gpu_file(tmp_path), other], Selection(modes=("pinned", "device_put")))
    assert "### Each path" not in text and text.startswith("## xferbench report\n")
    rows = [cells(line) for line in section(text, "MB/s by batch size").splitlines() if line.startswith("|")]
    assert rows[0] == ["batch size", "reference: torch/pinned/copy@cuda:0 (hostA)", "jax/device_put/copy@cuda:0 (hostC)"]
    assert ["4", "25,200", "9,000 (0.36×)"] in rows


def test_series_of_one_file_are_compared_and_a_lone_series_is_not(tmp_path) -> None:
    text = render([gpu_file(tmp_path)])
    rows = [cells(line) for line in section(text, "MB/s by batch size").splitlines() if line.startswith("|")]
    assert rows[0] == ["batch size", "reference: torch/pinned/copy@cuda:0", "torch/pageable/copy@cuda:0"]
    assert rows[4] == ["16", "25,000", "5,000 (0.20×)"]
    assert "MB/s by batch size" not in render([cpu_file(tmp_path)])


@pytest.mark.parametrize("argv", [
    ["/home/someone/.venv/bin/xferbench", "sweep", "-f", "tf"],
    ["xferbench", "sweep", "-f", "tf"],
    ["/usr/lib/python3/site-packages/xferbench/__main__.py", "sweep", "-f", "tf"],
    ["python", "-m", "xferbench", "sweep", "-f", "tf"],
    ["/usr/bin/python3", "-m", "xferbench", "sweep", "-f", "tf"],
    ["C:\\venv\\Scripts\\xferbench.exe", "sweep", "-f", "tf"],
])  # fmt: skip
def test_reproduce_runs_xferbench_whatever_started_the_sweep(argv: list[str]) -> None:
    env = {**CPU_ENV, "settings": {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=65536", "HOME": "/x"}}
    result = Result(env, {"argv": argv}, "2026-01-02T03:04:05+00:00")
    assert report.reproduce(result) == "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=65536 xferbench sweep -f tf"
    assert report.reproduce(Result(CPU_ENV, {"argv": argv}, "")) == "xferbench sweep -f tf"


def test_reproduce_section_of_a_committed_file_names_xferbench_not_a_path() -> None:
    text = render([Path(__file__).resolve().parent.parent / "results" / "sim" / "link-10us-25gbps.json"])
    assert "\nxferbench sweep -f sim --sim-latency-us 10 --sim-bandwidth-gbps 25" in section(text, "Reproduce")
    assert "/bin/xferbench" not in text


def test_a_raw_ceiling_on_cuda_is_placed_among_the_published_figures(tmp_path) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from nodes import node, write

    from xferbench.core.results import select

    picks, empty = select([write(node("a", raw_gbps=57), tmp_path), write(node("b", raw_gbps=55, name="NVIDIA L4"), tmp_path)])
    text = report.render(picks, empty)
    assert "Published figures for the same GPU model" in text
    assert "published for H100: 56.68–57.07 GB/s host to device, 1 source" in text
    assert "no published host-to-device figure for this model (NVIDIA L4)" in text
