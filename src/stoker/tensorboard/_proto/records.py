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
  the end of the buffer, is a *truncated tail*: scanning stops there and the position is kept
  so that the next poll, once the writer has appended the rest, starts again at that record;
* a header whose length checksum fails, a length of 2 GiB or more, or data whose checksum
  fails is *corruption*: the scan reports where each corrupt stretch starts and moves forward
  byte by byte until an offset where a header's length checksum and its data's checksum both
  hold (TensorBoard's own reader stops at the first bad record for good).

What to do about corruption (the reader warns) is the caller's business.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import NamedTuple

import google_crc32c

from stoker.tensorboard._proto.wire import MAX_MESSAGE_BYTES

__all__ = [
    "FOOTER_SIZE",
    "HEADER_SIZE",
    "MAX_RECORD_BYTES",
    "ScanResult",
    "frame",
    "frame_many",
    "masked_crc32c",
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


def masked_crc32c(data: bytes) -> int:
    """Return the masked CRC32C of ``data`` as TFRecord stores it."""
    crc: int = _crc32c(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


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
    """

    records: list[tuple[int, bytes]]
    end: int
    skipping: bool
    damage: list[tuple[int, str]]


def scan(buffer: bytes, *, start: int = 0, skipping: bool = False) -> ScanResult:
    """Extract every intact record from ``buffer``, resyncing past corrupt bytes.

    Args:
        buffer: Bytes of an event file, starting at a record boundary (or inside a corrupt
            stretch when ``skipping``).
        start: Offset in ``buffer`` to start at.
        skipping: Continue a corrupt stretch found by an earlier scan (not reported again).

    Returns:
        The intact records, the position to resume from, and the corrupt stretches found.
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
                    break  # truncated tail: wait for the writer to append the rest
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
        pos += 1
    return ScanResult(records, pos, skipping, damage)
