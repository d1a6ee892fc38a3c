"""Turn image-like arrays into the PNG payload of a TensorBoard image summary.

The pipeline mirrors ``torch.utils.tensorboard`` (torch 2.13, ``summary.image`` and
``_utils.convert_to_HWC``) value for value: the input is laid out as height x width x channels
(a batch is tiled into a grid of at most eight columns, grayscale is repeated into three
channels), ``uint8`` pixels are kept, and every other dtype is cast to ``float32``, multiplied
by 255, clipped to [0, 255] and truncated to ``uint8``. The work happens in fewer passes than
torch's (scaling on the input as it lies in memory, then a channel-by-channel cast into the
output) and the PNG is written directly with ``zlib`` instead of Pillow; see
:func:`stoker.tensorboard._png.encode_png` for why.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from stoker.tensorboard._png import encode_png

__all__ = [
    "ImagePayload",
    "as_numpy",
    "draw_boxes",
    "figure_to_hwc",
    "image_summary_payload",
    "make_grid",
    "to_hwc_uint8",
]

_FORMATS = {4: "NCHW", 3: "HWC", 2: "HW"}


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


def as_numpy(value: Any, name: str) -> npt.NDArray[Any]:
    """Return ``value`` as a NumPy array without importing torch.

    Args:
        value: A NumPy array, a torch tensor (detached and moved to the CPU; ``bfloat16`` becomes
            ``float32``), a nested Python list or tuple, or a Python number.
        name: The argument name used in error messages.

    Returns:
        A NumPy array sharing memory with ``value`` where possible.

    Raises:
        TypeError: If ``value`` is not numeric array data.
    """
    if isinstance(value, np.ndarray):
        array: npt.NDArray[Any] = value
    elif type(value).__module__.startswith("torch"):
        tensor = value.detach()
        if tensor.device.type == "meta":
            raise ValueError(
                f"{name} must hold data, got a tensor on the meta device; "
                "materialize it (for example with .to('cpu')) before logging"
            )
        tensor = tensor.cpu()
        if str(tensor.dtype) == "torch.bfloat16":
            tensor = tensor.float()
        array = np.asarray(tensor.numpy())
    elif isinstance(value, (str, bytes)):
        raise TypeError(
            f"{name} must be a NumPy array, torch tensor or list of numbers, got {value!r}; "
            "load the image into an array first"
        )
    else:
        try:
            array = np.asarray(value)
        except ValueError as err:
            raise TypeError(
                f"{name} must be a rectangular array of numbers, got {type(value).__name__}; "
                "make every row the same length"
            ) from err
    if array.dtype.kind not in "biuf":
        raise TypeError(
            f"{name} must hold booleans, integers or floats, got dtype {array.dtype}; "
            "convert it with .astype(np.float32)"
        )
    return array


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


def _to_pixels(array: npt.NDArray[Any], name: str) -> npt.NDArray[Any]:
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


def _copy_channels(dst: npt.NDArray[Any], src: npt.NDArray[Any]) -> None:
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


def _tile_into(grid: npt.NDArray[Any], tiles: npt.NDArray[Any]) -> None:
    """Copy ``tiles`` (N, H, W, C) row-major into ``grid`` (rows, H, cols, W, C), casting."""
    count = tiles.shape[0]
    cols = grid.shape[2]
    full_rows, rest = divmod(count, cols)
    if full_rows:
        block = tiles[: full_rows * cols].reshape(full_rows, cols, *tiles.shape[1:])
        _copy_channels(grid[:full_rows], block.transpose(0, 2, 1, 3, 4))
    if rest:
        _copy_channels(grid[full_rows, :, :rest], tiles[full_rows * cols :].transpose(1, 0, 2, 3))


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
    _tile_into(canvas.transpose(1, 2, 3, 4, 0), images.transpose(0, 2, 3, 1))
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
        _tile_into(grid, _to_pixels(tiles, "img_tensor"))
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
    _copy_channels(out, _to_pixels(hwc, "img_tensor"))
    return out


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


def figure_to_hwc(figure: Any, close: bool = True) -> npt.NDArray[np.uint8]:
    """Render a matplotlib figure, or a list of figures, to RGB pixels.

    Rendering uses matplotlib's Agg canvas as torch's ``figure_to_image`` does, so the pixels
    are the same (as HWC instead of CHW).

    Args:
        figure: A ``matplotlib.figure.Figure`` or a list of figures of equal size.
        close: Close each figure after rendering (``pyplot.close``).

    Returns:
        ``uint8`` array of shape (H, W, 3), or (N, H, W, 3) for a list.

    Raises:
        ImportError: If matplotlib is not installed.
        TypeError: If ``figure`` is not a figure or a list of figures.
        ValueError: If the list is empty or the figures differ in size.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415 - optional
        from matplotlib.figure import Figure  # noqa: PLC0415 - optional dependency
    except ImportError as err:
        raise ImportError(
            "add_figure needs matplotlib; install it with `pip install matplotlib`"
        ) from err

    def render(one: Any) -> npt.NDArray[np.uint8]:
        if not isinstance(one, Figure):
            raise TypeError(
                f"figure must be a matplotlib Figure or a list of them, got {type(one).__name__}"
            )
        canvas: Any = FigureCanvasAgg(one)
        canvas.draw()
        rgb: npt.NDArray[np.uint8] = np.asarray(canvas.buffer_rgba())[:, :, :3].copy()
        if close:
            import matplotlib.pyplot as plt  # noqa: PLC0415 - optional, only when closing

            plt.close(one)
        return rgb

    if not isinstance(figure, (list, tuple)):
        return render(figure)
    if not figure:
        raise ValueError("figure must be a Figure or a non-empty list of figures, got []")
    frames = [render(one) for one in figure]
    if len({frame.shape for frame in frames}) != 1:
        raise ValueError(
            f"figure list must hold figures of one size, got pixel sizes "
            f"{[frame.shape[:2] for frame in frames]}; give them the same figsize and dpi"
        )
    return np.stack(frames)


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
