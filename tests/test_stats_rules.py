"""The statistics' rules at their edges: exact percentiles and rates, the median's confidence interval,
a pipeline's overlap, the fit's fallbacks, and a curve's summary with busy points, unsorted batches,
and the saturation and cliff thresholds met exactly."""

from __future__ import annotations

import math
import random

import pytest

from xferbench.core.stats import Overlap, Summary, fit_latency_bandwidth, mbps, median_uncertainty, overlap_stats, point_stats, summarize


def test_point_rates_come_from_the_median_and_the_spread_from_the_other_percentiles() -> None:
    """MB/s from the median; the slow end of the spread from the p90 time, the fast end from the p10 time."""
    s = point_stats([4.0, 1.0, 100.0, 3.0, 2.0], nbytes=6_000_000, batch_size=8)
    assert (s.n, s.median_s, s.p10_s, s.p90_s) == (5, 3.0, pytest.approx(1.4), pytest.approx(61.6))
    assert s.mbps == pytest.approx(2.0) and s.mbps_p10 == pytest.approx(6 / 61.6) and s.mbps_p90 == pytest.approx(6 / 1.4)
    assert s.batches_per_s == pytest.approx(1 / 3) and s.images_per_s == pytest.approx(8 / 3)


def test_a_point_timed_at_zero_seconds_has_infinite_rates() -> None:
    """A clock too coarse to see the call gives infinite rates, never a division error."""
    s = point_stats([0.0, 0.0, 0.0], nbytes=10, batch_size=2)
    assert s.mbps == s.batches_per_s == s.images_per_s == math.inf
    assert mbps(10, 0.0) == math.inf and mbps(3_000_000, 2.0) == 1.5


def test_the_medians_uncertainty_is_half_its_95_percent_interval_over_the_median() -> None:
    """Ranks n/2 - 0.98 sqrt(n) and 1 + n/2 + 0.98 sqrt(n) bracket the median, in any order of samples."""
    assert median_uncertainty([1.0, 2.0, 3.0, 4.0, 5.0]) is None  # under 6 samples the interval is the whole range
    assert median_uncertainty([6.0, 2.0, 4.0, 1.0, 5.0, 3.0]) == pytest.approx(5 / 7)  # ranks 1 and 6 of 6, median 3.5
    hundred = [float(v) for v in range(1, 101)]
    random.Random(1).shuffle(hundred)
    assert median_uncertainty(hundred) == pytest.approx(21 / 101)  # ranks 40 and 61 of 100, median 50.5
    assert median_uncertainty([0.0] * 6) is None  # a zero median has no relative width


def test_overlap_is_what_the_step_saved_over_the_most_it_could_save() -> None:
    """Hidden share clamped to 0..1; the balance is compute over delivery; zero-length parts are safe."""
    assert Overlap(2.0, 1.0, 2.5).hidden == 0.5 and Overlap(2.0, 1.0, 2.5).balance == 0.5
    assert Overlap(2.0, 1.0, 3.5).hidden == 0.0  # slower than the two one after the other
    assert Overlap(2.0, 1.0, 1.5).hidden == 1.0  # faster than the longer part alone: all it could
    assert Overlap(2.0, 0.0, 1.0).hidden == 0.0 and Overlap(0.0, 1.0, 1.0).balance == math.inf
    assert overlap_stats([1.0, 9.0, 2.0], [3.0, 1.0, 2.0], [5.0, 4.0]) == Overlap(2.0, 2.0, 4.5)


def test_a_negative_latency_is_refitted_through_the_origin() -> None:
    """Bandwidth alone, by relative least squares; half bandwidth is then reached at zero bytes."""
    fit = fit_latency_bandwidth([1e6, 2e6, 4e6], [0.9e-4, 2.1e-4, 4.1e-4])
    assert fit is not None
    assert (fit.latency_s, fit.half_bandwidth_bytes) == (0.0, 0.0)
    assert fit.bandwidth_mbps == pytest.approx(10178.703970843166, rel=1e-9)
    assert fit.rel_rms == pytest.approx(0.0689314530620151, rel=1e-9)


def test_the_fit_refuses_mismatched_or_non_positive_times() -> None:
    """Sizes and times of different lengths, or a time of zero or less, give no fit rather than a wrong one."""
    assert fit_latency_bandwidth([1e6, 2e6, 3e6], [1e-3, 2e-3]) is None
    assert fit_latency_bandwidth([1e6, 2e6], [1e-3, 0.0]) is None
    assert fit_latency_bandwidth([1e6, 2e6], [1e-3, -1e-3]) is None


def test_a_latency_only_curve_fits_its_mean_latency_by_relative_error() -> None:
    """No per-byte cost: the latency that minimises relative error, and no bandwidth or half-bandwidth size."""
    fit = fit_latency_bandwidth([1e6, 2e6], [2e-3, 1e-3])
    assert fit is not None and fit.bandwidth_mbps is None and fit.half_bandwidth_bytes is None
    # x = 1/t = (500, 1000): latency = (500 + 1000) / (500² + 1000²) = 1.2e-3
    assert fit.latency_s == pytest.approx(1.2e-3)
    assert fit.rel_rms == pytest.approx(math.sqrt(((1.2 - 2) / 2) ** 2 / 2 + ((1.2 - 1) / 1) ** 2 / 2))


def test_a_curves_summary_in_full() -> None:
    """Peak, saturation, fit and cliff of an exact latency + bandwidth curve, given in any batch order."""
    batches = [4, 1, 16, 2, 8]
    nbytes = [b * 1_000_000 for b in batches]
    times = [1e-5 + n / 1e10 for n in nbytes]
    s = summarize(batches, nbytes, times)
    assert (s.peak_batch_size, s.saturation_batch_size, s.cliff, s.cliff_batch_size) == (16, 2, False, None)  # 9,524 of 9,938 MB/s
    assert s.peak_mbps == pytest.approx(16e6 / (1e-5 + 16e6 / 1e10) / 1e6)
    assert s.latency_s == pytest.approx(1e-5, rel=1e-6) and s.bandwidth_mbps == pytest.approx(10_000, rel=1e-6)
    assert s.half_bandwidth_bytes == pytest.approx(1e5, rel=1e-6) and s.fit_rel_rms == pytest.approx(0, abs=1e-9)
    assert s.cliff_drop is None  # nothing past the peak
    assert (s.busy_batch_sizes, s.busy_only) == ([], False)


def rates_curve(rates: list[float]) -> Summary:
    """A curve at batches 1, 2, 4, ... whose points run at exactly these MB/s (1 s each)."""
    return summarize([2**i for i in range(len(rates))], [int(r * 1e6) for r in rates], [1.0] * len(rates))


def test_saturation_is_the_first_batch_at_95_percent_of_the_peak_or_more() -> None:
    """Exactly 95% of the peak saturates; just under does not."""
    assert rates_curve([90.0, 95.0, 100.0]).saturation_batch_size == 2
    assert rates_curve([90.0, 94.0, 100.0]).saturation_batch_size == 4


def test_a_cliff_is_a_larger_batch_under_80_percent_of_the_peak() -> None:
    """Exactly 80% is no cliff; the first batch under it past the peak is named; the drop is the worst fall."""
    level = rates_curve([100.0, 80.0, 90.0])
    assert (level.cliff, level.cliff_batch_size, level.cliff_drop) == (False, None, pytest.approx(0.2))
    fell = rates_curve([50.0, 100.0, 85.0, 70.0, 60.0, 90.0])
    assert (fell.peak_batch_size, fell.cliff, fell.cliff_batch_size, fell.cliff_drop) == (2, True, 8, pytest.approx(0.4))
    assert rates_curve([80.0, 100.0, 79.0]).cliff_batch_size == 4  # before the peak, 80% is no cliff
    flat = rates_curve([0.0, 0.0])  # nothing moved at all: no cliff, no drop, no division by zero
    assert (flat.peak_mbps, flat.saturation_batch_size, flat.cliff, flat.cliff_drop) == (0.0, 1, False, None)


def test_busy_points_set_no_figure_while_a_clean_point_is_left_and_are_named() -> None:
    """The peak comes from the clean points; the busy ones are listed in batch order; all busy: said so."""
    batches, nbytes = [8, 1, 4, 2], [8_000_000, 1_000_000, 4_000_000, 2_000_000]
    times = [8 / 300, 1 / 100, 4 / 400, 2 / 200]  # 300, 100, 400, 200 MB/s
    assert summarize(batches, nbytes, times).peak_batch_size == 4
    some = summarize(batches, nbytes, times, busy=[False, True, True, False])
    assert (some.peak_batch_size, some.peak_mbps, some.busy_batch_sizes, some.busy_only) == (8, pytest.approx(300), [1, 4], False)
    assert some.saturation_batch_size == 8 and some.cliff_drop is None
    every = summarize(batches, nbytes, times, busy=[True] * 4)
    assert (every.peak_batch_size, every.busy_batch_sizes, every.busy_only) == (4, [1, 2, 4, 8], True)
    short = summarize(batches, nbytes, times, busy=[True])  # flags for the first point only: the rest are clean
    assert (short.peak_batch_size, short.busy_batch_sizes, short.busy_only) == (4, [8], False)
    assert summarize(batches, nbytes, times, busy=[False] * 4) == summarize(batches, nbytes, times)


def test_rates_and_widths_hold_for_times_and_peaks_under_one() -> None:
    """Half-second medians, sub-second intervals and peaks under 1 MB/s are figures like any other."""
    s = point_stats([0.5, 0.5, 0.5], nbytes=1_000_000, batch_size=3)
    assert (s.batches_per_s, s.images_per_s, s.mbps) == (2.0, 6.0, 2.0)
    assert median_uncertainty([v / 100 for v in range(1, 101)]) == pytest.approx(21 / 101)
    assert rates_curve([0.5, 0.25]).cliff_drop == pytest.approx(0.5)
    with pytest.raises(ValueError, match="^no samples$"):
        point_stats([], 1, 1)
