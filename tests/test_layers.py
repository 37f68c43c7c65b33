"""The layout by role, kept: core, reading, measuring, health, then the command line, each importing only
from the layers before it; and readers that only read (every module of core and reading, and check,
fleet and validate) import nothing that measures, even indirectly, so they run where no framework is
installed."""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Iterator
import sys
from pathlib import Path

import pytest

import xferbench

PACKAGE = Path(xferbench.__file__).resolve().parent
LAYERS = ("core", "reading", "measuring", "health")  # the command line (cli, __main__) comes after them all
MODULES = sorted(".".join(("xferbench", *p.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
                 for p in PACKAGE.rglob("*.py"))  # fmt: skip
READERS = [m for m in MODULES if m.split(".")[1:2] in (["core"], ["reading"])] + [f"xferbench.health.{m}" for m in ("check", "fleet", "validation_checks")]


def layer(module: str) -> int:
    """Where a module sits: its package's place in LAYERS, the command line after them; the package's own
    __init__ (the version, and load() from the core) with the core."""
    parts = module.split(".")
    if module == "xferbench":
        return 0
    return LAYERS.index(parts[1]) if parts[1] in LAYERS else len(LAYERS)


def imported(module: str) -> set[str]:
    """Every xferbench module a module imports, at its top or inside a function."""
    path = PACKAGE.joinpath(*module.split(".")[1:])
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("xferbench")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("xferbench") and not node.level:
            for alias in node.names:  # `from xferbench.core import results` names a module; `from xferbench.core.results import load` does not
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in MODULES else node.module)
    return found


def test_the_folder_list_shows_the_layers() -> None:
    assert {m.split(".")[1] for m in MODULES if m.count(".") >= 2} == set(LAYERS)
    assert [m for m in MODULES if m.count(".") == 1 and m.split(".")[1] not in LAYERS] == ["xferbench.__main__", "xferbench.cli"]


@pytest.mark.parametrize("module", MODULES)
def test_no_import_runs_from_a_layer_to_a_later_one(module: str) -> None:
    later = sorted(m for m in imported(module) if layer(m) > layer(module))
    assert not later, f"{module} ({layer(module)}) imports {later} from a later layer"


@pytest.mark.parametrize("reader", READERS)
def test_a_reader_imports_nothing_that_measures(reader: str) -> None:
    probe = f"import sys, {reader}; print(' '.join(sorted(m for m in sys.modules if m.startswith('xferbench.measuring'))))"
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == [], f"{reader} imports {found.stdout.strip()}"


def own_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of a module but the bodies of the mutation tool's planted copies of its functions
    (named `*__mutmut_<n>`), which change its strings on purpose."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and "__mutmut_" in child.name:
            continue
        yield child
        yield from own_nodes(child)


def test_check_validate_and_fleet_judge_in_one_vocabulary() -> None:
    """One verdict type and one set of statuses: those the files hold, whichever command wrote or reads them."""
    import ast
    import importlib
    from pathlib import Path

    from xferbench.health import check, validation_checks
    from xferbench.core import verdict

    assert check.Verdict is validation_checks.Verdict is verdict.Verdict
    assert (check.PASS, check.FAIL, check.WARN, check.NA, check.INFO) == verdict.STATUSES
    for name in ("check", "validation_checks", "fleet", "validate_command"):
        tree = ast.parse(Path(importlib.import_module(f"xferbench.health.{name}").__file__).read_text())
        literals = {node.value for node in own_nodes(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
        assert not literals & set(verdict.STATUSES), f"{name}.py spells a status itself: {literals & set(verdict.STATUSES)}"


def test_the_mutation_list_names_every_module_with_logic_and_no_other() -> None:
    """scripts/mutation.sh plants bugs in the modules pyproject.toml lists: a module added or renamed
    since must be listed by its path, or its tests are never checked by a planted bug."""
    import tomllib

    root = Path(xferbench.__file__).resolve().parent.parent
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mutmut"]["only_mutate"])
    logic = {str(p.relative_to(root)) for p in (root / "xferbench").rglob("*.py") if "def " in p.read_text()}
    unlisted = {"xferbench/__init__.py", "xferbench/core/errors.py"}  # the version, and the error classes
    assert sorted(listed - logic) == [] and sorted(logic - listed - unlisted) == []
