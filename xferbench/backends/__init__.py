"""The backends, registered explicitly: one module per framework."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from xferbench.backends.base import OPS, Backend, SeriesInfo, Transfer
from xferbench.backends.cuda import CudaBackend
from xferbench.backends.cupy import CupyBackend
from xferbench.backends.host import HostBackend
from xferbench.backends.jax import JaxBackend
from xferbench.backends.pytorch import TorchBackend
from xferbench.backends.sim import SimBackend, SimLink
from xferbench.backends.tensorflow import TFBackend
from xferbench.errors import XferbenchError
from xferbench.spec import SeriesKey

# The raw reference first: every curve after it is read against its ceiling.
BACKENDS: dict[str, Backend] = {b.name: b for b in (CudaBackend(), TorchBackend(), TFBackend(), JaxBackend(), CupyBackend(),
                                                    HostBackend(), SimBackend())}  # fmt: skip


def get_backend(name: str) -> Backend:
    """The registered backend of that name, installed; otherwise a one-line error that says what to do."""
    backend = BACKENDS.get(name)
    if backend is None:
        raise XferbenchError(f"unknown framework {name!r}; choose from: {', '.join(BACKENDS)}")
    reason = backend.missing()
    if reason:
        raise XferbenchError(reason)
    return backend


class PathAvailability(NamedTuple):
    framework: str
    mode: str
    ops: tuple[str, ...]
    device: str  # a device id present here, or a kind (cuda, mps) that is absent
    reason: str | None  # why the path cannot run there; None when it can


def path_availability(devices: Mapping[str, list[str]]) -> list[PathAvailability]:
    """Every framework/mode on every device kind, with the reason wherever it cannot run here.

    `devices` holds what each installed framework reaches, as its own process saw it.
    """
    rows = []
    for backend in BACKENDS.values():
        missing = backend.missing()
        present = [] if missing else devices[backend.name]
        if backend.fixed_device:
            listed = [backend.fixed_device]
        else:
            kinds = ("cuda",) if backend.cuda_only else ("cpu", "cuda", "mps")  # a CUDA-only path has no row elsewhere
            absent = [k for k in kinds if not any(d.split(":")[0] == k for d in present)]
            listed = present + absent
        for mode in backend.modes:
            for device in listed:
                if missing:
                    reason = missing
                elif device not in present:
                    reason = backend.absent_reason(device, present) if backend.isolated else f"no {device} device present"
                else:
                    reason = backend.skip_reason(SeriesKey(backend.name, mode, "copy", device, (1,)))
                rows.append(PathAvailability(backend.name, mode, backend.ops, device, reason))
    return rows


__all__ = [
    "BACKENDS",
    "OPS",
    "Backend",
    "PathAvailability",
    "SeriesInfo",
    "SimLink",
    "Transfer",
    "get_backend",
    "path_availability",
]
