"""The gRPC server: TensorBoard's data-provider service on a port, and the reload loop.

:class:`DataServer` reads the log dir once (with the reader's worker processes when it is
large: no thread of the server exists yet, so they may be forked), then serves
``tensorboard.data.TensorBoardDataProvider`` from a pool of threads and reloads the log dir
every ``reload_interval`` seconds in a thread of its own. Requests arrive as bytes and are
decoded here, so that an answer can be cached by the request's bytes; a request that cannot
be decoded or answered gets a gRPC status (INVALID_ARGUMENT, NOT_FOUND, or INTERNAL with the
error's text), never a traceback on the server's terminal. The reload loop survives a failed
reload (the store is down, a file cannot be read): it logs a warning and tries again.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
from tensorboard.data.proto import data_provider_pb2 as pb

from stoker.board._provider import Provider, RequestError
from stoker.tensorboard._board import SeriesLog

__all__ = ["SERVICE", "DataServer", "check_host", "check_port"]

SERVICE = "tensorboard.data.TensorBoardDataProvider"
_LOG = logging.getLogger("stoker.board")
_MAX_MESSAGE_BYTES = 256 << 20  # what TensorBoard's client accepts
# method name -> (request type, Provider method name)
_UNARY = {
    "GetExperiment": (pb.GetExperimentRequest, "get_experiment"),
    "ListPlugins": (pb.ListPluginsRequest, "list_plugins"),
    "ListRuns": (pb.ListRunsRequest, "list_runs"),
    "ListScalars": (pb.ListScalarsRequest, "list_scalars"),
    "ReadScalars": (pb.ReadScalarsRequest, "read_scalars"),
    "ListTensors": (pb.ListTensorsRequest, "list_tensors"),
    "ReadTensors": (pb.ReadTensorsRequest, "read_tensors"),
    "ListBlobSequences": (pb.ListBlobSequencesRequest, "list_blob_sequences"),
    "ReadBlobSequences": (pb.ReadBlobSequencesRequest, "read_blob_sequences"),
}


def _check_interval(reload_interval: object) -> float:
    if (
        isinstance(reload_interval, bool)
        or not isinstance(reload_interval, (int, float))
        or not reload_interval >= 0
        or reload_interval == float("inf")
    ):
        raise ValueError(
            f"reload_interval must be a number of seconds >= 0 (0: never reload), got "
            f"{reload_interval!r}"
        )
    return float(reload_interval)


def check_port(port: object) -> int:
    """Return ``port`` if it is an int in [0, 65535], else raise ValueError naming it."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValueError(f"port must be an int in [0, 65535] (0: any free port), got {port!r}")
    return port


def check_host(host: object) -> str:
    """Return ``host`` if it is a non-empty str, else raise ValueError naming it."""
    if not isinstance(host, str) or not host:
        raise ValueError(f"host must be a non-empty str such as '127.0.0.1', got {host!r}")
    return host


def _decode(kind: Any, data: bytes) -> Any:
    try:
        return kind.FromString(data)
    except Exception as err:  # protobuf's DecodeError
        raise RequestError("INVALID_ARGUMENT", f"malformed {kind.__name__}: {err}") from err


def _abort(context: grpc.ServicerContext, err: Exception) -> None:
    if isinstance(err, RequestError):
        context.abort(getattr(grpc.StatusCode, err.code), str(err))
    _LOG.warning("stoker board: a request failed: %s", err)
    context.abort(grpc.StatusCode.INTERNAL, f"{type(err).__name__}: {err}")


class DataServer:
    """TensorBoard's data-provider gRPC service for a log dir, on ``host:port``.

    Start TensorBoard's web server against it with ``tensorboard --grpc_data_provider
    ADDRESS`` (``stoker board`` does both). The log dir is read when the server starts and
    again every ``reload_interval`` seconds: new points, tags, runs and files appear; runs
    whose files are all deleted disappear; corrupt records are skipped with one warning each.

    Args:
        logdir: A log directory, an event file, or an fsspec URL (``s3://bucket/prefix``).
        host: The address to listen on.
        port: The port; ``0`` picks a free one (see :attr:`address`).
        reload_interval: Seconds between reloads; ``0`` reads the log dir once.
        workers: Processes that read the log dir at start (as ``Reader(workers=)``).

    Raises:
        TypeError: If ``logdir`` is not a path or URL.
        ValueError: If ``port`` or ``reload_interval`` is out of range.
        EventFileError: If the log dir does not exist or cannot be read.
        RuntimeError: If the port cannot be bound.

    Example:
        >>> with DataServer("runs") as server:  # doctest: +SKIP
        ...     print(f"tensorboard --grpc_data_provider {server.address}")
    """

    def __init__(
        self,
        logdir: str | os.PathLike[str],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        reload_interval: float = 5.0,
        workers: int | None = None,
    ) -> None:
        """Read the log dir and bind the port; serve from :meth:`start` (or ``with``)."""
        check_host(host)
        self._interval = _check_interval(reload_interval)
        port = check_port(port)
        self.provider = Provider(SeriesLog(logdir, workers=workers))
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="stoker-board"),
            options=[
                ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
                ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
                ("grpc.so_reuseport", 0),
            ],
        )
        self._server.add_generic_rpc_handlers((self._handlers(),))
        where = f"[{host}]" if ":" in host else host
        try:
            bound = self._server.add_insecure_port(f"{where}:{port}")
        except RuntimeError as err:
            raise RuntimeError(f"cannot listen on {host}:{port}: {err}") from err
        if not bound:
            raise RuntimeError(f"cannot listen on {host}:{port}; is the port in use?")
        self.address = f"{where}:{bound}"
        self._stop = threading.Event()
        self._reloader: threading.Thread | None = None

    def _handlers(self) -> grpc.GenericRpcHandler:
        handlers: dict[str, grpc.RpcMethodHandler] = {
            name: grpc.unary_unary_rpc_method_handler(self._unary(name, kind, method))
            for name, (kind, method) in _UNARY.items()
        }
        handlers["ReadBlob"] = grpc.unary_stream_rpc_method_handler(
            self._read_blob, response_serializer=lambda response: response.SerializeToString()
        )
        return grpc.method_handlers_generic_handler(SERVICE, handlers)

    def _unary(
        self, name: str, kind: Any, method: str
    ) -> Callable[[bytes, grpc.ServicerContext], bytes]:
        answer_with = getattr(self.provider, method)

        def answer(data: bytes) -> bytes:
            encoded: bytes = answer_with(_decode(kind, data)).SerializeToString()
            return encoded

        def handle(data: bytes, context: grpc.ServicerContext) -> bytes:
            try:
                return self.provider.cached(name, data, answer)
            except Exception as err:  # every failure becomes a status, never a traceback
                _abort(context, err)
                raise  # not reached: abort raises

        return handle

    def _read_blob(self, data: bytes, context: grpc.ServicerContext) -> Iterator[Any]:
        try:
            yield from self.provider.read_blob(_decode(pb.ReadBlobRequest, data))
        except Exception as err:  # every failure becomes a status, never a traceback
            _abort(context, err)

    def start(self) -> DataServer:
        """Start serving, and reloading when ``reload_interval`` is not 0; return self."""
        self._server.start()
        if self._interval and self._reloader is None:
            self._reloader = threading.Thread(
                target=self._reload_loop, name="stoker-board-reload", daemon=True
            )
            self._reloader.start()
        return self

    def _reload_loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.provider.reload()  # corrupt records warn as the reader warns
            except Exception as err:  # the store is down, a file unreadable: serve what was read
                _LOG.warning("stoker board: reloading %s failed (%s); trying again in %g s",
                             self.provider.location, err, self._interval)  # fmt: skip

    def stop(self, grace: float | None = 1.0) -> None:
        """Stop reloading and serving (requests in flight get ``grace`` seconds)."""
        self._stop.set()
        self._server.stop(grace).wait()
        if self._reloader is not None:
            self._reloader.join()
            self._reloader = None

    def wait(self) -> None:
        """Block until the server stops."""
        self._server.wait_for_termination()

    def __enter__(self) -> DataServer:
        """Start serving."""
        return self.start()

    def __exit__(self, *exc: object) -> None:
        """Stop serving."""
        self.stop()

    def __repr__(self) -> str:
        """Show what is served where."""
        return f"stoker.board.DataServer({self.provider.location!r}, address={self.address!r})"
