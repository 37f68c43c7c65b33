"""The result file's rules one by one (xferbench.core.results): points and series as a run builds them, the
round trip through JSON and the tidy frame, durable whole writes, file and host names in --out, which files may
be written or replaced, saves that fail, stop signals held through a save, the run's own file and its rescue,
the size a reader accepts, each one-line refusal of load, the damage a reader finds in a point, and the
selection of series for a plot, report or comparison."""

from __future__ import annotations

import errno
import hashlib
import json
import math
import os
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from nodes import node, write
from xferbench import __version__
from xferbench.core import results
from xferbench.core.errors import XferbenchError, printable
from xferbench.core.results import (
    DAMAGED,
    DEFAULT_FOLDER,
    SCHEMA,
    OutputFile,
    Point,
    Result,
    SaveFailed,
    Selected,
    Selection,
    Series,
    _damage,
    _finite,
    _identity,
    by_bytes,
    check_writable,
    csv_path,
    damaged_points,
    file_labels,
    host_name,
    load,
    max_file_bytes,
    output_path,
    refuse_existing,
    refuse_unless_regular,
    safe_name,
    select,
    stops_deferred,
    why_unwritable,
    write_whole,
)
from xferbench.core.spec import BIDIR, D2H, STREAMED, SeriesKey
from xferbench.core.stats import Overlap, Summary
from xferbench.core.timing import Samples

SHAPE = (4, 8)  # 32 bytes an item
KEY = SeriesKey("sim", "link", "copy", "sim", SHAPE)
TIMES = [5e-6, 1e-6, 3e-6, 2e-6, 4e-6]  # median 3 µs, p10 1.4 µs, p90 4.6 µs


def measured(batch: int = 4, times: list[float] | None = None, key: SeriesKey = KEY) -> Point:
    """A point as measure_series records it, from five samples."""
    return Point.measured(key.at(batch), Samples(list(times or TIMES)), warmup_calls=2)


def curve(rates: dict[int, float], key: SeriesKey = KEY) -> Series:
    """A series measured at each batch's MB/s, three samples a point 1% apart, its summary as a run leaves it."""
    series = Series.of(key)
    for batch, rate in rates.items():
        spec = key.at(batch)
        seconds = spec.moved_bytes / (rate * 1e6)
        series.points.append(Point.measured(spec, Samples([seconds * 0.99, seconds, seconds * 1.01]), warmup_calls=1))
    series.refresh_summary()
    return series


def result_of(*series: Series, host: str = "h1") -> Result:
    return Result({"host": host}, {}, "2026-11-23T00:00:00+00:00", list(series), "complete", xferbench_version="0.1.0")


def refusal(path: Path) -> str:
    with pytest.raises(XferbenchError) as error:
        load(path)
    return str(error.value)


# Points


def test_finite_keeps_finite_numbers_and_drops_none_nan_and_infinities() -> None:
    """_finite: a finite float (zero included) is kept as it is; None, NaN and ±inf become None."""
    assert _finite(2.5) == 2.5 and _finite(0.0) == 0.0 and _finite(-1.0) == -1.0
    assert [_finite(v) for v in (None, math.nan, math.inf, -math.inf)] == [None, None, None, None]


def test_a_measured_point_holds_its_samples_and_every_figure_derived_from_them() -> None:
    """Point.measured: the batch, bytes moved, warm-up calls, samples and each statistic of point_stats."""
    point = measured(4)
    assert (point.batch_size, point.bytes, point.warmup_calls, point.times_s, point.status, point.error) == (4, 128, 2, TIMES, "ok", None)
    assert (point.n, point.median_s, point.p10_s, point.p90_s) == (5, 3e-6, pytest.approx(1.4e-6), pytest.approx(4.6e-6))
    assert point.mbps == pytest.approx(128 / 3e-6 / 1e6) and point.mbps_p10 == pytest.approx(128 / 4.6e-6 / 1e6)
    assert point.mbps_p90 == pytest.approx(128 / 1.4e-6 / 1e6)
    assert point.batches_per_s == pytest.approx(1 / 3e-6) and point.images_per_s == pytest.approx(4 / 3e-6)
    assert (point.device_times_s, point.device_median_s, point.device_mbps) == ([], None, None)
    assert (point.direction_times_s, point.direction_mbps) == (None, None)


def test_a_measured_point_keeps_no_infinite_rate_from_a_zero_median() -> None:
    """Rates from a zero median are infinite: stored as None (JSON has no inf), the count and times kept."""
    point = measured(2, [0.0, 0.0, 0.0])
    figures = (point.n, point.median_s, point.mbps, point.mbps_p10, point.batches_per_s, point.images_per_s)
    assert figures == (3, 0.0, None, None, None, None)


def test_a_measured_point_adds_the_device_times_and_each_directions_rate_where_sampled() -> None:
    """Device times give device_median_s and device_mbps; a bidir point's per-direction MB/s count one batch each way."""
    bidir = SeriesKey("sim", "link", "copy", "sim", SHAPE, direction=BIDIR)
    samples = Samples([2e-6] * 3, device_times_s=[1e-6, 2e-6, 0.5e-6], by_direction={"h2d": [1e-6] * 3, "d2h": [0.0] * 3})
    point = Point.measured(bidir.at(2), samples, warmup_calls=1)
    assert point.bytes == 128 and point.mbps == pytest.approx(128 / 2e-6 / 1e6)
    assert (point.device_times_s, point.device_median_s, point.device_mbps) == ([1e-6, 2e-6, 0.5e-6], 1e-6, pytest.approx(128.0))
    assert point.direction_times_s == {"h2d": [1e-6] * 3, "d2h": [0.0] * 3}
    assert point.direction_mbps == {"h2d": pytest.approx(64.0), "d2h": None}  # 64 bytes each way; a zero median has no rate
    stalled = Point.measured(KEY.at(1), Samples([1e-6], device_times_s=[0.0]), warmup_calls=0)
    assert (stalled.device_median_s, stalled.device_mbps) == (0.0, None)


def test_a_failed_point_records_the_bytes_it_would_have_moved_and_why() -> None:
    """Point.failed: batch, moved bytes (a bidir batch counts twice), status and error, and no samples."""
    bidir = SeriesKey("sim", "link", "copy", "sim", SHAPE, direction=BIDIR)
    point = Point.failed(bidir.at(3), "error", "CUDA OOM")
    assert (point.batch_size, point.bytes, point.status, point.error, point.times_s, point.n, point.median_s) == (
        3, 192, "error", "CUDA OOM", [], 0, None)  # fmt: skip


def test_overlap_figures_need_copy_compute_and_step_samples() -> None:
    """overlap_figures: the three medians in order, and None where any of the three sets is missing or empty."""
    full = {"kernel": "matmul", "repeats": 3, "compute_times_s": [4.0, 2.0, 6.0], "step_times_s": [7.0, 5.0, 9.0, 8.0]}
    assert Point(1, 32, times_s=[1.0, 3.0, 2.0], compute=full).overlap_figures() == Overlap(2.0, 4.0, 7.5)
    without = [{k: v for k, v in full.items() if k != name} for name in ("compute_times_s", "step_times_s")]
    for compute in (None, {}, {**full, "compute_times_s": []}, {**full, "step_times_s": []}, *without):
        assert Point(1, 32, times_s=[1.0], compute=compute).overlap_figures() is None, compute
    assert Point(1, 32, times_s=[], compute=full).overlap_figures() is None


def test_a_point_is_busy_from_a_quarter_of_its_cpus_taken_by_others() -> None:
    """busy: others_cpus ≥ BUSY_SHARE × cpus (one CPU when unknown or 0); never without a figure."""
    assert results.BUSY_SHARE == 0.25
    assert not Point(1, 1).busy and not Point(1, 1, cpus=4).busy
    assert Point(1, 1, others_cpus=0.25).busy and not Point(1, 1, others_cpus=0.2499).busy
    assert Point(1, 1, others_cpus=0.25, cpus=0).busy and not Point(1, 1, others_cpus=0.2499, cpus=0).busy
    assert Point(1, 1, others_cpus=1.0, cpus=4).busy and not Point(1, 1, others_cpus=0.99, cpus=4).busy
    assert Point(1, 1, others_cpus=0.0, cpus=0).busy is False


# Series


def test_a_series_of_a_key_carries_every_field_of_the_key_and_gives_it_back() -> None:
    """Series.of copies all nine fields of the key (shape as a list); .key and .label() give them back."""
    key = SeriesKey("torch", "pinned", "copy", "cuda:1", (2, 3), "aligned", STREAMED, D2H, 2)
    series = Series.of(key)
    assert (series.framework, series.mode, series.op, series.device, series.shape) == ("torch", "pinned", "copy", "cuda:1", [2, 3])
    assert (series.host_buffer, series.method, series.direction, series.concurrent) == ("aligned", STREAMED, D2H, 2)
    assert series.key == key and series.label() == "torch/pinned/copy/d2h/streamed/2-at-once+aligned@cuda:1"
    assert (series.status, series.points, series.summary, series.params, series.link, series.numa) == ("ok", [], Summary(), {}, {}, {})


def test_a_series_without_a_host_buffer_starts_from_its_paths_usual_one() -> None:
    """An empty host_buffer (files older than the field) becomes the path's usual source; a named one stays."""
    assert Series("host", "numpy", "copy", "cpu", [1]).host_buffer == "aligned"
    assert Series("torch", "pinned_into", "copy", "cuda:0", [1]).host_buffer == "pinned"
    assert Series("torch", "pageable", "copy", "cuda:0", [1]).host_buffer == "numpy"
    assert Series("torch", "pinned", "copy", "cuda:0", [1], host_buffer="numpy").host_buffer == "numpy"


def test_ok_points_are_the_measured_ones_with_a_nonzero_median() -> None:
    """ok_points: status ok and a median other than None or 0, in the series' order."""
    good, later = Point(2, 64, median_s=1e-6), Point(8, 256, median_s=2e-6)
    series = Series("sim", "link", "copy", "sim", [4, 8], points=[
        Point(1, 32, status="error", median_s=1e-6), good, Point(4, 128, median_s=None), Point(16, 512, median_s=0.0), later])  # fmt: skip
    assert series.ok_points() == [good, later]


def test_a_peers_series_keeps_its_peak_and_no_fit_saturation_or_cliff() -> None:
    """refresh_summary: a series whose params name a tool keeps the peak and drops every derived figure."""
    own = curve({1: 100.0, 2: 180.0, 4: 300.0, 8: 320.0, 16: 200.0})
    summary = own.summary
    assert (summary.peak_mbps, summary.peak_batch_size, summary.saturation_batch_size) == (pytest.approx(320.0), 8, 8)
    assert summary.cliff and (summary.cliff_batch_size, summary.cliff_drop) == (16, pytest.approx(0.375))
    assert None not in (summary.latency_s, summary.bandwidth_mbps, summary.half_bandwidth_bytes, summary.fit_rel_rms)
    own.params = {"tool": "nvbandwidth"}
    own.refresh_summary()
    assert own.summary == Summary(peak_mbps=summary.peak_mbps, peak_batch_size=8)


def test_refresh_summary_leaves_busy_points_out_of_the_figures_and_names_them() -> None:
    """refresh_summary passes each point's busy flag: the busy peak is named and sets no figure."""
    series = curve({1: 100.0, 2: 180.0, 4: 300.0})
    series.points[2].others_cpus, series.points[2].cpus = 1.0, 2
    series.refresh_summary()
    assert (series.summary.peak_batch_size, series.summary.busy_batch_sizes, series.summary.busy_only) == (2, [4], False)


def test_a_series_is_a_peers_only_where_its_params_name_a_tool() -> None:
    """is_peer: params with a non-empty 'tool'; none, empty or None params are xferbench's own."""
    base = Series("sim", "link", "copy", "sim", [1])
    assert not base.is_peer
    for params, peer in (({"tool": "nvbandwidth"}, True), ({"tool": ""}, False), ({"other": 1}, False), (None, False)):
        base.params = params  # type: ignore[assignment]
        assert base.is_peer is peer, params


# The result and its file


def test_from_dict_recomputes_the_summary_of_a_series_with_measured_points_and_keeps_the_rest() -> None:
    """A reader trusts no cached summary where points can give it, but keeps a stored one with nothing to recompute."""
    data = result_of(curve({1: 100.0, 2: 200.0}), Series("sim", "link", "copy", "sim", [4, 8], status="failed")).to_dict()
    data["series"][0]["summary"] = {"peak_mbps": 1.0, "peak_batch_size": 64}
    data["series"][1]["summary"] = {"peak_mbps": 5.0}
    loaded = Result.from_dict(data)
    assert (loaded.series[0].summary.peak_mbps, loaded.series[0].summary.peak_batch_size) == (pytest.approx(200.0), 2)
    assert loaded.series[1].summary == Summary(peak_mbps=5.0)


def test_from_dict_fills_what_an_older_or_smaller_file_leaves_out() -> None:
    """No series, no points, no summary: the defaults, and the version and check fields as written or empty."""
    bare = Result.from_dict({"environment": {}, "config": {}, "created": "c", "unknown": 1})
    assert bare == Result({}, {}, "c") and (bare.series, bare.status, bare.schema, bare.xferbench_version, bare.check) == (
        [], "running", SCHEMA, "", None)  # fmt: skip
    bare_series = {"framework": "tf", "mode": "eager", "op": "copy", "device": "cpu", "shape": [2]}
    (series,) = Result.from_dict({"environment": {}, "config": {}, "created": "c", "series": [bare_series]}).series
    assert (series.points, series.summary, series.host_buffer) == ([], Summary(), "numpy")
    assert (series.method, series.direction, series.concurrent) == ("per-call", "h2d", 1)


def test_to_json_is_indented_by_one_and_refuses_nan() -> None:
    """to_json: one space an indent level, fields in the dataclass's order, and no NaN that JSON cannot hold."""
    text = Result({}, {}, "c").to_json()
    assert text.startswith('{\n "environment": {},\n "config": {},\n "created": "c",\n "series": [],\n "status": "running",')
    assert json.loads(text) == Result({}, {}, "c").to_dict()
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        Result({"x": math.nan}, {}, "c").to_json()


def test_save_writes_no_csv_unless_asked(tmp_path: Path) -> None:
    """Result.save writes the JSON alone by default."""
    result_of(curve({1: 100.0})).save(tmp_path / "r.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_the_tidy_frame_has_a_row_per_point_in_order_without_an_environment_to_draw_on() -> None:
    """to_frame over two series: their points in order, each row its series' keys; an empty environment gives None."""
    result = Result({}, {}, "c", [curve({1: 100.0, 2: 200.0}), curve({4: 300.0}, SeriesKey("tf", "eager", "copy", "cpu", (3,)))])
    frame = result.to_frame()
    assert list(frame["batch_size"]) == [1, 2, 4] and list(frame["framework"]) == ["sim", "sim", "tf"]
    assert list(frame["shape"]) == ["4x8", "4x8", "3"] and list(frame["bytes"]) == [32, 64, 12]
    assert frame["host"].isna().all() and frame["os"].isna().all() and "h2d_mbps" not in frame.columns
    assert not [c for c in frame.columns if c.endswith("_version")]
    assert Result({}, {}, "c").to_frame().empty


def test_write_whole_writes_through_a_temp_file_of_its_own_and_returns_the_new_files_identity(tmp_path: Path, monkeypatch) -> None:
    """The temp file is .NAME.PID.THREAD.tmp beside the target: text as UTF-8, bytes as they are."""
    seen: list[tuple[str, str, str | None]] = []
    real = results._write_durably

    def record(handle: Any, data: Any) -> Any:
        seen.append((handle.name, handle.mode, getattr(handle, "encoding", None)))
        return real(handle, data)

    monkeypatch.setattr(results, "_write_durably", record)
    path = tmp_path / "r.json"
    identity = write_whole(path, "µ")
    assert path.read_bytes() == b"\xc2\xb5" and identity == _identity(os.stat(path))
    write_whole(tmp_path / "p.png", b"\x89PNG")
    temp = f".r.json.{os.getpid()}.{threading.get_ident()}.tmp"
    assert seen == [(str(tmp_path / temp), "w", "utf-8"), (str(tmp_path / f".p.png.{os.getpid()}.{threading.get_ident()}.tmp"), "wb", None)]
    assert (tmp_path / "p.png").read_bytes() == b"\x89PNG" and sorted(p.name for p in tmp_path.iterdir()) == ["p.png", "r.json"]


def test_a_write_that_fails_leaves_the_file_as_it_was_and_no_temp_file(tmp_path: Path, monkeypatch) -> None:
    """write_whole: an OSError mid-write is raised, the old file stays whole and the temp file goes."""
    path = tmp_path / "r.json"
    path.write_text("old")

    def full(handle: Any, data: Any) -> Any:
        handle.write(data[:1])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(results, "_write_durably", full)
    with pytest.raises(OSError, match="No space left on device"):
        write_whole(path, "new")
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_a_write_whose_temp_file_was_never_made_raises_its_own_error(tmp_path: Path) -> None:
    """A folder that is gone: opening the temp file fails, and removing the temp file (never made) fails too; the
    open's error is the one raised, not the clean-up's."""
    with pytest.raises(FileNotFoundError) as error:
        write_whole(tmp_path / "gone" / "r.json", "new")
    assert error.value.filename.startswith(str(tmp_path / "gone" / ".r.json.")) and error.value.__context__ is None


def test_the_csv_goes_beside_the_json_with_its_suffix_replaced() -> None:
    """csv_path: the last suffix becomes .csv, or .csv is added."""
    assert [csv_path(Path(p)) for p in ("d/r.json", "d/r", "d/r.v2.json")] == [Path("d/r.csv"), Path("d/r.csv"), Path("d/r.v2.csv")]


# Names


def test_a_safe_name_keeps_letters_digits_underscore_dot_and_dash_only() -> None:
    """safe_name: every other character, one by one, becomes '-'."""
    assert safe_name("aZ09_.-") == "aZ09_.-"
    assert safe_name("a b/c:d\\é\n") == "a-b-c-d---"


def test_the_host_name_comes_from_the_variable_then_the_machine_then_host(monkeypatch) -> None:
    """host_name: $XFERBENCH_HOST where set and non-empty, else platform.node(), else 'host'; made safe."""
    import platform

    monkeypatch.setattr(platform, "node", lambda: "gpu node 7")
    monkeypatch.setenv("XFERBENCH_HOST", "rack 1/a")
    assert host_name() == "rack-1-a"
    monkeypatch.setenv("XFERBENCH_HOST", "")
    assert host_name() == "gpu-node-7"
    monkeypatch.delenv("XFERBENCH_HOST")
    monkeypatch.setattr(platform, "node", lambda: "")
    assert host_name() == "host"


def test_a_host_name_of_64_characters_is_kept_and_a_longer_one_keeps_55_and_a_digest(monkeypatch) -> None:
    """Past HOST_NAME_MAX: the first 55 characters of the safe name, '-', and 8 hex digits of its SHA-1."""
    assert results.HOST_NAME_MAX == 64
    monkeypatch.setenv("XFERBENCH_HOST", "n" * 64)
    assert host_name() == "n" * 64
    long = "a b" + "c" * 62  # 65 characters, made safe before it is cut and hashed
    monkeypatch.setenv("XFERBENCH_HOST", long)
    safe = "a-b" + "c" * 62
    assert host_name() == f"{safe[:55]}-{hashlib.sha1(safe.encode()).hexdigest()[:8]}" and len(host_name()) == 64


def test_out_replaces_both_host_placeholders_every_time_they_appear(monkeypatch) -> None:
    """%h and {host} in --out each become host_name(), wherever and however often they appear."""
    monkeypatch.setenv("XFERBENCH_HOST", "n1")
    assert output_path("%h/{host}-%h.json", "x.json") == (Path("n1/n1-n1.json"), False)
    assert output_path(None, "x%h.json") == (DEFAULT_FOLDER / "x%h.json", True)  # the default name is never rewritten


def test_an_out_ending_with_either_separator_names_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """'runs/' is a folder on every OS; where the separator is a backslash (Windows), 'runs\\' is one too."""
    assert output_path(str(tmp_path / "new") + "/", "r.json") == (tmp_path / "new" / "r.json", True)
    monkeypatch.setattr(os, "sep", "\\")
    assert output_path("new/", "r.json") == (Path("new/r.json"), True)
    assert output_path("new\\", "r.json") == (Path("new\\") / "r.json", True)


def test_out_takes_names_of_255_bytes_and_refuses_256_in_any_part(tmp_path: Path) -> None:
    """NAME_MAX counts bytes, not characters: a 256-byte name, even in a folder or of 128 two-byte letters, is one line."""
    fits = "x" * 250 + ".json"
    assert output_path(fits, "r.json") == (Path(fits), False)
    for out, long in (("x" * 251 + ".json", "x" * 251 + ".json"), ("é" * 128, "é" * 128), ("y" * 256 + "/r.json", "y" * 256)):
        with pytest.raises(XferbenchError) as error:
            output_path(out, "r.json")
        assert str(error.value) == (f"--out: the name {long[:40]}… is 256 bytes, longer than the 255 a file system takes;"
                                    " choose a shorter --out")  # fmt: skip


# What may be written


def test_only_a_missing_or_regular_file_passes_and_the_option_is_named(tmp_path: Path) -> None:
    """refuse_unless_regular: whole messages for a folder and a dangling link, in the option's own words."""
    (tmp_path / "plain").write_text("x")
    refuse_unless_regular(tmp_path / "plain")
    refuse_unless_regular(tmp_path / "missing")
    (tmp_path / "folder").mkdir()
    with pytest.raises(XferbenchError) as error:
        refuse_unless_regular(tmp_path / "folder", "--markdown")
    assert str(error.value) == (f"--markdown {tmp_path / 'folder'} is a folder; xferbench writes only regular files:"
                                " choose another --markdown")  # fmt: skip
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(XferbenchError) as error:
        refuse_unless_regular(tmp_path / "dangling")
    assert str(error.value) == (f"--out {tmp_path / 'dangling'} is not a regular file (a link, device or pipe); xferbench writes"
                                " only regular files: choose another --out")  # fmt: skip


def test_why_unwritable_names_a_file_in_place_of_a_folder_else_gives_the_os_reason(tmp_path: Path) -> None:
    """why_unwritable: the nearest existing non-folder parent, else the error's strerror, else the error itself."""
    (tmp_path / "a").write_text("x")
    blocked = why_unwritable(tmp_path / "a" / "b" / "r.json", OSError(errno.ENOTDIR, "Not a directory"))
    assert blocked == f"{tmp_path / 'a'} is a file, not a folder"
    assert why_unwritable(tmp_path / "r.json", OSError(errno.EACCES, "Permission denied")) == "Permission denied"
    assert why_unwritable(tmp_path / "r.json", OSError("odd")) == "odd"


def test_an_existing_file_is_replaced_only_when_asked(tmp_path: Path) -> None:
    """refuse_existing: an existing file without --overwrite is one line; a folder, a new name or --overwrite pass."""
    path = tmp_path / "r.md"
    path.write_text("x")
    with pytest.raises(XferbenchError) as error:
        refuse_existing(path, "--markdown", False)
    assert str(error.value) == f"{path} already exists; choose another --markdown, or add --overwrite to replace it"
    refuse_existing(path, "--markdown", True)
    refuse_existing(tmp_path, "--markdown", False)
    refuse_existing(tmp_path / "new.md", "--markdown", False)


def test_check_writable_refuses_a_folder_an_existing_file_and_a_csv_named_like_the_json(tmp_path: Path) -> None:
    """check_writable: whole messages for each refusal; a numbered name skips those of a file the user named."""
    with pytest.raises(XferbenchError) as error:
        check_writable(tmp_path)
    assert str(error.value) == f"--out {tmp_path} is a directory; give a file name such as {tmp_path / 'run.json'}"
    taken = tmp_path / "r.json"
    taken.write_text("x")
    with pytest.raises(XferbenchError) as error:
        check_writable(taken)
    assert str(error.value) == f"{taken} already exists; choose another --out, or add --overwrite to replace it"
    assert check_writable(str(taken), overwrite=True) == taken and check_writable(taken, numbered=True) == taken
    for numbered in (False, True):
        with pytest.raises(XferbenchError) as error:
            check_writable(tmp_path / "r.csv", csv=True, numbered=numbered)
        assert str(error.value) == f"--out {tmp_path / 'r.csv'} would be overwritten by --csv; give the result file a .json name"
    assert check_writable(tmp_path / "r.csv") == tmp_path / "r.csv"


def test_check_writable_proves_the_folder_with_a_probe_it_removes(tmp_path: Path, monkeypatch) -> None:
    """The probe is a .xferbench-probe- temp file in the result's own folder, made after the folder, gone after."""
    made: list[tuple[str, str]] = []
    real = tempfile.NamedTemporaryFile

    def probe(**kwargs: Any) -> Any:
        made.append((kwargs["dir"], kwargs["prefix"]))
        return real(**kwargs)

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", probe)
    folder = tmp_path / "a" / "b"
    assert check_writable(folder / "r.json") == folder / "r.json"
    assert made == [(folder, ".xferbench-probe-")] and list(folder.iterdir()) == []


def test_check_writable_says_what_could_not_be_written_and_why(tmp_path: Path, monkeypatch) -> None:
    """The OS's refusal is one line naming what the file would hold (`what`), the path and the reason."""
    (tmp_path / "a").write_text("x")
    with pytest.raises(XferbenchError) as error:
        check_writable(tmp_path / "a" / "r.json")
    assert str(error.value) == (f"cannot write results to {tmp_path / 'a' / 'r.json'}: {tmp_path / 'a'} is a file, not a folder;"
                                " choose another --out")  # fmt: skip

    def denied(**kwargs: Any) -> Any:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", denied)
    with pytest.raises(XferbenchError) as error:
        check_writable(tmp_path / "p.png", what="the plot")
    assert str(error.value) == f"cannot write the plot to {tmp_path / 'p.png'}: Permission denied; choose another --out"


# Stop signals


def test_a_stop_signal_during_the_block_is_delivered_after_it_to_its_own_handler() -> None:
    """stops_deferred: the first stop held is raised at the end, once; the handlers are the same after."""
    calls: list[int] = []
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    mine = {s: (lambda number, frame: calls.append(number)) for s in saved}
    try:
        for signum, handler in mine.items():
            signal.signal(signum, handler)
        with stops_deferred():
            signal.raise_signal(signal.SIGTERM)
            signal.raise_signal(signal.SIGINT)
            assert calls == []
        assert calls == [signal.SIGTERM] and all(signal.getsignal(s) is mine[s] for s in mine)
        with pytest.raises(RuntimeError):
            with stops_deferred():
                signal.raise_signal(signal.SIGINT)
                raise RuntimeError("cut short")
        assert calls == [signal.SIGTERM, signal.SIGINT] and all(signal.getsignal(s) is mine[s] for s in mine)
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def test_an_ignored_stop_signal_stays_ignored_and_is_not_delivered() -> None:
    """A signal set to SIG_IGN keeps SIG_IGN through the block, and nothing is raised after it."""
    saved = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with stops_deferred():
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
            signal.raise_signal(signal.SIGTERM)
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, saved)


def test_outside_the_main_thread_nothing_is_held_back() -> None:
    """In another thread, stops_deferred changes no handler (only the main thread may, and receives signals)."""
    seen: list[Any] = []
    before = signal.getsignal(signal.SIGINT)

    def run() -> None:
        try:
            with stops_deferred():
                seen.append(signal.getsignal(signal.SIGINT))
        except BaseException as error:  # pragma: no cover - what a broken guard would raise
            seen.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [before]


# The run's own file


def test_replaces_only_an_existing_file_with_overwrite_before_the_first_save(tmp_path: Path) -> None:
    """OutputFile.replaces: --overwrite, a name the user gave, nothing written yet, and a file there."""
    path = tmp_path / "r.json"
    assert not OutputFile(path, overwrite=True).replaces  # nothing there
    path.write_text("earlier")
    assert OutputFile(path, overwrite=True).replaces
    assert not OutputFile(path, overwrite=True, numbered=True).replaces
    output = OutputFile(path, overwrite=True)
    output.save(result_of(curve({1: 100.0})))
    assert not output.replaces and (output.path, output.asked, output.moved_from) == (path, path, None)


def test_a_new_output_file_has_saved_nothing_and_checks_what_it_was_given(tmp_path: Path) -> None:
    """A fresh OutputFile: nothing rewritten; a numbered name that is taken goes to r-2.json at the first save (a named
    one would be refused); a --csv whose file is the result file itself is refused before anything is measured."""
    taken = tmp_path / "r.json"
    taken.write_text("another run's")
    numbered = OutputFile(taken, numbered=True)
    assert (numbered.rewritten, numbered.moved_from, numbered.saved_points, numbered.written) == (False, None, 0, None)
    numbered.save(result_of(curve({1: 100.0})))
    assert (numbered.path, taken.read_text(), numbered.rewritten) == (tmp_path / "r-2.json", "another run's", False)
    with pytest.raises(XferbenchError, match="would be overwritten by --csv"):
        OutputFile(tmp_path / "r.csv", csv=True)


def test_overwrite_keeps_the_earlier_file_until_a_point_is_measured(tmp_path: Path) -> None:
    """With --overwrite, a save with no measured point leaves the earlier file; the first with one replaces it."""
    path = tmp_path / "r.json"
    path.write_text("earlier")
    output = OutputFile(path, overwrite=True)
    series = Series.of(KEY)
    series.points.append(Point.failed(KEY.at(1), "error", "boom"))
    output.save(result_of(series))
    assert path.read_text() == "earlier" and output.written is None and output.saved_points == 0
    series.points.append(measured(2))
    output.save(result_of(series))
    assert [p.status for p in load(path).series[0].points] == ["error", "ok"] and output.written == _identity(os.stat(path))
    assert output.saved_points == 1 and sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_a_file_rewritten_in_place_to_another_size_or_time_is_not_the_runs_own(tmp_path: Path) -> None:
    """The file's identity includes its size and its mtime: the same inode rewritten is another run's file."""
    for change in ("size", "time"):
        folder = tmp_path / change
        output = OutputFile(folder / "r.json")
        output.save(Result({}, {}, "1"))
        before = os.stat(folder / "r.json")
        text = (folder / "r.json").read_text()
        with open(folder / "r.json", "r+") as handle:  # the same inode, written over
            handle.write(text.replace('"1"', '"22"') if change == "size" else text.replace('"1"', '"9"'))
        times = (before.st_atime_ns, before.st_mtime_ns if change == "size" else before.st_mtime_ns - 10**9)
        os.utime(folder / "r.json", ns=times)
        output.save(Result({}, {}, "2"))
        assert output.path == folder / "r-2.json" and output.moved_from == folder / "r.json", change
        assert load(folder / "r.json").created in ("22", "9") and load(folder / "r-2.json").created == "2"


def test_a_run_moved_twice_names_the_first_file_it_lost_and_its_csv_follows(tmp_path: Path) -> None:
    """moved_from keeps the first name taken from the run; the --csv table is written beside the file now in use."""
    output = OutputFile(tmp_path / "r.json", csv=True)
    output.save(result_of(curve({1: 100.0})))
    for taken in ("r.json", "r-2.json"):
        (tmp_path / taken).unlink()
        (tmp_path / taken).write_text("another run's")
        output.save(result_of(curve({1: 100.0, 2: 200.0})))
    assert output.path == tmp_path / "r-3.json" and output.moved_from == tmp_path / "r.json"
    assert len((tmp_path / "r-3.csv").read_text().splitlines()) == 3 and len((tmp_path / "r.csv").read_text().splitlines()) == 2


def test_a_file_removed_mid_run_is_claimed_again_under_its_own_name_and_noted(tmp_path: Path) -> None:
    """A removed file is no longer the one written last: the next save claims the free name afresh and notes the
    removal; nothing moved, so no other name is given. Replaced rather than removed, the run moves to r-2.json."""
    path = tmp_path / "r.json"
    output = OutputFile(path)
    output.save(Result({}, {}, "1"))
    path.unlink()
    output.save(Result({}, {}, "2"))
    assert (output.path, output.moved_from, output.rewritten, load(path).created) == (path, None, True, "2")
    path.write_text("another run's")
    output.save(Result({}, {}, "3"))
    assert (output.path, output.moved_from, output.rewritten) == (tmp_path / "r-2.json", path, True)


def test_a_save_that_finds_nothing_writable_says_nothing_was_written(tmp_path: Path) -> None:
    """A first save whose folder became a file: SaveFailed (an XferbenchError) with the OS's reason, in one line."""
    output = OutputFile(tmp_path / "d" / "r.json")
    (tmp_path / "d").rmdir()
    (tmp_path / "d").write_text("a file now")
    with pytest.raises(SaveFailed) as error:
        output.save(Result({}, {}, "1"))
    assert isinstance(error.value, XferbenchError)
    assert str(error.value) == f"cannot save to {tmp_path / 'd' / 'r.json'}: Not a directory; nothing was written; choose another --out"


def test_a_failed_save_names_the_last_complete_one_and_removes_only_its_own_temp_files(tmp_path: Path, monkeypatch) -> None:
    """After a save of one measured point (an error point beside it), a failure says so; another process's temp stays."""
    path = tmp_path / "r.json"
    output = OutputFile(path)
    series = Series.of(KEY)
    series.points += [measured(1), Point.failed(KEY.at(2), "error", "boom")]
    output.save(result_of(series))
    assert output.saved_points == 1
    mine = tmp_path / f".r.json.{os.getpid()}.7.tmp"
    other = tmp_path / f".r.json.{os.getpid() + 1}.7.tmp"
    other.write_text("another process's")

    def torn(where: Path, data: Any) -> Any:
        mine.write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(results, "write_whole", torn)
    with pytest.raises(SaveFailed) as error:
        output.save(result_of(series))
    assert str(error.value) == f"cannot save to {path}: No space left on device; it holds the last complete save (1 measured point(s))"
    assert not mine.exists() and other.exists() and output.saved_points == 1

    def odd(where: Path, data: Any) -> Any:
        raise OSError("odd")

    monkeypatch.setattr(results, "write_whole", odd)
    with pytest.raises(SaveFailed, match=r": odd; it holds the last complete save \(1 measured point\(s\)\)$"):
        output.save(result_of(series))


def test_a_rescue_tries_99_names_beside_the_file_then_99_in_the_temp_folder(tmp_path: Path, monkeypatch) -> None:
    """rescue: r-unsaved-1 to -99 beside the file, then in the temp folder; None when all are taken."""
    spare = tmp_path / "spare"
    spare.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spare))
    output = OutputFile(tmp_path / "runs" / "r.json")
    for number in range(1, 100):
        (tmp_path / "runs" / f"r-unsaved-{number}.json").write_text("taken")
    assert output.rescue(Result({}, {}, "1")) == spare / "r-unsaved-1.json"
    for number in range(2, 100):
        (spare / f"r-unsaved-{number}.json").write_text("taken")
    assert output.rescue(Result({}, {}, "2")) is None
    assert not (tmp_path / "runs" / "r-unsaved-100.json").exists() and not (spare / "r-unsaved-100.json").exists()


def test_a_rescue_moves_to_the_temp_folder_when_the_files_folder_is_gone(tmp_path: Path, monkeypatch) -> None:
    """Beside the file fails for another reason than a taken name: the temp folder is tried at once."""
    spare = tmp_path / "spare"
    spare.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spare))
    output = OutputFile(tmp_path / "runs" / "r.json")
    (tmp_path / "runs").rmdir()
    tried: list[str] = []
    real = os.open
    monkeypatch.setattr(os, "open", lambda path, *args: (tried.append(str(path)), real(path, *args))[1])
    rescued = output.rescue(Result({}, {}, "1"))
    monkeypatch.setattr(os, "open", real)
    assert rescued == spare / "r-unsaved-1.json" and load(rescued).created == "1"
    assert tried == [str(tmp_path / "runs" / "r-unsaved-1.json"), str(spare / "r-unsaved-1.json")]  # one try where none can succeed


# Reading a file


@pytest.mark.parametrize(("value", "limit"), [
    (None, 256_000_000), ("", 256_000_000), ("   ", 256_000_000), ("1024", 1_024_000_000), (" 2 ", 2_000_000), ("0.5", 500_000),
    ("1e-6", 1), ("0.0000019", 1),
])  # fmt: skip
def test_the_largest_file_read_is_256_mb_or_what_the_variable_says(monkeypatch, value: str | None, limit: int) -> None:
    """max_file_bytes: MAX_FILE_MB unless XFERBENCH_MAX_FILE_MB gives a positive number of MB; bytes rounded down."""
    if value is None:
        monkeypatch.delenv("XFERBENCH_MAX_FILE_MB", raising=False)
    else:
        monkeypatch.setenv("XFERBENCH_MAX_FILE_MB", value)
    assert max_file_bytes() == limit


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "lots", " 0 "])
def test_a_size_that_is_not_a_positive_number_of_mb_is_refused(monkeypatch, value: str) -> None:
    """Zero, negative, NaN, infinite or no number: one line quoting what was given (stripped)."""
    monkeypatch.setenv("XFERBENCH_MAX_FILE_MB", value)
    with pytest.raises(XferbenchError) as error:
        max_file_bytes()
    assert str(error.value) == f"XFERBENCH_MAX_FILE_MB={value.strip()!r}: give a size in MB, such as 1024"


def test_a_file_of_exactly_the_limit_is_read_and_one_byte_more_is_refused_before_parsing(tmp_path: Path, monkeypatch) -> None:
    """The size is compared with the limit before the file is read: equal passes, one byte over is one line."""
    monkeypatch.setenv("XFERBENCH_MAX_FILE_MB", "0.001")
    text = Result({}, {}, "c").to_json()
    path = tmp_path / "r.json"
    path.write_text(text + " " * (1000 - len(text)))
    assert load(path) == Result({}, {}, "c")
    path.write_text(text + " " * (1001 - len(text)))
    assert refusal(path) == (f"{path}: 0.001 MB, larger than the 0.001 MB a result file is read up to; if it really is one,"
                             " set XFERBENCH_MAX_FILE_MB higher")  # fmt: skip
    path.write_text("x" * 2500)  # not JSON, but too large is said first
    assert refusal(path).startswith(f"{path}: 0.0025 MB, larger than the 0.001 MB a result file")


def test_megabytes_are_rounded_from_millions_of_bytes() -> None:
    """200,500,100 bytes are 200.5001 MB, written 201 (not 200); 12,350,005 bytes are 12.350005 MB, written 12.4 (not 12.3)."""
    assert (results._megabytes(200_500_100), results._megabytes(12_350_005)) == ("201", "12.4")


def test_a_file_past_the_default_limit_is_never_read(tmp_path: Path, monkeypatch) -> None:
    """A 300 MB file (sparse: nothing to read) against the default 256 MB is refused from its size alone."""
    monkeypatch.delenv("XFERBENCH_MAX_FILE_MB", raising=False)
    path = tmp_path / "huge.json"
    with open(path, "wb") as handle:
        handle.truncate(300_000_000)
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: pytest.fail("read"))
    assert refusal(path) == (f"{path}: 300 MB, larger than the 256 MB a result file is read up to; if it really is one,"
                             " set XFERBENCH_MAX_FILE_MB higher")  # fmt: skip


def test_sizes_past_a_thousand_mb_are_written_whole_with_separators(tmp_path: Path, monkeypatch) -> None:
    """A 1,500 MB file against a limit raised to 1024 reads "1,500 MB ... the 1,024 MB", never 1.5e+03; 99.5 keeps its decimal."""
    monkeypatch.setenv("XFERBENCH_MAX_FILE_MB", "1024")
    path = tmp_path / "huge.json"
    with open(path, "wb") as handle:
        handle.truncate(1_500_000_000)
    assert refusal(path).startswith(f"{path}: 1,500 MB, larger than the 1,024 MB a result file is read up to")
    monkeypatch.setenv("XFERBENCH_MAX_FILE_MB", "99.4")
    with open(path, "wb") as handle:
        handle.truncate(99_500_000)
    assert refusal(path).startswith(f"{path}: 99.5 MB, larger than the 99.4 MB a result file is read up to")


def test_each_unreadable_file_is_one_line_naming_it(tmp_path: Path, monkeypatch) -> None:
    """load: missing, a folder, not UTF-8, not JSON (with its line), nested too deep, and an OS error without a reason."""
    assert refusal(tmp_path / "none.json") == f"{tmp_path / 'none.json'}: no such file"
    (tmp_path / "dir.json").mkdir()
    assert refusal(tmp_path / "dir.json") == f"{tmp_path / 'dir.json'}: cannot read: Is a directory"
    image = tmp_path / "p.json"
    image.write_bytes(b"\x89PNG\r\n\x1a\n\xff")
    assert refusal(image) == f"{image}: not an xferbench result file (not UTF-8 text); give the .json a sweep wrote"
    torn = tmp_path / "torn.json"
    torn.write_text('{\n "schema": "xferbench/1",\n "series": [\n')
    assert refusal(torn) == f"{torn}: not an xferbench result file (not JSON: Expecting value at line 4)"
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 20_000 + "]" * 20_000)
    assert refusal(deep) == f"{deep}: not an xferbench result file (JSON nested too deeply)"
    fine = tmp_path / "fine.json"
    fine.write_text(Result({}, {}, "c").to_json())

    def odd(self: Path, *args: Any, **kwargs: Any) -> bytes:
        raise OSError("odd")

    monkeypatch.setattr(Path, "read_bytes", odd)
    assert refusal(fine) == f"{fine}: cannot read: odd"


@pytest.mark.parametrize("data", [
    {"hello": 1}, [1, 2], {"schema": "other/1"}, {"schema": "xferbench"}, {"schema": "xferbench/"}, {"schema": "xferbench/1a"},
    {"schema": "xferbench/-1"}, {"schema": None}, {"schema": ["xferbench/1"]},
])  # fmt: skip
def test_a_file_without_an_xferbench_schema_tag_is_refused(tmp_path: Path, data: Any) -> None:
    """The schema must read xferbench/N with N a whole number: anything else is not a result file."""
    path = tmp_path / "x.json"
    path.write_text(json.dumps(data))
    assert refusal(path) == f"{path}: not an xferbench result file (no 'schema': 'xferbench/1' field)"


def test_a_file_of_a_newer_schema_says_who_wrote_it_and_an_older_one_is_read(tmp_path: Path) -> None:
    """Schema xferbench/2 names its writer where the file gives a string; xferbench/1 and /0 are read."""
    path = tmp_path / "x.json"
    tail = (f", newer than this xferbench ({__version__}) reads (xferbench/1); update xferbench to read it"
            " (in a checkout: git pull, then pip install -e .)")  # fmt: skip
    for writer, by in (("0.4.0", " by xferbench 0.4.0"), (4, ""), (None, "")):
        path.write_text(json.dumps({"schema": "xferbench/2", "xferbench_version": writer}))
        assert refusal(path) == f"{path}: written{by} with schema xferbench/2{tail}"
    for schema in ("xferbench/1", "xferbench/0"):
        path.write_text(json.dumps({**Result({}, {}, "c").to_dict(), "schema": schema}))
        assert load(path).schema == schema


def test_a_run_level_field_of_the_wrong_shape_refuses_the_file_in_one_line(tmp_path: Path) -> None:
    """load: a required run-level field absent or of the wrong shape names the field, what it is and what was expected."""
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"schema": SCHEMA, "environment": [], "config": {}, "created": "c"}))
    assert refusal(path) == f"{path}: 'environment' is an empty list, expected an object"
    path.write_text(json.dumps({"schema": SCHEMA, "environment": {}, "config": {}}))
    assert refusal(path) == f"{path}: 'created' is missing, expected a string"
    data = result_of(curve({1: 100.0})).to_dict()
    data["series"][0]["points"][0]["others_cpus"] = "2"  # optional: read as absent, and named
    path.write_text(json.dumps(data))
    loaded = load(path)
    assert loaded.series[0].points[0].others_cpus is None and loaded.series[0].points[0].status == "ok"
    assert damaged_points(loaded) == ["sim/link/copy@sim batch 1 'others_cpus' is a string, expected a finite number, 0 or more,"
                                      " or null; read as absent"]  # fmt: skip


NUMBER_OR_NULL = "a finite number, or null"


@pytest.mark.parametrize(("change", "found"), [
    (lambda d: d.update(environment=None), "refused: 'environment' is null, expected an object"),
    (lambda d: d.update(config=[]), "refused: 'config' is an empty list, expected an object"),
    (lambda d: d.update(environment=1, config=1), "refused: 'environment' is 1, expected an object"),
    (lambda d: d.update(series={}), "refused: 'series' is an object, expected a list"),
    (lambda d: d.update(created=None), "refused: 'created' is null, expected a string"),
    (lambda d: d["environment"].update(devices=[{"id": None}]),
     "'environment.devices[0].id' is null, expected a string; read as absent"),
    (lambda d: d["series"].__setitem__(1, 1), "series 1 is 1, expected an object; the series is left out"),
    (lambda d: d["series"][1].update(points={}), "series 1 'points' is an object, expected a list; the series is left out"),
    (lambda d: d["series"][1].update(device=None), "series 1 'device' is null, expected a string; the series is left out"),
    (lambda d: d["series"][1].update(mode=["eager"]), "series 1 'mode' is a list, expected a string; the series is left out"),
    (lambda d: d["series"][1].update(framework="sim\x1b[2J"),
     "series 1 'framework' is a string holding a control character, expected a string; the series is left out"),
    (lambda d: d["series"][1].update(direction="sideways"),
     "series 1 'direction' is a string, expected 'h2d' or 'd2h' or 'bidir'; the series is left out"),
    (lambda d: d["series"][0].update(shape="4x8"),
     "series 0 'shape' is a string, expected a list of whole numbers, 1 or more; the series is left out"),
    (lambda d: d["series"][0].update(shape=[256, "a", 3]),
     "series 0 'shape' is a list holding a string, expected a list of whole numbers, 1 or more; the series is left out"),
    (lambda d: d["series"][0].update(shape=[256, True, 3]),
     "series 0 'shape' is a list holding true, expected a list of whole numbers, 1 or more; the series is left out"),
    (lambda d: d["series"][1]["points"].append([]), "sim/link/copy@sim point 2 is an empty list, expected an object; the point is left out"),
    (lambda d: d["series"][1]["points"][0].update(batch_size=True),
     "sim/link/copy@sim point 0 'batch_size' is true, expected a whole number; the point is left out"),
    (lambda d: d["series"][1]["points"][0].update(batch_size=1.0),
     "sim/link/copy@sim point 0 'batch_size' is 1.0, expected a whole number; the point is left out"),
    (lambda d: d["series"][1]["points"][0].pop("bytes"),
     "sim/link/copy@sim point 0 'bytes' is missing, expected a whole number; the point is left out"),
    (lambda d: d["series"][1]["points"][0].update(bytes=False),
     "sim/link/copy@sim point 0 'bytes' is false, expected a whole number; the point is left out"),
    (lambda d: d["series"][1]["points"][0].update(mbps="fast"), f"sim/link/copy@sim batch 1 ('mbps' is a string, expected {NUMBER_OR_NULL})"),
    (lambda d: d["series"][1]["points"][0].update(n="20"), "sim/link/copy@sim batch 1 ('n' is a string, expected a whole number, 0 or more)"),
    (lambda d: d["series"][1]["points"][0].update(median_s=[0.1]), f"sim/link/copy@sim batch 1 ('median_s' is a list, expected {NUMBER_OR_NULL})"),
    (lambda d: d["series"][1]["points"][0].update(median_s=1e400), f"sim/link/copy@sim batch 1 ('median_s' is Infinity, expected {NUMBER_OR_NULL})"),
    (lambda d: d["series"][1]["points"][0].update(times_s={}), "sim/link/copy@sim batch 1 ('times_s' is an object, expected a list of numbers)"),
    (lambda d: d["series"][1]["points"][0].update(device_times_s=["1"]),
     "sim/link/copy@sim batch 1 ('device_times_s' is a list holding a string, expected a list of numbers)"),
    (lambda d: d["series"][1]["points"][0].update(status=None),
     "sim/link/copy@sim batch 1 ('status' is null, expected 'ok' or 'error' or 'skipped')"),
    (lambda d: d["series"][0].update(summary=[]), "sim/link/copy@sim 'summary' is an empty list, expected an object; read as absent"),
    (lambda d: d["series"][0].update(params=None), "sim/link/copy@sim 'params' is null, expected an object; read as absent"),
    (lambda d: d["series"][0].update(link=[]), "sim/link/copy@sim 'link' is an empty list, expected an object; read as absent"),
    (lambda d: d["series"][0].update(numa=""), "sim/link/copy@sim 'numa' is a string, expected an object; read as absent"),
    (lambda d: d["series"][0].update(device_name=3), "sim/link/copy@sim 'device_name' is 3, expected a string, or null; read as absent"),
    (lambda d: d["series"][1]["points"][0].update(cpus=False),
     "sim/link/copy@sim batch 1 'cpus' is false, expected a whole number, 1 or more, or null; read as absent"),
    (lambda d: d["series"][1]["points"][0].update(overlap={}),
     "sim/link/copy@sim batch 1 'overlap' is an object, expected a finite number, 0 or more, or null; read as absent"),
    (lambda d: d["series"][1]["points"][0].update(p10_s=float("nan")),
     "sim/link/copy@sim batch 1 'p10_s' is NaN, expected a finite number, 0 or more, or null; read as absent"),
    (lambda d: d["environment"].update(cpu=7), "'environment.cpu' is 7, expected a string, or null; read as absent"),
    (lambda d: d["environment"].update(devices=[{"id": "cpu", "nvml": {"pcie_gen_max": "4"}}]),
     "'environment.devices[0].nvml.pcie_gen_max' is a string, expected a whole number, 0 or more, or null; read as absent"),
    (lambda d: d["config"].update(timing={"min_samples": -1}),
     "'config.timing.min_samples' is -1, expected a whole number, 0 or more; read as absent"),
    (lambda d: d.update(status=1), "'status' is 1, expected a string; read as absent"),
])  # fmt: skip
def test_each_field_of_the_wrong_shape_refuses_leaves_out_or_reads_as_absent(tmp_path: Path, change: Any, found: str) -> None:
    """On a real-shaped file changed in one place: a run-level field refuses the file; a series or a point that
    cannot be read is left out; a point whose samples or status do not fit is damaged; an optional field is read
    as absent. Each is named in its own words, and the rest of the file is read as it was."""
    data = result_of(curve({1: 100.0}), curve({1: 100.0, 2: 200.0})).to_dict()
    change(data)
    path = tmp_path / "x.json"
    path.write_text(json.dumps(data))
    if found.startswith("refused: "):
        assert refusal(path) == f"{path}: {found.removeprefix('refused: ')}"
        return
    loaded = load(path)
    assert damaged_points(loaded) == [found]
    assert sum(p.status == "ok" for s in loaded.series for p in s.points) >= 1


def test_what_a_file_may_leave_out_takes_its_default_and_integers_are_times() -> None:
    """Absent parts take their defaults, with nothing named; integer times are numbers."""
    bare = Result.from_dict({"environment": {}, "config": {}, "created": "c"})
    assert (bare.series, bare.left_out, bare.read_as_absent) == ([], [], [])
    key = {"framework": "sim", "mode": "link", "op": "copy", "device": "sim", "shape": []}
    found = Result.from_dict({"environment": {}, "config": {}, "created": "c", "series": [
        {**key, "points": [{"batch_size": 1, "bytes": 2, "times_s": [1, 2.5], "device_times_s": [], "n": 2, "median_s": 1.75,
                            "mbps": 2 / 1.75 / 1e6}]},
        {**key, "points": [{"batch_size": 1, "bytes": 2, "mbps": 2e-6, "n": 3, "median_s": 1}]}]})  # fmt: skip
    assert [p.times_s for s in found.series for p in s.points] == [[1, 2.5], []] and damaged_points(found) == []


# Damage a reader finds


def test_damage_accepts_a_point_as_a_run_writes_it() -> None:
    """A measured point, a bidir one with its item size, and a peer's median-only figure are all whole."""
    assert _damage(measured(4), 32) is None and _damage(measured(4)) is None
    bidir = SeriesKey("sim", "link", "copy", "sim", SHAPE, direction=BIDIR)
    assert _damage(Point.measured(bidir.at(3), Samples(TIMES), 1), 32, 2) is None
    assert _damage(Point(512, 512 * 2**20, median_s=0.02, mbps=512 * 2**20 / 0.02 / 1e6)) is None
    assert _damage(measured(1, [1e-300])) is None
    one_byte = SeriesKey("sim", "link", "copy", "sim", (1,))
    assert _damage(Point.measured(one_byte.at(1), Samples(TIMES), 1), 1) is None  # a batch of one one-byte item


@pytest.mark.parametrize(("batch", "nbytes", "why"), [
    (0, 32, "batch 0 of 32 bytes"), (1, 0, "batch 1 of 0 bytes"), (-2, -64, "batch -2 of -64 bytes"),
])  # fmt: skip
def test_damage_refuses_a_batch_or_bytes_below_one(batch: int, nbytes: int, why: str) -> None:
    """No batch or byte count of zero or less is ever measured."""
    point = measured(1)
    point.batch_size, point.bytes = batch, nbytes
    assert _damage(point, 32) == why


def test_damage_checks_bytes_against_the_batch_times_the_item_each_way() -> None:
    """bytes must be ways × batch × item bytes; the message says which, with thousands separated."""
    point = measured(4)
    point.bytes = 1000
    assert _damage(point, 32) == "1,000 bytes, not batch 4 × 32 bytes per item"
    assert _damage(measured(4), 32, 2) == "128 bytes, not 2 × batch 4 × 32 bytes per item"
    big = measured(2)
    assert _damage(big, 196_608) == "64 bytes, not batch 2 × 196,608 bytes per item"
    unchecked = f"its MB/s is recorded as {128 / 3e-6 / 1e6} but its bytes and median give {1000 / 3e-6 / 1e6:.6g}"
    assert _damage(point, None) == _damage(point, 0) == _damage(point) == unchecked  # no item size: bytes go unchecked


@pytest.mark.parametrize("bad", [0.0, -1e-6, math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("name", ["times_s", "device_times_s"])
def test_damage_refuses_a_time_that_is_not_a_positive_number(name: str, bad: float) -> None:
    """Every raw time, on the host's clock or the device's, is finite and above zero."""
    point = measured(4)
    point.device_times_s = list(TIMES)
    getattr(point, name)[1] = bad
    assert _damage(point, 32) == f"a time in '{name}' is not a positive number"


@pytest.mark.parametrize(("compute", "why"), [
    ([1, 2], "its 'compute' record has no whole number of kernel repeats"),
    ({"compute_times_s": [1.0], "step_times_s": [1.0]}, "its 'compute' record has no whole number of kernel repeats"),
    ({"repeats": "3", "compute_times_s": [1.0], "step_times_s": [1.0]}, "its 'compute' record has no whole number of kernel repeats"),
    ({"repeats": 2.0, "compute_times_s": [1.0], "step_times_s": [1.0]}, "its 'compute' record has no whole number of kernel repeats"),
    ({"repeats": True, "compute_times_s": [1.0], "step_times_s": [1.0]}, "its 'compute' record has no whole number of kernel repeats"),
    ({"repeats": 0, "compute_times_s": [1.0], "step_times_s": [1.0]}, "its 'compute' record has no whole number of kernel repeats"),
    ({"repeats": 1, "step_times_s": [1.0]}, "'compute' has no list of positive times in 'compute_times_s'"),
    ({"repeats": 1, "compute_times_s": [], "step_times_s": [1.0]}, "'compute' has no list of positive times in 'compute_times_s'"),
    ({"repeats": 1, "compute_times_s": 1.0, "step_times_s": [1.0]}, "'compute' has no list of positive times in 'compute_times_s'"),
    ({"repeats": 1, "compute_times_s": ["1"], "step_times_s": [1.0]}, "'compute' has no list of positive times in 'compute_times_s'"),
    ({"repeats": 1, "compute_times_s": [True], "step_times_s": [1.0]}, "'compute' has no list of positive times in 'compute_times_s'"),
    ({"repeats": 1, "compute_times_s": [math.nan], "step_times_s": [1.0]}, "'compute' has no list of positive times in 'compute_times_s'"),
    ({"repeats": 1, "compute_times_s": [0], "step_times_s": [1.0]}, "'compute' has no list of positive times in 'compute_times_s'"),
    ({"repeats": 1, "compute_times_s": [1.0]}, "'compute' has no list of positive times in 'step_times_s'"),
    ({"repeats": 1, "compute_times_s": [1.0], "step_times_s": [1.0, -1.0]}, "'compute' has no list of positive times in 'step_times_s'"),
    ({"repeats": 1, "compute_times_s": [1.0], "step_times_s": [math.inf]}, "'compute' has no list of positive times in 'step_times_s'"),
    ({"repeats": 1, "compute_times_s": [1], "step_times_s": [2.5]}, None),
    ({"repeats": 40, "compute_times_s": [1e-3, 2e-3], "step_times_s": [3e-3]}, None),
])  # fmt: skip
def test_damage_checks_the_overlap_record_repeats_and_both_time_lists(compute: Any, why: str | None) -> None:
    """A compute record needs a whole number of repeats from 1 and non-empty lists of finite positive numbers."""
    point = measured(4)
    point.compute = compute
    assert _damage(point, 32) == why


def test_damage_checks_the_count_and_median_against_the_samples() -> None:
    """n must be the number of times; the recorded median must be the samples' within one part in a million."""
    point = measured(4)
    point.n = 6
    assert _damage(point, 32) == "n is 6 but it holds 5 times"
    point = measured(4)
    point.median_s = 3e-6 * (1 + 2e-6)
    assert _damage(point, 32) == f"its median time is recorded as {point.median_s} but its samples give 3e-06"
    point.median_s = None
    assert _damage(point, 32) == "its median time is recorded as None but its samples give 3e-06"
    point = measured(4)
    point.median_s = 3e-6 * (1 + 5e-7)
    point.mbps = 128 / point.median_s / 1e6
    assert _damage(point, 32) is None


@pytest.mark.parametrize("median", [None, 0.0, -1.0, math.nan, math.inf])
def test_damage_refuses_a_point_with_no_samples_and_no_positive_median(median: float | None) -> None:
    """A peer's figure keeps a median without samples; without a finite positive one there is nothing."""
    assert _damage(Point(1, 32, median_s=median, mbps=1.0), 32) == "no samples and no positive median time"


def test_damage_checks_the_rate_against_the_bytes_and_median() -> None:
    """mbps must be bytes / median / 1e6 within one part in a million, and present."""
    point = measured(4)
    point.mbps = None
    assert _damage(point, 32) == f"its MB/s is recorded as None but its bytes and median give {128 / 3e-6 / 1e6:.6g}"
    point.mbps = 128 / 3e-6 / 1e6 * (1 + 2e-6)
    assert _damage(point, 32) == f"its MB/s is recorded as {point.mbps} but its bytes and median give 42.6667"
    point.mbps = 128 / 3e-6 / 1e6 * (1 + 5e-7)
    assert _damage(point, 32) is None


def test_damaged_points_name_each_series_batch_and_why() -> None:
    """damaged_points: "label batch N (why)" without the 'damaged in the file: ' prefix, in file order."""
    one, two = curve({1: 100.0, 2: 200.0}), curve({4: 300.0}, SeriesKey("tf", "eager", "copy", "cpu", (3,)))
    one.points[0].status, one.points[0].error = DAMAGED, "damaged in the file: n is 6 but it holds 5 times"
    one.points[1].status, one.points[1].error = "error", "damaged in the file: not counted"
    two.points[0].status, two.points[0].error = DAMAGED, "torn by hand"
    assert damaged_points(result_of(one, two)) == ["sim/link/copy@sim batch 1 (n is 6 but it holds 5 times)",
                                                   "tf/eager/copy@cpu batch 4 (torn by hand)"]  # fmt: skip


def test_load_marks_a_damaged_point_and_refreshes_only_its_series_summary(tmp_path: Path) -> None:
    """A real node's file with one point's count changed: that point is damaged, its series' summary recomputed."""
    result = node("n1")
    path = write(result, tmp_path)
    data = json.loads(path.read_text())
    data["series"][0]["points"][0]["n"] += 1
    data["series"][1]["summary"]["peak_mbps"] = 1.0  # a cached figure: from_dict recomputes it from the points
    path.write_text(json.dumps(data))
    loaded = load(path)
    raw, torch = loaded.series
    assert (raw.points[0].status, raw.points[0].error) == (DAMAGED, "damaged in the file: n is 21 but it holds 20 times")
    assert raw.summary == Summary() and torch.summary == result.series[1].summary and torch.points[0].status == "ok"
    assert damaged_points(loaded) == ["cuda/raw_pinned/copy/streamed@cuda:0 batch 512 (n is 21 but it holds 20 times)"]


def test_load_judges_bytes_by_the_series_shape_and_direction(tmp_path: Path) -> None:
    """The item is the product of the shape (none for an empty shape); a bidir series moves a batch each way."""
    bidir = curve({1: 100.0, 2: 200.0}, SeriesKey("sim", "link", "copy", "sim", SHAPE, direction=BIDIR))
    figure = Point(512, 512 * 2**20, median_s=0.02, mbps=512 * 2**20 / 0.02 / 1e6)  # a median without samples, in MiB
    shapeless = Series("sim", "link", "copy", "cuda:0", [], points=[figure])
    path = tmp_path / "r.json"
    result_of(bidir, shapeless).save(path)
    assert [p.status for s in load(path).series for p in s.points] == ["ok", "ok", "ok"]
    data = json.loads(path.read_text())
    data["series"][0]["shape"] = [8, 8]
    path.write_text(json.dumps(data))
    assert [p.error for p in load(path).series[0].points] == [
        "damaged in the file: 64 bytes, not 2 × batch 1 × 64 bytes per item",
        "damaged in the file: 128 bytes, not 2 × batch 2 × 64 bytes per item",
    ]


def test_load_judges_no_failed_point_but_any_batch_given_twice(tmp_path: Path) -> None:
    """A failed point's figures are not judged; two points of one batch, whatever their status, are both damaged."""
    series = curve({1: 100.0, 2: 200.0})
    series.points.append(Point(4, 7, status="error", error="boom"))  # bytes not 4 × 32: a failure is not judged
    path = tmp_path / "r.json"
    result_of(series).save(path)
    assert [(p.status, p.error) for p in load(path).series[0].points][2] == ("error", "boom")
    series.points.append(Point(2, 64, status="error", error="again"))
    result_of(series).save(path)
    points = load(path).series[0].points
    assert [p.status for p in points] == ["ok", DAMAGED, "error", DAMAGED]
    assert points[1].error == points[3].error == "damaged in the file: batch 2 appears 2 times in this series"


def test_a_file_whose_every_measured_point_is_damaged_is_refused_and_one_with_none_measured_is_read(tmp_path: Path) -> None:
    """Every ok point damaged: one line quoting the first one's reason; a file with failures only still loads."""
    series = curve({1: 100.0, 2: 200.0})
    for point in series.points:
        point.n += 1
    path = tmp_path / "r.json"
    result_of(series, Series("sim", "link", "copy", "cpu", [1], points=[Point(1, 1, status="error", error="x")])).save(path)
    assert refusal(path) == (f"{path}: every measured point is damaged (damaged in the file: n is 4 but it holds 3 times);"
                             " nothing in it can be used: measure again")  # fmt: skip
    result_of(Series("sim", "link", "copy", "cpu", [1], points=[Point(1, 1, status="error", error="x")])).save(path)
    assert load(path).series[0].points[0].status == "error"
    series.points[1].n += 1  # the second point damaged another way: the first one's reason is the one quoted
    result_of(series).save(path)
    assert refusal(path).startswith(f"{path}: every measured point is damaged (damaged in the file: n is 4 but it holds 3 times);")


# Selecting series


def test_a_selection_filters_each_key_by_its_own_field() -> None:
    """Selection.matches: each of the seven fields is compared with its own attribute; an empty one accepts all."""
    series = Series.of(SeriesKey("torch", "pinned", "copy", "cuda:1", (2,), "aligned", STREAMED, D2H))
    assert Selection().matches(series)
    values = {"frameworks": "torch", "modes": "pinned", "ops": "copy", "devices": "cuda:1", "host_buffers": "aligned",
              "methods": STREAMED, "directions": D2H}  # fmt: skip
    for name, value in values.items():
        assert Selection(**{name: (value, "other")}).matches(series), name
        assert not Selection(**{name: tuple(v for v in values.values() if v != value)}).matches(series), name


def test_an_empty_series_says_its_reason_first_then_its_first_points_error() -> None:
    """why_empty: the series' reason, else the first point error, else 'no point was measured'."""
    points = [Point(1, 4, status="error"), Point(2, 8, status="error", error="first"), Point(4, 16, status="error", error="second")]
    series = Series("torch", "pinned", "copy", "cuda:0", [4], status="failed", reason="bytes did not arrive", points=points)
    picked = Selected(Path("r.json"), Result({}, {}, "c"), series)
    assert picked.why_empty() == "r.json: torch/pinned/copy@cuda:0 FAILED (bytes did not arrive); left out of the curves"
    series.reason, series.status = None, "ok"
    assert picked.why_empty() == "r.json: torch/pinned/copy@cuda:0 has no measured point (first); left out of the curves"


def test_files_are_labelled_by_host_then_stem_then_path() -> None:
    """file_labels: distinct hosts; else distinct stems (hosts repeated or missing); else the whole paths."""
    a, b = Result({"host": "n1"}, {}, "c"), Result({"host": "n2"}, {}, "c")
    assert file_labels([(Path("x/r.json"), a), (Path("y/r.json"), b)]) == ["n1", "n2"]
    assert file_labels([(Path("x/a.json"), a), (Path("y/b.json"), a)]) == ["a", "b"]
    assert file_labels([(Path("x/a.json"), a), (Path("y/b.json"), Result({}, {}, "c"))]) == ["a", "b"]
    assert file_labels([(Path("x/r.json"), a), (Path("y/r.json"), a)]) == ["x/r.json", "y/r.json"]
    assert file_labels([(Path("x/r.json"), a)]) == ["n1"]


def test_sizes_locate_the_figures_where_shapes_differ_or_a_peer_is_among_the_series() -> None:
    """by_bytes: two shapes, or any peer's series; one shape of xferbench's own is located by batch."""
    own = Series("sim", "link", "copy", "sim", [4, 8])
    pick = lambda s: Selected(Path("r.json"), Result({}, {}, "c"), s)  # noqa: E731
    assert not by_bytes([pick(own), pick(Series("tf", "eager", "copy", "cpu", [4, 8]))]) and not by_bytes([])
    assert by_bytes([pick(own), pick(Series("tf", "eager", "copy", "cpu", [8, 4]))])
    assert by_bytes([pick(Series("nvbandwidth", "ce", "copy", "cuda:0", [4, 8], params={"tool": "nvbandwidth"}))])


def test_select_picks_measured_series_and_sets_empty_ones_apart_but_not_skipped_ones(tmp_path: Path) -> None:
    """select: series with measured points are picked, failed ones are empty, skipped ones neither; paths as Path."""
    skipped = Series("tf", "eager", "copy", "cpu", [4, 8], status="skipped", reason="no TensorFlow")
    failed = Series("torch", "pinned", "copy", "cuda:0", [4, 8], status="failed", reason="bytes did not arrive")
    good = curve({1: 100.0})
    path = tmp_path / "r.json"
    result_of(skipped, failed, good).save(path)
    picks, empty = select([str(path)])
    assert [(p.path, p.series.label()) for p in picks] == [(path, "sim/link/copy@sim")]
    assert [(p.path, p.series.label()) for p in empty] == [(path, "torch/pinned/copy@cuda:0")]
    assert empty[0].result is picks[0].result and picks[0].result.environment == {"host": "h1"}  # the file each came from
    picks, empty = select([path], Selection(frameworks=("sim", "tf")))
    assert [p.series.framework for p in picks] == ["sim"] and empty == []


def test_select_says_why_nothing_is_left_to_show(tmp_path: Path) -> None:
    """Whole messages: a file given twice, no series matching, matching ones all empty or all skipped."""
    skipped = Series("tf", "eager", "copy", "cpu", [4, 8], status="skipped", reason="no TensorFlow")
    failed = Series("torch", "pinned", "copy", "cuda:0", [4, 8], status="failed", reason="bytes did not arrive")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    result_of(skipped, failed, curve({1: 100.0})).save(a)
    result_of(curve({1: 100.0})).save(b)
    for paths, selection, message in (
        ([a, b, tmp_path / "." / "b.json"], None, f"{tmp_path / '.' / 'b.json'} is given twice; give each result file once"),
        ([a, b], Selection(frameworks=("jax",)), f"nothing to show: no series matches the selection in {a}, {b}"),
        ([a], Selection(frameworks=("torch", "tf")), f"nothing to show: every selected series is empty ({a}: torch/pinned/copy@cuda:0"
                                                     " FAILED (bytes did not arrive); left out of the curves)"),
        ([a], Selection(frameworks=("tf",)), "nothing to show: every selected series is empty (the selected series were skipped where they"
                                             " were measured)"),
    ):  # fmt: skip
        with pytest.raises(XferbenchError) as error:
            select(paths, selection)
        assert str(error.value) == message


LINK_RUN = Path(__file__).resolve().parent.parent / "results" / "nvidia-h200" / "2026-11-26" / "run-3" / "validation" / "link.json"


def _cut_link(data: dict[str, Any]) -> None:
    del data["series"][0]["link"]["width"]


def _one_sided_load(data: dict[str, Any]) -> None:
    data["series"][0]["link"]["summary"]["gen_under_load"] = [5]


@pytest.mark.parametrize(("change", "named"), [
    (_cut_link, "cuda/raw_pinned/copy/streamed@cuda:0 'link' holds sample lists of different lengths (t_s 38, gen 38, width absent,"
                " rx_kbps 38, tx_kbps 38); read as absent"),
    (_one_sided_load, "cuda/raw_pinned/copy/streamed@cuda:0 'link.summary.gen_under_load' is a list, expected a list of two whole"
                      " numbers, lowest then highest, or null; read as absent"),
])  # fmt: skip
def test_a_link_record_a_reader_would_have_ended_in_a_traceback_on_is_named_and_the_rest_read(tmp_path: Path, change: Any,
                                                                                               named: str) -> None:  # fmt: skip
    """A link record whose samples lost one list (report indexed one list by another), a load range of one
    value (compare read its second): read as absent and named, and report and compare read the rest."""
    from typer.testing import CliRunner

    from xferbench.cli import app

    data = json.loads(LINK_RUN.read_text())
    change(data)
    path = tmp_path / "link.json"
    path.write_text(json.dumps(data))
    assert named in damaged_points(load(path))
    for args in (["report", str(path)], ["compare", str(LINK_RUN), str(path), "--json"]):
        said = CliRunner().invoke(app, args)
        assert said.exception is None or isinstance(said.exception, SystemExit), (args, repr(said.exception))
        assert said.exit_code in (0, 1), said.output


@pytest.mark.parametrize(("name", "content", "problem"), [
    ("digits.json", b'{"schema": "xferbench/1", "n": 1' + b"0" * 5000 + b"}", "not an xferbench result file (not JSON as a sweep writes it: "),
    ("digit.json", '{"schema": "xferbench/\u00b2"}'.encode(), "not an xferbench result file (no 'schema': 'xferbench/1' field)"),
    ("a\x1b[31mred\n.json", b"{", "not an xferbench result file (not JSON: Expecting property name enclosed in double quotes at line 1)"),
])  # fmt: skip
def test_a_file_python_cannot_read_as_numbers_or_a_name_holding_control_characters_is_one_printable_line(
        tmp_path: Path, name: str, content: bytes, problem: str) -> None:  # fmt: skip
    path = tmp_path / name
    path.write_bytes(content)
    message = refusal(path)
    assert message.isprintable() and message.startswith(f"{printable(str(path))}: {problem}"), message


def test_a_lone_point_of_negative_bytes_is_judged_before_its_summary_is_recomputed(tmp_path: Path) -> None:
    """Its MB/s is negative, and a summary of it alone has no saturation batch: the point is damaged first, and
    the file, with nothing else measured, refused in one line."""
    data = json.loads(LINK_RUN.read_text())
    data["series"][0]["points"][0]["bytes"] = -1
    path = tmp_path / "link.json"
    path.write_text(json.dumps(data))
    assert refusal(path) == (f"{path}: every measured point is damaged (damaged in the file: batch 256 of -1 bytes); nothing in it"
                             " can be used: measure again")  # fmt: skip


def test_a_file_an_editor_saved_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + result_of(curve({1: 100.0})).to_json().encode())
    assert load(path).series[0].points[0].status == "ok"
