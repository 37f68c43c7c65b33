"""The backends, registered explicitly: one module per framework."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from xferbench.measuring.backends.base import OPS, Backend, SeriesInfo, Transfer
from xferbench.measuring.backends.cuda import CudaBackend
from xferbench.measuring.backends.cupy import CupyBackend
from xferbench.measuring.backends.hip import HipBackend
from xferbench.measuring.backends.host import HostBackend
from xferbench.measuring.backends.jax import JaxBackend
from xferbench.measuring.backends.pytorch import TorchBackend
from xferbench.measuring.backends.sim import SimBackend, SimLink
from xferbench.measuring.backends.tensorflow import TFBackend
from xferbench.core.errors import XferbenchError
from xferbench.core.spec import SeriesKey

# The raw reference first: every curve after it is read against its ceiling.
BACKENDS: dict[str, Backend] = {b.name: b for b in (CudaBackend(), HipBackend(), TorchBackend(), TFBackend(), JaxBackend(),
                                                    CupyBackend(), HostBackend(), SimBackend())}  # fmt: skip


def default_backends() -> list[Backend]:
    """The frameworks a sweep with no --framework runs: every installed one that runs by default."""
    return [b for b in BACKENDS.values() if b.in_default_sweep and not b.missing()]


def sweep_flags(backend: Backend, mode: str, device: str, auto: str) -> str | None:
    """The options a sweep needs to run this path on `device`: None where a sweep without --framework,
    --mode and --device selects it (the planner's own choice: in_default_sweep, chosen_modes, and
    `auto`, the device --device auto resolves to)."""
    flags = []
    if mode not in backend.chosen_modes():
        flags += [f"-f {backend.name}", f"-m {mode}"]
    elif not backend.in_default_sweep:
        flags.append(f"-f {backend.name}")
    if not backend.fixed_device and device != auto:
        flags.append(f"--device {device}")
    return " ".join(flags) or None


def mode_defaults() -> str:
    """Each framework's modes, those a sweep runs unless --mode names others first: for --mode's help."""
    run = "; ".join(f"{b.name}: {', '.join(b.chosen_modes())}" + ("" if b.in_default_sweep else f" (with -f {b.name})")
                    for b in BACKENDS.values())  # fmt: skip
    named = "; ".join(f"{b.name}: {', '.join(m for m in b.modes if m not in b.chosen_modes())}"
                      for b in BACKENDS.values() if set(b.modes) - set(b.chosen_modes()))  # fmt: skip
    return f"Default: {run}." + (f" Run only when named: {named}." if named else "")


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


def path_availability(devices: Mapping[str, list[str]], failed: Mapping[str, str] | None = None) -> list[PathAvailability]:
    """Every framework/mode on every device kind, with the reason wherever it cannot run here.

    `devices` holds what each installed framework reaches, as its own process saw it; `failed`, the
    error of each installed framework that could not start.
    """
    rows = []
    for backend in BACKENDS.values():
        missing = backend.missing() or (failed or {}).get(backend.name)
        present = [] if missing else devices[backend.name]
        if backend.fixed_device:
            listed = [backend.fixed_device]
        else:
            kinds = ("cuda",) if backend.cuda_only else backend.device_kinds  # a CUDA-only path has no row elsewhere
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
    "default_backends",
    "get_backend",
    "mode_defaults",
    "path_availability",
    "sweep_flags",
]
