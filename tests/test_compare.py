"""compare on real sim runs: a planted slowdown is flagged, jitter alone is not, bad input is one line."""

import math
import os
from pathlib import Path

import pytest
from rich.console import Console

from xferbench.measuring.backends import SimLink
from xferbench.reading.compare import (
    INCONCLUSIVE,
    MANN_WHITNEY,
    NO_CHANGE,
    OVERLAP,
    TOO_FEW,
    compare,
    compare_files,
    compare_point,
    mann_whitney_u,
    parse_threshold,
    render,
)
from xferbench.core.errors import XferbenchError
from xferbench.core.results import Point, Result
from xferbench.measuring.sweep import SweepConfig, make_plan, new_result, run_plan
from xferbench.core.timing import TimingConfig

BATCHES = (1, 8, 64, 512)
REPO = Path(__file__).resolve().parent.parent


def sim_run(bandwidth_gbps: float = 25, seed: int = 1, samples: int = 30, batches=BATCHES, shape=(256, 256, 3)) -> Result:
    timing = TimingConfig(min_samples=samples, min_time_s=0, max_samples=samples, warmup_calls=1, warmup_s=0)
    link = SimLink(latency_us=10, bandwidth_gbps=bandwidth_gbps, jitter=0.05, seed=seed)
    plan = make_plan(SweepConfig(frameworks=("sim",), batch_sizes=tuple(batches), shape=shape, timing=timing, sim=link))
    try:
        return run_plan(plan, new_result(plan, {}), save=lambda r: None)
    finally:
        plan.close()


@pytest.fixture(scope="module")
def base() -> Result:
    return sim_run()


def test_planted_slowdown_is_flagged(base) -> None:
    slow = sim_run(bandwidth_gbps=20, seed=2)  # 20% less bandwidth: large batches ~20% slower
    comparison = compare(base, slow)
    assert [r.batch_size for r in comparison.slower] == list(BATCHES)
    for row in comparison.rows:
        assert row.series == "sim/link/copy@sim" and row.method == MANN_WHITNEY and row.p_value < 1e-6
        truth = SimLink(10, 25).cost_s(row.batch_size * 256 * 256 * 3) / SimLink(10, 20).cost_s(row.batch_size * 256 * 256 * 3)
        assert row.ratio == pytest.approx(truth, rel=0.03)
    assert comparison.rows[-1].ratio == pytest.approx(0.8, rel=0.03)
    assert comparison.summary() == "4 slower, 0 faster, 0 no change, 0 inconclusive at threshold 5%"
    reverse = compare(slow, base)  # the other way round it is a speed-up, not a failure
    assert not reverse.slower and len(reverse.faster) == 4
    assert not compare(base, slow, threshold=0.25).slower  # a 20% drop is within a 25% threshold


def test_jitter_alone_is_no_change(base) -> None:
    noise = sim_run(seed=2)
    assert [p.times_s for p in noise.series[0].points] != [p.times_s for p in base.series[0].points]
    comparison = compare(base, noise)
    assert len(comparison.rows) == len(BATCHES) and not comparison.unmatched
    assert {r.verdict for r in comparison.rows} == {"no change"}
    assert all(r.ratio == pytest.approx(1, abs=0.03) for r in comparison.rows)


def test_few_samples_fall_back_to_p10_p90_overlap() -> None:
    base5, slow5, noise5 = sim_run(samples=5), sim_run(bandwidth_gbps=20, seed=2, samples=5), sim_run(seed=2, samples=5)
    slower = compare(base5, slow5)
    assert {(r.method, r.p_value) for r in slower.rows} == {(OVERLAP, None)}
    assert slower.rows[-1].verdict == "slower" and slower.rows[-1].significant
    assert not compare(base5, noise5).slower
    console = Console(record=True, width=200)
    console.print(render(slower, "a.json", "b.json"))
    assert "p10–p90 apart" in console.export_text()


def test_below_five_samples_there_is_no_verdict() -> None:
    comparison = compare(sim_run(samples=3), sim_run(bandwidth_gbps=20, seed=2, samples=3))
    assert {(r.method, r.verdict) for r in comparison.rows} == {(TOO_FEW, INCONCLUSIVE)}
    assert not comparison.regressed
    console = Console(record=True, width=200)
    console.print(render(comparison, "a.json", "b.json"))
    assert "fewer than 5 samples: sweep with --min-samples 8" in console.export_text()


def test_a_large_change_without_significance_is_inconclusive() -> None:
    base = Point(1, 10**6, times_s=[1.0, 2, 3, 4, 5, 6, 7, 8])
    new = Point(1, 10**6, times_s=[1.0, 2, 3, 4, 6, 7, 8, 9])  # median 5 s against 4.5 s: 10% slower, all noise
    row = compare_point("s", base, new)
    assert row.ratio == pytest.approx(0.9) and row.method == MANN_WHITNEY and row.p_value > 0.5
    assert row.verdict == INCONCLUSIVE


def test_a_failure_in_new_where_base_measured_is_a_regression(base) -> None:
    broken = sim_run(seed=2)
    broken.series[0].points[1].status, broken.series[0].points[1].error = "error", "verification failed: bytes differ"
    dead = sim_run(seed=2)
    dead.series[0].status, dead.series[0].reason = "failed", "worker died (killed by SIGKILL)"
    for point in dead.series[0].points[2:]:
        point.status, point.times_s, point.median_s = "skipped", [], None
    for new, failed in ((broken, [(8, "verification failed: bytes differ")]),
                        (dead, [(64, "worker died (killed by SIGKILL)"), (512, "worker died (killed by SIGKILL)")])):  # fmt: skip
        comparison = compare(base, new)
        assert [(f.batch_size, f.error) for f in comparison.failed] == failed
        assert comparison.regressed and not comparison.slower and not comparison.unmatched
    for point in dead.series[0].points:
        point.status, point.times_s, point.median_s = "skipped", [], None
    whole = compare(base, dead, names=("base.json", "new.json"))  # nothing measured in NEW at all: still a regression, not "no matching series"
    assert [(f.series, f.batch_size) for f in whole.failed] == [("sim/link/copy@sim (256x256x3)", None)]
    console = Console(record=True, width=200)
    console.print(render(whole, "base.json", "new.json"))
    assert "FAILED in new.json, measured in base.json: sim/link/copy@sim (256x256x3): worker died" in console.export_text()


def test_points_and_series_in_one_file_only_are_listed(base, tmp_path) -> None:
    other = sim_run(seed=2, batches=(8, 64, 512, 1024))
    comparison = compare(base, other)
    assert [r.batch_size for r in comparison.rows] == [8, 64, 512]
    assert [(u.batch_size, u.only_in) for u in comparison.unmatched] == [(1, "base"), (1024, "new")]
    base.save(tmp_path / "base.json")
    other.save(tmp_path / "new.json")
    console = Console(record=True, width=200)
    console.print(render(compare_files(tmp_path / "base.json", tmp_path / "new.json"), "base.json", "new.json"))
    text = console.export_text()
    for expected in ("base (base.json) → new (new.json): median MB/s", "series", "base", "new", "ratio", "verdict", "no change",
                     "only in base.json: sim/link/copy@sim batch 1", "only in new.json: sim/link/copy@sim batch 1024", "0 slower, 0 faster, 3 no change, 0 inconclusive at threshold 5%; 2 measured in one file only"):  # fmt: skip
        assert expected in text


def test_no_matching_series_names_both_files(base, tmp_path) -> None:
    base.save(tmp_path / "a.json")
    sim_run(shape=(16, 16, 3)).save(tmp_path / "b.json")  # same label, another shape: another series
    with pytest.raises(XferbenchError) as error:
        compare_files(tmp_path / "a.json", tmp_path / "b.json")
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"no matching series between {tmp_path / 'a.json'} and {tmp_path / 'b.json'}")
    assert "sim/link/copy@sim (256x256x3)" in message and "sim/link/copy@sim (16x16x3)" in message
    with pytest.raises(XferbenchError, match="no matching series"):  # series match, but no batch size in common
        compare(base, sim_run(batches=(2, 4)))


def test_bad_files_are_one_line_errors(base, tmp_path) -> None:
    base.save(tmp_path / "a.json")
    (tmp_path / "text.json").write_text("not json")
    for path, why in ((tmp_path / "missing.json", "no such file"), (tmp_path / "text.json", "not JSON")):
        with pytest.raises(XferbenchError, match=why):
            compare_files(tmp_path / "a.json", path)


def test_the_committed_compare_demo() -> None:
    demo = REPO / "results" / "sim"
    comparison = compare_files(demo / "link-10us-25gbps.json", demo / "link-10us-20gbps.json")
    assert comparison.slower and comparison.slower[-1].ratio == pytest.approx(0.8, rel=0.03)


def test_mann_whitney_u() -> None:
    same = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    assert mann_whitney_u(same, same) == pytest.approx(1.0, abs=0.05)
    assert mann_whitney_u([1.0] * 5, [1.0] * 5) == 1.0  # all tied: no evidence
    assert mann_whitney_u(range(30), [x + 100 for x in range(30)]) < 1e-6
    # By hand: U = 9, mean 4.5, variance 3 * 3 * 7 / 12 = 5.25, z = (9 - 4.5 - 0.5) / sqrt(5.25).
    # scipy.stats.mannwhitneyu([1, 2, 3], [4, 5, 6], method="asymptotic") gives 0.0808556 too.
    assert mann_whitney_u([1, 2, 3], [4, 5, 6]) == pytest.approx(math.erfc(4 / math.sqrt(5.25) / math.sqrt(2)))
    assert mann_whitney_u([1, 2, 3], [4, 5, 6]) == pytest.approx(0.0808556, rel=1e-5)
    # Ties: ranks 1, 3, 3, 5.5 | 3, 5.5, 7, 8, so U = 12.5 - 10 = 2.5 (13.5 the other way), mean 8;
    # tie term 3^3 - 3 + 2^3 - 2 = 30, variance 16 / 12 * (9 - 30 / 56).
    expected = math.erfc((13.5 - 8 - 0.5) / math.sqrt(16 / 12 * (9 - 30 / 56)) / math.sqrt(2))
    assert mann_whitney_u([1, 2, 2, 3], [2, 3, 4, 5]) == pytest.approx(expected)
    assert mann_whitney_u([2, 3, 4, 5], [1, 2, 2, 3]) == pytest.approx(expected)  # two-sided: symmetric
    with pytest.raises(ValueError):
        mann_whitney_u([], [1.0])


@pytest.mark.parametrize("text, value", [("5%", 0.05), ("5", 0.05), (" 2.5 % ", 0.025), ("0", 0.0), ("0.5%", 0.005), ("99%", 0.99),
                                         ("1", 0.01), ("1.5", 0.015)])  # fmt: skip
def test_parse_threshold(text, value) -> None:
    assert parse_threshold(text) == pytest.approx(value)


@pytest.mark.parametrize("text, why", [("0.05", "ambiguous: write 0.05% or 5%"), ("-5%", "such as 5%"), ("nan", "such as 5%"),
                                       ("inf", "such as 5%"), ("100%", "below 100%"), ("five", "such as 5%"), ("", "such as 5%")])  # fmt: skip
def test_parse_threshold_refuses(text, why) -> None:
    with pytest.raises(XferbenchError, match=why) as error:
        parse_threshold(text)
    assert "\n" not in str(error.value)


def test_points_measured_on_a_busy_machine_are_said(tmp_path) -> None:
    """A verdict on a point measured beside a busy process may show the machine, not the change."""
    from rich.console import Console

    from xferbench.reading.compare import compare, render

    base, new = sim_run(), sim_run()
    for point in [*base.series[0].points, *new.series[0].points]:  # whatever this machine was doing meanwhile
        point.others_cpus, point.cpus = 0.0, 2
    for point in new.series[0].points[:2]:
        point.others_cpus, point.cpus = 0.98, 2
    new.series[0].points[2].others_cpus, new.series[0].points[2].cpus = 0.3, 2  # under a quarter of the CPUs
    comparison = compare(base, new, names=("a.json", "b.json"))
    batches = [p.batch_size for p in new.series[0].points[:2]]
    assert comparison.busy == {"base": [], "new": [f"sim/link/copy@sim batch {b}" for b in batches]}
    console = Console(width=200, record=True, file=open(os.devnull, "w"))
    console.print(render(comparison, "a.json", "b.json"))
    assert "warning: b.json was measured on a busy machine at sim/link/copy@sim batch" in console.export_text()


def test_at_80_columns_every_figure_and_verdict_stays_on_its_row(base, tmp_path) -> None:
    base.save(tmp_path / "base.json")
    base.save(tmp_path / "new.json")
    console = Console(record=True, width=80, file=open(os.devnull, "w"))
    console.print(render(compare_files(tmp_path / "base.json", tmp_path / "new.json"), "base.json", "new.json"))
    lines = [line for line in console.export_text().splitlines() if line.startswith("│")]
    assert lines and all(len(line) <= 80 for line in lines)
    # One line per compared point holds every figure and the verdict; a line under it may carry only the
    # rest of a folded label (a busy machine's verdict, "no change (busy: base, new)", leaves it less room).
    rows = [line for line in lines if "no change" in line]
    assert len(rows) == len(compare_files(tmp_path / "base.json", tmp_path / "new.json").rows)
    assert all(not cell.strip() for line in lines if line not in rows for cell in line.strip("│").split("│")[1:])


@pytest.mark.filterwarnings("ignore:invalid value encountered in subtract:RuntimeWarning")  # numpy's percentile of infinities
def test_compare_point_at_each_boundary() -> None:
    spread = [0.97, 0.98, 0.99, 1.0, 1.0, 1.01, 1.02, 1.03]  # median 1 s; doubled, every sample apart (p ≈ 0.0009)
    base, half, double = (Point(1, 10**6, times_s=[t * k for t in spread]) for k in (1, 2, 0.5))
    at_edge = compare_point("s", base, half, threshold=0.5)  # ratio exactly 0.5: on the threshold is not past it
    assert (at_edge.ratio, at_edge.significant, at_edge.verdict) == (0.5, True, NO_CHANGE)
    assert compare_point("s", base, half, threshold=0.49).verdict == "slower"
    assert compare_point("s", base, double, threshold=1.0).verdict == NO_CHANGE  # ratio exactly 2
    assert compare_point("s", base, double, threshold=0.99).verdict == "faster"
    p = mann_whitney_u(base.times_s, half.times_s)
    assert compare_point("s", base, half, alpha=p).verdict == INCONCLUSIVE  # p must be below alpha, not equal to it
    assert compare_point("s", base, half, alpha=p * 1.01).verdict == "slower"
    # 5 to 7 samples: p10-p90 ranges that touch are not apart
    flat = Point(1, 10**6, times_s=[1.0] * 5)
    for touching in ([1.0, 1.0, 2.0, 2.0, 2.0], [0.5, 0.5, 0.5, 1.0, 1.0]):
        row = compare_point("s", flat, Point(1, 10**6, times_s=touching))
        assert (row.method, row.significant, row.verdict) == (OVERLAP, False, INCONCLUSIVE)
    few = compare_point("s", Point(1, 10**6, times_s=[1.0] * 4), Point(1, 10**6, times_s=[9.0] * 4))
    assert (few.method, few.significant, few.p_value) == (TOO_FEW, False, None)
    # a side with no finite figure has no ratio
    for b, n in (([math.inf] * 8, [1.0] * 8), ([1.0] * 8, [0.0] * 8), ([0.0] * 8, [1.0] * 8)):
        assert math.isnan(compare_point("s", Point(1, 10**6, times_s=b), Point(1, 10**6, times_s=n)).ratio)


def test_compare_point_names_the_busy_side() -> None:
    quiet = Point(1, 10**6, times_s=[1.0] * 8, others_cpus=0.0, cpus=2)
    busy = Point(1, 10**6, times_s=[1.0] * 8, others_cpus=2.0, cpus=2)
    assert compare_point("s", busy, quiet).busy == ("base",)
    assert compare_point("s", quiet, busy).busy == ("new",)
    assert compare_point("s", quiet, quiet).busy == ()


def test_mann_whitney_u_on_the_smallest_samples() -> None:
    # one against two: U is 0 or 2 around a mean of 1, variance 1 * 2 * 4 / 12, with the continuity correction
    assert mann_whitney_u([1.0], [2.0, 3.0]) == pytest.approx(math.erfc(0.5 / math.sqrt(2 / 3) / math.sqrt(2)))
    assert mann_whitney_u([1, 2], [1, 2]) == 1.0  # U at its mean: never above 1 however the correction falls
    for empty in (([], [1.0]), ([1.0], [])):
        with pytest.raises(ValueError, match="^both samples must be non-empty$"):
            mann_whitney_u(*empty)


def test_parse_alpha_takes_a_probability_strictly_between_0_and_1() -> None:
    from xferbench.reading.compare import parse_alpha

    assert parse_alpha("0.01") == 0.01 and parse_alpha(" 1e-9 ") == 1e-9 and parse_alpha("0.999") == 0.999
    for text in ("0", "1", "1.5", "-0.1", "nan", "5%", ""):
        with pytest.raises(XferbenchError, match=f"^--alpha {text!r}: give a probability between 0 and 1"):
            parse_alpha(text)
