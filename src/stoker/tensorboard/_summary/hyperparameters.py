"""Hyperparameter summaries: the experiment, session-start and session-end values of hparams.

``add_hparams`` writes three values with no payload, only ``SummaryMetadata`` whose
``plugin_data`` carries ``HParamsPluginData`` (``api.proto``): the experiment (which
hyperparameters and metrics exist, with discrete domains), the session start (this run's
values) and the session end (status).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from stoker import _torch
from stoker.tensorboard._proto import (
    HPARAMS_PLUGIN_DATA,
    HPARAMS_STATUS_SUCCESS,
    HPARAMS_TYPE_BOOL,
    HPARAMS_TYPE_FLOAT64,
    HPARAMS_TYPE_STRING,
    PLUGIN_HPARAMS,
    summary_of,
    summary_value,
)
from stoker.tensorboard._summary.inputs import as_numpy, check_tag

__all__ = ["hparams"]

HPARAMS_EXPERIMENT_TAG = "_hparams_/experiment"
HPARAMS_SESSION_START_TAG = "_hparams_/session_start_info"
HPARAMS_SESSION_END_TAG = "_hparams_/session_end_info"


def _hparams_value(content: dict[str, Any], tag: str) -> bytes:
    payload = HPARAMS_PLUGIN_DATA.encode({"version": 0, **content})
    metadata = {"plugin_data": {"plugin_name": PLUGIN_HPARAMS, "content": payload}}
    return summary_of(summary_value(tag, {"metadata": metadata}))


def _hparam_kind(name: str, value: Any) -> tuple[str, int, Any]:
    """Return (Value field, HParamInfo type, Python value) for one hyperparameter value."""
    if isinstance(value, bool | np.bool_):
        return "bool_value", HPARAMS_TYPE_BOOL, bool(value)
    if isinstance(value, numbers.Real):
        return "number_value", HPARAMS_TYPE_FLOAT64, float(value)
    if isinstance(value, str):
        return "string_value", HPARAMS_TYPE_STRING, value
    if isinstance(value, np.ndarray) or _torch.is_tensor(value):
        array = as_numpy(value, f"hparam_dict[{name!r}]", any_dtype=True).reshape(-1)
        if array.size >= 1 and array.dtype.kind in "biuf":
            return "number_value", HPARAMS_TYPE_FLOAT64, float(array[0])
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
        {"session_end_info": {"status": HPARAMS_STATUS_SUCCESS}}, HPARAMS_SESSION_END_TAG
    )
    return experiment, start, end
