"""Does TensorFlow's CPU copy fall at batch 171 on this machine, and what decides it?

Why: a NumPy batch passed to TensorFlow is copied on the host twice per call (NumPy's copy, then
TensorFlow's unless oneDNN's pool serves it). From batch 171 (just over the 32 MiB up to which glibc
raises its mmap threshold by itself) each buffer glibc cannot serve from free heap space is a fresh
mapping that the kernel faults in on every call. Whether that happens, and how far the copy falls,
depends on oneDNN (which TensorFlow's Linux build turns on by itself on CPUs with AVX512_VNNI,
AVX512_BF16, AVX_VNNI or AMX), on transparent huge pages, and on what the process left free on its
heap, which differs from run to run. This runs the same small sweep under each setting, several
times, and prints one line per series.

Run: .venv/bin/python scripts/tf_cliff.py [--repeats N] [--setting NAME ...] [--out FOLDER]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from xferbench.core.errors import XferbenchError
from xferbench.core.results import load

TUNABLES = "glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=1073741824"
# Each setting: its name and the environment variables it sets; the user's own values of CLEARED are dropped.
SETTINGS = {
    "default": {},
    "oneDNN off": {"TF_ENABLE_ONEDNN_OPTS": "0"},
    "oneDNN on": {"TF_ENABLE_ONEDNN_OPTS": "1"},
    "oneDNN off, tunables": {"TF_ENABLE_ONEDNN_OPTS": "0", "GLIBC_TUNABLES": TUNABLES},
    "default, tunables": {"GLIBC_TUNABLES": TUNABLES},
}
SWEEP = ["-f", "tf", "-m", "eager", "-m", "function", "--device", "cpu", "--batch-sizes", "128,170,171,256"]
CLEARED = ("TF_ENABLE_ONEDNN_OPTS", "GLIBC_TUNABLES")  # the user's own values would blur the default row
HEADER = f"{'setting':22} {'mode':9} {'':10} {'MB/s 170':>9} {'MB/s 171':>9} {'171/170':>7} {'faults/call at 171':>18}"


def xferbench() -> str:
    """The xferbench beside this Python (the Quick start's .venv), else the one on PATH."""
    beside = Path(sys.executable).with_name("xferbench")
    return str(beside) if beside.exists() else "xferbench"


def file_name(setting: str, repeat: int) -> str:
    return f"{setting.replace(', ', '-').replace(' ', '-').lower()}-{repeat}.json"


def run(setting: str, repeat: int, folder: Path) -> Path:
    """One sweep under one setting; its file is kept in the folder, named by both. An existing file is
    never replaced: the sweep refuses it, and main() numbers new runs after the ones there."""
    env = {k: v for k, v in os.environ.items() if k not in CLEARED} | SETTINGS[setting]
    path = folder / file_name(setting, repeat)
    done = subprocess.run([xferbench(), "sweep", *SWEEP, "-o", str(path)], env=env, text=True,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the sweep under '{setting}' exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return path


def lines(setting: str, path: Path) -> list[str]:
    """One line per series: MB/s at 170 and 171, their ratio, faults per call at 171 (n/a where the OS
    gives no count), and whether either point was measured on a busy machine."""
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
        faults = "n/a" if after.page_faults_per_call is None else f"{after.page_faults_per_call:,.0f}"
        out.append(f"{setting:22} {series.mode:9} oneDNN {'on ' if onednn else 'off' if onednn is False else '?  '}"
                   f" {before.mbps:9,.0f} {after.mbps:9,.0f} {after.mbps / before.mbps:6.2f}x {faults:>18}{busy}")  # fmt: skip
    return out


def next_repeat(folder: Path, setting: str) -> int:
    """The first run number under this setting that has no file in the folder yet."""
    repeat = 1
    while (folder / file_name(setting, repeat)).exists():
        repeat += 1
    return repeat


def machine_line(path: Path) -> str:
    """What decides the fall on this machine, as the last file recorded it."""
    env = load(path).environment
    features = env.get("cpu_features")
    present = [name for name, has in (features or {}).items() if has]
    pages = env.get("transparent_hugepages") or {}
    return (f"CPU features that turn oneDNN on by default: {', '.join(present) or 'none'}"
            f"{'' if features is not None else ' (not read on this OS)'}; transparent huge pages:"
            f" {pages.get('enabled', 'not read')}")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="sweeps per setting (default 3)")
    parser.add_argument("--setting", action="append", choices=list(SETTINGS),
                        help="run only this setting (repeatable; default: every one)")  # fmt: skip
    parser.add_argument("--out", default="runs/tf-cliff", help="folder for the result files (default runs/tf-cliff)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be 1 or more")
    folder = Path(args.out)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        parser.error(f"cannot make --out {folder}: {error.strerror}")
    settings = args.setting or list(SETTINGS)
    print(f"{len(settings) * args.repeats} sweeps of about 10 s each, one line per series below; result files in"
          f" {folder}/ (earlier runs there are kept)", file=sys.stderr)  # fmt: skip
    print(HEADER, flush=True)
    last = None
    for setting in settings:
        first = next_repeat(folder, setting)
        for repeat in range(first, first + args.repeats):
            try:
                last = run(setting, repeat, folder)
                for line in lines(setting, last):
                    print(line, flush=True)
            except (OSError, RuntimeError, XferbenchError) as error:
                print(f"error: {error}", file=sys.stderr)
                return 1
    print(f"\n{machine_line(last)}; files in {folder}/" if last else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
