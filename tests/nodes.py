"""Result files made to look like nodes of a GPU fleet: measured on the simulated link (exact,
instant), then labelled as a raw pinned copy and a torch path on an H100 with NVML's link facts."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from xferbench.measuring.backends.sim import SimBackend, SimLink
from xferbench.measuring.measure import measure_series
from xferbench.core.results import Result, Series
from xferbench.core.spec import STREAMED, SeriesKey
from xferbench.core.timing import TimingConfig

TIMING = TimingConfig(warmup_calls=1, warmup_s=0.0, min_samples=20, min_time_s=0.0, max_samples=20)

H100 = "NVIDIA H100 80GB HBM3"


def link(gen: int, width: int, gen_max: int = 5, width_max: int = 16, waking: int = 0) -> dict[str, Any]:
    """A series' NVML samples: two idle ones at Gen1, then eight while data moved at Gen`gen` x`width`
    (the first `waking` of them still at Gen1, as a link waking from idle reads), and its maximum."""
    gens = [1, 1] + [1] * waking + [gen] * (8 - waking)
    moving = [0, 0] + [50_000_000] * 8  # KB/s: 51 GB/s received
    loaded = gens[2:]
    return {"pcie_gen_max": gen_max, "pcie_width_max": width_max, "t_s": [0.1 * i for i in range(10)], "gen": gens,
            "width": [width] * 10, "tx_kbps": [0] * 10, "rx_kbps": moving, "rx_bytes": [None] * 10,
            "summary": {"samples": 10, "loaded_samples": 8, "gen_under_load": [min(loaded), max(loaded)],
                        "width_under_load": [width, width]}}  # fmt: skip


def series(framework: str, mode: str, gbps: float, device: str = "cuda:0", batch: int = 512,
           method: str = STREAMED, under: tuple[int, int] = (5, 16)) -> Series:  # fmt: skip
    """A series measured on a simulated link of `gbps`, labelled as `framework/mode` on a GPU."""
    key = SeriesKey("sim", "link", "copy", "sim", (256, 256, 3), method=method)
    measured = Series.of(key)
    measure_series(SimBackend(), key, (batch,), dataclasses.asdict(SimLink(latency_us=5, bandwidth_gbps=gbps, jitter=0.01)), TIMING, measured)
    measured.refresh_summary()
    return dataclasses.replace(measured, framework=framework, mode=mode, device=device, device_name=H100,
                               host_buffer="", transfer="host-to-device", link=link(*under), params={})  # fmt: skip


def node_environment(host: str, gpus: int = 1, name: str = H100, replays: tuple[int, int] | None = (0, 0),
                     c2c_links: int | None = None) -> dict[str, Any]:  # fmt: skip
    """A node's environment as a real check writes it: environment.capture() and nvml_health() run
    against a fake NVML for `gpus` GPUs of one model (NodeNVML), with CUDA's view of them as the cuda
    worker reports it (matched to NVML's by UUID). `c2c_links`: the GPUs' NVLink-C2C links, as on a
    Grace node (None: none, a PCIe GPU)."""
    from fake_nvml import NodeNVML

    from xferbench.core import environment

    fake = NodeNVML(host, gpus, name, replays[0] if replays else None, c2c_links=c2c_links)
    cuda = {"version": "13.0", "devices": [{"id": f"cuda:{i}", "kind": "cuda", "name": name, "uuid": fake.nvmlDeviceGetUUID(i),
                                            "pci_bus_id": f"0000:{0x18 + 0x10 * i:02x}:00.0"} for i in range(gpus)]}  # fmt: skip
    saved = sys.modules.get("pynvml")
    sys.modules["pynvml"] = fake  # type: ignore[assignment]
    try:
        captured = environment.capture({"cuda": cuda})
        fake.replays = replays[1] if replays else None
        captured["nvml_after"] = environment.nvml_health()
    finally:
        if saved is None:
            del sys.modules["pynvml"]
        else:
            sys.modules["pynvml"] = saved
    captured["host"] = host
    return captured


def node(host: str, raw_gbps: float = 55.0, under: tuple[int, int] = (5, 16), gpus: int = 1, torch_share: float = 0.9,
         name: str = H100, replays: tuple[int, int] | None = (0, 0), c2c_links: int | None = None) -> Result:  # fmt: skip
    """One node's result: per GPU a streamed raw pinned copy and a per-call torch pinned_into (`c2c_links`: a
    Grace node's GPUs, as node_environment)."""
    found = []
    for index in range(gpus):
        device = f"cuda:{index}"
        raw = series("cuda", "raw_pinned", raw_gbps, device, under=under)
        torch = series("torch", "pinned_into", raw_gbps * torch_share, device, method="per-call", under=under)
        found += [dataclasses.replace(raw, device_name=name), dataclasses.replace(torch, device_name=name)]
    environment = node_environment(host, gpus, name, replays, c2c_links)
    return Result(environment=environment, config={}, created="2026-11-23T00:00:00+00:00", series=found, status="complete")


def write(result: Result, folder: Path, name: str | None = None) -> Path:
    path = folder / f"{name or result.environment['host']}.json"
    result.save(path)
    return path
