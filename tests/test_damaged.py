"""Readers trust nothing they read: a damaged point is named and left out of every figure and verdict,
and a file with nothing usable is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import unwrapped
from test_pairing import sweep_file
from xferbench.reading import report
from xferbench.cli import app
from xferbench.reading.compare import compare_files
from xferbench.core.errors import XferbenchError
from xferbench.core.results import DAMAGED, load, select


def damage(path: Path, how: str, series: int | None = None, batches: tuple[int, ...] | None = None) -> Path:
    """Rewrite points of a real-shaped file as a torn copy, a bad editor or a bug would leave them."""
    data = json.loads(path.read_text())
    for number, found in enumerate(data["series"]):
        if series is not None and number != series:
            continue
        for point in found["points"]:
            if batches is not None and point["batch_size"] not in batches:
                continue
            if how == "nan":
                point["times_s"] = [float("nan")] * len(point["times_s"])
            elif how == "negative":
                point["times_s"] = [-t for t in point["times_s"]]
            elif how == "one negative":  # the median is unchanged: only the sign tells
                lowest = min(range(len(point["times_s"])), key=lambda i: point["times_s"][i])
                point["times_s"][lowest] *= -1
            elif how == "count":  # every time intact, the count not theirs
                point["n"] += 5
            elif how == "median":
                point["times_s"] = [t * 2 for t in point["times_s"]]
    path.write_text(json.dumps(data))  # json writes NaN as NaN, which json.loads reads back
    return path


@pytest.mark.parametrize("how", ["nan", "negative", "one negative", "count", "median"])
def test_a_damaged_point_is_named_and_left_out_of_every_figure(tmp_path, how) -> None:
    path = damage(sweep_file(tmp_path / "r.json", {}), how, series=0, batches=(512,))
    result = load(path)
    torch = result.series[0]
    (bad,) = [p for p in torch.points if p.status == DAMAGED]
    assert bad.batch_size == 512 and bad.error.startswith("damaged in the file: ")
    assert 512 not in [p.batch_size for p in torch.ok_points()] and torch.summary.peak_batch_size != 512
    picks, empty = select([path])
    text = report.render(picks, empty)
    assert f"- **damaged** {path}: 1 point(s) left out" in text and "torch/pageable/copy@cpu batch 512" in text


def test_compare_leaves_damaged_points_out_and_names_them(tmp_path) -> None:
    base = sweep_file(tmp_path / "base.json", {}, seed=1)
    new = damage(sweep_file(tmp_path / "new.json", {}, seed=2), "negative", series=1, batches=(256, 512))
    comparison = compare_files(base, new)
    assert not any(r.series == "tf/eager/copy@cpu" and r.batch_size in (256, 512) for r in comparison.rows)
    assert [d.split(" (")[0] for d in comparison.damaged["new"]] == ["tf/eager/copy@cpu batch 256", "tf/eager/copy@cpu batch 512"]
    result = CliRunner().invoke(app, ["compare", str(base), str(new), "--json"])
    assert json.loads(result.stdout)["damaged"]["new"] == comparison.damaged["new"]
    table = CliRunner().invoke(app, ["compare", str(base), str(new)], env={"COLUMNS": "200"})
    assert f"left out, damaged in {new}: tf/eager/copy@cpu batch 256" in table.stdout


@pytest.mark.parametrize("how", ["nan", "negative"])
def test_a_file_with_nothing_usable_is_refused_never_turned_into_a_verdict(tmp_path, how) -> None:
    base = sweep_file(tmp_path / "base.json", {}, seed=1)
    damaged = damage(sweep_file(tmp_path / "damaged.json", {}, seed=2), how)
    with pytest.raises(XferbenchError, match="every measured point is damaged"):
        load(damaged)
    for command in (["compare", str(base), str(damaged)], ["report", str(damaged)], ["plot", str(damaged), "-o", str(tmp_path / "p.png")]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2 and "every measured point is damaged" in result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.output


def test_plot_warns_of_the_points_it_left_out(tmp_path) -> None:
    path = damage(sweep_file(tmp_path / "r.json", {}), "nan", series=2, batches=(1,))
    result = CliRunner().invoke(app, ["plot", str(path), "-o", str(tmp_path / "p.png")])
    assert result.exit_code == 0 and "left out 1 damaged point(s): tf/function/copy@cpu batch 1" in " ".join(result.stderr.split())


def test_fleet_names_a_damaged_node_file_and_judges_the_others(tmp_path) -> None:
    from nodes import node, write

    from xferbench.health import fleet

    for i, gbps in enumerate((55.0, 55.4, 54.6)):
        write(node(f"node{i}", raw_gbps=gbps), tmp_path)
    bad = write(node("torn", raw_gbps=14.0), tmp_path)
    data = json.loads(Path(bad).read_text())
    for series in data["series"]:
        for point in series["points"]:
            point["times_s"] = [float("nan")] * len(point["times_s"])  # a torn or hand-edited file
    Path(bad).write_text(json.dumps(data))
    found = fleet.read_fleet([tmp_path])
    assert sorted(row.host for row in found.rows) == ["node0", "node1", "node2"] and not found.flagged
    ((path, why),) = found.unreadable
    assert path == str(bad) and why.startswith("every measured point is damaged")


def test_import_names_figures_a_peer_could_not_have_measured_and_keeps_the_rest(tmp_path) -> None:
    import peer_outputs as out

    from xferbench.reading.peers import read_bandwidthtest, read_nvbandwidth

    gpus = tuple((out.H100, f"00000000:{bus}:00") for bus in ("1b", "43", "52", "61", "9d"))
    text = out.nvbandwidth(out.passed(out.H2D_CE, "55.3", "nan", "-54.9", "inf", "0"), gpus=gpus)
    nvb = tmp_path / "nvb.json"
    nvb.write_text(text)
    result = read_nvbandwidth([nvb], 512)
    statuses = {s.device: (s.points[0].status, s.points[0].error) for s in result.series}
    assert statuses["cuda:0"] == ("ok", None)
    for device, cell in (("cuda:1", "nan"), ("cuda:2", "-54.9"), ("cuda:3", "inf"), ("cuda:4", "0")):
        assert statuses[device] == ("skipped", f"{cell} GB/s in nvbandwidth's matrix: not a figure"), device
    bt = tmp_path / "bt.txt"
    bt.write_text(out.bandwidthtest(out.csv_line("H2D-Pinned", 25.9, 32_000_000),
                                    out.csv_line("H2D-Pinned", 26.0, 64_000_000).replace("26.0 GB/s", "-26.0 GB/s"),
                                    out.csv_line("H2D-Pinned", 26.0, 96_000_000).replace("26.0 GB/s", "nan GB/s")))  # fmt: skip
    (pinned,) = read_bandwidthtest([bt]).series
    assert [(p.bytes, p.status) for p in pinned.points] == [(32_000_000, "ok"), (64_000_000, "skipped"), (96_000_000, "skipped")]
    assert [p.error for p in pinned.points[1:]] == ["bandwidthTest printed -26.0 GB/s", "bandwidthTest printed nan GB/s"]
    nothing = tmp_path / "nothing.txt"
    nothing.write_text(out.bandwidthtest(out.csv_line("H2D-Pinned", 26.0, 64_000_000).replace("26.0 GB/s", "-26.0 GB/s")))
    said = CliRunner().invoke(app, ["import", "bandwidthtest", str(nothing), "-o", str(tmp_path / "r.json")])
    assert said.exit_code == 2 and said.stderr.count("\n") == 1 and "no host<->device figure" in said.stderr
    assert not (tmp_path / "r.json").exists()


def test_fleet_names_a_damaged_point_and_does_not_judge_by_it(tmp_path) -> None:
    from nodes import node, write

    for i, gbps in enumerate((55.0, 55.4, 54.6)):
        write(node(f"node{i}", raw_gbps=gbps), tmp_path)
    odd = write(node("odd", raw_gbps=30.0), tmp_path)
    data = json.loads(odd.read_text())
    data["series"][0]["points"][-1]["n"] += 5  # the raw copy's count no longer its samples'
    odd.write_text(json.dumps(data))
    said = CliRunner().invoke(app, ["fleet", str(tmp_path), "--markdown", str(tmp_path / "fleet.md")])
    warning = f"{odd}: left out 1 damaged point(s): cuda/raw_pinned/copy/streamed@cuda:0 batch 512 (n is 25"
    assert unwrapped(warning) in unwrapped(said.stderr), said.output
    assert f"- {odd}: cuda/raw_pinned/copy/streamed@cuda:0 batch 512 (n is 25" in (tmp_path / "fleet.md").read_text()
    (row,) = [line for line in said.stdout.splitlines() if line.startswith("│ odd")]
    assert "30,000" not in row and "straggler" not in row  # the damaged 30 GB/s set no figure and no flag
    assert unwrapped("raw ceiling damaged in the file") in unwrapped(said.stdout)


def test_a_point_whose_bytes_are_not_its_batch_times_its_item_is_left_out(tmp_path) -> None:
    """Bytes and MB/s both doubled read as twice the speed; a report once printed 177% of the link from it."""
    path = sweep_file(tmp_path / "a.json", {})
    data = json.loads(path.read_text())
    point = data["series"][0]["points"][-1]  # torch, batch 512
    point["bytes"] *= 2
    point["mbps"] *= 2
    path.write_text(json.dumps(data))
    result = load(path)
    bad = next(p for p in result.series[0].points if p.batch_size == 512)
    assert bad.status == DAMAGED and "bytes, not batch 512 × 196,608 bytes per item" in (bad.error or "")
    assert result.series[0].summary.peak_batch_size != 512
    assert sum(p.status == DAMAGED for s in result.series for p in s.points) == 1  # the bidir rule is no false alarm elsewhere


def test_a_batch_recorded_twice_in_a_series_is_neither_point(tmp_path) -> None:
    a = sweep_file(tmp_path / "a.json", {}, seed=1)
    b = sweep_file(tmp_path / "b.json", {}, seed=2)
    data = json.loads(b.read_text())
    points = data["series"][0]["points"]
    twin = dict(points[3])
    twin["times_s"] = [t / 3 for t in twin["times_s"]]
    twin["median_s"] /= 3
    twin["mbps"] *= 3
    points.append(twin)  # batch 8 again, three times as fast
    b.write_text(json.dumps(data))
    twice = [p for p in load(b).series[0].points if p.batch_size == 8]
    assert len(twice) == 2 and all(p.status == DAMAGED and "batch 8 appears 2 times" in (p.error or "") for p in twice)
    comparison = compare_files(a, b)
    assert not any(r.batch_size == 8 and r.series.startswith("torch/") for r in comparison.rows)
    assert any("batch 8 (batch 8 appears 2 times in this series)" in d for d in comparison.damaged["new"])


def test_a_file_too_large_or_nested_too_deep_is_one_line(tmp_path, monkeypatch) -> None:
    from xferbench.core.results import MAX_FILE_MB_ENV

    path = sweep_file(tmp_path / "a.json", {})
    monkeypatch.setenv(MAX_FILE_MB_ENV, "0.001")  # 1 kB: the file is larger
    with pytest.raises(XferbenchError, match=r"a\.json: [\d.]+ MB, larger than the 0\.001 MB a result file is read up to; if it really"
                                             r" is one, set XFERBENCH_MAX_FILE_MB higher") as error:  # fmt: skip
        load(path)
    assert "\n" not in str(error.value)
    monkeypatch.setenv(MAX_FILE_MB_ENV, "lots")
    with pytest.raises(XferbenchError, match="XFERBENCH_MAX_FILE_MB='lots': give a size in MB"):
        load(path)
    monkeypatch.delenv(MAX_FILE_MB_ENV)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    result = CliRunner().invoke(app, ["report", str(deep)])
    assert result.exit_code == 2 and "deep.json: not an xferbench result file (JSON nested too deeply)" in result.output
    assert "Traceback" not in result.output


def test_a_damaged_bidir_point_names_its_item_and_a_damaged_point_in_new_fails_ci(tmp_path) -> None:
    from xferbench.reading.compare import compare_files

    base = Path(__file__).resolve().parent.parent / "results" / "sim" / "gpu-a-25gbps.json"
    data = json.loads(base.read_text())
    bidir = next(s for s in data["series"] if s.get("direction") == "bidir")
    bidir["points"][0]["bytes"] //= 2
    bidir["points"][0]["mbps"] /= 2
    torn = tmp_path / "torn.json"
    torn.write_text(json.dumps(data))
    (why,) = [d for d in damaged_points_of(torn) if "bidir" in d]
    assert "196,608 bytes, not 2 × batch 1 × 196,608 bytes per item" in why
    comparison = compare_files(base, torn)
    assert comparison.regressed and any(f.batch_size == 1 and "damaged in the file" in f.error for f in comparison.failed)


def damaged_points_of(path: Path) -> list[str]:
    from xferbench.core.results import damaged_points

    return damaged_points(load(path))


def retyped(path: Path, series: int | None, field: str, value: object) -> Path:
    """A real-shaped file with one series' field (every series' where `series` is None) set to a value of another JSON type."""
    data = json.loads(path.read_text())
    for number, found in enumerate(data["series"]):
        if series is None or number == series:
            found[field] = value
    path.write_text(json.dumps(data))
    return path


def readers(tmp_path: Path, base: Path, path: Path) -> dict[str, Any]:
    """compare --json (each way), report and plot on a file: what each said, through the command line."""
    runner = CliRunner()
    return {"compare": runner.invoke(app, ["compare", str(base), str(path), "--json"]),
            "compare back": runner.invoke(app, ["compare", str(path), str(base), "--json"]),
            "report": runner.invoke(app, ["report", str(path)]),
            "plot": runner.invoke(app, ["plot", str(path), "-o", str(tmp_path / "p.png")])}  # fmt: skip


@pytest.mark.parametrize(("field", "value", "what"), [
    ("device", None, "null"), ("device", 3, "3"), ("device", ["cuda:0"], "a list"), ("mode", None, "null"), ("mode", 3, "3"),
    ("mode", ["eager"], "a list"), ("device_name", 3, "3"), ("device_name", ["GPU"], "a list"), ("device_name", {}, "an object"),
])  # fmt: skip
def test_a_series_field_of_the_wrong_type_is_named_and_its_series_left_out_never_a_traceback(tmp_path, field, value, what) -> None:
    base = sweep_file(tmp_path / "base.json", {}, seed=1)
    path = retyped(sweep_file(tmp_path / "new.json", {}, seed=2), 1, field, value)
    key = field != "device_name"  # a key field: the series cannot be named, so it is left out; a description is read as absent
    named = (f"series 1 '{field}' is {what}, expected a string; the series is left out" if key
             else f"tf/eager/copy@cpu '{field}' is {what}, expected a string, or null; read as absent")  # fmt: skip
    said = readers(tmp_path, base, path)
    for command, result in said.items():
        assert result.exit_code in (0, 1), (command, result.output)
        assert "Traceback" not in result.output and result.exception is None or isinstance(result.exception, SystemExit)
    data = json.loads(said["compare"].stdout)
    assert named in data["damaged"]["new"] and json.loads(said["compare back"].stdout)["damaged"]["base"] == data["damaged"]["new"]
    assert any(r["series"] == "tf/eager/copy@cpu" for r in data["rows"]) is not key  # left out of every verdict, or kept whole
    assert f"- **damaged** {path}: 1 point(s) left out, their samples cannot be what a run wrote: {named}" in said["report"].stdout
    assert f"{path}: left out 1 damaged point(s): {named}" in " ".join(said["plot"].stderr.split())


@pytest.mark.parametrize(("value", "what"), [(None, "null"), (3, "3"), (["cuda:0"], "a list")])
def test_a_file_whose_every_series_is_damaged_is_refused_in_one_line(tmp_path, value, what) -> None:
    base = sweep_file(tmp_path / "base.json", {}, seed=1)
    path = retyped(sweep_file(tmp_path / "a.json", {}, seed=2), None, "device", value)
    for command, result in readers(tmp_path, base, path).items():
        assert result.exit_code == 2, (command, result.output)
        assert result.stderr == (f"error: {path}: series 0 'device' is {what}, expected a string; nothing in it can be used:"
                                 " measure again\n"), command  # fmt: skip
