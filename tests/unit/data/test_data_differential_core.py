"""Differential tests: stoker.data's datasets, samplers and collation against torch.utils.data.

The same inputs go to both; outputs are compared as NumPy (values and dtypes) and, for bad
arguments, stoker's exception must be an instance of the type torch raises. Samplers given a
``torch.Generator`` must draw exactly what torch draws and leave the generator in the same state.
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import stoker.data as sd

torch = pytest.importorskip("torch")
tud = pytest.importorskip("torch.utils.data")

Pair = namedtuple("Pair", ["left", "right"])


def as_numpy(value: Any) -> Any:
    """Turn a batch from either library into comparable plain data (arrays with dtype names)."""
    if isinstance(value, torch.Tensor):
        value = value.numpy()
    if isinstance(value, np.generic):  # torch gives 0-d tensors where stoker keeps scalars
        value = np.asarray(value)
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.name, value.shape, value.tolist())
    if isinstance(value, dict):
        return (type(value).__name__, {key: as_numpy(item) for key, item in value.items()})
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return (type(value).__name__, [as_numpy(item) for item in value])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [as_numpy(item) for item in value])
    return value


BATCHES: dict[str, list[Any]] = {
    "ints": [1, 2, 3],
    "floats": [0.5, 1.5],
    "bools": [True, False, True],
    "int_then_float": [1, 2.5],
    "float_then_int": [2.5, 1],
    "np_float32": [np.float32(1.5), np.float32(2.5)],
    "np_int16": [np.int16(3), np.int16(-4)],
    "np_bool": [np.bool_(True), np.bool_(False)],
    "arrays_uint8": [np.zeros((2, 3), np.uint8), np.full((2, 3), 7, np.uint8)],
    "arrays_0d": [np.array(1.5), np.array(2.5)],
    "strings": ["a", "bc"],
    "bytes": [b"a", b"bc"],
    "np_str": [np.str_("x"), np.str_("y")],
    "dicts": [{"x": 1, "y": "a", "z": np.ones(2)}, {"x": 2, "y": "b", "z": np.zeros(2)}],
    "ordered": [OrderedDict(a=1.0), OrderedDict(a=2.0)],
    "tuples": [(1, np.arange(2)), (2, np.arange(2))],
    "lists": [[1, 2.0], [3, 4.0]],
    "namedtuples": [Pair(1, "a"), Pair(2, "b")],
    "nested": [{"p": [Pair(1, 2.0)]}, {"p": [Pair(3, 4.0)]}],
}


@pytest.mark.parametrize("name", sorted(BATCHES))
def test_default_collate_matches_torch(name: str) -> None:
    """default_collate gives torch's structure, values and dtypes (NumPy for tensors)."""
    batch = BATCHES[name]
    assert as_numpy(sd.default_collate(batch)) == as_numpy(tud.default_collate(batch))


@pytest.mark.parametrize(
    "batch",
    [
        [np.zeros(2), np.zeros(3)],
        [[1, 2], [3]],
        [np.array(["a"]), np.array(["b"])],
        [np.array([None]), np.array([None])],
        [None, None],
        [object(), object()],
    ],
    ids=["shapes", "lengths", "str_array", "object_array", "none", "object"],
)
def test_default_collate_errors_match_torch(batch: list[Any]) -> None:
    """Where torch's default_collate raises, stoker raises an instance of the same type."""
    with pytest.raises(Exception) as theirs:  # noqa: PT011  (the type is what is compared)
        tud.default_collate(batch)
    with pytest.raises(theirs.type):
        sd.default_collate(batch)


@pytest.mark.parametrize(
    "sample",
    [
        {"a": (1, 2), "b": "s"},
        [1, (2, 3)],
        Pair(1, [2]),
        np.arange(3),
        np.float64(2.0),
        "text",
        (np.arange(2), 1.0),
    ],
)
def test_default_convert_matches_torch_up_to_numpy(sample: Any) -> None:
    """default_convert rebuilds containers like torch; arrays stay NumPy with equal values."""
    assert as_numpy(sd.default_convert(sample)) == as_numpy(tud.default_convert(sample))


def _same_draws(make_theirs: Callable[[Any], Any], make_ours: Callable[[Any], Any]) -> None:
    theirs_generator = torch.Generator().manual_seed(1234)
    ours_generator = torch.Generator().manual_seed(1234)
    theirs, ours = make_theirs(theirs_generator), make_ours(ours_generator)
    for _ in range(2):  # two epochs: the generator advances the same way
        assert list(ours) == list(theirs)
    assert len(ours) == len(theirs)
    assert torch.equal(ours_generator.get_state(), theirs_generator.get_state())


@pytest.mark.parametrize(
    ("replacement", "num_samples"),
    [(False, None), (False, 5), (False, 23), (False, 20), (True, None), (True, 70)],
)
def test_random_sampler_with_torch_generator_equals_torch(
    replacement: bool, num_samples: int | None
) -> None:
    """RandomSampler draws with torch for a torch.Generator: same indices, same final state."""
    _same_draws(
        lambda g: tud.RandomSampler(range(10), replacement, num_samples, generator=g),
        lambda g: sd.RandomSampler(range(10), replacement, num_samples, generator=g),
    )


def test_subset_random_sampler_with_torch_generator_equals_torch() -> None:
    """SubsetRandomSampler with a torch.Generator yields torch's order."""
    indices = [5, 9, 11, 2, 30]
    _same_draws(
        lambda g: tud.SubsetRandomSampler(indices, generator=g),
        lambda g: sd.SubsetRandomSampler(indices, generator=g),
    )


@pytest.mark.parametrize(("num_samples", "replacement"), [(7, True), (3, False)])
def test_weighted_random_sampler_with_torch_generator_equals_torch(
    num_samples: int, replacement: bool
) -> None:
    """WeightedRandomSampler with a torch.Generator yields torch.multinomial's draws."""
    weights = [0.1, 0.9, 0.4, 0.0, 2.0]
    _same_draws(
        lambda g: tud.WeightedRandomSampler(weights, num_samples, replacement, generator=g),
        lambda g: sd.WeightedRandomSampler(weights, num_samples, replacement, generator=g),
    )


LARGE_WEIGHTS = [0.5 + (i % 7) for i in range(3000)]


@pytest.mark.parametrize(
    "kind",
    ["random", "random-rounds", "subset", "weighted", "weighted-no-replacement"],
)
def test_large_epochs_with_torch_generator_equal_torch(kind: str) -> None:
    """Epochs longer than the pieces stoker cuts them into still equal torch's draws."""
    make: dict[str, Callable[[Any], Any]] = {
        "random": lambda m: m.RandomSampler(range(3000), generator=_g()),
        "random-rounds": lambda m: m.RandomSampler(range(3000), num_samples=7000, generator=_g()),
        "subset": lambda m: m.SubsetRandomSampler(list(range(3000)), generator=_g()),
        "weighted": lambda m: m.WeightedRandomSampler(LARGE_WEIGHTS, 2500, generator=_g()),
        "weighted-no-replacement": lambda m: m.WeightedRandomSampler(
            LARGE_WEIGHTS, 2500, False, generator=_g()
        ),
    }
    theirs, ours = make[kind](tud), make[kind](sd)
    assert list(ours) == list(theirs)
    assert list(sd.BatchSampler(make[kind](sd), 300, False)) == list(
        tud.BatchSampler(make[kind](tud), 300, False)
    )


def _g() -> Any:
    return torch.Generator().manual_seed(99)


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.3, 0.4], [0.5, 0.5]])
def test_random_split_with_torch_generator_equals_torch(lengths: list[float]) -> None:
    """random_split with a torch.Generator makes torch's split."""
    theirs = tud.random_split(range(10), lengths, generator=torch.Generator().manual_seed(5))
    ours = sd.random_split(range(10), lengths, generator=torch.Generator().manual_seed(5))
    assert [list(s.indices) for s in ours] == [list(s.indices) for s in theirs]


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("batch_size", [1, 3, 10])
def test_sequential_and_batch_samplers_equal_torch(batch_size: int, drop_last: bool) -> None:
    """SequentialSampler and BatchSampler give torch's batches and lengths."""
    theirs = tud.BatchSampler(tud.SequentialSampler(range(8)), batch_size, drop_last)
    ours = sd.BatchSampler(sd.SequentialSampler(range(8)), batch_size, drop_last)
    assert list(ours) == list(theirs)
    assert len(ours) == len(theirs)


@pytest.mark.parametrize("length", [0, 1, 5, 10, 11])
@pytest.mark.parametrize("replicas", [1, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_unshuffled_equals_torch(
    length: int, replicas: int, drop_last: bool
) -> None:
    """Without shuffle every rank's indices and length equal torch's (padding, drop_last)."""
    for rank in range(replicas):
        theirs = tud.DistributedSampler(range(length), replicas, rank, False, 0, drop_last)
        ours = sd.DistributedSampler(range(length), replicas, rank, False, 0, drop_last)
        assert list(ours) == list(theirs)
        assert (len(ours), ours.total_size) == (len(theirs), theirs.total_size)


@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_shuffled_has_torch_shape(drop_last: bool) -> None:
    """Shuffled, the order differs (NumPy) but shares, padding counts and coverage match torch."""
    length, replicas = 11, 3
    for epoch in (0, 1):
        theirs, ours = [], []
        for rank in range(replicas):
            t = tud.DistributedSampler(range(length), replicas, rank, drop_last=drop_last)
            o = sd.DistributedSampler(range(length), replicas, rank, drop_last=drop_last)
            t.set_epoch(epoch)
            o.set_epoch(epoch)
            theirs.append(list(t))
            ours.append(list(o))
        assert [len(x) for x in ours] == [len(x) for x in theirs]
        flat_theirs = [i for x in theirs for i in x]
        flat_ours = [i for x in ours for i in x]
        assert len(set(flat_ours)) == len(set(flat_theirs))
        assert len(flat_ours) - len(set(flat_ours)) == len(flat_theirs) - len(set(flat_theirs))


def _datasets(lib: Any) -> dict[str, Any]:
    x = np.arange(20).reshape(10, 2)
    y = np.arange(10) * 3
    tensor_args = (torch.from_numpy(x), torch.from_numpy(y)) if lib is tud else (x, y)
    return {
        "tensor": lib.TensorDataset(*tensor_args),
        "concat": lib.ConcatDataset([list(range(3)), list(range(10, 17))]),
        "stack_tuple": lib.StackDataset(list(range(10)), [str(i) for i in range(10)]),
        "stack_dict": lib.StackDataset(a=list(range(10)), b=list(range(10, 20))),
        "subset": lib.Subset(list(range(100)), [9, 3, 7, 1, 0, 5, 2, 8, 6, 4]),
    }


@pytest.mark.parametrize("name", ["tensor", "concat", "stack_tuple", "stack_dict", "subset"])
def test_map_datasets_equal_torch(name: str) -> None:
    """Item by item and through __getitems__ + default_collate, datasets give torch's samples."""
    theirs, ours = _datasets(tud)[name], _datasets(sd)[name]
    assert len(ours) == len(theirs)
    assert [as_numpy(ours[i]) for i in range(len(ours))] == [
        as_numpy(theirs[i]) for i in range(len(theirs))
    ]
    indices = [4, 0, 9, 4]
    their_samples = (
        theirs.__getitems__(indices)
        if hasattr(theirs, "__getitems__")
        else [theirs[i] for i in indices]
    )
    assert as_numpy(sd.default_collate(ours.__getitems__(indices))) == as_numpy(
        tud.default_collate(their_samples)
    )


def test_chain_dataset_equals_torch() -> None:
    """ChainDataset yields torch's sequence and length."""

    def make(lib: Any) -> Any:
        class Stream(lib.IterableDataset):  # type: ignore[misc,name-defined]
            def __init__(self, stop: int) -> None:
                self.stop = stop

            def __iter__(self) -> Any:
                return iter(range(self.stop))

            def __len__(self) -> int:
                return self.stop

        return lib.ChainDataset([Stream(2), Stream(3)])

    assert list(make(sd)) == list(make(tud))
    assert len(make(sd)) == len(make(tud))


BAD_CALLS: dict[str, Callable[[Any], Any]] = {
    "random_replacement": lambda lib: lib.RandomSampler(range(3), replacement=1),
    "random_num_samples": lambda lib: lib.RandomSampler(range(3), num_samples=0),
    "random_empty": lambda lib: lib.RandomSampler([]),
    "weighted_num_samples": lambda lib: lib.WeightedRandomSampler([1.0], 0),
    "weighted_replacement": lambda lib: lib.WeightedRandomSampler([1.0], 1, "yes"),
    "weighted_2d": lambda lib: lib.WeightedRandomSampler([[1.0]], 1),
    "weighted_negative": lambda lib: list(lib.WeightedRandomSampler([1.0, -1.0], 1)),
    "weighted_zero": lambda lib: list(lib.WeightedRandomSampler([0.0, 0.0], 1)),
    "weighted_too_many": lambda lib: list(lib.WeightedRandomSampler([1.0, 0.0], 3, False)),
    "batch_size_zero": lambda lib: lib.BatchSampler(range(3), 0, False),
    "batch_size_bool": lambda lib: lib.BatchSampler(range(3), True, False),
    "batch_drop_last": lambda lib: lib.BatchSampler(range(3), 2, 1),
    "distributed_rank": lambda lib: lib.DistributedSampler(range(3), 2, 2),
    "distributed_negative_rank": lambda lib: lib.DistributedSampler(range(3), 2, -1),
    "split_sum": lambda lib: lib.random_split(range(5), [2, 2]),
    "split_fraction": lambda lib: lib.random_split(range(5), [0.5, 0.75, -0.25]),
    "concat_empty": lambda lib: lib.ConcatDataset([]),
    "concat_iterable": lambda lib: lib.ConcatDataset([lib.ChainDataset([])]),
    "chain_map_style": lambda lib: list(lib.ChainDataset([[1]])),
    "tensor_mismatch": lambda lib: lib.TensorDataset(
        *(torch.zeros(2), torch.zeros(3)) if lib is tud else (np.zeros(2), np.zeros(3))
    ),
    "stack_both": lambda lib: lib.StackDataset([1], b=[1]),
    "stack_none": lambda lib: lib.StackDataset(),
    "stack_sizes": lambda lib: lib.StackDataset([1], [1, 2]),
    "concat_negative": lambda lib: lib.ConcatDataset([[1]])[-2],
    "dataset_getitem": lambda lib: lib.Dataset()[0],
    "sampler_iter": lambda lib: iter(lib.Sampler()),
}


@pytest.mark.parametrize("name", sorted(BAD_CALLS))
def test_errors_are_instances_of_torch_error_types(name: str) -> None:
    """For each bad argument torch rejects, stoker raises an instance of torch's error type."""
    call = BAD_CALLS[name]
    with pytest.raises(Exception) as theirs:  # noqa: PT011  (the type is what is compared)
        call(tud)
    with pytest.raises(theirs.type):
        call(sd)


def test_subset_override_check_matches_torch() -> None:
    """Subclassing Subset with only __getitem__ is NotImplementedError in both."""
    for lib in (tud, sd):

        class Bad(lib.Subset):  # type: ignore[misc,name-defined]
            def __getitem__(self, idx: Any) -> Any:
                return idx

        with pytest.raises(NotImplementedError):
            Bad([1], [0])


def test_zero_length_split_warns_like_torch() -> None:
    """Both warn with a UserWarning when a fraction gives an empty split."""
    for lib in (tud, sd):
        with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
            lib.random_split(range(1), [0.5, 0.5])
