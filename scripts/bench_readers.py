"""Whether the peer readers take time in proportion to what they read: each input at n and at 16n.

Builds pasted outputs of several shapes (a log with many braces, JSON cut short deep inside, a long
nvbandwidth text, a bandwidthTest shmoo pasted many times, blank lines, a line of many words, colour
codes), reads each at two sizes, and prints the time at 16n over 16 times the time at n: about 1 where
the work is linear, about 16 where it is quadratic. The best of --repeat reads is taken, so a busy
machine skews the ratio less; the ratio, not the seconds, is what to look at.

    .venv/bin/python scripts/bench_readers.py [--n 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

import peer_outputs as out  # noqa: E402  (the tests' outputs, shaped as the tools print them)

from xferbench.core.errors import XferbenchError  # noqa: E402
from xferbench.reading.peers import json_object, read_bandwidthtest, read_nvbandwidth  # noqa: E402

H2D = out.H2D_CE


def _braces(n: int) -> str:
    return "log {line} " * (n // 11) + "\n" + out.nvbandwidth(out.passed(H2D, "55.3"))


def _cut_deep(n: int) -> str:
    return '{"a": ' * (n // 6) + "cut"


def _nvb_text(n: int) -> str:
    one = out.nvbandwidth_text(out.passed(H2D, "55.38"), out.passed(out.D2H_CE, "54.10"))
    return ("noise line\n" * (n // 11)) + one


def _shmoo(n: int) -> str:
    lines = [out.csv_line("H2D-Pinned", 1.0 + i % 500 / 10, 1000 * (i + 1)) for i in range(max(1, n // 95))]
    return out.bandwidthtest(*lines, mode="Shmoo")


def _blank_lines(n: int) -> str:
    return "\n" * n + out.nvbandwidth_text(out.passed(H2D, "55.38"))


def _words(n: int) -> str:
    """A line whose every word could start the command that ran bandwidthTest, and whose end is not an option."""
    return "$ bandwidthTest" + " -a/bandwidthTest" * (n // 17) + " x\n" + out.bandwidthtest(out.csv_line("H2D-Pinned", 25.9, 32_000_000))


def _coloured(n: int) -> str:
    return "\x1b[1;32mlog\x1b[0m\n" * (n // 16) + out.nvbandwidth_text(out.passed(H2D, "55.38"))


# (name, input of about n characters, what reads it)
CASES: list[tuple[str, Callable[[int], str], str]] = [
    ("log with many braces, then -j", _braces, "nvbandwidth"),
    ("JSON cut short, nested deep", _cut_deep, "json"),
    ("nvbandwidth text after noise", _nvb_text, "nvbandwidth"),
    ("bandwidthTest shmoo CSV", _shmoo, "bandwidthTest"),
    ("blank lines, then text", _blank_lines, "nvbandwidth"),
    ("a line of many '-a/bandwidthTest'", _words, "bandwidthTest"),
    ("coloured lines", _coloured, "nvbandwidth"),
]


def _read(text: str, reader: str, folder: Path) -> None:
    if reader == "json":
        json_object(text, ("nvbandwidth",))
        return
    path = folder / "paste.txt"
    path.write_text(text, encoding="utf-8")
    try:
        (read_nvbandwidth if reader == "nvbandwidth" else read_bandwidthtest)([path])
    except XferbenchError:
        pass  # a refusal is an answer too: its time counts the same


def _seconds(text: str, reader: str, folder: Path, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        _read(text, reader, folder)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000, help="characters of the smaller input (default 20000)")
    parser.add_argument("--repeat", type=int, default=3, help="reads of each input; the fastest is taken (default 3)")
    args = parser.parse_args()
    print(f"{'input':<38} {'chars n':>9} {'s at n':>8} {'s at 16n':>9} {'ratio':>6}")
    with tempfile.TemporaryDirectory() as folder:
        for name, build, reader in CASES:
            small, large = build(args.n), build(16 * args.n)
            at_n = _seconds(small, reader, Path(folder), args.repeat)
            at_16n = _seconds(large, reader, Path(folder), args.repeat)
            ratio = at_16n / (16 * at_n) if at_n > 0 else float("nan")
            print(f"{name:<38} {len(small):>9,} {at_n:>8.4f} {at_16n:>9.4f} {ratio:>6.2f}")
    print("ratio: seconds at 16n over 16 x seconds at n; about 1 is linear, about 16 quadratic")


if __name__ == "__main__":
    main()
