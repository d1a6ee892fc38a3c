"""Pixels as torch's writer makes them: HWC layout, ``uint8`` scaling, grids of tiles.

The pipeline mirrors ``torch.utils.tensorboard`` (torch 2.13, ``summary.image`` and
``_utils.convert_to_HWC``) value for value: the input is laid out as height x width x channels
(a batch is tiled into a grid of at most eight columns, grayscale is repeated into three
channels), ``uint8`` pixels are kept, and every other dtype is cast to ``float32``, multiplied
by 255, clipped to [0, 255] and truncated to ``uint8``. The work happens in fewer passes than
torch's: scaling on the input as it lies in memory (:func:`to_pixels`), then a
channel-by-channel cast into the output (:func:`copy_channels`, :func:`tile_into`). Images,
videos and embedding sprites all go through here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from stoker.tensorboard._summary.inputs import as_numpy

__all__ = ["copy_channels", "make_grid", "tile_into", "to_hwc_uint8", "to_pixels"]

_FORMATS = {4: "NCHW", 3: "HWC", 2: "HW"}


def _dims_for(dataformats: str, shape: tuple[int, ...], name: str) -> str:
    """Validate ``dataformats`` against ``shape`` and return it upper-cased."""
    if not isinstance(dataformats, str):
        raise TypeError(f"dataformats must be a str such as 'CHW', got {dataformats!r}")
    fmt = dataformats.upper()
    expected = _FORMATS.get(len(fmt))
    if expected is None or sorted(fmt) != sorted(expected):
        raise ValueError(
            f"dataformats must be an ordering of the letters NCHW, HWC or HW, got {dataformats!r}; "
            "for example 'CHW', 'HWC', 'HW' or 'NCHW'"
        )
    if len(shape) != len(fmt):
        raise ValueError(
            f"{name} must have {len(fmt)} dimensions for dataformats {dataformats!r}, got shape "
            f"{tuple(shape)}; pass the dataformats that matches the array's layout"
        )
    if 0 in shape:
        raise ValueError(f"{name} must not be empty, got shape {tuple(shape)}")
    return fmt


def to_pixels(array: npt.NDArray[Any], name: str) -> npt.NDArray[Any]:
    """Return ``uint8`` data unchanged, anything else as float32 scaled by 255 and clipped."""
    if array.dtype == np.uint8:
        return array
    with np.errstate(over="ignore"):
        # Casting to float32 before multiplying matches torch's rounding exactly.
        scaled: npt.NDArray[np.float32] = np.multiply(array, np.float32(255), dtype=np.float32)
    if np.isnan(np.min(scaled)):
        raise ValueError(
            f"{name} must not contain NaN; replace NaN values (for example with np.nan_to_num) "
            "before logging"
        )
    np.clip(scaled, 0, 255, out=scaled)
    return scaled


def _grid_shape(count: int, ncols: int) -> tuple[int, int]:
    """Rows and columns of a grid holding ``count`` tiles, at most ``ncols`` per row."""
    cols = min(count, ncols)
    return -(-count // cols), cols


def copy_channels(dst: npt.NDArray[Any], src: npt.NDArray[Any]) -> None:
    """Cast ``src`` into ``dst`` (last axis: channels; a single source channel is repeated).

    When the source is channel-first in memory, copying one channel at a time reads it
    contiguously, about three times faster than one strided copy.
    """
    if src.shape[-1] == dst.shape[-1] and src.strides[-1] == src.itemsize:
        np.copyto(dst, src, casting="unsafe")
        return
    for channel in range(dst.shape[-1]):
        source = src[..., 0 if src.shape[-1] == 1 else channel]
        np.copyto(dst[..., channel], source, casting="unsafe")


def tile_into(grid: npt.NDArray[Any], tiles: npt.NDArray[Any]) -> None:
    """Copy ``tiles`` (N, H, W, C) row-major into ``grid`` (rows, H, cols, W, C), casting."""
    count = tiles.shape[0]
    cols = grid.shape[2]
    full_rows, rest = divmod(count, cols)
    if full_rows:
        block = tiles[: full_rows * cols].reshape(full_rows, cols, *tiles.shape[1:])
        copy_channels(grid[:full_rows], block.transpose(0, 2, 1, 3, 4))
    if rest:
        copy_channels(grid[full_rows, :, :rest], tiles[full_rows * cols :].transpose(1, 0, 2, 3))


def make_grid(images_nchw: Any, ncols: int = 8) -> npt.NDArray[Any]:
    """Tile a batch of images into one CHW image, row by row, as ``add_images`` does.

    Args:
        images_nchw: Array of shape (N, C, H, W) with C equal to 1 or 3.
        ncols: Maximum number of images per row.

    Returns:
        Array of shape (3, rows * H, min(N, ncols) * W) with the input's dtype; cells past the
        last image are zero. One-channel images are repeated into three channels.

    Raises:
        ValueError: If the shape or ``ncols`` is invalid.
    """
    images = as_numpy(images_nchw, "images_nchw")
    if isinstance(ncols, bool) or not isinstance(ncols, (int, np.integer)) or ncols < 1:
        raise ValueError(f"ncols must be a positive int, got {ncols!r}")
    if images.ndim != 4 or images.shape[1] not in (1, 3) or images.size == 0:
        raise ValueError(
            f"images_nchw must have shape (N, C, H, W) with C in (1, 3), got shape "
            f"{images.shape}; reorder the axes or drop the alpha channel"
        )
    count, _, height, width = images.shape
    rows, cols = _grid_shape(count, int(ncols))
    canvas = np.zeros((3, rows, height, cols, width), dtype=images.dtype)
    tile_into(canvas.transpose(1, 2, 3, 4, 0), images.transpose(0, 2, 3, 1))
    return canvas.reshape(3, rows * height, cols * width)


def to_hwc_uint8(array: Any, dataformats: str = "CHW") -> npt.NDArray[np.uint8]:
    """Convert an image or a batch of images to one HWC ``uint8`` array, exactly as torch does.

    Args:
        array: Image data (NumPy array, torch tensor or nested list). ``uint8`` values are used
            as they are; any other dtype is treated as [0, 1] intensities, multiplied by 255
            in float32, clipped to [0, 255] and truncated.
        dataformats: Layout of ``array``: an ordering of ``CHW``/``HWC`` for one image (C in
            1..4), of ``HW`` for grayscale, or of ``NCHW`` for a batch (C in 1 or 3) that is
            tiled into a grid of at most 8 columns. Case-insensitive.

    Returns:
        A new C-contiguous array of shape (H, W, C); one-channel input becomes three channels.

    Raises:
        TypeError: If ``array`` is not numeric or ``dataformats`` is not a str.
        ValueError: If the shape does not match ``dataformats``, the array is empty, has an
            unsupported channel count, or contains NaN.
    """
    data = as_numpy(array, "img_tensor")
    fmt = _dims_for(dataformats, data.shape, "img_tensor")
    if len(fmt) == 4:
        tiles = data.transpose([fmt.index(d) for d in "NHWC"])
        count, height, width, channels = tiles.shape
        if channels not in (1, 3):
            raise ValueError(
                f"img_tensor must have 1 or 3 channels for a batch, got {channels} in shape "
                f"{data.shape}; check dataformats {dataformats!r}"
            )
        rows, cols = _grid_shape(count, 8)
        grid = np.zeros((rows, height, cols, width, 3), dtype=np.uint8)
        tile_into(grid, to_pixels(tiles, "img_tensor"))
        return grid.reshape(rows * height, cols * width, 3)
    if len(fmt) == 3:
        hwc = data.transpose([fmt.index(d) for d in "HWC"])
        if hwc.shape[2] > 4:
            raise ValueError(
                f"img_tensor must have 1 to 4 channels, got {hwc.shape[2]} in shape "
                f"{data.shape}; check dataformats {dataformats!r}"
            )
    else:
        hwc = data.transpose([fmt.index(d) for d in "HW"])[:, :, None]
    height, width, channels = hwc.shape
    out = np.empty((height, width, 3 if channels == 1 else channels), dtype=np.uint8)
    copy_channels(out, to_pixels(hwc, "img_tensor"))
    return out
