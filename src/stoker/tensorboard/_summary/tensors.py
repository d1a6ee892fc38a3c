"""Tensor summaries: any array TensorBoard reads as a ``TensorProto``, for ``add_tensor``.

Arrays are described with ``_proto``'s dtype table (the same the reader decodes with) so that
TensorBoard's ``tensor_util.make_ndarray`` gives them back exactly: bfloat16 and float16 as
their 16 raw bits, complex numbers as (real, imaginary) pairs, strings one entry per element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stoker import _torch
from stoker.tensorboard._proto import (
    DATA_TYPE_BY_NAME,
    DT_BFLOAT16,
    DT_STRING,
    MAX_MESSAGE_BYTES,
    PLUGIN_TENSOR,
    SUMMARY_METADATA,
    summary_of,
    summary_value,
)
from stoker.tensorboard._summary.inputs import as_numpy, check_tag

__all__ = ["tensor", "tensor_proto"]

_TENSOR_METADATA = SUMMARY_METADATA.encode({"plugin_data": {"plugin_name": PLUGIN_TENSOR}})
# TensorBoard's reader has no DT_UINT32/DT_UINT64: those are stored as exact int64 values.
_AS_INT64 = ("uint32", "uint64")
# The NumPy dtypes written as they are (strings are handled apart).
_WRITTEN = {
    name: entry
    for name, entry in DATA_TYPE_BY_NAME.items()
    if entry.code != DT_STRING and name not in _AS_INT64
}


def _shape(shape: tuple[int, ...]) -> dict[str, Any]:
    return {"dim": [{"size": int(size)} for size in shape]}


def tensor_proto(array: np.ndarray[Any, Any], name: str = "tensor") -> dict[str, Any]:
    """Describe an array as a ``TensorProto`` dict readable by TensorBoard's ``make_ndarray``.

    Raises:
        TypeError: If TensorBoard cannot read the dtype.
        ValueError: If uint64 values exceed int64, or the array is 2 GiB or more.
    """
    shape = _shape(array.shape)
    if array.dtype.name == "bfloat16":
        bits = np.ascontiguousarray(array).view(np.uint16).reshape(-1)
        return {"dtype": DT_BFLOAT16, "tensor_shape": shape, "half_val": bits}
    if array.dtype.kind in "US":
        strings = [
            item.encode("utf-8") if isinstance(item, str) else bytes(item)
            for item in array.reshape(-1).tolist()
        ]
        return {"dtype": DT_STRING, "tensor_shape": shape, "string_val": strings}
    if array.dtype.name in _AS_INT64:
        if array.size and int(array.max()) > np.iinfo(np.int64).max:
            raise ValueError(
                f"{name} holds uint64 values above 2**63 - 1, which TensorBoard cannot read; "
                "convert it to float64 or int64 first"
            )
        array = array.astype(np.int64)
    entry = _WRITTEN.get(array.dtype.name)
    if entry is None:
        raise TypeError(
            f"{name} has dtype {array.dtype}, which TensorBoard cannot read; supported: "
            f"{sorted(_WRITTEN)} and strings"
        )
    flat = np.ascontiguousarray(array).reshape(-1)
    if array.nbytes >= MAX_MESSAGE_BYTES:
        raise ValueError(f"{name} is {array.nbytes} bytes; protobuf messages are limited to 2 GiB")
    if entry.field == "half_val":
        values: Any = flat.view(np.uint16)
    elif entry.field in ("scomplex_val", "dcomplex_val"):
        values = flat.view(np.float32 if entry.field == "scomplex_val" else np.float64)
    else:
        values = flat
    return {"dtype": entry.code, "tensor_shape": shape, entry.field: values}


def tensor(tag: str, value: Any) -> bytes:
    """Build a ``Summary`` holding a whole tensor for the generic tensor plugin."""
    check_tag(tag)
    bits = _torch.bfloat16_bits(value)
    if bits is not None:
        proto = {
            "dtype": DT_BFLOAT16,
            "tensor_shape": _shape(bits.shape),
            "half_val": bits.reshape(-1),
        }
    else:
        proto = tensor_proto(as_numpy(value, "tensor", any_dtype=True))
    return summary_of(summary_value(tag, {"metadata": _TENSOR_METADATA, "tensor": proto}))
