"""TensorBoard's HTTP API, crawled route by route as its page walks it, and two crawls compared.

A data provider answers TensorBoard's web server; the page only sees the HTTP routes the plugins
build from those answers. ``crawl(base)`` asks a running TensorBoard every route the page would
ask, starting from ``/data/runs``, ``/data/plugins_listing`` and ``/data/environment`` and
following each plugin's tags to its data and each blob URL to its bytes; it returns one
normalised answer per route. ``compare(a, b)`` lists, route by route, how two crawls differ, so a
server under test is checked against TensorBoard's own Python loader on the same files:

    with board_http.serve_python(logdir) as base:
        expected = board_http.crawl(base)
    with board_http.serve_with_provider(logdir, address) as base:
        assert board_http.compare(expected, board_http.crawl(base)) == []

A route key is the method, the path and the query (``GET /data/plugin/scalars/scalars?run=a&tag=b``)
or, for a POST, the body after a space. An answer is ``(status, content type, body)``: JSON
bodies decoded (so the order of an object's keys does not count; the order of lists does, and
NaN compares equal to NaN, and `/data/environment` drops its `debug` part: the server's own
flags, port and provider), text bodies as ``str``, anything else as ``bytes``. Blob URLs are
kept as the server wrote them: a provider that encodes blob keys as TensorBoard's own does gives
the same URLs.

The Angular parts of the page (runs, time series, hparams) ask under
``/experiment/defaultExperimentId/``, so their data provider sees that experiment id; the
Polymer dashboards ask under ``/data/plugin/``, with the empty id. The crawl asks both ways where
the page does.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import tb_server

EXPERIMENT = "defaultExperimentId"  # the experiment id the Angular page asks with
NG_PREFIX = f"/experiment/{EXPERIMENT}"
SETTLE_TIMEOUT = 90.0
REQUEST_TIMEOUT = 30.0
GRAPH_QUERY = (("limit_attr_size", "1024"), ("large_attrs_key", "_too_large_attrs"))
MESH_CONTENT_TYPES = ("VERTEX", "FACE", "COLOR")
HPARAMS_STATUSES = ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"]

Answer = tuple[int, str, Any]
Crawl = dict[str, Answer]


@contextlib.contextmanager
def serve_python(logdir: Path) -> Iterator[str]:
    """TensorBoard on ``logdir`` with its Python loader (``--load_fast=false``); yield its URL."""
    with tb_server.serve(logdir, load_fast=False) as base:
        yield base


@contextlib.contextmanager
def serve_rust(logdir: Path) -> Iterator[str]:
    """TensorBoard on ``logdir`` with its Rust data server (``--load_fast=true``)."""
    with tb_server.serve(logdir, load_fast=True) as base:
        yield base


@contextlib.contextmanager
def serve_with_provider(logdir: Path, address: str) -> Iterator[str]:
    """TensorBoard's web server asking the gRPC data provider at ``address`` (``HOST:PORT``).

    ``--logdir`` is passed too: the projector reads its files from there itself.
    """
    flags = ["--grpc_data_provider", address, "--logdir", str(logdir)]
    with tb_server.serve_flags(flags) as base:
        yield base


class _Client:
    """Asks one server and records each answer under its route key."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.answers: Crawl = {}

    def get(self, path: str, query: list[tuple[str, Any]] | str = "") -> Answer:
        encoded = query if isinstance(query, str) else urllib.parse.urlencode(query)
        target = f"{path}?{encoded}" if encoded else path
        return self._ask(f"GET {target}", urllib.request.Request(self.base + target))

    def post_form(self, path: str, fields: list[tuple[str, Any]]) -> Answer:
        body = urllib.parse.urlencode(fields)
        request = urllib.request.Request(
            self.base + path,
            data=body.encode(),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        return self._ask(f"POST {path} {body}", request)

    def post_json(self, path: str, payload: Any) -> Answer:
        body = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        request = urllib.request.Request(
            self.base + path, data=body.encode(), headers={"Content-Type": "application/json"}
        )
        return self._ask(f"POST {path} {body}", request)

    def json(self, answer: Answer) -> Any:
        """The body of a JSON answer, or None for an error or another type."""
        status, kind, body = answer
        return body if status == 200 and kind == "application/json" else None

    def _ask(self, key: str, request: urllib.request.Request) -> Answer:
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT) as response:
                status, headers, data = response.status, response.headers, response.read()
        except urllib.error.HTTPError as err:
            with err:
                status, headers, data = err.code, err.headers, err.read()
        kind = (headers.get("Content-Type") or "").split(";")[0].strip()
        body = _body(kind, data)
        if key.endswith("/data/environment") and isinstance(body, dict):
            # The server's own flags and port, and the provider's repr: not data.
            body.pop("debug", None)
        answer = (status, kind, body)
        self.answers[key] = answer
        return answer


def _body(kind: str, data: bytes) -> Any:
    if kind == "application/json":
        return _nan_equal(json.loads(data))
    if kind.startswith("text/"):
        return data.decode("utf-8", errors="surrogateescape")
    return data


class _NaN:
    """NaN that equals NaN, so that two answers holding NaN at the same place compare equal."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NaN)

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "NaN"


def _nan_equal(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return _NaN()
    if isinstance(value, list):
        return [_nan_equal(item) for item in value]
    if isinstance(value, dict):
        return {key: _nan_equal(item) for key, item in value.items()}
    return value


def crawl(base: str, *, settle: bool = True) -> Crawl:
    """Every route the page asks of the server at ``base``, with its normalised answer.

    With ``settle``, crawl until two crawls in a row agree (within SETTLE_TIMEOUT): servers load
    files in the background, and an answer read while a file is half loaded is not the answer.

    Raises:
        AssertionError: If the crawls have not settled by then.
    """
    deadline = time.monotonic() + SETTLE_TIMEOUT
    previous = crawl_once(base)
    while settle:
        current = crawl_once(base)
        if current == previous:
            break
        if time.monotonic() > deadline:
            changes = compare(previous, current)
            raise AssertionError(f"{base}: the answers keep changing: {changes[:10]}")
        previous = current
        time.sleep(1.5)  # longer than the servers' 1 s reload interval
    return previous


def crawl_once(base: str) -> Crawl:
    """One pass over every route (see ``crawl``)."""
    client = _Client(base)
    runs = client.json(client.get("/data/runs")) or []
    client.get(f"{NG_PREFIX}/data/runs")
    client.get("/data/environment")
    client.get(f"{NG_PREFIX}/data/environment")
    _scalars(client)
    _histograms(client)
    _blob_plugin(client, "images", "images", "individualImage")
    _blob_plugin(client, "audio", "audio", "individualAudio")
    _text(client)
    _pr_curves(client)
    _custom_scalars(client, runs)
    _mesh(client)
    _graphs(client)
    _hparams(client, "/data/plugin/hparams", "", polymer=True)
    _hparams(client, f"{NG_PREFIX}/data/plugin/hparams", EXPERIMENT, polymer=False)
    _timeseries(client)
    projector_runs = _projector(client)
    _plugins_listing(client, projector_active=bool(projector_runs))
    return client.answers


def _run_tags(index: Any) -> list[tuple[str, str]]:
    """(run, tag) pairs of a ``{run: {tag: ...}}`` or ``{run: [tag, ...]}`` tags answer, sorted.

    The crawl asks in an order of its own, so that what it asks (and its route keys) depends
    on what a server holds, not on the order it lists it in.
    """
    if not isinstance(index, dict):
        return []
    return sorted((run, tag) for run, tags in index.items() for tag in tags)


def _scalars(client: _Client) -> None:
    index = client.json(client.get("/data/plugin/scalars/tags"))
    runs_of: dict[str, list[str]] = {}
    for run, tag in _run_tags(index):
        client.get("/data/plugin/scalars/scalars", [("run", run), ("tag", tag)])
        client.get("/data/plugin/scalars/scalars", [("run", run), ("tag", tag), ("format", "csv")])
        runs_of.setdefault(tag, []).append(run)
    for tag, runs in runs_of.items():
        fields = [("tag", tag)] + [("runs", run) for run in runs]
        client.post_form("/data/plugin/scalars/scalars_multirun", fields)


def _histograms(client: _Client) -> None:
    for run, tag in _run_tags(client.json(client.get("/data/plugin/histograms/tags"))):
        client.get("/data/plugin/histograms/histograms", [("run", run), ("tag", tag)])
    for run, tag in _run_tags(client.json(client.get("/data/plugin/distributions/tags"))):
        client.get("/data/plugin/distributions/distributions", [("run", run), ("tag", tag)])


def _blob_plugin(client: _Client, plugin: str, route: str, blob_route: str) -> None:
    prefix = f"/data/plugin/{plugin}"
    index = client.json(client.get(f"{prefix}/tags"))
    for run, tag in _run_tags(index):
        samples = index[run][tag].get("samples", 1)
        for sample in range(samples):
            query = [("run", run), ("tag", tag), ("sample", sample)]
            for entry in client.json(client.get(f"{prefix}/{route}", query)) or []:
                client.get(f"{prefix}/{blob_route}", entry["query"])


def _text(client: _Client) -> None:
    for run, tag in _run_tags(client.json(client.get("/data/plugin/text/tags"))):
        client.get("/data/plugin/text/text", [("run", run), ("tag", tag)])
        client.get("/data/plugin/text/text", [("run", run), ("tag", tag), ("markdown", "false")])


def _pr_curves(client: _Client) -> None:
    runs_of: dict[str, list[str]] = {}
    for run, tag in _run_tags(client.json(client.get("/data/plugin/pr_curves/tags"))):
        client.get("/data/plugin/pr_curves/pr_curves", [("run", run), ("tag", tag)])
        runs_of.setdefault(tag, []).append(run)
    for tag, runs in runs_of.items():
        if len(runs) > 1:
            query = [("tag", tag)] + [("run", run) for run in runs]
            client.get("/data/plugin/pr_curves/pr_curves", query)


def _custom_scalars(client: _Client, runs: list[str]) -> None:
    layout = client.json(client.get("/data/plugin/custom_scalars/layout")) or {}
    patterns: list[str] = []
    for category in layout.get("category", []):
        for chart in category.get("chart", []):
            patterns += chart.get("multiline", {}).get("tag", [])
            for series in chart.get("margin", {}).get("series", []):
                patterns += [series[key] for key in ("value", "lower", "upper") if key in series]
    for pattern in dict.fromkeys(patterns):
        for run in runs:
            client.get("/data/plugin/custom_scalars/scalars", [("run", run), ("tag", pattern)])


def _mesh(client: _Client) -> None:
    index = client.json(client.get("/data/plugin/mesh/tags"))
    for run, tag in _run_tags(index):
        samples = index[run][tag].get("samples", 1)
        metadata = client.json(client.get("/data/plugin/mesh/meshes", [("run", run), ("tag", tag)]))
        steps = dict.fromkeys(entry["step"] for entry in metadata or [])
        for step in steps:
            for content_type in MESH_CONTENT_TYPES:
                for sample in range(samples):
                    query = [
                        ("run", run), ("tag", tag), ("step", step),
                        ("content_type", content_type), ("sample", sample),
                    ]  # fmt: skip
                    client.get("/data/plugin/mesh/data", query)


def _graphs(client: _Client) -> None:
    info = client.json(client.get("/data/plugin/graphs/info")) or {}
    for run, item in sorted(info.items()):
        if item.get("run_graph"):
            client.get("/data/plugin/graphs/graph", [("run", run), *GRAPH_QUERY])
        for tag, tag_item in sorted(item.get("tags", {}).items()):
            if tag_item.get("op_graph"):
                client.get("/data/plugin/graphs/graph", [("run", run), ("tag", tag), *GRAPH_QUERY])
            if tag_item.get("conceptual_graph"):
                query = [("run", run), ("tag", tag), ("conceptual", "true"), *GRAPH_QUERY]
                client.get("/data/plugin/graphs/graph", query)
            if tag_item.get("profile"):
                client.get("/data/plugin/graphs/run_metadata", [("run", run), ("tag", tag)])


def _hparams(client: _Client, prefix: str, experiment: str, *, polymer: bool) -> None:
    """The hparams requests of the Polymer dashboard or of the Angular page.

    The Polymer dashboard's requests (metrics in the columns, pages of 100, metric evals and
    downloads) or the Angular page's (hparams only, one slice of a million).
    """
    request: dict[str, Any] = {"experimentName": experiment, "hparamsLimit": 1000}
    if not polymer:
        request["includeMetrics"] = False  # absent, it means True
    info = client.json(client.post_json(f"{prefix}/experiment", request)) or {}
    hparams = [item["name"] for item in info.get("hparamInfos", [])]
    metrics = [item["name"] for item in info.get("metricInfos", [])]
    columns: list[dict[str, Any]] = [{"hparam": name, "includeInResult": True} for name in hparams]
    if not polymer:
        groups_request = {
            "experimentName": experiment, "allowedStatuses": HPARAMS_STATUSES,
            "colParams": columns, "startIndex": 0, "sliceSize": 1_000_000,
            "includeMetrics": False,
        }  # fmt: skip
        client.post_json(f"{prefix}/session_groups", groups_request)
        client.post_json(f"{prefix}/session_groups", {**groups_request, "includeMetrics": True})
        return
    columns += [{"metric": name, "includeInResult": True} for name in metrics]
    groups_request = {
        "experimentName": experiment, "allowedStatuses": HPARAMS_STATUSES,
        "colParams": columns, "startIndex": 0, "sliceSize": 100,
    }  # fmt: skip
    groups = client.json(client.post_json(f"{prefix}/session_groups", groups_request)) or {}
    if columns:
        for order in ("ORDER_ASC", "ORDER_DESC"):
            sorted_columns = [{**columns[-1], "order": order}, *columns[:-1]]
            client.post_json(
                f"{prefix}/session_groups", {**groups_request, "colParams": sorted_columns}
            )
    visibility = json.dumps([True] * len(columns))
    for response_format in ("json", "csv", "latex"):
        query = [
            ("format", response_format), ("columnsVisibility", visibility),
            ("request", json.dumps(groups_request, sort_keys=True)),
        ]  # fmt: skip
        client.get(f"{prefix}/download_data", query)
    for group in groups.get("sessionGroups", []):
        for session in group.get("sessions", []):
            for metric in metrics:
                evals = {
                    "experimentName": experiment,
                    "sessionName": session["name"],
                    "metricName": metric,
                }
                client.post_json(f"{prefix}/metric_evals", evals)


def _timeseries(client: _Client) -> None:
    prefix = f"{NG_PREFIX}/data/plugin/timeseries"
    tags = client.json(client.get(f"{prefix}/tags")) or {}

    def series(request: dict[str, Any]) -> Any:
        answer = client.post_form(f"{prefix}/timeSeries", [("requests", json.dumps([request]))])
        return (client.json(answer) or [{}])[0]

    scalar_runs = tags.get("scalars", {}).get("runTagInfo", {})
    for tag in sorted({tag for _, tag in _run_tags(scalar_runs)}):
        series({"plugin": "scalars", "tag": tag})
    for run, tag in _run_tags(tags.get("histograms", {}).get("runTagInfo", {})):
        series({"plugin": "histograms", "tag": tag, "run": run})
    images = tags.get("images", {}).get("tagRunSampledInfo", {})
    for tag, run in _run_tags(images):
        for sample in range(images[tag][run].get("maxSamplesPerStep", 0)):
            answer = series({"plugin": "images", "tag": tag, "run": run, "sample": sample})
            for datum in (answer.get("runToSeries") or {}).get(run, []):
                client.get("/data/plugin/timeseries/imageData", [("imageId", datum["imageId"])])


def _projector(client: _Client) -> list[str]:
    prefix = "/data/plugin/projector"
    runs = client.json(client.get(f"{prefix}/runs")) or []
    for run in sorted(runs):
        info = client.get(f"{prefix}/info", [("run", run)])
        config = json.loads(info[2]) if info[0] == 200 and isinstance(info[2], str) else {}
        if info[0] == 200 and isinstance(info[2], dict):
            config = info[2]
        for embedding in config.get("embeddings", []):
            name = [("run", run), ("name", embedding["tensorName"])]
            client.get(f"{prefix}/tensor", name)
            client.get(f"{prefix}/metadata", name)
            if embedding.get("sprite", {}).get("imagePath"):
                client.get(f"{prefix}/sprite_image", name)
            if embedding.get("bookmarksPath"):
                client.get(f"{prefix}/bookmarks", name)
    return list(runs)


def _plugins_listing(client: _Client, *, projector_active: bool) -> None:
    """Ask /data/plugins_listing once its answer is final.

    The projector decides whether it is active in a thread its first listing starts, and says
    False until then; with embeddings on disk, wait until it says True.
    """
    deadline = time.monotonic() + tb_server.DATA_TIMEOUT
    while True:
        listing = client.json(client.get("/data/plugins_listing")) or {}
        projector = listing.get("projector", {}).get("enabled")
        if not projector_active or projector or time.monotonic() > deadline:
            return
        time.sleep(0.25)


# Routes whose lists follow the order a data provider lists tags in: the DataProvider API
# returns dicts, and the Rust data server's order changes from one process to the next.
PROVIDER_ORDER_ROUTES = frozenset({"GET /data/plugin/text/tags", "GET /data/plugin/mesh/meshes"})


def compare(
    a: Crawl, b: Crawl, *, per_route: int = 5, any_order: frozenset[str] = frozenset()
) -> list[str]:
    """How crawl ``b`` differs from crawl ``a``, route by route, in readable lines.

    At most ``per_route`` differences are listed for one route, then a count of the rest. The
    lists in the answers of the routes in ``any_order`` (``route_of`` names, such as
    PROVIDER_ORDER_ROUTES) compare as multisets; by default every order counts.
    """
    if any_order:
        a = {key: _sorted_lists(key, answer, any_order) for key, answer in a.items()}
        b = {key: _sorted_lists(key, answer, any_order) for key, answer in b.items()}
    lines: list[str] = []
    lines += [f"{key}: only in the first crawl" for key in a if key not in b]
    lines += [f"{key}: only in the second crawl" for key in b if key not in a]
    for key, expected in a.items():
        if key not in b or b[key] == expected:
            continue
        found = b[key]
        differences: list[str] = []
        if expected[0] != found[0]:
            differences.append(f"status {expected[0]} != {found[0]}")
        if expected[1] != found[1]:
            differences.append(f"content type {expected[1]!r} != {found[1]!r}")
        _differences(expected[2], found[2], "body", differences)
        shown = differences[:per_route]
        if len(differences) > per_route:
            shown.append(f"... and {len(differences) - per_route} more")
        lines += [f"{key}: {line}" for line in shown]
    return lines


def _sorted_lists(key: str, answer: Answer, routes: frozenset[str]) -> Answer:
    if route_of(key) not in routes:
        return answer

    def order(value: Any) -> Any:
        if isinstance(value, dict):
            return {name: order(item) for name, item in value.items()}
        if isinstance(value, list):
            return sorted(
                (order(item) for item in value),
                key=lambda item: json.dumps(item, sort_keys=True, default=repr),
            )
        return value

    status, kind, body = answer
    return status, kind, order(body)


def _differences(a: Any, b: Any, where: str, out: list[str]) -> None:
    if a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a:
            if key not in b:
                out.append(f"{where}: key {key!r} only in the first")
        for key in b:
            if key not in a:
                out.append(f"{where}: key {key!r} only in the second")
        for key in a:
            if key in b:
                _differences(a[key], b[key], f"{where}[{key!r}]", out)
        return
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} items != {len(b)} items")
        for index, (x, y) in enumerate(zip(a, b, strict=False)):
            _differences(x, y, f"{where}[{index}]", out)
        return
    if isinstance(a, bytes) and isinstance(b, bytes):
        out.append(f"{where}: {_describe_bytes(a)} != {_describe_bytes(b)}")
        return
    if isinstance(a, str) and isinstance(b, str) and ("\n" in a or "\n" in b):
        first, second = a.splitlines(), b.splitlines()
        for number, (x, y) in enumerate(zip(first, second, strict=False), 1):
            if x != y:
                out.append(f"{where}: line {number}: {x[:200]!r} != {y[:200]!r}")
                return
        out.append(f"{where}: {len(first)} lines != {len(second)} lines")
        return
    out.append(f"{where}: {_short(a)} != {_short(b)}")


def _describe_bytes(data: bytes) -> str:
    return f"{len(data)} bytes (sha256 {hashlib.sha256(data).hexdigest()[:12]})"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def route_of(key: str) -> str:
    """The route of a route key: its method and path, without query or body."""
    method, target = key.split(" ", 1)
    return f"{method} {target.split(' ', 1)[0].split('?', 1)[0]}"


def route_counts(answers: Crawl) -> dict[str, int]:
    """How many answers each route (``route_of``) has."""
    counts: dict[str, int] = {}
    for key in answers:
        counts[route_of(key)] = counts.get(route_of(key), 0) + 1
    return dict(sorted(counts.items()))


@contextlib.contextmanager
def board_address(logdir: Path) -> Iterator[str]:
    """Start stoker's data server on ``logdir``; yield its ``HOST:PORT``; stop it on exit.

    The contract ``stoker.board`` keeps: ``DataServer(logdir, host=, port=0, reload_interval=)``
    is a context manager that serves TensorBoard's ``TensorBoardDataProvider`` gRPC service on
    a free port once entered, says where in ``address``, and stops serving on exit.
    """
    from stoker.board import DataServer

    with DataServer(logdir, host="127.0.0.1", port=0, reload_interval=1.0) as server:
        address: str = server.address
        yield address


@contextlib.contextmanager
def serve_board_page(logdir: Path) -> Iterator[str]:
    """``stoker board``'s two servers on ``logdir``, in this process; yield the page's URL.

    The data server, TensorBoard's web server asking it, and the page server in front of
    both (the scalar routes answered from the reader's columns, the rest passed to TensorBoard),
    as ``stoker board`` puts them together. On the way out, checks that the page server
    answered scalar requests itself (a page server passing everything on would hide nothing
    from a crawl): ``PAGE_ANSWERED`` holds its counts by route.
    """
    from stoker.board import DataServer
    from stoker.board._page import PageServer

    with (
        DataServer(logdir, host="127.0.0.1", port=0, reload_interval=1.0) as server,
        serve_with_provider(logdir, server.address) as base,
    ):
        inner = urllib.parse.urlsplit(base)
        assert inner.hostname is not None
        assert inner.port is not None
        page = PageServer(
            server.provider, (inner.hostname, inner.port), host="127.0.0.1", port=0
        ).start()
        try:
            yield f"http://127.0.0.1:{page.port}"
        finally:
            page.stop()
        PAGE_ANSWERED.clear()
        PAGE_ANSWERED.update(page.answered)


PAGE_ANSWERED: dict[str, int] = {}
"""The last ``serve_board_page``'s requests answered by the page server itself, by route."""


@contextlib.contextmanager
def rust_data_server(logdir: Path) -> Iterator[str]:
    """TensorBoard's Rust data server, started alone on ``logdir``; yields ``HOST:PORT``.

    TensorBoard's Rust data server, started alone on ``logdir``: a gRPC data provider like
    the one ``stoker board`` serves, to check ``serve_with_provider`` on. Yields ``HOST:PORT``;
    the server is killed and reaped on exit.

    Raises:
        RuntimeError: If it exits or writes no port within ``tb_server.READY_TIMEOUT``.
    """
    from tensorboard_data_server import server_binary

    with tempfile.TemporaryDirectory() as scratch:
        port_file = Path(scratch) / "port"
        command = [
            server_binary(), "--logdir", str(logdir), "--host", "127.0.0.1", "--port", "0",
            "--port-file", str(port_file), "--reload", "1",
        ]  # fmt: skip
        with subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        ) as process:
            try:
                deadline = time.monotonic() + tb_server.READY_TIMEOUT
                while not (port_file.exists() and port_file.read_text().strip()):
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(
                            f"the data server exited ({process.returncode}) or wrote no port"
                        )
                    time.sleep(0.1)
                yield f"127.0.0.1:{int(port_file.read_text())}"
            finally:
                process.kill()
