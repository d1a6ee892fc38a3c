"""The page server: scalar routes answered from the columns, every other request passed on whole.

A small HTTP server in a thread stands in for TensorBoard's web server and records what reaches
it; the provider reads a log dir written here. What the answers hold, route by route, against
TensorBoard's own, is tests/integration/board/test_board_http.py's.
"""

from __future__ import annotations

import gzip
import http.client
import http.server
import json
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stoker.board import _blob_routes, _scalar_routes
from stoker.board._page import PageServer, accepts_gzip
from stoker.board._provider import AnswerCache, Provider, blob_key
from stoker.tensorboard import SummaryWriter
from stoker.tensorboard._board import SeriesLog

VALUES = [0.5, float("nan"), float("inf"), float("-inf"), 1e300, 0.1]


def _write(logdir: Path, runs: tuple[str, ...] = ("a", "b"), points: int = 30) -> None:
    for run in runs:
        with SummaryWriter(logdir / run) as writer:
            for step in range(points):
                writer.add_scalar("loss", 1.0 / (step + 1), step, walltime=1000.0 + step)
            for step, value in enumerate(VALUES):
                writer.add_scalar("odd", value, step, walltime=2000.0 + step)
            writer.add_histogram("weights", np.arange(10.0), 0)


class _Upstream(http.server.ThreadingHTTPServer):
    """Stands in for TensorBoard's web server: answers 404 with what it was asked."""

    daemon_threads = True
    asked: list[tuple[str, str, dict[str, str], bytes]]


class _Recorder(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Upstream

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        self.server.asked.append((self.command, self.path, dict(self.headers.items()), body))
        data = json.dumps({"method": self.command, "path": self.path}).encode()
        self.send_response(404, "Not There")
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Upstream", "yes")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_POST = do_HEAD = do_PUT = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[_Upstream]:
    server = _Upstream(("127.0.0.1", 0), _Recorder)
    server.asked = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def provider(tmp_path: Path) -> Provider:
    _write(tmp_path)
    return Provider(SeriesLog(tmp_path, workers=1))


@pytest.fixture
def page(provider: Provider, upstream: _Upstream) -> Iterator[PageServer]:
    server = PageServer(
        provider, ("127.0.0.1", upstream.server_address[1]), host="127.0.0.1", port=0, samples=10
    ).start()
    yield server
    server.stop()


def _ask(
    page: PageServer,
    method: str,
    target: str,
    body: bytes | None = None,
    *,
    headers: dict[str, str] | None = None,
    connection: http.client.HTTPConnection | None = None,
) -> tuple[int, dict[str, str], bytes]:
    own = connection is None
    connection = connection or http.client.HTTPConnection("127.0.0.1", page.port, timeout=30)
    try:
        connection.request(method, target, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        if own:
            connection.close()


def _form(**fields: Any) -> tuple[bytes, dict[str, str]]:
    return urllib.parse.urlencode(fields, doseq=True).encode(), {
        "Content-Type": "application/x-www-form-urlencoded"
    }


def _series(provider: Provider, run: str, tag: str, samples: int) -> list[list[Any]]:
    ((_, (steps, walls, values)),) = provider.scalar_columns("scalars", tag, [run], samples)
    return [
        [w, s, v] for w, s, v in zip(walls.tolist(), steps.tolist(), values.tolist(), strict=True)
    ]


@pytest.mark.parametrize(
    ("header", "accepted"),
    [("gzip", True), ("gzip, deflate, br", True), ("deflate,gzip", True), ("x-gzip", True),
     ("*", True), ("GZIP;q=0.5", True), ("gzip;q=0", False), ("gzip; q=0.0", False),
     ("gzip;q=x", False), ("deflate", False), ("", False), ("gzipped", False)],
)  # fmt: skip
def test_gzip_is_used_when_the_client_accepts_it(header: str, accepted: bool) -> None:
    """``Accept-Encoding`` is read as HTTP has it: a gzip name (or ``*``) with a quality above 0."""
    assert accepts_gzip(header) is accepted


def test_scalars_are_answered_here_downsampled_with_cleanse_strings(
    page: PageServer, provider: Provider, upstream: _Upstream
) -> None:
    """A series' rows come from the columns, and nothing reaches TensorBoard.

    Downsampled to ``samples``, NaN and infinities as TensorBoard's strings, values rounded
    to float32 (1e300 is then infinite).
    """
    status, headers, data = _ask(page, "GET", "/data/plugin/scalars/scalars?run=a&tag=loss")
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    rows = json.loads(data)
    assert len(rows) == 10
    assert rows[-1][1] == 29  # the last point is always kept
    assert rows == _series(provider, "a", "loss", 10)
    status, _, data = _ask(page, "GET", "/data/plugin/scalars/scalars?tag=odd&run=b&x=1")
    assert status == 200
    values = [value for _, _, value in json.loads(data)]
    assert values == [0.5, "NaN", "Infinity", "-Infinity", "Infinity", float(np.float32(0.1))]
    assert upstream.asked == []
    assert page.answered == {"scalars/scalars": 2}


def test_gzip_answers_hold_the_same_json(page: PageServer) -> None:
    """With ``Accept-Encoding: gzip`` the answer is gzip of the same JSON, marked as such."""
    target = "/data/plugin/scalars/scalars?run=a&tag=loss"
    _, plain_headers, plain = _ask(page, "GET", target)
    for _ in range(2):  # made once, then from the cache
        status, headers, data = _ask(page, "GET", target, headers={"Accept-Encoding": "gzip"})
        assert status == 200
        assert headers["Content-Encoding"] == "gzip"
        assert gzip.decompress(data) == plain
    assert "Content-Encoding" not in plain_headers


def test_multirun_and_time_series_are_answered_here(page: PageServer, provider: Provider) -> None:
    """``scalars_multirun`` and ``timeSeries`` scalar requests are answered here.

    ``scalars_multirun`` maps each asked run holding the tag to its rows, in sorted order; a
    time series request repeats its fields and maps every run (or its one run) to points.
    """
    body, headers = _form(tag="loss", runs=["b", "a", "nope"])
    status, _, data = _ask(
        page, "POST", "/data/plugin/scalars/scalars_multirun", body, headers=headers
    )
    assert status == 200
    answer = json.loads(data)
    assert list(answer) == ["a", "b"]
    assert answer["b"] == _series(provider, "b", "loss", 10)
    requests = [
        {"plugin": "scalars", "tag": "loss"},
        {"plugin": "scalars", "tag": "loss", "run": "b", "sample": 3},
        {"plugin": "scalars", "tag": "none", "run": ""},
    ]
    body, headers = _form(requests=json.dumps(requests))
    target = "/experiment/defaultExperimentId/data/plugin/timeseries/timeSeries"
    status, _, data = _ask(page, "POST", target, body, headers=headers)
    assert status == 200
    every, one, empty = json.loads(data)
    assert list(every) == ["plugin", "tag", "runToSeries"]
    assert list(every["runToSeries"]) == ["a", "b"]
    assert every["runToSeries"]["a"][-1] == {
        "wallTime": 1029.0,
        "step": 29,
        "value": float(np.float32(1 / 30)),
    }
    assert {key: one[key] for key in ("plugin", "tag", "run", "sample")} == requests[1]
    assert list(one["runToSeries"]) == ["b"]
    assert empty == {"plugin": "scalars", "tag": "none", "run": "", "runToSeries": {}}
    query = urllib.parse.urlencode({"requests": json.dumps(requests[:1])})
    status, _, again = _ask(page, "GET", f"{target}?{query}")
    assert status == 200
    assert json.loads(again) == [every]
    assert page.answered == {"scalars/scalars_multirun": 1, "timeseries/timeSeries": 2}


@pytest.mark.parametrize(
    ("method", "target", "form"),
    [
        ("GET", "/data/plugin/scalars/scalars?run=zz&tag=loss", None),  # no such run: a 404
        ("GET", "/data/plugin/scalars/scalars?run=a&tag=weights", None),  # not a scalar series
        ("GET", "/data/plugin/scalars/scalars?run=a", None),  # no tag: TensorBoard's 400
        ("GET", "/data/plugin/scalars/scalars?run=a&tag=loss&format=csv", None),
        ("HEAD", "/data/plugin/scalars/scalars?run=a&tag=loss", None),
        ("POST", "/data/plugin/scalars/scalars?run=a&tag=loss", {}),
        ("GET", "/data/plugin/scalars/scalars_multirun?tag=loss", None),  # POST only
        ("POST", "/data/plugin/scalars/scalars_multirun", {"tag": ["a", "b"]}),
        ("POST", "/data/plugin/timeseries/timeSeries", {"requests": "[{"}),
        ("POST", "/data/plugin/timeseries/timeSeries", {}),
        ("POST", "/data/plugin/timeseries/timeSeries", {"requests": '{"plugin": "scalars"}'}),
        ("POST", "/data/plugin/timeseries/timeSeries",
         {"requests": '[{"plugin": "scalars", "tag": "loss"}, {"plugin": "histograms", '
                      '"tag": "weights", "run": "a"}]'}),
        ("POST", "/data/plugin/timeseries/timeSeries",
         {"requests": '[{"plugin": "scalars", "tag": 3}]'}),
        ("POST", "/data/plugin/timeseries/timeSeries",
         {"requests": '[{"plugin": "scalars", "tag": "loss", "run": 5}]'}),
        ("POST", "/data/plugin/timeseries/timeSeries",
         {"requests": '[{"plugin": "scalars", "tag": "loss", "sample": 100000000000000000000}]'}),
        ("POST", "/data/plugin/timeseries/timeSeries", {"requests": "[3]"}),
        ("GET", "/data/plugin/scalars/tags", None),
        ("GET", "/data/plugin/scalars/scalars/?run=a&tag=loss", None),
        ("GET", "/tb/data/plugin/scalars/scalars?run=a&tag=loss", None),  # not its prefix
        ("PUT", "/data/plugin/scalars/scalars?run=a&tag=loss", {}),
    ],
)  # fmt: skip
def test_every_other_request_goes_to_tensorboard_whole(
    page: PageServer, upstream: _Upstream, method: str, target: str, form: dict[str, Any] | None
) -> None:
    """What the page server does not answer reaches TensorBoard as sent, and its answer returns.

    Method, path and query, body and headers reach TensorBoard unchanged; its status, reason,
    headers and body come back (HEAD: headers only).
    """
    body, headers = _form(**form) if form is not None else (None, {})
    headers = {**headers, "X-Mine": "kept", "Accept-Encoding": "gzip"}
    status, answer_headers, data = _ask(page, method, target, body, headers=headers)
    assert status == 404
    assert answer_headers["X-Upstream"] == "yes"
    ((asked_method, asked_target, asked_headers, asked_body),) = upstream.asked
    assert (asked_method, asked_target) == (method, target)
    assert asked_headers["X-Mine"] == "kept"
    assert asked_headers["Accept-Encoding"] == "gzip"
    assert asked_body == (body or b"")
    if method == "HEAD":
        assert data == b""
        assert int(answer_headers["Content-Length"]) > 0
    else:
        assert json.loads(data) == {"method": method, "path": target}
    assert page.answered == {}


def test_a_path_prefix_and_kept_alive_connections(provider: Provider, upstream: _Upstream) -> None:
    """Under ``--path_prefix`` the routes are answered there, on kept-alive connections.

    One connection serves many requests, answered here and passed on in turn.
    """
    page = PageServer(
        provider, ("127.0.0.1", upstream.server_address[1]), host="127.0.0.1", port=0,
        path_prefix="/tb/",
    ).start()  # fmt: skip
    connection = http.client.HTTPConnection("127.0.0.1", page.port, timeout=30)
    try:
        for _ in range(3):
            here = _ask(page, "GET", "/tb/data/plugin/scalars/scalars?run=a&tag=loss",
                        connection=connection)  # fmt: skip
            assert here[0] == 200
            assert len(json.loads(here[2])) == 30  # TensorBoard's 1,000 by default
            there = _ask(page, "GET", "/tb/data/runs", connection=connection)
            assert there[0] == 404
    finally:
        connection.close()
        page.stop()
    assert page.answered == {"scalars/scalars": 3}
    assert [target for _, target, _, _ in upstream.asked] == ["/tb/data/runs"] * 3


def test_answers_follow_the_log_dir(tmp_path: Path, upstream: _Upstream) -> None:
    """A reload that reads new points changes the answer; one that reads nothing keeps it."""
    _write(tmp_path, runs=("a",), points=5)
    provider = Provider(SeriesLog(tmp_path, workers=1))
    page = PageServer(
        provider, ("127.0.0.1", upstream.server_address[1]), host="127.0.0.1", port=0
    ).start()
    target = "/data/plugin/scalars/scalars?run=a&tag=loss"
    try:
        assert len(json.loads(_ask(page, "GET", target)[2])) == 5
        with SummaryWriter(tmp_path / "a") as writer:
            writer.add_scalar("loss", 9.0, 100)
        generation = provider.generation
        assert provider.reload() > 0
        assert provider.generation != generation
        rows = json.loads(_ask(page, "GET", target)[2])
        assert [step for _, step, _ in rows] == [0, 1, 2, 3, 4, 100]
        assert provider.reload() == 0
        assert json.loads(_ask(page, "GET", target)[2]) == rows
    finally:
        page.stop()


def test_tensorboard_gone_is_a_502_naming_it(provider: Provider, upstream: _Upstream) -> None:
    """With TensorBoard's web server gone, passed-on requests get 502; scalar ones still 200."""
    port = upstream.server_address[1]
    upstream.shutdown()
    upstream.server_close()
    page = PageServer(provider, ("127.0.0.1", port), host="127.0.0.1", port=0).start()
    try:
        status, _, data = _ask(page, "GET", "/data/runs")
        assert status == 502
        assert b"TensorBoard's web server did not answer" in data
        assert _ask(page, "GET", "/data/plugin/scalars/scalars?run=a&tag=loss")[0] == 200
    finally:
        page.stop()


def test_bad_request_framing_is_refused(page: PageServer, upstream: _Upstream) -> None:
    """A chunked body is 411, a bad Content-Length 400, a huge one 413; nothing goes on."""
    for headers, expected in (
        ({"Transfer-Encoding": "chunked"}, 411),
        ({"Content-Length": "many"}, 400),
        ({"Content-Length": "-3"}, 400),
        ({"Content-Length": str(1 << 40)}, 413),
    ):
        connection = http.client.HTTPConnection("127.0.0.1", page.port, timeout=30)
        try:
            connection.putrequest("POST", "/data/plugin/scalars/scalars_multirun")
            for name, value in headers.items():
                connection.putheader(name, value)
            connection.endheaders()
            response = connection.getresponse()
            assert response.status == expected
            response.read()
        finally:
            connection.close()
    assert upstream.asked == []


def test_a_taken_port_is_an_oserror(provider: Provider, upstream: _Upstream) -> None:
    """Listening where something already listens raises OSError (stoker board names the port)."""
    with pytest.raises(OSError, match="in use"):
        PageServer(provider, ("127.0.0.1", 1), host="127.0.0.1", port=upstream.server_address[1])


def test_json_without_orjson_reads_the_same(provider: Provider) -> None:
    """The ``json`` fallback writes answers that parse to what ``orjson``'s parse to."""
    requests = [{"plugin": "scalars", "tag": tag} for tag in ("loss", "odd")]
    fast = _scalar_routes.time_series_answer(provider, requests, 1000)
    assert fast is not None
    original = _scalar_routes.dumps
    try:
        _scalar_routes.dumps = _scalar_routes._json_dumps
        slow = _scalar_routes.time_series_answer(provider, requests, 1000)
    finally:
        _scalar_routes.dumps = original
    assert slow is not None
    assert json.loads(slow) == json.loads(fast)
    assert '"NaN"' in slow.decode()


@pytest.fixture
def media(tmp_path: Path, upstream: _Upstream) -> Iterator[tuple[PageServer, Path]]:
    """A page server on a run with an image and an audio clip, and the run's directory."""
    run = tmp_path / "media"
    with SummaryWriter(run) as writer:
        writer.add_image("picture", np.linspace(0.0, 1.0, 3 * 8 * 8).reshape(3, 8, 8), 4)
        writer.add_audio("clip", np.sin(np.arange(800) / 9.0), 4, sample_rate=8000)
    provider = Provider(SeriesLog(tmp_path, workers=1))
    server = PageServer(
        provider, ("127.0.0.1", upstream.server_address[1]), host="127.0.0.1", port=0
    ).start()
    yield server, run
    server.stop()


def _blob_query(plugin: str, tag: str, index: int, **more: str) -> str:
    key = blob_key("", plugin, "media", tag, step=4, index=index)
    return urllib.parse.urlencode({"blob_key": key, **more})


def _image_id() -> str:
    """The Time Series page's query for the written image."""
    return urllib.parse.urlencode({"imageId": blob_key("", "images", "media", "picture", step=4,
                                                       index=2)})  # fmt: skip


def test_images_and_audio_are_answered_here_from_their_files(
    media: tuple[PageServer, Path], upstream: _Upstream
) -> None:
    """An image's and a clip's bytes as written, with TensorBoard's content types and headers.

    The images route, the Time Series page's (under ``/experiment/ID``) and the audio route;
    never gzipped (TensorBoard gzips only text), and not kept in the answer cache.
    """
    page, _ = media
    image_query = _blob_query("images", "picture", 2)
    found = {
        "image": _ask(page, "GET", f"/data/plugin/images/individualImage?{image_query}",
                      headers={"Accept-Encoding": "gzip"}),
        "time series": _ask(page, "GET",
                            f"/experiment/x/data/plugin/timeseries/imageData?{_image_id()}"),
        "audio": _ask(page, "GET", "/data/plugin/audio/individualAudio?"
                      + _blob_query("audio", "clip", 0, content_type="audio/wav")),
    }  # fmt: skip
    for name, (status, headers, data) in found.items():
        assert status == 200, name
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Cache-Control"] == "no-cache, must-revalidate"
        assert "Content-Encoding" not in headers
        assert int(headers["Content-Length"]) == len(data)
    assert found["image"][1]["Content-Type"] == "image/png"
    assert found["image"][2].startswith(b"\x89PNG\r\n\x1a\n")
    assert found["time series"][1]["Content-Type"] == "image/png"
    assert found["time series"][2] == found["image"][2]
    assert found["audio"][1]["Content-Type"] == "audio/wav"
    assert found["audio"][2][:4] == b"RIFF"
    assert found["audio"][2][8:12] == b"WAVE"
    assert upstream.asked == []
    assert page.answered == {
        "images/individualImage": 1, "timeseries/imageData": 1, "audio/individualAudio": 1
    }  # fmt: skip
    assert page.provider.answers.size == 0


@pytest.mark.parametrize(
    ("method", "target"),
    [
        ("GET", "/data/plugin/images/individualImage"),
        ("GET", "/data/plugin/images/individualImage?blob_key="),
        ("GET", "/data/plugin/images/individualImage?blob_key=not-a-key"),
        ("GET", "/data/plugin/images/individualImage?" + _blob_query("images", "picture", 3)),
        ("GET", "/data/plugin/images/individualImage?" + _blob_query("images", "nothing", 2)),
        ("GET", "/data/plugin/timeseries/imageData?imageId="),
        ("GET", "/data/plugin/audio/individualAudio?" + _blob_query("audio", "clip", 0)),
        ("GET", "/data/plugin/audio/individualAudio?"
         + _blob_query("audio", "clip", 0, content_type="text/html")),
        ("HEAD", "/data/plugin/images/individualImage?" + _blob_query("images", "picture", 2)),
        ("POST", "/data/plugin/images/individualImage?" + _blob_query("images", "picture", 2)),
    ],
)  # fmt: skip
def test_blob_requests_tensorboard_answers_differently_go_to_it(
    media: tuple[PageServer, Path], upstream: _Upstream, method: str, target: str
) -> None:
    """No key, a bad key, no such blob, a content type TensorBoard refuses, HEAD, POST."""
    page, _ = media
    status, headers, _ = _ask(page, method, target, b"" if method == "POST" else None)
    assert (status, headers["X-Upstream"]) == (404, "yes")
    assert [(asked[0], asked[1]) for asked in upstream.asked] == [(method, target)]
    assert page.answered == {}


def test_an_image_whose_file_is_gone_goes_to_tensorboard(
    media: tuple[PageServer, Path], upstream: _Upstream
) -> None:
    """A blob that cannot be read again intact is never other bytes: TensorBoard answers it."""
    page, run = media
    for path in run.iterdir():
        path.write_bytes(b"\0" * path.stat().st_size)
    target = "/data/plugin/images/individualImage?" + _blob_query("images", "picture", 2)
    assert _ask(page, "GET", target)[0] == 404
    assert len(upstream.asked) == 1


def test_a_defect_answering_here_leaves_the_request_to_tensorboard(
    media: tuple[PageServer, Path],
    upstream: _Upstream,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An error inside a scalar or blob answer is logged once, and TensorBoard answers."""
    page, _ = media

    def broken(*args: Any) -> Any:
        raise RuntimeError("broken on purpose")

    monkeypatch.setattr(page.provider, "blob_bytes", broken)
    monkeypatch.setattr(page.provider, "scalar_columns", broken)
    targets = [
        "/data/plugin/images/individualImage?" + _blob_query("images", "picture", 2),
        "/data/plugin/scalars/scalars?run=media&tag=loss",
    ]
    with caplog.at_level("WARNING", logger="stoker.board"):
        assert [_ask(page, "GET", target)[0] for target in targets] == [404, 404]
    assert [asked[1] for asked in upstream.asked] == targets
    assert page.answered == {}
    failures = [record.getMessage() for record in caplog.records]
    assert len(failures) == 2
    assert all("broken on purpose" in failure for failure in failures)


def test_without_tensorboards_image_typer_images_go_to_tensorboard(
    media: tuple[PageServer, Path], upstream: _Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A TensorBoard without ``img_mime_type_detector`` (before 2.20) types images itself."""
    page, _ = media
    monkeypatch.setattr(_blob_routes, "_image_type", None)
    target = "/data/plugin/images/individualImage?" + _blob_query("images", "picture", 2)
    assert _ask(page, "GET", target)[0] == 404
    audio = "/data/plugin/audio/individualAudio?" + _blob_query(
        "audio", "clip", 0, content_type="audio/wav"
    )
    assert _ask(page, "GET", audio)[0] == 200
    assert [asked[1] for asked in upstream.asked] == [target]


def test_blob_routes_are_routed_on_the_decoded_path(
    media: tuple[PageServer, Path], upstream: _Upstream
) -> None:
    """A percent-encoded path is routed as TensorBoard routes it: decoded."""
    page, _ = media
    query = _blob_query("images", "picture", 2)
    encoded = f"/data/plugin/images%2FindividualImage?{query}"
    assert _ask(page, "GET", encoded)[1]["Content-Type"] == "image/png"
    elsewhere = f"/experiment/a%2Fb/data/plugin/images/individualImage?{query}"
    assert _ask(page, "GET", elsewhere)[0] == 404
    with socket.create_connection(("127.0.0.1", page.port), timeout=30) as client:
        # Not a URL urlsplit takes (an unclosed IPv6 host): TensorBoard's to answer.
        client.sendall(b"GET http://[x/data/plugin/images/individualImage HTTP/1.1\r\n"
                       b"Host: x\r\nConnection: close\r\n\r\n")  # fmt: skip
        assert client.makefile("rb").readline().split()[1] == b"404"
    assert [asked[1] for asked in upstream.asked] == [
        elsewhere, "http://[x/data/plugin/images/individualImage"
    ]  # fmt: skip
    assert page.answered == {"images/individualImage": 1}


_FLOAT64 = st.floats(allow_nan=False, allow_infinity=False, width=64)
_FLOAT32 = st.floats(allow_nan=False, allow_infinity=False, width=32)
_INT64S = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)


def _columns(values: Any, *, least: int) -> Any:
    """Series of ``least`` to 300 points: any steps and wall times, float32 ``values``."""
    return st.integers(min_value=least, max_value=300).flatmap(
        lambda count: st.tuples(
            st.lists(_INT64S, min_size=count, max_size=count),
            st.lists(_FLOAT64, min_size=count, max_size=count),
            st.lists(values, min_size=count, max_size=count),
        )
    )


@settings(max_examples=40, deadline=None)
@given(_columns(_FLOAT32, least=_scalar_routes._SPLICED_FROM))
def test_a_series_written_a_column_at_a_time_is_the_dicts_bytes(
    series: tuple[list[int], list[float], list[float]],
) -> None:
    """The time series route's JSON for a long finite series: the dicts' bytes, no dict built.

    Any steps, wall times and float32 values (subnormals, -0.0, the extremes among them).
    """
    steps, walls, values = series
    columns = (np.array(steps, np.int64), np.array(walls), np.array(values, np.float32))
    expected = _scalar_routes.dumps(_scalar_routes._data(columns))
    with mock.patch.object(_scalar_routes, "_data", side_effect=AssertionError("a dict built")):
        assert _scalar_routes._data_json(columns) == expected
    assert len(json.loads(expected)) == len(steps)


@settings(max_examples=20, deadline=None)
@given(_columns(st.floats(width=32), least=0))
def test_every_series_is_written_as_the_dicts_are(
    series: tuple[list[int], list[float], list[float]],
) -> None:
    """Short series and those holding NaN or the infinities: the same bytes too."""
    steps, walls, values = series
    columns = (np.array(steps, np.int64), np.array(walls), np.array(values, np.float32))
    assert _scalar_routes._data_json(columns) == _scalar_routes.dumps(_scalar_routes._data(columns))


def test_a_long_finite_series_is_written_without_a_dict_per_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The column path is the one taken for a long series of finite numbers."""
    count = 1000
    columns = (
        np.arange(count, dtype=np.int64) * 7 - 3,
        1.7e9 + np.arange(count) * 0.37,
        np.linspace(-3.0, 1e30, count).astype(np.float32),
    )
    expected = _scalar_routes.dumps(_scalar_routes._data(columns))

    def no_dicts(columns: Any) -> Any:
        raise AssertionError("a dict per point was built")

    monkeypatch.setattr(_scalar_routes, "_data", no_dicts)
    assert _scalar_routes._data_json(columns) == expected
    columns[2][5] = np.nan  # Cleanse's "NaN" needs the dicts
    with pytest.raises(AssertionError, match="a dict per point"):
        _scalar_routes._data_json(columns)


def test_answers_are_made_once_per_generation_and_kept_within_the_budget() -> None:
    """The provider's answer cache: one make per key and generation, older ones never kept.

    Small answers evict the least recently used; a large one (over a quarter of the budget)
    is kept only beside what is kept, never by evicting.
    """
    made: list[tuple[Any, ...]] = []

    def maker(key: tuple[Any, ...], size: int) -> Any:
        def make() -> bytes:
            made.append(key)
            return b"x" * size

        return make

    answers = AnswerCache(budget=1000)
    assert answers.get(1, ("a",), maker(("a",), 100), False) == b"x" * 100
    assert answers.get(1, ("a",), maker(("a",), 100), False) == b"x" * 100
    assert made == [("a",)]
    assert answers.get(0, ("a",), maker(("old",), 7), False) == b"x" * 7  # an older state
    assert answers.get(1, ("a",), maker(("a",), 100), False) == b"x" * 100  # still kept
    assert answers.get(2, ("a",), maker(("a2",), 100), False) == b"x" * 100
    assert made == [("a",), ("old",), ("a2",)]
    for name in "bcdefgh":  # 8 x 100 bytes: within the budget
        answers.get(2, (name,), maker((name,), 100), False)
    assert answers.size == 800
    answers.get(2, ("big",), maker(("big",), 300), False)  # does not fit beside: not kept
    assert answers.size == 800
    answers.get(2, ("big",), maker(("big",), 300), False)
    assert made.count(("big",)) == 2
    for name in "ijk":  # small ones evict the least recently used ("a2" first)
        answers.get(2, (name,), maker((name,), 100), False)
    assert answers.size == 1000
    answers.get(2, ("a",), maker(("a3",), 100), False)
    assert ("a3",) in made
    zipped = answers.get(2, ("k",), maker(("k2",), 100), True)
    assert zipped is not None
    assert gzip.decompress(zipped) == b"x" * 100
    assert ("k2",) not in made  # gzip of the kept answer
    assert answers.get(2, ("none",), lambda: None, False) is None


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"host": ""}, ValueError, "host must be a non-empty str"),
        ({"host": None}, ValueError, "host must be a non-empty str"),
        ({"port": 70000}, ValueError, r"port must be an int in \[0, 65535\]"),
        ({"port": "6006"}, ValueError, "port must be an int"),
        ({"samples": -1}, ValueError, "samples must be >= 0, got -1"),
        ({"samples": 2.5}, TypeError, "samples must be an int or None, got 2.5"),
        ({"path_prefix": None}, TypeError, "path_prefix must be a str"),
    ],
)
def test_bad_arguments_name_the_value(
    provider: Provider, arguments: dict[str, Any], error: type[Exception], message: str
) -> None:
    """Each bad argument of PageServer is refused before it listens, naming the value."""
    with pytest.raises(error, match=message):
        PageServer(provider, ("127.0.0.1", 1), **{"host": "127.0.0.1", "port": 0, **arguments})


def test_the_provider_keeps_grpc_answers_until_a_reload_changes_something(
    provider: Provider,
) -> None:
    """The gRPC answers go through the same cache: made once, made again after a change."""
    made: list[bytes] = []

    def answer(request: bytes) -> bytes:
        made.append(request)
        return request * 2

    assert provider.cached("ListRuns", b"q", answer) == b"qq"
    assert provider.cached("ListRuns", b"q", answer) == b"qq"
    assert made == [b"q"]
    assert provider.reload() == 0  # nothing new: kept
    provider.cached("ListRuns", b"q", answer)
    assert made == [b"q"]
    with SummaryWriter(Path(provider.location) / "a") as writer:
        writer.add_scalar("loss", 9.0, 100)
    assert provider.reload() > 0
    assert provider.answers.size == 0  # forgotten at once, not at the next request
    provider.cached("ListRuns", b"q", answer)
    assert made == [b"q", b"q"]
