"""FileWriter: torch's low-level writer of ``Event`` and ``Summary`` messages to one event file.

Messages may be given as encoded ``bytes``, as message dicts (see ``_messages``), or as protobuf
objects from the ``tensorboard`` package (anything with ``SerializeToString``), so code written
for ``torch.utils.tensorboard.FileWriter`` keeps working.
"""

from __future__ import annotations

import operator
import os
import time
from collections.abc import Mapping
from typing import Any

from stoker.tensorboard import _messages as pb
from stoker.tensorboard import _messages_plugins as plugin_pb
from stoker.tensorboard import _wire
from stoker.tensorboard._event_writer import EventFileWriter
from stoker.tensorboard._summary import event_bytes


def message_bytes(message: Any, kind: pb.MessageType, name: str) -> bytes:
    """Return the encoding of ``message`` given as bytes, a dict or a protobuf object."""
    if isinstance(message, (bytes, bytearray, memoryview)):
        return bytes(message)
    if isinstance(message, Mapping):
        return kind.encode(message)
    serialize = getattr(message, "SerializeToString", None)
    if callable(serialize):
        data = serialize()
        if isinstance(data, bytes):
            return data
    raise TypeError(
        f"{name} must be encoded bytes, a dict of {kind.name} fields or a protobuf message, "
        f"got {message!r}"
    )


def check_step(step: Any) -> int | None:
    """Return ``step`` as an int (or ``None``), accepting NumPy and torch integers."""
    if step is None or type(step) is int:
        return step
    try:
        return operator.index(step)
    except TypeError:
        pass
    if hasattr(step, "item"):
        item = step.item()
        if isinstance(item, int) or (isinstance(item, float) and item.is_integer()):
            return int(item)
    if isinstance(step, float) and step.is_integer():
        return int(step)
    raise TypeError(f"global_step must be an int or None, got {step!r}; pass e.g. the epoch number")


def check_walltime(walltime: Any) -> float:
    """Return ``walltime`` as float seconds, or now when it is ``None``."""
    if walltime is None:
        return time.time()
    if isinstance(walltime, bool) or not isinstance(walltime, (int, float)):
        try:
            return float(walltime)
        except (TypeError, ValueError) as err:
            raise TypeError(f"walltime must be a number of seconds, got {walltime!r}") from err
    return float(walltime)


def _set_time_and_step(event: bytes, wall_time: float, step: int | None) -> bytes:
    """Rewrite fields 1 (wall_time) and 2 (step) of an encoded ``Event``; keep the rest as is."""
    head = [b"\x09", _wire.DOUBLE.pack(wall_time)]
    rest: list[bytes] = []
    for number, wire_type, value in _wire.iter_fields(event):
        if number == 1 and wire_type == _wire.I64:
            continue
        if number == 2 and wire_type == _wire.VARINT:
            if step is None:
                step = _wire.to_signed64(value)
            continue
        rest.append(_wire.key(number, wire_type))
        if wire_type == _wire.VARINT:
            rest.append(_wire.encode_varint(value))
        elif wire_type == _wire.LEN:
            rest.append(_wire.encode_varint(len(value)))
            rest.append(bytes(value))
        else:
            rest.append(value)
    if step:
        head.append(b"\x10" + _wire.encode_varint(step))
    return b"".join(head + rest)


class FileWriter:
    """Writes ``Event`` and ``Summary`` messages to an event file in ``log_dir``.

    Args:
        log_dir: Directory of the event file; created if missing. A URL such as
            ``"s3://bucket/run"`` (any fsspec URL; needs ``pip install 'stoker[fsspec]'`` and
            the protocol's package, e.g. s3fs) stages files locally and uploads each closed one.
        max_queue: Events batched before the writer thread is woken.
        flush_secs: Seconds between ``fsync`` calls; events reach the file within a second.
        filename_suffix: Appended to the event file name.
        max_file_bytes: stoker extension. Start a new event file once the current one holds
            this many bytes. Default ``None``: no limit for a local log dir, 32 MiB for a URL;
            0 turns the limit off.
        max_file_secs: stoker extension. Start a new event file once the current one, holding
            at least one event, is this many seconds old. Default ``None``: no limit for a
            local log dir, 120 s for a URL (events reach the store within about that); 0 turns
            the limit off.
        storage_options: stoker extension. fsspec filesystem options for a URL log dir, e.g.
            ``{"endpoint_url": "http://127.0.0.1:9000"}`` for s3fs.
        staging_dir: stoker extension. Parent of the local staging directory of a URL log dir;
            default the system temp directory. Unused for a local log dir.
    """

    def __init__(
        self,
        log_dir: Any,
        max_queue: int = 10,
        flush_secs: float = 120,
        filename_suffix: str = "",
        *,
        max_file_bytes: int | None = None,
        max_file_secs: float | None = None,
        storage_options: Mapping[str, Any] | None = None,
        staging_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """Create the event file."""
        self.event_writer = EventFileWriter(
            os.fspath(log_dir) if isinstance(log_dir, os.PathLike) else str(log_dir),
            max_queue,
            flush_secs,
            filename_suffix,
            max_file_bytes=max_file_bytes,
            max_file_secs=max_file_secs,
            storage_options=storage_options,
            staging_dir=staging_dir,
        )

    def get_logdir(self) -> str:
        """Return the directory where the event file is written."""
        return self.event_writer.get_logdir()

    def add_event_bytes(self, data: bytes) -> None:
        """Queue an already encoded ``Event`` as is."""
        self.event_writer.add_event_bytes(data)

    def add_event(self, event: Any, step: Any = None, walltime: Any = None) -> None:
        """Add an ``Event``, setting its wall time (now by default) and, if given, its step.

        Args:
            event: Encoded bytes, a dict of ``Event`` fields or a protobuf ``Event``.
            step: Optional global step.
            walltime: Optional wall time in seconds since the epoch.
        """
        data = message_bytes(event, pb.EVENT, "event")
        self.event_writer.add_event_bytes(
            _set_time_and_step(data, check_walltime(walltime), check_step(step))
        )

    def add_summary(self, summary: Any, global_step: Any = None, walltime: Any = None) -> None:
        """Wrap a ``Summary`` in an ``Event`` and add it.

        Args:
            summary: Encoded bytes, a dict of ``Summary`` fields or a protobuf ``Summary``.
            global_step: Optional global step.
            walltime: Optional wall time in seconds since the epoch.
        """
        data = message_bytes(summary, pb.SUMMARY, "summary")
        self.event_writer.add_event_bytes(
            event_bytes(data, check_step(global_step), check_walltime(walltime))
        )

    def add_graph(self, graph_profile: Any, walltime: Any = None) -> None:
        """Add a graph and its run metadata, as torch's ``add_graph`` produces them.

        Args:
            graph_profile: A pair ``(GraphDef, RunMetadata)``, each bytes, dict or protobuf.
            walltime: Optional wall time in seconds since the epoch.
        """
        if not isinstance(graph_profile, (tuple, list)) or len(graph_profile) != 2:
            raise TypeError(
                f"graph_profile must be a (GraphDef, RunMetadata) pair, got {graph_profile!r}"
            )
        graph, run_metadata = graph_profile
        wall = check_walltime(walltime)
        self.add_event(
            {"graph_def": message_bytes(graph, plugin_pb.GRAPH_DEF, "graph")}, None, wall
        )
        tagged = {
            "tag": "step1",
            "run_metadata": message_bytes(run_metadata, plugin_pb.RUN_METADATA, "run_metadata"),
        }
        self.add_event({"tagged_run_metadata": tagged}, None, wall)

    def add_onnx_graph(self, graph: Any, walltime: Any = None) -> None:
        """Add a ``GraphDef`` (bytes, dict or protobuf) converted from an ONNX model."""
        self.add_event(
            {"graph_def": message_bytes(graph, plugin_pb.GRAPH_DEF, "graph")}, None, walltime
        )

    def flush(self) -> None:
        """Return once every event added so far is in the file."""
        self.event_writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self.event_writer.close()

    def reopen(self) -> None:
        """After :meth:`close`, open a new event file in the same directory."""
        self.event_writer.reopen()
