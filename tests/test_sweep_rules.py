"""The sweep planner's rules and the run loop, with stand-in frameworks and runners: which series a
sweep plans on which device and why each skipped one is skipped, every input check word for word,
and what run_plan saves and reports, point by point, without a worker or a real framework."""

from __future__ import annotations

import re
import sys
import threading
import types
from typing import Any

import pytest

from conftest import FAST
from xferbench import __version__
from xferbench.core.errors import XferbenchError
from xferbench.core.results import Point, Result, Series
from xferbench.core.spec import BIDIR, D2H, H2D, PER_CALL, STREAMED, SeriesKey, Spec
from xferbench.core.timing import TimingConfig
from xferbench.measuring import sweep
from xferbench.measuring.backends import BACKENDS, SimLink
from xferbench.measuring.backends.base import Backend, SeriesInfo, Transfer
from xferbench.measuring.sweep import Plan, PlannedSeries, SweepConfig
from xferbench.measuring.worker import StartLine, WorkerDied

SIM = BACKENDS["sim"]
GB = 10**9


class NoTransfer(Transfer):
    def __call__(self) -> None:
        return None

    def verify(self) -> None:
        return None


class Stub(Backend):
    """A framework that imports nothing: its modes, devices, sources and reasons are given."""

    def __init__(self, name: str, *, modes: tuple[str, ...] = ("a",), default: tuple[str, ...] | None = None,
                 ops: tuple[str, ...] = ("copy",), fixed: str | None = None, devices: tuple[str, ...] = ("cpu",),
                 isolated: bool = False, cuda_only: bool = False, default_sweep: bool = True,
                 buffers: tuple[str, ...] = ("numpy",), sources: dict[str, tuple[str, ...]] | None = None,
                 module: str | None = None, extra: str | None = None, skip: Any = None, ways: tuple[str, ...] = (H2D,),
                 streams: bool = False, per_item: int = 0, hello_error: str | None = None) -> None:  # fmt: skip
        self.name, self.title, self.modes = name, name.upper(), modes
        self.default_modes = modes if default is None else default
        self.ops, self.fixed_device, self.isolated, self.cuda_only = ops, fixed, isolated, cuda_only
        self.in_default_sweep, self.host_buffers, self._sources = default_sweep, buffers, sources or {}
        self.module, self.extra, self._skip, self._ways, self._streams = module, extra, skip, ways, streams
        self._devices, self.per_item, self.hello_error = list(devices), per_item, hello_error

    def sources(self, mode: str) -> tuple[str, ...]:
        return self._sources.get(mode, self.host_buffers)

    def devices(self) -> list[str]:
        return [self.fixed_device] if self.fixed_device else list(self._devices)

    def skip_reason(self, key: SeriesKey) -> str | None:
        return self._skip(key) if self._skip else None

    def directions(self, mode: str) -> tuple[str, ...]:
        return self._ways

    def streamed_reason(self, key: SeriesKey) -> str | None:
        return None if self._streams else super().streamed_reason(key)

    def environment(self) -> dict[str, Any]:
        return {"version": self.name}

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        return SeriesInfo("stub", "host-to-device", "virtual", "none")

    def host_bytes(self, spec: Spec) -> int:
        return spec.batch_size * self.per_item

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return NoTransfer()


class FakeWorker:
    """Stands in for a worker process: says hello (or the backend's error), measures on a virtual clock."""

    made: list[FakeWorker] = []
    script: dict[str, Any] = {}  # device -> what its worker does: "die@N", "hello", "ctor"

    def __init__(self, backend: Backend, python: str | None = None, binding: Any = None) -> None:
        self.backend, self.python, self.binding, self.closed, self.calls = backend, python, binding, 0, []
        self.meets: list[float | None] = []
        if FakeWorker.script.get(("ctor", len(FakeWorker.made))):
            FakeWorker.made.append(self)
            raise WorkerDied("could not spawn")
        FakeWorker.made.append(self)

    def hello(self) -> None:
        error = getattr(self.backend, "hello_error", None) or FakeWorker.script.get(("hello", FakeWorker.made.index(self)))
        if error:
            raise XferbenchError(error)

    def devices(self) -> list[str]:
        return self.backend.devices()

    def environment(self) -> dict[str, Any]:
        return self.backend.environment()

    def absent_reason(self, device: str, present: list[str]) -> str:
        return f"worker of {self.backend.name}: no {device} in {present}"

    def measure_series(self, key, batch_sizes, params, timing, series, on_start, on_point, binding=None, barrier=None):  # type: ignore[no-untyped-def]
        self.calls.append((key, tuple(batch_sizes), params, timing, binding, barrier))
        die = FakeWorker.script.get(("die", key.device))
        for index, batch in enumerate(batch_sizes):
            on_start(series, batch)
            if die == batch:
                raise WorkerDied(f"{key.device} died")
            if barrier is not None:
                self.meets.append(barrier.meet(2.0))
            start = {"cuda:0": 0.0, "cuda:1": 1.0, "cuda:2": 0.5}.get(key.device, 0.0) + 10 * index
            point = Point(batch, batch * 100, n=3, median_s=0.5 / (index + 1), window_s=[start, start + 2.0])
            series.points.append(point)
            on_point(series, point)

    def close(self) -> None:
        self.closed += 1


class VirtualRunner:
    """An in-process runner on a virtual clock: each batch's point takes 1 µs per item, none of it real."""

    def __init__(self, backend: Backend, stop: dict[int, BaseException] | None = None, before: bool = True) -> None:
        self.backend, self.stop, self.before, self.calls, self.closed = backend, stop or {}, before, [], 0

    def devices(self) -> list[str]:
        return self.backend.devices()

    def environment(self) -> dict[str, Any]:
        return {"runner": self.backend.name}

    def absent_reason(self, device: str, present: list[str]) -> str:
        return f"runner {self.backend.name} lacks {device} (sees {', '.join(present)})"

    def measure_series(self, key, batch_sizes, params, timing, series, on_start, on_point, binding=None):  # type: ignore[no-untyped-def]
        self.calls.append((key.label(), tuple(batch_sizes), params, timing, binding))
        series.device_name = "virtual"
        for batch in batch_sizes:
            if batch in self.stop and not self.before:
                raise self.stop[batch]
            on_start(series, batch)
            if batch in self.stop:
                raise self.stop[batch]
            point = Point(batch, batch * 1000, n=3, median_s=1e-6 * batch + 1e-6)
            series.points.append(point)
            on_point(series, point)

    def close(self) -> None:
        self.closed += 1


@pytest.fixture(autouse=True)
def _stand_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    """No worker process and no reading of this machine's memory: each test sets what it needs."""
    FakeWorker.made, FakeWorker.script = [], {}
    monkeypatch.setattr(sweep, "WorkerRunner", FakeWorker)
    monkeypatch.setattr(sweep, "available_host_memory", lambda: None)
    monkeypatch.setattr(sys, "platform", "linux")


@pytest.fixture
def register(monkeypatch: pytest.MonkeyPatch):
    """Replace every registered framework with the given ones, in that order."""

    def put(*backends: Backend) -> None:
        for name in list(BACKENDS):
            monkeypatch.delitem(BACKENDS, name)
        for backend in backends:
            monkeypatch.setitem(BACKENDS, backend.name, backend)

    return put


def labels(plan: Plan) -> list[tuple[str, str | None]]:
    return [(s.key.label(), s.skip) for s in plan.series]


def fail(match: str, call, *args: Any) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(XferbenchError) as raised:
        call(*args)
    assert str(raised.value) == match


# ---------------------------------------------------------------- parsing the options


def test_batch_sizes_are_positive_integers_merged_and_sorted() -> None:
    """--batch-sizes: merged, sorted, '+N' accepted; each wrong input named with what to give."""
    assert sweep.parse_batch_sizes(" 8, 1,+2,8 ") == (1, 2, 8)
    assert sweep.parse_batch_sizes(str(sweep.MAX_BATCH)) == (1 << 20,)
    assert sweep.parse_batch_sizes(",".join(str(i) for i in range(1, 65))) == tuple(range(1, 65))
    give = "give comma-separated positive integers, e.g. 1,2,4,8"
    fail(f"--batch-sizes ' ': {give}", sweep.parse_batch_sizes, " ")
    fail(f"--batch-sizes '1,,2': {give}", sweep.parse_batch_sizes, "1,,2")
    fail(f"--batch-sizes '1, ': {give}", sweep.parse_batch_sizes, "1, ")
    fail("--batch-sizes: '0' is not a positive integer", sweep.parse_batch_sizes, "2,0")
    fail("--batch-sizes: '-1' is not a positive integer", sweep.parse_batch_sizes, "-1")
    fail("--batch-sizes: '1.5' is not a positive integer", sweep.parse_batch_sizes, "1.5")
    fail("--batch-sizes: 1048577 is more than 1,048,576 items in one batch; give a smaller batch",
         sweep.parse_batch_sizes, "1,1048577")  # fmt: skip
    fail("--batch-sizes: 65 sizes; give at most 64 (each is a point of every series)",
         sweep.parse_batch_sizes, ",".join(str(i) for i in range(1, 66)))  # fmt: skip


def test_a_shape_is_positive_integers_joined_by_x_within_the_limits() -> None:
    """--shape: 'AxBxC', any case, at most 8 dimensions and 4 GiB per item."""
    assert sweep.parse_shape("256X256x3") == (256, 256, 3)
    assert sweep.parse_shape(" 2 x 3") == (2, 3)
    assert sweep.parse_shape("1x" * 7 + "1") == (1,) * 8
    assert sweep.parse_shape("65536x65536") == (65536, 65536)
    for bad in ("0x3", "ax3", "", "2x-1"):
        fail(f"--shape {bad!r}: give positive integers joined by 'x', e.g. 256x256x3", sweep.parse_shape, bad)
    limits = "give at most 8 dimensions and at most 4,294,967,296 bytes per item (the batch multiplies it)"
    fail(f"--shape '{'1x' * 8 + '1'}': {limits}", sweep.parse_shape, "1x" * 8 + "1")
    fail(f"--shape '65536x65537': {limits}", sweep.parse_shape, "65536x65537")


# ---------------------------------------------------------------- devices


def runner(backend: Backend) -> sweep.LocalRunner:
    return sweep.LocalRunner(backend)


GPU = Stub("gpu", devices=("cpu", "cuda:0", "cuda:1"))
MAC = Stub("mac", devices=("cpu", "mps"))
CPU_ONLY = Stub("plain", devices=("cpu",))
HOST = Stub("hostcopy", fixed="cpu")


def test_auto_picks_cuda_then_mps_then_the_cpu() -> None:
    """--device auto: the first CUDA device any framework reaches, else MPS, else the CPU."""
    assert sweep.auto_device(["cpu", "mps", "cuda:1", "cuda:0"]) == "cuda:1"
    assert sweep.auto_device(["cpu", "mps"]) == "mps"
    assert sweep.auto_device(["cpu"]) == "cpu"
    assert sweep.auto_device([]) == "cpu"
    assert sweep.resolve_device(" AUTO ", [runner(CPU_ONLY), runner(MAC)]) == "mps"
    assert sweep.resolve_device("auto", [runner(HOST), runner(MAC), runner(GPU)]) == "cuda:0"


def test_an_explicit_device_is_checked_against_what_the_frameworks_see() -> None:
    """cuda means cuda:0; a device nobody sees names what is present and each framework's reason."""
    runners = [runner(CPU_ONLY), runner(HOST), runner(GPU)]
    assert sweep.resolve_device("cuda", runners) == "cuda:0"
    assert sweep.resolve_device(" Cuda:1", runners) == "cuda:1"
    assert sweep.resolve_device("cpu", runners) == "cpu"
    fail("unknown device 'gpu'; use auto, all, cpu, cuda, cuda:N, xpu, xpu:N or mps", sweep.resolve_device, "gpu", runners)
    fail("unknown device 'cuda:x'; use auto, all, cpu, cuda, cuda:N, xpu, xpu:N or mps", sweep.resolve_device, "cuda:x", runners)
    fail("unknown device 'xcpu'; use auto, all, cpu, cuda, cuda:N, xpu, xpu:N or mps", sweep.resolve_device, "xcpu", runners)
    fail("device 'cuda:2' is not present; devices present: cpu, cuda:0, cuda:1; plain sees no cuda:2 device here"
         " (it sees: cpu); gpu sees no cuda:2 device here (it sees: cpu, cuda:0, cuda:1)",
         sweep.resolve_device, "cuda:2", runners)  # fmt: skip
    fail("device 'mps' is not present; devices present: cpu; plain sees no mps device here (it sees: cpu)",
         sweep.resolve_device, "mps", [runner(CPU_ONLY), runner(HOST)])  # fmt: skip


def test_a_device_name_no_framework_could_mean_is_refused_before_any_worker_starts(monkeypatch) -> None:
    """--device tpu (or tpu among several) is a typo whatever is installed: said before the frameworks' minutes of start-up."""
    def no_start(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a framework was started for a device name nothing could mean")

    monkeypatch.setattr(sweep, "start_runners", no_start)
    for device in ("tpu", "cpu,tpu", "all,TPU "):
        fail("unknown device 'tpu'; use auto, all, cpu, cuda, cuda:N, xpu, xpu:N or mps", sweep.make_plan,
             SweepConfig(frameworks=("torch",), device=device))  # fmt: skip
    with pytest.raises(AssertionError, match="was started"):  # every name any framework could mean goes on
        sweep.make_plan(SweepConfig(frameworks=("torch",), device="all,cuda:3,cpu, auto"))


def test_host_side_paths_alone_run_where_they_run() -> None:
    """Only fixed-device paths: auto or their own device; any other names each path and where it runs."""
    sim = Stub("sim", fixed="sim")
    assert sweep.resolve_device("auto", [runner(HOST), runner(sim)]) == "cpu"
    assert sweep.resolve_device("cpu", [runner(HOST)]) == "cpu"
    assert sweep.resolve_device("auto", []) == "cpu"
    assert sweep.resolve_device("mps", [runner(Stub("metal", fixed="mps"))]) == "mps"
    fail("--device cuda:0: hostcopy copies within host memory and runs on the cpu only, sim is a simulated link and"
         " reaches no device; drop --device, or add a framework that reaches cuda:0",
         sweep.resolve_device, "cuda:0", [runner(HOST), runner(sim)])  # fmt: skip
    fail("--device cpu: sim is a simulated link and reaches no device; drop --device, or add a framework that reaches cpu",
         sweep.resolve_device, "cpu", [runner(sim)])  # fmt: skip


def test_several_devices_and_all() -> None:
    """--device given several times: each resolved, duplicates merged; all: every CUDA GPU, alone."""
    assert sweep.device_parts(" CPU, ,cuda:1,") == ["cpu", "cuda:1"]
    assert sweep.device_parts("") == ["auto"] and sweep.device_parts(" , ") == ["auto"]
    runners = [runner(HOST), runner(Stub("b", devices=("cuda:1", "cpu", "mps"))), runner(GPU)]
    assert sweep.resolve_devices("cuda,cpu,cuda:0", runners) == ["cuda:0", "cpu"]
    assert sweep.resolve_devices("", runners) == ["cuda:1"]
    assert sweep.resolve_devices(" ALL ", runners) == ["cuda:1", "cuda:0"]
    assert sweep.resolve_devices("all", [runner(HOST), runner(Stub("sim", fixed="sim"))]) == ["cpu"]
    fail("--device all already means every GPU; give it alone, or list the devices you want",
         sweep.resolve_devices, "all,cpu", runners)  # fmt: skip
    fail("--device all means every CUDA GPU, and no framework here sees one (devices present: cpu, mps); drop --device"
         " all to sweep mps", sweep.resolve_devices, "all", [runner(HOST), runner(MAC), runner(Stub("c", devices=("cpu",)))])  # fmt: skip
    fail("--device all means every CUDA GPU, and no framework here sees one (devices present: none); drop --device"
         " all to sweep cpu", sweep.resolve_devices, "all", [runner(Stub("none", devices=()))])  # fmt: skip


# ---------------------------------------------------------------- runners


def test_gpu_frameworks_get_workers_and_the_rest_run_here() -> None:
    """An isolated framework, or one given its own --python, gets a worker; others a LocalRunner."""
    iso, own, local = Stub("iso", isolated=True), Stub("own"), Stub("local")
    runners = sweep.start_runners([iso, own, local], {"own": "/py/own"})
    assert list(runners) == ["iso", "own", "local"]
    assert [type(r) for r in runners.values()] == [FakeWorker, FakeWorker, sweep.LocalRunner]
    assert [(w.backend.name, w.python) for w in FakeWorker.made] == [("iso", None), ("own", "/py/own")]
    assert all(w.closed == 0 for w in FakeWorker.made)
    assert sweep.start_runners([iso]) and FakeWorker.made[-1].python is None


def test_a_worker_that_fails_to_start_stops_everything_unless_failures_are_kept() -> None:
    """Without `failed` the error stops the sweep and every worker closes; with it, only that framework is left out."""
    good, bad = Stub("good", isolated=True), Stub("bad", isolated=True, hello_error="bad: import failed")
    with pytest.raises(XferbenchError, match="^bad: import failed$"):
        sweep.start_runners([good, bad, Stub("local")])
    assert [w.closed for w in FakeWorker.made] == [1, 1]
    FakeWorker.made = []
    failed: dict[str, str] = {}
    runners = sweep.start_runners([good, bad], None, failed)
    assert list(runners) == ["good"] and failed == {"bad": "bad: import failed"}
    assert [w.closed for w in FakeWorker.made] == [0, 1]


def test_an_interpreter_too_old_for_a_worker_is_refused_before_any_worker_starts(monkeypatch) -> None:
    """Each --python is asked its version once, whichever frameworks share it; one too old stops the sweep before
    its worker starts, or, where failures are kept (a default sweep), leaves only its frameworks out."""
    asked: list[str] = []

    def version(python: str) -> tuple[int, ...] | None:
        asked.append(python)
        return {"/py/old": (3, 8, 18), "/py/new": (3, 12, 1)}.get(python)

    monkeypatch.setattr(sweep, "python_version", version)
    old, also_old, new, unknown = (Stub(name, isolated=True) for name in ("old", "also", "new", "unknown"))
    pythons = {"old": "/py/old", "also": "/py/old", "new": "/py/new", "unknown": "/py/silent"}
    with pytest.raises(XferbenchError, match=r"^--python old=/py/old: that is Python 3\.8\.18, and the old worker needs Python 3\.10 or newer;"):
        sweep.start_runners([new, old, also_old, unknown], pythons)
    assert [w.backend.name for w in FakeWorker.made] == ["new"] and FakeWorker.made[0].closed == 1 and asked == ["/py/new", "/py/old"]
    FakeWorker.made, asked[:] = [], []
    failed: dict[str, str] = {}
    runners = sweep.start_runners([old, new, also_old, unknown], pythons, failed)
    assert list(runners) == ["new", "unknown"] and asked == ["/py/old", "/py/new", "/py/silent"]  # an interpreter that says no version: its worker tells
    assert failed == {"old": "--python old=/py/old: that is Python 3.8.18, and the old worker needs Python 3.10 or newer; give"
                             " --python old= a Python 3.10 or newer that has numpy installed",
                      "also": "--python also=/py/old: that is Python 3.8.18, and the also worker needs Python 3.10 or newer; give"
                              " --python also= a Python 3.10 or newer that has numpy installed"}  # fmt: skip


def test_a_worker_that_cannot_even_be_made_closes_those_made_before() -> None:
    """An error while starting the workers closes every runner already started."""
    FakeWorker.script = {("ctor", 1): True}
    with pytest.raises(WorkerDied):
        sweep.start_runners([Stub("one", isolated=True), Stub("two", isolated=True)], None, {})
    assert [w.closed for w in FakeWorker.made] == [1, 0]


# ---------------------------------------------------------------- the checks made before any framework starts


def check(backends: list[Backend], **options: Any) -> None:
    sweep._check_static(SweepConfig(**options), backends)


def test_every_static_check_says_what_to_give(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each bad option: its one-line message, word for word."""
    gpu = Stub("gpu", modes=("pageable", "pinned"))
    torch = Stub("torch", modes=("pageable", "loader"))
    host = Stub("hostcopy", fixed="cpu", modes=("memcpy", "memmove"))
    cases = [
        (dict(ops=("copy", "swap")), "unknown op 'swap'; choose from: copy, seed"),
        (dict(modes=("warp",)), "unknown mode 'warp'; valid modes are gpu: pageable, pinned; hostcopy: memcpy, memmove"),
        (dict(frameworks=("gpu", "hostcopy"), modes=("pinned",)), "--mode pinned selects no hostcopy path; hostcopy modes are memcpy, memmove"),
        (dict(frameworks=("gpu",), modes=("pinned", "pageable")), "--mode pinned, pageable selects no hostcopy path; hostcopy modes are memcpy, memmove"),
        (dict(host_buffers=("numpy", "heap")), "unknown host buffer 'heap'; choose from: numpy, aligned, pinned"),
        (dict(methods=()), "give at least one --timing: per-call, streamed"),
        (dict(methods=(PER_CALL, "batched")), "unknown --timing 'batched'; choose from: per-call, streamed"),
        (dict(directions=()), "give at least one --direction: h2d, d2h, bidir"),
        (dict(directions=(H2D, "p2p")), "unknown --direction 'p2p'; choose from: h2d, d2h, bidir"),
        (dict(pipeline=True), "--pipeline: only torch and tf have input-pipeline paths; add -f torch or -f tf"),
        (dict(overlap=True), "--overlap times a compute kernel beside an input pipeline: add --pipeline (or a pipeline --mode)"),
        (dict(loader_workers=0), "--loader-workers 0: give 1 to 64 worker processes"),
        (dict(loader_workers=65), "--loader-workers 65: give 1 to 64 worker processes"),
        (dict(pythons={"gpu": "/py", "tf": "/py"}), "--python tf=...: tf is not among the frameworks swept"),
        (dict(timing=TimingConfig(warmup_calls=0)), "--warmup-calls and --min-samples must be at least 1"),
        (dict(sim=SimLink(devices=0)), "--sim-devices 0: give 1 to 64 (each simulated device runs a worker process of its own)"),
    ]
    for options, message in cases:
        with pytest.raises(XferbenchError) as raised:
            check([gpu, host], **options)
        assert str(raised.value) == message, options
    check([gpu, host], modes=("memcpy",))  # a default sweep: a mode of any framework will do
    check([gpu, torch], frameworks=("gpu", "torch"), modes=("pageable",), pythons={"gpu": "/py"},
          loader_workers=64, pipeline=True, overlap=True, methods=(STREAMED,), directions=(BIDIR, D2H))  # fmt: skip
    check([gpu, host], loader_workers=1)
    check([torch], modes=("loader",), overlap=True)  # a pipeline mode named is a pipeline
    with pytest.raises(XferbenchError, match="^--overlap"):
        check([torch], modes=("pageable",), overlap=True)


def test_mps_is_refused_off_a_mac_unless_only_host_paths_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """--device mps (alone or among others) off macOS stops at once, naming this OS; host-side paths ignore it."""
    assert not sweep.on_macos()
    fail("--device mps: MPS is the GPU of Apple silicon Macs, and this machine runs Linux; drop --device mps (auto picks"
         " CUDA where there is a GPU, else the CPU)", lambda: check([HOST, MAC], device="cpu, MPS"))  # fmt: skip
    check([HOST], device="mps")
    check([MAC], device="cuda:0")
    monkeypatch.setattr(sys, "platform", "darwin")
    assert sweep.on_macos()
    check([MAC], device="mps")


# ---------------------------------------------------------------- skip reasons


def reason(backend: Backend, *fields: Any, present: tuple[str, ...] = ("cpu", "cuda:0"), **named: Any) -> str | None:
    return sweep._skip_reason(VirtualRunner(backend), SeriesKey(backend.name, *fields, **named), list(present))


def test_each_skip_reason_in_its_order() -> None:
    """op, then device, then host buffer, then the path's own reason or direction, then streamed timing."""
    plain = Stub("p", modes=("m",), ops=("copy", "scale"), buffers=("pinned",), sources={"m": ("numpy", "aligned")}, ways=(H2D, D2H))
    assert reason(plain, "m", "seed", "cuda:9", (1,), "heap") == "the seed op is not defined for p; it supports copy, scale"
    assert reason(plain, "m", "copy", "cuda:9", (1,), "heap") == "runner p lacks cuda:9 (sees cpu, cuda:0)"
    assert reason(plain, "m", "copy", "cuda:0", (1,), "pinned") == "p m cannot start from a pinned host buffer; it takes numpy, aligned"
    assert reason(plain, "m", "copy", "cuda:0", (1,), "aligned", PER_CALL, BIDIR) == "p/m has no bidir path (it copies h2d or d2h, one way at a time)"
    assert reason(plain, "m", "copy", "cuda:0", (1,), "numpy", STREAMED) == (
        "p/m cannot queue its transfers on a held stream (it allocates, or waits, between them): it is timed per call only")
    assert reason(plain, "m", "copy", "cuda:0", (1,), "numpy", PER_CALL, D2H) is None
    own = Stub("o", modes=("m",), skip=lambda key: f"o: no {key.host_buffer} on {key.device}", streams=True, ways=(H2D, D2H, BIDIR))
    assert reason(own, "m", "copy", "cpu", (1,), "aligned") == "o: no aligned on cpu"
    assert reason(own, "m", "copy", "cpu", (1,), "numpy", STREAMED, BIDIR) == "o: no numpy on cpu"
    streams = Stub("s", modes=("m",), streams=True, ways=(H2D, BIDIR))
    assert reason(streams, "m", "copy", "cpu", (1,), "numpy", STREAMED, BIDIR) == (
        "bidir is timed per call only: each direction's stream is timed by its own events around one copy")
    assert reason(streams, "m", "copy", "cpu", (1,), "numpy", STREAMED, H2D) is None
    assert reason(streams, "m", "copy", "cpu", (1,), "numpy", STREAMED, D2H) == "s/m has no d2h path; it copies h2d, bidir"


# ---------------------------------------------------------------- plans


def test_series_are_planned_mode_op_buffer_method_direction_then_device(register) -> None:
    """The nesting of a plan, each skipped series with its reason; a one-source mode keeps its own buffer."""
    gpu = Stub("gpu", modes=("pageable", "pinned", "odd"), default=("pageable", "pinned"), isolated=True,
               buffers=("numpy", "aligned"), sources={"pinned": ("pinned",)}, devices=("cpu", "cuda:0"))  # fmt: skip
    register(gpu, HOST)
    plan = sweep.make_plan(SweepConfig(frameworks=("gpu", "gpu"), ops=("copy", "seed"), host_buffers=("aligned", "pinned"),
                                       device="cuda", timing=FAST))  # fmt: skip
    seed = "the seed op is not defined for gpu; it supports copy"
    assert labels(plan) == [
        ("gpu/pageable/copy+aligned@cuda:0", None),
        ("gpu/pageable/copy+pinned@cuda:0", "gpu pageable cannot start from a pinned host buffer; it takes numpy, aligned"),
        ("gpu/pageable/seed+aligned@cuda:0", seed),
        ("gpu/pageable/seed+pinned@cuda:0", seed),
        ("gpu/pinned/copy@cuda:0", None),
        ("gpu/pinned/seed@cuda:0", seed),
    ]
    assert plan.device == "cuda:0" and plan.devices == ["cuda:0"] and plan.config.device == "cuda"
    assert [type(r) for r in plan.runners.values()] == [FakeWorker] and plan.backends == [gpu]
    assert plan.environments() == {"gpu": {"version": "gpu"}} and plan.target == "cuda:0"
    plan.close()
    assert FakeWorker.made[0].closed == 1
    plain = sweep.make_plan(SweepConfig(frameworks=("gpu",), modes=("odd",), methods=(PER_CALL, STREAMED), directions=(H2D, D2H)))
    assert labels(plain) == [
        ("gpu/odd/copy@cuda:0", None),
        ("gpu/odd/copy/d2h@cuda:0", "gpu/odd has no d2h path; it copies h2d"),
        ("gpu/odd/copy/streamed@cuda:0", "gpu/odd cannot queue its transfers on a held stream (it allocates, or waits,"
                                         " between them): it is timed per call only"),
        ("gpu/odd/copy/d2h/streamed@cuda:0", "gpu/odd has no d2h path; it copies h2d"),
    ]
    assert [s.key.shape for s in plain.series] == [(256, 256, 3)] * 4


def test_a_concurrent_plan_runs_each_device_alone_then_all_at_once(register) -> None:
    """--concurrent with several devices: the alone series, then a copy of each with the count; a fixed path stays single."""
    gpu = Stub("gpu", devices=("cpu", "cuda:0", "cuda:1"), isolated=True)
    register(gpu, HOST)
    plan = sweep.make_plan(SweepConfig(frameworks=("gpu", "hostcopy"), device="all", concurrent=True, shape=(4,)))
    assert labels(plan) == [("gpu/a/copy@cuda:0", None), ("gpu/a/copy@cuda:1", None), ("gpu/a/copy/2-at-once@cuda:0", None),
                            ("gpu/a/copy/2-at-once@cuda:1", None), ("hostcopy/a/copy@cpu", None)]  # fmt: skip
    assert plan.device == "cuda:0" and plan.target == "cuda:0+cuda:1"
    alone = sweep.make_plan(SweepConfig(frameworks=("gpu",), device="cuda:1,cpu"))
    assert labels(alone) == [("gpu/a/copy@cuda:1", None), ("gpu/a/copy@cpu", None)] and alone.device == "cuda:1"
    fail("--concurrent: each path here runs on one device only (cuda:0, cpu), so there is nothing to run concurrently;"
         " give --device all (or several --device) on a machine with several GPUs, --sim-devices for the simulated"
         " link, or drop --concurrent", sweep.make_plan, SweepConfig(frameworks=("gpu", "hostcopy"), concurrent=True))  # fmt: skip
    assert [w.closed for w in FakeWorker.made] == [0, 0, 1]


def test_the_simulated_link_runs_on_its_own_devices(register) -> None:
    """sim: its devices are --sim-devices' own, whatever --device says; its params carry how many share the host side."""
    register(SIM)
    config = SweepConfig(frameworks=("sim",), sim=SimLink(devices=2), concurrent=True)
    plan = sweep.make_plan(config)
    assert labels(plan) == [("sim/link/copy@sim:0", None), ("sim/link/copy@sim:1", None),
                            ("sim/link/copy/2-at-once@sim:0", None), ("sim/link/copy/2-at-once@sim:1", None)]  # fmt: skip
    assert plan.device == "cpu" and plan.target == "sim:0+sim:1"
    assert config.params("sim", 2) == {**config.params("sim"), "at_once": 2} and config.params("sim")["devices"] == 2
    assert config.params("sim")["at_once"] == 1
    assert sweep.make_plan(SweepConfig(frameworks=("sim",))).target == "sim"


def test_params_and_modes_of_pipelines() -> None:
    """A pipeline's params are its overlap and loader workers; --pipeline adds its modes once, after the chosen ones."""
    config = SweepConfig(overlap=True, loader_workers=3, pipeline=True)
    assert config.params("torch") == {"overlap": True, "loader_workers": 3}
    assert config.params("tf", 4) == {"overlap": True, "loader_workers": 3}
    assert config.params("gpu") == {}
    torch = Stub("torch", modes=("pageable", "loader", "loader_pin"), default=("pageable", "loader"))
    assert config.modes_for(torch) == ("pageable", "loader", "loader_workers", "loader_pin", "loader_pin_workers")
    assert SweepConfig().modes_for(torch) == ("pageable", "loader")
    assert SweepConfig(modes=("loader_pin", "x")).modes_for(torch) == ("loader_pin",)
    assert SweepConfig(pipeline=True).modes_for(Stub("gpu", default=("b",))) == ("b",)


def test_a_default_sweep_plans_a_broken_framework_skipped_with_its_error(register) -> None:
    """No --framework: installed frameworks only; one that fails to start is planned, skipped with its error."""
    broken = Stub("broken", isolated=True, hello_error="broken: DLL load failed", devices=("cpu", "cuda:0"))
    fixed_broken = Stub("fixedbroken", isolated=True, fixed="cpu", hello_error="fixedbroken: no")
    gpu = Stub("gpu", isolated=True, devices=("cpu", "cuda:0"))
    register(Stub("gone", module="xferbench_not_a_module"), broken, fixed_broken, gpu, Stub("extra", default_sweep=False))
    plan = sweep.make_plan(SweepConfig())
    assert labels(plan) == [("broken/a/copy@cuda:0", "broken: DLL load failed"), ("fixedbroken/a/copy@cpu", "fixedbroken: no"),
                            ("gpu/a/copy@cuda:0", None)]  # fmt: skip
    assert list(plan.runners) == ["gpu"] and plan.backends == [broken, fixed_broken, gpu]
    assert sweep.absent_frameworks(SweepConfig(), "cpu") == ["GONE is not installed: pip install 'xferbench[None]'"]
    assert [(s.key.label(), s.skip) for s in plan.runnable] == [("gpu/a/copy@cuda:0", None)]
    fail("broken: DLL load failed", sweep.make_plan, SweepConfig(frameworks=("broken", "gpu")))
    fail("GONE is not installed: pip install 'xferbench[None]'", sweep.make_plan, SweepConfig(frameworks=("gone",)))
    fail("unknown framework 'nope'; choose from: gone, broken, fixedbroken, gpu, extra",
         sweep.make_plan, SweepConfig(frameworks=("nope",)))  # fmt: skip


def test_a_framework_with_its_own_interpreter_is_not_checked_here(register) -> None:
    """--python NAME=...: a registered framework missing here is still planned; its worker checks it."""
    gone = Stub("gone", module="xferbench_not_a_module", isolated=True)
    register(gone)
    plan = sweep.make_plan(SweepConfig(frameworks=("gone",), pythons={"gone": "/other/python"}))
    assert labels(plan) == [("gone/a/copy@cpu", None)] and FakeWorker.made[0].python == "/other/python"
    fail("unknown framework 'nope'; choose from: gone", sweep.make_plan, SweepConfig(frameworks=("nope",), pythons={"nope": "/p"}))


def test_absent_frameworks_are_named_with_their_extra_and_cuda_only_ones_only_for_cuda(register) -> None:
    """A default sweep names each absent framework; a CUDA-only one only when the sweep goes to CUDA."""
    register(Stub("tf", module="xferbench_no_tf", extra="tf"), Stub("cupy", module="xferbench_no_cupy", extra="cupy", cuda_only=True),
             Stub("hidden", module="xferbench_no_hidden", default_sweep=False), Stub("here"))  # fmt: skip
    tf = "TF is not installed: pip install 'xferbench[tf]'"
    assert sweep.absent_frameworks(SweepConfig(), "cpu") == [tf]
    assert sweep.absent_frameworks(SweepConfig(), "mps+cpu") == [tf]
    assert sweep.absent_frameworks(SweepConfig(), "cuda:0") == [tf, "CUPY is not installed: pip install 'xferbench[cupy]'"]
    assert sweep.absent_frameworks(SweepConfig(frameworks=("here",)), "cuda:0") == []


def test_nothing_to_run_says_why_each_series_cannot(register) -> None:
    """Every series skipped: one line naming each; none planned: so it says."""
    register(Stub("gpu", isolated=True, devices=("cpu",), ops=("seed",)), Stub("other", ops=("seed",)))
    fail("nothing can run here: gpu/a/copy@cpu: the copy op is not defined for gpu; it supports seed;"
         " other/a/copy@cpu: the copy op is not defined for other; it supports seed",
         sweep.make_plan, SweepConfig(frameworks=("gpu", "other")))  # fmt: skip
    assert FakeWorker.made[0].closed == 1
    register()
    fail("nothing can run here: no series selected", sweep.make_plan, SweepConfig())
    fail("--concurrent: each path here runs on one device only (no device), so there is nothing to run concurrently;"
         " give --device all (or several --device) on a machine with several GPUs, --sim-devices for the simulated"
         " link, or drop --concurrent", sweep.make_plan, SweepConfig(concurrent=True))  # fmt: skip


def test_no_bind_needs_a_cuda_series(register, monkeypatch) -> None:
    """--no-bind where no runnable series is on CUDA: nothing to bind, and it says where the sweep runs."""
    gpu = Stub("gpu", isolated=True, devices=("cpu", "cuda:0", "mps"), ops=("copy", "seed"),
               skip=lambda key: "no seeds on cuda" if key.op == "seed" and key.device == "cuda:0" else None)  # fmt: skip
    register(gpu, HOST)
    fail("--no-bind: nothing to bind here: workers are bound to a GPU's CPUs and NUMA node only for CUDA devices, and"
         " this sweep runs on cpu; drop --no-bind", sweep.make_plan, SweepConfig(frameworks=("hostcopy",), bind=False))  # fmt: skip
    monkeypatch.setattr(sys, "platform", "darwin")
    fail("--no-bind: nothing to bind here: workers are bound to a GPU's CPUs and NUMA node only for CUDA devices, and"
         " this sweep runs on cpu+mps; drop --no-bind",
         sweep.make_plan, SweepConfig(frameworks=("gpu",), device="cpu,mps", ops=("seed",), bind=False))  # fmt: skip
    fail("--no-bind: nothing to bind here: workers are bound to a GPU's CPUs and NUMA node only for CUDA devices, and"
         " this sweep runs on cpu+cuda:0; drop --no-bind",
         sweep.make_plan, SweepConfig(frameworks=("gpu",), device="cpu,cuda", ops=("seed",), bind=False))  # fmt: skip
    assert sweep.make_plan(SweepConfig(frameworks=("gpu",), bind=False)).target == "cuda:0"


def test_the_plan_target_and_backends() -> None:
    """target: the devices asked for while a movable path runs, else the fixed paths' own; backends: each once."""
    key = SeriesKey("hostcopy", "a", "copy", "cpu", (1,))
    plan = Plan(SweepConfig(), "cuda:0", [PlannedSeries(key, HOST), PlannedSeries(key, HOST),
                                          PlannedSeries(SeriesKey("gpu", "a", "copy", "cuda:0", (1,)), GPU, "no")])  # fmt: skip
    assert plan.target == "cpu" and plan.backends == [HOST, GPU] and len(plan.runnable) == 2
    plan.series[2].skip = None
    assert plan.target == "cuda:0"
    plan.devices = ["cuda:0", "cuda:1"]
    assert plan.target == "cuda:0+cuda:1"


# ---------------------------------------------------------------- host memory


def test_host_memory_is_checked_at_the_largest_batch_of_each_runnable_series(register, monkeypatch) -> None:
    """A batch that needs more host memory than there is stops the plan, naming the largest that fits."""
    big = Stub("big", isolated=True, ops=("copy", "seed"), per_item=GB)
    register(big)
    config = dict(frameworks=("big",), batch_sizes=(1, 2, 4), ops=("copy",))
    monkeypatch.setattr(sweep, "available_host_memory", lambda: (4 * GB, "available"))
    assert len(sweep.make_plan(SweepConfig(**config)).series) == 1  # needs 4.0 GB of 4.0: fits
    monkeypatch.setattr(sweep, "available_host_memory", lambda: (int(2.5 * GB), "free"))
    fail("batch 4 of big/a/copy@cpu needs 4.0 GB of host memory but 2.5 GB is free; the largest that fits is 2",
         sweep.make_plan, SweepConfig(**config))  # fmt: skip
    assert FakeWorker.made[-1].closed == 1
    monkeypatch.setattr(sweep, "available_host_memory", lambda: (int(0.5 * GB), "free"))
    fail("batch 4 of big/a/copy@cpu needs 4.0 GB of host memory but 0.5 GB is free; lower --batch-sizes or --shape",
         sweep.make_plan, SweepConfig(**config))  # fmt: skip
    plan = Plan(SweepConfig(batch_sizes=(4, 1)), "cpu", [PlannedSeries(SeriesKey("big", "a", "copy", "cpu", (1,)), big, "skipped"),
                                                         PlannedSeries(SeriesKey("small", "a", "copy", "cpu", (1,)), Stub("small", per_item=1))])  # fmt: skip
    sweep._check_host_memory(plan)  # the big one is skipped: only the small one is sized


def test_a_dataloaders_memory_check_counts_the_workers_the_sweep_starts(monkeypatch) -> None:
    """--loader-workers 16 at batch 512 of 1024x1024x3 holds 32 batches of 1.6 GB ahead: 58.0 GB, refused
    with 24 GB available, though the default 4 workers would fit; the refusal says which worker count fits."""
    from xferbench.measuring.backends import pytorch

    monkeypatch.setattr(pytorch, "DEFAULT_LOADER_WORKERS", 4)
    monkeypatch.setattr(pytorch, "sys", types.SimpleNamespace(platform="linux"))  # workers start by fork: no copy of the items each
    monkeypatch.setattr(sweep, "available_host_memory", lambda: (24 * GB, "available"))
    backend = pytorch.TorchBackend()

    def check(mode: str, workers: int, batch_sizes: tuple[int, ...] = (128, 256, 512)) -> str | None:
        config = SweepConfig(frameworks=("torch",), pipeline=True, loader_workers=workers, batch_sizes=batch_sizes, shape=(1024, 1024, 3))
        plan = Plan(config, "cuda:0", [PlannedSeries(SeriesKey("torch", mode, "copy", "cuda:0", config.shape), backend)])
        try:
            sweep._check_host_memory(plan)
        except XferbenchError as error:
            return str(error)
        return None

    assert check("loader_workers", 4) is None and check("loader_workers", 5) is None  # 19.4 and 22.6 GB
    assert check("loader_workers", 16) == (
        "batch 512 of torch/loader_workers/copy@cuda:0 needs 58.0 GB of host memory with --loader-workers 16 (each worker"
        " holds 2 batches ahead) but 24.0 GB is available; lower --loader-workers to 5, or --batch-sizes (the largest"
        " that fits is 128)")  # fmt: skip
    assert check("loader_workers", 16, (512,)).endswith("is available; lower --loader-workers to 5, or --batch-sizes")
    pinned = check("loader_pin_workers", 6)  # each batch again in pinned memory: 6 workers are 48.4 GB, 2 are 22.6
    assert pinned is not None and pinned.endswith("lower --loader-workers to 2, or --batch-sizes (the largest that fits is 128)")
    # without workers the count changes nothing, and the message names none
    assert check("loader", 16, (2048,)) == (
        "batch 2048 of torch/loader/copy@cuda:0 needs 32.2 GB of host memory but 24.0 GB is available; lower --batch-sizes or --shape")
    assert check("loader_workers", 16, (4096,)).endswith("(each worker holds 2 batches ahead) but 24.0 GB is available;"
                                                          " lower --batch-sizes or --shape")  # fmt: skip


def test_host_memory_messages_round_to_a_tenth_of_a_gigabyte(monkeypatch) -> None:
    """Sizes in GB (10**9 bytes) to one place; the largest batch that fits is the last one that fits exactly or less."""
    key = SeriesKey("big", "a", "copy", "cpu", (1,))

    def sized(per_item: int, batch_sizes: tuple[int, ...], available: int) -> str:
        monkeypatch.setattr(sweep, "available_host_memory", lambda: (available, "free"))
        plan = Plan(SweepConfig(batch_sizes=batch_sizes), "cpu", [PlannedSeries(key, Stub("big", per_item=per_item))])
        with pytest.raises(XferbenchError) as raised:
            sweep._check_host_memory(plan)
        return str(raised.value)

    assert sized(1_250_000_000, (1, 2, 3), 2_750_000_000) == (
        "batch 3 of big/a/copy@cpu needs 3.8 GB of host memory but 2.8 GB is free; the largest that fits is 2")
    assert sized(GB, (1, 2, 3, 8), 3 * GB) == (
        "batch 8 of big/a/copy@cpu needs 8.0 GB of host memory but 3.0 GB is free; the largest that fits is 3")


# ---------------------------------------------------------------- the result


def test_a_new_result_keeps_the_config_as_on_disk_and_when(register) -> None:
    """The config as JSON would hold it, with the device asked for, the one resolved and argv."""
    register(GPU)
    plan = Plan(SweepConfig(device="auto", batch_sizes=(1, 2), shape=(3,)), "cuda:0", [])
    result = sweep.new_result(plan, {"host": "h"}, ("xferbench", "sweep"))
    assert result.environment == {"host": "h"} and result.series == [] and result.xferbench_version == __version__
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", result.created), result.created
    config = result.config
    assert config["device_requested"] == "auto" and config["device"] == "cuda:0" and config["argv"] == ["xferbench", "sweep"]
    assert config["batch_sizes"] == [1, 2] and config["shape"] == [3] and config["timing"]["min_samples"] == TimingConfig().min_samples
    assert config["ops"] == ["copy"] and config["sim"]["devices"] == 1 and config["bind"] is True
    assert sweep.new_result(plan, {}).config["argv"] == []


# ---------------------------------------------------------------- running a plan


def solo_plan(*planned: PlannedSeries, runners: dict[str, Any], **options: Any) -> Plan:
    return Plan(SweepConfig(batch_sizes=(1, 2, 4), timing=FAST, **options), "cpu", list(planned), runners)


def test_run_plan_saves_before_after_each_point_and_at_the_end() -> None:
    """Each series is saved when it starts, after each point and when done; the file ends complete."""
    a, b = Stub("a", fixed="cpu"), Stub("b", fixed="cpu")
    ka, kb = SeriesKey("a", "a", "copy", "cpu", (1,)), SeriesKey("b", "a", "copy", "cpu", (1,))
    runners = {"a": VirtualRunner(a), "b": VirtualRunner(b)}
    plan = solo_plan(PlannedSeries(ka, a), PlannedSeries(kb, b, "b cannot here"), runners=runners)
    saves, started, points = [], [], []
    result = sweep.run_plan(plan, Result({}, {}, "now"),
                            lambda r: saves.append((r.status, [(s.label(), s.status, len(s.points)) for s in r.series])),
                            on_point=lambda s, p: points.append((s.label(), p.batch_size)),
                            on_start=lambda s, b: started.append((s.label(), b)))  # fmt: skip
    la, lb = ka.label(), kb.label()
    assert saves == [("running", [(la, "ok", 0)]), ("running", [(la, "ok", 1)]), ("running", [(la, "ok", 2)]),
                     ("running", [(la, "ok", 3)]), ("running", [(la, "ok", 3)]),
                     ("running", [(la, "ok", 3), (lb, "skipped", 0)]), ("running", [(la, "ok", 3), (lb, "skipped", 0)]),
                     ("complete", [(la, "ok", 3), (lb, "skipped", 0)])]  # fmt: skip
    assert started == [(la, 1), (la, 2), (la, 4)] and points == started
    assert result.status == "complete" and result.series[1].reason == "b cannot here"
    assert result.series[0].summary.peak_batch_size == 4 and result.series[0].device_name == "virtual"
    assert runners["a"].calls == [(la, (1, 2, 4), {}, FAST, None)] and runners["b"].calls == []
    quiet = solo_plan(PlannedSeries(ka, a), runners={"a": VirtualRunner(a)})
    assert sweep.run_plan(quiet, Result({}, {}, "now"), lambda r: None).series[0].summary.peak_batch_size == 4


def test_an_interrupt_marks_the_file_interrupted_and_saves_it() -> None:
    """Ctrl-C mid-series: the points so far stay, the result says interrupted and is saved, and the interrupt goes on."""
    a = Stub("a", fixed="cpu")
    key = SeriesKey("a", "a", "copy", "cpu", (1,))
    plan = solo_plan(PlannedSeries(key, a), runners={"a": VirtualRunner(a, {4: KeyboardInterrupt()})})
    saves: list[tuple[str, int]] = []
    result = Result({}, {}, "now")
    with pytest.raises(KeyboardInterrupt):
        sweep.run_plan(plan, result, lambda r: saves.append((r.status, len(r.series[0].points))))
    assert saves == [("running", 0), ("running", 1), ("running", 2), ("interrupted", 2)] and result.status == "interrupted"
    plan = solo_plan(PlannedSeries(key, a), runners={"a": VirtualRunner(a, {2: ValueError("bug")})})
    with pytest.raises(ValueError):
        sweep.run_plan(plan, Result({}, {}, "now"), lambda r: None)


def test_a_dead_worker_fails_its_series_and_the_others_go_on() -> None:
    """The batch being measured is an error, the rest skipped, the series failed with the reason; the next series runs."""
    a, b = Stub("a", fixed="cpu"), Stub("b", fixed="cpu")
    ka, kb = SeriesKey("a", "a", "copy", "cpu", (1,)), SeriesKey("b", "a", "copy", "cpu", (1,))
    runners = {"a": VirtualRunner(a, {2: WorkerDied("worker a was killed (SIGKILL)")}), "b": VirtualRunner(b, {1: WorkerDied("gone")}, before=False)}
    plan = solo_plan(PlannedSeries(ka, a), PlannedSeries(kb, b), runners=runners)
    result = sweep.run_plan(plan, Result({}, {}, "now"), lambda r: None)
    died, early = result.series
    assert result.status == "complete"
    assert (died.status, died.reason) == ("failed", "worker a was killed (SIGKILL)")
    assert [(p.batch_size, p.status, p.error, p.bytes) for p in died.points] == [
        (1, "ok", None, 1000), (2, "error", "the worker died while measuring this batch", 2),
        (4, "skipped", "not measured: the worker died", 4)]  # fmt: skip
    assert died.summary.peak_batch_size == 1
    assert (early.status, early.reason) == ("failed", "gone")
    assert [(p.batch_size, p.status) for p in early.points] == [(1, "skipped"), (2, "skipped"), (4, "skipped")]


def test_a_concurrent_group_in_the_plan_runs_at_once(monkeypatch) -> None:
    """The members of a run at once, side by side in the plan, are measured together, sampled, bound and saved per point."""
    FakeSampler.made = []
    monkeypatch.setattr(sweep, "LinkSampler", FakeSampler)
    monkeypatch.setattr(sweep, "plan_binding", lambda environment, device: (f"{environment['at']} {device}", "bound"))
    gpu = Stub("gpu", devices=("cuda:0", "cuda:1"))
    alone = SeriesKey("gpu", "a", "copy", "cuda:0", (1,))
    keys = [SeriesKey("gpu", "a", "copy", d, (1,), concurrent=2) for d in ("cuda:0", "cuda:1")]
    plan = Plan(SweepConfig(batch_sizes=(1, 2), timing=FAST), "cuda:0",
                [PlannedSeries(alone, gpu), *(PlannedSeries(k, gpu) for k in keys)], {"gpu": VirtualRunner(gpu)})  # fmt: skip
    saves, started, points = [], [], []
    result = sweep.run_plan(plan, Result({"at": "node"}, {}, "now"), lambda r: saves.append(len(r.series)),
                            on_point=lambda s, p: points.append((s.label(), p.batch_size)),
                            on_start=lambda s, b: started.append((s.label(), b)), link_interval_s=0.25)  # fmt: skip
    assert [s.label() for s in result.series] == [alone.label(), *(k.label() for k in keys)]
    assert [(s.status, [p.overlap for p in s.points]) for s in result.series] == [("ok", [None, None]), ("ok", [0.3333] * 2),
                                                                                 ("ok", [0.3333] * 2)]  # fmt: skip
    assert saves == [1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3] and sorted(started) == sorted(points) and len(points) == 6
    assert [w.binding for w in FakeWorker.made] == ["node cuda:0", "node cuda:1"] and plan.runners["gpu"].calls[0][4] == "node cuda:0"
    assert [s.link for s in result.series] == [{"sampled": d, "started": True} for d in ("cuda:0", "cuda:0", "cuda:1")]
    assert [m[2] for m in FakeSampler.made] == [0.25] * 3


def test_a_concurrent_run_with_one_runnable_member_is_not_run() -> None:
    """A run at once that only one device can run: that one is skipped, saying so; nothing is measured."""
    gpu = Stub("gpu", devices=("cuda:0", "cuda:1"))
    keys = [SeriesKey("gpu", "a", "copy", d, (1,), concurrent=2) for d in ("cuda:0", "cuda:1")]
    runners = {"gpu": VirtualRunner(gpu)}
    plan = solo_plan(PlannedSeries(keys[0], gpu, "no cuda:0"), PlannedSeries(keys[1], gpu), runners=runners)
    saves: list[list[str]] = []
    result = sweep.run_plan(plan, Result({}, {}, "now"), lambda r: saves.append([s.status for s in r.series]))
    assert [(s.status, s.reason) for s in result.series] == [
        ("skipped", "no cuda:0"), ("skipped", "not run at once: no other device of the run can run gpu/a/copy/2-at-once@cuda:1")]
    assert saves == [["skipped", "skipped"]] * 3 and runners["gpu"].calls == [] and FakeWorker.made == []


# ---------------------------------------------------------------- binding and link sampling


class FakeSampler:
    made: list[tuple[dict, str, float]] = []

    def __init__(self, device: str) -> None:
        self.device, self.started = device, False

    @classmethod
    def for_device(cls, environment: dict, device: str, interval_s: float) -> FakeSampler:
        cls.made.append((environment, device, interval_s))
        return cls(device)

    def start(self) -> None:
        self.started = True

    def stop(self) -> dict[str, Any]:
        return {"sampled": self.device, "started": self.started}


@pytest.mark.parametrize("interval, bind, binding, link, numa, passed", [
    (0.5, True, ("B", "bound"), {"sampled": "cuda:0", "started": True}, {}, "B"),
    (None, True, (None, "no NUMA node"), {"reason": "not sampled: --no-link-sampling"}, {"reason": "no NUMA node"}, None),
    (0.5, False, ("B", "bound"), {"sampled": "cuda:0", "started": True}, {"reason": "not bound: --no-bind"}, None),
    (0.5, True, (None, ""), {"sampled": "cuda:0", "started": True}, {}, None),
])  # fmt: skip
def test_a_cuda_series_is_sampled_and_bound_as_told(monkeypatch, interval, bind, binding, link, numa, passed) -> None:
    """A CUDA series: its link sampled unless --no-link-sampling, its worker bound unless --no-bind, why not kept."""
    FakeSampler.made = []
    asked: list[tuple[dict, str]] = []
    monkeypatch.setattr(sweep, "LinkSampler", FakeSampler)
    monkeypatch.setattr(sweep, "plan_binding", lambda environment, device: asked.append((environment, device)) or binding)
    gpu = Stub("gpu", devices=("cuda:0",))
    key = SeriesKey("gpu", "a", "copy", "cuda:0", (1,))
    run = VirtualRunner(gpu)
    plan = solo_plan(PlannedSeries(key, gpu), runners={"gpu": run}, bind=bind)
    environment = {"gpus": ["x"]}
    result = sweep.run_plan(plan, Result(environment, {}, "now"), lambda r: None, link_interval_s=interval)
    (series,) = result.series
    assert series.link == link and series.numa == numa and run.calls[0][4] == passed
    assert FakeSampler.made == ([(environment, "cuda:0", 0.5)] if interval else [])
    assert asked == ([(environment, "cuda:0")] if bind else [])


def test_host_series_are_neither_sampled_nor_bound(monkeypatch) -> None:
    """Off CUDA, or on a fixed-device path: no sampler, no binding, no record."""
    monkeypatch.setattr(sweep, "LinkSampler", None)
    monkeypatch.setattr(sweep, "plan_binding", None)
    plan = solo_plan(runners={})
    for key, backend in [(SeriesKey("p", "a", "copy", "cpu", (1,)), Stub("p")),
                         (SeriesKey("h", "a", "copy", "cuda:0", (1,)), Stub("h", fixed="cpu"))]:  # fmt: skip
        series = Series.of(key)
        assert sweep._binding(plan, Result({}, {}, "now"), PlannedSeries(key, backend)) == (None, None)
        if backend.fixed_device:
            continue
        assert sweep._placement(plan, Result({}, {}, "now"), PlannedSeries(key, backend), series, 0.1) == (None, None)
        assert series.link == {} and series.numa == {}


# ---------------------------------------------------------------- runs at once


def windows(*spans: list[float] | None) -> list[Point]:
    return [Point(1, 1, window_s=span) for span in spans]


def test_overlap_is_the_share_of_the_run_every_device_sampled() -> None:
    """overlap: the common window over the whole span, to 4 places; None without every window or with no span."""
    assert sweep._overlap(windows([0, 2], [1, 3])) == 0.3333
    assert sweep._overlap(windows([0, 10], [2, 3], [1, 7])) == 0.1
    assert sweep._overlap(windows([1, 10], [0, 3])) == 0.2
    assert sweep._overlap(windows([0, 1], [2, 3])) == 0.0
    assert sweep._overlap(windows([0, 1], None)) is None
    assert sweep._overlap(windows([0, 1], [])) is None
    assert sweep._overlap([]) is None
    assert sweep._overlap(windows([1, 1], [1, 1])) is None
    assert sweep._overlap(windows([2, 4])) == 1.0
    assert sweep._overlap(windows([0, 0.5], [0.25, 0.5])) == 0.5


def together(monkeypatch: pytest.MonkeyPatch, devices: tuple[str, ...], **options: Any):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sweep, "plan_binding", lambda environment, device: (f"bind {device}", "bound"))
    gpu = Stub("gpu", devices=devices)
    members = [(PlannedSeries(SeriesKey("gpu", "a", "copy", d, (1,), concurrent=len(devices)), gpu),
                Series.of(SeriesKey("gpu", "a", "copy", d, (1,), concurrent=len(devices)))) for d in devices]  # fmt: skip
    plan = Plan(SweepConfig(batch_sizes=(1, 2), timing=FAST, pythons={"gpu": "/py/gpu"}, **options), devices[0],
                [p for p, _ in members])  # fmt: skip
    started, points = [], []
    sweep.run_together(plan, Result({}, {}, "now"), members, lambda s, b: started.append((s.device, b)),
                       lambda s, p: points.append((s.device, p.batch_size)), None)  # fmt: skip
    return [s for _, s in members], sorted(started), sorted(points)


def test_a_run_at_once_meets_at_each_point_and_records_the_overlap(monkeypatch) -> None:
    """A worker per device, bound to its GPU, with its own interpreter; a barrier for those that started; all closed."""
    FakeWorker.script = {("hello", 1): "cuda:1 is busy"}
    (first, busy, third), started, points = together(monkeypatch, ("cuda:0", "cuda:1", "cuda:2"))
    assert (busy.status, busy.reason, busy.points) == ("failed", "its worker did not start: cuda:1 is busy", [])
    assert [(p.batch_size, p.overlap) for p in first.points] == [(1, 0.6), (2, 0.6)]
    assert [p.overlap for p in third.points] == [0.6, 0.6] and first.status == third.status == "ok"
    assert started == points == [("cuda:0", 1), ("cuda:0", 2), ("cuda:2", 1), ("cuda:2", 2)]
    assert [w.backend.name for w in FakeWorker.made] == ["gpu"] * 3
    assert [(w.python, w.binding, w.closed) for w in FakeWorker.made] == [
        ("/py/gpu", "bind cuda:0", 1), ("/py/gpu", "bind cuda:1", 1), ("/py/gpu", "bind cuda:2", 1)]
    worker = FakeWorker.made[0]
    ((key, sizes, params, timing, binding, barrier),) = worker.calls
    assert (key.device, sizes, params, timing, binding) == ("cuda:0", (1, 2), {}, FAST, "bind cuda:0")
    assert isinstance(barrier, StartLine) and barrier.barrier.parties == 2
    assert all(at is not None for at in worker.meets + FakeWorker.made[2].meets) and len(worker.meets) == 2


def test_a_run_at_once_with_one_worker_started_is_not_run(monkeypatch) -> None:
    """Only one worker started: it is skipped, saying the others did not start; every worker is closed."""
    FakeWorker.script = {("ctor", 0): True}
    (gone, left), started, _ = together(monkeypatch, ("cuda:0", "cuda:1"), bind=False)
    assert (gone.status, gone.reason) == ("failed", "its worker did not start: could not spawn")
    assert (left.status, left.reason) == ("skipped", "not run at once: the other devices' workers did not start")
    assert started == [] and [(w.binding, w.closed, w.calls) for w in FakeWorker.made] == [(None, 0, []), (None, 1, [])]


def test_a_worker_dying_in_a_run_at_once_breaks_the_barrier_for_the_others(monkeypatch) -> None:
    """One worker dies: its series fails as a solo one does, the others go on at once without it."""
    FakeWorker.script = {("die", "cuda:0"): 1}
    (died, alive), started, points = together(monkeypatch, ("cuda:0", "cuda:1"))
    assert (died.status, died.reason) == ("failed", "cuda:0 died")
    assert [(p.status, p.error) for p in died.points] == [("error", "the worker died while measuring this batch"),
                                                          ("skipped", "not measured: the worker died")]
    assert [(p.status, p.overlap) for p in alive.points] == [("ok", None), ("ok", None)] and alive.status == "ok"
    assert FakeWorker.made[1].meets == [None, None]
    assert started == [("cuda:0", 1), ("cuda:1", 1), ("cuda:1", 2)] and points == [("cuda:1", 1), ("cuda:1", 2)]


class StuckThread:
    """A thread that never ends, so the wait for it is where Ctrl-C lands."""

    made: list[StuckThread] = []

    def __init__(self, target: Any, daemon: bool, args: tuple) -> None:
        self.args, self.joins, self.started, self.daemon = args, [], False, daemon
        StuckThread.made.append(self)

    def start(self) -> None:
        self.started = True

    def is_alive(self) -> bool:
        return True

    def join(self, timeout: float) -> None:
        self.joins.append(timeout)
        if len(self.joins) == 2 and not self.args[-1].is_set():
            raise KeyboardInterrupt


def test_ctrl_c_during_a_run_at_once_stops_every_worker(monkeypatch) -> None:
    """Ctrl-C while waiting: the sweep is stopping, the barrier broken, every worker closed, and the interrupt goes on."""
    StuckThread.made = []
    monkeypatch.setattr(sweep, "threading", types.SimpleNamespace(Lock=threading.Lock, Event=threading.Event, Thread=StuckThread))
    with pytest.raises(KeyboardInterrupt):
        together(monkeypatch, ("cuda:0", "cuda:1"))
    first, second = StuckThread.made
    assert first.daemon is True and second.daemon is True  # a wedged worker's thread never holds the exit
    assert first.started and second.started and first.args[-1].is_set() and first.args[-2].barrier.broken
    assert first.joins == [0.2, 0.2, sweep.DEATH_WAIT_S] and second.joins == [sweep.DEATH_WAIT_S]
    assert [w.closed for w in FakeWorker.made] == [2, 2]


def test_each_series_gets_its_paths_params_with_how_many_run_at_once() -> None:
    """A series is measured with its framework's params; the simulated link's say how many devices share its host side."""
    config = SweepConfig(batch_sizes=(1,), timing=FAST, sim=SimLink(devices=3))
    key = SeriesKey("sim", "link", "copy", "sim:0", (1,), concurrent=3)
    run = VirtualRunner(SIM)
    sweep._measure(Plan(config, "cpu", []), Result({}, {}, "now"), PlannedSeries(key, SIM), Series.of(key),
                   lambda s, b: None, lambda s, p: None, None, run)  # fmt: skip
    ((label, sizes, params, timing, binding),) = run.calls
    assert params == config.params("sim", 3) and params["at_once"] == 3 and params["devices"] == 3
    assert (label, sizes, timing, binding) == (key.label(), (1,), FAST, None)


def test_a_worker_stopped_by_the_sweep_records_no_death() -> None:
    """A concurrent member whose worker the stopping sweep killed keeps its points, and is not failed."""
    gpu = Stub("gpu")
    key = SeriesKey("gpu", "a", "copy", "cpu", (1,), concurrent=2)
    plan = solo_plan(PlannedSeries(key, gpu), runners={})
    series, stopping, line = Series.of(key), threading.Event(), StartLine(1)
    FakeWorker.script = {("die", "cpu"): 2}
    worker = FakeWorker(gpu)
    stopping.set()
    sweep._measure(plan, Result({}, {}, "now"), plan.series[0], series, lambda s, b: None, lambda s, p: None, None,
                   worker, line, stopping)  # fmt: skip
    assert series.status == "ok" and len(series.points) == 1 and line.barrier.broken
    assert worker.calls[0][2] == {} and worker.calls[0][5] is line


def test_a_ctrl_c_while_the_plan_closes_still_closes_every_runner_then_goes_on() -> None:
    """A second Ctrl-C landing while one worker is stopped must not leave the next framework's worker behind."""
    closed: list[str] = []

    class Closing:
        def __init__(self, name: str, pressed: bool = False) -> None:
            self.name, self.pressed = name, pressed

        def close(self) -> None:
            closed.append(self.name)
            if self.pressed:
                raise KeyboardInterrupt

    plan = Plan(SweepConfig(frameworks=("torch", "tf")), "cpu", [], {"torch": Closing("torch", pressed=True), "tf": Closing("tf")})  # type: ignore[dict-item]
    with pytest.raises(KeyboardInterrupt):
        plan.close()
    assert closed == ["torch", "tf"]
