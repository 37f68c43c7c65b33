"""The frozen key of one measurement: what was moved, how, and where to."""

from __future__ import annotations

import math
from dataclasses import dataclass

# Where a batch lives before the transfer: a plain NumPy array as users have it, a 64-byte-aligned
# one, or page-locked memory the device can read directly.
HOST_BUFFERS = ("numpy", "aligned", "pinned")

# How a point is timed. per-call: one transfer and its wait per sample, timed around the call, as
# one training step sees it. streamed: the stream is held while many copies queue behind a start
# event, then released, and the device's events time them back to back, as nvbandwidth does: the
# link's own rate, with launch and synchronization costs out of the figure.
PER_CALL, STREAMED = "per-call", "streamed"
TIMING_METHODS = (PER_CALL, STREAMED)


def usual_source(framework: str, mode: str) -> str:
    """The host buffer a path starts from unless --host-buffer says otherwise (and the one files
    written before the host_buffer field existed used): the host copy reads an aligned buffer, a
    pinned mode its pinned one, every other path a NumPy array as users have it. host/staged, the host
    copy as the driver stages a pageable one, starts where the pageable copies do: from a NumPy array."""
    if framework == "host":
        return "numpy" if mode == "staged" else "aligned"
    if framework == "nvbandwidth":  # a peer tool's figures (xferbench import): it copies from pinned memory only
        return "pinned"
    return "pinned" if "pinned" in mode.split("_") else "numpy"  # torch pinned, pinned_into; cuda raw_pinned


# The input-pipeline paths (xferbench.measuring.backends.pipeline): what a training loop's data loading delivers on the
# device, batch after batch, rather than one copy call. Run with sweep --pipeline or by --mode.
PIPELINE_MODES = {
    "torch": ("loader", "loader_workers", "loader_pin", "loader_pin_workers"),  # DataLoader, then .to(device, non_blocking=True)
    "tf": ("dataset", "prefetch_to_device", "copy_to_device", "generator"),  # tf.data, as tensorflow#43905 compares them
}


def is_pipeline(framework: str, mode: str) -> bool:
    return mode in PIPELINE_MODES.get(framework, ())


# Names this machine in result files and in --out's %h where its own name will not do (a Kubernetes
# pod's host name is the pod's; the node's name comes in through the downward API).
HOST_ENV = "XFERBENCH_HOST"

# Which way a series moves its batches: host to device (the default, and what files without the field
# measured), device to host, or both at once on two streams (bidir).
H2D, D2H, BIDIR = "h2d", "d2h", "bidir"
DIRECTIONS = (H2D, D2H, BIDIR)

# What a series' `transfer` field holds: written by the backends, read by plot and report (docs/results.md).
HOST_TO_DEVICE, HOST_TO_HOST, SIMULATED = "host-to-device", "host-to-host", "simulated"
DEVICE_TO_HOST, BIDIRECTIONAL = "device-to-host", "bidirectional"


@dataclass(frozen=True)
class SeriesKey:
    """One curve: a framework path on one device, swept over batch sizes."""

    framework: str
    mode: str
    op: str
    device: str
    shape: tuple[int, ...]  # one item's shape; the batch adds a leading dimension
    host_buffer: str = ""  # where the batch starts: a HOST_BUFFERS kind; "" means the path's usual_source
    method: str = PER_CALL  # how each point is timed: a TIMING_METHODS kind
    direction: str = H2D  # which way the batches go: a DIRECTIONS kind
    concurrent: int = 1  # how many devices ran this path at the same time, this one among them (1: alone)

    def __post_init__(self) -> None:
        if not self.host_buffer:
            object.__setattr__(self, "host_buffer", usual_source(self.framework, self.mode))

    def label(self) -> str:
        """framework/mode/op@device, plus /d2h or /bidir for those directions, /streamed for the
        streamed timing method, /N-at-once where N devices ran it together, and +host_buffer where the
        source is not the path's usual one."""
        usual = self.host_buffer == usual_source(self.framework, self.mode)
        direction = "" if self.direction == H2D else f"/{self.direction}"
        method = "" if self.method == PER_CALL else f"/{self.method}"
        together = "" if self.concurrent == 1 else f"/{self.concurrent}-at-once"
        buffer = "" if usual else "+" + self.host_buffer
        return f"{self.framework}/{self.mode}/{self.op}{direction}{method}{together}{buffer}@{self.device}"

    def at(self, batch_size: int) -> Spec:
        return Spec(self, batch_size)


@dataclass(frozen=True)
class Spec:
    """One point of a curve: a series at one batch size of uint8 items."""

    series: SeriesKey
    batch_size: int

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return (self.batch_size, *self.series.shape)

    @property
    def nbytes(self) -> int:
        """One batch's bytes: what each direction moves per call."""
        return self.batch_size * math.prod(self.series.shape)

    @property
    def moved_bytes(self) -> int:
        """The bytes one call moves in all: a bidir call moves a batch each way."""
        return self.nbytes * (2 if self.series.direction == BIDIR else 1)
