"""The CUDA samples' bandwidthTest output as a result: its `--csv` lines or its readable tables, one run
or several kept under '### ' lines, a series per memory kind, direction and GPU."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xferbench.core.errors import XferbenchError
from xferbench.core.results import Result
from xferbench.core.spec import D2H, DEVICE_TO_HOST, H2D, HOST_TO_DEVICE, PER_CALL, STREAMED
from xferbench.reading.peers.common import (DEFAULT_SHAPE, Builder, Peer, command_words, one_line, option, peer_environment,
                                            peer_facts, peer_result, read_text)  # fmt: skip

BT_COPIES = 100  # bandwidthTest: MEMCOPY_ITERATIONS, one aggregate per size
BT_BANNER = "[CUDA Bandwidth Test]"
BT_LINE = re.compile(r"^bandwidthTest-(H2D|D2H|D2D)(-Paged|-Pinned)?(-WriteCombined)?, Bandwidth = (\S+) GB/s,"
                     r" Time = (\S+) s, Size = (\d+) bytes, NumDevsUsed = (\d+)\s*$")  # fmt: skip
BT_DEVICE = re.compile(r"^\s*Device (\d+): (.+?)\s*$")
BT_COMMAND = re.compile(r"(?:^|[\s/$#>])(bandwidthTest(?:\s+-\S+)+)\s*$")  # a shell line that ran it, in a pasted log


def _bandwidthtest_runs(path: Path) -> list[dict[str, Any]]:
    """Each run a file holds: bandwidthTest's own output (one run), or several, each under '### NAME',
    '### $ COMMAND' and '### exit N' lines (as peers/run.sh and `xferbench validate` keep them)."""
    text = read_text(path)
    runs: list[dict[str, Any]] = []

    def start(name: str | None = None, command: str | None = None) -> dict[str, Any]:
        runs.append({"name": name, "command": command, "exit": None, "lines": [], "where": f"{path} run {len(runs) + 1}"})
        return runs[-1]

    current: dict[str, Any] | None = None
    for line in text.splitlines():
        if line.startswith("### $ "):
            if current is None or current["command"] is not None or current["lines"]:
                current = start()
            current["command"] = line[6:].strip()
        elif line.startswith("### exit ") and current is not None:
            code = line[9:].strip()
            current["exit"] = int(code) if code.lstrip("-").isdigit() else code
        elif line.startswith("### "):
            current = start(name=line[4:].strip())
        elif current is not None or line.strip():
            current = current or start()
            current["lines"].append(line)
    if len(runs) == 1 and runs[0]["command"] is None and runs[0]["name"] is None:
        runs[0]["where"] = str(path)
    return runs


def read_bandwidthtest(paths: Sequence[Path], shape: tuple[int, ...] = DEFAULT_SHAPE, environment: dict[str, Any] | None = None,
                       mb: int | None = None) -> Result:  # fmt: skip
    """bandwidthTest's output, --csv or its readable tables, one or more files, as a result: a series
    per memory kind, direction and GPU, from every CSV line and table row of every run. `mb`: the bytes
    an MB/s figure's MB stands for, which output from before cuda-samples v10.1 does not state."""
    if not paths:
        raise XferbenchError("give at least one bandwidthTest output file")
    if mb is not None and mb <= 0:
        raise XferbenchError(f"--mb {mb}: give the bytes in one of the output's MB, such as {MB_CUTIL} or {MB_SDK}")
    build = Builder("bandwidthTest", shape)
    devices: dict[int, dict[str, Any]] = {}
    commands: list[str] = []
    sizes: list[int] = []
    errors: list[str] = []
    for path in paths:
        runs = _bandwidthtest_runs(Path(path))
        if not any(run["command"] or any(BT_BANNER in line or line.startswith("bandwidthTest-") or BT_HEADING.match(line) for line in run["lines"])
                   for run in runs):  # fmt: skip
            raise XferbenchError(f"{path}: not bandwidthTest's output (no '{BT_BANNER}' banner, CSV line or table); run bandwidthTest"
                                 " with --csv and save what it prints")  # fmt: skip
        for run in runs:
            where = run["where"] + (f" ({run['name']})" if run["name"] else "")
            pasted = next((m.group(1) for m in map(BT_COMMAND.search, run["lines"]) if m), None)
            words = command_words(run["command"] or pasted)
            if run["command"] or pasted:
                commands.append(run["command"] or pasted)
            named = {int(m.group(1)): m.group(2) for m in (BT_DEVICE.match(line) for line in run["lines"]) if m}
            for index, name in named.items():
                devices.setdefault(index, {"name": name})
            failure = _bandwidthtest_failure(run, where)
            if failure:
                errors.append(failure)
            chosen = option(words, ("--device", "-device"))
            single = min(named) if len(named) == 1 else int(chosen) if chosen and chosen.isdigit() else min(named, default=0)
            timing = "cpu" if "--cputiming" in words or "-cputiming" in words else "events"
            lines = [line.strip() for line in run["lines"] if line.strip().startswith("bandwidthTest-")]
            tables = _bandwidthtest_tables(run["lines"], where, mb)
            if not lines and not tables:
                said = one_line(" ".join(run["lines"]))[-80:]
                build.not_imported.append(f"{where}: no CSV line or table: run bandwidthTest again with --csv{': ' + said if said else ''}")
            figures: list[tuple[str, str, str | None, str, str, int, str]] = []
            times: dict[tuple[str, str], str] = {}  # the CSV's Time, printed with more digits than its GB/s at large sizes
            for line in lines:
                match = BT_LINE.match(line)
                if match is None and (old := BT_LINE_MB.match(line)):
                    if mb is None:
                        raise XferbenchError(f"{where}: {BT_MB_REFUSAL}")
                    kind, memory, wc, printed, _, nbytes, used = old.groups()  # its Time is left: its arithmetic is not stated
                    figures.append((line.split(",")[0], kind, memory, wc or "", _mb_to_gbps(printed, mb), int(used), nbytes))
                    continue
                if match is None:
                    build.not_imported.append(f"{where}: a line not understood: {line[:200]}")
                    continue
                kind, memory, wc, printed, seconds, nbytes, used = match.groups()
                figures.append((line.split(",")[0], kind, memory, wc or "", printed, int(used), nbytes))
                times[(line.split(",")[0], nbytes)] = seconds
            for label, kind, memory, wc, printed, used, nbytes in [*figures, *tables]:
                if kind == "D2D":
                    build.not_imported.append(f"{where}: {label} at {nbytes} B: a copy within the GPU, not host<->device")
                    continue
                nbytes = int(nbytes)
                if nbytes <= 0:
                    build.not_imported.append(f"{where}: {label} at {nbytes} B: no bytes moved")
                    continue
                sizes.append(nbytes)
                device = "cuda:all" if used > 1 else f"cuda:{single}"
                mode = "pageable" if memory == "-Paged" else "pinned_wc" if wc else "pinned"
                direction = H2D if kind == "H2D" else D2H
                fields = _bandwidthtest_fields(mode, direction, used, timing)
                try:
                    gbps = float(printed)
                except ValueError:
                    gbps = math.nan
                gbps = _more_precise(gbps, times.get((label, str(nbytes))), nbytes)
                if not math.isfinite(gbps) or gbps <= 0:
                    why = f"bandwidthTest printed {printed} GB/s" + (": below its 0.1 GB/s resolution" if gbps == 0 else "")
                    build.gap(mode, device, direction, nbytes, fields, "skipped", why)
                    continue
                build.figure(mode, device, direction, nbytes, fields, gbps, 1, BT_COPIES)
            build.end_run(failure)
    series = build.done()
    if not any(s.ok_points() for s in series):
        listed = "; ".join([*errors, *build.not_imported][:3]) or "nothing to read"
        raise XferbenchError(f"no host<->device figure in the bandwidthTest output ({one_line(listed)}); run bandwidthTest --htod --csv"
                             " and give what it printed")  # fmt: skip
    for s in series:
        if s.device != "cuda:all":
            s.device_name = (devices.get(int(s.device.split(":")[1])) or {}).get("name")
    peer = peer_facts("bandwidthTest", [], [], commands, paths, sizes, build.not_imported, errors=errors)
    return peer_result(peer_environment(environment, None, devices, {}, peer), series, paths)


def _more_precise(gbps: float, seconds: str | None, nbytes: int) -> float:
    """bandwidthTest's CSV prints GB/s to 0.1 and, from the same unrounded figure, Time = bytes / GB/s
    to 10 µs (printResultsCSV): at large sizes Time holds more digits. The figure from whichever was
    printed with the smaller relative rounding."""
    try:
        time_s = float(seconds) if seconds is not None else math.nan
    except ValueError:
        time_s = math.nan
    if not (math.isfinite(gbps) and gbps > 0 and math.isfinite(time_s) and time_s > 0):
        return gbps
    # Time only where its rounding is clearly the finer (at 1 GiB about 4x): near a tie, the printed GB/s stands
    return nbytes / time_s / 1e9 if 2 * 0.000005 / time_s < 0.05 / gbps else gbps


# bandwidthTest's readable table (printResultsReadable, cuda-samples v10.1 to v12.8): a heading, the
# memory kind, then "Transfer Size (Bytes)<TAB>Bandwidth(GB/s)" (after the write-combined line, which
# ends without a newline) and a row per size, to 0.1 GB/s.
BT_HEADING = re.compile(r"^\s*(Host to Device|Device to Host|Device to Device) Bandwidth, (\d+) Device\(s\)\s*$")
BT_MEMORY = re.compile(r"^\s*(PINNED|PAGEABLE) Memory Transfers\s*$")
BT_COLUMNS = re.compile(r"^\s*(Write-Combined Memory Writes are Enabled)?\s*Transfer Size \(Bytes\)\s+Bandwidth\((GB|MB)/s\)\s*$")
BT_ROW = re.compile(r"^\s*(\d+)\s+(\S+)\s*$")
BT_LINE_MB = re.compile(r"^bandwidthTest-(H2D|D2H|D2D)(-Paged|-Pinned)?(-WriteCombined)?, Bandwidth = (\S+) MB/s,"
                        r" Time = (\S+) s, Size = (\d+) bytes, NumDevsUsed = (\d+)\s*$")  # fmt: skip
MB_CUTIL, MB_SDK = 2**20, 1_024_000  # an MB in the cutil-era samples; in the sdkTimer era, bytes x 1000/1024 per 2^20
BT_KINDS = {"Host to Device": "H2D", "Device to Host": "D2H", "Device to Device": "D2D"}
# The samples before v10.1 print MB/s and define it by their arithmetic alone (bytes x 1024/1000 / 2^20 per second):
# a figure in it cannot be set beside GB/s without guessing which MB was meant.
BT_MB_REFUSAL = (f"bandwidthTest printed MB/s, as cuda-samples before v10.1 did, with an MB it does not state: give --mb"
                 f" {MB_SDK} for the sdkTimer-era samples (up to v10.0) or --mb {MB_CUTIL} for the older cutil-era ones,"
                 " or run a bandwidthTest from v10.1 or later (GB/s, 10^9 B/s) with --csv")  # fmt: skip


def _mb_to_gbps(printed: str, mb: int) -> str:
    """An MB/s figure as the GB/s text the rest of the import reads, with the MB the user settled."""
    try:
        return repr(float(printed) * mb / 1e9)
    except ValueError:
        return printed


def _bandwidthtest_tables(lines: list[str], where: str, mb: int | None = None) -> list[tuple[str, str, str | None, str, str, int, str]]:
    """The figures of bandwidthTest's readable tables in one run, as (label, kind, memory, wc, printed
    GB/s, devices summed, bytes), the same as its CSV lines give them."""
    found: list[tuple[str, str, str | None, str, str, int, str]] = []
    heading: re.Match[str] | None = None
    memory: str | None = None
    table: tuple[str, str | None, str, int] | None = None  # kind, memory, wc, devices of the table under way
    in_mb = False  # the table under way prints MB/s
    for line in lines:
        if table is not None:
            row = BT_ROW.match(line)
            if row:
                kind, mem, wc, used = table
                printed = _mb_to_gbps(row.group(2), mb) if in_mb and mb else row.group(2)
                found.append((f"bandwidthTest-{kind}{mem or ''}{'-WriteCombined' if wc else ''}", kind, mem, wc, printed, used,
                              row.group(1)))  # fmt: skip
                continue
            table = None
        if match := BT_HEADING.match(line):
            heading, memory = match, None
        elif (match := BT_MEMORY.match(line)) and heading is not None:
            memory = "-Pinned" if match.group(1) == "PINNED" else "-Paged"
        elif (match := BT_COLUMNS.match(line)) and heading is not None:
            in_mb = match.group(2) == "MB"
            if in_mb and mb is None:
                raise XferbenchError(f"{where}: {BT_MB_REFUSAL}")
            kind = BT_KINDS[heading.group(1)]
            table = (kind, None if kind == "D2D" else memory, "wc" if match.group(1) else "", int(heading.group(2)))
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



PEER = Peer("bandwidthTest", read_bandwidthtest, "pinned")
