"""Figure summaries: matplotlib figures rendered to pixels as torch's ``add_figure`` does."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from stoker.tensorboard._summary.images import image_summary, image_summary_payload
from stoker.tensorboard._summary.inputs import check_tag
from stoker.tensorboard._summary.pixels import to_hwc_uint8

__all__ = ["figure", "figure_to_hwc"]


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


def figure(tag: str, figure: Any, close: bool = True) -> bytes:
    """Render a matplotlib figure (or a list of them, as a grid) into an image ``Summary``."""
    check_tag(tag)
    pixels = figure_to_hwc(figure, close=close)
    fmt = "NHWC" if pixels.ndim == 4 else "HWC"
    return image_summary(tag, image_summary_payload(to_hwc_uint8(pixels, fmt), "HWC"))
