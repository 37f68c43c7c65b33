"""A Grace node (Grace Hopper, Grace Blackwell): its GPU reaches host memory over NVLink-C2C, which NVML's C2C
facts prove, while NVML still reads it a PCIe link. Every table, report, plot and check names the C2C link and
its ceiling, never a PCIe one. End to end: `xferbench sweep` on a simulated Grace node (aarch64, the NVML and
CuPy stand-ins with C2C links) through the real worker into a result file, then read back."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fake_nvml import FakeNVML, FakeNVMLError, NodeNVML
from matplotlib.figure import Figure

from xferbench.core import c2c, environment, vendors
from xferbench.core.environment import link_disagreement, link_readings, pcie_ceiling
from xferbench.core.results import Selected, load
from xferbench.core.telemetry import link_ceiling, link_warnings
from xferbench.health import validation_checks
from xferbench.reading import report
from xferbench.reading.plot import figure

TESTS = Path(__file__).resolve().parent
GRACE_SITE = TESTS / "grace"
GH200 = "NVIDIA GH200 480GB"
UUID = "GPU-01020304-0506-0708-090a-0b0c0d0e0f10"  # fake_cupy's GPU, as NVML writes a UUID
LINKS, LINK_MBPS = 10, 45_000  # ten links at 45,000 MB/s: NVIDIA's 450 GB/s per direction

CUPY_SHIM = f"""import sys
sys.path.insert(0, {str(TESTS)!r})
import fake_cupy
fake_cupy.PROPERTIES["name"] = {GH200.encode()!r}
sys.modules["cupy"] = fake_cupy
"""
NVML_SHIM = f"""import sys
from types import SimpleNamespace
sys.path.insert(0, {str(TESTS)!r})
from fake_nvml import NodeNVML


class GraceGPU(NodeNVML):
    # fake_cupy's one GPU as NVML sees it on a Grace node: the same UUID and PCI address, ten C2C links.
    def nvmlDeviceGetUUID(self, handle):
        self._device(handle)
        return {UUID!r}

    def nvmlDeviceGetPciInfo(self, handle):
        self._device(handle)
        return SimpleNamespace(busId=b"00000000:01:00.0")


gpu = GraceGPU("grace", 1, {GH200!r}, c2c_links={LINKS})
gpu.gen = 5  # NVML's PCIe reading on a Grace node: Gen5 x16, which is not the host link
sys.modules[__name__] = gpu
"""


def c2c_device(links: int | None = LINKS, active: int | None = None, name: str = GH200) -> dict[str, Any]:
    """A device entry as capture() writes it on a Grace node: NVML's facts, C2C among them, from the stand-in."""
    fake = FakeNVML(gen=5, gen_max=5, c2c_links=links, c2c_active=active, gpus=1)
    facts = c2c.read_c2c(fake, 0)
    return {"id": "cuda:0", "kind": "cuda", "name": name, "nvml": {"name": name, "pcie_gen_max": 5, "pcie_width_max": 16,
                                                                   "pcie_gen_current": 5, "pcie_width_current": 16, "c2c": facts}}  # fmt: skip


# The stand-in, as strict as pynvml over the real NVML


def test_the_nvml_stand_in_answers_c2c_as_the_real_binding() -> None:
    """nvmlDeviceGetC2cModeInfoV: Not Supported without C2C; field values per field with their own nvmlReturn,
    links scoped by index, a link it does not have refused (Invalid Argument), a malformed field refused by ctypes."""
    pcie = FakeNVML(gpus=1)
    with pytest.raises(FakeNVMLError, match="Not Supported"):
        pcie.nvmlDeviceGetC2cModeInfoV(0)
    (count,) = pcie.nvmlDeviceGetFieldValues(0, [pcie.NVML_FI_DEV_C2C_LINK_COUNT])
    assert count.nvmlReturn == pcie.NVML_ERROR_NOT_SUPPORTED
    grace = FakeNVML(gpus=1, c2c_links=2, c2c_active=1, c2c_link_mbps=45_000)
    assert grace.nvmlDeviceGetC2cModeInfoV(0).isC2cEnabled == 1
    values = grace.nvmlDeviceGetFieldValues(0, [grace.NVML_FI_DEV_C2C_LINK_COUNT, (grace.NVML_FI_DEV_C2C_LINK_GET_STATUS, 0),
                                                (grace.NVML_FI_DEV_C2C_LINK_GET_STATUS, 1), (grace.NVML_FI_DEV_C2C_LINK_GET_MAX_BW, 0),
                                                (grace.NVML_FI_DEV_C2C_LINK_GET_STATUS, 2)])  # fmt: skip
    assert [(v.nvmlReturn, v.value.uiVal) for v in values] == [(0, 2), (0, 1), (0, 0), (0, 45_000), (2, None)]
    assert [v.scopeId for v in values] == [0, 0, 1, 0, 2]
    with pytest.raises(TypeError):
        grace.nvmlDeviceGetFieldValues(0, ["170"])
    with pytest.raises(FakeNVMLError, match="Invalid Argument"):
        grace.nvmlDeviceGetC2cModeInfoV(1)  # no such GPU


def test_read_c2c_records_the_links_and_what_nvml_said_without_them() -> None:
    facts = c2c.read_c2c(FakeNVML(gpus=1, c2c_links=3, c2c_active=2, c2c_link_mbps=45_000), 0)
    assert facts == {"enabled": True, "mode_error": None, "link_count": 3,
                     "links": [{"index": 0, "active": True, "max_mbps": 45_000}, {"index": 1, "active": True, "max_mbps": 45_000},
                               {"index": 2, "active": False, "max_mbps": None}]}  # fmt: skip
    none = c2c.read_c2c(FakeNVML(gpus=1), 0)
    assert none == {"enabled": None, "mode_error": "Not Supported", "link_count": None, "links": []}
    old = SimpleNamespace(nvmlDeviceGetFieldValues=FakeNVML(gpus=1).nvmlDeviceGetFieldValues)  # a binding without the call
    assert c2c.read_c2c(old, 0)["mode_error"] == "this nvidia-ml-py has no nvmlDeviceGetC2cModeInfoV"


# The link and its ceiling


def test_a_c2c_device_gets_the_c2c_ceiling_never_its_pcie_reading() -> None:
    """NVML reads Gen5 x16 on a Grace node too: the ceiling is the active C2C links' sum, no PCIe reading is used."""
    device = c2c_device()
    assert pcie_ceiling(device) == (450.0, "NVLink-C2C theoretical (450.0 GB/s, NVML: 10 active links × 45,000 MB/s)")
    assert link_readings(device) == []
    assert link_disagreement(300_000.0, device) is None  # above Gen5 x16's 63 GB/s, and no fault of the link facts
    half = c2c_device(active=5)
    assert pcie_ceiling(half)[0] == 225.0  # type: ignore[index]
    pcie = {**device, "nvml": {**device["nvml"], "c2c": c2c.read_c2c(FakeNVML(gpus=1), 0)}, "name": "NVIDIA H100 80GB HBM3"}
    assert pcie_ceiling(pcie)[0] == 63.0  # type: ignore[index]


def test_a_grace_gpu_from_before_the_c2c_facts_has_no_pcie_ceiling() -> None:
    """A GH200 file without C2C facts: its link is NVLink-C2C by its name, its ceiling unknown and said so."""
    device = c2c_device()
    del device["nvml"]["c2c"]
    series = SimpleNamespace(device="cuda:0", transfer="host-to-device", link={}, params={})
    env = {"devices": [device], "machine": "aarch64"}
    assert pcie_ceiling(device) is None
    assert link_ceiling(series, env) == (None, "unknown: NVLink-C2C (a Grace node), and NVML gave no C2C link speed;"
                                               " its PCIe readings are not the host link")  # fmt: skip


def test_c2c_enabled_alone_proves_the_link_and_no_c2c_proves_pcie() -> None:
    """NVML's mode says C2C where its link fields are unreadable (an old binding): C2C, with no ceiling; Not
    Supported, or C2C disabled, says PCIe; an error of another kind says nothing."""
    def device(**facts: Any) -> dict[str, Any]:
        return {"kind": "cuda", "nvml": {"c2c": {"enabled": None, "mode_error": None, "link_count": None, "links": [], **facts}}}

    assert c2c.nvml_link(device(enabled=True)) == "NVLink-C2C" and pcie_ceiling(device(enabled=True)) is None
    assert c2c.nvml_link(device(mode_error="Not Supported")) == "PCIe"
    assert c2c.nvml_link(device(enabled=False)) == "PCIe"
    assert c2c.nvml_link(device(link_count=0)) == "PCIe"
    assert c2c.nvml_link(device(mode_error="Function Not Found")) is None
    assert c2c.nvml_link({"kind": "cuda", "nvml": {}}) is None


# Vendor, runtime and host link: recorded, else derived from what a file recorded, else unknown


@pytest.mark.parametrize(("device", "machine", "expected"), [
    (c2c_device(), "aarch64", ("NVIDIA", None, "NVLink-C2C")),
    ({**c2c_device(), "cuda_driver": "12.8"}, "aarch64", ("NVIDIA", "CUDA 12.8", "NVLink-C2C")),
    # a GH200 whose driver answers no C2C query: its name still says C2C (it is sold only beside a Grace CPU)
    (c2c_device(links=None), "aarch64", ("NVIDIA", None, "NVLink-C2C")),
    # NVML says no C2C: PCIe, whatever the machine (a PCIe GPU beside a Grace CPU, or an Ampere Altra)
    (c2c_device(links=None, name="NVIDIA H100 PCIe"), "aarch64", ("NVIDIA", None, "PCIe")),
    # a file from before C2C facts: an x86 host has no C2C; an aarch64 one may, so unknown, unless its name says Grace
    ({"id": "cuda:0", "kind": "cuda", "name": "NVIDIA H100 80GB HBM3", "nvml": {"pcie_gen_max": 5}}, "x86_64", ("NVIDIA", None, "PCIe")),
    ({"id": "cuda:0", "kind": "cuda", "name": "NVIDIA H100 80GB HBM3", "nvml": {"pcie_gen_max": 5}}, "aarch64", ("NVIDIA", None, None)),
    ({"id": "cuda:0", "kind": "cuda", "name": GH200, "nvml": {"pcie_gen_max": 5}}, "aarch64", ("NVIDIA", None, "NVLink-C2C")),
    ({"id": "cuda:0", "kind": "cuda", "name": "NVIDIA H200"}, None, ("NVIDIA", None, None)),  # H200 is no GH200
    # PyTorch on ROCm names its GPU cuda:0: only the name says AMD, and nothing says the link
    ({"id": "cuda:0", "kind": "cuda", "name": "AMD Instinct MI300X"}, "x86_64", ("AMD", None, None)),
    ({"id": "cuda:0", "kind": "cuda", "name": "AMD Instinct MI300X", "vendor": "AMD", "runtime": "ROCm 6.4.1", "host_link": "PCIe"},
     "x86_64", ("AMD", "ROCm 6.4.1", "PCIe")),
    ({"id": "mps", "kind": "mps", "name": "Apple M1 (8-core GPU)", "unified_memory": True}, "arm64", ("Apple", "Metal", "unified memory")),
    ({"id": "mps", "kind": "mps", "name": "the GPU of an Intel Mac (MPS)", "unified_memory": False}, "x86_64", ("Apple", "Metal", None)),
    ({"id": "mps", "kind": "mps", "name": "Apple M1 GPU"}, "arm64", ("Apple", "Metal", "unified memory")),  # before unified_memory
    ({"id": "cuda:0", "kind": "cuda", "name": "Fake GPU"}, "x86_64", (None, None, None)),  # no NVML, no vendor's word: unknown
    ({"id": "cpu", "kind": "cpu", "name": "AMD EPYC"}, "x86_64", (None, None, None)),  # a CPU is no AMD GPU
])  # fmt: skip
def test_vendor_runtime_and_link_are_recorded_derived_or_unknown(device: dict[str, Any], machine: str | None,
                                                                  expected: tuple[str | None, ...]) -> None:  # fmt: skip
    found = vendors.describe(device, {"machine": machine})
    assert (found["vendor"], found["runtime"], found["host_link"]) == expected


def test_capture_labels_a_grace_node_and_keeps_what_a_backend_set(monkeypatch) -> None:
    """environment.capture on aarch64 with a C2C GPU: its entry says NVIDIA, CUDA at the driver's version and
    NVLink-C2C; an entry a backend labelled keeps its own words."""
    fake = NodeNVML("grace", 1, GH200, c2c_links=LINKS)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(environment.platform, "machine", lambda: "aarch64")
    cuda = {"devices": [{"id": "cuda:0", "kind": "cuda", "name": GH200, "uuid": fake.nvmlDeviceGetUUID(0)},
                        {"id": "cuda:1", "kind": "cuda", "name": "AMD Instinct MI300X", "vendor": "AMD", "runtime": "ROCm 6.4.1",
                         "host_link": "PCIe"}]}  # fmt: skip
    env = environment.capture({"torch": cuda})
    grace = environment.device_entry(env, "cuda:0")
    assert (grace["vendor"], grace["runtime"], grace["host_link"]) == ("NVIDIA", "CUDA 12.4", "NVLink-C2C")
    assert grace["nvml"]["c2c"]["link_count"] == LINKS and all(link["active"] for link in grace["nvml"]["c2c"]["links"])
    amd = environment.device_entry(env, "cuda:1")
    assert (amd["vendor"], amd["runtime"], amd["host_link"]) == ("AMD", "ROCm 6.4.1", "PCIe")
    assert "vendor" not in environment.device_entry(env, "cpu")


def test_a_grace_gpu_torch_described_is_still_labelled_by_nvmls_c2c_facts(monkeypatch) -> None:
    """PyTorch cannot tell a Grace node's link from PCIe: the entry its backend writes names the vendor only, so
    the capture's NVML facts decide the runtime and the NVLink-C2C link."""
    from test_pytorch_rules import CudaTorch

    from xferbench.measuring.backends import pytorch

    fake = NodeNVML("grace", 1, GH200, c2c_links=LINKS)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(environment.platform, "machine", lambda: "aarch64")
    torch = CudaTorch(gpus=1, mps=False)
    torch.props[0].uuid = fake.nvmlDeviceGetUUID(0)
    monkeypatch.setattr(pytorch, "_torch", lambda: torch)
    env = environment.capture({"torch": pytorch.TorchBackend().environment()})
    gpu = environment.device_entry(env, "cuda:0")
    assert (gpu["vendor"], gpu["runtime"], gpu["host_link"]) == ("NVIDIA", "CUDA 12.4", "NVLink-C2C")


def test_capture_labels_an_apple_gpu_metal_and_unified_memory(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", FakeNVML(init_error=FakeNVMLError("Driver Not Loaded")))
    env = environment.capture({"torch": {"devices": [{"id": "mps", "kind": "mps", "name": "mps"}]}})
    apple = environment.device_entry(env, "mps")
    assert (apple["vendor"], apple["runtime"], apple["host_link"]) == ("Apple", "Metal", "unified memory")


# End to end: a sweep on a simulated Grace node, read back


@pytest.fixture(scope="module")
def grace_run(tmp_path_factory) -> tuple[Path, str]:
    """`xferbench sweep -f cuda` run as on a Grace node: the result file and what the sweep printed."""
    folder = tmp_path_factory.mktemp("grace")
    shims = folder / "shims"
    (shims / "cupy").mkdir(parents=True)
    (shims / "cupy" / "__init__.py").write_text(CUPY_SHIM)
    (shims / "pynvml.py").write_text(NVML_SHIM)
    site = os.pathsep.join(p for p in sys.path if p.endswith("site-packages"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(GRACE_SITE), str(shims), site]), "COLUMNS": "200", "XFERBENCH_HOST": "grace"}
    out = folder / "grace.json"
    command = [sys.executable, "-m", "xferbench", "sweep", "-f", "cuda", "-m", "raw_pinned", "--batch-sizes", "1,4",
               "--warmup-calls", "1", "--warmup-time", "0", "--min-samples", "3", "--min-time", "0", "--max-time", "1", "-o", str(out)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, cwd=folder)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out, done.stdout


@pytest.mark.slow
def test_a_grace_sweep_records_the_c2c_link_and_reads_it_back_everywhere(grace_run) -> None:
    path, printed = grace_run
    result = load(path)
    assert (result.environment["machine"], result.environment["cpu"]) == ("aarch64", "Arm Neoverse-V2")
    device = environment.device_entry(result.environment, "cuda:0")
    assert (device["name"], device["vendor"], device["runtime"], device["host_link"]) == (GH200, "NVIDIA", "CUDA 12.4", "NVLink-C2C")
    ceiling = "NVLink-C2C theoretical (450.0 GB/s, NVML: 10 active links × 45,000 MB/s)"
    # what the sweep printed: the share of the C2C link, no PCIe link warning
    said = " ".join(printed.split())  # as one line, whatever the terminal's width
    assert re.search(r"\d+% of the NVLink-C2C link's 450\.0 GB/s \(theoretical\)", said) and "PCIe" not in said
    assert "published for GH200: 346 GB/s host to device" in said
    series = [s for s in result.series if s.ok_points()]
    assert series and not [w for s in series for w in link_warnings(s, result.environment) if "PCIe" in w or "link" in w]
    # the report: its ceiling, the link rows, no PCIe ceiling
    text = report.render([Selected(path, result, s) for s in series], [], title="grace")
    assert ceiling in text and "PCIe Gen" not in text.replace("NVML reads current Gen5 x16 / max Gen5 x16", "")
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert rows["host link"] == "| host link | NVLink-C2C |" and rows["vendor"] == "| vendor | NVIDIA |"
    assert "NVML's PCIe reading (not the host link: NVLink-C2C): Gen5 x16 under load" in text and "PCIe link:" not in text
    assert rows["PCIe link"].startswith("| PCIe link | not the host link (NVLink-C2C); NVML reads current Gen")
    # the plot: one ceiling, the C2C link's
    drawn: Figure = figure([Selected(path, result, s) for s in series])
    labels = [line.get_label() for line in drawn.axes[0].get_lines() if line.get_linestyle() == "--"]
    assert labels == [ceiling]
    # validation: the raw copy is judged against the C2C ceiling, and the PCIe link checks do not apply
    results = {"grace.json": result}
    assert "of NVLink-C2C theoretical (450.0 GB/s" in validation_checks.raw_ceiling_check(results).figure
    link = validation_checks.link_check(results)
    # checks that do not apply there are shown, not judged: they cannot keep a Grace node from passing
    assert (link.status, link.figure) == ("info", "does not apply: the host link is NVLink-C2C (a Grace node); NVML's PCIe generation"
                                                  " and width are not the host link")  # fmt: skip
    received = validation_checks.bytes_check(results)
    assert received.status == "info" and "NVML's PCIe byte count does not count its transfers" in received.figure
    assert validation_checks.passed([link, received, validation_checks.raw_ceiling_check(results)]) == \
        (validation_checks.raw_ceiling_check(results).status == "pass")


@pytest.mark.slow
def test_the_verdict_page_names_the_c2c_link_and_its_ceiling_not_a_pcie_link(grace_run, tmp_path) -> None:
    """validate's verdict.md, made from the Grace sweep's file: its facts table gives the host link as the checks
    judge it, NVLink-C2C at 450 GB/s, and no PCIe link maximum (NVML's Gen5 x16 reading is not the host link)."""
    from xferbench.health import validate_command

    path, _ = grace_run
    files = {"link": load(path)}
    checks = validate_command.checks_for(files, {}, "cuda:0")
    page = validate_command.verdict_page(validate_command.Validation(tmp_path), files, {}, checks, [])
    facts = page.split("| | |", 1)[1].split("## Checks", 1)[0]  # the facts table
    assert "| host link | NVLink-C2C theoretical (450.0 GB/s, NVML: 10 active links × 45,000 MB/s) |" in facts
    assert "PCIe" not in facts and "Gen5" not in facts


@pytest.mark.slow
def test_the_sweep_result_is_shaped_as_capture_writes_it(grace_run) -> None:
    """The file's GPU entry holds NVML's C2C facts as read_c2c records them, beside its PCIe readings."""
    path, _ = grace_run
    gpu = json.loads(path.read_text())["environment"]["nvml"]["gpus"][0]
    assert gpu["pcie_gen_max"] == 5 and gpu["c2c"]["enabled"] is True and len(gpu["c2c"]["links"]) == LINKS


def test_check_and_fleet_judge_a_grace_node_by_its_c2c_link(monkeypatch, tmp_path) -> None:
    """xferbench check: the link's share is of the C2C ceiling (300 GB/s is 67% of 450: below 75%, a FAIL, where
    against Gen5 x16 it would read 476% and pass); its PCIe state is not judged. fleet names the link NVLink-C2C."""
    from nodes import node, write

    from xferbench.health import check, fleet

    monkeypatch.setattr(environment.platform, "machine", lambda: "aarch64")
    result = node("gh200-box", raw_gbps=300.0, name=GH200, c2c_links=LINKS)
    monkeypatch.undo()
    (verdict,) = check.verdicts(result)
    found = {f.name: f for f in verdict.findings}
    assert found["link"].status == "fail" and "of NVLink-C2C theoretical (450.0 GB/s" in found["link"].figure
    assert found["link state"].status == "n/a" and "NVLink-C2C" in found["link state"].figure
    rows = fleet.rows_of(write(result, tmp_path), result)
    assert {(row.link, row.link_max) for row in rows} == {("NVLink-C2C", "NVLink-C2C")}
