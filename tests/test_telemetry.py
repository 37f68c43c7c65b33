"""PCIe link sampling and the link and NUMA warnings, against a fake pynvml: no GPU or driver needed."""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

import pytest
from conftest import FAST, FakeBackend, wait_for
from rich.console import Console

from xferbench.reading import display
from xferbench.core import environment, telemetry
from xferbench.measuring import sampler as sampling
from xferbench.core.results import Result, Series, load
from xferbench.core.spec import SeriesKey
from xferbench.measuring.sweep import Plan, PlannedSeries, SweepConfig, new_result, run_plan
from xferbench.measuring.sampler import LinkSampler
from xferbench.core.telemetry import link_below_max, link_warnings, numa_warning
from xferbench.measuring.worker import LocalRunner
from fake_nvml import BUSY_KBPS, UUID, FakeNVML, FakeNVMLError

def cuda_series(gens: Sequence[int], widths: Sequence[int] | None = None, rx: Sequence[int] | None = None,
                gen_max: int = 4, width_max: int = 16) -> Series:  # fmt: skip
    """A cuda:0 series whose link record holds these samples."""
    widths = widths or [16] * len(gens)
    rx = rx or [BUSY_KBPS] * len(gens)
    link = {"pcie_gen_max": gen_max, "pcie_width_max": width_max, "t_s": [0.1 * i for i in range(len(gens))],
            "gen": list(gens), "width": list(widths), "tx_kbps": [0] * len(gens), "rx_kbps": list(rx), "reason": None}  # fmt: skip
    return Series("torch", "pinned", "copy", "cuda:0", [4], link=link)


def gpu_env(gen_current: int = 1, process_cpus: list[int] | None = None, ideal: list[int] | None = None) -> dict[str, Any]:
    nvml = {"pcie_gen_current": gen_current, "pcie_width_current": 16, "pcie_gen_max": 4, "pcie_width_max": 16,
            "numa_node": 0, "cpu_affinity": ideal, "uuid": UUID}  # fmt: skip
    return {"process_cpus": process_cpus, "devices": [{"id": "cuda:0", "kind": "cuda", "uuid": UUID, "nvml": nvml}]}


def test_sampler_collects_samples_and_stops_cleanly(fake_nvml) -> None:
    fake = fake_nvml()
    with LinkSampler(UUID, interval_s=0.002) as sampler:
        wait_for(lambda: fake.samples >= 5)
    link = sampler.stop()
    taken = fake.samples
    time.sleep(0.05)
    assert fake.samples == taken and fake.shutdowns == 1  # the thread ended and gave NVML back
    assert fake.opened == [("uuid", UUID)]
    assert link["reason"] is None and link["matched_by"] == "uuid" and link["uuid"] == UUID and "nvml_index" not in link
    assert (link["pcie_gen_max"], link["pcie_width_max"], link["pcie_gen_gpu_max"]) == (4, 16, None)  # the GPU's own max: Not Supported
    assert link["field_errors"]["pcie_gen_gpu_max"] == "Not Supported"
    n = len(link["t_s"])
    assert n >= 5 and link["gen"] == [4] * n and link["width"] == [16] * n and link["rx_kbps"] == [BUSY_KBPS] * n
    assert link["t_s"] == sorted(link["t_s"]) and link["t_s"][0] < 1.0
    summary = {k: v for k, v in link["summary"].items() if not k.startswith("rx_bytes")}
    assert summary == {"samples": n, "loaded_samples": n, "gen_under_load": [4, 4], "width_under_load": [16, 16],
                       "rx_mbps_peak": round(BUSY_KBPS * telemetry.KB / 1e6, 1), "tx_mbps_peak": round(500 * telemetry.KB / 1e6, 1)}  # fmt: skip
    assert link["summary"]["rx_bytes_from"].startswith("≈ NVML's RX throughput (approximate")  # no counter on this fake
    assert "no NVML_FI_DEV_PCIE_COUNT_RX_BYTES" in link["field_errors"]["rx_bytes"] and link["rx_bytes"] == [None] * n


def test_without_a_uuid_the_sampler_opens_the_gpu_by_index(fake_nvml, monkeypatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    fake = fake_nvml(gpus=4)
    environment = {"devices": [{"id": "cuda:3", "kind": "cuda"}]}  # no UUID known: fall back to the CUDA index
    with LinkSampler.for_device(environment, "cuda:3", interval_s=0.002) as sampler:
        wait_for(lambda: fake.samples >= 1)
    link = sampler.stop()
    assert fake.opened == [("index", 3)] and link["nvml_index"] == 3 and link["matched_by"] == "index" and "uuid" not in link
    assert link["reason"] is None and link["gen"][0] == 4
    matched = {"devices": [{"id": "cuda:0", "uuid": UUID.removeprefix("GPU-")}]}  # torch's form of the UUID
    assert sampling.nvml_target(matched, "cuda:0") == (UUID, None)


def test_under_cuda_visible_devices_an_unmatched_gpu_is_not_sampled_by_index(fake_nvml, monkeypatch) -> None:
    fake = fake_nvml()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")  # cuda:0 is NVML's GPU 3, or another: no guess
    with LinkSampler.for_device({"devices": [{"id": "cuda:0", "kind": "cuda"}]}, "cuda:0", interval_s=0.002) as sampler:
        pass
    link = sampler.stop()
    assert fake.opened == [] and link["t_s"] == [] and "CUDA_VISIBLE_DEVICES renumbers" in link["reason"]


def test_an_nvml_error_mid_run_records_why_and_keeps_the_samples(fake_nvml) -> None:
    fake = fake_nvml(fail_after=3)
    sampler = LinkSampler(UUID, interval_s=0.002)
    sampler.start()
    wait_for(lambda: sampler.reason is not None)
    link = sampler.stop()  # no exception reaches the sweep
    assert link["reason"] == "NVML failed after 3 sample(s): GPU is lost"
    assert len(link["t_s"]) == 3 and fake.shutdowns == 1


def test_a_query_nvml_does_not_support_costs_only_its_own_field(fake_nvml) -> None:
    fake = fake_nvml(rx_kbps=None, tx_kbps=None)  # throughput Not Supported, as under MIG or vGPU
    with LinkSampler(UUID, interval_s=0.002) as sampler:
        wait_for(lambda: fake.samples >= 3)
    link = sampler.stop()
    n = len(link["t_s"])
    assert link["reason"] is None and n >= 3 and link["gen"] == [4] * n and link["rx_kbps"] == [None] * n
    assert {k: v for k, v in link["field_errors"].items() if k.startswith(("tx", "rx_k"))} == {"tx_kbps": "Not Supported", "rx_kbps": "Not Supported"}
    assert link["summary"]["loaded_samples"] == 0 and link["summary"]["rx_mbps_peak"] is None
    assert link_below_max(Series("torch", "pinned", "copy", "cuda:0", [4], link=link), gpu_env(gen_current=4)) is None


def test_without_pynvml_the_sampler_says_why_and_does_nothing(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    with LinkSampler(UUID) as sampler:
        pass
    link = sampler.stop()
    assert link["reason"] == "nvidia-ml-py is not installed: pip install 'xferbench[nvml]'"
    assert link["t_s"] == [] and link["summary"]["samples"] == 0


def test_a_long_series_is_thinned_to_a_bounded_count(fake_nvml) -> None:
    fake = fake_nvml()
    with LinkSampler(UUID, interval_s=0.001, max_samples=10) as sampler:
        wait_for(lambda: sampler.thinned >= 2)
    link = sampler.stop()
    assert len(link["t_s"]) < 10 and fake.samples >= 15
    assert link["interval_s"] == pytest.approx(0.001 * 2 ** link["thinned"])
    assert link["t_s"] == sorted(link["t_s"])


def test_nvml_without_permission_is_recorded_and_the_sweep_runs_on(fake_nvml) -> None:
    fake_nvml(init_error=FakeNVMLError("Insufficient Permissions"))
    env = environment.capture()
    assert env["nvml"] == {"available": False, "reason": "NVML could not start: Insufficient Permissions"}

    backend = FakeBackend()
    config = SweepConfig(frameworks=("fake",), batch_sizes=(1, 2), shape=(4,), timing=FAST)
    planned = [PlannedSeries(SeriesKey("fake", "a", "copy", "cuda:0", (4,)), backend)]
    plan = Plan(config, "cuda:0", planned, {"fake": LocalRunner(backend)})
    result = run_plan(plan, new_result(plan, env), lambda r: None, link_interval_s=0.002)
    assert result.status == "complete" and [p.status for p in result.series[0].points] == ["ok", "ok"]
    assert result.series[0].link["reason"] == "NVML could not start: Insufficient Permissions"


class WaitingRunner(LocalRunner):
    """Measures as usual, then lingers until the fake NVML was sampled: a real series lasts seconds."""

    def __init__(self, backend: FakeBackend, fake: FakeNVML) -> None:
        super().__init__(backend)
        self.fake = fake

    def measure_series(self, key: SeriesKey, *args: Any) -> None:
        super().measure_series(key, *args)
        if key.device.startswith("cuda"):
            seen = self.fake.samples
            wait_for(lambda: self.fake.samples >= seen + 3)


def test_run_plan_samples_the_link_of_cuda_series_only(fake_nvml, tmp_path) -> None:
    fake = fake_nvml(gen=1)  # a Gen4 link stuck at Gen1 under load
    backend = FakeBackend()
    config = SweepConfig(frameworks=("fake",), batch_sizes=(1,), shape=(4,), timing=FAST)
    keys = [SeriesKey("fake", "a", "copy", "cuda:0", (4,)), SeriesKey("fake", "b", "copy", "cpu", (4,))]
    plan = Plan(config, "cuda:0", [PlannedSeries(k, backend) for k in keys], {"fake": WaitingRunner(backend, fake)})
    env = gpu_env(gen_current=1)
    result = run_plan(plan, new_result(plan, env), lambda r: None, link_interval_s=0.002)
    gpu, cpu = result.series
    assert cpu.link == {} and gpu.link["summary"]["gen_under_load"] == [1, 1] and gpu.link["reason"] is None
    assert fake.opened == [("uuid", UUID)]  # matched by the environment's UUID, not by index
    assert link_warnings(gpu, env)[0].startswith("the PCIe link ran below its maximum (Gen4 x16) while data moved")
    result.save(tmp_path / "r.json")
    assert load(tmp_path / "r.json").series[0].link == gpu.link


def test_with_sampling_off_nvml_is_not_touched_and_the_file_says_so(fake_nvml) -> None:
    fake = fake_nvml()
    backend = FakeBackend()
    config = SweepConfig(frameworks=("fake",), batch_sizes=(1,), shape=(4,), timing=FAST)
    plan = Plan(config, "cuda:0", [PlannedSeries(SeriesKey("fake", "a", "copy", "cuda:0", (4,)), backend)],
                {"fake": LocalRunner(backend)})  # fmt: skip
    result = run_plan(plan, new_result(plan, gpu_env()), lambda r: None, link_interval_s=None)
    assert result.series[0].link == {"reason": "not sampled: --no-link-sampling"} and fake.opened == []


def test_the_below_max_warning_fires_from_samples_under_load() -> None:
    slow = cuda_series(gens=[1, 1, 1, 4])
    assert link_below_max(slow) == ("the PCIe link ran below its maximum (Gen4 x16) while data moved: down to Gen1 x16"
                                    " in 3 of 4 samples; check the slot, riser, BIOS link speed and power settings")  # fmt: skip
    assert "down to Gen4 x8 in 4 of 4" in (link_below_max(cuda_series(gens=[4] * 4, widths=[8] * 4)) or "")
    assert link_below_max(cuda_series(gens=[4, 4, 4, 4])) is None
    assert link_below_max(cuda_series(gens=[1, 4, 4, 4])) is None  # one slow read while it trained up: no alarm
    idle_then_busy = cuda_series(gens=[1, 1, 1, 4], rx=[0, 0, 0, BUSY_KBPS])
    assert link_below_max(idle_then_busy, gpu_env(gen_current=1)) is None  # idle samples are not held against it
    assert telemetry.link_summary(idle_then_busy.link)["gen_under_load"] == [4, 4]


def test_without_samples_under_load_the_idle_reading_is_used_and_said_to_be_idle() -> None:
    unsampled = Series("torch", "pinned", "copy", "cuda:0", [4], link={"reason": "NVML could not start: Driver Not Loaded"})
    warning = link_below_max(unsampled, gpu_env(gen_current=1))
    assert warning == ("the PCIe link read Gen1 x16 (max Gen4 x16) before the run, idle, where a lower generation is"
                       " normal; no reading under load (NVML could not start: Driver Not Loaded)")  # fmt: skip
    assert link_below_max(unsampled, gpu_env(gen_current=4)) is None
    assert link_warnings(Series("host", "numpy", "copy", "cpu", [4]), gpu_env(gen_current=1)) == []


def test_the_numa_warning_fires_when_the_process_may_leave_the_gpus_node() -> None:
    env = gpu_env(gen_current=4, process_cpus=list(range(16)), ideal=list(range(8)))
    assert numa_warning(env, "cuda:0") == (
        "the process may run on CPUs 8-15, outside the GPU's NUMA node 0 (CPUs 0-7); a remote node can cut host-to-device"
        " throughput several-fold. Pin it: numactl --cpunodebind=0 --membind=0 xferbench sweep ..."
    )
    assert numa_warning(gpu_env(process_cpus=[0, 1, 2], ideal=list(range(8))), "cuda:0") is None  # pinned to the node
    assert numa_warning(gpu_env(process_cpus=list(range(16)), ideal=None), "cuda:0") is None  # unknown: no guess


def test_environment_records_the_gpus_ideal_cpus_and_the_process_cpus(fake_nvml, monkeypatch, tmp_path) -> None:
    fake = fake_nvml()
    (tmp_path / "devices" / "system" / "node" / "node1").mkdir(parents=True)
    (tmp_path / "devices" / "system" / "node" / "node1" / "cpulist").write_text("4-7\n")
    monkeypatch.setattr(environment, "SYSFS", str(tmp_path))  # node 1 of a two-socket server, whatever this machine is
    opened = []

    def open_gpu(index: int) -> int:
        if index == 1:
            raise FakeNVMLError("Insufficient Permissions")
        opened.append(index)
        return index

    monkeypatch.setattr(fake, "nvmlDeviceGetHandleByIndex", open_gpu)
    fake.gpu_gen_max = 5  # the GPU's own maximum, above the Gen4 its port allows
    info = environment.nvml_info()
    first, second = info["gpus"]
    assert first["cpu_affinity"] == [4, 5, 6, 7] and first["numa_node"] == 1 and first["pci_bus_id"] is None
    assert first["numa_cpus"] == [4, 5, 6, 7] and first["gpu_memory_numa_node"] is None  # a PCIe GPU: its memory is no node
    assert (first["pcie_gen_max"], first["pcie_gen_gpu_max"]) == (4, 5)
    assert second == {"index": 1, "uuid": None, "reason": "NVML could not open GPU 1: Insufficient Permissions"}
    assert environment.parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert environment.cpu_ranges([11, 0, 1, 2, 3, 8, 10]) == "0-3,8,10-11"
    if hasattr(os, "sched_getaffinity"):  # Linux
        captured = environment.capture()
        assert captured["process_cpus"] == sorted(os.sched_getaffinity(0))
        assert len(captured["load_average"]) == 3 and all(x >= 0 for x in captured["load_average"])
        if os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled"):
            assert captured["transparent_hugepages"]["enabled"] in ("always", "madvise", "never")


def test_the_terminal_shows_the_fractions_and_the_warnings() -> None:
    from test_report import GPU_ENV, curve

    gpu = {**GPU_ENV["devices"][1], "nvml": {**GPU_ENV["devices"][1]["nvml"], "cpu_affinity": list(range(8))}}
    env = {**GPU_ENV, "process_cpus": list(range(16)), "devices": [GPU_ENV["devices"][0], gpu]}
    pinned = curve("torch", "pinned", "cuda:0", {1: 6300.0, 4: 25200.0})
    pinned.link = cuda_series(gens=[2, 2, 2]).link
    raw = curve("cuda", "raw_pinned", "cuda:0", {1: 7000.0, 4: 26000.0})
    result = Result(env, {}, "2026-01-02T03:04:05+00:00", [raw, pinned])
    console = Console(record=True, width=400)
    display.print_series(console, pinned, result)
    text = " ".join(console.export_text().split())
    assert "80% of the link's 31.5 GB/s (theoretical) · 97% of the raw ceiling (cuda/raw_pinned/copy)" in text
    assert "warning: torch/pinned/copy@cuda:0: the PCIe link ran below its maximum (Gen4 x16)" in text
    assert "NUMA" not in text  # the sweep says it once, not under every series
    numa = display.numa_line(result, "cuda:0", bind=False) or ""
    assert "warning: cuda:0: the process may run on CPUs 8-15, outside the GPU's NUMA node 0 (CPUs 0-7)" in numa
    bound = display.numa_line(result, "cuda:0") or ""  # by default each worker is bound instead: no warning
    assert bound == "[dim]binding each cuda:0 worker to CPUs 0-7 and memory to NUMA node 0 before it allocates (--no-bind turns this off)[/]"
    assert display.numa_line(result, "cpu") is None
    console = Console(record=True, width=400)
    display.print_series(console, pinned)  # without the result: the samples still speak, the fractions cannot
    text = console.export_text()
    assert "the PCIe link ran below its maximum" in text and "raw ceiling" not in text and "NUMA" not in text


def test_gpus_are_matched_to_nvml_by_pci_bus_id_where_the_uuid_is_missing() -> None:
    assert environment.pci_key("00000000:3B:00.0") == environment.pci_key("0000:3b:00.0") == (0, 0x3B, 0, 0)
    assert environment.pci_key(None) is None and environment.pci_key("garbage") is None
    nvml = {"driver": "580.1", "gpus": [{"index": 0, "uuid": UUID, "pci_bus_id": "00000000:3B:00.0", "pcie_gen_max": 5}]}
    devices = [{"id": "cuda:0", "kind": "cuda", "uuid": None, "pci_bus_id": "0000:3b:00.0"},  # CuPy cut the UUID short
               {"id": "cuda:1", "kind": "cuda", "uuid": None, "pci_bus_id": "0000:5e:00.0"}]  # fmt: skip
    environment._attach_nvml(devices, nvml)
    assert devices[0]["nvml"]["uuid"] == UUID and "nvml" not in devices[1]
    assert sampling.nvml_target({"devices": devices}, "cuda:0") == (UUID, None)


def test_a_device_takes_the_facts_its_first_describer_lacked(fake_nvml) -> None:
    fake_nvml(init_error=FakeNVMLError("Driver Not Loaded"))
    frameworks = {"cuda": {"devices": [{"id": "cuda:0", "kind": "cuda", "name": "H200 (CuPy)", "uuid": None}]},
                  "torch": {"devices": [{"id": "cuda:0", "kind": "cuda", "name": "H200 (torch)", "uuid": "abc"}]}}  # fmt: skip
    (gpu,) = [d for d in environment.capture(frameworks)["devices"] if d["id"] == "cuda:0"]
    assert gpu["name"] == "H200 (CuPy)" and gpu["uuid"] == "abc"
    assert frameworks["cuda"]["devices"][0]["uuid"] is None  # the framework's own record is left as it was


def test_the_rx_counter_is_read_whole_and_unwrapped(fake_nvml) -> None:
    fake = fake_nvml(rx_counter=1000)
    with LinkSampler(UUID, interval_s=0.002) as sampler:
        wait_for(lambda: fake.samples >= 3)
        fake.rx_counter = 5_000_000_000  # bytes moved while the series ran
    link = sampler.stop()
    assert link["rx_bytes"][0] == 1000 and link["rx_bytes"][-1] == 5_000_000_000  # a last sample after stop()
    assert link["rx_bytes_bits"] == 64 and "rx_bytes" not in link["field_errors"]
    assert telemetry.received_bytes(link) == (5_000_000_000 - 1000, f"NVML's PCIe RX byte counter over {link['t_s'][-1]:.1f} s")


def test_a_narrow_counter_is_unwrapped_or_not_trusted() -> None:
    slow = {"t_s": [0.0, 0.1, 0.2], "rx_bytes": [2**32 - 100, 50, 150], "rx_bytes_bits": 32, "rx_kbps": [1000, 1000, 1000]}
    assert telemetry.received_bytes(slow)[0] == 250  # wrapped once, at 1 MB/s: unambiguous
    fast = {**slow, "rx_kbps": [50_000_000] * 3}  # 50 GB/s: 5 GB between samples, more than a 32-bit turn
    received, how = telemetry.received_bytes(fast)
    assert how.startswith("≈ NVML's RX throughput") and "32-bit byte counter could wrap more than once" in how
    assert received == pytest.approx(0.2 * 50_000_000 * 1000)


def test_replays_clocks_and_the_p_state_are_read_before_and_after(fake_nvml) -> None:
    """What a health check compares: NVML's PCIe replay counter, clocks and P-state, per GPU."""
    fake = fake_nvml()
    fake.NVML_CLOCK_SM, fake.NVML_CLOCK_MEM = 1, 2
    fake.replays = 7
    fake.nvmlDeviceGetPcieReplayCounter = lambda handle: fake.replays
    fake.nvmlDeviceGetClockInfo = lambda handle, clock: {1: 1980, 2: 2619}[clock]
    fake.nvmlDeviceGetPerformanceState = lambda handle: 0
    first = environment.nvml_info()["gpus"][0]
    assert (first["pcie_replay_counter"], first["clocks_mhz"], first["pstate"]) == (7, {"sm": 1980, "memory": 2619}, "P0")
    fake.replays = 9
    after = environment.nvml_health()
    assert after["available"] and [g["pcie_replay_counter"] for g in after["gpus"]] == [9, 9]
    assert after["gpus"][0]["uuid"] == first["uuid"]
    del fake.nvmlDeviceGetPcieReplayCounter  # an older driver: null, not an error
    assert environment.nvml_health()["gpus"][0]["pcie_replay_counter"] is None


def test_without_nvml_the_after_reading_says_why(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert environment.nvml_health() == {"available": False, "reason": "nvidia-ml-py is not installed: pip install 'xferbench[nvml]'"}


@pytest.mark.parametrize("device, visible, expected", [
    ({"id": "cuda:1", "nvml": {"uuid": "MIG-1234"}}, None, ("MIG-1234", None)),  # a MIG instance keeps its own prefix
    ({"id": "cuda:1", "uuid": "1234"}, None, ("GPU-1234", None)),  # torch's form, without the prefix
    ({"id": "cuda:1", "nvml": {"index": 5}}, None, (None, 5)),  # NVML's own index, matched by PCI address
    ({"id": "cuda:1", "nvml": {"index": 0}}, None, (None, 0)),
    ({"id": "cuda:3"}, None, (None, 3)),  # nothing matched: CUDA's index, which is NVML's without CUDA_VISIBLE_DEVICES
    ({"id": "cuda:3"}, "2,3", (None, None)),  # renumbered: no guess
    ({"id": "cuda"}, None, (None, 0)),
])  # fmt: skip
def test_nvml_target_prefers_the_uuid_then_nvmls_index_then_cudas(device, visible, expected, monkeypatch) -> None:
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert sampling.nvml_target({"devices": [{"kind": "cuda", **device}]}, device["id"]) == expected


def test_the_sampler_records_the_gpus_own_maximum_or_why_it_has_none(fake_nvml, monkeypatch) -> None:
    fake_nvml(gpu_gen_max=5)
    with LinkSampler(UUID, interval_s=0.002) as sampler:
        pass
    assert sampler.stop()["pcie_gen_gpu_max"] == 5
    old = fake_nvml()
    monkeypatch.delattr(type(old), "nvmlDeviceGetGpuMaxPcieLinkGeneration")  # an nvidia-ml-py older than the call
    with LinkSampler(UUID, interval_s=0.002) as sampler:
        pass
    link = sampler.stop()
    assert link["pcie_gen_gpu_max"] is None and link["field_errors"]["pcie_gen_gpu_max"] == "this nvidia-ml-py does not have it"
    assert link["reason"] is None and link["pcie_gen_max"] == 4


WIDE = 2**31 / telemetry.KB  # KB/s: 2^31 B/s, half a 32-bit counter's turn per second


@pytest.mark.parametrize("link, expected", [
    # a 64-bit counter: exact, across its own wrap, and trusted whatever the rate
    ({"t_s": [1.0, 1.1, 1.3], "rx_bytes": [100, 1100, 3100]}, (3000.0, "NVML's PCIe RX byte counter over 0.3 s")),
    ({"t_s": [1.0, 1.1], "rx_bytes": [2**64 - 10, 5]}, (15.0, "NVML's PCIe RX byte counter over 0.1 s")),
    ({"t_s": [1.0, 1.1], "rx_bytes": [0, 10], "rx_kbps": [2**60, 2**60]}, (10.0, "NVML's PCIe RX byte counter over 0.1 s")),
    # a 32-bit counter: trusted while it cannot turn more than half-way between two samples
    ({"t_s": [1.0, 1.6], "rx_bytes": [2**32 - 100, 50], "rx_bytes_bits": 32, "rx_kbps": [WIDE, WIDE]},
     (150.0, "NVML's PCIe RX byte counter over 0.6 s")),
    ({"t_s": [1.0, 2.0], "rx_bytes": [0, 50], "rx_bytes_bits": 32, "rx_kbps": [WIDE, WIDE]},
     (pytest.approx(2.0**31), "≈ NVML's RX throughput (approximate: 20 ms windows) integrated over 1.0 s; NVML's 32-bit byte counter could"
               " wrap more than once between samples")),
    ({"t_s": [1.0, 2.0], "rx_bytes": [0, 50], "rx_bytes_bits": 32}, (50.0, "NVML's PCIe RX byte counter over 1.0 s")),  # no rate: none seen
    # no counter: the RX samples integrated, from two of them
    ({"t_s": [0.0, 1.0], "rx_kbps": [1000, 3000]}, (2000 * 1000.0, "≈ NVML's RX throughput (approximate: 20 ms windows) integrated over 1.0 s")),
    ({"t_s": [0.0, 1.0], "rx_kbps": [1000, None]}, (None, "unknown: fewer than two RX samples")),
    ({"t_s": [0.0], "rx_kbps": [1000], "reason": "NVML failed after 1 sample(s): GPU is lost"}, (None, "unknown: NVML failed after 1 sample(s): GPU is lost")),
    ({"t_s": [0.0, 1.0], "rx_kbps": [None, None], "field_errors": {"rx_kbps": "Not Supported"}}, (None, "unknown: Not Supported")),
])  # fmt: skip
def test_received_bytes_from_the_counter_or_the_samples(link, expected) -> None:
    assert telemetry.received_bytes(link) == expected


def test_the_rx_counter_reads_the_member_its_type_names_from_the_gpu_asked_for() -> None:
    from types import SimpleNamespace

    asked = []

    class NVML:
        NVML_FI_DEV_PCIE_COUNT_RX_BYTES = 198

        def __init__(self, **value: Any) -> None:
            self.value = value

        def nvmlDeviceGetFieldValues(self, handle: Any, fields: list[int]) -> list[Any]:
            asked.append((handle, fields))
            return [SimpleNamespace(nvmlReturn=0, value=SimpleNamespace(uiVal=7, ulVal=8, ullVal=9, usVal=6), **self.value)]

    # nvmlValueType_t: 1 unsigned int, 2 unsigned long (64-bit on Linux), 3 unsigned long long, 6 unsigned short
    for value_type, member_value, bits in ((1, 7, 32), (2, 8, 64), (3, 9, 64), (6, 6, 16), (None, 9, 64), (5, 9, 64)):
        widths: dict[str, int] = {}
        typed = {} if value_type is None else {"valueType": value_type}
        assert sampling.rx_counter(NVML(**typed), widths)("handle-0") == member_value
        assert widths == {"rx_bytes_bits": bits} and asked[-1] == ("handle-0", [198])

    class Refusing(NVML):
        def nvmlDeviceGetFieldValues(self, handle: Any, fields: list[int]) -> list[Any]:
            return [SimpleNamespace(nvmlReturn=3, value=None)]

    with pytest.raises(RuntimeError, match=r"^NVML_FI_DEV_PCIE_COUNT_RX_BYTES not available \(NVML return code 3\)$"):
        sampling.rx_counter(Refusing(), {})("handle-0")


def test_the_placement_warnings_word_for_word() -> None:
    env = gpu_env(process_cpus=[0, 1, 2, 3, 4, 5], ideal=[4, 5, 6, 7])
    assert telemetry.numa_warning(env, "cuda:0") == (
        "the process may run on CPUs 0-3, outside the GPU's NUMA node 0 (CPUs 4-7); a remote node can cut host-to-device"
        " throughput several-fold. Pin it: numactl --cpunodebind=0 --membind=0 xferbench sweep ...")  # fmt: skip
    nvml = env["devices"][0]["nvml"]
    nvml.update(cpu_affinity=None, numa_cpus=[4, 5, 6, 7], numa_node=-1)  # no node: the ideal CPUs, from the node's list
    bound = {"cpus": [3, 4], "reason": "set_mempolicy: Operation not permitted"}  # the worker's own CPUs count, not the sweep's
    assert telemetry.numa_warning(env, "cuda:0", bound) == (
        "the process may run on CPUs 3, outside the GPU's ideal CPU set (CPUs 4-7) (set_mempolicy: Operation not permitted);"
        " a remote node can cut host-to-device throughput several-fold. Pin it: taskset -c 4-7 xferbench sweep ...")  # fmt: skip
    assert telemetry.numa_warning(env, "cuda:0", {"cpus": [4, 5]}) is None
    nvml["numa_node"] = None
    assert "outside the GPU's ideal CPU set" in telemetry.numa_warning(env, "cuda:0")
    refused = Series("torch", "pinned", "copy", "cuda:0", [4], numa={"requested": {"cpus": [4]}, "reason": "sched_setaffinity: EPERM"})
    assert telemetry.binding_warning(refused) == "the worker could not be bound as planned: sched_setaffinity: EPERM"
    assert telemetry.binding_warning(dataclasses.replace(refused, numa={"requested": None, "reason": "not bound: --no-bind"})) is None
    assert telemetry.binding_warning(dataclasses.replace(refused, numa={"requested": {"cpus": [4]}, "reason": None})) is None


def test_an_idle_reading_below_the_maximum_is_said_to_be_idle_with_why_nothing_was_read_under_load() -> None:
    env = gpu_env(gen_current=1)
    never = Series("torch", "pinned", "copy", "cuda:0", [4], link={"pcie_gen_max": 4, "pcie_width_max": 16})
    assert telemetry.link_below_max(never, env) == ("the PCIe link read Gen1 x16 (max Gen4 x16) before the run, idle, where a lower"
                                                   " generation is normal; no reading under load (it was not sampled)")  # fmt: skip
    quiet = dataclasses.replace(never, link={**never.link, "t_s": [0.0], "rx_kbps": [0], "tx_kbps": [0]})
    assert telemetry.link_below_max(quiet, env).endswith("no reading under load (no sample caught data moving)")
    env["devices"][0]["nvml"]["pcie_width_current"] = None
    assert telemetry.link_below_max(quiet, env) is None  # half a reading judges nothing
    no_width = {"devices": [{"id": "cuda:0", "kind": "cuda", "nvml": {"pcie_gen_current": 1, "pcie_width_current": 16, "pcie_gen_max": 4}}]}
    assert telemetry.link_below_max(Series("torch", "pinned", "copy", "cuda:0", [4], link={}), no_width) is None


def test_link_facts_names_a_peak_above_one_reading_that_another_allows() -> None:
    from xferbench.core.stats import Summary

    env = {"devices": [{"id": "cuda:0", "kind": "cuda", "nvml": {"pcie_gen_current": 3, "pcie_width_current": 16,
                                                                   "pcie_gen_max": 4, "pcie_width_max": 16}}]}  # fmt: skip
    fast = Series("torch", "pinned", "copy", "cuda:0", [4], link={"pcie_gen_max": 3, "pcie_width_max": 16, "pcie_gen_gpu_max": 4},
                  summary=Summary(peak_mbps=20_000.0))  # a VM's port says Gen3; the GPU says Gen4
    said = telemetry.link_facts(fast, env)
    assert said is not None and said.startswith("link facts disagree: 20,000 MB/s exceeds Gen3 x16 (15.8 GB/s, system maximum) but fits")
    assert telemetry.link_facts(dataclasses.replace(fast, summary=Summary(peak_mbps=None)), env) is None


def test_a_gpu_nvml_stops_answering_costs_the_series_two_seconds_at_most_and_is_said(fake_nvml, monkeypatch) -> None:
    import threading

    monkeypatch.setattr(sampling, "STOP_WAIT_S", 0.2)
    fake = fake_nvml()
    stuck = threading.Event()
    answered = fake.nvmlDeviceGetPcieThroughput

    def hang(handle, counter):  # type: ignore[no-untyped-def]
        if fake.samples >= 2:
            stuck.wait(5)  # NVML stuck in the driver
        return answered(handle, counter)

    fake.nvmlDeviceGetPcieThroughput = hang
    sampler = LinkSampler(UUID, interval_s=0.002)
    sampler.start()
    assert sampler._thread is not None and sampler._thread.daemon and sampler._thread.name == "xferbench-link"  # never holds up exit
    wait_for(lambda: fake.samples >= 2)
    started = time.monotonic()
    link = sampler.stop()
    assert time.monotonic() - started < 2.0
    assert link["reason"] == "NVML did not answer within 0.2 s of the series' end; samples so far kept"
    assert link["source"] == "nvml" and link["field_errors"] == sampler.stop()["field_errors"]
    kept = len(link["t_s"])
    stuck.set()
    sampler._thread.join(5)
    assert len(sampler.samples["t_s"]) == kept  # what the thread read after the end was dropped


def test_a_gpu_neither_uuid_nor_index_names_is_not_sampled() -> None:
    sampler = LinkSampler(None, None)
    sampler.start()
    assert sampler.stop()["reason"] == ("no UUID or PCI bus id matched this GPU to NVML, and CUDA_VISIBLE_DEVICES renumbers CUDA's"
                                        " GPUs: the link was not sampled rather than another GPU's")  # fmt: skip
