"""`xferbench check`'s rules one by one, on node files shaped as real checks write them (tests/nodes.py):
what makes a GPU pass, fail or stay unjudged, which series and point it is judged by, each finding's exact
words, the baseline's verdicts, the node's own verdict and what the result file keeps."""

from __future__ import annotations

import dataclasses

import pytest

from nodes import H100, link, node, series
from xferbench.core.results import Result
from xferbench.core.spec import PER_CALL
from xferbench.core.verdict import Verdict
from xferbench.health import check
from xferbench.health.check import FAIL, INFO, NA, PASS, WARN, DeviceVerdict

RAW = "cuda/raw_pinned/copy/streamed@cuda:0"
TORCH = "torch/pinned_into/copy@cuda:0"
FLOOR = ("48 GB/s, Azure HPC health checks (nvbandwidth v0.4 host_to_device_memcpy_ce and device_to_host_memcpy_ce, -i 10,"
         " clocks locked), Azure/azurehpc-health-checks conf/nd96isr_h100_v5.conf (also nd96is_h100_v5) @0e0a1ac, 2024-06-28")
PUBLISHED = "published for H100: 56.68–57.07 GB/s host to device, 1 source (https://github.com/NVIDIA/nvbandwidth/issues/6)"


def findings(verdict: DeviceVerdict) -> list[tuple[str, str, str]]:
    return [(f.name, f.status, f.figure) for f in verdict.findings]


def gpu(*found: tuple[str, str]) -> DeviceVerdict:
    return DeviceVerdict("cuda:0", H100, 55_000.0, [Verdict(name, status, "") for name, status in found])


# a GPU's verdict and the node's


@pytest.mark.parametrize("found, status", [
    ([("link", PASS)], PASS), ([("reference", PASS)], PASS), ([("link state", PASS)], PASS),
    ([("baseline", PASS)], PASS), ([(f"baseline {RAW}", PASS)], PASS),
    ([("link", PASS), ("replays", WARN)], PASS), ([("link", PASS), (TORCH, FAIL)], FAIL),
    ([("replays", PASS), (TORCH, INFO)], NA), ([("replays", WARN)], NA), ([("link", NA), ("reference", INFO)], NA),
    ([(TORCH, PASS)], NA), ([("raw copy", PASS)], NA), ([("link baseline", PASS)], NA), ([], NA),
    ([("link", PASS), ("reference", FAIL)], FAIL), ([("GPU count", FAIL)], FAIL),
])  # fmt: skip
def test_a_gpu_passes_only_on_a_judging_check_and_fails_on_any_failure(found, status) -> None:
    """A GPU fails on any failed finding; passes only where link, reference, link state or a baseline passed; else n/a."""
    assert gpu(*found).status == status


def test_the_node_fails_on_any_failure_and_is_unjudged_when_anything_is() -> None:
    """The node fails if any GPU failed, is n/a if nothing was checked or a GPU was n/a, and passes otherwise."""
    passed, failed, unjudged = gpu(("link", PASS)), gpu(("link", FAIL)), gpu(("replays", PASS))
    assert check.overall([passed, passed]) == PASS
    assert check.overall([passed, failed]) == FAIL and check.overall([unjudged, failed]) == FAIL
    assert check.overall([passed, unjudged]) == NA and check.overall([]) == NA
    assert check.EXIT_CODES == {PASS: 0, FAIL: 1, NA: 2}


# which series and point judge a GPU


def test_only_a_copy_host_to_device_on_one_device_alone_is_checked() -> None:
    """check judges host-to-device copies run on one device alone; other directions, ops and concurrent runs are not."""
    raw = node("n1").series[0]
    assert check.checked(raw)
    for other in (dataclasses.replace(raw, direction="d2h"), dataclasses.replace(raw, direction="bidir"),
                  dataclasses.replace(raw, concurrent=2), dataclasses.replace(raw, op="matmul")):  # fmt: skip
        assert not check.checked(other)


def test_the_ceiling_is_the_largest_batch_of_the_streamed_series_where_one_measured() -> None:
    """The raw ceiling is read at the largest measured batch, from a streamed series before a per-call one."""
    streamed = series("cuda", "raw_pinned", 55, batch=256)
    streamed.points += series("cuda", "raw_pinned", 40, batch=512).points + series("cuda", "raw_pinned", 60, batch=64).points
    per_call = series("cuda", "raw_pinned", 70, batch=1024, method=PER_CALL)
    found = check.best_point([per_call, streamed])
    assert found is not None and found[0] is streamed and found[1].batch_size == 512
    empty = dataclasses.replace(streamed, points=[])
    found = check.best_point([empty, per_call])
    assert found is not None and found[0] is per_call and found[1].batch_size == 1024
    failed = dataclasses.replace(per_call, points=[dataclasses.replace(per_call.points[0], status="error", error="x")])
    assert check.best_point([empty, failed]) is None and check.best_point([]) is None


def test_each_cuda_device_a_series_ran_on_gets_a_verdict_in_the_order_first_seen() -> None:
    """A verdict per CUDA device that ran something, in file order; the CPU and devices whose series were all skipped get none."""
    result = node("n1", gpus=3)
    result.series = [result.series[4], result.series[5], result.series[0], result.series[1], result.series[2], result.series[3]]
    result.series[4:6] = [dataclasses.replace(s, status="skipped", points=[]) for s in result.series[4:6]]
    result.series.append(dataclasses.replace(series("host", "numpy", 10), device="cpu"))
    result.environment["nvml"]["available"] = False
    assert [v.device for v in check.verdicts(result)] == ["cuda:2", "cuda:0"]


def test_a_gpu_without_its_model_name_is_called_by_its_device_and_a_later_series_may_name_it() -> None:
    """The GPU's name is the first checked series' model name; with none anywhere, its device id."""
    result = node("n1")
    result.series[0] = dataclasses.replace(result.series[0], device_name=None)
    assert check.verdicts(result)[0].device_name == H100
    result.series[1] = dataclasses.replace(result.series[1], device_name="")
    assert check.verdicts(result)[0].device_name == "cuda:0"


# each finding, word for word


def test_a_raw_copy_that_measured_nothing_names_the_first_reason_found() -> None:
    """A raw copy with no measured point fails the GPU, saying the series' reason first, else a point's error, else no point."""
    result = node("n1")
    raw = result.series[0]
    raw.points[0].status, raw.points[0].error = "error", "CUDA error: out of memory"
    (verdict,) = check.verdicts(result)
    assert findings(verdict) == [("raw copy", FAIL, "the raw pinned copy measured nothing: CUDA error: out of memory"),
                                 ("replays", PASS, "no replays during the check (counter 0)")]  # fmt: skip
    assert (verdict.status, verdict.ceiling_mbps) == (FAIL, None)
    raw.status, raw.reason = "failed", "worker died"
    assert findings(check.verdicts(result)[0])[0] == ("raw copy", FAIL, "the raw pinned copy measured nothing: worker died")


def test_a_raw_copy_that_broke_beside_one_that_measured_names_the_first_break() -> None:
    """Any raw point that errored, or raw series that failed, fails the GPU even where another raw point measured."""
    result = node("n1")
    extra = series("cuda", "raw_pinned", 55, batch=1024).points[0]
    result.series[0].points.append(dataclasses.replace(extra, status="error", error="bytes differ"))
    (verdict,) = check.verdicts(result)
    assert findings(verdict)[0] == ("raw copy", FAIL, f"a raw copy failed: {RAW} 1024: bytes differ")
    assert verdict.status == FAIL and verdict.ceiling_mbps == result.series[0].points[0].mbps
    assert [name for name, _, _ in findings(verdict)] == ["raw copy", "link", "link state", "reference", "replays", TORCH]
    lost = node("n1")
    lost.series.insert(0, dataclasses.replace(lost.series[0], method=PER_CALL, status="failed", reason="worker died", points=[]))
    assert findings(check.verdicts(lost)[0])[0] == ("raw copy", FAIL, "a raw copy failed: cuda/raw_pinned/copy@cuda:0: worker died")
    skipped = node("n1")
    skipped.series[0].points.append(dataclasses.replace(extra, status="skipped", error=None))
    assert findings(check.verdicts(skipped)[0])[0][0] == "link"  # a skipped point is no break


def test_the_link_finding_states_the_rate_the_share_reached_and_the_share_needed() -> None:
    """The link passes at or above the share of its theoretical rate and fails below, with the figures in one line."""
    healthy = node("n1")
    raw = healthy.series[0]
    found = check._link_findings(raw, healthy.environment, 50_400.0, 0.8)
    assert [(f.name, f.status, f.figure) for f in found] == [
        ("link", PASS, "50.4 GB/s, 80% of PCIe Gen5 x16 theoretical (63.0 GB/s, under load); at least 80% needed"),
        ("link state", PASS, "Gen5 x16 under load, its maximum Gen5 x16")]  # fmt: skip
    below = check._link_findings(raw, healthy.environment, 50_399.0, 0.8)[0]
    assert (below.status, below.figure) == (FAIL, "50.4 GB/s, 80% of PCIe Gen5 x16 theoretical (63.0 GB/s, under load); at least 80% needed")
    (verdict,) = check.verdicts(healthy, link_share=0.9)
    assert findings(verdict)[0] == ("link", FAIL, "54.9 GB/s, 87% of PCIe Gen5 x16 theoretical (63.0 GB/s, under load); at least 90% needed")
    assert check.LINK_SHARE == 0.75 and findings(check.verdicts(node("n1", raw_gbps=48))[0])[0][1] == PASS  # 76% by default


def test_a_down_trained_link_fails_in_the_words_of_its_samples() -> None:
    """A link below its maximum in most loaded samples fails the link state, saying how far and in how many samples."""
    result = node("n1", under=(4, 8))
    (verdict,) = check.verdicts(result)
    assert findings(verdict)[1] == ("link state", FAIL, "the PCIe link ran below its maximum (Gen5 x16) while data moved: down to"
                                    " Gen4 x8 in 8 of 8 samples; check the slot, riser, BIOS link speed and power settings")  # fmt: skip
    assert verdict.status == FAIL


def test_a_link_state_without_readings_says_what_is_missing() -> None:
    """No loaded sample and no maximum: n/a with no maximum named; a maximum alone is named beside it."""
    result = node("n1")
    raw = result.series[0]
    blind = {"devices": [{"id": "cuda:0", "kind": "cuda"}]}
    state = check._link_state(dataclasses.replace(raw, link={}), blind)
    assert (state.name, state.status, state.figure) == ("link state", NA, "no NVML reading while data moved")
    maxed = check._link_state(dataclasses.replace(raw, link={"pcie_gen_max": 4, "pcie_width_max": 8}), blind)
    assert (maxed.status, maxed.figure) == (NA, "no NVML reading while data moved (max Gen4 x8)")
    loaded = {"summary": {"gen_under_load": [3, 4], "width_under_load": [8, 16]}}
    under = check._link_state(dataclasses.replace(raw, link=loaded), blind)
    assert (under.status, under.figure) == (NA, "Gen4 x16 under load; NVML gave no maximum")
    both = check._link_state(dataclasses.replace(raw, link={**loaded, "pcie_gen_max": 4, "pcie_width_max": 16}), blind)
    assert (both.status, both.figure) == (PASS, "Gen4 x16 under load, its maximum Gen4 x16")


def test_the_reference_passes_at_the_models_floor_and_fails_below_it_citing_both_sources() -> None:
    """The raw ceiling against the published floor: at the floor passes, below fails; the published figures are quoted."""
    at = check._reference_finding(H100, 48_000.0)
    assert (at.name, at.status, at.figure) == ("reference", PASS, f"48.0 GB/s against the floor of {FLOOR}; {PUBLISHED}")
    below = check._reference_finding(H100, 47_990.0)
    assert (below.status, below.figure) == (FAIL, f"48.0 GB/s against the floor of {FLOOR}; {PUBLISHED}")
    unknown = check._reference_finding("NVIDIA L4", 31_260.0)
    assert (unknown.name, unknown.status, unknown.figure) == (
        "reference", INFO, "31.3 GB/s; no published health-check floor for this model (NVIDIA L4): only the link and a baseline"
        " judge it; no published host-to-device figure for this model (NVIDIA L4)")  # fmt: skip
    (verdict,) = check.verdicts(node("n1", raw_gbps=47))
    assert findings(verdict)[2][:2] == ("reference", FAIL) and verdict.status == FAIL


def test_replays_warn_with_the_rise_and_pass_when_the_counter_held() -> None:
    """A rising replay counter warns with both counts; a counter that held or fell passes, naming the count after."""
    result = node("n1")
    result.environment["devices"][1]["nvml"]["pcie_replay_counter"] = 1_000
    after = result.environment["nvml_after"]["gpus"][0]
    after["pcie_replay_counter"] = 2_500
    assert check._replay_finding(result.environment, "cuda:0") == Verdict(
        "replays", WARN, "the PCIe replay counter rose by 1,500 during the check (1,000 → 2,500): the link retransmitted packets")
    after["pcie_replay_counter"] = 1_000
    assert check._replay_finding(result.environment, "cuda:0") == Verdict("replays", PASS, "no replays during the check (counter 1,000)")
    after["pcie_replay_counter"] = 999
    assert check._replay_finding(result.environment, "cuda:0") == Verdict("replays", PASS, "no replays during the check (counter 999)")
    after["pcie_replay_counter"] = 1_001
    assert check._replay_finding(result.environment, "cuda:0").status == WARN


def test_replays_after_are_matched_by_index_where_no_uuid_says() -> None:
    """Without UUIDs on either side, the counter after is the GPU with the same index, whatever order NVML listed them in."""
    result = node("n1", gpus=2)
    for device in result.environment["devices"][1:]:
        device["nvml"].pop("uuid")
    after = result.environment["nvml_after"]["gpus"]
    for gpu_after in after:
        gpu_after.pop("uuid")
    after[1]["pcie_replay_counter"] = 5
    after.reverse()
    assert check._replay_finding(result.environment, "cuda:0") == Verdict("replays", PASS, "no replays during the check (counter 0)")
    assert check._replay_finding(result.environment, "cuda:1").status == WARN
    after[1]["uuid"] = "GPU-other"  # a UUID after that is not this GPU's: the index still decides
    assert check._replay_finding(result.environment, "cuda:0").status == PASS
    none = check._replay_finding({"devices": [], "nvml_after": {"gpus": [{"index": 0, "pcie_replay_counter": 4}]}}, "cuda:0")
    assert none == Verdict("replays", NA, "NVML gave no PCIe replay counter before and after")
    result.environment["devices"][1]["nvml"]["pcie_replay_counter"] = None
    assert check._replay_finding(result.environment, "cuda:0").status == NA


def test_each_other_path_is_shown_as_a_share_of_the_raw_ceiling_and_fails_only_when_it_measured_nothing() -> None:
    """Other paths get their MB/s and share of the ceiling, not judged; one that measured nothing fails, saying why."""
    result = node("n1", torch_share=0.5)
    (verdict,) = check.verdicts(result)
    assert findings(verdict)[-1] == (TORCH, INFO, "27,395 MB/s at batch 512, 50% of the raw ceiling")
    torch = result.series[1]
    torch.points, torch.status = [], "failed"
    assert findings(check.verdicts(result)[0])[-1] == (TORCH, FAIL, "measured nothing: see the result file")
    torch.reason = "the torch worker was killed"
    assert findings(check.verdicts(result)[0])[-1] == (TORCH, FAIL, "measured nothing: the torch worker was killed")
    torch.status = "skipped"
    assert [name for name, _, _ in findings(check.verdicts(result)[0])] == ["link", "link state", "reference", "replays"]
    nothing = node("n1")
    nothing.series[0].points = []
    assert [name for name, _, _ in findings(check.verdicts(nothing)[0])] == ["raw copy", "replays"]  # no ceiling: no share


# the baseline


def test_the_baseline_figure_gives_both_rates_the_batch_the_ratio_and_the_verdict() -> None:
    """Each checked series against the baseline: slower fails, no change or faster passes, with both rates at the batch."""
    base = node("n1", raw_gbps=50)
    (verdict,) = check.verdicts(node("n1", raw_gbps=55), baseline=base)
    assert findings(verdict)[-2:] == [
        (f"baseline {RAW}", PASS, "49,919 → 54,911 MB/s at batch 512 (1.10×, faster)"),
        (f"baseline {TORCH}", PASS, "44,789 → 49,257 MB/s at batch 512 (1.10×, faster)")]  # fmt: skip
    (verdict,) = check.verdicts(node("n1", raw_gbps=50), baseline=node("n1", raw_gbps=55))
    assert findings(verdict)[-2:] == [
        (f"baseline {RAW}", FAIL, "54,911 → 49,919 MB/s at batch 512 (0.91×, slower)"),
        (f"baseline {TORCH}", FAIL, "49,257 → 44,789 MB/s at batch 512 (0.91×, slower)")]  # fmt: skip
    assert verdict.status == FAIL


def test_the_baseline_threshold_is_5_percent_unless_given() -> None:
    """A 7% slowdown fails at the default 5% threshold and passes at 10%; a 3% one passes by default."""
    base = node("n1", raw_gbps=55)
    assert findings(check.verdicts(node("n1", raw_gbps=51.15), baseline=base)[0])[-2][1] == FAIL
    assert findings(check.verdicts(node("n1", raw_gbps=51.15), baseline=base, threshold=0.10)[0])[-2][1] == PASS
    assert findings(check.verdicts(node("n1", raw_gbps=53.35), baseline=base)[0])[-2][1] == PASS


def test_the_baseline_compares_the_largest_batch_both_measured() -> None:
    """The baseline is read at the largest batch measured in both files, ignoring batches only one has."""
    base = node("n1", raw_gbps=55)
    base.series = [base.series[0]]
    base.series[0].points.insert(0, series("cuda", "raw_pinned", 55, batch=256).points[0])
    checked = node("n1", raw_gbps=55)
    checked.series[0].points.insert(0, series("cuda", "raw_pinned", 40, batch=256).points[0])
    checked.series[0].points.append(series("cuda", "raw_pinned", 40, batch=1024).points[0])
    found = dict((name, (status, figure)) for name, status, figure in findings(check.verdicts(checked, baseline=base)[0]))
    assert found[f"baseline {RAW}"][0] == PASS and "MB/s at batch 512 (1.00×, no change)" in found[f"baseline {RAW}"][1]
    base.series[0].points.pop()  # the baseline's batch 512 gone: batch 256, where this run is slower
    found = dict((name, (status, figure)) for name, status, figure in findings(check.verdicts(checked, baseline=base)[0]))
    assert found[f"baseline {RAW}"][0] == FAIL and "MB/s at batch 256 (0.73×, slower)" in found[f"baseline {RAW}"][1]


def test_a_baseline_series_that_measured_nothing_judges_nothing() -> None:
    """A baseline series with no measured point is no baseline; with none left the finding is n/a, and says so."""
    base = node("n1", raw_gbps=55)
    for s in base.series:
        s.points = [dataclasses.replace(p, status="error", error="x") for p in s.points]
    (verdict,) = check.verdicts(node("n1"), baseline=base)
    assert findings(verdict)[-1] == ("baseline", NA, "the baseline has no series measured on this GPU at a batch checked here")
    assert verdict.status == PASS  # the link and reference still judge it
    none = check.verdicts(node("n1"), baseline=Result(environment={}, config={}, created="x"))[0]
    assert findings(none)[-1][:2] == ("baseline", NA)


def test_a_baseline_too_noisy_to_judge_warns() -> None:
    """A slowdown past the threshold that the test cannot call significant warns, neither failing nor passing."""
    base = node("n1", raw_gbps=55)
    noisy = node("n1", raw_gbps=55)
    raw = noisy.series[0]
    for p in raw.points:  # 12 samples far slower, 8 far faster: the median moves 30%, nothing significant
        p.times_s = [t * (1.45 if i < 12 else 0.5) for i, t in enumerate(p.times_s)]
    raw.refresh_summary()
    assert check._baseline_findings([raw], base, 0.05) == [
        Verdict(f"baseline {RAW}", WARN, "54,911 → 38,360 MB/s at batch 512 (0.70×, inconclusive)")]


# the node's verdict on GPUs it could not check, and the file


def test_a_gpu_nvml_sees_that_cuda_did_not_check_fails_the_node_in_words() -> None:
    """NVML seeing more GPUs than were checked fails the node, named by host, unless NVML was unavailable or the user chose."""
    result = node("n1", gpus=1)
    result.environment["nvml"]["gpus"].append({"index": 1})
    *_, whole = check.verdicts(result)
    assert (whole.device, whole.device_name, whole.ceiling_mbps) == ("node", "n1", None)
    assert findings(whole) == [("GPU count", FAIL, "NVML sees 2 GPUs but CUDA let 1 be checked: a GPU may have fallen off the bus"
                                                   " or failed to initialize (see nvidia-smi and the kernel log)")]  # fmt: skip
    assert check._unchecked_gpus(result.environment, ["cuda:0", "cuda:1"]) is None
    result.environment["settings"] = {"CUDA_VISIBLE_DEVICES": ""}  # set, even empty: the user chose
    assert check._unchecked_gpus(result.environment, ["cuda:0"]) is None
    result.environment["settings"] = {}
    result.environment["nvml"]["available"] = False
    assert check._unchecked_gpus(result.environment, ["cuda:0"]) is None
    assert check._unchecked_gpus({}, []) is None
    del result.environment["host"]
    result.environment["nvml"]["available"] = True
    assert check.verdicts(result)[-1].device_name == "this node"


def test_the_result_file_keeps_the_nodes_verdict_the_settings_and_every_finding() -> None:
    """check's record in the file: the node's status, the share and baseline used, and each device with its findings."""
    found = [gpu(("link", PASS)), DeviceVerdict("node", "n1", None, [Verdict("GPU count", FAIL, "lost one")])]
    assert check.to_dict(found, 0.8, "base.json") == {
        "status": FAIL, "link_share": 0.8, "baseline": "base.json",
        "devices": [{"device": "cuda:0", "device_name": H100, "ceiling_mbps": 55_000.0,
                     "findings": [{"name": "link", "status": PASS, "figure": ""}], "status": PASS},
                    {"device": "node", "device_name": "n1", "ceiling_mbps": None,
                     "findings": [{"name": "GPU count", "status": FAIL, "figure": "lost one"}], "status": FAIL}]}  # fmt: skip
    assert check.to_dict([], 0.75, None) == {"status": NA, "link_share": 0.75, "baseline": None, "devices": []}


def test_a_link_waking_in_half_its_samples_is_not_yet_down_trained() -> None:
    """Exactly half the loaded samples below the maximum is not most of them: the link state passes."""
    result = node("n1")
    result.series[0].link = link(5, 16, waking=4)
    assert findings(check.verdicts(result)[0])[1][:2] == ("link state", PASS)
    result.series[0].link = link(5, 16, waking=5)
    assert findings(check.verdicts(result)[0])[1][:2] == ("link state", FAIL)


def test_the_gpus_own_nvml_record_supplies_the_links_maximum_when_the_samples_lack_it() -> None:
    """Where a series' link samples carry no maximum, NVML's record of the GPU gives it, for the ceiling and the link state."""
    result = node("n1", under=(4, 16))
    raw = result.series[0]
    raw.link = {key: value for key, value in raw.link.items() if not key.endswith("_max")}
    state = check._link_state(raw, result.environment)
    assert (state.status, state.figure) == (FAIL, "the PCIe link ran below its maximum (Gen5 x16) while data moved: down to Gen4 x16"
                                                  " in 8 of 8 samples; check the slot, riser, BIOS link speed and power settings")  # fmt: skip
    healthy = node("n1")
    raw = healthy.series[0]
    raw.link = {key: value for key, value in raw.link.items() if not key.endswith("_max")}
    state = check._link_state(raw, healthy.environment)
    assert (state.status, state.figure) == (PASS, "Gen5 x16 under load, its maximum Gen5 x16")
    unsampled = dataclasses.replace(raw, link={})  # NVML took no sample during the series: the GPU's maximum, said as such
    link_finding, state = check._link_findings(unsampled, healthy.environment, 50_400.0, 0.75)
    assert (link_finding.status, link_finding.figure) == (
        PASS, "50.4 GB/s, 80% of PCIe Gen5 x16 theoretical (63.0 GB/s, system maximum); read Gen1 x16 before the run;"
        " at least 75% needed")  # fmt: skip
    assert (state.status, state.figure) == (NA, "no NVML reading while data moved (max Gen5 x16)")


def test_replays_after_follow_the_gpus_uuid_when_nvml_renumbered_the_gpus() -> None:
    """The counter after the run is the GPU with the same UUID even where NVML gave it another index after."""
    result = node("n1", gpus=2)
    result.environment["devices"][2]["nvml"]["pcie_replay_counter"] = 3
    result.environment["nvml_after"]["gpus"] = [{"index": 0, "uuid": "GPU-n1-1", "pcie_replay_counter": 7}]  # GPU 0 gone after
    assert check._replay_finding(result.environment, "cuda:1") == Verdict(
        "replays", WARN, "the PCIe replay counter rose by 4 during the check (3 → 7): the link retransmitted packets")
