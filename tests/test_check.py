"""`xferbench check`'s verdicts, each threshold on files made on the CPU (tests/nodes.py), and its
bad input; what only a GPU can run (the check itself) is in test_gpu.py."""

from __future__ import annotations

import dataclasses

import pytest
from typer.testing import CliRunner

from nodes import H100, node, write
from xferbench.health import check
from xferbench.cli import app
from xferbench.core.verdict import Verdict
from xferbench.core.references import floor_for
from xferbench.core.results import Result


def findings(result, **kwargs) -> dict[str, Verdict]:
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
    assert "at least 75% needed" in findings(slow)["link"].figure  # the default: an A100 at Azure's floor passes it
    assert findings(slow, link_share=0.70)["link"].status == check.PASS


def test_below_the_models_published_floor_fails_citing_its_source_and_date_and_a_model_without_one_says_so() -> None:
    below = findings(node("a", raw_gbps=47))["reference"]  # H100 SXM5: Azure's floor is 48 GB/s since 2024-06-28
    assert below.status == check.FAIL and " GB/s against the floor of 48 GB/s, Azure HPC health checks" in below.figure
    assert "conf/nd96isr_h100_v5.conf" in below.figure and "2024-06-28" in below.figure
    assert "published for H100: 56.68–57.07 GB/s host to device, 1 source" in below.figure  # shown, not judged
    assert findings(node("a", raw_gbps=49, under=(5, 16)), link_share=0.7)["reference"].status == check.PASS
    unknown = findings(node("a", raw_gbps=51, name="NVIDIA L4"))["reference"]
    assert unknown.status == check.INFO and " GB/s; no published health-check floor for this model (NVIDIA L4)" in unknown.figure
    assert "no published host-to-device figure for this model" in unknown.figure
    h200 = findings(node("a", raw_gbps=40, name="NVIDIA H200"))["reference"]
    assert h200.status == check.FAIL and "nd96isr_h200_v5.conf" in h200.figure
    assert floor_for("NVIDIA GH200 480GB") is None and floor_for(H100).low_gbps == 48


def test_a_down_trained_link_fails_and_rising_replays_warn() -> None:
    state = findings(node("a", raw_gbps=27, under=(5, 8)))["link state"]
    assert state.status == check.FAIL and "ran below its maximum (Gen5 x16) while data moved: down to Gen5 x8" in state.figure
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
    from xferbench.core.results import load

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
    (["--link-share", "0.8"], "--link-share '0.8' is ambiguous: write 80% or 0.8%"),
    (["--path", "torch"], "--path 'torch': give FRAMEWORK/MODE"),
    (["--baseline", "missing.json"], "missing.json: no such file"),
    (["--batch-size", "0"], "--batch-size 0: give a whole number of items from 1 to 1,048,576"),
])  # fmt: skip
def test_bad_input_and_a_machine_without_a_gpu_exit_2_in_one_line(args, message) -> None:
    result = CliRunner().invoke(app, ["check", *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_a_link_waking_from_idle_in_one_sample_is_not_down_trained() -> None:
    from nodes import link

    result = node("a")
    result.series[0].link = link(5, 16, waking=1)  # one of eight samples under load still at Gen1
    assert findings(result)["link state"].status == check.PASS
    result.series[0].link = link(5, 16, waking=5)  # most of them: the link did not train up
    assert findings(result)["link state"].status == check.FAIL


def test_a_raw_copy_that_failed_beside_one_that_measured_fails_the_gpu() -> None:
    result = node("a")
    broken = dataclasses.replace(result.series[0], method="per-call", status="failed", reason="verification failed: 3 bytes differ")
    result.series.insert(0, broken)
    (verdict,) = check.verdicts(result)
    assert verdict.status == check.FAIL and "verification failed: 3 bytes differ" in findings(result)["raw copy"].figure


def test_a_gpu_nvml_sees_and_cuda_did_not_check_fails_the_node() -> None:
    result = node("a", gpus=2)
    result.environment["nvml"] = {"available": True, "gpus": [{"index": i} for i in range(3)]}
    *gpus, whole = check.verdicts(result)
    assert [v.status for v in gpus] == [check.PASS, check.PASS] and whole.device == "node" and whole.status == check.FAIL
    assert "NVML sees 3 GPUs but CUDA let 2 be checked" in whole.findings[0].figure
    result.environment["settings"] = {"CUDA_VISIBLE_DEVICES": "0,1"}  # the user's choice, not a fault
    assert [v.device for v in check.verdicts(result)] == ["cuda:0", "cuda:1"]


def test_a_gpu_nothing_can_judge_is_not_passed() -> None:
    result = node("a", name="NVIDIA L40S", replays=None)
    for series in result.series:
        series.link = {"reason": "nvidia-ml-py is not installed"}
    result.environment["nvml"] = {"available": False, "reason": "nvidia-ml-py is not installed: pip install 'xferbench[nvml]'"}
    for device in result.environment["devices"]:
        device.pop("nvml", None)
    (verdict,) = check.verdicts(result)
    assert verdict.status == check.NA
    assert {f.name: f.status for f in verdict.findings}["reference"] == check.INFO
    assert check.verdicts(result, baseline=node("a", name="NVIDIA L40S"))[0].status == check.PASS  # a baseline judges it


# Through the command line, as a Slurm prolog or a Kubernetes Job sees it: the node's measurement is
# given (a file shaped as a real node writes it, NVML's GPU list included); the verdicts, the file's
# `check` field and the exit code are what `xferbench check` itself produces.


@pytest.fixture
def node_check(monkeypatch, tmp_path):
    from xferbench import cli
    from xferbench.core import environment
    from xferbench.core.results import OutputFile, load

    def run(result: Result, *args: str):
        monkeypatch.setattr(environment, "nvidia_gpu_present", lambda: True)

        def measured(config, out_path, overwrite):
            output = OutputFile(tmp_path / f"{result.environment['host']}.json")
            output.save(result)
            return result, output

        monkeypatch.setattr(cli, "measure_check", measured)
        said = CliRunner().invoke(app, ["check", *args])
        return said, load(tmp_path / f"{result.environment['host']}.json").check

    return run


def test_a_healthy_node_exits_0_and_is_written_as_passed(node_check) -> None:
    healthy = node("a", gpus=2)
    assert [g["uuid"] for g in healthy.environment["nvml"]["gpus"]] == ["GPU-a-0", "GPU-a-1"]  # as NVML lists them
    said, written = node_check(healthy)
    assert said.exit_code == 0, said.output
    assert written["status"] == "pass" and [d["status"] for d in written["devices"]] == ["pass", "pass"]
    assert "2 of 2 passed" in said.output


def test_a_gpu_cuda_did_not_check_fails_the_node_with_exit_1(node_check) -> None:
    lost = node("b", gpus=2)
    lost.series = [s for s in lost.series if s.device == "cuda:0"]  # NVML lists two GPUs; CUDA let one be measured
    said, written = node_check(lost)
    assert said.exit_code == 1, said.output
    assert written["status"] == "fail" and written["devices"][-1]["device"] == "node"
    assert "NVML sees 2 GPUs but CUDA let 1 be checked" in said.output


def test_a_slow_gpu_exits_1(node_check) -> None:
    said, written = node_check(node("c", raw_gbps=40, gpus=2))
    assert said.exit_code == 1 and written["status"] == "fail", said.output


def test_a_node_nothing_can_judge_exits_2_and_is_never_written_as_passed(node_check) -> None:
    blind = node("d", name="NVIDIA L40S", replays=None)
    blind.environment["nvml"] = {"available": False, "reason": "nvidia-ml-py is not installed: pip install 'xferbench[nvml]'"}
    for device in blind.environment["devices"]:
        device.pop("nvml", None)
    for series in blind.series:
        series.link = {"reason": "nvidia-ml-py is not installed"}
    said, written = node_check(blind)
    assert said.exit_code == 2, said.output
    assert written["status"] == "n/a" and written["devices"][0]["status"] == "n/a"
    assert "nothing could judge cuda:0" in said.output and "Traceback" not in said.output
    assert check.overall([]) == check.NA  # nothing checked at all is no pass either


def test_a_damaged_baseline_point_is_named_and_judges_nothing(node_check, tmp_path) -> None:
    import json

    from nodes import write

    base = write(node("a", raw_gbps=55), tmp_path, "base")
    data = json.loads(base.read_text())
    for series in data["series"]:
        for point in series["points"]:
            point["times_s"] = [-t for t in point["times_s"]]  # a sign flipped by a bad edit: not what a run wrote
    data["series"][1]["points"][0]["times_s"] = [abs(t) for t in data["series"][1]["points"][0]["times_s"]]  # torch's kept
    base.write_text(json.dumps(data))
    said, written = node_check(node("a", raw_gbps=40), "--baseline", str(base))
    assert "left out 1 damaged point(s): cuda/raw_pinned/copy/streamed@cuda:0 batch 512" in " ".join(said.stderr.split())
    (gpu,) = [d for d in written["devices"] if d["device"] == "cuda:0"]
    baseline = [f for f in gpu["findings"] if f["name"].startswith("baseline")]
    assert baseline and not any("raw_pinned" in f["name"] for f in baseline)  # the 55 GB/s that would have failed 40 is not used


def test_the_baseline_judges_each_series_at_the_batches_both_measured_with_the_threshold_given() -> None:
    from nodes import series

    base = node("a", raw_gbps=55)
    base.series = [s for s in base.series if s.framework == "cuda"]  # no torch series: nothing to judge torch by
    base.series[0].points.append(series("cuda", "raw_pinned", 55, batch=1024).points[0])  # a batch the check did not measure
    checked = node("a", raw_gbps=50.5)  # 8% slower than the baseline
    checked.series = [checked.series[1], checked.series[0]]  # the torch series, with no baseline, comes first
    found = findings(checked, baseline=base)
    name = "baseline cuda/raw_pinned/copy/streamed@cuda:0"
    assert [n for n in found if n.startswith("baseline")] == [name]  # batch 512 only; torch's absence skipped, not the end
    assert found[name].status == check.FAIL
    assert "MB/s at batch 512 (0.9" in found[name].figure and "slower)" in found[name].figure
    assert findings(checked, baseline=base, threshold=0.10)[name].status == check.PASS  # 8% is under a 10% threshold
    lone = findings(node("a"), baseline=Result(environment={}, config={}, created="x"))["baseline"]
    assert lone.figure == "the baseline has no series measured on this GPU at a batch checked here"


def test_a_baseline_too_noisy_to_tell_warns() -> None:
    import random

    base = node("a", raw_gbps=55)
    checked = node("a", raw_gbps=55)
    raw = checked.series[0]
    rng = random.Random(1)
    for point in raw.points:  # half the samples far slower, half far faster: no significant change, a wide spread
        point.times_s = [t * (0.5 if rng.random() < 0.5 else 1.45) for t in point.times_s]
    raw.refresh_summary()
    found = findings(checked, baseline=base)["baseline cuda/raw_pinned/copy/streamed@cuda:0"]
    assert found.status == check.WARN, found.figure


def test_the_link_finding_passes_at_exactly_the_share_and_says_why_it_cannot_judge() -> None:
    healthy = node("a")
    raw = healthy.series[0]
    exact = check._link_findings(raw, healthy.environment, 0.75 * 63_000, 0.75)[0]  # Gen5 x16: 63 GB/s
    assert (exact.name, exact.status, exact.figure) == ("link", check.PASS, "47.2 GB/s, 75% of PCIe Gen5 x16 theoretical (63.0 GB/s, under load); at least 75% needed")
    assert check._link_findings(raw, healthy.environment, 0.7499 * 63_000, 0.75)[0].status == check.FAIL
    blind = {"devices": [{"id": "cuda:0", "kind": "cuda"}]}  # no NVML facts at all
    for link, environment, why in (({"reason": "NVML failed after 2 sample(s): GPU is lost"}, blind, "NVML failed after 2 sample(s): GPU is lost"),
                                   ({}, {**blind, "nvml": {"reason": "nvidia-ml-py is not installed"}}, "nvidia-ml-py is not installed"),
                                   (None, blind, "NVML gave no PCIe link")):  # fmt: skip
        found = check._link_findings(dataclasses.replace(raw, link=link), environment, 55_000, 0.75)[0]
        assert (found.name, found.status, found.figure) == ("link", check.NA, f"no theoretical rate to judge by: {why}")


def everything(verdict: check.DeviceVerdict) -> list[tuple[str, str, str]]:
    return [(f.name, f.status, f.figure) for f in verdict.findings if f.name != "reference"]


def test_every_finding_of_a_healthy_node_word_for_word() -> None:
    zero, one = check.verdicts(node("n1", raw_gbps=55.0, gpus=2))
    for verdict, device in ((zero, "cuda:0"), (one, "cuda:1")):
        assert (verdict.device, verdict.device_name) == (device, H100)
        assert everything(verdict) == [
            ("link", check.PASS, "54.9 GB/s, 87% of PCIe Gen5 x16 theoretical (63.0 GB/s, under load); at least 75% needed"),
            ("link state", check.PASS, "Gen5 x16 under load, its maximum Gen5 x16"),
            ("replays", check.PASS, "no replays during the check (counter 0)"),
            (f"torch/pinned_into/copy@{device}", check.INFO, "49,257 MB/s at batch 512, 90% of the raw ceiling"),
        ]


def test_the_replay_counter_after_is_the_same_gpus_by_uuid_else_by_index() -> None:
    result = node("n1", gpus=2)
    cuda = [d for d in result.environment["devices"] if d["id"].startswith("cuda")]
    cuda[1]["nvml"]["pcie_replay_counter"] = 3
    after = result.environment["nvml_after"]["gpus"]
    after[1]["pcie_replay_counter"] = 7
    after.reverse()  # NVML listed them the other way round after: the UUID finds each
    assert everything(check.verdicts(result)[1])[2] == \
        ("replays", check.WARN, "the PCIe replay counter rose by 4 during the check (3 → 7): the link retransmitted packets")  # fmt: skip
    assert everything(check.verdicts(result)[0])[2] == ("replays", check.PASS, "no replays during the check (counter 0)")
    after.reverse()
    for gpu in after:
        del gpu["uuid"]  # no UUID after: NVML's index
    assert everything(check.verdicts(result)[1])[2][1] == check.WARN
    result.environment["nvml_after"] = {"available": False}
    assert everything(check.verdicts(result)[0])[2] == ("replays", check.NA, "NVML gave no PCIe replay counter before and after")


def test_the_link_state_says_what_nvml_did_not_give() -> None:
    idle = node("n1")
    for series in idle.series:
        series.link = {**series.link, "rx_kbps": [0] * 10}  # nothing moved while NVML read the link
        series.link.pop("summary")
    assert everything(check.verdicts(idle)[0])[1] == ("link state", check.NA, "no NVML reading while data moved (max Gen5 x16)")
    blind = node("n1")
    for device in blind.environment["devices"]:
        device.pop("nvml", None)
    for series in blind.series:
        series.link = {key: value for key, value in series.link.items() if not key.endswith("_max")}
    assert everything(check.verdicts(blind)[0])[1] == ("link state", check.NA, "Gen5 x16 under load; NVML gave no maximum")


def test_a_raw_copy_or_a_path_that_failed_is_named_with_its_reason() -> None:
    from nodes import series

    broken = node("n1")
    raw = broken.series[0]
    raw.points.append(dataclasses.replace(series("cuda", "raw_pinned", 55, batch=1024).points[0], status="error", error="CUDA error: an illegal memory access"))
    torch = broken.series[1]
    torch.points, torch.status, torch.reason = [], "failed", "the torch worker process was killed by SIGKILL"
    broken.series.append(dataclasses.replace(series("jax", "device_put", 9.0), status="skipped", points=[]))
    (verdict,) = check.verdicts(broken)
    assert everything(verdict)[0] == ("raw copy", check.FAIL, "a raw copy failed: cuda/raw_pinned/copy/streamed@cuda:0 1024: CUDA error: an illegal memory access")
    assert everything(verdict)[-1] == ("torch/pinned_into/copy@cuda:0", check.FAIL, "measured nothing: the torch worker process was killed by SIGKILL")
    assert not any(name.startswith("jax") for name, _, _ in everything(verdict))  # skipped: not judged
    nothing = node("n1")
    nothing.series[0].points, nothing.series[0].status, nothing.series[0].reason = [], "failed", "cudaErrorNoDevice"
    (verdict,) = check.verdicts(nothing)
    assert everything(verdict) == [("raw copy", check.FAIL, "the raw pinned copy measured nothing: cudaErrorNoDevice"),
                                   ("replays", check.PASS, "no replays during the check (counter 0)")]  # fmt: skip
    assert verdict.ceiling_mbps is None and verdict.device_name == H100


def test_the_verdict_names_what_it_can_and_keeps_every_finding_beside_the_baseline() -> None:
    lost = node("n1", gpus=2)
    lost.series = [s for s in lost.series if s.device == "cuda:0"]
    assert check.verdicts(lost)[-1].device_name == "n1"  # the node's own verdict, by host name
    del lost.environment["host"]
    assert check.verdicts(lost)[-1].device_name == "this node"
    nameless = node("n1")
    nameless.series = [dataclasses.replace(s, device_name=None) for s in nameless.series]
    assert check.verdicts(nameless)[0].device_name == "cuda:0"
    empty = node("n1")
    empty.series[0].points, empty.series[0].status = [], "failed"
    assert everything(check.verdicts(empty)[0])[0] == ("raw copy", check.FAIL, "the raw pinned copy measured nothing: no point")
    judged = [name for name, _, _ in everything(check.verdicts(node("n1"), baseline=node("n1"))[0])]
    assert judged[:4] == ["link", "link state", "replays", "torch/pinned_into/copy@cuda:0"] and judged[4].startswith("baseline")
