"""AMD's peer readers against outputs damaged the ways pastes are, as the NVIDIA readers are tested
(test_peers_properties.py): TransferBench's rows of each version and its p2p matrix, rocm_bandwidth_test's
matrices, cut short anywhere (often inside a number), pasted twice, with noise lines, colour codes and
control bytes, other digits, huge, or saved in another encoding. Each read gives a result or refuses in
one printable line that says what to do: no traceback, and no figure or size the input does not print."""

from __future__ import annotations

import math
import re

from hypothesis import given
from hypothesis import strategies as st

import amd_outputs as amd
from test_peers_properties import ADVICE, Read, _printed, _values, check_said, pasted, read
from xferbench.core.results import Result
from xferbench.reading.peers import read_rocm_bandwidth_test, read_transferbench

MIB = 2**20
SIZES = st.sampled_from([64 * MIB, 256 * MIB, 2**30, 4096])
GBPS = st.floats(0.5, 999.0)


@st.composite
def tb_config(draw: st.DrawFn) -> str:
    """A config file's tests in one of TransferBench's three row shapes, each test one Transfer between host and a GPU."""
    shape = draw(st.sampled_from(["old", "152", "new"]))
    csv = draw(st.booleans())
    tests = []
    for number in range(1, draw(st.integers(1, 4)) + 1):
        gpu, nbytes, gbps = draw(st.integers(0, 11)), draw(SIZES), round(draw(GBPS), 3)
        h2d = draw(st.booleans())
        host = draw(st.sampled_from(["C0", "C1", "B0"]))
        src, dst = (host, f"G{gpu}") if h2d else (f"G{gpu}", host)
        kind = draw(st.sampled_from(["dma", "gfx"]))
        units = 1 if kind == "dma" else draw(st.sampled_from([4, 8, 32]))
        if shape == "old":
            tests.append(amd.tb_old_row(number, 0, nbytes, src, f"{'B' if kind == 'dma' else 'G'}{gpu:02d}{'.*' if kind == 'dma' else ''}",
                                        dst, units, gbps))  # fmt: skip
        elif shape == "152":
            tests.append(amd.tb_152_test([(nbytes, src, "DMA" if kind == "dma" else "GPU", gpu, units, dst, gbps)], csv))
        else:
            tests.append(amd.tb_new_test([(nbytes, src, "D" if kind == "dma" else "G", gpu, units, dst, gbps)], number, csv))
    if shape == "old":
        return amd.tb_old(*tests)
    return amd.tb_env("1.52" if shape == "152" else "1.67", csv, client=None if shape == "152" else "1.66") + "".join(tests)


@st.composite
def tb_p2p(draw: st.DrawFn) -> str:
    cpus, gpus = draw(st.integers(1, 2)), draw(st.integers(1, 4))
    cells = {}
    for cpu in range(cpus):
        for gpu in range(gpus):
            for key in (("CPU", cpu, "GPU", gpu), ("GPU", gpu, "CPU", cpu)):
                if draw(st.integers(0, 5)):
                    cells[key] = round(draw(GBPS), 2)
    return amd.tb_p2p(cpus, gpus, cells, nbytes=draw(SIZES), csv=draw(st.booleans()), remote_read=draw(st.booleans()),
                      dma=draw(st.booleans()))  # fmt: skip


@st.composite
def rbt_output(draw: st.DrawFn) -> str:
    cpus, gpus = draw(st.integers(1, 2)), draw(st.integers(1, 4))
    devices = [("AMD EPYC 9554 64-Core Processor", None, None)] * cpus + [
        ("AMD Instinct MI210", f"GPU-{i:016x}", f"{i + 5:02x}:0.0") for i in range(gpus)]  # fmt: skip
    n = cpus + gpus
    cells = {(i, j): f"{draw(GBPS):.3f}" for i in range(n) for j in range(n) if (i < cpus) != (j < cpus) and draw(st.integers(0, 5))}
    mib = draw(st.sampled_from([None, 64, 256]))
    command = "./rocm-bandwidth-test (rocm_bandwidth -a + rocm_bandwidth -A)" if mib is None else f"./rocm_bandwidth_test -a -m {mib}"
    return amd.rbt(devices, amd.matrix(n, cells), bi=amd.matrix(n, cells) if draw(st.booleans()) else None, command=command)


TB = st.one_of(tb_config(), tb_p2p())
RBT = rbt_output()
PRINTED = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def check_figures(result: Result, text: str, default_size: bool) -> None:
    """Every figure is a number the text prints whole, and every size one it prints (in bytes, or in
    MiB after -m), or rocm_bandwidth_test's default 64 MiB."""
    values = _values(text)
    for series in result.series:
        assert len({p.bytes for p in series.points}) == len(series.points), f"{series.label()} holds a size twice"
        assert re.fullmatch(r"cuda:[0-9]+", series.device), series.device
        for point in series.points:
            assert point.bytes > 0
            assert _printed(point.bytes, values) or point.bytes % MIB == 0 and (
                _printed(point.bytes / MIB, values) or default_size and point.bytes == 64 * MIB), point.bytes  # fmt: skip
            if point.status != "ok":
                continue
            gbps = point.mbps / 1e3
            assert gbps > 0 and math.isfinite(gbps) and _printed(gbps, values), f"{series.label()}: {gbps} GB/s is not printed in the input"


def check(reader, data: bytes, default_size: bool) -> Read:
    got = read(reader, data)
    if got.refused is not None:
        check_said(got.refused)
        assert any(word in got.refused for word in ADVICE), got.refused
        return got
    assert got.result is not None
    check_figures(got.result, got.text, default_size)
    for said in [*got.result.environment["peer"]["not_imported"], *(p.error or "" for s in got.result.series for p in s.points),
                 *(d.get("name") or "" for d in got.result.environment["devices"])]:  # fmt: skip
        check_said(said)
    return got


@given(pasted(TB))
def test_transferbench_output_however_pasted_is_read_or_refused_in_one_line(data: bytes) -> None:
    check(read_transferbench, data, default_size=False)


@given(pasted(RBT))
def test_rocm_bandwidth_test_output_however_pasted_is_read_or_refused_in_one_line(data: bytes) -> None:
    check(read_rocm_bandwidth_test, data, default_size=True)


@given(st.sampled_from(["tb", "rbt"]), st.data())
def test_a_paste_cut_short_gives_no_figure_the_whole_output_does_not_print(tool: str, data: st.DataObject) -> None:
    """A cut inside a number leaves a number of its own ("28.4" of "28.411"): every figure read from the
    cut text is one the whole output prints, and the row it ends in is named or the paste refused."""
    whole = data.draw(TB if tool == "tb" else RBT)
    numbers = [m for m in PRINTED.finditer(whole) if m.end() - m.start() > 1]
    number = data.draw(st.sampled_from(numbers))
    cut = whole[: data.draw(st.integers(number.start() + 1, number.end() - 1))]
    reader = read_transferbench if tool == "tb" else read_rocm_bandwidth_test
    got = check(reader, cut.encode(), default_size=tool == "rbt")
    if got.result is not None:
        check_figures(got.result, whole, tool == "rbt")


@given(st.sampled_from(["tb", "rbt"]), st.sampled_from(["--", "fast", "n/a", "?", "1,5", "5_5", "inf", "nan", "\u0665\u0665.000"]), st.data())
def test_a_cell_that_is_not_a_figure_is_named_and_left_out(tool: str, junk: str, data: st.DataObject) -> None:
    if tool == "tb":
        lines = amd.tb_new_test([(64 * MIB, "C0", "D", 0, 1, "G0", 26.5)]).split("\n")
        lines[1] = lines[1].replace("26.500", junk)  # the Transfer row's figure
        text = "\n".join(lines)
        text += amd.tb_new_test([(64 * MIB, "G0", "D", 0, 1, "C0", 27.25)], 2)
        reader = read_transferbench
    else:
        text = amd.rbt(amd.XTX_DEVICES, [["N/A", junk, "28.410"], ["29.013", "N/A", "N/A"], ["29.016", "N/A", "N/A"]])
        reader = read_rocm_bandwidth_test
    got = check(reader, text.encode(), default_size=True)
    assert got.result is not None
    said = " ".join(got.result.environment["peer"]["not_imported"])
    assert junk.replace(",", "") not in {f"{v:g}" for v in (p.mbps / 1e3 for s in got.result.series for p in s.ok_points())}
    assert "not a figure" in said or "not one" in said or "cells under" in said or "another shape" in said, said
