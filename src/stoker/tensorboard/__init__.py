"""Write TensorBoard event files without torch, TensorFlow or protobuf.

``SummaryWriter`` and ``FileWriter`` follow ``torch.utils.tensorboard`` (torch 2.13): same
methods, arguments and defaults, and event files that TensorBoard reads as it reads torch's.
A log dir may also be an fsspec URL (``s3://bucket/run``): files are staged locally, rotated
and uploaded once closed. ``rank_writer`` makes multi-process (DDP) logging rank-aware.

``Reader`` loads logs back: runs found recursively, typed scalars, tensors, histograms, images,
audio, text and hparams, NumPy columns or a pandas DataFrame, and tail-following of growing files.
"""

from stoker.tensorboard._file_writer import FileWriter
from stoker.tensorboard._ranks import NullWriter, rank_writer
from stoker.tensorboard._reader import Reader, read_events
from stoker.tensorboard._reader_records import (
    CorruptRecordWarning,
    EventFileError,
    EventFileReader,
    FilePosition,
)
from stoker.tensorboard._reader_types import (
    AudioEvent,
    Event,
    HistogramEvent,
    HParams,
    ImageEvent,
    ScalarSeries,
    TensorEvent,
    TextEvent,
)
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
    "rank_writer",
    "read_events",
]
