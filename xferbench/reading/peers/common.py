"""What the peer readers share: a tool's output read as text, the builder that turns its figures into
series, the JSON search, and the result file with the machine as the tool described it.

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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from xferbench.core.environment import pci_key
from xferbench.core.errors import XferbenchError, printable
from xferbench.core.results import Point, Result, Series
from xferbench.core.spec import H2D

DEFAULT_SHAPE = (256, 256, 3)
LARGE_ITEM = (512, 512, 4)  # 1 MiB
ITEMS = (LARGE_ITEM, (1000,), (1,))  # tried after the caller's shape, in this order
# Facts of a capture that describe xferbench's own process, not the machine: a peer's file leaves them out.
PROCESS_FACTS = ("process_cpus", "load_average", "settings", "versions", "frameworks", "python", "python_implementation",
                 "nvml_after")  # fmt: skip


@dataclass(frozen=True)
class Peer:
    """A peer tool as the package registers it: the name its result files carry, its reader, and the mode
    of its own host-to-device copy from pinned memory, which `fleet` takes as the tool's ceiling (and `ceiling_run`, how
    to get that figure). `command`
    is its `xferbench import` command, and `summary` that command's help, where the command line makes it
    from this entry alone (a reader that takes only files, a shape and a capture); a peer with options of
    its own has a command written out in the command line."""

    name: str
    read: Callable[..., Result]
    ceiling: str
    command: str = ""
    summary: str = ""
    ceiling_run: str = ""  # what to run for that ceiling's figure on GPU {gpu}, where a file lacks it (`fleet` says so)


def item_for(sizes: Sequence[int], shape: tuple[int, ...] = DEFAULT_SHAPE) -> tuple[int, ...]:
    """The item shape a series is counted in: the first of `shape`, 1 MiB, 1000 B and 1 B that divides
    every size it holds, so one testcase stays one series."""
    return next(item for item in (tuple(shape), *ITEMS) if all(nbytes % math.prod(item) == 0 for nbytes in sizes))


# Terminal controls a paste may carry: CSI sequences (SGR colours `ESC[1;32m`, erasing `ESC[K`), OSC sequences
# (window titles, hyperlinks), and the charset switch `tput sgr0` writes (`ESC(B`). None is content.
TERMINAL_CODES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]")
# The figures the tools print, in ASCII digits: Python's float() and int() also take "5_5", "٥٥" and " 5 ".
DECIMAL = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
WHOLE = re.compile(r"[0-9]+")
NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")
NOT_A_FIGURE = {"nan", "-nan", "+nan", "inf", "-inf", "+inf"}  # what printf and iostreams write for NaN and infinities


def one_line(text: Any, limit: int | None = None, last: bool = False) -> str:
    """Text as one line that a terminal shows as it stands: blanks and line ends collapsed, every
    control or format character (ESC, BEL, C1, bidi overrides) written as an escape such as \\x1b, so
    nothing a paste holds can drive the terminal an error is printed to. `limit`: at most that many
    characters of the text, its last ones where `last`."""
    flat = " ".join(str(text).split())
    if limit is not None and len(flat) > limit:
        flat = flat[-limit:] if last else flat[:limit]
    return printable(flat)


def refusal(message: str) -> XferbenchError:
    """The one-line error a reader raises, its pasted parts made safe to print."""
    return XferbenchError(one_line(message))


def figure(text: Any) -> float | None:
    """A printed figure as a number; None for what no tool prints as one (words, N/A, other digits, a
    bool or null in JSON). NaN and infinities, which the tools do print, stay as they are."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    if not isinstance(text, str):
        return None
    if DECIMAL.fullmatch(text) or text.lower() in NOT_A_FIGURE:
        return float(text)
    return None


def host_name(text: Any) -> str | None:
    """A host's name as a tool printed it; None where it is empty or a number (digits, perhaps with a
    sign or decimals), which no host is named: such a line above a device list is something else."""
    name = one_line(text, 255) if isinstance(text, str) else ""
    return None if not name or NUMBER.fullmatch(name) else name


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class _Entry:
    """One series being filled: its points, and what befell it run by run."""

    series: Series
    failures: list[str] = field(default_factory=list)
    waived: str | None = None
    notes: dict[str, None] = field(default_factory=dict)


@dataclass
class _Machine:
    """What the runs read so far say of the machine: its host, and each GPU by index, with the run that said it."""

    host: tuple[str, str] | None = None  # (name, where)
    gpus: dict[int, tuple[str | None, str | None, str]] = field(default_factory=dict)  # index: (name, PCI address, where)


class Builder:
    """A tool's series keyed by (mode, device, direction), filled run by run; each run's failure marks
    every series that run touched. Batches are set at the end, once every size of a series is known.
    Runs from other machines or GPUs, or two runs of one test at one size, are refused: one result
    file holds one machine, and a size once per series."""

    def __init__(self, tool: str, shape: tuple[int, ...], runs: int = 1) -> None:
        self.tool, self.shape, self.runs = tool, tuple(shape), runs
        self.entries: dict[tuple[str, str, str], _Entry] = {}
        self.touched: set[tuple[str, str, str]] = set()
        self.failed_here: set[int] = set()  # ids of the entries that failed on their own in the run under way
        self.not_imported: list[str] = []
        self.where = ""  # the run under way
        self.sizes: dict[tuple[str, str, str, int], str] = {}  # each size of each series: the run that gave it
        self.machine = _Machine()

    def start_run(self, where: str, host: str | None, gpus: dict[int, tuple[str | None, str | None]]) -> None:
        """A run begins: its machine must be the one the runs before it described."""
        self.where = where
        many = f"the output holds {self.runs} runs" if self.runs > 1 else "the output holds more than one run"
        if host:
            if self.machine.host and self.machine.host[0] != host:
                raise refusal(f"{many} from different machines ({self.machine.host[1]} on {self.machine.host[0]}, {where} on {host});"
                              " import them one at a time, one file per machine")  # fmt: skip
            self.machine.host = self.machine.host or (host, where)
        for index, (name, pci) in sorted(gpus.items()):
            seen = self.machine.gpus.get(index)
            if seen is None:
                self.machine.gpus[index] = (name, pci, where)
                continue
            if (name and seen[0] and name != seen[0]) or (pci and seen[1] and pci != seen[1]):
                before, this = " ".join(filter(None, seen[:2])), " ".join(filter(None, (name, pci)))
                raise refusal(f"{many} from different GPUs (cuda:{index} is {before} in {seen[2]} and {this} in {where});"
                              " import them one at a time, one file per machine")  # fmt: skip
            self.machine.gpus[index] = (seen[0] or name, seen[1] or pci, seen[2])

    def note(self, text: str) -> None:
        """Something of the output not imported, and why."""
        self.not_imported.append(one_line(text))

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

    def _size(self, mode: str, device: str, direction: str, nbytes: int) -> None:
        """A size of a series, given once: a second time means runs pasted together."""
        key = (mode, device, direction, nbytes)
        before = self.sizes.get(key)
        if before is None:
            self.sizes[key] = self.where
            return
        what = f"{mode} on {device} at {nbytes:,} B"
        if before == self.where:
            raise refusal(f"{self.where} holds {what} twice, as runs pasted one after another do; import them one at a time")
        raise refusal(f"the output holds {self.runs} runs that each measured {what} ({before} and {self.where}); import them one"
                      " at a time")  # fmt: skip

    def figure(self, mode: str, device: str, direction: str, nbytes: int, fields: dict[str, Any], gbps: float,
               samples: int, copies: int, notes: Sequence[str] = ()) -> None:  # fmt: skip
        """A printed figure as a point: the time per copy it implies, and the figure itself."""
        self._size(mode, device, direction, nbytes)
        entry = self.entry(mode, device, direction, nbytes, fields, notes)
        median_s = nbytes / (gbps * 1e9)
        entry.series.points.append(Point(0, nbytes, n=samples, median_s=median_s, mbps=gbps * 1e3, batches_per_s=1 / median_s,
                                         copies=copies))  # fmt: skip

    def gap(self, mode: str, device: str, direction: str, nbytes: int, fields: dict[str, Any], status: str, why: str,
            notes: Sequence[str] = ()) -> _Entry:  # fmt: skip
        """A size the tool did not measure (skipped) or failed at (error), with why."""
        self._size(mode, device, direction, nbytes)
        entry = self.entry(mode, device, direction, nbytes, fields, notes)
        entry.series.points.append(Point(0, nbytes, status=status, error=one_line(why)))
        return entry

    def fail(self, entry: _Entry, reason: str) -> None:
        """A series failed in the run under way, for a reason of its own."""
        entry.failures.append(one_line(reason))
        self.failed_here.add(id(entry))

    def end_run(self, failure: str | None) -> None:
        """A run is over: where it failed, every series it touched failed with it (its figures kept),
        unless the series already failed in it for a reason of its own."""
        failure = one_line(failure) if failure else None
        for key in self.touched if failure else ():
            entry = self.entries[key]
            if id(entry) not in self.failed_here and failure not in entry.failures:
                entry.failures.append(failure)
        self.touched, self.failed_here = set(), set()

    def unmeasured(self) -> list[str]:
        """Why each size the tool did not measure has no figure, as its point says: for a refusal to name
        (a size it failed at is named with its series' reason)."""
        return [f"{e.series.mode} on {e.series.device}: {p.error}" for e in self.entries.values() for p in e.series.points
                if p.status == "skipped" and p.error]  # fmt: skip

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
    return (0, int(index), "") if WHOLE.fullmatch(index) else (1, 0, device)


# Byte-order marks of the encodings a tool's output may be saved in besides UTF-8: PowerShell 5's `>`
# writes UTF-16 with a mark, and Windows editors may start UTF-8 with one.
MARKS = ((codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"), (codecs.BOM_UTF8, "utf-8-sig"))


def read_text(path: Path) -> str:
    """A tool's saved output: UTF-8, or what its byte-order mark says; line ends as on Linux, and
    without the codes of a coloured terminal, so a coloured paste reads as the plain one."""
    if Path(path).is_dir():  # Windows refuses to open a folder with "Permission denied", not IsADirectoryError
        raise refusal(f"{path} is a folder; give the file the tool's output was saved in")
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise refusal(f"{path}: no such file; give the file the tool's output was saved in") from None
    except IsADirectoryError:
        raise refusal(f"{path} is a folder; give the file the tool's output was saved in") from None
    except OSError as error:
        raise refusal(f"{path}: cannot read: {error.strerror or error}") from None
    codec = next((codec for mark, codec in MARKS if data.startswith(mark)), "utf-8")
    return plain(data.decode(codec, errors="replace"))


def plain(text: str) -> str:
    """Output as the tool printed it: a terminal's colour and title codes taken out, line ends as on Linux."""
    if "\x1b" in text:
        text = TERMINAL_CODES.sub("", text)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def split_lines(text: str) -> tuple[list[str], bool]:
    """The lines of an output, at line feeds only (a form feed or NEL inside a line is not a line end),
    and whether the last one is whole: a text that stops without a line end may have been cut in it."""
    lines = text.split("\n")
    ended = lines[-1] == ""
    if ended:
        lines.pop()
    return lines, ended


def versioned_runs(path: Path, text: str, is_version: Callable[[str], bool]) -> list[dict[str, Any]]:
    """Each run a file holds, from a tool's version line (what comes before the first one belongs to its run),
    so outputs pasted one after another are read as the runs they are: each with its `lines`, `where` (the
    file, and the run's number where there are several) and `cut` (the last run's last line may have lost
    its end)."""
    lines, ended = split_lines(text)
    runs: list[dict[str, Any]] = []
    for line in lines:
        versioned = is_version(line)
        if not runs or versioned and runs[-1]["versioned"]:
            runs.append({"lines": [], "versioned": False})
        runs[-1]["versioned"] = runs[-1]["versioned"] or versioned
        runs[-1]["lines"].append(line)
    for number, run in enumerate(runs, 1):
        run["where"] = f"{path} run {number}" if len(runs) > 1 else str(path)
        run["cut"] = number == len(runs) and not ended
    return runs


DECODER = json.JSONDecoder()
# Characters of the output given to the decoder at first from a brace, doubled while what it reads runs
# past them: a failed decode costs its error's line count from the start of what it was given, so
# giving it the whole rest of the output from every brace would cost the square of the output's size.
WINDOW = 64
TOKEN = 16  # the longest token a window can cut so that the decoder stops inside it (-Infinity, with room)


def json_values(text: str) -> Iterator[tuple[dict[str, Any] | None, int, int]]:
    """Each JSON object in a tool's output, whatever was printed around it, as (object, start, end); the
    object None where what starts at a brace does not parse (cut short, or not JSON), and end then where
    the decoder stopped. What lies before a failure belongs to the value that failed, objects inside it
    included: a document cut short is not read in part, since its parts lose what it says of them (a
    run's size). One pass: a decode resumes where the one before stopped, so each character is decoded
    a few times at most, however many braces the output holds."""
    start = text.find("{")
    while start >= 0:
        value, end = _decoded(text, start)
        yield value, start, end
        start = text.find("{", end)


def _decoded(text: str, start: int) -> tuple[dict[str, Any] | None, int]:
    """The object that starts at `start` and where it ends, or None and where the decoder stopped."""
    size = WINDOW
    while True:
        piece = text[start: start + size]
        try:
            value, end = DECODER.raw_decode(piece)
            return value, start + end
        except json.JSONDecodeError as error:
            unterminated = error.msg.startswith("Unterminated string")
            if start + size < len(text) and (unterminated or error.pos >= len(piece) - TOKEN):
                size *= 2  # the window, not the text, may have cut it
                continue
            # an unterminated string was read to the end of the text
            return None, len(text) if unterminated else start + max(error.pos, 1)
        except RecursionError:  # nested deeper than the decoder goes, as no tool's output is
            return None, _past_nesting(text, start)


def json_objects(text: str, keys: Sequence[str]) -> Iterator[tuple[dict[str, Any], int, int]]:
    """Each JSON object in a tool's output that holds one of `keys` (the outermost first, else the first
    inside it in printed order), with where the value that holds it starts and ends."""
    for value, start, end in json_values(text):
        found = first_with(value, keys) if value is not None else None
        if found is not None:
            yield found, start, end


def json_object(text: str, keys: Sequence[str]) -> Any:
    """The first JSON object in a tool's output that holds one of `keys`, whatever was printed around
    it; None if there is none."""
    return next((found for found, _, _ in json_objects(text, keys)), None)


def first_with(value: Any, keys: Sequence[str]) -> dict[str, Any] | None:
    """The first object in a decoded value, in printed order, that holds one of `keys`."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if any(key in item for key in keys):
                return item
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return None


STRUCTURE = re.compile(r'[{}\[\]"\\]')  # what nesting and strings turn on


def _past_nesting(text: str, start: int) -> int:
    """Where the brackets opened at `start` close (strings skipped), or the end of the text: one pass."""
    depth, inside, escaped = 0, False, -1
    for found in STRUCTURE.finditer(text, start):
        char, at = found.group(), found.start()
        if inside:
            if char == "\\" and escaped != at:
                escaped = at + 1  # the character after a backslash is taken as it stands
            elif char == '"' and escaped != at:
                inside = False
        elif char == '"':
            inside = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return at + 1
    return len(text)


def option(words: Sequence[str], names: Sequence[str]) -> str | None:
    """The value of a command-line option given as `-b 64`, `--bufferSize 64` or `--bufferSize=64`."""
    for i, word in enumerate(words):
        for name in names:
            if word == name and i + 1 < len(words):
                return words[i + 1]
            if word.startswith(name + "="):
                return word.split("=", 1)[1]
    return None


def as_int(text: Any) -> int | None:
    """A whole number as a tool or its command line gives one: a JSON integer, or ASCII digits."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    return int(text) if isinstance(text, str) and WHOLE.fullmatch(text) else None


def command_words(command: Any) -> list[str]:
    try:
        return shlex.split(str(command)) if command else []
    except ValueError:  # an unbalanced quote: split on blanks
        return str(command).split()


def peer_environment(given: dict[str, Any] | None, host: str | None, devices: dict[int, dict[str, Any]],
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


def label_gpus(environment: dict[str, Any], series: Sequence[Series], **fields: str) -> dict[str, Any]:
    """Give each GPU the series ran on a device entry with `fields` (vendor, runtime: core/vendors.py) where the
    entry does not hold them already: what a tool that runs on one vendor's runtime only says of every GPU it
    measured, though its output names neither. A capture's own (a runtime with its version) is kept."""
    listed = environment.setdefault("devices", [])
    for device_id in dict.fromkeys(s.device for s in series if s.device.startswith("cuda")):
        entry = next((d for d in listed if d.get("id") == device_id), None)
        if entry is None:
            entry = {"id": device_id, "kind": "cuda"}
            listed.append(entry)
        for key, value in fields.items():
            if entry.get(key) is None:
                entry[key] = value
    return environment


def peer_facts(tool: str, versions: Sequence[str | None], git_versions: Sequence[str | None], commands: list[str],
               paths: Sequence[Path], sizes: Sequence[int], not_imported: list[str], **extra: Any) -> dict[str, Any]:  # fmt: skip
    from xferbench import __version__

    def joined(values: Sequence[str | None]) -> str | None:
        return ", ".join(dict.fromkeys(v for v in values if v)) or None

    return {"tool": tool, "version": joined(versions), "git_version": joined(git_versions), "commands": commands,
            "files": [str(p) for p in paths], "sizes_bytes": sorted(set(sizes)), **extra, "not_imported": not_imported,
            "imported_by": f"xferbench {__version__}", "imported": now()}  # fmt: skip


def peer_result(environment: dict[str, Any], series: list[Series], paths: Sequence[Path]) -> Result:
    from xferbench import __version__

    return Result(environment=environment, config={"imported_from": [str(p) for p in paths]}, created=environment["peer"]["imported"],
                  series=series, status="complete", xferbench_version=__version__)  # fmt: skip

