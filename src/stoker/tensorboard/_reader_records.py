"""Record scanning for the reader: framing checks, truncated tails, CRC resync, tail-following.

:func:`scan_records` walks TFRecord framing (see ``_record``) over a buffer and never raises on
bad bytes:

* fewer than 12 bytes left, or a header whose length checksum holds but whose record runs past
  the end of the buffer, is a *truncated tail*: scanning stops there and the position is kept so
  that the next poll, once the writer has appended the rest, starts again at that record;
* a header whose length checksum fails, a length above 2 GiB, or data whose checksum fails is
  *corruption*: one :class:`CorruptRecordWarning` is issued per corrupt stretch and scanning
  moves forward byte by byte until an offset where a header's length checksum and its data's
  checksum both hold (TensorBoard's own reader stops at the first bad record for good).

:class:`EventFileReader` keeps one file's position (offset plus whether it is inside a corrupt
stretch) between polls, so that a growing file is read incrementally and a saved position can be
resumed in a new process.
"""

from __future__ import annotations

import os
import struct
import warnings
from typing import BinaryIO, NamedTuple

import google_crc32c

from stoker.tensorboard import _remote
from stoker.tensorboard._record import FOOTER_SIZE, HEADER_SIZE

_MASK_DELTA = 0xA282EAD8
_HEADER = struct.Struct("<QI")
_U32 = struct.Struct("<I")
# Protobuf messages are limited to 2 GiB; a longer length can only come from corruption.
MAX_RECORD_BYTES = 1 << 31


def _open_binary(path: str) -> BinaryIO:
    """Open a local event file, or one behind an fsspec URL, for reading bytes."""
    if _remote.is_url(path):
        return _remote.open_binary(path)
    return open(path, "rb")


class EventFileError(ValueError):
    """Raised when an event file or a log directory cannot be read as asked.

    The reader raises it for a missing path, a file that shrank below a saved position, and
    a value whose payload is malformed when it is decoded (for example a tensor whose bytes do
    not match its shape, or an image Pillow cannot open). Corrupt records never raise: they
    are skipped with a :class:`CorruptRecordWarning`.
    """


class CorruptRecordWarning(UserWarning):
    """Issued once per corrupt stretch of an event file, before the reader resyncs past it."""


class ScanResult(NamedTuple):
    """What :func:`scan_records` found.

    Attributes:
        records: ``(offset, payload)`` pairs, offsets relative to the buffer start.
        end: Where the next scan must start: the end of the last whole record, the start of a
            truncated tail, or the first offset not yet checked inside a corrupt stretch.
        skipping: Whether ``end`` lies inside a corrupt stretch (already reported).
    """

    records: list[tuple[int, bytes]]
    end: int
    skipping: bool


def scan_records(
    buffer: bytes, *, start: int = 0, skipping: bool = False, source: str = "<buffer>"
) -> ScanResult:
    """Extract every intact record from ``buffer``, resyncing past corrupt bytes.

    Args:
        buffer: Bytes of an event file, starting at a record boundary (or inside a corrupt
            stretch when ``skipping``).
        start: Offset in ``buffer`` to start at.
        skipping: Continue a corrupt stretch found by an earlier scan (no new warning for it).
        source: Name used in warnings, usually the file path.

    Returns:
        The intact records and the position to resume from.
    """
    crc = google_crc32c.value
    unpack_header = _HEADER.unpack_from
    unpack_u32 = _U32.unpack_from
    records: list[tuple[int, bytes]] = []
    append = records.append
    size = len(buffer)
    pos = start
    last_header = size - HEADER_SIZE
    while pos <= last_header:
        length, length_crc = unpack_header(buffer, pos)
        value = crc(buffer[pos : pos + 8])
        if (((value >> 15) | (value << 17)) + _MASK_DELTA) & 0xFFFFFFFF == length_crc:
            if length >= MAX_RECORD_BYTES:
                reason = f"record length {length} is too large"
            else:
                data_start = pos + HEADER_SIZE
                data_end = data_start + length
                if data_end + FOOTER_SIZE > size:
                    break  # truncated tail: wait for the writer to append the rest
                data = buffer[data_start:data_end]
                value = crc(data)
                if (((value >> 15) | (value << 17)) + _MASK_DELTA) & 0xFFFFFFFF == unpack_u32(
                    buffer, data_end
                )[0]:
                    append((pos, data))
                    pos = data_end + FOOTER_SIZE
                    skipping = False
                    continue
                reason = "data checksum mismatch"
        else:
            reason = "length checksum mismatch"
        if not skipping:
            warnings.warn(
                f"{source}: corrupt record at offset {pos} ({reason}); skipping to the next "
                "valid record",
                CorruptRecordWarning,
                stacklevel=3,
            )
            skipping = True
        pos += 1
    return ScanResult(records, pos, skipping)


class FilePosition(NamedTuple):
    """A saved reading position in one event file.

    Attributes:
        path: The event file.
        offset: Byte offset of the next record to read.
        skipping: Whether ``offset`` lies inside a corrupt stretch already reported.
    """

    path: str
    offset: int
    skipping: bool = False


class EventFileReader:
    """Reads the records of one event file incrementally, from a position that can be saved.

    Each :meth:`read_records` call returns the records appended since the previous call. A
    truncated last record is not an error: it is returned by a later call once complete.

    Args:
        path: The event file.
        offset: Byte offset to start from (a record boundary, e.g. a saved ``position.offset``).
        skipping: Start inside a corrupt stretch (from a saved position).

    Example:
        >>> reader = EventFileReader(path)  # doctest: +SKIP
        >>> records = reader.read_records()  # everything so far
        >>> saved = reader.position  # later: EventFileReader(*saved) resumes here
    """

    def __init__(self, path: str | os.PathLike[str], offset: int = 0, skipping: bool = False):
        """Open nothing yet; remember where to start."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be an int >= 0, got {offset!r}; pass a saved offset")
        self.path = os.fspath(path)
        self._offset = offset
        self._skipping = bool(skipping)
        self._pending = 0

    @property
    def position(self) -> FilePosition:
        """The position the next :meth:`read_records` starts from; save it to resume later."""
        return FilePosition(self.path, self._offset, self._skipping)

    @property
    def pending_bytes(self) -> int:
        """Bytes after :attr:`position` not yet returned (a truncated tail), as of the last read."""
        return self._pending

    def read_records(self, max_bytes: int | None = None) -> list[tuple[int, bytes]]:
        """Read the records appended since the last call.

        Args:
            max_bytes: Read about this many bytes at most (more when one record is larger), so
                that a huge file can be read in pieces; ``None`` reads to the end of the file.

        Returns:
            ``(file offset, payload)`` pairs in file order.

        Raises:
            EventFileError: If the file is missing or now shorter than the saved position.
        """
        if max_bytes is not None and (
            isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1
        ):
            raise ValueError(f"max_bytes must be a positive int or None, got {max_bytes!r}")
        base = self._offset
        try:
            with _open_binary(self.path) as stream:
                size = stream.seek(0, os.SEEK_END)
                if size < base:
                    raise EventFileError(
                        f"{self.path} is {size} bytes, shorter than the saved position "
                        f"{base}; the file was truncated or replaced, read it from 0"
                    )
                limit = max_bytes
                while True:
                    stream.seek(base)
                    buffer = stream.read() if limit is None else stream.read(limit)
                    result = scan_records(buffer, skipping=self._skipping, source=self.path)
                    if result.end > 0 or limit is None or len(buffer) < limit:
                        break
                    limit *= 2  # one record is larger than the piece read: read more
        except OSError as err:
            raise EventFileError(f"cannot read event file {self.path}: {err}") from err
        self._offset = base + result.end
        self._skipping = result.skipping
        self._pending = max(size, base + len(buffer)) - self._offset
        if base == 0:
            return result.records
        return [(base + offset, data) for offset, data in result.records]
