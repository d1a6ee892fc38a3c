"""Image summaries: arrays (and arrays with boxes drawn on them) as PNG ``Summary.Image`` values.

An image goes through ``pixels`` (torch's layout and scaling to HWC ``uint8``), optionally
``boxes``, then ``_png`` (a fast encoder written with ``zlib``; see its docstring for why not
Pillow). Figures and videos (``figures``, ``videos``) end in :func:`image_summary` too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from stoker.tensorboard._png import encode_png
from stoker.tensorboard._proto import summary_of, summary_value
from stoker.tensorboard._summary.boxes import draw_boxes
from stoker.tensorboard._summary.inputs import check_tag
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
    """Build an image ``Summary`` with boxes ``[x1, y1, x2, y2]`` (and labels) drawn on it."""
    check_tag(tag)
    if isinstance(labels, str):
        labels = [labels]
    if labels is not None:
        labels = [str(label) for label in labels]
    payload = image_summary_payload(
        img_tensor, dataformats, boxes=box_tensor, labels=labels, rescale=rescale
    )
    return image_summary(tag, payload)
