"""AMD's peers' output as the tools print it, to import in tests, and the real outputs found in public
threads, each with its source and date.

TransferBench, config-file tests (a line such as `1 1 (C0 D0 G0)`: one Transfer on one subexecutor
from pinned host memory on NUMA node 0, by GPU 0's DMA engine, into GPU 0's memory):
- up to v1.50 with OUTPUT_TO_CSV=1 (src/TransferBench.cpp at v1.23 and v1.50): the environment as
  `NAME,VALUE,DESCRIPTION` lines under `EnvVar,Value,Description,(TransferBench vX)`, the CSV header
  `Test#,Transfer#,NumBytes,Src,Exe,Dst,CUs,BW(GB/s),Time(ms),SrcAddr,DstAddr`, a line per Transfer
  (`%d,%d,%lu,%s,%c%02d%s,%s,%d,%.3f,%.3f,%s,%s`, the executor's letter taken from MemTypeStr, so a DMA
  executor prints as B), and an `ALL` line per executor;
- v1.51 and v1.52 (ReportResults): ` Executor: %3s %02d %c %7.3f GB/s %c %8.3f ms %c %12lu bytes %c %-7.3f
  GB/s (sum)`, `     Transfer %02d  %c %7.3f GB/s %c %8.3f ms %c %12lu bytes %c %s -> %s%02d%s:%03d -> %s`,
  ` Aggregate (CPU)  %c ...`, the separator `,` with CSV and `|` without;
- v1.54 on (Utils::PrintResults through TableHelper): five cells per row, each padded to its column's
  width (right-aligned, the last left-aligned), followed by `,` with CSV; `Test N:` and `│` borders without.

TransferBench's p2p preset (RunPeerToPeerBenchmarks up to v1.52, Presets/PeerToPeer.hpp after, the same
text): `Bytes Per Direction,N`, then per direction a title, a header of `%7s %02d` columns and rows of
`%5s %02d %3s` labels and `%10.2f` cells (N/A where nothing ran), `,` after each with CSV.

rocm_bandwidth_test (legacy, rocm_bandwidth_test_report.cpp and _print.cpp): ten blanks before each
line, `RocmBandwidthTest Version: V`, `Launch Command is: CMD`, `Device: N,  NAME` (a GPU adds its UUID
and PCI address), then the matrices: a title, `D/D` and the device numbers in 12-wide columns, and a row
per device of 12-wide cells to 0.001 GB/s or N/A, each row followed by a blank line.
"""

from __future__ import annotations

from typing import Any

# --- TransferBench ---------------------------------------------------------------------------------

TB_ENV_OLD = (("NUM_ITERATIONS", 10, "Running 10  timed iteration(s)"), ("NUM_WARMUPS", 3, "Running 3 warmup iteration(s) per Test"))


def tb_env(version: str, csv: bool = True, settings: tuple[tuple[str, int, str], ...] = TB_ENV_OLD, client: str | None = None) -> str:
    """DisplayEnvVars as v1.52 prints it (PRINT_EV: `%-20s%s%12d%s%s`); with `client`, the library's
    client's head line, `TransferBench Client vCLIENT Backend vVERSION`."""
    name = f"TransferBench Client v{client} Backend v{version}" if client else f"TransferBench v{version}"
    if csv:
        head = f"EnvVar,Value,Description,({name})\n"
    else:
        head = f"{name}\n===============================================================\n"
    sep, colon = (",", ",") if csv else (" = ", " : ")
    return head + "".join(f"{name:<20}{sep}{value:12d}{colon}{text}\n" for name, value, text in settings) + "\n"


def tb_old_row(test: int, transfer: int, nbytes: int, src: str, exe: str, dst: str, units: int, gbps: float,
               ms: float | None = None) -> str:  # fmt: skip
    """One Transfer's CSV line up to v1.50 (`exe` as printed: C00, G00, B00.* for DMA)."""
    ms = nbytes / gbps / 1e6 if ms is None else ms
    return f"{test},{transfer},{nbytes},{src},{exe},{dst},{units},{gbps:.3f},{ms:.3f},0x7f0000000000,0x7f1000000000"


def tb_old_all(test: int, nbytes: int, exe: str, units: int, gbps: float) -> str:
    return f"{test},ALL,{nbytes},ALL,{exe},ALL,{units},{gbps:.3f},{nbytes / gbps / 1e6:.3f},ALL,ALL"


OLD_HEADER_LINE = "Test#,Transfer#,NumBytes,Src,Exe,Dst,CUs,BW(GB/s),Time(ms),SrcAddr,DstAddr\n"


def tb_old(*rows: str, version: str = "1.50") -> str:
    """A config file's run up to v1.50 with OUTPUT_TO_CSV=1."""
    return tb_env(version) + OLD_HEADER_LINE + "".join(r + "\n" for r in rows)


def tb_152_test(transfers: list[tuple[int, str, str, int, int, str, float]], csv: bool = True) -> str:
    """One test as v1.51/v1.52 print it: per Transfer (bytes, src, executor name, index, subexecutors, dst, GB/s)."""
    sep = "," if csv else "|"
    out = []
    for number, (nbytes, src, name, index, units, dst, gbps) in enumerate(transfers):
        ms = nbytes / gbps / 1e6
        sub = ".*" if name == "DMA" else ""
        out.append(f" Executor: {name:>3} {index:02d} {sep} {gbps:7.3f} GB/s {sep} {ms:8.3f} ms {sep} {nbytes:12d} bytes {sep}"
                   f" {gbps:<7.3f} GB/s (sum)")  # fmt: skip
        out.append(f"     Transfer {number:02d}  {sep} {gbps:7.3f} GB/s {sep} {ms:8.3f} ms {sep} {nbytes:12d} bytes {sep} {src} ->"
                   f" {name}{index:02d}{sub}:{units:03d} -> {dst}")  # fmt: skip
    total = sum(t[0] for t in transfers)
    out.append(f" Aggregate (CPU)  {sep} {transfers[0][6]:7.3f} GB/s {sep} {1.0:8.3f} ms {sep} {total:12d} bytes {sep} Overhead: 0.050 ms")
    return "".join(line + "\n" for line in out)


def _table(rows: list[list[str]], left: set[tuple[int, int]], csv: bool) -> str:
    """TableHelper::PrintTable: cells padded to their column's width, right-aligned unless `left`;
    with CSV each followed by `,`, else between `│` (the borders' dashed lines left out)."""
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    lines = []
    for i, row in enumerate(rows):
        cells = [cell.ljust(widths[c]) if (i, c) in left else cell.rjust(widths[c]) for c, cell in enumerate(row)]
        lines.append("".join(c + "," for c in cells) if csv else " " + "│".join(cells) + " ")
    return "".join(line + "\n" for line in lines)


def tb_new_test(transfers: list[tuple[int, str, str, int, int, str, float]], number: int = 1, csv: bool = True) -> str:
    """One test as v1.54 on print it: per Transfer (bytes, src, executor letter, index, subexecutors, dst, GB/s)."""
    rows: list[list[str]] = []
    left: set[tuple[int, int]] = set()
    names = {"C": "CPU", "G": "GPU", "D": "DMA", "B": "BMA"}
    for index, (nbytes, src, letter, exe, units, dst, gbps) in enumerate(transfers):
        ms = nbytes / gbps / 1e6
        rows.append([f" Executor: {names[letter]:>3} {exe:02d} ", f"{gbps:8.3f} GB/s ", f"{ms:8.3f} ms ", f"{nbytes:12d} bytes ",
                     f" {gbps:7.3f} GB/s (sum)"])  # fmt: skip
        left.add((len(rows) - 1, 4))
        rows.append([f"Transfer {index:<4d} ", f"{gbps:8.3f} GB/s ", f"{ms:8.3f} ms ", f"{nbytes:12d} bytes ", f" {src} -> {letter}{exe}:{units} -> {dst}"])
        left.add((len(rows) - 1, 4))
    total = sum(t[0] for t in transfers)
    rows.append(["Aggregate (CPU) ", f"{transfers[0][6]:8.3f} GB/s ", f"{1.0:8.3f} ms ", f"{total:12d} bytes ", " Overhead 0.050 ms"])
    left.add((len(rows) - 1, 4))
    return ("" if csv else f"Test {number}:\n") + _table(rows, left, csv)


def tb_p2p(cpus: int, gpus: int, cells: dict[tuple[str, int, str, int], float], nbytes: int = 64 * 2**20, csv: bool = True,
           remote_read: bool = False, dma: bool = False, env: str = "") -> str:  # fmt: skip
    """The p2p preset's unidirectional matrix (P2P_MODE=1): `cells` by (row kind, row index, column kind, column index); N/A elsewhere."""
    sep = "," if csv else ""
    out = [env + f"Bytes Per Direction{',' if csv else ' '}{nbytes}"]
    out.append(f"Unidirectional copy peak bandwidth GB/s [{'Remote' if remote_read else 'Local'} read / {'Local' if remote_read else 'Remote'}"
               f" write] (GPU-Executor: {'DMA' if dma else 'GFX'})")  # fmt: skip
    corner = "SRC\\EXE+DST" if remote_read else "SRC+EXE\\DST"
    header = f"{corner:>12}{sep}"
    header += "".join(f"{'CPU':>7} {i:02d}{sep}" for i in range(cpus)) + ("   " if cpus else "")
    header += "".join(f"{'GPU':>7} {i:02d}{sep}" for i in range(gpus))
    out.append(header)
    columns = [("CPU", i) for i in range(cpus)] + [("GPU", i) for i in range(gpus)]
    for kind, index in columns:
        if kind == "GPU" and index == 0 and cpus:
            out.append("")
        row = f"{kind:>5} {index:02d} {' ->':>3}{sep}"
        for position, (other, at) in enumerate(columns):
            if position == cpus and cpus:
                row += "   "
            value = cells.get((kind, index, other, at))
            row += (f"{value:10.2f}" if value is not None else f"{'N/A':>10}") + sep
        out.append(row)
    return "".join(line + "\n" for line in out) + ("" if csv else "\n")


# --- rocm_bandwidth_test (legacy) ------------------------------------------------------------------

PAD = " " * 10


def rbt_devices(devices: list[tuple[str, str | None, str | None]]) -> str:
    """DisplayDevInfo: (name, UUID, PCI address) per device, a CPU with neither."""
    lines = [f"{PAD}Device: {i},  {name}" + (f",  {uuid}" if uuid else "") + (f",  {pci}" if pci else "")
             for i, (name, uuid, pci) in enumerate(devices)]  # fmt: skip
    return "\n" + "".join(line + "\n" for line in lines) + "\n"


def rbt_matrix(title: str, cells: list[list[str]]) -> str:
    """PrintPerfMatrix: a title, the D/D header, and a row per device, cells as printed (28.411, N/A)."""
    out = f"{PAD}{title}\n\n{PAD}{'D/D':<10}" + "".join(f"{i:<12}" for i in range(len(cells))) + "\n\n"
    for i, row in enumerate(cells):
        out += f"{PAD}{i:<10}" + "".join(f"{c:<12}" for c in row) + "\n\n"
    return out + "\n"


def rbt_link_matrix(title: str, cells: list[list[str]]) -> str:
    """The access and NUMA-distance matrices (PrintLinkPropsMatrix), 10-wide: not bandwidth."""
    out = f"{PAD}{title}\n\n{PAD}{'D/D':<10}" + "".join(f"{i:<10}" for i in range(len(cells))) + "\n\n"
    for i, row in enumerate(cells):
        out += f"{PAD}{i:<10}" + "".join(f"{c:<10}" for c in row) + "\n\n"
    return out + "\n"


def rbt(devices: list[tuple[str, str | None, str | None]], uni: list[list[str]] | None, bi: list[list[str]] | None = None,
        version: str = "2.6.0", command: str = "./rocm-bandwidth-test (rocm_bandwidth -a + rocm_bandwidth -A)",
        access: bool = True) -> str:  # fmt: skip
    """A plain run: progress dots, version, launch command, devices, access matrix, and the bandwidth matrices."""
    out = "................\n" + f"{PAD}RocmBandwidthTest Version: {version}\n\n{PAD}Launch Command is: {command}\n\n" + rbt_devices(devices)
    if access:
        out += "\n" + rbt_link_matrix("Inter-Device Access", [["1"] * len(devices) for _ in devices])
    if uni is not None:
        out += rbt_matrix("Unidirectional copy peak bandwidth GB/s", uni)
    if bi is not None:
        out += rbt_matrix("Bidirectional copy peak bandwidth GB/s", bi)
    return out


# Real outputs, as their threads show them (device lists and figures; the layout is the tool's own, above).
XTX_SOURCE = {"url": "https://github.com/ROCm/legacy-rocm-build/issues/2253", "date": "2023-06-19",
              "what": "rocm-bandwidth-test 2.6.0 on an EPYC 7542 with two Radeon RX 7900 XTX, pasted in full"}  # fmt: skip
XTX_DEVICES: list[tuple[str, str | None, str | None]] = [("AMD EPYC 7542 32-Core Processor", None, None),
                                                          ("Radeon RX 7900 XTX", "GPU-XX", "83:0.0"),
                                                          ("Radeon RX 7900 XTX", "GPU-XX", "03:0.0")]  # fmt: skip
XTX_UNI = [["N/A", "28.411", "28.410"], ["29.013", "649.528", "N/A"], ["29.016", "N/A", "636.462"]]
XTX_BI = [["N/A", "48.226", "48.102"], ["48.226", "N/A", "N/A"], ["48.102", "N/A", "N/A"]]

PRO_VII_SOURCE = {"url": "https://github.com/ROCm/rocm_smi_lib/issues/110", "date": "2024-10-29",
                  "what": "rocm-bandwidth-test 2.6.0 on a Threadripper 2950X with two Radeon Pro VII; the first figure read: 14.250"}  # fmt: skip
PRO_VII_DEVICES: list[tuple[str, str | None, str | None]] = [("AMD Ryzen Threadripper 2950X 16-Core Processor", None, None),
                                                              ("AMD Radeon Pro VII", "GPU-ff02618173c6451f", "0c:0.0"),
                                                              ("AMD Radeon Pro VII", "GPU-25e0596172e17d3e", "43:0.0")]  # fmt: skip

RX570_SOURCE = {"url": "https://github.com/ROCm/legacy-rocm-build/issues/1309", "date": "2020-11-30",
                "what": "rocm-bandwidth-test 2.3.11 (ROCm 3.5.1) on a Ryzen 5 1600X with a Radeon RX 570: a GPU line with no UUID"}  # fmt: skip
RX570_DEVICES: list[tuple[str, str | None, str | None]] = [("AMD Ryzen 5 1600X Six-Core Processor", None, None),
                                                            ("Ellesmere [Radeon RX 470/480/570/570X/580/580X/590]", None, "1f:0.0")]  # fmt: skip

MI210_SOURCE = {"url": "https://github.com/ROCm/rocm_bandwidth_test/issues/129", "date": "2025-08-19",
                "what": ("rocm-bandwidth-test v2.6.0 on two EPYC 9554 with ten devices (two CPUs, eight MI210); the thread's"
                         " summary: ~28 GB/s one way, ~45 GB/s both, from either NUMA node; its matrices were not read here")}  # fmt: skip
MI210_DEVICES: list[tuple[str, str | None, str | None]] = [
    ("AMD EPYC 9554 64-Core Processor", None, None), ("AMD EPYC 9554 64-Core Processor", None, None),
    ("AMD Instinct MI210", "GPU-06c9d21390bc2e70", "05:0.0"), ("AMD Instinct MI210", "GPU-8b193c69a6fe8e9b", "08:0.0"),
    ("AMD Instinct MI210", "GPU-bdfdc381baca4d61", "45:0.0"), ("AMD Instinct MI210", "GPU-4a4febed074f17f1", "48:0.0"),
    ("AMD Instinct MI210", "GPU-ea00f32afadbf90a", "87:0.0"), ("AMD Instinct MI210", "GPU-dda0ddc66290f236", "8a:0.0"),
    ("AMD Instinct MI210", "GPU-e0a81ba81d2a0689", "c8:0.0"), ("AMD Instinct MI210", "GPU-42deef71a398b3a1", "cb:0.0")]  # fmt: skip

# The configuration behind Azure's published ND MI300X v5 TransferBench figures (samuel-bohman/AI-benchmarking-guide
# Benchmarks/AMD/transferbench.cfg, created 2025-01-28 at 3f9be10): a GPU kernel on 32 CUs copies each way.
AZURE_MI300X_CFG = "## Host -> GPU (using GPU kernel)\n1 32 (C0 G0 G0)\n## GPU -> Host (using GPU kernel)\n1 32 (G0 G0 C0)\n"


def matrix(rows: int, cells: dict[tuple[int, int], str]) -> list[list[str]]:
    """A square matrix of N/A with the given cells."""
    return [[cells.get((i, j), "N/A") for j in range(rows)] for i in range(rows)]


def source_note(source: dict[str, Any]) -> str:
    return f"{source['what']} ({source['url']}, {source['date']})"
