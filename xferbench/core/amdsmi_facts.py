"""An AMD GPU's link and NUMA facts from amdsmi, AMD's Python binding of its System Management Interface.

What NVML gives an NVIDIA GPU's entry, amdsmi gives an AMD GPU's, under the same keys wherever they mean
the same (pcie_gen_max, pcie_width_max, pcie_gen_current, pcie_width_current, numa_node, numa_cpus,
pci_bus_id), so the link ceiling and the NUMA placement read either. amdsmi's Python interface
(py-interface/amdsmi_interface.py) answers:

- amdsmi_get_pcie_info(handle) -> {"pcie_static": {"max_pcie_width", "max_pcie_speed", ...},
  "pcie_metric": {"pcie_width", "pcie_speed", ...}}, speeds in MT/s (the library multiplies sysfs's GT/s
  by 1000: 16000 is Gen4) and "N/A" where the library read its all-ones "no value";
- amdsmi_topo_get_numa_node_number(handle) -> the GPU's NUMA node (uint32);
- amdsmi_get_gpu_device_bdf(handle) -> "0000:c1:00.0";
- amdsmi_get_gpu_asic_info(handle) -> {"market_name", "vendor_name", "target_graphics_version", ...}.
Every call raises AmdSmiLibraryException on failure, and AmdSmiParameterException for a handle that is
not one of amdsmi_get_processor_handles()'s; none may come before amdsmi_init or after amdsmi_shut_down.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xferbench.core import environment
from xferbench.core.environment import numa_node_cpus, pci_key, sysfs_numa_node

NOT_INSTALLED = ("amdsmi is not installed: it ships with ROCm (pip install /opt/rocm/share/amd_smi, or PyPI's amdsmi of"
                 " the same release as the ROCm driver), so the AMD GPU's PCIe link and NUMA node are not recorded")  # fmt: skip
# PCIe generations by their transfer rate per lane in MT/s, as amdsmi reports them.
GEN_BY_MTS = {2500: 1, 5000: 2, 8000: 3, 16000: 4, 32000: 5, 64000: 6}


def pcie_generation(mts: Any) -> int | None:
    """amdsmi's link speed in MT/s -> the PCIe generation; None for "N/A" or a rate no generation has."""
    return GEN_BY_MTS.get(mts) if isinstance(mts, int) else None


def _width(value: Any) -> int | None:
    return value if isinstance(value, int) and value > 0 else None


def _reader() -> Callable[..., Any]:
    def read(function: Callable[..., Any], *args: Any) -> Any:
        try:
            return function(*args)
        except Exception:  # AmdSmiLibraryException per unsupported query (a VM, an APU): record null
            return None

    return read


def _host_node(amdsmi: Any, handle: Any, bus_id: Any, read: Callable[..., Any]) -> dict[str, Any]:
    """The host NUMA node nearest the GPU, from amdsmi, else from the kernel's PCI facts; a node with no
    CPUs (memory only) is never given, as for NVIDIA GPUs (environment._host_node)."""
    node = read(amdsmi.amdsmi_topo_get_numa_node_number, handle)
    source = "amdsmi_topo_get_numa_node_number"
    if not isinstance(node, int) or node >= 2**31:  # a uint32 of the kernel's -1: no node known
        node = sysfs_numa_node(bus_id)
        source = "the kernel's PCI facts (sysfs numa_node)" if node is not None else None
    why = None
    if node is None:
        why = "amdsmi gives no NUMA node, and the kernel gives none for its PCI address"
    elif numa_node_cpus(node) is None:
        node, why = None, f"node {node} has no CPUs listed in sysfs (memory only): host buffers are not bound there"
    return {"numa_node": node, "numa_node_source": source if node is not None else None, "numa_node_reason": why}


def _gpu(amdsmi: Any, index: int, handle: Any, read: Callable[..., Any]) -> dict[str, Any]:
    bus_id = read(amdsmi.amdsmi_get_gpu_device_bdf, handle)
    asic = read(amdsmi.amdsmi_get_gpu_asic_info, handle) or {}
    pcie = read(amdsmi.amdsmi_get_pcie_info, handle) or {}
    static, metric = pcie.get("pcie_static") or {}, pcie.get("pcie_metric") or {}
    host = _host_node(amdsmi, handle, bus_id, read)
    return {
        "index": index,
        "name": asic.get("market_name") if asic.get("market_name") not in (None, "N/A") else None,
        "gfx_arch": asic.get("target_graphics_version"),
        "pci_bus_id": bus_id,
        "pcie_gen_max": pcie_generation(static.get("max_pcie_speed")),
        "pcie_width_max": _width(static.get("max_pcie_width")),
        "pcie_gen_current": pcie_generation(metric.get("pcie_speed")),
        "pcie_width_current": _width(metric.get("pcie_width")),
        "pcie_speed_max_mts": static.get("max_pcie_speed"),  # as amdsmi gave it, for a reader to check the generation by
        "pcie_speed_current_mts": metric.get("pcie_speed"),
        "slot_type": static.get("slot_type"),
        **host,
        "numa_cpus": numa_node_cpus(host["numa_node"]),
    }


def amdsmi_info() -> dict[str, Any]:
    """Each AMD GPU's PCIe link and NUMA node from amdsmi, or why they are missing."""
    try:
        import amdsmi
    except ImportError:
        return {"available": False, "reason": NOT_INSTALLED}
    except Exception as error:  # the binding is there, its library is not (libamd_smi.so)
        return {"available": False, "reason": f"amdsmi could not load: {error}"}
    try:
        amdsmi.amdsmi_init(amdsmi.AmdSmiInitFlags.INIT_AMD_GPUS)
    except Exception as error:  # no amdgpu driver, or no permission
        return {"available": False, "reason": f"amdsmi could not start: {error}"}
    read = _reader()
    try:
        handles = read(amdsmi.amdsmi_get_processor_handles) or []
        return {"available": True, "gpus": [_gpu(amdsmi, index, handle, read) for index, handle in enumerate(handles)]}
    finally:
        read(amdsmi.amdsmi_shut_down)


def _link_speed(text: str) -> int | None:
    """sysfs's '32.0 GT/s PCIe' -> 5: the generation of a link speed as the kernel writes it."""
    try:
        return pcie_generation(round(float(text.split()[0]) * 1000))
    except (ValueError, IndexError):
        return None


def sysfs_link(bus_id: Any) -> dict[str, Any] | None:
    """A PCI device's link and NUMA node as the kernel gives them (/sys/bus/pci/devices/ADDRESS:
    max_link_speed, max_link_width, current_link_speed, current_link_width, numa_node), the files amdsmi
    itself reads its maximum from; None where the kernel gives no link for the address."""
    key = pci_key(bus_id)
    if key is None:
        return None
    folder = "{}/bus/pci/devices/{:04x}:{:02x}:{:02x}.{:x}".format(environment.SYSFS, *key)
    read: dict[str, str] = {}
    for name in ("max_link_speed", "max_link_width", "current_link_speed", "current_link_width"):
        try:
            with open(f"{folder}/{name}") as file:
                read[name] = file.read().strip()
        except OSError:
            pass
    if not read:
        return None
    width = {name: int(read[name]) if read.get(name, "").isdigit() and int(read[name]) > 0 else None
             for name in ("max_link_width", "current_link_width")}  # fmt: skip
    node = sysfs_numa_node(bus_id)
    cpus = numa_node_cpus(node)
    return {"source": f"the kernel's PCI facts ({folder})", "pci_bus_id": bus_id,
            "pcie_gen_max": _link_speed(read.get("max_link_speed", "")), "pcie_width_max": width["max_link_width"],
            "pcie_gen_current": _link_speed(read.get("current_link_speed", "")), "pcie_width_current": width["current_link_width"],
            "numa_node": node if cpus else None, "numa_node_source": "the kernel's PCI facts (sysfs numa_node)" if cpus else None,
            "numa_node_reason": None if cpus else "the kernel gives no NUMA node with CPUs for its PCI address", "numa_cpus": cpus}  # fmt: skip


def attach_amdsmi(devices: list[dict[str, Any]], info: dict[str, Any]) -> None:
    """Give each AMD device its amdsmi facts, matched by PCI address: HIP and amdsmi may number GPUs
    differently (HIP_VISIBLE_DEVICES renumbers HIP's), so an index is never trusted. Where amdsmi cannot
    describe it, the kernel's own PCI facts stand in (`pci_sysfs`), and `amdsmi_reason` says why."""
    by_pci = {pci_key(gpu.get("pci_bus_id")): gpu for gpu in info.get("gpus", []) if pci_key(gpu.get("pci_bus_id"))}
    for device in devices:
        if device.get("vendor") != "AMD":
            continue
        gpu = by_pci.get(pci_key(device.get("pci_bus_id")))
        if gpu:
            device["amdsmi"] = gpu
            continue
        if info.get("available"):
            device["amdsmi_reason"] = ("amdsmi lists no GPU at this PCI address" if device.get("pci_bus_id")
                                       else "this PyTorch gives no PCI address to match amdsmi's GPUs by")  # fmt: skip
        else:
            device["amdsmi_reason"] = info.get("reason")
        kernel = sysfs_link(device.get("pci_bus_id"))
        if kernel:
            device["pci_sysfs"] = kernel
