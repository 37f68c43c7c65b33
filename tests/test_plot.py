"""`xferbench plot`: the figure's content, its files, and bad input."""

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import FAST
from xferbench.measuring.backends import SimLink
from xferbench.cli import app
from xferbench.core.errors import XferbenchError
from xferbench.reading.plot import figure, series_labels
from xferbench.core.results import Point, Result, Selection, Series, select
from xferbench.core.spec import SeriesKey
from xferbench.measuring.sweep import SweepConfig, make_plan, new_result, run_plan
from xferbench.core.timing import Samples

BATCHES = (1, 4, 16, 64)


def sim_file(path: Path, bandwidth_gbps: float = 25.0, host: str = "hostA", shape: tuple[int, ...] = (256, 256, 3)) -> Path:
    plan = make_plan(SweepConfig(frameworks=("sim",), batch_sizes=BATCHES, timing=FAST, shape=shape,
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
    # a curve and a saturation ring per series (and the hollow busy points a loaded machine adds: their own test)
    assert len([line for line in rate.get_lines() if line.get_label() != "_busy"]) == 4
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


def test_files_with_one_name_in_two_folders_are_told_apart_by_the_folder(tmp_path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    picks, _ = select([sim_file(tmp_path / "x" / "run.json"), sim_file(tmp_path / "y" / "run.json")])
    labels = [line.get_label() for line in figure(picks).axes[0].get_lines() if not line.get_label().startswith("_")]
    assert labels == [f"sim/link/copy @ simulated link (10 µs, 25 GB/s) ({d})" for d in "xy"]


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


def test_cli_default_output_goes_under_runs(tmp_path) -> None:
    """Beside the user's own sweeps, in the folder git ignores: never among a checkout's committed plots/."""
    r = CliRunner().invoke(app, ["plot", str(sim_file(tmp_path / "run.json"))])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "runs" / "run.png").exists() and not (tmp_path / "plots").exists()  # tmp_path is the working folder


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
        ([good, "-o", "/proc/no-such-dir/x.png"], "cannot write the plot to /proc/no-such-dir/x.png"),  # found before drawing
        ([good, "--y-scale", "sqrt", "-o", str(tmp_path / "y.png")], "--y-scale sqrt: give auto, linear or log"),
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


REPO = Path(__file__).resolve().parent.parent
CPU_FILE = REPO / "results" / "cpu-amd-epyc-2core" / "host-back-to-back-1.json"


def rate_labels(fig) -> list[str]:
    return [line.get_label() for line in fig.axes[0].get_lines() if not line.get_label().startswith("_")]


def as_gpu(path: Path, name: str = "NVIDIA H100", device: str = "cuda:0") -> Path:
    data = json.loads(path.read_text())
    data["series"][0].update(device=device, device_name=name, transfer="host-to-device")
    path.write_text(json.dumps(data))
    return path


def test_default_title_names_the_transfer_and_the_device(tmp_path) -> None:
    def title(*paths: Path) -> str:
        return figure(select(list(paths))[0]).get_suptitle()

    assert title(sim_file(tmp_path / "s.json")) == "simulated transfer (no data moves): simulated link (10 µs, 25 GB/s)"
    assert title(CPU_FILE) == "host-to-host on the CPU (no GPU): AMD EPYC"
    gpu = as_gpu(sim_file(tmp_path / "g.json"))
    assert title(gpu) == "host-to-device: NVIDIA H100 (cuda:0)"
    other = as_gpu(sim_file(tmp_path / "h.json"), "NVIDIA A100", "cuda:1")
    assert title(gpu, other) == "host-to-device: NVIDIA H100 (cuda:0), NVIDIA A100 (cuda:1)"
    # A GPU run's host copy is host-to-host, but not "no GPU"; the CPU is named beside the GPUs.
    assert title(gpu, CPU_FILE) == "host-to-device: NVIDIA H100 (cuda:0); host-to-host on the CPU: AMD EPYC"
    many = [as_gpu(sim_file(tmp_path / f"{i}.json"), device=f"cuda:{i}") for i in range(4)]
    assert title(*many) == "host-to-device: 4 devices"
    assert figure(select([gpu])[0], title="mine").get_suptitle() == "mine"


def test_a_host_to_host_series_says_so_in_the_legend(tmp_path) -> None:
    picks, _ = select([CPU_FILE, as_gpu(sim_file(tmp_path / "g.json"))])
    assert rate_labels(figure(picks)) == ["host/numpy/copy @ AMD EPYC · host-to-host (vm) · ▼ cliff: −30% at batch 64 (worst −72%)",
                                          "sim/link/copy @ NVIDIA H100 (hostA)"]  # fmt: skip


def cliff_file(path: Path, mbps_by_batch: dict[int, float]) -> Path:
    """One hand-built series whose every point took the time that gives the MB/s asked for."""
    key = SeriesKey("torch", "pageable", "copy", "cuda:0", (1000, 1000))
    series = Series("torch", "pageable", "copy", "cuda:0", [1000, 1000], device_name="GPU", transfer="host-to-device")
    for batch, mbps in mbps_by_batch.items():
        spec = key.at(batch)
        series.points.append(Point.measured(spec, Samples([spec.nbytes / (mbps * 1e6)] * 3), warmup_calls=1))
    series.refresh_summary()
    Result({"host": "h"}, {}, "2026-01-02T03:04:05+00:00", [series], "complete").save(path)
    return path


def cliff_notes(fig) -> list[tuple[str, tuple[float, float], str]]:
    """Each cliff's note, from its series' legend entry, with the point and colour of its triangle."""
    rate = fig.axes[0]
    triangles = [line for line in rate.get_lines() if line.get_label() == "_cliff"]
    curves = {line.get_color(): line.get_label() for line in rate.get_lines() if not line.get_label().startswith("_")}
    assert all(line.get_marker() == "v" for line in triangles)
    return [(curves[line.get_color()].split(" · ▼ ")[1], (line.get_xdata()[0], line.get_ydata()[0]), line.get_color())
            for line in triangles]  # fmt: skip


def test_a_cliff_is_marked_at_its_batch_with_its_fall(tmp_path) -> None:
    picks, _ = select([cliff_file(tmp_path / "c.json", {1: 1000.0, 4: 10000.0, 16: 6000.0, 64: 2500.0})])
    assert picks[0].series.summary.cliff_batch_size == 16
    fig = figure(picks)
    rate = fig.axes[0]
    (curve,) = [line for line in rate.get_lines() if not line.get_label().startswith("_")]
    ((text, (x, y), color),) = cliff_notes(fig)
    assert text == "cliff: −40% at batch 16 (worst −75%)"
    assert (x, y, color) == (16, pytest.approx(6000.0), curve.get_color())
    assert "▼ at a cliff (below 80% of peak)" in rate.get_title().replace("\n", " ")  # on two lines where it does not fit one
    assert rate_labels(fig) == ["torch/pageable/copy @ GPU · ▼ cliff: −40% at batch 16 (worst −75%)"]  # one entry: the triangle is no series
    steady = figure(select([cliff_file(tmp_path / "s.json", {1: 1000.0, 4: 10000.0, 16: 9000.0})])[0])
    assert cliff_notes(steady) == [] and "cliff" not in steady.axes[0].get_title()
    falls_once = figure(select([cliff_file(tmp_path / "o.json", {1: 1000.0, 4: 10000.0, 16: 5000.0})])[0])
    assert [note[0] for note in cliff_notes(falls_once)] == ["cliff: −50% at batch 16"]  # its worst fall too: said once


def test_two_cliffs_with_one_text_are_both_noted(tmp_path) -> None:
    again = tmp_path / "again.json"
    again.write_bytes(CPU_FILE.read_bytes())
    fig = figure(select([CPU_FILE, again])[0])
    triangles = [line for line in fig.axes[0].get_lines() if line.get_label() == "_cliff"]
    assert [line.get_xdata()[0] for line in triangles] == [64, 64]
    # one path in two files: one colour, told apart by line style, each fall in its own legend entry
    entries = [h for h in fig.legends[0].legend_handles if "▼ cliff" in h.get_label()]
    assert [h.get_label().split(" · ▼ ")[1] for h in entries] == ["cliff: −30% at batch 64 (worst −72%)"] * 2
    assert entries[0].get_color() == entries[1].get_color() and entries[0].get_linestyle() != entries[1].get_linestyle()


def legend_texts(fig) -> list[str]:
    return [text.get_text() for text in fig.legends[0].get_texts()]


def test_two_files_colour_each_path_and_style_each_file_named_by_what_differs(tmp_path) -> None:
    from test_pairing import TUNABLES, sweep_file

    a = sweep_file(tmp_path / "before.json", {}, seed=1)
    b = sweep_file(tmp_path / "tunables.json", {"GLIBC_TUNABLES": TUNABLES}, tf_speedup=2.0, seed=2)
    picks, _ = select([a, b], Selection(frameworks=("torch", "tf"), modes=("pageable", "eager")))
    fig = figure(picks)
    curves = {line.get_label(): line for line in fig.axes[0].get_lines() if not line.get_label().startswith("_")}
    eager_a, eager_b = curves["tf/eager/copy @ AMD EPYC · host-to-host (before)"], curves["tf/eager/copy @ AMD EPYC · host-to-host (tunables)"]
    torch_a, torch_b = curves["torch/pageable/copy @ AMD EPYC · host-to-host (before)"], curves["torch/pageable/copy @ AMD EPYC · host-to-host (tunables)"]
    assert eager_a.get_color() == eager_b.get_color() != torch_a.get_color() == torch_b.get_color()  # a colour per path
    assert eager_a.get_linestyle() == torch_a.get_linestyle() != eager_b.get_linestyle() == torch_b.get_linestyle()  # a style per file
    texts = legend_texts(fig)
    assert texts[:4] == ["torch/pageable/copy · host-to-host", "tf/eager/copy · host-to-host", "before",
                         "tunables:\nGLIBC_TUNABLES=" + TUNABLES.replace(":", ":\n")]  # wrapped whole, never cut  # fmt: skip
    handles = fig.legends[0].legend_handles
    assert handles[3].get_linestyle() == eager_b.get_linestyle() and handles[1].get_color() == eager_a.get_color()


def test_a_busy_point_is_drawn_hollow_with_a_key(tmp_path) -> None:
    from test_pairing import sweep_file

    busy = sweep_file(tmp_path / "busy.json", {}, busy=(8, 64))
    fig = figure(select([busy], Selection(frameworks=("torch",)))[0])
    (hollow,) = [line for line in fig.axes[0].get_lines() if line.get_label() == "_busy"]
    assert list(hollow.get_xdata()) == [8, 64] and hollow.get_markerfacecolor() in ("white", (1.0, 1.0, 1.0, 1.0))
    assert any("measured on a busy machine" in text for text in legend_texts(fig))
    quiet = figure(select([sweep_file(tmp_path / "quiet.json", {})], Selection(frameworks=("torch",)))[0])
    assert not [line for line in quiet.axes[0].get_lines() if line.get_label() == "_busy"]
    assert not any("busy" in text for text in legend_texts(quiet))


def test_past_six_series_each_framework_gets_a_panel_on_shared_axes(tmp_path) -> None:
    from test_pairing import sweep_file

    picks, _ = select([sweep_file(tmp_path / "a.json", {}, seed=1), sweep_file(tmp_path / "b.json", {}, seed=2)])
    assert len(picks) == 12
    fig = figure(picks)
    panels = [axes for axes in fig.axes if axes.get_visible()]
    assert [axes.get_title() for axes in panels] == ["torch", "tf", "jax", "host"]
    assert len(panels[1].get_lines()) >= 6 and all(axes.get_xscale() == "log" for axes in panels)  # tf: 3 paths × 2 files
    shared = panels[0].get_shared_y_axes()
    assert all(shared.joined(panels[0], other) for other in panels[1:])
    assert len(legend_texts(fig)) == 6 + 2  # six paths, two files: not twelve series
    few = figure(picks[:6])
    assert len(few.axes) == 2 and few.axes[1].get_xscale() == "log" and few.axes[1].get_yscale() == "log"


def test_tick_labels_keep_batch_171_and_never_crowd() -> None:
    from xferbench.reading.plot import tick_labels

    sweep = [1, 2, 4, 8, 16, 32, 64, 128, 171, 256, 512]
    assert "171" in tick_labels(sweep) and "128" in tick_labels(sweep) and "256" in tick_labels(sweep)
    dense = [1, 2, 4, 8, 16, 32, 64, 128, 160, 170, 171, 172, 192, 256, 512]
    labels = tick_labels(dense, first=[171])
    assert labels[dense.index(171)] == "171" and labels[dense.index(170)] == labels[dense.index(172)] == ""
    shown = [t for t, label in zip(dense, labels) if label]
    assert all(math.log2(b / a) >= 0.4 for a, b in zip(shown, shown[1:]))


def visible_texts(fig) -> list[str]:
    """Every text a reader sees: legend entries, notes under the figure, titles, axis labels, tick labels and notes on the axes."""
    texts = [text.get_text() for legend in fig.legends for text in legend.get_texts()] + [text.get_text() for text in fig.texts]
    for axes in (a for a in fig.axes if a.get_visible()):
        texts += [axes.get_title(), axes.get_xlabel(), axes.get_ylabel(), *(t.get_text() for t in axes.texts)]
        texts += [t.get_text() for t in axes.get_xticklabels() + axes.get_yticklabels()]
    return texts


def marks(fig) -> dict[str, dict[str, list[float]]]:
    """Each curve's hollow (busy) points, saturation ring and cliff triangle by x, keyed by the curve's label."""
    found: dict[str, dict[str, list[float]]] = {}
    for line in fig.axes[0].get_lines():  # a curve, then its own marks
        label = line.get_label()
        if not label.startswith("_"):
            current = found.setdefault(label, {"busy": [], "ring": [], "cliff": []})
        elif label in ("_busy", "_cliff"):
            current[label[1:]] += list(line.get_xdata())
        elif line.get_marker() == "o" and line.get_markerfacecolor() == "none":
            current["ring"] += list(line.get_xdata())
    return found


def busy_entry(fig) -> str:
    (entry,) = [(text, handle) for text, handle in zip(legend_texts(fig), fig.legends[0].legend_handles) if "busy machine" in text]
    assert entry[1].get_marker() == "o" and not entry[0].startswith("○")  # the symbol is the marker, drawn once
    return entry[0].replace("\n", " ")


def test_the_busy_key_states_the_rule_its_figures_follow(tmp_path) -> None:
    from test_pairing import BATCHES as SWEEP, sweep_file

    torch = Selection(frameworks=("torch",))
    partly = figure(select([sweep_file(tmp_path / "partly.json", {}, busy=(8, 64, 512))], torch)[0])
    ((label, drawn),) = marks(partly).items()
    assert drawn["busy"] == [8, 64, 512] and drawn["ring"] and not set(drawn["ring"]) & {8, 64, 512}  # rests on clean points
    assert busy_entry(partly) == "measured on a busy machine (left out of peak, saturation and cliff)"

    every = figure(select([sweep_file(tmp_path / "every.json", {}, busy=SWEEP)], torch)[0])
    ((label, drawn),) = marks(every).items()
    assert drawn["busy"] == list(SWEEP) and set(drawn["ring"]) <= set(SWEEP)  # nothing clean to rest on
    key = busy_entry(every)
    assert "left out" not in key and key == f"measured on a busy machine: every point of {label}, so the peak, saturation and cliff marks rest on them"

    fig = figure(select([tmp_path / "partly.json", tmp_path / "every.json"], torch)[0])
    drawn = marks(fig)
    only = "torch/pageable/copy @ AMD EPYC · host-to-host (every)"
    assert set(drawn[only]["ring"]) <= set(drawn[only]["busy"]) and not set(drawn[only.replace("every", "partly")]["ring"]) & {8, 64, 512}
    assert busy_entry(fig) == ("measured on a busy machine (left out of peak, saturation and cliff, except in"
                               " torch/pageable/copy (every), where every point was busy and the marks rest on them)")  # fmt: skip

    clean = figure(select([sweep_file(tmp_path / "clean.json", {})], torch)[0])
    assert not any("busy" in text for text in visible_texts(clean)) and not marks(clean)["torch/pageable/copy @ AMD EPYC · host-to-host"]["busy"]


def test_series_of_another_item_shape_are_drawn_by_bytes_per_call(tmp_path) -> None:
    import peer_outputs as out
    from xferbench.reading.peers import read_nvbandwidth

    runs = [(mib, out.nvbandwidth(out.passed(out.H2D_CE, f"{50 + mib / 100:.2f}"), mib=mib), 0) for mib in (1, 64, 512)]
    raw = tmp_path / "nvbandwidth.json"
    raw.write_text(out.kit_runs(*runs))
    peer = tmp_path / "peer.json"
    read_nvbandwidth([raw]).save(peer)  # 1 MiB items: its 512 MiB copy is "batch 512"
    sweep = sim_file(tmp_path / "sweep.json")
    picks, _ = select([sweep, peer])
    assert {tuple(p.series.shape) for p in picks} == {(256, 256, 3), (512, 512, 4)}
    fig = figure(picks)
    rate = fig.axes[0]
    curves = {line.get_label(): line for line in rate.get_lines() if not line.get_label().startswith("_")}
    for pick, label in zip(picks, series_labels(picks)):
        drawn = curves[label]
        assert list(drawn.get_xdata()) == [p.bytes for p in pick.series.ok_points()]
    assert list(curves[series_labels(picks)[1]].get_xdata()) == [2**20, 64 * 2**20, 512 * 2**20]  # not 1, 64, 512
    assert rate.get_xlabel().startswith("bytes per call")
    ticks = [t.get_text() for t in rate.get_xticklabels()]
    assert {"1 MiB", "64 MiB"} <= set(ticks) and all(t.endswith(("B", "KiB", "MiB", "GiB")) for t in ticks)
    # A --shape sweep beside the default one, and a cliff whose batch no tick names there: the mark says it.
    other = cliff_file(tmp_path / "c.json", {1: 1000.0, 4: 10000.0, 16: 6000.0, 64: 2500.0})  # 1000x1000 items
    fig = figure(select([sim_file(tmp_path / "wide.json", shape=(224, 224, 3)), other])[0])
    # on a bytes axis the cliff is named by its size (batch 16 of 1000x1000 items), never by a batch
    assert fig.axes[0].get_xlabel().startswith("bytes per call") and "16 MB" in [t.get_text() for t in fig.axes[0].texts]
    assert not any("batch" in t.get_text() for t in fig.axes[0].texts)
    assert any("cliff: −40% at 16 MB" in t.get_text() for t in fig.legends[0].get_texts())
    same = figure(select([sweep, sim_file(tmp_path / "again.json")])[0]).axes[0]  # one shape: batch sizes, as before
    assert same.get_xlabel() == "batch size (images)" and list(same.get_xticks()) == list(BATCHES)


def test_the_mbps_axis_goes_log_when_the_medians_span_more_than_ten_times(tmp_path) -> None:
    wide = select([cliff_file(tmp_path / "w.json", {1: 653.0, 4: 4199.0, 16: 50000.0})])[0]
    narrow = select([cliff_file(tmp_path / "n.json", {1: 1000.0, 4: 5000.0, 16: 10000.0})])[0]  # exactly 10x: linear

    def scale(picks, **how) -> tuple[str, str, float]:
        rate = figure(picks, **how).axes[0]
        return rate.get_yscale(), rate.get_ylabel(), rate.get_ylim()[0]

    log, label, _ = scale(wide)
    assert log == "log" and label == "median MB/s (10^6 B/s), log scale"
    linear, label, bottom = scale(narrow)
    assert linear == "linear" and "log" not in label and bottom == 0
    assert scale(wide, y_scale="linear")[0] == "linear" and scale(narrow, y_scale="log")[0] == "log"
    with pytest.raises(XferbenchError, match="--y-scale sqrt: give auto, linear or log"):
        figure(narrow, y_scale="sqrt")


def test_a_long_difference_between_files_is_never_cut(tmp_path) -> None:
    from test_pairing import TUNABLES, sweep_file
    from xferbench.reading.plot import LABEL_WIDTH

    value = f"{TUNABLES}:glibc.malloc.mxfast=64"
    assert len(value) == 100
    a = sweep_file(tmp_path / "a.json", {}, seed=1)
    b = sweep_file(tmp_path / "b.json", {"GLIBC_TUNABLES": value}, seed=2)
    fig = figure(select([a, b], Selection(frameworks=("torch",)))[0])
    texts = visible_texts(fig)
    assert any(value in text.replace("\n", "") for text in texts)
    assert not any("…" in text for text in texts)
    assert all(len(line) <= LABEL_WIDTH for text in legend_texts(fig) for line in text.split("\n"))


def test_a_wrapped_label_breaks_at_separators_and_keeps_every_character() -> None:
    from xferbench.reading.plot import wrapped

    assert wrapped("b: GLIBC_TUNABLES=a.b=1:c.d=2", width=21) == "b:\nGLIBC_TUNABLES=a.b=1:\nc.d=2"
    word = "x" * 130  # no separator to break at: split, nothing dropped
    assert wrapped(f"file: {word}", width=60).split("\n") == ["file:", "x" * 60, "x" * 60, "x" * 10]
    assert wrapped("short") == "short"


def test_the_batch_of_a_cliff_is_always_labelled(tmp_path) -> None:
    rates = {1: 1000.0, 16: 6000.0, 64: 9000.0, 128: 9500.0, 160: 9800.0, 170: 10000.0, 171: 5000.0, 172: 5000.0, 256: 5200.0}
    picks, _ = select([cliff_file(tmp_path / "c.json", rates)])
    assert picks[0].series.summary.cliff_batch_size == 171
    rate = figure(picks).axes[0]
    ticks = {tick: label.get_text() for tick, label in zip(rate.get_xticks(), rate.get_xticklabels())}
    assert ticks[171] == "171" and ticks[170] == ticks[172] == ""
    # Two cliffs a batch apart cannot both keep a tick: the one left without says its batch at its mark.
    earlier = cliff_file(tmp_path / "e.json", rates | {170: 5000.0, 160: 10000.0})
    fig = figure(select([tmp_path / "c.json", earlier])[0])
    rate = fig.axes[0]
    assert sorted(x for drawn in marks(fig).values() for x in drawn["cliff"]) == [170, 171]
    shown = [label.get_text() for label in rate.get_xticklabels()] + [t.get_text().removeprefix("batch ") for t in rate.texts]
    assert "170" in shown and "171" in shown


def test_plot_replaces_an_existing_figure_only_with_overwrite(tmp_path, monkeypatch) -> None:
    from xferbench.reading import plot

    run = sim_file(tmp_path / "run.json")
    out = tmp_path / "fig.png"
    out.write_bytes(b"mine")
    drawn: list[object] = []
    real = plot.figure
    monkeypatch.setattr(plot, "figure", lambda *a, **k: drawn.append(a) or real(*a, **k))
    r = CliRunner().invoke(app, ["plot", str(run), "-o", str(out)])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.output
    assert f"{out} already exists; choose another --out, or add --overwrite to replace it" in r.stderr
    assert out.read_bytes() == b"mine" and not drawn  # refused before drawing
    r = CliRunner().invoke(app, ["plot", str(run), "-o", str(out), "--overwrite", "--y-scale", "log"])
    assert r.exit_code == 0, r.output
    assert out.read_bytes().startswith(b"\x89PNG") and len(drawn) == 1
    assert CliRunner().invoke(app, ["plot", str(run)]).exit_code == 0  # the default, runs/run.png: refused the same way
    r = CliRunner().invoke(app, ["plot", str(run)])
    assert r.exit_code == 2 and "runs/run.png already exists; choose another --out, or add --overwrite" in r.stderr
    assert CliRunner().invoke(app, ["plot", str(run), "--overwrite"]).exit_code == 0


def test_frameworks_sharing_a_panel_draw_its_link_ceiling_once() -> None:
    """torch and the raw copy of one H200 run share the throughput panel: one theoretical line, one key."""
    run = Path(__file__).resolve().parent.parent / "results" / "nvidia-h200" / "2026-11-26" / "run-3" / "sweeps" / "pipelines.json"
    picks, _ = select([run], Selection(modes=("pinned", "raw_pinned")))
    texts = legend_texts(figure(picks))
    assert [t for t in texts if "theoretical" in t] == ["PCIe Gen5 x16 theoretical (63.0 GB/s, under load)"]


def test_a_plot_behind_a_file_where_a_folder_should_be_names_that_file(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    from xferbench.reading.plot import save

    (tmp_path / "file").write_text("")
    for inside in (tmp_path / "file" / "p.png", tmp_path / "file" / "deeper" / "p.png"):  # mkdir: "File exists", "Not a directory"
        with pytest.raises(XferbenchError) as raised:
            save(Figure(), inside)
        assert str(raised.value) == f"cannot write the plot to {inside}: {tmp_path / 'file'} is a file, not a folder; choose another --out"
