"""Image test data: sample pixel arrays that exercise scaling, and PNG decoding with Pillow."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from PIL import Image

# (shape, dataformats, dtype) of images as add_image / add_images take them.
IMAGE_CASES = [
    ((3, 20, 30), "CHW", "float32"),
    ((20, 30, 3), "HWC", "float64"),
    ((20, 30), "HW", "float32"),
    ((30, 20), "WH", "float16"),
    ((1, 20, 30), "CHW", "float32"),
    ((20, 30, 1), "HWC", "uint8"),
    ((4, 20, 30), "CHW", "float32"),
    ((20, 30, 2), "HWC", "float32"),
    ((30, 3, 20), "WCH", "float64"),
    ((3, 20, 30), "chw", "uint8"),
    ((3, 20, 30), "CHW", "int64"),
    ((3, 9, 11), "CHW", "bool"),
    ((5, 3, 8, 9), "NCHW", "float32"),
    ((11, 8, 9, 1), "NHWC", "float32"),
    ((8, 8, 3, 7), "NHCW", "uint8"),
    ((17, 1, 4, 5), "NCHW", "float64"),
    ((1, 3, 6, 6), "NCHW", "float32"),
]


def decode_png(png: bytes) -> np.ndarray[Any, Any]:
    """Decode PNG (or any Pillow-readable) bytes into an array."""
    return np.asarray(Image.open(io.BytesIO(png)))


def sample_pixels(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray[Any, Any]:
    """Values in and out of range, so that scaling, clipping and truncation all matter."""
    rng = np.random.default_rng(seed)
    if dtype == "uint8":
        return rng.integers(0, 256, shape).astype(np.uint8)
    if dtype == "int64":
        return rng.integers(-2, 3, shape)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    return (rng.random(shape) * 1.4 - 0.2).astype(dtype)


def assert_same_image(payload: Any, expected: Any) -> None:
    """An ImagePayload decodes to the pixels of torch's Summary.Image and has its size fields."""
    np.testing.assert_array_equal(
        decode_png(payload.encoded), decode_png(expected.encoded_image_string)
    )
    assert (payload.height, payload.width, payload.channels) == (
        expected.height,
        expected.width,
        expected.colorspace,
    )
