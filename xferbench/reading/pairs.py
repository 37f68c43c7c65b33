"""Series paired across result files, and what differs between the files: what a comparison of two
runs (two GPUs, a setting changed, before and after) turns on.

Two series are counterparts when they ran the same path the same way (framework, mode, op, item shape,
host buffer, timing method, direction, devices at once), whatever device they ran on: "GPU A vs GPU B"
pairs tf/eager on cuda:0 of one machine with tf/eager on cuda:0, or cuda:1, of the other. Like devices pair
first (LIKENESS: the same id making the same copy, then the same copy, then the same kind of device), so a
file's cuda:0 series never loses its counterpart to its mps one.

What makes two copies alike is what one call moves and over what (copy_kind), not who made the GPU: a
host-to-device copy over PCIe is the same copy on an NVIDIA H100 under CUDA and on an AMD MI300X under ROCm
(whose PyTorch also names it cuda:0), so their ratio compares two PCIe links. A copy over NVLink-C2C (a
Grace node) is not the copy a PCIe GPU makes, nor is a copy within Apple's unified memory: such pairs are
"unlike copies", and their ratio is the time until a batch is usable on each device. A link that a file
does not record (and cannot be derived, vendors.host_link) makes no pair unlike: it is said unknown in
"What differs", never guessed.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xferbench.core import vendors
from xferbench.core.environment import SETTINGS, cpu_ranges, device_entry
from xferbench.core.results import Result, Series, file_labels
from xferbench.core.spec import BIDIRECTIONAL, DEVICE_TO_HOST, HOST_TO_HOST, SIMULATED, SeriesKey

MISSING = "—"  # the file does not record it
UNSET = "unset"  # a recorded setting the run did not have
TAG_WIDTH = 48  # characters of a value in a legend's file tag before it is cut with …


def file_names(files: Sequence[tuple[Path, Result]]) -> list[str]:
    """Short names that tell result files apart, for every sentence, table and legend that names a file:
    file_labels' hosts or stems where those differ, else the shortest part of the paths that does
    (distinct_parts). A whole path repeated in every sentence buries the figures it introduces."""
    labels = file_labels(list(files))
    paths = [Path(path) for path, _ in files]
    return labels if labels != [str(path) for path in paths] else distinct_parts(paths)


def distinct_parts(paths: Sequence[Path]) -> list[str]:
    """The nearest folder whose name differs in every path (run-2/validation/default.json and
    run-4/validation/default.json: run-2 and run-4; a/x.json and b/x.json: a and b); where no one folder
    does, each path's shortest ending that no other path shares (run-4/default.json beside large.json)."""
    # Each path's parts from its file name up, whole (a relative path's folders go on above the working one).
    parts = [Path(os.path.abspath(path)).parts[::-1] for path in paths]
    for depth in range(1, max(len(found) for found in parts)):
        names = [found[depth] if depth < len(found) else "" for found in parts]
        if all(names) and len(set(names)) == len(names):
            return names
    endings = []
    for index, found in enumerate(parts):
        depth = next((d for d in range(1, len(found) + 1)
                      if all(other[:d] != found[:d] for number, other in enumerate(parts) if number != index)), None)  # fmt: skip
        endings.append("/".join(reversed(found[:depth])) if depth else str(paths[index]))  # one file given twice: as given
    return endings


def path_name(series: Series) -> str:
    """The path without its device: tf/eager/copy, torch/pinned/copy/d2h, cuda/raw_pinned/copy+numpy."""
    return series.label().rsplit("@", 1)[0]


def copy_kind(series: Series, environment: dict[str, Any] | None = None) -> str:
    """What one call of the series really moves, and over what, in words: two series pair across devices,
    and a copy within Apple silicon's one memory is no PCIe transfer, nor a CPU's memory copy, and a copy
    over a Grace node's NVLink-C2C is none over PCIe. The link comes from the device's entry in the file's
    `environment` (recorded, else derived: vendors.host_link); where it is unknown, the GPU's link."""
    device = device_kind(series)
    if series.transfer == SIMULATED or device == "sim":
        return "a simulated link (no data moves)"
    if device == "mps" and (series.params or {}).get("unified_memory") is False:  # an Intel Mac's GPU, as its backend said
        return "a transfer to an Intel Mac's GPU (MPS)"
    if device == "mps":
        return "a copy within unified memory (Apple GPU, MPS)"
    if series.transfer == HOST_TO_HOST or device == "cpu":
        return "a host-to-host copy (CPU, no GPU)"
    way = {DEVICE_TO_HOST: "device-to-host", BIDIRECTIONAL: "bidirectional"}.get(series.transfer or "", "host-to-device")
    entry = device_entry(environment or {}, series.device)
    link = vendors.host_link(entry, (environment or {}).get("machine"))
    if link == vendors.C2C:
        return f"a {way} transfer over {link} (a Grace node)"
    if link:  # another vendor's GPU whose entry records its link (an Intel XPU over PCIe) is alike with a CUDA one
        return f"a {way} transfer over {link}"
    if device == "cuda":  # PyTorch for ROCm names an AMD GPU cuda too; HIP alone does not record its link (an MI300A shares memory)
        return f"a {way} transfer over the GPU's link ({'ROCm' if vendors.vendor(entry) == vendors.AMD else 'CUDA'})"
    return f"a {series.transfer or 'transfer'} on {device}"


def alike(first: str, second: str) -> bool:
    """Whether two copy kinds are the same copy: equal, or one a transfer over a link not recorded and the
    other the same transfer over any link (nothing says they differ)."""
    if first == second:
        return True
    way = [text.split(" over ", 1)[0] for text in (first, second)]
    unknown = [" over the GPU's link (" in text for text in (first, second)]
    return way[0] == way[1] and any(unknown) and all(" transfer over " in text for text in (first, second))


def unlike(members: Sequence[Series | None], environments: Sequence[dict[str, Any] | None] | None = None) -> list[str]:
    """The kinds of copy a pair's members make, when they are not all alike (else empty): their ratio is
    then time until a batch is usable on each device, not the same copy measured twice. `environments`:
    each member's file's environment, which says its device's link."""
    found = [copy_kind(m, (environments or [None] * len(members))[i]) for i, m in enumerate(members) if m is not None]
    kinds = list(dict.fromkeys(found))
    return kinds if any(not alike(a, b) for a in kinds for b in kinds) else []


def pair_key(series: Series) -> SeriesKey:
    """The series' key with the device left out: what must match for two series to be counterparts."""
    return dataclasses.replace(series.key, device="-")


@dataclass
class Pair:
    """One path across the files: its series in each file, None where a file has no counterpart, and each
    file's environment (what says the link each member's copy crossed)."""

    name: str
    members: list[Series | None]
    environments: list[dict[str, Any] | None] = dataclasses.field(default_factory=list)

    @property
    def paired(self) -> bool:
        return sum(m is not None for m in self.members) >= 2

    def kind(self, index: int) -> str:
        """What the member of file `index` copies (copy_kind), read with its file's environment."""
        member = self.members[index]
        assert member is not None
        return copy_kind(member, self.environments[index] if index < len(self.environments) else None)

    def unlike(self) -> list[str]:
        """The kinds of copy its members make, where they are not alike (unlike); else empty."""
        return unlike(self.members, self.environments or None)


def device_kind(series: Series) -> str:
    """The kind of device a series ran on: cuda for cuda:0 and cuda:3, mps, cpu."""
    return series.device.split(":")[0]


# How closely two counterparts agree, closest first, each given the two series and their copy kinds: the
# same device id making the same copy; the same copy on another device (a PCIe GPU of one vendor against a
# PCIe GPU of another); the same kind of device making unlike copies (a Grace node's GPU over NVLink-C2C
# against a PCIe GPU); then any (a copy within an Apple GPU's memory against one over a GPU's link).
LIKENESS: tuple[Callable[[Series, Series, str, str], bool], ...] = (
    lambda a, b, copy_a, copy_b: a.device == b.device and alike(copy_a, copy_b),
    lambda a, b, copy_a, copy_b: alike(copy_a, copy_b),
    lambda a, b, copy_a, copy_b: device_kind(a) == device_kind(b),
    lambda a, b, copy_a, copy_b: True,
)


def _matches(anchors: Sequence[Series], others: Sequence[Series], used: set[int], kinds: dict[int, str]) -> dict[int, Series]:
    """Each anchor's counterpart among `others` not yet used, by id of the anchor: every pair on one device
    making one copy is made first, then every pair making one copy, then every pair of one kind of device,
    and only then across kinds, so that a like counterpart is never taken by an unlike one that comes first
    in the file. `kinds`: each series' copy kind, by id."""
    found: dict[int, Series] = {}
    for like in LIKENESS:
        for series in anchors:
            if id(series) in found:
                continue
            match = next((s for s in others if id(s) not in used and pair_key(s) == pair_key(series)
                          and like(series, s, kinds[id(series)], kinds[id(s)])), None)  # fmt: skip
            if match is not None:
                used.add(id(match))
                found[id(series)] = match
    return found


def pair(files: Sequence[Sequence[Series]], environments: Sequence[dict[str, Any] | None] | None = None) -> list[Pair]:
    """Pair each file's series with its counterpart in every other file, in the order they first appear.
    `environments`: each file's environment, which says what link its devices' copies crossed.

    Within one path, a series takes the counterpart in the order of LIKENESS: on the same device id making
    the same copy, else making the same copy, else on the same kind of device, else the first one left
    (one GPU per file: any device). A series with no counterpart gets a pair of its own, so nothing is dropped."""
    envs = list(environments) if environments is not None else [None] * len(files)
    kinds = {id(s): copy_kind(s, env) for found, env in zip(files, envs) for s in found}
    used: set[int] = set()
    pairs: list[Pair] = []
    for anchor_file, anchor_series in enumerate(files):
        anchors = [s for s in anchor_series if id(s) not in used]
        used.update(id(s) for s in anchors)
        matches = [_matches(anchors, files[other], used, kinds) for other in range(anchor_file + 1, len(files))]
        for series in anchors:
            members: list[Series | None] = [None] * len(files)
            members[anchor_file] = series
            for other, found in zip(range(anchor_file + 1, len(files)), matches):
                members[other] = found.get(id(series))
            pairs.append(Pair(path_name(series), members, list(envs)))
    counts: dict[str, int] = {}
    for p in pairs:
        counts[p.name] = counts.get(p.name, 0) + 1
    for p in pairs:  # one path on several devices of a file: the devices tell its pairs apart
        if counts[p.name] > 1:
            devices = list(dict.fromkeys(m.device for m in p.members if m is not None))
            p.name += "@" + "→".join(devices)
    return pairs


def placement(series: Series) -> str | None:
    """Where the series' worker ran and allocated: its binding, or why it had none."""
    numa = series.numa or {}
    if numa.get("cpus"):
        node = f", memory preferred on NUMA node {numa['node']}" if numa.get("node") is not None else ""
        refused = f" ({numa['reason']})" if numa.get("reason") else ""
        return f"bound to CPUs {cpu_ranges(numa['cpus'])}{node}{refused}"
    return numa.get("reason")


def framework_version(env: dict[str, Any], name: str) -> str:
    """A framework's version as the run recorded it, with the CUDA it was built with."""
    info = (env.get("frameworks") or {}).get(name)
    if not info:
        return MISSING
    text = str(info.get("version") or MISSING)
    cuda = info.get("cuda") or info.get("cuda_build")
    if cuda:
        text += f" (built with CUDA {cuda})"
    if info.get("onednn") is not None:  # TensorFlow's CPU allocator, and so a host copy's cost, depend on it
        text += f", oneDNN {'on' if info['onednn'] else 'off'}"
    if info.get("python") and info["python"] != env.get("python"):
        text += f", Python {info['python']}"
    return text


def _features(features: Any) -> str:
    """The CPU features that decide TensorFlow's oneDNN default, as the run read them: two CPUs that differ
    here can give TensorFlow's host copies different costs with every setting the same."""
    if not isinstance(features, dict) or not features:
        return MISSING
    present = [name.upper() for name, has in features.items() if has]
    return ", ".join(present) if present else "none"


def _huge_pages(modes: Any) -> str:
    """The kernel's transparent huge page modes: they decide how many faults a fresh buffer takes."""
    if not isinstance(modes, dict) or not modes:
        return MISSING
    return ", ".join(f"{name} {value}" for name, value in modes.items())


def _joined(values: Sequence[str | None]) -> str:
    """Distinct values in order, or MISSING when none is recorded."""
    kept = list(dict.fromkeys(v for v in values if v))
    return "; ".join(kept) if kept else MISSING


BACK_TO_BACK = "back to back (no eviction between calls)"


def _source_cache(series: Series) -> str | None:
    """--cold-source: the source evicted from the CPU's caches before every timed call; else copied back to back, as
    every xferbench series was before the option, so a file that made it cold is told apart from one that did not.
    None for a simulated link (no source) and a peer's figures (its tool's own loop, which xferbench did not run)."""
    params = series.params or {}
    if not params.get("cold_source"):
        return None if series.is_peer or series.transfer == SIMULATED else BACK_TO_BACK
    evicted = params.get("eviction_bytes")
    return "evicted from the CPU caches" + (f" (a {evicted / 2**20:g} MiB memset)" if isinstance(evicted, (int, float)) else "")


def _staging(series: Series) -> str | None:
    """host/staged's chunk and the memory it stages into: two files that differ here staged differently."""
    chunk = (series.params or {}).get("staging_chunk_bytes")
    if not isinstance(chunk, (int, float)):
        return None
    memory = str((series.params or {}).get("staging_memory") or "").split(":")[0]
    return f"{chunk / 2**10:g} KiB" + (f", {memory}" if memory else "")


def _link(series: Series) -> str | None:
    summary = (series.link or {}).get("summary") or {}
    gen, width = summary.get("gen_under_load"), summary.get("width_under_load")
    return f"Gen{gen[1]} x{width[1]}" if gen and width else None


def _timing(config: dict[str, Any]) -> str:
    timing = config.get("timing") or {}
    if not timing:
        return MISSING
    return (f"{timing.get('warmup_calls', '?')} warm-up calls; {timing.get('min_samples', '?')}–{timing.get('max_samples', '?')}"
            f" samples in {timing.get('min_time_s', '?')}–{timing.get('max_time_s', '?')} s")  # fmt: skip


def facts(result: Result, series: Sequence[Series]) -> dict[str, str]:
    """What a run recorded about itself and about the devices its `series` ran on, as one short text per
    field: the fields a difference between two runs is looked for in."""
    env = result.environment
    gpus = [device_entry(env, d) for d in dict.fromkeys(s.device for s in series) if d.startswith("cuda")]
    described = [vendors.describe(device_entry(env, d), env) for d in dict.fromkeys(s.device for s in series)
                 if d.split(":")[0] not in ("cpu", "sim")]  # every GPU's, whoever made it  # fmt: skip
    macs = [device_entry(env, d) for d in dict.fromkeys(s.device for s in series) if d == "mps"]  # Apple's GPU, by its cores
    found = {
        "what is copied": _joined([copy_kind(s, env) for s in series]),
        "device": _joined([s.device_name or s.device for s in series]),
        "driver": _joined([d.get("driver") for d in gpus]),
        "CUDA (driver)": _joined([d.get("cuda_driver") for d in gpus]),
        # Who made the GPU, what drives it and what links it to host memory: unknown where the file neither
        # records nor implies it (vendors.describe), MISSING where no GPU ran.
        "vendor": _joined([vendors.text(d[vendors.VENDOR]) for d in described]),
        "runtime": _joined([vendors.text(d[vendors.RUNTIME]) for d in described]),
        "host link": _joined([vendors.text(d[vendors.HOST_LINK]) for d in described]),
        "PCIe link under load": _joined([_link(s) for s in series if vendors.host_link(device_entry(env, s.device), env.get("machine")) != vendors.C2C]),
        "NUMA binding": _joined([placement(s) for s in series]),
        "DataLoader workers": _joined([str(s.params["num_workers"]) for s in series if s.params.get("num_workers")]),
        "source before each call": _joined([_source_cache(s) for s in series]),
        "host staging chunk": _joined([_staging(s) for s in series]),
        "GPU cores": _joined([str(d["gpu_cores"]) for d in macs if d.get("gpu_cores")]),
        "CPU": f"{env.get('cpu') or MISSING}" + (f" ({env['cpu_count']} logical CPUs)" if env.get("cpu_count") else ""),
        "CPU features that turn oneDNN on": _features(env.get("cpu_features")),
        "transparent huge pages": _huge_pages(env.get("transparent_hugepages")),
        "memory": f"{env['memory_bytes'] / 2**30:,.0f} GiB" if isinstance(env.get("memory_bytes"), (int, float)) else MISSING,
        "macOS": env.get("macos") or MISSING,
        "process CPUs": cpu_ranges(env["process_cpus"]) if env.get("process_cpus") else MISSING,
        "OS": env.get("os") or MISSING,
        "Python": env.get("python") or MISSING,
    }
    for name in env.get("frameworks") or {}:
        found[name] = framework_version(env, name)
    found["numpy"] = (env.get("versions") or {}).get("numpy") or MISSING
    settings = env.get("settings")
    for name in SETTINGS:
        found[name] = MISSING if settings is None else str(settings.get(name, UNSET))
    found.update({"host": env.get("host") or MISSING, "xferbench": result.xferbench_version or MISSING,
                  "clock": _joined([s.clock for s in series]), "sampling": _timing(result.config)})  # fmt: skip
    return found


@dataclass(frozen=True)
class Difference:
    """One recorded field whose value is not the same in every file."""

    field: str
    values: list[str]  # one per file

    def describe(self, index: int) -> str | None:
        """The value in one file, as a legend or a line names it: GLIBC_TUNABLES=…, an H100, driver 550.1.
        None where the file does not have the setting (the other file's tag says what it set)."""
        value = self.values[index]
        if self.field in SETTINGS:
            return None if value in (UNSET, MISSING) else f"{self.field}={_cut(value)}"
        if value == MISSING:
            return None
        return _cut(value) if self.field in ("device", "what is copied") else f"{self.field} {_cut(value)}"


def _cut(text: str) -> str:
    return text if len(text) <= TAG_WIDTH else text[: TAG_WIDTH - 1] + "…"


def differences(files: Sequence[tuple[Result, Sequence[Series]]]) -> list[Difference]:
    """The fields whose values differ between the files (each with the series compared from it), in a
    fixed order: device first, then what sets its figures. A field only one file records still counts:
    the reader must see that it cannot be compared."""
    recorded = [facts(result, series) for result, series in files]
    names = list(dict.fromkeys(name for found in recorded for name in found))
    found = [Difference(name, [r.get(name, MISSING) for r in recorded]) for name in names]
    # A setting no file has is no difference; a field every file leaves unrecorded is none either.
    found = [d for d in found if len(set(d.values)) > 1]
    driver = next((d.values for d in found if d.field == "CUDA (driver)"), None)
    # The runtime of NVIDIA GPUs alone is their driver's CUDA version: said once, as CUDA (driver).
    return [d for d in found if not (d.field == "runtime" and driver and d.values == [f"CUDA {v}" for v in driver])]


def tags(labels: Sequence[str], found: Sequence[Difference], most: int = 2) -> list[str]:
    """Each file's label with what sets it apart, for a legend: "B: GLIBC_TUNABLES=…". A file that differs
    only by lacking what another set keeps its bare label."""
    named = []
    for index, label in enumerate(labels):
        parts = [text for d in found if (text := d.describe(index))][:most]
        named.append(f"{label}: {'; '.join(parts)}" if parts else label)
    return named


__all__ = ["Difference", "Pair", "copy_kind", "device_kind", "differences", "distinct_parts", "facts", "file_names", "framework_version", "pair",
           "pair_key", "path_name", "placement", "tags", "unlike"]  # fmt: skip
