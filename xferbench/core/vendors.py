"""Who made a GPU, what runtime drives it and what links it to host memory: what a comparison across GPU
vendors turns on, recorded on every GPU device entry of a result's environment as three fields:

- vendor: "NVIDIA", "AMD", "Intel" or "Apple";
- runtime: "CUDA 12.8" (the CUDA version of the driver), "ROCm 6.4.1", "Level Zero", "Metal";
- host_link: "PCIe", "NVLink-C2C" (a Grace node) or "unified memory" (Apple silicon).

A backend that knows its device's may set them; the capture fills what is still missing (label_devices).
A file written before they were recorded is read with the same rules (describe), from what it did record:
the device's kind and name, NVML's facts and the machine. Where those do not settle a field it stays None
(unknown), never a guess: PyTorch on ROCm names its devices "cuda", so the kind alone says no vendor.
"""

from __future__ import annotations

import re
from typing import Any

from xferbench.core import c2c

VENDOR, RUNTIME, HOST_LINK = "vendor", "runtime", "host_link"
NVIDIA, AMD, INTEL, APPLE = "NVIDIA", "AMD", "Intel", "Apple"
PCIE, C2C, UNIFIED = c2c.PCIE, c2c.C2C, "unified memory"
METAL = "Metal"
LEVEL_ZERO = "Level Zero"  # an Intel GPU's runtime under PyTorch's xpu device
ROCM = "ROCm"  # an AMD GPU's runtime where its version is not known (a ROCm-only tool's output names none)
X86 = ("x86_64", "amd64", "i386", "i686")  # no NVLink-C2C host: C2C runs only from a Grace CPU (aarch64)
UNKNOWN = "unknown"

# Words of a device name that say its vendor (whole words, lower case).
NAME_WORDS = ((NVIDIA, ("nvidia", "geforce", "tesla", "quadro")), (AMD, ("amd", "radeon", "instinct")),
              (INTEL, ("intel",)), (APPLE, ("apple",)))  # fmt: skip


def _words(text: Any) -> set[str]:
    return set(re.split(r"[^a-z0-9]+", str(text or "").lower())) - {""}


def vendor(device: dict[str, Any]) -> str | None:
    """The device's vendor: as recorded; else NVIDIA where NVML described it, Apple for MPS, Intel for XPU;
    else as its name says; else None."""
    if device.get(VENDOR):
        return str(device[VENDOR])
    kind = str(device.get("kind") or device.get("id") or "").split(":")[0]
    if kind in ("cpu", "sim"):
        return None
    if device.get("nvml"):
        return NVIDIA
    if kind == "mps":
        return APPLE
    if kind == "xpu":
        return INTEL
    words = _words(device.get("name"))
    return next((name for name, said in NAME_WORDS if words & set(said)), None)


def runtime(device: dict[str, Any]) -> str | None:
    """The runtime that drives the device: as recorded; else CUDA at the version its driver gave (NVML),
    Metal for an Apple GPU; else None."""
    if device.get(RUNTIME):
        return str(device[RUNTIME])
    made_by = vendor(device)
    if made_by == NVIDIA and device.get("cuda_driver"):
        return f"CUDA {device['cuda_driver']}"
    if made_by == APPLE:
        return METAL
    return None


def host_link(device: dict[str, Any], machine: Any = None) -> str | None:
    """What links the device to host memory: as recorded; for an Apple GPU, unified memory where it shares
    the CPU's (Apple silicon); for an NVIDIA GPU, NVLink-C2C where NVML's C2C facts show it or the GPU is one
    sold only beside a Grace CPU, PCIe where NVML says it has no C2C or the host is x86 (which has no C2C);
    else None."""
    if device.get(HOST_LINK):
        return str(device[HOST_LINK])
    made_by = vendor(device)
    if made_by == APPLE:
        shared = device.get("unified_memory")
        if shared is None:  # a file from before it was recorded: Apple silicon reports arm64
            shared = str(machine or "").lower() == "arm64" or None
        return UNIFIED if shared else None
    if made_by != NVIDIA:
        return None
    if c2c.is_c2c(device):  # NVML's C2C facts, else a GPU sold only beside a Grace CPU (an old driver may not say)
        return C2C
    if c2c.nvml_link(device) == PCIE:
        return PCIE
    return PCIE if str(machine or "").lower() in X86 else None


def describe(device: dict[str, Any], environment: dict[str, Any] | None = None) -> dict[str, str | None]:
    """The three fields of a device entry, as recorded or derived (None: unknown)."""
    machine = (environment or {}).get("machine")
    return {VENDOR: vendor(device), RUNTIME: runtime(device), HOST_LINK: host_link(device, machine)}


def label_devices(devices: list[dict[str, Any]], machine: Any) -> None:
    """Give every GPU entry its vendor, runtime and host link, keeping what a backend already set."""
    for device in devices:
        if device.get("kind") in ("cpu", "sim"):
            continue
        for field, value in describe(device, {"machine": machine}).items():
            if device.get(field) is None:
                device[field] = value


def text(value: str | None) -> str:
    """A field as a table shows it: unknown where neither recorded nor derivable."""
    return value if value else UNKNOWN


__all__ = ["AMD", "APPLE", "C2C", "HOST_LINK", "INTEL", "LEVEL_ZERO", "METAL", "NVIDIA", "PCIE", "ROCM", "RUNTIME", "UNIFIED", "UNKNOWN", "VENDOR",
           "describe", "host_link", "label_devices", "runtime", "text", "vendor"]  # fmt: skip
