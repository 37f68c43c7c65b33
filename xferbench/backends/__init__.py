"""The backends, registered explicitly: one module per framework."""

from __future__ import annotations

from xferbench.backends.base import OPS, Backend, SeriesInfo, Transfer
from xferbench.backends.host import HostBackend
from xferbench.backends.pytorch import TorchBackend
from xferbench.backends.sim import SimBackend, SimLink
from xferbench.errors import XferbenchError

BACKENDS: dict[str, Backend] = {b.name: b for b in (TorchBackend(), HostBackend(), SimBackend())}
PLANNED = {"tf": "TensorFlow", "jax": "JAX", "cupy": "CuPy", "cuda": "The raw CUDA reference"}


def get_backend(name: str) -> Backend:
    """The registered backend of that name, installed; otherwise a one-line error that says what to do."""
    backend = BACKENDS.get(name)
    if backend is None:
        if name in PLANNED:
            raise XferbenchError(f"{PLANNED[name]} paths are planned but not in this version; choose from: {', '.join(BACKENDS)}")
        raise XferbenchError(f"unknown framework {name!r}; choose from: {', '.join(BACKENDS)}")
    reason = backend.missing()
    if reason:
        raise XferbenchError(reason)
    return backend


__all__ = ["BACKENDS", "OPS", "Backend", "SeriesInfo", "SimLink", "Transfer", "get_backend"]
