"""The backend layer's rules one by one, without a GPU or a framework import: the registry (which frameworks
exist, how a framework that is not installed is reported with the extra that installs it, the default sweep,
the options a path needs, --mode's help, lookups and their errors, every framework/mode/device row of `paths`),
the Backend and Transfer protocol and its shared defaults and messages, the simulated link (its cost model to
the last term, its checks word for word, its devices, jitter and virtual clock), the host-to-host copy, and the
input-pipeline machinery (dataset arithmetic, the batch check, kernel timing and --overlap on a virtual clock).

Installed or not is simulated as importlib.util.find_spec answers: a module spec where the module exists, None
where it does not, and an error for a name that is no module name at all."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import inspect
import math
import os
import time
from collections.abc import Callable
from dataclasses import FrozenInstanceError, asdict, fields
from typing import Any

import numpy as np
import pytest

from xferbench.core.errors import VerificationError, XferbenchError
from xferbench.core.spec import BIDIR, D2H, DIRECTIONS, H2D, HOST_TO_HOST, PER_CALL, SIMULATED, STREAMED, SeriesKey, Spec
from xferbench.core.timing import STREAM_PROBE_COPIES, STREAM_WARM_COPIES, TimingConfig
from xferbench.measuring import backends
from xferbench.measuring.backends import (
    BACKENDS,
    OPS,
    PathAvailability,
    default_backends,
    get_backend,
    mode_defaults,
    path_availability,
    sweep_flags,
)
from xferbench.measuring.backends import host, pipeline
from xferbench.measuring.backends.base import Backend, SeriesInfo, Transfer
from xferbench.measuring.backends.cuda import CudaBackend
from xferbench.measuring.backends.cupy import CupyBackend
from xferbench.measuring.backends.hip import HipBackend
from xferbench.measuring.backends.host import HostBackend, HostCopy, StagedCopy
from xferbench.measuring.backends.jax import JaxBackend
from xferbench.measuring.backends.pipeline import (
    PipelineTransfer,
    batch_indices,
    cycled_indices,
    dataset_items,
    item_count,
    kernel_side,
    repeats_for,
)
from xferbench.measuring.backends.pytorch import TorchBackend
from xferbench.measuring.backends.sim import MAX_SIM_DEVICES, SimBackend, SimLink, SimTransfer, VirtualClock
from xferbench.measuring.backends.tensorflow import TFBackend
from xferbench.measuring.buffers import fill_pattern, make_source, read_host

SMALL = (4, 4, 3)  # 48 bytes an item
SIM_SHAPE = (256, 256, 3)  # 196,608 bytes an item


def installed(monkeypatch: pytest.MonkeyPatch, absent: tuple[str, ...] = ()) -> list[str]:
    """find_spec as Python answers it, with the modules in `absent` not installed and every other module name
    installed (a spec of its own where this machine lacks it): the names asked for, in order."""
    real = importlib.util.find_spec
    asked: list[str] = []

    def find_spec(name: str, package: str | None = None) -> importlib.machinery.ModuleSpec | None:
        asked.append(name)
        if name in absent:
            return None
        return real(name, package) or importlib.machinery.ModuleSpec(name, None)  # real(None) raises, as Python does

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    return asked


class Stand(Backend):
    """A framework with given attributes, which imports nothing: its skip reasons are recorded and scripted."""

    def __init__(self, name: str, modes: tuple[str, ...] = ("a",), default: tuple[str, ...] | None = None,
                 skips: dict[str, str] | None = None, **attributes: Any) -> None:  # fmt: skip
        self.name, self.modes = name, modes
        self.default_modes = modes if default is None else default
        self.skips, self.asked = skips or {}, []
        for attribute, value in attributes.items():
            setattr(self, attribute, value)

    def skip_reason(self, key: SeriesKey) -> str | None:
        self.asked.append(key)
        return self.skips.get(f"{key.mode}@{key.device}")

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        return SeriesInfo("stand", HOST_TO_HOST, "none", "none")

    def host_bytes(self, spec: Spec) -> int:
        return 0

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        raise AssertionError("a registry rule prepared a transfer")


class Bare(Backend):
    """A backend that sets nothing but what the protocol requires: every other attribute is the default."""

    name = "bare"

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        return SeriesInfo("bare", HOST_TO_HOST, "none", "none")

    def host_bytes(self, spec: Spec) -> int:
        return 0

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return Recorder()


class Recorder(Transfer):
    """A transfer that records what was asked of it."""

    def __init__(self) -> None:
        self.log: list[Any] = []

    def __call__(self) -> None:
        self.log.append("call")

    def streamed(self, copies: int) -> float:
        self.log.append(("streamed", copies))
        return 0.0

    def verify(self) -> None:
        self.log.append("verify")


def registry(monkeypatch: pytest.MonkeyPatch, *stands: Backend) -> None:
    """Replace the registry with these frameworks, in this order."""
    monkeypatch.setattr(backends, "BACKENDS", {b.name: b for b in stands})


def key(framework: str = "x", mode: str = "m", device: str = "cpu", **kwargs: Any) -> SeriesKey:
    return SeriesKey(framework, mode, "copy", device, SMALL, **kwargs)


# --- the registry -------------------------------------------------------------------------------------------


def test_the_registry_holds_each_framework_once_by_its_name_raw_reference_first() -> None:
    """The registry's frameworks, their classes and their order (the raw reference before every curve read against it)."""
    assert list(BACKENDS) == ["cuda", "hip", "torch", "tf", "jax", "cupy", "host", "sim"]
    classes = [CudaBackend, HipBackend, TorchBackend, TFBackend, JaxBackend, CupyBackend, HostBackend, SimBackend]
    assert [type(b) for b in BACKENDS.values()] == classes
    assert all(name == b.name for name, b in BACKENDS.items())
    assert OPS == ("copy", "seed") and backends.OPS is OPS


def test_the_package_exports_exactly_its_public_names() -> None:
    """__all__ names each public name once, and each resolves."""
    assert backends.__all__ == ["BACKENDS", "OPS", "Backend", "PathAvailability", "SeriesInfo", "SimLink", "Transfer",
                                "default_backends", "get_backend", "mode_defaults", "path_availability", "sweep_flags"]  # fmt: skip
    assert all(hasattr(backends, name) for name in backends.__all__)


@pytest.mark.parametrize("name, said", [
    ("torch", "PyTorch is not installed: pip install 'xferbench[torch]'"),
    ("tf", "TensorFlow is not installed: pip install 'xferbench[tf]'"),
    ("jax", "JAX is not installed: pip install 'xferbench[jax]'"),
])  # fmt: skip  (cuda and cupy say more, in cupy.py's own words)
def test_a_framework_not_installed_names_the_extra_that_installs_it(monkeypatch: pytest.MonkeyPatch, name: str, said: str) -> None:
    """missing() names the framework and its pip extra, where find_spec finds no module; None where it does."""
    backend = BACKENDS[name]
    asked = installed(monkeypatch, absent=(str(backend.module),))
    assert backend.missing() == said
    assert asked == [backend.module]
    installed(monkeypatch)
    assert backend.missing() is None


def test_host_and_sim_need_nothing_installed_and_never_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend with no module is always there, without a find_spec look-up."""
    asked = installed(monkeypatch, absent=("numpy",))
    assert BACKENDS["host"].missing() is None and BACKENDS["sim"].missing() is None and Bare().missing() is None
    assert asked == []


def test_the_default_sweep_is_every_installed_framework_that_runs_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """default_backends: in_default_sweep and installed, both; sim never, host always."""
    installed(monkeypatch)
    assert [b.name for b in default_backends()] == ["cuda", "torch", "tf", "jax", "cupy", "host"]
    assert all(b is BACKENDS[b.name] for b in default_backends())
    installed(monkeypatch, absent=("cupy",))
    assert [b.name for b in default_backends()] == ["torch", "tf", "jax", "host"]
    installed(monkeypatch, absent=("cupy", "torch", "tensorflow", "jax"))
    assert [b.name for b in default_backends()] == ["host"]


def test_the_default_sweep_leaves_out_a_framework_that_runs_only_when_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed framework out of the default sweep is left out, and so is a default one not installed."""
    installed(monkeypatch, absent=("gone_module",))
    named_only = Stand("named", in_default_sweep=False)
    gone = Stand("gone", module="gone_module", title="Gone", extra="gone")
    kept = Stand("kept", module="numpy")
    registry(monkeypatch, named_only, gone, kept)
    assert default_backends() == [kept]


def test_get_backend_returns_the_registered_one_and_says_what_to_do_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unknown name lists every framework; one not installed gives missing()'s line; one installed is returned."""
    with pytest.raises(XferbenchError) as unknown:
        get_backend("nope")
    assert str(unknown.value) == "unknown framework 'nope'; choose from: cuda, hip, torch, tf, jax, cupy, host, sim"
    assert type(unknown.value) is XferbenchError
    installed(monkeypatch, absent=("jax",))
    with pytest.raises(XferbenchError) as missing:
        get_backend("jax")
    assert str(missing.value) == "JAX is not installed: pip install 'xferbench[jax]'" and type(missing.value) is XferbenchError
    assert get_backend("sim") is BACKENDS["sim"] and get_backend("torch") is BACKENDS["torch"]
    installed(monkeypatch)
    assert get_backend("jax") is BACKENDS["jax"]


def test_sweep_flags_name_only_what_a_plain_sweep_would_not_select(monkeypatch: pytest.MonkeyPatch) -> None:
    """-f and -m for a mode left to --mode, -f for a framework out of the default sweep, --device away from auto."""
    usual = Stand("usual", modes=("a", "b", "c"), default=("a", "b"))
    named = Stand("named", modes=("a", "c"), default=("a",), in_default_sweep=False)
    fixed = Stand("fixed", modes=("a", "c"), default=("a",), fixed_device="cpu")
    assert sweep_flags(usual, "a", "cuda:0", "cuda:0") is None
    assert sweep_flags(usual, "b", "cpu", "cuda:0") == "--device cpu"
    assert sweep_flags(usual, "c", "cuda:0", "cuda:0") == "-f usual -m c"
    assert sweep_flags(usual, "c", "cpu", "cuda:0") == "-f usual -m c --device cpu"
    assert sweep_flags(named, "a", "cpu", "cpu") == "-f named"
    assert sweep_flags(named, "c", "cpu", "cpu") == "-f named -m c"  # -f once, not again for the framework
    assert sweep_flags(named, "a", "mps", "cpu") == "-f named --device mps"
    assert sweep_flags(fixed, "a", "cpu", "cuda:0") is None  # a fixed device needs no --device
    assert sweep_flags(fixed, "c", "cpu", "cuda:0") == "-f fixed -m c"
    assert sweep_flags(BACKENDS["sim"], "link", "sim", "cuda:0") == "-f sim"
    assert sweep_flags(BACKENDS["host"], "numpy", "cpu", "cuda:0") is None


def test_mode_help_lists_each_frameworks_default_modes_then_those_run_only_when_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """--mode's help, word for word: defaults per framework (with -f where it is not in the default sweep), then the rest."""
    alpha = Stand("alpha", modes=("a", "b", "c", "d"), default=("a",))
    beta = Stand("beta", modes=("x", "y"), default=("x",), in_default_sweep=False)
    registry(monkeypatch, alpha, beta, Stand("gamma", modes=("z", "w"), default=("z", "w")))
    assert mode_defaults() == "Default: alpha: a; beta: x (with -f beta); gamma: z, w. Run only when named: alpha: b, c, d; beta: y."
    registry(monkeypatch, Stand("alpha", modes=("a", "b"), default=("a", "b")), Stand("beta", modes=("x",), in_default_sweep=False))
    assert mode_defaults() == "Default: alpha: a, b; beta: x (with -f beta)."


def test_mode_help_of_the_real_registry_ends_with_sim_and_names_the_raw_copies_left_to_mode() -> None:
    """The real help: sim needs -f, and the raw reference's registered and write-combined copies are named only."""
    said = mode_defaults()
    assert said.startswith("Default: cuda: raw_pinned, raw_pageable; hip: raw_pinned, raw_pageable; torch: ")
    assert "; host: numpy; sim: link (with -f sim). Run only when named: cuda: raw_registered, raw_pinned_wc; " in said


def test_path_availability_has_a_row_per_mode_and_device_with_the_reason_each_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every framework/mode on every device kind, present devices first, with missing, failed, absent or skip reasons."""
    installed(monkeypatch, absent=("gone_module",))
    fixed = Stand("fixed", modes=("m", "n"), ops=("copy", "seed"), fixed_device="cpu", skips={"n@cpu": "n cannot"})
    iso = Stand("iso", modes=("p",), isolated=True)
    plain = Stand("plain", modes=("q",))
    gpu = Stand("gpu", modes=("r",), isolated=True, cuda_only=True)
    lost = Stand("lost", modes=("s",), cuda_only=True)
    gone = Stand("gone", modes=("t",), module="gone_module", title="Gone", extra="gone-extra")
    broke = Stand("broke", modes=("u",), fixed_device="sim")
    registry(monkeypatch, fixed, iso, plain, gpu, lost, gone, broke)
    devices = {"fixed": ["cpu"], "iso": ["cpu", "cuda:1"], "plain": ["cpu"], "gpu": ["cuda:0", "cuda:2"], "lost": []}
    rows = path_availability(devices, {"broke": "broke could not start", "gone": "never asked"})
    not_installed = "Gone is not installed: pip install 'xferbench[gone-extra]'"
    assert rows == [
        PathAvailability("fixed", "m", ("copy", "seed"), "cpu", None),
        PathAvailability("fixed", "n", ("copy", "seed"), "cpu", "n cannot"),
        PathAvailability("iso", "p", ("copy",), "cpu", None),
        PathAvailability("iso", "p", ("copy",), "cuda:1", None),  # cuda:1 is a cuda device: no row for cuda
        PathAvailability("iso", "p", ("copy",), "mps", "iso sees no mps device here (it sees: cpu, cuda:1)"),
        PathAvailability("plain", "q", ("copy",), "cpu", None),
        PathAvailability("plain", "q", ("copy",), "cuda", "no cuda device present"),
        PathAvailability("plain", "q", ("copy",), "mps", "no mps device present"),
        PathAvailability("gpu", "r", ("copy",), "cuda:0", None),
        PathAvailability("gpu", "r", ("copy",), "cuda:2", None),
        PathAvailability("lost", "s", ("copy",), "cuda", "no cuda device present"),
        PathAvailability("gone", "t", ("copy",), "cpu", not_installed),
        PathAvailability("gone", "t", ("copy",), "cuda", not_installed),
        PathAvailability("gone", "t", ("copy",), "mps", not_installed),
        PathAvailability("broke", "u", ("copy",), "sim", "broke could not start"),
    ]
    assert fixed.asked == [SeriesKey("fixed", "m", "copy", "cpu", (1,)), SeriesKey("fixed", "n", "copy", "cpu", (1,))]
    assert iso.asked == [SeriesKey("iso", "p", "copy", "cpu", (1,)), SeriesKey("iso", "p", "copy", "cuda:1", (1,))]
    assert gone.asked == [] and broke.asked == [] and lost.asked == []


def test_path_availability_without_failures_and_a_fixed_device_not_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    """failed defaults to none; a fixed device the framework does not see is absent; an isolated one says what it sees."""
    installed(monkeypatch)
    fixed = Stand("fixed", modes=("m",), fixed_device="cpu")
    gpu = Stand("gpu", modes=("r",), isolated=True, cuda_only=True)
    registry(monkeypatch, fixed, gpu)
    assert path_availability({"fixed": [], "gpu": []}) == [
        PathAvailability("fixed", "m", ("copy",), "cpu", "no cpu device present"),
        PathAvailability("gpu", "r", ("copy",), "cuda", "gpu sees no cuda device here (it sees: none)"),
    ]
    assert PathAvailability._fields == ("framework", "mode", "ops", "device", "reason")


# --- the protocol: Backend and Transfer ---------------------------------------------------------------------


def test_series_info_fields_defaults_and_frozenness() -> None:
    """SeriesInfo's fields in order, its optional ones None or an empty dict of its own, and no field reassigned."""
    assert [f.name for f in fields(SeriesInfo)] == ["device_name", "transfer", "clock", "sync", "device_clock", "params", "note"]
    a, b = SeriesInfo("d", "t", "c", "s"), SeriesInfo("d", "t", "c", "s")
    assert (a.device_clock, a.params, a.note) == (None, {}, None) and a.params is not b.params
    full = SeriesInfo("d", "t", "c", "s", "events", {"k": 1}, "n")
    assert (full.device_clock, full.params, full.note) == ("events", {"k": 1}, "n")
    with pytest.raises(FrozenInstanceError):
        a.note = "x"  # type: ignore[misc]


def test_only_the_protocols_abstract_methods_must_be_given() -> None:
    """A Transfer must give __call__ and verify; a Backend describe, host_bytes and prepare."""
    assert Transfer.__abstractmethods__ == frozenset({"__call__", "verify"})
    assert Backend.__abstractmethods__ == frozenset({"describe", "host_bytes", "prepare"})


def test_a_transfers_defaults_time_per_call_on_perf_counter_and_record_nothing() -> None:
    """Transfer's class defaults: perf_counter, no offset, per-call, no counts, no pinning, real time; no span; close does nothing."""
    t = Recorder()
    assert t.clock is time.perf_counter and isinstance(Transfer.__dict__["clock"], staticmethod)
    assert (t.host_offset, t.method, t.transfers, t.pin_s, t.virtual) == (None, PER_CALL, None, None, False)
    assert t.host_span() is None and t.close() is None and t.log == []


def test_a_transfer_without_streamed_timing_says_so_by_its_class_name() -> None:
    """The default streamed() raises NotImplementedError naming the class."""

    class Plain(Transfer):
        def __call__(self) -> None:
            return None

        def verify(self) -> None:
            return None

    with pytest.raises(NotImplementedError) as raised:
        Plain().streamed(8)
    assert str(raised.value) == "Plain has no streamed timing"


def test_once_is_a_call_per_call_and_a_short_streamed_run_when_streamed() -> None:
    """once(): one call for a per-call series; STREAM_PROBE_COPIES streamed copies for a streamed one."""
    t = Recorder()
    assert t.once() is None and t.log == ["call"]
    t.method = STREAMED
    t.once()
    assert t.log == ["call", ("streamed", STREAM_PROBE_COPIES)]


def test_a_backends_defaults() -> None:
    """Backend's class defaults: no title, module or extra, no modes, copy only, no fixed device, in the default sweep."""
    b = Bare()
    assert (b.title, b.module, b.extra, b.modes, b.default_modes, b.ops) == ("", None, None, (), (), ("copy",))
    assert (b.fixed_device, b.in_default_sweep, b.isolated, b.cuda_only, b.host_buffers) == (None, True, False, False, ("numpy",))
    assert b.sources("anything") == ("numpy",) and b.devices() == ["cpu"] and b.environment() == {}
    assert b.skip_reason(key("bare")) is None and b.directions("anything") == (H2D,)
    b.host_buffers, b.fixed_device = ("aligned", "pinned"), "sim"
    assert b.sources("m") == ("aligned", "pinned") and b.devices() == ["sim"]


def test_chosen_modes_are_the_named_ones_it_has_in_their_order_else_its_defaults() -> None:
    """chosen_modes keeps --mode's order and drops modes the framework lacks; with none named, its default_modes."""
    b = Stand("s", modes=("a", "b", "c"), default=("b",))
    assert b.chosen_modes() == ("b",) and b.chosen_modes(()) == ("b",)
    assert b.chosen_modes(("c", "zz", "a")) == ("c", "a")
    assert b.chosen_modes(["zz"]) == ()  # named modes it lacks: none of its own, not its defaults


def test_a_missing_framework_line_is_built_from_title_and_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """missing(): '<title> is not installed: pip install 'xferbench[<extra>]'' where its module is absent."""
    asked = installed(monkeypatch, absent=("thing_module",))
    thing = Stand("thing", module="thing_module", title="Thing Lib", extra="thing")
    assert thing.missing() == "Thing Lib is not installed: pip install 'xferbench[thing]'" and asked == ["thing_module"]
    assert Stand("np", module="numpy", title="NumPy", extra="np").missing() is None


def test_a_direction_reason_for_each_way_a_path_cannot_copy() -> None:
    """None for a direction it has; bidir where it has two one-way paths; otherwise what it copies."""

    class Ways(Bare):
        def __init__(self, ways: tuple[str, ...]) -> None:
            self.ways = ways

        def directions(self, mode: str) -> tuple[str, ...]:
            return self.ways if mode == "m" else ()

    both = Ways((H2D, D2H))
    assert both.direction_reason(key(direction=H2D)) is None and both.direction_reason(key(direction=D2H)) is None
    assert both.direction_reason(key(direction=BIDIR)) == "x/m has no bidir path (it copies h2d or d2h, one way at a time)"
    one = Ways((H2D,))
    assert one.direction_reason(key(direction=BIDIR)) == "x/m has no bidir path; it copies h2d"
    assert one.direction_reason(key(direction=D2H)) == "x/m has no d2h path; it copies h2d"
    odd = Ways((H2D, BIDIR))
    assert odd.direction_reason(key(direction=D2H)) == "x/m has no d2h path; it copies h2d, bidir"
    assert odd.direction_reason(key(direction=BIDIR)) is None


def test_the_default_streamed_and_absent_reasons_word_for_word() -> None:
    """streamed_reason and absent_reason as a backend that overrides neither says them."""
    b = Bare()
    assert b.streamed_reason(key("fw", "md")) == ("fw/md cannot queue its transfers on a held stream (it allocates, or waits,"
                                                  " between them): it is timed per call only")  # fmt: skip
    assert b.absent_reason("cuda:1", []) == "bare sees no cuda:1 device here (it sees: none)"
    assert b.absent_reason("mps", ["cpu", "cuda:0"]) == "bare sees no mps device here (it sees: cpu, cuda:0)"


def test_only_a_memory_error_is_out_of_memory_by_default() -> None:
    """is_out_of_memory: MemoryError and its kind, nothing else."""

    class Bigger(MemoryError):
        pass

    b = Bare()
    assert b.is_out_of_memory(MemoryError()) is True and b.is_out_of_memory(Bigger()) is True
    assert b.is_out_of_memory(RuntimeError("out of memory")) is False


# --- the simulated link ---------------------------------------------------------------------------------------


def test_the_sim_links_defaults() -> None:
    """SimLink's defaults: 10 µs, 12 GB/s, no jitter, seed 0, one device, an unlimited host side, alone."""
    assert asdict(SimLink()) == {"latency_us": 10.0, "bandwidth_gbps": 12.0, "jitter": 0.0, "seed": 0, "devices": 1,
                                 "host_bandwidth_gbps": 0.0, "at_once": 1}  # fmt: skip
    assert MAX_SIM_DEVICES == 64
    with pytest.raises(FrozenInstanceError):
        SimLink().seed = 1  # type: ignore[misc]


LINK_LINE = "--sim-latency-us must be a finite number >= 0, --sim-bandwidth-gbps > 0 and --sim-jitter in [0, 1)"
HOST_LINE = "--sim-host-bandwidth-gbps must be a finite number >= 0 (0: unlimited)"


@pytest.mark.parametrize("settings, said", [
    ({"latency_us": -1e-9}, LINK_LINE), ({"latency_us": math.nan}, LINK_LINE), ({"latency_us": math.inf}, LINK_LINE),
    ({"bandwidth_gbps": 0.0}, LINK_LINE), ({"bandwidth_gbps": -1.0}, LINK_LINE), ({"bandwidth_gbps": math.nan}, LINK_LINE),
    ({"bandwidth_gbps": math.inf}, LINK_LINE), ({"jitter": 1.0}, LINK_LINE), ({"jitter": -0.01}, LINK_LINE),
    ({"jitter": math.nan}, LINK_LINE), ({"seed": -1}, "--sim-seed must be a non-negative integer"),
    ({"devices": 0}, "--sim-devices 0: give 1 to 64 (each simulated device runs a worker process of its own)"),
    ({"devices": 65}, "--sim-devices 65: give 1 to 64 (each simulated device runs a worker process of its own)"),
    ({"host_bandwidth_gbps": -1.0}, HOST_LINE), ({"host_bandwidth_gbps": math.nan}, HOST_LINE),
    ({"host_bandwidth_gbps": math.inf}, HOST_LINE), ({"latency_us": -1.0, "seed": -1, "devices": 0}, LINK_LINE),
    ({"seed": -1, "devices": 0, "host_bandwidth_gbps": -1.0}, "--sim-seed must be a non-negative integer"),
])  # fmt: skip
def test_a_sim_link_out_of_range_is_refused_in_one_line(settings: dict[str, Any], said: str) -> None:
    """check() refuses each setting out of range with its own line, the first that fails."""
    with pytest.raises(XferbenchError) as raised:
        SimLink(**settings).check()
    assert str(raised.value) == said


@pytest.mark.parametrize("settings", [{}, {"latency_us": 0.0}, {"bandwidth_gbps": 1e-9}, {"jitter": 0.0}, {"jitter": 0.999},
                                      {"seed": 0}, {"devices": 1}, {"devices": 64}, {"host_bandwidth_gbps": 0.0},
                                      {"host_bandwidth_gbps": 1e-9}])  # fmt: skip
def test_a_sim_link_at_each_edge_of_its_ranges_is_accepted(settings: dict[str, Any]) -> None:
    """check() accepts each setting at the edge of its range."""
    assert SimLink(**settings).check() is None


def test_sim_device_ids_are_sim_alone_or_numbered_from_zero() -> None:
    """One device is 'sim'; N are sim:0 ... sim:N-1."""
    assert SimLink().device_ids() == ["sim"]
    assert SimLink(devices=2).device_ids() == ["sim:0", "sim:1"]
    assert SimLink(devices=3).device_ids() == ["sim:0", "sim:1", "sim:2"]


def test_each_device_gets_its_link_or_its_even_share_of_the_host_side_whichever_is_less() -> None:
    """effective_gbps: the link where the host side is unlimited (0), else min(link, host / at_once)."""
    assert SimLink(bandwidth_gbps=12.0).effective_gbps == 12.0
    assert SimLink(bandwidth_gbps=12.0, at_once=4).effective_gbps == 12.0  # no host limit: sharing changes nothing
    assert SimLink(bandwidth_gbps=12.0, host_bandwidth_gbps=20.0).effective_gbps == 12.0
    assert SimLink(bandwidth_gbps=12.0, host_bandwidth_gbps=20.0, at_once=2).effective_gbps == 10.0
    assert SimLink(bandwidth_gbps=12.0, host_bandwidth_gbps=30.0, at_once=2).effective_gbps == 12.0
    assert SimLink(bandwidth_gbps=12.0, host_bandwidth_gbps=8.0).effective_gbps == 8.0


def test_a_call_costs_latency_plus_bytes_over_bandwidth_and_a_streamed_copy_the_bytes_alone() -> None:
    """cost_s = latency_us * 1e-6 + copy_s; copy_s = bytes / (GB/s * 1e9), GB = 10**9 bytes."""
    link = SimLink(latency_us=10.0, bandwidth_gbps=12.0)
    assert link.copy_s(12_000) == pytest.approx(1e-6, rel=1e-12)
    assert link.cost_s(12_000) == pytest.approx(11e-6, rel=1e-12)
    assert link.cost_s(0) == pytest.approx(10e-6, rel=1e-12) and link.copy_s(0) == 0.0
    shared = SimLink(latency_us=2.0, bandwidth_gbps=12.0, host_bandwidth_gbps=20.0, at_once=4)  # 5 GB/s each
    assert shared.copy_s(5_000_000) == pytest.approx(1e-3, rel=1e-12)
    assert shared.cost_s(5_000_000) == pytest.approx(1.002e-3, rel=1e-12)


def test_the_virtual_clock_starts_at_zero_and_reads_what_it_was_moved_to() -> None:
    """VirtualClock reads 0.0 until moved, then its `now`."""
    clock = VirtualClock()
    assert clock() == 0.0 and clock.now == 0.0
    clock.now = 2.5
    assert clock() == 2.5


def sim_transfer(params: dict[str, Any] | None = None, batch: int = 4, **key_args: Any) -> SimTransfer:
    spec = SeriesKey("sim", "link", "copy", key_args.pop("device", "sim"), SIM_SHAPE, **key_args).at(batch)
    transfer = SimBackend().prepare(spec, params if params is not None else {})
    assert isinstance(transfer, SimTransfer)
    return transfer


def test_a_sim_transfer_is_prepared_from_the_link_and_the_spec() -> None:
    """Its clock is virtual at 0, its costs are the link's for the batch's bytes, its count 0; defaults from empty params."""
    t = sim_transfer({"latency_us": 3.0, "bandwidth_gbps": 6.0, "jitter": 0.25}, batch=5)
    nbytes = 5 * 196_608
    assert isinstance(t.clock, VirtualClock) and t.clock() == 0.0 and t.virtual is True and SimTransfer.virtual is True
    assert t.cost_s == pytest.approx(3e-6 + nbytes / 6e9, rel=1e-12) and t.copy_s == pytest.approx(nbytes / 6e9, rel=1e-12)
    assert t.latency_s == pytest.approx(3e-6, rel=1e-12) and t.jitter == 0.25
    assert (t.method, t.bidir, t.transfers) == (PER_CALL, False, 0)
    plain = sim_transfer(batch=1)
    assert plain.cost_s == pytest.approx(10e-6 + 196_608 / 12e9, rel=1e-12) and plain.jitter == 0.0
    assert sim_transfer(method=STREAMED).method == STREAMED and sim_transfer(direction=BIDIR).bidir is True
    assert sim_transfer(direction=D2H).bidir is False


def test_a_sim_call_charges_its_cost_counts_itself_and_reports_both_ways_only_when_bidir() -> None:
    """__call__ moves the virtual clock by the cost, adds one transfer, and returns each direction's seconds for bidir."""
    t = sim_transfer(batch=2)
    assert t() is None and t() is None
    assert t.clock() == pytest.approx(2 * t.cost_s, rel=1e-12) and t.transfers == 2
    both = sim_transfer(batch=2, direction=BIDIR)
    assert both() == {H2D: both.cost_s, D2H: both.cost_s} and both.transfers == 1 and both.clock() == both.cost_s


def test_a_streamed_sim_run_pays_latency_and_warm_copies_outside_its_span() -> None:
    """streamed(n): returns n copies' time; the clock moves by latency, STREAM_WARM_COPIES copies and the span."""
    t = sim_transfer({"latency_us": 20.0, "bandwidth_gbps": 50.0}, batch=8)
    copy = 8 * 196_608 / 50e9
    assert t.streamed(10) == pytest.approx(10 * copy, rel=1e-12)
    assert t.clock() == pytest.approx(20e-6 + (STREAM_WARM_COPIES + 10) * copy, rel=1e-12)
    assert t.transfers == STREAM_WARM_COPIES + 10 == 12
    t.streamed(3)
    assert t.transfers == 12 + STREAM_WARM_COPIES + 3


def test_sim_jitter_scales_each_cost_by_a_seeded_normal_draw_floored_at_five_percent() -> None:
    """cost * max(0.05, 1 + jitter * z), z from a generator seeded by (seed, batch size, device index + 1, or 0 for 'sim')."""
    t = sim_transfer({"jitter": 0.9, "seed": 6}, batch=1)
    draws = np.random.default_rng([6, 1, 0]).standard_normal(3)
    assert draws[0] < -1 / 0.9  # the first draw falls below the floor
    expected = [t.cost_s * max(0.05, 1.0 + 0.9 * z) for z in draws]
    assert expected[0] == t.cost_s * 0.05
    assert [t(), t(), t()] == [None] * 3
    assert t.clock() == pytest.approx(sum(expected), rel=1e-12)
    bidir = sim_transfer({"jitter": 0.9, "seed": 6}, batch=1, direction=BIDIR)
    assert bidir() == {H2D: expected[0], D2H: expected[0]} and bidir()[H2D] == expected[1]
    for device, index in (("sim:0", 1), ("sim:3", 4)):
        other = sim_transfer({"jitter": 0.5, "seed": 2}, batch=7, device=device)
        z = np.random.default_rng([2, 7, index]).standard_normal()
        assert other() is None and other.clock() == other.cost_s * max(0.05, 1.0 + 0.5 * z)


def test_a_streamed_span_is_jittered_once_and_the_warm_copies_are_not() -> None:
    """streamed(): the span is jittered by one draw; latency and warm copies are charged as they are."""
    t = sim_transfer({"jitter": 0.3, "seed": 4, "latency_us": 5.0}, batch=2)
    z = np.random.default_rng([4, 2, 0]).standard_normal()
    span = 6 * t.copy_s * max(0.05, 1.0 + 0.3 * z)
    assert t.streamed(6) == span
    assert t.clock() == pytest.approx(5e-6 + STREAM_WARM_COPIES * t.copy_s + span, rel=1e-12)


def test_a_sim_link_without_jitter_draws_nothing() -> None:
    """No jitter: the cost exactly, and the generator untouched."""
    t = sim_transfer({"seed": 3}, batch=2)
    state = t.rng.bit_generator.state
    t()
    t.streamed(4)
    assert t.rng.bit_generator.state == state
    assert t.clock() == t.cost_s + (t.latency_s + STREAM_WARM_COPIES * t.copy_s + 4 * t.copy_s)


def test_sim_verification_does_one_transfer_and_fails_where_it_is_not_charged() -> None:
    """verify(): once() must move the virtual clock forward; a call of no cost fails with its line."""
    t = sim_transfer(batch=3)
    t.verify()
    assert t.transfers == 1 and t.clock() == t.cost_s
    streamed = sim_transfer(batch=3, method=STREAMED)
    streamed.verify()
    assert streamed.transfers == STREAM_WARM_COPIES + STREAM_PROBE_COPIES
    free = sim_transfer({"latency_us": 0.0}, batch=3)
    free.cost_s = 0.0
    with pytest.raises(VerificationError) as raised:
        free.verify()
    assert str(raised.value) == "sim: a call was not charged on the virtual clock" and free.transfers == 1


def test_the_sim_backends_attributes() -> None:
    """sim: one mode 'link', its own device, out of the default sweep, streamable, every direction, no host memory."""
    sim = SimBackend()
    assert (sim.name, sim.modes, sim.default_modes, sim.fixed_device, sim.in_default_sweep) == ("sim", ("link",), ("link",), "sim", False)
    assert (sim.ops, sim.isolated, sim.cuda_only, sim.module) == (("copy",), False, False, None)
    assert sim.streamed_reason(key("sim", "link", "sim")) is None
    assert sim.directions("link") == DIRECTIONS and sim.directions("other") == DIRECTIONS
    assert sim.host_bytes(key("sim", "link", "sim").at(1000)) == 0
    assert sim.devices() == ["sim"]


@pytest.mark.parametrize("params, name", [
    ({}, "simulated link (10 µs, 12 GB/s)"),
    ({"latency_us": 2.5, "bandwidth_gbps": 0.5}, "simulated link (2.5 µs, 0.5 GB/s)"),
    ({"host_bandwidth_gbps": 20.0}, "simulated link (10 µs, 12 GB/s; host side 20 GB/s)"),
    ({"host_bandwidth_gbps": 20.0, "at_once": 3}, "simulated link (10 µs, 12 GB/s; host side 20 GB/s, shared by 3 at once)"),
    ({"host_bandwidth_gbps": 20.0, "at_once": 2}, "simulated link (10 µs, 12 GB/s; host side 20 GB/s, shared by 2 at once)"),
    ({"host_bandwidth_gbps": 20.0, "at_once": 1}, "simulated link (10 µs, 12 GB/s; host side 20 GB/s)"),
    ({"at_once": 3}, "simulated link (10 µs, 12 GB/s)"),
])  # fmt: skip
def test_the_sim_description_names_its_link_and_any_shared_host_side(params: dict[str, Any], name: str) -> None:
    """describe(): the link's figures, the host side where limited, its sharing where shared; the link's params."""
    info = SimBackend().describe(key("sim", "link", "sim"), params)
    assert info == SeriesInfo(device_name=name, transfer=SIMULATED, clock="virtual (simulated seconds)",
                              sync="none: simulated, no data moves", params=asdict(SimLink(**params)))  # fmt: skip


def test_a_streamed_sim_series_says_its_clock_is_per_copy() -> None:
    """describe() of a streamed series: the span of a streamed run, per copy."""
    info = SimBackend().describe(key("sim", "link", "sim", method=STREAMED), {"seed": 5})
    assert info.clock == "virtual: the simulated span of a streamed run, per copy" and info.params["seed"] == 5


# --- the host copy ----------------------------------------------------------------------------------------------


def host_spec(batch: int = 2) -> Spec:
    return SeriesKey("host", "numpy", "copy", "cpu", SMALL).at(batch)


def test_the_host_backends_attributes_and_its_two_buffers() -> None:
    """host: one mode 'numpy' on the cpu, in the default sweep, from an aligned buffer, two batches of host memory."""
    h = HostBackend()
    assert (h.name, h.modes, h.default_modes, h.fixed_device, h.host_buffers) == ("host", ("numpy", "staged"), ("numpy",), "cpu", ("aligned",))
    assert (h.in_default_sweep, h.module, h.ops, h.directions("numpy")) == (True, None, ("copy",), (H2D,))
    assert h.host_bytes(host_spec(3)) == 2 * 3 * 48
    assert h.streamed_reason(key("host", "numpy")) == (
        "host/numpy is a synchronous CPU copy with no stream to queue on: it is timed per call only")


def test_the_host_description(monkeypatch: pytest.MonkeyPatch) -> None:
    """describe(): the CPU's name, host-to-host, perf_counter, np.copyto's own wait, the aligned buffers."""
    monkeypatch.setattr(host, "cpu_name", lambda: "Test CPU 9000")
    assert HostBackend().describe(key("host", "numpy"), {}) == SeriesInfo(
        device_name="Test CPU 9000", transfer=HOST_TO_HOST, clock="time.perf_counter",
        sync="none needed: np.copyto returns after the copy", params={"buffers": "64-byte aligned source and destination"})  # fmt: skip


def test_the_host_copy_starts_from_an_aligned_pattern_into_an_aligned_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    """HostCopy: an aligned, patterned source of the batch's shape, its recorded offset, a 64-byte aligned destination."""
    real = HostCopy(host_spec(1))
    assert real.host_offset == 0 and real.source.ctypes.data % 64 == 0 and np.array_equal(real.source, make_source((1, 4, 4, 3)))
    made: list[tuple[Any, ...]] = []

    def placed(shape: tuple[int, ...], aligned: bool = False, offset: int | None = None) -> np.ndarray:
        made.append((shape, aligned, offset))
        return make_source(shape, offset=16)  # placed off 64 bytes: the offset recorded must be the buffer's own

    monkeypatch.setattr(host, "make_source", placed)
    t = HostBackend().prepare(host_spec(2), {})
    assert isinstance(t, HostCopy) and made == [((2, 4, 4, 3), True, None)]
    assert t.host_offset == 16 and t.label == "host/numpy/copy@cpu"
    assert t.dest.shape == (2, 4, 4, 3) and t.dest.dtype == np.uint8 and t.dest.ctypes.data % 64 == 0
    assert t.host_span() == (t.source.ctypes.data, 96)
    assert t() is None and np.array_equal(t.dest, make_source((2, 4, 4, 3)))


def test_host_verification_refills_the_source_zeroes_the_destination_and_names_the_series(monkeypatch: pytest.MonkeyPatch) -> None:
    """verify(): source refilled with pattern variant 1, destination zeroed, one copy, every byte checked."""
    t = HostCopy(host_spec(2))
    t.verify()
    variant = np.empty((2, 4, 4, 3), dtype=np.uint8)
    fill_pattern(variant, variant=1)
    assert np.array_equal(t.source, variant) and np.array_equal(t.dest, variant)
    monkeypatch.setattr(HostCopy, "__call__", lambda self: None)  # the copy stops: the destination must not pass as it was
    with pytest.raises(VerificationError) as raised:
        t.verify()
    assert str(raised.value) == ("host/numpy/copy@cpu: 96 of 96 bytes differ from the source (the first at byte 0);"
                                 " the transfer did not deliver the data")  # fmt: skip
    streamed = HostCopy(host_spec(1))
    streamed.method = STREAMED
    with pytest.raises(NotImplementedError, match="^HostCopy has no streamed timing$"):
        streamed.verify()  # verify goes through once(), which a streamed series times streamed


def test_closing_a_host_copy_drops_both_buffers() -> None:
    """close() deletes the source and the destination."""
    t = HostCopy(host_spec(1))
    t.close()
    assert not hasattr(t, "source") and not hasattr(t, "dest")


# --- the driver's staging copy, alone (host/staged) ----------------------------------------------------------------


def staged_spec(batch: int = 2, buffer: str = "") -> Spec:
    return SeriesKey("host", "staged", "copy", "cpu", SMALL, buffer).at(batch)


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CuPy to pin with: the staging ring is plain host memory."""
    monkeypatch.setattr(host, "staging_cupy", lambda: None)


@pytest.fixture
def pinning(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The CuPy stand-in, seeing one GPU: the ring comes from its cudaHostAlloc, every allocation and free kept."""
    import sys

    import fake_cupy

    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    monkeypatch.setattr(fake_cupy, "HOST_ALLOCATIONS", {})
    monkeypatch.setattr(fake_cupy, "HOST_FLAGS", {})
    monkeypatch.setattr(fake_cupy.runtime, "hostAlloc", fake_cupy._host_alloc)
    monkeypatch.setattr(fake_cupy.runtime, "freeHost", lambda ptr: fake_cupy.HOST_ALLOCATIONS.pop(ptr))
    return fake_cupy


def test_staged_is_a_host_mode_out_of_the_default_sweep_from_pageable_sources_sized_by_its_chunk() -> None:
    """staged: not run unless named; from a NumPy array (as the pageable copies) or aligned; source plus two chunks."""
    h = HostBackend()
    assert h.chosen_modes() == ("numpy",) and h.chosen_modes(("staged",)) == ("staged",)
    assert h.sources("staged") == ("numpy", "aligned") and h.sources("numpy") == ("aligned",)
    assert staged_spec().series.host_buffer == "numpy" and staged_spec().series.label() == "host/staged/copy@cpu"
    assert (host.STAGING_CHUNK_BYTES, host.STAGING_SLOTS) == (2 * 2**20, 2)
    assert h.host_bytes(staged_spec(3)) == 144 + 2 * 144  # a chunk is at most the batch
    assert h.host_bytes_for(staged_spec(3), {"staging_chunk_bytes": 32}) == 144 + 2 * 32
    assert h.host_bytes_for(host_spec(3), {"staging_chunk_bytes": 32}) == 2 * 144
    assert h.streamed_reason(key("host", "staged")) == (
        "host/staged is a synchronous CPU copy with no stream to queue on: it is timed per call only")


@pytest.mark.parametrize("gpu, memory", [
    (True, "pinned: cudaHostAlloc through CuPy, the kind of memory the driver stages through"),
    (False, "pageable: CuPy sees no CUDA GPU here, so plain host memory, touched before timing (not page-locked)"),
])  # fmt: skip
def test_the_staged_description_names_its_chunk_slots_and_memory(monkeypatch: pytest.MonkeyPatch, gpu: bool, memory: str) -> None:
    """describe(): the chunk asked for (else 2 MiB), two slots, and which memory the ring is, word for word."""
    monkeypatch.setattr(host, "cpu_name", lambda: "Test CPU 9000")
    monkeypatch.setattr(host, "staging_cupy", lambda: object() if gpu else None)
    said = HostBackend().describe(key("host", "staged"), {"staging_chunk_bytes": 65536})
    kind = "pinned" if gpu else "pageable"
    assert said == SeriesInfo(
        device_name="Test CPU 9000", transfer=HOST_TO_HOST, clock="time.perf_counter", sync="none needed: each memmove returns after its copy",
        params={"staging_chunk_bytes": 65536, "staging_slots": 2, "staging_memory": memory},
        note=("a pageable copy's staging alone: one thread memmoves the batch 64 KiB at a time (a batch of 64 KiB or less whole,"
              f" in one chunk: each point records the chunk it used) into 2 staging buffers in turn, {kind};"
              " the driver's own chunk and buffer count are not documented"))  # fmt: skip
    assert HostBackend().describe(key("host", "staged"), {}).params["staging_chunk_bytes"] == 2 * 2**20


def test_cupy_pins_the_ring_only_where_it_is_installed_and_sees_a_gpu(monkeypatch: pytest.MonkeyPatch, pinning: Any) -> None:
    """staging_cupy: CuPy with a GPU; None with no GPU, where CuPy cannot load, or where it is not installed."""
    from xferbench.measuring.backends import cuda

    assert host.staging_cupy() is pinning
    monkeypatch.setattr(cuda, "gpu_count", lambda: 0)
    assert host.staging_cupy() is None
    monkeypatch.setattr(cuda, "gpu_count", lambda: (_ for _ in ()).throw(RuntimeError("libcudart.so.12: cannot open")))
    assert host.staging_cupy() is None
    installed(monkeypatch, absent=("cupy",))
    assert host.staging_cupy() is None


def test_the_staged_plan_cycles_chunks_through_two_slots_and_covers_the_batch(no_gpu: None) -> None:
    """Chunks of the asked size in order, the last one short, into slot 0, 1, 0, 1...; the ring page-aligned and touched."""
    t = StagedCopy(staged_spec(3), {"staging_chunk_bytes": 40})  # 144 bytes: 40, 40, 40, 24
    base, start = t.ring.ctypes.data, t.source.ctypes.data
    assert t.chunk == 40 and t.ring.size == 80 and base % 4096 == 0 and (t.ring == 0).all()
    assert t.plan == [(base, start, 40), (base + 40, start + 40, 40), (base, start + 80, 40), (base + 40, start + 120, 24)]
    assert t.host_offset == start % 64 and t.host_span() == (start, 144) and t.label == "host/staged/copy@cpu"
    assert np.array_equal(t.source, make_source((3, 4, 4, 3)))
    assert t() is None  # the last two chunks are left in the ring: chunk 2 in slot 0, chunk 3 (24 bytes) in slot 1
    assert np.array_equal(t.ring[:40], t.source.reshape(-1)[80:120]) and np.array_equal(t.ring[40:64], t.source.reshape(-1)[120:])
    whole = StagedCopy(staged_spec(1), {})
    assert whole.chunk == whole.staging_chunk_bytes == 48 and len(whole.plan) == 1  # the default chunk, cut to the batch
    assert t.staging_chunk_bytes == 40  # what the point records: the chunk used
    assert StagedCopy(staged_spec(1, "aligned"), {}).source.ctypes.data % 64 == 0


def test_each_chunk_is_one_memmove_in_order(monkeypatch: pytest.MonkeyPatch, no_gpu: None) -> None:
    """A call is the plan's memmoves and nothing else, one thread, in order."""
    import ctypes

    t = StagedCopy(staged_spec(2), {"staging_chunk_bytes": 32})
    moved: list[tuple[int, int, int]] = []
    real = ctypes.memmove
    monkeypatch.setattr(ctypes, "memmove", lambda dst, src, n: moved.append((dst, src, n)) or real(dst, src, n))
    t()
    assert moved == t.plan and len(moved) == 3


def test_the_ring_is_pinned_through_cupy_where_a_gpu_is_and_freed_on_close(pinning: Any) -> None:
    """cudaHostAlloc of the two slots with flags 0 (the default kind); the ring views it; close frees it."""
    t = StagedCopy(staged_spec(2), {"staging_chunk_bytes": 32})
    (pointer,) = pinning.HOST_ALLOCATIONS
    assert t.pinned_ptr == pointer == t.ring.ctypes.data and pinning.HOST_FLAGS == {pointer: 0} and t.ring.size == 64
    t()
    t.verify()
    t.close()
    assert pinning.HOST_ALLOCATIONS == {} and t.pinned_ptr == 0 and t.plan == []


def test_the_staged_check_reads_each_chunk_in_its_slot_as_it_lands(monkeypatch: pytest.MonkeyPatch, no_gpu: None) -> None:
    """verify(): new bytes at the source, a zeroed ring, and every chunk compared in its slot before the next but one
    overwrites it; a copy that misses a chunk, lands in the wrong slot or copies nothing fails, naming the series."""
    t = StagedCopy(staged_spec(3), {"staging_chunk_bytes": 40})
    t.verify()
    variant = np.empty((3, 4, 4, 3), dtype=np.uint8)
    fill_pattern(variant, variant=1)
    assert np.array_equal(t.source, variant)
    plan = list(t.plan)
    t.plan = plan[:-1]  # the last chunk never staged
    with pytest.raises(VerificationError) as raised:
        t.verify()
    assert str(raised.value) == "host/staged/copy@cpu: 120 of 144 bytes were staged; the copy did not deliver the data"
    t.plan = [plan[0], plan[2], plan[1], plan[3]]  # out of order: chunk 1's slot holds chunk 2's bytes
    with pytest.raises(VerificationError, match="^host/staged/copy@cpu chunk 1: 40 of 40 checked values differ"):
        t.verify()
    t.plan = [(plan[1][0], *plan[0][1:]), *plan[1:]]  # chunk 0 copied into slot 1: slot 0 still holds zeros
    with pytest.raises(VerificationError) as raised:
        t.verify()
    assert str(raised.value) == ("host/staged/copy@cpu chunk 0: 40 of 40 checked values differ from the source;"
                                 " the transfer did not deliver the data")  # fmt: skip
    t.plan = plan
    monkeypatch.setattr(ctypes_module(), "memmove", lambda dst, src, n: None)  # nothing copied
    with pytest.raises(VerificationError, match="^host/staged/copy@cpu chunk 0: 40 of 40 checked values differ"):
        t.verify()


def ctypes_module() -> Any:
    import ctypes

    return ctypes


def test_prepare_hands_staged_its_parameters_and_numpy_the_plain_copy(no_gpu: None) -> None:
    """prepare(): StagedCopy with the sweep's chunk for staged, HostCopy for numpy."""
    staged = HostBackend().prepare(staged_spec(2), {"staging_chunk_bytes": 16})
    assert isinstance(staged, StagedCopy) and staged.chunk == 16 and len(staged.plan) == 6
    assert isinstance(HostBackend().prepare(host_spec(2), {"staging_chunk_bytes": 16}), HostCopy)


# --- the input-pipeline machinery ----------------------------------------------------------------------------------


def test_the_pipeline_constants() -> None:
    """The clock's words, the buffered batches, the kernel sides, the look-back, the repeat cap, the calibration runs and span."""
    assert pipeline.PIPELINE_CLOCK == ("time.perf_counter, around taking the next batch and its wait, as a training loop's step"
                                       " with no compute")  # fmt: skip
    assert pipeline.BUFFER_BATCHES == 2 and pipeline.KERNEL_SIDE == {"cpu": 128, "gpu": 1024}
    assert (pipeline.REPEATS_LOOKED_BACK, pipeline.MAX_REPEATS, pipeline.CALIBRATION_RUNS) == (3, 100_000, 3)
    assert pipeline.KERNEL_TIMED_S == 0.002


@pytest.mark.parametrize("cpus, allowed, workers", [(None, None, 1), (0, None, 1), (1, None, 1), (3, None, 3), (4, None, 4), (5, None, 4),
                                                     (64, None, 4), (64, {2, 5}, 2), (64, {7}, 1), (2, set(range(8)), 4)])  # fmt: skip
def test_default_loader_workers_are_one_per_usable_core_up_to_four(monkeypatch: pytest.MonkeyPatch, cpus: int | None,
                                                                   allowed: set[int] | None, workers: int) -> None:  # fmt: skip
    """DEFAULT_LOADER_WORKERS: the CPUs this process may run on (a container's two of 64), else os.cpu_count() where the OS
    does not say (no sched_getaffinity, as on macOS and Windows), capped at 4, and 1 where nothing is known."""
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    if allowed is None:
        monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    else:
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(allowed), raising=False)
    spec = importlib.util.spec_from_file_location("pipeline_as_loaded_here", pipeline.__file__)
    assert spec is not None and spec.loader is not None
    fresh = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fresh)
    assert fresh.DEFAULT_LOADER_WORKERS == workers


def test_the_dataset_has_2b_plus_1_patterned_items_and_batch_k_starts_at_item_kb() -> None:
    """item_count = 2b + 1; the items are the pattern in one block; batch k holds items kb ... kb + b - 1 mod 2b + 1."""
    assert [item_count(b) for b in (1, 2, 5)] == [3, 5, 11]
    items = dataset_items(3, SMALL)
    assert items.shape == (7, 4, 4, 3) and items.dtype == np.uint8 and np.array_equal(items, make_source((7, 4, 4, 3)))
    assert batch_indices(0, 3).tolist() == [0, 1, 2] and batch_indices(2, 3).tolist() == [6, 0, 1]
    assert batch_indices(5, 3).tolist() == [1, 2, 3] and batch_indices(4, 1).tolist() == [1]


def test_items_are_read_in_order_forever() -> None:
    """cycled_indices(n): 0 ... n - 1, then again."""
    cycle = cycled_indices(3)
    assert [next(cycle) for _ in range(8)] == [0, 1, 2, 0, 1, 2, 0, 1]


def test_the_kernel_is_the_cpus_on_the_cpu_and_the_gpus_elsewhere() -> None:
    """kernel_side: 128 on 'cpu', 1024 on any other device."""
    assert [kernel_side(d) for d in ("cpu", "cuda:0", "mps", "cpu:0")] == [128, 1024, 1024, 1024]


def test_repeats_need_a_positive_repeat_time_and_a_finite_target() -> None:
    """repeats_for: 1 where a repeat takes no time or the target is not finite; at least 1, at most MAX_REPEATS."""
    assert repeats_for(1e-3, 0.0) == 1 and repeats_for(1e-3, -1e-4) == 1 and repeats_for(1e-3, math.nan) == 1
    assert repeats_for(math.nan, 1e-4) == 1 and repeats_for(-math.inf, 1e-4) == 1
    assert repeats_for(0.0, 1e-4) == 1 and repeats_for(-1.0, 1e-4) == 1
    assert repeats_for(100_000.0, 1.0) == 100_000 and repeats_for(100_001.0, 1.0) == 100_000 and repeats_for(99_999.0, 1.0) == 99_999
    assert repeats_for(7.4, 1.0) == 7 and repeats_for(1e-3, 1e-3) == 1 and repeats_for(2e-3, 1e-3) == 2


class Scripted(PipelineTransfer):
    """A pipeline on a virtual clock that delivers batch `delivered + offset`, the offset moved by `shifts` at given
    deliveries (a dropped batch: +1; a repeated one: -1); delivering takes copy_s, the kernel kernel_s a repeat."""

    def __init__(self, b: int = 3, shifts: dict[int, int] | None = None, copy_s: float = 2e-3, kernel_s: float = 1e-4,
                 staging: np.ndarray | None = None) -> None:  # fmt: skip
        self.label, self.batch_size, self.items = "scripted", b, dataset_items(b, SMALL)
        self.shifts, self.offset, self.staging = shifts or {}, 0, staging
        self.copy_s, self.kernel_s, self.now = copy_s, kernel_s, 0.0
        self.clock = lambda: self.now
        self.log: list[Any] = []

    def _deliver(self) -> np.ndarray:
        self.offset += self.shifts.get(self.delivered, 0)
        batch = self.items[batch_indices(self.delivered + self.offset, self.batch_size)]
        self.log.append(("deliver", self.delivered + self.offset))
        self.now += self.copy_s
        return batch

    def _read(self, batch: np.ndarray) -> tuple[Callable[[int, np.ndarray], None], np.ndarray | None]:
        read = read_host(batch)  # given a staging buffer, read through it as a device's read does (a bare read_host is compared in place)
        return (read if self.staging is None else lambda offset, out: read(offset, out)), self.staging

    def _compute(self, batch: np.ndarray | None) -> None:
        self.log.append(("compute", None if batch is None else int(batch.reshape(-1)[0]), self.repeats))
        self.now += self.repeats * self.kernel_s


def test_a_pipelines_defaults_and_a_call_takes_one_batch() -> None:
    """PipelineTransfer: checked again after the samples, none delivered, one repeat, depth 1, no kernel time; a call delivers."""
    p = Scripted()
    assert (p.verify_after, p.delivered, p.repeats, p.depth, p.repeat_s) == (True, 0, 1, 1, None)
    assert p() is None and p() is None
    assert p.delivered == 2 and p.log == [("deliver", 0), ("deliver", 1)]
    assert p._stop() is None


def test_the_check_takes_the_batch_due_then_drains_what_the_pipeline_made_ready() -> None:
    """verify(): one batch checked against batch `delivered`, then `depth` more taken; the caller's staging buffer is used."""
    staging = np.zeros(5, dtype=np.uint8)
    p = Scripted(b=3, staging=staging)
    p.depth = 2
    for _ in range(4):
        p()
    p.verify()
    assert p.delivered == 4 + 1 + 2 and [d for _, d in p.log] == list(range(7))
    checked = p.items[batch_indices(4, 3)].reshape(-1)  # 144 bytes read in chunks of 5: the last chunk is 4 bytes
    assert staging.tolist() == checked[140:144].tolist() + [checked[139]]  # the last chunk over the one before


@pytest.mark.parametrize("at", [0, 143])  # in the first item, which then starts as no batch; in the last, the first item right
def test_a_batch_with_wrong_bytes_fails_with_the_checks_own_line(at: int) -> None:
    """A batch whose bytes are wrong, not one out of turn: the byte check's error, named after the batch due."""

    class Damaged(Scripted):
        def _deliver(self) -> np.ndarray:
            batch = super()._deliver().copy()
            batch.reshape(-1)[at] ^= 0xFF
            return batch

    p = Damaged(b=3)
    with pytest.raises(VerificationError) as raised:
        p.verify()
    assert str(raised.value) == (f"scripted batch 0 of the pipeline: 1 of 144 bytes differ from the source (the first at byte {at});"
                                 " the transfer did not deliver the data")  # fmt: skip
    assert p.delivered == 1  # no drain after a failed check


@pytest.mark.parametrize("shift, delivered, said", [
    (1, 9, "1 batch(es) dropped"), (2, 10, "2 batch(es) dropped"), (-1, 7, "1 batch(es) repeated"),
    (-3, 5, "3 batch(es) repeated"), (4, 5, "3 batch(es) repeated"),  # 4 ahead is 3 back: the nearest is said
    (3, 11, "3 batch(es) dropped"), (-2, 6, "2 batch(es) repeated"),
])  # fmt: skip
def test_a_batch_out_of_turn_is_named_by_the_nearest_batch_it_starts_as(shift: int, delivered: int, said: str) -> None:
    """The whole line: which batch the delivered one starts as, and how many were dropped or repeated."""
    p = Scripted(b=3, shifts={8: shift})
    for _ in range(8):
        p()
    with pytest.raises(VerificationError) as raised:
        p.verify()
    assert str(raised.value) == f"scripted: batch 8 of the pipeline is not the batch due: its first item is batch {delivered}'s: {said}"
    assert raised.value.__cause__ is None and raised.value.__suppress_context__ is True


def test_a_drop_of_one_batch_of_one_item_is_not_read_as_two_repeated() -> None:
    """With b = 1 (3 items), one ahead and two back start alike: the forward reading, one nearer, is said."""
    p = Scripted(b=1, shifts={4: 1})
    for _ in range(4):
        p()
    with pytest.raises(VerificationError) as raised:
        p.verify()
    assert str(raised.value) == "scripted: batch 4 of the pipeline is not the batch due: its first item is batch 5's: 1 batch(es) dropped"


class Stopwatch:
    """A clock that reads 0 as a run starts and, as it ends, the seconds `seconds(repeats, run)` says the run took."""

    def __init__(self, pipeline: Scripted, seconds: Callable[[int, int], float]) -> None:
        self.pipeline, self.seconds, self.reads, self.runs = pipeline, seconds, 0, 0

    def __call__(self) -> float:
        self.reads += 1
        if self.reads > 400:
            raise AssertionError("the kernel's timing does not end")
        if self.reads % 2:
            return 0.0
        self.runs += 1
        return self.seconds(self.pipeline.repeats, self.runs)


def test_the_kernel_is_warmed_once_then_doubled_until_a_run_lasts_the_timed_span() -> None:
    """time_kernel: repeats from 1, one warm run, three timed runs a size, stop at exactly KERNEL_TIMED_S."""
    p = Scripted()
    p.repeats = 64
    p.time_kernel(Stopwatch(p, lambda repeats, run: {1: 0.001, 2: 0.002, 4: 0.004}[repeats]))
    assert p.repeats == 2 and p.repeat_s == 0.001
    assert p.log == [("compute", None, 1)] * 4 + [("compute", None, 2)] * 3


def test_the_kernels_time_is_the_quickest_of_three_runs() -> None:
    """Each size is timed three times and the quickest counts; a slow run alone does not end the doubling."""
    p = Scripted()
    runs = {1: [0.005, 0.004, 0.001], 2: [0.0030, 0.0021, 0.0025]}
    p.time_kernel(Stopwatch(p, lambda repeats, run: runs[repeats][(run - 1) % 3]))
    assert p.repeats == 2 and p.repeat_s == 0.0021 / 2 and len(p.log) == 1 + 3 + 3


def test_a_kernel_that_never_lasts_stops_at_the_repeat_cap() -> None:
    """Repeats double up to MAX_REPEATS, the last step clipped to it, and the timing ends there."""
    p = Scripted()
    p.time_kernel(Stopwatch(p, lambda repeats, run: 0.0))
    sizes = [2**i for i in range(17)] + [100_000]
    assert p.repeats == 100_000 and p.repeat_s == 0.0
    assert p.log == [("compute", None, 1)] + [("compute", None, r) for r in sizes for _ in range(3)]


def test_calibration_times_the_kernel_once_and_sizes_its_repeats_to_the_target() -> None:
    """calibrate_compute: the kernel is timed on the given clock only while its repeat time is unknown."""
    p = Scripted()
    p.calibrate_compute(0.0074, Stopwatch(p, lambda repeats, run: {1: 0.001, 2: 0.002}[repeats]))
    assert p.repeat_s == 0.001 and p.repeats == 7 and len(p.log) == 7
    p.calibrate_compute(0.0105, Stopwatch(p, lambda repeats, run: 1.0))
    assert p.repeats == 10 and len(p.log) == 7  # timed already: not again
    q = Scripted()
    q.repeat_s = 0.0005
    q.calibrate_compute(0.0074)
    assert q.repeats == 15 and q.log == []
    for method in (PipelineTransfer.time_kernel, PipelineTransfer.calibrate_compute):
        assert inspect.signature(method).parameters["clock"].default is time.perf_counter


def test_compute_alone_runs_the_kernel_unfed_and_a_step_feeds_it_the_batch_it_took() -> None:
    """compute_alone: the kernel with no batch; step: the next batch taken and counted, then the kernel on it."""
    p = Scripted(b=2)
    p.compute_alone()
    p.step()
    first = int(p.items[batch_indices(0, 2)].reshape(-1)[0])
    assert p.log == [("compute", None, 1), ("deliver", 0), ("compute", first, 1)] and p.delivered == 1


def test_overlap_samples_the_kernel_alone_then_steps_after_the_warm_steps_and_checks_the_sequence() -> None:
    """overlap(): kernel sized on the pipeline's clock, compute sampled, max(warm-up calls, depth) steps, steps sampled, one check."""
    p = Scripted(b=2, copy_s=2e-3, kernel_s=1e-4)
    timing = TimingConfig(warmup_calls=4, warmup_s=0.0, min_samples=3, min_time_s=0.0, max_samples=3)
    record = p.overlap(2e-3, timing)
    assert list(record) == ["kernel", "repeats", "compute_times_s", "step_times_s"]
    assert record["kernel"] == "float32 128x128 matmul" and record["repeats"] == 20 == p.repeats
    assert record["compute_times_s"] == pytest.approx([2e-3] * 3, rel=1e-9)
    assert record["step_times_s"] == pytest.approx([4e-3] * 3, rel=1e-9)
    assert p.delivered == 4 + 3 + 1 + 1  # warm steps, sampled steps, the check and its drain
    timed = p.log[1 + 3 * 6:]  # the kernel timed from 1 to 32 repeats: a warm run and three runs at each size
    assert timed[:3] == [("compute", None, 20)] * 3 and [e[0] for e in timed[3:]] == ["deliver", "compute"] * 7 + ["deliver"] * 2
    deep = Scripted(b=2)
    deep.depth, deep.repeat_s = 6, 1e-4
    deep.overlap(2e-3, timing)
    assert deep.delivered == 6 + 3 + 1 + 6


def test_overlap_fails_where_a_step_took_a_batch_out_of_turn() -> None:
    """The check after the steps catches a batch the steps dropped."""
    p = Scripted(b=2, shifts={1: 1})  # the first sampled step takes batch 2 for batch 1
    p.repeat_s = 1e-4
    timing = TimingConfig(warmup_calls=1, warmup_s=0.0, min_samples=3, min_time_s=0.0, max_samples=3)
    with pytest.raises(VerificationError) as raised:
        p.overlap(2e-3, timing)
    assert str(raised.value) == "scripted: batch 4 of the pipeline is not the batch due: its first item is batch 5's: 1 batch(es) dropped"


def test_the_kernel_is_named_by_the_pipelines_device() -> None:
    """kernel: 'float32 NxN matmul', 128 where there is no device_id or it is the cpu, 1024 on a GPU."""
    p = Scripted()
    assert p.kernel == "float32 128x128 matmul"
    p.device_id = "cpu"  # type: ignore[attr-defined]
    assert p.kernel == "float32 128x128 matmul"
    p.device_id = "cuda:0"  # type: ignore[attr-defined]
    assert p.kernel == "float32 1024x1024 matmul"


def test_closing_a_pipeline_stops_it_and_drops_its_items_even_when_stopping_fails() -> None:
    """close(): _stop(), then the items dropped, also when _stop raises (which still propagates)."""

    class Stopping(Scripted):
        def _stop(self) -> None:
            self.log.append("stop")
            if self.fail:
                raise RuntimeError("worker would not stop")

    calm = Stopping()
    calm.fail = False  # type: ignore[attr-defined]
    calm.close()
    assert calm.log == ["stop"] and calm.items is None
    stuck = Stopping()
    stuck.fail = True  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match="^worker would not stop$"):
        stuck.close()
    assert stuck.items is None
