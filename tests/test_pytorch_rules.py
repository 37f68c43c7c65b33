"""PyTorch's paths (backends/pytorch.py) rule by rule: .to(device) from pageable and pinned memory, pin_memory per
call and alone, torch.tensor's fresh copy, copy_ into a preallocated destination, d2h and bidir, with every call into
a CUDA stand-in as strict as real torch (CudaTorch below) written down in order: which call, on which tensor, with
which arguments (non_blocking, copy, device, dtype, pin_memory), on which stream; the device's events and wait, the
streamed hold and its bounds; the bytes each verification sends and the chunks it reads back, and each way it fails;
the DataLoader paths; the MPS paths through the Apple GPU stand-in (fake_mps); each skip reason, description, host
estimate and out-of-memory rule word for word; the devices and environment; and a few real copies with the CPU build."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from conftest import needs_torch
from fake_mps import FakeDevice, FakeTorch
from xferbench.core.errors import NotSupportedHere, VerificationError
from xferbench.core.spec import BIDIR, D2H, H2D, PER_CALL, PIPELINE_MODES, STREAMED, SeriesKey
from xferbench.measuring.backends import pytorch
from xferbench.measuring.backends.base import SeriesInfo
from xferbench.measuring.backends.pipeline import PIPELINE_CLOCK
from xferbench.measuring.backends.pytorch import (MPS_COPY, MPS_INTEL_COPY, MPS_NO_DEVICE_CLOCK, MPS_PINNED_COPY, CycledSampler,
                                                  ItemDataset, TorchBack, TorchBackend, TorchLoader, TorchTransfer)  # fmt: skip
from xferbench.measuring.buffers import fill_pattern

SHAPE = (4, 4, 3)  # 48 bytes an item
BATCH = 4
N = 192  # bytes a batch
BATCH_SHAPE = (BATCH, *SHAPE)
CUDA0, CUDA1, MPS, CPU = FakeDevice("cuda:0"), FakeDevice("cuda:1"), FakeDevice("mps"), FakeDevice("cpu")
U8, F32 = np.uint8, np.float32
NB = {"non_blocking": True}
DIFFER = f"{N} of {N} bytes differ from the source (the first at byte 0); the transfer did not deliver the data"
FIX = "pinned host memory on MPS needs PyTorch 2.14 or newer: pip install -U torch"
OLD_PIN = f"PyTorch 2.13.0's pin_memory on a Mac gives a tensor on mps:0 with is_pinned() False, not pinned host memory; {FIX}"


# A CUDA (and MPS) PyTorch as strict as the calls the paths make: tensors are NumPy arrays on a device, every call is
# written down in `log`, events must be created with enable_timing=True, recorded and completed before elapsed_time,
# a pinned tensor is a CPU one, a CUDA tensor has no NumPy view, tensors on two devices do not add, _sleep takes an int.


class Stream:
    def __init__(self, name: str) -> None:
        self.name = name


class Event:
    def __init__(self, torch: CudaTorch, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False,
                 external: bool = False) -> None:  # fmt: skip
        self.torch, self.n, self.enable_timing = torch, torch.events, enable_timing
        self.stream: str | None = None
        self.done = False
        torch.events += 1
        torch.log.append(("Event", self.n, enable_timing))

    def record(self, stream: Stream | None = None) -> None:
        self.stream = stream.name if stream is not None else self.torch.current
        self.done = False
        self.torch.recorded.append(self)
        self.torch.log.append(("record", self.n, self.stream))

    def query(self) -> bool:
        self.torch.log.append(("query", self.n))
        return self.torch.queries.pop(0) if self.torch.queries else True

    def synchronize(self) -> None:
        self.torch.log.append(("event.synchronize", self.n))
        last = max(i for i, event in enumerate(self.torch.recorded) if event is self)
        for event in self.torch.recorded[: last + 1]:
            if event.stream == self.stream:
                event.done = True

    def elapsed_time(self, end: Event) -> float:
        if not (self.enable_timing and end.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self.stream is None or end.stream is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        if not (self.done and end.done):
            raise RuntimeError("CUDA error: device not ready")
        self.torch.log.append(("elapsed_time", self.n, end.n))
        return self.torch.ms.get(self.n, 250.0 * (self.n + 1))


class Tensor:
    def __init__(self, torch: CudaTorch, array: np.ndarray, device: FakeDevice, pinned: bool = False, tag: str = "") -> None:
        self.torch, self.array, self.device, self.pinned, self.tag = torch, array, device, pinned, tag
        self.frozen = False  # a copy_ into it writes nothing: a copy that did not happen

    def desc(self) -> str:
        return f"{self.device}{'+pinned' if self.pinned else ''}{' ' + self.tag if self.tag else ''}"

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    def _like(self, array: np.ndarray, device: FakeDevice | None = None, pinned: bool | None = None) -> Tensor:
        return Tensor(self.torch, array, device or self.device, self.pinned if pinned is None else pinned, self.tag)

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        self.torch.log.append(("to", self.desc(), args, kwargs))
        return self._to(*args, **kwargs)

    def _to(self, device: Any = None, dtype: Any = None, non_blocking: bool = False, copy: bool = False) -> Tensor:
        if isinstance(device, type):  # .to(dtype)
            device, dtype = None, device
        target = self.torch.placed(device) if device is not None else self.device
        if target == self.device and dtype is None and not copy:
            return self  # as PyTorch: the tensor itself
        array = self.array.astype(dtype) if dtype is not None else self.array.copy()
        return self._like(array, target, pinned=False)

    def copy_(self, src: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        self.torch.log.append(("copy_", self.desc(), src.desc(), args, kwargs, self.torch.current))
        if set(kwargs) - {"non_blocking"} or len(args) > 1:
            raise TypeError("copy_() takes src and non_blocking only")
        try:
            source = np.broadcast_to(src.array, self.array.shape)
        except ValueError:
            raise RuntimeError(f"The size of tensor a {list(self.shape)} must match the size of tensor b {list(src.shape)}") from None
        if not self.frozen:
            self.array[...] = source
        return self

    def type(self, dtype: Any) -> Tensor:
        self.torch.log.append(("type", self.desc(), dtype))
        return self._like(self.array.astype(dtype), pinned=False)

    def __getitem__(self, index: Any) -> Tensor:
        return self._like(np.asarray(self.array[index]))

    def __add__(self, other: Tensor) -> Tensor:
        if other.device != self.device:
            raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices,"
                               f" {self.device} and {other.device}!")  # fmt: skip
        return self._like(self.array + other.array, pinned=False)

    def cpu(self) -> Tensor:
        self.torch.log.append(("cpu", self.desc()))
        return self if self.device.type == "cpu" else self._like(self.array.copy(), CPU, pinned=False)

    def numpy(self) -> np.ndarray:
        if self.device.type != "cpu":
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host"
                            " memory first.")  # fmt: skip
        return self.array

    def data_ptr(self) -> int:
        return self.array.ctypes.data

    def numel(self) -> int:
        return self.array.size

    def reshape(self, *shape: Any) -> Tensor:
        return self._like(self.array.reshape(*shape))

    def zero_(self) -> Tensor:
        self.torch.log.append(("zero_", self.desc()))
        self.array[...] = 0
        return self

    def is_pinned(self) -> bool:
        return self.pinned

    def pin_memory(self) -> Tensor:
        self.torch.log.append(("pin_memory", self.desc()))
        if self.device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.device}' tensor: only dense CPU tensors can be pinned")
        if self.pinned:
            return self
        return Tensor(self.torch, self.array.copy(), CPU, pinned=not self.torch.pin_gives_pageable)


class Generator:
    def __init__(self, torch: CudaTorch) -> None:
        self.torch, self.seed = torch, None

    def manual_seed(self, seed: int) -> Generator:
        self.torch.log.append(("manual_seed", seed))
        self.seed = seed
        return self


class Batches:
    """A DataLoader's iterator: each batch the sampler's next items, stacked (and pinned where asked)."""

    def __init__(self, loader: DataLoader) -> None:
        self.loader, self.indices = loader, iter(loader.sampler)

    def __iter__(self) -> Batches:
        return self

    def __next__(self) -> Tensor:
        loader = self.loader
        items = [loader.dataset[next(self.indices)] for _ in range(loader.batch_size)]
        batch = np.stack([item.array for item in items])
        return Tensor(loader.torch, batch, CPU, pinned=loader.pin_memory and not loader.torch.pin_gives_pageable)


class WorkerBatches(Batches):
    def _shutdown_workers(self) -> None:
        self.loader.torch.log.append(("shutdown",))


class DataLoader:
    def __init__(self, torch: CudaTorch, dataset: Any, batch_size: int = 1, sampler: Any = None, num_workers: int = 0,
                 pin_memory: bool = False, worker_init_fn: Any = None, prefetch_factor: int | None = None) -> None:  # fmt: skip
        if prefetch_factor is not None and num_workers == 0:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to enable"
                             " multiprocessing.")  # fmt: skip
        self.torch, self.dataset, self.batch_size, self.sampler = torch, dataset, batch_size, sampler
        self.num_workers, self.pin_memory = num_workers, pin_memory

    def __iter__(self) -> Batches:
        self.torch.log.append(("iter",))
        return WorkerBatches(self) if self.num_workers else Batches(self)


class CudaTorch:
    """torch with `gpus` CUDA devices (and MPS where `mps`): the calls the paths make, each written down."""

    float32, float64, uint8 = np.float32, np.float64, np.uint8
    __version__ = "2.14.1+cu130"

    class OutOfMemoryError(RuntimeError):
        pass

    def __init__(self, gpus: int = 2, mps: bool = False) -> None:
        self.gpus, self.mps_available = gpus, mps
        self.log: list[tuple[Any, ...]] = []
        self.device_index = 0  # the current CUDA device
        self.current = "default"  # the current stream's name
        self.events = self.streams = 0
        self.recorded: list[Event] = []
        self.queries: list[bool] = []  # what each Event.query() answers in turn (then True: the work is done)
        self.ms: dict[int, float] = {}  # elapsed_time by start event; else 250 ms times (its number + 1)
        self.pin_gives_pageable = False
        self.version = SimpleNamespace(cuda="13.0")
        self.props = [SimpleNamespace(name=f"GPU {i}", total_memory=(i + 1) * 2**30, major=9, minor=i) for i in range(gpus)]
        torch = self

        @contextmanager
        def stream(chosen: Stream) -> Iterator[None]:
            before, torch.current = torch.current, chosen.name
            torch.log.append(("enter", chosen.name))
            try:
                yield
            finally:
                torch.log.append(("exit", chosen.name))
                torch.current = before

        def new_stream(device: Any = None, priority: int = 0) -> Stream:
            torch.log.append(("Stream", device, priority))
            torch.streams += 1
            return Stream(f"s{torch.streams - 1}")

        def synchronize(*args: Any) -> None:
            torch.log.append(("cuda.synchronize", args))
            for event in torch.recorded:
                event.done = True

        def sleep(cycles: int) -> None:
            if not isinstance(cycles, int):
                raise TypeError(f"_cuda_sleep(): argument 'cycles' must be int, not {type(cycles).__name__}")
            torch.log.append(("_sleep", cycles, torch.current))

        def set_device(device: Any) -> None:
            torch.log.append(("set_device", device))
            torch.device_index = FakeDevice(device).index or 0

        def get_device_name(device: Any = None) -> str:
            torch.log.append(("get_device_name", device))
            return f"GPU {FakeDevice(device).index}"

        self.cuda = SimpleNamespace(
            device_count=lambda: gpus, is_available=lambda: gpus > 0, set_device=set_device, synchronize=synchronize,
            get_device_name=get_device_name, get_device_properties=lambda index: torch.props[index], _sleep=sleep,
            Event=lambda *a, **k: Event(torch, *a, **k), Stream=new_stream, stream=stream, OutOfMemoryError=CudaTorch.OutOfMemoryError,
        )  # fmt: skip
        self.mps = SimpleNamespace(synchronize=lambda: torch.log.append(("mps.synchronize",)))
        self.backends = SimpleNamespace(mps=SimpleNamespace(is_available=lambda: mps))
        self.utils = SimpleNamespace(data=SimpleNamespace(DataLoader=self._data_loader))
        self.linalg = SimpleNamespace(qr=self._qr)

    def placed(self, device: Any) -> FakeDevice:
        target = FakeDevice(device)
        if target.type == "cuda":
            index = self.device_index if target.index is None else target.index
            if index >= self.gpus:
                raise RuntimeError("CUDA error: invalid device ordinal")
            return FakeDevice(f"cuda:{index}")
        if target.type == "mps":
            if not self.mps_available:
                raise RuntimeError("MPS backend is not available")
            return FakeDevice("mps:0")
        if target.type != "cpu":
            raise NotImplementedError(f"Could not run 'aten::empty.memory_format' with arguments from the '{target.type}' backend")
        return CPU

    def device(self, spec: Any) -> FakeDevice:
        return FakeDevice(spec)

    def get_num_threads(self) -> int:
        return 7

    def from_numpy(self, array: np.ndarray) -> Tensor:
        if not isinstance(array, np.ndarray):
            raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
        self.log.append(("from_numpy", array.ctypes.data))
        return Tensor(self, array, CPU)

    def tensor(self, array: np.ndarray) -> Tensor:
        self.log.append(("tensor", array.ctypes.data))
        return Tensor(self, np.array(array), CPU)

    def empty(self, *size: Any, **kwargs: Any) -> Tensor:
        self.log.append(("empty", size, kwargs))
        return self._make(np.empty, size, **kwargs)

    def zeros(self, *size: Any, **kwargs: Any) -> Tensor:
        self.log.append(("zeros", size, kwargs))
        return self._make(np.zeros, size, **kwargs)

    def _make(self, make: Any, size: tuple[Any, ...], dtype: Any = np.float32, device: Any = None, pin_memory: bool = False) -> Tensor:
        shape = size[0] if len(size) == 1 and isinstance(size[0], tuple) else size
        where = self.placed(device if device is not None else "cpu")
        if pin_memory and where.type != "cpu":
            raise RuntimeError("Only dense CPU tensors can be pinned")
        if pin_memory and not (self.gpus or self.mps_available):
            raise RuntimeError("Found no NVIDIA driver on your system.")
        return Tensor(self, make(shape, dtype), where, pinned=pin_memory and not self.pin_gives_pageable)

    def Generator(self) -> Generator:  # noqa: N802 - torch's own name
        return Generator(self)

    def randn(self, *size: int, generator: Generator | None = None) -> Tensor:
        self.log.append(("randn", size, generator.seed if generator else None))
        return Tensor(self, np.random.default_rng(generator.seed if generator else None).standard_normal(size).astype(np.float32), CPU)

    def _qr(self, matrix: Tensor) -> tuple[Tensor, Tensor]:
        self.log.append(("qr", matrix.desc()))
        q, r = np.linalg.qr(matrix.array)
        return matrix._like(q.astype(np.float32)), matrix._like(r.astype(np.float32))

    def mm(self, a: Tensor, b: Tensor) -> Tensor:
        if a.device != b.device:
            raise RuntimeError("Expected all tensors to be on the same device")
        self.log.append(("mm", a.desc(), b.desc()))
        return a._like(a.array @ b.array)

    def _data_loader(self, dataset: Any, **kwargs: Any) -> DataLoader:
        named = {"sampler": lambda v: type(v).__name__, "worker_init_fn": lambda v: v.__name__}  # what each is, not its object
        self.log.append(("DataLoader", type(dataset).__name__, {k: named.get(k, lambda v: v)(v) for k, v in kwargs.items()}))
        return DataLoader(self, dataset, **kwargs)


def key(mode: str = "pageable", op: str = "copy", device: str = "cuda:0", buffer: str = "", method: str = PER_CALL,
        direction: str = H2D) -> SeriesKey:  # fmt: skip
    return SeriesKey("torch", mode, op, device, SHAPE, buffer, method, direction)


@pytest.fixture
def torch(monkeypatch: pytest.MonkeyPatch) -> CudaTorch:
    """The CUDA stand-in, with MPS too, as the torch the paths import; the machine's names fixed."""
    fake = CudaTorch(gpus=2, mps=True)
    monkeypatch.setattr(pytorch, "_torch", lambda: fake)
    monkeypatch.setattr(pytorch, "cpu_name", lambda: "Test CPU")
    monkeypatch.setattr(pytorch, "apple_gpu_name", lambda: "Test Apple GPU")
    monkeypatch.setattr(pytorch, "apple_silicon", lambda: True)
    return fake


def clock(monkeypatch: pytest.MonkeyPatch, *times: float) -> None:
    """time.perf_counter as the module reads it, answering `times` in turn."""
    answers = list(times)
    monkeypatch.setattr(pytorch, "time", SimpleNamespace(perf_counter=lambda: answers.pop(0)))


def pattern(variant: int, shape: tuple[int, ...] = BATCH_SHAPE) -> np.ndarray:
    """The bytes fill_pattern writes for `variant`."""
    out = np.empty(shape, np.uint8)
    fill_pattern(out, variant)
    return out


def staged_reads(transfer: Any, monkeypatch: pytest.MonkeyPatch) -> list[np.ndarray]:
    """The staging buffers the transfer's read-backs make, kept as they are made."""
    kept: list[np.ndarray] = []
    real = transfer._read_back

    def read_back(moved: Any) -> Any:
        read, staging = real(moved)
        kept.append(staging)
        return read, staging

    monkeypatch.setattr(transfer, "_read_back", read_back)
    return kept


def since(torch: CudaTorch) -> list[tuple[Any, ...]]:
    """The calls written down so far, and a fresh log."""
    out, torch.log = torch.log, []
    return out


# What the backend declares, and its small pure rules ---------------------------------------------------------------


def test_the_backend_declares_its_modes_ops_buffers_and_constants() -> None:
    """The names, modes, ops and host buffers the planner reads, and the hold's bounds, as set."""
    backend = TorchBackend()
    assert (backend.name, backend.title, backend.module, backend.extra, backend.isolated) == ("torch", "PyTorch", "torch", "torch", True)
    assert backend.default_modes == ("pageable", "pinned", "pinned_into")
    assert backend.modes == ("pageable", "pinned", "pinned_into", "pin_per_call", "tensor", "pin", "pageable_into", *PIPELINE_MODES["torch"])
    assert backend.ops == ("copy", "seed") and backend.host_buffers == ("numpy", "aligned")
    assert pytorch.PINNED_MODES == ("pinned", "pinned_into") and pytorch.PIN_MODES == ("pinned", "pinned_into", "pin_per_call", "pin")
    assert (pytorch.MPS_PINNED_SINCE, pytorch.HOLD_TRIES, pytorch.HOLD_MARGIN_S, pytorch.HOLD_MAX_S) == ("2.14", 4, 0.0005, 2.0)
    assert pytorch.ENQUEUE_GUESS_S == 50e-6


def test_what_every_mps_series_says_of_its_copy_and_its_clock_word_for_word() -> None:
    """The notes and the device-clock reason every MPS series carries."""
    assert MPS_NO_DEVICE_CLOCK == ("torch.mps.event.Event is not a device clock: record() commits a command buffer of its own and its times"
                                   " are CPU times in Metal's callbacks, so the host clock alone times MPS calls")  # fmt: skip
    assert MPS_COPY == ("a copy within unified memory: PyTorch wraps the host tensor's pages in a Metal buffer (newBufferWithBytesNoCopy)"
                        " and blits between it and the MPS tensor's own buffer, so no bus is crossed; the ceiling is the chip's memory"
                        " bandwidth, of which a copy uses twice its MB/s (a read and a write)")  # fmt: skip
    assert MPS_PINNED_COPY == ("a copy within unified memory: the pinned tensor is a CPU view of a shared Metal buffer, which PyTorch"
                               " blits from or into directly (no newBufferWithBytesNoCopy), so no bus is crossed; the ceiling is the"
                               " chip's memory bandwidth, of which a copy uses twice its MB/s (a read and a write)")  # fmt: skip
    assert MPS_INTEL_COPY == ("a copy to the GPU of an Intel Mac: no unified memory there (the GPU is an AMD card over PCIe, or Intel"
                              " graphics), so neither Apple silicon's memory bandwidth nor a recorded link is its ceiling")  # fmt: skip


def test_each_mode_starts_from_its_own_host_buffers() -> None:
    """A loader from NumPy items, a pinned mode from its pinned source, every other mode from NumPy or aligned memory."""
    backend = TorchBackend()
    assert {mode: backend.sources(mode) for mode in backend.modes} == {
        "pageable": ("numpy", "aligned"), "pinned": ("pinned",), "pinned_into": ("pinned",), "pin_per_call": ("numpy", "aligned"),
        "tensor": ("numpy", "aligned"), "pin": ("numpy", "aligned"), "pageable_into": ("numpy", "aligned"), "loader": ("numpy",),
        "loader_workers": ("numpy",),
        "loader_pin": ("numpy",), "loader_pin_workers": ("numpy",)}  # fmt: skip


def test_pageable_goes_both_ways_pinned_into_every_way_and_the_rest_host_to_device() -> None:
    """The directions each mode copies in."""
    backend = TorchBackend()
    assert backend.directions("pageable") == (H2D, D2H) and backend.directions("pinned_into") == (H2D, D2H, BIDIR)
    assert backend.directions("pageable_into") == (H2D, D2H)
    assert [backend.directions(mode) for mode in ("pinned", "pin_per_call", "tensor", "pin", "loader")] == [(H2D,)] * 5


def test_a_pinned_block_is_the_next_power_of_two_and_at_least_one_byte() -> None:
    """PyTorch's caching host allocator rounds each pinned block up to a power of two."""
    sizes = {0: 1, 1: 1, 2: 2, 3: 4, 4: 4, 5: 8, 192: 256, 256: 256, 257: 512, 2**20: 2**20, 2**20 + 1: 2**21}
    assert {n: pytorch.pinned_size(n) for n in sizes} == sizes


def test_the_pci_address_is_cudas_form_and_none_where_a_part_is_missing() -> None:
    """Domain, bus and device in hex as CUDA writes them; a property this PyTorch lacks gives no address."""
    props = SimpleNamespace(pci_domain_id=1, pci_bus_id=0x1B, pci_device_id=3)
    assert pytorch._pci_bus_id(props) == "0001:1b:03.0"
    for name in ("pci_domain_id", "pci_bus_id", "pci_device_id"):
        assert pytorch._pci_bus_id(SimpleNamespace(**{**vars(props), name: None})) is None
        partial = dict(vars(props))
        del partial[name]
        assert pytorch._pci_bus_id(SimpleNamespace(**partial)) is None


@needs_torch
def test_the_module_imports_torch_itself_only_when_asked() -> None:
    """_torch() is the real torch module."""
    import torch as real

    assert pytorch._torch() is real


# Devices, environment and out-of-memory --------------------------------------------------------------------------


def test_the_devices_are_the_cpu_each_cuda_gpu_and_mps_where_available(monkeypatch: pytest.MonkeyPatch) -> None:
    """cpu first, then cuda:0 ... in order, then mps where torch.backends.mps says it is available."""
    for gpus, mps, devices in ((2, False, ["cpu", "cuda:0", "cuda:1"]), (0, True, ["cpu", "mps"]), (1, True, ["cpu", "cuda:0", "mps"])):
        monkeypatch.setattr(pytorch, "_torch", lambda fake=CudaTorch(gpus, mps): fake)
        assert TorchBackend().devices() == devices


def test_the_environment_records_each_gpus_properties_and_the_apple_gpu(torch: CudaTorch) -> None:
    """Name, memory, capability, uuid (None where absent or empty) and PCI address of each GPU, then the Apple GPU."""
    torch.props[0].uuid, torch.props[0].pci_domain_id, torch.props[0].pci_bus_id, torch.props[0].pci_device_id = "GPU-ab", 0, 0x1B, 0
    torch.props[1].uuid = ""
    # an NVIDIA GPU: the runtime (the driver's CUDA) and the host link (PCIe or NVLink-C2C) come from NVML at capture
    assert TorchBackend().environment() == {"version": "2.14.1+cu130", "cuda": "13.0", "threads": 7, "devices": [
        {"id": "cuda:0", "kind": "cuda", "name": "GPU 0", "memory_bytes": 2**30, "capability": "9.0", "uuid": "GPU-ab",
         "pci_bus_id": "0000:1b:00.0", "vendor": "NVIDIA"},
        {"id": "cuda:1", "kind": "cuda", "name": "GPU 1", "memory_bytes": 2**31, "capability": "9.1", "uuid": None, "pci_bus_id": None,
         "vendor": "NVIDIA"},
        {"id": "mps", "kind": "mps", "name": "Test Apple GPU"}]}  # fmt: skip
    del torch.props[1].uuid
    torch.backends.mps.is_available = lambda: False
    devices = TorchBackend().environment()["devices"]
    assert [d["id"] for d in devices] == ["cuda:0", "cuda:1"] and devices[1]["uuid"] is None


def test_out_of_memory_is_pytorchs_own_error_a_memory_error_or_a_runtime_error_saying_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.OutOfMemoryError where this PyTorch has it, else torch.cuda's; MemoryError; a RuntimeError naming it."""

    class TopLevel(Exception):
        pass

    class CudaOnly(Exception):
        pass

    fake = SimpleNamespace(OutOfMemoryError=TopLevel, cuda=SimpleNamespace(OutOfMemoryError=CudaOnly))
    monkeypatch.setattr(pytorch, "_torch", lambda: fake)
    backend = TorchBackend()
    assert backend.is_out_of_memory(TopLevel()) and not backend.is_out_of_memory(CudaOnly())
    assert backend.is_out_of_memory(MemoryError()) and backend.is_out_of_memory(RuntimeError("CUDA Out Of Memory. Tried to allocate 2 GiB"))
    assert not backend.is_out_of_memory(RuntimeError("device-side assert triggered"))
    assert not backend.is_out_of_memory(ValueError("out of memory"))  # a RuntimeError only
    del fake.OutOfMemoryError
    assert backend.is_out_of_memory(CudaOnly()) and not backend.is_out_of_memory(TopLevel())


@needs_torch
def test_real_pytorchs_out_of_memory_errors_are_recognised() -> None:
    """With the real torch: its OutOfMemoryError, MPS's wording, and nothing else."""
    import torch as real

    backend = TorchBackend()
    assert backend.is_out_of_memory(real.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"))
    assert backend.is_out_of_memory(RuntimeError("MPS backend out of memory (MPS allocated: 1 GB)"))
    assert not backend.is_out_of_memory(RuntimeError("device-side assert triggered"))


# Skip reasons, streamed reasons --------------------------------------------------------------------------------------

PINNED_SOURCE = "a pinned source is what torch's pinned and pinned_into modes measure; choose them with --mode"
NEEDS_CUDA = "pinned host memory needs a CUDA device; on the CPU there is no device copy to pin for"
NO_MPS_STREAMS = ("torch bidir runs each direction on a CUDA stream of its own; torch.mps has no streams (PyTorch queues every MPS"
                  " copy on one), so on mps the directions are measured one at a time: -d h2d -d d2h")  # fmt: skip
PIN_SEED = "torch pin times x.pin_memory() alone: there is no device result for the seed op to fetch"
LOADER_CPU_PIN = ("the DataLoader pins only for an accelerator (on the CPU it warns and leaves pin_memory off), so a pinned loader"
                  " series would time the unpinned one; loader and loader_workers run on the CPU")  # fmt: skip
LOADER_MPS_PIN = ("PyTorch's DataLoader turns pin_memory off on MPS (it warns 'not supported on MPS now'), so a pinned loader series"
                  " would time the unpinned one; loader and loader_workers run on MPS")  # fmt: skip
LOADER_SEED = "a pipeline series times the batches the pipeline delivers; the seed op is for the single-copy modes"


@pytest.mark.parametrize("series, reason", [
    (key("loader_pin", device="cpu"), LOADER_CPU_PIN), (key("loader_pin_workers", device="cpu"), LOADER_CPU_PIN),
    (key("loader_pin", device="mps"), LOADER_MPS_PIN), (key("loader_pin_workers", device="mps"), LOADER_MPS_PIN),
    (key("loader", "seed", "cuda:0"), LOADER_SEED), (key("loader_pin", "seed", "cpu"), LOADER_CPU_PIN),
    (key("loader", device="cpu"), None), (key("loader_workers", device="mps"), None), (key("loader_pin", device="cuda:0"), None),
    (key("loader_pin_workers", device="cuda:1"), None),
    (key("pageable", buffer="pinned"), PINNED_SOURCE), (key("tensor", device="cpu", buffer="pinned"), PINNED_SOURCE),
    (key("pinned", buffer="pinned"), None), (key("pinned_into", buffer="pinned"), None),
    (key("pinned", device="cpu"), NEEDS_CUDA), (key("pinned_into", device="cpu"), NEEDS_CUDA),
    (key("pin_per_call", device="cpu"), NEEDS_CUDA),
    (key("pin", "seed", "cpu"), NEEDS_CUDA), (key("pageable", device="cpu"), None), (key("tensor", "seed", "cpu"), None),
    (key("pinned_into", device="mps", direction=BIDIR), NO_MPS_STREAMS),
    (key("pinned_into", "seed", "mps", direction=BIDIR), NO_MPS_STREAMS),
    (key("pageable", device="mps", direction=BIDIR), None), (key("pinned_into", direction=BIDIR), None),
    (key("pinned_into", device="mps", direction=D2H), None),
    (key("pin", "seed"), PIN_SEED), (key("pin", "seed", "mps"), PIN_SEED), (key("pin"), None),
    (key("pageable", "seed", direction=D2H), "the seed op is the report's host-to-device expression; d2h times the copy alone"),
    (key("pinned_into", "seed", direction=BIDIR), "the seed op is the report's host-to-device expression; bidir times the copy alone"),
    (key("pageable", "seed"), None), (key("pinned_into", "seed", "mps"), None), (key("pageable", direction=D2H), None),
])  # fmt: skip
def test_each_skip_reason_word_for_word_and_the_first_that_applies_wins(series: SeriesKey, reason: str | None) -> None:
    """Loader rules first, then the pinned source, pinning on the CPU, bidir on MPS, pin's seed op, seed in d2h and bidir."""
    assert TorchBackend().skip_reason(series) == reason


def test_only_pinned_into_host_to_device_copies_on_cuda_can_be_streamed() -> None:
    """d2h and bidir first, then the mode and device, then the op; None for pinned_into's copy on any CUDA device."""
    backend = TorchBackend()
    per_call = "torch's d2h copies are timed per call only: only pinned_into's h2d copies are queued on a held stream"
    assert backend.streamed_reason(key("pinned_into", direction=D2H)) == per_call
    assert backend.streamed_reason(key("pinned_into", "seed", direction=BIDIR)) == per_call
    for mode, device in (("pageable", "cuda:0"), ("pinned", "cuda:1"), ("pinned_into", "mps"), ("pinned_into", "cpu")):
        assert backend.streamed_reason(key(mode, "seed", device)) == (
            f"torch/{mode} on {device} is timed per call only: only pinned_into on CUDA copies into one preallocated tensor, so only"
            " it can queue its copies on a held stream")  # fmt: skip
    said = "the seed op fetches its result to the host after every transfer, so it cannot be streamed"
    assert backend.streamed_reason(key("pinned_into", "seed", "cuda:1")) == said
    assert backend.streamed_reason(key("pinned_into")) is None and backend.streamed_reason(key("pinned_into", device="cuda")) is None


# What each series says it is ----------------------------------------------------------------------------------------

CUDA_SYNC, CPU_SYNC, MPS_SYNC = "torch.cuda.synchronize", "none needed: the CPU copy is synchronous", "torch.mps.synchronize"
FETCHED = "result fetched to the host with .cpu(), then "
CPU_PAGEABLE = ("on the CPU .to('cpu') returns the same tensor and copies nothing, so xferbench adds copy=True:"
                " torch.from_numpy(x).to('cpu', copy=True)")  # fmt: skip
CPU_TENSOR = "on the CPU this is torch.tensor's host copy of the NumPy array into a fresh tensor; .to('cpu') adds nothing"
D2H_CPU = "on the CPU .to('cpu') returns the same tensor, so xferbench adds copy=True: a host-to-host copy"
D2H_INTO = "pinned.copy_(device_tensor, non_blocking=True) into a preallocated pinned tensor"
D2H_PAGEABLE = "device_tensor.to('cpu'): a fresh pageable host tensor per call"
D2H_PAGEABLE_INTO = ("pageable.copy_(device_tensor) into a preallocated pageable host tensor, touched by the warm-up: no fresh pages"
                     " per call")  # fmt: skip
H2D_PAGEABLE_INTO = "dest.copy_(torch.from_numpy(x)) from pageable memory into a preallocated tensor"
BIDIR_NOTE = ("pinned_into both ways at once on two streams: the point's MB/s is both directions together, h2d and d2h MB/s each"
              " stream's own events")  # fmt: skip
PIN_NOTE = ("x.pin_memory() alone, no device copy: pin_per_call's first half, a copy into page-locked memory from PyTorch's caching"
            " host allocator once warm; pin time is the first call of each size, which allocated the block")  # fmt: skip
MPS_PIN_NOTE = ("x.pin_memory() alone, no device copy: a copy within unified memory into a shared Metal buffer from PyTorch's MPS"
                " pinned allocator; pin time is the first call of each size, which allocated the buffer")  # fmt: skip
THREADS = {"intra_op_threads": 7}
ON_MPS = {"device_clock": MPS_NO_DEVICE_CLOCK, "unified_memory": True}
HOLD = ("torch.cuda._sleep (a spin kernel), lengthened until the start event is still pending once every copy is queued, up to 2 s")


def info(name: str, transfer: str, sync: str, device_clock: str | None = None, params: dict[str, Any] | None = None,
         note: str | None = None, clock: str = "time.perf_counter") -> SeriesInfo:  # fmt: skip
    return SeriesInfo(name, transfer, clock, sync, device_clock, params or {}, note)


@pytest.mark.parametrize("series, said", [
    (key("pageable", device="cuda:1"), info("GPU 1", "host-to-device", CUDA_SYNC, "torch.cuda.Event")),
    (key("pinned", "seed"), info("GPU 0", "host-to-device", FETCHED + CUDA_SYNC, "torch.cuda.Event")),
    (key("pageable", device="cpu"), info("Test CPU", "host-to-host", CPU_SYNC, params={"intra_op_threads": 7}, note=CPU_PAGEABLE)),
    (key("tensor", "seed", "cpu"), info("Test CPU", "host-to-host", FETCHED + CPU_SYNC, params={"intra_op_threads": 7}, note=CPU_TENSOR)),
    (key("tensor"), info("GPU 0", "host-to-device", CUDA_SYNC, "torch.cuda.Event")),
    (key("pageable", device="cpu", direction=D2H), info("Test CPU", "host-to-host", CPU_SYNC, params=THREADS, note=D2H_CPU)),
    (key("pinned_into", device="cpu", direction=D2H), info("Test CPU", "host-to-host", CPU_SYNC, params=THREADS, note=D2H_CPU)),
    (key("pinned_into", direction=D2H), info("GPU 0", "device-to-host", CUDA_SYNC, "torch.cuda.Event", note=D2H_INTO)),
    (key("pageable", direction=D2H), info("GPU 0", "device-to-host", CUDA_SYNC, "torch.cuda.Event", note=D2H_PAGEABLE)),
    (key("pinned_into", direction=BIDIR), info("GPU 0", "bidirectional", CUDA_SYNC, note=BIDIR_NOTE)),
    (key("pageable_into", direction=D2H), info("GPU 0", "device-to-host", CUDA_SYNC, "torch.cuda.Event", note=D2H_PAGEABLE_INTO)),
    (key("pageable_into", device="cpu", direction=D2H), info("Test CPU", "host-to-host", CPU_SYNC, params=THREADS,
                                                             note=f"{D2H_PAGEABLE_INTO}; on the CPU a host-to-host copy")),
    (key("pageable_into", device="mps", direction=D2H), info("Test Apple GPU", "device-to-host", MPS_SYNC, params=ON_MPS,
                                                             note=f"on MPS {MPS_COPY}; {D2H_PAGEABLE_INTO}")),
    (key("pageable_into"), info("GPU 0", "host-to-device", CUDA_SYNC, "torch.cuda.Event", note=f"{H2D_PAGEABLE_INTO} on the device")),
    (key("pageable_into", device="cpu"), info("Test CPU", "host-to-host", CPU_SYNC, params=THREADS,
                                              note=f"{H2D_PAGEABLE_INTO}; on the CPU a host-to-host copy")),
    (key("pin"), info("GPU 0", "host-to-host", "none needed: pin_memory() returns after its copy", note=PIN_NOTE)),
    (key("pin", device="mps"), info("Test Apple GPU", "host-to-host", "none needed: pin_memory() returns after its copy", params=ON_MPS,
                                    note=MPS_PIN_NOTE)),
    (key("pageable", "seed", "mps"), info("Test Apple GPU", "host-to-device", FETCHED + MPS_SYNC, params=ON_MPS,
                                          note="on MPS " + MPS_COPY)),
    (key("pinned", device="mps"), info("Test Apple GPU", "host-to-device", MPS_SYNC, params=ON_MPS, note="on MPS " + MPS_PINNED_COPY)),
    (key("pin_per_call", device="mps"), info("Test Apple GPU", "host-to-device", MPS_SYNC, params=ON_MPS,
                                             note="on MPS " + MPS_PINNED_COPY)),
    (key("tensor", device="mps"), info("Test Apple GPU", "host-to-device", MPS_SYNC, params=ON_MPS,
                                       note=f"on MPS torch.tensor's fresh host copy, then {MPS_COPY}")),
    (key("pageable", device="mps", direction=D2H), info("Test Apple GPU", "device-to-host", MPS_SYNC, params=ON_MPS,
                                                        note=f"on MPS {MPS_COPY}; {D2H_PAGEABLE}")),
    (key("pinned_into", device="mps", direction=D2H), info("Test Apple GPU", "device-to-host", MPS_SYNC, params=ON_MPS,
                                                           note=f"on MPS {MPS_PINNED_COPY}; {D2H_INTO}")),
    (key("pinned_into", method=STREAMED), info("GPU 0", "host-to-device", "the end event synchronized", params={"hold": HOLD},
                                               clock="torch.cuda.Event pair around the copies queued on the held stream, per copy")),
])  # fmt: skip
def test_each_series_says_what_it_measures_word_for_word(torch: CudaTorch, series: SeriesKey, said: SeriesInfo) -> None:
    """Device name, transfer, clock, wait, device clock, parameters and note of each kind of series."""
    assert TorchBackend().describe(series, {}) == said
    if series.device.startswith("cuda"):
        assert ("get_device_name", FakeDevice(series.device)) in torch.log


def test_an_intel_macs_mps_series_is_no_unified_memory(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without Apple silicon every MPS copy is said to cross to an Intel Mac's GPU, pinned or not."""
    monkeypatch.setattr(pytorch, "apple_silicon", lambda: False)
    for mode in ("pageable", "pinned_into"):
        said = TorchBackend().describe(key(mode, device="mps"), {})
        assert said.note == "on MPS " + MPS_INTEL_COPY and said.params["unified_memory"] is False


def test_a_streamed_series_needs_torch_cuda_sleep_and_a_per_call_one_does_not(torch: CudaTorch) -> None:
    """Without torch.cuda._sleep the streamed series is refused in describe(); per call it is described as usual."""
    del torch.cuda._sleep
    with pytest.raises(NotSupportedHere) as refused:
        TorchBackend().describe(key("pinned_into", method=STREAMED), {})
    assert str(refused.value) == "this PyTorch has no torch.cuda._sleep to hold a stream with"
    assert TorchBackend().describe(key("pinned_into"), {}).device_clock == "torch.cuda.Event"


def test_only_a_pinned_mps_series_asks_whether_pytorch_pins_for_mps(monkeypatch: pytest.MonkeyPatch) -> None:
    """A PyTorch that cannot pin for MPS refuses the pinned modes on mps, with why; pageable mps and pinned CUDA describe."""
    old = FakeTorch("2.13.0")
    monkeypatch.setattr(pytorch, "_torch", lambda: old)
    monkeypatch.setattr(pytorch, "apple_gpu_name", lambda: "Test Apple GPU")
    monkeypatch.setattr(pytorch, "apple_silicon", lambda: True)
    for mode in pytorch.PIN_MODES:
        with pytest.raises(NotSupportedHere) as refused:
            TorchBackend().describe(key(mode, device="mps"), {})
        assert str(refused.value) == OLD_PIN
    assert TorchBackend().describe(key("pageable", device="mps"), {}).note == "on MPS " + MPS_COPY
    refusing = CudaTorch()
    refusing.pin_gives_pageable = True
    monkeypatch.setattr(pytorch, "_torch", lambda: refusing)
    assert TorchBackend().describe(key("pinned"), {}).device_name == "GPU 0"


# Whether this PyTorch pins host memory for MPS ------------------------------------------------------------------------


class Probe:
    """What torch.empty(1, pin_memory=True) gave: a tensor on `device`, pinned or not."""

    def __init__(self, device: str, pinned: bool) -> None:
        self.device, self.pinned = FakeDevice(device), pinned

    def is_pinned(self) -> bool:
        return self.pinned


def refusing_torch(error: BaseException | None = None, probe: Probe | None = None, version: str | None = "2.12.0") -> Any:
    def empty(*size: Any, **kwargs: Any) -> Probe:
        if error is not None:
            raise error
        assert probe is not None
        return probe

    fake = SimpleNamespace(uint8=np.uint8, empty=empty)
    if version is not None:
        fake.__version__ = version
    return fake


def test_pytorch_pins_for_mps_where_a_one_byte_pin_gives_pinned_cpu_memory(torch: CudaTorch) -> None:
    """The probe is torch.empty(1, dtype=uint8, pin_memory=True); a pinned CPU tensor is no refusal."""
    assert pytorch.mps_pinned_reason(torch) is None
    assert torch.log == [("empty", (1,), {"dtype": np.uint8, "pin_memory": True})]
    assert pytorch.mps_pinned_reason(FakeTorch("2.14.1")) is None


@pytest.mark.parametrize("torch_, said", [
    (FakeTorch("2.13.0"), OLD_PIN),
    (FakeTorch("2.6.0"), f"PyTorch 2.6.0 cannot pin host memory on a Mac (Need to provide pin_memory allocator to use pin memory.); {FIX}"),
    (refusing_torch(RuntimeError("first line\nsecond line")), f"PyTorch 2.12.0 cannot pin host memory on a Mac (first line); {FIX}"),
    (refusing_torch(NotImplementedError()), f"PyTorch 2.12.0 cannot pin host memory on a Mac (NotImplementedError); {FIX}"),
    (refusing_torch(AssertionError("Torch not compiled with CUDA enabled"), version=None),
     f"PyTorch ? cannot pin host memory on a Mac (Torch not compiled with CUDA enabled); {FIX}"),
    (refusing_torch(probe=Probe("cpu", False)), f"PyTorch 2.12.0's pin_memory on a Mac gives a tensor on cpu with is_pinned() False,"
                                                f" not pinned host memory; {FIX}"),
    (refusing_torch(probe=Probe("mps:0", True)), f"PyTorch 2.12.0's pin_memory on a Mac gives a tensor on mps:0 with is_pinned() True,"
                                                 f" not pinned host memory; {FIX}"),
    (refusing_torch(probe=Probe("cpu", True)), None),
])  # fmt: skip
def test_each_refusal_to_pin_for_mps_is_said_in_one_line_with_what_to_do(torch_: Any, said: str | None) -> None:
    """A raised refusal by its first line (or its type where it says nothing), a pin that is no pinned CPU tensor by what it gave."""
    assert pytorch.mps_pinned_reason(torch_) == said


# Host memory a point needs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("series, needs", [
    (key("pageable"), N + 256), (key("tensor"), 2 * N + 256), (key("pinned"), N + 256 + 256), (key("pin_per_call", "seed"), N + 256 + 256),
    (key("pageable", "seed"), N + 256), (key("pageable", "seed", "cpu"), 6 * N + 256), (key("pageable", "seed", "mps"), 6 * N + 256),
    (key("pageable", device="mps"), 2 * N + 256), (key("tensor", "seed", "cpu"), 6 * N + 256),
    (key("pinned", "seed", "mps"), 6 * N + 256 + 256),
    (key("pageable", direction=D2H), 2 * N + 256), (key("pageable", device="cpu", direction=D2H), 3 * N + 256),
    (key("pageable", device="mps", direction=D2H), 3 * N + 256), (key("pinned_into", direction=D2H), 2 * N + 256 + 256),
    (key("pinned_into", direction=BIDIR), 3 * N + 2 * 256 + 256),
    (key("pageable_into"), N + 256), (key("pageable_into", device="cpu"), 2 * N + 256), (key("pageable_into", direction=D2H), 2 * N + 256),
    (key("pageable_into", device="cpu", direction=D2H), 3 * N + 256),
])  # fmt: skip
def test_a_copys_host_estimate_counts_source_pinned_copy_read_back_and_host_destinations(series: SeriesKey, needs: int) -> None:
    """Source, pinned block, read-back chunk, tensor's fresh copy, the CPU's or MPS's destination and float32 cast, d2h's buffers."""
    assert TorchBackend().host_bytes(series.at(BATCH)) == needs


def test_the_read_back_chunk_in_the_estimate_is_at_most_one_verify_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch larger than the verification's chunk counts one chunk, rounded up to a power of two."""
    monkeypatch.setattr(pytorch, "VERIFY_CHUNK_BYTES", 100)
    assert TorchBackend().host_bytes(key("pageable").at(BATCH)) == N + 128
    estimate = pytorch.loader_host_bytes(key("loader", device="cpu").at(BATCH), 0)
    assert estimate == 432 + 3 * N + 128 and type(estimate) is int  # bytes: a whole number, as budgets add them


def test_a_loaders_host_estimate_counts_items_batches_in_flight_pinned_copies_and_spawned_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """2b+1 items (again for each spawned worker), the batches in flight, twice where pinned, and one read-back chunk."""
    items = 9 * 48
    monkeypatch.setattr(pytorch, "sys", SimpleNamespace(platform="linux"))
    assert pytorch.loader_host_bytes(key("loader").at(BATCH), 3) == items + 3 * N + 256
    assert pytorch.loader_host_bytes(key("loader_pin").at(BATCH), 3) == items + 3 * N * 2 + 256
    assert pytorch.loader_host_bytes(key("loader_workers").at(BATCH), 3) == items + 8 * N + 256
    assert pytorch.loader_host_bytes(key("loader_pin_workers").at(BATCH), 3) == items + 8 * N * 2 + 256
    monkeypatch.setattr(pytorch, "sys", SimpleNamespace(platform="darwin"))
    assert pytorch.loader_host_bytes(key("loader_workers").at(BATCH), 3) == 4 * items + 8 * N + 256
    assert pytorch.loader_host_bytes(key("loader_pin").at(BATCH), 3) == items + 3 * N * 2 + 256
    monkeypatch.setattr(pytorch, "DEFAULT_LOADER_WORKERS", 1)
    assert TorchBackend().host_bytes(key("loader_workers").at(BATCH)) == 2 * items + 4 * N + 256
    # what the sweep checks: the workers --loader-workers starts, not the default
    assert TorchBackend().host_bytes_for(key("loader_workers").at(BATCH), {"loader_workers": 3}) == 4 * items + 8 * N + 256
    assert TorchBackend().host_bytes_for(key("loader_pin").at(BATCH), {"loader_workers": 3}) == items + 3 * N * 2 + 256


# The DataLoader's settings and descriptions ------------------------------------------------------------------------------


def test_a_dataloader_process_takes_back_pytorchs_own_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forked from the xferbench worker, a DataLoader process would keep its stop-once handlers: SIGTERM (how PyTorch
    ends a stuck one) goes back to ending it, Ctrl-C back to Python's KeyboardInterrupt; an ignored Ctrl-C stays so."""
    handlers: dict[int, Any] = {signal.SIGINT: lambda signum, frame: None, signal.SIGTERM: lambda signum, frame: None}
    fake = SimpleNamespace(SIGINT=signal.SIGINT, SIGTERM=signal.SIGTERM, SIG_DFL=signal.SIG_DFL, default_int_handler=signal.default_int_handler,
                           getsignal=handlers.get, signal=handlers.__setitem__)  # fmt: skip
    monkeypatch.setattr(pytorch, "signal", fake)
    pytorch.pytorchs_own_stops(0)
    assert handlers == {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    handlers[signal.SIGINT] = signal.SIG_IGN
    pytorch.pytorchs_own_stops(1)
    assert handlers == {signal.SIGINT: signal.SIG_IGN, signal.SIGTERM: signal.SIG_DFL}


def test_a_loaders_settings_follow_its_mode_and_loader_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers only in the *_workers modes (--loader-workers, else the default), pinning in the *_pin modes, prefetch with workers."""
    monkeypatch.setattr(pytorch, "DEFAULT_LOADER_WORKERS", 3)
    settings = pytorch.loader_settings
    assert settings("loader", {"loader_workers": 5}) == {"num_workers": 0, "pin_memory": False}
    assert settings("loader_pin", {}) == {"num_workers": 0, "pin_memory": True}
    assert settings("loader_workers", {"loader_workers": "5"}) == {"num_workers": 5, "pin_memory": False, "prefetch_factor": 2}
    assert settings("loader_pin_workers", {"loader_workers": 0}) == {"num_workers": 3, "pin_memory": True, "prefetch_factor": 2}
    assert settings("loader_workers", {}) == {"num_workers": 3, "pin_memory": False, "prefetch_factor": 2}


LOADER_ITEMS = {"dataset_items": "2b+1, each its own bytes, repeated without end", "batch_sampler": "in order, no shuffle"}


def test_each_loader_series_says_who_collates_pins_and_copies_word_for_word(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:
    """The collate's thread or workers, the pin thread or the same thread, and the device copy and wait of each device."""
    monkeypatch.setattr(pytorch, "DEFAULT_LOADER_WORKERS", 2)
    backend = TorchBackend()
    alone = "the loop's own thread collates each batch (torch.stack) when it is asked for"
    workers = "3 worker process(es) each collate a batch (torch.stack into shared memory), 2 batches ahead per worker"
    cuda_copy = "; then .to(device, non_blocking=True) queues the device copy and the device is synchronized"
    assert backend.describe(key("loader", device="cpu"), {}) == SeriesInfo(
        "Test CPU", "host-to-host", PIPELINE_CLOCK, CPU_SYNC, None, {"num_workers": 0, "pin_memory": False, **LOADER_ITEMS, **THREADS},
        f"DataLoader(pin_memory=False, num_workers=0) over a uint8 dataset: {alone}; on the CPU .to('cpu') returns the collated batch"
        " itself, so the collate's copy is the host copy timed")  # fmt: skip
    assert backend.describe(key("loader_pin_workers", device="cuda:1"), {"loader_workers": 3}) == SeriesInfo(
        "GPU 1", "host-to-device", PIPELINE_CLOCK, CUDA_SYNC, None,
        {"num_workers": 3, "pin_memory": True, "prefetch_factor": 2, **LOADER_ITEMS},
        f"DataLoader(pin_memory=True, num_workers=3) over a uint8 dataset: {workers}; a pin thread copies each collated batch into pinned"
        f" memory (pin_memory()) as it arrives{cuda_copy}")  # fmt: skip
    assert torch.log == [("get_device_name", CUDA1)]
    assert backend.describe(key("loader_pin"), {}).note == (
        f"DataLoader(pin_memory=True, num_workers=0) over a uint8 dataset: {alone}; the same thread then copies it into pinned memory"
        f" (pin_memory()), with nothing ahead{cuda_copy}")  # fmt: skip
    assert backend.describe(key("loader_workers", device="mps"), {}) == SeriesInfo(
        "Test Apple GPU", "host-to-device", PIPELINE_CLOCK, MPS_SYNC, None,
        {"num_workers": 2, "pin_memory": False, "prefetch_factor": 2, **LOADER_ITEMS, "unified_memory": True},
        "DataLoader(pin_memory=False, num_workers=2) over a uint8 dataset: 2 worker process(es) each collate a batch (torch.stack into"
        f" shared memory), 2 batches ahead per worker; then .to('mps', non_blocking=True), {MPS_COPY},"
        " and torch.mps.synchronize")  # fmt: skip


def test_prepare_hands_each_series_to_its_own_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loader mode to TorchLoader with the params, h2d to TorchTransfer, d2h and bidir to TorchBack."""
    monkeypatch.setattr(pytorch, "TorchLoader", lambda spec, params: ("loader", spec, params))
    monkeypatch.setattr(pytorch, "TorchTransfer", lambda spec: ("h2d", spec))
    monkeypatch.setattr(pytorch, "TorchBack", lambda spec: ("back", spec))
    backend, params = TorchBackend(), {"overlap": True}
    for series, made in ((key("loader_workers"), "loader"), (key("pageable"), "h2d"), (key("pageable", direction=D2H), "back"),
                         (key("pinned_into", direction=BIDIR), "back")):  # fmt: skip
        spec = series.at(BATCH)
        assert backend.prepare(spec, params) == ((made, spec, params) if made == "loader" else (made, spec))


# TorchTransfer: what each mode allocates, calls and waits for ----------------------------------------------------------


def made(torch: CudaTorch, mode: str, op: str = "copy", device: str = "cuda:0", buffer: str = "", method: str = PER_CALL) -> TorchTransfer:
    """A TorchTransfer at BATCH, its events numbered from 0."""
    torch.events, torch.recorded, torch.log = 0, [], []
    return TorchTransfer(key(mode, op, device, buffer, method).at(BATCH))


EVENTS = [("Event", 0, True), ("Event", 1, True)]
TIMED = [("record", 1, "default"), ("cuda.synchronize", (CUDA0,)), ("elapsed_time", 0, 1)]


def test_pageable_copies_a_fresh_from_numpy_view_to_the_device_between_two_events(torch: CudaTorch) -> None:
    """set_device, then each call: start event, from_numpy(x).to(device, copy=False), end event, synchronize, ms / 1000."""
    transfer = made(torch, "pageable", device="cuda:0")
    host = transfer.host.ctypes.data
    assert since(torch) == [("set_device", CUDA0), ("from_numpy", host), *EVENTS]
    assert transfer() == 0.25 and transfer() == 0.25
    call = [("record", 0, "default"), ("from_numpy", host), ("to", "cpu", (CUDA0,), {"copy": False}), *TIMED]
    assert since(torch) == call + call
    assert transfer.transfers == 2 and transfer.label == "torch/pageable/copy@cuda:0" and transfer.kind == "cuda"
    assert transfer.host_offset == host % 64 and transfer.dest is None and transfer.source.array is transfer.host
    assert transfer.host_span() == (host, N) and transfer.method == PER_CALL and transfer.pin_s is None


def test_the_seed_op_casts_and_fetches_its_first_row_inside_the_timed_call(torch: CudaTorch) -> None:
    """.type(float32)[0, 0].cpu() after the copy and before the end event; its value is the host's first row."""
    transfer = made(torch, "pageable", "seed", device="cuda:1")
    since(torch)
    moved, result, seconds = transfer._run()
    assert since(torch) == [("record", 0, "default"), ("from_numpy", transfer.host.ctypes.data), ("to", "cpu", (CUDA1,), {"copy": False}),
                            ("type", "cuda:1", F32), ("cpu", "cuda:1"), ("record", 1, "default"), ("cuda.synchronize", (CUDA1,)),
                            ("elapsed_time", 0, 1)]  # fmt: skip
    assert seconds == 0.25 and moved.device == CUDA1 and np.array_equal(result.array, transfer.host[0, 0].astype(F32))


def test_pinned_copies_its_pinned_source_with_non_blocking_and_pinned_into_into_one_preallocated_tensor(torch: CudaTorch) -> None:
    """The pinned source is made once (empty, pin_memory=True, then filled); pinned .to()s it, pinned_into copy_s it into dest."""
    for mode in ("pinned", "pinned_into"):
        transfer = made(torch, mode)
        host = transfer.host.ctypes.data
        dest = [("empty", (BATCH_SHAPE,), {"dtype": U8, "device": CUDA0})] if mode == "pinned_into" else []
        assert since(torch) == [("set_device", CUDA0), ("from_numpy", host), ("empty", (BATCH_SHAPE,), {"dtype": U8, "pin_memory": True}),
                                ("from_numpy", host), ("copy_", "cpu+pinned", "cpu", (), {}, "default"), *dest, *EVENTS]  # fmt: skip
        assert transfer.host_offset is None and transfer.source.is_pinned() and np.array_equal(transfer.source.array, transfer.host)
        assert transfer.host_span() == (transfer.source.data_ptr(), N)
        assert transfer() == 0.25
        copy = ("to", "cpu+pinned", (CUDA0,), NB) if mode == "pinned" else ("copy_", "cuda:0", "cpu+pinned", (), NB, "default")
        assert since(torch) == [("record", 0, "default"), copy, *TIMED]
    assert transfer.dest.device == CUDA0 and transfer.dest.shape == BATCH_SHAPE


def test_a_pinned_source_that_pytorch_did_not_pin_is_refused(torch: CudaTorch) -> None:
    """is_pinned() False on the pinned source: the series would time the pageable path."""
    torch.pin_gives_pageable = True
    with pytest.raises(VerificationError) as refused:
        made(torch, "pinned_into")
    assert str(refused.value) == "torch/pinned_into/copy@cuda:0: PyTorch did not pin the source (is_pinned() is False)"


def test_pin_per_call_pins_in_every_call_and_tensor_makes_a_fresh_host_copy(torch: CudaTorch) -> None:
    """pin_per_call: from_numpy(x).pin_memory().to(device, non_blocking=True); tensor: torch.tensor(x).to(device)."""
    for mode, copy in (("pin_per_call", [("pin_memory", "cpu"), ("to", "cpu+pinned", (CUDA0,), NB)]),
                       ("tensor", [("to", "cpu", (CUDA0,), {})])):  # fmt: skip
        transfer = made(torch, mode)
        host = transfer.host.ctypes.data
        assert since(torch) == [("set_device", CUDA0), ("from_numpy", host), *EVENTS]
        assert transfer() == 0.25
        fresh = ("from_numpy", host) if mode == "pin_per_call" else ("tensor", host)
        assert since(torch) == [("record", 0, "default"), fresh, *copy, *TIMED]


def test_pin_times_its_first_pin_when_made_and_then_pins_alone_with_no_device_clock(torch: CudaTorch,
                                                                                    monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The first pin of the size is pin_s; each call is from_numpy(x).pin_memory() and the device's wait, no events."""
    clock(monkeypatch, 10.0, 10.25)
    transfer = made(torch, "pin")
    host = transfer.host.ctypes.data
    assert transfer.pin_s == 0.25 and transfer.events is None
    assert since(torch) == [("set_device", CUDA0), ("from_numpy", host), ("from_numpy", host), ("pin_memory", "cpu")]
    assert transfer() is None
    assert since(torch) == [("from_numpy", host), ("pin_memory", "cpu"), ("cuda.synchronize", (CUDA0,))]


def test_an_aligned_host_buffer_is_asked_for_and_recorded(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:
    """make_source(batch_shape, aligned=...) follows the host buffer; the point records the source's offset."""
    asked: list[tuple[Any, ...]] = []
    real = pytorch.make_source
    monkeypatch.setattr(pytorch, "make_source", lambda *a, **k: asked.append((a, k)) or real(*a, **k))
    assert made(torch, "pageable", buffer="aligned").host_offset == 0
    made(torch, "tensor")
    assert asked == [((BATCH_SHAPE,), {"aligned": True}), ((BATCH_SHAPE,), {"aligned": False})]


def test_the_cpu_copies_with_copy_true_and_waits_for_nothing(torch: CudaTorch) -> None:
    """On the CPU: no set_device, no events, .to(cpu, copy=True) and no synchronize."""
    transfer = made(torch, "pageable", device="cpu")
    host = transfer.host.ctypes.data
    assert since(torch) == [("from_numpy", host)] and transfer.events is None
    assert transfer() is None
    assert since(torch) == [("from_numpy", host), ("to", "cpu", (CPU,), {"copy": True})]
    transfer.verify()


def test_mps_copies_with_copy_false_and_waits_with_torch_mps_synchronize(torch: CudaTorch) -> None:
    """On MPS: no set_device, no events, .to(mps, copy=False) then torch.mps.synchronize(); the copy lands on mps:0."""
    transfer = made(torch, "pageable", device="mps")
    host = transfer.host.ctypes.data
    assert since(torch) == [("from_numpy", host)] and transfer.events is None
    assert transfer() is None
    assert since(torch) == [("from_numpy", host), ("to", "cpu", (MPS,), {"copy": False}), ("mps.synchronize",)]
    transfer.verify()
    assert ("empty", (N,), {"dtype": U8, "pin_memory": False}) in torch.log  # the read-back is pinned on CUDA only


def test_close_drops_every_buffer(torch: CudaTorch) -> None:
    """The next batch size gets the memory."""
    transfer = made(torch, "pinned_into")
    transfer.close()
    assert (transfer.dest, transfer.source, transfer.host) == (None, None, None)


# TorchTransfer's verification ------------------------------------------------------------------------------------------


def test_verification_refills_the_source_poisons_the_destination_and_reads_it_back_into_pinned_chunks(
        torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """New bytes (variant 1) into the host and its pinned copy, dest zeroed, one timed call, then the destination read back
    chunk by chunk into one pinned staging buffer of at most VERIFY_CHUNK_BYTES."""
    monkeypatch.setattr(pytorch, "VERIFY_CHUNK_BYTES", 64)
    transfer = made(torch, "pinned_into")
    host = transfer.host.ctypes.data
    staged = staged_reads(transfer, monkeypatch)
    since(torch)
    transfer.verify()
    log = since(torch)
    read = [("from_numpy", staged[0].ctypes.data), ("copy_", "cpu", "cuda:0", (), {}, "default")]  # into the pinned staging buffer
    assert log == [("from_numpy", host), ("copy_", "cpu+pinned", "cpu", (), {}, "default"), ("zero_", "cuda:0"), ("record", 0, "default"),
                   ("copy_", "cuda:0", "cpu+pinned", (), NB, "default"), *TIMED, ("empty", (64,), {"dtype": U8, "pin_memory": True}),
                   *read * 3]  # fmt: skip
    assert np.array_equal(transfer.host, pattern(1)) and transfer.transfers == 1


def test_a_batch_smaller_than_a_chunk_is_read_back_through_a_buffer_of_its_own_size(torch: CudaTorch) -> None:
    """The staging buffer is the batch's size where that is below VERIFY_CHUNK_BYTES."""
    transfer = made(torch, "pageable", "seed")
    transfer.verify()
    assert [entry for entry in torch.log if entry[0] == "empty"] == [("empty", (N,), {"dtype": U8, "pin_memory": True})]
    read, staging = transfer._read_back(transfer.dest if transfer.dest is not None else transfer.source.to(CUDA0))
    assert staging.shape == (N,)
    out = np.empty(8, np.uint8)
    read(40, out)
    assert np.array_equal(out, transfer.host.reshape(-1)[40:48])


def test_every_mode_and_op_passes_its_own_check_on_a_gpu_and_on_mps(torch: CudaTorch) -> None:
    """The paths as written deliver every byte, and the seed op's row, wherever they run."""
    for device in ("cuda:1", "cuda", "mps"):
        for mode in ("pageable", "pinned", "pinned_into", "pin_per_call", "tensor", "pin"):
            for op in ("copy", "seed") if mode != "pin" else ("copy",):
                transfer = made(torch, mode, op, device)
                transfer()
                transfer.verify()
                assert transfer.transfers == 2


@pytest.mark.parametrize("mode, device, fault, said", [
    ("pageable", "cpu", lambda t: t.host, "the result is the source tensor itself; nothing was copied"),
    ("pinned", "cuda:1", lambda t: Tensor(t.torch, t.source.array, CUDA1), "the result is the source tensor itself; nothing was copied"),
    ("pageable", "cuda:1", lambda t: t.torch.from_numpy(t.host).to("cpu", copy=True), "data landed on cpu, not cuda:1"),
    ("pinned_into", "cuda:1", lambda t: t.source.to("cuda:0"), "data landed on cuda:0, not cuda:1"),
    ("pageable", "mps", lambda t: t.source.to("cuda:0"), "data landed on cuda:0, not mps"),
    ("pageable", "cuda:1", lambda t: t.torch.zeros(BATCH_SHAPE, dtype=U8, device="cuda:1"), DIFFER),
    ("pin", "cuda:1", lambda t: t.torch.from_numpy(t.host.copy()), "pin_memory() returned pageable memory (is_pinned() is False)"),
])  # fmt: skip
def test_each_way_a_copy_can_fail_its_check_is_caught_and_said(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch, mode: str, device: str,
                                                               fault: Any, said: str) -> None:  # fmt: skip
    """The source itself, the wrong device or GPU, wrong bytes, pageable memory from pin: each a VerificationError naming the series."""
    transfer = made(torch, mode, device=device)

    def move() -> Any:
        moved = fault(transfer)
        return torch.from_numpy(moved) if isinstance(moved, np.ndarray) else moved

    monkeypatch.setattr(transfer, "_move", move)
    with pytest.raises(VerificationError) as failed:
        transfer.verify()
    assert str(failed.value) == f"torch/{mode}/copy@{device}: {said}"


def test_a_pinned_into_copy_that_writes_nothing_fails_its_check(torch: CudaTorch) -> None:
    """The destination was zeroed before the copy: a copy that does not happen leaves zeros, not warm-up's bytes."""
    transfer = made(torch, "pinned_into")
    transfer.dest.frozen = True
    with pytest.raises(VerificationError) as failed:
        transfer.verify()
    assert str(failed.value) == f"torch/pinned_into/copy@cuda:0: {DIFFER}"


def test_a_seed_result_that_is_not_the_first_row_fails_its_check(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:
    """The seed op's fetched row is checked against the host's first row as float32."""
    transfer = made(torch, "pageable", "seed")
    run = transfer._run

    def wrong() -> Any:
        moved, result, seconds = run()
        result.array[0, 0] += 1
        return moved, result, seconds

    monkeypatch.setattr(transfer, "_run", wrong)
    with pytest.raises(VerificationError) as failed:
        transfer.verify()
    assert str(failed.value) == ("torch/pageable/seed@cuda:0 result: 1 of 12 checked values differ from the source; the transfer did"
                                 " not deliver the data")  # fmt: skip


# The streamed run: a spin kernel holds the stream while the copies queue ------------------------------------------------


def streamed(torch: CudaTorch, rate: float | None = 1e9) -> TorchTransfer:
    """A streamed pinned_into transfer on cuda:0 whose spin rate is `rate` (None: still to be timed)."""
    transfer = made(torch, "pinned_into", method=STREAMED)
    transfer.cycles_per_s = rate
    torch.events, torch.recorded = 0, []
    since(torch)
    return transfer


def one_try(cycles: int, copies: int, start: int = 0) -> list[tuple[Any, ...]]:
    """The calls of one try: the spin, two warm copies, the start event, the timed copies, the end event, the query, the wait."""
    copy = ("copy_", "cuda:0", "cpu+pinned", (), NB, "s0")
    return [("enter", "s0"), ("_sleep", cycles, "s0"), copy, copy, ("record", start, "s0"), *[copy] * copies, ("record", start + 1, "s0"),
            ("query", start), ("exit", "s0"), ("event.synchronize", start + 1)]  # fmt: skip


def test_a_streamed_series_makes_its_own_stream_and_starts_from_the_first_guess(torch: CudaTorch) -> None:
    """torch.cuda.Stream(device=...) once; no spin rate yet, ENQUEUE_GUESS_S per copy, the hold's scale 1."""
    transfer = made(torch, "pinned_into", device="cuda:1", method=STREAMED)
    assert ("Stream", CUDA1, 0) in torch.log and transfer.method == STREAMED
    assert (transfer.cycles_per_s, transfer.enqueue_per_copy_s, transfer.hold_scale, transfer.transfers) == (None, 50e-6, 1, 0)
    assert not hasattr(made(torch, "pinned_into"), "stream")


def test_the_spin_rate_is_timed_once_over_a_warm_spin_on_the_held_stream(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:
    """A quarter spin to warm up, then 20,000,000 cycles between two events on the stream: cycles per second of that."""
    transfer = streamed(torch, rate=None)
    torch.ms[2] = 10.0
    torch.queries = [False]
    clock(monkeypatch, 0.0, 0.0006)
    assert transfer.streamed(4) == 0.25
    assert since(torch)[:12] == [("Event", 0, True), ("Event", 1, True), ("Event", 2, True), ("Event", 3, True), ("enter", "s0"),
                                 ("_sleep", 5_000_000, "s0"), ("record", 2, "s0"), ("_sleep", 20_000_000, "s0"), ("record", 3, "s0"),
                                 ("exit", "s0"), ("event.synchronize", 3), ("elapsed_time", 2, 3)]  # fmt: skip
    assert transfer.cycles_per_s == pytest.approx(2e9, rel=1e-12)
    torch.queries = [False]
    clock(monkeypatch, 0.0, 0.0006)
    transfer.streamed(4)
    assert not any(entry[0] == "_sleep" and entry[1] == 20_000_000 for entry in torch.log)  # timed once


def test_a_held_run_queues_two_warm_copies_then_the_timed_ones_between_events_and_learns_the_queueing(
        torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Hold = twice the guessed queueing plus the margin; the start event still pending once all is queued: the events' seconds."""
    transfer = streamed(torch)
    torch.queries = [False]
    clock(monkeypatch, 5.0, 5.006)
    assert transfer.streamed(10) == 0.25
    # (2 * 50e-6 * 12 + 0.0005) * 1: 1.7 ms of spin at 1e9 cycles/s
    assert since(torch) == [("Event", 0, True), ("Event", 1, True), *one_try(1_700_000, 10), ("elapsed_time", 0, 1)]
    assert transfer.transfers == 12 and transfer.enqueue_per_copy_s == pytest.approx(0.0005, rel=1e-9) and transfer.hold_scale == 1


def test_a_hold_that_ended_first_is_made_four_times_longer_and_the_run_repeated(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:
    """The failed try's queueing is no estimate; the longer hold stays for later runs."""
    transfer = streamed(torch)
    torch.queries = [True, False]
    clock(monkeypatch, 0.0, 0.001, 1.0, 1.0024)
    assert transfer.streamed(10) == 0.25
    log = since(torch)
    assert [entry[1] for entry in log if entry[0] == "_sleep"] == [1_700_000, 6_800_000]
    assert log[-1] == ("elapsed_time", 0, 1) and log.count(("query", 0)) == 2
    assert transfer.transfers == 24 and transfer.hold_scale == 4 and transfer.enqueue_per_copy_s == pytest.approx(0.0002, rel=1e-9)


def test_a_hold_that_never_lasts_ends_after_four_tries_in_a_bounded_error(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four tries, each hold 4 times the last; the message gives the copies, the tries, the last queueing and hold."""
    transfer = streamed(torch)
    torch.queries = [True] * 4
    clock(monkeypatch, *[0.0, 0.0001] * 4)
    with pytest.raises(RuntimeError) as failed:
        transfer.streamed(10)
    assert str(failed.value) == ("could not hold the stream while 10 copies were queued, after 4 tries (queueing took 0.0001 s and the"
                                 " 0.109 s hold ended first)")  # fmt: skip
    assert [entry[1] for entry in torch.log if entry[0] == "_sleep"] == [1_700_000, 6_800_000, 27_200_000, 108_800_000]
    assert transfer.transfers == 48 and transfer.hold_scale == 256 and transfer.enqueue_per_copy_s == 50e-6


@pytest.mark.parametrize("share, full", [(0.9, True), (0.85, False)])
def test_queueing_as_long_as_nine_tenths_of_the_hold_says_copy_waited_for_the_stream(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch,
                                                                                     share: float, full: bool) -> None:  # fmt: skip
    """Queueing that took 90% of the hold or more: copy_ itself waited, CUDA's launch queue may be full."""
    transfer = streamed(torch)
    torch.queries = [True] * 4
    last = (2 * 50e-6 * 12 + 0.0005) * 64
    clock(monkeypatch, *[0.0, 0.0001] * 3, 0.0, share * last)
    with pytest.raises(RuntimeError) as failed:
        transfer.streamed(10)
    assert str(failed.value).endswith("s hold ended first; copy_ waited for the held stream: CUDA's launch queue may be full)") is full


def test_a_hold_at_its_longest_is_not_tried_again(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2 s hold that ends first: one try, no longer hold, and the launch queue named."""
    transfer = streamed(torch)
    transfer.enqueue_per_copy_s = 0.1  # 2.4 s of queueing guessed: the hold is capped at 2 s
    torch.queries = [True] * 4
    clock(monkeypatch, *[0.0, 0.0001] * 4)
    with pytest.raises(RuntimeError) as failed:
        transfer.streamed(10)
    assert str(failed.value) == ("could not hold the stream while 10 copies were queued, after 1 tries (queueing took 0.0001 s and the"
                                 " 2 s hold ended first; copy_ waited for the held stream: CUDA's launch queue may be full)")  # fmt: skip
    assert [entry[1] for entry in torch.log if entry[0] == "_sleep"] == [2_000_000_000]
    assert transfer.transfers == 12 and transfer.hold_scale == 1


def test_a_streamed_check_waits_runs_a_short_streamed_run_and_reads_the_destination(torch: CudaTorch,
                                                                                     monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """verify() synchronizes, runs STREAM_PROBE_COPIES copies on the held stream, then checks dest byte for byte."""
    transfer = streamed(torch)
    torch.queries = [False]
    clock(monkeypatch, 0.0, 0.0003)
    transfer.verify()
    log = since(torch)
    assert log[:4] == [("from_numpy", transfer.host.ctypes.data), ("copy_", "cpu+pinned", "cpu", (), {}, "default"), ("zero_", "cuda:0"),
                       ("cuda.synchronize", (CUDA0,))]  # fmt: skip
    # (2 * 50e-6 * 6 + 0.0005) s of spin at 1e9 cycles/s, then STREAM_PROBE_COPIES timed copies
    assert log[4:20] == [("Event", 0, True), ("Event", 1, True), *one_try(1_100_000, 4), ("elapsed_time", 0, 1)]
    transfer.dest.frozen = True
    torch.queries = [False]
    clock(monkeypatch, 0.0, 0.0003)
    with pytest.raises(VerificationError, match="bytes differ"):
        transfer.verify()


# TorchBack: d2h and bidir --------------------------------------------------------------------------------------------------


def back(torch: CudaTorch, mode: str = "pageable", device: str = "cuda:0", direction: str = D2H) -> TorchBack:
    """A TorchBack at BATCH, its events numbered from 0."""
    torch.events, torch.recorded, torch.log = 0, [], []
    return TorchBack(key(mode, "copy", device, direction=direction).at(BATCH))


FOUR_EVENTS = [("Event", n, True) for n in range(4)]


def test_pageable_d2h_fills_a_device_tensor_once_and_brings_it_back_with_to_cpu_each_call(torch: CudaTorch) -> None:
    """from_numpy(expected).to(device, copy=True) once; each call .to('cpu', copy=False) between the d2h events."""
    transfer = back(torch)
    expected = transfer.expected.ctypes.data
    assert since(torch) == [("set_device", CUDA0), ("from_numpy", expected), ("to", "cpu", (CUDA0,), {"copy": True}), *FOUR_EVENTS]
    assert np.array_equal(transfer.expected, pattern(0)) and transfer.into is None and transfer.label == "torch/pageable/copy/d2h@cuda:0"
    assert transfer() == 0.75 and transfer.transfers == 1
    assert since(torch) == [("record", 2, "default"), ("to", "cuda:0", ("cpu",), {"copy": False}), ("record", 3, "default"),
                            ("cuda.synchronize", (CUDA0,)), ("elapsed_time", 2, 3)]  # fmt: skip
    assert transfer.moved.device == CPU and transfer.host_span() == (expected, N)
    transfer()
    assert transfer.transfers == 2  # each call counts, for the link's byte count


def test_pageable_into_d2h_copies_into_one_preallocated_pageable_tensor_without_non_blocking(torch: CudaTorch) -> None:
    """empty() once, not pinned; each call into.copy_(on_device) with no non_blocking, into the same tensor; its check reads it."""
    transfer = back(torch, "pageable_into")
    assert since(torch)[3] == ("empty", (BATCH_SHAPE,), {"dtype": U8})
    assert not transfer.into.is_pinned() and transfer.into.device == CPU
    held = transfer.into
    assert transfer() == 0.75 and transfer() == 0.75
    log = since(torch)
    assert [entry for entry in log if entry[0] in ("copy_", "to")] == [("copy_", "cpu", "cuda:0", (), {}, "default")] * 2
    assert transfer.into is held and transfer.host_span() == (held.data_ptr(), N) and transfer.transfers == 2
    transfer.verify()
    assert np.array_equal(held.array, pattern(2))
    held.frozen = True
    with pytest.raises(VerificationError) as failed:
        transfer.verify()
    assert str(failed.value) == f"torch/pageable_into/copy/d2h@cuda:0 (d2h): {DIFFER}"


def test_pageable_into_copies_the_numpy_batch_into_one_preallocated_device_tensor_without_non_blocking(torch: CudaTorch) -> None:
    """dest made once on the device; each call dest.copy_(from_numpy view) with no non_blocking; a dest that keeps nothing fails."""
    transfer = made(torch, "pageable_into")
    host = transfer.host.ctypes.data
    assert since(torch) == [("set_device", CUDA0), ("from_numpy", host), ("empty", (BATCH_SHAPE,), {"dtype": U8, "device": CUDA0}), *EVENTS]
    assert transfer.host_offset == host % 64 and not transfer.source.is_pinned()
    assert transfer() == 0.25
    assert since(torch) == [("record", 0, "default"), ("copy_", "cuda:0", "cpu", (), {}, "default"), *TIMED]
    transfer.verify()
    transfer.dest.frozen = True
    with pytest.raises(VerificationError) as failed:
        transfer.verify()
    assert str(failed.value) == f"torch/pageable_into/copy@cuda:0: {DIFFER}"


def test_pinned_into_d2h_copies_into_one_preallocated_pinned_tensor_with_non_blocking(torch: CudaTorch) -> None:
    """empty(pin_memory=True) once; each call into.copy_(on_device, non_blocking=True)."""
    transfer = back(torch, "pinned_into")
    assert since(torch)[3] == ("empty", (BATCH_SHAPE,), {"dtype": U8, "pin_memory": True})
    assert transfer() == 0.75
    assert since(torch)[1] == ("copy_", "cpu+pinned", "cuda:0", (), NB, "default")
    assert transfer.host_span() == (transfer.into.data_ptr(), N) and not hasattr(transfer, "streams")


def test_d2h_on_the_cpu_copies_with_copy_true_and_on_mps_waits_with_mps_synchronize(torch: CudaTorch) -> None:
    """No set_device and no events off CUDA; .to('cpu', copy=True) on the CPU, the MPS wait on MPS."""
    cpu = back(torch, device="cpu")
    assert since(torch) == [("from_numpy", cpu.expected.ctypes.data), ("to", "cpu", (CPU,), {"copy": True})]
    assert cpu() is None and since(torch) == [("to", "cpu", ("cpu",), {"copy": True})]
    cpu.verify()
    mps = back(torch, device="mps")
    assert mps() is None and since(torch)[-2:] == [("to", "mps:0", ("cpu",), {"copy": False}), ("mps.synchronize",)]
    mps.verify()


def test_bidir_runs_each_direction_on_a_stream_of_its_own_timed_by_its_own_events(torch: CudaTorch) -> None:
    """Two pinned host buffers, a device destination, two streams; each call both copies, one wait, both seconds."""
    transfer = back(torch, "pinned_into", "cuda:1", BIDIR)
    up = transfer.up_host.ctypes.data
    pinned = ("empty", (BATCH_SHAPE,), {"dtype": U8, "pin_memory": True})
    assert since(torch) == [("set_device", CUDA1), ("from_numpy", transfer.expected.ctypes.data), ("to", "cpu", (CUDA1,), {"copy": True}),
                            pinned, pinned, ("from_numpy", up), ("copy_", "cpu+pinned", "cpu", (), {}, "default"),
                            ("empty", (BATCH_SHAPE,), {"dtype": U8, "device": CUDA1}), ("Stream", CUDA1, 0), ("Stream", CUDA1, 0),
                            *FOUR_EVENTS]  # fmt: skip
    assert np.array_equal(transfer.up_host, pattern(0)) and transfer.up_dest.device == CUDA1
    assert transfer() == {H2D: 0.25, D2H: 0.75} and transfer.transfers == 1
    assert since(torch) == [("enter", "s0"), ("record", 0, "s0"), ("copy_", "cuda:1", "cpu+pinned", (), NB, "s0"), ("record", 1, "s0"),
                            ("exit", "s0"), ("enter", "s1"), ("record", 2, "s1"), ("copy_", "cpu+pinned", "cuda:1", (), NB, "s1"),
                            ("record", 3, "s1"), ("exit", "s1"),
                            ("cuda.synchronize", (CUDA1,)), ("elapsed_time", 0, 1), ("elapsed_time", 2, 3)]  # fmt: skip
    transfer()
    assert transfer.transfers == 2


def test_a_d2h_check_sends_new_bytes_poisons_the_host_buffer_and_reads_every_byte(torch: CudaTorch) -> None:
    """Variant 2 into the device tensor, into zeroed, a wait, one call, then every byte of the host result."""
    transfer = back(torch, "pinned_into")
    since(torch)
    transfer.verify()
    assert since(torch) == [("from_numpy", transfer.expected.ctypes.data), ("copy_", "cuda:0", "cpu", (), {}, "default"),
                                ("zero_", "cpu+pinned"), ("cuda.synchronize", (CUDA0,)), ("record", 2, "default"),
                                ("copy_", "cpu+pinned", "cuda:0", (), NB, "default"), ("record", 3, "default"),
                                ("cuda.synchronize", (CUDA0,)), ("elapsed_time", 2, 3)]  # fmt: skip
    assert np.array_equal(transfer.expected, pattern(2)) and transfer.transfers == 1


def test_a_bidir_check_sends_other_bytes_each_way_and_reads_the_device_lane_through_pinned_staging(
        torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Variant 2 down, variant 1 up, both destinations zeroed, one call, then each lane checked by its own name."""
    transfer = back(torch, "pinned_into", "cuda:0", BIDIR)
    staged = staged_reads(transfer, monkeypatch)
    since(torch)
    transfer.verify()
    log = since(torch)
    assert log[:7] == [("from_numpy", transfer.expected.ctypes.data), ("copy_", "cuda:0", "cpu", (), {}, "default"),
                       ("zero_", "cpu+pinned"), ("from_numpy", transfer.up_host.ctypes.data),
                       ("copy_", "cpu+pinned", "cpu", (), {}, "default"), ("zero_", "cuda:0"), ("cuda.synchronize", (CUDA0,))]  # fmt: skip
    assert log[-3:] == [("empty", (N,), {"dtype": U8, "pin_memory": True}), ("from_numpy", staged[0].ctypes.data),
                        ("copy_", "cpu", "cuda:0", (), {}, "default")]  # fmt: skip
    assert np.array_equal(transfer.expected, pattern(2)) and np.array_equal(transfer.up_host, pattern(1))
    transfer.up_dest.frozen = True
    with pytest.raises(VerificationError) as failed:
        transfer.verify()
    assert str(failed.value) == f"torch/pinned_into/copy/bidir@cuda:0 (h2d): {DIFFER}"
    transfer.up_dest.frozen, transfer.into.frozen = False, True
    with pytest.raises(VerificationError) as failed:
        transfer.verify()
    assert str(failed.value) == f"torch/pinned_into/copy/bidir@cuda:0 (d2h): {DIFFER}"


@pytest.mark.parametrize("device, fault, said", [
    ("cuda:0", lambda t: t.on_device, "the result is on cuda:0, not in host memory"),
    ("cpu", lambda t: t.on_device, "the result is the device tensor itself; nothing was copied"),
    ("cuda:0", lambda t: t.torch.zeros(BATCH_SHAPE, dtype=U8), f"(d2h): {DIFFER}"),
])  # fmt: skip
def test_each_way_a_d2h_copy_can_fail_its_check_is_caught_and_said(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch, device: str,
                                                                   fault: Any, said: str) -> None:  # fmt: skip
    """Left on the device, the device tensor itself, wrong bytes: each a VerificationError naming the series."""
    transfer = back(torch, device=device)
    monkeypatch.setattr(transfer, "_down", lambda: fault(transfer))
    with pytest.raises(VerificationError) as failed:
        transfer.verify()
    assert str(failed.value) == f"torch/pageable/copy/d2h@{device}{'' if said.startswith('(') else ':'} {said}"


def test_closing_a_d2h_or_bidir_point_drops_every_buffer(torch: CudaTorch) -> None:
    """The device tensor, both host buffers and the h2d lane's buffers."""
    transfer = back(torch, "pinned_into", direction=BIDIR)
    transfer()
    transfer.close()
    held = [transfer.on_device, transfer.into, transfer.moved, transfer.expected, transfer.up_host, transfer.up_source, transfer.up_dest]
    assert held == [None] * 7


# TorchLoader: a DataLoader, then .to(device, non_blocking=True) and the wait ---------------------------------------------


def loader(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch, mode: str = "loader_pin_workers", device: str = "cuda:0",
           params: dict[str, Any] | None = None) -> TorchLoader:  # fmt: skip
    """A TorchLoader at BATCH over the stand-in, its kernel 4x4 and its timing written down rather than run."""
    sides: list[str] = []
    monkeypatch.setattr(pytorch, "kernel_side", lambda device: sides.append(device) or 4)
    monkeypatch.setattr(TorchLoader, "time_kernel", lambda self: torch.log.append(("time_kernel",)))
    torch.log = []
    made = TorchLoader(key(mode, device=device).at(BATCH), params or {})
    assert sides == [device]
    return made


def test_a_loader_makes_its_kernel_before_its_workers_start_and_passes_the_settings_to_the_dataloader(
        torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """set_device; an orthogonal float32 matrix from seed 0 on the device; a resident byte; the kernel timed (--overlap); the loader."""
    transfer = loader(torch, monkeypatch, params={"overlap": True, "loader_workers": 2})
    assert since(torch) == [("set_device", CUDA0), ("manual_seed", 0), ("randn", (4, 4), 0), ("qr", "cpu"), ("to", "cpu", (CUDA0,), {}),
                            ("zeros", (1,), {"dtype": U8, "device": CUDA0}), ("time_kernel",),
                            ("DataLoader", "ItemDataset", {"batch_size": 4, "sampler": "CycledSampler", "num_workers": 2,
                                                           "pin_memory": True, "prefetch_factor": 2,
                                                           "worker_init_fn": "pytorchs_own_stops"}), ("iter",)]  # fmt: skip
    matrix = transfer.matrix.array
    assert transfer.matrix.device == CUDA0 and np.allclose(matrix.T @ matrix, np.eye(4), atol=1e-5)
    assert transfer.resident.device == CUDA0 and transfer.resident.array.tolist() == [0]
    assert (transfer.depth, transfer.transfers, transfer.pinned, transfer.batch_size, transfer.device_id) == (5, 0, True, 4, "cuda:0")
    assert transfer.label == "torch/loader_pin_workers/copy@cuda:0" and transfer.items.shape == (9, *SHAPE)
    plain = loader(torch, monkeypatch, "loader", "cpu")
    log = since(torch)
    assert log[-2:] == [("DataLoader", "ItemDataset", {"batch_size": 4, "sampler": "CycledSampler", "num_workers": 0, "pin_memory": False}),
                        ("iter",)]  # fmt: skip
    assert ("time_kernel",) not in log and not any(entry[0] == "set_device" for entry in log)
    assert (plain.depth, plain.pinned) == (1, False)


def test_each_delivered_batch_is_moved_with_non_blocking_and_waited_for(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:
    """The next batch, .to(device, non_blocking=True), counted, then the device's wait; the pipeline's check passes."""
    transfer = loader(torch, monkeypatch, "loader_pin", "cuda:1")
    since(torch)
    moved = transfer._deliver()
    items = [("from_numpy", transfer.items[i].ctypes.data) for i in range(4)]  # the collate's views of items 0 ... 3
    assert since(torch) == [*items, ("to", "cpu+pinned", (CUDA1,), NB), ("cuda.synchronize", (CUDA1,))]
    assert moved.device == CUDA1 and transfer.transfers == 1 and np.array_equal(moved.array, transfer.items[:4])
    transfer.delivered += 1  # as a call counts it
    transfer()
    transfer.verify()
    assert transfer.transfers == 4


def test_a_pinned_loader_that_delivers_pageable_batches_is_caught(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:
    """A loader_pin batch that is not pinned fails; a plain loader's pageable batch is what it should be."""
    torch.pin_gives_pageable = True
    with pytest.raises(VerificationError) as failed:
        loader(torch, monkeypatch, "loader_pin")._deliver()
    assert str(failed.value) == "torch/loader_pin/copy@cuda:0: the DataLoader delivered a batch that is not pinned (is_pinned() is False)"
    assert loader(torch, monkeypatch, "loader")._deliver().device == CUDA0


def test_a_batch_is_read_back_only_from_the_device_and_gpu_it_was_due_on(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another device or GPU is named; the CPU's batch is read directly, a device's through pinned staging."""
    batch = torch.from_numpy(pattern(3))
    for device, on, said in (("cuda:0", batch, "cpu, not cuda:0"), ("cuda:1", batch.to("cuda:0"), "cuda:0, not cuda:1")):
        with pytest.raises(VerificationError) as failed:
            loader(torch, monkeypatch, "loader", device)._read(on)
        assert str(failed.value) == f"torch/loader/copy@{device}: the batch is on {said}"
    read, staging = loader(torch, monkeypatch, "loader", "cpu")._read(batch)
    out = np.empty(5, np.uint8)
    read(7, out)
    assert staging is None and np.array_equal(out, pattern(3).reshape(-1)[7:12])
    torch.log = []
    read, staging = loader(torch, monkeypatch, "loader", "cuda")._read(batch.to("cuda:0"))
    assert staging.shape == (N,) and ("empty", (N,), {"dtype": U8, "pin_memory": True}) in torch.log


def test_the_kernel_is_fed_by_the_batch_or_the_resident_byte_and_waited_for(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:
    """matrix + the fed tensor's first byte as float32, then `repeats` products, then the device's wait."""
    transfer = loader(torch, monkeypatch, "loader", "cuda:0")
    transfer.repeats, transfer.resident.tag = 3, "resident"
    batch = torch.from_numpy(pattern(0)).to("cuda:0")
    batch.tag = "batch"
    since(torch)
    transfer._compute(None)
    transfer._compute(batch)
    products = [("mm", "cuda:0", "cuda:0")] * 3
    assert since(torch) == [("to", "cuda:0 resident", (F32,), {}), *products, ("cuda.synchronize", (CUDA0,)),
                            ("to", "cuda:0 batch", (F32,), {}), *products, ("cuda.synchronize", (CUDA0,))]  # fmt: skip


def test_closing_a_loader_shuts_its_workers_down_and_drops_its_tensors(torch: CudaTorch, monkeypatch: pytest.MonkeyPatch) -> None:
    """_shutdown_workers where the iterator has workers; nothing to shut where it has none."""
    transfer = loader(torch, monkeypatch, "loader_workers", params={"loader_workers": 1})
    transfer.close()
    assert torch.log[-1] == ("shutdown",)
    assert (transfer.batches, transfer.matrix, transfer.resident, transfer.items) == (None, None, None, None)
    alone = loader(torch, monkeypatch, "loader")
    alone.close()
    assert ("shutdown",) not in torch.log and alone.matrix is None


def test_the_dataset_views_each_item_and_the_sampler_cycles_without_end(torch: CudaTorch) -> None:
    """ItemDataset[i] is from_numpy of item i (no copy); CycledSampler yields 0 ... n-1 over and over."""
    items = pattern(5, (3, *SHAPE))
    dataset = ItemDataset(items)
    assert len(dataset) == 3
    item = dataset[1]
    assert torch.log[-1] == ("from_numpy", items[1].ctypes.data) and np.shares_memory(item.array, items)
    sampler = iter(CycledSampler(3))
    assert [next(sampler) for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]


# MPS through the Apple GPU stand-in, and real copies with the CPU build ---------------------------------------------------


@pytest.mark.parametrize("mode, direction, submitted, waited", [
    ("pageable", H2D, 2, 2), ("tensor", H2D, 2, 2), ("pinned", H2D, 2, 1), ("pinned_into", H2D, 2, 1), ("pin_per_call", H2D, 2, 1),
    ("pin", H2D, 1, 1), ("pageable", D2H, 2, 2), ("pinned_into", D2H, 2, 1),
])  # fmt: skip
def test_on_mps_a_pinned_copy_is_queued_without_a_wait_and_every_call_ends_in_one_synchronize(
        monkeypatch: pytest.MonkeyPatch, mode: str, direction: str, submitted: int, waited: int) -> None:  # fmt: skip
    """Per call: the blit (waited for unless non_blocking) and torch.mps.synchronize(), no event; the bytes arrive."""
    mac = FakeTorch("2.14.1")
    monkeypatch.setattr(pytorch, "_torch", lambda: mac)
    transfer = TorchBackend().prepare(key(mode, device="mps", direction=direction).at(BATCH), {})
    mac.submissions = mac.waits = 0
    assert transfer() is None
    assert (mac.submissions, mac.waits, mac.event_records) == (submitted, waited, 0)
    transfer.verify()


def test_on_mps_a_pytorch_that_pins_onto_mps_0_has_its_pinned_source_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyTorch 2.7 to 2.13 gives an mps:0 tensor that is_pinned() calls pageable: the source check says so."""
    monkeypatch.setattr(pytorch, "_torch", lambda: FakeTorch("2.13.0"))
    with pytest.raises(VerificationError) as refused:
        TorchTransfer(key("pinned", device="mps").at(BATCH))
    assert str(refused.value) == "torch/pinned/copy@mps: PyTorch did not pin the source (is_pinned() is False)"


@needs_torch
def test_with_real_pytorch_each_cpu_copy_delivers_real_bytes() -> None:
    """The CPU build: pageable and tensor, copy and seed, and d2h, each copies and passes its own check."""
    for mode, op in (("pageable", "copy"), ("pageable", "seed"), ("tensor", "copy"), ("tensor", "seed"), ("pageable_into", "copy")):
        transfer = TorchTransfer(key(mode, op, "cpu").at(BATCH))
        assert transfer() is None
        moved, result, seconds = transfer._run()
        assert seconds is None and moved.data_ptr() != transfer.source.data_ptr() and (result is None) is (op == "copy")
        transfer.verify()
        transfer.close()
    down = TorchBack(key("pageable", device="cpu", direction=D2H).at(BATCH))
    assert down() is None and down.moved.data_ptr() != down.on_device.data_ptr()
    down.verify()
    into = TorchBack(key("pageable_into", device="cpu", direction=D2H).at(BATCH))
    held = into.into.data_ptr()
    assert into() is None and into.into.data_ptr() == held != into.on_device.data_ptr()
    into.verify()


@needs_torch
def test_with_real_pytorch_a_cpu_destination_is_compared_where_it_lies() -> None:
    """On the CPU the copy's destination is host memory already: read in place (no staging buffer), and a copy
    that loses its last byte fails the check."""
    from xferbench.measuring.buffers import HostRead

    transfer = TorchTransfer(key("pageable", "copy", "cpu").at(BATCH))
    moved, _, _ = transfer._run()
    read, staging = transfer._read_back(moved)
    assert staging is None and isinstance(read, HostRead) and np.shares_memory(read.flat, moved.numpy())
    real_run = transfer._run

    def losing() -> Any:
        moved, result, seconds = real_run()
        moved.reshape(-1)[-1] += 1
        return moved, result, seconds

    transfer._run = losing  # type: ignore[method-assign]
    with pytest.raises(VerificationError, match=r"1 of [\d,]+ bytes differ from the source \(the first at byte [\d,]+\)"):
        transfer.verify()
