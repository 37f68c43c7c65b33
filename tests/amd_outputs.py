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

TransferBench's scaling preset (RunScalingBenchmark up to v1.52, Presets/Scaling.hpp after): a title, `- Copying N bytes from
GPU G to other devices`, a `NumCUs` header of `%c  CPU%02d     ` columns, a row per CU count (`%4d  ` then `%c%7.2f     `
per column) and a ` Best ` row of `%c%7.2f(%3d)` cells, the separator `,` with CSV and a blank without.

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


# --- real TransferBench outputs, quoted as published ------------------------------------------------

CLUSTER_P2P_SOURCE = {"url": "https://github.com/ROCm/gpu-cluster-networking/blob/26650997ac058a0711be441276ccdd28a4f71666/docs/how-to/single-node-config.rst",
                      "date": "2024-09-19",
                      "what": ("AMD's single-node network configuration guide (docs/how-to/single-node-config.rst, added in commit c62ff69):"
                               " `TransferBench p2p 4M`, TransferBench v1.50, on 2 CPUs and 8 GPUs; its shell block with the reStructuredText"
                               " indent of 9 spaces removed, the guide's own <SNIP> kept")}  # fmt: skip
CLUSTER_P2P = r"""$ ./TransferBench p2p 4M

TransferBench v1.50
===============================================================
[Common]                              
ALWAYS_VALIDATE      =            0 : Validating after all iterations
<SNIP>……
Bytes Per Direction 4194304
Unidirectional copy peak bandwidth GB/s [Local read / Remote write] (GPU-Executor: GFX)
   SRC+EXE\DST    CPU 00    CPU 01       GPU 00    GPU 01    GPU 02    GPU 03    GPU 04    GPU 05    GPU 06    GPU 07
   CPU 00  ->     24.37     25.62        17.32     16.97     17.33     17.47     16.77     17.12     16.91     16.96
   CPU 01  ->     18.83     19.62        14.84     15.47     15.16     15.13     16.11     16.13     16.01     15.91

   GPU 00  ->     23.83     23.40       108.95     64.58     31.56     28.39     28.44     26.99     47.46     39.97
   GPU 01  ->     24.05     23.93        66.52    109.18     29.07     32.53     27.80     31.73     40.79     36.42
   GPU 02  ->     23.83     23.47        31.48     28.58    109.45     65.11     47.40     40.11     28.45     27.46
   GPU 03  ->     24.35     23.93        28.65     32.00     65.68    108.68     39.85     36.08     27.08     31.49
   GPU 04  ->     23.30     23.84        28.57     26.93     47.36     39.77    110.94     64.66     31.14     28.15
   GPU 05  ->     23.39     24.08        27.19     31.26     39.85     35.49     64.98    110.10     28.57     31.43
   GPU 06  ->     23.43     24.03        47.58     39.22     28.97     26.93     31.48     28.41    109.78     64.98
   GPU 07  ->     23.45     23.94        39.70     35.50     27.08     31.25     28.14     32.19     65.00    110.47
                              CPU->CPU  CPU->GPU  GPU->CPU  GPU->GPU
   Averages (During UniDir):     22.23     16.35     23.77     37.74

Bidirectional copy peak bandwidth GB/s [Local read / Remote write] (GPU-Executor: GFX)
   SRC\DST    CPU 00    CPU 01       GPU 00    GPU 01    GPU 02    GPU 03    GPU 04    GPU 05    GPU 06    GPU 07
   CPU 00  ->       N/A     17.07        16.90     17.09     15.39     17.07     16.62     16.65     16.40     16.32
   CPU 00 <-        N/A     13.90        24.06     24.03     24.00     24.21     23.09     23.14     22.11     22.15
   CPU 00 <->       N/A     30.97        40.96     41.12     39.39     41.28     39.71     39.80     38.51     38.47

   CPU 01  ->     12.85       N/A        15.29     15.14     15.03     15.16     15.95     15.62     16.06     15.85
   CPU 01 <-      17.34       N/A        22.95     23.18     22.98     22.92     23.86     24.05     23.94     23.94
   CPU 01 <->     30.19       N/A        38.24     38.32     38.01     38.08     39.80     39.67     40.00     39.79


   GPU 00  ->     23.99     22.94          N/A     62.40     30.30     25.15     25.00     25.20     46.58     37.99
   GPU 00 <-      16.87     14.75          N/A     65.21     31.10     25.91     25.53     25.48     47.34     38.17
   GPU 00 <->     40.85     37.69          N/A    127.61     61.40     51.06     50.53     50.68     93.91     76.16

   GPU 01  ->     24.11     23.20        65.10       N/A     25.88     31.74     25.66     31.01     39.37     34.75
   GPU 01 <-      17.00     14.08        61.91       N/A     26.09     31.90     25.73     31.34     38.97     34.76
   GPU 01 <->     41.11     37.29       127.01       N/A     51.97     63.64     51.39     62.35     78.35     69.51

   GPU 02  ->     23.89     22.78        30.94     26.39       N/A     62.22     45.73     38.40     25.95     25.26
   GPU 02 <-      16.59     13.91        30.47     26.54       N/A     63.63     47.42     38.68     26.29     25.64
   GPU 02 <->     40.48     36.69        61.42     52.93       N/A    125.85     93.15     77.08     52.24     50.90

   GPU 03  ->     24.15     22.98        25.84     31.69     64.03       N/A     38.82     35.12     25.46     30.82
   GPU 03 <-      17.22     14.19        25.28     31.16     61.90       N/A     38.16     34.85     25.81     30.97
   GPU 03 <->     41.37     37.16        51.12     62.84    125.93       N/A     76.99     69.97     51.27     61.79

   GPU 04  ->     23.12     23.73        25.50     25.40     47.04     38.29       N/A     62.44     30.56     25.15
   GPU 04 <-      16.15     12.86        25.13     25.63     46.38     38.65       N/A     63.89     30.88     25.74
   GPU 04 <->     39.27     36.58        50.63     51.03     93.42     76.94       N/A    126.34     61.43     50.89

   GPU 05  ->     23.09     24.04        25.61     31.29     38.82     34.96     63.55       N/A     25.87     30.35
   GPU 05 <-      13.65     15.46        25.26     30.87     38.51     34.70     61.57       N/A     26.34     31.47
   GPU 05 <->     36.75     39.50        50.87     62.16     77.32     69.66    125.12       N/A     52.21     61.82

   GPU 06  ->     22.09     23.73        47.51     38.56     26.15     25.59     31.32     25.98       N/A     62.34
   GPU 06 <-      16.31     15.40        46.22     39.16     25.63     25.17     30.44     25.58       N/A     63.88
   GPU 06 <->     38.39     39.13        93.72     77.72     51.78     50.76     61.76     51.56       N/A    126.22

   GPU 07  ->     22.31     23.88        38.68     34.96     25.54     30.96     25.79     31.28     63.69       N/A
   GPU 07 <-      16.27     15.89        38.39     35.06     25.27     30.62     25.25     30.91     62.36       N/A
   GPU 07 <->     38.58     39.77        77.07     70.02     50.81     61.58     51.05     62.20    126.04       N/A
                              CPU->CPU  CPU->GPU  GPU->CPU  GPU->GPU
Averages (During  BiDir):     15.29     19.72     19.39     36.17
"""

PRESETS_SOURCE = {"url": "https://github.com/ROCm/TransferBench/blob/696e0445358a8578fac08e59b5760b06213a23a3/docs/reference/presets.rst",
                  "date": "2026-06",
                  "what": ("TransferBench's own preset reference (docs/reference/presets.rst, added by ROCm/TransferBench PR #325, opened"
                           " 2026-06-16 and reviewed 2026-06-25; read at commit 696e044, whose own date was not read): the example"
                           " outputs' shell blocks, with the reStructuredText indent of 6 spaces removed")}  # fmt: skip

# The p2p preset's example output, tab "AMD Instinct MI300X" (the MI300X and an earlier version of the file show the same block).
PRESETS_MI300X_P2P = r"""[P2P Related]
CPU_MEM_TYPE         =            0 : Using default CPU (0=default, 1=coherent, 2=non-coherent, 3=uncached, 4=unpinned)
GPU_MEM_TYPE         =            0 : Using default GPU (0=default, 1=fine-grained, 2=uncached, 3=managed)
NUM_CPU_DEVICES      =            2 : Using 2 CPUs
NUM_CPU_SE           =            4 : Using 4 CPU threads per Transfer
NUM_GPU_DEVICES      =            8 : Using 8 GPUs
NUM_GPU_SE           =          304 : Using 304 GPU subexecutors/CUs per Transfer
P2P_MODE             =            0 : Running Uni + Bi transfers
USE_GPU_DMA          =            0 : Using GPU-GFX as GPU executor
USE_REMOTE_READ      =            0 : Using SRC as executor
Bytes Per Direction 268435456
Unidirectional copy peak bandwidth GB/s [Local read / Remote write] (GPU-Executor: GFX)
SRC+EXE\DST    CPU 00    CPU 01       GPU 00    GPU 01    GPU 02    GPU 03    GPU 04    GPU 05    GPU 06    GPU 07
  CPU 00  ->     37.62     38.04        39.44     34.00     33.12     35.53     31.90     29.73     28.11     31.00
  CPU 01  ->     37.84     37.69        29.92     29.85     31.19     29.63     38.99     38.41     38.32     39.56
  GPU 00  ->     55.36     55.25      1618.87     48.83     48.89     49.00     48.05     47.94     48.27     47.85
  GPU 01  ->     55.36     54.14        48.89   1860.47     48.95     48.95     47.91     48.04     48.49     48.32
  GPU 02  ->     55.35     55.26        48.83     49.01   1868.43     49.07     48.70     48.34     48.85     48.97
  GPU 03  ->     55.34     55.26        49.01     49.02     49.07   1877.42     48.51     48.17     48.85     49.04
  GPU 04  ->     55.30     55.38        47.95     48.26     48.85     48.61   1849.65     48.99     48.85     48.84
  GPU 05  ->     55.29     55.35        47.95     48.02     48.51     48.03     49.01   1853.87     49.15     49.01
  GPU 06  ->     55.32     55.34        48.31     48.62     48.88     48.94     48.99     48.83   1829.05     49.17
  GPU 07  ->     55.30     55.34        48.23     48.27     48.59     48.90     48.60     49.09     49.14   1841.42
                          CPU->CPU  CPU->GPU  GPU->CPU  GPU->GPU
Averages (During UniDir):     37.94     33.67     55.25     48.65
Bidirectional copy peak bandwidth GB/s [Local read / Remote write] (GPU-Executor: GFX)
    SRC\DST    CPU 00    CPU 01       GPU 00    GPU 01    GPU 02    GPU 03    GPU 04    GPU 05    GPU 06    GPU 07
  CPU 00  ->       N/A     33.59        33.54     36.84     33.35     35.02     29.55     31.33     31.30     28.09
  CPU 00 <-        N/A     39.94        54.81     54.73     54.51     54.48     29.25     28.84     28.13     30.44
  CPU 00 <->       N/A     73.52        88.35     91.57     87.86     89.51     58.80     60.17     59.43     58.53
  CPU 01  ->     36.21       N/A        31.09     28.54     31.93     31.76     38.02     38.74     37.19     36.09
  CPU 01 <-      33.60       N/A        28.85     28.27     27.93     28.54     54.85     54.80     54.68     54.70
  CPU 01 <->     69.81       N/A        59.94     56.81     59.86     60.30     92.87     93.54     91.86     90.78
  GPU 00  ->     54.77     29.18          N/A     46.15     46.10     46.55     46.16     46.05     46.31     45.95
  GPU 00 <-      34.70     30.98          N/A     46.21     46.40     46.65     46.12     46.00     46.25     45.98
  GPU 00 <->     89.47     60.15          N/A     92.36     92.50     93.20     92.27     92.05     92.56     91.93
  GPU 01  ->     54.77     29.18        46.19       N/A     46.08     46.54     46.17     46.05     46.33     46.14
  GPU 01 <-      32.11     30.59        46.11       N/A     46.64     46.42     46.16     46.09     46.51     46.20
  GPU 01 <->     86.89     59.77        92.30       N/A     92.73     92.97     92.32     92.14     92.84     92.33
  GPU 02  ->     54.76     29.56        46.40     46.63       N/A     46.62     46.49     46.16     46.41     46.09
  GPU 02 <-      32.05     27.70        46.07     46.05       N/A     46.24     46.18     46.26     46.12     46.27
  GPU 02 <->     86.81     57.25        92.47     92.68       N/A     92.86     92.67     92.42     92.53     92.37
  GPU 03  ->     54.73     30.33        46.62     46.44     46.23       N/A     46.15     46.34     46.25     46.47
  GPU 03 <-      33.13     29.77        46.50     46.52     46.61       N/A     46.17     46.22     46.23     46.46
  GPU 03 <->     87.86     60.10        93.13     92.96     92.84       N/A     92.32     92.56     92.48     92.93
  GPU 04  ->     29.91     54.85        46.18     46.20     46.21     46.17       N/A     46.56     46.23     46.50
  GPU 04 <-      30.60     34.45        46.27     46.37     46.58     46.17       N/A     46.49     46.25     46.44
  GPU 04 <->     60.52     89.30        92.45     92.57     92.78     92.34       N/A     93.05     92.49     92.93
  GPU 05  ->     30.58     54.76        45.99     46.04     46.24     46.32     46.51       N/A     46.38     46.15
  GPU 05 <-      26.98     35.95        46.00     46.01     46.18     46.38     46.56       N/A     46.26     46.20
  GPU 05 <->     57.55     90.70        91.99     92.05     92.43     92.69     93.07       N/A     92.63     92.36
  GPU 06  ->     30.22     54.65        46.34     46.40     46.13     46.24     46.26     46.33       N/A     46.43
  GPU 06 <-      27.72     35.78        46.37     46.35     46.35     46.28     46.25     46.37       N/A     46.30
  GPU 06 <->     57.94     90.44        92.72     92.75     92.48     92.52     92.51     92.70       N/A     92.73
  GPU 07  ->     30.55     54.66        46.03     46.15     46.35     46.38     46.39     46.17     46.35       N/A
  GPU 07 <-      27.28     36.17        46.05     46.11     46.12     46.45     46.48     46.15     46.41       N/A
  GPU 07 <->     57.83     90.83        92.08     92.26     92.47     92.83     92.87     92.32     92.76       N/A
                          CPU->CPU  CPU->GPU  GPU->CPU  GPU->GPU
Averages (During  BiDir):     35.83     37.51     36.98     46.28
"""

# The scaling preset's example output, tab "AMD Instinct MI350X" (GPU 0's kernel copies on 1 to 32 CUs).
PRESETS_MI350X_SCALING = """[Scaling Related]
CPU_MEM_TYPE         =            0 : Using default CPU (0=default, 1=coherent, 2=non-coherent, 3=uncached, 4=unpinned)
GPU_MEM_TYPE         =            0 : Using default GPU (0=default, 1=fine-grained, 2=uncached, 3=managed)
LOCAL_IDX            =            0 : Local GPU index
NUM_CPU_DEVICES      =            2 : Using 2 CPUs
NUM_GPU_DEVICES      =            8 : Using 8 GPUs
SWEEP_MAX            =           32 : Max number of subExecutors to use
SWEEP_MIN            =            1 : Min number of subExecutors to use
GPU-GFX Scaling benchmark:
==========================
- Copying 268435456 bytes from GPU 0 to other devices
- All numbers reported as GB/sec
NumCUs   CPU00        CPU01        GPU00        GPU01        GPU02        GPU03        GPU04        GPU05        GPU06        GPU07
  1     26.51        26.30        15.81        26.48        26.57        26.44        25.68        26.39        26.58        26.04
  2     51.52        50.86        31.50        52.65        52.28        52.28        52.00        52.57        52.95        52.39
  3     42.83        43.01        46.13        53.32        57.39        55.81        49.08        57.41        49.65        48.31
  4     50.02        49.93        61.77        57.34        57.09        49.10        49.67        57.02        56.89        49.79
  5     53.58        53.58        77.07        55.85        57.78        57.22        50.69        57.72        54.80        50.27
  6     53.84        53.82        91.73        58.29        58.48        56.60        54.91        58.41        57.81        54.89
  7     53.56        53.63       106.60        57.98        57.24        57.18        55.86        56.97        57.79        55.87
  8     53.22        52.97       121.07        58.40        58.27        57.43        58.07        58.17        58.07        58.39
  9     54.22        54.22       135.97        58.37        57.88        57.54        58.10        57.72        58.21        58.26
  10     54.37        54.34       148.80        58.61        58.63        57.74        58.49        58.63        58.32        58.35
  11     54.62        54.58       163.28        57.83        58.55        58.26        58.17        58.53        57.94        58.38
  12     54.63        54.56       177.99        58.93        58.69        58.59        58.49        58.68        58.57        58.64
  13     54.66        54.69       191.79        58.55        58.51        58.59        58.24        58.50        58.42        58.33
  14     54.73        54.63       205.97        58.73        58.49        58.36        58.28        58.40        58.51        58.30
  15     54.73        54.64       221.70        58.65        58.55        58.41        58.44        58.61        58.56        58.43
  16     54.63        54.59       233.49        59.14        59.04        58.84        58.93        59.03        58.98        59.08
  17     54.75        54.76       247.85        58.78        58.56        58.43        58.55        58.61        58.62        58.48
  18     54.74        54.73       262.07        58.70        58.42        58.34        58.33        58.37        58.48        58.40
  19     54.77        54.73       274.98        58.57        58.42        58.38        58.37        58.55        58.40        58.33
  20     54.82        54.86       287.02        58.76        58.77        58.58        58.62        58.67        58.58        58.69
  21     54.79        54.76       301.35        58.62        58.48        58.38        58.40        58.45        58.47        58.38
  22     54.74        54.72       313.96        58.59        58.56        58.43        58.43        58.45        58.56        58.42
  23     54.79        54.78       328.28        58.55        58.53        58.41        58.38        58.48        58.41        58.34
  24     54.65        54.73       343.28        58.76        59.02        58.68        58.78        58.68        59.01        58.76
  25     54.72        54.78       354.62        58.57        58.50        58.38        58.42        58.39        58.50        58.41
  26     54.67        54.71       367.90        58.58        58.51        58.54        58.43        58.46        58.52        58.55
  27     54.74        54.73       377.03        58.52        58.41        58.26        58.31        58.45        58.39        58.36
  28     54.67        54.73       393.19        58.69        58.36        58.32        58.40        58.44        58.46        58.41
  29     54.72        54.71       402.84        58.50        58.31        58.26        58.33        58.36        58.48        58.35
  30     54.75        54.79       418.54        58.82        58.52        58.37        58.39        58.67        58.52        58.46
  31     54.79        54.75       429.11        58.65        58.33        58.33        58.55        58.35        58.41        58.41
  32     54.74        54.79       445.36        59.08        59.12        58.85        58.81        59.02        59.13        59.11
Best    54.82( 20)   54.86( 20)  445.36( 32)   59.14( 16)   59.12( 32)   58.85( 32)   58.93( 16)   59.03( 16)   59.13( 32)   59.11( 32)
"""

# TransferBench's own pull requests: the stored copies of these threads end inside their pastes, so only their whole lines are kept.
PR50_SOURCE = {"url": "https://github.com/ROCm/TransferBench/pull/50", "date": "2023-08-11",
               "what": ("ROCm/TransferBench PR #50, 'Adding SHOW_ITERATIONS to provide additional per-iteration timing info': its p2p"
                        " example with SHOW_ITERATIONS=1, as far as the stored copy goes (it ends inside the 'CPU 00  sd' row,"
                        " '3.3e-01   9.6e-02   3.4'); the paste has no 'Bytes Per Direction' line")}  # fmt: skip
PR50_P2P_LINES = r"""Unidirectional copy peak bandwidth GB/s [Local read / Remote write] (GPU-Executor: GFX)
 SRC+EXE\DST    CPU 00    CPU 01    GPU 00    GPU 01    GPU 02    GPU 03
  CPU 00  ->     15.54     19.80      9.88      8.77      9.65      6.87
  CPU 00 min     14.24     18.77      9.82      8.72      9.46      6.78
  CPU 00 max     17.95     20.63      9.95      8.83      9.77      6.92
"""
# The same thread's config-file example, whole: GPU 0's kernel on 4 CUs copying into GPU 1, its iterations fastest first.
PR50_CONFIG = """Test 1:
 Transfer 00      |  33.520 GB/s |    2.002 ms |     67108864 bytes | G0 -> GPU00:004 -> G1
      Iter 006    |  33.616 GB/s |    1.996 ms |
      Iter 010    |  33.573 GB/s |    1.999 ms |
      Iter 008    |  33.573 GB/s |    1.999 ms |
      Iter 009    |  33.549 GB/s |    2.000 ms |
      Iter 002    |  33.546 GB/s |    2.000 ms |
      Iter 003    |  33.544 GB/s |    2.001 ms |
      Iter 004    |  33.522 GB/s |    2.002 ms |
      Iter 007    |  33.517 GB/s |    2.002 ms |
      Iter 005    |  33.458 GB/s |    2.006 ms |
      Iter 001    |  33.307 GB/s |    2.015 ms |
      StandardDev |    4.887e-03 |
 Aggregate (CPU)  |  29.349 GB/s |    2.287 ms |     67108864 bytes | Overhead: 0.285 ms

"""

PR45_SOURCE = {"url": "https://github.com/ROCm/TransferBench/pull/45", "date": "2023-07-12",
               "what": ("ROCm/TransferBench PR #45, 'Adding preset scaling benchmark': its example output as far as the stored copy"
                        " goes (it ends inside the NumCUs 13 row, '13     13.10'), 4 GPUs and 2 CPUs, 64 MiB from GPU 0")}  # fmt: skip
PR45_SCALING_LINES = """GPU-GFX Scaling benchmark:
==========================
- Copying 67108864 bytes from GPU 0 to other devices
- All numbers reported as GB/sec

NumCUs   CPU00        CPU01        GPU00        GPU01        GPU02        GPU03
   1     14.11        14.02        20.30        20.25        20.17        20.38
   2     14.11        14.02        38.94        33.26        33.42        32.49
   3     14.08        14.01        56.06        33.43        33.63        32.65
   4     14.06        13.99        72.15        33.48        33.68        32.67
   5     14.04        13.94        87.87        33.53        33.61        32.70
   6     13.88        13.83       103.18        33.52        33.66        32.65
   7     13.70        13.64       117.85        33.49        33.69        32.62
   8     13.50        13.44       132.32        33.52        33.62        32.65
   9     13.41        13.38       144.45        33.46        33.60        32.57
  10     13.24        13.26       156.36        33.47        33.55        32.60
  11     13.17        13.21       165.78        33.44        33.54        32.55
  12     13.09        13.07       175.03        33.43        33.49        32.55
"""


IHC_SOURCE = {"url": "https://github.com/mhilgema-amd/proj/blob/f5e4dc311f47a4da7876e86bc58b6fbe0ce2726a/ihc_mi350x/README.md",
              "date": "2025-07-07",
              "what": ("an AMD engineer's MI350X bring-up notes (ihc_mi350x/README.md, dated 07/07/2025, committed 2025-07-10):"
                       " sections 5.1.1.2 (`TransferBench p2p`, 256 MiB, the author's '....' elision kept) and 5.1.1.3 (the"
                       " example config file under TransferBench v1.62.00), each code block whole")}  # fmt: skip
IHC_P2P = r"""TransferBench p2p
Bytes Per Direction 268435456
....
Unidirectional copy peak bandwidth GB/s [Local read / Remote write] (GPU-Executor: GFX)
 SRC+EXE\DST    CPU 00    CPU 01       GPU 00    GPU 01    GPU 02    GPU 03    GPU 04    GPU 05    GPU 06    GPU 07
  CPU 00  ->     92.21    102.51        45.11     45.16     45.13     45.07     45.06     45.11     44.64     45.05
  CPU 01  ->    104.88     90.09        44.74     44.81     44.76     44.77     44.78     44.83     44.83     44.77

  GPU 00  ->     55.47     55.54      2132.28     57.39     57.69     57.46     57.46     57.65     57.42     57.62
  GPU 01  ->     55.59     55.66        57.41   2152.51     57.58     57.52     57.65     57.37     57.65     57.50
  GPU 02  ->     55.60     55.61        57.41     57.50   2145.75     57.62     57.29     57.55     57.30     57.63
  GPU 03  ->     54.18     54.24        57.48     57.75     57.57   2150.49     57.61     57.48     57.38     57.36
  GPU 04  ->     55.52     55.53        57.38     57.66     57.37     57.72   2122.07     57.41     57.65     57.46
  GPU 05  ->     55.60     55.62        57.64     57.33     57.60     57.38     57.57   2150.67     57.51     57.43
  GPU 06  ->     54.41     54.57        57.41     57.68     57.43     57.31     57.67     57.62   2163.46     57.63
  GPU 07  ->     55.43     55.45        57.69     46.66     57.51     57.34     57.38     57.56     57.42   2154.14
                           CPU->CPU  CPU->GPU  GPU->CPU  GPU->GPU
Averages (During UniDir):    103.69     44.91     55.25     57.32

Bidirectional copy peak bandwidth GB/s [Local read / Remote write] (GPU-Executor: GFX)
     SRC\DST    CPU 00    CPU 01       GPU 00    GPU 01    GPU 02    GPU 03    GPU 04    GPU 05    GPU 06    GPU 07
  CPU 00  ->       N/A     88.77        44.81     44.81     44.76     44.78     44.77     44.76     44.81     44.74
  CPU 00 <-        N/A     89.79        55.10     55.03     54.94     53.93     55.14     55.05     53.77     55.14
  CPU 00 <->       N/A    178.56        99.90     99.84     99.70     98.71     99.90     99.81     98.58     99.87

  CPU 01  ->     88.50       N/A        44.36     44.33     44.39     44.28     44.38     44.39     44.43     44.42
  CPU 01 <-      88.29       N/A        55.10     55.04     54.96     53.91     55.15     55.06     53.75     55.13
  CPU 01 <->    176.79       N/A        99.45     99.37     99.35     98.19     99.53     99.45     98.18     99.55


  GPU 00  ->     55.02     54.96          N/A     54.69     54.91     54.71     54.52     55.02     54.74     54.88
  GPU 00 <-      44.71     44.45          N/A     54.61     54.72     54.58     54.52     54.96     54.53     54.82
  GPU 00 <->     99.73     99.41          N/A    109.30    109.63    109.29    109.04    109.99    109.26    109.70

  GPU 01  ->     55.08     55.11        54.68       N/A     54.60     54.93     54.83     54.64     54.87     54.66
  GPU 01 <-      44.74     44.41        54.63       N/A     54.63     54.86     54.80     54.63     54.82     54.57
  GPU 01 <->     99.82     99.52       109.30       N/A    109.23    109.80    109.63    109.27    109.68    109.23

  GPU 02  ->     55.12     55.14        54.60     54.57       N/A     54.88     54.68     54.88     54.67     54.93
  GPU 02 <-      44.74     44.31        54.90     54.59       N/A     54.99     54.56     54.73     54.60     54.87
  GPU 02 <->     99.86     99.45       109.50    109.16       N/A    109.86    109.24    109.62    109.27    109.80

  GPU 03  ->     53.83     53.83        54.54     54.89     54.91       N/A     54.93     54.69     38.96     54.55
  GPU 03 <-      44.74     44.29        54.77     54.91     54.92       N/A     54.80     54.70     40.37     54.48
  GPU 03 <->     98.57     98.12       109.31    109.80    109.83       N/A    109.73    109.40     79.33    109.03

  GPU 04  ->     54.95     55.08        54.55     54.82     54.61     54.68       N/A     54.71     54.97     54.68
  GPU 04 <-      44.75     44.45        54.57     54.88     54.79     54.85       N/A     54.90     54.84     54.57
  GPU 04 <->     99.70     99.52       109.11    109.70    109.40    109.52       N/A    109.61    109.81    109.26

  GPU 05  ->     55.12     55.13        54.97     54.52     54.66     54.58     54.83       N/A     54.68     54.79
  GPU 05 <-      44.76     44.37        54.94     54.61     54.91     54.63     54.60       N/A     54.47     54.81
  GPU 05 <->     99.88     99.50       109.91    109.14    109.57    109.21    109.43       N/A    109.14    109.60

  GPU 06  ->     53.92     53.94        54.60     54.75     54.58     54.39     54.83     54.68       N/A     54.88
  GPU 06 <-      44.69     44.37        54.64     54.89     54.65     54.64     54.98     54.66       N/A     54.67
  GPU 06 <->     98.61     98.30       109.24    109.65    109.23    109.03    109.80    109.34       N/A    109.55

  GPU 07  ->     54.96     54.96        54.93     54.79     54.96     54.55     54.53     54.88     54.66       N/A
  GPU 07 <-      44.74     44.46        54.88     37.99     54.90     54.62     54.69     54.65     54.84       N/A
  GPU 07 <->     99.70     99.42       109.81     92.79    109.86    109.17    109.22    109.53    109.50       N/A
                           CPU->CPU  CPU->GPU  GPU->CPU  GPU->GPU
Averages (During  BiDir):     88.84     49.67     49.66     54.32
"""
IHC_CONFIG = """HSA_OVERRIDE_GFX_VERSION=9.4.2 TransferBench /opt/transferbench/examples/example.cfg 
TransferBench v1.62.00
…
## Single GPU-executed Transfer between GPUs 0 and 1 using 4 CUs
Test 1:
 Executor: GPU 00 |   56.299 GB/s |    4.768 ms |    268435456 bytes | 56.309  GB/s (sum)
     Transfer 00  |   56.309 GB/s |    4.767 ms |    268435456 bytes | G0 -> G000:004 -> G1
 Aggregate (CPU)  |   55.015 GB/s |    4.879 ms |    268435456 bytes | Overhead: 0.111 ms
## Single DMA executed Transfer between GPUs 0 and 1
Test 2:
 Executor: DMA 00 |   59.334 GB/s |    4.524 ms |    268435456 bytes | 60.973  GB/s (sum)
     Transfer 00  |   60.973 GB/s |    4.403 ms |    268435456 bytes | G0 -> D000:001 -> G1
 Aggregate (CPU)  |   58.541 GB/s |    4.585 ms |    268435456 bytes | Overhead: 0.061 ms
## Copy 1Mb from GPU0 to GPU1 with 4 CUs, and 2Mb from GPU1 to GPU0 with 8 CUs
Test 3:
 Executor: GPU 00 |   36.885 GB/s |    0.028 ms |      1048576 bytes | 37.857  GB/s (sum)
     Transfer 00  |   37.857 GB/s |    0.028 ms |      1048576 bytes | G0 -> G000:004 -> G1
 Executor: GPU 01 |   45.471 GB/s |    0.046 ms |      2097152 bytes | 46.304  GB/s (sum)
     Transfer 01  |   46.304 GB/s |    0.045 ms |      2097152 bytes | G1 -> G001:008 -> G0
 Aggregate (CPU)  |   18.741 GB/s |    0.168 ms |      3145728 bytes | Overhead: 0.122 ms
## "Memset" by GPU 0 to GPU 0 memory
Test 4:
 Executor: GPU 00 | 1487.329 GB/s |    0.180 ms |    268435456 bytes | 1493.789 GB/s (sum)
     Transfer 00  | 1493.789 GB/s |    0.180 ms |    268435456 bytes | N -> G000:032 -> G0
 Aggregate (CPU)  |  698.995 GB/s |    0.384 ms |    268435456 bytes | Overhead: 0.204 ms
## "Read-only" by CPU 0
Test 5:
 Executor: CPU 00 |   37.356 GB/s |    7.186 ms |    268435456 bytes | 37.756  GB/s (sum)
     Transfer 00  |   37.756 GB/s |    7.110 ms |    268435456 bytes | C0 -> C000:004 -> N
 Aggregate (CPU)  |   36.803 GB/s |    7.294 ms |    268435456 bytes | Overhead: 0.108 ms
## Broadcast from GPU 0 to GPU 0 and GPU 1
Test 6:
 Executor: GPU 00 |   58.313 GB/s |    4.603 ms |    268435456 bytes | 58.327  GB/s (sum)
     Transfer 00  |   58.327 GB/s |    4.602 ms |    268435456 bytes | G0 -> G000:016 -> G0G1
 Aggregate (CPU)  |   56.768 GB/s |    4.729 ms |    268435456 bytes | Overhead: 0.125 ms
"""
