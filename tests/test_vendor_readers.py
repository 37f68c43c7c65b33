"""What the readers (report, plot, pairing, the pipeline section) say of runs on an AMD GPU and an Intel XPU:
each file made by `xferbench sweep` in a simulated machine (tests/rocm, tests/xpu), through the worker, then
read back. An AMD GPU's link facts are amdsmi's, kept under NVML's keys; its raw ceiling is HIP's copy."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FAST_ARGS

from xferbench.core.results import Result, Selected, load
from xferbench.core.telemetry import link_ceiling
from xferbench.health import check
from xferbench.reading import pipeline_report, report
from xferbench.reading.pairs import copy_kind
from xferbench.reading.plot import figure

TESTS = Path(__file__).resolve().parent
MI300X = "AMD Instinct MI300X"
GEN5_X16 = "PCIe Gen5 x16 theoretical (63.0 GB/s, system maximum)"


def simulated_sweep(machine: str, folder: Path, *args: str, **settings: str) -> Path:
    """A sweep in a simulated machine (tests/rocm or tests/xpu): the result file it wrote. `settings` sets the
    machine's SIMULATED_<MACHINE>_* variables."""
    out = folder / f"{machine}.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(TESTS / machine), os.environ.get("PYTHONPATH")])),
           "SIMULATED_ROCM_ROOT": str(folder / "root"), "COLUMNS": "120",
           **{f"SIMULATED_{machine.upper()}_{k.upper()}": v for k, v in settings.items()}}  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "xferbench", "sweep", "--batch-sizes", "1,4", "--shape", "16x16x3", *FAST_ARGS, *args,
                           "-o", str(out)], capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stdout[-3000:] + done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def rocm_run(tmp_path_factory) -> Path:
    """An MI300X's run: HIP's raw pinned copy beside torch's pinned_into, host to device."""
    return simulated_sweep("rocm", tmp_path_factory.mktemp("rocm"), "-f", "hip", "-m", "raw_pinned", "-f", "torch", "-m", "pinned_into")


@pytest.fixture(scope="module")
def xpu_run(tmp_path_factory) -> Path:
    """An Intel Arc's run (discrete, on PCIe): torch's pinned_into."""
    return simulated_sweep("xpu", tmp_path_factory.mktemp("xpu"), "-f", "torch", "-m", "pinned_into")


def rows(text: str) -> dict[str, str]:
    """The report's environment table, by field (one file: one value)."""
    block = text.split("### Environment", 1)[1].split("### Reproduce", 1)[0]
    cells = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in block.splitlines() if line.startswith("| ")]
    return {row[0]: row[1] for row in cells[2:]}


@pytest.mark.slow
def test_an_amd_gpus_link_numa_node_and_ceiling_show_in_report_and_plot(rocm_run) -> None:
    """amdsmi's facts stand where NVML's do for an NVIDIA GPU: the report's PCIe link, NUMA node and the GPU's
    CPUs, each series' ceiling, and the plot's ceiling line."""
    result = load(rocm_run)
    picks = [Selected(rocm_run, result, s) for s in result.series]
    text = report.render(picks, [], title="mi300x")
    found = rows(text)
    assert (found["device"], found["vendor"], found["runtime"], found["host link"]) == (MI300X, "AMD", "ROCm 6.3", "PCIe")
    assert found["PCIe link"] == "current Gen4 x16 / max Gen5 x16"
    assert found["NUMA node"] == "0" and found["CPU affinity"].endswith("GPU's ideal CPUs 0-1")
    assert GEN5_X16 in text
    for series in result.series:
        assert link_ceiling(series, result.environment)[0] == 63.0
    drawn = figure(picks)
    assert [line.get_label() for line in drawn.axes[0].get_lines() if line.get_linestyle() == "--"] == [f"{GEN5_X16}; read Gen4 x16 before the run"]


@pytest.mark.slow
def test_check_judges_an_amd_gpu_by_amdsmis_link_and_says_why_where_amdsmi_gave_none(rocm_run, tmp_path) -> None:
    """With amdsmi's link, HIP's raw copy is judged against Gen5 x16; in a VM where amdsmi reads no metrics,
    the link is not judged because amdsmi gave no link, not because NVML (an NVIDIA tool) sampled nothing."""
    (verdict,) = check.verdicts(load(rocm_run))
    found = {f.name: f for f in verdict.findings}
    assert found["link"].status in ("pass", "fail") and f"of {GEN5_X16}" in found["link"].figure
    vm = simulated_sweep("rocm", tmp_path, "-f", "hip", "-m", "raw_pinned", amdsmi="no-metrics")
    (verdict,) = check.verdicts(load(vm))
    found = {f.name: f for f in verdict.findings}
    assert (found["link"].status, found["link"].figure) == ("n/a", "no theoretical rate to judge by: amdsmi gave no PCIe link")


@pytest.mark.slow
def test_the_verdict_page_gives_an_amd_gpus_pcie_link_and_numa_node_from_amdsmi(rocm_run, tmp_path) -> None:
    """validate's verdict.md, made from the MI300X's file: its facts table reads amdsmi's link and node, as an
    NVIDIA GPU's are read from NVML."""
    from xferbench.health import validate_command

    files = {"default": load(rocm_run)}
    checks = validate_command.checks_for(files, {}, "cuda:0")
    page = validate_command.verdict_page(validate_command.Validation(tmp_path), files, {}, checks, [])
    facts = page.split("| | |", 1)[1].split("## Checks", 1)[0]  # the facts table
    assert "| GPU | AMD Instinct MI300X |" in facts and "| PCI address | 0000:c1:00.0 |" in facts
    assert "| PCIe link, maximum | Gen5 x16 |" in facts and "| GPU's NUMA node | 0 |" in facts


@pytest.mark.slow
def test_an_amd_gpus_raw_ceiling_is_named_hips_copy_in_the_report(rocm_run, tmp_path) -> None:
    """The summary names HIP's copy as the raw ceiling it ran; a run without it says HIP's is the one missing, and how to
    get it, not CuPy's cudaMemcpyAsync (which does not run there)."""
    result = load(rocm_run)
    text = report.render([Selected(rocm_run, result, s) for s in result.series], [], title="mi300x")
    assert "Raw ceilings (the same run's pinned hipMemcpyAsync on the same GPU):" in text and "cudaMemcpyAsync" not in text
    assert "- cuda:0: hip/raw_pinned/copy peaked at " in text
    torch_only = simulated_sweep("rocm", tmp_path, "-f", "torch", "-m", "pinned_into")
    result = load(torch_only)
    text = report.render([Selected(torch_only, result, s) for s in result.series], [], title="mi300x")
    assert ("- cuda:0: no raw reference ran (hip/raw_pinned/copy, the pinned hipMemcpyAsync that xferbench calls through HIP's"
            " runtime (libamdhip64, in ROCm or PyTorch for ROCm): sweep with -f hip too)") in text
    assert "cupy" not in text.lower() and "cudaMemcpyAsync" not in text


@pytest.mark.slow
def test_the_pipeline_section_names_hips_copy_as_an_amd_gpus_raw_ceiling(rocm_run) -> None:
    """The pipeline answer reads a DataLoader's figures against the same run's raw copy, and names it: HIP's on an
    AMD GPU. The simulated ROCm PyTorch has no DataLoader, so the run's torch pinned_into series stands as one
    (the same .to(device, non_blocking=True) copy from pinned memory that loader_pin ends in)."""
    result = load(rocm_run)
    result.series = [dataclasses.replace(s, mode="loader_pin") if s.framework == "torch" else s for s in result.series]
    lines = pipeline_report.section([Selected(rocm_run, result, s) for s in result.series])
    answer = next(line for line in lines if line.startswith("- **cuda:0** (AMD Instinct MI300X)"))
    assert "of the raw ceiling (`hip/raw_pinned` at the same batch)" in answer and "cuda/raw_pinned" not in answer


@pytest.mark.slow
def test_rocm_and_xpu_series_read_as_transfers_over_their_link_never_as_cuda(rocm_run, xpu_run, tmp_path) -> None:
    """PyTorch for ROCm records its GPU's link (PCIe), and so does PyTorch on a discrete Intel GPU: their series are
    host-to-device transfers over PCIe, like an NVIDIA GPU's. HIP alone does not say the link (an MI300A shares
    the host's memory): the transfer is over the GPU's link, named as ROCm's, not CUDA's."""
    for path in (rocm_run, xpu_run):
        result = load(path)
        torch = [s for s in result.series if s.framework == "torch"]
        assert torch and {copy_kind(s, result.environment) for s in torch} == {"a host-to-device transfer over PCIe"}
    hip_only = simulated_sweep("rocm", tmp_path, "-f", "hip", "-m", "raw_pinned", "-d", "h2d", "-d", "d2h")
    result = load(hip_only)
    assert [copy_kind(s, result.environment) for s in result.series] == [
        "a host-to-device transfer over the GPU's link (ROCm)", "a device-to-host transfer over the GPU's link (ROCm)"]
