"""Accumulation of one run's events into typed series, with TensorBoard's purge on restart.

A run is one directory of event files. :class:`RunData` reads its files in name order (the
order in which writers create them), sorts each summary value into a kind by its payload and
its tag's plugin, and keeps every point: there is no reservoir sampling.

Purging follows TensorBoard's ``EventAccumulator``: an ``Event`` carrying
``SessionLog{status: START}`` at step ``S`` means a job restarted from a checkpoint at ``S``, so
every point read before it with ``step >= S`` is dropped, in every tag and kind of the run.
Points read after it are kept whatever their step. ``SummaryWriter(purge_step=S)`` writes such
an event.
"""

from __future__ import annotations

import warnings
from array import array
from collections.abc import Callable
from typing import Any

import numpy as np

from stoker.tensorboard._proto import (
    HISTOGRAM,
    PLUGIN_AUDIO,
    PLUGIN_HISTOGRAMS,
    PLUGIN_HPARAMS,
    PLUGIN_IMAGES,
    PLUGIN_SCALARS,
    PLUGIN_TEXT,
    SESSION_LOG,
    SESSION_START,
    SUMMARY_AUDIO,
    SUMMARY_IMAGE,
    RecordBlock,
    WireError,
)
from stoker.tensorboard._read.decode import (
    ParsedEvent,
    ScalarFastPath,
    ScalarHits,
    SummaryValue,
    decode_tensor,
    parse_event,
    parse_summary,
)
from stoker.tensorboard._read.errors import CorruptRecordWarning
from stoker.tensorboard._read.files import EventFileReader, FileRemovedError, pieces
from stoker.tensorboard._read.tf2_summaries import (
    audio_from_tensor,
    histogram_from_tensor,
    images_from_tensor,
)
from stoker.tensorboard._read.values import (
    AudioEvent,
    HistogramEvent,
    ImageEvent,
    ScalarSeries,
    TextEvent,
)

__all__ = ["KINDS", "RawTensor", "RunData"]

# A block whose events are more than one in this many something other than plain scalars is
# taken one event at a time: splitting it into runs of scalars would cost more than it saves.
_ONE_BY_ONE = 8
KINDS = ("scalars", "tensors", "histograms", "images", "audio", "text", "hparams")
_HISTOGRAM_STATS = ("min", "max", "num", "sum", "sum_squares")
# TF2-style tensor summaries of these plugins join the classic values of the same kind.
# Their plugin names are the names of those kinds.
_V2_CONVERTERS: dict[str, Callable[[int, float, str, np.ndarray[Any, Any]], Any]] = {
    PLUGIN_HISTOGRAMS: histogram_from_tensor,
    PLUGIN_IMAGES: images_from_tensor,
    PLUGIN_AUDIO: audio_from_tensor,
}


class RawTensor:
    """A tensor value kept encoded until asked for."""

    __slots__ = ("payload", "plugin_name", "step", "wall_time")

    def __init__(self, step: int, wall_time: float, payload: bytes, plugin_name: str) -> None:
        """Hold the encoded ``TensorProto``."""
        self.step = step
        self.wall_time = wall_time
        self.payload = payload
        self.plugin_name = plugin_name


class RunData:
    """Every point of one run, grouped by kind and tag.

    Args:
        name: The run's name (its directory relative to the root).
        purge: Apply the restart purge described in the module docstring.
    """

    def __init__(self, name: str, purge: bool = True) -> None:
        """Start empty; :meth:`add_file` and :meth:`load` fill it."""
        self.name = name
        self.purge = purge
        self.files: dict[str, EventFileReader] = {}
        self.scalar_columns: dict[str, tuple[array[int], array[float], array[float]]] = {}
        self.items: dict[str, dict[str, list[Any]]] = {kind: {} for kind in KINDS[1:]}
        self.plugins: dict[str, tuple[str, bytes]] = {}
        self.hparam_contents: list[bytes] = []
        self._fast = ScalarFastPath()

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the points and positions, not the scalar path's cache.

        A worker's run travels back to the reading process this way.
        """
        state = dict(self.__dict__)
        del state["_fast"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled run with a fresh scalar path."""
        self.__dict__.update(state)
        self._fast = ScalarFastPath()

    def add_file(self, reader: EventFileReader) -> None:
        """Track a new event file of this run."""
        self.files[reader.path] = reader

    def load(self) -> int:
        """Read what was appended to every file since the last call; return the records read.

        A file removed since it was added is dropped with a warning; what was read of it stays.
        """
        count = 0
        for path in sorted(self.files):
            try:
                for blocks in pieces(self.files[path]):
                    for block in blocks:
                        count += len(block)
                        self._ingest(path, block)
            except FileRemovedError as gone:
                del self.files[path]
                gone.warn()
        return count

    def _ingest(self, path: str, block: RecordBlock) -> None:
        """Take a block's events in file order: runs of plain scalars as columns.

        The rest are taken one by one (a block of mostly other events entirely one by one).
        """
        hits = self._fast.match_block(block)
        others = np.flatnonzero(~hits.hit)
        if others.size * _ONE_BY_ONE > len(block):
            rows = zip(
                hits.hit.tolist(),
                hits.tag.tolist(),
                hits.step.tolist(),
                hits.wall_time.tolist(),
                hits.value.tolist(),
                strict=True,
            )
            for row, (hit, tag, step, wall_time, value) in enumerate(rows):
                if hit:
                    self._add_scalar(hits.tags[tag], step, wall_time, value)
                else:
                    self._ingest_event(path, block.offset(row), block.data(row))
            return
        begin = 0
        for index in others.tolist():
            self._add_scalar_run(hits, begin, index)
            self._ingest_event(path, block.offset(index), block.data(index))
            begin = index + 1
        self._add_scalar_run(hits, begin, len(block))

    def _add_scalar_run(self, hits: ScalarHits, begin: int, end: int) -> None:
        """Append the scalars of records ``begin:end`` (all plain scalars) to their columns."""
        if end <= begin:
            return
        tag_ids = hits.tag[begin:end]
        steps = hits.step[begin:end]
        walls = hits.wall_time[begin:end]
        values = hits.value[begin:end]
        for tag_id in np.unique(tag_ids).tolist():
            mine = tag_ids == tag_id
            column = self._column(hits.tags[tag_id])
            column[0].frombytes(steps[mine].astype(np.int64).tobytes())
            column[1].frombytes(walls[mine].astype(np.float64).tobytes())
            column[2].frombytes(values[mine].astype(np.float64).tobytes())

    def _ingest_event(self, path: str, offset: int, data: bytes) -> None:
        """Take one event that is not a plain scalar (the block decoder tried it already)."""
        try:
            event = parse_event(data)
            values = parse_summary(event.payload) if event.what == "summary" else []
            if event.what != "summary":
                self._add_event(event)
            for summary_value in values:
                self._add_value(summary_value, event)
        except WireError as err:
            warnings.warn(
                f"{path!r}: malformed event at offset {offset} ({err}); skipping it",
                CorruptRecordWarning,
                stacklevel=5,
            )

    def _add_event(self, event: ParsedEvent) -> None:
        """Take an event that holds no summary: a restart's ``SessionLog`` purges."""
        if event.what == "session_log" and self.purge:
            status = SESSION_LOG.decode(event.payload).get("status", 0)
            if status == SESSION_START:
                self._purge(event.step)

    def _column(self, tag: str) -> tuple[array[int], array[float], array[float]]:
        column = self.scalar_columns.get(tag)
        if column is None:
            column = self.scalar_columns[tag] = (array("q"), array("d"), array("d"))
        return column

    def _add_scalar(self, tag: str, step: int, wall_time: float, value: float) -> None:
        column = self._column(tag)
        column[0].append(step)
        column[1].append(wall_time)
        column[2].append(value)

    def _add_value(self, value: SummaryValue, event: ParsedEvent) -> None:
        tag = value.tag
        if value.has_metadata and tag not in self.plugins:
            self.plugins[tag] = (value.plugin_name, value.plugin_content)
        plugin = self.plugins.get(tag, ("", b""))[0]
        step, wall_time, kind, payload = event.step, event.wall_time, value.kind, value.payload
        if kind == "simple_value":
            self._add_scalar(tag, step, wall_time, payload)
        elif kind == "histo":
            histo = HISTOGRAM.decode(payload)
            limits = np.asarray(histo.get("bucket_limit", []), dtype=np.float64)
            counts = np.asarray(histo.get("bucket", []), dtype=np.float64)
            low, high, num, total, squares = (
                float(histo.get(name, 0.0)) for name in _HISTOGRAM_STATS
            )
            item: Any = HistogramEvent(
                step, wall_time, low, high, num, total, squares, limits, counts
            )
            self.items["histograms"].setdefault(tag, []).append(item)
        elif kind == "image":
            image = SUMMARY_IMAGE.decode(payload)
            item = ImageEvent(
                step,
                wall_time,
                int(image.get("width", 0)),
                int(image.get("height", 0)),
                int(image.get("colorspace", 0)),
                bytes(image.get("encoded_image_string", b"")),
            )
            self.items["images"].setdefault(tag, []).append(item)
        elif kind == "audio":
            audio = SUMMARY_AUDIO.decode(payload)
            item = AudioEvent(
                step,
                wall_time,
                float(audio.get("sample_rate", 0.0)),
                int(audio.get("num_channels", 0)),
                int(audio.get("length_frames", 0)),
                str(audio.get("content_type", "")),
                bytes(audio.get("encoded_audio_string", b"")),
            )
            self.items["audio"].setdefault(tag, []).append(item)
        elif kind == "tensor":
            self._add_tensor(tag, step, wall_time, payload, plugin)
        elif not kind and plugin == PLUGIN_HPARAMS and value.has_metadata:
            self.hparam_contents.append(value.plugin_content)

    def _add_tensor(
        self, tag: str, step: int, wall_time: float, payload: bytes, plugin: str
    ) -> None:
        if plugin == PLUGIN_SCALARS:
            dtype, array_value = decode_tensor(payload)
            if array_value.size == 1 and dtype in ("float32", "float64", "float16", "bfloat16"):
                self._add_scalar(tag, step, wall_time, float(array_value.reshape(-1)[0]))
                return
        if plugin in _V2_CONVERTERS:
            try:
                dtype, array_value = decode_tensor(payload)
                converted = _V2_CONVERTERS[plugin](step, wall_time, dtype, array_value)
            except WireError:
                converted = None  # kept as a tensor: tensors() reports the damage when asked
            if converted is not None:
                points = converted if isinstance(converted, list) else [converted]
                self.items[plugin].setdefault(tag, []).extend(points)
                return
        if plugin == PLUGIN_TEXT:
            dtype, strings = decode_tensor(payload)
            if dtype != "string":
                raise WireError(f"text value of {tag!r} has dtype {dtype}, not string")
            texts = np.empty(strings.shape, dtype=object)
            decoded: dict[bytes, str] = {}  # a broadcast repeats one bytes object: decode it once
            try:
                texts.reshape(-1)[:] = [
                    decoded[item] if item in decoded else decoded.setdefault(item, item.decode())
                    for item in strings.reshape(-1)
                ]
            except UnicodeDecodeError as err:
                raise WireError(f"text value of {tag!r} is not UTF-8 strings") from err
            first = str(texts.reshape(-1)[0]) if texts.size else ""
            self.items["text"].setdefault(tag, []).append(TextEvent(step, wall_time, first, texts))
            return
        self.items["tensors"].setdefault(tag, []).append(
            RawTensor(step, wall_time, payload, plugin)
        )

    def _purge(self, step: int) -> None:
        for tag, (steps, walls, values) in list(self.scalar_columns.items()):
            keep = np.frombuffer(steps, dtype=np.int64) < step
            if not keep.all():
                self.scalar_columns[tag] = (
                    array("q", np.frombuffer(steps, dtype=np.int64)[keep].tobytes()),
                    array("d", np.frombuffer(walls, dtype=np.float64)[keep].tobytes()),
                    array("d", np.frombuffer(values, dtype=np.float64)[keep].tobytes()),
                )
        for by_tag in self.items.values():
            for tag, points in by_tag.items():
                by_tag[tag] = [point for point in points if point.step < step]

    def tags(self) -> dict[str, list[str]]:
        """Return kind to sorted tags, for every kind (empty lists included)."""
        out = {"scalars": sorted(self.scalar_columns)}
        for kind, by_tag in self.items.items():
            out[kind] = sorted(by_tag)
        out["hparams"] = ["_hparams_"] if self.hparam_contents else []
        return out

    def has(self, kind: str, tag: str) -> bool:
        """Tell whether this run has ``tag`` among its values of ``kind``."""
        if kind == "scalars":
            return tag in self.scalar_columns
        return tag in self.items.get(kind, {})

    def scalars(self, tag: str) -> ScalarSeries:
        """Return the columns of a scalar tag (copies: later reads do not change them)."""
        steps, walls, values = self.scalar_columns[tag]
        return ScalarSeries(
            np.array(steps, dtype=np.int64),
            np.array(walls, dtype=np.float64),
            np.array(values, dtype=np.float64),
        )
