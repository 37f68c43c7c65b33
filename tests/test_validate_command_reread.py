"""`xferbench validate --reread FOLDER`: a validation's verdict made again from the folder's files, on the
H200 runs' own folders as they were committed: nothing measured, nothing written into the folder, the run's
own facts (device, --quick, budget, notes) taken from its verdict.md or validate.log, each file that is not
there named, and every figure read from whichever file holds it."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xferbench.cli import app
from xferbench.core.verdict import FAIL, NA, PASS
from xferbench.health import validate_command

RUNS = Path(__file__).resolve().parent.parent / "results" / "nvidia-h200" / "2026-11-26"
PEER_CHECK = "streamed raw pinned copy within 3% of nvbandwidth's copy engine from 16 MiB (median)"
OURS_AT = "bound to CPUs 0-15, memory preferred on NUMA node 0"
UNBOUND_NVB = ("- Placement: nvbandwidth ran without numactl, on its own CPU binding only, its memory wherever it landed; xferbench's"
               f" workers were {OURS_AT}. Their figures may differ by where the memory sat, not by how each times (peers/commands.txt"
               " has each command).")  # fmt: skip


def folder_of(run: int) -> Path:
    return RUNS / f"run-{run}" / "validation"


def reread(folder: Path, device: str | None = None) -> tuple[str, dict[str, validate_command.Verdict]]:
    """The page and its checks by name, as `validate --reread` makes them."""
    run, files, imported, notes, record = validate_command.reread(folder, device)
    checks = validate_command.checks_for(files, imported, run.device, absent="not in the folder")
    return validate_command.verdict_page(run, files, imported, checks, notes, record), {c.name: c for c in checks}


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file below the folder with its size and modification time: what a read must leave as it was."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def line_of(page: str, start: str) -> str:
    return next(line for line in page.splitlines() if line.startswith(start))


# the committed runs


def test_run_3s_link_run_stands_for_the_sweeps_that_were_not_written() -> None:
    """run-3 (--quick, out of time before either sweep was written) kept only link.json's streamed 256 MiB: the peer check
    runs on it and the ceiling line gives it, each naming link.json; the run's own facts are as its verdict said."""
    page, checks = reread(folder_of(3))
    peer = checks[PEER_CHECK]
    assert peer.status == PASS and peer.figure.startswith(
        "median +0.0% over 1 size (worst +0.0% at 256 MiB (268 MB): xferbench 55,407 (link.json), nvbandwidth 55,420 MB/s); placement:")
    here = line_of(page, "- Here: ")
    assert here.startswith("- Here: the raw pinned copy, streamed, at 256 MiB (268 MB): 55.4 GB/s (link.json). ")
    assert line_of(page, "- Health-check floor: ").endswith(" Above it.")
    lines = page.splitlines()
    assert lines[2].startswith("**FAIL**: failed: every sweep ran to the end; could not run: torch pinned_into")
    assert PEER_CHECK not in lines[2]
    assert lines[2].endswith("Made by xferbench 0.1.0+source on 2026-11-26 (--quick: a smoke test, not a validation); this verdict made"
                             f" again from its files by xferbench {validate_command.xferbench.__version__} on {time.strftime('%Y-%m-%d')},"
                             " measuring nothing.")  # fmt: skip
    assert lines[4] == ("Run within --max-minutes 1.5 (estimated 2.8 min, took 0.4 min): nvbandwidth took 1 sample per size (-i 1), not"
                        " its default 3; the peers measured 2 of 6 sizes (48 MiB (50.3 MB), 256 MiB (268 MB)); the large sweep left out"
                        " batches 1, 16 of 1 MiB images (kept 256).")  # as the run's own verdict said it, not as this xferbench plans
    assert lines[6] == "Not in this folder: default.json, large.json, default.png, large.png."
    assert checks["every sweep ran to the end"].figure == "default.json: not in the folder; large.json: not in the folder"
    assert "| 256 MiB (268 MB) | 55,407 | 55,420 | 55,400 |" in page
    assert "\nxferbench's figures in this table are from link.json's long run at 256 MiB (268 MB), where no sweep measured it.\n" in page
    assert "\n- default.json was not started: the run's --max-minutes budget was spent\n" in page  # the run's notes, kept


@pytest.mark.parametrize("run", [1, 2])
def test_runs_1_and_2_say_nvbandwidth_ran_without_numactl(run: int) -> None:
    """nvbandwidth ran without numactl there (peers/commands.txt) while xferbench's workers were bound to node 0, and
    bandwidthTest under numactl: the peers section says so of nvbandwidth alone, and so does the peer check's figure."""
    page, checks = reread(folder_of(run))
    assert page.count("\n- Placement: ") == 1 and f"\n{UNBOUND_NVB}\n" in page
    peer = checks[PEER_CHECK]
    assert peer.status == PASS
    assert peer.figure.endswith("; nvbandwidth did not run on the binding xferbench's workers had; placement: xferbench"
                                f" {OURS_AT}; nvbandwidth its own CPU binding only (no numactl: memory wherever it landed)")  # fmt: skip


def test_runs_under_numactl_say_nothing_of_placement_beyond_it() -> None:
    page, checks = reread(folder_of(5))
    assert "- Placement: " not in page and "did not run on the binding" not in checks[PEER_CHECK].figure
    assert checks[PEER_CHECK].figure.endswith(f"placement: xferbench {OURS_AT}; nvbandwidth under numactl --cpunodebind=0 --membind=0")


def test_a_sweeps_figure_stands_where_link_json_has_the_same_size() -> None:
    """run-5's large sweep streamed 256 MiB at 55,473 MB/s, its link run at 55,468: the sweep's is the one set beside
    nvbandwidth, and the files each size came from are named."""
    _, checks = reread(folder_of(5))
    assert checks[PEER_CHECK].figure.startswith(
        "median +0.0% over 3 sizes (worst +0.0% at 256 MiB (268 MB): xferbench 55,473 (large.json), nvbandwidth 55,446 MB/s); xferbench's"
        " figures from default.json at 96 MiB, large.json at 256 MiB and 1024 MiB;")
    assert checks["raw pinned ceiling within 80%–100% of the theoretical link"].figure.startswith(
        "cuda/raw_pinned/copy/streamed@cuda:0 (large.json): 55,508 MB/s")
    assert checks["NVML's count of bytes received within -10% / +35% of the bytes claimed (longest cuda/raw_pinned run)"].figure.startswith(
        "cuda/raw_pinned/copy/streamed@cuda:0 (link.json): claimed 559 GB")


@pytest.mark.parametrize("run", [1, 2, 3, 4, 5])
def test_each_committed_folder_reads_again_to_the_verdict_its_run_gave(run: int) -> None:
    """The answer (PASS or FAIL) each run gave stands, and the checks that failed are the same ones."""
    page, checks = reread(folder_of(run))
    committed = (folder_of(run) / "verdict.md").read_text().splitlines()[2]
    assert page.splitlines()[2].split(": ", 1)[0] == committed.split(": ", 1)[0]
    failed = [name for name, check in checks.items() if check.status == FAIL]
    assert failed == ([] if run in (2, 5) else ["every sweep ran to the end"])


# the command


def test_the_command_prints_the_verdict_and_writes_nothing_into_the_folder() -> None:
    for run, code in ((2, 0), (3, 1)):
        before = snapshot(folder_of(run))
        said = CliRunner().invoke(app, ["validate", "--reread", str(folder_of(run))])
        assert said.exit_code == code, said.output
        assert said.stdout == reread(folder_of(run))[0]
        assert snapshot(folder_of(run)) == before
    assert said.stderr == f"note: not in {folder_of(3)}: default.json, large.json, default.png, large.png\n"


def test_out_writes_the_verdict_there_and_replaces_a_file_only_when_asked(tmp_path) -> None:
    target = tmp_path / "run-2-verdict.md"
    said = CliRunner().invoke(app, ["validate", "--reread", str(folder_of(2)), "-o", str(target)])
    assert said.exit_code == 0 and target.read_text() == reread(folder_of(2))[0]
    assert said.stdout.startswith("| check | result | figure |") and said.stderr == f"wrote {target}\n"
    again = CliRunner().invoke(app, ["validate", "--reread", str(folder_of(2)), "-o", str(target)])
    assert again.exit_code == 2 and again.stderr == f"error: {target} already exists; choose another --out, or add --overwrite to replace it\n"
    target.write_text("old")
    assert CliRunner().invoke(app, ["validate", "--reread", str(folder_of(2)), "-o", str(target), "--overwrite"]).exit_code == 0
    assert target.read_text() == reread(folder_of(2))[0]
    into = CliRunner().invoke(app, ["validate", "--reread", str(folder_of(3)), "-o", f"{tmp_path}/"])
    assert into.exit_code == 1 and (tmp_path / "verdict.md").read_text() == reread(folder_of(3))[0]


def copied(run: int, tmp_path: Path, leave_out: tuple[str, ...] = ()) -> Path:
    """A copy of a committed run's folder, without the files named."""
    folder = tmp_path / f"run-{run}" / "validation"
    shutil.copytree(folder_of(run), folder)
    for name in leave_out:
        (folder / name).unlink()
    return folder


def test_without_its_verdict_the_budget_is_not_recorded_and_a_peers_own_output_is_read(tmp_path) -> None:
    """No verdict.md and no validate.log: the budget and the run's notes are said not recorded, never guessed; the
    device and --quick come from the result files; nvbandwidth's figures are read from its own output in memory."""
    folder = copied(1, tmp_path, ("verdict.md", "peer-nvbandwidth.json"))
    before = snapshot(folder)
    page, checks = reread(folder)
    lines = page.splitlines()
    assert lines[0] == "# xferbench validation: NVIDIA H200 (cuda:0) on vm"
    assert lines[2].endswith("Made by xferbench 0.0.0+unknown on 2026-11-26; this verdict made again from its files by xferbench"
                             f" {validate_command.xferbench.__version__} on {time.strftime('%Y-%m-%d')}, measuring nothing.")  # fmt: skip
    assert lines[4] == validate_command.BUDGET_NOT_RECORDED
    assert lines[6:9] == ["Not in this folder: verdict.md, peer-nvbandwidth.json.", "",
                          "nvbandwidth's figures were read from peers/nvbandwidth.json, as peer-nvbandwidth.json is not in the folder."]
    assert checks[PEER_CHECK].status == PASS and "nvbandwidth 55,327 MB/s" in checks[PEER_CHECK].figure
    assert f"\n{UNBOUND_NVB}\n" in page  # its commands, read from its own output, show no numactl
    assert "stopped after" not in page  # the run's notes went with its verdict
    assert snapshot(folder) == before


def test_without_its_verdict_the_budget_comes_from_the_log_beside_the_folder(tmp_path) -> None:
    folder = copied(1, tmp_path, ("verdict.md",))
    shutil.copy(RUNS / "run-1" / "validate.log", folder.parent / "validate.log")
    page, _ = reread(folder)
    assert page.splitlines()[4] == (
        "Run within --max-minutes 4.5 (estimated 4.5 min, time taken not recorded; read from validate.log beside the folder): nvbandwidth"
        " took 1 sample per size (-i 1), not its default 3; the peers measured 3 of 18 sizes (96 MiB (101 MB), 256 MiB (268 MB), 1024"
        " MiB (1.07 GB)); the large sweep left out batches 1, 4, 16, 64, 128, 512 of 1 MiB images (kept 256, 1024).")
    assert "\n- default.json was stopped after 77 s, keeping what it had measured" in page  # the log's warnings are the run's notes



def test_a_log_whose_plan_says_its_seconds_gives_the_estimate_to_the_second(tmp_path) -> None:
    """The plan's head now says its seconds beside its minutes; the older head, minutes alone, still reads."""
    folder = copied(1, tmp_path, ("verdict.md",))
    log = (RUNS / "run-1" / "validate.log").read_text()
    assert "plan: about 4.5 min in all, within --max-minutes 4.5" in log
    (folder.parent / "validate.log").write_text(log.replace("plan: about 4.5 min in all,", "plan: about 4.5 min in all (268 s),"))
    run, _, _, _, record = validate_command.reread(folder)
    assert record.estimated_s == 268.0 and run.max_minutes == 4.5 and record.budget_from == "validate.log beside the folder"


def test_a_run_without_a_budget_says_the_time_it_took_beside_its_estimate_and_reads_it_again(tmp_path) -> None:
    folder = copied(3, tmp_path, ())
    run, files, imported, notes, _ = validate_command.reread(folder)
    run.max_minutes, run.took_s = None, 75.0  # as a run without --max-minutes ends
    checks = validate_command.checks_for(files, imported, run.device)
    page = validate_command.verdict_page(run, files, imported, checks, notes)
    assert f"\nRun took 1.2 min (estimated {validate_command.budget.minutes(run.estimate_s())}).\n" in page
    (folder / "verdict.md").write_text(page)
    again, _, _, _, record = validate_command.reread(folder)
    assert again.took_s == 72.0 and record.estimated_s == float(validate_command.budget.minutes(run.estimate_s()).split()[0]) * 60
    page_again, _ = reread(folder)
    assert "\nRun took 1.2 min (estimated " in page_again and "Run within" not in page_again


def drop(text: str, *parts: str) -> str:
    for part in parts:
        text = text.replace(part, "")
    return text


def test_a_verdict_made_again_reads_again_to_itself(tmp_path) -> None:
    """What a re-read writes is read back as the run's record: the same page, line for line."""
    for run, leave_out in ((3, ()), (1, ("verdict.md",))):
        folder = copied(run, tmp_path, leave_out)
        first, _ = reread(folder)
        (folder / "verdict.md").write_text(first)
        second, _ = reread(folder)
        verdict_said = ("Not in this folder: verdict.md.\n\n", "- `verdict.md`: the one-page verdict: start here\n")  # it is there now
        assert drop(second, *verdict_said) == drop(first, *verdict_said)


def test_only_the_files_there_are_read(tmp_path) -> None:
    """A folder left with one peer's figures: every check but the peers' n/a, each saying why; the GPU's facts unknown."""
    folder = tmp_path / "validation"
    folder.mkdir()
    shutil.copy(folder_of(3) / "peer-bandwidthtest.json", folder)
    page, checks = reread(folder)
    assert checks["every sweep ran to the end"].figure == ("default.json: not in the folder; large.json: not in the folder;"
                                                           " link.json: not in the folder")  # fmt: skip
    assert checks[PEER_CHECK].status == NA and checks["raw pinned ceiling within 80%–100% of the theoretical link"].status == NA
    assert page.splitlines()[4] == validate_command.BUDGET_NOT_RECORDED
    assert "No file records the validated GPU: cuda:0 is taken (give --device)." in page.splitlines()


# bad input


def file_at(path: Path) -> Path:
    path.write_text("")
    return path


@pytest.mark.parametrize("make, args, message", [
    (lambda tmp: tmp / "none", [], "{folder}: no such folder; give the folder `xferbench validate` wrote"),
    (lambda tmp: file_at(tmp / "file"), [], "{folder}: a file, not a folder; give the folder"),
    (lambda tmp: tmp, [], "{folder} holds none of a validation's files (verdict.md, report.md, default.json, large.json, link.json, ...)"),
    (lambda tmp: copied(2, tmp) / "default.json", [], "a file, not a folder"),
    (lambda tmp: folder_of(2), ["--quick"], "--quick measures, and --reread measures nothing: leave it out to re-read a folder"),
    (lambda tmp: folder_of(2), ["--max-minutes", "3"], "--max-minutes measures, and --reread measures nothing"),
    (lambda tmp: folder_of(2), ["--device", "mps"], "--device mps: validate checks a CUDA GPU (cuda or cuda:N)"),
])  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(make, args, message, tmp_path) -> None:
    folder = make(tmp_path)
    said = CliRunner().invoke(app, ["validate", "--reread", str(folder), *args])
    assert said.exit_code == 2 and said.stdout == "" and "Traceback" not in said.output
    assert said.stderr.startswith("error: ") and message.format(folder=folder) in said.stderr and said.stderr.count("\n") == 1


@pytest.mark.parametrize("name, text, said", [
    ("default.json", "{", "default.json: not an xferbench result file (not JSON"),
    ("peer-nvbandwidth.json", "[]", "peer-nvbandwidth.json: not an xferbench result file (no 'schema'"),
    ("verdict.md", b"\xff\xfe", "verdict.md: cannot read: not UTF-8 text"),
])  # fmt: skip
def test_a_damaged_file_names_itself_and_what_to_do(name, text, said, tmp_path) -> None:
    folder = copied(2, tmp_path)
    (folder / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    result = CliRunner().invoke(app, ["validate", "--reread", str(folder)])
    assert result.exit_code == 2 and "Traceback" not in result.output and result.stderr.count("\n") == 1
    assert f"{folder}{os.sep}{said}" in result.stderr
    assert result.stderr.rstrip().endswith("restore it from the run's pack, or move it out of the folder to re-read the rest")


def test_out_and_no_folder_go_with_reread_only() -> None:
    said = CliRunner().invoke(app, ["validate", "runs/x", "-o", "a.md"])
    assert said.exit_code == 2 and said.stderr == "error: --out goes with --reread: a validation writes verdict.md into its own folder\n"
    said = CliRunner().invoke(app, ["validate", "--reread"])
    assert said.exit_code == 2 and said.stderr == "error: --reread needs the validation folder to read: xferbench validate --reread FOLDER\n"
