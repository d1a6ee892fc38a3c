"""Histogram summaries: TensorFlow-style default bins, NumPy bin rules, max_bins, raw buckets.

The layout follows TensorBoard's ``HistogramProto``: statistics plus right bucket edges
(``bucket_limit``) and counts, trimmed to the non-empty range with one empty bucket on the left.
Counting into the default exponential edges is done in O(n) without sorting (see
:func:`_default_bin_counts`); other ``bins`` go through ``np.histogram`` exactly as torch does.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from stoker.tensorboard._proto import summary_of, summary_value
from stoker.tensorboard._summary.inputs import as_numpy, check_tag, scalar_to_float

__all__ = ["default_bins", "histogram", "histogram_proto", "histogram_raw"]


@functools.lru_cache(maxsize=1)
def default_bins() -> np.ndarray[Any, np.dtype[np.float64]]:
    """TensorFlow's default histogram edges: +-1e-12 growing by 1.1 up to 1e20, and 0."""
    edges = []
    edge = 1e-12
    while edge < 1e20:
        edges.append(edge)
        edge *= 1.1
    positive = np.array(edges)
    bins = np.concatenate([-positive[::-1], [0.0], positive])
    bins.setflags(write=False)
    return bins


def _counts_for_sorted_edges(
    values: np.ndarray[Any, np.dtype[np.float64]], edges: np.ndarray[Any, np.dtype[np.float64]]
) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Same counts as ``np.histogram(values, edges)`` for any sorted edges, without sorting."""
    index = np.searchsorted(edges, values, side="right") - 1
    last = len(edges) - 1
    index[values == edges[-1]] = last - 1
    inside = (index >= 0) & (index < last)
    return np.bincount(index[inside], minlength=last)


@functools.lru_cache(maxsize=1)
def _padded_positive_edges() -> np.ndarray[Any, np.dtype[np.float64]]:
    """The positive default edges with -inf before and +inf after, for branch-free lookups."""
    edges = default_bins()
    padded = np.concatenate([[-np.inf], edges[len(edges) // 2 + 1 :], [np.inf]])
    padded.setflags(write=False)
    return padded


_CHUNK = 4096  # values per pass: keeps temporaries small enough to be reused by malloc


def _default_bin_counts(values: np.ndarray[Any, np.dtype[np.float64]]) -> np.ndarray[Any, Any]:
    """Same counts as ``np.histogram(values, default_bins())``, in O(n) without sorting.

    The positive edges grow by 1.1 from 1e-12, so a logarithm of ``|v|`` gives the number of
    positive edges at or below it to within one (the edges carry rounding from repeated
    multiplication); one comparison each way against the real edges makes it exact. A negative
    value counts the edges strictly below its magnitude instead, mirroring the bins. Values are
    processed in chunks so that the temporaries stay small (large fresh arrays cost page faults).
    """
    edges = default_bins()
    padded = _padded_positive_edges()
    half = len(edges) // 2
    last = len(edges) - 1
    scale = 1 / math.log(1.1)
    counts = np.zeros(last, dtype=np.int64)
    for start in range(0, len(values), _CHUNK):
        chunk = values[start : start + _CHUNK]
        magnitude = np.abs(chunk)
        negative = chunk < 0
        with np.errstate(divide="ignore"):
            guess = np.log(magnitude * 1e12)
        guess *= scale
        np.floor(guess, out=guess)
        guess += 1
        np.clip(guess, 0, half, out=guess)
        count = guess.astype(np.intp)
        above = padded[count + 1]
        count += (above < magnitude) | ((above == magnitude) & ~negative)
        below = padded[count]
        count -= (below > magnitude) | ((below == magnitude) & negative)
        index = np.where(negative, half - 1 - count, half + count)
        index[chunk == edges[-1]] = last - 1
        inside = index[(index >= 0) & (index < last)]
        counts += np.bincount(inside, minlength=last)
    return counts


def histogram_proto(
    values: np.ndarray[Any, Any], bins: Any = "tensorflow", max_bins: int | None = None
) -> dict[str, Any]:
    """Compute a ``HistogramProto`` dict the way TensorBoard's writers do.

    Args:
        values: The data; flattened and converted to float64.
        bins: ``"tensorflow"`` for the default exponential edges, a bin count, a NumPy rule name
            (``"auto"``, ``"fd"``, ...) or an array of edges.
        max_bins: Merge neighbouring bins until there are at most this many.

    Returns:
        The fields of a ``HistogramProto``.
    """
    flat = np.asarray(values, dtype=np.float64).reshape(-1)
    if flat.size == 0:
        raise ValueError("values must not be empty; log at least one value")
    if not np.isfinite(flat).all():
        raise ValueError(
            "values must be finite, got NaN or inf; TensorBoard cannot draw them, "
            "filter them out first (values[np.isfinite(values)])"
        )
    if isinstance(bins, str) and bins == "tensorflow":
        limits = default_bins()
        counts = _default_bin_counts(flat)
    else:
        try:
            counts, limits = np.histogram(flat, bins=bins)
        except (ValueError, TypeError) as err:
            raise ValueError(f"bins must be 'tensorflow' or valid for np.histogram: {err}") from err
    if max_bins is not None:
        if not isinstance(max_bins, int) or max_bins < 1:
            raise ValueError(f"max_bins must be a positive int or None, got {max_bins!r}")
        if len(counts) > max_bins:
            group = len(counts) // max_bins
            pad = (-len(counts)) % group
            counts = np.pad(counts, (0, pad)).reshape(-1, group).sum(axis=1)
            limits = np.concatenate([limits[:-1:group], limits[-1:]])
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:
        raise ValueError("values must fall inside the histogram bins; every value is outside them")
    first, last = int(nonzero[0]), int(nonzero[-1])
    # TensorBoard keeps right edges only: keep one empty bucket left of the data so that its
    # left edge is drawn too.
    bucket = counts[first - 1 : last + 1] if first else np.concatenate([[0], counts[: last + 1]])
    bucket_limit = limits[first : last + 2]
    return {
        "min": float(flat.min()),
        "max": float(flat.max()),
        "num": float(flat.size),
        "sum": float(flat.sum()),
        "sum_squares": float(flat.dot(flat)),
        "bucket_limit": np.asarray(bucket_limit, dtype=np.float64),
        "bucket": np.asarray(bucket, dtype=np.float64),
    }


def histogram(
    tag: str, values: Any, bins: Any = "tensorflow", max_bins: int | None = None
) -> bytes:
    """Build a histogram ``Summary`` from raw values."""
    check_tag(tag)
    return summary_of(
        summary_value(tag, {"histo": histogram_proto(as_numpy(values, "values"), bins, max_bins)})
    )


def histogram_raw(  # noqa: PLR0917 - mirrors torch's positional signature
    tag: str,
    min: float,
    max: float,
    num: int,
    sum: float,
    sum_squares: float,
    bucket_limits: Any,
    bucket_counts: Any,
) -> bytes:
    """Build a histogram ``Summary`` from precomputed statistics."""
    check_tag(tag)
    limits = as_numpy(bucket_limits, "bucket_limits").reshape(-1).astype(np.float64)
    counts = as_numpy(bucket_counts, "bucket_counts").reshape(-1).astype(np.float64)
    if len(limits) != len(counts):
        raise ValueError(
            f"bucket_limits and bucket_counts must have the same length, got {len(limits)} "
            f"and {len(counts)}; give one upper limit per bucket"
        )
    if len(limits) == 0:
        raise ValueError("bucket_limits must not be empty; give at least one bucket")
    stats = {"min": min, "max": max, "num": num, "sum": sum, "sum_squares": sum_squares}
    for name, stat in stats.items():
        number = scalar_to_float(stat, name)
        if not math.isfinite(number):
            raise ValueError(f"{name} must be finite, got {stat!r}")
        stats[name] = number
    return summary_of(
        summary_value(tag, {"histo": {**stats, "bucket_limit": limits, "bucket": counts}})
    )
