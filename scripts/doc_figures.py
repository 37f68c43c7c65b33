#!/usr/bin/env python3
"""Every figure the README and docs quote from a committed result file, made again from that file.

Why: a figure copied by hand drifts from its file (a later run's number under an earlier run's name,
a range that leaves out a point). Here each one is derived from the files, so a reader can check it
and a test fails when a document and its files disagree.

The figures are described in docs/figures/*.toml, one file per document:

- a **block** is a table (or any text) between `<!-- figures: NAME -->` and `<!-- /figures -->` in the
  document, written whole from its template; `doc_figures.py` rewrites it;
- a **claim** is a figure quoted in prose: `quote` is the text as the document has it, `template` the
  same text with each figure derived from the files. A claim is never rewritten: when the files give
  another figure the sentence around it may need other words, so the check names the line instead.

A template is a Python f-string body: text with {expression} or {expression:format} fields. Its names:
each entry of the TOML's `[files]` table (a result file as a Run: `run.mbps(label, batch)`, `run.faults`,
`run.ratio`, `run.point`, `run.batches`, `run.get(*path)`; a text file as its text), the formatters
`n`, `x`, `pct`, `gb`, `span`, `either`, and `grab` (a regular expression on a text), `median`, `at`
(MB/s at a size in bytes), `nvml_excess`, `at_max_link`, `printed` (a series as a sweep prints it), the
constants `MiB` and `GiB`, and a few builtins (`min`, `max`, `sum`, `all`, `any`, `len`, `sorted`, ...).

Run:
  .venv/bin/python scripts/doc_figures.py           change nothing; list each block and claim that differs
  .venv/bin/python scripts/doc_figures.py --write   rewrite every block from its files, then check
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import statistics
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the same parser, from the dev extra
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
SPECS = "docs/figures"
BEGIN = re.compile(r"<!-- figures: ([\w.-]+) -->\n")
END = "<!-- /figures -->"


class FigureError(Exception):
    """A template that asks for a figure its file does not hold."""


# Formatting: each returns the text a document shows.


def n(value: float, digits: int = 0) -> str:
    """A number with thousands separators: n(55508.3) is '55,508'."""
    return f"{value:,.{digits}f}"


def x(value: float, digits: int = 2) -> str:
    """A ratio: x(0.2383) is '0.24×'."""
    return f"{value:.{digits}f}×"


def pct(value: float, digits: int = 0, sign: bool = False) -> str:
    """A share: pct(0.994) is '99%'; with sign, pct(0.101, 1, True) is '+10.1%'."""
    return f"{value * 100:{'+' if sign else ''}.{digits}f}%"


def gb(mbps: float, digits: int = 1) -> str:
    """MB/s as GB/s: gb(55508) is '55.5'."""
    return f"{mbps / 1000:.{digits}f}"


def span(values: Iterable[float], show: Callable[[float], str] = n, dash: str = "–") -> str:
    """The lowest and highest of several figures, each as `show` writes it: '0.08–0.17×'. One value, or
    two that read alike, give one figure. A unit that `show` appends is written once, at the end."""
    ordered = sorted(values)
    if not ordered:
        raise FigureError("span() of no figures")
    low, high = show(ordered[0]), show(ordered[-1])
    if low == high:
        return low
    unit = re.search(r"[^\d.,]*$", low).group(0)  # type: ignore[union-attr]
    return (low[: len(low) - len(unit)] if unit and high.endswith(unit) else low) + dash + high


def either(values: Iterable[float], show: Callable[[float], str] = n) -> str:
    """The distinct figures among several, as `show` writes them, lowest first: '33 or 544'."""
    return " or ".join(dict.fromkeys(show(v) for v in sorted(values)))


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


class Run:
    """One result file: its JSON as written, each series named as xferbench names it."""

    def __init__(self, path: Path, name: str) -> None:
        from xferbench.core.results import Result

        self.path, self.name = path, name
        self.data = json.loads(path.read_text(encoding="utf-8"))
        self.result = Result.from_dict(self.data)  # as xferbench reads the file, for the helpers that use its code
        self.labels = [s.label() for s in self.result.series]  # as xferbench names each series

    def series(self, label: str) -> dict[str, Any]:
        """The series xferbench labels `label` ('framework/mode/op[/direction][/streamed][/N-at-once][+buffer]@device');
        the device may be left out where only one series has the rest."""
        found = [s for s, name in zip(self.data["series"], self.labels) if label in (name, name.split("@")[0])]
        if len(found) != 1:
            have = ", ".join(self.labels[:8]) + (f" and {len(self.labels) - 8} more" if len(self.labels) > 8 else "")
            raise FigureError(f"{self.name}: {len(found)} series match {label!r} (the file has: {have})")
        return found[0]

    def parsed(self, label: str) -> Any:
        """The same series as xferbench's own Series, for the helpers that run xferbench's arithmetic on it."""
        return self.result.series[self.data["series"].index(self.series(label))]

    def point(self, label: str, batch: int) -> dict[str, Any]:
        points = [p for p in self.series(label)["points"] if p["batch_size"] == batch]
        if len(points) != 1 or points[0].get("status") != "ok":
            raise FigureError(f"{self.name}: {label} has no measured point at batch {batch}")
        return points[0]

    def batches(self, label: str) -> list[int]:
        return [p["batch_size"] for p in self.series(label)["points"] if p.get("status") == "ok"]

    def mbps(self, label: str, batch: int) -> float:
        return float(self.point(label, batch)["mbps"])

    def faults(self, label: str, batch: int) -> float:
        value = self.point(label, batch).get("page_faults_per_call")
        if value is None:
            raise FigureError(f"{self.name}: {label} at batch {batch} has no page-fault count")
        return float(value)

    def ratio(self, label: str, batch: int, of: str, of_batch: int | None = None) -> float:
        """One series' MB/s over another's (or the same one's at another batch)."""
        return self.mbps(label, batch) / self.mbps(of, batch if of_batch is None else of_batch)

    def get(self, *keys: str | int) -> Any:
        """A value by its path in the file: run.get('environment', 'os')."""
        value: Any = self.data
        for key in keys:
            try:
                value = value[key]
            except (KeyError, IndexError, TypeError) as error:
                raise FigureError(f"{self.name}: no {'.'.join(map(str, keys))}") from error
        return value


def at(label: str, nbytes: int, *runs: Run) -> float:
    """MB/s of `label` at a copy of exactly `nbytes`, from the first of `runs` that measured it: a
    validation's 96 MiB is the default sweep's batch 512, its 1 GiB the large sweep's batch 1024."""
    for run in runs:
        for point in run.series(label)["points"]:
            if point["bytes"] == nbytes and point.get("status") == "ok":
                return float(point["mbps"])
    raise FigureError(f"{label}: no point of {nbytes:,} bytes in {', '.join(r.name for r in runs)}")


def nvml_excess(run: Run, label: str) -> float:
    """How many more bytes NVML saw the GPU receive than the series says it moved (0.09 for 9% more),
    by xferbench's own arithmetic (xferbench.core.telemetry), so a change to it shows here too."""
    from xferbench.core import telemetry

    series = run.parsed(label)
    received, _ = telemetry.received_bytes(series.link or {})
    claimed = telemetry.claimed_bytes(series)
    if received is None or not claimed:
        raise FigureError(f"{run.name}: {label} has no NVML byte count or no claimed bytes")
    return received / claimed - 1


def printed(run: Run, label: str, width: int = 80) -> str:
    """One series as a sweep prints it on a terminal `width` columns wide (its table, summary and notes),
    by xferbench's own display code, so the README shows what the tool prints today for that file."""
    import io

    from rich.console import Console

    from xferbench.reading import display

    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False, soft_wrap=False)
    display.print_series(console, run.parsed(label), run.result)
    return "\n".join(line.rstrip() for line in console.file.getvalue().rstrip("\n").splitlines())  # type: ignore[attr-defined]


def at_max_link(*runs: Run) -> tuple[int, int]:
    """How many CUDA series read their link under load, and how many of those at its maximum."""
    read = at_max = 0
    for run in runs:
        for series in run.data["series"]:
            summary = ((series.get("link") or {}).get("summary") or {})
            gen, width, link = summary.get("gen_under_load"), summary.get("width_under_load"), series.get("link") or {}
            if series["device"].startswith("cuda") and gen and width:
                read += 1
                at_max += gen == [link.get("pcie_gen_max")] * 2 and width == [link.get("pcie_width_max")] * 2
    return read, at_max


def grab(text: str, pattern: str, group: int = 1) -> str:
    """The first match of a regular expression in a text file's contents."""
    found = re.search(pattern, text, re.MULTILINE)
    if not found:
        raise FigureError(f"no match for {pattern!r}")
    return found.group(group)


def grab_all(text: str, pattern: str, group: int = 1) -> list[str]:
    """Every match of a regular expression in a text file's contents (a column of a printed table)."""
    found = [match.group(group) for match in re.finditer(pattern, text, re.MULTILINE)]
    if not found:
        raise FigureError(f"no match for {pattern!r}")
    return found


HELPERS: dict[str, Any] = {"n": n, "x": x, "pct": pct, "gb": gb, "span": span, "either": either, "grab": grab, "grab_all": grab_all,
                           "median": median, "at": at,
                           "nvml_excess": nvml_excess, "at_max_link": at_max_link, "printed": printed, "MiB": 2**20, "GiB": 2**30,
                           "min": min, "max": max, "abs": abs, "round": round, "len": len, "sorted": sorted,
                           "all": all, "any": any, "sum": sum, "set": set, "enumerate": enumerate, "zip": zip, "str": str,
                           "int": int, "float": float}  # fmt: skip


def fields(template: str) -> list[tuple[int, int, str, str]]:
    """Each {expression} or {expression:format} of a template, as f-strings write them, with where it
    starts and ends. Braces inside the expression's strings, brackets and calls do not end it; {{ and }}
    are literal braces. Read here rather than by eval of an f-string, so expressions may hold backslashes
    and either quote."""
    found, i = [], 0
    while i < len(template):
        char = template[i]
        if char in "{}" and template[i : i + 2] in ("{{", "}}"):
            i += 2
            continue
        if char != "{":
            i += 1
            continue
        depth, quote, j, colon = 0, "", i + 1, -1
        while j < len(template):
            c = template[j]
            if quote:
                if c == "\\":
                    j += 1
                elif c == quote:
                    quote = ""
            elif c in "'\"":
                quote = c
            elif c in "([{":
                depth += 1
            elif c in ")]}" and depth:
                depth -= 1
            elif c == ":" and depth == 0 and colon < 0:
                colon = j
            elif c == "}":
                break
            j += 1
        else:
            raise FigureError(f"an unclosed {{ in a template at {template[i:i + 40]!r}")
        body = template[i + 1 : j]
        expression, form = (body, "") if colon < 0 else (template[i + 1 : colon], template[colon + 1 : j])
        found.append((i, j + 1, expression.strip(), form))
        i = j + 1
    return found


@dataclass
class Problem:
    """A block or claim that the files no longer give as the document has it."""

    doc: str
    line: int
    what: str
    structural: bool = False  # the document's markers are wrong: nothing of it may be written

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.what}"


@dataclass
class Spec:
    """One docs/figures/*.toml: its document, the files it names, its blocks and claims."""

    path: Path
    doc: str
    names: dict[str, Any]
    blocks: dict[str, str]
    claims: list[dict[str, str]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # files named in the spec that could not be read


class Figures:
    """The documents and their files under `root`; `replaced` maps a file's repository path to another file
    to read in its place (a test's changed copy)."""

    def __init__(self, root: Path = ROOT, replaced: dict[str, Path] | None = None) -> None:
        self.root, self.replaced = root, dict(replaced or {})

    def _file(self, relative: str, name: str) -> Any:
        path = self.replaced.get(relative) or self.root / relative
        if not path.is_file():
            raise FigureError(f"{name} = {relative}: no such file")
        return Run(path, relative) if path.suffix == ".json" else path.read_text(encoding="utf-8")

    @functools.cache  # noqa: B019 (one Figures per check)
    def specs(self) -> list[Spec]:
        found = []
        for path in sorted((self.root / SPECS).glob("*.toml")):
            data = tomllib.loads(path.read_text(encoding="utf-8"))
            names, missing = {}, []
            for name, relative in (data.get("files") or {}).items():
                try:
                    names[name] = self._file(relative, name)
                except (FigureError, OSError, ValueError) as error:  # a missing or unreadable file: its figures cannot be made
                    missing.append(f"{path.name}: {error}")
            blocks = {b["name"]: b["template"] for b in data.get("block", [])}
            found.append(Spec(path, data["doc"], names, blocks, list(data.get("claim", [])), missing))
        return found

    def render(self, spec: Spec, template: str) -> str:
        names = {**HELPERS, **spec.names}
        out, at = [], 0
        for start, end, expression, form in fields(template):
            out.append(template[at:start].replace("{{", "{").replace("}}", "}"))
            try:
                value = eval(expression, {"__builtins__": {}, **names})  # noqa: S307 (the project's own templates; globals, so comprehensions see the names)
                out.append(format(value, form))
            except FigureError:
                raise
            except Exception as error:  # a template's own mistake: name it with its spec
                raise FigureError(f"{spec.path.name}: {type(error).__name__}: {error} in {{{expression}}}") from error
            at = end
        out.append(template[at:].replace("{{", "{").replace("}}", "}"))
        return "".join(out)

    def blocks(self, spec: Spec, text: str) -> tuple[str, list[Problem]]:
        """The document with every block made again, and a problem for each that differed or is missing."""
        problems, out, at = [], [], 0
        seen = set()
        begins = list(BEGIN.finditer(text))
        for index, begin in enumerate(begins):
            name = begin.group(1)
            end = text.find(END, begin.end())
            following = begins[index + 1].start() if index + 1 < len(begins) else len(text)
            line = text.count("\n", 0, begin.start()) + 1
            if end < 0 or end > following:  # a lost end marker would take the text up to the next block with it
                problems.append(Problem(spec.doc, line, f"block {name}: no {END} before the next block or the end",
                                        structural=True))  # fmt: skip
                continue
            end = text.rfind("\n", 0, end) + 1  # the marker's line, indented or not
            if name not in spec.blocks:
                problems.append(Problem(spec.doc, line, f"block {name}: no template in {spec.path.name}", structural=True))
                continue
            seen.add(name)
            try:
                made = self.render(spec, spec.blocks[name]).strip("\n") + "\n"
            except FigureError as error:
                problems.append(Problem(spec.doc, line, f"block {name}: {error}"))
                continue
            old = text[begin.end() : end]
            if made != old:
                first = next((i for i, (a, b) in enumerate(zip(old.splitlines(), made.splitlines())) if a != b),
                             min(len(old.splitlines()), len(made.splitlines())))  # fmt: skip
                was = (old.splitlines()[first:first + 1] or ["(nothing)"])[0]
                now = (made.splitlines()[first:first + 1] or ["(nothing)"])[0]
                problems.append(Problem(spec.doc, line + 1 + first, f"block {name} differs from its files: the document has"
                                                                    f" {was!r}, the files give {now!r}"))  # fmt: skip
            out.append(text[at : begin.end()] + made)
            at = end
        out.append(text[at:])
        for name in spec.blocks.keys() - seen:
            problems.append(Problem(spec.doc, 1, f"block {name} ({spec.path.name}) has no <!-- figures: {name} --> marker"))
        return "".join(out), problems

    def claims(self, spec: Spec, text: str) -> list[Problem]:
        problems = []
        for claim in spec.claims:
            quote = claim["quote"]
            where = text.find(quote)
            line = text.count("\n", 0, where) + 1 if where >= 0 else 1
            files = ", ".join(str(spec.names[k].name) for k in spec.names
                              if re.search(rf"\b{k}\b", claim["template"]) and isinstance(spec.names[k], Run))  # fmt: skip
            if where < 0:
                problems.append(Problem(spec.doc, line, f"quote not found: {quote!r}"))
                continue
            try:
                made = self.render(spec, claim["template"])
            except FigureError as error:
                problems.append(Problem(spec.doc, line, f"claim {quote!r}: {error}"))
                continue
            if made != quote:
                problems.append(Problem(spec.doc, line, f"says {quote!r}, the files give {made!r} ({files or 'no result file'})"))
        return problems

    def check(self, write: bool = False) -> list[Problem]:
        """Every block and claim against the files; with write, blocks are rewritten first."""
        problems = []
        for spec in self.specs():
            path = self.root / spec.doc
            text = path.read_text(encoding="utf-8")
            if spec.missing:  # nothing of this document can be checked until its files are back
                problems += [Problem(spec.doc, 1, why) for why in spec.missing]
                continue
            try:
                made, block_problems = self.blocks(spec, text)
                if write and made != text and not any(p.structural for p in block_problems):
                    path.write_text(made, encoding="utf-8")
                    text, block_problems = made, [p for p in block_problems if "differs" not in p.what]
                problems += block_problems + self.claims(spec, text)
            except FigureError as error:
                problems.append(Problem(spec.doc, 1, str(error)))
        return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite every block from its files first")
    parser.add_argument("--check", action="store_true", help="change nothing (the default); exit 1 if anything differs")
    args = parser.parse_args(argv)
    figures = Figures()
    problems = figures.check(write=args.write and not args.check)
    for problem in problems:
        print(problem, file=sys.stderr)
    count = sum(len(s.blocks) + len(s.claims) for s in figures.specs())
    print(f"{count} blocks and claims checked against their files; {len(problems) or 'no'} problem"
          f"{'' if len(problems) == 1 else 's'}", file=sys.stderr)  # fmt: skip
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
