"""The rules of xferbench.core.references one by one, each with its exact text: how an Azure floor and one
user's measurement are built, how a figure and a table cell are written, how a floor is cited, how a measured
figure is placed among the published ones, and which of Apple's memory bandwidth figures a chip gets."""

from __future__ import annotations

import dataclasses

import pytest

from xferbench.core import references
from xferbench.core.references import (
    APPLE_BANDWIDTH, APPLE_KIND, BOTH, CE, FLOOR, MEASURED, MEMCPY, PUBLISHED, ChipBandwidth, Published, bandwidth_for,
    bandwidth_rows, floor_for, floor_line, gbps_text, published_line,
)  # fmt: skip

MIB = 1 << 20
H100_SXM5 = "NVIDIA H100 80GB HBM3"
RTX_5090 = "NVIDIA GeForce RTX 5090"  # one published figure, 56.30-56.41, host to device
A100_PCIE = "NVIDIA A100-PCIE-40GB"  # two families' figures, 22.7-26.2, host to device
NVBW_TOOL = "nvbandwidth v0.4 host_to_device_memcpy_ce and device_to_host_memcpy_ce, -i 10, clocks locked"
GPU_COPY_TOOL = "gpu-copy (the repository's own), --htod and --dtoh, best NUMA node"
NHC_NOTE = "below the floor fails (NHC2020); below 1.05 x the floor warns"
RTX_5090_RANGE = f"published for RTX 5090: 56.3–56.41 GB/s host to device, 1 source ({references.TINYGRAD})"
A100_PCIE_RANGE = "published for A100 PCIe / A100: 22.7–26.2 GB/s host to device, 2 sources"


def _chip(chip: str, gpu_cores: tuple[int, ...] | None, gbps: float, note: str | None = None) -> ChipBandwidth:
    """A made-up row of Apple's table."""
    return ChipBandwidth(chip, gpu_cores, gbps, f"{gbps:g}GB/s", "2030-01-01", "https://example.com/x", "read 2030-01-02", note=note)


def test_an_azure_nvbandwidth_floor_is_a_64_mib_copy_engine_figure_with_the_nhc_note() -> None:
    """An Azure floor after 2023-12-22 is nvbandwidth's copy-engine figure at its 64 MiB default, and warns within 5%."""
    row = references._azure("Zeta 9 (Azure ZD9)", "Zeta 9", ("zeta 9",), ("nvl",), 33.0, "conf/zd9.conf", "2025-01-02",
                            "abc1234 (2025-01-02)")  # fmt: skip
    assert row == Published(
        model="Zeta 9 (Azure ZD9)", family="Zeta 9", matches=("zeta 9",), excludes=("nvl",), kind=FLOOR, tool=NVBW_TOOL, copy=CE,
        size="64 MiB (nvbandwidth v0.4's default)", size_bytes=64 * MIB, direction=BOTH, low_gbps=33.0, high_gbps=33.0,
        date="2025-01-02", source="Azure/azurehpc-health-checks conf/zd9.conf @0e0a1ac",
        checked="read 2026-11-23; set by abc1234 (2025-01-02)", caveat=None, operator="Azure HPC health checks", until=None,
        note=NHC_NOTE)  # fmt: skip
    assert row.size_bytes == 67_108_864


def test_an_azure_gpu_copy_floor_is_a_128_mib_pinned_memcpy_figure_with_no_note() -> None:
    """An Azure floor before nvbandwidth is the repository's gpu-copy tool at 128 MiB, cited at its last commit, with no note."""
    row = references._azure("Zeta 9 (Azure ZD9)", "Zeta 9", ("zeta 9",), (), 35.0, "conf/zd9.conf", "2023-05-16", "def5678",
                            until="2023-12-22", caveat="gpu-copy floor", gpu_copy=True)  # fmt: skip
    assert row == Published(
        model="Zeta 9 (Azure ZD9)", family="Zeta 9", matches=("zeta 9",), excludes=(), kind=FLOOR, tool=GPU_COPY_TOOL,
        copy=MEMCPY, size="128 MiB", size_bytes=128 * MIB, direction=BOTH, low_gbps=35.0, high_gbps=35.0, date="2023-05-16",
        source="Azure/azurehpc-health-checks conf/zd9.conf @00687af", checked="read 2026-11-23; set by def5678",
        caveat="gpu-copy floor", operator="Azure HPC health checks", until="2023-12-22", note=None)  # fmt: skip
    assert row.size_bytes == 134_217_728
    pinned = references._azure("M", "F", ("m",), (), 1.0, "conf/m.conf", "2023", "x", gpu_copy=True, at="@b1a29b7")
    assert pinned.source == "Azure/azurehpc-health-checks conf/m.conf @b1a29b7" and pinned.note is None


def test_every_azure_row_of_the_table_is_one_of_the_two_tools_with_its_size_and_note() -> None:
    """Azure's real rows: nvbandwidth ones carry 64 MiB and the NHC note, gpu-copy ones 128 MiB and none."""
    azure = [r for r in PUBLISHED if r.operator == "Azure HPC health checks"]
    kinds = {(r.tool, r.copy, r.size, r.size_bytes, r.note) for r in azure}
    assert kinds == {(NVBW_TOOL, CE, "64 MiB (nvbandwidth v0.4's default)", 64 * MIB, NHC_NOTE),
                     (GPU_COPY_TOOL, MEMCPY, "128 MiB", 128 * MIB, None)}  # fmt: skip
    gpu_copy = [r for r in azure if r.tool == GPU_COPY_TOOL]
    assert {r.family for r in gpu_copy} == {"H100 SXM5", "H100 NVL", "A100 SXM4", "A100 PCIe", "V100 PCIe"}
    assert [r.family for r in azure if r.low_gbps == 9.0] == ["V100 SXM2"]
    assert {r.family for r in azure if r.tool == NVBW_TOOL} == {"V100 SXM2", "V100 PCIe", "A100 PCIe", "A100 SXM4", "H100 NVL",
                                                                "H100 SXM5", "H200"}  # fmt: skip


def test_one_users_measurement_keeps_its_size_in_bytes_and_a_single_figure_is_its_own_high() -> None:
    """_measured passes every field on, size_bytes included; high None is the low figure."""
    row = references._measured("Zeta 9", "Z9", ("zeta 9",), "tool x", CE, "48 MiB", 48 * MIB, "h2d", 20.5, None, "2025",
                               "example/source", link="PCIe")  # fmt: skip
    assert row == Published(model="Zeta 9", family="Z9", matches=("zeta 9",), excludes=(), kind=MEASURED, tool="tool x", copy=CE,
                            size="48 MiB", size_bytes=48 * MIB, direction="h2d", low_gbps=20.5, high_gbps=20.5, date="2025",
                            source="example/source", checked="read 2026-11-23 (the thread's stored copy)", link="PCIe")  # fmt: skip
    a10 = [r for r in PUBLISHED if r.family == "A10" and r.copy == CE]
    assert [(r.size, r.size_bytes) for r in a10] == [("64 MiB (v0.5's default)", 67_108_864)]
    della = [r.size_bytes for r in PUBLISHED if r.model == "NVIDIA A100-PCIE-40GB (Princeton Della)"]
    assert della == [100_000_000, 100_000_000, 1_000_000, 1_000_000]


def test_a_table_cell_writes_a_bar_as_a_slash_and_nothing_as_a_dash() -> None:
    """A cell never breaks the markdown table: '|' becomes '/', and an empty or missing text shows '—'."""
    assert references._cell("a|b|c") == "a/b/c"
    assert references._cell(None) == "—"
    assert references._cell("") == "—"
    assert references._cell("plain text") == "plain text"


def test_a_figure_is_written_with_at_most_two_decimals_and_no_trailing_zeros() -> None:
    """gbps_text strips trailing zeros and then a bare dot."""
    assert gbps_text(55.0) == "55"
    assert gbps_text(55.4) == "55.4"
    assert gbps_text(55.25) == "55.25"
    assert gbps_text(50.0) == "50"
    assert gbps_text(100.0) == "100"
    assert gbps_text(12.444) == "12.44"
    assert gbps_text(25.146469) == "25.15"


def test_a_floor_without_an_operator_is_cited_as_a_health_check() -> None:
    """floor_line names the operator, or 'health check' where the row has none."""
    floor = floor_for(H100_SXM5)
    assert floor is not None
    tail = (" (nvbandwidth v0.4 host_to_device_memcpy_ce and device_to_host_memcpy_ce, -i 10, clocks locked), "
            "Azure/azurehpc-health-checks conf/nd96isr_h100_v5.conf (also nd96is_h100_v5) @0e0a1ac, 2024-06-28")  # fmt: skip
    assert floor_line(floor) == "48 GB/s, Azure HPC health checks" + tail
    assert floor_line(dataclasses.replace(floor, operator=None)) == "48 GB/s, health check" + tail


def test_the_published_range_names_every_family_it_draws_on_joined_by_a_slash() -> None:
    """A100 PCIe picks up the PCIe board's figures and the form-factor-less A100's: both families are named."""
    assert published_line(A100_PCIE, None) == A100_PCIE_RANGE
    assert published_line(RTX_5090, None) == RTX_5090_RANGE


def test_a_range_whose_ends_write_alike_is_one_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    """The span is 'low–high' unless both ends write as the same text, then the one figure."""
    assert published_line("NVIDIA GH200 480GB", None) == f"published for GH200: 346 GB/s host to device, 1 source ({references.NVBW_23})"
    loop = [r for r in PUBLISHED if r.family == "A10" and r.low_gbps == 25.146469]
    assert len(loop) == 1 and loop[0].high_gbps == 25.151405
    monkeypatch.setattr(references, "PUBLISHED", tuple(loop))
    source = loop[0].source
    assert published_line("NVIDIA A10", None) == f"published for A10: 25.15 GB/s host to device, 1 source ({source})"


def test_the_direction_asked_for_picks_that_directions_figures() -> None:
    """published_line reads the figures of the direction it is given, and names that direction."""
    d2h = "published for RTX 4090: 26.25–27.11 GB/s device to host, 2 sources"
    h2d = "published for RTX 4090: 23.85–26.38 GB/s host to device, 2 sources"
    assert published_line("NVIDIA GeForce RTX 4090", 25.0, "d2h") == f"25.0 GB/s here, below every published figure; {d2h}"
    assert published_line("NVIDIA GeForce RTX 4090", 25.0, "h2d") == f"25.0 GB/s here; {h2d}"
    assert published_line("NVIDIA GeForce RTX 4090", 27.0, "d2h") == f"27.0 GB/s here; {d2h}"
    assert published_line("NVIDIA GeForce RTX 4090", 27.0) == f"27.0 GB/s here, above every published figure; {h2d}"
    assert published_line("NVIDIA L4", None, "d2h") == "no published device-to-host figure for this model (NVIDIA L4)"


def test_a_measured_figure_is_below_only_when_its_one_decimal_rounding_is_under_the_lowest() -> None:
    """Rounded to one decimal, a figure at the lowest published one is not below it; strictly under is."""
    below = "below every published figure; "
    assert published_line(RTX_5090, 56.3) == f"56.3 GB/s here; {RTX_5090_RANGE}"
    assert published_line(RTX_5090, 56.34) == f"56.3 GB/s here; {RTX_5090_RANGE}"  # 56 whole, below
    assert published_line(RTX_5090, 56.26) == f"56.3 GB/s here; {RTX_5090_RANGE}"  # 56.26 to two decimals, below
    assert published_line(RTX_5090, 56.24) == f"56.2 GB/s here, {below}{RTX_5090_RANGE}"
    assert published_line(A100_PCIE, 22.7) == f"22.7 GB/s here; {A100_PCIE_RANGE}"
    assert published_line(A100_PCIE, 22.66) == f"22.7 GB/s here; {A100_PCIE_RANGE}"
    assert published_line(A100_PCIE, 22.64) == f"22.6 GB/s here, {below}{A100_PCIE_RANGE}"


def test_a_measured_figure_is_above_only_when_its_one_decimal_rounding_is_over_the_highest() -> None:
    """Rounded to one decimal, a figure at the highest published one is not above it; strictly over is."""
    above = ", above every published figure; "
    assert published_line(A100_PCIE, 26.2) == f"26.2 GB/s here; {A100_PCIE_RANGE}"
    assert published_line(A100_PCIE, 26.24) == f"26.2 GB/s here; {A100_PCIE_RANGE}"  # 26.24 to two decimals, above
    assert published_line(A100_PCIE, 26.26) == f"26.3 GB/s here{above}{A100_PCIE_RANGE}"  # 26 whole, not above
    assert published_line(RTX_5090, 56.44) == f"56.4 GB/s here; {RTX_5090_RANGE}"  # 56.44 to two decimals, above
    assert published_line(RTX_5090, 56.46) == f"56.5 GB/s here{above}{RTX_5090_RANGE}"  # 56 whole, not above
    assert published_line(RTX_5090, 56.41) == f"56.4 GB/s here; {RTX_5090_RANGE}"


def test_a_chip_not_recorded_gets_no_figure() -> None:
    """No chip name, or an empty one: no figure, and the reason."""
    assert bandwidth_for(None) == (None, "the chip is not recorded")
    assert bandwidth_for("") == (None, "the chip is not recorded")
    assert bandwidth_for(None, 30) == (None, "the chip is not recorded")


def test_a_chip_name_matches_whatever_its_spacing_and_case() -> None:
    """The name is compared with runs of spaces made one and in lower case."""
    m2_pro = next(r for r in APPLE_BANDWIDTH if r.chip == "Apple M2 Pro")
    assert bandwidth_for("  apple \t M2   PRO\n") == (m2_pro, "")
    assert bandwidth_for("APPLE M2 PRO") == (m2_pro, "")
    assert bandwidth_for("Apple M2 Pro") == (m2_pro, "")


def test_a_chip_apple_gave_no_figure_for_says_so() -> None:
    """An unknown chip: no figure, and a sentence naming it and where the figures are kept."""
    assert bandwidth_for("Apple M1") == (
        None, "Apple publishes no memory bandwidth for the Apple M1 in the figures xferbench keeps (docs/published-figures.md)")
    assert bandwidth_for("Apple M1 Pro Max", 16)[0] is None


def test_a_chip_with_one_figure_fits_every_gpu_core_count() -> None:
    """A row with gpu_cores None fits any core count, or none."""
    m2 = next(r for r in APPLE_BANDWIDTH if r.chip == "Apple M2")
    assert m2.gpu_cores is None
    assert bandwidth_for("Apple M2") == (m2, "")
    assert bandwidth_for("Apple M2", 10) == (m2, "")


def test_a_chip_with_several_gpu_configurations_takes_the_row_listing_its_core_count() -> None:
    """M3 Max: 30 cores get 300 GB/s, 40 cores 400 GB/s."""
    m3_max = [r for r in APPLE_BANDWIDTH if r.chip == "Apple M3 Max"]
    assert [r.gpu_cores for r in m3_max] == [(30,), (40,)]
    assert bandwidth_for("Apple M3 Max", 30) == (m3_max[0], "")
    assert bandwidth_for("Apple M3 Max", 40) == (m3_max[1], "")


def test_a_chip_whose_figure_depends_on_its_gpu_says_which_configurations_were_published() -> None:
    """Without a core count, or with one Apple gave no figure for: no figure, and the configurations there are."""
    assert bandwidth_for("Apple M3 Max") == (
        None, "the Apple M3 Max's figure depends on its GPU (30-core GPU and 40-core GPU published) and the GPU core count is not recorded")
    assert bandwidth_for("Apple M3 Max", 32) == (
        None, "Apple publishes the Apple M3 Max's figure for the 30-core GPU and 40-core GPU only, not for this 32-core GPU")
    assert bandwidth_for("Apple M4 Max", 32) == (
        None, "Apple publishes the Apple M4 Max's figure for the 40-core GPU only, not for this 32-core GPU")
    assert bandwidth_for("Apple M4 Max") == (
        None, "the Apple M4 Max's figure depends on its GPU (40-core GPU published) and the GPU core count is not recorded")


def test_the_first_fitting_row_wins_and_a_row_of_several_core_counts_fits_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """Of the rows that fit, the first in the table; a row lists its core counts joined by '/' where none fits."""
    rows = (_chip("Apple Z1", (30, 38), 400.0), _chip("Apple Z1", (40,), 500.0), _chip("Apple Z1", None, 300.0),
            _chip("Apple Z2", (10, 12), 100.0), _chip("Apple Z2", (16,), 150.0))  # fmt: skip
    monkeypatch.setattr(references, "APPLE_BANDWIDTH", rows)
    assert bandwidth_for("Apple Z1", 38) == (rows[0], "")
    assert bandwidth_for("Apple Z1", 40) == (rows[1], "")
    assert bandwidth_for("Apple Z1", 20) == (rows[2], "")
    assert bandwidth_for("Apple Z1") == (rows[2], "")
    assert bandwidth_for("Apple Z2", 12) == (rows[3], "")
    assert bandwidth_for("Apple Z2", 14) == (
        None, "Apple publishes the Apple Z2's figure for the 10/12-core GPU and 16-core GPU only, not for this 14-core GPU")
    assert bandwidth_for("Apple Z2") == (
        None, "the Apple Z2's figure depends on its GPU (10/12-core GPU and 16-core GPU published) and the GPU core count is not recorded")


def test_the_apple_table_writes_each_configuration_or_every_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    """A row's GPU cell joins its core counts with ' or ', or says 'every configuration'; a missing note shows '—'."""
    rows = (_chip("Apple Z1", (30, 38), 400.0, note="a|b"), _chip("Apple Z1", None, 300.0))
    monkeypatch.setattr(references, "APPLE_BANDWIDTH", rows)
    tail = "2030-01-01 | https://example.com/x | read 2030-01-02 |"
    assert bandwidth_rows() == [
        "| chip | GPU | kind | GB/s | printed | date | source | read | note |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| Apple Z1 | 30-core or 38-core | {APPLE_KIND} | 400 | 400GB/s | {tail} a/b |",
        f"| Apple Z1 | every configuration | {APPLE_KIND} | 300 | 300GB/s | {tail} — |",
    ]


def test_the_real_apple_table_writes_m3_maxs_configurations_and_m2s_every_configuration() -> None:
    """bandwidth_rows on the real table: M3 Max's 30-core line and M2's line, whole."""
    lines = bandwidth_rows()
    m3_30 = next(line for line in lines if line.startswith("| Apple M3 Max | 30-core |"))
    assert m3_30 == (f"| Apple M3 Max | 30-core | {APPLE_KIND} | 300 | 300GB/s | 2023-10-30 | {references.M3_SPECS} | "
                     "read 2026-11-26 in the report named | the 14-core CPU, 30-core GPU configuration |")  # fmt: skip
    m2 = next(line for line in lines if line.startswith("| Apple M2 |"))
    assert m2.startswith(f"| Apple M2 | every configuration | {APPLE_KIND} | 100 | 100GB/s | 2022-06-06 | {references.M2} | ")
    assert m2.endswith(" | — |")
