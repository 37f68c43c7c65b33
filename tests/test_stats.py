import math

import numpy as np
import pytest

from xferbench.core.stats import fit_latency_bandwidth, mbps, point_stats, summarize

BATCHES = [2**i for i in range(10)]
IMAGE = 256 * 256 * 3


def times_for(curve_mbps: list[float]) -> list[float]:
    return [b * IMAGE / (r * 1e6) for b, r in zip(BATCHES, curve_mbps)]


def test_point_stats_uses_median_and_percentiles() -> None:
    times = [1.0, 2.0, 3.0, 4.0, 100.0]  # one outlier: the median ignores it, p90 shows it
    s = point_stats(times, nbytes=4_000_000, batch_size=4)
    assert s.n == 5 and s.median_s == 3.0
    assert s.p10_s == pytest.approx(1.4) and s.p90_s == pytest.approx(61.6)
    assert s.mbps == pytest.approx(4 / 3)  # MB = 10**6 bytes, from the median
    assert s.batches_per_s == pytest.approx(1 / 3) and s.images_per_s == pytest.approx(4 / 3)
    assert s.mbps_p10 < s.mbps < s.mbps_p90


def test_point_stats_rejects_empty() -> None:
    with pytest.raises(ValueError):
        point_stats([], 1, 1)


def test_fit_recovers_exact_model() -> None:
    sizes = [2**k for k in range(10, 28)]
    fit = fit_latency_bandwidth(sizes, [8e-6 + b / 25e9 for b in sizes])
    assert fit is not None
    assert fit.latency_s == pytest.approx(8e-6, rel=1e-9)
    assert fit.bandwidth_mbps == pytest.approx(25_000, rel=1e-9)
    assert fit.half_bandwidth_bytes == pytest.approx(8e-6 * 25e9, rel=1e-9)
    assert fit.rel_rms < 1e-9


def test_fit_weighs_small_transfers_by_relative_error() -> None:
    # An absolute least-squares fit would let the large sizes swamp the 5 µs latency entirely.
    sizes = np.array([1e3, 1e4, 1e5, 1e6, 1e8])
    times = 5e-6 + sizes / 10e9
    times[-1] *= 1.02  # 2% noise on the largest point
    fit = fit_latency_bandwidth(sizes, times)
    assert fit is not None and fit.latency_s == pytest.approx(5e-6, rel=0.05)


def test_fit_clamps_negative_latency_and_handles_latency_only() -> None:
    sizes = [1e6, 2e6, 4e6]
    fit = fit_latency_bandwidth(sizes, [0.9e-4, 2.1e-4, 4.1e-4])  # intercept would be negative
    assert fit is not None and fit.latency_s == 0.0 and fit.bandwidth_mbps > 0
    flat = fit_latency_bandwidth(sizes, [1e-3, 1e-3, 1e-3])  # no per-byte cost at all
    assert flat is not None and flat.bandwidth_mbps is None and flat.latency_s == pytest.approx(1e-3)


def test_fit_needs_two_distinct_sizes() -> None:
    assert fit_latency_bandwidth([1e6], [1e-3]) is None
    assert fit_latency_bandwidth([1e6, 1e6], [1e-3, 1.1e-3]) is None


def test_summary_flags_the_reports_tensorflow_cliff() -> None:
    # The original report's TF curve: peak ~4.1 GB/s at batch 128, ~2.1 GB/s at 256 and 512.
    tf = [300, 600, 1100, 1900, 2800, 3500, 3900, 4100, 2100, 2100]
    s = summarize(BATCHES, [b * IMAGE for b in BATCHES], times_for(tf))
    assert s.peak_mbps == pytest.approx(4100) and s.peak_batch_size == 128
    assert s.cliff and s.cliff_batch_size == 256
    assert s.cliff_drop == pytest.approx(2000 / 4100)
    assert s.saturation_batch_size == 64  # 3900 >= 0.95 * 4100


def test_summary_of_the_reports_pytorch_plateau() -> None:
    # PyTorch rose to ~9.35 GB/s by batch 32 and stayed there: no cliff.
    torch_curve = [1500, 2800, 4800, 7000, 8800, 9350, 9330, 9340, 9320, 9350]
    s = summarize(BATCHES, [b * IMAGE for b in BATCHES], times_for(torch_curve))
    assert not s.cliff and s.cliff_batch_size is None
    assert s.saturation_batch_size == 32  # 8800 < 0.95 * 9350 <= 9350
    assert s.peak_batch_size in (32, 512)


def test_summary_small_dip_is_not_a_cliff() -> None:
    curve = [1000, 2000, 4000, 5000, 4100]  # 18% below the peak: under the 20% threshold
    s = summarize(BATCHES[:5], [b * IMAGE for b in BATCHES[:5]], times_for(curve))
    assert not s.cliff and s.cliff_drop == pytest.approx(0.18)


def test_summary_of_nothing() -> None:
    s = summarize([], [], [])
    assert s.peak_mbps is None and not s.cliff


def test_mbps_is_decimal_megabytes() -> None:
    assert mbps(10**6, 1.0) == 1.0
    assert math.isinf(mbps(1, 0.0))


def test_summary_line_marks_clamped_latency_and_poor_fit() -> None:
    from xferbench.reading.display import summary_line
    from xferbench.core.stats import Summary

    line = summary_line(Summary(peak_mbps=1e4, peak_batch_size=8, saturation_batch_size=4, latency_s=0.0,
                                bandwidth_mbps=9e3, fit_rel_rms=0.4))  # fmt: skip
    assert "latency ≈0 (clamped)" in line and "poor fit" in line and "no cliff" in line
    good = summary_line(Summary(peak_mbps=1e4, peak_batch_size=8, saturation_batch_size=4, latency_s=1e-5,
                                bandwidth_mbps=9e3, half_bandwidth_bytes=9e4, fit_rel_rms=0.01))  # fmt: skip
    assert "latency 10 µs" in good and "poor fit" not in good and "half bandwidth at 90 KB" in good

