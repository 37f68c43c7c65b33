"""Each GPU validation check, branch by branch: the row it writes (its name, verdict and figure) on
fixture results shaped as test_validation_checks.py makes them."""

from __future__ import annotations

from typing import Any

from test_validation_checks import BOUND, GEN4_X16, NVML, check, good_raw, link_record, result, series
from xferbench.core import telemetry
from xferbench.core.results import Point, Result
from xferbench.core.spec import D2H, STREAMED
from xferbench.core.verdict import FAIL, INFO, NA, PASS, Verdict
from xferbench.health import validation_checks

RAW = "raw pinned ceiling within 80%–100% of the theoretical link"
LINK = "PCIe link at its maximum generation and width under load"
PLACEMENT = "workers bound to the GPU's NUMA node, source pages on it"
PINNED_INTO = "torch pinned_into ≥ 95% of the raw ceiling at the largest batch"
METHODS = "streamed and per-call MB/s within 2% from 256 MiB (cuda/raw_pinned)"
BYTES = "NVML's count of bytes received within -10% / +35% of the bytes claimed (longest cuda/raw_pinned run)"
CLOCK = "device-event vs wall-clock MB/s from 256 MiB (pinned copies, information)"
VERIFIED = "every path's bytes verified"
COMPLETED = "every sweep ran to the end"
NO_PAIR = "no batch size measured by both on the same device with the same timing, in any file"


def raw(mbps_by_batch: dict[int, float], **kwargs: Any) -> Any:
    return series("cuda", "raw_pinned", mbps_by_batch, **kwargs)


def torch(mbps_by_batch: dict[int, float], **kwargs: Any) -> Any:
    return series("torch", "pinned_into", mbps_by_batch, **kwargs)


# raw pinned ceiling


def test_ceiling_without_a_raw_copy_says_how_to_get_one() -> None:
    """No cuda/raw_pinned series: n/a, naming the extra that measures it."""
    assert check("raw_ceiling", torch({1024: 25_000})) == Verdict(
        RAW, NA, "no cuda/raw_pinned series was measured (pip install 'xferbench[cupy]')")


def test_ceiling_with_no_link_facts_shows_the_peak() -> None:
    """Without NVML facts the ceiling is unknown: n/a, with the peak shown."""
    unsampled = raw({1024: 26_000})
    unsampled.link = {}
    assert validation_checks.raw_ceiling_check([result(unsampled, environment={})]) == Verdict(
        RAW, NA, "peak 26,000 MB/s; the link is unknown (no NVML PCIe facts for cuda:0)")


def test_a_copy_faster_than_the_link_lists_every_reading() -> None:
    """A figure above every reading of the link fails, listing each reading it exceeds."""
    assert check("raw_ceiling", raw({1024: 70_000})) == Verdict(
        RAW, FAIL, "cuda/raw_pinned/copy@cuda:0: 70,000 MB/s = 222.2% of PCIe Gen4 x16 theoretical (31.5 GB/s, under load):"
                   " faster than every reading of the link allows (under load Gen4 x16 (31.5 GB/s),"
                   " system maximum Gen4 x16 (31.5 GB/s)): the clock or the byte count is wrong")


def test_a_copy_above_the_loaded_reading_but_within_the_maximum_is_a_disagreement() -> None:
    """The samples under load say Gen3 while 30 GB/s crossed: the readings disagree, nothing is judged."""
    assert check("raw_ceiling", raw({1024: 30_000}, gen=3)) == Verdict(
        RAW, NA, "link facts disagree: 30,000 MB/s exceeds Gen3 x16 (15.8 GB/s, under load) but fits the system maximum,"
                 " Gen4 x16 (31.5 GB/s); in a virtual machine the virtual root port may advertise less than the GPU's link")


def test_a_copy_at_exactly_the_link_rate_is_within_it() -> None:
    """100% of the theoretical link is still physical."""
    assert check("raw_ceiling", raw({1000: 31_500})) == Verdict(
        RAW, PASS, "cuda/raw_pinned/copy@cuda:0: 31,500 MB/s = 100.0% of PCIe Gen4 x16 theoretical (31.5 GB/s, under load)")


def test_a_copy_at_exactly_the_floor_passes() -> None:
    """80% of the link is the lowest share that passes."""
    assert check("raw_ceiling", raw({1024: 25_200})) == Verdict(
        RAW, PASS, "cuda/raw_pinned/copy@cuda:0: 25,200 MB/s = 80.0% of PCIe Gen4 x16 theoretical (31.5 GB/s, under load)")


# link under load


def test_link_without_loaded_samples_is_not_judged() -> None:
    """No NVML samples taken while data moved: n/a."""
    unsampled = raw({1024: 26_000})
    unsampled.link = {}
    assert check("link", unsampled) == Verdict(LINK, NA, "no CUDA series has NVML link samples taken while data moved")


def test_a_link_below_the_maximum_read_before_the_run_fails() -> None:
    """When the sampler could not read the maximum, the one read before the run still judges the link."""
    slow = raw({1024: 12_000}, gen=3)
    slow.link.update(pcie_gen_max=None, pcie_width_max=None)
    assert check("link", slow) == Verdict(
        LINK, FAIL, "cuda/raw_pinned/copy@cuda:0: the PCIe link ran below its maximum (Gen4 x16) while data moved:"
                    " down to Gen3 x16 in 31 of 31 samples; check the slot, riser, BIOS link speed and power settings")


def test_a_link_at_its_maximum_passes_with_the_series_counted() -> None:
    """The pass names the generation and width under load and how many series showed it."""
    assert check("link", *good_raw()) == Verdict(LINK, PASS, "Gen4 x16 under load in 2 series")


# placement


def test_placement_without_a_cuda_series_is_not_judged() -> None:
    """A file that measured nothing on CUDA: n/a."""
    assert validation_checks.placement_check([result()]) == Verdict(PLACEMENT, NA, "no CUDA series was measured")


def test_an_unbound_worker_with_no_reason_says_so() -> None:
    """A series with no binding record is counted as not bound."""
    unbound = raw({1024: 26_000})
    unbound.numa = {}
    assert check("placement", unbound, raw({1024: 26_000})) == Verdict(
        PLACEMENT, NA, "1 series not bound, first cuda/raw_pinned/copy@cuda:0: no binding recorded")


def test_memory_the_kernel_would_not_place_is_not_judged() -> None:
    """A refused memory policy: n/a, naming the node asked for and the kernel's answer."""
    refused = series("cuda", "raw_pageable", {1024: 12_000})
    refused.numa = {**BOUND, "node": None, "reason": "the kernel refused set_mempolicy(MPOL_PREFERRED, node 0): Operation not permitted"}
    assert check("placement", refused) == Verdict(
        PLACEMENT, NA, "cuda/raw_pageable/copy@cuda:0: its memory could not be put on node 0: the kernel refused"
                       " set_mempolicy(MPOL_PREFERRED, node 0): Operation not permitted")


def test_an_unknown_node_without_a_reason_says_the_result_has_none() -> None:
    """A GPU whose host node is missing, with no reason recorded: n/a, saying the file records none."""
    unknown = {"devices": [{"id": "cuda:0", "kind": "cuda", "name": "GPU", "nvml": {**NVML, "numa_node": None}}]}
    cpus_only = series("cuda", "raw_pageable", {1024: 12_000})
    cpus_only.numa = {**BOUND, "requested": {"cpus": [0, 1, 2, 3], "node": None}, "node": None}
    assert check("placement", cpus_only, environment=unknown) == Verdict(
        PLACEMENT, NA, "node unknown: cuda/raw_pageable/copy@cuda:0 was bound to CPUs only (the result records no host node for the GPU)")


def test_pages_off_the_gpus_node_fail_the_placement() -> None:
    """A sampled page on another node fails, naming the batch."""
    assert check("placement", raw({1024: 26_000}, nodes={"0": 60, "1": 4})) == Verdict(
        PLACEMENT, FAIL, "cuda/raw_pinned/copy@cuda:0: pages of the source buffer sat off the GPU's NUMA node 0 at batch 1024"
                         " (move_pages): copies from them cross the socket link")


def test_only_driver_mapped_pages_leave_placement_unproven() -> None:
    """Pages the kernel could not place prove nothing: n/a."""
    assert check("placement", raw({1024: 26_000}, nodes={"EFAULT": 64})) == Verdict(
        PLACEMENT, NA, "the kernel placed none of 64 sampled pages on a node (driver-mapped pinned memory answers EFAULT;"
                       " move_pages may be refused): placement unproven")


def test_two_gpus_on_two_nodes_name_both_nodes() -> None:
    """Each GPU bound to its own node passes, and the figure lists every node."""
    second_gpu = {"id": "cuda:1", "kind": "cuda", "name": "GPU", "nvml": {**NVML, "numa_node": 1, "cpu_affinity": [4, 5, 6, 7]}}
    two = {"devices": [*GEN4_X16["devices"], second_gpu]}
    far = raw({1024: 26_000}, nodes={"1": 64})
    far.device = "cuda:1"
    far.numa = {**BOUND, "requested": {"cpus": [4, 5, 6, 7], "node": 1}, "cpus": [4, 5, 6, 7], "node": 1}
    assert check("placement", far, raw({1024: 26_000}), environment=two) == Verdict(
        PLACEMENT, PASS, "2 series bound to node 0, node 1; 128 sampled pages on it, none off it")


# torch pinned_into


def test_pinned_into_names_every_missing_series() -> None:
    """n/a names whichever of the two series the files lack."""
    neither = check("pinned_into", series("cuda", "raw_pageable", {1024: 12_000}))
    assert neither == Verdict(PINNED_INTO, NA, "no cuda/raw_pinned and torch/pinned_into series was measured")
    assert check("pinned_into", raw({1024: 26_000})) == Verdict(PINNED_INTO, NA, "no torch/pinned_into series was measured")


def test_pinned_into_compares_only_the_same_timing_method() -> None:
    """A per-call torch figure is never set against a streamed raw one on the same device."""
    assert check("pinned_into", raw({1024: 26_000}, method=STREAMED), torch({1024: 25_500})) == Verdict(PINNED_INTO, NA, NO_PAIR)


def test_pinned_into_takes_the_raw_copy_of_its_own_file_else_another_files() -> None:
    """Raw and torch figures of one file are set side by side; where torch's file has no raw copy at its
    largest batch, another file's is taken (a check is n/a only where no file has it), and the figure
    names each file."""
    apart = {"large.json": result(torch({1024: 25_500})), "link.json": result(raw({1024: 26_000}))}
    assert validation_checks.pinned_into_check(apart) == Verdict(
        PINNED_INTO, PASS, "25,500 / 26,000 MB/s = 98.1% at batch 1024 (1,024 MiB, per-call) (torch from large.json, raw from link.json)")
    assert validation_checks.pinned_into_check(list(apart.values())).figure.endswith("(1,024 MiB, per-call)")  # no names given: none said
    both = {"link.json": result(raw({1024: 20_000})), "large.json": result(torch({1024: 25_500}), raw({1024: 26_000}))}
    assert validation_checks.pinned_into_check(both).figure.endswith("per-call) (large.json)")  # its own file's, though another came first
    other_device = result(raw({1024: 26_000}))
    other_device.series[0].device = "cuda:1"
    assert validation_checks.pinned_into_check({"large.json": result(torch({1024: 25_500})), "link.json": other_device}) == Verdict(
        PINNED_INTO, NA, NO_PAIR)


def test_pinned_into_needs_the_raw_copy_at_torchs_largest_batch() -> None:
    """Torch's largest batch must have been measured by the raw copy too."""
    assert check("pinned_into", raw({64: 20_000, 256: 25_800}), torch({64: 19_000, 1024: 25_500})) == Verdict(
        PINNED_INTO, NA, NO_PAIR)


def test_pinned_into_prefers_the_per_call_comparison() -> None:
    """With both timing methods at the same largest batch, the per-call pair is judged."""
    judged = check("pinned_into", raw({1024: 26_000}), raw({1024: 26_000}, method=STREAMED),
                   torch({1024: 20_000}, method=STREAMED), torch({1024: 25_500}))  # fmt: skip
    assert judged == Verdict(PINNED_INTO, PASS, "25,500 / 26,000 MB/s = 98.1% at batch 1024 (1,024 MiB, per-call)")


def test_pinned_into_at_exactly_the_floor_passes() -> None:
    """95% of the raw copy is the lowest share that passes."""
    assert check("pinned_into", raw({1024: 20_000}), torch({1024: 19_000})) == Verdict(
        PINNED_INTO, PASS, "19,000 / 20,000 MB/s = 95.0% at batch 1024 (1,024 MiB, per-call)")


# streamed vs per call


def test_methods_without_both_timings_at_large_sizes_is_not_judged() -> None:
    """Only one timing method: n/a, naming the size from which they are compared."""
    assert check("methods", raw({1024: 26_000})) == Verdict(
        METHODS, NA, "no file has cuda/raw_pinned per call at 256 MiB or more with a streamed figure at the same size in it or another file")


def test_methods_reads_every_file_past_one_without_both_timings() -> None:
    """A file with one timing method does not hide the next file's comparison, and its per-call figure is
    set beside the other file's streamed one at the same size."""
    files = [result(raw({1024: 26_000})), result(*good_raw())]
    assert validation_checks.methods_check(files) == Verdict(
        METHODS, PASS, "worst +1.2% (streamed vs per call) at batch 256 (268 MB): 26,100 streamed, 25,800 per call MB/s, over 3 sizes")


def test_methods_sets_a_per_call_figure_beside_another_files_streamed_one_and_names_both() -> None:
    """A large sweep with per-call figures only (its streamed series cut short) is judged against link.json's
    streamed 256 MiB; the file's own streamed figure is preferred where it has one; another device's never counts."""
    large = result(raw({256: 25_000, 1024: 26_000}))
    link = result(raw({256: 26_000}, method=STREAMED))
    assert validation_checks.methods_check({"large.json": large, "link.json": link}) == Verdict(
        METHODS, FAIL, "worst +4.0% (streamed vs per call) at batch 256 (268 MB): 26,000 streamed, 25,000 per call MB/s"
                       " (streamed from link.json, per call from large.json), over 1 sizes")
    own = result(raw({256: 25_000}), raw({256: 25_100}, method=STREAMED))
    assert validation_checks.methods_check({"link.json": link, "large.json": own}).figure == (
        "worst +0.4% (streamed vs per call) at batch 256 (268 MB): 25,100 streamed, 25,000 per call MB/s (large.json), over 1 sizes")
    link.series[0].device = "cuda:1"
    assert validation_checks.methods_check({"large.json": large, "link.json": link}).status == NA


# bytes NVML counted


def test_bytes_without_link_samples_is_not_judged() -> None:
    """A raw series with no NVML samples: n/a."""
    unsampled = raw({256: 26_000})
    unsampled.link = {}
    assert check("bytes", unsampled) == Verdict(
        BYTES, NA, "no cuda/raw_pinned series has both its transfers counted and NVML link samples")


def test_bytes_with_no_rx_reading_says_why() -> None:
    """Samples taken but no RX count or throughput read: n/a with NVML's error."""
    unread = raw({256: 26_000})
    n = len(unread.link["t_s"])
    unread.link.update(rx_kbps=[None] * n, rx_bytes=[None] * n, field_errors={"rx_kbps": "Not Supported"})
    assert check("bytes", unread) == Verdict(BYTES, NA, "cuda/raw_pinned/copy@cuda:0: NVML's count is unknown: Not Supported")


def test_too_few_integrated_samples_are_not_judged() -> None:
    """An integrated count from under 20 loaded samples: n/a, saying how many it needs."""
    short = raw({256: 26_000})
    short.link = link_record(telemetry.claimed_bytes(short), counter=False, seconds=1.0)
    assert check("bytes", short) == Verdict(
        BYTES, NA, "cuda/raw_pinned/copy@cuda:0: only 11 samples under load, too few to integrate (needs 20):"
                   " a run of a few seconds or more is needed")


def test_twenty_integrated_samples_are_enough() -> None:
    """Exactly 20 loaded samples are enough to integrate and judge."""
    enough = raw({256: 26_000})
    enough.link = link_record(telemetry.claimed_bytes(enough), counter=False, seconds=1.9)
    assert enough.link["summary"]["loaded_samples"] == 20
    assert check("bytes", enough) == Verdict(
        BYTES, PASS, "cuda/raw_pinned/copy@cuda:0: claimed 13.4 GB, NVML 13.4 GB"
                     " (≈ NVML's RX throughput (approximate: 20 ms windows) integrated over 1.9 s): +0.0%")


# device vs wall clock


def test_clock_without_a_large_timed_copy_is_not_judged() -> None:
    """No pinned copy of 256 MiB or more with a device clock: n/a."""
    assert check("clock", raw({64: 20_000})) == Verdict(CLOCK, NA, "no pinned copy of 256 MiB or more has a device clock")


def test_a_copy_of_exactly_256_mib_counts_for_the_clock() -> None:
    """256 MiB is large enough to compare the two clocks."""
    assert check("clock", raw({64: 20_000, 256: 25_000}, device_ratio=1.1)) == Verdict(
        CLOCK, INFO, "worst +10.0% (wall vs device) at cuda/raw_pinned/copy@cuda:0 batch 256, over 1 points")


# bytes verified


def test_skipped_series_alone_verify_nothing() -> None:
    """Series that could not run here are not counted: n/a."""
    skipped = Result(GEN4_X16, {}, "2026-11-22T00:00:00+00:00", [], "complete")
    skipped.series = [raw({1024: 26_000}, status="skipped")]
    skipped.series[0].points, skipped.series[0].reason = [], "cupy not installed"
    assert validation_checks.verified_check([skipped]) == Verdict(VERIFIED, NA, "no series ran")


def test_every_failure_counts_and_a_failed_series_leads() -> None:
    """A failed series with no reason reads 'failed', and its failing points count too."""
    failed = torch({1024: 25_000}, status="failed")
    failed.points.append(Point(2048, 2**31, status="error", error="verification failed: bytes differ"))
    assert check("verified", raw({1024: 26_000}), failed) == Verdict(
        VERIFIED, FAIL, "2 failure(s), first: torch/pinned_into/copy@cuda:0: failed")


def test_verified_pass_counts_series_and_points() -> None:
    """The pass counts the series that ran and their measured points."""
    assert check("verified", *good_raw()) == Verdict(VERIFIED, PASS, "2 series, 6 points, every byte of each verified")


# completed sweeps


def test_completed_lists_every_file() -> None:
    """The pass lists every file; a short one fails with its status."""
    done = result(raw({1024: 26_000}))
    assert validation_checks.completed_check({"default.json": done, "large.json": done}) == Verdict(
        COMPLETED, PASS, "2 file(s) complete: default.json, large.json")
    cut = Result(GEN4_X16, {}, "2026-11-22T00:00:00+00:00", [], "interrupted")
    assert validation_checks.completed_check({"default.json": done, "large.json": cut}) == Verdict(COMPLETED, FAIL, "large.json: interrupted")


# the whole run


def test_device_to_host_series_are_left_out_of_every_check() -> None:
    """A d2h series in the same file, however it fared, changes no verdict."""
    back = raw({1024: 70_000}, status="failed")
    back.direction = D2H
    good = result(*good_raw(), torch({64: 19_000, 1024: 25_500}, device_ratio=0.99), back)
    checks = validation_checks.run_checks([good])
    assert [c.status for c in checks] == [PASS] * 7 + [INFO], checks
    assert checks[6] == Verdict(VERIFIED, PASS, "3 series, 8 points, every byte of each verified")


def test_render_keeps_the_table_intact() -> None:
    """A '|' in a figure would split the row: it is written as '/'."""
    text = validation_checks.render([Verdict("a check", PASS, "2 | 3"), Verdict("b check", NA, "why")])
    assert text == ("| check | result | figure |\n| --- | --- | --- |\n"
                    "| a check | **PASS** | 2 / 3 |\n| b check | **N/A** | why |\n")  # fmt: skip
