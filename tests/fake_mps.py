"""A stand-in for PyTorch on an Apple-silicon Mac, as strict as the parts xferbench touches (PyTorch's
aten/src/ATen/mps: MPSEvent.mm, MPSStream.mm, MPSHooks.mm, MPSAllocator.mm; operations/Copy.mm), so that
a call the real torch.mps refuses fails here too.

- torch.mps.event.Event(enable_timing=True).record() commits a command buffer of its own
  (MPSEventPool::recordEvent(..., syncEvent=true) -> MPSStream::synchronize(COMMIT)): counted in
  `submissions`, beside the copies and synchronizes that the user's own expression causes.
- elapsed_time() can raise as PyTorch's did when Metal's listener callbacks ran out of order
  ("End event N was not recorded after start event M"), with `out_of_order=True`.
- .to("mps") and copy_ between the CPU and MPS wrap the host pages and blit them, waiting for the blit
  (COMMIT_AND_WAIT) unless non_blocking; the data lands in a buffer of its own ("unified" memory, here a
  NumPy array of its own).
- Pinned memory follows the release (`version`): up to 2.6 pinning raises without CUDA; from 2.7 to 2.13
  torch.empty(pin_memory=True) gives a tensor on mps:0 that is_pinned() calls pageable, and
  Tensor.pin_memory() raises on the storage's device; from 2.14 (pytorch/pytorch#181720) both give a
  pinned CPU tensor backed by a shared Metal buffer.
- A Mac's PyTorch has no CUDA: torch.cuda.device_count() is 0, is_available() False, and every CUDA
  call that would touch a device raises as an uncompiled CUDA does; torch.mps has no Stream.
- MPS has no float64: casting an MPS tensor to it raises; an MPS tensor has no NumPy view.
Anything else xferbench calls raises AttributeError, as a missing API would.
"""

from __future__ import annotations

import importlib.machinery
from types import SimpleNamespace
from typing import Any

import numpy as np

NO_CUDA = "Torch not compiled with CUDA enabled"
DEVICE_TYPES = ("cpu", "cuda", "mps", "meta", "xpu")  # what torch.device parses; only cpu and mps hold data here


def version_tuple(version: str) -> tuple[int, int]:
    """'2.14.1+cpu' -> (2, 14)."""
    major, minor = version.split("+")[0].split(".")[:2]
    return int(major), int(minor)


class FakeDevice:
    def __init__(self, spec: "str | FakeDevice") -> None:
        if isinstance(spec, FakeDevice):
            self.type, self.index = spec.type, spec.index
            return
        kind, _, index = str(spec).partition(":")
        if kind not in DEVICE_TYPES or (index and not index.isdigit()):
            raise RuntimeError(f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of device string: {spec}")
        self.type, self.index = kind, int(index) if index else None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakeDevice) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __repr__(self) -> str:
        return f"device(type='{self.type}')" if self.index is None else f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


def placed(device: "str | FakeDevice") -> FakeDevice:
    """Where a tensor asked for on `device` lives: an MPS tensor is on mps:0; CUDA is not compiled in."""
    target = FakeDevice(device)
    if target.type == "cuda":
        raise AssertionError(NO_CUDA)
    if target.type not in ("cpu", "mps"):
        raise NotImplementedError(f"Could not run 'aten::empty.memory_format' with arguments from the '{target.type}' backend")
    if target.type == "mps":
        if target.index not in (None, 0):
            raise RuntimeError(f"Invalid device: {target}; MPS has one device, mps:0")
        return FakeDevice("mps:0")
    return FakeDevice("cpu")


class FakeTensor:
    def __init__(self, array: np.ndarray, device: FakeDevice, torch: "FakeTorch", pinned: bool = False) -> None:
        self.array, self.device, self._torch, self.pinned = array, device, torch, pinned

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    def _blit(self, non_blocking: bool) -> None:
        """A CPU<->MPS copy: one command buffer, waited for unless non_blocking (Copy.mm, copy_and_sync)."""
        self._torch.submissions += 1
        if not non_blocking:
            self._torch.waits += 1

    def to(self, device: Any = None, dtype: Any = None, non_blocking: bool = False, copy: bool = False) -> "FakeTensor":
        target = placed(device) if device is not None else self.device
        if target == self.device and not copy and dtype is None:
            return self
        if target != self.device:
            self._blit(non_blocking)
        array = self.array.astype(dtype) if dtype is not None else self.array.copy()
        return FakeTensor(array, target, self._torch)

    def type(self, dtype: Any) -> "FakeTensor":
        if self.device.type == "mps" and np.dtype(dtype) == np.float64:
            raise TypeError("Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64."
                            " Please use float32 instead.")  # fmt: skip
        return FakeTensor(self.array.astype(dtype), self.device, self._torch)

    def __getitem__(self, index: Any) -> "FakeTensor":
        return FakeTensor(np.asarray(self.array[index]), self.device, self._torch, self.pinned)

    def cpu(self) -> "FakeTensor":
        return self.to("cpu")

    def numpy(self) -> np.ndarray:
        if self.device.type != "cpu":
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor"
                            " to host memory first.")  # fmt: skip
        return self.array

    def data_ptr(self) -> int:
        return self.array.ctypes.data

    def numel(self) -> int:
        return self.array.size

    def reshape(self, *shape: Any) -> "FakeTensor":
        return FakeTensor(self.array.reshape(*shape), self.device, self._torch, self.pinned)

    def copy_(self, src: "FakeTensor", non_blocking: bool = False) -> "FakeTensor":
        try:
            source = np.broadcast_to(src.array, self.array.shape)
        except ValueError:
            raise RuntimeError(f"The size of tensor a {list(self.array.shape)} must match the size of tensor b"
                               f" {list(src.array.shape)}") from None  # fmt: skip
        if self.device != src.device:
            self._blit(non_blocking)
        self.array[...] = source
        return self

    def zero_(self) -> "FakeTensor":
        self.array[...] = 0
        return self

    def is_pinned(self) -> bool:
        return self.pinned

    def pin_memory(self) -> "FakeTensor":
        torch = self._torch
        if self.device.type != "cpu":
            raise RuntimeError(f"cannot pin '{self.device}' tensor: only dense CPU tensors can be pinned")
        if torch.release < (2, 7):
            raise RuntimeError("Need to provide pin_memory allocator to use pin memory.")
        if torch.release < (2, 14):  # the MPS allocator's DataPtr was tagged mps:0 (pytorch/pytorch#181374)
            raise RuntimeError('Attempted to set the storage of a tensor on device "cpu" to a storage on different device'
                               ' "mps:0".  This is no longer allowed; the devices must match.')  # fmt: skip
        return FakeTensor(self.array.copy(), FakeDevice("cpu"), torch, pinned=True)


class FakeTorch:
    """The module: torch.device, from_numpy, tensor, empty, dtypes, torch.cuda (absent) and torch.mps."""

    float32, float64, uint8 = np.float32, np.float64, np.uint8

    class OutOfMemoryError(RuntimeError):
        pass

    def __init__(self, version: str = "2.14.1", out_of_order: bool = False) -> None:
        self.__version__ = version
        self.__spec__ = importlib.machinery.ModuleSpec("torch", None)  # importlib.util.find_spec("torch") finds it
        self.release = version_tuple(version)
        self.version = SimpleNamespace(cuda=None)
        self.submissions = 0  # command buffers committed
        self.waits = 0  # times the host waited for the GPU
        self.event_records = 0
        torch = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.enable_timing, self.recorded = enable_timing, False

            def record(self) -> None:
                torch.event_records += 1
                torch.submissions += 1  # recordEvent(..., syncEvent=true): a command buffer committed
                self.recorded = True

            def elapsed_time(self, end: "Event") -> float:
                torch.waits += 1  # waits for the end event's callback
                if out_of_order:
                    raise RuntimeError("End event 2 was not recorded after start event 1")
                return 0.001

        def synchronize() -> None:
            torch.waits += 1
            torch.submissions += 1

        def no_cuda(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError(NO_CUDA)

        class Dummy:  # torch._C's dummy base classes in a build without CUDA
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                raise RuntimeError(f"Tried to instantiate dummy base class {type(self).__name__}")

        self.mps = SimpleNamespace(event=SimpleNamespace(Event=Event), synchronize=synchronize, device_count=lambda: 1,
                                   is_available=lambda: True)  # fmt: skip
        self.backends = SimpleNamespace(mps=SimpleNamespace(is_available=lambda: True, is_built=lambda: True))
        self.cuda = SimpleNamespace(
            device_count=lambda: 0, is_available=lambda: False, synchronize=no_cuda, set_device=no_cuda,
            get_device_name=no_cuda, get_device_properties=no_cuda, _sleep=no_cuda, stream=no_cuda,
            Event=type("Event", (Dummy,), {}), Stream=type("Stream", (Dummy,), {}), OutOfMemoryError=FakeTorch.OutOfMemoryError,
        )  # fmt: skip

    def device(self, spec: "str | FakeDevice") -> FakeDevice:
        return FakeDevice(spec)

    def get_num_threads(self) -> int:
        return 8

    def from_numpy(self, array: np.ndarray) -> FakeTensor:
        if not isinstance(array, np.ndarray):
            raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
        return FakeTensor(array, FakeDevice("cpu"), self)

    def tensor(self, array: np.ndarray) -> FakeTensor:
        return FakeTensor(np.array(array), FakeDevice("cpu"), self)

    def empty(self, *shape: Any, dtype: Any = np.uint8, device: Any = "cpu", pin_memory: bool = False) -> FakeTensor:
        size = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        where = placed(device)
        array = np.empty(size, dtype)
        if not pin_memory:
            return FakeTensor(array, where, self)
        if where.type != "cpu":
            raise RuntimeError("Only dense CPU tensors can be pinned")
        if self.release < (2, 7):
            raise RuntimeError("Need to provide pin_memory allocator to use pin memory.")
        if self.release < (2, 14):  # the MPS allocator's buffer, tagged mps:0 and not pinned (pytorch/pytorch#181374)
            return FakeTensor(array, FakeDevice("mps:0"), self)
        return FakeTensor(array, FakeDevice("cpu"), self, pinned=True)
