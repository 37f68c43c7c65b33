"""JAX on the CPU, as CI runs it: both ops deliver, zero-copy is caught, and bad input is one line."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from conftest import FAST
from xferbench.measuring.backends import BACKENDS
from xferbench.core.errors import VerificationError
from xferbench.core.results import Result
from xferbench.core.spec import SeriesKey
from xferbench.measuring.sweep import SweepConfig, make_plan, new_result, run_plan

pytestmark = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="JAX not installed (pip install 'xferbench[jax]')")
SHAPE = (64, 64, 3)


def sweep(**kwargs) -> Result:
    plan = make_plan(SweepConfig(frameworks=("jax",), device="cpu", batch_sizes=(1, 8), timing=FAST, shape=SHAPE, **kwargs))
    try:
        return run_plan(plan, new_result(plan, {}), save=lambda r: None)
    finally:
        plan.close()


@pytest.mark.slow
def test_both_ops_deliver_on_the_cpu_in_a_worker() -> None:
    result = sweep(ops=("copy", "seed"))
    assert [s.label() for s in result.series] == ["jax/device_put/copy@cpu", "jax/device_put/seed@cpu",
                                                  "jax/pinned_host/copy@cpu", "jax/pinned_host/seed@cpu"]  # fmt: skip
    assert all(s.status == "skipped" and "needs a CUDA GPU" in s.reason for s in result.series[2:])
    for series in result.series[:2]:
        assert series.status == "ok" and series.transfer == "host-to-host", series.reason
        assert all(p.status == "ok" and p.n >= 3 and p.host_offset == 16 for p in series.points), [p.error for p in series.points]
        assert series.params["platform"] == "cpu" and "host-side copy" in series.note
    assert result.series[0].sync == "jax.Array.block_until_ready()"
    assert result.series[1].sync == "the result fetched to the host with np.asarray"


def test_an_aligned_source_on_the_cpu_is_skipped_as_zero_copy() -> None:
    result = sweep(host_buffers=("numpy", "aligned"))
    aligned = next(s for s in result.series if s.host_buffer == "aligned")
    assert aligned.status == "skipped" and "zero-copy" in aligned.reason
    assert next(s for s in result.series if s.host_buffer == "numpy").status == "ok"


def prepare(host_buffer: str = "numpy", op: str = "copy", mode: str = "device_put"):
    key = SeriesKey("jax", mode, op, "cpu", SHAPE, host_buffer)
    return BACKENDS["jax"].prepare(key.at(4), {})


def test_the_pinned_host_path_copies_from_pinned_memory() -> None:
    """Skipped on the CPU in a sweep, but JAX has the memory kinds there too: the path's own code runs."""
    from xferbench.measuring.backends.jax import pinned_host_reason

    transfer = prepare(mode="pinned_host")
    if pinned_host_reason(transfer.device):
        pytest.skip(pinned_host_reason(transfer.device))
    assert transfer.pinned.sharding.memory_kind == "pinned_host" and transfer.host_offset is None
    transfer()
    transfer.verify()
    assert transfer.host_span()[0] == transfer.pinned.unsafe_buffer_pointer()
    moved, _ = transfer._run()
    assert moved.sharding.memory_kind == "device" and moved.unsafe_buffer_pointer() != transfer.pinned.unsafe_buffer_pointer()


def test_verification_fails_a_result_that_aliases_the_source() -> None:
    transfer = prepare("aligned")  # what the skip avoids: JAX aliases an aligned buffer on the CPU
    moved, _ = transfer._run()
    if moved.unsafe_buffer_pointer() != transfer.host.ctypes.data:
        pytest.skip("this JAX copies even an aligned buffer on the CPU")
    with pytest.raises(VerificationError, match="shares memory with the NumPy source"):
        transfer.verify()


def test_verification_fails_stale_bytes_and_a_wrong_seed(monkeypatch) -> None:
    transfer = prepare()
    transfer.verify()  # the real path passes
    stale = transfer.jax.device_put(np.zeros_like(transfer.host), transfer.device)
    monkeypatch.setattr(transfer, "_run", lambda: (stale, None))
    with pytest.raises(VerificationError, match="differ"):
        transfer.verify()
    seed = prepare(op="seed")
    seed.verify()
    monkeypatch.setattr(seed, "_run", lambda: (stale, np.float32(-1)))
    with pytest.raises(VerificationError):
        seed.verify()


def test_devices_and_reasons_for_what_jax_cannot_reach() -> None:
    backend = BACKENDS["jax"]
    assert "jax-metal is experimental" in backend.absent_reason("mps", ["cpu"])
    assert "pip install 'xferbench[jax" in backend.absent_reason("cuda:0", ["cpu"])
    assert "choose it with --mode" in backend.skip_reason(SeriesKey("jax", "device_put", "copy", "cpu", SHAPE, "pinned"))
    assert "needs a CUDA GPU" in backend.skip_reason(SeriesKey("jax", "pinned_host", "copy", "cpu", SHAPE))
