"""Pure statistics over raw samples: per-point figures and per-series summaries.

MB/s always means 10**6 bytes of the uint8 host input per second, taken from the median time.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SATURATION_FRACTION = 0.95  # a batch "saturates" once it reaches this share of the peak
CLIFF_FRACTION = 0.80  # a larger batch below this share of the peak is a cliff


@dataclass(frozen=True)
class PointStats:
    n: int
    median_s: float
    p10_s: float
    p90_s: float
    mbps: float  # from the median
    mbps_p10: float  # from the p90 time: the slow end of the spread
    mbps_p90: float  # from the p10 time: the fast end of the spread
    batches_per_s: float
    images_per_s: float


def point_stats(times_s: Sequence[float], nbytes: int, batch_size: int) -> PointStats:
    """Median and p10/p90 of one point's raw times, and the rates derived from the median."""
    t = np.asarray(times_s, dtype=float)
    if t.size == 0:
        raise ValueError("no samples")
    p10, median, p90 = (float(v) for v in np.percentile(t, [10, 50, 90]))
    return PointStats(
        n=int(t.size),
        median_s=median,
        p10_s=p10,
        p90_s=p90,
        mbps=mbps(nbytes, median),
        mbps_p10=mbps(nbytes, p90),
        mbps_p90=mbps(nbytes, p10),
        batches_per_s=1.0 / median if median > 0 else float("inf"),
        images_per_s=batch_size / median if median > 0 else float("inf"),
    )


@dataclass(frozen=True)
class Overlap:
    """A pipeline's step with compute against its parts: the median seconds of delivering a batch
    alone, of the compute kernel alone, and of a step doing both."""

    copy_s: float
    compute_s: float
    step_s: float

    @property
    def hidden(self) -> float:
        """How much of the shorter part the step hid behind the other, 0 to 1: what the step saved against
        doing the two one after the other, over the most it could have saved (the shorter of the two). A
        step no shorter than the sum hid nothing; one as short as the longer part hid all it could."""
        saved, most = self.copy_s + self.compute_s - self.step_s, min(self.copy_s, self.compute_s)
        return min(1.0, max(0.0, saved / most)) if most > 0 else 0.0

    @property
    def balance(self) -> float:
        """The compute's length over the delivery's: near 1 where the kernel was sized well."""
        return self.compute_s / self.copy_s if self.copy_s > 0 else math.inf


def overlap_stats(copy_times_s: Sequence[float], compute_times_s: Sequence[float], step_times_s: Sequence[float]) -> Overlap:
    """The medians of a point's three sets of samples."""
    copy, compute, step = (float(np.median(np.asarray(t, dtype=float))) for t in (copy_times_s, compute_times_s, step_times_s))
    return Overlap(copy, compute, step)


def median_uncertainty(times_s: Sequence[float]) -> float | None:
    """Half the width of a distribution-free 95% confidence interval of the median, as a share of the
    median: the order statistics ranked n/2 − 0.98·√n and 1 + n/2 + 0.98·√n (counted from 1) bracket
    it (a binomial count of samples below it).
    None below 6 samples, where the interval is the whole range. Unlike p10–p90, it narrows as samples
    accumulate: a wide but steady spread measured long enough gives a well-known median."""
    n = len(times_s)
    if n < 6:
        return None
    t = np.sort(np.asarray(times_s, dtype=float))
    half = 0.98 * np.sqrt(n)
    low, high = max(0, int(np.floor(n / 2 - half)) - 1), min(n - 1, int(np.ceil(n / 2 + half)))
    median = float(np.median(t))
    return float(t[high] - t[low]) / (2 * median) if median > 0 else None


def mbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e6 if seconds > 0 else float("inf")


@dataclass(frozen=True)
class Fit:
    """t = latency + bytes / bandwidth, fitted by least squares on relative error."""

    latency_s: float
    bandwidth_mbps: float | None  # None: no measurable per-byte cost (infinite bandwidth)
    half_bandwidth_bytes: float | None  # size that reaches half the asymptotic bandwidth
    rel_rms: float  # root-mean-square relative residual: how well the model fits


def fit_latency_bandwidth(nbytes: Sequence[float], times_s: Sequence[float]) -> Fit | None:
    """Fit the latency + bandwidth model; None with fewer than two distinct sizes.

    Dividing each equation by its own time makes the residuals relative, so small transfers
    (where latency shows) weigh as much as large ones (where bandwidth shows). The model is
    linear in (latency, 1/bandwidth), so this is an ordinary least-squares problem.
    """
    b = np.asarray(nbytes, dtype=float)
    t = np.asarray(times_s, dtype=float)
    if b.size != t.size or np.unique(b).size < 2 or np.any(t <= 0):
        return None
    x1, x2 = 1.0 / t, b / t
    (latency, inv_bw), *_ = np.linalg.lstsq(np.column_stack([x1, x2]), np.ones_like(t), rcond=None)
    if latency < 0:  # a negative latency is unphysical: refit through the origin
        latency, inv_bw = 0.0, float(x2 @ np.ones_like(t) / (x2 @ x2))
    if inv_bw <= 0:  # no per-byte cost is measurable: latency only
        latency, inv_bw = float(x1 @ np.ones_like(t) / (x1 @ x1)), 0.0
    predicted = latency + b * inv_bw
    rel_rms = float(np.sqrt(np.mean(((predicted - t) / t) ** 2)))
    if inv_bw == 0:
        return Fit(float(latency), None, None, rel_rms)
    bandwidth = 1.0 / inv_bw  # bytes/s
    return Fit(float(latency), bandwidth / 1e6, float(latency * bandwidth), rel_rms)


@dataclass(frozen=True)
class Summary:
    peak_mbps: float | None = None
    peak_batch_size: int | None = None
    saturation_batch_size: int | None = None
    latency_s: float | None = None
    bandwidth_mbps: float | None = None
    half_bandwidth_bytes: float | None = None
    fit_rel_rms: float | None = None
    cliff: bool = False
    cliff_batch_size: int | None = None  # first batch past the peak below CLIFF_FRACTION of it
    cliff_drop: float | None = None  # worst fall past the peak, as a fraction of the peak
    # Points measured on a busy machine: left out of every figure above when any clean point is left
    # (busy_only False), else the figures rest on them all (busy_only True)
    busy_batch_sizes: list[int] = dataclasses.field(default_factory=list)
    busy_only: bool = False


def summarize(
    batch_sizes: Sequence[int], nbytes: Sequence[int], median_s: Sequence[float], busy: Sequence[bool] = ()
) -> Summary:
    """Peak, saturation, latency/bandwidth fit and cliff flag of one curve's successful points.

    A point measured on a busy machine (`busy`, per point) can move either way by several times, so
    it never sets a headline figure silently: it is left out while any clean point remains, and
    named (busy_batch_sizes) either way."""
    flagged = sorted(int(b) for b, is_busy in zip(batch_sizes, busy) if is_busy)
    clean = [i for i in range(len(batch_sizes)) if not (i < len(busy) and busy[i])]
    if flagged and clean:
        summary = summarize([batch_sizes[i] for i in clean], [nbytes[i] for i in clean], [median_s[i] for i in clean])
        return dataclasses.replace(summary, busy_batch_sizes=flagged)
    if flagged:
        return dataclasses.replace(summarize(batch_sizes, nbytes, median_s), busy_batch_sizes=flagged, busy_only=True)
    if not batch_sizes:
        return Summary()
    order = np.argsort(batch_sizes)
    batches = [int(batch_sizes[i]) for i in order]
    rates = [mbps(nbytes[i], median_s[i]) for i in order]
    peak_index = int(np.argmax(rates))
    peak = rates[peak_index]
    saturation = next(b for b, r in zip(batches, rates) if r >= SATURATION_FRACTION * peak)
    after = rates[peak_index + 1 :]
    worst = min(after) if after else peak
    cliff_batch = next(
        (b for b, r in zip(batches[peak_index + 1 :], after) if r < CLIFF_FRACTION * peak), None
    )
    fit = fit_latency_bandwidth([nbytes[i] for i in order], [median_s[i] for i in order])
    return Summary(
        peak_mbps=peak,
        peak_batch_size=batches[peak_index],
        saturation_batch_size=saturation,
        latency_s=fit.latency_s if fit else None,
        bandwidth_mbps=fit.bandwidth_mbps if fit else None,
        half_bandwidth_bytes=fit.half_bandwidth_bytes if fit else None,
        fit_rel_rms=fit.rel_rms if fit else None,
        cliff=cliff_batch is not None,
        cliff_batch_size=cliff_batch,
        cliff_drop=(peak - worst) / peak if after and peak > 0 else None,
    )
