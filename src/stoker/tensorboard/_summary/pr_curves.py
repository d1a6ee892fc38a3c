"""Precision-recall curve summaries, from labels and predictions or from precomputed counts."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from stoker.tensorboard._proto import (
    DT_FLOAT,
    PLUGIN_PR_CURVES,
    PR_CURVE_PLUGIN_DATA,
    summary_of,
    summary_value,
)
from stoker.tensorboard._summary.inputs import as_numpy, check_tag

__all__ = ["pr_curve", "pr_curve_raw"]

_MIN_COUNT = 1e-7


def _pr_summary(tag: str, data: np.ndarray[Any, Any], num_thresholds: int) -> bytes:
    content = PR_CURVE_PLUGIN_DATA.encode({"version": 0, "num_thresholds": num_thresholds})
    metadata = {"plugin_data": {"plugin_name": PLUGIN_PR_CURVES, "content": content}}
    tensor = {
        "dtype": DT_FLOAT,
        "float_val": np.asarray(data, dtype=np.float32).reshape(-1),
        "tensor_shape": {"dim": [{"size": int(data.shape[0])}, {"size": int(data.shape[1])}]},
    }
    return summary_of(summary_value(tag, {"metadata": metadata, "tensor": tensor}))


def _check_thresholds(num_thresholds: Any) -> int:
    if isinstance(num_thresholds, bool) or not isinstance(num_thresholds, numbers.Integral):
        raise TypeError(f"num_thresholds must be an int, got {num_thresholds!r}")
    if num_thresholds < 2:
        raise ValueError(f"num_thresholds must be at least 2, got {num_thresholds!r}")
    return min(int(num_thresholds), 127)


def pr_curve(
    tag: str,
    labels: Any,
    predictions: Any,
    num_thresholds: int = 127,
    weights: Any = None,
) -> bytes:
    """Build a PR-curve ``Summary`` from binary labels and predictions in [0, 1]."""
    check_tag(tag)
    count = _check_thresholds(num_thresholds)
    truth = as_numpy(labels, "labels").reshape(-1).astype(np.float64)
    scores = as_numpy(predictions, "predictions").reshape(-1).astype(np.float64)
    if truth.size == 0:
        raise ValueError("labels must not be empty")
    if truth.shape != scores.shape:
        raise ValueError(
            f"labels and predictions must have the same number of elements, got {truth.size} "
            f"and {scores.size}"
        )
    if not np.isfinite(scores).all() or scores.min() < 0 or scores.max() > 1:
        raise ValueError("predictions must be finite and lie in [0, 1]")
    weight: Any = 1.0
    if weights is not None:
        weight = as_numpy(weights, "weights").astype(np.float64)
        if weight.size not in (1, truth.size):
            raise ValueError(f"weights must be a scalar or match labels, got shape {weight.shape}")
        weight = weight.reshape(-1) if weight.size > 1 else float(weight.reshape(()))
    buckets = np.floor(scores * (count - 1)).astype(np.int32)
    tp_b = np.bincount(buckets, weights=truth * weight, minlength=count)
    fp_b = np.bincount(buckets, weights=(1.0 - truth) * weight, minlength=count)
    tp = np.cumsum(tp_b[::-1])[::-1]
    fp = np.cumsum(fp_b[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(_MIN_COUNT, tp + fp)
    recall = tp / np.maximum(_MIN_COUNT, tp + fn)
    return _pr_summary(tag, np.stack((tp, fp, tn, fn, precision, recall)), count)


def pr_curve_raw(
    tag: str,
    curves: Sequence[Any],
    num_thresholds: int = 127,
) -> bytes:
    """Build a PR-curve ``Summary`` from six precomputed arrays (tp, fp, tn, fn, p, r)."""
    check_tag(tag)
    count = _check_thresholds(num_thresholds)
    names = ("true_positive_counts", "false_positive_counts", "true_negative_counts",
             "false_negative_counts", "precision", "recall")  # fmt: skip
    arrays = [as_numpy(curve, name).reshape(-1) for curve, name in zip(curves, names, strict=True)]
    lengths = {len(array) for array in arrays}
    if len(lengths) != 1 or 0 in lengths:
        raise ValueError(
            f"{', '.join(names)} must be non-empty and of equal length, got lengths "
            f"{[len(a) for a in arrays]}"
        )
    return _pr_summary(tag, np.stack(arrays), count)
