"""Which GPU a PyTorch device is, by vendor: what the torch paths say of NVIDIA, AMD and Intel GPUs.

- PyTorch for ROCm keeps the `cuda` device name and the torch.cuda API (HIP underneath: a torch.cuda.Event
  is a hipEvent, torch.cuda.synchronize a hipDeviceSynchronize); torch.version.hip is set and
  torch.version.cuda is None (docs.pytorch.org, notes/hip). Its device properties add gcnArchName
  ("gfx942:sramecc+:xnack-"), whose first part names the GPU's architecture.
- PyTorch for Intel GPUs has the `xpu` device from 2.5 (torch.xpu: is_available, device_count,
  synchronize, get_device_name, get_device_properties, Event). From 2.5 pin_memory() pins for the current
  accelerator, XPU included, with no device argument (pytorch/pytorch#126376, #131858). torch.xpu.Event's
  elapsed_time raised NotImplementedError until 2.6 (pytorch/pytorch#140865, #140873).

Every GPU entry of the environment carries `vendor`, `runtime` and `host_link`, so results from
different vendors can be set side by side.
"""

from __future__ import annotations

import re
from typing import Any

from xferbench.core.vendors import AMD, INTEL, LEVEL_ZERO, NVIDIA, PCIE, UNIFIED

XPU_SINCE = (2, 5)  # the first PyTorch release with the xpu device in its own wheels
XPU_EVENTS_SINCE = (2, 6)  # the first whose torch.xpu.Event has elapsed_time
# Intel's discrete GPUs, by name: the Arc A- and B-series (and their Pro cards) and the Data Center GPUs
# (Max, Flex) sit on PCIe; the other Intel GPUs PyTorch reaches (Arc, Iris Xe and UHD Graphics of a Core
# processor) are integrated and share the host's memory.
INTEL_DISCRETE = re.compile(r"Data Center GPU|Arc\(TM\) (Pro )?[AB]\d", re.IGNORECASE)


def release(torch: Any) -> tuple[int, int]:
    """'2.6.0+xpu' -> (2, 6); (0, 0) where the version does not parse."""
    found = re.match(r"(\d+)\.(\d+)", str(getattr(torch, "__version__", "")))
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def is_rocm(torch: Any) -> bool:
    """Whether this PyTorch is a ROCm build: its `cuda` devices are AMD GPUs, reached through HIP."""
    return bool(getattr(getattr(torch, "version", None), "hip", None))


def rocm_runtime(torch: Any) -> str:
    """'ROCm 6.4' from the wheel's local version (2.7.1+rocm6.4: the ROCm it bundles), else the HIP version."""
    found = re.search(r"\+rocm(\d+(?:\.\d+)*)", str(torch.__version__))
    return f"ROCm {found.group(1)}" if found else f"HIP {torch.version.hip}"


def gfx_arch(props: Any) -> str | None:
    """'gfx942:sramecc+:xnack-' -> 'gfx942': the GPU's architecture, without its feature flags."""
    name = str(getattr(props, "gcnArchName", "") or "")
    return name.split(":")[0] or None


def amd_name(props: Any) -> str:
    """An AMD GPU's marketing name as ROCm gives it ("AMD Instinct MI300X"), with the vendor in front
    where ROCm leaves it out; its architecture where it gives no name."""
    name = str(getattr(props, "name", "") or "").strip() or f"AMD GPU {gfx_arch(props) or ''}".strip()
    return name if name.upper().startswith("AMD") else f"AMD {name}"


def xpu_missing(torch: Any) -> str | None:
    """Why this PyTorch has no xpu device to offer, or None where it may have one."""
    if release(torch) < XPU_SINCE or not hasattr(torch, "xpu"):
        return (f"PyTorch {torch.__version__} has no xpu device (Intel GPUs are in PyTorch's own wheels from 2.5):"
                " pip install torch --index-url https://download.pytorch.org/whl/xpu")  # fmt: skip
    return None


def xpu_devices(torch: Any) -> list[str]:
    """The Intel GPUs this PyTorch reaches: none without torch.xpu, or where it sees no GPU."""
    if xpu_missing(torch) or not torch.xpu.is_available():
        return []
    return [f"xpu:{i}" for i in range(torch.xpu.device_count())]


def xpu_clock_reason(torch: Any) -> str | None:
    """Why an xpu series has no device clock, or None where torch.xpu.Event times it."""
    if release(torch) < XPU_EVENTS_SINCE:
        return (f"torch.xpu.Event has no elapsed_time in PyTorch {torch.__version__} (it raises NotImplementedError"
                " before 2.6), so the host clock alone times xpu calls")  # fmt: skip
    return None


def intel_host_link(name: str) -> str:
    """How an Intel GPU reaches host memory, by its name (INTEL_DISCRETE)."""
    return PCIE if INTEL_DISCRETE.search(name) else UNIFIED


def device_name(torch: Any, device: str) -> str:
    """The GPU's name as a series records it."""
    index = int(device.split(":")[1]) if ":" in device else 0
    if device.startswith("xpu"):
        return str(torch.xpu.get_device_name(index))
    if is_rocm(torch):
        return amd_name(torch.cuda.get_device_properties(index))
    return str(torch.cuda.get_device_name(torch.device(device)))


def cuda_entry(torch: Any, props: Any) -> dict[str, Any]:
    """What a `cuda` device entry adds by vendor: an NVIDIA GPU's CUDA, an AMD GPU's ROCm and architecture."""
    integrated = bool(getattr(props, "is_integrated", False))  # an APU (MI300A), a Jetson: the host's own memory
    if is_rocm(torch):
        return {"name": amd_name(props), "vendor": AMD, "runtime": rocm_runtime(torch), "hip": torch.version.hip,
                "gfx_arch": gfx_arch(props), "gcn_arch_name": getattr(props, "gcnArchName", None),
                "host_link": UNIFIED if integrated else PCIE}  # fmt: skip
    # An NVIDIA GPU's runtime (the driver's CUDA) and its host link (PCIe or NVLink-C2C) are read from NVML when the
    # environment is captured (core/vendors.py): torch cannot tell a Grace node's link from PCIe.
    return {"vendor": NVIDIA, **({"host_link": UNIFIED} if integrated else {})}


def xpu_entries(torch: Any) -> list[dict[str, Any]]:
    """Each Intel GPU as the environment records it, from torch.xpu.get_device_properties."""
    entries = []
    for device in xpu_devices(torch):
        props = torch.xpu.get_device_properties(int(device.split(":")[1]))
        name = str(props.name)
        entries.append({
            "id": device, "kind": "xpu", "name": name, "memory_bytes": getattr(props, "total_memory", None),
            "vendor": INTEL, "runtime": LEVEL_ZERO, "driver": getattr(props, "driver_version", None),
            "platform": getattr(props, "platform_name", None), "host_link": intel_host_link(name),
            "host_link_source": "the GPU's name: Arc A/B-series and Data Center GPUs are discrete, on PCIe; other Intel GPUs are integrated",
            "eu_count": getattr(props, "gpu_eu_count", None),
        })  # fmt: skip
    return entries
