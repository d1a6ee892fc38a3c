"""``stoker board``: TensorBoard's HTTP API over stoker's provider answers as over its own loader.

``stoker board``: TensorBoard's HTTP API over stoker's data provider answers as over its own
Python loader, route by route, on the same files (stoker's and torch's).

One difference is the protocol's, not the server's: TensorBoard's gRPC ``ScalarData.value`` is
a float32, so a scalar written in double precision arrives rounded to float32 (the Python loader
serves it in full; TensorBoard's own Rust data server drops such series). The corpus's one such
series, ``lr_double``, is compared after rounding both sides to float32.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
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


@contextlib.contextmanager
def _through_provider(logdir: Path) -> Iterator[str]:
    with (
        board_http.board_address(logdir) as address,
        board_http.serve_with_provider(logdir, address) as base,
    ):
        yield base


SERVED: dict[str, Callable[[Path], contextlib.AbstractContextManager[str]]] = {
    "provider": _through_provider,  # TensorBoard's web server on stoker's data server
    "page": board_http.serve_board_page,  # and stoker's page server in front, as stoker board
}


@pytest.mark.parametrize("served", sorted(SERVED))
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_board_answers_as_the_python_loader(writer: str, served: str, tmp_path: Path) -> None:
    """Every route the page asks answers alike through ``stoker board`` and the Python loader.

    Every route the page asks (runs, plugin listing, every plugin's tags, data and blobs,
    hparams and time series as the Angular page asks them) answers the same status, content
    type and body through ``stoker board`` as through TensorBoard's Python loader
    (``--load_fast=false``), on one corpus: through TensorBoard's web server on stoker's
    gRPC provider, and through the page server ``stoker board`` puts in front of it (the
    scalar routes answered from the reader's columns, images and audio from their files,
    every other route passed on).
    """
    logdir = WRITERS[writer](tmp_path / writer)
    with board_http.serve_python(logdir) as base:
        expected = board_http.crawl(base)
    with SERVED[served](logdir) as base:
        found = board_http.crawl(base)
    if served == "page":  # the scalar routes were the page server's own answers
        asked = board_http.route_counts(found)
        answered = board_http.PAGE_ANSWERED
        assert (
            answered["scalars/scalars_multirun"]
            >= asked["POST /data/plugin/scalars/scalars_multirun"]
        )
        json_scalars = [
            key for key in found if key.startswith("GET /data/plugin/scalars/scalars?")
            and "format=csv" not in key and found[key][0] == 200
        ]  # fmt: skip
        assert answered["scalars/scalars"] >= len(json_scalars) > 0
        assert answered["timeseries/timeSeries"] >= 1
        for route in ("images/individualImage", "audio/individualAudio", "timeseries/imageData"):
            blobs = [
                key for key in found
                if board_http.route_of(key).endswith(route) and found[key][0] == 200
            ]  # fmt: skip
            assert answered.get(route, 0) >= len(blobs) > 0, route
    doubles = [key for key, answer in expected.items() if "lr_double" in f"{key} {answer!r}"]
    assert doubles, "the corpus lost its double-precision scalars"
    for key in doubles:
        expected[key] = _as_float32(expected[key])
        found[key] = _as_float32(found[key])
    assert board_http.compare(expected, found) == []


def _as_float32(value: Any) -> Any:
    """Every float in an answer (and in a CSV body's fields) rounded to float32."""
    if isinstance(value, float):
        return float(np.float32(value))
    if isinstance(value, (list, tuple)):
        return type(value)(_as_float32(item) for item in value)
    if isinstance(value, dict):
        return {key: _as_float32(item) for key, item in value.items()}
    if isinstance(value, str) and "," in value:
        return "\n".join(
            ",".join(_float32_text(field) for field in line.split(","))
            for line in value.splitlines()
        )
    return value


def _float32_text(field: str) -> str:
    try:
        return repr(float(np.float32(float(field))))
    except ValueError:
        return field
