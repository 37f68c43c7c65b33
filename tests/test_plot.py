"""`xferbench plot`: the figure's content, its files, and bad input."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FAST
from xferbench.backends import SimLink
from xferbench.cli import app
from xferbench.plot import figure
from xferbench.results import Result, Selection, select
from xferbench.sweep import SweepConfig, make_plan, new_result, run_plan

BATCHES = (1, 4, 16, 64)


def sim_file(path: Path, bandwidth_gbps: float = 25.0, host: str = "hostA") -> Path:
    plan = make_plan(SweepConfig(frameworks=("sim",), batch_sizes=BATCHES, timing=FAST,
                                 sim=SimLink(latency_us=10, bandwidth_gbps=bandwidth_gbps, jitter=0.05)))  # fmt: skip
    try:
        result = run_plan(plan, new_result(plan, {"host": host, "devices": []}), save=lambda r: None)
    finally:
        plan.close()
    result.save(path)
    return path


def with_gpu_link(path: Path) -> Path:
    """Pretend the simulated series ran on a CUDA device whose NVML link is Gen4 x16 (idle at Gen1)."""
    data = json.loads(path.read_text())
    data["environment"]["devices"] = [{"id": "cuda:0", "kind": "cuda", "name": "Test GPU", "nvml": {
        "pcie_gen_current": 1, "pcie_width_current": 16, "pcie_gen_max": 4, "pcie_width_max": 16}}]  # fmt: skip
    data["series"][0]["device"] = "cuda:0"
    path.write_text(json.dumps(data))
    return path


def test_one_line_band_and_saturation_ring_per_series_with_labels(tmp_path) -> None:
    a = sim_file(tmp_path / "a.json")
    b = sim_file(tmp_path / "b.json", bandwidth_gbps=12.0)
    picks, _ = select([a, b])
    rate, times = figure(picks, title="two links").axes
    labels = [line.get_label() for line in rate.get_lines() if not line.get_label().startswith("_")]
    assert labels == ["sim/link/copy @ simulated link (10 µs, 25 GB/s) (a)", "sim/link/copy @ simulated link (10 µs, 12 GB/s) (b)"]  # same host: by file
    assert len(rate.collections) == 2  # one p10-p90 band per series
    assert len(rate.get_lines()) == 4  # a curve and a saturation ring per series
    assert list(rate.get_xticks()) == list(BATCHES)
    assert len(times.get_lines()) == 4  # points and the fitted latency + bandwidth model per series
    assert rate.figure._suptitle.get_text() == "two links"


def test_hosts_label_series_when_files_come_from_several_machines(tmp_path) -> None:
    picks, _ = select([sim_file(tmp_path / "a.json", host="alpha"), sim_file(tmp_path / "b.json", host="beta")])
    rate = figure(picks).axes[0]
    assert [line.get_label() for line in rate.get_lines() if not line.get_label().startswith("_")] == [
        "sim/link/copy @ simulated link (10 µs, 25 GB/s) (alpha)", "sim/link/copy @ simulated link (10 µs, 25 GB/s) (beta)"]  # fmt: skip


def test_two_gpus_of_one_model_and_many_series_stay_apart(tmp_path) -> None:
    path = with_gpu_link(sim_file(tmp_path / "gpu.json"))
    data = json.loads(path.read_text())
    twin = json.loads(json.dumps(data["series"][0])) | {"device": "cuda:1"}
    data["series"] += [twin] + [json.loads(json.dumps(data["series"][0])) | {"mode": f"m{i}"} for i in range(10)]
    for series in data["series"]:
        series["device_name"] = "Test GPU"
    path.write_text(json.dumps(data))
    picks, _ = select([path])
    lines = [line for line in figure(picks).axes[0].get_lines() if not line.get_label().startswith("_")]
    labels = [line.get_label() for line in lines]
    assert labels[:2] == ["sim/link/copy @ Test GPU [cuda:0]", "sim/link/copy @ Test GPU [cuda:1]"]
    assert len(set(labels)) == len(labels) == 12 + 1  # and the PCIe ceiling
    styles = {(line.get_color(), line.get_linestyle()) for line in lines[:12]}
    assert len(styles) == 12  # the colour cycle has 10: the line style changes after it


def test_files_with_one_name_in_two_folders_are_told_apart_by_path(tmp_path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    picks, _ = select([sim_file(tmp_path / "x" / "run.json"), sim_file(tmp_path / "y" / "run.json")])
    labels = [line.get_label() for line in figure(picks).axes[0].get_lines() if not line.get_label().startswith("_")]
    assert labels == [f"sim/link/copy @ simulated link (10 µs, 25 GB/s) ({tmp_path / d / 'run.json'})" for d in "xy"]


def test_a_known_link_draws_its_theoretical_ceiling(tmp_path) -> None:
    picks, _ = select([with_gpu_link(sim_file(tmp_path / "gpu.json"))])
    rate = figure(picks).axes[0]
    ceiling = [line for line in rate.get_lines() if line.get_label().startswith("PCIe")]
    assert len(ceiling) == 1 and ceiling[0].get_linestyle() == "--"
    assert ceiling[0].get_label() == "PCIe Gen4 x16 theoretical (31.5 GB/s, system maximum); read Gen1 x16 before the run"
    assert ceiling[0].get_ydata()[0] == pytest.approx(31_500)


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml"), (".pdf", b"%PDF")])
def test_cli_writes_each_format_by_suffix(tmp_path, suffix, magic) -> None:
    out = tmp_path / f"fig{suffix}"
    r = CliRunner().invoke(app, ["plot", str(sim_file(tmp_path / "a.json")), "-o", str(out), "--title", "t"])
    assert r.exit_code == 0, r.output
    assert out.read_bytes().startswith(magic)


def test_cli_default_output_goes_under_plots(tmp_path) -> None:
    r = CliRunner().invoke(app, ["plot", str(sim_file(tmp_path / "run.json"))])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "plots" / "run.png").exists()  # the autouse fixture made tmp_path the working folder


def test_selection_keeps_matching_series_only(tmp_path) -> None:
    picks, _ = select([sim_file(tmp_path / "a.json")], Selection(frameworks=("sim",), modes=("link",)))
    assert len(picks) == 1


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_bad_input_is_one_line_and_exit_2(tmp_path) -> None:
    good = str(sim_file(tmp_path / "good.json"))
    newer = json.loads(Path(good).read_text()) | {"schema": "xferbench/99"}
    empty = Result(environment={}, config={}, created="")
    empty.series = []
    failed = json.loads(Path(good).read_text())
    failed["series"][0].update(status="failed", reason="verification failed: bytes differ")
    for point in failed["series"][0]["points"]:
        point.update(status="error", error="verification failed: bytes differ")
    cases = [
        ([str(tmp_path / "missing.json")], "missing.json: no such file"),
        ([write(tmp_path / "t.json", "not json")], "not JSON"),
        ([write(tmp_path / "o.json", '{"a": 1}')], "not an xferbench result"),
        ([write(tmp_path / "n.json", json.dumps(newer))], "with schema xferbench/99, newer than this xferbench"),
        ([write(tmp_path / "f.json", json.dumps(failed))], "every selected series is empty"),
        ([good, "-f", "torch"], "no series matches the selection"),
        ([good, "-o", str(tmp_path / "x.gif")], "use a .png, .svg or .pdf name"),
        ([good, "-o", "/proc/no-such-dir/x.png"], "cannot write the plot to"),
    ]
    for args, message in cases:
        r = CliRunner().invoke(app, ["plot", *args])
        assert r.exit_code == 2, (args, r.output)
        assert message in r.stderr and r.stderr.count("\n") == 1 and "Traceback" not in r.output, r.stderr


def test_a_series_cut_short_says_so_in_the_legend(tmp_path) -> None:
    path = sim_file(tmp_path / "a.json")
    data = json.loads(path.read_text())
    data["series"][0].update(status="failed", reason="the torch worker process was killed by SIGKILL")
    path.write_text(json.dumps(data))
    picks, _ = select([path])
    rate = figure(picks).axes[0]
    assert [line.get_label() for line in rate.get_lines() if not line.get_label().startswith("_")] == [
        "sim/link/copy @ simulated link (10 µs, 25 GB/s) (FAILED)"]  # fmt: skip
