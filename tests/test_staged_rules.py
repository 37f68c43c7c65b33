"""host/staged at the sweep's level: --staging-chunk-kib's bounds and where it applies, word for word; the chunk
reaching the host copy as a parameter; a real sweep of the staged copy beside the plain one, recorded; and the chunk
as a difference a report or a comparison finds between two files."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import FAST_ARGS
from xferbench import load
from xferbench.cli import app
from xferbench.core.errors import XferbenchError
from xferbench.core.results import Result, Series, select
from xferbench.core.spec import SeriesKey
from xferbench.measuring.backends import host
from xferbench.measuring.sweep import SweepConfig, make_plan
from xferbench.reading import report
from xferbench.reading.pairs import differences, facts

BOUNDS = "give a whole number of KiB from 4 to 1,048,576"


@pytest.mark.parametrize("chunk, said", [
    (0, f"--staging-chunk-kib 0: {BOUNDS}"), (3 * 2**10, f"--staging-chunk-kib 3: {BOUNDS}"),
    (2**30 + 2**10, f"--staging-chunk-kib 1048577: {BOUNDS}"), (4 * 2**10 + 1, f"--staging-chunk-kib 4.0009765625: {BOUNDS}"),
])  # fmt: skip
def test_a_chunk_out_of_bounds_is_one_line(chunk: int, said: str) -> None:
    with pytest.raises(XferbenchError) as refused:
        make_plan(SweepConfig(frameworks=("host",), modes=("staged",), staging_chunk_bytes=chunk))
    assert str(refused.value) == said


def test_a_chunk_without_the_staged_copy_in_the_sweep_is_refused() -> None:
    with pytest.raises(XferbenchError) as refused:
        make_plan(SweepConfig(frameworks=("host",), staging_chunk_bytes=4096))
    assert str(refused.value) == "--staging-chunk-kib sets the chunk host/staged copies at a time: add -f host -m staged"


def test_the_chunk_reaches_the_host_copy_only() -> None:
    config = SweepConfig(staging_chunk_bytes=8192)
    assert config.params("host") == {"staging_chunk_bytes": 8192} and config.params("cuda") == {}
    assert SweepConfig().params("host") == {}
    assert SweepConfig(staging_chunk_bytes=8192, cold_source=True).params("host") == {"staging_chunk_bytes": 8192, "cold_source": True}


def test_sweep_the_staged_copy_beside_the_plain_one(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sweep -f host -m numpy,staged --staging-chunk-kib 4`: both measured and verified; staged from a NumPy array, its
    chunk, slots and memory recorded, the option in the config."""
    monkeypatch.setattr(host, "staging_cupy", lambda: None)
    out = tmp_path / "staged.json"
    r = CliRunner().invoke(app, ["sweep", "-f", "host", "-m", "numpy,staged", "--staging-chunk-kib", "4", "--batch-sizes", "1,2",
                                 "--shape", "64x64x3", "-o", str(out), *FAST_ARGS])  # fmt: skip
    assert r.exit_code == 0, r.output
    result = load(out)
    found = {s.label(): s for s in result.series}
    staged = found["host/staged/copy@cpu"]
    assert found["host/numpy/copy@cpu"].status == "ok" and staged.status == "ok" and staged.host_buffer == "numpy"
    assert staged.params == {"staging_chunk_bytes": 4096, "staging_slots": 2, "staging_memory": host.PAGEABLE_STAGING}
    assert result.config["staging_chunk_bytes"] == 4096 and [p.status for p in staged.points] == ["ok", "ok"]
    # 64x64x3 is 12 KiB an image: each batch went 4 KiB at a time, the chunk each point used
    assert [p.staging_chunk_bytes for p in staged.points] == [4096, 4096]
    assert all(p.staging_chunk_bytes is None for p in found["host/numpy/copy@cpu"].points)
    bad = CliRunner().invoke(app, ["sweep", "-f", "host", "--staging-chunk-kib", "4", "-o", str(tmp_path / "x.json")])
    assert bad.exit_code == 2 and "add -f host -m staged" in bad.output


def test_two_files_staged_differently_differ_by_their_chunk() -> None:
    """The chunk and the memory it staged into, a field report, compare and plot show where the files differ."""
    def staged(chunk: int, memory: str) -> Series:
        series = Series.of(SeriesKey("host", "staged", "copy", "cpu", (4, 4, 3)))
        series.params = {"staging_chunk_bytes": chunk, "staging_slots": 2, "staging_memory": memory}
        return series

    result = Result(environment={}, config={}, created="2026-11-28T00:00:00+00:00")
    assert facts(result, [staged(65536, host.PINNED_STAGING)])["host staging chunk"] == "64 KiB, pinned"
    found = {d.field: d.values for d in differences([(result, [staged(65536, host.PINNED_STAGING)]),
                                                     (result, [staged(2**21, host.PAGEABLE_STAGING)])])}  # fmt: skip
    assert found["host staging chunk"] == ["64 KiB, pinned", "2048 KiB, pageable"]


def test_a_batch_smaller_than_the_chunk_records_and_prints_the_chunk_it_used(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """--staging-chunk-kib 16 on 12 KiB and 24 KiB batches: the first went whole, in one 12 KiB chunk; the second 16 KiB
    at a time. Each point records the chunk it used, and the report's per-batch detail and the terminal table say so."""
    monkeypatch.setattr(host, "staging_cupy", lambda: None)
    out = tmp_path / "staged.json"
    r = CliRunner().invoke(app, ["sweep", "-f", "host", "-m", "staged", "--staging-chunk-kib", "16", "--batch-sizes", "1,2",
                                 "--shape", "64x64x3", "-o", str(out), *FAST_ARGS], terminal_width=200)  # fmt: skip
    assert r.exit_code == 0, r.output
    (staged,) = load(out).series
    assert [p.staging_chunk_bytes for p in staged.points] == [12288, 16384]
    assert "a batch of 16 KiB or less whole, in one chunk" in (staged.note or "")
    text = report.render(*select([out]))
    assert "| batch size | batch time (s) | BPS | FPS | MB/S | MB/s p10–p90 | n | staging chunk |" in text
    rows = [line for line in text.splitlines() if line.startswith(("| 1 |", "| 2 |"))]
    assert rows[0].endswith("| whole batch, one chunk |") and rows[1].endswith("| 16 KiB |")
    assert "staging chunk" in r.output and "whole batch, one chunk" in r.output and "16 KiB" in r.output  # the sweep's own table
