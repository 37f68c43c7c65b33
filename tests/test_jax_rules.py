"""JAX's paths (backends/jax.py) rule by rule, against a JAX stand-in (FakeJax below) as strict as the real one:
device_put takes a device or a sharding and nothing else, a sharding refuses a memory kind its device lacks, an array
keeps the host copy its first fetch made (on the CPU it hands back a view of its buffer), jit refuses what is not
callable, a CPU device wraps a 64-byte-aligned NumPy array without copying, and an unknown backend name raises
RuntimeError. Every call into it is written down in `log`. Each skip reason, description, host estimate and
out-of-memory rule is checked word for word; the real CPU JAX runs the paths in tests/test_jax.py."""

from __future__ import annotations

import importlib.metadata
import os
import sys
import types
from typing import Any

import numpy as np
import pytest

from xferbench.core.errors import NotSupportedHere, VerificationError
from xferbench.core.spec import BIDIR, D2H, DEVICE_TO_HOST, H2D, HOST_TO_DEVICE, HOST_TO_HOST, SeriesKey
from xferbench.measuring.backends import jax as jaxpath
from xferbench.measuring.backends.base import SeriesInfo
from xferbench.measuring.backends.jax import JaxBack, JaxBackend, JaxTransfer
from xferbench.measuring.buffers import GLIBC_LARGE_OFFSET, address_offset, fill_pattern

SHAPE = (4, 4, 3)  # 48 bytes an item
BATCH = 4
N = 192  # bytes a batch
H100 = "NVIDIA H100 80GB HBM3"
ALL_KINDS = ("device", "pinned_host", "unpinned_host")
BACKEND = JaxBackend()


class Memory:
    def __init__(self, kind: str) -> None:
        self.kind = kind


class Device:
    """A JAX device: str() is "cuda:0" or "cpu:0", repr() "CudaDevice(id=0)", as jaxlib prints them."""

    def __init__(self, platform: str, id: int, device_kind: str, kinds: tuple[str, ...] = ALL_KINDS) -> None:
        self.platform, self.id, self.device_kind, self.kinds = platform, id, device_kind, kinds

    def addressable_memories(self) -> list[Memory]:
        return [Memory(kind) for kind in self.kinds]

    def __str__(self) -> str:
        return f"{'cuda' if self.platform == 'gpu' else 'cpu'}:{self.id}"

    def __repr__(self) -> str:
        return f"{'Cuda' if self.platform == 'gpu' else 'Cpu'}Device(id={self.id})"


class OldDevice:
    """A device of a JAX before memory kinds: no addressable_memories, no device_kind."""

    platform = "gpu"

    def __str__(self) -> str:
        return "cuda:0"


class SingleDeviceSharding:
    def __init__(self, device: Any, memory_kind: str | None = None) -> None:
        if not isinstance(device, (Device, OldDevice)):
            raise TypeError(f"SingleDeviceSharding needs a jax.Device, got {device!r}")
        kinds = [memory.kind for memory in device.addressable_memories()] if isinstance(device, Device) else ["device"]
        if memory_kind is not None and memory_kind not in kinds:
            raise ValueError(f"Could not find memory addressable by device {device}. Got memory kind: {memory_kind}")
        self.device, self.memory_kind = device, memory_kind or "device"  # no kind: the device's default memory


class Array:
    """A jax.Array: bytes on one device in one memory kind; np.asarray fetches them once and keeps that copy."""

    def __init__(self, jax: FakeJax, data: np.ndarray, sharding: SingleDeviceSharding) -> None:
        self.jax, self.data, self.sharding = jax, data, sharding
        self.host: np.ndarray | None = None

    def devices(self) -> set[Any]:
        return {self.sharding.device}

    def block_until_ready(self) -> Array:
        self.jax.log.append(("block_until_ready", self.jax.name(self)))
        return self

    def astype(self, dtype: Any) -> Array:
        return Array(self.jax, self.data.astype(np.float32 if dtype is None else dtype), self.sharding)  # None: JAX's default float

    def __getitem__(self, index: Any) -> Array:
        return Array(self.jax, np.array(self.data[index]), self.sharding)

    def copy(self) -> Array:
        return Array(self.jax, self.data.copy(), self.sharding)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self.sharding.device.platform == "cpu":  # a view of the buffer itself, as JAX on the CPU hands back
            view = self.data.view()
            view.flags.writeable = False
            return view
        if self.host is None:
            self.jax.log.append(("fetch", self.jax.name(self)))
            self.host = self.data.copy()
            self.host.flags.writeable = False
        return self.host

    def unsafe_buffer_pointer(self) -> int:
        return self.data.ctypes.data


class FakeJax(types.ModuleType):
    """jax with `gpus` CUDA devices (each with `kinds` of memory) beside one CPU device."""

    def __init__(self, gpus: int = 2, kinds: tuple[str, ...] = ALL_KINDS, version: str = "0.4.35") -> None:
        super().__init__("jax")
        self.__version__ = version
        self.cpu = Device("cpu", 0, "cpu")
        self.gpus = [Device("gpu", i, H100, kinds) for i in range(gpus)]
        self.log: list[tuple[Any, ...]] = []
        self.names: dict[int, str] = {}
        self.sharding = types.ModuleType("jax.sharding")
        self.sharding.SingleDeviceSharding = SingleDeviceSharding

    def name(self, thing: Any) -> str:
        return self.names.get(id(thing), type(thing).__name__)

    def devices(self, backend: str | None = None) -> list[Any]:
        if backend is None:
            return list(self.gpus or [self.cpu])
        if backend == "cpu":
            return [self.cpu]
        if backend in ("gpu", "cuda") and self.gpus:
            return list(self.gpus)
        raise RuntimeError(f"Unknown backend: '{backend}' requested, but no platforms that are instances of {backend} are present.")

    def default_backend(self) -> str:
        return "gpu" if self.gpus else "cpu"

    def device_put(self, x: Any, device: Any = None) -> Array:
        if device is None:
            device = self.devices()[0]
        if isinstance(device, (Device, OldDevice)):
            device = SingleDeviceSharding(device)
        if not isinstance(device, SingleDeviceSharding):
            raise ValueError(f"`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, `jax.Device`; got {device!r}")
        self.log.append(("device_put", self.name(x), str(device.device), device.memory_kind))
        if isinstance(x, Array):
            return Array(self, x.data.copy(), device)
        if not isinstance(x, np.ndarray):
            raise TypeError(f"device_put of {type(x).__name__}")
        aliased = device.device.platform == "cpu" and device.memory_kind == "device" and x.ctypes.data % 64 == 0
        return Array(self, x if aliased else x.copy(), device)  # the CPU wraps an aligned array as it is

    def jit(self, fun: Any) -> Any:
        if not callable(fun):
            raise TypeError(f"Expected a callable value, got {fun!r}")

        def compiled(*args: Any) -> Any:
            self.log.append(("jit", *map(self.name, args)))
            return fun(*args)

        return compiled


@pytest.fixture
def fake_jax(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Install a FakeJax (and jaxlib) where `import jax` finds it; returns a maker for other shapes of it."""

    def install(**kwargs: Any) -> FakeJax:
        jax = FakeJax(**kwargs)
        monkeypatch.setitem(sys.modules, "jax", jax)
        monkeypatch.setitem(sys.modules, "jax.sharding", jax.sharding)
        monkeypatch.setitem(sys.modules, "jaxlib", types.SimpleNamespace(__version__="0.4.36"))
        return jax

    install.default = install()  # type: ignore[attr-defined]
    return install


@pytest.fixture
def jax(fake_jax) -> FakeJax:  # type: ignore[no-untyped-def]
    return fake_jax.default


def key(device: str = "cuda:1", mode: str = "device_put", op: str = "copy", host_buffer: str = "", direction: str = H2D) -> SeriesKey:
    return SeriesKey("jax", mode, op, device, SHAPE, host_buffer, direction=direction)


# --- import, devices and memory kinds ------------------------------------------------------------------------------


def test_importing_jax_turns_off_its_preallocation_and_info_lines_unless_the_user_set_them(jax, monkeypatch) -> None:
    monkeypatch.delenv("XLA_PYTHON_CLIENT_PREALLOCATE", raising=False)
    monkeypatch.delenv("TF_CPP_MIN_LOG_LEVEL", raising=False)
    assert jaxpath._jax() is jax
    assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false" and os.environ["TF_CPP_MIN_LOG_LEVEL"] == "2"
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "true")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "0")
    jaxpath._jax()
    assert os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "true" and os.environ["TF_CPP_MIN_LOG_LEVEL"] == "0"


def test_gpus_are_jax_gpu_devices_and_none_where_jax_has_no_gpu_platform(fake_jax) -> None:
    jax = fake_jax.default
    assert jaxpath._gpus() == jax.gpus and BACKEND.devices() == ["cpu", "cuda:0", "cuda:1"]
    fake_jax(gpus=0)
    assert jaxpath._gpus() == [] and BACKEND.devices() == ["cpu"]


def test_device_ids_name_the_cpu_and_the_nth_gpu(jax) -> None:
    assert jaxpath.jax_device("cpu") is jax.cpu
    assert jaxpath.jax_device("cuda:0") is jax.gpus[0] and jaxpath.jax_device("cuda:1") is jax.gpus[1]


def test_pinned_host_memory_is_there_or_its_absence_names_the_kinds_the_device_has(fake_jax) -> None:
    assert jaxpath.pinned_host_reason(fake_jax.default.gpus[0]) is None
    jax = fake_jax(kinds=("device", "unpinned_host"), version="0.4.20")
    assert jaxpath.pinned_host_reason(jax.gpus[0]) == (
        "JAX 0.4.20 offers no pinned_host memory on cuda:0 (it has: device, unpinned_host)")  # fmt: skip
    assert jaxpath.pinned_host_reason(OldDevice()) == "JAX 0.4.20 offers no pinned_host memory on cuda:0 (it has: no memory kinds)"


# --- the backend's rules -----------------------------------------------------------------------------------------------


def test_absent_devices_say_what_would_bring_them(monkeypatch) -> None:
    assert BACKEND.absent_reason("mps", ["cpu"]) == (
        "xferbench has no JAX path on Apple GPUs (jax-metal is experimental); torch and tf measure MPS")  # fmt: skip
    monkeypatch.setattr(jaxpath.sys, "platform", "linux")
    assert BACKEND.absent_reason("cuda:0", ["cpu"]) == (
        "JAX sees no CUDA GPU: there is none, or this jaxlib has no CUDA plugin (pip install 'xferbench[jax-cuda]' for"
        " NVIDIA driver 525 or newer, 'xferbench[jax-cuda13]' for 580 or newer)")  # fmt: skip
    for platform in ("darwin", "win32"):
        monkeypatch.setattr(jaxpath.sys, "platform", platform)
        assert BACKEND.absent_reason("cuda:1", ["cpu"]) == "JAX sees no CUDA GPU: JAX's CUDA plugins are for Linux"
    assert BACKEND.absent_reason("xpu", ["cpu", "cuda:0"]) == "jax sees no xpu device here (it sees: cpu, cuda:0)"


def test_skip_reasons_word_for_word_and_in_order(monkeypatch) -> None:
    monkeypatch.setattr(jaxpath.sys, "platform", "linux")
    skip = BACKEND.skip_reason
    assert skip(key(host_buffer="pinned")) == "a pinned source is what jax's pinned_host mode measures; choose it with --mode"
    for device in ("cpu", "mps"):
        assert skip(key(device, mode="pinned_host")) == (
            f"jax/pinned_host needs a CUDA GPU: on {device} JAX's pinned_host and device memories are both host memory, so"
            " there is no device copy to pin for")  # fmt: skip
    assert skip(key(mode="pinned_host")) is None
    assert skip(key(op="seed", direction=D2H)) == "the seed op is the report's host-to-device expression; d2h times the fetch alone"
    assert skip(key(op="seed")) is None and skip(key(direction=D2H)) is None
    zero_copy = "on the CPU, jax.device_put of a 64-byte-aligned array is zero-copy (it aliases the buffer): nothing to time"
    assert skip(key("cpu", host_buffer="aligned")) == zero_copy and skip(key(host_buffer="aligned")) is None
    assert skip(key("cpu")) is None
    monkeypatch.setattr(jaxpath.sys, "platform", "darwin")
    assert skip(key("cpu")) == ("on macOS a NumPy batch starts on a page (64-byte aligned), and jax.device_put on the CPU"
                                " wraps such an array without copying: nothing to time")  # fmt: skip
    assert skip(key("cuda:0")) is None
    assert skip(key("cpu", host_buffer="aligned")) == zero_copy


def test_directions_and_sources_of_each_mode() -> None:
    assert BACKEND.directions("device_put") == (H2D, D2H) and BACKEND.directions("pinned_host") == (H2D,)
    assert BACKEND.sources("pinned_host") == ("pinned",) and BACKEND.sources("device_put") == ("numpy", "aligned")


def test_d2h_needs_a_gpu_and_other_directions_get_the_common_reason() -> None:
    assert BACKEND.direction_reason(key("cpu", direction=D2H)) == (
        "jax d2h needs a GPU: on the CPU a jax.Array's host view is its own buffer, so there is nothing to fetch; cuda,"
        " torch and cupy time d2h and bidir")  # fmt: skip
    assert BACKEND.direction_reason(key("cuda:0", direction=D2H)) is None
    assert BACKEND.direction_reason(key("cpu", mode="pinned_host", direction=D2H)) == "jax/pinned_host has no d2h path; it copies h2d"
    assert BACKEND.direction_reason(key(direction=BIDIR)) == "jax/device_put has no bidir path (it copies h2d or d2h, one way at a time)"


CPU_NOTE = ("on the CPU this is JAX's host-side copy of the NumPy array into a buffer of its own, from a source 16 bytes past"
            " a 64-byte boundary, where glibc puts a large block (JAX wraps a 64-byte-aligned one without copying)")  # fmt: skip
D2H_NOTE = ("d2h: np.asarray(jit(copy)(x)): a device-side copy, then its fetch; a jax.Array keeps the host copy its first"
            " fetch made, so each call fetches a fresh one")  # fmt: skip
WAIT, FETCHED = "jax.Array.block_until_ready()", "the result fetched to the host with np.asarray"


def info(name: str, transfer: str, sync: str, device: str, platform: str, note: str | None = None) -> SeriesInfo:
    return SeriesInfo(name, transfer, "time.perf_counter", sync, params={"jax_device": device, "platform": platform}, note=note)


def test_each_description_word_for_word(jax, monkeypatch) -> None:
    monkeypatch.setattr(jaxpath, "cpu_name", lambda: "Test CPU 9000")
    describe = BACKEND.describe
    assert describe(key("cpu"), {}) == info("Test CPU 9000", HOST_TO_HOST, WAIT, "cpu:0", "cpu", CPU_NOTE)
    assert describe(key("cpu", op="seed"), {}) == info("Test CPU 9000", HOST_TO_HOST, FETCHED, "cpu:0", "cpu", CPU_NOTE)
    assert describe(key(), {}) == info(H100, HOST_TO_DEVICE, WAIT, "cuda:1", "gpu")
    assert describe(key(op="seed"), {}) == info(H100, HOST_TO_DEVICE, FETCHED, "cuda:1", "gpu")
    assert describe(key(mode="pinned_host"), {}) == info(H100, HOST_TO_DEVICE, WAIT, "cuda:1", "gpu")
    assert describe(key("cuda:0", direction=D2H), {}) == info(
        H100, DEVICE_TO_HOST, "np.asarray waits for the copy and the fetch", "cuda:0", "gpu", D2H_NOTE)  # fmt: skip
    jax.gpus[0] = OldDevice()  # type: ignore[call-overload]
    assert describe(key("cuda:0"), {}) == info("CUDA GPU", HOST_TO_DEVICE, WAIT, "cuda:0", "gpu")


def test_the_pinned_host_mode_is_refused_where_jax_has_no_pinned_memory_and_device_put_is_not(fake_jax) -> None:
    fake_jax(kinds=("device",), version="0.4.20")
    with pytest.raises(NotSupportedHere, match=r"^JAX 0\.4\.20 offers no pinned_host memory on cuda:1 \(it has: device\)$"):
        BACKEND.describe(key(mode="pinned_host"), {})
    assert BACKEND.describe(key(), {}).transfer == HOST_TO_DEVICE


@pytest.mark.parametrize(("series", "batches"), [
    (key(), 2), (key(op="seed"), 2), (key(mode="pinned_host"), 3), (key(direction=D2H), 2),
    (key("cpu"), 3), (key("cpu", op="seed"), 7), (key("cpu", mode="pinned_host"), 4),
])  # fmt: skip
def test_host_memory_estimates(series: SeriesKey, batches: int) -> None:
    assert BACKEND.host_bytes(series.at(BATCH)) == batches * N


def test_out_of_memory_is_a_memory_error_or_xlas_resource_exhausted() -> None:
    assert BACKEND.is_out_of_memory(MemoryError())
    assert BACKEND.is_out_of_memory(RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 50331648 bytes."))
    assert not BACKEND.is_out_of_memory(RuntimeError("INTERNAL: CUDA error: an illegal memory access was encountered"))


def test_the_environment_records_versions_plugins_pinned_memory_and_each_gpu(fake_jax, monkeypatch) -> None:
    versions = {"jax-cuda12-plugin": "0.4.35"}

    def version(name: str) -> str:
        if name not in versions:
            raise importlib.metadata.PackageNotFoundError(name)
        return versions[name]

    monkeypatch.setattr(importlib.metadata, "version", version)
    jax = fake_jax.default
    jax.gpus[1] = Device("gpu", 1, "NVIDIA H200", ("device",))
    assert BACKEND.environment() == {
        "version": "0.4.35", "jaxlib": "0.4.36", "backend": "gpu", "cuda_plugins": {"jax-cuda12-plugin": "0.4.35"},
        "pinned_host": True, "devices": [{"id": "cuda:0", "kind": "cuda", "name": H100},
                                         {"id": "cuda:1", "kind": "cuda", "name": "NVIDIA H200"}],
    }  # fmt: skip
    jax.gpus[0], jax.gpus[1] = Device("gpu", 0, H100, ("device",)), OldDevice()  # type: ignore[call-overload]
    versions["jax-cuda13-plugin"] = "0.5.0"
    environment = BACKEND.environment()
    assert environment["pinned_host"] is False and environment["devices"][1] == {"id": "cuda:1", "kind": "cuda", "name": "CUDA GPU"}
    assert environment["cuda_plugins"] == {"jax-cuda12-plugin": "0.4.35", "jax-cuda13-plugin": "0.5.0"}
    fake_jax(gpus=0)
    monkeypatch.setitem(sys.modules, "jaxlib", types.ModuleType("jaxlib"))  # one that does not say its version
    assert BACKEND.environment() | {"cuda_plugins": None} == {
        "version": "0.4.35", "jaxlib": None, "backend": "cpu", "cuda_plugins": None, "pinned_host": None, "devices": []}  # fmt: skip


# --- host to device ----------------------------------------------------------------------------------------------------


@pytest.fixture
def sources(monkeypatch) -> list[tuple[Any, ...]]:
    """The make_source calls the paths make, as (shape, keyword arguments)."""
    calls: list[tuple[Any, ...]] = []
    real = jaxpath.make_source

    def make_source(*args: Any, **kwargs: Any) -> np.ndarray:
        calls.append((args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(jaxpath, "make_source", make_source)
    return calls


def prepare(series: SeriesKey, jax: FakeJax) -> Any:
    transfer = BACKEND.prepare(series.at(BATCH), {})
    for name in ("host", "pinned", "expected", "on_device"):
        if getattr(transfer, name, None) is not None:
            jax.names[id(getattr(transfer, name))] = name
    jax.log.clear()
    return transfer


@pytest.mark.parametrize(("series", "aligned", "offset"), [
    (key(), False, None), (key(host_buffer="aligned"), True, None), (key("cpu"), False, GLIBC_LARGE_OFFSET),
    (key("cpu", host_buffer="aligned"), True, None), (key(mode="pinned_host"), False, None),
])  # fmt: skip
def test_the_source_is_placed_as_its_host_buffer_and_device_say(jax, sources, series, aligned, offset) -> None:
    transfer = prepare(series, jax)
    assert sources == [(((BATCH, *SHAPE),), {"aligned": aligned, "offset": offset})]
    assert isinstance(transfer, JaxTransfer) and transfer.label == series.label() and transfer.seed is False
    assert transfer.device is jaxpath.jax_device(series.device)
    if offset is not None:
        assert address_offset(transfer.host) == offset


def test_device_put_copies_the_numpy_batch_to_the_device_and_waits(jax) -> None:
    transfer = prepare(key(), jax)
    assert transfer.pinned is None and transfer.target is jax.gpus[1] and transfer.host_offset == address_offset(transfer.host)
    transfer()
    assert jax.log == [("device_put", "host", "cuda:1", "device"), ("block_until_ready", "Array")]
    moved, result = transfer._run()
    assert result is None and moved.devices() == {jax.gpus[1]} and np.array_equal(moved.data, transfer.host)


def test_the_seed_op_casts_on_the_device_and_fetches_the_first_pixel(jax) -> None:
    transfer = prepare(key(op="seed"), jax)
    assert transfer.seed is True
    moved, result = transfer._run()
    assert jax.log == [("device_put", "host", "cuda:1", "device"), ("fetch", "Array")]  # the fetch is the wait
    assert result.dtype == np.float32 and np.array_equal(result, transfer.host[0, 0].astype(np.float32))
    transfer.verify()


def test_the_pinned_host_mode_stages_once_in_pinned_memory_and_copies_from_there(jax) -> None:
    transfer = prepare(key(mode="pinned_host"), jax)
    assert transfer.in_pinned.device is jax.gpus[1] and transfer.in_pinned.memory_kind == "pinned_host"
    assert transfer.target.device is jax.gpus[1] and transfer.target.memory_kind == "device"
    assert transfer.pinned.sharding.memory_kind == "pinned_host" and np.array_equal(transfer.pinned.data, transfer.host)
    assert transfer.host_span() == (transfer.pinned.unsafe_buffer_pointer(), N)
    transfer()
    assert jax.log == [("device_put", "pinned", "cuda:1", "device"), ("block_until_ready", "Array")]
    jax.log.clear()
    transfer.verify()  # new bytes in the source: staged again before the check
    assert jax.log[:2] == [("device_put", "host", "cuda:1", "pinned_host"), ("block_until_ready", "Array")]


def verify_fails(transfer: Any, message: str) -> None:
    with pytest.raises(VerificationError) as failed:
        transfer.verify()
    assert str(failed.value) == message


def test_verification_fails_the_warm_up_bytes_delivered_again(jax, monkeypatch) -> None:
    for series in (key(), key(mode="pinned_host")):
        transfer = prepare(series, jax)
        transfer.verify()  # the path itself passes
        stale, _ = transfer._run()
        fill_pattern(stale.data)  # what warm-up delivered
        monkeypatch.setattr(transfer, "_run", lambda stale=stale: (stale, None))
        verify_fails(transfer, f"{series.label()}: {N} of {N} bytes differ from the source (the first at byte 0); the transfer"
                               " did not deliver the data")  # fmt: skip


def test_verification_fails_a_wrong_seed_a_wrong_device_and_a_wrong_memory(jax, monkeypatch) -> None:
    seed = prepare(key(op="seed"), jax)
    real = seed._run
    monkeypatch.setattr(seed, "_run", lambda: (real()[0], np.zeros((4, 3), np.float32)))
    verify_fails(seed, "jax/device_put/seed@cuda:1 result: 12 of 12 checked values differ from the source; the transfer did not"
                       " deliver the data")  # fmt: skip
    elsewhere = prepare(key(), jax)
    monkeypatch.setattr(elsewhere, "_run", lambda: (jax.device_put(elsewhere.host, jax.gpus[0]), None))
    verify_fails(elsewhere, "jax/device_put/copy@cuda:1: the result is on {CudaDevice(id=0)}, not on cuda:1")
    pinned = prepare(key(mode="pinned_host"), jax)
    monkeypatch.setattr(pinned, "_run", lambda: (jax.device_put(pinned.host, pinned.in_pinned), None))
    verify_fails(pinned, "jax/pinned_host/copy@cuda:1: the result is in pinned_host memory, not the device's")


def test_verification_fails_a_result_that_aliases_its_source_and_passes_a_copy(jax) -> None:
    transfer = prepare(key("cpu", host_buffer="aligned"), jax)  # the stand-in wraps it, as JAX on the CPU does
    verify_fails(transfer, "jax/device_put/copy+aligned@cpu: the result shares memory with the NumPy source; nothing was copied")
    prepare(key("cpu"), jax).verify()


def test_closing_lets_go_of_every_buffer(jax) -> None:
    transfer = prepare(key(mode="pinned_host"), jax)
    transfer.close()
    assert transfer.host is None and transfer.device is None and transfer.pinned is None
    back = prepare(key(direction=D2H), jax)
    back()
    back.close()
    assert back.on_device is None and back.expected is None and back.moved is None


# --- device to host ----------------------------------------------------------------------------------------------------


def test_d2h_fetches_a_fresh_device_copy_each_call(jax, sources) -> None:
    back = prepare(key(direction=D2H), jax)
    assert isinstance(back, JaxBack) and back.label == "jax/device_put/copy/d2h@cuda:1" and back.moved is None
    assert sources == [(((BATCH, *SHAPE),), {})] and back.device is jax.gpus[1]
    assert back.on_device.devices() == {jax.gpus[1]} and np.array_equal(back.on_device.data, back.expected)
    back()
    assert jax.log == [("jit", "on_device"), ("fetch", "Array")]
    first = back.moved
    back()
    assert np.array_equal(back.moved, back.expected) and back.moved.ctypes.data != first.ctypes.data
    back.verify()
    assert back.on_device.devices() == {jax.gpus[1]} and np.array_equal(back.moved, back.expected)


def test_d2h_verification_fails_stale_device_bytes_and_a_fetch_of_the_source_itself(jax) -> None:
    back = prepare(key(direction=D2H), jax)
    warm = back.fresh_copy(back.on_device)  # holds warm-up's bytes
    back.fresh_copy = lambda x: warm
    verify_fails(back, f"jax/device_put/copy/d2h@cuda:1 (d2h): {N} of {N} bytes differ from the source (the first at byte 0);"
                       " the transfer did not deliver the data")  # fmt: skip
    same = prepare(key(direction=D2H), jax)

    class Source:  # fetched as the source array itself
        def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
            return same.expected

    same.fresh_copy = lambda x: Source()
    verify_fails(same, "jax/device_put/copy/d2h@cuda:1: the fetch handed back the source array; nothing was copied")
