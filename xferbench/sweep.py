"""Plan a sweep from the user's choices, then measure it point by point, saving after each one."""

from __future__ import annotations

import dataclasses
import datetime
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xferbench.backends import BACKENDS, OPS, Backend, SimLink, get_backend
from xferbench.buffers import available_host_memory
from xferbench.errors import VerificationError, XferbenchError
from xferbench.results import Point, Result, Series
from xferbench.spec import SeriesKey, Spec
from xferbench.timing import TimingConfig, sample, warm_up

DEFAULT_BATCH_SIZES = tuple(2**i for i in range(10))  # 1 ... 512, as in the original report
DEFAULT_SHAPE = (256, 256, 3)
DEVICE_PATTERN = re.compile(r"^(cpu|mps|cuda(:\d+)?)$")
# How a point's error starts: the sweep stops a series after these, and the CLI tells them apart.
VERIFICATION_FAILED, OUT_OF_MEMORY = "verification failed", "out of memory"


@dataclass(frozen=True)
class SweepConfig:
    frameworks: tuple[str, ...] = ()  # empty: every installed framework that runs by default
    modes: tuple[str, ...] = ()  # empty: each framework's default modes
    ops: tuple[str, ...] = ("copy",)
    device: str = "auto"
    batch_sizes: tuple[int, ...] = DEFAULT_BATCH_SIZES
    shape: tuple[int, ...] = DEFAULT_SHAPE
    timing: TimingConfig = field(default_factory=TimingConfig)
    sim: SimLink = field(default_factory=SimLink)

    def params(self, framework: str) -> dict[str, Any]:
        return dataclasses.asdict(self.sim) if framework == "sim" else {}


@dataclass
class PlannedSeries:
    key: SeriesKey
    backend: Backend
    skip: str | None = None  # why it cannot run here; recorded, not measured


@dataclass
class Plan:
    config: SweepConfig
    device: str  # --device resolved
    series: list[PlannedSeries]

    @property
    def runnable(self) -> list[PlannedSeries]:
        return [s for s in self.series if not s.skip]

    @property
    def target(self) -> str:
        """Where the data goes: the resolved device, or host/sim when only those paths run."""
        if any(not s.backend.fixed_device for s in self.runnable):
            return self.device
        return self.runnable[0].key.device

    @property
    def backends(self) -> list[Backend]:
        return list({id(s.backend): s.backend for s in self.series}.values())


def parse_batch_sizes(text: str) -> tuple[int, ...]:
    """'1,2,4' -> (1, 2, 4): positive integers, duplicates merged, sorted."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise XferbenchError(f"--batch-sizes {text!r}: give comma-separated positive integers, e.g. 1,2,4,8")
    sizes = set()
    for part in parts:
        if not re.fullmatch(r"\+?\d+", part) or int(part) <= 0:
            raise XferbenchError(f"--batch-sizes: {part!r} is not a positive integer")
        sizes.add(int(part))
    return tuple(sorted(sizes))


def parse_shape(text: str) -> tuple[int, ...]:
    """'256x256x3' -> (256, 256, 3): the shape of one uint8 item."""
    parts = text.lower().split("x")
    if not all(re.fullmatch(r"\d+", p.strip()) and int(p) > 0 for p in parts):
        raise XferbenchError(f"--shape {text!r}: give positive integers joined by 'x', e.g. 256x256x3")
    return tuple(int(p) for p in parts)


def resolve_device(requested: str, backends: Sequence[Backend]) -> str:
    """'auto' -> the best device present (CUDA, then MPS, then CPU); check an explicit one exists."""
    requested = requested.strip().lower()
    if requested != "auto" and not DEVICE_PATTERN.match(requested):
        raise XferbenchError(f"unknown device {requested!r}; use auto, cpu, cuda, cuda:N or mps")
    movable = [b for b in backends if not b.fixed_device]
    if not movable and requested in ("auto", "cpu"):
        return "cpu"  # only host-side paths: no need to import a framework to look for devices
    present = ["cpu"]
    for backend in movable or [b for b in BACKENDS.values() if not b.fixed_device and not b.missing()]:
        present += [d for d in backend.devices() if d not in present]
    if requested == "auto":
        return next((d for d in present if d.startswith("cuda")), "mps" if "mps" in present else "cpu")
    device = "cuda:0" if requested == "cuda" else requested
    if device not in present:
        raise XferbenchError(f"device {requested!r} is not present; devices present: {', '.join(present)}")
    return device


def make_plan(config: SweepConfig) -> Plan:
    """Resolve frameworks, device, modes and ops into series; raise on bad input before measuring."""
    if config.frameworks:
        backends = [get_backend(name) for name in dict.fromkeys(config.frameworks)]
    else:
        backends = [b for b in BACKENDS.values() if b.in_default_sweep and not b.missing()]
    for op in config.ops:
        if op not in OPS:
            raise XferbenchError(f"unknown op {op!r}; choose from: {', '.join(OPS)}")
    for mode in config.modes:
        if not any(mode in b.modes for b in backends):
            valid = "; ".join(f"{b.name}: {', '.join(b.modes)}" for b in backends)
            raise XferbenchError(f"unknown mode {mode!r}; valid modes are {valid}")
    config.timing.check()
    config.sim.check()
    device = resolve_device(config.device, backends)
    series = []
    for backend in backends:
        modes = [m for m in config.modes if m in backend.modes] if config.modes else backend.default_modes
        for mode in modes:
            for op in config.ops:
                key = SeriesKey(backend.name, mode, op, backend.fixed_device or device, config.shape)
                skip = (
                    f"the {op} op is not defined for {backend.name}; it supports {', '.join(backend.ops)}"
                    if op not in backend.ops
                    else backend.skip_reason(key)
                )
                series.append(PlannedSeries(key, backend, skip))
    plan = Plan(config, device, series)
    if not plan.runnable:
        reasons = "; ".join(f"{s.key.label()}: {s.skip}" for s in series) or "no series selected"
        raise XferbenchError(f"nothing can run here: {reasons}")
    _check_host_memory(plan)
    return plan


def _check_host_memory(plan: Plan) -> None:
    available = available_host_memory()
    if available is None:
        return
    largest = max(plan.config.batch_sizes)
    for planned in plan.runnable:
        needed = planned.backend.host_bytes(planned.key.at(largest))
        if needed > available:
            fits = [b for b in plan.config.batch_sizes if planned.backend.host_bytes(planned.key.at(b)) <= available]
            hint = f"the largest that fits is {fits[-1]}" if fits else "lower --batch-sizes or --shape"
            raise XferbenchError(
                f"batch {largest} of {planned.key.label()} needs {needed / 1e9:.1f} GB of host memory"
                f" but {available / 1e9:.1f} GB is available; {hint}"
            )


def new_result(plan: Plan, environment: dict[str, Any], argv: Sequence[str] = ()) -> Result:
    from xferbench import __version__

    config = dataclasses.asdict(plan.config)
    config.update(device_requested=plan.config.device, device=plan.device, argv=list(argv))
    return Result(
        environment=environment,
        config=json.loads(json.dumps(config)),  # tuples become lists, as they will be on disk
        created=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        xferbench_version=__version__,
    )


OnPoint = Callable[[Series, Point], None]
OnStart = Callable[[Series, int], None]


def measure_point(backend: Backend, spec: Spec, params: dict[str, Any], timing: TimingConfig) -> Point:
    """Prepare, warm up, verify the bytes arrived, then sample. Errors become a recorded point."""
    transfer = None
    try:
        transfer = backend.prepare(spec, params)
        warmup_calls = warm_up(transfer, timing, transfer.clock)
        transfer.verify()
        return Point.measured(spec, sample(transfer, timing, transfer.clock), warmup_calls)
    except VerificationError as error:
        return Point.failed(spec, "error", f"{VERIFICATION_FAILED}: {error}")
    except Exception as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if backend.is_out_of_memory(error):
            return Point.failed(spec, "error", f"{OUT_OF_MEMORY}: {message}")
        return Point.failed(spec, "error", f"{type(error).__name__}: {message}")
    finally:
        if transfer is not None:
            transfer.close()


def run_plan(
    plan: Plan,
    result: Result,
    save: Callable[[Result], None],
    on_point: OnPoint | None = None,
    on_start: OnStart | None = None,
) -> Result:
    """Measure every runnable series, saving the result after every point.

    After an out-of-memory point the larger batches of that series are recorded as skipped; after
    a failed verification the series is marked failed. Ctrl-C leaves the file marked interrupted.
    """
    config = plan.config
    try:
        for planned in plan.series:
            key, backend = planned.key, planned.backend
            series = Series(key.framework, key.mode, key.op, key.device, list(key.shape))
            result.series.append(series)
            if planned.skip:
                series.status, series.reason = "skipped", planned.skip
                save(result)
                continue
            info = backend.describe(key, config.params(key.framework))
            for name, value in dataclasses.asdict(info).items():
                setattr(series, name, value)
            stop: str | None = None
            for batch_size in config.batch_sizes:
                spec = key.at(batch_size)
                if stop:
                    point = Point.failed(spec, "skipped", stop)
                else:
                    if on_start:
                        on_start(series, batch_size)
                    point = measure_point(backend, spec, config.params(key.framework), config.timing)
                    error = point.error or ""
                    if error.startswith(VERIFICATION_FAILED):
                        series.status, series.reason = "failed", error
                        stop = f"not measured: verification failed at batch {batch_size}"
                    elif error.startswith(OUT_OF_MEMORY):
                        stop = f"not measured: batch {batch_size} ran out of memory"
                series.points.append(point)
                series.refresh_summary()
                save(result)
                if on_point:
                    on_point(series, point)
        result.status = "complete"
    except KeyboardInterrupt:
        result.status = "interrupted"
        raise
    finally:
        save(result)
    return result
