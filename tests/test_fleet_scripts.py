"""The fleet recipes in scripts/fleet/, run as far as a machine without Slurm, Kubernetes or a GPU
allows: the sbatch script with a stand-in srun (three "nodes") and a stand-in for each node's check,
its summary by the real `xferbench fleet`; the prolog's exit codes; the Job manifest's shape."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLEET = ROOT / "scripts" / "fleet"
TESTS = Path(__file__).resolve().parent


def stand_ins(folder: Path, check_status: int = 0) -> dict[str, str]:
    """srun runs its command once per node with FAKE_HOST set; `xferbench check` writes that node's
    file where %h says (node2's GPU slow), `xferbench fleet` is the real one."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text("#!/bin/bash\nwhile [[ $1 == --* ]]; do shift; done\n"
                                  "for h in node1 node2 node3 node4; do FAKE_HOST=$h \"$@\" || s=$?; done\nexit ${s:-0}\n")  # fmt: skip
    node = (f"import sys; sys.path.insert(0, {str(TESTS)!r}); from pathlib import Path; from nodes import node;"
            f" import os; h = os.environ['FAKE_HOST']; out = sys.argv[sys.argv.index('--out') + 1].replace('%h', h);"
            f" node(h, raw_gbps=30 if h == 'node2' else 55).save(Path(out)); sys.exit({check_status})")  # fmt: skip
    (bin_dir / "xferbench").write_text(
        f"#!/bin/bash\nif [ \"$1\" = check ]; then exec {sys.executable} -c {node!r} \"$@\"; fi\n"
        f"exec {sys.executable} -m xferbench \"$@\"\n"
    )
    for tool in ("srun", "xferbench"):
        (bin_dir / tool).chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SLURM_JOB_ID": "42", "COLUMNS": "200"}


@pytest.mark.slow
def test_the_sbatch_script_checks_each_node_into_its_own_file_then_flags_the_slow_one(tmp_path) -> None:
    env = stand_ins(tmp_path)
    ran = subprocess.run(["bash", str(FLEET / "check.sbatch")], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = tmp_path / "results" / "fleet" / "42"
    assert sorted(p.name for p in out.glob("node*.json")) == ["node1.json", "node2.json", "node3.json", "node4.json"]
    assert ran.returncode == 1, ran.stdout + ran.stderr  # the fleet's verdict: one straggler
    assert "4 GPU(s), 1 flagged" in ran.stdout and "straggler" in (out / "fleet.md").read_text()
    assert (out / "fleet.csv").exists() and (out / "fleet.png").exists()


@pytest.mark.parametrize("status, drains", [(0, False), (1, True), (2, os.path.isdir("/proc/driver/nvidia/gpus"))])
def test_the_prolog_drains_a_node_only_when_its_check_fails(tmp_path, status, drains) -> None:
    """2 (nothing checked) drains only where GPUs are present: here there are none."""
    env = {**stand_ins(tmp_path, status), "FAKE_HOST": "node1", "LOGS": str(tmp_path / "logs"), "XFERBENCH": "xferbench"}
    ran = subprocess.run(["bash", str(FLEET / "prolog.sh")], env=env, capture_output=True, text=True, timeout=120)
    assert (ran.returncode != 0) == drains, ran.stdout + ran.stderr
    assert (tmp_path / "logs" / "node1.json").exists()


def test_the_job_manifest_runs_one_check_per_node_into_a_shared_volume() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed")
    job = yaml.safe_load((FLEET / "check-job.yaml").read_text())
    spec = job["spec"]["template"]["spec"]
    assert job["kind"] == "Job" and job["spec"]["completions"] == job["spec"]["parallelism"]
    (container,) = spec["containers"]
    command = " ".join(container["command"])
    assert "xferbench check --overwrite --out /results/$(NODE_NAME).json" in command and "[ $? -le 1 ]" in command
    assert {"name": "XFERBENCH_HOST", "value": "$(NODE_NAME)"} in container["env"]
    subprocess.run(["sh", "-n", "-c", container["command"][2]], check=True)
    anti = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert anti["topologyKey"] == "kubernetes.io/hostname"


def test_the_scripts_parse() -> None:
    for script in ("check.sbatch", "prolog.sh"):
        subprocess.run(["bash", "-n", str(FLEET / script)], check=True)
