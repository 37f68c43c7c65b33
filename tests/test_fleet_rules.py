"""`xferbench fleet`'s rules one at a time (xferbench/health/fleet.py): how a row's link is read from its
samples and its device's own environment entry, which files are found and which of a host's files counts,
how a row is built from a file (its ceiling, paths, flags, a peer's figures), where the straggler bound
lies, and the CSV's empty cells. Fixtures are shaped as a run or `xferbench import` writes them
(tests/nodes.py, tests/peer_outputs.py), and mostly stay in memory."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from fractions import Fraction
from pathlib import Path

import pytest

import peer_outputs as out
from nodes import H100, link, node, series, write
from test_fleet import ceiling_rows, checked
from xferbench.core.errors import XferbenchError
from xferbench.core.results import Result, Series, load
from xferbench.core.telemetry import link_summary
from xferbench.health import fleet
from xferbench.reading.peers import read_nvbandwidth

TORCH = "torch/pinned_into/copy"


def resampled(samples: dict, **changed: list) -> dict:
    """A series' NVML samples with some readings replaced, summarised again as the sampler does."""
    samples = {**samples, **changed}
    samples["summary"] = link_summary(samples)
    return samples


def nvbandwidth_file(folder: Path, *testcases: list, mib: int = 512) -> Result:
    """A peer's figures as `xferbench import nvbandwidth --buffer-size` reads them: two GPUs of one node."""
    text = folder / "nvbandwidth.json"
    text.write_text(out.nvbandwidth(*testcases, gpus=((H100, "00000000:1b:00"), (H100, "00000000:43:00")), mib=mib))
    return read_nvbandwidth([text], buffer_size_mib=mib)


def cpu_only(host: str) -> Result:
    return Result(environment={"host": host}, config={}, created="x",
                  series=[Series("torch", "pageable", "copy", "cpu", [1], points=[])], status="complete")  # fmt: skip


# _link


def test_a_link_with_a_generation_but_no_width_under_load_shows_only_its_maximum() -> None:
    """NVML gave the generation but never the width while data moved: no state to show, only the maximum."""
    result = node("n1")
    raw = result.series[0]
    raw.link = resampled(raw.link, width=[None] * 10)
    assert raw.link["summary"]["gen_under_load"] == [5, 5] and raw.link["summary"]["width_under_load"] is None
    assert fleet._link(raw, result) == ("max Gen5 x16", "Gen5 x16", False)


def test_a_link_with_a_width_but_no_generation_under_load_shows_only_its_maximum() -> None:
    """The width alone under load is not a link state either: the maximum is shown, nothing flagged."""
    result = node("n1", under=(5, 8))
    raw = result.series[0]
    raw.link = resampled(raw.link, gen=[None] * 10)
    assert raw.link["summary"]["gen_under_load"] is None and raw.link["summary"]["width_under_load"] == [8, 8]
    assert fleet._link(raw, result) == ("max Gen5 x16", "Gen5 x16", False)


def test_a_links_maximum_known_only_from_each_devices_own_environment_entry_judges_that_device() -> None:
    """Samples without maxima: cuda:0's entry says Gen5 x16, cuda:1's Gen4 x16; both ran at Gen4 x16."""
    result = node("n1", gpus=2, under=(4, 16))
    for s in result.series:
        s.link = {k: v for k, v in s.link.items() if k not in ("pcie_gen_max", "pcie_width_max")}
    next(d for d in result.environment["devices"] if d["id"] == "cuda:1")["nvml"]["pcie_gen_max"] = 4
    rows = {r.device: r for r in fleet.rows_of(Path("n1.json"), result)}
    assert [(r.link, r.link_max, r.flags) for r in rows.values()] == [("Gen4 x16 (max Gen5 x16)", "Gen5 x16", ["link below max"]),
                                                                       ("Gen4 x16", "Gen4 x16", [])]  # fmt: skip
    assert list(rows) == ["cuda:0", "cuda:1"]
    raw0 = next(s for s in result.series if s.device == "cuda:0")
    assert fleet._link(raw0, result) == ("Gen4 x16 (max Gen5 x16)", "Gen5 x16", True)


def test_samples_with_a_generation_but_no_width_do_not_count_towards_the_state_a_link_ran_at() -> None:
    """Five loaded samples read Gen3 with no width, three Gen4 x8: the row says Gen4 x8, the state fully read."""
    result = node("n1", under=(4, 8))
    raw = result.series[0]
    raw.link = resampled(raw.link, gen=[1, 1] + [3] * 5 + [4] * 3, width=[8, 8] + [None] * 5 + [8] * 3)
    assert fleet._link(raw, result) == ("Gen4 x8 (max Gen5 x16)", "Gen5 x16", True)


def test_of_two_states_seen_equally_often_the_first_seen_names_the_link() -> None:
    """Four loaded samples at Gen3 x8, then four at Gen4 x8: a tie, and the first state seen is shown."""
    result = node("n1", under=(4, 8))
    raw = result.series[0]
    raw.link = resampled(raw.link, gen=[1, 1] + [3] * 4 + [4] * 4)
    assert fleet._link(raw, result)[0] == "Gen3 x8 (max Gen5 x16)"
    raw.link = resampled(raw.link, gen=[1, 1] + [4] * 4 + [3] * 4)
    assert fleet._link(raw, result)[0] == "Gen4 x8 (max Gen5 x16)"


# find_files and read_fleet


def test_every_folder_given_keeps_its_files_and_a_plain_file_given_is_kept_as_it_is(tmp_path) -> None:
    """Two folders and a plain file: every file of both folders (sorted, nested too), then the file, each once."""
    first, second = tmp_path / "a", tmp_path / "b"
    (first / "deep").mkdir(parents=True)
    second.mkdir()
    for path in (first / "y.json", first / "x.json", first / "deep" / "z.json", second / "w.json"):
        path.write_text("{}")
    plain = tmp_path / "node.txt"
    plain.write_text("{}")
    assert fleet.find_files([first, second, plain]) == [first / "deep" / "z.json", first / "x.json", first / "y.json",
                                                        second / "w.json", plain]  # fmt: skip
    assert fleet.find_files([plain, second, second / "w.json"]) == [plain, second / "w.json"]


def test_a_refusal_lists_the_first_three_unreadable_files_joined_by_semicolons(tmp_path) -> None:
    """No GPU in four files: all four counted, the first three named with their reasons, "; " between."""
    for i in range(4):
        write(cpu_only(f"laptop{i}"), tmp_path)
    why = "no CUDA series measured anything in it"
    listed = "; ".join(f"{tmp_path / f'laptop{i}.json'}: {why}" for i in range(3))
    with pytest.raises(XferbenchError) as refused:
        fleet.read_fleet([tmp_path])
    assert str(refused.value) == f"no GPU figures in 4 file(s): {listed}"


def test_of_two_files_of_a_host_with_the_same_start_time_the_first_read_counts(tmp_path) -> None:
    """Equal `created`: the file found first (a.json, before b.json) counts; the later one is superseded."""
    write(node("n0", raw_gbps=55.0), tmp_path, "a")
    write(node("n0", raw_gbps=40.0), tmp_path, "b")
    found = fleet.read_fleet([tmp_path])
    assert [(r.file, r.ceiling_mbps) for r in found.rows] == [(str(tmp_path / "a.json"), pytest.approx(55_000, rel=0.02))]
    assert found.superseded == [(str(tmp_path / "b.json"), str(tmp_path / "a.json"))]


# rows_of


def test_a_path_measured_at_no_batch_the_ceiling_was_measured_at_has_no_figure() -> None:
    """The torch path measured at batch 256 only, the ceiling at 512: no torch figure; none without a ceiling either."""
    result = node("n1")
    result.series[1] = series("torch", "pinned_into", 49.5, batch=256, method="per-call")
    (row,) = fleet.rows_of(Path("n1.json"), result)
    assert (row.batch_size, row.paths) == (512, {TORCH: None})
    result.series = result.series[1:]
    (row,) = fleet.rows_of(Path("n1.json"), result)
    assert (row.batch_size, row.ceiling_mbps, row.paths) == (None, None, {TORCH: None})


def test_a_path_measured_by_two_series_keeps_the_figure_at_the_ceilings_batch() -> None:
    """Two torch series of one label: one measured at the ceiling's batch, one not; the figure stays, either order."""
    result = node("n1")
    at_ceiling = result.series[1]
    elsewhere = series("torch", "pinned_into", 20.0, batch=256, method="per-call")
    assert at_ceiling.label() == elsewhere.label()
    for order in ([at_ceiling, elsewhere], [elsewhere, at_ceiling]):
        result.series = [result.series[0], *order]
        (row,) = fleet.rows_of(Path("n1.json"), result)
        assert row.paths == {TORCH: at_ceiling.points[-1].mbps}


def test_the_checks_flags_come_first_and_the_later_flags_follow_them() -> None:
    """A failing check on a narrow link with a run cut short: the check's flags, then the link, then the file."""
    result = checked(node("n1", under=(5, 8)))
    result.status = "interrupted"
    (row,) = fleet.rows_of(Path("n1.json"), result)
    assert row.verdict == "FAIL"
    assert row.flags == ["check FAIL: link state", "link below max", "file interrupted: the run did not finish"]


def test_a_raw_ceiling_damaged_in_its_file_is_told_apart_from_none_measured(tmp_path) -> None:
    """The raw copy's only point damaged after the run: flagged as damaged; removed altogether: none measured."""
    path = write(node("n1"), tmp_path)
    data = json.loads(path.read_text())
    assert data["series"][0]["framework"] == "cuda"
    data["series"][0]["points"][0]["n"] += 1
    path.write_text(json.dumps(data))
    (row,) = fleet.rows_of(path, load(path))
    assert (row.ceiling_mbps, row.batch_size, row.measured, row.flags) == (None, None, "-", ["raw ceiling damaged in the file"])
    data["series"] = data["series"][1:]
    path.write_text(json.dumps(data))
    (row,) = fleet.rows_of(path, load(path))
    assert row.flags == ["no raw ceiling measured"]


def test_a_peers_copy_from_pinned_memory_is_its_ceiling_and_says_who_measured_it(tmp_path) -> None:
    """nvbandwidth's copy-engine figure is the ceiling, measured "331.4 MB streamed (nvbandwidth)"; the SM copy a path."""
    result = nvbandwidth_file(tmp_path, out.passed(out.H2D_CE, "55.3", "56.0"), out.passed("host_to_device_memcpy_sm", "50.1", "50.2"),
                              mib=316)  # fmt: skip
    assert result.environment["peer"]["tool"] == "nvbandwidth"
    rows = fleet.rows_of(tmp_path / "nvbandwidth.json", result)
    assert [(r.device, r.ceiling_mbps, r.batch_size, r.source, r.flags) for r in rows] == [
        ("cuda:0", 55_300.0, 316, "nvbandwidth", []), ("cuda:1", 56_000.0, 316, "nvbandwidth", [])]
    assert [r.measured for r in rows] == ["331.4 MB streamed (nvbandwidth)"] * 2  # 316 MiB = 331,350,016 bytes
    assert [r.paths for r in rows] == [{"nvbandwidth/host_to_device_memcpy_sm/copy/streamed": 50_100.0},
                                       {"nvbandwidth/host_to_device_memcpy_sm/copy/streamed": 50_200.0}]  # fmt: skip


def test_a_ceilings_bytes_are_written_in_millions_to_one_decimal() -> None:
    """1076 images of 256x256x3 bytes: 211,550,208 bytes, "211.6 MB", rounded up from 211.55."""
    result = node("n1")
    result.series = [series("cuda", "raw_pinned", 55.0, batch=1076)]
    (row,) = fleet.rows_of(Path("n1.json"), result)
    assert row.measured == "211.6 MB streamed"


def test_the_row_takes_its_link_from_the_raw_series_where_one_measured() -> None:
    """The torch series comes first and ran at x8, the raw copy at x16: the row's link is the raw copy's."""
    result = node("n1")
    raw, torch = result.series
    result.series = [dataclasses.replace(torch, link=link(5, 8), device_name=H100), raw]
    (row,) = fleet.rows_of(Path("n1.json"), result)
    assert (row.link, row.link_max, row.flags) == ("Gen5 x16", "Gen5 x16", [])
    result.series = [result.series[0]]  # no raw copy: the first series names the row
    (row,) = fleet.rows_of(Path("n1.json"), result)
    assert (row.link, "link below max" in row.flags) == ("Gen5 x8 (max Gen5 x16)", True)


# stragglers


def test_a_ceiling_of_none_or_zero_joins_no_group_and_is_never_a_straggler() -> None:
    """Rows with no ceiling or a zero one are left out of the groups and their medians."""
    rows = ceiling_rows(100, 100, 100, 0)
    rows.append(dataclasses.replace(ceiling_rows(1)[0], host="none", ceiling_mbps=None))
    groups = fleet.stragglers(rows)
    assert list(groups.values()) == [(100, 0, 3)] and [r.flags for r in rows] == [[]] * 5


def test_a_ceiling_exactly_on_the_mad_bound_is_not_a_straggler_and_one_just_below_is() -> None:
    """Median 65536, MAD 8192: the bound 65536 - 3 x 1.4826 x 8192 is exact in floating point; on it is no straggler."""
    bound = 65536 - fleet.MAD_K * fleet.MAD_SCALE * 8192
    assert Fraction(bound) == 65536 - Fraction(fleet.MAD_K * fleet.MAD_SCALE) * 8192 and bound < 0.9 * 65536
    on = ceiling_rows(bound, 57344, 65536, 73728, 65536)
    assert fleet.stragglers(on) == {("H100", "Gen5 x16", "100.7 MB streamed"): (65536, 8192, 5)}
    assert on[0].flags == []
    below = ceiling_rows(bound - 1, 57344, 65536, 73728, 65536)
    fleet.stragglers(below)
    assert below[0].flags == ["straggler: 44% of its group's median"]


# to_csv


def test_the_csv_leaves_no_batch_and_no_ceiling_empty_and_joins_flags_with_semicolons() -> None:
    """A GPU with no ceiling: empty batch, ceiling and path cells; its two flags in one cell, "; " between."""
    rows = [fleet.Row("a", "a.json", "cuda:1", "H100", "Gen5 x8 (max Gen5 x16)", "Gen5 x16", None, None, paths={TORCH: None},
                      flags=["link below max", "no raw ceiling measured"]),
            fleet.Row("b", "b.json", "cuda:0", "H100", "Gen5 x16", "Gen5 x16", 512, 55_000.5, paths={TORCH: 49_000.25},
                      verdict="PASS")]  # fmt: skip
    lines = list(csv.reader(io.StringIO(fleet.to_csv(fleet.Fleet(rows, [], {})))))
    assert lines[1:] == [["a", "a.json", "cuda:1", "H100", "Gen5 x8 (max Gen5 x16)", "Gen5 x16", "", "", "", "-",
                          "link below max; no raw ceiling measured", ""],
                         ["b", "b.json", "cuda:0", "H100", "Gen5 x16", "Gen5 x16", "512", "55000.5", "49000.25", "PASS", "", ""]]  # fmt: skip
