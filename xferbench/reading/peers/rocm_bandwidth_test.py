"""AMD's rocm_bandwidth_test output as a result: the legacy tool's all-device matrices and, from its 2.x
rewrite, the TransferBench presets it runs as its own.

The legacy tool (up to RocmBandwidthTest 2.6.0, ROCm 6.x; its report code as rocm_bandwidth_test_report.cpp
prints it) numbers every HSA agent as a device, CPUs included: `Device: 0,  AMD EPYC 9554 64-Core
Processor` for a CPU (NUMA node), `Device: 2,  AMD Instinct MI210,  GPU-06c9...,  05:0.0` for a GPU, with
its UUID (from 2.4 or so) and PCI address. A plain run (`rocm-bandwidth-test`, "rocm_bandwidth -a +
rocm_bandwidth -A") prints "Unidirectional copy peak bandwidth GB/s" and "Bidirectional copy peak
bandwidth GB/s", square matrices of source rows and destination columns over every device, each cell
to 0.001 GB/s (10^9 B/s) or N/A. A CPU row's GPU columns are host to device, a GPU row's CPU columns
device to host; a GPU is counted here by its place among the GPUs (the third device, the first GPU,
is GPU 0, as HIP numbers them by default).

Each cell is one copy size (64 MiB unless -m gives MiB), hsa_amd_memory_async_copy between the CPU
agent's memory pool (pinned system memory) and the GPU's, the SDMA engine's unless HSA_ENABLE_SDMA=0
turns it off; timed by the copy's own start and end timestamps (hsa_amd_profiling_get_async_copy_time).
Peak: the fastest of 5 copies (ROCM_BW_ITER_CNT, 4 by default, plus one); average (with -c absent, -a
or -A alone print peak only): the mean of all but the slowest. A bidirectional cell sums both ways'
bytes over the span of both copies: no one direction's rate, so it is listed and left out.

rocm_bandwidth_test 2.x (the "RBT-Next Generation" framework, deprecated in favour of TransferBench)
runs TransferBench's own presets (`rocm_bandwidth_test run tb p2p`) and prints TransferBench's tables:
those are read as TransferBench's, named as this tool's. A paste that shows TransferBench run by itself (its
version line or its command) and names rocm_bandwidth_test nowhere is TransferBench's: refused here, with
`xferbench import transferbench` to read it, so its series are not named after a tool that did not run.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from xferbench.core.results import Result
from xferbench.core.spec import D2H, DEVICE_TO_HOST, H2D, HOST_TO_DEVICE, PER_CALL
from xferbench.core.vendors import AMD, ROCM
from xferbench.reading.peers import transferbench
from xferbench.reading.peers.common import (DEFAULT_SHAPE, WHOLE, Builder, Peer, command_words, label_gpus, one_line, option,
                                            peer_environment, peer_facts, peer_result, read_text, refusal, versioned_runs)  # fmt: skip

TOOL = "rocm_bandwidth_test"
MIB = 2**20
DEFAULT_SIZE = 64 * MIB  # SIZE_LIST[16]: the all-copy matrices' size unless -m gives one
COPIES = 5  # ROCM_BW_ITER_CNT's default 4, plus one
VERSION = re.compile(r"^\s*RocmBandwidthTest Version: (\S+)\s*$")
LAUNCH = re.compile(r"^\s*Launch Command is: (.*\S)\s*$")
DEVICE = re.compile(r"^\s*Device: ([0-9]+),\s+(.*\S)\s*$")
PCI = re.compile(r"^[0-9a-fA-F]{1,4}:[0-9a-fA-F]{1,2}\.[0-9a-fA-F]$")
MATRIX = re.compile(r"^\s*(Unidirectional|Bidirectional) copy (peak|average) bandwidth GB/s\s*$")
COLUMNS = re.compile(r"^\s*D/D((?:\s+[0-9]+)+)\s*$")
ROW = re.compile(r"^\s*([0-9]+)\s+(\S.*?)\s*$")
FIGURE = re.compile(r"[0-9]+\.[0-9]{3}")  # std::fixed, precision 3
PAIR = re.compile(r"^=+\s+(Src|Dst) Device Id: ([0-9]+) \1 Device Type: (Cpu|Gpu)\s+=+\s*$")
NAMED = re.compile(r"rocm[_-]bandwidth[_-]test|RocmBandwidthTest", re.IGNORECASE)  # 2.x's command or name in a paste
# TransferBench run by itself: `$ ./TransferBench p2p 4M`, `VAR=1 TransferBench example.cfg`
TB_COMMAND = re.compile(r"^\s*(?:[$#>]\s*)?(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*(?:\S*/)?TransferBench(?:Cuda)?(?:\s+\S.*)?$")
DEFAULT_RUN = "(rocm_bandwidth -a + rocm_bandwidth -A)"


def _runs(path: Path, text: str) -> list[dict[str, Any]]:
    """Each run a file holds: rocm_bandwidth_test's output from its version line."""
    return versioned_runs(path, text, lambda line: bool(VERSION.match(line)))


def _transferbench_itself(text: str) -> str | None:
    """What shows a paste of TransferBench's tables to be TransferBench's own run (its version line or its command),
    where nothing in it names rocm_bandwidth_test, whose 2.x prints those tables as its own; None otherwise."""
    if NAMED.search(text):
        return None
    lines = text.split("\n")
    said = next(filter(None, map(transferbench.VERSION.search, lines)), None) or next(filter(None, map(TB_COMMAND.match, lines)), None)
    return None if said is None else repr(one_line(said.group(0).strip(), 60))


def read_rocm_bandwidth_test(paths: Sequence[Path], shape: tuple[int, ...] = DEFAULT_SHAPE,
                             environment: dict[str, Any] | None = None) -> Result:  # fmt: skip
    """rocm_bandwidth_test's output, one or more files, as a result: a series per CPU agent (NUMA
    node), statistic, direction and GPU from the host rows and columns of its unidirectional matrices;
    or, for 2.x's TransferBench presets, TransferBench's figures."""
    if not paths:
        raise refusal("give at least one rocm_bandwidth_test output file")
    texts = [(Path(path), read_text(Path(path))) for path in paths]
    legacy = [path for path, text in texts if any(VERSION.match(line) or MATRIX.match(line) for line in text.split("\n"))]
    modern = [path for path, text in texts if path not in legacy and transferbench.is_transferbench(text)]
    for path, text in texts:
        if path not in legacy and path not in modern:
            raise refusal(f"{path}: not rocm_bandwidth_test's output (no 'RocmBandwidthTest Version' line, copy bandwidth matrix or"
                          " TransferBench table); run rocm-bandwidth-test and save what it prints")  # fmt: skip
    if modern and legacy:
        raise refusal(f"{modern[0]} holds rocm_bandwidth_test 2.x's TransferBench output and {legacy[0]} the legacy tool's: import"
                      " them one at a time")  # fmt: skip
    for path, text in texts:
        if path in modern and (shown := _transferbench_itself(text)) is not None:
            raise refusal(f"{path}: TransferBench's own output ({shown}), not rocm_bandwidth_test's: import it with `xferbench import"
                          " transferbench`")  # fmt: skip
    if modern:
        return transferbench.read_transferbench(modern, shape, environment, tool=TOOL)
    runs = [run for path, text in texts for run in _runs(path, text)]
    build = Builder(TOOL, shape, runs=len(runs))
    devices: dict[int, dict[str, Any]] = {}
    versions: list[str | None] = []
    commands: list[str] = []
    sizes: list[int] = []
    for run in runs:
        where = run["where"]
        version = next((m.group(1) for m in map(VERSION.match, run["lines"]) if m), None)
        versions.append(version)
        command = next((m.group(1) for m in map(LAUNCH.match, run["lines"]) if m), None)
        if command:
            commands.append(one_line(command, 1000))
        agents = _agents(run["lines"])
        gpus = [number for number, agent in sorted(agents.items()) if agent["gpu"]]
        build.start_run(where, None, {gpus.index(n): (agents[n]["name"], agents[n]["pci"]) for n in gpus})
        for n in gpus:
            devices.setdefault(gpus.index(n), {"name": agents[n]["name"], "pci_bus_id": agents[n]["pci"]})
        nbytes = _size(command, where, build)
        noted = len(build.not_imported)
        found = _matrices(run, where, build)
        if any(PAIR.match(line) for line in run["lines"]):
            build.note(f"{where}: a copy between two memory pools (-s and -d): its Device Id is a pool's number, which the output does"
                       " not map to a device (rocm_bandwidth_test -t does); left out; run rocm-bandwidth-test -a for the matrix")  # fmt: skip
        if not found and len(build.not_imported) == noted:
            said = one_line(" ".join(run["lines"]), 80, last=True)
            build.note(f"{where}: no copy bandwidth matrix{': ' + said if said else ''}")
        if found and not agents:
            raise refusal(f"{where}: a bandwidth matrix without the device list above it, which says which devices are CPUs and which"
                          " GPUs; give the whole output from its 'RocmBandwidthTest Version' line")  # fmt: skip
        for statistic, source, target, cell, line in found:
            _cell(build, agents, gpus, statistic, source, target, cell, line, where, nbytes, version, sizes)
        if any(cell != "N/A" and source in agents and target in agents and agents[source]["gpu"] == agents[target]["gpu"]
               for _, source, target, cell, _ in found):  # fmt: skip
            build.note(f"{where}: the matrix's cells between GPUs, and each GPU's copy within its own memory: not host<->device")
        build.end_run(None)
    series = build.done()
    if not any(s.ok_points() for s in series):
        listed = "; ".join([*build.unmeasured(), *build.not_imported][:3]) or "nothing to read"
        raise refusal(f"no host<->device figure in the rocm_bandwidth_test output ({listed}); run rocm-bandwidth-test (or -a) and give"
                      " what it printed")  # fmt: skip
    for s in series:
        s.device_name = (devices.get(int(s.device.split(":")[1])) or {}).get("name")
    peer = peer_facts(TOOL, versions, [], commands, [p for p, _ in texts], sizes, build.not_imported)
    environment = peer_environment(environment, None, devices, {}, peer)  # an HSA tool: AMD GPUs on ROCm only
    return peer_result(label_gpus(environment, series, vendor=AMD, runtime=ROCM), series, [p for p, _ in texts])


def _agents(lines: list[str]) -> dict[int, dict[str, Any]]:
    """The devices a run listed, by number: a GPU is a device whose last field is a PCI address."""
    agents = {}
    for match in map(DEVICE.match, lines):
        if match is None:
            continue
        fields = [f.strip() for f in match.group(2).split(",  ")]
        pci = fields[-1] if len(fields) > 1 and PCI.fullmatch(fields[-1]) else None
        agents[int(match.group(1))] = {"name": one_line(fields[0], 200), "pci": pci, "gpu": pci is not None}
    return agents


def _size(command: str | None, where: str, build: Builder) -> int:
    """The matrices' copy size: the first of -m's MiB where the launch command gives it, else 64 MiB."""
    if not command or DEFAULT_RUN in command:
        return DEFAULT_SIZE
    given = option(command_words(command), ("-m",))
    if given is None:
        return DEFAULT_SIZE
    first = given.split(",")[0]
    if not WHOLE.fullmatch(first) or int(first) <= 0:
        build.note(f"{where}: -m {one_line(given, 40)!r} is not a size in MiB: the matrices are read at 64 MiB, the default")
        return DEFAULT_SIZE
    return int(first) * MIB


def _matrices(run: dict[str, Any], where: str, build: Builder) -> list[tuple[str, int, int, str, str]]:
    """Every cell of a run's unidirectional matrices as (statistic, source device, destination device,
    cell, row); a row of another width, or one the paste ends inside, is named and left out."""
    found = []
    title: re.Match[str] | None = None
    columns: list[int] = []
    lines = run["lines"]
    for number, line in enumerate(lines, 1):
        if (match := MATRIX.match(line)) is not None:
            title, columns = match, []
            if match.group(1) == "Bidirectional":
                build.note(f"{where}: the bidirectional {match.group(2)} matrix: a cell sums both ways' bytes over both copies, no one"
                           " direction's rate; left out")  # fmt: skip
            continue
        if title is None or title.group(1) == "Bidirectional" or not line.strip():
            continue
        if (header := COLUMNS.match(line)) is not None:
            columns = [int(c) for c in header.group(1).split()]
            continue
        row = ROW.match(line)
        if row is None or not columns:
            title = None  # the matrix is over
            continue
        cells = row.group(2).split()
        if run["cut"] and number == len(lines):
            build.note(f"{where}: the paste ends inside a matrix row ({one_line(line, 200)}): it was cut short there, and the row is"
                       " left out")  # fmt: skip
            continue
        if len(cells) != len(columns):
            build.note(f"{where}: a matrix row of {len(cells)} cells under {len(columns)} columns: {one_line(line, 200)}; left out")
            continue
        found.extend((title.group(2), int(row.group(1)), column, cell, line) for column, cell in zip(columns, cells))
    return found


def _cell(build: Builder, agents: dict[int, dict[str, Any]], gpus: list[int], statistic: str, source: int, target: int, cell: str,
          line: str, where: str, nbytes: int, version: str | None, sizes: list[int]) -> None:  # fmt: skip
    """One cell between a CPU and a GPU as a figure; cells between two CPUs or two GPUs are not host<->device."""
    if source not in agents or target not in agents:
        missing = source if source not in agents else target
        build.note(f"{where}: device {missing} is in the matrix but not in the device list: its cells are left out")
        return
    if agents[source]["gpu"] == agents[target]["gpu"]:
        return  # within the host or between GPUs (or a GPU's own memory): not host<->device
    direction = H2D if agents[target]["gpu"] else D2H
    cpu, gpu = (source, target) if direction == H2D else (target, source)
    cpus = [n for n in sorted(agents) if not agents[n]["gpu"]]
    node = cpus.index(cpu)
    mode, device = f"{statistic}_cpu{node}", f"cuda:{gpus.index(gpu)}"
    fields = _fields(direction, statistic, cpu, gpu, agents, version)
    if cell == "N/A":
        build.gap(mode, device, direction, nbytes, fields, "skipped", "N/A in rocm_bandwidth_test's matrix: no copy path, not measured")
        return
    if not FIGURE.fullmatch(cell):
        build.note(f"{where}: {one_line(cell, 40)!r} from device {source} to {target} is not a figure (rocm_bandwidth_test prints GB/s"
                   " to 0.001, or N/A): left out")  # fmt: skip
        return
    gbps = float(cell)
    sizes.append(nbytes)
    if not math.isfinite(gbps) or gbps <= 0:
        build.gap(mode, device, direction, nbytes, fields, "skipped", f"rocm_bandwidth_test printed {cell} GB/s")
        return
    build.figure(mode, device, direction, nbytes, fields, gbps, COPIES, 1)


def _fields(direction: str, statistic: str, cpu: int, gpu: int, agents: dict[int, dict[str, Any]], version: str | None) -> dict[str, Any]:
    """What a series of rocm_bandwidth_test says about how it was measured."""
    way = "host to device" if direction == H2D else "device to host"
    figure = ("the fastest of 5 copies (ROCM_BW_ITER_CNT's 4, plus one)" if statistic == "peak"
              else "the mean of 5 copies less the slowest")  # fmt: skip
    note = (f"rocm_bandwidth_test{' ' + version if version else ''}: {way}, hsa_amd_memory_async_copy between device {cpu}'s memory"
            f" pool ({agents[cpu]['name']}: pinned system memory) and device {gpu} ({agents[gpu]['name']}), the SDMA engine's copy unless"
            f" HSA_ENABLE_SDMA=0; {figure}, each timed by its own start and end timestamps; printed to 0.001 GB/s")  # fmt: skip
    return {"host_buffer": "pinned", "method": PER_CALL, "transfer": HOST_TO_DEVICE if direction == H2D else DEVICE_TO_HOST,
            "clock": "the copy's own start and end timestamps (hsa_amd_profiling_get_async_copy_time), per copy (rocm_bandwidth_test)",
            "sync": "hsa_signal_wait on each copy's completion signal", "device_clock": None,
            "params": {"tool": f"rocm_bandwidth_test {version}".strip() if version else TOOL, "samples": COPIES, "copies_per_sample": 1,
                       "statistic": "min time" if statistic == "peak" else "mean", "cpu_agent": cpu, "gpu_agent": gpu},
            "note": note}  # fmt: skip


PEER = Peer(TOOL, read_rocm_bandwidth_test, "peak_cpu0", "rocm-bandwidth-test",
            "Import rocm_bandwidth_test's output: the host rows and columns of the legacy tool's unidirectional matrices (CPUs are"
            " devices too), or the TransferBench presets that 2.x runs.",
            "run the legacy rocm-bandwidth-test (its unidirectional matrix; 2.x's presets print none) and import what it prints")
