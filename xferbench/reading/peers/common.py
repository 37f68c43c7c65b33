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
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from xferbench.core.environment import pci_key
from xferbench.core.errors import XferbenchError
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
    of its own host-to-device copy from pinned memory, which `fleet` takes as the tool's ceiling."""

    name: str
    read: Callable[..., Result]
    ceiling: str


def item_for(sizes: Sequence[int], shape: tuple[int, ...] = DEFAULT_SHAPE) -> tuple[int, ...]:
    """The item shape a series is counted in: the first of `shape`, 1 MiB, 1000 B and 1 B that divides
    every size it holds, so one testcase stays one series."""
    return next(item for item in (tuple(shape), *ITEMS) if all(nbytes % math.prod(item) == 0 for nbytes in sizes))


def one_line(text: Any) -> str:
    return " ".join(str(text).split())


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class _Entry:
    """One series being filled: its points, and what befell it run by run."""

    series: Series
    failures: list[str] = field(default_factory=list)
    waived: str | None = None
    notes: dict[str, None] = field(default_factory=dict)


class Builder:
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


def read_text(path: Path) -> str:
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
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    return int(text) if isinstance(text, str) and text.isdigit() else None


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

