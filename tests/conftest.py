"""Shared helpers: fast timing settings and a scriptable fake backend for failure cases."""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from fake_nvml import FakeNVML
from xferbench.measuring.backends import BACKENDS
from xferbench.measuring.backends.base import Backend, SeriesInfo, Transfer
from xferbench.core.spec import HOST_TO_HOST, Spec
from xferbench.core.timing import TimingConfig

FAST = TimingConfig(warmup_calls=1, warmup_s=0.0, min_samples=3, min_time_s=0.0, max_samples=5, max_time_s=5.0)
FAST_ARGS = ["--warmup-calls", "1", "--warmup-time", "0", "--min-samples", "3", "--min-time", "0", "--max-samples", "5"]

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="PyTorch not installed (pip install 'xferbench[torch]')")
# The GPU machines have PyTorch and no TensorFlow: a test that needs TensorFlow's own checks skips there.
HAS_TF = importlib.util.find_spec("tensorflow") is not None
needs_tf = pytest.mark.skipif(not HAS_TF, reason="TensorFlow not installed (pip install 'xferbench[tf]')")


# Hypothesis: no deadline, since a busy machine must not fail a property test by its timing; "ci" (the
# default, and what .ci/run uses) is derandomized and bounded so the suite stays fast and repeatable; "long"
# searches harder on a developer's machine: HYPOTHESIS_PROFILE=long scripts/test.sh tests/test_*_properties.py
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("long", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


# A shell's background job (`pytest &`, as a CI runner may start the suite) starts with SIGINT ignored,
# and Python then never turns Ctrl-C into KeyboardInterrupt, here or in the children this process starts.
# The tests of Ctrl-C need it delivered: the suite takes Python's own handler back.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The CLI's width follows COLUMNS, which a shell or a test runner may export (pytest-xdist's workers get
# 80): the suite reads the CLI as a pipe without it, 160 columns wide, and a test that wants a width sets it.
os.environ.pop("COLUMNS", None)


def unwrapped(text: str) -> str:
    """Text with every space and line break taken out: a message the console folded at its width (a long
    temp path folds anywhere in it) compares whole, however long the path."""
    return "".join(text.split())


def load_script(name: str) -> Any:
    """A script of scripts/ as a module (they are not in the package), registered so dataclasses resolve."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def wait_for(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Until `condition` holds (a thread's progress, never a duration), failing after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


@pytest.fixture
def fake_nvml(monkeypatch: pytest.MonkeyPatch) -> Callable[..., FakeNVML]:
    """Install a FakeNVML (or a subclass, as `kind`) as the pynvml module; the test picks its answers."""

    def install(kind: type[FakeNVML] = FakeNVML, **kwargs: Any) -> FakeNVML:
        fake = kind(**kwargs)
        monkeypatch.setitem(sys.modules, "pynvml", fake)
        return fake

    return install


def run_config(config: Any) -> Any:
    """Plan and measure a SweepConfig as a sweep does, without a file: the Result."""
    from xferbench.measuring.sweep import make_plan, new_result, run_plan

    plan = make_plan(config)
    try:
        return run_plan(plan, new_result(plan, {}), save=lambda r: None)
    finally:
        plan.close()


class FakeTransfer(Transfer):
    def __init__(self, spec: Spec, backend: FakeBackend) -> None:
        self.spec, self.backend = spec, backend

    def __call__(self) -> None:
        error = self.backend.raise_at.get(self.spec.batch_size)
        if error is not None:
            raise error

    def verify(self) -> None:
        if not self.backend.delivers:
            from xferbench.core.errors import VerificationError

            raise VerificationError("fake: nothing arrived")


class FakeBackend(Backend):
    """A host-side backend whose calls raise chosen errors at chosen batch sizes."""

    name = "fake"
    modes = default_modes = ("a", "b")
    fixed_device = "cpu"
    in_default_sweep = False

    def __init__(self, raise_at: dict[int, BaseException] | None = None, delivers: bool = True) -> None:
        self.raise_at = raise_at or {}
        self.delivers = delivers

    def describe(self, key: Any, params: dict[str, Any]) -> SeriesInfo:
        return SeriesInfo("fake device", HOST_TO_HOST, "time.perf_counter", "none")

    def host_bytes(self, spec: Spec) -> int:
        return 0

    def prepare(self, spec: Spec, params: dict[str, Any]) -> Transfer:
        return FakeTransfer(spec, self)


@pytest.fixture
def fake_backend(monkeypatch: pytest.MonkeyPatch):
    """Register a FakeBackend as framework 'fake'; the test sets its failures."""

    def register(**kwargs: Any) -> FakeBackend:
        backend = FakeBackend(**kwargs)
        monkeypatch.setitem(BACKENDS, "fake", backend)
        return backend

    return register


@pytest.fixture(autouse=True)
def _run_in_a_temporary_folder(tmp_path, monkeypatch) -> None:
    """A sweep without --out writes under ./results: keep that out of the repository."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def _children_run_the_code_as_it_is_under_mutmuts_first_pass(monkeypatch) -> None:
    """scripts/mutation.sh: mutmut's first pass records which test reaches which function, in this process
    only; a child a test starts (a framework's worker) would try to record too, from a folder with no
    mutmut configuration, and fail. Later passes leave the variable alone: each child runs the planted bug."""
    if os.environ.get("MUTANT_UNDER_TEST") == "stats":
        monkeypatch.delenv("MUTANT_UNDER_TEST")


# --simulate-busy: every reading of the machine in the test processes says it was busy, so a test that
# expects a quiet machine's output fails at once rather than on the afternoon the machine is loaded
# (scripts/busy_tests.sh gives real load, which also reaches the workers and tools tests start).
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--simulate-busy", action="store_true",
                     help="every contention reading in the test processes says the machine was busy")  # fmt: skip


REAL_USAGE: list[Callable[..., Any]] = []


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--simulate-busy"):
        from xferbench.measuring import contention

        def busy(before: Any, after: Any) -> Any:
            cpus = (after.cpus if after is not None else None) or 2
            return contention.Usage(float(cpus), 0.9, cpus)  # others hold every CPU this process may use

        REAL_USAGE.append(contention.usage)
        contention.usage = busy


@pytest.fixture(autouse=True)
def _contention_tests_read_the_real_machine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under --simulate-busy the tests of the readings themselves keep the real ones."""
    if request.config.getoption("--simulate-busy") and request.path.name.startswith("test_contention"):
        from xferbench.measuring import contention

        monkeypatch.setattr(contention, "usage", REAL_USAGE[0])
