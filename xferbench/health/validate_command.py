"""`xferbench validate`: one command, on a CUDA machine, whose folder a user attaches to a bug report.

It runs xferbench's validation sweeps, then the same machine's peer tools where they are found
(NVIDIA's nvbandwidth and the CUDA samples' bandwidthTest), turns their output into result files
beside xferbench's own (reading/peers/), saves nvidia-smi's view of the machine, and writes a one-page
verdict: each check PASS, FAIL or n/a with the figure it rests on (validation_checks.py), xferbench's raw
copy against each peer at the sizes both measured, and the published figures for the GPU's model.

Each sweep runs as `python -m xferbench sweep` in a process of its own, as a user would run it, so
its progress, its errors and its file are the sweep's own. A peer that is missing, fails or hangs
costs only its own part of the verdict.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import statistics
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import xferbench
from xferbench.health import budget, calibrate, validation_checks
from xferbench.core import c2c, references
from xferbench.reading.display import rate, size
from xferbench.core.environment import device_entry, gpu_link_facts
from xferbench.core.errors import XferbenchError
from xferbench.reading.pairs import placement
from xferbench.reading.peers import json_object
from xferbench.core.results import Result, Series, load, select
from xferbench.core.spec import H2D, PER_CALL, STREAMED
from xferbench.core.timing import TimingConfig
from xferbench.health.validation_checks import LARGE_BYTES
from xferbench.core.verdict import FAIL, NA, PASS, Verdict

# The two sweeps: xferbench's default batches of 256x256x3 images, and 1 MiB images (512x512x4) up
# to 1 GiB per call, where launch costs vanish and the link alone sets the pace.
DEFAULT_SHAPE, LARGE_SHAPE = (256, 256, 3), (512, 512, 4)
DEFAULT_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
LARGE_BATCHES = (1, 4, 16, 64, 128, 256, 512, 1024)
QUICK_BATCHES = (1, 16, 256)  # both sweeps, with --quick: a smoke test, not a validation
QUICK_TIMING = TimingConfig(max_samples=20)
BOTH_METHODS = ("--timing", "per-call", "--timing", "streamed")
# The long raw run: 256 MiB copies streamed for at least 10 s, so NVML's count of the bytes the GPU
# received (or its throughput samples, 0.1 s apart, integrated) covers many gigabytes.
LINK_BATCH = 256
LINK_RUN = ("-f", "cuda", "-m", "raw_pinned", "--timing", "streamed", "--shape", "512x512x4", "--batch-sizes", str(LINK_BATCH))
LINK_TIME, QUICK_LINK_TIME = ("--min-time", "10", "--max-time", "20"), ("--min-time", "2", "--max-time", "4")
NVBANDWIDTH_TESTS = ("host_to_device_memcpy_ce", "device_to_host_memcpy_ce")
PEER_TIMEOUT_S = 600.0  # one peer command; a hung tool must not hold the validation forever: after one, its others are skipped
PEER_BUDGET_S = 1800.0  # one peer's commands in all
MAX_PEER_BYTES = 2**30  # bandwidthTest counts bytes in an unsigned int; nothing above 1 GiB is asked of either tool
PEERS = {"nvbandwidth": "nvbandwidth", "bandwidthtest": "bandwidthTest"}  # how each is recognised, and its own name
WHERE_TO_GET = {
    "nvbandwidth": "build it from https://github.com/NVIDIA/nvbandwidth, then put it on PATH or give --peer PATH",
    "bandwidthTest": "build it from the CUDA samples (https://github.com/NVIDIA/cuda-samples, tag v12.8 or earlier:"
                     " later tags drop it), then put it on PATH or give --peer PATH",
}  # fmt: skip
FILES = {
    "verdict.md": "the one-page verdict: start here",
    "report.md": "every result file as a report (environment, summary, every point), with the plots",
    "default.json": "xferbench's sweep of 256x256x3 uint8 batches, both timing methods",
    "large.json": "xferbench's sweep of 1 MiB images up to 1 GiB per call, both timing methods",
    "link.json": "xferbench's long streamed raw copy, whose bytes NVML counts",
    "default.png": "default.json's curves: MB/s by batch size, time by bytes",
    "large.png": "large.json's curves",
    "link.png": "link.json's curve",
    "peer-nvbandwidth.json": "nvbandwidth's figures as an xferbench result file (xferbench import nvbandwidth)",
    "peer-bandwidthtest.json": "bandwidthTest's figures as an xferbench result file (xferbench import bandwidthtest)",
    "peers/nvbandwidth.json": "nvbandwidth's own output, each run with its command, exit code and time",
    "peers/bandwidthTest.txt": "bandwidthTest's own output, each run under its command and exit code",
    "peers/commands.txt": "every peer command with its exit code and seconds",
    "nvidia-smi-q.txt": "nvidia-smi -q before the run",
    "nvidia-smi-topo.txt": "nvidia-smi topo -m: the GPUs, their links and their NUMA affinity",
}
PEER_AGREEMENT = 0.03  # xferbench's streamed raw copy and nvbandwidth's copy engine agree within this from 16 MiB
AGREEMENT_BYTES = 16 * 2**20


@dataclass
class Validation:
    """What one `xferbench validate` runs and where it writes."""

    folder: Path
    device: str = "cuda:0"
    frameworks: tuple[str, ...] = ()
    quick: bool = False
    peers: dict[str, str] = field(default_factory=dict)  # a peer's own name -> its executable
    missing: dict[str, str] = field(default_factory=dict)  # a peer not found -> what to do
    max_minutes: float | None = None  # the whole run's budget (fit() trims the plan to it)
    large_batches: tuple[int, ...] | None = None  # the large sweep's batches where trimmed
    peer_sizes: str = "all"  # which of the sizes the peers measure: all, from 16 MiB, or the few kept last
    nvbandwidth_samples: int | None = None  # nvbandwidth's -i where trimmed; None: its own default (3)
    trimmed: list[str] = field(default_factory=list)  # what fit() left out, in words, for the plan and the verdict
    took_s: float | None = None  # the whole run's seconds, for the verdict
    rates: budget.Rates = budget.FALLBACK  # what the estimate assumes: measured by the probe (calibrate.py), else the fallback

    @property
    def index(self) -> int:
        return int(self.device.split(":")[1]) if ":" in self.device else 0

    @property
    def batches(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The batches of the default sweep (256x256x3 images) and of the large one (1 MiB images)."""
        batches, large = (QUICK_BATCHES, QUICK_BATCHES) if self.quick else (DEFAULT_BATCHES, LARGE_BATCHES)
        return batches, self.large_batches if self.large_batches is not None else large

    def sweeps(self) -> dict[str, list[str]]:
        """Each sweep's `xferbench sweep` arguments, by its file's stem."""
        quick = ("--max-samples", str(QUICK_TIMING.max_samples)) if self.quick else ()
        common = ["--device", self.device, *(f"--framework={f}" for f in self.frameworks), *BOTH_METHODS, *quick]
        batches, large = self.batches
        found = {"default": [*common, "--op=copy", "--op=seed", "--batch-sizes", ",".join(map(str, batches))],
                 "large": [*common, "--op=copy", "--shape", "512x512x4", "--batch-sizes", ",".join(map(str, large))]}  # fmt: skip
        if self.has_link_run:
            found["link"] = ["--device", self.device, *LINK_RUN, *(QUICK_LINK_TIME if self.quick else LINK_TIME)]
        return found

    @property
    def has_link_run(self) -> bool:
        return not self.frameworks or "cuda" in self.frameworks

    def sweep_plans(self) -> list[budget.SweepPlan]:
        """The sweeps as the time estimate counts them: their series, batches, workers and timing."""
        timing = QUICK_TIMING if self.quick else TimingConfig()
        batches, large = self.batches
        plans = []
        for stem, shape, sizes, ops in (("default", DEFAULT_SHAPE, batches, ("copy", "seed")), ("large", LARGE_SHAPE, large, ("copy",))):
            keys, used = budget.series_keys(self.frameworks, self.device, ops, (PER_CALL, STREAMED), shape)
            keys = [key for key in keys if key.framework not in self.rates.unseen]  # skipped by the sweep: its worker sees no such device
            plans.append(budget.SweepPlan(stem, tuple(keys), sizes, tuple(used), timing))
        if self.has_link_run:
            keys, used = budget.series_keys(("cuda",), self.device, ("copy",), (STREAMED,), LARGE_SHAPE, modes=("raw_pinned",))
            link_s = float((QUICK_LINK_TIME if self.quick else LINK_TIME)[1])
            plans.append(budget.SweepPlan("link", tuple(keys), (LINK_BATCH,), tuple(used), timing, fixed_s=link_s))
        return plans

    def sizes(self) -> list[int]:
        """Every size in bytes that xferbench's sweeps move per call: the peers measure the same."""
        batches, large = self.batches
        found = {b * math.prod(DEFAULT_SHAPE) for b in batches} | {b * math.prod(LARGE_SHAPE) for b in large}
        return sorted(s for s in found if s <= MAX_PEER_BYTES)

    def peer_commands(self) -> list[PeerCommand]:
        """Every peer command the run will make, in order, with its estimated seconds: nvbandwidth at
        each size that is a whole number of MiB (its -b is in MiB), bandwidthTest at each size in bytes."""
        sizes = self.sizes()
        if self.peer_sizes != "all":
            sizes = [s for s in sizes if s >= AGREEMENT_BYTES]
        if self.peer_sizes == "few":
            default_largest = max(self.batches[0]) * math.prod(DEFAULT_SHAPE)
            sizes = [s for s in sizes if s in (AGREEMENT_BYTES, default_largest, LARGE_BYTES, max(sizes))]
        commands = []
        if "nvbandwidth" in self.peers:
            samples = ("-i", str(self.nvbandwidth_samples)) if self.nvbandwidth_samples else ()
            for nbytes in (n for n in sizes if n % 2**20 == 0):
                arguments = ["-j", "-b", str(nbytes // 2**20), *samples, "-t", *NVBANDWIDTH_TESTS]
                seconds = budget.nvbandwidth_seconds(nbytes, len(NVBANDWIDTH_TESTS), self.nvbandwidth_samples, self.rates)
                commands.append(PeerCommand("nvbandwidth", arguments, nbytes, seconds))
        if "bandwidthTest" in self.peers:
            for memory in ("pinned", "pageable"):
                for nbytes in sizes:
                    arguments = [f"--device={self.index}", "--htod", f"--memory={memory}", "--mode=range", f"--start={nbytes}",
                                 f"--end={nbytes}", f"--increment={nbytes}", "--csv"]  # fmt: skip
                    commands.append(PeerCommand("bandwidthTest", arguments, nbytes, budget.bandwidthtest_seconds(nbytes, memory, self.rates), memory))
        return commands

    def estimate_s(self) -> float:
        """The whole run's estimated seconds: the probe (already spent), sweeps, peers, and the report and verdict at the end."""
        rates = self.rates
        return rates.spent_s + sum(p.seconds(rates) for p in self.sweep_plans()) + sum(c.seconds for c in self.peer_commands()) + rates.finish_s

    def fit(self) -> None:
        """Trim the plan until its estimate fits max_minutes less a sweep's stop grace (each sweep's deadline
        keeps that grace, run_sweeps: a plan that fitted without it would have its sweeps stopped short), in
        the documented order (budget.py), and say in `trimmed` what was left out. The default sweep, the raw
        ceiling and the link run stay."""
        if self.max_minutes is None:
            return
        budget_s = self.max_minutes * 60 - budget.STOP_GRACE_S
        everything = sorted({c.nbytes for c in self.peer_commands()})
        if self.estimate_s() > budget_s and "nvbandwidth" in self.peers:
            self.nvbandwidth_samples = 1
            self.trimmed.append(f"nvbandwidth took 1 sample per size (-i 1), not its default {budget.NVBANDWIDTH_SAMPLES}")
        for level in ("from16", "few"):
            if self.estimate_s() > budget_s and everything:
                self.peer_sizes = level
        large, dropped = list(self.batches[1]), []
        for batch in budget.LARGE_TRIM_ORDER:
            if self.estimate_s() <= budget_s:
                break
            if batch in large and len(large) > 1:
                large.remove(batch)
                dropped.append(batch)
                self.large_batches = tuple(large)
        kept = sorted({c.nbytes for c in self.peer_commands()})
        if self.peer_sizes != "all":
            self.trimmed.append(f"the peers measured {len(kept)} of {len(everything)} sizes"
                                f" ({', '.join(size_label(n) for n in kept) or 'none'})")  # fmt: skip
        if dropped:
            self.trimmed.append(f"the large sweep left out batches {', '.join(map(str, sorted(dropped)))} of 1 MiB images"
                                f" (kept {', '.join(map(str, large))})")  # fmt: skip

    def plan_lines(self) -> list[str]:
        """The plan as printed before the run starts: each step, its size and its estimated time."""
        lines = [f"  the estimate assumes {self.rates.describe()}"]
        if self.rates.spent_s:
            lines.append(f"  the probe: {self.rates.spent_s:.1f} s, spent")
        for plan in self.sweep_plans():
            lines.append(f"  {plan.stem}.json: {len(plan.keys)} series x {len(plan.batches)} batches = {plan.points} points,"
                         f" {len(plan.frameworks)} worker(s): about {budget.minutes(plan.seconds(self.rates))}")  # fmt: skip
        for name in self.peers:
            mine = [c for c in self.peer_commands() if c.peer == name]
            span = f" at {size_label(min(c.nbytes for c in mine))} to {size_label(max(c.nbytes for c in mine))}" if mine else ""
            lines.append(f"  {name}: {len(mine)} runs{span}: about {budget.minutes(sum(c.seconds for c in mine))}")
        lines.append(f"  the report, plots and verdict: about {budget.minutes(self.rates.finish_s)}")
        total = self.estimate_s()
        head = f"plan: about {budget.minutes(total)} in all ({total:.0f} s)"
        if self.max_minutes is not None:
            head += f", within --max-minutes {self.max_minutes:g}"
            if total > self.max_minutes * 60:
                head += " (more than it, trimmed as far as it goes: the run stops at the budget, and says what it did not finish)"
        return [head + ":", *lines, *(f"  trimmed to fit: {t}" for t in self.trimmed)]


@dataclass(frozen=True)
class PeerCommand:
    """One peer command of the plan."""

    peer: str  # its own name
    arguments: list[str]
    nbytes: int
    seconds: float  # estimated
    memory: str = "pinned"  # bandwidthTest's host memory


def find_peers(given: Sequence[str]) -> tuple[dict[str, str], dict[str, str]]:
    """The peers to run: each --peer PATH, recognised by its name; else each found on PATH. Returns
    those found and, for those not, what to do."""
    found: dict[str, str] = {}
    for text in given:
        path = shutil.which(text) or text
        name = next((own for key, own in PEERS.items() if key in Path(path).name.lower()), None)
        if name is None:
            raise XferbenchError(f"--peer {text}: not nvbandwidth or bandwidthTest (xferbench knows a peer by its file name)")
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise XferbenchError(f"--peer {text}: no executable file there")
        found[name] = path
    missing = {}
    for name in PEERS.values():
        if name not in found:
            path = shutil.which(name)
            if path:
                found[name] = path
            else:
                missing[name] = f"{name} is not on PATH: {WHERE_TO_GET[name]}"
    return found, missing


Echo = Callable[[str], None]


def _python_path() -> str:
    """PYTHONPATH for a sweep: this xferbench first, so a checkout run without installing works."""
    here = str(Path(xferbench.__file__).resolve().parent.parent)  # the folder holding the package
    return os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)


SAVE_GRACE_S = 5.0  # after Ctrl-C, how long a sweep that saw it too has to save before it is told again
STOP_WAIT_S = 60.0  # how long a sweep told to stop has to save and close its workers before it is killed
WAIT_SLICE_S = 0.2  # the longest one wait for a sweep blocks: Windows delivers Ctrl-C between waits only
# On Windows a sweep runs in a process group of its own, the only way to send it alone the Ctrl-Break it
# stops on (SIGTERM there is TerminateProcess, which no program can catch); the group keeps the
# terminal's Ctrl-C from it, so this process passes that on too.
NEW_GROUP = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0) if sys.platform == "win32" else 0


def wait_for(process: subprocess.Popen[bytes], timeout_s: float | None = None) -> int:
    """Popen.wait, in slices: on Windows a single long wait would hold Ctrl-C off until the sweep ended."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        wait = WAIT_SLICE_S if deadline is None else min(WAIT_SLICE_S, deadline - time.monotonic())
        if wait <= 0:
            raise subprocess.TimeoutExpired(process.args, timeout_s or 0)
        try:
            return process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue


def stop_sweep(process: subprocess.Popen[bytes], wait_s: float = STOP_WAIT_S) -> None:
    """Stop a sweep as Ctrl-C does (SIGTERM; Ctrl-Break on Windows), so it saves what it measured marked
    interrupted; kill it only if it has not ended within `wait_s`."""
    if process.poll() is None:
        process.send_signal(signal.CTRL_BREAK_EVENT if NEW_GROUP else signal.SIGTERM)  # type: ignore[attr-defined]
    try:
        wait_for(process, wait_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def run_child_sweep(command: list[str], env: dict[str, str], limit_s: float | None = None) -> int | None:
    """A sweep in a process of its own; its exit code, or None where it was stopped at `limit_s` seconds
    (it saved what it measured, marked interrupted). Stopped here (Ctrl-C, a kill), it is stopped the same
    way and given the time to save what it measured, marked interrupted, before this process goes on
    stopping: subprocess.run would kill it after a quarter of a second, mid-save, leaving its workers."""
    from xferbench.measuring.running import Terminated

    process = subprocess.Popen(command, env=env, creationflags=NEW_GROUP)
    try:
        try:
            return wait_for(process, limit_s)
        except subprocess.TimeoutExpired:
            stop_sweep(process, budget.STOP_GRACE_S)
            return None
    except KeyboardInterrupt as stop:
        try:  # a terminal's Ctrl-C reached the sweep too (one process group); a kill reached this process alone
            if not isinstance(stop, Terminated) and not NEW_GROUP:
                wait_for(process, SAVE_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        stop_sweep(process)  # a sweep stops on SIGTERM (Ctrl-Break on Windows) as on Ctrl-C
        raise


def run_sweeps(validation: Validation, echo: Echo, deadline: float | None = None, notes: list[str] | None = None
               ) -> dict[str, Result | None]:  # fmt: skip
    """Each sweep in a process of its own, as a user runs it; a sweep that wrote nothing is None. With a
    deadline (time.monotonic()), each sweep may run until the time the steps after it are estimated to
    need; one that runs past that is stopped, keeping what it measured, and said in `notes`."""
    files: dict[str, Result | None] = {}
    notes = [] if notes is None else notes
    plans = {p.stem: p.seconds(validation.rates) for p in validation.sweep_plans()}
    peers_s = sum(c.seconds for c in validation.peer_commands()) + validation.rates.finish_s
    sweeps = validation.sweeps()
    stems = list(sweeps)
    for at, (stem, arguments) in enumerate(sweeps.items()):
        path = validation.folder / f"{stem}.json"
        command = [sys.executable, "-m", "xferbench", "sweep", *arguments, "-o", str(path)]
        limit = None
        if deadline is not None:
            left = deadline - time.monotonic()
            after = peers_s + sum(plans.get(s, 0.0) for s in stems[at + 1:]) + budget.STOP_GRACE_S
            limit = left - after
            if limit <= 0:
                said = (f"{stem}.json was not started: {max(left, 0):.0f} s of the --max-minutes budget were left and the"
                        f" steps after it are estimated to need {after:.0f} s (at the rates the plan assumed; a longer"
                        " --max-minutes would have fitted it)" if left > 0 else
                        f"{stem}.json was not started: the run's --max-minutes budget was spent")  # fmt: skip
                echo(f"warning: {said}")
                notes.append(said)
                files[stem] = None
                continue
        echo(f"$ {shlex.join(command)}")
        code = run_child_sweep(command, {**os.environ, "PYTHONPATH": _python_path()}, limit)
        if code is None:
            said = (f"{stem}.json was stopped after {limit:.0f} s, keeping what it had measured, so that the rest of the run"
                    " fits its --max-minutes budget")  # fmt: skip
            echo(f"warning: {said}")
            notes.append(said)
        if code == 2 and stem == "default" and not path.exists():  # bad input (no such device, say): the sweep said why
            for name in ("nvidia-smi-q.txt", "nvidia-smi-topo.txt"):  # written by this run: the folder is left as it was found
                (validation.folder / name).unlink(missing_ok=True)
            raise XferbenchError("the first sweep refused to start (exit 2, see above); nothing was validated")
        try:
            files[stem] = load(path) if path.exists() else None
        except XferbenchError as error:
            echo(f"warning: {error}")
            files[stem] = None
    return files


def _run(command: list[str], timeout_s: float = PEER_TIMEOUT_S, env: dict[str, str] | None = None) -> tuple[int | None, float, str]:
    """A peer's command: its exit code (None when it timed out or could not start), seconds, output."""
    started = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=timeout_s, env=env)
        return done.returncode, time.monotonic() - started, done.stdout + done.stderr
    except subprocess.TimeoutExpired as stopped:  # what it printed before it hung, both streams: the error may be on either
        text = "".join(part.decode(errors="replace") if isinstance(part, bytes) else part or "" for part in (stopped.stdout, stopped.stderr))
        return None, time.monotonic() - started, text + f"\n(stopped after {timeout_s:g} s)"
    except OSError as error:
        return None, time.monotonic() - started, f"could not start: {error.strerror or error}"


class CommandLog:
    """peers/commands.txt: every peer command, its exit code and its seconds, as they run."""

    def __init__(self, path: Path, echo: Echo) -> None:
        self.path, self.echo = path, echo
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("", encoding="utf-8")

    def __call__(self, command: list[str], code: int | None, seconds: float) -> None:
        said = "timed out or could not start" if code is None else f"exit {code}"
        line = f"{said:>30}  {seconds:7.1f} s  $ {shlex.join(command)}"
        with self.path.open("a", encoding="utf-8") as log:
            log.write(line + "\n")
        self.echo(f"  {line.strip()}")


def run_nvidia_smi(folder: Path, echo: Echo) -> list[str]:
    """nvidia-smi -q and topo -m into the folder; what could not be saved, said."""
    notes = []
    smi = shutil.which("nvidia-smi")
    for name, arguments in (("nvidia-smi-q.txt", ["-q"]), ("nvidia-smi-topo.txt", ["topo", "-m"])):
        if smi is None:
            notes.append(f"{name}: nvidia-smi is not on PATH")
            continue
        code, _, text = _run([smi, *arguments], timeout_s=120)
        (folder / name).write_text(text, encoding="utf-8")
        if code != 0:
            notes.append(f"{name}: nvidia-smi {' '.join(arguments)} " + ("did not finish" if code is None else f"exited {code}"))
    for note in notes:
        echo(f"warning: {note}")
    return notes


def under_numactl(words: list[str]) -> str:
    """A placement by numactl in the peer check's words: the tool's name, not its path, and its two bindings."""
    return "under " + " ".join([Path(words[0]).name, *words[1:3]])


@dataclass
class PeerRun:
    """One peer's commands in this validation: where it stands, and what the verdict must say of it."""

    name: str
    executable: str
    log: CommandLog
    environment: dict[str, Any] = field(default_factory=dict)  # variables set for it (CUDA_VISIBLE_DEVICES)
    prefix: list[str] = field(default_factory=list)  # a command it runs under (numactl)
    notes: list[str] = field(default_factory=list)
    spent_s: float = 0.0
    stopped: str | None = None  # why its remaining runs were skipped
    deadline: float | None = None  # time.monotonic() by which its runs must end (--max-minutes), leaving the finish its time
    unbound: str | None = None  # why it could not be bound to the GPU's node (_bind)

    def placement(self) -> str:
        """Where its runs were placed, as the peer check reports it beside xferbench's binding."""
        if self.prefix:
            return under_numactl(self.prefix)
        return "without NUMA binding" + (f" ({self.unbound})" if self.unbound else "")

    def __call__(self, arguments: list[str], estimate_s: float = 0.0) -> tuple[int | None, float, str, list[str]] | None:
        """Run it once; None once it has hung or spent its budget (the rest are skipped, and said), or where the
        run's deadline leaves too little time for this command's estimate."""
        if self.stopped:
            return None
        timeout = PEER_TIMEOUT_S
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left < estimate_s:
                self.stopped = (f"{self.name}'s remaining runs were skipped: {max(left, 0):.0f} s of the --max-minutes budget"
                                f" were left and the next is estimated to need {estimate_s:.0f} s")  # fmt: skip
                return None
            timeout = min(timeout, left)
        command = [*self.prefix, self.executable, *arguments]
        code, seconds, text = _run(command, timeout_s=timeout, env={**os.environ, **self.environment})
        self.log(command, code, seconds)
        self.spent_s += seconds
        if code is None:
            self.stopped = f"{self.name} did not finish a run within {timeout:.3g} s (or could not start); its remaining runs were skipped"
        elif self.spent_s > PEER_BUDGET_S:
            self.stopped = f"{self.name} took over {PEER_BUDGET_S / 60:g} minutes in all; its remaining runs were skipped"
        return code, seconds, text, command


def _gpu_uuid(environment: dict[str, Any], device: str) -> str | None:
    entry = device_entry(environment, device)
    return (entry.get("nvml") or {}).get("uuid") or entry.get("uuid")


def nvbandwidth_peer(executable: str, validation: Validation, log: CommandLog, environment: dict[str, Any]) -> PeerRun:
    """nvbandwidth measures every GPU it sees: it is shown only the validated one (by UUID), so it
    neither loads the others nor takes eight times as long on an eight-GPU node."""
    run = PeerRun("nvbandwidth", executable, log)
    uuid = _gpu_uuid(environment, validation.device)
    if uuid:
        run.environment["CUDA_VISIBLE_DEVICES"] = uuid
    else:
        run.notes.append("nvbandwidth measured every GPU it saw: the validated GPU's UUID is not known to show it that one alone")
    _bind(run, validation, environment)  # nvbandwidth binds its CPUs only, and not at all where NVML cannot say
    return run


def _bind(run: PeerRun, validation: Validation, environment: dict[str, Any]) -> None:
    """Run a peer under numactl on the GPU's node, CPUs and memory, as xferbench's workers are bound:
    placement alone can move a figure several times, so the two sides must share it to be compared."""
    node = (device_entry(environment, validation.device).get("nvml") or {}).get("numa_node")
    numactl = shutil.which("numactl")
    if isinstance(node, int) and node >= 0 and numactl:
        run.prefix = [numactl, f"--cpunodebind={node}", f"--membind={node}"]
    else:
        run.unbound = "numactl is not on PATH" if isinstance(node, int) and node >= 0 else "the GPU's NUMA node is unknown"
        run.notes.append(f"{run.name} ran without NUMA binding ({run.unbound}): its pinned figures may reflect where its memory landed")


def bandwidthtest_peer(executable: str, validation: Validation, log: CommandLog, environment: dict[str, Any]) -> PeerRun:
    """bandwidthTest binds itself to no NUMA node: it runs under numactl on the GPU's node where both
    are known, as xferbench's workers and nvbandwidth are bound, so placement is no difference."""
    run = PeerRun("bandwidthTest", executable, log)
    _bind(run, validation, environment)
    return run


def run_nvbandwidth(peer: PeerRun, validation: Validation) -> Path:
    """nvbandwidth's copy-engine tests at every size of the plan, each run kept whole with its command,
    exit code and time, written as it ends."""
    path = validation.folder / "peers" / "nvbandwidth.json"
    runs: list[dict[str, Any]] = []
    for planned in (c for c in validation.peer_commands() if c.peer == "nvbandwidth"):
        done = peer(planned.arguments, planned.seconds)
        if done is None:
            break
        code, seconds, text, command = done
        run: dict[str, Any] = {"buffer_size_mib": planned.nbytes // 2**20, "buffer_size_bytes": planned.nbytes,
                               "command": shlex.join(command), "environment": peer.environment, "exit_code": code,
                               "seconds": round(seconds, 2), "stdout_stderr_raw": text}  # fmt: skip
        run["output"] = json_object(text, ("nvbandwidth",))
        runs.append(run)
        path.write_text(json.dumps({"tool": "nvbandwidth", "binary": peer.executable, "runs": runs}, indent=1) + "\n", encoding="utf-8")
    return path


def run_bandwidthtest(peer: PeerRun, validation: Validation) -> Path:
    """bandwidthTest's host-to-device copies from pinned and from pageable memory, in range mode at
    exactly the bytes of each size of the plan, each run under its command and exit code, written as it ends."""
    path = validation.folder / "peers" / "bandwidthTest.txt"
    path.write_text("", encoding="utf-8")
    for planned in (c for c in validation.peer_commands() if c.peer == "bandwidthTest"):
        done = peer(planned.arguments, planned.seconds)
        if done is None:
            return path
        code, _, text, command = done
        exit_line = "timed out or could not start" if code is None else str(code)
        with path.open("a", encoding="utf-8") as kept:
            kept.write(f"### bandwidthTest {planned.memory} {planned.nbytes} B\n### $ {shlex.join(command)}\n### exit {exit_line}\n"
                       f"{text.rstrip()}\n\n")  # fmt: skip
    return path


def import_peers(raw: dict[str, Path], environment: dict[str, Any], validation: Validation, shown_one: set[str],
                 notes: list[str], echo: Echo, placements: dict[str, str] | None = None) -> dict[str, Result | None]:  # fmt: skip
    """The peers' output as xferbench result files in the folder (None where it held no figure);
    what failed or was left out, added to the verdict's notes. `shown_one`: the peers that were
    shown the validated GPU alone, and so called it cuda:0."""
    from xferbench.reading import peers

    readers = {"nvbandwidth": (peers.read_nvbandwidth, "peer-nvbandwidth.json"),
               "bandwidthTest": (peers.read_bandwidthtest, "peer-bandwidthtest.json")}  # fmt: skip
    imported: dict[str, Result | None] = {}
    for name, path in raw.items():
        read, stem = readers[name]
        try:
            result = read([path], environment=environment)
        except XferbenchError as error:
            notes.append(f"{name}'s output gave no figure: " + str(error).replace(f"{validation.folder}{os.sep}", ""))
            echo(f"warning: {name}'s output gave no figure: {error}")
            imported[name] = None
            continue
        if name in shown_one and validation.device != "cuda:0":
            _shown_one(result, validation.device)
        peer = result.environment.get("peer") or {}
        if placements and name in placements:  # where it ran, for the peer check to set beside xferbench's
            peer["placement"] = placements[name]
        failed = [f"{s.label()}: {s.reason}" for s in result.series if s.status == "failed"]
        said = dict.fromkeys(str(item).replace(f"{validation.folder}{os.sep}", "") for item in [*failed, *(peer.get("not_imported") or [])])
        notes.extend(f"{name}: {item}" for item in said)  # paths inside the folder, as the reader of the verdict sees them
        result.save(path.parent.parent / stem)
        imported[name] = result
    return imported


def _shown_one(result: Result, device: str) -> None:
    """nvbandwidth, shown one GPU, calls it cuda:0: give its series and its entry the validated id."""
    for series in result.series:
        series.device = device if series.device == "cuda:0" else series.device
    listed = result.environment.get("devices") or []
    for entry in [d for d in listed if d.get("id") == device]:
        listed.remove(entry)
    for entry in listed:
        if entry.get("id") == "cuda:0":
            entry["id"] = device


def _points(series: Series) -> dict[int, float]:
    return {p.bytes: p.mbps for p in series.ok_points() if p.mbps}


LINK_FILE = "link.json"


def _ours(files: Mapping[str, Result | None]) -> dict[str, Result]:
    """xferbench's own files that were written, by file name, the sweeps first and link.json last.

    Every figure of the verdict is looked for in all of them, and the first file in this order that
    holds a size gives it: where a sweep and the long link run both measured a size (256 MiB), the
    sweep's figure stands, for the peers ran at the sweeps' sizes and link.json's run is timed to
    give NVML's byte count 10 s and more; where no sweep has the size (a large sweep cut short, a
    --quick run out of time), link.json's figure is used rather than none."""
    written = {f"{stem}.json": result for stem, result in files.items() if result is not None}
    return dict(sorted(written.items(), key=lambda item: item[0] == LINK_FILE))  # a stable sort: the sweeps keep their order


def _figures(results: validation_checks.Results, framework: str, mode: str, device: str, method: str | None = None) -> dict[int, tuple[float, str]]:
    """MB/s by bytes of every h2d copy of one path on one device, with the name of the file it came
    from ("" where none was given): the first file in the order given that holds a size gives it."""
    found: dict[int, tuple[float, str]] = {}
    for file, result in validation_checks.named(results):
        for series in result.series:
            if ((series.framework, series.mode, series.device, series.direction) == (framework, mode, device, H2D)
                    and series.op == "copy" and (method is None or series.method == method)):  # fmt: skip
                for nbytes, mbps in _points(series).items():
                    found.setdefault(nbytes, (mbps, file))
    return found


def _pick(results: validation_checks.Results, framework: str, mode: str, device: str, method: str | None = None) -> dict[int, float]:
    """MB/s by bytes of every h2d copy of one path on one device, over all the files (_figures, without the file)."""
    return {nbytes: mbps for nbytes, (mbps, _) in _figures(results, framework, mode, device, method).items()}


def _mib(nbytes: int) -> str:
    return f"{nbytes // 2**20} MiB" if nbytes % 2**20 == 0 else size(nbytes)


def _by_file(figures: Mapping[int, tuple[float, str]], sizes: Sequence[int]) -> str:
    """Which file gave which of the sizes, where more than one file did: "; xferbench's figures from
    default.json at 96 MiB, large.json at 256 MiB and 1024 MiB"; else nothing."""
    files: dict[str, list[int]] = {}
    for nbytes in sizes:
        files.setdefault(figures[nbytes][1], []).append(nbytes)
    if len(files) < 2 or "" in files:
        return ""
    return "; xferbench's figures from " + ", ".join(f"{file} at {' and '.join(map(_mib, at))}" for file, at in files.items())


def peers_check(ours: validation_checks.Results, nvbandwidth: Result | None, device: str) -> Verdict:
    """xferbench's streamed raw pinned copy against nvbandwidth's copy-engine figure, the sizes from
    16 MiB both measured judged together: both queue the copies behind a held stream and time them with
    events, so a median apart by more than a few per cent means one of them times something besides the
    link. Each of xferbench's figures is taken from the first of its files that holds the size (_ours).
    The figure names the file of xferbench's figures and gives each side's placement, whatever the status,
    saying where they differ; a FAIL gives its likely causes in order of the evidence."""
    name = f"streamed raw pinned copy within {PEER_AGREEMENT:.0%} of nvbandwidth's copy engine from {AGREEMENT_BYTES // 2**20} MiB (median)"
    if nvbandwidth is None:
        return Verdict(name, NA, "nvbandwidth did not run or gave no figure (see peers/commands.txt)")
    ours_at, theirs_at = _our_placement(ours, device), _peer_placement(nvbandwidth)
    placed = f"placement: xferbench {ours_at}; nvbandwidth {theirs_at}"
    if placement_gap("nvbandwidth", ours_at, theirs_at):
        placed = "nvbandwidth did not run on the binding xferbench's workers had; " + placed
    raw = _figures(ours, "cuda", "raw_pinned", device, STREAMED)
    peer = _pick([nvbandwidth], "nvbandwidth", "host_to_device_memcpy_ce", device)
    shared = sorted(b for b in raw.keys() & peer.keys() if b >= AGREEMENT_BYTES)
    if not raw:
        read = validation_checks.sources(file for file, _ in validation_checks.named(ours))
        return Verdict(name, NA, f"xferbench's streamed raw pinned copy measured nothing on {device}{read}; {placed}")
    if not shared:
        return Verdict(name, NA, f"no size from {AGREEMENT_BYTES // 2**20} MiB measured by both on {device}; {placed}")
    gaps = [(raw[b][0] / peer[b] - 1, b) for b in shared]
    middle = statistics.median(gap for gap, _ in gaps)
    worst, at = max(gaps, key=lambda gap: abs(gap[0]))
    status = PASS if abs(middle) <= PEER_AGREEMENT else FAIL
    middle = 0.0 if round(middle, 3) == 0 else middle  # -0.0% reads as a sign where there is none
    worst = 0.0 if round(worst, 3) == 0 else worst
    figure = (f"median {middle:+.1%} over {len(shared)} size{'s' if len(shared) > 1 else ''} (worst {worst:+.1%} at"
              f" {size_label(at)}: xferbench {rate(raw[at][0])}{validation_checks.source(raw[at][1])}, nvbandwidth {rate(peer[at])} MB/s)"
              f"{_by_file(raw, shared)}; {placed}")  # fmt: skip
    if status == FAIL:
        figure += "; likely causes, in order of the evidence: " + "; ".join(_peer_causes(ours_at, theirs_at, nvbandwidth))
    return Verdict(name, status, figure)


def _our_placement(ours: validation_checks.Results, device: str) -> str:
    """Where xferbench's raw copy ran: its worker's binding, as the series recorded it."""
    for _, result in validation_checks.named(ours):
        for series in result.series:
            if (series.framework, series.mode, series.device, series.method) == ("cuda", "raw_pinned", device, STREAMED):
                return placement(series) or "placement not recorded"
    return "placement not recorded"


# A peer run without numactl, as the peer check's figure names its placement and as the peers section
# says it ran: nvbandwidth binds its own CPUs (by NVML's ideal affinity, where NVML gives one),
# bandwidthTest binds nothing.
UNBOUND = {"nvbandwidth": ("its own CPU binding only (no numactl: memory wherever it landed)",
                           "without numactl, on its own CPU binding only, its memory wherever it landed"),
           "bandwidthTest": ("no binding (no numactl: CPUs and memory wherever the scheduler put them)",
                             "without numactl, unbound: its CPUs and memory wherever the scheduler put them")}  # fmt: skip


def _peer_placement(result: Result) -> str:
    """Where a peer ran: under numactl (as xferbench's workers are bound) or on its own binding, as the
    run recorded it, else as its commands show it."""
    peer = result.environment.get("peer") or {}
    if peer.get("placement"):
        return str(peer["placement"])
    commands = peer.get("commands") or []
    bound = [c for c in commands if c.split() and c.split()[0].endswith("numactl")]
    if commands and len(bound) == len(commands):
        return under_numactl(bound[0].split())
    if bound:
        return f"under numactl for {len(bound)} of its {len(commands)} runs"
    return (UNBOUND.get(str(peer.get("tool")), UNBOUND["nvbandwidth"])[0] if commands
            else "placement not recorded (imported from its output)")  # fmt: skip


def _memory_node(words: str) -> int | None:
    """The NUMA node a placement in words binds memory to (xferbench's "NUMA node N", numactl's "--membind=N"), if any."""
    found = re.search(r"(?:NUMA node |--membind=)(\d+)", words)
    return int(found.group(1)) if found else None


def placement_gap(peer: str, ours_at: str, theirs_at: str) -> str | None:
    """Where a peer did not run as xferbench's workers did, in words: its memory bound to another node or
    to none, or under numactl for some runs only. None where both bound memory to the same node, neither
    bound it, or either side's placement is not recorded (nothing can be said then)."""
    if "not recorded" in ours_at or "not recorded" in theirs_at:
        return None
    if not theirs_at.startswith("under numactl for") and _memory_node(ours_at) == _memory_node(theirs_at):
        return None
    how = next((plain for words, plain in UNBOUND.values() if words == theirs_at), theirs_at)
    return f"{peer} ran {how}; xferbench's workers were {ours_at}"


def _peer_causes(ours_at: str, theirs_at: str, nvbandwidth: Result) -> list[str]:
    """What most likely parts the two figures, strongest evidence first: different placements, then a
    peer figure of too few samples, then the link itself (moving between runs)."""
    causes = []
    if ours_at.startswith("bound") != theirs_at.startswith("under numactl"):
        causes.append("placement: the two ran with different NUMA binding (one bound to the GPU's node, one not)")
    samples = min((s.params or {}).get("samples") or 0 for s in nvbandwidth.series) if nvbandwidth.series else 0
    if samples and samples < 3:
        causes.append(f"timing: nvbandwidth's figure is {samples} sample{'s' if samples > 1 else ''} (validate with"
                      " --max-minutes high enough to run it with -i 3)")  # fmt: skip
    causes.append("the link itself between the two runs: repeat both, one after the other")
    return causes


def peers_table(ours: validation_checks.Results, imported: Mapping[str, Result | None], device: str) -> list[str]:
    """Markdown: at each size both measured, xferbench's raw copies beside each peer, as ratios; then,
    where the files are named, which of xferbench's files the figures came from."""
    nvb, bt = imported.get("nvbandwidth"), imported.get("bandwidthTest")
    mine = {label: _figures(ours, "cuda", mode, device, method)
            for label, mode, method in (("xferbench raw pinned, streamed", "raw_pinned", STREAMED),
                                        ("xferbench raw pinned, per call", "raw_pinned", PER_CALL),
                                        ("xferbench raw pageable, per call", "raw_pageable", PER_CALL))}  # fmt: skip
    plain = {label: {nbytes: mbps for nbytes, (mbps, _) in figures.items()} for label, figures in mine.items()}
    columns = [("xferbench raw pinned, streamed", plain["xferbench raw pinned, streamed"]),
               ("xferbench raw pinned, per call", plain["xferbench raw pinned, per call"]),
               ("nvbandwidth copy engine", _pick([nvb], "nvbandwidth", "host_to_device_memcpy_ce", device) if nvb else {}),
               ("bandwidthTest pinned", _pick([bt], "bandwidthTest", "pinned", device) if bt else {}),
               ("xferbench raw pageable, per call", plain["xferbench raw pageable, per call"]),
               ("bandwidthTest pageable", _pick([bt], "bandwidthTest", "pageable", device) if bt else {})]  # fmt: skip
    pinned = columns[0][1] or columns[1][1]
    peers = [(label, points) for label, points in columns[2:] if points]  # the pageable copies sit beside bandwidthTest's
    theirs = set().union(*(points.keys() for label, points in columns[2:] if not label.startswith("xferbench")))
    sizes = sorted(b for b in theirs if b in pinned or b in columns[4][1])  # a row where a peer and xferbench both measured
    if not sizes:
        return ["No size was measured by both xferbench and a peer on this GPU."]
    header = ["size", *(label for label, points in columns[:2] if points), *(label for label, _ in peers),
              "streamed / nvbandwidth", "streamed / bandwidthTest pinned", "pageable / bandwidthTest pageable"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---:|" * len(header)]
    get = dict(columns)
    for nbytes in sizes:
        cells = [size_label(nbytes)]
        cells += [rate(points.get(nbytes)) if nbytes in points else "–" for label, points in columns[:2] if points]
        cells += [rate(points.get(nbytes)) if nbytes in points else "–" for _, points in peers]
        for ours_label, other in (("xferbench raw pinned, streamed", "nvbandwidth copy engine"),
                                  ("xferbench raw pinned, streamed", "bandwidthTest pinned"),
                                  ("xferbench raw pageable, per call", "bandwidthTest pageable")):  # fmt: skip
            a, b = get[ours_label].get(nbytes), get[other].get(nbytes)
            cells.append(f"{a / b:.3f}" if a and b else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return lines + _table_sources(mine, sizes, [file for file, _ in validation_checks.named(ours)])


def _table_sources(mine: Mapping[str, Mapping[int, tuple[float, str]]], sizes: Sequence[int], order: Sequence[str]) -> list[str]:
    """Below the table: which of xferbench's files its figures came from (in the files' `order`), and where
    link.json's stand in for a sweep's; nothing where the files are not named."""
    used: dict[str, set[int]] = {}
    for figures in mine.values():
        for nbytes in sizes:
            if nbytes in figures:
                used.setdefault(figures[nbytes][1], set()).add(nbytes)
    if not used or "" in used:
        return []
    sweeps = [file for file in order if file in used and file != LINK_FILE]
    parts = [f"from {', '.join(sweeps)}"] if sweeps else []
    if LINK_FILE in used:
        at = ", ".join(size_label(n) for n in sorted(used[LINK_FILE]))
        parts.append(f"from {LINK_FILE}'s long run at {at}, where no sweep measured it")
    return ["", f"xferbench's figures in this table are {'; '.join(parts)}."]


def size_label(nbytes: int) -> str:
    """A size as both tools name it: nvbandwidth's whole MiB, with xferbench's decimal figure beside."""
    return f"{nbytes // 2**20} MiB ({size(nbytes)})" if nbytes % 2**20 == 0 else size(nbytes)


def _ceiling(ours: validation_checks.Results, device: str) -> tuple[float, int, str, str] | None:
    """The raw pinned copy at its largest size, streamed where it ran (the link's own rate here): MB/s,
    bytes, how it was timed, and the file it came from."""
    for method in (STREAMED, PER_CALL):
        figures = _figures(ours, "cuda", "raw_pinned", device, method)
        if figures:
            largest = max(figures)
            return figures[largest][0], largest, method, figures[largest][1]
    return None


def checks_for(files: Mapping[str, Result | None], imported: Mapping[str, Result | None], device: str,
               absent: str = "not written") -> list[Verdict]:  # fmt: skip
    """Every check of the verdict, from xferbench's files by stem (None: not there) and the peers' results."""
    ours = _ours(files)
    return [validation_checks.completed_check({f"{stem}.json": r for stem, r in files.items()}, absent), *validation_checks.run_checks(ours),
            peers_check(ours, imported.get("nvbandwidth"), device)]  # fmt: skip


BUDGET_NOT_RECORDED = ("The run's time budget (--max-minutes, its estimate, the time it took, what was trimmed) and its notes (a"
                       " sweep stopped, a peer skipped) are not recorded: the folder has no verdict.md or validate.log that says them.")  # fmt: skip


@dataclass
class Record:
    """What a validation folder says of the run that wrote it, for its verdict made again from its files
    (`validate --reread`): what only the run knew (its budget, its notes) comes from its own verdict.md,
    else from the console log the GPU run script keeps (validate.log), else is said not recorded."""

    made: str | None = None  # "xferbench 0.1.0+source on 2026-11-26": the run's xferbench and date
    budget_from: str | None = None  # the file its budget facts came from; None: not recorded
    estimated_s: float | None = None  # the estimate as the run printed it, not as this xferbench would plan it
    absent: list[str] = field(default_factory=list)  # the folder's usual files that are not in it
    said: list[str] = field(default_factory=list)  # how figures were got where their usual file is missing


def _link_fact(device: dict[str, Any]) -> tuple[str, str | None]:
    """The verdict's link row: on a Grace node the NVLink-C2C link and its ceiling, as the checks judge by (NVML
    still reads a PCIe link there, which is not the host link); elsewhere the PCIe link's maximum."""
    if c2c.is_c2c(device):
        known = c2c.ceiling(device)
        return "host link", known[1] if known else c2c.unknown_ceiling(device)
    facts = gpu_link_facts(device)
    return "PCIe link, maximum", f"Gen{facts['pcie_gen_max']} x{facts['pcie_width_max']}" if facts.get("pcie_gen_max") else None


def verdict_page(validation: Validation, files: dict[str, Result | None], imported: dict[str, Result | None],
                 checks: Sequence[Verdict], notes: Sequence[str], record: Record | None = None) -> str:  # fmt: skip
    """verdict.md: the answer first, then the figures it rests on, then what is in the folder. With a
    `record`, the page is made again from a folder's files: it says so, and takes the run's own facts
    from the record rather than from this xferbench's plan."""
    ours = _ours(files)
    environment = next(iter(ours.values())).environment if ours else {}
    device = device_entry(environment, validation.device)
    name = device.get("name") or validation.device
    nvml = gpu_link_facts(device)  # NVML's, or amdsmi's for an AMD GPU
    failed = [c for c in checks if c.status == FAIL]
    unproven = [c for c in checks if c.status == NA]
    verdict = ("FAIL" if failed else "INCOMPLETE" if unproven else "PASS")
    why = "; ".join(filter(None, (f"failed: {'; '.join(c.name for c in failed)}" if failed else "",
                                  f"could not run: {'; '.join(c.name for c in unproven)}" if unproven else "")))
    why = why or "every check passed"
    from xferbench import __version__

    quick = " (--quick: a smoke test, not a validation)" if validation.quick else ""
    today = time.strftime("%Y-%m-%d")
    made = (f"Made by xferbench {__version__} on {today}{quick}." if record is None else
            f"Made by {record.made or 'an xferbench whose version is not recorded'}{quick}; this verdict made again from its"
            f" files by xferbench {__version__} on {today}, measuring nothing.")  # fmt: skip
    lines = [f"# xferbench validation: {name} ({validation.device}) on {environment.get('host') or 'this machine'}", "",
             f"**{verdict}**: {why}. {made}", ""]  # fmt: skip
    if record is not None and record.budget_from is None:
        lines += [BUDGET_NOT_RECORDED, ""]
    elif validation.max_minutes is not None:
        estimate = validation.estimate_s() if record is None else record.estimated_s
        estimated = f"estimated {budget.minutes(estimate)}" if estimate is not None else "estimate not recorded"
        took = (f", took {budget.minutes(validation.took_s)}" if validation.took_s is not None else
                ", time taken not recorded" if record is not None else "")  # fmt: skip
        trimmed = ": " + "; ".join(validation.trimmed) + "." if validation.trimmed else ": nothing was trimmed."
        said = f"; read from {record.budget_from}" if record is not None and record.budget_from != "verdict.md" else ""
        lines += [f"Run within --max-minutes {validation.max_minutes:g} ({estimated}{took}{said}){trimmed}", ""]
    elif validation.took_s is not None and (record is None or record.estimated_s is not None):
        estimate = validation.estimate_s() if record is None else record.estimated_s
        lines += [f"Run took {budget.minutes(validation.took_s)} (estimated {budget.minutes(estimate or 0.0)}).", ""]
    if record is not None and record.absent:
        lines += [f"Not in this folder: {', '.join(record.absent)}.", ""]
    if record is not None and record.said:
        lines += [" ".join(record.said), ""]
    node = nvml.get("numa_node")
    no_node = nvml.get("numa_node_reason") or device.get("amdsmi_reason") or "no NVML facts"
    facts = [("GPU", name), ("PCI address", nvml.get("pci_bus_id") or device.get("pci_bus_id")), ("UUID", nvml.get("uuid") or device.get("uuid")),
             ("driver", device.get("driver") or nvml.get("driver")), ("CUDA (driver)", device.get("cuda_driver")),
             _link_fact(device),
             ("GPU's NUMA node", node if node is not None else f"unknown ({no_node})"),
             ("CPU", environment.get("cpu")), ("OS", environment.get("os"))]  # fmt: skip
    lines += ["| | |", "|---|---|", *(f"| {k} | {v if v is not None else '—'} |" for k, v in facts), ""]
    lines += ["## Checks", "", validation_checks.render(checks).rstrip(), ""]
    ceiling = _ceiling(ours, validation.device)
    lines += ["## Published figures for this model", ""]
    published = references.published_line(name, None)
    published = published[:1].upper() + published[1:]
    if ceiling is None:
        lines.append(f"- Here: no raw pinned copy was measured{validation_checks.sources(ours)}. {published}.")
    else:
        mbps, nbytes, method, file = ceiling
        lines.append(f"- Here: the raw pinned copy, {method}, at {size_label(nbytes)}: {mbps / 1e3:.1f} GB/s{validation_checks.source(file)}. {published}.")
    floor = references.floor_for(name)
    if floor is None:
        lines.append("- Health-check floor: none published for this model.")
    else:
        where = "" if ceiling is None else (" Above it." if ceiling[0] / 1e3 >= floor.low_gbps else " **Below it.**")
        lines.append(f"- Health-check floor: {references.floor_line(floor)}.{where}")
    lines += ["", "Every published figure xferbench knows, with its kind, date and source: docs/published-figures.md in"
              " xferbench's repository.", ""]  # fmt: skip
    lines += ["## xferbench against the peers on this machine", "",
              "MB/s (10^6 B/s) of host-to-device copies at the sizes both measured; a ratio above 1 means xferbench read faster.", ""]  # fmt: skip
    lines += peers_table(ours, imported, validation.device) + [""]
    ours_at = _our_placement(ours, validation.device)
    for peer_name, result in imported.items():
        gap = None if result is None else placement_gap(peer_name, ours_at, _peer_placement(result))
        if gap:
            lines.append(f"- {PLACEMENT_LINE}{gap}. Their figures may differ by where the memory sat, not by how each"
                         " times (peers/commands.txt has each command).")  # fmt: skip
    for name_, why_missing in validation.missing.items():
        lines.append(f"- {name_} did not run: {why_missing}.")
    for note in notes:
        lines.append(f"- {note}")
    lines += ["", "## In this folder", ""]
    here = {str(p.relative_to(validation.folder)) for p in validation.folder.rglob("*") if p.is_file()}
    here |= {"verdict.md"} if record is None else set()  # a run writes its verdict there; a re-read, only where told
    lines += [f"- `{path}`: {what}" for path, what in FILES.items() if path in here]
    lines += [f"- `{path}`" for path in sorted(here - set(FILES))]
    return "\n".join(lines) + "\n"


PLACEMENT_LINE = "Placement: "  # starts the peers section's line for a peer that ran otherwise than xferbench's workers

# What a folder's earlier verdict.md and validate.log say of the run, as verdict_page and the run printed it.
VERDICT_HEAD = re.compile(r"^# xferbench validation: .* \((cuda(?::\d+)?)\) on ", re.MULTILINE)
MADE_BY = re.compile(r"Made by (xferbench \S+ on \d{4}-\d{2}-\d{2})( \(--quick)?")
BUDGET_LINE = re.compile(r"^Run within --max-minutes ([0-9.]+) \((?:estimated ([0-9.]+) min|estimate not recorded)"
                         r"(?:, took ([0-9.]+) min|, time taken not recorded)?(?:; read from [^)]*)?\)(?:: (.*))?$", re.MULTILINE)  # fmt: skip
PLAN_LINE = re.compile(r"^plan: about ([0-9.]+) min in all(?: \(([0-9]+) s\))?, within --max-minutes ([0-9.]+)", re.MULTILINE)
RUN_TOOK = re.compile(r"^Run took ([0-9.]+) min \(estimated ([0-9.]+) min\)", re.MULTILINE)  # a run without --max-minutes
TRIMMED_LINE = re.compile(r"^\s*trimmed to fit: (.*)$", re.MULTILINE)
DID_NOT_RUN = re.compile(r"^- (nvbandwidth|bandwidthTest) did not run: (.*)\.$")
RAW_OUTPUT = {"nvbandwidth": ("peer-nvbandwidth.json", "peers/nvbandwidth.json"),
              "bandwidthTest": ("peer-bandwidthtest.json", "peers/bandwidthTest.txt")}  # fmt: skip


def _read_text(path: Path) -> str:
    """A text file of the folder; a one-line XferbenchError saying what to do where it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        why = getattr(error, "strerror", None) or "not UTF-8 text"
        raise XferbenchError(f"{path}: cannot read: {why}; restore it from the run's pack, or move it out of the folder to"
                             " re-read the rest")  # fmt: skip


def _load_kept(path: Path) -> Result:
    """One of the folder's result files; a one-line XferbenchError saying what to do where it is damaged."""
    try:
        return load(path)
    except XferbenchError as error:
        raise XferbenchError(f"{error}; restore it from the run's pack, or move it out of the folder to re-read the rest") from None


def _old_notes(text: str, validation: Validation) -> list[str]:
    """The notes of an earlier verdict: each bullet of its peers section but the lines the page makes
    itself; a peer that did not run goes back to `validation.missing`."""
    start, end = text.find("\n## xferbench against the peers on this machine"), text.find("\n## In this folder")
    notes = []
    for line in text[start:end if end > start else None].splitlines() if start >= 0 else []:
        found = DID_NOT_RUN.match(line)
        if found:
            validation.missing[found.group(1)] = found.group(2)
        elif line.startswith("- ") and not line.startswith(f"- {PLACEMENT_LINE}"):
            notes.append(line[2:])
    return notes


def _budget(validation: Validation, record: Record, verdict: str | None, log: tuple[str, str] | None) -> None:
    """The run's --max-minutes, estimate, time taken and trims, from its verdict, else from its console log."""
    found = BUDGET_LINE.search(verdict) if verdict is not None else None
    if found:
        minutes, estimate, took, trimmed = found.groups()
        validation.max_minutes, record.budget_from = float(minutes), "verdict.md"
        record.estimated_s = float(estimate) * 60 if estimate else None
        validation.took_s = float(took) * 60 if took else None
        if trimmed and trimmed != "nothing was trimmed.":
            validation.trimmed = trimmed.removesuffix(".").split("; ")
    elif verdict is not None and BUDGET_NOT_RECORDED not in verdict:
        record.budget_from = "verdict.md"  # a run without --max-minutes: no budget to say, but perhaps its time
        ran = RUN_TOOK.search(verdict)
        if ran:
            validation.took_s, record.estimated_s = float(ran.group(1)) * 60, float(ran.group(2)) * 60
    elif log is not None:
        name, text = log
        plan = PLAN_LINE.search(text)
        record.budget_from = name
        if plan:
            record.estimated_s = float(plan.group(2)) if plan.group(2) else float(plan.group(1)) * 60
            validation.max_minutes = float(plan.group(3))
            validation.trimmed = TRIMMED_LINE.findall(text)


def _console_log(folder: Path) -> tuple[str, str] | None:
    """validate's console output as the GPU run script keeps it (validate.log in the folder or beside
    it), with the name to give it: only the budget, its trims and the warnings are read from it."""
    for path, said in ((folder / "validate.log", "validate.log"), (folder.parent / "validate.log", "validate.log beside the folder")):
        if path.is_file():
            try:
                return said, path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
    return None


def _run_settings(validation: Validation, record: Record, files: Mapping[str, Result | None], verdict: str | None,
                  device: str | None) -> None:  # fmt: skip
    """The device (`device` where given), --quick and frameworks of the run, from its verdict, else from its result files' settings."""
    sweeps = [r.config for stem, r in files.items() if r is not None and stem != "link"]
    link = files.get("link")
    head = VERDICT_HEAD.search(verdict) if verdict is not None else None
    recorded = head.group(1) if head else next((str(c["device"]) for c in [*sweeps, *([link.config] if link else [])] if c.get("device")), None)
    if device is not None:
        validation.device = device
    elif recorded is None:
        record.said.append(f"No file records the validated GPU: {validation.device} is taken (give --device).")
    else:
        validation.device = recorded if ":" in recorded else f"{recorded}:0"
    made = MADE_BY.search(verdict) if verdict is not None else None
    if made:
        validation.quick = bool(made.group(2))
    else:  # the settings --quick gives the sweeps and the link run
        quick_sweep = any((c.get("timing") or {}).get("max_samples") == QUICK_TIMING.max_samples for c in sweeps)
        quick_link = link is not None and (link.config.get("timing") or {}).get("min_time_s") == float(QUICK_LINK_TIME[1])
        validation.quick = quick_sweep or quick_link
    validation.frameworks = tuple(sweeps[0].get("frameworks") or ()) if sweeps else ()


def _read_peer(name: str, folder: Path, environment: dict[str, Any], device: str, record: Record, notes: list[str]) -> Result | None:
    """A peer's figures: its result file, else its own output read again in memory (nothing written), else None."""
    from xferbench.reading import peers

    kept, raw = RAW_OUTPUT[name]
    if (folder / kept).exists():
        return _load_kept(folder / kept)
    if not (folder / raw).exists():
        return None
    read = peers.read_nvbandwidth if name == "nvbandwidth" else peers.read_bandwidthtest
    try:
        result = read([folder / raw], environment=environment)
    except XferbenchError as error:
        notes.append(f"{name}'s output gave no figure: " + str(error).replace(f"{folder}{os.sep}", ""))
        return None
    record.said.append(f"{name}'s figures were read from {raw}, as {kept} is not in the folder.")
    if name == "nvbandwidth" and device != "cuda:0" and "CUDA_VISIBLE_DEVICES" in _read_text(folder / raw):
        _shown_one(result, device)
    return result


def reread(folder: Path, device: str | None = None) -> tuple[Validation, dict[str, Result | None], dict[str, Result | None],
                                                              list[str], Record]:  # fmt: skip
    """What a validation folder's files give for its verdict, read only: the Validation with the run's own
    facts (device, --quick, budget, peers that did not run), xferbench's files by stem (None: not in the
    folder), the peers' results, the notes and the record of what was missing. Nothing is measured and
    nothing is written. Raises XferbenchError for a folder that is not a validation or a file that cannot be read."""
    if not folder.is_dir():
        raise XferbenchError(f"{folder}: {'a file, not a folder' if folder.exists() else 'no such folder'}; give the folder"
                             " `xferbench validate` wrote (it holds verdict.md, default.json, ...)")  # fmt: skip
    present = [name for name in FILES if (folder / name).is_file()]
    if not present:
        raise XferbenchError(f"{folder} holds none of a validation's files ({', '.join(list(FILES)[:5])}, ...); give the folder"
                             " `xferbench validate` wrote")  # fmt: skip
    verdict = _read_text(folder / "verdict.md") if (folder / "verdict.md").is_file() else None
    files: dict[str, Result | None] = {stem: _load_kept(folder / f"{stem}.json") if (folder / f"{stem}.json").is_file() else None
                                       for stem in ("default", "large", "link")}  # fmt: skip
    validation, record, notes = Validation(folder), Record(), []
    _run_settings(validation, record, files, verdict, device)
    if not validation.has_link_run and files["link"] is None:
        files.pop("link")  # a run without cuda plans no link run: its absence is no fault
    ours = [r for r in files.values() if r is not None]
    environment = ours[0].environment if ours else {}
    made = MADE_BY.search(verdict) if verdict is not None else None
    record.made = made.group(1) if made else (f"xferbench {ours[0].xferbench_version or 'of a version not recorded'} on"
                                             f" {ours[0].created[:10]}" if ours else None)  # fmt: skip
    log = _console_log(folder) if verdict is None else None
    _budget(validation, record, verdict, log)
    if verdict is not None:
        notes += _old_notes(verdict, validation)
    elif log is not None:
        notes += [line.removeprefix("warning: ") for line in log[1].splitlines() if line.startswith("warning: ")]
    imported = {name: _read_peer(name, folder, environment, validation.device, record, notes) for name in RAW_OUTPUT}
    if verdict is None:  # what the run said of its peers' output, said again from their files
        for name, result in imported.items():
            peer = (result.environment.get("peer") or {}) if result is not None else {}
            failed = [f"{s.label()}: {s.reason}" for s in (result.series if result is not None else []) if s.status == "failed"]
            notes += [f"{name}: {item}" for item in dict.fromkeys(map(str, [*failed, *(peer.get("not_imported") or [])]))]
    not_made = {name for name in FILES if name.startswith("link") and "link" not in files}  # no link run was planned
    not_made |= {name for peer in validation.missing for name in RAW_OUTPUT[peer]}  # a peer that did not run, as the verdict says
    record.absent = [name for name in FILES if name not in present and name not in not_made]
    return validation, files, imported, list(dict.fromkeys(notes)), record


def refuse_used_folder(folder: Path) -> None:
    """A folder that already holds a validation is never written into: it may be the only copy of one."""
    taken = [name for name in FILES if (folder / name).exists()]
    if taken:
        raise XferbenchError(f"{folder} already holds results ({taken[0]}); give another folder so nothing is overwritten")
    if folder.exists() and not folder.is_dir():
        raise XferbenchError(f"{folder} is a file; give a folder for the validation")


def run(validation: Validation, echo: Echo) -> tuple[list[Verdict], Path]:
    """The whole validation; returns the checks and the verdict's path. Raises XferbenchError for bad
    input found before anything was measured."""
    started = time.monotonic()
    folder = validation.folder
    refuse_used_folder(folder)
    workers = [name for plan in validation.sweep_plans() for name in plan.frameworks]  # each framework's series start is timed
    validation.rates = calibrate.calibrate(validation.device, validation.index, validation.has_link_run, validation.peers,
                                           len(validation.sweeps()), echo, {**os.environ, "PYTHONPATH": _python_path()},
                                           frameworks=workers)  # fmt: skip
    validation.fit()
    for line in validation.plan_lines():
        echo(line)
    deadline = None if validation.max_minutes is None else started + validation.max_minutes * 60
    folder.mkdir(parents=True, exist_ok=True)
    notes = run_nvidia_smi(folder, echo)
    files = run_sweeps(validation, echo, deadline, notes)
    ours = [r for r in files.values() if r is not None]
    environment = ours[0].environment if ours else {}
    raw: dict[str, Path] = {}
    shown_one: set[str] = set()
    placements: dict[str, str] = {}
    if validation.peers:
        log = CommandLog(folder / "peers" / "commands.txt", echo)
        runners = {"nvbandwidth": (nvbandwidth_peer, run_nvbandwidth), "bandwidthTest": (bandwidthtest_peer, run_bandwidthtest)}
        for name, executable in validation.peers.items():
            make, runner = runners[name]
            peer = make(executable, validation, log, environment)
            peer.deadline = None if deadline is None else deadline - validation.rates.finish_s
            echo(f"{name}: {executable}" + (f" ({'; '.join(peer.notes)})" if peer.notes else ""))
            raw[name] = runner(peer, validation)
            notes += peer.notes + ([peer.stopped] if peer.stopped else [])
            if "CUDA_VISIBLE_DEVICES" in peer.environment:
                shown_one.add(name)
            placements[name] = peer.placement()
    imported = import_peers(raw, environment, validation, shown_one, notes, echo, placements)
    checks = checks_for(files, imported, validation.device)
    from xferbench.reading import plot, report

    # A sweep stopped for the budget before its first point writes a file with nothing to draw: it gets no
    # figure and the verdict says so, rather than costing the run its report and verdict.
    drawable = [stem for stem, r in files.items() if r is not None and any(s.ok_points() for s in r.series)]
    notes += [f"{stem}.json holds no measured point: no figure was drawn for it" for stem, r in files.items()
              if r is not None and stem not in drawable]  # fmt: skip
    written = [folder / f"{stem}.json" for stem in drawable]
    for path in written:
        picks, _ = select([path])
        plot.save(plot.figure(picks, title=f"xferbench validation: {path.stem}"), path.with_suffix(".png"))
    if written:
        peer_files = [folder / stem for stem in ("peer-nvbandwidth.json", "peer-bandwidthtest.json") if (folder / stem).exists()]
        picks, empty = select(written + peer_files)
        first = folder / "default.png" if (folder / "default.png").exists() else None
        text = report.render(picks, empty, plot=first, out=folder / "report.md", title="xferbench GPU validation")
        report.save(text + "\n### Validation checks\n\n" + validation_checks.render(checks), folder / "report.md")
    verdict = folder / "verdict.md"
    validation.took_s = time.monotonic() - started
    echo(f"validate took {validation.took_s:.1f} s, estimated {validation.estimate_s():.1f} s")
    verdict.write_text(verdict_page(validation, files, imported, checks, notes), encoding="utf-8")
    return checks, verdict


__all__ = ["Record", "Validation", "checks_for", "find_peers", "peers_check", "peers_table", "reread", "run", "verdict_page"]
