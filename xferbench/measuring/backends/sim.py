"""`sim`: a simulated link with known latency and bandwidth on a virtual clock.

It moves no data and runs instantly and deterministically, so tests can check the analysis
against ground truth, and users can see what a given link would look like.

Per call, each transfer costs latency + bytes / bandwidth: the latency stands for the launch and
the wait that every call pays. Streamed, the copies of a run are queued behind a held stream, so the
run pays the latency once, outside its timed span, and each copy costs bytes / bandwidth alone.

With --sim-devices N there are N simulated devices, sim:0 ... sim:N-1, each behind its own link of
that bandwidth and all behind one host side of --sim-host-bandwidth-gbps (0: unlimited), shared evenly
by the devices that run at once: two devices behind 20 GB/s get 10 each when they run together.
Like each device's link, the host side is full duplex: its bandwidth holds in each direction.

The link is full duplex: d2h costs what h2d costs, and a bidir call moves a batch each way at once in
the time one direction takes, so each direction reports the link's rate and their total twice that.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from xferbench.measuring.backends.base import Backend, SeriesInfo, Transfer
from xferbench.core.errors import VerificationError, XferbenchError
from xferbench.core.spec import BIDIR, D2H, DIRECTIONS, H2D, SIMULATED, STREAMED, SeriesKey, Spec
from xferbench.core.timing import STREAM_WARM_COPIES


MAX_SIM_DEVICES = 64  # several times the GPUs of any one node: room to test scale, not a run of hours


@dataclass(frozen=True)
class SimLink:
    latency_us: float = 10.0
    bandwidth_gbps: float = 12.0  # GB/s, GB = 10**9 bytes
    jitter: float = 0.0  # relative standard deviation of each call's cost
    seed: int = 0
    devices: int = 1  # simulated devices: sim alone, or sim:0 ... sim:N-1
    host_bandwidth_gbps: float = 0.0  # the host side every device shares (0: unlimited)
    at_once: int = 1  # how many devices share the host side in this run: set by the sweep, not the user

    def check(self) -> None:
        finite = all(math.isfinite(v) for v in (self.latency_us, self.bandwidth_gbps, self.jitter))
        if not finite or self.latency_us < 0 or self.bandwidth_gbps <= 0 or not 0 <= self.jitter < 1:
            raise XferbenchError(
                "--sim-latency-us must be a finite number >= 0, --sim-bandwidth-gbps > 0 and --sim-jitter in [0, 1)"
            )
        if self.seed < 0:
            raise XferbenchError("--sim-seed must be a non-negative integer")
        if not 1 <= self.devices <= MAX_SIM_DEVICES:
            raise XferbenchError(f"--sim-devices {self.devices}: give 1 to {MAX_SIM_DEVICES}"
                                 " (each simulated device runs a worker process of its own)")  # fmt: skip
        if not (math.isfinite(self.host_bandwidth_gbps) and self.host_bandwidth_gbps >= 0):
            raise XferbenchError("--sim-host-bandwidth-gbps must be a finite number >= 0 (0: unlimited)")

    def device_ids(self) -> list[str]:
        return ["sim"] if self.devices == 1 else [f"sim:{i}" for i in range(self.devices)]

    @property
    def effective_gbps(self) -> float:
        """What one device gets: its own link, or its even share of the host side, whichever is less."""
        if not self.host_bandwidth_gbps:
            return self.bandwidth_gbps
        return min(self.bandwidth_gbps, self.host_bandwidth_gbps / self.at_once)

    def cost_s(self, nbytes: int) -> float:
        return self.latency_us * 1e-6 + self.copy_s(nbytes)

    def copy_s(self, nbytes: int) -> float:
        """The link's time for the bytes alone, as a streamed copy sees it."""
        return nbytes / (self.effective_gbps * 1e9)


class VirtualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class SimTransfer(Transfer):
    virtual = True

    def __init__(self, spec: Spec, link: SimLink) -> None:
        self.clock = VirtualClock()
        self.method, self.bidir = spec.series.method, spec.series.direction == BIDIR
        self.cost_s, self.copy_s, self.latency_s = link.cost_s(spec.nbytes), link.copy_s(spec.nbytes), link.latency_us * 1e-6
        self.jitter = link.jitter
        device = spec.series.device.partition(":")[2]  # sim:1 draws other jitter than sim:0
        self.rng = np.random.default_rng([link.seed, spec.batch_size, int(device) + 1 if device else 0])
        self.transfers = 0

    def _jittered(self, cost: float) -> float:
        return cost * max(0.05, 1.0 + self.jitter * self.rng.standard_normal()) if self.jitter else cost

    def __call__(self) -> dict[str, float] | None:
        cost = self._jittered(self.cost_s)
        self.clock.now += cost
        self.transfers += 1
        return {H2D: cost, D2H: cost} if self.bidir else None

    def streamed(self, copies: int) -> float:
        span = self._jittered(copies * self.copy_s)
        self.clock.now += self.latency_s + STREAM_WARM_COPIES * self.copy_s + span
        self.transfers += STREAM_WARM_COPIES + copies
        return span

    def verify(self) -> None:
        # No bytes move on a simulated link: check instead that every call is charged its cost.
        before = self.clock.now
        self.once()
        if not self.clock.now > before:
            raise VerificationError("sim: a call was not charged on the virtual clock")


class SimBackend(Backend):
    name = "sim"
    modes = default_modes = ("link",)
    fixed_device = "sim"
    in_default_sweep = False

    def streamed_reason(self, key: SeriesKey) -> str | None:
        return None

    def directions(self, mode: str) -> tuple[str, ...]:
        return DIRECTIONS

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        link = SimLink(**params)
        streamed = key.method == STREAMED
        shared = f"; host side {link.host_bandwidth_gbps:g} GB/s" if link.host_bandwidth_gbps else ""
        shared += f", shared by {link.at_once} at once" if shared and link.at_once > 1 else ""
        return SeriesInfo(
            device_name=f"simulated link ({link.latency_us:g} µs, {link.bandwidth_gbps:g} GB/s{shared})",
            transfer=SIMULATED,
            clock="virtual: the simulated span of a streamed run, per copy" if streamed else "virtual (simulated seconds)",
            sync="none: simulated, no data moves",
            params=asdict(link),
        )

    def host_bytes(self, spec: Spec) -> int:
        return 0

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return SimTransfer(spec, SimLink(**params))
