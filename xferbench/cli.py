"""The command line: a thin Typer layer over plain functions that tests call too."""

from __future__ import annotations

import codecs
import contextlib
import errno
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from typer.core import TyperGroup
from rich.markup import escape

from xferbench.measuring import running
from xferbench.measuring.backends import BACKENDS, SimLink, mode_defaults, path_availability, sweep_flags
from xferbench.core.errors import XferbenchError
from xferbench.measuring.backends.pipeline import DEFAULT_LOADER_WORKERS
from xferbench.core.results import DEFAULT_FOLDER, OutputFile, Result, Selection, check_writable, host_name, output_path, refuse_existing, refuse_unless_regular, safe_name, select
from xferbench.core.spec import H2D, PER_CALL, STREAMED
from xferbench.measuring.sweep import (
    DEFAULT_BATCH_SIZES,
    MAX_BATCH,
    Plan,
    SweepConfig,
    auto_device,
    make_plan,
    parse_batch_sizes,
    parse_shape,
    start_runners,
)
from xferbench.core.timing import TimingConfig
from xferbench.measuring.worker import Runner

# click's UsageError (BadParameter's base) and its bare-group help, from whichever click Typer runs on: its own
# copy (Typer 0.22 and later) or the click package; NoArgsIsHelpError is click 8.2's and later
USAGE_ERROR = next(kind for kind in typer.BadParameter.__mro__ if kind.__name__ == "UsageError")
NO_ARGS_IS_HELP: Any = getattr(sys.modules[USAGE_ERROR.__module__], "NoArgsIsHelpError", ())


class OneLineErrors(TyperGroup):
    """Every command's bad input (an option's value that is not a whole number, an unknown option, a missing
    argument: click's UsageError) as the project's one-line `error:`, exit 2, in place of Typer's boxed usage.
    Here, not in each command: click raises them while parsing, before a command's own code runs."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        with one_line_usage_errors(info_name or "xferbench"):
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: Any) -> Any:
        with one_line_usage_errors(ctx.command_path):  # a subcommand's options are parsed here, in its own make_context
            return super().invoke(ctx)


@contextlib.contextmanager
def one_line_usage_errors(path: str) -> Iterator[None]:
    """click's usage error as `error: WHAT. Try 'COMMAND -h' for help.`; `path`: the command where the error names none."""
    try:
        yield
    except NO_ARGS_IS_HELP:  # a bare group shows its help, as it should
        raise
    except USAGE_ERROR as error:
        where = error.ctx.command_path if error.ctx else path
        said = " ".join(error.format_message().split()).rstrip(".")
        raise fail(f"{said}. Try '{where} -h' for help.") from None


app = typer.Typer(
    cls=OneLineErrors,
    help="Host-to-device transfer throughput, swept over batch sizes, through each framework's real path.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from xferbench import __version__

        typer.echo(f"xferbench {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    for made in (out, err):  # sized as each command starts: COLUMNS may differ from when this module was imported
        fit(made)


def fit(made: Console) -> Console:
    """The width COLUMNS gives; else the terminal's own; piped without COLUMNS, 160, so a CI log keeps every column."""
    columns = os.environ.get("COLUMNS", "")
    made.width = int(columns) if columns.isdigit() and int(columns) > 0 else None if made.is_terminal else 160  # type: ignore[assignment]
    return made


class TrimmedLines:
    """sys.stdout or sys.stderr (whichever is current: a test may swap them), less the spaces rich pads
    each line of a table's title and caption with, where the stream is a file or a pipe: a log or a diff
    should not carry them. A terminal gets rich's output as it is (a progress bar redraws over them)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(getattr(sys, self.name), attribute)

    def write(self, text: str) -> int:
        stream = getattr(sys, self.name)
        if not stream.isatty():
            text = "\n".join(line.rstrip(" ") for line in text.split("\n"))
        with pipe_closed_as_stream_closed():
            return stream.write(text)

    def flush(self) -> None:
        with pipe_closed_as_stream_closed():
            getattr(sys, self.name).flush()


class StreamClosed(OSError):
    """A pipe closed under stdout or stderr (`xferbench compare a b | head -1`), raised without EPIPE's errno:
    click turns an EPIPE into a silent exit 1, which from compare or check reads as a failed verdict."""


@contextlib.contextmanager
def pipe_closed_as_stream_closed() -> Iterator[None]:
    """A BrokenPipeError from a standard stream raised as StreamClosed, with the OS's words."""
    try:
        yield
    except BrokenPipeError as error:
        raise StreamClosed(error.strerror or "Broken pipe") from None


def emit(text: str) -> None:
    """Text as it is (Markdown, JSON) on stdout, not through rich; a closed pipe becomes StreamClosed. Not click's echo,
    which writes UTF-8 to an ASCII stream instead of plain_streams' stand-ins."""
    with pipe_closed_as_stream_closed():
        sys.stdout.write(text)
        sys.stdout.flush()


def console(stderr: bool = False) -> Console:
    # emoji=False: rich would turn ":x:" in "--device cuda:x:" (or ":fire:" in a path) into a picture
    return fit(Console(file=TrimmedLines("stderr" if stderr else "stdout"), emoji=False))


out = console()
err = console(stderr=True)


def fail(message: str, code: int = 2) -> typer.Exit:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def stopped_starting(stop: KeyboardInterrupt) -> typer.Exit:
    """Ctrl-C or a kill before a run's first point."""
    how, code = running.how_stopped(stop)
    return fail(f"{how} while starting; nothing was measured", code)


def default_name(device: str) -> str:
    """HOST-DEVICE-TIME.json: runs from several machines can share a folder."""
    return f"{host_name()}-{device.replace(':', '')}-{time.strftime('%Y%m%d-%H%M%S')}.json"


_DEFAULT_BATCHES = ",".join(map(str, DEFAULT_BATCH_SIZES))
_NOT_DEFAULT = ", ".join(b.name for b in BACKENDS.values() if not b.in_default_sweep)


@app.command()
def sweep(
    framework: Annotated[Optional[list[str]], typer.Option("--framework", "-f", help=f"Repeatable or comma-separated: {', '.join(BACKENDS)}. Default: every installed one except {_NOT_DEFAULT}.")] = None,
    device: Annotated[Optional[list[str]], typer.Option("--device", help="auto (default), all (every CUDA GPU), cpu, cuda, cuda:N (an NVIDIA GPU, or an AMD GPU with PyTorch for ROCm), xpu, xpu:N (an Intel GPU) or mps; repeatable, each device in turn. auto picks CUDA, then XPU, then MPS, then the CPU.", show_default=False)] = None,
    concurrent: Annotated[bool, typer.Option("--concurrent", help="With several devices: after each device alone, run each path on all of them at once (a worker per device, starting each point together), with each device's figure, their sum and each one's ratio to its solo run.")] = False,
    mode: Annotated[Optional[list[str]], typer.Option("--mode", "-m", help=f"Repeatable or comma-separated. {mode_defaults()} A path the device cannot run is skipped; xferbench paths says which run by default.")] = None,
    jit: Annotated[bool, typer.Option("--jit", help="TensorFlow's jit mode only (tf.function with jit_compile=True): shorthand for --framework tf --mode jit.")] = False,
    op: Annotated[Optional[list[str]], typer.Option("--op", help="Repeatable or comma-separated. copy (default): the transfer alone; seed: the original report's cast, slice and fetch.")] = None,
    batch_sizes: Annotated[str, typer.Option(help="Comma-separated batch sizes.", show_default=_DEFAULT_BATCHES.replace(",", ", "))] = _DEFAULT_BATCHES,
    shape: Annotated[str, typer.Option(help="Shape of one uint8 item.")] = "256x256x3",
    host_buffer: Annotated[Optional[list[str]], typer.Option("--host-buffer", help="Repeatable or comma-separated: where each batch starts. numpy (default): a plain NumPy array; aligned: 64-byte aligned; pinned: page-locked (torch's pinned modes).")] = None,
    python: Annotated[Optional[list[str]], typer.Option("--python", help="Repeatable, [FRAMEWORK=]PATH: run that framework's worker with another Python (which needs numpy and the framework), e.g. tf=PATH or tf=python3.12.")] = None,
    out_path: Annotated[Optional[str], typer.Option("--out", "-o", help=f"Result file, or a folder (a name ending in /) that gets a file named by host, device and time; %h in it is this host's name. Default: {DEFAULT_FOLDER}/", show_default=False)] = None,
    csv: Annotated[bool, typer.Option("--csv", help="Also write the per-point table as CSV beside the JSON.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --out file.")] = False,
    no_link_sampling: Annotated[bool, typer.Option("--no-link-sampling", help="Do not read each CUDA series' PCIe link with NVML every 0.1 s while it runs (by default the main process polls while the worker measures).")] = False,
    no_bind: Annotated[bool, typer.Option("--no-bind", help="Do not bind each CUDA series' worker to the CPUs NVML calls ideal for its GPU and to their NUMA node's memory (by default it is bound before it allocates).")] = False,
    pipeline: Annotated[bool, typer.Option("--pipeline", help="Also the input pipelines a training loop feeds from, beside the plain copies: torch's DataLoader (loader, loader_workers, loader_pin, loader_pin_workers), then .to(device, non_blocking=True); tf.data (dataset, prefetch_to_device, copy_to_device, generator). Each point is the batches per second a loop with no compute receives on the device, verified.", rich_help_panel="Pipelines")] = False,
    overlap: Annotated[bool, typer.Option("--overlap", help="With pipelines: also time a compute kernel (a chained matmul sized to each point's batch time) alone and fed by each batch, and report how much of the batch's delivery the pipeline hid behind it.", rich_help_panel="Pipelines")] = False,
    loader_workers: Annotated[int, typer.Option("--loader-workers", help="DataLoader worker processes in torch's *_workers modes.", rich_help_panel="Pipelines")] = DEFAULT_LOADER_WORKERS,
    direction: Annotated[Optional[list[str]], typer.Option("--direction", "-d", help="Repeatable or comma-separated. h2d (default): host to device; d2h: device to host (cuda raw_*, torch pageable, pageable_into and pinned_into, cupy, jax device_put on a GPU, sim); bidir: both at once on two streams, each direction's figure and their total (cuda raw_*, torch pinned_into, sim).")] = None,
    cold_source: Annotated[bool, typer.Option("--cold-source", help="Before every timed call, overwrite a 256 MiB buffer (a memset, untimed), as CUDA samples' bandwidthTest does between its pageable copies, so each copy starts with its source out of the CPU's caches. Per-call host-to-device and host copies from pageable memory only; other series are skipped with the reason.", rich_help_panel="Timing")] = False,
    staging_chunk_kib: Annotated[Optional[int], typer.Option("--staging-chunk-kib", help="host/staged: the KiB one staging copy moves (NVIDIA does not document its driver's; default 2048).", show_default=False, rich_help_panel="host")] = None,
    timing_method: Annotated[Optional[list[str]], typer.Option("--timing", help="Repeatable or comma-separated. per-call (default): one transfer and its wait per sample, as a training step sees it; streamed: many copies queued on a held stream, timed by the device's events, as nvbandwidth does (cuda raw_*, torch pinned_into, sim).", rich_help_panel="Timing")] = None,
    warmup_calls: Annotated[int, typer.Option(help="Warm-up: at least this many calls...", rich_help_panel="Timing")] = TimingConfig.warmup_calls,
    warmup_time: Annotated[float, typer.Option(help="...and at least this many seconds, per point.", rich_help_panel="Timing")] = TimingConfig.warmup_s,
    min_samples: Annotated[int, typer.Option(help="Sample at least this many calls...", rich_help_panel="Timing")] = TimingConfig.min_samples,
    min_time: Annotated[float, typer.Option(help="...and for at least this many seconds, per point.", rich_help_panel="Timing")] = TimingConfig.min_time_s,
    max_samples: Annotated[int, typer.Option(help="Cap on samples per point.", rich_help_panel="Timing")] = TimingConfig.max_samples,
    max_time: Annotated[float, typer.Option(help="Cap on sampling seconds per point.", rich_help_panel="Timing")] = TimingConfig.max_time_s,
    settle_time: Annotated[float, typer.Option(help="Past the minimums, go on sampling for up to this many seconds while the median is uncertain by more than 5%.", rich_help_panel="Timing")] = TimingConfig.settle_s,
    sim_latency_us: Annotated[float, typer.Option(help="Simulated link latency per call (µs).", rich_help_panel="sim")] = SimLink.latency_us,
    sim_bandwidth_gbps: Annotated[float, typer.Option(help="Simulated link bandwidth (GB/s, 10^9 B).", rich_help_panel="sim")] = SimLink.bandwidth_gbps,
    sim_jitter: Annotated[float, typer.Option(help="Relative std-dev of each simulated call.", rich_help_panel="sim")] = SimLink.jitter,
    sim_seed: Annotated[int, typer.Option(help="Seed of the simulated jitter.", rich_help_panel="sim")] = SimLink.seed,
    sim_devices: Annotated[int, typer.Option(help="Simulated devices (sim:0 ... sim:N-1), each behind its own link.", rich_help_panel="sim")] = SimLink.devices,
    sim_host_bandwidth_gbps: Annotated[float, typer.Option(help="The host side all simulated devices share, split evenly among those running at once, in each direction (GB/s; 0: unlimited).", rich_help_panel="sim")] = SimLink.host_bandwidth_gbps,
) -> None:
    """Measure transfer throughput across batch sizes and save every raw sample."""
    try:
        frameworks = tuple(dict.fromkeys(f.lower() for f in split_lists(framework)))
        modes = tuple(m.lower() for m in split_lists(mode))
        if jit:
            frameworks, modes = jit_selection(frameworks, modes)
        config = SweepConfig(
            frameworks=frameworks,
            modes=modes,
            ops=tuple(dict.fromkeys(o.lower() for o in split_lists(op) or ("copy",))),
            device=",".join(device or ("auto",)),
            batch_sizes=parse_batch_sizes(batch_sizes),
            shape=parse_shape(shape),
            timing=TimingConfig(warmup_calls, warmup_time, min_samples, min_time, max_samples, max_time, settle_time),
            sim=SimLink(sim_latency_us, sim_bandwidth_gbps, sim_jitter, sim_seed, sim_devices, sim_host_bandwidth_gbps),
            host_buffers=tuple(dict.fromkeys(h.lower() for h in split_lists(host_buffer))),
            pythons=parse_pythons(python or (), frameworks),
            methods=tuple(dict.fromkeys(t.lower() for t in split_lists(timing_method) or (PER_CALL,))),
            bind=not no_bind,
            directions=tuple(dict.fromkeys(d.lower() for d in split_lists(direction) or (H2D,))),
            concurrent=concurrent,
            pipeline=pipeline,
            overlap=overlap,
            loader_workers=loader_workers,
            cold_source=cold_source,
            staging_chunk_bytes=None if staging_chunk_kib is None else staging_chunk_kib * 2**10,
        )
        if out_path is not None:  # before starting any framework: a bad --out costs nothing
            probe, numbered = output_path(out_path, "run.json")
            check_writable(probe, csv=csv, overwrite=overwrite, numbered=numbered)
        plan = make_plan(config)
    except XferbenchError as error:
        raise fail(str(error)) from None
    except KeyboardInterrupt as stop:
        raise stopped_starting(stop) from None
    output: OutputFile | None = None
    try:
        with running.terminated_as_interrupted(plan):
            path, numbered = output_path(out_path, default_name(plan.target))
            output = OutputFile(path, csv=csv, overwrite=overwrite, numbered=numbered)
            result = run_sweep(plan, output, not no_link_sampling)
    except OSError as error:  # a stream that cannot be written (stdout to a full disk): main says so
        if stream_error(error) and output is not None and output.written is not None and output.saved_points == 0:
            output.path.unlink()  # a file claimed and never given a point would block a rerun as "running"
        raise
    except XferbenchError as error:
        raise fail(str(error)) from None
    except KeyboardInterrupt as stop:  # before the first point: run_sweep handles it from there on
        raise stopped_starting(stop) from None
    failed = running.failures(result)
    if failed:
        listed = ", ".join(failed[:3]) + (", ..." if len(failed) > 3 else "")
        raise fail(f"{len(failed)} failure(s) ({listed}); see the table above and {output.path}", 1)


# What check measures beside the raw ceiling when no --path is given: each installed framework's best path.
CHECK_PATHS = {"torch": "pinned_into"}


def parse_share(text: str, option: str, zero: bool = False) -> float:
    """'80%' or '80' -> 0.8: a share above 0% (or from 0% where `zero`) up to 100%. A bare number
    below 1 is refused: '0.8' could mean 80% or 0.8%."""
    value = text.strip().removesuffix("%").strip()
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not text.strip().endswith("%") and 0 < number < 1:
        raise XferbenchError(f"{option} {text!r} is ambiguous: write {number * 100:g}% or {number:g}%")
    if not math.isfinite(number) or not (0 <= number if zero else 0 < number) or number > 100:
        low = "from 0%" if zero else "above 0%"
        raise XferbenchError(f"{option} {text!r}: give a percentage {low} and at most 100%, such as 80%")
    return number / 100


def check_paths(paths: Sequence[str]) -> list[tuple[str, str]]:
    """--path FRAMEWORK/MODE, checked against the registered paths; none given: CHECK_PATHS's installed ones."""
    if not paths:
        return [(name, mode) for name, mode in CHECK_PATHS.items() if not BACKENDS[name].missing()]
    found = []
    for text in paths:
        name, sep, mode = text.strip().lower().partition("/")
        backend = BACKENDS.get(name)
        if not sep or backend is None or mode not in backend.modes:
            listed = "; ".join(f"{b.name}/{{{','.join(b.modes)}}}" for b in BACKENDS.values() if b.name not in ("host", "sim"))
            raise XferbenchError(f"--path {text!r}: give FRAMEWORK/MODE, one of {listed}")
        found.append((name, mode))
    return found


@app.command()
def check(
    path: Annotated[Optional[list[str]], typer.Option("--path", "-p", help="Repeatable FRAMEWORK/MODE measured beside the raw pinned copy, e.g. jax/pinned_host; given, it replaces the default (torch/pinned_into where PyTorch is installed); cuda/raw_pinned alone checks the raw copy only.", show_default=False)] = None,
    link_share: Annotated[str, typer.Option(help="FAIL a GPU whose raw pinned copy reaches less than this share of the link's theoretical rate, as the link ran (a link down-trained below its maximum fails the link-state check).")] = "75%",
    baseline: Annotated[Optional[Path], typer.Option(help="A result file from this node when it was healthy: FAIL a checked series significantly slower than there (compare's test).", show_default=False)] = None,
    threshold: Annotated[str, typer.Option(help="With --baseline: the smallest slowdown that counts.")] = "5%",
    batch_size: Annotated[int, typer.Option(help="The batch checked, of --shape uint8 items: 512 is 100.7 MB.")] = 512,
    shape: Annotated[str, typer.Option(help="Shape of one uint8 item.")] = "256x256x3",
    out_path: Annotated[Optional[str], typer.Option("--out", "-o", help=f"Result file with the verdicts, or a folder (ending in /); %h in it is this host's name, e.g. results/fleet/%h.json. Default: {DEFAULT_FOLDER}/HOST-check-TIME.json", show_default=False)] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --out file.")] = False,
) -> None:
    """Is this node's host-to-GPU link healthy? A short fixed run on every GPU, then PASS or FAIL per GPU: exit 0 when all pass, 1 when one fails, 2 for bad input or nothing to check."""
    from xferbench.health import check as checking
    from xferbench.core import environment
    from xferbench.reading.compare import parse_threshold
    from xferbench.core.results import damaged_points, load

    started = time.monotonic()
    try:
        share = parse_share(link_share, "--link-share")
        slower = parse_threshold(threshold)
        if not 1 <= batch_size <= MAX_BATCH:
            raise XferbenchError(f"--batch-size {batch_size}: give a whole number of items from 1 to {MAX_BATCH:,}")
        item = parse_shape(shape)
        base = load(baseline) if baseline is not None else None
        paths = check_paths(path or ())
        if not environment.nvidia_gpu_present():
            raise XferbenchError("nothing to check: no NVIDIA GPU here (no driver entry in /proc/driver/nvidia/gpus, and NVML"
                                 " sees none); check measures each CUDA GPU's link")  # fmt: skip
        frameworks = tuple(dict.fromkeys(("cuda", *(name for name, _ in paths))))
        config = SweepConfig(frameworks=frameworks, modes=tuple(dict.fromkeys(("raw_pinned", *(m for _, m in paths)))),
                             device="all", batch_sizes=(batch_size,), shape=item, methods=(PER_CALL, STREAMED))  # fmt: skip
        if out_path is not None:
            probe, numbered = output_path(out_path, "check.json")
            check_writable(probe, overwrite=overwrite, numbered=numbered)
    except XferbenchError as error:
        raise fail(str(error)) from None
    if base is not None:
        warn_damaged_points(str(baseline), damaged_points(base))
    result, output = measure_check(config, out_path, overwrite)
    found = checking.verdicts(result, share, base, slower)
    result.check = checking.to_dict(found, share, str(baseline) if baseline else None)
    output.save(result)
    for verdict in found:
        out.print(checking.verdict_table(verdict))
    passed = sum(v.status == checking.PASS for v in found)
    out.print(f"{passed} of {len(found)} passed in {time.monotonic() - started:.0f} s; saved {output.path}", highlight=False)
    verdict = checking.overall(found)
    if verdict == checking.NA:
        raise fail("nothing could judge " + (", ".join(v.device for v in found if v.status == checking.NA) or "any GPU")
                   + ": no NVML link facts and no published floor for the model; install nvidia-ml-py ('xferbench[nvml]')"
                   " or give --baseline", checking.EXIT_CODES[verdict])  # fmt: skip
    if checking.EXIT_CODES[verdict]:
        raise typer.Exit(checking.EXIT_CODES[verdict])


def measure_check(config: SweepConfig, out_path: str | None, overwrite: bool) -> tuple[Result, OutputFile]:
    """check's short run on every GPU, saved as it goes: the result and the file it is in."""
    try:
        plan = make_plan(config)
    except XferbenchError as error:
        raise fail(str(error)) from None
    try:
        with running.terminated_as_interrupted(plan):
            name = f"{host_name()}-check-{time.strftime('%Y%m%d-%H%M%S')}.json"
            target, numbered = output_path(out_path, name)
            output = OutputFile(target, overwrite=overwrite, numbered=numbered)
            return run_sweep(plan, output, tables=False), output
    except XferbenchError as error:
        raise fail(str(error)) from None
    except KeyboardInterrupt as stop:
        raise stopped_starting(stop) from None


def jit_selection(frameworks: tuple[str, ...], modes: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """--jit means TensorFlow's jit mode: it implies --framework tf and is refused for any other framework."""
    others = [f for f in frameworks if f != "tf"]
    if others:
        raise XferbenchError(
            f"--jit is TensorFlow's tf.function(jit_compile=True) mode and {others[0]} has no such mode;"
            " drop --jit, or use --framework tf --jit"
        )
    if any(m != "jit" for m in modes):
        raise XferbenchError("--jit already selects TensorFlow's jit mode; drop --mode, or use --mode jit without --jit")
    return ("tf",), ("jit",)


def parse_pythons(values: Sequence[str], frameworks: Sequence[str]) -> dict[str, str]:
    """'tf=/path/python' or '/path/python' (every framework in --framework) -> {framework: path}."""
    pythons: dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep:
            name, path = "", value
        names = [name.strip().lower()] if name else [f for f in frameworks if BACKENDS.get(f) and BACKENDS[f].isolated]
        if not names:
            raise XferbenchError(f"--python {value}: say which framework, e.g. --python tf={value}")
        resolved = shutil.which(path.strip()) or path.strip()
        if not (os.path.isfile(resolved) and os.access(resolved, os.X_OK)):
            raise XferbenchError(f"--python {value}: {path!r} is not an executable Python interpreter")
        for item in names:
            if item not in BACKENDS:
                raise XferbenchError(f"--python {value}: unknown framework {item!r}; choose from: {', '.join(BACKENDS)}")
            pythons[item] = resolved
    return pythons


def run_sweep(plan: Plan, output: OutputFile, link_sampling: bool = True, tables: bool = True) -> Result:
    """running.run_sweep on this command's consoles; a sweep that stopped (Ctrl-C, a kill, a failed save)
    becomes its one line and exit code."""
    try:
        return running.run_sweep(plan, output, out, err, link_sampling, tables)
    except running.Stopped as stop:
        raise fail(str(stop), stop.code) from None


FILES = Annotated[list[Path], typer.Argument(help="Result files written by xferbench sweep.", show_default=False)]
SelectFramework = Annotated[Optional[list[str]], typer.Option("--framework", "-f", help="Repeatable or comma-separated: keep only these frameworks.", rich_help_panel="Selection")]  # fmt: skip
SelectMode = Annotated[Optional[list[str]], typer.Option("--mode", "-m", help="Repeatable or comma-separated: keep only these modes.", rich_help_panel="Selection")]  # fmt: skip
SelectOp = Annotated[Optional[list[str]], typer.Option("--op", help="Repeatable or comma-separated: keep only these ops.", rich_help_panel="Selection")]  # fmt: skip
SelectDevice = Annotated[Optional[list[str]], typer.Option("--device", help="Repeatable or comma-separated: keep only these device ids (cpu, cuda:0, mps).", rich_help_panel="Selection")]  # fmt: skip
SelectHostBuffer = Annotated[Optional[list[str]], typer.Option("--host-buffer", help="Repeatable or comma-separated: keep only these host buffers.", rich_help_panel="Selection")]  # fmt: skip
SelectDirection = Annotated[Optional[list[str]], typer.Option("--direction", "-d", help="Repeatable or comma-separated: keep only these directions (h2d, d2h, bidir).", rich_help_panel="Selection")]  # fmt: skip
SelectTiming = Annotated[Optional[list[str]], typer.Option("--timing", help="Repeatable or comma-separated: keep only these timing methods (per-call, streamed).", rich_help_panel="Selection")]  # fmt: skip


def split_lists(values: Optional[Sequence[str]]) -> list[str]:
    """A repeatable option's values, each of which may itself be a comma-separated list (-f torch,tf),
    as --batch-sizes takes them."""
    return [part.strip() for value in values or () for part in value.split(",") if part.strip()]


def selection(framework, mode, op, device, host_buffer, timing=None, direction=None) -> Selection:  # type: ignore[no-untyped-def]
    def clean(values: Optional[list[str]]) -> tuple[str, ...]:
        return tuple(v.lower() for v in split_lists(values))

    return Selection(clean(framework), clean(mode), clean(op), clean(device), clean(host_buffer), clean(timing),
                     clean(direction))  # fmt: skip


@app.command()
def plot(
    files: FILES,
    out_path: Annotated[Optional[str], typer.Option("--out", "-o", help="PNG, SVG or PDF, by suffix, or a folder (ending in /). Default: runs/STEM.png (runs/A-vs-B.png for several files).", show_default=False)] = None,
    title: Annotated[Optional[str], typer.Option(help="Figure title.")] = None,
    framework: SelectFramework = None,
    mode: SelectMode = None,
    op: SelectOp = None,
    device: SelectDevice = None,
    host_buffer: SelectHostBuffer = None,
    timing: SelectTiming = None,
    direction: SelectDirection = None,
    y_scale: Annotated[str, typer.Option("--y-scale", help="MB/s axis: auto (log once the medians span more than 10x), linear or log.")] = "auto",
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --out file (or the default one).")] = False,
) -> None:
    """Draw MB/s by batch size and time by bytes from result files (several files overlay)."""
    from xferbench.reading import plot as plotting

    written: list[Path] = []
    try:
        path = output_path(out_path, plotting.default_path(files).name)[0]  # no --out: plot's own default, runs/STEM.png
        refuse_overwriting_input(path, files, "--out")
        check_writable(path, overwrite=overwrite, what="the plot")  # a figure, like a result, is replaced only when asked; said before drawing
        picks, empty = select(files, selection(framework, mode, op, device, host_buffer, timing, direction))
        for left_out in empty:
            err.print(f"[yellow]warning:[/] {escape(left_out.why_empty())}", highlight=False)
        warn_damaged(picks)
        written.append(plotting.save(plotting.figure(picks, title, y_scale=y_scale), path))
    except XferbenchError as error:
        raise fail(str(error)) from None
    except KeyboardInterrupt:  # a figure cut short is never written: the file there stays as it was
        raise interrupted(written) from None
    err.print(f"saved {path} ({len(picks)} series)", highlight=False)  # stderr, as report's "wrote": stdout is for data


@app.command()
def report(
    files: FILES,
    out_text: Annotated[Optional[str], typer.Option("--out", "-o", help="Write the Markdown here (a folder, ending in /, gets STEM.md). Default: print it.", show_default=False)] = None,
    plot_text: Annotated[Optional[str], typer.Option("--plot", help="Also draw the same series to this .png/.svg/.pdf (or a folder, ending in /) and link it.", show_default=False)] = None,
    title: Annotated[Optional[str], typer.Option(help="Report heading, and the plot's title with --plot.")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --out or --plot file.")] = False,
    y_scale: Annotated[str, typer.Option("--y-scale", help="The --plot's MB/s axis: auto (log once the medians span more than 10x), linear or log.")] = "auto",
    framework: SelectFramework = None,
    mode: SelectMode = None,
    op: SelectOp = None,
    device: SelectDevice = None,
    host_buffer: SelectHostBuffer = None,
    timing: SelectTiming = None,
    direction: SelectDirection = None,
) -> None:
    """Write Markdown for a bug report from result files: how each path changed, environment, summary and every point."""
    from xferbench.reading import plot as plotting
    from xferbench.reading import report as reporting

    chosen = selection(framework, mode, op, device, host_buffer, timing, direction)
    stem = plotting.default_path(files).stem
    out_path = output_path(out_text, f"{stem}.md")[0] if out_text is not None else None
    plot_path = output_path(plot_text, f"{stem}.png")[0] if plot_text is not None else None
    written: list[Path] = []
    try:
        for target, option in ((out_path, "--out"), (plot_path, "--plot")):
            if target is not None:
                refuse_overwriting_input(target, files, option)
                refuse_unless_regular(target, option)  # a link or a folder: said as such, even with --overwrite
                refuse_existing(target, option, overwrite)
        if plot_path is not None:
            if out_path is not None and plot_path.resolve() == out_path.resolve():
                raise XferbenchError(f"--plot {plot_path} is the same file as --out; give the plot a .png name")
        picks, empty = select(files, chosen)
        if plot_path is not None:
            written.append(plotting.save(plotting.figure(picks, title, y_scale=y_scale), plot_path, "--plot"))
        text = reporting.render(picks, empty, plot=plot_path, out=out_path, selection=chosen, title=title)
        if out_path is None:
            emit(text)
        else:
            written.append(reporting.save(text, out_path))
            err.print(f"wrote {out_path}", highlight=False)
        if plot_path is not None:  # GitHub shows no image from a local path: the reader must see the file itself
            err.print(f"the report links {plot_path}: attach that image to the issue too (drag it into the comment box),"
                      " as GitHub does not show local images", highlight=False)  # fmt: skip
    except XferbenchError as error:
        raise fail(str(error)) from None
    except KeyboardInterrupt:
        raise interrupted(written) from None
    for left_out in empty:
        err.print(f"[yellow]warning:[/] {escape(left_out.why_empty())}", highlight=False)
    warn_damaged(picks)


def warn_damaged(picks: Sequence[Any]) -> None:
    """Name the points a reader left out because the file's samples were damaged."""
    from xferbench.core.results import damaged_points

    for path, result in {id(p.result): (p.path, p.result) for p in picks}.values():
        warn_damaged_points(path, damaged_points(result))


def warn_damaged_points(path: str | Path, damaged: Sequence[str]) -> None:
    """One line per file: how many of its points were left out as damaged, the first three named."""
    if damaged:
        listed = "; ".join(damaged[:3]) + (f"; and {len(damaged) - 3} more" if len(damaged) > 3 else "")
        err.print(f"[yellow]warning:[/] {escape(str(path))}: left out {len(damaged)} damaged point(s): {escape(listed)}",
                  highlight=False)  # fmt: skip


def interrupted(written: Sequence[Path]) -> typer.Exit:
    """Ctrl-C in a command that reads results: what it wrote before it stopped, and that nothing is half
    written (each file is replaced in one step), then exit 130."""
    said = ", ".join(map(str, written)) if written else "nothing"
    err.print(f"interrupted: wrote {said}; no file was left half written", highlight=False)
    return typer.Exit(130)


def refuse_overwriting_input(path: Path, files: list[Path], option: str) -> None:
    """An output path that is one of the result files would destroy the only evidence of a run."""
    if any(path.resolve() == f.resolve() for f in files):
        raise XferbenchError(f"{option} {path} is one of the result files; give the output another name")


@app.command()
def compare(
    base: Annotated[Path, typer.Argument(help="The reference result file.", show_default=False)],
    new: Annotated[Path, typer.Argument(help="The result file to check against it.", show_default=False)],
    threshold: Annotated[str, typer.Option(help="Smallest change in MB/s that counts, e.g. 5%.")] = "5%",
    alpha: Annotated[str, typer.Option(help="Significance level of the rank test: a change counts when p is below it.")] = "0.01",
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdicts, p-values, ratios, each path's runs and what differs as JSON.")] = False,
    fail_on: Annotated[str, typer.Option("--fail-on", help="What makes the exit status 1: 'slower' (a point significantly slower, or failed in NEW) or 'change' (any significant change, faster too).")] = "slower",
) -> None:
    """Compare two result files point by point (Mann-Whitney U on the raw samples) and say how each path changed.

    Exit status: 0 nothing failed the check; 1 a point is significantly slower or failed in NEW (with
    --fail-on change, also significantly faster); 2 bad input."""
    from xferbench.reading import compare as comparing

    try:
        if fail_on not in comparing.FAIL_ON:
            raise XferbenchError(f"--fail-on {fail_on!r}: give 'slower' (fail on slower points only) or 'change' (fail on any change)")
        comparison = comparing.compare_files(base, new, comparing.parse_threshold(threshold), comparing.parse_alpha(alpha))
    except XferbenchError as error:
        raise fail(str(error)) from None
    if as_json:
        emit(json.dumps(comparing.to_dict(comparison, base, new, fail_on), indent=1, allow_nan=False) + "\n")
    else:  # piped into a CI log, a console is 80 columns: wide enough rows keep each point on one line
        out.print(comparing.render(comparison, base, new, fail_on))
    if comparison.fails(fail_on):
        raise typer.Exit(1)


@app.command()
def fleet(
    inputs: Annotated[list[Path], typer.Argument(help="Result or check files, or folders of them (every *.json inside, recursively).", show_default=False)],
    markdown_path: Annotated[Optional[Path], typer.Option("--markdown", help="Also write the table as Markdown here.", show_default=False)] = None,
    csv_out: Annotated[Optional[Path], typer.Option("--csv", help="Also write the table as CSV here (MB/s unformatted).", show_default=False)] = None,
    plot_path: Annotated[Optional[Path], typer.Option("--plot", help="Also draw every GPU's raw ceiling (.png, .svg or .pdf), flagged GPUs in red.", show_default=False)] = None,
    mad_k: Annotated[float, typer.Option(help="A straggler lies more than this many scaled median absolute deviations below its group's median...")] = 3.0,
    min_drop: Annotated[str, typer.Option(help="...and more than this share below it.")] = "10%",
    min_group: Annotated[int, typer.Option(help="GPUs of one model and link needed before any is called a straggler.")] = 3,
) -> None:
    """Read many nodes' files as one table: each GPU's link, raw ceiling and paths, with stragglers, down-trained links and failed checks flagged; exit 1 when any is, or a file cannot be read. A peer tool's GPU whose file lacks that tool's ceiling figure is shown as not judged, with what to run, and does not count."""
    from rich.table import Table

    from xferbench.health import fleet as fleets
    from xferbench.reading.report import save as write_text

    written: list[Path] = []
    try:
        if not (math.isfinite(mad_k) and mad_k >= 0) or min_group < 2:
            raise XferbenchError("--mad-k must be a finite number >= 0 and --min-group at least 2")
        share = parse_share(min_drop, "--min-drop", zero=True)
        found = fleets.read_fleet(inputs, mad_k, share, min_group)
        for path, text, option in ((markdown_path, fleets.markdown(found), "--markdown"), (csv_out, fleets.to_csv(found), "--csv")):
            if path is not None:
                refuse_overwriting_input(path, inputs, option)
                written.append(write_text(text, path, option))
        if plot_path is not None:
            from xferbench.reading import plot as plotting

            refuse_overwriting_input(plot_path, inputs, "--plot")
            written.append(plotting.save(fleets.figure(found), plot_path, "--plot"))
    except XferbenchError as error:
        raise fail(str(error)) from None
    except KeyboardInterrupt:
        raise interrupted(written) from None
    header, rows = fleets.table_rows(found)
    unjudged = f", {len(found.not_judged)} not judged" if found.not_judged else ""
    table = Table(title=f"xferbench fleet: {found.gpus} GPU(s), {len(found.flagged)} flagged{unjudged}", title_justify="left")
    for name in header:
        table.add_column(name, justify="right" if "MB/s" in name or name == "batch" else "left")
    for cells in rows:
        style = "" if cells[-1] == "ok" else "yellow" if cells[-1].startswith("not judged") else "bold red"
        table.add_row(*(escape(c) for c in cells), style=style)
    out.print(table)
    for (model, link, measured), (median, mad, n) in found.groups.items():
        judged = "" if n >= min_group else f" (fewer than {min_group}: not judged)"
        out.print(f"group {escape(model)}, {link}, {measured}: {n} GPU(s), median {median:,.0f} MB/s, MAD {mad:,.0f}{judged}",
                  highlight=False)  # fmt: skip
    for old, new in found.superseded:
        out.print(f"[dim]not counted: {escape(old)} (the same host and GPU, newer in {escape(new)})[/]", highlight=False)
    for path, why in found.unreadable:
        err.print(f"[yellow]warning: not read: {escape(path)}: {escape(why)}[/]", highlight=False)
    damaged_by_file: dict[str, list[str]] = {}
    for path, point in found.damaged:
        damaged_by_file.setdefault(path, []).append(point)
    for path, points in damaged_by_file.items():
        warn_damaged_points(path, points)
    for path in (markdown_path, csv_out, plot_path):
        if path is not None:
            err.print(f"wrote {path}", highlight=False)
    if found.not_judged:  # nothing failed on them: the exit status stands on the GPUs judged
        err.print(f"[yellow]not judged: {len(found.not_judged)} GPU(s) whose file holds no figure to judge them by (see each row);"
                  " not counted in the exit status[/]", highlight=False)  # fmt: skip
    if found.flagged or found.unreadable:
        raise typer.Exit(1)


MAX_VALIDATE_MINUTES = 24 * 60  # a day: past any real validation, so a typo cannot start a run of weeks


@app.command()
def validate(
    folder: Annotated[Optional[Path], typer.Argument(help=f"Folder for everything the validation writes, to attach to a bug report; it must not hold a validation already. With --reread: the validation folder to read. Default: {DEFAULT_FOLDER}/validate-HOST-TIME/", show_default=False)] = None,
    device: Annotated[Optional[str], typer.Option(help="The CUDA GPU to validate: cuda or cuda:N. Default: cuda:0; with --reread, the GPU the folder records.", show_default=False)] = None,
    framework: Annotated[Optional[list[str]], typer.Option("--framework", "-f", help="Repeatable or comma-separated: the frameworks swept. Default: every installed one (without cuda, no raw copy and no long link run).")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Three batch sizes and few samples: a smoke test of the set-up, not a validation.")] = False,
    peer: Annotated[Optional[list[str]], typer.Option("--peer", help="Repeatable: an nvbandwidth or bandwidthTest executable, known by its file name. Default: each one found on PATH.", show_default=False)] = None,
    max_minutes: Annotated[Optional[float], typer.Option("--max-minutes", help="Fit the whole run into this many minutes: the plan is trimmed (nvbandwidth's samples, the peers' sizes, then the large sweep's sizes; never the raw ceiling or the link run), and what runs past its share is stopped. The verdict says what was left out.", show_default=False)] = None,
    reread: Annotated[bool, typer.Option("--reread", help="Measure nothing: make FOLDER's verdict again from its files, as this xferbench judges them (for a folder an earlier xferbench wrote). Prints it, or writes it to --out; FOLDER is written to only where --out names a file in it.")] = False,
    out_path: Annotated[Optional[str], typer.Option("--out", "-o", help="With --reread: write the verdict here (a folder, ending in /, gets verdict.md). Default: print it.", show_default=False)] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="With --reread: replace an existing --out file.")] = False,
) -> None:
    """Validate this machine's GPU in one command: xferbench's validation sweeps, then nvbandwidth and bandwidthTest where found, nvidia-smi's view, and a one-page verdict, in one folder to attach to a bug report. Exit 0 when every check passes, 1 when one fails or could not run, 2 for bad input or no GPU."""
    from xferbench.health import validate_command
    from xferbench.core import environment

    if reread:
        measuring = [name for name, given in (("--framework", framework), ("--quick", quick), ("--peer", peer),
                                              ("--max-minutes", max_minutes is not None)) if given]  # fmt: skip
        if measuring:
            raise fail(f"{measuring[0]} measures, and --reread measures nothing: leave it out to re-read a folder")
        if folder is None:
            raise fail("--reread needs the validation folder to read: xferbench validate --reread FOLDER")
        reread_verdict(folder, device, out_path, overwrite)
        return
    if out_path is not None or overwrite:
        raise fail(f"{'--out' if out_path is not None else '--overwrite'} goes with --reread: a validation writes verdict.md into its own folder")
    where = folder or DEFAULT_FOLDER / f"validate-{host_name()}-{time.strftime('%Y%m%d-%H%M%S')}"
    try:
        gpu = cuda_device(device or "cuda:0")
        if max_minutes is not None and not (math.isfinite(max_minutes) and 0 < max_minutes <= MAX_VALIDATE_MINUTES):
            raise XferbenchError(f"--max-minutes {max_minutes:g}: give minutes above 0 and at most {MAX_VALIDATE_MINUTES}"
                                 " (validate prints its estimated duration before it starts)")  # fmt: skip
        if not environment.nvidia_gpu_present():
            raise XferbenchError("nothing to validate: no NVIDIA GPU here (no driver entry in /proc/driver/nvidia/gpus, and NVML"
                                 " sees none); validate checks a CUDA GPU's link, and `xferbench sweep` runs on this machine as it is")  # fmt: skip
        peers, missing = validate_command.find_peers(peer or ())
        run = validate_command.Validation(where, gpu, tuple(dict.fromkeys(f.lower() for f in split_lists(framework))),
                                          quick, peers, missing, max_minutes)  # fmt: skip
        for name, why in missing.items():
            err.print(f"[yellow]note:[/] {escape(why)}", highlight=False)
        with running.terminated_as_interrupted():
            checks, verdict = validate_command.run(run, lambda line: err.print(escape(line), highlight=False, soft_wrap=True))
    except XferbenchError as error:
        raise fail(str(error)) from None
    except KeyboardInterrupt as stop:  # each sweep saved what it measured; the verdict was not written
        how, code = running.how_stopped(stop)
        raise fail(f"{how}: what was measured is in {where}, without a verdict", code) from None
    from xferbench.health import validation_checks as checking

    out.print()
    out.print(checking.render(checks), highlight=False, markup=False)
    out.print(f"wrote {verdict} (attach the folder {run.folder} to a bug report)", highlight=False)
    if not checking.passed(checks):
        raise typer.Exit(1)


def cuda_device(device: str) -> str:
    """--device as validate takes it (cuda or cuda:N), as cuda:N; anything else is bad input."""
    kind, _, index = device.strip().lower().partition(":")
    if kind != "cuda" or (index and not index.isdigit()):
        raise XferbenchError(f"--device {device}: validate checks a CUDA GPU (cuda or cuda:N); `xferbench sweep` measures the others")
    return f"cuda:{index or 0}"


def reread_verdict(folder: Path, device: Optional[str], out_path: Optional[str], overwrite: bool) -> None:
    """`validate --reread`: the folder's verdict made again from its files, printed or written to --out; exit 1 unless every check passes."""
    from xferbench.health import validation_checks as checking
    from xferbench.health import validate_command
    from xferbench.reading import report as reporting

    try:
        device = cuda_device(device) if device is not None else None
        target = output_path(out_path, "verdict.md")[0] if out_path is not None else None
        if target is not None:
            refuse_unless_regular(target, "--out")
            refuse_existing(target, "--out", overwrite)
        run, files, imported, notes, record = validate_command.reread(folder, device)
        checks = validate_command.checks_for(files, imported, run.device, absent="not in the folder")
        page = validate_command.verdict_page(run, files, imported, checks, notes, record)
        if record.absent:
            err.print(f"[yellow]note:[/] not in {escape(str(folder))}: {escape(', '.join(record.absent))}", highlight=False)
        if target is None:
            emit(page)
        else:
            reporting.save(page, target)
            out.print(checking.render(checks), highlight=False, markup=False)
            err.print(f"wrote {target}", highlight=False)
    except XferbenchError as error:
        raise fail(str(error)) from None
    if not checking.passed(checks):
        raise typer.Exit(1)


import_app = typer.Typer(help="Turn a peer tool's own output into an xferbench result file, for report, plot and fleet to read beside xferbench's own.",
                         no_args_is_help=True, context_settings={"help_option_names": ["-h", "--help"]})  # fmt: skip
app.add_typer(import_app, name="import")
PEER_FILES = Annotated[list[Path], typer.Argument(help="The tool's output as it printed it.", show_default=False)]
IMPORT_OUT = Annotated[Optional[str], typer.Option("--out", "-o", help=f"The result file, or a folder (ending in /). Default: {DEFAULT_FOLDER}/HOST-TOOL-TIME.json, HOST being --host, else the host the output names, else unknown-host", show_default=False)]  # fmt: skip
IMPORT_SHAPE = Annotated[str, typer.Option(help="The uint8 item a series' sizes are counted in where each is a whole number of them (the batch axis of plot and report); else 1 MiB items, else 1000 B, else bytes.")]  # fmt: skip
UNKNOWN_HOST = "unknown-host"  # an imported file's name where neither the output nor --host names its machine
IMPORT_HOST = Annotated[Optional[str], typer.Option("--host", help="The machine the tool ran on, where its output does not say (bandwidthTest's never does).", show_default=False)]  # fmt: skip


def _import(tool: str, files: list[Path], out_path: Optional[str], overwrite: bool, host: Optional[str], read: Any) -> None:
    try:
        result = read()
        if host:  # bandwidthTest's output names no host; a fleet tells nodes apart by it
            result.environment["host"] = host
        # The file is named after the host it holds: an output that names none, with no --host, is "unknown-host", not
        # this machine, where the output was only read
        name = safe_name(str(result.environment.get("host") or UNKNOWN_HOST))
        target, numbered = output_path(out_path, f"{name}-{tool.lower()}-{time.strftime('%Y%m%d-%H%M%S')}.json")
        refuse_overwriting_input(target, files, "--out")
        output = OutputFile(target, overwrite=overwrite, numbered=numbered)
        output.save(result)
    except XferbenchError as error:
        raise fail(str(error)) from None
    series = [s for s in result.series if s.ok_points()]
    points = sum(len(s.ok_points()) for s in series)
    peer = result.environment.get("peer") or {}
    out.print(f"saved {output.path}: {len(series)} series, {points} points from {tool}", highlight=False)
    for said in dict.fromkeys(note for s in result.series for note in (s.note or "").split("; ") if "buffer size" in note):
        err.print(f"[yellow]note:[/] {escape(said)}; if the run gave -b, import it again with --buffer-size", highlight=False)
    failed = [f"{s.label()}: {s.reason}" for s in result.series if s.status == "failed"]
    errors = [e for e in peer.get("errors") or [] if not any(e in f for f in failed)]  # one not said with a series already
    for label, items in (("failed", failed), ("error", errors), (f"{tool} warned", peer.get("warnings") or []),
                         ("not imported", peer.get("not_imported") or [])):  # fmt: skip
        for item in dict.fromkeys(items):
            err.print(f"[yellow]{label}:[/] {escape(str(item))}", highlight=False)


@import_app.command("nvbandwidth")
def import_nvbandwidth(
    files: PEER_FILES,
    buffer_size: Annotated[Optional[int], typer.Option("--buffer-size", "-b", help="The run's -b in MiB: nvbandwidth's JSON does not record it. Default: the version's own default (512 MiB from v0.7, 64 MiB before).", show_default=False)] = None,
    shape: IMPORT_SHAPE = "256x256x3",
    host: IMPORT_HOST = None,
    out_path: IMPORT_OUT = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --out file.")] = False,
) -> None:
    """Import nvbandwidth's JSON output (nvbandwidth -j), its host<->device testcases, failed and waived ones included."""
    from xferbench.reading import peers

    _import("nvbandwidth", files, out_path, overwrite, host, lambda: peers.read_nvbandwidth(files, buffer_size, parse_shape(shape)))


@import_app.command("bandwidthtest")
def import_bandwidthtest(
    files: PEER_FILES,
    shape: IMPORT_SHAPE = "256x256x3",
    host: IMPORT_HOST = None,
    out_path: IMPORT_OUT = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --out file.")] = False,
    mb: Annotated[Optional[int], typer.Option("--mb", help="Bytes in one MB of an older bandwidthTest's MB/s (before cuda-samples v10.1): 1024000 (sdkTimer era) or 1048576 (cutil era).", show_default=False)] = None,
) -> None:
    """Import the CUDA samples' bandwidthTest output (its tables or --csv lines), every figure of every run it holds."""
    from xferbench.reading import peers

    _import("bandwidthTest", files, out_path, overwrite, host, lambda: peers.read_bandwidthtest(files, parse_shape(shape), mb=mb))


def _peer_command(peer: Any) -> Any:
    """An import command for a peer whose reader takes only its files and a shape, made from its registry entry."""

    def command(files: PEER_FILES, shape: IMPORT_SHAPE = "256x256x3", host: IMPORT_HOST = None, out_path: IMPORT_OUT = None,
                overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --out file.")] = False) -> None:  # fmt: skip
        _import(peer.name, files, out_path, overwrite, host, lambda: peer.read(files, parse_shape(shape)))

    command.__doc__ = peer.summary
    command.__name__ = f"import_{peer.command.replace('-', '_')}"
    return command


def _register_peers() -> None:
    """Every registered peer with a command of its own name and no options of its own gets `xferbench import NAME`."""
    from xferbench.reading.peers import PEERS

    written = {info.name for info in import_app.registered_commands}
    for peer in PEERS.values():
        if peer.command and peer.command not in written:
            import_app.command(peer.command)(_peer_command(peer))


_register_peers()


SHOW_ALL = Annotated[bool, typer.Option("--all", help="Start every installed framework and show everything, also what this machine lacks.")]


@contextlib.contextmanager
def installed_frameworks(failed: dict[str, str] | None = None) -> Iterator[dict[str, Runner]]:
    """A runner per installed framework (a worker process for each GPU framework), closed after use;
    one that cannot start is left out and its error kept in `failed`, by name."""
    try:
        runners = start_runners([b for b in BACKENDS.values() if not b.missing()], failed=failed if failed is not None else {})
    except XferbenchError as error:
        raise fail(str(error)) from None
    try:
        yield runners
    finally:
        for runner in runners.values():
            runner.close()


@app.command()
def env(show_all: SHOW_ALL = False) -> None:
    """Print the environment a sweep would record (JSON). Frameworks are started only where there is a GPU for them to describe, or with --all."""
    from xferbench.core import environment

    views: dict[str, dict[str, Any]] = {}
    failed: dict[str, str] = {}
    if show_all or environment.accelerator_kinds():  # importing every framework takes seconds: only where it adds devices
        with installed_frameworks(failed) as runners:
            views = {name: runner.environment() for name, runner in runners.items()}
    captured = environment.capture(views)
    if failed:  # installed, yet it cannot start: said here, as a sweep says it
        captured["frameworks_failed"] = failed
    emit(json.dumps(captured, indent=2) + "\n")


@app.command()
def paths(show_all: SHOW_ALL = False) -> None:
    """List every path on this machine's devices, where it can run and why not where it cannot."""
    from rich.table import Table

    from xferbench.core import environment

    kinds = environment.accelerator_kinds()
    installed = [b for b in BACKENDS.values() if not b.missing()]
    failed: dict[str, str] = {}
    if kinds or show_all:  # only a framework can say whether it reaches the GPU
        with installed_frameworks(failed) as runners:
            devices = {name: runner.devices() for name, runner in runners.items()}
    else:  # no GPU here: every framework reaches the CPU, and nothing else
        devices = {b.name: b.devices() if b.fixed_device else [] if b.cuda_only else ["cpu"] for b in installed}
    rows = path_availability(devices, failed)
    auto = auto_device(["cpu", *(d for b in installed if not b.fixed_device for d in devices.get(b.name, []))])
    here = {"cpu", "sim", *kinds}
    shown = rows if show_all else [row for row in rows if row.device.split(":")[0] in here]
    table = Table("framework", "mode", "ops", "device", "default sweep", "status")
    for row in shown:
        status = f"[red]unavailable[/]: {escape(row.reason)}" if row.reason else "[green]available[/]"
        default = sweep_flags(BACKENDS[row.framework], row.mode, row.device, auto) or ("skipped" if row.reason else "yes")
        table.add_row(row.framework, row.mode, ", ".join(row.ops), row.device, default, status)
    out.print(table)
    out.print(f"default sweep: yes, a sweep without --framework, --mode and --device ({auto} here) runs the path; skipped,"
              " it plans the path and says why it cannot run; else the options that run it.", highlight=False)
    hidden = sorted({row.device.split(":")[0] for row in rows} - here)
    if hidden and not show_all:
        out.print(f"[dim]{len(rows) - len(shown)} paths on devices this machine lacks ({', '.join(hidden)}) are not shown; --all lists them[/]", highlight=False)


# What a stream that cannot encode the output's symbols prints instead (a C locale, a Windows code page):
# rich already draws its tables in ASCII there; these are the symbols in xferbench's own text.
ASCII = {"µ": "u", "–": "-", "—": "-", "−": "-", "≥": ">=", "≤": "<=", "·": "-", "×": "x", "▼": "v", "▲": "^", "…": "...",
         "±": "+/-", "→": "->", "←": "<-", "○": "o", "≈": "~", "↔": "<->", "‘": "'", "’": "'", "“": '"', "”": '"'}  # fmt: skip


def _ascii(error: UnicodeError) -> tuple[str, int]:
    """codecs error handler: each unencodable character as its ASCII stand-in, else '?'."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return "".join(ASCII.get(c, "?") for c in error.object[error.start : error.end]), error.end


codecs.register_error("xferbench-ascii", _ascii)


def plain_streams() -> None:
    """Let stdout and stderr print on any terminal: where their encoding lacks the output's symbols, each
    is written as ASCII (_ascii) rather than crash mid-run with UnicodeEncodeError."""
    for stream in (sys.stdout, sys.stderr):
        try:
            "".join(ASCII).encode(stream.encoding or "ascii")
        except (UnicodeEncodeError, LookupError):
            with contextlib.suppress(AttributeError, ValueError):  # not a TextIOWrapper (a test's capture): leave it
                stream.reconfigure(errors="xferbench-ascii")  # type: ignore[union-attr]


STREAM_FAILED = 74  # EX_IOERR (sysexits.h): output the tool had to print could not be written


def stream_error(error: OSError) -> bool:
    """Whether an error is a standard stream that cannot take more: a full disk under `> log`, a closed pipe."""
    return isinstance(error, StreamClosed) or error.errno in (errno.ENOSPC, errno.EPIPE, errno.EIO, errno.EDQUOT, errno.EFBIG)


def silence(fd: int) -> None:
    """Point a broken standard stream at the null device, so that Python's own flush at exit adds no
    "Exception ignored" to the one line said."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except OSError:
        pass


def main() -> None:
    plain_streams()
    try:
        app()
    except KeyboardInterrupt:  # a second Ctrl-C landing after the first was handled and saved: the exit stays clean
        err.print("interrupted", highlight=False)
        sys.exit(130)
    except OSError as error:
        if not stream_error(error):
            raise
        silence(1)
        try:  # stderr may still work where stdout went to a full disk; if not, the exit status says it
            sys.stderr.write(f"xferbench: cannot write its output: {error.strerror or error}; the output stopped there"
                             " (a result file keeps every point saved)\n")  # fmt: skip
            sys.stderr.flush()
        except OSError:
            silence(2)
        sys.exit(STREAM_FAILED)


if __name__ == "__main__":
    main()
