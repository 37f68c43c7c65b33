"""NVIDIA Grace nodes (Grace Hopper, Grace Blackwell): the GPU reaches host memory over NVLink-C2C, not PCIe.

On such a node NVML still answers the PCIe queries (the GPU is enumerated as a PCI device), so a "Gen5 x16"
reading would set a 63 GB/s ceiling beside copies that run several times faster. What decides the link is
NVML's C2C facts, read here once per GPU:

- nvmlDeviceGetC2cModeInfoV: isC2cEnabled (1 on a Grace node); Not Supported where the GPU has no C2C link;
- field NVML_FI_DEV_C2C_LINK_COUNT: the C2C links present on the device;
- fields NVML_FI_DEV_C2C_LINK_GET_STATUS (0 inactive, 1 active) and NVML_FI_DEV_C2C_LINK_GET_MAX_BW (the
  link's speed in MB/s, for active links), each asked per link with the link's index as the field's scope.

The ceiling is the sum of the active links' maximum speeds. C2C exists only between a Grace CPU and its GPU,
so an aarch64 machine whose GPU answers with active C2C links is a Grace node.
"""

from __future__ import annotations

import re
from typing import Any

C2C = "NVLink-C2C"
PCIE = "PCIe"

# NVML's field ids (nvml.h), used where a binding predates the names.
FIELD_IDS = {"NVML_FI_DEV_C2C_LINK_COUNT": 170, "NVML_FI_DEV_C2C_LINK_GET_STATUS": 171, "NVML_FI_DEV_C2C_LINK_GET_MAX_BW": 172}
NVML_SUCCESS = 0
ACTIVE = 1  # NVML_FI_DEV_C2C_LINK_GET_STATUS: 0 inactive, 1 active

# GPUs sold only with a Grace CPU beside them over NVLink-C2C, by the words NVML and CUDA name them with:
# what a file recorded before the C2C facts were read can still be told by. Whole words, so "H200" is not "GH200".
GRACE_GPUS = ("gh200", "gb200", "gb300", "gb10")
ARM_PARTS = {("0x41", "0xd4f"): "Arm Neoverse-V2", ("0x41", "0xd40"): "Arm Neoverse-V1", ("0x41", "0xd0c"): "Arm Neoverse-N1",
             ("0x41", "0xd49"): "Arm Neoverse-N2"}  # fmt: skip  (implementer, part) of /proc/cpuinfo
AARCH64 = ("aarch64", "arm64")


def _field_id(pynvml: Any, name: str) -> int:
    return int(getattr(pynvml, name, FIELD_IDS[name]))


def _fields(pynvml: Any, handle: Any, fields: list[Any]) -> list[int | None]:
    """Each field's unsigned value, or None where NVML answered it with an error (or the call failed)."""
    try:
        values = pynvml.nvmlDeviceGetFieldValues(handle, fields)
    except Exception:  # an old binding without scoped fields (TypeError), an old driver: not read
        return [None] * len(fields)
    return [int(v.value.uiVal) if v.nvmlReturn == NVML_SUCCESS else None for v in values]


def read_c2c(pynvml: Any, handle: Any) -> dict[str, Any]:
    """A GPU's NVLink-C2C facts from NVML: whether C2C is enabled (None where NVML could not say, with its
    error), how many links it has, and each link's status and maximum speed in MB/s."""
    enabled, error = None, None
    mode_info = getattr(pynvml, "nvmlDeviceGetC2cModeInfoV", None)
    if mode_info is None:
        error = "this nvidia-ml-py has no nvmlDeviceGetC2cModeInfoV"
    else:
        try:
            enabled = bool(mode_info(handle).isC2cEnabled)
        except Exception as failed:  # NVMLError_NotSupported on a GPU without C2C; Function Not Found on an old driver
            error = str(failed) or type(failed).__name__
    (count,) = _fields(pynvml, handle, [_field_id(pynvml, "NVML_FI_DEV_C2C_LINK_COUNT")])
    links = []
    for index in range(count or 0):
        status, max_mbps = _fields(pynvml, handle, [(_field_id(pynvml, "NVML_FI_DEV_C2C_LINK_GET_STATUS"), index),
                                                    (_field_id(pynvml, "NVML_FI_DEV_C2C_LINK_GET_MAX_BW"), index)])  # fmt: skip
        links.append({"index": index, "active": None if status is None else status == ACTIVE, "max_mbps": max_mbps})
    return {"enabled": enabled, "mode_error": error, "link_count": count, "links": links}


def c2c_facts(device: dict[str, Any]) -> dict[str, Any]:
    """The C2C facts NVML gave for a device entry ({} where the file has none)."""
    return ((device.get("nvml") or {}).get("c2c")) or {}


def nvml_link(device: dict[str, Any]) -> str | None:
    """The host link NVML's C2C facts prove: NVLink-C2C where C2C is enabled or a link is active; PCIe where
    NVML says the GPU has no C2C (Not Supported, disabled, or no links); None where they say nothing."""
    facts = c2c_facts(device)
    if not facts:
        return None
    if facts.get("enabled") or any(link.get("active") for link in facts.get("links") or ()):
        return C2C
    if facts.get("enabled") is False or facts.get("link_count") == 0 or "not supported" in str(facts.get("mode_error") or "").lower():
        return PCIE
    return None


def grace_gpu(name: Any) -> bool:
    """Whether a GPU name is one sold only beside a Grace CPU (GH200, GB200, GB300, GB10)."""
    words = set(re.split(r"[^a-z0-9]+", str(name or "").lower()))
    return any(model in words for model in GRACE_GPUS)


def is_c2c(device: dict[str, Any]) -> bool:
    """Whether a CUDA device reaches host memory over NVLink-C2C: as recorded (host_link), else where NVML's
    C2C facts show it or its name is a Grace node's GPU (an old driver may not answer the C2C queries)."""
    recorded = device.get("host_link")
    if recorded:
        return recorded == C2C
    return nvml_link(device) == C2C or grace_gpu(device.get("name") or (device.get("nvml") or {}).get("name"))


def ceiling(device: dict[str, Any]) -> tuple[float, str] | None:
    """The C2C link's theoretical per-direction rate in GB/s from NVML (the sum of the active links' maximum
    speeds) and a label that says so; None where NVML gave no speed."""
    links = [link for link in c2c_facts(device).get("links") or () if link.get("active") and link.get("max_mbps")]
    if not links:
        return None
    mbps = sum(link["max_mbps"] for link in links)
    speeds = sorted({link["max_mbps"] for link in links})
    each = f"{speeds[0]:,} MB/s" if len(speeds) == 1 else f"{speeds[0]:,}–{speeds[-1]:,} MB/s"
    return mbps / 1e3, f"{C2C} theoretical ({mbps / 1e3:.1f} GB/s, NVML: {len(links)} active link{'s' * (len(links) > 1)} × {each})"


def unknown_ceiling(device: dict[str, Any]) -> str:
    """Why a C2C device has no ceiling: never a PCIe reading's, which NVML still gives on a Grace node."""
    return f"unknown: {C2C} (a Grace node), and NVML gave no C2C link speed; its PCIe readings are not the host link"


def arm_cpu_name(fields: dict[str, str]) -> str | None:
    """An Arm CPU's core name from /proc/cpuinfo's implementer and part (aarch64 Linux lists no model
    name): "Arm Neoverse-V2" for a Grace CPU's cores (and for other Neoverse-V2 chips alike)."""
    return ARM_PARTS.get((fields.get("cpu implementer", "").lower(), fields.get("cpu part", "").lower()))


def grace_note(environment: dict[str, Any], device: dict[str, Any]) -> str | None:
    """A line for a Grace node: what a pageable copy is there. None elsewhere."""
    if not is_c2c(device):
        return None
    arch = environment.get("machine")
    where = f"{arch} host" if arch else "host"
    return (f"{device.get('name') or 'the GPU'} reaches host memory over {C2C} ({where}): the GPU can read malloc'd"
            " (pageable) memory itself, so a pageable copy need not be staged through pinned buffers as it is over PCIe")


__all__ = ["AARCH64", "C2C", "PCIE", "arm_cpu_name", "c2c_facts", "ceiling", "grace_gpu", "grace_note", "is_c2c", "nvml_link",
           "read_c2c", "unknown_ceiling"]  # fmt: skip
