"""AMD's peer tools imported like NVIDIA's: TransferBench's config-file rows in each version's shape and
its p2p preset, and rocm_bandwidth_test's matrices, from outputs built as the tools print them
(amd_outputs.py) and from the real outputs of public threads. Every figure is checked by hand."""

from __future__ import annotations

import pytest

import amd_outputs as amd
from test_peers import one_line_error, write
from xferbench.core.results import Result, load
from xferbench.core.spec import D2H, H2D
from xferbench.reading.peers import PEER_CEILINGS, PEERS, read_rocm_bandwidth_test, read_transferbench

MIB = 2**20


def figures(result: Result) -> dict[tuple[str, str, str, int], float]:
    """Every recorded figure in GB/s by (mode, device, direction, bytes)."""
    return {(s.mode, s.device, s.direction, p.bytes): round(p.mbps / 1e3, 6) for s in result.series for p in s.points if p.status == "ok"}


def notes(result: Result) -> list[str]:
    return result.environment["peer"]["not_imported"]


def refused(call, match: str) -> str:
    """A TransferBench refusal: one line, one reason with its own remedy and no other, at most one row quoted (a copy's
    `SRC -> EXE -> DST`), and short past its file's name."""
    said = one_line_error(call, match)
    reason = said.split(": ", 1)[1]
    assert len(reason) < 200 and reason.count(" -> ") <= 2 and reason.count("; ") == 1, said
    return said


# rocm_bandwidth_test ------------------------------------------------------------------------------


def test_the_7900_xtx_paste_reads_its_four_host_figures_and_nothing_else(tmp_path) -> None:
    """legacy-rocm-build#2253: one CPU (device 0), two GPUs (devices 1 and 2, GPUs 0 and 1)."""
    text = amd.rbt(amd.XTX_DEVICES, amd.XTX_UNI, amd.XTX_BI)
    result = read_rocm_bandwidth_test([write(tmp_path, text)])
    assert figures(result) == {("peak_cpu0", "cuda:0", H2D, 64 * MIB): 28.411, ("peak_cpu0", "cuda:1", H2D, 64 * MIB): 28.410,
                               ("peak_cpu0", "cuda:0", D2H, 64 * MIB): 29.013, ("peak_cpu0", "cuda:1", D2H, 64 * MIB): 29.016}  # fmt: skip
    assert {s.device_name for s in result.series} == {"Radeon RX 7900 XTX"}
    devices = {d["id"]: d for d in result.environment["devices"]}
    assert (devices["cuda:0"]["pci_bus_id"], devices["cuda:1"]["pci_bus_id"]) == ("83:0.0", "03:0.0")
    assert any("bidirectional peak matrix" in n for n in notes(result))  # 48.226 is both ways at once
    assert 48.226 not in figures(result).values() and 649.528 not in figures(result).values()
    assert any("between GPUs" in n for n in notes(result))  # 649.528: GPU 0's copy within its own memory
    peer = result.environment["peer"]
    assert peer["tool"] == "rocm_bandwidth_test" and peer["version"] == "2.6.0" and peer["sizes_bytes"] == [64 * MIB]
    series = next(s for s in result.series if s.direction == H2D)
    assert series.host_buffer == "pinned" and series.method == "per-call" and "fastest of 5 copies" in series.note
    assert "AMD EPYC 7542" in series.note and series.params["statistic"] == "min time"


def test_two_cpus_are_two_nodes_and_a_gpu_is_counted_among_the_gpus(tmp_path) -> None:
    """rocm_bandwidth_test#129's device list (two EPYC 9554, eight MI210 as devices 2 to 9); the
    figures here are made up for the test, the thread's matrix was not read."""
    cells = {(0, 2): "28.001", (1, 2): "27.902", (9, 0): "26.503", (9, 1): "26.404", (2, 3): "51.000"}
    text = amd.rbt(amd.MI210_DEVICES, amd.matrix(10, cells))
    result = read_rocm_bandwidth_test([write(tmp_path, text)])
    assert figures(result) == {("peak_cpu0", "cuda:0", H2D, 64 * MIB): 28.001, ("peak_cpu1", "cuda:0", H2D, 64 * MIB): 27.902,
                               ("peak_cpu0", "cuda:7", D2H, 64 * MIB): 26.503, ("peak_cpu1", "cuda:7", D2H, 64 * MIB): 26.404}  # fmt: skip
    devices = {d["id"]: d for d in result.environment["devices"]}
    assert devices["cuda:7"]["pci_bus_id"] == "cb:0.0" and devices["cuda:0"]["name"] == "AMD Instinct MI210"
    # N/A: the tool had no path between them; not measured, and said so in the series
    skipped = [p for s in result.series if s.device == "cuda:3" for p in s.points if p.status == "skipped"]
    assert skipped and all("N/A" in p.error for p in skipped)


def test_a_gpu_listed_without_its_uuid_is_a_gpu_by_its_pci_address(tmp_path) -> None:
    """legacy-rocm-build#1309's device list (2.3.11 prints no UUID); the figures are made up for the test."""
    text = amd.rbt(amd.RX570_DEVICES, [["N/A", "12.050"], ["12.811", "161.002"]], version="2.3.11",
                   command="rocm-bandwidth-test (rocm_bandwidth -a + rocm_bandwidth -A)")  # fmt: skip
    result = read_rocm_bandwidth_test([write(tmp_path, text)])
    assert figures(result) == {("peak_cpu0", "cuda:0", H2D, 64 * MIB): 12.05, ("peak_cpu0", "cuda:0", D2H, 64 * MIB): 12.811}
    assert {s.device_name for s in result.series} == {"Ellesmere [Radeon RX 470/480/570/570X/580/580X/590]"}
    assert result.environment["peer"]["version"] == "2.3.11"


def test_the_copy_size_comes_from_the_launch_command(tmp_path) -> None:
    text = amd.rbt(amd.XTX_DEVICES, amd.XTX_UNI, command="./rocm-bandwidth-test -a -m 256,512")
    result = read_rocm_bandwidth_test([write(tmp_path, text)])
    assert {key[3] for key in figures(result)} == {256 * MIB}
    assert result.environment["peer"]["commands"] == ["./rocm-bandwidth-test -a -m 256,512"]


def test_a_paste_cut_inside_the_matrix_keeps_no_partial_row(tmp_path) -> None:
    """rocm_smi_lib#110's devices and its first figure, 14.250, with the paste ending right after it."""
    text = amd.rbt(amd.PRO_VII_DEVICES, amd.matrix(3, {(0, 1): "14.250", (0, 2): "14.261", (1, 0): "13.975"}))
    cut = text[: text.index("14.250") + len("14.250")]
    one_line_error(lambda: read_rocm_bandwidth_test([write(tmp_path, cut)]), r"ends inside a matrix row.*14\.250.*cut short")
    cut_later = text[: text.index("14.261") + 3]  # "14." of 14.261
    one_line_error(lambda: read_rocm_bandwidth_test([write(tmp_path, cut_later, "later.txt")]), "ends inside a matrix row.*14.250 *14\\.")


def test_a_matrix_without_its_device_list_or_a_pool_pair_run_is_not_guessed(tmp_path) -> None:
    bare = amd.rbt_matrix("Unidirectional copy peak bandwidth GB/s", amd.XTX_UNI)
    one_line_error(lambda: read_rocm_bandwidth_test([write(tmp_path, bare)]), "without the device list.*give the whole output")
    pair = (f"{amd.PAD}RocmBandwidthTest Version: 2.6.0\n\n"
            "================    Unidirectional Benchmark Result    ================\n"
            "================ Src Device Id: 0 Src Device Type: Cpu ================\n"
            "================ Dst Device Id: 3 Dst Device Type: Gpu ================\n\n"
            "Data Size      Avg Time(us)   Avg BW(GB/s)   Min Time(us)   Peak BW(GB/s)  \n"
            "64 MB          2400.000       27.962         2390.000       28.079         \n")  # fmt: skip
    one_line_error(lambda: read_rocm_bandwidth_test([write(tmp_path, pair, "pair.txt")]), "pool's number.*rocm-bandwidth-test -a")
    one_line_error(lambda: read_rocm_bandwidth_test([write(tmp_path, "hello\n", "other.txt")]), "not rocm_bandwidth_test's output")


def test_rocm_bandwidth_test_2x_output_is_transferbench_s_and_named_as_run(tmp_path) -> None:
    """2.x runs TransferBench's presets (`rocm_bandwidth_test run tb p2p`) and prints their tables."""
    text = amd.tb_p2p(1, 1, {("CPU", 0, "GPU", 0): 25.31, ("GPU", 0, "CPU", 0): 26.02})
    result = read_rocm_bandwidth_test([write(tmp_path, text)])
    assert figures(result) == {("cpu_c0", "cuda:0", H2D, 64 * MIB): 25.31, ("gfx_c0", "cuda:0", D2H, 64 * MIB): 26.02}
    assert {s.framework for s in result.series} == {"rocm_bandwidth_test"}
    legacy = write(tmp_path, amd.rbt(amd.XTX_DEVICES, amd.XTX_UNI), "legacy.txt")
    one_line_error(lambda: read_rocm_bandwidth_test([write(tmp_path, text), legacy]), "one at a time")
    named = "$ rocm_bandwidth_test run tb p2p\n" + amd.tb_env("1.66", False) + text  # 2.x's command: its own, version line and all
    assert figures(read_rocm_bandwidth_test([write(tmp_path, named, "named.txt")])) == figures(result)


def test_rocm_bandwidth_test_refuses_transferbench_s_own_run_in_one_line(tmp_path) -> None:
    """A paste that shows TransferBench itself (its command or version line) and never names rocm_bandwidth_test is
    TransferBench's: refused with the import that reads it, not named as rocm_bandwidth_test's."""
    for name, text, shown in (("cluster.txt", amd.CLUSTER_P2P, "('TransferBench v1.50')"),
                              ("ihc.txt", amd.IHC_CONFIG, "('TransferBench v1.62.00')"),
                              ("command.txt", "$ ./TransferBench p2p 64M\n" + amd.tb_p2p(1, 1, {("CPU", 0, "GPU", 0): 25.31}),
                               "('$ ./TransferBench p2p 64M')")):  # fmt: skip
        said = one_line_error(lambda: read_rocm_bandwidth_test([write(tmp_path, text, name)]),
                              "TransferBench's own output .*, not rocm_bandwidth_test's: import it with `xferbench import transferbench`$")
        assert shown in said, said
        assert len(said.removeprefix(str(tmp_path / name))) < 160, said  # short past the file name


def test_amd_imports_record_their_gpus_as_amd_on_rocm(tmp_path) -> None:
    """Both tools run on ROCm only (rocm_bandwidth_test on HSA; TransferBench on HIP, its nvcc build named TransferBenchCuda):
    each GPU measured gets a device entry saying AMD and ROCm, so a report does not call them unknown; a capture's own
    runtime (with its version) is kept."""
    from xferbench.core import vendors
    from xferbench.core.environment import device_entry

    def described(result: Result) -> dict[str, tuple[str | None, str | None]]:
        env = result.environment
        return {d: (lambda f: (f[vendors.VENDOR], f[vendors.RUNTIME]))(vendors.describe(device_entry(env, d), env))
                for d in sorted({s.device for s in result.series})}

    tb = write(tmp_path, amd.tb_new_test([(64 * MIB, "C0", "D", 0, 1, "G0", 26.0)], 1) + amd.tb_new_test([(64 * MIB, "C0", "D", 1, 1, "G1", 25.0)], 2))
    assert described(read_transferbench([tb])) == {"cuda:0": ("AMD", "ROCm"), "cuda:1": ("AMD", "ROCm")}
    assert described(read_rocm_bandwidth_test([write(tmp_path, amd.rbt(amd.XTX_DEVICES, amd.XTX_UNI), "rbt.txt")])) == {
        "cuda:0": ("AMD", "ROCm"), "cuda:1": ("AMD", "ROCm")}
    p2p = write(tmp_path, "$ rocm_bandwidth_test run tb p2p\n" + amd.tb_p2p(1, 1, {("CPU", 0, "GPU", 0): 25.31}), "rbt2.txt")
    assert described(read_rocm_bandwidth_test([p2p])) == {"cuda:0": ("AMD", "ROCm")}
    captured = {"devices": [{"id": "cuda:0", "kind": "cuda", "name": "AMD Instinct MI300X", "runtime": "ROCm 6.4.1"}]}
    assert described(read_transferbench([tb], environment=captured))["cuda:0"] == ("AMD", "ROCm 6.4.1")
    nvcc = write(tmp_path, "$ ./TransferBenchCuda example.cfg\n" + amd.tb_new_test([(64 * MIB, "C0", "D", 0, 1, "G0", 26.0)], 1), "cuda.txt")
    assert described(read_transferbench([nvcc])) == {"cuda:0": ("NVIDIA", "CUDA")}


# TransferBench ------------------------------------------------------------------------------------


def test_the_old_csv_names_a_dma_executor_b_and_each_executor_is_its_own_series(tmp_path) -> None:
    """Up to v1.50 the executor is printed with MemTypeStr, so DMA reads B00.*; a kernel's CUs are its subexecutors."""
    text = amd.tb_old(amd.tb_old_row(1, 0, 64 * MIB, "C0", "B00.*", "G0", 1, 26.512), amd.tb_old_all(1, 64 * MIB, "B00", 1, 26.512),
                      amd.tb_old_row(2, 0, 64 * MIB, "G0", "B00.*", "C0", 1, 27.033),
                      amd.tb_old_row(3, 0, 64 * MIB, "C0", "G00", "G0", 32, 24.118),
                      amd.tb_old_row(4, 0, 64 * MIB, "B1", "C01", "G0", 4, 9.870))  # fmt: skip
    result = read_transferbench([write(tmp_path, text)])
    assert figures(result) == {("dma_c0", "cuda:0", H2D, 64 * MIB): 26.512, ("dma_c0", "cuda:0", D2H, 64 * MIB): 27.033,
                               ("gfx_c0_32cu", "cuda:0", H2D, 64 * MIB): 24.118, ("cpu_b1_4t", "cuda:0", H2D, 64 * MIB): 9.87}  # fmt: skip
    dma = next(s for s in result.series if s.mode == "dma_c0" and s.direction == H2D)
    assert "SDMA copy engine" in dma.note and "TransferBench v1.50" in dma.note and dma.params["samples"] == 10
    assert next(s for s in result.series if s.mode == "cpu_b1_4t").note.count("4 threads") == 1
    assert ("TransferBench", "dma_c0") in PEER_CEILINGS


def test_transfers_that_ran_together_are_not_figures_of_one_copy(tmp_path) -> None:
    text = amd.tb_old(amd.tb_old_row(1, 0, 64 * MIB, "C0", "B00.*", "G0", 1, 20.0), amd.tb_old_row(1, 1, 64 * MIB, "C0", "B01.*", "G1", 1, 19.5),
                      amd.tb_old_row(2, 0, 64 * MIB, "C0", "B00.*", "G0", 1, 26.5))  # fmt: skip
    result = read_transferbench([write(tmp_path, text)])
    assert figures(result) == {("dma_c0", "cuda:0", H2D, 64 * MIB): 26.5}
    assert sum("ran at once with 1 other Transfer" in n for n in notes(result)) == 2
    for csv in (True, False):  # v1.54 on: a test's Transfers lie between its first row and its Aggregate row
        together = amd.tb_new_test([(64 * MIB, "C0", "D", 0, 1, "G0", 20.0), (64 * MIB, "C1", "D", 1, 1, "G1", 19.5)], 1, csv)
        alone = amd.tb_new_test([(64 * MIB, "C0", "D", 1, 1, "G1", 26.5)], 2, csv)
        result = read_transferbench([write(tmp_path, together + alone, f"new-{csv}.txt")])
        assert figures(result) == {("dma_c0", "cuda:1", H2D, 64 * MIB): 26.5}


def test_v1_52_rows_read_with_either_separator(tmp_path) -> None:
    for csv in (True, False):
        text = amd.tb_env("1.52", csv) + amd.tb_152_test([(256 * MIB, "C0", "DMA", 1, 1, "G1", 26.781)], csv) \
            + amd.tb_152_test([(256 * MIB, "G1", "GPU", 1, 16, "C0", 25.004)], csv)  # fmt: skip
        result = read_transferbench([write(tmp_path, text, f"tb-{csv}.txt")])
        assert figures(result) == {("dma_c0", "cuda:1", H2D, 256 * MIB): 26.781, ("gfx_c0_16cu", "cuda:1", D2H, 256 * MIB): 25.004}


def test_the_library_s_table_reads_with_csv_or_borders_and_its_own_memory_letters(tmp_path) -> None:
    """v1.54 on: D as memory is non-coherent pinned host memory, D as executor the DMA engine."""
    for csv in (True, False):
        text = (amd.tb_env("1.66", csv, client="1.66") + amd.tb_new_test([(2**30, "D0", "D", 0, 1, "G0", 14.351)], 1, csv)
                + amd.tb_new_test([(2**30, "G0", "G", 0, 4, "H0", 12.004)], 2, csv))  # fmt: skip
        result = read_transferbench([write(tmp_path, text, f"new-{csv}.txt")])
        assert figures(result) == {("dma_d0", "cuda:0", H2D, 2**30): 14.351, ("gfx_h0_4cu", "cuda:0", D2H, 2**30): 12.004}
        pageable = next(s for s in result.series if s.direction == D2H)
        assert pageable.host_buffer == "numpy" and "unpinned" in pageable.note
        assert next(s for s in result.series if s.direction == H2D).host_buffer == "pinned"
        assert result.environment["peer"]["version"] == "1.66 (client 1.66)" and "TransferBench v1.66 (client 1.66)" in pageable.note


def test_azure_s_mi300x_configuration_reads_as_gpu_kernel_copies_each_way(tmp_path) -> None:
    """Benchmarks/AMD/transferbench.cfg: 1 32 (C0 G0 G0) and 1 32 (G0 G0 C0); the figures here are made up."""
    assert "1 32 (C0 G0 G0)" in amd.AZURE_MI300X_CFG and "1 32 (G0 G0 C0)" in amd.AZURE_MI300X_CFG
    text = amd.tb_new_test([(256 * MIB, "C0", "G", 0, 32, "G0", 54.987)], 1) + amd.tb_new_test([(256 * MIB, "G0", "G", 0, 32, "C0", 56.012)], 2)
    result = read_transferbench([write(tmp_path, text)])
    assert figures(result) == {("gfx_c0_32cu", "cuda:0", H2D, 256 * MIB): 54.987, ("gfx_c0_32cu", "cuda:0", D2H, 256 * MIB): 56.012}
    assert all("copy kernel" in s.note and "32 CUs" in s.note for s in result.series)


def test_p2p_executors_follow_the_header_and_title(tmp_path) -> None:
    cells = {("CPU", 0, "GPU", 0): 25.31, ("CPU", 1, "GPU", 1): 24.88, ("GPU", 0, "CPU", 0): 26.02, ("GPU", 1, "CPU", 1): 25.97,
             ("GPU", 0, "GPU", 1): 48.5}
    env = amd.tb_env("1.52", True, (("NUM_CPU_SE", 4, "Using 4 CPU subexecutors"), ("NUM_GPU_SE", 8, "Using 8 GPU subexecutors")))
    local = read_transferbench([write(tmp_path, amd.tb_p2p(2, 2, cells, env=env), "local.txt")])
    assert figures(local) == {("cpu_c0_4t", "cuda:0", H2D, 64 * MIB): 25.31, ("cpu_c1_4t", "cuda:1", H2D, 64 * MIB): 24.88,
                              ("gfx_c0_8cu", "cuda:0", D2H, 64 * MIB): 26.02, ("gfx_c1_8cu", "cuda:1", D2H, 64 * MIB): 25.97}  # fmt: skip
    remote = read_transferbench([write(tmp_path, amd.tb_p2p(2, 2, cells, remote_read=True, dma=True, csv=False), "remote.txt")])
    assert figures(remote) == {("dma_c0", "cuda:0", H2D, 64 * MIB): 25.31, ("dma_c1", "cuda:1", H2D, 64 * MIB): 24.88,
                               ("cpu_c0", "cuda:0", D2H, 64 * MIB): 26.02, ("cpu_c1", "cuda:1", D2H, 64 * MIB): 25.97}  # fmt: skip
    assert all("0.01 GB/s" in s.note for s in remote.series) and sum("between GPUs" in n for n in notes(remote)) == 1
    # N/A: not run; its point says so, in the series the copy would have been
    skipped = [(s.mode, s.device, s.direction, p.error) for s in remote.series for p in s.points if p.status == "skipped"]
    assert ("dma_c1", "cuda:0", H2D, "N/A in TransferBench's p2p matrix: not run (a NUMA node without CPUs)") in skipped


def test_copies_transferbench_does_not_make_between_host_and_one_gpu_are_named(tmp_path) -> None:
    text = (amd.tb_new_test([(64 * MIB, "C0", "D", 1, 1, "G0", 20.0)], 1) + amd.tb_new_test([(64 * MIB, "G0", "D", 0, 1, "G1", 50.0)], 2)
            + amd.tb_new_test([(64 * MIB, "C0", "D", 0, 1, "U0", 11.0)], 3) + amd.tb_new_test([(64 * MIB, "C0", "D", 0, 1, "G0", 26.0)], 4))  # fmt: skip
    result = read_transferbench([write(tmp_path, text)])
    assert figures(result) == {("dma_c0", "cuda:0", H2D, 64 * MIB): 26.0}
    said = " | ".join(notes(result))
    assert "a peer GPU's copy" in said and "between GPU memories" in said and "'U0' is not one host buffer" in said


def test_transferbench_refuses_what_holds_no_figure_in_one_line(tmp_path) -> None:
    one_line_error(lambda: read_transferbench([write(tmp_path, "hello\n")]), "not TransferBench's output.*OUTPUT_TO_CSV=1")
    health = ("Testing unidirectional host to device copy ........PASS\nTesting unidirectional device to host copy ........FAIL (1 test(s))\n"
              " GPU 03: Measured:  41.20 GB/s      Criteria:  48.50 GB/s\n")  # Presets/HealthCheck.hpp, without VERBOSE
    refused(lambda: read_transferbench([write(tmp_path, health, "health.txt")]),
            r"health.txt: no TransferBench host<->device figure: the healthcheck preset's lines name no copy; run single"
            r" copies, e.g. a config file '1 1 \(C0 D0 G0\)', with OUTPUT_TO_CSV=1$")  # fmt: skip
    only_gpus = amd.tb_new_test([(64 * MIB, "G0", "D", 0, 1, "G1", 50.0)], 1)
    refused(lambda: read_transferbench([write(tmp_path, only_gpus, "gpus.txt")]),
            r"gpus.txt: no TransferBench host<->device figure: 'G0 -> D0:1 -> G1' copies between GPU memories; run"
            r" single copies")  # fmt: skip
    unsized = only_gpus + amd.PR50_P2P_LINES  # a copy between GPUs, then a matrix without its size line
    said = refused(lambda: read_transferbench([write(tmp_path, unsized, "unsized.txt")]),
                   r"unsized.txt: no TransferBench host<->device figure: the p2p matrix without its 'Bytes Per"
                   r" Direction' line; give the output from that line on$")  # fmt: skip
    assert "OUTPUT_TO_CSV" not in said and "GPU memories" not in said  # the reason with its own remedy, and only that one
    together = amd.tb_new_test([(64 * MIB, "C0", "D", 0, 1, "G0", 26.0), (64 * MIB, "C0", "D", 1, 1, "G1", 25.0)], 1)
    said = refused(lambda: read_transferbench([write(tmp_path, together, "together.txt")]),
                   r"'C0 -> D0:1 -> G0' ran at once with 1 other Transfer; run single copies")
    assert "G1" not in said  # one rejected row quoted, not each


def test_every_peer_is_registered_once_with_an_import_command(tmp_path) -> None:
    from typer.testing import CliRunner

    from xferbench.cli import app

    assert sorted(p.command for p in PEERS.values()) == ["bandwidthtest", "nvbandwidth", "rocm-bandwidth-test", "transferbench"]
    assert {c.name for c in __import__("xferbench.cli").cli.import_app.registered_commands} == {p.command for p in PEERS.values()}
    tb = write(tmp_path, amd.tb_new_test([(64 * MIB, "C0", "D", 0, 1, "G0", 26.0)], 1), "tb.txt")
    said = CliRunner().invoke(app, ["import", "transferbench", str(tb), "--host", "mi-node", "-o", str(tmp_path / "tb.json")])
    assert said.exit_code == 0 and "1 series, 1 points from TransferBench" in said.output, said.output
    saved = load(tmp_path / "tb.json")
    assert saved.environment["host"] == "mi-node" and saved.series[0].ok_points()[0].mbps == pytest.approx(26_000)
    rbt = write(tmp_path, amd.rbt(amd.XTX_DEVICES, amd.XTX_UNI), "rbt.txt")
    said = CliRunner().invoke(app, ["import", "rocm-bandwidth-test", str(rbt), "-o", str(tmp_path / "rbt.json")])
    assert said.exit_code == 0 and "4 series, 4 points from rocm_bandwidth_test" in said.output, said.output
    for args, message in ((["transferbench", str(rbt)], "not TransferBench's output"),
                          (["rocm-bandwidth-test", str(tmp_path / "missing.txt")], "no such file")):  # fmt: skip
        said = CliRunner().invoke(app, ["import", *args])
        assert said.exit_code == 2 and message in said.output and "Traceback" not in said.output, said.output
        assert len(said.output.strip().splitlines()) == 1, said.output


def test_an_import_without_out_is_named_after_its_host_never_this_machine(tmp_path, monkeypatch) -> None:
    """No -o: runs/HOST-transferbench-TIME.json, HOST --host where given, else "unknown-host" (TransferBench's output names
    no machine, and the file holds none), never the machine the paste was read on."""
    from typer.testing import CliRunner

    from xferbench.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XFERBENCH_HOST", "reading-laptop")
    tb = write(tmp_path, amd.tb_new_test([(64 * MIB, "C0", "D", 0, 1, "G0", 26.0)], 1), "tb.txt")
    for args, host in (([], "unknown-host"), (["--host", "mi-node"], "mi-node")):
        said = CliRunner().invoke(app, ["import", "transferbench", str(tb), *args])
        assert said.exit_code == 0, said.output
        (saved,) = (tmp_path / "runs").glob("*-transferbench-*.json")
        assert saved.name.startswith(f"{host}-transferbench-"), saved.name
        assert load(saved).environment.get("host") == (host if args else None)
        saved.unlink()


def test_a_transferbench_paste_cut_inside_its_last_row_keeps_nothing_of_that_row(tmp_path) -> None:
    """Cut inside GPU 11's name ("G1") or a p2p matrix's last cell ("25.3" of "25.31"), the row still parses: it is left out and named."""
    whole = amd.tb_new_test([(64 * MIB, "C0", "D", 0, 1, "G0", 26.5)], 1) + amd.tb_new_test([(64 * MIB, "C0", "D", 11, 1, "G11", 25.0)], 2)
    cut = whole[: whole.index("-> G11") + len("-> G1")]
    result = read_transferbench([write(tmp_path, cut)])
    assert figures(result) == {("dma_c0", "cuda:0", H2D, 64 * MIB): 26.5}
    assert any("ends inside this row" in n and "G1" in n for n in notes(result))
    p2p = amd.tb_p2p(1, 2, {("CPU", 0, "GPU", 0): 26.02, ("CPU", 0, "GPU", 1): 25.31})
    row = next(line for line in p2p.split("\n") if line.strip().startswith("CPU 00"))
    cut = p2p[: p2p.index(row) + row.index("25.31") + 4]
    refused(lambda: read_transferbench([write(tmp_path, cut, "p2p.txt")]), r"ends inside its last row, 'CPU 00 ->.*25.3'; give the whole output$")


def test_a_p2p_figure_with_a_decimal_comma_is_named_as_the_cell_it_is(tmp_path) -> None:
    """'26,02' for 26.02 (a paste through a spreadsheet): in the table without commas it is one cell, not a figure, left out
    alone; in the CSV form it splits its cell in two, so the row is left out, named by that cell, not as a row cut short."""
    p2p = amd.tb_p2p(1, 2, {("CPU", 0, "GPU", 0): 26.02, ("CPU", 0, "GPU", 1): 25.31}, csv=False).replace("26.02", "26,02")
    result = read_transferbench([write(tmp_path, p2p)])
    assert figures(result) == {("cpu_c0", "cuda:1", H2D, 64 * MIB): 25.31}
    assert any("'26,02' is not a figure" in n for n in notes(result)) and not any("cut short" in n for n in notes(result))
    comma = amd.tb_p2p(1, 2, {("CPU", 0, "GPU", 0): 26.02, ("CPU", 0, "GPU", 1): 25.31, ("GPU", 1, "CPU", 0): 24.5})
    result = read_transferbench([write(tmp_path, comma.replace("26.02", "26,02"), "csv.txt")])
    assert figures(result) == {("gfx_c0", "cuda:1", D2H, 64 * MIB): 24.5}
    (said,) = [n for n in notes(result) if "26,02" in n]
    assert "'26,02' in a p2p row is not a figure" in said and "cut short" not in said and len(said) < 300


def test_the_environment_lines_say_how_many_iterations_a_figure_is_the_mean_of(tmp_path) -> None:
    row = amd.tb_old_row(1, 0, 64 * MIB, "C0", "B00.*", "G0", 1, 26.5)
    timed = amd.tb_env("1.50", True, (("NUM_ITERATIONS", 50, "Running 50 timed iteration(s)"), ("NUM_WARMUPS", 5, "Running 5 warmups")))
    (series,) = read_transferbench([write(tmp_path, timed + amd.OLD_HEADER_LINE + row + "\n")]).series
    assert series.points[0].n == 50 and "mean of 50 timed iterations after 5 warm-ups" in series.note and "defaults" not in series.note
    seconds = amd.tb_env("1.50", True, (("NUM_ITERATIONS", -3, "Running 3 seconds(s) per Test"),))
    (series,) = read_transferbench([write(tmp_path, seconds + amd.OLD_HEADER_LINE + row + "\n", "s.txt")]).series
    assert series.points[0].n == 1 and "mean of 3 s of iterations" in series.note


# TransferBench's real outputs, as published (amd_outputs.py quotes each with its source and date) ---------


def _row(figures_by_gpu: list[float], mode: str, direction: str, nbytes: int) -> dict[tuple[str, str, str, int], float]:
    return {(mode, f"cuda:{gpu}", direction, nbytes): gbps for gpu, gbps in enumerate(figures_by_gpu)}


def test_the_cluster_guide_s_p2p_run_reads_every_host_cell(tmp_path) -> None:
    """gpu-cluster-networking's single-node guide, TransferBench v1.50, `p2p 4M`: CPU rows (CPU threads copy host to
    device) and GPU rows' CPU columns (the GPU's kernel copies device to host); the bidirectional matrix is named."""
    result = read_transferbench([write(tmp_path, amd.CLUSTER_P2P)])
    size = 4 * MIB
    expected = {**_row([17.32, 16.97, 17.33, 17.47, 16.77, 17.12, 16.91, 16.96], "cpu_c0", H2D, size),
                **_row([14.84, 15.47, 15.16, 15.13, 16.11, 16.13, 16.01, 15.91], "cpu_c1", H2D, size),
                **_row([23.83, 24.05, 23.83, 24.35, 23.30, 23.39, 23.43, 23.45], "gfx_c0", D2H, size),
                **_row([23.40, 23.93, 23.47, 23.93, 23.84, 24.08, 24.03, 23.94], "gfx_c1", D2H, size)}  # fmt: skip
    assert figures(result) == expected
    assert result.environment["peer"]["version"] == "1.50" and result.environment["peer"]["sizes_bytes"] == [size]
    said = " | ".join(notes(result))
    assert "between GPUs (and between NUMA nodes)" in said and "bidirectional matrix" in said
    assert all("TransferBench v1.50" in s.note and "0.01 GB/s in the p2p preset's matrix" in s.note for s in result.series)
    assert {s.note.split(", copied by ")[1].split(" between ")[0] for s in result.series} == {"CPU threads", "a copy kernel on the GPU's CUs of GPU 0",
            *(f"a copy kernel on the GPU's CUs of GPU {g}" for g in range(1, 8))}  # fmt: skip


def test_transferbench_s_own_mi300x_p2p_example_reads_with_its_threads_and_cus(tmp_path) -> None:
    """presets.rst's MI300X p2p block: NUM_CPU_SE=4 and NUM_GPU_SE=304 name the series; 256 MiB per direction."""
    result = read_transferbench([write(tmp_path, amd.PRESETS_MI300X_P2P)])
    size = 256 * MIB
    expected = {**_row([39.44, 34.00, 33.12, 35.53, 31.90, 29.73, 28.11, 31.00], "cpu_c0_4t", H2D, size),
                **_row([29.92, 29.85, 31.19, 29.63, 38.99, 38.41, 38.32, 39.56], "cpu_c1_4t", H2D, size),
                **_row([55.36, 55.36, 55.35, 55.34, 55.30, 55.29, 55.32, 55.30], "gfx_c0_304cu", D2H, size),
                **_row([55.25, 54.14, 55.26, 55.26, 55.38, 55.35, 55.34, 55.34], "gfx_c1_304cu", D2H, size)}  # fmt: skip
    assert figures(result) == expected
    assert 1618.87 not in figures(result).values() and 54.81 not in figures(result).values()  # GPU 0 itself; a bidirectional cell
    assert next(s for s in result.series if s.mode == "gfx_c0_304cu").note.count("304 CUs") == 1


def test_show_iterations_min_max_and_sd_rows_are_not_figures(tmp_path) -> None:
    """PR #50's p2p example (SHOW_ITERATIONS=1): the `->` row is the mean and the only figure; `min`, `max` (and
    `sd`) rows follow it. The thread's paste has no size line, so alone it is refused with what to add."""
    one_line_error(lambda: read_transferbench([write(tmp_path, amd.PR50_P2P_LINES)]), "without its 'Bytes Per Direction' line.*give")
    # A size given here only so the rows parse (the thread's paste has none); the cells checked are the thread's.
    sized = "Bytes Per Direction 67108864\n" + amd.PR50_P2P_LINES
    result = read_transferbench([write(tmp_path, sized, "sized.txt")])
    assert figures(result) == _row([9.88, 8.77, 9.65, 6.87], "cpu_c0", H2D, 64 * MIB)
    assert not {9.82, 9.95, 8.72, 8.83}.intersection(figures(result).values())
    # The sd row (%10.1e here): its first two cells are the thread's, the rest (cut off in the stored copy) stand in for its shape.
    sd = sized + "  CPU 00  sd   3.3e-01   9.6e-02   1.0e-02   1.0e-02   1.0e-02   1.0e-02\n"
    with_sd = read_transferbench([write(tmp_path, sd, "sd.txt")])
    assert figures(with_sd) == figures(result)
    assert [n.split(": ", 1)[1] for n in notes(with_sd)] == [n.split(": ", 1)[1] for n in notes(result)]  # nothing of the sd row named


def test_show_iterations_config_rows_and_a_gpu_to_gpu_copy_are_named_not_imported(tmp_path) -> None:
    """PR #50's config-file example: G0 -> GPU00:004 -> G1 copies between GPU memories, its Iter rows are not Transfers."""
    refused(lambda: read_transferbench([write(tmp_path, amd.PR50_CONFIG)]), r"no TransferBench host<->device figure: 'G0 -> GPU00:004 -> G1' copies between GPU memories")


def test_the_scaling_preset_reads_each_cu_count_s_host_columns_as_device_to_host(tmp_path) -> None:
    """presets.rst's MI350X scaling block: GPU 0's kernel copies 256 MiB into each NUMA node's pinned memory on
    1 to 32 CUs, one copy at a time; each CU count is its own series. The Best row repeats the columns' highest."""
    result = read_transferbench([write(tmp_path, amd.PRESETS_MI350X_SCALING)])
    by_cus = {1: (26.51, 26.30), 2: (51.52, 50.86), 3: (42.83, 43.01), 4: (50.02, 49.93), 5: (53.58, 53.58), 6: (53.84, 53.82),
              7: (53.56, 53.63), 8: (53.22, 52.97), 9: (54.22, 54.22), 10: (54.37, 54.34), 11: (54.62, 54.58), 12: (54.63, 54.56),
              13: (54.66, 54.69), 14: (54.73, 54.63), 15: (54.73, 54.64), 16: (54.63, 54.59), 17: (54.75, 54.76), 18: (54.74, 54.73),
              19: (54.77, 54.73), 20: (54.82, 54.86), 21: (54.79, 54.76), 22: (54.74, 54.72), 23: (54.79, 54.78), 24: (54.65, 54.73),
              25: (54.72, 54.78), 26: (54.67, 54.71), 27: (54.74, 54.73), 28: (54.67, 54.73), 29: (54.72, 54.71), 30: (54.75, 54.79),
              31: (54.79, 54.75), 32: (54.74, 54.79)}  # fmt: skip
    expected = {(f"gfx_c{node}_{cus}cu", "cuda:0", D2H, 256 * MIB): pair[node] for cus, pair in by_cus.items() for node in (0, 1)}
    assert figures(result) == expected
    for node, (best, at) in ((0, (54.82, 20)), (1, (54.86, 20))):  # the Best row agrees with the rows read
        column = {key: value for key, value in expected.items() if key[0].startswith(f"gfx_c{node}_")}
        assert max(column.values()) == best and column[(f"gfx_c{node}_{at}cu", "cuda:0", D2H, 256 * MIB)] == best
    said = " | ".join(notes(result))
    assert "Best row" in said and "GPU columns: copies between GPU memories" in said
    one = next(s for s in result.series if s.mode == "gfx_c1_7cu")
    assert "(7 CUs) of GPU 0 between pinned host memory (hipHostMalloc) on NUMA node 1" in one.note and "scaling preset" in one.note
    assert one.host_buffer == "pinned" and one.params["subexecutors"] == 7
    # The table ends at its Best row: a row after it (here the schmoo preset's first MI300X row, presets.rst) is not the table's.
    after = read_transferbench([write(tmp_path, amd.PRESETS_MI350X_SCALING + "\n     1     51.037       53.012       53.762       23.204"
                                                "       46.208       25.919\n", "after.txt")])  # fmt: skip
    assert figures(after) == expected and not any("cells under" in n for n in notes(after))
    # rocm_bandwidth_test 2.x runs the same preset (`rocm_bandwidth_test run tb scaling`) and prints its table
    via_rbt = read_rocm_bandwidth_test([write(tmp_path, amd.PRESETS_MI350X_SCALING, "rbt.txt")])
    assert figures(via_rbt) == expected and {s.framework for s in via_rbt.series} == {"rocm_bandwidth_test"}


def test_pr45_s_scaling_example_reads_its_whole_rows(tmp_path) -> None:
    """PR #45's first scaling example (64 MiB from GPU 0, 4 GPUs), rows 1 to 12 (the stored copy ends inside row 13)."""
    result = read_transferbench([write(tmp_path, amd.PR45_SCALING_LINES)])
    by_cus = {1: (14.11, 14.02), 2: (14.11, 14.02), 3: (14.08, 14.01), 4: (14.06, 13.99), 5: (14.04, 13.94), 6: (13.88, 13.83),
              7: (13.70, 13.64), 8: (13.50, 13.44), 9: (13.41, 13.38), 10: (13.24, 13.26), 11: (13.17, 13.21), 12: (13.09, 13.07)}  # fmt: skip
    assert figures(result) == {(f"gfx_c{node}_{cus}cu", "cuda:0", D2H, 64 * MIB): pair[node] for cus, pair in by_cus.items() for node in (0, 1)}
    # With OUTPUT_TO_CSV=1 the same printf puts ',' where the blank was: "%4d  " then ",%7.2f     " per column.
    head = amd.PR45_SCALING_LINES[: amd.PR45_SCALING_LINES.index("NumCUs")]
    cells = [("CPU00", "CPU01", "GPU00", "GPU01", "GPU02", "GPU03")] + [tuple(line.split()[1:]) for line in amd.PR45_SCALING_LINES.split("\n")[6:8]]
    csv = head + "NumCUs" + "".join(f",  {c}     " for c in cells[0]) + "\n" \
        + "".join(f"{n:4d}  " + "".join(f",{float(c):7.2f}     " for c in row) + "\n" for n, row in ((1, cells[1]), (2, cells[2])))  # fmt: skip
    assert figures(read_transferbench([write(tmp_path, csv, "csv.txt")])) == {
        (f"gfx_c{node}_{cus}cu", "cuda:0", D2H, 64 * MIB): by_cus[cus][node] for cus in (1, 2) for node in (0, 1)}
    cut = amd.PR45_SCALING_LINES[: amd.PR45_SCALING_LINES.index("  12     13.09") + len("  12     13.0")]
    cut_result = read_transferbench([write(tmp_path, cut, "cut.txt")])
    assert ("gfx_c0_12cu", "cuda:0", D2H, 64 * MIB) not in figures(cut_result) and any("ends inside this row" in n for n in notes(cut_result))
    missing = amd.PR45_SCALING_LINES.replace("- Copying 67108864 bytes from GPU 0 to other devices\n", "")
    one_line_error(lambda: read_transferbench([write(tmp_path, missing, "nosize.txt")]), "scaling table without its '- Copying")


def test_an_mi350x_bring_up_s_p2p_run_and_its_config_file_run_read_as_two_runs(tmp_path) -> None:
    """mhilgema-amd/proj's MI350X notes: the p2p block (256 MiB, no version line) reads every host cell; the example
    config file's run (v1.62.00) copies only between GPUs, into null memory or two GPUs at once: each is named."""
    result = read_transferbench([write(tmp_path, amd.IHC_P2P)])
    size = 256 * MIB
    expected = {**_row([45.11, 45.16, 45.13, 45.07, 45.06, 45.11, 44.64, 45.05], "cpu_c0", H2D, size),
                **_row([44.74, 44.81, 44.76, 44.77, 44.78, 44.83, 44.83, 44.77], "cpu_c1", H2D, size),
                **_row([55.47, 55.59, 55.60, 54.18, 55.52, 55.60, 54.41, 55.43], "gfx_c0", D2H, size),
                **_row([55.54, 55.66, 55.61, 54.24, 55.53, 55.62, 54.57, 55.45], "gfx_c1", D2H, size)}  # fmt: skip
    assert figures(result) == expected and result.environment["peer"]["version"] is None
    refused(lambda: read_transferbench([write(tmp_path, amd.IHC_CONFIG, "cfg.txt")]),
            r"no TransferBench host<->device figure: 'G0 -> G000:004 -> G1' copies between GPU memories; run single copies")  # fmt: skip
    both = read_transferbench([write(tmp_path, amd.IHC_CONFIG + amd.CLUSTER_P2P, "both.txt")])
    assert len(figures(both)) == 32 and figures(both)[("cpu_c0", "cuda:0", H2D, 4 * MIB)] == 17.32
    said = " | ".join(notes(both))
    assert "run 1" in said and "'N' is not one host buffer" in said and "'G0G1' is not one host buffer" in said
    assert "'N' is not" in said.split("C0 -> C000:004 -> N")[1]  # the CPU's read-only Transfer names its null destination
    assert {s.params["tool"] for s in both.series} == {"TransferBench 1.50"}


def test_a_preset_s_gpu_memory_type_names_its_series_or_leaves_it_out(tmp_path) -> None:
    """The presets print GPU_MEM_TYPE (0 in presets.rst's blocks): 1 is fine-grained memory (its own series); 2 and 3,
    uncached and managed memory, are named and not read. The blocks are the published ones with that one line changed."""
    default = "GPU_MEM_TYPE         =            0 :"
    assert default in amd.PRESETS_MI300X_P2P and default in amd.PRESETS_MI350X_SCALING
    fine = read_transferbench([write(tmp_path, amd.PRESETS_MI300X_P2P.replace(default, "GPU_MEM_TYPE         =            1 :"))])
    assert {s.mode for s in fine.series} == {"cpu_c0_f_4t", "cpu_c1_f_4t", "gfx_c0_f_304cu", "gfx_c1_f_304cu"}
    assert figures(fine)[("gfx_c0_f_304cu", "cuda:0", D2H, 256 * MIB)] == 55.36
    assert "GPU 0's fine-grained memory" in next(s for s in fine.series if s.mode == "gfx_c0_f_304cu").note
    for text, preset in ((amd.PRESETS_MI300X_P2P, "p2p"), (amd.PRESETS_MI350X_SCALING, "scaling")):
        uncached = text.replace(default, "GPU_MEM_TYPE         =            2 :")
        refused(lambda: read_transferbench([write(tmp_path, uncached, f"{preset}.txt")]),
                f"the {preset} preset ran with GPU_MEM_TYPE=2 \\(uncached GPU memory\\), not read; run it with GPU_MEM_TYPE=0 or 1$")  # fmt: skip
    scaled = read_transferbench([write(tmp_path, amd.PRESETS_MI350X_SCALING.replace(default, "GPU_MEM_TYPE         =            1 :"), "f.txt")])
    assert {s.mode for s in scaled.series} == {f"gfx_c{n}_f_{c}cu" for n in (0, 1) for c in range(1, 33)}
