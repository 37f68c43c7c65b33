"""AMD's TransferBench output as a result: its config-file tests (OUTPUT_TO_CSV=1, or the table it prints
without it) and its `p2p` preset's matrix, a series per executor, host memory and GPU.

TransferBench prints three shapes of result over its versions, all read here as its source prints them:

- up to v1.50, with OUTPUT_TO_CSV=1: a header `Test#,Transfer#,NumBytes,Src,Exe,Dst,CUs,BW(GB/s),
  Time(ms),SrcAddr,DstAddr` and a line per Transfer, then an `ALL` line per executor. The executor is
  printed with the memory-type letters (MemTypeStr[exeType]), so a DMA executor reads `B00`, a GPU
  kernel `G00` and CPU threads `C00`;
- v1.51 and v1.52: the terminal's table, its cells between `,` (or `|` without CSV):
  ` Executor: DMA 00 , ...`, `     Transfer 00  ,  27.123 GB/s ,    2.474 ms ,     67108864 bytes ,
  C0 -> DMA00.*:001 -> G0`, ` Aggregate (CPU) ...`;
- v1.54 on (the library and its client): the same rows from its table printer, every cell padded and
  followed by `,` (or drawn with `│` borders): `Transfer 0    ,  27.123 GB/s , ... , C0 -> D0:1 -> G0,`.

A Transfer reads its source, executor and destination as `SRC -> EXE:SUBEXECUTORS -> DST`: memory is a
letter and an index (C0: pinned host memory on NUMA node 0, from hipHostMalloc; G1: GPU 1's memory),
the executor a letter or name and an index (D or DMA: the GPU's SDMA copy engine; G or GPU: a copy
kernel on that many CUs; C or CPU: that many CPU threads). Copies by the SDMA engine and by a kernel
are different paths, as NVIDIA's copy engine and SM copies are, and are kept as different series.

The `p2p` preset (and rocm_bandwidth_test 2.x's `run tb p2p`, which is TransferBench's) prints a matrix
of CPU and GPU rows and columns per direction; its header says who executes: `SRC+EXE\\DST` (the source
copies: CPU threads write into the GPU, the GPU writes into host memory) or `SRC\\EXE+DST` (the
destination copies), and its title whether a GPU copies with a kernel (GFX) or its SDMA engine (DMA).
With SHOW_ITERATIONS=1 each `->` row (the mean) is followed by `min`, `max` and `sd` rows: only `->` is read.

The `scaling` preset prints a table of one GPU's kernel copies, one at a time, from its memory into each
CPU's (pinned host memory on that NUMA node) and each GPU's, a row per CU count and a `Best` row; each
host column's cell is a device-to-host figure on that many CUs, read as its own series.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xferbench.core.errors import XferbenchError
from xferbench.core.results import Result
from xferbench.core.spec import D2H, DEVICE_TO_HOST, H2D, HOST_TO_DEVICE, PER_CALL
from xferbench.core.vendors import AMD, NVIDIA, ROCM
from xferbench.reading.peers.common import (DEFAULT_SHAPE, Builder, Peer, label_gpus, one_line, peer_environment, peer_facts, peer_result,
                                            read_text, refusal, versioned_runs)  # fmt: skip

TOOL = "TransferBench"
TB_ITERATIONS, TB_WARMUPS = 10, 3  # NUM_ITERATIONS and NUM_WARMUPS by default, in every version
OLD_HEADER = "Test#,Transfer#,NumBytes,Src,Exe,Dst,CUs,BW(GB/s),Time(ms),SrcAddr,DstAddr"
OLD_FIELDS = 11
OLD_ROW = re.compile(r"^([0-9]+),([0-9]+|ALL),([0-9]+),([^,]*),([^,]*),([^,]*),([0-9]+),([^,]*),([^,]*),([^,]*),([^,]*)$")
OLD_EXE = re.compile(r"^([CGB])([0-9]{2,})(\.\*|\.[0-9]+)?$")  # %c%02d%s with MemTypeStr: B is the DMA executor
SEP = r"\s*[,|│]\s*"
ROW = re.compile(r"^\s*[│|]?\s*Transfer\s+([0-9]+)" + SEP + r"(\S+)\s+GB/s" + SEP + r"(\S+)\s+ms" + SEP + r"([0-9]+)\s+bytes" + SEP
                 + r"(\S+)\s+->\s+(\S+)\s+->\s+(\S+?)\s*[,|│]?\s*$")  # fmt: skip
TRANSFER_WORD = re.compile(r"^\s*[│|]?\s*Transfer\s+[0-9]+\b")
EXE = re.compile(r"^(CPU|GPU|DMA|[CGDB])([0-9]+)(\.\*|\.[0-9]+)?:([0-9]+)$")
AGGREGATE = re.compile(r"^\s*[│|]?\s*Aggregate \(CPU\)")
TEST = re.compile(r"^\s*Test ([0-9]+):\s*$")
FIGURE = re.compile(r"[0-9]+\.[0-9]{3}")  # %7.3f, %8.3f: a Transfer's GB/s
P2P_FIGURE = re.compile(r"[0-9]+\.[0-9]{2}")  # %10.2f: the p2p matrix's
DECIMAL_COMMA = re.compile(r"(?<![0-9.])[0-9]+,[0-9]+(?![0-9.])")  # '28,41': a comma with no blank after it, between digits
MEMORY = re.compile(r"^([A-Z])([0-9]+)$")
# "TransferBench v1.52", the library's client "TransferBench Client v1.x Backend v1.y" (CSV and text) or "TransferBench v1.66.00"
VERSION = re.compile(r"TransferBench (?:Client v([0-9][0-9A-Za-z._-]*) Backend v([0-9][0-9A-Za-z._-]*)|v([0-9]+\.[0-9]+[0-9A-Za-z._-]*))")
SETTING = re.compile(r"^\s*([A-Z_]+)\s*(?:,|=)\s*(-?[0-9]+)\s*(?:,|:)")
P2P_TITLE = re.compile(r"^\s*(Uni|Bi)directional copy peak bandwidth GB/s \[(Local|Remote) read / (Local|Remote) write\]"
                       r" \(GPU-Executor: (GFX|DMA)\)\s*$")  # fmt: skip
P2P_HEADER = re.compile(r"^\s*(SRC\\DST|SRC\\EXE\+DST|SRC\+EXE\\DST)\s*,?(.*)$")
P2P_ROW = re.compile(r"^\s*(CPU|GPU) ([0-9]+)\s+(->|<-|<->|min|max|sd)\s*,?(.*)$")
P2P_BYTES = re.compile(r"^\s*Bytes Per Direction[, ]([0-9]+)\s*$")
SCALING_TITLE = re.compile(r"^\s*GPU-GFX Scaling benchmark:\s*$")
SCALING_COPY = re.compile(r"^\s*- Copying ([0-9]+) bytes from GPU ([0-9]+) to other devices\s*$")
SCALING_HEADER = re.compile(r"^\s*NumCUs\s*,?(.*)$")
SCALING_ROW = re.compile(r"^\s*([0-9]+)\s*,?\s+(.*)$")
SCALING_BEST = re.compile(r"^\s*Best\s*,?")
CUDA_BUILD = re.compile(r"\bTransferBenchCuda\b")  # the executable built with nvcc, for NVIDIA GPUs
HEALTHCHECK = re.compile(r"^\s*Testing (?:unidirectional|bidirectional|all-to-all|HBM)")

# Host memory as the letters print it. C and B mean the same in every version; the others moved when
# MemTypeStr grew (v1.52: CGBFUNM; the library's: CPBDKHGFUMN), so U is read only where its version is known.
HOST = {"C": ("pinned", "pinned host memory (hipHostMalloc)"),
        "B": ("pinned", "fine-grained (coherent) pinned host memory"),
        "P": ("pinned", "pinned host memory on the NUMA node closest to the GPU"),
        "D": ("pinned", "non-coherent pinned host memory"),
        "K": ("pinned", "uncached pinned host memory"),
        "H": ("numpy", "unpinned (pageable) host memory")}  # fmt: skip
OLD_HOST = {"C": HOST["C"], "B": HOST["B"], "U": ("numpy", "unpinned (pageable) host memory")}
GPU_MEMORY = {"G": "", "F": "_f"}  # the GPU's default memory, or its fine-grained memory
EXECUTORS = {"CPU": "cpu", "GPU": "gfx", "DMA": "dma", "C": "cpu", "G": "gfx", "D": "dma", "B": "bdma"}
HOW = {"dma": "the GPU's SDMA copy engine (hipMemcpyAsync, or hsa_amd_memory_async_copy with USE_HSA_DMA)",
       "bdma": "the GPU's SDMA engine, batched",
       "gfx": "a copy kernel on the GPU's CUs",
       "cpu": "CPU threads"}  # fmt: skip
CPU_MEM_TYPE = {0: "C", 1: "B", 2: "D", 3: "K", 4: "H"}  # the p2p and scaling presets' CPU_MEM_TYPE (the library's client)
GPU_MEM_TYPE = {0: "", 1: "_f"}  # their GPU_MEM_TYPE: default or fine-grained; 2 (uncached) and 3 (managed) are not read


def _preset_gpu_memory(settings: dict[str, int], preset: str, where: str, build: _Build) -> str | None:
    """The GPU memory a preset's table copied ("" default, "_f" fine-grained), or None where GPU_MEM_TYPE names
    uncached or managed memory, which no series here stands for: the table is named and left out. USE_FINE_GRAIN
    counts for p2p only (the scaling preset reads it but copies from the GPU's default memory)."""
    if preset == "p2p" and settings.get("USE_FINE_GRAIN"):
        return "_f"
    kind = settings.get("GPU_MEM_TYPE", 0)
    if kind not in GPU_MEM_TYPE:
        what = {2: "uncached", 3: "managed"}.get(kind, "unknown")
        build.say(where, f"{where}: the {preset} preset ran with GPU_MEM_TYPE={kind} ({what} GPU memory): not read (read here: 0, the"
                  " default, and 1, fine-grained)", f"the {preset} preset ran with GPU_MEM_TYPE={kind} ({what} GPU memory), not read",
                  "run it with GPU_MEM_TYPE=0 or 1")  # fmt: skip
        return None
    return GPU_MEM_TYPE[kind]


AS_PRINTED = "give the output as TransferBench printed it"
SINGLE_COPIES = "run single copies, e.g. a config file '1 1 (C0 D0 G0)', with OUTPUT_TO_CSV=1"


class _Build(Builder):
    """A Builder that keeps, beside each note a result file lists, its short form and what to do about it: where
    nothing is read, the refusal gives one reason, its row quoted short, and that reason's own remedy."""

    def __init__(self, tool: str, shape: tuple[int, ...], runs: int = 1) -> None:
        super().__init__(tool, shape, runs)
        self.reasons: list[tuple[str, str, str]] = []  # (where, short reason, what to do)

    def say(self, where: str, full: str, short: str, fix: str = SINGLE_COPIES) -> None:
        """A note (`full`, as the file lists it), and its short form with what to do for a refusal to give."""
        self.note(full)
        self.reasons.append((where, short, fix))

    def refusal(self, tool: str) -> XferbenchError:
        """Why nothing was read, in one line: the first reason with a remedy of its own, else the first reason."""
        found = next((r for r in self.reasons if r[2] != SINGLE_COPIES), None) or next(iter(self.reasons), None)
        if found is None:
            return refusal(f"no {tool} host<->device figure; {SINGLE_COPIES}")
        where, short, fix = found
        return refusal(f"{where}: no {tool} host<->device figure: {short}; {fix}")


def _quote(line: str, limit: int = 40) -> str:
    """A row as a refusal quotes it: a Transfer by its copy (`C0 -> D0:1 -> G0`), another row by its first
    characters, marked where cut."""
    if (row := ROW.match(line)) is not None:
        flat = one_line(" -> ".join(row.groups()[4:]))
    elif (old := OLD_ROW.match(line.strip())) is not None:
        flat = one_line(" -> ".join(old.groups()[3:6]))
    else:
        flat = one_line(line.strip())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


@dataclass(frozen=True)
class _Copy:
    """One Transfer between host memory and one GPU, as TransferBench printed it."""

    line: str
    test: str  # the test it ran in: Transfers of one test run at once
    gbps: str
    nbytes: int
    host: str  # the host memory's letter
    node: int  # its NUMA node
    gpu: int
    fine: str  # "_f" for the GPU's fine-grained memory
    direction: str
    exe: str  # dma, bdma, gfx or cpu
    exe_index: int
    units: int | None  # CUs or CPU threads; None where not printed


def _runs(path: Path, text: str) -> list[dict[str, Any]]:
    """Each run a file holds: TransferBench's output from its version line (or the first line)."""
    return versioned_runs(path, text, lambda line: bool(VERSION.search(line)))


def _version(match: re.Match[str]) -> str:
    """The version a run printed: the library's (its backend), with its client's where both are given."""
    client, backend, plain = match.groups()
    return f"{backend} (client {client})" if backend else plain


def is_transferbench(text: str) -> bool:
    """Whether a text holds TransferBench's output: its version line, CSV header, a Transfer row or a p2p matrix."""
    return bool(VERSION.search(text) or OLD_HEADER in text
                or any(ROW.match(line) or P2P_TITLE.match(line) or SCALING_TITLE.match(line) or HEALTHCHECK.match(line)
                       for line in text.split("\n")))  # fmt: skip


def read_transferbench(paths: Sequence[Path], shape: tuple[int, ...] = DEFAULT_SHAPE, environment: dict[str, Any] | None = None,
                       tool: str = TOOL) -> Result:  # fmt: skip
    """TransferBench's output, one or more files, as a result: a series per executor, host memory and
    GPU from every Transfer between host memory and one GPU that ran alone in its test, and from every
    host row and column of a p2p preset's unidirectional matrix. `tool`: the name the series carry
    (rocm_bandwidth_test 2.x runs TransferBench's presets as its own)."""
    if not paths:
        raise refusal(f"give at least one {tool} output file")
    runs = []
    for path in paths:
        text = read_text(Path(path))
        if not is_transferbench(text):
            raise refusal(f"{path}: not TransferBench's output (no version line, Transfer row or p2p matrix); run TransferBench"
                          " with OUTPUT_TO_CSV=1 and save what it prints")  # fmt: skip
        runs.extend(_runs(Path(path), text))
    build = _Build(tool, shape, runs=len(runs))
    versions: list[str | None] = []
    sizes: list[int] = []
    for run in runs:
        where = run["where"]
        version = next((_version(m) for m in map(VERSION.search, run["lines"]) if m), None)
        versions.append(version)
        settings = {m.group(1): int(m.group(2)) for m in map(SETTING.match, run["lines"]) if m}
        build.start_run(where, None, {})
        noted = len(build.not_imported)
        lines = run["lines"]
        scaling = any(SCALING_TITLE.match(line) for line in lines)
        if run["cut"] and lines and (ROW.match(lines[-1]) or OLD_ROW.match(lines[-1].strip()) or P2P_ROW.match(lines[-1])
                                     or scaling and (SCALING_ROW.match(lines[-1]) or SCALING_BEST.match(lines[-1]))):  # fmt: skip
            build.say(where, f"{where}: the paste ends inside this row: it was cut short there, and the row is left out:"
                      f" {one_line(lines[-1], 200)}", f"the paste ends inside its last row, {_quote(lines[-1])}",
                      "give the whole output")  # fmt: skip
            lines = lines[:-1]
        if any(HEALTHCHECK.match(line) for line in lines):
            build.say(where, f"{where}: the healthcheck preset's lines: they print a GPU's figure only where it fails its limit (or"
                      " with VERBOSE=1), from a NUMA node they do not name, and up to v1.52 a kernel's reads or writes, no copy; not read",
                      "the healthcheck preset's lines name no copy")  # fmt: skip
        copies = [*_config_copies(lines, where, build), *_p2p_copies(lines, where, settings, build),
                  *_scaling_copies(lines, where, settings, build)]
        if not copies and len(build.not_imported) == noted:
            said = one_line(" ".join(run["lines"]), 80, last=True)
            build.say(where, f"{where}: no Transfer row, p2p matrix or scaling table{': ' + said if said else ''}",
                      "no Transfer row, p2p matrix or scaling table")
        for copy in copies:
            _figure(build, copy, where, version, settings, sizes)
        build.end_run(None)
    series = build.done()
    if not any(s.ok_points() for s in series):
        raise build.refusal(tool)
    peer = peer_facts(tool, versions, [], [], paths, sizes, build.not_imported)
    # TransferBench runs on ROCm (HIP); its native nvcc build is TransferBenchCuda, named by the command where pasted
    cuda = any(CUDA_BUILD.search(line) for run in runs for line in run["lines"])
    made = {"vendor": NVIDIA, "runtime": "CUDA"} if cuda else {"vendor": AMD, "runtime": ROCM}
    return peer_result(label_gpus(peer_environment(environment, None, {}, {}, peer), series, **made), series, paths)


def _figure(build: _Build, copy: _Copy, where: str, version: str | None, settings: dict[str, int], sizes: list[int]) -> None:
    """One Transfer's figure into its series; a figure that is not one TransferBench prints is named and left out."""
    at = f"{where}: {one_line(copy.line, 200)}"
    if copy.test == "p2p" and copy.gbps == "N/A":  # not run: the executing NUMA node has no CPUs
        build.reasons.append((where, "N/A in the p2p matrix's host cells: not run (a NUMA node without CPUs)", SINGLE_COPIES))
        build.gap(_mode(copy), f"cuda:{copy.gpu}", copy.direction, copy.nbytes, _fields(copy, version, settings), "skipped",
                  "N/A in TransferBench's p2p matrix: not run (a NUMA node without CPUs)")  # fmt: skip
        return
    if not (P2P_FIGURE if _preset(copy) else FIGURE).fullmatch(copy.gbps):
        build.say(where, f"{at}: {one_line(copy.gbps, 40)!r} is not a figure (TransferBench prints GB/s to 0.001, or 0.01 in its"
                  " p2p and scaling presets): left out", f"{one_line(copy.gbps, 20)!r} is not a figure", AS_PRINTED)  # fmt: skip
        return
    if copy.nbytes <= 0:
        build.say(where, f"{at}: no bytes moved: left out", f"no bytes moved in {_quote(copy.line)}")
        return
    mode = _mode(copy)
    device = f"cuda:{copy.gpu}"
    fields = _fields(copy, version, settings)
    gbps = float(copy.gbps)
    sizes.append(copy.nbytes)
    if not math.isfinite(gbps) or gbps <= 0:
        build.reasons.append((where, f"TransferBench printed {copy.gbps} GB/s", SINGLE_COPIES))
        build.gap(mode, device, copy.direction, copy.nbytes, fields, "skipped", f"TransferBench printed {copy.gbps} GB/s")
        return
    iterations = settings.get("NUM_ITERATIONS", TB_ITERATIONS)  # negative: a run of that many seconds, its count not printed
    build.figure(mode, device, copy.direction, copy.nbytes, fields, gbps, max(iterations, 1), 1)


def _preset(copy: _Copy) -> str | None:
    """The preset whose table a figure came from (printed to 0.01 GB/s), or None for a config-file Transfer (0.001)."""
    return "p2p" if copy.test == "p2p" else "scaling" if copy.test.startswith("scaling") else None


def _mode(copy: _Copy) -> str:
    """A series' mode: its executor, host memory and NUMA node, and the CUs or threads that copied (dma_c0, gfx_c0_32cu, cpu_b1_4t)."""
    units = f"_{copy.units}{'cu' if copy.exe == 'gfx' else 't'}" if copy.units is not None and copy.exe in ("gfx", "cpu") else ""
    return f"{copy.exe}_{copy.host.lower()}{copy.node}{copy.fine}{units}"


def _fields(copy: _Copy, version: str | None, settings: dict[str, int]) -> dict[str, Any]:
    """What a series of TransferBench says about how it was measured."""
    table = OLD_HOST if copy.host in OLD_HOST and copy.host not in HOST else HOST
    buffer, memory = table[copy.host]
    way = "host to device" if copy.direction == H2D else "device to host"
    executor = HOW[copy.exe] + (f" ({copy.units} {'CUs' if copy.exe == 'gfx' else 'threads'})" if copy.units and copy.exe in ("gfx", "cpu") else "")
    owner = "" if copy.exe == "cpu" else f" of GPU {copy.exe_index}"
    iterations, warmups = settings.get("NUM_ITERATIONS", TB_ITERATIONS), settings.get("NUM_WARMUPS", TB_WARMUPS)
    timed = f"{-iterations} s of iterations" if iterations < 0 else f"{iterations} timed iterations"
    stated = "" if "NUM_ITERATIONS" in settings else " (TransferBench's defaults: its output does not record them)"
    note = (f"TransferBench{' v' + version if version else ''}: {way}, copied by {executor}{owner} between {memory} on NUMA node"
            f" {copy.node} and GPU {copy.gpu}'s {'fine-grained ' if copy.fine else ''}memory; bytes over the mean of {timed}"
            f" after {warmups} warm-up{'s' * (warmups != 1)}{stated}, printed to 0.001 GB/s")  # fmt: skip
    if _preset(copy) == "p2p":
        note = note.replace("printed to 0.001 GB/s", "printed to 0.01 GB/s in the p2p preset's matrix")
    elif _preset(copy) == "scaling":
        note = note.replace("printed to 0.001 GB/s", "printed to 0.01 GB/s in the scaling preset's table (one copy at a time)")
    return {"host_buffer": buffer, "method": PER_CALL, "transfer": HOST_TO_DEVICE if copy.direction == H2D else DEVICE_TO_HOST,
            "clock": ("the host clock around each iteration" if copy.exe == "cpu"
                      else "HIP events around each iteration (USE_HIP_EVENTS, TransferBench's default)"),
            "sync": "each iteration waits for its Transfers to finish", "device_clock": None,
            "params": {"tool": f"TransferBench {version}".strip() if version else "TransferBench", "samples": max(iterations, 1),
                       "copies_per_sample": 1, "statistic": "mean", "executor": copy.exe, "host_memory": copy.host,
                       "numa_node": copy.node, "subexecutors": copy.units},
            "note": note}  # fmt: skip


def _memory(token: str, old: bool) -> tuple[str, str, int] | None:
    """A Transfer's memory as ('host' or 'gpu', its letter, its index); None where it is neither one
    host buffer nor one GPU's memory (several buffers, none, another rank's, or managed memory)."""
    match = MEMORY.match(token)
    if match is None:
        return None
    letter, index = match.group(1), int(match.group(2))
    if letter in GPU_MEMORY:
        return "gpu", letter, index
    if letter in (OLD_HOST if old else HOST):
        return "host", letter, index
    return None


def _copy(line: str, test: str, gbps: str, nbytes: int, src: str, exe: str, exe_index: int, units: int | None, dst: str,
          old: bool, where: str, build: _Build) -> _Copy | None:  # fmt: skip
    """A Transfer as a copy between host memory and one GPU; anything else is named and left out."""
    source, target = _memory(src, old), _memory(dst, old)
    at = f"{where}: {one_line(line, 200)}"
    if source is None or target is None:
        odd = src if source is None else dst
        letters = "C, B, U (host), G, F (GPU)" if old else "C, B, P, D, K, H (host), G, F (GPU)"
        build.say(where, f"{at}: {one_line(odd, 40)!r} is not one host buffer or one GPU's memory (read here: {letters}): left out",
                  f"{one_line(odd, 20)!r} is not one host buffer or one GPU's memory")  # fmt: skip
        return None
    if source[0] == target[0]:
        between = "within host memory" if source[0] == "host" else "between GPU memories"
        build.say(where, f"{at}: a copy {between}, not host<->device", f"{_quote(line)} copies {between}")
        return None
    host, gpu = (source, target) if source[0] == "host" else (target, source)
    direction = H2D if source[0] == "host" else D2H
    if exe != "cpu" and exe_index != gpu[2]:
        build.say(where, f"{at}: GPU {exe_index} copies for GPU {gpu[2]}: a peer GPU's copy, not this GPU's own: left out",
                  f"GPU {exe_index} copies for GPU {gpu[2]} in {_quote(line)}, not its own copy")  # fmt: skip
        return None
    return _Copy(line, test, gbps, nbytes, host[1], host[2], gpu[2], GPU_MEMORY[gpu[1]], direction, exe, exe_index, units)


def _config_copies(lines: list[str], where: str, build: _Build) -> list[_Copy]:
    """The Transfers of a run's config-file tests, each only where it ran alone in its test: Transfers
    of one test run at once, and one that shared the link is no figure of the link alone."""
    found: list[tuple[str, str, _Copy | None]] = []  # (test, line, copy)
    test, counter, since = "", 0, False
    for raw in lines:
        line = raw.rstrip()
        if line.startswith("Test#,"):
            if line.strip().rstrip(",") != OLD_HEADER:
                fields = len(line.strip().rstrip(",").split(","))
                build.say(where, f"{where}: a CSV header of {fields} fields where TransferBench up to v1.50 prints {OLD_FIELDS}"
                          f" ({OLD_HEADER}): {one_line(line, 200)}; its rows are read by their own shape",
                          f"a CSV header of {fields} fields where TransferBench up to v1.50 prints {OLD_FIELDS}", AS_PRINTED)  # fmt: skip
            continue
        if (numbered := TEST.match(line)) is not None:
            test, since = f"test {numbered.group(1)}", False
            continue
        if AGGREGATE.match(line):  # a test's last row (v1.51 on)
            since = False
            continue
        if (old := OLD_ROW.match(line.strip())) is not None:
            number, transfer, nbytes, src, exe, dst, units, gbps = old.groups()[:8]
            if transfer == "ALL":
                continue  # an executor's total over its Transfers
            executor = OLD_EXE.match(exe)
            if executor is None:
                build.say(where, f"{where}: {one_line(line, 200)}: executor {one_line(exe, 20)!r} is not one TransferBench up to"
                          " v1.50 prints (C, G or B and two digits): left out",
                          f"executor {one_line(exe, 20)!r} is not one TransferBench up to v1.50 prints", AS_PRINTED)  # fmt: skip
                continue
            kind = {"C": "cpu", "G": "gfx", "B": "dma"}[executor.group(1)]
            copy = _copy(line, f"test {number}", gbps, int(nbytes), src, kind, int(executor.group(2)),
                         int(units) if kind != "dma" else None, dst, True, where, build)  # fmt: skip
            found.append((f"test {number}", line, copy))
            continue
        if re.match(r"^\s*[0-9]+,(?:[0-9]+|ALL),", line):  # a Test#,Transfer# line of another shape
            build.say(where, f"{where}: a CSV line of {len(line.split(','))} fields where TransferBench up to v1.50 prints"
                      f" {OLD_FIELDS}: {one_line(line, 200)}; left out",
                      f"a CSV line of {len(line.split(','))} fields where TransferBench up to v1.50 prints {OLD_FIELDS}, {_quote(line)}",
                      AS_PRINTED)  # fmt: skip
            continue
        if (row := ROW.match(line)) is not None:
            if not since:
                counter += 1
                since = True
            _, gbps, _, nbytes, src, exe, dst = row.groups()
            executor = EXE.match(exe)
            group = test or f"table {counter}"
            if executor is None:
                build.say(where, f"{where}: {one_line(line, 200)}: executor {one_line(exe, 30)!r} is not a CPU, GPU kernel or DMA"
                          " executor of this machine: left out",
                          f"executor {one_line(exe, 30)!r} is not a CPU, GPU kernel or DMA executor of this machine")  # fmt: skip
                found.append((group, line, None))
                continue
            kind = EXECUTORS[executor.group(1)]
            copy = _copy(line, group, gbps, int(nbytes), src, kind, int(executor.group(2)),
                         int(executor.group(4)) if kind in ("gfx", "cpu") else None, dst, False, where, build)  # fmt: skip
            found.append((group, line, copy))
            continue
        if TRANSFER_WORD.match(line):
            build.say(where, f"{where}: a Transfer row of another shape than TransferBench prints (cut short, or another"
                      f" version's): {one_line(line, 200)}; left out", f"a Transfer row of another shape, {_quote(line)}",
                      AS_PRINTED)  # fmt: skip
    counts: dict[str, int] = {}
    for group, _, _ in found:
        counts[group] = counts.get(group, 0) + 1
    copies = []
    for group, line, copy in found:
        if copy is None:
            continue
        if counts[group] > 1:
            others = f"{counts[group] - 1} other Transfer{'s' * (counts[group] > 2)}"
            build.say(where, f"{where}: {one_line(line, 200)}: ran at once with {others} in its test: not a copy on its own,"
                      " left out", f"{_quote(line)} ran at once with {others}")  # fmt: skip
            continue
        copies.append(copy)
    return copies


def _cells(rest: str, csv_form: bool) -> list[str]:
    """A preset's row cells: between commas where its header has them (OUTPUT_TO_CSV=1), else between blanks, so
    a figure written with a decimal comma ('28,41') in a table without commas stays one cell, named as no figure."""
    cells = [c.strip() for c in rest.split(",")] if csv_form else rest.split()
    while cells and cells[-1] == "":
        cells.pop()
    return cells


def _misfit(preset: str, cells: list[str], columns: list[tuple[str, int]], line: str, where: str) -> tuple[str, str, str]:
    """Why a preset's row of another width than its header is left out (as a note, its short form and what to do): a
    figure with a decimal comma, which splits a CSV cell in two, named as the cell it is; else the counts (a row cut short)."""
    comma = DECIMAL_COMMA.search(line)
    if comma is not None:
        return (f"{where}: {comma.group(0)!r} in a {preset} row is not a figure (TransferBench prints GB/s with a decimal point,"
                f" to 0.01): the row is left out; import the output as TransferBench printed it: {one_line(line, 120)}",
                f"{comma.group(0)!r} in a {preset} row is not a figure (GB/s print with a decimal point)", AS_PRINTED)
    return (f"{where}: a {preset} row of {len(cells)} cells under {len(columns)} columns (cut short?): {one_line(line, 200)}; left out",
            f"a {preset} row of {len(cells)} cells under {len(columns)} columns, {_quote(line)}", "give the whole table")


def _p2p_copies(lines: list[str], where: str, settings: dict[str, int], build: _Build) -> list[_Copy]:
    """The host rows and columns of a p2p preset's unidirectional matrices: CPU row to GPU column is
    host to device, GPU row to CPU column device to host, each executed as the header and title say."""
    found: list[_Copy] = []
    nbytes = next((int(m.group(1)) for m in map(P2P_BYTES.match, lines) if m), None)
    title: re.Match[str] | None = None
    columns: list[tuple[str, int]] = []
    executes_source = True
    csv_form = True  # the header's cells between commas (OUTPUT_TO_CSV=1), else between blanks
    between = False  # a cell between two GPUs or two NUMA nodes was named
    host = "B" if settings.get("USE_FINE_GRAIN") else CPU_MEM_TYPE.get(settings.get("CPU_MEM_TYPE", 0), "C")
    if not any(P2P_TITLE.match(line) for line in lines):
        return found
    fine = _preset_gpu_memory(settings, "p2p", where, build)
    if fine is None:
        return found
    for line in lines:
        if (match := P2P_TITLE.match(line)) is not None:
            title, columns = match, []
            if match.group(1) == "Bi":
                build.say(where, f"{where}: the p2p preset's bidirectional matrix: each figure shares the link with the other way's"
                          " copy, not a copy on its own; left out", "the p2p preset's bidirectional matrix shares the link both ways")  # fmt: skip
            continue
        if title is None or title.group(1) == "Bi":
            continue
        if (header := P2P_HEADER.match(line)) is not None:
            columns = [(kind, int(index)) for kind, index in re.findall(r"(CPU|GPU) ([0-9]+)", header.group(2))]
            executes_source = header.group(1) == "SRC+EXE\\DST"
            csv_form = "," in line
            continue
        row = P2P_ROW.match(line)
        if row is None or not columns or row.group(3) != "->":
            continue
        cells = _cells(row.group(4), csv_form)
        if len(cells) != len(columns):
            build.say(where, *_misfit("p2p", cells, columns, line, where))
            continue
        if nbytes is None:
            build.say(where, f"{where}: the p2p matrix without its 'Bytes Per Direction' line: its size is not known; left out"
                      " (give the output from that line on)", "the p2p matrix without its 'Bytes Per Direction' line",
                      "give the output from that line on")  # fmt: skip
            return found
        for (kind, index), cell in zip(columns, cells):
            if (row.group(1) == "CPU") == (kind == "CPU"):
                if cell != "N/A" and not between:
                    between = True
                    build.say(where, f"{where}: the p2p matrix's cells between GPUs (and between NUMA nodes): not host<->device",
                              "the p2p matrix's cells are between GPUs (and between NUMA nodes)")  # fmt: skip
                continue
            if row.group(1) == "CPU":
                direction, node, gpu = H2D, int(row.group(2)), index
            else:
                direction, node, gpu = D2H, index, int(row.group(2))
            cpu_executes = (direction == H2D) == executes_source
            gpu_exe = "dma" if title.group(4) == "DMA" else "gfx"
            exe = "cpu" if cpu_executes else gpu_exe
            units = settings.get("NUM_CPU_SE") if exe == "cpu" else settings.get("NUM_GPU_SE") if exe == "gfx" else None
            found.append(_Copy(line.strip(), "p2p", cell, nbytes, host, node, gpu, fine, direction, exe, node if exe == "cpu" else gpu,
                               units))  # fmt: skip
    return found


def _scaling_copies(lines: list[str], where: str, settings: dict[str, int], build: _Build) -> list[_Copy]:
    """The host columns of a scaling preset's table: per CU count, the GPU's kernel copy from its memory
    into each NUMA node's host memory, alone (device to host). GPU columns and the Best row are named."""
    found: list[_Copy] = []
    nbytes: int | None = None
    gpu = 0
    columns: list[tuple[str, int]] = []
    inside = between = best = False
    csv_form = True  # the header's cells between commas (OUTPUT_TO_CSV=1), else between blanks
    host = CPU_MEM_TYPE.get(settings.get("CPU_MEM_TYPE", 0), "C")
    if not any(SCALING_TITLE.match(line) for line in lines):
        return found
    fine = _preset_gpu_memory(settings, "scaling", where, build)
    if fine is None:
        return found
    for line in lines:
        if SCALING_TITLE.match(line):
            inside, columns, nbytes = True, [], None
            continue
        if not inside:
            continue
        if (copying := SCALING_COPY.match(line)) is not None:
            nbytes, gpu = int(copying.group(1)), int(copying.group(2))
            continue
        if (header := SCALING_HEADER.match(line)) is not None:
            columns = [(kind, int(index)) for kind, index in re.findall(r"(CPU|GPU)([0-9]+)", header.group(1))]
            csv_form = "," in line
            continue
        if not columns:
            continue
        if SCALING_BEST.match(line):  # the table's last row
            inside = False
            if not best:
                best = True
                build.say(where, f"{where}: the scaling preset's Best row: each column's highest figure again, with its CU count;"
                          " not read twice", "the scaling preset's Best row only")  # fmt: skip
            continue
        if (row := SCALING_ROW.match(line)) is None:
            continue
        cells = _cells(row.group(2), csv_form)
        if len(cells) != len(columns):
            build.say(where, *_misfit("scaling", cells, columns, line, where))
            continue
        if nbytes is None:
            build.say(where, f"{where}: the scaling table without its '- Copying N bytes from GPU G' line: its size is not known;"
                      " left out (give the output from its title on)", "the scaling table without its '- Copying N bytes' line",
                      "give the output from its title on")  # fmt: skip
            return found
        units = int(row.group(1))
        for (kind, index), cell in zip(columns, cells):
            if kind == "GPU":
                if not between:
                    between = True
                    build.say(where, f"{where}: the scaling table's GPU columns: copies between GPU memories, not host<->device",
                              "the scaling table's cells are copies between GPU memories")  # fmt: skip
                continue
            found.append(_Copy(line.strip(), f"scaling {units}", cell, nbytes, host, index, gpu, fine, D2H, "gfx", gpu, units))
    return found


PEER = Peer(TOOL, read_transferbench, "dma_c0", "transferbench",
            "Import AMD TransferBench's output (OUTPUT_TO_CSV=1, or its table): each config-file Transfer between host memory and one"
            " GPU that ran alone, the p2p preset's host rows and columns and the scaling preset's host columns, a series per"
            " executor (DMA engine, GPU kernel, CPU).",
            "run TransferBench with OUTPUT_TO_CSV=1 on a config file of the line '1 1 (C0 D{gpu} G{gpu})' (its DMA engine's copy from"
            " pinned memory) and import what it prints")
