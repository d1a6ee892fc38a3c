"""Tests for stoker.data's datasets.

Covers the bases, TensorDataset, StackDataset, ConcatDataset, ChainDataset and Subset.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from stoker.data import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
)


class Squares(Dataset[int]):
    """A map-style dataset of i*i that records how it was called."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.calls: list[str] = []

    def __getitem__(self, index: int) -> int:
        self.calls.append("getitem")
        if not 0 <= index < self.n:
            raise IndexError(index)
        return index * index

    def __len__(self) -> int:
        return self.n


class BatchedSquares(Squares):
    """Squares with a batched __getitems__ that records the indices it got."""

    def __getitems__(self, indices: list[int]) -> list[int]:
        self.calls.append(f"getitems{list(indices)}")
        return [i * i for i in indices]


class Counter(IterableDataset[int]):
    """An iterable dataset yielding range(start, stop)."""

    def __init__(self, start: int, stop: int) -> None:
        self.start, self.stop = start, stop

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.start, self.stop))

    def __len__(self) -> int:
        return self.stop - self.start


def test_dataset_base_requires_getitem() -> None:
    """The base __getitem__ raises NotImplementedError."""
    with pytest.raises(NotImplementedError, match="__getitem__"):
        Dataset()[0]


def test_iterable_dataset_without_iter_cannot_be_built() -> None:
    """__iter__ is abstract, as in torch: instantiating a subclass without it is a TypeError."""

    class Incomplete(IterableDataset[int]):
        pass

    with pytest.raises(TypeError):
        Incomplete()  # type: ignore[abstract]


def test_add_concatenates_or_chains() -> None:
    """Map-style + map-style is a ConcatDataset; iterable + iterable is a ChainDataset."""
    both = Squares(2) + Squares(3)
    assert isinstance(both, ConcatDataset)
    assert [both[i] for i in range(len(both))] == [0, 1, 0, 1, 4]
    chained = Counter(0, 2) + Counter(5, 7)
    assert isinstance(chained, ChainDataset)
    assert list(chained) == [0, 1, 5, 6]
    assert len(chained) == 4


def test_tensor_dataset_rows_and_getitems() -> None:
    """Samples are rows of every array; __getitems__ gathers the same rows in one go."""
    x = np.arange(12).reshape(6, 2)
    y = np.arange(6) * 10
    dataset = TensorDataset(x, y)
    assert len(dataset) == 6
    row = dataset[4]
    assert row[0].tolist() == [8, 9]
    assert row[1] == 40
    batch = dataset.__getitems__([5, 0, 5])
    assert [(a.tolist(), int(b)) for a, b in batch] == [([10, 11], 50), ([0, 1], 0), ([10, 11], 50)]
    assert dataset.__getitems__([]) == []


def test_tensor_dataset_getitems_accepts_torch_tensors() -> None:
    """Torch tensors are gathered with torch indexing and stay tensors."""
    import torch

    dataset = TensorDataset(torch.arange(5), np.arange(5))
    first, second = dataset.__getitems__([3, 1])
    assert isinstance(first[0], torch.Tensor)
    assert (int(first[0]), int(second[0]), int(first[1])) == (3, 1, 3)


@pytest.mark.parametrize(
    ("arrays", "error", "match"),
    [
        ((), ValueError, "at least one array"),
        ((np.zeros(3), np.zeros(4)), ValueError, r"first dimensions are \[3, 4\]"),
        ((np.zeros(()),), ValueError, "at least one dimension"),
        (([1, 2],), TypeError, "must be a NumPy array or a torch tensor"),
    ],
)
def test_tensor_dataset_errors(arrays: tuple[Any, ...], error: type[Exception], match: str) -> None:
    """Missing arrays, mismatched first dimensions, 0-d arrays and non-arrays are rejected."""
    with pytest.raises(error, match=match):
        TensorDataset(*arrays)


def test_tensor_dataset_size_mismatch_is_also_an_assertion_error() -> None:
    """Code catching torch's AssertionError keeps working."""
    with pytest.raises(AssertionError):
        TensorDataset(np.zeros(3), np.zeros(4))


def test_stack_dataset_tuple_and_dict() -> None:
    """Positional datasets stack into tuples, keyword datasets into dicts."""
    squares, counter = Squares(3), [10, 11, 12]
    assert StackDataset(squares, counter)[2] == (4, 12)
    assert StackDataset(a=squares, b=counter)[1] == {"a": 1, "b": 11}
    assert len(StackDataset(a=squares, b=counter)) == 3


def test_stack_dataset_getitems_forwards_per_column() -> None:
    """A column with __getitems__ is fetched in one call; the others item by item."""
    batched, plain = BatchedSquares(4), Squares(4)
    stacked = StackDataset(batched, plain)
    assert stacked.__getitems__([3, 1]) == [(9, 9), (1, 1)]
    assert batched.calls == ["getitems[3, 1]"]
    assert plain.calls == ["getitem", "getitem"]
    named = StackDataset(x=BatchedSquares(4), y=[5, 6, 7, 8])
    assert named.__getitems__([0, 2]) == [{"x": 0, "y": 5}, {"x": 4, "y": 7}]


def test_stack_dataset_errors() -> None:
    """Both forms, neither form, unequal lengths and a short __getitems__ are ValueErrors."""
    with pytest.raises(
        ValueError,
        match=r"but both types are given\. StackDataset takes datasets either positionally",
    ):
        StackDataset([1], b=[2])
    with pytest.raises(ValueError, match="At least one dataset"):
        StackDataset()
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset([1, 2], [1])

    class Short(BatchedSquares):
        def __getitems__(self, indices: list[int]) -> list[int]:
            return [0]

    with pytest.raises(ValueError, match=r"output size mismatch\. Expected 2, got 1"):
        StackDataset(Short(3)).__getitems__([0, 1])


def test_concat_dataset_indexing() -> None:
    """Indices run through each dataset; negatives count from the end; bounds are checked."""
    dataset = ConcatDataset([[0, 1], [], [2, 3, 4]])
    assert len(dataset) == 5
    assert dataset.cumulative_sizes == [2, 2, 5]
    assert [dataset[i] for i in range(5)] == [0, 1, 2, 3, 4]
    assert dataset[-1] == 4
    with pytest.raises(ValueError, match="should not exceed dataset length"):
        dataset[-6]
    with pytest.raises(IndexError, match="out of range"):
        dataset[5]


def test_concat_dataset_getitems_groups_by_inner_dataset() -> None:
    """__getitems__ makes one batched call per inner dataset and keeps the requested order."""
    first, second = BatchedSquares(3), BatchedSquares(3)
    dataset = ConcatDataset([first, second])
    assert dataset.__getitems__([4, 0, 3, 2, -1]) == [1, 0, 0, 4, 4]
    assert first.calls == ["getitems[0, 2]"]
    assert second.calls == ["getitems[1, 0, 2]"]


def test_concat_dataset_errors_and_deprecated_name() -> None:
    """Empty input and iterable datasets are rejected; cummulative_sizes warns."""
    with pytest.raises(ValueError, match="should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="does not support IterableDataset"):
        ConcatDataset([[1], Counter(0, 1)])
    with pytest.raises(AssertionError):
        ConcatDataset([])
    with pytest.warns(FutureWarning, match="renamed to `cumulative_sizes`"):
        assert ConcatDataset([[1]]).cummulative_sizes == [1]


def test_chain_dataset_rejects_map_style_when_used() -> None:
    """A map-style member is reported when iterating or taking the length."""
    chained = ChainDataset([Counter(0, 1), Squares(2)])
    with pytest.raises(TypeError, match="only supports IterableDataset"):
        list(chained)
    with pytest.raises(AssertionError):
        len(chained)


def test_subset_indexing_and_getitems() -> None:
    """Subset maps positions to indices; lists map to lists; __getitems__ forwards."""
    inner = BatchedSquares(10)
    subset = Subset(inner, [9, 2, 5])
    assert len(subset) == 3
    assert subset[0] == 81
    assert subset.__getitems__([2, 0]) == [25, 81]
    assert inner.calls[-1] == "getitems[5, 9]"
    plain = Subset([10, 20, 30], np.array([2, 0]))
    assert plain.__getitems__([1, 0]) == [10, 30]


def test_subset_list_index_goes_to_the_inner_dataset_as_a_list() -> None:
    """subset[[i, j]] asks the inner dataset for [indices[i], indices[j]], as torch does."""
    received: list[Any] = []

    class Recorder(Dataset[Any]):
        def __getitem__(self, index: Any) -> Any:
            received.append(index)
            return index

    Subset(Recorder(), [7, 8, 9])[[2, 0]]
    assert received == [[9, 7]]


def test_subset_subclass_must_override_getitems_with_getitem() -> None:
    """Overriding only __getitem__ is a NotImplementedError; overriding both is fine."""

    class OnlyGetitem(Subset[int]):
        def __getitem__(self, idx: Any) -> int:
            return 0

    class Both(OnlyGetitem):
        def __getitems__(self, indices: Any) -> list[int]:
            return [0 for _ in indices]

    with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
        OnlyGetitem([1], [0])
    assert Both([1], [0]).__getitems__([0]) == [0]
