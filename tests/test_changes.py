"""Where each path changed and by how much: the runs of batches that report's first table and compare
state, built from files whose change is known (a cliff removed, a change at small batches only, none)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import unwrapped
from xferbench.reading import compare as comparing
from xferbench.reading import report
from xferbench.cli import app
from xferbench.reading.compare import FASTER, NO_CHANGE, SLOWER, Row, path_changes, runs
from xferbench.core.results import Point, Result, Series, select
from xferbench.core.spec import HOST_TO_HOST, SeriesKey
from xferbench.core.timing import Samples

SHAPE = (256, 256, 3)
CLIFF_BATCHES = (16, 32, 64, 128, 160, 170, 171, 172, 192, 256, 512)
TUNABLES = "glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=1073741824"
ENV: dict[str, Any] = {
    "host": "ci-1", "os": "Linux-6.1-x86_64-with-glibc2.36", "cpu": "AMD EPYC", "cpu_count": 2, "python": "3.12.1",
    "settings": {}, "versions": {"numpy": "2.1.0"}, "frameworks": {"tensorflow": {"version": "2.21.0"}},
    "devices": [{"id": "cpu", "kind": "cpu", "name": "AMD EPYC"}],
}  # fmt: skip


def curve(mode: str, mbps: dict[int, float], busy: tuple[int, ...] = (), seed: int = 0) -> Series:
    """20 samples a point, 1% around the MB/s asked for, as a quiet machine gives (busy: points measured
    while another process held one of the two CPUs)."""
    key = SeriesKey("tf", mode, "copy", "cpu", SHAPE)
    series = Series.of(key)
    series.device_name, series.transfer, series.clock = "AMD EPYC", HOST_TO_HOST, "time.perf_counter"
    rng = np.random.default_rng(seed)
    for batch, rate in mbps.items():
        spec = key.at(batch)
        point = Point.measured(spec, Samples([spec.nbytes / (rate * 1e6) * (1 + 0.01 * e) for e in rng.standard_normal(20)]),
                               warmup_calls=1)  # fmt: skip
        if batch in busy:
            point.others_cpus, point.cpus = 1.0, 2
        point.run_wait = 0.0
        series.points.append(point)
    series.refresh_summary()
    return series


def save(path: Path, series: list[Series], settings: dict[str, str] | None = None) -> Path:
    config = {"argv": ["xferbench", "sweep", "-f", "tf", "-o", path.name], "timing": {"warmup_calls": 5, "min_samples": 10}}
    Result({**ENV, "settings": settings or {}}, config, "2026-11-26T00:00:00+00:00", series, "complete",
           xferbench_version="0.1.0").save(path)  # fmt: skip
    return path


def cliff(batch: int) -> float:
    """TensorFlow's eager copy on glibc defaults: 10 GB/s, then fresh pages on every call from batch 171."""
    return 10_000.0 if batch < 171 else 1_200.0


def tunables(batch: int) -> float:
    """With both thresholds raised: no cliff, but slower below it (what the issue's sweep showed)."""
    return 7_000.0 if batch < 171 else 10_000.0


@pytest.fixture()
def cliff_pair(tmp_path: Path) -> tuple[Path, Path]:
    a = save(tmp_path / "defaults.json", [curve("eager", {b: cliff(b) for b in CLIFF_BATCHES}, seed=1)])
    b = save(tmp_path / "tunables.json", [curve("eager", {b: tunables(b) for b in CLIFF_BATCHES}, seed=2)],
             {"GLIBC_TUNABLES": TUNABLES})  # fmt: skip
    return a, b


def changes_of(a: Path, b: Path) -> list[comparing.PathChange]:
    return comparing.compare_files(a, b).paths


def test_a_removed_cliff_is_two_runs_each_with_its_range(cliff_pair) -> None:
    (change,) = changes_of(*cliff_pair)
    assert [(r.verdict, r.batches) for r in change.runs] == [(SLOWER, (16, 32, 64, 128, 160, 170)), (FASTER, (171, 172, 192, 256, 512))]
    slower, faster = change.runs
    assert 0.68 < slower.low <= slower.high < 0.72 and 8.1 < faster.low <= faster.high < 8.6
    assert change.fastest is not None and change.fastest.ratio == faster.high and change.fastest.batch_size in faster.batches
    assert change.slowest is not None and change.slowest.ratio == slower.low and change.regressed
    text = change.sentence("tunables")
    # the strongest change first, then the other, then the largest change each way with its batch
    assert re.fullmatch(r"tunables is (8\.\d\d–)?8\.\d\d× faster from batch 171 to 512; (0\.\d\d–)?0\.\d\d× slower from batch 16 to 170\."
                        r" Largest change: 8\.\d\d× faster at batch \d+, 0\.\d\d× slower at batch \d+\.", text), text


def test_a_change_at_small_batches_only_and_no_change(tmp_path) -> None:
    batches = (1, 2, 4, 8, 16, 32, 64)
    base = save(tmp_path / "a.json", [curve("eager", {b: 5000.0 for b in batches}, seed=1)])
    small = save(tmp_path / "b.json", [curve("eager", {b: 2500.0 if b <= 4 else 5000.0 for b in batches}, seed=2)])
    same = save(tmp_path / "c.json", [curve("eager", {b: 5000.0 for b in batches}, seed=3)])
    (change,) = changes_of(base, small)
    assert [(r.verdict, r.batches) for r in change.runs] == [(SLOWER, (1, 2, 4)), (NO_CHANGE, (8, 16, 32, 64))]
    assert change.sentence("B").startswith("B is 0.") and "slower from batch 1 to 4; unchanged from batch 8 to 64 (" in change.sentence("B")
    assert change.fastest is None and change.regressed
    (unchanged,) = changes_of(base, same)
    assert [r.verdict for r in unchanged.runs] == [NO_CHANGE] and not unchanged.changed
    assert re.fullmatch(r"B is unchanged from batch 1 to 64 \((\d\.\d\d–)?\d\.\d\d×\)\.", unchanged.sentence("B"))


def row(batch: int, ratio: float, verdict: str, busy: tuple[str, ...] = ()) -> Row:
    return Row("p", batch, 100.0, 100.0 * ratio, ratio, 1e-6, "mann-whitney", True, verdict, busy)


def test_a_jump_within_one_verdict_splits_the_run_and_the_sentence_is_bounded() -> None:
    rows = [row(64, 2.80, FASTER), row(128, 2.53, FASTER), row(170, 2.57, FASTER), row(171, 10.18, FASTER, ("base",)),
            row(256, 8.84, FASTER)]  # fmt: skip
    found = runs(rows)
    assert [(r.batches, r.low, r.high, r.busy) for r in found] == [((64, 128, 170), 2.53, 2.80, 0), ((171, 256), 8.84, 10.18, 1)]
    assert found[1].describe() == "8.84–10.18× faster from batch 171 to 256 (1 busy)"
    assert runs([row(1, 1.0, FASTER), row(2, 1.49, FASTER)])[0].batches == (1, 2)  # just under the jump: one run
    assert len(runs([row(1, 1.0, FASTER), row(2, 1.5, FASTER)])) == 2
    # a batch that failed between two faster ones: no run spans it
    assert [r.batches for r in runs([row(1, 1.2, FASTER), row(4, 1.2, FASTER)], gaps=[2])] == [(1,), (4,)]
    assert [r.batches for r in runs([row(1, 1.3, FASTER), row(2, 1.02, NO_CHANGE)])] == [(1,), (2,)]  # a new verdict: a new run
    jagged = [row(b, 1.5 if i % 2 else 0.6, FASTER if i % 2 else SLOWER) for i, b in enumerate((1, 2, 4, 8, 16, 32, 64))]
    (change,) = path_changes(jagged)
    # seven runs of one batch each: the four strongest (0.60× slower is further from 1 than 1.50× faster) named
    assert len(change.runs) == 7 and change.sentence().startswith("NEW is 0.60× slower at batch 1; 0.60× slower at batch 4;")
    assert "; 3 more runs (see the tables). Largest change: 1.50× faster at batch 2, 0.60× slower at batch 1." in change.sentence()
    place = change.sentence("B", lambda batch: f"{batch} MiB")
    assert "at 2 MiB" in place and "batch" not in place


def test_the_report_says_where_each_path_changed_in_its_first_30_lines(cliff_pair) -> None:
    picks, empty = select(list(cliff_pair))
    text = report.render(picks, empty)
    head = "\n".join(text.splitlines()[:30])
    line = next(x for x in head.splitlines() if x.startswith("- `tf/eager/copy`: "))
    assert re.match(r"- `tf/eager/copy`: tunables is (8\.\d\d–)?8\.\d\d× faster from batch 171 to 512; (0\.\d\d–)?0\.\d\d× slower"
                    r" from batch 16 to 170\.", line), line
    assert head.index("### What differs") < head.index(line)
    # the peak-to-peak ratio stays, named as what it is
    assert "tunables / defaults, peak to peak" in head
    assert "Peaks leave out" not in head and "busy" not in head  # a clean pair states no busy rule


def test_the_peak_rule_holds_for_clean_partly_busy_and_all_busy_files(tmp_path) -> None:
    rates = {b: cliff(b) for b in CLIFF_BATCHES}

    def head(busy_a: tuple[int, ...], busy_b: tuple[int, ...]) -> str:
        a = save(tmp_path / "a.json", [curve("eager", rates, busy_a, seed=1), curve("function", rates, busy_a[:2], seed=3)])
        b = save(tmp_path / "b.json", [curve("eager", rates, busy_b, seed=2), curve("function", rates, (), seed=4)])
        picks, empty = select([a, b])
        return report.render(picks, empty)

    everything = CLIFF_BATCHES
    partly = head((16, 512), ())
    assert "Points measured on a busy machine are left out of the peaks." in partly
    assert "(busy)" not in partly.split("| path | peak a | peak b |")[1].split("\n\n")[0]  # no peak rests on one
    one = head(everything[:0], ())  # clean
    assert "busy" not in one.split("### Environment")[0]
    a = save(tmp_path / "a.json", [curve("eager", rates, everything, seed=1), curve("function", rates, (), seed=3)])
    b = save(tmp_path / "b.json", [curve("eager", rates, (), seed=2), curve("function", rates, (), seed=4)])
    only_one = report.render(*select([a, b]))  # one series wholly busy, the rest clean: not "every point"
    assert "except where every point of a series was busy: those peaks, marked (busy), rest on busy points." in only_one
    mixed = head(everything, ())  # a's eager series every point busy: its peak rests on busy points, and says so
    assert "except where every point of a series was busy: those peaks, marked (busy), rest on busy points." in mixed
    peaks = [x for x in mixed.split("| path | peak a | peak b |")[1].split("\n\n")[0].splitlines() if x.startswith("| `tf/")]
    assert [x.split(" | ")[1].endswith("(busy)") for x in peaks] == [True, False]
    assert "except in tf/eager/copy@cpu, where every point was busy" in mixed
    mixed_note = next(x for x in mixed.splitlines() if x.startswith("- **warning** "))
    assert "left out of peak, saturation, cliff and fit, except in" in mixed_note
    (tmp_path / "all").mkdir()
    a = save(tmp_path / "all" / "a.json", [curve("eager", rates, everything, seed=1)])
    b = save(tmp_path / "all" / "b.json", [curve("eager", rates, everything, seed=2)])
    text = report.render(*select([a, b]))
    assert "Every point was measured on a busy machine, so every peak rests on busy points (marked (busy))." in text
    assert "Those points are marked (busy), every figure here rests on them" in text
    assert "left out" not in text.split("### Environment")[0]


def test_compare_prints_each_paths_runs_and_json_carries_them(cliff_pair) -> None:
    runner = CliRunner()
    shown = runner.invoke(app, ["compare", *map(str, cliff_pair)], env={"COLUMNS": "200"})
    assert shown.exit_code == 1  # slower below batch 171: a CI gate on slower points fails
    line = next(x for x in shown.stdout.splitlines() if x.strip().startswith("tf/eager/copy@cpu: NEW is"))
    assert "faster from batch 171 to 512" in line and "slower from batch 16 to 170" in line
    data = json.loads(runner.invoke(app, ["compare", *map(str, cliff_pair), "--json"]).stdout)
    (path,) = data["paths"]
    assert path["path"] == "tf/eager/copy@cpu" and path["regressed"] is True and path["failed"] == []
    assert [(r["verdict"], r["batch_sizes"]) for r in path["runs"]] == [("slower", [16, 32, 64, 128, 160, 170]),
                                                                       ("faster", [171, 172, 192, 256, 512])]  # fmt: skip
    assert path["most_faster"]["batch_size"] in range(171, 513) and path["most_faster"]["ratio"] > 8
    assert path["most_slower"]["batch_size"] < 171 and path["most_slower"]["ratio"] < 0.72
    assert data["busy_points"] == {"base": 0, "new": 0, "compared": 11, "every_point": False}
    assert (data["fail_on"], data["exit_status"]) == ("slower", 1)


def test_compare_exit_codes_for_mixed_and_one_way_changes(cliff_pair, tmp_path) -> None:
    runner = CliRunner()
    a, b = map(str, cliff_pair)
    faster_only = str(save(tmp_path / "faster.json", [curve("eager", {x: 2 * cliff(x) for x in CLIFF_BATCHES}, seed=5)]))
    same = str(save(tmp_path / "same.json", [curve("eager", {x: cliff(x) for x in CLIFF_BATCHES}, seed=6)]))
    codes = {(base, new, fail_on): runner.invoke(app, ["compare", base, new, "--json", "--fail-on", fail_on]).exit_code
             for base, new in ((a, b), (a, faster_only), (a, same)) for fail_on in ("slower", "change")}  # fmt: skip
    assert codes == {(a, b, "slower"): 1, (a, b, "change"): 1,  # mixed: slower somewhere fails either way
                     (a, faster_only, "slower"): 0, (a, faster_only, "change"): 1,  # faster only: fails on any change
                     (a, same, "slower"): 0, (a, same, "change"): 0}  # fmt: skip
    bad = runner.invoke(app, ["compare", a, b, "--fail-on", "faster"])
    assert bad.exit_code == 2 and "--fail-on 'faster': give 'slower'" in bad.output and "Traceback" not in bad.output


def test_compare_json_says_when_every_compared_point_was_busy(tmp_path) -> None:
    rates = {b: cliff(b) for b in CLIFF_BATCHES}
    a = save(tmp_path / "a.json", [curve("eager", rates, CLIFF_BATCHES, seed=1)])
    b = save(tmp_path / "b.json", [curve("eager", rates, CLIFF_BATCHES[:3], seed=2)])
    data = comparing.to_dict(comparing.compare_files(a, b), a, b)
    assert data["busy_points"] == {"base": 11, "new": 3, "compared": 11, "every_point": True}
    c = save(tmp_path / "c.json", [curve("eager", rates, CLIFF_BATCHES[:3], seed=3)])
    partly = comparing.to_dict(comparing.compare_files(b, c), b, c)["busy_points"]
    assert partly == {"base": 3, "new": 3, "compared": 11, "every_point": False}


def test_report_out_and_plot_are_never_replaced_unasked(cliff_pair, tmp_path) -> None:
    runner = CliRunner()
    out, png = tmp_path / "r.md", tmp_path / "r.png"
    out.write_text("an earlier report")
    refused = runner.invoke(app, ["report", *map(str, cliff_pair), "-o", str(out)])
    assert refused.exit_code == 2 and "already exists; choose another --out, or add --overwrite" in refused.output
    assert out.read_text() == "an earlier report" and "Traceback" not in refused.output
    png.write_bytes(b"old")
    refused = runner.invoke(app, ["report", *map(str, cliff_pair), "-o", str(tmp_path / "new.md"), "--plot", str(png)])
    assert refused.exit_code == 2 and "choose another --plot" in refused.output and png.read_bytes() == b"old"
    assert not (tmp_path / "new.md").exists()
    done = runner.invoke(app, ["report", *map(str, cliff_pair), "-o", str(out), "--plot", str(png), "--overwrite"])
    assert done.exit_code == 0 and out.read_text().startswith("## xferbench report") and png.read_bytes()[:4] == b"\x89PNG"
    assert "attach that image to the issue too" in " ".join(done.stderr.split())
    printed = runner.invoke(app, ["report", *map(str, cliff_pair)])
    assert printed.exit_code == 0 and "attach" not in printed.stderr  # no plot, nothing to attach


def test_a_binary_file_given_to_a_reader_is_one_line(cliff_pair, tmp_path) -> None:
    png = tmp_path / "plot.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
    for command in (["report", str(cliff_pair[0]), str(png)], ["compare", str(cliff_pair[0]), str(png)], ["plot", str(png)]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, command
        assert f"{png}: not an xferbench result file" in result.output and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1


def test_a_peers_buffers_sit_on_the_bytes_axis_and_are_no_yardstick_for_a_cpu_copy(tmp_path) -> None:
    import peer_outputs as out
    from xferbench.reading.peers import read_nvbandwidth

    raw = tmp_path / "nvbandwidth.txt"
    raw.write_text(out.nvbandwidth(out.passed(out.H2D_CE, "24.1"), mib=512))
    peer = tmp_path / "a100.json"
    read_nvbandwidth([raw], buffer_size_mib=512).save(peer)
    rates = {b: cliff(b) for b in (16, 512)}
    sweep = save(tmp_path / "cpu.json", [curve("eager", rates, seed=1), curve("function", {16: 5000.0, 512: 600.0}, seed=2)])
    picks, empty = select([sweep, peer])
    text = report.render(picks, empty)
    summary = text.split("### Summary")[1].split("\n\n")[1].splitlines()
    assert summary[0].startswith("| series | device | peak MB/s @ bytes per call | vs best of its device | saturates at bytes per call |")
    rows = {line.split(" | ")[0].lstrip("| ").split(" (")[0]: line.split(" | ")[2:] for line in summary[2:]}
    nvb = rows["nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:0"]
    assert nvb[0] == "24,100 @ 512 MiB" and nvb[1] == "-"  # alone on its device and transfer kind: no "vs best"
    assert rows["tf/eager/copy@cpu"][0].endswith(" @ 3 MiB")  # batch 16 of 256x256x3
    assert rows["tf/eager/copy@cpu"][1] == "1.00×" and rows["tf/function/copy@cpu"][1].startswith("0.")
    table = text.split("### MB/s by bytes per call")[1]
    assert "| bytes per call |" in table and "| 512 MiB |" in table and "| 96 MiB |" in table
    assert "@ batch" not in text.split("### Environment")[0].split("### Notes")[0]


def test_a_peers_file_in_image_sized_buffers_is_still_placed_by_bytes(tmp_path) -> None:
    """nvbandwidth -b 96 is batch 512 of 256x256x3 images: one shape, yet a peer's figures are no batch."""
    import peer_outputs as out
    from xferbench.reading.peers import read_nvbandwidth

    raw = tmp_path / "nvbandwidth.txt"
    raw.write_text(out.nvbandwidth(out.passed(out.H2D_CE, "24.1"), mib=96))
    peer = tmp_path / "peer.json"
    read_nvbandwidth([raw], buffer_size_mib=96).save(peer)
    sweep = save(tmp_path / "cpu.json", [curve("eager", {16: 9000.0, 512: 8000.0}, seed=1)])
    picks, empty = select([sweep, peer])
    assert {tuple(p.series.shape) for p in picks} == {SHAPE}
    text = report.render(picks, empty)
    assert "24,100 @ 96 MiB" in text and "### MB/s by bytes per call" in text


def test_sizes_are_named_as_the_peers_name_them() -> None:
    from xferbench.reading.display import binary_size

    assert [binary_size(n) for n in (2**29, 2**30, 96 * 2**20, 10 * 196_608, 256 * 1024, 500)] == \
        ["512 MiB", "1 GiB", "96 MiB", "1.97 MB", "256 KiB", "500 B"]  # fmt: skip


def test_the_committed_tensorflow_report_and_the_readmes_excerpt_are_what_report_makes(monkeypatch) -> None:
    """The real report (TensorFlow's cliff and its removal) and the lines the README quotes from it must not
    drift from the code (scripts/gallery.sh redraws the report)."""
    from xferbench.core.results import Selection

    repo = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(repo)
    committed = (repo / "plots" / "report-tf-cpu-mmap-cliff.md").read_text()
    files = [Path("results/cpu-amd-epyc-2core/tf-host-buffers.json"), Path("results/cpu-amd-epyc-2core/tf-host-buffers-glibc-tunables.json")]
    chosen = Selection(modes=("eager", "function"), host_buffers=("numpy",))
    picks, empty = select(files, chosen)
    title = committed.splitlines()[0].removeprefix("## ")
    made = report.render(picks, empty, plot=Path("plots/tf-cpu-mmap-cliff.png"), out=Path("plots/report-tf-cpu-mmap-cliff.md"),
                         selection=chosen, title=title)  # fmt: skip
    assert made == committed
    head = "\n".join(made.splitlines()[:30])
    assert "- `tf/eager/copy`: tf-host-buffers-glibc-tunables is 7.52–10.18× faster from batch 171 to 512;" in head
    readme = (repo / "README.md").read_text()
    excerpt = readme.split("<!-- report-excerpt:", 1)[1].split("\n", 1)[1].split("<!-- /report-excerpt -->")[0]
    quoted = "\n".join(line.removeprefix(">").removeprefix(" ") for line in excerpt.strip().splitlines())
    assert quoted.startswith("### Each path") and "\n" + quoted + "\n" in made


def test_a_batch_that_failed_in_one_file_is_named_and_no_run_spans_it(tmp_path) -> None:
    batches = (1, 4, 16, 64, 128, 256, 512)
    base = save(tmp_path / "a.json", [curve("eager", {b: 5000.0 for b in batches}, seed=1)])
    broken = curve("eager", {b: 4000.0 for b in batches}, seed=2)
    for point in broken.points:
        if point.batch_size in (64, 128):
            point.status, point.error, point.times_s = "error", "CUDA out of memory", []
    broken.refresh_summary()
    new = save(tmp_path / "b.json", [broken])
    (change,) = changes_of(base, new)
    assert [r.batches for r in change.runs] == [(1, 4, 16), (256, 512)] and change.failed == (64, 128)
    assert change.sentence("B").endswith(". Failed in B at batch 64, batch 128, measured before.") and change.regressed
    text = report.render(*select([base, new]))
    line = next(x for x in text.splitlines() if x.startswith("- `tf/eager/copy`: "))
    assert "from batch 1 to 16" in line and "from batch 256 to 512" in line and "Failed in b at batch 64, batch 128" in line
    grid = {r.split(" | ")[0].strip("| "): r.split(" | ")[1].strip(" |") for r in text.split("### Ratio at each batch")[1].split("\n\n")[2].splitlines()[2:]}
    assert grid["64"] == grid["128"] == "FAILED" and grid["16"].endswith("▼")
    block = [r for r in text.split("### MB/s by batch, path by path")[1].splitlines() if r.startswith("|  | 64 |")]
    assert block and block[0].endswith("| FAILED: CUDA out of memory |")
    assert "slower at 5 of 7, failed at 2" in text
    whole = save(tmp_path / "c.json", [Series.of(SeriesKey("tf", "eager", "copy", "cpu", SHAPE))])
    data = json.loads(whole.read_text())
    data["series"][0].update(status="failed", reason="the worker died")
    whole.write_text(json.dumps(data))
    (gone,) = changes_of(base, whole)
    assert gone.failed == (None,) and gone.sentence("C").endswith("The whole series failed in C.")


def test_two_peers_files_are_compared_size_by_size_in_every_table(tmp_path) -> None:
    """Two nodes' nvbandwidth outputs: their "batches" are 1 MiB items, so every table names sizes."""
    import peer_outputs as out
    from xferbench.reading.peers import read_nvbandwidth

    paths = []
    for name, base in (("node1", 50.0), ("node2", 40.0)):
        runs = [(mib, out.nvbandwidth(out.passed(out.H2D_CE, f"{base + mib / 100:.2f}"), mib=mib), 0) for mib in (3, 12, 96)]
        raw = tmp_path / f"{name}.txt"
        raw.write_text(out.kit_runs(*runs))
        paths.append(tmp_path / f"{name}.json")
        read_nvbandwidth([raw]).save(paths[-1])
    text = report.render(*select(paths))
    grid = text.split("### Ratio at each size")[1].split("\n\n")[2].splitlines()
    assert grid[0].startswith("| bytes per call |") and [r.split(" | ")[0] for r in grid[2:]] == ["| 3 MiB", "| 12 MiB", "| 96 MiB"]
    block = text.split("### MB/s by size, path by path")[1].split("\n\n")[2].splitlines()
    assert block[0].startswith("| path | bytes per call |") and block[2].split(" | ")[1] == "3 MiB"
    assert "node2 is untested (no raw samples) from 3 MiB to 96 MiB (" in text
    assert "MB/s @ 96 MiB</summary>" in text and "@ batch" not in text


@pytest.mark.parametrize("stage", ["render", "save"])
def test_ctrl_c_in_report_says_what_it_wrote(cliff_pair, tmp_path, monkeypatch, stage) -> None:
    from xferbench import cli

    def stop(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(report, stage, stop)
    png, md = tmp_path / "r.png", tmp_path / "r.md"
    result = CliRunner().invoke(cli.app, ["report", *map(str, cliff_pair), "--plot", str(png), "-o", str(md)])
    assert result.exit_code == 130
    assert unwrapped(f"interrupted: wrote {png}; no file was left half written") in unwrapped(result.stderr)
    assert png.is_file() and not md.exists()


def test_ctrl_c_in_fleet_says_it_wrote_nothing(cliff_pair, monkeypatch) -> None:
    from xferbench import cli
    from xferbench.health import fleet

    def stop(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(fleet, "read_fleet", stop)
    result = CliRunner().invoke(cli.app, ["fleet", str(cliff_pair[0])])
    assert result.exit_code == 130 and "interrupted: wrote nothing; no file was left half written" in result.stderr


def test_a_peers_series_shows_a_peak_but_no_fit_saturation_or_cliff_after_loading() -> None:
    """nvbandwidth's figures are medians of a few aggregates, one per size: no latency and bandwidth fit,
    saturation or cliff can rest on them, however the file was written."""
    repo = Path(__file__).resolve().parent.parent
    run = repo / "results" / "nvidia-h200" / "2026-11-26" / "run-2" / "validation"
    picks, empty = select([run / "peer-nvbandwidth.json"])
    for pick in picks:
        summary = pick.series.summary
        assert pick.series.is_peer and summary.peak_mbps and summary.peak_mbps > 50_000
        assert (summary.latency_s, summary.bandwidth_mbps, summary.saturation_batch_size, summary.cliff, summary.cliff_drop) == \
            (None, None, None, False, None)  # fmt: skip
    text = report.render(picks, empty)
    row = next(x for x in text.splitlines() if x.startswith("| nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:0"))
    cells = row.split(" | ")
    assert cells[1] == "55,521 @ 256 MiB" and cells[3:6] == ["-", "-", "-"] and cells[-1] == "- |"
    sweep = select([run / "large.json"])[0][0].series
    assert not sweep.is_peer and sweep.summary.bandwidth_mbps  # xferbench's own series keep their fit
