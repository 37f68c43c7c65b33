"""The published-figures table: which rows a GPU name picks up, which floor judges it, which figures
form the published range, and that docs/published-figures.md shows exactly the data."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from xferbench.core import references
from xferbench.core.references import (
    CE, FLOOR, KINDS, MEASURED, MEMCPY, PUBLISHED, SM, Published, figure, floor_for, floor_line, matches, measured_for,
    published_line,
)  # fmt: skip

DOCS = Path(__file__).resolve().parent.parent / "docs" / "published-figures.md"
H100_SXM5 = "NVIDIA H100 80GB HBM3"
DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


def _row(**changes: object) -> Published:
    """A model-specific floor for a made-up GPU, changed as asked."""
    base = Published(model="Zeta 9 (test)", family="Zeta 9", matches=("zeta 9",), excludes=(), kind=FLOOR, tool="tool",
                     copy=CE, size=None, size_bytes=None, direction="both", low_gbps=20.0, high_gbps=20.0,
                     date="2026-01-01", source="example/repo conf @abc1234", checked="read 2026-11-23",
                     operator="Operator A")  # fmt: skip
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_h100_sxm5_gets_azures_48_floor_and_no_nvl_or_pcie_row() -> None:
    floor = floor_for(H100_SXM5)
    assert floor is not None and floor.low_gbps == 48.0
    assert "nd96isr_h100_v5.conf" in floor.source and floor.until is None
    assert "nvl" not in floor.model.lower() and "pcie" not in floor.model.lower()
    nvl_or_pcie_only = [r for r in PUBLISHED if not r.any_gpu and any(p.split() in (["h100", "nvl"], ["h100", "pcie"]) for p in r.matches)]
    assert nvl_or_pcie_only and not any(matches(r, H100_SXM5) for r in nvl_or_pcie_only)
    assert floor_for("NVIDIA H100 NVL") is not None and "nc40ads" in floor_for("NVIDIA H100 NVL").source  # type: ignore[union-attr]
    assert floor_for("NVIDIA H100 PCIe") is None  # no operator publishes one


def test_whole_words_keep_neighbouring_models_apart() -> None:
    h200 = [r for r in PUBLISHED if "h200" in " ".join(r.matches).split()]
    a10 = [r for r in PUBLISHED if "a10" in " ".join(r.matches).split()]
    assert h200 and a10
    assert not any(matches(r, "NVIDIA GH200 480GB") for r in h200)
    assert not any(matches(r, "NVIDIA A100-SXM4-80GB") for r in a10)
    assert all(matches(r, "NVIDIA A10") for r in a10)
    assert floor_for("NVIDIA GH200 480GB") is None
    assert floor_for("NVIDIA H200") is not None and floor_for("NVIDIA H200 NVL") is None  # Azure's H200 rows are SXM
    # The same board under its different NVML spellings.
    assert floor_for("NVIDIA A100-SXM4-80GB") == floor_for("NVIDIA A100-SXM-80GB") == floor_for("NVIDIA A100-SXM4-40GB")
    assert floor_for("NVIDIA A100-PCIE-40GB") == floor_for("NVIDIA A100 80GB PCIe")


def test_excluded_word_rules_a_name_out() -> None:
    row = _row(matches=("rtx 4090",), excludes=("d",))
    assert matches(row, "NVIDIA GeForce RTX 4090")
    assert not matches(row, "NVIDIA GeForce RTX 4090 D")
    assert not matches(row, "NVIDIA GeForce RTX 40900")


def test_floor_for_takes_the_lowest_floor_in_force(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = (_row(low_gbps=30.0, high_gbps=30.0, operator="Strict"),
            _row(low_gbps=25.0, high_gbps=25.0, operator="Lenient"),
            _row(low_gbps=10.0, high_gbps=10.0, operator="Replaced", until="2025-01-01"),
            _row(low_gbps=5.0, high_gbps=5.0, operator="Everyone", any_gpu=True, matches=("",)),
            _row(low_gbps=1.0, high_gbps=1.0, operator="Other way", direction="d2h"),
            _row(low_gbps=2.0, high_gbps=2.0, kind=MEASURED))  # fmt: skip
    monkeypatch.setattr(references, "PUBLISHED", rows)
    floor = floor_for("Zeta 9 Max")
    assert floor is not None and floor.operator == "Lenient" and floor.low_gbps == 25.0
    assert floor_for("Zeta 10") is None


def test_replaced_floors_never_judge() -> None:
    replaced = [r for r in PUBLISHED if r.kind == FLOOR and r.until]
    assert replaced
    for row in replaced:
        for name in ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-32GB", "NVIDIA H100 NVL"):
            assert floor_for(name) is not row
    assert floor_for("Tesla V100-SXM2-32GB").low_gbps == 9.0  # type: ignore[union-attr]  # 10 until 2025-11-13


def test_measured_for_leaves_out_caveats_sm_copies_and_small_sizes() -> None:
    h100 = measured_for(H100_SXM5)
    assert h100 and all(r.caveat is None and r.copy in (CE, MEMCPY) for r in h100)
    assert 14.2 not in {r.low_gbps for r in h100}  # the faulty slot
    assert not any(r.copy == SM for r in measured_for("NVIDIA A100-SXM4-40GB") + measured_for("NVIDIA GH200 480GB"))
    assert {r.low_gbps for r in measured_for("NVIDIA GH200 480GB")} == {346.0}  # not the SM copy's 342
    a100_pcie = measured_for("NVIDIA A100-PCIE-40GB")
    assert a100_pcie and all(r.size_bytes is None or r.size_bytes >= 16 << 20 for r in a100_pcie)
    assert not any(r.size == "1 MB to 10 MB" for r in a100_pcie)
    assert all(r.direction == "d2h" for r in measured_for("NVIDIA A100-PCIE-40GB", "d2h"))
    assert not measured_for("Tesla P100-PCIE-16GB", "h2d")[0].caveat  # the local node only
    assert len(measured_for("Tesla P100-PCIE-16GB", "h2d")) == 1


def test_measured_for_filters_by_copy_size_kind_and_direction_even_without_a_caveat(monkeypatch: pytest.MonkeyPatch) -> None:
    def measured(figure_: float, **changes: object) -> Published:
        return _row(**{"kind": MEASURED, "direction": "h2d", "low_gbps": figure_, "high_gbps": figure_, **changes})

    rows = (measured(25.0, copy=CE, size="64 MiB", size_bytes=64 << 20),
            measured(24.0, copy=MEMCPY),  # size not stated: kept
            measured(23.0, copy=MEMCPY, size="16 MiB", size_bytes=16 << 20),
            measured(30.0, copy=SM, size="64 MiB", size_bytes=64 << 20),
            measured(12.0, copy=references.PAGEABLE),
            measured(18.0, copy=CE, size="1 MB", size_bytes=1_000_000),
            measured(26.0, copy=CE, direction="d2h"),
            measured(26.5, copy=CE, kind=references.VENDOR),
            measured(27.0, copy=CE, caveat="bidirectional"))  # fmt: skip
    monkeypatch.setattr(references, "PUBLISHED", rows)
    assert [r.low_gbps for r in measured_for("Zeta 9")] == [25.0, 24.0, 23.0]
    assert [r.low_gbps for r in measured_for("Zeta 9", "d2h")] == [26.0]
    assert published_line("Zeta 9", None) == "published for Zeta 9: 23–25 GB/s host to device, 1 source (example/repo conf @abc1234)"


def test_published_line_for_unknown_and_known_models() -> None:
    assert published_line("NVIDIA L4", 20.0) == "20.0 GB/s here; no published host-to-device figure for this model (NVIDIA L4)"
    assert published_line("NVIDIA B200", None) == "no published host-to-device figure for this model (NVIDIA B200)"
    one = published_line(H100_SXM5, 56.1)
    assert one.startswith("56.1 GB/s here, below every published figure; published for H100: 56.68–57.07 GB/s host to device")
    assert one.endswith("1 source (https://github.com/NVIDIA/nvbandwidth/issues/6)")
    assert published_line(H100_SXM5, 56.9) == published_line(H100_SXM5, None).join(["56.9 GB/s here; ", ""])
    several = published_line("NVIDIA GeForce RTX 4090", 30.0)
    assert "above every published figure" in several and "23.85–26.38 GB/s host to device, 2 sources" in several
    assert "device to host" in published_line("NVIDIA GeForce RTX 4090", None, "d2h")


def test_every_row_is_complete_and_consistent() -> None:
    assert len(PUBLISHED) >= 50
    for row in PUBLISHED:
        assert row.kind in KINDS and row.date and row.source and row.checked, row
        assert DATE.match(row.date), row.date
        assert row.checked.startswith(("read ", "not reachable ")), row.checked
        assert 0 < row.low_gbps <= row.high_gbps, row
        assert row.direction in ("h2d", "d2h", "both"), row
        assert row.size_bytes is None or row.size, row  # a size in bytes always has its words
        if row.any_gpu:
            assert row.kind == FLOOR and matches(row, "Any GPU at all"), row
        if row.kind == FLOOR and not row.any_gpu:
            assert row.operator, row
        if row.until:
            assert row.caveat and row.kind == FLOOR, row
    any_gpu = {(r.operator, r.low_gbps) for r in PUBLISHED if r.any_gpu}
    assert {f for _, f in any_gpu} == {52.0, 4.0, 10.3}


def test_floor_line_cites_figure_operator_source_and_date() -> None:
    floor = floor_for(H100_SXM5)
    assert floor is not None
    line = floor_line(floor)
    assert line.startswith("48 GB/s, Azure HPC health checks (nvbandwidth v0.4")
    assert floor.source in line and line.endswith(floor.date)


def test_docs_page_shows_every_row() -> None:
    text = DOCS.read_text(encoding="utf-8")
    table = [line for line in text.splitlines() if line.startswith("|")]
    rows = references.markdown_rows()
    assert table == rows  # the page's table is the data's, row for row and in order
    for row, line in zip(PUBLISHED, rows[2:]):
        assert row.source in line and f"| {figure(row)}" in line


def test_the_page_says_when_every_source_was_read() -> None:
    """The sentence on reading dates is made from every row's `checked` (read_sentence), and the page holds it as made:
    a source read again (the GH200 thread, 2026-11-28) is named on its date, never left under the first date."""
    sentence = references.read_sentence()
    assert sentence in " ".join(DOCS.read_text(encoding="utf-8").split())
    again = [r for r in PUBLISHED if r.checked.startswith(references.READ_AGAIN)]
    assert {r.family for r in again} >= {"GH200", "MI210", "MI300X"}
    dated = sentence.split("; ")[1]
    assert dated.endswith(f"on {references.READ_AGAIN.removeprefix('read ')}")
    for row in again:
        assert f"{references._short(row.source)} (" in dated and row.family in dated, row.source
    assert "NVIDIA/nvbandwidth#23 (GH200)" in dated
    with pytest.raises(ValueError, match="must start with 'read YYYY-MM-DD'"):
        references._read_on("2026-11-28")
