"""The peer readers against outputs damaged the ways pastes are: nvbandwidth's text and -j JSON and
bandwidthTest's tables and --csv lines, built as the tools print them (peer_outputs.py) and as a real
run kept them (results/), then cut short at any point, pasted twice or after another run, with noise
lines, colour codes and control bytes, saved in UTF-16 or latin-1, made huge, or with JSON fields of
other types. Each read either gives a result or refuses in one line: no traceback; no figure, size
or series the input did not print; messages of one printable line that say what to do; a file report
reads without a damaged point; and a JSON search whose work grows with the input, not its square."""

from __future__ import annotations

import bisect
import codecs
import json
import math
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

import peer_outputs as out
from xferbench.core.errors import XferbenchError
from xferbench.core.results import Result, damaged_points, load
from xferbench.reading.peers import common, read_bandwidthtest, read_nvbandwidth

H2D_CE, D2H_CE = out.H2D_CE, out.D2H_CE
RUN = Path(__file__).resolve().parent.parent / "results" / "nvidia-h200" / "2026-11-26" / "run-3" / "validation" / "peers"
REAL_KIT = (RUN / "nvbandwidth.json").read_text()  # validate's document of nvbandwidth runs, as an H200 run wrote it
REAL_NVB = [run["stdout_stderr_raw"] for run in json.loads(REAL_KIT)["runs"]]  # nvbandwidth -j's own stdout (tab-indented)
REAL_BT = (RUN / "bandwidthTest.txt").read_text()  # validate's bandwidthTest runs under '### ' lines
GPUS = ((out.H100, "00000000:1b:00"), (out.H100, "00000000:43:00"))
HOSTS = ["node07", "gpu-a.example", "12345", "12.5"]  # a line of digits above the device list is no host
TESTCASES = (H2D_CE, D2H_CE, "host_to_device_memcpy_sm", "host_to_device_bidirectional_memcpy_ce", "device_to_device_memcpy_read_ce")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
ADVICE = ("give", "run", "import", "save", "fix")  # every refusal says what to do
PRINTED = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")  # a printed number, whole: "55.3" is not in "55.38"
NOISE = ["", "$ nvidia-smi", "}", "{", "{bad json", "Device 0: NVIDIA A100", "12345", "55.3", "   1000\t\t\t25.9", "Running x.",
         "SUM host_to_device_memcpy_ce 99.99", "Result = PASS", "### note", "NOTE: x", "\x1b[31mred\x1b[0m", "\tN/A", "0  1"]
SGR = ["\x1b[0m", "\x1b[1;32m", "\x1b[01;34m", "\x1b(B\x1b[m", "\x1b[K", "\x1b]0;title\x07", "\x1b]8;;http://x\x1b\\"]
CONTROLS = ["\x07", "\x00", "\x08", "\x0b", "\x0c", "\x1b", "\x7f", "\x85", "\x9b", "\u2028", "\u202e", "\ufeff"]


# Outputs as the tools print them ----------------------------------------------------------------------


@st.composite
def nvb_testcases(draw: st.DrawFn, gpus: int, text: bool) -> list[list[dict[str, Any]]]:
    """Testcases of one run: each passed (a cell per GPU, N/A in some), waived, failed or unknown."""
    cases = []
    for name in draw(st.lists(st.sampled_from(TESTCASES), min_size=1, max_size=3, unique=True)):
        kind = draw(st.sampled_from(["passed", "passed", "passed", "waived", "errored", "not_found"]))
        if kind == "passed":
            values = draw(st.lists(st.floats(0.01, 999.0), min_size=gpus, max_size=gpus))
            cells = [f"{v:.2f}" if text else f"{v:.6g}" for v in values]
            cells = [draw(st.sampled_from([cell, cell, cell, "N/A"])) for cell in cells]
            cases.append(out.passed(name, *cells))
        else:
            cases.append(getattr(out, kind)(name))
    return cases


@st.composite
def nvb_text(draw: st.DrawFn) -> str:
    version = draw(st.sampled_from(["v0.8", "v0.8", "v0.5", "v0.4"]))
    gpus = draw(st.integers(1, 2))
    before = draw(st.sampled_from(["", "$ nvbandwidth -b 96 -t x\n", "user@node07:~$ ./nvbandwidth -i 5\n"]))
    return out.nvbandwidth_text(*draw(nvb_testcases(gpus, text=True)), gpus=GPUS[:gpus], version=version, before=before,
                                host=draw(st.sampled_from(HOSTS)), verbose=draw(st.booleans()),
                                mib=96 if "-b 96" in before else None)  # fmt: skip


@st.composite
def nvb_json(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from([*REAL_NVB, REAL_KIT]))
    gpus = draw(st.integers(1, 2))
    return out.nvbandwidth(*draw(nvb_testcases(gpus, text=False)), gpus=GPUS[:gpus], version=draw(st.sampled_from(["v0.8", "v0.7", "v0.5"])),
                           host=draw(st.sampled_from(HOSTS)),
                           before=draw(st.sampled_from(["", "log line\n"])), after=draw(st.sampled_from(["", "tail {x}\n"])))  # fmt: skip


CONFIGS = ["H2D-Pinned", "H2D-Paged", "D2H-Pinned", "H2D-Pinned-WriteCombined", "D2D"]


@st.composite
def bt_csv(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 4)) == 0:
        return REAL_BT
    sizes = draw(st.lists(st.integers(1, 2**31), min_size=1, max_size=6, unique=True))
    lines = [out.csv_line(draw(st.sampled_from(CONFIGS)), draw(st.floats(0.0, 999.0)), size) for size in sizes]
    return out.bandwidthtest(*lines, mode=draw(st.sampled_from(["Range", "Shmoo", "Quick"])), result=draw(st.sampled_from(["PASS", "FAIL"])))


@st.composite
def bt_text(draw: st.DrawFn) -> str:
    tables = []
    for kind, memory in draw(st.lists(st.sampled_from([("Host to Device", "PINNED"), ("Host to Device", "PAGEABLE"),
                                                         ("Device to Host", "PINNED"), ("Device to Device", "PINNED")]),
                                      min_size=1, max_size=3, unique=True)):  # fmt: skip
        sizes = draw(st.lists(st.integers(1, 2**31), min_size=1, max_size=5, unique=True))
        tables.append(out.bt_table(kind, memory, tuple((size, draw(st.floats(0.0, 999.0))) for size in sizes), wc=draw(st.booleans())))
    return out.bandwidthtest_text(*tables, mode=draw(st.sampled_from(["Quick", "Range", "Shmoo"])))


NVB = st.one_of(nvb_text(), nvb_json())
BT = st.one_of(bt_csv(), bt_text())


# The damage pastes take ------------------------------------------------------------------------------


def _cut(draw: st.DrawFn, text: str, _: str) -> str:
    """Cut anywhere, or (as often) just inside a printed number, where a cut leaves a number of its own."""
    numbers = [m for m in PRINTED.finditer(text) if m.end() - m.start() > 1]
    if numbers and draw(st.booleans()):
        number = draw(st.sampled_from(numbers))
        return text[: draw(st.integers(number.start() + 1, number.end() - 1))]
    return text[: draw(st.integers(0, len(text)))]


def _twice(draw: st.DrawFn, text: str, other: str) -> str:
    return text + draw(st.sampled_from([text, other]))


def _noise(draw: st.DrawFn, text: str, _: str) -> str:
    lines = text.split("\n")
    for _ in range(draw(st.integers(1, 4))):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(NOISE) | st.text(max_size=20)))
    return "\n".join(lines)


def _colour(draw: st.DrawFn, text: str, _: str) -> str:
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(SGR + CONTROLS)) + text[at:]
    return text


def _digits(draw: st.DrawFn, text: str, _: str) -> str:
    """Some ASCII digits written as other digits Python reads as numbers: Arabic-Indic, fullwidth, superscript."""
    digits = [m.start() for m in re.finditer(r"[0-9]", text)]
    for at in sorted(draw(st.lists(st.sampled_from(digits), max_size=4, unique=True)) if digits else [], reverse=True):
        other = draw(st.sampled_from(["\u0660", "\uff10", "\u2070", "\u00b2"]))
        odd = chr(ord(other) + int(text[at])) if other in ("\u0660", "\uff10") else other  # the same digit, or a superscript
        text = text[:at] + odd + text[at + 1:]
    return text


def _huge(draw: st.DrawFn, text: str, _: str) -> str:
    filler = draw(st.sampled_from(["log {line}\n", "\n", "{\"a\": [", "noise 55.38\n", "\x1b[32m.\x1b[0m"]))
    return filler * draw(st.integers(1_000, 20_000)) + text


DAMAGE: list[Callable[[st.DrawFn, str, str], str]] = [_cut, _twice, _noise, _colour, _digits, _huge]


@st.composite
def pasted(draw: st.DrawFn, tool: st.SearchStrategy[str]) -> bytes:
    """A tool's output as a paste holds it: damaged zero to three ways, then saved in some encoding."""
    text = draw(tool)
    for damage in draw(st.lists(st.sampled_from(DAMAGE), max_size=3)):
        text = damage(draw, text, draw(tool))
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-16", "utf-8-sig", "latin-1", "junk"]))
    if encoding == "latin-1":
        return text.encode("latin-1", "replace")
    if encoding == "junk":
        return text.encode() + draw(st.binary(max_size=16))
    return text.encode(encoding)


# What every read must give ------------------------------------------------------------------------------


@contextmanager
def decoded_characters() -> Iterator[list[int]]:
    """Every JSON decode made meanwhile, as the characters of the text it was handed: what slicing
    that text cost the caller, and the most a failure costs (its error counts lines up to where it
    stopped, from the start of what it was handed)."""
    counted: list[int] = []
    real = json.JSONDecoder.raw_decode

    def counting(self: json.JSONDecoder, text: str, start: int = 0) -> Any:
        counted.append(len(text) - start)
        return real(self, text, start)

    with mock.patch.object(json.JSONDecoder, "raw_decode", counting):
        yield counted


def linear(decoded: list[int], text: str) -> bool:
    """Whether the decodes a search made grow with its text: a window of a few dozen characters from
    each brace, doubled while a value runs past it, so each character is handed over a few times at most."""
    return sum(decoded) <= 4 * len(text) + (2 * common.WINDOW + 4 * common.TOKEN) * text.count("{")


@dataclass
class Read:
    """What a reader made of a file: its result or refusal, the text it read, the decodes it made, and
    its series as JSON, the file's folder written <dir> so that two reads compare."""

    result: Result | None
    text: str
    refused: str | None
    decoded: list[int]
    series: str = ""


def read(reader: Callable[..., Result], data: bytes) -> Read:
    """The reader on a file of those bytes."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "paste.txt"
        path.write_bytes(data)
        text = common.read_text(path)
        with decoded_characters() as decoded:
            try:
                result = reader([path])
            except XferbenchError as error:
                return Read(None, text, str(error).replace(folder, "<dir>"), decoded)
        return Read(result, text, None, decoded, json.dumps(result.to_dict()["series"]).replace(folder, "<dir>"))


def _values(text: str) -> list[float]:
    return sorted({float(token) for token in PRINTED.findall(text)})


def _printed(value: float, values: list[float]) -> bool:
    at = bisect.bisect_left(values, value * (1 - 1e-9))
    return at < len(values) and math.isclose(values[at], value, rel_tol=1e-9)


def check_figures(result: Result, text: str, tool: str) -> None:
    """Every figure and size of the result is a number the text prints whole; bandwidthTest's figure
    may be its size over its printed Time, which is finer at large sizes."""
    values = _values(text)
    for series in result.series:
        assert len({p.bytes for p in series.points}) == len(series.points), f"{series.label()} holds a size twice"
        for point in series.points:
            assert point.bytes > 0
            if tool == "nvbandwidth":
                assert point.bytes % 2**20 == 0 and (_printed(point.bytes / 2**20, values) or point.bytes // 2**20 in (512, 64)), point.bytes
            else:
                assert _printed(point.bytes, values), point.bytes
            if point.status != "ok":
                continue
            gbps = point.mbps / 1e3
            assert gbps > 0 and math.isfinite(gbps)
            from_time = tool == "bandwidthTest" and any(math.isclose(point.bytes / t / 1e9, gbps, rel_tol=1e-9) for t in values if t > 0)
            assert _printed(gbps, values) or from_time, f"{series.label()}: {gbps} GB/s is not printed in the input"


def check_said(said: str) -> None:
    assert "\n" not in said and not CONTROL.search(said), repr(said)


def check(reader: Callable[..., Result], tool: str, data: bytes) -> Read:
    """The properties every read holds."""
    got = read(reader, data)
    assert linear(got.decoded, got.text)  # (d) the JSON search's work grows with the text, not its square
    if got.refused is not None:  # (c) one printable line that says what to do
        check_said(got.refused)
        assert any(word in got.refused for word in ADVICE), got.refused
        return got
    result = got.result
    assert result is not None
    check_figures(result, got.text, tool)  # (b) no figure, size or series the input did not print
    peer = result.environment["peer"]
    for said in [*peer["not_imported"], *peer["errors"], *peer.get("warnings", []), *peer["commands"],
                 *(s.reason or "" for s in result.series), *(p.error or "" for s in result.series for p in s.points),
                 *(d.get("name") or "" for d in result.environment["devices"]), result.environment.get("host") or ""]:  # fmt: skip
        check_said(said)
    assert not re.fullmatch(r"[-+]?[0-9.]+", result.environment.get("host") or "x"), "a number is no host's name"
    with tempfile.TemporaryDirectory() as folder:  # what report reads: no point damaged, none left out
        result.save(Path(folder) / "r.json")
        assert damaged_points(load(Path(folder) / "r.json")) == []
    return got


# The properties ----------------------------------------------------------------------------------------


@given(pasted(NVB))
def test_nvbandwidth_output_however_pasted_is_read_or_refused_in_one_line(data: bytes) -> None:
    check(read_nvbandwidth, "nvbandwidth", data)  # (a) a traceback fails the test


@given(pasted(BT))
def test_bandwidthtest_output_however_pasted_is_read_or_refused_in_one_line(data: bytes) -> None:
    check(read_bandwidthtest, "bandwidthTest", data)


@given(st.sampled_from(["nvb", "bt"]), st.data())
def test_a_paste_cut_short_gives_no_figure_the_whole_output_does_not_print(tool: str, data: st.DataObject) -> None:
    """A cut that ends inside a number leaves a prefix of it ("55.3" of "55.38"), a number the cut text
    prints but the tool did not: every figure read from the cut text is one the whole output prints."""
    text = data.draw(NVB if tool == "nvb" else BT)
    cut = text[: data.draw(st.integers(0, len(text)))]
    reader, name = (read_nvbandwidth, "nvbandwidth") if tool == "nvb" else (read_bandwidthtest, "bandwidthTest")
    result = check(reader, name, cut.encode()).result
    if result is not None:
        check_figures(result, text, name)


@given(st.sampled_from(["nvb", "bt"]), st.data())
def test_an_output_pasted_twice_is_never_read_as_one_run(tool: str, data: st.DataObject) -> None:
    """Two copies of a run that has figures measure each size twice: refused, saying how many runs."""
    text = data.draw(NVB if tool == "nvb" else BT)
    reader, name = (read_nvbandwidth, "nvbandwidth") if tool == "nvb" else (read_bandwidthtest, "bandwidthTest")
    once = check(reader, name, text.encode()).result
    twice = check(reader, name, (text + text).encode())
    if once is not None and any(s.ok_points() for s in once.series):
        assert twice.refused is not None and "one at a time" in twice.refused, twice.refused


@given(st.sampled_from(["nvb_text", "nvb_json", "bt_text"]), st.data())
def test_runs_from_two_machines_are_never_mixed(kind: str, data: st.DataObject) -> None:
    """A run of one machine pasted after a run of another (another host, or another GPU as cuda:0):
    refused, never one machine's figures filed under the other's GPU."""
    if kind == "bt_text":
        reader, name = read_bandwidthtest, "bandwidthTest"
        first = out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((32_000_000, 25.9),)))
        second = out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((64_000_000, 12.9),)), devices=("NVIDIA A100",))
    else:
        reader, name = read_nvbandwidth, "nvbandwidth"
        write = out.nvbandwidth_text if kind == "nvb_text" else out.nvbandwidth
        other = data.draw(st.sampled_from([{"host": "node08"}, {"gpus": (("NVIDIA A100", "00000000:3b:00"),)},
                                           {"gpus": ((out.H100, "00000000:99:00"),)}]))  # fmt: skip
        first = write(out.passed(H2D_CE, "55.38"))
        second = write(*data.draw(nvb_testcases(1, text=kind == "nvb_text")), **other)
    got = check(reader, name, (first + second).encode())
    assert got.result is None and "different" in (got.refused or ""), got.refused


@given(st.sampled_from(["nvb_text", "nvb_json", "bt_csv", "bt_text"]), st.sampled_from(["--", "fast", "n/a", "?", "1,5", "5_5"]))
def test_a_cell_that_is_not_a_figure_is_named(kind: str, junk: str) -> None:
    """An output whose only figure is not one (a dash, a word, a decimal comma): refused, the cell named."""
    text = {"nvb_text": out.nvbandwidth_text(out.passed(H2D_CE, "55.38")).replace("55.38", junk),
            "nvb_json": out.nvbandwidth(out.passed(H2D_CE, "55.38")).replace('"55.38"', json.dumps(junk)),  # the cell, not the sum
            "bt_csv": out.bandwidthtest(out.csv_line("H2D-Pinned", 25.9, 32_000_000)).replace("25.9", junk),
            "bt_text": out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((32_000_000, 25.9),))).replace("25.9", junk)}[kind]
    got = check(read_nvbandwidth if kind.startswith("nvb") else read_bandwidthtest, kind, text.encode())
    assert got.refused is not None and f"'{junk}'" in got.refused and "not a figure" in got.refused, got.refused


@given(st.sampled_from(["nvb_text", "nvb_json", "bt_csv", "bt_text"]), st.data())
def test_a_coloured_paste_reads_as_the_plain_one(kind: str, data: st.DataObject) -> None:
    """Colour and title codes wrapped around any part of the output change nothing that is read."""
    text = data.draw({"nvb_text": nvb_text(), "nvb_json": nvb_json(), "bt_csv": bt_csv(), "bt_text": bt_text()}[kind])
    coloured = text
    # as a terminal writes them: between characters, never inside another code
    for at in sorted(data.draw(st.lists(st.integers(0, len(text)), min_size=1, max_size=8)), reverse=True):
        coloured = coloured[:at] + data.draw(st.sampled_from(SGR)) + coloured[at:]
    reader = read_nvbandwidth if kind.startswith("nvb") else read_bandwidthtest
    plain, got = read(reader, text.encode()), read(reader, coloured.encode())
    assert (got.refused, got.series) == (plain.refused, plain.series)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
FIELDS = ["version", "git_version", "GPU Device list", "Hostname", "CUDA Runtime Version", "Driver Version", "warning", "error",
          "testcases", "testcases", "GPU Device list"]  # fmt: skip  (the lists a reader walks, drawn more often)
CASE_FIELDS = ["name", "status", "bandwidth_matrix", "bandwidth_description", "sum"]


@given(st.data())
def test_json_fields_of_any_type_give_a_result_or_one_line(data: st.DataObject) -> None:
    """nvbandwidth's JSON, or validate's document of runs, with one to three fields set to other JSON types."""
    if data.draw(st.booleans()):
        document = json.loads(REAL_KIT)
        roots = [(run, run["output"]["nvbandwidth"]) for run in document["runs"]]
    else:
        document = json.loads(out.nvbandwidth(out.passed(H2D_CE, "55.3", "N/A"), out.errored(D2H_CE), gpus=GPUS))
        roots = [(None, document["nvbandwidth"])]
    for _ in range(data.draw(st.integers(1, 3))):
        run, root = data.draw(st.sampled_from(roots))
        place = data.draw(st.sampled_from(["root", "root", "case", "case"] + (["run"] if run is not None else [])))
        if place == "run":
            run[data.draw(st.sampled_from(["buffer_size_mib", "command", "exit_code", "output", "stdout_stderr_raw"]))] = data.draw(json_values)
        elif place == "root":
            root[data.draw(st.sampled_from(FIELDS))] = data.draw(json_values)
        elif isinstance(root.get("testcases"), list) and root["testcases"] and isinstance(root["testcases"][0], dict):
            case = data.draw(st.sampled_from([c for c in root["testcases"] if isinstance(c, dict)]))
            case[data.draw(st.sampled_from(CASE_FIELDS))] = data.draw(json_values | st.lists(st.lists(json_values, max_size=3), max_size=2))
    check(read_nvbandwidth, "nvbandwidth", json.dumps(document).encode())


@st.composite
def brace_noise(draw: st.DrawFn) -> str:
    """Braces as a log holds them: noise, and JSON cut short inside values nested within the decoder's depth."""
    noise = draw(st.text(alphabet='{}[]":, a0\\\n', max_size=2000))
    depth = draw(st.integers(0, 300))
    pad = "x" * draw(st.integers(0, 200))
    nested = ('{"pad": "' + pad + '", "a": ') * depth + draw(st.sampled_from(["", "1", "[", '"cut']))
    return "".join(draw(st.permutations([noise, nested, '{"nvbandwidth": {}}'])))


@settings(max_examples=20)
@given(brace_noise())
def test_the_json_search_on_brace_noise_reads_each_character_a_few_times(text: str) -> None:
    with decoded_characters() as decoded:
        common.json_object(text, ("nvbandwidth",))
    assert linear(decoded, text)


DIGITS = st.text(alphabet="0123456789\u0660\u0661\uff15\u00b2\u2070-", min_size=1, max_size=4)


@given(st.sampled_from(["nvb", "bt"]), DIGITS, DIGITS, st.sampled_from(CONTROLS + SGR), st.data())
def test_commands_exit_codes_and_names_of_any_text_give_one_line(tool: str, number: str, code: str, control: str,
                                                                 data: st.DataObject) -> None:  # fmt: skip
    """Options, exit codes and device names in other digits or with control bytes: read or refused in one
    printable line; a size from such an option is none."""
    name = data.draw(st.sampled_from([out.H100, f"GPU{control}X", f"{control}"]))
    if tool == "nvb":
        text = out.nvbandwidth_text(out.passed(H2D_CE, "55.38"), gpus=((name, "00000000:1b:00"),),
                                    before=f"$ nvbandwidth -b {number} -i {code} {control}\n",
                                    error=data.draw(st.sampled_from([None, f"[CUDA_ERROR_UNKNOWN] {control}boom\n"])))  # fmt: skip
        check(read_nvbandwidth, "nvbandwidth", text.encode())
    else:
        run = out.bandwidthtest(out.csv_line("H2D-Pinned", 25.9, 32_000_000), devices=(name, name),
                                tail=data.draw(st.sampled_from([None, f"CUDA error {control} at x\n"])))  # fmt: skip
        text = f"### {control}run\n### $ bandwidthTest --csv --device={number} {control}\n### exit {code}\n{run}"
        check(read_bandwidthtest, "bandwidthTest", text.encode())


def test_byte_order_marks_and_latin_1_read_as_the_same_output() -> None:
    """UTF-16 either way and UTF-8 with a mark read as UTF-8 does; latin-1 bytes, as replaced characters."""
    text = out.nvbandwidth_text(out.passed(H2D_CE, "55.38"))
    plain = read(read_nvbandwidth, text.encode())
    assert plain.result is not None
    for data in (codecs.BOM_UTF16_LE + text.encode("utf-16-le"), codecs.BOM_UTF16_BE + text.encode("utf-16-be"),
                 codecs.BOM_UTF8 + text.encode(), text.replace("node07", "n\xf6de07").encode("latin-1")):  # fmt: skip
        assert read(read_nvbandwidth, data).series == plain.series


COMMAND = re.compile(r"(?:^|[\s/$#>])(bandwidthTest(?:\s+-\S+)+)\s*$")  # what the command is, said as a pattern (slow on long lines)


@given(st.lists(st.sampled_from(["bandwidthTest", "./bandwidthTest", "x/bandwidthTest", "-a/bandwidthTest", "$", "#>bandwidthTest",
                                 "--csv", "-device=1", "-", "x", "bandwidthTestx", "a-bandwidthTest"]), max_size=8),
       st.sampled_from([" ", "  ", "\t"]), st.sampled_from(["", " ", "\t"]))  # fmt: skip
def test_the_command_in_a_pasted_line_is_found_word_by_word_as_its_pattern_says(words: list[str], gap: str, end: str) -> None:
    """The shell line that ran bandwidthTest, read in one pass over its words, is what the pattern finds."""
    from xferbench.reading.peers.bandwidthtest import _bandwidthtest_command

    line = gap.join(words) + end
    found = COMMAND.search(line)
    assert _bandwidthtest_command(line) == (found.group(1) if found else None)
