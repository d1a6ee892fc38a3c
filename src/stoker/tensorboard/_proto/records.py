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
from typing import NamedTuple

import google_crc32c
import numpy as np

from stoker.tensorboard._proto.wire import MAX_MESSAGE_BYTES

__all__ = [
    "FOOTER_SIZE",
    "HEADER_SIZE",
    "MAX_RECORD_BYTES",
    "ScanResult",
    "frame",
    "frame_many",
    "masked_crc32c",
    "masked_crc32c_of",
    "next_header",
    "scan",
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


def scan(buffer: bytes, *, start: int = 0, skipping: bool = False) -> ScanResult:
    """Extract every intact record from ``buffer``, resyncing past corrupt bytes.

    Args:
        buffer: Bytes of an event file, starting at a record boundary (or inside a corrupt
            stretch when ``skipping``).
        start: Offset in ``buffer`` to start at.
        skipping: Continue a corrupt stretch found by an earlier scan (not reported again).

    Returns:
        The intact records, the position to resume from, the corrupt stretches found, and what
        the record at that position needs when it runs past the buffer.
    """
    crc = masked_crc32c
    unpack_header = _HEADER.unpack
    unpack_u32 = _U32.unpack_from
    records: list[tuple[int, bytes]] = []
    damage: list[tuple[int, str]] = []
    append = records.append
    # Records of one file often share a length: check each distinct header's length CRC once.
    good_headers: set[bytes] = set()
    size = len(buffer)
    pos = start
    needed = 0
    last_header = size - HEADER_SIZE
    while pos <= last_header:
        header = buffer[pos : pos + HEADER_SIZE]
        length, length_crc = unpack_header(header)
        good = header in good_headers
        if not good and crc(header[:8]) == length_crc:
            good_headers.add(header)
            good = True
        if good:
            if length >= MAX_RECORD_BYTES:
                reason = f"record length {length} is too large"
            else:
                data_start = pos + HEADER_SIZE
                data_end = data_start + length
                if data_end + FOOTER_SIZE > size:
                    needed = HEADER_SIZE + length + FOOTER_SIZE
                    break  # the caller decides: a tail still being written, or read further
                data = buffer[data_start:data_end]
                if crc(data) == unpack_u32(buffer, data_end)[0]:
                    append((pos, data))
                    pos = data_end + FOOTER_SIZE
                    skipping = False
                    continue
                reason = "data checksum mismatch"
        else:
            reason = "length checksum mismatch"
        if not skipping:
            damage.append((pos, reason))
            skipping = True
        pos = next_header(buffer, pos + 1)
    return ScanResult(records, pos, skipping, damage, needed)
