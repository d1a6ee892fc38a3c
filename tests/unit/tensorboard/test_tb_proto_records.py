"""TFRecord framing and scanning: the published golden vector, round trips, damaged records."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.tensorboard._proto import (
    file_version_event,
    frame,
    frame_many,
    masked_crc32c,
    scan,
    scan_blocks,
)
from stoker.tensorboard._proto.records import MAX_RECORD_BYTES, masked_crc32c_many, next_header

# The file_version record used as a test vector by TensorBoard's Rust data server (tf_record.rs).
_GOLDEN_PAYLOAD = b"\x09\x00\x00\x80\x38\x99\xd6\xd7\x41\x1a\x0dbrain.Event:2"


def test_file_version_record_matches_the_golden_vector() -> None:
    """The 24-byte file_version event frames with length CRC 0x224b7fa3 and data CRC 0xab364b12."""
    (wall_time,) = struct.unpack("<d", _GOLDEN_PAYLOAD[1:9])
    payload = file_version_event(wall_time)
    assert payload == _GOLDEN_PAYLOAD
    framed = frame(payload)
    length, length_crc = struct.unpack("<QI", framed[:12])
    (data_crc,) = struct.unpack("<I", framed[-4:])
    assert (length, length_crc, data_crc) == (24, 0x224B7FA3, 0xAB364B12)


def test_masked_crc_matches_tensorboard() -> None:
    """The masked CRC32C equals TensorBoard's own implementation for a few inputs."""
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as theirs

    for data in (b"", b"a", b"brain.Event:2" * 7, bytes(range(256))):
        assert masked_crc32c(data) == theirs(data)


@given(st.lists(st.binary(max_size=300), max_size=8))
def test_frame_many_reads_back_record_by_record(payloads: list[bytes]) -> None:
    """Records framed in one buffer scan back in order, each equal to its payload."""
    buffer = frame_many(payloads)
    assert buffer == b"".join(frame(p) for p in payloads)
    result = scan(buffer)
    assert [data for _, data in result.records] == payloads
    assert (result.end, result.skipping, result.damage) == (len(buffer), False, [])


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda b: b[:5], None),
        (lambda b: b[:-1], None),
        (lambda b: b[:8] + bytes([b[8] ^ 1]) + b[9:], "length checksum mismatch"),
        (lambda b: b[:14] + bytes([b[14] ^ 1]) + b[15:], "data checksum mismatch"),
    ],
    ids=["truncated-header", "truncated-record", "length-checksum", "data-checksum"],
)
def test_damaged_records_are_waited_for_or_reported(damage: object, reason: str | None) -> None:
    """A truncated record is a tail to wait for; a flipped bit is damage named by its reason."""
    framed = frame(b"payload bytes")
    assert callable(damage)
    result = scan(damage(framed))
    assert result.records == []
    if reason is None:
        assert (result.end, result.skipping, result.damage) == (0, False, [])
    else:
        assert result.damage == [(0, reason)]
        assert result.skipping


def test_empty_buffer_ends_cleanly() -> None:
    """A buffer with no bytes left yields no record and no damage."""
    assert tuple(scan(b"")) == ([], 0, False, [], 0)


def _first_header_by_hand(buffer: bytes, start: int) -> int:
    """The first offset >= start whose length (< 2**31) has a matching checksum, by brute force."""
    for offset in range(start, len(buffer) - 11):
        length, stored = struct.unpack_from("<QI", buffer, offset)
        if length < 1 << 31 and masked_crc32c(buffer[offset : offset + 8]) == stored:
            return offset
    return max(start, len(buffer) - 11)


def _plausible(length: int) -> bytes:
    packed = struct.pack("<Q", length)
    return packed + struct.pack("<I", masked_crc32c(packed))


@given(
    st.lists(
        st.one_of(
            st.binary(max_size=40),
            st.integers(0, 1 << 33).map(_plausible),
            st.integers(0, 64).map(bytes),
        ),
        max_size=12,
    ),
    st.integers(0, 20),
)
def test_vectorised_resync_finds_the_header_a_byte_walk_finds(
    parts: list[bytes], start: int
) -> None:
    """next_header agrees with trying every offset in Python, on garbage, zeros and headers."""
    buffer = b"".join(parts)
    assert next_header(buffer, start) == _first_header_by_hand(buffer, start)


def test_vectorised_resync_looks_past_its_first_window() -> None:
    """A header far past the first 4 KiB window (and across 1 MiB windows) is still found."""
    for offset in (4093, 4096, (1 << 20) + 4095, 3 << 20):
        buffer = bytes(offset) + _plausible(77) + bytes(100)
        assert next_header(buffer, 1) == offset


def _reference_scan(buffer: bytes, skipping: bool = False) -> tuple[object, ...]:
    """The scan's contract, one record at a time: what the block scanner must equal."""
    records: list[tuple[int, bytes]] = []
    damage: list[tuple[int, str]] = []
    pos, needed = 0, 0
    while pos <= len(buffer) - 12:
        length, length_crc = struct.unpack_from("<QI", buffer, pos)
        if masked_crc32c(buffer[pos : pos + 8]) != length_crc:
            reason = "length checksum mismatch"
        elif length >= MAX_RECORD_BYTES:
            reason = f"record length {length} is too large"
        elif pos + 16 + length > len(buffer):
            needed = 16 + length
            break
        else:
            data = buffer[pos + 12 : pos + 12 + length]
            if masked_crc32c(data) == struct.unpack_from("<I", buffer, pos + 12 + length)[0]:
                records.append((pos, data))
                pos += 16 + length
                skipping = False
                continue
            reason = "data checksum mismatch"
        if not skipping:
            damage.append((pos, reason))
            skipping = True
        pos = next_header(buffer, pos + 1)
    return records, pos, skipping, damage, needed


_PATTERNED = st.tuples(
    st.lists(st.binary(min_size=0, max_size=60), min_size=1, max_size=5),  # one step's events
    st.integers(1, 300),  # steps
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=4),  # damage
    st.integers(0, 40),  # bytes cut from the end
)


@given(_PATTERNED, st.booleans())
def test_block_scan_equals_a_record_by_record_scan(case: tuple, skipping: bool) -> None:
    """Damaged or truncated files of repeating records scan exactly as a plain walk does.

    Files of repeating records (what the block scanner predicts), damaged and truncated
    anywhere, scan to exactly the records, end, damage and needed bytes of a plain walk.
    """
    step, steps, hits, cut = case
    buffer = bytearray(frame_many(step * steps))
    for at, value in hits:
        buffer[at % len(buffer)] = value
    data = bytes(buffer[: max(0, len(buffer) - cut)])
    assert tuple(scan(data, skipping=skipping)) == _reference_scan(data, skipping)


@given(st.lists(st.binary(max_size=80), max_size=40), st.integers(0, 2000))
def test_masked_crc32c_many_equals_one_at_a_time(payloads: list[bytes], repeat: int) -> None:
    """Checksums computed per length with NumPy equal masked_crc32c record by record.

    Checksums computed per length with NumPy equal masked_crc32c record by record, for
    lengths met once or thousands of times, odd and even.
    """
    framed = frame_many(payloads + [b"x" * 33, b"yz" * 9] * (repeat // 2))
    blocks = scan_blocks(framed).blocks
    assert len(blocks) <= 1
    for block in blocks:
        expected = [masked_crc32c(block.data(i)) for i in range(len(block))]
        assert masked_crc32c_many(block).tolist() == expected


def test_masked_crc32c_many_with_many_distinct_lengths() -> None:
    """Fifty lengths, each met ten times in shuffled order, checksum exactly as one at a time.

    Fifty lengths, each met ten times in shuffled order (more lengths than are grouped one
    pass per length), checksum exactly as one at a time.
    """
    import random

    payloads = [bytes([length % 251]) * length for length in range(50) for _ in range(10)]
    random.Random(0).shuffle(payloads)
    (block,) = scan_blocks(frame_many(payloads)).blocks
    expected = [masked_crc32c(block.data(i)) for i in range(len(block))]
    assert masked_crc32c_many(block).tolist() == expected
    assert [block.data(i) for i in range(len(block))] == payloads
