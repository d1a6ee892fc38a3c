"""Pixels match torch.utils.tensorboard's layout and scaling exactly; bad input fails clearly."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tb_images import IMAGE_CASES, decode_png, sample_pixels

from stoker.tensorboard._summary.pixels import make_grid, to_hwc_uint8

torch = pytest.importorskip("torch")
tb_summary = pytest.importorskip("torch.utils.tensorboard.summary")
tb_utils = pytest.importorskip("torch.utils.tensorboard._utils")


@pytest.mark.parametrize(("shape", "dataformats", "dtype"), IMAGE_CASES)
def test_to_hwc_uint8_matches_torch_scaling(
    shape: tuple[int, ...], dataformats: str, dtype: str
) -> None:
    """to_hwc_uint8 equals torch's convert_to_HWC followed by its scale, clip and cast."""
    array = sample_pixels(shape, dtype, seed=1)
    hwc = tb_utils.convert_to_HWC(array, dataformats)
    scale = 1 if hwc.dtype == np.uint8 else 255
    expected = (hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    result = to_hwc_uint8(array, dataformats)
    assert result.dtype == np.uint8
    assert result.flags.c_contiguous
    np.testing.assert_array_equal(result, expected)


def test_rounding_edges_match_torch() -> None:
    """Values whose float32 product lands next to an integer truncate exactly as torch's do."""
    steps = np.arange(256) / 255
    edges = np.concatenate([steps, np.nextafter(steps, 0), steps + 0.7 / 255])
    array = np.concatenate([edges, [-np.inf, np.inf, 1e300, -1e300]])
    array = np.resize(array, (3, 4, 193))
    with np.errstate(over="ignore"):  # torch's own cast of 1e300 to float32 overflows
        expected = tb_summary.image("t", array, dataformats="CHW").value[0].image
    np.testing.assert_array_equal(
        to_hwc_uint8(array, "CHW"), decode_png(expected.encoded_image_string)
    )


def test_torch_tensors_and_lists_are_accepted() -> None:
    """Torch tensors (with grad, bfloat16) and nested lists give the same pixels as NumPy."""
    base = torch.rand(3, 6, 7, generator=torch.Generator().manual_seed(0), requires_grad=True)
    expected = tb_summary.image("t", base.detach().numpy(), dataformats="CHW").value[0].image
    np.testing.assert_array_equal(
        to_hwc_uint8(base, "CHW"), decode_png(expected.encoded_image_string)
    )
    np.testing.assert_array_equal(
        to_hwc_uint8(base.detach().numpy().tolist(), "CHW"), to_hwc_uint8(base, "CHW")
    )
    half = base.detach().to(torch.bfloat16)
    torch_half = tb_summary.image("t", half, dataformats="CHW").value[0].image
    np.testing.assert_array_equal(
        to_hwc_uint8(half, "CHW"), decode_png(torch_half.encoded_image_string)
    )


def test_result_is_a_new_array() -> None:
    """A uint8 HWC input is copied, so later changes to it do not reach the logged image."""
    array = np.zeros((4, 5, 3), dtype=np.uint8)
    result = to_hwc_uint8(array, "HWC")
    array[:] = 9
    assert not result.any()


@pytest.mark.parametrize(
    ("count", "channels", "ncols", "dtype"),
    [(1, 3, 8, "float32"), (5, 1, 2, "uint8"), (9, 3, 3, "float64"), (10, 3, 4, "int32")],
)
def test_make_grid_matches_torch(count: int, channels: int, ncols: int, dtype: str) -> None:
    """make_grid tiles row by row like torch's helper and keeps the dtype."""
    images = sample_pixels((count, channels, 4, 6), dtype)
    expected = tb_utils.make_grid(images, ncols=ncols)
    result = make_grid(images, ncols=ncols)
    assert result.dtype == expected.dtype
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: to_hwc_uint8(np.zeros((3, 4, 4)), "CHWN"), ValueError, "4 dimensions"),
        (lambda: to_hwc_uint8(np.zeros((3, 4, 4)), "CHH"), ValueError, "ordering"),
        (lambda: to_hwc_uint8(np.zeros((3, 4, 4)), "XYZ"), ValueError, "ordering"),
        (lambda: to_hwc_uint8(np.zeros((3, 4, 4)), "C"), ValueError, "ordering"),
        (lambda: to_hwc_uint8(np.zeros((3, 4, 4)), 3), TypeError, "dataformats"),
        (lambda: to_hwc_uint8(np.zeros((3, 0, 4)), "CHW"), ValueError, "empty"),
        (lambda: to_hwc_uint8(np.zeros((5, 4, 4)), "CHW"), ValueError, "1 to 4 channels"),
        (lambda: to_hwc_uint8(np.zeros((2, 4, 4, 4)), "NCHW"), ValueError, "1 or 3 channels"),
        (lambda: to_hwc_uint8(np.full((3, 2, 2), np.nan), "CHW"), ValueError, "NaN"),
        (lambda: to_hwc_uint8("cat.png", "CHW"), TypeError, "img_tensor"),
        (lambda: to_hwc_uint8([[1, 2], [3]], "HW"), TypeError, "rectangular"),
        (lambda: to_hwc_uint8(np.zeros((2, 2), complex), "HW"), TypeError, "dtype"),
        (lambda: make_grid(np.zeros((2, 3, 4, 4)), ncols=0), ValueError, "ncols"),
        (lambda: make_grid(np.zeros((2, 4, 4)), ncols=2), ValueError, "images_nchw"),
    ],
)
def test_bad_input_raises_clear_errors(call: Any, error: type[Exception], match: str) -> None:
    """Each invalid argument raises the documented exception naming the problem."""
    with pytest.raises(error, match=match):
        call()
