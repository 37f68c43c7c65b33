"""A stand-in for PyTorch on an Apple GPU, as strict as the parts xferbench touches (PyTorch's
aten/src/ATen/mps: MPSEvent.mm, MPSStream.mm, MPSHooks.mm; operations/Copy.mm).

- torch.mps.event.Event(enable_timing=True).record() commits a command buffer of its own
  (MPSEventPool::recordEvent(..., syncEvent=true) -> MPSStream::synchronize(COMMIT)): counted in
  `submissions`, beside the copies and synchronizes that the user's own expression causes.
- elapsed_time() can raise as PyTorch's did when Metal's listener callbacks ran out of order
  ("End event N was not recorded after start event M"), with `out_of_order=True`.
- .to("mps") wraps the host pages and blits them, waiting for the blit (COMMIT_AND_WAIT) unless
  non_blocking; the data lands in a buffer of its own ("unified" memory, here a NumPy array).
- pin_memory() raises: this stand-in has no pinned memory on MPS, as PyTorch before 2.x had none.
Anything else xferbench calls raises AttributeError, as a missing API would.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np


class FakeDevice:
    def __init__(self, spec: "str | FakeDevice") -> None:
        text = spec if isinstance(spec, str) else f"{spec.type}"
        self.type, _, index = text.partition(":")
        if self.type not in ("cpu", "mps"):
            raise RuntimeError(f"Expected one of cpu, mps device type at start of device string: {text}")
        self.index = int(index) if index else None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakeDevice) and (self.type, self.index) == (other.type, other.index)

    def __repr__(self) -> str:
        return f"device(type='{self.type}')"


class FakeTensor:
    def __init__(self, array: np.ndarray, device: FakeDevice, torch: "FakeTorch") -> None:
        self.array, self.device, self._torch = array, device, torch

    def to(self, device: Any, non_blocking: bool = False, copy: bool = False) -> "FakeTensor":
        target = FakeDevice(device) if not isinstance(device, FakeDevice) else device
        if target == self.device and not copy:
            return self
        self._torch.submissions += 1  # the blit's command buffer
        if not non_blocking:
            self._torch.waits += 1
        return FakeTensor(self.array.copy(), target, self._torch)

    def type(self, dtype: Any) -> "FakeTensor":
        return FakeTensor(self.array.astype(dtype), self.device, self._torch)

    def __getitem__(self, index: Any) -> "FakeTensor":
        return FakeTensor(np.asarray(self.array[index]), self.device, self._torch)

    def cpu(self) -> "FakeTensor":
        return self.to("cpu")

    def numpy(self) -> np.ndarray:
        if self.device.type != "cpu":
            raise TypeError("can't convert mps:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.")
        return self.array

    def data_ptr(self) -> int:
        return self.array.ctypes.data

    def numel(self) -> int:
        return self.array.size

    def reshape(self, *shape: Any) -> "FakeTensor":
        return FakeTensor(self.array.reshape(*shape), self.device, self._torch)

    def copy_(self, other: "FakeTensor") -> "FakeTensor":
        self.array[...] = other.array
        return self

    def pin_memory(self) -> "FakeTensor":
        raise RuntimeError("Need to provide pin_memory allocator to use pin memory.")


class FakeTorch:
    """The module: torch.device, from_numpy, empty, float32, uint8 and torch.mps."""

    float32, uint8 = np.float32, np.uint8

    def __init__(self, out_of_order: bool = False) -> None:
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

        self.mps = SimpleNamespace(event=SimpleNamespace(Event=Event), synchronize=synchronize)
        self.backends = SimpleNamespace(mps=SimpleNamespace(is_available=lambda: True))

    def device(self, spec: str) -> FakeDevice:
        return FakeDevice(spec)

    def from_numpy(self, array: np.ndarray) -> FakeTensor:
        return FakeTensor(array, FakeDevice("cpu"), self)

    def tensor(self, array: np.ndarray) -> FakeTensor:
        return FakeTensor(np.array(array), FakeDevice("cpu"), self)

    def empty(self, *shape: Any, dtype: Any = np.uint8, device: Any = "cpu", pin_memory: bool = False) -> FakeTensor:
        if pin_memory:
            raise RuntimeError("Need to provide pin_memory allocator to use pin memory.")
        size = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape
        return FakeTensor(np.empty(size, dtype), FakeDevice(device) if isinstance(device, str) else device, self)
