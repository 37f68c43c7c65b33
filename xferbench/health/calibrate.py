"""A validation's calibration: before its sweeps, a short probe measures the rates and fixed costs its
time estimate assumes, on the machine and GPU being validated, so the estimate, the trims for
--max-minutes and each step's deadline follow this link rather than a PCIe Gen4 link's constants.

The probe is what a user would run: one `xferbench sweep` of the raw cuda copies (pinned and pageable,
per call, a few sizes of 1 MiB images, few samples), whose lines are timed as they arrive. Its file
gives the copy rates (the largest point's median call), and a call's cost; the arrival times give a
point's wall time, of which the part beyond its timed calls is its fixed cost (fitted as seconds a
point plus seconds a byte), the sweep's start and end, and its worker's start. Each peer found runs
once at 1 MiB for its start, the host's memset rate is measured for bandwidthTest's cache flush, and
the probe's file is drawn and reported for the finish. Where the validation's sweeps run other
frameworks than cuda, each one's fresh worker (and cuda's) is started and waited for until ready, one
after another as a sweep starts one for each series, so each framework's series is counted with its
own worker's start. What cannot be measured keeps the documented fallback (budget.py), and the plan
says which.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from xferbench.core.errors import XferbenchError
from xferbench.core.results import Point, Result, load
from xferbench.health import budget

PROBE_BATCHES = (1, 16, 256)  # 1 MiB images: 1, 16 and 256 MiB a call (the rates are read at 256 MiB, the validation's own size)
PROBE_SHAPE = "512x512x4"
PROBE_TIMING = ("--max-samples", "10", "--min-time", "0.02", "--warmup-time", "0.01", "--max-time", "2")
PROBE_TIMEOUT_S = 120.0  # the probe sweep; past it, the fallback is used
PEER_PROBE_TIMEOUT_S = 30.0
PEER_PROBE_BYTES = 2**20
MEMSET_PROBE_BYTES = budget.MEMSET_BYTES  # bandwidthTest's own flush: a smaller one could sit in a large cache
WORKER_PROBE_TIMEOUT_S = 60.0  # a framework's worker not ready by then is left to series_s
REFERENCE = "cuda"  # the framework whose series the probe sweep timed

Clock = Callable[[], float]
Echo = Callable[[str], None]


class Started(Protocol):
    """A framework's worker, started (as WorkerRunner is): hello() waits until it is ready, close() ends it."""

    def hello(self) -> Mapping[str, Any]: ...
    def close(self) -> None: ...


Start = Callable[[str], Started]


@dataclass(frozen=True)
class Landed:
    """The probe sweep as it ran: when it started, when each line arrived, when it ended."""

    spawned: float
    lines: Sequence[tuple[float, str]]
    ended: float


def probe_arguments(device: str) -> list[str]:
    """The probe sweep's `xferbench sweep` arguments (without -o)."""
    sizes = ",".join(map(str, PROBE_BATCHES))
    return ["--device", device, "-f", "cuda", "-m", "raw_pinned", "-m", "raw_pageable", "--op", "copy", "--timing", "per-call",
            "--shape", PROBE_SHAPE, "--batch-sizes", sizes, *PROBE_TIMING]  # fmt: skip


def timed_s(point: Point) -> float:
    """A per-call point's timed calls: its warm-up (counted at its median), its samples, and the call that verifies it."""
    median = point.median_s or 0.0
    return (point.warmup_calls or 0) * median + sum(point.times_s or ()) + median


def sweep_rates(result: Result, landed: Landed, rates: budget.Rates) -> budget.Rates:
    """The rates and fixed costs the probe sweep shows; those it cannot show keep `rates`' values.
    Raises XferbenchError where it measured nothing usable."""
    when: dict[str, float] = {}
    for at, line in landed.lines:
        when.setdefault(line.strip(), at)  # a line, at the time it arrived
    header = next((at for at, line in landed.lines if line.startswith("xferbench: ")), None)
    points: list[tuple[float, Point, str]] = []  # (arrival, point, its series' label)
    for series in result.series:
        for point in series.ok_points():
            prefix = f"{series.label()} batch {point.batch_size}:"
            at = next((t for text, t in when.items() if text.startswith(prefix)), None)
            if at is not None and point.times_s:
                points.append((at, point, series.label()))
    points.sort(key=lambda p: p[0])
    buffers = {s.label(): s.key.host_buffer for s in result.series}
    pinned = [p for _, p, label in points if buffers[label] == "pinned"]
    pageable = [p for _, p, label in points if buffers[label] != "pinned"]
    if header is None or len(points) < 3 or not pinned or not pageable:
        raise XferbenchError("the probe sweep measured too few points to time")
    changes: dict[str, float] = {}
    largest = max(pinned, key=lambda p: p.bytes)
    changes["pinned_bps"] = largest.bytes / (largest.median_s or 1.0)
    largest_pageable = max(pageable, key=lambda p: p.bytes)
    changes["pageable_bps"] = largest_pageable.bytes / (largest_pageable.median_s or 1.0)
    smallest = min(pinned, key=lambda p: p.bytes)
    changes["call_s"] = max(0.0, (smallest.median_s or 0.0) - smallest.bytes / changes["pinned_bps"])
    # Each point after the worker's first: its wall time is the gap since the one before it, beyond its
    # timed calls; a series' first point holds the series' start too.
    walls = [(point.bytes, at - before - timed_s(point), label != previous)
             for (before, _, previous), (at, point, label) in zip(points, points[1:])]  # fmt: skip
    later = [(n, s) for n, s, first in walls if not first] or [(n, s) for n, s, _ in walls]
    point_s, per_byte = fit_line(later)
    changes["point_s"] = point_s
    changes["host_bps"] = 1.0 / per_byte if per_byte > 0 else float("inf")
    starts = [s - point_s - n * per_byte for n, s, first in walls if first]
    changes["series_s"] = series_s = max(0.0, sum(starts) / len(starts)) if starts else 0.0
    first_at, first, _ = points[0]
    changes["worker_start_s"] = max(0.0, first_at - header - series_s - (point_s + first.bytes * per_byte + timed_s(first)))
    changes["sweep_start_s"] = max(0.0, header - landed.spawned) + max(0.0, landed.ended - points[-1][0])
    return rates.but(**changes, measured=(*rates.measured, *changes))


def fit_line(samples: Sequence[tuple[int, float]]) -> tuple[float, float]:
    """Least squares seconds = a + b * bytes, with a and b at least 0 (a fixed cost cannot be negative)."""
    n = len(samples)
    mean_x = sum(x for x, _ in samples) / n
    mean_y = sum(y for _, y in samples) / n
    spread = sum((x - mean_x) ** 2 for x, _ in samples)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in samples) / spread if spread else 0.0
    if slope < 0:
        slope = 0.0
    intercept = mean_y - slope * mean_x
    if intercept < 0:  # all of it per byte
        intercept = 0.0
        slope = max(0.0, sum(x * y for x, y in samples) / (sum(x * x for x, _ in samples) or 1.0))
    return max(0.0, intercept), slope


STOP_WAIT_S = 20.0  # a probe told to stop (as Ctrl-C stops a sweep) has this long to close its workers before it is killed


def stop(process: subprocess.Popen[str]) -> None:
    """Stop a probe sweep as Ctrl-C does, so it closes its workers; kill it only if it has not ended in STOP_WAIT_S."""
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(timeout=STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def run_timed(command: list[str], env: dict[str, str], timeout_s: float, clock: Clock = time.monotonic) -> Landed | None:
    """A command whose output lines are timed as they arrive; None where it ran past `timeout_s` (it is
    stopped). Stopped here (Ctrl-C, a kill), it is stopped too before this process goes on stopping."""
    spawned = clock()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               text=True, errors="replace")  # fmt: skip
    lines: list[tuple[float, str]] = []

    def read(stream: IO[str]) -> None:
        for line in stream:
            lines.append((clock(), line.rstrip("\n")))

    reader = threading.Thread(target=read, args=(process.stdout,), daemon=True)
    reader.start()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        stop(process)
        reader.join(5)
        return None
    except BaseException:
        stop(process)
        raise
    ended = clock()
    reader.join(5)
    return Landed(spawned, list(lines), ended)


def start_worker(env: dict[str, str] | None) -> Start:
    """A framework's fresh worker as a sweep starts one for a series: unbound, from the sweep's environment."""
    from xferbench.measuring.backends import BACKENDS
    from xferbench.measuring.worker import WorkerRunner

    return lambda name: WorkerRunner(BACKENDS[name], start_timeout_s=WORKER_PROBE_TIMEOUT_S, env=env)


def worker_starts(frameworks: Sequence[str], start: Start, clock: Clock = time.monotonic
                  ) -> tuple[dict[str, float], dict[str, str], dict[str, list[str]]]:  # fmt: skip
    """Each framework's worker, from its start until it is ready; why any could not start; the devices each
    one that started sees. They are timed one after another, as a sweep starts a fresh one for each series:
    started together, their imports would share the CPUs and the disk, and each would read slower than a
    series' start is. Each is closed before the next starts, and on Ctrl-C."""
    from xferbench.measuring.worker import WorkerDied

    took: dict[str, float] = {}
    failed: dict[str, str] = {}
    devices: dict[str, list[str]] = {}
    for name in dict.fromkeys(frameworks):
        began = clock()
        runner: Started | None = None
        try:
            runner = start(name)
            hello = runner.hello()
            took[name] = clock() - began
            devices[name] = list(hello["devices"])
        except (XferbenchError, WorkerDied) as error:
            failed[name] = str(error).splitlines()[0] if str(error) else type(error).__name__
        finally:
            if runner is not None:
                runner.close()
    return took, failed, devices


def series_starts(rates: budget.Rates, frameworks: Sequence[str], start: Start, clock: Clock = time.monotonic,
                  device: str = "cuda:0") -> budget.Rates:  # fmt: skip
    """Each framework's series' start: the probe sweep's (cuda's, series_s) with cuda's worker's start exchanged
    for the framework's own. One whose worker could not start keeps series_s, said in why_not; one whose worker
    does not see `device` is named in `unseen`, as the sweeps will skip its series there."""
    others = [name for name in dict.fromkeys(frameworks) if name != REFERENCE]
    if not others:
        return rates  # the probe sweep's series_s is the cuda worker's already
    took, failed, devices = worker_starts([REFERENCE, *others], start, clock)
    if REFERENCE not in took:
        return with_why(rates, f"no framework's series start measured: the {REFERENCE} worker did not start ({failed[REFERENCE]})")
    by_framework = {name: max(0.0, rates.series_s - took[REFERENCE] + seconds) for name, seconds in took.items()}
    unseen = tuple(name for name in others if name in devices and device not in devices[name])
    rates = rates.but(series_s_by_framework=by_framework, unseen=unseen)
    for name in unseen:
        rates = with_why(rates, f"the {name} worker sees no {device} (only {', '.join(devices[name]) or 'none'}), so the sweeps will"
                                " skip its series: they are not counted")  # fmt: skip
    for name, why in failed.items():
        rates = with_why(rates, f"the {name} worker did not start in the probe ({why}), so its series are counted at {rates.series_s:.2f} s")
    return rates


def with_why(rates: budget.Rates, why: str) -> budget.Rates:
    return rates.but(why_not=f"{rates.why_not}; {why}" if rates.why_not else why)


def peer_probe(name: str, executable: str, index: int) -> list[str]:
    """A peer's one run at 1 MiB: its start, beside a few copies."""
    if name == "nvbandwidth":
        return [executable, "-j", "-b", str(PEER_PROBE_BYTES // 2**20), "-i", "1", "-t", "host_to_device_memcpy_ce"]
    n = PEER_PROBE_BYTES
    return [executable, f"--device={index}", "--htod", "--memory=pinned", "--mode=range", f"--start={n}", f"--end={n}",
            f"--increment={n}", "--csv"]  # fmt: skip


def peer_start(name: str, seconds: float, rates: budget.Rates) -> float:
    """A peer's start: its probe run's seconds less the copies it made (at the rates measured)."""
    copies = budget.nvbandwidth_seconds(PEER_PROBE_BYTES, 1, 1, rates.but(nvbandwidth_start_s=0.0)) if name == "nvbandwidth" else \
        budget.bandwidthtest_seconds(PEER_PROBE_BYTES, "pinned", rates.but(bandwidthtest_start_s=0.0))  # fmt: skip
    return max(0.0, seconds - copies)


def memset_bps(clock: Clock = time.perf_counter) -> float:
    """The host's memset rate, best of three over 256 MiB: bandwidthTest flushes the cache with one after each pageable copy."""
    import numpy as np

    buffer = np.empty(MEMSET_PROBE_BYTES, dtype=np.uint8)
    best = float("inf")
    for value in range(3):
        started = clock()
        buffer.fill(value)
        best = min(best, clock() - started)
    return MEMSET_PROBE_BYTES / best if best > 0 else budget.MEMSET_BPS


def finish_s(path: Path, sweeps: int, clock: Clock = time.perf_counter) -> float:
    """The finish's time: the probe's file drawn and reported as the run's files will be, once per sweep."""
    from xferbench.core.results import select
    from xferbench.reading import plot, report

    started = clock()
    picks, empty = select([path])
    plot.save(plot.figure(picks, title="probe"), path.with_suffix(".png"))
    report.render(picks, empty, plot=path.with_suffix(".png"), out=path.with_suffix(".md"), title="probe")
    return sweeps * (clock() - started)


def calibrate(device: str, index: int, has_cuda: bool, peers: dict[str, str], sweeps: int, echo: Echo,
              env: dict[str, str] | None = None, clock: Clock = time.monotonic, frameworks: Sequence[str] = (),
              start: Start | None = None) -> budget.Rates:  # fmt: skip
    """Measure the rates and fixed costs the estimate assumes; what cannot be measured keeps the
    documented fallback, said in the returned Rates. `frameworks`: those the validation's sweeps start a
    worker for, each one's start timed (`start` starts one)."""
    from xferbench.measuring.backends import BACKENDS

    started = clock()
    rates = budget.FALLBACK
    if not has_cuda:
        return rates.but(why_not="nothing measured: the probe times the raw cuda copies, and --framework leaves cuda out")
    if BACKENDS["cuda"].missing():
        return rates.but(why_not=f"nothing measured: {BACKENDS['cuda'].missing()}")
    echo("probe: timing this machine's copies and fixed costs for the estimate")
    folder = Path(tempfile.mkdtemp(prefix="xferbench-probe-"))
    try:
        path = folder / "probe.json"
        command = [sys.executable, "-m", "xferbench", "sweep", *probe_arguments(device), "-o", str(path)]
        landed = run_timed(command, {**(env or os.environ), "PYTHONUNBUFFERED": "1"}, PROBE_TIMEOUT_S, clock)
        try:
            if landed is None:
                raise XferbenchError(f"the probe sweep did not finish within {PROBE_TIMEOUT_S:g} s")
            if not path.exists():
                raise XferbenchError("the probe sweep wrote no file")
            rates = sweep_rates(load(path), landed, rates)
        except XferbenchError as error:
            return rates.but(spent_s=clock() - started, why_not=f"nothing measured: {error}")
        measured = list(rates.measured)
        isolated = [name for name in frameworks if name in BACKENDS and BACKENDS[name].isolated]  # the rest run in the sweep's process
        rates = series_starts(rates, isolated, start or start_worker(env), clock, device)
        for name, executable in peers.items():
            field = "nvbandwidth_start_s" if name == "nvbandwidth" else "bandwidthtest_start_s"
            began = clock()
            try:
                subprocess.run(peer_probe(name, executable, index), capture_output=True, timeout=PEER_PROBE_TIMEOUT_S,
                               env=env, stdin=subprocess.DEVNULL)  # fmt: skip
            except (OSError, subprocess.TimeoutExpired):
                continue
            rates = rates.but(**{field: peer_start(name, clock() - began, rates)})
            measured.append(field)
        rates = rates.but(memset_bps=memset_bps())
        measured.append("memset_bps")
        try:
            rates = rates.but(finish_s=finish_s(path, sweeps))
            measured.append("finish_s")
        except Exception as error:  # a figure that cannot be drawn here costs the finish's figure only
            rates = with_why(rates, f"the report's time not measured: {str(error).splitlines()[0] if str(error) else type(error).__name__}")
        return rates.but(measured=tuple(measured), spent_s=clock() - started)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


__all__ = ["Landed", "calibrate", "fit_line", "peer_start", "probe_arguments", "run_timed", "series_starts", "sweep_rates", "timed_s",
           "worker_starts"]  # fmt: skip
