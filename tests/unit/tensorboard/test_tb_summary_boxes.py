"""Boxes and labels drawn on images render the same pixels as torch's image_boxes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tb_images import assert_same_image, decode_png, sample_pixels

from stoker.tensorboard._summary.boxes import draw_boxes
from stoker.tensorboard._summary.images import image_summary_payload
from stoker.tensorboard._summary.pixels import to_hwc_uint8

tb_summary = pytest.importorskip("torch.utils.tensorboard.summary")


BOX_CASES = [
    (np.array([[2, 3, 20, 15]]), None, 1),
    (np.array([[2.5, 3.25, 20.75, 15.5], [10, 1, 38, 28]], dtype=np.float32), ["cat", "dog"], 1),
    (np.array([[0, 0, 39, 29], [5, 5, 9, 9]], dtype=np.float64), ["one", ""], 0.5),
    (np.array([[1, 12, 30, 25]], dtype=np.int64), ["label"], 2),
    (np.zeros((0, 4)), None, 1),
]


@pytest.mark.parametrize(("boxes", "labels", "rescale"), BOX_CASES)
def test_boxes_match_torch_rendering(
    boxes: np.ndarray[Any, Any], labels: list[str] | None, rescale: float
) -> None:
    """Boxes, labels and rescaling render the same pixels as torch's image_boxes."""
    image = sample_pixels((3, 30, 40), "float32")
    expected = (
        tb_summary.image_boxes("t", image, boxes, rescale=rescale, dataformats="CHW", labels=labels)
        .value[0]
        .image
    )
    payload = image_summary_payload(image, "CHW", boxes=boxes, labels=labels, rescale=rescale)
    assert_same_image(payload, expected)
    drawn = draw_boxes(to_hwc_uint8(image, "CHW"), boxes, labels, rescale=rescale)
    np.testing.assert_array_equal(drawn, decode_png(expected.encoded_image_string))


def test_boxes_on_rgba_image_match_torch() -> None:
    """Drawing on a four-channel image keeps the alpha channel as torch does."""
    image = sample_pixels((30, 40, 4), "uint8")
    boxes = np.array([[3, 4, 25, 20]])
    expected = tb_summary.image_boxes("t", image, boxes, dataformats="HWC", labels=["x"])
    np.testing.assert_array_equal(
        draw_boxes(image, boxes, ["x"]), decode_png(expected.value[0].image.encoded_image_string)
    )


def test_draw_boxes_does_not_modify_its_input() -> None:
    """draw_boxes returns a new array and leaves the image it was given untouched."""
    image = np.zeros((20, 20, 3), dtype=np.uint8)
    drawn = draw_boxes(image, [[2, 2, 15, 15]], ["a"])
    assert drawn.any()
    assert not image.any()


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: draw_boxes(np.zeros((4, 4, 3), np.uint8), [1, 2, 3, 4]), ValueError, r"\(N, 4\)"),
        (
            lambda: draw_boxes(np.zeros((4, 4, 3), np.uint8), [[0, 0, 2, np.nan]]),
            ValueError,
            "finite",
        ),
        (
            lambda: draw_boxes(np.zeros((4, 4, 3), np.uint8), [[0, 0, 2, 2]], ["a", "b"]),
            ValueError,
            "one entry per box",
        ),
        (
            lambda: draw_boxes(np.zeros((4, 4, 3), np.uint8), [[0, 0, 2, 2]], rescale=0.1),
            ValueError,
            "rescale",
        ),
        (
            lambda: draw_boxes(np.zeros((4, 4, 3), np.uint8), [[0, 0, 2, 2]], rescale="2"),
            TypeError,
            "rescale",
        ),
    ],
)
def test_bad_input_raises_clear_errors(call: Any, error: type[Exception], match: str) -> None:
    """Each invalid argument raises the documented exception naming the problem."""
    with pytest.raises(error, match=match):
        call()
