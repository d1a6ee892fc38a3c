"""Write TensorBoard event files without torch, TensorFlow or protobuf, and read them back.

``SummaryWriter`` and ``FileWriter`` follow ``torch.utils.tensorboard`` (torch 2.13): same
methods, arguments and defaults, and event files that TensorBoard reads as it reads torch's.
A log dir may also be an fsspec URL (``s3://bucket/run``, see :func:`is_url`): files are
staged locally, rotated and uploaded once closed. ``rank_writer`` makes multi-process (DDP)
logging rank-aware.

``Reader`` loads logs back: runs found recursively, typed scalars, tensors, histograms, images,
audio, text and hparams, NumPy columns or a pandas DataFrame, and tail-following of growing files.
Event files are untrusted input: the reader raises only :class:`EventFileError` and warns with
:class:`CorruptRecordWarning` about damage it skips.
"""

from stoker._public import fixup_module_metadata
from stoker.tensorboard._file_writer import FileWriter
from stoker.tensorboard._ranks import NullWriter, rank_writer
from stoker.tensorboard._read import (
    AudioEvent,
    CorruptRecordWarning,
    Event,
    EventFileError,
    EventFileReader,
    FilePosition,
    HistogramEvent,
    HParams,
    ImageEvent,
    Reader,
    ScalarSeries,
    TensorEvent,
    TextEvent,
    read_events,
)
from stoker.tensorboard._remote import is_url
from stoker.tensorboard._writer import SummaryWriter

__all__ = [
    "AudioEvent",
    "CorruptRecordWarning",
    "Event",
    "EventFileError",
    "EventFileReader",
    "FilePosition",
    "FileWriter",
    "HParams",
    "HistogramEvent",
    "ImageEvent",
    "NullWriter",
    "Reader",
    "ScalarSeries",
    "SummaryWriter",
    "TensorEvent",
    "TextEvent",
    "is_url",
    "rank_writer",
    "read_events",
]

fixup_module_metadata(__name__, globals())
