"""`xferbench fleet` over files made to look like a fleet (tests/nodes.py): ten healthy nodes, one
with a slow GPU, one with a down-trained link, one unreadable file. Those are found; nothing else is."""

from __future__ import annotations

import csv
import dataclasses
import io

import pytest
from typer.testing import CliRunner

from nodes import H100, node, write
from xferbench.health import check, fleet
from xferbench.cli import app
from xferbench.core.errors import XferbenchError


@pytest.fixture
def folder(tmp_path):
    """Twelve nodes of two GPUs each, as `xferbench check` writes them, and one broken file."""
    nodes = tmp_path / "fleet"
    nodes.mkdir()
    speeds = [55.0, 55.4, 54.6, 55.9, 54.9, 55.2, 56.1, 55.5, 54.4, 55.7]
    for i, gbps in enumerate(speeds):
        write(checked(node(f"node{i:02d}", raw_gbps=gbps, gpus=2)), nodes)
    write(checked(node("slow", raw_gbps=38.0, gpus=2)), nodes)  # 69% of the others: a straggler, and fails its check
    write(checked(node("narrow", raw_gbps=27.0, under=(5, 8), gpus=2)), nodes)  # down-trained to x8
    (nodes / "broken.json").write_text('{"schema": "xferbench/1", "series": ')  # a node killed mid-write
    (nodes / "notes.txt").write_text("not a result")
    return nodes


def checked(result):
    result.check = check.to_dict(check.verdicts(result), 0.8, None)
    return result


def test_the_slow_gpu_the_narrow_link_and_the_broken_file_are_found_and_nothing_else(folder) -> None:
    found = fleet.read_fleet([folder])
    assert len(found.rows) == 24
    flagged = {(r.host, r.device): r.flags for r in found.flagged}
    assert set(flagged) == {("slow", "cuda:0"), ("slow", "cuda:1"), ("narrow", "cuda:0"), ("narrow", "cuda:1")}
    assert any(f.startswith("straggler") for f in flagged[("slow", "cuda:0")])
    assert "check FAIL: link, reference" in flagged[("slow", "cuda:0")]
    assert "link below max" in flagged[("narrow", "cuda:0")]
    narrow = next(r for r in found.rows if r.host == "narrow")
    assert narrow.link == "Gen5 x8 (max Gen5 x16)" and narrow.link_max == "Gen5 x16"
    assert [path.endswith("broken.json") for path, _ in found.unreadable] == [True]
    assert "not JSON" in found.unreadable[0][1]
    ((model, link, measured), (median, mad, n)), = found.groups.items()
    assert n == 24 and median == pytest.approx(55_000, rel=0.02) and measured == "100.7 MB streamed"


def test_a_small_spread_flags_no_one_and_a_small_group_is_not_judged(tmp_path) -> None:
    for i, gbps in enumerate([55.0, 54.0, 56.0, 52.5]):  # 52.5 is 4.5% below the median: no straggler
        write(node(f"n{i}", raw_gbps=gbps), tmp_path)
    assert fleet.read_fleet([tmp_path]).flagged == []
    pair = tmp_path / "pair"
    pair.mkdir()
    for i, gbps in enumerate([55.0, 30.0]):  # two GPUs cannot say which one is odd
        write(node(f"p{i}", raw_gbps=gbps), pair)
    assert fleet.read_fleet([pair]).flagged == []


def test_the_fleet_command_writes_markdown_csv_and_a_plot_and_exits_1(folder, tmp_path) -> None:
    md, table, png = tmp_path / "fleet.md", tmp_path / "fleet.csv", tmp_path / "fleet.png"
    result = CliRunner().invoke(app, ["fleet", str(folder), "--markdown", str(md), "--csv", str(table), "--plot", str(png)],
                                env={"COLUMNS": "200"})  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "24 GPU(s), 4 flagged" in result.output and "not read:" in result.output and "broken.json" in result.output
    text = md.read_text()
    assert "| slow | cuda:0 NVIDIA H100 80GB HBM3 |" in text and "Files not read:" in text
    rows = list(csv.DictReader(io.StringIO(table.read_text())))
    assert len(rows) == 24 and float(rows[0]["raw_ceiling_mbps"]) > 0
    assert {r["host"] for r in rows if r["flags"]} == {"slow", "narrow"}
    assert png.stat().st_size > 1000


def test_a_healthy_fleet_exits_0(tmp_path) -> None:
    for i in range(4):
        write(node(f"n{i}", raw_gbps=55 + i * 0.2), tmp_path)
    result = CliRunner().invoke(app, ["fleet", str(tmp_path)])
    assert result.exit_code == 0, result.output


def test_bad_fleet_input_is_one_line_and_exit_2(tmp_path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for args, message in ((["fleet", str(empty)], "no result files (*.json) in this folder"),
                          (["fleet", str(tmp_path / "nowhere")], "no such file or folder"),
                          (["fleet", str(tmp_path), "--min-drop", "150%"], "--min-drop '150%'"),
                          (["fleet", str(tmp_path), "--min-group", "1"], "--min-group at least 2")):  # fmt: skip
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, result.output
        assert message in result.output and "Traceback" not in result.output
    (empty / "bad.json").write_text("{}")
    with pytest.raises(XferbenchError, match="no GPU figures in 1 file"):
        fleet.read_fleet([empty])


def test_files_measured_differently_are_not_judged_against_each_other(tmp_path) -> None:
    """Per-call ceilings at batch 512 are not stragglers among streamed ones: each is its own group."""
    for i in range(4):
        write(node(f"s{i}", raw_gbps=55), tmp_path)
    for i in range(2):
        result = node(f"p{i}", raw_gbps=40)
        result.series = [dataclasses.replace(s, method="per-call") for s in result.series]
        write(result, tmp_path)
    found = fleet.read_fleet([tmp_path])
    assert found.flagged == [] and len(found.groups) == 2


def test_the_newest_file_of_a_host_counts_and_a_run_cut_short_is_flagged(tmp_path) -> None:
    for i in range(4):
        write(node(f"n{i}", raw_gbps=55), tmp_path)
    old = node("n0", raw_gbps=30)
    old.created = "2026-01-01T00:00:00+00:00"
    write(old, tmp_path, "n0-january")
    cut = node("n9", raw_gbps=55)
    cut.status = "running"
    write(cut, tmp_path)
    found = fleet.read_fleet([tmp_path])
    assert len(found.rows) == 5 and [old for old, _ in found.superseded] == [str(tmp_path / "n0-january.json")]
    assert [(r.host, r.flags) for r in found.flagged] == [("n9", ["file running: the run did not finish"])]
    assert "Older files of the same host and GPU, not counted:" in fleet.markdown(found)


def test_cpu_files_give_no_rows_and_the_markdown_follows_min_group(tmp_path) -> None:
    from xferbench.core.results import Result, Series

    cpu = Result(environment={"host": "laptop"}, config={}, created="x",
                 series=[Series("torch", "pageable", "copy", "cpu", [1], points=[])], status="complete")  # fmt: skip
    write(cpu, tmp_path)
    for i in range(5):
        write(node(f"n{i}"), tmp_path)
    found = fleet.read_fleet([tmp_path], min_group=6)
    assert len(found.rows) == 5 and found.unreadable == [(str(tmp_path / "laptop.json"), "no CUDA series measured anything in it")]
    assert "5 GPU(s), median" in fleet.markdown(found) and "too few to judge" in fleet.markdown(found)


def test_a_checks_own_words_become_flags() -> None:
    assert fleet._check_flags({"status": "pass", "findings": [{"name": "link", "status": "pass"}]}) == []
    assert fleet._check_flags({"status": "fail", "findings": [{"name": "link", "status": "fail"}, {"name": "reference", "status": "fail"},
                                                               {"name": "replays", "status": "warn"}]}) == \
        ["check FAIL: link, reference", "replays rose"]  # fmt: skip
    assert fleet._check_flags({"status": "n/a", "findings": [{"name": "link", "status": "n/a"}, {"name": "link state", "status": "warn"}]}) == \
        ["check judged nothing"]  # fmt: skip
    assert fleet._check_flags({}) == []


def test_the_csv_has_a_line_per_gpu_with_numbers_left_as_numbers(tmp_path) -> None:
    write(checked(node("n1", raw_gbps=55.0)), tmp_path)
    lone = node("n2", raw_gbps=40.0)
    lone.series = [s for s in lone.series if s.framework == "cuda"]  # no torch figure: an empty cell
    write(lone, tmp_path)
    found = fleet.read_fleet([tmp_path])
    rows = list(csv.reader(io.StringIO(fleet.to_csv(found))))
    assert rows[0] == ["host", "file", "device", "device_name", "link", "link_max", "batch_size", "raw_ceiling_mbps",
                       "torch/pinned_into/copy mbps", "verdict", "flags", "not_judged"]  # fmt: skip
    by_host = {row[0]: row for row in rows[1:]}
    one = next(r for r in found.rows if r.host == "n1")
    assert by_host["n1"] == ["n1", str(tmp_path / "n1.json"), "cuda:0", one.device_name, one.link, one.link_max, "512",
                             str(one.ceiling_mbps), str(one.paths["torch/pinned_into/copy"]), "PASS", "", ""]  # fmt: skip
    assert by_host["n2"][8:] == ["", "-", "; ".join(next(r for r in found.rows if r.host == "n2").flags), ""]


def test_a_row_per_gpu_from_what_its_file_holds() -> None:
    from pathlib import Path

    from nodes import series

    result = checked(node("n1", raw_gbps=55.0, gpus=2))
    torch0 = next(s for s in result.series if s.device == "cuda:0" and s.framework == "torch")
    torch0.points.insert(0, series("torch", "pinned_into", 20.0, batch=256).points[0])  # a batch the ceiling was not measured at
    result.series.append(dataclasses.replace(series("jax", "device_put", 9.0, device="cuda:2"), status="skipped", points=[]))
    result.series.append(series("torch", "pinned_into", 30.0, device="cuda:3", method="per-call"))  # no raw copy on this GPU
    result.check["devices"].append({"device": "node", "status": "fail", "findings": [{"name": "gpus", "status": "fail",
                                                                                     "figure": "NVML sees 4 GPUs"}]})  # fmt: skip
    result.status = "interrupted"
    rows = {row.device: row for row in fleet.rows_of(Path("n1.json"), result)}
    assert list(rows) == ["cuda:0", "cuda:1", "cuda:3"]  # a skipped series makes no row
    zero, lone = rows["cuda:0"], rows["cuda:3"]
    raw0 = next(s for s in result.series if s.device == "cuda:0" and s.framework == "cuda")
    assert (zero.host, zero.file, zero.device_name, zero.batch_size, zero.measured) == ("n1", "n1.json", H100, 512, "100.7 MB streamed")
    assert zero.ceiling_mbps == raw0.points[-1].mbps and zero.created == result.created and zero.verdict == "PASS"
    assert zero.paths == {"torch/pinned_into/copy": torch0.points[-1].mbps}  # at the ceiling's batch, not batch 256
    assert zero.flags == ["node check FAIL: NVML sees 4 GPUs", "file interrupted: the run did not finish"]
    assert (lone.ceiling_mbps, lone.batch_size, lone.measured, lone.verdict, lone.device_name) == (None, None, "-", "-", H100)
    assert lone.paths == {"torch/pinned_into/copy": None} and lone.link == "Gen5 x16"
    assert lone.flags == ["node check FAIL: NVML sees 4 GPUs", "no raw ceiling measured", "file interrupted: the run did not finish"]
    peer = node("p1", raw_gbps=55.0)
    peer.environment["peer"] = {"tool": "nvbandwidth"}
    (row,) = fleet.rows_of(Path("p1.json"), peer)
    assert row.source == "nvbandwidth" and row.flags == []  # no figure of its own ceiling: not judged, not failing
    assert row.not_judged == ("no nvbandwidth pinned host-to-device figure (host_to_device_memcpy_ce) in the file; run nvbandwidth -t"
                              " host_to_device_memcpy_ce -j and import what it prints")  # fmt: skip


def test_the_table_puts_flagged_gpus_first_with_each_cell_as_shown() -> None:
    rows = [fleet.Row("b", "b.json", "cuda:0", "H100", "Gen5 x16", "Gen5 x16", 512, 55_000.4, paths={"torch/pinned_into/copy": 49_000.6},
                      verdict="PASS"),
            fleet.Row("a", "a.json", "cuda:1", "H100", "Gen5 x8 (max Gen5 x16)", "Gen5 x16", None, None, paths={"torch/pinned_into/copy": None},
                      flags=["link below max", "no raw ceiling measured"]),
            fleet.Row("c", "c.json", "cuda:0", "H100", "-", "-", 512, 54_000.0, source="nvbandwidth")]  # fmt: skip
    header, cells = fleet.table_rows(fleet.Fleet(rows, [], {}))
    assert header == ["host", "GPU", "link", "batch", "raw ceiling MB/s", "torch/pinned_into/copy MB/s", "verdict", "flags"]
    assert cells == [
        ["a", "cuda:1 H100", "Gen5 x8 (max Gen5 x16)", "-", "-", "-", "-", "link below max; no raw ceiling measured"],
        ["b", "cuda:0 H100", "Gen5 x16", "512", "55,000", "49,001", "PASS", "ok"],
        ["c", "cuda:0 H100 (by nvbandwidth)", "-", "512", "54,000", "-", "-", "ok"],
    ]


def test_the_link_column_says_how_the_link_ran_against_its_maximum() -> None:
    narrow = node("n1", under=(5, 8))
    assert fleet._link(narrow.series[0], narrow)[0] == "Gen5 x8 (max Gen5 x16)"
    assert fleet._link(narrow.series[0], narrow)[2] is True
    idle = node("n1")
    idle.series[0].link = {"pcie_gen_max": 5, "pcie_width_max": 16}  # maxima only: nothing read under load
    for device in idle.environment["devices"]:
        device.pop("nvml", None)
    assert fleet._link(idle.series[0], idle) == ("max Gen5 x16", "Gen5 x16", False)
    idle.series[0].link = None
    assert fleet._link(idle.series[0], idle) == ("-", "-", False)


def ceiling_rows(*values: float) -> list[fleet.Row]:
    return [fleet.Row(f"n{i}", f"n{i}.json", "cuda:0", "H100", "Gen5 x16", "Gen5 x16", 512, value, "100.7 MB streamed")
            for i, value in enumerate(values)]  # fmt: skip


def test_a_straggler_is_below_both_bounds_strictly() -> None:
    # no spread: MAD 0; 50 is exactly half the median, on the share's bound, not below it
    on_bound = ceiling_rows(100, 100, 100, 100, 50)
    fleet.stragglers(on_bound, k=3, share=0.5)
    assert not on_bound[-1].flags
    below = ceiling_rows(100, 100, 100, 100, 49)
    fleet.stragglers(below, k=3, share=0.5)
    assert below[-1].flags == ["straggler: 49% of its group's median"]
    # MAD 10: the bound is the median less 3 scaled MADs, 100 - 3 × 1.4826 × 10 = 55.5; 60 is above it
    spread = ceiling_rows(90, 100, 110, 100, 60)
    fleet.stragglers(spread, k=3, share=0.1)
    assert not spread[-1].flags
    small = ceiling_rows(100, 100, 100, 40)
    fleet.stragglers(small, k=3, share=0.1, min_group=5)
    assert not small[-1].flags  # four GPUs: fewer than the group needed


def test_read_fleet_passes_min_group_on_and_lists_damage_from_every_file(tmp_path) -> None:
    import json

    for i, gbps in enumerate((55.0, 55.4, 54.6, 20.0)):
        write(node(f"node{i}", raw_gbps=gbps), tmp_path)
    assert not fleet.read_fleet([tmp_path], min_group=5).flagged
    assert [r.host for r in fleet.read_fleet([tmp_path], min_group=4).flagged] == ["node3"]
    for name in ("node0", "node1"):
        data = json.loads((tmp_path / f"{name}.json").read_text())
        data["series"][1]["points"][0]["n"] += 1
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
    assert [path.rsplit("/", 1)[-1] for path, _ in fleet.read_fleet([tmp_path]).damaged] == ["node0.json", "node1.json"]
    empty = tmp_path / "empty"
    empty.mkdir()
    for i in range(4):
        (empty / f"bad{i}.json").write_text("{")
    with pytest.raises(XferbenchError) as refused:
        fleet.read_fleet([empty])
    assert str(refused.value).startswith("no GPU figures in 4 file(s): ") and str(refused.value).count("bad") == 3


def test_a_link_that_woke_from_idle_is_named_by_what_it_ran_at_most(tmp_path) -> None:
    """Gen1 in the first loaded sample (the link waking), Gen4 x8 in the other seven: the row says Gen4 x8."""
    from nodes import link

    result = node("w", under=(4, 8))
    result.series = [dataclasses.replace(s, link=link(4, 8, waking=1)) for s in result.series]
    rows = fleet.rows_of(tmp_path / "w.json", result)
    assert [(r.link, r.link_max, "link below max" in r.flags) for r in rows] == [("Gen4 x8 (max Gen5 x16)", "Gen5 x16", True)]
    result.series = [dataclasses.replace(s, link=link(5, 16, waking=1)) for s in result.series]
    assert [r.link for r in fleet.rows_of(tmp_path / "w.json", result)] == ["Gen5 x16"]  # woke, then ran at its maximum


def test_transferbench_p2p_imports_leave_every_gpu_not_judged_and_the_exit_status_alone(tmp_path) -> None:
    """The p2p preset's host rows are CPU-thread copies: no DMA copy from pinned memory (dma_c0), TransferBench's ceiling.
    A GPU without it is not judged, saying what to run for it; nothing failed, so fleet exits 0; a GPU judged still counts."""
    import amd_outputs as amd

    from xferbench.reading.peers import read_transferbench

    paste = tmp_path / "p2p.txt"
    paste.write_text(amd.CLUSTER_P2P)
    folder = tmp_path / "fleet"
    folder.mkdir()
    for host in ("mi-a", "mi-b"):
        imported = read_transferbench([paste])
        imported.environment["host"] = host
        write(imported, folder)
    found = fleet.read_fleet([folder])
    assert found.gpus == 16 and found.flagged == [] and len(found.not_judged) == 16
    row = next(r for r in found.rows if (r.host, r.device) == ("mi-b", "cuda:3"))
    assert row.not_judged == ("no TransferBench pinned host-to-device figure (dma_c0) in the file; run TransferBench with"
                              " OUTPUT_TO_CSV=1 on a config file of the line '1 1 (C0 D3 G3)' (its DMA engine's copy from pinned"
                              " memory) and import what it prints")  # fmt: skip
    said = CliRunner().invoke(app, ["fleet", str(folder), "--markdown", str(tmp_path / "f.md")])
    assert said.exit_code == 0, said.output
    assert "16 GPU(s), 0 flagged, 16 not judged" in said.stdout and "not counted in the exit status" in said.stderr
    assert "16 GPU(s) from 2 file(s); 0 flagged, 16 not judged." in (tmp_path / "f.md").read_text()
    header, cells = fleet.table_rows(found)
    assert all(c[-1].startswith("not judged: no TransferBench pinned host-to-device figure") for c in cells)
    write(checked(node("slow", raw_gbps=38.0)), folder)  # a GPU judged and failing its check still sets the exit status
    assert CliRunner().invoke(app, ["fleet", str(folder)]).exit_code == 1
