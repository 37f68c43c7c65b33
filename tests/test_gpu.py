"""GPU checks: run only where PyTorch sees CUDA or MPS; skipped cleanly elsewhere."""

import pytest

from conftest import FAST, HAS_TORCH
from xferbench.sweep import SweepConfig, make_plan, new_result, run_plan


def _has(kind: str) -> bool:
    if not HAS_TORCH:
        return False
    import torch

    return torch.cuda.is_available() if kind == "cuda" else torch.backends.mps.is_available()


pytestmark = pytest.mark.gpu


@pytest.mark.skipif(not _has("cuda"), reason="no CUDA device")
def test_cuda_all_modes_both_ops_deliver_and_record_device_time() -> None:
    config = SweepConfig(frameworks=("torch",), ops=("copy", "seed"), device="cuda", batch_sizes=(1, 64), timing=FAST)
    plan = make_plan(config)
    result = run_plan(plan, new_result(plan, {}), save=lambda r: None)
    assert len(result.series) == 6
    for s in result.series:
        assert s.status == "ok" and s.transfer == "host-to-device" and s.device_clock == "torch.cuda.Event"
        for p in s.points:
            assert p.status == "ok", p.error
            assert len(p.device_times_s) == p.n and p.device_mbps > 0


@pytest.mark.skipif(not _has("cuda"), reason="no CUDA device")
def test_cuda_out_of_memory_is_recorded_not_raised() -> None:
    import torch

    free, _ = torch.cuda.mem_get_info()
    hog = torch.empty(free - 256 * 2**20, dtype=torch.uint8, device="cuda")  # leave 256 MiB free
    try:
        config = SweepConfig(frameworks=("torch",), modes=("pinned_into",), device="cuda", shape=(1024, 1024),
                             batch_sizes=(1, 1024, 2048), timing=FAST)  # fmt: skip
        plan = make_plan(config)
        s = run_plan(plan, new_result(plan, {}), save=lambda r: None).series[0]
    finally:
        del hog
        torch.cuda.empty_cache()
    assert [p.status for p in s.points] == ["ok", "error", "skipped"]
    assert s.points[1].error.startswith("out of memory")


@pytest.mark.skipif(not _has("mps"), reason="no Apple MPS device")
def test_mps_pageable_delivers() -> None:
    config = SweepConfig(frameworks=("torch",), ops=("copy", "seed"), device="mps", batch_sizes=(1, 16), timing=FAST)
    plan = make_plan(config)
    result = run_plan(plan, new_result(plan, {}), save=lambda r: None)
    pageable = [s for s in result.series if s.mode == "pageable"]
    assert all(p.status == "ok" for s in pageable for p in s.points)
    assert all(s.status == "skipped" for s in result.series if s.mode != "pageable")
