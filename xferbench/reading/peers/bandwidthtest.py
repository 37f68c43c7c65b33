"""The CUDA samples' bandwidthTest output as a result: its `--csv` lines or its readable tables, one run
or several (kept under '### ' lines, or pasted one after another), a series per memory kind, direction
and GPU."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xferbench.core.results import Result
from xferbench.core.spec import D2H, DEVICE_TO_HOST, H2D, HOST_TO_DEVICE, PER_CALL, STREAMED
from xferbench.reading.peers.common import (DECIMAL, DEFAULT_SHAPE, NOT_A_FIGURE, WHOLE, Builder, Peer, command_words, one_line, option,
                                            peer_environment, peer_facts, peer_result, read_text, refusal, split_lines)  # fmt: skip

BT_COPIES = 100  # bandwidthTest: MEMCOPY_ITERATIONS, one aggregate per size
BT_BANNER = "[CUDA Bandwidth Test]"
# printResultsCSV; the samples before v10.1 print MB/s in the same line.
BT_LINE = re.compile(r"^bandwidthTest-(H2D|D2H|D2D)(-Paged|-Pinned)?(-WriteCombined)?, Bandwidth = (\S+) (GB|MB)/s,"
                     r" Time = (\S+) s, Size = ([0-9]+) bytes, NumDevsUsed = ([0-9]+)\s*$")  # fmt: skip
BT_FIELDS = 5  # the CSV line's fields, between ", ": the test, Bandwidth, Time, Size, NumDevsUsed
BT_FIGURE = re.compile(r"-?[0-9]+\.[0-9]")  # printf's %.1f, as both the CSV line and the table print a figure
BT_DEVICE = re.compile(r"^\s*Device ([0-9]+): (.*\S)")


@dataclass(frozen=True)
class _Printed:
    """One figure as bandwidthTest printed it, from a CSV line or a table row."""

    label: str  # the CSV line's test name, such as bandwidthTest-H2D-Pinned
    kind: str  # H2D, D2H or D2D
    memory: str | None  # -Pinned, -Paged, or None (a copy within the GPU)
    wc: str  # "wc" for write-combined pinned memory
    printed: str  # the figure's text
    unit: str  # GB or MB
    used: int  # NumDevsUsed: the GPUs whose figures it sums
    nbytes: str
    seconds: str | None = None  # the CSV's Time, printed with more digits than its GB/s at large sizes
    cut: bool = False  # on the last line of a text that stops without a line end


def _bandwidthtest_command(line: str) -> str | None:
    """The shell line that ran bandwidthTest with options, where a pasted log holds it: the first
    'bandwidthTest' (after a blank, '/', '$', '#' or '>') that ends a word and is followed by options
    only. Read word by word, so a line of many such words takes one pass."""
    words = list(re.finditer(r"\S+", line))
    options = len(words)  # the first of the options that run to the line's end
    while options > 0 and words[options - 1].group().startswith("-") and len(words[options - 1].group()) > 1:
        options -= 1
    for at in range(max(options - 1, 0), len(words) - 1):
        word = words[at].group()
        found = word.rfind("bandwidthTest")
        if found >= 0 and word.endswith("bandwidthTest") and (found == 0 or word[found - 1] in "/$#>"):
            return line[words[at].start() + found: words[-1].end()]
    return None


def _bandwidthtest_runs(path: Path, text: str) -> list[dict[str, Any]]:
    """Each run a file holds: bandwidthTest's own output (one run), or several, each under '### NAME',
    '### $ COMMAND' and '### exit N' lines (as peers/run.sh and `xferbench validate` keep them), or
    pasted one after another (each from its banner, with the shell line just above it)."""
    lines, ended = split_lines(text)
    runs: list[dict[str, Any]] = []

    def start(name: str | None = None, command: str | None = None) -> dict[str, Any]:
        runs.append({"name": name, "command": command, "exit": None, "lines": [], "banner": False, "cut": False})
        return runs[-1]

    current: dict[str, Any] | None = None
    for line in lines:
        if line.startswith("### $ "):
            if current is None or current["command"] is not None or current["lines"]:
                current = start()
            current["command"] = line[6:].strip()
        elif line.startswith("### exit ") and current is not None:
            code = line[9:].strip()
            current["exit"] = int(code) if re.fullmatch(r"-?[0-9]+", code) else code
        elif line.startswith("### "):
            current = start(name=line[4:].strip())
        elif BT_BANNER in line and current is not None and current["banner"]:
            before = current["lines"]
            while before and not before[-1].strip():
                before.pop()
            # the shell line just above this banner ran this run, not the one before
            moved = [before.pop()] if before and _bandwidthtest_command(before[-1]) else []
            current = start()
            current["lines"], current["banner"] = [*moved, line], True
        elif current is not None or line.strip():
            current = current or start()
            current["lines"].append(line)
            current["banner"] = current["banner"] or BT_BANNER in line
    if runs and not ended and lines and not lines[-1].startswith("### "):
        runs[-1]["cut"] = True  # the text stops inside its last line, which is this run's
    for number, run in enumerate(runs, 1):
        run["where"] = f"{path} run {number}" if len(runs) > 1 or run["command"] is not None or run["name"] is not None else str(path)
    return runs


def read_bandwidthtest(paths: Sequence[Path], shape: tuple[int, ...] = DEFAULT_SHAPE, environment: dict[str, Any] | None = None,
                       mb: int | None = None) -> Result:  # fmt: skip
    """bandwidthTest's output, --csv or its readable tables, one or more files, as a result: a series
    per memory kind, direction and GPU, from every CSV line and table row of every run. `mb`: the bytes
    an MB/s figure's MB stands for, which output from before cuda-samples v10.1 does not state."""
    if not paths:
        raise refusal("give at least one bandwidthTest output file")
    if mb is not None and mb <= 0:
        raise refusal(f"--mb {mb}: give the bytes in one of the output's MB, such as {MB_CUTIL} or {MB_SDK}")
    runs: list[dict[str, Any]] = []
    for path in paths:
        found = _bandwidthtest_runs(Path(path), read_text(Path(path)))
        if not any(run["command"] or any(BT_BANNER in line or line.lstrip().startswith("bandwidthTest-") or BT_HEADING.match(line)
                                         for line in run["lines"]) for run in found):  # fmt: skip
            raise refusal(f"{path}: not bandwidthTest's output (no '{BT_BANNER}' banner, CSV line or table); run bandwidthTest"
                          " with --csv and save what it prints")  # fmt: skip
        runs.extend(found)
    build = Builder("bandwidthTest", shape, runs=len(runs))
    devices: dict[int, dict[str, Any]] = {}
    commands: list[str] = []
    sizes: list[int] = []
    errors: list[str] = []
    for run in runs:
        where = run["where"] + (f" ({one_line(run['name'], 100)})" if run["name"] else "")
        pasted = next(filter(None, map(_bandwidthtest_command, run["lines"])), None)
        command = one_line(run["command"] or pasted, 1000) if run["command"] or pasted else None
        words = command_words(command)
        if command:
            commands.append(command)
        named = {int(m.group(1)): one_line(m.group(2), 200) for m in (BT_DEVICE.match(line) for line in run["lines"]) if m}
        build.start_run(where, None, {index: (name, None) for index, name in named.items()})
        for index, name in named.items():
            devices.setdefault(index, {"name": name})
        failure = _bandwidthtest_failure(run, where)
        if failure:
            errors.append(one_line(failure))
        chosen = option(words, ("--device", "-device"))
        single = min(named) if len(named) == 1 else int(chosen) if chosen and WHOLE.fullmatch(chosen) else min(named, default=0)
        timing = "cpu" if "--cputiming" in words or "-cputiming" in words else "events"
        noted = len(build.not_imported)
        figures = [*_bandwidthtest_csv(run, where, mb, build), *_bandwidthtest_tables(run, where, mb, build)]
        if not figures and len(build.not_imported) == noted:
            said = one_line(" ".join(run["lines"]), 80, last=True)
            build.note(f"{where}: no CSV line or table: run bandwidthTest again with --csv{': ' + said if said else ''}")
        for found in figures:
            at = f"{where}: {found.label} at {found.nbytes} B"
            if found.kind == "D2D":
                build.note(f"{at}: a copy within the GPU, not host<->device")
                continue
            nbytes = int(found.nbytes)
            if nbytes <= 0:
                build.note(f"{at}: no bytes moved")
                continue
            whole = bool(BT_FIGURE.fullmatch(found.printed)) or found.printed.lower() in NOT_A_FIGURE
            if found.cut and not BT_FIGURE.fullmatch(found.printed):
                build.note(f"{at}: the paste ends inside its row ({found.printed!r}): it was cut short there, and the row is left out")
                continue
            if not whole:
                build.note(f"{at}: {one_line(found.printed, 40)!r} is not a figure (bandwidthTest prints {found.unit}/s to 0.1):"
                           " left out")  # fmt: skip
                continue
            sizes.append(nbytes)
            device = "cuda:all" if found.used > 1 else f"cuda:{single}"
            mode = "pageable" if found.memory == "-Paged" else "pinned_wc" if found.wc else "pinned"
            direction = H2D if found.kind == "H2D" else D2H
            fields = _bandwidthtest_fields(mode, direction, found.used, timing)
            gbps = float(found.printed) * (mb or 0) / 1e9 if found.unit == "MB" else _more_precise(float(found.printed), found.seconds, nbytes)
            if not math.isfinite(gbps) or gbps <= 0:
                why = f"bandwidthTest printed {found.printed} {found.unit}/s" + (": below its 0.1 GB/s resolution" if gbps == 0 else "")
                build.gap(mode, device, direction, nbytes, fields, "skipped", why)
                continue
            build.figure(mode, device, direction, nbytes, fields, gbps, 1, BT_COPIES)
        build.end_run(failure)
    series = build.done()
    if not any(s.ok_points() for s in series):
        listed = "; ".join([*errors, *build.unmeasured(), *build.not_imported][:3]) or "nothing to read"
        raise refusal(f"no host<->device figure in the bandwidthTest output ({listed}); run bandwidthTest --htod --csv and give what it"
                      " printed")  # fmt: skip
    for s in series:
        if s.device != "cuda:all":
            s.device_name = (devices.get(int(s.device.split(":")[1])) or {}).get("name")
    peer = peer_facts("bandwidthTest", [], [], commands, paths, sizes, build.not_imported, errors=errors)
    return peer_result(peer_environment(environment, None, devices, {}, peer), series, paths)


def _bandwidthtest_csv(run: dict[str, Any], where: str, mb: int | None, build: Builder) -> list[_Printed]:
    """The figures of one run's CSV lines; a line the paste ends inside, or one of another shape, is
    named and left out."""
    found = []
    for number, raw in enumerate(run["lines"], 1):
        line = raw.strip()
        if not line.startswith("bandwidthTest-"):
            continue
        if run["cut"] and number == len(run["lines"]):  # its NumDevsUsed, or any field, may have lost its end
            build.note(f"{where}: the paste ends inside this line: it was cut short there, and the line is left out: {one_line(line, 200)}")
            continue
        match = BT_LINE.match(line)
        if match is None:
            fields = len(line.split(", "))
            shape = f"a CSV line of {fields} fields where bandwidthTest prints {BT_FIELDS} (another version's output?)" \
                if fields != BT_FIELDS else "a line not understood"  # fmt: skip
            build.note(f"{where}: {shape}: {one_line(line, 200)}")
            continue
        kind, memory, wc, printed, unit, seconds, nbytes, used = match.groups()
        if unit == "MB" and mb is None:
            raise refusal(f"{where}: {BT_MB_REFUSAL}")
        # an MB line's Time is left: its arithmetic is not stated
        found.append(_Printed(line.split(",")[0], kind, memory, "wc" if wc else "", printed, unit, int(used), nbytes,
                              seconds if unit == "GB" else None))  # fmt: skip
    return found


def _more_precise(gbps: float, seconds: str | None, nbytes: int) -> float:
    """bandwidthTest's CSV prints GB/s to 0.1 and, from the same unrounded figure, Time = bytes / GB/s
    to 10 µs (printResultsCSV): at large sizes Time holds more digits. The figure from whichever was
    printed with the smaller relative rounding."""
    time_s = float(seconds) if seconds is not None and DECIMAL.fullmatch(seconds) else math.nan
    if not (math.isfinite(gbps) and gbps > 0 and math.isfinite(time_s) and time_s > 0):
        return gbps
    # Time only where its rounding is clearly the finer (at 1 GiB about 4x): near a tie, the printed GB/s stands
    return nbytes / time_s / 1e9 if 2 * 0.000005 / time_s < 0.05 / gbps else gbps


# bandwidthTest's readable table (printResultsReadable, cuda-samples v10.1 to v12.8): a heading, the
# memory kind, then "Transfer Size (Bytes)<TAB>Bandwidth(GB/s)" (after the write-combined line, which
# ends without a newline) and a row per size, to 0.1 GB/s.
BT_HEADING = re.compile(r"^\s*(Host to Device|Device to Host|Device to Device) Bandwidth, ([0-9]+) Device\(s\)\s*$")
BT_MEMORY = re.compile(r"^\s*(PINNED|PAGEABLE) Memory Transfers\s*$")
BT_COLUMNS = re.compile(r"^\s*(Write-Combined Memory Writes are Enabled)?\s*Transfer Size \(Bytes\)\s+Bandwidth\((GB|MB)/s\)\s*$")
BT_ROW = re.compile(r"^\s*([0-9]+)\s+(\S+)\s*$")
MB_CUTIL, MB_SDK = 2**20, 1_024_000  # an MB in the cutil-era samples; in the sdkTimer era, bytes x 1000/1024 per 2^20
BT_KINDS = {"Host to Device": "H2D", "Device to Host": "D2H", "Device to Device": "D2D"}
# The samples before v10.1 print MB/s and define it by their arithmetic alone (bytes x 1024/1000 / 2^20 per second):
# a figure in it cannot be set beside GB/s without guessing which MB was meant.
BT_MB_REFUSAL = (f"bandwidthTest printed MB/s, as cuda-samples before v10.1 did, with an MB it does not state: give --mb"
                 f" {MB_SDK} for the sdkTimer-era samples (up to v10.0) or --mb {MB_CUTIL} for the older cutil-era ones,"
                 " or run a bandwidthTest from v10.1 or later (GB/s, 10^9 B/s) with --csv")  # fmt: skip


def _bandwidthtest_tables(run: dict[str, Any], where: str, mb: int | None, build: Builder) -> list[_Printed]:
    """The figures of bandwidthTest's readable tables in one run, the same as its CSV lines give them;
    a table of another shape than bandwidthTest prints is named and left out."""
    found: list[_Printed] = []
    heading: re.Match[str] | None = None
    memory: str | None = None
    table: tuple[str, str | None, str, int, str] | None = None  # kind, memory, wc, devices and unit of the table under way
    lines = run["lines"]
    for number, line in enumerate(lines, 1):
        if table is not None:
            row = BT_ROW.match(line)
            if row:
                kind, mem, wc, used, unit = table
                found.append(_Printed(f"bandwidthTest-{kind}{mem or ''}{'-WriteCombined' if wc else ''}", kind, mem, wc, row.group(2), unit,
                                      used, row.group(1), cut=run["cut"] and number == len(lines)))  # fmt: skip
                continue
            if WHOLE.fullmatch((line.split() or [""])[0]):  # a row, of another shape
                if run["cut"] and number == len(lines):
                    build.note(f"{where}: the paste ends inside a table row ({one_line(line, 200)}): it was cut short there, and the row"
                               " is left out")  # fmt: skip
                else:
                    columns = len(line.split())
                    build.note(f"{where}: a table row of {columns} column{'s' * (columns != 1)} where bandwidthTest prints 2 (bytes and"
                               f" {unit}/s): {one_line(line, 200)}; left out")  # fmt: skip
                continue
            table = None
        if match := BT_HEADING.match(line):
            heading, memory = match, None
        elif (match := BT_MEMORY.match(line)) and heading is not None:
            memory = "-Pinned" if match.group(1) == "PINNED" else "-Paged"
        elif (match := BT_COLUMNS.match(line)) and heading is not None:
            unit = match.group(2)
            if unit == "MB" and mb is None:
                raise refusal(f"{where}: {BT_MB_REFUSAL}")
            kind = BT_KINDS[heading.group(1)]
            table = (kind, None if kind == "D2D" else memory, "wc" if match.group(1) else "", int(heading.group(2)), unit)
            heading = None
        elif heading is not None and "Transfer Size" in line:
            named = [c for c in re.split(r"\t+| {2,}", line.replace("Write-Combined Memory Writes are Enabled", "").strip()) if c]
            build.note(f"{where}: a table heading of {len(named)} columns where bandwidthTest prints 2 (Transfer Size (Bytes),"
                       f" Bandwidth(GB/s)): {one_line(line, 200)}; its table left out (another version's output?)")  # fmt: skip
            heading = None
    return found


def _bandwidthtest_failure(run: dict[str, Any], where: str) -> str | None:
    """Why a run failed: it printed Result = FAIL, exited non-zero, or stopped before its Result line."""
    lines = [line.strip() for line in run["lines"]]
    said = []
    if "Result = FAIL" in lines:
        said.append("bandwidthTest printed Result = FAIL")
    if run["exit"] not in (None, 0):
        said.append(f"it exited {run['exit']}" if isinstance(run["exit"], int) else f"exit: {run['exit']}")
    if not said and "Result = PASS" not in lines and any(BT_BANNER in line for line in lines):
        error = next((line for line in reversed(lines) if line and not line.startswith(("bandwidthTest-", "NOTE:"))), "")
        said.append(f"bandwidthTest stopped before its Result line{': ' + error[:200] if error else ''}")
    return f"{where}: {'; '.join(said)}" if said else None


def _bandwidthtest_fields(mode: str, direction: str, used: int, timing: str) -> dict[str, Any]:
    """What a series of bandwidthTest says about how it was measured."""
    way = "host to device" if direction == H2D else "device to host"
    if mode == "pageable":
        how = (f"{BT_COPIES} synchronous cudaMemcpy from malloc'd memory, each timed with the host clock and summed"
               " (a 256 MiB memset after each copy, not timed, flushes the CPU caches)")  # fmt: skip
        clock, sync, method, buffer = "gettimeofday around each cudaMemcpy, summed, per copy (bandwidthTest)", "cudaMemcpy returns when done", PER_CALL, "numpy"
    else:
        memory = "write-combined pinned memory (cudaHostAllocWriteCombined)" if mode == "pinned_wc" else "pinned memory (cudaHostAlloc)"
        how = f"{BT_COPIES} cudaMemcpyAsync on the default stream from {memory}, between two events, with no warm-up and fresh buffers"
        clock = (f"the host clock (gettimeofday, --cputiming) around {BT_COPIES} queued copies" if timing == "cpu"
                 else f"CUDA events (cudaEventElapsedTime) around {BT_COPIES} queued copies") + ", per copy (bandwidthTest)"  # fmt: skip
        sync, method, buffer = "cudaDeviceSynchronize after the stop event", STREAMED, "pinned"
    note = f"bandwidthTest: {way}, {how}; one aggregate figure per size, printed to 0.1 GB/s"
    if used > 1:
        note += f"; the sum of {used} GPUs' figures (--device=all), one GPU after another, not a rate reached at once"
    return {"host_buffer": buffer, "method": method, "transfer": HOST_TO_DEVICE if direction == H2D else DEVICE_TO_HOST,
            "clock": clock, "sync": sync, "device_clock": None,
            "params": {"tool": "bandwidthTest", "samples": 1, "copies_per_sample": BT_COPIES, "statistic": "aggregate",
                       "devices_summed": used},
            "note": note}  # fmt: skip



PEER = Peer("bandwidthTest", read_bandwidthtest, "pinned", "bandwidthtest",
            ceiling_run="run bandwidthTest --device={gpu} --memory=pinned --htod and import what it prints")
