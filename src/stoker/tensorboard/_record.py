"""TFRecord framing: length, masked CRC32C of the length, data, masked CRC32C of the data.

One record on disk is::

    uint64 length (little endian) | uint32 masked_crc32c(length bytes)
    data[length]                  | uint32 masked_crc32c(data)

The mask rotates the CRC right by 15 bits and adds ``0xA282EAD8`` (mod 2**32), so that a CRC
stored inside CRC-checked data does not trivially verify itself. CRC32C (Castagnoli) comes from
``google-crc32c``, which uses the CPU's CRC instruction where there is one.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import BinaryIO

import google_crc32c

_MASK_DELTA = 0xA282EAD8
_HEADER = struct.Struct("<QI")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
HEADER_SIZE = 12
FOOTER_SIZE = 4


class RecordError(ValueError):
    """Raised when a record's framing or checksum is invalid."""


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """Return the masked CRC32C of ``data`` as TFRecord stores it."""
    crc: int = google_crc32c.value(bytes(data) if isinstance(data, memoryview) else data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def frame(data: bytes) -> bytes:
    """Wrap one payload in TFRecord framing.

    Args:
        data: The record payload (usually an encoded ``Event``).

    Returns:
        Header, payload and footer, ready to append to a file.
    """
    length = _U64.pack(len(data))
    return b"".join(
        (length, _U32.pack(masked_crc32c(length)), data, _U32.pack(masked_crc32c(data)))
    )


def frame_many(payloads: Iterable[bytes]) -> bytes:
    """Frame several payloads into one buffer, for a single write."""
    value = google_crc32c.value
    pack_u64 = _U64.pack
    pack_u32 = _U32.pack
    parts: list[bytes] = []
    append = parts.append
    for data in payloads:
        length = pack_u64(len(data))
        crc = value(length)
        append(length)
        append(pack_u32((((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF))
        append(data)
        crc = value(data)
        append(pack_u32((((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF))
    return b"".join(parts)


def read_record(stream: BinaryIO, *, check_crc: bool = True) -> bytes | None:
    """Read one record from a binary stream.

    Args:
        stream: A file opened for binary reading, positioned at a record boundary.
        check_crc: Verify both checksums.

    Returns:
        The payload, or ``None`` at a clean end of file (no bytes left).

    Raises:
        RecordError: On a truncated record or a checksum mismatch. The stream position is then
            unspecified; callers that want to resume should remember the offset before the call.
    """
    header = stream.read(HEADER_SIZE)
    if not header:
        return None
    if len(header) < HEADER_SIZE:
        raise RecordError(f"truncated record header: {len(header)} of {HEADER_SIZE} bytes")
    length, length_crc = _HEADER.unpack(header)
    if check_crc and masked_crc32c(header[:8]) != length_crc:
        raise RecordError("record length checksum mismatch")
    body = stream.read(length + FOOTER_SIZE)
    if len(body) < length + FOOTER_SIZE:
        raise RecordError(f"truncated record: {len(body)} of {length + FOOTER_SIZE} bytes")
    data = body[:length]
    if check_crc and masked_crc32c(data) != _U32.unpack(body[length:])[0]:
        raise RecordError("record data checksum mismatch")
    return data


def iter_records(stream: BinaryIO, *, check_crc: bool = True) -> Iterator[bytes]:
    """Yield every record payload of a stream until its end.

    Args:
        stream: A file opened for binary reading.
        check_crc: Verify both checksums of each record.

    Yields:
        Record payloads in file order.

    Raises:
        RecordError: On a truncated record or checksum mismatch.
    """
    while True:
        data = read_record(stream, check_crc=check_crc)
        if data is None:
            return
        yield data
