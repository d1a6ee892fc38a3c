"""TFRecord framing and scanning: the writer frames events, the reader scans them back.

One record on disk is::

    uint64 length (little endian) | uint32 masked_crc32c(length bytes)
    data[length]                  | uint32 masked_crc32c(data)

The mask rotates the CRC right by 15 bits and adds ``0xA282EAD8`` (mod 2**32), so that a CRC
stored inside CRC-checked data does not trivially verify itself; :func:`masked_crc32c` is the
only place that computes it. CRC32C (Castagnoli) comes from ``google-crc32c``, which uses the
CPU's CRC instruction where there is one.

:func:`scan` walks the framing over a buffer and never raises on bad bytes:

* fewer than 12 bytes left, or a header whose length checksum holds but whose record runs past
  the end of the buffer, stops the scan there: the result says how many bytes that record
  needs (``needed``), and the caller, who knows how long the file is, decides whether it is a
  *truncated tail* to read again once the writer has appended the rest, a record to read in
  full, or corruption (``_read.files`` does);
* a header whose length checksum fails, a length of 2 GiB or more, or data whose checksum
  fails is *corruption*: the scan reports where each corrupt stretch starts and resyncs to the
  next offset where a header's length checksum and its data's checksum both hold (TensorBoard's
  own reader stops at the first bad record for good).

Resyncing runs at memory speed, whatever the damage: :func:`next_header` looks for the next
plausible header with NumPy, a whole window of offsets at a time, instead of trying each offset
in Python. A header's length is below 2**31, so its high four bytes are zero and its CRC is a
linear function of the low four; four 16-bit tables give that CRC for every offset at once.

What to do about corruption (the reader warns) is the caller's business.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any, NamedTuple

import google_crc32c
import numpy as np

from stoker.tensorboard._proto.wire import MAX_MESSAGE_BYTES

__all__ = [
    "FOOTER_SIZE",
    "HEADER_SIZE",
    "MAX_RECORD_BYTES",
    "BlockScan",
    "RecordBlock",
    "ScanResult",
    "frame",
    "frame_many",
    "gather_rows",
    "group_by_length",
    "masked_crc32c",
    "masked_crc32c_many",
    "masked_crc32c_of",
    "next_header",
    "scan",
    "scan_blocks",
    "single_block",
]

_MASK_DELTA = 0xA282EAD8
_HEADER = struct.Struct("<QI")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_crc32c = google_crc32c.value
HEADER_SIZE = 12
"""Bytes before a record's data: the length and its masked CRC."""
FOOTER_SIZE = 4
"""Bytes after a record's data: the data's masked CRC."""
MAX_RECORD_BYTES = MAX_MESSAGE_BYTES
"""A record holds one message, so a longer length can only come from corruption."""


def _mask(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    """Return the masked CRC32C of ``data`` as TFRecord stores it."""
    return _mask(_crc32c(data))


def masked_crc32c_of(chunks: Iterable[bytes]) -> int:
    """Return the masked CRC32C of the concatenation of ``chunks``, without joining them.

    For checking a long record piece by piece before holding all of it in memory.
    """
    crc = 0
    for chunk in chunks:
        crc = google_crc32c.extend(crc, chunk)
    return _mask(crc)


def frame(data: bytes) -> bytes:
    """Wrap one payload in TFRecord framing.

    Args:
        data: The record payload (usually an encoded ``Event``).

    Returns:
        Header, payload and footer, ready to append to a file.
    """
    return frame_many((data,))


def frame_many(payloads: Iterable[bytes]) -> bytes:
    """Frame several payloads into one buffer, for a single write.

    Events of a batch often have the same length (a scalar's size depends on its tag only), so
    each length's framing is computed once per call.
    """
    crc = masked_crc32c
    pack_u64 = _U64.pack
    pack_u32 = _U32.pack
    headers: dict[int, bytes] = {}
    parts: list[bytes] = []
    append = parts.append
    for data in payloads:
        size = len(data)
        header = headers.get(size)
        if header is None:
            length = pack_u64(size)
            header = headers[size] = length + pack_u32(crc(length))
        append(header)
        append(data)
        append(pack_u32(crc(data)))
    return b"".join(parts)


class RecordBlock:
    """Intact records whose data lie in one buffer, without a bytes object per record.

    Record ``i``'s data is ``buffer[starts[i]:starts[i] + lengths[i]]`` and its header is at
    file offset ``base + starts[i] - HEADER_SIZE``. Readers decode whole blocks with NumPy
    (``_read.decode``); :meth:`records` gives the classic ``(offset, data)`` pairs.

    Attributes:
        buffer: The bytes the records lie in.
        starts: Where each record's data starts in ``buffer`` (int64).
        lengths: Each record's data length (int64).
        base: File offset of ``buffer[0]``.
    """

    __slots__ = ("_groups", "base", "buffer", "lengths", "starts")

    def __init__(
        self,
        buffer: bytes,
        starts: np.ndarray[tuple[int], np.dtype[np.int64]],
        lengths: np.ndarray[tuple[int], np.dtype[np.int64]],
        base: int = 0,
    ) -> None:
        """Hold the records' places; nothing is copied."""
        self.buffer = buffer
        self.starts = starts
        self.lengths = lengths
        self.base = base
        self._groups: list[LengthGroup] | None = None

    def groups(self) -> list[LengthGroup]:
        """The records grouped by length, with the bytes of short, common ones as matrices.

        Computed once: the checksum check and the scalar decoder share the gathered bytes.
        """
        if self._groups is None:
            data = np.frombuffer(self.buffer, dtype=np.uint8)
            self._groups = [
                LengthGroup(length, rows, _gather_group(data, self.starts[rows], length))
                for length, rows in group_by_length(self.lengths)
            ]
        return self._groups

    def __len__(self) -> int:
        """The number of records."""
        return len(self.starts)

    def data(self, index: int) -> bytes:
        """The data of record ``index``."""
        start = int(self.starts[index])
        return self.buffer[start : start + int(self.lengths[index])]

    def offset(self, index: int) -> int:
        """The file offset of record ``index``'s header."""
        return self.base + int(self.starts[index]) - HEADER_SIZE

    def records(self) -> list[tuple[int, bytes]]:
        """``(header file offset, data)`` for every record, in order."""
        buffer = self.buffer
        head = self.base - HEADER_SIZE
        return [
            (head + start, buffer[start : start + length])
            for start, length in zip(self.starts.tolist(), self.lengths.tolist(), strict=True)
        ]


class LengthGroup(NamedTuple):
    """Records of one length in a :class:`RecordBlock`.

    Attributes:
        length: Their data length.
        rows: Their indices in the block, in order.
        matrix: Their data as the rows of a uint8 matrix, or ``None`` when they are long or
            few (then they are handled one by one).
    """

    length: int
    rows: np.ndarray[tuple[int], np.dtype[np.intp]]
    matrix: np.ndarray[tuple[int, int], np.dtype[np.uint8]] | None


def single_block(offset: int, data: bytes) -> RecordBlock:
    """A block of one record whose header is at file ``offset`` (a record read on its own)."""
    return RecordBlock(
        data,
        np.zeros(1, dtype=np.int64),
        np.array([len(data)], dtype=np.int64),
        offset + HEADER_SIZE,
    )


class ScanResult(NamedTuple):
    """What :func:`scan` found.

    Attributes:
        records: ``(offset, payload)`` pairs, offsets relative to the buffer start.
        end: Where the next scan must start: the end of the last whole record, the start of a
            truncated tail, or the first offset not yet checked inside a corrupt stretch.
        skipping: Whether ``end`` lies inside a corrupt stretch (already reported).
        damage: ``(offset, reason)`` where each corrupt stretch not already reported starts.
        needed: Bytes the record at ``end`` needs (header, data and footer) when its header is
            intact but the record runs past the buffer; 0 when fewer than 12 bytes are left.
    """

    records: list[tuple[int, bytes]]
    end: int
    skipping: bool
    damage: list[tuple[int, str]]
    needed: int = 0


class BlockScan(NamedTuple):
    """What :func:`scan_blocks` found: :class:`ScanResult` with the records left in blocks."""

    blocks: list[RecordBlock]
    end: int
    skipping: bool
    damage: list[tuple[int, str]]
    needed: int = 0


# CRC32C of many short records at once, a column of two bytes at a time. The reflected CRC's
# byte step is c = (c >> 8) ^ T8[(c ^ byte) & 0xFF]; two steps fold into
# c = (c >> 16) ^ T16[(c ^ word) & 0xFFFF], where T16[x] is two byte steps from register x
# with zero bytes (the register's high half only shifts through). Checked against
# google-crc32c in the tests.
def _crc_tables() -> tuple[np.ndarray[tuple[int], np.dtype[np.uint32]], ...]:
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(0x82F63B78), table >> 1)
    wide = np.arange(1 << 16, dtype=np.uint32)
    for _ in range(2):
        wide = (wide >> 8) ^ table[wide & 0xFF]
    return table, wide


_T8, _T16 = _crc_tables()
_BATCH_MAX_LENGTH = 1024  # longer records are checked and decoded one by one
_BATCH_MIN_COUNT = 8  # so are lengths met fewer times in a block
_FEW_LENGTHS = 32
_BATCH_ROWS = 16384  # rows gathered at once: the index matrix stays a few MiB
_PROBE_RECORDS = 32  # headers walked in Python before looking for a period
_MAX_PERIOD = 16  # e.g. sixteen tags logged every step
_MAX_PREDICTED = 1 << 16  # headers predicted at once


def group_by_length(
    lengths: np.ndarray[tuple[int], np.dtype[np.int64]],
) -> list[tuple[int, np.ndarray[tuple[int], np.dtype[np.intp]]]]:
    """``(length, row indices in order)`` for every distinct length, shortest first."""
    if lengths.size == 0:
        return []
    distinct = np.unique(lengths)
    if distinct.size <= _FEW_LENGTHS:  # one pass per length beats a sort
        return [(int(length), np.flatnonzero(lengths == length)) for length in distinct]
    order = np.argsort(lengths, kind="stable")
    ordered = lengths[order]
    bounds = np.flatnonzero(np.diff(ordered)) + 1
    return [(int(lengths[rows[0]]), rows) for rows in np.split(order, bounds)]


def gather_rows(
    data: np.ndarray[tuple[int], np.dtype[np.uint8]],
    starts: np.ndarray[tuple[int], np.dtype[np.int64]],
    width: int,
) -> np.ndarray[tuple[int, int], np.dtype[np.uint8]]:
    """The ``width`` bytes at every start as the rows of a matrix (a copy)."""
    rows: np.ndarray[tuple[int, int], np.dtype[np.uint8]] = data[starts[:, None] + np.arange(width)]
    return rows


def _gather_group(
    data: np.ndarray[tuple[int], np.dtype[np.uint8]],
    starts: np.ndarray[tuple[int], np.dtype[np.int64]],
    length: int,
) -> np.ndarray[tuple[int, int], np.dtype[np.uint8]] | None:
    """The records' bytes as matrix rows when they are short and many enough, else None."""
    if length > _BATCH_MAX_LENGTH or starts.size < _BATCH_MIN_COUNT:
        return None
    matrix = np.empty((starts.size, length), dtype=np.uint8)
    for first in range(0, starts.size, _BATCH_ROWS):
        chunk = starts[first : first + _BATCH_ROWS]
        matrix[first : first + chunk.size] = gather_rows(data, chunk, length)
    return matrix


def _masked_crc_rows(rows: np.ndarray[tuple[int, int], np.dtype[np.uint8]]) -> Any:
    """Masked CRC32C of every row of a uint8 matrix."""
    count, width = rows.shape
    even = width & ~1
    words = np.ascontiguousarray(rows[:, :even]).view("<u2").T.copy()
    crc = np.full(count, 0xFFFFFFFF, dtype=np.uint32)
    for word in words:
        crc = (crc >> np.uint32(16)) ^ _T16[(crc ^ word) & np.uint32(0xFFFF)]
    if width & 1:
        crc = (crc >> np.uint32(8)) ^ _T8[(crc ^ rows[:, -1]) & np.uint32(0xFF)]
    crc ^= np.uint32(0xFFFFFFFF)
    return ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(_MASK_DELTA)


def masked_crc32c_many(block: RecordBlock) -> np.ndarray[tuple[int], np.dtype[np.uint32]]:
    """The masked CRC32C of every record's data in ``block``.

    Records of one length are checked together with NumPy when they are short and many (a
    file of scalars: a few lengths, each repeated thousands of times); the rest one by one.
    """
    out = np.empty(len(block), dtype=np.uint32)
    for group in block.groups():
        if group.matrix is not None:
            out[group.rows] = _masked_crc_rows(group.matrix)
            continue
        for row in group.rows.tolist():
            out[row] = masked_crc32c(block.data(row))
    return out


# CRC32C of an 8-byte length whose high four bytes are zero (every length below 2**31) is
# _ZERO_CRC ^ _LOW_CRC[low 16 bits] ^ _HIGH_CRC[next 16 bits]: CRC is linear over GF(2).
_ZERO_CRC = _crc32c(bytes(8))
_MASKED_ZERO = np.uint32(_mask(_ZERO_CRC))


def _byte_tables() -> np.ndarray[tuple[int, int], np.dtype[np.uint32]]:
    tables = np.zeros((4, 256), dtype=np.uint32)
    for position in range(4):
        for value in range(256):
            length = bytearray(8)
            length[position] = value
            tables[position, value] = _crc32c(bytes(length)) ^ _ZERO_CRC
    return tables


_BYTES = _byte_tables()
_HALF = np.arange(1 << 16)
_LOW_CRC = _BYTES[0][_HALF & 0xFF] ^ _BYTES[1][_HALF >> 8]
_HIGH_CRC = _BYTES[2][_HALF & 0xFF] ^ _BYTES[3][_HALF >> 8]
del _BYTES, _HALF
_FIRST_WINDOW = 4096
_MAX_WINDOW = 1 << 20


def _first_header_in(buffer: bytes, start: int, stop: int) -> int | None:
    """The first offset in ``[start, stop)`` holding a plausible header, or None.

    ``buffer`` must hold ``stop + 11`` bytes. Offsets are taken four at a time in steps of four
    (one little-endian uint32 view per residue): length low word, high word, CRC word.
    """
    best: int | None = None
    for residue in range(4):
        first = start + residue
        if first >= stop or (best is not None and first > best):
            continue
        count = (stop - first + 3) // 4
        words = np.frombuffer(buffer, dtype="<u4", count=count + 2, offset=first)
        low, high, stored = words[:-2], words[1:-1], words[2:]
        # Cheap tests first: a length below 2**31, and for length 0 the one CRC it can have
        # (this rules out runs of zero bytes, the commonest damage, without any table lookup).
        plausible = (high == 0) & (low < 0x80000000) & ((low != 0) | (stored == _MASKED_ZERO))
        where = np.flatnonzero(plausible)
        if where.size == 0:
            continue
        lengths = low[where]
        crc = _LOW_CRC[lengths & 0xFFFF] ^ _HIGH_CRC[lengths >> 16] ^ np.uint32(_ZERO_CRC)
        masked = ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(_MASK_DELTA)
        hits = where[masked == stored[where]]
        if hits.size:
            offset = first + 4 * int(hits[0])
            best = offset if best is None else min(best, offset)
    return best


def next_header(buffer: bytes, start: int) -> int:
    """Return the first offset >= ``start`` where a header's length checksum holds.

    Only lengths below 2**31 count (a longer one is corruption anyway). Windows of offsets grow
    from 4 KiB to 1 MiB, so a short stretch of damage costs little and a long one streams.

    Returns:
        That offset, or the first offset after ``start`` with fewer than 12 bytes left (where
        a header may still be completed by bytes not in the buffer yet).
    """
    last = len(buffer) - HEADER_SIZE
    window = _FIRST_WINDOW
    while start <= last:
        stop = min(last + 1, start + window)
        found = _first_header_in(buffer, start, stop)
        if found is not None:
            return found
        start = stop
        window = min(2 * window, _MAX_WINDOW)
    return start


def _walk_headers(
    buffer: bytes, pos: int, known: dict[int, int], limit: int
) -> tuple[list[int], list[int], int, bool]:
    """Walk up to ``limit`` headers from ``pos`` in Python; return where their records lie.

    The walk goes on while the headers hold and their records fit in the buffer. Return the
    data starts and lengths, the stop, and whether it was stopped by a record that does not
    pass (rather than by ``limit``).
    """
    unpack_header = _HEADER.unpack_from
    crc = masked_crc32c
    size = len(buffer)
    last_header = size - HEADER_SIZE
    starts: list[int] = []
    lengths: list[int] = []
    add_start = starts.append
    add_length = lengths.append
    for _ in range(limit):
        if pos > last_header:
            return starts, lengths, pos, True
        length, length_crc = unpack_header(buffer, pos)
        if known.get(length) != length_crc:
            if length >= MAX_RECORD_BYTES or crc(buffer[pos : pos + 8]) != length_crc:
                return starts, lengths, pos, True
            known[length] = length_crc
        end = pos + HEADER_SIZE + length
        if end + FOOTER_SIZE > size:
            return starts, lengths, pos, True
        add_start(pos + HEADER_SIZE)
        add_length(length)
        pos = end + FOOTER_SIZE
    return starts, lengths, pos, False


def _period(lengths: list[int]) -> int:
    """The shortest period (at most :data:`_MAX_PERIOD`) of a list of lengths, or 0."""
    count = len(lengths)
    for period in range(1, min(_MAX_PERIOD, count // 2) + 1):
        if all(lengths[i] == lengths[i - period] for i in range(period, count)):
            return period
    return 0


def _predict(
    buffer: bytes, pos: int, starts: list[int], lengths: list[int], period: int
) -> tuple[np.ndarray[tuple[int], np.dtype[np.int64]], np.ndarray[tuple[int], np.dtype[np.int64]]]:
    """Records after ``pos`` that repeat the last ``period`` records' headers exactly.

    A writer logging the same tags every step writes records whose lengths repeat (they change
    only when the step's varint grows): the headers of the next records are predicted from the
    last period and checked all at once, and the run ends at the first header that differs.
    """
    header_at = np.array(starts[-period:], dtype=np.int64) - HEADER_SIZE
    stride = int(pos - header_at[0])
    within = header_at - header_at[0]
    repeats = min((len(buffer) - pos) // stride, _MAX_PREDICTED // period)
    if repeats < 1:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    data = np.frombuffer(buffer, dtype=np.uint8)
    columns = (within[:, None] + np.arange(HEADER_SIZE)).reshape(-1)
    template = data[header_at[0] + columns]
    # Period j of the prediction is row j of a strided view: no index per record.
    periods = np.lib.stride_tricks.as_strided(
        data[pos:], shape=(repeats, stride), strides=(stride, 1), writeable=False
    )
    same = (periods[:, columns] == template).reshape(repeats, period, HEADER_SIZE)
    wrong = np.flatnonzero(~same.all(axis=2).reshape(-1))
    count = int(wrong[0]) if wrong.size else repeats * period
    at = (pos + stride * np.arange(repeats, dtype=np.int64)[:, None] + within).reshape(-1)
    period_lengths = np.array(lengths[-period:], dtype=np.int64)
    return at[:count] + HEADER_SIZE, np.tile(period_lengths, repeats)[:count]


def _intact_run(
    buffer: bytes, pos: int, known: dict[int, int]
) -> tuple[
    np.ndarray[tuple[int], np.dtype[np.int64]], np.ndarray[tuple[int], np.dtype[np.int64]], int
]:
    """Walk the headers from ``pos`` while they hold and their records fit in the buffer.

    Headers are walked in Python a few at a time; whenever the lengths walked repeat, the
    following headers are predicted and checked with NumPy (:func:`_predict`). ``known`` maps
    lengths to their masked length CRC (checked once per length). Returns the data starts and
    lengths found and where the walk stopped; data checksums are not checked.
    """
    start_parts: list[np.ndarray[tuple[int], np.dtype[np.int64]]] = []
    length_parts: list[np.ndarray[tuple[int], np.dtype[np.int64]]] = []
    while True:
        starts, lengths, pos, stopped = _walk_headers(buffer, pos, known, _PROBE_RECORDS)
        start_parts.append(np.array(starts, dtype=np.int64))
        length_parts.append(np.array(lengths, dtype=np.int64))
        if stopped:
            break
        period = _period(lengths)
        if period:
            predicted, predicted_lengths = _predict(buffer, pos, starts, lengths, period)
            if predicted.size:
                start_parts.append(predicted)
                length_parts.append(predicted_lengths)
                pos = int(predicted[-1] + predicted_lengths[-1]) + FOOTER_SIZE
    return np.concatenate(start_parts), np.concatenate(length_parts), pos


def _checked_block(
    buffer: bytes,
    starts: np.ndarray[tuple[int], np.dtype[np.int64]],
    lengths: np.ndarray[tuple[int], np.dtype[np.int64]],
) -> tuple[RecordBlock, int | None]:
    """The records of a walk up to the first whose data checksum fails (its index, or None)."""
    block = RecordBlock(buffer, starts, lengths)
    stored = gather_rows(np.frombuffer(buffer, dtype=np.uint8), starts + lengths, FOOTER_SIZE)
    mismatch = np.flatnonzero(masked_crc32c_many(block) != stored.view("<u4")[:, 0])
    if mismatch.size == 0:
        return block, None
    first = int(mismatch[0])
    return RecordBlock(buffer, starts[:first], lengths[:first]), first


def scan_blocks(buffer: bytes, *, start: int = 0, skipping: bool = False) -> BlockScan:
    """Extract every intact record from ``buffer``, resyncing past corrupt bytes.

    Intact stretches are walked header to header in Python and their data checksums checked
    with NumPy (:func:`masked_crc32c_many`); each stop of a stretch is looked at on its own:
    a truncated tail, a too-large length, or corruption to resync past.

    Args:
        buffer: Bytes of an event file, starting at a record boundary (or inside a corrupt
            stretch when ``skipping``).
        start: Offset in ``buffer`` to start at.
        skipping: Continue a corrupt stretch found by an earlier scan (not reported again).

    Returns:
        The intact records in blocks, the position to resume from, the corrupt stretches
        found, and what the record at that position needs when it runs past the buffer.
    """
    blocks: list[RecordBlock] = []
    damage: list[tuple[int, str]] = []
    known: dict[int, int] = {}
    size = len(buffer)
    pos = start
    needed = 0
    last_header = size - HEADER_SIZE
    while pos <= last_header:
        starts, lengths, stop = _intact_run(buffer, pos, known)
        if starts.size:
            block, failed = _checked_block(buffer, starts, lengths)
            if len(block):
                blocks.append(block)
                skipping = False
            pos = stop if failed is None else int(starts[failed]) - HEADER_SIZE
            if pos > last_header:
                break
        length, length_crc = _HEADER.unpack_from(buffer, pos)
        if masked_crc32c(buffer[pos : pos + 8]) != length_crc:
            reason = "length checksum mismatch"
        elif length >= MAX_RECORD_BYTES:
            reason = f"record length {length} is too large"
        elif pos + HEADER_SIZE + length + FOOTER_SIZE > size:
            needed = HEADER_SIZE + length + FOOTER_SIZE
            break  # the caller decides: a tail still being written, or read further
        else:
            reason = "data checksum mismatch"
        if not skipping:
            damage.append((pos, reason))
            skipping = True
        pos = next_header(buffer, pos + 1)
    return BlockScan(blocks, pos, skipping, damage, needed)


def scan(buffer: bytes, *, start: int = 0, skipping: bool = False) -> ScanResult:
    """:func:`scan_blocks` with the records as ``(offset, payload)`` pairs."""
    found = scan_blocks(buffer, start=start, skipping=skipping)
    records = [record for block in found.blocks for record in block.records()]
    return ScanResult(records, found.end, found.skipping, found.damage, found.needed)
