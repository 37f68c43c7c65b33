"""Any terminal: a stream that cannot encode the output's symbols, and a narrow one, print in ASCII and never crash."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def run(*args: str, encoding: str = "ascii", columns: str = "40") -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONIOENCODING": encoding, "COLUMNS": columns}
    return subprocess.run([sys.executable, "-m", "xferbench", *args], capture_output=True, cwd=REPO, env=env)


@pytest.mark.slow
@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_sweep_and_every_reader_print_on_a_terminal_without_unicode(tmp_path, encoding) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for path, gbps in ((a, "12"), (b, "6")):
        made = run("sweep", "-f", "sim", "--batch-sizes", "1,2,4", "--sim-bandwidth-gbps", gbps, "--sim-jitter", "0.05", "-o", str(path),
                   encoding=encoding)  # fmt: skip
        assert made.returncode == 0, made.stderr.decode(encoding)
        made.stdout.decode(encoding), made.stderr.decode(encoding)  # every byte in the stream's own encoding
        assert b"Traceback" not in made.stderr and b"MB/s" in made.stdout
        assert not [line for line in (made.stdout + made.stderr).splitlines() if line.endswith(b" ")]  # a log keeps no padding
    for args, code in ((["report", str(a), str(b)], 0), (["compare", str(a), str(b)], 1),
                       (["plot", str(a), str(b), "-o", str(tmp_path / "p.png")], 0), (["paths"], 0)):  # fmt: skip
        shown = run(*args, encoding=encoding)
        assert shown.returncode == code and b"Traceback" not in shown.stderr, (args, shown.stderr)
        (shown.stdout + shown.stderr).decode(encoding)
        assert not [line for line in (shown.stdout + shown.stderr).splitlines() if line.endswith(b" ")], args


def test_the_symbols_have_ascii_stand_ins() -> None:
    from xferbench.cli import ASCII

    assert "▼ slower, 0.50× at ≥95% · 10 µs – ±3% → b".encode("ascii", errors="xferbench-ascii") == \
        b"v slower, 0.50x at >=95% - 10 us - +/-3% -> b"  # fmt: skip
    assert all(value.isascii() for value in ASCII.values())
