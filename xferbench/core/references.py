"""Published host<->device copy figures per GPU model, each with its source, for `xferbench check`,
validation reports and docs/published-figures.md.

Three kinds of figure are kept apart because they mean different things: a health-check floor is
what an operator fails a GPU below; one user's measurement is what one machine read once (a cloud
vendor's published results for one VM among them); a vendor document is NVIDIA's own example output. Every figure is in GB/s (10^9 B/s), per direction, and
names where it was published, when, and when it was last read there. A model with no row here has
no published figure: say so rather than borrow another model's.

A fourth kind, Apple's published memory bandwidth per chip (APPLE_BANDWIDTH), is the ceiling of an
MPS copy: on Apple silicon the host and the GPU share one memory, so `.to('mps')` is a copy within
it and no link lies between them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xferbench.core.spec import D2H, H2D

FLOOR, MEASURED, VENDOR = "health-check floor", "one user's measurement", "vendor document"
KINDS = (FLOOR, MEASURED, VENDOR)

# How the copy was made. Only the first two are what a raw pinned copy measures.
CE, MEMCPY, SM, PAGEABLE = "copy engine, pinned", "pinned memcpy", "SM kernel, pinned", "pageable"
BOTH = "both"  # a floor applied to each direction alike
MIB = 1 << 20
SMALLEST_MEASURED = 16 * MIB  # below this, per-copy costs still show in the figure
READ = "read 2026-11-23"


@dataclass(frozen=True)
class Published:
    """One published figure: what was measured or required, on which GPU, how, when and where."""

    model: str  # the GPU as the source names it
    family: str  # a short name for lines: "H100", "A100 PCIe"
    matches: tuple[str, ...]  # word patterns; a GPU name matches when it holds every word of one
    excludes: tuple[str, ...]  # words that rule a name out
    kind: str  # FLOOR, MEASURED or VENDOR
    tool: str  # tool, version and mode
    copy: str  # CE, MEMCPY, SM or PAGEABLE
    size: str | None  # transfer size in words; None if the source does not give it
    size_bytes: int | None  # the size in bytes (a range's smallest); None if unknown
    direction: str  # "h2d", "d2h", or "both"
    low_gbps: float  # GB/s (10^9 B/s); a range's lowest
    high_gbps: float  # a range's highest (== low_gbps for one figure)
    date: str  # when the figure was published: YYYY-MM-DD, YYYY-MM or YYYY
    source: str  # where, precise enough to open it
    checked: str  # when it was last read at the source, and what that showed
    link: str | None = None  # the host link, where the source states it
    caveat: str | None = None  # why the figure is no healthy reference (None: a healthy figure)
    any_gpu: bool = False  # a floor one operator applies to every GPU model alike
    operator: str | None = None  # who applies a floor
    until: str | None = None  # the date a floor was replaced (None: in force when read)
    note: str | None = None  # context that does not disqualify the figure
    printed: str | None = None  # the figure as the source printed it, where its unit differs


def _azure(model: str, family: str, matches: tuple[str, ...], excludes: tuple[str, ...], floor: float,
           conf: str, date: str, set_by: str, until: str | None = None, caveat: str | None = None,
           gpu_copy: bool = False, at: str | None = None) -> Published:  # fmt: skip
    """An Azure HPC health-check floor: nvbandwidth copy-engine figures since 2023-12-22, the repository's
    own gpu-copy tool before (128 MiB pinned copies, the best NUMA node per GPU)."""
    if gpu_copy:
        tool, copy, size, size_bytes = "gpu-copy (the repository's own), --htod and --dtoh, best NUMA node", MEMCPY, "128 MiB", 128 * MIB
    else:
        tool = "nvbandwidth v0.4 host_to_device_memcpy_ce and device_to_host_memcpy_ce, -i 10, clocks locked"
        copy, size, size_bytes = CE, "64 MiB (nvbandwidth v0.4's default)", 64 * MIB
    at = at or ("@00687af" if gpu_copy else "@0e0a1ac")  # the last gpu-copy commit; the newest commit read
    return Published(model=model, family=family, matches=matches, excludes=excludes, kind=FLOOR, tool=tool, copy=copy,
                     size=size, size_bytes=size_bytes, direction=BOTH, low_gbps=floor, high_gbps=floor, date=date,
                     source=f"Azure/azurehpc-health-checks {conf} {at}", checked=f"{READ}; set by {set_by}",
                     caveat=caveat, operator="Azure HPC health checks", until=until,
                     note="below the floor fails (NHC2020); below 1.05 x the floor warns" if not gpu_copy else None)  # fmt: skip


H100_SXM = ("h100 hbm3", "h100 sxm5", "h100 sxm")
A100_SXM = ("a100 sxm4", "a100 sxm")
NVBW_6 = "https://github.com/NVIDIA/nvbandwidth/issues/6"
NVBW_11 = "https://github.com/NVIDIA/nvbandwidth/issues/11"
NVBW_15 = "https://github.com/NVIDIA/nvbandwidth/issues/15"
NVBW_23 = "https://github.com/NVIDIA/nvbandwidth/issues/23"
NVBW_24 = "https://github.com/NVIDIA/nvbandwidth/issues/24"
NVBW_42 = "https://github.com/NVIDIA/nvbandwidth/issues/42"
NVBW_53 = "https://github.com/NVIDIA/nvbandwidth/issues/53"
ROUTER_GAO = "router-gao/cuda-demo cuda-samples/02-cuda-bandwidth.md @dca1c6b"
SCARGALL = ("sscargal/stevescargall.com.v2 content/english/blog/2024/08/"
            "benchmarking-gpus-measuring-throughput-between-cpu-and-gpu/index.md @6b3bb6f")  # fmt: skip
OXIDE = "https://github.com/NVlabs/cuda-oxide/pull/976"
TINYGRAD = "https://github.com/tinygrad/open-gpu-kernel-modules/issues/29"
GEARSHIFFT = "https://github.com/mpicbg-scicomp/gearshifft/pull/82"
THREAD = f"{READ} (the thread's stored copy)"
NOT_SIZED = "not stated (nvbandwidth's default was 64 MiB before v0.7)"
QUICK = "bandwidthTest --memory=pinned, quick mode"
READ_AGAIN = "read 2026-11-28"
AZURE_H200 = "Azure/AI-benchmarking-guide Azure_Results/ND_H200_v5_results.md"
AZURE_H100 = "Azure/AI-benchmarking-guide Azure_Results/ND_H100_v5_results.md"
AZURE_FIRST = ("first published 2024-09-23 in the repository's Azure Results/NDv5 Results (149902d), moved to this file"
               " on 2024-09-24")  # fmt: skip
AZURE_SM = ("an SM copy kernel: the file names no test, and the repository's benchmark ran nvbandwidth's"
            " host_to_device_memcpy_sm and device_to_host_memcpy_sm until 2024-12-13 (Benchmarks/NVBandwidth.py)")  # fmt: skip
AZURE_RESULTS = "Microsoft Azure's published benchmark results for the VM, one VM's run"
AZURE_FORKS = ("in the repository's history as its forks egmsft/AI-benchmarking-guide (to 3371c0c, 2025-12-03) and"
               " samuel-bohman/AI-benchmarking-guide carry it; the stored copy of Azure/AI-benchmarking-guide itself ends at"
               " 2024-09-27")  # fmt: skip
AZURE_2025 = " (the benchmark's test then; the file says NV Bandwidth); CUDA 12.8, driver 570.133.20"
AZURE_H100_READ = (f"{READ_AGAIN} at ae0b6a7; {AZURE_FIRST}; unchanged at 3371c0c (2025-12-03) in the fork"
                   " egmsft/AI-benchmarking-guide")  # fmt: skip
AZURE_SIZE_2024 = "not stated (the benchmark clones nvbandwidth unpinned; its default was 64 MiB then)"
AZURE_SIZE_2025 = "not stated (the benchmark clones nvbandwidth unpinned; its default was 512 MiB then, from v0.7)"
KV_STAGING = "AshleshaMalla/kv_staging Report.md @7076cae"
OLD_MB = ("printed in MB/s by the 2017 bandwidthTest, whose MB is 1,024,000 B: GB/s = MB/s x 0.001024"
          " (/1000 would give 12.15, 12.89, 3.78, 2.54)")  # fmt: skip


def _measured(model: str, family: str, matches: tuple[str, ...], tool: str, copy: str, size: str | None,
              size_bytes: int | None, direction: str, low: float, high: float | None, date: str, source: str,
              checked: str = THREAD, excludes: tuple[str, ...] = (), **extra: str | None) -> Published:  # fmt: skip
    """One user's measurement (high None: a single figure)."""
    return Published(model=model, family=family, matches=matches, excludes=excludes, kind=MEASURED, tool=tool,
                     copy=copy, size=size, size_bytes=size_bytes, direction=direction, low_gbps=low,
                     high_gbps=low if high is None else high, date=date, source=source, checked=checked, **extra)  # type: ignore[arg-type]  # fmt: skip


PUBLISHED: tuple[Published, ...] = (
    # Health-check floors, model by model: Azure HPC health checks (conf/<VM size>.conf, check_gpu_bw).
    _azure("V100 SXM2 (Azure ND40rs_v2)", "V100 SXM2", ("v100 sxm2",), (), 9.0, "conf/nd40rs_v2.conf", "2025-11-13",
           "5f53bcc (2025-11-13), lowered from 10"),
    _azure("V100 SXM2 (Azure ND40rs_v2)", "V100 SXM2", ("v100 sxm2",), (), 10.0, "conf/nd40rs_v2.conf", "2024-01-04",
           "be926d7 (2024-01-04)", until="2025-11-13", caveat="replaced by 9 GB/s on 2025-11-13"),
    _azure("V100 PCIe (Azure NC6s/NC12s/NC24s/NC24rs_v3)", "V100 PCIe", ("v100 pcie",), (), 10.0,
           "conf/nc6s_v3.conf (also nc12s_v3, nc24s_v3, nc24rs_v3)", "2023-12-22", "4c3317b (2023-12-22)"),
    _azure("A100 PCIe (Azure NC24ads/NC48ads/NC96ads_A100_v4)", "A100 PCIe", ("a100 pcie",), (), 21.0,
           "conf/nc24ads_a100_v4.conf (also nc48ads, nc96ads)", "2024-06-28", "9897fbd (#118, 2024-06-28), lowered from 23"),
    _azure("A100 PCIe (Azure NC24ads/NC48ads/NC96ads_A100_v4)", "A100 PCIe", ("a100 pcie",), (), 23.0,
           "conf/nc24ads_a100_v4.conf (also nc48ads, nc96ads)", "2023-12-22", "4c3317b (2023-12-22)",
           until="2024-06-28", caveat="replaced by 21 GB/s on 2024-06-28"),
    _azure("A100 SXM4 40/80 GB (Azure ND96asr_v4, ND96amsr_A100_v4)", "A100 SXM4", A100_SXM, (), 21.0,
           "conf/nd96asr_v4.conf, conf/nd96amsr_a100_v4.conf", "2024-06-28", "9897fbd (#118, 2024-06-28), lowered from 23"),
    _azure("A100 SXM4 40/80 GB (Azure ND96asr_v4, ND96amsr_A100_v4)", "A100 SXM4", A100_SXM, (), 23.0,
           "conf/nd96asr_v4.conf, conf/nd96amsr_a100_v4.conf", "2023-12-22", "4c3317b (2023-12-22)",
           until="2024-06-28", caveat="replaced by 21 GB/s on 2024-06-28"),
    _azure("H100 NVL (Azure NC40ads/NC80adis_H100_v5)", "H100 NVL", ("h100 nvl",), (), 48.0,
           "conf/nc40ads_h100_v5.conf (also nc80adis_h100_v5)", "2024-06-28", "9897fbd (#118, 2024-06-28), lowered from 52"),
    _azure("H100 NVL (Azure NC40ads/NC80adis_H100_v5)", "H100 NVL", ("h100 nvl",), (), 52.0,
           "conf/nc40ads_h100_v5.conf (also nc80adis_h100_v5)", "2023-12-22", "4c3317b (2023-12-22)",
           until="2024-06-28", caveat="replaced by 48 GB/s on 2024-06-28"),
    _azure("H100 SXM5 (Azure ND96isr_H100_v5, ND96is_H100_v5)", "H100 SXM5", H100_SXM, ("pcie", "nvl"), 48.0,
           "conf/nd96isr_h100_v5.conf (also nd96is_h100_v5)", "2024-06-28", "9897fbd (#118, 2024-06-28), lowered from 52"),
    _azure("H100 SXM5 (Azure ND96isr_H100_v5, ND96is_H100_v5)", "H100 SXM5", H100_SXM, ("pcie", "nvl"), 52.0,
           "conf/nd96isr_h100_v5.conf (also nd96is_h100_v5)", "2023-12-22", "4c3317b (2023-12-22)",
           until="2024-06-28", caveat="replaced by 48 GB/s on 2024-06-28"),
    _azure("H200 SXM (Azure ND96isr/ND96is/ND96isrf_H200_v5)", "H200", ("h200",), ("nvl",), 48.0,
           "conf/nd96isr_h200_v5.conf (also nd96is, nd96isrf)", "2024-10-28", "3a32620 (#121, 2024-10-28)"),
    # Azure's floors before nvbandwidth: its own gpu-copy tool, replaced on 2023-12-22 (4c3317b).
    _azure("H100 SXM5 (Azure ND96isr_H100_v5)", "H100 SXM5", H100_SXM, ("pcie", "nvl"), 52.0, "conf/nd96isr_h100_v5.conf",
           "2023-05-16", "2e551e5 (2023-05-16); 0fd4269 (2023-06-16) restored it", until="2023-12-22",
           caveat="gpu-copy floor, replaced by nvbandwidth's on 2023-12-22", gpu_copy=True),
    _azure("H100 SXM5 (Azure ND96isr_H100_v5)", "H100 SXM5", H100_SXM, ("pcie", "nvl"), 50.0, "conf/nd96isr_h100_v5.conf",
           "2023-06-16", "b1a29b7 (2023-06-16), set back to 52 the same day by 0fd4269", until="2023-06-16",
           caveat="gpu-copy floor, in force for part of one day", gpu_copy=True, at="@b1a29b7"),
    _azure("H100 NVL (Azure NC40ads/NC80adis_H100_v5)", "H100 NVL", ("h100 nvl",), (), 52.0, "conf/nc40ads_h100_v5.conf",
           "2023-12-12", "15ecd0b (#53, 2023-12-12)", until="2023-12-22",
           caveat="gpu-copy floor, replaced by nvbandwidth's on 2023-12-22", gpu_copy=True),
    _azure("A100 SXM4 (Azure ND96asr_v4, ND96amsr_A100_v4)", "A100 SXM4", A100_SXM, (), 24.0,
           "conf/nd96asr_v4.conf, conf/nd96amsr_a100_v4.conf", "2023-05-03", "8d00fea (2023-05-03) in nd96asr_v4",
           until="2023-12-22", caveat="gpu-copy floor, replaced by nvbandwidth's on 2023-12-22", gpu_copy=True),
    _azure("A100 PCIe (Azure NC24ads/NC48ads/NC96ads_A100_v4)", "A100 PCIe", ("a100 pcie",), (), 24.0,
           "conf/nc24ads_a100_v4.conf", "2023-12-05", "5ce352f (#51, 2023-12-05)", until="2023-12-22",
           caveat="gpu-copy floor, replaced by nvbandwidth's on 2023-12-22", gpu_copy=True),
    _azure("V100 PCIe (Azure NC6s/NC12s/NC24s/NC24rs_v3)", "V100 PCIe", ("v100 pcie",), (), 10.0, "conf/nc6s_v3.conf",
           "2023-12-12", "6b04f60 (#52, 2023-12-12)", until="2023-12-22",
           caveat="gpu-copy floor, replaced by nvbandwidth's on 2023-12-22", gpu_copy=True),
    # Health-check floors one operator applies to every GPU.
    Published(model="any GPU (OCI BM.GPU.* shapes)", family="any GPU", matches=("",), excludes=(), kind=FLOOR,
              tool="cuda-samples bandwidthTest -htod and -dtoh (pinned by default), numactl to the GPU's NUMA node",
              copy=MEMCPY, size="32,000,000 B", size_bytes=32_000_000, direction=BOTH, low_gbps=52.0, high_gbps=52.0,
              date="2024-03-26", source="oracle-quickstart/oci-hpc playbooks/roles/healthchecks/files/gpu_bw_test.py @b5285a68",
              checked=f"{READ}; htod_threshold and dtoh_threshold 52.0 since eb84c37c (2024-03-26)",
              caveat="one floor for every shape, PCIe Gen4 ones included, which their link cannot reach",
              any_gpu=True, operator="OCI HPC health checks", note="runs only when asked for (--bw_test)"),
    Published(model="any GPU (IBM autopilot)", family="any GPU", matches=("",), excludes=(), kind=FLOOR,
              tool="bandwidthTest --htod --memory=pinned --csv", copy=MEMCPY,
              size="32,000,000 B (bandwidthTest's quick-mode default; no size is passed)", size_bytes=32_000_000,
              direction=H2D, low_gbps=4.0, high_gbps=4.0, date="2023-06-07",
              source="IBM/autopilot autopilot-daemon/gpu-bw/entrypoint.py, helm-charts/autopilot/values.yaml @09a177d",
              checked=f"{READ}; default '4' in entrypoint.py since e3fdbab (2023-06-07), PCIeBW: 4 in the chart",
              any_gpu=True, operator="IBM autopilot",
              note="labelled Gb/s but compared with bandwidthTest's GB/s; other defaults appear in its docs (8) and a script comment (7)"),
    Published(model="any GPU (DCGM diagnostics, sample production config)", family="any GPU", matches=("",), excludes=(),
              kind=FLOOR, tool="DCGM diag pcie plugin, h2d_d2h_single_pinned subtest, min_bandwidth", copy=MEMCPY,
              size=None, size_bytes=None, direction=BOTH, low_gbps=10.3, high_gbps=10.3, date="2021-02-03",
              source="NVIDIA/DCGM sdk_samples/dcgm_diag_configs/dcgm_diag_production_test.yml @72fa3fe (line 31)",
              checked=f"{READ}; present since the public repository's first commit 779120f (2021-02-03)",
              any_gpu=True, operator="NVIDIA DCGM (sample configuration)",
              note="DCGM's own default is 0.0, no floor (nvvs/plugin_src/pcie/Pcie.cpp)"),
    # One user's measurements.
    _measured("Tesla T4", "T4", ("t4",), QUICK, MEMCPY, "32,000,000 B", 32_000_000, H2D, 9.7, None, "2024-03-07", ROUTER_GAO,
              checked=f"{READ} at dca1c6b"),
    _measured("Tesla T4", "T4", ("t4",), QUICK, MEMCPY, "32,000,000 B", 32_000_000, D2H, 11.1, None, "2024-03-07", ROUTER_GAO,
              checked=f"{READ} at dca1c6b"),
    _measured("Tesla V100-SXM2-16GB", "V100 SXM2", ("v100 sxm2",), QUICK, MEMCPY, "32,000,000 B", 32_000_000, H2D, 9.6,
              None, "2024-03-07", ROUTER_GAO, checked=f"{READ} at dca1c6b",
              note="just above Azure's V100 SXM2 floor of 9, lowered from 10"),
    _measured("Tesla V100-SXM2-16GB", "V100 SXM2", ("v100 sxm2",), QUICK, MEMCPY, "32,000,000 B", 32_000_000, D2H, 11.4,
              None, "2024-03-07", ROUTER_GAO, checked=f"{READ} at dca1c6b"),
    _measured("NVIDIA A100-SXM4-40GB", "A100 SXM4", A100_SXM, QUICK, MEMCPY, "32,000,000 B", 32_000_000, H2D, 12.3, None,
              "2024-03-07", ROUTER_GAO, checked=f"{READ} at dca1c6b",
              caveat="an outlier: half what other A100s read, below Azure's floor of 21; the link is not stated"),
    _measured("NVIDIA A100-SXM4-40GB", "A100 SXM4", A100_SXM, QUICK, MEMCPY, "32,000,000 B", 32_000_000, D2H, 13.2, None,
              "2024-03-07", ROUTER_GAO, checked=f"{READ} at dca1c6b",
              caveat="an outlier: half what other A100s read, below Azure's floor of 21; the link is not stated"),
    _measured("NVIDIA A100-PCIE-40GB (Princeton Della)", "A100 PCIe", ("a100 pcie",),
              "bandwidthTest --memory=pinned --mode=range, 100 MB steps (CUDA 11.3 samples)", MEMCPY, "100 MB to 1 GB",
              100_000_000, H2D, 22.7, 26.2, "2021-05-03", "jdh4/della-gpu-A100 README.md @66ecd0d",
              checked=f"{READ} at 66ecd0d", note="22.7 at 100 MB, 26.2 from 200 to 500 MB, 25.9 at 1 GB"),
    _measured("NVIDIA A100-PCIE-40GB (Princeton Della)", "A100 PCIe", ("a100 pcie",),
              "bandwidthTest --memory=pinned --mode=range, 100 MB steps (CUDA 11.3 samples)", MEMCPY, "100 MB to 1 GB",
              100_000_000, D2H, 25.4, 26.3, "2021-05-03", "jdh4/della-gpu-A100 README.md @66ecd0d",
              checked=f"{READ} at 66ecd0d; 26.2 at 100 MB and 25.8 at 1 GB, 25.4 to 26.3 in between"),
    _measured("NVIDIA A100-PCIE-40GB (Princeton Della)", "A100 PCIe", ("a100 pcie",),
              "bandwidthTest --memory=pinned --mode=range, 1 MB steps (CUDA 11.3 samples)", MEMCPY, "1 MB to 10 MB",
              1_000_000, H2D, 17.7, 18.9, "2021-05-03", "jdh4/della-gpu-A100 README.md @4b00d9e",
              checked=f"{READ} at 4b00d9e", caveat="small sizes: per-copy costs still show"),
    _measured("NVIDIA A100-PCIE-40GB (Princeton Della)", "A100 PCIe", ("a100 pcie",),
              "bandwidthTest --memory=pinned --mode=range, 1 MB steps (CUDA 11.3 samples)", MEMCPY, "1 MB to 10 MB",
              1_000_000, D2H, 15.5, 26.0, "2021-05-03", "jdh4/della-gpu-A100 README.md @4b00d9e",
              checked=f"{READ} at 4b00d9e; the highest is 26.0 at 9 MB, not 25.9",
              caveat="small sizes: per-copy costs still show"),
    _measured("A100 (form factor not stated)", "A100", ("a100",), "nvbandwidth host_to_device_memcpy_ce", CE, NOT_SIZED,
              None, H2D, 25.0, 26.0, "2023-11-29", NVBW_11, link="PCIe", note="given as about 25 to 26, not per GPU"),
    _measured("A100 (form factor not stated)", "A100", ("a100",), "nvbandwidth device_to_host_memcpy_ce", CE, NOT_SIZED,
              None, D2H, 25.0, 26.0, "2023-11-29", NVBW_11, link="PCIe", note="given as about 25 to 26, not per GPU"),
    _measured("A100 (form factor not stated)", "A100", ("a100",), "nvbandwidth host_to_device_bidirectional_memcpy_ce", CE,
              NOT_SIZED, None, H2D, 12.0, 13.0, "2023-11-29", NVBW_11, link="PCIe",
              caveat="bidirectional: measured while a device-to-host copy ran"),
    _measured("A100 (form factor not stated)", "A100", ("a100",), "nvbandwidth device_to_host_bidirectional_memcpy_ce", CE,
              NOT_SIZED, None, D2H, 24.0, 24.0, "2023-11-29", NVBW_11, link="PCIe",
              caveat="bidirectional: measured while a host-to-device copy ran"),
    _measured("NVIDIA A100-SXM4-40GB", "A100 SXM4", A100_SXM, "nvbandwidth v0.8 host_to_device_memcpy_sm, -b 512 and -b 1024",
              SM, "512 MiB and 1 GiB", 512 * MIB, H2D, 25.13, None, "2025-07-05", NVBW_42,
              caveat="an SM copy kernel, not the copy engine"),
    _measured("NVIDIA A100-SXM4-40GB", "A100 SXM4", A100_SXM, "nvbandwidth v0.8 host_to_device_memcpy_sm, 10 and 20 GiB",
              SM, "10 GiB and 20 GiB", 10 * 1024 * MIB, H2D, 16.50, 18.05, "2025-07-05", NVBW_42,
              caveat="an SM copy kernel, and it slows at 10 GiB and more"),
    _measured("8x NVIDIA A100-SXM4-80GB", "A100 SXM4", A100_SXM, "nvbandwidth v0.8 host_to_device_bidirectional_memcpy_ce",
              CE, "not stated (v0.8's default is 512 MiB)", None, H2D, 11.0, None, "2025-11-21", NVBW_53,
              link="PCIe 4.0", caveat="bidirectional: measured while a device-to-host copy ran",
              note="about 11, from the report's title"),
    _measured("8x NVIDIA A100-SXM4-80GB", "A100 SXM4", A100_SXM, "nvbandwidth v0.8 device_to_host_bidirectional_memcpy_ce",
              CE, "not stated (v0.8's default is 512 MiB)", None, D2H, 25.0, None, "2025-11-21", NVBW_53,
              link="PCIe 4.0", caveat="bidirectional: measured while a host-to-device copy ran",
              note="about 25, from the report's title"),
    _measured("NVIDIA A10", "A10", ("a10",), "nvbandwidth v0.5 host_to_device_memcpy_ce", CE, "64 MiB (v0.5's default)",
              64 * MIB, H2D, 25.17, None, "2024-08-16", SCARGALL, checked=f"{READ} at 6b3bb6f", link="PCIe Gen4 x16"),
    _measured("NVIDIA A10", "A10", ("a10",), "nvbandwidth v0.5 host_to_device_memcpy_sm", SM, "64 MiB (v0.5's default)",
              64 * MIB, H2D, 25.25, None, "2024-08-16", SCARGALL, checked=f"{READ} at 6b3bb6f", link="PCIe Gen4 x16",
              caveat="an SM copy kernel, not the copy engine"),
    _measured("NVIDIA A10", "A10", ("a10",), "own cudaMemcpyAsync loop from pinned memory (-i 2000 -s 8 -w 5), 10 runs, "
              "numactl to the GPU's node", MEMCPY, None, None, H2D, 25.146469, 25.151405, "2024-08-16", SCARGALL,
              checked=f"{READ} at 6b3bb6f", link="PCIe Gen4 x16",
              note="the benchmark is drkennetz/cuda_examples 003_bandwidth_check as changed in its PR #1"),
    _measured("NVIDIA H100 (4-GPU VM, form factor not stated)", "H100", ("h100",), "nvbandwidth, host to device", CE,
              NOT_SIZED, None, H2D, 56.68, 57.07, "2023-07-11", NVBW_6, checked=f"{READ_AGAIN} (the thread's stored copy)",
              note="three of the VM's four GPUs: 57.06, 56.68 and 57.07; the post names no test, and nvbandwidth run"
                   " without arguments began with host_to_device_memcpy_ce"),
    _measured("NVIDIA H100 (4-GPU VM, form factor not stated)", "H100", ("h100",), "nvbandwidth, host to device", CE,
              NOT_SIZED, None, H2D, 14.2, None, "2023-07-11", NVBW_6, checked=f"{READ_AGAIN} (the thread's stored copy)",
              caveat="a faulty slot: one GPU of four, the other three read about 57"),
    _measured("NVIDIA H100 (8-GPU cluster)", "H100", ("h100",), "nvbandwidth host_to_device_memcpy_sm", SM, NOT_SIZED, None,
              H2D, 35.03, 35.39, "2024-09-11", NVBW_24, caveat="an SM copy kernel, not the copy engine",
              note="a commenter saw the same on H20 and H800"),
    _measured("NVIDIA H100 (8-GPU cluster)", "H100", ("h100",), "nvbandwidth device_to_host_memcpy_sm", SM, NOT_SIZED, None,
              D2H, 52.76, 52.78, "2024-09-11", NVBW_24, caveat="an SM copy kernel, not the copy engine"),
    # Microsoft Azure's published benchmark results, one VM size each (Azure/AI-benchmarking-guide).
    _measured("NVIDIA H100 80GB HBM3 (Azure ND H100 v5)", "H100 SXM5", H100_SXM,
              "nvbandwidth, host to device (the file's NV Bandwidth); CUDA 12.6, driver 560.35.03",
              SM, AZURE_SIZE_2024, None, H2D, 51.0, None, "2024-09-23",
              f"{AZURE_H100} @ae0b6a7", checked=AZURE_H100_READ,
              excludes=("pcie", "nvl"), link="PCIe", caveat=AZURE_SM,
              note=AZURE_RESULTS),
    _measured("NVIDIA H100 80GB HBM3 (Azure ND H100 v5)", "H100 SXM5", H100_SXM,
              "nvbandwidth, device to host (the file's NV Bandwidth); CUDA 12.6, driver 560.35.03",
              SM, AZURE_SIZE_2024, None, D2H, 52.0, None, "2024-09-23",
              f"{AZURE_H100} @ae0b6a7", checked=AZURE_H100_READ,
              excludes=("pcie", "nvl"), link="PCIe", caveat=AZURE_SM,
              note=AZURE_RESULTS),
    _measured("NVIDIA H100 NVL (4 per node, Texas Tech REPACSS)", "H100 NVL", ("h100 nvl",),
              "PyTorch: pinned tensor .to('cuda', non_blocking=True), then synchronize; median of 15; CUDA 12.9.1", MEMCPY,
              "a KV-cache file of 8,192 tokens or more, 128 KiB each (1 GiB or more)", 1024 * MIB, H2D, 55.3, None,
              "2026-09-15", KV_STAGING,
              checked=(f"{READ_AGAIN} at 7076cae, and config/measured_constants.yaml at cb4c159 (v2_h_to_gpu_us_per_token:"
                       " 2.38 µs/token, dated 2026-09-15, the measurement's own date; the commit's date was not read)"),
              link="PCIe Gen5 x16",
              note="given as 2.38 µs per 131,072-byte token, 'implied 55.3 GB/s' (2.38 as printed gives 55.07)",
              caveat="a rate implied from a per-token time, not a copy's measured rate; its own figures give 55.07"),
    _measured("NVIDIA H200 141GB (Azure ND H200 v5)", "H200", ("h200",),
              "nvbandwidth, host to device (the file's NV Bandwidth); CUDA 12.6, driver 560.28.03", SM,
              AZURE_SIZE_2024, None, H2D, 52.0, None, "2024-09-23",
              f"{AZURE_H200} @7f20e5f", checked=f"{READ_AGAIN} at 7f20e5f; {AZURE_FIRST}", excludes=("nvl",), link="PCIe",
              caveat=f"superseded by a later revision of the same file (55, 2025-07-07); {AZURE_SM}",
              note=f"{AZURE_RESULTS}; the file's 55.4 is a storage (FIO) read, not a copy"),
    _measured("NVIDIA H200 141GB (Azure ND H200 v5)", "H200", ("h200",),
              "nvbandwidth, device to host (the file's NV Bandwidth); CUDA 12.6, driver 560.28.03", SM,
              AZURE_SIZE_2024, None, D2H, 52.0, None, "2024-09-23",
              f"{AZURE_H200} @7f20e5f", checked=f"{READ_AGAIN} at 7f20e5f; {AZURE_FIRST}", excludes=("nvl",), link="PCIe",
              caveat=f"superseded by a later revision of the same file (55, 2025-07-07); {AZURE_SM}",
              note=AZURE_RESULTS),
    _measured("NVIDIA H200 141GB (Azure ND H200 v5)", "H200", ("h200",),
              f"nvbandwidth host_to_device_memcpy_ce{AZURE_2025}", CE,
              AZURE_SIZE_2025, None, H2D, 55.0, None, "2025-07-07",
              f"{AZURE_H200} @b408bf8",
              checked=f"{READ_AGAIN} at b408bf8 {AZURE_FORKS}; the figure is unchanged in the newest revision read (ae775aa, 2025-11-11)",
              excludes=("nvl",), link="PCIe",
              note=(f"{AZURE_RESULTS}; the benchmark ran nvbandwidth -t device_to_host_memcpy_ce"
                    " host_to_device_memcpy_ce device_to_device_bidirectional_memcpy_read_ce; the file's 55.4 is a storage"
                    " (FIO) read, not a copy")),
    _measured("NVIDIA H200 141GB (Azure ND H200 v5)", "H200", ("h200",),
              f"nvbandwidth device_to_host_memcpy_ce{AZURE_2025}", CE,
              AZURE_SIZE_2025, None, D2H, 55.0, None, "2025-07-07",
              f"{AZURE_H200} @b408bf8",
              checked=f"{READ_AGAIN} at b408bf8 {AZURE_FORKS}; the figure is unchanged in the newest revision read (ae775aa, 2025-11-11)",
              excludes=("nvl",), link="PCIe", note=AZURE_RESULTS),
    _measured("GH200 (480GB LPDDR5X + 96GB HBM3)", "GH200", ("gh200",), "nvbandwidth (given as v5.0), host to device", CE,
              "not stated", None, H2D, 346.0, None, "2024-08-23", NVBW_23, checked=f"{READ_AGAIN} (the thread's stored copy)",
              link="NVLink-C2C", note="the CPU-GPU link is NVLink-C2C, not PCIe; the poster finds host to device about 15% faster than "
                   "device to host, with no figure for the latter"),
    _measured("GH200 (480GB LPDDR5X + 96GB HBM3)", "GH200", ("gh200",), "nvbandwidth (given as v5.0), host to device", SM,
              "not stated", None, H2D, 342.0, None, "2024-08-23", NVBW_23, checked=f"{READ_AGAIN} (the thread's stored copy)",
              link="NVLink-C2C", caveat="an SM copy kernel, not the copy engine"),
    _measured("8x NVIDIA GeForce RTX 4090", "RTX 4090", ("rtx 4090",), "nvbandwidth v0.2 host_to_device_memcpy_ce", CE,
              "64 MiB (v0.2's default)", 64 * MIB, H2D, 23.90, 26.38, "2024-01-06", NVBW_15, excludes=("d",)),
    _measured("8x NVIDIA GeForce RTX 4090", "RTX 4090", ("rtx 4090",), "nvbandwidth v0.2 device_to_host_memcpy_ce", CE,
              "64 MiB (v0.2's default)", 64 * MIB, D2H, 26.25, 27.11, "2024-01-06", NVBW_15, excludes=("d",)),
    _measured("NVIDIA GeForce RTX 4090 (sm_89)", "RTX 4090", ("rtx 4090",),
              "cuda-oxide pinned_overlap example, median of 10 timed copies", MEMCPY, "16 MiB", 16 * MIB, H2D, 23.85, None,
              "2026-08-17", OXIDE, excludes=("d",), link="PCIe Gen4 x16"),
    _measured("NVIDIA GeForce RTX 4090 (sm_89)", "RTX 4090", ("rtx 4090",),
              "cuda-oxide pinned_overlap example, median of 10 timed copies", MEMCPY, "16 MiB", 16 * MIB, D2H, 26.55, None,
              "2026-08-17", OXIDE, excludes=("d",), link="PCIe Gen4 x16"),
    _measured("GeForce RTX 2080 Ti", "RTX 2080 Ti", ("rtx 2080 ti",),
              "bandwidthTest --mode=range --htod, pinned (CUDA 10.1 samples)", MEMCPY, "100,000,000 B", 100_000_000, H2D,
              13.1, None, "2020-12-08", "https://github.com/usadellab/Helixer/issues/22",
              note="the poster saw 7.1 to 13.1 across runs; the output shown reads 13.1"),
    _measured("8x NVIDIA GeForce RTX 5090 (Xeon 8458P host)", "RTX 5090", ("rtx 5090",),
              "nvbandwidth host_to_device_memcpy_ce", CE, "not stated", None, H2D, 56.30, 56.41, "2025-07-24", TINYGRAD,
              excludes=("d",), note="driver 570.148.08 from tinygrad's patched open kernel modules"),
    _measured("8x NVIDIA GeForce RTX 5090 (Xeon 8458P host)", "RTX 5090", ("rtx 5090",),
              "nvbandwidth device_to_host_memcpy_ce", CE, "not stated", None, D2H, 57.29, 57.35, "2025-07-24", TINYGRAD,
              excludes=("d",), note="driver 570.148.08 from tinygrad's patched open kernel modules"),
    _measured("Tesla P100-PCIE-16GB, local NUMA node", "P100 PCIe", ("p100 pcie",),
              "bandwidthTest quick mode, pinned, numactl -m0 -N0 (the GPU's node)", MEMCPY, "32 MiB", 32 * MIB, H2D,
              12.44, None, "2017-03-27", GEARSHIFFT, printed="12150.7 MB/s", note=OLD_MB),
    _measured("Tesla P100-PCIE-16GB, local NUMA node", "P100 PCIe", ("p100 pcie",),
              "bandwidthTest quick mode, pinned, numactl -m0 -N0 (the GPU's node)", MEMCPY, "32 MiB", 32 * MIB, D2H,
              13.20, None, "2017-03-27", GEARSHIFFT, printed="12890.6 MB/s", note=OLD_MB),
    _measured("Tesla P100-PCIE-16GB, remote NUMA node", "P100 PCIe", ("p100 pcie",),
              "bandwidthTest quick mode, pinned, numactl -m1 -N1 (the other socket)", MEMCPY, "32 MiB", 32 * MIB, H2D,
              3.87, None, "2017-03-27", GEARSHIFFT, printed="3783.4 MB/s", note=OLD_MB,
              caveat="a remote NUMA node: host memory on the other socket"),
    _measured("Tesla P100-PCIE-16GB, remote NUMA node", "P100 PCIe", ("p100 pcie",),
              "bandwidthTest quick mode, pinned, numactl -m1 -N1 (the other socket)", MEMCPY, "32 MiB", 32 * MIB, D2H,
              2.60, None, "2017-03-27", GEARSHIFFT, printed="2539.2 MB/s", note=OLD_MB,
              caveat="a remote NUMA node: host memory on the other socket"),
    # NVIDIA's own example output: the GPU is not named, so it matches no model.
    Published(model="not named (8 GPUs)", family="unnamed GPU", matches=(), excludes=(), kind=VENDOR,
              tool="nvbandwidth host_to_device_memcpy_ce (example output)", copy=CE, size=None, size_bytes=None,
              direction=H2D, low_gbps=25.94, high_gbps=26.19, date="2022-04-07",
              source="NVIDIA/nvbandwidth README.md @66746a3", checked=f"{READ}; unchanged since the first commit 258d384",
              caveat="example output of an unnamed GPU"),
    Published(model="not named (8 GPUs)", family="unnamed GPU", matches=(), excludes=(), kind=VENDOR,
              tool="nvbandwidth host_to_device_bidirectional_memcpy_ce (example output)", copy=CE, size=None,
              size_bytes=None, direction=H2D, low_gbps=18.37, high_gbps=19.59, date="2022-04-07",
              source="NVIDIA/nvbandwidth README.md @66746a3", checked=f"{READ}; unchanged since the first commit 258d384",
              caveat="example output of an unnamed GPU; bidirectional"),
)  # fmt: skip


def _words(text: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", text.lower()) if w}


def matches(row: Published, gpu_name: str) -> bool:
    """Whether a row speaks of this GPU: the name holds every word of one of the row's patterns and
    none of its excluded words. Whole words, so "H200" never matches "GH200" nor "A10" "A100"; an
    any-GPU floor (its pattern empty) matches every name."""
    words = _words(gpu_name)
    if words & {w.lower() for w in row.excludes}:
        return False
    return any(_words(pattern) <= words for pattern in row.matches)


def floor_for(gpu_name: str) -> Published | None:
    """The model-specific health-check floor in force for this GPU, host to device. Where several
    operators publish one, the lowest: a GPU is failed only below every operator's floor."""
    floors = [row for row in PUBLISHED if row.kind == FLOOR and not row.any_gpu and row.until is None
              and row.direction in (H2D, BOTH) and matches(row, gpu_name)]  # fmt: skip
    return min(floors, key=lambda row: row.low_gbps, default=None)


def measured_for(gpu_name: str, direction: str = H2D) -> list[Published]:
    """The healthy published measurements of this model in one direction: copy-engine or pinned
    memcpy figures with no caveat, at 16 MiB or more (or a size not stated)."""
    return [row for row in PUBLISHED if row.kind == MEASURED and row.copy in (CE, MEMCPY) and row.caveat is None
            and row.direction in (direction, BOTH) and (row.size_bytes is None or row.size_bytes >= SMALLEST_MEASURED)
            and matches(row, gpu_name)]  # fmt: skip


def gbps_text(value: float) -> str:
    """A figure as the sources give them: at most two decimals, no trailing zeros (48, 12.44, 25.15)."""
    return f"{value:.2f}".rstrip("0").rstrip(".")



def figure(row: Published) -> str:
    """A row's figure in GB/s as text: "48" or "56.68–57.07"."""
    low, high = gbps_text(row.low_gbps), gbps_text(row.high_gbps)
    return low if low == high else f"{low}–{high}"


_WAYS = {H2D: "host to device", D2H: "device to host", BOTH: "each way"}


def published_line(gpu_name: str, gbps: float | None, direction: str = H2D) -> str:
    """One line placing a measured figure among the healthy published ones for this model; gbps None
    gives the published range alone."""
    rows = measured_for(gpu_name, direction)
    here = "" if gbps is None else f"{gbps:.1f} GB/s here"
    if not rows:
        return f"{here}{'; ' if here else ''}no published {_WAYS[direction].replace(' ', '-')} figure for this model ({gpu_name})"
    low, high = min(r.low_gbps for r in rows), max(r.high_gbps for r in rows)
    families = " / ".join(dict.fromkeys(r.family for r in rows))
    sources = list(dict.fromkeys(r.source for r in rows))
    cited = f"1 source ({sources[0]})" if len(sources) == 1 else f"{len(sources)} sources"
    span = gbps_text(low) if gbps_text(low) == gbps_text(high) else f"{gbps_text(low)}–{gbps_text(high)}"
    if gbps is not None and round(gbps, 1) < low:
        here += ", below every published figure"
    elif gbps is not None and round(gbps, 1) > high:
        here += ", above every published figure"
    return f"{here}{'; ' if here else ''}published for {families}: {span} GB/s {_WAYS[direction]}, {cited}"


def floor_line(row: Published) -> str:
    """How a floor is cited: figure, operator and tool, source, date."""
    return f"{figure(row)} GB/s, {row.operator or 'health check'} ({row.tool}), {row.source}, {row.date}"


def _cell(text: str | None) -> str:
    return (text or "—").replace("|", "/")


def markdown_rows() -> list[str]:
    """Every table line of docs/published-figures.md, in the page's order: the host<->device table (a
    line per row of PUBLISHED), then Apple's memory bandwidth (bandwidth_rows)."""
    return gpu_rows() + bandwidth_rows()


def gpu_rows() -> list[str]:
    """The host<->device table, one line per row of PUBLISHED, in its order."""
    cell = _cell
    lines = ["| model | kind | tool and copy | size | direction | GB/s | date | source | caveat |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for row in PUBLISHED:
        shown = figure(row) + (f" (printed {row.printed})" if row.printed else "")
        caveat = row.caveat or ""
        if row.any_gpu:
            caveat = "applied to every GPU model" + (f"; {caveat}" if caveat else "")
        lines.append("| " + " | ".join(cell(c) for c in (
            row.model, row.kind, f"{row.tool}; {row.copy}", row.size, row.direction, shown, row.date, row.source,
            caveat or None)) + " |")  # fmt: skip
    return lines


# Apple's published memory bandwidth per chip: what an MPS copy, a copy within unified memory, is bounded by.
APPLE_KIND = "Apple's published memory bandwidth, theoretical"
APPLE_READ = "read 2026-11-26"
M1_PRO_MAX = "https://www.apple.com/newsroom/2021/10/introducing-m1-pro-and-m1-max-the-most-powerful-chips-apple-has-ever-built/"
M1_ULTRA = "https://www.apple.com/newsroom/2022/03/apple-unveils-m1-ultra-the-worlds-most-powerful-chip-for-a-personal-computer/"
M2 = "https://www.apple.com/newsroom/2022/06/apple-unveils-m2-with-breakthrough-performance-and-capabilities/"
M2_PRO_MAX = "https://www.apple.com/newsroom/2023/01/apple-unveils-m2-pro-and-m2-max-next-generation-chips-for-next-level-workflows/"
M2_ULTRA = "https://www.apple.com/newsroom/2023/06/apple-introduces-m2-ultra/"
M3_SPECS = ("Apple's tech specs of the 14- and 16-inch MacBook Pro with M3 Pro or M3 Max (November 2023), as quoted"
            " by https://www.macrumors.com/2023/10/31/apple-m3-pro-less-memory-bandwidth/")  # fmt: skip
M4_FAMILY = "https://www.apple.com/newsroom/2024/10/new-macbook-pro-features-m4-family-of-chips-and-apple-intelligence/"
M4_PRO_MAX = "https://www.apple.com/newsroom/2024/10/apple-introduces-m4-pro-and-m4-max/"
M5 = "https://www.apple.com/newsroom/2025/10/apple-unleashes-m5-the-next-big-leap-in-ai-performance-for-apple-silicon/"


def _reported(*urls: str) -> str:
    """How a press release was read: apple.com itself could not be opened from where the table was made,
    so through reports of it published the same day, which quote the figure."""
    return f"{APPLE_READ} in reports of the release that quote the figure: {', '.join(urls)}"


@dataclass(frozen=True)
class ChipBandwidth:
    """Apple's published memory bandwidth of one Apple silicon chip, and where Apple published it."""

    chip: str  # as macOS names it (sysctl machdep.cpu.brand_string): "Apple M1 Pro"
    gpu_cores: tuple[int, ...] | None  # the GPU configurations the figure is for; None: every one of the chip's
    gbps: float  # GB/s (10^9 B/s)
    printed: str  # the figure as Apple printed it
    date: str  # when Apple published it: YYYY-MM-DD
    source: str  # where
    checked: str  # when it was last read, and how
    kind: str = APPLE_KIND
    note: str | None = None


APPLE_BANDWIDTH: tuple[ChipBandwidth, ...] = (
    ChipBandwidth("Apple M1 Pro", None, 200.0, "up to 200GB/s", "2021-10-18", M1_PRO_MAX,
                  _reported("https://mybroadband.co.za/news/hardware/418862-apple-m1-pro-and-m1-max-new-chips-powering-the-macbook-pro.html",
                            "https://9to5mac.com/2021/10/18/apple-unveils-next-generation-m1-pro-and-m1-max-chips-for-new-macs/")),
    ChipBandwidth("Apple M1 Max", None, 400.0, "up to 400GB/s", "2021-10-18", M1_PRO_MAX,
                  _reported("https://mybroadband.co.za/news/hardware/418862-apple-m1-pro-and-m1-max-new-chips-powering-the-macbook-pro.html",
                            "https://9to5mac.com/2021/10/18/apple-unveils-next-generation-m1-pro-and-m1-max-chips-for-new-macs/")),
    ChipBandwidth("Apple M1 Ultra", None, 800.0, "up to 800GB/s", "2022-03-08", M1_ULTRA,
                  _reported("https://www.trustedreviews.com/news/apple-m1-ultra-chip-release-date-specs-design-performance-benchmarks-4215398")),
    ChipBandwidth("Apple M2", None, 100.0, "100GB/s", "2022-06-06", M2,
                  _reported("https://www.macrumors.com/2022/06/06/apple-announces-m2-chip-with-support-for-up-to-24gb-memory/")),
    ChipBandwidth("Apple M2 Pro", None, 200.0, "200GB/s", "2023-01-17", M2_PRO_MAX,
                  _reported("https://www.moneycontrol.com/news/technology/apple-m2-pro-m2-max-chips-announced-for-next-generation-of-macs-9883741.html/amp",
                            "https://www.macrumors.com/2023/01/18/things-to-know-about-m2-pro-m2-max/")),
    ChipBandwidth("Apple M2 Max", None, 400.0, "400GB/s", "2023-01-17", M2_PRO_MAX,
                  _reported("https://www.macrumors.com/2023/01/18/things-to-know-about-m2-pro-m2-max/",
                            "https://www.macrumors.com/2023/10/31/apple-m3-pro-less-memory-bandwidth/"),
                  note="the 30- and 38-core GPU configurations alike"),
    ChipBandwidth("Apple M2 Ultra", None, 800.0, "800GB/s", "2023-06-05", M2_ULTRA,
                  f"{APPLE_READ} at Apple's own copy, https://www.apple.com/sa/newsroom/2023/06/apple-introduces-m2-ultra"),
    ChipBandwidth("Apple M3 Pro", None, 150.0, "150GB/s", "2023-10-30", M3_SPECS, f"{APPLE_READ} in the report named",
                  note="25% less than M1 Pro and M2 Pro"),
    ChipBandwidth("Apple M3 Max", (30,), 300.0, "300GB/s", "2023-10-30", M3_SPECS, f"{APPLE_READ} in the report named",
                  note="the 14-core CPU, 30-core GPU configuration"),
    ChipBandwidth("Apple M3 Max", (40,), 400.0, "400GB/s", "2023-10-30", M3_SPECS, f"{APPLE_READ} in the report named",
                  note="the 16-core CPU, 40-core GPU configuration"),
    ChipBandwidth("Apple M4", None, 120.0, "120GB/s", "2024-10-30", M4_FAMILY,
                  _reported("https://www.howtogeek.com/apple-m4-pro-m4-max-reveal/",
                            "https://www.neowin.net/news/apple-launches-new-m4-pro-and-m4-max-processors/")),
    ChipBandwidth("Apple M4 Pro", None, 273.0, "273GB/s", "2024-10-30", M4_PRO_MAX,
                  _reported("https://www.neowin.net/news/apple-launches-new-m4-pro-and-m4-max-processors/",
                            "https://www.howtogeek.com/apple-m4-pro-m4-max-reveal/")),
    ChipBandwidth("Apple M4 Max", (40,), 546.0, "up to 546GB/s", "2024-10-30", M4_PRO_MAX,
                  _reported("https://www.macrumors.com/2024/10/30/apple-announces-m4-max-chip/",
                            "https://www.neowin.net/news/apple-launches-new-m4-pro-and-m4-max-processors/"),
                  note="the 16-core CPU, 40-core GPU configuration; the sources read give no figure for the 32-core GPU one"),
    ChipBandwidth("Apple M5", None, 153.0, "153GB/s", "2025-10-15", M5,
                  _reported("https://www.macobserver.com/news/apples-new-m5-chip-lands-with-4x-ai-gpu-boost-faster-neural-engine-and-higher-memory-bandwidth/")),
)  # fmt: skip


def bandwidth_for(chip: str | None, gpu_cores: int | None = None) -> tuple[ChipBandwidth | None, str]:
    """Apple's published memory bandwidth for this chip (and GPU, where the figure depends on its core
    count), or None and why there is none. The chip is matched by its whole name, so "Apple M2" never
    takes "Apple M2 Pro"'s figure."""
    if not chip:
        return None, "the chip is not recorded"
    name = " ".join(chip.split()).lower()
    rows = [row for row in APPLE_BANDWIDTH if row.chip.lower() == name]
    if not rows:
        return None, f"Apple publishes no memory bandwidth for the {chip} in the figures xferbench keeps (docs/published-figures.md)"
    fits = [row for row in rows if row.gpu_cores is None or gpu_cores in row.gpu_cores]
    if fits:
        return fits[0], ""
    known = " and ".join(f"{'/'.join(map(str, row.gpu_cores or ()))}-core GPU" for row in rows)
    if gpu_cores is None:
        return None, f"the {chip}'s figure depends on its GPU ({known} published) and the GPU core count is not recorded"
    return None, f"Apple publishes the {chip}'s figure for the {known} only, not for this {gpu_cores}-core GPU"


def bandwidth_rows() -> list[str]:
    """The table of Apple's memory bandwidth, one line per row of APPLE_BANDWIDTH, in its order."""
    lines = ["| chip | GPU | kind | GB/s | printed | date | source | read | note |", "|---|---|---|---|---|---|---|---|---|"]
    for row in APPLE_BANDWIDTH:
        gpu = "every configuration" if row.gpu_cores is None else " or ".join(f"{n}-core" for n in row.gpu_cores)
        lines.append("| " + " | ".join(_cell(c) for c in (
            row.chip, gpu, row.kind, gbps_text(row.gbps), row.printed, row.date, row.source, row.checked, row.note)) + " |")  # fmt: skip
    return lines


# AMD Instinct GPUs, measured with AMD's own tools (TransferBench, rocm_bandwidth_test): a block of their own,
# joined to PUBLISHED after NVIDIA's rows, in the order the docs table shows them.
NOT_STATED = "not stated"  # a copy whose path (DMA engine, GPU kernel or CPU threads) the source does not give
AZURE_MI300X = "samuel-bohman/AI-benchmarking-guide Azure_Results/ND_MI300X_v5_results.md"
AZURE_MI300X_READ = (f"{READ_AGAIN} at bf209ab (2025-03-27), the newest revision of the file in the fork (whose newest commit read"
                     " is 2b25b69, 2025-07-21); unchanged since d3ab2bf (2025-01-23, then Azure_Results/AMD_MI300X_results.md),"
                     " which replaced 29 host to device and 55 device to host posted the same day (7756ae6)")  # fmt: skip
AZURE_MI300X_COPY = ("the copy is not stated: the file names no test; when the figures were posted the repository's benchmark"
                     " ran `TransferBench p2p` (Benchmarks/AMD/TransferBench.py), whose defaults copy host to device with CPU"
                     " threads and device to host with a GPU kernel; on 2025-01-28 it changed to transferbench.cfg's"
                     " '1 32 (C0 G0 G0)' and '1 32 (G0 G0 C0)', GPU-kernel copies on 32 CUs")  # fmt: skip
AZURE_MI300X_TOOL = "TransferBench (the file's TransferBench table); ROCm 6.8.5 and HIP 6.2.41134 as the file gives them"
RBT_129 = "https://github.com/ROCm/rocm_bandwidth_test/issues/129"

AMD_PUBLISHED: tuple[Published, ...] = (
    _measured("AMD Instinct MI300X (Azure ND MI300X v5, Xeon Platinum 8480C host)", "MI300X", ("mi300x",), AZURE_MI300X_TOOL,
              NOT_STATED, "not stated", None, H2D, 55.0, None, "2025-01-23", f"{AZURE_MI300X} @bf209ab", checked=AZURE_MI300X_READ,
              caveat=AZURE_MI300X_COPY, note=f"{AZURE_RESULTS}; 'Host to Device | 55' in the column 'ND MI300X v5 (GB/s)'"),
    _measured("AMD Instinct MI300X (Azure ND MI300X v5, Xeon Platinum 8480C host)", "MI300X", ("mi300x",), AZURE_MI300X_TOOL,
              NOT_STATED, "not stated", None, D2H, 56.0, None, "2025-01-23", f"{AZURE_MI300X} @bf209ab", checked=AZURE_MI300X_READ,
              caveat=AZURE_MI300X_COPY, note=f"{AZURE_RESULTS}; 'Device to Host | 56' in the column 'ND MI300X v5 (GB/s)'"),
    _measured("AMD Instinct MI210 (eight in the device list, two EPYC 9554)", "MI210", ("mi210",),
              "rocm-bandwidth-test v2.6.0, plain run (rocm_bandwidth -a + rocm_bandwidth -A), unidirectional peak", CE,
              "64 MiB (the plain run's size)", 64 * MIB, BOTH, 28.0, None, "2025-08-19", RBT_129,
              checked=f"{READ_AGAIN} (the thread's stored copy: the opening post's summary; its pasted matrices were not read)",
              link="PCIe Gen4 x16 (as the poster reads the figure)",
              caveat="the poster's rounded summary ('~28 GB/s (uni)'), not a cell of the pasted matrices, which were not read",
              note=("the poster's summary, '~28 GB/s (uni), ~45 GB/s (bi)', host to device and device to host alike from either"
                    " NUMA node to any GPU; hsa_amd_memory_async_copy on the SDMA copy engine, by default the fastest of 5 copies; the post says 10x MI210,"
                    " its device list shows eight")),
)  # fmt: skip
PUBLISHED = PUBLISHED + AMD_PUBLISHED


__all__ = ["APPLE_BANDWIDTH", "APPLE_KIND", "BOTH", "CE", "FLOOR", "KINDS", "MEASURED", "MEMCPY", "PAGEABLE", "PUBLISHED",
           "SM", "VENDOR", "ChipBandwidth", "Published", "bandwidth_for", "bandwidth_rows", "figure", "floor_for",
           "floor_line", "gbps_text", "gpu_rows", "markdown_rows", "matches", "measured_for", "published_line", "read_sentence"]  # fmt: skip

READ_ON = re.compile(r"^read ([0-9]{4}-[0-9]{2}-[0-9]{2})\b")  # how every row's `checked` starts
THREAD_URL = re.compile(r"^https://github\.com/([^/]+/[^/]+)/(?:issues|pull)/([0-9]+)")


def _read_on(checked: str) -> str:
    found = READ_ON.match(checked)
    if found is None:
        raise ValueError(f"a row's 'checked' must start with 'read YYYY-MM-DD': {checked!r}")
    return found.group(1)


def _short(source: str) -> str:
    """A source as the sentence on reading dates names it: a thread as owner/repo#N, a file by its repository."""
    thread = THREAD_URL.match(source)
    return f"{thread.group(1)}#{thread.group(2)}" if thread else source.split()[0]


def read_sentence() -> str:
    """docs/published-figures.md's sentence on when the sources were read, from every row's `checked`: the date most
    rows were read on, then each other date with the sources read on it (and their models), then Apple's."""
    by_date: dict[str, dict[str, list[str]]] = {}
    for row in PUBLISHED:
        families = by_date.setdefault(_read_on(row.checked), {}).setdefault(_short(row.source), [])
        if row.family not in families:
            families.append(row.family)
    most = max(by_date, key=lambda date: sum(len(v) for v in by_date[date].values()))
    parts = [f"The host↔device sources were read on {most}"]
    for date in sorted(set(by_date) - {most}):
        named = [f"{source} ({', '.join(families)})" for source, families in by_date[date].items()]
        parts.append(f"those of {', '.join(named[:-1])}{' and ' if len(named) > 1 else ''}{named[-1]} on {date}")
    apple = sorted({_read_on(row.checked) for row in APPLE_BANDWIDTH})
    return "; ".join(parts) + f"; Apple's memory bandwidth figures on {' and '.join(apple)}."


if __name__ == "__main__":
    print("\n".join(gpu_rows()) + "\n\n" + "\n".join(bandwidth_rows()) + "\n\n" + read_sentence())
