"""The PCIe link under load, sampled: NVML read in a daemon thread of the main process while a series
runs (the series itself runs in a worker process). The thread only reads NVML and stops once NVML
answers nothing, with the reason: it can neither break nor slow a sweep. What the samples say about a
curve is worked out in xferbench.core.telemetry, which the readers use too.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from xferbench.core.environment import device_entry
from xferbench.core.telemetry import FIELDS, link_summary

INTERVAL_S = 0.1
MAX_SAMPLES = 2000  # per series: past it, every other sample is dropped and the interval doubles
STOP_WAIT_S = 2.0  # the longest the end of a series waits for the thread (NVML's start can take seconds)
FIRST_WAIT_S = 10.0  # the longest the start of a series waits for the first sample
# NVML's cumulative count of bytes the GPU received over PCIe (nvmlDeviceGetFieldValues), where the
# driver keeps one: the exact measure of host-to-device traffic. The throughput reads are KB/s over
# a 20 ms window each, so bytes integrated from them are approximate.
RX_BYTES_FIELD = "NVML_FI_DEV_PCIE_COUNT_RX_BYTES"
NOT_INSTALLED = "nvidia-ml-py is not installed: pip install 'xferbench[nvml]'"


def nvml_target(environment: dict[str, Any], device_id: str) -> tuple[str | None, int | None]:
    """The NVML UUID of a CUDA device, else an NVML index: CUDA and NVML may number GPUs differently,
    so the index (NVML's own where known, else the CUDA one) is only the fallback, and none at all
    under CUDA_VISIBLE_DEVICES, which renumbers CUDA's GPUs: (None, None) then."""
    device = device_entry(environment, device_id)
    nvml = device.get("nvml") or {}
    uuid = nvml.get("uuid") or device.get("uuid")
    if uuid:
        uuid = str(uuid)
        return (uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"), None
    if isinstance(nvml.get("index"), int):
        return None, nvml["index"]
    if os.environ.get("CUDA_VISIBLE_DEVICES") is not None:  # CUDA's numbering is not NVML's then
        return None, None
    number = device_id.partition(":")[2]
    return None, int(number) if number.isdigit() else 0


class LinkSampler:
    """Reads one GPU's current PCIe generation and width and its TX and RX throughput every
    `interval_s`, from start() to stop(), in a daemon thread. Use it as a context manager, or call
    start() and stop(); stop() returns the series' `link` record and never raises."""

    def __init__(self, uuid: str | None = None, index: int | None = None, interval_s: float = INTERVAL_S,
                 max_samples: int = MAX_SAMPLES) -> None:  # fmt: skip
        self.uuid, self.index = uuid, index
        self.interval_s, self.max_samples = interval_s, max(2, max_samples)
        self.samples: dict[str, list[Any]] = {name: [] for name in FIELDS}
        self.gpu: dict[str, Any] = {}  # which GPU NVML read, and its link's maximum
        self.reason: str | None = None  # why sampling stopped early or never started
        self.thinned = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._first = threading.Event()  # set once the first sample is stored, or sampling has ended
        self._closed = False
        self._thread: threading.Thread | None = None
        self._record: dict[str, Any] | None = None

    @classmethod
    def for_device(cls, environment: dict[str, Any], device_id: str, **kwargs: Any) -> LinkSampler:
        vendor = device_entry(environment, device_id).get("vendor")
        if vendor not in (None, "NVIDIA"):  # NVML reads NVIDIA's GPUs only: its index 0 may be another GPU than this one
            sampler = cls(None, None, **kwargs)
            sampler.reason = f"NVML samples NVIDIA GPUs only: this {vendor} GPU's link was not sampled under load"
            return sampler
        uuid, index = nvml_target(environment, device_id)
        return cls(uuid, index, **kwargs)

    def __enter__(self) -> LinkSampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if self.uuid is None and self.index is None:
            self.reason = self.reason or ("no UUID or PCI bus id matched this GPU to NVML, and CUDA_VISIBLE_DEVICES renumbers"
                           " CUDA's GPUs: the link was not sampled rather than another GPU's")  # fmt: skip
            return
        try:
            import pynvml
        except ImportError:
            self.reason = NOT_INSTALLED
            return
        self._thread = threading.Thread(target=self._run, args=(pynvml,), name="xferbench-link", daemon=True)
        self._thread.start()
        # The series starts only once the first sample is in, so the counters' span covers every byte it moves.
        self._first.wait(FIRST_WAIT_S)

    def stop(self) -> dict[str, Any]:
        """End sampling and return the `link` record: samples, the GPU read, its summary and any reason."""
        if self._record is None:
            self._stopping.set()
            if self._thread is not None:
                self._thread.join(STOP_WAIT_S)
            with self._lock:
                self._closed = True  # a thread still stuck in NVML drops whatever it reads later
                if self._thread is not None and self._thread.is_alive() and self.reason is None:
                    self.reason = f"NVML did not answer within {STOP_WAIT_S:g} s of the series' end; samples so far kept"
                samples = {name: list(values) for name, values in self.samples.items()}
                gpu = {**self.gpu, "field_errors": dict(self.gpu.get("field_errors") or {})}  # a copy: the thread may live on
                link = {"source": "nvml", **gpu, "interval_s": self.interval_s, "thinned": self.thinned,
                        **samples, "reason": self.reason}  # fmt: skip
            link["summary"] = link_summary(link)
            self._record = link
        return self._record

    def _fail(self, reason: str) -> None:
        with self._lock:
            self.reason = self.reason or reason

    def _run(self, pynvml: Any) -> None:
        try:
            pynvml.nvmlInit()
        except Exception as error:  # NVMLError: no driver, no permission, no library
            self._fail(f"NVML could not start: {error}")
            self._first.set()
            return
        try:
            self._sample(pynvml)
        except Exception as error:  # any NVML error ends sampling; the series goes on
            self._fail(f"NVML failed after {len(self.samples['t_s'])} sample(s): {error}")
        finally:
            self._first.set()
            try:
                pynvml.nvmlShutdown()
            except Exception:
                pass

    def _sample(self, pynvml: Any) -> None:
        if self.uuid:
            handle = pynvml.nvmlDeviceGetHandleByUUID(self.uuid)
            gpu: dict[str, Any] = {"uuid": self.uuid, "matched_by": "uuid"}
        else:
            handle = pynvml.nvmlDeviceGetHandleByIndex(self.index or 0)
            gpu = {"nvml_index": self.index or 0, "matched_by": "index"}
        errors: dict[str, str] = {}  # each field's first error: MIG, vGPU and some VMs answer Not Supported
        latest: list[str] = []  # this sample's errors

        def read(name: str, function: Any, *args: Any) -> Any:
            try:
                return function(handle, *args)
            except Exception as error:
                with self._lock:  # stop() copies `errors` under the same lock
                    errors.setdefault(name, str(error))
                latest.append(str(error))
                return None

        def missing(handle: Any) -> None:
            raise RuntimeError("this nvidia-ml-py does not have it")

        gpu_max = getattr(pynvml, "nvmlDeviceGetGpuMaxPcieLinkGeneration", missing)
        gpu.update(pcie_gen_max=read("pcie_gen_max", pynvml.nvmlDeviceGetMaxPcieLinkGeneration),
                   pcie_width_max=read("pcie_width_max", pynvml.nvmlDeviceGetMaxPcieLinkWidth),
                   pcie_gen_gpu_max=read("pcie_gen_gpu_max", gpu_max), field_errors=errors)  # fmt: skip
        counter = rx_counter(pynvml, gpu)
        if read("rx_bytes", counter) is None:  # no such counter here: not asked again every sample
            counter = None
        with self._lock:
            self.gpu = gpu
        start = due = time.monotonic()
        while True:  # one last sample after stop() is asked for, so the counter covers the whole series
            # Read before the row: a stop asked for while the row was being read still gets a row read after it.
            stopping = self._stopping.is_set()
            latest.clear()
            row = (
                round(time.monotonic() - start, 3),
                read("gen", pynvml.nvmlDeviceGetCurrPcieLinkGeneration),
                read("width", pynvml.nvmlDeviceGetCurrPcieLinkWidth),
                read("tx_kbps", pynvml.nvmlDeviceGetPcieThroughput, pynvml.NVML_PCIE_UTIL_TX_BYTES),  # 20 ms window each
                read("rx_kbps", pynvml.nvmlDeviceGetPcieThroughput, pynvml.NVML_PCIE_UTIL_RX_BYTES),
                read("rx_bytes", counter) if counter else None,
            )
            if all(value is None for value in row[1:]):  # nothing answers any more: stop, say why
                raise RuntimeError(latest[0])
            with self._lock:
                if self._closed:
                    return
                for name, value in zip(FIELDS, row):
                    self.samples[name].append(value)
            self._first.set()
            with self._lock:
                if len(self.samples["t_s"]) >= self.max_samples:  # a long series: keep its whole span, coarser
                    for values in self.samples.values():
                        del values[1:-1:2]  # the first and the latest stay: the counter's span is kept whole
                    self.interval_s *= 2
                    self.thinned += 1
            if stopping:
                return
            due = max(due + self.interval_s, time.monotonic())
            self._stopping.wait(max(0.0, due - time.monotonic()))


# NVML's field value types (nvmlValueType_t) that a byte counter may come as, and their widths in bits.
COUNTER_WIDTHS = {1: ("uiVal", 32), 2: ("ulVal", 64), 3: ("ullVal", 64), 6: ("usVal", 16)}


def rx_counter(pynvml: Any, widths: dict[str, int]) -> Any:
    """A reader of NVML's cumulative PCIe RX byte counter for a GPU handle; it raises where the field
    is missing from this nvidia-ml-py or unsupported by the driver or GPU. NVML says the value can
    wrap, and gives its type with it: the width read is kept in `widths`, so a reader can undo wraps."""
    field = getattr(pynvml, RX_BYTES_FIELD, None)

    def read(handle: Any) -> int:
        if field is None:
            raise RuntimeError(f"this nvidia-ml-py has no {RX_BYTES_FIELD}")
        (value,) = pynvml.nvmlDeviceGetFieldValues(handle, [field])
        if value.nvmlReturn != 0:
            raise RuntimeError(f"{RX_BYTES_FIELD} not available (NVML return code {value.nvmlReturn})")
        member, bits = COUNTER_WIDTHS.get(getattr(value, "valueType", 3), ("ullVal", 64))
        widths["rx_bytes_bits"] = bits
        return int(getattr(value.value, member))

    return read
