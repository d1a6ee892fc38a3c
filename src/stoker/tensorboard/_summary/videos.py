"""Video summaries: a batch of videos as an animated GIF in a ``Summary.Image``.

The frames follow torch 2.13's ``add_video`` (``_utils._prepare_video``): the N videos of an
(N, T, C, H, W) array are laid out side by side in a grid per frame, the batch padded with
black videos to a power of two and split into 2**((bit_length(N) - 1) // 2) rows; ``uint8``
pixels are kept and other dtypes are scaled by 255 in float32, clipped and truncated, as for
images. torch hands the frames to moviepy; here Pillow writes the GIF, so no moviepy is needed.
A frame with at most 256 distinct colours is stored exactly; a frame with more is reduced to
256 colours with Pillow's fast octree quantizer (GIF's palette limit makes this lossy for any
encoder).
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from stoker.tensorboard._summary.images import ImagePayload, image_summary
from stoker.tensorboard._summary.inputs import as_numpy, check_tag
from stoker.tensorboard._summary.pixels import copy_channels, to_pixels

__all__ = ["video", "video_frames", "video_to_gif"]

_PALETTE_SIZE = 256


def video_frames(array: Any) -> npt.NDArray[np.uint8]:
    """Lay out a batch of videos as one grid per frame, in ``uint8``.

    Args:
        array: Videos of shape (N, T, C, H, W), C in 1..4. ``uint8`` values are kept; other
            dtypes are [0, 1] intensities scaled by 255.

    Returns:
        Array of shape (T, rows * H, cols * W, C).

    Raises:
        TypeError: If ``array`` is not numeric.
        ValueError: If ``array`` is not 5-D, is empty, has more than 4 channels, or holds NaN.
    """
    videos = as_numpy(array, "vid_tensor")
    if videos.ndim != 5:
        raise ValueError(
            f"vid_tensor must have 5 dimensions (N, T, C, H, W), got shape {videos.shape}; "
            "add a batch axis with [None] for a single video"
        )
    if videos.size == 0:
        raise ValueError(f"vid_tensor must not be empty, got shape {videos.shape}")
    count, steps, channels, height, width = videos.shape
    if channels > 4:
        raise ValueError(
            f"vid_tensor must have 1 to 4 channels on axis 2, got shape {videos.shape}; "
            "the layout is (N, T, C, H, W)"
        )
    padded = count if count & (count - 1) == 0 else 1 << count.bit_length()
    rows = 1 << ((count.bit_length() - 1) // 2)
    cols = padded // rows
    frames = np.zeros((steps, rows, height, cols, width, channels), dtype=np.uint8)
    pixels = to_pixels(videos.transpose(0, 1, 3, 4, 2), "vid_tensor")
    for index in range(count):
        row, col = divmod(index, cols)
        copy_channels(frames[:, row, :, col], pixels[index])
    return frames.reshape(steps, rows * height, cols * width, channels)


def _to_gif_frame(frame: npt.NDArray[np.uint8]) -> Any:
    """One (H, W, C) frame as a Pillow image GIF can store: gray (L) or palette (P)."""
    from PIL import Image  # noqa: PLC0415 - Pillow loads only when a video is encoded

    if frame.shape[2] <= 2:  # gray, alpha dropped
        return Image.fromarray(np.ascontiguousarray(frame[:, :, 0]), mode="L")
    rgb = Image.fromarray(np.ascontiguousarray(frame[:, :, :3]), mode="RGB")
    colors = rgb.getcolors(_PALETTE_SIZE)
    if colors is None:
        return rgb.quantize(_PALETTE_SIZE, method=Image.Quantize.FASTOCTREE)
    palette = np.array(sorted(color for _, color in colors), dtype=np.uint32)
    keys = palette[:, 0] << 16 | palette[:, 1] << 8 | palette[:, 2]
    flat = frame[:, :, :3].astype(np.uint32)
    pixel_keys = flat[:, :, 0] << 16 | flat[:, :, 1] << 8 | flat[:, :, 2]
    indexed = Image.fromarray(np.searchsorted(keys, pixel_keys).astype(np.uint8), mode="P")
    indexed.putpalette(palette.astype(np.uint8).tobytes())
    return indexed


def video_to_gif(array: Any, fps: float = 4) -> ImagePayload:
    """Encode a batch of videos as the animated GIF that ``add_video`` logs.

    Args:
        array: Videos of shape (N, T, C, H, W); see :func:`video_frames`. An alpha channel is
            dropped (GIF has no partial transparency).
        fps: Frames per second; each frame lasts 1000 / fps ms (GIF stores hundredths).

    Returns:
        ``ImagePayload(gif, height, width, channels)`` with the grid's height and width and the
        input's channel count, as torch reports them.

    Raises:
        TypeError: If ``fps`` is not a number.
        ValueError: If ``fps`` is not positive and finite, or the array is invalid.
    """
    if isinstance(fps, bool) or not isinstance(fps, (int, float, np.number)):
        raise TypeError(f"fps must be a number, got {fps!r}")
    if not (math.isfinite(fps) and fps > 0):
        raise ValueError(f"fps must be a positive finite number, got {fps!r}")
    frames = video_frames(array)
    _, height, width, channels = frames.shape
    images = [_to_gif_frame(frame) for frame in frames]
    buffer = io.BytesIO()
    images[0].save(
        buffer,
        format="GIF",
        save_all=True,
        append_images=images[1:],
        duration=1000.0 / float(fps),
        loop=0,
    )
    return ImagePayload(buffer.getvalue(), height, width, channels)


def video(tag: str, vid_tensor: Any, fps: Any = 4) -> bytes:
    """Build an animated-GIF image ``Summary`` from an ``(N, T, C, H, W)`` array."""
    check_tag(tag)
    return image_summary(tag, video_to_gif(vid_tensor, fps))
