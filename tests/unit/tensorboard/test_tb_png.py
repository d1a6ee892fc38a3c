"""PNG bytes: the fast encoder round-trips through Pillow; the header gives the channel count."""

from __future__ import annotations

import io
import zlib
from typing import Any

import numpy as np
import pytest
from PIL import Image
from tb_images import decode_png, sample_pixels

from stoker.tensorboard._png import encode_png, png_channels


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("level", [None, 0, 1, 9])
def test_encode_png_round_trips(channels: int, level: int | None) -> None:
    """encode_png writes a valid PNG (CRCs checked by Pillow) that decodes to the input."""
    image = sample_pixels((13, 17, channels), "uint8")
    png = encode_png(image, level)
    Image.open(io.BytesIO(png)).verify()
    decoded = decode_png(png)
    np.testing.assert_array_equal(decoded.reshape(image.shape), image)


def test_encode_png_accepts_two_dimensional_gray() -> None:
    """An (H, W) array is encoded as an 8-bit grayscale PNG."""
    image = sample_pixels((7, 9), "uint8")
    decoded = Image.open(io.BytesIO(encode_png(image)))
    assert decoded.mode == "L"
    np.testing.assert_array_equal(np.asarray(decoded), image)


def test_encode_png_stores_noise_and_compresses_smooth_images() -> None:
    """Noise is stored (no zlib work wasted), while a smooth image still compresses well."""
    noise = sample_pixels((256, 256, 3), "uint8")
    ramp = np.linspace(0, 255, 256).astype(np.uint8)
    smooth = np.stack(np.broadcast_arrays(ramp[:, None], ramp[None, :], ramp[:, None]), axis=2)
    noise_png, smooth_png = encode_png(noise), encode_png(smooth)
    idat = noise_png[noise_png.index(b"IDAT") + 4 :]
    assert idat[1] & 0xC0 == 0  # zlib header: FLEVEL 0, the fastest (stored) setting
    assert len(noise_png) > noise.nbytes
    assert len(smooth_png) < smooth.nbytes // 20
    assert len(zlib.compress(smooth.tobytes(), 6)) > len(smooth_png) // 2
    np.testing.assert_array_equal(decode_png(smooth_png), smooth)


@pytest.mark.parametrize("mode", ["L", "LA", "RGB", "RGBA", "P"])
def test_png_channels_reads_the_colour_type(mode: str) -> None:
    """Channels from IHDR agree with Pillow's bands (a palette image counts as RGB)."""
    out = io.BytesIO()
    Image.new(mode, (3, 2)).save(out, "PNG")
    expected = 3 if mode == "P" else len(mode)
    assert png_channels(out.getvalue()) == expected
    assert png_channels(encode_png(np.zeros((2, 3, expected), np.uint8))) == expected


@pytest.mark.parametrize(
    "data", [b"", b"GIF89a" + bytes(30), encode_png(np.zeros((1, 1), np.uint8))[:25]]
)
def test_png_channels_of_other_bytes_is_zero(data: bytes) -> None:
    """Bytes that are not a whole PNG header give 0 channels rather than an error."""
    assert png_channels(data) == 0


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: encode_png(np.zeros((4, 4, 3))), TypeError, "uint8"),
        (lambda: encode_png(np.zeros((4, 4, 5), np.uint8)), ValueError, "C in 1..4"),
        (lambda: encode_png(np.zeros((4, 4, 3), np.uint8), 10), ValueError, "level"),
    ],
)
def test_bad_input_raises_clear_errors(call: Any, error: type[Exception], match: str) -> None:
    """Each invalid argument raises the documented exception naming the problem."""
    with pytest.raises(error, match=match):
        call()
