"""An AMD GPU with PyTorch for ROCm, checked on a machine without one: stand-ins as strict as their sources
for PyTorch's ROCm build (fake_gpu_torch), HIP's runtime library (fake_hip) and amdsmi (fake_amdsmi), and
whole sweeps in a simulated ROCm machine (tests/rocm/sitecustomize.py), through the worker into the result file."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fake_amdsmi
from conftest import FAST_ARGS
from fake_gpu_torch import GpuTorch
from fake_hip import FakeHip
from xferbench.core import amdsmi_facts, environment
from xferbench.core.errors import VerificationError
from xferbench.core.spec import SeriesKey

SIMULATED_ROCM = Path(__file__).parent / "rocm"
MI300X = {"bdf": "0000:c1:00.0", "market_name": "AMD Instinct MI300X", "gfx": "gfx942", "numa": 0, "max_speed": 32000, "max_width": 16,
          "speed": 16000, "width": 16}  # fmt: skip
GEN5_X16 = "PCIe Gen5 x16 theoretical (63.0 GB/s, system maximum)"


def simulated_rocm_sweep(tmp_path: Path, *args: str, name: str = "rocm", **settings: str) -> tuple[subprocess.CompletedProcess, dict]:
    """A sweep in the simulated ROCm machine; `settings` sets its SIMULATED_ROCM_* variables."""
    out = tmp_path / f"{name}.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SIMULATED_ROCM), os.environ.get("PYTHONPATH")])),
           "SIMULATED_ROCM_ROOT": str(tmp_path / "root"), "COLUMNS": "120",
           **{f"SIMULATED_ROCM_{k.upper()}": v for k, v in settings.items()}}  # fmt: skip
    r = subprocess.run([sys.executable, "-m", "xferbench", "sweep", "--batch-sizes", "1,4", "--shape", "16x16x3", *FAST_ARGS,
                        *args, "-o", str(out)], capture_output=True, text=True, env=env, timeout=600)  # fmt: skip
    return r, (json.loads(out.read_text()) if out.exists() else {})


@pytest.mark.slow
def test_a_rocm_sweep_names_the_amd_gpu_its_link_and_measures_hip_and_torch_through_the_worker(tmp_path) -> None:
    """--device auto picks the AMD GPU (cuda:0 to PyTorch for ROCm); the raw hipMemcpyAsync ceiling and torch's
    three default paths measure and verify, both ways where they can; the file names the GPU as AMD's, with its architecture, ROCm, and
    the link and NUMA node amdsmi read, and reads each series against that Gen5 x16 link."""
    from xferbench.core.results import load
    from xferbench.core.telemetry import fraction_of_raw, link_ceiling

    r, data = simulated_rocm_sweep(tmp_path, "-f", "hip", "-f", "torch", "-d", "h2d", "-d", "d2h")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    (gpu,) = [d for d in data["environment"]["devices"] if d["id"] != "cpu"]
    assert (gpu["id"], gpu["vendor"], gpu["name"], gpu["gfx_arch"]) == ("cuda:0", "AMD", "AMD Instinct MI300X", "gfx942")
    assert (gpu["runtime"], gpu["host_link"], gpu["hip"]) == ("ROCm 6.3", "PCIe", "6.3.42131")
    link = gpu["amdsmi"]
    assert (link["pcie_gen_max"], link["pcie_width_max"], link["pcie_gen_current"], link["pcie_width_current"]) == (5, 16, 4, 16)
    assert (link["numa_node"], link["numa_node_source"]) == (0, "amdsmi_topo_get_numa_node_number")
    assert data["environment"]["amdsmi"]["available"] is True
    result = load(tmp_path / "rocm.json")
    assert [(s.framework, s.mode, s.direction, s.status) for s in result.series] == [
        ("hip", "raw_pinned", "h2d", "ok"), ("hip", "raw_pinned", "d2h", "ok"), ("hip", "raw_pageable", "h2d", "ok"),
        ("hip", "raw_pageable", "d2h", "ok"), ("torch", "pageable", "h2d", "ok"), ("torch", "pageable", "d2h", "ok"),
        ("torch", "pinned", "h2d", "ok"), ("torch", "pinned", "d2h", "skipped"), ("torch", "pinned_into", "h2d", "ok"),
        ("torch", "pinned_into", "d2h", "ok")]  # fmt: skip
    result.series = [s for s in result.series if s.status == "ok"]
    for series in result.series:
        assert series.device == "cuda:0" and series.device_name == "AMD Instinct MI300X"
        assert series.transfer == {"h2d": "host-to-device", "d2h": "device-to-host"}[series.direction]
        assert all(p.status == "ok" for p in series.points)
        gbps, label = link_ceiling(series, result.environment)
        assert (gbps, label) == (63.0, f"{GEN5_X16}; read Gen4 x16 before the run")
        assert series.numa["node"] == 0  # bound to the GPU's node, as amdsmi named it
        assert series.link["reason"] == "NVML samples NVIDIA GPUs only: this AMD GPU's link was not sampled under load"
    hip, back = result.series[0], result.series[1]
    assert hip.params["call"].startswith("hipMemcpyAsync(HostToDevice)") and hip.device_clock.startswith("hipEvent pair")
    assert back.params["call"].startswith("hipMemcpyAsync(DeviceToHost)") and back.device_clock.startswith("hipEvent pair")
    assert hip.sync == "hipEventSynchronize on the event recorded after each copy"
    torch = result.series[4]
    assert (torch.sync, torch.device_clock) == ("torch.cuda.synchronize (hipDeviceSynchronize)", "torch.cuda.Event (a hipEvent)")
    assert fraction_of_raw(torch, result.series) is not None  # read against the HIP ceiling of the same run
    said = " ".join(r.stdout.split())
    assert said.count("of the raw ceiling (hip/raw_pinned/copy)") == 7  # h2d: hip raw_pageable and torch's 3; d2h: those with a d2h path


@pytest.mark.slow
def test_without_amdsmi_or_its_metrics_the_link_is_unknown_and_says_why(tmp_path) -> None:
    """amdsmi not installed: the GPU is still named and measured, and its link is unknown with what to install;
    amdsmi without the GPU's metrics (a VM): no link, and the NUMA node still read."""
    from xferbench.core.results import load
    from xferbench.core.telemetry import link_ceiling

    r, data = simulated_rocm_sweep(tmp_path, "-f", "hip", "-m", "raw_pinned", amdsmi="absent")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stdout + r.stderr
    (gpu,) = [d for d in data["environment"]["devices"] if d["id"] != "cpu"]
    assert "amdsmi" not in gpu and gpu["amdsmi_reason"].startswith("amdsmi is not installed: it ships with ROCm")
    result = load(tmp_path / "rocm.json")
    assert result.series[0].status == "ok"
    # the kernel's own PCI facts stand in where it has them: this machine has no PCI device at the simulated GPU's address
    assert not os.path.exists("/sys/bus/pci/devices/0000:c1:00.0") and "pci_sysfs" not in gpu
    assert link_ceiling(result.series[0], result.environment) == (None, f"unknown: {gpu['amdsmi_reason']}")
    assert result.series[0].numa["reason"].startswith("not bound: the GPU's NUMA placement is unknown (amdsmi is not installed")

    r, data = simulated_rocm_sweep(tmp_path, "-f", "hip", "-m", "raw_pinned", name="vm", amdsmi="no-metrics")
    assert r.returncode == 0, r.stdout + r.stderr
    (gpu,) = [d for d in data["environment"]["devices"] if d["id"] != "cpu"]
    assert gpu["amdsmi"]["pcie_gen_max"] is None and gpu["amdsmi"]["numa_node"] == 0
    result = load(tmp_path / "vm.json")
    assert link_ceiling(result.series[0], result.environment) == (None, "unknown: amdsmi gave no PCIe link")


# --- HIP's runtime, through the stand-in -------------------------------------------------------------------


@pytest.fixture
def hip(monkeypatch: pytest.MonkeyPatch) -> FakeHip:
    """The raw HIP path's runtime over the stand-in library, declared as the path declares it."""
    from xferbench.measuring.backends import hip as backend

    lib = FakeHip([("AMD Instinct MI300X", "0000:c1:00.0", 2**30)])
    monkeypatch.setattr(backend.ctypes, "CDLL", lambda path: lib)
    runtime = backend.Runtime("/opt/rocm/lib/libamdhip64.so")
    monkeypatch.setattr(backend, "runtime", lambda: runtime)
    return lib


def hip_copy(mode: str = "raw_pinned", direction: str = "h2d") -> Any:
    from xferbench.measuring.backends.hip import HipCopy

    return HipCopy(SeriesKey("hip", mode, "copy", "cuda:0", (8, 8, 3), direction=direction).at(4))


@pytest.mark.parametrize("mode", ["raw_pinned", "raw_pageable"])
@pytest.mark.parametrize("direction", ["h2d", "d2h"])
def test_a_raw_hip_copy_is_timed_between_events_verified_and_freed(hip: FakeHip, mode: str, direction: str) -> None:
    """Each call records, copies and records on the path's own stream, then waits for the end event before
    reading the time; verify reads every byte back; close frees everything it made."""
    copy = hip_copy(mode, direction)
    hip.calls.clear()
    assert copy() >= 0.0
    assert hip.calls == ["hipEventRecord", "hipMemcpyAsync", "hipEventRecord", "hipEventSynchronize", "hipEventElapsedTime"]
    copy.verify()
    assert copy.transfers == 2
    copy.close()
    assert (hip.device_memory, hip.pinned, hip.streams, hip.events) == ({}, {}, {}, {})


@pytest.mark.parametrize("direction, dropped", [("h2d", 1), ("d2h", 2)])
def test_a_hip_copy_that_never_lands_fails_verification(hip: FakeHip, monkeypatch: pytest.MonkeyPatch, direction: str, dropped: int) -> None:
    """A copy the device drops leaves the zeroed buffer: every byte is read back, so it cannot pass."""
    copy = hip_copy(direction=direction)
    real = hip._copy
    # the timed copy only (hipMemcpyAsync, the call being made): verify's own hipMemcpy calls still run
    monkeypatch.setattr(hip, "_copy", lambda dst, src, size, kind: (lambda: None) if kind == dropped and hip.calls[-1] == "hipMemcpyAsync"
                        else real(dst, src, size, kind))  # fmt: skip
    with pytest.raises(VerificationError, match="bytes differ from the source"):
        copy.verify()
    copy.close()


def test_the_hip_stand_in_refuses_what_hip_and_ctypes_refuse(hip: FakeHip) -> None:
    """Undeclared or misdeclared functions, unknown symbols, wrong argument types, a copy whose kind does not
    match its pointers, and an elapsed time before the end event ran."""
    raw = FakeHip([("AMD Instinct MI300X", "0000:c1:00.0", 2**30)])
    with pytest.raises(AssertionError, match="hip_runtime_api.h declares"):
        raw.hipSetDevice(0)  # no argtypes: real ctypes would pass it as a C int, pointers truncated
    raw.hipMalloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]  # not the header's void**
    with pytest.raises(AssertionError, match="hipMalloc called with argtypes"):
        raw.hipMalloc(None, 1)
    with pytest.raises(AttributeError, match="undefined symbol: hipNoSuchCall"):
        raw.hipNoSuchCall  # noqa: B018
    with pytest.raises(ctypes.ArgumentError):
        hip.hipSetDevice("0")
    copy = hip_copy()
    assert hip.hipMemcpyAsync(copy.host.ctypes.data, copy.gpu, copy.nbytes, 1, copy.stream) == 1  # HostToDevice, pointers swapped
    start, end = ctypes.c_void_p(), ctypes.c_void_p()
    hip.hipEventCreate(ctypes.byref(start)), hip.hipEventCreate(ctypes.byref(end))
    hip.hipEventRecord(start, copy.stream), hip.hipEventRecord(end, copy.stream)
    assert hip.hipEventElapsedTime(ctypes.byref(ctypes.c_float()), start, end) == 600  # hipErrorNotReady: nothing waited
    hip.hipEventSynchronize(end)
    assert hip.hipEventElapsedTime(ctypes.byref(ctypes.c_float()), start, end) == 0
    count = ctypes.c_int()
    assert FakeHip([]).__getattr__("hipGetDeviceCount") is not None
    empty = FakeHip([])
    empty.hipGetDeviceCount.argtypes = [ctypes.POINTER(ctypes.c_int)]
    assert empty.hipGetDeviceCount(ctypes.byref(count)) == 100  # hipErrorNoDevice
    copy.close()


def test_the_raw_hip_path_describes_the_amd_gpu_and_says_what_to_install_where_hip_is_missing(hip: FakeHip, monkeypatch) -> None:
    from xferbench.measuring.backends import hip as backend

    info = backend.HipBackend().describe(SeriesKey("hip", "raw_pageable", "copy", "cuda:0", (8, 8, 3)), {})
    assert info.device_name == "AMD Instinct MI300X" and info.params["hip"] == "6.3.42131"
    assert info.note == "from pageable memory HIP stages the copy through pinned buffers of its own"
    entry = backend.HipBackend().environment()["devices"][0]
    assert (entry["vendor"], entry["runtime"], entry["pci_bus_id"]) == ("AMD", "ROCm 6.3", "0000:c1:00.0")
    monkeypatch.setattr(backend, "library_paths", lambda: [])
    assert backend.HipBackend().missing().startswith("the raw HIP reference needs libamdhip64.so, HIP's runtime")
    assert backend.HipBackend().skip_reason(SeriesKey("hip", "raw_pinned", "copy", "mps", (8, 8, 3))).startswith("hip/raw_pinned runs on AMD GPUs")


# --- amdsmi's facts --------------------------------------------------------------------------------------------


@pytest.fixture
def amdsmi(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setitem(sys.modules, "amdsmi", fake_amdsmi)
    fake_amdsmi.describe([dict(MI300X)])
    return fake_amdsmi


def test_amdsmi_is_started_read_under_nvmls_keys_and_shut_down(amdsmi: Any) -> None:
    """MT/s become generations; the calls come after amdsmi_init and before amdsmi_shut_down."""
    info = amdsmi_facts.amdsmi_info()
    (gpu,) = info["gpus"]
    assert (gpu["pcie_gen_max"], gpu["pcie_width_max"], gpu["pcie_gen_current"], gpu["pcie_width_current"]) == (5, 16, 4, 16)
    assert (gpu["name"], gpu["gfx_arch"], gpu["pci_bus_id"], gpu["numa_node"]) == ("AMD Instinct MI300X", "gfx942", "0000:c1:00.0", 0)
    assert amdsmi.LIBRARY.calls[0] == "amdsmi_init" and amdsmi.LIBRARY.calls[-1] == "amdsmi_shut_down"
    assert not amdsmi.LIBRARY.started
    with pytest.raises(amdsmi.AmdSmiLibraryException):  # the stand-in, like amdsmi, refuses a call before init
        amdsmi.amdsmi_get_processor_handles()
    with pytest.raises(amdsmi.AmdSmiParameterException):
        amdsmi.amdsmi_init(2)  # a plain int is no AmdSmiInitFlags member


def test_amdsmis_missing_values_and_an_unknown_node_are_never_read_as_figures(amdsmi: Any, monkeypatch) -> None:
    """"N/A", a speed that is no generation, and the kernel's -1 as a uint32: None, with the reason."""
    amdsmi.describe([{**MI300X, "max_speed": None, "speed": 20000, "width": None, "numa": -1}])
    monkeypatch.setattr(amdsmi_facts, "sysfs_numa_node", lambda bus_id: None)
    (gpu,) = amdsmi_facts.amdsmi_info()["gpus"]
    assert (gpu["pcie_gen_max"], gpu["pcie_gen_current"], gpu["pcie_width_current"], gpu["pcie_width_max"]) == (None, None, None, 16)
    assert gpu["numa_node"] is None and gpu["numa_node_reason"].startswith("amdsmi gives no NUMA node")
    assert environment.link_readings({"amdsmi": gpu}) == []


def test_an_amd_gpu_gets_amdsmis_facts_by_pci_address_and_its_ceiling_from_them(amdsmi: Any) -> None:
    devices = [{"id": "cuda:0", "vendor": "AMD", "pci_bus_id": "0000:C1:00.0"}, {"id": "cuda:1", "vendor": "AMD", "pci_bus_id": None},
               {"id": "cuda:2", "vendor": "NVIDIA", "pci_bus_id": "0000:c1:00.0"}]  # fmt: skip
    amdsmi_facts.attach_amdsmi(devices, amdsmi_facts.amdsmi_info())
    assert devices[0]["amdsmi"]["numa_node"] == 0 and "amdsmi" not in devices[1] and "amdsmi" not in devices[2]
    assert devices[1]["amdsmi_reason"] == "this PyTorch gives no PCI address to match amdsmi's GPUs by"
    assert environment.pcie_ceiling(devices[0]) == (63.0, f"{GEN5_X16}; read Gen4 x16 before the run")
    from xferbench.core.numa import plan_binding

    binding, said = plan_binding({"devices": devices, "process_cpus": environment.numa_node_cpus(0)}, "cuda:0")
    assert binding is not None and binding.node == 0, said


def test_a_machine_with_an_amd_or_intel_gpu_is_told_by_the_kernels_entries(tmp_path, monkeypatch) -> None:
    """KFD's topology names a GPU by a gpu_id other than 0; an Intel GPU is a DRM card of vendor 0x8086 driven by i915 or xe."""
    monkeypatch.setattr(environment, "SYSFS", str(tmp_path))
    monkeypatch.setattr(environment, "nvidia_gpu_present", lambda: False)
    monkeypatch.setattr(environment.sys, "platform", "linux")
    nodes = tmp_path / "class/kfd/kfd/topology/nodes"
    for node, gpu_id in (("0", "0"), ("1", "0")):
        (nodes / node).mkdir(parents=True)
        (nodes / node / "gpu_id").write_text(f"{gpu_id}\n")
    assert environment.accelerator_kinds() == []  # CPU nodes only: an APU's driver with no GPU for ROCm
    (nodes / "1" / "gpu_id").write_text("53214\n")
    assert environment.accelerator_kinds() == ["cuda"]
    card = tmp_path / "class/drm/card1/device"
    card.mkdir(parents=True)
    (card / "vendor").write_text("0x8086\n")
    (tmp_path / "drivers/xe").mkdir(parents=True)
    (card / "driver").symlink_to(tmp_path / "drivers/xe")
    assert environment.accelerator_kinds() == ["cuda", "xpu"]


# --- PyTorch for ROCm ---------------------------------------------------------------------------------------------


def test_pytorch_for_rocm_names_its_gpu_as_amds_with_its_architecture_and_rocm(monkeypatch) -> None:
    from xferbench.measuring.backends import pytorch

    gpu = {"name": "Radeon RX 7900 XTX", "gcnArchName": "gfx1100", "total_memory": 24 * 2**30, "major": 11, "minor": 0,
           "is_integrated": False, "pci_domain_id": 0, "pci_bus_id": 3, "pci_device_id": 0}  # fmt: skip
    torch = GpuTorch("rocm", "2.6.0+rocm6.2.4", [gpu])
    monkeypatch.setattr(pytorch, "_torch", lambda: torch)
    (entry,) = pytorch.TorchBackend().environment()["devices"]
    assert (entry["name"], entry["vendor"], entry["runtime"], entry["gfx_arch"]) == ("AMD Radeon RX 7900 XTX", "AMD", "ROCm 6.2.4", "gfx1100")
    assert entry["pci_bus_id"] == "0000:03:00.0" and entry["host_link"] == "PCIe"
    torch.gpus[0]["is_integrated"] = True  # an APU shares the host's memory
    assert pytorch.TorchBackend().environment()["devices"][0]["host_link"] == "unified memory"
    assert pytorch.TorchBackend().devices() == ["cpu", "cuda:0"]
    info = pytorch.TorchBackend().describe(SeriesKey("torch", "pageable", "copy", "cuda:0", (8, 8, 3)), {})
    assert (info.device_name, info.params["runtime"]) == ("AMD Radeon RX 7900 XTX", "ROCm 6.2.4")


def test_a_rocm_copy_is_read_only_after_the_device_was_synchronized(monkeypatch) -> None:
    """The stand-in lands a non-blocking copy only when the device is waited for: the torch path's events
    are read after torch.cuda.synchronize, and the bytes checked after it."""
    from xferbench.measuring.backends import pytorch

    torch = GpuTorch("rocm", "2.7.1+rocm6.3", [{"name": "AMD Instinct MI300X", "gcnArchName": "gfx942"}])
    monkeypatch.setattr(pytorch, "_torch", lambda: torch)
    transfer = pytorch.TorchTransfer(SeriesKey("torch", "pinned_into", "copy", "cuda:0", (8, 8, 3)).at(4))
    assert transfer() >= 0.0
    transfer.verify()
    pending = torch.empty((4, 8, 8, 3), device="cuda:0").copy_(transfer.source, non_blocking=True)
    assert not np.any(pending.array)  # queued, not landed
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record(), end.record()
    with pytest.raises(RuntimeError, match="device not ready"):
        start.elapsed_time(end)
    torch.cuda.synchronize(torch.device("cuda:0"))
    assert np.array_equal(pending.array, transfer.source.array) and start.elapsed_time(end) >= 0.0
    with pytest.raises(AttributeError):
        torch.cuda.get_device_properties(0).no_such_property  # noqa: B018
    with pytest.raises(RuntimeError, match="not linked with support for xpu"):
        torch.empty(1, device="xpu:0")


def test_without_amdsmi_the_kernels_pci_facts_give_the_link_and_node(tmp_path, monkeypatch) -> None:
    """The files amdsmi reads its maximum from: max_link_speed in GT/s as the kernel writes it, widths, numa_node."""
    monkeypatch.setattr(environment, "SYSFS", str(tmp_path))
    gpu = tmp_path / "bus/pci/devices/0000:c1:00.0"
    gpu.mkdir(parents=True)
    for name, text in (("max_link_speed", "32.0 GT/s PCIe"), ("max_link_width", "16"), ("current_link_speed", "2.5 GT/s PCIe"),
                       ("current_link_width", "16"), ("numa_node", "1")):  # fmt: skip
        (gpu / name).write_text(text + "\n")
    (tmp_path / "devices/system/node/node1").mkdir(parents=True)
    (tmp_path / "devices/system/node/node1/cpulist").write_text("8-15\n")
    devices = [{"id": "cuda:0", "vendor": "AMD", "pci_bus_id": "0000:c1:00.0"}, {"id": "cuda:1", "vendor": "AMD", "pci_bus_id": "0000:c2:00.0"}]
    amdsmi_facts.attach_amdsmi(devices, {"available": False, "reason": amdsmi_facts.NOT_INSTALLED})
    kernel = devices[0]["pci_sysfs"]
    assert (kernel["pcie_gen_max"], kernel["pcie_width_max"], kernel["pcie_gen_current"], kernel["numa_node"]) == (5, 16, 1, 1)
    assert "pci_sysfs" not in devices[1] and devices[1]["amdsmi_reason"] == amdsmi_facts.NOT_INSTALLED
    assert environment.pcie_ceiling(devices[0]) == (63.0, f"{GEN5_X16}; read Gen1 x16 before the run")
    from xferbench.core.numa import plan_binding

    binding, said = plan_binding({"devices": devices, "process_cpus": list(range(16))}, "cuda:0")
    assert binding is not None and (binding.node, binding.cpus) == (1, tuple(range(8, 16))), said
