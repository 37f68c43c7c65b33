"""A framework that is installed yet cannot start (an import that raises, as a tensorflow-metal plugin
built for another TensorFlow does) is an absent framework in a default sweep, never the end of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import FAST_ARGS
from xferbench.cli import app
from xferbench.core.results import load

ERROR = "dlopen(libmetal_plugin.dylib, 0x0006): Symbol not found: _TF_GetInputPropertiesList"


@pytest.fixture()
def broken_tensorflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A tensorflow package whose import raises, ahead of the real one on every worker's path."""
    package = tmp_path / "site" / "tensorflow"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(f"raise ImportError({ERROR!r})\n")
    monkeypatch.setenv("PYTHONPATH", str(package.parent))
    return ERROR


def test_a_default_sweep_measures_the_others_and_names_the_error(broken_tensorflow, tmp_path, monkeypatch) -> None:
    from xferbench.measuring import backends

    # the frameworks a default sweep runs, cut to torch, tf and host so the test stays short
    monkeypatch.setattr(backends, "BACKENDS", {k: v for k, v in backends.BACKENDS.items() if k in ("torch", "tf", "host")})
    out = tmp_path / "run.json"
    result = CliRunner().invoke(app, ["sweep", "--batch-sizes", "1", "-m", "pageable,eager,numpy", "-o", str(out), *FAST_ARGS])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "skipping tf/eager/copy@cpu: tf failed to start in" in said and ERROR in said
    saved = load(out)
    status = {s.label(): (s.status, s.reason) for s in saved.series}
    assert status["torch/pageable/copy@cpu"][0] == status["host/numpy/copy@cpu"][0] == "ok"
    assert status["tf/eager/copy@cpu"][0] == "skipped" and ERROR in (status["tf/eager/copy@cpu"][1] or "")
    assert all(p.status == "ok" for s in saved.series if s.status == "ok" for p in s.points)


def test_named_with_f_its_error_is_the_answer(broken_tensorflow, tmp_path) -> None:
    result = CliRunner().invoke(app, ["sweep", "-f", "tf", "--batch-sizes", "1", "-o", str(tmp_path / "r.json"), *FAST_ARGS])
    assert result.exit_code == 2 and "tf failed to start in" in result.output and ERROR in " ".join(result.output.split())
    assert "Traceback" not in result.output and not (tmp_path / "r.json").exists()


def test_paths_and_env_say_why(broken_tensorflow) -> None:
    import json

    listed = CliRunner().invoke(app, ["paths", "--all"], env={"COLUMNS": "400"})
    assert listed.exit_code == 0, listed.output
    tf_rows = [line for line in listed.stdout.splitlines() if line.startswith("│ tf ")]
    assert tf_rows and all("unavailable: tf failed to start in" in line and "Symbol not found" in line for line in tf_rows)
    shown = CliRunner().invoke(app, ["env", "--all"])
    assert shown.exit_code == 0 and ERROR in json.loads(shown.stdout)["frameworks_failed"]["tf"]


def test_an_m1_file_against_an_rtx_file_never_says_a_bare_faster(tmp_path) -> None:
    """torch's .to('mps') wraps the NumPy pages and blits them within one memory; .to('cuda') crosses
    PCIe: paired, their ratio is time until a batch is usable, and every row says so."""
    import json as _json

    from test_changes import curve, save
    from xferbench.reading import compare as comparing
    from xferbench.reading import report
    from xferbench.core.results import select
    from xferbench.core.spec import HOST_TO_DEVICE

    def gpu(name: str, device: str, label: str, rate: float, seed: int, **env: Any) -> Path:
        series = curve("eager", {1: rate, 64: rate * 2})
        series.framework = "torch"
        path = save(tmp_path / f"{name}.json", [series])
        data = _json.loads(path.read_text())
        for one in data["series"]:
            one.update(framework="torch", mode="pageable", device=device, device_name=label, transfer=HOST_TO_DEVICE)
        data["environment"].update(env)
        path.write_text(_json.dumps(data))
        return path

    mac = {"id": "mps", "kind": "mps", "name": "Apple M1 Pro (16-core GPU)", "chip": "Apple M1 Pro", "gpu_cores": 16}
    m1 = gpu("m1", "mps", "Apple M1 Pro (16-core GPU)", 4000.0, 1, macos="15.5", memory_bytes=32 * 2**30, devices=[mac])
    rtx = gpu("rtx", "cuda:0", "NVIDIA GeForce RTX 2080", 2000.0, 2, memory_bytes=64 * 2**30,
              devices=[{"id": "cuda:0", "kind": "cuda", "name": "NVIDIA GeForce RTX 2080"}])  # fmt: skip
    text = report.render(*select([rtx, m1]))
    differs = text.split("### What differs")[1].split("\n\n")[1].splitlines()
    assert differs[2].startswith("| what is copied | a host-to-device transfer over the GPU's link (CUDA) | a copy within unified memory")
    assert differs[3].startswith("| device | NVIDIA GeForce RTX 2080 | Apple M1 Pro (16-core GPU) |")
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:] for line in differs[2:]}
    assert rows["GPU cores"] == ["—", "16 |"] and rows["memory"] == ["64 GiB", "32 GiB |"] and rows["macOS"] == ["—", "15.5 |"]
    assert "% of link or memory (theoretical)" in text
    line = next(x for x in text.splitlines() if x.startswith("- `torch/pageable/copy`"))
    assert line.startswith("- `torch/pageable/copy` (unlike copies): unlike copies (rtx: a host-to-device transfer over the"
                           " GPU's link (CUDA); m1: a copy within unified memory (Apple GPU, MPS)), so the ratio compares the"
                           " time until a batch is usable on each device: m1 is 2.00× faster")  # fmt: skip
    for row in (x for x in text.splitlines() if x.startswith("|") and ("faster" in x or "slower" in x)):
        assert "unlike copies" in row, row  # every row with a verdict names the difference
    grid = text.split("### Ratio at each batch")[1]
    assert "| batch | `torch/pageable/copy` (unlike copies) |" in grid
    data = comparing.to_dict(comparing.compare_files(rtx, m1), rtx, m1)
    (path,) = data["paths"]
    assert path["unlike"] == ["a host-to-device transfer over the GPU's link (CUDA)", "a copy within unified memory (Apple GPU, MPS)"]
    assert path["sentence"].startswith("unlike copies (BASE: a host-to-device transfer") and "NEW is 2.00× faster" in path["sentence"]
    assert all(r["unlike"] and r["verdict"] == "faster" for r in data["rows"])
    # the other way round every point is slower: reported, and no regression for a CI gate (unlike copies)
    back = comparing.compare_files(m1, rtx)
    assert back.slower and not back.regressed and back.summary().startswith("2 points between unlike copies (reported, not counted")
    shown = CliRunner().invoke(app, ["compare", str(m1), str(rtx)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "slower (unlike copies)" in shown.stdout
    assert CliRunner().invoke(app, ["compare", str(m1), str(rtx), "--fail-on", "change"]).exit_code == 0


@pytest.mark.slow
def test_on_a_simulated_mac_a_broken_tensorflow_costs_only_its_own_series(broken_tensorflow, tmp_path) -> None:
    """The tensorflow-metal mismatch happens on Macs: there too, torch and the host copy are measured."""
    from test_macos import simulated_macos_sweep

    r, result = simulated_macos_sweep(tmp_path, "-m", "pageable", "-m", "eager", "-m", "numpy")
    assert r.returncode == 0, r.stdout + r.stderr
    status = {s["framework"]: (s["status"], s.get("reason") or "") for s in result["series"]}
    assert status["torch"][0] == status["host"][0] == "ok"
    assert status["tf"][0] == "skipped" and ERROR in status["tf"][1]
    assert result["environment"]["os"].startswith("macOS")
