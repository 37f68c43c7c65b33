"""Reports across GPU vendors and host links: an AMD MI300X under ROCm (whose PyTorch names it cuda:0) against
an NVIDIA H100, both over PCIe, pair as like copies; a Grace node's GH200 over NVLink-C2C against the H100 does
not, nor does an Apple GPU's copy within unified memory against either. "What differs" names vendor, runtime
and host link. The files are made as a sweep writes them (nodes.node: environment.capture against the NVML
stand-in), the MI300X's by editing only what its machine would say differently: its GPU's entry, and NVML,
which sees no NVIDIA GPU there."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from nodes import node, series, write
from test_compare_devices import M1, M1_ENV
from typer.testing import CliRunner

from xferbench.cli import app
from xferbench.core import environment
from xferbench.core.results import Result, load
from xferbench.reading import compare as comparing
from xferbench.reading.pairs import alike, differences, pair

MI300X, GH200 = "AMD Instinct MI300X", "NVIDIA GH200 480GB"
PCIE_COPY = "a host-to-device transfer over PCIe"
C2C_COPY = "a host-to-device transfer over NVLink-C2C (a Grace node)"
MPS_COPY = "a copy within unified memory (Apple GPU, MPS)"


def h100(folder: Path) -> Path:
    return write(node("h100-box", raw_gbps=55.0), folder)


def mi300x(folder: Path, recorded: bool = True) -> Path:
    """An MI300X node's torch run: PyTorch on ROCm keeps the cuda:0 name; NVML finds no driver; the GPU's entry
    says AMD, ROCm and PCIe where the ROCm backend records them (recorded), else only what torch named it."""
    result = node("mi300x-box", raw_gbps=50.0, name=MI300X)
    result.series = [s for s in result.series if s.framework == "torch"]  # CuPy's raw CUDA copy does not run there
    env = result.environment
    entry = environment.device_entry(env, "cuda:0")
    entry.clear()
    entry.update({"id": "cuda:0", "kind": "cuda", "name": MI300X, "memory_bytes": 192 * 2**30})
    if recorded:
        entry.update({"vendor": "AMD", "runtime": "ROCm 6.4.1", "host_link": "PCIe"})
    env["nvml"] = {"available": False, "reason": "NVML could not start: Driver Not Loaded"}
    env.pop("nvml_after", None)
    return write(result, folder)


def grace(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A GH200 node: captured on aarch64 with NVML's C2C facts (ten links of 45,000 MB/s)."""
    monkeypatch.setattr(environment.platform, "machine", lambda: "aarch64")
    result = node("gh200-box", raw_gbps=340.0, name=GH200, c2c_links=10)
    monkeypatch.undo()
    return write(result, folder)


def m1(folder: Path) -> Path:
    """An M1's torch run on mps, of the same path (torch pinned_into, per call) as the nodes'."""
    mps = dataclasses.replace(series("torch", "pinned_into", 60.0, device="mps", method="per-call"), device_name=M1,
                              params={"unified_memory": True})  # fmt: skip
    return write(Result(M1_ENV, {}, "2026-11-23T00:00:00+00:00", [mps], "complete"), folder, "m1-air")


def paired(*paths: Path) -> list[Any]:
    results = [load(p) for p in paths]
    return [p for p in pair([r.series for r in results], [r.environment for r in results]) if p.paired]


def torch_pair(*paths: Path) -> Any:
    return next(p for p in paired(*paths) if p.name.startswith("torch/pinned_into"))


def report_text(*paths: Path) -> str:
    shown = CliRunner().invoke(app, ["report", *map(str, paths)])
    assert shown.exit_code == 0, shown.output
    return shown.stdout


def what_differs(text: str) -> dict[str, list[str]]:
    """The rows of the report's What differs table, by field."""
    block = text.split("### What differs", 1)[1].split("###", 1)[0]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in block.splitlines() if line.startswith("| ")]
    return {row[0]: row[1:] for row in rows[2:]}


def test_an_mi300x_against_an_h100_pairs_as_like_copies_and_names_vendor_and_runtime(tmp_path) -> None:
    nvidia, amd = h100(tmp_path), mi300x(tmp_path)
    found = torch_pair(nvidia, amd)
    assert found.unlike() == [] and [found.kind(0), found.kind(1)] == [PCIE_COPY, PCIE_COPY]
    text = report_text(nvidia, amd)
    differs = what_differs(text)
    assert differs["vendor"] == ["NVIDIA", "AMD"] and differs["runtime"] == ["CUDA 12.4", "ROCm 6.4.1"]
    assert "host link" not in differs  # PCIe both
    assert "unlike copies" not in text
    assert comparing.compare(load(nvidia), load(amd)).unlike == {}


def test_an_mi300x_file_that_records_no_vendor_fields_says_unknown_not_pcie(tmp_path) -> None:
    """Without the ROCm backend's fields, the name says AMD; nothing says the runtime or the link: unknown, and a
    link not known makes no pair unlike."""
    nvidia, amd = h100(tmp_path), mi300x(tmp_path, recorded=False)
    differs = what_differs(report_text(nvidia, amd))
    assert differs["vendor"] == ["NVIDIA", "AMD"] and differs["runtime"] == ["CUDA 12.4", "unknown"]
    assert differs["host link"] == ["PCIe", "unknown"]
    assert torch_pair(nvidia, amd).unlike() == []


def test_a_grace_node_against_a_pcie_h100_is_no_like_copy(tmp_path, monkeypatch) -> None:
    nvidia, gh200 = h100(tmp_path), grace(tmp_path, monkeypatch)
    assert environment.device_entry(load(gh200).environment, "cuda:0")["host_link"] == "NVLink-C2C"
    for found in paired(nvidia, gh200):  # the raw copy and torch's alike
        assert found.unlike() == [PCIE_COPY, C2C_COPY]
    text = report_text(nvidia, gh200)
    assert what_differs(text)["host link"] == ["PCIe", "NVLink-C2C"]
    assert "vendor" not in what_differs(text)  # NVIDIA both
    assert f"unlike copies (h100-box: {PCIE_COPY}; gh200-box: {C2C_COPY})" in text
    assert "NVLink-C2C theoretical (450.0 GB/s, NVML: 10 active links × 45,000 MB/s)" in text
    compared = comparing.compare(load(nvidia), load(gh200))
    assert list(compared.unlike.values()) == [[PCIE_COPY, C2C_COPY]] * 2 and compared.rows and all(r.unlike for r in compared.rows)


def test_an_apple_gpu_against_either_stays_unlike_copies(tmp_path) -> None:
    apple = m1(tmp_path)
    for other, copy in ((h100(tmp_path), PCIE_COPY), (mi300x(tmp_path), PCIE_COPY)):
        found = torch_pair(other, apple)
        assert found.unlike() == [copy, MPS_COPY]
        differs = what_differs(report_text(other, apple))
        assert differs["host link"][1] == "unified memory" and differs["runtime"][1] == "Metal"
        assert differs["vendor"][1] == "Apple"


def test_like_copies_pair_before_unlike_ones() -> None:
    """LIKENESS: a series takes the counterpart making its own copy before one on its own device id making another."""
    h100_env = {"machine": "x86_64", "devices": [{"id": "cuda:0", "kind": "cuda", "name": "NVIDIA H100", "host_link": "PCIe"},
                                                 {"id": "cuda:1", "kind": "cuda", "name": "NVIDIA H100", "host_link": "PCIe"}]}
    mixed_env = {"machine": "aarch64", "devices": [{"id": "cuda:0", "kind": "cuda", "name": GH200, "host_link": "NVLink-C2C"},
                                                   {"id": "cuda:1", "kind": "cuda", "name": "NVIDIA H100 PCIe", "host_link": "PCIe"}]}
    mine = series("torch", "pinned_into", 50.0, device="cuda:0", method="per-call")
    theirs = [series("torch", "pinned_into", 300.0, device="cuda:0", method="per-call"),
              series("torch", "pinned_into", 50.0, device="cuda:1", method="per-call")]  # fmt: skip
    (found, other) = pair([[mine], theirs], [h100_env, mixed_env])
    assert found.members == [mine, theirs[1]] and found.unlike() == []
    assert other.members == [None, theirs[0]]


def test_a_link_not_recorded_is_alike_with_any_but_two_known_links_are_not() -> None:
    unknown = "a host-to-device transfer over the GPU's link (CUDA)"
    assert alike(unknown, PCIE_COPY) and alike(C2C_COPY, unknown) and alike(PCIE_COPY, PCIE_COPY)
    assert not alike(PCIE_COPY, C2C_COPY) and not alike(unknown, MPS_COPY)
    assert not alike("a device-to-host transfer over PCIe", PCIE_COPY)


def test_what_differs_names_vendor_runtime_and_link_in_compare_too(tmp_path, monkeypatch) -> None:
    nvidia, gh200, amd = h100(tmp_path), grace(tmp_path, monkeypatch), mi300x(tmp_path)
    found = {d.field: d.values for d in differences([(load(p), load(p).series) for p in (nvidia, amd)])}
    assert found["vendor"] == ["NVIDIA", "AMD"] and found["runtime"] == ["CUDA 12.4", "ROCm 6.4.1"]
    found = {d.field: d.values for d in differences([(load(p), load(p).series) for p in (nvidia, gh200)])}
    assert found["host link"] == ["PCIe", "NVLink-C2C"] and "runtime" not in found  # CUDA 12.4 both
