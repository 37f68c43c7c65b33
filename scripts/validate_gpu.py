#!/usr/bin/env python3
"""One GPU validation run: every available path, both ops and both timing methods, over the default
batch sweep and a sweep up to about 1 GiB per call, then a long streamed raw run whose bytes NVML
counts; then the checks (xferbench.validate), a plot and a report.

    python scripts/validate_gpu.py OUT_DIR [--device cuda:0] [-f FRAMEWORK ...] [--quick]

Writes into OUT_DIR: default.json, large.json, link.json (raw result files), checks.md, report.md
and a plot per file. Exit status: 0 when every check passes (information aside), 1 when one fails
or could not run, 2 for bad input (no CUDA device, an OUT_DIR that holds results already).
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

# Run from a checkout with any Python that has the frameworks (a GPU image's own python3, say),
# not only from an environment where xferbench is installed.
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from xferbench import plot, report, validate  # noqa: E402
from xferbench.errors import XferbenchError  # noqa: E402
from xferbench.results import load, select  # noqa: E402

# One 512 x 512 RGBA uint8 image is 1 MiB, so batch b moves b MiB: batch 1024 is the 1 GiB asked for.
LARGE_SHAPE = "512x512x4"
LARGE_BATCHES = "1,4,16,64,128,256,512,1024"
BOTH_METHODS = ["--timing", "per-call", "--timing", "streamed"]
# The long raw run: 256 MiB copies, streamed, for at least 10 s, so NVML's count of the bytes received
# (or its throughput samples, 0.1 s apart, integrated) covers many gigabytes.
LINK_RUN = ["-f", "cuda", "-m", "raw_pinned", "--timing", "streamed", "--shape", LARGE_SHAPE, "--batch-sizes", "256"]
LINK_TIME, QUICK_LINK_TIME = ["--min-time", "10", "--max-time", "20"], ["--min-time", "2", "--max-time", "4"]


def sweep(out: Path, device: str, frameworks: list[str], extra: list[str], ops: tuple[str, ...] = ("copy", "seed")) -> int:
    """Run `xferbench sweep` as a user would, in this interpreter, so progress and errors show as usual."""
    command = [sys.executable, "-m", "xferbench", "sweep", "--device", device, *(f"--op={op}" for op in ops),
               *(f"--framework={f}" for f in frameworks), "-o", str(out), *extra]  # fmt: skip
    print(f"$ {shlex.join(command)}", flush=True)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run(command, env={**os.environ, "PYTHONPATH": path}).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path, help="folder for the result files, checks, plot and report")
    parser.add_argument("--device", default="cuda", help="the CUDA device to validate (default: cuda = cuda:0)")
    parser.add_argument("--framework", "-f", action="append", default=[], help="repeatable; default: every installed framework")
    parser.add_argument("--quick", action="store_true", help="fewer batch sizes and samples: a smoke test, not a validation")
    args = parser.parse_args(argv)
    default, large, link = (args.out_dir / f"{name}.json" for name in ("default", "large", "link"))
    if any(p.exists() for p in (default, large, link)):
        print(f"error: {args.out_dir} already holds results; give another folder so nothing is overwritten", file=sys.stderr)
        return 2
    args.out_dir.mkdir(parents=True, exist_ok=True)
    quick = ["--batch-sizes", "1,16,256", "--max-samples", "20"] if args.quick else []
    rc = sweep(default, args.device, args.framework, [*BOTH_METHODS, *quick])
    if rc == 2 or not default.exists():  # bad input, e.g. no CUDA device: the sweep said why
        return 2
    large_batches = "1,64,1024" if args.quick else LARGE_BATCHES
    sweep(large, args.device, args.framework, ["--shape", LARGE_SHAPE, "--batch-sizes", large_batches, *BOTH_METHODS, *quick[2:]])
    planned = [default, large]
    if not args.framework or "cuda" in args.framework:
        planned.append(link)
        sweep(link, args.device, [], [*LINK_RUN, *(QUICK_LINK_TIME if args.quick else LINK_TIME)], ops=("copy",))
    files = [p for p in planned if p.exists()]
    try:
        loaded = {p.name: (load(p) if p in files else None) for p in planned}
        results = [r for r in loaded.values() if r is not None]
        checks = [validate.completed_check(loaded), *validate.run_checks(results)]
        table = validate.render(checks)
        (args.out_dir / "checks.md").write_text(table)
        for path in files:
            picks, _ = select([path])
            plot.save(plot.figure(picks, title=f"xferbench validation: {path.stem}"), path.with_suffix(".png"))
        picks, empty = select(files)
        text = report.render(picks, empty, plot=default.with_suffix(".png"), out=args.out_dir / "report.md",
                             title="xferbench GPU validation")  # fmt: skip
        report.save(text + "\n### Validation checks\n\n" + table, args.out_dir / "report.md")
    except XferbenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print("\n" + table)
    print(f"wrote {', '.join(str(p) for p in sorted(args.out_dir.iterdir()))}")
    return 0 if validate.passed(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
