"""A stand-in for amdsmi, AMD's Python package for its System Management Interface, built from its
py-interface (amdsmi_interface.py, amdsmi_exception.py) and the library behind it (src/amd_smi/amd_smi.cc):

- amdsmi_init(flag) takes an AmdSmiInitFlags member only (else AmdSmiParameterException); every other call
  before it, or after amdsmi_shut_down, raises AmdSmiLibraryException with AMDSMI_STATUS_NOT_INIT (32);
- a processor handle is an amdsmi_processor_handle (ctypes.POINTER(None), i.e. c_void_p) from
  amdsmi_get_processor_handles(); anything else is an AmdSmiParameterException;
- amdsmi_get_pcie_info gives {"pcie_static": {...}, "pcie_metric": {...}} with speeds in MT/s (the library
  multiplies sysfs's GT/s by 1000) and "N/A" where the library read its all-ones "no value"; it fails
  whole (AMDSMI_STATUS_NOT_SUPPORTED, 2) where the GPU gives no metrics, as in a VM;
- amdsmi_topo_get_numa_node_number gives the uint32 the library reads;
- amdsmi_get_gpu_device_bdf gives "0000:c1:00.0"; amdsmi_get_gpu_asic_info's market_name and
  target_graphics_version ("gfx942").
"""

from __future__ import annotations

import ctypes
from enum import IntEnum
from types import SimpleNamespace
from typing import Any

AMDSMI_STATUS_NOT_SUPPORTED, AMDSMI_STATUS_NOT_INIT = 2, 32
__spec__ = None  # set by whoever installs the module


class AmdSmiInitFlags(IntEnum):
    INIT_ALL_PROCESSORS = 0xFFFFFFFF
    INIT_AMD_CPUS = 1 << 0
    INIT_AMD_GPUS = 1 << 1
    INIT_NON_AMD_CPUS = 1 << 2
    INIT_NON_AMD_GPUS = 1 << 3
    INIT_AMD_APUS = (1 << 0) | (1 << 1)


class AmdSmiException(Exception):
    pass


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, err_code: int) -> None:
        super().__init__(abs(err_code))
        self.err_code = abs(err_code)
        self.err_info = {AMDSMI_STATUS_NOT_INIT: "AMDSMI_STATUS_NOT_INIT - Device not initialized",
                         AMDSMI_STATUS_NOT_SUPPORTED: "AMDSMI_STATUS_NOT_SUPPORTED - Feature not supported"}.get(self.err_code, "")  # fmt: skip

    def __str__(self) -> str:
        return f"Error code:\n\t{self.err_code} | {self.err_info}"

    def get_error_code(self) -> int:
        return self.err_code


class AmdSmiParameterException(AmdSmiException):
    def __init__(self, received: Any, expected: Any) -> None:
        super().__init__(f"Invalid parameter: expected {expected}, received {type(received)}")


amdsmi_wrapper = SimpleNamespace(amdsmi_processor_handle=ctypes.POINTER(None))


class Library:
    """The state behind the module: the GPUs, whether it is started, and the calls made."""

    def __init__(self) -> None:
        self.gpus: list[dict[str, Any]] = []
        self.started = False
        self.handles: list[Any] = []
        self.calls: list[str] = []


LIBRARY = Library()


def describe(gpus: list[dict[str, Any]]) -> None:
    """The machine: each GPU's bdf, market_name, gfx, numa, max_speed/max_width (MT/s, lanes), speed/width
    now, and metrics=False where the GPU gives no metrics (amdsmi_get_pcie_info then fails)."""
    LIBRARY.gpus, LIBRARY.started, LIBRARY.handles, LIBRARY.calls = gpus, False, [], []


def _started(name: str) -> None:
    LIBRARY.calls.append(name)
    if not LIBRARY.started:
        raise AmdSmiLibraryException(AMDSMI_STATUS_NOT_INIT)


def _gpu(name: str, handle: Any) -> dict[str, Any]:
    if not isinstance(handle, amdsmi_wrapper.amdsmi_processor_handle):
        raise AmdSmiParameterException(handle, amdsmi_wrapper.amdsmi_processor_handle)
    _started(name)
    for gpu, known in zip(LIBRARY.gpus, LIBRARY.handles):
        if known.value == handle.value:
            return gpu
    raise AmdSmiLibraryException(1)  # AMDSMI_STATUS_INVAL


def amdsmi_init(flag: Any = AmdSmiInitFlags.INIT_AMD_GPUS) -> None:
    if not isinstance(flag, AmdSmiInitFlags):
        raise AmdSmiParameterException(flag, AmdSmiInitFlags)
    LIBRARY.calls.append("amdsmi_init")
    LIBRARY.started = True


def amdsmi_shut_down() -> None:
    _started("amdsmi_shut_down")
    LIBRARY.started = False


def amdsmi_get_processor_handles() -> list[Any]:
    _started("amdsmi_get_processor_handles")
    LIBRARY.handles = [amdsmi_wrapper.amdsmi_processor_handle(0x1000 + i) for i in range(len(LIBRARY.gpus))]
    return [amdsmi_wrapper.amdsmi_processor_handle(h.value) for h in LIBRARY.handles]


def amdsmi_get_gpu_device_bdf(handle: Any) -> str:
    return _gpu("amdsmi_get_gpu_device_bdf", handle)["bdf"]


def amdsmi_get_gpu_asic_info(handle: Any) -> dict[str, Any]:
    gpu = _gpu("amdsmi_get_gpu_asic_info", handle)
    return {"market_name": gpu["market_name"], "vendor_id": "0x1002", "vendor_name": "Advanced Micro Devices Inc. [AMD/ATI]",
            "subvendor_id": "0x1002", "device_id": "0x74a1", "rev_id": "0x00", "asic_serial": "0x0000000000000000", "oam_id": 0,
            "num_compute_units": 304, "target_graphics_version": gpu["gfx"]}  # fmt: skip


def _na(value: Any) -> Any:
    return "N/A" if value is None else value


def amdsmi_get_pcie_info(handle: Any) -> dict[str, Any]:
    gpu = _gpu("amdsmi_get_pcie_info", handle)
    if not gpu.get("metrics", True):  # amd_smi.cc returns the gpu metrics' failure for the whole call
        raise AmdSmiLibraryException(AMDSMI_STATUS_NOT_SUPPORTED)
    versions = {2500: 1, 5000: 2, 8000: 3, 16000: 4, 32000: 5, 64000: 6}
    return {
        "pcie_static": {"max_pcie_width": _na(gpu.get("max_width")), "max_pcie_speed": _na(gpu.get("max_speed")),
                        "pcie_interface_version": versions.get(gpu.get("max_speed"), 0), "slot_type": "OAM"},
        "pcie_metric": {"pcie_width": _na(gpu.get("width")), "pcie_speed": _na(gpu.get("speed")), "pcie_bandwidth": "N/A",
                        "pcie_replay_count": 0, "pcie_l0_to_recovery_count": 0, "pcie_replay_roll_over_count": 0,
                        "pcie_nak_sent_count": 0, "pcie_nak_received_count": 0, "pcie_lc_perf_other_end_recovery_count": 0},
    }  # fmt: skip


def amdsmi_topo_get_numa_node_number(handle: Any) -> int:
    return _gpu("amdsmi_topo_get_numa_node_number", handle)["numa"] & 0xFFFFFFFF  # a uint32
