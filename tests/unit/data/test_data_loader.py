"""DataLoader in one process: argument checks, frozen attributes, len(), iteration, warnings."""

from __future__ import annotations

import os
import pickle
import sys
import types
import typing
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from data_fakes import Squares, check_torchs_default_collate_through_stokers_collation

from stoker.data import BatchSampler, DataLoader, Dataset, IterableDataset, SequentialSampler


class Stream(IterableDataset[int]):
    """Yields 0..count-1 while claiming len() == claimed; records whether it was closed."""

    def __init__(self, count: int, claimed: int | None = None) -> None:
        self.count = count
        self.claimed = count if claimed is None else claimed
        self.closed = False

    def __len__(self) -> int:
        return self.claimed

    def __iter__(self) -> Iterator[int]:
        try:
            yield from range(self.count)
        finally:
            self.closed = True


class NoLenStream(IterableDataset[int]):
    """An iterable dataset without __len__."""

    def __iter__(self) -> Iterator[int]:
        return iter(range(3))


def labels(loader: DataLoader) -> list[list[int]]:
    """The label part of each (vector, label) batch as lists."""
    return [np.asarray(batch[1]).tolist() for batch in loader]


BAD_ARGUMENTS: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"num_workers": -1}, ValueError, r"num_workers must be >= 0, got -1"),
    ({"num_workers": "2"}, TypeError, r"num_workers must be an int, got '2'"),
    ({"timeout": -1}, ValueError, r"timeout must be >= 0 seconds, got -1"),
    ({"timeout": "5"}, TypeError, r"timeout must be a number of seconds, got '5'"),
    ({"prefetch_factor": 2}, ValueError, r"prefetch_factor must be None when num_workers=0"),
    ({"num_workers": 1, "prefetch_factor": 0}, ValueError, r"prefetch_factor must be >= 1"),
    ({"num_workers": 1, "prefetch_factor": -1}, ValueError, r"got -1"),
    ({"persistent_workers": True}, ValueError, r"persistent_workers=True needs num_workers > 0"),
    (
        {"multiprocessing_context": "fork"},
        ValueError,
        r"can only be used with multi-process loading",
    ),
    (
        {"num_workers": 1, "multiprocessing_context": "thread"},
        ValueError,
        r"but got multiprocessing_context='thread'",
    ),
    (
        {"num_workers": 1, "multiprocessing_context": 3},
        TypeError,
        r"but got multiprocessing_context=3 of type int",
    ),
    (
        {"sampler": [0, 1], "shuffle": True},
        ValueError,
        r"sampler option is mutually exclusive with shuffle: got sampler",
    ),
    ({"batch_sampler": [[0]], "batch_size": 2}, ValueError, r"batch_size=2"),
    ({"batch_sampler": [[0]], "shuffle": True}, ValueError, r"shuffle=True"),
    ({"batch_sampler": [[0]], "sampler": [0]}, ValueError, r"sampler=\[0\]"),
    ({"batch_sampler": [[0]], "drop_last": True}, ValueError, r"drop_last=True"),
    (
        {"batch_size": None, "drop_last": True},
        ValueError,
        r"batch_size=None option disables auto-batching",
    ),
    ({"generator": "seed"}, TypeError, r"generator must be"),
    ({"batch_size": 0}, ValueError, r"batch_size"),
]


@pytest.mark.parametrize(("kwargs", "error", "message"), BAD_ARGUMENTS)
def test_bad_arguments_raise_naming_argument_and_value(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    """Each bad argument or combination raises torch's exception type with a clear message."""
    with pytest.raises(error, match=message):
        DataLoader(Squares(4), **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"shuffle": True}, r"expected unspecified shuffle option, but got shuffle=True"),
        ({"sampler": [0]}, r"expected unspecified sampler option, but got sampler=\[0\]"),
        ({"batch_sampler": [[0]]}, r"expected unspecified batch_sampler option"),
    ],
)
def test_iterable_dataset_rejects_order_arguments(kwargs: dict[str, Any], message: str) -> None:
    """An IterableDataset takes no shuffle, sampler or batch_sampler."""
    with pytest.raises(ValueError, match=message):
        DataLoader(Stream(3), **kwargs)


def test_iterable_dataset_accepts_shuffle_false() -> None:
    """shuffle=False (torch's old default) is accepted for an IterableDataset."""
    assert [np.asarray(b).tolist() for b in DataLoader(Stream(3), shuffle=False)] == [[0], [1], [2]]


@pytest.mark.parametrize(
    "name", ["batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers"]
)
def test_frozen_attributes_cannot_be_set_after_construction(name: str) -> None:
    """Attributes that fix the sampling cannot change after construction."""
    loader = DataLoader(Squares(4))
    with pytest.raises(
        ValueError, match=rf"{name} attribute should not be set after DataLoader is initialized"
    ):
        setattr(loader, name, getattr(loader, name))


def test_other_attributes_can_be_set() -> None:
    """num_workers, timeout and multiprocessing_context stay settable, with checks."""
    loader = DataLoader(Squares(4))
    loader.num_workers = 1
    loader.multiprocessing_context = "spawn"
    assert loader.multiprocessing_context is not None
    assert loader.multiprocessing_context.get_start_method() == "spawn"
    with pytest.raises(ValueError, match="but got multiprocessing_context='bogus'"):
        loader.multiprocessing_context = "bogus"


def test_defaults_match_torch() -> None:
    """The default samplers, collate functions and attribute values are torch's."""
    loader = DataLoader(Squares(4))
    assert isinstance(loader.sampler, SequentialSampler)
    assert isinstance(loader.batch_sampler, BatchSampler)
    assert (loader.batch_size, loader.drop_last, loader.num_workers) == (1, False, 0)
    assert loader.prefetch_factor is None
    assert DataLoader(Squares(4), num_workers=1).prefetch_factor == 2
    assert loader.multiprocessing_context is None
    unbatched = DataLoader(Squares(4), batch_size=None)
    assert unbatched.batch_sampler is None
    assert unbatched.collate_fn is not loader.collate_fn


def test_loader_is_generic_in_the_sample_type() -> None:
    """`DataLoader[T]` subscripts, instantiates, and subclasses at run time, as torch's does."""
    alias = DataLoader[int]
    assert typing.get_origin(alias) is DataLoader
    assert typing.get_args(alias) == (int,)
    loader = alias([1, 2, 3], batch_size=2)
    assert isinstance(loader, DataLoader)
    assert [batch.tolist() for batch in loader] == [[1, 2], [3]]

    class IntLoader(DataLoader[int]):
        """A subclass fixing the sample type."""

    assert [batch.tolist() for batch in IntLoader([4, 5], batch_size=2)] == [[4, 5]]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"batch_size": 3}, 4),
        ({"batch_size": 3, "drop_last": True}, 3),
        ({"batch_size": None}, 10),
        ({"batch_sampler": [[0, 1], [2]]}, 2),
    ],
)
def test_len_of_map_style_loader(kwargs: dict[str, Any], expected: int) -> None:
    """len() is the index sampler's length."""
    assert len(DataLoader(Squares(10), **kwargs)) == expected


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [({"batch_size": 3}, 4), ({"batch_size": 3, "drop_last": True}, 3), ({"batch_size": None}, 10)],
)
def test_len_of_iterable_loader(kwargs: dict[str, Any], expected: int) -> None:
    """len() of an IterableDataset loader derives from len(dataset), batch_size and drop_last."""
    assert len(DataLoader(Stream(10), **kwargs)) == expected


def test_len_of_iterable_without_len_raises() -> None:
    """len() needs the iterable dataset to define __len__."""
    with pytest.raises(TypeError):
        len(DataLoader(NoLenStream()))


def test_iterable_yielding_more_than_len_warns() -> None:
    """After len(loader) was taken, yielding more batches than it said warns."""
    loader = DataLoader(Stream(5, claimed=4), batch_size=2)
    assert len(loader) == 2
    iterator = iter(loader)
    next(iterator)
    next(iterator)
    with pytest.warns(
        UserWarning, match=r"was reported to be 2\(when .* len\(DataLoader\) was 2 and 3 batches"
    ):
        next(iterator)


def test_iterable_without_len_call_does_not_warn() -> None:
    """Without a len() call there is nothing to compare with, so no warning."""
    assert len(list(DataLoader(Stream(5, claimed=1), batch_size=2))) == 3


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"batch_size": 2}, [[0, 1], [2, 3], [4]]),
        ({"batch_size": 2, "drop_last": True}, [[0, 1], [2, 3]]),
        ({"batch_size": None}, [0, 1, 2, 3, 4]),
    ],
)
def test_iterable_batches(kwargs: dict[str, Any], expected: list[Any]) -> None:
    """An IterableDataset is cut into batches; drop_last drops the short one."""
    assert [np.asarray(b).tolist() for b in DataLoader(Stream(5), **kwargs)] == expected


def test_map_style_batches_and_main_process_worker_info() -> None:
    """Batches stack samples in sampler order; get_worker_info() is None in the main process."""
    dataset = Squares(5)
    batches = list(DataLoader(dataset, batch_size=2))
    assert [np.asarray(b[1]).tolist() for b in batches] == [[0, 1], [2, 3], [4]]
    assert np.asarray(batches[1][0]).tolist() == [[4.0, 4.0], [9.0, 9.0]]
    assert dataset.infos == [None] * 5


def test_custom_sampler_batch_sampler_and_collate() -> None:
    """Any iterable works as sampler or batch_sampler; collate_fn sees the list of samples."""
    assert labels(DataLoader(Squares(5), sampler=[4, 0], batch_size=2)) == [[4, 0]]
    assert labels(DataLoader(Squares(5), batch_sampler=[[3], [1, 2]])) == [[3], [1, 2]]
    loader = DataLoader(Squares(3), batch_size=3, collate_fn=len)
    assert list(loader) == [3]


def test_unbatched_loading_uses_default_convert() -> None:
    """batch_size=None hands each sample through default_convert, not stacked."""
    sample = next(iter(DataLoader(Squares(3), batch_size=None)))
    assert np.asarray(sample[0]).shape == (2,)
    assert int(sample[1]) == 0


class BatchedOnly(Squares):
    """Answers __getitems__ with marked samples; __getitem__ must not be used."""

    def __getitem__(self, index: int) -> Any:
        raise AssertionError("__getitem__ used although __getitems__ exists")

    def __getitems__(self, indices: list[int]) -> list[Any]:
        return [(np.zeros(1), -i) for i in indices]


def test_getitems_is_used_when_defined() -> None:
    """A dataset's __getitems__ gets the whole list of batch indices."""
    assert labels(DataLoader(BatchedOnly(4), batch_size=3)) == [[0, -1, -2], [-3]]


class Broken(Squares):
    """Fails at index 2."""

    def __getitem__(self, index: int) -> Any:
        if index == 2:
            raise LookupError("no sample 2")
        return super().__getitem__(index)


def test_main_process_error_propagates_unchanged_with_index() -> None:
    """With num_workers=0 the dataset's own exception propagates, marked with its index."""
    iterator = iter(DataLoader(Broken(4), batch_size=2))
    next(iterator)
    with pytest.raises(LookupError, match="no sample 2") as caught:
        next(iterator)
    assert type(caught.value) is LookupError
    assert getattr(caught.value, "_stoker_dataset_index", None) == 2
    if sys.version_info >= (3, 11):
        assert "dataset index 2" in "".join(caught.value.__notes__)


def test_timeout_needs_workers() -> None:
    """A timeout with num_workers=0 raises ValueError when iteration starts."""
    loader = DataLoader(Squares(2), timeout=1)
    with pytest.raises(ValueError, match=r"timeout must be 0 when num_workers=0, got timeout=1"):
        iter(loader)


def test_iterator_close_context_manager_and_pickling() -> None:
    """close() ends iteration and closes the dataset's generator; iterators do not pickle."""
    dataset = Stream(10)
    assert len(iter(DataLoader(Squares(5), batch_size=2))) == 3
    with iter(DataLoader(dataset, batch_size=2)) as iterator:
        next(iterator)
        with pytest.raises(TypeError, match="cannot be pickled"):
            pickle.dumps(iterator)
    assert iterator.closed
    assert dataset.closed
    assert list(iterator) == []


def test_loader_is_a_context_manager() -> None:
    """A DataLoader works as a context manager and can be iterated inside it."""
    with DataLoader(Squares(3)) as loader:
        assert len(list(loader)) == 3


def test_shuffle_is_reproducible_with_a_seed_and_differs_per_epoch() -> None:
    """shuffle=True with an int generator: same orders for the same seed, new order each epoch."""
    first = DataLoader(Squares(20), batch_size=20, shuffle=True, generator=11)
    second = DataLoader(Squares(20), batch_size=20, shuffle=True, generator=11)
    epochs = [labels(first)[0] for _ in range(2)]
    assert epochs == [labels(second)[0] for _ in range(2)]
    assert epochs[0] != epochs[1]
    assert sorted(epochs[0]) == list(range(20))


def test_more_workers_than_cpus_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    """num_workers above the usable CPUs (sched_getaffinity) warns with both numbers."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    with pytest.warns(
        UserWarning,
        match=r"will create 2 worker processes in total. Our suggested max number of worker in "
        r"current system is 1, .* num_workers=2 worker processes for the 1 CPUs",
    ):
        DataLoader(Squares(2), num_workers=2)


def test_worker_count_warning_without_affinity(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without sched_getaffinity the CPU count is used; unknown counts warn too."""
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    with pytest.warns(
        UserWarning, match=r"not able to compute a suggested max .* for the an unknown number of"
    ):
        DataLoader(Squares(2), num_workers=1)


def test_pin_memory_without_torch_warns_and_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """pin_memory=True without torch imported warns once per iterator and returns NumPy."""
    monkeypatch.setitem(sys.modules, "torch", None)
    loader = DataLoader(Squares(2), pin_memory=True)
    with pytest.warns(UserWarning, match="pin_memory=True has no effect because torch is not"):
        batches = list(loader)
    assert isinstance(batches[0][0], np.ndarray)


class FakeTensor:
    """Stands in for a torch tensor; pin_memory() returns a pinned copy."""

    def __init__(self, value: int, pinned: bool = False) -> None:
        self.value = value
        self.pinned = pinned

    def pin_memory(self) -> FakeTensor:
        return FakeTensor(self.value, pinned=True)


def _fake_torch(available: bool) -> types.SimpleNamespace:
    """A torch stand-in with an accelerator that is or is not available."""
    accelerator = types.SimpleNamespace(is_available=lambda: available)
    return types.SimpleNamespace(Tensor=FakeTensor, accelerator=accelerator)


class TensorSamples(Dataset[Any]):
    """Samples are dicts holding a FakeTensor and a string."""

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int) -> dict[str, Any]:
        return {"x": FakeTensor(index), "name": f"s{index}"}


def test_pin_memory_with_an_accelerator_pins_tensors(monkeypatch: pytest.MonkeyPatch) -> None:
    """With torch and an accelerator, every tensor in the batch structure is pinned."""
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(available=True))
    # a seed: generator=None would draw from the stand-in's (absent) global generator
    loader = DataLoader(
        TensorSamples(), batch_size=2, collate_fn=list, pin_memory=True, generator=0
    )
    (batch,) = list(loader)
    assert [s["x"].pinned for s in batch] == [True, True]
    assert [s["name"] for s in batch] == ["s0", "s1"]


def test_pin_memory_without_accelerator_and_device_warn(monkeypatch: pytest.MonkeyPatch) -> None:
    """No accelerator: a warning and no pinning; pin_memory_device warns that it is ignored."""
    monkeypatch.setitem(sys.modules, "torch", _fake_torch(available=False))
    loader = DataLoader(
        TensorSamples(),
        batch_size=2,
        collate_fn=list,
        pin_memory=True,
        pin_memory_device="cuda",
        generator=0,
    )
    with (
        pytest.warns(UserWarning, match="no accelerator is found.*no accelerator is available"),
        pytest.warns(UserWarning, match="ignore pin_memory_device='cuda'"),
    ):
        (batch,) = list(loader)
    assert [s["x"].pinned for s in batch] == [False, False]


# with process workers: tests/integration/data/test_data_loader_workers.py
@pytest.mark.parametrize("worker_type", ["thread"])
def test_torchs_default_collate_gives_torchs_batches_through_stokers_collation(
    worker_type: str,
) -> None:
    """collate_fn=torch's default_collate gives torch's tensors, made by stoker's collation."""
    check_torchs_default_collate_through_stokers_collation(worker_type)


def test_torchs_batch_sampler_is_batched_and_resumed_as_stokers() -> None:
    """A torch BatchSampler over a stoker sampler gives the same batches and an offset state.

    A torch.utils.data.BatchSampler over a stoker sampler gives the same batches and an
    offset state: a fresh loader resumes the rest of a shuffled epoch.
    """
    pytest.importorskip("torch")
    import torch.utils.data as torch_data

    from stoker.data import RandomSampler

    def make() -> DataLoader:
        sampler = RandomSampler(Squares(10), generator=3)
        return DataLoader(Squares(10), batch_sampler=torch_data.BatchSampler(sampler, 3, False))

    loader = make()
    iterator = iter(loader)
    next(iterator)
    state = loader.state_dict()
    assert state["mode"] == "offset"
    rest = [batch[1].tolist() for batch in iterator]
    fresh = make()
    fresh.load_state_dict(state)
    assert [batch[1].tolist() for batch in fresh] == rest
