"""The HTTP comparison harness (``board_http``) and its corpus (``board_corpus``), on TensorBoard.

The harness is what ``stoker board`` is judged by: TensorBoard's HTTP API over stoker's data
provider must answer as over TensorBoard's own Python loader. These tests check the harness
itself: two Python-loader servers on the same files crawl to the same answers; the crawl reaches
every plugin's data routes; the bytes it fetches are those written. The Rust data server's
differences from the Python loader are printed, not asserted: they show what varies between
two providers TensorBoard ships.
"""

from __future__ import annotations

import io
import json
import urllib.parse
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

import board_corpus
import board_http
import numpy as np
import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

WRITERS: dict[str, Callable[[Path], Path]] = {
    "stoker": board_corpus.write_stoker_corpus,
    "torch": board_corpus.write_torch_corpus,
}

# Routes each plugin's page asks, which the crawl must reach with a non-empty answer.
PLUGIN_ROUTES = {
    "scalars": ["GET /data/plugin/scalars/tags", "GET /data/plugin/scalars/scalars",
                "POST /data/plugin/scalars/scalars_multirun"],
    "histograms": ["GET /data/plugin/histograms/tags", "GET /data/plugin/histograms/histograms"],
    "distributions": ["GET /data/plugin/distributions/tags",
                      "GET /data/plugin/distributions/distributions"],
    "images": ["GET /data/plugin/images/tags", "GET /data/plugin/images/images",
               "GET /data/plugin/images/individualImage"],
    "audio": ["GET /data/plugin/audio/tags", "GET /data/plugin/audio/audio",
              "GET /data/plugin/audio/individualAudio"],
    "text": ["GET /data/plugin/text/tags", "GET /data/plugin/text/text"],
    "hparams": ["POST /data/plugin/hparams/experiment", "POST /data/plugin/hparams/session_groups",
                "POST /data/plugin/hparams/metric_evals", "GET /data/plugin/hparams/download_data",
                f"POST {board_http.NG_PREFIX}/data/plugin/hparams/experiment",
                f"POST {board_http.NG_PREFIX}/data/plugin/hparams/session_groups"],
    "pr_curves": ["GET /data/plugin/pr_curves/tags", "GET /data/plugin/pr_curves/pr_curves"],
    "custom_scalars": ["GET /data/plugin/custom_scalars/layout",
                       "GET /data/plugin/custom_scalars/scalars"],
    "mesh": ["GET /data/plugin/mesh/tags", "GET /data/plugin/mesh/meshes",
             "GET /data/plugin/mesh/data"],
    "graphs": ["GET /data/plugin/graphs/info", "GET /data/plugin/graphs/graph",
               "GET /data/plugin/graphs/run_metadata"],
    "timeseries": [f"GET {board_http.NG_PREFIX}/data/plugin/timeseries/tags",
                   f"POST {board_http.NG_PREFIX}/data/plugin/timeseries/timeSeries",
                   "GET /data/plugin/timeseries/imageData"],
    "projector": ["GET /data/plugin/projector/runs", "GET /data/plugin/projector/info",
                  "GET /data/plugin/projector/tensor", "GET /data/plugin/projector/metadata",
                  "GET /data/plugin/projector/sprite_image"],
}  # fmt: skip


@pytest.fixture(scope="module", params=sorted(WRITERS))
def corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus written by one writer (stoker's or torch's), once per module."""
    logdir = tmp_path_factory.mktemp(f"board_{request.param}")
    return WRITERS[request.param](logdir)


@pytest.fixture(scope="module")
def python_crawl(corpus: Path) -> board_http.Crawl:
    """The crawl of a Python-loader TensorBoard on the corpus."""
    with board_http.serve_python(corpus) as base:
        return board_http.crawl(base)


def _answer(crawl: board_http.Crawl, key: str) -> Any:
    status, _, body = crawl[key]
    assert status == 200, (key, crawl[key])
    return body


def _get(crawl: board_http.Crawl, path: str, **query: Any) -> Any:
    return _answer(crawl, f"GET {path}?{urllib.parse.urlencode(query)}")


def _png_pixels(data: bytes) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image)


def test_two_python_loader_servers_answer_alike(
    corpus: Path, python_crawl: board_http.Crawl
) -> None:
    """The harness finds no difference between two servers on the same files.

    A second server on the same files answers every route as the first: the harness itself
    finds no difference where there is none (blob URLs, wall times and orders included).
    """
    with board_http.serve_python(corpus) as base:
        again = board_http.crawl(base)
    assert board_http.compare(python_crawl, again) == []


def test_the_crawl_reaches_every_plugin(python_crawl: board_http.Crawl) -> None:
    """Every plugin of the corpus is active, and the crawl got non-empty answers from its routes.

    Every plugin the corpus writes is listed as active, and the crawl asked each of its data
    routes and got non-empty answers; no route it asked answered with an error.
    """
    listing = _answer(python_crawl, "GET /data/plugins_listing")
    assert {name for name in board_corpus.PLUGINS if listing[name]["enabled"]} == set(
        board_corpus.PLUGINS
    )
    errors = {key: answer[:2] for key, answer in python_crawl.items() if answer[0] != 200}
    assert errors == {}
    for plugin, routes in PLUGIN_ROUTES.items():
        for route in routes:
            answers = [
                body
                for key, (_, _, body) in python_crawl.items()
                if board_http.route_of(key) == route
            ]
            assert any(answers), (plugin, route, len(answers))
    assert _answer(python_crawl, "GET /data/runs") == [
        "train", "train/losses_x", "train/losses_y", "eval", "a/b",
        "hp", "hp/lr_0.1", "hp/lr_0.01", "hp/lr_0.001",
    ]  # fmt: skip


def test_scalars_and_tensors_are_the_written_values(python_crawl: board_http.Crawl) -> None:
    """Scalars, text, meshes and hparams sessions come back as written.

    Scalars come back with their steps, wall times and values; text rendered from the
    written markdown; the mesh's vertices, faces and colours as written; the hparams' sessions.
    """
    loss = _get(python_crawl, "/data/plugin/scalars/scalars", run="train", tag="loss")
    assert loss == [
        [board_corpus.WALL + s, s, pytest.approx(1.0 / (s + 1), rel=1e-6)] for s in range(60)
    ]
    lr_double = _get(python_crawl, "/data/plugin/scalars/scalars", run="train", tag="lr_double")
    assert [value for _, _, value in lr_double] == [1 / 3 + s for s in range(20)]
    notes = _get(python_crawl, "/data/plugin/text/text", run="train", tag="notes/text_summary")
    assert [entry["step"] for entry in notes] == [0, 1, 2]
    assert "<strong>bold</strong>" in notes[0]["text"]
    mesh = "/data/plugin/mesh/data"
    for step, scale in ((0, 1), (1, 2)):
        query: dict[str, Any] = {"run": "train", "tag": "shape", "step": step}
        vertices = _get(python_crawl, mesh, **query, content_type="VERTEX", sample=0)
        assert vertices == (board_corpus.VERTICES[0] * scale).tobytes()
        assert _get(python_crawl, mesh, **query, content_type="FACE", sample=0) == (
            board_corpus.FACES[0].tobytes()
        )
        colors = _get(python_crawl, mesh, **query, content_type="COLOR", sample=0)
        assert colors == board_corpus.COLORS[0].tobytes()
    groups = [
        key for key in python_crawl if key.startswith("POST /data/plugin/hparams/session_groups")
    ]
    hparams = sorted(
        sorted(group["hparams"].items())
        for group in _answer(python_crawl, groups[0])["sessionGroups"]
    )
    written = sorted(
        sorted({**h, "batch": float(h["batch"])}.items()) for h, _ in board_corpus.HPARAMS
    )
    assert hparams == written


def test_blobs_are_the_written_bytes(python_crawl: board_http.Crawl) -> None:
    """Image, audio and projector URLs serve the written pixels, samples and tensor.

    Each image URL serves a PNG of the written pixels (through both the images and the time
    series routes), each audio URL a WAV of the written samples, the projector the tensor.
    """
    images = "/data/plugin/images/images"
    pictures = _get(python_crawl, images, run="train", tag="picture", sample=0)
    assert [entry["step"] for entry in pictures] == [0, 1, 2]
    for entry, pixels in zip(pictures, board_corpus.PICTURE, strict=True):
        png = _answer(python_crawl, f"GET /data/plugin/images/individualImage?{entry['query']}")
        assert np.array_equal(_png_pixels(png), pixels)
    batch = _get(python_crawl, images, run="train", tag="batch", sample=0)
    for entry, pixels in zip(batch, board_corpus.BATCH, strict=True):
        png = _answer(python_crawl, f"GET /data/plugin/images/individualImage?{entry['query']}")
        assert np.array_equal(_png_pixels(png), np.concatenate(list(pixels), axis=1))  # a grid
    request = json.dumps([{"plugin": "images", "tag": "picture", "run": "eval", "sample": 0}])
    series = _answer(
        python_crawl,
        f"POST {board_http.NG_PREFIX}/data/plugin/timeseries/timeSeries "
        + urllib.parse.urlencode([("requests", request)]),
    )
    (datum,) = series[0]["runToSeries"]["eval"]
    png = _get(python_crawl, "/data/plugin/timeseries/imageData", imageId=datum["imageId"])
    assert np.array_equal(_png_pixels(png), np.repeat(board_corpus.EVAL_PICTURE, 3, axis=2))  # RGB
    clips = _get(python_crawl, "/data/plugin/audio/audio", run="train", tag="tone", sample=0)
    for step, entry in enumerate(clips):
        data = _answer(python_crawl, f"GET /data/plugin/audio/individualAudio?{entry['query']}")
        with wave.open(io.BytesIO(data)) as wav:
            assert wav.getframerate() == board_corpus.SAMPLE_RATE
            samples = np.frombuffer(wav.readframes(-1), dtype="<i2") / 32767
        assert np.allclose(samples, board_corpus.TONE[0] * (step + 1) / 2, atol=1e-4)
    tensor = _get(python_crawl, "/data/plugin/projector/tensor", run="train", name="points:00000")
    assert np.array_equal(np.frombuffer(tensor, dtype=np.float32), board_corpus.EMBEDDING.ravel())


def test_rust_data_server_differences_are_reported(
    corpus: Path, python_crawl: board_http.Crawl
) -> None:
    """Crawl ``--load_fast=true`` and print how it differs from the Python loader, route by route.

    Crawl ``--load_fast=true`` (the Rust data server) and print how it differs from the
    Python loader, route by route: what two of TensorBoard's own providers do not agree on.
    """
    with board_http.serve_rust(corpus) as base:
        rust = board_http.crawl(base)
    differences = board_http.compare(python_crawl, rust)
    print(f"\n{len(differences)} differences of the Rust data server from the Python loader:")
    for line in differences:
        print("  " + line[:300])
    assert rust  # the crawl ran; what it found is information, not a verdict


def test_serve_with_provider_reaches_a_grpc_data_provider(corpus: Path) -> None:
    """``serve_with_provider`` on the Rust data server answers as ``--load_fast=true``.

    TensorBoard's web server started by ``serve_with_provider`` on a gRPC data provider (the
    Rust data server, started alone) answers as ``--load_fast=true``, which runs the same server
    behind the same client: the plug-in point for ``stoker board`` works. The lists that follow
    the provider's tag order compare in any order: that order changes with each Rust process.
    """
    with board_http.serve_rust(corpus) as base:
        expected = board_http.crawl(base)
    with (
        board_http.rust_data_server(corpus) as address,
        board_http.serve_with_provider(corpus, address) as base,
    ):
        found = board_http.crawl(base)
    any_order = board_http.PROVIDER_ORDER_ROUTES  # the Rust server's own order varies
    assert board_http.compare(expected, found, any_order=any_order) == []
