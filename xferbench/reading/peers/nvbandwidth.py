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

from xferbench.core.results import Result
from xferbench.core.spec import D2H, DEVICE_TO_HOST, H2D, HOST_TO_DEVICE, STREAMED
from xferbench.reading.peers.common import (DEFAULT_SHAPE, WHOLE, Builder, Peer, as_int, command_words, figure, first_with, host_name,
                                            json_object, json_values, one_line, option, peer_environment, peer_facts, peer_result,
                                            plain, read_text, refusal, split_lines)  # fmt: skip

NVB_COPIES, NVB_SAMPLES = 16, 3  # nvbandwidth's defaults: --loopCount copies per sample, -i samples
MAX_BUFFER_MIB = 2**20  # --buffer-size: 1 TiB, more than any GPU holds
# nvbandwidth's testcases between the host and one GPU, by name: direction, whether it copies the other
# way meanwhile (bidirectional), and copy engine or SM kernel.
NVB_TESTCASE = re.compile(r"^(host_to_device|device_to_host)_(bidirectional_)?memcpy_(ce|sm)$")
# "0: NVIDIA H100 80GB HBM3 (00000000:1b:00): (node07)"; versions before v0.8 print no host name, and
# the text of v0.4 and v0.5 no PCI address.
NVB_DEVICE = re.compile(r"^\s*([0-9]+): (.*?)(?: \(([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)\))?(?:: \((.*)\))?\s*$")


def _nvb_version(version: str | None) -> tuple[int, int] | None:
    """nvbandwidth's version as (major, minor), since its defaults and methods change between them;
    None for a version not understood."""
    found = re.match(r"v?([0-9]+)\.([0-9]+)", version or "")
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


def _nvbandwidth_runs(path: Path, text: str) -> list[dict[str, Any]]:
    """Each run a file holds: nvbandwidth's own output (one run, or several printed one after another),
    or a list of runs each with its size, command, exit code and output (as peers/run.sh and
    `xferbench validate` keep them)."""
    values = list(json_values(text))
    found = [(first_with(value, ("nvbandwidth", "runs")), start, end) for value, start, end in values if value is not None]
    documents = [(d, start, end) for d, start, end in found if d is not None and (isinstance(d.get("runs"), list)
                                                                                 or isinstance(d.get("nvbandwidth"), dict))]  # fmt: skip
    cut = [start for value, start, _ in values if value is None and NVB_JSON_START.match(text, start)]
    if not documents:
        if any(d is not None for d, _, _ in found):
            raise refusal(f"{path}: its JSON holds 'nvbandwidth' or 'runs' of another type than nvbandwidth -j and run.sh write (an"
                          " object, a list); give the output as the tool printed it")  # fmt: skip
        if cut:
            raise refusal(f"{path}: nvbandwidth's JSON in it is cut short (it does not parse); save the whole output of nvbandwidth -j")
        if NVB_TEXT_MARK.search(text):
            return _nvbandwidth_text_runs(text, path)
        raise refusal(f"{path}: not nvbandwidth's JSON output nor its text (no 'nvbandwidth' object, 'nvbandwidth Version:'"
                      " line or 'Running TESTCASE.' line); run nvbandwidth with -j and save what it prints")  # fmt: skip
    runs: list[dict[str, Any]] = []
    for document, _, _ in documents:
        if not isinstance(document.get("runs"), list):
            runs.append({"output": document, "mib": None, "command": None, "exit": None, "raw": None, "form": "JSON"})
            continue
        for number, run in enumerate(document["runs"], 1):
            if not isinstance(run, dict):
                raise refusal(f"{path}: run {number} of its 'runs' list is not an object; give the file run.sh or validate wrote")
            raw = run.get("stdout_stderr_raw")
            raw = plain(raw) if isinstance(raw, str) else None
            output = run.get("output") if isinstance(run.get("output"), dict) else json_object(raw or "", ("nvbandwidth",))
            runs.append({"output": output, "mib": run.get("buffer_size_mib"), "command": run.get("command"),
                         "exit": run.get("exit_code"), "raw": raw, "kept": True})  # fmt: skip
    for number, run in enumerate(runs, 1):
        run["where"] = f"{path} run {number}" if len(runs) > 1 or run.get("kept") else str(path)
    left = [f"{path}: JSON cut short at character {at} (it does not parse): left out" for at in cut]
    spans = [(start, end) for _, start, end in documents]
    outside = "".join(text[end:start] for (_, end), (start, _) in zip([(0, 0), *spans], [*spans, (len(text), 0)]))
    if NVB_TEXT_MARK.search(outside):
        left.append(f"{path}: nvbandwidth's text beside its JSON: only the JSON read; import the text on its own")
    runs[0]["notes"] = left
    return runs


# nvbandwidth's text, as output.cpp (v0.5 to v0.8) and nvbandwidth.cpp (v0.4) print it.
NVB_TEXT_MARK = re.compile(r"^[ \t]*(nvbandwidth Version: \S+|Running [a-z0-9_]+\.)[ \t]*$", re.M)
NVB_TEXT_FACT = re.compile(r"^(nvbandwidth Version|Built from Git version|CUDA Runtime Version|Driver Version): ?(.*)$")
NVB_TEXT_FATAL = re.compile(r"^\[[A-Z_]*ERROR[A-Z_]*\] ")  # CU_ASSERT and NVML_ASSERT, on stderr, before the process exits
NVB_COMMAND = re.compile(r"(?:^|[\s/$#>])nvbandwidth((?:\s+-\S*.*)?)$")  # a shell line that ran it, in a pasted log
NVB_JSON_START = re.compile(r'\{\s*"(?:nvbandwidth|tool|runs)"\s*:')
# A matrix cell as the text prints it (PeerValueMatrix's operator<< in std::fixed, setprecision(2)), N/A
# where nothing was measured, or what iostreams write for NaN and infinities.
NVB_TEXT_CELL = re.compile(r"-?[0-9]+\.[0-9]{2}|N/A|-?nan|-?inf", re.I)


def _nvbandwidth_text_runs(text: str, path: Path) -> list[dict[str, Any]]:
    """nvbandwidth's plain text as runs shaped like its JSON, so one reader serves both: each
    'nvbandwidth Version:' header starts a run, and the shell line that ran it, where pasted above it,
    is its command."""
    lines, ended = split_lines(text)
    segments: list[list[str]] = [[]]
    marked = False  # the segment under way holds a version or Running line
    for line in lines:
        if line.strip().startswith("nvbandwidth Version:") and marked:
            before = segments[-1]
            while before and not before[-1].strip():
                before.pop()
            # the shell line just above this header ran this run, not the one before
            segments.append([before.pop()] if before and _nvbandwidth_command(before[-1]) else [])
            marked = False
        segments[-1].append(line)
        marked = marked or bool(NVB_TEXT_MARK.match(line))
    runs = []
    for number, lines in enumerate(segments, 1):
        where = str(path) if len(segments) == 1 else f"{path} run {number}"
        command = next((m.group(0).strip() for m in map(_nvbandwidth_command, lines) if m), None)
        root, notes = _nvbandwidth_text(lines, where, cut=not ended and number == len(segments))
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


def _nvbandwidth_text(lines: list[str], where: str, cut: bool = False) -> tuple[dict[str, Any], list[str]]:
    """One run of nvbandwidth's text as its JSON root, and what was not understood. A testcase's
    matrix is its description line, a header of column numbers, then a row per source (a label and
    a cell per GPU, N/A where nothing was measured) up to a blank line; the SUM line follows. `cut`:
    the text stops inside its last line, so a row there may have lost its end."""
    root: dict[str, Any] = {"testcases": []}
    devices: list[str] = []
    notes: list[str] = []
    current: dict[str, Any] | None = None
    columns: int | None = None  # the matrix under way: its column count once its header is read
    previous = ""
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        fact = NVB_TEXT_FACT.match(line)
        device = re.match(r"^Device ([0-9]+): (.+)$", line)
        if current is not None and "bandwidth_matrix" in current and not current.get("_done"):
            matrix = current["bandwidth_matrix"]
            if columns is None:
                words = line.split()
                if words and all(WHOLE.fullmatch(w) for w in words):
                    columns = len(words)
                    continue
                notes.append(f"{where}: {current['name']}: no column header under its description; its matrix left out")
                _unread(current)
            elif line and (cells := _nvbandwidth_row(raw, columns)) is None and not WHOLE.fullmatch(line.split()[0]):
                _ended(current, matrix)  # not a row: the blank line after the matrix was lost, and this line is read as any other
                columns = None
            elif line:
                whole = cells is not None and all(NVB_TEXT_CELL.fullmatch(c) for c in cells)
                if cut and number == len(lines) and not whole:
                    notes.append(f"{where}: {current['name']}: the paste ends inside a matrix row ({one_line(line, 200)}): it was cut short"
                                 " there, and the row is left out")  # fmt: skip
                    _unread(current)
                    columns = None
                elif cells is None:
                    count = len(line.split()) - 1
                    notes.append(f"{where}: {current['name']}: a row of {count} cell{'s' * (count != 1)} under a header of {columns}"
                                 f" column{'s' * (columns != 1)}, where nvbandwidth prints a cell per column (another version's"
                                 f" output?): {one_line(line, 200)}; its matrix left out")  # fmt: skip
                    _unread(current)
                    columns = None
                else:
                    matrix.append(cells)
                continue
            else:
                _ended(current, matrix)
                columns = None
                continue
        if fact:
            key, value = fact.groups()
            if key == "nvbandwidth Version":
                root["version"] = value.strip()
            elif key == "Built from Git version":
                root["git_version"] = value.strip()
            elif key == "CUDA Runtime Version":
                root[key] = int(value) if WHOLE.fullmatch(value.strip()) else value.strip()
            else:
                root[key] = value.strip()
        elif device:
            if not devices and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", previous) and host_name(previous):
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
                notes.append(f"{where}: an error outside a testcase: {one_line(line, 200)}")
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


# A testcase whose matrix the text holds but which could not be read (its note says why): neither run nor failed.
UNREAD = "unread"


def _ended(testcase: dict[str, Any], matrix: list[list[str]]) -> None:
    """A testcase of the text whose matrix is over: it passed if it holds a row."""
    testcase["status"] = "Passed" if matrix else testcase["status"]
    if not matrix:
        del testcase["bandwidth_matrix"]
    testcase["_done"] = True


def _unread(testcase: dict[str, Any]) -> None:
    """A testcase of the text whose matrix is left out, its note written: nothing more is read into it."""
    testcase.pop("bandwidth_matrix", None)
    testcase["status"], testcase["_done"] = UNREAD, True


def _nvbandwidth_row(raw: str, columns: int) -> list[str] | None:
    """A matrix row's cells. v0.4 prints the row label with no width, so a cell 10 characters wide
    runs into it: then the cells are read as the last `columns` fields of 10 characters."""
    words = raw.split()
    if len(words) == columns + 1 and WHOLE.fullmatch(words[0]):
        return words[1:]
    line = raw.rstrip()
    if len(line) > 10 * columns and WHOLE.fullmatch(line[: len(line) - 10 * columns].strip()):
        cells = [line[len(line) - 10 * (columns - i): len(line) - 10 * (columns - i - 1)].strip() for i in range(columns)]
        return cells if all(cells) else None
    return None


def _nvbandwidth_devices(root: dict[str, Any], where: str, build: Builder) -> tuple[dict[int, dict[str, Any]], str | None]:
    """A run's GPUs by index (name, PCI address) and its host, from its device list (v0.8's JSON, and
    every text)."""
    listed = root.get("GPU Device list")
    if listed is not None and not isinstance(listed, list):
        build.note(f"{where}: its 'GPU Device list' is not a list: left out")
        listed = []
    gpus: dict[int, dict[str, Any]] = {}
    host = None
    for line in listed or []:
        # a device line is well under 500 characters: the pattern's lazy name would take long over a huge one
        found = NVB_DEVICE.match(line) if isinstance(line, str) and len(line) < 500 else None
        if found is None:
            build.note(f"{where}: a GPU device list line not understood: {one_line(line, 200)}")
            continue
        index, name, domain, bus, device, seen_on = found.groups()
        # nvbandwidth prints domain:bus:device; a GPU is PCI function 0.
        pci = f"{int(domain, 16):08x}:{int(bus, 16):02x}:{int(device, 16):02x}.0" if domain else None
        gpus[int(index)] = {"name": one_line(name, 200) or None, "pci_bus_id": pci}
        host = host_name(seen_on) or host
    return gpus, host_name(root.get("Hostname")) or host


def read_nvbandwidth(paths: Sequence[Path], buffer_size_mib: int | None = None, shape: tuple[int, ...] = DEFAULT_SHAPE,
                     environment: dict[str, Any] | None = None) -> Result:  # fmt: skip
    """nvbandwidth's -j output or its text, one or more files, as a result: a series per host<->device
    testcase and GPU. Neither form records the buffer size: a run kept with its size
    or command gives it, else `buffer_size_mib` (the run's -b), else the version's default, said so."""
    if not paths:
        raise refusal("give at least one nvbandwidth output file")
    if buffer_size_mib is not None and not 1 <= buffer_size_mib <= MAX_BUFFER_MIB:
        raise refusal(f"--buffer-size {buffer_size_mib}: give nvbandwidth's -b, a whole number of MiB from 1 to"
                      f" {MAX_BUFFER_MIB:,} (1 TiB, beyond any GPU's memory)")  # fmt: skip
    runs = [run for path in paths for run in _nvbandwidth_runs(Path(path), read_text(Path(path)))]
    build = Builder("nvbandwidth", shape, runs=len(runs))
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
    for run in runs:
        for said in run.get("notes") or []:
            build.note(said)
        form = run.get("form") or "JSON"
        command = one_line(run["command"], 1000) if isinstance(run["command"], str) else None
        words = command_words(command)
        if command:
            commands.append(command)
        stated = _mib(run["mib"], "its buffer_size_mib", run, build)
        given = _mib(option(words, ("-b", "--bufferSize")), "its command's -b", run, build)
        if stated is False or given is False:
            continue
        exited = f"exit {one_line(run['exit'], 40)}" if run["exit"] is not None else "exit not recorded"
        root = run["output"].get("nvbandwidth") if isinstance(run["output"], dict) else None
        if not isinstance(root, dict):
            raw = run.get("raw") or ""
            said = "its JSON is cut short" if re.search(r'\{\s*"nvbandwidth"\s*:', raw) else one_line(raw, 200)
            size = f" (-b {stated or given})" if stated or given else ""
            build.note(f"{run['where']}{size}: no JSON in nvbandwidth's output ({exited}){': ' + said if said else ''}")
            continue
        version = one_line(root["version"], 40) or None if isinstance(root.get("version"), str) else None
        versions.append(version)
        git_versions.append(one_line(root["git_version"], 60) or None if isinstance(root.get("git_version"), str) else None)
        gpus, run_host = _nvbandwidth_devices(root, run["where"], build)
        if form == "JSON" and "GPU Device list" not in root:
            # v0.5 to v0.7 keep their device list out of -j: the GPUs are the matrices' columns, unnamed
            for index in range(_nvbandwidth_columns(root)):
                gpus.setdefault(index, {"name": None, "pci_bus_id": None})
            if _nvbandwidth_columns(root):
                unnamed.append(f"nvbandwidth {version or '(no version)'}'s JSON names no GPU (its device list is"
                               " printed in its text only, and in -j from v0.8)")  # fmt: skip
        build.start_run(run["where"], run_host, {i: (g["name"], g["pci_bus_id"]) for i, g in gpus.items()})
        for index, gpu in gpus.items():
            known = devices.setdefault(index, gpu)
            known.update({k: v for k, v in gpu.items() if v is not None})
        host = run_host or host
        cuda = root.get("CUDA Runtime Version")  # nvbandwidth overwrites it with cuDriverGetVersion's
        driver = one_line(root["Driver Version"], 60) if isinstance(root.get("Driver Version"), str) else None
        facts = {"driver": driver or facts.get("driver"),
                 "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) and not isinstance(cuda, bool)
                 and cuda >= 0 else facts.get("cuda_driver")}  # fmt: skip
        warning = root.get("warning") if isinstance(root.get("warning"), str) else ""
        if warning:
            warnings.append(one_line(warning, 300))
        if not (stated or given or buffer_size_mib) and "smaller than the default" in warning:
            raise refusal(f"{run['where']}: nvbandwidth says its buffer was smaller than its default, and its {form} does"
                          " not record -b; give the run's -b in MiB with --buffer-size")  # fmt: skip
        mib = stated or given or buffer_size_mib or _default_mib(version)
        if mib is None:
            raise refusal(f"{run['where']}: nvbandwidth {version or '(no version)'} does not record its buffer size, and"
                          " its default is not known; give the run's -b in MiB with --buffer-size")  # fmt: skip
        assumed = [] if stated or given or buffer_size_mib else [
            f"buffer size {'taken as' if command else 'assumed to be'} nvbandwidth {version}'s default ({mib} MiB):"
            f" {'its command gives no -b' if command else f'its {form} does not record -b'}"]  # fmt: skip
        sizes.append(mib * 2**20)
        where = f"{run['where']} (-b {mib})"
        build.where = where
        failure = None
        if root.get("error"):
            failure = f"{where}: nvbandwidth stopped with an error: {one_line(root['error'], 500)}"
            errors.append(one_line(failure))
        elif run["exit"] not in (None, 0):
            failure = f"{where}: nvbandwidth exited {one_line(run['exit'], 40)}"
            errors.append(one_line(failure))
        how = _NvbHow(samples=as_int(option(words, ("-i", "--testSamples"))) or NVB_SAMPLES,
                      copies=as_int(option(words, ("--loopCount",))) or NVB_COPIES, mean="-m" in words or "--useMean" in words,
                      stated=bool(command), version=version or "", form=form)  # fmt: skip
        _nvbandwidth_testcases(build, root, mib * 2**20, sorted(devices) or [0], how, assumed, failure, where)
        build.end_run(failure)
    series = build.done()
    if not any(s.ok_points() for s in series):
        listed = "; ".join([*errors, *(s.reason or "" for s in series if s.reason), *build.unmeasured(), *build.not_imported][:3])
        advice = ("fix what it reports and run nvbandwidth -j again" if errors else
                  "run nvbandwidth -j -t host_to_device_memcpy_ce device_to_host_memcpy_ce and give what it printed")  # fmt: skip
        raise refusal(f"no host<->device figure in the nvbandwidth output ({listed or 'no testcase in it'}); {advice}")
    for s in series:
        s.device_name = (devices.get(int(s.device.split(":")[1])) or {}).get("name")
    peer = peer_facts("nvbandwidth", versions, git_versions, commands, paths, sizes, build.not_imported, warnings=list(dict.fromkeys(warnings)),
                      errors=errors, **({"unrecorded": list(dict.fromkeys(unnamed))} if unnamed else {}))  # fmt: skip
    return peer_result(peer_environment(environment, host, devices, facts, peer), series, paths)


def _mib(given: Any, what: str, run: dict[str, Any], build: Builder) -> int | None | bool:
    """A run's buffer size in MiB as its record or command gives it: None where neither gives one,
    False (the run left out, with a note) where the size given is not one nvbandwidth runs."""
    if given is None:
        return None
    mib = as_int(given)
    if mib is None or not 1 <= mib <= MAX_BUFFER_MIB:
        shown = given if isinstance(given, str) else json.dumps(given)
        build.note(f"{run['where']}: {what} is {one_line(shown, 40)!r}, not a whole number of MiB from 1 to {MAX_BUFFER_MIB:,}: run"
                   " left out")  # fmt: skip
        return False
    return mib


def _nvbandwidth_columns(root: dict[str, Any]) -> int:
    """How many GPUs a run measured, by its widest host<->device matrix row: the only count of them
    that JSON without a device list holds."""
    listed = root.get("testcases") if isinstance(root.get("testcases"), list) else []
    rows = [row for entry in listed if isinstance(entry, dict) and NVB_TESTCASE.match(str(entry.get("name")))
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
    failed; one it waived did not apply to this machine; a cell of N/A was not measured; a cell that
    is none of these nor a figure as nvbandwidth prints one is named and left out."""
    entries: dict[str, list[dict[str, Any]]] = {}
    listed = root.get("testcases") or []
    if not isinstance(listed, list):
        build.note(f"{where}: its 'testcases' is not a list: left out")
        listed = []
    for entry in listed:
        if isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry["name"]:
            entries.setdefault(entry["name"], []).append(entry)
        else:
            build.note(f"{where}: a testcase entry without a name: {one_line(json.dumps(entry), 200)}")
    for name, found in entries.items():
        statuses = list(dict.fromkeys(one_line(e.get("status"), 40) for e in found))
        kind = NVB_TESTCASE.match(name)
        if kind is None:
            why = ("nvbandwidth has no such testcase (status ERROR)" if "ERROR" in statuses
                   else "not a copy between the host and one GPU (between GPUs, many GPUs at once, or a latency)")  # fmt: skip
            build.note(f"{where}: {one_line(name, 100)}: {why}")
            continue
        direction = H2D if kind.group(1) == "host_to_device" else D2H
        fields = _nvbandwidth_fields(direction, bool(kind.group(2)), kind.group(3), how)
        matrix = next((e["bandwidth_matrix"] for e in found if isinstance(e.get("bandwidth_matrix"), list)), None)
        if matrix is None:
            if UNREAD in statuses:
                continue  # the text held a matrix that could not be read: its note says why
            if statuses == ["Waived"]:
                for gpu in gpus:
                    build.entry(name, f"cuda:{gpu}", direction, nbytes, fields, notes).waived = (
                        f"nvbandwidth waived it at -b {nbytes // 2**20}: it does not apply to this machine")
                continue
            message = next((e["message"] for e in found if e.get("message")), None)  # the text prints it; the JSON does not
            said = f"nvbandwidth's error: {one_line(root['error'], 500)}" if root.get("error") else (
                f"nvbandwidth's error: {one_line(message, 500)}" if message
                else "nvbandwidth marked it Error and kept no message" if {"Error", "ERROR"} & set(statuses)
                else "nvbandwidth stopped during it: left at Running with no matrix" + (
                    ", or the paste was cut short there" if how.form == "text" else ""))  # fmt: skip
            reason = f"{where}: {name} failed ({', '.join(statuses)}): {said}"
            for gpu in gpus:
                build.fail(build.gap(name, f"cuda:{gpu}", direction, nbytes, fields, "error", reason, notes), reason)
            continue
        rows = [row for row in matrix if isinstance(row, list)]
        if len(rows) != 1:
            build.note(f"{where}: {name}: a matrix of {len(rows)} rows where a host testcase has one; rows after the first left out")
        for gpu, cell in enumerate(rows[0] if rows else []):
            device = f"cuda:{gpu}"
            gbps = figure(cell) if how.form == "JSON" or isinstance(cell, str) and NVB_TEXT_CELL.fullmatch(cell) else None
            if cell == "N/A":
                build.gap(name, device, direction, nbytes, fields, "skipped", "N/A in nvbandwidth's matrix: not measured", notes)
            elif gbps is None:
                shown = cell if isinstance(cell, str) else json.dumps(cell)
                printed = "to 0.01 GB/s" if how.form == "text" else "in GB/s"
                build.note(f"{where}: {name} on {device}: {one_line(shown, 40)!r} in its matrix is not a figure (nvbandwidth prints one"
                           f" {printed}, or N/A where it measured nothing): left out")  # fmt: skip
            elif not math.isfinite(gbps) or gbps <= 0:
                build.gap(name, device, direction, nbytes, fields, "skipped", f"{one_line(cell, 40)} GB/s in nvbandwidth's matrix: not a figure",
                          notes)  # fmt: skip
            else:
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


PEER = Peer("nvbandwidth", read_nvbandwidth, "host_to_device_memcpy_ce", "nvbandwidth",
            ceiling_run="run nvbandwidth -t host_to_device_memcpy_ce -j and import what it prints")
