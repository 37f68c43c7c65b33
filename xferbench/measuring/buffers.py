"""Host buffers: allocation with a checkable pattern, the arrival check, and host memory limits."""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from xferbench.core.environment import mac_facts, windows_memory
from xferbench.core.errors import VerificationError

PATTERN_PERIOD = 65521  # a prime, so the pattern never lines up with image or batch boundaries
# Verification reads a device's destination back in chunks of this size, into a staging buffer of at
# most this size that each point allocates (pinned, on CUDA): a 1 GiB batch needs no second 1 GiB of host
# memory. 8 MiB, not more: pinning a staging buffer costs about as much per byte as copying into it, and
# every point pays for it, while a device-to-host copy of 8 MiB (about 0.2 ms at 50 GB/s) already dwarfs
# a copy's own fixed cost (tens of microseconds). A destination in host memory needs no staging at all.
VERIFY_CHUNK_BYTES = 8 * 2**20
# The compare walks both buffers in slices of this size: its temporaries (a boolean per 8 bytes) stay a
# reused 128 KiB in the cache, where one whole-buffer compare faulted in fresh pages for them every point.
COMPARE_SLICE_BYTES = 2**20
ALIAS_PROBE_BYTES = 65536  # bytes re-read to tell a copy from a view of the source


# Verifications begun in this process; each thread's round under way (none: 0). Each round gets patterns of its own.
_rounds_begun = itertools.count(1)
_round = threading.local()


@contextlib.contextmanager
def verification_round() -> Iterator[int]:
    """Inside it, every variant of the pattern is drawn afresh for this verification (its round), so no
    two points' checks send the same bytes: a destination that a framework's allocator hands back from
    an earlier point (a cached block that still holds that point's checked bytes) cannot pass for a copy
    that did not happen. Outside any round, the variants are the fixed ones."""
    previous, _round.now = getattr(_round, "now", 0), next(_rounds_begun)
    try:
        yield _round.now
    finally:
        _round.now = previous


@functools.lru_cache(maxsize=8)
def _pattern(variant: int, round_: int = 0) -> np.ndarray:
    """One period of a variant in a verification round (0: none), drawn once per process, read-only."""
    seed = 20240611 + variant if round_ == 0 else [20240611 + variant, round_]
    # Values 1..255: zero never appears, so a zero-poisoned destination cannot pass by accident.
    pattern = np.random.default_rng(seed).integers(1, 256, PATTERN_PERIOD, dtype=np.uint8)
    pattern.flags.writeable = False
    return pattern


def fill_pattern(buffer: np.ndarray, variant: int = 0) -> None:
    """Fill a uint8 buffer with a fixed pseudo-random periodic pattern, by doubling memcpy.

    verify() refills the source with another variant before its check, so bytes left over from
    warm-up (a recycled allocation, a copy that stopped happening) cannot pass for a transfer; inside
    a verification_round the variant is that round's own, so bytes left over from an earlier point's
    check cannot either.
    """
    flat = buffer.reshape(-1)
    pattern = _pattern(variant, getattr(_round, "now", 0))
    filled = min(flat.size, pattern.size)
    flat[:filled] = pattern[:filled]
    while filled < flat.size:
        step = min(filled, flat.size - filled)
        flat[filled : filled + step] = flat[:step]
        filled += step


def aligned_empty(shape: tuple[int, ...], alignment: int = 64, offset: int = 0) -> np.ndarray:
    """An uninitialised uint8 array whose data starts `offset` bytes past an `alignment`-byte boundary.

    Plain NumPy buffers start wherever malloc puts them (often page + 16 bytes). On some CPUs a
    copy between two buffers whose addresses differ by 8 or 16 bytes mod 4096 runs an order of
    magnitude slower (seen on an AMD EPYC with glibc 2.36 at 200 KB: 2.9 vs 37 GB/s).
    """
    nbytes = math.prod(shape)
    raw = np.empty(nbytes + alignment, dtype=np.uint8)
    start = (offset - raw.ctypes.data) % alignment
    return raw[start : start + nbytes].reshape(shape)


GLIBC_LARGE_OFFSET = 16  # where glibc puts a large block: its 16-byte chunk header past a page


def make_source(shape: tuple[int, ...], aligned: bool = False, offset: int | None = None) -> np.ndarray:
    """A uint8 array filled with the pattern: 64-byte aligned, `offset` bytes past 64 where a path needs
    one placement, or else a plain np.empty of the batch's size.

    The `numpy` source is what a user's batch of that size really gets from this machine's allocator:
    glibc puts a block above its mmap threshold 16 bytes past a page (16 mod 64), macOS's libmalloc a
    large one on a page (0), and a block below the threshold lands wherever the heap has room. glibc's
    threshold rises to the largest mapped block freed (up to 32 MiB), so what earlier batch sizes
    allocated can move a later one onto the heap. Each point records the offset it got (host_offset).

    Every point makes its own: a view into a larger buffer kept from an earlier point would carry that
    buffer's placement and pages (huge or not) rather than what a batch of this size gets, and a copy's
    speed can depend on both. Allocating and filling stays part of a point's cost (docs/method.md).
    """
    if aligned:
        offset = 0
    buffer = np.empty(shape, dtype=np.uint8) if offset is None else aligned_empty(shape, offset=offset)
    fill_pattern(buffer)
    return buffer


def address_offset(array: np.ndarray, modulus: int = 64) -> int:
    """Where the array's data starts, mod 64: 0 is 64-byte aligned; glibc's large blocks give 16, macOS's 0."""
    return int(array.ctypes.data % modulus)


def _equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Byte equality of two flat uint8 arrays of one size, compared 8 bytes at a time (three times faster
    than byte by byte), slice by slice (COMPARE_SLICE_BYTES): every byte is compared, and the check costs
    about one copy of the buffer. Slices start at multiples of 8 from the start, so each slice's whole
    words and its tail (only the last slice has one) cover the buffer exactly."""
    for start in range(0, a.size, COMPARE_SLICE_BYTES):
        x, y = a[start : start + COMPARE_SLICE_BYTES], b[start : start + COMPARE_SLICE_BYTES]
        whole = x.size - x.size % 8
        if not (np.array_equal(x[:whole].view(np.uint64), y[:whole].view(np.uint64)) and np.array_equal(x[whole:], y[whole:])):
            return False
    return True


def _count_wrong(got: np.ndarray, sent: np.ndarray) -> tuple[int, int | None]:
    """How many bytes differ and where the first is, slice by slice: run only once a check has failed."""
    wrong, first = 0, None
    for start in range(0, got.size, COMPARE_SLICE_BYTES):
        differ = got[start : start + COMPARE_SLICE_BYTES] != sent[start : start + COMPARE_SLICE_BYTES]
        count = int(np.count_nonzero(differ))
        if count and first is None:
            first = start + int(np.argmax(differ))
        wrong += count
    return wrong, first


ReadBack = Callable[[int, np.ndarray], None]  # (byte offset, out): fill `out` with the destination's bytes from there


@dataclass(frozen=True)
class HostRead:
    """The read of a destination its framework has already fetched whole into host memory. check_all
    compares it where it lies: a staging copy of bytes already on the host would cost one more pass."""

    flat: np.ndarray

    def __call__(self, offset: int, out: np.ndarray) -> None:
        out[...] = self.flat[offset : offset + out.size]


def read_host(array: np.ndarray) -> ReadBack:
    """The read of a destination in host memory (HostRead), as a flat uint8 view of it."""
    return HostRead(np.asarray(array).reshape(-1))


def check_all(source: np.ndarray, read: ReadBack, what: str, staging: np.ndarray | None = None) -> None:
    """Compare every byte of the destination with the source, chunk by chunk, and raise
    VerificationError unless all match. `read` copies a chunk of the destination into host memory
    (into `staging`, pinned memory where the caller has it, else a fresh chunk buffer): only plain
    device-to-host copies and NumPy are trusted, so the check compiles nothing at run time. A
    destination already in host memory (read_host) is compared where it lies, with no copy.

    A sample of the bytes would miss a short gap: a missing 128 KiB region of a 1 GiB copy
    escapes 4,096 random bytes more often than not."""
    flat = source.reshape(-1)
    wrong, first = 0, None
    if isinstance(read, HostRead) and read.flat.dtype == np.uint8:  # already in host memory: compared in place
        got = read.flat
        if got.size != flat.size:
            raise VerificationError(f"{what}: {got.size:,} bytes arrived where the source has {flat.size:,};"
                                    " the transfer did not deliver the data")  # fmt: skip
        if not _equal(got, flat):
            wrong, first = _count_wrong(got, flat)
    else:
        if staging is None:
            staging = np.empty(min(flat.size, VERIFY_CHUNK_BYTES), dtype=np.uint8)
        for offset in range(0, flat.size, staging.size):
            count = min(staging.size, flat.size - offset)
            got, sent = staging[:count], flat[offset : offset + count]
            read(offset, got)
            if not _equal(got, sent):
                wrong_here, first_here = _count_wrong(got, sent)
                first = offset + first_here if first is None else first  # type: ignore[operator]
                wrong += wrong_here
    if wrong:
        raise VerificationError(
            f"{what}: {wrong:,} of {flat.size:,} bytes differ from the source (the first at byte {first:,});"
            " the transfer did not deliver the data"
        )


def check_arrived(expected: np.ndarray, got: np.ndarray, what: str) -> None:
    """Raise VerificationError unless the bytes read back equal the source's bytes."""
    expected, got = np.asarray(expected), np.asarray(got)
    if expected.shape != got.shape:
        raise VerificationError(f"{what}: read back shape {got.shape}, expected {expected.shape}")
    wrong = int(np.count_nonzero(expected != got))
    if wrong:
        raise VerificationError(
            f"{what}: {wrong} of {expected.size} checked values differ from the source;"
            " the transfer did not deliver the data"
        )


def windows_available_memory() -> int | None:
    """Windows' available physical memory (GlobalMemoryStatusEx's ullAvailPhys, what can be allocated
    without paging, as Linux's MemAvailable), or None where the call is missing or fails."""
    memory = windows_memory()
    return memory[1] if memory and memory[1] else None


def unavailable_checks() -> list[str]:
    """Where Windows did not say how much memory is free: then no batch is refused for want of it."""
    if sys.platform == "win32" and windows_available_memory() is None:
        return ["how much memory is free: Windows' GlobalMemoryStatusEx did not answer, so the memory check"
                " refuses no batch"]  # fmt: skip
    return []


def available_host_memory() -> tuple[int, str] | None:
    """Bytes of host memory a run may count on, and what that figure is: Linux and Windows say what can
    be allocated without swapping ("available"); macOS says only how much there is ("installed"), an
    upper bound. None if unknown."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "available"
    except OSError:
        pass
    if sys.platform == "darwin":  # sysctl hw.memsize, read once per sweep with the Mac's other facts
        installed = mac_facts().get("memory_bytes")
        return (installed, "installed") if isinstance(installed, int) and installed > 0 else None
    if sys.platform == "win32":
        available = windows_available_memory()
        return (available, "available") if available is not None else None
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "available"
    except (ValueError, OSError, AttributeError):
        return None
