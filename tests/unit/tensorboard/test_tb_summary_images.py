"""Image summaries: PNG and size fields equal torch's add_image; boxes whose labels do not fit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tb_images import IMAGE_CASES, assert_same_image, decode_png, sample_pixels

import stoker.tensorboard as stb
from stoker.tensorboard._summary.boxes import draw_boxes
from stoker.tensorboard._summary.images import image_summary_payload
from stoker.tensorboard._summary.pixels import to_hwc_uint8

tb_summary = pytest.importorskip("torch.utils.tensorboard.summary")


@pytest.mark.parametrize(("shape", "dataformats", "dtype"), IMAGE_CASES)
def test_payload_matches_torch_image_summary(
    shape: tuple[int, ...], dataformats: str, dtype: str
) -> None:
    """The PNG decodes to torch's pixels and the size fields equal torch's Summary.Image."""
    array = sample_pixels(shape, dtype)
    expected = tb_summary.image("t", array, dataformats=dataformats).value[0].image
    payload = image_summary_payload(array, dataformats)
    assert_same_image(payload, expected)


@pytest.mark.parametrize(
    "labels", [["a", "b", "c"], ["only one"], "one string"], ids=["more", "fewer", "a-string"]
)
def test_labels_not_one_per_box_draw_the_boxes_as_torch_does_and_warn(
    labels: Any, tmp_path: Path
) -> None:
    """A label count other than the box count: torch's pixels (boxes, no labels) and a warning.

    The warning points at the caller's add_image_with_boxes line.
    """
    from tensorboard.backend.event_processing import event_accumulator
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    image = sample_pixels((3, 30, 40), "float32")
    boxes = np.array([[2, 3, 20, 15], [10, 1, 38, 28]])
    with TorchWriter(str(tmp_path / "torch")) as writer:
        writer.add_image_with_boxes("boxes", image, boxes, labels=labels)
    fits = r"one entry per box \(2\).*without labels"
    with (
        stb.SummaryWriter(tmp_path / "stoker") as writer,
        pytest.warns(UserWarning, match=fits) as seen,
    ):
        writer.add_image_with_boxes("boxes", image, boxes, labels=labels)
    assert seen[0].filename == __file__
    pictures = []
    for run in ("torch", "stoker"):
        accumulator = event_accumulator.EventAccumulator(str(tmp_path / run))
        accumulator.Reload()
        (picture,) = accumulator.Images("boxes")
        pictures.append(picture)
    theirs, ours = pictures
    assert (ours.width, ours.height) == (theirs.width, theirs.height)
    np.testing.assert_array_equal(
        decode_png(ours.encoded_image_string), decode_png(theirs.encoded_image_string)
    )
    unlabelled = draw_boxes(to_hwc_uint8(image, "CHW"), boxes)
    np.testing.assert_array_equal(decode_png(ours.encoded_image_string), unlabelled)
