"""The result file's schema, declared once: the shape of every field of the run, each series and each
point, checked when a file is read, so that no reader ever meets a value of the wrong type.

A field is required (a record without it is damaged), vital (present with the wrong shape, its record is
damaged: a key, a status, the samples a verdict rests on) or neither (present with the wrong shape, it is
read as absent and named). What each field means is in docs/results.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from xferbench.core.errors import printable
from xferbench.core.spec import DIRECTIONS, TIMING_METHODS

BIGGEST = 2**64  # no whole number a run writes is this large (a 64-bit counter stays below it)


class Unfit(Exception):
    """A value that does not have its declared shape: `where` names it, `problem` says what it is and
    what was expected."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"'{where}' {problem}" if where else problem)
        self.where, self.problem = where, problem

    @property
    def field(self) -> str:
        """The field of the outermost record that holds the misfit: 'compute' for 'compute.repeats'."""
        return self.where.split(".")[0].split("[")[0]

    def inside(self, name: str) -> Unfit:
        """The same misfit named from the record that holds it: 'nvml.gpus[0].uuid'."""
        joined = name + (self.where if self.where.startswith("[") else f".{self.where}") if self.where else name
        return Unfit(joined, self.problem)


def describe(value: Any) -> str:
    """What a value is, in a few words, for a message: never a string's own text (it may hold anything)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return repr(value) if abs(value) < 10**15 else f"a whole number of {len(str(abs(value)))} digits"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
        return repr(value) if len(repr(value)) <= 12 else f"{value:.6g}"  # 1.0, not 1: not a whole number
    if isinstance(value, str):
        if not _encodable(value):
            return "a string holding an unpaired surrogate"
        if value.isprintable():
            return "a string"
        return "a string holding a line break or tab" if _plain(value) else "a string holding a control character"
    if isinstance(value, list):
        return "an empty list" if not value else "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _encodable(text: str) -> bool:
    """Whether the text can be written out as UTF-8 (JSON's \\ud800 escapes make strings that cannot)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # what a terminal acts on; tabs and line breaks pass


def _plain(text: str) -> bool:
    """Text a reader may print: no control character a terminal would act on (an escape sequence), and
    nothing that cannot be written out as UTF-8."""
    return CONTROL.search(text) is None and _encodable(text)


class Shape:
    """What a value must be, and its name in words after "expected"."""

    name = "anything"
    simple = True  # read gives the value back whole, or Unfit: only a record (or what holds one) drops fields

    def fits(self, value: Any) -> bool:
        return True

    def fits_all(self, values: list[Any]) -> bool:
        """Whether every value fits: a shape that can, checks a long list in C loops rather than one by one."""
        return all(map(self.fits, values))

    def read(self, value: Any, notes: list[Unfit]) -> Any:
        """The value as a reader may use it, or Unfit. Records drop their optional fields that do not fit
        (each added to `notes`); every other shape takes the value whole or not at all."""
        if not self.fits(value):
            raise Unfit("", f"is {self.misfit(value)}, expected {self.name}")
        return value

    def misfit(self, value: Any) -> str:
        return describe(value)


class Scalar(Shape):
    def __init__(self, name: str, test: Callable[[Any], bool], bulk: Callable[[list[Any]], bool] | None = None) -> None:
        self.name, self.test, self.bulk = name, test, bulk

    def fits(self, value: Any) -> bool:
        return self.test(value)

    def fits_all(self, values: list[Any]) -> bool:
        return self.bulk(values) if self.bulk else all(map(self.test, values))


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -BIGGEST < value < BIGGEST


def _number(value: Any) -> bool:
    if isinstance(value, float):  # numpy's float64 too: a summary recomputed from the points holds them
        return math.isfinite(value)
    return _whole(value)


def _all_numbers(values: list[Any]) -> bool:
    """Whether every value is a finite number within bounds: in C loops, as a point holds thousands of samples."""
    kinds = set(map(type, values))
    if not kinds <= {float, int}:  # a bool, a string, None, or numpy's numbers from a recomputed summary
        return all(map(_number, values))
    if int in kinds and not -BIGGEST < min(values) <= max(values) < BIGGEST:
        return False
    return all(map(math.isfinite, values))


def _all_wholes(low: int) -> Callable[[list[Any]], bool]:
    """Whether every value is a whole number from `low` up, within bounds, in C loops."""

    def check(values: list[Any]) -> bool:
        return not values or (set(map(type, values)) == {int} and low <= min(values) and max(values) < BIGGEST)

    return check


TEXT = Scalar("a string", lambda v: isinstance(v, str) and (v.isprintable() or _plain(v)))
NAME = Scalar("a string", lambda v: isinstance(v, str) and v.isprintable())  # printed in every label: no control characters
WHOLE = Scalar("a whole number", _whole, _all_wholes(1 - BIGGEST))
COUNT = Scalar("a whole number, 0 or more", lambda v: _whole(v) and v >= 0, _all_wholes(0))
POSITIVE = Scalar("a whole number, 1 or more", lambda v: _whole(v) and v >= 1, _all_wholes(1))
NUMBER = Scalar("a finite number", _number, _all_numbers)
AMOUNT = Scalar("a finite number, 0 or more", lambda v: _number(v) and v >= 0)
FLAG = Scalar("true or false", lambda v: type(v) is bool)
ANY = Shape()


def one_of(*values: str) -> Scalar:
    return Scalar(" or ".join(f"'{v}'" for v in values), lambda v: isinstance(v, str) and v in values)


class Nullable(Shape):
    def __init__(self, shape: Shape) -> None:
        self.shape, self.name, self.simple = shape, f"{shape.name}, or null", shape.simple

    def fits(self, value: Any) -> bool:
        return value is None or self.shape.fits(value)

    def fits_all(self, values: list[Any]) -> bool:
        return self.shape.fits_all([v for v in values if v is not None])

    def misfit(self, value: Any) -> str:
        return self.shape.misfit(value)

    def read(self, value: Any, notes: list[Unfit]) -> Any:
        if value is None:
            return None
        try:
            return self.shape.read(value, notes)
        except Unfit as unfit:
            raise Unfit(unfit.where, unfit.problem if unfit.where else f"is {self.shape.misfit(value)}, expected {self.name}") from None


class ListOf(Shape):
    def __init__(self, item: Shape, name: str) -> None:  # name: e.g. "a list of numbers"
        self.item, self.name, self.simple = item, name, item.simple

    def fits(self, value: Any) -> bool:
        return isinstance(value, list) and self.item.fits_all(value)

    def read(self, value: Any, notes: list[Unfit]) -> Any:
        if self.simple:
            return super().read(value, notes)
        if not isinstance(value, list):
            raise Unfit("", f"is {describe(value)}, expected {self.name}")
        kept = []
        for index, item in enumerate(value):
            inner: list[Unfit] = []
            try:
                kept.append(self.item.read(item, inner))
            except Unfit as unfit:
                raise unfit.inside(f"[{index}]") from None
            notes += [note.inside(f"[{index}]") for note in inner]
        return kept

    def misfit(self, value: Any) -> str:
        if isinstance(value, list):
            wrong = next((v for v in value if not self.item.fits(v)), None)
            return f"a list holding {describe(wrong)}"
        return describe(value)


class MapOf(Shape):
    """An object whose keys are any names and whose values all have one shape."""

    def __init__(self, value: Shape, name: str) -> None:  # name: e.g. "an object of strings"
        self.value, self.name, self.simple = value, name, value.simple

    def fits(self, value: Any) -> bool:
        return isinstance(value, dict) and self.value.fits_all(list(value.values()))

    def read(self, value: Any, notes: list[Unfit]) -> Any:
        if self.simple:
            return super().read(value, notes)
        if not isinstance(value, dict):
            raise Unfit("", f"is {describe(value)}, expected {self.name}")
        kept = {}
        for key, item in value.items():
            inner: list[Unfit] = []
            try:
                kept[key] = self.value.read(item, inner)
            except Unfit as unfit:
                raise unfit.inside(printable(str(key))) from None
            notes += [note.inside(printable(str(key))) for note in inner]
        return kept

    def misfit(self, value: Any) -> str:
        if isinstance(value, dict):
            wrong = next((v for v in value.values() if not self.value.fits(v)), None)
            return f"an object holding {describe(wrong)}"
        return describe(value)


@dataclass(frozen=True)
class Field:
    """One field of a record: its shape, and what a misfit costs."""

    shape: Shape
    required: bool = False  # absent: the record is damaged
    vital: bool = False  # present with the wrong shape: the record is damaged (else the field is read as absent)


class Record(Shape):
    """An object with declared fields; fields it does not declare (a later minor version's) pass unread.
    `rule`, where given, says what is wrong with fields that fit one by one but not together, or None."""

    def __init__(self, fields: Mapping[str, Field], name: str = "an object",
                 rule: Callable[[dict[str, Any]], str | None] | None = None) -> None:  # fmt: skip
        self.fields, self.name, self.rule = fields, name, rule
        self.simple = False

    def read(self, value: Any, notes: list[Unfit]) -> dict[str, Any]:
        """A copy of the object with every declared field checked: a required or vital one that does not
        fit makes the whole record Unfit; any other is left out of the copy and named in `notes`."""
        if not isinstance(value, dict):
            raise Unfit("", f"is {describe(value)}, expected {self.name}")
        kept = dict(value)
        for name, declared in self.fields.items():
            if name not in kept:
                if declared.required:
                    raise Unfit(name, f"is missing, expected {declared.shape.name}")
                continue
            if declared.shape.simple and declared.shape.fits(kept[name]):
                continue  # the common case, without the cost of reading
            inner: list[Unfit] = []
            try:
                kept[name] = declared.shape.read(kept[name], inner)
            except Unfit as unfit:
                if declared.required or declared.vital:
                    raise unfit.inside(name) from None
                del kept[name]
                notes.append(unfit.inside(name))
                continue
            notes += [note.inside(name) for note in inner]
        problem = self.rule(kept) if self.rule else None
        if problem:
            raise Unfit("", problem)
        return kept


def record(rule: Callable[[dict[str, Any]], str | None] | None = None, **fields: Field | Shape) -> Record:
    """A record from its fields; a bare shape is an optional field of that shape."""
    return Record({name: f if isinstance(f, Field) else Field(f) for name, f in fields.items()}, rule=rule)


def texts(name: str = "a list of strings") -> ListOf:
    return ListOf(TEXT, name)


WHOLES = ListOf(WHOLE, "a list of whole numbers")
COUNTS = ListOf(COUNT, "a list of whole numbers, 0 or more")
NUMBERS = ListOf(NUMBER, "a list of numbers")
MAYBE_WHOLES = ListOf(Nullable(WHOLE), "a list of whole numbers or nulls")
MAYBE_NUMBERS = ListOf(Nullable(NUMBER), "a list of numbers or nulls")
OBJECT = MapOf(ANY, "an object")
SHAPE = ListOf(POSITIVE, "a list of whole numbers, 1 or more")
RANGE = Scalar("a list of two whole numbers, lowest then highest",
               lambda v: isinstance(v, list) and len(v) == 2 and all(COUNT.fits(x) for x in v) and v[0] <= v[1])
BITS = Scalar("a whole number from 1 to 64", lambda v: _whole(v) and 1 <= v <= 64)

# --- The run: environment, config, check -----------------------------------------------------------

CLOCKS = MapOf(Nullable(COUNT), "an object of whole numbers")
NVML_GPU = record(
    index=Nullable(COUNT), name=Nullable(TEXT), uuid=Nullable(TEXT), pci_bus_id=Nullable(TEXT), memory_bytes=Nullable(COUNT),
    pcie_gen_current=Nullable(COUNT), pcie_width_current=Nullable(COUNT), pcie_gen_max=Nullable(COUNT),
    pcie_width_max=Nullable(COUNT), pcie_gen_gpu_max=Nullable(COUNT), numa_node=Nullable(WHOLE), numa_node_source=Nullable(TEXT),
    numa_node_reason=Nullable(TEXT), gpu_memory_numa_node=Nullable(WHOLE), cpu_affinity=Nullable(COUNTS),
    numa_cpus=Nullable(COUNTS), pcie_replay_counter=Nullable(COUNT), clocks_mhz=Nullable(CLOCKS), pstate=Nullable(TEXT),
    reason=Nullable(TEXT),
)  # fmt: skip
NVML = record(available=FLAG, reason=Nullable(TEXT), driver=Nullable(TEXT), cuda_driver=Nullable(TEXT),
              gpus=ListOf(NVML_GPU, "a list of objects"))  # fmt: skip
NVML_AFTER = record(available=FLAG, reason=Nullable(TEXT), gpus=ListOf(record(
    index=Nullable(COUNT), uuid=Nullable(TEXT), pcie_replay_counter=Nullable(COUNT), clocks_mhz=Nullable(CLOCKS),
    pstate=Nullable(TEXT), reason=Nullable(TEXT)), "a list of objects"))  # fmt: skip
DEVICE = record(
    id=Field(TEXT, required=True, vital=True), kind=Nullable(TEXT), name=Nullable(TEXT), memory_bytes=Nullable(COUNT),
    capability=Nullable(TEXT), uuid=Nullable(TEXT), pci_bus_id=Nullable(TEXT), driver=Nullable(TEXT), cuda_driver=Nullable(TEXT),
    nvml=Nullable(NVML_GPU), chip=Nullable(TEXT), gpu_cores=Nullable(COUNT), gpu_cores_source=Nullable(TEXT),
    unified_memory=Nullable(FLAG),
)  # fmt: skip
FRAMEWORK = record(
    version=Nullable(TEXT), python=Nullable(TEXT), executable=Nullable(TEXT), pid=Nullable(COUNT), cuda=Nullable(TEXT),
    threads=Nullable(COUNT), cuda_build=Nullable(TEXT), cudnn_build=Nullable(TEXT), build_compute_capabilities=Nullable(texts()),
    onednn=Nullable(FLAG), cuda_runtime=Nullable(WHOLE), nvrtc=Nullable(TEXT), cuda_plugins=Nullable(MapOf(Nullable(TEXT), "an object of strings")),
    pinned_host=Nullable(FLAG), backend=Nullable(TEXT), jaxlib=Nullable(TEXT), built_with_cuda=Nullable(FLAG), sync=Nullable(TEXT),
)  # fmt: skip
PEER = record(
    tool=Nullable(TEXT), version=Nullable(TEXT), git_version=Nullable(TEXT), commands=texts(), files=texts(),
    sizes_bytes=COUNTS, warnings=texts(), errors=ListOf(ANY, "a list"), imported_by=Nullable(TEXT), imported=Nullable(TEXT),
    not_imported=ListOf(ANY, "a list"), placement=Nullable(TEXT),
)  # fmt: skip
ENVIRONMENT = record(
    host=Nullable(TEXT), os=Nullable(TEXT), machine=Nullable(TEXT), cpu=Nullable(TEXT), cpu_count=Nullable(COUNT),
    memory_bytes=Nullable(COUNT), python=Nullable(TEXT), python_implementation=Nullable(TEXT), macos=Nullable(TEXT),
    cpu_features=Nullable(MapOf(FLAG, "an object of true or false")),
    transparent_hugepages=Nullable(MapOf(TEXT, "an object of strings")), load_average=Nullable(NUMBERS),
    unavailable_checks=ListOf(ANY, "a list"), process_cpus=Nullable(COUNTS),
    versions=MapOf(Nullable(TEXT), "an object of strings"), settings=Nullable(MapOf(TEXT, "an object of strings")),
    frameworks=MapOf(FRAMEWORK, "an object of objects"), devices=ListOf(DEVICE, "a list of objects"), nvml=NVML,
    nvml_after=NVML_AFTER, peer=PEER, driver=Nullable(TEXT), cuda_driver=Nullable(TEXT),
)  # fmt: skip
CONFIG = record(
    frameworks=texts(), modes=texts(), ops=texts(), device_requested=Nullable(TEXT), device=Nullable(TEXT), batch_sizes=WHOLES,
    shape=WHOLES, host_buffers=texts(), pythons=MapOf(TEXT, "an object of strings"), methods=texts(), directions=texts(),
    bind=FLAG, concurrent=FLAG, pipeline=FLAG, overlap=FLAG, loader_workers=Nullable(COUNT), cold_source=FLAG,
    staging_chunk_bytes=Nullable(COUNT), argv=texts(),
    imported_from=texts(),
    timing=record(warmup_calls=COUNT, warmup_s=AMOUNT, min_samples=COUNT, min_time_s=AMOUNT, max_samples=COUNT,
                  max_time_s=AMOUNT, settle_s=AMOUNT),
    sim=record(latency_us=AMOUNT, bandwidth_gbps=AMOUNT, jitter=AMOUNT, seed=Nullable(WHOLE), at_once=COUNT, devices=COUNT,
               host_bandwidth_gbps=Nullable(AMOUNT)),
)  # fmt: skip
FINDING = record(name=TEXT, status=TEXT, figure=TEXT)
CHECK = record(
    status=TEXT, link_share=Nullable(AMOUNT), baseline=Nullable(TEXT),
    devices=ListOf(record(device=TEXT, device_name=Nullable(TEXT), ceiling_mbps=Nullable(AMOUNT), status=TEXT,
                          findings=ListOf(FINDING, "a list of objects")), "a list of objects"),
)  # fmt: skip
RUN = record(
    schema=TEXT,  # load reads the tag before anything else
    environment=Field(ENVIRONMENT, required=True, vital=True),
    config=Field(CONFIG, required=True, vital=True),
    created=Field(TEXT, required=True, vital=True),
    series=Field(ListOf(ANY, "a list"), vital=True),  # each series is read on its own: one that does not fit is left out
    status=TEXT,
    xferbench_version=TEXT,
    check=Nullable(CHECK),
)  # fmt: skip

# --- A series ----------------------------------------------------------------------------------------

LINK_SUMMARY = record(
    samples=COUNT, loaded_samples=COUNT, gen_under_load=Nullable(RANGE), width_under_load=Nullable(RANGE), rx_mbps_peak=Nullable(AMOUNT),
    tx_mbps_peak=Nullable(AMOUNT), rx_bytes=Nullable(AMOUNT), rx_bytes_from=Nullable(TEXT),
)  # fmt: skip
SAMPLED = ("t_s", "gen", "width", "rx_kbps", "tx_kbps")  # one entry per sample each; rx_bytes too, where kept


def _samples_agree(link: dict[str, Any]) -> str | None:
    """A link record's sample lists come together, one entry per sample: a reader indexes one by another."""
    lengths = {name: len(link[name]) for name in (*SAMPLED, "rx_bytes") if name in link}
    if lengths and (len(set(lengths.values())) > 1 or not all(name in lengths for name in SAMPLED)):
        return "holds sample lists of different lengths (" + ", ".join(f"{name} {lengths.get(name, 'absent')}" for name in SAMPLED) + ")"
    return None


LINK = record(
    _samples_agree,
    source=Nullable(TEXT), uuid=Nullable(TEXT), nvml_index=Nullable(COUNT), matched_by=Nullable(TEXT), pcie_gen_max=Nullable(COUNT),
    pcie_width_max=Nullable(COUNT), pcie_gen_gpu_max=Nullable(COUNT), field_errors=MapOf(Nullable(TEXT), "an object of strings"),
    interval_s=Nullable(AMOUNT), thinned=Nullable(COUNT), t_s=Field(NUMBERS, vital=True), gen=Field(MAYBE_WHOLES, vital=True),
    width=Field(MAYBE_WHOLES, vital=True), rx_kbps=Field(MAYBE_NUMBERS, vital=True), tx_kbps=Field(MAYBE_NUMBERS, vital=True),
    rx_bytes=Field(MAYBE_NUMBERS, vital=True), rx_bytes_bits=Nullable(BITS), reason=Nullable(TEXT), summary=LINK_SUMMARY,
)  # fmt: skip
NUMA = record(
    requested=record(cpus=Nullable(COUNTS), node=Nullable(WHOLE)), cpus=Nullable(COUNTS), node=Nullable(WHOLE),
    how=Nullable(TEXT), reason=Nullable(TEXT),
)  # fmt: skip
PARAMS = record(
    tool=Nullable(TEXT), samples=Nullable(COUNT), copies_per_sample=Nullable(COUNT), statistic=Nullable(TEXT),
    latency_us=Nullable(AMOUNT), bandwidth_gbps=Nullable(AMOUNT), host_bandwidth_gbps=Nullable(AMOUNT), jitter=Nullable(AMOUNT),
    seed=Nullable(WHOLE), at_once=Nullable(COUNT), devices=Nullable(COUNT), devices_summed=Nullable(COUNT),
    num_workers=Nullable(COUNT), prefetch_factor=Nullable(COUNT), intra_op_threads=Nullable(COUNT), onednn=Nullable(FLAG),
    unified_memory=Nullable(FLAG), pin_memory=Nullable(FLAG), xla_casts_full_batch=Nullable(FLAG), device_clock=Nullable(TEXT),
    hold=Nullable(TEXT), host_copies=Nullable(TEXT), tf_device=Nullable(TEXT), jax_device=Nullable(TEXT), platform=Nullable(TEXT),
    call=Nullable(TEXT), cold_source=Nullable(FLAG), eviction_bytes=Nullable(COUNT), staging_chunk_bytes=Nullable(COUNT),
    staging_slots=Nullable(COUNT), staging_memory=Nullable(TEXT),
)  # fmt: skip
SUMMARY = record(
    peak_mbps=Nullable(AMOUNT), peak_batch_size=Nullable(WHOLE), saturation_batch_size=Nullable(WHOLE), latency_s=Nullable(NUMBER),
    bandwidth_mbps=Nullable(NUMBER), half_bandwidth_bytes=Nullable(NUMBER), fit_rel_rms=Nullable(AMOUNT), cliff=FLAG,
    cliff_batch_size=Nullable(WHOLE), cliff_drop=Nullable(NUMBER), busy_batch_sizes=WHOLES, busy_only=FLAG,
)  # fmt: skip
SERIES = record(
    framework=Field(NAME, required=True, vital=True), mode=Field(NAME, required=True, vital=True),
    op=Field(NAME, required=True, vital=True), device=Field(NAME, required=True, vital=True),
    shape=Field(SHAPE, required=True, vital=True), host_buffer=Field(NAME, vital=True),
    method=Field(one_of(*TIMING_METHODS), vital=True), direction=Field(one_of(*DIRECTIONS), vital=True),
    concurrent=Field(POSITIVE, vital=True), status=Field(one_of("ok", "skipped", "failed"), vital=True),
    points=Field(ListOf(ANY, "a list"), vital=True),  # each point is read on its own
    device_name=Nullable(TEXT), transfer=Nullable(TEXT), clock=Nullable(TEXT), sync=Nullable(TEXT), device_clock=Nullable(TEXT),
    note=Nullable(TEXT), reason=Nullable(TEXT), params=PARAMS, summary=SUMMARY, link=LINK, numa=NUMA,
)  # fmt: skip

# --- A point -----------------------------------------------------------------------------------------

COMPUTE = record(kernel=Nullable(TEXT), repeats=Field(POSITIVE, required=True, vital=True),
                 compute_times_s=Field(NUMBERS, required=True, vital=True), step_times_s=Field(NUMBERS, required=True, vital=True))  # fmt: skip
POINT = record(
    batch_size=Field(WHOLE, required=True, vital=True), bytes=Field(WHOLE, required=True, vital=True),
    # What the point's verdict rests on: a misfit here damages the point, which is then named and left out.
    status=Field(one_of("ok", "error", "skipped"), vital=True), times_s=Field(NUMBERS, vital=True),
    device_times_s=Field(NUMBERS, vital=True), n=Field(COUNT, vital=True), median_s=Field(Nullable(NUMBER), vital=True),
    mbps=Field(Nullable(NUMBER), vital=True), compute=Field(Nullable(COMPUTE), vital=True),
    direction_times_s=Field(Nullable(MapOf(NUMBERS, "an object of lists of numbers")), vital=True),
    # The rest: read as absent where they do not fit.
    error=Nullable(TEXT), warmup_calls=COUNT, p10_s=Nullable(AMOUNT), p90_s=Nullable(AMOUNT), mbps_p10=Nullable(AMOUNT),
    mbps_p90=Nullable(AMOUNT), batches_per_s=Nullable(AMOUNT), images_per_s=Nullable(AMOUNT), device_median_s=Nullable(AMOUNT),
    device_mbps=Nullable(AMOUNT), host_offset=Nullable(COUNT), page_faults_per_call=Nullable(AMOUNT), copies=Nullable(POSITIVE),
    transfers=Nullable(COUNT), verify_s=Nullable(AMOUNT), host_nodes=Nullable(MapOf(COUNT, "an object of whole numbers")),
    pin_s=Nullable(AMOUNT), staging_chunk_bytes=Nullable(POSITIVE), others_cpus=Nullable(AMOUNT), run_wait=Nullable(AMOUNT), cpus=Nullable(POSITIVE),
    direction_mbps=Nullable(MapOf(Nullable(AMOUNT), "an object of numbers")), window_s=Nullable(NUMBERS), overlap=Nullable(AMOUNT),
)  # fmt: skip


__all__ = ["CHECK", "CONFIG", "ENVIRONMENT", "POINT", "RUN", "SERIES", "Field", "Record", "Shape", "Unfit", "describe", "printable"]
