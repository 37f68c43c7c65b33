"""Two runs compared as a bug report needs: every path beside its counterpart, what differs, verdicts
that compare --json repeats, and busy points that never set a headline figure unnamed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from xferbench.reading import compare as comparing
from xferbench.reading import report
from xferbench.cli import app
from rich.console import Console

from xferbench.reading.display import series_table, summary_line
from xferbench.reading.pairs import differences, pair, tags
from xferbench.core.results import Point, Result, Series, load, select
from xferbench.core.spec import HOST_TO_HOST, SeriesKey
from xferbench.core.timing import Samples

SHAPE = (256, 256, 3)
BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
PATHS = (("torch", "pageable"), ("tf", "eager"), ("tf", "function"), ("tf", "jit"), ("jax", "device_put"), ("host", "numpy"))
TUNABLES = "glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=1073741824"
ENV: dict[str, Any] = {
    "host": "ci-1", "os": "Linux-6.1", "cpu": "AMD EPYC", "cpu_count": 2, "python": "3.12.1", "settings": {},
    "versions": {"numpy": "2.1.0"}, "frameworks": {"torch": {"version": "2.13.0"}, "tensorflow": {"version": "2.21.0"}},
    "devices": [{"id": "cpu", "kind": "cpu", "name": "AMD EPYC"}],
}  # fmt: skip


def curve(framework: str, mode: str, mbps: dict[int, float], device: str = "cpu", busy: tuple[int, ...] = (),
          seed: int = 0) -> Series:  # fmt: skip
    """A series of 20 samples a point, spread 1% around the MB/s asked for, as a quiet machine gives."""
    key = SeriesKey(framework, mode, "copy", device, SHAPE)
    series = Series.of(key)
    series.device_name, series.transfer, series.clock = "AMD EPYC" if device == "cpu" else f"GPU {device}", HOST_TO_HOST, "time.perf_counter"
    rng = np.random.default_rng(seed)
    for batch, rate in mbps.items():
        spec = key.at(batch)
        times = [spec.nbytes / (rate * 1e6) * (1 + 0.01 * e) for e in rng.standard_normal(20)]
        point = Point.measured(spec, Samples(times), warmup_calls=1)
        if batch in busy:
            point.others_cpus, point.cpus = 1.0, 2
        series.points.append(point)
    series.refresh_summary()
    return series


def base_rate(batch: int) -> float:
    return 20000.0 * batch / (batch + 4)


def sweep_file(path: Path, settings: dict[str, str], tf_speedup: float = 1.0, busy: tuple[int, ...] = (), seed: int = 0) -> Path:
    """A default CPU sweep's six paths; TensorFlow's eager and function paths run `tf_speedup` times faster
    from batch 256 (what keeping large blocks on the heap does)."""
    series = []
    for number, (framework, mode) in enumerate(PATHS):
        faster = framework == "tf" and mode in ("eager", "function")
        rates = {b: base_rate(b) * (tf_speedup if faster and b >= 256 else 1.0) for b in BATCHES}
        series.append(curve(framework, mode, rates, busy=busy if framework == "torch" else (), seed=seed * 100 + number))
    config = {"argv": ["xferbench", "sweep", "-o", path.name], "timing": {"warmup_calls": 5, "min_samples": 10}}
    Result({**ENV, "settings": settings}, config, "2026-11-23T00:00:00+00:00", series, "complete", xferbench_version="0.1.0").save(path)
    return path


@pytest.fixture()
def two(tmp_path: Path) -> tuple[Path, Path]:
    return (sweep_file(tmp_path / "before.json", {}, seed=1),
            sweep_file(tmp_path / "tunables.json", {"GLIBC_TUNABLES": TUNABLES}, tf_speedup=2.0, seed=2))  # fmt: skip


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def table_after(text: str, heading: str) -> list[list[str]]:
    body = text.split(f"### {heading}", 1)[1].split("\n### ", 1)[0]
    return [cells(line) for line in body.splitlines() if line.startswith("|")][2:]


def test_a_changed_setting_and_every_path_paired_fit_in_the_first_60_lines(two) -> None:
    picks, empty = select(list(two))
    text = report.render(picks, empty)
    head = "\n".join(text.splitlines()[:60])
    assert head.startswith("## xferbench report: before vs tunables")
    assert table_after(head, "What differs") == [["GLIBC_TUNABLES", "unset", TUNABLES]]  # the one recorded difference
    paths = {row[0]: row for row in table_after(head, "Each path, tunables against before")}
    assert list(paths) == ["`torch/pageable/copy`", "`tf/eager/copy`", "`tf/function/copy`", "`tf/jit/copy`",
                           "`jax/device_put/copy`", "`host/numpy/copy`"]  # fmt: skip
    assert paths["`tf/eager/copy`"][4] == "faster at 2 of 10, no change at 8"
    assert paths["`torch/pageable/copy`"][4] == "no change at 10 of 10"
    assert paths["`tf/eager/copy`"][1].endswith("@ 512") and paths["`tf/eager/copy`"][3] == "2.00×"
    grid = {row[0]: row[1:] for row in table_after(head, "Ratio at each batch")}
    assert list(grid) == [str(b) for b in BATCHES]
    assert grid["512"][1] == "2.00× ▲" and grid["512"][0].endswith("× =")
    # per path, one block: the path named once, then its batches in both files with ratio, p and verdict
    block = table_after(text, "MB/s by batch, path by path")
    eager = block[10:20]  # torch's ten rows come first
    assert eager[0][0] == "`tf/eager/copy`" and [row[1] for row in eager] == [str(b) for b in BATCHES]
    assert eager[-1][4:] == ["2.00×", "<1e-6", "faster"]


def test_the_report_and_compare_give_the_same_verdicts(two) -> None:
    comparison = comparing.compare_files(*two)
    picks, empty = select(list(two))
    block = table_after(report.render(picks, empty), "MB/s by batch, path by path")
    path, from_report = "", {}
    for row in block:
        path = row[0].strip("`") or path
        from_report[(path, int(row[1]))] = row[6]
    assert {(r.series.rsplit("@", 1)[0], r.batch_size): r.verdict for r in comparison.rows} == from_report
    lines = comparing.difference_lines(comparison.differences)
    assert lines == [f"what differs: GLIBC_TUNABLES: unset → {TUNABLES}"]


def test_compare_json_parses_and_carries_the_same_verdicts(two) -> None:
    result = CliRunner().invoke(app, ["compare", str(two[1]), str(two[0]), "--json"])
    assert result.exit_code == 1  # tunables → before: TensorFlow slower at 256 and 512
    data = json.loads(result.stdout)
    comparison = comparing.compare_files(two[1], two[0])
    assert [(r["series"], r["batch_size"], r["verdict"]) for r in data["rows"]] == \
        [(r.series, r.batch_size, r.verdict) for r in comparison.rows]  # fmt: skip
    assert data["counts"] == {"slower": 4, "faster": 0, "no change": 56, "inconclusive": 0} and data["regressed"]
    assert data["differences"] == [{"field": "GLIBC_TUNABLES", "base": TUNABLES, "new": "unset"}]
    slow = next(r for r in data["rows"] if r["series"] == "tf/eager/copy@cpu" and r["batch_size"] == 512)
    assert slow["ratio"] == pytest.approx(0.5, rel=0.02) and slow["p_value"] < 1e-6 and slow["method"] == "mann-whitney"
    # every field a script reads, by name (docs/usage.md lists them)
    assert list(data) == ["base", "new", "threshold", "alpha", "regressed", "fail_on", "exit_status", "summary", "counts",
                          "unlike_copies", "busy_points", "paths", "differences", "rows", "failed", "unmatched", "damaged", "caveat"]  # fmt: skip
    assert [p["path"] for p in data["paths"] if p["regressed"]] == ["tf/eager/copy@cpu", "tf/function/copy@cpu"]
    assert (data["base"], data["new"], data["threshold"], data["alpha"]) == (str(two[1]), str(two[0]), 0.05, 0.01)
    assert data["summary"] == comparison.summary() and data["caveat"] == comparing.CAVEAT
    assert data["failed"] == [] and data["unmatched"] == [] and data["damaged"] == comparison.damaged
    assert list(slow) == ["series", "batch_size", "base_mbps", "new_mbps", "ratio", "p_value", "method", "significant", "verdict", "busy",
                          "unlike"]  # fmt: skip
    row = next(r for r in comparison.rows if r.series == "tf/eager/copy@cpu" and r.batch_size == 512)
    assert (slow["base_mbps"], slow["new_mbps"], slow["significant"], slow["verdict"], slow["busy"]) == \
        (row.base_mbps, row.new_mbps, True, "slower", [])  # fmt: skip
    table = CliRunner().invoke(app, ["compare", str(two[1]), str(two[0])], env={"COLUMNS": "120"})
    assert table.exit_code == 1 and "4 slower, 0 faster, 56 no change, 0 inconclusive" in " ".join(table.stdout.split())
    assert "what differs: GLIBC_TUNABLES:" in table.stdout


def test_compare_alpha_sets_the_significance_level(two) -> None:
    # 20 samples a side, wholly apart: p ≈ 7e-8, significant at 0.01, not at 1e-9
    strict = CliRunner().invoke(app, ["compare", str(two[1]), str(two[0]), "--json", "--alpha", "1e-9"])
    data = json.loads(strict.stdout)
    assert strict.exit_code == 0 and data["alpha"] == 1e-9 and data["counts"]["slower"] == 0
    assert data["counts"]["inconclusive"] == 4
    bad = CliRunner().invoke(app, ["compare", str(two[0]), str(two[1]), "--alpha", "5%"])
    assert bad.exit_code == 2 and "--alpha '5%': give a probability between 0 and 1" in bad.output


def test_identical_runs_say_no_recorded_difference(tmp_path) -> None:
    a, b = sweep_file(tmp_path / "a.json", {}, seed=1), sweep_file(tmp_path / "b.json", {}, seed=2)
    picks, empty = select([a, b])
    text = report.render(picks, empty)
    assert "No recorded difference" in text.split("### Each path", 1)[0]
    assert comparing.difference_lines(comparing.compare_files(a, b).differences)[0].startswith(
        "what differs: no recorded difference")


def test_differences_name_versions_devices_and_drivers_and_tags_say_them(tmp_path) -> None:
    gpu = {"id": "cuda:0", "kind": "cuda", "name": "NVIDIA H100", "driver": "550.54", "cuda_driver": "12.4"}
    one = Result({**ENV, "devices": [gpu]}, {}, "x", [curve("torch", "pinned", {4: 1e4}, device="cuda:0")])
    other_gpu = {**gpu, "name": "NVIDIA A100", "driver": "535.1"}
    env = {**ENV, "devices": [other_gpu], "frameworks": {"torch": {"version": "2.14.0"}}}
    two_ = Result(env, {}, "x", [curve("torch", "pinned", {4: 1e4}, device="cuda:0")])
    two_.series[0].device_name = "NVIDIA A100"
    one.series[0].device_name = "NVIDIA H100"
    found = differences([(one, one.series), (two_, two_.series)])
    assert [(d.field, d.values) for d in found] == [("device", ["NVIDIA H100", "NVIDIA A100"]), ("driver", ["550.54", "535.1"]),
                                                    ("torch", ["2.13.0", "2.14.0"]), ("tensorflow", ["2.21.0", "—"])]  # fmt: skip
    assert tags(["A", "B"], found) == ["A: NVIDIA H100; driver 550.54", "B: NVIDIA A100; driver 535.1"]
    setting = differences([(Result({**ENV, "settings": {}}, {}, "x"), []), (Result({**ENV, "settings": {"OMP_NUM_THREADS": "1"}}, {}, "x"), [])])
    assert tags(["A", "B"], setting) == ["A", "B: OMP_NUM_THREADS=1"]


def test_counterparts_pair_across_devices_by_id_first_and_none_is_dropped() -> None:
    a = [curve("torch", "pinned", {4: 1e4}, device="cuda:0"), curve("torch", "pinned", {4: 1e4}, device="cuda:1"),
         curve("tf", "eager", {4: 1e4}, device="cuda:0")]  # fmt: skip
    b = [curve("torch", "pinned", {4: 1e4}, device="cuda:1"), curve("torch", "pinned", {4: 1e4}, device="cuda:0"),
         curve("jax", "device_put", {4: 1e4}, device="cuda:0")]  # fmt: skip
    pairs = pair([a, b])
    assert [(p.name, [m.device if m else None for m in p.members]) for p in pairs] == [
        ("torch/pinned/copy@cuda:0", ["cuda:0", "cuda:0"]), ("torch/pinned/copy@cuda:1", ["cuda:1", "cuda:1"]),
        ("tf/eager/copy", ["cuda:0", None]), ("jax/device_put/copy", [None, "cuda:0"])]  # fmt: skip
    # one GPU a file: the paths pair whatever the device (GPU A on cuda:0, GPU B on cuda:3)
    one = pair([[curve("torch", "pinned", {4: 1e4}, device="cuda:0")], [curve("torch", "pinned", {4: 1e4}, device="cuda:3")]])
    assert len(one) == 1 and one[0].paired and one[0].name == "torch/pinned/copy"
    # another host buffer or direction is another path
    other = curve("torch", "pinned", {4: 1e4}, device="cuda:0")
    other.host_buffer = "aligned"
    assert not pair([[a[0]], [other]])[0].paired


def test_compare_pairs_one_gpu_with_another_and_names_both_devices(tmp_path) -> None:
    gpu = {"id": "cuda:0", "kind": "cuda", "name": "GPU"}
    Result({**ENV, "devices": [gpu]}, {}, "x", [curve("torch", "pinned", {4: 1e4, 8: 1e4}, device="cuda:0")]).save(tmp_path / "a.json")
    Result({**ENV, "devices": [gpu]}, {}, "x", [curve("torch", "pinned", {4: 5e3, 8: 1e4}, device="cuda:2", seed=3)]).save(tmp_path / "b.json")
    comparison = comparing.compare_files(tmp_path / "a.json", tmp_path / "b.json")
    assert [(r.series, r.batch_size, r.verdict) for r in comparison.rows] == [
        ("torch/pinned/copy@cuda:0→cuda:2", 4, "slower"), ("torch/pinned/copy@cuda:0→cuda:2", 8, "no change")]  # fmt: skip


def test_a_busy_point_never_sets_the_peak_the_cliff_or_the_saturation_unnamed() -> None:
    # A torch batch measured busy at 59 MB/s between 64,509 and 60,000 once made a 100% "cliff".
    cliff = curve("torch", "pageable", {8: 70000.0, 16: 64509.0, 32: 59.0, 64: 60000.0}, busy=(32,))
    assert not cliff.summary.cliff and cliff.summary.peak_mbps == pytest.approx(70000, rel=0.02)
    assert cliff.summary.busy_batch_sizes == [32] and not cliff.summary.busy_only
    assert "batch 32 measured on a busy machine: left out of these figures" in summary_line(cliff.summary)
    # a busy point far above the rest is not the peak, and does not set the saturation batch
    high = curve("torch", "pageable", {16: 20000.0, 32: 90000.0, 64: 21000.0}, busy=(32,))
    assert high.summary.peak_batch_size == 64 and high.summary.saturation_batch_size == 16
    # every point busy: the figures rest on them, and say so
    every = curve("torch", "pageable", {16: 20000.0, 32: 30000.0}, busy=(16, 32))
    assert every.summary.busy_only and every.summary.peak_batch_size == 32
    assert "every point measured on a busy machine (batch 16, 32)" in summary_line(every.summary)
    clean = curve("torch", "pageable", {8: 70000.0, 16: 64509.0, 32: 59.0, 64: 60000.0})
    assert clean.summary.cliff_batch_size == 32 and not clean.summary.busy_batch_sizes  # the same fall, measured quietly, is a cliff
    # the terminal's table marks the busy point and its caption says what the mark means
    console = Console(width=200, record=True)
    console.print(series_table(cliff, None, console))
    printed = " ".join(console.export_text().split())
    assert "58.8*" in printed and printed.count("*") == 2 and "*: measured on a busy machine" in printed


def test_a_file_is_read_with_its_summary_recomputed_from_its_points(tmp_path) -> None:
    series = curve("torch", "pageable", {8: 70000.0, 16: 64509.0, 32: 59.0, 64: 60000.0}, busy=(32,))
    Result(ENV, {}, "x", [series], "complete").save(tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    data["series"][0]["summary"].update(cliff=True, cliff_batch_size=32, busy_batch_sizes=[])  # as an older writer left it
    (tmp_path / "r.json").write_text(json.dumps(data))
    summary = load(tmp_path / "r.json").series[0].summary
    assert not summary.cliff and summary.busy_batch_sizes == [32]


def test_busy_points_are_one_note_per_file_and_marked_in_every_table(tmp_path) -> None:
    a = sweep_file(tmp_path / "quiet.json", {}, seed=1)
    b = sweep_file(tmp_path / "busy.json", {}, seed=2, busy=(1, 2, 512))
    picks, empty = select([a, b])
    text = report.render(picks, empty)
    notes = text.split("### Notes", 1)[1].split("\n### ", 1)[0]
    busy_notes = [line for line in notes.splitlines() if "busy at" in line]
    assert len(busy_notes) == 1 and f"{b} was busy at 3 of 60 points: torch/pageable/copy@cpu batch 1, 2, 512." in busy_notes[0]
    assert "busy was measured on a busy machine at 3 of 60 points" in text.split("### Each path", 1)[0]
    torch = {row[0]: row for row in table_after(text, "Each path, busy against quiet")}["`torch/pageable/copy`"]
    assert torch[4].endswith("(3 busy)")
    grid = {row[0]: row[1:] for row in table_after(text, "Ratio at each batch")}
    assert grid["512"][0].endswith("*") and not grid["512"][1].endswith("*")
    block = table_after(text, "MB/s by batch, path by path")
    assert block[9][3].endswith(" (busy)") and not block[9][2].endswith(" (busy)")
    detail = text.split("<summary>torch/pageable/copy@cpu (busy)", 1)[1].split("</details>", 1)[0]
    assert "| 512 |" in detail and " (busy) |" in detail.split("| 512 |", 1)[1]


def test_one_file_keeps_series_side_by_side(tmp_path) -> None:
    picks, empty = select([sweep_file(tmp_path / "a.json", {})])
    text = report.render(picks, empty)
    assert "### What differs" not in text and "### MB/s by batch size" in text and text.startswith("## xferbench report\n")


def test_the_committed_example_is_what_report_makes_of_its_files(monkeypatch) -> None:
    """docs/example-report.md, linked from the README, must not drift from the code that makes it
    (scripts/gallery.sh redraws it)."""
    repo = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(repo)
    committed = (repo / "docs" / "example-report.md").read_text()
    picks, empty = select([Path("results/sim/gpu-a-25gbps.json"), Path("results/sim/gpu-b-12gbps.json")])
    title = committed.splitlines()[0].removeprefix("## ")
    made = report.render(picks, empty, plot=Path("docs/example-report.png"), out=Path("docs/example-report.md"), title=title)
    assert made == committed
    assert title.startswith("Simulated example (no data moves)") and "slower at 10 of 10" in made


def test_an_uncertain_median_that_sets_a_figure_is_named_beside_it() -> None:
    from xferbench.reading.display import noisy_points, uncertain_note

    series = curve("torch", "pageable", {8: 20000.0, 16: 30000.0, 32: 25000.0})
    spec = series.key.at(16)
    fast = spec.nbytes / 30000e6
    series.points[1] = Point.measured(spec, Samples([fast] * 10 + [fast * 1.4] * 9), warmup_calls=1)  # calls split two ways
    series.refresh_summary()
    noisy = noisy_points(series)
    assert [p.batch_size for p in noisy] == [16] and series.summary.peak_batch_size == 16
    assert uncertain_note(noisy, series.summary).endswith("; the peak and the saturation batch rest on batch 16")
    assert "rests on" not in uncertain_note(noisy)


def test_a_path_that_failed_in_one_file_is_listed_as_lost_not_as_missing(tmp_path) -> None:
    a = sweep_file(tmp_path / "a.json", {}, seed=1)
    b = sweep_file(tmp_path / "b.json", {}, seed=2)
    data = json.loads(b.read_text())
    data["series"][1].update(status="failed", reason="the worker died", points=[])  # tf/eager measured nothing in b
    b.write_text(json.dumps(data))
    picks, empty = select([a, b])
    text = report.render(picks, empty)
    assert "- `tf/eager/copy@cpu`: only in a (it measured nothing in b: see the notes)" in text
    assert "- **FAILED** " + str(b) + ": tf/eager/copy@cpu FAILED (the worker died)" in text


def test_three_files_ratio_each_to_the_first(tmp_path) -> None:
    files = [sweep_file(tmp_path / f"{name}.json", {}, tf_speedup=speedup, seed=seed)
             for name, speedup, seed in (("a", 1.0, 1), ("b", 2.0, 2), ("c", 0.5, 3))]  # fmt: skip
    picks, empty = select(files)
    text = report.render(picks, empty)
    assert "MB/s of b · c over the first file that has the path" in " ".join(text.split())
    eager = {row[0]: row for row in table_after(text, "Each path, against the first file that has it")}["`tf/eager/copy`"]
    assert eager[4:] == ["2.00×: faster at 2 of 10, no change at 8", "0.98×: slower at 2 of 10, no change at 8"]  # c peaks at 128, below the fall
    grid = {row[0]: row[1:] for row in table_after(text, "Ratio at each batch")}
    assert grid["512"][1] == "2.00× ▲ · 0.50× ▼"


def test_tensorflows_onednn_state_stands_beside_its_version() -> None:
    """oneDNN moves a TensorFlow CPU copy by several times: two runs that differ in it must show it."""
    from xferbench.reading.pairs import framework_version

    env = {"frameworks": {"tf": {"version": "2.21.0", "cuda_build": "12.5.1", "onednn": False}}}
    assert framework_version(env, "tf") == "2.21.0 (built with CUDA 12.5.1), oneDNN off"
    env["frameworks"]["tf"]["onednn"] = True
    assert framework_version(env, "tf") == "2.21.0 (built with CUDA 12.5.1), oneDNN on"
    del env["frameworks"]["tf"]["onednn"]  # a file from before it was recorded
    assert framework_version(env, "tf") == "2.21.0 (built with CUDA 12.5.1)"
