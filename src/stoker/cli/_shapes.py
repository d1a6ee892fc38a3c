"""The demo's embedded dataset: small grayscale pictures of shapes, drawn from a seed.

Nothing is downloaded: every image is drawn with NumPy from ``(seed, index)``, so the same seed
gives the same dataset on every machine. Each class is a shape (circle, square, triangle, cross,
ring, diamond, horizontal bar, vertical bar) at a random position, size and stroke, with noise.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["CLASSES", "SIZE", "draw_shapes"]

SIZE = 28
CLASSES = ("circle", "square", "triangle", "cross", "ring", "diamond", "hbar", "vbar")

_YY, _XX = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)


def _mask(label: int, cy: float, cx: float, r: float, stroke: float) -> npt.NDArray[np.bool_]:
    """Return the pixels covered by shape ``label`` centred at (cy, cx) with radius ``r``."""
    dy, dx = _YY - cy, _XX - cx
    name = CLASSES[label]
    if name == "circle":
        return np.asarray(dy * dy + dx * dx <= r * r)
    if name == "square":
        return np.asarray((np.abs(dy) <= r * 0.85) & (np.abs(dx) <= r * 0.85))
    if name == "triangle":
        return np.asarray((dy <= r * 0.8) & (dy >= -r) & (np.abs(dx) <= (dy + r) * 0.6))
    if name == "cross":
        arm = (np.abs(dy) <= stroke) | (np.abs(dx) <= stroke)
        return np.asarray(arm & (np.abs(dy) <= r) & (np.abs(dx) <= r))
    if name == "ring":
        d2 = dy * dy + dx * dx
        return np.asarray((d2 <= r * r) & (d2 >= (r - stroke * 1.6) ** 2))
    if name == "diamond":
        return np.asarray(np.abs(dy) + np.abs(dx) <= r)
    if name == "hbar":
        return np.asarray((np.abs(dy) <= stroke) & (np.abs(dx) <= r))
    return np.asarray((np.abs(dx) <= stroke) & (np.abs(dy) <= r))  # vbar


def draw_shapes(count: int, seed: int = 0) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """Draw ``count`` labelled shape images from ``seed``.

    Args:
        count: How many images to draw; must be positive.
        seed: The seed; image ``i`` depends only on ``(seed, i)``.

    Returns:
        ``(images, labels)``: float32 images of shape ``(count, 28, 28)`` in [0, 1] and int64
        labels in ``range(len(CLASSES))``, balanced across classes.

    Raises:
        ValueError: If ``count`` is not positive.
    """
    if count <= 0:
        raise ValueError(f"count must be a positive int, got {count!r}")
    images = np.empty((count, SIZE, SIZE), dtype=np.float32)
    labels = np.arange(count, dtype=np.int64) % len(CLASSES)
    for i in range(count):
        rng = np.random.default_rng((seed, i))
        r = float(rng.uniform(6.0, 11.0))
        cy, cx = rng.uniform(r + 1.0, SIZE - r - 1.0, size=2)
        stroke = float(rng.uniform(1.2, 2.2))
        shape = _mask(int(labels[i]), float(cy), float(cx), r, stroke).astype(np.float32)
        intensity = rng.uniform(0.6, 1.0)
        noise = rng.normal(0.0, 0.15, size=(SIZE, SIZE))
        images[i] = np.clip(shape * intensity + noise, 0.0, 1.0)
    return images, labels
