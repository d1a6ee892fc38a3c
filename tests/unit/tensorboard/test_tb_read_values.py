"""Media values decode on demand: images to the written pixels, audio to the written samples."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
from tb_events import write_calls, write_raw_events
from tb_loaders import accumulate

from stoker.tensorboard import EventFileError, Reader

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


def test_images_decode_on_demand_to_the_written_pixels(tmp_path: Path) -> None:
    """Images keep the writer's PNG bytes (as EventAccumulator sees them) and decode to HWC.

    Like torch's writer, stoker's stores a one-channel image as RGB.
    """
    rng = np.random.default_rng(2)
    rgb = rng.integers(0, 256, size=(6, 5, 3), dtype=np.uint8)
    grey = rng.integers(0, 256, size=(4, 7, 1), dtype=np.uint8)
    calls = [
        ("add_image", ("rgb", rgb, 1), {"dataformats": "HWC"}),
        ("add_image", ("grey", grey, 2), {"dataformats": "HWC"}),
    ]
    reader = Reader(write_calls(tmp_path, calls))
    accumulator = accumulate(tmp_path)
    for tag, pixels in (("rgb", rgb), ("grey", np.repeat(grey, 3, axis=2))):
        (image,) = reader.images(tag)
        (expected,) = accumulator.Images(tag)
        assert image.encoded == expected.encoded_image_string
        assert (image.width, image.height) == (expected.width, expected.height)
        decoded = image.to_numpy()
        assert decoded.shape[2] == image.colorspace
        assert np.array_equal(decoded, pixels)


def test_undecodable_image_raises_event_file_error(tmp_path: Path) -> None:
    """An image whose bytes are not an image raises EventFileError from to_numpy."""
    value = {"tag": "i", "image": {"height": 1, "width": 1, "encoded_image_string": b"nope"}}
    reader = Reader(write_raw_events(tmp_path, [{"summary": {"value": [value]}}]))
    with pytest.raises(EventFileError, match="cannot be decoded"):
        reader.images("i")[0].to_numpy()


def test_audio_decodes_to_the_written_samples(tmp_path: Path) -> None:
    """Audio keeps its metadata and decodes to float samples within 16-bit quantisation."""
    samples = np.sin(np.linspace(0, 20, 800)).astype(np.float32) * 0.5
    reader = Reader(
        write_calls(tmp_path, [("add_audio", ("a", samples, 3), {"sample_rate": 8000})])
    )
    (clip,) = reader.audio("a")
    (expected,) = accumulate(tmp_path).Audio("a")
    assert (clip.sample_rate, clip.length_frames, clip.content_type) == (
        expected.sample_rate, expected.length_frames, expected.content_type,
    )  # fmt: skip
    decoded = clip.to_numpy()
    assert decoded.shape == (800, 1)
    assert np.abs(decoded[:, 0] - samples).max() < 1e-4


def _png_claiming(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` RGB pixels, with almost no pixel data."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(data, zlib.crc32(kind))
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\0" * 64)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize("size", [(9000, 9000), (12000, 9000), (60000, 60000)])
def test_image_claiming_more_pixels_than_its_bytes_hold_is_not_decoded(
    size: tuple[int, int],
) -> None:
    """A PNG claiming 81-3600 million pixels raises EventFileError before Pillow allocates them.

    A 100-byte PNG claiming 81-3600 million pixels raises EventFileError before Pillow
    allocates them (and Pillow's decompression-bomb warning never escapes).
    """
    from stoker.tensorboard import ImageEvent

    image = ImageEvent(1, 0.0, size[0], size[1], 3, _png_claiming(*size))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(
            EventFileError, match=r"claims \d+x\d+ pixels, more than its|decompression bomb"
        ):
            image.to_numpy()
