"""A peer tool's own output as an xferbench result file, so plot, report, compare and fleet show its
figures beside xferbench's from the same machine: NVIDIA's nvbandwidth (`-j`, or its text) and the CUDA
samples' bandwidthTest (`--csv`, or its readable table), read as their sources print them; a file's
content says which form it holds, so output pasted into a bug report imports as it stands.

A peer keeps no raw samples. Each point holds the figure the tool printed (nvbandwidth: the median,
or with -m the mean, of its samples, each a run of copies between two events; bandwidthTest: one
aggregate of 100 copies) with `times_s` empty, so no rank test is ever made on it, and `n` says how
many samples the figure stands for. Nothing is dropped silently: a testcase that was waived or
failed is a skipped or failed series with the tool's reason, a matrix cell of N/A a point not
measured, and whatever is not a figure between the host and one GPU is listed, with why, under
environment.peer.not_imported.

One testcase on one GPU is one series, counted in the first item shape that divides every size it
holds: `shape` (256x256x3, xferbench's default sweep: nvbandwidth -b 96 is batch 512 of it), else 1 MiB
items (512x512x4, the large validation sweep's: -b 512 is batch 512 of them), else 1000-byte items
(bandwidthTest's shmoo steps), else single bytes. A point's `bytes` is always the size itself, and
readers that set a peer beside xferbench match them by bytes.
"""

from __future__ import annotations

import codecs
import dataclasses
import json
import math
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from xferbench.core.environment import pci_key
from xferbench.core.errors import XferbenchError
from xferbench.core.results import Point, Result, Series
from xferbench.core.spec import D2H, DEVICE_TO_HOST, H2D, HOST_TO_DEVICE, PER_CALL, STREAMED

DEFAULT_SHAPE = (256, 256, 3)
LARGE_ITEM = (512, 512, 4)  # 1 MiB
ITEMS = (LARGE_ITEM, (1000,), (1,))  # tried after the caller's shape, in this order
NVB_COPIES, NVB_SAMPLES = 16, 3  # nvbandwidth's defaults: --loopCount copies per sample, -i samples
BT_COPIES = 100  # bandwidthTest: MEMCOPY_ITERATIONS, one aggregate per size
MAX_BUFFER_MIB = 2**20  # --buffer-size: 1 TiB, more than any GPU holds
# Each peer's own ceiling, host to device, as `fleet` reads it: its copy from pinned memory.
PEER_CEILINGS = {("nvbandwidth", "host_to_device_memcpy_ce"), ("bandwidthTest", "pinned")}
# Facts of a capture that describe xferbench's own process, not the machine: a peer's file leaves them out.
PROCESS_FACTS = ("process_cpus", "load_average", "settings", "versions", "frameworks", "python", "python_implementation",
                 "nvml_after")  # fmt: skip
# nvbandwidth's testcases between the host and one GPU, by name: direction, whether it copies the other
# way meanwhile (bidirectional), and copy engine or SM kernel.
NVB_TESTCASE = re.compile(r"^(host_to_device|device_to_host)_(bidirectional_)?memcpy_(ce|sm)$")
# "0: NVIDIA H100 80GB HBM3 (00000000:1b:00): (node07)"; versions before v0.8 print no host name, and
# the text of v0.4 and v0.5 no PCI address.
NVB_DEVICE = re.compile(r"^\s*(\d+): (.*?)(?: \(([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)\))?(?:: \((.*)\))?\s*$")
BT_BANNER = "[CUDA Bandwidth Test]"
BT_LINE = re.compile(r"^bandwidthTest-(H2D|D2H|D2D)(-Paged|-Pinned)?(-WriteCombined)?, Bandwidth = (\S+) GB/s,"
                     r" Time = (\S+) s, Size = (\d+) bytes, NumDevsUsed = (\d+)\s*$")  # fmt: skip
BT_DEVICE = re.compile(r"^\s*Device (\d+): (.+?)\s*$")
BT_COMMAND = re.compile(r"(?:^|[\s/$#>])(bandwidthTest(?:\s+-\S+)+)\s*$")  # a shell line that ran it, in a pasted log


def item_for(sizes: Sequence[int], shape: tuple[int, ...] = DEFAULT_SHAPE) -> tuple[int, ...]:
    """The item shape a series is counted in: the first of `shape`, 1 MiB, 1000 B and 1 B that divides
    every size it holds, so one testcase stays one series."""
    return next(item for item in (tuple(shape), *ITEMS) if all(nbytes % math.prod(item) == 0 for nbytes in sizes))


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class _Entry:
    """One series being filled: its points, and what befell it run by run."""

    series: Series
    failures: list[str] = field(default_factory=list)
    waived: str | None = None
    notes: dict[str, None] = field(default_factory=dict)


class _Builder:
    """A tool's series keyed by (mode, device, direction), filled run by run; each run's failure marks
    every series that run touched. Batches are set at the end, once every size of a series is known."""

    def __init__(self, tool: str, shape: tuple[int, ...]) -> None:
        self.tool, self.shape = tool, tuple(shape)
        self.entries: dict[tuple[str, str, str], _Entry] = {}
        self.touched: set[tuple[str, str, str]] = set()
        self.failed_here: set[int] = set()  # ids of the entries that failed on their own in the run under way
        self.not_imported: list[str] = []

    def entry(self, mode: str, device: str, direction: str, nbytes: int, fields: dict[str, Any],
              notes: Sequence[str] = ()) -> _Entry:  # fmt: skip
        """The series of this testcase (or memory kind) on this GPU."""
        key = (mode, device, direction)
        if key not in self.entries:
            self.entries[key] = _Entry(Series(self.tool, mode, "copy", device, [], direction=direction, **fields))
        found = self.entries[key]
        found.notes.update(dict.fromkeys(notes))
        self.touched.add(key)
        return found

    def figure(self, mode: str, device: str, direction: str, nbytes: int, fields: dict[str, Any], gbps: float,
               samples: int, copies: int, notes: Sequence[str] = ()) -> None:  # fmt: skip
        """A printed figure as a point: the time per copy it implies, and the figure itself."""
        entry = self.entry(mode, device, direction, nbytes, fields, notes)
        median_s = nbytes / (gbps * 1e9)
        entry.series.points.append(Point(0, nbytes, n=samples, median_s=median_s, mbps=gbps * 1e3, batches_per_s=1 / median_s,
                                         copies=copies))  # fmt: skip

    def gap(self, mode: str, device: str, direction: str, nbytes: int, fields: dict[str, Any], status: str, why: str,
            notes: Sequence[str] = ()) -> _Entry:  # fmt: skip
        """A size the tool did not measure (skipped) or failed at (error), with why."""
        entry = self.entry(mode, device, direction, nbytes, fields, notes)
        entry.series.points.append(Point(0, nbytes, status=status, error=why))
        return entry

    def fail(self, entry: _Entry, reason: str) -> None:
        """A series failed in the run under way, for a reason of its own."""
        entry.failures.append(reason)
        self.failed_here.add(id(entry))

    def end_run(self, failure: str | None) -> None:
        """A run is over: where it failed, every series it touched failed with it (its figures kept),
        unless the series already failed in it for a reason of its own."""
        for key in self.touched if failure else ():
            entry = self.entries[key]
            if id(entry) not in self.failed_here and failure not in entry.failures:
                entry.failures.append(failure)
        self.touched, self.failed_here = set(), set()

    def done(self) -> list[Series]:
        found = []
        for entry in sorted(self.entries.values(), key=lambda e: (_device_order(e.series.device), e.series.direction != H2D,
                                                                  e.series.mode)):  # fmt: skip
            series = entry.series
            item = item_for([p.bytes for p in series.points], self.shape)
            series.shape = list(item)
            for point in series.points:
                point.batch_size = point.bytes // math.prod(item)
                if point.batches_per_s:
                    point.images_per_s = point.batch_size * point.batches_per_s
            series.points.sort(key=lambda p: p.bytes)
            if entry.notes:
                series.note = "; ".join([series.note or "", *entry.notes]).strip("; ")
            if entry.failures:
                more = f"; and {len(entry.failures) - 2} more" if len(entry.failures) > 2 else ""
                series.status, series.reason = "failed", "; ".join(entry.failures[:2]) + more
            elif entry.waived and not series.ok_points():
                series.status, series.reason = "skipped", entry.waived
            series.refresh_summary()
            # A fit of latency and bandwidth needs per-copy times; a peer's figures are aggregates over many copies.
            series.summary = dataclasses.replace(series.summary, latency_s=None, bandwidth_mbps=None, half_bandwidth_bytes=None,
                                                 fit_rel_rms=None)  # fmt: skip
            found.append(series)
        return found


def _device_order(device: str) -> tuple[int, int, str]:
    """cuda:2 before cuda:10, and cuda:all last."""
    index = device.partition(":")[2]
    return (0, int(index), "") if index.isdigit() else (1, 0, device)


# Byte-order marks of the encodings a tool's output may be saved in besides UTF-8: PowerShell 5's `>`
# writes UTF-16 with a mark, and Windows editors may start UTF-8 with one.
MARKS = ((codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"), (codecs.BOM_UTF8, "utf-8-sig"))


def _text(path: Path) -> str:
    """A tool's saved output: UTF-8, or what its byte-order mark says; line ends as on Linux."""
    if Path(path).is_dir():  # Windows refuses to open a folder with "Permission denied", not IsADirectoryError
        raise XferbenchError(f"{path} is a folder; give the file the tool's output was saved in")
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise XferbenchError(f"{path}: no such file; give the file the tool's output was saved in") from None
    except IsADirectoryError:
        raise XferbenchError(f"{path} is a folder; give the file the tool's output was saved in") from None
    except OSError as error:
        raise XferbenchError(f"{path}: cannot read: {error.strerror or error}") from None
    codec = next((codec for mark, codec in MARKS if data.startswith(mark)), "utf-8")
    return data.decode(codec, errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def json_object(text: str, keys: Sequence[str]) -> Any:
    """The first JSON object in a tool's output that holds one of `keys`, whatever was printed around
    it; None if there is none."""
    start = text.find("{")
    while start >= 0:
        try:
            found = json.JSONDecoder().raw_decode(text, start)[0]
            if isinstance(found, dict) and any(key in found for key in keys):
                return found
        except ValueError:
            pass
        start = text.find("{", start + 1)
    return None


def _option(words: Sequence[str], names: Sequence[str]) -> str | None:
    """The value of a command-line option given as `-b 64`, `--bufferSize 64` or `--bufferSize=64`."""
    for i, word in enumerate(words):
        for name in names:
            if word == name and i + 1 < len(words):
                return words[i + 1]
            if word.startswith(name + "="):
                return word.split("=", 1)[1]
    return None


def _int(text: Any) -> int | None:
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    return int(text) if isinstance(text, str) and text.isdigit() else None


def _words(command: Any) -> list[str]:
    try:
        return shlex.split(str(command)) if command else []
    except ValueError:  # an unbalanced quote: split on blanks
        return str(command).split()


def _environment(given: dict[str, Any] | None, host: str | None, devices: dict[int, dict[str, Any]],
                 facts: dict[str, Any], peer: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """The measuring machine as the peer described it, over the same machine's own capture where one
    is given (the validate command passes its sweep's): NVML's facts then travel with the figures,
    matched to each GPU by its PCI address."""
    environment = json.loads(json.dumps(given)) if given else {}
    for key in PROCESS_FACTS:  # what xferbench's own process saw: the peer ran in another one
        environment.pop(key, None)
    environment["host"] = host or environment.get("host")
    facts = {k: v for k, v in facts.items() if v is not None}
    environment.update(facts)
    listed = environment.setdefault("devices", [])
    gpus = (environment.get("nvml") or {}).get("gpus") or []
    for index, described in sorted(devices.items()):
        device_id = f"cuda:{index}"
        entry = next((d for d in listed if d.get("id") == device_id), None)
        if entry is not None and pci_key(entry.get("pci_bus_id")) and pci_key(described.get("pci_bus_id")) \
                and pci_key(entry.get("pci_bus_id")) != pci_key(described.get("pci_bus_id")):  # fmt: skip
            listed.remove(entry)  # the capture's cuda:N is another GPU (other visible devices): the peer's stands
            entry = None
        if entry is None:
            entry = {"id": device_id, "kind": "cuda"}
            listed.append(entry)
        entry.update({k: v for k, v in described.items() if v is not None})
        entry.update(facts)
        nvml = next((g for g in gpus if pci_key(g.get("pci_bus_id")) and pci_key(g.get("pci_bus_id")) == pci_key(entry.get("pci_bus_id"))),
                    None)  # fmt: skip
        if nvml is not None and "nvml" not in entry:
            entry["nvml"] = nvml
    environment["peer"] = peer
    return environment


def _peer(tool: str, versions: Sequence[str | None], git_versions: Sequence[str | None], commands: list[str],
          paths: Sequence[Path], sizes: Sequence[int], not_imported: list[str], **extra: Any) -> dict[str, Any]:  # fmt: skip
    from xferbench import __version__

    def joined(values: Sequence[str | None]) -> str | None:
        return ", ".join(dict.fromkeys(v for v in values if v)) or None

    return {"tool": tool, "version": joined(versions), "git_version": joined(git_versions), "commands": commands,
            "files": [str(p) for p in paths], "sizes_bytes": sorted(set(sizes)), **extra, "not_imported": not_imported,
            "imported_by": f"xferbench {__version__}", "imported": _now()}  # fmt: skip


def _result(environment: dict[str, Any], series: list[Series], paths: Sequence[Path]) -> Result:
    from xferbench import __version__

    return Result(environment=environment, config={"imported_from": [str(p) for p in paths]}, created=environment["peer"]["imported"],
                  series=series, status="complete", xferbench_version=__version__)  # fmt: skip


# nvbandwidth ------------------------------------------------------------------------------------------


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
    text = _text(path)
    document = json_object(text, ("nvbandwidth", "runs"))
    if isinstance(document, dict) and isinstance(document.get("runs"), list):
        runs = []
        for number, run in enumerate(document["runs"], 1):
            if not isinstance(run, dict):
                raise XferbenchError(f"{path}: run {number} of its 'runs' list is not an object; give the file run.sh or validate wrote")
            raw = run.get("stdout_stderr_raw")
            output = run.get("output") if isinstance(run.get("output"), dict) else json_object(str(raw or ""), ("nvbandwidth",))
            runs.append({"output": output, "mib": _int(run.get("buffer_size_mib")), "command": run.get("command"),
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
    build = _Builder("nvbandwidth", shape)
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
            words = _words(run["command"])
            if run["command"]:
                commands.append(str(run["command"]))
            given = _int(_option(words, ("-b", "--bufferSize")))
            exited = f"exit {run['exit']}" if run["exit"] is not None else "exit not recorded"
            root = run["output"].get("nvbandwidth") if isinstance(run["output"], dict) else None
            if not isinstance(root, dict):
                raw = str(run.get("raw") or "")
                said = "its JSON is cut short" if re.search(r'\{\s*"nvbandwidth"\s*:', raw) else _one_line(raw)[:200]
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
                    build.not_imported.append(f"{run['where']}: a GPU device list line not understood: {_one_line(line)}")
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
                warnings.append(_one_line(root["warning"]))
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
                failure = f"{where}: nvbandwidth stopped with an error: {_one_line(root['error'])}"
                errors.append(failure)
            elif run["exit"] not in (None, 0):
                failure = f"{where}: nvbandwidth exited {run['exit']}"
                errors.append(failure)
            how = _NvbHow(samples=_int(_option(words, ("-i", "--testSamples"))) or NVB_SAMPLES,
                          copies=_int(_option(words, ("--loopCount",))) or NVB_COPIES, mean="-m" in words or "--useMean" in words,
                          stated=bool(run["command"]), version=version or "", form=form)  # fmt: skip
            _nvbandwidth_testcases(build, root, mib * 2**20, sorted(devices) or [0], how, assumed, failure, where)
            build.end_run(failure)
    series = build.done()
    if not any(s.ok_points() for s in series):
        listed = "; ".join([*errors, *(s.reason or "" for s in series if s.reason), *build.not_imported][:3]) or "no testcase in it"
        advice = ("fix what it reports and run nvbandwidth -j again" if errors else
                  "run nvbandwidth -j -t host_to_device_memcpy_ce device_to_host_memcpy_ce and give what it printed")  # fmt: skip
        raise XferbenchError(f"no host<->device figure in the nvbandwidth output ({_one_line(listed)}); {advice}")
    for s in series:
        s.device_name = (devices.get(int(s.device.split(":")[1])) or {}).get("name")
    peer = _peer("nvbandwidth", versions, git_versions, commands, paths, sizes, build.not_imported, warnings=list(dict.fromkeys(warnings)),
                 errors=errors, **({"unrecorded": list(dict.fromkeys(unnamed))} if unnamed else {}))  # fmt: skip
    return _result(_environment(environment, host, devices, facts, peer), series, paths)


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


def _nvbandwidth_testcases(build: _Builder, root: dict[str, Any], nbytes: int, gpus: list[int], how: _NvbHow, notes: list[str],
                           failure: str | None, where: str) -> None:  # fmt: skip
    """One run's testcases into the builder. A testcase nvbandwidth left at Running, or marked Error,
    failed; one it waived did not apply to this machine; a cell of N/A was not measured."""
    entries: dict[str, list[dict[str, Any]]] = {}
    for entry in root.get("testcases") or []:
        if isinstance(entry, dict) and entry.get("name"):
            entries.setdefault(str(entry["name"]), []).append(entry)
        else:
            build.not_imported.append(f"{where}: a testcase entry without a name: {_one_line(json.dumps(entry))[:200]}")
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
            said = f"nvbandwidth's error: {_one_line(root['error'])}" if root.get("error") else (
                f"nvbandwidth's error: {_one_line(message)}" if message
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
                build.gap(name, device, direction, nbytes, fields, "skipped", f"{_one_line(cell)} in nvbandwidth's matrix: not measured", notes)
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


# bandwidthTest ----------------------------------------------------------------------------------------


def _bandwidthtest_runs(path: Path) -> list[dict[str, Any]]:
    """Each run a file holds: bandwidthTest's own output (one run), or several, each under '### NAME',
    '### $ COMMAND' and '### exit N' lines (as peers/run.sh and `xferbench validate` keep them)."""
    text = _text(path)
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
    build = _Builder("bandwidthTest", shape)
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
            words = _words(run["command"] or pasted)
            if run["command"] or pasted:
                commands.append(run["command"] or pasted)
            named = {int(m.group(1)): m.group(2) for m in (BT_DEVICE.match(line) for line in run["lines"]) if m}
            for index, name in named.items():
                devices.setdefault(index, {"name": name})
            failure = _bandwidthtest_failure(run, where)
            if failure:
                errors.append(failure)
            chosen = _option(words, ("--device", "-device"))
            single = min(named) if len(named) == 1 else int(chosen) if chosen and chosen.isdigit() else min(named, default=0)
            timing = "cpu" if "--cputiming" in words or "-cputiming" in words else "events"
            lines = [line.strip() for line in run["lines"] if line.strip().startswith("bandwidthTest-")]
            tables = _bandwidthtest_tables(run["lines"], where, mb)
            if not lines and not tables:
                said = _one_line(" ".join(run["lines"]))[-80:]
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
        raise XferbenchError(f"no host<->device figure in the bandwidthTest output ({_one_line(listed)}); run bandwidthTest --htod --csv"
                             " and give what it printed")  # fmt: skip
    for s in series:
        if s.device != "cuda:all":
            s.device_name = (devices.get(int(s.device.split(":")[1])) or {}).get("name")
    peer = _peer("bandwidthTest", [], [], commands, paths, sizes, build.not_imported, errors=errors)
    return _result(_environment(environment, None, devices, {}, peer), series, paths)


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


__all__ = ["PEER_CEILINGS", "item_for", "json_object", "read_bandwidthtest", "read_nvbandwidth"]
