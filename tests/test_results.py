import json
import os
from pathlib import Path

import pytest

import xferbench
from xferbench.measuring.backends import SimLink
from xferbench.core.errors import XferbenchError
from xferbench.core.results import SCHEMA, Result, check_writable, load, select
from xferbench.measuring.sweep import SweepConfig, make_plan, new_result, run_plan
from xferbench.core.timing import TimingConfig


@pytest.fixture
def result(tmp_path) -> Result:
    config = SweepConfig(frameworks=("sim",), ops=("copy",), batch_sizes=(1, 4, 16), sim=SimLink(jitter=0.05),
                         timing=TimingConfig(max_samples=20))  # fmt: skip
    plan = make_plan(config)
    return run_plan(plan, new_result(plan, {"host": "testhost", "versions": {"numpy": "1"}}), save=lambda r: None)


def test_round_trip_is_lossless(tmp_path, result: Result) -> None:
    path = tmp_path / "r.json"
    result.save(path)
    loaded = xferbench.load(path)
    assert loaded == result
    assert loaded.to_dict() == json.loads(path.read_text())
    assert loaded.schema == SCHEMA and loaded.status == "complete"
    assert not list(tmp_path.glob("*.tmp"))  # the temp file was renamed into place


def test_file_has_the_documented_fields(tmp_path, result: Result) -> None:
    path = tmp_path / "r.json"
    result.save(path)
    data = json.loads(path.read_text())
    assert {"schema", "created", "environment", "config", "series", "status", "xferbench_version"} <= set(data)
    series = data["series"][0]
    assert {"framework", "mode", "op", "device", "device_name", "shape", "clock", "sync", "points", "summary"} <= set(series)
    point = series["points"][0]
    assert {"batch_size", "bytes", "times_s", "median_s", "p10_s", "p90_s", "mbps", "status", "error"} <= set(point)
    assert len(point["times_s"]) == point["n"] == 20
    assert {"peak_mbps", "peak_batch_size", "saturation_batch_size", "latency_s", "bandwidth_mbps",
            "half_bandwidth_bytes", "cliff"} <= set(series["summary"])  # fmt: skip
    assert data["config"]["batch_sizes"] == [1, 4, 16] and data["config"]["sim"]["jitter"] == 0.05


def test_tidy_frame_has_one_row_per_point(result: Result) -> None:
    frame = result.to_frame()
    assert len(frame) == 3
    assert list(frame["batch_size"]) == [1, 4, 16]
    assert {"host", "framework", "mode", "op", "device", "shape", "mbps", "median_s", "numpy_version"} <= set(frame.columns)
    assert (frame["host"] == "testhost").all() and (frame["shape"] == "256x256x3").all()
    assert "times_s" not in frame.columns


def test_csv_written_beside_json(tmp_path, result: Result) -> None:
    result.save(tmp_path / "r.json", csv=True)
    lines = (tmp_path / "r.csv").read_text().splitlines()
    assert len(lines) == 4 and "mbps" in lines[0]


def test_saved_after_every_point(tmp_path) -> None:
    path = tmp_path / "partial.json"
    plan = make_plan(SweepConfig(frameworks=("sim",), batch_sizes=(1, 2, 4), timing=TimingConfig(min_samples=3, max_samples=5)))
    seen = []
    run_plan(plan, new_result(plan, {}), save=lambda r: r.save(path),
             on_point=lambda s, p: seen.append(len(load(path).series[0].points)))  # fmt: skip
    assert seen == [1, 2, 3]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        ("{not json", "not JSON"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff", "not an xferbench result file \\(not UTF-8 text\\)"),
        ('{"hello": 1}', "not an xferbench result"),
        ('[1, 2]', "not an xferbench result"),
        ('{"schema": "xferbench/2"}', "newer than this xferbench"),
        ('{"schema": "xferbench/2", "xferbench_version": "0.4.0"}', "written by xferbench 0.4.0 with schema xferbench/2"),
        ('{"schema": "xferbench/1", "series": []}', "'environment' is missing, expected an object"),
        ('{"schema": "xferbench/1", "environment": {}, "config": {}, "created": "", "series": "x"}',
         "'series' is a string, expected a list"),
        ('{"schema": "xferbench/1", "environment": null, "config": {}, "created": ""}', "'environment' is null, expected an object"),
        ('{"schema": "xferbench/1", "environment": {}, "config": {}, "created": "", "series": [{"points": "x"}]}',
         "series 0 'framework' is missing, expected a string; nothing in it can be used"),
        ('{"schema": "xferbench/1", "environment": {}, "config": {}, "created": "", "series": [{"framework": "tf",'
         ' "mode": "eager", "op": "copy", "device": "cpu", "shape": [3], "points": "x"}]}',
         "series 0 'points' is a string, expected a list; nothing in it can be used"),
        ('{"schema": "xferbench/1", "environment": {}, "config": {}, "created": "", "series": [{"framework": "tf",'
         ' "mode": "eager", "op": "copy", "device": "cpu", "shape": [3], "points": [{"batch_size": "8", "bytes": 1}]}]}',
         "tf/eager/copy@cpu point 0 'batch_size' is a string, expected a whole number; nothing in it can be used"),
        ('{"schema": "xferbench/1", "environment": {}, "config": {}, "created": "", "series": [{"framework": "tf",'
         ' "mode": "eager", "op": "copy", "device": "cpu", "shape": [3], "points": [{"batch_size": 8, "bytes": 24,'
         ' "times_s": [null]}]}]}', "every measured point is damaged \\(damaged in the file: 'times_s' is a list holding null,"
         " expected a list of numbers\\)"),
    ],
)
def test_load_rejects_bad_files(tmp_path, content, message) -> None:
    path = tmp_path / "bad.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(XferbenchError, match=message) as error:
        load(path)
    assert "\n" not in str(error.value)


def test_a_file_given_twice_is_refused(tmp_path, result: Result) -> None:
    result.save(tmp_path / "r.json")
    with pytest.raises(XferbenchError, match="given twice"):
        select([tmp_path / "r.json", tmp_path / "." / "r.json"])


def test_fields_from_a_later_minor_version_are_ignored(tmp_path, result: Result) -> None:
    data = result.to_dict()
    data["new_top_level_field"] = 1
    data["series"][0]["new_series_field"] = 2
    data["series"][0]["points"][0]["new_point_field"] = 3
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(data))
    assert load(path) == result


def test_check_writable(tmp_path) -> None:
    assert check_writable(tmp_path / "new" / "dir" / "r.json").parent.is_dir()
    (tmp_path / "afile").write_text("")
    with pytest.raises(XferbenchError, match="is a file, not a folder"):
        check_writable(tmp_path / "afile" / "r.json")
    with pytest.raises(XferbenchError, match="is a directory"):
        check_writable(tmp_path)


def test_out_naming_a_folder_means_a_folder(tmp_path) -> None:
    from xferbench.core.results import output_path

    assert output_path(None, "h.json") == (Path("runs") / "h.json", True)
    assert output_path(f"{tmp_path}/new/", "h.json") == (tmp_path / "new" / "h.json", True)  # a slash: a folder, made
    assert output_path(str(tmp_path), "h.json") == (tmp_path / "h.json", True)  # an existing folder
    assert output_path(str(tmp_path / "r.json"), "h.json") == (tmp_path / "r.json", False)


def test_only_regular_files_are_ever_replaced(tmp_path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep")
    link = tmp_path / "r.json"
    link.symlink_to(target)
    for path in (link, Path(os.devnull)):
        with pytest.raises(XferbenchError, match="not a regular file"):
            check_writable(path, overwrite=True)
    assert target.read_text() == "keep"


def test_a_run_never_writes_over_a_file_it_no_longer_owns(tmp_path) -> None:
    from xferbench.core.results import OutputFile

    path = tmp_path / "r.json"
    mine = OutputFile(path)
    mine.save(Result({}, {}, "1"))
    path.unlink()
    path.write_text("another run's file")  # something else took the name mid-run
    mine.save(Result({}, {}, "2"))
    assert path.read_text() == "another run's file"
    assert mine.moved_from == path and mine.path == tmp_path / "r-2.json" and load(mine.path).created == "2"
    late = OutputFile(tmp_path / "late.json")  # checked while the name was free...
    (tmp_path / "late.json").write_text("{}")  # ...then another run claimed it first
    with pytest.raises(XferbenchError, match="was just created by another run"):
        late.save(Result({}, {}, "x"))
    assert (tmp_path / "late.json").read_text() == "{}"


def test_out_names_this_host_where_it_says_percent_h(monkeypatch) -> None:
    from xferbench.core import results

    monkeypatch.setattr("platform.node", lambda: "gpu-node 07")
    assert results.output_path("fleet/%h.json", "x.json") == (Path("fleet/gpu-node-07.json"), False)
    assert results.output_path("fleet/{host}/", "x.json") == (Path("fleet/gpu-node-07/x.json"), True)


def test_the_tidy_frame_holds_each_key_each_figure_and_the_environment_essentials() -> None:
    config = SweepConfig(frameworks=("sim",), batch_sizes=(1,), directions=("bidir",),
                         timing=TimingConfig(min_samples=3, max_samples=5, min_time_s=0.0))  # fmt: skip
    plan = make_plan(config)
    environment = {"host": "h1", "os": "Linux-6", "cpu": "EPYC", "python": "3.11.7", "versions": {"numpy": "2.1", "xferbench": "0.1.0"}}
    result = run_plan(plan, new_result(plan, environment), save=lambda r: None)
    (row,) = result.to_frame().to_dict("records")
    point = result.series[0].points[0]
    assert list(row) == [
        "host", "created", "framework", "mode", "op", "device", "device_name", "transfer", "host_buffer", "method", "direction",
        "concurrent", "shape", "batch_size", "bytes", "status", "error", "warmup_calls", "n", "median_s", "p10_s", "p90_s", "mbps",
        "mbps_p10", "mbps_p90", "batches_per_s", "images_per_s", "device_median_s", "device_mbps", "host_offset",
        "page_faults_per_call", "copies", "transfers", "verify_s", "pin_s", "staging_chunk_bytes", "others_cpus", "run_wait", "cpus", "overlap",
        "h2d_mbps", "d2h_mbps", "os", "cpu", "python", "numpy_version",
    ]  # the raw samples stay in the file; xferbench's own version is the file's, not a column
    assert (row["host"], row["created"], row["framework"], row["mode"], row["op"], row["device"]) == ("h1", result.created, "sim", "link", "copy", "sim")
    assert (row["device_name"], row["transfer"], row["host_buffer"], row["method"], row["direction"], row["concurrent"]) == \
        (result.series[0].device_name, "simulated", "numpy", "per-call", "bidir", 1)  # fmt: skip
    assert (row["shape"], row["batch_size"], row["mbps"], row["n"]) == ("256x256x3", 1, point.mbps, point.n)
    assert (row["h2d_mbps"], row["d2h_mbps"]) == (point.direction_mbps["h2d"], point.direction_mbps["d2h"])
    assert (row["os"], row["cpu"], row["python"], row["numpy_version"]) == ("Linux-6", "EPYC", "3.11.7", "2.1")


def test_the_csv_beside_the_json_has_no_index_column(tmp_path, result: Result) -> None:
    from xferbench.core.results import OutputFile

    result.save(tmp_path / "r.json", csv=True)
    output = OutputFile(tmp_path / "o.json", csv=True)
    output.save(result)
    for path in (tmp_path / "r.csv", tmp_path / "o.csv"):
        header = path.read_text().splitlines()[0].split(",")
        assert header[:3] == ["host", "created", "framework"], path


def test_a_claimed_file_is_readable_by_others_and_its_folder_made_again(tmp_path) -> None:
    from xferbench.core.results import OutputFile

    import shutil

    output = OutputFile(tmp_path / "a" / "b" / "r.json")
    shutil.rmtree(tmp_path / "a")  # the folder removed after the check, before the first save
    previous = os.umask(0o022)
    try:
        output.save(Result(environment={}, config={}, created="x"))
    finally:
        os.umask(previous)
    assert (tmp_path / "a" / "b" / "r.json").stat().st_mode & 0o777 == 0o644 and output.saved_points == 0


def test_names_files_and_empty_series_say_what_they_are(tmp_path, monkeypatch) -> None:
    from xferbench.core import results
    from xferbench.core.results import Point, Selected, Series, damaged_points, host_name, output_path, safe_name

    assert safe_name("Node-A_1.x y/z") == "Node-A_1.x-y-z"
    monkeypatch.delenv("XFERBENCH_HOST", raising=False)
    import platform

    monkeypatch.setattr(platform, "node", lambda: "")
    assert host_name() == "host"
    assert output_path("runs/", "r.json") == (Path("runs/r.json"), True)
    assert output_path(str(tmp_path), "r.json") == (tmp_path / "r.json", True)  # an existing folder without the slash
    assert output_path("x.json", "r.json") == (Path("x.json"), False)
    failed = Series("torch", "pinned", "copy", "cuda:0", [4], status="failed", points=[Point(1, 4, status="error", error="CUDA OOM")])
    picked = Selected(Path("r.json"), Result(environment={}, config={}, created="x"), failed)
    assert picked.why_empty() == "r.json: torch/pinned/copy@cuda:0 FAILED (CUDA OOM); left out of the curves"
    picked.series = Series("torch", "pinned", "copy", "cuda:0", [4], status="ok", points=[])
    assert picked.why_empty() == "r.json: torch/pinned/copy@cuda:0 has no measured point (no point was measured); left out of the curves"
    torn = Result(environment={}, config={}, created="x", series=[Series("sim", "link", "copy", "sim", [4], points=[Point(8, 32, status="damaged")])])
    assert damaged_points(torn) == ["sim/link/copy@sim batch 8 (damaged)"]
    with pytest.raises(XferbenchError, match="^give at least one result file$"):
        results.select([])


def test_only_a_regular_file_is_replaced(tmp_path) -> None:
    from xferbench.core.results import refuse_unless_regular

    (tmp_path / "folder").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "folder")
    with pytest.raises(XferbenchError, match=r"is a folder; xferbench writes only regular files"):
        refuse_unless_regular(tmp_path / "folder")
    with pytest.raises(XferbenchError, match=r"is not a regular file \(a link, device or pipe\)"):
        refuse_unless_regular(tmp_path / "link")
    refuse_unless_regular(tmp_path / "new.json")


def test_a_long_host_name_fits_a_file_name_and_a_long_out_is_one_line(tmp_path, monkeypatch) -> None:
    """A cloud FQDN in -o "results/%h.json" once ended in "OSError: File name too long"."""
    from typer.testing import CliRunner

    from xferbench.cli import app
    from xferbench.core.results import HOST_NAME_MAX, host_name, output_path

    fqdn = "ip-10-0-0-1." + "very-long-subdomain." * 12 + "compute.internal"
    monkeypatch.setenv("XFERBENCH_HOST", fqdn)
    short = host_name()
    assert len(short) == HOST_NAME_MAX and short.startswith("ip-10-0-0-1.very-long")
    monkeypatch.setenv("XFERBENCH_HOST", fqdn.replace("compute", "other"))
    assert host_name() != short  # two names with one start stay two files
    path, _ = output_path(f"{tmp_path}/%h.json", "r.json")
    assert path.name == f"{host_name()}.json"
    out = tmp_path / "sim.json"
    result = CliRunner().invoke(app, ["sweep", "-f", "sim", "--batch-sizes", "1", "-o", f"{tmp_path}/%h.json",
                                      "--min-samples", "3", "--max-samples", "3", "--min-time", "0", "--warmup-calls", "1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (tmp_path / f"{host_name()}.json").is_file() and not out.exists()
    long = CliRunner().invoke(app, ["sweep", "-f", "sim", "--batch-sizes", "1", "-o", str(tmp_path / ("x" * 300 + ".json"))])
    assert long.exit_code == 2 and "is 305 bytes, longer than the 255 a file system takes; choose a shorter --out" in long.output
    assert "Traceback" not in long.output


@pytest.mark.parametrize("step", ["claim", "replace"])
def test_a_ctrl_c_during_a_save_waits_for_it_so_the_next_save_keeps_the_file(tmp_path, monkeypatch, step) -> None:
    """Ctrl-C arriving at the worst moment of a save (the file claimed but not yet written, the new file renamed
    into place but not yet recorded) is raised when the save is whole, so the stopped run's last save still
    writes its own file, not a numbered one beside it."""
    import signal

    from xferbench.core.results import OutputFile

    path = tmp_path / "r.json"
    output = OutputFile(path)
    first, second = Result({}, {}, "1"), Result({}, {}, "2")
    if step != "claim":
        output.save(first)
    module, name = (os, "fdopen") if step == "claim" else (os, "replace")
    real = getattr(module, name)

    def ctrl_c_after(*args, **kwargs):
        value = real(*args, **kwargs)
        signal.raise_signal(signal.SIGINT)  # the handler would run at the next bytecode: inside the save
        return value

    monkeypatch.setattr(module, name, ctrl_c_after)
    with pytest.raises(KeyboardInterrupt):
        output.save(first if step == "claim" else second)
        raise AssertionError("the Ctrl-C was lost")  # pragma: no cover
    monkeypatch.setattr(module, name, real)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    output.save(Result({}, {}, "3"))  # the save a stopped run makes to mark its file interrupted
    assert output.moved_from is None and output.path == path and load(path).created == "3"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
