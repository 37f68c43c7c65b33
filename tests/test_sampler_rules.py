"""Every rule of xferbench.measuring.sampler, value for value: which GPU NVML is asked for (nvml_target), the
LinkSampler's start and stop, its sampling loop (timing, the last sample, thinning a long series, the first-sample
wait), the `link` record stop() returns and its reasons word for word, and the RX byte counter's reader.

The loop is mostly driven in the test's own thread (`_run` called directly, with a scripted clock and a stop event
that counts its waits), so no assertion depends on the machine being quiet; the few tests with the real daemon thread
wait on conditions only.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from fake_nvml import BUSY_KBPS, UUID, FakeNVML, FakeNVMLError
from xferbench.core.telemetry import link_summary
from xferbench.measuring import sampler as sampling
from xferbench.measuring.sampler import LinkSampler, nvml_target, rx_counter

NO_TARGET = ("no UUID or PCI bus id matched this GPU to NVML, and CUDA_VISIBLE_DEVICES renumbers CUDA's GPUs:"
             " the link was not sampled rather than another GPU's")  # fmt: skip
NOT_INSTALLED = "nvidia-ml-py is not installed: pip install 'xferbench[nvml]'"
NO_FIELD = "this nvidia-ml-py has no NVML_FI_DEV_PCIE_COUNT_RX_BYTES"
EMPTY = {"t_s": [], "gen": [], "width": [], "tx_kbps": [], "rx_kbps": [], "rx_bytes": []}


class RefusingNVML(FakeNVML):
    """A FakeNVML whose every link query can be refused, each with its own message (`refuse`: query name to
    message, the names as the sampler files its errors), and which counts its field-value reads."""

    def __init__(self, refuse: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.refuse = dict(refuse or {})
        self.field_reads = 0

    def _refused(self, name: str) -> None:
        if name in self.refuse:
            raise FakeNVMLError(self.refuse[name])

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Any) -> int:
        answer = super().nvmlDeviceGetMaxPcieLinkGeneration(handle)
        self._refused("pcie_gen_max")
        return answer

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: Any) -> int:
        answer = super().nvmlDeviceGetMaxPcieLinkWidth(handle)
        self._refused("pcie_width_max")
        return answer

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: Any) -> int:
        answer = super().nvmlDeviceGetCurrPcieLinkGeneration(handle)
        self._refused("gen")
        return answer

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: Any) -> int:
        answer = super().nvmlDeviceGetCurrPcieLinkWidth(handle)
        self._refused("width")
        return answer

    def nvmlDeviceGetPcieThroughput(self, handle: Any, counter: int) -> int:
        answer = super().nvmlDeviceGetPcieThroughput(handle, counter)
        self._refused("rx_kbps" if counter == self.NVML_PCIE_UTIL_RX_BYTES else "tx_kbps")
        return answer

    def nvmlDeviceGetFieldValues(self, handle: Any, fields: list[int]) -> list[Any]:
        self.field_reads += 1
        return super().nvmlDeviceGetFieldValues(handle, fields)


class Stopping(threading.Event):
    """The sampler's stop event, driven by the test: it records each wait's timeout, calls `between` with how
    many waits there were (the test changes the fake's answers there), and is set by the `after`-th wait."""

    def __init__(self, after: int | None = None, between: Callable[[int], None] | None = None,
                 clock: SimClock | None = None) -> None:  # fmt: skip
        super().__init__()
        self.after, self.between, self.clock = after, between, clock
        self.waits: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout)
        if self.clock is not None and timeout is not None:
            self.clock.now += timeout  # the sampler slept that long
        if self.between is not None:
            self.between(len(self.waits))
        if self.after is not None and len(self.waits) >= self.after:
            self.set()
        return self.is_set()


class Clock:
    """time.monotonic as the sampler sees it: scripted readings, each given once."""

    def __init__(self, *readings: float) -> None:
        self.readings = list(readings)

    def monotonic(self) -> float:
        return self.readings.pop(0)


class SimClock:
    """time.monotonic on a quiet machine: it moves only while the sampler waits (Stopping advances it)."""

    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


class FakeThread:
    """Stands for the sampler's thread in stop(): it records the joins and is alive or not as told."""

    def __init__(self, alive: bool) -> None:
        self.alive = alive
        self.joins: list[float | None] = []

    def join(self, timeout: float | None = None) -> None:
        self.joins.append(timeout)

    def is_alive(self) -> bool:
        return self.alive


class FirstWait(threading.Event):
    """The sampler's first-sample event, recording the timeouts start() waits with."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.timeouts.append(timeout)
        return super().wait(timeout)


def without_summary(link: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in link.items() if key != "summary"}


# nvml_target


@pytest.mark.parametrize("device, device_id, expected", [
    ({"id": "cuda:1", "uuid": "GPU-b", "nvml": {"uuid": "GPU-a", "index": 4}}, "cuda:1", ("GPU-a", None)),  # NVML's own UUID leads
    ({"id": "cuda:1", "uuid": "GPU-b", "nvml": {"uuid": None, "index": 4}}, "cuda:1", ("GPU-b", None)),  # then the framework's
    ({"id": "cuda:1", "uuid": "GPU-b"}, "cuda:1", ("GPU-b", None)),  # a device without NVML facts
    ({"id": "cuda:1", "uuid": "GPU-b", "nvml": None}, "cuda:1", ("GPU-b", None)),
    ({"id": "cuda:1", "nvml": {"uuid": "MIG-7"}}, "cuda:1", ("MIG-7", None)),  # a MIG instance keeps its prefix
    ({"id": "cuda:1", "uuid": "b-GPU-1"}, "cuda:1", ("GPU-b-GPU-1", None)),  # the prefix counts only at the start
    ({"id": "cuda:1", "uuid": 1234}, "cuda:1", ("GPU-1234", None)),  # whatever it was, it is sent as text
    ({"id": "cuda:1", "uuid": "", "nvml": {"index": 5}}, "cuda:1", (None, 5)),  # no UUID: NVML's index, not CUDA's
    ({"id": "cuda:1", "nvml": {"index": 0}}, "cuda:1", (None, 0)),
    ({"id": "cuda:1", "nvml": {"index": "5"}}, "cuda:1", (None, 1)),  # an index that is not a number counts for nothing
    ({"id": "cuda:3"}, "cuda:3", (None, 3)),  # nothing matched: CUDA's own number
    ({"id": "cuda:12", "kind": "cuda"}, "cuda:12", (None, 12)),
    ({"id": "cuda"}, "cuda", (None, 0)),  # no number: the first GPU
    ({"id": "cuda:x"}, "cuda:x", (None, 0)),
    ({"id": "cuda:0"}, "cuda:2", (None, 2)),  # a device the environment does not describe
])  # fmt: skip
def test_nvml_target_takes_nvmls_uuid_then_the_frameworks_then_nvmls_index_then_cudas_number(
        device: dict[str, Any], device_id: str, expected: tuple[str | None, int | None],
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """The UUID (prefixed GPU- unless it has GPU- or MIG-), else NVML's integer index, else CUDA's number or 0."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert nvml_target({"devices": [device]}, device_id) == expected


@pytest.mark.parametrize("visible", ["", "3", "2,3"])
def test_under_cuda_visible_devices_only_a_uuid_or_nvmls_index_names_the_gpu(visible: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Set at all (even empty), CUDA_VISIBLE_DEVICES rules out CUDA's number: (None, None) unless NVML matched it."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert nvml_target({"devices": [{"id": "cuda:1"}]}, "cuda:1") == (None, None)
    assert nvml_target({"devices": [{"id": "cuda:1", "nvml": {"index": 6}}]}, "cuda:1") == (None, 6)
    assert nvml_target({"devices": [{"id": "cuda:1", "uuid": "abc"}]}, "cuda:1") == ("GPU-abc", None)


# LinkSampler: construction, start and stop


def test_a_new_sampler_samples_every_tenth_of_a_second_up_to_two_thousand_samples() -> None:
    """The defaults, and the empty state a new sampler starts from."""
    sampler = LinkSampler()
    assert (sampler.uuid, sampler.index, sampler.interval_s, sampler.max_samples) == (None, None, 0.1, 2000)
    assert sampler.samples == EMPTY and sampler.gpu == {} and sampler.reason is None and sampler.thinned == 0
    assert sampler._closed is False and sampler._thread is None and sampler._record is None
    assert not sampler._stopping.is_set() and not sampler._first.is_set()
    assert (sampling.RX_BYTES_FIELD, sampling.NOT_INSTALLED) == ("NVML_FI_DEV_PCIE_COUNT_RX_BYTES", NOT_INSTALLED)


@pytest.mark.parametrize("asked, kept", [(-1, 2), (0, 2), (1, 2), (2, 2), (3, 3), (7, 7)])
def test_a_sampler_keeps_at_least_two_samples(asked: int, kept: int) -> None:
    """max_samples below 2 is raised to 2: the first and the latest sample always stay."""
    assert LinkSampler(UUID, None, 0.5, asked).max_samples == kept


def test_for_device_passes_the_target_and_every_setting_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """for_device opens the GPU nvml_target names, with the interval and sample bound asked for."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    sampler = LinkSampler.for_device({"devices": [{"id": "cuda:1", "nvml": {"index": 3}}]}, "cuda:1", interval_s=0.5, max_samples=7)
    assert (sampler.uuid, sampler.index, sampler.interval_s, sampler.max_samples) == (None, 3, 0.5, 7)
    by_uuid = LinkSampler.for_device({"devices": [{"id": "cuda:0", "uuid": "abc"}]}, "cuda:0")
    assert (by_uuid.uuid, by_uuid.index, by_uuid.interval_s, by_uuid.max_samples) == ("GPU-abc", None, 0.1, 2000)


def test_a_gpu_neither_uuid_nor_index_names_is_left_unsampled_word_for_word(fake_nvml) -> None:
    """Without a UUID or an index nothing is opened, NVML included, and the record says why, summary and all."""
    fake = fake_nvml()
    with LinkSampler(None, None, interval_s=0.5) as sampler:
        assert sampler.reason == NO_TARGET and sampler._thread is None
    link = sampler.stop()
    assert fake.opened == [] and fake.samples == 0 and fake.shutdowns == 0
    assert link == {"source": "nvml", "field_errors": {}, "interval_s": 0.5, "thinned": 0, **EMPTY, "reason": NO_TARGET,
                    "summary": {"samples": 0, "loaded_samples": 0, "gen_under_load": None, "width_under_load": None, "rx_mbps_peak": None,
                                "tx_mbps_peak": None, "rx_bytes": None, "rx_bytes_from": f"unknown: {NO_TARGET}"}}  # fmt: skip


@pytest.mark.parametrize("uuid, index", [(UUID, None), (None, 0), (None, 1), (UUID, 1)])
def test_without_pynvml_a_gpu_with_a_uuid_or_an_index_is_said_to_lack_nvidia_ml_py(uuid: str | None, index: int | None,
                                                                                    monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Either a UUID or an index is enough to try NVML; without the package no thread starts."""
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    sampler = LinkSampler(uuid, index)
    sampler.start()
    assert sampler.reason == NOT_INSTALLED and sampler._thread is None
    assert sampler.stop()["reason"] == NOT_INSTALLED


def test_start_runs_a_named_daemon_thread_and_returns_once_the_first_sample_is_in(fake_nvml) -> None:
    """start() waits (10 s at most) for the first sample; stop() ends the thread, which gives NVML back."""

    class SlowStart(FakeNVML):
        def nvmlInit(self) -> None:
            time.sleep(0.02)  # NVML's start takes a while: start() must not return before a sample

    fake = fake_nvml(SlowStart)
    sampler = LinkSampler(UUID, interval_s=0.001)
    sampler._first = first = FirstWait()
    sampler.start()
    assert len(sampler.samples["t_s"]) >= 1 and first.is_set() and first.timeouts == [10.0]
    thread = sampler._thread
    assert thread is not None and thread.name == "xferbench-link" and thread.daemon is True and thread.is_alive()
    link = sampler.stop()
    assert not thread.is_alive() and sampler._stopping.is_set() and fake.shutdowns == 1
    assert fake.opened == [("uuid", UUID)] and link["reason"] is None and link["matched_by"] == "uuid"
    assert len(link["t_s"]) >= 1 and link["gen"][0] == 4


def test_the_context_manager_starts_and_stops_the_sampler(fake_nvml) -> None:
    """`with` gives the sampler itself, started; leaving it stops sampling and keeps the record."""
    fake = fake_nvml()
    with LinkSampler(UUID, interval_s=0.001) as sampler:
        assert isinstance(sampler, LinkSampler) and sampler._thread is not None and len(sampler.samples["t_s"]) >= 1
    assert sampler._record is not None and sampler._stopping.is_set() and not sampler._thread.is_alive()
    assert sampler.stop() is sampler._record and fake.shutdowns == 1


@pytest.mark.parametrize("alive, earlier, reason", [
    (True, None, "NVML did not answer within 2 s of the series' end; samples so far kept"),
    (True, "NVML failed after 3 sample(s): GPU is lost", "NVML failed after 3 sample(s): GPU is lost"),  # the first reason stays
    (False, None, None),  # the thread ended in time
])  # fmt: skip
def test_stop_waits_two_seconds_for_the_thread_and_says_when_it_is_still_in_nvml(alive: bool, earlier: str | None,
                                                                                 reason: str | None) -> None:  # fmt: skip
    """stop() asks the thread to end, joins it for 2 s and closes the sampler; a thread still alive is said."""
    sampler = LinkSampler(UUID)
    sampler.reason = earlier
    sampler._thread = thread = FakeThread(alive)  # type: ignore[assignment]
    link = sampler.stop()
    assert thread.joins == [2.0] and sampler._stopping.is_set() and sampler._closed is True
    assert link["reason"] == reason == sampler.reason


def test_stop_without_a_thread_joins_nothing_and_adds_no_reason() -> None:
    """A sampler never started stops cleanly: no reason of its own, the link record empty."""
    sampler = LinkSampler(UUID, interval_s=0.25)
    link = sampler.stop()
    assert sampler._closed is True and sampler._stopping.is_set()
    assert without_summary(link) == {"source": "nvml", "field_errors": {}, "interval_s": 0.25, "thinned": 0, **EMPTY, "reason": None}
    assert link["summary"]["rx_bytes_from"] == "unknown: fewer than two RX samples"


def test_stop_returns_one_record_made_once_from_copies() -> None:
    """The record is built at the first stop() and returned as is after; its lists and errors are copies."""
    sampler = LinkSampler(UUID, interval_s=0.5)
    errors = {"tx_kbps": "Not Supported"}
    sampler.gpu = {"uuid": UUID, "matched_by": "uuid", "pcie_gen_max": 4, "field_errors": errors, "rx_bytes_bits": 64}
    for name, value in zip(sampling.FIELDS, (0.0, 4, 16, None, 1000, 10)):
        sampler.samples[name].append(value)
    sampler.thinned = 2
    link = sampler.stop()
    assert without_summary(link) == {
        "source": "nvml", "uuid": UUID, "matched_by": "uuid", "pcie_gen_max": 4, "field_errors": {"tx_kbps": "Not Supported"},
        "rx_bytes_bits": 64, "interval_s": 0.5, "thinned": 2, "t_s": [0.0], "gen": [4], "width": [16], "tx_kbps": [None],
        "rx_kbps": [1000], "rx_bytes": [10], "reason": None}  # fmt: skip
    assert link["summary"] == link_summary(without_summary(link)) and link["summary"]["samples"] == 1
    errors["rx_kbps"] = "later"  # a thread that lives on goes on writing to its own dict and lists
    sampler.samples["t_s"].append(0.1)
    sampler.reason = "later"
    assert link["field_errors"] == {"tx_kbps": "Not Supported"} and link["t_s"] == [0.0]
    again = sampler.stop()
    assert again is link and again["reason"] is None


# LinkSampler: the thread's work, driven in the test's own thread


def test_nvml_that_cannot_start_is_said_and_nothing_is_opened(fake_nvml) -> None:
    """nvmlInit's error is the reason; no GPU is opened, NVML is not shut down, and start() is let go."""
    fake = fake_nvml(init_error=FakeNVMLError("Insufficient Permissions"))
    sampler = LinkSampler(UUID)
    sampler._run(fake)
    assert sampler.reason == "NVML could not start: Insufficient Permissions" and sampler._first.is_set()
    assert fake.opened == [] and fake.shutdowns == 0 and sampler.samples == EMPTY and sampler.gpu == {}


def test_a_gpu_nvml_cannot_find_ends_sampling_with_why_and_nvml_is_shut_down(fake_nvml) -> None:
    """An error before the first sample is said with the count of samples, 0; start() is let go."""
    fake = fake_nvml()
    sampler = LinkSampler("GPU-elsewhere")
    sampler._run(fake)
    assert sampler.reason == "NVML failed after 0 sample(s): Not Found" and sampler._first.is_set()
    assert fake.opened == [("uuid", "GPU-elsewhere")] and fake.shutdowns == 1 and sampler.samples == EMPTY


def test_an_nvml_that_fails_to_shut_down_is_let_be(fake_nvml) -> None:
    """nvmlShutdown's own error is swallowed: sampling still ends cleanly."""

    class Sticky(FakeNVML):
        def nvmlShutdown(self) -> None:
            super().nvmlShutdown()
            raise FakeNVMLError("Uninitialized")

    fake = fake_nvml(Sticky)
    sampler = LinkSampler(UUID)
    sampler._stopping.set()
    sampler._run(fake)
    assert fake.shutdowns == 1 and sampler.reason is None and sampler._first.is_set() and len(sampler.samples["t_s"]) == 1


def test_the_first_reason_is_kept() -> None:
    """_fail sets a reason only where none was given yet."""
    sampler = LinkSampler(UUID)
    sampler._fail("first")
    sampler._fail("second")
    assert sampler.reason == "first"


def test_a_gpu_is_opened_by_uuid_and_its_link_maxima_read_once(fake_nvml, monkeypatch: pytest.MonkeyPatch) -> None:
    """Matched by UUID: the record names it, with the system's and the GPU's own maximum, and the counter's width."""
    fake = fake_nvml(RefusingNVML, gen_max=5, width_max=8, gpu_gen_max=6, rx_counter=1000)
    sampler = LinkSampler(UUID)
    sampler._stopping.set()  # one sample, then stop
    monkeypatch.setattr(sampling, "time", Clock(7.0, 7.0))
    sampler._run(fake)
    assert fake.opened == [("uuid", UUID)] and sampler.reason is None
    assert sampler.gpu == {"uuid": UUID, "matched_by": "uuid", "pcie_gen_max": 5, "pcie_width_max": 8, "pcie_gen_gpu_max": 6,
                           "field_errors": {}, "rx_bytes_bits": 64}  # fmt: skip
    assert sampler.samples == {"t_s": [0.0], "gen": [4], "width": [16], "tx_kbps": [500], "rx_kbps": [BUSY_KBPS], "rx_bytes": [1000]}
    assert fake.field_reads == 2  # once to see the counter is there, once in the sample


@pytest.mark.parametrize("index, opened", [(1, 1), (None, 0)])
def test_without_a_uuid_the_gpu_is_opened_by_its_index_or_the_first(index: int | None, opened: int, fake_nvml) -> None:
    """Matched by index (0 where none is given), every read goes to that GPU's handle."""
    fake = fake_nvml(RefusingNVML, gpus=2)
    sampler = LinkSampler(None, index)
    sampler._stopping.set()
    sampler._run(fake)
    assert fake.opened == [("index", opened)] and sampler.reason is None
    assert sampler.gpu == {"nvml_index": opened, "matched_by": "index", "pcie_gen_max": 4, "pcie_width_max": 16, "pcie_gen_gpu_max": None,
                           "field_errors": {"pcie_gen_gpu_max": "Not Supported", "rx_bytes": NO_FIELD}}  # fmt: skip
    assert sampler.samples["gen"] == [4] and sampler.samples["rx_bytes"] == [None]


def test_an_nvidia_ml_py_without_the_gpus_own_maximum_says_so(fake_nvml, monkeypatch: pytest.MonkeyPatch) -> None:
    """An older binding lacks nvmlDeviceGetGpuMaxPcieLinkGeneration: that field alone is missing, with why."""
    monkeypatch.delattr(FakeNVML, "nvmlDeviceGetGpuMaxPcieLinkGeneration")
    fake = fake_nvml(gpu_gen_max=5)
    sampler = LinkSampler(UUID)
    sampler._stopping.set()
    sampler._run(fake)
    assert sampler.gpu["pcie_gen_gpu_max"] is None and sampler.reason is None and sampler.gpu["pcie_gen_max"] == 4
    assert sampler.gpu["field_errors"]["pcie_gen_gpu_max"] == "this nvidia-ml-py does not have it"


def test_each_fields_first_error_is_kept_under_its_name_and_a_missing_counter_is_asked_once(fake_nvml) -> None:
    """A refused field costs only its own values; its first error is kept; a counter NVML refuses is not asked again."""
    refuse = {"pcie_gen_max": "gen max refused", "pcie_width_max": "width max refused", "tx_kbps": "tx refused 1"}
    fake = fake_nvml(RefusingNVML, refuse=refuse)
    fake.NVML_FI_DEV_PCIE_COUNT_RX_BYTES = 198  # the binding has the field, the driver answers Not Supported (3)

    def between(waits: int) -> None:
        fake.refuse["tx_kbps"] = f"tx refused {waits + 1}"
        fake.refuse["rx_kbps"] = "rx refused"

    sampler = LinkSampler(UUID)
    sampler._stopping = Stopping(after=2, between=between)
    sampler._run(fake)
    assert sampler.reason is None and fake.field_reads == 1
    assert sampler.gpu == {"uuid": UUID, "matched_by": "uuid", "pcie_gen_max": None, "pcie_width_max": None, "pcie_gen_gpu_max": None,
                           "field_errors": {"pcie_gen_max": "gen max refused", "pcie_width_max": "width max refused",
                                            "pcie_gen_gpu_max": "Not Supported",
                                            "rx_bytes": "NVML_FI_DEV_PCIE_COUNT_RX_BYTES not available (NVML return code 3)",
                                            "tx_kbps": "tx refused 1", "rx_kbps": "rx refused"}}  # fmt: skip
    assert sampler.samples["gen"] == [4, 4, 4] and sampler.samples["tx_kbps"] == [None] * 3
    assert sampler.samples["rx_kbps"] == [BUSY_KBPS, None, None] and sampler.samples["rx_bytes"] == [None] * 3


@pytest.mark.parametrize("answers", ["gen", "width", "tx_kbps", "rx_kbps", "rx_bytes"])
def test_a_sample_counts_while_any_one_field_answers(answers: str, fake_nvml) -> None:
    """Sampling goes on while any of the generation, width, TX, RX or the counter answers."""
    refuse = {name: f"{name} refused" for name in ("gen", "width", "tx_kbps", "rx_kbps") if name != answers}
    fake = fake_nvml(RefusingNVML, refuse=refuse, rx_counter=77 if answers == "rx_bytes" else None)
    sampler = LinkSampler(UUID)
    sampler._stopping.set()
    sampler._run(fake)
    expected = {"gen": 4, "width": 16, "tx_kbps": 500, "rx_kbps": BUSY_KBPS, "rx_bytes": 77}
    assert sampler.reason is None and sampler.samples[answers] == [expected[answers]]
    assert all(sampler.samples[name] == [None] for name in expected if name != answers)


def test_a_counter_that_stops_answering_mid_series_is_filed_under_rx_bytes(fake_nvml) -> None:
    """The counter answered at the start, then refuses: its samples go None and its error is kept under 'rx_bytes'."""
    fake = fake_nvml(rx_counter=1000)

    def between(waits: int) -> None:
        if waits == 1:
            fake.rx_counter = None

    sampler = LinkSampler(UUID)
    sampler._stopping = Stopping(after=2, between=between)
    sampler._run(fake)
    assert sampler.reason is None and sampler.samples["rx_bytes"] == [1000, None, None]
    assert sampler.gpu["field_errors"] == {"pcie_gen_gpu_max": "Not Supported",
                                           "rx_bytes": "NVML_FI_DEV_PCIE_COUNT_RX_BYTES not available (NVML return code 3)"}  # fmt: skip


def test_when_nothing_answers_sampling_ends_with_that_samples_first_error(fake_nvml) -> None:
    """A sample with no field answering is not kept: sampling ends, saying how many samples came first and why."""
    fake = fake_nvml(RefusingNVML)  # no counter: its error and the GPU maximum's come before the loop

    def between(waits: int) -> None:
        if waits == 2:
            fake.refuse.update(gen="gen lost", width="width lost", tx_kbps="tx lost", rx_kbps="rx lost")

    sampler = LinkSampler(UUID)
    sampler._stopping = Stopping(after=5, between=between)  # set late: only the failure ends the loop in time
    sampler._run(fake)
    assert sampler.reason == "NVML failed after 2 sample(s): gen lost"
    assert sampler.samples["gen"] == [4, 4] and sampler._first.is_set() and fake.shutdowns == 1
    assert sampler.gpu["field_errors"] == {"pcie_gen_gpu_max": "Not Supported", "rx_bytes": NO_FIELD, "gen": "gen lost",
                                           "width": "width lost", "tx_kbps": "tx lost", "rx_kbps": "rx lost"}  # fmt: skip


def test_the_loop_keeps_its_pace_catches_up_after_a_stall_and_takes_one_last_sample(fake_nvml, monkeypatch: pytest.MonkeyPatch) -> None:
    """Samples are due every interval from the start, times to the millisecond; a late one resets the pace, never
    waiting below 0 s; once stop is asked for, one more sample is taken."""
    fake = fake_nvml(rx_counter=1000)
    clock = Clock(50.0,  # the start
                  50.0, 50.0, 50.0,  # sample 0 at 0 s: due at 0.25 s
                  50.2501220703125, 50.375, 50.375,  # sample 1 at 0.25 s (to the ms), read by 0.375 s: 0.125 s to wait
                  50.5, 51.0, 51.0625,  # sample 2 stalls NVML until 1.0 s: due then, already past
                  51.125, 51.125, 51.125,  # sample 3: due 0.25 s after the stall
                  51.25)  # the last sample, after stop  # fmt: skip
    monkeypatch.setattr(sampling, "time", clock)

    def between(waits: int) -> None:
        fake.gen, fake.rx_counter = waits, 1000 + 10 * waits

    sampler = LinkSampler(UUID, interval_s=0.25)
    sampler._stopping = stopping = Stopping(after=4, between=between)
    sampler._run(fake)
    assert sampler.reason is None and clock.readings == [] and stopping.waits == [0.25, 0.125, 0.0, 0.125]
    assert sampler.samples == {"t_s": [0.0, 0.25, 0.5, 1.125, 1.25], "gen": [4, 1, 2, 3, 4], "width": [16] * 5,
                               "tx_kbps": [500] * 5, "rx_kbps": [BUSY_KBPS] * 5, "rx_bytes": [1000, 1010, 1020, 1030, 1040]}  # fmt: skip
    assert (sampler.interval_s, sampler.thinned, fake.shutdowns) == (0.25, 0, 1)


def test_a_stop_asked_for_while_a_row_is_read_still_gets_a_row_read_after_it(fake_nvml) -> None:
    """The series ends (stop) while the loop reads a row: that row may predate the last bytes, so one more row is
    read before the loop ends, and the counter's last value is the one read after the stop."""

    class StopMidRow(FakeNVML):
        def nvmlDeviceGetFieldValues(self, handle: Any, fields: list[int]) -> list[Any]:
            answer = super().nvmlDeviceGetFieldValues(handle, fields)
            self.rx_counter = (self.rx_counter or 0) + 1000  # the bytes keep coming until the series ends
            if self.rx_counter == 3000:  # the first sample's read: the series ends right after it
                sampler._stopping.set()
            return answer

    fake = fake_nvml(StopMidRow, rx_counter=1000)
    sampler = LinkSampler(UUID, interval_s=0.001)
    sampler._run(fake)
    assert sampler.reason is None and sampler.samples["rx_bytes"] == [2000, 3000]


def test_the_first_sample_lets_start_go(fake_nvml) -> None:
    """The first-sample event is set as soon as the first sample is stored, not at the end of sampling."""
    fake = fake_nvml()
    sampler = LinkSampler(UUID)
    seen: list[bool] = []
    sampler._stopping = Stopping(after=2, between=lambda waits: seen.append(sampler._first.is_set()))
    sampler._run(fake)
    assert seen == [True, True] and len(sampler.samples["t_s"]) == 3


def test_a_sampler_once_stopped_keeps_nothing_a_late_thread_reads(fake_nvml) -> None:
    """A sample read after stop() closed the sampler is dropped, and the thread ends."""
    fake = fake_nvml()
    sampler = LinkSampler(UUID)
    link = sampler.stop()
    sampler._stopping = Stopping(after=3)  # not yet set: only the closed sampler ends the thread at once
    sampler._run(fake)
    assert sampler.samples == EMPTY and sampler.reason is None and fake.samples == 1 and fake.shutdowns == 1
    assert sampler._first.is_set() and sampler.stop() is link and link["t_s"] == []


@pytest.mark.parametrize("max_samples, waits, t_s, gen, intervals, interval_s, thinned", [
    # 5 samples: the 2nd and 4th go (the first and the latest stay), the interval doubles; three times over
    (5, 8, [0.0, 2.0, 4.0], [0, 6, 8], [0.25] * 4 + [0.5, 0.5, 1.0, 1.0], 2.0, 3),
    # 6 samples: the 2nd and the 4th go, the 6th (the latest) stays
    (6, 6, [0.0, 0.5, 1.0, 1.25, 1.75], [0, 2, 4, 5, 6], [0.25] * 5 + [0.5], 0.5, 1),
    # one short of the bound: nothing is dropped
    (6, 4, [0.0, 0.25, 0.5, 0.75, 1.0], [0, 1, 2, 3, 4], [0.25] * 4, 0.25, 0),
])  # fmt: skip
def test_a_series_past_max_samples_drops_every_other_sample_and_doubles_the_interval(
        max_samples: int, waits: int, t_s: list[float], gen: list[int], intervals: list[float], interval_s: float, thinned: int,
        fake_nvml, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """On reaching max_samples, every other sample between the first and the latest is dropped and the interval doubles."""
    fake = fake_nvml(gen=0)
    clock = SimClock()
    monkeypatch.setattr(sampling, "time", clock)

    def between(count: int) -> None:
        fake.gen = count

    sampler = LinkSampler(UUID, interval_s=0.25, max_samples=max_samples)
    sampler._stopping = stopping = Stopping(after=waits, between=between, clock=clock)
    sampler._run(fake)
    assert sampler.reason is None and stopping.waits == intervals
    assert sampler.samples["t_s"] == t_s and sampler.samples["gen"] == gen and sampler.samples["width"] == [16] * len(gen)
    assert (sampler.interval_s, sampler.thinned) == (interval_s, thinned)
    link = sampler.stop()
    assert (link["interval_s"], link["thinned"], link["t_s"]) == (interval_s, thinned, t_s)


# rx_counter


class FieldNVML:
    """Just nvmlDeviceGetFieldValues, answering one field value as the binding's c_nvmlFieldValue_t does."""

    NVML_FI_DEV_PCIE_COUNT_RX_BYTES = 198

    def __init__(self, nvml_return: int = 0, **typed: Any) -> None:
        self.nvml_return, self.typed = nvml_return, typed
        self.asked: list[tuple[Any, list[int]]] = []

    def nvmlDeviceGetFieldValues(self, handle: Any, fields: list[int]) -> list[Any]:
        self.asked.append((handle, fields))
        value = SimpleNamespace(uiVal=7, ulVal=8, ullVal=9.0, usVal=6, dVal=1.5)
        return [SimpleNamespace(fieldId=field, nvmlReturn=self.nvml_return, value=value, **self.typed) for field in fields]


@pytest.mark.parametrize("typed, read, bits", [
    ({"valueType": 1}, 7, 32),  # unsigned int
    ({"valueType": 2}, 8, 64),  # unsigned long
    ({"valueType": 3}, 9, 64),  # unsigned long long
    ({"valueType": 6}, 6, 16),  # unsigned short
    ({"valueType": 0}, 9, 64),  # a type no counter comes as: read as unsigned long long
    ({"valueType": 5}, 9, 64),
    ({}, 9, 64),  # no type given
])  # fmt: skip
def test_the_rx_counter_reads_the_member_its_type_names_and_records_its_width(typed: dict[str, int], read: int, bits: int) -> None:
    """The counter is the member of the value its type names, as an int, asked for its one field of the handle given."""
    nvml = FieldNVML(**typed)
    widths: dict[str, Any] = {"kept": True}
    answer = rx_counter(nvml, widths)("handle-3")
    assert answer == read and type(answer) is int
    assert widths == {"kept": True, "rx_bytes_bits": bits} and nvml.asked == [("handle-3", [198])]


def test_a_counter_nvml_refuses_raises_with_the_return_code_and_records_no_width() -> None:
    """A field value whose nvmlReturn is not 0 (success) is refused, word for word."""
    widths: dict[str, Any] = {}
    with pytest.raises(RuntimeError) as raised:
        rx_counter(FieldNVML(nvml_return=3, valueType=3), widths)(0)
    assert str(raised.value) == "NVML_FI_DEV_PCIE_COUNT_RX_BYTES not available (NVML return code 3)" and widths == {}
    assert rx_counter(FieldNVML(nvml_return=0, valueType=3), widths)(0) == 9


def test_a_binding_without_the_counters_field_raises_without_asking_nvml() -> None:
    """An nvidia-ml-py that lacks NVML_FI_DEV_PCIE_COUNT_RX_BYTES: the reader raises, word for word, and asks nothing."""

    class Old(FieldNVML):
        NVML_FI_DEV_PCIE_COUNT_RX_BYTES = None

    nvml, widths = Old(), {}  # type: ignore[var-annotated]
    with pytest.raises(RuntimeError) as raised:
        rx_counter(nvml, widths)(0)
    assert str(raised.value) == NO_FIELD and nvml.asked == [] and widths == {}
    with pytest.raises(RuntimeError, match="^this nvidia-ml-py has no NVML_FI_DEV_PCIE_COUNT_RX_BYTES$"):
        rx_counter(object(), {})(0)


def test_the_rx_counter_reads_the_fake_nvmls_gpu(fake_nvml) -> None:
    """Against the strict fake: the GPU's own counter, and NVML's refusal of a handle it never gave out."""
    fake = fake_nvml(rx_counter=5_000_000_000)
    widths: dict[str, Any] = {}
    assert rx_counter(fake, widths)(1) == 5_000_000_000 and widths == {"rx_bytes_bits": 64}
    with pytest.raises(FakeNVMLError, match="Invalid Argument"):
        rx_counter(fake, widths)("handle")
