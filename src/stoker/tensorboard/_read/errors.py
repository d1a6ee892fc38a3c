"""The reader's error and warning: what it raises, and what it says about damage it skips.

Event files are untrusted input. Whatever their bytes, the reader (``Reader``, ``read_events``,
``EventFileReader`` and the values they return) raises nothing but :class:`EventFileError` for
what it cannot read, and warns with :class:`CorruptRecordWarning` about damage it reads past.
Arguments of the wrong type or value (a path that is not a path, a negative offset) raise
``TypeError`` / ``ValueError`` as everywhere else in stoker.
"""

from __future__ import annotations

__all__ = ["CorruptRecordWarning", "EventFileError"]


class EventFileError(ValueError):
    """Raised when an event file or a log directory cannot be read as asked.

    The reader raises it for a path that does not exist, is not a directory or an event file
    (a FIFO, a text file) or cannot be listed, a store that cannot be used (its fsspec package
    missing, an unknown protocol, no credentials), an unknown run or tag (or a tag found in
    several runs without ``run=``), a file that cannot be read or that shrank below a saved
    position, a worker process that died while reading runs (its signal and its runs named),
    and a value whose payload is malformed when it is decoded (a tensor whose bytes
    do not match its shape, hparams plugin data that is not a valid message, an image Pillow
    cannot open, audio that is not PCM WAV). Bytes the reader cannot make sense of while it
    scans never raise: they are skipped with a :class:`CorruptRecordWarning`.
    """


class CorruptRecordWarning(UserWarning):
    """Issued when the reader skips what it cannot read: damage, or an entry it will not open.

    Once per corrupt stretch, once per malformed event, once per skipped entry. A corrupt
    stretch is a run of bytes that does not frame as records (a checksum fails, or a length is
    absurd or runs past the end of the file while intact records follow); the reader resyncs to
    the next intact record after it. A malformed event is an intact record whose payload is not
    a valid ``Event`` or ``Summary``; it is dropped. A skipped entry is something in a log dir
    named like an event file that is not a regular file (a FIFO, a dangling link), an event
    file removed after the log dir was listed (what was read of it before is kept), or a
    directory below the root that cannot be listed.
    """
