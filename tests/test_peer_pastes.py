"""Peers' output as users paste it into bug reports: cut short, two runs one after the other or from
two machines, coloured by the terminal, with control bytes, with cells that are not figures or a newer
version's extra column, a number above the device list, wrong types in the JSON, and a log full of
braces. Each is read as the tool printed it, or refused in one line that names what is wrong; no
figure is ever recorded that the paste does not hold."""

from __future__ import annotations

import json
import math
import re

import pytest

import peer_outputs as out
from test_peers import D2H_CE, H2D_CE, MIB, TWO_GPUS, one_line_error, write
from xferbench.core.errors import XferbenchError
from xferbench.core.results import Result
from xferbench.reading.peers import common, json_object, read_bandwidthtest, read_nvbandwidth

A100 = (("NVIDIA A100-SXM4-80GB", "00000000:3b:00"),)
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def gbps(result: Result) -> dict[tuple[str, str, int], float]:
    """Every recorded figure, by (mode, device, bytes), in GB/s."""
    return {(s.mode, s.device, p.bytes): round(p.mbps / 1e3, 6) for s in result.series for p in s.points if p.status == "ok"}


def notes(result: Result) -> list[str]:
    return result.environment["peer"]["not_imported"]


# A paste cut short -------------------------------------------------------------------------------------


def test_an_nvbandwidth_row_the_paste_ends_inside_is_left_out_and_named(tmp_path) -> None:
    whole = out.nvbandwidth_text(out.passed(D2H_CE, "54.90", "53.10"), out.passed(H2D_CE, "55.38", "56.02"), gpus=TWO_GPUS)
    cut = whole[: whole.index("56.02") + 4]  # "56.0": a figure nvbandwidth never printed
    result = read_nvbandwidth([write(tmp_path, cut)])
    assert gbps(result) == {(D2H_CE, "cuda:0", 512 * MIB): 54.9, (D2H_CE, "cuda:1", 512 * MIB): 53.1}
    (said,) = [n for n in notes(result) if H2D_CE in n]
    assert "ends inside" in said and "56.0" in said and "cut short" in said
    alone = whole[: whole.index("55.38") + 4]  # the only figure of its testcase, cut: refused, as nothing else is left
    only = out.nvbandwidth_text(out.passed(H2D_CE, "55.38"))
    one_line_error(lambda: read_nvbandwidth([write(tmp_path, only[: only.index("55.38") + 4], "only.txt")]), "ends inside.*55.3.*cut short")
    assert 56.0 not in gbps(read_nvbandwidth([write(tmp_path, alone + "\n", "alone.txt")])).values()


def test_a_bandwidthtest_row_or_csv_line_the_paste_ends_inside_is_left_out_and_named(tmp_path) -> None:
    table = out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((32_000_000, 25.9), (64_000_000, 26.0))))
    result = read_bandwidthtest([write(tmp_path, table[: table.index("26.0") + 3])])  # "26." of 26.0
    assert gbps(result) == {("pinned", "cuda:0", 32_000_000): 25.9}
    assert any("64000000" in n and "'26.'" in n and "cut short" in n for n in notes(result))
    csv = out.bandwidthtest(out.csv_line("H2D-Pinned", 25.9, 32_000_000), out.csv_line("H2D-Pinned", 26.0, 64_000_000, devices=16),
                            devices=(out.H100,) * 16)  # fmt: skip
    cut = csv[: csv.index("NumDevsUsed = 16") + len("NumDevsUsed = 1")]  # one GPU's figure, to the text
    result = read_bandwidthtest([write(tmp_path, cut, "csv.txt")])
    assert gbps(result) == {("pinned", "cuda:0", 32_000_000): 25.9}
    assert any("ends inside" in n and "Size = 64000000" in n for n in notes(result))


# Runs pasted together ----------------------------------------------------------------------------------


def test_two_runs_of_one_test_pasted_together_are_refused_in_one_line(tmp_path) -> None:
    run = out.nvbandwidth_text(out.passed(H2D_CE, "55.38"))
    one_line_error(lambda: read_nvbandwidth([write(tmp_path, run + run)]), r"holds 2 runs that each measured host_to_device_memcpy_ce.*"
                                                                          "import them one at a time")
    json_run = out.nvbandwidth(out.passed(H2D_CE, "55.38"))
    one_line_error(lambda: read_nvbandwidth([write(tmp_path, json_run + json_run, "two.json")]), "holds 2 runs.*one at a time")
    bt = out.bandwidthtest(out.csv_line("H2D-Pinned", 25.9, 32_000_000))
    one_line_error(lambda: read_bandwidthtest([write(tmp_path, bt + bt, "bt.txt")]), r"holds 2 runs that each measured pinned.*one at a time")
    lines = out.csv_line("H2D-Pinned", 25.9, 32_000_000) + "\n" + out.csv_line("H2D-Pinned", 25.7, 32_000_000) + "\n"
    one_line_error(lambda: read_bandwidthtest([write(tmp_path, lines, "lines.txt")]), "twice.*one at a time")


def test_runs_from_two_machines_or_gpus_are_never_mixed(tmp_path) -> None:
    node_a = out.nvbandwidth_text(out.passed(H2D_CE, "55.38"), host="nodeA")
    node_b = out.nvbandwidth_text(out.passed(H2D_CE, "25.10"), host="nodeB", gpus=A100)
    one_line_error(lambda: read_nvbandwidth([write(tmp_path, node_a + node_b)]), "2 runs from different machines.*nodeA.*nodeB.*one at a time")
    json_a = out.nvbandwidth(out.passed(H2D_CE, "55.38"), host="nodeA")
    json_b = out.nvbandwidth(out.passed(H2D_CE, "25.1"), host="nodeB")
    one_line_error(lambda: read_nvbandwidth([write(tmp_path, json_a + json_b, "ab.json")]), "different machines.*one at a time")
    one_line_error(lambda: read_nvbandwidth([write(tmp_path, json_a, "a.json"), write(tmp_path, json_b, "b.json")]),
                   "2 runs from different machines")  # fmt: skip
    same_host = out.nvbandwidth_text(out.passed(H2D_CE, "25.10"), gpus=A100)  # another GPU as cuda:0 on node07
    one_line_error(lambda: read_nvbandwidth([write(tmp_path, node_a.replace("nodeA", "node07") + same_host, "gpus.txt")]),
                   "different GPUs.*cuda:0.*H100.*A100.*one at a time")  # fmt: skip
    h100 = out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((32_000_000, 25.9),)))
    a100 = out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((64_000_000, 12.9),)), devices=("NVIDIA A100",))
    one_line_error(lambda: read_bandwidthtest([write(tmp_path, h100 + a100, "bt.txt")]), "2 runs from different GPUs.*A100.*one at a time")


# Colour, control bytes ---------------------------------------------------------------------------------


def _coloured(text: str) -> str:
    """What a terminal with colour keeps when output is pasted from it: SGR codes around words, a
    reset, tput's charset switch."""
    text = re.sub(r"(\d+\.\d+)", "\x1b[1;32m\\1\x1b[0m", text)
    text = re.sub(r"^(Running|Device|bandwidthTest-|\s*Host to Device)", "\x1b[01;34m\\1\x1b(B\x1b[m", text, flags=re.M)
    return "\x1b]0;user@node07: ~\x07" + text


@pytest.mark.parametrize("kind", ["nvb_text", "nvb_json", "bt_text", "bt_csv"])
def test_a_coloured_paste_imports_as_the_plain_one(tmp_path, kind: str) -> None:
    plain = {"nvb_text": out.nvbandwidth_text(out.passed(H2D_CE, "55.38", "56.02"), gpus=TWO_GPUS),
             "nvb_json": out.nvbandwidth(out.passed(H2D_CE, "55.3821", "56.02"), gpus=TWO_GPUS),
             "bt_text": out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((32_000_000, 25.9),))),
             "bt_csv": out.bandwidthtest(out.csv_line("H2D-Pinned", 25.9, 32_000_000))}[kind]  # fmt: skip
    read = read_nvbandwidth if kind.startswith("nvb") else read_bandwidthtest
    want = read([write(tmp_path, plain, "plain.txt")])
    got = read([write(tmp_path, _coloured(plain), "plain.txt")])
    assert got.to_dict()["series"] == want.to_dict()["series"]
    assert got.environment["devices"] == want.environment["devices"] and got.environment["host"] == want.environment["host"]


def test_control_bytes_of_the_paste_never_reach_the_terminal(tmp_path) -> None:
    bell = out.bandwidthtest_text(tail="CUDA error at bandwidthTest.cu:630 \x07\x1bP evil \x9b2J\x00\n")
    message = one_line_error(lambda: read_bandwidthtest([write(tmp_path, bell)]), "no host<->device figure")
    assert not CONTROL.search(message) and "\\x07" in message and "\\x9b" in message
    fatal = out.nvbandwidth_text(out.passed(H2D_CE, "55.38"), out.running(D2H_CE), error="[CUDA_ERROR_UNKNOWN] \x1b]8;;x\x1b\\boom\x07\x85\n")
    result = read_nvbandwidth([write(tmp_path, fatal, "fatal.txt")])
    said = [s.reason for s in result.series] + result.environment["peer"]["errors"]
    assert said and all(text and not CONTROL.search(text) for text in said) and any("boom\\x07" in text for text in said)
    junk = write(tmp_path, "\x1b[31mnot a tool\x1b[0m\x07\n", "junk.txt")
    for read in (read_nvbandwidth, read_bandwidthtest):
        with pytest.raises(XferbenchError) as raised:
            read([junk])
        assert not CONTROL.search(str(raised.value))


# Cells that are not figures, a newer version's column ------------------------------------------------


def test_cells_that_are_not_figures_are_named_as_such(tmp_path) -> None:
    dashes = out.nvbandwidth_text(out.passed(H2D_CE, "55.38")).replace("     55.38", "        --")
    message = one_line_error(lambda: read_nvbandwidth([write(tmp_path, dashes)]), r"'--'.*not a figure")
    assert "no testcase" not in message
    csv = out.bandwidthtest(out.csv_line("H2D-Pinned", 25.9, 32_000_000).replace("25.9", "N/A"))
    message = one_line_error(lambda: read_bandwidthtest([write(tmp_path, csv, "csv.txt")]), r"'N/A'.*not a figure")
    assert "nothing to read" not in message
    words = out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((32_000_000, 25.9),))).replace("25.9", "fast")
    one_line_error(lambda: read_bandwidthtest([write(tmp_path, words, "words.txt")]), r"32000000.*'fast'.*not a figure")


def test_an_extra_column_is_named_by_its_count(tmp_path) -> None:
    wide = out.nvbandwidth_text(out.passed(H2D_CE, "55.38")).replace("     55.38", "     55.38     12.00")
    message = one_line_error(lambda: read_nvbandwidth([write(tmp_path, wide)]), "a row of 2 cells under a header of 1 column")
    assert "stopped during it" not in message
    table = out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((32_000_000, 25.9),)))
    newer = table.replace("Bandwidth(GB/s)\n", "Bandwidth(GB/s)\tTime(s)\n").replace("25.9\n", "25.9\t0.00124\n")
    message = one_line_error(lambda: read_bandwidthtest([write(tmp_path, newer, "newer.txt")]), "3 columns where bandwidthTest prints 2")
    assert "no CSV line or table" not in message
    csv = out.bandwidthtest(out.csv_line("H2D-Pinned", 25.9, 32_000_000) + ", Clock = 1980 MHz")
    one_line_error(lambda: read_bandwidthtest([write(tmp_path, csv, "csv.txt")]), "6 fields where bandwidthTest prints 5")


# The host ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("above", ["12345", "12.5", "-3", "0.5"])
def test_a_number_above_the_device_list_is_not_the_host(tmp_path, above: str) -> None:
    text = out.nvbandwidth_text(out.passed(H2D_CE, "55.38"), host=above)
    assert read_nvbandwidth([write(tmp_path, text)]).environment["host"] is None
    listed = out.nvbandwidth(out.passed(H2D_CE, "55.38"), host=above)
    assert read_nvbandwidth([write(tmp_path, listed, "j.json")]).environment["host"] is None
    named = out.nvbandwidth_text(out.passed(H2D_CE, "55.38"), host="gpu-07")
    assert read_nvbandwidth([write(tmp_path, named, "n.txt")]).environment["host"] == "gpu-07"


# Wrong types, odd digits -------------------------------------------------------------------------------


def _nvb_json(**root) -> str:
    return json.dumps({"nvbandwidth": {"version": "v0.8", **root}})


@pytest.mark.parametrize("text", [
    _nvb_json(**{"GPU Device list": 5}, testcases=out.passed(H2D_CE, "5.5")),
    _nvb_json(testcases=7),
    _nvb_json(testcases={"name": H2D_CE}),
    _nvb_json(testcases=[{"name": H2D_CE, "status": "Passed", "bandwidth_matrix": [[True, "5_5", "٥٥.٥", None, {"a": 1}]]}]),
    json.dumps({"runs": [{"buffer_size_mib": -5, "output": json.loads(out.nvbandwidth(out.passed(H2D_CE, "5.5")))}]}),
    json.dumps({"runs": {"a": 1}}),
    "$ nvbandwidth -b ² -t x\n" + out.nvbandwidth_text(out.passed(H2D_CE, "5.50")),
    '{"a":' * 50_000,
])  # fmt: skip
def test_wrong_types_in_nvbandwidth_json_give_one_line_and_no_made_up_figure(tmp_path, text: str) -> None:
    try:
        result = read_nvbandwidth([write(tmp_path, text)])
    except XferbenchError as error:
        assert "\n" not in str(error)
        return
    assert set(gbps(result).values()) <= {5.5} and all(p.bytes > 0 for s in result.series for p in s.points)


@pytest.mark.parametrize(("text", "kept"), [
    ("### $ bandwidthTest --csv\n### exit ²\n" + out.bandwidthtest(out.csv_line("H2D-Pinned", 2.5, 1000)), {1000}),
    ("### $ bandwidthTest --csv --device=²\n" + out.bandwidthtest(out.csv_line("H2D-Pinned", 2.5, 1000), devices=("A", "B")), {1000}),
    (out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((1000, 2.5),))).replace("1000", "١٠٠٠"), set()),
    (out.bandwidthtest(out.csv_line("H2D-Pinned", 2.5, 1000).replace("2.5", "２.５")), set()),
])  # fmt: skip
def test_odd_digits_in_bandwidthtest_output_give_one_line_and_no_made_up_figure(tmp_path, text: str, kept: set[int]) -> None:
    """bandwidthTest prints ASCII digits: a size or figure in other digits is not its output."""
    try:
        result = read_bandwidthtest([write(tmp_path, text)])
    except XferbenchError as error:
        assert "\n" not in str(error)
        return
    assert {size for _, _, size in gbps(result)} <= kept


# The JSON search ---------------------------------------------------------------------------------------


def _decoded_spans(monkeypatch) -> list[tuple[int, int]]:
    """(start, where the decoder stopped) of every JSON decode, however the search makes its decoder."""
    spans: list[tuple[int, int]] = []
    real = json.JSONDecoder.raw_decode

    def counted(self, text: str, start: int = 0):
        try:
            found = real(self, text, start)
        except json.JSONDecodeError as error:
            # an unterminated string is read to the end of the text before the decoder gives up
            spans.append((start, len(text) if error.msg.startswith("Unterminated string") else error.pos))
            raise
        spans.append((start, found[1]))
        return found

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counted)
    return spans


@pytest.mark.parametrize("text", [
    '{"a": ' * 3000 + "cut",  # a JSON object cut short, nested deeper than the decoder goes
    ('{"pad": "' + "x" * 200 + '", "a": ') * 500 + "cut",  # cut short, nested within its depth: every brace fails at the end
    '{"a": ' * 400 + "1" + "}" * 400 + ' {"nvbandwidth": {}}',  # deep and whole, without the key, before the one wanted
    "log {line} " * 3000 + '{"nvbandwidth": {"version": "v0.8"}}',
    '{"a": "' + "{" * 3000,
])  # fmt: skip
def test_the_json_search_reads_each_character_a_few_times_at_most(monkeypatch, text: str) -> None:
    """A decode from each brace may read a small window, and what a value spans at most about four
    times over as its window doubles: linear in the text, never its square."""
    spans = _decoded_spans(monkeypatch)
    json_object(text, ("nvbandwidth",))
    assert sum(stop - start for start, stop in spans) <= 4 * len(text) + 2 * common.WINDOW * text.count("{")
    assert len(spans) <= text.count("{") * math.ceil(math.log2(len(text)))


def test_json_nested_beyond_the_decoders_depth_is_passed_over() -> None:
    """No tool nests that deep: such a value is skipped whole (to where its brackets close), not decoded
    again from each of its braces; one that never closes holds the rest of the text."""
    deep = '{"a": [' * 100_000
    assert json_object(deep + "1" + "]}" * 100_000 + ' {"nvbandwidth": 1}', ("nvbandwidth",)) == {"nvbandwidth": 1}
    assert json_object(deep + ' {"nvbandwidth": 2}', ("nvbandwidth",)) is None
    assert json_object('{"a": [{"c": 1}]} {"c": 2}', ("c",)) == {"c": 1}  # an object inside the first one comes first
    assert json_object('{"a": [{"c": 1}, ] {"c": 2}', ("c",)) == {"c": 2}  # one inside a value that does not parse is not read
