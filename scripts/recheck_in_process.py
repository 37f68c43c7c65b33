"""Set a module's mutants against its tests in one Python process, for modules whose tests import a framework.

`scripts/mutation.sh --recheck` starts a fresh Python for each mutant, and a test run that imports TensorFlow
spends most of its time on the import. Here the framework is imported once: mutmut's trampoline reads
MUTANT_UNDER_TEST on every call, so each mutant is switched on by setting it before pytest.main runs again.

One process carries state from one mutant's run to the next, so every `--every` mutants the tests run against
the unmutated code: should that fail, a planted bug has left something behind, and the mutants counted caught
since the last clean run are set again, each in a fresh process.

Run from mutants/ (after scripts/mutation.sh generated it), one process per core, each given its share:

    cd mutants && PYTHONPATH=$PWD ../.venv/bin/python ../scripts/recheck_in_process.py --share 0/2 NAMES tests/test_x.py

NAMES is a file of mutant names, one a line (a `still survives: ` prefix is dropped). Prints
`still survives: NAME` for each mutant no test caught.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ARGS = ["-x", "-q", "-m", "not slow", "-p", "no:cacheprovider"]
CLEAN = "none"  # a name no mutant has: every function runs its own code


def _alarm(signum: int, frame: object) -> None:
    raise TimeoutError("the tests ran past their limit under this mutant")


def run_here(mutant: str, tests: list[str], limit_s: int) -> int:
    """pytest's exit code with `mutant` switched on, its output thrown away."""
    os.environ["MUTANT_UNDER_TEST"] = mutant
    signal.alarm(limit_s)  # a planted endless loop fails its test rather than holding the process
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return int(pytest.main([*ARGS, *tests]))
    finally:
        signal.alarm(0)


def run_fresh(mutant: str, tests: list[str], limit_s: int) -> int:
    """The same in a new Python process, as mutation.sh runs it."""
    env = dict(os.environ, MUTANT_UNDER_TEST=mutant)
    try:
        return subprocess.run([sys.executable, "-m", "pytest", *ARGS, *tests], env=env, capture_output=True, timeout=limit_s).returncode
    except subprocess.TimeoutExpired:
        return 124


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", type=Path)
    parser.add_argument("tests", nargs="+")
    parser.add_argument("--share", default="0/1", help="K/N: this process takes every N-th name from the K-th")
    parser.add_argument("--every", type=int, default=25, help="mutants between two runs against the unmutated code")
    parser.add_argument("--limit", type=int, default=120, help="seconds one mutant's tests may take")
    options = parser.parse_args()
    k, n = map(int, options.share.split("/"))
    names = [line.removeprefix("still survives: ").strip() for line in options.names.read_text().splitlines()]
    if options.names.suffix.startswith(".rest"):  # handed over by an earlier process of this run
        options.names.unlink()
    names = [name for name in names if name and name != "finished"][k::n]
    signal.signal(signal.SIGALRM, _alarm)
    if run_here(CLEAN, options.tests, options.limit) != 0:
        print(f"error: {' '.join(options.tests)} fail against the unmutated code; fix them first", file=sys.stderr)
        return 2
    survivors: list[str] = []
    caught_since_clean: list[str] = []
    for i, name in enumerate(names, 1):
        if run_here(name, options.tests, options.limit) == 0:
            survivors.append(name)
            print(f"still survives: {name}", flush=True)
        else:
            caught_since_clean.append(name)
        if i % options.every == 0 or i == len(names):
            if run_here(CLEAN, options.tests, options.limit) != 0:
                print(f"note: state left behind after {name}; {len(caught_since_clean)} set again in fresh processes", file=sys.stderr)
                for again in caught_since_clean:
                    if run_fresh(again, options.tests, options.limit) == 0:
                        survivors.append(again)
                        print(f"still survives: {again}", flush=True)
                os.execv(sys.executable, [sys.executable, *sys.argv[:1], *_rest(sys.argv[1:], names[i:], options)])
            caught_since_clean = []
    return 0


def _rest(argv: list[str], left: list[str], options: argparse.Namespace) -> list[str]:
    """The arguments for a fresh process that takes over the names still to run."""
    rest = options.names.with_suffix(f".rest{os.getpid()}")
    rest.write_text("".join(f"{name}\n" for name in left))
    return [str(rest), *options.tests, "--every", str(options.every), "--limit", str(options.limit)]


if __name__ == "__main__":
    sys.exit(main())
