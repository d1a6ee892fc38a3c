"""Boxes drawn on an image, as ``add_image_with_boxes`` renders them (Pillow, torch's layout)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from stoker.tensorboard._summary.inputs import as_numpy

__all__ = ["draw_boxes"]


def draw_boxes(
    hwc_uint8: npt.NDArray[np.uint8],
    boxes: Any,
    labels: Sequence[str] | None = None,
    *,
    color: str = "red",
    line_width: int = 2,
    rescale: float = 1.0,
) -> npt.NDArray[np.uint8]:
    """Draw labelled boxes on an image and resize it, as ``add_image_with_boxes`` renders.

    Each box is a closed outline of ``line_width`` pixels. A non-empty label is written in black
    with Pillow's default font on a filled box of ``color`` whose bottom edge is the box's bottom
    edge. The image is then resized by ``rescale`` with Lanczos resampling.

    Args:
        hwc_uint8: Image of shape (H, W, C) with C in 2..4, as from :func:`to_hwc_uint8`.
        boxes: Array of shape (N, 4): xmin, ymin, xmax, ymax in pixels.
        labels: One string per box, or None.
        color: Pillow colour of the outlines and label backgrounds.
        line_width: Outline width in pixels.
        rescale: Factor applied to the width and height after drawing.

    Returns:
        A new ``uint8`` array of shape (int(H * rescale), int(W * rescale), C).

    Raises:
        ValueError: If ``boxes`` is not (N, 4) finite numbers, ``labels`` does not have one
            entry per box, or ``rescale`` gives an empty image.
    """
    from PIL import Image, ImageDraw, ImageFont  # noqa: PLC0415 - deferred until boxes are drawn

    image_array = np.ascontiguousarray(hwc_uint8, dtype=np.uint8)
    corners = as_numpy(boxes, "box_tensor")
    if corners.ndim != 2 or corners.shape[1] != 4:
        raise ValueError(
            f"box_tensor must have shape (N, 4) as xmin, ymin, xmax, ymax, got shape "
            f"{corners.shape}; wrap a single box as [[x1, y1, x2, y2]]"
        )
    if corners.dtype.kind == "f" and not np.isfinite(corners).all():
        raise ValueError("box_tensor must contain only finite coordinates, got NaN or inf")
    if isinstance(labels, str):
        labels = [labels]
    if labels is not None and len(labels) != corners.shape[0]:
        raise ValueError(
            f"labels must have one entry per box ({corners.shape[0]}), got {len(labels)}; "
            "pass one label per row of box_tensor or labels=None"
        )
    if image_array.ndim == 3 and image_array.shape[2] == 1:
        image_array = image_array[:, :, 0]
    if isinstance(rescale, bool) or not isinstance(rescale, (int, float, np.number)):
        raise TypeError(f"rescale must be a number, got {rescale!r}")
    if not math.isfinite(rescale):
        raise ValueError(f"rescale must be a finite positive number, got {rescale!r}")
    height, width = image_array.shape[:2]
    size = (int(width * rescale), int(height * rescale))
    if size[0] < 1 or size[1] < 1:
        raise ValueError(f"rescale must keep the image at least 1x1 pixel, got {rescale!r}")
    image = Image.fromarray(image_array)
    if corners.shape[0]:
        draw = ImageDraw.Draw(image)
        font = ImageFont.load_default()
        for index, (left, top, right, bottom) in enumerate(corners):
            outline = [(left, top), (left, bottom), (right, bottom), (right, top), (left, top)]
            draw.line(outline, width=line_width, fill=color)
            text = None if labels is None else labels[index]
            if text:
                x0, y0, x1, y1 = font.getbbox(text)
                text_height = y1 - y0
                # Same arithmetic (and NumPy scalar types) as torch, so the text lands on the
                # same subpixel position.
                margin = np.ceil(0.05 * text_height)
                draw.rectangle(
                    [(left, bottom - text_height - 2 * margin), (left + (x1 - x0), bottom)],
                    fill=color,
                )
                draw.text(
                    (left + margin, bottom - text_height - margin), text, fill="black", font=font
                )
    if rescale != 1:
        image = image.resize(size, Image.Resampling.LANCZOS)
    drawn: npt.NDArray[np.uint8] = np.array(image, dtype=np.uint8)
    return drawn
