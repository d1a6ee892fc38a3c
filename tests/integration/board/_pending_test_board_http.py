"""``stoker board``: TensorBoard's HTTP API over stoker's data provider answers as over its own
Python loader, route by route, on the same files (stoker's and torch's).

Rename to ``test_board_http.py`` once ``stoker.board`` exists; until then pytest does not collect
it (its name does not start with ``test_``), and it imports ``stoker.board`` only inside the test.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import board_corpus
import board_http
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


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_board_answers_as_the_python_loader(writer: str, tmp_path: Path) -> None:
    """Every route the page asks (runs, plugin listing, every plugin's tags, data and blobs,
    hparams and time series as the Angular page asks them) answers the same status, content
    type and body through ``stoker board``'s gRPC provider as through TensorBoard's Python
    loader (``--load_fast=false``), on one corpus."""
    logdir = WRITERS[writer](tmp_path / writer)
    with board_http.serve_python(logdir) as base:
        expected = board_http.crawl(base)
    with (
        board_http.board_address(logdir) as address,
        board_http.serve_with_provider(logdir, address) as base,
    ):
        found = board_http.crawl(base)
    assert board_http.compare(expected, found) == []
