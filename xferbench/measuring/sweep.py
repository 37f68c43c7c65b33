"""Plan a sweep from the user's choices, then measure it point by point, saving after each one."""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import re
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xferbench.measuring.backends import BACKENDS, OPS, Backend, SimLink, default_backends, get_backend
from xferbench.measuring.buffers import available_host_memory
from xferbench.measuring.cold import COLD_SOURCE, EVICTION_BYTES, cold_source_reason
from xferbench.core.environment import os_name
from xferbench.core.errors import XferbenchError
from xferbench.measuring.measure import OUT_OF_MEMORY, VERIFICATION_FAILED, OnPoint, OnStart, measure_point
from xferbench.core.numa import Binding, plan_binding
from xferbench.core.results import Point, Result, Series
from xferbench.measuring.backends.pipeline import BUFFER_BATCHES, DEFAULT_LOADER_WORKERS
from xferbench.core.spec import BIDIR, DIRECTIONS, H2D, HOST_BUFFERS, PER_CALL, PIPELINE_MODES, STREAMED, TIMING_METHODS, SeriesKey, is_pipeline
from xferbench.measuring.sampler import INTERVAL_S, LinkSampler
from xferbench.core.timing import TimingConfig
from xferbench.measuring.worker import DEATH_WAIT_S, LocalRunner, Runner, StartLine, WorkerDied, WorkerRunner, check_python, python_version

MIN_STAGING_CHUNK, MAX_STAGING_CHUNK = 4 * 2**10, 2**30  # --staging-chunk-kib's bounds: a page to a GiB
DEFAULT_BATCH_SIZES = tuple(2**i for i in range(10))  # 1 ... 512, as in the original report
DEFAULT_SHAPE = (256, 256, 3)
DEVICE_PATTERN = re.compile(r"^(cpu|mps|cuda(:\d+)?|xpu(:\d+)?)$")
__all__ = ["OUT_OF_MEMORY", "VERIFICATION_FAILED", "measure_point"]  # re-exported for the CLI and tests


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
    host_buffers: tuple[str, ...] = ()  # empty: each path's own default source
    pythons: dict[str, str] = field(default_factory=dict)  # framework -> interpreter for its worker
    methods: tuple[str, ...] = (PER_CALL,)  # timing methods (spec.TIMING_METHODS)
    bind: bool = True  # bind each CUDA worker to its GPU's CPUs and NUMA node before it allocates
    directions: tuple[str, ...] = (H2D,)  # which ways to copy (spec.DIRECTIONS)
    concurrent: bool = False  # also run each path on every device at once, after each device alone
    pipeline: bool = False  # also each framework's input-pipeline modes (spec.PIPELINE_MODES)
    overlap: bool = False  # pipelines also time a calibrated compute kernel alone and fed by each batch
    loader_workers: int = DEFAULT_LOADER_WORKERS  # torch's DataLoader workers in its *_workers modes
    cold_source: bool = False  # evict the source from the CPU's caches before every timed call (measuring/cold.py)
    staging_chunk_bytes: int | None = None  # host/staged's chunk (--staging-chunk-kib); None: its default

    def params(self, framework: str, at_once: int = 1) -> dict[str, Any]:
        """A path's parameters: the simulated link's, shared by `at_once` devices in a concurrent run; a
        pipeline's workers and whether to time the overlap with compute; and --cold-source, which
        measure_series takes out before the backend sees the rest."""
        cold = {COLD_SOURCE: True} if self.cold_source else {}
        if framework == "sim":
            return {**dataclasses.asdict(dataclasses.replace(self.sim, at_once=at_once)), **cold}
        if framework in PIPELINE_MODES:
            return {"overlap": self.overlap, "loader_workers": self.loader_workers, **cold}
        if framework == "host" and self.staging_chunk_bytes:
            return {"staging_chunk_bytes": self.staging_chunk_bytes, **cold}
        return cold

    def modes_for(self, backend: Backend) -> tuple[str, ...]:
        """The modes this sweep runs for a backend: its --mode or default ones, and its pipelines with --pipeline."""
        chosen = backend.chosen_modes(self.modes)
        if self.pipeline:
            chosen = tuple(dict.fromkeys(chosen + PIPELINE_MODES.get(backend.name, ())))
        return chosen


@dataclass
class PlannedSeries:
    key: SeriesKey
    backend: Backend
    skip: str | None = None  # why it cannot run here; recorded, not measured


@dataclass
class Plan:
    config: SweepConfig
    device: str  # --device resolved: the first device, where several were asked for
    series: list[PlannedSeries]
    runners: dict[str, Runner] = field(default_factory=dict)  # framework -> where its series run
    devices: list[str] = field(default_factory=list)  # every device --device resolved to

    def close(self) -> None:
        """Stop the worker processes, every one of them even when a Ctrl-C lands while one is stopped (it
        is raised once all are), so that no worker outlives the sweep."""
        pressed: KeyboardInterrupt | None = None
        for runner in self.runners.values():
            try:
                runner.close()
            except KeyboardInterrupt as stop:
                pressed = stop
        if pressed is not None:
            raise pressed

    def environments(self) -> dict[str, dict[str, Any]]:
        """Each framework's version and devices, as its own process sees them."""
        return {name: runner.environment() for name, runner in self.runners.items()}

    @property
    def runnable(self) -> list[PlannedSeries]:
        return [s for s in self.series if not s.skip]

    @property
    def target(self) -> str:
        """Where the data goes: the resolved device(s), or host/sim when only those paths run."""
        if any(not s.backend.fixed_device for s in self.runnable):
            return "+".join(self.devices or [self.device])
        return "+".join(dict.fromkeys(s.key.device for s in self.runnable))

    @property
    def backends(self) -> list[Backend]:
        return list({id(s.backend): s.backend for s in self.series}.values())


MAX_BATCH = 1 << 20  # items in one batch: a million 1-byte items, or more than any batch of images
MAX_BATCH_SIZES = 64  # sizes in one sweep: each is a point of every series
MAX_DIMENSIONS = 8  # of one item
MAX_LOADER_WORKERS = 64  # DataLoader worker processes: more than any machine's cores are worth
MAX_ITEM_BYTES = 1 << 32  # 4 GiB per item: larger than any image; the host-memory check sizes the batch


def parse_batch_sizes(text: str) -> tuple[int, ...]:
    """'1,2,4' -> (1, 2, 4): positive integers, duplicates merged, sorted."""
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in parts):
        raise XferbenchError(f"--batch-sizes {text!r}: give comma-separated positive integers, e.g. 1,2,4,8")
    sizes = set()
    for part in parts:
        if not re.fullmatch(r"\+?\d+", part) or int(part) <= 0:
            raise XferbenchError(f"--batch-sizes: {part!r} is not a positive integer")
        if int(part) > MAX_BATCH:
            raise XferbenchError(f"--batch-sizes: {part} is more than {MAX_BATCH:,} items in one batch; give a smaller batch")
        sizes.add(int(part))
    if len(sizes) > MAX_BATCH_SIZES:
        raise XferbenchError(f"--batch-sizes: {len(sizes)} sizes; give at most {MAX_BATCH_SIZES} (each is a point of every series)")
    return tuple(sorted(sizes))


def parse_shape(text: str) -> tuple[int, ...]:
    """'256x256x3' -> (256, 256, 3): the shape of one uint8 item."""
    parts = text.lower().split("x")
    if not all(re.fullmatch(r"\d+", p.strip()) and int(p) > 0 for p in parts):
        raise XferbenchError(f"--shape {text!r}: give positive integers joined by 'x', e.g. 256x256x3")
    if len(parts) > MAX_DIMENSIONS or math.prod(int(p) for p in parts) > MAX_ITEM_BYTES:
        raise XferbenchError(f"--shape {text!r}: give at most {MAX_DIMENSIONS} dimensions and at most {MAX_ITEM_BYTES:,} bytes"
                             " per item (the batch multiplies it)")  # fmt: skip
    return tuple(int(p) for p in parts)


def check_device_name(requested: str) -> str:
    """One --device name, lower-cased, or a one-line error if no framework could ever mean it."""
    requested = requested.strip().lower()
    if requested != "auto" and not DEVICE_PATTERN.match(requested):
        raise XferbenchError(f"unknown device {requested!r}; use auto, all, cpu, cuda, cuda:N, xpu, xpu:N or mps")
    return requested


def resolve_device(requested: str, runners: Sequence[Runner]) -> str:
    """'auto' -> the best device any framework reaches (CUDA, then XPU, then MPS, then CPU); check an explicit one."""
    requested = check_device_name(requested)
    movable = [r for r in runners if not r.backend.fixed_device]
    if not movable:  # only host-side paths: they run where they run, and nowhere else
        fixed = {r.backend.name: str(r.backend.fixed_device) for r in runners}
        if requested not in ("auto", *fixed.values()):
            where = ", ".join(f"{name} is a simulated link and reaches no device" if device == "sim"
                              else f"{name} copies within host memory and runs on the {device} only" for name, device in fixed.items())
            raise XferbenchError(f"--device {requested}: {where}; drop --device, or add a framework that reaches {requested}")
        return "cpu" if requested == "auto" else requested
    present = ["cpu"]
    for runner in movable:
        present += [d for d in runner.devices() if d not in present]
    if requested == "auto":
        return auto_device(present)
    device = f"{requested}:0" if requested in ("cuda", "xpu") else requested
    if device not in present:
        why = "; ".join(r.absent_reason(device, r.devices()) for r in movable)
        raise XferbenchError(f"device {requested!r} is not present; devices present: {', '.join(present)}; {why}")
    return device


def auto_device(present: Sequence[str]) -> str:
    """What --device auto picks among the devices the frameworks reach: CUDA (an NVIDIA GPU, or an AMD GPU
    through ROCm), then an Intel GPU (xpu), then MPS, then the CPU."""
    return next((d for d in present if d.startswith("cuda")), next((d for d in present if d.startswith("xpu")),
                                                                   "mps" if "mps" in present else "cpu"))


def device_parts(requested: str) -> list[str]:
    """--device, once or several times (joined by commas), as the devices asked for; none: auto."""
    return [p.strip().lower() for p in requested.split(",") if p.strip()] or ["auto"]


def resolve_devices(requested: str, runners: Sequence[Runner]) -> list[str]:
    """--device, once or several times (joined by commas): 'all' -> every CUDA GPU a framework sees;
    anything else as resolve_device says, duplicates merged."""
    parts = device_parts(requested)
    if "all" not in parts:
        return list(dict.fromkeys(resolve_device(part, runners) for part in parts))
    if len(parts) > 1:
        raise XferbenchError("--device all already means every GPU; give it alone, or list the devices you want")
    movable = [r for r in runners if not r.backend.fixed_device]
    if not movable:  # host-side paths only: the simulated link has its own devices (--sim-devices)
        return [resolve_device("auto", runners)]
    gpus = list(dict.fromkeys(d for runner in movable for d in runner.devices() if d.startswith("cuda")))
    if not gpus:
        seen = sorted({d for runner in movable for d in runner.devices()}) or ["none"]
        raise XferbenchError(f"--device all means every CUDA GPU, and no framework here sees one (devices present:"
                             f" {', '.join(seen)}); drop --device all to sweep {resolve_device('auto', runners)}")  # fmt: skip
    return gpus


def start_runners(backends: Sequence[Backend], pythons: dict[str, str] | None = None,
                  failed: dict[str, str] | None = None) -> dict[str, Runner]:  # fmt: skip
    """A worker process for each GPU framework (started together, so their imports overlap), else in-process.

    A framework that cannot start (an import that raises, as a plugin built for another TensorFlow
    does) stops everything with its one-line error, unless `failed` is given: then it is left out,
    its error kept there by name, and the others go on (a default sweep must not lose torch to a
    broken tensorflow). An interpreter given with --python is asked its version first, once: one older
    than a worker runs on is refused so, before its worker starts."""
    pythons = pythons or {}
    runners: dict[str, Runner] = {}
    versions: dict[str, tuple[int, ...] | None] = {}  # each interpreter asked once, however many frameworks it runs
    try:
        for backend in backends:
            python = pythons.get(backend.name)
            if python is not None:
                if python not in versions:
                    versions[python] = python_version(python)
                try:
                    check_python(python, backend, versions[python])
                except XferbenchError as error:
                    if failed is None:
                        raise
                    failed[backend.name] = str(error)
                    continue
            if backend.isolated or python is not None:
                runners[backend.name] = WorkerRunner(backend, python)
            else:
                runners[backend.name] = LocalRunner(backend)
        for name, runner in list(runners.items()):
            if isinstance(runner, WorkerRunner):
                try:
                    runner.hello()  # a framework that fails to import says so here, before anything is measured
                except XferbenchError as error:
                    if failed is None:
                        raise
                    runner.close()
                    del runners[name]
                    failed[name] = str(error)
    except BaseException:
        for runner in runners.values():
            runner.close()
        raise
    return runners


def _select_backends(config: SweepConfig) -> list[Backend]:
    if config.frameworks:
        backends = []
        for name in dict.fromkeys(config.frameworks):
            if name in config.pythons and name in BACKENDS:  # its own interpreter is checked by its worker
                backends.append(BACKENDS[name])
            else:
                backends.append(get_backend(name))
        return backends
    return default_backends()


def absent_frameworks(config: SweepConfig, target: str) -> list[str]:
    """Why a default sweep (no --framework) leaves each absent framework out: absence must not pass
    unseen. A CUDA-only one is named only when the sweep goes to a CUDA device."""
    if config.frameworks:
        return []
    wanted = [b for b in BACKENDS.values() if b.in_default_sweep and (target.startswith("cuda") or not b.cuda_only)]
    return [why for b in wanted if (why := b.missing())]


def on_macos() -> bool:
    """Apple's GPU (MPS) exists on macOS only."""
    return sys.platform == "darwin"


def _check_static(config: SweepConfig, backends: Sequence[Backend]) -> None:
    """Everything that can be checked without starting a framework."""
    for part in device_parts(config.device):
        if part != "all":  # every GPU: resolve_devices says what that is once the frameworks are started
            check_device_name(part)
    if "mps" in device_parts(config.device) and not on_macos() and any(not b.fixed_device for b in backends):
        raise XferbenchError(f"--device mps: MPS is the GPU of Apple silicon Macs, and this machine runs {os_name()};"
                             " drop --device mps (auto picks CUDA where there is a GPU, else the CPU)")  # fmt: skip
    for op in config.ops:
        if op not in OPS:
            raise XferbenchError(f"unknown op {op!r}; choose from: {', '.join(OPS)}")
    for mode in config.modes:
        if not any(mode in b.modes for b in backends):
            valid = "; ".join(f"{b.name}: {', '.join(b.modes)}" for b in backends)
            raise XferbenchError(f"unknown mode {mode!r}; valid modes are {valid}")
    if config.frameworks and config.modes:  # a framework asked for by name must not vanish silently
        for backend in backends:
            if not any(mode in backend.modes for mode in config.modes):
                raise XferbenchError(
                    f"--mode {', '.join(config.modes)} selects no {backend.name} path;"
                    f" {backend.name} modes are {', '.join(backend.modes)}"
                )
    for kind in config.host_buffers:
        if kind not in HOST_BUFFERS:
            raise XferbenchError(f"unknown host buffer {kind!r}; choose from: {', '.join(HOST_BUFFERS)}")
    if not config.methods:
        raise XferbenchError(f"give at least one --timing: {', '.join(TIMING_METHODS)}")
    for method in config.methods:
        if method not in TIMING_METHODS:
            raise XferbenchError(f"unknown --timing {method!r}; choose from: {', '.join(TIMING_METHODS)}")
    if not config.directions:
        raise XferbenchError(f"give at least one --direction: {', '.join(DIRECTIONS)}")
    for direction in config.directions:
        if direction not in DIRECTIONS:
            raise XferbenchError(f"unknown --direction {direction!r}; choose from: {', '.join(DIRECTIONS)}")
    if config.pipeline and not any(b.name in PIPELINE_MODES for b in backends):
        raise XferbenchError(f"--pipeline: only {' and '.join(PIPELINE_MODES)} have input-pipeline paths; add -f torch or -f tf")
    if config.overlap and not (config.pipeline or any(is_pipeline(b.name, m) for b in backends for m in config.modes)):
        raise XferbenchError("--overlap times a compute kernel beside an input pipeline: add --pipeline (or a pipeline --mode)")
    if not 1 <= config.loader_workers <= MAX_LOADER_WORKERS:
        raise XferbenchError(f"--loader-workers {config.loader_workers}: give 1 to {MAX_LOADER_WORKERS} worker processes")
    if config.staging_chunk_bytes is not None:
        kib = config.staging_chunk_bytes / 2**10
        if not (MIN_STAGING_CHUNK <= config.staging_chunk_bytes <= MAX_STAGING_CHUNK and kib == int(kib)):
            raise XferbenchError(f"--staging-chunk-kib {int(kib) if kib == int(kib) else kib}: give a whole number of KiB from {MIN_STAGING_CHUNK // 2**10}"
                                 f" to {MAX_STAGING_CHUNK // 2**10:,}")  # fmt: skip
        if not any(b.name == "host" and "staged" in config.modes_for(b) for b in backends):
            raise XferbenchError("--staging-chunk-kib sets the chunk host/staged copies at a time: add -f host -m staged")
    for name in config.pythons:
        if name not in {b.name for b in backends}:
            raise XferbenchError(f"--python {name}=...: {name} is not among the frameworks swept")
    config.timing.check()
    config.sim.check()


def _skip_reason(runner: Runner, key: SeriesKey, present: list[str]) -> str | None:
    backend = runner.backend
    if key.op not in backend.ops:
        return f"the {key.op} op is not defined for {backend.name}; it supports {', '.join(backend.ops)}"
    if key.device not in present:
        return runner.absent_reason(key.device, present)
    if key.host_buffer not in backend.sources(key.mode):
        return backend.skip_reason(key) or (
            f"{backend.name} {key.mode} cannot start from a {key.host_buffer} host buffer;"
            f" it takes {', '.join(backend.sources(key.mode))}"
        )
    skip = backend.skip_reason(key) or backend.direction_reason(key)
    if skip is None and key.method == STREAMED:
        if key.direction == BIDIR:
            return "bidir is timed per call only: each direction's stream is timed by its own events around one copy"
        return backend.streamed_reason(key)
    return skip


def make_plan(config: SweepConfig) -> Plan:
    """Resolve frameworks, device, modes, ops and host buffers into series; raise on bad input before measuring.

    Starts each GPU framework's worker process; the caller closes the plan when done.
    """
    backends = _select_backends(config)
    _check_static(config, backends)
    failed: dict[str, str] | None = None if config.frameworks else {}  # named with -f, a failure is the answer
    runners = start_runners(backends, config.pythons, failed)
    try:
        devices = resolve_devices(config.device, list(runners.values()))
        series = []
        for backend in backends:
            if failed and backend.name in failed:  # planned, and skipped with its error: a result file names it
                present, targets = [], [backend.fixed_device] if backend.fixed_device else devices
            elif backend.name == "sim":
                present = targets = config.sim.device_ids()
            else:
                present = runners[backend.name].devices()
                targets = [backend.fixed_device] if backend.fixed_device else devices
            for mode in config.modes_for(backend):
                sources = backend.sources(mode)
                kinds = sources if len(sources) == 1 else config.host_buffers or sources[:1]
                for op in config.ops:
                    for kind in kinds:
                        for method in config.methods:
                            for direction in config.directions:
                                keys = [SeriesKey(backend.name, mode, op, target, config.shape, kind, method, direction)
                                        for target in targets]  # fmt: skip
                                if config.concurrent and len(targets) > 1:  # each device alone, then all at once
                                    keys += [dataclasses.replace(key, concurrent=len(targets)) for key in keys]
                                for key in keys:
                                    skip = failed[backend.name] if failed and backend.name in failed else \
                                        _skip_reason(runners[backend.name], key, present)  # fmt: skip
                                    if skip is None and config.cold_source:
                                        skip = cold_source_reason(key)
                                    series.append(PlannedSeries(key, backend, skip))
        plan = Plan(config, devices[0], series, runners, devices)
        if config.concurrent and not any(s.key.concurrent > 1 for s in series):
            where = ", ".join(dict.fromkeys(s.key.device for s in series)) or "no device"
            raise XferbenchError(
                f"--concurrent: each path here runs on one device only ({where}), so there is nothing to run concurrently;"
                " give --device all (or several --device) on a machine with several GPUs, --sim-devices for the"
                " simulated link, or drop --concurrent"
            )
        if not plan.runnable:
            reasons = "; ".join(f"{s.key.label()}: {s.skip}" for s in series) or "no series selected"
            raise XferbenchError(f"nothing can run here: {reasons}")
        if not config.bind and not any(s.key.device.startswith("cuda") for s in plan.runnable):
            raise XferbenchError(
                f"--no-bind: nothing to bind here: workers are bound to a GPU's CPUs and NUMA node only for"
                f" CUDA devices, and this sweep runs on {plan.target}; drop --no-bind"
            )
        _check_host_memory(plan)
    except BaseException:
        for runner in runners.values():
            runner.close()
        raise
    return plan


def _check_host_memory(plan: Plan) -> None:
    """Refuse, before anything is measured, a series whose largest batch needs more host memory than there
    is, sized with the parameters it will run with (a DataLoader's --loader-workers), saying what to lower."""
    memory = available_host_memory()
    if memory is None:
        return
    available, what = memory
    largest = max(plan.config.batch_sizes)
    for planned in plan.runnable:
        params = plan.config.params(planned.key.framework, planned.key.concurrent)

        def need(batch_size: int, **changed: Any) -> int:
            evicting = EVICTION_BYTES if params.get(COLD_SOURCE) else 0  # --cold-source's buffer, held while the series runs
            return planned.backend.host_bytes_for(planned.key.at(batch_size), {**params, **changed}) + evicting

        needed = need(largest)
        if needed <= available:
            continue
        fits = [b for b in plan.config.batch_sizes if need(b) <= available]
        hint = f"the largest that fits is {fits[-1]}" if fits else "lower --batch-sizes or --shape"
        workers, held = params.get("loader_workers"), ""
        if workers and need(largest, loader_workers=1) < needed:  # its workers' batches count
            held = f" with --loader-workers {workers} (each worker holds {BUFFER_BATCHES} batches ahead)"
            fewer = [w for w in range(workers - 1, 0, -1) if need(largest, loader_workers=w) <= available]
            if fewer:
                hint = f"lower --loader-workers to {fewer[0]}, or --batch-sizes" + (f" (the largest that fits is {fits[-1]})" if fits else "")
        raise XferbenchError(
            f"batch {largest} of {planned.key.label()} needs {needed / 1e9:.1f} GB of host memory{held}"
            f" but {available / 1e9:.1f} GB is {what}; {hint}"
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


def run_plan(
    plan: Plan,
    result: Result,
    save: Callable[[Result], None],
    on_point: OnPoint | None = None,
    on_start: OnStart | None = None,
    link_interval_s: float | None = INTERVAL_S,
) -> Result:
    """Measure every runnable series, saving the result after every point.

    A framework's worker that dies costs only its own series: they are marked failed with the
    reason, and the other frameworks' series go on. Ctrl-C leaves the file marked interrupted.
    While a series on a CUDA device runs, its GPU's PCIe link is sampled every `link_interval_s`
    (None: not at all) into `series.link`: an idle link drops its generation, so only a reading
    under load tells a slow link from a resting one. Unless the config says not to, each such
    series' worker is bound to its GPU's CPUs and NUMA node before it allocates (numa.py); what was
    done, or why not, is kept in `series.numa`. The series of a concurrent run (one per device, planned
    side by side) are measured together (run_together).
    """
    lock = threading.Lock()  # a concurrent run's workers report from threads of their own

    def point_done(series: Series, point: Point) -> None:
        with lock:
            series.refresh_summary()
            save(result)
            if on_point:
                on_point(series, point)

    def point_started(series: Series, batch_size: int) -> None:
        if on_start:
            with lock:
                on_start(series, batch_size)

    try:
        index = 0
        while index < len(plan.series):
            planned = plan.series[index]
            group = [planned]
            if planned.key.concurrent > 1:  # the rest of its run follows it in the plan
                group = plan.series[index : index + planned.key.concurrent]
            index += len(group)
            members = [Series.of(p.key) for p in group]
            result.series.extend(members)
            for p, series in zip(group, members):
                if p.skip:
                    series.status, series.reason = "skipped", p.skip
            runnable = [(p, series) for p, series in zip(group, members) if not p.skip]
            if planned.key.concurrent > 1 and len(runnable) == 1:
                alone = runnable.pop()[1]
                alone.status, alone.reason = "skipped", f"not run at once: no other device of the run can run {alone.key.label()}"
            save(result)
            if planned.key.concurrent > 1 and runnable:
                run_together(plan, result, runnable, point_started, point_done, link_interval_s)
            elif runnable:
                _measure(plan, result, *runnable[0], point_started, point_done, link_interval_s)
            save(result)
        result.status = "complete"
    except KeyboardInterrupt:
        result.status = "interrupted"
        raise
    finally:
        save(result)
    return result


def _binding(plan: Plan, result: Result, planned: PlannedSeries) -> tuple[Binding | None, str | None]:
    """Where a CUDA series' worker is bound (its GPU's CPUs and NUMA node), or why it is not."""
    key = planned.key
    if not key.device.startswith("cuda") or planned.backend.fixed_device:
        return None, None
    return plan_binding(result.environment, key.device) if plan.config.bind else (None, "not bound: --no-bind")


def _placement(plan: Plan, result: Result, planned: PlannedSeries, series: Series, link_interval_s: float | None
               ) -> tuple[LinkSampler | None, Binding | None]:  # fmt: skip
    """Start sampling a CUDA series' link, and bind its worker to its GPU's node unless told not to."""
    key, sampler = planned.key, None
    if link_interval_s is not None and key.device.startswith("cuda"):
        sampler = LinkSampler.for_device(result.environment, key.device, interval_s=link_interval_s)
        sampler.start()
    elif key.device.startswith("cuda"):
        series.link = {"reason": "not sampled: --no-link-sampling"}
    binding, why = _binding(plan, result, planned)
    if binding is None and why:
        series.numa = {"reason": why}
    return sampler, binding


def _record_death(series: Series, config: SweepConfig, started: list[int], died: WorkerDied) -> None:
    """The worker died: the series fails with the reason, the batch it was on is an error, the rest skipped."""
    series.status, series.reason = "failed", str(died)
    done = {p.batch_size for p in series.points}
    for batch_size in config.batch_sizes:
        if batch_size in done:
            continue
        if started and batch_size == started[-1]:
            series.points.append(Point.failed(series.key.at(batch_size), "error", "the worker died while measuring this batch"))
        else:
            series.points.append(Point.failed(series.key.at(batch_size), "skipped", "not measured: the worker died"))
    series.refresh_summary()


def _measure(plan: Plan, result: Result, planned: PlannedSeries, series: Series, on_start: OnStart, on_point: OnPoint,
             link_interval_s: float | None, runner: Runner | None = None, barrier: StartLine | None = None,
             stopping: threading.Event | None = None) -> None:  # fmt: skip
    """One series, in its framework's runner (or the one given), its link sampled and its worker bound.
    In a concurrent run (a barrier), a worker killed because the sweep is stopping (`stopping`) is no
    death: its series keeps what it measured, as a solo series does when interrupted."""
    config, key = plan.config, planned.key
    runner = runner or plan.runners[key.framework]
    sampler, binding = _placement(plan, result, planned, series, link_interval_s)
    started: list[int] = []  # the batch the worker was measuring, should it die

    def point_started(series: Series, batch_size: int) -> None:
        started.append(batch_size)
        on_start(series, batch_size)

    try:
        args = (key, config.batch_sizes, config.params(key.framework, key.concurrent), config.timing, series, point_started,
                on_point, binding)  # fmt: skip
        if barrier is None:
            runner.measure_series(*args)
        else:  # a concurrent run's runners are workers, which take the start line
            runner.measure_series(*args, barrier=barrier)  # type: ignore[call-arg]
    except BaseException as error:
        if barrier is not None:
            barrier.abort()  # the other devices go on alone rather than wait for this one
        if stopping is not None and stopping.is_set():
            return  # the sweep is stopping and closed this worker: the main thread says so, once, and saves
        if not isinstance(error, WorkerDied):
            raise
        _record_death(series, config, started, error)
    finally:
        if sampler is not None:
            series.link = sampler.stop()


def _overlap(points: list[Point]) -> float | None:
    """The share of the run's whole window during which every device sampled."""
    windows = [p.window_s for p in points if p.window_s]
    if len(windows) < len(points) or not windows:
        return None
    together = max(0.0, min(w[1] for w in windows) - max(w[0] for w in windows))
    span = max(w[1] for w in windows) - min(w[0] for w in windows)
    return round(together / span, 4) if span > 0 else None


def run_together(plan: Plan, result: Result, members: list[tuple[PlannedSeries, Series]], on_start: OnStart,
                 on_point: OnPoint, link_interval_s: float | None) -> None:  # fmt: skip
    """A concurrent run: the same path on every device at once, a worker per device (each bound to its
    own GPU's node from the start), a barrier before each point's sampling so they start together.
    Once every device has a point at a batch, each of those points records the share of the run's
    window during which every device sampled (`overlap`). A worker that cannot start costs its own
    series; Ctrl-C stops every worker and keeps what was measured."""
    backend = members[0][0].backend
    runners: list[WorkerRunner] = []
    started = []
    try:
        for planned, series in members:
            try:
                runner = WorkerRunner(backend, plan.config.pythons.get(backend.name), binding=_binding(plan, result, planned)[0])
                runners.append(runner)
                runner.hello()
                started.append((planned, series, runner))
            except (XferbenchError, WorkerDied) as error:
                series.status, series.reason = "failed", f"its worker did not start: {error}"
        if len(started) < 2:
            for _, series, _ in started:
                series.status, series.reason = "skipped", "not run at once: the other devices' workers did not start"
            return
        by_batch: dict[int, list[Point]] = {}
        lock = threading.Lock()

        def point_done(series: Series, point: Point) -> None:
            with lock:
                points = by_batch.setdefault(point.batch_size, [])
                points.append(point)
                if len(points) == len(started):
                    overlap = _overlap(points)
                    for done in points:
                        done.overlap = overlap
            on_point(series, point)

        barrier, stopping = StartLine(len(started)), threading.Event()
        threads = [threading.Thread(target=_measure, daemon=True, args=(plan, result, planned, series, on_start, point_done,
                                                                       link_interval_s, runner, barrier, stopping))
                   for planned, series, runner in started]  # fmt: skip
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(0.2)  # a timeout, so Ctrl-C reaches the main thread
        except BaseException:
            stopping.set()
            barrier.abort()
            for runner in runners:
                runner.close()  # kills a worker still measuring: its thread sees it and records no death
            for thread in threads:
                thread.join(DEATH_WAIT_S)
            raise
    finally:
        for runner in runners:
            runner.close()
