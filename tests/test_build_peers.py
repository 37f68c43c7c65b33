"""scripts/build_peers.sh, run on the CPU: stand-ins for nvcc and cmake record how they were called
and write the binary the build expects, and the sources are placeholder files laid out as the
script's --from folder holds them. Nothing here reaches the network."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "build_peers.sh"

# Each stand-in appends one line per call (its arguments, quoted) and writes what the real tool would.
NVCC = """#!/usr/bin/env bash
printf '%q ' "$@" >> "$CALLS/nvcc"; echo >> "$CALLS/nvcc"
while [ $# -gt 0 ]; do
  if [ "$1" = -o ]; then printf '#!/bin/sh\\necho fake bandwidthTest\\n' > "$2"; chmod +x "$2"; fi
  shift
done
"""
CMAKE = """#!/usr/bin/env bash
printf '%q ' "$@" >> "$CALLS/cmake"; echo >> "$CALLS/cmake"
if [ "$1" = -S ] && [ "$3" = -B ]; then mkdir -p "$4"; fi
if [ "$1" = --build ]; then printf '#!/bin/sh\\necho fake nvbandwidth\\n' > "$2/nvbandwidth"; chmod +x "$2/nvbandwidth"; fi
"""
FAILING_GIT = "#!/bin/sh\necho 'fatal: unable to access: Could not resolve host: github.com' >&2\nexit 128\n"


def _tool(folder: Path, name: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    (folder / name).chmod(0o755)


def _sources(root: Path) -> Path:
    for path in ("nvbandwidth/CMakeLists.txt", "nvbandwidth/nvbandwidth.cpp", "bandwidthTest/bandwidthTest.cu",
                 "bandwidthTest/Common/helper_cuda.h", "bandwidthTest/Common/helper_functions.h"):  # fmt: skip
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("// placeholder\n")
    return root


def _setup(tmp_path: Path, *, nvcc: bool = True, boost: bool = True, git: bool = False) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    if nvcc:
        _tool(bin_dir, "nvcc", NVCC)
    _tool(bin_dir, "cmake", CMAKE)
    if git:
        _tool(bin_dir, "git", FAILING_GIT)
    for tool in ("bash", "sh", "env", "dirname", "readlink", "mktemp", "mkdir", "rm", "cp", "chmod", "sed", "tr",
                 "paste", "head", "ls", "find", "nproc", "cat", "basename"):  # fmt: skip
        found = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        if found and not (bin_dir / tool).exists():
            (bin_dir / tool).symlink_to(found)
    boost_root = tmp_path / "boost"
    if boost:
        (boost_root / "include" / "boost").mkdir(parents=True)
        (boost_root / "include" / "boost" / "program_options.hpp").write_text("// placeholder\n")
    calls = tmp_path / "calls"
    calls.mkdir()
    # PATH holds only the stand-ins and the few tools linked beside them: no real nvcc, cmake, git or ninja.
    return {"PATH": str(bin_dir), "CALLS": str(calls), "BOOST_ROOT": str(boost_root), "TMPDIR": str(tmp_path), "HOME": str(tmp_path)}


def _run(tmp_path: Path, environment: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60, env=environment, cwd=tmp_path)


def _calls(tmp_path: Path, tool: str) -> list[list[str]]:
    path = tmp_path / "calls" / tool
    return [shlex.split(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_both_peers_are_built_from_a_local_folder_with_the_pinned_flags(tmp_path) -> None:
    environment = _setup(tmp_path)
    sources = _sources(tmp_path / "src")
    out = tmp_path / "out"
    ran = _run(tmp_path, environment, "--from", str(sources), "--out", str(out), "--work", str(tmp_path / "work"))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"nvbandwidth: {out / 'nvbandwidth'}" in ran.stdout.splitlines()
    assert f"bandwidthTest: {out / 'bandwidthTest'}" in ran.stdout.splitlines()
    assert f"sources: {sources}" in ran.stdout
    for name in ("nvbandwidth", "bandwidthTest"):
        assert os.access(out / name, os.X_OK)

    configure, build = _calls(tmp_path, "cmake")
    work = tmp_path / "work"
    # built from a copy outside the source folder, so `git describe` there names no enclosing repository
    assert configure[configure.index("-S") + 1] == str(work / "src" / "nvbandwidth")
    assert (work / "src" / "nvbandwidth" / "nvbandwidth.cpp").exists()
    assert "-DCMAKE_BUILD_TYPE=Release" in configure and "-DCMAKE_CUDA_ARCHITECTURES=90" in configure
    assert f"-DCMAKE_CUDA_COMPILER={tmp_path / 'bin' / 'nvcc'}" in configure
    assert f"-DCMAKE_PREFIX_PATH={tmp_path / 'boost'}" in configure and "-DCMAKE_POLICY_DEFAULT_CMP0167=NEW" in configure
    assert build[:2] == ["--build", str(work / "nvbandwidth-build")]

    (compile_bt,) = _calls(tmp_path, "nvcc")
    assert compile_bt[:2] == ["-O3", "-std=c++17"]
    gencodes = [compile_bt[i + 1] for i, a in enumerate(compile_bt) if a == "-gencode"]
    assert gencodes == ["arch=compute_90,code=sm_90", "arch=compute_90,code=compute_90"]
    assert f"-I{sources / 'bandwidthTest' / 'Common'}" in compile_bt
    assert compile_bt[compile_bt.index("-include") + 1] == str(REPO / "scripts" / "peers" / "cuda13_compute_mode.h")
    assert compile_bt[-3:] == ["-o", str(out / "bandwidthTest"), str(sources / "bandwidthTest" / "bandwidthTest.cu")]


def test_more_architectures_give_each_its_code_and_the_last_its_ptx(tmp_path) -> None:
    environment = _setup(tmp_path)
    ran = _run(tmp_path, environment, "--from", str(_sources(tmp_path / "src")), "--out", str(tmp_path / "out"), "--archs", "90;100")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "-DCMAKE_CUDA_ARCHITECTURES=90;100" in _calls(tmp_path, "cmake")[0]
    (compile_bt,) = _calls(tmp_path, "nvcc")
    assert [compile_bt[i + 1] for i, a in enumerate(compile_bt) if a == "-gencode"] == [
        "arch=compute_90,code=sm_90", "arch=compute_100,code=sm_100", "arch=compute_100,code=compute_100"]  # fmt: skip


def test_a_missing_nvcc_is_one_line_naming_what_to_install_and_builds_nothing(tmp_path) -> None:
    environment = _setup(tmp_path, nvcc=False)
    out = tmp_path / "out"
    ran = _run(tmp_path, environment, "--from", str(_sources(tmp_path / "src")), "--out", str(out))
    assert ran.returncode == 2
    assert ran.stderr.startswith("error: nvcc not found") and "install the CUDA toolkit" in ran.stderr
    assert len(ran.stderr.splitlines()) == 1
    assert _calls(tmp_path, "cmake") == [] and not out.exists()


def test_missing_boost_is_one_line_naming_the_package_and_builds_nothing(tmp_path) -> None:
    environment = _setup(tmp_path, boost=False)
    ran = _run(tmp_path, environment, "--from", str(_sources(tmp_path / "src")), "--out", str(tmp_path / "out"))
    assert ran.returncode == 2 and len(ran.stderr.splitlines()) == 1
    assert ran.stderr.startswith("error: Boost program_options not found") and "libboost-program-options-dev" in ran.stderr
    assert _calls(tmp_path, "cmake") == [] and _calls(tmp_path, "nvcc") == []


def test_an_unknown_option_exits_2(tmp_path) -> None:
    environment = _setup(tmp_path)
    ran = _run(tmp_path, environment, "--frm", str(tmp_path))
    assert ran.returncode == 2 and ran.stderr == "error: unknown option '--frm'; see the options at the top of scripts/build_peers.sh\n"
    assert _calls(tmp_path, "cmake") == [] and _calls(tmp_path, "nvcc") == []


def test_a_from_folder_without_the_sources_says_what_it_must_hold(tmp_path) -> None:
    environment = _setup(tmp_path)
    (tmp_path / "empty").mkdir()
    ran = _run(tmp_path, environment, "--from", str(tmp_path / "empty"))
    assert ran.returncode == 2 and len(ran.stderr.splitlines()) == 1
    assert "has no nvbandwidth/CMakeLists.txt" in ran.stderr


def test_without_from_and_with_git_failing_it_says_to_give_from(tmp_path) -> None:
    environment = _setup(tmp_path, git=True)
    out = tmp_path / "out"
    ran = _run(tmp_path, environment, "--out", str(out))
    assert ran.returncode == 2
    assert "fetching nvbandwidth v0.8 and cuda-samples v12.8 with git" in ran.stdout
    error = ran.stderr.splitlines()[-1]
    assert error.startswith("error: could not fetch https://github.com/NVIDIA/nvbandwidth.git at v0.8") and "give --from DIR" in error
    assert _calls(tmp_path, "cmake") == [] and _calls(tmp_path, "nvcc") == [] and not (out / "nvbandwidth").exists()


def test_gpu_run_without_a_kit_builds_the_peers_from_peers_src_and_hands_them_to_validate(tmp_path) -> None:
    environment = _setup(tmp_path)
    # python3 stands in too: it answers gpu_run's arithmetic and records every other call (validate, pytest)
    real_python = subprocess.run(["bash", "-c", "command -v python3"], capture_output=True, text=True).stdout.strip()
    _tool(tmp_path / "bin", "python3", f'#!/bin/sh\nif [ "$1" = -c ]; then exec {real_python} "$@"; fi\n'
                                       'printf "%s\\n" "$*" >> "$CALLS/python"\n')  # fmt: skip
    out = tmp_path / "pack"
    environment.update(OUT=str(out), PEERS_KIT=str(tmp_path / "no-kit"), PEERS_SRC=str(_sources(tmp_path / "src")),
                       PATH=f"{environment['PATH']}:/usr/bin:/bin")  # fmt: skip
    ran = subprocess.run(["bash", str(REPO / "scripts" / "gpu_run.sh")], capture_output=True, text=True, timeout=60, env=environment, cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    summary = (out / "gpu-run.txt").read_text()
    assert "scripts/build_peers.sh --work" in summary and f"--from {tmp_path / 'src'}" in summary
    assert "peers-build    ok" in summary
    (validate,) = [c for c in (tmp_path / "calls" / "python").read_text().splitlines() if " validate " in c]
    peers = validate.split("--peer ")[1:]
    assert [Path(p.split()[0]).name for p in peers] == ["nvbandwidth", "bandwidthTest"]
    assert (out / "peers-build.tar.gz").is_file() and len(_calls(tmp_path, "nvcc")) == 1
