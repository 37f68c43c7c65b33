"""What `report` and `compare` say about two result files: which series pair, what each copy is called,
and every recorded field a difference between the files is looked for in, with its exact text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_pairing import ENV, curve

from xferbench.core.environment import SETTINGS
from xferbench.core.results import Result, Series
from xferbench.core.spec import BIDIRECTIONAL, D2H, DEVICE_TO_HOST, HOST_TO_DEVICE, HOST_TO_HOST, SIMULATED
from xferbench.reading.compare import difference_lines
from xferbench.reading.pairs import copy_kind, differences, distinct_parts, facts, file_names, framework_version, pair, placement, tags

H200 = {"id": "cuda:0", "kind": "cuda", "name": "NVIDIA H200", "driver": "580.159.04", "cuda_driver": "13.0"}
GPU_ENV: dict[str, Any] = {
    "host": "vm", "os": "Linux-6.18.44-fc-v657-gpu-x86_64-with-glibc2.39", "macos": None, "cpu": "Intel(R) Xeon(R) Processor",
    "cpu_count": 16, "memory_bytes": 135148564480, "python": "3.12.3", "process_cpus": list(range(16)),
    "settings": {"NVIDIA_VISIBLE_DEVICES": "0"}, "versions": {"numpy": "2.5.2", "torch": "2.11.0"},
    "frameworks": {"cuda": {"version": "14.2.0", "python": "3.12.3"},
                   "torch": {"version": "2.11.0+cu130", "cuda": "13.0", "python": "3.12.3"},
                   "tensorflow": {"version": "2.21.0", "cuda_build": "12.5.1", "onednn": False, "python": "3.11.9"}},
    "devices": [{"id": "cpu", "kind": "cpu", "name": "Intel(R) Xeon(R) Processor"}, H200],
}  # fmt: skip
TIMING = {"warmup_calls": 5, "warmup_s": 0.05, "min_samples": 10, "min_time_s": 0.25, "max_samples": 1000, "max_time_s": 10.0,
          "settle_s": 1.0}  # fmt: skip
LINK = {"source": "nvml", "summary": {"samples": 24, "loaded_samples": 14, "gen_under_load": [4, 5], "width_under_load": [8, 16]}}
BOUND = {"requested": {"cpus": list(range(16)), "node": 0}, "cpus": list(range(16)), "node": 0,
         "how": "sched_setaffinity on every thread; set_mempolicy(MPOL_PREFERRED, node 0)", "reason": None}  # fmt: skip


def gpu(framework: str, mode: str, device: str = "cuda:0", transfer: str | None = HOST_TO_DEVICE, **fields: Any) -> Series:
    """A series measured on a GPU, as a CUDA sweep records it."""
    series = curve(framework, mode, {4: 1e4}, device=device)
    series.device_name, series.transfer = "NVIDIA H200", transfer
    for name, value in fields.items():
        setattr(series, name, value)
    return series


def kind(device: str, transfer: str | None, **params: Any) -> str:
    series = curve("torch", "pinned", {4: 1e4}, device=device)
    series.transfer, series.params = transfer, params
    return copy_kind(series)


def test_each_kind_of_copy_is_named_in_words() -> None:
    """A pair's members say what one call moves: simulated, unified memory, host copy, which way over PCIe."""
    assert kind("sim", SIMULATED) == "a simulated link (no data moves)"
    assert kind("sim:1", None) == "a simulated link (no data moves)"  # a file that does not record the transfer
    assert kind("mps", HOST_TO_DEVICE, unified_memory=False) == "a transfer to an Intel Mac's GPU (MPS)"
    assert kind("mps", HOST_TO_DEVICE, unified_memory=True) == "a copy within unified memory (Apple GPU, MPS)"
    assert kind("cpu", HOST_TO_HOST) == "a host-to-host copy (CPU, no GPU)"
    assert kind("cpu", None) == "a host-to-host copy (CPU, no GPU)"
    assert kind("cuda:0", HOST_TO_DEVICE) == "a host-to-device transfer over the GPU's link (CUDA)"
    assert kind("cuda:1", DEVICE_TO_HOST) == "a device-to-host transfer over the GPU's link (CUDA)"
    assert kind("cuda:0", BIDIRECTIONAL) == "a bidirectional transfer over the GPU's link (CUDA)"
    assert kind("cuda:0", None) == "a host-to-device transfer over the GPU's link (CUDA)"
    # a device xferbench has no words for: the recorded transfer, or just "transfer"
    assert kind("xpu:0", HOST_TO_DEVICE) == "a host-to-device on xpu"
    assert kind("xpu:0", None) == "a transfer on xpu"


def test_one_path_on_several_gpus_pairs_each_device_once_and_names_both() -> None:
    """With no device id in common, each series takes the first counterpart left, and the name shows the devices."""
    a = [gpu("torch", "pinned", "cuda:0"), gpu("torch", "pinned", "cuda:1")]
    b = [gpu("torch", "pinned", "cuda:2"), gpu("torch", "pinned", "cuda:3")]
    found = pair([a, b])
    assert [(p.name, [m.device if m else None for m in p.members], p.paired) for p in found] == [
        ("torch/pinned/copy@cuda:0→cuda:2", ["cuda:0", "cuda:2"], True),
        ("torch/pinned/copy@cuda:1→cuda:3", ["cuda:1", "cuda:3"], True)]  # fmt: skip


def test_placement_says_the_binding_or_why_there_was_none() -> None:
    """NUMA binding: the CPUs, the preferred node (node 0 included), and the kernel's refusal."""
    assert placement(gpu("torch", "pinned", numa=BOUND)) == "bound to CPUs 0-15, memory preferred on NUMA node 0"
    refused = "the kernel refused set_mempolicy(MPOL_PREFERRED, node 1): Operation not permitted"
    half = {"requested": {"cpus": [0, 1, 2, 3, 8], "node": 1}, "cpus": [0, 1, 2, 3, 8], "node": None, "reason": refused}
    assert placement(gpu("torch", "pinned", numa=half)) == f"bound to CPUs 0-3,8 ({refused})"
    unbound = {"requested": {"cpus": [0, 1], "node": None}, "cpus": None, "node": None, "reason": "CPU affinity cannot be set on macOS"}
    assert placement(gpu("torch", "pinned", numa=unbound)) == "CPU affinity cannot be set on macOS"
    assert placement(gpu("torch", "pinned", numa={})) is None


def test_a_framework_in_another_python_names_that_python() -> None:
    """A framework run by another interpreter than the run's own says which: its copies may differ by it."""
    assert framework_version(GPU_ENV, "tensorflow") == "2.21.0 (built with CUDA 12.5.1), oneDNN off, Python 3.11.9"
    assert framework_version(GPU_ENV, "torch") == "2.11.0+cu130 (built with CUDA 13.0)"  # the run's own Python: not named
    assert framework_version(GPU_ENV, "jax") == "—"


def test_a_gpu_run_records_every_field_in_a_fixed_order() -> None:
    """Every field a GPU run is compared by, with its exact text, in the order the differences list them."""
    d2h = gpu("cuda", "raw_pinned", transfer=DEVICE_TO_HOST, direction=D2H, link=LINK, numa=BOUND)
    h2d = gpu("torch", "pinned", link={}, numa=BOUND)
    result = Result(GPU_ENV, {"timing": TIMING}, "x", [d2h, h2d], "complete", xferbench_version="0.1.0")
    found = facts(result, result.series)
    assert {name: found.pop(name) for name in SETTINGS} == {name: "0" if name == "NVIDIA_VISIBLE_DEVICES" else "unset"
                                                             for name in SETTINGS}  # fmt: skip
    assert list(found.items()) == [
        ("what is copied", "a device-to-host transfer over the GPU's link (CUDA); a host-to-device transfer over the GPU's link (CUDA)"),
        ("device", "NVIDIA H200"), ("driver", "580.159.04"), ("CUDA (driver)", "13.0"),
        # NVML described it, so NVIDIA's; the file records no machine, so no link is derived: unknown, never PCIe by default
        ("vendor", "NVIDIA"), ("runtime", "CUDA 13.0"), ("host link", "unknown"), ("PCIe link under load", "Gen5 x16"),
        ("NUMA binding", "bound to CPUs 0-15, memory preferred on NUMA node 0"), ("DataLoader workers", "—"),
        ("source before each call", "back to back (no eviction between calls)"),
        ("host staging chunk", "—"),
        ("GPU cores", "—"),
        ("CPU", "Intel(R) Xeon(R) Processor (16 logical CPUs)"), ("CPU features that turn oneDNN on", "—"),
        ("transparent huge pages", "—"), ("memory", "126 GiB"), ("macOS", "—"), ("process CPUs", "0-15"),
        ("OS", "Linux-6.18.44-fc-v657-gpu-x86_64-with-glibc2.39"), ("Python", "3.12.3"), ("cuda", "14.2.0"),
        ("torch", "2.11.0+cu130 (built with CUDA 13.0)"),
        ("tensorflow", "2.21.0 (built with CUDA 12.5.1), oneDNN off, Python 3.11.9"), ("numpy", "2.5.2"),
        ("host", "vm"), ("xferbench", "0.1.0"), ("clock", "time.perf_counter"),
        ("sampling", "5 warm-up calls; 10–1000 samples in 0.25–10.0 s")]  # fmt: skip


def test_a_file_that_records_little_says_so_field_by_field() -> None:
    """What a file leaves out reads "—", never blank; a CPU without its count is named alone."""
    series = curve("host", "numpy", {4: 1e4})
    series.device_name, series.transfer, series.clock = None, None, None
    result = Result({"cpu": "AMD EPYC"}, {}, "x", [series])
    found = facts(result, result.series)
    assert found["what is copied"] == "a host-to-host copy (CPU, no GPU)" and found["device"] == "cpu"
    assert found["CPU"] == "AMD EPYC" and found["source before each call"] == "back to back (no eviction between calls)"
    assert {name: value for name, value in found.items() if name not in ("what is copied", "device", "CPU", "source before each call")} == \
        {name: "—" for name in ["driver", "CUDA (driver)", "vendor", "runtime", "host link", "PCIe link under load", "NUMA binding", "DataLoader workers", "host staging chunk", "GPU cores",
                                "CPU features that turn oneDNN on", "transparent huge pages", "memory", "macOS", "process CPUs", "OS", "Python", "numpy", *SETTINGS, "host", "xferbench",
                                "clock", "sampling"]}  # fmt: skip


def test_the_sampling_settings_read_as_one_line() -> None:
    """A setting the file lacks reads "?"; no timing at all reads "—"."""
    series = [curve("host", "numpy", {4: 1e4})]

    def sampling(config: dict[str, Any]) -> str:
        return facts(Result(ENV, config, "x", series), series)["sampling"]

    assert sampling({"timing": TIMING}) == "5 warm-up calls; 10–1000 samples in 0.25–10.0 s"
    assert sampling({"timing": {"warmup_s": 0.05}}) == "? warm-up calls; ?–? samples in ?–? s"
    assert sampling({"timing": {}}) == "—" and sampling({}) == "—"


def test_a_link_needs_both_its_generation_and_width_under_load() -> None:
    """The link under load is the highest generation and width sampled; half a reading is no reading."""
    def link(record: dict[str, Any]) -> str:
        series = [gpu("torch", "pinned", link=record)]
        return facts(Result(GPU_ENV, {}, "x", series), series)["PCIe link under load"]

    assert link(LINK) == "Gen5 x16"
    assert link({"source": "nvml", "summary": {"gen_under_load": [4, 5]}}) == "—"
    assert link({"source": "nvml", "summary": {"width_under_load": [8, 16]}}) == "—"
    assert link({"source": "nvml", "reason": "NVML is not installed"}) == "—" and link({}) == "—"


def test_two_gpu_runs_name_each_difference_in_compare_and_in_the_legend() -> None:
    """compare's "what differs" lines, field by field, and the legend's tags: a copy kind bare, cut at 48 characters."""
    base = Result(GPU_ENV, {"timing": TIMING}, "x", [gpu("torch", "pinned", link=LINK, numa=BOUND)], xferbench_version="0.1.0")
    slow = {"source": "nvml", "summary": {"gen_under_load": [1, 4], "width_under_load": [16, 16]}}
    unbound = {"cpus": None, "node": None, "reason": "CPU affinity cannot be set on Windows"}
    other_env = {**GPU_ENV, "os": "Linux-6.1.0-28-cloud-amd64-x86_64-with-glibc2.36", "cpu_count": 8, "process_cpus": [0, 1, 2, 3],
               "python": "3.11.9", "versions": {"numpy": "1.26.4"}, "host": "ci-2", "devices": [{**H200, "cuda_driver": "12.4"}]}  # fmt: skip
    new = Result(other_env, {"timing": {**TIMING, "min_samples": 20}}, "x",
                 [gpu("torch", "pinned", transfer=BIDIRECTIONAL, link=slow, numa=unbound, clock="cudaEvent")], xferbench_version="0.2.0")  # fmt: skip
    found = differences([(base, base.series), (new, new.series)])
    assert difference_lines(found, most=20) == [
        "what differs: what is copied: a host-to-device transfer over the GPU's link (CUDA) → a bidirectional transfer over the GPU's link (CUDA)",
        "what differs: CUDA (driver): 13.0 → 12.4",
        "what differs: PCIe link under load: Gen5 x16 → Gen4 x16",
        "what differs: NUMA binding: bound to CPUs 0-15, memory preferred on NUMA node 0 → CPU affinity cannot be set on Windows",
        "what differs: CPU: Intel(R) Xeon(R) Processor (16 logical CPUs) → Intel(R) Xeon(R) Processor (8 logical CPUs)",
        "what differs: process CPUs: 0-15 → 0-3",
        "what differs: OS: Linux-6.18.44-fc-v657-gpu-x86_64-with-glibc2.39 → Linux-6.1.0-28-cloud-amd64-x86_64-with-glibc2.36",
        "what differs: Python: 3.12.3 → 3.11.9",
        "what differs: cuda: 14.2.0 → 14.2.0, Python 3.12.3",
        "what differs: torch: 2.11.0+cu130 (built with CUDA 13.0) → 2.11.0+cu130 (built with CUDA 13.0), Python 3.12.3",
        "what differs: tensorflow: 2.21.0 (built with CUDA 12.5.1), oneDNN off, Python 3.11.9 → 2.21.0 (built with CUDA 12.5.1), oneDNN off",
        "what differs: numpy: 2.5.2 → 1.26.4",
        "what differs: host: vm → ci-2",
        "what differs: xferbench: 0.1.0 → 0.2.0",
        "what differs: clock: time.perf_counter → cudaEvent",
        "what differs: sampling: 5 warm-up calls; 10–1000 samples in 0.25–10.0 s → 5 warm-up calls; 20–1000 samples in 0.25–10.0 s"]  # fmt: skip
    assert tags(["A", "B"], found) == [
        "A: a host-to-device transfer over the GPU's link (…; CUDA (driver) 13.0",
        "B: a bidirectional transfer over the GPU's link (C…; CUDA (driver) 12.4"]  # fmt: skip
    # further down the legend: a 48-character OS is whole, a longer setting cut
    assert [d.describe(1) for d in found[2:7]] == ["PCIe link under load Gen4 x16", "NUMA binding CPU affinity cannot be set on Windows",
                                                   "CPU Intel(R) Xeon(R) Processor (8 logical CPUs)", "process CPUs 0-3",
                                                   "OS Linux-6.1.0-28-cloud-amd64-x86_64-with-glibc2.36"]  # fmt: skip
    preload = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
    setting = differences([(Result({**ENV, "settings": {}}, {}, "x"), []), (Result({**ENV, "settings": {"LD_PRELOAD": preload}}, {}, "x"), [])])
    assert tags(["A", "B"], setting) == ["A", "B: LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.s…"]


def test_files_are_named_by_the_shortest_part_of_their_paths_that_tells_them_apart() -> None:
    """The nearest folder that differs in every path; where none does, each path's shortest ending no other shares;
    one path given twice keeps it as given."""
    assert distinct_parts([Path("results/run-2/validation/default.json"), Path("results/run-4/validation/default.json")]) == ["run-2", "run-4"]
    assert distinct_parts([Path("a/x.json"), Path("b/x.json")]) == ["a", "b"]
    assert distinct_parts([Path("r/run-2/default.json"), Path("r/run-4/default.json"), Path("r/run-4/large.json")]) == [
        "run-2/default.json", "run-4/default.json", "large.json"]  # fmt: skip
    assert distinct_parts([Path("x/a/r.json"), Path("y/a/r.json"), Path("z/b/r.json")]) == ["x", "y", "z"]  # a and a: not every one
    assert distinct_parts([Path("a/x.json"), Path("a/x.json")]) == ["a/x.json", "a/x.json"]


def test_file_names_keep_distinct_hosts_and_stems_and_shorten_only_whole_paths() -> None:
    """Hosts where they differ, else stems where they differ (results.file_labels), else distinct_parts."""
    one, other, same = Result({"host": "n1"}, {}, "c"), Result({"host": "n2"}, {}, "c"), Result({"host": "n1"}, {}, "c")
    assert file_names([(Path("x/r.json"), one), (Path("y/r.json"), other)]) == ["n1", "n2"]
    assert file_names([(Path("x/a.json"), one), (Path("y/b.json"), same)]) == ["a", "b"]
    assert file_names([(Path("x/run-2/r.json"), one), (Path("x/run-4/r.json"), same)]) == ["run-2", "run-4"]


def test_two_cpus_that_decide_onednn_differently_are_a_difference() -> None:
    """The CPU features behind TensorFlow's oneDNN default and the huge page modes are facts a report
    compares: the same TensorFlow falls 0.1x on one CPU and 0.6x on another at batch 171."""
    with_vnni = {"cpu": "AMD EPYC", "cpu_features": {"avx512_vnni": True, "avx512_bf16": True, "avx_vnni": False, "amx_tile": False},
                 "transparent_hugepages": {"enabled": "madvise", "defrag": "madvise"}}  # fmt: skip
    without = {**with_vnni, "cpu_features": dict.fromkeys(with_vnni["cpu_features"], False),
               "transparent_hugepages": {"enabled": "always", "defrag": "madvise"}}  # fmt: skip
    runs = [Result(env, {}, "x", [curve("tf", "eager", {4: 1e4})]) for env in (with_vnni, without)]
    found = {d.field: d.values for d in differences([(r, r.series) for r in runs])}
    assert found["CPU features that turn oneDNN on"] == ["AVX512_VNNI, AVX512_BF16", "none"]
    assert found["transparent huge pages"] == ["enabled madvise, defrag madvise", "enabled always, defrag madvise"]
    unread = [Result({**with_vnni, "cpu_features": None}, {}, "x", [curve("tf", "eager", {4: 1e4})]), runs[0]]
    assert {d.field: d.values for d in differences([(r, r.series) for r in unread])}["CPU features that turn oneDNN on"] == [
        "—", "AVX512_VNNI, AVX512_BF16"]  # fmt: skip
