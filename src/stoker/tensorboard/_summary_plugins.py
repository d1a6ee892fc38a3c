"""Summary builders for plugin data: text, hparams, PR curves, custom-scalar layouts, meshes.

Each returns encoded ``Summary`` bytes whose ``SummaryMetadata.plugin_data`` names the plugin and
carries its ``plugin_data.proto`` content, exactly as TensorBoard's plugins expect.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from stoker.tensorboard import _messages as pb
from stoker.tensorboard import _messages_plugins as plugin_pb
from stoker.tensorboard._summary import as_numpy, check_tag, summary_of, value_bytes

_TEXT_METADATA = pb.SUMMARY_METADATA.encode(
    {
        "plugin_data": {
            "plugin_name": "text",
            "content": plugin_pb.TEXT_PLUGIN_DATA.encode({"version": 0}),
        }
    }
)
_CUSTOM_SCALARS_METADATA = pb.SUMMARY_METADATA.encode(
    {"plugin_data": {"plugin_name": "custom_scalars"}}
)
CUSTOM_SCALARS_TAG = "custom_scalars__config__"
HPARAMS_EXPERIMENT_TAG = "_hparams_/experiment"
HPARAMS_SESSION_START_TAG = "_hparams_/session_start_info"
HPARAMS_SESSION_END_TAG = "_hparams_/session_end_info"
_MIN_COUNT = 1e-7


def text(tag: str, text_string: str) -> bytes:
    """Build a text-plugin ``Summary``; the tag gets the ``/text_summary`` suffix torch uses."""
    check_tag(tag)
    if not isinstance(text_string, str):
        raise TypeError(f"text_string must be a str, got {text_string!r}")
    tensor = {
        "dtype": pb.DT_STRING,
        "string_val": [text_string.encode("utf-8")],
        "tensor_shape": {"dim": [{"size": 1}]},
    }
    return summary_of(
        value_bytes(tag + "/text_summary", {"metadata": _TEXT_METADATA, "tensor": tensor})
    )


# --- hparams ------------------------------------------------------------------------------------


def _hparams_value(content: dict[str, Any], tag: str) -> bytes:
    payload = plugin_pb.HPARAMS_PLUGIN_DATA.encode({"version": 0, **content})
    metadata = {"plugin_data": {"plugin_name": "hparams", "content": payload}}
    return summary_of(value_bytes(tag, {"metadata": metadata}))


def _hparam_kind(name: str, value: Any) -> tuple[str, int, Any]:
    """Return (Value field, HParamInfo type, Python value) for one hyperparameter value."""
    if isinstance(value, bool | np.bool_):
        return "bool_value", pb.HPARAMS_TYPE_BOOL, bool(value)
    if isinstance(value, numbers.Real):
        return "number_value", pb.HPARAMS_TYPE_FLOAT64, float(value)
    if isinstance(value, str):
        return "string_value", pb.HPARAMS_TYPE_STRING, value
    if isinstance(value, np.ndarray) or type(value).__module__.startswith("torch"):
        array = as_numpy(value, f"hparam_dict[{name!r}]").reshape(-1)
        if array.size >= 1 and array.dtype.kind in "biuf":
            return "number_value", pb.HPARAMS_TYPE_FLOAT64, float(array[0])
    raise ValueError(
        f"hparam_dict[{name!r}] must be a bool, int, float, str or a numeric tensor, got {value!r}"
    )


def hparams(
    hparam_dict: Mapping[str, Any],
    metric_dict: Mapping[str, Any],
    hparam_domain_discrete: Mapping[str, Sequence[Any]] | None = None,
) -> tuple[bytes, bytes, bytes]:
    """Build the experiment, session-start and session-end summaries of the hparams plugin.

    Unlike torch, a ``bool`` value is recorded as a boolean hyperparameter, not as 1.0/0.0.
    """
    if not isinstance(hparam_dict, dict):
        raise TypeError(f"hparam_dict must be a dict, got {hparam_dict!r}")
    if not isinstance(metric_dict, dict):
        raise TypeError(f"metric_dict must be a dict, got {metric_dict!r}")
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise TypeError(f"hparam_domain_discrete must be a dict or None, got {domains!r}")
    for name, domain in domains.items():
        if name not in hparam_dict or not isinstance(domain, list):
            raise TypeError(
                f"hparam_domain_discrete[{name!r}] must be a list for a key of hparam_dict, "
                f"got {domain!r}"
            )
        if not all(isinstance(item, type(hparam_dict[name])) for item in domain):
            raise TypeError(
                f"hparam_domain_discrete[{name!r}] must hold values of the same type as "
                f"hparam_dict[{name!r}], got {domain!r}"
            )
    for name in list(hparam_dict) + list(metric_dict):
        check_tag(name, "hparam_dict/metric_dict key")
    session: dict[str, Any] = {}
    infos: list[dict[str, Any]] = []
    for name, value in hparam_dict.items():
        if value is None:
            continue
        field, kind, python_value = _hparam_kind(name, value)
        session[name] = {field: python_value}
        info: dict[str, Any] = {"name": name, "type": kind}
        if name in domains:
            info["domain_discrete"] = {
                "values": [{field: _hparam_kind(name, item)[2]} for item in domains[name]]
            }
        infos.append(info)
    metrics = [{"name": {"tag": name}} for name in metric_dict]
    experiment = _hparams_value(
        {"experiment": {"hparam_infos": infos, "metric_infos": metrics}}, HPARAMS_EXPERIMENT_TAG
    )
    start = _hparams_value({"session_start_info": {"hparams": session}}, HPARAMS_SESSION_START_TAG)
    end = _hparams_value(
        {"session_end_info": {"status": pb.HPARAMS_STATUS_SUCCESS}}, HPARAMS_SESSION_END_TAG
    )
    return experiment, start, end


# --- PR curves ----------------------------------------------------------------------------------


def _pr_summary(tag: str, data: np.ndarray[Any, Any], num_thresholds: int) -> bytes:
    content = plugin_pb.PR_CURVE_PLUGIN_DATA.encode(
        {"version": 0, "num_thresholds": num_thresholds}
    )
    metadata = {"plugin_data": {"plugin_name": "pr_curves", "content": content}}
    tensor = {
        "dtype": pb.DT_FLOAT,
        "float_val": np.asarray(data, dtype=np.float32).reshape(-1),
        "tensor_shape": {"dim": [{"size": int(data.shape[0])}, {"size": int(data.shape[1])}]},
    }
    return summary_of(value_bytes(tag, {"metadata": metadata, "tensor": tensor}))


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


# --- custom scalars -----------------------------------------------------------------------------


def custom_scalars(layout: Mapping[str, Mapping[str, Sequence[Any]]]) -> bytes:
    """Build the custom-scalars ``Layout`` summary from torch's nested-dict layout."""
    if not isinstance(layout, Mapping):
        raise TypeError(f"layout must be a dict, got {layout!r}")
    categories = []
    for title, charts in layout.items():
        check_tag(title, "layout category")
        if not isinstance(charts, Mapping):
            raise TypeError(f"layout[{title!r}] must be a dict of charts, got {charts!r}")
        entries = []
        for chart_title, spec in charts.items():
            if not isinstance(spec, (list, tuple)) or len(spec) != 2:
                raise ValueError(
                    f"layout[{title!r}][{chart_title!r}] must be ['Multiline' or 'Margin', tags], "
                    f"got {spec!r}"
                )
            kind, tags = spec
            tags = list(tags)
            for item in tags:
                check_tag(item, "layout tag")
            if kind == "Margin":
                if len(tags) != 3:
                    raise ValueError(
                        f"a Margin chart needs exactly 3 tags (value, lower, upper), got {tags!r}"
                    )
                chart = {
                    "title": chart_title,
                    "margin": {
                        "series": [dict(zip(("value", "lower", "upper"), tags, strict=True))]
                    },
                }
            else:
                chart = {"title": chart_title, "multiline": {"tag": tags}}
            entries.append(chart)
        categories.append({"title": title, "chart": entries})
    tensor = {
        "dtype": pb.DT_STRING,
        "string_val": [plugin_pb.LAYOUT.encode({"category": categories})],
        "tensor_shape": {},
    }
    return summary_of(
        value_bytes(CUSTOM_SCALARS_TAG, {"metadata": _CUSTOM_SCALARS_METADATA, "tensor": tensor})
    )


# --- meshes -------------------------------------------------------------------------------------

_MESH_NAMES = {pb.MESH_VERTEX: "VERTEX", pb.MESH_FACE: "FACE", pb.MESH_COLOR: "COLOR"}


def mesh(
    tag: str,
    vertices: Any,
    colors: Any = None,
    faces: Any = None,
    config_dict: Mapping[str, Any] | None = None,
) -> bytes:
    """Build the mesh-plugin ``Summary``: one value per component, all sharing a bitmask."""
    check_tag(tag)
    json_config = "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)
    parts = [(vertices, pb.MESH_VERTEX, "vertices"), (faces, pb.MESH_FACE, "faces"),
             (colors, pb.MESH_COLOR, "colors")]  # fmt: skip
    present = [(as_numpy(v, name), kind, name) for v, kind, name in parts if v is not None]
    if not present or present[0][2] != "vertices":
        raise ValueError("vertices must be given, as an array of shape (B, N, 3)")
    components = 0
    for _, kind, _ in present:
        components |= 1 << kind
    values = []
    for array, kind, name in present:
        if array.ndim != 3 or array.shape[2] != 3 or array.size == 0:
            raise ValueError(f"{name} must have shape (B, N, 3), got {array.shape}")
        if array.dtype.kind not in "biuf":
            raise TypeError(f"{name} must be numeric, got dtype {array.dtype}")
        content = plugin_pb.MESH_PLUGIN_DATA.encode(
            {
                "version": 0,
                "name": tag,
                "content_type": kind,
                "components": components,
                "shape": list(array.shape),
                "json_config": json_config,
            }
        )
        tensor = {
            "dtype": pb.DT_FLOAT,
            "float_val": np.asarray(array, dtype=np.float32).reshape(-1),
            "tensor_shape": {"dim": [{"size": int(size)} for size in array.shape]},
        }
        metadata = {"plugin_data": {"plugin_name": "mesh", "content": content}}
        values.append(
            value_bytes(f"{tag}_{_MESH_NAMES[kind]}", {"metadata": metadata, "tensor": tensor})
        )
    return summary_of(*values)
