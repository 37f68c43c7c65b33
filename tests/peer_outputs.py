"""Peers' output as the tools print it, to import in tests.

nvbandwidth v0.5 to v0.8 with -j (json_output.cpp; before v0.8 with no "GPU Device list", so no GPU
name, PCI address or host): one object under "nvbandwidth", printed by JsonCpp's
styled writer (keys in sorted order, three-space indent, `"key" : value`, a short array of scalars on
one line) and then a blank line; matrix cells are strings ("N/A" where nothing was measured); a
testcase is appended as "Running" and completed in place with its matrix and "Passed", left at
"Running" with an "Error" entry after it when it throws, or added as "Waived"; a fatal CUDA or NVML
error sets "error" at the top, prints what was recorded so far, and the process exits 1.

bandwidthTest --csv (CUDA samples v12.8): a banner, the device lines, the mode, shmoo's progress dots,
one CSV line per size, "Result = PASS" or "Result = FAIL", and a closing note.

nvbandwidth's text, without -j: v0.8 as output.cpp and inline_common.h print it (the host's name
above "Device N: NAME (domain:bus:device)", a testcase as "Running NAME.", its description, a matrix
of a two-wide row label and ten-wide cells to 0.01 GB/s, "SUM NAME TOTAL", MIN/MAX/AVG with -v, a
waived testcase as a bare "Waived: ", an error as "Error: MESSAGE", the closing note last); v0.5 as
its output.cpp prints it (no host name or PCI address, the note first); v0.4 as its nvbandwidth.cpp
and common.h print it ("Waiving NAME.", a row label of no width, "ERROR: MESSAGE").

bandwidthTest's readable text (CUDA samples v12.8 printResultsReadable, the same from v10.1): a
heading and memory kind per direction, "Transfer Size (Bytes)<TAB>Bandwidth(GB/s)" and a row per size
to 0.1 GB/s; the samples before v10.1 print the same table in MB/s.

peers/run.sh keeps several runs of each in one file: nvbandwidth's as a JSON document of runs, each
with its size, command, exit code and output; bandwidthTest's as text, each run under "### NAME",
"### $ COMMAND" and "### exit N" lines.
"""

from __future__ import annotations

import json
from typing import Any

H100 = "NVIDIA H100 80GB HBM3"
NVB = "/tmp/peers-build/nvbandwidth/nvbandwidth"
BT = "/tmp/peers-build/bandwidthTest/bandwidthTest"
H2D_CE, D2H_CE = "host_to_device_memcpy_ce", "device_to_host_memcpy_ce"
DESCRIPTIONS = {"host_to_device_memcpy_ce": "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)",
                "device_to_host_memcpy_ce": "memcpy CE CPU(row) <- GPU(column) bandwidth (GB/s)",
                "host_to_device_bidirectional_memcpy_ce": "memcpy CE CPU(row) <-> GPU(column) bandwidth (GB/s)",
                "host_to_device_memcpy_sm": "memcpy SM CPU(row) -> GPU(column) bandwidth (GB/s)"}  # fmt: skip
NO_DEVICE = ("[CUDA_ERROR_NO_DEVICE] no CUDA-capable device is detected in expression cuInit(0) in int main(int, char**)() :"
             " /tmp/peers-build/src/nvbandwidth.cpp:270\n")  # fmt: skip
ILLEGAL = ("[CUDA_ERROR_ILLEGAL_ADDRESS] an illegal memory access was encountered in expression cuStreamSynchronize(stream) in"
           " virtual CUresult NodeHelperSingle::streamSynchronizeWrapper(CUstream) const() : /tmp/peers-build/src/memcpy.cpp:205\n")  # fmt: skip


def styled(value: Any, indent: str = "") -> str:
    """A value as JsonCpp's StyledWriter prints it (Json::Value::toStyledString)."""
    inner = indent + "   "
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f'{inner}{json.dumps(k)} : {styled(v, inner)}' for k, v in sorted(value.items())]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        parts = [styled(v, inner) for v in value]
        nested = any(isinstance(v, (dict, list)) and v for v in value)
        if not nested and len(value) * 3 < 74 and 4 + 2 * (len(value) - 1) + sum(map(len, parts)) <= 74:
            return "[ " + ", ".join(parts) + " ]"
        return "[\n" + ",\n".join(inner + p for p in parts) + "\n" + indent + "]"
    if isinstance(value, float):  # JsonCpp without useSpecialFloats: NaN as null, infinities as out-of-range numbers
        return "null" if value != value else "1e+9999" if value == float("inf") else "-1e+9999" if value == -float("inf") else repr(value)
    return json.dumps(value)


def passed(name: str, *cells: str) -> list[dict[str, Any]]:
    """A testcase that ran: a matrix of one row, a cell per GPU (a string, or N/A)."""
    total = sum(float(c) for c in cells if c != "N/A")
    return [{"bandwidth_description": DESCRIPTIONS.get(name, ""), "bandwidth_matrix": [list(cells)], "name": name,
             "status": "Passed", "sum": total}]  # fmt: skip


def waived(name: str) -> list[dict[str, Any]]:
    return [{"name": name, "status": "Waived"}]


def errored(name: str) -> list[dict[str, Any]]:
    """A testcase that threw: left at Running, and an Error entry appended after it (the status is
    set on the last entry only if the root holds "testcases", which it never does)."""
    return [{"name": name, "status": "Running"}, {"name": name, "status": "Error"}]


def running(name: str) -> list[dict[str, Any]]:
    """The testcase under way when a fatal error stopped the process."""
    return [{"name": name, "status": "Running"}]


def not_found(name: str) -> list[dict[str, Any]]:
    """A -t name nvbandwidth does not know."""
    return [{"name": name, "status": "ERROR"}]


# nvbandwidth -j by version (json_output.cpp, nvbandwidth.cpp, common.h): v0.5 to v0.7 write no device
# list into the JSON (JsonOutput does not override recordDevices, and the text it falls back to is
# silenced under -j); v0.8 adds "GPU Device list". The default -b is 64 MiB before v0.7, 512 MiB from it.
NVB_NO_DEVICE_LIST = ("v0.5", "v0.6", "v0.7")
NVB_DEFAULT_MIB = {"v0.5": 64, "v0.6": 64}


def nvbandwidth(*testcases: list[dict[str, Any]], gpus: tuple[tuple[str, str], ...] = ((H100, "00000000:1b:00"),),
                host: str = "node07", version: str = "v0.8", mib: int | None = None, error: str | None = None,
                started: bool = True, before: str = "", after: str = "") -> str:  # fmt: skip
    """nvbandwidth -j's stdout, with any text the run printed around it, as `version` (v0.5 to v0.8)
    writes it; `mib`: the run's -b, the version's default if None. `started`: False when a fatal error
    came at cuInit, before the versions and devices were recorded."""
    default = NVB_DEFAULT_MIB.get(version, 512)
    mib = default if mib is None else mib
    root: dict[str, Any] = {"git_version": "", "version": version}
    if started:
        root.update({"CUDA Runtime Version": 12080, "Driver Version": "570.124.06"})
        if version not in NVB_NO_DEVICE_LIST:
            root["GPU Device list"] = [f"{i}: {name} ({bus}): ({host})" for i, (name, bus) in enumerate(gpus)]
        if mib < default:
            root["warning"] = ("NOTE: You have chosen a buffer size that is smaller than the default buffer size. It is suggested"
                               " to use the default buffer size (64MB) to achieve maximal peak bandwidth.")  # fmt: skip
    if error:
        root["error"] = error
    cases = [entry for case in testcases for entry in case]
    if cases:
        root["testcases"] = cases
    return before + styled({"nvbandwidth": root}) + "\n\n" + after


def kit_runs(*runs: tuple[int, str | None, int], tests: str = f"{H2D_CE} {D2H_CE}") -> str:
    """peers/run.sh's nvbandwidth.json: (MiB, the run's stdout and stderr or None where it printed no
    JSON, exit code) per run."""
    listed = []
    for mib, stdout, code in runs:
        run: dict[str, Any] = {"buffer_size_mib": mib, "buffer_size_bytes": mib * 2**20, "command": f"{NVB} -j -b {mib} -t {tests}",
                               "exit_code": code, "seconds": 4.2}  # fmt: skip
        if stdout is None:
            run.update(output=None, stdout_stderr_raw="Segmentation fault (core dumped)\n")
        else:
            start = stdout.index("{")
            run["output"], end = json.JSONDecoder().raw_decode(stdout, start)
            if stdout[:start].strip():
                run["text_before_json"] = stdout[:start].strip()
            if stdout[end:].strip():
                run["text_after_json"] = stdout[end:].strip()
        listed.append(run)
    return json.dumps({"tool": "nvbandwidth v0.8", "binary": NVB, "build_info": ["nvcc: 12.8"],
                       "note": "bandwidth_matrix values are GB/s (10^9 B/s): median over testSamples of loopCount copies each",
                       "runs": listed}, indent=1) + "\n"  # fmt: skip


def csv_line(config: str, gbps: float, size: int, devices: int = 1) -> str:
    """One CSV line as printResultsCSV prints it: the measured bandwidth to 0.1 GB/s, and the time of one
    copy computed from the same unrounded figure, to 10 us."""
    seconds = size / (gbps * 1e9) if gbps else float("inf")
    return f"bandwidthTest-{config}, Bandwidth = {gbps:.1f} GB/s, Time = {seconds:.5f} s, Size = {size} bytes, NumDevsUsed = {devices}"


def bandwidthtest(*lines: str, devices: tuple[str, ...] = (H100,), first: int = 0, mode: str = "Range", result: str = "PASS",
                  tail: str | None = None) -> str:  # fmt: skip
    """bandwidthTest --csv's stdout; `tail` replaces the Result line and note (a run that stopped early)."""
    text = "[CUDA Bandwidth Test] - Starting...\n"
    if len(devices) > 1:
        text += "\n!!!!!Cumulative Bandwidth to be computed from all the devices !!!!!!\n\n"
    text += "Running on...\n\n" + "".join(f" Device {first + i}: {name}\n" for i, name in enumerate(devices)) + f" {mode} Mode\n\n"
    if mode == "Shmoo":
        text += "." * len(lines) + "\n"
    text += "".join(line + "\n" for line in lines)
    if tail is not None:
        return text + tail
    return (text + f"Result = {result}\n\nNOTE: The CUDA Samples are not meant for performance measurements. Results may vary"
            " when GPU Boost is enabled.\n")  # fmt: skip


def kit_sections(*runs: tuple[str, str, str, int | None]) -> str:
    """peers/run.sh's bandwidthTest.txt: (name, the arguments, the run's stdout, exit code; None: as
    Result says) per run."""
    parts = []
    for name, arguments, stdout, code in runs:
        code = (1 if "Result = FAIL" in stdout else 0) if code is None else code
        parts.append(f"### {name}\n### $ {BT} {arguments}\n### exit {code}\n{stdout}\n")
    return "".join(parts)


TESTCASE_ERROR = "Could not allocate 512 MiB of pinned host memory"  # a message a testcase may throw
NVB_NOTE_OLD = ("NOTE: This tool reports current measured bandwidth on your system.\nAdditional system-specific tuning may be required to"
                " achieve maximal peak bandwidth.\n\n")  # fmt: skip
NVB_NOTE = ("NOTE: The reported results may not reflect the full capabilities of the platform.\nPerformance can vary with software"
            " drivers, hardware clocks, and system topology.\n\n")  # fmt: skip


def _matrix_text(name: str, cells: list[str], version: str, verbose: bool) -> str:
    """PeerValueMatrix's operator<< for one row, in std::fixed to 2 places."""
    values = [0.0 if c == "N/A" else float(c) for c in cells]
    head = (" " if version == "v0.4" else "  ") + "".join(f"{i:>10}" for i in range(len(cells))) + "\n"
    label = "0" if version == "v0.4" else f"{0:>2}"
    row = label + "".join(f"{'N/A':>10}" if c == "N/A" else f"{float(c):>10.2f}" for c in cells) + "\n"
    text = head + row + "\n" + f"SUM {name} {sum(values):.2f}\n"
    if verbose:
        count = sum(1 for v in values if v > 0)
        text += f"MIN {name} {min(values):.2f}\nMAX {name} {max(values):.2f}\nAVG {name} {sum(values) / count if count else float('nan'):.2f}\n"
    return text


def nvbandwidth_text(*testcases: list[dict[str, Any]], gpus: tuple[tuple[str, str], ...] = ((H100, "00000000:1b:00"),),
                     host: str = "node07", version: str = "v0.8", mib: int | None = None, error: str | None = None,
                     started: bool = True, verbose: bool = False, message: str = TESTCASE_ERROR, before: str = "",
                     after: str = "") -> str:  # fmt: skip
    """nvbandwidth's stdout and stderr without -j, for the testcases passed() and the others build;
    `version`: v0.8, v0.5 or v0.4. `error`: a fatal error, printed where the process stopped."""
    old = version in ("v0.4", "v0.5")
    default = 64 if old else 512
    text = before + f"nvbandwidth Version: {version}\nBuilt from Git version: \n\n"
    if old:
        text += NVB_NOTE_OLD
    if not started:
        return text + (error or "")
    if mib is not None and mib < default:
        text += ("NOTE: You have chosen a buffer size that is smaller than the default buffer size. \nIt is suggested to use the default"
                 " buffer size (64MB) to achieve maximal peak bandwidth.\n\n" if version == "v0.4" else
                 "NOTE: You have chosen a buffer size that is smaller than the default buffer size. It is suggested to use the default"
                 " buffer size (64MB) to achieve maximal peak bandwidth.\n")  # fmt: skip
    text += "CUDA Runtime Version: 12080\nCUDA Driver Version: 12080\nDriver Version: 570.124.06\n\n"
    if not old:
        text += host + "\n"
    text += "".join(f"Device {i}: {name}" + ("" if old else f" ({bus})") + "\n" for i, (name, bus) in enumerate(gpus)) + "\n"
    for case in testcases:
        first = case[0]
        name, status = first["name"], first["status"]
        if status == "ERROR":
            text += f"ERROR: Testcase {name} not found!\n"
        elif status == "Waived":
            text += f"Waiving {name}.\n\n" if version == "v0.4" else "Waived: \n"
        else:
            text += f"Running {name}.\n"
            matrix = first.get("bandwidth_matrix")
            if matrix:
                cells = matrix[0]
                if verbose:
                    for i, cell in enumerate(cells):
                        if cell != "N/A":
                            way = f"Host -> Device {i}" if name.startswith("host") else f"Device {i} -> Host"
                            text += "".join(f"\tSample {n}: {way}: {float(cell):.2f} GB/s\n" for n in range(3))
                text += first["bandwidth_description"] + "\n" + _matrix_text(name, cells, version, verbose) + "\n"
            if any(e["status"] == "Error" for e in case[1:]):
                text += ("ERROR: " if version == "v0.4" else "Error: ") + message + "\n"
    if error:
        return text + error
    return text + ("" if old else NVB_NOTE) + after


def bt_table(kind: str, memory: str, rows: tuple[tuple[int, float], ...], devices: int = 1, wc: bool = False, unit: str = "GB") -> str:
    """printResultsReadable: `kind` as bandwidthTest names it ("Host to Device"), `memory` PINNED or
    PAGEABLE, (bytes, GB/s) per row; `unit` MB for the samples before v10.1."""
    text = f" {kind} Bandwidth, {devices} Device(s)\n {memory} Memory Transfers\n"
    if wc:
        text += " Write-Combined Memory Writes are Enabled"  # no newline: the heading below runs on from it
    text += f"   Transfer Size (Bytes)\tBandwidth({unit}/s)\n"
    text += "".join(f"   {size}\t\t\t{chr(9) if size < 10000 else ''}{gbps:.1f}\n" for size, gbps in rows)
    return text + "\n"


def bandwidthtest_text(*tables: str, devices: tuple[str, ...] = (H100,), first: int = 0, mode: str = "Quick", every: bool = False,
                       result: str = "PASS", tail: str | None = None, before: str = "", after: str = "") -> str:  # fmt: skip
    """bandwidthTest's stdout without --csv; `every`: --device=all; shmoo's progress dots, one per size
    and GPU, come before each table."""
    text = before + "[CUDA Bandwidth Test] - Starting...\n"
    if every:
        text += "\n!!!!!Cumulative Bandwidth to be computed from all the devices !!!!!!\n\n"
    text += "Running on...\n\n" + "".join(f" Device {first + i}: {name}\n" for i, name in enumerate(devices)) + f" {mode} Mode\n\n"
    for table in tables:
        if mode == "Shmoo":
            text += "." * (table.count("\t\t\t") * len(devices)) + "\n"
        text += table
    if tail is not None:
        return text + tail
    return (text + f"Result = {result}\n\nNOTE: The CUDA Samples are not meant for performance measurements. Results may vary"
            " when GPU Boost is enabled.\n" + after)  # fmt: skip
