"""The rules of xferbench/cli.py, fast: its plain functions called directly (option parsing and checking,
the console's width, the one-line errors, the stream handling of main), and each command through Typer's
runner with what it would measure, read or draw replaced by recorders, so each test sees the exact
arguments a command passes on, what it prints on which stream, and its exit code."""

from __future__ import annotations

import dataclasses
import errno
import io
import itertools
import json
import math
import os
import signal
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import typer
import typer.testing
from rich.console import Console
from typer.testing import CliRunner

from nodes import node, series, write
from xferbench import cli
from xferbench.core import environment
from xferbench.core.errors import XferbenchError
from xferbench.core.results import OutputFile, Point, Result, Selection, Series, load, select
from xferbench.core.timing import TimingConfig
from xferbench.core.verdict import FAIL, INFO, NA, PASS, Verdict
from xferbench.health import check as checking
from xferbench.health import fleet as fleets
from xferbench.health import validate_command
from xferbench.measuring import running
from xferbench.measuring.backends import BACKENDS, PathAvailability, SimLink
from xferbench.measuring.backends.pipeline import DEFAULT_LOADER_WORKERS
from xferbench.measuring.running import Stopped, Terminated
from xferbench.measuring.sweep import DEFAULT_BATCH_SIZES, SweepConfig
from xferbench.reading import compare as comparing
from xferbench.reading import peers
from xferbench.reading import plot as plotting
from xferbench.reading import report as reporting

runner = CliRunner()
COMMAND = typer.main.get_command(cli.app)
STAMP = "20260102-030405"  # what the fixed clock's strftime gives
HOST = "node7"  # this machine's name, through $XFERBENCH_HOST


@pytest.fixture(autouse=True)
def _the_command_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Typer's runner builds the click command from the app at every invoke, most of an invoke's time: built once here
    (where this Typer's runner builds it through typer.testing._get_command; elsewhere the tests are only slower)."""
    build = getattr(typer.testing, "_get_command", None)
    if build is not None:
        monkeypatch.setattr(typer.testing, "_get_command", lambda app: COMMAND if app is cli.app else build(app))


def invoke(*args: str, **kwargs: Any) -> Any:
    return runner.invoke(cli.app, list(args), **kwargs)


class Recording(Console):
    """A console that prints where the CLI's own do (the stream current at each write) and keeps each
    print's objects and keyword arguments."""

    def __init__(self, stream: str) -> None:
        super().__init__(file=cli.TrimmedLines(stream))
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def print(self, *objects: Any, **kwargs: Any) -> None:  # type: ignore[override]
        self.calls.append((objects, kwargs))
        super().print(*objects, **kwargs)


def printed(console: Console) -> list[tuple[str, dict[str, Any]]]:
    """Each print: its objects as given (markup and all; anything else by its type name), and its keyword arguments."""
    calls = console.calls  # type: ignore[attr-defined]
    return [(" ".join(o if isinstance(o, str) else type(o).__name__ for o in objects), kwargs) for objects, kwargs in calls]


QUIET = {"highlight": False}


@pytest.fixture
def consoles(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """cli.out and cli.err as Recording consoles, sized as the CLI sizes its own."""
    made = SimpleNamespace(out=cli.fit(Recording("stdout")), err=cli.fit(Recording("stderr")))
    monkeypatch.setattr(cli, "out", made.out)
    monkeypatch.setattr(cli, "err", made.err)
    return made


class Clock:
    """cli's `time`: strftime answers the one format the CLI names files with; monotonic gives the times in turn, over and over."""

    def __init__(self, *times: float) -> None:
        self.times = itertools.cycle(times)

    def strftime(self, fmt: str) -> str:
        assert fmt == "%Y%m%d-%H%M%S"
        return STAMP

    def monotonic(self) -> float:
        return next(self.times)


@pytest.fixture(autouse=True)
def _a_named_host_and_a_fixed_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """This machine is HOST; every file name's time is STAMP; a command that times itself took 3.4 s."""
    monkeypatch.setenv("XFERBENCH_HOST", HOST)
    monkeypatch.setattr(cli, "time", Clock(100.0, 103.4))


def raising(error: BaseException) -> Any:
    """A stand-in that raises `error` however it is called."""
    def raise_it(*args: Any, **kwargs: Any) -> Any:
        raise error

    return raise_it


def executable(path: Path) -> str:
    """An executable file at `path`, as --python needs one: its path."""
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


# The console: width, trimmed lines, the one-line error ------------------------------------------------


def test_fit_takes_a_positive_columns_else_160_for_a_pipe_else_the_terminals_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """COLUMNS, where a positive whole number, is the width; else a pipe gets 160 and a terminal keeps its own."""
    piped = Console(file=io.StringIO())
    for columns, width in (("93", 93), ("1", 1), ("0", 160), ("abc", 160), ("-5", 160), ("", 160)):
        monkeypatch.setenv("COLUMNS", columns)
        assert cli.fit(piped) is piped and piped.width == width, columns
    monkeypatch.delenv("COLUMNS")
    assert cli.fit(piped).width == 160
    monkeypatch.setattr(os, "get_terminal_size", lambda *fd: os.terminal_size((123, 40)))  # a terminal 123 columns wide
    terminal = Console(file=io.StringIO(), force_terminal=True)
    terminal.width = 33
    assert cli.fit(terminal).width == 123  # the terminal's own again


def test_the_consoles_write_to_the_current_stdout_and_stderr_and_a_pipe_gets_no_trailing_spaces(monkeypatch: pytest.MonkeyPatch) -> None:
    """TrimmedLines writes to sys.stdout or sys.stderr as they are at each write, less trailing spaces unless a terminal."""
    assert cli.out.file.name == "stdout" and cli.err.file.name == "stderr"  # type: ignore[attr-defined]
    assert cli.console().file.name == "stdout" and cli.console(stderr=True).file.name == "stderr"  # type: ignore[attr-defined]
    monkeypatch.setenv("COLUMNS", "71")
    assert cli.console().width == 71 and cli.console(stderr=True).width == 71
    piped, terminal = io.StringIO(), io.StringIO()
    terminal.isatty = lambda: True  # type: ignore[method-assign]
    monkeypatch.setattr(sys, "stdout", piped)
    monkeypatch.setattr(sys, "stderr", terminal)
    assert cli.TrimmedLines("stdout").write("a  \n b \n c") == 7
    assert cli.TrimmedLines("stderr").write("a  \n b ") == 7
    assert piped.getvalue() == "a\n b\n c" and terminal.getvalue() == "a  \n b "
    assert cli.TrimmedLines("stdout").getvalue() == "a\n b\n c"  # anything else is the stream's own
    cli.TrimmedLines("stdout").write("\nBOX \ttab\t \nBOX  ")  # spaces only: a letter or a tab before them stays
    assert piped.getvalue().endswith("\nBOX \ttab\t\nBOX")


def test_each_command_sizes_both_consoles_as_it_starts(consoles: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    """COLUMNS as a command starts sizes stdout's console and stderr's."""
    monkeypatch.setattr(environment, "accelerator_kinds", lambda: [])
    monkeypatch.setattr(environment, "capture", lambda views: {})
    consoles.out.width = consoles.err.width = 20
    assert invoke("env", env={"COLUMNS": "93"}).exit_code == 0
    assert (consoles.out.width, consoles.err.width) == (93, 93)


def test_version_prints_the_version_and_exits_0_before_any_command() -> None:
    """--version prints "xferbench VERSION" and stops; without it the callback does nothing."""
    from xferbench import __version__

    r = invoke("--version", "fleet")
    assert (r.exit_code, r.stdout, r.stderr) == (0, f"xferbench {__version__}\n", "")
    assert cli._print_version(False) is None


def test_fail_prints_one_unwrapped_line_with_markup_escaped_and_exits_2_unless_told(consoles: SimpleNamespace, capsys: Any) -> None:
    """fail: "error: MESSAGE" on stderr as written, one line however long, and Exit(2) or the code given."""
    message = "the [bold]path[/bold] " + "x" * 200
    stop = cli.fail(message)
    assert isinstance(stop, typer.Exit) and stop.exit_code == 2
    assert cli.fail("again", 7).exit_code == 7
    assert capsys.readouterr() == ("", f"error: {message}\nerror: again\n")
    one_line = {"highlight": False, "soft_wrap": True}
    assert printed(consoles.err) == [(f"[bold red]error:[/] the \\[bold]path\\[/bold] {'x' * 200}", one_line),
                                     ("[bold red]error:[/] again", one_line)]


def test_a_stop_while_starting_is_one_line_with_its_own_exit_status(consoles: SimpleNamespace, capsys: Any) -> None:
    """Ctrl-C before the first point: exit 130; a kill: 143; each says nothing was measured."""
    assert cli.stopped_starting(KeyboardInterrupt()).exit_code == 130
    assert cli.stopped_starting(Terminated()).exit_code == 143
    assert capsys.readouterr().err == ("error: interrupted while starting; nothing was measured\n"
                                       "error: terminated while starting; nothing was measured\n")  # fmt: skip


def test_interrupted_says_what_was_written_and_exits_130(consoles: SimpleNamespace, capsys: Any) -> None:
    """interrupted: the files written, else nothing, and that no file was left half written."""
    assert cli.interrupted([Path("a.md"), Path("b.png")]).exit_code == 130
    assert cli.interrupted([]).exit_code == 130
    assert capsys.readouterr().err == ("interrupted: wrote a.md, b.png; no file was left half written\n"
                                       "interrupted: wrote nothing; no file was left half written\n")  # fmt: skip
    assert [kwargs for _, kwargs in printed(consoles.err)] == [QUIET, QUIET]


def test_the_default_name_is_host_device_without_colons_and_time() -> None:
    """default_name: HOST-DEVICE-TIME.json, the device's colons dropped."""
    assert cli.default_name("cuda:1") == f"{HOST}-cuda1-{STAMP}.json"
    assert cli.default_name("sim") == f"{HOST}-sim-{STAMP}.json"


# Option parsing -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, zero, share", [
    ("80%", False, 0.8), ("80", False, 0.8), (" 80 % ", False, 0.8), ("0.5%", False, 0.005), (" 0.5 % ", False, 0.005),
    ("1", False, 0.01), ("100", False, 1.0), ("100%", False, 1.0), ("0%", True, 0.0), ("0", True, 0.0), ("100", True, 1.0),
])  # fmt: skip
def test_a_share_is_a_percentage_with_or_without_its_sign(text: str, zero: bool, share: float) -> None:
    """parse_share: '80%' or '80' is 0.8; 0% only where zero is allowed; up to 100%."""
    assert cli.parse_share(text, "--s", zero=zero) == share


@pytest.mark.parametrize("text, zero, message", [
    ("0.8", False, "--s '0.8' is ambiguous: write 80% or 0.8%"),
    (" 0.25 ", True, "--s ' 0.25 ' is ambiguous: write 25% or 0.25%"),
    ("0", False, "--s '0': give a percentage above 0% and at most 100%, such as 80%"),
    ("0%", False, "--s '0%': give a percentage above 0% and at most 100%, such as 80%"),
    ("-5%", True, "--s '-5%': give a percentage from 0% and at most 100%, such as 80%"),
    ("100.5", False, "--s '100.5': give a percentage above 0% and at most 100%, such as 80%"),
    ("101%", True, "--s '101%': give a percentage from 0% and at most 100%, such as 80%"),
    ("nan", False, "--s 'nan': give a percentage above 0% and at most 100%, such as 80%"),
    ("inf%", True, "--s 'inf%': give a percentage from 0% and at most 100%, such as 80%"),
    ("lots", False, "--s 'lots': give a percentage above 0% and at most 100%, such as 80%"),
])  # fmt: skip
def test_a_share_out_of_range_or_ambiguous_is_refused_in_words(text: str, zero: bool, message: str) -> None:
    """parse_share refuses a bare number below 1, anything not a number, and anything outside its range."""
    with pytest.raises(XferbenchError) as refused:
        cli.parse_share(text, "--s", zero=zero)
    assert str(refused.value) == message


def test_the_checked_paths_default_to_torchs_best_where_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """check_paths with no --path: CHECK_PATHS's installed entries only."""
    assert cli.CHECK_PATHS == {"torch": "pinned_into"}
    monkeypatch.setattr(BACKENDS["torch"], "missing", lambda: None)
    assert cli.check_paths([]) == [("torch", "pinned_into")]
    monkeypatch.setattr(BACKENDS["torch"], "missing", lambda: "PyTorch is not installed")
    assert cli.check_paths(()) == []


def test_a_checked_path_is_framework_slash_mode_in_any_case() -> None:
    """check_paths: each --path trimmed and lowercased, in order; host and sim are accepted though not listed."""
    assert cli.check_paths([" JAX/Pinned_Host ", "cuda/raw_pinned", "host/numpy"]) == [("jax", "pinned_host"), ("cuda", "raw_pinned"),
                                                                                         ("host", "numpy")]  # fmt: skip
    with pytest.raises(XferbenchError, match="^--path 'torch/pinned/extra': give FRAMEWORK/MODE"):
        cli.check_paths(["torch/pinned/extra"])  # split at the first '/': the mode 'pinned/extra' is none of torch's


@pytest.mark.parametrize("text", ["torch", "torch/", "mxnet/copy", "torch/warp", "/pinned", "torch-pinned"])
def test_a_path_that_is_not_a_registered_framework_and_mode_lists_them(text: str) -> None:
    """check_paths names every GPU framework's modes, host and sim left out."""
    with pytest.raises(XferbenchError) as refused:
        cli.check_paths(["cuda/raw_pinned", text])
    assert str(refused.value) == (
        f"--path {text!r}: give FRAMEWORK/MODE, one of cuda/{{raw_pinned,raw_pageable,raw_registered,raw_pinned_wc}}; hip/{{raw_pinned,raw_pageable}}; torch/{{pageable,"
        "pinned,pinned_into,pin_per_call,tensor,pin,pageable_into,loader,loader_workers,loader_pin,loader_pin_workers}; tf/{eager,function,jit,"
        "dataset,prefetch_to_device,copy_to_device,generator}; jax/{device_put,pinned_host}; cupy/{asarray}")


def test_jit_means_tensorflows_jit_mode_and_nothing_else() -> None:
    """jit_selection: tf and jit only; no framework and no mode, or those, give (tf,), (jit,)."""
    assert cli.jit_selection((), ()) == (("tf",), ("jit",))
    assert cli.jit_selection(("tf", "tf"), ("jit", "jit")) == (("tf",), ("jit",))
    with pytest.raises(XferbenchError) as other:
        cli.jit_selection(("tf", "jax", "torch"), ())
    assert str(other.value) == ("--jit is TensorFlow's tf.function(jit_compile=True) mode and jax has no such mode; drop --jit,"
                                " or use --framework tf --jit")  # fmt: skip
    with pytest.raises(XferbenchError) as mode:
        cli.jit_selection(("tf",), ("jit", "eager"))
    assert str(mode.value) == "--jit already selects TensorFlow's jit mode; drop --mode, or use --mode jit without --jit"


def test_python_names_a_framework_or_applies_to_every_isolated_one_swept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """parse_pythons: FRAMEWORK=PATH (any case, spaces trimmed), or PATH for each isolated framework in --framework."""
    python = executable(tmp_path / "python")
    assert cli.parse_pythons([f" TF = {python} "], ()) == {"tf": python}
    assert cli.parse_pythons([python], ("sim", "torch", "mx", "host", "jax")) == {"torch": python, "jax": python}
    assert cli.parse_pythons([f"={python}"], ("tf",)) == {"tf": python}  # no name before '=': as if none was given
    (tmp_path / "py=3").mkdir()
    odd = executable(tmp_path / "py=3" / "python")  # an '=' in the path: the name is what comes before the first one
    assert cli.parse_pythons([f"jax={odd}"], ()) == {"jax": odd}
    assert cli.parse_pythons([], ("tf",)) == {}
    folder, name = os.path.split(os.path.realpath(sys.executable))
    monkeypatch.setenv("PATH", folder)
    assert cli.parse_pythons([f"torch= {name} "], ()) == {"torch": os.path.join(folder, name)}  # found on PATH


@pytest.mark.parametrize("value, frameworks, message", [
    ("{p}", ("sim", "host"), "--python {p}: say which framework, e.g. --python tf={p}"),
    ("{p}", (), "--python {p}: say which framework, e.g. --python tf={p}"),
    ("tf={p}.none", ("tf",), "--python tf={p}.none: '{p}.none' is not an executable Python interpreter"),
    ("tf={plain}", ("tf",), "--python tf={plain}: '{plain}' is not an executable Python interpreter"),
    ("tf={folder}", ("tf",), "--python tf={folder}: '{folder}' is not an executable Python interpreter"),
    ("mx={p}", (), "--python mx={p}: unknown framework 'mx'; choose from: cuda, hip, torch, tf, jax, cupy, host, sim"),
])  # fmt: skip
def test_a_python_without_a_framework_or_an_interpreter_is_refused(tmp_path: Path, value: str, frameworks: tuple[str, ...],
                                                                  message: str) -> None:  # fmt: skip
    """parse_pythons refuses a bare PATH with no isolated framework, a path that is no executable, an unknown framework."""
    names = {"p": executable(tmp_path / "python"), "plain": str(tmp_path / "plain"), "folder": str(tmp_path)}
    (tmp_path / "plain").write_text("")
    with pytest.raises(XferbenchError) as refused:
        cli.parse_pythons([value.format(**names)], frameworks)
    assert str(refused.value) == message.format(**names)


def test_repeatable_options_split_on_commas_and_drop_blanks() -> None:
    """split_lists: each value's comma-separated parts, trimmed, blanks dropped; None is no values."""
    assert cli.split_lists([" a, b ,,", "c", " "]) == ["a", "b", "c"]
    assert cli.split_lists(None) == [] and cli.split_lists([]) == []


def test_a_selection_lowercases_each_option_into_its_own_field() -> None:
    """selection: framework, mode, op, device, host buffer, timing and direction, split and lowercased."""
    assert cli.selection(["Torch,tf"], ["Pinned"], ["COPY"], ["CUDA:0", "cpu"], ["Numpy"], ["Streamed"], ["D2H,h2d"]) == Selection(
        ("torch", "tf"), ("pinned",), ("copy",), ("cuda:0", "cpu"), ("numpy",), ("streamed",), ("d2h", "h2d"))
    assert cli.selection(None, None, None, None, None) == Selection()


def test_an_output_that_is_one_of_the_inputs_is_refused_by_its_option(tmp_path: Path) -> None:
    """refuse_overwriting_input compares resolved paths: the same file named two ways is refused."""
    (tmp_path / "a.json").write_text("{}")
    cli.refuse_overwriting_input(Path("b.json"), [Path("a.json")], "--out")
    with pytest.raises(XferbenchError) as refused:
        cli.refuse_overwriting_input(Path("./a.json"), [Path("c.json"), tmp_path / "a.json"], "--plot")
    assert str(refused.value) == "--plot a.json is one of the result files; give the output another name"


# Damaged points, the ASCII stand-ins, streams ---------------------------------------------------------


def damaged(framework: str, count: int) -> Result:
    points = [Point(batch, batch, status="damaged", error=f"damaged in the file: bad [{batch}]") for batch in range(1, count + 1)]
    return Result({}, {}, "", [Series(framework, "m", "copy", "cpu", [1], host_buffer="numpy", points=[Point(9, 9), *points])])


def test_damaged_points_are_one_line_per_file_naming_the_first_three(consoles: SimpleNamespace, capsys: Any) -> None:
    """warn_damaged_points: nothing when none; the count, the first three and how many more."""
    cli.warn_damaged_points("none.json", [])
    cli.warn_damaged_points(Path("three.json"), ["a", "b", "c"])
    cli.warn_damaged_points("[five].json", ["a", "b", "c", "d", "[e]"])
    cli.warn_damaged_points("four.json", ["a", "b", "c", "d"])
    assert capsys.readouterr().err == ("warning: three.json: left out 3 damaged point(s): a; b; c\n"
                                       "warning: [five].json: left out 5 damaged point(s): a; b; c; and 2 more\n"
                                       "warning: four.json: left out 4 damaged point(s): a; b; c; and 1 more\n")  # fmt: skip
    assert [kwargs for _, kwargs in printed(consoles.err)] == [QUIET, QUIET, QUIET]


def test_damaged_points_are_named_once_per_file_however_many_series_it_gave(consoles: SimpleNamespace, capsys: Any) -> None:
    """warn_damaged: one line per result file, not per pick."""
    one, two = damaged("x", 1), damaged("y", 2)
    cli.warn_damaged([SimpleNamespace(path="one.json", result=one), SimpleNamespace(path="two.json", result=two),
                      SimpleNamespace(path="one.json", result=one)])  # fmt: skip
    assert capsys.readouterr().err == ("warning: one.json: left out 1 damaged point(s): x/m/copy@cpu batch 1 (bad [1])\n"
                                       "warning: two.json: left out 2 damaged point(s): y/m/copy@cpu batch 1 (bad [1]); "
                                       "y/m/copy@cpu batch 2 (bad [2])\n")  # fmt: skip


def test_every_symbol_has_its_ascii_stand_in_and_anything_else_is_a_question_mark() -> None:
    """_ascii: the registered handler writes ASCII's stand-ins, '?' for the rest, and refuses decoding errors."""
    assert cli.ASCII == {"µ": "u", "–": "-", "—": "-", "−": "-", "≥": ">=", "≤": "<=", "·": "-", "×": "x", "▼": "v",
                         "▲": "^", "…": "...", "±": "+/-", "→": "->", "←": "<-", "○": "o", "≈": "~", "↔": "<->", "‘": "'", "’": "'",
                         "“": '"', "”": '"'}  # fmt: skip
    assert "a µs ☃ ≥ b".encode("ascii", errors="xferbench-ascii") == b"a us ? >= b"
    assert cli._ascii(UnicodeEncodeError("ascii", "xµ≥☃y", 1, 4, "no")) == ("u>=?", 4)
    error = UnicodeDecodeError("ascii", b"\xff", 0, 1, "no")
    with pytest.raises(UnicodeDecodeError) as raised:
        cli._ascii(error)
    assert raised.value is error


class Unnamed(io.TextIOWrapper):
    """A text stream that names no encoding, or one Python does not know."""

    name_of_encoding: str | None = None

    @property
    def encoding(self) -> str | None:  # type: ignore[override]
        return self.name_of_encoding


def stream(encoding: str) -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding=encoding)


def test_plain_streams_gives_ascii_stand_ins_to_a_stream_that_cannot_encode_the_symbols(monkeypatch: pytest.MonkeyPatch) -> None:
    """plain_streams: ASCII, Latin-1, no encoding or an unknown one get the stand-ins; UTF-8 and a stream
    that cannot be reconfigured are left as they are."""
    for encoding, errors in (("ascii", "xferbench-ascii"), ("latin-1", "xferbench-ascii"), ("utf-8", "strict")):
        out, err = stream(encoding), stream("utf-8")
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        cli.plain_streams()
        assert (out.errors, err.errors) == (errors, "strict"), encoding
        monkeypatch.setattr(sys, "stdout", stream("utf-8"))
        monkeypatch.setattr(sys, "stderr", err := stream(encoding))
        cli.plain_streams()
        assert err.errors == errors, encoding
    for name in (None, "no-such-codec"):
        unnamed = Unnamed(io.BytesIO(), encoding="utf-8")
        unnamed.name_of_encoding = name
        monkeypatch.setattr(sys, "stdout", unnamed)
        cli.plain_streams()
        assert unnamed.errors == "xferbench-ascii", name
    captured = io.StringIO()  # no reconfigure: left alone
    refusing = stream("ascii")
    monkeypatch.setattr(refusing, "reconfigure", raising(ValueError("detached")))
    monkeypatch.setattr(sys, "stdout", captured)
    monkeypatch.setattr(sys, "stderr", refusing)
    cli.plain_streams()
    assert refusing.errors == "strict"


@pytest.mark.parametrize("number, full", [(errno.ENOSPC, True), (errno.EPIPE, True), (errno.EIO, True), (errno.EDQUOT, True),
                                          (errno.EFBIG, True), (errno.EACCES, False), (errno.ENOENT, False), (None, False)])  # fmt: skip
def test_a_stream_error_is_a_full_disk_a_closed_pipe_or_an_io_error(number: int | None, full: bool) -> None:
    """stream_error: ENOSPC, EPIPE, EIO, EDQUOT and EFBIG; nothing else."""
    assert cli.stream_error(OSError(number, "x") if number else OSError("x")) is full
    assert cli.STREAM_FAILED == 74


class ClosedPipe:
    """A standard stream whose reader has gone: every write and flush raises BrokenPipeError, as a real pipe's does
    (`words`: its strerror; None for an error raised without the OS's words)."""

    def __init__(self, words: str | None = "Broken pipe") -> None:
        self.error = BrokenPipeError(errno.EPIPE, words) if words else BrokenPipeError()

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        raise self.error

    def flush(self) -> None:
        raise self.error


@pytest.mark.parametrize("words", ["Broken pipe", "Tubería rota", None])
@pytest.mark.parametrize("call", [lambda: cli.TrimmedLines("stdout").write("x"), lambda: cli.TrimmedLines("stdout").flush(),
                                  lambda: cli.emit("x")])  # fmt: skip
def test_a_closed_pipe_becomes_a_stream_error_without_epipes_number(call: Any, words: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Consoles' writes and flushes and emit's text raise StreamClosed: an OSError with no errno (click would make EPIPE a
    silent exit 1), which stream_error still knows; it says the OS's words, or 'Broken pipe' where there are none."""
    monkeypatch.setattr(sys, "stdout", ClosedPipe(words))
    with pytest.raises(cli.StreamClosed) as closed:
        call()
    assert closed.value.errno is None and str(closed.value) == (words or "Broken pipe") and cli.stream_error(closed.value)
    assert closed.value.__cause__ is None and closed.value.__suppress_context__


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="/proc/self/fd is Linux's")
def test_silence_points_a_descriptor_at_the_null_device_and_leaves_no_other_open(tmp_path: Path) -> None:
    """silence: writes to the descriptor go nowhere; no descriptor is left open; a bad one is let be."""
    log = tmp_path / "log"
    fd = os.open(log, os.O_WRONLY | os.O_CREAT)
    try:
        before = sorted(os.listdir("/proc/self/fd"))
        cli.silence(fd)
        assert sorted(os.listdir("/proc/self/fd")) == before
        assert os.write(fd, b"lost") == 4 and log.read_bytes() == b""
        assert os.fstat(fd).st_rdev == os.stat(os.devnull).st_rdev
    finally:
        os.close(fd)
    assert cli.silence(-1) is None


@pytest.fixture
def entry(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """main with plain_streams, silence and the app replaced by recorders: what ran, in order."""
    calls: list[Any] = []
    monkeypatch.setattr(cli, "plain_streams", lambda: calls.append("plain"))
    monkeypatch.setattr(cli, "silence", calls.append)
    return calls


def test_main_says_a_stream_that_cannot_take_more_in_one_line_and_exits_74(entry: list[Any], monkeypatch: pytest.MonkeyPatch,
                                                                            capsys: Any) -> None:  # fmt: skip
    """main: a full stdout silences it, says why on stderr, exits 74; the OS's words, else the error itself."""
    for error, why in ((OSError(errno.ENOSPC, "No space left on device"), "No space left on device"),
                       (OSError(errno.EPIPE, ""), "[Errno 32] ")):  # no words of the OS's: the error itself
        entry.clear()
        monkeypatch.setattr(cli, "app", lambda error=error: entry.append("app") or raising(error)())
        with pytest.raises(SystemExit) as stop:
            cli.main()
        assert stop.value.code == 74 and entry == ["plain", "app", 1]
        assert capsys.readouterr() == ("", f"xferbench: cannot write its output: {why}; the output stopped there (a result file keeps"
                                           " every point saved)\n")  # fmt: skip


class Broken(io.StringIO):
    def __init__(self, fails: str) -> None:
        super().__init__()
        self.fails = fails

    def write(self, text: str) -> int:
        if self.fails == "write":
            raise OSError(errno.EIO, "I/O error")
        return super().write(text)

    def flush(self) -> None:
        if self.fails == "flush":
            raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("fails", ["write", "flush"])
def test_main_silences_stderr_too_when_the_line_cannot_be_said(entry: list[Any], monkeypatch: pytest.MonkeyPatch, fails: str) -> None:
    """main: where stderr cannot take the line either, both streams are silenced and the exit status says it."""
    monkeypatch.setattr(cli, "app", raising(OSError(errno.EPIPE, "Broken pipe")))
    monkeypatch.setattr(sys, "stderr", Broken(fails))
    with pytest.raises(SystemExit) as stop:
        cli.main()
    assert stop.value.code == 74 and entry == ["plain", 1, 2]


def test_main_lets_any_other_os_error_through_and_says_a_late_ctrl_c_in_one_word(entry: list[Any], monkeypatch: pytest.MonkeyPatch,
                                                                                consoles: SimpleNamespace, capsys: Any) -> None:  # fmt: skip
    """main: an OSError that is no stream's is raised as it is; a KeyboardInterrupt is "interrupted" and exit 130."""
    monkeypatch.setattr(cli, "app", raising(OSError(errno.EACCES, "Permission denied")))
    with pytest.raises(PermissionError):
        cli.main()
    assert entry == ["plain"]
    monkeypatch.setattr(cli, "app", raising(KeyboardInterrupt()))
    with pytest.raises(SystemExit) as stop:
        cli.main()
    assert stop.value.code == 130 and capsys.readouterr() == ("", "interrupted\n")
    assert printed(consoles.err) == [("interrupted", QUIET)]


def test_running_the_module_as_a_script_runs_main(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    """python -m xferbench.cli: the __main__ guard calls main."""
    import runpy
    import warnings

    from xferbench import __version__

    monkeypatch.setattr(sys, "argv", ["xferbench", "--version"])
    with warnings.catch_warnings(), pytest.raises(SystemExit) as stop:
        warnings.simplefilter("ignore", RuntimeWarning)  # the module is imported already
        runpy.run_module("xferbench.cli", run_name="__main__")
    assert stop.value.code == 0 and capsys.readouterr().out == f"xferbench {__version__}\n"


# sweep ----------------------------------------------------------------------------------------------------


class FakePlan:
    """What make_plan returns, as far as sweep uses it: the target its file is named by, and close()."""

    def __init__(self, target: str = "cuda:1") -> None:
        self.target, self.closed = target, 0

    def close(self) -> None:
        self.closed += 1


@pytest.fixture
def planned(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """sweep and check with make_plan and run_sweep replaced by recorders: each config planned, each run's
    arguments and the SIGTERM handler it ran under; `then` runs on the output file before the run returns `result`."""
    calls = SimpleNamespace(configs=[], plan=FakePlan(), runs=[], kills=[], result=Result({}, {}, ""), then=None)

    def make_plan(config: SweepConfig) -> FakePlan:
        calls.configs.append(config)
        return calls.plan

    def run_sweep(plan: FakePlan, output: OutputFile, link_sampling: bool = True, tables: bool = True) -> Result:
        calls.runs.append((plan, output, link_sampling, tables))
        calls.kills.append(signal.getsignal(signal.SIGTERM))
        if calls.then:
            calls.then(output)
        return calls.result

    monkeypatch.setattr(cli, "make_plan", make_plan)
    monkeypatch.setattr(cli, "run_sweep", run_sweep)
    return calls


def test_a_plain_sweep_plans_the_defaults_and_saves_under_runs_by_host_device_and_time(planned: SimpleNamespace,
                                                                                      consoles: SimpleNamespace) -> None:  # fmt: skip
    """sweep with no options: SweepConfig's defaults; runs/HOST-DEVICE-TIME.json, numbered; link sampling on; the plan closed."""
    r = invoke("sweep")
    assert (r.exit_code, r.output) == (0, "")
    (config,) = planned.configs
    assert config == SweepConfig()
    assert (config.ops, config.device, config.shape, config.methods, config.directions) == (("copy",), "auto", (256, 256, 3),
                                                                                           ("per-call",), ("h2d",))  # fmt: skip
    assert config.batch_sizes == DEFAULT_BATCH_SIZES == (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
    assert config.timing == TimingConfig() and config.sim == SimLink() and config.loader_workers == DEFAULT_LOADER_WORKERS
    (plan, output, link_sampling, tables), = planned.runs
    assert plan is planned.plan and plan.closed == 1 and (link_sampling, tables) == (True, True)
    assert planned.kills == [running.terminate] and signal.getsignal(signal.SIGTERM) is not running.terminate  # a kill stops it as Ctrl-C
    assert (output.path, output.csv, output.overwrite, output.numbered) == (Path("runs") / f"{HOST}-cuda1-{STAMP}.json", False, False, True)


def test_every_sweep_option_reaches_the_config_lowercased_and_without_repeats(planned: SimpleNamespace, tmp_path: Path) -> None:
    """sweep: each option in its SweepConfig field, the timing and sim ones in order, --out, --csv and --overwrite in the output file."""
    python = executable(tmp_path / "python")
    Path("out.json").write_text("{}")
    r = invoke("sweep", "--framework", "SIM,host", "-f", "sim", "--mode", "Link", "-m", "LINK", "--op", "SEED,copy", "--op", "seed",
               "--device", "cpu", "--device", "cuda:1", "--concurrent", "--batch-sizes", "4,2", "--shape", "8x4", "--host-buffer",
               "Pinned,numpy", "--host-buffer", "pinned", "--python", f"tf={python}", "--timing", "STREAMED", "--timing", "per-call,streamed",
               "--direction", "D2H,bidir", "-d", "d2h", "--no-bind", "--pipeline", "--overlap", "--loader-workers", "7",
               "--warmup-calls", "2", "--warmup-time", "0.5", "--min-samples", "3", "--min-time", "0.25", "--max-samples", "9",
               "--max-time", "4", "--settle-time", "0.75", "--sim-latency-us", "3", "--sim-bandwidth-gbps", "6", "--sim-jitter", "0.125",
               "--sim-seed", "5", "--sim-devices", "2", "--sim-host-bandwidth-gbps", "9", "--no-link-sampling", "--out", "out.json",
               "--csv", "--overwrite")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert planned.configs == [SweepConfig(
        frameworks=("sim", "host"), modes=("link", "link"), ops=("seed", "copy"), device="cpu,cuda:1", batch_sizes=(2, 4), shape=(8, 4),
        timing=TimingConfig(warmup_calls=2, warmup_s=0.5, min_samples=3, min_time_s=0.25, max_samples=9, max_time_s=4.0, settle_s=0.75),
        sim=SimLink(latency_us=3.0, bandwidth_gbps=6.0, jitter=0.125, seed=5, devices=2, host_bandwidth_gbps=9.0),
        host_buffers=("pinned", "numpy"), pythons={"tf": python}, methods=("streamed", "per-call"), bind=False,
        directions=("d2h", "bidir"), concurrent=True, pipeline=True, overlap=True, loader_workers=7)]  # fmt: skip
    (_, output, link_sampling, _), = planned.runs
    assert (output.path, output.csv, output.overwrite, output.numbered, link_sampling) == (Path("out.json"), True, True, False, False)


def test_jit_selects_tensorflows_jit_mode_and_a_bare_python_follows_it(planned: SimpleNamespace, tmp_path: Path) -> None:
    """sweep --jit: frameworks (tf,) and modes (jit,), and a --python without a name is tf's."""
    python = executable(tmp_path / "python")
    assert invoke("sweep", "--jit", "--python", python).exit_code == 0
    assert invoke("sweep", "--jit", "-f", "TF", "-m", "JIT").exit_code == 0
    assert [(c.frameworks, c.modes, c.pythons) for c in planned.configs] == [(("tf",), ("jit",), {"tf": python}), (("tf",), ("jit",), {})]


@pytest.mark.parametrize("args, message", [
    (["--jit", "-f", "torch"], "--jit is TensorFlow's tf.function(jit_compile=True) mode and torch has no such mode; drop --jit, or use"
                               " --framework tf --jit"),
    (["--batch-sizes", "0"], "--batch-sizes: '0' is not a positive integer"),
    (["--shape", "8x"], "--shape '8x': give positive integers joined by 'x', e.g. 256x256x3"),
    (["--python", "/no/python"], "--python /no/python: say which framework, e.g. --python tf=/no/python"),
    (["-o", "r.csv", "--csv"], "--out r.csv would be overwritten by --csv; give the result file a .json name"),
    (["-o", "taken.json"], "taken.json already exists; choose another --out, or add --overwrite to replace it"),
])  # fmt: skip
def test_bad_sweep_input_is_one_line_exit_2_before_anything_is_planned(planned: SimpleNamespace, args: list[str], message: str) -> None:
    """sweep: bad options and an --out that cannot be written are said before make_plan runs."""
    Path("taken.json").write_text("{}")
    r = invoke("sweep", *args)
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", f"error: {message}\n")
    assert planned.configs == [] and Path("taken.json").read_text() == "{}"


def test_an_out_folder_or_an_overwrite_passes_the_check_before_planning(planned: SimpleNamespace) -> None:
    """sweep: a folder --out is numbered, so a taken run.json there is no obstacle; --overwrite lets a taken file through."""
    Path("d").mkdir()
    Path("d/run.json").write_text("{}")
    Path("taken.json").write_text("{}")
    assert invoke("sweep", "-o", "d/").exit_code == 0
    assert invoke("sweep", "-o", "taken.json", "--overwrite").exit_code == 0
    assert [(o.path, o.numbered, o.overwrite) for _, o, _, _ in planned.runs] == [(Path("d") / f"{HOST}-cuda1-{STAMP}.json", True, False),
                                                                                 (Path("taken.json"), False, True)]  # fmt: skip


@pytest.mark.parametrize("error, code, said", [
    (XferbenchError("no such [device]"), 2, "error: no such [device]\n"),
    (KeyboardInterrupt(), 130, "error: interrupted while starting; nothing was measured\n"),
    (Terminated(), 143, "error: terminated while starting; nothing was measured\n"),
])  # fmt: skip
@pytest.mark.parametrize("where", ["make_plan", "run_sweep"])
def test_an_error_or_a_stop_while_planning_or_starting_is_one_line(monkeypatch: pytest.MonkeyPatch, planned: SimpleNamespace,
                                                                   error: BaseException, code: int, said: str,
                                                                   where: str) -> None:  # fmt: skip
    """sweep: a one-line error exits 2; Ctrl-C exits 130 and a kill 143, saying nothing was measured; a made plan is closed."""
    monkeypatch.setattr(cli, where, raising(error))
    r = invoke("sweep", "-o", "r.json")
    assert (r.exit_code, r.stdout, r.stderr) == (code, "", said)
    assert planned.plan.closed == (where == "run_sweep")


def test_failures_make_exit_1_naming_the_first_three_and_the_file(planned: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    """sweep: running.failures of the result, three named then "...", and the result file."""
    found: list[list[str]] = [["a", "b", "c", "d"], ["a", "b", "c"], ["a"]]
    seen: list[Result] = []
    monkeypatch.setattr(running, "failures", lambda result: seen.append(result) or found.pop(0))
    said = [invoke("sweep", "-o", "r.json") for _ in range(3)]
    assert [(r.exit_code, r.stderr) for r in said] == [
        (1, "error: 4 failure(s) (a, b, c, ...); see the table above and r.json\n"),
        (1, "error: 3 failure(s) (a, b, c); see the table above and r.json\n"),
        (1, "error: 1 failure(s) (a); see the table above and r.json\n")]  # fmt: skip
    assert seen == [planned.result] * 3


def save_nothing(output: OutputFile) -> None:
    output.save(Result({}, {}, "", [], "running"))


@pytest.mark.parametrize("number, then, kept", [
    (errno.ENOSPC, save_nothing, False),  # claimed and given no point: removed, so a rerun is not blocked
    (errno.EDQUOT, save_nothing, False),
    (errno.EACCES, save_nothing, True),  # not a stream's error: the file stays
    (errno.ENOSPC, lambda output: output.save(node("a")), True),  # it holds points
    (errno.ENOSPC, None, False),  # nothing written: nothing to remove
])  # fmt: skip
def test_a_stream_that_fails_mid_sweep_removes_a_file_that_holds_no_point(planned: SimpleNamespace, number: int, then: Any,
                                                                         kept: bool) -> None:  # fmt: skip
    """sweep: an OSError goes on to main; where it is a stream's and the file was claimed without a point, the file goes."""

    def fail_after(output: OutputFile) -> None:
        if then:
            then(output)
        raise OSError(number, "stream failed")

    planned.then = fail_after
    r = invoke("sweep", "-o", "r.json")
    assert isinstance(r.exception, OSError) and r.exception.errno == number
    assert Path("r.json").exists() is kept and planned.plan.closed == 1


def test_run_sweep_passes_the_commands_consoles_and_turns_a_stop_into_its_line(monkeypatch: pytest.MonkeyPatch,
                                                                              consoles: SimpleNamespace, capsys: Any) -> None:  # fmt: skip
    """cli.run_sweep: running.run_sweep with cli's out and err, link sampling and tables as given; Stopped is its line and code."""
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(running, "run_sweep", lambda *args: calls.append(args) or "result")
    assert cli.run_sweep("plan", "output") == "result"  # type: ignore[arg-type]
    assert cli.run_sweep("plan", "output", False, False) == "result"  # type: ignore[arg-type]
    assert calls == [("plan", "output", consoles.out, consoles.err, True, True),
                     ("plan", "output", consoles.out, consoles.err, False, False)]
    monkeypatch.setattr(running, "run_sweep", raising(Stopped("terminated: 3 point(s) saved to r.json", 143)))
    with pytest.raises(typer.Exit) as stop:
        cli.run_sweep("plan", "output")  # type: ignore[arg-type]
    assert stop.value.exit_code == 143 and capsys.readouterr().err == "error: terminated: 3 point(s) saved to r.json\n"


# check ----------------------------------------------------------------------------------------------------


def gpu(device: str, *statuses: str) -> checking.DeviceVerdict:
    names = ["link", "reference", "link state", "baseline x"]
    return checking.DeviceVerdict(device, "H100", 1.0, [Verdict(names[i], s, f"{s} figure") for i, s in enumerate(statuses)])


@pytest.fixture
def node_check(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """check on a machine with a CUDA GPU and PyTorch, with measure_check and the verdicts replaced by recorders."""
    calls = SimpleNamespace(measured=[], judged=[], found=[gpu("cuda:0", PASS)], result=Result({"host": "a"}, {}, "2026", [], "complete"))
    monkeypatch.setattr(environment, "nvidia_gpu_present", lambda: True)
    monkeypatch.setattr(BACKENDS["torch"], "missing", lambda: None)

    def measure(config: SweepConfig, out_path: str | None, overwrite: bool) -> tuple[Result, OutputFile]:
        calls.measured.append((config, out_path, overwrite))
        return calls.result, OutputFile(Path("c.json"), overwrite=True)

    def verdicts(result: Result, share: float, base: Result | None, slower: float) -> list[checking.DeviceVerdict]:
        calls.judged.append((result, share, base, slower))
        return calls.found

    monkeypatch.setattr(cli, "measure_check", measure)
    monkeypatch.setattr(checking, "verdicts", verdicts)
    return calls


def test_check_measures_the_raw_copy_and_torchs_best_path_on_every_gpu_at_512_both_ways(node_check: SimpleNamespace,
                                                                                        consoles: SimpleNamespace) -> None:  # fmt: skip
    """check's defaults: cuda raw_pinned and torch pinned_into, on all, batch 512 of 256x256x3, per-call and streamed;
    a 75% link share, a 5% threshold, no baseline; PASS exits 0 and says the time taken and the file."""
    r = invoke("check")
    assert r.exit_code == 0, r.output
    assert node_check.measured == [(SweepConfig(frameworks=("cuda", "torch"), modes=("raw_pinned", "pinned_into"), device="all",
                                                batch_sizes=(512,), shape=(256, 256, 3), methods=("per-call", "streamed")),
                                    None, False)]  # fmt: skip
    assert node_check.judged == [(node_check.result, 0.75, None, 0.05)]
    assert r.stdout.endswith("\n1 of 1 passed in 3 s; saved c.json\n") and "cuda:0 · H100: PASS" in r.stdout and r.stderr == ""
    assert printed(consoles.out) == [("Table", {}), ("1 of 1 passed in 3 s; saved c.json", QUIET)]
    assert load("c.json").check == {"status": "pass", "link_share": 0.75, "baseline": None,
                                    "devices": [{**dataclasses.asdict(node_check.found[0]), "status": "pass"}]}  # fmt: skip


def test_check_options_reach_the_config_and_the_verdicts(node_check: SimpleNamespace, tmp_path: Path) -> None:
    """check: --path replaces the default beside the raw copy (no repeats); --batch-size, --shape, --link-share, --threshold,
    --baseline, --out and --overwrite each go where they belong."""
    base = write(node("base"), tmp_path, "base")
    Path("taken.json").write_text("{}")
    r = invoke("check", "--path", "jax/pinned_host", "-p", "CUDA/raw_pinned", "-p", "torch/pinned", "--batch-size", "1", "--shape", "8x4",
               "--link-share", "80%", "--threshold", "10%", "--baseline", "base.json", "-o", "taken.json", "--overwrite")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert node_check.measured == [(SweepConfig(frameworks=("cuda", "jax", "torch"), modes=("raw_pinned", "pinned_host", "pinned"),
                                                device="all", batch_sizes=(1,), shape=(8, 4), methods=("per-call", "streamed")),
                                    "taken.json", True)]  # fmt: skip
    ((result, share, loaded, slower),) = node_check.judged
    assert (share, slower, loaded.environment["host"]) == (0.8, 0.1, "base") and loaded.to_dict() == load(base).to_dict()
    assert load("c.json").check["link_share"] == 0.8 and load("c.json").check["baseline"] == "base.json"
    assert r.stderr == ""  # the baseline has no damaged point


def test_check_takes_the_largest_batch_and_the_raw_copy_alone(node_check: SimpleNamespace) -> None:
    """check --batch-size MAX_BATCH is accepted; --path cuda/raw_pinned alone checks the raw copy only."""
    assert invoke("check", "--batch-size", "1048576", "-p", "cuda/raw_pinned").exit_code == 0
    (config, _, _), = node_check.measured
    assert (config.batch_sizes, config.frameworks, config.modes) == ((1048576,), ("cuda",), ("raw_pinned",))


@pytest.mark.parametrize("args, message", [
    (["--link-share", "0.8"], "--link-share '0.8' is ambiguous: write 80% or 0.8%"),
    (["--link-share", "0%"], "--link-share '0%': give a percentage above 0% and at most 100%, such as 80%"),
    (["--threshold", "lots"], "--threshold 'lots': give a percentage from 0% to below 100%, such as 5% (a point is slower when its"
                              " MB/s falls by more than this)"),
    (["--batch-size", "0"], "--batch-size 0: give a whole number of items from 1 to 1,048,576"),
    (["--batch-size", "1048577"], "--batch-size 1048577: give a whole number of items from 1 to 1,048,576"),
    (["--shape", "x"], "--shape 'x': give positive integers joined by 'x', e.g. 256x256x3"),
    (["--baseline", "missing.json"], "missing.json: no such file"),
    (["-p", "torch"], "--path 'torch': give FRAMEWORK/MODE, one of cuda/{raw_pinned,raw_pageable,raw_registered,raw_pinned_wc};"
                      " hip/{raw_pinned,raw_pageable}; torch/{pageable,pinned,pinned_into,pin_per_call,tensor,pin,pageable_into,loader,loader_workers,loader_pin,loader_pin_workers};"
                      " tf/{eager,function,jit,dataset,prefetch_to_device,copy_to_device,generator}; jax/{device_put,pinned_host};"
                      " cupy/{asarray}"),
    (["-o", "taken.json"], "taken.json already exists; choose another --out, or add --overwrite to replace it"),
])  # fmt: skip
def test_bad_check_input_is_one_line_exit_2_before_measuring(node_check: SimpleNamespace, args: list[str], message: str) -> None:
    """check: each bad option is one line and exit 2, and nothing is measured."""
    Path("taken.json").write_text("{}")
    r = invoke("check", *args)
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", f"error: {message}\n")
    assert node_check.measured == []


def test_check_without_an_nvidia_gpu_measures_nothing(node_check: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    """check on a machine with no CUDA GPU (an Apple one counts for nothing): one line, exit 2."""
    monkeypatch.setattr(environment, "nvidia_gpu_present", lambda: False)
    r = invoke("check")
    assert (r.exit_code, r.stdout) == (2, "") and node_check.measured == []
    assert r.stderr == ("error: nothing to check: no NVIDIA GPU here (no driver entry in /proc/driver/nvidia/gpus, and NVML sees"
                        " none); check measures each CUDA GPU's link\n")  # fmt: skip


def test_a_folder_out_lets_check_number_its_file(node_check: SimpleNamespace) -> None:
    """check -o FOLDER/: a taken check.json there is no obstacle (the name is numbered)."""
    Path("d").mkdir()
    Path("d/check.json").write_text("{}")
    assert invoke("check", "--out", "d/").exit_code == 0 and node_check.measured[0][1:] == ("d/", False)


@pytest.mark.parametrize("found, code, passed", [
    ([gpu("cuda:0", PASS), gpu("cuda:1", PASS, FAIL)], 1, "1 of 2 passed"),
    ([gpu("cuda:0", PASS, INFO), gpu("cuda:1", INFO, PASS)], 0, "2 of 2 passed"),
])  # fmt: skip
def test_check_exits_with_the_overall_verdicts_code(node_check: SimpleNamespace, found: list[Any], code: int, passed: str) -> None:
    """check: exit 0 when every GPU passed, 1 when one failed; the count of those passed."""
    node_check.found = found
    r = invoke("check")
    assert r.exit_code == code and r.stdout.endswith(f"\n{passed} in 3 s; saved c.json\n") and r.stderr == ""
    assert load("c.json").check["status"] == checking.overall(found)


@pytest.mark.parametrize("found, named", [
    ([gpu("cuda:0", PASS), gpu("cuda:1", INFO), gpu("cuda:2", "warn")], "cuda:1, cuda:2"),
    ([], "any GPU"),
])  # fmt: skip
def test_a_check_nothing_could_judge_exits_2_naming_the_gpus(node_check: SimpleNamespace, found: list[Any], named: str) -> None:
    """check: where a GPU could not be judged, the verdict is n/a, exit 2, naming those GPUs (or any GPU where none was checked)."""
    node_check.found = found
    r = invoke("check")
    assert r.exit_code == 2 and r.stdout.endswith(f"{sum(v.status == PASS for v in found)} of {len(found)} passed in 3 s; saved c.json\n")
    assert r.stderr == (f"error: nothing could judge {named}: no NVML link facts and no published floor for the model; install"
                        " nvidia-ml-py ('xferbench[nvml]') or give --baseline\n")  # fmt: skip
    assert load("c.json").check["status"] == NA


def test_damaged_points_of_a_baseline_are_named_before_the_check(node_check: SimpleNamespace, tmp_path: Path) -> None:
    """check --baseline: the baseline's damaged points, one line, under the name it was given."""
    base = write(node("a"), tmp_path, "base")
    data = json.loads(base.read_text())
    data["series"][0]["points"][0]["times_s"][0] = -1.0
    base.write_text(json.dumps(data))
    r = invoke("check", "--baseline", "base.json")
    assert r.exit_code == 0 and r.stderr == ("warning: base.json: left out 1 damaged point(s): cuda/raw_pinned/copy/streamed@cuda:0"
                                             " batch 512 (a time in 'times_s' is not a positive number)\n")  # fmt: skip


def test_measure_check_runs_the_plan_without_tables_into_a_host_check_time_file(planned: SimpleNamespace) -> None:
    """measure_check: make_plan(config); the file runs/HOST-check-TIME.json, numbered, or --out; run_sweep without tables."""
    config = SweepConfig(frameworks=("cuda",))
    result, output = cli.measure_check(config, None, False)
    assert result is planned.result and planned.configs == [config] and planned.plan.closed == 1
    assert (output.path, output.numbered, output.overwrite) == (Path("runs") / f"{HOST}-check-{STAMP}.json", True, False)
    Path("c.json").write_text("{}")
    result, output = cli.measure_check(config, "c.json", True)
    assert (output.path, output.numbered, output.overwrite) == (Path("c.json"), False, True)
    assert [(plan, link, tables) for plan, _, link, tables in planned.runs] == [(planned.plan, True, False)] * 2
    assert [run[1] for run in planned.runs][-1] is output  # the run saves into the file measure_check returns
    assert planned.kills == [running.terminate] * 2


@pytest.mark.parametrize("error, code, said", [
    (XferbenchError("no [GPU]"), 2, "error: no [GPU]\n"),
    (KeyboardInterrupt(), 130, "error: interrupted while starting; nothing was measured\n"),
    (Terminated(), 143, "error: terminated while starting; nothing was measured\n"),
])  # fmt: skip
def test_measure_check_turns_an_error_or_a_stop_into_its_line(planned: SimpleNamespace, monkeypatch: pytest.MonkeyPatch,
                                                             consoles: SimpleNamespace, capsys: Any, error: BaseException, code: int,
                                                             said: str) -> None:  # fmt: skip
    """measure_check: an error making the plan or running it is one line, exit 2; a stop is 130 or 143."""
    monkeypatch.setattr(cli, "run_sweep", raising(error))
    with pytest.raises(typer.Exit) as stop:
        cli.measure_check(SweepConfig(), None, False)
    assert (stop.value.exit_code, capsys.readouterr().err, planned.plan.closed) == (code, said, 1)
    if isinstance(error, XferbenchError):
        monkeypatch.setattr(cli, "make_plan", raising(error))
        with pytest.raises(typer.Exit) as stop:
            cli.measure_check(SweepConfig(), None, False)
        assert (stop.value.exit_code, capsys.readouterr().err) == (code, said)


# plot and report -----------------------------------------------------------------------------------------


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """plot's figure and save replaced by recorders (nothing is drawn); a.json is a node's result."""
    calls = SimpleNamespace(figures=[], saved=[])
    write(node("a"), Path.cwd(), "a")

    def figure(picks: list[Any], title: str | None, *, y_scale: str) -> str:
        calls.figures.append(([p.series.label() for p in picks], title, y_scale))
        return "figure"

    def save(fig: str, path: Path, *option: str) -> Path:
        calls.saved.append((fig, path, *option))
        return path

    monkeypatch.setattr(plotting, "figure", figure)
    monkeypatch.setattr(plotting, "save", save)
    return calls


LABELS = ["cuda/raw_pinned/copy/streamed@cuda:0", "torch/pinned_into/copy@cuda:0"]


def test_plot_draws_every_series_to_runs_stem_png_and_says_so_on_stderr(drawn: SimpleNamespace, consoles: SimpleNamespace) -> None:
    """plot FILE: the figure of every series, no title, y scale auto, saved to runs/STEM.png; "saved PATH (N series)" on stderr."""
    r = invoke("plot", "a.json")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "", "saved runs/a.png (2 series)\n")
    assert drawn.figures == [(LABELS, None, "auto")] and drawn.saved == [("figure", Path("runs/a.png"))]
    assert printed(consoles.err) == [("saved runs/a.png (2 series)", QUIET)]


def test_plot_passes_its_selection_title_scale_and_out(drawn: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    """plot: every selection option into select, --title and --y-scale into the figure, --out as the path."""
    chosen: list[Selection] = []
    monkeypatch.setattr(cli, "select", lambda files, selection: chosen.append(selection) or select(files, None))
    Path("p.png").write_text("old")
    r = invoke("plot", "a.json", "-o", "p.png", "--overwrite", "--title", "T", "--y-scale", "log", "-f", "CUDA", "-m", "raw_pinned",
               "--op", "copy", "--device", "cuda:0", "--host-buffer", "pinned", "--timing", "streamed", "-d", "h2d")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert chosen == [Selection(("cuda",), ("raw_pinned",), ("copy",), ("cuda:0",), ("pinned",), ("streamed",), ("h2d",))]
    assert drawn.figures == [(LABELS, "T", "log")] and drawn.saved == [("figure", Path("p.png"))]
    r = invoke("plot", "a.json", "--out", "figs/", "--framework", "torch", "--mode", "pinned_into", "--direction", "h2d")
    assert r.exit_code == 0 and drawn.saved[-1] == ("figure", Path("figs/a.png"))
    assert chosen[-1] == Selection(frameworks=("torch",), modes=("pinned_into",), directions=("h2d",))


@pytest.mark.parametrize("args, message", [
    (["-o", "a.json"], "--out a.json is one of the result files; give the output another name"),
    (["-o", "taken.png"], "taken.png already exists; choose another --out, or add --overwrite to replace it"),
    (["-o", "block/p.png"], "cannot write the plot to block/p.png: block is a file, not a folder; choose another --out"),
    (["-f", "tf"], "nothing to show: no series matches the selection in a.json"),
])  # fmt: skip
def test_bad_plot_input_is_one_line_exit_2_before_drawing(drawn: SimpleNamespace, args: list[str], message: str) -> None:
    """plot: an --out that is an input, is taken or cannot be written, or an empty selection, refused before drawing."""
    Path("taken.png").write_text("old")
    Path("block").write_text("")
    r = invoke("plot", "a.json", *args)
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", f"error: {message}\n")
    assert drawn.figures == [] and Path("taken.png").read_text() == "old"


def test_plot_and_report_warn_of_empty_and_damaged_series(drawn: SimpleNamespace, monkeypatch: pytest.MonkeyPatch,
                                                          consoles: SimpleNamespace) -> None:  # fmt: skip
    """plot and report: a selected series with no point is a warning, as is each file's damaged points."""
    result = node("a")
    result.series.append(Series("torch", "pinned", "copy", "cuda:0", [256, 256, 3], status="failed", reason="broke [x]"))
    write(result, Path.cwd(), "a")
    data = json.loads(Path("a.json").read_text())
    data["series"][1]["points"][0]["times_s"][0] = -1.0
    Path("a.json").write_text(json.dumps(data))
    monkeypatch.setattr(reporting, "render", lambda *args, **kwargs: "")
    warned = ("warning: a.json: torch/pinned_into/copy@cuda:0 has no measured point (damaged in the file: a time in 'times_s' is"
              " not a positive number); left out of the curves\n"
              "warning: a.json: torch/pinned/copy@cuda:0 FAILED (broke [x]); left out of the curves\n"
              "warning: a.json: left out 1 damaged point(s): torch/pinned_into/copy@cuda:0 batch 512 (a time in 'times_s' is not"
              " a positive number)\n")  # fmt: skip
    r = invoke("plot", "a.json")
    assert (r.exit_code, r.stderr) == (0, warned + "saved runs/a.png (1 series)\n")
    r = invoke("report", "a.json")
    assert (r.exit_code, r.stderr) == (0, warned)
    assert {str(kwargs) for _, kwargs in printed(consoles.err)} == {str(QUIET)}


def test_a_plot_that_cannot_be_saved_is_one_line(drawn: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    """plot: save's one-line error, exit 2."""
    monkeypatch.setattr(plotting, "save", raising(XferbenchError("--out p.gif: use a .png, .svg or .pdf name")))
    r = invoke("plot", "a.json", "-o", "p.gif")
    assert (r.exit_code, r.stderr) == (2, "error: --out p.gif: use a .png, .svg or .pdf name\n")


@pytest.fixture
def reported(drawn: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """report with render and save replaced by recorders; the plot's figure and save too (drawn)."""
    calls = SimpleNamespace(rendered=[], saved=[], text="# report [x]\n")

    def render(picks: list[Any], empty: list[Any], **kwargs: Any) -> str:
        calls.rendered.append(([p.series.label() for p in picks], empty, kwargs))
        return calls.text

    def save(text: str, path: Path, *option: str) -> Path:
        calls.saved.append((text, path, *option))
        return path

    monkeypatch.setattr(reporting, "render", render)
    monkeypatch.setattr(reporting, "save", save)
    calls.drawn = drawn
    return calls


def test_report_prints_the_markdown_on_stdout_alone(reported: SimpleNamespace) -> None:
    """report FILE: render(picks, empty, no plot, no out, the selection, no title) written to stdout as it is."""
    r = invoke("report", "a.json")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "# report [x]\n", "")
    assert reported.rendered == [(LABELS, [], {"plot": None, "out": None, "selection": Selection(), "title": None})]
    assert reported.saved == [] and reported.drawn.figures == []


def test_report_writes_its_markdown_and_plot_where_told_and_says_to_attach_the_image(reported: SimpleNamespace,
                                                                                    consoles: SimpleNamespace) -> None:  # fmt: skip
    """report -o and --plot: the plot drawn with the title and scale and saved under --plot's name, the Markdown linking it,
    "wrote" and the reminder to attach the image on stderr."""
    r = invoke("report", "a.json", "--out", "r.md", "--plot", "p.png", "--title", "T", "--y-scale", "linear", "--mode", "RAW_PINNED",
               "--timing", "streamed")  # fmt: skip
    assert (r.exit_code, r.stdout) == (0, "")
    head = "wrote r.md\nthe report links p.png: attach that image to the "
    tail = " too (drag it into the comment box), as GitHub does not show local images\n"
    assert r.stderr.startswith(head) and r.stderr.endswith(tail) and r.stderr[len(head) : -len(tail)][::-1] == "eussi"
    assert reported.drawn.figures == [(LABELS[:1], "T", "linear")] and reported.drawn.saved == [("figure", Path("p.png"), "--plot")]
    assert reported.rendered == [(LABELS[:1], [], {"plot": Path("p.png"), "out": Path("r.md"), "title": "T",
                                                   "selection": Selection(modes=("raw_pinned",), methods=("streamed",))})]  # fmt: skip
    assert reported.saved == [("# report [x]\n", Path("r.md"))]
    assert [kwargs for _, kwargs in printed(consoles.err)] == [QUIET, QUIET]


def test_report_folders_get_the_stem_of_the_files(reported: SimpleNamespace) -> None:
    """report -o DIR/ --plot DIR/: STEM.md and STEM.png there, STEM from every file's name."""
    write(node("b"), Path.cwd(), "b")
    assert invoke("report", "a.json", "b.json", "-o", "md/", "--plot", "md/").exit_code == 0
    assert reported.saved[0][1] == Path("md/a-vs-b.md") and reported.drawn.saved[0][1] == Path("md/a-vs-b.png")


@pytest.mark.parametrize("args, message", [
    (["-o", "a.json"], "--out a.json is one of the result files; give the output another name"),
    (["--plot", "./a.json"], "--plot a.json is one of the result files; give the output another name"),
    (["-o", "taken.md"], "taken.md already exists; choose another --out, or add --overwrite to replace it"),
    (["--plot", "taken.png"], "taken.png already exists; choose another --plot, or add --overwrite to replace it"),
    (["-o", "link.md", "--overwrite"], "--out link.md is not a regular file (a link, device or pipe); xferbench writes only regular"
                                       " files: choose another --out"),
    (["--plot", "link.md"], "--plot link.md is not a regular file (a link, device or pipe); xferbench writes only regular files:"
                            " choose another --plot"),
    (["-o", "r.png", "--plot", "./r.png"], "--plot r.png is the same file as --out; give the plot a .png name"),
    (["-f", "tf"], "nothing to show: no series matches the selection in a.json"),
])  # fmt: skip
def test_bad_report_input_is_one_line_exit_2_before_writing(reported: SimpleNamespace, args: list[str], message: str) -> None:
    """report: an output that is an input, taken, a link, or the same for both, refused before anything is drawn or written."""
    Path("taken.md").write_text("old")
    Path("taken.png").write_text("old")
    Path("link.md").symlink_to("taken.md")
    r = invoke("report", "a.json", *args)
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", f"error: {message}\n")
    assert reported.rendered == [] and reported.drawn.figures == [] and Path("taken.md").read_text() == "old"


def test_report_overwrites_only_when_asked(reported: SimpleNamespace) -> None:
    """report --overwrite replaces a taken --out and --plot."""
    Path("taken.md").write_text("old")
    Path("taken.png").write_text("old")
    assert invoke("report", "a.json", "-o", "taken.md", "--plot", "taken.png", "--overwrite").exit_code == 0
    assert reported.saved[0][1] == Path("taken.md") and reported.drawn.saved[0][1] == Path("taken.png")


@pytest.mark.parametrize("where, said", [("figure", "nothing"), ("render", "p.png"), ("save", "p.png")])
def test_ctrl_c_in_report_says_what_it_wrote_and_exits_130(reported: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, where: str,
                                                          said: str) -> None:  # fmt: skip
    """report: Ctrl-C names the files written before it (the plot once saved), and exits 130."""
    monkeypatch.setattr(plotting if where == "figure" else reporting, where, raising(KeyboardInterrupt()))
    r = invoke("report", "a.json", "-o", "r.md", "--plot", "p.png")
    assert (r.exit_code, r.stderr) == (130, f"interrupted: wrote {said}; no file was left half written\n")


def test_ctrl_c_after_the_markdown_is_saved_names_both_files(reported: SimpleNamespace, consoles: SimpleNamespace,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """report: Ctrl-C as it says "wrote": the plot and the Markdown were both written."""
    say = consoles.err.print
    stops = [KeyboardInterrupt()]
    monkeypatch.setattr(consoles.err, "print", lambda *args, **kwargs: say(*args, **kwargs) if not stops else raising(stops.pop())())
    r = invoke("report", "a.json", "-o", "r.md", "--plot", "p.png")
    assert (r.exit_code, r.stderr) == (130, "interrupted: wrote p.png, r.md; no file was left half written\n")


def test_a_report_error_while_writing_is_one_line(reported: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    """report: save's one-line error, exit 2."""
    monkeypatch.setattr(reporting, "save", raising(XferbenchError("cannot write r.md: disk full")))
    r = invoke("report", "a.json", "-o", "r.md")
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", "error: cannot write r.md: disk full\n")


# compare --------------------------------------------------------------------------------------------------


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """compare with compare_files, to_dict and render replaced by recorders; `fails` is the comparison's answer."""
    calls = SimpleNamespace(files=[], asked=[], fails=False, dicts=[], renders=[], data={"rows": [1, "a"]})
    comparison = SimpleNamespace(fails=lambda fail_on: calls.asked.append(fail_on) or calls.fails)

    def compare_files(base: Path, new: Path, threshold: float, alpha: float) -> Any:
        calls.files.append((base, new, threshold, alpha))
        return comparison

    monkeypatch.setattr(comparing, "compare_files", compare_files)
    monkeypatch.setattr(comparing, "to_dict", lambda *args: calls.dicts.append(args) or calls.data)
    monkeypatch.setattr(comparing, "render", lambda *args: calls.renders.append(args) or "3 slower")
    calls.comparison = comparison
    return calls


def test_compare_tests_at_5_percent_and_alpha_001_and_prints_the_table(compared: SimpleNamespace) -> None:
    """compare BASE NEW: compare_files(BASE, NEW, 0.05, 0.01), its rendering on stdout, exit 0 unless slower."""
    r = invoke("compare", "b.json", "n.json")
    assert (r.exit_code, r.stdout, r.stderr) == (0, "3 slower\n", "")
    assert compared.files == [(Path("b.json"), Path("n.json"), 0.05, 0.01)]
    assert compared.renders == [(compared.comparison, Path("b.json"), Path("n.json"), "slower")] and compared.asked == ["slower"]


def test_compare_json_fail_on_threshold_and_alpha(compared: SimpleNamespace) -> None:
    """compare --json: to_dict as JSON indented by one; --fail-on change asks the comparison; exit 1 when it fails."""
    compared.fails = True
    r = invoke("compare", "b.json", "n.json", "--json", "--fail-on", "change", "--threshold", "10%", "--alpha", "0.05")
    assert (r.exit_code, r.stdout, r.stderr) == (1, '{\n "rows": [\n  1,\n  "a"\n ]\n}\n', "")
    assert compared.files == [(Path("b.json"), Path("n.json"), 0.1, 0.05)]
    assert compared.dicts == [(compared.comparison, Path("b.json"), Path("n.json"), "change")] and compared.asked == ["change"]
    assert compared.renders == []
    compared.data = {"p": math.nan}
    assert isinstance(invoke("compare", "b.json", "n.json", "--json").exception, ValueError)  # never NaN in JSON


@pytest.mark.parametrize("args, message", [
    (["--fail-on", "faster"], "--fail-on 'faster': give 'slower' (fail on slower points only) or 'change' (fail on any change)"),
    (["--threshold", "0.5"], "--threshold '0.5' is ambiguous: write 0.5% or 50%"),
    (["--alpha", "1"], "--alpha '1': give a probability between 0 and 1, such as 0.01 (a difference counts when the rank test's"
                       " p-value is below it)"),
])  # fmt: skip
def test_bad_compare_input_is_one_line_exit_2(compared: SimpleNamespace, args: list[str], message: str) -> None:
    """compare: an unknown --fail-on, a bad threshold or alpha, one line and exit 2, before any file is read."""
    r = invoke("compare", "b.json", "n.json", *args)
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", f"error: {message}\n") and compared.files == []


def test_a_file_compare_cannot_read_is_one_line(compared: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    """compare: compare_files' one-line error, exit 2."""
    monkeypatch.setattr(comparing, "compare_files", raising(XferbenchError("b.json: no such file")))
    r = invoke("compare", "b.json", "n.json")
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", "error: b.json: no such file\n")


# fleet ------------------------------------------------------------------------------------------------------


def fleet_row(host: str, flags: list[str], paths: dict[str, float | None] | None = None) -> fleets.Row:
    return fleets.Row(host, f"{host}.json", "cuda:0", "H100", "Gen5 x16", "Gen5 x16", 512, 55_000.0, "streamed", "2026", paths or {},
                      "pass" if not flags else "fail", flags)  # fmt: skip


@pytest.fixture
def fleet_read(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """fleet with read_fleet replaced by a recorder that gives `found`; the figure and its save too."""
    groups = {("H100", "Gen5 x16", "streamed"): (55_000.4, 1_234.4, 3), ("L40S [pcie]", "Gen4 x16", "per-call"): (20_000.0, 0.0, 2)}
    found = fleets.Fleet([fleet_row("n[a]", [], {"torch/pinned_into": 50_000.0}), fleet_row("n2", ["down-trained [x]"])], [], groups)
    calls = SimpleNamespace(read=[], found=found, figures=[], saved=[], written=[])

    def read_fleet(inputs: list[Path], k: float, share: float, min_group: int) -> fleets.Fleet:
        calls.read.append((inputs, k, share, min_group))
        return calls.found

    def save(fig: str, path: Path, *option: str) -> Path:
        calls.saved.append((fig, path, *option))
        return path

    def write_text(text: str, path: Path, *option: str) -> Path:
        calls.written.append((path, *option))
        path.write_text(text)
        return path

    monkeypatch.setattr(fleets, "read_fleet", read_fleet)
    monkeypatch.setattr(fleets, "figure", lambda found: calls.figures.append(found) or "figure")
    monkeypatch.setattr(plotting, "save", save)
    monkeypatch.setattr(reporting, "save", write_text)
    return calls


def test_fleet_reads_with_k_3_a_10_percent_drop_and_groups_of_3_and_flags_exit_1(fleet_read: SimpleNamespace,
                                                                                 consoles: SimpleNamespace) -> None:  # fmt: skip
    """fleet: read_fleet(inputs, 3.0, 0.1, 3); the table, flagged rows first in bold red, MB/s and batch right-aligned; each
    group's median and MAD, one too small said not judged; exit 1 for a flagged GPU."""
    r = invoke("fleet", "a", "b.json")
    assert (r.exit_code, r.stderr) == (1, "")
    assert fleet_read.read == [([Path("a"), Path("b.json")], 3.0, 0.1, 3)]
    (table, _), *lines = consoles.out.calls
    assert (table[0].title, table[0].title_justify) == ("xferbench fleet: 2 GPU(s), 1 flagged", "left")
    assert [(c.header, c.justify) for c in table[0].columns] == [
        ("host", "left"), ("GPU", "left"), ("link", "left"), ("batch", "right"), ("raw ceiling MB/s", "right"),
        ("torch/pinned_into MB/s", "right"), ("verdict", "left"), ("flags", "left")]  # fmt: skip
    assert [c._cells for c in table[0].columns[:1] + table[0].columns[-1:]] == [["n2", "n\\[a]"], ["down-trained \\[x]", "ok"]]
    assert [row.style for row in table[0].rows] == ["bold red", ""]
    assert printed(consoles.out)[1:] == [
        ("group H100, Gen5 x16, streamed: 3 GPU(s), median 55,000 MB/s, MAD 1,234", QUIET),
        ("group L40S \\[pcie], Gen4 x16, per-call: 2 GPU(s), median 20,000 MB/s, MAD 0 (fewer than 3: not judged)", QUIET)]  # fmt: skip
    assert "│ n[a] " in r.stdout and "down-trained [x]" in r.stdout


def test_fleet_options_reach_the_reading_and_every_output_is_written_and_said(fleet_read: SimpleNamespace,
                                                                              consoles: SimpleNamespace) -> None:  # fmt: skip
    """fleet --mad-k, --min-drop (0% allowed), --min-group; --markdown, --csv and --plot written, each said on stderr; a clean
    fleet exits 0."""
    fleet_read.found.rows = fleet_read.found.rows[:1]
    r = invoke("fleet", "a", "--mad-k", "0", "--min-drop", "0%", "--min-group", "2", "--markdown", "m.md", "--csv", "c.csv",
               "--plot", "f.png")  # fmt: skip
    assert (r.exit_code, r.stderr) == (0, "wrote m.md\nwrote c.csv\nwrote f.png\n")
    assert fleet_read.read == [([Path("a")], 0.0, 0.0, 2)]
    assert Path("m.md").read_bytes() == fleets.markdown(fleet_read.found).encode()
    assert Path("c.csv").read_bytes() == fleets.to_csv(fleet_read.found).encode()
    assert fleet_read.written == [(Path("m.md"), "--markdown"), (Path("c.csv"), "--csv")]
    assert fleet_read.figures == [fleet_read.found] and fleet_read.saved == [("figure", Path("f.png"), "--plot")]
    assert printed(consoles.out)[2] == ("group L40S \\[pcie], Gen4 x16, per-call: 2 GPU(s), median 20,000 MB/s, MAD 0", QUIET)
    assert "group L40S [pcie], Gen4 x16" in r.stdout
    assert printed(consoles.err) == [(f"wrote {name}", QUIET) for name in ("m.md", "c.csv", "f.png")]


def test_fleet_says_what_it_did_not_count_could_not_read_and_left_out(fleet_read: SimpleNamespace, consoles: SimpleNamespace) -> None:
    """fleet: superseded files dimmed on stdout; unreadable files and damaged points (one line per file) warned on stderr; an
    unreadable file alone exits 1."""
    fleet_read.found = fleets.Fleet([fleet_row("n1", [])], [("x[a].json", "not JSON [c]")], {}, superseded=[("old[a].json", "new[b].json")],
                                    damaged=[("a.json", "p1"), ("b.json", "q1"), ("a.json", "p2")])  # fmt: skip
    r = invoke("fleet", ".")
    assert r.exit_code == 1
    assert "not counted: old[a].json (the same host and GPU, newer in new[b].json)\n" in r.stdout
    assert r.stderr == ("warning: not read: x[a].json: not JSON [c]\nwarning: a.json: left out 2 damaged point(s): p1; p2\n"
                        "warning: b.json: left out 1 damaged point(s): q1\n")  # fmt: skip
    assert printed(consoles.out)[1:] == [("[dim]not counted: old\\[a].json (the same host and GPU, newer in new\\[b].json)[/]", QUIET)]
    assert printed(consoles.err)[0] == ("[yellow]warning: not read: x\\[a].json: not JSON \\[c][/]", QUIET)


@pytest.mark.parametrize("args, message", [
    (["--mad-k", "-0.5"], "--mad-k must be a finite number >= 0 and --min-group at least 2"),
    (["--mad-k", "inf"], "--mad-k must be a finite number >= 0 and --min-group at least 2"),
    (["--mad-k", "nan"], "--mad-k must be a finite number >= 0 and --min-group at least 2"),
    (["--min-group", "1"], "--mad-k must be a finite number >= 0 and --min-group at least 2"),
    (["--min-drop", "0.5"], "--min-drop '0.5' is ambiguous: write 50% or 0.5%"),
    (["--min-drop", "-1%"], "--min-drop '-1%': give a percentage from 0% and at most 100%, such as 80%"),
    (["--markdown", "in.json"], "--markdown in.json is one of the result files; give the output another name"),
    (["--csv", "in.json"], "--csv in.json is one of the result files; give the output another name"),
    (["--plot", "in.json"], "--plot in.json is one of the result files; give the output another name"),
])  # fmt: skip
def test_bad_fleet_input_is_one_line_exit_2(fleet_read: SimpleNamespace, args: list[str], message: str) -> None:
    """fleet: bad judging options before anything is read; an output that is an input before it is written."""
    r = invoke("fleet", "in.json", *args)
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", f"error: {message}\n")
    assert fleet_read.written == [] and fleet_read.saved == []
    assert (fleet_read.read == []) is (args[0] in ("--mad-k", "--min-group", "--min-drop"))


def test_fleet_reading_errors_and_ctrl_c_are_one_line(fleet_read: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    """fleet: read_fleet's error exits 2; Ctrl-C names what was written and exits 130."""
    monkeypatch.setattr(fleets, "read_fleet", raising(XferbenchError("no GPU figures in 1 file(s): a: not JSON")))
    r = invoke("fleet", "a")
    assert (r.exit_code, r.stderr) == (2, "error: no GPU figures in 1 file(s): a: not JSON\n")
    monkeypatch.setattr(fleets, "read_fleet", lambda *args: fleet_read.found)
    monkeypatch.setattr(plotting, "save", raising(KeyboardInterrupt()))
    r = invoke("fleet", "a", "--markdown", "m.md", "--csv", "c.csv", "--plot", "f.png")
    assert (r.exit_code, r.stdout, r.stderr) == (130, "", "interrupted: wrote m.md, c.csv; no file was left half written\n")


# validate ---------------------------------------------------------------------------------------------------


@pytest.fixture
def validating(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """validate on a machine with a CUDA GPU, with find_peers, Validation and run replaced by recorders."""
    calls = SimpleNamespace(peers=[], made=[], runs=[], checks=[Verdict("link", PASS, "ran [bold]Gen5[/bold]")],
                            missing={"bandwidthTest": "bandwidthTest is not on PATH: build [it]"}, echoed="step [one]: " + "y" * 200)
    monkeypatch.setattr(environment, "nvidia_gpu_present", lambda: True)
    monkeypatch.setattr(validate_command, "find_peers", lambda given: calls.peers.append(given) or ({"nvbandwidth": "/x/nvb"}, calls.missing))
    monkeypatch.setattr(validate_command, "Validation", lambda *args: calls.made.append(args) or SimpleNamespace(folder=Path("the folder")))

    def run(made: Any, echo: Any) -> tuple[list[Verdict], Path]:
        calls.runs.append((made, signal.getsignal(signal.SIGTERM)))
        echo(calls.echoed)
        return calls.checks, Path("v/verdict.md")

    monkeypatch.setattr(validate_command, "run", run)
    return calls


def test_validate_checks_cuda_0_into_a_host_time_folder_and_prints_the_checks(validating: SimpleNamespace,
                                                                             consoles: SimpleNamespace) -> None:  # fmt: skip
    """validate: Validation(runs/validate-HOST-TIME, cuda:0, no frameworks, not quick, the peers found, those missing, no limit);
    each missing peer a note, each progress line as said; the checks as Markdown, as written; exit 0 when all pass."""
    r = invoke("validate")
    assert r.exit_code == 0, r.output
    assert validating.peers == [()] and [kill for _, kill in validating.runs] == [running.terminate]
    assert validating.made == [(Path("runs") / f"validate-{HOST}-{STAMP}", "cuda:0", (), False, {"nvbandwidth": "/x/nvb"},
                                validating.missing, None)]  # fmt: skip
    assert r.stderr == f"note: bandwidthTest is not on PATH: build [it]\n{validating.echoed}\n"
    assert r.stdout == ("\n| check | result | figure |\n| --- | --- | --- |\n| link | **PASS** | ran [bold]Gen5[/bold] |\n\n"
                        "wrote v/verdict.md (attach the folder the folder to a bug report)\n")  # fmt: skip
    assert printed(consoles.err) == [("[yellow]note:[/] bandwidthTest is not on PATH: build \\[it]", QUIET),
                                     (validating.echoed.replace("[", "\\["), {"highlight": False, "soft_wrap": True})]  # fmt: skip
    assert [kwargs for _, kwargs in printed(consoles.out)] == [{}, {"highlight": False, "markup": False}, QUIET]


def test_validate_options_reach_the_validation(validating: SimpleNamespace) -> None:
    """validate FOLDER --device CUDA:2 -f ... --quick --peer ... --max-minutes: each in its place, frameworks split at commas,
    trimmed, lowercased and without repeats; a failed check exits 1."""
    validating.checks = [Verdict("link", FAIL, "slow")]
    r = invoke("validate", "here", "--device", " CUDA:2 ", "--framework", " TF", "-f", "torch,cuda", "-f", "tf", "--quick", "--peer", "nvb",
               "--peer", "bwt", "--max-minutes", "1440")  # fmt: skip
    assert r.exit_code == 1, r.output
    assert validating.peers == [["nvb", "bwt"]]
    assert validating.made == [(Path("here"), "cuda:2", ("tf", "torch", "cuda"), True, {"nvbandwidth": "/x/nvb"}, validating.missing,
                                1440.0)]  # fmt: skip
    validating.checks = [Verdict("link", PASS, "fast"), Verdict("note", INFO, "said")]
    assert invoke("validate", "--device", "cuda", "--max-minutes", "0.5").exit_code == 0
    assert invoke("validate", "--device", "cuda:").exit_code == 0
    assert [made[1] for made in validating.made[1:]] == ["cuda:0", "cuda:0"] and validating.made[1][-1] == 0.5


@pytest.mark.parametrize("args, message", [
    (["--device", "cpu"], "--device cpu: validate checks a CUDA GPU (cuda or cuda:N); `xferbench sweep` measures the others"),
    (["--device", "cuda:1x"], "--device cuda:1x: validate checks a CUDA GPU (cuda or cuda:N); `xferbench sweep` measures the others"),
    (["--device", "mps:0"], "--device mps:0: validate checks a CUDA GPU (cuda or cuda:N); `xferbench sweep` measures the others"),
    (["--device", "cuda:x"], "--device cuda:x: validate checks a CUDA GPU (cuda or cuda:N); `xferbench sweep` measures the others"),
    (["--max-minutes", "0"], "--max-minutes 0: give minutes above 0 and at most 1440 (validate prints its estimated duration before"
                             " it starts)"),
    (["--max-minutes", "1440.5"], "--max-minutes 1440.5: give minutes above 0 and at most 1440 (validate prints its estimated"
                                  " duration before it starts)"),
    (["--max-minutes", "nan"], "--max-minutes nan: give minutes above 0 and at most 1440 (validate prints its estimated duration"
                               " before it starts)"),
    (["--max-minutes", "inf"], "--max-minutes inf: give minutes above 0 and at most 1440 (validate prints its estimated duration"
                               " before it starts)"),
])  # fmt: skip
def test_bad_validate_input_is_one_line_exit_2(validating: SimpleNamespace, args: list[str], message: str) -> None:
    """validate: a device that is no CUDA GPU, a time limit out of range: one line, exit 2, nothing run."""
    r = invoke("validate", *args)
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", f"error: {message}\n") and validating.made == []


def test_validate_without_an_nvidia_gpu_or_with_a_bad_peer_runs_nothing(validating: SimpleNamespace,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """validate: no CUDA GPU here, or find_peers' error, is one line and exit 2."""
    monkeypatch.setattr(validate_command, "find_peers", raising(XferbenchError("--peer x: no executable file there")))
    assert invoke("validate").stderr == "error: --peer x: no executable file there\n"
    monkeypatch.setattr(environment, "nvidia_gpu_present", lambda: False)
    r = invoke("validate")
    assert (r.exit_code, r.stdout) == (2, "") and validating.made == []
    assert r.stderr == ("error: nothing to validate: no NVIDIA GPU here (no driver entry in /proc/driver/nvidia/gpus, and NVML sees"
                        " none); validate checks a CUDA GPU's link, and `xferbench sweep` runs on this machine as it is\n")  # fmt: skip


@pytest.mark.parametrize("error, code, said", [
    (KeyboardInterrupt(), 130, "error: interrupted: what was measured is in here, without a verdict\n"),
    (Terminated(), 143, "error: terminated: what was measured is in here, without a verdict\n"),
    (XferbenchError("here holds a validation already"), 2, "error: here holds a validation already\n"),
])  # fmt: skip
def test_a_stopped_validation_says_where_its_sweeps_are(validating: SimpleNamespace, monkeypatch: pytest.MonkeyPatch,
                                                       error: BaseException, code: int, said: str) -> None:  # fmt: skip
    """validate: Ctrl-C 130 and a kill 143, naming the folder; run's own error exit 2."""
    monkeypatch.setattr(validate_command, "run", raising(error))
    r = invoke("validate", "here")
    assert (r.exit_code, r.stdout, r.stderr) == (code, "", "note: bandwidthTest is not on PATH: build [it]\n" + said)


# import -----------------------------------------------------------------------------------------------------


def peer_result(host: str | None) -> Result:
    """An imported run: two measured series sharing a note on the buffer size, two failed ones, and the peer's own words."""
    measured = series("nvbandwidth", "host_to_device_memcpy_ce", 50.0)
    measured.note = "nvbandwidth's JSON names no buffer size: 512 MiB assumed; read over PCIe"
    other = dataclasses.replace(measured, mode="device_to_host_memcpy_ce")
    failed = Series("nvbandwidth", "host_to_device_memcpy_sm", "copy", "cuda:0", [1], status="failed", reason="CUDA error: out of memory")
    waived = dataclasses.replace(failed, mode="device_to_host_memcpy_sm", reason="waived: no SM copy")
    peer = {"errors": ["CUDA error: out of memory", "cuda:1 [vanished]", "cuda:1 [vanished]"], "warnings": ["clock throttled"] * 2,
            "not_imported": ["device_to_device_memcpy_read_ce"]}  # fmt: skip
    return Result({"peer": peer, **({"host": host} if host else {})}, {}, "2026", [measured, other, failed, waived], "complete")


@pytest.fixture
def imported(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """The peers' readers replaced by recorders that give `result`."""
    calls = SimpleNamespace(read=[], result=peer_result("gpu node/1"))
    monkeypatch.setattr(peers, "read_nvbandwidth", lambda *args: calls.read.append(args) or calls.result)
    monkeypatch.setattr(peers, "read_bandwidthtest", lambda *args, **kwargs: calls.read.append((args, kwargs)) or calls.result)
    return calls


def test_importing_nvbandwidth_saves_under_its_host_and_says_what_it_holds(imported: SimpleNamespace, consoles: SimpleNamespace) -> None:
    """import nvbandwidth: read with no buffer size and 256x256x3 items, saved as runs/HOST-nvbandwidth-TIME.json (the file's
    host, made safe); its series, points, notes, failures, errors, warnings and what was not imported said once each."""
    r = invoke("import", "nvbandwidth", "nv.json")
    assert r.exit_code == 0, r.output
    assert imported.read == [([Path("nv.json")], None, (256, 256, 3))]
    saved = Path("runs") / f"gpu-node-1-nvbandwidth-{STAMP}.json"
    assert r.stdout == f"saved {saved}: 2 series, 2 points from nvbandwidth\n"
    assert r.stderr == ("note: nvbandwidth's JSON names no buffer size: 512 MiB assumed; if the run gave -b, import it again with"
                        " --buffer-size\n"
                        "failed: nvbandwidth/host_to_device_memcpy_sm/copy@cuda:0: CUDA error: out of memory\n"
                        "failed: nvbandwidth/device_to_host_memcpy_sm/copy@cuda:0: waived: no SM copy\n"
                        "error: cuda:1 [vanished]\nnvbandwidth warned: clock throttled\nnot imported: device_to_device_memcpy_read_ce\n")
    assert load(saved).environment["host"] == "gpu node/1"
    assert {str(kwargs) for _, kwargs in printed(consoles.out) + printed(consoles.err)} == {str(QUIET)}


def test_importing_takes_the_host_buffer_size_shape_and_out_given(imported: SimpleNamespace) -> None:
    """import nvbandwidth --host -b --shape -o: the host written into the file and its name; -b and the shape to the reader;
    a folder's name taken already is numbered."""
    r = invoke("import", "nvbandwidth", "a.json", "b.json", "--host", "my host", "--buffer-size", "64", "--shape", "8x8", "--out", "out/")
    assert r.exit_code == 0, r.output
    r = invoke("import", "nvbandwidth", "a.json", "-b", "32", "-o", "out/", "--host", "my host")  # the same name again
    assert r.exit_code == 0, r.output
    assert imported.read == [([Path("a.json"), Path("b.json")], 64, (8, 8)), ([Path("a.json")], 32, (256, 256, 3))]
    assert load(Path("out") / f"my-host-nvbandwidth-{STAMP}.json").environment["host"] == "my host"
    assert load(Path("out") / f"my-host-nvbandwidth-{STAMP}-2.json").environment["host"] == "my host"  # taken: numbered


def test_importing_bandwidthtest_names_an_unknown_host_where_the_output_names_none(imported: SimpleNamespace) -> None:
    """import bandwidthtest: read with the shape and --mb; no host in the output and no --host: "unknown-host", not this
    machine's name (the file holds no host, and the output may come from any machine)."""
    imported.result = peer_result(None)
    r = invoke("import", "bandwidthtest", "bw.txt", "--mb", "1024000", "--shape", "4")
    assert r.exit_code == 0, r.output
    assert imported.read == [(([Path("bw.txt")], (4,)), {"mb": 1024000})]
    assert r.stdout == f"saved runs/unknown-host-bandwidthtest-{STAMP}.json: 2 series, 2 points from bandwidthTest\n"
    assert "bandwidthTest warned: clock throttled\n" in r.stderr
    imported.result = Result({}, {}, "2026", [series("bandwidthTest", "h2d_pinned", 4.2)], "complete")  # no words of the tool's own
    r = invoke("import", "bandwidthtest", "bw.txt")
    assert (r.exit_code, r.stderr) == (0, "") and imported.read[-1] == (([Path("bw.txt")], (256, 256, 3)), {"mb": None})
    assert r.stdout == f"saved runs/unknown-host-bandwidthtest-{STAMP}-2.json: 1 series, 1 points from bandwidthTest\n"
    assert load(Path("runs") / f"unknown-host-bandwidthtest-{STAMP}-2.json").environment.get("host") is None


def test_an_import_saves_over_an_existing_file_only_when_asked(imported: SimpleNamespace) -> None:
    """import -o FILE: refused when it exists, replaced with --overwrite, and never one of the tool's own files."""
    Path("r.json").write_text("{}")
    r = invoke("import", "nvbandwidth", "nv.json", "-o", "r.json")
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr == "error: r.json already exists; choose another --out, or add --overwrite to replace it\n"
    assert invoke("import", "bandwidthtest", "bw.txt", "-o", "r.json", "--overwrite").exit_code == 0
    assert load("r.json").environment["host"] == "gpu node/1"
    r = invoke("import", "nvbandwidth", "nv.json", "-o", "nv.json")
    assert (r.exit_code, r.stderr) == (2, "error: --out nv.json is one of the result files; give the output another name\n")


def test_an_output_the_reader_cannot_read_is_one_line(imported: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    """import: the reader's one-line error (and a bad --shape) exit 2 with nothing saved."""
    monkeypatch.setattr(peers, "read_nvbandwidth", raising(XferbenchError("nv.json: not nvbandwidth's output")))
    r = invoke("import", "nvbandwidth", "nv.json")
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", "error: nv.json: not nvbandwidth's output\n")
    r = invoke("import", "bandwidthtest", "bw.txt", "--shape", "0")
    assert (r.exit_code, r.stderr) == (2, "error: --shape '0': give positive integers joined by 'x', e.g. 256x256x3\n")
    assert not Path("runs").exists()


# env and paths ----------------------------------------------------------------------------------------------


class FakeRunner:
    def __init__(self, devices: list[str]) -> None:
        self.listed, self.closed = devices, 0

    def environment(self) -> dict[str, Any]:
        return {"devices": self.listed}

    def devices(self) -> list[str]:
        return self.listed

    def close(self) -> None:
        self.closed += 1


@pytest.fixture
def frameworks(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """Every framework but cuda installed; start_runners replaced by a recorder that starts torch and jax and says tf failed."""
    calls = SimpleNamespace(started=[], runners={"torch": FakeRunner(["cpu", "cuda:0"]), "jax": FakeRunner(["cpu", "cuda:1"])},
                            kinds=[], captured=[])  # fmt: skip
    for name, backend in BACKENDS.items():
        monkeypatch.setattr(backend, "missing", (lambda: "absent") if name == "cuda" else (lambda: None))

    def start_runners(backends: list[Any], failed: dict[str, str]) -> dict[str, FakeRunner]:
        calls.started.append(([b.name for b in backends], failed))
        failed["tf"] = "the tf worker [died]"
        return calls.runners

    monkeypatch.setattr(cli, "start_runners", start_runners)
    monkeypatch.setattr(environment, "accelerator_kinds", lambda: calls.kinds)
    monkeypatch.setattr(environment, "capture", lambda views: calls.captured.append(views) or {"views": dict(views)})
    return calls


INSTALLED = ["hip", "torch", "tf", "jax", "cupy", "host", "sim"]


def test_env_without_a_gpu_starts_no_framework_and_prints_the_capture_as_json(frameworks: SimpleNamespace) -> None:
    """env with no GPU: environment.capture({}) as JSON indented by two, nothing started."""
    r = invoke("env")
    assert (r.exit_code, r.stdout, r.stderr) == (0, '{\n  "views": {}\n}\n', "")
    assert frameworks.started == [] and frameworks.captured == [{}]


@pytest.mark.parametrize("args, kinds", [(["--all"], []), ([], ["cuda"]), ([], ["mps"])])
def test_env_with_a_gpu_or_all_describes_each_framework_that_started_and_those_that_failed(frameworks: SimpleNamespace, args: list[str],
                                                                                          kinds: list[str]) -> None:  # fmt: skip
    """env --all, or any GPU here: every installed framework started, each one's view captured, the failed ones named; closed after."""
    frameworks.kinds = kinds
    r = invoke("env", *args)
    assert r.exit_code == 0, r.output
    assert [names for names, _ in frameworks.started] == [INSTALLED]
    assert json.loads(r.stdout) == {"views": {"torch": {"devices": ["cpu", "cuda:0"]}, "jax": {"devices": ["cpu", "cuda:1"]}},
                                    "frameworks_failed": {"tf": "the tf worker [died]"}}  # fmt: skip
    assert [runner.closed for runner in frameworks.runners.values()] == [1, 1]


def test_frameworks_that_cannot_start_are_one_line_and_every_runner_is_closed(frameworks: SimpleNamespace, monkeypatch: pytest.MonkeyPatch,
                                                                             capsys: Any, consoles: SimpleNamespace) -> None:  # fmt: skip
    """installed_frameworks: a failure dict of its own where none is given; start_runners' error exit 2; runners closed on error too."""
    with cli.installed_frameworks() as runners:
        assert runners is frameworks.runners
    ((_, failed),) = frameworks.started
    assert failed == {"tf": "the tf worker [died]"}
    given: dict[str, str] = {}
    with pytest.raises(RuntimeError), cli.installed_frameworks(given):
        raise RuntimeError("while describing")
    assert frameworks.started[-1][1] is given and [runner.closed for runner in frameworks.runners.values()] == [2, 2]
    monkeypatch.setattr(cli, "start_runners", raising(XferbenchError("the torch worker process exited with status 1")))
    with pytest.raises(typer.Exit) as stop, cli.installed_frameworks():
        pass
    assert stop.value.exit_code == 2 and capsys.readouterr().err == "error: the torch worker process exited with status 1\n"
    r = invoke("env", "--all")
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", "error: the torch worker process exited with status 1\n")


ROWS = [PathAvailability("torch", "pinned", ("copy", "seed"), "cpu", "pinned [memory] needs a CUDA device"),
        PathAvailability("torch", "pageable", ("copy",), "cuda", "torch sees no cuda device here"),
        PathAvailability("sim", "link", ("copy",), "sim", None),
        PathAvailability("host", "numpy", ("copy",), "cpu", None),
        PathAvailability("tf", "eager", ("copy",), "mps", "no mps device present")]  # fmt: skip


@pytest.fixture
def path_rows(frameworks: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """paths with path_availability, auto_device and sweep_flags replaced by recorders."""
    calls = SimpleNamespace(asked=[], autos=[], flags=[])
    monkeypatch.setattr(cli, "path_availability", lambda devices, failed: calls.asked.append((devices, dict(failed))) or ROWS)

    def auto_device(present: list[str]) -> str:
        calls.autos.append(present)
        return "cuda:0" if "cuda:0" in present else "cpu"

    def sweep_flags(backend: Any, mode: str, device: str, auto: str) -> str | None:
        calls.flags.append((backend.name, mode, device, auto))
        return "-f sim" if backend.name == "sim" else None

    monkeypatch.setattr(cli, "auto_device", auto_device)
    monkeypatch.setattr(cli, "sweep_flags", sweep_flags)
    calls.frameworks = frameworks
    return calls


def cells(table: Any) -> list[list[str]]:
    return [list(row) for row in zip(*(column._cells for column in table.columns))]


def test_paths_without_a_gpu_lists_this_machines_devices_from_the_backends_alone(path_rows: SimpleNamespace,
                                                                                consoles: SimpleNamespace) -> None:  # fmt: skip
    """paths with no GPU: no framework started; each installed one reaches its fixed device, nothing if CUDA-only, else the CPU;
    rows of devices this machine lacks hidden, and said so."""
    r = invoke("paths")
    assert (r.exit_code, r.stderr) == (0, "")
    assert path_rows.frameworks.started == []
    assert path_rows.asked == [({"hip": [], "torch": ["cpu"], "tf": ["cpu"], "jax": ["cpu"], "cupy": [], "host": ["cpu"], "sim": ["sim"]}, {})]
    assert path_rows.autos == [["cpu", "cpu", "cpu", "cpu"]]
    assert path_rows.flags == [("torch", "pinned", "cpu", "cpu"), ("sim", "link", "sim", "cpu"), ("host", "numpy", "cpu", "cpu")]
    (table, _), *_ = consoles.out.calls
    assert [c.header for c in table[0].columns] == ["framework", "mode", "ops", "device", "default sweep", "status"]
    assert cells(table[0]) == [["torch", "pinned", "copy, seed", "cpu", "skipped",
                                "[red]unavailable[/]: pinned \\[memory] needs a CUDA device"],
                               ["sim", "link", "copy", "sim", "-f sim", "[green]available[/]"],
                               ["host", "numpy", "copy", "cpu", "yes", "[green]available[/]"]]  # fmt: skip
    assert printed(consoles.out)[1:] == [
        ("default sweep: yes, a sweep without --framework, --mode and --device (cpu here) runs the path; skipped, it plans the path and"
         " says why it cannot run; else the options that run it.", QUIET),
        ("[dim]2 paths on devices this machine lacks (cuda, mps) are not shown; --all lists them[/]", QUIET)]  # fmt: skip
    assert "unavailable: pinned [memory] needs a CUDA device" in r.stdout


@pytest.mark.parametrize("args, kinds, shown", [(["--all"], [], 5), ([], ["cuda"], 4)])
def test_paths_with_a_gpu_or_all_asks_each_framework_and_shows_its_devices(path_rows: SimpleNamespace, consoles: SimpleNamespace,
                                                                          args: list[str], kinds: list[str], shown: int) -> None:  # fmt: skip
    """paths --all, or with a GPU: the devices each started framework reaches, those that failed; --all shows every row and hides none."""
    path_rows.frameworks.kinds = kinds
    r = invoke("paths", *args)
    assert r.exit_code == 0, r.output
    assert path_rows.asked == [({"torch": ["cpu", "cuda:0"], "jax": ["cpu", "cuda:1"]}, {"tf": "the tf worker [died]"})]
    assert path_rows.autos == [["cpu", "cpu", "cuda:0", "cpu", "cuda:1"]]
    (table, _), *lines = consoles.out.calls
    assert len(table[0].rows) == shown and {flags[-1] for flags in path_rows.flags} == {"cuda:0"}
    assert "(cuda:0 here)" in printed(consoles.out)[1][0]
    assert len(lines) == (2 if kinds else 1)  # the GPU's kind shown: only mps is hidden, and --all hides nothing
    if kinds:
        assert printed(consoles.out)[2][0] == "[dim]1 paths on devices this machine lacks (mps) are not shown; --all lists them[/]"


def test_the_sweep_help_names_the_frameworks_and_the_default_batch_sizes() -> None:
    """sweep's --framework help lists every framework and those a default sweep leaves out; --batch-sizes shows its default spaced."""
    params = {p.name: p for p in typer.main.get_command(cli.app).commands["sweep"].params}  # type: ignore[attr-defined]
    assert params["framework"].help == ("Repeatable or comma-separated: cuda, hip, torch, tf, jax, cupy, host, sim. Default: every installed"
                                        " one except sim.")  # fmt: skip
    assert (params["batch_sizes"].default, params["batch_sizes"].show_default) == ("1,2,4,8,16,32,64,128,256,512",
                                                                                  "1, 2, 4, 8, 16, 32, 64, 128, 256, 512")  # fmt: skip


def flat(text: str) -> str:
    """Help as running words: box borders gone, every run of whitespace one space."""
    return " ".join(text.translate({ord(c): " " for c in "│╭╮╰╯─"}).split())


def test_the_app_and_import_show_their_help_when_given_nothing_and_take_h_for_help() -> None:
    """xferbench and xferbench import: no arguments is their help (exit 2), -h and --help too (exit 0); no completion options."""
    for args, words in (((), "Host-to-device transfer throughput, swept over batch sizes, through each framework's real path."),
                        (("import",), "Turn a peer tool's own output into an xferbench result file, for report, plot and fleet to read"
                                      " beside xferbench's own.")):  # fmt: skip
        bare, short, long = invoke(*args), invoke(*args, "-h"), invoke(*args, "--help")
        assert (bare.exit_code, short.exit_code, long.exit_code) == (2, 0, 0)
        assert words in flat(bare.stdout) and flat(short.stdout) == flat(long.stdout) == flat(bare.stdout)
    assert "Try 'root sweep -h' for help." in invoke("sweep", "--no-such").stderr
    for option in ("--install-completion", "--show-completion"):
        assert f"No such option: {option}" in flat(invoke(option).stderr)


@pytest.mark.parametrize(("args", "said"), [
    (("sweep", "--staging-chunk-kib", "abc"), "error: Invalid value for '--staging-chunk-kib': "),
    (("sweep", "--max-samples", "abc"), "error: Invalid value for '--max-samples': "),
    (("check", "--batch-size", "x1"), "error: Invalid value for '--batch-size': "),
    (("import", "nvbandwidth", "-b", "abc", "x.json"), "error: Invalid value for '--buffer-size' / '-b': "),
    (("report",), "error: Missing argument 'files'. Try 'root report -h' for help."),
])  # fmt: skip
def test_a_value_click_refuses_is_one_line_error_on_every_command(args: tuple[str, ...], said: str) -> None:
    """Not Typer's boxed usage: one `error:` line saying what and where to look, exit 2, no traceback, whichever command."""
    r = invoke(*args)
    assert r.exit_code == 2 and r.stdout == "" and "Traceback" not in r.stderr
    (line,) = r.stderr.splitlines()
    assert line.startswith(said) and line.endswith(f"Try 'root {' '.join(a for a in args if a in ('sweep', 'check', 'import', 'nvbandwidth', 'report'))} -h' for help.")
    assert "Usage:" not in r.stderr and "╭" not in r.stderr
