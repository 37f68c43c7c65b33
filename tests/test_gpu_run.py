"""scripts/gpu_run.sh, the one command a GPU machine runs, dry-run on the CPU with stand-ins for CuPy,
NVML, nvidia-smi and both peers; and the checks read again from the files a real run brought back
(an H200, results/nvidia-h200/2026-11-26), so what the run showed stays shown."""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from test_validate_command import gpu_machine_environment

from xferbench.health import validation_checks, validate_command
from xferbench.core.results import load

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "gpu_run.sh"
H200 = REPO / "results" / "nvidia-h200" / "2026-11-26"
NAME = re.compile(r"^[A-Za-z0-9._-]+$")  # what the GPU machine brings back


@pytest.mark.slow
def test_the_dry_run_packs_the_evidence_in_eight_files_and_holds_its_time_boxes(tmp_path) -> None:
    environment = gpu_machine_environment(tmp_path)
    kit = tmp_path / "kit"
    kit.mkdir()
    (kit / "build.sh").write_text(f"touch {tmp_path / 'built'}\n")
    slow_test = tmp_path / "test_slow.py"
    slow_test.write_text("import time\nimport pytest\n\n@pytest.mark.gpu\ndef test_waits():\n    time.sleep(60)\n")
    out = tmp_path / "out"
    environment.update(OUT=str(out), PEERS_KIT=str(kit), NVCC=str(tmp_path / "no-nvcc"), PYTHON=sys.executable,
                       VALIDATE_ARGS="--quick -f cuda", VALIDATE_MINUTES="3", GPU_TESTS=str(slow_test), GPU_TESTS_SELECT="waits",
                       TESTS_S="3", GPU_SWEEPS="small=-f sim --batch-sizes 1,2 --min-time 0.01;no name here",
                       SWEEP_S="60")  # fmt: skip
    ran = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=600, env=environment, cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]

    packed = sorted(p.name for p in out.iterdir())
    assert packed == ["gpu-run.txt", "gpu-tests.txt", "nvidia-smi-q.txt", "nvidia-smi-topo.txt", "sweeps.tar.gz", "validate.log",
                      "validation.tar.gz"]  # fmt: skip
    assert len(packed) <= 8 and all(NAME.match(n) for n in packed) and all((out / n).is_file() for n in packed)
    summary = (out / "gpu-run.txt").read_text()
    steps = dict(re.findall(r"^(\S+) +(.+?)\s*$", summary.split("## steps")[1].split("## the pack")[0], re.MULTILINE))
    assert steps["peers-build"] == f"skipped                                      no nvcc at {tmp_path / 'no-nvcc'} to build them with;" \
                                   " validate uses the peers on PATH, if any"  # fmt: skip
    assert not (tmp_path / "built").exists()
    validate_log = (out / "validate.log").read_text()
    assert steps["validate"].startswith("failed") and "exit 1 " in steps["validate"], validate_log[-3000:]  # a memmove is no Gen5 link
    assert steps["gpu-tests"].startswith("timed out after 3 s (partial output kept)") and "exit 124" in steps["gpu-tests"]
    assert steps["check"].split()[0] in ("ok", "failed"), steps["check"]  # check ran, timed, whatever it judged
    assert "KeyboardInterrupt" in (out / "gpu-tests.txt").read_text()  # stopped by INT: pytest wrote what it had
    assert steps["sweep-small"].startswith("ok") and steps["sweep"].startswith("skipped") and "NAME=ARGUMENTS" in steps["sweep"]
    with tarfile.open(out / "sweeps.tar.gz") as archive:
        archive.extractall(tmp_path / "sweeps", filter="data")
    swept = load(tmp_path / "sweeps" / "sweeps" / "small.json")
    assert [p.batch_size for p in swept.series[0].points] == [1, 2] and swept.series[0].framework == "sim"
    assert (tmp_path / "sweeps" / "sweeps" / "small.log").read_text().count("saved") >= 1
    assert (tmp_path / "sweeps" / "sweeps" / "check.log").exists()
    assert steps["nvidia-smi-q"].startswith("ok") and "Fake GPU" in (out / "nvidia-smi-q.txt").read_text()

    with tarfile.open(out / "validation.tar.gz") as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
    folder = tmp_path / "unpacked" / "validation"
    verdict = (folder / "verdict.md").read_text()
    took = float(re.search(r"Run within --max-minutes 3 \(estimated [\d.]+ min, took ([\d.]+) min\)", verdict).group(1))
    assert took <= 3
    # The plan the validation printed counts what it ran: every point, every peer command. On a busy machine
    # a sweep can outrun its share of the budget: it is then stopped, keeping what it measured, and the log says so.
    log = validate_log
    for stem in ("default", "large", "link"):
        planned = int(re.search(rf"^  {stem}\.json: \d+ series x \d+ batches = (\d+) points", log, re.MULTILINE).group(1))
        path = folder / f"{stem}.json"
        measured = sum(len(s.points) for s in load(path).series if s.status != "skipped") if path.exists() else 0
        cut = re.search(rf"^warning: {stem}\.json was (stopped after \d+ s|not started)", log, re.MULTILINE)
        assert measured == planned or (cut is not None and measured < planned), (stem, planned, measured, log[-3000:])
    runs = {name: int(n) for name, n in re.findall(r"^  (nvbandwidth|bandwidthTest): (\d+) runs", log, re.MULTILINE)}
    commands = (folder / "peers" / "commands.txt").read_text().splitlines()
    assert runs["nvbandwidth"] == sum("nvbandwidth -j" in c for c in commands)
    assert runs["bandwidthTest"] == sum("bandwidthTest --device" in c for c in commands)


def test_a_step_never_runs_past_the_whole_commands_deadline_and_one_left_no_time_is_said(tmp_path) -> None:
    environment = gpu_machine_environment(tmp_path)
    out = tmp_path / "out"
    environment.update(OUT=str(out), PEERS_KIT=str(tmp_path / "no-kit"), NVCC=str(tmp_path / "no-nvcc"), PYTHON=sys.executable,
                       TOTAL_S="0", GPU_SWEEPS="small=-f sim --batch-sizes 1")  # fmt: skip
    ran = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=300, env=environment, cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    summary = (out / "gpu-run.txt").read_text()
    steps = dict(re.findall(r"^(\S+) +(.+?)\s*$", summary.split("## steps")[1].split("## the pack")[0], re.MULTILINE))
    for name in ("nvidia-smi-q", "topo", "validate", "check", "sweep-small", "gpu-tests"):
        assert steps[name].startswith("skipped") and "were left of TOTAL_S=0" in steps[name], (name, summary)
    assert not (out / "validate.log").exists() and not (out / "gpu-tests.txt").exists()


def test_steps_choose_what_runs_and_the_others_are_said_left_out(tmp_path) -> None:
    environment = gpu_machine_environment(tmp_path)
    out = tmp_path / "out"
    environment.update(OUT=str(out), PYTHON=sys.executable, STEPS="sweeps", TOTAL_S="120",
                       GPU_SWEEPS="small=-f sim --batch-sizes 1 --min-time 0.01")  # fmt: skip
    ran = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=300, env=environment, cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    summary = (out / "gpu-run.txt").read_text()
    steps = dict(re.findall(r"^(\S+) +(.+?)\s*$", summary.split("## steps")[1].split("## the pack")[0], re.MULTILINE))
    assert steps["sweep-small"].startswith("ok")
    for name in ("smi", "build", "validate", "check", "tests"):
        assert steps[name] == "skipped                                      not among STEPS (sweeps)", (name, summary)
    assert sorted(p.name for p in out.iterdir()) == ["gpu-run.txt", "sweeps.tar.gz"]
    refused = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60,
                             env={**environment, "STEPS": "sweeps peers"})  # fmt: skip
    assert refused.returncode == 2 and refused.stderr.startswith("error: STEPS: no step 'peers'; give some of:")


def test_a_total_that_is_not_seconds_is_refused_before_anything_runs(tmp_path) -> None:
    ran = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "OUT": str(tmp_path / "out"), "TOTAL_S": "8m"})  # fmt: skip
    assert ran.returncode == 2 and ran.stderr.startswith("error: TOTAL_S=8m is not a whole number of seconds")
    assert not (tmp_path / "out" / "gpu-run.txt").exists()


def test_without_out_it_says_what_to_set(tmp_path) -> None:
    ran = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert ran.returncode == 2 and ran.stderr.startswith("error: set OUT to the folder the pack is written to")


def _h200(run: str) -> dict[str, object]:
    folder = H200 / run / "validation"
    return {stem: load(folder / f"{stem}.json") for stem in ("default", "large", "link", "peer-nvbandwidth", "peer-bandwidthtest")}


def test_the_h200_run_passes_every_check_read_again_from_its_files() -> None:
    files = _h200("run-2")
    ours = [files[s] for s in ("default", "large", "link")]
    checks = {c.name: c for c in validation_checks.run_checks(ours)}
    assert all(c.status in (validation_checks.PASS, validation_checks.INFO) for c in checks.values()), [c for c in checks.values() if c.status != "pass"]
    ceiling = checks["raw pinned ceiling within 80%–100% of the theoretical link"]
    assert "55,503 MB/s = 88.1% of PCIe Gen5 x16" in ceiling.figure
    peers = validate_command.peers_check(ours[:2], files["peer-nvbandwidth"], "cuda:0")
    assert peers.status == validation_checks.PASS and peers.figure.startswith("median -0.1% over 3 sizes (worst -0.3% at 256 MiB")
    # the H200 ran nvbandwidth before peers were bound: the verdict says so beside xferbench's binding
    assert peers.figure.endswith("placement: xferbench bound to CPUs 0-15, memory preferred on NUMA node 0; nvbandwidth its own"
                                 " CPU binding only (no numactl: memory wherever it landed)")  # fmt: skip
    table = validate_command.peers_table(ours[:2], {"nvbandwidth": files["peer-nvbandwidth"], "bandwidthTest": files["peer-bandwidthtest"]}, "cuda:0")
    row = next(line for line in table if line.startswith("| 1024 MiB"))
    assert row.split(" | ")[-3:-1] == ["1.001", "1.000"]  # streamed against nvbandwidth and bandwidthTest pinned


def test_the_first_h200_run_whose_sweeps_were_cut_at_their_share_does_not_pass() -> None:
    files = _h200("run-1")
    check = validation_checks.completed_check({f"{s}.json": files[s] for s in ("default", "large", "link")})
    assert check.status == validation_checks.FAIL and check.figure == "default.json: interrupted; large.json: interrupted"
    verdict = (H200 / "run-1" / "validation" / "verdict.md").read_text()
    assert verdict.startswith("# xferbench validation: NVIDIA H200 (cuda:0) on vm\n\n**FAIL**: failed: every sweep ran to the end")
