"""Directions: d2h and bidir beside the default h2d. The simulated link gives exact figures; the raw
CUDA and CuPy paths run against the CuPy stand-in (fake_cupy), torch's d2h on the CPU; each direction's
byte check must be able to fail."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

import fake_cupy
from conftest import FAST, unwrapped
from xferbench.measuring.backends.cuda import CudaBackend
from xferbench.measuring.backends.cupy import CupyBackend
from xferbench.measuring.backends.jax import JaxBackend
from xferbench.measuring.backends.pytorch import TorchBackend, TorchBack
from xferbench.measuring.backends.sim import SimLink
from xferbench.measuring.backends.tensorflow import TFBackend
from xferbench.cli import app
from xferbench.core.errors import VerificationError, XferbenchError
from xferbench.measuring.measure import measure_point
from xferbench.core.results import Result, load
from xferbench.core.spec import BIDIR, D2H, H2D, STREAMED, SeriesKey
from xferbench.measuring.sweep import SweepConfig, make_plan

SHAPE = (64, 64, 3)
BATCH_BYTES = 4 * 64 * 64 * 3


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    fake_cupy.HOST_ALLOCATIONS.clear()
    fake_cupy.REGISTERED.clear()
    return fake_cupy


def sim_point(direction: str, batch: int = 64):
    from xferbench.measuring.backends.sim import SimBackend

    key = SeriesKey("sim", "link", "copy", "sim", (256, 256, 3), direction=direction)
    return measure_point(SimBackend(), key.at(batch), {"latency_us": 10.0, "bandwidth_gbps": 12.0, "jitter": 0.0, "seed": 0}, FAST)


def test_bidir_reports_each_direction_and_their_total_on_a_full_duplex_link() -> None:
    one_way, both = sim_point(H2D), sim_point(BIDIR)
    assert both.bytes == 2 * one_way.bytes  # a batch each way per call
    assert both.mbps == pytest.approx(2 * one_way.mbps)
    assert set(both.direction_mbps) == {H2D, D2H}
    for way in (H2D, D2H):
        assert both.direction_mbps[way] == pytest.approx(one_way.mbps)
        assert len(both.direction_times_s[way]) == both.n
    assert sim_point(D2H).mbps == pytest.approx(one_way.mbps) and one_way.direction_mbps is None


def test_the_direction_is_part_of_the_label_and_of_the_key_and_old_files_read_as_h2d(tmp_path) -> None:
    key = SeriesKey("cuda", "raw_pinned", "copy", "cuda:0", SHAPE, direction=D2H)
    assert key.label() == "cuda/raw_pinned/copy/d2h@cuda:0"
    assert SeriesKey("sim", "link", "copy", "sim", SHAPE, method=STREAMED, direction=BIDIR).label() == "sim/link/copy/bidir/streamed@sim"
    assert key != SeriesKey("cuda", "raw_pinned", "copy", "cuda:0", SHAPE)
    old = {"environment": {}, "config": {}, "created": "2024", "series": [
        {"framework": "sim", "mode": "link", "op": "copy", "device": "sim", "shape": [1], "points": []}]}
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"schema": "xferbench/1", **old}))
    series = load(path).series[0]
    assert series.direction == H2D and series.key.direction == H2D and "/h2d" not in series.label()


def run_cli(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_a_sweep_of_every_direction_shows_each_and_compare_matches_by_direction(tmp_path) -> None:
    out = tmp_path / "d.json"
    result = run_cli("sweep", "-f", "sim", "-d", "h2d", "-d", "d2h", "-d", "bidir", "--batch-sizes", "1,64", "--out", str(out),
                     "--min-time", "0.01", "--warmup-time", "0")
    assert result.exit_code == 0, result.output
    assert "sim/link/copy/bidir@sim" in result.output and "h2d MB/s" in result.output and "d2h MB/s" in result.output
    assert unwrapped("MB/s is both directions together") in unwrapped(result.output)  # a busy machine's note can fold it
    saved = load(out)
    assert [s.direction for s in saved.series] == [H2D, D2H, BIDIR]
    frame = saved.to_frame()
    assert set(frame["direction"]) == {H2D, D2H, BIDIR} and frame["h2d_mbps"].notna().sum() == 2
    # Only the bidir series is kept by the reader's direction filter.
    report = run_cli("report", str(out), "--direction", "bidir")
    assert report.exit_code == 0, report.output
    assert "sim/link/copy/bidir@sim" in report.output and "sim/link/copy/d2h@sim" not in report.output
    assert "| h2d MB/s | d2h MB/s |" in report.output
    # A d2h series is compared with the d2h series, never with the h2d one.
    only_h2d = tmp_path / "h.json"
    data = json.loads(out.read_text())
    data["series"] = [s for s in data["series"] if s.get("direction") == H2D]
    only_h2d.write_text(json.dumps(data))
    compared = run_cli("compare", str(only_h2d), str(out))
    assert compared.exit_code == 0, compared.output
    assert "2 no change" in compared.output  # the two h2d points, matched with each other
    assert f"only in {out}: sim/link/copy/d2h@sim" in compared.output.replace("\n", " ")


def test_bad_directions_and_paths_without_a_reverse_copy(monkeypatch) -> None:
    with pytest.raises(XferbenchError, match="unknown --direction 'sideways'; choose from: h2d, d2h, bidir"):
        make_plan(SweepConfig(frameworks=("sim",), directions=("sideways",)))
    key = SeriesKey("torch", "pageable", "copy", "cpu", SHAPE, direction=BIDIR)
    assert "has no bidir path (it copies h2d or d2h" in TorchBackend().direction_reason(key)
    assert "jax d2h needs a GPU" in JaxBackend().direction_reason(SeriesKey("jax", "device_put", "copy", "cpu", SHAPE, direction=D2H))
    assert "has no d2h path" in JaxBackend().direction_reason(SeriesKey("jax", "pinned_host", "copy", "cuda:0", SHAPE, direction=D2H))
    assert JaxBackend().direction_reason(SeriesKey("jax", "device_put", "copy", "cuda:0", SHAPE, direction=D2H)) is None
    assert "copies nothing" in TFBackend().direction_reason(SeriesKey("tf", "eager", "copy", "cpu", SHAPE, direction=D2H))
    assert CupyBackend().direction_reason(SeriesKey("cupy", "asarray", "copy", "cuda:0", SHAPE, direction=BIDIR))
    with pytest.raises(XferbenchError, match="nothing can run here: sim/link/copy/bidir/streamed@sim: bidir is timed per call only"):
        make_plan(SweepConfig(frameworks=("sim",), directions=(BIDIR,), methods=(STREAMED,), sim=SimLink()))


def raw(mode: str, direction: str, method: str = "per-call"):
    key = SeriesKey("cuda", mode, "copy", "cuda:0", SHAPE, method=method, direction=direction)
    return CudaBackend().prepare(key.at(4), {})


@pytest.mark.parametrize("mode", ["raw_pinned", "raw_pageable", "raw_registered", "raw_pinned_wc"])
def test_raw_copies_come_back_and_go_both_ways_byte_for_byte(fake, mode) -> None:
    back = raw(mode, D2H)
    assert isinstance(back(), float)
    back.verify()
    assert np.array_equal(back.host, back.expected)  # the host buffer received what the device held
    back.close()
    both = raw(mode, BIDIR)
    seconds = both()
    assert set(seconds) == {H2D, D2H} and both.transfers == 1  # one call: a batch each way, its bytes count both
    both.verify()
    both.close()
    assert not fake.HOST_ALLOCATIONS and not fake.REGISTERED  # every lane freed its buffers
    point = measure_point(CudaBackend(), SeriesKey("cuda", mode, "copy", "cuda:0", SHAPE, direction=BIDIR).at(4), {}, FAST)
    assert point.status == "ok", point.error
    assert point.bytes == 2 * BATCH_BYTES and set(point.direction_mbps) == {H2D, D2H}


def test_a_d2h_copy_that_does_not_happen_fails_its_check(fake, monkeypatch) -> None:
    copy = fake.runtime.memcpyAsync

    def only_h2d(dst, src, nbytes, kind, stream):
        if kind == fake.runtime.memcpyHostToDevice:
            copy(dst, src, nbytes, kind, stream)

    monkeypatch.setattr(fake.runtime, "memcpyAsync", only_h2d)
    for direction in (D2H, BIDIR):
        transfer = raw("raw_pinned", direction)
        with pytest.raises(VerificationError, match=r"\(d2h\): .* bytes differ"):
            transfer.verify()
        transfer.close()


def test_raw_d2h_can_be_streamed(fake) -> None:
    point = measure_point(CudaBackend(), SeriesKey("cuda", "raw_pinned", "copy", "cuda:0", SHAPE, method=STREAMED, direction=D2H).at(4), {}, FAST)
    assert point.status == "ok", point.error
    assert point.copies and point.bytes == BATCH_BYTES


def test_cupy_get_comes_back_and_its_check_can_fail(fake, monkeypatch) -> None:
    key = SeriesKey("cupy", "asarray", "copy", "cuda:0", SHAPE, direction=D2H)
    point = measure_point(CupyBackend(), key.at(4), {}, FAST)
    assert point.status == "ok", point.error
    assert CupyBackend().describe(key, {}).transfer == "device-to-host"
    monkeypatch.setattr(fake.ndarray, "get", lambda self, stream=None, out=None: np.zeros_like(self.array))
    transfer = CupyBackend().prepare(key.at(4), {})
    with pytest.raises(VerificationError, match="bytes differ"):
        transfer.verify()


def test_torch_d2h_on_the_cpu_copies_and_a_result_that_is_the_device_tensor_fails(monkeypatch) -> None:
    pytest.importorskip("torch")
    key = SeriesKey("torch", "pageable", "copy", "cpu", SHAPE, direction=D2H)
    point = measure_point(TorchBackend(), key.at(4), {}, FAST)
    assert point.status == "ok", point.error
    assert "copy=True" in TorchBackend().describe(key, {}).note
    monkeypatch.setattr(TorchBack, "_down", lambda self: self.on_device)  # .to('cpu') of a CPU tensor, as PyTorch does it
    failed = measure_point(TorchBackend(), key.at(4), {}, FAST)
    assert failed.status == "error" and "nothing was copied" in failed.error
    assert TorchBackend().skip_reason(SeriesKey("torch", "pageable", "seed", "cpu", SHAPE, direction=D2H))
    assert TorchBackend().skip_reason(SeriesKey("torch", "pinned_into", "copy", "cpu", SHAPE, direction=BIDIR))


def test_a_bidir_result_round_trips() -> None:
    point = sim_point(BIDIR, batch=2)
    result = Result(environment={}, config={}, created="now")
    from xferbench.core.results import Series

    series = Series.of(SeriesKey("sim", "link", "copy", "sim", (256, 256, 3), direction=BIDIR))
    series.points.append(point)
    again = Result.from_dict(json.loads(Result.to_json(Result(**{**result.__dict__, "series": [series]}))))
    assert again.series[0].points[0].direction_mbps == point.direction_mbps and again.series[0].direction == BIDIR


def test_bidir_lanes_that_cross_fail_the_check(fake, monkeypatch) -> None:
    """The d2h lane is checked against other bytes than the h2d lane sends: a copy that read the h2d
    lane's device buffer instead of its own would bring back the wrong pattern."""
    both = raw("raw_pinned", BIDIR)
    up, down = both.lanes

    def crossed() -> None:  # the d2h copy reads the h2d lane's destination, once the h2d copy has landed
        up.stream.synchronize()
        fake.runtime.memcpyAsync(down.host.ctypes.data, up.gpu.data.ptr, down.nbytes, 2, down.stream.ptr)

    monkeypatch.setattr(down, "copy", crossed)
    with pytest.raises(VerificationError, match=r"\(d2h\)"):
        both.verify()
    both.close()


def test_torch_pin_is_no_link_figure() -> None:
    from xferbench.core.results import Series
    from xferbench.core.telemetry import fraction_of_raw, link_ceiling

    pin = Series("torch", "pin", "copy", "cuda:0", [1], transfer="host-to-host")
    assert link_ceiling(pin, {})[0] is None and fraction_of_raw(pin, []) is None
    assert "no device result" in TorchBackend().skip_reason(SeriesKey("torch", "pin", "seed", "cuda:0", SHAPE))


def test_jax_d2h_fetches_a_fresh_array_each_call_and_its_check_can_fail(monkeypatch) -> None:
    """Run on the CPU's JAX device (the sweep skips it there: nothing crosses a link), the path's own
    code: each call fetches a new array, every byte checked; a fetch that brings stale bytes fails."""
    pytest.importorskip("jax")
    from xferbench.measuring.backends.jax import JaxBack

    key = SeriesKey("jax", "device_put", "copy", "cpu", SHAPE, direction=D2H)
    point = measure_point(JaxBackend(), key.at(4), {}, FAST)
    assert point.status == "ok", point.error
    back = JaxBackend().prepare(key.at(4), {})
    back()
    first = back.moved
    back()
    assert back.moved is not first  # a new host array per call, not the cached one
    monkeypatch.setattr(JaxBack, "__call__", lambda self: setattr(self, "moved", np.zeros_like(self.expected)))
    with pytest.raises(VerificationError, match=r"\(d2h\): .* bytes differ"):
        back.verify()
