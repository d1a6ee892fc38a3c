"""The page's HTTP server: the scalar routes answered here, every other request TensorBoard's.

``stoker board`` starts TensorBoard's web server on a private port of 127.0.0.1 and puts
:class:`PageServer` on the address the user asked for. Requests for the scalar routes
(``scalars``, ``scalars_multirun`` and scalar ``timeSeries`` requests, under the path prefix
and with or without the ``/experiment/ID`` part) are answered from the provider's columns by
:mod:`stoker.board._scalar_routes`; everything else (the page itself, every other plugin,
errors, CSV downloads) is passed to TensorBoard's web server and its answer passed back,
status and headers as they came, over one kept-alive connection per thread.

Answers are kept in the provider's answer cache (:class:`~stoker.board._provider.AnswerCache`,
shared with the gRPC answers) by route and request until a reload reads anything, with their
gzip encoding once a client has asked for it: a page refresh is answered from memory. Answers
are gzipped for clients that accept it, as TensorBoard gzips its JSON.
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import json
import logging
import re
import socket
import sys
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

from stoker._checks import check_int
from stoker.board._blob_routes import BLOB_ROUTES, blob_answer
from stoker.board._provider import Provider
from stoker.board._scalar_routes import multirun_answer, scalars_answer, time_series_answer
from stoker.board._server import check_host, check_port

__all__ = ["DEFAULT_SAMPLES", "PageServer", "accepts_gzip"]

DEFAULT_SAMPLES = 1000
"""Points of a scalar series TensorBoard keeps without ``--samples_per_plugin``."""
_LOG = logging.getLogger("stoker.board")
_UPSTREAM_TIMEOUT = 600.0
_IDLE_SECONDS = 600.0
_MAX_BODY = 64 << 20  # the page's POSTs are forms and JSON of a few KiB
_FORM = "application/x-www-form-urlencoded"
# Headers that belong to one connection, not to the message (RFC 9110, section 7.6.1).
_HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
    "upgrade", "proxy-authenticate", "proxy-authorization",
})  # fmt: skip
_ROUTE = re.compile(
    r"(?:/experiment/[^/]+)?/data/plugin/(?P<route>scalars/scalars|scalars/scalars_multirun"
    r"|timeseries/timeSeries|images/individualImage|audio/individualAudio|timeseries/imageData)"
)
_JSON = "application/json"


def accepts_gzip(header: str) -> bool:
    """Whether an ``Accept-Encoding`` value accepts gzip (``gzip``, ``x-gzip`` or ``*``, q > 0)."""
    for item in header.split(","):
        name, _, params = item.partition(";")
        if name.strip().lower() not in ("gzip", "x-gzip", "*"):
            continue
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality > 0:
            return True
    return False


class _Upstream:
    """Kept-alive connections to TensorBoard's web server, one per thread."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: set[http.client.HTTPConnection] = set()

    def _connection(self) -> http.client.HTTPConnection:
        connection: http.client.HTTPConnection | None = getattr(self._local, "connection", None)
        if connection is None:
            connection = http.client.HTTPConnection(self.host, self.port, timeout=_UPSTREAM_TIMEOUT)
            try:
                connection.connect()
            except OSError:
                connection.close()
                raise
            if connection.sock is not None:
                connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._local.connection = connection
            with self._lock:
                self._open.add(connection)
        return connection

    def _drop(self, connection: http.client.HTTPConnection) -> None:
        connection.close()
        self._local.connection = None
        with self._lock:
            self._open.discard(connection)

    def ask(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes | None
    ) -> tuple[int, str, list[tuple[str, str]], bytes]:
        """Send one request; return status, reason, headers and body.

        One retry on a new connection if the kept one was closed.
        """
        for attempt in (0, 1):
            try:
                connection = self._connection()
            except OSError:
                if attempt:
                    raise
                continue
            try:
                connection.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
                for name, value in headers:
                    connection.putheader(name, value)
                if body is not None:
                    connection.putheader("Content-Length", str(len(body)))
                connection.endheaders(body)
                response = connection.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException):
                self._drop(connection)
                if attempt:
                    raise
                continue
            if response.will_close:
                self._drop(connection)
            return response.status, response.reason, response.getheaders(), data
        raise AssertionError("not reached")

    def close(self) -> None:
        """Close every thread's connection."""
        with self._lock:
            connections, self._open = self._open, set()
        for connection in connections:
            connection.close()


class _Handler(http.server.BaseHTTPRequestHandler):
    """One client connection: each request answered here or by TensorBoard."""

    protocol_version = "HTTP/1.1"
    timeout = _IDLE_SECONDS  # a kept-alive connection with nothing asked is closed
    server: _Server

    def do_GET(self) -> None:
        """Answer a GET."""
        self._handle()

    def do_POST(self) -> None:
        """Answer a POST."""
        self._handle()

    def do_HEAD(self) -> None:
        """Answer a HEAD (TensorBoard's)."""
        self._handle()

    def do_PUT(self) -> None:
        """Answer a PUT (TensorBoard's)."""
        self._handle()

    def do_DELETE(self) -> None:
        """Answer a DELETE (TensorBoard's)."""
        self._handle()

    def do_OPTIONS(self) -> None:
        """Answer an OPTIONS (TensorBoard's)."""
        self._handle()

    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing per request (TensorBoard logs none either)."""

    def _body(self) -> bytes | None:
        length = self.headers.get("Content-Length")
        if length is None:
            return None
        try:
            count = int(length)
        except ValueError:
            count = -1
        if count < 0:
            raise ValueError(f"Content-Length must be a number of bytes, got {length!r}")
        if count > _MAX_BODY:
            raise OverflowError(
                f"a request body of {count:,} bytes is more than the page's {_MAX_BODY:,}"
            )
        return self.rfile.read(count)

    def _handle(self) -> None:
        if self.headers.get("Transfer-Encoding", "").lower() not in ("", "identity"):
            self.close_connection = True  # the body is not read
            self.send_error(411, "send the body with a Content-Length")
            return
        try:
            body = self._body()
        except ValueError as err:
            self.close_connection = True
            self.send_error(400, str(err))
            return
        except OverflowError as err:
            self.close_connection = True  # the body is not read
            self.send_error(413, str(err))
            return
        answer = self._answer_here(body)
        if answer is not None:
            self._send(*answer)
            return
        self._pass_on(body)

    def _answer_here(self, body: bytes | None) -> tuple[bytes, str] | None:
        """The answer to a scalar or blob route's request and its content type.

        None for TensorBoard to answer.
        """
        page = self.server.page
        try:
            target = urllib.parse.urlsplit(self.path)
        except ValueError:  # not a URL (a bad IPv6 host): TensorBoard answers it
            return None
        path = urllib.parse.unquote(target.path)  # routed decoded, as TensorBoard routes
        if not path.startswith(page.prefix):
            return None
        found = _ROUTE.fullmatch(path[len(page.prefix) :])
        if found is None:
            return None
        route = found.group("route")
        args = _first_values(target.query)
        if route in BLOB_ROUTES:
            return self._blob_here(route, args)
        if self.command == "POST" and route != "scalars/scalars":
            kind = self.headers.get("Content-Type", "").partition(";")[0].strip().lower()
            if kind != _FORM:
                return None
            form = urllib.parse.parse_qs((body or b"").decode("utf-8", "replace"),
                                         keep_blank_values=True)  # fmt: skip
        elif self.command == "GET":
            form = {}
        else:
            return None
        zipped = accepts_gzip(self.headers.get("Accept-Encoding", ""))
        samples = page.samples
        provider = page.provider
        generation = provider.generation
        key: tuple[Any, ...]
        make: Callable[[], bytes | None]
        if route == "scalars/scalars":
            run, tag = args.get("run"), args.get("tag")
            if self.command != "GET" or run is None or tag is None or args.get("format") == "csv":
                return None
            key = (route, run, tag)
            make = lambda: scalars_answer(provider, run, tag, samples)  # noqa: E731
        elif route == "scalars/scalars_multirun":
            tags = form.get("tag", [])
            if self.command != "POST" or len(tags) != 1:
                return None
            runs = form.get("runs", [])
            key = (route, tags[0], tuple(runs))
            make = lambda: multirun_answer(provider, tags[0], runs, samples)  # noqa: E731
        else:
            sent = form.get("requests", []) if self.command == "POST" else [args.get("requests")]
            text = sent[0] if sent else None
            requests = _json_or_none(text)
            if requests is None:
                return None
            key = (route, text)
            make = lambda: time_series_answer(provider, requests, samples)  # noqa: E731

        def cached() -> tuple[bytes, str] | None:
            answer = provider.answers.get(generation, key, make, zipped)
            return None if answer is None else (answer, _JSON)

        return self._answered(route, cached)

    def _blob_here(self, route: str, args: dict[str, str]) -> tuple[bytes, str] | None:
        """An image's or audio clip's bytes (never held) and content type, or None."""
        if self.command != "GET":
            return None
        provider = self.server.page.provider
        return self._answered(route, lambda: blob_answer(provider, route, args))

    def _answered(
        self, route: str, answer: Callable[[], tuple[bytes, str] | None]
    ) -> tuple[bytes, str] | None:
        """What ``answer()`` gives, counted as answered here; None if it raised (logged)."""
        try:
            found = answer()
        except Exception as err:  # a defect here must not cost the page: TensorBoard answers
            _LOG.warning("stoker board: answering %s failed (%s); TensorBoard answers it",
                         self.path, err)  # fmt: skip
            return None
        if found is not None:
            self.server.page.count(route)
        return found

    def _send(self, data: bytes, kind: str) -> None:
        """A 200 answer with TensorBoard's headers (a JSON answer is gzipped if accepted)."""
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Content-Type-Options", "nosniff")
        if kind == _JSON and accepts_gzip(self.headers.get("Accept-Encoding", "")):
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Expires", "0")
        self.send_header("Cache-Control", "no-cache, must-revalidate")
        self.end_headers()
        self.wfile.write(data)

    def _pass_on(self, body: bytes | None) -> None:
        headers = [
            (name, value)
            for name, value in self.headers.items()
            if name.lower() not in _HOP_BY_HOP and name.lower() != "content-length"
        ]
        try:
            status, reason, answer_headers, data = self.server.page.upstream.ask(
                self.command, self.path, headers, body
            )
        except (OSError, http.client.HTTPException) as err:
            self.send_error(502, f"TensorBoard's web server did not answer: {err}")
            return
        self.send_response(status, reason)
        for name, value in answer_headers:
            lowered = name.lower()
            if lowered in _HOP_BY_HOP or lowered in ("server", "date"):
                continue
            if lowered == "content-length" and self.command != "HEAD":
                continue
            self.send_header(name, value)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


def _first_values(query: str) -> dict[str, str]:
    """Each query argument's first value, as TensorBoard's ``request.args.get`` takes it."""
    args: dict[str, str] = {}
    for name, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
        args.setdefault(name, value)
    return args


def _json_or_none(text: str | None) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    page: PageServer

    def get_request(self) -> tuple[socket.socket, Any]:
        """Accept a client, its answers sent without waiting to fill a segment."""
        client, address = self.socket.accept()
        with contextlib.suppress(OSError):  # not TCP (a test's socket pair)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return client, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer is not an error; anything else is one line."""
        err = sys.exc_info()[1]
        if isinstance(err, (ConnectionError, TimeoutError)):
            return
        _LOG.warning("stoker board: a request from %s failed: %r", client_address[0], err)


class PageServer:
    """TensorBoard's page on ``host:port``, its scalar routes answered from ``provider``.

    Args:
        provider: The data provider TensorBoard's web server also asks.
        upstream: TensorBoard's web server, ``(host, port)``.
        host: The address to listen on.
        port: The port (0: a free one, see :attr:`port`).
        path_prefix: TensorBoard's ``--path_prefix``, without its trailing slash.
        samples: Points kept per scalar series (TensorBoard's ``--samples_per_plugin
            scalars=N``; None: TensorBoard's default, 1,000).

    Raises:
        ValueError: If ``host``, ``port`` or ``samples`` is out of range.
        TypeError: If ``path_prefix`` is not a str, or ``samples`` not an int.
        OSError: If ``host:port`` cannot be listened on.
    """

    def __init__(
        self,
        provider: Provider,
        upstream: tuple[str, int],
        *,
        host: str,
        port: int,
        path_prefix: str = "",
        samples: int | None = None,
    ) -> None:
        """Listen on ``host:port``; serve from :meth:`start`."""
        check_host(host)
        port = check_port(port)
        if not isinstance(path_prefix, str):
            raise TypeError(f"path_prefix must be a str such as '/tb', got {path_prefix!r}")
        self.provider = provider
        self.upstream = _Upstream(*upstream)
        self.prefix = path_prefix.rstrip("/")
        checked = check_int(samples, "samples", minimum=0, allow_none=True,
                            hint="TensorBoard's --samples_per_plugin scalars=N")  # fmt: skip
        self.samples = DEFAULT_SAMPLES if checked is None else checked
        self._counted = threading.Lock()
        self.answered: dict[str, int] = {}
        """Requests answered here, by route (``scalars/scalars``...); the rest went on."""
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        server_class = type("_BoundServer", (_Server,), {"address_family": family})
        self._server: _Server = server_class(address[:2], _Handler)
        self._server.page = self
        self.port: int = self._server.server_address[1]
        self._thread: threading.Thread | None = None

    def count(self, route: str) -> None:
        """Count one request of ``route`` answered here."""
        with self._counted:
            self.answered[route] = self.answered.get(route, 0) + 1

    def start(self) -> PageServer:
        """Serve in a thread of its own; return self."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.1,), name="stoker-board-page", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the port."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        with contextlib.suppress(OSError):
            self._server.server_close()
        self.upstream.close()
