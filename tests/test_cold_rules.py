"""--cold-source (measuring/cold.py) rule by rule: which series it applies to and why not the others, the
eviction bandwidthTest makes (a memset of a buffer of its own, a new value each time, every byte), that it runs
before every sampled call and outside that call's timing, and that a cold series says so in its parameters, its
title, the memory it asks for, and the difference a report or a comparison finds between a cold file and a warm one."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import FAST_ARGS, needs_torch
from xferbench import load
from xferbench.cli import app
from xferbench.core.results import Result, Series
from xferbench.core.spec import BIDIR, D2H, PER_CALL, STREAMED, SeriesKey
from xferbench.core.timing import TimingConfig, sample
from xferbench.measuring import cold, measure, sweep
from xferbench.measuring.backends import BACKENDS
from xferbench.measuring.cold import COLD_SOURCE, EVICTION_BYTES, Eviction, cold_source_reason, take_eviction
from xferbench.measuring.sweep import SweepConfig, make_plan
from xferbench.reading.display import series_title
from xferbench.reading.pairs import differences, facts

SHAPE = (4, 4, 3)


def key(framework: str, mode: str, buffer: str = "", method: str = PER_CALL, direction: str = "h2d") -> SeriesKey:
    return SeriesKey(framework, mode, "copy", "cuda:0" if framework != "host" else "cpu", SHAPE, buffer, method, direction)


PINNED = "--cold-source evicts between pageable copies, as bandwidthTest does; {} copies from page-locked memory"


@pytest.mark.parametrize("series, reason", [
    (key("cuda", "raw_pageable"), None), (key("torch", "pageable"), None), (key("torch", "pageable_into"), None),
    (key("torch", "tensor"), None), (key("torch", "pin"), None), (key("tf", "eager"), None), (key("jax", "device_put"), None),
    (key("cupy", "asarray", "aligned"), None), (key("host", "numpy"), None), (key("host", "staged"), None),
    (key("sim", "link"), "--cold-source: the simulated link reads no host memory, so there is no cache to make cold"),
    (key("torch", "loader"), "--cold-source evicts between single copies; a pipeline's loader makes each batch between calls"),
    (key("tf", "dataset"), "--cold-source evicts between single copies; a pipeline's loader makes each batch between calls"),
    (key("torch", "pageable", direction=D2H),
     "--cold-source makes the host source of a host-to-device copy cold; a d2h copy reads the device"),
    (key("cuda", "raw_pageable", direction=BIDIR),
     "--cold-source makes the host source of a host-to-device copy cold; a bidir copy reads the device"),
    (key("cuda", "raw_pageable", method=STREAMED),
     "--cold-source evicts between timed calls; a streamed series queues its copies back to back with nothing between"),
    (key("cuda", "raw_pinned"), PINNED.format("cuda/raw_pinned")), (key("torch", "pinned_into"), PINNED.format("torch/pinned_into")),
    (key("jax", "pinned_host"), PINNED.format("jax/pinned_host")), (key("cuda", "raw_registered"), PINNED.format("cuda/raw_registered")),
])  # fmt: skip
def test_it_applies_to_per_call_host_to_device_and_host_copies_from_pageable_memory_only(series: SeriesKey, reason: str | None) -> None:
    """Word for word, each series it cannot apply to and why; None for every pageable per-call h2d or host copy."""
    assert cold_source_reason(series) == reason


def test_the_eviction_is_bandwidthtests_256_mib_memset_made_whole_with_a_new_value_each_time() -> None:
    """256 MiB by default; touched once when made; each call writes every byte with the call's number (mod 256)."""
    assert EVICTION_BYTES == 256 * 2**20 and COLD_SOURCE == "cold_source"
    eviction = Eviction(4096 + 3)
    assert eviction.nbytes == 4099 and (eviction.buffer == 0xFF).all()
    for value in (0, 1, 2):
        eviction()
        assert (eviction.buffer == value).all()
    eviction.calls = 256
    eviction()
    assert (eviction.buffer == 0).all()
    assert eviction.params() == {"cold_source": True, "eviction_bytes": 4099}


def test_the_default_eviction_is_256_mib(monkeypatch: pytest.MonkeyPatch) -> None:
    """Made without a size, as measure_series makes it, it takes EVICTION_BYTES as the module holds it when made."""
    monkeypatch.setattr(cold, "EVICTION_BYTES", 1000)
    assert Eviction().nbytes == 1000 and Eviction().buffer.size == 1000


def test_the_flag_is_taken_out_of_the_parameters_a_backend_sees() -> None:
    """A backend (the simulated link's SimLink(**params)) never sees the flag; an eviction only where it is true."""
    params, eviction = take_eviction({"latency_us": 1.0, COLD_SOURCE: True})
    assert params == {"latency_us": 1.0} and isinstance(eviction, Eviction)
    eviction = None
    assert take_eviction({"latency_us": 1.0, COLD_SOURCE: False}) == ({"latency_us": 1.0}, None)
    assert take_eviction({"overlap": True}) == ({"overlap": True}, None)


class Clock:
    """A fake clock: each call of the transfer takes 1 s and each eviction 100 s."""

    def __init__(self) -> None:
        self.now, self.log = 0.0, []

    def __call__(self) -> float:
        return self.now

    def transfer(self) -> None:
        self.log.append("call")
        self.now += 1.0

    def evict(self) -> None:
        self.log.append("evict")
        self.now += 100.0


def test_sampling_evicts_before_every_call_and_times_the_call_alone() -> None:
    """Evict, call, evict, call...: each sample is the call's 1 s, not the eviction's 100; the loop's caps count both."""
    clock = Clock()
    samples = sample(clock.transfer, TimingConfig(min_samples=3, min_time_s=0, max_samples=3, max_time_s=1e6), clock, between=clock.evict)
    assert clock.log == ["evict", "call"] * 3 and samples.times_s == [1.0] * 3
    clock = Clock()
    capped = sample(clock.transfer, TimingConfig(min_samples=10, min_time_s=0, max_samples=10, max_time_s=250), clock, between=clock.evict)
    assert len(capped.times_s) == 3  # 303 s on the clock by then: the eviction's time bounds the point too
    clock = Clock()
    assert sample(clock.transfer, TimingConfig(min_samples=2, min_time_s=0, max_samples=2), clock).times_s == [1.0, 1.0]
    assert clock.log == ["call", "call"]  # without --cold-source nothing runs between calls


def test_a_cold_host_series_evicts_before_each_sample_only_and_records_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real host copy: the eviction runs once per sampled call (not in the warm-up or the check), and the series'
    parameters say the source was cold and by how large a memset."""
    made: list[Eviction] = []

    class Counted(Eviction):
        def __init__(self) -> None:
            super().__init__(8192)
            made.append(self)

    monkeypatch.setattr(measure, "take_eviction", lambda params: ({k: v for k, v in params.items() if k != COLD_SOURCE},
                                                                  Counted() if params.get(COLD_SOURCE) else None))  # fmt: skip
    sampled: list[int] = []
    real_sample = measure.sample
    monkeypatch.setattr(measure, "sample", lambda call, timing, clock, between=None: sampled.append(len(made)) or real_sample(
        call, timing, clock, between=between))  # fmt: skip
    series = Series.of(key("host", "numpy"))
    timing = TimingConfig(warmup_calls=2, warmup_s=0, min_samples=4, min_time_s=0, max_samples=4)
    measure.measure_series(BACKENDS["host"], series.key, (1, 2), {COLD_SOURCE: True}, timing, series)
    assert [p.status for p in series.points] == ["ok", "ok"] and [p.n for p in series.points] == [4, 4]
    assert len(made) == 1 and made[0].calls == 8  # one buffer for the series; an eviction per sample, none in warm-up or check
    assert series.params == {"buffers": "64-byte aligned source and destination", "cold_source": True, "eviction_bytes": 8192}
    assert series.note == COLD_NOTE.format(0.0078125)
    warm = Series.of(key("host", "numpy"))
    measure.measure_series(BACKENDS["host"], warm.key, (1,), {}, timing, warm)
    assert len(made) == 1 and "cold_source" not in warm.params and warm.note is None


COLD_NOTE = ("cold source: a {:g} MiB memset before each timed call, untimed, evicts the source from the CPU caches, as bandwidthTest"
             " does between its pageable copies")  # fmt: skip


def test_the_note_says_the_source_was_cold_after_what_the_path_says() -> None:
    eviction = Eviction(256 * 2**20)
    assert eviction.noted(None) == COLD_NOTE.format(256)
    assert eviction.noted("from pageable memory the driver stages") == "from pageable memory the driver stages; " + COLD_NOTE.format(256)


def test_the_plan_skips_what_it_cannot_make_cold_and_counts_the_eviction_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep passes the flag to every framework, skips with the reason what it does not apply to, records the flag in
    its config, and asks for the eviction's 256 MiB beside each series' own memory."""
    config = SweepConfig(frameworks=("host", "sim"), batch_sizes=(1,), shape=SHAPE, cold_source=True)
    assert config.params("host") == {COLD_SOURCE: True} and config.params("sim")[COLD_SOURCE] is True
    assert config.params("torch")[COLD_SOURCE] is True and config.params("cuda") == {COLD_SOURCE: True}
    assert SweepConfig().params("host") == {} and COLD_SOURCE not in SweepConfig().params("sim")
    monkeypatch.setattr(sweep, "available_host_memory", lambda: (EVICTION_BYTES + 96, "available"))
    plan = make_plan(config)
    try:
        assert {s.key.label(): s.skip for s in plan.series} == {
            "host/numpy/copy@cpu": None, "sim/link/copy@sim": cold_source_reason(SeriesKey("sim", "link", "copy", "sim", SHAPE))}
        result = sweep.new_result(plan, {})
        assert result.config["cold_source"] is True
    finally:
        plan.close()
    monkeypatch.setattr(sweep, "available_host_memory", lambda: (EVICTION_BYTES + 95, "available"))  # host/numpy at batch 1: 2 × 48 B
    with pytest.raises(Exception) as refused:
        make_plan(config)
    assert "needs 0.3 GB of host memory" in str(refused.value)


def test_a_cold_series_is_named_so_in_its_title_and_told_apart_from_a_warm_file() -> None:
    """The table's title says cold source; report, compare and plot find the difference between a cold and a warm file."""
    cold_series = Series.of(key("cuda", "raw_pageable"))
    cold_series.params = {"cold_source": True, "eviction_bytes": EVICTION_BYTES}
    warm_series = Series.of(key("cuda", "raw_pageable"))
    assert series_title(cold_series).endswith(" · cold source") and "cold" not in series_title(warm_series)
    result = Result(environment={}, config={}, created="2026-11-28T00:00:00+00:00")
    assert facts(result, [cold_series])["source before each call"] == "evicted from the CPU caches (a 256 MiB memset)"
    found = {d.field: d for d in differences([(result, [warm_series]), (result, [cold_series])])}
    assert found["source before each call"].values[1] == "evicted from the CPU caches (a 256 MiB memset)"
    # the warm file reads as copied back to back, never as unrecorded ("—")
    assert found["source before each call"].values[0] == "back to back (no eviction between calls)"
    assert found["source before each call"].describe(0) == "source before each call back to back (no eviction between calls)"
    assert differences([(result, [warm_series]), (result, [warm_series])]) == []


def test_sweep_cold_source_end_to_end_with_the_host_copy(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`xferbench sweep -f host --cold-source`: measured, verified, and recorded in the file and the table."""
    monkeypatch.setattr(cold, "EVICTION_BYTES", 2**20)
    out = tmp_path / "cold.json"
    r = CliRunner().invoke(app, ["sweep", "-f", "host", "--batch-sizes", "1,2", "--shape", "16x16x3", "--cold-source", "-o", str(out),
                                 *FAST_ARGS])  # fmt: skip
    assert r.exit_code == 0, r.output
    result = load(out)
    (series,) = result.series
    assert series.status == "ok" and series.params["cold_source"] is True and series.params["eviction_bytes"] == 2**20
    assert result.config["cold_source"] is True and "· cold source" in r.stdout and series.note == COLD_NOTE.format(1)
    assert np.isfinite([p.mbps for p in series.points]).all()


def test_compare_reads_a_warm_file_as_back_to_back_against_a_cold_one(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`xferbench compare warm.json cold.json`: the warm side copied back to back, not "—" (which reads as unrecorded)."""
    monkeypatch.setattr(cold, "EVICTION_BYTES", 2**20)
    runs = {}
    for name, more in (("warm", []), ("cold", ["--cold-source"])):
        runs[name] = tmp_path / f"{name}.json"
        r = CliRunner().invoke(app, ["sweep", "-f", "host", "--batch-sizes", "1", "--shape", "16x16x3", *more, "-o", str(runs[name]),
                                     *FAST_ARGS])  # fmt: skip
        assert r.exit_code == 0, r.output
    r = CliRunner().invoke(app, ["compare", str(runs["warm"]), str(runs["cold"])], terminal_width=300)
    said = " ".join(r.output.split())
    assert "source before each call: back to back (no eviction between calls) → evicted from the CPU caches (a 1 MiB memset)" in said
    assert "source before each call: —" not in said


def test_a_simulated_link_or_a_peers_figures_say_nothing_of_the_source_before_each_call() -> None:
    """A simulated link moves no source, and a peer's loop is its tool's own: neither reads as back to back."""
    result = Result(environment={}, config={}, created="2026-11-28T00:00:00+00:00")
    simulated = Series.of(key("sim", "link"))
    simulated.transfer = "simulated"
    peer = Series("nvbandwidth", "host_to_device_memcpy_ce", "copy", "cuda:0", [1], params={"tool": "nvbandwidth v0.8"})
    assert facts(result, [simulated])["source before each call"] == "—" == facts(result, [peer])["source before each call"]


@pytest.mark.slow
@needs_torch
def test_sweep_cold_source_runs_in_the_torch_worker_and_skips_the_pinned_modes(tmp_path: Any) -> None:
    """The flag crosses to the worker: torch pageable and pageable_into on the CPU are cold; nothing pinned runs."""
    out = tmp_path / "torch.json"
    r = CliRunner().invoke(app, ["sweep", "-f", "torch", "-m", "pageable,pageable_into", "--device", "cpu", "--batch-sizes", "1",
                                 "--shape", "16x16x3", "--cold-source", "-d", "h2d,d2h", "-o", str(out), *FAST_ARGS])  # fmt: skip
    assert r.exit_code == 0, r.output
    found = {s.label(): s for s in load(out).series}
    for label in ("torch/pageable/copy@cpu", "torch/pageable_into/copy@cpu"):
        assert found[label].status == "ok" and found[label].params["cold_source"] is True
    assert found["torch/pageable_into/copy/d2h@cpu"].status == "skipped"
    assert found["torch/pageable_into/copy/d2h@cpu"].reason == cold_source_reason(found["torch/pageable_into/copy/d2h@cpu"].key)


def test_the_method_page_lists_exactly_the_paths_cold_source_applies_to_and_those_it_skips_for_their_source() -> None:
    """docs/method.md's lists against cold_source_reason over every backend's modes and sources, per call and host to device:
    a path added, or one whose rule changes, must change the page too."""
    import re
    from pathlib import Path

    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "method.md").read_text().split())
    said = re.search(r"It applies to per-call host-to-device copies and host copies from pageable memory \((.*?)\); a pinned or"
                     r" registered source \((.*?)\),", text)  # fmt: skip
    assert said, "docs/method.md: the --cold-source sentence is not where this test reads it"
    applies, page_locked = ({tuple(p.split()) for p in re.findall(r"`([^`]+)`", group)} for group in said.groups())
    found: dict[bool, set[tuple[str, str]]] = {True: set(), False: set()}
    for name, backend in BACKENDS.items():
        for mode in backend.modes:
            for source in backend.sources(mode):
                reason = cold_source_reason(key(name, mode, source))
                if reason is None or "page-locked" in reason:
                    found[reason is None].add((name, mode))
    assert applies == found[True] and page_locked == found[False]
