"""Tests for stoker.data's collation: default_collate, default_convert and collate with a map."""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from stoker.data import collate, default_collate, default_collate_fn_map, default_convert
from stoker.data._collate import stack_arrays

Point = namedtuple("Point", ["x", "y"])


@pytest.mark.parametrize(
    ("batch", "dtype", "values"),
    [
        ([1, 2, 3], np.int64, [1, 2, 3]),
        ([1.5, 2.0], np.float64, [1.5, 2.0]),
        ([1.5, 2], np.float64, [1.5, 2.0]),
        ([True, False], np.bool_, [True, False]),
        ([1, 2.5], np.float32, [1.0, 2.5]),
        ([np.float32(1), np.float32(2)], np.float32, [1.0, 2.0]),
        ([np.int8(1), np.int8(-2)], np.int8, [1, -2]),
        ([np.bool_(True), np.bool_(False)], np.bool_, [True, False]),
    ],
)
def test_numbers_become_arrays(batch: list[Any], dtype: Any, values: list[Any]) -> None:
    """Python and NumPy numbers become 1-d NumPy arrays with torch's dtypes."""
    out = default_collate(batch)
    assert isinstance(out, np.ndarray)
    assert out.dtype == dtype
    assert out.tolist() == values


def test_arrays_are_stacked() -> None:
    """Arrays stack along a new first dimension, keeping dtype; mixed dtypes promote."""
    out = default_collate([np.zeros((2, 3), np.uint8), np.ones((2, 3), np.uint8)])
    assert out.shape == (2, 2, 3)
    assert out.dtype == np.uint8
    assert out[1].sum() == 6
    mixed = default_collate([np.zeros(2, np.int32), np.ones(2, np.float32)])
    assert mixed.dtype == np.float64
    zero_d = default_collate([np.array(1.0), np.array(2.0)])
    assert zero_d.tolist() == [1.0, 2.0]


def test_unequal_shapes_name_shapes_and_positions() -> None:
    """Arrays of unequal shapes raise (RuntimeError and ValueError) naming shapes and positions."""
    batch = [np.zeros(2), np.zeros(2), np.zeros(3), np.zeros(2)]
    with pytest.raises(
        RuntimeError,
        match=r"shape \(2,\) at positions \[0, 1, 3\]; shape \(3,\) at positions \[2\]",
    ):
        default_collate(batch)
    with pytest.raises(ValueError, match="equal shapes"):
        default_collate(batch)


@pytest.mark.parametrize("dtype", ["U3", "S3", object])
def test_string_and_object_arrays_are_rejected(dtype: Any) -> None:
    """NumPy arrays of strings, bytes or objects are a TypeError, as in torch."""
    with pytest.raises(TypeError, match="batch must contain tensors, numpy arrays"):
        default_collate([np.array(["a"], dtype=dtype), np.array(["b"], dtype=dtype)])


def test_strings_and_bytes_stay_lists() -> None:
    """str, bytes and NumPy str scalars are returned as the list they came in."""
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"a", b"b"]) == [b"a", b"b"]
    assert default_collate([np.str_("a"), np.str_("b")]) == ["a", "b"]


def test_mappings_recurse_and_keep_their_type() -> None:
    """Dicts collate per key; a mutable mapping keeps its type; nested values recurse."""
    batch = [OrderedDict(a=1, b={"c": "x"}), OrderedDict(a=2, b={"c": "y"})]
    out = default_collate(batch)
    assert isinstance(out, OrderedDict)
    assert out["a"].tolist() == [1, 2]
    assert out["b"] == {"c": ["x", "y"]}


def test_immutable_mapping_is_rebuilt_or_falls_back_to_dict() -> None:
    """A read-only mapping is rebuilt from a dict when it can be, else a plain dict is returned."""

    class Frozen(Mapping[str, Any]):
        def __init__(self, data: dict[str, Any]) -> None:
            self._data = dict(data)

        def __getitem__(self, key: str) -> Any:
            return self._data[key]

        def __iter__(self) -> Any:
            return iter(self._data)

        def __len__(self) -> int:
            return len(self._data)

    class Unbuildable(Frozen):
        def __init__(self, data: dict[str, Any], extra: int) -> None:
            super().__init__(data)

    rebuilt = default_collate([Frozen({"a": 1}), Frozen({"a": 2})])
    assert isinstance(rebuilt, Frozen)
    assert rebuilt["a"].tolist() == [1, 2]
    fallback = default_collate([Unbuildable({"a": 1}, 0), Unbuildable({"a": 2}, 0)])
    assert type(fallback) is dict


def test_namedtuples_tuples_and_lists() -> None:
    """Namedtuples keep their type; tuples become lists; lists stay lists, per position."""
    point = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(point, Point)
    assert point.x.tolist() == [1, 3]
    pairs = default_collate([(1, "a"), (2, "b")])
    assert isinstance(pairs, list)
    assert pairs[0].tolist() == [1, 2]
    assert pairs[1] == ("a", "b")  # strings inside a sequence stay the zipped tuple, as in torch
    lists = default_collate([[1, 2], [3, 4]])
    assert [column.tolist() for column in lists] == [[1, 3], [2, 4]]


def test_unequal_sequence_lengths_raise_like_torch() -> None:
    """Sequences of different lengths raise torch's RuntimeError message, with the lengths."""
    with pytest.raises(RuntimeError, match=r"should be of equal size; got lengths \[2, 1\]"):
        default_collate([[1, 2], [3]])


def test_unsupported_type_is_a_type_error() -> None:
    """An element with no rule (e.g. None or an object) is a TypeError naming its type."""
    with pytest.raises(TypeError, match="found <class 'NoneType'>"):
        default_collate([None, None])
    with pytest.raises(TypeError, match=r"invalid data type 'str'.*str at positions \[1\]"):
        default_collate([1, "a"])


def test_torch_tensors_are_stacked_with_torch() -> None:
    """Torch tensors stay torch tensors; unequal shapes are named with their positions."""
    torch = pytest.importorskip("torch")
    out = default_collate([{"t": torch.ones(2)}, {"t": torch.zeros(2)}])
    assert isinstance(out["t"], torch.Tensor)
    assert out["t"].shape == (2, 2)
    with pytest.raises(RuntimeError, match=r"shape \(3,\) at positions \[1\]"):
        default_collate([torch.ones(2), torch.ones(3)])
    with pytest.raises(RuntimeError, match="sparse"):
        default_collate([torch.ones(2).to_sparse(), torch.ones(2).to_sparse()])


def test_collate_with_custom_map_exact_type_then_isinstance() -> None:
    """A custom map is consulted by exact type, then isinstance in order, and is passed down."""

    class Box:
        def __init__(self, value: int) -> None:
            self.value = value

    class SmallBox(Box):
        pass

    def collate_box(batch: Sequence[Box], *, collate_fn_map: Any) -> list[int]:
        assert collate_fn_map is mapping
        return [box.value for box in batch]

    mapping = {**default_collate_fn_map, Box: collate_box}
    out = collate([{"b": SmallBox(1), "n": 1}, {"b": SmallBox(2), "n": 2}], collate_fn_map=mapping)
    assert out["b"] == [1, 2]
    assert out["n"].tolist() == [1, 2]
    with pytest.raises(TypeError, match="found"):
        default_collate([Box(1)])


def test_collate_without_map_only_recurses() -> None:
    """With collate_fn_map=None containers recurse but leaves have no rule."""
    with pytest.raises(TypeError, match="found <class 'int'>"):
        collate([[1], [2]])


def test_stack_arrays_fills_a_given_output() -> None:
    """stack_arrays writes into a preallocated output and returns it."""
    out = np.empty((2, 3), np.float32)
    result = stack_arrays([np.arange(3), np.arange(3) + 1], out=out)
    assert result is out
    assert out.tolist() == [[0, 1, 2], [1, 2, 3]]


def test_default_convert_keeps_numpy_and_rebuilds_containers() -> None:
    """Arrays, scalars and strings are kept; tuples become lists; namedtuples and dicts rebuilt."""
    array = np.arange(3)
    assert default_convert(array) is array
    scalar = np.float32(1)
    assert default_convert(scalar) is scalar
    assert default_convert("s") == "s"
    converted = default_convert({"a": (1, array), "p": Point(1, 2)})
    assert converted["a"][0] == 1
    assert isinstance(converted["a"], list)
    assert converted["a"][1] is array
    assert converted["p"] == Point(1, 2)
    assert isinstance(converted["p"], Point)
    assert default_convert([1, (2,)]) == [1, [2]]
    assert default_convert(range(2)) == [0, 1]
    assert default_convert(None) is None


def test_docstring_examples_run() -> None:
    """The examples in the collate module's docstrings are correct."""
    import doctest

    import stoker.data._collate as module

    # Public functions name stoker.data as their module, which doctest.testmod would skip,
    # so the examples are collected from each public name of the module.
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner()
    for name in module.__all__:
        for test in finder.find(getattr(module, name), name, globs=dict(vars(module))):
            runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 2
    assert result.failed == 0


def test_tensor_subclasses_from_user_modules_are_stacked() -> None:
    """A torch.Tensor subclass defined outside torch is still collated with torch.stack."""
    torch = pytest.importorskip("torch")

    class Tagged(torch.Tensor):  # type: ignore[misc]
        pass

    batch = [torch.ones(2).as_subclass(Tagged), torch.zeros(2).as_subclass(Tagged)]
    out = default_collate(batch)
    assert isinstance(out, torch.Tensor)
    assert out.tolist() == [[1.0, 1.0], [0.0, 0.0]]


class _Tagged(np.ndarray):  # type: ignore[type-arg]
    """An ndarray subclass: left to ``np.stack``, which keeps the subclass."""


@pytest.mark.parametrize(
    "arrays",
    [
        [np.arange(16, dtype=np.float32) + i for i in range(256)],
        [np.full((2, 3), i, dtype=np.int16) for i in range(5)],
        [np.array(i, dtype=np.uint8) for i in range(4)],  # 0-d arrays
        [np.array([1, 0], dtype=np.bool_), np.array([0, 1], dtype=np.bool_)],
        [np.array([1 + 2j], dtype=np.complex64)] * 3,
        [np.arange(3, dtype=np.int8), np.arange(3, dtype=np.float32)],  # mixed: promoted
        [np.arange(3, dtype=">f4"), np.arange(3, dtype=">f4")],  # non-native byte order
        [np.arange(6, dtype=np.int32).reshape(2, 3).T] * 2,  # not C-contiguous
        [np.arange(3).view(_Tagged), np.arange(3).view(_Tagged)],
        [np.arange(0, 3, dtype="datetime64[s]")] * 2,
    ],
    ids=[
        "small-f32",
        "2d-i16",
        "0d",
        "bool",
        "complex",
        "mixed",
        "big-endian",
        "transposed",
        "subclass",
        "datetime",
    ],
)
def test_stacking_matches_np_stack(arrays: list[Any]) -> None:
    """Every array batch collates to exactly what np.stack gives: values, dtype, shape, type."""
    expected = np.stack(arrays)
    out = default_collate(arrays)
    assert type(out) is type(expected)
    assert out.dtype == expected.dtype
    assert out.shape == expected.shape
    assert out.flags.c_contiguous
    np.testing.assert_array_equal(out, expected)
    out[...] = out  # a fresh writable array, not a view on a sample
    assert not any(np.shares_memory(out, item) for item in arrays)


def test_unequal_shapes_of_one_length_still_raise() -> None:
    """Equal element counts in unequal shapes are not mistaken for a stackable batch."""
    batch = [np.zeros((2, 3)), np.zeros((3, 2))]
    with pytest.raises(RuntimeError, match=r"shape \(2, 3\) at positions \[0\]"):
        default_collate(batch)


@pytest.mark.parametrize(
    ("batch", "error", "torch_text", "found"),
    [
        ([1.5, None], TypeError, "must be real number, not NoneType", "NoneType at positions [1]"),
        ([1.5, "2"], TypeError, "must be real number, not str", "str at positions [1]"),
        ([np.float32(0), "n/a"], TypeError, "invalid data type 'str'", "str at positions [1]"),
        ([np.int64(1), None], RuntimeError, "Could not infer dtype of NoneType", "NoneType"),
        ([np.int64(1), {"a": 1}], RuntimeError, "Could not infer dtype of dict", "dict"),
        (
            [1, None, 2],
            RuntimeError,
            "Could not infer dtype of NoneType",
            "int at positions [0, 2]",
        ),
        ([np.zeros(2), "ab"], TypeError, "invalid data type 'str'", "ndarray at positions [0]"),
        ([np.zeros(2), None], RuntimeError, "Could not infer dtype", "NoneType at positions [1]"),
    ],
)
def test_a_batch_mixing_types_raises_instead_of_building_nan_string_or_object_arrays(
    batch: list[Any], error: type[Exception], torch_text: str, found: str
) -> None:
    """Mixed element types raise torch's error type, torch's text first, then what was found."""
    with pytest.raises(error) as caught:
        default_collate(batch)
    text = str(caught.value)
    assert text.startswith((torch_text, f"new(): {torch_text}"))
    assert found in text


def test_mixed_numbers_promote_as_torch_does() -> None:
    """An integer with a float gives the float's dtype, a Python float counting as float32."""
    assert default_collate([np.float32(0), 1]).dtype == np.float32
    assert default_collate([np.int64(1), 2.5]).dtype == np.float32
    assert default_collate([1, np.float64(2.5)]).dtype == np.float64
    assert default_collate([True, 1]).tolist() == [1, 1]


_STACK_CASES = {
    "1-d": [np.arange(3.0), np.arange(3.0) + 1],
    "2-d float32": [np.ones((2, 3), np.float32), np.zeros((2, 3), np.float32)],
    "transposed sample": [np.arange(4.0).reshape(2, 2).T, np.arange(4.0).reshape(2, 2)],
    "empty first axis": [np.zeros((0, 4)), np.zeros((0, 4))],
    "big-endian": [np.arange(6, dtype=">i4").reshape(2, 3)] * 2,
    "mixed dtypes": [np.ones((2, 3), np.float32), np.ones((2, 3), np.float64)],
    "first axes 15 + 17": [np.ones(15), np.ones(17)],
    "later axes differ": [np.ones((2, 3)), np.ones((2, 4))],
    "0-d among 1-d": [np.ones(3), np.ones(())],
    "1-d after 0-d": [np.ones(()), np.ones(2, np.float32)],
    "0-d": [np.float32(1) * np.ones((), np.float32), np.ones((), np.float32)],
    "many small views": list(np.arange(256 * 16, dtype=np.float32).reshape(256, 16)),
}


@pytest.mark.parametrize("into", [False, True])
@pytest.mark.parametrize("name", sorted(_STACK_CASES))
def test_stack_arrays_equals_np_stack(name: str, into: bool) -> None:
    """The one-call paths give np.stack's array or its error, also when stacking into an array.

    The one-call paths give np.stack's array (values, dtype, shape, C order) or its error,
    also when stacking into a given array; none accepts shapes np.stack refuses.
    """
    batch = _STACK_CASES[name]
    try:
        expected = np.stack(batch)
    except ValueError:
        with pytest.raises(ValueError, match="shape"):
            stack_arrays(batch)
        return
    out = np.full(expected.shape, 7, expected.dtype) if into else None
    got = stack_arrays(batch, out=out)
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, expected)
    if into:
        assert got is out
