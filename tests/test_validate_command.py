"""`xferbench validate` end to end on the CPU: the real command, its sweeps and workers, with stand-ins
for what only a GPU machine has: CuPy (fake_cupy), NVML (fake_nvml), nvidia-smi, nvbandwidth and
bandwidthTest, each put where the real one would be (PYTHONPATH, PATH)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xferbench.cli import app
from xferbench.core.results import load

REPO = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
UUID = "GPU-01020304-0506-0708-090a-0b0c0d0e0f10"  # fake_cupy's GPU, as NVML writes a UUID

CUPY_SHIM = f"""import sys
sys.path.insert(0, {str(TESTS)!r})
import fake_cupy
sys.modules["cupy"] = fake_cupy
"""
NVML_SHIM = f"""import sys
from types import SimpleNamespace
sys.path.insert(0, {str(TESTS)!r})
from fake_nvml import NodeNVML


class OneGPU(NodeNVML):
    # fake_cupy's one GPU as NVML sees it: the same UUID and PCI address, so the two are matched.
    def nvmlDeviceGetUUID(self, handle):
        return {UUID!r}

    def nvmlDeviceGetPciInfo(self, handle):
        return SimpleNamespace(busId=b"00000000:01:00.0")


gpu = OneGPU("validator", 1, "Fake GPU")
gpu.gen = 5  # the link trains up to Gen5 once data moves
sys.modules[__name__] = gpu
"""
NVIDIA_SMI = """#!/bin/sh
if [ "$1" = "-q" ]; then echo "==============NVSMI LOG=============="; echo "Product Name : Fake GPU"; exit 0; fi
if [ "$1" = "topo" ]; then printf '\\tGPU0\\tCPU Affinity\\tNUMA Affinity\\nGPU0\\t X \\t0-1\\t0\\n'; exit 0; fi
exit 1
"""
# The peers as stand-ins that print what the real tools print (peer_outputs.py). nvbandwidth measures
# every GPU it sees (one where CUDA_VISIBLE_DEVICES names the validated GPU's UUID); -b 1 dies in its
# first testcase, as a CUDA error does. With STANDIN_COPIES set, each makes the copies the real tool
# makes (memmoves, as fake_cupy's are), so it takes about as long as the tool would at this machine's
# rates: nvbandwidth 20 copies (4 warm-up, 16 timed) per sample per test, bandwidthTest 100 per run
# and, from pageable memory, a 256 MiB memset after each to flush the cache.
COPIES = """import numpy as np
def copies(nbytes, count, flush=0):
    source, target = np.ones(nbytes, np.uint8), np.empty(nbytes, np.uint8)
    cache = np.empty(flush, np.uint8)
    for i in range(count):
        np.copyto(target, source)
        cache.fill(i % 256)
"""
NVBANDWIDTH = f"""import os, sys
sys.path.insert(0, {str(TESTS)!r})
import peer_outputs as out
{COPIES}
args = sys.argv[1:]
size = int(args[args.index("-b") + 1])
tests = args[args.index("-t") + 1:]
if os.environ.get("STANDIN_COPIES") and size != 1:
    copies(size * 2**20, len(tests) * int(args[args.index("-i") + 1] if "-i" in args else 3) * 20)
gpus = (("Fake GPU", "00000000:01:00"),)
if os.environ.get("CUDA_VISIBLE_DEVICES") != {UUID!r}:
    gpus += (("Other GPU", "00000000:02:00"),)
if size == 1:
    print(out.nvbandwidth(out.running(tests[0]), gpus=gpus, host="validator", mib=size,
                          error="[CUDA_ERROR_OUT_OF_MEMORY] out of memory in expression cuMemHostAlloc"))
    sys.exit(1)
gbps = {{"host_to_device_memcpy_ce": "4.5", "device_to_host_memcpy_ce": "4.75"}}
print(out.nvbandwidth(*(out.passed(t, *[gbps[t]] * len(gpus)) for t in tests), gpus=gpus, host="validator", mib=size))
"""
BANDWIDTHTEST = f"""import os, sys
sys.path.insert(0, {str(TESTS)!r})
import peer_outputs as out
{COPIES}
opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if "=" in a)
pinned = opts["memory"] == "pinned"
if os.environ.get("STANDIN_COPIES"):
    copies(int(opts["start"]), 100, 0 if pinned else 256 * 2**20)
line = out.csv_line("H2D-Pinned" if pinned else "H2D-Paged", 4.2 if pinned else 2.1, int(opts["start"]))
print(out.bandwidthtest(line, devices=("Fake GPU",)))
"""


def executable(path: Path, text: str, python: bool = True) -> Path:
    path.write_text((f"#!{sys.executable}\n" if python else "") + text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def gpu_machine(tmp_path) -> dict[str, str]:
    return gpu_machine_environment(tmp_path)


def gpu_machine_environment(tmp_path: Path, copies: bool = False) -> dict[str, str]:
    """An environment in which a process sees one CUDA GPU: CuPy and NVML answer from the stand-ins,
    and nvidia-smi, nvbandwidth and bandwidthTest are on PATH (with `copies`, making the copies the real
    tools make, for a run whose time is compared with its estimate)."""
    shims = tmp_path / "shims"
    (shims / "cupy").mkdir(parents=True)
    (shims / "cupy" / "__init__.py").write_text(CUPY_SHIM)
    (shims / "pynvml.py").write_text(NVML_SHIM)
    tools = tmp_path / "bin"
    tools.mkdir()
    executable(tools / "nvidia-smi", NVIDIA_SMI, python=False)
    executable(tools / "nvbandwidth", NVBANDWIDTH)
    executable(tools / "bandwidthTest", BANDWIDTHTEST)
    site = os.pathsep.join(p for p in sys.path if p.endswith("site-packages"))
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(shims), site]), "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}",
            "COLUMNS": "120", "XFERBENCH_HOST": "validator", **({"STANDIN_COPIES": "1"} if copies else {})}  # fmt: skip


@pytest.mark.slow
def test_validate_writes_the_folder_and_the_verdict(gpu_machine, tmp_path) -> None:
    out = tmp_path / "validation"
    # As on a GPU image whose own python3 has the packages and no xferbench installed: the script runs
    # from the checkout (-S leaves out the .pth that installs xferbench in this environment).
    command = [sys.executable, "-S", str(REPO / "scripts" / "validate_gpu.py"), str(out), "--quick", "-f", "cuda"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=900, env=gpu_machine, cwd=tmp_path)
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]  # a memmove is no Gen5 link: checks fail
    found = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert found == ["default.json", "default.png", "large.json", "large.png", "link.json", "link.png",
                     "nvidia-smi-q.txt", "nvidia-smi-topo.txt", "peer-bandwidthtest.json", "peer-nvbandwidth.json",
                     "peers/bandwidthTest.txt", "peers/commands.txt", "peers/nvbandwidth.json", "report.md", "verdict.md"]  # fmt: skip
    verdict = (out / "verdict.md").read_text()
    assert verdict.startswith("# xferbench validation: Fake GPU (cuda:0) on validator\n\n**FAIL**: failed: ")
    assert "| every path's bytes verified | **PASS** |" in verdict
    assert "| streamed raw pinned copy within 3% of nvbandwidth's copy engine from 16 MiB (median) | **FAIL** |" in verdict
    assert "No published host-to-device figure for this model (Fake GPU)" in verdict and "Health-check floor: none published" in verdict
    assert "| 48 MiB (50.3 MB) |" in verdict and "nvbandwidth copy engine" in verdict  # batch 256 of 256x256x3: both measured it
    assert "`peers/nvbandwidth.json`: nvbandwidth's own output" in verdict
    commands = (out / "peers" / "commands.txt").read_text()
    assert "exit 1" in commands and "-b 1 -t" in commands  # the failed run is kept, with its exit code
    raw = json.loads((out / "peers" / "nvbandwidth.json").read_text())
    assert [r["buffer_size_mib"] for r in raw["runs"]] == [1, 3, 16, 48, 256]
    assert all(r["environment"] == {"CUDA_VISIBLE_DEVICES": UUID} for r in raw["runs"])  # shown the validated GPU alone
    assert "- nvbandwidth: nvbandwidth/host_to_device_memcpy_ce/copy/streamed@cuda:0: peers/nvbandwidth.json run 1 (-b 1):" in verdict
    assert "failed (Running): nvbandwidth's error: [CUDA_ERROR_OUT_OF_MEMORY]" in verdict  # a failed peer run is said
    nvb = load(out / "peer-nvbandwidth.json")
    ce = [s for s in nvb.series if s.mode == "host_to_device_memcpy_ce" and s.ok_points()]
    assert {p.bytes for s in ce for p in s.ok_points()} == {3 * 2**20, 16 * 2**20, 48 * 2**20, 256 * 2**20}
    assert all(p.mbps == 4500 for s in ce for p in s.ok_points())
    assert nvb.environment["nvml"]["gpus"][0]["uuid"] == UUID  # the machine's own facts travel with the peer's figures
    assert {s.device for s in nvb.series} == {"cuda:0"} and "Other GPU" not in json.dumps(nvb.environment)
    bt = load(out / "peer-bandwidthtest.json")
    assert {s.mode for s in bt.series} == {"pinned", "pageable"}
    assert "nvbandwidth/host_to_device_memcpy_ce" in (out / "report.md").read_text()
    ours = load(out / "default.json")
    assert [s.label() for s in ours.series if s.ok_points()][:1] == ["cuda/raw_pinned/copy@cuda:0"]
    assert "PASS" in run.stdout and "wrote" in run.stdout

    again = subprocess.run(command, capture_output=True, text=True, timeout=120, env=gpu_machine, cwd=tmp_path)
    assert again.returncode == 2 and "already holds results" in again.stderr and "Traceback" not in again.stderr


def test_without_a_gpu_validate_refuses_in_one_line(tmp_path, monkeypatch) -> None:
    from xferbench.core import environment

    monkeypatch.setattr(environment, "nvidia_gpu_present", lambda: False)
    said = CliRunner().invoke(app, ["validate", str(tmp_path / "v")])
    assert said.exit_code == 2
    assert said.output.startswith("error: nothing to validate: no NVIDIA GPU here") and "Traceback" not in said.output
    assert len(said.output.strip().splitlines()) == 1 and not (tmp_path / "v").exists()


@pytest.mark.parametrize("args, message", [
    (["--device", "cpu"], "--device cpu: validate checks a CUDA GPU (cuda or cuda:N)"),
    (["--peer", "/bin/true"], "--peer /bin/true: not nvbandwidth or bandwidthTest"),
    (["--max-minutes", "0"], "--max-minutes 0: give minutes above 0 and at most 1440"),
    (["--max-minutes", "nan"], "--max-minutes nan: give minutes above 0"),
    (["--max-minutes", "1441"], "--max-minutes 1441: give minutes above 0 and at most 1440"),
])  # fmt: skip
def test_bad_input_exits_2_in_one_line(args, message, monkeypatch) -> None:
    from xferbench.core import environment

    monkeypatch.setattr(environment, "nvidia_gpu_present", lambda: True)
    said = CliRunner().invoke(app, ["validate", *args])
    assert said.exit_code == 2 and message in said.output and "Traceback" not in said.output


def test_a_peer_that_hangs_costs_one_timeout_and_its_other_runs_are_skipped(tmp_path, monkeypatch) -> None:
    from xferbench.health import validate_command

    monkeypatch.setattr(validate_command, "PEER_TIMEOUT_S", 0.5)
    hangs = executable(tmp_path / "bandwidthTest", "import time\ntime.sleep(30)\n")
    run = validate_command.Validation(tmp_path / "v", quick=True, peers={"bandwidthTest": str(hangs)})
    (tmp_path / "v").mkdir()
    log = validate_command.CommandLog(tmp_path / "v" / "peers" / "commands.txt", lambda line: None)
    peer = validate_command.bandwidthtest_peer(str(hangs), run, log, {})
    validate_command.run_bandwidthtest(peer, run)
    assert peer.stopped and "did not finish a run within 0.5 s" in peer.stopped
    assert len((tmp_path / "v" / "peers" / "commands.txt").read_text().splitlines()) == 1  # one try, not one per size
    assert "bandwidthTest ran without NUMA binding (the GPU's NUMA node is unknown)" in peer.notes[0]
    kept = (tmp_path / "v" / "peers" / "bandwidthTest.txt").read_text()
    assert "### exit timed out or could not start" in kept  # written as it ended


def test_nvbandwidth_shown_one_gpu_is_given_the_validated_gpus_id(tmp_path) -> None:
    """Validating cuda:1, nvbandwidth is shown that GPU alone and calls it cuda:0: its figures must be
    filed under cuda:1, beside the same machine's NVML facts for that GPU (matched by PCI address)."""
    import peer_outputs as out

    from xferbench.health import validate_command
    from xferbench.reading.peers import read_nvbandwidth

    first, second = "00000000:18:00.0", "00000000:2a:00.0"
    ours = {"host": "node07", "devices": [{"id": "cpu"}, {"id": "cuda:0", "kind": "cuda", "pci_bus_id": first},
                                          {"id": "cuda:1", "kind": "cuda", "pci_bus_id": second}],
            "nvml": {"available": True, "gpus": [{"index": 0, "pci_bus_id": first, "uuid": "GPU-a"},
                                                 {"index": 1, "pci_bus_id": second, "uuid": "GPU-b"}]}}  # fmt: skip
    raw = tmp_path / "nvb.json"
    raw.write_text(out.nvbandwidth(out.passed("host_to_device_memcpy_ce", "55.2"), gpus=((out.H100, "00000000:2a:00"),)))
    result = read_nvbandwidth([raw], environment=ours)
    validate_command._shown_one(result, "cuda:1")
    assert [s.device for s in result.series] == ["cuda:1"]
    (gpu,) = [d for d in result.environment["devices"] if d["id"].startswith("cuda")]
    assert gpu["id"] == "cuda:1" and gpu["nvml"]["uuid"] == "GPU-b"  # the validated GPU's own facts, not cuda:0's
