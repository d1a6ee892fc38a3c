"""Collation: turning a list of samples into one batch, NumPy-first.

The rules follow ``torch.utils.data._utils.collate`` (torch 2.13), with NumPy arrays where torch
makes tensors:

* NumPy arrays are stacked into one array with a new first dimension (arrays of strings or
  objects raise ``TypeError``); NumPy scalars become a 1-d array of their dtype;
* Python ``int`` becomes ``int64``, ``float`` becomes ``float64``, ``bool`` becomes ``bool``
  (torch's dtypes; a batch of ints mixed with floats becomes ``float32``, as torch does);
* ``str`` and ``bytes`` are returned as the sequence they came in: the list of samples at the
  top level, a tuple inside a namedtuple or sequence (as torch returns them);
* mappings, namedtuples and other sequences recurse per key or position (tuples become lists,
  as in torch; sequences of unequal lengths raise ``RuntimeError``);
* torch tensors, when the user has torch, are stacked with ``torch.stack``. torch is never
  imported: tensors are recognised (and stacked) through :mod:`stoker._torch`, only once the
  user has imported torch.

Samples whose arrays differ in shape raise an error naming the shapes and their positions in
the batch. A batch whose elements do not share a type is collated only where torch collates it
(numbers of mixed types promote as ``torch.tensor`` promotes them: an int with a float gives the
float's dtype, a Python float counts as ``float32``); elsewhere it raises torch's exception type
with torch's text, then the positions and types found, never a NaN, string or object array.
:func:`collate` takes a ``collate_fn_map`` from types to functions, checked first by
exact type then with ``isinstance`` in insertion order, as torch does.
"""

from __future__ import annotations

import collections.abc
import copy
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from stoker import _torch
from stoker._checks import torch_first
from stoker.data._errors import ValueRuntimeError

__all__ = [
    "collate",
    "default_collate",
    "default_collate_fn_map",
    "default_convert",
    "map_arrays",
]

CollateFnMap = dict[type | tuple[type, ...], Callable[..., Any]]

_STR_OR_OBJECT_DTYPE = re.compile(r"[SaUO]")
_NUMERIC_KINDS = frozenset("biufc")
_PLAIN = frozenset((np.ndarray,))
_FLOAT = frozenset((float,))
_INT = frozenset((int,))
_BOOL = frozenset((bool,))
_RAGGED_RAISES = np.lib.NumpyVersion(np.__version__) >= "1.24.0"
"""Whether ``np.array`` raises on arrays of unequal shapes (older NumPy warns, makes objects)."""


def _types_of(batch: Sequence[Any]) -> frozenset[type]:
    return frozenset(map(type, batch))


_UNSUPPORTED = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


class _TensorKeyMeta(type):
    """Makes ``isinstance(x, TorchTensor)`` ask the torch boundary (no torch import)."""

    def __instancecheck__(cls, instance: object) -> bool:
        return _torch.is_tensor(instance)


class TorchTensor(metaclass=_TensorKeyMeta):
    """Stands for ``torch.Tensor`` as a key of :data:`default_collate_fn_map`."""


def _same_mapping_type(original: Any, values: dict[Any, Any]) -> Any:
    """Return ``values`` in a mapping of ``original``'s type, as torch's collation does.

    A mutable mapping is shallow-copied and updated (keeping extra state such as a defaultdict's
    factory); another mapping type is called with the dict; a type that cannot be rebuilt that
    way gives a plain dict.
    """
    try:
        if isinstance(original, collections.abc.MutableMapping):
            clone = copy.copy(original)
            clone.update(values)
            return clone
        return type(original)(values)
    except TypeError:
        return values


def _same_sequence_type(original: Any, values: list[Any]) -> Any:
    """Return ``values`` in a sequence of ``original``'s type, as torch's collation does.

    A mutable sequence is shallow-copied and filled in place; another sequence type is called
    with the list; a type that cannot be rebuilt that way gives the plain list.
    """
    try:
        if isinstance(original, collections.abc.MutableSequence):
            clone = copy.copy(original)
            for position, value in enumerate(values):
                clone[position] = value
            return clone
        return type(original)(values)
    except TypeError:
        return values


def default_convert(data: Any) -> Any:
    """Convert a sample without batching, as torch's ``default_convert`` but keeping NumPy.

    NumPy arrays and scalars and torch tensors are returned as they are; mappings, namedtuples
    and sequences are rebuilt with their items converted (tuples become lists, as in torch);
    anything else is returned unchanged. The loader uses it when automatic batching is off.

    Args:
        data: one sample.

    Returns:
        The converted sample.
    """
    if _torch.is_tensor(data) or isinstance(data, (np.ndarray, np.generic, str, bytes)):
        return data
    data_type = type(data)
    if isinstance(data, collections.abc.Mapping):
        return _same_mapping_type(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return data_type(*(default_convert(item) for item in data))
    if isinstance(data, tuple):
        return [default_convert(item) for item in data]
    if isinstance(data, collections.abc.Sequence):
        return _same_sequence_type(data, [default_convert(item) for item in data])
    return data


def map_arrays(data: Any, convert: Callable[[Any], Any]) -> Any:
    """Return ``data`` with each NumPy array or scalar leaf replaced by ``convert(leaf)``.

    Containers are rebuilt with their own types (mappings, namedtuples, tuples, lists, other
    sequences, as the collation made them); arrays of strings or objects, NumPy strings, and
    every other leaf are kept. The loader turns collated batches into torch's this way.
    """
    data_type = type(data)
    if data_type is np.ndarray and data.dtype.kind in _NUMERIC_KINDS:
        return convert(data)  # the common leaf, decided in one look (the door's every batch)
    if data_type is list:
        return [map_arrays(item, convert) for item in data]
    if isinstance(data, (np.ndarray, np.generic)):
        if isinstance(data, (np.str_, np.bytes_)) or (
            isinstance(data, np.ndarray) and _STR_OR_OBJECT_DTYPE.search(data.dtype.str)
        ):
            return data
        return convert(data)
    if _torch.is_tensor(data) or isinstance(data, (str, bytes)):
        return data
    if data_type is dict:
        return {key: map_arrays(value, convert) for key, value in data.items()}
    if isinstance(data, collections.abc.Mapping):
        return _same_mapping_type(data, {k: map_arrays(data[k], convert) for k in data})
    if isinstance(data, tuple):
        items = (map_arrays(item, convert) for item in data)
        return data_type(*items) if hasattr(data, "_fields") else data_type(items)
    if isinstance(data, collections.abc.Sequence):
        return _same_sequence_type(data, [map_arrays(item, convert) for item in data])
    return data


def _shape_mismatch(shapes: Sequence[tuple[int, ...]]) -> ValueRuntimeError:
    """The error for samples of unequal shapes: torch.stack's text, then every shape."""
    entry = next(position for position, shape in enumerate(shapes) if shape != shapes[0])
    return ValueRuntimeError(
        f"stack expects each tensor to be equal size, but got {list(shapes[0])} at entry 0 and "
        f"{list(shapes[entry])} at entry {entry}: default_collate stacks the samples of a "
        f"batch, which must have equal shapes, got {_describe_shapes(shapes)}; resize or pad "
        "the samples, or pass a collate_fn"
    )


def _describe_positions(labels: Sequence[str]) -> str:
    """Group the positions of a batch by label: ``"shape (2,) at positions [0, 1]; ..."``."""
    groups: dict[str, list[int]] = {}
    for position, label in enumerate(labels):
        groups.setdefault(label, []).append(position)
    parts = []
    for label, positions in groups.items():
        shown = ", ".join(str(p) for p in positions[:8]) + (", ..." if len(positions) > 8 else "")
        parts.append(f"{label} at positions [{shown}]")
    return "; ".join(parts)


def _describe_shapes(shapes: Sequence[tuple[int, ...]]) -> str:
    return _describe_positions([f"shape {shape}" for shape in shapes])


def _mixed_types(error: type[Exception], torch_text: str, batch: Sequence[Any]) -> Exception:
    """The error torch raises for a batch mixing types: its text, then the types found."""
    found = _describe_positions([type(item).__name__ for item in batch])
    return error(
        torch_first(
            torch_text,
            "default_collate: the samples of a batch must share a type that can be collated, "
            f"got {found}; make the samples consistent or pass a collate_fn",
        )
    )


_PYTHON_SCALAR_DTYPES: dict[type, np.dtype[Any]] = {
    bool: np.dtype(np.bool_),
    int: np.dtype(np.int64),
    float: np.dtype(np.float32),  # torch's default float dtype
    complex: np.dtype(np.complex64),  # and its default complex dtype
}
_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _scalar_dtype(item: Any, batch: Sequence[Any]) -> np.dtype[Any] | None:
    """The dtype ``torch.tensor`` infers for one element of a list of numbers.

    None for a sequence (torch then fails to fill it); raise torch's error for what it cannot
    infer.
    """
    dtype = _PYTHON_SCALAR_DTYPES.get(type(item))
    if dtype is not None:
        return dtype
    if isinstance(item, (np.generic, np.ndarray)) and item.dtype.kind in _KIND_RANK:
        return None if np.ndim(item) else item.dtype
    for base, base_dtype in _PYTHON_SCALAR_DTYPES.items():
        if isinstance(item, base):
            return base_dtype
    if isinstance(item, (str, bytes)):
        raise _mixed_types(TypeError, f"new(): invalid data type '{type(item).__name__}'", batch)
    if isinstance(item, (collections.abc.Sequence, np.ndarray)):
        return None
    raise _mixed_types(RuntimeError, f"Could not infer dtype of {type(item).__name__}", batch)


def _collate_mixed_numbers(batch: Sequence[Any]) -> Any:
    """Collate numbers of mixed types as ``torch.tensor(batch)`` does, or raise as it does.

    The result's dtype is the promotion of the elements' dtypes within the highest kind
    present (bool < integer < floating < complex), so an int64 with a float32 gives float32,
    as in torch (NumPy would give float64); a NumPy bool among integers, a string, None, or a
    sequence among numbers raises torch's exception type.
    """
    dtypes = [_scalar_dtype(item, batch) for item in batch]
    if any(dtype is None for dtype in dtypes):
        raise _mixed_types(
            TypeError, "a sequence cannot be an element of a batch of numbers", batch
        )
    known = [dtype for dtype in dtypes if dtype is not None]
    top = max(_KIND_RANK[dtype.kind] for dtype in known)
    result = np.result_type(*(dtype for dtype in known if _KIND_RANK[dtype.kind] == top))
    if result.kind == "c":
        result = np.result_type(result, *(d for d in known if d.kind == "f"))
    if result.kind in "iu" and any(isinstance(item, np.bool_) for item in batch):
        raise _mixed_types(
            TypeError, "'numpy.bool' object cannot be interpreted as an integer", batch
        )
    return np.array(list(batch), dtype=result)


def stack_arrays(batch: Sequence[Any], out: np.ndarray[Any, Any] | None = None) -> Any:
    """Stack NumPy arrays (or array-likes) along a new first dimension.

    Args:
        batch: the samples' arrays, all of one shape.
        out: an optional preallocated array of shape ``(len(batch), *shape)`` to fill.

    Returns:
        The stacked array (``out`` when given).

    Raises:
        TypeError: for arrays of strings or objects.
        RuntimeError: when the shapes differ (also a ``ValueError``); the message names the
            shapes and their positions in the batch.
    """
    first = batch[0]
    if isinstance(first, np.ndarray) and _STR_OR_OBJECT_DTYPE.search(first.dtype.str) is not None:
        raise TypeError(_unsupported_dtype(first.dtype))
    types = _types_of(batch)
    if _RAGGED_RAISES and type(first) is np.ndarray:
        fast = _stack_plain(batch, first.dtype, types, out)
        if fast is not None:
            return fast
    if types != _PLAIN:
        _check_array_likes(batch)
    try:
        stacked = np.stack(batch, out=out)  # one C loop; checks shapes, promotes dtypes
    except ValueError as err:
        shapes = [np.shape(item) for item in batch]
        if any(shape != shapes[0] for shape in shapes):
            raise _shape_mismatch(shapes) from err
        raise
    if _STR_OR_OBJECT_DTYPE.search(stacked.dtype.str) is not None:
        raise TypeError(_unsupported_dtype(stacked.dtype))
    return stacked


def _check_array_likes(batch: Sequence[Any]) -> None:
    """Raise as ``torch.as_tensor`` does for an element that is no array, number or sequence."""
    for item in batch:
        if isinstance(item, (np.ndarray, np.generic, int, float, complex)):
            continue
        if isinstance(item, (str, bytes)):
            name = type(item).__name__
            raise _mixed_types(TypeError, f"new(): invalid data type '{name}'", batch)
        if not isinstance(item, collections.abc.Sequence):
            name = type(item).__name__
            raise _mixed_types(RuntimeError, f"Could not infer dtype of {name}", batch)


def _stack_plain(
    batch: Sequence[Any],
    dtype: np.dtype[Any],
    types: frozenset[type],
    out: np.ndarray[Any, Any] | None = None,
) -> Any:
    """Stack plain arrays of one native numeric dtype in one C call; None: not that case.

    Samples of one shape ``(s0, ...)`` are concatenated along their first axis into ``out``
    (or a new array) seen as ``(n * s0, ...)``: the same C-order array as ``np.stack`` makes,
    in one C call (256 samples of 16 floats: 58 us, against 66 us for ``np.array`` over the
    list and 212 us for ``np.stack``, which first adds a dimension to each sample; into a slab
    81 us against 135 us for ``np.stack(out=)``). The first axes' lengths are compared
    up front (concatenation alone would accept 15 + 17 for 16 + 16); the other axes and the
    dtypes (``casting="no"``) are checked by ``np.concatenate``. 0-d samples go through
    ``np.array``. Anything else (other array types, mixed dtypes, unequal shapes) is left to
    ``np.stack`` and its error messages.
    """
    if dtype.kind not in _NUMERIC_KINDS or not dtype.isnative or types != _PLAIN:
        return None
    shape = batch[0].shape
    if not shape:
        if out is not None:
            return None
        try:
            stacked = np.array(batch)
        except ValueError:  # unequal shapes: np.stack reports them
            return None
        return stacked if stacked.dtype == dtype else None
    try:
        if set(map(len, batch)) != {shape[0]}:
            return None
    except TypeError:  # a 0-d sample among them
        return None
    if out is None:
        out = np.empty((len(batch), *shape), dtype)
    elif not out.flags.c_contiguous:
        return None
    try:
        np.concatenate(batch, out=out.reshape(len(batch) * shape[0], *shape[1:]), casting="no")
    except (TypeError, ValueError):  # another dtype, or unequal later axes: np.stack reports
        return None
    return out


def _unsupported_dtype(dtype: np.dtype[Any]) -> str:
    return (
        _UNSUPPORTED.format(dtype) + "; convert string or object arrays to numbers or pass a "
        "collate_fn that keeps them as lists"
    )


def collate(batch: Sequence[Any], *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Collate a batch with a type-to-function map, recursing into containers.

    The function for a batch is looked up by the exact type of its first element, then by
    ``isinstance`` over the map in insertion order; each is called as
    ``fn(batch, collate_fn_map=collate_fn_map)``. Without a match, mappings, namedtuples and
    sequences recurse as in torch.

    Args:
        batch: the list of samples.
        collate_fn_map: types (or tuples of types) to collate functions.

    Returns:
        The batch.

    Raises:
        TypeError: when an element type has no collate function.
        RuntimeError: when sequences in the batch differ in length.
    """
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        function = collate_fn_map.get(elem_type)
        if function is not None:
            return function(batch, collate_fn_map=collate_fn_map)
        for collate_type, candidate in collate_fn_map.items():
            if isinstance(elem, collate_type):
                return candidate(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        merged = {
            key: collate([sample[key] for sample in batch], collate_fn_map=collate_fn_map)
            for key in elem
        }
        return _same_mapping_type(elem, merged)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return elem_type(
            *(
                collate(column, collate_fn_map=collate_fn_map)
                for column in zip(*batch, strict=False)
            )
        )
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        lengths = list(map(len, batch))
        if lengths.count(size) != len(lengths):
            raise RuntimeError(
                "each element in list of batch should be of equal size; got lengths "
                f"{lengths}; pad the samples or pass a collate_fn"
            )
        columns = [
            collate(column, collate_fn_map=collate_fn_map) for column in zip(*batch, strict=True)
        ]
        if isinstance(elem, tuple):
            return columns
        return _same_sequence_type(elem, columns)
    raise TypeError(_UNSUPPORTED.format(elem_type))


def collate_tensor_fn(batch: Sequence[Any], *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Stack torch tensors with ``torch.stack`` (torch is already imported by the user)."""
    elem = batch[0]
    if elem.is_nested:
        raise RuntimeError(
            "Batches of nested tensors are not currently supported by the default collate_fn; "
            "please provide a custom collate_fn to handle them appropriately."
        )
    if not _torch.is_strided(elem):
        raise RuntimeError(
            "Batches of sparse tensors are not currently supported by the default collate_fn; "
            f"please provide a custom collate_fn to handle them appropriately. (layout "
            f"{elem.layout})"
        )
    for position, item in enumerate(batch):
        if not _torch.is_tensor(item):
            raise _mixed_types(
                TypeError,
                f"expected Tensor as element {position} in argument 0, but got "
                f"{type(item).__name__}",
                batch,
            )
    shapes = [tuple(tensor.shape) for tensor in batch]
    if any(shape != shapes[0] for shape in shapes):
        raise _shape_mismatch(shapes)
    return _torch.stack(batch)


def collate_numpy_array_fn(
    batch: Sequence[Any], *, collate_fn_map: CollateFnMap | None = None
) -> Any:
    """Stack NumPy arrays into one NumPy array (see :func:`stack_arrays`)."""
    return stack_arrays(batch)


def collate_numpy_scalar_fn(
    batch: Sequence[Any], *, collate_fn_map: CollateFnMap | None = None
) -> Any:
    """Turn NumPy scalars into a 1-d NumPy array of their dtype (mixed: as torch promotes)."""
    if len(_types_of(batch)) == 1:
        return np.asarray(batch)
    return _collate_mixed_numbers(batch)


def collate_float_fn(batch: Sequence[Any], *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Turn Python floats into a ``float64`` array (other real numbers are converted)."""
    if _types_of(batch) != _FLOAT:
        for item in batch:
            if isinstance(item, np.ndarray) and item.ndim:
                raise _mixed_types(
                    TypeError, "only 0-dimensional arrays can be converted to Python scalars", batch
                )
            if not isinstance(item, (int, float, np.bool_, np.integer, np.floating, np.ndarray)):
                raise _mixed_types(
                    TypeError, f"must be real number, not {type(item).__name__}", batch
                )
        return np.array([float(item) for item in batch], dtype=np.float64)
    return np.fromiter(batch, dtype=np.float64, count=len(batch))


def collate_int_fn(batch: Sequence[Any], *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Turn Python ints into an ``int64`` array.

    Bools become a ``bool`` array; mixed numbers are promoted as torch promotes them.
    """
    types = _types_of(batch)
    if types not in (_INT, _BOOL):
        return _collate_mixed_numbers(batch)
    result = np.asarray(batch)
    if result.dtype.kind == "i" and result.dtype != np.int64:
        return result.astype(np.int64)
    return result


def collate_str_fn(batch: Sequence[Any], *, collate_fn_map: CollateFnMap | None = None) -> Any:
    """Keep strings (and bytes) as the list they came in."""
    return batch


default_collate_fn_map: CollateFnMap = {
    TorchTensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}
"""The map :func:`default_collate` uses; copy and extend it to collate custom types."""


def default_collate(batch: Sequence[Any]) -> Any:
    """Collate a list of samples into a batch: NumPy arrays, lists of str, or torch tensors.

    See the module documentation for the rules; they are torch's with NumPy in place of
    tensors.

    Args:
        batch: the list of samples.

    Returns:
        The batch, with the samples' structure.

    Raises:
        TypeError: when an element type cannot be collated.
        RuntimeError: when sequences differ in length or arrays in shape.

    Examples:
        >>> default_collate([0, 1, 2]).dtype
        dtype('int64')
        >>> default_collate([{"x": 1.0, "y": "a"}, {"x": 2.0, "y": "b"}])
        {'x': array([1., 2.]), 'y': ['a', 'b']}
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
