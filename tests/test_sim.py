"""The simulated link is ground truth: the analysis must recover what it was given."""

import pytest

from xferbench.measuring.backends import SimLink
from xferbench.core.results import Result
from xferbench.measuring.sweep import SweepConfig, make_plan, new_result, run_plan
from xferbench.core.timing import TimingConfig


def sim_sweep(link: SimLink, batches=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512)) -> Result:
    config = SweepConfig(frameworks=("sim",), batch_sizes=tuple(batches), sim=link, timing=TimingConfig(max_samples=200))
    plan = make_plan(config)
    return run_plan(plan, new_result(plan, {}), save=lambda r: None)


def test_sim_recovers_latency_and_bandwidth_without_jitter() -> None:
    series = sim_sweep(SimLink(latency_us=12.0, bandwidth_gbps=24.0)).series[0]
    assert series.device == "sim" and series.transfer == "simulated" and series.clock.startswith("virtual")
    s = series.summary
    assert s.latency_s == pytest.approx(12e-6, rel=0.01)
    assert s.bandwidth_mbps == pytest.approx(24_000, rel=0.01)
    assert s.half_bandwidth_bytes == pytest.approx(12e-6 * 24e9, rel=0.01)
    for p in series.points:  # every point is exactly the model
        assert p.median_s == pytest.approx(12e-6 + p.bytes / 24e9, rel=1e-9)
    assert not s.cliff and s.peak_batch_size == 512


def test_sim_jitter_is_seeded() -> None:
    a = sim_sweep(SimLink(jitter=0.1, seed=1), batches=(8, 64)).series[0]
    b = sim_sweep(SimLink(jitter=0.1, seed=1), batches=(8, 64)).series[0]
    c = sim_sweep(SimLink(jitter=0.1, seed=2), batches=(8, 64)).series[0]
    assert [p.times_s for p in a.points] == [p.times_s for p in b.points]
    assert [p.times_s for p in a.points] != [p.times_s for p in c.points]
    assert a.points[0].p10_s < a.points[0].median_s < a.points[0].p90_s
    truth = SimLink().cost_s(a.points[1].bytes)
    assert a.points[1].median_s == pytest.approx(truth, rel=0.03)


def test_sim_records_its_parameters() -> None:
    series = sim_sweep(SimLink(latency_us=3, bandwidth_gbps=50, jitter=0.01, seed=7), batches=(1, 2)).series[0]
    assert series.params == {"latency_us": 3, "bandwidth_gbps": 50, "jitter": 0.01, "seed": 7, "devices": 1,
                             "host_bandwidth_gbps": 0.0, "at_once": 1}


def test_streamed_recovers_the_links_bandwidth_at_every_size_where_per_call_shows_its_latency() -> None:
    link = SimLink(latency_us=20.0, bandwidth_gbps=50.0)
    config = SweepConfig(frameworks=("sim",), batch_sizes=(1, 4, 16, 64, 512), sim=link, methods=("per-call", "streamed"),
                         timing=TimingConfig(max_samples=200))  # fmt: skip
    plan = make_plan(config)
    per_call, streamed = run_plan(plan, new_result(plan, {}), save=lambda r: None).series
    assert (per_call.method, streamed.method) == ("per-call", "streamed")
    assert streamed.label() == "sim/link/copy/streamed@sim" and "per copy" in streamed.clock
    for p in streamed.points:  # the link's rate at every size, launch latency out of the figure
        assert p.mbps == pytest.approx(50_000, rel=1e-9) and 2 <= p.copies <= 512
        # warm-up, sizing and verification runs of 4 copies, the sized run and the samples; 2 warm copies each
        assert p.transfers == p.warmup_calls * (4 + 2) + (4 + 2) + (p.n + 1) * (p.copies + 2) + (4 + 2)
    assert streamed.points[0].copies == 509 and streamed.points[-1].copies == 2  # 2 ms of copying, within 2 to 512
    batch_1 = per_call.points[0]  # 196,608 B: 3.9 µs of link beside 20 µs of latency
    assert batch_1.mbps == pytest.approx(196_608 / (20e-6 + 196_608 / 50e9) / 1e6, rel=1e-9)
    assert batch_1.mbps < 0.2 * streamed.points[0].mbps
    assert per_call.summary.latency_s == pytest.approx(20e-6, rel=0.01)
    assert streamed.summary.bandwidth_mbps == pytest.approx(50_000, rel=0.01) and streamed.summary.latency_s < 1e-9
