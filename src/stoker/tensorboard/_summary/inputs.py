"""What every summary builder checks first: tags, arrays (the one ``as_numpy``) and scalars.

Builders accept what torch's writer accepts: Python numbers and nested lists, NumPy arrays, and
torch tensors, which are converted through ``stoker._torch`` (so torch is never imported here,
and is looked at only when the program imported it).
"""

from __future__ import annotations

import operator
import time
from typing import Any

import numpy as np
import numpy.typing as npt

from stoker import _torch

__all__ = [
    "STEP_MAX",
    "STEP_MIN",
    "as_numpy",
    "check_step",
    "check_tag",
    "check_walltime",
    "scalar_to_float",
]

_NUMERIC_KINDS = "biuf"


def as_numpy(value: Any, name: str, *, any_dtype: bool = False) -> npt.NDArray[Any]:
    """Return ``value`` as a NumPy array: a number, nested list, NumPy array or torch tensor.

    Args:
        value: A NumPy array (returned as it is), a torch tensor (detached and moved to the
            CPU; ``bfloat16`` becomes ``float32``), a nested Python list or tuple, or a number.
        name: The argument name used in error messages.
        any_dtype: Accept any dtype (the caller checks it, as ``add_tensor`` does for
            strings); by default only booleans, integers and floats are accepted.

    Returns:
        A NumPy array sharing memory with ``value`` where possible.

    Raises:
        TypeError: If ``value`` is a string, bytes or None, is not rectangular, or (unless
            ``any_dtype``) does not hold booleans, integers or floats.
        ValueError: If ``value`` is a tensor on the meta device (it holds no data).
    """
    if isinstance(value, np.ndarray):
        array: npt.NDArray[Any] = value
    elif _torch.is_tensor(value):
        array = _torch.tensor_to_numpy(value, name)
    elif isinstance(value, (str, bytes)) or value is None:
        raise TypeError(
            f"{name} must be a number, a NumPy array or a torch tensor, got {value!r}; "
            "load the data into an array first"
        )
    else:
        try:
            array = np.asarray(value)
        except (TypeError, ValueError) as err:
            raise TypeError(
                f"{name} must be a rectangular array of numbers, got {type(value).__name__}; "
                "make every row the same length"
            ) from err
        if array.dtype == object:
            raise TypeError(f"{name} must be numeric, got {value!r}; pass numbers or an array")
    if not any_dtype and array.dtype.kind not in _NUMERIC_KINDS:
        raise TypeError(
            f"{name} must hold booleans, integers or floats, got dtype {array.dtype}; "
            "convert it with .astype(np.float32)"
        )
    return array


STEP_MIN = -(1 << 63)
"""The smallest step an ``Event`` holds (its ``step`` is an int64)."""
STEP_MAX = (1 << 63) - 1
"""The largest step an ``Event`` holds."""


def check_step(step: Any, name: str = "global_step") -> int | None:
    """Return ``step`` as an int (or ``None``), accepting NumPy and torch integers.

    Raises:
        TypeError: If it is not an integer.
        ValueError: If it is outside int64, which ``Event.step`` is (torch raises too).
    """
    if step is None:
        return None
    number = step if type(step) is int else _step_int(step, name)
    if not STEP_MIN <= number <= STEP_MAX:
        raise ValueError(
            f"Value out of range: {number}; {name} must be an int in [-2**63, 2**63 - 1] "
            f"(an Event's step is an int64), got {number!r}; pass a smaller step"
        )
    return number


def _step_int(step: Any, name: str) -> int:
    try:
        return operator.index(step)
    except TypeError:
        pass
    if hasattr(step, "item"):
        item = step.item()
        if isinstance(item, int) or (isinstance(item, float) and item.is_integer()):
            return int(item)
    if isinstance(step, float) and step.is_integer():
        return int(step)
    raise TypeError(f"{name} must be an int or None, got {step!r}; pass e.g. the epoch number")


def check_walltime(walltime: Any) -> float:
    """Return ``walltime`` as float seconds, or now when it is ``None``."""
    if walltime is None:
        return time.time()
    if isinstance(walltime, bool) or not isinstance(walltime, (int, float)):
        try:
            return float(walltime)
        except (TypeError, ValueError) as err:
            raise TypeError(f"walltime must be a number of seconds, got {walltime!r}") from err
    return float(walltime)


def check_tag(tag: object, name: str = "tag") -> str:
    """Return ``tag`` if it is a non-empty string.

    Raises:
        TypeError: If ``tag`` is not a str.
        ValueError: If it is empty.
    """
    if not isinstance(tag, str):
        raise TypeError(f"{name} must be a str, got {tag!r}; pass a name such as 'loss'")
    if not tag:
        raise ValueError(f"{name} must be a non-empty str, got {tag!r}; pass a name such as 'loss'")
    return tag


def scalar_to_float(value: Any, name: str = "scalar_value") -> float:
    """Convert a one-element number, array or tensor to a Python float.

    Raises:
        TypeError: If ``value`` is a string or not a real number.
        ValueError: If it does not hold exactly one element.
    """
    kind = type(value)
    if kind is float or kind is int:
        return float(value)
    if isinstance(value, str):
        raise TypeError(
            f"{name} must be a number, got {value!r}; caffe2 blob names are not supported"
        )
    array = as_numpy(value, name, any_dtype=True)
    if array.size != 1:
        raise ValueError(
            f"{name} must hold exactly one element, got shape {array.shape}; "
            "log a single value, e.g. tensor.item() or a mean"
        )
    if array.dtype.kind not in _NUMERIC_KINDS:
        raise TypeError(f"{name} must be a real number, got dtype {array.dtype}; log a number")
    return float(array.reshape(()))
