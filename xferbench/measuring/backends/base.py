"""The small protocol every framework backend implements.

A backend prepares a Transfer once per batch size. Calling the Transfer does one transfer and
returns only when the data is on the device; verify() proves the bytes arrived. A path that can
queue copies on a held stream also implements streamed(), the streamed timing method.
"""

from __future__ import annotations

import importlib.util
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from xferbench.core.spec import BIDIR, H2D, PER_CALL, STREAMED, SeriesKey, Spec
from xferbench.core.timing import STREAM_PROBE_COPIES, Clock

OPS = ("copy", "seed")


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
    method: str = PER_CALL  # the series' timing method: a streamed series' verify() checks a streamed run
    # Host-to-device transfers issued so far (calls, streamed copies, verification), where the path
    # counts them: the bytes a point claims to have moved, for a check against the link's own counters.
    transfers: int | None = None
    pin_s: float | None = None  # seconds spent pinning the source in place before any sample, where a path does
    staging_chunk_bytes: int | None = None  # host/staged: the chunk it copies by, at most the batch (recorded per point)
    virtual: bool = False  # timed on a simulated clock: its samples take no real time

    @abstractmethod
    def __call__(self) -> float | dict[str, float] | None:
        """Do one synchronized transfer; return its device-clock seconds where a device clock exists
        (a bidir call: each direction's own seconds, by direction)."""

    def streamed(self, copies: int) -> float:
        """Hold the stream, queue STREAM_WARM_COPIES and then `copies` transfers between two device
        events, release it, wait, and return the events' seconds (Backend.streamed_reason says where)."""
        raise NotImplementedError(f"{type(self).__name__} has no streamed timing")

    def once(self) -> None:
        """One transfer as the series times it: a call, or a short streamed run. verify() uses it."""
        if self.method == STREAMED:
            self.streamed(STREAM_PROBE_COPIES)
        else:
            self()

    def host_span(self) -> tuple[int, int] | None:
        """The source buffer's address and size, so the NUMA node of its pages can be read; None where unknown."""
        return None

    @abstractmethod
    def verify(self) -> None:
        """Do one transfer (once()) into a poisoned destination; raise VerificationError unless every byte matches."""

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
    device_kinds: tuple[str, ...] = ("cpu", "cuda", "mps")  # the kinds of device it has paths to, present or not
    host_buffers: tuple[str, ...] = ("numpy",)  # the --host-buffer kinds it takes; the first is its default

    def chosen_modes(self, modes: Sequence[str] = ()) -> tuple[str, ...]:
        """The modes a sweep runs: those of --mode (`modes`) this backend has, else its default_modes.
        The planner, the time budget and the help all read it, so what they say is what runs."""
        return tuple(m for m in modes if m in self.modes) if modes else self.default_modes

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

    def directions(self, mode: str) -> tuple[str, ...]:
        """The directions this mode can copy in (spec.DIRECTIONS); most paths go host to device only."""
        return (H2D,)

    def direction_reason(self, key: SeriesKey) -> str | None:
        """Why this path cannot copy in the key's direction, or None where it can."""
        ways = self.directions(key.mode)
        if key.direction in ways:
            return None
        if key.direction == BIDIR and len(ways) > 1:
            return f"{key.framework}/{key.mode} has no bidir path (it copies {' or '.join(ways)}, one way at a time)"
        return f"{key.framework}/{key.mode} has no {key.direction} path; it copies {', '.join(ways)}"

    def streamed_reason(self, key: SeriesKey) -> str | None:
        """Why this path cannot be timed streamed, or None where it can (Transfer.streamed)."""
        return (f"{key.framework}/{key.mode} cannot queue its transfers on a held stream (it allocates, or"
                " waits, between them): it is timed per call only")  # fmt: skip

    def absent_reason(self, device: str, present: list[str]) -> str:
        """Why the requested device is missing for this framework, with what would bring it."""
        return f"{self.name} sees no {device} device here (it sees: {', '.join(present) or 'none'})"

    @abstractmethod
    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo: ...

    @abstractmethod
    def host_bytes(self, spec: Spec) -> int:
        """Host memory one prepared transfer needs, checked before anything is allocated."""

    def host_bytes_for(self, spec: Spec, params: dict[str, Any]) -> int:
        """Host memory one transfer prepared with the sweep's parameters (those prepare() gets) needs: what the
        sweep checks. The same as host_bytes unless a parameter changes it, as --loader-workers does a DataLoader's."""
        return self.host_bytes(spec)

    @abstractmethod
    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer: ...

    def is_out_of_memory(self, error: BaseException) -> bool:
        return isinstance(error, MemoryError)

    def environment(self) -> dict[str, Any]:
        """Framework version and the devices it sees, for the result's environment."""
        return {}
