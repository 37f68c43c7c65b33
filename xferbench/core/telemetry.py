"""What a series' link record (NVML samples taken while it ran, by xferbench.measuring.sampler), the environment
and the run's raw reference say about a curve: the bytes the GPU received, the link under load, the
ceilings a curve is read against, and the warnings. Arithmetic only, for the sweep and the readers alike.

An idle link drops its generation to save power, so the reading taken before the run cannot tell
a healthy link from a slow one; a reading taken while bytes move can.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from xferbench.core import c2c, vendors
from xferbench.core.environment import cpu_ranges, device_entry, gpu_link_facts, link_disagreement, pcie_ceiling
from xferbench.core.numa import pages_off_node
from xferbench.core.references import bandwidth_for, gbps_text
from xferbench.core.results import Series
from xferbench.core.spec import BIDIR, HOST_TO_HOST

LOADED_MBPS = 100.0  # RX + TX at or above this: data was moving when the link was read
# NVML reports PCIe throughput in "KB/s" without saying which KB. Its own byte counter, read beside it, says:
# over the committed H200 runs, the counter's bytes per throughput "KB" have a median of 1,001 to 1,003.
KB = 1000
FIELDS = ("t_s", "gen", "width", "tx_kbps", "rx_kbps", "rx_bytes")  # a link record's sample lists, one per read
RAW_REFERENCE = ("cuda", "raw_pinned", "copy")  # framework, mode, op: the run's own ceiling
RAW_REFERENCES = (RAW_REFERENCE, ("hip", "raw_pinned", "copy"))  # and an AMD GPU's: the same copy through HIP
RAW_CALLS = {"cuda": "cudaMemcpyAsync", "hip": "hipMemcpyAsync"}  # each raw reference's call, by its framework


def received_bytes(link: dict[str, Any]) -> tuple[float | None, str]:
    """The bytes the GPU received over PCIe while the series' samples were taken, and how that was
    known: NVML's cumulative counter (exact), else the RX throughput samples integrated over time
    (approximate: each read is a 20 ms window, and the samples 0.1 s apart stand for the time between).

    The counter may wrap: each step between samples is taken modulo its width. A narrow counter
    that could have wrapped more than once between two samples (a 32-bit one wraps every 78 ms at
    55 GB/s) cannot be trusted, and the integrated throughput is used instead, saying so."""
    times, rates = link.get("t_s") or [], link.get("rx_kbps") or []
    counts = [(t, c) for t, c in zip(times, link.get("rx_bytes") or []) if c is not None]
    bits = link.get("rx_bytes_bits") or 64
    fallback = ""
    if len(counts) >= 2:
        steps = [(t1 - t0, (c1 - c0) % 2**bits) for (t0, c0), (t1, c1) in zip(counts, counts[1:])]
        fastest = max((r or 0) * KB for r in rates) if rates else 0.0
        if bits >= 64 or all(gap * fastest < 2 ** (bits - 1) for gap, _ in steps):
            return float(sum(step for _, step in steps)), f"NVML's PCIe RX byte counter over {counts[-1][0] - counts[0][0]:.1f} s"
        fallback = f"; NVML's {bits}-bit byte counter could wrap more than once between samples"
    pairs = [(t, r) for t, r in zip(times, rates) if r is not None]
    if len(pairs) < 2:
        why = link.get("reason") or (link.get("field_errors") or {}).get("rx_kbps") or "fewer than two RX samples"
        return None, f"unknown: {why}{fallback}"
    total = sum((t1 - t0) * (r0 + r1) / 2 * KB for (t0, r0), (t1, r1) in zip(pairs, pairs[1:]))
    return total, f"≈ NVML's RX throughput (approximate: 20 ms windows) integrated over {pairs[-1][0] - pairs[0][0]:.1f} s{fallback}"


def claimed_bytes(series: Series) -> int | None:
    """The host-to-device bytes the series says it moved: every counted transfer of every point."""
    counted = [p for p in series.points if p.transfers is not None]
    return sum(p.transfers * p.bytes for p in counted) if counted else None  # type: ignore[operator]


def loaded_samples(link: dict[str, Any]) -> list[int]:
    """The indexes of samples taken while data moved: an idle link runs below its maximum by design."""
    tx, rx = link.get("tx_kbps") or [], link.get("rx_kbps") or []
    return [i for i, (t, r) in enumerate(zip(tx, rx)) if ((t or 0) + (r or 0)) * KB / 1e6 >= LOADED_MBPS]


def loaded_states(link: dict[str, Any]) -> list[tuple[int, int]]:
    """The (generation, width) of each sample taken while data moved that read both."""
    return [(link["gen"][i], link["width"][i]) for i in loaded_samples(link)
            if link["gen"][i] is not None and link["width"][i] is not None]  # fmt: skip


def link_summary(link: dict[str, Any]) -> dict[str, Any]:
    """The samples in brief: the generation and width seen while data moved, as [lowest, highest],
    and the peak RX and TX in MB/s (10^6 B)."""
    loaded = loaded_samples(link)
    gens = [link["gen"][i] for i in loaded if link["gen"][i] is not None]
    widths = [link["width"][i] for i in loaded if link["width"][i] is not None]

    def peak(name: str) -> float | None:
        values = [v for v in link.get(name) or [] if v is not None]
        return round(max(values) * KB / 1e6, 1) if values else None

    received, how = received_bytes(link)
    return {
        "samples": len(link.get("t_s") or []),
        "loaded_samples": len(loaded),
        "gen_under_load": [min(gens), max(gens)] if gens else None,
        "width_under_load": [min(widths), max(widths)] if widths else None,
        "rx_mbps_peak": peak("rx_kbps"),
        "tx_mbps_peak": peak("tx_kbps"),
        "rx_bytes": received,
        "rx_bytes_from": how,
    }


def _maxima(series: Series, environment: dict[str, Any] | None) -> tuple[int | None, int | None]:
    """The PCIe link's maximum generation and width; none on a Grace node, where PCIe is not the host link."""
    device = device_entry(environment or {}, series.device)
    if c2c.is_c2c(device):
        return None, None
    nvml = gpu_link_facts(device)
    link = series.link or {}
    return link.get("pcie_gen_max") or nvml.get("pcie_gen_max"), link.get("pcie_width_max") or nvml.get("pcie_width_max")


def ran_below_max(series: Series, environment: dict[str, Any] | None = None) -> str | None:
    """Why the link counts as down-trained: below its maximum generation or width in most samples
    taken while data moved (one slow sample, taken while the link woke from idle, is not enough).
    None when it ran at its maximum, or when no sample caught data moving."""
    gen_max, width_max = _maxima(series, environment)
    loaded = loaded_states(series.link or {})
    if not gen_max or not width_max or not loaded:
        return None
    below = [(gen, width) for gen, width in loaded if gen < gen_max or width < width_max]
    if 2 * len(below) <= len(loaded):
        return None
    gen, width = min(gen for gen, _ in below), min(width for _, width in below)
    return (f"the PCIe link ran below its maximum (Gen{gen_max} x{width_max}) while data moved: down to Gen{gen} x{width}"
            f" in {len(below)} of {len(loaded)} samples; check the slot, riser, BIOS link speed and power settings")  # fmt: skip


def link_below_max(series: Series, environment: dict[str, Any] | None = None) -> str | None:
    """A warning when the link ran below its maximum generation or width in most samples taken while
    data moved (ran_below_max); without such samples, when the reading before the run was below it
    (said to be idle, where a lower generation is normal)."""
    gen_max, width_max = _maxima(series, environment)
    if not gen_max or not width_max:
        return None
    link = series.link or {}
    if loaded_samples(link):
        return ran_below_max(series, environment)
    nvml = gpu_link_facts(device_entry(environment or {}, series.device))
    gen, width = nvml.get("pcie_gen_current"), nvml.get("pcie_width_current")
    if gen is None or width is None or (gen >= gen_max and width >= width_max):
        return None
    why = link.get("reason") or ("no sample caught data moving" if link.get("t_s") else "it was not sampled")
    return (f"the PCIe link read Gen{gen} x{width} (max Gen{gen_max} x{width_max}) before the run, idle, where a lower"
            f" generation is normal; no reading under load ({why})")  # fmt: skip


def numa_warning(environment: dict[str, Any], device_id: str, numa: dict[str, Any] | None = None) -> str | None:
    """A warning when the process may run on CPUs outside the GPU's ideal set (its NUMA node): a remote
    node cut one user's P100 from 12.4 to 3.9 GB/s host to device (docs/published-figures.md). `numa`
    is a series' binding record: where its worker was bound, the CPUs it was bound to are what count,
    not the sweep's."""
    nvml = gpu_link_facts(device_entry(environment, device_id))
    ideal = nvml.get("cpu_affinity") or nvml.get("numa_cpus")
    process = (numa or {}).get("cpus") or environment.get("process_cpus")
    if not ideal or not process:
        return None
    outside = sorted(set(process) - set(ideal))
    if not outside:
        return None
    node = nvml.get("numa_node")
    on_node = isinstance(node, int) and node >= 0
    where = f"NUMA node {node}" if on_node else "ideal CPU set"
    pin = f"numactl --cpunodebind={node} --membind={node}" if on_node else f"taskset -c {cpu_ranges(ideal)}"
    why = f" ({numa['reason']})" if (numa or {}).get("reason") else ""
    return (f"the process may run on CPUs {cpu_ranges(outside)}, outside the GPU's {where}"
            f" (CPUs {cpu_ranges(ideal)}){why}; a remote node can cut host-to-device throughput several-fold."
            f" Pin it: {pin} xferbench sweep ...")  # fmt: skip


def pages_warning(series: Series, environment: dict[str, Any]) -> str | None:
    """A warning when sampled pages of the source buffers sat on a NUMA node other than the GPU's."""
    node = gpu_link_facts(device_entry(environment, series.device)).get("numa_node")
    off = {p.batch_size: pages_off_node(p.host_nodes, node) for p in series.points}
    off = {batch: count for batch, count in off.items() if count}
    if not off:
        return None
    batches = ", ".join(map(str, off))
    return (f"pages of the source buffer sat off the GPU's NUMA node {node} at batch {batches}"
            " (move_pages): copies from them cross the socket link")  # fmt: skip


def binding_warning(series: Series) -> str | None:
    """A warning when a worker was asked to bind and the kernel refused some of it."""
    numa = series.numa or {}
    if numa.get("requested") and numa.get("reason"):
        return f"the worker could not be bound as planned: {numa['reason']}"
    return None


def series_warnings(series: Series, environment: dict[str, Any]) -> list[str]:
    """What holds for this CUDA series alone: its link under load, its binding, its pages, its ceiling."""
    if not series.device.startswith("cuda"):
        return []
    found = (link_below_max(series, environment), binding_warning(series), pages_warning(series, environment),
             link_facts(series, environment))  # fmt: skip
    return [warning for warning in found if warning]


def link_warnings(series: Series, environment: dict[str, Any] | None = None) -> list[str]:
    """What a reader must know about a CUDA series' link and placement before trusting its numbers."""
    if not series.device.startswith("cuda"):
        return []
    environment = environment or {}
    numa = numa_warning(environment, series.device, series.numa)
    return series_warnings(series, environment) + ([numa] if numa else [])


def link_facts(series: Series, environment: dict[str, Any]) -> str | None:
    """'link facts disagree' when the series' peak is above its link ceiling but another reading allows it."""
    peak = series.summary.peak_mbps
    return link_disagreement(peak, device_entry(environment, series.device), series.link) if peak else None


def link_ceiling(series: Series, environment: dict[str, Any]) -> tuple[float | None, str]:
    """The series' link ceiling in GB/s where known, and what it is, or why it is unknown."""
    kind = series.device.split(":")[0]
    if series.transfer == HOST_TO_HOST and kind != "cpu":
        return None, "unknown: a host-to-host copy (torch pin) crosses no PCIe link"
    if kind == "sim":
        gbps = series.params.get("bandwidth_gbps")
        return gbps, f"simulated link ({gbps:g} GB/s, as configured)" if gbps else "unknown: simulated link"
    if kind == "cpu":
        return None, "unknown: a CPU series copies host to host, over no PCIe link"
    if kind == "mps" and not unified(environment):
        return None, "unknown: the GPU of an Intel Mac (MPS) shares no unified memory, and its link is not recorded"
    if kind == "mps":
        return unified_memory_ceiling(series, environment)
    device = device_entry(environment, series.device)
    if kind == "xpu" and device.get(vendors.HOST_LINK) == vendors.UNIFIED:
        return None, "unknown: this Intel GPU is integrated and shares the host's memory, whose bandwidth xferbench has no figure for"
    if kind == "xpu":  # Level Zero's Sysman reads an Intel GPU's link; xferbench does not ask it
        return None, "unknown: xferbench reads no Intel GPU's PCIe link"
    known = pcie_ceiling(device, series.link)
    if known:
        return known
    if c2c.is_c2c(device):
        return None, c2c.unknown_ceiling(device)
    nvml = environment.get("nvml") or {}
    why = ("NVML gave no PCIe link" if device.get("nvml") else "amdsmi gave no PCIe link" if device.get("amdsmi")
           else device.get("amdsmi_reason") or nvml.get("reason") or "no NVML facts")  # fmt: skip
    return None, f"unknown: {why}"


UNIFIED = vendors.UNIFIED  # what an mps series' ceiling is labelled: no link lies between host and GPU


def unified_memory_ceiling(series: Series, environment: dict[str, Any]) -> tuple[float | None, str]:
    """An Apple GPU series' ceiling: an MPS copy stays within the memory the CPU and GPU share, so it is
    bounded by the chip's memory bandwidth as Apple publishes it (references.APPLE_BANDWIDTH), matched by
    the chip and GPU cores the environment read from macOS. Files from before those facts were recorded
    name the chip as their CPU (sysctl machdep.cpu.brand_string), which serves for the chips whose figure
    does not depend on the GPU."""
    device = device_entry(environment, series.device)
    chip = device.get("chip") or environment.get("cpu")
    row, why = bandwidth_for(chip, device.get("gpu_cores"))
    if row is None:
        return None, f"unknown: {UNIFIED} (no link between host and GPU); {why}"
    gpu = "" if row.gpu_cores is None else f", {'/'.join(map(str, row.gpu_cores))}-core GPU"
    return row.gbps, (f"{UNIFIED}: {row.chip}{gpu}, {row.kind} ({gbps_text(row.gbps)} GB/s, {row.date}, {row.source});"
                      " a copy reads and writes each byte, so it moves twice its MB/s through memory")  # fmt: skip


def is_raw_reference(series: Series) -> bool:
    return (series.framework, series.mode, series.op) in RAW_REFERENCES


def expected_raw_reference(device: dict[str, Any]) -> tuple[str, str, str]:
    """The raw reference a GPU's run would have: HIP's copy on an AMD GPU (PyTorch for ROCm names it cuda), else CUDA's."""
    return next(ref for ref in RAW_REFERENCES if ref[0] == "hip") if vendors.vendor(device) == vendors.AMD else RAW_REFERENCE


def raw_series(series: Series, siblings: Iterable[Series]) -> Series | None:
    """The raw pinned copy (cudaMemcpyAsync, or hipMemcpyAsync on an AMD GPU) that ran on the series' device in the same result file, if any:
    timed the same way (per call or streamed) where both ran."""
    found = [s for s in siblings if is_raw_reference(s) and s.device == series.device and s.direction == series.direction
             and s.concurrent == series.concurrent and s.status != "skipped"]  # fmt: skip
    return next((s for s in found if s.method == series.method), found[0] if found else None)


def raw_reference(series: Series, siblings: Iterable[Series]) -> Series | None:
    """The run's own ceiling for a series: its raw series, where that measured something."""
    found = raw_series(series, siblings)
    return found if found is not None and found.summary.peak_mbps else None


def fraction_of_link(series: Series, environment: dict[str, Any]) -> tuple[float | None, float | None]:
    """The series' peak MB/s over its link ceiling, and the ceiling in GB/s; None for what is unknown.
    A bidir series moves both ways at once over a full-duplex link: its ceiling is twice one direction's."""
    gbps, _ = link_ceiling(series, environment)
    if gbps and series.direction == BIDIR:
        gbps *= 2
    peak = series.summary.peak_mbps
    # Within unified memory a copy reads each byte and writes it again: its share of the memory's
    # bandwidth is twice its MB/s, where a PCIe transfer's share of the link is its MB/s
    traffic = 2 if series.device.split(":")[0] == "mps" and unified(environment) else 1
    return (traffic * peak / (gbps * 1e3) if peak and gbps else None), gbps


def unified(environment: dict[str, Any]) -> bool:
    """Whether the Mac's GPU shares the CPU's memory (Apple silicon), as its environment recorded;
    files from before that was recorded ran on Apple silicon, where MPS is used almost always."""
    return bool(device_entry(environment, "mps").get("unified_memory", True))


def fraction_of_raw(series: Series, siblings: Iterable[Series]) -> float | None:
    """The series' peak MB/s over the raw reference's peak, or None where no raw reference ran (or
    the series copies host to host, as torch pin does)."""
    if series.transfer == HOST_TO_HOST:
        return None
    reference = raw_reference(series, siblings)
    peak = series.summary.peak_mbps
    return peak / reference.summary.peak_mbps if reference and peak else None  # type: ignore[operator]
