"""The reader's side of ``stoker board``: a log dir read into TensorBoard's data model.

A private facade that ``stoker.tensorboard`` opens to ``stoker.board`` alone (the architecture
test lists it): the board serves what the reader reads, with the reader's own framing, resync,
parallel loading and remote stores, so it imports this module and nothing else of the reader.
"""

from __future__ import annotations

from stoker.tensorboard._read.errors import CorruptRecordWarning, EventFileError
from stoker.tensorboard._read.files import FileRemovedError
from stoker.tensorboard._read.reader import Reader
from stoker.tensorboard._read.series import (
    BLOB_SEQUENCE,
    SCALAR,
    TENSOR_CLASS,
    BlobPoint,
    SeriesMetadata,
    SeriesRun,
    TensorPoint,
    read_blob,
)

__all__ = [
    "BLOB_SEQUENCE",
    "SCALAR",
    "TENSOR_CLASS",
    "BlobPoint",
    "CorruptRecordWarning",
    "EventFileError",
    "FileRemovedError",
    "SeriesLog",
    "SeriesMetadata",
    "SeriesRun",
    "TensorPoint",
    "read_blob",
]


class SeriesLog(Reader):
    """A log dir (local or behind an fsspec URL) read as :class:`SeriesRun` runs.

    :meth:`reload` reads what was appended, new files and new runs, as the reader does, and
    drops the runs whose files are all gone, as a page that follows a log dir should.
    """

    _keep_unlisted = False

    def _new_run(self, name: str) -> SeriesRun:
        return SeriesRun(name, self.purge)

    def series_runs(self) -> dict[str, SeriesRun]:
        """Return run name to its series, in name order."""
        runs = {}
        for name in self.runs:
            data = self._runs[name]
            if isinstance(data, SeriesRun):
                runs[name] = data
        return runs
