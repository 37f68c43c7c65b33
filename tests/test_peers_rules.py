"""Peers' output read exactly: every imported figure, label, size, parameter and note of each tool's
output (peer_outputs.py) set against the whole result it must give, and each refusal's one-line
message for input that is damaged or not the tool's."""

from __future__ import annotations

import codecs
import json
import math
import os
import re
from datetime import datetime
from pathlib import Path

import peer_outputs as out
from xferbench.core.errors import XferbenchError
from xferbench.reading import peers
from xferbench.reading.peers import item_for, json_object, read_bandwidthtest, read_nvbandwidth

H2D_CE, D2H_CE = out.H2D_CE, out.D2H_CE
TWO = ((out.H100, "00000000:1b:00"), (out.H100, "00000000:43:00"))
MIB = 2**20
WHO = f"{out.NVB} -j"


def _doc(*runs: dict) -> str:
    """peers/run.sh's document of runs, written by hand where a run's command matters."""
    return json.dumps({"tool": "nvbandwidth v0.8", "runs": list(runs)})


def _run(mib, text, command, code=0, **more) -> dict:
    start = text.index("{")
    return {"buffer_size_mib": mib, "command": command, "exit_code": code, "output": json.JSONDecoder().raw_decode(text, start)[0], **more}


def _env() -> dict:
    """A capture of the same machine: cuda:0 the GPU the peer saw, cuda:1 another, and process facts to drop."""
    return {"host": "captured", "python": "3.12", "settings": {}, "versions": {}, "process_cpus": 8, "load_average": [1, 1, 1],
            "frameworks": {}, "python_implementation": "CPython", "nvml_after": {}, "kept": 1,
            "devices": [{"id": "cuda:0", "kind": "cuda", "pci_bus_id": "00000000:1B:00.0", "memory": 80},
                        {"id": "cuda:1", "kind": "cuda", "pci_bus_id": "00000000:99:00.0", "memory": 40}],
            "nvml": {"gpus": [{"pci_bus_id": "00000000:1b:00.0", "clock": 1}, {"pci_bus_id": "00000000:43:00.0", "clock": 2},
                              {"pci_bus_id": None}]}}


def _bt(*lines, **kw) -> str:
    return out.bandwidthtest(*lines, **kw)


def _csv(config, gbps, size, devices=1, seconds=None) -> str:
    line = out.csv_line(config, gbps, size, devices)
    return line if seconds is None else re.sub(r"Time = \S+ s", f"Time = {seconds} s", line)


PINNED = [out.csv_line("H2D-Pinned", 24.3, 1000), out.csv_line("H2D-Pinned", 53.14159, 2**30), out.csv_line("D2H-Pinned", 0.0, 1000),
          out.csv_line("D2H-Pinned", 26.26, 3 * MIB), out.csv_line("D2D", 1500.2, 32 * MIB)]  # fmt: skip
MB_TABLE = out.bt_table("Host to Device", "PINNED", ((1000, 300.0), (3 * MIB, 12000.5)), unit="MB")

# (name, reader, files' texts (a str, or bytes written as they are), keyword arguments)
CASES = [
    ("nvb_json_two_gpus", "nvb", [out.nvbandwidth(out.passed(H2D_CE, "55.3112", "56.0207"), out.passed(D2H_CE, "55.1", "54.9"), mib=96,
                                                 gpus=TWO)], {"buffer_size_mib": 96}),
    ("nvb_json_kinds", "nvb", [out.nvbandwidth(out.passed("host_to_device_bidirectional_memcpy_ce", "41.2"),
                                               out.passed("device_to_host_bidirectional_memcpy_ce", "40.8"),
                                               out.passed("host_to_device_memcpy_sm", "50.2"),
                                               out.passed("device_to_host_bidirectional_memcpy_sm", "20.5"))], {}),
    ("nvb_json_gaps", "nvb", [out.nvbandwidth(out.passed(H2D_CE, "55.3", "N/A"), out.waived("host_to_device_memcpy_sm"),
                                              out.errored(D2H_CE), out.passed("device_to_device_memcpy_read_ce", "N/A", "N/A"),
                                              out.not_found("host_to_device_memcpy_cee"),
                                              out.passed("device_to_host_memcpy_sm", "0", "-1"), gpus=TWO, mib=3)],
     {"buffer_size_mib": 3}),
    ("nvb_json_v05", "nvb", [out.nvbandwidth(out.passed(H2D_CE, "25.9", "26.1"), out.passed("host_to_device_bidirectional_memcpy_sm", "9.5"),
                                             version="v0.5")], {}),
    ("nvb_json_v07", "nvb", [out.nvbandwidth(out.passed("host_to_device_bidirectional_memcpy_sm", "9.5"),
                                             out.passed("device_to_host_memcpy_sm", "19.5", "0.5"), version="v0.7")], {}),
    ("nvb_json_v06_sm", "nvb", [out.nvbandwidth(out.passed("host_to_device_memcpy_sm", "9.5"), version="v0.6")], {}),
    ("nvb_json_fatal", "nvb", [out.nvbandwidth(out.passed(H2D_CE, "55.3"), out.running(D2H_CE), error=out.ILLEGAL, before="log\n",
                                               after="tail {x}\n")], {"shape": (224, 224, 3)}),
    ("nvb_kit", "nvb", [out.kit_runs((96, out.nvbandwidth(out.passed(H2D_CE, "50.096"), mib=96, before="pre\n", after="post\n"), 0),
                                     (3, out.nvbandwidth(out.passed(H2D_CE, "40.003"), mib=3), 0),
                                     (48, None, 139), (512, out.nvbandwidth(out.passed(H2D_CE, "55.5"), out.passed(D2H_CE, "N/A")), 2))],
     {}),
    ("nvb_commands", "nvb", [_doc(_run(None, out.nvbandwidth(out.passed(H2D_CE, "50.5"), mib=32), f"{WHO} -b 32 -i 5 --loopCount=8 -m"),
                                  _run(None, out.nvbandwidth(out.passed(H2D_CE, "51.5")), f"{WHO} --bufferSize=64 --testSamples 7 --useMean"),
                                  _run(None, out.nvbandwidth(out.passed(D2H_CE, "52.5")), f"{WHO} -t 'x"),
                                  {"command": f"{WHO} -b 16", "exit_code": None, "stdout_stderr_raw": '{"nvbandwidth": {"ver'},
                                  {"buffer_size_mib": "8", "exit_code": 1, "stdout_stderr_raw": ""},
                                  {"buffer_size_mib": 2, "stdout_stderr_raw": "junk " + out.nvbandwidth(out.passed(H2D_CE, "9.25"), mib=2)})],
     {}),
    ("nvb_environment", "nvb", [out.nvbandwidth(out.passed(H2D_CE, "55.3", "56.0"), gpus=TWO, host="node09")], {"environment": _env()}),
    ("nvb_two_files", "nvb", [out.nvbandwidth(out.passed(H2D_CE, "55.3"), version="v0.8"),
                              out.nvbandwidth(out.passed(H2D_CE, "25.3"), version="v0.6", started=True)], {}),
    ("nvb_text_v08", "nvb", [out.nvbandwidth_text(out.passed(H2D_CE, "55.31", "N/A"), out.waived("host_to_device_memcpy_sm"),
                                                  out.passed(D2H_CE, "54.90", "53.10"), out.errored("host_to_device_bidirectional_memcpy_ce"),
                                                  out.not_found("host_to_device_memcpy_cee"), gpus=TWO, verbose=True,
                                                  before="$ ./nvbandwidth -b 128 -i 4 -t x\n", mib=128)], {}),
    ("nvb_text_v05", "nvb", [out.nvbandwidth_text(out.passed(H2D_CE, "25.90"), out.errored(D2H_CE), version="v0.5", mib=32)],
     {"buffer_size_mib": 32}),
    ("nvb_text_v04", "nvb", [out.nvbandwidth_text(out.passed(H2D_CE, "123.45", "99.99"), out.waived("device_to_host_memcpy_sm"),
                                                  out.errored(D2H_CE), out.not_found("nope_ce"), version="v0.4", gpus=TWO)], {}),
    ("nvb_text_two_runs", "nvb", ["user@node07:~$ nvbandwidth -b 96 -t host_to_device_memcpy_ce\n"
                                  + out.nvbandwidth_text(out.passed(H2D_CE, "50.10"), mib=96) + "\n$ nvbandwidth -b 3\n\n"
                                  + out.nvbandwidth_text(out.passed(H2D_CE, "40.20"), mib=3, error="[CUDA_ERROR_UNKNOWN] boom\n")
                                  + "Error: stray\nSUM other 1.00\n"], {}),
    ("nvb_text_cut", "nvb", [out.nvbandwidth_text(out.passed(H2D_CE, "50.10", "51.20"), gpus=TWO).split("\nSUM")[0].rstrip() + "\n"
                             + "Running host_to_device_memcpy_sm.\nmemcpy SM CPU(row) -> GPU(column) bandwidth (GB/s)\nnot a header\n"
                             + "Running device_to_host_memcpy_sm.\nmemcpy SM CPU(row) <- GPU(column) bandwidth (GB/s)\n  0 1\n"
                             + " 0 x\n\n"], {}),
    ("nvb_text_cut_header", "nvb", [out.nvbandwidth_text(out.passed(H2D_CE, "50.10", "51.20"), gpus=TWO).split("\nSUM")[0].rstrip() + "\n\n"
                                    + "Running host_to_device_memcpy_sm.\nmemcpy SM CPU(row) -> GPU(column) bandwidth (GB/s)\nnot a header\n"
                                    + "Running device_to_host_memcpy_sm.\nmemcpy SM CPU(row) <- GPU(column) bandwidth (GB/s)\n\n"
                                    + "Running device_to_host_memcpy_ce.\nmemcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)\n  0\n 0  7.50\n"], {}),
    ("nvb_bom", "nvb", [codecs.BOM_UTF16_LE + out.nvbandwidth(out.passed(H2D_CE, "55.3")).replace("\n", "\r\n").encode("utf-16-le"),
                        codecs.BOM_UTF8 + out.nvbandwidth_text(out.passed(D2H_CE, "54.30")).replace("\n", "\r").encode()], {}),
    ("nvb_bom_be", "nvb", [codecs.BOM_UTF16_BE + out.nvbandwidth(out.passed(H2D_CE, "55.3")).encode("utf-16-be")], {}),
    ("bt_csv", "bt", [_bt(*PINNED, "bandwidthTest-H2D-Pinned, Bandwidth = x GB/s", _csv("H2D-Pinned", 2.0, 2000, seconds="bad"),
                          _csv("D2H-Pinned", 5.0, 0), _csv("D2H-Pinned", 3.0, 4000, seconds="0.00000"))], {}),
    ("bt_shmoo_all", "bt", [_bt(out.csv_line("H2D-Paged", 12.5, 1000, 2), out.csv_line("D2H-Paged", 11.5, 2000, 2),
                                out.csv_line("H2D-Pinned-WriteCombined", 24.1, 1000, 2), mode="Shmoo", devices=(out.H100, out.H100))],
     {"shape": (500,)}),
    ("bt_kit", "bt", [out.kit_sections(("pinned", "--htod --csv --cputiming --device=1",
                                        _bt(out.csv_line("H2D-Pinned", 24.3, 1000), out.csv_line("H2D-Pinned", 25.3, 2000), first=1,
                                            devices=(out.H100, "Other GPU")), None),
                                       ("failed", "--dtoh --csv", _bt(out.csv_line("D2H-Pinned", 20.0, 1000), result="FAIL"), None),
                                       ("exited", "--dtoh --csv", _bt(out.csv_line("D2H-Pinned", 21.0, 2000)), 3),
                                       ("stopped", "--htod --csv", _bt(out.csv_line("H2D-Pinned", 22.0, 3000),
                                                                       tail="NOTE: x\nCUDA error at bandwidthTest.cu:1 code=2\n"), 0),
                                       ("quiet", "--htod", _bt(tail=""), 0))
                      + "### $ bandwidthTest --htod\n### exit weird\nnothing\n### $ again -x\n### $ twice\n"], {}),
    ("bt_pasted", "bt", ["me@box:~$ ./bandwidthTest --csv -device=2 -cputiming\n" + _bt(out.csv_line("H2D-Pinned", 9.5, 1000),
                                                                                        devices=("A", "B"), first=2)], {}),
    ("bt_tables", "bt", [out.bandwidthtest_text(out.bt_table("Host to Device", "PINNED", ((1000, 24.3), (2**30, 53.1))),
                                                out.bt_table("Device to Host", "PAGEABLE", ((1000, 2.5),)),
                                                out.bt_table("Host to Device", "PINNED", ((2000, 20.0),), wc=True),
                                                out.bt_table("Device to Device", "PINNED", ((1000, 900.0),)),
                                                out.bt_table("Host to Device", "PINNED", ((4000, 30.0),), devices=2), before="x\n")], {}),
    ("bt_mb", "bt", [out.bandwidthtest_text(MB_TABLE), _bt("bandwidthTest-H2D-Pinned, Bandwidth = 5000.5 MB/s, Time = 0.1 s, Size = 2000"
                                                          " bytes, NumDevsUsed = 1", "bandwidthTest-D2H, Bandwidth = x MB/s, Time = 0.1 s,"
                                                          " Size = 1000 bytes, NumDevsUsed = 1")], {"mb": 1_024_000}),
    ("nvb_json_facts", "nvb", [out.nvbandwidth(out.passed(H2D_CE, "5.5"), gpus=(("GPU A", "0000000a:1b:0f"),))
                               .replace('"git_version" : ""', '"git_version" : "abc1"').replace("12080", "12010")
                               .replace('"GPU Device list" : [ ', '"GPU Device list" : [ "garbage", '),
                               out.nvbandwidth(out.waived(H2D_CE), version="v0.5"), out.nvbandwidth(error=out.NO_DEVICE, started=False),
                               json.dumps({"nvbandwidth": {"version": "v0.8", "testcases": [{"status": "Passed"}, 5,
                                                                                          *out.passed(D2H_CE, "3.5")]}})], {}),
    ("nvb_text_facts", "nvb", [out.nvbandwidth_text(out.passed(H2D_CE, "5.50"), host="Node-7.A").replace("Git version: ", "Git version: g1")
                               .replace("CUDA Runtime Version: 12080", "CUDA Runtime Version: n/a")], {}),
    ("nvb_more_runs", "nvb", [_doc(_run(None, out.nvbandwidth(out.passed(H2D_CE, "50.5")), None),
                                   {"exit_code": 1, "stdout_stderr_raw": "boom"},
                                   _run(None, out.nvbandwidth(out.passed(D2H_CE, "50.5")), f"{WHO} -i 5 --loopCount=8=9 -b"))], {}),
    ("nvb_fails", "nvb", [out.kit_runs(*[(n, out.nvbandwidth(out.passed(H2D_CE, f"{n}.5"), mib=n), n) for n in range(1, 5)])], {}),
    ("nvb_smallest", "nvb", [out.nvbandwidth(out.passed(H2D_CE, "1.5"), mib=1)], {"buffer_size_mib": 1}),
    ("nvb_largest", "nvb", [out.nvbandwidth(out.passed(H2D_CE, "1.5"))], {"buffer_size_mib": 2**20}),
    ("bt_edges", "bt", [_bt(_csv("H2D-Pinned", 1.0, 1), out.csv_line("H2D-Pinned", 1.5, 2000), devices=("A", "B"), tail=
                            out.csv_line("H2D-Pinned", 2.5, 3000) + "\nNOTE: x\n"),
                        "### $ bandwidthTest --htod --csv -device=1\n" + _bt(out.csv_line("H2D-Pinned", 3.5, 1000), devices=("A", "B")),
                        "### $ bandwidthTest --htod --csv --device 1\n" + _bt(out.csv_line("H2D-Pinned", 4.5, 5000), devices=("A", "B"),
                                                                              tail=""),
                        b"\xff" + _bt(out.csv_line("D2H-Pinned", 4.5, 1000), devices=("A", "B")).encode(),
                        _bt("bandwidthTest-H2D-Pinned-WriteCombined, Bandwidth = 5000.5 MB/s, Time = 0.1 s, Size = 2000 bytes, NumDevsUsed = 1",
                            devices=("A", "B"))],
     {"mb": 1_024_000, "environment": {"host": "h", "python": "3"}}),
    ("bt_mb_cutil", "bt", [out.bandwidthtest_text(MB_TABLE)], {"mb": 2**20}),
]

REFUSALS = [
    ("nvb", [], {}), ("bt", [], {}), ("nvb", ["x"], {"buffer_size_mib": 0}), ("nvb", ["x"], {"buffer_size_mib": 2**20 + 1}),
    ("bt", ["x"], {"mb": 0}), ("nvb", ["DIR"], {}), ("bt", ["MISSING"], {}), ("nvb", ["MISSING"], {}), ("bt", ["DIR"], {}), ("nvb", ["hello\n"], {}), ("bt", ["hello\n"], {}),
    ("nvb", ['{"nvbandwidth": {"version": "v0.8", '], {}), ("nvb", ['{"runs": [1]}'], {}), ("nvb", ['{ "tool" : 3'], {}),
    ("nvb", [out.nvbandwidth(out.passed(H2D_CE, "1.0"), mib=3)], {}), ("nvb", [out.nvbandwidth_text(out.passed(H2D_CE, "1.00"), mib=3)], {}),
    ("nvb", [out.nvbandwidth(out.passed(H2D_CE, "1.0"), version="custom")], {}), ("nvb", [out.nvbandwidth(out.passed(H2D_CE, "1"), version="")], {}),
    ("nvb", [out.nvbandwidth(out.running(H2D_CE), error=out.ILLEGAL)], {}), ("nvb", [out.nvbandwidth(out.waived(H2D_CE))], {}),
    ("nvb", [out.nvbandwidth(out.errored(H2D_CE))], {}), ("nvb", [out.nvbandwidth(error=out.NO_DEVICE, started=False)], {}),
    ("nvb", [out.nvbandwidth_text(error=out.NO_DEVICE, started=False)], {}), ("nvb", [out.kit_runs((3, None, 1))], {}),
    ("bt", [_bt(out.csv_line("D2D", 100.0, 1000), result="FAIL")], {}), ("bt", [_bt()], {}),
    ("bt", [_bt("bandwidthTest-H2D-Pinned, Bandwidth = 5.5 MB/s, Time = 0.1 s, Size = 2000 bytes, NumDevsUsed = 1")], {}),
    ("bt", [out.bandwidthtest_text(MB_TABLE)], {}), ("bt", [out.kit_sections(("a", "--csv", _bt(), 1))], {}),
    ("nvb", [out.nvbandwidth(out.errored(H2D_CE), out.errored(D2H_CE), gpus=TWO)], {}), ("nvb", [out.nvbandwidth()], {}),
    ("bt", [_bt(*[out.csv_line("D2D", 100.0, n) for n in (1000, 2000, 3000, 4000)])], {}),
]


def _files(tmp_path: Path, name: str, texts: list) -> list[Path]:
    paths = []
    for number, text in enumerate(texts):
        path = tmp_path if text == "DIR" else tmp_path / f"{name}-{number}.txt"
        if isinstance(text, bytes):
            path.write_bytes(text)
        elif text not in ("DIR", "MISSING"):
            path.write_bytes(text.encode())
        paths.append(path)
    return paths


def _read(tmp_path: Path, name: str, reader: str, texts: list, kwargs: dict):
    call = read_nvbandwidth if reader == "nvb" else read_bandwidthtest
    return call(_files(tmp_path, name, texts), **kwargs)


def _plain(value, where: str):
    """A result as data, its folder and import time made constant."""
    if isinstance(value, dict):
        return {k: _plain(v, where) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, where) for v in value]
    if isinstance(value, str):
        return value.replace(where, "<dir>")
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def _snapshot(tmp_path: Path, name: str, reader: str, texts: list, kwargs: dict) -> dict:
    data = _read(tmp_path, name, reader, texts, kwargs).to_dict()
    stamp = data["environment"]["peer"]["imported"]
    assert data["created"] == stamp and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", stamp), stamp
    assert datetime.fromisoformat(stamp).utcoffset().total_seconds() == 0
    data["created"] = data["environment"]["peer"]["imported"] = "<now>"
    return _plain(data, str(tmp_path))


def _refusal(tmp_path: Path, number: int, reader: str, texts: list, kwargs: dict) -> str:
    try:
        _read(tmp_path, f"bad{number}", reader, texts, kwargs)
    except XferbenchError as error:
        message = str(error).replace(str(tmp_path), "<dir>")
        assert "\n" not in message, message
        return message
    raise AssertionError(f"refusal {number} was read")


def test_each_peer_output_imports_to_exactly_its_expected_result(tmp_path) -> None:
    """Every series, point, parameter, note, device and peer fact of each output, as the tools print them."""
    results = {name: _snapshot(tmp_path, name, reader, texts, kwargs) for name, reader, texts, kwargs in CASES}
    if os.environ.get("XFERBENCH_WRITE_EXPECTED"):
        refused = [_refusal(tmp_path, number, *case) for number, case in enumerate(REFUSALS)]
        SNAPSHOT.write_text(json.dumps({"results": results, "refused": refused}, indent=1, ensure_ascii=False) + "\n")
    for name, got in results.items():
        assert got == EXPECTED[name], name


def test_damaged_or_foreign_input_is_refused_with_its_one_line_message(tmp_path) -> None:
    """Each refusal names the file and what to do, on one line."""
    got = [_refusal(tmp_path, number, *case) for number, case in enumerate(REFUSALS)]
    assert got == REFUSED


def test_item_shape_is_the_first_that_divides_every_size() -> None:
    """The caller's shape, then 1 MiB, 1000 B and 1 B items, in that order."""
    image = 256 * 256 * 3
    assert [item_for([n]) for n in (image, MIB, 2000, 1001)] == [(256, 256, 3), (512, 512, 4), (1000,), (1,)]
    assert item_for([image, MIB]) == (1,) and item_for([]) == (256, 256, 3) and item_for([2, 4], [2]) == (2,)
    assert item_for([3000], (3,)) == (3,)


def test_json_object_is_the_first_with_a_wanted_key() -> None:
    """Text around the JSON, objects without the key and broken braces are passed over."""
    assert json_object('x {"a": 1} {bad {"b": {"c": 2}} y', ("c", "b")) == {"b": {"c": 2}}
    assert json_object('{"a": [{"c": 1}]}', ("c",)) == {"c": 1}
    assert json_object("[1] {} {", ("a",)) is None and json_object("", ("a",)) is None
    assert peers.PEER_CEILINGS == {("nvbandwidth", "host_to_device_memcpy_ce"), ("bandwidthTest", "pinned"), ("TransferBench", "dma_c0"),
                                   ("rocm_bandwidth_test", "peak_cpu0")}  # fmt: skip


# The results the outputs above must give, and the refusals' messages, in order: a snapshot of what the
# readers gave on 2026-11-26, whose figures the other peer tests check one by one. After a deliberate
# change to what they read or say, write it again (XFERBENCH_WRITE_EXPECTED=1 pytest tests/test_peers_rules.py)
# and read its difference before committing it.
SNAPSHOT = Path(__file__).parent / "expected" / "peers-imported.json"
_EXPECTED = json.loads(SNAPSHOT.read_text())
EXPECTED, REFUSED = _EXPECTED["results"], _EXPECTED["refused"]
