"""Runs in TensorBoard's data model: one time series per tag, with its plugin and data class.

TensorBoard's web page asks a *data provider* for time series of three data classes: scalars
(a float per step), tensors (a ``TensorProto`` per step: histograms, text, PR curves, meshes,
hparams, custom-scalar layouts) and blob sequences (a list of byte strings per step: images,
audio, graphs). Each series carries the ``SummaryMetadata`` of its tag: the plugin that draws
it (``plugin_name`` and ``content``), a display name and description, and the data class.

:class:`SeriesRun` reads a run into that model with the reader's machinery (the same framing,
resync, scalar fast path and restart purge as :class:`~stoker.tensorboard.Reader`). Older
summaries are converted the way TensorBoard's own loader converts them (the rules of its
``data_compat`` and ``dataclass_compat`` modules), so that a dashboard shows the same thing:

* ``simple_value`` is a scalar of the ``scalars`` plugin; ``histo`` becomes a ``[k, 3]``
  float32 tensor of bucket (left, right, count) of the ``histograms`` plugin, empty buckets
  at both ends dropped and the outer edges replaced by the min and max; ``image`` becomes the
  blob sequence ``[width, height, encoded image]`` and ``audio`` the one blob
  ``[encoded audio]``; each gets its plugin's metadata, the tag as display name when the value
  named none;
* a tensor takes the data class its first metadata declares, or else the one its plugin
  implies (``scalars``: scalar; ``images``, ``audio`` and the graph sub-plugins: blob
  sequence; ``histograms``, ``text``, ``hparams``, ``pr_curves``, ``mesh``,
  ``custom_scalars``: tensor); audio tensors keep only their clips (the first column), an
  hparams summary without a tensor gets an empty float tensor;
* an event's ``graph_def`` is the blob sequence ``__run_graph__`` of the ``graphs`` plugin,
  and its ``tagged_run_metadata`` a blob sequence of ``graph_tagged_run_metadata``.

A series' metadata is that of the first value of its tag that carries metadata, as
TensorBoard keeps it. Tensors are kept encoded, as read; blobs are not kept at all: a blob
point remembers where its record lies (file and offset) and :func:`read_blob` reads it again
when the page asks, so that images and audio, most of a log dir's bytes, stay on disk.
"""

from __future__ import annotations

import contextlib
import math
from array import array
from typing import Any, NamedTuple

import numpy as np

from stoker.tensorboard._proto import (
    DT_FLOAT,
    HISTOGRAM,
    PLUGIN_AUDIO,
    PLUGIN_CUSTOM_SCALARS,
    PLUGIN_HISTOGRAMS,
    PLUGIN_HPARAMS,
    PLUGIN_IMAGES,
    PLUGIN_MESH,
    PLUGIN_PR_CURVES,
    PLUGIN_SCALARS,
    PLUGIN_TEXT,
    SUMMARY_AUDIO,
    SUMMARY_IMAGE,
    SUMMARY_METADATA,
    TAGGED_RUN_METADATA,
    TENSOR,
    RecordBlock,
    WireError,
)
from stoker.tensorboard._read.decode import (
    ParsedEvent,
    SummaryValue,
    decode_tensor,
    parse_event,
    parse_summary,
)
from stoker.tensorboard._read.errors import EventFileError
from stoker.tensorboard._read.files import read_record
from stoker.tensorboard._read.run import RunData

__all__ = [
    "BLOB_SEQUENCE",
    "SCALAR",
    "TENSOR_CLASS",
    "BlobPoint",
    "SeriesMetadata",
    "SeriesRun",
    "TensorPoint",
    "read_blob",
]

# SummaryMetadata.data_class (summary.proto's DataClass enum).
UNKNOWN = 0
SCALAR = 1
TENSOR_CLASS = 2
BLOB_SEQUENCE = 3

GRAPHS = "graphs"
RUN_GRAPH_TAG = "__run_graph__"
TAGGED_RUN_METADATA_PLUGIN = "graph_tagged_run_metadata"
_GRAPH_SUB_PLUGINS = frozenset(
    ("graph_run_metadata", "graph_run_metadata_graph", "graph_keras_model")
)
_CLASS_OF_PLUGIN = {
    PLUGIN_SCALARS: SCALAR,
    PLUGIN_IMAGES: BLOB_SEQUENCE,
    PLUGIN_AUDIO: BLOB_SEQUENCE,
    **dict.fromkeys(_GRAPH_SUB_PLUGINS, BLOB_SEQUENCE),
    **dict.fromkeys(
        (
            PLUGIN_HISTOGRAMS,
            PLUGIN_TEXT,
            PLUGIN_HPARAMS,
            PLUGIN_PR_CURVES,
            PLUGIN_MESH,
            PLUGIN_CUSTOM_SCALARS,
        ),
        TENSOR_CLASS,
    ),
}


class SeriesMetadata(NamedTuple):
    """A series' ``SummaryMetadata``: what the page uses to choose and label its dashboard.

    Attributes:
        plugin_name: The plugin that draws the series.
        content: The plugin's own metadata bytes (``plugin_data.content``).
        display_name: The name to show, or ``""``.
        description: The ``summary_description``, or ``""``.
        data_class: :data:`SCALAR`, :data:`TENSOR_CLASS` or :data:`BLOB_SEQUENCE`.
    """

    plugin_name: str
    content: bytes
    display_name: str
    description: str
    data_class: int


class TensorPoint(NamedTuple):
    """One step of a tensor series: the ``TensorProto`` bytes as TensorBoard would serve them."""

    step: int
    wall_time: float
    tensor: bytes


class BlobPoint(NamedTuple):
    """One step of a blob sequence, kept as the place its blobs can be read from.

    Attributes:
        step: The step.
        wall_time: The wall time.
        length: How many blobs the step holds.
        path: The event file.
        offset: The file offset of the record's header.
        ordinal: Which value of the event's summary (``-1``: the event's graph or run metadata).
        kind: How the blobs are laid out: ``"image"`` or ``"audio"`` (classic values),
            ``"tensor"`` (a string tensor, ``stride`` strings per blob), ``"event"`` (the
            event's ``graph_def`` or ``tagged_run_metadata``).
        stride: For ``"tensor"``: strings per blob (audio clips carry labels beside them).
    """

    step: int
    wall_time: float
    length: int
    path: str
    offset: int
    ordinal: int
    kind: str
    stride: int = 1


class SeriesRun(RunData):
    """One run's time series in TensorBoard's data model (see the module docstring).

    Scalar series are the reader's NumPy columns (``scalar_columns``); tensor and blob series
    are lists of :class:`TensorPoint` and :class:`BlobPoint` in ``items["tensor"]`` and
    ``items["blob"]`` (so that the restart purge reaches them); :attr:`metadata` maps each tag
    to its :class:`SeriesMetadata`; :attr:`start_time` is the wall time of the run's first
    event.
    """

    def __init__(self, name: str, purge: bool = True) -> None:
        """Start empty, as :class:`RunData` does."""
        super().__init__(name, purge)
        self.items["tensor"] = {}
        self.items["blob"] = {}
        self.metadata: dict[str, SeriesMetadata] = {}
        self.start_time: float | None = None
        # The plugin and data class each tag's first value implies (its "initial metadata"),
        # which decides how every later value of the tag is converted.
        self._initial: dict[str, tuple[str, int]] = {}
        self._where = ("", 0, 0)  # the event being taken: file, offset, next value's ordinal
        self._seen: dict[str, None] = {}  # every tag, in the order of its first value

    def series(self) -> dict[str, SeriesMetadata]:
        """Return tag to metadata for every series that can be served (known data class).

        The tags come in the order they first appear in the run's files, as TensorBoard lists
        them.
        """
        out = {}
        for tag in self._seen:
            metadata = self.metadata.get(tag)
            if tag in self.scalar_columns:
                metadata = metadata or _scalar_metadata(tag)
            elif tag not in self.items["tensor"] and tag not in self.items["blob"]:
                continue
            if metadata is not None and metadata.data_class:
                out[tag] = metadata
        return out

    def _column(self, tag: str) -> tuple[array[int], array[float], array[float]]:
        """A scalar tag's columns; a new tag is noted in order of appearance."""
        self._seen.setdefault(tag)
        return super()._column(tag)

    def scalar_arrays(
        self, tag: str
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """Return a scalar series' step, wall time and value columns, copied."""
        series = self.scalars(tag)
        return series.step, series.wall_time, series.value

    def _ingest(self, path: str, block: RecordBlock) -> None:
        """Take a block as the reader does, first noting the run's first wall time."""
        if self.start_time is None and len(block):
            with contextlib.suppress(WireError):  # reported as malformed when it is taken
                self.start_time = parse_event(block.data(0)).wall_time
        super()._ingest(path, block)

    def _ingest_event(self, path: str, offset: int, data: bytes) -> None:
        """Take one event that is not a plain scalar, remembering where it lies."""
        self._where = (path, offset, 0)
        super()._ingest_event(path, offset, data)

    def _add_event(self, event: ParsedEvent) -> None:
        """Take a graph or run metadata as a blob sequence; the rest as the reader does."""
        super()._add_event(event)
        if event.what == "graph_def":
            self._add_event_blob(RUN_GRAPH_TAG, GRAPHS, event)
        elif event.what == "tagged_run_metadata":
            tag = str(TAGGED_RUN_METADATA.decode(event.payload).get("tag", ""))
            self._add_event_blob(tag, TAGGED_RUN_METADATA_PLUGIN, event)

    def _add_event_blob(self, tag: str, plugin: str, event: ParsedEvent) -> None:
        self._seen.setdefault(tag)
        if tag not in self._initial:
            self._initial[tag] = (plugin, BLOB_SEQUENCE)
            self.metadata[tag] = SeriesMetadata(plugin, b"", "", "", BLOB_SEQUENCE)
        if self._initial[tag] == (plugin, BLOB_SEQUENCE):
            path, offset, _ = self._where
            point = BlobPoint(event.step, event.wall_time, 1, path, offset, -1, "event")
            self.items["blob"].setdefault(tag, []).append(point)

    def _add_value(self, value: SummaryValue, event: ParsedEvent) -> None:
        """Sort one summary value into its series, converted as TensorBoard converts it."""
        path, offset, ordinal = self._where
        self._where = (path, offset, ordinal + 1)
        tag, kind = value.tag, value.kind
        self._seen.setdefault(tag)
        if tag not in self._initial and tag not in self.scalar_columns:
            self._initial[tag] = _initial(value)
        if tag in self.scalar_columns:
            plugin, data_class = PLUGIN_SCALARS, SCALAR  # a fast-path scalar came first
        else:
            plugin, data_class = self._initial[tag]
            if tag not in self.metadata and (value.has_metadata or kind in _CONVERTED):
                self.metadata[tag] = _metadata(value, data_class)
        step, wall_time = event.step, event.wall_time
        if kind in _CONVERTED and _CONVERTED[kind][2] != data_class:
            return  # a classic value in a series of another class: TensorBoard cannot serve it
        if kind == "simple_value":
            self._add_scalar(tag, step, wall_time, float(value.payload))
        elif kind == "histo":
            point = TensorPoint(step, wall_time, _histogram_tensor(value.payload))
            self.items["tensor"].setdefault(tag, []).append(point)
        elif kind in ("image", "audio"):
            length = 3 if kind == "image" else 1
            blob = BlobPoint(step, wall_time, length, path, offset, ordinal, kind)
            self.items["blob"].setdefault(tag, []).append(blob)
        elif kind == "tensor" or (not kind and plugin == PLUGIN_HPARAMS):
            payload = value.payload if kind == "tensor" else _NULL_TENSOR
            self._add_tensor_value(tag, (plugin, data_class), payload, event, ordinal)

    def _add_tensor_value(
        self,
        tag: str,
        initial: tuple[str, int],
        payload: bytes,
        event: ParsedEvent,
        ordinal: int,
    ) -> None:
        plugin, data_class = initial
        step, wall_time = event.step, event.wall_time
        if data_class == SCALAR:
            dtype, array = decode_tensor(payload)
            if array.size != 1 or dtype == "string":
                raise WireError(f"scalar {tag!r} at step {step} holds {array.size} values")
            self._add_scalar(tag, step, wall_time, float(array.reshape(-1)[0].real))
        elif data_class == BLOB_SEQUENCE:
            dtype, array = decode_tensor(payload)
            if dtype != "string":
                raise WireError(f"blob sequence {tag!r} at step {step} has dtype {dtype}")
            audio = plugin == PLUGIN_AUDIO and array.ndim > 1
            length = int(array.shape[0]) if audio else int(array.size)
            stride = math.prod(array.shape[1:]) if audio else 1
            path, offset, _ = self._where
            blob = BlobPoint(step, wall_time, length, path, offset, ordinal, "tensor", stride)
            self.items["blob"].setdefault(tag, []).append(blob)
        elif data_class == TENSOR_CLASS:
            self.items["tensor"].setdefault(tag, []).append(TensorPoint(step, wall_time, payload))


# Classic values: (plugin, content, data class). The contents are the plugins' PluginData
# messages as TensorBoard makes them for converted values: version 0, images and audio flagged
# converted_to_tensor (field 2 of ImagePluginData, field 3 of AudioPluginData), audio's
# encoding WAV (field 2, value 11).
_CONVERTED = {
    "simple_value": (PLUGIN_SCALARS, b"", SCALAR),
    "histo": (PLUGIN_HISTOGRAMS, b"", TENSOR_CLASS),
    "image": (PLUGIN_IMAGES, b"\x10\x01", BLOB_SEQUENCE),
    "audio": (PLUGIN_AUDIO, b"\x10\x0b\x18\x01", BLOB_SEQUENCE),
}


def _initial(value: SummaryValue) -> tuple[str, int]:
    """The plugin and data class a tag's first value gives its whole series."""
    if value.kind in _CONVERTED:
        plugin, _, data_class = _CONVERTED[value.kind]
        return plugin, data_class
    declared = _decoded_metadata(value).get("data_class", UNKNOWN)
    return value.plugin_name, int(declared) or _CLASS_OF_PLUGIN.get(value.plugin_name, UNKNOWN)


def _metadata(value: SummaryValue, data_class: int) -> SeriesMetadata:
    """The series metadata TensorBoard keeps from a value (converted for classic values)."""
    decoded = _decoded_metadata(value)
    display = str(decoded.get("display_name", ""))
    description = str(decoded.get("summary_description", ""))
    if value.kind in _CONVERTED:
        plugin, content, _ = _CONVERTED[value.kind]
        return SeriesMetadata(plugin, content, display or value.tag, description, data_class)
    declared = int(decoded.get("data_class", UNKNOWN))
    return SeriesMetadata(
        value.plugin_name, value.plugin_content, display, description, declared or data_class
    )


def _decoded_metadata(value: SummaryValue) -> dict[str, Any]:
    return SUMMARY_METADATA.decode(value.metadata) if value.metadata else {}


def _scalar_metadata(tag: str) -> SeriesMetadata:
    """The metadata of a scalar series the fast path took (a classic ``simple_value``)."""
    return SeriesMetadata(PLUGIN_SCALARS, b"", tag, "", SCALAR)


def _histogram_tensor(payload: bytes) -> bytes:
    """A classic ``HistogramProto`` as the ``[k, 3]`` float32 tensor TensorBoard serves."""
    histo = HISTOGRAM.decode(payload)
    counts = np.array(histo.get("bucket", []), dtype=np.float64)
    limits = np.array(histo.get("bucket_limit", []), dtype=np.float64)
    nonzero = np.flatnonzero(counts > 0)
    if not len(nonzero):
        buckets = np.zeros((0, 3), dtype=np.float32)
    else:
        start, end = int(nonzero[0]), int(nonzero[-1])
        inner = limits[start:end]
        if len(inner) != end - start:
            raise WireError(f"histogram has {len(limits)} bucket limits for {len(counts)} buckets")
        lefts = np.concatenate(([float(histo.get("min", 0.0))], inner))
        rights = np.concatenate((inner, [float(histo.get("max", 0.0))]))
        buckets = np.stack([lefts, rights, counts[start : end + 1]]).astype(np.float32).T
    return _float_tensor(buckets)


def _float_tensor(array: np.ndarray[Any, Any]) -> bytes:
    shape = {"dim": [{"size": size} for size in array.shape]}
    content = np.ascontiguousarray(array, dtype="<f4").tobytes()
    return TENSOR.encode({"dtype": DT_FLOAT, "tensor_shape": shape, "tensor_content": content})


_NULL_TENSOR = _float_tensor(np.zeros(0, dtype=np.float32))
"""An empty float tensor of shape ``[0]``: what an hparams summary without a tensor becomes."""


def read_blob(point: BlobPoint, tag: str, index: int) -> bytes:
    """Read blob ``index`` of a blob point back from its event file.

    Raises:
        IndexError: If ``index`` is not below ``point.length``.
        FileRemovedError: If the file is gone.
        EventFileError: If the record is no longer there, or no longer holds the value.
    """
    if not 0 <= index < point.length:
        raise IndexError(f"blob index must be in [0, {point.length}), got {index}")
    data = read_record(point.path, point.offset)
    try:
        event = parse_event(data)
        if point.kind == "event":
            if event.what == "graph_def":
                return event.payload
            return bytes(TAGGED_RUN_METADATA.decode(event.payload).get("run_metadata", b""))
        values = parse_summary(event.payload) if event.what == "summary" else []
        if not 0 <= point.ordinal < len(values) or values[point.ordinal].tag != tag:
            raise WireError(f"value {point.ordinal} of the event is not {tag!r}")
        value = values[point.ordinal]
        if point.kind == "image":
            image = SUMMARY_IMAGE.decode(value.payload)
            fields = (str(int(image.get("width", 0))).encode(),
                      str(int(image.get("height", 0))).encode(),
                      bytes(image.get("encoded_image_string", b"")))  # fmt: skip
            return fields[index]
        if point.kind == "audio":
            return bytes(SUMMARY_AUDIO.decode(value.payload).get("encoded_audio_string", b""))
        _, strings = decode_tensor(value.payload)
        return bytes(strings.reshape(-1)[index * point.stride])
    except WireError as err:
        raise EventFileError(
            f"{point.path!r}: the record at offset {point.offset} no longer holds blob "
            f"{index} of {tag!r} at step {point.step} ({err})"
        ) from err
