"""TensorBoard's data-provider service answered from a log dir read by stoker's reader.

Each method of :class:`Provider` takes one request message of TensorBoard's
``TensorBoardDataProvider`` service (``tensorboard.data.proto.data_provider_pb2``) and returns
its response, or raises :class:`RequestError` with the gRPC status to answer (the server turns
it into that status, never a traceback). The answers follow the contract TensorBoard's own
loader keeps (its ``MultiplexerDataProvider``), so that every dashboard shows the same thing:

* a series is listed under the plugin and data class of its metadata; runs with no matching
  series are left out of list and read answers;
* ``Downsample.num_points`` keeps at most that many points of each series: every point when
  there are fewer, else a uniform random choice of ``num_points - 1`` of the others, in
  order, plus the last one, drawn with ``random.Random(0)`` as TensorBoard draws it, so that
  the same series gives the same points on every call until new points arrive;
* blob sequences keep the first point of each step, in step order; a blob key is the
  URL-safe base64 (no padding) of the JSON array ``[experiment, plugin, run, tag, step,
  index]``, TensorBoard's own key, so the page's URLs are the same whichever loader serves.

The log dir is reloaded by :class:`~stoker.board.DataServer`; a lock keeps each answer to one
state of it. Answers are cached per request until the next reload that reads anything: a
dashboard refresh asks the same questions again.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import os
import random
import struct
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from tensorboard.compat.proto import summary_pb2
from tensorboard.data.proto import data_provider_pb2 as pb

from stoker.tensorboard._board import (
    BLOB_SEQUENCE,
    SCALAR,
    TENSOR_CLASS,
    BlobPoint,
    EventFileError,
    SeriesLog,
    SeriesMetadata,
    SeriesRun,
    read_blob,
)

__all__ = [
    "BLOB_CHUNK_BYTES",
    "AnswerCache",
    "Provider",
    "RequestError",
    "ScalarColumns",
    "blob_key",
    "downsample_indices",
    "parse_blob_key",
]

BLOB_CHUNK_BYTES = 1 << 20
"""Most bytes of a blob sent in one ``ReadBlobResponse`` of the stream."""
_CACHE_BYTES = 512 << 20


ScalarColumns = tuple[
    "np.ndarray[Any, np.dtype[np.int64]]",
    "np.ndarray[Any, np.dtype[np.float64]]",
    "np.ndarray[Any, np.dtype[np.float32]]",
]
"""One scalar series: steps, wall times and values (float32, as the protocol carries them)."""


class RequestError(Exception):
    """A request the service answers with a gRPC status other than OK.

    Attributes:
        code: The status code's name (``"INVALID_ARGUMENT"``, ``"NOT_FOUND"``).
    """

    def __init__(self, code: str, message: str) -> None:
        """Keep the status code's name and the message the client receives."""
        super().__init__(message)
        self.code = code


def downsample_indices(count: int, num_points: int) -> np.ndarray[Any, np.dtype[np.intp]]:
    """Return the indices of the points kept from ``count`` for ``num_points`` (sorted).

    Every index when ``count <= num_points``; none for 0; else ``num_points - 1`` indices
    drawn from ``range(count - 1)`` by ``random.Random(0).sample``, then ``count - 1``.
    """
    if num_points >= count:
        return np.arange(count, dtype=np.intp)
    if num_points <= 0:
        return np.zeros(0, dtype=np.intp)
    return _sampled(count, num_points)


_SAMPLED: OrderedDict[tuple[int, int], np.ndarray[Any, np.dtype[np.intp]]] = OrderedDict()
_SAMPLED_LOCK = threading.Lock()


def _sampled(count: int, num_points: int) -> np.ndarray[Any, np.dtype[np.intp]]:
    """The sample for one (count, num_points), computed once: a sweep's series share lengths."""
    key = (count, num_points)
    with _SAMPLED_LOCK:
        found = _SAMPLED.get(key)
        if found is not None:
            _SAMPLED.move_to_end(key)
            return found
    chosen = random.Random(0).sample(range(count - 1), num_points - 1)
    chosen.sort()
    chosen.append(count - 1)
    indices = np.array(chosen, dtype=np.intp)
    indices.flags.writeable = False
    with _SAMPLED_LOCK:
        _SAMPLED[key] = indices
        while len(_SAMPLED) > 64:
            _SAMPLED.popitem(last=False)
    return indices


def blob_key(experiment: str, plugin: str, run: str, tag: str, *, step: int, index: int) -> str:
    """Return TensorBoard's key for one blob (see the module docstring)."""
    text = json.dumps([experiment, plugin, run, tag, step, index], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode("ascii")).decode("ascii").rstrip("=")


def parse_blob_key(key: str) -> tuple[str, str, int, int]:
    """Return the run, tag, step and index a blob key names, or raise INVALID_ARGUMENT."""
    try:
        fields = json.loads(base64.urlsafe_b64decode(key + "=" * (-len(key) % 4)))
    except (binascii.Error, ValueError) as err:  # bad base64, bad UTF-8 or bad JSON
        raise RequestError("INVALID_ARGUMENT", f"blob key {key!r} is not a blob key") from err
    if (
        not isinstance(fields, list)
        or len(fields) != 6
        or not all(isinstance(field, str) for field in fields[:4])
        or not all(type(field) is int for field in fields[4:])
    ):
        raise RequestError(
            "INVALID_ARGUMENT",
            f"blob key {key!r} must encode [experiment, plugin, run, tag, step, index], "
            f"got {fields!r}",
        )
    return fields[2], fields[3], fields[4], fields[5]


class _Filter:
    """A plugin and run/tag filters (None: every run, every tag)."""

    def __init__(
        self, plugin: str, runs: frozenset[str] | None, tags: frozenset[str] | None
    ) -> None:
        self.plugin = plugin
        self.runs = runs
        self.tags = tags

    @classmethod
    def of(cls, request: Any) -> _Filter:
        """The filters of a list or read request."""
        rtf = request.run_tag_filter
        return cls(
            request.plugin_filter.plugin_name,
            frozenset(rtf.runs.names) if rtf.HasField("runs") else None,
            frozenset(rtf.tags.names) if rtf.HasField("tags") else None,
        )

    def select(
        self, runs: dict[str, SeriesRun], data_class: int
    ) -> Iterator[tuple[str, SeriesRun, list[tuple[str, SeriesMetadata]]]]:
        """Yield each run with its matching series (runs with none are left out)."""
        names = runs if self.runs is None else sorted(self.runs & runs.keys())
        for name in names:
            run = runs[name]
            matching = [
                (tag, metadata)
                for tag, metadata in run.series().items()
                if metadata.data_class == data_class
                and metadata.plugin_name == self.plugin
                and (self.tags is None or tag in self.tags)
            ]
            if matching:
                yield name, run, matching


def _num_points(request: Any) -> int:
    if not request.HasField("downsample"):
        raise RequestError("INVALID_ARGUMENT", "downsample is required: set num_points")
    count = int(request.downsample.num_points)
    if count < 0:
        raise RequestError("INVALID_ARGUMENT", f"downsample.num_points must be >= 0, got {count}")
    return count


def _summary_metadata(metadata: SeriesMetadata) -> Any:
    out = summary_pb2.SummaryMetadata(
        display_name=metadata.display_name,
        summary_description=metadata.description,
        data_class=metadata.data_class,
    )
    out.plugin_data.plugin_name = metadata.plugin_name
    out.plugin_data.content = metadata.content
    return out


def _extent(points: list[Any]) -> tuple[int, float]:
    if not points:
        return 0, 0.0
    return max(point.step for point in points), max(point.wall_time for point in points)


def _first_per_step(points: list[BlobPoint]) -> list[BlobPoint]:
    first: dict[int, BlobPoint] = {}
    for point in points:
        first.setdefault(point.step, point)
    return [first[step] for step in sorted(first)]


_GZIP_PIECE = 8 << 20  # bytes of a body each thread compresses, at least
_GZIP_THREADS = 8
# A gzip member's header (RFC 1952) as gzip.compress(level=1, mtime=0) writes it: no name, no
# time, "fastest" (XFL 4), OS unknown.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x04\xff"


def gzip_pieces(size: int) -> int:
    """How many threads compress a body of ``size`` bytes: one per 8 MiB and per core, <= 8."""
    return max(1, min(size // _GZIP_PIECE, os.cpu_count() or 1, _GZIP_THREADS))


def gzip_fast(body: bytes) -> bytes:
    """``body`` as one gzip member at level 1, a large one compressed on every core.

    A large body (a Time Series card over a sweep is tens of MB: 0.7 s on one core) is cut into
    pieces compressed at once in threads (zlib lets go of the GIL), each a raw deflate stream
    that ends on a byte boundary (a sync flush; the last one finishes the stream), so that
    their concatenation is one deflate stream, as ``pigz`` makes one; the member's trailer
    holds the CRC-32 and size of the whole body. Any gzip reader reads it as
    ``gzip.compress``'s.
    """
    pieces = gzip_pieces(len(body))
    if pieces == 1:
        return gzip.compress(body, compresslevel=1, mtime=0)
    view = memoryview(body)
    step = -(-len(body) // pieces)

    def deflate(index: int) -> bytes:
        compressor = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS)
        data = compressor.compress(view[index * step : (index + 1) * step])
        return data + compressor.flush(zlib.Z_FINISH if index == pieces - 1 else zlib.Z_SYNC_FLUSH)

    with ThreadPoolExecutor(pieces, thread_name_prefix="stoker-board-gzip") as pool:
        parts = list(pool.map(deflate, range(pieces)))
    trailer = struct.pack("<II", zlib.crc32(body), len(body) & 0xFFFFFFFF)
    return b"".join([_GZIP_HEADER, *parts, trailer])


class AnswerCache:
    """Encoded answers by request, for the provider's latest generation, in a bounded LRU.

    One per provider: the gRPC service's answers and the page server's JSON share its budget.

    A small answer (a run's series) may evict the least recently used ones; a large one (more
    than a quarter of the budget: a time series card over every run) is kept only if it fits
    beside what is kept, so that a page's cards, asked in turn, do not evict each other and
    the small answers at every refresh.
    """

    def __init__(self, budget: int = _CACHE_BYTES) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[Any, ...], dict[str, bytes]] = OrderedDict()
        self._bytes = 0
        self._budget = budget
        self._generation = -1

    def advance(self, generation: int) -> None:
        """Forget every answer older than ``generation`` (a reload changed what is served)."""
        with self._lock:
            if generation > self._generation:
                self._entries.clear()
                self._bytes = 0
                self._generation = generation

    def get(
        self, generation: int, key: tuple[Any, ...], make: Callable[[], bytes | None], zipped: bool
    ) -> bytes | None:
        """The answer to ``key``, made once per generation; gzipped when ``zipped``."""
        self.advance(generation)
        with self._lock:
            entry = self._entries.get(key) if generation == self._generation else None
            if entry is not None:
                self._entries.move_to_end(key)
        changed = entry is None
        if entry is None:
            body = make()
            if body is None:
                return None
            entry = {"identity": body}
        if zipped and "gzip" not in entry:
            entry = {**entry, "gzip": gzip_fast(entry["identity"])}
            changed = True
        if changed:
            self._keep(generation, key, entry)
        return entry["gzip" if zipped else "identity"]

    def _keep(self, generation: int, key: tuple[Any, ...], entry: dict[str, bytes]) -> None:
        size = sum(len(body) for body in entry.values())
        with self._lock:
            if generation != self._generation:
                return  # made from an older state of the log dir
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= sum(len(body) for body in old.values())
            if size > self._budget // 4 and self._bytes + size > self._budget:
                return
            self._entries[key] = entry
            self._bytes += size
            while self._bytes > self._budget:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= sum(len(body) for body in dropped.values())

    @property
    def size(self) -> int:
        """Bytes kept."""
        return self._bytes


class Provider:
    """Answers TensorBoard's data-provider requests from a :class:`SeriesLog`.

    Args:
        log: The log dir, read already; :meth:`reload` reads what was appended.
    """

    def __init__(self, log: SeriesLog) -> None:
        """Serve ``log`` as it is now."""
        self._log = log
        self._lock = threading.Lock()
        self._runs = log.series_runs()
        self._generation = 0
        self.answers = AnswerCache()
        """Encoded answers, kept until a reload changes what is served."""

    @property
    def run_count(self) -> int:
        """How many runs are served."""
        return len(self._runs)

    @property
    def location(self) -> str:
        """The log dir served (a path or URL)."""
        return self._log.path

    @property
    def generation(self) -> int:
        """A number that changes whenever a reload changes what is served.

        Answers kept under it stay valid until it changes.
        """
        return self._generation

    def reload(self) -> int:
        """Read what writers appended since the last reload; return the records read.

        Runs whose files are all gone are dropped; cached answers are forgotten when anything
        changed.
        """
        with self._lock:
            before = set(self._runs)
            count = self._log.reload()
            self._runs = self._log.series_runs()
            if count or set(self._runs) != before:
                self._generation += 1
                self.answers.advance(self._generation)
            return count

    def cached(self, method: str, request: bytes, answer: Callable[[bytes], bytes]) -> bytes:
        """Return the encoded answer to an encoded request, from the cache when it holds it.

        The lock is held while answering, so that every answer is of one state of the log dir.
        """
        with self._lock:
            found = self.answers.get(self._generation, (method, request),
                                     lambda: answer(request), zipped=False)  # fmt: skip
        assert found is not None  # answer() returns bytes
        return found

    def scalar_columns(
        self, plugin: str, tag: str, runs: Sequence[str] | None, num_points: int
    ) -> list[tuple[str, ScalarColumns]]:
        """The points of one tag's scalar series in each run, as ReadScalars selects them.

        Runs are those of ``runs`` (every run for None) that hold ``tag`` as a scalar series
        of ``plugin``, in ReadScalars' order; each series downsampled to ``num_points`` as
        ReadScalars does, its values rounded to float32 as the protocol carries them.
        """
        chosen = _Filter(plugin, None if runs is None else frozenset(runs), frozenset((tag,)))
        out: list[tuple[str, ScalarColumns]] = []
        with self._lock:
            for name, run, _ in chosen.select(self._runs, SCALAR):
                steps, walls, values = run.scalar_arrays(tag)
                keep = downsample_indices(len(steps), num_points)
                with np.errstate(over="ignore"):  # beyond float32: inf, as the protocol has it
                    value32 = values[keep].astype(np.float32)
                out.append((name, (steps[keep], walls[keep], value32)))
        return out

    # --- the service's methods: each is called with the lock held (see ``cached``) ---------

    def get_experiment(self, request: Any) -> Any:
        """GetExperiment: where the data comes from (no name, description or creation time)."""
        return pb.GetExperimentResponse(data_location=self._log.path)

    def list_plugins(self, request: Any) -> Any:
        """ListPlugins: every plugin named by a series' metadata."""
        names = {
            metadata.plugin_name
            for run in self._runs.values()
            for metadata in [*run.metadata.values(), *run.series().values()]
            if metadata.plugin_name
        }
        return pb.ListPluginsResponse(plugins=[pb.Plugin(name=name) for name in sorted(names)])

    def list_runs(self, request: Any) -> Any:
        """ListRuns: every run with the wall time of its first event."""
        response = pb.ListRunsResponse()
        for name, run in self._runs.items():
            entry = response.runs.add(name=name)
            if run.start_time is not None:
                entry.start_time = run.start_time
        return response

    def list_scalars(self, request: Any) -> Any:
        """ListScalars: scalar series with their last step and wall time."""
        response = pb.ListScalarsResponse()
        for name, run, series in _Filter.of(request).select(self._runs, SCALAR):
            entry = response.runs.add(run_name=name)
            for tag, metadata in series:
                steps, walls, _ = run.scalar_arrays(tag)
                tag_entry = entry.tags.add(tag_name=tag)
                tag_entry.metadata.max_step = int(steps.max()) if len(steps) else 0
                tag_entry.metadata.max_wall_time = float(walls.max()) if len(walls) else 0.0
                tag_entry.metadata.summary_metadata.CopyFrom(_summary_metadata(metadata))
        return response

    def read_scalars(self, request: Any) -> Any:
        """ReadScalars: the points of scalar series, downsampled."""
        count = _num_points(request)
        response = pb.ReadScalarsResponse()
        for name, run, series in _Filter.of(request).select(self._runs, SCALAR):
            entry = response.runs.add(run_name=name)
            for tag, _ in series:
                steps, walls, values = run.scalar_arrays(tag)
                keep = downsample_indices(len(steps), count)
                data = entry.tags.add(tag_name=tag).data
                data.step.extend(steps[keep].tolist())
                data.wall_time.extend(walls[keep].tolist())
                data.value.extend(values[keep].tolist())
        return response

    def list_tensors(self, request: Any) -> Any:
        """ListTensors: tensor series with their last step and wall time."""
        response = pb.ListTensorsResponse()
        for name, run, series in _Filter.of(request).select(self._runs, TENSOR_CLASS):
            entry = response.runs.add(run_name=name)
            for tag, metadata in series:
                tag_entry = entry.tags.add(tag_name=tag)
                max_step, max_wall_time = _extent(run.items["tensor"].get(tag, []))
                tag_entry.metadata.max_step = max_step
                tag_entry.metadata.max_wall_time = max_wall_time
                tag_entry.metadata.summary_metadata.CopyFrom(_summary_metadata(metadata))
        return response

    def read_tensors(self, request: Any) -> Any:
        """ReadTensors: the tensors of tensor series, downsampled, as they were written."""
        count = _num_points(request)
        response = pb.ReadTensorsResponse()
        for name, run, series in _Filter.of(request).select(self._runs, TENSOR_CLASS):
            entry = response.runs.add(run_name=name)
            for tag, _ in series:
                points = run.items["tensor"].get(tag, [])
                data = entry.tags.add(tag_name=tag).data
                for index in downsample_indices(len(points), count).tolist():
                    point = points[index]
                    data.step.append(point.step)
                    data.wall_time.append(point.wall_time)
                    data.value.add().MergeFromString(point.tensor)
        return response

    def list_blob_sequences(self, request: Any) -> Any:
        """ListBlobSequences: blob series with their last step, wall time and longest step."""
        response = pb.ListBlobSequencesResponse()
        for name, run, series in _Filter.of(request).select(self._runs, BLOB_SEQUENCE):
            entry = response.runs.add(run_name=name)
            for tag, metadata in series:
                points = run.items["blob"].get(tag, [])
                tag_entry = entry.tags.add(tag_name=tag)
                max_step, max_wall_time = _extent(points)
                tag_entry.metadata.max_step = max_step
                tag_entry.metadata.max_wall_time = max_wall_time
                tag_entry.metadata.max_length = max((p.length for p in points), default=0)
                tag_entry.metadata.summary_metadata.CopyFrom(_summary_metadata(metadata))
        return response

    def read_blob_sequences(self, request: Any) -> Any:
        """ReadBlobSequences: blob keys per step (first point of each step), downsampled."""
        count = _num_points(request)
        experiment = request.experiment_id
        chosen = _Filter.of(request)
        response = pb.ReadBlobSequencesResponse()
        for name, run, series in chosen.select(self._runs, BLOB_SEQUENCE):
            entry = response.runs.add(run_name=name)
            for tag, _ in series:
                points = _first_per_step(run.items["blob"].get(tag, []))
                data = entry.tags.add(tag_name=tag).data
                for index in downsample_indices(len(points), count).tolist():
                    point = points[index]
                    data.step.append(point.step)
                    data.wall_time.append(point.wall_time)
                    refs = data.values.add().blob_refs
                    for blob in range(point.length):
                        key = blob_key(
                            experiment, chosen.plugin, name, tag, step=point.step, index=blob
                        )
                        refs.add(blob_key=key)
        return response

    def find_blob(self, key: str) -> tuple[BlobPoint, str, int]:
        """Return the point, tag and index of the blob a key names.

        Raises:
            RequestError: INVALID_ARGUMENT for a malformed key, NOT_FOUND for one that names
                no blob of the log dir.
        """
        run_name, tag, step, index = parse_blob_key(key)
        with self._lock:
            run = self._runs.get(run_name)
            metadata = run.series().get(tag) if run is not None else None
            if run is None or metadata is None or metadata.data_class != BLOB_SEQUENCE:
                raise RequestError("NOT_FOUND", f"blob key {key!r}: no blob series {tag!r} "
                                   f"in run {run_name!r}")  # fmt: skip
            point = next((p for p in run.items["blob"].get(tag, []) if p.step == step), None)
        if point is None:
            raise RequestError("NOT_FOUND", f"blob key {key!r}: {tag!r} has no step {step}")
        if not 0 <= index < point.length:
            raise RequestError(
                "NOT_FOUND",
                f"blob key {key!r}: step {step} of {tag!r} has {point.length} blobs, "
                f"not an index {index}",
            )
        return point, tag, index

    def blob_bytes(self, key: str) -> bytes:
        """The bytes of the blob a key names, read again from its event file.

        Raises:
            RequestError: As :meth:`find_blob`, and NOT_FOUND when the record is no longer
                there intact (its file was removed or rewritten since it was read).
        """
        point, tag, index = self.find_blob(key)
        try:
            return read_blob(point, tag, index)
        except EventFileError as err:
            raise RequestError("NOT_FOUND", f"blob key {key!r}: {err}") from err

    def read_blob(self, request: Any) -> Iterator[Any]:
        """ReadBlob: the blob's bytes, read again from its event file, in chunks."""
        data = self.blob_bytes(request.blob_key)
        view = memoryview(data)
        for start in range(0, max(len(data), 1), BLOB_CHUNK_BYTES):
            yield pb.ReadBlobResponse(data=bytes(view[start : start + BLOB_CHUNK_BYTES]))
