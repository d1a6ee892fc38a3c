"""``split_first_batch``: each epoch's first batch loaded in shares, one per worker.

The batch must be exactly the batch loaded whole (values, order, the sample keys of
``sample_rng``), its shares must really come from different workers, later batches must come
whole from one worker each, and failures, deaths and epochs must behave as without the split.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from typing import Any

import numpy as np
import pytest
from data_workers_helpers import WORKER_KINDS, CountingDataset, counter_settles_at, kind_kwargs

from stoker.data import DataLoader, Dataset, IterableDataset, get_worker_info, sample_rng

pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)


class Keyed(Dataset[Any]):
    """Sample i: ``width`` values drawn from ``sample_rng(i)``, i, and the loading worker's id."""

    def __init__(self, n: int, width: int, fail_at: int = -1, die_at: int = -1) -> None:
        self.n = n
        self.width = width
        self.fail_at = fail_at
        self.die_at = die_at

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[Any, int, int]:
        if index == self.fail_at:
            raise KeyError(f"sample {index} is missing")
        if index == self.die_at:
            os.kill(os.getpid(), signal.SIGKILL)
        info = get_worker_info()
        values = sample_rng(index).standard_normal(self.width).astype(np.float32)
        return values, index, -1 if info is None else info.id


def _load(loader: DataLoader[Any]) -> list[tuple[list[Any], list[int], list[int]]]:
    return [(x.tolist(), y.tolist(), w.tolist()) for x, y, w in loader]


@pytest.mark.parametrize("kind", WORKER_KINDS)
@pytest.mark.parametrize("width", [4, 16384], ids=["inline", "slabs"])
def test_split_first_batch_equals_the_whole_batch_and_uses_every_worker(
    kind: str, width: int
) -> None:
    """Values and order equal num_workers=0's; batch 0 comes from both workers.

    Values and order equal num_workers=0's; batch 0 comes from both workers, later ones
    each from one, in turn.
    """
    dataset = Keyed(50, width)
    expected = _load(DataLoader(dataset, batch_size=7, generator=5))
    loader = DataLoader(
        dataset,
        batch_size=7,
        num_workers=2,
        generator=5,
        shuffle=False,
        split_first_batch=True,
        **kind_kwargs(kind),
    )
    got = _load(loader)
    assert [(x, y) for x, y, _ in got] == [(x, y) for x, y, _ in expected]
    assert got[0][2] == [0, 0, 0, 1, 1, 1, 1]  # contiguous shares of 3 and 4 samples
    assert [sorted(set(w)) for _, _, w in got[1:]] == [[1], [0], [1], [0], [1], [0], [1]]


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_every_epoch_splits_its_first_batch_with_persistent_workers(kind: str) -> None:
    """With persistent workers and shuffling, each epoch's batches equal the unsplit loader's."""
    dataset = Keyed(20, 64)
    plain = DataLoader(dataset, batch_size=6, shuffle=True, generator=9, num_workers=2)
    split = DataLoader(
        dataset,
        batch_size=6,
        shuffle=True,
        generator=9,
        num_workers=2,
        persistent_workers=True,
        split_first_batch=True,
        **kind_kwargs(kind),
    )
    for _ in range(2):
        got, want = _load(split), _load(plain)
        assert [(x, y) for x, y, _ in got] == [(x, y) for x, y, _ in want]
        assert len(set(got[0][2])) == 2


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_a_failing_share_raises_the_datasets_error_in_place_of_the_first_batch(
    kind: str,
) -> None:
    """A dataset error in the second share surfaces as batch 0's error; the rest still loads."""
    loader = DataLoader(
        Keyed(24, 4, fail_at=6),
        batch_size=8,
        num_workers=2,
        split_first_batch=True,
        **kind_kwargs(kind),
    )
    iterator = iter(loader)
    with pytest.raises(KeyError, match="sample 6 is missing"):
        next(iterator)
    assert [y.tolist() for _, y, _ in iterator] == [list(range(8, 16)), list(range(16, 24))]


def test_a_worker_dying_in_a_share_is_reported_with_batch_0_and_its_indices() -> None:
    """A worker killed while loading its share raises at once, naming batch 0 and the share."""
    loader = DataLoader(Keyed(16, 4, die_at=5), batch_size=8, num_workers=2, split_first_batch=True)
    with pytest.raises(RuntimeError, match=r"batch 0 \(indices \[4, 5, 6, 7\]\)"):
        next(iter(loader))


class _Stream(IterableDataset[int]):
    def __iter__(self) -> Any:
        return iter(range(4))


@pytest.mark.parametrize(
    ("dataset", "collate_fn"),
    [(_Stream(), None), (Keyed(4, 4), list)],
    ids=["iterable", "custom-collate"],
)
def test_split_first_batch_refuses_what_the_main_process_cannot_collate(
    dataset: Any, collate_fn: Any
) -> None:
    """An IterableDataset or a custom collate_fn with split_first_batch=True is a ValueError."""
    with pytest.raises(ValueError, match="split_first_batch=True needs a map-style dataset"):
        DataLoader(dataset, batch_size=2, collate_fn=collate_fn, split_first_batch=True)


def test_split_first_batch_must_be_a_bool() -> None:
    """A non-bool split_first_batch is a TypeError naming the value."""
    with pytest.raises(TypeError, match="split_first_batch must be a bool, got 1"):
        DataLoader(Keyed(4, 4), split_first_batch=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_the_window_fills_once_the_split_first_batch_is_collated(kind: str) -> None:
    """Only the first batch's shares are out until it is collated; then the rest of the window.

    Until the first batch is collated only its shares are out (the workers leave the cores
    to the collation); then the rest of the window goes out at once.
    """
    counter = multiprocessing.get_context("fork").Value("i", 0)
    loader = DataLoader(
        CountingDataset(40, counter),
        batch_size=4,
        num_workers=2,
        prefetch_factor=2,
        split_first_batch=True,
        **kind_kwargs(kind),
    )
    with iter(loader) as iterator:
        assert counter_settles_at(counter, 4) == 4
        _, labels = next(iterator)
        assert labels.tolist() == [0, 1, 2, 3]
        assert counter_settles_at(counter, 4 + 4 * 4) == 4 + 4 * 4
        assert [b[1].tolist() for b in iterator] == [list(range(i, i + 4)) for i in range(4, 40, 4)]
