"""The H100 and H200 figures: Azure's benchmark results for its ND H100 v5 and ND H200 v5 (the current revision
counts, the superseded one and the SM copies do not), the H100 NVL pinned-copy report, and the published range
each of these GPUs gets from them."""

from __future__ import annotations

import re

from xferbench.core.references import (
    AZURE_H100, AZURE_H200, CE, KV_STAGING, MEASURED, MEMCPY, NVBW_6, PUBLISHED, SM, floor_for, measured_for, published_line,
)  # fmt: skip

H200 = "NVIDIA H200"
H100_SXM5 = "NVIDIA H100 80GB HBM3"
H200_RANGE = f"published for H200: 55 GB/s host to device, 1 source ({AZURE_H200} @b408bf8)"


def test_an_h200_is_placed_against_azures_current_revision() -> None:
    """55 each way from the 2025-07-07 revision (copy-engine tests); nothing else counts for an H200."""
    assert published_line(H200, None) == H200_RANGE
    assert published_line(H200, None, "d2h") == H200_RANGE.replace("host to device", "device to host")
    assert published_line(H200, 55.4) == f"55.4 GB/s here, above every published figure; {H200_RANGE}"
    assert published_line(H200, 55.0) == f"55.0 GB/s here; {H200_RANGE}"
    assert published_line(H200, 52.0) == f"52.0 GB/s here, below every published figure; {H200_RANGE}"
    assert published_line("NVIDIA H200 NVL", None) == "no published host-to-device figure for this model (NVIDIA H200 NVL)"
    assert published_line("NVIDIA GH200 480GB", None).startswith("published for GH200: 346 GB/s")


def test_azures_superseded_revision_and_sm_copies_stay_out_of_every_range() -> None:
    """The 2024 figures (52 each way for the H200, 51 and 52 for the H100) were SM copies and the H200's were revised."""
    azure = [r for r in PUBLISHED if r.source.startswith((AZURE_H200, AZURE_H100))]
    assert all(r.kind == MEASURED for r in azure)
    h200 = [r for r in azure if r.source.startswith(AZURE_H200)]
    assert sorted((r.low_gbps, r.direction, r.copy, r.date) for r in h200) == [
        (52.0, "d2h", SM, "2024-09-23"), (52.0, "h2d", SM, "2024-09-23"),
        (55.0, "d2h", CE, "2025-07-07"), (55.0, "h2d", CE, "2025-07-07")]  # fmt: skip
    old = [r for r in h200 if r.low_gbps == 52.0]
    assert all(r.source.endswith("@7f20e5f") and r.caveat and "superseded by a later revision" in r.caveat for r in old)
    assert all(r.caveat and "host_to_device_memcpy_sm" in r.caveat for r in old)
    assert all("CUDA 12.6, driver 560.28.03" in r.tool for r in old)
    current = [r for r in h200 if r.low_gbps == 55.0]
    assert all(r.caveat is None and r.source.endswith("@b408bf8") and "CUDA 12.8, driver 570.133.20" in r.tool
               for r in current)  # fmt: skip
    assert 55.4 not in {r.low_gbps for r in PUBLISHED}  # the file's storage (FIO) read is no copy
    assert sorted(r.low_gbps for r in measured_for(H200)) == [55.0]
    h100 = [r for r in azure if r.source.startswith(AZURE_H100)]
    assert sorted((r.low_gbps, r.direction, r.copy) for r in h100) == [(51.0, "h2d", SM), (52.0, "d2h", SM)]
    assert all(r.caveat for r in h100) and not set(h100) & set(measured_for(H100_SXM5) + measured_for(H100_SXM5, "d2h"))


def test_measurements_never_judge_an_h200() -> None:
    """check still judges an H200 by Azure's health-check floor, whatever the benchmark results say."""
    floor = floor_for(H200)
    assert floor is not None and floor.low_gbps == 48.0 and "nd96isr_h200_v5.conf" in floor.source


def test_the_h100_ranges_by_form_factor() -> None:
    """Every H100 board keeps the 4-GPU VM's 56.68-57.07: the NVL's 55.3 is a rate implied from a per-token
    time (its own 2.38 µs give 55.07), kept with that caveat and out of the range."""
    assert published_line(H100_SXM5, None) == f"published for H100: 56.68–57.07 GB/s host to device, 1 source ({NVBW_6})"
    assert published_line("NVIDIA H100 PCIe", None) == published_line(H100_SXM5, None)
    assert published_line("NVIDIA H100 NVL", None) == published_line(H100_SXM5, None)
    (nvl,) = [r for r in PUBLISHED if r.source == KV_STAGING]
    assert (nvl.copy, nvl.low_gbps, nvl.size_bytes, nvl.link) == (MEMCPY, 55.3, 1 << 30, "PCIe Gen5 x16")
    assert nvl.matches == ("h100 nvl",) and nvl.caveat and "implied from a per-token time" in nvl.caveat


def test_no_row_was_read_or_published_after_it_was_read() -> None:
    """Every 'read' date is a day that has been, and no figure is dated after it was last read."""
    for row in PUBLISHED:
        read = re.match(r"read (\d{4}-\d{2}-\d{2})", row.checked)
        if read is None:  # a source that could not be reached says so instead
            assert row.checked.startswith("not reachable "), row.checked
            continue
        assert "2026-11-23" <= read.group(1) <= "2026-11-28", row.checked
        assert row.date <= read.group(1), row
