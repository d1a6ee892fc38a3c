"""The data provider's own rules: TensorBoard's downsampling and blob keys, bad keys refused."""

from __future__ import annotations

import base64
import gzip
import json
import os
import zlib

import numpy as np
import pytest
from tensorboard.backend.event_processing import data_provider as tb_provider

from stoker.board._provider import (
    RequestError,
    blob_key,
    downsample_indices,
    gzip_fast,
    gzip_pieces,
    parse_blob_key,
)


@pytest.mark.parametrize(
    ("count", "num_points"),
    [(0, 0), (0, 5), (1, 1), (1, 0), (2, 1), (5, 5), (5, 4), (6, 5), (1000, 1000), (10_000, 1000),
     (10_000, 1), (10_000, 2), (2501, 1000), (7, 100)],
)  # fmt: skip
def test_downsampling_keeps_the_points_tensorboard_keeps(count: int, num_points: int) -> None:
    """Downsampling keeps the indices TensorBoard's own provider keeps.

    The indices kept are those TensorBoard's own provider keeps (random.Random(0), the last
    point always), so a series looks the same whichever loader serves it.
    """
    expected = tb_provider._downsample(list(range(count)), num_points)
    assert downsample_indices(count, num_points).tolist() == expected


def test_downsampling_is_the_same_on_every_call() -> None:
    """Until new points arrive, every call gives the same points (the cache is exact)."""
    first = downsample_indices(5000, 300).tolist()
    assert [downsample_indices(5000, 300).tolist() for _ in range(3)] == [first] * 3
    assert downsample_indices(5001, 300).tolist()[-1] == 5000


@pytest.mark.parametrize(
    ("run", "tag"), [("train", "loss"), ("a/b c", "x/y"), ("rün", "tag ✓"), ("", ""), (".", "_")]
)
def test_blob_keys_are_tensorboards_own(run: str, tag: str) -> None:
    """A blob key is what TensorBoard's provider makes for the same blob, and names it again.

    A blob key is what TensorBoard's provider makes for the same blob (so the page's URLs are
    the same), and it names that blob again.
    """
    key = blob_key("defaultExperimentId", "images", run, tag, step=12, index=2)
    assert key == tb_provider._encode_blob_key("defaultExperimentId", "images", run, tag, 12, 2)
    assert parse_blob_key(key) == (run, tag, 12, 2)


def _key(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "key",
    [
        "",
        "!!!",
        "not a key",
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),
        _key({"run": "a"}),
        _key(["e", "images", "run", "tag", 1]),
        _key(["e", "images", "run", "tag", "1", 0]),
        _key(["e", "images", "run", "tag", 1, True]),
        _key(["e", "images", 3, "tag", 1, 0]),
        _key(["e", "images", "run", "tag", 1.5, 0]),
    ],
)
def test_a_malformed_blob_key_is_an_invalid_argument(key: str) -> None:
    """A malformed blob key is INVALID_ARGUMENT, naming the key.

    A key that is not base64 of ``[experiment, plugin, run, tag, step, index]`` with strings
    and ints where they belong is INVALID_ARGUMENT, naming the key.
    """
    with pytest.raises(RequestError, match="blob key") as caught:
        parse_blob_key(key)
    assert caught.value.code == "INVALID_ARGUMENT"
    assert repr(key) in str(caught.value)


_MIB = 1 << 20


@pytest.mark.parametrize(
    ("size", "pieces"),
    [(0, 1), (1, 1), (5000, 1), (8 * _MIB - 1, 1), (8 * _MIB, 1), (16 * _MIB, 2),
     (16 * _MIB + 3, 2), (40 * _MIB + 7, 4)],
)  # fmt: skip
def test_a_gzip_answer_reads_back_whole(
    size: int, pieces: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large answer is gzipped in pieces on every core, and reads back as the whole body.

    Read with ``gzip`` and with a streaming inflater fed 64 KiB at a time, as a browser reads;
    one gzip member, nothing after it. Half the body is JSON, half random bytes.
    """
    monkeypatch.setattr(os, "cpu_count", lambda: 4)  # the pieces do not depend on this machine
    assert gzip_pieces(size) == pieces
    half = size // 2
    text = b'{"wallTime":1700000000.25,"step":7,"value":0.10000000149011612},'
    body = (text * (half // len(text) + 1))[:half] + np.random.default_rng(size).bytes(size - half)
    zipped = gzip_fast(body)
    assert gzip.decompress(zipped) == body
    reader = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    chunk = 65536
    out = [reader.decompress(zipped[at : at + chunk]) for at in range(0, len(zipped), chunk)]
    assert b"".join([*out, reader.flush()]) == body
    assert reader.eof
    assert reader.unused_data == b""
