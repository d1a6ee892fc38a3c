"""Image summaries: arrays (and arrays with boxes drawn on them) as PNG ``Summary.Image`` values.

An image goes through ``pixels`` (torch's layout and scaling to HWC ``uint8``), optionally
``boxes``, then ``_png`` (a fast encoder written with ``zlib``; see its docstring for why not
Pillow). Figures and videos (``figures``, ``videos``) end in :func:`image_summary` too.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from stoker.tensorboard._png import encode_png
from stoker.tensorboard._proto import summary_of, summary_value
from stoker.tensorboard._summary.boxes import draw_boxes
from stoker.tensorboard._summary.inputs import as_numpy, check_tag
from stoker.tensorboard._summary.pixels import to_hwc_uint8

__all__ = ["ImagePayload", "image", "image_summary", "image_summary_payload", "image_with_boxes"]


class ImagePayload(NamedTuple):
    """What ``Summary.Image`` needs: the encoded bytes and the image's size.

    Attributes:
        encoded: The PNG (or GIF) bytes.
        height: Image height in pixels, before any ``rescale``.
        width: Image width in pixels, before any ``rescale``.
        channels: Number of channels (TensorBoard's ``colorspace``).
    """

    encoded: bytes
    height: int
    width: int
    channels: int


def image_summary_payload(
    array: Any,
    dataformats: str = "CHW",
    *,
    boxes: Any = None,
    labels: Sequence[str] | None = None,
    rescale: float = 1.0,
    level: int | None = None,
) -> ImagePayload:
    """Build the PNG and size fields of ``Summary.Image`` for add_image/add_images/boxes.

    Args:
        array: Image data, see :func:`to_hwc_uint8`.
        dataformats: Layout of ``array``, see :func:`to_hwc_uint8`.
        boxes: Optional (N, 4) boxes to draw, see :func:`draw_boxes`.
        labels: Optional label per box.
        rescale: Resize factor applied after drawing (the reported size stays the original,
            as in torch).
        level: zlib level for :func:`encode_png` (None: automatic).

    Returns:
        ``ImagePayload(encoded, height, width, channels)``.
    """
    hwc = to_hwc_uint8(array, dataformats)
    height, width, channels = hwc.shape
    if boxes is not None or labels is not None or rescale != 1:
        hwc = draw_boxes(hwc, np.zeros((0, 4)) if boxes is None else boxes, labels, rescale=rescale)
    return ImagePayload(encode_png(hwc, level), height, width, channels)


def image_summary(tag: str, payload: ImagePayload) -> bytes:
    """Wrap an encoded image in a ``Summary`` holding one ``Summary.Image``."""
    image = {
        "height": payload.height,
        "width": payload.width,
        "colorspace": payload.channels,
        "encoded_image_string": payload.encoded,
    }
    return summary_of(summary_value(tag, {"image": image}))


def image(tag: str, img_tensor: Any, dataformats: str = "CHW") -> bytes:
    """Build an image ``Summary`` (PNG) from an array in ``dataformats`` layout."""
    check_tag(tag)
    return image_summary(tag, image_summary_payload(img_tensor, dataformats))


def image_with_boxes(  # noqa: PLR0917 - mirrors torch's positional signature
    tag: str,
    img_tensor: Any,
    box_tensor: Any,
    rescale: float = 1,
    dataformats: str = "CHW",
    labels: Any = None,
) -> bytes:
    """Build an image ``Summary`` with boxes ``[x1, y1, x2, y2]`` (and labels) drawn on it.

    Labels whose count differs from the number of boxes are dropped with a warning, and the
    boxes are drawn without them, as torch's writer draws them (a logging call does not end a
    run over a cosmetic mismatch).
    """
    check_tag(tag)
    labels = _labels_per_box(box_tensor, labels)
    payload = image_summary_payload(
        img_tensor, dataformats, boxes=box_tensor, labels=labels, rescale=rescale
    )
    return image_summary(tag, payload)


def _labels_per_box(box_tensor: Any, labels: Any) -> list[str] | None:
    """The labels as strings, or None (with a warning) when their count is not the boxes'."""
    if labels is None:
        return None
    texts = [labels] if isinstance(labels, str) else [str(label) for label in labels]
    corners = as_numpy(box_tensor, "box_tensor")
    if corners.ndim == 2 and len(texts) != corners.shape[0]:  # other shapes: draw_boxes raises
        warnings.warn(
            f"labels must have one entry per box ({corners.shape[0]}), got {len(texts)}; the "
            "boxes are drawn without labels, as torch does; pass one label per row of "
            "box_tensor, or labels=None",
            UserWarning,
            stacklevel=4,  # this, image_with_boxes, SummaryWriter.add_image_with_boxes, caller
        )
        return None
    return texts
