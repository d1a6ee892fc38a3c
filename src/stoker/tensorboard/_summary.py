"""Summary builders for scalars, histograms and tensors, returning encoded ``Summary`` bytes.

Every builder validates its input, converts it with :func:`as_numpy` (Python numbers, NumPy
arrays, and torch tensors detected by their module name so that torch is never imported) and
returns the bytes of one ``Summary`` message. :class:`ScalarEventEncoder` is the hot path of
``add_scalar``: it caches each tag's constant bytes and splices in the value, step and wall time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from stoker.tensorboard import _messages as pb
from stoker.tensorboard import _wire

_SCALARS_METADATA = pb.SUMMARY_METADATA.encode({"plugin_data": {"plugin_name": "scalars"}})
_TENSOR_METADATA = pb.SUMMARY_METADATA.encode({"plugin_data": {"plugin_name": "tensor"}})
_PACK_DOUBLE = _wire.DOUBLE.pack
_PACK_FLOAT = _wire.FLOAT.pack
_varint = _wire.encode_varint
_MAX_TENSOR_BYTES = 1 << 31


def is_torch_tensor(value: object) -> bool:
    """Tell whether ``value`` is a torch tensor without importing torch."""
    return type(value).__module__.startswith("torch")


def as_numpy(value: Any, name: str) -> np.ndarray[Any, Any]:
    """Convert a number, sequence, NumPy array or torch tensor to a NumPy array.

    Torch tensors are detached and moved to the CPU; ``bfloat16`` tensors become ``float32``.

    Args:
        value: The input.
        name: The argument name, for error messages.

    Returns:
        A NumPy array (not copied when ``value`` already is one).

    Raises:
        TypeError: If the value cannot be turned into a numeric or string array.
    """
    if isinstance(value, np.ndarray):
        return value
    if is_torch_tensor(value):
        tensor = value.detach().cpu()
        if str(tensor.dtype) == "torch.bfloat16":
            tensor = tensor.float()
        return np.asarray(tensor.numpy())
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be a number, a NumPy array or a torch tensor, got {value!r}")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"{name} must be a number, a NumPy array or a torch tensor, got {value!r}"
        ) from err
    if array.dtype == object:
        raise TypeError(f"{name} must be numeric, got {value!r}; pass numbers or an array")
    return array


def check_tag(tag: object, name: str = "tag") -> str:
    """Return ``tag`` if it is a non-empty string, else raise ``TypeError``/``ValueError``."""
    if not isinstance(tag, str):
        raise TypeError(f"{name} must be a str, got {tag!r}; pass a name such as 'loss'")
    if not tag:
        raise ValueError(f"{name} must be a non-empty str, got {tag!r}")
    return tag


def scalar_to_float(value: Any, name: str = "scalar_value") -> float:
    """Convert a one-element number, array or tensor to a Python float."""
    kind = type(value)
    if kind is float or kind is int:
        return float(value)
    if isinstance(value, str):
        raise TypeError(
            f"{name} must be a number, got {value!r}; caffe2 blob names are not supported"
        )
    array = as_numpy(value, name)
    if array.size != 1:
        raise ValueError(
            f"{name} must hold exactly one element, got shape {array.shape}; "
            "log a single value, e.g. tensor.item() or a mean"
        )
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real number, got dtype {array.dtype}")
    return float(array.reshape(()))


def value_bytes(tag: str, body: dict[str, Any]) -> bytes:
    """Encode one ``Summary.Value`` with ``tag`` and the other fields in ``body``."""
    return pb.SUMMARY_VALUE.encode({"tag": tag, **body})


def summary_of(*values: bytes) -> bytes:
    """Wrap encoded ``Summary.Value`` messages in a ``Summary``."""
    return b"".join(b"\x0a" + _varint(len(value)) + value for value in values)


def event_bytes(summary: bytes, step: int | None, wall_time: float) -> bytes:
    """Encode an ``Event`` holding ``summary`` (already encoded)."""
    step_part = b"" if not step else b"\x10" + _varint(step)
    return b"".join(
        (b"\x09", _PACK_DOUBLE(wall_time), step_part, b"\x2a", _varint(len(summary)), summary)
    )


class ScalarEventEncoder:
    """Encodes scalar events with each tag's constant bytes cached.

    Layout of an old-style scalar event::

        09 <wall_time f64> [10 <step varint>] 2a <len> 0a <len> 0a <len> <tag> 15 <value f32>
    """

    def __init__(self) -> None:
        """Start with an empty tag cache."""
        self._prefixes: dict[str, bytes] = {}

    def prefix(self, tag: str) -> bytes:
        """Return the cached bytes between the step and the float value for ``tag``."""
        cached = self._prefixes.get(tag)
        if cached is None:
            check_tag(tag)
            raw = tag.encode("utf-8")
            value = b"\x0a" + _varint(len(raw)) + raw + b"\x15"
            value_len = len(value) + 4
            summary_len = 1 + len(_varint(value_len)) + value_len
            cached = b"\x2a" + _varint(summary_len) + b"\x0a" + _varint(value_len) + value
            if len(self._prefixes) < 100_000:
                self._prefixes[tag] = cached
        return cached

    def encode(self, tag: str, value: float, step: int | None, wall_time: float) -> bytes:
        """Encode an ``Event`` with a ``simple_value`` scalar."""
        prefix = self._prefixes.get(tag) or self.prefix(tag)
        try:
            packed = _PACK_FLOAT(value)
        except OverflowError:
            packed = _wire.pack_float32(value)
        if not step:
            return b"\x09" + _PACK_DOUBLE(wall_time) + prefix + packed
        return b"\x09" + _PACK_DOUBLE(wall_time) + b"\x10" + _varint(step) + prefix + packed


def scalar(
    tag: str, value: float, new_style: bool = False, double_precision: bool = False
) -> bytes:
    """Build a scalar ``Summary`` (``simple_value``, or a scalar tensor when ``new_style``)."""
    check_tag(tag)
    if not new_style:
        return summary_of(value_bytes(tag, {"simple_value": value}))
    tensor = (
        {"dtype": pb.DT_DOUBLE, "double_val": [value]}
        if double_precision
        else {"dtype": pb.DT_FLOAT, "float_val": [value]}
    )
    return summary_of(value_bytes(tag, {"metadata": _SCALARS_METADATA, "tensor": tensor}))


# --- tensors -------------------------------------------------------------------------------------

# NumPy dtype -> (TensorProto dtype, value field); see TensorBoard's tensor_util.make_ndarray.
_TENSOR_FIELDS: dict[str, tuple[int, str]] = {
    "float32": (pb.DT_FLOAT, "float_val"),
    "float64": (pb.DT_DOUBLE, "double_val"),
    "float16": (pb.DT_HALF, "half_val"),
    "bfloat16": (pb.DT_BFLOAT16, "half_val"),
    "int8": (pb.DT_INT8, "int_val"),
    "int16": (pb.DT_INT16, "int_val"),
    "int32": (pb.DT_INT32, "int_val"),
    "uint8": (pb.DT_UINT8, "int_val"),
    "uint16": (pb.DT_UINT16, "int_val"),
    "int64": (pb.DT_INT64, "int64_val"),
    "bool": (pb.DT_BOOL, "bool_val"),
    "complex64": (pb.DT_COMPLEX64, "scomplex_val"),
    "complex128": (pb.DT_COMPLEX128, "dcomplex_val"),
}


def _bfloat16_bits(value: Any) -> np.ndarray[Any, Any] | None:
    """Return the raw bits of a torch ``bfloat16`` tensor as ``uint16``, else ``None``."""
    if not is_torch_tensor(value) or str(value.dtype) != "torch.bfloat16":
        return None
    torch = __import__(type(value).__module__.split(".")[0])
    bits = value.detach().cpu().contiguous().view(torch.int16).numpy()
    return np.asarray(bits).view(np.uint16)


def tensor_proto(array: np.ndarray[Any, Any], name: str = "tensor") -> dict[str, Any]:
    """Describe an array as a ``TensorProto`` dict readable by TensorBoard's ``make_ndarray``."""
    shape = {"dim": [{"size": int(size)} for size in array.shape]}
    if array.dtype.name == "bfloat16":
        bits = np.ascontiguousarray(array).view(np.uint16).reshape(-1)
        return {"dtype": pb.DT_BFLOAT16, "tensor_shape": shape, "half_val": bits}
    if array.dtype.kind in "US":
        strings = [
            item.encode("utf-8") if isinstance(item, str) else bytes(item)
            for item in array.reshape(-1).tolist()
        ]
        return {"dtype": pb.DT_STRING, "tensor_shape": shape, "string_val": strings}
    if array.dtype.name in ("uint32", "uint64"):
        # TensorBoard's reader has no DT_UINT32/DT_UINT64: store them as exact int64 values.
        if array.size and int(array.max()) > np.iinfo(np.int64).max:
            raise ValueError(
                f"{name} holds uint64 values above 2**63 - 1, which TensorBoard cannot read; "
                "convert it to float64 or int64 first"
            )
        array = array.astype(np.int64)
    entry = _TENSOR_FIELDS.get(array.dtype.name)
    if entry is None:
        raise TypeError(
            f"{name} has dtype {array.dtype}, which TensorBoard cannot read; supported: "
            f"{sorted(_TENSOR_FIELDS)} and strings"
        )
    dtype, field = entry
    flat = np.ascontiguousarray(array).reshape(-1)
    if array.nbytes >= _MAX_TENSOR_BYTES:
        raise ValueError(f"{name} is {array.nbytes} bytes; protobuf messages are limited to 2 GiB")
    if field == "half_val":
        values: Any = flat.view(np.uint16)
    elif field in ("scomplex_val", "dcomplex_val"):
        values = flat.view(np.float32 if field == "scomplex_val" else np.float64)
    else:
        values = flat
    return {"dtype": dtype, "tensor_shape": shape, field: values}


def tensor(tag: str, value: Any) -> bytes:
    """Build a ``Summary`` holding a whole tensor for the generic tensor plugin."""
    check_tag(tag)
    bits = _bfloat16_bits(value)
    if bits is not None:
        proto = {
            "dtype": pb.DT_BFLOAT16,
            "tensor_shape": {"dim": [{"size": int(size)} for size in bits.shape]},
            "half_val": bits.reshape(-1),
        }
    else:
        proto = tensor_proto(as_numpy(value, "tensor"))
    return summary_of(value_bytes(tag, {"metadata": _TENSOR_METADATA, "tensor": proto}))
