"""The reader: event files back into typed values, whatever state the bytes are in.

``files`` finds a log dir's runs and reads one file's records incrementally (tail-following,
resync past corruption, saved positions); ``decode`` walks Event, Summary and TensorProto bytes
(with the scalar fast path); ``run`` sorts one run's values into kinds and applies
TensorBoard's purge; ``tf2_summaries`` converts TF2-layout tensors into classic values;
``values`` holds the types handed back; ``errors`` the one error and the one warning;
``reader`` is the public :class:`Reader` and :func:`read_events`.

The rest of ``stoker.tensorboard`` imports from this facade, never from the modules inside.
"""

from stoker.tensorboard._read.errors import CorruptRecordWarning, EventFileError
from stoker.tensorboard._read.files import EventFileReader, FilePosition
from stoker.tensorboard._read.reader import Reader, read_events
from stoker.tensorboard._read.values import (
    AudioEvent,
    Event,
    HistogramEvent,
    HParams,
    ImageEvent,
    ScalarSeries,
    TensorEvent,
    TextEvent,
)

__all__ = [
    "AudioEvent",
    "CorruptRecordWarning",
    "Event",
    "EventFileError",
    "EventFileReader",
    "FilePosition",
    "HParams",
    "HistogramEvent",
    "ImageEvent",
    "Reader",
    "ScalarSeries",
    "TensorEvent",
    "TextEvent",
    "read_events",
]
