"""Small exact tests, each written for a realistic one-line mistake that the suite once let through."""

from __future__ import annotations

import os

import numpy as np

from xferbench.health.fleet import Row
from xferbench.reading.compare import INCONCLUSIVE, SLOWER, compare_point, mann_whitney_u
from xferbench.core.results import OutputFile, Point, Result, load
from xferbench.core.stats import median_uncertainty, point_stats


def test_the_median_interval_takes_the_exact_order_statistics() -> None:
    # n = 100: ranks 50 − 9.8 and 1 + 50 + 9.8, counted from 1, are the 40th and the 61st of 1..100
    times = [float(t) for t in range(1, 101)]
    assert median_uncertainty(times) == (61 - 40) / (2 * 50.5)
    assert median_uncertainty(times[::-1]) == (61 - 40) / (2 * 50.5)  # order in the file does not matter
    assert median_uncertainty(times[:5]) is None  # below 6 samples the interval is the whole range


def point(times: list[float], nbytes: int = 10**6) -> Point:
    stats = point_stats(times, nbytes, 1)
    return Point(1, nbytes, times_s=times, n=stats.n, median_s=stats.median_s, mbps=stats.mbps)


def test_compare_point_tests_at_one_percent_unless_told() -> None:
    rng = np.random.default_rng(2)
    base = list(1.0 + 0.1 * rng.standard_normal(20))
    new = list(1.07 + 0.1 * rng.standard_normal(20))  # about 10% slower, through wide overlapping spreads
    p = mann_whitney_u(base, new)
    assert 0.01 < p < 0.05, p  # significant at 5%, not at 1%
    assert compare_point("s", point(base), point(new)).verdict == INCONCLUSIVE
    assert compare_point("s", point(base), point(new), alpha=0.05).verdict == SLOWER


def test_numbered_names_count_up_from_the_name_asked_for(tmp_path) -> None:
    path = tmp_path / "r.json"
    for name in ("r.json", "r-2.json"):
        (tmp_path / name).write_text("another run's")
    numbered = OutputFile(path, numbered=True)
    numbered.save(Result({}, {}, "1"))
    assert numbered.path == tmp_path / "r-3.json"
    mine = OutputFile(tmp_path / "s.json")
    mine.save(Result({}, {}, "1"))
    for taken in (tmp_path / "s.json", tmp_path / "s-2.json"):  # another run takes its file, twice
        taken.unlink(missing_ok=True)
        taken.write_text("another run's")
        mine.save(Result({}, {}, "2"))
    assert mine.path == tmp_path / "s-3.json" and load(mine.path).created == "2"


def test_every_save_reaches_the_disk(tmp_path, monkeypatch) -> None:
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    output = OutputFile(tmp_path / "r.json")
    output.save(Result({}, {}, "1"))  # claimed
    output.save(Result({}, {}, "2"))  # replaced through a temp file
    assert len(synced) == 2 and load(tmp_path / "r.json").created == "2"


def test_a_link_below_its_maximum_in_exactly_half_the_loaded_samples_is_not_most() -> None:
    from xferbench.core.results import Series
    from xferbench.core.telemetry import ran_below_max

    def series(gens: list[int]) -> Series:
        found = Series("cuda", "raw_pinned", "copy", "cuda:0", [256, 256, 3])
        found.link = {"t_s": [0.1 * i for i in range(len(gens))], "gen": gens, "width": [16] * len(gens),
                      "tx_kbps": [0] * len(gens), "rx_kbps": [20_000_000] * len(gens),  # ~20 GB/s: every sample loaded
                      "pcie_gen_max": 5, "pcie_width_max": 16}  # fmt: skip
        return found

    assert ran_below_max(series([5, 5, 4, 4])) is None  # half: a link that woke from idle, not a down-trained one
    warning = ran_below_max(series([5, 4, 4, 4]))
    assert warning is not None and "down to Gen4 x16 in 3 of 4 samples" in warning


def gpu(host: str, mbps: float, link_max: str = "Gen5 x16", name: str = "NVIDIA H100") -> Row:
    return Row(host, f"{host}.json", "cuda:0", name, link_max, link_max, 1024, mbps, measured="201 MB streamed")


def flagged(rows: list[Row]) -> list[str]:
    return [row.host for row in rows if row.flags]


def test_a_straggler_must_be_both_many_deviations_and_a_fair_share_below() -> None:
    from xferbench.health.fleet import stragglers

    tight = [gpu(f"n{i}", 55_000 + i) for i in range(8)] + [gpu("slow", 54_000)]  # far in MADs, 2% in share
    stragglers(tight)
    assert flagged(tight) == []
    spread = [gpu(f"n{i}", v) for i, v in enumerate((40_000, 46_000, 52_000, 58_000, 64_000))] + [gpu("low", 44_000)]
    stragglers(spread)  # 20% below the median, within its wide spread: not a straggler either
    assert flagged(spread) == []
    clear = [gpu(f"n{i}", 55_000 + 100 * i) for i in range(5)] + [gpu("slow", 14_200)]
    stragglers(clear)
    assert flagged(clear) == ["slow"]


def test_a_group_of_exactly_min_group_is_judged_and_one_fewer_is_not() -> None:
    from xferbench.health.fleet import MIN_GROUP, stragglers

    rows = [gpu(f"n{i}", 55_000) for i in range(MIN_GROUP - 1)] + [gpu("slow", 14_200)]
    found = stragglers(rows)
    assert len(rows) == MIN_GROUP and flagged(rows) == ["slow"] and found[("NVIDIA H100", "Gen5 x16", "201 MB streamed")][2] == 3
    fewer = [gpu("n0", 55_000), gpu("slow", 14_200)]
    stragglers(fewer, min_group=3)
    assert flagged(fewer) == []


def test_gen4_and_gen5_hosts_of_one_model_are_judged_apart() -> None:
    from xferbench.health.fleet import stragglers

    rows = [gpu(f"g5-{i}", 55_000) for i in range(4)] + [gpu(f"g4-{i}", 26_000, link_max="Gen4 x16") for i in range(3)]
    found = stragglers(rows)
    assert flagged(rows) == []  # a Gen4 host at half a Gen5 host's ceiling is healthy
    assert found[("NVIDIA H100", "Gen4 x16", "201 MB streamed")] == (26_000, 0, 3)


def test_the_runs_reaped_children_are_its_own_cpu_time() -> None:
    """A compiler a framework runs and waits for is the run's own work, not another process's."""
    import subprocess
    import sys

    from xferbench.measuring.contention import _process_ticks

    ticks_per_s = os.sysconf("SC_CLK_TCK")
    before = _process_ticks(os.getpid())
    burn = "import time\nstart = time.process_time()\nwhile time.process_time() - start < 0.3: pass"
    subprocess.run([sys.executable, "-c", burn], check=True)  # reaped: its time moves to this process's cutime
    gained = (_process_ticks(os.getpid()) - before) / ticks_per_s
    assert gained >= 0.25, gained  # CPU time, however busy the machine: the child burns 0.3 s of its own


def test_page_faults_per_call_count_each_streamed_copy_as_a_call(monkeypatch) -> None:
    """A streamed sample times many copies: its faults are per copy, or a streamed path reads up to 512× high."""
    from conftest import FAST
    from xferbench.measuring import measure
    from xferbench.measuring.backends import SimBackend
    from xferbench.core.spec import PER_CALL, STREAMED, SeriesKey

    faults = [0]
    monkeypatch.setattr(measure, "minor_faults", lambda: faults[0])
    real_streamed, real_sample = measure.sample_streamed, measure.sample

    def streamed(run, copies, timing, clock):  # type: ignore[no-untyped-def]
        samples = real_streamed(run, copies, timing, clock)
        faults[0] += 7 * copies * len(samples.times_s)  # 7 fresh pages a copy
        return samples

    def per_call(transfer, timing, clock, *more, **named):  # type: ignore[no-untyped-def]
        samples = real_sample(transfer, timing, clock, *more, **named)
        faults[0] += 7 * len(samples.times_s)
        return samples

    monkeypatch.setattr(measure, "sample_streamed", streamed)
    monkeypatch.setattr(measure, "sample", per_call)
    link = {"latency_us": 10.0, "bandwidth_gbps": 12.0, "jitter": 0.0, "seed": 0}
    for method in (PER_CALL, STREAMED):
        point = measure.measure_point(SimBackend(), SeriesKey("sim", "link", "copy", "sim", (64, 64, 3), method=method).at(4), link, FAST)
        assert point.status == "ok" and point.page_faults_per_call == 7, (method, point.copies)
        assert (point.copies or 1) > 1 or method == PER_CALL


def test_a_torch_d2h_copy_that_stops_after_warm_up_fails_verification(monkeypatch) -> None:
    """Verification writes fresh bytes to the device first: a path that hands back its warm-up copy cannot pass."""
    import pytest

    pytest.importorskip("torch")
    from conftest import FAST
    from xferbench.measuring.backends.pytorch import TorchBack, TorchBackend
    from xferbench.measuring.measure import measure_point
    from xferbench.core.spec import D2H, SeriesKey

    real = TorchBack._down

    def stale(self):  # type: ignore[no-untyped-def]
        if not hasattr(self, "first"):
            self.first = real(self)
        return self.first

    key = SeriesKey("torch", "pageable", "copy", "cpu", (64, 64, 3), direction=D2H)
    assert measure_point(TorchBackend(), key.at(4), {}, FAST).status == "ok"
    monkeypatch.setattr(TorchBack, "_down", stale)
    failed = measure_point(TorchBackend(), key.at(4), {}, FAST)
    assert failed.status == "error" and "verification failed" in failed.error.lower(), failed.error
