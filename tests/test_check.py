"""`xferbench check`'s verdicts, each threshold on files made on the CPU (tests/nodes.py), and its
bad input; what only a GPU can run (the check itself) is in test_gpu.py."""

from __future__ import annotations

import dataclasses

import pytest
from typer.testing import CliRunner

from nodes import H100, node, write
from xferbench import check
from xferbench.cli import app
from xferbench.references import reference_for
from xferbench.results import Result


def findings(result, **kwargs) -> dict[str, check.Finding]:
    (verdict,) = check.verdicts(result, **kwargs)
    return {f.name: f for f in verdict.findings}


def test_a_healthy_h100_passes_every_check() -> None:
    (verdict,) = check.verdicts(node("a", raw_gbps=55))
    assert verdict.status == check.PASS and verdict.device == "cuda:0" and verdict.ceiling_mbps == pytest.approx(55_000, rel=0.02)
    found = {f.name: f.status for f in verdict.findings}
    assert found == {"link": "pass", "link state": "pass", "reference": "pass", "replays": "pass",
                     "torch/pinned_into/copy@cuda:0": "info"}


def test_below_the_links_share_fails_and_the_share_is_an_option() -> None:
    slow = node("a", raw_gbps=45)  # 71% of Gen5 x16's 63 GB/s
    assert findings(slow)["link"].status == check.FAIL and "71% of PCIe Gen5 x16" in findings(slow)["link"].figure
    assert findings(slow, link_share=0.70)["link"].status == check.PASS


def test_below_the_models_published_floor_fails_and_a_model_without_one_says_so() -> None:
    assert findings(node("a", raw_gbps=51))["reference"].status == check.FAIL  # H100 floor: 52 GB/s
    assert "published floor of 52 GB/s" in findings(node("a", raw_gbps=51))["reference"].figure
    unknown = findings(node("a", raw_gbps=51, name="NVIDIA L4"))["reference"]
    assert unknown.status == check.INFO and unknown.figure.startswith("no reference for this model (NVIDIA L4)")
    typical = findings(node("a", raw_gbps=40, name="NVIDIA H200"))["reference"]
    assert typical.status == check.INFO and "no published floor for H200" in typical.figure
    assert reference_for("NVIDIA GH200 480GB") is None and reference_for(H100).model == "H100"


def test_a_down_trained_link_fails_and_rising_replays_warn() -> None:
    state = findings(node("a", raw_gbps=27, under=(5, 8)))["link state"]
    assert state.status == check.FAIL and "Gen5 x8 under load, maximum Gen5 x16" in state.figure
    replays = findings(node("a", replays=(10, 14)))["replays"]
    assert replays.status == check.WARN and "rose by 4" in replays.figure
    (verdict,) = check.verdicts(node("a", replays=(10, 14)))
    assert verdict.status == check.PASS  # a warning, not a failure
    assert findings(node("a", replays=None))["replays"].status == check.NA


def test_a_baseline_fails_a_significant_slowdown_and_not_noise() -> None:
    base = node("a", raw_gbps=55)
    assert findings(node("a", raw_gbps=48), baseline=base)["baseline cuda/raw_pinned/copy/streamed@cuda:0"].status == check.FAIL
    same = findings(node("a", raw_gbps=55), baseline=base)
    assert all(f.status == check.PASS for name, f in same.items() if name.startswith("baseline"))
    other = findings(node("a"), baseline=Result(environment={}, config={}, created="x"))
    assert other["baseline"].status == check.NA


def test_the_verdicts_are_kept_in_the_result_file(tmp_path) -> None:
    result = node("a", raw_gbps=45)
    found = check.verdicts(result)
    result.check = check.to_dict(found, 0.8, None)
    from xferbench.results import load

    again = load(write(result, tmp_path))
    assert again.check["status"] == "fail" and again.check["devices"][0]["status"] == "fail"
    assert again.check["devices"][0]["findings"][0]["name"] == "link"


def test_a_raw_copy_that_measured_nothing_fails() -> None:
    result = node("a")
    raw = result.series[0]
    result.series[0] = dataclasses.replace(raw, status="failed", reason="verification failed: 3 bytes differ", points=[])
    (verdict,) = check.verdicts(result)
    assert verdict.status == check.FAIL and "verification failed" in verdict.findings[0].figure


@pytest.mark.parametrize("args, message", [
    ([], "nothing to check: no NVIDIA GPU here"),
    (["--link-share", "120%"], "--link-share '120%': give a percentage above 0% and at most 100%"),
    (["--link-share", "0"], "--link-share '0': give a percentage above 0%"),
    (["--path", "torch"], "--path 'torch': give FRAMEWORK/MODE"),
    (["--baseline", "missing.json"], "missing.json: no such file"),
    (["--batch-size", "0"], "--batch-size 0: give a positive integer"),
])  # fmt: skip
def test_bad_input_and_a_machine_without_a_gpu_exit_2_in_one_line(args, message) -> None:
    result = CliRunner().invoke(app, ["check", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
