"""Event files on disk or in a store: finding a log dir's runs, and reading one file's records.

Every directory below a root that holds event files is a *run*, named by its path relative to
the root (``"."`` for the root itself); a file is an event file when :func:`is_event_file` says
so, TensorBoard's rule. Local roots are walked with ``os.walk``, URL roots through fsspec
(``_remote``).

:class:`EventFileReader` keeps one file's position (offset plus whether it is inside a corrupt
stretch) between polls, so that a growing file is read incrementally and a saved position can
be resumed in a new process. It scans with ``_proto``'s :func:`scan` (truncated tails wait for
the next poll, corrupt stretches are skipped) and warns once per corrupt stretch with
:class:`CorruptRecordWarning` (:func:`scan_records`).
"""

from __future__ import annotations

import os
import warnings
from typing import BinaryIO, NamedTuple

from stoker.tensorboard._proto import ScanResult, scan
from stoker.tensorboard._read.errors import CorruptRecordWarning, EventFileError
from stoker.tensorboard._remote import find_runs, is_url, open_binary
from stoker.tensorboard._rotate import is_event_file

__all__ = ["EventFileReader", "FilePosition", "find_event_files", "scan_records"]


def find_event_files(root: str) -> dict[str, list[str]]:
    """Map run name to its event files, sorted by name, for every run under ``root``.

    A root that is an event file is the one run ``"."``.
    """
    if is_url(root):
        return find_runs(root)
    if os.path.isfile(root):
        return {".": [root]}
    runs: dict[str, list[str]] = {}
    for directory, subdirs, names in os.walk(root):
        subdirs.sort()
        files = sorted(os.path.join(directory, name) for name in names if is_event_file(name))
        if files:
            run = os.path.relpath(directory, root).replace(os.sep, "/")
            runs[run] = files
    return runs


def _open_binary(path: str) -> BinaryIO:
    """Open a local event file, or one behind an fsspec URL, for reading bytes."""
    if is_url(path):
        return open_binary(path)
    return open(path, "rb")


def scan_records(
    buffer: bytes, *, start: int = 0, skipping: bool = False, source: str = "<buffer>"
) -> ScanResult:
    """Extract every intact record from ``buffer``; warn once per new corrupt stretch.

    Args:
        buffer: Bytes of an event file, starting at a record boundary (or inside a corrupt
            stretch when ``skipping``).
        start: Offset in ``buffer`` to start at.
        skipping: Continue a corrupt stretch found by an earlier scan (no new warning for it).
        source: Name used in warnings, usually the file path.

    Returns:
        The intact records and the position to resume from (see ``_proto.scan``).

    Warns:
        CorruptRecordWarning: For each corrupt stretch that starts in this buffer.
    """
    result = scan(buffer, start=start, skipping=skipping)
    for offset, reason in result.damage:
        warnings.warn(
            f"{source}: corrupt record at offset {offset} ({reason}); skipping to the next "
            "valid record",
            CorruptRecordWarning,
            stacklevel=3,
        )
    return result


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

    Raises:
        ValueError: If ``offset`` is not an int >= 0.

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
            ValueError: If ``max_bytes`` is not a positive int or None.
            EventFileError: If the file cannot be read or is now shorter than the saved
                position.

        Warns:
            CorruptRecordWarning: Once per corrupt stretch skipped.
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
