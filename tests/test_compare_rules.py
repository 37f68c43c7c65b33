"""compare's rules one by one, each on small inputs whose answer is known: thresholds, the rank test and
its fall-backs, how series and points pair, what fails, the runs a path's sentence names, and every
field compare --json writes."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from test_pairing import ENV, curve
from xferbench.core.errors import XferbenchError
from xferbench.core.results import DAMAGED, Point, Result, Series
from xferbench.core.spec import HOST_TO_DEVICE
from xferbench.reading import compare as comparing
from xferbench.reading.compare import (
    FASTER,
    INCONCLUSIVE,
    MANN_WHITNEY,
    NO_CHANGE,
    OVERLAP,
    SLOWER,
    TOO_FEW,
    Comparison,
    Failure,
    PathChange,
    Row,
    Run,
    Unmatched,
    compare,
    compare_point,
    difference_lines,
    mann_whitney_u,
    p_text,
    parse_alpha,
    parse_threshold,
    path_changes,
    runs,
    to_dict,
    unlike_prefix,
)
from xferbench.reading.pairs import Difference

SPREAD = [0.97, 0.98, 0.99, 1.0, 1.0, 1.01, 1.02, 1.03]  # median 1 s, a quiet machine's 3% either way


def point(times: list[float], batch: int = 1, **fields: Any) -> Point:
    """A point of `batch` items of 1 MB each: its MB/s is the batch over the median seconds."""
    return Point(batch, batch * 10**6, times_s=list(times), **fields)


def result(*series: Series, **environment: Any) -> Result:
    return Result({**ENV, **environment}, {}, "2026-11-23T00:00:00+00:00", list(series), "complete")


def row(batch: int, ratio: float, verdict: str, busy: tuple[str, ...] = (), series: str = "p") -> Row:
    return Row(series, batch, 100.0, 100.0 * ratio, ratio, 1e-6, MANN_WHITNEY, True, verdict, busy)


def skipped(series: Series, *batches: int, status: str = "skipped", error: str | None = None) -> Series:
    """The series with the points at `batches` not measured: skipped, or failed with `error`."""
    for p in series.points:
        if p.batch_size in batches:
            p.status, p.error, p.times_s, p.median_s = status, error, [], None
    return series


# parse_threshold and parse_alpha


@pytest.mark.parametrize("text, value", [("5%", 0.05), ("5", 0.05), ("0%", 0.0), ("0", 0.0), (" 7 % ", 0.07), ("1", 0.01),
                                         ("99.5", 0.995), ("0.25%", 0.0025), ("50%", 0.5)])  # fmt: skip
def test_a_threshold_is_a_percentage_with_or_without_its_sign(text, value) -> None:
    """--threshold reads a percentage, the % sign optional, spaces around it ignored."""
    assert parse_threshold(text) == value


@pytest.mark.parametrize("text", ["100", "100%", "-1%", "-0.5", "nan", "inf", "-inf", "five", "", "%", "5%%"])
def test_a_threshold_outside_0_to_100_percent_is_refused_in_one_line(text) -> None:
    """A threshold that is no percentage from 0% to below 100% is refused, saying what to give."""
    with pytest.raises(XferbenchError) as error:
        parse_threshold(text)
    assert str(error.value) == (f"--threshold {text!r}: give a percentage from 0% to below 100%, such as 5%"
                                " (a point is slower when its MB/s falls by more than this)")  # fmt: skip


@pytest.mark.parametrize("text, words", [("0.05", "0.05% or 5%"), ("0.5", "0.5% or 50%"), ("0.999", "0.999% or 99.9%"),
                                         (" 0.1 ", "0.1% or 10%")])  # fmt: skip
def test_a_bare_fraction_as_threshold_is_refused_as_ambiguous(text, words) -> None:
    """A bare number between 0 and 1 could be a fraction or a percentage: the user must say which."""
    with pytest.raises(XferbenchError) as error:
        parse_threshold(text)
    assert str(error.value) == f"--threshold {text!r} is ambiguous: write {words}"


def test_alpha_is_a_probability_strictly_between_0_and_1_with_the_whole_message() -> None:
    """--alpha takes 0 < p < 1 and refuses anything else with one whole sentence."""
    assert parse_alpha("0.5") == 0.5 and parse_alpha("1e-300") == 1e-300
    for text in ("0", "1", "2", "nan", "x"):
        with pytest.raises(XferbenchError) as error:
            parse_alpha(text)
        assert str(error.value) == (f"--alpha {text!r}: give a probability between 0 and 1, such as 0.01"
                                    " (a difference counts when the rank test's p-value is below it)")  # fmt: skip


# the rank test


def test_the_rank_test_matches_a_hand_computation_with_ties_across_sides() -> None:
    """Mann-Whitney's p-value uses mean ranks for ties, the tie-corrected variance and the continuity correction."""
    # ranks of [1, 1, 2 | 2, 3, 3]: 1.5, 1.5, 3.5 | 3.5, 5.5, 5.5; U1 = 6.5 - 6 = 0.5; U = max(0.5, 8.5) = 8.5
    # tie term: 2^3 - 2 three times = 18; variance 9 / 12 * (7 - 18 / 30) = 4.8
    expected = math.erfc((8.5 - 4.5 - 0.5) / math.sqrt(4.8) / math.sqrt(2))
    assert mann_whitney_u([1, 1, 2], [2, 3, 3]) == pytest.approx(expected, rel=1e-12)
    assert mann_whitney_u([2, 3, 3], [1, 1, 2]) == pytest.approx(expected, rel=1e-12)
    # unequal sizes: [1, 2] against [3, 4, 5, 6]: U = 8 of 8, mean 4, variance 2 * 4 * 7 / 12
    assert mann_whitney_u([1, 2], [3, 4, 5, 6]) == pytest.approx(math.erfc(3.5 / math.sqrt(56 / 12) / math.sqrt(2)), rel=1e-12)
    assert mann_whitney_u([3, 4, 5, 6], [1, 2]) == pytest.approx(math.erfc(3.5 / math.sqrt(56 / 12) / math.sqrt(2)), rel=1e-12)
    # interleaved: [1, 3, 5] against [2, 4, 6]: U1 = 9 - 6 = 3, U = 6, mean 4.5, variance 5.25
    assert mann_whitney_u([1, 3, 5], [2, 4, 6]) == pytest.approx(math.erfc(1 / math.sqrt(5.25) / math.sqrt(2)), rel=1e-12)
    assert mann_whitney_u([1.0], [1.0]) == 1.0  # one sample each, the same: no evidence


# compare_point


def test_a_point_row_carries_both_medians_their_ratio_and_the_test() -> None:
    """A row holds each side's median MB/s, new over base, the p-value and the verdict."""
    base, new = point([t * 2 for t in SPREAD], batch=4), point(SPREAD, batch=4)
    found = compare_point("tf/eager/copy@cpu", base, new)
    p = mann_whitney_u(base.times_s, new.times_s)
    assert found == Row("tf/eager/copy@cpu", 4, 2.0, 4.0, 2.0, p, MANN_WHITNEY, True, FASTER, (), False)
    assert p < 0.001


def test_the_default_threshold_is_5_percent_and_the_default_alpha_1_percent() -> None:
    """Without options a point must move more than 5% with p below 0.01 to be slower or faster."""
    base = point(SPREAD)
    assert compare_point("s", base, point([t / 0.94 for t in SPREAD])).verdict == SLOWER  # 6% slower
    assert compare_point("s", base, point([t / 0.96 for t in SPREAD])).verdict == NO_CHANGE  # 4% slower
    assert compare_point("s", base, point([t / 1.06 for t in SPREAD])).verdict == FASTER
    assert compare_point("s", base, point([t / 1.04 for t in SPREAD])).verdict == NO_CHANGE
    # a 12% shift with p between 0.01 and 0.05: not significant at the default alpha
    overlapping = [1.0, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3, 1.35]
    shifted = [t + 0.16 for t in overlapping]
    p = mann_whitney_u(overlapping, shifted)
    assert 0.01 < p < 0.05
    found = compare_point("s", point(overlapping), point(shifted))
    assert (found.significant, found.verdict) == (False, INCONCLUSIVE)
    assert compare_point("s", point(overlapping), point(shifted), alpha=0.05).verdict == SLOWER


def test_the_rank_test_needs_8_samples_on_each_side() -> None:
    """Eight samples a side get Mann-Whitney; seven on either side fall back to the p10-p90 intervals."""
    base, new = point(SPREAD), point([t * 2 for t in SPREAD])
    assert compare_point("s", base, new).method == MANN_WHITNEY
    for b, n in ((SPREAD[:7], SPREAD), (SPREAD, SPREAD[:7])):
        found = compare_point("s", point(b), point([t * 2 for t in n]))
        assert (found.method, found.p_value, found.significant, found.verdict) == (OVERLAP, None, True, SLOWER)


def test_five_samples_a_side_are_the_least_for_any_verdict() -> None:
    """Five samples on each side compare intervals; four on either side give no verdict however large the change."""
    five = [1.0, 1.01, 1.02, 1.03, 1.04]
    found = compare_point("s", point(five), point([t * 2 for t in five]))
    assert (found.method, found.significant, found.verdict) == (OVERLAP, True, SLOWER)
    found = compare_point("s", point([t * 2 for t in five]), point(five))
    assert (found.method, found.significant, found.verdict) == (OVERLAP, True, FASTER)
    for b, n in ((five[:4], five), (five, five[:4])):
        found = compare_point("s", point(b), point([t * 2 for t in n]))
        assert (found.method, found.p_value, found.significant, found.verdict) == (TOO_FEW, None, False, INCONCLUSIVE)
    same = compare_point("s", point(five[:4]), point(five[:4]))  # no change at all, still no verdict
    assert (same.ratio, same.verdict) == (1.0, INCONCLUSIVE)


def test_intervals_apart_either_way_are_significant_and_overlapping_ones_are_not() -> None:
    """With 5 to 7 samples a change counts only when one side's p10-p90 interval lies wholly beyond the other's."""
    low = point([1.0, 1.0, 1.0, 1.0, 1.0])
    high = point([1.5, 1.5, 1.5, 1.5, 1.5])
    assert compare_point("s", low, high).significant and compare_point("s", high, low).significant
    wide = point([0.9, 1.0, 1.25, 1.5, 1.6])  # p10 0.94, p90 1.56: reaches into both sides
    assert not compare_point("s", low, wide).significant and not compare_point("s", wide, low).significant
    assert not compare_point("s", high, wide).significant and not compare_point("s", wide, high).significant


def test_a_change_within_the_threshold_is_no_change_even_when_significant() -> None:
    """A significant shift smaller than the threshold is "no change", never slower or faster."""
    base, new = point(SPREAD), point([t * 1.04 for t in SPREAD])
    found = compare_point("s", base, new, threshold=0.05)
    assert found.p_value < 0.01 and found.significant and found.verdict == NO_CHANGE


@pytest.mark.filterwarnings("ignore:invalid value encountered in subtract:RuntimeWarning")  # numpy's percentile of infinities
def test_a_side_without_a_finite_rate_has_no_ratio_and_is_judged_by_its_test_alone() -> None:
    """A side whose median gives no finite MB/s leaves the ratio undefined: inconclusive unless the test is significant."""
    base = point(SPREAD)
    for new in (point([math.inf] * 8), point([0.0] * 8)):
        found = compare_point("s", base, new)
        assert math.isnan(found.ratio)
    found = compare_point("s", point([math.inf] * 8), base)
    assert math.isnan(found.ratio) and found.new_mbps == 1.0
    assert (found.significant, found.verdict) == (True, FASTER)
    nothing = compare_point("s", Point(1, 0, times_s=SPREAD), base)  # a base that moved no bytes: 0 MB/s, no ratio
    assert nothing.base_mbps == 0.0 and math.isnan(nothing.ratio) and nothing.verdict == INCONCLUSIVE
    flat = compare_point("s", point([0.0] * 8), point([0.0] * 8))  # equal samples: not significant
    assert math.isnan(flat.ratio) and (flat.significant, flat.verdict) == (False, INCONCLUSIVE)


def test_a_point_busy_on_both_sides_names_both() -> None:
    """Both sides measured on a busy machine: the row names base and new, in that order."""
    busy = point(SPREAD, others_cpus=1.0, cpus=2)
    assert compare_point("s", busy, busy).busy == ("base", "new")


# runs and a path's sentence


def test_a_run_describes_itself_for_each_verdict() -> None:
    """A run reads as its ratios and verdict over its batches; other verdicts read as states with the ratios after."""
    assert Run(SLOWER, (4,), 0.5, 0.5).describe() == "0.50× slower at batch 4"
    assert Run(FASTER, (1, 2, 8), 1.2, 1.3, busy=2).describe() == "1.20–1.30× faster from batch 1 to 8 (2 busy)"
    assert Run(NO_CHANGE, (1, 2), 0.99, 1.01).describe() == "unchanged from batch 1 to 2 (0.99–1.01×)"
    assert Run(INCONCLUSIVE, (16,), 0.8, 0.8).describe() == "inconclusive at batch 16 (0.80×)"
    assert Run(comparing.UNTESTED, (3, 12), 1.0, 1.004).describe() == "untested (no raw samples) from batch 3 to 12 (1.00×)"
    assert Run(SLOWER, (4,), math.nan, math.nan).describe() == "-× slower at batch 4"
    assert Run(SLOWER, (4, 8), 0.5, math.inf).describe() == "-× slower from batch 4 to 8"
    mib = Run(FASTER, (1, 4), 1.5, 2.0)
    assert mib.describe(lambda b: f"{b} MiB") == "1.50–2.00× faster from 1 MiB to 4 MiB"
    assert Run(FASTER, (4,), 1.5, 1.5).describe(lambda b: f"{b} MiB") == "1.50× faster at 4 MiB"


def test_a_runs_strength_is_its_largest_log_ratio_either_way() -> None:
    """How far a run strays from no change: the larger of |log low| and |log high|, ignoring ratios with no value."""
    assert Run(SLOWER, (1,), 0.5, 0.8).strength == pytest.approx(math.log(2))
    assert Run(FASTER, (1,), 1.1, 3.0).strength == pytest.approx(math.log(3))
    assert Run(FASTER, (1,), 0.25, 3.0).strength == pytest.approx(math.log(4))
    assert Run(SLOWER, (1,), 0.0, 2.0).strength == pytest.approx(math.log(2))
    assert Run(SLOWER, (1,), math.nan, math.inf).strength == 0.0
    assert Run(NO_CHANGE, (1,), 1.0, 1.0).strength == 0.0


def test_runs_keep_a_verdict_together_until_the_ratio_jumps_or_a_failure_lies_between() -> None:
    """Neighbouring batches with one verdict form a run, split at a jump of 1.5 times or a failed batch between them."""
    found = runs([row(1, 1.2, FASTER), row(2, 1.3, FASTER, ("new",)), row(4, 1.25, FASTER, ("base", "new")), row(8, 1.0, NO_CHANGE)])
    assert found == [Run(FASTER, (1, 2, 4), 1.2, 1.3, 2), Run(NO_CHANGE, (8,), 1.0, 1.0, 0)]
    # a failed batch equal to a neighbour, or outside the pair, splits nothing
    assert [r.batches for r in runs([row(2, 1.2, FASTER), row(4, 1.2, FASTER)], gaps=[2, 4, 1, 8])] == [(2, 4)]
    assert [r.batches for r in runs([row(2, 1.2, FASTER), row(4, 1.2, FASTER)], gaps=[3])] == [(2,), (4,)]
    # downwards too: a ratio falling to two thirds or less splits
    assert [r.batches for r in runs([row(1, 0.9, SLOWER), row(2, 0.6, SLOWER)])] == [(1,), (2,)]
    assert [r.batches for r in runs([row(1, 0.9, SLOWER), row(2, 0.61, SLOWER)])] == [(1, 2)]
    assert runs([]) == []


def test_a_ratio_with_no_value_never_splits_a_run_and_is_left_out_of_its_range() -> None:
    """An undefined or zero ratio joins its neighbours' run; the run's range comes from the finite ratios, or none."""
    for odd in (math.nan, math.inf, 0.0, -1.0):
        found = runs([row(1, 2.0, FASTER), row(2, odd, FASTER), row(4, 2.1, FASTER)])
        assert [r.batches for r in found] == [(1, 2, 4)]
        assert (found[0].low, found[0].high) == ((2.0, 2.1) if math.isinf(odd) or math.isnan(odd) else (odd, 2.1))
    (alone,) = runs([row(1, math.nan, INCONCLUSIVE), row(2, math.inf, INCONCLUSIVE)])
    assert alone.batches == (1, 2) and math.isnan(alone.low) and math.isnan(alone.high)


def test_the_sentence_names_changes_first_then_no_change_then_inconclusive_then_untested() -> None:
    """A path's sentence orders its runs by kind (a change first), and within a kind by strength."""
    change = PathChange("p", [Run(comparing.UNTESTED, (1,), 1.0, 1.0), Run(INCONCLUSIVE, (2,), 3.0, 3.0), Run(NO_CHANGE, (4,), 1.01, 1.01),
                              Run(FASTER, (8,), 1.2, 1.2), Run(SLOWER, (16,), 0.5, 0.5)], None, None)  # fmt: skip
    assert change.sentence() == ("NEW is 0.50× slower at batch 16; 1.20× faster at batch 8; unchanged at batch 4 (1.01×);"
                                 " inconclusive at batch 2 (3.00×); 1 more run (see the tables).")  # fmt: skip
    assert not change.regressed and not change.changed
    weak = PathChange("p", [Run(comparing.UNTESTED, (1,), 5.0, 5.0), Run(INCONCLUSIVE, (2,), 1.2, 1.2)], None, None)
    assert weak.sentence() == "NEW is inconclusive at batch 2 (1.20×); untested (no raw samples) at batch 1 (5.00×)."


def test_the_sentence_ranks_speed_ups_and_slowdowns_together_by_strength_and_names_places() -> None:
    """A threefold speed-up outranks a 0.8× slowdown; runs past the fourth are counted ("2 more runs"); a batch
    named as a place ("2 MiB") reads so in every run, not only in the largest change."""
    change = PathChange("p", [Run(SLOWER, (1,), 0.8, 0.8), Run(FASTER, (2,), 3.0, 3.0), Run(NO_CHANGE, (4,), 1.0, 1.0),
                              Run(NO_CHANGE, (8,), 1.01, 1.01), Run(INCONCLUSIVE, (16,), 1.3, 1.3),
                              Run(comparing.UNTESTED, (32,), 1.0, 1.0)], None, None)  # fmt: skip
    assert change.sentence(place=lambda b: f"{b} MiB") == (
        "NEW is 3.00× faster at 2 MiB; 0.80× slower at 1 MiB; unchanged at 8 MiB (1.01×); unchanged at 4 MiB (1.00×);"
        " 2 more runs (see the tables).")  # fmt: skip


def test_the_sentence_names_the_largest_change_each_way_and_what_failed() -> None:
    """After the runs: the largest speed-up, then the largest slowdown, then the batches that failed in NEW."""
    fast, slow = row(8, 2.5, FASTER), row(2, 0.3, SLOWER)
    change = PathChange("p", [Run(FASTER, (8,), 2.5, 2.5), Run(SLOWER, (2,), 0.3, 0.3)], fast, slow, (4, 16))
    assert change.sentence("B") == ("B is 0.30× slower at batch 2; 2.50× faster at batch 8. Largest change: 2.50× faster at batch 8,"
                                    " 0.30× slower at batch 2. Failed in B at batch 4, batch 16, measured before.")  # fmt: skip
    assert change.sentence("B", lambda b: f"{b} MiB").endswith("Largest change: 2.50× faster at 8 MiB, 0.30× slower at 2 MiB."
                                                               " Failed in B at 4 MiB, 16 MiB, measured before.")  # fmt: skip
    assert change.regressed and change.changed
    only_fast = PathChange("p", [Run(FASTER, (8,), 2.5, 2.5)], fast, None)
    assert only_fast.sentence() == "NEW is 2.50× faster at batch 8. Largest change: 2.50× faster at batch 8."
    assert only_fast.changed and not only_fast.regressed
    whole = PathChange("p", [], None, None, (None,))
    assert whole.sentence("C") == "no batch measured in both. The whole series failed in C."
    assert whole.regressed and whole.changed
    partly = PathChange("p", [], None, None, (None, 8))
    assert partly.sentence() == "no batch measured in both. The whole series failed in NEW."


def test_path_changes_group_rows_by_path_and_pick_the_largest_change_each_way() -> None:
    """Each path, in the order its rows come, with its runs in batch order, its largest finite speed-up and slowdown."""
    rows = [row(4, 3.0, FASTER, series="b"), row(1, 0.5, SLOWER, series="a"), row(2, 2.0, FASTER, series="b"),
            row(2, 0.7, SLOWER, series="a"), row(8, math.inf, FASTER, series="b"), row(16, 0.0, SLOWER, series="a"),
            row(32, math.nan, SLOWER, series="a")]  # fmt: skip
    first, second = path_changes(rows)
    assert first.path == "b" and second.path == "a"
    assert [r.batches for r in first.runs] == [(2,), (4, 8)] and first.fastest.batch_size == 4 and first.slowest is None
    assert second.slowest.batch_size == 16 and second.fastest is None  # 0.0 is finite: the largest slowdown
    assert [r.batches for r in second.runs] == [(1, 2, 16, 32)] and (second.runs[0].low, second.runs[0].high) == (0.0, 0.7)
    assert first.failed == () and second.failed == ()


def test_path_changes_keep_failures_whole_series_first_and_paths_that_only_failed() -> None:
    """Failed batches are listed in order with a whole-series failure first; a path with nothing compared still appears."""
    rows = [row(1, 1.0, NO_CHANGE, series="a"), row(8, 1.0, NO_CHANGE, series="a")]
    failed = [Failure("a", 16, "x"), Failure("a", 4, "y"), Failure("a", 1, "w"), Failure("a", None, "z"), Failure("gone", None, "died")]
    a, gone = path_changes(rows, failed)
    assert a.failed == (None, 1, 4, 16) and [r.batches for r in a.runs] == [(1,), (8,)]  # batch 4 failed between them
    assert (gone.path, gone.runs, gone.failed, gone.regressed) == ("gone", [], (None,), True)


# Comparison


def comparison(rows: list[Row], **fields: Any) -> Comparison:
    return Comparison(0.05, 0.01, rows=rows, **fields)


def test_a_regression_is_a_slower_point_or_a_failure_never_one_between_unlike_copies() -> None:
    """The exit status is 1 for a slower point or a failure in NEW, not for a slower point between unlike copies."""
    slow = row(1, 0.5, SLOWER)
    assert comparison([slow]).regressed and comparison([slow]).fails()
    assert not comparison([dataclasses.replace(slow, unlike=True)]).regressed
    assert comparison([dataclasses.replace(slow, unlike=True), slow]).regressed
    assert comparison([], failed=[Failure("p", 1, "x")]).regressed
    assert not comparison([row(1, 1.0, NO_CHANGE), row(2, 2.0, FASTER)]).regressed


def test_fail_on_change_also_fails_a_speed_up_but_not_one_between_unlike_copies() -> None:
    """--fail-on change fails any significant speed-up as well; --fail-on slower (the default) does not."""
    fast = row(1, 2.0, FASTER)
    assert not comparison([fast]).fails() and not comparison([fast]).fails("slower")
    assert comparison([fast]).fails("change")
    assert not comparison([dataclasses.replace(fast, unlike=True)]).fails("change")
    assert not comparison([row(1, 1.0, NO_CHANGE), row(2, 3.0, INCONCLUSIVE)]).fails("change")
    assert comparison([], failed=[Failure("p", None, "x")]).fails("change")


def test_the_summary_counts_each_verdict_and_says_what_else_happened() -> None:
    """One line: the points between unlike copies first, then each verdict's count over the like pairs at the
    threshold, then failures and unmatched points."""
    rows = [row(1, 0.5, SLOWER), row(2, 0.5, SLOWER, series="q"), row(4, 2.0, FASTER), row(8, 1.0, NO_CHANGE),
            dataclasses.replace(row(16, 3.0, INCONCLUSIVE), unlike=True)]  # fmt: skip
    full = Comparison(0.125, 0.01, rows=rows, failed=[Failure("p", 32, "x"), Failure("q", None, "y")],
                      unmatched=[Unmatched("p", 64, "base")])  # fmt: skip
    assert full.summary() == ("1 point between unlike copies (reported, not counted as slower or faster); like pairs: 2 slower,"
                              " 1 faster, 1 no change, 0 inconclusive at threshold 12.5%; 2 failed in NEW; 1 measured in one"
                              " file only")  # fmt: skip
    assert full.counts() == {SLOWER: 2, FASTER: 1, NO_CHANGE: 1, INCONCLUSIVE: 0} and full.unlike_rows == rows[-1:]
    assert comparison([row(8, 1.0, NO_CHANGE)]).summary() == "0 slower, 0 faster, 1 no change, 0 inconclusive at threshold 5%"
    only_unlike = comparison([dataclasses.replace(row(4, 2.0, FASTER), unlike=True), dataclasses.replace(row(8, 2.0, FASTER), unlike=True)])
    assert only_unlike.summary() == "2 points between unlike copies (reported, not counted as slower or faster); no like pair compared"
    assert [r.batch_size for r in full.slower] == [1, 2] and [r.batch_size for r in full.faster] == [4]


def test_busy_points_count_each_side_and_say_whether_every_compared_point_was_busy() -> None:
    """busy_points: each side's busy points, the compared points, and whether every one of them was busy."""
    assert comparison([]).busy_points == {"base": 0, "new": 0, "compared": 0, "every_point": False}
    rows = [row(1, 1.0, NO_CHANGE, ("base",)), row(2, 1.0, NO_CHANGE, ("new",))]
    busy = {"base": ["p batch 1"], "new": ["p batch 2"]}
    assert comparison(rows, busy=busy).busy_points == {"base": 1, "new": 1, "compared": 2, "every_point": True}
    rows.append(row(4, 1.0, NO_CHANGE))
    assert comparison(rows, busy=busy).busy_points == {"base": 1, "new": 1, "compared": 3, "every_point": False}


def test_a_new_comparison_starts_empty_for_each_side() -> None:
    """A comparison begins with no rows, failures, busy or damaged points, differences or unlike paths."""
    found = Comparison(0.05, 0.01)
    assert (found.rows, found.unmatched, found.failed, found.differences, found.unlike) == ([], [], [], [], {})
    assert found.busy == {"base": [], "new": []} and found.damaged == {"base": [], "new": []}


# compare on result files' series


def test_points_pair_by_batch_and_each_row_is_tested_at_the_threshold_and_alpha_given() -> None:
    """compare pairs series by key and points by batch size, keeping the threshold and alpha it judged with."""
    base = result(curve("tf", "eager", {1: 1000.0, 2: 1000.0, 4: 1000.0}, seed=1))
    new = result(curve("tf", "eager", {1: 1000.0, 2: 1080.0, 4: 1200.0}, seed=2))
    found = compare(base, new)
    assert (found.threshold, found.alpha) == (0.05, 0.01)
    assert [(r.series, r.batch_size, r.verdict, r.method) for r in found.rows] == [
        ("tf/eager/copy@cpu", 1, NO_CHANGE, MANN_WHITNEY), ("tf/eager/copy@cpu", 2, FASTER, MANN_WHITNEY),
        ("tf/eager/copy@cpu", 4, FASTER, MANN_WHITNEY)]  # fmt: skip
    wide = compare(base, new, threshold=0.1, alpha=1e-12)
    assert (wide.threshold, wide.alpha) == (0.1, 1e-12)
    assert [r.verdict for r in wide.rows] == [NO_CHANGE, NO_CHANGE, INCONCLUSIVE]  # p ≈ 7e-8 is not below 1e-12
    assert [r.verdict for r in compare(base, new, threshold=0.1).rows] == [NO_CHANGE, NO_CHANGE, FASTER]
    assert not found.unmatched and not found.failed and not found.unlike and found.busy == {"base": [], "new": []}
    assert found.damaged == {"base": [], "new": []} and found.differences == []


def test_a_peers_file_is_refused_on_either_side_naming_it() -> None:
    """A file of another tool's figures has no raw samples to test: compare refuses it, naming the file and the tool."""
    ours = result(curve("tf", "eager", {1: 1000.0}))
    peer = result(curve("tf", "eager", {1: 1000.0}), peer={"tool": "nvbandwidth"})
    tail = (" (xferbench import): a peer keeps no raw samples, so there is nothing to test;"
            " set it beside a sweep with xferbench report")  # fmt: skip
    for base, new, said in ((peer, ours, "BASE holds nvbandwidth's figures"), (ours, peer, "NEW holds nvbandwidth's figures")):
        with pytest.raises(XferbenchError) as error:
            compare(base, new)
        assert str(error.value) == said + tail
    with pytest.raises(XferbenchError) as error:
        compare(ours, peer, names=("a.json", "b.json"))
    assert str(error.value) == "b.json holds nvbandwidth's figures" + tail
    assert compare(result(curve("tf", "eager", {1: 1000.0}), peer={}), ours).rows  # an empty peer record is no peer
    assert compare(result(curve("tf", "eager", {1: 1000.0}), peer=None), ours).rows


def test_with_nothing_in_common_the_error_names_every_measured_series_of_both() -> None:
    """No point in both files: one line naming both files' measured series, or that one had none."""
    a = result(curve("tf", "eager", {1: 1000.0}), curve("tf", "function", {1: 1000.0}))
    b = result(curve("torch", "pageable", {1: 1000.0}))
    with pytest.raises(XferbenchError) as error:
        compare(a, b)
    assert str(error.value) == (
        "no matching series between BASE and NEW: BASE has tf/eager/copy@cpu (256x256x3), tf/function/copy@cpu (256x256x3);"
        " NEW has torch/pageable/copy@cpu (256x256x3); compare runs of the same framework, mode, op, device, shape and"
        " host buffer with a batch size in common")  # fmt: skip
    empty = result(skipped(curve("torch", "pageable", {1: 1000.0}), 1))
    with pytest.raises(XferbenchError) as error:
        compare(empty, b, names=("x.json", "y.json"))
    assert str(error.value).startswith("no matching series between x.json and y.json: x.json has no measured series;"
                                       " y.json has torch/pageable/copy@cpu (256x256x3); compare")  # fmt: skip


def test_series_in_one_file_only_are_listed_and_a_new_series_that_measured_nothing_is_not() -> None:
    """A series measured in one file only is unmatched on that side; one NEW skipped or lost, never in BASE, is not mentioned."""
    base = result(curve("tf", "eager", {1: 1000.0}), curve("tf", "function", {1: 1000.0}))
    lost = skipped(curve("tf", "jit", {1: 1000.0}), 1)
    lost.status, lost.reason = "failed", "the worker died"  # failed in NEW, never measured in BASE: nothing to compare
    new = result(curve("tf", "eager", {1: 1000.0}), lost, curve("torch", "pageable", {1: 1000.0}),
                 skipped(curve("jax", "device_put", {1: 1000.0}), 1), curve("host", "numpy", {1: 1000.0}))  # fmt: skip
    found = compare(base, new)
    assert found.unmatched == [Unmatched("tf/function/copy@cpu (256x256x3)", None, "base"),
                               Unmatched("torch/pageable/copy@cpu (256x256x3)", None, "new"),
                               Unmatched("host/numpy/copy@cpu (256x256x3)", None, "new")]  # fmt: skip
    assert [r.series for r in found.rows] == ["tf/eager/copy@cpu"] and not found.failed


def test_a_series_new_lost_is_a_failure_with_its_reason() -> None:
    """A series BASE measured and NEW failed with no point is a failure of the whole series, with NEW's reason."""
    base = result(curve("tf", "function", {1: 1000.0}), curve("tf", "eager", {1: 1000.0}))
    died = skipped(curve("tf", "function", {1: 1000.0}), 1)
    died.status, died.reason = "failed", "the worker died"
    silent = skipped(curve("tf", "function", {1: 1000.0}), 1)
    silent.status = "failed"
    for lost, why in ((died, "the worker died"), (silent, "no point measured")):
        found = compare(base, result(curve("tf", "eager", {1: 1000.0}), lost))
        assert found.failed == [Failure("tf/function/copy@cpu (256x256x3)", None, why)] and found.regressed
        assert [r.series for r in found.rows] == ["tf/eager/copy@cpu"] and not found.unmatched
    gone = skipped(curve("tf", "function", {1: 1000.0}), 1)  # skipped, not failed: not run this time, so not compared
    found = compare(base, result(curve("tf", "eager", {1: 1000.0}), gone))
    assert not found.failed and found.unmatched == [Unmatched("tf/function/copy@cpu (256x256x3)", None, "base")]


def test_a_repeated_series_is_judged_by_the_first_copy_that_measured() -> None:
    """Where a file holds one series twice, the first with a measured point is the one compared."""
    base = result(curve("tf", "eager", {1: 1000.0}))
    empty_first = result(skipped(curve("tf", "eager", {1: 9000.0}), 1), curve("tf", "eager", {1: 2000.0}), curve("tf", "eager", {1: 4000.0}))
    (found,) = compare(base, empty_first).rows
    assert found.ratio == pytest.approx(2.0, rel=0.02) and found.verdict == FASTER
    lost_twice = result(curve("tf", "eager", {1: 1000.0}), curve("tf", "function", {1: 1000.0}))
    first = skipped(curve("tf", "function", {1: 1000.0}), 1)
    first.status, first.reason = "failed", "first"
    second = skipped(curve("tf", "function", {1: 1000.0}), 1)
    second.status, second.reason = "failed", "second"
    found = compare(lost_twice, result(curve("tf", "eager", {1: 1000.0}), first, second))
    assert found.failed == [Failure("tf/function/copy@cpu (256x256x3)", None, "first")]


def test_a_point_that_failed_in_new_where_base_measured_is_a_failure() -> None:
    """An error point, a damaged one, or one skipped after NEW's series failed, is a failure at that batch."""
    base = result(curve("tf", "eager", {1: 1000.0, 2: 1000.0, 4: 1000.0, 8: 1000.0, 16: 1000.0}))
    new = curve("tf", "eager", {1: 1000.0, 2: 1000.0, 4: 1000.0, 8: 1000.0, 16: 1000.0, 32: 1000.0})
    skipped(new, 2, status="error", error="CUDA out of memory")
    skipped(new, 4, status="error")
    skipped(new, 8, status=DAMAGED, error="damaged in the file: a time is not positive")
    skipped(new, 16, 32)  # skipped with the series fine: not run this time
    found = compare(base, result(new))
    name = "tf/eager/copy@cpu"
    assert found.failed == [Failure(name, 2, "CUDA out of memory"), Failure(name, 4, "not measured"),
                            Failure(name, 8, "damaged in the file: a time is not positive")]  # fmt: skip
    assert found.unmatched == [Unmatched(name, 16, "base")] and [r.batch_size for r in found.rows] == [1]
    new.status, new.reason = "failed", "the worker died"
    found = compare(base, result(new))
    assert found.failed == [Failure(name, 2, "CUDA out of memory"), Failure(name, 4, "the worker died"),
                            Failure(name, 8, "damaged in the file: a time is not positive"), Failure(name, 16, "the worker died")]  # fmt: skip
    assert found.unmatched == []
    new.reason = None
    assert compare(base, result(new)).failed[1] == Failure(name, 4, "not measured")


def test_points_measured_in_one_file_only_are_unmatched_on_their_side() -> None:
    """A batch measured in one file only, or one NEW never tried, is listed as in one file only, in batch order."""
    base = result(curve("tf", "eager", {1: 1000.0, 2: 1000.0, 64: 1000.0}))
    new = result(curve("tf", "eager", {2: 1000.0, 4: 1000.0, 32: 1000.0}))
    found = compare(base, new)
    assert found.unmatched == [Unmatched("tf/eager/copy@cpu", 1, "base"), Unmatched("tf/eager/copy@cpu", 4, "new"),
                               Unmatched("tf/eager/copy@cpu", 32, "new"), Unmatched("tf/eager/copy@cpu", 64, "base")]  # fmt: skip
    assert [r.batch_size for r in found.rows] == [2] and not found.failed


def test_busy_points_are_listed_by_side_with_their_series_and_batch() -> None:
    """Each compared point measured on a busy machine is named under the side that was busy."""
    base = result(curve("tf", "eager", {1: 1000.0, 2: 1000.0, 4: 1000.0}, busy=(2,)))
    new = result(curve("tf", "eager", {1: 1000.0, 2: 1000.0, 4: 1000.0}, busy=(1, 2), seed=3))
    found = compare(base, new)
    assert found.busy == {"base": ["tf/eager/copy@cpu batch 2"], "new": ["tf/eager/copy@cpu batch 1", "tf/eager/copy@cpu batch 2"]}
    assert [r.busy for r in found.rows] == [("new",), ("base", "new"), ()]


def test_one_path_on_two_devices_pairs_and_names_both_devices() -> None:
    """The same path measured on another GPU pairs with it, named path@base-device→new-device."""
    a = curve("torch", "pinned", {4: 1000.0}, device="cuda:0")
    b = curve("torch", "pinned", {4: 1000.0}, device="cuda:1", seed=2)
    for series in (a, b):
        series.transfer = HOST_TO_DEVICE
    found = compare(result(a), result(b))
    assert [r.series for r in found.rows] == ["torch/pinned/copy@cuda:0→cuda:1"] and not found.unlike
    assert [r.unlike for r in found.rows] == [False]
    same = curve("torch", "pinned", {4: 1000.0}, device="cuda:0", seed=3)
    same.transfer = HOST_TO_DEVICE
    assert [r.series for r in compare(result(a), result(same)).rows] == ["torch/pinned/copy@cuda:0"]


def test_unlike_copies_are_compared_and_marked_never_a_regression() -> None:
    """A CPU copy against a GPU transfer of the same path: rows marked unlike, the two kinds recorded, no regression."""
    cpu = curve("torch", "pinned", {4: 1000.0, 8: 1000.0})
    gpu = curve("torch", "pinned", {4: 500.0, 8: 500.0}, device="cuda:0", seed=2)
    gpu.transfer = HOST_TO_DEVICE
    found = compare(result(cpu), result(gpu))
    assert found.unlike == {"torch/pinned/copy@cpu→cuda:0": ["a host-to-host copy (CPU, no GPU)",
                                                             "a host-to-device transfer over the GPU's link (CUDA)"]}  # fmt: skip
    assert [(r.verdict, r.unlike) for r in found.rows] == [(SLOWER, True), (SLOWER, True)]
    assert not found.regressed and not found.fails("change")
    assert found.summary() == "2 points between unlike copies (reported, not counted as slower or faster); no like pair compared"


def test_damaged_points_and_differences_are_kept_for_each_side() -> None:
    """The points left out as damaged, and the recorded fields that differ, are kept with the comparison."""
    new = curve("tf", "eager", {1: 1000.0, 2: 1000.0})
    skipped(new, 2, status=DAMAGED, error="damaged in the file: n is 3 but it holds 2 times")
    found = compare(result(curve("tf", "eager", {1: 1000.0, 2: 1000.0})), result(new, host="ci-2"))
    assert found.damaged == {"base": [], "new": ["tf/eager/copy@cpu batch 2 (n is 3 but it holds 2 times)"]}
    assert found.differences == [Difference("host", ["ci-1", "ci-2"])]


def test_compare_files_names_the_files_and_passes_threshold_and_alpha(tmp_path) -> None:
    """compare_files loads both files, judges at the threshold and alpha given, and names the files in its errors."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    result(curve("tf", "eager", {1: 1000.0, 2: 1000.0}, seed=1)).save(a)
    result(curve("tf", "eager", {1: 1080.0, 2: 1200.0}, seed=2)).save(b)
    found = comparing.compare_files(a, b)
    assert (found.threshold, found.alpha) == (0.05, 0.01) and [r.verdict for r in found.rows] == [FASTER, FASTER]
    found = comparing.compare_files(a, b, 0.1, 1e-12)
    assert (found.threshold, found.alpha) == (0.1, 1e-12) and [r.verdict for r in found.rows] == [NO_CHANGE, INCONCLUSIVE]
    assert [r.verdict for r in comparing.compare_files(a, b, threshold=0.1).rows] == [NO_CHANGE, FASTER]
    result(curve("torch", "pageable", {1: 1000.0})).save(b)
    with pytest.raises(XferbenchError) as error:
        comparing.compare_files(a, b)
    assert str(error.value).startswith(f"no matching series between {a} and {b}: {a} has tf/eager/copy@cpu (256x256x3); {b} has")
    result(curve("tf", "eager", {1: 1000.0}), peer={"tool": "nvbandwidth"}).save(b)
    with pytest.raises(XferbenchError, match=f"^{b} holds nvbandwidth's figures"):
        comparing.compare_files(a, b)


# what compare prints and writes


def test_what_differs_lists_eight_fields_then_counts_the_rest() -> None:
    """Up to eight differing fields, one a line as BASE → NEW, then how many more; or that none differs."""
    assert difference_lines([]) == ["what differs: no recorded difference (same device, versions, settings and host)"]
    found = [Difference(f"f{i}", [f"a{i}", f"b{i}"]) for i in range(10)]
    assert difference_lines(found[:8]) == [f"what differs: f{i}: a{i} → b{i}" for i in range(8)]
    assert difference_lines(found[:9]) == [f"what differs: f{i}: a{i} → b{i}" for i in range(8)] + \
        ["what differs: and 1 more fields (xferbench report lists them all)"]  # fmt: skip
    assert difference_lines(found, most=2) == ["what differs: f0: a0 → b0", "what differs: f1: a1 → b1",
                                               "what differs: and 8 more fields (xferbench report lists them all)"]  # fmt: skip


def test_unlike_copies_are_explained_before_a_paths_sentence() -> None:
    """Where BASE and NEW make unlike copies, the sentence starts by saying what the ratio compares."""
    assert unlike_prefix(None) == "" and unlike_prefix([]) == ""
    assert unlike_prefix(["a host copy", "a GPU transfer"]) == ("unlike copies (BASE: a host copy; NEW: a GPU transfer), so the ratio"
                                                                " compares the time until a batch is usable on each device: ")  # fmt: skip


def test_a_p_value_prints_two_digits_down_to_one_in_a_million() -> None:
    """p-values print with two significant digits; below one in a million, as <1e-6."""
    assert [p_text(v) for v in (1.0, 0.0123, 1e-6, 9.99e-7, 0.0)] == ["1", "0.012", "1e-06", "<1e-6", "<1e-6"]


def full_comparison() -> Comparison:
    """Two paths (one between unlike copies), a failure, an unmatched point, busy and damaged points, a difference."""
    rows = [Row("p@cpu", 1, 100.0, 50.0, 0.5, 1e-7, MANN_WHITNEY, True, SLOWER, ("new",)),
            Row("p@cpu", 2, 100.0, 200.0, 2.0, None, OVERLAP, True, FASTER),
            Row("q@cpu→cuda:0", 4, math.inf, 10.0, math.nan, None, TOO_FEW, False, INCONCLUSIVE, (), True),
            Row("q@cpu→cuda:0", 8, 100.0, 40.0, 0.4, 0.001, MANN_WHITNEY, True, SLOWER, (), True)]  # fmt: skip
    return Comparison(0.05, 0.01, rows=rows, failed=[Failure("q@cpu→cuda:0", 16, "CUDA out of memory")],
                      unmatched=[Unmatched("r@cpu (1x2)", None, "base")], busy={"base": [], "new": ["p@cpu batch 1"]},
                      differences=[Difference("host", ["a", "b"])], damaged={"base": ["p@cpu batch 32 (bad)"], "new": []},
                      unlike={"q@cpu→cuda:0": ["host copy", "GPU copy"]})  # fmt: skip


def test_compare_json_carries_every_figure_verdict_and_run() -> None:
    """compare --json: the files, settings, exit status, counts, each path's runs, every row, failure and gap."""
    data = to_dict(full_comparison(), "a.json", "b.json")
    q_sentence = ("unlike copies (BASE: host copy; NEW: GPU copy), so the ratio compares the time until a batch is usable on each"
                  " device: NEW is 0.40× slower at batch 8; inconclusive at batch 4 (-×). Largest change: 0.40× slower at batch 8."
                  " Failed in NEW at batch 16, measured before.")  # fmt: skip
    assert data == {
        "base": "a.json", "new": "b.json", "threshold": 0.05, "alpha": 0.01, "regressed": True, "fail_on": "slower", "exit_status": 1,
        "summary": "2 points between unlike copies (reported, not counted as slower or faster); like pairs: 1 slower, 1 faster,"
                   " 0 no change, 0 inconclusive at threshold 5%; 1 failed in NEW; 1 measured in one file only",
        "counts": {"slower": 1, "faster": 1, "no change": 0, "inconclusive": 0},
        "unlike_copies": {"points": 2, "paths": ["q@cpu→cuda:0"]},
        "busy_points": {"base": 0, "new": 1, "compared": 4, "every_point": False},
        "paths": [
            {"path": "p@cpu", "sentence": "NEW is 0.50× slower at batch 1 (1 busy); 2.00× faster at batch 2. Largest change: 2.00× faster at"
                                          " batch 2, 0.50× slower at batch 1.",
             "regressed": True, "unlike": [],
             "runs": [{"verdict": "slower", "batch_sizes": [1], "ratio_min": 0.5, "ratio_max": 0.5, "busy": 1},
                      {"verdict": "faster", "batch_sizes": [2], "ratio_min": 2.0, "ratio_max": 2.0, "busy": 0}],
             "most_faster": {"batch_size": 2, "ratio": 2.0}, "most_slower": {"batch_size": 1, "ratio": 0.5}, "failed": []},
            {"path": "q@cpu→cuda:0", "sentence": q_sentence, "regressed": True, "unlike": ["host copy", "GPU copy"],
             "runs": [{"verdict": "inconclusive", "batch_sizes": [4], "ratio_min": None, "ratio_max": None, "busy": 0},
                      {"verdict": "slower", "batch_sizes": [8], "ratio_min": 0.4, "ratio_max": 0.4, "busy": 0}],
             "most_faster": None, "most_slower": {"batch_size": 8, "ratio": 0.4}, "failed": [16]},
        ],
        "differences": [{"field": "host", "base": "a", "new": "b"}],
        "rows": [
            {"series": "p@cpu", "batch_size": 1, "base_mbps": 100.0, "new_mbps": 50.0, "ratio": 0.5, "p_value": 1e-7,
             "method": MANN_WHITNEY, "significant": True, "verdict": "slower", "busy": ["new"], "unlike": False},
            {"series": "p@cpu", "batch_size": 2, "base_mbps": 100.0, "new_mbps": 200.0, "ratio": 2.0, "p_value": None,
             "method": OVERLAP, "significant": True, "verdict": "faster", "busy": [], "unlike": False},
            {"series": "q@cpu→cuda:0", "batch_size": 4, "base_mbps": None, "new_mbps": 10.0, "ratio": None, "p_value": None,
             "method": TOO_FEW, "significant": False, "verdict": "inconclusive", "busy": [], "unlike": True},
            {"series": "q@cpu→cuda:0", "batch_size": 8, "base_mbps": 100.0, "new_mbps": 40.0, "ratio": 0.4, "p_value": 0.001,
             "method": MANN_WHITNEY, "significant": True, "verdict": "slower", "busy": [], "unlike": True},
        ],
        "failed": [{"series": "q@cpu→cuda:0", "batch_size": 16, "error": "CUDA out of memory"}],
        "unmatched": [{"series": "r@cpu (1x2)", "batch_size": None, "only_in": "base"}],
        "damaged": {"base": ["p@cpu batch 32 (bad)"], "new": []},
        "caveat": "the test sees the noise within each run, not between runs: on real hardware, repeat both runs"
                  " before trusting a verdict near the threshold",
    }  # fmt: skip


def test_compare_json_never_calls_a_path_between_unlike_copies_regressed_unless_it_failed() -> None:
    """A path between unlike copies is regressed in --json only where NEW failed, however much slower it was."""
    found = full_comparison()
    found.failed = []
    data = to_dict(found, "a.json", "b.json", fail_on="change")
    assert [(p["path"], p["regressed"]) for p in data["paths"]] == [("p@cpu", True), ("q@cpu→cuda:0", False)]
    assert (data["fail_on"], data["exit_status"], data["regressed"]) == ("change", 1, True)
    quiet = Comparison(0.05, 0.01, rows=[Row("p@cpu", 1, 100.0, 300.0, 3.0, 1e-7, MANN_WHITNEY, True, FASTER)])
    assert [(k, to_dict(quiet, "a", "b", f)[k]) for f in ("slower", "change") for k in ("exit_status", "regressed")] == \
        [("exit_status", 0), ("regressed", False), ("exit_status", 1), ("regressed", False)]  # fmt: skip
    assert to_dict(quiet, "a", "b")["paths"][0]["regressed"] is False
