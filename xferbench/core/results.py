"""The versioned result file: written after every point, loaded into a tidy pandas frame.

The schema is documented in docs/results.md. Statistics in the file are derived from the raw
samples kept beside them, so a reader can always recompute them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import os
import signal
import stat
import statistics
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

from xferbench.core.errors import XferbenchError, printable
from xferbench.core.schema import POINT, RUN, SERIES, Unfit
from xferbench.core.spec import BIDIR, H2D, HOST_ENV, PER_CALL, SeriesKey, Spec, usual_source
from xferbench.core.stats import Overlap, Summary, overlap_stats, point_stats, summarize
from xferbench.core.timing import Samples

if TYPE_CHECKING:
    import pandas as pd

SCHEMA_NAME = "xferbench"
SCHEMA_VERSION = 1
SCHEMA = f"{SCHEMA_NAME}/{SCHEMA_VERSION}"


BUSY_SHARE = 0.25  # other processes' share of this process's CPUs from which a point is called spoiled


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


@dataclass
class Point:
    batch_size: int
    bytes: int
    status: str = "ok"  # "ok" | "error" | "skipped"
    error: str | None = None
    warmup_calls: int = 0
    times_s: list[float] = field(default_factory=list)
    device_times_s: list[float] = field(default_factory=list)
    n: int = 0
    median_s: float | None = None
    p10_s: float | None = None
    p90_s: float | None = None
    mbps: float | None = None
    mbps_p10: float | None = None
    mbps_p90: float | None = None
    batches_per_s: float | None = None
    images_per_s: float | None = None
    device_median_s: float | None = None
    device_mbps: float | None = None
    host_offset: int | None = None  # the source's address mod 64 (0: 64-byte aligned), where known
    page_faults_per_call: float | None = None  # the process's minor page faults while sampling, per call
    copies: int | None = None  # streamed: the copies each sample timed (times_s are per copy); None per call
    transfers: int | None = None  # every transfer the point issued (warm-up, verification, samples), where counted
    verify_s: float | None = None  # seconds the whole-buffer verification took, outside every sample
    host_nodes: dict[str, int] | None = None  # the source's sampled pages per NUMA node ("-1": not resident)
    pin_s: float | None = None  # seconds pinning the source in place took, once per point (cuda raw_registered)
    staging_chunk_bytes: int | None = None  # host/staged: the chunk this point copied by, at most its batch; None elsewhere
    others_cpus: float | None = None  # other processes' CPU time on this process's CPUs while measured, in CPUs
    run_wait: float | None = None  # seconds this process's threads waited for a CPU, per second measured
    cpus: int | None = None  # how many CPUs this process could run on
    # bidir: each direction's own seconds per call, timed by its stream's events, and its MB/s from their
    # median (the point's own mbps is both directions together); None for one direction
    direction_times_s: dict[str, list[float]] | None = None
    direction_mbps: dict[str, float] | None = None
    # Run with other devices at once: when this point's sampling began and ended (time.monotonic, the
    # same clock in every process), and the share of it during which every device of the run sampled
    window_s: list[float] | None = None
    overlap: float | None = None
    # --overlap on a pipeline: the kernel, its repeats per step (sized to this point's median), and the
    # seconds of the kernel alone and of a step (the next batch, then the kernel fed by it), per call
    compute: dict[str, Any] | None = None

    def overlap_figures(self) -> Overlap | None:
        """The copy, compute and step medians of --overlap, where this point has them."""
        record = self.compute
        if not record or not self.times_s or not record.get("compute_times_s") or not record.get("step_times_s"):
            return None
        return overlap_stats(self.times_s, record["compute_times_s"], record["step_times_s"])

    @property
    def busy(self) -> bool:
        """Measured while other processes took a fair share (BUSY_SHARE) of this process's CPUs."""
        return self.others_cpus is not None and self.others_cpus >= BUSY_SHARE * (self.cpus or 1)

    @classmethod
    def measured(cls, spec: Spec, samples: Samples, warmup_calls: int) -> Point:
        stats = point_stats(samples.times_s, spec.moved_bytes, spec.batch_size)
        point = cls(spec.batch_size, spec.moved_bytes, warmup_calls=warmup_calls, times_s=samples.times_s)
        for name, value in dataclasses.asdict(stats).items():
            setattr(point, name, _finite(value) if isinstance(value, float) else value)
        if samples.device_times_s:
            point.device_times_s = samples.device_times_s
            device = point_stats(samples.device_times_s, spec.moved_bytes, spec.batch_size)
            point.device_median_s, point.device_mbps = device.median_s, _finite(device.mbps)
        if samples.by_direction:
            point.direction_times_s = samples.by_direction
            point.direction_mbps = {way: _finite(point_stats(times, spec.nbytes, spec.batch_size).mbps)
                                    for way, times in samples.by_direction.items()}  # fmt: skip
        return point

    @classmethod
    def failed(cls, spec: Spec, status: str, error: str) -> Point:
        return cls(spec.batch_size, spec.moved_bytes, status=status, error=error)


@dataclass
class Series:
    framework: str
    mode: str
    op: str
    device: str
    shape: list[int]
    host_buffer: str = ""  # "" (or absent, in files older than the field): the path's usual_source
    method: str = PER_CALL  # how each point was timed: per-call, or streamed (spec.TIMING_METHODS)
    direction: str = H2D  # h2d, d2h or bidir (spec.DIRECTIONS); files older than the field measured h2d
    concurrent: int = 1  # how many devices ran this path at the same time (1: alone)
    device_name: str | None = None
    transfer: str | None = None
    clock: str | None = None
    sync: str | None = None
    device_clock: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    note: str | None = None  # what the path really computes, where that differs from its name
    status: str = "ok"  # "ok" | "skipped" (could not run here) | "failed" (bytes did not arrive)
    reason: str | None = None
    points: list[Point] = field(default_factory=list)
    summary: Summary = field(default_factory=Summary)
    # NVML samples of the GPU's PCIe link taken while the series ran (sampler.LinkSampler); {} off CUDA
    link: dict[str, Any] = field(default_factory=dict)
    # Where the worker ran and allocated: the CPUs and NUMA node it was bound to, or why not (numa.py); {} off CUDA
    numa: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.host_buffer = self.host_buffer or usual_source(self.framework, self.mode)

    @classmethod
    def of(cls, key: SeriesKey) -> Series:
        """An empty series for a key, to be described and filled by measure_series."""
        return cls(key.framework, key.mode, key.op, key.device, list(key.shape), key.host_buffer, key.method, key.direction,
                   key.concurrent)

    @property
    def key(self) -> SeriesKey:
        return SeriesKey(self.framework, self.mode, self.op, self.device, tuple(self.shape), self.host_buffer, self.method,
                         self.direction, self.concurrent)

    def label(self) -> str:
        return self.key.label()

    def ok_points(self) -> list[Point]:
        return [p for p in self.points if p.status == "ok" and p.median_s]

    def refresh_summary(self) -> None:
        ok = self.ok_points()
        self.summary = summarize(
            [p.batch_size for p in ok], [p.bytes for p in ok], [p.median_s or 0.0 for p in ok], [p.busy for p in ok]
        )
        if self.is_peer:  # a peer's aggregate figures, one per size: a peak, but no fit, saturation or cliff
            self.summary = dataclasses.replace(self.summary, saturation_batch_size=None, latency_s=None, bandwidth_mbps=None,
                                               half_bandwidth_bytes=None, fit_rel_rms=None, cliff=False,
                                               cliff_batch_size=None, cliff_drop=None)  # fmt: skip

    @property
    def is_peer(self) -> bool:
        """Whether the series holds another tool's figures (xferbench import): its params name the tool."""
        return bool((self.params or {}).get("tool"))


@dataclass
class Result:
    environment: dict[str, Any]
    config: dict[str, Any]
    created: str
    series: list[Series] = field(default_factory=list)
    status: str = "running"  # "running" (or crashed) | "complete" | "interrupted"
    schema: str = SCHEMA
    xferbench_version: str = ""
    check: dict[str, Any] | None = None  # xferbench check's verdicts per GPU (check.to_dict); None for a sweep
    # Not in the file: what reading it left out (a series or point that does not fit the schema) and read as
    # absent (an optional field that does not), each named, as damaged_points gives them to readers
    left_out: list[str] = field(default_factory=list, compare=False, repr=False)
    read_as_absent: list[str] = field(default_factory=list, compare=False, repr=False)

    def measured_points(self) -> int:
        """The points measured so far: what a save holds and what a stopped run reports, counted one way."""
        return sum(p.status == "ok" for s in self.series for p in s.points)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        del data["left_out"], data["read_as_absent"]  # what a reader made of a file, not part of it
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """Build from a loaded file, each field checked against the schema (xferbench.core.schema) and fields
        added by later minor versions ignored. A series or point that does not fit is left out, an optional
        field that does not fit is read as absent, each named in `left_out` and `read_as_absent`; a run-level
        field that does not fit raises a one-line XferbenchError naming it."""
        run_notes: list[Unfit] = []
        try:
            run = RUN.read(data, run_notes)
        except Unfit as unfit:
            raise XferbenchError(str(unfit)) from None
        absent = [f"{note}{READ_AS_ABSENT}" for note in run_notes]
        left_out: list[str] = []
        series = []
        for index, record in enumerate(run.get("series", [])):
            notes: list[Unfit] = []
            try:
                found = SERIES.read(record, notes)
            except Unfit as unfit:
                left_out.append(f"series {index} {unfit}{LEFT_OUT}")
                continue
            summary = _known(Summary, found.get("summary", {}))
            series.append(_known(Series, {**found, "points": [], "summary": summary}))
            label = series[-1].label()
            absent += [f"{label} {note}{READ_AS_ABSENT}" for note in notes]
            for number, item in enumerate(found.get("points", [])):
                point, unreadable, notes = _read_point(item)
                if point is None:
                    left_out.append(f"{label} point {number} {unreadable}{POINT_LEFT_OUT}")
                    continue
                series[-1].points.append(point)
                absent += [f"{label} batch {point.batch_size} {note}{READ_AS_ABSENT}" for note in notes]
            _mark_damaged(series[-1])
            if series[-1].ok_points() or any(p.status == DAMAGED for p in series[-1].points):
                series[-1].refresh_summary()  # derived figures are recomputed from the points: a reader trusts no cached summary
        result = _known(cls, {**run, "series": series})
        result.left_out, result.read_as_absent = left_out, absent
        return result

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, allow_nan=False)

    def save(self, path: str | os.PathLike[str], csv: bool = False) -> None:
        """Write atomically (temp file + rename), so a crash mid-write never leaves a torn file."""
        path = Path(path)
        write_whole(path, self.to_json())
        if csv:
            write_whole(csv_path(path), self.to_frame().to_csv(index=False))

    def to_frame(self) -> pd.DataFrame:
        """One row per point, with the series keys and environment essentials as columns."""
        import pandas as pd

        env = self.environment
        rows = []
        for s in self.series:
            for p in s.points:
                row = {
                    "host": env.get("host"),
                    "created": self.created,
                    "framework": s.framework,
                    "mode": s.mode,
                    "op": s.op,
                    "device": s.device,
                    "device_name": s.device_name,
                    "transfer": s.transfer,
                    "host_buffer": s.host_buffer,
                    "method": s.method,
                    "direction": s.direction,
                    "concurrent": s.concurrent,
                    "shape": "x".join(map(str, s.shape)),
                }
                row.update({k: v for k, v in dataclasses.asdict(p).items() if k not in ("times_s", "device_times_s", "host_nodes", "direction_times_s", "direction_mbps", "window_s", "compute")})
                for way, mbps in (p.direction_mbps or {}).items():
                    row[f"{way}_mbps"] = mbps
                row.update(os=env.get("os"), cpu=env.get("cpu"), python=env.get("python"))
                row.update({f"{name}_version": v for name, v in env.get("versions", {}).items() if name != "xferbench"})
                rows.append(row)
        return pd.DataFrame(rows)


@functools.cache
def _field_names(cls: Any) -> frozenset[str]:
    """The fields a file may set on a class (a Result's record of what reading left out is not one)."""
    return frozenset(f.name for f in dataclasses.fields(cls) if f.name not in ("left_out", "read_as_absent"))


def _known(cls: Any, data: dict[str, Any]) -> Any:
    names = _field_names(cls)
    return cls(**{k: v for k, v in data.items() if k in names})


def _mark_damaged(series: Series) -> None:
    """Mark each point whose samples cannot be what a run wrote DAMAGED, saying why, so that it is named and
    left out of every figure and verdict (and of the summary, recomputed after)."""
    item = math.prod(series.shape) if series.shape else None
    ways = 2 if series.direction == BIDIR else 1
    seen = [p.batch_size for p in series.points]
    for point in series.points:
        why = _damage(point, item, ways) if point.status == "ok" else None
        if seen.count(point.batch_size) > 1:  # which of two is the run's? neither can be trusted
            why = f"batch {point.batch_size} appears {seen.count(point.batch_size)} times in this series"
        if why:
            point.status, point.error = DAMAGED, f"damaged in the file: {why}"


def _read_point(item: Any) -> tuple[Point | None, Unfit | None, list[Unfit]]:
    """A point of a file, as the schema allows it: (point, None, fields read as absent); a point whose
    samples or status do not fit comes back damaged (status DAMAGED, error saying why); one whose batch or
    bytes cannot be read at all is (None, why, []): it cannot even be named by its batch."""
    notes: list[Unfit] = []
    try:
        return _known(Point, POINT.read(item, notes)), None, notes
    except Unfit as unfit:
        first = unfit
    kept = dict(item) if isinstance(item, dict) else {}
    while True:  # what does fit stays, so the damaged point keeps its batch and whatever else it can
        notes = []
        try:
            point = _known(Point, POINT.read(kept, notes))
            break
        except Unfit as unfit:
            if unfit.field in ("", "batch_size", "bytes") or unfit.field not in kept:
                return None, first, []
            del kept[unfit.field]
    point.status, point.error = DAMAGED, f"damaged in the file: {first}"
    return point, None, notes


FileIdentity = tuple[int, int, int, int]


def _identity(stat_result: os.stat_result) -> FileIdentity:
    """Which file this is: an inode number alone may be reused by the next file made after a delete."""
    return stat_result.st_dev, stat_result.st_ino, stat_result.st_size, stat_result.st_mtime_ns


def _write_durably(handle: IO[Any], data: str | bytes) -> FileIdentity:
    """Write, flush to the disk, and say which file it was."""
    handle.write(data)
    handle.flush()
    os.fsync(handle.fileno())
    return _identity(os.fstat(handle.fileno()))


def write_whole(path: Path, data: str | bytes) -> FileIdentity:
    """All of `data` at `path`, or the file as it was: a temp file of this writer's own (even among threads),
    synced, then renamed over it. A write cut short (Ctrl-C, a full disk) leaves no temp file behind.
    Returns the new file's identity."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(temp, "wb") if isinstance(data, bytes) else open(temp, "w", encoding="utf-8") as handle:
            identity = _write_durably(handle, data)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return identity


def csv_path(path: Path) -> Path:
    """Where --csv writes the per-point table: beside the JSON, with the suffix .csv."""
    return path.with_suffix(".csv")


DEFAULT_FOLDER = Path("runs")  # a user's own sweeps land here (ignored by git in a checkout)


def safe_name(text: str) -> str:
    """A name safe in a file name: anything but letters, digits, '_', '.' and '-' becomes '-'."""
    import re

    return re.sub(r"[^A-Za-z0-9_.-]", "-", text)


HOST_NAME_MAX = 64  # characters of a host name in a file name: a cloud FQDN can run to 253


def host_name() -> str:
    """This machine's name ($XFERBENCH_HOST where set), safe in a file name: result files from many
    nodes can share a folder. A longer one keeps its start and a digest of the whole, so two long
    names that share a start still name two files."""
    import hashlib
    import platform

    name = safe_name(os.environ.get(HOST_ENV) or platform.node() or "host")
    if len(name) <= HOST_NAME_MAX:
        return name
    return f"{name[: HOST_NAME_MAX - 9]}-{hashlib.sha1(name.encode()).hexdigest()[:8]}"


NAME_MAX = 255  # bytes in one file or folder name on Linux, macOS and Windows file systems


HOST_PLACEHOLDERS = ("%h", "{host}")  # in --out, replaced by host_name(): one file per node from one command line


def output_path(out: str | None, name: str) -> tuple[Path, bool]:
    """Where `--out OUT` puts a result file called `name`, and whether the name may be numbered.

    No --out: DEFAULT_FOLDER/name. An --out that ends with a slash or names a folder: that folder/name.
    A name in a folder is numbered -2, -3... when taken; a file the user named is used as named.
    %h or {host} in OUT is this machine's name (host_name), as a Slurm or Kubernetes job needs.
    """
    for placeholder in HOST_PLACEHOLDERS if out is not None else ():
        out = out.replace(placeholder, host_name())  # type: ignore[union-attr]
    if out is None:
        return DEFAULT_FOLDER / name, True
    long = next((part for part in Path(out).parts if len(os.fsencode(part)) > NAME_MAX), None)
    if long is not None:  # said before anything is measured, not as an OSError from deep in a save
        raise XferbenchError(f"--out: the name {long[:40]}… is {len(os.fsencode(long))} bytes, longer than the {NAME_MAX}"
                             " a file system takes; choose a shorter --out")  # fmt: skip
    if out.endswith(("/", os.sep)) or Path(out).is_dir():
        return Path(out) / name, True
    return Path(out), False


def refuse_unless_regular(path: Path, option: str = "--out") -> None:
    """xferbench replaces regular files only: never a link, a device, a pipe or a folder."""
    if os.path.lexists(path) and not stat.S_ISREG(os.lstat(path).st_mode):
        what = "a folder" if path.is_dir() and not path.is_symlink() else "not a regular file (a link, device or pipe)"
        raise XferbenchError(f"{option} {path} is {what}; xferbench writes only regular files: choose another {option}")


def why_unwritable(path: Path, error: OSError) -> str:
    """Why a file could not be written: where a file stands in place of one of its folders, that file
    (the OS's own words, "File exists" or "Not a directory", do not name it), else the OS's reason."""
    blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
    return f"{blocker} is a file, not a folder" if blocker else str(error.strerror or error)


def refuse_existing(path: Path, option: str, overwrite: bool) -> None:
    """An existing file may be the only copy of a long run, or the figure an issue links: replaced only
    when asked (--overwrite)."""
    if path.exists() and not path.is_dir() and not overwrite:
        raise XferbenchError(f"{path} already exists; choose another {option}, or add --overwrite to replace it")


def check_writable(path: str | os.PathLike[str], csv: bool = False, overwrite: bool = False, numbered: bool = False,
                   what: str = "results") -> Path:  # fmt: skip
    """Create the folder and prove a file can be written there, before anything is measured (or drawn:
    `what` the file will hold, for the messages).

    An existing result is never replaced unless asked: it may be the only copy of a long run; and
    nothing but a regular file is ever replaced (a link, a device, a pipe or a folder stays).
    """
    path = Path(path)
    if not numbered:
        if path.is_dir():
            raise XferbenchError(f"--out {path} is a directory; give a file name such as {path / 'run.json'}")
        refuse_unless_regular(path)
        refuse_existing(path, "--out", overwrite)
    if csv and csv_path(path) == path:
        raise XferbenchError(f"--out {path} would be overwritten by --csv; give the result file a .json name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".xferbench-probe-"):
            pass
    except OSError as error:
        raise XferbenchError(f"cannot write {what} to {path}: {why_unwritable(path, error)}; choose another --out") from None
    return path


class SaveFailed(XferbenchError):
    """A result could not be written for an OS reason; the message says what the file still holds."""


# The signals that stop a run: Ctrl-C, a kill, and on Windows Ctrl-Break.
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGBREAK") if hasattr(signal, name))


@contextlib.contextmanager
def stops_deferred() -> Iterator[None]:
    """Hold back a stop signal that arrives while the block runs, then deliver it to the handler it would
    have reached. Only the main thread receives signals, so only there is anything held back."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    handlers = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    for signum, handler in handlers.items():
        if handler not in (signal.SIG_IGN, None):
            signal.signal(signum, lambda number, frame: held.append(number))
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            if handler not in (signal.SIG_IGN, None):
                signal.signal(signum, handler)
        if held:
            signal.raise_signal(held[0])


class OutputFile:
    """A result file this run owns: claimed by creating it exclusively at the first save, so two runs
    never share one, and it holds a loadable result from the moment it exists.

    Every later save checks the file is still the one this run wrote last; if something replaced or
    removed it, the run moves to a fresh numbered name rather than write over another run's file.
    """

    def __init__(self, path: Path, csv: bool = False, overwrite: bool = False, numbered: bool = False) -> None:
        self.path, self.csv, self.overwrite, self.numbered = check_writable(path, csv, overwrite, numbered), csv, overwrite, numbered
        self.asked = self.path  # the name the run was given, before any number
        self.lock = threading.RLock()
        self.written: FileIdentity | None = None  # the file this run wrote last
        self.saved_points = 0  # measured points in the last complete save
        self.moved_from: Path | None = None  # where the run wrote before something else took that file
        self.rewritten = False  # the file was removed during the run and written again under its own name

    @property
    def replaces(self) -> bool:
        """Whether the run will replace an earlier file (--overwrite) it has not written yet."""
        return self.overwrite and not self.numbered and self.written is None and self.path.exists()

    def _claim(self, text: str, numbered: bool) -> None:
        # Numbered from the name asked for: a run that moves twice goes to r-3.json, never r-2-2.json.
        path, stem, number = self.path, self.asked.stem, 1
        try:
            path.parent.mkdir(parents=True, exist_ok=True)  # a folder removed mid-run is made again
        except OSError:
            pass  # os.open says why below
        while True:
            try:
                handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                break
            except FileExistsError:
                if not numbered:
                    raise XferbenchError(f"{path} was just created by another run; choose another --out") from None
                number += 1
                path = self.asked.with_name(f"{stem}-{number}{self.asked.suffix}")
        with os.fdopen(handle, "w") as file:
            self.path, self.written = path, _write_durably(file, text)

    def save(self, result: Result) -> None:
        """Write the result; any OS failure (no space, file too large, quota, I/O error) becomes one
        SaveFailed that says what the file on disk still holds. One save at a time: a concurrent run's
        threads and its main thread (stopping) may save at once. A Ctrl-C or kill during the save is
        raised once it is whole: cut between the rename and its record, the next save would take this
        run's own file for another run's."""
        with stops_deferred(), self.lock:
            self._save_once(result)

    def _save_once(self, result: Result) -> None:
        try:
            self._save(result)
        except OSError as error:
            for temp in self.path.parent.glob(f".{self.path.name}.{os.getpid()}.*.tmp"):  # a torn temp file is no save
                temp.unlink(missing_ok=True)
            held = (f"it holds the last complete save ({self.saved_points} measured point(s))" if self.written is not None
                    else "nothing was written; choose another --out")  # fmt: skip
            raise SaveFailed(f"cannot save to {self.path}: {error.strerror or error}; {held}") from None
        self.saved_points = result.measured_points()

    def rescue(self, result: Result) -> Path | None:
        """Write the whole result under a fresh name beside the file, else in the temp folder: where the
        points a failed save would have lost are kept. None when nowhere takes it."""
        text = result.to_json()
        for folder in (self.path.parent, Path(tempfile.gettempdir())):
            for number in range(1, 100):
                path = folder / f"{self.path.stem}-unsaved-{number}{self.path.suffix}"
                try:
                    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                except FileExistsError:
                    continue
                except OSError:
                    break
                try:
                    with os.fdopen(handle, "w") as file:
                        _write_durably(file, text)
                    return path
                except OSError:
                    path.unlink(missing_ok=True)
                    break
        return None

    def _save(self, result: Result) -> None:
        text = result.to_json()
        if self.written is None and self.replaces:
            if not any(p.status == "ok" for s in result.series for p in s.points):
                return  # --overwrite: the earlier result stays until this run has a point to put in its place
            self.written = write_whole(self.path, text)  # replaced in one step (check_writable proved it a regular file)
        elif self.written is None:
            self._claim(text, self.numbered)
        else:
            try:
                ours = _identity(os.lstat(self.path)) == self.written
            except FileNotFoundError:
                ours = False
            if ours:
                self.written = write_whole(self.path, text)
            else:
                before = self.path
                self._claim(text, numbered=True)
                if self.path == before:  # removed, not replaced: the name was free again
                    self.rewritten = True
                else:
                    self.moved_from = self.moved_from or before
        if self.csv:
            write_whole(csv_path(self.path), result.to_frame().to_csv(index=False))


MAX_FILE_MB_ENV = "XFERBENCH_MAX_FILE_MB"  # raises the size a reader accepts, for a file known to be that large
MAX_FILE_MB = 256  # a sweep of every path writes a few MB: past this, a file is checked before it is parsed


def max_file_bytes() -> int:
    """The largest result file a reader parses: MAX_FILE_MB, or what XFERBENCH_MAX_FILE_MB says."""
    text = os.environ.get(MAX_FILE_MB_ENV, "").strip()
    try:
        mb = float(text) if text else MAX_FILE_MB
    except ValueError:
        mb = math.nan
    if not math.isfinite(mb) or mb <= 0:
        raise XferbenchError(f"{MAX_FILE_MB_ENV}={text!r}: give a size in MB, such as 1024")
    return int(mb * 1e6)


def _megabytes(size: int) -> str:
    """A size in MB as a person writes it: 1,024 and 1.5, never 1.02e+03."""
    return f"{size / 1e6:,.0f}" if size >= 100e6 else f"{size / 1e6:.3g}"


def load(path: str | os.PathLike[str]) -> Result:
    """Read a result file; a one-line XferbenchError says what is wrong with a bad one, its control
    characters escaped (a file's name, or a field of it, may hold any). Its size is checked before it is
    parsed (parsed JSON takes many times the file's size in memory), and every field against the schema."""
    try:
        return _load(Path(path))
    except XferbenchError as error:
        raise XferbenchError(printable(str(error))) from None


def _load(path: Path) -> Result:
    try:
        limit = max_file_bytes()
        if path.stat().st_size > limit:
            raise XferbenchError(f"{path}: {_megabytes(path.stat().st_size)} MB, larger than the {_megabytes(limit)} MB a result"
                                 f" file is read up to; if it really is one, set {MAX_FILE_MB_ENV} higher")  # fmt: skip
        data = json.loads(path.read_bytes().decode("utf-8-sig"))  # a sweep writes UTF-8; an editor may add a BOM
    except RecursionError:  # nested thousands deep: no sweep writes that
        raise XferbenchError(f"{path}: not an xferbench result file (JSON nested too deeply)") from None
    except FileNotFoundError:
        raise XferbenchError(f"{path}: no such file") from None
    except UnicodeDecodeError:  # an image, an archive: the wrong file given, not a damaged result
        raise XferbenchError(f"{path}: not an xferbench result file (not UTF-8 text); give the .json a sweep wrote") from None
    except OSError as error:
        raise XferbenchError(f"{path}: cannot read: {error.strerror or error}") from None
    except json.JSONDecodeError as error:
        raise XferbenchError(f"{path}: not an xferbench result file (not JSON: {error.msg} at line {error.lineno})") from None
    except ValueError as error:  # a number of thousands of digits, which Python refuses to convert
        raise XferbenchError(f"{path}: not an xferbench result file (not JSON as a sweep writes it: {error})") from None
    schema = data.get("schema") if isinstance(data, dict) else None
    name, _, version = schema.partition("/") if isinstance(schema, str) else ("", "", "")
    if name != SCHEMA_NAME or not (version.isascii() and version.isdigit()):
        raise XferbenchError(f"{path}: not an xferbench result file (no 'schema': '{SCHEMA}' field)")
    if int(version[:9]) > SCHEMA_VERSION or len(version) > 9:
        from xferbench import __version__

        writer = data.get("xferbench_version")
        by = f" by xferbench {writer}" if isinstance(writer, str) else ""
        raise XferbenchError(
            f"{path}: written{by} with schema {schema}, newer than this xferbench ({__version__}) reads ({SCHEMA});"
            " update xferbench to read it (in a checkout: git pull, then pip install -e .)"
        )
    try:
        result = Result.from_dict(data)
    except XferbenchError as error:
        raise XferbenchError(f"{path}: {error}") from None
    _refuse_unusable(path, result)
    return result


def _refuse_unusable(path: Path, result: Result) -> None:
    """A file whose every measured point is damaged, or whose every series was left out, gives nothing a
    reader may use: refused in one line naming the first damage, never turned into a verdict."""
    if any(p.status == "ok" for s in result.series for p in s.points):
        return
    damaged = [p for s in result.series for p in s.points if p.status == DAMAGED]
    if damaged:
        raise XferbenchError(f"{path}: every measured point is damaged ({damaged[0].error}); nothing in it can be used:"
                             " measure again")  # fmt: skip
    if result.left_out:
        first = result.left_out[0].removesuffix(LEFT_OUT).removesuffix(POINT_LEFT_OUT)
        raise XferbenchError(f"{path}: {first}; nothing in it can be used: measure again")


LEFT_OUT, POINT_LEFT_OUT = "; the series is left out", "; the point is left out"  # a series or point the schema could not read
READ_AS_ABSENT = "; read as absent"  # how an optional field the schema could not read is named
DAMAGED = "damaged"  # a point's status set when a file is read: its samples cannot be what a run wrote


def _damage(point: Point, item_bytes: int | None = None, ways: int = 1) -> str | None:
    """Why a point's recorded samples cannot be trusted, or None. A sweep writes finite, positive
    times whose count and median match the point's own figures, and bytes that are its batch times
    the item's bytes per call (`ways`: 2 for bidir, a batch each way); anything else was damaged after."""
    if point.batch_size <= 0 or point.bytes <= 0:
        return f"batch {point.batch_size} of {point.bytes} bytes"
    if item_bytes and point.bytes != ways * point.batch_size * item_bytes:
        each = "2 × " if ways == 2 else ""
        return f"{point.bytes:,} bytes, not {each}batch {point.batch_size} × {item_bytes:,} bytes per item"
    for name in ("times_s", "device_times_s"):
        values = getattr(point, name)
        if values and (not all(map(math.isfinite, values)) or min(values) <= 0):
            return f"a time in '{name}' is not a positive number"
    if point.compute is not None:
        record = point.compute
        repeats = record.get("repeats") if isinstance(record, dict) else None
        if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
            return "its 'compute' record has no whole number of kernel repeats"
        for name in ("compute_times_s", "step_times_s"):
            values = record.get(name)
            if not isinstance(values, list) or not values or any(
                    not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v <= 0 for v in values):
                return f"'compute' has no list of positive times in '{name}'"
    if point.times_s:
        if point.n != len(point.times_s):
            return f"n is {point.n} but it holds {len(point.times_s)} times"
        median = statistics.median(point.times_s)
        if point.median_s is None or not math.isclose(median, point.median_s, rel_tol=1e-6):
            return f"its median time is recorded as {point.median_s} but its samples give {median:.6g}"
    elif point.median_s is None or not math.isfinite(point.median_s) or point.median_s <= 0:
        return "no samples and no positive median time"  # a peer's figure keeps no samples, but a median
    if point.mbps is None or not math.isclose(point.mbps, point.bytes / point.median_s / 1e6, rel_tol=1e-6):
        return f"its MB/s is recorded as {point.mbps} but its bytes and median give {point.bytes / point.median_s / 1e6:.6g}"
    return None


def damaged_points(result: Result) -> list[str]:
    """What a loaded file held that readers cannot use, each named: every damaged point as "series batch N
    (why)", then each series or point left out as the schema could not read it, then each field read as
    absent. Readers name these and leave them out of every figure and verdict."""
    points = [f"{s.label()} batch {p.batch_size} ({p.error.removeprefix('damaged in the file: ') if p.error else 'damaged'})"
              for s in result.series for p in s.points if p.status == DAMAGED]  # fmt: skip
    return points + result.left_out + result.read_as_absent


@dataclass(frozen=True)
class Selection:
    """Which series to show: each field lists accepted values; an empty field accepts all."""

    frameworks: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    ops: tuple[str, ...] = ()
    devices: tuple[str, ...] = ()
    host_buffers: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    directions: tuple[str, ...] = ()

    def matches(self, series: Series) -> bool:
        pairs = ((self.frameworks, series.framework), (self.modes, series.mode), (self.ops, series.op),
                 (self.devices, series.device), (self.host_buffers, series.host_buffer),
                 (self.methods, series.method), (self.directions, series.direction))  # fmt: skip
        return all(not accepted or value in accepted for accepted, value in pairs)


@dataclass
class Selected:
    """One series picked for a plot, report or comparison, with the file it came from."""

    path: Path
    result: Result
    series: Series

    def why_empty(self) -> str:
        """Why a matching series has no curve: a warning for the terminal and a line in the report."""
        series = self.series
        why = series.reason or next((p.error for p in series.points if p.error), None) or "no point was measured"
        failed = "FAILED" if series.status == "failed" else "has no measured point"
        return f"{self.path}: {series.label()} {failed} ({why}); left out of the curves"


def file_labels(files: list[tuple[Path, Result]]) -> list[str]:
    """Short names that tell result files apart: the host names where they differ, else the file
    stems, else the paths."""
    for labels in ([r.environment.get("host") for _, r in files], [p.stem for p, _ in files]):
        if all(labels) and len(set(labels)) == len(labels):
            return [str(label) for label in labels]
    return [str(p) for p, _ in files]


def by_bytes(picks: Sequence[Selected]) -> bool:
    """Whether sizes, not batches, locate the figures of these series (in tables and on a plot's axis):
    their items differ in shape, or a peer's buffers are among them (counted in items of its own, a
    peer's "batch 512" may be 512 MiB: no batch of images)."""
    shapes = {tuple(pick.series.shape) for pick in picks}
    return len(shapes) > 1 or any(pick.series.is_peer for pick in picks)


def select(paths: list[Path], selection: Selection | None = None) -> tuple[list[Selected], list[Selected]]:
    """Load the files and pick the matching series that have measured points.

    Returns the picks and the matching series left out for having no measured point (a series
    skipped because it could not run there is not among them: nothing went wrong).
    Raises a one-line XferbenchError for a bad file, a file given twice, or when nothing is left.
    """
    if not paths:
        raise XferbenchError("give at least one result file")
    resolved = [Path(p).resolve() for p in paths]
    for i, where in enumerate(resolved):
        if where in resolved[:i]:
            raise XferbenchError(f"{paths[i]} is given twice; give each result file once")
    selection = selection or Selection()
    picked, empty, matching = [], [], 0
    for path in paths:
        result = load(path)
        for series in result.series:
            if not selection.matches(series):
                continue
            matching += 1
            if series.ok_points():
                picked.append(Selected(Path(path), result, series))
            elif series.status != "skipped":
                empty.append(Selected(Path(path), result, series))
    if not picked:
        if matching:
            detail = empty[0].why_empty() if empty else "the selected series were skipped where they were measured"
            raise XferbenchError(f"nothing to show: every selected series is empty ({detail})")
        raise XferbenchError("nothing to show: no series matches the selection in " + ", ".join(map(str, paths)))
    return picked, empty


__all__ = ["DAMAGED", "DEFAULT_FOLDER", "SCHEMA", "SaveFailed", "damaged_points", "OutputFile", "Point", "Result", "Selected", "Selection", "Series", "check_writable",
           "csv_path", "file_labels", "load", "output_path", "refuse_unless_regular", "safe_name", "select", "write_whole"]
