"""Batched fetching: the loader's one __getitems__ call reaches the innermost datasets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from stoker.data import (
    ConcatDataset,
    DataLoader,
    Dataset,
    StackDataset,
    Subset,
    TensorDataset,
)


class Leaf(Dataset[int]):
    """Sample i is offset + i; counts single and batched fetches."""

    def __init__(self, n: int, offset: int) -> None:
        self.n = n
        self.offset = offset
        self.single = 0
        self.batched: list[list[int]] = []

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        self.single += 1
        return self.offset + index

    def __getitems__(self, indices: Sequence[int]) -> list[int]:
        self.batched.append(list(indices))
        return [self.offset + i for i in indices]


@pytest.mark.parametrize("worker_type", ["main", "thread"])
def test_getitems_is_forwarded_through_subset_concat_and_stack(worker_type: str) -> None:
    """Subset -> ConcatDataset -> StackDataset -> leaves: only __getitems__ reaches the leaves."""
    leaves = [Leaf(6, 100), Leaf(6, 200), Leaf(5, 300)]
    stacked = StackDataset(a=leaves[0], b=leaves[1])
    concat = ConcatDataset([stacked, Subset(leaves[2], [4, 3, 2, 1, 0, 0])])
    subset = Subset(concat, [11, 0, 7, 5, 1, 10])
    kwargs: dict[str, Any] = {"batch_size": 3, "collate_fn": list}
    if worker_type == "thread":
        kwargs.update(num_workers=1, worker_type="thread")
    batches = list(DataLoader(subset, **kwargs))
    assert batches == [
        [300, {"a": 100, "b": 200}, 303],
        [{"a": 105, "b": 205}, {"a": 101, "b": 201}, 300],
    ]
    # a thread's shallow copy of the Subset still shares the leaves
    assert [leaf.single for leaf in leaves] == [0, 0, 0]
    assert leaves[0].batched == leaves[1].batched == [[0], [5, 1]]
    assert leaves[2].batched == [[0, 3], [0]]


def test_tensor_dataset_fetches_a_batch_with_one_gather_per_array(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """TensorDataset batches come from __getitems__ (one fancy index per array), not rows."""

    def no_rows(self: TensorDataset, index: Any) -> Any:
        raise AssertionError(f"__getitem__({index}) called: batched fetch was bypassed")

    monkeypatch.setattr(TensorDataset, "__getitem__", no_rows)
    features = np.arange(20, dtype=np.float32).reshape(10, 2)
    labels = np.arange(10) * 10
    loader = DataLoader(TensorDataset(features, labels), batch_size=4, shuffle=True, generator=3)
    seen = []
    for x, y in loader:
        np.testing.assert_array_equal(x, features[y // 10])
        seen.extend((y // 10).tolist())
    assert sorted(seen) == list(range(10))
