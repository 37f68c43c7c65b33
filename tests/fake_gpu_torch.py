"""A stand-in for PyTorch built for AMD GPUs (ROCm) or Intel GPUs (XPU), over host memory: GPU tensors are
NumPy arrays of their own, and a copy queued without waiting lands only when the device is synchronized.

As strict as PyTorch where xferbench leans on it (docs.pytorch.org notes/hip; torch/cuda, torch/xpu):
- ROCm: the device is `cuda`; torch.version.hip is set and torch.version.cuda is None; device properties
  carry gcnArchName, and only the attributes torch._C._CudaDeviceProperties has (anything else is an
  AttributeError). torch.xpu is there, with no device (device_count 0), and an xpu tensor is refused.
- XPU (from 2.5): torch.xpu's is_available, device_count, set_device, synchronize, get_device_name,
  get_device_properties (_XpuDeviceProperties' attributes only) and Event; torch.xpu.Event.elapsed_time
  raises NotImplementedError before 2.6 (pytorch/pytorch#140873). torch.cuda is not compiled in: any
  call that would touch a device raises AssertionError("Torch not compiled with CUDA enabled").
- pin_memory pins for the current accelerator with no device argument (2.5, pytorch/pytorch#126376); a
  device argument is deprecated (DeprecationWarning).
- Asynchronous work: .to(gpu, non_blocking=True) and copy_(non_blocking=True) from pinned memory are
  queued on the device and land when it is synchronized (torch.cuda/xpu.synchronize, or an event's wait);
  an event is recorded in the queue, and elapsed_time between events that have not completed raises, as
  cudaEventElapsedTime's cudaErrorNotReady makes PyTorch raise. A GPU tensor has no NumPy view.
- A device index past the last GPU is refused; fresh GPU memory holds zeros, so a copy that never
  landed leaves zeros to find.
"""

from __future__ import annotations

import importlib.machinery
import time
import warnings
from types import SimpleNamespace
from typing import Any

import numpy as np

NO_CUDA = "Torch not compiled with CUDA enabled"
DEVICE_TYPES = ("cpu", "cuda", "mps", "meta", "xpu")
# torch._C._CudaDeviceProperties' attributes on ROCm (torch/csrc/cuda/Module.cpp) and torch._C._XpuDeviceProperties'
# (torch/csrc/xpu/Module.cpp) that the stand-in answers; any other attribute is an AttributeError, as there.
CUDA_PROPS = ("name", "major", "minor", "total_memory", "multi_processor_count", "is_integrated", "is_multi_gpu_board",
              "gcnArchName", "uuid", "pci_bus_id", "pci_device_id", "pci_domain_id", "L2_cache_size")  # fmt: skip
XPU_PROPS = ("name", "platform_name", "type", "driver_version", "version", "total_memory", "max_compute_units",
             "gpu_eu_count", "gpu_subslice_count", "max_work_group_size", "max_num_sub_groups", "sub_group_sizes",
             "has_fp16", "has_fp64", "has_atomic64")  # fmt: skip


def version_tuple(version: str) -> tuple[int, int]:
    major, minor = version.split("+")[0].split(".")[:2]
    return int(major), int(minor)


class Props:
    def __init__(self, allowed: tuple[str, ...], **values: Any) -> None:
        unknown = set(values) - set(allowed)
        assert not unknown, f"not a property of this build: {unknown}"
        self.__dict__.update(values)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"'torch._C._DeviceProperties' object has no attribute '{name}'")


class FakeDevice:
    def __init__(self, spec: "str | FakeDevice | int", default: str = "cuda") -> None:
        if isinstance(spec, FakeDevice):
            self.type, self.index = spec.type, spec.index
            return
        if isinstance(spec, int):
            self.type, self.index = default, spec
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


class FakeTensor:
    def __init__(self, array: np.ndarray, device: FakeDevice, torch: "GpuTorch", pinned: bool = False) -> None:
        self.array, self.device, self._torch, self.pinned = array, device, torch, pinned

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    def _gpu(self) -> bool:
        return self.device.type != "cpu"

    def _copy_into(self, target: np.ndarray, source: "FakeTensor", non_blocking: bool) -> None:
        """A copy between host and GPU (or within one): queued where it may run later, else done now."""
        torch, gpu = self._torch, self.device if self._gpu() else source.device
        if gpu.type == "cpu":
            target[...] = source.array
            return
        if non_blocking and (source.pinned or self.pinned):  # an asynchronous DMA: it runs when the device is waited for
            snapshot = source.array
            torch.queue(gpu).append(lambda: target.__setitem__(Ellipsis, np.broadcast_to(snapshot, target.shape)))
            return
        torch.run(gpu)  # a blocking copy waits for the work queued before it, then copies
        target[...] = source.array

    def to(self, device: Any = None, dtype: Any = None, non_blocking: bool = False, copy: bool = False) -> "FakeTensor":
        target = self._torch.placed(device) if device is not None else self.device
        if target == self.device and not copy and dtype is None:
            return self
        result = FakeTensor(np.zeros(self.array.shape, dtype or self.array.dtype), target, self._torch)
        result._copy_into(result.array, self if dtype is None else FakeTensor(self.array.astype(dtype), self.device, self._torch,
                                                                              self.pinned), non_blocking)  # fmt: skip
        return result

    def type(self, dtype: Any) -> "FakeTensor":
        return FakeTensor(self.array.astype(dtype), self.device, self._torch)

    def __getitem__(self, index: Any) -> "FakeTensor":
        return FakeTensor(np.asarray(self.array[index]), self.device, self._torch, self.pinned)

    def cpu(self) -> "FakeTensor":
        return self.to("cpu")

    def numpy(self) -> np.ndarray:
        if self._gpu():
            raise TypeError(f"can't convert {self.device.type}:{self.device.index} device type tensor to numpy. Use Tensor.cpu()"
                            " to copy the tensor to host memory first.")  # fmt: skip
        return self.array

    def data_ptr(self) -> int:
        return self.array.ctypes.data

    def numel(self) -> int:
        return self.array.size

    def reshape(self, *shape: Any) -> "FakeTensor":
        return FakeTensor(self.array.reshape(*shape), self.device, self._torch, self.pinned)

    def copy_(self, src: "FakeTensor", non_blocking: bool = False) -> "FakeTensor":
        if src.array.size != self.array.size and src.array.size != 1:
            raise RuntimeError(f"The size of tensor a {list(self.array.shape)} must match the size of tensor b {list(src.array.shape)}")
        self._copy_into(self.array, src, non_blocking)
        return self

    def zero_(self) -> "FakeTensor":
        if self._gpu():
            self._torch.run(self.device)  # a kernel in the queue, after what came before
        self.array[...] = 0
        return self

    def is_pinned(self, device: Any = None) -> bool:
        if device is not None:
            warnings.warn("The argument 'device' of Tensor.is_pinned() is deprecated. Please do not pass this argument.",
                          DeprecationWarning, stacklevel=2)  # fmt: skip
        return self.pinned

    def pin_memory(self, device: Any = None) -> "FakeTensor":
        if device is not None:
            warnings.warn("The argument 'device' of Tensor.pin_memory() is deprecated. Please do not pass this argument.",
                          DeprecationWarning, stacklevel=2)  # fmt: skip
        if self._gpu():
            raise RuntimeError(f"cannot pin '{self.device.type}' tensor: only dense CPU tensors can be pinned")
        return FakeTensor(self.array.copy(), FakeDevice("cpu"), self._torch, pinned=True)


class GpuTorch:
    """The module, as a ROCm build (build="rocm") or an XPU build (build="xpu") of `version` sees `gpus`:
    [{"name", "memory", ... the build's properties}]."""

    uint8, float32, float64 = np.uint8, np.float32, np.float64

    class OutOfMemoryError(RuntimeError):
        pass

    def __init__(self, build: str, version: str, gpus: list[dict[str, Any]], locations: list[str] | None = None) -> None:
        assert build in ("rocm", "xpu")
        self.build, self.__version__, self.release = build, version, version_tuple(version)
        self.__spec__ = importlib.machinery.ModuleSpec("torch", None, is_package=True)
        self.__spec__.submodule_search_locations = locations or []
        self.gpus = gpus
        self.kind = "cuda" if build == "rocm" else "xpu"
        self.pending: dict[FakeDevice, list[Any]] = {}
        self.current = 0
        self.version = SimpleNamespace(cuda=None, hip="6.3.42131-fa1d09cbd" if build == "rocm" else None,
                                       xpu="20250101" if build == "xpu" else None)  # fmt: skip
        self.backends = SimpleNamespace(mps=SimpleNamespace(is_available=lambda: False, is_built=lambda: False))
        self.mps = SimpleNamespace(is_available=lambda: False, device_count=lambda: 0)
        accelerator = self._accelerator()
        absent = self._absent()
        self.cuda = accelerator if build == "rocm" else absent
        self.xpu = accelerator if build == "xpu" else SimpleNamespace(is_available=lambda: False, device_count=lambda: 0)
        del absent

    # --- devices and their queues --------------------------------------------------------------------------
    def placed(self, device: Any) -> FakeDevice:
        target = FakeDevice(device, default=self.kind)
        if target.type == "cpu":
            return FakeDevice("cpu")
        if target.type == "cuda" and self.build != "rocm":
            raise AssertionError(NO_CUDA)
        if target.type != self.kind:
            raise RuntimeError(f"PyTorch is not linked with support for {target.type} devices")
        index = self.current if target.index is None else target.index
        if not 0 <= index < len(self.gpus):
            raise RuntimeError(f"{'HIP' if self.build == 'rocm' else 'XPU'} error: invalid device ordinal")
        return FakeDevice(f"{self.kind}:{index}")

    def queue(self, device: FakeDevice) -> list[Any]:
        return self.pending.setdefault(self.placed(device), [])

    def run(self, device: Any) -> None:
        work = self.queue(self.placed(device))
        while work:
            work.pop(0)()

    def _index(self, device: Any) -> int:
        return self.current if device is None else self.placed(device).index

    def _accelerator(self) -> SimpleNamespace:
        torch = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.enable_timing, self.recorded, self.done, self.at = enable_timing, False, False, 0.0

            def record(self, stream: Any = None) -> None:
                self.recorded, self.done = True, False

                def stamp() -> None:
                    self.at, self.done = time.perf_counter(), True

                torch.queue(FakeDevice(f"{torch.kind}:{torch.current}")).append(stamp)

            def synchronize(self) -> None:
                torch.run(FakeDevice(f"{torch.kind}:{torch.current}"))

            def query(self) -> bool:
                return self.done or not self.recorded

            def elapsed_time(self, end: "Event") -> float:
                if torch.build == "xpu" and torch.release < (2, 6):
                    raise NotImplementedError("elapsed_time is not supported by XPUEvent.")
                if not (self.enable_timing and end.enable_timing):
                    raise ValueError("Both events must be created with argument 'enable_timing=True'.")
                if not (self.recorded and end.recorded):
                    raise RuntimeError("Both events must be recorded before calculating elapsed time.")
                if not (self.done and end.done):
                    raise RuntimeError(f"{'HIP' if torch.build == 'rocm' else 'XPU'} error: device not ready")
                return (end.at - self.at) * 1e3

        def synchronize(device: Any = None) -> None:
            torch.run(FakeDevice(torch._index(device), default=torch.kind))

        def set_device(device: Any) -> None:
            torch.current = torch._index(device)

        def properties(device: Any = None) -> Props:
            gpu = torch.gpus[torch._index(device)]
            return Props(CUDA_PROPS if torch.build == "rocm" else XPU_PROPS, **gpu)

        return SimpleNamespace(
            is_available=lambda: bool(torch.gpus), device_count=lambda: len(torch.gpus), synchronize=synchronize,
            set_device=set_device, current_device=lambda: torch.current, get_device_properties=properties,
            get_device_name=lambda device=None: properties(device).name, Event=Event, OutOfMemoryError=GpuTorch.OutOfMemoryError,
        )  # fmt: skip

    def _absent(self) -> SimpleNamespace:
        def no_cuda(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError(NO_CUDA)

        return SimpleNamespace(device_count=lambda: 0, is_available=lambda: False, synchronize=no_cuda, set_device=no_cuda,
                               get_device_name=no_cuda, get_device_properties=no_cuda, Event=no_cuda, Stream=no_cuda,
                               OutOfMemoryError=GpuTorch.OutOfMemoryError)  # fmt: skip

    # --- tensors ---------------------------------------------------------------------------------------------
    def device(self, spec: Any) -> FakeDevice:
        return FakeDevice(spec, default=self.kind)

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
        where = self.placed(device)
        if pin_memory and where.type != "cpu":
            raise RuntimeError("Only dense CPU tensors can be pinned")
        if pin_memory and not self.gpus:
            raise RuntimeError("Need to provide pin_memory allocator to use pin memory.")
        return FakeTensor(np.zeros(size, dtype), where, self, pinned=pin_memory)
