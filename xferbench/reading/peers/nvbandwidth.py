"""NVIDIA nvbandwidth's output as a result: its `-j` JSON, its text, or peers/run.sh's and `xferbench
validate`'s list of runs, a series per host<->device testcase and GPU."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xferbench.core.errors import XferbenchError
from xferbench.core.results import Result
from xferbench.core.spec import D2H, DEVICE_TO_HOST, H2D, HOST_TO_DEVICE, STREAMED
from xferbench.reading.peers.common import (DEFAULT_SHAPE, Builder, Peer, as_int, command_words, json_object, one_line, option,
                                            peer_environment, peer_facts, peer_result, read_text)  # fmt: skip

NVB_COPIES, NVB_SAMPLES = 16, 3  # nvbandwidth's defaults: --loopCount copies per sample, -i samples
MAX_BUFFER_MIB = 2**20  # --buffer-size: 1 TiB, more than any GPU holds
# nvbandwidth's testcases between the host and one GPU, by name: direction, whether it copies the other
# way meanwhile (bidirectional), and copy engine or SM kernel.
NVB_TESTCASE = re.compile(r"^(host_to_device|device_to_host)_(bidirectional_)?memcpy_(ce|sm)$")
# "0: NVIDIA H100 80GB HBM3 (00000000:1b:00): (node07)"; versions before v0.8 print no host name, and
# the text of v0.4 and v0.5 no PCI address.
NVB_DEVICE = re.compile(r"^\s*(\d+): (.*?)(?: \(([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)\))?(?:: \((.*)\))?\s*$")


def _nvb_version(version: str | None) -> tuple[int, int] | None:
    """nvbandwidth's version as (major, minor), since its defaults and methods change between them;
    None for a version not understood."""
    found = re.match(r"v?(\d+)\.(\d+)", version or "")
    return (int(found.group(1)), int(found.group(2))) if found else None


def _default_mib(version: str | None) -> int | None:
    """nvbandwidth's default buffer (common.h defaultBufferSize): 512 MiB from v0.7, 64 MiB before; None
    for a version not understood."""
    found = _nvb_version(version)
    if found is None:
        return None
    return 512 if found >= (0, 7) else 64


def _sm_threshold_mib(version: str | None) -> int | None:
    """The size from which nvbandwidth's SM copy kernel strides over every SM and copies a truncated
    size (kernels.cu): defaultBufferSize up to v0.7 (64 MiB, then 512 MiB from v0.7), and v0.8's own
    smallBufferThreshold of 64 MiB; None for a version not understood."""
    found = _nvb_version(version)
    if found is None:
        return None
    return 64 if found >= (0, 8) else _default_mib(version)


def _sm_split_warp(version: str | None) -> bool:
    """From v0.7 a bidirectional SM testcase is one split-warp kernel copying both ways, its figure
    halved (MemcpyInitiatorSMSplitWarp); before, a second SM copy of twice the size ran beside it."""
    found = _nvb_version(version)
    return found is not None and found >= (0, 7)


def _nvbandwidth_runs(path: Path) -> list[dict[str, Any]]:
    """Each run a file holds: nvbandwidth's own output (one run), or a list of runs each with its
    size, command, exit code and output (as peers/run.sh and `xferbench validate` keep them)."""
    text = read_text(path)
    document = json_object(text, ("nvbandwidth", "runs"))
    if isinstance(document, dict) and isinstance(document.get("runs"), list):
        runs = []
        for number, run in enumerate(document["runs"], 1):
            if not isinstance(run, dict):
                raise XferbenchError(f"{path}: run {number} of its 'runs' list is not an object; give the file run.sh or validate wrote")
            raw = run.get("stdout_stderr_raw")
            output = run.get("output") if isinstance(run.get("output"), dict) else json_object(str(raw or ""), ("nvbandwidth",))
            runs.append({"output": output, "mib": as_int(run.get("buffer_size_mib")), "command": run.get("command"),
                         "exit": run.get("exit_code"), "raw": raw, "where": f"{path} run {number}"})  # fmt: skip
        return runs
    if not isinstance(document, dict) or not isinstance(document.get("nvbandwidth"), dict):
        if re.search(r'\{\s*"(nvbandwidth|tool|runs)"\s*:', text):
            raise XferbenchError(f"{path}: nvbandwidth's JSON in it is cut short (it does not parse); save the whole output of nvbandwidth -j")
        if NVB_TEXT_MARK.search(text):
            return _nvbandwidth_text_runs(text, path)
        raise XferbenchError(f"{path}: not nvbandwidth's JSON output nor its text (no 'nvbandwidth' object, 'nvbandwidth Version:'"
                             " line or 'Running TESTCASE.' line); run nvbandwidth with -j and save what it prints")  # fmt: skip
    return [{"output": document, "mib": None, "command": None, "exit": None, "raw": None, "where": str(path), "form": "JSON"}]


# nvbandwidth's text, as output.cpp (v0.5 to v0.8) and nvbandwidth.cpp (v0.4) print it.
NVB_TEXT_MARK = re.compile(r"^\s*(nvbandwidth Version: \S+|Running [a-z0-9_]+\.)\s*$", re.M)
NVB_TEXT_FACT = re.compile(r"^(nvbandwidth Version|Built from Git version|CUDA Runtime Version|Driver Version): ?(.*)$")
NVB_TEXT_FATAL = re.compile(r"^\[[A-Z_]*ERROR[A-Z_]*\] ")  # CU_ASSERT and NVML_ASSERT, on stderr, before the process exits
NVB_COMMAND = re.compile(r"(?:^|[\s/$#>])nvbandwidth((?:\s+-\S*.*)?)$")  # a shell line that ran it, in a pasted log


def _nvbandwidth_text_runs(text: str, path: Path) -> list[dict[str, Any]]:
    """nvbandwidth's plain text as runs shaped like its JSON, so one reader serves both: each
    'nvbandwidth Version:' header starts a run, and the shell line that ran it, where pasted above it,
    is its command."""
    segments: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.strip().startswith("nvbandwidth Version:") and any(NVB_TEXT_MARK.match(x) for x in segments[-1]):
            before = segments[-1]
            while before and not before[-1].strip():
                before.pop()
            # the shell line just above this header ran this run, not the one before
            segments.append([before.pop()] if before and _nvbandwidth_command(before[-1]) else [])
        segments[-1].append(line)
    runs = []
    for number, lines in enumerate(segments, 1):
        where = str(path) if len(segments) == 1 else f"{path} run {number}"
        command = next((m.group(0).strip() for m in map(_nvbandwidth_command, lines) if m), None)
        root, notes = _nvbandwidth_text(lines, where)
        runs.append({"output": {"nvbandwidth": root}, "mib": None, "command": command, "exit": None, "raw": None, "where": where,
                     "form": "text", "notes": notes})  # fmt: skip
    return runs


def _nvbandwidth_command(line: str) -> re.Match[str] | None:
    """A shell line that ran nvbandwidth with options; not its own 'nvbandwidth Version:' line."""
    stripped = line.strip()
    if stripped.startswith("nvbandwidth Version") or "nvbandwidth" not in stripped:
        return None
    found = NVB_COMMAND.search(stripped)
    if found is None or not found.group(1):
        return None
    start = stripped.rfind(" ", 0, found.start(1)) + 1
    return re.match(r".*", stripped[start:].lstrip("$#> "))


def _nvbandwidth_text(lines: list[str], where: str) -> tuple[dict[str, Any], list[str]]:
    """One run of nvbandwidth's text as its JSON root, and what was not understood. A testcase's
    matrix is its description line, a header of column numbers, then a row per source (a label and
    a cell per GPU, N/A where nothing was measured) up to a blank line; the SUM line follows."""
    root: dict[str, Any] = {"testcases": []}
    devices: list[str] = []
    notes: list[str] = []
    current: dict[str, Any] | None = None
    columns: int | None = None  # the matrix under way: its column count once its header is read
    previous = ""
    for raw in lines:
        line = raw.strip()
        fact = NVB_TEXT_FACT.match(line)
        device = re.match(r"^Device (\d+): (.+)$", line)
        if current is not None and "bandwidth_matrix" in current and not current.get("_done"):
            matrix = current["bandwidth_matrix"]
            if columns is None:
                words = line.split()
                if words and all(w.isdigit() for w in words):
                    columns = len(words)
                    continue
                notes.append(f"{where}: {current['name']}: no column header under its description; its matrix left out")
                del current["bandwidth_matrix"]
            elif line:
                cells = _nvbandwidth_row(raw, columns)
                if cells is None:
                    notes.append(f"{where}: {current['name']}: a matrix row not understood: {line[:200]}")
                else:
                    matrix.append(cells)
                continue
            else:
                current["status"] = "Passed" if matrix else current["status"]
                if not matrix:
                    del current["bandwidth_matrix"]
                columns, current["_done"] = None, True
                continue
        if fact:
            key, value = fact.groups()
            if key == "nvbandwidth Version":
                root["version"] = value.strip()
            elif key == "Built from Git version":
                root["git_version"] = value.strip()
            elif key == "CUDA Runtime Version":
                root[key] = int(value) if value.strip().isdigit() else value.strip()
            else:
                root[key] = value.strip()
        elif device:
            if not devices and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", previous) and not previous.isdigit():
                root["Hostname"] = previous  # v0.8 prints the host's name above its device list
            devices.append(f"{device.group(1)}: {device.group(2)}")
        elif found := re.match(r"^(Running|Waiving) ([A-Za-z0-9_]+)\.$", line):
            current = {"name": found.group(2), "status": "Running" if found.group(1) == "Running" else "Waived"}
            root["testcases"].append(current)
            current = current if found.group(1) == "Running" else None
        elif re.match(r"^Waived:", line):
            notes.append(f"{where}: a testcase was waived (nvbandwidth's text does not name it; -j does): it does not apply to this machine")
        elif found := re.match(r"^ERROR: Testcase (?:index )?(\S+) (?:not found!|out of bound!)$", line):
            root["testcases"].append({"name": found.group(1), "status": "ERROR"})
        elif found := re.match(r"^(?:Error|ERROR): (.*)$", line):
            if current is not None and not current.get("_done"):
                root["testcases"].append({"name": current["name"], "status": "Error", "message": found.group(1)})
                current = None
            else:
                notes.append(f"{where}: an error outside a testcase: {line[:200]}")
        elif NVB_TEXT_FATAL.match(line):
            root.setdefault("error", line)
        elif "smaller than the default buffer size" in line:
            root["warning"] = line
        elif current is not None and not current.get("_done") and line.endswith("(GB/s)") and "bandwidth" in line:
            current["bandwidth_description"] = line
            current["bandwidth_matrix"] = []
            columns = None
        elif found := re.match(r"^SUM (\S+) (\S+)$", line):
            if current is not None and current.get("name") == found.group(1):
                current["sum"] = float(found.group(2)) if re.fullmatch(r"-?[0-9.]+", found.group(2)) else found.group(2)
        previous = line
    if current is not None and "bandwidth_matrix" in current and current["bandwidth_matrix"]:
        current["status"] = "Passed"  # the paste ended at the matrix's last row
    for entry in root["testcases"]:
        entry.pop("_done", None)
    if devices:
        root["GPU Device list"] = devices
    if not root["testcases"]:
        del root["testcases"]
    return root, notes


def _nvbandwidth_row(raw: str, columns: int) -> list[str] | None:
    """A matrix row's cells. v0.4 prints the row label with no width, so a cell 10 characters wide
    runs into it: then the cells are read as the last `columns` fields of 10 characters."""
    words = raw.split()
    if len(words) == columns + 1 and words[0].isdigit():
        return words[1:]
    line = raw.rstrip()
    if len(line) > 10 * columns and line[: len(line) - 10 * columns].strip().isdigit():
        cells = [line[len(line) - 10 * (columns - i): len(line) - 10 * (columns - i - 1)].strip() for i in range(columns)]
        return cells if all(cells) else None
    return None


def read_nvbandwidth(paths: Sequence[Path], buffer_size_mib: int | None = None, shape: tuple[int, ...] = DEFAULT_SHAPE,
                     environment: dict[str, Any] | None = None) -> Result:  # fmt: skip
    """nvbandwidth's -j output or its text, one or more files, as a result: a series per host<->device
    testcase and GPU. Neither form records the buffer size: a run kept with its size
    or command gives it, else `buffer_size_mib` (the run's -b), else the version's default, said so."""
    if not paths:
        raise XferbenchError("give at least one nvbandwidth output file")
    if buffer_size_mib is not None and not 1 <= buffer_size_mib <= MAX_BUFFER_MIB:
        raise XferbenchError(f"--buffer-size {buffer_size_mib}: give nvbandwidth's -b, a whole number of MiB from 1 to"
                             f" {MAX_BUFFER_MIB:,} (1 TiB, beyond any GPU's memory)")  # fmt: skip
    build = Builder("nvbandwidth", shape)
    devices: dict[int, dict[str, Any]] = {}
    host: str | None = None
    facts: dict[str, Any] = {}
    versions: list[str | None] = []
    git_versions: list[str | None] = []
    commands: list[str] = []
    sizes: list[int] = []
    warnings: list[str] = []
    errors: list[str] = []
    unnamed: list[str] = []
    for path in paths:
        for run in _nvbandwidth_runs(Path(path)):
            build.not_imported.extend(run.get("notes") or [])
            form = run.get("form") or "JSON"
            words = command_words(run["command"])
            if run["command"]:
                commands.append(str(run["command"]))
            given = as_int(option(words, ("-b", "--bufferSize")))
            exited = f"exit {run['exit']}" if run["exit"] is not None else "exit not recorded"
            root = run["output"].get("nvbandwidth") if isinstance(run["output"], dict) else None
            if not isinstance(root, dict):
                raw = str(run.get("raw") or "")
                said = "its JSON is cut short" if re.search(r'\{\s*"nvbandwidth"\s*:', raw) else one_line(raw)[:200]
                size = f" (-b {run['mib'] or given})" if run["mib"] or given else ""
                build.not_imported.append(f"{run['where']}{size}: no JSON in nvbandwidth's output ({exited}){': ' + said if said else ''}")
                continue
            version = str(root.get("version") or "") or None
            versions.append(version)
            git_versions.append(str(root.get("git_version") or "") or None)
            for line in root.get("GPU Device list") or []:
                found = NVB_DEVICE.match(str(line))
                if found:
                    index, name, domain, bus, device, seen_on = found.groups()
                    # nvbandwidth prints domain:bus:device; a GPU is PCI function 0.
                    pci = f"{int(domain, 16):08x}:{int(bus, 16):02x}:{int(device, 16):02x}.0" if domain else None
                    devices[int(index)] = {"name": name, "pci_bus_id": pci}
                    host = seen_on or host
                else:
                    build.not_imported.append(f"{run['where']}: a GPU device list line not understood: {one_line(line)}")
            if form == "JSON" and "GPU Device list" not in root:
                # v0.5 to v0.7 keep their device list out of -j: the GPUs are the matrices' columns, unnamed
                for index in range(_nvbandwidth_columns(root)):
                    devices.setdefault(index, {"name": None, "pci_bus_id": None})
                if _nvbandwidth_columns(root):
                    unnamed.append(f"nvbandwidth {version or '(no version)'}'s JSON names no GPU (its device list is"
                                   " printed in its text only, and in -j from v0.8)")  # fmt: skip
            host = str(root.get("Hostname") or "") or host
            cuda = root.get("CUDA Runtime Version")  # nvbandwidth overwrites it with cuDriverGetVersion's
            facts = {"driver": root.get("Driver Version") or facts.get("driver"),
                     "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else facts.get("cuda_driver")}  # fmt: skip
            if root.get("warning"):
                warnings.append(one_line(root["warning"]))
            if not (run["mib"] or given or buffer_size_mib) and "smaller than the default" in str(root.get("warning") or ""):
                raise XferbenchError(f"{run['where']}: nvbandwidth says its buffer was smaller than its default, and its {form} does"
                                     " not record -b; give the run's -b in MiB with --buffer-size")  # fmt: skip
            mib = run["mib"] or given or buffer_size_mib or _default_mib(version)
            if mib is None:
                raise XferbenchError(f"{run['where']}: nvbandwidth {version or '(no version)'} does not record its buffer size, and"
                                     " its default is not known; give the run's -b in MiB with --buffer-size")  # fmt: skip
            assumed = [] if run["mib"] or given or buffer_size_mib else [
                f"buffer size {'taken as' if run['command'] else 'assumed to be'} nvbandwidth {version}'s default ({mib} MiB):"
                f" {'its command gives no -b' if run['command'] else f'its {form} does not record -b'}"]  # fmt: skip
            sizes.append(mib * 2**20)
            where = f"{run['where']} (-b {mib})"
            failure = None
            if root.get("error"):
                failure = f"{where}: nvbandwidth stopped with an error: {one_line(root['error'])}"
                errors.append(failure)
            elif run["exit"] not in (None, 0):
                failure = f"{where}: nvbandwidth exited {run['exit']}"
                errors.append(failure)
            how = _NvbHow(samples=as_int(option(words, ("-i", "--testSamples"))) or NVB_SAMPLES,
                          copies=as_int(option(words, ("--loopCount",))) or NVB_COPIES, mean="-m" in words or "--useMean" in words,
                          stated=bool(run["command"]), version=version or "", form=form)  # fmt: skip
            _nvbandwidth_testcases(build, root, mib * 2**20, sorted(devices) or [0], how, assumed, failure, where)
            build.end_run(failure)
    series = build.done()
    if not any(s.ok_points() for s in series):
        listed = "; ".join([*errors, *(s.reason or "" for s in series if s.reason), *build.not_imported][:3]) or "no testcase in it"
        advice = ("fix what it reports and run nvbandwidth -j again" if errors else
                  "run nvbandwidth -j -t host_to_device_memcpy_ce device_to_host_memcpy_ce and give what it printed")  # fmt: skip
        raise XferbenchError(f"no host<->device figure in the nvbandwidth output ({one_line(listed)}); {advice}")
    for s in series:
        s.device_name = (devices.get(int(s.device.split(":")[1])) or {}).get("name")
    peer = peer_facts("nvbandwidth", versions, git_versions, commands, paths, sizes, build.not_imported, warnings=list(dict.fromkeys(warnings)),
                 errors=errors, **({"unrecorded": list(dict.fromkeys(unnamed))} if unnamed else {}))  # fmt: skip
    return peer_result(peer_environment(environment, host, devices, facts, peer), series, paths)


def _nvbandwidth_columns(root: dict[str, Any]) -> int:
    """How many GPUs a run measured, by its widest host<->device matrix row: the only count of them
    that JSON without a device list holds."""
    rows = [row for entry in root.get("testcases") or [] if isinstance(entry, dict) and NVB_TESTCASE.match(str(entry.get("name")))
            for row in (entry.get("bandwidth_matrix") or [])[:1] if isinstance(row, list)]  # fmt: skip
    return max(map(len, rows), default=0)


@dataclass(frozen=True)
class _NvbHow:
    """How one nvbandwidth run measured: from its command where it is kept, else the tool's defaults."""

    samples: int
    copies: int
    mean: bool
    stated: bool  # the run's command line is known
    version: str
    form: str = "JSON"  # what nvbandwidth printed: JSON (-j) or text


def _nvbandwidth_testcases(build: Builder, root: dict[str, Any], nbytes: int, gpus: list[int], how: _NvbHow, notes: list[str],
                           failure: str | None, where: str) -> None:  # fmt: skip
    """One run's testcases into the builder. A testcase nvbandwidth left at Running, or marked Error,
    failed; one it waived did not apply to this machine; a cell of N/A was not measured."""
    entries: dict[str, list[dict[str, Any]]] = {}
    for entry in root.get("testcases") or []:
        if isinstance(entry, dict) and entry.get("name"):
            entries.setdefault(str(entry["name"]), []).append(entry)
        else:
            build.not_imported.append(f"{where}: a testcase entry without a name: {one_line(json.dumps(entry))[:200]}")
    for name, found in entries.items():
        statuses = list(dict.fromkeys(str(e.get("status")) for e in found))
        kind = NVB_TESTCASE.match(name)
        if kind is None:
            why = ("nvbandwidth has no such testcase (status ERROR)" if "ERROR" in statuses
                   else "not a copy between the host and one GPU (between GPUs, many GPUs at once, or a latency)")  # fmt: skip
            build.not_imported.append(f"{where}: {name}: {why}")
            continue
        direction = H2D if kind.group(1) == "host_to_device" else D2H
        fields = _nvbandwidth_fields(direction, bool(kind.group(2)), kind.group(3), how)
        matrix = next((e["bandwidth_matrix"] for e in found if isinstance(e.get("bandwidth_matrix"), list)), None)
        if matrix is None:
            if statuses == ["Waived"]:
                for gpu in gpus:
                    build.entry(name, f"cuda:{gpu}", direction, nbytes, fields, notes).waived = (
                        f"nvbandwidth waived it at -b {nbytes // 2**20}: it does not apply to this machine")
                continue
            message = next((str(e["message"]) for e in found if e.get("message")), None)  # the text prints it; the JSON does not
            said = f"nvbandwidth's error: {one_line(root['error'])}" if root.get("error") else (
                f"nvbandwidth's error: {one_line(message)}" if message
                else "nvbandwidth marked it Error and kept no message" if {"Error", "ERROR"} & set(statuses)
                else "nvbandwidth stopped during it: left at Running with no matrix")  # fmt: skip
            reason = f"{where}: {name} failed ({', '.join(statuses)}): {said}"
            for gpu in gpus:
                build.fail(build.gap(name, f"cuda:{gpu}", direction, nbytes, fields, "error", reason, notes), reason)
            continue
        rows = [row for row in matrix if isinstance(row, list)]
        if len(rows) != 1:
            build.not_imported.append(f"{where}: {name}: a matrix of {len(rows)} rows where a host testcase has one; rows after the first left out")
        for gpu, cell in enumerate(rows[0] if rows else []):
            device = f"cuda:{gpu}"
            try:
                gbps = float(cell)
            except (TypeError, ValueError):
                build.gap(name, device, direction, nbytes, fields, "skipped", f"{one_line(cell)} in nvbandwidth's matrix: not measured", notes)
                continue
            if not math.isfinite(gbps) or gbps <= 0:
                build.gap(name, device, direction, nbytes, fields, "skipped", f"{cell} GB/s in nvbandwidth's matrix: not a figure", notes)
                continue
            build.figure(name, device, direction, nbytes, fields, gbps, how.samples, how.copies, notes)


def _nvbandwidth_fields(direction: str, bidirectional: bool, engine: str, how: _NvbHow) -> dict[str, Any]:
    """What a series of nvbandwidth says about how it was measured."""
    way, other = ("host to device", "device to host") if direction == H2D else ("device to host", "host to device")
    threshold = _sm_threshold_mib(how.version)
    split = engine == "sm" and bidirectional and _sm_split_warp(how.version)
    if engine == "ce":
        copy = "copy-engine cuMemcpyAsync between pinned host memory (cuMemHostAlloc) and device memory"
    elif split:
        copy = ("one kernel's own copy: the GPU's SMs read and write pinned host memory, no copy engine; its warps split"
                " between the two ways, each way copying the whole buffer")  # fmt: skip
    else:
        start = f"from {threshold} MiB" if threshold else "from nvbandwidth's default buffer size"
        copy = (f"a kernel's own copy: the GPU's SMs read or write pinned host memory, no copy engine; {start} the"
                " kernel copies a multiple of 16 B x 512 threads x the GPU's SMs, and the figure is over what it copied")  # fmt: skip
    note = f"nvbandwidth {how.version}: {way}, {copy}"
    if split:
        note += f"; half the kernel's figure for both ways at once, taken as the {way} share"
    elif bidirectional:
        note += f"; the {way} stream's figure while a {other} copy of twice the size runs on a second stream"
    statistic = "mean" if how.mean else "median"
    note += f"; the {statistic} of {how.samples} samples of {how.copies} copies each, behind a spin kernel, after 4 warm-up copies"
    if not how.stated:
        note += f" (nvbandwidth's defaults: its {how.form} does not record -i, -m or --loopCount)"
    return {"host_buffer": "pinned", "method": STREAMED, "transfer": HOST_TO_DEVICE if direction == H2D else DEVICE_TO_HOST,
            "clock": f"CUDA events (cuEventElapsedTime, in whole microseconds) around {how.copies} copies queued behind a spin kernel,"
                     " per copy (nvbandwidth)",
            "sync": "cuStreamSynchronize once the spin kernel is released", "device_clock": None,
            "params": {"tool": f"nvbandwidth {how.version}".strip(), "samples": how.samples, "copies_per_sample": how.copies,
                       "statistic": statistic},
            "note": note}  # fmt: skip



PEER = Peer("nvbandwidth", read_nvbandwidth, "host_to_device_memcpy_ce")
