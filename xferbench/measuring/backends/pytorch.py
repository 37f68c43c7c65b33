"""`torch`: PyTorch's `.to(device)` from pageable and pinned memory, and the preallocated peak pattern.

Modes:
- pageable: torch.from_numpy(x).to(device), the original report's transfer;
- pinned: a pinned source, .to(device, non_blocking=True), then the device is synchronized;
- pinned_into: a pinned source copied into a preallocated device tensor (dst.copy_), the peak.
- pageable_into: the NumPy batch (pageable) copied into a preallocated device tensor with a plain dst.copy_(x);
  device to host, a preallocated pageable host tensor filled with out.copy_(device_tensor): .to('cpu') without
  the fresh host tensor, and so without its page faults (not in the default sweep);
- pin_per_call: x.pin_memory().to(device, non_blocking=True), pinning inside every call: the
  pattern PyTorch's own tutorial warns is usually slower than a plain .to() (not in the default sweep);
- tensor: torch.tensor(x).to(device), a fresh host copy of the NumPy batch on every call before the
  transfer, as TensorFlow makes one (not in the default sweep);
- pin: x.pin_memory() alone, no device copy: what pinning a batch costs per call (pin_per_call's
  first half), from PyTorch's caching host allocator once warm; each point's pin_s is the first call
  of that size, which allocated the page-locked block (not in the default sweep).
Ops: copy times the transfer alone; seed times the report's `.to(device).type(float32)[0, 0].cpu()`.

On an Apple GPU (mps) every mode is a copy within unified memory (MPS_COPY), and the pinned modes run
where this PyTorch pins host memory for MPS: from 2.14, whose MPS pinned allocator (pytorch/pytorch
#181720) returns a CPU tensor backed by a shared Metal buffer, which the copy blits from directly
(pytorch/pytorch#189512; the 2.14.0 wheel's headers hold the allocator, 2.13's do not).

Directions (TorchBack): d2h brings a device tensor back, pageable with `.to("cpu")` (a fresh host
tensor per call), pageable_into with `out.copy_(src)` into a preallocated pageable tensor, and pinned_into
with `dst.copy_(src, non_blocking=True)` into a preallocated pinned tensor; bidir (pinned_into, CUDA) runs that d2h copy and pinned_into's h2d copy at once, each on a
stream of its own and timed by its own events.

pinned_into on CUDA can also be timed streamed: torch.cuda._sleep, a spin kernel PyTorch ships
compiled, holds a stream of its own while the copies and their events are queued behind it.
"""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

import numpy as np

from xferbench.measuring.backends.base import Backend, SeriesInfo, Transfer
from xferbench.measuring.buffers import VERIFY_CHUNK_BYTES, address_offset, check_all, check_arrived, fill_pattern, make_source, read_host
from xferbench.core.environment import apple_gpu_name, apple_silicon, cpu_name
from xferbench.measuring.backends import torch_gpus
from xferbench.core.errors import NotSupportedHere, VerificationError
from xferbench.measuring.backends.pipeline import BUFFER_BATCHES, DEFAULT_LOADER_WORKERS, PIPELINE_CLOCK, PipelineTransfer, cycled_indices, dataset_items, item_count, kernel_side
from xferbench.core.spec import (PIPELINE_MODES, BIDIR, BIDIRECTIONAL, D2H, DEVICE_TO_HOST, DIRECTIONS, H2D, HOST_TO_DEVICE, HOST_TO_HOST, STREAMED,
                            SeriesKey, Spec)  # fmt: skip
from xferbench.core.timing import STREAM_WARM_COPIES

PINNED_MODES = ("pinned", "pinned_into")  # start from a pinned source made once per point
PIN_MODES = (*PINNED_MODES, "pin_per_call", "pin")  # pinned host memory: a CUDA device, or MPS from PyTorch 2.14
INTO_MODES = ("pinned_into", "pageable_into")  # copy_ into a destination made once per point
MPS_PINNED_SINCE = "2.14"  # the first release with PyTorch's MPS pinned allocator (pytorch/pytorch#181720)
HOLD_TRIES = 4  # a hold found too short is lengthened and the run repeated, this many times in all
HOLD_MARGIN_S = 0.0005  # the hold lasts twice the last held run's enqueueing plus this
# The longest hold. Queueing STREAM_MAX_COPIES copies takes tens of milliseconds, so a hold this long
# that still ends first means copy_ itself waited for the spin: CUDA's launch queue was full. A longer
# hold would not help then, only stall the worker (worker.STALL_TIMEOUT_S) on every try.
HOLD_MAX_S = 2.0
ENQUEUE_GUESS_S = 50e-6  # per copy, before the first run has measured it: generous for PyTorch's dispatcher


# Why MPS series carry no device clock. torch.mps.event.Event would cost the call it times: each
# record() commits a command buffer of its own, elapsed_time() waits on another thread, and its
# timestamps are CPU times taken in Metal's event callbacks (which, run out of order, made
# elapsed_time() raise and lose the point), not a GPU clock. So MPS calls are timed by the host
# clock alone, around the user's .to('mps') and torch.mps.synchronize().
MPS_NO_DEVICE_CLOCK = ("torch.mps.event.Event is not a device clock: record() commits a command buffer of its own and"
                       " its times are CPU times in Metal's callbacks, so the host clock alone times MPS calls")

# What an MPS copy is, said in every mps series' note (aten/src/ATen/native/mps/operations/Copy.mm): the
# host and the GPU share one memory, so the bytes never cross a bus and the ceiling is the chip's memory
# bandwidth (telemetry.link_ceiling), not a link.
MPS_COPY = ("a copy within unified memory: PyTorch wraps the host tensor's pages in a Metal buffer"
            " (newBufferWithBytesNoCopy) and blits between it and the MPS tensor's own buffer, so no bus is crossed;"
            " the ceiling is the chip's memory bandwidth, of which a copy uses twice its MB/s (a read and a write)")
MPS_PINNED_COPY = ("a copy within unified memory: the pinned tensor is a CPU view of a shared Metal buffer, which"
                   " PyTorch blits from or into directly (no newBufferWithBytesNoCopy), so no bus is crossed; the ceiling"
                   " is the chip's memory bandwidth, of which a copy uses twice its MB/s (a read and a write)")


MPS_INTEL_COPY = ("a copy to the GPU of an Intel Mac: no unified memory there (the GPU is an AMD card over PCIe, or"
                  " Intel graphics), so neither Apple silicon's memory bandwidth nor a recorded link is its ceiling")


def mps_pinned_reason(torch: Any) -> str | None:
    """Why this PyTorch cannot pin host memory for MPS, or None where it can. Up to 2.6 pinning raised
    without CUDA; from 2.7 to 2.13 it returned a tensor on mps:0 that is_pinned() calls pageable, so a
    pinned series would have timed an MPS-to-MPS copy. Asked of the PyTorch itself, by a 1-byte pin."""
    version = getattr(torch, "__version__", "?")
    fix = f"pinned host memory on MPS needs PyTorch {MPS_PINNED_SINCE} or newer: pip install -U torch"
    try:
        probe = torch.empty(1, dtype=torch.uint8, pin_memory=True)
    except Exception as error:  # RuntimeError, NotImplementedError or AssertionError, by release: any is a refusal
        said = (str(error).splitlines() or [type(error).__name__])[0]
        return f"PyTorch {version} cannot pin host memory on a Mac ({said}); {fix}"
    if probe.device.type != "cpu" or not probe.is_pinned():
        return (f"PyTorch {version}'s pin_memory on a Mac gives a tensor on {probe.device} with is_pinned()"
                f" {probe.is_pinned()}, not pinned host memory; {fix}")  # fmt: skip
    return None


def pinned_size(nbytes: int) -> int:
    """What PyTorch's caching host allocator reserves for a pinned tensor: the next power of two."""
    return 1 << max(0, nbytes - 1).bit_length()


def _torch() -> Any:
    import torch

    return torch


def _pci_bus_id(props: Any) -> str | None:
    """The GPU's PCI address in CUDA's form, where this PyTorch reports it: NVML's facts match by it too."""
    parts = [getattr(props, name, None) for name in ("pci_domain_id", "pci_bus_id", "pci_device_id")]
    return None if any(p is None for p in parts) else "{:04x}:{:02x}:{:02x}.0".format(*parts)


class _TorchCopy(Transfer):
    """What every torch path shares: the device's events, its wait, and the verification's read-back."""

    torch: Any
    kind: str
    device: Any

    def _events(self) -> tuple[Any, Any] | None:
        """A device clock where one exists: CUDA's (HIP's on ROCm) events, and XPU's from PyTorch 2.6. MPS has
        none to offer (MPS_NO_DEVICE_CLOCK)."""
        torch = self.torch
        if self.kind == "cuda":
            return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if self.kind == "xpu" and not torch_gpus.xpu_clock_reason(torch):
            return torch.xpu.Event(enable_timing=True), torch.xpu.Event(enable_timing=True)
        return None

    def _use_device(self) -> None:
        """Make the series' GPU the current one: events, the caching allocator and pinning follow it."""
        if self.kind == "cuda":
            self.torch.cuda.set_device(self.device)
        elif self.kind == "xpu":
            self.torch.xpu.set_device(self.device)

    def _synchronize(self) -> None:
        if self.kind == "cuda":
            self.torch.cuda.synchronize(self.device)
        elif self.kind == "xpu":
            self.torch.xpu.synchronize(self.device)
        elif self.kind == "mps":
            self.torch.mps.synchronize()

    def _read_back(self, moved: Any) -> tuple[Any, np.ndarray | None]:
        """The verification's read of the destination, chunk by chunk, into pinned memory on CUDA:
        plain copies, no kernel. A destination in host memory is compared where it lies (read_host)."""
        torch = self.torch
        if moved.device.type == "cpu":
            return read_host(moved.numpy()), None
        size = min(moved.numel(), VERIFY_CHUNK_BYTES)
        staging = torch.empty(size, dtype=torch.uint8, pin_memory=self.kind in ("cuda", "xpu")).numpy()
        flat = moved.reshape(-1)

        def read(offset: int, out: np.ndarray) -> None:
            torch.from_numpy(out).copy_(flat[offset : offset + out.size])

        return read, staging


class TorchTransfer(_TorchCopy):
    def __init__(self, spec: Spec) -> None:
        torch = self.torch = _torch()
        key = spec.series
        self.label, self.mode, self.seed = key.label(), key.mode, key.op == "seed"
        self.device = torch.device(key.device)
        self.kind = self.device.type
        self._use_device()
        self.host = make_source(spec.batch_shape, aligned=key.host_buffer == "aligned")
        self.host_offset = address_offset(self.host) if self.mode not in PINNED_MODES else None
        self.source = torch.from_numpy(self.host)
        if self.mode in PINNED_MODES:
            self.source = torch.empty(spec.batch_shape, dtype=torch.uint8, pin_memory=True)
            if not self.source.is_pinned():  # a pinned series whose source is pageable would measure the wrong path
                raise VerificationError(f"{self.label}: PyTorch did not pin the source (is_pinned() is False)")
            self.source.copy_(torch.from_numpy(self.host))
        self.dest = (
            torch.empty(spec.batch_shape, dtype=torch.uint8, device=self.device)
            if self.mode in INTO_MODES
            else None
        )
        if self.mode == "pin":  # the first pin of this size allocates the block later calls reuse
            started = time.perf_counter()
            torch.from_numpy(self.host).pin_memory()
            self.pin_s = time.perf_counter() - started
        self.events = self._events() if self.mode != "pin" else None  # a host copy: no device clock to read
        self.method, self.transfers = key.method, 0
        if self.method == STREAMED:
            self.stream = torch.cuda.Stream(device=self.device)
            self.cycles_per_s: float | None = None  # torch.cuda._sleep's rate, timed on first use
            self.enqueue_per_copy_s = ENQUEUE_GUESS_S  # queueing one copy took this long last time
            self.hold_scale = 1  # grows 4-fold whenever a hold proves too short

    def _move(self) -> Any:
        self.transfers += 1
        if self.mode == "pageable_into":  # from pageable memory, as a user writes it: no non_blocking
            return self.dest.copy_(self.source)
        if self.dest is not None:
            return self.dest.copy_(self.source, non_blocking=True)
        if self.mode == "pinned":
            return self.source.to(self.device, non_blocking=True)
        if self.mode == "pin":
            return self.torch.from_numpy(self.host).pin_memory()
        if self.mode == "pin_per_call":
            return self.torch.from_numpy(self.host).pin_memory().to(self.device, non_blocking=True)
        if self.mode == "tensor":  # on the CPU, torch.tensor's fresh copy is the transfer: .to() adds nothing
            return self.torch.tensor(self.host).to(self.device)
        # On the CPU .to("cpu") returns the same tensor; copy=True forces the host-to-host copy.
        return self.torch.from_numpy(self.host).to(self.device, copy=self.kind == "cpu")

    def _run(self) -> tuple[Any, Any, float | None]:
        """One synchronized transfer: the device tensor, the seed op's host result, device seconds."""
        events = self.events
        if events:
            events[0].record()
        moved = self._move()
        result = moved.type(self.torch.float32)[0, 0].cpu() if self.seed else None
        if events:
            events[1].record()
        self._synchronize()
        return moved, result, events[0].elapsed_time(events[1]) / 1e3 if events else None

    def __call__(self) -> float | None:
        return self._run()[2]  # the tensors are dropped here, so no call holds two batches at once

    def _sleep_rate(self) -> float:
        """torch.cuda._sleep cycles per second on this GPU, timed with events over about 10 ms of spin,
        after a first spin that loads the kernel and wakes the clocks (either would slow the timed one)."""
        torch, cycles = self.torch, 20_000_000
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(self.stream):
            torch.cuda._sleep(cycles // 4)
            start.record(self.stream)
            torch.cuda._sleep(cycles)
            end.record(self.stream)
        end.synchronize()
        return cycles / (start.elapsed_time(end) / 1e3)

    def streamed(self, copies: int) -> float:
        """pinned_into's copies queued behind a spin kernel on a stream of its own. The spin lasts
        twice the queueing measured in the last run it held, plus a margin, at most HOLD_MAX_S; if the
        start event has already run once everything is queued, the hold was too short: it is made 4
        times longer, for this and every later run, and the run repeated. A failed run's queueing is
        no estimate: once CUDA's launch queue is full, copy_ waits for the spin itself to end."""
        torch, stream = self.torch, self.stream
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if self.cycles_per_s is None:
            self.cycles_per_s = self._sleep_rate()
        queued = copies + STREAM_WARM_COPIES
        for tries in range(1, HOLD_TRIES + 1):
            hold_s = min(HOLD_MAX_S, (2 * self.enqueue_per_copy_s * queued + HOLD_MARGIN_S) * self.hold_scale)
            with torch.cuda.stream(stream):
                torch.cuda._sleep(int(self.cycles_per_s * hold_s))
                began = time.perf_counter()
                for _ in range(STREAM_WARM_COPIES):
                    self.dest.copy_(self.source, non_blocking=True)
                start.record(stream)
                for _ in range(copies):
                    self.dest.copy_(self.source, non_blocking=True)
                end.record(stream)
                queueing_s = time.perf_counter() - began
                held = not start.query()
            self.transfers += queued
            end.synchronize()
            if held:
                self.enqueue_per_copy_s = queueing_s / queued
                return start.elapsed_time(end) / 1e3
            if hold_s >= HOLD_MAX_S:  # no longer hold is allowed: repeating it would only fail again
                break
            self.hold_scale *= 4
        why = f"queueing took {queueing_s:.3g} s and the {hold_s:.3g} s hold ended first"
        if hold_s >= HOLD_MAX_S or queueing_s >= 0.9 * hold_s:
            why += "; copy_ waited for the held stream: CUDA's launch queue may be full"
        raise RuntimeError(f"could not hold the stream while {copies} copies were queued, after {tries} tries ({why})")

    def host_span(self) -> tuple[int, int]:
        return self.source.data_ptr(), self.host.size

    def verify(self) -> None:
        fill_pattern(self.host, variant=1)  # new bytes: leftovers from warm-up cannot match
        if self.mode in PINNED_MODES:
            self.source.copy_(self.torch.from_numpy(self.host))  # the pinned copy of the source
        if self.dest is not None:
            self.dest.zero_()
        if self.method == STREAMED:
            self._synchronize()
            self.once()
            moved, result = self.dest, None
        else:
            moved, result, _ = self._run()
        if self.mode == "pin":
            if not moved.is_pinned():
                raise VerificationError(f"{self.label}: pin_memory() returned pageable memory (is_pinned() is False)")
        elif moved.device.type != self.kind or (self.device.index is not None and moved.device.index != self.device.index):
            raise VerificationError(f"{self.label}: data landed on {moved.device}, not {self.device}")
        if moved.data_ptr() == self.source.data_ptr():
            raise VerificationError(f"{self.label}: the result is the source tensor itself; nothing was copied")
        read, staging = self._read_back(moved)
        check_all(self.host, read, self.label, staging)
        if self.seed:
            check_arrived(self.host[0, 0].astype(np.float32), result.numpy(), f"{self.label} result")

    def close(self) -> None:
        self.dest = self.source = self.host = None


class TorchBack(_TorchCopy):
    """d2h and bidir: see the module's docstring."""

    def __init__(self, spec: Spec) -> None:
        torch = self.torch = _torch()
        key = spec.series
        self.label, self.bidir, self.transfers = key.label(), key.direction == BIDIR, 0
        self.device = torch.device(key.device)
        self.kind = self.device.type
        self._use_device()
        self.expected = make_source(spec.batch_shape)  # what the device tensor holds: the bytes d2h must bring back
        self.on_device = torch.from_numpy(self.expected).to(self.device, copy=True)
        self.into = torch.empty(spec.batch_shape, dtype=torch.uint8, pin_memory=True) if key.mode == "pinned_into" else None
        if key.mode == "pageable_into":  # a pageable host tensor made once: its pages are touched by the warm-up, not the samples
            self.into = torch.empty(spec.batch_shape, dtype=torch.uint8)
        self.into_pageable = key.mode == "pageable_into"
        self.moved: Any = None  # the host tensor the last d2h call produced
        self.up_host: np.ndarray | None = None
        if self.bidir:  # pinned_into's h2d copy, on buffers and a stream of its own
            self.up_host = make_source(spec.batch_shape)
            self.up_source = torch.empty(spec.batch_shape, dtype=torch.uint8, pin_memory=True)
            self.up_source.copy_(torch.from_numpy(self.up_host))
            self.up_dest = torch.empty(spec.batch_shape, dtype=torch.uint8, device=self.device)
            self.streams = {way: torch.cuda.Stream(device=self.device) for way in (H2D, D2H)}
        self.events = {way: self._events() for way in (H2D, D2H)}

    def _down(self) -> Any:
        if self.into_pageable:  # into pageable memory, as a user writes it: no non_blocking
            return self.into.copy_(self.on_device)
        if self.into is not None:
            return self.into.copy_(self.on_device, non_blocking=True)
        return self.on_device.to("cpu", copy=self.kind == "cpu")  # on the CPU .to("cpu") alone copies nothing

    def __call__(self) -> float | dict[str, float] | None:
        torch = self.torch
        if self.bidir:
            for way, copy in ((H2D, lambda: self.up_dest.copy_(self.up_source, non_blocking=True)), (D2H, self._down)):
                start, end = self.events[way]
                with torch.cuda.stream(self.streams[way]):
                    start.record()
                    copy()
                    end.record()
            self._synchronize()
            self.transfers += 1  # a call: one batch each way, whose bytes count both
            return {way: start.elapsed_time(end) / 1e3 for way, (start, end) in self.events.items()}
        events = self.events[D2H]
        if events:
            events[0].record()
        self.moved = self._down()
        if events:
            events[1].record()
        self._synchronize()
        self.transfers += 1
        return events[0].elapsed_time(events[1]) / 1e3 if events else None

    def host_span(self) -> tuple[int, int]:
        return (self.into.data_ptr() if self.into is not None else self.expected.ctypes.data), self.expected.size

    def verify(self) -> None:
        torch = self.torch
        fill_pattern(self.expected, variant=2)  # new bytes, not the h2d lane's: crossed lanes cannot match
        self.on_device.copy_(torch.from_numpy(self.expected))
        if self.into is not None:
            self.into.zero_()
        if self.bidir:
            fill_pattern(self.up_host, variant=1)
            self.up_source.copy_(torch.from_numpy(self.up_host))
            self.up_dest.zero_()
        self._synchronize()
        self()
        moved = self.into if self.into is not None else self.moved
        if moved.device.type != "cpu":
            raise VerificationError(f"{self.label}: the result is on {moved.device}, not in host memory")
        if moved.data_ptr() == self.on_device.data_ptr():
            raise VerificationError(f"{self.label}: the result is the device tensor itself; nothing was copied")
        check_all(self.expected, read_host(moved.numpy()), f"{self.label} (d2h)")
        if self.bidir:
            read, staging = self._read_back(self.up_dest)
            check_all(self.up_host, read, f"{self.label} (h2d)", staging)

    def close(self) -> None:
        self.on_device = self.into = self.moved = self.expected = self.up_host = None
        self.up_source = self.up_dest = None


class ItemDataset:
    """A map-style dataset of uint8 items, as torch.utils.data expects one: each item a tensor viewing the
    NumPy array (no copy), so the loader's collate makes the batch's one host copy. At module level, so
    worker processes started by spawn (macOS, Windows) can unpickle it."""

    def __init__(self, items: np.ndarray) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> Any:
        return _torch().from_numpy(self.items[index])


class CycledSampler:
    """Item indices 0 ... n - 1 over and over: an endless epoch, so the loader's workers never restart."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __iter__(self) -> Any:
        return cycled_indices(self.count)


def pytorchs_own_stops(worker_id: int) -> None:
    """A DataLoader process's SIGTERM and Ctrl-C as PyTorch expects them. Forked, it would keep the xferbench
    worker's (worker.stop_once), which turns the SIGTERM PyTorch ends a stuck process with into a Ctrl-C that
    process may then ignore; spawned, it has Python's own already."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if callable(signal.getsignal(signal.SIGINT)):  # one the worker set; not one ignored from the start
        signal.signal(signal.SIGINT, signal.default_int_handler)


def loader_settings(mode: str, params: dict[str, Any]) -> dict[str, Any]:
    """DataLoader's arguments for a loader mode: pin_memory from the mode, num_workers from
    --loader-workers where the mode has workers."""
    workers = int(params.get("loader_workers") or DEFAULT_LOADER_WORKERS) if mode.endswith("_workers") else 0
    settings: dict[str, Any] = {"num_workers": workers, "pin_memory": "_pin" in mode}
    if workers:
        settings["prefetch_factor"] = BUFFER_BATCHES
    return settings


class TorchLoader(PipelineTransfer, _TorchCopy):
    """A DataLoader over the pipeline's dataset, each batch then .to(device, non_blocking=True) and the
    device synchronized (the device's wait and the check's read-back are every torch path's)."""

    def __init__(self, spec: Spec, params: dict[str, Any]) -> None:
        torch = self.torch = _torch()
        key = spec.series
        self.label, self.batch_size, self.device_id = key.label(), spec.batch_size, key.device
        self.device = torch.device(key.device)
        self.kind = self.device.type
        if self.kind == "cuda":
            torch.cuda.set_device(self.device)  # the pin thread pins for the current device
        self.pinned = "_pin" in key.mode
        self.items = dataset_items(spec.batch_size, key.shape)
        side = kernel_side(key.device)
        # Orthogonal, so a chain of products neither grows nor fades into denormals; made on the CPU, as MPS
        # has no QR of its own, and the same matrix on every device.
        matrix = torch.randn(side, side, generator=torch.Generator().manual_seed(0))
        self.matrix = torch.linalg.qr(matrix)[0].to(self.device)
        self.resident = torch.zeros(1, dtype=torch.uint8, device=self.device)  # what feeds the kernel when no batch does
        if params.get("overlap"):
            self.time_kernel()  # before the loader's workers start
        settings = loader_settings(key.mode, params)
        own_stops = {"worker_init_fn": pytorchs_own_stops} if settings["num_workers"] else {}
        loader = torch.utils.data.DataLoader(ItemDataset(self.items), batch_size=spec.batch_size,
                                             sampler=CycledSampler(len(self.items)), **settings, **own_stops)  # fmt: skip
        self.batches = iter(loader)
        self.depth = settings["num_workers"] * BUFFER_BATCHES + 1  # the workers' batches in flight, and one pinned
        self.transfers = 0

    def _deliver(self) -> Any:
        batch = next(self.batches)
        if self.pinned and not batch.is_pinned():  # a pinned series whose batches are pageable would measure the wrong path
            raise VerificationError(f"{self.label}: the DataLoader delivered a batch that is not pinned (is_pinned() is False)")
        moved = batch.to(self.device, non_blocking=True)  # on the CPU the collated batch itself: .to('cpu') copies nothing
        self.transfers += 1
        self._synchronize()
        return moved

    def _read(self, batch: Any) -> tuple[Any, np.ndarray | None]:
        if batch.device.type != self.kind or (self.device.index is not None and batch.device.index != self.device.index):
            raise VerificationError(f"{self.label}: the batch is on {batch.device}, not {self.device}")
        if self.kind == "cpu":
            return read_host(batch.numpy()), None
        return self._read_back(batch)

    def _compute(self, batch: Any | None) -> None:
        torch = self.torch
        fed = self.resident if batch is None else batch  # the step's kernel waits for its batch; the same ops either way
        product = self.matrix + fed.reshape(-1)[:1].to(torch.float32)
        for _ in range(self.repeats):
            product = torch.mm(product, self.matrix)
        self._synchronize()

    def _stop(self) -> None:
        batches, self.batches = self.batches, None
        shutdown = getattr(batches, "_shutdown_workers", None)  # workers and the pin thread, now rather than at exit
        if shutdown:
            shutdown()
        self.matrix = self.resident = None


def loader_skip_reason(key: SeriesKey) -> str | None:
    """Why a DataLoader mode cannot run on this device or with this op, or None."""
    if key.device.startswith("xpu"):
        return "xferbench times the DataLoader on CUDA, MPS and the CPU; on xpu it times .to('xpu') from pageable and pinned memory"
    if "_pin" in key.mode and key.device == "cpu":
        return ("the DataLoader pins only for an accelerator (on the CPU it warns and leaves pin_memory off), so a pinned"
                " loader series would time the unpinned one; loader and loader_workers run on the CPU")  # fmt: skip
    if "_pin" in key.mode and key.device == "mps":
        return ("PyTorch's DataLoader turns pin_memory off on MPS (it warns 'not supported on MPS now'), so a pinned"
                " loader series would time the unpinned one; loader and loader_workers run on MPS")  # fmt: skip
    if key.op != "copy":
        return f"a pipeline series times the batches the pipeline delivers; the {key.op} op is for the single-copy modes"
    return None


def describe_loader(key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
    """What a DataLoader series does and waits for (torch/utils/data/dataloader.py and
    _utils/pin_memory.py): the collate's copy, the pinning and the device copy, and who does each."""
    torch = _torch()
    kind = key.device.split(":")[0]
    settings = loader_settings(key.mode, params)
    workers, pinned = settings["num_workers"], settings["pin_memory"]
    collate = (f"{workers} worker process(es) each collate a batch (torch.stack into shared memory), {BUFFER_BATCHES} batches"
               " ahead per worker" if workers else "the loop's own thread collates each batch (torch.stack) when it is asked for")  # fmt: skip
    pin = ""
    if pinned:
        pin = ("; a pin thread copies each collated batch into pinned memory (pin_memory()) as it arrives" if workers
               else "; the same thread then copies it into pinned memory (pin_memory()), with nothing ahead")  # fmt: skip
    if kind == "cuda":
        name, sync = torch.cuda.get_device_name(torch.device(key.device)), "torch.cuda.synchronize"
        copy = "; then .to(device, non_blocking=True) queues the device copy and the device is synchronized"
    elif kind == "mps":
        name, sync = apple_gpu_name(), "torch.mps.synchronize"
        copy = f"; then .to('mps', non_blocking=True), {MPS_COPY}, and torch.mps.synchronize"
    else:
        name, sync = cpu_name(), "none needed: the CPU copy is synchronous"
        copy = "; on the CPU .to('cpu') returns the collated batch itself, so the collate's copy is the host copy timed"
    info: dict[str, Any] = {**settings, "dataset_items": "2b+1, each its own bytes, repeated without end",
                            "batch_sampler": "in order, no shuffle"}  # fmt: skip
    if kind == "cpu":
        info["intra_op_threads"] = torch.get_num_threads()
    if kind == "mps":
        info["unified_memory"] = apple_silicon()
    return SeriesInfo(
        device_name=name,
        transfer=HOST_TO_HOST if kind == "cpu" else HOST_TO_DEVICE,
        clock=PIPELINE_CLOCK,
        sync=sync,
        params=info,
        note=f"DataLoader(pin_memory={pinned}, num_workers={workers}) over a uint8 dataset: {collate}{pin}{copy}",
    )


def loader_host_bytes(spec: Spec, workers: int) -> int:
    """The dataset's items, the batches in flight (collated, pinned, moved), and where worker processes
    start by spawn (macOS, Windows) each worker's own copy of the items. With workers, the DataLoader keeps
    prefetch_factor batches per worker asked for (torch/utils/data/dataloader.py: _try_put_index caps the
    tasks outstanding at prefetch_factor * num_workers, and a batch that arrives out of order waits in
    _task_info within that cap), each in shared memory until taken, then pinned where the mode pins."""
    items = item_count(spec.batch_size) * (spec.nbytes // spec.batch_size)
    pinned = "_pin" in spec.series.mode
    ahead = BUFFER_BATCHES * workers if spec.series.mode.endswith("_workers") else 1
    spawned = workers if spec.series.mode.endswith("_workers") and sys.platform != "linux" else 0
    return items * (1 + spawned) + spec.nbytes * (2 + ahead) * (1 + pinned) + pinned_size(min(spec.nbytes, VERIFY_CHUNK_BYTES))


class TorchBackend(Backend):
    name = "torch"
    title, module, extra = "PyTorch", "torch", "torch"
    default_modes = ("pageable", "pinned", "pinned_into")
    modes = (*default_modes, "pin_per_call", "tensor", "pin", "pageable_into", *PIPELINE_MODES["torch"])
    ops = ("copy", "seed")
    isolated = True
    host_buffers = ("numpy", "aligned")
    device_kinds = ("cpu", "cuda", "xpu", "mps")

    def sources(self, mode: str) -> tuple[str, ...]:
        if mode in PIPELINE_MODES["torch"]:
            return ("numpy",)  # the dataset's items are a NumPy array; the loader's collate makes each batch
        return ("pinned",) if mode in PINNED_MODES else self.host_buffers

    def devices(self) -> list[str]:
        torch = _torch()
        found = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
        if torch.backends.mps.is_available():
            found.append("mps")
        return found + torch_gpus.xpu_devices(torch)

    def absent_reason(self, device: str, present: list[str]) -> str:
        if device.startswith("xpu"):
            why = torch_gpus.xpu_missing(_torch())
            if why:
                return why
        return super().absent_reason(device, present)

    def skip_reason(self, key: SeriesKey) -> str | None:
        if key.mode in PIPELINE_MODES["torch"]:
            return loader_skip_reason(key)
        if key.host_buffer == "pinned" and key.mode not in PINNED_MODES:
            return "a pinned source is what torch's pinned and pinned_into modes measure; choose them with --mode"
        if key.mode in PIN_MODES and key.device == "cpu":
            return "pinned host memory needs a CUDA device; on the CPU there is no device copy to pin for"
        if key.direction == BIDIR and key.device.startswith("xpu") and BIDIR in self.directions(key.mode):
            return "torch bidir runs each direction on a CUDA stream of its own; on xpu the directions are measured one at a time: -d h2d -d d2h"
        if key.direction == BIDIR and key.device == "mps" and BIDIR in self.directions(key.mode):
            return ("torch bidir runs each direction on a CUDA stream of its own; torch.mps has no streams (PyTorch queues"
                    " every MPS copy on one), so on mps the directions are measured one at a time: -d h2d -d d2h")  # fmt: skip
        # Whether this PyTorch pins host memory for MPS is for describe(), in the worker: planning imports no torch.
        if key.mode == "pin" and key.op != "copy":
            return "torch pin times x.pin_memory() alone: there is no device result for the seed op to fetch"
        if key.direction != H2D and key.op != "copy":
            return f"the {key.op} op is the report's host-to-device expression; {key.direction} times the copy alone"
        return None

    def directions(self, mode: str) -> tuple[str, ...]:
        return {"pageable": (H2D, D2H), "pageable_into": (H2D, D2H), "pinned_into": DIRECTIONS}.get(mode, (H2D,))

    def streamed_reason(self, key: SeriesKey) -> str | None:
        if key.direction != H2D:
            return "torch's d2h copies are timed per call only: only pinned_into's h2d copies are queued on a held stream"
        if key.mode != "pinned_into" or not key.device.startswith("cuda"):
            return (f"torch/{key.mode} on {key.device} is timed per call only: only pinned_into on CUDA copies"
                    " into one preallocated tensor, so only it can queue its copies on a held stream")  # fmt: skip
        if key.op != "copy":
            return "the seed op fetches its result to the host after every transfer, so it cannot be streamed"
        return None  # whether this PyTorch has torch.cuda._sleep is for describe(), in the worker: planning imports no torch

    def describe(self, key: SeriesKey, params: dict[str, Any]) -> SeriesInfo:
        if key.mode in PIPELINE_MODES["torch"]:
            return describe_loader(key, params)
        if key.method == STREAMED and not hasattr(_torch().cuda, "_sleep"):
            raise NotSupportedHere("this PyTorch has no torch.cuda._sleep to hold a stream with")
        kind = key.device.split(":")[0]
        pinned = key.mode in PIN_MODES
        if kind == "mps" and pinned:
            why = mps_pinned_reason(_torch())
            if why:
                raise NotSupportedHere(why)
        info: dict[str, Any] = {}
        if kind == "cuda" and torch_gpus.is_rocm(_torch()):  # PyTorch for ROCm: the torch.cuda API over HIP
            name = torch_gpus.device_name(_torch(), key.device)
            sync, device_clock = "torch.cuda.synchronize (hipDeviceSynchronize)", "torch.cuda.Event (a hipEvent)"
            info["runtime"] = torch_gpus.rocm_runtime(_torch())
        elif kind == "cuda":
            name = _torch().cuda.get_device_name(_torch().device(key.device))
            sync, device_clock = "torch.cuda.synchronize", "torch.cuda.Event"
        elif kind == "xpu":
            missing = torch_gpus.xpu_missing(_torch())
            if missing:
                raise NotSupportedHere(missing)
            name, sync = torch_gpus.device_name(_torch(), key.device), "torch.xpu.synchronize"
            why = torch_gpus.xpu_clock_reason(_torch())
            device_clock = None if why else "torch.xpu.Event"
            if why:
                info["device_clock"] = why
        elif kind == "mps":
            name, sync, device_clock = apple_gpu_name(), "torch.mps.synchronize", None
        else:
            name, sync, device_clock = cpu_name(), "none needed: the CPU copy is synchronous", None
        if key.op == "seed":
            sync = f"result fetched to the host with .cpu(), then {sync}"
        clock = "time.perf_counter"
        if kind == "cpu":  # a CPU copy in PyTorch runs on its intra-op threads, unlike single-threaded np.copyto
            info["intra_op_threads"] = _torch().get_num_threads()
        if kind == "mps":
            info["device_clock"] = MPS_NO_DEVICE_CLOCK
            info["unified_memory"] = apple_silicon()  # what a pairing with a CUDA GPU's series compares (pairs.copy_kind)
        if key.method == STREAMED:
            clock, sync, device_clock = "torch.cuda.Event pair around the copies queued on the held stream, per copy", "the end event synchronized", None
            info["hold"] = ("torch.cuda._sleep (a spin kernel), lengthened until the start event is still pending once every copy"
                            f" is queued, up to {HOLD_MAX_S:g} s")  # fmt: skip
        note = None
        if kind == "cpu" and key.mode == "pageable":  # said wherever xferbench changes the user's expression
            note = ("on the CPU .to('cpu') returns the same tensor and copies nothing, so xferbench adds"
                    " copy=True: torch.from_numpy(x).to('cpu', copy=True)")
        elif kind == "cpu" and key.mode == "tensor":
            note = "on the CPU this is torch.tensor's host copy of the NumPy array into a fresh tensor; .to('cpu') adds nothing"
        elif key.mode == "pageable_into":
            note = ("dest.copy_(torch.from_numpy(x)) from pageable memory into a preallocated tensor"
                    + ("; on the CPU a host-to-host copy" if kind == "cpu" else " on the device"))  # fmt: skip
        if key.direction == D2H:
            into = "pageable.copy_(device_tensor) into a preallocated pageable host tensor, touched by the warm-up: no fresh pages per call"
            if key.mode == "pageable_into":
                note = into + ("; on the CPU a host-to-host copy" if kind == "cpu" else "")
            elif kind == "cpu":
                note = "on the CPU .to('cpu') returns the same tensor, so xferbench adds copy=True: a host-to-host copy"
            elif key.mode == "pinned_into":
                note = "pinned.copy_(device_tensor, non_blocking=True) into a preallocated pinned tensor"
            else:
                note = "device_tensor.to('cpu'): a fresh pageable host tensor per call"
        elif key.direction == BIDIR:
            note = ("pinned_into both ways at once on two streams: the point's MB/s is both directions together,"
                    " h2d and d2h MB/s each stream's own events")  # fmt: skip
            device_clock = None
        transfer = {H2D: HOST_TO_DEVICE, D2H: DEVICE_TO_HOST, BIDIR: BIDIRECTIONAL}[key.direction]
        if key.mode == "pin":
            transfer, device_clock, sync = HOST_TO_HOST, None, "none needed: pin_memory() returns after its copy"
            note = ("x.pin_memory() alone, no device copy: pin_per_call's first half, a copy into page-locked memory"
                    " from PyTorch's caching host allocator once warm; pin time is the first call of each size,"
                    " which allocated the block")  # fmt: skip
            if kind == "mps":
                note = ("x.pin_memory() alone, no device copy: a copy within unified memory into a shared Metal buffer"
                        " from PyTorch's MPS pinned allocator; pin time is the first call of each size, which"
                        " allocated the buffer")  # fmt: skip
        elif kind == "mps":  # said on every MPS series: its figures are no link's
            what = (MPS_PINNED_COPY if pinned else MPS_COPY) if apple_silicon() else MPS_INTEL_COPY
            if key.mode == "tensor":
                what = f"torch.tensor's fresh host copy, then {what}"
            note = f"on MPS {what}" + (f"; {note}" if note else "")
        return SeriesInfo(
            device_name=name,
            transfer=HOST_TO_HOST if kind == "cpu" else transfer,
            clock=clock,
            sync=sync,
            device_clock=device_clock,
            params=info,
            note=note,
        )

    def host_bytes(self, spec: Spec) -> int:
        return self.host_bytes_for(spec, {})

    def host_bytes_for(self, spec: Spec, params: dict[str, Any]) -> int:
        """A DataLoader's need with the workers it will really start (--loader-workers, else the default)."""
        if spec.series.mode in PIPELINE_MODES["torch"]:
            return loader_host_bytes(spec, loader_settings(spec.series.mode, params)["num_workers"])
        return self._copy_host_bytes(spec)

    def _copy_host_bytes(self, spec: Spec) -> int:
        """Source, pinned copy (rounded up to a power of two by PyTorch's caching host allocator), the
        verification's read-back chunk, tensor's fresh host copy, and on the CPU the destination and the
        seed op's float32 cast. An Apple GPU shares the host's memory, so its destination and cast count too."""
        nbytes = spec.nbytes
        pinned_copy = pinned_size(nbytes) if spec.series.mode in PIN_MODES else 0
        on_cpu = spec.series.device in ("cpu", "mps")
        fresh_copy = on_cpu or spec.series.mode == "tensor"  # the CPU's destination, or tensor's host copy
        seed_float = spec.series.op == "seed" and on_cpu
        staging = pinned_size(min(nbytes, VERIFY_CHUNK_BYTES))
        if spec.series.direction != H2D:  # the expected bytes, the host copy each call makes (or its pinned destination),
            bidir = spec.series.direction == BIDIR  # and for bidir the h2d lane's source and its pinned copy
            return nbytes * (2 + on_cpu + bidir) + pinned_copy * (1 + bidir) + staging
        return nbytes * (1 + fresh_copy + 4 * seed_float) + pinned_copy + staging

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        if spec.series.mode in PIPELINE_MODES["torch"]:
            return TorchLoader(spec, params)
        return TorchTransfer(spec) if spec.series.direction == H2D else TorchBack(spec)

    def is_out_of_memory(self, error: BaseException) -> bool:
        oom = getattr(_torch(), "OutOfMemoryError", None) or _torch().cuda.OutOfMemoryError
        return (
            isinstance(error, (MemoryError, oom))
            or isinstance(error, RuntimeError)
            and "out of memory" in str(error).lower()
        )

    def environment(self) -> dict[str, Any]:
        torch = _torch()
        devices = []
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            devices.append(
                {
                    "id": f"cuda:{index}",
                    "kind": "cuda",
                    "name": props.name,
                    "memory_bytes": props.total_memory,
                    "capability": f"{props.major}.{props.minor}",
                    "uuid": str(getattr(props, "uuid", "")) or None,
                    "pci_bus_id": _pci_bus_id(props),
                    **torch_gpus.cuda_entry(torch, props),  # vendor, runtime, host link; an AMD GPU's name and arch
                }
            )
        if torch.backends.mps.is_available():
            devices.append({"id": "mps", "kind": "mps", "name": apple_gpu_name()})
        devices += torch_gpus.xpu_entries(torch)
        return {
            "version": torch.__version__,
            "cuda": torch.version.cuda,
            **({"hip": torch.version.hip} if torch_gpus.is_rocm(torch) else {}),
            **({"xpu": getattr(torch.version, "xpu", None)} if torch_gpus.xpu_devices(torch) else {}),
            "threads": torch.get_num_threads(),
            "devices": devices,
        }
