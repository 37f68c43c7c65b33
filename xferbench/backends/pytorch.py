"""`torch`: PyTorch's `.to(device)` from pageable and pinned memory, and the preallocated peak pattern.

Modes:
- pageable: torch.from_numpy(x).to(device), the original report's transfer;
- pinned: a pinned source, .to(device, non_blocking=True), then the device is synchronized;
- pinned_into: a pinned source copied into a preallocated device tensor (dst.copy_), the peak.
Ops: copy times the transfer alone; seed times the report's `.to(device).type(float32)[0, 0].cpu()`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xferbench.backends.base import HOST_TO_DEVICE, HOST_TO_HOST, Backend, SeriesInfo, Transfer
from xferbench.buffers import address_offset, check_arrived, fill_pattern, make_source, sample_indices
from xferbench.environment import cpu_name
from xferbench.errors import VerificationError
from xferbench.spec import SeriesKey, Spec

PINNED_MODES = ("pinned", "pinned_into")


def _torch() -> Any:
    import torch

    return torch


def _pci_bus_id(props: Any) -> str | None:
    """The GPU's PCI address in CUDA's form, where this PyTorch reports it: NVML's facts match by it too."""
    parts = [getattr(props, name, None) for name in ("pci_domain_id", "pci_bus_id", "pci_device_id")]
    return None if any(p is None for p in parts) else "{:04x}:{:02x}:{:02x}.0".format(*parts)


class TorchTransfer(Transfer):
    def __init__(self, spec: Spec) -> None:
        torch = self.torch = _torch()
        key = spec.series
        self.label, self.mode, self.seed = key.label(), key.mode, key.op == "seed"
        self.device = torch.device(key.device)
        self.kind = self.device.type
        if self.kind == "cuda":
            torch.cuda.set_device(self.device)  # events and the caching allocator follow the current device
        self.host = make_source(spec.batch_shape, aligned=key.host_buffer == "aligned")
        self.host_offset = address_offset(self.host) if self.mode not in PINNED_MODES else None
        self.source = torch.from_numpy(self.host)
        if self.mode in PINNED_MODES:
            self.source = torch.empty(spec.batch_shape, dtype=torch.uint8, pin_memory=True)
            self.source.copy_(torch.from_numpy(self.host))
        self.dest = (
            torch.empty(spec.batch_shape, dtype=torch.uint8, device=self.device)
            if self.mode == "pinned_into"
            else None
        )
        self.events = self._events()

    def _events(self) -> tuple[Any, Any] | None:
        torch = self.torch
        if self.kind == "cuda":
            return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if self.kind == "mps":
            try:
                return tuple(torch.mps.event.Event(enable_timing=True) for _ in range(2))  # type: ignore[return-value]
            except (AttributeError, RuntimeError, TypeError):  # older PyTorch: no timed MPS events
                return None
        return None

    def _move(self) -> Any:
        if self.dest is not None:
            return self.dest.copy_(self.source, non_blocking=True)
        if self.mode == "pinned":
            return self.source.to(self.device, non_blocking=True)
        # On the CPU .to("cpu") returns the same tensor; copy=True forces the host-to-host copy.
        return self.torch.from_numpy(self.host).to(self.device, copy=self.kind == "cpu")

    def _synchronize(self) -> None:
        if self.kind == "cuda":
            self.torch.cuda.synchronize(self.device)
        elif self.kind == "mps":
            self.torch.mps.synchronize()

    def _run(self) -> tuple[Any, Any, float | None]:
        """One synchronized transfer: the device tensor, the seed op's host result, device seconds."""
        events = self.events
        if events:
            events[0].record()
        moved = self._move()
        result = moved.type(self.torch.float32)[0, 0].cpu() if self.seed else None
        if events:
            events[1].record()
        self._synchronize()
        return moved, result, events[0].elapsed_time(events[1]) / 1e3 if events else None

    def __call__(self) -> float | None:
        return self._run()[2]  # the tensors are dropped here, so no call holds two batches at once

    def verify(self) -> None:
        fill_pattern(self.host, variant=1)  # new bytes: leftovers from warm-up cannot match
        if self.mode in PINNED_MODES:
            self.source.copy_(self.torch.from_numpy(self.host))  # the pinned copy of the source
        if self.dest is not None:
            self.dest.zero_()
        moved, result, _ = self._run()
        if moved.device.type != self.kind or (
            self.device.index is not None and moved.device.index != self.device.index
        ):
            raise VerificationError(f"{self.label}: data landed on {moved.device}, not {self.device}")
        if moved.data_ptr() == self.source.data_ptr():
            raise VerificationError(f"{self.label}: the result is the source tensor itself; nothing was copied")
        flat_index = sample_indices(self.host.size)
        got = moved.reshape(-1)[self.torch.from_numpy(flat_index).to(moved.device)].cpu().numpy()
        check_arrived(self.host.reshape(-1)[flat_index], got, self.label)
        if self.seed:
            check_arrived(self.host[0, 0].astype(np.float32), result.numpy(), f"{self.label} result")

    def close(self) -> None:
        self.dest = self.source = self.host = None


class TorchBackend(Backend):
    name = "torch"
    title, module, extra = "PyTorch", "torch", "torch"
    modes = default_modes = ("pageable", "pinned", "pinned_into")
    ops = ("copy", "seed")
    isolated = True
    host_buffers = ("numpy", "aligned")

    def sources(self, mode: str) -> tuple[str, ...]:
        return ("pinned",) if mode in PINNED_MODES else self.host_buffers

    def devices(self) -> list[str]:
        torch = _torch()
        found = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
        if torch.backends.mps.is_available():
            found.append("mps")
        return found

    def skip_reason(self, key: SeriesKey) -> str | None:
        if key.host_buffer == "pinned" and key.mode not in PINNED_MODES:
            return "a pinned source is what torch's pinned and pinned_into modes measure; choose them with --mode"
        if key.mode in PINNED_MODES and not key.device.startswith("cuda"):
            if key.device == "mps":
                return (
                    "pinned modes are CUDA-only here: MPS shares memory with the CPU and"
                    " PyTorch's pin_memory semantics on MPS changed across releases"
                )
            return "pinned host memory needs a CUDA device; on the CPU there is no device copy to pin for"
        return None

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        kind = key.device.split(":")[0]
        if kind == "cuda":
            name = _torch().cuda.get_device_name(_torch().device(key.device))
            sync, device_clock = "torch.cuda.synchronize", "torch.cuda.Event"
        elif kind == "mps":
            timed_events = hasattr(getattr(_torch(), "mps", None), "event")
            name, sync = f"Apple GPU (MPS) on {cpu_name()}", "torch.mps.synchronize"
            device_clock = "torch.mps.event.Event" if timed_events else None
        else:
            name, sync, device_clock = cpu_name(), "none needed: the CPU copy is synchronous", None
        if key.op == "seed":
            sync = f"result fetched to the host with .cpu(), then {sync}"
        return SeriesInfo(
            device_name=name,
            transfer=HOST_TO_HOST if kind == "cpu" else HOST_TO_DEVICE,
            clock="time.perf_counter",
            sync=sync,
            device_clock=device_clock,
            # a CPU copy in PyTorch runs on its intra-op threads, unlike single-threaded np.copyto
            params={"intra_op_threads": _torch().get_num_threads()} if kind == "cpu" else {},
        )

    def host_bytes(self, spec: Spec) -> int:
        """Source, pinned copy, and on the CPU the destination and the seed op's float32 cast."""
        pinned_copy = spec.series.mode in PINNED_MODES
        on_cpu = spec.series.device == "cpu"
        seed_float = spec.series.op == "seed" and on_cpu
        return spec.nbytes * (1 + pinned_copy + on_cpu + 4 * seed_float)

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return TorchTransfer(spec)

    def is_out_of_memory(self, error: BaseException) -> bool:
        oom = getattr(_torch(), "OutOfMemoryError", None) or _torch().cuda.OutOfMemoryError
        return (
            isinstance(error, (MemoryError, oom))
            or isinstance(error, RuntimeError)
            and "out of memory" in str(error).lower()
        )

    def environment(self) -> dict[str, Any]:
        torch = _torch()
        devices = []
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            devices.append(
                {
                    "id": f"cuda:{index}",
                    "kind": "cuda",
                    "name": props.name,
                    "memory_bytes": props.total_memory,
                    "capability": f"{props.major}.{props.minor}",
                    "uuid": str(getattr(props, "uuid", "")) or None,
                    "pci_bus_id": _pci_bus_id(props),
                }
            )
        if torch.backends.mps.is_available():
            devices.append({"id": "mps", "kind": "mps", "name": f"Apple GPU (MPS) on {cpu_name()}"})
        return {
            "version": torch.__version__,
            "cuda": torch.version.cuda,
            "threads": torch.get_num_threads(),
            "devices": devices,
        }
