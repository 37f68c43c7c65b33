"""The loader against files damaged every way a disk, an editor or a bug can damage them: real committed result
files with fields dropped or set to another JSON type, figures made huge, negative or NaN, the text cut short,
two files run together, control bytes inserted, and other encodings. load either gives a result whose every
series and point fits the schema, or refuses the file in one printable line that names it; and what it accepts,
compare --json and report read without a traceback."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result as Run

from xferbench.cli import app
from xferbench.core.errors import XferbenchError, printable
from xferbench.core.results import DAMAGED, Result, damaged_points, load
from xferbench.core.schema import POINT, RUN, SERIES, Unfit

RESULTS = Path(__file__).resolve().parent.parent / "results"
BASES = {  # small committed files of each kind: a CPU sweep, a CUDA run with its link and NUMA records, a peer's figures
    "cpu": RESULTS / "cpu-amd-epyc-2core" / "tf-eager-171-thp-madvise.json",
    "cuda": RESULTS / "nvidia-h200" / "2026-11-26" / "run-3" / "validation" / "link.json",
    "peer": RESULTS / "nvidia-h200" / "2026-11-26" / "run-3" / "validation" / "peer-nvbandwidth.json",
}
TEXTS = {name: path.read_text() for name, path in BASES.items()}
DATA = {name: json.loads(text) for name, text in TEXTS.items()}
NAMES = ["r.json", "a\nb.json", "\x1b[31mred.json", "ü and spaces.json", "tab\there.json"]  # a file's name may hold anything
# Figures where a run writes finite, positive numbers of sensible size
FIGURES = [math.nan, math.inf, -math.inf, -1, -1e-9, 0, 0.0, 1e-320, 1e308, 10**30, 2**64, -(2**70), 10**400]
CONTROL = [b"\x00", b"\x01", b"\x07", b"\x08", b"\x0b", b"\x1b", b"\x1b[2J", b"\x7f", b"\xc2\x85", b"\xc2\x9b", b"\r", b"\xe2\x80\xa8"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def places(value: Any, where: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a parsed file, a list's first three items each (a point's samples are alike)."""
    found = [where] if where else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += places(item, (*where, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):
            found += places(item, (*where, index))
    return found


@st.composite
def edited(draw: st.DrawFn) -> tuple[str, bytes]:
    """A committed file with one to three places dropped, retyped or given an odd figure, as JSON text."""
    data = copy.deepcopy(DATA[draw(st.sampled_from(sorted(DATA)))])
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(places(data)))
        holder = data
        for step in where[:-1]:
            holder = holder[step]
        how = draw(st.sampled_from(["drop", "retype", "figure"]))
        if how == "drop":
            del holder[where[-1]]
        else:
            holder[where[-1]] = draw(json_values if how == "retype" else st.sampled_from(FIGURES))
    return "edited", json.dumps(data).encode()  # json writes NaN and Infinity, which json.loads reads back


@st.composite
def torn(draw: st.DrawFn) -> tuple[str, bytes]:
    """A committed file's bytes cut short, run together with another, with control bytes put in, or in another encoding."""
    text = TEXTS[draw(st.sampled_from(sorted(TEXTS)))]
    how = draw(st.sampled_from(["truncate", "concatenate", "control", "encoding"]))
    if how == "truncate":
        return how, text.encode()[: draw(st.integers(0, len(text.encode())))]
    if how == "concatenate":
        return how, (text + draw(st.sampled_from(["", "\n"])) + TEXTS[draw(st.sampled_from(sorted(TEXTS)))]).encode()
    data = text.encode()
    if how == "control":
        at = draw(st.integers(0, len(data)))
        return how, data[:at] + draw(st.sampled_from(CONTROL)) + data[at:]
    encoding = draw(st.sampled_from(["utf-16", "utf-16-le", "utf-32", "utf-8-sig", "latin-1", "cp1252"]))
    at = draw(st.integers(0, len(text)))
    return how, (text[:at] + draw(st.sampled_from(["", "é", "Grüße", "ÿ"])) + text[at:]).encode(encoding, "replace")


def written(tmp_path: Path, name: str, content: bytes) -> Path:
    folder = tmp_path / f"case-{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    path = folder / name
    path.write_bytes(content)
    return path


def fits_the_schema(result: Result) -> None:
    """Every field of the loaded result has its declared shape: nothing a reader meets is of the wrong type."""
    data = result.to_dict()
    notes: list[Unfit] = []
    RUN.read(data, notes)
    for series in data["series"]:
        SERIES.read(series, notes)
        for point in series["points"]:  # a point found damaged says so in its status, which no file holds
            POINT.read({**point, "status": "error"} if point["status"] == DAMAGED else point, notes)
    assert notes == [], notes
    assert all(line.isprintable() for line in damaged_points(result)), damaged_points(result)


def loaded_or_refused(path: Path) -> Result | None:
    """load's answer: a result that fits the schema, or one printable line that names the file and the problem."""
    try:
        result = load(path)
    except XferbenchError as error:
        message = str(error)
        assert message.isprintable(), repr(message)  # one line: no line break, no control character
        assert message.startswith(f"{printable(str(path))}: ") and len(message) > len(printable(str(path))) + 2, message
        return None
    fits_the_schema(result)
    return result


def no_traceback(run: Run, *codes: int) -> None:
    assert run.exception is None or isinstance(run.exception, SystemExit), repr(run.exception)
    assert run.exit_code in codes, run.output


def read_by_the_commands(tmp_path: Path, path: Path) -> None:
    """compare --json against the committed file of the same kind, each way, and report: never a traceback."""
    runner = CliRunner()
    base = tmp_path / "base.json"
    if not base.exists():
        base.write_text(TEXTS["cuda"])
    for args in (["compare", str(base), str(path), "--json"], ["compare", str(path), str(base), "--json"], ["report", str(path)]):
        run = runner.invoke(app, args)
        no_traceback(run, 0, 1, 2)
        if args[0] == "compare" and run.exit_code != 2:
            json.loads(run.stdout)


SETTINGS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # examples: the profile's


@SETTINGS
@given(case=edited(), name=st.sampled_from(NAMES))
def test_a_file_with_fields_dropped_or_retyped_fits_the_schema_or_is_refused_in_one_line(tmp_path, case, name) -> None:
    _, content = case
    path = written(tmp_path, name, content)
    if loaded_or_refused(path) is not None:
        read_by_the_commands(tmp_path, path)


@SETTINGS
@given(case=torn(), name=st.sampled_from(NAMES))
def test_a_torn_joined_or_re_encoded_file_fits_the_schema_or_is_refused_in_one_line(tmp_path, case, name) -> None:
    how, content = case
    path = written(tmp_path, name, content)
    result = loaded_or_refused(path)
    if result is not None:
        read_by_the_commands(tmp_path, path)


VERDICT_FIGURES = ("batch_size", "bytes", "n", "median_s", "mbps", "times_s")  # what a point's verdict rests on
NOT_A_MEASUREMENT = [math.nan, math.inf, -math.inf, -1, -1e-9, 0, 0.0, -(2**70), 2**64, 10**400]


@SETTINGS
@given(kind=st.sampled_from(sorted(DATA)), name=st.sampled_from(VERDICT_FIGURES), figure=st.sampled_from(NOT_A_MEASUREMENT),
       data=st.data())  # fmt: skip
def test_a_figure_no_run_writes_is_never_turned_into_a_verdict(tmp_path, kind, name, figure, data) -> None:
    """A measured point's batch, bytes, count, median, MB/s or one of its samples set to what no run writes
    (not finite, not positive, too large): the point is damaged and named, or left out, or the file refused;
    and compare and report read the rest."""
    changed = copy.deepcopy(DATA[kind])
    measured = [(s, p) for s, series in enumerate(changed["series"]) for p, point in enumerate(series["points"])
                if point["status"] == "ok" and (name not in ("times_s", "n") or point["times_s"])]  # fmt: skip
    assume(measured)  # a peer's figures keep no samples (and its n, the samples a figure stands for, no verdict rests on)
    s, p = data.draw(st.sampled_from(measured))
    point = changed["series"][s]["points"][p]
    if name == "times_s":
        point[name][data.draw(st.integers(0, len(point[name]) - 1))] = figure
    else:
        point[name] = figure
    path = written(tmp_path, "r.json", json.dumps(changed).encode())
    result = loaded_or_refused(path)
    if result is None:
        return
    points = result.series[s].points
    if len(points) == len(changed["series"][s]["points"]):
        assert points[p].status == DAMAGED and points[p] not in result.series[s].ok_points()
        assert any(line.startswith(f"{result.series[s].label()} batch {points[p].batch_size} (") for line in damaged_points(result))
    else:  # its batch or bytes cannot be read: left out, and named by its place in the series
        assert any(line.startswith(f"{result.series[s].label()} point {p} ") for line in damaged_points(result))
    read_by_the_commands(tmp_path, path)
