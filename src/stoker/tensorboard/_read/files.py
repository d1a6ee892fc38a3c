"""Event files on disk or in a store: finding a log dir's runs, and reading one file's records.

Paths in warnings and errors are written with ``repr``, as tags are: a name made of escape
sequences cannot reach a terminal raw through a message.

Every directory below a root that holds event files is a *run*, named by its path relative to
the root (``"."`` for the root itself); a file is an event file when :func:`is_event_file` says
so, TensorBoard's rule. Local roots are walked with ``os.walk``, URL roots through fsspec
(``_remote``). Only regular files are read: an entry named like an event file that is a FIFO,
a socket, a device or a dangling link is reported (:class:`CorruptRecordWarning`) and skipped,
since opening a FIFO blocks until a writer comes. Files are opened with ``O_NONBLOCK`` and
checked again with ``fstat``, so one swapped for a FIFO after the check cannot block either. A
directory below the root that cannot be listed is reported and skipped, and so is a file
removed after the listing (:class:`FileRemovedError`, which the reader turns into a warning);
the root itself, and a store that cannot be reached, raise :class:`EventFileError` naming the
cause and the fix.

:class:`EventFileReader` keeps one file's position (offset plus whether it is inside a corrupt
stretch) between polls, so that a growing file is read incrementally and a saved position can
be resumed in a new process. It reads windows of at most :data:`READ_PIECE_BYTES`, scans each
with ``_proto``'s :func:`scan`, and warns once per corrupt stretch (:func:`scan_records`).
Memory stays bounded by the window plus the largest *valid* record, whatever a header claims:

* a header whose record fits in the file but not in the window is checked piece by piece
  (its data's CRC is computed as it streams by) and only then read whole;
* a header whose record runs past the end of the file is the tail of a record still being
  written, unless an intact record follows it: a writer appends records in order, so a record
  cannot be unfinished while a later one is complete. Then the header is corruption (warned
  about and skipped); otherwise reading stops there and the next poll starts again at it.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from typing import BinaryIO, NamedTuple

from stoker.tensorboard._proto import (
    FOOTER_SIZE,
    HEADER_SIZE,
    RecordBlock,
    ScanResult,
    masked_crc32c,
    masked_crc32c_of,
    scan,
    scan_blocks,
    single_block,
)
from stoker.tensorboard._read.errors import CorruptRecordWarning, EventFileError
from stoker.tensorboard._read.stores import store_error, store_of

__all__ = [
    "READ_PIECE_BYTES",
    "EventFileReader",
    "FilePosition",
    "FileRemovedError",
    "Progress",
    "check_progress",
    "check_root",
    "find_event_files",
    "pieces",
    "read_record",
    "scan_records",
    "store_error",
]

READ_PIECE_BYTES = 16 << 20
"""Bytes read and scanned at a time, so that memory stays bounded on huge files."""
Progress = Callable[[str, int, int], None]
"""A progress callback: ``progress(path, bytes read so far, file size)``, after each window."""
_CRC_CHUNK = 1 << 20  # a record longer than a window is checked this much at a time


def _warn(message: str) -> None:
    warnings.warn(message, CorruptRecordWarning, stacklevel=4)


class FileRemovedError(EventFileError):
    """An event file that no longer exists (removed after its log dir was listed).

    :class:`EventFileReader` raises it as the :class:`EventFileError` it is; ``Reader`` and
    ``read_events`` skip the file with :meth:`warn`, like an entry that is not a regular file.
    """

    def __init__(self, path: str, offset: int, reason: str) -> None:
        """Say which file is gone, how far it was read, and the system's reason."""
        super().__init__(f"cannot read event file {path!r}: {reason}")
        self.path = path
        self.offset = offset

    def warn(self) -> None:
        """Report the file skipped (``CorruptRecordWarning``), with what was kept of it."""
        if self.offset:
            _warn(
                f"{self.path!r}: removed; what was read of it (up to offset {self.offset}) is "
                "kept, and no more is read"
            )
        else:
            _warn(f"{self.path!r}: skipped, it was removed after the log dir was listed")


def check_progress(progress: object) -> Progress | None:
    """Return ``progress`` if it is a callable or None, else raise a TypeError naming it."""
    if progress is not None and not callable(progress):
        raise TypeError(
            f"progress must be a callable progress(path, bytes read, file size) or None, got "
            f"{progress!r}; pass a function, or leave it out"
        )
    return progress


def check_root(root: str) -> None:
    """Check that ``root`` is a log directory or an event file that can be read.

    A regular file whose name has no ``tfevents`` must start with a TFRecord header, so that a
    text file passed by mistake is an error rather than an empty log.

    Raises:
        EventFileError: If it does not exist, is neither a directory nor a regular file, cannot
            be read, is not an event file, or (a URL) its store cannot be used.
    """
    store_of(root).check_root(root)


def find_event_files(root: str, warned: set[str] | None = None) -> dict[str, list[str]]:
    """Map run name to its event files, sorted by name, for every run under ``root``.

    A root that is an event file is the one run ``"."``. Entries that are not regular files,
    and directories that cannot be listed, are skipped with a warning (once per path when
    ``warned`` is given: the paths already reported, updated).

    Raises:
        EventFileError: If the root cannot be listed or its store cannot be used.

    Warns:
        CorruptRecordWarning: For each skipped entry.
    """
    return store_of(root).find_runs(root, warned)


def read_record(path: str, offset: int) -> bytes:
    """Return the data of the one record whose header is at ``offset`` of an event file.

    For values kept as a place in a file rather than held (the board's images and audio). The
    record is checked as a scan checks it: a record that is no longer there intact (the file
    was truncated, replaced or damaged since it was read) is an error, never other bytes.

    Raises:
        FileRemovedError: If the file is gone.
        EventFileError: If it cannot be read or holds no intact record at ``offset``.
    """
    store = store_of(path)
    try:
        with store.open(path) as stream:
            stream.seek(offset)
            header = stream.read(HEADER_SIZE)
            length = int.from_bytes(header[:8], "little") if len(header) == HEADER_SIZE else -1
            size = stream.seek(0, os.SEEK_END)
            if 0 <= length <= size - offset - HEADER_SIZE - FOOTER_SIZE:
                stream.seek(offset + HEADER_SIZE)
                found = scan(header + stream.read(length + FOOTER_SIZE)).records
                if len(found) == 1 and found[0][0] == 0:
                    return found[0][1]
    except EventFileError:
        raise
    except FileNotFoundError as err:
        raise FileRemovedError(path, offset, str(err)) from err
    except OSError as err:
        raise EventFileError(f"cannot read event file {path!r}: {err}") from err
    except Exception as err:  # a store's own error types (fsspec backends)
        wrapped = store.error(path, err)
        if wrapped is None:
            raise
        raise wrapped from err
    raise EventFileError(
        f"{path!r} holds no intact record at offset {offset} any more; the file was "
        "truncated, replaced or damaged after it was read"
    )


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
    _warn_damage(source, result.damage)
    return result


def _warn_damage(source: str, damage: list[tuple[int, str]]) -> None:
    for offset, reason in damage:
        warnings.warn(
            f"{source!r}: corrupt record at offset {offset} ({reason}); skipping to the next "
            "valid record",
            CorruptRecordWarning,
            stacklevel=4,
        )


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


class _ProgressError(Exception):
    """An error the progress callback raised, carried out of the walk to be raised as itself.

    An OSError it raises is not the file's.
    """

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class _Walk:
    """One pass over an open file from a position: records, damage, where it ended."""

    def __init__(self, stream: BinaryIO, path: str, size: int, progress: Progress | None):
        self.stream = stream
        self.path = path
        self.size = size
        self.progress = progress
        self.blocks: list[RecordBlock] = []
        self.damage: list[tuple[int, str]] = []
        # Where the first intact record after some offset was found: ``(after, at)``, with
        # ``at`` None when there is none before the end. It holds for any offset in between.
        self._next: tuple[int, int | None] | None = None

    def _report(self, done: int) -> None:
        if self.progress is not None:
            try:
                self.progress(self.path, done, self.size)
            except Exception as err:
                raise _ProgressError(err) from err

    def _read(self, offset: int, size: int) -> bytes:
        self.stream.seek(offset)
        return self.stream.read(size)

    def _chunks(self, offset: int, size: int) -> Iterator[bytes]:
        while size > 0:
            chunk = self._read(offset, min(size, _CRC_CHUNK))
            if not chunk:
                return
            yield chunk
            offset += len(chunk)
            size -= len(chunk)

    def record(self, offset: int, length: int) -> bytes | None:
        """The data of the record whose header is at ``offset``, or None if its CRC fails.

        A record longer than a window is checked as it streams by before it is read whole.
        """
        start = offset + HEADER_SIZE
        footer = self._read(start + length, FOOTER_SIZE)
        if len(footer) < FOOTER_SIZE:
            return None
        stored = int.from_bytes(footer, "little")
        if length > READ_PIECE_BYTES and masked_crc32c_of(self._chunks(start, length)) != stored:
            return None
        data = self._read(start, length)
        if len(data) != length or masked_crc32c(data) != stored:
            return None
        return data

    def next_record(self, start: int) -> int | None:
        """Offset of the first intact record at or after ``start``, or None before the end."""
        cached = self._next
        if cached is not None and cached[0] <= start and (cached[1] is None or start <= cached[1]):
            return cached[1]
        pos = start
        found: int | None = None
        while found is None and self.size - pos >= HEADER_SIZE:
            window = self._read(pos, min(READ_PIECE_BYTES, self.size - pos))
            result = scan_blocks(window, skipping=True)
            if result.blocks:
                found = pos + result.blocks[0].offset(0)
                break
            pos += result.end
            self._report(pos)
            if result.needed:
                length = result.needed - HEADER_SIZE - FOOTER_SIZE
                if pos + result.needed <= self.size and self.record(pos, length) is not None:
                    found = pos
                pos += 1
        self._next = (start, found)
        return found

    def run(self, pos: int, skipping: bool, budget: int | None) -> tuple[int, bool]:
        """Read records from ``pos`` until the end or about ``budget`` bytes; return the stop."""
        start = pos
        while self.size - pos >= HEADER_SIZE:
            left = None if budget is None else budget - (pos - start)
            if left is not None and left <= 0:
                break
            window = min(READ_PIECE_BYTES, self.size - pos)
            if left is not None:
                window = min(window, max(left, HEADER_SIZE))
            buffer = self._read(pos, window)
            if len(buffer) < HEADER_SIZE:
                break  # the file shrank while being read
            result = scan_blocks(buffer, skipping=skipping)
            del buffer  # the blocks hold the window: memory is the window and one long record
            for block in result.blocks:
                block.base = pos
            self.blocks.extend(result.blocks)
            self.damage.extend((pos + offset, reason) for offset, reason in result.damage)
            pos += result.end
            skipping = result.skipping
            self._report(pos)
            if not result.needed:
                continue
            length = result.needed - HEADER_SIZE - FOOTER_SIZE
            if pos + result.needed <= self.size:
                data = self.record(pos, length)
                if data is not None:
                    self.blocks.append(single_block(pos, data))
                    pos += result.needed
                    skipping = False
                    continue
                reason = "data checksum mismatch"
            elif self.next_record(pos + 1) is None:
                break  # the tail of a record still being written: wait for the rest
            else:
                reason = f"record length {length} runs past the end of the file"
            if not skipping:
                self.damage.append((pos, reason))
                skipping = True
            pos += 1
        return pos, skipping


class EventFileReader:
    """Reads the records of one event file incrementally, from a position that can be saved.

    Each :meth:`read_records` call returns the records appended since the previous call. A
    truncated last record is not an error: it is returned by a later call once complete.

    Args:
        path: The event file.
        offset: Byte offset to start from (a record boundary, e.g. a saved ``position.offset``).
        skipping: Start inside a corrupt stretch (from a saved position).
        progress: Called as ``progress(path, bytes read, file size)`` after each window read
            (at most :data:`READ_PIECE_BYTES`), e.g. to draw a progress bar for a huge file.
            Any callable: it stays in its process (see :attr:`progress`).

    Raises:
        TypeError: If ``progress`` is not a callable or None.
        ValueError: If ``offset`` is not an int >= 0.

    Example:
        >>> reader = EventFileReader(path)  # doctest: +SKIP
        >>> records = reader.read_records()  # everything so far
        >>> saved = reader.position  # later: EventFileReader(*saved) resumes here
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        offset: int = 0,
        skipping: bool = False,
        *,
        progress: Progress | None = None,
    ):
        """Open nothing yet; remember where to start."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be an int >= 0, got {offset!r}; pass a saved offset")
        self.path = os.fspath(path)
        self._store = store_of(self.path)
        self._offset = offset
        self._skipping = bool(skipping)
        self._pending = 0
        self._progress = check_progress(progress)

    def __getstate__(self) -> dict[str, object]:
        """Pickle the position, not the progress callback.

        A reader sent to another process (a worker's run coming back) arrives without one,
        whatever the callback was.
        """
        state = dict(self.__dict__)
        state["_progress"] = None
        return state

    @property
    def progress(self) -> Progress | None:
        """The progress callback, or None; may be replaced (not pickled: see ``__getstate__``)."""
        return self._progress

    @progress.setter
    def progress(self, progress: Progress | None) -> None:
        self._progress = check_progress(progress)

    @property
    def position(self) -> FilePosition:
        """The position the next :meth:`read_records` starts from; save it to resume later."""
        return FilePosition(self.path, self._offset, self._skipping)

    @property
    def pending_bytes(self) -> int:
        """Bytes after :attr:`position` not yet returned (a truncated tail), as of the last read."""
        return self._pending

    def read_blocks(self, max_bytes: int | None = None) -> list[RecordBlock]:
        """Read the records appended since the last call, in blocks (see ``RecordBlock``).

        Args:
            max_bytes: Read about this many bytes at most (more when one record is larger), so
                that a huge file can be read in pieces; ``None`` reads to the end of the file.

        Returns:
            The records in file order, in blocks that share a buffer.

        Raises:
            ValueError: If ``max_bytes`` is not a positive int or None.
            EventFileError: If the file cannot be read (or is gone), is not a regular file,
                or is now shorter than the saved position.

        Warns:
            CorruptRecordWarning: Once per corrupt stretch skipped.
        """
        if max_bytes is not None and (
            isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1
        ):
            raise ValueError(f"max_bytes must be a positive int or None, got {max_bytes!r}")
        base = self._offset
        callback_error: Exception | None = None
        try:
            with self._store.open(self.path) as stream:
                size = stream.seek(0, os.SEEK_END)
                if size < base:
                    raise EventFileError(
                        f"{self.path!r} is {size} bytes, shorter than the saved position "
                        f"{base}; the file was truncated or replaced, read it from 0"
                    )
                walk = _Walk(stream, self.path, size, self._progress)
                end, skipping = walk.run(base, self._skipping, max_bytes)
        except _ProgressError as err:
            callback_error = err.error
        except EventFileError:
            raise
        except FileNotFoundError as err:  # a local file, or one in a store
            raise FileRemovedError(self.path, base, str(err)) from err
        except OSError as err:
            raise EventFileError(f"cannot read event file {self.path!r}: {err}") from err
        except Exception as err:  # a store's own error types (fsspec backends)
            wrapped = self._store.error(self.path, err)
            if wrapped is None:
                raise
            raise wrapped from err
        if callback_error is not None:
            raise callback_error  # as it was raised, the position unchanged
        _warn_damage(self.path, walk.damage)
        self._offset = end
        self._skipping = skipping
        self._pending = size - end
        return walk.blocks

    def read_records(self, max_bytes: int | None = None) -> list[tuple[int, bytes]]:
        """:meth:`read_blocks` as ``(file offset, payload)`` pairs in file order."""
        return [record for block in self.read_blocks(max_bytes) for record in block.records()]


def pieces(reader: EventFileReader) -> Iterator[list[RecordBlock]]:
    """Read what was appended to a file a piece at a time: memory stays bounded on huge files.

    Yields each :meth:`EventFileReader.read_blocks` result, of about :data:`READ_PIECE_BYTES`,
    until the file's end or a truncated tail.
    """
    while True:
        before = reader.position
        yield reader.read_blocks(max_bytes=READ_PIECE_BYTES)
        if reader.position == before or reader.pending_bytes == 0:
            return
