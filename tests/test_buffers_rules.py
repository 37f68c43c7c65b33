"""The host buffers' rules, byte for byte: the periodic pattern and its doubling fill, aligned allocation and
the source's placement, the 8-byte compare, the chunked arrival check and its exact message, and the host
memory figure on Linux, macOS, Windows and elsewhere (each platform simulated as strictly as the real OS
answers: no /proc off Linux, sysctl's own output, MEMORYSTATUSEX filled only when its dwLength is set)."""

from __future__ import annotations

import ctypes
import io
import math
import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from xferbench.core.errors import VerificationError
from xferbench.measuring import buffers
from xferbench.measuring.buffers import (
    _equal,
    _pattern,
    address_offset,
    aligned_empty,
    check_all,
    check_arrived,
    fill_pattern,
    make_source,
    read_host,
)

PERIOD = 65521
# The first lines of this machine's /proc/meminfo, as the kernel writes them (MemAvailable since Linux 3.14).
MEMINFO = """\
MemTotal:       24684092 kB
MemFree:        15105836 kB
MemAvailable:   23720500 kB
Buffers:          103508 kB
Cached:          8262392 kB
SwapCached:            0 kB
Active:          4341764 kB
Inactive:        4147764 kB
Active(anon):       1576 kB
Inactive(anon):   130908 kB
"""
OLD_MEMINFO = "".join(line + "\n" for line in MEMINFO.splitlines() if not line.startswith("MemAvailable:"))
SYSCONF = {"SC_AVPHYS_PAGES": 3_000_001, "SC_PAGE_SIZE": 4096}  # what os.sysconf answers on a BSD with 12 GB free
# MEMORYSTATUSEX as Windows fills it: dwLength and dwMemoryLoad (32 bits each), then seven 64-bit counts.
WINDOWS_FIELDS = {4: 37, 8: 34_359_738_368, 16: 12_000_000_000, 24: 39_728_447_488, 32: 15_000_000_000,
                  40: 140_737_488_224_256, 48: 140_730_000_000_000, 56: 0}  # fmt: skip
WINDOWS_SILENT = ("how much memory is free: Windows' GlobalMemoryStatusEx did not answer, so the memory check"
                  " refuses no batch")  # fmt: skip


def expected_pattern(variant: int) -> np.ndarray:
    """The pattern as its definition gives it: PCG64 seeded 20240611 + variant, 65521 bytes drawn from 1..255."""
    return np.random.default_rng(20240611 + variant).integers(1, 256, PERIOD, dtype=np.uint8)


def periodic(size: int, variant: int = 0) -> np.ndarray:
    """`size` bytes of the pattern repeated from byte 0."""
    return np.resize(expected_pattern(variant), size)


def recording_read(destination: np.ndarray, reads: list[tuple[int, int]], outs: list[np.ndarray] | None = None) -> Any:
    """A read-back of `destination` that records the (offset, size) each call asks for, and each `out` it is given."""
    flat = destination.reshape(-1)

    def read(offset: int, out: np.ndarray) -> None:
        reads.append((offset, out.size))
        if outs is not None:
            outs.append(out)
        out[...] = flat[offset : offset + out.size]

    return read


def message(excinfo: pytest.ExceptionInfo[VerificationError]) -> str:
    """The error's one argument, the line the CLI prints."""
    assert excinfo.type is VerificationError and len(excinfo.value.args) == 1
    return excinfo.value.args[0]


# ---- the pattern


def test_the_pattern_is_65521_bytes_of_1_to_255_from_a_fixed_seed_per_variant() -> None:
    """A prime period; zero never drawn, both ends of 1..255 drawn; variant 1 is another seed, not a shift of 0."""
    assert buffers.PATTERN_PERIOD == PERIOD
    zero, one = _pattern(0), _pattern(1)
    assert zero.dtype == np.uint8 and zero.shape == (PERIOD,) and one.shape == (PERIOD,)
    assert np.array_equal(zero, expected_pattern(0)) and np.array_equal(one, expected_pattern(1))
    assert int(zero.min()) == 1 and int(zero.max()) == 255 and int(one.min()) == 1 and int(one.max()) == 255
    assert np.count_nonzero(zero != one) > PERIOD * 0.99
    assert not np.array_equal(_pattern(2), zero) and not np.array_equal(_pattern(2), one)


def test_the_module_constants_are_the_documented_sizes() -> None:
    """8 MiB verify chunks, 1 MiB compare slices, a 65,536-byte alias probe, glibc's 16-byte large-block offset."""
    assert buffers.VERIFY_CHUNK_BYTES == 8_388_608 and buffers.COMPARE_SLICE_BYTES == 1_048_576
    assert buffers.ALIAS_PROBE_BYTES == 65_536
    assert buffers.GLIBC_LARGE_OFFSET == 16


def test_a_buffer_shorter_than_the_period_holds_the_patterns_first_bytes() -> None:
    """1, 7, 8, 9 and 1,000 bytes, and exactly one period: the pattern's prefix, variant 0 by default."""
    for size in (1, 7, 8, 9, 1000, PERIOD - 1, PERIOD):
        buffer = np.zeros(size, np.uint8)
        fill_pattern(buffer)
        assert np.array_equal(buffer, expected_pattern(0)[:size]), size
    buffer = np.zeros(9, np.uint8)
    fill_pattern(buffer, 1)
    assert np.array_equal(buffer, expected_pattern(1)[:9])


def test_the_doubling_fill_repeats_the_pattern_across_period_boundaries() -> None:
    """One byte past a period, several doublings, and a tail shorter than the last doubling: byte k is pattern[k % 65521]."""
    for size in (PERIOD + 1, 2 * PERIOD - 1, 2 * PERIOD + 3, 4 * PERIOD + 5, 7 * PERIOD + 12_345):
        for variant in (0, 1):
            buffer = np.zeros(size, np.uint8)
            fill_pattern(buffer, variant)
            assert np.array_equal(buffer, periodic(size, variant)), (size, variant)
    buffer = np.zeros(2 * PERIOD + 3, np.uint8)
    fill_pattern(buffer)
    assert buffer[PERIOD] == buffer[0] and buffer[2 * PERIOD + 2] == buffer[2] and buffer[PERIOD - 1] == expected_pattern(0)[-1]


def test_a_shaped_buffer_is_filled_in_memory_order_and_an_empty_one_is_left_alone() -> None:
    """A (3, 40000) batch holds the pattern row after row, through the period's end; a zero-size one raises nothing."""
    batch = np.zeros((3, 40_000), np.uint8)
    fill_pattern(batch, 1)
    assert np.array_equal(batch.reshape(-1), periodic(120_000, 1))
    empty = np.zeros((0, 5), np.uint8)
    fill_pattern(empty)
    assert empty.shape == (0, 5)


# ---- placement


def test_aligned_empty_starts_offset_bytes_past_the_alignment_and_holds_exactly_the_shapes_bytes() -> None:
    """Offsets 0 and 16 mod 64 for many sizes; the array is the product of the shape, cut from alignment spare bytes."""
    for shape in [(1,), (7,), (8,), (9,), (3, 5), (2, 3, 5), (1000,), (4, 256, 256, 3)]:
        for offset in (0, 16, 48):
            a = aligned_empty(shape, offset=offset)
            assert a.shape == shape and a.dtype == np.uint8 and a.size == math.prod(shape)
            assert a.ctypes.data % 64 == offset, (shape, offset)
            assert a.base is not None and a.base.size == math.prod(shape) + 64
        default = aligned_empty(shape)
        assert default.ctypes.data % 64 == 0 and default.base.size == math.prod(shape) + 64


def test_aligned_empty_takes_any_alignment_and_reduces_the_offset_modulo_it() -> None:
    """A page alignment with 16 bytes past it; 80 past 64 is 16; the spare bytes are the alignment's own."""
    for shape in [(5,), (100, 3), (65_536,)]:
        page = aligned_empty(shape, alignment=4096, offset=16)
        assert page.ctypes.data % 4096 == 16 and page.base.size == math.prod(shape) + 4096 and page.shape == shape
        assert aligned_empty(shape, alignment=64, offset=80).ctypes.data % 64 == 16
        odd = aligned_empty(shape, alignment=24, offset=5)
        assert odd.ctypes.data % 24 == 5 and odd.base.size == math.prod(shape) + 24


def test_address_offset_is_the_data_address_modulo_64_by_default() -> None:
    """A buffer 208 bytes past a page is 16 mod 64, 80 mod 128 and 208 mod 4096."""
    for shape in [(10,), (3, 100)]:
        a = aligned_empty(shape, alignment=4096, offset=208)
        assert address_offset(a) == 16 and address_offset(a, 128) == 80 and address_offset(a, 4096) == 208
        assert type(address_offset(a)) is int
        b = aligned_empty(shape, alignment=4096, offset=4095)
        assert address_offset(b) == 63 and address_offset(b, 4096) == 4095


def test_make_source_is_a_plain_numpy_batch_unless_an_offset_or_alignment_is_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """No offset: one np.empty of the batch's shape; an offset: that many bytes past 64; aligned=True overrides the offset."""
    real_empty = np.empty
    calls: list[tuple[Any, Any]] = []

    def empty(shape: Any, dtype: Any = float, **kwargs: Any) -> np.ndarray:
        if sys._getframe(1).f_code.co_name in ("make_source", "aligned_empty"):  # not the generator's own buffers
            calls.append((shape, np.dtype(dtype)))
        return real_empty(shape, dtype, **kwargs)

    monkeypatch.setattr(np, "empty", empty)
    plain = make_source((4, 5))
    assert calls == [((4, 5), np.dtype(np.uint8))] and plain.shape == (4, 5) and plain.dtype == np.uint8
    assert np.array_equal(plain.reshape(-1), expected_pattern(0)[:20])
    calls.clear()
    placed = make_source((4, 5), offset=16)
    assert calls == [(20 + 64, np.dtype(np.uint8))] and placed.ctypes.data % 64 == 16 and placed.shape == (4, 5)
    assert np.array_equal(placed.reshape(-1), expected_pattern(0)[:20])
    calls.clear()
    for offset in (None, 16, 48):
        aligned = make_source((3, 7), aligned=True, offset=offset)
        assert aligned.ctypes.data % 64 == 0 and aligned.shape == (3, 7) and aligned.dtype == np.uint8
        assert np.array_equal(aligned.reshape(-1), expected_pattern(0)[:21])
    assert calls == [(21 + 64, np.dtype(np.uint8))] * 3
    assert make_source((9,), offset=0).ctypes.data % 64 == 0 and make_source((9,), aligned=False, offset=32).ctypes.data % 64 == 32


def test_a_source_longer_than_the_period_carries_the_repeating_pattern() -> None:
    """A 2 x 65,521 + 7 byte batch, placed or not: byte k is pattern[k % 65521], never zero."""
    for source in (make_source((2, PERIOD + 3)), make_source((2, PERIOD + 3), offset=16), make_source((2, PERIOD + 3), aligned=True)):
        assert np.array_equal(source.reshape(-1), periodic(2 * PERIOD + 6)) and int(source.min()) == 1


# ---- the compare


def test_equal_compares_every_byte_around_the_8_byte_boundary() -> None:
    """Sizes 0 to 17 (7, 8 and 9 among them): equal copies match; one byte changed anywhere, head or tail, does not."""
    for size in range(18):
        a = periodic(size)
        assert _equal(a, a.copy()) is True, size
        for at in range(size):
            b = a.copy()
            b[at] ^= 0x80
            assert _equal(a, b) is False, (size, at)
            assert _equal(b, a) is False, (size, at)


def test_equal_sees_a_difference_only_in_the_tail_or_only_in_the_whole_words() -> None:
    """Nine bytes: the last one alone differs, or the first alone; 16 bytes: the last of the second word."""
    a = periodic(9)
    tail, head = a.copy(), a.copy()
    tail[8] += 1
    head[0] += 1
    assert not _equal(a, tail) and not _equal(a, head)
    b = periodic(16)
    c = b.copy()
    c[15] -= 1
    assert not _equal(b, c) and _equal(b[:15], c[:15])


def test_read_host_copies_the_asked_for_slice_of_the_flattened_array() -> None:
    """Offset 3 for 4 bytes of a 2 x 5 array is bytes 3..6; the last 2 bytes read from offset 8."""
    array = np.arange(10, dtype=np.uint8).reshape(2, 5)
    read = read_host(array)
    out = np.zeros(4, np.uint8)
    read(3, out)
    assert out.tolist() == [3, 4, 5, 6]
    last = np.zeros(2, np.uint8)
    read(8, last)
    assert last.tolist() == [8, 9]
    whole = np.zeros(10, np.uint8)
    read(0, whole)
    assert whole.tolist() == list(range(10))


# ---- the arrival check


def test_check_all_reads_in_chunks_of_the_verify_size_with_a_short_last_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 20-byte source in 8-byte chunks: reads at 0, 8 and 16, the last of 4 bytes; a perfect copy passes."""
    monkeypatch.setattr(buffers, "VERIFY_CHUNK_BYTES", 8)
    source = make_source((4, 5))
    reads: list[tuple[int, int]] = []
    outs: list[np.ndarray] = []
    assert check_all(source, recording_read(source.copy(), reads, outs), "copy") is None
    assert reads == [(0, 8), (8, 8), (16, 4)]
    assert all(out.dtype == np.uint8 and out.base is not None and out.base.size == 8 for out in outs)
    assert outs[0].base is outs[1].base is outs[2].base  # one chunk buffer, reused


def test_check_all_chunks_at_the_buffers_size_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunk equal to the buffer: one read; one byte more: one read of the buffer's size; 7, 8 and 9 bytes in 8s."""
    for chunk, size, expected in [(20, 20, [(0, 20)]), (21, 20, [(0, 20)]), (8, 7, [(0, 7)]), (8, 8, [(0, 8)]),
                                  (8, 9, [(0, 8), (8, 1)]), (8, 16, [(0, 8), (8, 8)]), (8, 17, [(0, 8), (8, 8), (16, 1)])]:  # fmt: skip
        monkeypatch.setattr(buffers, "VERIFY_CHUNK_BYTES", chunk)
        source = make_source((size,))
        reads: list[tuple[int, int]] = []
        outs: list[np.ndarray] = []
        check_all(source, recording_read(source.copy(), reads, outs), "edge")
        assert reads == expected, (chunk, size)
        assert outs[0].base is not None and outs[0].base.size == min(chunk, size), (chunk, size)


def test_check_all_reads_into_the_callers_staging_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Given a 6-byte staging buffer, the 8 MiB default is ignored: reads of 6, 6 and 3 bytes, each a view of it."""
    monkeypatch.setattr(buffers, "VERIFY_CHUNK_BYTES", 4)
    source = make_source((15,))
    staging = np.zeros(6, np.uint8)
    reads: list[tuple[int, int]] = []
    outs: list[np.ndarray] = []
    check_all(source, recording_read(source.copy(), reads, outs), "staged", staging)
    assert reads == [(0, 6), (6, 6), (12, 3)]
    assert all(out.base is staging for out in outs)
    assert np.array_equal(staging[:3], source[12:15]) and np.array_equal(staging[3:], source[9:12])
    wrong = source.copy()
    wrong[13] ^= 1
    with pytest.raises(VerificationError) as excinfo:
        check_all(source, read_host(wrong), "staged", staging)
    assert message(excinfo) == "staged: 1 of 15 bytes differ from the source (the first at byte 13); the transfer did not deliver the data"


def test_check_all_without_staging_uses_one_buffer_the_size_of_a_small_source() -> None:
    """Under the 8 MiB chunk, the default chunk buffer is the source's size: a single read of it all."""
    source = make_source((3, 1000))
    reads: list[tuple[int, int]] = []
    outs: list[np.ndarray] = []
    check_all(source, recording_read(source.copy(), reads, outs), "small")
    assert reads == [(0, 3000)] and outs[0].base.size == 3000 and outs[0].dtype == np.uint8


def test_check_all_catches_a_wrong_byte_in_the_last_partial_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The very last byte of a 20-byte source read in 8s, and the first byte of that short chunk."""
    monkeypatch.setattr(buffers, "VERIFY_CHUNK_BYTES", 8)
    source = make_source((20,))
    for at in (19, 16):
        wrong = source.copy()
        wrong[at] ^= 0xFF
        with pytest.raises(VerificationError) as excinfo:
            check_all(source, read_host(wrong), "tail")
        assert message(excinfo) == (f"tail: 1 of 20 bytes differ from the source (the first at byte {at});"
                                    " the transfer did not deliver the data")  # fmt: skip


def test_check_all_counts_every_wrong_byte_and_names_the_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wrong bytes in two chunks: all counted, and the first is the earlier chunk's, at its place in the whole source."""
    monkeypatch.setattr(buffers, "VERIFY_CHUNK_BYTES", 8)
    source = make_source((5, 4))
    wrong = source.copy().reshape(-1)
    wrong[[10, 12, 17]] ^= 0x55  # two in the second chunk, one in the short third; the first chunk is right
    with pytest.raises(VerificationError) as excinfo:
        check_all(source, read_host(wrong), "batch 5")
    assert message(excinfo) == "batch 5: 3 of 20 bytes differ from the source (the first at byte 10); the transfer did not deliver the data"


def test_check_all_writes_its_counts_with_thousands_separators(monkeypatch: pytest.MonkeyPatch) -> None:
    """A zeroed tail from byte 1,234 of 2,500 (chunks of 1,000): 1,266 wrong bytes across two chunks, the first at 1,234."""
    monkeypatch.setattr(buffers, "VERIFY_CHUNK_BYTES", 1000)
    source = make_source((2, 1250))
    wrong = source.copy().reshape(-1)
    wrong[1234:] = 0  # the pattern has no zero: every one of these differs
    with pytest.raises(VerificationError) as excinfo:
        check_all(source, read_host(wrong), "torch/pinned/copy")
    assert message(excinfo) == ("torch/pinned/copy: 1,266 of 2,500 bytes differ from the source (the first at byte 1,234);"
                                " the transfer did not deliver the data")  # fmt: skip


def test_check_all_reports_a_wrong_first_byte_as_byte_0(monkeypatch: pytest.MonkeyPatch) -> None:
    """A destination of zeros: every byte wrong, the first at 0, over chunks of 8 and one buffer of the source's size."""
    source = make_source((9,))
    for chunk in (8, 64):
        monkeypatch.setattr(buffers, "VERIFY_CHUNK_BYTES", chunk)
        with pytest.raises(VerificationError) as excinfo:
            check_all(source, read_host(np.zeros(9, np.uint8)), "zeros")
        assert message(excinfo) == "zeros: 9 of 9 bytes differ from the source (the first at byte 0); the transfer did not deliver the data"


def test_check_all_finds_one_wrong_byte_wherever_it_is_in_place_or_through_staging(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every byte is checked: 16-byte compare slices in 24-byte read chunks, over sizes around both edges; one
    byte changed at any place, read in place (read_host) or staged (a device's read), is found and named."""
    monkeypatch.setattr(buffers, "COMPARE_SLICE_BYTES", 16)
    monkeypatch.setattr(buffers, "VERIFY_CHUNK_BYTES", 24)
    for size in (1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 47, 48, 49, 61):
        source = make_source((size,))
        for at in range(size):
            wrong = source.copy()
            wrong[at] ^= 0x01
            for read in (read_host(wrong), recording_read(wrong, [])):
                with pytest.raises(VerificationError) as excinfo:
                    check_all(source, read, "one byte")
                assert message(excinfo) == (f"one byte: 1 of {size} bytes differ from the source (the first at byte {at});"
                                            " the transfer did not deliver the data"), (size, at)  # fmt: skip
        assert check_all(source, read_host(source.copy()), "same") is None
        assert check_all(source, recording_read(source.copy(), []), "same") is None


def test_a_host_destination_is_compared_where_it_lies_without_a_read() -> None:
    """read_host's destination is compared in place: no read into staging (the staging buffer is left as it was)."""
    source = make_source((3, 40))
    dest = source.copy()
    staging = np.zeros(16, np.uint8)
    check_all(source, read_host(dest), "in place", staging)
    assert not staging.any()
    assert isinstance(read_host(dest), buffers.HostRead) and np.shares_memory(read_host(dest).flat, dest)


def test_a_host_destination_of_another_size_fails_rather_than_comparing_a_prefix() -> None:
    """A destination one byte longer (or shorter) than the source is no delivery of it, even with every shared byte right."""
    source = make_source((10,))
    for size in (11, 9):
        dest = np.zeros(size, np.uint8)
        dest[: min(size, 10)] = source[: min(size, 10)]
        with pytest.raises(VerificationError) as excinfo:
            check_all(source, read_host(dest), "sized")
        assert message(excinfo) == f"sized: {size} bytes arrived where the source has 10; the transfer did not deliver the data"


def test_each_verification_round_draws_its_own_variants_and_outside_them_they_are_fixed() -> None:
    """Inside a round, variant 1 differs from the fixed variant 1 and from the last round's at nearly every byte; values
    stay 1..255; after the round (nested or not) the fixed variants come back."""
    fixed = np.empty(PERIOD, np.uint8)
    fill_pattern(fixed, variant=1)
    seen = [fixed]
    for _ in range(3):
        with buffers.verification_round() as round_:
            assert round_ > 0
            drawn = np.empty(PERIOD, np.uint8)
            fill_pattern(drawn, variant=1)
            with buffers.verification_round():
                inner = np.empty(PERIOD, np.uint8)
                fill_pattern(inner, variant=1)
            again = np.empty(PERIOD, np.uint8)
            fill_pattern(again, variant=1)
        assert np.array_equal(drawn, again) and drawn.min() >= 1  # one round: one pattern per variant
        for earlier in [*seen, inner]:
            assert np.count_nonzero(drawn == earlier) < PERIOD // 50
        seen.append(drawn)
    after = np.empty(PERIOD, np.uint8)
    fill_pattern(after, variant=1)
    assert np.array_equal(after, expected_pattern(1))


def test_a_verification_round_is_its_threads_own() -> None:
    """A round entered in one thread leaves another thread's patterns as they were (the fixed ones there), and two
    threads' rounds draw different patterns."""
    import threading

    drawn: dict[str, np.ndarray] = {}

    def fill(name: str, in_round: bool) -> None:
        buffer = np.empty(PERIOD, np.uint8)
        if in_round:
            with buffers.verification_round():
                fill_pattern(buffer, variant=1)
        else:
            fill_pattern(buffer, variant=1)
        drawn[name] = buffer

    with buffers.verification_round():
        mine = np.empty(PERIOD, np.uint8)
        fill_pattern(mine, variant=1)
        for name, in_round in (("plain", False), ("rounded", True)):
            thread = threading.Thread(target=fill, args=(name, in_round))
            thread.start()
            thread.join()
    assert np.array_equal(drawn["plain"], expected_pattern(1))
    assert np.count_nonzero(drawn["rounded"] == mine) < PERIOD // 50 and not np.array_equal(mine, expected_pattern(1))


def test_check_arrived_passes_equal_values_of_any_array_like() -> None:
    """Arrays, lists and numbers equal to the source raise nothing."""
    assert check_arrived(np.arange(12).reshape(3, 4), np.arange(12).reshape(3, 4), "a") is None
    assert check_arrived([1, 2, 3], [1, 2, 3], "list") is None
    assert check_arrived(7, np.int64(7), "scalar") is None


def test_check_arrived_names_a_shape_that_differs_before_any_value() -> None:
    """Same bytes in a (3, 2) for a (2, 3): the shape message, got's shape first; a list's shape counts too."""
    with pytest.raises(VerificationError) as excinfo:
        check_arrived(np.zeros((2, 3)), np.zeros((3, 2)), "labels")
    assert message(excinfo) == "labels: read back shape (3, 2), expected (2, 3)"
    with pytest.raises(VerificationError) as excinfo:
        check_arrived([1, 2, 3], [1, 2], "list")
    assert message(excinfo) == "list: read back shape (2,), expected (3,)"


def test_check_arrived_counts_the_values_that_differ_without_separators() -> None:
    """Three of 1500 values changed: their count and the total, plain integers."""
    expected = np.arange(1500, dtype=np.int32)
    got = expected.copy()
    got[[0, 700, 1499]] = -1
    with pytest.raises(VerificationError) as excinfo:
        check_arrived(expected, got, "tf/eager/copy")
    assert message(excinfo) == "tf/eager/copy: 3 of 1500 checked values differ from the source; the transfer did not deliver the data"
    with pytest.raises(VerificationError) as excinfo:
        check_arrived([5], [6], "one")
    assert message(excinfo) == "one: 1 of 1 checked values differ from the source; the transfer did not deliver the data"


# ---- host memory, each platform simulated


def serve_files(files: dict[str, str]) -> Any:
    """An `open` that serves only these paths, as text, and finds nothing else, as the OS would."""

    def fake_open(path: Any, mode: str = "r", *args: Any, **kwargs: Any) -> io.StringIO:
        assert mode == "r" and not args, (mode, args)
        if str(path) not in files:
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return io.StringIO(files[str(path)])

    return fake_open


def fake_sysconf(answers: dict[str, int]) -> Any:
    """os.sysconf: the named values, ValueError for a name this system does not know."""

    def sysconf(name: str) -> int:
        if name not in answers:
            raise ValueError("unrecognized configuration name")
        return answers[name]

    return sysconf


def fake_facts(calls: list[str], memory_bytes: int | None = None) -> Any:
    """environment.mac_facts as a Mac answers it, its installed memory `memory_bytes` (None: sysctl gave no
    number); each call recorded, where the real one would have read macOS's tools once per sweep."""

    def mac_facts() -> dict[str, Any]:
        calls.append("mac_facts")
        return {"chip": "Apple M1 Pro", "memory_bytes": memory_bytes}

    return mac_facts


def on_platform(monkeypatch: pytest.MonkeyPatch, platform: str, files: dict[str, str], sysconf: Any = None) -> list[Any]:
    """Pretend to be `platform` with only `files` readable and os.sysconf as given; the Mac's facts are recorded and
    hold no memory figure."""
    calls: list[Any] = []
    monkeypatch.setattr(buffers, "sys", SimpleNamespace(platform=platform))
    monkeypatch.setattr(buffers, "open", serve_files(files), raising=False)
    monkeypatch.setattr(buffers, "os", SimpleNamespace(sysconf=sysconf or fake_sysconf(SYSCONF)))
    monkeypatch.setattr(buffers, "mac_facts", fake_facts(calls))
    monkeypatch.delattr(ctypes, "windll", raising=False)
    return calls


class Kernel32:
    """GlobalMemoryStatusEx as Windows runs it: refuses unless dwLength is the structure's 64 bytes, else fills it."""

    def __init__(self, answer: int = 1, fields: dict[int, int] | None = None, error: BaseException | None = None) -> None:
        self.answer, self.fields, self.error = answer, WINDOWS_FIELDS if fields is None else fields, error
        self.lengths: list[tuple[int, int]] = []

    def GlobalMemoryStatusEx(self, pointer: Any) -> int:  # noqa: N802 (Windows' name)
        """Fill the MEMORYSTATUSEX behind `pointer` (a ctypes.byref), and say whether it worked."""
        if self.error is not None:
            raise self.error
        address = ctypes.addressof(pointer._obj)
        self.lengths.append((ctypes.c_uint32.from_address(address).value, ctypes.sizeof(pointer._obj)))
        if self.lengths[-1] != (64, 64):
            return 0
        ctypes.c_uint32.from_address(address + 4).value = self.fields.get(4, 0)
        for at in range(8, 64, 8):
            ctypes.c_uint64.from_address(address + at).value = self.fields.get(at, 0)
        return self.answer


def on_windows(monkeypatch: pytest.MonkeyPatch, kernel32: Kernel32) -> list[Any]:
    """Windows: no /proc, os.sysconf answering nothing useful, and this kernel32."""
    calls = on_platform(monkeypatch, "win32", {})
    monkeypatch.setattr(ctypes, "windll", SimpleNamespace(kernel32=kernel32), raising=False)
    return calls


def test_linux_counts_memavailable_in_kibibytes_as_available(monkeypatch: pytest.MonkeyPatch) -> None:
    """/proc/meminfo's MemAvailable line, kB times 1,024, ahead of sysconf; no sysctl, no Windows call."""
    calls = on_platform(monkeypatch, "linux", {"/proc/meminfo": MEMINFO})
    assert buffers.available_host_memory() == (23_720_500 * 1024, "available")
    assert calls == []
    assert buffers.unavailable_checks() == []


def test_linux_without_memavailable_falls_back_to_sysconfs_free_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel before 3.14 has no MemAvailable (MemFree is not it): available pages times the page size."""
    calls = on_platform(monkeypatch, "linux", {"/proc/meminfo": OLD_MEMINFO})
    assert buffers.available_host_memory() == (3_000_001 * 4096, "available") and calls == []


def test_a_system_without_proc_answers_from_sysconf_or_not_at_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """A BSD: SC_AVPHYS_PAGES x SC_PAGE_SIZE; None where sysconf lacks a name, fails, or is missing."""
    on_platform(monkeypatch, "freebsd14", {})
    assert buffers.available_host_memory() == (12_288_004_096, "available")
    monkeypatch.setattr(buffers, "os", SimpleNamespace(sysconf=fake_sysconf({"SC_PAGE_SIZE": 4096})))
    assert buffers.available_host_memory() is None

    def refuses(name: str) -> int:
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(buffers, "os", SimpleNamespace(sysconf=refuses))
    assert buffers.available_host_memory() is None
    monkeypatch.setattr(buffers, "os", SimpleNamespace())  # no sysconf at all
    assert buffers.available_host_memory() is None
    assert buffers.unavailable_checks() == []


def test_macos_reports_sysctls_installed_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """No /proc: the Mac's installed bytes (sysctl hw.memsize, read once with its other facts), not sysconf's figure."""
    on_platform(monkeypatch, "darwin", {})
    calls: list[str] = []
    monkeypatch.setattr(buffers, "mac_facts", fake_facts(calls, 34_359_738_368))
    assert buffers.available_host_memory() == (34_359_738_368, "installed")
    assert calls == ["mac_facts"]
    assert buffers.unavailable_checks() == []


def test_macos_without_an_answer_from_sysctl_knows_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """No number from sysctl (None), or a zero: None, never the sysconf figure."""
    calls = on_platform(monkeypatch, "darwin", {})
    assert buffers.available_host_memory() is None and calls == ["mac_facts"]
    monkeypatch.setattr(buffers, "mac_facts", fake_facts(calls, 0))
    assert buffers.available_host_memory() is None and calls == ["mac_facts"] * 2


def test_windows_memory_is_ullavailphys_from_a_64_byte_memorystatusex(monkeypatch: pytest.MonkeyPatch) -> None:
    """dwLength set to 64 before the call; the figure is ullAvailPhys (byte 16), not the total or the page file."""
    kernel32 = Kernel32()
    calls = on_windows(monkeypatch, kernel32)
    assert buffers.windows_available_memory() == 12_000_000_000
    assert type(buffers.windows_available_memory()) is int
    assert buffers.available_host_memory() == (12_000_000_000, "available")
    assert buffers.unavailable_checks() == []
    assert kernel32.lengths == [(64, 64)] * 4 and calls == []


def test_windows_without_an_answer_gives_no_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed call (0), even one that left a figure behind; a zero ullAvailPhys; an OSError; no windll: None each time."""
    for kernel32 in (Kernel32(answer=0), Kernel32(fields={**WINDOWS_FIELDS, 16: 0}), Kernel32(error=OSError(5, "Access is denied"))):
        on_windows(monkeypatch, kernel32)
        assert buffers.windows_available_memory() is None
        assert buffers.available_host_memory() is None
        assert buffers.unavailable_checks() == [WINDOWS_SILENT]
    on_platform(monkeypatch, "win32", {})  # ctypes without windll: AttributeError
    assert buffers.windows_available_memory() is None and buffers.available_host_memory() is None
    assert buffers.unavailable_checks() == [WINDOWS_SILENT]


def test_only_windows_reports_the_missing_memory_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Linux and macOS have no GlobalMemoryStatusEx and need none: no unavailable check there."""
    for platform in ("linux", "darwin"):
        on_platform(monkeypatch, platform, {"/proc/meminfo": MEMINFO})
        assert buffers.windows_available_memory() is None
        assert buffers.unavailable_checks() == []
    on_platform(monkeypatch, "linux", {})
    monkeypatch.setattr(ctypes, "windll", SimpleNamespace(kernel32=Kernel32(answer=0)), raising=False)
    assert buffers.unavailable_checks() == []
