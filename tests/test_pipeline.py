"""Input-pipeline paths: the dataset whose batches tell each other apart, the check that catches a
dropped or repeated batch, --overlap's arithmetic and calibration on a virtual clock, torch's
DataLoader modes on the CPU, and the sweep options that select them."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from conftest import FAST, needs_torch, run_config
from xferbench.measuring.backends import BACKENDS
from xferbench.measuring.buffers import read_host
from xferbench.core.errors import VerificationError, XferbenchError
from xferbench.measuring.measure import measure_point, measure_series
from xferbench.measuring.backends.pipeline import PipelineTransfer, batch_indices, dataset_items, item_count, repeats_for
from xferbench.core.results import Point, Series, _damage
from xferbench.core.spec import PIPELINE_MODES, SeriesKey
from xferbench.core.stats import overlap_stats
from xferbench.measuring.sweep import SweepConfig, _check_static, _select_backends

SMALL = (4, 4, 3)


def test_no_two_items_alike_and_batches_repeat_only_after_2b_plus_1() -> None:
    for b in (1, 2, 3, 16):
        items = dataset_items(b, SMALL)
        flat = {items[i].tobytes() for i in range(item_count(b))}
        assert len(flat) == item_count(b)
        starts = [batch_indices(k, b)[0] for k in range(item_count(b) + 1)]
        assert len(set(starts[:-1])) == item_count(b) and starts[-1] == starts[0]


class FakePipeline(PipelineTransfer):
    """A pipeline on a virtual clock: delivering takes `copy_s`, the kernel `kernel_s` per repeat, and a
    step takes both, one after the other (overlaps=False) or at once (overlaps=True)."""

    def __init__(self, b: int, copy_s: float = 1e-3, kernel_s: float = 1e-4, overlaps: bool = False, fault: str = "") -> None:
        self.label, self.batch_size, self.items = "fake", b, dataset_items(b, SMALL)
        self.copy_s, self.kernel_s, self.overlaps, self.fault = copy_s, kernel_s, overlaps, fault
        self.now, self.next_batch, self.in_step = 0.0, 0, False
        self.clock = lambda: self.now
        self.virtual = True

    def _deliver(self):  # type: ignore[no-untyped-def]
        if self.fault == "drop" and self.next_batch == 5:
            self.next_batch += 1
        if self.fault == "repeat" and self.next_batch == 5:
            self.next_batch -= 1
            self.fault = ""
        batch = self.items[batch_indices(self.next_batch, self.batch_size)]
        if self.fault == "corrupt" and self.next_batch == 8:
            batch[-1, -1, -1, -1] = 0  # a copy (fancy indexing) of the items: one byte lost on the way
        self.next_batch += 1
        if not self.in_step:
            self.now += self.copy_s
        return batch

    def _read(self, batch):  # type: ignore[no-untyped-def]
        return read_host(batch), None

    def _compute(self, batch) -> None:  # type: ignore[no-untyped-def]
        kernel = self.kernel_s * self.repeats
        self.now += max(kernel, self.copy_s) if self.overlaps and batch is not None else kernel

    def step(self) -> None:
        self.in_step = True
        batch = self._deliver()
        self.delivered += 1
        if not self.overlaps:
            self.now += self.copy_s
        self._compute(batch)
        self.in_step = False


class Serving:
    """The part of a backend measure_point uses, preparing a fake pipeline of the given class."""

    def __init__(self, pipeline: type[FakePipeline]) -> None:
        self.pipeline = pipeline

    def prepare(self, spec, params):  # type: ignore[no-untyped-def]
        return self.pipeline(spec.batch_size)

    def is_out_of_memory(self, error: BaseException) -> bool:
        return False


def test_the_next_batch_is_checked_byte_for_byte_and_a_dropped_or_repeated_one_named() -> None:
    clean = FakePipeline(3)
    for _ in range(8):
        clean()
    clean.verify()
    corrupt = FakePipeline(3, fault="corrupt")
    for _ in range(8):
        corrupt()
    with pytest.raises(VerificationError, match=r"batch 8 of the pipeline: 1 of 144 bytes differ"):
        corrupt.verify()
    for b in (1, 3):  # with one item a batch, a dropped batch must not read as two repeated
        for fault, said in (("drop", "1 batch(es) dropped"), ("repeat", "1 batch(es) repeated")):
            faulty = FakePipeline(b, fault=fault)
            for _ in range(8):
                faulty()
            with pytest.raises(VerificationError, match=re.escape(said)):
                faulty.verify()
    for fault, said in (("drop", "1 batch(es) dropped"), ("repeat", "1 batch(es) repeated")):
        faulty = FakePipeline(3, fault=fault)
        for _ in range(8):
            faulty()
        with pytest.raises(VerificationError, match=r"batch 8 of the pipeline is not the batch due: its first item is batch \d+'s: " + re.escape(said)):
            faulty.verify()


def test_a_batch_dropped_while_sampling_fails_the_point() -> None:
    """measure_point checks the sequence after the samples too: a fault after the first check is caught."""

    class LateDrop(FakePipeline):
        checked = 0

        def verify(self) -> None:
            self.checked += 1
            super().verify()

        def _deliver(self):  # type: ignore[no-untyped-def]
            if self.checked == 1 and not self.fault:  # the first sample after the first check
                self.fault = "dropped"
                self.next_batch += 1
            return super()._deliver()

    key = SeriesKey("torch", "loader", "copy", "cpu", SMALL)
    point = measure_point(Serving(LateDrop), key.at(2), {}, FAST)  # type: ignore[arg-type]
    assert point.status == "error" and "verification failed" in point.error and "dropped" in point.error


def test_overlap_none_when_the_step_is_the_sum_all_when_it_is_the_longer_part() -> None:
    assert overlap_stats([2.0], [1.0], [3.0]).hidden == 0
    assert overlap_stats([2.0], [1.0], [3.5]).hidden == 0  # slower than the sum: still none, never negative
    assert overlap_stats([2.0], [2.0], [2.0]).hidden == 1
    assert overlap_stats([2.0], [3.0], [2.5]).hidden == 1  # quicker than the compute alone (noise): all, never more
    assert overlap_stats([2.0], [1.0], [2.0]).hidden == 1  # as long as the longer part: all the shorter one hid
    assert overlap_stats([1.0], [2.0], [2.5]).hidden == pytest.approx(0.5)  # the shorter part is the delivery here
    assert overlap_stats([1.0, 2.0, 3.0], [1.0], [2.5]).hidden == pytest.approx(0.5)  # medians: (2 + 1 - 2.5) / 1
    assert overlap_stats([2.0], [1.0], [3.0]).balance == 0.5


@pytest.mark.parametrize("overlaps, hidden", [(False, 0.0), (True, 1.0)])
def test_overlap_is_measured_with_a_kernel_sized_to_the_batch_time(overlaps: bool, hidden: float) -> None:
    pipeline = FakePipeline(2, copy_s=1e-3, kernel_s=1e-4, overlaps=overlaps)
    record = pipeline.overlap(1e-3, FAST)
    assert record["repeats"] == 10 and record["kernel"] == "float32 128x128 matmul"
    figures = overlap_stats([1e-3], record["compute_times_s"], record["step_times_s"])
    assert figures.compute_s == pytest.approx(1e-3)
    assert figures.hidden == pytest.approx(hidden)
    pipeline.verify()  # the steps took their batches in order too


def test_repeats_follow_the_target_within_bounds() -> None:
    assert repeats_for(1e-3, 1e-4) == 10
    assert repeats_for(1e-6, 1e-4) == 1
    assert repeats_for(1e3, 1e-9) == 100_000
    assert repeats_for(math.inf, 1e-4) == 1


def test_a_point_whose_compute_record_is_damaged_is_left_out() -> None:
    spec = SeriesKey("torch", "loader", "copy", "cpu", SMALL).at(2)
    from xferbench.core.timing import Samples

    point = Point.measured(spec, Samples([1e-3, 2e-3]), 1)
    point.compute = {"kernel": "k", "repeats": 3, "compute_times_s": [1e-3], "step_times_s": [2e-3]}
    assert _damage(point, 48) is None and point.overlap_figures() is not None
    for broken in ({"repeats": 0}, {"step_times_s": []}, {"compute_times_s": [-1.0]}, {"step_times_s": ["x"]}):
        point.compute = {"kernel": "k", "repeats": 3, "compute_times_s": [1e-3], "step_times_s": [2e-3], **broken}
        assert _damage(point, 48), broken


@needs_torch
def test_torch_loader_delivers_verified_batches_on_the_cpu() -> None:
    key = SeriesKey("torch", "loader", "copy", "cpu", SMALL)
    series = Series("torch", "loader", "copy", "cpu", list(SMALL))
    measure_series(BACKENDS["torch"], key, (1, 3), {"overlap": True, "loader_workers": 1}, FAST, series)
    assert series.status == "ok", series.reason
    assert [p.status for p in series.points] == ["ok", "ok"], [p.error for p in series.points]
    for point in series.points:
        assert point.transfers >= point.n + 2  # every sample, and both checks
        assert point.compute["repeats"] >= 1 and point.overlap_figures().step_s > 0
    assert series.params["num_workers"] == 0 and series.params["pin_memory"] is False
    assert "DataLoader(pin_memory=False" in series.note and series.transfer == "host-to-host"


@needs_torch
@pytest.mark.slow
def test_a_pipeline_sweep_runs_the_loaders_with_workers_in_torchs_own_process() -> None:
    """Workers are forked from torch's worker process, as in every sweep (never from a process other
    frameworks have made multithreaded); --pipeline adds the pipelines to the default modes."""
    result = run_config(SweepConfig(frameworks=("torch",), pipeline=True, overlap=True, loader_workers=2, shape=SMALL,
                                    batch_sizes=(1, 3), timing=FAST))  # fmt: skip
    by_mode = {s.mode: s for s in result.series}
    assert list(by_mode) == [*BACKENDS["torch"].default_modes, *PIPELINE_MODES["torch"]]
    workers = by_mode["loader_workers"]
    assert workers.status == "ok" and [p.status for p in workers.points] == ["ok", "ok"], [p.error for p in workers.points]
    assert workers.params["num_workers"] == 2 and all(p.overlap_figures() for p in workers.points)
    assert by_mode["loader_pin"].status == "skipped" and "pins only for an accelerator" in by_mode["loader_pin"].reason
    assert result.config["pipeline"] is True and result.config["loader_workers"] == 2


@needs_torch
def test_a_torch_loader_that_drops_a_batch_is_caught(monkeypatch) -> None:
    from xferbench.measuring.backends import pytorch

    deliver = pytorch.TorchLoader._deliver

    def dropping(self):  # type: ignore[no-untyped-def]
        if self.delivered == 3:
            next(self.batches)
        return deliver(self)

    monkeypatch.setattr(pytorch.TorchLoader, "_deliver", dropping)
    key = SeriesKey("torch", "loader", "copy", "cpu", SMALL)
    point = measure_point(BACKENDS["torch"], key.at(2), {}, FAST)
    assert point.status == "error" and "1 batch(es) dropped" in point.error


@needs_torch
def test_pinned_loaders_and_the_seed_op_say_why_they_do_not_run() -> None:
    torch = BACKENDS["torch"]
    assert "pins only for an accelerator" in torch.skip_reason(SeriesKey("torch", "loader_pin", "copy", "cpu", SMALL))
    assert "turns pin_memory off on MPS" in torch.skip_reason(SeriesKey("torch", "loader_pin_workers", "copy", "mps", SMALL))
    assert "seed op" in torch.skip_reason(SeriesKey("torch", "loader", "seed", "cpu", SMALL))
    assert torch.skip_reason(SeriesKey("torch", "loader_pin", "copy", "cuda:0", SMALL)) is None
    assert not set(PIPELINE_MODES["torch"]) & set(torch.default_modes)  # the default sweep is unchanged


def test_pipeline_options_are_refused_where_they_select_nothing() -> None:
    def check(**kwargs) -> None:  # type: ignore[no-untyped-def]
        config = SweepConfig(**kwargs)
        _check_static(config, _select_backends(config))

    with pytest.raises(XferbenchError, match="only torch and tf have input-pipeline paths"):
        check(frameworks=("host",), pipeline=True)
    with pytest.raises(XferbenchError, match="--overlap times a compute kernel"):
        check(frameworks=("host",), overlap=True)
    with pytest.raises(XferbenchError, match="--loader-workers 0"):
        check(frameworks=("host",), loader_workers=0)
    config = SweepConfig(frameworks=("torch",), pipeline=True)
    assert config.modes_for(BACKENDS["torch"]) == (*BACKENDS["torch"].default_modes, *PIPELINE_MODES["torch"])
    assert SweepConfig(frameworks=("torch",)).modes_for(BACKENDS["torch"]) == BACKENDS["torch"].default_modes
    assert config.params("torch") == {"overlap": False, "loader_workers": config.loader_workers}


def test_the_cli_refuses_a_pipeline_option_that_selects_nothing_in_one_line() -> None:
    from typer.testing import CliRunner

    from xferbench.cli import app

    for args, said in ((["-f", "host", "--pipeline"], "--pipeline: only torch and tf have input-pipeline paths; add -f torch or -f tf"),
                       (["-f", "host", "--overlap"], "--overlap times a compute kernel beside an input pipeline"),
                       (["-f", "host", "--loader-workers", "0"], "--loader-workers 0: give 1 to 64 worker processes")):
        ran = CliRunner().invoke(app, ["sweep", *args])
        assert ran.exit_code == 2 and said in ran.output and "Traceback" not in ran.output, ran.output
        assert len(ran.output.strip().splitlines()) == 1


@needs_torch
def test_the_kernel_is_timed_before_the_loaders_workers_start(monkeypatch) -> None:
    """Timed while workers refill their buffers, the kernel would read slow and be sized short."""
    import torch

    from xferbench.measuring.backends.pipeline import PipelineTransfer

    order: list[str] = []
    timed, started = PipelineTransfer.time_kernel, torch.utils.data.DataLoader.__iter__
    monkeypatch.setattr(PipelineTransfer, "time_kernel", lambda self, *a: order.append("kernel") or timed(self, *a))
    monkeypatch.setattr(torch.utils.data.DataLoader, "__iter__", lambda self: order.append("loader") or started(self))
    transfer = BACKENDS["torch"].prepare(SeriesKey("torch", "loader", "copy", "cpu", SMALL).at(2), {"overlap": True})
    try:
        assert order == ["kernel", "loader"] and transfer.repeat_s > 0
    finally:
        transfer.close()
    order.clear()
    BACKENDS["torch"].prepare(SeriesKey("torch", "loader", "copy", "cpu", SMALL).at(2), {}).close()
    assert order == ["loader"]  # no --overlap: no kernel to time


def test_a_points_page_faults_are_its_samples_not_its_checks_or_compute(monkeypatch) -> None:
    from xferbench.measuring import measure

    faults = [0]
    monkeypatch.setattr(measure, "minor_faults", lambda: faults[0])

    class Faulting(FakePipeline):
        def verify(self) -> None:  # a check, and the compute's phase after it, touch fresh pages; the samples do not
            faults[0] += 1000
            super().verify()

    key = SeriesKey("torch", "loader", "copy", "cpu", SMALL)
    point = measure_point(Serving(Faulting), key.at(2), {"overlap": True}, FAST)  # type: ignore[arg-type]
    assert point.status == "ok" and point.page_faults_per_call == 0 and faults[0] == 3000  # three checks, none counted


class Launching(FakePipeline):
    """A kernel with a fixed cost per run (a launch, a sync) beside its repeats, and one slow run (a clock
    ramping up) the first time it is timed."""

    def __init__(self, *args, overhead_s: float = 1e-3, hiccup_s: float = 0.0, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.overhead_s, self.hiccup_s, self.runs = overhead_s, hiccup_s, 0

    def _compute(self, batch) -> None:  # type: ignore[no-untyped-def]
        self.runs += 1
        self.now += self.overhead_s + (self.hiccup_s if self.runs == 4 else 0.0)  # the third timed run of the first size
        super()._compute(batch)


def test_the_kernel_is_timed_over_runs_long_enough_to_drown_its_fixed_cost() -> None:
    pipeline = Launching(2, kernel_s=1e-5, overhead_s=1e-3)
    pipeline.calibrate_compute(1e-3, pipeline.clock)
    assert pipeline.repeat_s < 2e-5 and pipeline.repeats >= 50  # one run would have read 1 ms a repeat


def test_one_slow_run_does_not_size_the_kernel() -> None:
    pipeline = Launching(2, kernel_s=1e-4, overhead_s=0.0, hiccup_s=0.05)
    pipeline.calibrate_compute(1e-3, pipeline.clock)
    assert pipeline.repeats == 10  # the quickest of three runs at each size


def test_the_steps_start_only_once_what_the_idle_spell_made_ready_is_taken() -> None:
    pipeline = FakePipeline(2)
    pipeline.depth = 12  # more than the warm-up's calls
    before = pipeline.delivered
    record = pipeline.overlap(1e-3, FAST)
    untimed = pipeline.delivered - before - len(record["step_times_s"]) - (1 + pipeline.depth)  # less the last check and its drain
    assert untimed == max(FAST.warmup_calls, 12)


def test_repeats_round_to_the_nearest() -> None:
    assert repeats_for(2.6e-3, 1e-3) == 3
