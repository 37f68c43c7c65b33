"""How much memory a reader takes for a result file, as a multiple of the file's size.

Builds result files of two shapes (few points of many samples, many points of few samples; see
--megabytes), then runs `load`, `report`, `plot` and `compare` on each in a fresh process and prints
each one's peak resident memory above the same process's before reading, over the file's size.
Linux only: the peak is /proc's VmHWM, set back to the resident size after the imports.

    .venv/bin/python scripts/bench_memory.py [--megabytes 60]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / "results" / "sim" / "link-10us-25gbps.json"

# Each reader in a process of its own: peak resident memory (kB) before and after it reads.
PROBE = """
import sys
from pathlib import Path
from xferbench.core.results import load
from xferbench.reading import compare, plot, report
from xferbench.core.results import Selection, select

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])

with open("/proc/self/clear_refs", "w") as refs:  # the peak so far (the imports') set back to what is resident now
    refs.write("5")
before = status("VmRSS")
what, path = sys.argv[1], Path(sys.argv[2])
if what == "load":
    load(path)
elif what == "report":
    report.render(select([path], Selection())[0])
elif what == "plot":
    plot.figure(select([path], Selection())[0])
elif what == "compare":
    compare.compare_files(path, path)
print(before, status("VmHWM"))
"""


def build(path: Path, series_count: int, points: int, samples: int) -> None:
    """A sim result file of that shape, each point's figures consistent with its samples."""
    data = json.loads(TEMPLATE.read_text())
    template, base = data["series"][0], data["series"][0]["points"][0]
    item = base["bytes"] // base["batch_size"]
    rng = random.Random(0)
    made = []
    for index in range(series_count):
        series = {**template, "device": f"sim:{index}", "points": []}
        for batch in range(1, points + 1):
            times = [1e-5 * (1 + rng.random() * 0.01) for _ in range(samples)]
            median = statistics.median(times)
            series["points"].append({**base, "batch_size": batch, "bytes": batch * item, "times_s": times, "device_times_s": [],
                                     "n": samples, "median_s": median, "mbps": batch * item / median / 1e6})  # fmt: skip
        made.append(series)
    data["series"] = made
    path.write_text(json.dumps(data))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=60.0, help="about how large each file is")
    megabytes = parser.parse_args().megabytes
    samples_per_mb = 44_000  # one sample takes about 23 bytes of JSON
    total = int(megabytes * samples_per_mb)
    shapes = {"few points, many samples": (1, 60, max(1, total // 60)),
              "many points, few samples": (max(1, total // (60 * 20)), 60, 20)}  # fmt: skip
    print(f"{'file':<26} {'MB':>6} " + " ".join(f"{w:>8}" for w in ("load", "report", "plot", "compare")) + "  (compare reads the file twice)")
    with tempfile.TemporaryDirectory() as folder:
        for name, shape in shapes.items():
            path = Path(folder) / "result.json"
            build(path, *shape)
            size_kb = path.stat().st_size / 1024
            ratios = []
            for what in ("load", "report", "plot", "compare"):
                ran = subprocess.run([sys.executable, "-c", PROBE, what, str(path)], capture_output=True, text=True, check=True)
                before, after = map(int, ran.stdout.split()[-2:])
                ratios.append((after - before) / size_kb)
            print(f"{name:<26} {size_kb / 1024:6.1f} " + " ".join(f"{r:7.1f}×" for r in ratios))
    print("each figure: the reader's peak resident memory above its process's before reading, over the file's size")


if __name__ == "__main__":
    main()
