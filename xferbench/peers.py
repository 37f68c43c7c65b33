"""A peer tool's own output as an xferbench result file, so plot, report, compare and fleet show its
figures beside xferbench's from the same machine: NVIDIA's nvbandwidth (`-j`) and the CUDA samples'
bandwidthTest (`--csv`), read as their sources print them.

A peer keeps no raw samples. Each point holds the figure the tool printed (nvbandwidth: the median,
or with -m the mean, of its samples, each a run of copies between two events; bandwidthTest: one
aggregate of 100 copies) with `times_s` empty, so no rank test is ever made on it, and `n` says how
many samples the figure stands for. Nothing is dropped silently: a testcase that was waived or
failed is a skipped or failed series with the tool's reason, a matrix cell of N/A a point not
measured, and what is not a host<->device figure is listed under environment.peer.not_imported.

Sizes become batches of one item shape per series: `shape` (256x256x3, xferbench's default sweep,
so nvbandwidth -b 96 lands at batch 512) where it divides every size the series holds, else 1 MiB
items (512x512x4, the large validation sweep's), else 1000-byte items (bandwidthTest's shmoo steps),
else single bytes; a point's `bytes` is always the size itself.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from xferbench.errors import XferbenchError
from xferbench.results import Point, Result, Series
from xferbench.spec import D2H, DEVICE_TO_HOST, H2D, HOST_TO_DEVICE, PER_CALL, STREAMED

LARGE_ITEM = (512, 512, 4)  # 1 MiB
ITEMS = (LARGE_ITEM, (1000,), (1,))  # tried after the caller's shape, in this order
NVB_COPIES, NVB_SAMPLES = 16, 3  # nvbandwidth's defaults: --loopCount copies per sample, -i samples
BT_COPIES = 100  # bandwidthTest: MEMCOPY_ITERATIONS, one aggregate per size
# Each peer's own ceiling, host to device, as `fleet` reads it: its copy from pinned memory.
PEER_CEILINGS = {("nvbandwidth", "host_to_device_memcpy_ce"), ("bandwidthTest", "pinned")}
# Facts of a capture that describe xferbench's own process, not the machine: a peer's file leaves them out.
PROCESS_FACTS = ("process_cpus", "load_average", "settings", "versions", "frameworks", "python", "python_implementation",
                 "nvml_after")  # fmt: skip
# nvbandwidth's testcases between the host and one GPU, by name: direction, and whether a second
# stream copies the other way meanwhile.
NVB_TESTCASE = re.compile(r"^(host_to_device|device_to_host)_(bidirectional_)?memcpy_(ce|sm)$")
NVB_DEVICE = re.compile(r"^\s*(\d+): (.*) \(([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)\): \((.*)\)\s*$")
BT_LINE = re.compile(r"^bandwidthTest-(H2D|D2H|D2D)(-Paged|-Pinned)?(-WriteCombined)?, Bandwidth = ([0-9.]+) GB/s,"
                     r" Time = ([0-9.eE+-]+) s, Size = (\d+) bytes, NumDevsUsed = (\d+)")  # fmt: skip
BT_DEVICE = re.compile(r"^\s*Device (\d+): (.+?)\s*$")


def item_for(sizes: Sequence[int], shape: tuple[int, ...]) -> tuple[int, ...]:
    """The item shape a peer's series is counted in: the first of `shape`, 1 MiB, 1000 B and 1 B that
    divides every size it measured, so one series holds all of them."""
    for item in (shape, *ITEMS):
        if all(nbytes % math.prod(item) == 0 for nbytes in sizes):
            return item
    raise AssertionError("every size divides into bytes")


def _point(nbytes: int, gbps: float, samples: int, copies: int) -> Point:
    """A point from a printed figure: the time per copy it implies, and the figure itself (its batch
    is set once the series' item shape is known)."""
    median_s = nbytes / (gbps * 1e9)
    return Point(0, nbytes, n=samples, median_s=median_s, mbps=gbps * 1e3, batches_per_s=1 / median_s, copies=copies)


class _Builder:
    """Series of one tool, keyed by (mode, device, direction), filled run by run; batches and the item
    shape are set at the end, from every size a series holds."""

    def __init__(self, tool: str, shape: tuple[int, ...]) -> None:
        self.tool, self.shape = tool, shape
        self.series: dict[tuple[str, str, str], Series] = {}
        self.not_imported: list[str] = []

    def get(self, mode: str, device: str, direction: str, **fields: Any) -> Series:
        key = (mode, device, direction)
        if key not in self.series:
            self.series[key] = Series(self.tool, mode, "copy", device, [], direction=direction, **fields)
        return self.series[key]

    def add(self, mode: str, device: str, direction: str, point: Point | None, fields: dict[str, Any],
            failure: str | None = None) -> None:  # fmt: skip
        series = self.get(mode, device, direction, **fields)
        if point is not None:
            series.points.append(point)
        if failure and series.status != "failed":
            series.status, series.reason = "failed", failure

    def done(self) -> list[Series]:
        found = sorted(self.series.values(), key=lambda s: (s.device, s.direction != H2D, s.mode))
        for series in found:
            item = item_for([p.bytes for p in series.points], self.shape)
            series.shape = list(item)
            for point in series.points:
                point.batch_size = point.bytes // math.prod(item)
                if point.batches_per_s:
                    point.images_per_s = point.batch_size * point.batches_per_s
            series.points.sort(key=lambda p: p.bytes)
            series.refresh_summary()
        return found


def _text(path: Path) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except FileNotFoundError:
        raise XferbenchError(f"{path}: no such file") from None
    except OSError as error:
        raise XferbenchError(f"{path}: cannot read: {error.strerror or error}") from None


def _first_json(text: str) -> Any:
    """The first JSON document in a tool's output, with whatever it printed around it; None if none."""
    start = text.find("{")
    while start >= 0:
        try:
            return json.JSONDecoder().raw_decode(text, start)[0]
        except ValueError:
            start = text.find("{", start + 1)
    return None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _environment(given: dict[str, Any] | None, host: str | None, devices: dict[int, dict[str, Any]],
                 peer: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """The measuring machine as the peer described it, over the same machine's own capture where one
    is given (the validate command passes its sweep's): NVML's facts then travel with the figures."""
    environment = json.loads(json.dumps(given)) if given else {}
    for key in PROCESS_FACTS:  # what xferbench's own process saw: the peer ran in another one
        environment.pop(key, None)
    environment["host"] = environment.get("host") or host
    known = {d.get("id"): d for d in environment.setdefault("devices", [])}
    for index, facts in sorted(devices.items()):
        entry = known.get(f"cuda:{index}")
        if entry is None:
            environment["devices"].append({"id": f"cuda:{index}", "kind": "cuda", **facts})
        else:
            entry.update({k: v for k, v in facts.items() if entry.get(k) is None})
    for key, value in extra.items():
        environment.setdefault(key, value)
    environment["peer"] = peer
    return environment


def _result(environment: dict[str, Any], series: list[Series], files: Sequence[Path]) -> Result:
    from xferbench import __version__

    return Result(environment=environment, config={"imported_from": [str(p) for p in files]}, created=_now(), series=series,
                  status="complete", xferbench_version=__version__)  # fmt: skip


def _option(command: Sequence[str], names: Sequence[str]) -> str | None:
    """The value of a command-line option given as `-b 64`, `--bufferSize 64` or `--bufferSize=64`."""
    for i, word in enumerate(command):
        for name in names:
            if word == name and i + 1 < len(command):
                return command[i + 1]
            if word.startswith(name + "="):
                return word.split("=", 1)[1]
    return None


def _default_mib(version: str | None) -> int | None:
    """nvbandwidth's default buffer: 512 MiB from v0.7, 64 MiB before; None for a version not understood."""
    found = re.match(r"v?(\d+)\.(\d+)", version or "")
    if not found:
        return None
    return 512 if (int(found.group(1)), int(found.group(2))) >= (0, 7) else 64


def _nvbandwidth_runs(path: Path, buffer_size_mib: int | None) -> list[dict[str, Any]]:
    """Each run a file holds: nvbandwidth's own output (one run), or a list of runs each with its
    size, command, exit code and output (as a script that ran several sizes keeps them)."""
    text = _text(path)
    document = _first_json(text)
    if isinstance(document, dict) and isinstance(document.get("runs"), list):
        runs = []
        for run in document["runs"]:
            if not isinstance(run, dict):
                raise XferbenchError(f"{path}: a run of its 'runs' list is not an object")
            output = run.get("output")
            if not isinstance(output, dict):
                output = _first_json(str(run.get("stdout_stderr_raw") or ""))
            runs.append({"output": output, "mib": run.get("buffer_size_mib"), "command": run.get("command"),
                         "exit": run.get("exit_code"), "raw": run.get("stdout_stderr_raw"), "file": str(path)})  # fmt: skip
        return runs
    if not isinstance(document, dict) or not isinstance(document.get("nvbandwidth"), dict):
        raise XferbenchError(f"{path}: not nvbandwidth's JSON output (no 'nvbandwidth' object); run nvbandwidth with -j and save what it prints")
    return [{"output": document, "mib": buffer_size_mib, "command": None, "exit": None, "raw": None, "file": str(path)}]


def read_nvbandwidth(paths: Sequence[Path], buffer_size_mib: int | None = None, shape: tuple[int, ...] = (256, 256, 3),
                     environment: dict[str, Any] | None = None) -> Result:  # fmt: skip
    """nvbandwidth's -j output, one or more files, as a result: a series per host<->device testcase,
    GPU and item shape. nvbandwidth's JSON does not record its buffer size: `buffer_size_mib` (its -b)
    gives it, else the run's own command where the file keeps one, else the version's default."""
    if not paths:
        raise XferbenchError("give at least one nvbandwidth output file")
    if buffer_size_mib is not None and buffer_size_mib < 1:
        raise XferbenchError(f"--buffer-size {buffer_size_mib}: give nvbandwidth's -b, a whole number of MiB")
    build = _Builder("nvbandwidth", shape)
    devices: dict[int, dict[str, Any]] = {}
    host, facts, versions, commands, sizes, errors = None, {}, [], [], [], []
    for path in paths:
        for run in _nvbandwidth_runs(Path(path), buffer_size_mib):
            where = f"{run['file']}" + (f" (-b {run['mib']})" if run["mib"] else "")
            if run["command"]:
                commands.append(run["command"])
            root = (run["output"] or {}).get("nvbandwidth") if isinstance(run["output"], dict) else None
            if not isinstance(root, dict):
                said = " ".join(str(run.get("raw") or "").split())[:200]
                build.not_imported.append(f"{where}: no JSON in nvbandwidth's output (exit {run['exit']}){': ' + said if said else ''}")
                continue
            version = str(root.get("version") or "")
            versions.append(version)
            for line in root.get("GPU Device list") or []:
                found = NVB_DEVICE.match(str(line))
                if found:
                    index, name, domain, bus, device, host = found.groups()
                    # nvbandwidth prints domain:bus:device; a GPU is PCI function 0.
                    bus_id = f"{int(domain, 16):08x}:{int(bus, 16):02x}:{int(device, 16):02x}.0"
                    devices[int(index)] = {"name": name, "pci_bus_id": bus_id}
            driver, cuda = root.get("Driver Version"), root.get("CUDA Runtime Version")
            facts = {"driver": driver, "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}" if isinstance(cuda, int) else None}
            words = shlex.split(run["command"]) if run["command"] else []
            mib = run["mib"] or _int(_option(words, ("-b", "--bufferSize"))) or _default_mib(version)
            if mib is None:
                raise XferbenchError(f"{where}: nvbandwidth {version or '(no version)'} does not record its buffer size;"
                                     " give the run's -b with --buffer-size")  # fmt: skip
            sizes.append(mib * 2**20)
            assumed = run["mib"] is None and buffer_size_mib is None and not _option(words, ("-b", "--bufferSize"))
            samples = _int(_option(words, ("-i", "--testSamples"))) or NVB_SAMPLES
            copies = _int(_option(words, ("--loopCount",))) or NVB_COPIES
            mean = "-m" in words or "--useMean" in words
            failure = root.get("error") or (f"nvbandwidth exited {run['exit']}" if run["exit"] not in (None, 0) else None)
            if root.get("error"):
                errors.append(f"{where}: nvbandwidth said: {' '.join(str(root['error']).split())}")
            _nvbandwidth_testcases(build, root, mib * 2**20, devices, samples, copies, mean, assumed, failure, where, version)
    peer = {"tool": "nvbandwidth", "version": ", ".join(dict.fromkeys(v for v in versions if v)) or None,
            "commands": commands, "files": [str(p) for p in paths], "sizes_bytes": sorted(set(sizes)),
            "not_imported": build.not_imported, "imported": _now()}  # fmt: skip
    series = build.done()
    if not series:
        listed = "; ".join([*errors, *build.not_imported][:3]) or "no testcase in it"
        raise XferbenchError(f"no host<->device figure in the nvbandwidth output: {listed}")
    for s in series:
        s.device_name = s.device_name or (devices.get(int(s.device.split(":")[1])) or {}).get("name")
    return _result(_environment(environment, host, devices, peer, facts), series, paths)


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


def _nvbandwidth_testcases(build: _Builder, root: dict[str, Any], nbytes: int, devices: dict[int, dict[str, Any]], samples: int,
                           copies: int, mean: bool, assumed: bool, failure: str | None, where: str, version: str) -> None:  # fmt: skip
    """One run's testcases into the builder. A testcase nvbandwidth left at Running, or marked Error,
    failed; Waived, it did not apply to this machine; a cell of N/A was not measured."""
    entries: dict[str, list[dict[str, Any]]] = {}
    for entry in root.get("testcases") or []:
        if isinstance(entry, dict) and entry.get("name"):
            entries.setdefault(str(entry["name"]), []).append(entry)
    gpus = sorted(devices) or [0]
    for name, found in entries.items():
        shape = NVB_TESTCASE.match(name)
        if shape is None:
            build.not_imported.append(f"{where}: {name}: not a copy between the host and one GPU")
            continue
        direction = H2D if shape.group(1) == "host_to_device" else D2H
        bidirectional, engine = bool(shape.group(2)), shape.group(3)
        fields = _nvbandwidth_fields(direction, bidirectional, engine, samples, copies, mean, assumed, nbytes, version)
        matrix = next((e["bandwidth_matrix"] for e in found if isinstance(e.get("bandwidth_matrix"), list)), None)
        statuses = [str(e.get("status")) for e in found]
        if matrix is None:
            if "Waived" in statuses:
                for gpu in gpus:
                    series = build.get(name, f"cuda:{gpu}", direction, **fields)
                    series.status, series.reason = "skipped", "nvbandwidth waived it: it does not apply to this machine"
                continue
            error = next((str(e["error"]) for e in found if e.get("error")), None) or failure or (
                f"nvbandwidth stopped during it (status {', '.join(dict.fromkeys(statuses))})")
            for gpu in gpus:
                build.add(name, f"cuda:{gpu}", direction, None, fields, failure=f"{where}: {error}")
            continue
        row = matrix[0] if matrix and isinstance(matrix[0], list) else []
        for gpu, cell in enumerate(row):
            device = f"cuda:{gpu}"
            try:
                gbps = float(cell)
            except (TypeError, ValueError):
                point = Point(0, nbytes, status="skipped", error=f"{cell} in nvbandwidth's matrix: not measured")
                build.add(name, device, direction, point, fields)
                continue
            if not math.isfinite(gbps) or gbps <= 0:
                point = Point(0, nbytes, status="skipped", error=f"{cell} GB/s in nvbandwidth's matrix: not a figure")
                build.add(name, device, direction, point, fields)
                continue
            build.add(name, device, direction, _point(nbytes, gbps, samples, copies), fields)


def _nvbandwidth_fields(direction: str, bidirectional: bool, engine: str, samples: int, copies: int, mean: bool,
                        assumed: bool, nbytes: int, version: str) -> dict[str, Any]:  # fmt: skip
    """What a series of nvbandwidth says about how it was measured."""
    way = "host to device" if direction == H2D else "device to host"
    copy = ("copy-engine cuMemcpyAsync between pinned host memory and device memory" if engine == "ce"
            else "a kernel's own copy (the GPU's SMs read or write pinned host memory), no copy engine")  # fmt: skip
    note = f"nvbandwidth {version}: {way}, {copy}"
    if bidirectional:
        note += f"; the {way} stream's figure while a copy the other way runs on a second stream"
    if assumed:
        note += f"; buffer size assumed to be nvbandwidth {version}'s default ({nbytes // 2**20} MiB): its JSON does not record -b"
    statistic = "mean" if mean else "median"
    return {"host_buffer": "pinned", "method": STREAMED, "transfer": HOST_TO_DEVICE if direction == H2D else DEVICE_TO_HOST,
            "clock": f"CUDA events around {copies} copies queued behind a spin kernel, per copy (nvbandwidth)",
            "sync": "the end event", "params": {"tool": f"nvbandwidth {version}".strip(), "samples": samples,
                                                "copies_per_sample": copies, "statistic": statistic},
            "note": note + f"; the {statistic} of {samples} samples"}  # fmt: skip


def _bandwidthtest_runs(path: Path) -> list[dict[str, Any]]:
    """Each run a file holds: bandwidthTest's own output (one run), or several, each under a
    '### $ COMMAND' line and a '### exit N' line (as a script that ran several keeps them)."""
    text = _text(path)
    runs: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        if line.startswith("### $ "):
            current = {"command": line[6:].strip(), "exit": None, "lines": [], "file": str(path)}
            runs.append(current)
        elif line.startswith("### exit ") and current is not None:
            code = line[9:].strip()
            current["exit"] = int(code) if code.lstrip("-").isdigit() else code
        elif line.startswith("### "):
            continue
        else:
            if current is None:
                current = {"command": None, "exit": None, "lines": [], "file": str(path)}
                runs.append(current)
            current["lines"].append(line)
    return runs


def read_bandwidthtest(paths: Sequence[Path], shape: tuple[int, ...] = (256, 256, 3),
                       environment: dict[str, Any] | None = None) -> Result:  # fmt: skip
    """bandwidthTest --csv output, one or more files, as a result: a series per memory kind, direction,
    GPU and item shape, from every CSV line of every run."""
    if not paths:
        raise XferbenchError("give at least one bandwidthTest output file")
    build = _Builder("bandwidthTest", shape)
    devices: dict[int, dict[str, Any]] = {}
    commands, sizes, lines_seen = [], [], 0
    for path in paths:
        for run in _bandwidthtest_runs(Path(path)):
            where = run["file"] + (f" ($ {run['command']})" if run["command"] else "")
            words = shlex.split(run["command"]) if run["command"] else []
            if run["command"]:
                commands.append(run["command"])
            named = {int(m.group(1)): m.group(2) for m in (BT_DEVICE.match(line) for line in run["lines"]) if m}
            for index, name in named.items():
                devices.setdefault(index, {"name": name})
            chosen = _option(words, ("--device",))
            failure = None
            if any(line.strip() == "Result = FAIL" for line in run["lines"]):
                failure = f"{where}: bandwidthTest printed Result = FAIL"
            elif run["exit"] not in (None, 0):
                failure = f"{where}: bandwidthTest exited {run['exit']}"
            cputiming = "--cputiming" in words
            found = [m for m in (BT_LINE.match(line.strip()) for line in run["lines"]) if m]
            lines_seen += len(found)
            if not found:
                said = " ".join(" ".join(run["lines"]).split())[-200:]
                build.not_imported.append(f"{where}: no CSV line (run bandwidthTest with --csv){': ' + said if said else ''}")
            for match in found:
                kind, memory, wc, gbps, _, nbytes, used = match.groups()
                if kind == "D2D":
                    build.not_imported.append(f"{where}: a device-to-device line: not a host<->device figure")
                    continue
                nbytes, used = int(nbytes), int(used)
                sizes.append(nbytes)
                index = int(chosen) if chosen and chosen.isdigit() else (min(named) if named else 0)
                device = "cuda:all" if used > 1 or chosen == "all" else f"cuda:{index}"
                mode = "pageable" if memory == "-Paged" else "pinned_wc" if wc else "pinned"
                direction = H2D if kind == "H2D" else D2H
                fields = _bandwidthtest_fields(mode, direction, used, cputiming)
                figure = float(gbps)
                if figure <= 0:
                    build.add(mode, device, direction, Point(0, nbytes, status="skipped", error=f"{gbps} GB/s printed"), fields, failure)
                    continue
                build.add(mode, device, direction, _point(nbytes, figure, 1, BT_COPIES), fields, failure)
    if not lines_seen:
        listed = "; ".join(build.not_imported[:2]) or "nothing to read"
        raise XferbenchError(f"no bandwidthTest CSV line in the output ({listed})")
    peer = {"tool": "bandwidthTest", "version": None, "commands": commands, "files": [str(p) for p in paths],
            "sizes_bytes": sorted(set(sizes)), "not_imported": build.not_imported, "imported": _now()}  # fmt: skip
    series = build.done()
    for s in series:
        if s.device != "cuda:all":
            s.device_name = (devices.get(int(s.device.split(":")[1])) or {}).get("name")
    return _result(_environment(environment, None, devices, peer, {}), series, paths)


def _bandwidthtest_fields(mode: str, direction: str, used: int, cputiming: bool) -> dict[str, Any]:
    """What a series of bandwidthTest says about how it was measured."""
    way = "host to device" if direction == H2D else "device to host"
    if mode == "pageable":
        how = (f"{BT_COPIES} synchronous cudaMemcpy from malloc'd memory, each timed with the host clock and summed"
               " (a 256 MiB memset between them flushes the CPU caches)")  # fmt: skip
        clock, method, buffer = "gettimeofday around each copy, summed (bandwidthTest)", PER_CALL, "numpy"
    else:
        memory = "write-combined pinned memory (cudaHostAllocWriteCombined)" if mode == "pinned_wc" else "pinned memory (cudaHostAlloc)"
        how = f"{BT_COPIES} cudaMemcpyAsync on the default stream from {memory}, between two events, no warm-up"
        clock = ("the host clock around the copies" if cputiming else "CUDA events around the copies") + ", per copy (bandwidthTest)"
        method, buffer = STREAMED, "pinned"
    note = f"bandwidthTest: {way}, {how}; one aggregate figure per size, printed to 0.1 GB/s"
    if used > 1:
        note += f"; the sum over {used} GPUs (--device=all)"
    return {"host_buffer": buffer, "method": method, "transfer": HOST_TO_DEVICE if direction == H2D else DEVICE_TO_HOST,
            "clock": clock, "sync": "cudaEventSynchronize on the stop event" if method == STREAMED else "cudaMemcpy returns when done",
            "params": {"tool": "bandwidthTest", "samples": 1, "copies_per_sample": BT_COPIES, "statistic": "aggregate",
                       "devices_summed": used},
            "note": note}  # fmt: skip


__all__ = ["PEER_CEILINGS", "item_for", "read_bandwidthtest", "read_nvbandwidth"]
