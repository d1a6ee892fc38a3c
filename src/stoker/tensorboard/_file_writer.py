"""The writers of torch's low-level API: FileWriter, and the EventFileWriter handle beneath it.

:class:`EventFileWriter` is the handle on one writer's event files: it validates the options,
picks the destination (the log dir itself, or a staging directory uploaded to a URL log dir)
and closes the files when it is garbage-collected or at exit; the queue, the writer thread and
rotation are ``_event_file.EventFiles``'s. :class:`FileWriter` is torch's writer of ``Event``
and ``Summary`` messages over it. Messages may be given as encoded ``bytes``, as message dicts
(see ``_proto.messages``), or as protobuf objects from the ``tensorboard`` package (anything
with ``SerializeToString``), so code written for ``torch.utils.tensorboard.FileWriter`` keeps
working.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping
from typing import Any

from stoker._checks import check_int
from stoker.tensorboard._destination import Destination, FileOptions
from stoker.tensorboard._event_file import EventFiles
from stoker.tensorboard._process_hooks import close_quietly
from stoker.tensorboard._proto import (
    EVENT,
    GRAPH_DEF,
    RUN_METADATA,
    SUMMARY,
    MessageType,
    event_bytes,
    set_time_and_step,
)
from stoker.tensorboard._summary import check_step, check_walltime

__all__ = ["EventFileWriter", "FileWriter", "message_bytes"]


def message_bytes(message: Any, kind: MessageType, name: str) -> bytes:
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


class EventFileWriter:
    """Writes encoded events to event files in a log directory, from a background thread.

    Args:
        logdir: Directory for the event file; created if missing. A URL (``s3://bucket/run``
            or any fsspec URL) writes files in a local staging directory and uploads each one
            once it is closed (needs fsspec).
        max_queue: Events batched before the writer thread is woken.
        flush_secs: Seconds between ``fsync`` calls of the event file.
        filename_suffix: Appended to the event file name.
        flush_interval: Longest time, in seconds, an event waits before it is written to the file.
        max_file_bytes: Start a new event file once the current one holds this many bytes.
            Default ``None``: no limit for a local log dir, 32 MiB for a URL; 0 means no limit.
        max_file_secs: Start a new event file once the current one (with at least one event)
            is this many seconds old. Default ``None``: no limit for a local log dir, 120 s for a
            URL, so events reach the store within about two minutes; 0 means no limit.
        storage_options: fsspec filesystem options for a URL log dir, e.g.
            ``{"endpoint_url": "http://127.0.0.1:9000"}``.
        staging_dir: Where a URL log dir's files are staged; default the temp directory.
    """

    def __init__(
        self,
        logdir: str,
        max_queue: int = 10,
        flush_secs: float = 120,
        filename_suffix: str = "",
        flush_interval: float = 1.0,
        *,
        max_file_bytes: int | None = None,
        max_file_secs: float | None = None,
        storage_options: Mapping[str, Any] | None = None,
        staging_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        """Open a new event file in ``logdir``."""
        queue_size: int = check_int(max_queue, "max_queue", hint="pass e.g. 10")
        if not isinstance(flush_secs, (int, float)) or flush_secs <= 0:
            raise ValueError(f"flush_secs must be a positive number, got {flush_secs!r}")
        if not isinstance(filename_suffix, str):
            raise TypeError(f"filename_suffix must be a str, got {filename_suffix!r}")
        logdir = str(logdir)
        options = FileOptions(max_file_bytes, max_file_secs, storage_options, staging_dir)
        dest = options.destination(logdir)
        rotation = options.rotation(dest)
        interval = min(float(flush_interval), float(flush_secs))
        self._state = EventFiles(
            dest, queue_size, flush_secs, filename_suffix, interval, rotation=rotation
        )
        self._state.open()
        self._finalizer = weakref.finalize(self, close_quietly, self._state)

    @property
    def path(self) -> str:
        """The path of the current event file (in the staging directory for a URL log dir)."""
        return self._state.path

    @property
    def destination(self) -> Destination:
        """Where the files go: a local log dir, or a staged and uploaded URL log dir."""
        return self._state.dest

    def get_logdir(self) -> str:
        """Return the directory the event file is in."""
        return self._state.logdir

    def add_event_bytes(self, data: bytes) -> None:
        """Queue one encoded ``Event``."""
        self._state.add(data)

    def flush(self) -> None:
        """Return once every queued event is in the file."""
        self._state.flush()

    def close(self) -> None:
        """Flush and close the file; later events need :meth:`reopen`."""
        self._state.close()

    def reopen(self) -> None:
        """Open a new event file in the same directory after :meth:`close`; no-op if open."""
        if self._state.closed:
            self._state.open()

    @property
    def closed(self) -> bool:
        """Whether the writer is closed."""
        return self._state.closed


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
        data = message_bytes(event, EVENT, "event")
        self.event_writer.add_event_bytes(
            set_time_and_step(data, check_walltime(walltime), check_step(step, "step"))
        )

    def add_summary(self, summary: Any, global_step: Any = None, walltime: Any = None) -> None:
        """Wrap a ``Summary`` in an ``Event`` and add it.

        Args:
            summary: Encoded bytes, a dict of ``Summary`` fields or a protobuf ``Summary``.
            global_step: Optional global step.
            walltime: Optional wall time in seconds since the epoch.
        """
        data = message_bytes(summary, SUMMARY, "summary")
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
        self.add_event({"graph_def": message_bytes(graph, GRAPH_DEF, "graph")}, None, wall)
        tagged = {
            "tag": "step1",
            "run_metadata": message_bytes(run_metadata, RUN_METADATA, "run_metadata"),
        }
        self.add_event({"tagged_run_metadata": tagged}, None, wall)

    def add_onnx_graph(self, graph: Any, walltime: Any = None) -> None:
        """Add a ``GraphDef`` (bytes, dict or protobuf) converted from an ONNX model."""
        self.add_event({"graph_def": message_bytes(graph, GRAPH_DEF, "graph")}, None, walltime)

    def flush(self) -> None:
        """Return once every event added so far is in the file."""
        self.event_writer.flush()

    def close(self) -> None:
        """Flush and close the event file."""
        self.event_writer.close()

    def reopen(self) -> None:
        """After :meth:`close`, open a new event file in the same directory."""
        self.event_writer.reopen()
