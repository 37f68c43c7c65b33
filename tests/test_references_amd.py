"""AMD's published figures: Azure's ND MI300X v5 TransferBench table (55 host to device, 56 device to host,
its copy path not stated, so out of the published range) and an MI210's rocm-bandwidth-test summary (~28
each way, the SDMA copy engine at the plain run's 64 MiB; the poster's rounded figure, so out of it too), each
with its source, date and reading."""

from __future__ import annotations

from xferbench.core import references
from xferbench.core.references import AMD_PUBLISHED, BOTH, CE, MEASURED, PUBLISHED, matches, measured_for, published_line
from xferbench.core.spec import D2H, H2D

MI300X, MI210 = "AMD Instinct MI300X", "AMD Instinct MI210"


def test_azure_s_mi300x_figures_are_kept_as_the_file_prints_them_and_out_of_the_range() -> None:
    rows = [r for r in PUBLISHED if r.family == "MI300X"]
    assert sorted((r.direction, r.low_gbps, r.high_gbps) for r in rows) == [(D2H, 56.0, 56.0), (H2D, 55.0, 55.0)]
    for row in rows:
        assert row.kind == MEASURED and row.date == "2025-01-23" and row.source.endswith("ND_MI300X_v5_results.md @bf209ab")
        assert row.copy == references.NOT_STATED and "TransferBench p2p" in (row.caveat or "") and "32 CUs" in (row.caveat or "")
        assert "7756ae6" in row.checked and "29" in row.checked  # the figures they replaced, the same day
    assert 29.0 not in {r.low_gbps for r in PUBLISHED if r.family == "MI300X"}
    assert measured_for(MI300X, H2D) == [] and measured_for(MI300X, D2H) == []  # no copy path stated: no published range
    assert "no published host-to-device figure" in published_line(MI300X, 50.0)


def test_the_mi210_summary_is_a_copy_engine_figure_each_way_kept_out_of_the_range() -> None:
    """The poster's rounded '~28 GB/s (uni)', not a cell of the matrices (not read): shown with that caveat, and no GPU
    is judged against it."""
    (row,) = [r for r in PUBLISHED if r.family == "MI210"]
    assert (row.low_gbps, row.direction, row.copy, row.size_bytes, row.date) == (28.0, BOTH, CE, 64 << 20, "2025-08-19")
    assert row.source == "https://github.com/ROCm/rocm_bandwidth_test/issues/129" and "~28 GB/s (uni)" in (row.note or "")
    assert row.caveat == "the poster's rounded summary ('~28 GB/s (uni)'), not a cell of the pasted matrices, which were not read"
    assert measured_for(MI210, H2D) == [] == measured_for(MI210, D2H)
    assert published_line(MI210, 26.0) == "26.0 GB/s here; no published host-to-device figure for this model (AMD Instinct MI210)"


def test_amd_rows_match_their_model_only_and_follow_nvidia_s() -> None:
    assert PUBLISHED[-len(AMD_PUBLISHED):] == AMD_PUBLISHED
    mi300x, mi210 = AMD_PUBLISHED[0], AMD_PUBLISHED[-1]
    assert matches(mi300x, "AMD Instinct MI300X VF") and not matches(mi300x, "AMD Instinct MI300A")
    assert matches(mi210, MI210) and not matches(mi210, "AMD Instinct MI250X") and not matches(mi210, "NVIDIA H200")
