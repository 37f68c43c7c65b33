"""What environment.py records of a machine, rule by rule, on simulated Linux, macOS and Windows.

Each OS is stood in for by what it gives the module: its `sys.platform`, `platform` answers, the `os`
calls it has (macOS and Windows have no sched_getaffinity; Windows has no getloadavg or sysconf), its
files under /proc and /sys, its command-line tools and the installed packages; NVML by fake_nvml.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import io
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest
from fake_nvml import FakeNVML, FakeNVMLError, NodeNVML

from xferbench.core import environment as env

R_OK, F_OK = 4, 0
THP = "/sys/kernel/mm/transparent_hugepage/"
NODES = "/sys/devices/system/node"
LINUX_FILES = {
    "/proc/cpuinfo": "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13 64-Core Processor\nflags\t\t: fpu\n",
    "/proc/stat": "cpu  1 2 3 4\n",
    "/proc/self/task/1/stat": "1 (python) R\n",
    THP + "enabled": "always [madvise] never\n",
    THP + "defrag": "always defer defer+madvise [madvise] never\n",
    NODES + "/node0/cpulist": "0-7\n",
    NODES + "/node1/cpulist": "8-15\n",
    NODES + "/possible": "0-1\n",
}
IOREG = '+-o AGXAcceleratorG13X  <class AGXAcceleratorG13X>\n    {\n      "gpu-core-count" = 16\n      "model" = "Apple M1 Pro"\n    }\n'
PROFILER = ("Hardware:\n\n      Total Number of Cores: 10 (8 performance and 2 efficiency)\n\nGraphics/Displays:\n\n    Apple M3 Max:\n\n"
            "      Chipset Model: Apple M3 Max\n      Total Number of Cores: 30\n")  # fmt: skip
MAC_TOOLS = {"sysctl -n machdep.cpu.brand_string": "Apple M1 Pro\n", "sysctl -n hw.memsize": "17179869184\n", "ioreg -rc AGXAccelerator": IOREG}
IOREG_SOURCE = "ioreg -rc AGXAccelerator (gpu-core-count)"
PROFILER_SOURCE = "system_profiler SPDisplaysDataType (Total Number of Cores)"
NO_CORES = "neither ioreg (AGXAccelerator gpu-core-count) nor system_profiler SPDisplaysDataType gave the GPU's core count"
NO_NVML = "nvidia-ml-py is not installed: pip install 'xferbench[nvml]'"
BUSY = ("busy-machine detection: other processes' CPU use and this process's wait for a CPU are read from Linux's /proc,"
        " so no point can be flagged as measured on a busy machine")  # fmt: skip
NO_AFFINITY = "the CPUs this process may run on (no sched_getaffinity), so a cgroup or taskset limit is not recorded"
MAC_MEMORY = "how much memory is free: macOS gives only the installed total, so the memory check stops only a batch larger than all of it"
NO_NUMA = "NUMA placement: the kernel's NUMA nodes are read from /sys"
NO_ONEDNN_FEATURES = dict.fromkeys(("avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16"), False)
AFFINITY_SOURCE, KERNEL_SOURCE = "NVML memory affinity (node scope)", "the kernel's PCI facts (sysfs numa_node)"


class Files:
    """A file system of plain text files; a folder is any prefix of a file's path, or one named empty."""

    def __init__(self, files: dict[str, str], folders: tuple[str, ...] = ()) -> None:
        self.files, self.folders = dict(files), set(folders)
        for path in files:
            parts = path.split("/")
            self.folders.update("/".join(parts[:i]) for i in range(2, len(parts)))

    def open(self, path: Any, *args: Any, **kwargs: Any) -> io.StringIO:
        if args or kwargs or path not in self.files:
            raise FileNotFoundError(2, "No such file or directory", path)
        return io.StringIO(self.files[path])

    def isdir(self, path: str) -> bool:
        return path in self.folders

    def listdir(self, path: str) -> list[str]:
        if path not in self.folders:
            raise FileNotFoundError(2, "No such file or directory", path)
        inside = {p[len(path) + 1 :].split("/")[0] for p in [*self.files, *self.folders] if p.startswith(path + "/")}
        return sorted(inside)

    def access(self, path: str, mode: int) -> bool:
        if mode not in (F_OK, R_OK, 2, 1):
            raise TypeError("an integer is required")
        return path in self.files


class Tools:
    """Command-line tools: command line -> stdout, (stdout, returncode) or an exception; others are missing."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers, self.ran = answers, []

    def run(self, args: Any, **kwargs: Any) -> SimpleNamespace:
        self.ran.append((list(args), kwargs))
        answer = self.answers.get(" ".join(args))
        if answer is None:
            raise FileNotFoundError(2, "No such file or directory", args[0])
        if isinstance(answer, BaseException):
            raise answer
        out, code = answer if isinstance(answer, tuple) else (answer, 0)
        return SimpleNamespace(stdout=out, stderr="", returncode=code)


def sysconf(name: str) -> int:
    answers = {"SC_PHYS_PAGES": 4_000_000, "SC_PAGE_SIZE": 4096}
    if name not in answers:
        raise ValueError("unrecognized configuration name")
    return answers[name]


def simulate(monkeypatch, system: str = "linux", files: dict[str, str] | None = None, folders: tuple[str, ...] = (),
             tools: dict[str, Any] | None = None, environ: dict[str, str] | None = None, packages: dict[str, str] | None = None,
             nvml: Any = None, **calls: Any) -> SimpleNamespace:  # fmt: skip
    """Put the module on a simulated machine; `calls` replaces or (None) removes one of its os calls."""
    fs = Files(LINUX_FILES if files is None and system == "linux" else files or {}, folders)
    run = Tools(tools or {})
    os_calls: dict[str, Any] = {"cpu_count": lambda: 16, "getloadavg": lambda: (1.23456, 0.5, 0.126), "sysconf": sysconf}
    if system == "linux":
        os_calls["sched_getaffinity"] = lambda pid: {3, 1, 2, 0} if pid == 0 else set()
    if system == "win32":
        del os_calls["getloadavg"], os_calls["sysconf"]
    os_calls.update(calls)
    fake_os = SimpleNamespace(R_OK=R_OK, F_OK=F_OK, environ=dict(environ or {}), access=fs.access, listdir=fs.listdir,
                              path=SimpleNamespace(isdir=fs.isdir), **{k: v for k, v in os_calls.items() if v is not None})  # fmt: skip
    answers = {
        "linux": ("node-7", "Linux-6.8.0-x86_64-with-glibc2.39", "x86_64", "x86_64", ("", ("", "", ""), ""), "Linux"),
        "darwin": ("mac-1", "macOS-14.5-arm64-arm-64bit", "arm64", "arm", ("14.5", ("", "", ""), "arm64"), "Darwin"),
        "win32": ("win-1", "Windows-11-10.0.22631-SP0", "AMD64", "Intel64 Family 6 Model 85 Stepping 7, GenuineIntel",
                  ("", ("", "", ""), ""), "Windows"),
    }.get(system, ("bsd-1", "FreeBSD-14.0-RELEASE-amd64-64bit-ELF", "amd64", "amd64", ("", ("", "", ""), ""), "FreeBSD"))  # fmt: skip
    node, name, machine, processor, mac_ver, system_name = answers
    fake_platform = SimpleNamespace(node=lambda: node, platform=lambda: name, machine=lambda: machine, processor=lambda: processor,
                                    mac_ver=lambda: mac_ver, system=lambda: system_name, python_version=lambda: "3.12.3",
                                    python_implementation=lambda: "CPython")  # fmt: skip
    installed = packages or {}

    def version(package: str) -> str:
        if package not in installed:
            raise importlib.metadata.PackageNotFoundError(package)
        return installed[package]

    monkeypatch.setattr(env, "sys", SimpleNamespace(platform=system))
    monkeypatch.setattr(env, "os", fake_os)
    monkeypatch.setattr(env, "platform", fake_platform)
    monkeypatch.setattr(env, "open", fs.open, raising=False)
    monkeypatch.setattr(env, "subprocess", SimpleNamespace(run=run.run, SubprocessError=subprocess.SubprocessError))
    monkeypatch.setattr(env.importlib.metadata, "version", version)
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    env.cpu_name.cache_clear()
    env.mac_facts.cache_clear()
    return SimpleNamespace(os=fake_os, platform=fake_platform, files=fs, tools=run)


@pytest.fixture(autouse=True)
def _fresh_caches():
    """The CPU name and the Mac's facts are cached per process: each test reads its own machine."""
    env.cpu_name.cache_clear()
    env.mac_facts.cache_clear()
    yield
    env.cpu_name.cache_clear()
    env.mac_facts.cache_clear()


class Recording(NodeNVML):
    """One HGX node's NVML that keeps the mask sizes it is asked for."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.asked: list[tuple[str, Any, Any]] = []

    def nvmlDeviceGetMemoryAffinity(self, handle: Any, node_set_size: int, scope: int) -> list[int]:
        self.asked.append(("memory", node_set_size, scope))
        return super().nvmlDeviceGetMemoryAffinity(handle, node_set_size, scope)

    def nvmlDeviceGetCpuAffinity(self, handle: Any, words: int) -> list[int]:
        self.asked.append(("cpu", words, None))
        return super().nvmlDeviceGetCpuAffinity(handle, words)


def node_gpu(index: int, host: str = "n1", **changes: Any) -> dict[str, Any]:
    """What nvml_info records of GPU `index` of a Recording node, with `changes`."""
    gpu = {"index": index, "name": "NVIDIA H100 80GB HBM3", "uuid": f"GPU-{host}-{index}", "pci_bus_id": f"00000000:{0x18 + 0x10 * index:02X}:00.0",
           "memory_bytes": 80 * 2**30, "pcie_gen_current": 1, "pcie_width_current": 16, "pcie_gen_max": 5, "pcie_width_max": 16,
           "pcie_gen_gpu_max": None, "numa_node": 0, "numa_node_source": AFFINITY_SOURCE, "numa_node_reason": None,
           "gpu_memory_numa_node": None, "cpu_affinity": [4, 5, 6, 7], "numa_cpus": [0, 1, 2, 3, 4, 5, 6, 7],
           "pcie_replay_counter": 0, "clocks_mhz": {"sm": 1980, "memory": 2619}, "pstate": "P0", "c2c": NO_C2C}  # fmt: skip
    return {**gpu, **changes}


# What NVML's C2C queries give a PCIe GPU: Not Supported (c2c.read_c2c)
NO_C2C = {"enabled": None, "mode_error": "Not Supported", "link_count": None, "links": []}


# --- macOS's tools ---------------------------------------------------------------------------------


def test_a_tool_is_run_with_its_output_captured_as_text_and_a_time_limit(monkeypatch) -> None:
    """_command runs the tool once, capturing text, with a 20 s limit, and returns its stdout unstripped."""
    m = simulate(monkeypatch, "darwin", tools={"sysctl -n hw.memsize": " 17179869184\n"})
    assert env._command("sysctl", "-n", "hw.memsize") == " 17179869184\n"
    assert m.tools.ran == [(["sysctl", "-n", "hw.memsize"], {"capture_output": True, "text": True, "timeout": 20})]


@pytest.mark.parametrize("answer", [("out\n", 1), ("  \n", 0), ("", 0), subprocess.TimeoutExpired("sysctl", 20), PermissionError(13, "denied")])
def test_a_tool_that_fails_says_nothing_or_is_missing_gives_none(monkeypatch, answer) -> None:
    """A failing, silent, slow or forbidden tool gives None, as does a missing one."""
    simulate(monkeypatch, "darwin", tools={"sysctl -n x": answer})
    assert env._command("sysctl", "-n", "x") is None
    assert env._command("sysctl", "-n", "missing") is None


def test_sysctl_strips_its_value_and_gives_none_where_there_is_none(monkeypatch) -> None:
    """sysctl runs `sysctl -n NAME` and strips what it prints; None where the tool gives nothing."""
    m = simulate(monkeypatch, "darwin", tools={"sysctl -n hw.ncpu": "  10\n"})
    assert env.sysctl("hw.ncpu") == "10"
    assert env.sysctl("hw.missing") is None
    assert [args for args, _ in m.tools.ran] == [["sysctl", "-n", "hw.ncpu"], ["sysctl", "-n", "hw.missing"]]


# --- the CPU, memory and packages ------------------------------------------------------------------


def test_the_cpu_name_comes_from_the_chip_on_a_mac_and_cpuinfo_on_linux(monkeypatch) -> None:
    """macOS names the chip by sysctl; Linux by /proc/cpuinfo's model name; Windows by platform.processor."""
    simulate(monkeypatch, "darwin", tools=MAC_TOOLS)
    assert env.cpu_name() == "Apple M1 Pro"
    simulate(monkeypatch, "darwin")
    assert env.cpu_name() == "arm"
    simulate(monkeypatch, "linux")
    assert env.cpu_name() == "AMD EPYC 7B13 64-Core Processor"
    simulate(monkeypatch, "win32")
    assert env.cpu_name() == "Intel64 Family 6 Model 85 Stepping 7, GenuineIntel"


def test_installed_packages_are_listed_in_their_order_and_missing_ones_left_out(monkeypatch) -> None:
    """package_versions reads each distribution's version and skips those not installed."""
    simulate(monkeypatch, packages={"nvidia-ml-py": "12.560.30", "numpy": "2.1.0", "cupy-cuda12x": "13.3.0", "other": "1"})
    versions = env.package_versions()
    assert list(versions.items()) == [("numpy", "2.1.0"), ("cupy-cuda12x", "13.3.0"), ("nvidia-ml-py", "12.560.30")]


def test_two_builds_of_one_module_are_a_conflict_said_word_for_word() -> None:
    """package_conflicts names every build of a module installed twice or more, and nothing for one."""
    tail = (": keep the one that matches the driver (CUDA 13 builds need driver 580 or newer), pip uninstall the others,"
            " then reinstall the one kept")  # fmt: skip
    assert env.package_conflicts({"cupy-cuda12x": "13.3.0", "jax-cuda12-plugin": "0.4.35", "numpy": "2"}) == []
    assert env.package_conflicts({"cupy-cuda13x": "13.6.0", "cupy-cuda12x": "13.3.0", "cupy": "13.0.0",
                                  "jax-cuda13-plugin": "0.7.0", "jax-cuda12-plugin": "0.4.35"}) == [  # fmt: skip
        "cupy 13.0.0 and cupy-cuda12x 13.3.0 and cupy-cuda13x 13.6.0 are all installed and provide cupy" + tail,
        "jax-cuda12-plugin 0.4.35 and jax-cuda13-plugin 0.7.0 are all installed and provide the JAX CUDA plugin" + tail,
    ]
    assert env.package_conflicts({"cupy-cuda13x": "13.6.0", "cupy-cuda12x": "13.3.0"}) == [
        "cupy-cuda12x 13.3.0 and cupy-cuda13x 13.6.0 are all installed and provide cupy" + tail]


def test_memory_is_macos_own_figure_on_a_mac_and_pages_times_page_size_elsewhere(monkeypatch) -> None:
    """_total_memory: sysctl hw.memsize on a Mac where it is a number, else SC_PHYS_PAGES x SC_PAGE_SIZE."""
    simulate(monkeypatch, "darwin", tools=MAC_TOOLS)
    assert env._total_memory() == 17179869184
    simulate(monkeypatch, "darwin", tools={"sysctl -n hw.memsize": "16 GB\n"})
    assert env._total_memory() == 4_000_000 * 4096
    simulate(monkeypatch, "linux", tools={"sysctl -n hw.memsize": "1\n"})
    assert env._total_memory() == 4_000_000 * 4096


class Kernel32:
    """GlobalMemoryStatusEx as Windows runs it: it fails (0) and fills nothing unless dwLength is the
    structure's 64 bytes; else it fills every field (ullTotalPhys at byte 8, ullAvailPhys at 16)."""

    def __init__(self, answer: int = 1, total: int = 34_359_738_368) -> None:
        self.answer, self.total, self.lengths = answer, total, []

    def GlobalMemoryStatusEx(self, pointer: Any) -> int:  # noqa: N802 (Windows' name)
        address = ctypes.addressof(pointer._obj)
        self.lengths.append(ctypes.c_uint32.from_address(address).value)
        if self.lengths[-1] != 64 or ctypes.sizeof(pointer._obj) != 64:
            return 0
        ctypes.c_uint32.from_address(address + 4).value = 37  # dwMemoryLoad
        for at, value in zip(range(8, 64, 8), (self.total, 12 * 10**9, 39_728_447_488, 15 * 10**9, 2**47, 2**46, 0)):
            ctypes.c_uint64.from_address(address + at).value = value
        return self.answer


def test_windows_memory_is_global_memory_status_exs_installed_total(monkeypatch) -> None:
    """Windows has no sysconf: the installed memory is MEMORYSTATUSEX's ullTotalPhys, asked with dwLength set."""
    simulate(monkeypatch, "win32")
    kernel32 = Kernel32()
    monkeypatch.setattr(ctypes, "windll", SimpleNamespace(kernel32=kernel32), raising=False)
    assert env._total_memory() == 34_359_738_368 and type(env._total_memory()) is int
    assert env.windows_memory() == (34_359_738_368, 12 * 10**9) and kernel32.lengths == [64] * 3
    assert env.capture()["memory_bytes"] == 34_359_738_368
    for refused in (Kernel32(answer=0), Kernel32(total=0)):  # a failed call, or one that says nothing
        monkeypatch.setattr(ctypes, "windll", SimpleNamespace(kernel32=refused), raising=False)
        assert env._total_memory() is None


@pytest.mark.parametrize("failure", [ValueError("unrecognized configuration name"), OSError(22, "Invalid argument")])
def test_memory_is_none_where_the_os_cannot_say(monkeypatch, failure) -> None:
    """No sysconf and no GlobalMemoryStatusEx (a Windows without the call), or a sysconf that refuses, gives None."""
    simulate(monkeypatch, "win32")
    monkeypatch.delattr(ctypes, "windll", raising=False)
    assert env._total_memory() is None

    def refuse(name: str) -> int:
        raise failure

    simulate(monkeypatch, "linux", sysconf=refuse)
    assert env._total_memory() is None


# --- the Mac's GPU ---------------------------------------------------------------------------------


def test_the_gpu_core_count_comes_from_ioreg_at_once(monkeypatch) -> None:
    """ioreg's gpu-core-count answers; system_profiler is never run then."""
    m = simulate(monkeypatch, "darwin", tools={"ioreg -rc AGXAccelerator": IOREG, "system_profiler SPDisplaysDataType": PROFILER})
    assert env.apple_gpu_cores() == (16, IOREG_SOURCE)
    assert [args for args, _ in m.tools.ran] == [["ioreg", "-rc", "AGXAccelerator"]]


@pytest.mark.parametrize("ioreg", [None, "+-o AGXAcceleratorG13X\n    {\n      \"model\" = \"Apple M3 Max\"\n    }\n"])
def test_without_ioregs_count_system_profilers_gpu_count_is_used(monkeypatch, ioreg) -> None:
    """The fallback reads SPDisplaysDataType's "Total Number of Cores", never the CPU's."""
    m = simulate(monkeypatch, "darwin", tools={"ioreg -rc AGXAccelerator": ioreg, "system_profiler SPDisplaysDataType":
                                               PROFILER.split("Graphics/Displays:")[1]})  # fmt: skip
    assert env.apple_gpu_cores() == (30, PROFILER_SOURCE)
    assert [args for args, _ in m.tools.ran] == [["ioreg", "-rc", "AGXAccelerator"], ["system_profiler", "SPDisplaysDataType"]]


@pytest.mark.parametrize("profiler", [None, "Graphics/Displays:\n\n    Intel UHD Graphics 630:\n\n      Chipset Model: Intel UHD\n"])
def test_without_either_count_the_reason_is_given(monkeypatch, profiler) -> None:
    """Neither tool giving a count: None and why."""
    simulate(monkeypatch, "darwin", tools={"system_profiler SPDisplaysDataType": profiler})
    assert env.apple_gpu_cores() == (None, NO_CORES)


def test_off_a_mac_there_are_no_mac_facts_and_the_gpu_is_taken_to_share_memory(monkeypatch) -> None:
    """mac_facts is {} off macOS; apple_silicon then defaults to True."""
    simulate(monkeypatch, "linux", tools=MAC_TOOLS)
    assert env.mac_facts() == {}
    assert env.apple_silicon() is True


def test_an_apple_silicon_mac_names_its_gpu_with_its_core_count(monkeypatch) -> None:
    """The chip, GPU cores, memory and macOS version come from macOS; the GPU is named "chip (N-core GPU)"."""
    simulate(monkeypatch, "darwin", tools=MAC_TOOLS)
    assert env.mac_facts() == {"chip": "Apple M1 Pro", "gpu_cores": 16, "gpu_cores_source": IOREG_SOURCE,
                               "memory_bytes": 17179869184, "macos": "14.5", "apple_silicon": True}  # fmt: skip
    assert env.apple_silicon() is True
    assert env.apple_gpu_name() == "Apple M1 Pro (16-core GPU)"
    assert env.mps_device() == {"id": "mps", "kind": "mps", "name": "Apple M1 Pro (16-core GPU)", "chip": "Apple M1 Pro",
                                "gpu_cores": 16, "gpu_cores_source": IOREG_SOURCE, "memory_bytes": 17179869184,
                                "unified_memory": True, "vendor": "Apple", "runtime": "Metal", "host_link": "unified memory"}  # fmt: skip


def test_without_a_core_count_or_chip_name_the_gpu_is_named_from_what_is_known(monkeypatch) -> None:
    """No core count: "chip GPU"; no chip either: "Apple silicon GPU"."""
    simulate(monkeypatch, "darwin", tools={"sysctl -n machdep.cpu.brand_string": "Apple M2\n"})
    assert env.apple_gpu_name() == "Apple M2 GPU"
    simulate(monkeypatch, "darwin")
    assert env.apple_gpu_name() == "Apple silicon GPU"
    simulate(monkeypatch, "darwin", tools={"ioreg -rc AGXAccelerator": IOREG})
    assert env.apple_gpu_name() == "Apple silicon (16-core GPU)"


def test_an_intel_mac_gpu_is_not_named_after_its_cpu_and_does_not_share_memory(monkeypatch) -> None:
    """An x86_64 Mac: the GPU is "the GPU of an Intel Mac (MPS)" and unified_memory is False; the
    framework's own facts are kept under macOS's."""
    m = simulate(monkeypatch, "darwin", tools={"sysctl -n machdep.cpu.brand_string": "Intel(R) Core(TM) i9-9880H\n"})
    m.platform.machine = lambda: "x86_64"
    assert env.apple_silicon() is False
    assert env.apple_gpu_name() == "the GPU of an Intel Mac (MPS)"
    described = {"id": "mps:0", "name": "AMD Radeon Pro 5500M", "memory_bytes": 1, "capability": None}
    assert env.mps_device(described) == {"id": "mps", "name": "the GPU of an Intel Mac (MPS)", "memory_bytes": 4_000_000 * 4096,
                                         "capability": None, "kind": "mps", "chip": "Intel(R) Core(TM) i9-9880H",
                                         "gpu_cores": None, "gpu_cores_source": NO_CORES, "unified_memory": False, "vendor": "Apple", "runtime": "Metal", "host_link": None}  # fmt: skip


# --- CPU lists, the OS and its limits --------------------------------------------------------------


def test_cpu_lists_parse_and_print_in_the_kernels_form() -> None:
    """'0-3,8,10-11' <-> [0, 1, 2, 3, 8, 10, 11]; overlaps and empty parts fold away."""
    assert env.parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert env.parse_cpu_list(" 9,2-3,,3 ,1-2\n") == [1, 2, 3, 9]
    assert env.parse_cpu_list("\n") == []
    assert env.cpu_ranges([11, 0, 1, 2, 3, 8, 10, 3]) == "0-3,8,10-11"
    assert env.cpu_ranges([5, 7]) == "5,7"
    assert env.cpu_ranges([6]) == "6"
    assert env.cpu_ranges([]) == ""


def test_the_process_cpus_are_those_sched_getaffinity_gives_sorted(monkeypatch) -> None:
    """process_cpus asks for this process (pid 0); None where the call is missing or refused."""
    simulate(monkeypatch, "linux")
    assert env.process_cpus() == [0, 1, 2, 3]
    simulate(monkeypatch, "darwin")
    assert env.process_cpus() is None

    def refuse(pid: int) -> set[int]:
        raise OSError(3, "No such process")

    simulate(monkeypatch, "linux", sched_getaffinity=refuse)
    assert env.process_cpus() is None


@pytest.mark.parametrize(("system", "name"), [("darwin", "macOS"), ("linux", "Linux"), ("win32", "Windows"), ("freebsd14", "FreeBSD")])
def test_the_os_is_named_as_its_users_know_it(monkeypatch, system, name) -> None:
    """os_name: macOS, Linux, Windows, else platform.system(), else sys.platform."""
    m = simulate(monkeypatch, system)
    assert env.os_name() == name
    m.platform.system = lambda: ""
    assert env.os_name() == {"freebsd14": "freebsd14"}.get(system, name)


def test_linux_with_proc_affinity_and_numa_lacks_no_check(monkeypatch) -> None:
    """Nothing is missing on a Linux with /proc, sched_getaffinity and /sys's NUMA nodes."""
    simulate(monkeypatch, "linux")
    assert env.unavailable_checks() == []


@pytest.mark.parametrize("gone", ["/proc/stat", "/proc/self/task/1/stat"])
def test_without_procs_cpu_figures_busy_machine_detection_is_missing(monkeypatch, gone) -> None:
    """No readable /proc/stat, or no /proc/self/task: busy-machine detection is said missing."""
    simulate(monkeypatch, "linux", files={k: v for k, v in LINUX_FILES.items() if k != gone})
    assert env.unavailable_checks() == [BUSY]


def test_a_linux_without_sys_numa_nodes_says_numa_placement_is_missing(monkeypatch) -> None:
    """No /sys/devices/system/node on Linux: NUMA placement is said missing."""
    simulate(monkeypatch, "linux", files={k: v for k, v in LINUX_FILES.items() if not k.startswith(NODES)})
    assert env.unavailable_checks() == [NO_NUMA]


def test_macos_and_windows_say_what_they_cannot_check(monkeypatch) -> None:
    """macOS lacks /proc, sched_getaffinity and a free-memory figure; Windows the first two."""
    simulate(monkeypatch, "darwin")
    assert env.unavailable_checks() == [BUSY, NO_AFFINITY, MAC_MEMORY]
    simulate(monkeypatch, "win32")
    assert env.unavailable_checks() == [BUSY, NO_AFFINITY]


def test_the_load_average_is_rounded_to_two_places_and_none_on_windows(monkeypatch) -> None:
    """load_average rounds each of the three; None where getloadavg is missing or fails."""
    simulate(monkeypatch, "linux")
    assert env.load_average() == [1.23, 0.5, 0.13]
    simulate(monkeypatch, "win32")
    assert env.load_average() is None

    def refuse() -> tuple[float, float, float]:
        raise OSError("Load averages are unobtainable")

    simulate(monkeypatch, "linux", getloadavg=refuse)
    assert env.load_average() is None


def test_cpu_features_name_each_of_tensorflows_onednn_triggers_from_the_first_processors_flags(monkeypatch) -> None:
    """x86: each feature TensorFlow's oneDNN default reads, true where the first processor's flags hold that
    exact word (avx512_vnni is not avx512vnni, nor avx512_vnni_int8); a later processor's flags are not read."""
    zen5 = ("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu avx2 avx512f avx_vnni avx512_bf16 avx512_vnni avx512_vp2intersect\n\n"
            "processor\t: 1\nflags\t\t: fpu amx_tile amx_int8 amx_bf16\n")  # fmt: skip
    simulate(monkeypatch, "linux", files={"/proc/cpuinfo": zen5})
    assert env.cpu_features() == {**NO_ONEDNN_FEATURES, "avx512_vnni": True, "avx512_bf16": True, "avx_vnni": True}
    sapphire = "\nprocessor : 0\nflags : AVX512VNNI avx512_vnni_int8 amx_tile amx_bf16\n"  # a blank line first; capitals are the same word
    simulate(monkeypatch, "linux", files={"/proc/cpuinfo": sapphire})
    assert env.cpu_features() == {**NO_ONEDNN_FEATURES, "amx_tile": True, "amx_bf16": True}
    simulate(monkeypatch, "linux")  # flags: fpu only
    assert env.cpu_features() == NO_ONEDNN_FEATURES


def test_cpu_features_on_arm_say_whether_it_is_a_neoverse_v1_and_nothing_where_no_cpuinfo(monkeypatch) -> None:
    """Arm has no x86 flags: TensorFlow's other trigger is the Neoverse V1 (implementer 0x41, part 0xd40).
    Without /proc/cpuinfo (macOS, Windows) or with neither flags nor a part, nothing is claimed."""
    graviton3 = "processor\t: 0\nFeatures\t: fp asimd sve\nCPU implementer\t: 0x41\nCPU part\t: 0xd40\n"
    simulate(monkeypatch, "linux", files={"/proc/cpuinfo": graviton3})
    assert env.cpu_features() == {"neoverse_v1": True}
    simulate(monkeypatch, "linux", files={"/proc/cpuinfo": graviton3.replace("0xd40", "0xd4f")})  # a Neoverse V2
    assert env.cpu_features() == {"neoverse_v1": False}
    simulate(monkeypatch, "linux", files={"/proc/cpuinfo": graviton3.replace("0x41", "0x61")})  # another implementer's part 0xd40
    assert env.cpu_features() == {"neoverse_v1": False}
    simulate(monkeypatch, "linux", files={"/proc/cpuinfo": "processor\t: 0\nmodel name\t: something\n"})
    assert env.cpu_features() is None
    for system in ("darwin", "win32"):
        simulate(monkeypatch, system)
        assert env.cpu_features() is None


def test_transparent_hugepages_read_the_chosen_mode_of_each_file(monkeypatch) -> None:
    """The bracketed mode of enabled and defrag; a file without brackets is taken whole."""
    simulate(monkeypatch, "linux", files={THP + "enabled": "[always] madvise never\n", THP + "defrag": "  defer+madvise \n"})
    assert env.transparent_hugepages() == {"enabled": "always", "defrag": "defer+madvise"}
    simulate(monkeypatch, "linux")
    assert env.transparent_hugepages() == {"enabled": "madvise", "defrag": "madvise"}


def test_transparent_hugepages_keep_the_file_there_is_and_none_without_either(monkeypatch) -> None:
    """A missing file is left out; with neither (macOS, Windows) the answer is None."""
    simulate(monkeypatch, "linux", files={THP + "defrag": "always [never]\n"})
    assert env.transparent_hugepages() == {"defrag": "never"}
    simulate(monkeypatch, "linux", files={THP + "enabled": "always [madvise never\n"})  # no closing bracket: taken whole
    assert env.transparent_hugepages() == {"enabled": "always [madvise never"}
    simulate(monkeypatch, "darwin")
    assert env.transparent_hugepages() is None


# --- NUMA and PCI facts from sysfs -----------------------------------------------------------------


def test_a_numa_nodes_cpus_come_from_its_cpulist(monkeypatch) -> None:
    """numa_node_cpus reads node N's cpulist; None for a bad node, no file, an empty or garbled list."""
    simulate(monkeypatch, "linux", files={NODES + "/node0/cpulist": "0-1,4\n", NODES + "/node1/cpulist": "\n",
                                          NODES + "/node2/cpulist": "zero\n", NODES + "/node3/cpulist": "3\n"})  # fmt: skip
    assert env.numa_node_cpus(0) == [0, 1, 4]
    assert env.numa_node_cpus(3) == [3]
    assert [env.numa_node_cpus(n) for n in (1, 2, 4, -1, None, "0")] == [None] * 6


def test_a_pci_devices_numa_node_is_read_by_its_address(monkeypatch) -> None:
    """sysfs_numa_node reads /sys/bus/pci/devices/<dddd:bb:dd.f>/numa_node; -1, garbage or no file: None."""
    pci = "/sys/bus/pci/devices/"
    simulate(monkeypatch, "linux", files={pci + "0001:3b:00.1/numa_node": "1\n", pci + "0000:18:00.0/numa_node": "0\n",
                                          pci + "0000:28:00.0/numa_node": "-1\n", pci + "0000:38:00.0/numa_node": "x\n"})  # fmt: skip
    assert env.sysfs_numa_node("00000001:3B:00.1") == 1
    assert env.sysfs_numa_node("0000:18:00.0") == 0
    assert [env.sysfs_numa_node(b) for b in ("0000:28:00.0", "0000:38:00.0", "0000:48:00.0", None, "x")] == [None] * 5


def test_the_node_count_counts_only_node_folders(monkeypatch) -> None:
    """_node_count counts nodeN entries (not possible, online, has_cpu); 1 where there are none or no folder."""
    simulate(monkeypatch, "linux", files={NODES + f"/{n}/x": "" for n in ("node0", "node1", "node12", "nodes", "possible", "has_cpu")})
    assert env._node_count() == 3
    simulate(monkeypatch, "linux", folders=(NODES,), files={NODES + "/online": "0\n"})
    assert env._node_count() == 1
    simulate(monkeypatch, "win32")
    assert env._node_count() == 1


def test_pci_addresses_in_nvml_and_cuda_form_give_one_key() -> None:
    """pci_key parses hex domain:bus:device.function; anything else is None."""
    assert env.pci_key("00000000:3B:00.0") == env.pci_key(" 0000:3b:00.0\n") == (0, 0x3B, 0, 0)
    assert env.pci_key("0001:AF:1f.7") == (1, 0xAF, 0x1F, 7)
    assert [env.pci_key(x) for x in (None, "garbage", "0000:3b:00", "0000:3b:00.0.1", "0:0:3b:00.0", 5)] == [None] * 6


def test_nvmls_affinity_mask_is_read_bit_by_bit_word_by_word() -> None:
    """_mask_cpus: bit b of word i is CPU 64*i+b."""
    assert env._mask_cpus([0xF0, 1 | 1 << 63]) == [4, 5, 6, 7, 64, 127]
    assert env._mask_cpus(["3"]) == [0, 1]
    assert env._mask_cpus([]) == []


def test_a_reader_records_null_for_a_missing_or_failing_query_and_decodes_bytes() -> None:
    """_reader's read: None for no function or one that raises; bytes become text; arguments pass through."""
    read = env._reader()
    assert read(None, 1) is None
    assert read(lambda *a: (_ for _ in ()).throw(FakeNVMLError("Not Supported")), 1) is None
    assert read(lambda a, b: f"{a}-{b}".encode(), 1, 2) == "1-2"
    assert read(lambda: 7) == 7
    assert env._text(b"GPU-1") == "GPU-1" and env._text(3) == 3


# --- the host node nearest a GPU -------------------------------------------------------------------


def host_node(monkeypatch, nodes: list[int] | None, bus_id: Any = "00000000:3B:00.0", gpu_memory_node: Any = None,
              pci_node: str | None = None, binding: dict[str, Any] | None = None) -> tuple[dict[str, Any], list]:  # fmt: skip
    """_host_node on a machine whose NVML memory affinity names `nodes` (None: Not Supported)."""
    files = {NODES + "/node0/cpulist": "0-7\n", NODES + "/node1/cpulist": "8-15\n", NODES + "/node2/cpulist": "\n"}
    if pci_node is not None:
        files["/sys/bus/pci/devices/0000:3b:00.0/numa_node"] = pci_node + "\n"
    simulate(monkeypatch, "linux", files=files)
    asked: list = []

    def affinity(handle: Any, size: int, scope: int) -> list[int]:
        asked.append((handle, size, scope))
        if nodes is None:
            raise FakeNVMLError("Not Supported")
        return [sum(1 << n % 64 for n in nodes if n // 64 == word) for word in range(size)]

    pynvml = SimpleNamespace(**{"NVML_AFFINITY_SCOPE_NODE": 0, "nvmlDeviceGetMemoryAffinity": affinity, **(binding or {})})
    return env._host_node(pynvml, "handle", bus_id, gpu_memory_node, 2, env._reader()), asked


def test_the_host_node_is_nvmls_one_node_at_node_scope(monkeypatch) -> None:
    """One node in NVML's memory affinity (asked at node scope, with the mask size given) is the host node."""
    found, asked = host_node(monkeypatch, [1], pci_node="0")
    assert found == {"numa_node": 1, "numa_node_source": AFFINITY_SOURCE, "numa_node_reason": None}
    assert asked == [("handle", 2, 0)]


def test_a_binding_without_the_scope_constant_asks_at_node_scope(monkeypatch) -> None:
    """Without NVML_AFFINITY_SCOPE_NODE the scope is 0 (node); no memory-affinity call at all is no affinity."""
    found, asked = host_node(monkeypatch, [65], binding={"NVML_AFFINITY_SCOPE_NODE": 0})
    del_scope = SimpleNamespace(nvmlDeviceGetMemoryAffinity=lambda h, size, scope: asked.append(scope) or [2, 0])
    assert env._host_node(del_scope, 0, "x", None, 2, env._reader())["numa_node"] == 1
    assert asked[-1] == 0
    no_call = env._host_node(SimpleNamespace(), 0, "0000:3b:00.0", None, 1, env._reader())
    assert no_call == {"numa_node": None, "numa_node_source": None,
                       "numa_node_reason": "NVML gives no memory affinity, and the kernel gives no node for its PCI address"}  # fmt: skip
    assert found == {"numa_node": None, "numa_node_source": AFFINITY_SOURCE,
                     "numa_node_reason": "node 65 has no CPUs listed in sysfs (memory only): host buffers are not bound there"}  # fmt: skip


def test_several_nodes_or_none_from_nvml_fall_back_to_the_kernels_pci_facts(monkeypatch) -> None:
    """Two nodes from NVML, or Not Supported: the kernel's numa_node for the GPU's address is used."""
    assert host_node(monkeypatch, [0, 1], pci_node="0")[0] == {"numa_node": 0, "numa_node_source": KERNEL_SOURCE, "numa_node_reason": None}
    assert host_node(monkeypatch, None, pci_node="1")[0] == {"numa_node": 1, "numa_node_source": KERNEL_SOURCE, "numa_node_reason": None}
    assert host_node(monkeypatch, [], pci_node="1")[0] == {"numa_node": 1, "numa_node_source": KERNEL_SOURCE, "numa_node_reason": None}


def test_without_any_node_the_reason_names_what_nvml_and_the_kernel_gave(monkeypatch) -> None:
    """No node from either: why, naming NVML's nodes and whether there was an address to ask by."""
    assert host_node(monkeypatch, [0, 1], bus_id=None)[0] == {
        "numa_node": None, "numa_node_source": None,
        "numa_node_reason": "NVML's memory affinity names nodes 0, 1, and NVML gives no PCI address to ask the kernel by"}  # fmt: skip
    assert host_node(monkeypatch, None, pci_node="-1")[0] == {
        "numa_node": None, "numa_node_source": None,
        "numa_node_reason": "NVML gives no memory affinity, and the kernel gives no node for its PCI address"}  # fmt: skip


def test_a_node_holding_the_gpus_memory_or_no_cpus_is_never_the_host_node(monkeypatch) -> None:
    """The GPU's own memory node, or a node with no CPUs, is refused with why; another GPU memory node is not."""
    assert host_node(monkeypatch, [1], gpu_memory_node=1)[0] == {
        "numa_node": None, "numa_node_source": AFFINITY_SOURCE,
        "numa_node_reason": "node 1 holds the GPU's own memory: host buffers are not bound there"}  # fmt: skip
    assert host_node(monkeypatch, [2])[0] == {
        "numa_node": None, "numa_node_source": AFFINITY_SOURCE,
        "numa_node_reason": "node 2 has no CPUs listed in sysfs (memory only): host buffers are not bound there"}  # fmt: skip
    assert host_node(monkeypatch, [0], gpu_memory_node=2)[0] == {"numa_node": 0, "numa_node_source": AFFINITY_SOURCE, "numa_node_reason": None}
    assert host_node(monkeypatch, None, gpu_memory_node="1", pci_node="1")[0] == {
        "numa_node": 1, "numa_node_source": KERNEL_SOURCE, "numa_node_reason": None}  # fmt: skip


# --- NVML ------------------------------------------------------------------------------------------


def test_health_reads_replays_clocks_and_the_p_state(monkeypatch) -> None:
    """_health: replay counter, SM and memory clocks, "P<n>"; clock ids 1 and 2 where the binding has no names."""
    nvml = NodeNVML("n1", 1, "NVIDIA H100")
    assert env._health(nvml, 0, env._reader()) == {"pcie_replay_counter": 0, "clocks_mhz": {"sm": 1980, "memory": 2619}, "pstate": "P0"}
    bare = SimpleNamespace(nvmlDeviceGetClockInfo=lambda h, clock: {1: 1410, 2: 1593}[clock], nvmlDeviceGetPerformanceState=lambda h: 8)
    assert env._health(bare, 0, env._reader()) == {"pcie_replay_counter": None, "clocks_mhz": {"sm": 1410, "memory": 1593}, "pstate": "P8"}
    assert env._health(SimpleNamespace(), 0, env._reader()) == {"pcie_replay_counter": None, "clocks_mhz": {"sm": None, "memory": None}, "pstate": None}


@pytest.mark.parametrize("reader", ["nvml_info", "nvml_health"])
def test_without_nvml_the_reason_is_recorded(monkeypatch, reader) -> None:
    """No binding, or an NVML that cannot start: available False and why."""
    simulate(monkeypatch, "linux", nvml=None)
    assert getattr(env, reader)() == {"available": False, "reason": NO_NVML}
    simulate(monkeypatch, "linux", nvml=FakeNVML(init_error=FakeNVMLError("Driver Not Loaded")))
    assert getattr(env, reader)() == {"available": False, "reason": "NVML could not start: Driver Not Loaded"}


def test_health_after_a_run_lists_each_gpu_and_shuts_nvml_down(monkeypatch) -> None:
    """nvml_health: each GPU's uuid and health; a GPU that cannot be opened says why; NVML is shut down."""
    nvml = NodeNVML("n1", 3, "NVIDIA H100", replays=3)
    opened = nvml.nvmlDeviceGetHandleByIndex
    nvml.nvmlDeviceGetHandleByIndex = lambda i: opened(i) if i != 1 else (_ for _ in ()).throw(FakeNVMLError("No Permission"))
    simulate(monkeypatch, "linux", nvml=nvml)
    assert env.nvml_health() == {"available": True, "gpus": [
        {"index": 0, "uuid": "GPU-n1-0", "pcie_replay_counter": 3, "clocks_mhz": {"sm": 1980, "memory": 2619}, "pstate": "P0"},
        {"index": 1, "reason": "NVML could not open GPU 1: No Permission"},
        {"index": 2, "uuid": "GPU-n1-2", "pcie_replay_counter": 3, "clocks_mhz": {"sm": 1980, "memory": 2619}, "pstate": "P0"}]}  # fmt: skip
    assert nvml.shutdowns == 1
    nvml.nvmlDeviceGetCount = lambda: (_ for _ in ()).throw(FakeNVMLError("Unknown Error"))
    assert env.nvml_health() == {"available": True, "gpus": []}
    assert nvml.shutdowns == 2


def test_nvml_info_records_each_gpu_of_a_node(monkeypatch) -> None:
    """nvml_info: driver, CUDA version and every GPU's link, NUMA, affinity and health facts."""
    nvml = Recording("n1", 2, "NVIDIA H100 80GB HBM3")
    nvml.nvmlSystemGetCudaDriverVersion = lambda: 12080
    simulate(monkeypatch, "linux", nvml=nvml, cpu_count=lambda: 130)
    assert env.nvml_info() == {"available": True, "driver": "550.54", "cuda_driver": "12.8", "gpus": [node_gpu(0), node_gpu(1)]}
    assert nvml.asked == [("memory", 1, 0), ("cpu", 3, None)] * 2
    assert nvml.shutdowns == 1


def test_nvml_info_sizes_its_masks_by_the_cpu_and_node_counts(monkeypatch) -> None:
    """64 CPUs per affinity word (64 assumed where the count is unknown); 64 nodes per memory-affinity word."""
    nvml = Recording("n1", 1, "NVIDIA H100 80GB HBM3")
    nodes = {f"{NODES}/node{n}/cpulist": f"{n}\n" for n in range(64)}
    simulate(monkeypatch, "linux", nvml=nvml, files=nodes, cpu_count=lambda: None)
    gpu = env.nvml_info()["gpus"][0]
    assert nvml.asked == [("memory", 2, 0), ("cpu", 1, None)]
    assert (gpu["numa_node"], gpu["numa_cpus"]) == (0, [0])
    nvml.asked.clear()
    simulate(monkeypatch, "linux", nvml=nvml, cpu_count=lambda: 64)
    env.nvml_info()
    assert nvml.asked == [("memory", 1, 0), ("cpu", 1, None)]


def test_nvml_info_records_nulls_for_what_a_gpu_does_not_answer_and_goes_on_past_one_it_cannot_open(monkeypatch) -> None:
    """A GPU that cannot be opened gets index, null uuid and why; unanswered queries are null; the GPU's own
    memory node is kept where NVML gives one (0 included), never a negative one."""
    nvml = FakeNVML(gpus=3, gpu_memory_node=0, memory_node=None, gpu_gen_max=5)
    opened = nvml.nvmlDeviceGetHandleByIndex
    nvml.nvmlDeviceGetHandleByIndex = lambda i: (_ for _ in ()).throw(FakeNVMLError("GPU is lost")) if i == 1 else opened(i)
    nvml.nvmlSystemGetCudaDriverVersion = lambda: (_ for _ in ()).throw(FakeNVMLError("Not Supported"))
    nvml.nvmlSystemGetDriverVersion = lambda: b"580.65.06"
    simulate(monkeypatch, "linux", nvml=nvml)
    bare = {"name": "NVIDIA H100", "uuid": "GPU-11111111-2222-3333-4444-555555555555", "pci_bus_id": None, "memory_bytes": None,
            "pcie_gen_current": 4, "pcie_width_current": 16, "pcie_gen_max": 4, "pcie_width_max": 16, "pcie_gen_gpu_max": 5,
            "numa_node": None, "numa_node_source": None,
            "numa_node_reason": "NVML gives no memory affinity, and NVML gives no PCI address to ask the kernel by",
            "gpu_memory_numa_node": 0, "cpu_affinity": [4, 5, 6, 7], "numa_cpus": None,
            "pcie_replay_counter": None, "clocks_mhz": {"sm": None, "memory": None}, "pstate": None, "c2c": NO_C2C}  # fmt: skip
    assert env.nvml_info() == {"available": True, "driver": "580.65.06", "cuda_driver": None, "gpus": [
        {"index": 0, **bare}, {"index": 1, "uuid": None, "reason": "NVML could not open GPU 1: GPU is lost"}, {"index": 2, **bare}]}  # fmt: skip
    nvml.gpu_memory_node = -1
    nvml.nvmlSystemGetCudaDriverVersion = lambda: 13000
    info = env.nvml_info()
    assert (info["cuda_driver"], info["gpus"][0]["gpu_memory_numa_node"]) == ("13.0", None)
    nvml.nvmlDeviceGetCount = lambda: (_ for _ in ()).throw(FakeNVMLError("Unknown Error"))
    assert env.nvml_info() == {"available": True, "driver": "580.65.06", "cuda_driver": "13.0", "gpus": []}
    assert nvml.shutdowns == 3


def test_nvml_info_refuses_the_gpus_memory_node_as_the_host_node_and_the_kernel_answers_by_address(monkeypatch) -> None:
    """A Grace Hopper's GPU memory node is never the host node; sysfs gives the node by the GPU's address."""
    nvml = NodeNVML("gh", 1, "NVIDIA GH200 480GB")
    nvml.memory_node, nvml.gpu_memory_node = None, 1
    files = {**LINUX_FILES, "/sys/bus/pci/devices/0000:18:00.0/numa_node": "1\n"}
    simulate(monkeypatch, "linux", nvml=nvml, files=files)
    assert env.nvml_info()["gpus"][0] == node_gpu(0, "gh", name="NVIDIA GH200 480GB", numa_node=None, numa_node_source=KERNEL_SOURCE,
                                                  numa_node_reason="node 1 holds the GPU's own memory: host buffers are not bound there",
                                                  gpu_memory_numa_node=1, numa_cpus=None)  # fmt: skip


# --- finding GPUs without a framework --------------------------------------------------------------


def test_nvidia_gpus_are_found_by_the_drivers_proc_entries(monkeypatch) -> None:
    """Entries under /proc/driver/nvidia/gpus: cuda, without asking NVML."""
    simulate(monkeypatch, "linux", files={"/proc/driver/nvidia/gpus/0000:18:00.0/information": "Model: H100\n"},
             nvml=FakeNVML(init_error=FakeNVMLError("must not be asked")))  # fmt: skip
    assert env.accelerator_kinds() == ["cuda"]


@pytest.mark.parametrize(("count", "kinds"), [(1, ["cuda"]), (0, [])])
def test_without_proc_entries_nvml_counts_the_gpus_and_is_shut_down(monkeypatch, count, kinds) -> None:
    """An empty or missing /proc entry: NVML's count decides, and NVML is shut down either way."""
    nvml = FakeNVML(gpus=count)
    simulate(monkeypatch, "win32", nvml=nvml, folders=("/proc/driver/nvidia/gpus",))
    assert env.accelerator_kinds() == kinds
    assert nvml.shutdowns == 1
    simulate(monkeypatch, "linux", nvml=nvml, folders=("/proc/driver/nvidia/gpus",))
    assert env.accelerator_kinds() == kinds


@pytest.mark.parametrize(("count", "kinds"), [(2, ["cuda"]), (0, [])])
def test_proc_entries_the_process_may_not_list_leave_it_to_nvml(monkeypatch, count, kinds) -> None:
    """A container that hides the driver's entries (listing them is refused): NVML is asked, and its count decides."""
    simulate(monkeypatch, "linux", nvml=FakeNVML(gpus=count), folders=("/proc/driver/nvidia/gpus",))

    def refuse(path: str) -> list[str]:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(env.os, "listdir", refuse)
    assert env.accelerator_kinds() == kinds


def test_no_driver_or_binding_means_no_nvidia_gpu(monkeypatch) -> None:
    """NVML failing to start, or no binding: no cuda."""
    simulate(monkeypatch, "linux", nvml=FakeNVML(init_error=FakeNVMLError("Driver Not Loaded")))
    assert env.accelerator_kinds() == []
    simulate(monkeypatch, "linux", nvml=None)
    assert env.accelerator_kinds() == []


def test_a_mac_has_mps_on_apple_silicon_only_and_never_asks_nvml(monkeypatch) -> None:
    """Apple silicon: mps; an Intel Mac: nothing; NVML is not asked on macOS."""
    m = simulate(monkeypatch, "darwin", nvml=FakeNVML(gpus=1))
    assert env.accelerator_kinds() == ["mps"]
    m.platform.machine = lambda: "x86_64"
    assert env.accelerator_kinds() == []
    simulate(monkeypatch, "linux", nvml=FakeNVML(gpus=0)).platform.machine = lambda: "arm64"
    assert env.accelerator_kinds() == []


# --- devices and NVML's facts ----------------------------------------------------------------------


def test_devices_take_their_nvml_facts_by_uuid_then_by_pci_address() -> None:
    """_attach_nvml matches by UUID (with or without "GPU-"), else by PCI address, never by index."""
    nvml = {"driver": "550.54", "cuda_driver": "12.4", "gpus": [
        {"index": 0, "uuid": "GPU-aaaa", "pci_bus_id": "00000000:18:00.0"},
        {"index": 1, "uuid": "bbbb", "pci_bus_id": "00000000:28:00.0"},
        {"index": 2, "uuid": None, "pci_bus_id": None}]}  # fmt: skip
    devices = [{"id": "cuda:0", "uuid": "bbbb"}, {"id": "cuda:1", "uuid": "GPU-cccc", "pci_bus_id": "0000:18:00.0"},
               {"id": "cuda:2", "uuid": "aaaa"}, {"id": "cuda:3", "uuid": "GPU-bbbb"}, {"id": "cuda:4"},
               {"id": "cuda:5", "uuid": "None", "pci_bus_id": "garbage"}]  # fmt: skip
    env._attach_nvml(devices, nvml)
    gpus = nvml["gpus"]
    facts = {"driver": "550.54", "cuda_driver": "12.4"}
    assert devices == [{"id": "cuda:0", "uuid": "bbbb", "nvml": gpus[1], **facts},
                       {"id": "cuda:1", "uuid": "GPU-cccc", "pci_bus_id": "0000:18:00.0", "nvml": gpus[0], **facts},
                       {"id": "cuda:2", "uuid": "aaaa", "nvml": gpus[0], **facts}, {"id": "cuda:3", "uuid": "GPU-bbbb", "nvml": gpus[1], **facts},
                       {"id": "cuda:4"}, {"id": "cuda:5", "uuid": "None", "pci_bus_id": "garbage"}]  # fmt: skip
    unavailable = [{"id": "cuda:0", "uuid": "GPU-aaaa"}]
    env._attach_nvml(unavailable, {"available": False, "reason": NO_NVML})
    assert unavailable == [{"id": "cuda:0", "uuid": "GPU-aaaa"}]


def test_only_the_named_settings_are_recorded_in_name_order(monkeypatch) -> None:
    """settings: the listed variables that are set, sorted by name; others (tokens, paths) never."""
    simulate(monkeypatch, environ={"XLA_FLAGS": "--x", "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1", "HF_TOKEN": "secret",
                                   "CUDA_VISIBLE_DEVICES": "1", "TF_SECRET": "t"})  # fmt: skip
    assert list(env.settings().items()) == [("CUDA_VISIBLE_DEVICES", "1"), ("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1"), ("XLA_FLAGS", "--x")]


# --- the whole capture -----------------------------------------------------------------------------


def test_capture_on_a_linux_gpu_node_records_everything_once(monkeypatch) -> None:
    """capture: host, OS, CPU, limits, settings, versions; each device once as first described, filled
    in from later frameworks; a framework with nothing to say is left out; CUDA devices get NVML facts."""
    nvml = Recording("n1", 1, "NVIDIA H100 80GB HBM3")
    simulate(monkeypatch, "linux", nvml=nvml, environ={"XFERBENCH_HOST": "rack-3", "OMP_NUM_THREADS": "4"},
             packages={"numpy": "2.1.0", "torch": "2.5.1"})  # fmt: skip
    frameworks = {
        "torch": {"version": "2.5.1", "devices": [{"id": "cuda:0", "kind": "cuda", "name": "NVIDIA H100", "uuid": None, "capability": "9.0"}]},
        "jax": {},
        "cupy": {"version": "13.3.0"},
        "tensorflow": {"version": "2.17.0", "cuda": "12.3", "devices": [
            {"id": "cuda:0", "kind": "cuda", "name": "/physical_device:GPU:0", "uuid": "GPU-n1-0", "capability": "8.0", "memory_bytes": None},
            {"id": "cpu", "kind": "cpu", "name": "tf's cpu", "cores": 16}]},
    }  # fmt: skip
    captured = env.capture(frameworks)
    cpu_name = "AMD EPYC 7B13 64-Core Processor"
    facts = node_gpu(0, name="NVIDIA H100 80GB HBM3")
    assert captured == {
        "host": "rack-3", "os": "Linux-6.8.0-x86_64-with-glibc2.39", "macos": None, "machine": "x86_64", "cpu": cpu_name,
        "cpu_count": 16, "cpu_features": NO_ONEDNN_FEATURES, "process_cpus": [0, 1, 2, 3], "unavailable_checks": [],
        "load_average": [1.23, 0.5, 0.13],
        "transparent_hugepages": {"enabled": "madvise", "defrag": "madvise"}, "memory_bytes": 4_000_000 * 4096,
        "python": "3.12.3", "python_implementation": "CPython", "settings": {"OMP_NUM_THREADS": "4"},
        "versions": {"numpy": "2.1.0", "torch": "2.5.1"},
        "frameworks": {"torch": {"version": "2.5.1"}, "cupy": {"version": "13.3.0"}, "tensorflow": {"version": "2.17.0", "cuda": "12.3"}},
        "devices": [{"id": "cpu", "kind": "cpu", "name": cpu_name, "cores": 16},
                    {"id": "cuda:0", "kind": "cuda", "name": "NVIDIA H100", "uuid": "GPU-n1-0", "capability": "9.0",
                     "nvml": facts, "driver": "550.54", "cuda_driver": "12.4", "vendor": "NVIDIA", "runtime": "CUDA 12.4", "host_link": "PCIe"}],
        "nvml": {"available": True, "driver": "550.54", "cuda_driver": "12.4", "gpus": [facts]},
    }  # fmt: skip
    assert list(captured) == ["host", "os", "macos", "machine", "cpu", "cpu_count", "cpu_features", "process_cpus", "unavailable_checks",
                              "load_average", "transparent_hugepages", "memory_bytes", "python", "python_implementation",
                              "settings", "versions", "frameworks", "devices", "nvml"]  # fmt: skip
    assert frameworks["torch"]["devices"][0]["uuid"] is None  # the framework's own description is left as it was


def test_capture_on_a_mac_names_the_apple_gpu_from_macos(monkeypatch) -> None:
    """On macOS the MPS device is described by mps_device over the framework's words; NVML is not installed."""
    simulate(monkeypatch, "darwin", tools=MAC_TOOLS, nvml=None)
    captured = env.capture({"torch": {"version": "2.6.0", "devices": [{"id": "mps", "kind": "mps", "name": "mps", "memory_bytes": None, "api": "torch.mps"}]}})
    assert captured["devices"] == [{"id": "cpu", "kind": "cpu", "name": "Apple M1 Pro"},
                                   {"id": "mps", "kind": "mps", "name": "Apple M1 Pro (16-core GPU)", "memory_bytes": 17179869184, "api": "torch.mps",
                                    "chip": "Apple M1 Pro", "gpu_cores": 16, "gpu_cores_source": IOREG_SOURCE, "unified_memory": True,
                                    "vendor": "Apple", "runtime": "Metal", "host_link": "unified memory"}]  # fmt: skip
    assert {k: captured[k] for k in ("host", "os", "macos", "machine", "cpu", "cpu_features", "process_cpus", "unavailable_checks", "load_average",
                                     "transparent_hugepages", "memory_bytes", "nvml", "frameworks")} == {
        "host": "mac-1", "os": "macOS-14.5-arm64-arm-64bit", "macos": "14.5", "machine": "arm64", "cpu": "Apple M1 Pro",
        "cpu_features": None, "process_cpus": None, "unavailable_checks": [BUSY, NO_AFFINITY, MAC_MEMORY], "load_average": [1.23, 0.5, 0.13],
        "transparent_hugepages": None, "memory_bytes": 17179869184, "nvml": {"available": False, "reason": NO_NVML},
        "frameworks": {"torch": {"version": "2.6.0"}}}  # fmt: skip


def test_capture_on_windows_records_what_windows_gives(monkeypatch) -> None:
    """Windows: no affinity, load or sysconf; the CPU from platform.processor; no frameworks given."""
    simulate(monkeypatch, "win32", nvml=None, environ={"XFERBENCH_HOST": ""})
    captured = env.capture()
    cpu = "Intel64 Family 6 Model 85 Stepping 7, GenuineIntel"
    assert captured == {
        "host": "win-1", "os": "Windows-11-10.0.22631-SP0", "macos": None, "machine": "AMD64", "cpu": cpu, "cpu_count": 16,
        "cpu_features": None, "process_cpus": None, "unavailable_checks": [BUSY, NO_AFFINITY], "load_average": None, "transparent_hugepages": None,
        "memory_bytes": None, "python": "3.12.3", "python_implementation": "CPython", "settings": {}, "versions": {},
        "frameworks": {}, "devices": [{"id": "cpu", "kind": "cpu", "name": cpu}], "nvml": {"available": False, "reason": NO_NVML},
    }  # fmt: skip


# --- the link's ceiling ----------------------------------------------------------------------------


def test_a_device_entry_is_found_by_id_or_empty() -> None:
    """device_entry: the device with that id, else {} (also where there are no devices)."""
    environment = {"devices": [{"id": "cpu"}, {"name": "no id"}, {"id": "cuda:0", "n": 1}, {"id": "cuda:0", "n": 2}]}
    assert env.device_entry(environment, "cuda:0") == {"id": "cuda:0", "n": 1}
    assert env.device_entry(environment, "mps") == {}
    assert env.device_entry({}, "cpu") == {}


def test_link_readings_put_the_link_under_load_first_then_the_maximums() -> None:
    """Under load (highest of each), the system maximum, the GPU's maximum with the system's width;
    a series' samples over NVML's facts; unknown generations and zero widths dropped."""
    nvml = {"nvml": {"pcie_gen_max": 4, "pcie_width_max": 8, "pcie_gen_gpu_max": 5}}
    link = {"summary": {"gen_under_load": [3, 4], "width_under_load": [8, 16]}}
    assert env.link_readings(nvml, link) == [(env.UNDER_LOAD, 4, 16), (env.SYSTEM_MAX, 4, 8), (env.GPU_MAX, 5, 8)]
    samples = {"pcie_gen_max": 5, "pcie_width_max": 16, "pcie_gen_gpu_max": 6, "summary": {"gen_under_load": [1, 7], "width_under_load": [16, 16]}}
    assert env.link_readings(nvml, samples) == [(env.SYSTEM_MAX, 5, 16), (env.GPU_MAX, 6, 16)]
    zero = {"summary": {"gen_under_load": [4, 4], "width_under_load": [0, 0]}}
    assert env.link_readings({}, zero) == []
    assert env.link_readings({"nvml": {"pcie_gen_max": 4, "pcie_gen_gpu_max": 5}}) == []
    assert env.link_readings({"nvml": None}, {"summary": None}) == []
    assert env.link_readings({"nvml": {"pcie_gen_max": 4, "pcie_width_max": 16}}, {"summary": {"gen_under_load": [4, 4]}}) == [(env.SYSTEM_MAX, 4, 16)]


def test_the_ceiling_is_the_best_reading_and_names_the_others_and_the_idle_one() -> None:
    """pcie_ceiling's rate and label: disagreeing readings named; an idle reading named unless the
    figure came from the link under load."""
    device = {"nvml": {"pcie_gen_max": 4, "pcie_width_max": 16, "pcie_gen_gpu_max": 5, "pcie_gen_current": 1, "pcie_width_current": 16}}
    assert env.pcie_ceiling(device) == (31.5, "PCIe Gen4 x16 theoretical (31.5 GB/s, system maximum); NVML also reads GPU maximum Gen5 x16;"
                                              " read Gen1 x16 before the run")  # fmt: skip
    loaded = {"summary": {"gen_under_load": [5, 5], "width_under_load": [16, 16]}}
    assert env.pcie_ceiling(device, loaded) == (63.0, "PCIe Gen5 x16 theoretical (63.0 GB/s, under load); NVML also reads system maximum Gen4 x16")
    same = {"nvml": {"pcie_gen_max": 3, "pcie_width_max": 8, "pcie_gen_gpu_max": 3, "pcie_gen_current": 3, "pcie_width_current": 8}}
    assert env.pcie_ceiling(same) == (7.875, "PCIe Gen3 x8 theoretical (7.9 GB/s, system maximum)")
    unknown = {"nvml": {"pcie_gen_max": 2, "pcie_width_max": 4, "pcie_gen_current": None, "pcie_width_current": 4}}
    assert env.pcie_ceiling(unknown) == (2.0, "PCIe Gen2 x4 theoretical (2.0 GB/s, system maximum)")
    three = {"summary": {"gen_under_load": [3, 3], "width_under_load": [16, 16]}}
    assert env.pcie_ceiling(device, three) == (15.75, "PCIe Gen3 x16 theoretical (15.8 GB/s, under load);"
                                                      " NVML also reads system maximum Gen4 x16, GPU maximum Gen5 x16")  # fmt: skip
    assert env.pcie_ceiling({}) is None
    assert env.lane_rate(6, 4) == 30.25


def test_a_figure_above_the_ceiling_that_another_reading_allows_is_a_disagreement_of_link_facts() -> None:
    """link_disagreement: None within the ceiling (to the MB/s) or where no reading allows it; else it
    names the first reading that allows it."""
    device = {"nvml": {"pcie_gen_max": 3, "pcie_width_max": 16, "pcie_gen_gpu_max": 5}}
    assert env.link_disagreement(15_750.0, device) is None
    assert env.link_disagreement(63_000.0, device) == (
        "link facts disagree: 63,000 MB/s exceeds Gen3 x16 (15.8 GB/s, system maximum) but fits the GPU maximum, Gen5 x16"
        " (63.0 GB/s); in a virtual machine the virtual root port may advertise less than the GPU's link")  # fmt: skip
    assert env.link_disagreement(63_001.0, device) is None
    assert env.link_disagreement(15_751.0, device).startswith("link facts disagree: 15,751 MB/s exceeds Gen3 x16")
    assert env.link_disagreement(20_000.0, {}) is None
    two = {"nvml": {"pcie_gen_max": 3, "pcie_width_max": 16, "pcie_gen_gpu_max": 4}}
    loaded = {"summary": {"gen_under_load": [2, 2], "width_under_load": [16, 16]}}
    assert env.link_disagreement(10_000.0, two, loaded).startswith(
        "link facts disagree: 10,000 MB/s exceeds Gen2 x16 (8.0 GB/s, under load) but fits the system maximum, Gen3 x16 (15.8 GB/s)")


class OlderBinding:
    """An nvidia-ml-py from before the NUMA, CPU-affinity and GPU-maximum queries: those names are missing."""

    MISSING = ("nvmlDeviceGetNumaNodeId", "nvmlDeviceGetCpuAffinity", "nvmlDeviceGetGpuMaxPcieLinkGeneration", "nvmlDeviceGetMemoryAffinity",
               "nvmlDeviceGetC2cModeInfoV")

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name in self.MISSING:
            raise AttributeError(f"module 'pynvml' has no attribute '{name}'")
        return getattr(self.inner, name)


def test_an_older_binding_without_the_newer_queries_records_them_as_null(monkeypatch) -> None:
    """Queries a binding lacks are null; the host node then comes from sysfs."""
    files = {**LINUX_FILES, "/sys/bus/pci/devices/0000:18:00.0/numa_node": "1\n"}
    simulate(monkeypatch, "linux", nvml=OlderBinding(NodeNVML("n1", 1, "NVIDIA A100-SXM4-40GB")), files=files)
    assert env.nvml_info()["gpus"] == [node_gpu(0, name="NVIDIA A100-SXM4-40GB", numa_node=1, numa_node_source=KERNEL_SOURCE,
                                                cpu_affinity=None, numa_cpus=list(range(8, 16)),
                                                c2c={**NO_C2C, "mode_error": "this nvidia-ml-py has no nvmlDeviceGetC2cModeInfoV"})]  # fmt: skip
