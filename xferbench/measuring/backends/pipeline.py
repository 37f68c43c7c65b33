"""What every input-pipeline path shares (torch's DataLoader, tf.data): a dataset whose batches tell
each other apart, the check that each delivered batch is the one that was due, and the calibrated
compute kernel of --overlap.

A pipeline path is timed as a training loop sees it: each call takes the next batch the pipeline
delivers, makes sure it is on the device and usable there, and returns. The pipeline runs ahead
between calls (prefetching, worker processes, a pinning thread), so a call's time is the step time
of a loop that does nothing else, and MB/s is the batch's bytes over that time.

The dataset holds 2b + 1 items for batch size b, each with its own bytes, and repeats forever, so
batch k holds items (k*b ... k*b + b - 1) mod (2b + 1). Its batches only repeat every 2b + 1
batches, so a pipeline that drops or repeats any number of batches below that delivers, at the next
check, a batch other than the one due: the check reads every byte of a delivered batch against the
items due, before the samples and again after them.
"""

from __future__ import annotations

import math
import os
import time
from abc import abstractmethod
from typing import Any

import numpy as np

from xferbench.measuring.backends.base import Transfer
from xferbench.measuring.buffers import ReadBack, check_all, make_source
from xferbench.core.environment import process_cpus
from xferbench.core.errors import VerificationError
from xferbench.core.timing import Clock, Samples, TimingConfig, sample

# torch's DataLoader workers in its *_workers modes unless --loader-workers says: one per core this process may run
# on (a container's or taskset's limit, where the OS says; else every core), up to 4
DEFAULT_LOADER_WORKERS = max(1, min(4, len(process_cpus() or ()) or os.cpu_count() or 1))
# What a pipeline series' clock times, said in its `clock` field
PIPELINE_CLOCK = "time.perf_counter, around taking the next batch and its wait, as a training loop's step with no compute"
BUFFER_BATCHES = 2  # batches a prefetching pipeline keeps ready: tf.data's prefetch, torch's prefetch_factor
# The compute kernel of --overlap: a float32 square matmul, chained. Its side is fixed per device kind so
# that the same batch size gets the same kernel in every series; only its repeats follow the copy's time.
KERNEL_SIDE = {"cpu": 128, "gpu": 1024}
REPEATS_LOOKED_BACK = 3  # batches a check looks back for a repeated one (it looks forward for dropped ones up to 2b)
MAX_REPEATS = 100_000  # of the kernel per step: a copy that slow would take longer than any point allows
CALIBRATION_RUNS = 3
KERNEL_TIMED_S = 0.002  # the kernel is timed over runs at least this long


def item_count(batch_size: int) -> int:
    """Items in a pipeline's dataset: 2b + 1, so no whole number of batches below 2b + 1 lines up with it."""
    return 2 * batch_size + 1


def dataset_items(batch_size: int, shape: tuple[int, ...]) -> np.ndarray:
    """The dataset's items, uint8 of `shape` each, filled with the pattern (item i starts i items into
    it, and the pattern's prime period never lines up with an item, so no two items are alike)."""
    return make_source((item_count(batch_size), *shape))


def batch_indices(k: int, batch_size: int) -> np.ndarray:
    """Which dataset items batch k (counted from 0 since the pipeline started) holds."""
    return (k * batch_size + np.arange(batch_size)) % item_count(batch_size)


def cycled_indices(count: int):  # type: ignore[no-untyped-def]
    """0, 1, ..., count - 1, 0, 1, ... forever: the order every pipeline reads its items in."""
    while True:
        yield from range(count)


def kernel_side(device: str) -> int:
    return KERNEL_SIDE["cpu" if device == "cpu" else "gpu"]


def repeats_for(target_s: float, one_s: float) -> int:
    """Kernel repeats per step so that the compute takes about `target_s`, one repeat taking `one_s`."""
    if not (one_s > 0 and math.isfinite(target_s)):
        return 1
    return max(1, min(MAX_REPEATS, round(target_s / one_s)))


class PipelineTransfer(Transfer):
    """A pipeline prepared at one batch size. Subclasses give _deliver (the next batch, on the device
    and waited for), _read (a read-back of a delivered batch), _compute (the kernel on the device,
    waited for) and _stop (the pipeline shut down)."""

    label: str
    items: np.ndarray
    batch_size: int
    verify_after = True  # measure_point checks the sequence again once the samples are taken
    delivered = 0  # batches taken from the pipeline so far
    repeats = 1  # the compute kernel's repeats per step (calibrate_compute)
    # Batches the pipeline can hold ready: an idle spell (a check, the compute alone) fills them, so this many
    # are taken untimed after one, lest the first samples time batches that were waiting
    depth = 1
    repeat_s: float | None = None  # the kernel's seconds per repeat (time_kernel)

    @abstractmethod
    def _deliver(self) -> Any:
        """Take the next batch and make it usable on the device: return it once it is there."""

    @abstractmethod
    def _read(self, batch: Any) -> tuple[ReadBack, np.ndarray | None]:
        """A ReadBack of a delivered batch's bytes and the staging buffer for it (None: a fresh one)."""

    @abstractmethod
    def _compute(self, batch: Any | None) -> None:
        """The kernel, `repeats` times, on the device, fed by the batch's first byte where a batch is given
        (a step), by the same slice of a one-byte tensor already there where not (compute alone), so both
        run the same ops; returns once the device has finished."""

    def _stop(self) -> None:
        """Shut the pipeline down (worker processes, threads, iterators)."""

    def __call__(self) -> None:
        self._deliver()
        self.delivered += 1

    def verify(self) -> None:
        """The next batch must be batch `delivered`, byte for byte; where it is not, say which batch it
        is, if any, so a dropped or repeated batch is named as such. Then drain what the pipeline made
        ready while the check ran."""
        due = self.delivered
        batch = self._deliver()
        self.delivered += 1
        read, staging = self._read(batch)
        expected = self.items[batch_indices(due, self.batch_size)]
        try:
            check_all(expected, read, f"{self.label} batch {due} of the pipeline", staging)
        except VerificationError:
            other = self._which(read, due)
            if other:
                raise VerificationError(f"{self.label}: batch {due} of the pipeline is not the batch due: {other}") from None
            raise
        self.drain()

    def drain(self) -> None:
        for _ in range(self.depth):
            self()

    def _which(self, read: ReadBack, due: int) -> str:
        """"its first item is batch N's: M batch(es) dropped" (or repeated) where the delivered batch starts
        as another batch does, the nearest first; "" where it starts as none does (its bytes are wrong)."""
        first = np.empty(self.items[0].size, dtype=np.uint8)
        read(0, first)
        nearest = sorted(range(-REPEATS_LOOKED_BACK, item_count(self.batch_size)), key=lambda shift: (abs(shift), shift < 0))
        for shift in nearest:
            if shift and np.array_equal(self.items[batch_indices(due + shift, self.batch_size)[0]].reshape(-1), first):
                what = f"{-shift} batch(es) repeated" if shift < 0 else f"{shift} batch(es) dropped"
                return f"its first item is batch {due + shift}'s: {what}"
        return ""

    def time_kernel(self, clock: Clock = time.perf_counter) -> None:
        """The kernel's seconds per repeat. Subclasses call it before their pipeline starts, while nothing
        else runs (a worker refilling its buffer would slow the kernel and size it short): after a run
        that loads and warms it, the repeats double until the quickest of a few runs lasts KERNEL_TIMED_S
        (a shorter run is mostly launch and timer noise)."""
        self.repeats = 1
        self._compute(None)
        while True:
            took = math.inf
            for _ in range(CALIBRATION_RUNS):  # the quickest of a few: one slow run (a clock ramping up) is no rate
                started = clock()
                self._compute(None)
                took = min(took, clock() - started)
            if took >= KERNEL_TIMED_S or self.repeats >= MAX_REPEATS:
                break
            self.repeats = min(MAX_REPEATS, self.repeats * 2)
        self.repeat_s = took / self.repeats

    def calibrate_compute(self, target_s: float, clock: Clock = time.perf_counter) -> None:
        """Size the kernel's repeats so that compute alone takes about `target_s` (the delivery's median)."""
        if self.repeat_s is None:
            self.time_kernel(clock)
        self.repeats = repeats_for(target_s, self.repeat_s)  # type: ignore[arg-type]

    def compute_alone(self) -> None:
        self._compute(None)

    def step(self) -> None:
        """What a training step does: take the next batch and run the kernel on it."""
        batch = self._deliver()
        self.delivered += 1
        self._compute(batch)

    def overlap(self, copy_median_s: float, timing: TimingConfig) -> dict[str, Any]:
        """Compute alone and copy-plus-compute steps, sampled as the copy was, with the kernel sized to
        the copy's median: the point's `compute` record."""
        clock = self.clock
        self.calibrate_compute(copy_median_s, clock)
        alone: Samples = sample(self.compute_alone, timing, clock)
        for _ in range(max(timing.warmup_calls, self.depth)):  # what the idle spell made ready, and the steps' own warm-up
            self.step()
        steps: Samples = sample(self.step, timing, clock)
        self.verify()  # the steps took their batches in order too
        return {"kernel": self.kernel, "repeats": self.repeats, "compute_times_s": alone.times_s, "step_times_s": steps.times_s}

    @property
    def kernel(self) -> str:
        side = kernel_side(getattr(self, "device_id", "cpu"))
        return f"float32 {side}x{side} matmul"

    def close(self) -> None:
        try:
            self._stop()
        finally:
            self.items = None  # type: ignore[assignment]
