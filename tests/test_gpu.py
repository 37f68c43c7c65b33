"""GPU checks: run only where a framework sees CUDA or MPS; skipped cleanly elsewhere."""

import importlib.util

import pytest

from conftest import FAST, HAS_TORCH, run_config
from xferbench.measuring.backends import BACKENDS
from xferbench.measuring.measure import measure_series
from xferbench.core.results import Series
from xferbench.core.spec import SeriesKey
from xferbench.measuring.sweep import SweepConfig, make_plan, new_result, run_plan, start_runners


sweep = run_config


def _has(kind: str) -> bool:
    if not HAS_TORCH:
        return False
    import torch

    return torch.cuda.is_available() if kind == "cuda" else torch.backends.mps.is_available()


pytestmark = pytest.mark.gpu


@pytest.mark.skipif(not _has("cuda"), reason="no CUDA device")
def test_cuda_all_modes_both_ops_deliver_and_record_device_time() -> None:
    config = SweepConfig(frameworks=("torch",), ops=("copy", "seed"), device="cuda", batch_sizes=(1, 64), timing=FAST)
    result = sweep(config)
    assert len(result.series) == 6
    for s in result.series:
        assert s.status == "ok" and s.transfer == "host-to-device" and s.device_clock == "torch.cuda.Event"
        for p in s.points:
            assert p.status == "ok", p.error
            assert len(p.device_times_s) == p.n and p.device_mbps > 0


@pytest.mark.skipif(not _has("cuda"), reason="no CUDA device")
def test_cuda_pinning_per_call_and_a_fresh_host_copy_deliver() -> None:
    """The paths users write that pay for pinning, or for a fresh host copy, on every call."""
    config = SweepConfig(frameworks=("torch",), modes=("pin_per_call", "tensor", "pinned"), device="cuda",
                         batch_sizes=(1, 64), timing=FAST)  # fmt: skip
    series = {s.mode: s for s in sweep(config).series}
    for s in series.values():
        assert s.status == "ok" and s.transfer == "host-to-device", s.reason
        assert all(p.status == "ok" and p.mbps > 0 for p in s.points), [p.error for p in s.points]
    # pinning inside the call costs what a pinned source made once does not
    assert series["pin_per_call"].points[-1].mbps < series["pinned"].points[-1].mbps


@pytest.mark.skipif(not _has("cuda"), reason="no CUDA device")
def test_cuda_dataloaders_deliver_pinned_batches_and_time_the_overlap() -> None:
    """Every DataLoader mode on the GPU: batches verified on the device, the pinned ones pinned, and the
    compute kernel's figures beside each point."""
    config = SweepConfig(frameworks=("torch",), modes=("loader", "loader_pin", "loader_pin_workers"), device="cuda",
                         batch_sizes=(1, 64), timing=FAST, overlap=True, loader_workers=2)  # fmt: skip
    series = {s.mode: s for s in sweep(config).series}
    assert set(series) == {"loader", "loader_pin", "loader_pin_workers"}
    for s in series.values():
        assert s.status == "ok" and s.transfer == "host-to-device", s.reason
        assert s.params["pin_memory"] == ("_pin" in s.mode)
        for p in s.points:
            assert p.status == "ok", p.error
            figures = p.overlap_figures()
            assert figures is not None and figures.step_s > 0 and p.compute["kernel"] == "float32 1024x1024 matmul"


@pytest.mark.skipif(not _has("cuda"), reason="no CUDA device")
def test_cuda_out_of_memory_is_recorded_not_raised() -> None:
    import torch

    free, _ = torch.cuda.mem_get_info()
    hog = torch.empty(free - 256 * 2**20, dtype=torch.uint8, device="cuda")  # leave 256 MiB free
    try:  # in this process: a worker would need more than 256 MiB for its own CUDA context
        key = SeriesKey("torch", "pinned_into", "copy", "cuda:0", (1024, 1024), "pinned")
        s = Series("torch", "pinned_into", "copy", "cuda:0", [1024, 1024], "pinned")
        measure_series(BACKENDS["torch"], key, (1, 1024, 2048), {}, FAST, s)
    finally:
        del hog
        torch.cuda.empty_cache()
    assert [p.status for p in s.points] == ["ok", "error", "skipped"]
    assert s.points[1].error.startswith("out of memory")


@pytest.mark.skipif(not _has("mps"), reason="no Apple MPS device")
def test_mps_pageable_delivers() -> None:
    config = SweepConfig(frameworks=("torch",), ops=("copy", "seed"), device="mps", batch_sizes=(1, 16), timing=FAST)
    result = sweep(config)
    pageable = [s for s in result.series if s.mode == "pageable"]
    assert all(p.status == "ok" for s in pageable for p in s.points)
    assert all(s.status == "skipped" for s in result.series if s.mode != "pageable")


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="TensorFlow not installed")
def test_tensorflow_gpu_every_mode_delivers() -> None:
    runners = start_runners([BACKENDS["tf"]])
    try:
        gpus = [d for d in runners["tf"].devices() if d != "cpu"]
        seen = runners["tf"].environment() if gpus else {}
    finally:
        runners["tf"].close()
    if not gpus:
        pytest.skip("TensorFlow sees no GPU")
    if gpus[0].startswith("cuda"):  # TensorFlow's own PCI address, so NVML's facts, NUMA binding and the ceiling apply
        from xferbench.core import environment

        captured = environment.capture({"tf": seen})
        for device in captured["devices"][1:]:
            assert environment.pci_key(device["pci_bus_id"]), device
            assert captured["nvml"].get("gpus") is None or device.get("nvml"), f"{device['id']} not matched to NVML"
        assert seen["build_compute_capabilities"] and seen["onednn"] in (True, False)
    # The last GPU: a jit function placed by the tf.device inside it alone would run on GPU:0 and fail verification.
    config = SweepConfig(frameworks=("tf",), ops=("copy", "seed"), device=gpus[-1], batch_sizes=(1, 64), timing=FAST)
    result = sweep(config)
    assert len(result.series) == 6
    for s in result.series:
        if s.device == "mps" and s.mode == "jit":  # tensorflow-metal has no XLA compiler
            assert s.status == "skipped" and "no compiler for tensorflow-metal" in s.reason
            continue
        assert s.status == "ok" and s.transfer == "host-to-device", s.reason
        assert all(p.status == "ok" for p in s.points), [p.error for p in s.points]
        assert s.params["tf_device"] == f"/GPU:{gpus[-1].partition(':')[2] or 0}"


def _cuda_devices(framework: str) -> list[str]:
    """The CUDA devices a framework's own worker sees ([] when it is not installed)."""
    if BACKENDS[framework].missing():
        return []
    runners = start_runners([BACKENDS[framework]])
    try:
        return [d for d in runners[framework].devices() if d.startswith("cuda")]
    finally:
        runners[framework].close()


def test_raw_cuda_reference_delivers_with_event_time_near_wall_time() -> None:
    if not _cuda_devices("cuda"):
        pytest.skip("CuPy sees no CUDA GPU (or is not installed)")
    config = SweepConfig(frameworks=("cuda",), device="cuda", batch_sizes=(1, 256), timing=FAST)
    result = sweep(config)
    assert [s.label() for s in result.series] == ["cuda/raw_pinned/copy@cuda:0", "cuda/raw_pageable/copy@cuda:0"]
    for s in result.series:
        assert s.status == "ok" and s.device_clock and s.transfer == "host-to-device", s.reason
        for p in s.points:
            assert p.status == "ok" and len(p.device_times_s) == p.n, p.error
        large = s.points[-1]
        assert abs(large.device_mbps / large.mbps - 1) < 0.10  # 50 MB: launch overhead is small beside the copy
    pinned, pageable = (s.points[-1].mbps for s in result.series)
    assert pinned > pageable  # the staging through the driver's buffers costs something


def test_raw_registered_and_write_combined_sources_deliver() -> None:
    """A NumPy array pinned in place, and write-combined pinned memory: both page-locked, so both
    reach the pinned ceiling's order at 50 MB, and pinning in place records what it took."""
    if not _cuda_devices("cuda"):
        pytest.skip("CuPy sees no CUDA GPU (or is not installed)")
    config = SweepConfig(frameworks=("cuda",), modes=("raw_pinned", "raw_registered", "raw_pinned_wc"), device="cuda",
                         batch_sizes=(1, 256), timing=FAST)  # fmt: skip
    series = {s.mode: s for s in sweep(config).series}
    for s in series.values():
        assert s.status == "ok" and all(p.status == "ok" for p in s.points), s.reason
    assert all(p.pin_s and p.pin_s > 0 for p in series["raw_registered"].points)
    ceiling = series["raw_pinned"].points[-1].mbps
    assert series["raw_registered"].points[-1].mbps > 0.8 * ceiling


@pytest.mark.parametrize("framework", ["cupy", "jax"])
def test_cupy_and_jax_deliver_on_cuda(framework) -> None:
    if not _cuda_devices(framework):
        pytest.skip(f"{framework} sees no CUDA GPU (or is not installed)")
    result = sweep(SweepConfig(frameworks=(framework,), ops=("copy", "seed"), device="cuda", batch_sizes=(1, 64), timing=FAST))
    ran = [s for s in result.series if s.status != "skipped"]  # jax's pinned_host needs a JAX with memory kinds
    assert len(ran) >= 2 and all(s.mode != "asarray" or s.status == "ok" for s in result.series)
    for s in ran:
        assert s.status == "ok" and s.transfer == "host-to-device", s.reason
        assert all(p.status == "ok" for p in s.points), [p.error for p in s.points]


@pytest.mark.skipif(not _has("cuda"), reason="no CUDA device")
def test_the_link_is_sampled_under_load_with_real_nvml() -> None:
    pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed")
    from xferbench.core import environment
    from xferbench.core.timing import TimingConfig

    timing = TimingConfig(min_samples=100, min_time_s=1.5, max_samples=100_000)  # long enough for 0.1 s samples
    config = SweepConfig(frameworks=("torch",), modes=("pinned_into",), device="cuda", batch_sizes=(512,), timing=timing)
    plan = make_plan(config)
    try:
        result = run_plan(plan, new_result(plan, environment.capture(plan.environments())), save=lambda r: None)
    finally:
        plan.close()
    link = result.series[0].link
    assert link["reason"] is None and link["matched_by"] == "uuid", link.get("reason")
    summary = link["summary"]
    assert summary["samples"] >= 5 and summary["loaded_samples"] >= 1, summary  # 100 MB copies for over 1.5 s
    assert 1 <= summary["gen_under_load"][1] <= link["pcie_gen_max"]
    assert summary["rx_mbps_peak"] > 1000  # host-to-device bytes are the GPU's RX


def test_streamed_raw_and_torch_copies_deliver_and_hide_the_launch_cost() -> None:
    """Streamed: the same copies queued on a held stream. At batch 1 (196 KB, a few µs on the link) a
    per-call sample is mostly launch and wait, so streamed must read faster; at 64 both verify."""
    if not _cuda_devices("cuda"):
        pytest.skip("CuPy sees no CUDA GPU (or is not installed)")
    frameworks = ("cuda", "torch") if _has("cuda") else ("cuda",)
    config = SweepConfig(frameworks=frameworks, modes=("raw_pinned", "pinned_into"), device="cuda", batch_sizes=(1, 64),
                         timing=FAST, methods=("per-call", "streamed"))  # fmt: skip
    result = sweep(config)
    by = {s.label(): s for s in result.series}
    for label in [k for k in by if k.endswith("streamed@cuda:0")]:
        s = by[label]
        assert s.status == "ok" and "per copy" in s.clock, s.reason
        for p in s.points:
            assert p.status == "ok" and p.copies >= 2 and p.transfers >= p.n * p.copies, p.error
    raw, raw_streamed = by["cuda/raw_pinned/copy@cuda:0"], by["cuda/raw_pinned/copy/streamed@cuda:0"]
    assert raw_streamed.points[0].mbps > raw.points[0].mbps  # launch and wait out of the figure
    assert raw.numa.get("cpus") or raw.numa.get("reason")  # bound, or the reason why not is recorded


def test_nvml_counts_the_bytes_a_streamed_raw_run_claims() -> None:
    pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed")
    if not _cuda_devices("cuda"):
        pytest.skip("CuPy sees no CUDA GPU (or is not installed)")
    from xferbench.health import validation_checks
    from xferbench.core import environment
    from xferbench.core.timing import TimingConfig

    timing = TimingConfig(min_time_s=3.0, max_samples=100_000, max_time_s=6.0)
    config = SweepConfig(frameworks=("cuda",), modes=("raw_pinned",), device="cuda", batch_sizes=(256,), shape=(512, 512, 4),
                         timing=timing, methods=("streamed",))  # fmt: skip
    plan = make_plan(config)
    try:
        result = run_plan(plan, new_result(plan, environment.capture(plan.environments())), save=lambda r: None)
    finally:
        plan.close()
    check = validation_checks.bytes_check([result])
    assert check.status == "pass", check


def test_jax_d2h_fetches_from_the_gpu() -> None:
    if not _cuda_devices("jax"):
        pytest.skip("JAX sees no CUDA GPU (or is not installed)")
    result = sweep(SweepConfig(frameworks=("jax",), modes=("device_put",), device="cuda", batch_sizes=(1, 64), timing=FAST,
                               directions=("d2h",)))  # fmt: skip
    (series,) = result.series
    assert series.status == "ok" and series.transfer == "device-to-host", series.reason
    assert all(p.status == "ok" and p.mbps > 0 for p in series.points), [p.error for p in series.points]


def test_jax_pinned_host_delivers_on_cuda() -> None:
    if not _cuda_devices("jax"):
        pytest.skip("JAX sees no CUDA GPU (or is not installed)")
    result = sweep(SweepConfig(frameworks=("jax",), modes=("pinned_host",), device="cuda", batch_sizes=(1, 64), timing=FAST))
    (series,) = result.series
    if series.status == "skipped":
        pytest.skip(series.reason)
    assert series.status == "ok" and all(p.status == "ok" for p in series.points), [p.error for p in series.points]


def test_every_direction_delivers_on_cuda_and_bidir_moves_more_than_one_way() -> None:
    """d2h and bidir on a real GPU: the raw copies, torch's and CuPy's, each checked byte for byte.
    A full-duplex PCIe link moves more both ways at once than one way; each direction is reported."""
    if not _cuda_devices("cuda"):
        pytest.skip("CuPy sees no CUDA GPU (or is not installed)")
    frameworks = ("cuda", "cupy", "torch") if _has("cuda") else ("cuda", "cupy")
    config = SweepConfig(frameworks=frameworks, modes=("raw_pinned", "raw_pageable", "asarray", "pageable", "pinned_into"),
                         device="cuda", batch_sizes=(1, 64), timing=FAST, directions=("h2d", "d2h", "bidir"))  # fmt: skip
    by = {s.label(): s for s in sweep(config).series}
    ran = [s for s in by.values() if s.status != "skipped"]
    assert {s.direction for s in ran} == {"h2d", "d2h", "bidir"}
    for s in ran:
        assert s.status == "ok" and all(p.status == "ok" for p in s.points), (s.label(), s.reason, [p.error for p in s.points])
        if s.direction == "bidir":
            assert s.transfer == "bidirectional" and all(set(p.direction_mbps) == {"h2d", "d2h"} for p in s.points)
    both, one = by["cuda/raw_pinned/copy/bidir@cuda:0"].points[-1], by["cuda/raw_pinned/copy@cuda:0"].points[-1]
    assert both.mbps > one.mbps


@pytest.mark.skipif(not _has("cuda"), reason="no CUDA device")
def test_what_pinning_alone_costs_is_a_figure_per_batch() -> None:
    """torch pin: x.pin_memory() alone, timed per call, with the first (allocating) call's seconds per point."""
    (series,) = sweep(SweepConfig(frameworks=("torch",), modes=("pin",), device="cuda", batch_sizes=(1, 64), timing=FAST)).series
    assert series.status == "ok" and series.transfer == "host-to-host" and series.device_clock is None, series.reason
    for p in series.points:
        assert p.status == "ok" and p.mbps > 0 and p.pin_s is not None and p.pin_s > 0, p.error


def test_every_gpu_at_once_reports_each_gpu_and_the_total() -> None:
    """--device all --concurrent on a machine with several GPUs: each GPU alone, then all at once."""
    gpus = _cuda_devices("cuda")
    if len(gpus) < 2:
        pytest.skip(f"needs two CUDA GPUs; CuPy sees {len(gpus)}")
    from xferbench.core import concurrency

    result = sweep(SweepConfig(frameworks=("cuda",), modes=("raw_pinned",), device="all", batch_sizes=(64,), timing=FAST,
                               concurrent=True))  # fmt: skip
    assert all(s.status == "ok" for s in result.series), [s.reason for s in result.series]
    (group,) = concurrency.groups(result)
    assert len(group.rows) == len(gpus) and group.total_at_once > max(r.at_once_mbps for r in group.rows)
    assert all(r.overlap is not None and r.overlap > 0.5 for r in group.rows), [r.overlap for r in group.rows]


def test_check_passes_judges_and_writes_its_verdicts(tmp_path) -> None:
    """xferbench check on a real GPU: a verdict per GPU, kept in the result file, in well under a minute."""
    if not _cuda_devices("cuda"):
        pytest.skip("CuPy sees no CUDA GPU (or is not installed)")
    import time

    from typer.testing import CliRunner

    from xferbench.cli import app
    from xferbench.core.results import load

    started = time.monotonic()
    ran = CliRunner().invoke(app, ["check", "--out", str(tmp_path / "%h.json")])
    assert ran.exit_code in (0, 1), ran.output
    (path,) = tmp_path.glob("*.json")
    result = load(path)
    assert result.check and result.check["devices"] and "nvml_after" in result.environment
    from xferbench.health.check import EXIT_CODES

    assert ran.exit_code == EXIT_CODES[result.check["status"]], (ran.exit_code, result.check["status"])  # the file says what the exit code says
    assert time.monotonic() - started < 120, "check took over two minutes"


def test_validate_quick_writes_its_folder_and_judges_the_link(tmp_path) -> None:
    """xferbench validate --quick on a real GPU, with whatever peers are on PATH: the folder, the
    verdict, and a raw ceiling judged against a link NVML described (never n/a on a real GPU)."""
    if not _cuda_devices("cuda"):
        pytest.skip("CuPy sees no CUDA GPU (or is not installed)")
    import subprocess
    import sys

    folder = tmp_path / "validation"
    ran = subprocess.run([sys.executable, "-m", "xferbench", "validate", str(folder), "--quick", "-f", "cuda", "-f", "torch"],
                         capture_output=True, text=True, timeout=900)  # fmt: skip
    assert ran.returncode in (0, 1), ran.stdout[-2000:] + ran.stderr[-2000:]
    verdict = (folder / "verdict.md").read_text()
    assert "| raw pinned ceiling within 80%–100% of the theoretical link | **N/A**" not in verdict, verdict
    assert (folder / "default.json").exists() and (folder / "nvidia-smi-q.txt").exists()
    assert ("published for" in verdict) or ("no published host-to-device figure" in verdict)
