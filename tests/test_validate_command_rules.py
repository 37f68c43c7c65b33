"""`xferbench validate`'s rules one by one, on the H200 runs' own files: the verdict page line by line
(headline, machine facts, published figures, the table against the peers, notes, the folder's files),
the peer check and its causes, each side's placement, the plan (sweeps, sizes, peer commands, trims),
the peers' argument lists and kept output (with a stand-in for the process), and what is refused."""

from __future__ import annotations

import copy
import json
import os
import time
from pathlib import Path
from typing import Any

import peer_outputs as out
import pytest

import xferbench
from xferbench.core import references
from xferbench.core.errors import XferbenchError
from xferbench.core.results import Result, load
from xferbench.core.verdict import FAIL, NA, PASS, Verdict
from xferbench.health import budget, validation_checks, validate_command

RUNS = Path(__file__).resolve().parent.parent / "results" / "nvidia-h200" / "2026-11-26"
RUN5, RUN3 = RUNS / "run-5" / "validation", RUNS / "run-3" / "validation"
MIB = 2**20
PEER_NAME = "streamed raw pinned copy within 3% of nvbandwidth's copy engine from 16 MiB (median)"
PEERS = {"nvbandwidth": "/opt/peers/nvbandwidth", "bandwidthTest": "/opt/peers/bandwidthTest"}
NUMACTL = "under numactl --cpunodebind=0 --membind=0"
OURS_AT = "bound to CPUs 0-15, memory preferred on NUMA node 0"
FLOOR = ("48 GB/s, Azure HPC health checks (nvbandwidth v0.4 host_to_device_memcpy_ce and device_to_host_memcpy_ce, -i 10,"
         " clocks locked), Azure/azurehpc-health-checks conf/nd96isr_h200_v5.conf (also nd96is, nd96isrf) @0e0a1ac, 2024-10-28")  # fmt: skip


_LOADED: dict[str, Result] = {}


@pytest.fixture
def run5() -> dict[str, Result]:
    """The passing H200 run's files, read once (tests copy what they change)."""
    if not _LOADED:
        _LOADED.update({stem: load(RUN5 / f"{stem}.json") for stem in ("default", "large", "link", "peer-nvbandwidth", "peer-bandwidthtest")})
    return _LOADED


def sweeps5(run5: dict[str, Result]) -> dict[str, Result | None]:
    return {stem: copy.deepcopy(run5[stem]) for stem in ("default", "large", "link")}


def peers5(run5: dict[str, Result]) -> dict[str, Result | None]:
    return {"nvbandwidth": copy.deepcopy(run5["peer-nvbandwidth"]), "bandwidthTest": copy.deepcopy(run5["peer-bandwidthtest"])}


def checks_of(files: dict[str, Result | None], imported: dict[str, Result | None], device: str = "cuda:0") -> list[Verdict]:
    """The checks as `validate` makes them from its files."""
    return validate_command.checks_for(files, imported, device)


def folder_holding(tmp_path: Path, names: list[str]) -> Path:
    folder = tmp_path / "validation"
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("")
    return folder


def as_written(page: Path) -> str:
    """A real verdict.md with this checkout's version and today's date where the run wrote its own."""
    return page.read_text().replace("0.1.0+source", xferbench.__version__).replace("2026-11-26", time.strftime("%Y-%m-%d"))


def set_points(result: Result, mode: str, method: str | None, mbps: dict[int, float]) -> None:
    """A cuda series' MB/s at each size (bytes) set to `mbps`, the rest of its points dropped."""
    for series in result.series:
        if (series.framework, series.mode, series.op) == ("cuda", mode, "copy") and method in (None, series.method):
            series.points = [p for p in series.points if p.bytes in mbps]
            for point in series.points:
                point.mbps = mbps[point.bytes]


RUN5_FILES = ["default.json", "default.png", "large.json", "large.png", "link.json", "link.png", "nvidia-smi-q.txt",
              "nvidia-smi-topo.txt", "peer-bandwidthtest.json", "peer-nvbandwidth.json", "peers/bandwidthTest.txt",
              "peers/commands.txt", "peers/nvbandwidth.json", "report.md"]  # fmt: skip
RUN5_TRIMMED = ["nvbandwidth took 1 sample per size (-i 1), not its default 3",
                "the peers measured 3 of 18 sizes (96 MiB (101 MB), 256 MiB (268 MB), 1024 MiB (1.07 GB))",
                "the large sweep left out batches 1, 4, 16, 64, 128, 512 of 1 MiB images (kept 256, 1024)"]  # fmt: skip


def run5_validation(folder: Path, **kwargs: Any) -> validate_command.Validation:
    settings: dict[str, Any] = dict(peers=dict(PEERS), max_minutes=6, large_batches=(256, 1024), peer_sizes="few",
                                    nvbandwidth_samples=1, trimmed=list(RUN5_TRIMMED), took_s=246.0)  # fmt: skip
    settings.update(kwargs)
    return validate_command.Validation(folder, **settings)


# the verdict page


def changed(text: str, *edits: tuple[str, str]) -> str:
    """`text` with each (old, new) made, each old found exactly once: the page as this xferbench writes it,
    set out as what differs from the one the run wrote."""
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def published_for(model: str) -> str:
    """What the page says of the model's published figures, from the references this xferbench holds."""
    said = references.published_line(model, None)
    return said[:1].upper() + said[1:]


H200_PUBLISHED = "No published host-to-device figure for this model (NVIDIA H200)"  # as the H200 runs' pages said it
EVERY_FILE = " in default.json, large.json, link.json"


def test_the_h200_runs_page_is_written_line_for_line(run5, tmp_path) -> None:
    """The whole page of a passing run: headline, budget line, facts, checks, published figures, peer table, folder.
    Against the page the run wrote: every figure now names its file; the peer check says which file gave which size;
    the table leaves out the sizes no peer measured and says where its figures came from."""
    files, imported = sweeps5(run5), peers5(run5)
    run = run5_validation(folder_holding(tmp_path, RUN5_FILES))
    checks = checks_of(files, imported)
    page = validate_command.verdict_page(run, files, imported, checks, [])
    bytes_row = next(c for c in checks if c.name.startswith("NVML's count"))
    assert bytes_row.figure.startswith("cuda/raw_pinned/copy/streamed@cuda:0 (link.json): claimed 559 GB, NVML ")
    expected = changed(
        as_written(RUN5 / "verdict.md"),
        ("estimated 5.7 min", f"estimated {budget.minutes(run.estimate_s())}"),
        ("cuda/raw_pinned/copy/streamed@cuda:0: 55,508 MB/s", "cuda/raw_pinned/copy/streamed@cuda:0 (large.json): 55,508 MB/s"),
        ("under load in 29 series |", f"under load in 29 series{EVERY_FILE} |"),
        ("| 29 series bound to node 0", f"| 29 series{EVERY_FILE} bound to node 0"),
        ("(1,024 MiB, per-call) |", "(1,024 MiB, per-call) (large.json) |"),
        ("55,310 per call MB/s, over 2 sizes", "55,310 per call MB/s (large.json), over 2 sizes"),
        ("31 series, 205 points, every byte", f"31 series, 205 points{EVERY_FILE}, every byte"),
        ("batch 256, over 6 points", "batch 256 (large.json), over 6 points"),
        ("xferbench 55,473, nvbandwidth 55,446 MB/s);", "xferbench 55,473 (large.json), nvbandwidth 55,446 MB/s); xferbench's figures"
                                                      " from default.json at 96 MiB, large.json at 256 MiB and 1024 MiB;"),
        ("(1.07 GB): 55.5 GB/s. " + H200_PUBLISHED, "(1.07 GB): 55.5 GB/s (large.json). " + published_for("NVIDIA H200")),
        ("| 1.000 | 1.001 | 0.974 |\n", "| 1.000 | 1.001 | 0.974 |\n\nxferbench's figures in this table are from default.json, large.json.\n"))
    expected = "\n".join(line if not line.startswith("| NVML's count") else f"| {bytes_row.name} | **PASS** | {bytes_row.figure} |"
                         for line in expected.split("\n"))  # the count NVML's samples give, as the telemetry reads them today
    # The run's page also set out, as rows of dashes, the sizes only xferbench measured (197 KB to 48 MiB): no more.
    lines = expected.splitlines()
    table = lines.index(TABLE_HEAD)
    lacking = [line for line in lines[table + 2:] if line.startswith("| ") and line.split(" | ")[3:5] == ["–", "–"]
               and line.split(" | ")[6] == "–"]  # no nvbandwidth, bandwidthTest pinned or pageable figure  # fmt: skip
    assert len(lacking) == 9 and lacking[0].startswith("| 197 KB |") and lacking[-1].startswith("| 48 MiB ")
    assert page.splitlines() == [line for line in lines if line not in lacking]
    assert page.endswith("their NUMA affinity\n")


RUN3_NAMES = ["link.json", "link.png", "peer-nvbandwidth.json", "peer-bandwidthtest.json", "peers/nvbandwidth.json",
              "peers/bandwidthTest.txt", "peers/commands.txt", "report.md", "nvidia-smi-q.txt", "nvidia-smi-topo.txt"]  # fmt: skip


def test_a_run_that_saved_only_its_link_run_is_written_line_for_line(tmp_path) -> None:
    """A quick run whose two sweeps were not written: FAIL before could-not-run, the notes listed, only the files present
    named. Against the page the run wrote: link.json's streamed 256 MiB, which no sweep measured, now stands for
    xferbench beside nvbandwidth and as the ceiling, so the peer check runs (and passes) and the table has its row."""
    files: dict[str, Result | None] = {"default": None, "large": None, "link": load(RUN3 / "link.json")}
    imported: dict[str, Result | None] = {"nvbandwidth": load(RUN3 / "peer-nvbandwidth.json"),
                                          "bandwidthTest": load(RUN3 / "peer-bandwidthtest.json")}  # fmt: skip
    run = validate_command.Validation(folder_holding(tmp_path, RUN3_NAMES), quick=True, peers=dict(PEERS), max_minutes=1.5, took_s=24.0,
                                trimmed=["nvbandwidth took 1 sample per size (-i 1), not its default 3",
                                         "the peers measured 2 of 6 sizes (48 MiB (50.3 MB), 256 MiB (268 MB))",
                                         "the large sweep left out batches 1, 16 of 1 MiB images (kept 256)"],
                                large_batches=(256,), peer_sizes="few", nvbandwidth_samples=1)  # fmt: skip
    notes = ["default.json was not started: the run's --max-minutes budget was spent",
             "large.json was stopped after 4 s, keeping what it had measured, so that the rest of the run fits its --max-minutes budget"]
    checks = checks_of(files, imported)
    page = validate_command.verdict_page(run, files, imported, checks, notes)
    bytes_row = next(c for c in checks if c.name.startswith("NVML's count"))
    expected = changed(
        as_written(RUN3 / "verdict.md"),
        ("estimated 2.8 min", f"estimated {budget.minutes(run.estimate_s())}"),
        ("; streamed raw pinned copy within 3% of nvbandwidth's copy engine from 16 MiB (median). Made by", ". Made by"),
        ("cuda/raw_pinned/copy/streamed@cuda:0: 55,407 MB/s", "cuda/raw_pinned/copy/streamed@cuda:0 (link.json): 55,407 MB/s"),
        ("under load in 1 series |", "under load in 1 series in link.json |"),
        ("| 1 series bound to node 0", "| 1 series in link.json bound to node 0"),
        ("both per call and streamed at 256 MiB or more |", "per call at 256 MiB or more with a streamed figure at the same size in it"
                                                           " or another file |"),
        ("1 series, 1 points, every byte", "1 series, 1 point in link.json, every byte"),
        ("has a device clock |", "has a device clock in link.json |"),
        ("| **N/A** | xferbench's streamed raw pinned copy measured nothing on cuda:0 |",
         "| **PASS** | median +0.0% over 1 size (worst +0.0% at 256 MiB (268 MB): xferbench 55,407 (link.json), nvbandwidth 55,420 MB/s);"
         " placement: xferbench bound to CPUs 0-15, memory preferred on NUMA node 0; nvbandwidth under numactl --cpunodebind=0 --membind=0 |"),
        ("- Here: no raw pinned copy was measured. " + H200_PUBLISHED,
         "- Here: the raw pinned copy, streamed, at 256 MiB (268 MB): 55.4 GB/s (link.json). " + published_for("NVIDIA H200")),
        ("2024-10-28.\n", "2024-10-28. Above it.\n"),
        ("No size was measured by both xferbench and a peer on this GPU.\n",
         "| size | xferbench raw pinned, streamed | nvbandwidth copy engine | bandwidthTest pinned | bandwidthTest pageable |"
         " streamed / nvbandwidth | streamed / bandwidthTest pinned | pageable / bandwidthTest pageable |\n"
         "|---:|---:|---:|---:|---:|---:|---:|---:|\n"
         "| 256 MiB (268 MB) | 55,407 | 55,420 | 55,400 | 8,247 | 1.000 | 1.000 | – |\n\n"
         "xferbench's figures in this table are from link.json's long run at 256 MiB (268 MB), where no sweep measured it.\n"))
    expected = "\n".join(line if not line.startswith("| NVML's count") else f"| {bytes_row.name} | **PASS** | {bytes_row.figure} |"
                         for line in expected.split("\n"))  # fmt: skip
    assert page.splitlines() == expected.splitlines()


def test_checks_that_could_not_run_make_the_verdict_incomplete(run5, tmp_path) -> None:
    """No FAIL and an n/a: INCOMPLETE, naming each check that could not run; all PASS: every check passed."""
    files = sweeps5(run5)
    run = validate_command.Validation(folder_holding(tmp_path, []))
    checks = [Verdict("a", PASS, "1"), Verdict("b", NA, "2"), Verdict("c", NA, "3")]
    page = validate_command.verdict_page(run, files, {}, checks, []).splitlines()
    assert page[2] == f"**INCOMPLETE**: could not run: b; c. Made by xferbench {xferbench.__version__} on {time.strftime('%Y-%m-%d')}."
    passed = validate_command.verdict_page(run, files, {}, [Verdict("a", PASS, "1")], []).splitlines()
    assert passed[2].startswith("**PASS**: every check passed. Made by")
    failed = validate_command.verdict_page(run, files, {}, [Verdict("a", FAIL, "1"), Verdict("d", FAIL, "2")], []).splitlines()
    assert failed[2].startswith("**FAIL**: failed: a; d. Made by")
    assert page[3:6] == ["", "| | |", "|---|---|"]  # no budget, no budget line


def test_a_budget_with_nothing_trimmed_and_no_time_yet_says_so(run5, tmp_path) -> None:
    run = validate_command.Validation(folder_holding(tmp_path, []), peers=dict(PEERS), max_minutes=90)
    page = validate_command.verdict_page(run, sweeps5(run5), {}, [], []).splitlines()
    assert page[4] == f"Run within --max-minutes 90 (estimated {budget.minutes(run.estimate_s())}): nothing was trimmed."
    assert page[5:7] == ["", "| | |"]


def test_a_page_with_no_file_names_the_device_and_says_what_is_unknown(tmp_path) -> None:
    """No sweep wrote a file: the device id stands for the GPU's name, each fact is a dash."""
    run = validate_command.Validation(folder_holding(tmp_path, []), device="cuda:1",
                                missing={"nvbandwidth": "nvbandwidth is not on PATH: " + validate_command.WHERE_TO_GET["nvbandwidth"]})
    page = validate_command.verdict_page(run, {"default": None}, {}, [], ["a note"]).split("\n")
    assert page[0] == "# xferbench validation: cuda:1 (cuda:1) on this machine"
    assert page[4:16] == ["| | |", "|---|---|", "| GPU | cuda:1 |", "| PCI address | — |", "| UUID | — |", "| driver | — |",
                          "| CUDA (driver) | — |", "| PCIe link, maximum | — |", "| GPU's NUMA node | unknown (no NVML facts) |",
                          "| CPU | — |", "| OS | — |", ""]  # fmt: skip
    at = page.index("## Published figures for this model")
    assert page[at + 2:at + 4] == ["- Here: no raw pinned copy was measured. No published host-to-device figure for this model (cuda:1).",
                                   "- Health-check floor: none published for this model."]  # fmt: skip
    at = page.index("## xferbench against the peers on this machine")
    assert page[at + 4:] == ["No size was measured by both xferbench and a peer on this GPU.", "",
                             "- nvbandwidth did not run: nvbandwidth is not on PATH: build it from https://github.com/NVIDIA/nvbandwidth,"
                             " then put it on PATH or give --peer PATH.", "- a note", "", "## In this folder", "",
                             "- `verdict.md`: the one-page verdict: start here", ""]  # fmt: skip


def test_facts_come_from_the_device_where_nvml_has_none(run5, tmp_path) -> None:
    """PCI address and UUID fall back to the device's own entry, the driver to NVML's; an unknown node says why."""
    files = sweeps5(run5)
    environment = files["default"].environment
    environment["host"] = "node07"
    entry = next(d for d in environment["devices"] if d.get("id") == "cuda:0")
    nvml = entry["nvml"]
    entry.update(pci_bus_id="00000000:1B:00.0", uuid="GPU-own", driver=None)
    nvml.update(pci_bus_id=None, uuid=None, driver="570.1", numa_node=None, numa_node_reason="NVML gives no NUMA node", pcie_gen_max=4)
    run = validate_command.Validation(folder_holding(tmp_path, []))
    page = validate_command.verdict_page(run, files, {}, [], []).splitlines()
    assert page[0] == "# xferbench validation: NVIDIA H200 (cuda:0) on node07"
    assert page[6:12] == ["| GPU | NVIDIA H200 |", "| PCI address | 00000000:1B:00.0 |", "| UUID | GPU-own |", "| driver | 570.1 |",
                          "| CUDA (driver) | 13.0 |", "| PCIe link, maximum | Gen4 x16 |"]  # fmt: skip
    assert page[12] == "| GPU's NUMA node | unknown (NVML gives no NUMA node) |"
    nvml.update(pci_bus_id="00000000:06:00.0", uuid="GPU-nvml")
    entry["driver"] = "580.1"
    page = validate_command.verdict_page(run, files, {}, [], []).splitlines()
    assert page[7:10] == ["| PCI address | 00000000:06:00.0 |", "| UUID | GPU-nvml |", "| driver | 580.1 |"]  # NVML's first, the device's driver


def published(page: str) -> list[str]:
    lines = page.splitlines()
    at = lines.index("## Published figures for this model")
    return lines[at + 2:at + 4]


def test_a_ceiling_below_the_floor_is_said_and_the_floor_itself_is_above_it(run5, tmp_path) -> None:
    """The ceiling is the raw pinned copy's largest size, streamed; at the floor it is above it, under it below."""
    run = validate_command.Validation(folder_holding(tmp_path, []))
    for gbps, said in ((47.99, "**Below it.**"), (48.0, "Above it.")):
        files = sweeps5(run5)
        set_points(files["large"], "raw_pinned", "streamed", {256 * MIB: 60_000.0, 1024 * MIB: gbps * 1e3})
        assert published(validate_command.verdict_page(run, files, {}, [], [])) == [
            f"- Here: the raw pinned copy, streamed, at 1024 MiB (1.07 GB): {gbps:.1f} GB/s (large.json). {published_for('NVIDIA H200')}.",
            f"- Health-check floor: {FLOOR}. {said}"]


def test_the_ceiling_is_timed_per_call_where_nothing_was_streamed(run5, tmp_path) -> None:
    """No sweep streamed the raw copy: link.json's streamed run is the ceiling; without it too, the per-call figure."""
    files = sweeps5(run5)
    for stem in ("default", "large"):
        files[stem].series = [s for s in files[stem].series if not (s.mode == "raw_pinned" and s.method == "streamed")]
    run = validate_command.Validation(folder_holding(tmp_path, []))
    assert published(validate_command.verdict_page(run, files, {}, [], []))[0] == (
        f"- Here: the raw pinned copy, streamed, at 256 MiB (268 MB): 55.5 GB/s (link.json). {published_for('NVIDIA H200')}.")
    files.pop("link")
    assert published(validate_command.verdict_page(run, files, {}, [], []))[0] == (
        f"- Here: the raw pinned copy, per-call, at 1024 MiB (1.07 GB): 55.5 GB/s (large.json). {published_for('NVIDIA H200')}.")


def test_the_folder_lists_known_files_described_then_others_by_name(tmp_path) -> None:
    folder = folder_holding(tmp_path, ["peers/commands.txt", "zz.log", "default.json", "a/b.txt", "verdict.md"])
    page = validate_command.verdict_page(validate_command.Validation(folder), {}, {}, [], []).splitlines()
    at = page.index("## In this folder")
    assert page[at + 2:] == ["- `verdict.md`: the one-page verdict: start here",
                             "- `default.json`: xferbench's sweep of 256x256x3 uint8 batches, both timing methods",
                             "- `peers/commands.txt`: every peer command with its exit code and seconds",
                             "- `a/b.txt`", "- `zz.log`"]  # fmt: skip


def test_the_quick_flag_is_said_in_the_headline(tmp_path) -> None:
    page = validate_command.verdict_page(validate_command.Validation(folder_holding(tmp_path, []), quick=True), {}, {}, [], []).splitlines()
    assert page[2].endswith(f" on {time.strftime('%Y-%m-%d')} (--quick: a smoke test, not a validation).")


# the table against the peers

TABLE_HEAD = ("| size | xferbench raw pinned, streamed | xferbench raw pinned, per call | nvbandwidth copy engine | bandwidthTest pinned"
              " | xferbench raw pageable, per call | bandwidthTest pageable | streamed / nvbandwidth | streamed / bandwidthTest pinned"
              " | pageable / bandwidthTest pageable |")  # fmt: skip


def test_the_table_without_any_peer_says_no_size_was_shared(run5) -> None:
    files = sweeps5(run5)
    set_points(files["large"], "raw_pageable", None, {})
    set_points(files["default"], "raw_pageable", None, {})
    ours = validate_command._ours(files)
    said = ["No size was measured by both xferbench and a peer on this GPU."]
    assert validate_command.peers_table(ours, {}, "cuda:0") == said
    assert validate_command.peers_table(ours, {"nvbandwidth": None, "bandwidthTest": None}, "cuda:0") == said
    assert validate_command.peers_table(ours, peers5(run5), "cuda:1") == said  # another GPU's figures are not set beside these


def test_xferbenchs_own_pageable_copies_are_no_peer(run5) -> None:
    """With no peer figure, the pageable copies xferbench measured make no row of the table."""
    ours = validate_command._ours(sweeps5(run5))
    assert validate_command._pick(ours, "cuda", "raw_pageable", "cuda:0", "per-call")
    assert validate_command.peers_table(ours, {}, "cuda:0") == ["No size was measured by both xferbench and a peer on this GPU."]


def test_the_table_leaves_out_a_peer_that_did_not_run_and_its_columns(run5) -> None:
    """bandwidthTest alone: its columns and its ratios, the nvbandwidth ratio a dash, sizes from both sides."""
    files = sweeps5(run5)
    set_points(files["default"], "raw_pageable", "per-call", {96 * MIB: 14_512.0})  # no pageable row without a peer beside it
    ours = validate_command._ours(files)
    table = validate_command.peers_table(ours, {"bandwidthTest": copy.deepcopy(run5["peer-bandwidthtest"])}, "cuda:0")
    assert table == [
        "| size | xferbench raw pinned, streamed | xferbench raw pinned, per call | bandwidthTest pinned | xferbench raw pageable, per call"
        " | bandwidthTest pageable | streamed / nvbandwidth | streamed / bandwidthTest pinned | pageable / bandwidthTest pageable |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        "| 96 MiB (101 MB) | 55,442 | 55,020 | 55,100 | 14,512 | 8,893 | – | 1.006 | 1.632 |",
        "| 256 MiB (268 MB) | 55,473 | 55,310 | 55,400 | 9,004 | 8,568 | – | 1.001 | 1.051 |",
        "| 1024 MiB (1.07 GB) | 55,508 | 55,474 | 55,462 | 8,357 | 8,576 | – | 1.001 | 0.974 |",
        "", "xferbench's figures in this table are from default.json, large.json."]  # link.json's 256 MiB: the large sweep's stands


def test_the_table_with_per_call_copies_only_shows_the_sizes_either_side_measured(run5) -> None:
    """No streamed raw copy (nor a link run): its column goes, its ratio is a dash; a size only pageable copies share is a row."""
    files = sweeps5(run5)
    files.pop("link")
    for stem in ("default", "large"):
        files[stem].series = [s for s in files[stem].series if not (s.mode == "raw_pinned" and s.method == "streamed")]
    set_points(files["large"], "raw_pinned", "per-call", {1024 * MIB: 55_000.0})
    set_points(files["default"], "raw_pinned", "per-call", {})
    set_points(files["default"], "raw_pageable", "per-call", {96 * MIB: 14_512.0})
    imported = peers5(run5)
    table = validate_command.peers_table(validate_command._ours(files), imported, "cuda:0")
    assert table == [
        "| size | xferbench raw pinned, per call | nvbandwidth copy engine | bandwidthTest pinned | xferbench raw pageable, per call"
        " | bandwidthTest pageable | streamed / nvbandwidth | streamed / bandwidthTest pinned | pageable / bandwidthTest pageable |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        "| 96 MiB (101 MB) | – | 55,458 | 55,100 | 14,512 | 8,893 | – | – | 1.632 |",
        "| 256 MiB (268 MB) | – | 55,446 | 55,400 | 9,004 | 8,568 | – | – | 1.051 |",
        "| 1024 MiB (1.07 GB) | 55,000 | 55,486 | 55,462 | 8,357 | 8,576 | – | – | 0.974 |",
        "", "xferbench's figures in this table are from default.json, large.json."]


def test_the_table_has_a_row_only_where_a_peer_measured(run5) -> None:
    """A size only xferbench measured is no row; a size only the peer measured is none either."""
    files = sweeps5(run5)
    files.pop("link")
    set_points(files["large"], "raw_pageable", None, {})
    set_points(files["default"], "raw_pageable", None, {})
    set_points(files["large"], "raw_pinned", None, {1024 * MIB: 50_000.0})
    set_points(files["default"], "raw_pinned", None, {})
    table = validate_command.peers_table(validate_command._ours(files), {"nvbandwidth": copy.deepcopy(run5["peer-nvbandwidth"])}, "cuda:0")
    assert table == [
        "| size | xferbench raw pinned, streamed | xferbench raw pinned, per call | nvbandwidth copy engine | streamed / nvbandwidth"
        " | streamed / bandwidthTest pinned | pageable / bandwidthTest pageable |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        "| 1024 MiB (1.07 GB) | 50,000 | 50,000 | 55,486 | 0.901 | – | – |",
        "", "xferbench's figures in this table are from large.json."]


# the peer check


def nvb_at(run5: dict[str, Result], mbps: dict[int, float], samples: int = 1, placement: str | None = NUMACTL) -> Result:
    """nvbandwidth's file with its host-to-device MB/s at each size (bytes) set to `mbps`, the rest dropped."""
    peer = copy.deepcopy(run5["peer-nvbandwidth"])
    for series in peer.series:
        series.params["samples"] = samples
        if series.mode == "host_to_device_memcpy_ce":
            series.points = [p for p in series.points if p.bytes in mbps]
            for point in series.points:
                point.mbps = mbps[point.bytes]
    if placement is None:
        peer.environment["peer"].pop("placement")
    else:
        peer.environment["peer"]["placement"] = placement
    return peer


def ours_at(run5: dict[str, Result], mbps: dict[int, float]) -> dict[str, Result]:
    files = sweeps5(run5)
    set_points(files["default"], "raw_pinned", "streamed", {b: v for b, v in mbps.items() if b in {p.bytes for s in files["default"].series for p in s.points}})
    set_points(files["large"], "raw_pinned", "streamed", {b: v for b, v in mbps.items() if b % MIB == 0 and b // MIB in (256, 1024)})
    return validate_command._ours(files)


SIZES = (96 * MIB, 256 * MIB, 1024 * MIB)


def test_the_peer_check_of_the_h200_run(run5) -> None:
    """Each of xferbench's figures from the first file that has its size: 256 MiB from the large sweep (55,473), not from
    link.json's long run (55,468); the file of the worst size named, and which file gave which size."""
    check = validate_command.peers_check(validate_command._ours(sweeps5(run5)), copy.deepcopy(run5["peer-nvbandwidth"]), "cuda:0")
    assert check == Verdict(PEER_NAME, PASS, "median +0.0% over 3 sizes (worst +0.0% at 256 MiB (268 MB): xferbench 55,473 (large.json),"
                                             " nvbandwidth 55,446 MB/s); xferbench's figures from default.json at 96 MiB, large.json at"
                                             f" 256 MiB and 1024 MiB; placement: xferbench {OURS_AT}; nvbandwidth {NUMACTL}")


def test_three_per_cent_apart_at_the_median_passes_and_more_fails_with_its_causes(run5) -> None:
    """The ratio is xferbench's over nvbandwidth's; exactly 3% is within; the worst size is the one furthest off."""
    ours = ours_at(run5, {96 * MIB: 51_499.0, 256 * MIB: 51_499.0, 1024 * MIB: 51_499.0})
    passed = validate_command.peers_check(ours, nvb_at(run5, {96 * MIB: 50_000.0, 256 * MIB: 50_000.0, 1024 * MIB: 40_000.0}), "cuda:0")
    assert passed == Verdict(PEER_NAME, PASS, "median +3.0% over 3 sizes (worst +28.7% at 1024 MiB (1.07 GB): xferbench 51,499"
                                              " (large.json), nvbandwidth 40,000 MB/s); xferbench's figures from default.json at 96 MiB,"
                                              f" large.json at 256 MiB and 1024 MiB; placement: xferbench {OURS_AT}; nvbandwidth {NUMACTL}")
    ours = ours_at(run5, {96 * MIB: 48_499.0, 256 * MIB: 48_499.0, 1024 * MIB: 50_000.0})
    failed = validate_command.peers_check(ours, nvb_at(run5, {96 * MIB: 50_000.0, 256 * MIB: 50_000.0, 1024 * MIB: 50_000.0}, samples=3), "cuda:0")
    assert failed == Verdict(PEER_NAME, FAIL, "median -3.0% over 3 sizes (worst -3.0% at 96 MiB (101 MB): xferbench 48,499 (default.json),"
                                              " nvbandwidth 50,000 MB/s); xferbench's figures from default.json at 96 MiB, large.json at 256 MiB"
                                              f" and 1024 MiB; placement: xferbench {OURS_AT}; nvbandwidth {NUMACTL}; likely causes,"
                                              " in order of the evidence: the link itself between the two runs: repeat both, one after the other")


def test_the_peer_check_takes_the_sizes_from_16_mib_both_measured(run5) -> None:
    """A size under 16 MiB, however far off, is not judged; 16 MiB itself is; one size is said in the singular."""
    ours = ours_at(run5, {12 * MIB: 10_000.0, 48 * MIB: 50_000.0})
    peer = nvb_at(run5, {96 * MIB: 1.0, 256 * MIB: 1.0})
    for series in peer.series:
        if series.mode == "host_to_device_memcpy_ce":
            series.points[0].bytes, series.points[0].mbps = 12 * MIB, 50_000.0
            series.points[1].bytes, series.points[1].mbps = 48 * MIB, 50_000.0
    check = validate_command.peers_check(ours, peer, "cuda:0")
    assert check.status == PASS and check.figure.startswith("median +0.0% over 1 size (worst +0.0% at 48 MiB (50.3 MB): xferbench 50,000"
                                                            " (default.json), nvbandwidth")  # fmt: skip
    sixteen = copy.deepcopy(peer)
    h2d = next(s for s in sixteen.series if s.mode == "host_to_device_memcpy_ce")
    h2d.points[1].bytes = 16 * MIB
    large = ours_at(run5, {12 * MIB: 10_000.0})
    point = copy.deepcopy(next(s for s in run5["large"].series if s.mode == "raw_pinned" and s.method == "streamed").points[0])
    point.bytes, point.mbps = 16 * MIB, 45_000.0
    next(s for s in large["large.json"].series if s.mode == "raw_pinned" and s.method == "streamed").points = [point]
    check = validate_command.peers_check(large, sixteen, "cuda:0")
    assert check.status == FAIL and check.figure.startswith("median -10.0% over 1 size (worst -10.0% at 16 MiB (16.8 MB): xferbench 45,000"
                                                            " (large.json), nvbandwidth")  # fmt: skip


def test_the_peer_check_is_not_applicable_for_each_reason(run5) -> None:
    """N/A only where no file holds what the check needs, naming the files read; each side's placement said whatever the status."""
    ours = validate_command._ours(sweeps5(run5))
    placed = f"placement: xferbench {OURS_AT}; nvbandwidth {NUMACTL}"
    assert validate_command.peers_check(ours, None, "cuda:0") == Verdict(
        PEER_NAME, NA, "nvbandwidth did not run or gave no figure (see peers/commands.txt)")
    assert validate_command.peers_check(ours, nvb_at(run5, {}), "cuda:0") == Verdict(
        PEER_NAME, NA, f"no size from 16 MiB measured by both on cuda:0; {placed}")
    assert validate_command.peers_check([], copy.deepcopy(run5["peer-nvbandwidth"]), "cuda:0") == Verdict(
        PEER_NAME, NA, f"xferbench's streamed raw pinned copy measured nothing on cuda:0; placement: xferbench placement not recorded;"
                       f" nvbandwidth {NUMACTL}")
    assert validate_command.peers_check(ours, copy.deepcopy(run5["peer-nvbandwidth"]), "cuda:1") == Verdict(
        PEER_NAME, NA, "xferbench's streamed raw pinned copy measured nothing on cuda:1 in default.json, large.json, link.json;"
                       f" placement: xferbench placement not recorded; nvbandwidth {NUMACTL}")
    unbound = nvb_at(run5, {}, placement=None)
    unbound.environment["peer"]["commands"] = [c.split(" ", 3)[3] for c in unbound.environment["peer"]["commands"]]  # without numactl
    assert validate_command.peers_check(ours, unbound, "cuda:0").figure == (
        "no size from 16 MiB measured by both on cuda:0; nvbandwidth did not run on the binding xferbench's workers had; placement:"
        f" xferbench {OURS_AT}; nvbandwidth its own CPU binding only (no numactl: memory wherever it landed)")


def test_a_failing_peer_check_names_placement_then_samples_then_the_link(run5) -> None:
    ours = ours_at(run5, {96 * MIB: 40_000.0, 256 * MIB: 40_000.0, 1024 * MIB: 40_000.0})
    peer = nvb_at(run5, {96 * MIB: 50_000.0, 256 * MIB: 50_000.0, 1024 * MIB: 50_000.0}, placement=None)
    peer.environment["peer"]["commands"] = [c.split(" ", 3)[3] for c in peer.environment["peer"]["commands"]]  # without numactl
    check = validate_command.peers_check(ours, peer, "cuda:0")
    assert check.status == FAIL
    assert check.figure.split("; placement: ", 1)[0].endswith(" and 1024 MiB; nvbandwidth did not run on the binding xferbench's workers had")
    assert check.figure.split("; placement: ", 1)[1] == (
        f"xferbench {OURS_AT}; nvbandwidth its own CPU binding only (no numactl: memory wherever it landed); likely causes, in order"
        " of the evidence: placement: the two ran with different NUMA binding (one bound to the GPU's node, one not); timing: nvbandwidth's figure is 1 sample (validate with --max-minutes high enough to run it with -i 3);"
        " the link itself between the two runs: repeat both, one after the other")


def bare(run5: dict[str, Result], environment: dict[str, Any]) -> Result:
    """nvbandwidth's file with no series and the given environment."""
    peer = copy.deepcopy(run5["peer-nvbandwidth"])
    peer.series, peer.environment = [], environment
    return peer


def test_the_likely_causes_in_order(run5) -> None:
    peer = bare(run5, {})
    link = "the link itself between the two runs: repeat both, one after the other"
    placement = "placement: the two ran with different NUMA binding (one bound to the GPU's node, one not)"
    assert validate_command._peer_causes(OURS_AT, NUMACTL, peer) == [link]
    assert validate_command._peer_causes("not bound: no NUMA node", "its own CPU binding only", peer) == [link]
    assert validate_command._peer_causes(OURS_AT, "its own CPU binding only", peer) == [placement, link]
    assert validate_command._peer_causes("placement not recorded", NUMACTL, peer) == [placement, link]


def test_a_peer_figure_of_under_three_samples_is_a_cause(run5) -> None:
    link = "the link itself between the two runs: repeat both, one after the other"

    def causes(*samples: Any) -> list[str]:
        peer = copy.deepcopy(run5["peer-nvbandwidth"])
        for series, n in zip(peer.series, samples):
            series.params = None if n == "none" else {**series.params, "samples": n}
        return validate_command._peer_causes(OURS_AT, NUMACTL, peer)

    assert causes(2, 5) == ["timing: nvbandwidth's figure is 2 samples (validate with --max-minutes high enough to run it with -i 3)", link]
    assert causes(3, 1) == ["timing: nvbandwidth's figure is 1 sample (validate with --max-minutes high enough to run it with -i 3)", link]
    assert causes(3, 3) == [link]
    assert causes("none", 1) == [link]  # a series that recorded no samples: not judged


# each side's placement


def test_nvbandwidths_placement_from_what_it_recorded(run5) -> None:
    def at(peer: dict[str, Any]) -> str:
        return validate_command._peer_placement(bare(run5, {"peer": peer}))

    nvb = "/opt/peers/nvbandwidth -j -b 96 -i 1 -t host_to_device_memcpy_ce device_to_host_memcpy_ce"
    bound = f"/usr/bin/numactl --cpunodebind=1 --membind=1 {nvb}"
    assert at({"placement": NUMACTL, "commands": [nvb]}) == NUMACTL
    assert at({"commands": [bound, bound]}) == "under numactl --cpunodebind=1 --membind=1"  # as its own run names it
    assert validate_command._peer_causes(OURS_AT, at({"commands": [bound]}), bare(run5, {})) == [
        "the link itself between the two runs: repeat both, one after the other"]  # bound on both sides: no placement cause
    assert at({"commands": [bound, nvb, nvb]}) == "under numactl for 1 of its 3 runs"
    assert at({"commands": [nvb]}) == "its own CPU binding only (no numactl: memory wherever it landed)"
    assert at({}) == "placement not recorded (imported from its output)"
    assert validate_command._peer_placement(bare(run5, {})) == "placement not recorded (imported from its output)"


def test_xferbenchs_placement_is_its_streamed_raw_copys_binding(run5) -> None:
    files = sweeps5(run5)
    ours = [files["default"], files["large"]]
    assert validate_command._our_placement(ours, "cuda:0") == OURS_AT
    assert validate_command._our_placement(ours, "cuda:1") == "placement not recorded"
    assert validate_command._our_placement([], "cuda:0") == "placement not recorded"
    for result in ours:
        for series in result.series:
            series.numa = {"cpus": [0, 1], "node": 1} if series.method == "per-call" else {}
    assert validate_command._our_placement(ours, "cuda:0") == "placement not recorded"
    for series in ours[1].series:
        if series.mode == "raw_pinned" and series.method == "streamed":
            series.numa = {"reason": "not bound: NVML gives no NUMA node"}
    assert validate_command._our_placement(ours, "cuda:0") == "placement not recorded"  # the first file's series is the record
    assert validate_command._our_placement(ours[1:], "cuda:0") == "not bound: NVML gives no NUMA node"


# the figures picked


def test_size_labels() -> None:
    assert validate_command.size_label(16 * MIB) == "16 MiB (16.8 MB)"
    assert validate_command.size_label(2**30) == "1024 MiB (1.07 GB)"
    assert validate_command.size_label(196608) == "197 KB"
    assert validate_command.size_label(MIB + 1) == "1.05 MB"


def test_pick_takes_one_paths_host_to_device_copies_on_one_device(run5) -> None:
    files = sweeps5(run5)
    ours = [files["default"], files["large"]]
    streamed = validate_command._pick(ours, "cuda", "raw_pinned", "cuda:0", "streamed")
    assert streamed[96 * MIB] == pytest.approx(55_442, abs=0.5) and streamed[2**30] == pytest.approx(55_508, abs=0.5)
    assert len(streamed) == 12 and min(streamed) == 196608  # both files: 10 default sizes, 256 MiB and 1 GiB from the large one
    per_call = validate_command._pick(ours, "cuda", "raw_pinned", "cuda:0", "per-call")
    assert per_call[2**30] == pytest.approx(55_474, abs=0.5)
    both = validate_command._pick(ours, "cuda", "raw_pinned", "cuda:0")
    assert set(both) == set(streamed) and both[2**30] == per_call[2**30]  # the first series in the files' order gives a size
    assert validate_command._pick(ours, "cuda", "raw_pinned", "cuda:1") == {}
    assert validate_command._pick(ours, "torch", "pinned_into", "cuda:0", "streamed")[2**30] == pytest.approx(55_363, rel=0.05)
    nvb = [copy.deepcopy(run5["peer-nvbandwidth"])]
    assert validate_command._pick(nvb, "nvbandwidth", "device_to_host_memcpy_ce", "cuda:0") == {}  # device to host is not picked
    assert validate_command._pick(nvb, "nvbandwidth", "host_to_device_memcpy_ce", "cuda:0") == pytest.approx(
        {96 * MIB: 55_458.1, 256 * MIB: 55_446.1, 2**30: 55_485.7})
    seeded = copy.deepcopy(ours)
    for series in seeded[0].series:
        if series.framework == "torch" and series.mode == "pinned_into" and series.method == "per-call":
            series.op = "seed" if series.op == "copy" else "copy"
    copied = validate_command._pick(seeded, "torch", "pinned_into", "cuda:0", "per-call")
    assert copied[196608] == next(p.mbps for s in ours[0].series for p in s.points
                                  if (s.framework, s.mode, s.op, s.method) == ("torch", "pinned_into", "seed", "per-call") and p.bytes == 196608)


def test_points_leave_out_failed_and_empty_figures(run5) -> None:
    files = sweeps5(run5)
    series = next(s for s in files["large"].series if s.mode == "raw_pinned" and s.method == "streamed")
    series.points[0].status, series.points[0].reason = "failed", "error"
    assert list(validate_command._points(series)) == [2**30]
    series.points[1].mbps = 0.0
    assert validate_command._points(series) == {}


def test_the_ceiling_is_the_largest_streamed_size_else_per_call(run5) -> None:
    """The largest streamed size of any file, a sweep's where link.json has the same size, link.json's where no sweep
    streamed it; per call only where nothing was streamed; with the file it came from."""
    files = sweeps5(run5)
    ours = validate_command._ours(files)
    mbps, nbytes, method, file = validate_command._ceiling(ours, "cuda:0")
    assert (round(mbps), nbytes, method, file) == (55_508, 2**30, "streamed", "large.json")
    set_points(files["large"], "raw_pinned", "streamed", {256 * MIB: 60_000.0})
    set_points(files["default"], "raw_pinned", "streamed", {})
    assert validate_command._ceiling(ours, "cuda:0") == (60_000.0, 256 * MIB, "streamed", "large.json")
    set_points(files["large"], "raw_pinned", "streamed", {})
    mbps, nbytes, method, file = validate_command._ceiling(ours, "cuda:0")
    assert (round(mbps), nbytes, method, file) == (55_468, 256 * MIB, "streamed", "link.json")
    files.pop("link")
    mbps, nbytes, method, file = validate_command._ceiling(validate_command._ours(files), "cuda:0")
    assert (round(mbps), nbytes, method, file) == (55_474, 2**30, "per-call", "large.json")
    assert validate_command._ceiling(ours, "cuda:1") is None


def test_our_files_are_named_the_link_run_last_and_what_was_not_written_left_out(run5) -> None:
    files = sweeps5(run5)
    assert list(validate_command._ours(files).items()) == [("default.json", files["default"]), ("large.json", files["large"]),
                                                     ("link.json", files["link"])]  # fmt: skip
    assert list(validate_command._ours({"link": files["link"], "large": None, "default": files["default"]})) == ["default.json", "link.json"]


# the plan


def test_the_sweeps_arguments() -> None:
    """Both sweeps with both timing methods, the link run only where cuda is measured, --quick's own batches and times."""
    run = validate_command.Validation(Path("/v"))
    assert run.sweeps() == {
        "default": ["--device", "cuda:0", "--timing", "per-call", "--timing", "streamed", "--op=copy", "--op=seed", "--batch-sizes",
                    "1,2,4,8,16,32,64,128,256,512"],
        "large": ["--device", "cuda:0", "--timing", "per-call", "--timing", "streamed", "--op=copy", "--shape", "512x512x4",
                  "--batch-sizes", "1,4,16,64,128,256,512,1024"],
        "link": ["--device", "cuda:0", "-f", "cuda", "-m", "raw_pinned", "--timing", "streamed", "--shape", "512x512x4",
                 "--batch-sizes", "256", "--min-time", "10", "--max-time", "20"]}  # fmt: skip
    quick = validate_command.Validation(Path("/v"), "cuda:1", ("torch", "cuda"), quick=True, large_batches=(256,))
    common = ["--device", "cuda:1", "--framework=torch", "--framework=cuda", "--timing", "per-call", "--timing", "streamed", "--max-samples", "20"]
    assert quick.sweeps() == {
        "default": [*common, "--op=copy", "--op=seed", "--batch-sizes", "1,16,256"],
        "large": [*common, "--op=copy", "--shape", "512x512x4", "--batch-sizes", "256"],
        "link": ["--device", "cuda:1", "-f", "cuda", "-m", "raw_pinned", "--timing", "streamed", "--shape", "512x512x4",
                 "--batch-sizes", "256", "--min-time", "2", "--max-time", "4"]}  # fmt: skip
    assert list(validate_command.Validation(Path("/v"), frameworks=("torch",)).sweeps()) == ["default", "large"]
    assert validate_command.Validation(Path("/v"), frameworks=("torch",)).has_link_run is False


def test_the_sweep_plans_count_what_each_sweep_runs() -> None:
    from xferbench.core.timing import TimingConfig

    run = validate_command.Validation(Path("/v"), frameworks=("sim", "cuda"))
    plans = run.sweep_plans()
    assert [(p.stem, p.batches, p.timing, p.fixed_s) for p in plans] == [
        ("default", validate_command.DEFAULT_BATCHES, TimingConfig(), None), ("large", validate_command.LARGE_BATCHES, TimingConfig(), None),
        ("link", (256,), TimingConfig(), 10.0)]  # fmt: skip
    for plan, ops, shape in zip(plans, (("copy", "seed"), ("copy",)), ((256, 256, 3), (512, 512, 4))):
        keys, used = budget.series_keys(("sim", "cuda"), "cuda:0", ops, ("per-call", "streamed"), shape)
        assert plan.keys == tuple(keys) and plan.frameworks == tuple(used)
        assert [k.label() for k in plan.keys][:2] == ["sim/link/copy@sim", "sim/link/copy/streamed@sim"]
    keys, used = budget.series_keys(("cuda",), "cuda:0", ("copy",), ("streamed",), (512, 512, 4), modes=("raw_pinned",))
    assert plans[2].keys == tuple(keys) and plans[2].frameworks == tuple(used)
    quick = validate_command.Validation(Path("/v"), frameworks=("sim", "cuda"), quick=True).sweep_plans()
    assert [(p.stem, p.batches, p.timing.max_samples, p.fixed_s) for p in quick] == [
        ("default", (1, 16, 256), 20, None), ("large", (1, 16, 256), 20, None), ("link", (256,), 20, 2.0)]
    assert [p.stem for p in validate_command.Validation(Path("/v"), frameworks=("sim",)).sweep_plans()] == ["default", "large"]


FULL_SIZES = [196608, 393216, 786432, 1572864, 3 * MIB, MIB, 4 * MIB, 6 * MIB, 12 * MIB, 16 * MIB, 24 * MIB, 48 * MIB, 64 * MIB, 96 * MIB,
              128 * MIB, 256 * MIB, 512 * MIB, 1024 * MIB]  # fmt: skip


def test_the_sizes_are_every_bytes_per_call_up_to_1_gib() -> None:
    assert validate_command.Validation(Path("/v")).sizes() == sorted(FULL_SIZES)
    assert validate_command.Validation(Path("/v"), quick=True).sizes() == [196608, MIB, 3 * MIB, 16 * MIB, 48 * MIB, 256 * MIB]
    assert validate_command.Validation(Path("/v"), large_batches=(2048, 1024)).sizes()[-1] == 2**30  # nothing above 1 GiB


def test_the_peer_commands_at_each_size() -> None:
    """nvbandwidth at the whole MiB sizes (-b in MiB), bandwidthTest at every size from pinned then pageable memory."""
    run = validate_command.Validation(Path("/v"), "cuda:1", quick=True, peers=dict(PEERS))
    commands = run.peer_commands()
    tests = ["-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce"]
    assert [(c.peer, c.arguments, c.nbytes, c.memory) for c in commands if c.peer == "nvbandwidth"] == [
        ("nvbandwidth", ["-j", "-b", str(mib), *tests], mib * MIB, "pinned") for mib in (1, 3, 16, 48, 256)]
    assert [c.seconds for c in commands[:5]] == [budget.nvbandwidth_seconds(mib * MIB, 2, None) for mib in (1, 3, 16, 48, 256)]
    sizes = [196608, MIB, 3 * MIB, 16 * MIB, 48 * MIB, 256 * MIB]
    assert [(c.arguments, c.nbytes, c.memory, c.seconds) for c in commands[5:]] == [
        ([ "--device=1", "--htod", f"--memory={memory}", "--mode=range", f"--start={n}", f"--end={n}", f"--increment={n}", "--csv"], n,
         memory, budget.bandwidthtest_seconds(n, memory)) for memory in ("pinned", "pageable") for n in sizes]  # fmt: skip
    assert {c.peer for c in commands[5:]} == {"bandwidthTest"}
    run.nvbandwidth_samples = 1
    assert run.peer_commands()[0].arguments == ["-j", "-b", "1", "-i", "1", *tests]
    assert run.peer_commands()[0].seconds == budget.nvbandwidth_seconds(MIB, 2, 1)
    assert [c.peer for c in validate_command.Validation(Path("/v"), quick=True, peers={"bandwidthTest": "/b"}).peer_commands()] == ["bandwidthTest"] * 12
    assert validate_command.Validation(Path("/v"), quick=True).peer_commands() == []


def test_the_peers_sizes_from_16_mib_or_the_few() -> None:
    run = validate_command.Validation(Path("/v"), peers={"nvbandwidth": "/a"}, peer_sizes="from16")
    assert [c.nbytes for c in run.peer_commands()] == [n for n in sorted(FULL_SIZES) if n >= 16 * MIB]
    run.peer_sizes = "few"
    assert [c.nbytes for c in run.peer_commands()] == [16 * MIB, 96 * MIB, 256 * MIB, 1024 * MIB]
    quick = validate_command.Validation(Path("/v"), quick=True, peers={"nvbandwidth": "/a"}, peer_sizes="few")
    assert [c.nbytes for c in quick.peer_commands()] == [16 * MIB, 48 * MIB, 256 * MIB]


def sim(max_minutes: float | None, **kwargs: Any) -> validate_command.Validation:
    run = validate_command.Validation(Path("/v"), frameworks=("sim",), peers=dict(PEERS), max_minutes=max_minutes, **kwargs)
    run.fit()
    return run


def test_fit_trims_in_order_and_says_what_it_left_out() -> None:
    assert sim(None).trimmed == [] and sim(None).nvbandwidth_samples is None
    full = sim(None).estimate_s()
    fits = (full + budget.STOP_GRACE_S) / 60  # the plan and a sweep's stop grace
    assert sim(fits).trimmed == [] and sim(fits).peer_sizes == "all"
    assert sim(full / 60).trimmed != []  # the plan alone, without the grace its sweeps' deadlines keep
    tiny = sim(0.0001)
    assert tiny.trimmed == ["nvbandwidth took 1 sample per size (-i 1), not its default 3",
                            "the peers measured 3 of 18 sizes (96 MiB (101 MB), 256 MiB (268 MB), 1024 MiB (1.07 GB))",
                            "the large sweep left out batches 1, 4, 16, 64, 128, 512 of 1 MiB images (kept 256, 1024)"]  # fmt: skip
    assert (tiny.nvbandwidth_samples, tiny.peer_sizes, tiny.large_batches) == (1, "few", (256, 1024))
    between = validate_command.Validation(Path("/v"), frameworks=("sim",), peers=dict(PEERS), nvbandwidth_samples=1, peer_sizes="from16")
    run = sim((between.estimate_s() + budget.STOP_GRACE_S) / 60)
    assert run.trimmed == ["nvbandwidth took 1 sample per size (-i 1), not its default 3",
                           "the peers measured 9 of 18 sizes (16 MiB (16.8 MB), 24 MiB (25.2 MB), 48 MiB (50.3 MB), 64 MiB (67.1 MB),"
                           " 96 MiB (101 MB), 128 MiB (134 MB), 256 MiB (268 MB), 512 MiB (537 MB), 1024 MiB (1.07 GB))"]  # fmt: skip
    large_only = validate_command.Validation(Path("/v"), frameworks=("sim",), max_minutes=0.0001)
    large_only.fit()
    assert large_only.trimmed == ["the large sweep left out batches 1, 4, 16, 64, 128, 512 of 1 MiB images (kept 256, 1024)"]
    alone = validate_command.Validation(Path("/v"), frameworks=("sim",), peers={"bandwidthTest": "/b"}, max_minutes=0.0001)
    alone.fit()
    assert alone.nvbandwidth_samples is None and alone.trimmed[0].startswith("the peers measured 3 of 18 sizes")


def test_the_large_sweeps_batches_go_one_at_a_time_in_their_order() -> None:
    full = validate_command.Validation(Path("/v"), frameworks=("sim",), nvbandwidth_samples=1)
    without = validate_command.Validation(Path("/v"), frameworks=("sim",), large_batches=(1, 16, 256, 512, 1024))
    run = validate_command.Validation(Path("/v"), frameworks=("sim",), max_minutes=(without.estimate_s() + budget.STOP_GRACE_S + 0.001) / 60)
    run.fit()
    assert run.large_batches == (1, 16, 256, 512, 1024) and full.large_batches is None
    assert run.trimmed == ["the large sweep left out batches 4, 64, 128 of 1 MiB images (kept 1, 16, 256, 512, 1024)"]


def test_the_plan_as_printed() -> None:
    run = validate_command.Validation(Path("/v"), frameworks=("sim",), quick=True, peers=dict(PEERS))
    default, large = run.sweep_plans()
    nvb = sum(c.seconds for c in run.peer_commands() if c.peer == "nvbandwidth")
    bt = sum(c.seconds for c in run.peer_commands() if c.peer == "bandwidthTest")
    assert run.plan_lines() == [
        f"plan: about {budget.minutes(run.estimate_s())} in all ({run.estimate_s():.0f} s):",
        f"  the estimate assumes {budget.FALLBACK.describe()}",
        f"  default.json: 2 series x 3 batches = 6 points, 1 worker(s): about {budget.minutes(default.seconds())}",
        f"  large.json: 2 series x 3 batches = 6 points, 1 worker(s): about {budget.minutes(large.seconds())}",
        f"  nvbandwidth: 5 runs at 1 MiB (1.05 MB) to 256 MiB (268 MB): about {budget.minutes(nvb)}",
        f"  bandwidthTest: 12 runs at 197 KB to 256 MiB (268 MB): about {budget.minutes(bt)}",
        "  the report, plots and verdict: about 0.5 min"]  # fmt: skip
    run.max_minutes, run.trimmed = 90.0, ["a", "b"]
    assert run.plan_lines()[0] == f"plan: about {budget.minutes(run.estimate_s())} in all ({run.estimate_s():.0f} s), within --max-minutes 90:"
    assert run.plan_lines()[-2:] == ["  trimmed to fit: a", "  trimmed to fit: b"]
    run.max_minutes = run.estimate_s() / 60
    assert run.plan_lines()[0].endswith(f"within --max-minutes {run.max_minutes:g}:")
    run.max_minutes = run.estimate_s() / 60 - 0.01
    assert run.plan_lines()[0].endswith(f"within --max-minutes {run.max_minutes:g} (more than it, trimmed as far as it goes: the run stops"
                                        " at the budget, and says what it did not finish):")
    one = validate_command.Validation(Path("/v"), frameworks=("sim",), quick=True, peers={"nvbandwidth": "/a"}, peer_sizes="from16",
                                large_batches=(1,))  # fmt: skip
    seconds = one.peer_commands()[0].seconds
    assert one.plan_lines()[4] == f"  nvbandwidth: 1 runs at 48 MiB (50.3 MB) to 48 MiB (50.3 MB): about {budget.minutes(seconds)}"


# the folder


def test_a_folder_that_holds_a_validation_or_is_a_file_is_refused(tmp_path) -> None:
    validate_command.refuse_used_folder(tmp_path / "new")
    validate_command.refuse_used_folder(folder_holding(tmp_path, ["notes.txt"]))
    used = folder_holding(tmp_path, ["peers/commands.txt", "default.json"])
    with pytest.raises(XferbenchError) as said:
        validate_command.refuse_used_folder(used)
    assert str(said.value) == f"{used} already holds results (default.json); give another folder so nothing is overwritten"
    (tmp_path / "file").write_text("")
    with pytest.raises(XferbenchError) as said:
        validate_command.refuse_used_folder(tmp_path / "file")
    assert str(said.value) == f"{tmp_path / 'file'} is a file; give a folder for the validation"


# the peers


def test_the_gpus_uuid_from_nvml_else_its_own_entry() -> None:
    def uuid(entry: dict[str, Any], device: str = "cuda:0") -> str | None:
        return validate_command._gpu_uuid({"devices": [{"id": "cpu"}, {"id": "cuda:0", **entry}]}, device)

    assert uuid({"nvml": {"uuid": "GPU-n"}, "uuid": "GPU-d"}) == "GPU-n"
    assert uuid({"nvml": {"uuid": None}, "uuid": "GPU-d"}) == "GPU-d"
    assert uuid({"nvml": None, "uuid": "GPU-d"}) == "GPU-d"
    assert uuid({}) is None and uuid({"uuid": "GPU-d"}, "cuda:1") is None


def bound(node: Any, numactl: str | None, monkeypatch: pytest.MonkeyPatch, name: str = "bandwidthTest") -> validate_command.PeerRun:
    monkeypatch.setattr(validate_command.shutil, "which", lambda tool: numactl if tool == "numactl" else None)
    run = validate_command.PeerRun(name, "/opt/peers/" + name, log=None)  # type: ignore[arg-type]
    environment = {"devices": [{"id": "cuda:0", "kind": "cuda"}, {"id": "cuda:1", "kind": "cuda", "nvml": {"numa_node": node}}]}
    validate_command._bind(run, validate_command.Validation(Path("/v"), "cuda:1"), environment)
    return run


def test_a_peer_is_bound_to_the_gpus_node_where_both_are_known(monkeypatch) -> None:
    run = bound(0, "/usr/bin/numactl", monkeypatch)
    assert (run.prefix, run.unbound, run.notes) == (["/usr/bin/numactl", "--cpunodebind=0", "--membind=0"], None, [])
    assert run.placement() == NUMACTL
    for node, numactl, why in ((None, "/usr/bin/numactl", "the GPU's NUMA node is unknown"), (-1, "/usr/bin/numactl", "the GPU's NUMA node is unknown"),
                               ("1", "/usr/bin/numactl", "the GPU's NUMA node is unknown"), (1, None, "numactl is not on PATH"),
                               (-1, None, "the GPU's NUMA node is unknown")):  # fmt: skip
        run = bound(node, numactl, monkeypatch, "nvbandwidth")
        assert (run.prefix, run.unbound) == ([], why)
        assert run.notes == [f"nvbandwidth ran without NUMA binding ({why}): its pinned figures may reflect where its memory landed"]


# running the peers, with a stand-in for the process


class Peer:
    """A stand-in for a PeerRun: answers each command in turn with (exit code, seconds, output), None to stop."""

    def __init__(self, executable: str, answers: list[tuple[int | None, float, str] | None], environment: dict[str, str] | None = None) -> None:
        self.executable, self.answers, self.environment = executable, list(answers), environment or {}
        self.prefix = ["/usr/bin/numactl", "--cpunodebind=0", "--membind=0"]
        self.calls: list[tuple[list[str], float]] = []

    def __call__(self, arguments: list[str], estimate_s: float = 0.0) -> tuple[int | None, float, str, list[str]] | None:
        self.calls.append((arguments, estimate_s))
        answer = self.answers.pop(0)
        return None if answer is None else (*answer, [*self.prefix, self.executable, *arguments])


def quick_run(tmp_path: Path, peers: dict[str, str]) -> validate_command.Validation:
    (tmp_path / "v" / "peers").mkdir(parents=True)
    return validate_command.Validation(tmp_path / "v", quick=True, peers=peers)


def test_nvbandwidths_runs_are_kept_whole_and_stop_where_the_peer_stops(tmp_path) -> None:
    run = quick_run(tmp_path, {"nvbandwidth": out.NVB})
    first = out.nvbandwidth(out.running(out.H2D_CE), mib=1, error="[CUDA_ERROR_OUT_OF_MEMORY] out of memory")
    second = "warning first\n" + out.nvbandwidth(out.passed(out.H2D_CE, "55.2"), out.passed(out.D2H_CE, "55.1"), mib=3)
    peer = Peer(out.NVB, [(1, 1.234, first), (0, 2.0, second), None], {"CUDA_VISIBLE_DEVICES": "GPU-1"})
    path = validate_command.run_nvbandwidth(peer, run)  # type: ignore[arg-type]
    assert path == tmp_path / "v" / "peers" / "nvbandwidth.json"
    planned = [c for c in run.peer_commands() if c.peer == "nvbandwidth"]
    assert peer.calls == [(c.arguments, c.seconds) for c in planned[:3]]
    kept = json.loads(path.read_text())
    command = "/usr/bin/numactl --cpunodebind=0 --membind=0 " + out.NVB + " -j -b {} -t host_to_device_memcpy_ce device_to_host_memcpy_ce"
    assert kept == {"tool": "nvbandwidth", "binary": out.NVB, "runs": [
        {"buffer_size_mib": 1, "buffer_size_bytes": MIB, "command": command.format(1), "environment": {"CUDA_VISIBLE_DEVICES": "GPU-1"},
         "exit_code": 1, "seconds": 1.23, "stdout_stderr_raw": first, "output": json.loads(first)},
        {"buffer_size_mib": 3, "buffer_size_bytes": 3 * MIB, "command": command.format(3), "environment": {"CUDA_VISIBLE_DEVICES": "GPU-1"},
         "exit_code": 0, "seconds": 2.0, "stdout_stderr_raw": second, "output": json.loads(second.split("\n", 1)[1])}]}  # fmt: skip
    assert path.read_text().startswith('{\n "tool": "nvbandwidth",\n "binary": ') and path.read_text().endswith("}\n")


def test_bandwidthtests_runs_are_kept_under_their_command_and_exit(tmp_path) -> None:
    run = quick_run(tmp_path, {"bandwidthTest": out.BT})
    text = out.bandwidthtest(out.csv_line("H2D-Pinned", 55.1, 196608))
    peer = Peer(out.BT, [(0, 0.6, text + "\n\n"), (None, 600.0, "(stopped after 600 s)"), None])
    path = validate_command.run_bandwidthtest(peer, run)  # type: ignore[arg-type]
    assert path == tmp_path / "v" / "peers" / "bandwidthTest.txt"
    assert [arguments for arguments, _ in peer.calls] == [c.arguments for c in run.peer_commands()[:3]]
    bt = "/usr/bin/numactl --cpunodebind=0 --membind=0 " + out.BT + " --device=0 --htod --memory=pinned --mode=range"
    assert path.read_text() == (
        f"### bandwidthTest pinned 196608 B\n### $ {bt} --start=196608 --end=196608 --increment=196608 --csv\n### exit 0\n{text.rstrip()}\n\n"
        f"### bandwidthTest pinned 1048576 B\n### $ {bt} --start=1048576 --end=1048576 --increment=1048576 --csv\n"
        "### exit timed out or could not start\n(stopped after 600 s)\n\n")
    nothing = Peer(out.BT, [None])
    assert validate_command.run_bandwidthtest(nothing, run).read_text() == ""  # type: ignore[arg-type]


def test_find_peers_by_name_given_or_on_path(tmp_path, monkeypatch) -> None:
    def tool(name: str, mode: int = 0o755) -> str:
        path = tmp_path / name
        path.write_text("#!/bin/sh\n")
        path.chmod(mode)
        return str(path)

    on_path: dict[str, str] = {}
    monkeypatch.setattr(validate_command.shutil, "which", lambda name: on_path.get(name))
    given = tool("BandwidthTest-12.8")
    assert validate_command.find_peers([given]) == ({"bandwidthTest": given}, {
        "nvbandwidth": "nvbandwidth is not on PATH: build it from https://github.com/NVIDIA/nvbandwidth, then put it on PATH or give --peer PATH"})
    on_path.update(nvbandwidth=tool("nvbandwidth"), bandwidthTest=tool("bandwidthTest"))
    assert validate_command.find_peers([]) == ({"nvbandwidth": on_path["nvbandwidth"], "bandwidthTest": on_path["bandwidthTest"]}, {})
    assert validate_command.find_peers([given]) == ({"bandwidthTest": given, "nvbandwidth": on_path["nvbandwidth"]}, {})
    assert validate_command.find_peers(["nvbandwidth"])[0]["nvbandwidth"] == on_path["nvbandwidth"]  # a name on PATH
    on_path.clear()
    assert validate_command.find_peers([])[1]["bandwidthTest"] == ("bandwidthTest is not on PATH: build it from the CUDA samples"
                                                             " (https://github.com/NVIDIA/cuda-samples, tag v12.8 or earlier: later tags"
                                                             " drop it), then put it on PATH or give --peer PATH")  # fmt: skip
    for text, said in ((tool("true"), "not nvbandwidth or bandwidthTest (xferbench knows a peer by its file name)"),
                       (tool("nvbandwidth-v0.8", 0o644), "no executable file there"),
                       (str(tmp_path / "bandwidthTest-missing"), "no executable file there")):  # fmt: skip
        with pytest.raises(XferbenchError) as error:
            validate_command.find_peers([text])
        assert str(error.value) == f"--peer {text}: {said}"
    (tmp_path / "nvbandwidth.d").mkdir()
    with pytest.raises(XferbenchError, match="no executable file there"):
        validate_command.find_peers([str(tmp_path / "nvbandwidth.d")])


def test_the_peers_output_becomes_result_files_beside_xferbenchs(run5, tmp_path) -> None:
    """Each peer's kept output read into peer-*.json, its placement recorded, a failed run said with the folder's own paths,
    a figure shown one GPU given the validated id, and output with no figure said and skipped."""
    run = quick_run(tmp_path, dict(PEERS))
    run.device = "cuda:1"
    environment = copy.deepcopy(run5["default"].environment)
    for entry in environment["devices"]:
        entry["id"] = "cuda:1" if entry.get("id") == "cuda:0" else entry.get("id")
    failing = out.nvbandwidth(out.running(out.H2D_CE), mib=1, error="[CUDA_ERROR_OUT_OF_MEMORY] out of memory", gpus=(("NVIDIA H200", "00000000:00:06"),))
    passing = out.nvbandwidth(out.passed(out.H2D_CE, "55.2"), out.passed(out.D2H_CE, "55.1"), mib=3, gpus=(("NVIDIA H200", "00000000:00:06"),))
    nvb = validate_command.run_nvbandwidth(Peer(out.NVB, [(1, 1.0, failing), (0, 2.0, passing), None], {"CUDA_VISIBLE_DEVICES": "GPU-1"}), run)  # type: ignore[arg-type]
    (tmp_path / "v" / "peers" / "bandwidthTest.txt").write_text("nothing here\n")
    notes: list[str] = []
    echoed: list[str] = []
    imported = validate_command.import_peers({"nvbandwidth": nvb, "bandwidthTest": tmp_path / "v" / "peers" / "bandwidthTest.txt"}, environment,
                                       run, {"nvbandwidth"}, notes, echoed.append, {"nvbandwidth": NUMACTL})  # fmt: skip
    assert imported["bandwidthTest"] is None and not (tmp_path / "v" / "peer-bandwidthtest.json").exists()
    result = imported["nvbandwidth"]
    assert {s.device for s in result.series} == {"cuda:1"} and result.environment["peer"]["placement"] == NUMACTL
    assert load(tmp_path / "v" / "peer-nvbandwidth.json").environment["peer"]["placement"] == NUMACTL
    assert validate_command._pick([result], "nvbandwidth", "host_to_device_memcpy_ce", "cuda:1") == {3 * MIB: 55_200.0}
    assert notes[0] == ("nvbandwidth: nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:1: peers/nvbandwidth.json run 1 (-b 1):"
                        " host_to_device_memcpy_ce failed (Running): nvbandwidth's error: [CUDA_ERROR_OUT_OF_MEMORY] out of memory")
    assert notes[-1].startswith("bandwidthTest's output gave no figure: peers/bandwidthTest.txt: not bandwidthTest's output")
    kept = tmp_path / "v" / "peers" / "bandwidthTest.txt"  # the page names it inside the folder; the terminal in full
    assert echoed == ["warning: " + notes[-1].replace("peers/bandwidthTest.txt", str(kept))]
    assert len(notes) == len(set(notes))
    again = validate_command.import_peers({"nvbandwidth": nvb}, environment, run, set(), [], echoed.append)
    assert {s.device for s in again["nvbandwidth"].series} == {"cuda:0"}  # not shown one GPU: its own ids kept
    assert "placement" not in again["nvbandwidth"].environment["peer"]
