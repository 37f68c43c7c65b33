#!/usr/bin/env python3
"""Does TensorFlow's CPU copy fall at batch 171 on this machine, and what decides it?

Why: a NumPy batch passed to TensorFlow is copied on the host twice per call (NumPy's copy, then
TensorFlow's unless oneDNN's pool serves it). From batch 171 (just over glibc's 32 MiB mmap ceiling)
each buffer glibc cannot serve from free heap space is a fresh mapping that the kernel faults in on
every call. Whether that happens, and how far the copy falls, depends on oneDNN (which TensorFlow
turns on by itself on CPUs with AVX512_VNNI, AVX512_BF16, AVX_VNNI or AMX), on transparent huge
pages, and on what the process left free on its heap, which differs from run to run. This runs the
same small sweep under each setting, several times, and prints one line per series.

Run: .venv/bin/python scripts/tf_cliff.py [--repeats N] [--out FOLDER]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from xferbench.core.results import load

TUNABLES = "glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=1073741824"
# Each setting: its name and the environment variables it sets (None: left as the user has it).
SETTINGS = {
    "default": {},
    "oneDNN off": {"TF_ENABLE_ONEDNN_OPTS": "0"},
    "oneDNN on": {"TF_ENABLE_ONEDNN_OPTS": "1"},
    "oneDNN off, tunables": {"TF_ENABLE_ONEDNN_OPTS": "0", "GLIBC_TUNABLES": TUNABLES},
}
SWEEP = ["-f", "tf", "-m", "eager", "-m", "function", "--device", "cpu", "--batch-sizes", "128,170,171,256"]
CLEARED = ("TF_ENABLE_ONEDNN_OPTS", "GLIBC_TUNABLES")  # the user's own values would blur the default row


def xferbench() -> str:
    """The xferbench beside this Python (the Quick start's .venv), else the one on PATH."""
    beside = Path(sys.executable).with_name("xferbench")
    return str(beside) if beside.exists() else "xferbench"


def run(setting: str, repeat: int, folder: Path) -> Path:
    """One sweep under one setting; its file is kept in the folder, named by both."""
    env = {k: v for k, v in os.environ.items() if k not in CLEARED} | SETTINGS[setting]
    path = folder / f"{setting.replace(', ', '-').replace(' ', '-').lower()}-{repeat}.json"
    done = subprocess.run([xferbench(), "sweep", *SWEEP, "-o", str(path), "--overwrite"], env=env, text=True,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the sweep under '{setting}' exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return path


def lines(setting: str, path: Path) -> list[str]:
    """One line per series: MB/s at 170 and 171, their ratio, faults per call at 171, busy points."""
    result = load(path)
    onednn = (result.environment.get("frameworks") or {}).get("tf", {}).get("onednn")
    out = []
    for series in result.series:
        points = {p.batch_size: p for p in series.ok_points()}
        before, after = points.get(170), points.get(171)
        if before is None or after is None or not before.mbps or not after.mbps:
            out.append(f"{setting:22} {series.mode:9} {path.name}: no batch 170/171 figure ({series.reason or 'not measured there'})")
            continue
        busy = " (busy machine: repeat)" if before.busy or after.busy else ""
        out.append(f"{setting:22} {series.mode:9} oneDNN {'on ' if onednn else 'off' if onednn is False else '?  '}"
                   f" {before.mbps:9,.0f} {after.mbps:9,.0f} {after.mbps / before.mbps:6.2f}x"
                   f" {after.page_faults_per_call or 0:9,.0f}{busy}")  # fmt: skip
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2, help="sweeps per setting (default 2)")
    parser.add_argument("--out", default="runs/tf-cliff", help="folder for the result files (default runs/tf-cliff)")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be 1 or more")
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)
    features = None
    print(f"{'setting':22} {'mode':9} {'':10} {'MB/s 170':>9} {'MB/s 171':>9} {'171/170':>7} {'faults/call at 171':>9}")
    total = len(SETTINGS) * args.repeats
    print(f"{total} sweeps of about 10 s each, one per line below; result files in {folder}/", file=sys.stderr)
    for setting in SETTINGS:
        for repeat in range(1, args.repeats + 1):
            try:
                path = run(setting, repeat, folder)
            except (OSError, RuntimeError) as error:
                print(f"error: {error}", file=sys.stderr)
                return 1
            features = features or load(path).environment.get("cpu_features")
            for line in lines(setting, path):
                print(line, flush=True)
    present = [name for name, has in (features or {}).items() if has]
    print(f"\nCPU features that turn oneDNN on by default: {', '.join(present) or 'none'}"
          f"{'' if features is not None else ' (not read on this OS)'}; files in {folder}/")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
