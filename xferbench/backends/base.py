"""The small protocol every framework backend implements.

A backend prepares a Transfer once per batch size. Calling the Transfer does one transfer and
returns only when the data is on the device; verify() proves the bytes arrived.
"""

from __future__ import annotations

import importlib.util
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from xferbench.spec import SeriesKey, Spec
from xferbench.timing import Clock

OPS = ("copy", "seed")
HOST_TO_DEVICE, HOST_TO_HOST, SIMULATED = "host-to-device", "host-to-host", "simulated"


@dataclass(frozen=True)
class SeriesInfo:
    """What a series really measured: kept in the result so readers know what they compare."""

    device_name: str
    transfer: str  # HOST_TO_DEVICE, HOST_TO_HOST or SIMULATED
    clock: str  # the clock around each call
    sync: str  # how each call waits until the data has arrived
    device_clock: str | None = None  # a device-side clock recorded beside the host clock
    params: dict[str, Any] = field(default_factory=dict)
    note: str | None = None  # what the path really computes, where that differs from its name


class Transfer(ABC):
    """One path prepared at one batch size."""

    clock: Clock = staticmethod(time.perf_counter)
    host_offset: int | None = None  # the source's address mod 64, recorded per point where there is one

    @abstractmethod
    def __call__(self) -> float | None:
        """Do one synchronized transfer; return its device-clock seconds where a device clock exists."""

    @abstractmethod
    def verify(self) -> None:
        """Do one transfer into a poisoned destination and raise VerificationError unless the bytes match."""

    def close(self) -> None:
        """Drop the buffers, so the next batch size has the memory."""


class Backend(ABC):
    name: str
    title: str = ""  # the framework's own name, for messages
    module: str | None = None  # the module it imports; missing() checks it without importing it
    extra: str | None = None  # the pip extra that installs the framework
    modes: tuple[str, ...] = ()
    default_modes: tuple[str, ...] = ()
    ops: tuple[str, ...] = ("copy",)
    fixed_device: str | None = None  # where the path always runs, whatever --device says
    in_default_sweep: bool = True
    isolated: bool = False  # a GPU framework: runs in its own worker process, never beside another
    cuda_only: bool = False  # has no path but to a CUDA GPU (the raw reference, CuPy)
    host_buffers: tuple[str, ...] = ("numpy",)  # the --host-buffer kinds it takes; the first is its default

    def sources(self, mode: str) -> tuple[str, ...]:
        """The host buffers this mode can start from (a pinned mode has only its own)."""
        return self.host_buffers

    def missing(self) -> str | None:
        """Why the framework cannot be used here (not installed), or None."""
        if self.module and importlib.util.find_spec(self.module) is None:
            return f"{self.title} is not installed: pip install 'xferbench[{self.extra}]'"
        return None

    def devices(self) -> list[str]:
        """The devices this backend can reach on this machine."""
        return [self.fixed_device] if self.fixed_device else ["cpu"]

    def skip_reason(self, key: SeriesKey) -> str | None:
        """Why this mode/op/host buffer cannot run on this device, or None."""
        return None

    def absent_reason(self, device: str, present: list[str]) -> str:
        """Why the requested device is missing for this framework, with what would bring it."""
        return f"{self.name} sees no {device} device here (it sees: {', '.join(present) or 'none'})"

    @abstractmethod
    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo: ...

    @abstractmethod
    def host_bytes(self, spec: Spec) -> int:
        """Host memory one prepared transfer needs, checked before anything is allocated."""

    @abstractmethod
    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer: ...

    def is_out_of_memory(self, error: BaseException) -> bool:
        return isinstance(error, MemoryError)

    def environment(self) -> dict[str, Any]:
        """Framework version and the devices it sees, for the result's environment."""
        return {}
