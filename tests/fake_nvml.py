"""A stand-in for the pynvml calls xferbench makes, answered from settable attributes, as strict as
the real binding where it matters: a query the real NVML answers Not Supported on a PCIe GPU in an
x86 server (nvmlDeviceGetNumaNodeId) raises here too unless the test says the GPU's memory is a node,
and so does nvmlDeviceGetC2cModeInfoV unless the test gives the GPU NVLink-C2C links (a Grace node).
nvmlDeviceGetFieldValues takes a field id or an (id, scope) pair as pynvml does, and answers each field
with its own nvmlReturn (nvml.h's C2C fields: the link count, and per link its status and speed).

Tests install it as sys.modules["pynvml"]; a subprocess gets it through a `pynvml.py` shim on its
PYTHONPATH (see test_validate_command.py).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

BUSY_KBPS = 20_000_000  # 20 GB/s of NVML "KB/s" (1,000 B, as its byte counter shows): data moving
UUID = "GPU-11111111-2222-3333-4444-555555555555"


class FakeNVMLError(Exception):
    """Stands for pynvml.NVMLError and its subclasses (NVMLError_NoPermission, ...)."""


class FakeNVML:
    """The pynvml calls xferbench makes, answered from settable attributes; it counts what it is asked."""

    NVML_PCIE_UTIL_TX_BYTES = 0
    NVML_PCIE_UTIL_RX_BYTES = 1
    NVML_AFFINITY_SCOPE_NODE, NVML_AFFINITY_SCOPE_SOCKET = 0, 1
    NVMLError = FakeNVMLError
    # nvml.h: links present; a link's status (0 inactive, 1 active) and its speed in MB/s, each scoped by link index
    NVML_FI_DEV_C2C_LINK_COUNT, NVML_FI_DEV_C2C_LINK_GET_STATUS, NVML_FI_DEV_C2C_LINK_GET_MAX_BW = 170, 171, 172
    NVML_SUCCESS, NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_NOT_SUPPORTED = 0, 2, 3

    def __init__(self, gen: int = 4, width: int = 16, gen_max: int = 4, width_max: int = 16, rx_kbps: int | None = BUSY_KBPS,
                 tx_kbps: int | None = 500, init_error: Exception | None = None, fail_after: int | None = None,
                 rx_counter: int | None = None, gpu_gen_max: int | None = None, memory_node: int | None = 1,
                 gpu_memory_node: int | None = None, gpus: int = 2, c2c_links: int | None = None, c2c_active: int | None = None,
                 c2c_link_mbps: int = 45_000) -> None:  # fmt: skip
        self.gen, self.width, self.gen_max, self.width_max = gen, width, gen_max, width_max
        self.gpus = gpus
        self.rx_kbps, self.tx_kbps = rx_kbps, tx_kbps
        self.init_error, self.fail_after = init_error, fail_after
        self.samples = self.shutdowns = 0
        self.opened: list[tuple[str, Any]] = []
        self.rx_counter = rx_counter  # the cumulative RX byte count, where the fake driver keeps one
        self.gpu_gen_max = gpu_gen_max
        self.memory_node = memory_node  # the host node nearest the GPU (nvmlDeviceGetMemoryAffinity); None: Not Supported
        self.gpu_memory_node = gpu_memory_node  # the node of the GPU's own memory, where it is one (nvmlDeviceGetNumaNodeId)
        # A Grace node's GPU: its NVLink-C2C links (None: no C2C, as on a PCIe GPU), how many are active, and
        # each one's speed. NVML still answers its PCIe queries, as on a real Grace node.
        self.c2c_links, self.c2c_link_mbps = c2c_links, c2c_link_mbps
        self.c2c_active = c2c_links if c2c_active is None else c2c_active
        if rx_counter is not None:
            self.NVML_FI_DEV_PCIE_COUNT_RX_BYTES = 198

    def nvmlDeviceGetFieldValues(self, handle: Any, fields: list[Any]) -> list[Any]:
        """As pynvml: each field an id, or an (id, scope) pair (the scope a link's index); every field gets its own
        nvmlReturn, and a field the device does not have answers Not Supported. Anything else is refused as
        ctypes refuses it (TypeError)."""
        self._device(handle)
        answered = []
        for field in fields:
            scope = 0
            if isinstance(field, tuple):
                if len(field) != 2 or not all(isinstance(part, int) for part in field):
                    raise TypeError("fieldId must be an int or an (int, int) pair")
                field, scope = field
            elif not isinstance(field, int):
                raise TypeError(f"int expected instead of {type(field).__name__}")
            status, value = self._field(field, scope)
            answered.append(SimpleNamespace(fieldId=field, scopeId=scope, nvmlReturn=status,
                                            value=SimpleNamespace(ullVal=value, uiVal=value)))  # fmt: skip
        return answered

    def _field(self, field: int, scope: int) -> tuple[int, int | None]:
        if field == 198:
            return (self.NVML_SUCCESS, self.rx_counter) if self.rx_counter is not None else (self.NVML_ERROR_NOT_SUPPORTED, None)
        if field in (self.NVML_FI_DEV_C2C_LINK_COUNT, self.NVML_FI_DEV_C2C_LINK_GET_STATUS, self.NVML_FI_DEV_C2C_LINK_GET_MAX_BW):
            if self.c2c_links is None:
                return self.NVML_ERROR_NOT_SUPPORTED, None
            if field == self.NVML_FI_DEV_C2C_LINK_COUNT:
                return self.NVML_SUCCESS, self.c2c_links
            if not 0 <= scope < self.c2c_links:  # a link the device does not have
                return self.NVML_ERROR_INVALID_ARGUMENT, None
            active = scope < self.c2c_active
            if field == self.NVML_FI_DEV_C2C_LINK_GET_STATUS:
                return self.NVML_SUCCESS, int(active)
            return (self.NVML_SUCCESS, self.c2c_link_mbps) if active else (self.NVML_ERROR_NOT_SUPPORTED, None)
        return self.NVML_ERROR_NOT_SUPPORTED, None

    def nvmlDeviceGetC2cModeInfoV(self, handle: Any) -> Any:
        """nvmlC2cModeInfo_v1_t: isC2cEnabled; Not Supported on a GPU without C2C."""
        self._device(handle)
        if self.c2c_links is None:
            raise FakeNVMLError("Not Supported")
        return SimpleNamespace(isC2cEnabled=int(self.c2c_active > 0))

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, handle: Any) -> int:
        self._device(handle)
        if self.gpu_gen_max is None:
            raise FakeNVMLError("Not Supported")
        return self.gpu_gen_max

    def nvmlInit(self) -> None:
        if self.init_error:
            raise self.init_error

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> int:
        self.opened.append(("uuid", uuid))
        for index in range(self.nvmlDeviceGetCount()):
            if self.nvmlDeviceGetUUID(index) == uuid:
                return index
        raise FakeNVMLError("Not Found")

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self.opened.append(("index", index))
        self._device(index)  # no such GPU: NVML_ERROR_INVALID_ARGUMENT
        return index

    def _device(self, handle: Any) -> None:
        """As NVML, a query of anything but a handle it gave out is refused (NVML_ERROR_INVALID_ARGUMENT)."""
        if not isinstance(handle, int) or isinstance(handle, bool) or not 0 <= handle < self.nvmlDeviceGetCount():
            raise FakeNVMLError("Invalid Argument")

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Any) -> int:
        self._device(handle)
        return self.gen_max

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: Any) -> int:
        self._device(handle)
        return self.width_max

    def _lost(self) -> None:
        if self.fail_after is not None and self.samples >= self.fail_after:
            raise FakeNVMLError("GPU is lost")

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: Any) -> int:
        self._device(handle)
        self._lost()
        return self.gen

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: Any) -> int:
        self._device(handle)
        self._lost()
        return self.width

    def nvmlDeviceGetPcieThroughput(self, handle: Any, counter: int) -> int:
        self._device(handle)
        self._lost()
        if not isinstance(counter, int):  # the binding passes it as a C unsigned int: ctypes refuses anything else
            raise TypeError(f"int expected instead of {type(counter).__name__}")
        if counter not in (self.NVML_PCIE_UTIL_TX_BYTES, self.NVML_PCIE_UTIL_RX_BYTES):
            raise FakeNVMLError("Invalid Argument")
        if counter == self.NVML_PCIE_UTIL_RX_BYTES:
            self.samples += 1
            if self.rx_kbps is None:
                raise FakeNVMLError("Not Supported")
            return self.rx_kbps
        if self.tx_kbps is None:
            raise FakeNVMLError("Not Supported")
        return self.tx_kbps

    # What environment.nvml_info reads once before the run.
    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return 12040

    def nvmlSystemGetDriverVersion(self) -> str:
        return "550.54"

    def nvmlDeviceGetCount(self) -> int:
        return self.gpus

    def nvmlDeviceGetName(self, handle: Any) -> str:
        self._device(handle)
        return "NVIDIA H100"

    def nvmlDeviceGetUUID(self, handle: Any) -> str:
        self._device(handle)
        return UUID

    def nvmlDeviceGetPciInfo(self, handle: Any) -> Any:
        self._device(handle)
        raise FakeNVMLError("Not Supported")

    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any:
        self._device(handle)
        raise FakeNVMLError("Not Supported")

    def nvmlDeviceGetNumaNodeId(self, handle: Any) -> int:
        self._device(handle)
        # NVML answers only where the GPU's own memory is a NUMA node (a Grace Hopper, say); on a PCIe
        # GPU in an x86 server it is Not Supported.
        if self.gpu_memory_node is None:
            raise FakeNVMLError("Not Supported")
        return self.gpu_memory_node

    def nvmlDeviceGetMemoryAffinity(self, handle: Any, node_set_size: int, scope: int) -> list[int]:
        """The host NUMA nodes nearest the GPU, as a bitmask of 64-bit words (node 0 in bit 0)."""
        self._device(handle)
        if not isinstance(node_set_size, int) or node_set_size < 1 or scope not in (self.NVML_AFFINITY_SCOPE_NODE, self.NVML_AFFINITY_SCOPE_SOCKET):
            raise FakeNVMLError("Invalid Argument")
        if self.memory_node is None:
            raise FakeNVMLError("Not Supported")
        words = [0] * node_set_size
        words[self.memory_node // 64] = 1 << (self.memory_node % 64)
        return words

    def nvmlDeviceGetCpuAffinity(self, handle: Any, words: int) -> list[int]:
        self._device(handle)
        return [0xF0] + [0] * (words - 1)  # CPUs 4-7


class NodeNVML(FakeNVML):
    """One node's GPUs as NVML describes them: each its own UUID and PCI address, all of one model,
    on a Gen5 x16 link idling at Gen1, with a replay counter, clocks and a P-state, as on an HGX node."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 2

    def __init__(self, host: str, gpus: int, name: str, replays: int | None = 0, c2c_links: int | None = None) -> None:
        super().__init__(gen=1, width=16, gen_max=5, width_max=16, memory_node=0, c2c_links=c2c_links)
        self.host, self.gpus, self.name, self.replays = host, gpus, name, replays

    def nvmlDeviceGetCount(self) -> int:
        return self.gpus

    def nvmlDeviceGetName(self, handle: Any) -> str:
        self._device(handle)
        return self.name

    def nvmlDeviceGetUUID(self, handle: Any) -> str:
        self._device(handle)
        return f"GPU-{self.host}-{handle}"

    def nvmlDeviceGetPciInfo(self, handle: Any) -> Any:
        self._device(handle)
        return SimpleNamespace(busId=f"00000000:{0x18 + 0x10 * handle:02X}:00.0".encode())

    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> Any:
        self._device(handle)
        return SimpleNamespace(total=80 * 2**30, free=80 * 2**30, used=0)

    def nvmlDeviceGetPcieReplayCounter(self, handle: Any) -> int:
        self._device(handle)
        if self.replays is None:
            raise FakeNVMLError("Not Supported")
        return self.replays

    def nvmlDeviceGetClockInfo(self, handle: Any, clock: int) -> int:
        self._device(handle)
        return {self.NVML_CLOCK_SM: 1980, self.NVML_CLOCK_MEM: 2619}[clock]

    def nvmlDeviceGetPerformanceState(self, handle: Any) -> int:
        self._device(handle)
        return 0
