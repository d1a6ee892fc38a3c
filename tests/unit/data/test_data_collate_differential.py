"""default_collate against torch's over batches mixing element types.

Wherever torch's ``default_collate`` raises, stoker's raises an exception of the same type
(the error torch raises); wherever torch returns, stoker returns the same values, as NumPy.
"""

from __future__ import annotations

import itertools
from collections import namedtuple
from typing import Any

import numpy as np
import pytest

from stoker.data import default_collate

torch = pytest.importorskip("torch")
tud = pytest.importorskip("torch.utils.data")

Pair = namedtuple("Pair", ["a", "b"])

_ELEMENTS: dict[str, Any] = {
    "int": 1,
    "float": 1.5,
    "bool": True,
    "complex": 1j,
    "np.float32": np.float32(0),
    "np.float64": np.float64(2.5),
    "np.int64": np.int64(2),
    "np.uint8": np.uint8(3),
    "np.bool_": np.bool_(True),
    "array": np.zeros(2, np.float32),
    "0-d array": np.array(1.0),
    "None": None,
    "str": "2",
    "bytes": b"x",
    "dict": {"a": 1},
    "list": [1, 2],
    "tuple": (1, 2),
    "namedtuple": Pair(1, 2),
}

_CASES = [
    pytest.param([_ELEMENTS[a], _ELEMENTS[b]], id=f"{a},{b}")
    for a, b in itertools.permutations(_ELEMENTS, 2)
] + [
    pytest.param([1.5, None, 2.5], id="float,None,float"),
    pytest.param([np.float32(0), "n/a"], id="np.float32,str"),
    pytest.param([{"x": 1.5}, {"x": None}], id="dict of float,dict of None"),
    pytest.param([{"x": 1}, {"x": "1"}], id="dict of int,dict of str"),
    pytest.param([[1, 2], [1.5, None]], id="list,list with None"),
    pytest.param([Pair(1, 2.5), Pair(np.int64(1), 3)], id="namedtuples of mixed numbers"),
    pytest.param([(1, "a"), (2, b"b")], id="tuples of int and str or bytes"),
    pytest.param([True, 1, 2.5], id="bool,int,float"),
    pytest.param([np.int8(1), np.uint8(2)], id="np.int8,np.uint8"),
    pytest.param([np.float32(1), 1j], id="np.float32,complex"),
]


def _as_numpy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.numpy()
    if isinstance(value, dict):
        return {key: _as_numpy(item) for key, item in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*map(_as_numpy, value))
    if isinstance(value, (list, tuple)):
        return type(value)(map(_as_numpy, value))
    return value


def _assert_same(ours: Any, theirs: Any, *, dtype: bool) -> None:
    if isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray), (ours, theirs)
        assert ours.shape == theirs.shape
        assert np.array_equal(ours, theirs)
        if dtype:
            assert ours.dtype == theirs.dtype
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict)
        assert ours.keys() == theirs.keys()
        for key in theirs:
            _assert_same(ours[key], theirs[key], dtype=dtype)
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs)
        assert len(ours) == len(theirs)
        for mine, other in zip(ours, theirs, strict=True):
            _assert_same(mine, other, dtype=dtype)
    else:
        assert type(ours) is type(theirs)
        assert ours == theirs


@pytest.mark.parametrize("batch", _CASES)
def test_mixed_batch_raises_or_returns_as_torch_does(batch: list[Any]) -> None:
    """Raises torch's exception type where torch raises; the same values where it returns."""
    try:
        theirs = tud.default_collate(batch)
    except Exception as err:  # torch's error decides the type we expect
        expected: type[Exception] | None = type(err)
    else:
        expected = None
    if expected is not None:
        with pytest.raises(expected):
            default_collate(batch)
        return
    # arrays stacked with lists promote as NumPy does (float32 with int64 gives float64, torch
    # float32): there the values agree, the dtype need not
    dtype = not (isinstance(batch[0], np.ndarray) and len({type(item) for item in batch}) > 1)
    _assert_same(default_collate(batch), _as_numpy(theirs), dtype=dtype)


def test_tensors_mixed_with_other_types_raise_as_torch_stack_does() -> None:
    """A tensor batch holding a non-tensor raises TypeError naming positions, as torch does."""
    batch = [torch.zeros(2), None]
    with pytest.raises(TypeError):
        tud.default_collate(batch)
    with pytest.raises(TypeError, match=r"NoneType at positions \[1\]"):
        default_collate(batch)
