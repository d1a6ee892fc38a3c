"""DataLoader.state_dict()/load_state_dict() in one process: exact resume for every sampler kind."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import hypothesis
import hypothesis.strategies as hst
import numpy as np
import pytest
from data_fakes import Restarting

from stoker.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

N = 23


class Indexed(Dataset[int]):
    """Sample ``i`` is ``i``."""

    def __init__(self, n: int = N) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        return int(index)


class FixedBatches(Sampler[list[int]]):
    """A custom batch sampler without state: batches of 3 in one fixed shuffled order."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.epoch = 0

    def _order(self) -> list[int]:
        order: list[int] = np.random.default_rng(self.epoch).permutation(self.n).tolist()
        return order

    def __iter__(self) -> Iterator[list[int]]:
        order = self._order()
        for start in range(0, self.n, 3):
            yield order[start : start + 3]

    def __len__(self) -> int:
        return (self.n + 2) // 3


class StatefulBatches(FixedBatches):
    """A batch sampler whose order changes every epoch, with state_dict/load_state_dict."""

    def __iter__(self) -> Iterator[list[int]]:
        yield from super().__iter__()
        self.epoch += 1

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch = state["epoch"]


def _weights() -> list[float]:
    return [float(i % 5) + 0.5 for i in range(N)]


LOADERS: dict[str, Callable[[], DataLoader]] = {
    "sequential": lambda: DataLoader(Indexed(), batch_size=4),
    "sequential-drop-last": lambda: DataLoader(Indexed(), batch_size=4, drop_last=True),
    "shuffle-int-seed": lambda: DataLoader(Indexed(), batch_size=4, shuffle=True, generator=5),
    "shuffle-numpy-generator": lambda: DataLoader(
        Indexed(), batch_size=4, shuffle=True, generator=np.random.default_rng(5)
    ),
    "random-replacement": lambda: DataLoader(
        Indexed(),
        batch_size=5,
        sampler=RandomSampler(Indexed(), replacement=True, num_samples=40, generator=2),
    ),
    "random-no-replacement-over-length": lambda: DataLoader(
        Indexed(), batch_size=5, sampler=RandomSampler(Indexed(), num_samples=50, generator=3)
    ),
    "weighted-replacement": lambda: DataLoader(
        Indexed(), batch_size=4, sampler=WeightedRandomSampler(_weights(), 30, generator=4)
    ),
    "weighted-no-replacement": lambda: DataLoader(
        Indexed(),
        batch_size=4,
        sampler=WeightedRandomSampler(_weights(), 15, replacement=False, generator=4),
    ),
    "subset-random": lambda: DataLoader(
        Indexed(), batch_size=3, sampler=SubsetRandomSampler(list(range(3, 20)), generator=9)
    ),
    "distributed": lambda: DataLoader(
        Indexed(), batch_size=3, sampler=DistributedSampler(Indexed(), num_replicas=3, rank=1)
    ),
    "no-batching": lambda: DataLoader(Indexed(), batch_size=None, shuffle=True, generator=1),
    "custom-batch-sampler-replay": lambda: DataLoader(Indexed(), batch_sampler=FixedBatches(N)),
    "custom-batch-sampler-state": lambda: DataLoader(Indexed(), batch_sampler=StatefulBatches(N)),
    "batch-sampler-over-custom": lambda: DataLoader(
        Indexed(), batch_sampler=BatchSampler(list(range(N - 1, -1, -1)), 4, False)
    ),
}

EPOCHS = 3


def _epochs(loader: DataLoader, count: int) -> list[list[Any]]:
    """Iterate ``count`` epochs; DistributedSampler epochs are set the way users set them."""
    out: list[list[Any]] = []
    for _ in range(count):
        out.append([np.asarray(batch).tolist() for batch in loader])
    return out


def _flatten(epochs: list[list[Any]]) -> list[Any]:
    return [batch for epoch in epochs for batch in epoch]


def _resume_run(make: Callable[[], DataLoader], k: int) -> tuple[list[Any], dict[str, Any]]:
    """Take ``k`` batches, save, load into a fresh loader, run until EPOCHS epochs are done."""
    first = make()
    taken: list[Any] = []
    iterator = iter(first)
    while len(taken) < k:
        try:
            taken.append(np.asarray(next(iterator)).tolist())
        except StopIteration:
            iterator = iter(first)
    state = json.loads(json.dumps(first.state_dict()))
    del iterator
    second = make()
    second.load_state_dict(state)
    per_epoch = len(_flatten(_epochs(make(), 1)))
    while len(taken) < per_epoch * EPOCHS:
        epoch = [np.asarray(batch).tolist() for batch in second]
        assert epoch, "a resumed loader yielded an empty epoch"
        taken.extend(epoch)
    return taken, state


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_resume_after_k_batches_equals_uninterrupted_run(name: str) -> None:
    """After k batches (start, middle, last, end of epoch) the rest equals an uninterrupted run."""
    make = LOADERS[name]
    expected = _flatten(_epochs(make(), EPOCHS))
    per_epoch = len(expected) // EPOCHS
    for k in sorted({0, 1, per_epoch // 2, per_epoch - 1, per_epoch, per_epoch + 2}):
        got, state = _resume_run(make, k)
        assert got == expected, f"{name}: resumed after {k} batches"
        assert len(json.dumps(state)) < 2000, "the state must stay small"


def test_state_after_an_epoch_ended_starts_the_next_epoch() -> None:
    """Saved after a for-loop over a whole epoch, the state resumes at the next epoch's start."""
    loader = DataLoader(Indexed(), batch_size=4, shuffle=True, generator=11)
    expected = _epochs(DataLoader(Indexed(), batch_size=4, shuffle=True, generator=11), 2)
    first_epoch = [np.asarray(batch).tolist() for batch in loader]
    state = loader.state_dict()
    assert state["epoch"] == 1
    assert state["batches"] == 0
    fresh = DataLoader(Indexed(), batch_size=4, shuffle=True, generator=11)
    fresh.load_state_dict(state)
    assert [first_epoch, *_epochs(fresh, 1)] == expected


def test_state_of_an_unused_loader_starts_at_epoch_zero() -> None:
    """A state saved before any iteration loads into a fresh loader as a no-op."""
    state = DataLoader(Indexed(), batch_size=4, shuffle=True, generator=3).state_dict()
    assert (state["epoch"], state["batches"]) == (0, 0)
    fresh = DataLoader(Indexed(), batch_size=4, shuffle=True, generator=3)
    fresh.load_state_dict(state)
    expected = _epochs(DataLoader(Indexed(), batch_size=4, shuffle=True, generator=3), 2)
    assert _epochs(fresh, 2) == expected


class EvensFirst(RandomSampler):
    """A RandomSampler subclass whose own __iter__ yields each epoch's even indices first."""

    def __iter__(self) -> Iterator[int]:
        order = list(super().__iter__())
        return iter([i for i in order if i % 2 == 0] + [i for i in order if i % 2])


@pytest.mark.parametrize("generator", [None, 7, "numpy"])
@pytest.mark.parametrize("epoch", [0, 1])
def test_sampler_subclass_with_its_own_iter_resumes_exactly(generator: Any, epoch: int) -> None:
    """A sampler subclass overriding __iter__ resumes by replaying its epoch's randomness.

    A stoker sampler subclass that overrides __iter__ resumes by replaying its epoch with
    the randomness that epoch drew (generator=None included): the rest equals the saved run's.
    """

    def make() -> DataLoader:
        source = np.random.default_rng(7) if generator == "numpy" else generator
        return DataLoader(Indexed(), batch_size=4, sampler=EvensFirst(Indexed(), generator=source))

    loader = make()
    for _ in range(epoch):
        list(loader)
    iterator = iter(loader)
    [next(iterator) for _ in range(2)]
    state = json.loads(json.dumps(loader.state_dict()))
    assert state["mode"] == "replay"
    rest = [batch.tolist() for batch in iterator]
    following = [batch.tolist() for batch in loader]
    fresh = make()
    fresh.load_state_dict(state)
    assert [batch.tolist() for batch in fresh] == rest
    if generator is not None:  # the global generator differs from epoch to epoch, as it should
        assert [batch.tolist() for batch in fresh] == following


def test_a_batch_sampler_that_restarts_in_iter_replays_its_epoch_once() -> None:
    """A batch sampler whose ``__iter__`` restarts it and returns itself resumes by replay.

    A batch sampler whose ``__iter__`` restarts it and returns itself resumes by replay:
    the delivered batches are skipped and the rest come once each from one ``iter()`` call.
    """
    batches = [[5, 1], [0, 4], [2, 3], [6]]
    loader = DataLoader(Indexed(), batch_sampler=Restarting(batches))
    iterator = iter(loader)
    [next(iterator) for _ in range(2)]
    state = json.loads(json.dumps(loader.state_dict()))
    assert state["mode"] == "replay"
    resumed = Restarting(batches)
    fresh = DataLoader(Indexed(), batch_sampler=resumed)
    fresh.load_state_dict(state)
    assert [batch.tolist() for batch in itertools.islice(fresh, len(batches))] == batches[2:]
    assert resumed.iter_calls == 1


def test_torch_generator_shuffle_resumes_exactly() -> None:
    """shuffle=True with a torch.Generator: the resumed order equals the uninterrupted one."""
    torch = pytest.importorskip("torch")

    def make() -> DataLoader:
        return DataLoader(
            Indexed(), batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(3)
        )

    expected = _flatten(_epochs(make(), EPOCHS))
    for k in (0, 2, 6):
        got, state = _resume_run(make, k)
        assert got == expected, f"resumed after {k} batches"
        assert "torch" in state["generator"]


def test_distributed_sampler_resume_with_set_epoch_calls() -> None:
    """The usual loop (set_epoch each epoch) resumes mid-epoch at the saved offset."""

    def make() -> tuple[DataLoader, DistributedSampler]:
        sampler = DistributedSampler(Indexed(), num_replicas=2, rank=0, seed=4)
        return DataLoader(Indexed(), batch_size=2, sampler=sampler), sampler

    loader, sampler = make()
    expected: list[Any] = []
    for epoch in range(3):
        sampler.set_epoch(epoch)
        expected += [batch.tolist() for batch in loader]
    loader, sampler = make()
    sampler.set_epoch(1)
    iterator = iter(loader)
    got = list(expected[:6])
    got += [next(iterator).tolist() for _ in range(3)]
    state = json.loads(json.dumps(loader.state_dict()))
    loader, sampler = make()
    loader.load_state_dict(state)
    for epoch in (1, 2):
        sampler.set_epoch(epoch)
        got += [batch.tolist() for batch in loader]
    assert got == expected


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda s: s.update(version=99), "version"),
        (lambda s: s.update(length=N + 1), "length"),
        (lambda s: s.update(inner_sampler="SequentialSampler"), "inner_sampler"),
        (lambda s: s.update(batch_size=8), "batch_size"),
        (lambda s: s.update(format="other"), "format"),
    ],
)
def test_state_that_does_not_fit_raises_naming_the_field(
    change: Callable[[dict[str, Any]], None], field: str
) -> None:
    """A state edited (or saved elsewhere) so that it does not fit raises a ValueError naming it."""
    loader = DataLoader(Indexed(), batch_size=4, shuffle=True, generator=1)
    next(iter(loader))
    state = loader.state_dict()
    change(state)
    with pytest.raises(ValueError, match=field):
        DataLoader(Indexed(), batch_size=4, shuffle=True, generator=1).load_state_dict(state)


def test_state_from_another_dataset_length_or_sampler_kind_raises() -> None:
    """Loading into a loader over another length, or with another sampler, says what differs."""
    state = DataLoader(Indexed(), batch_size=4, shuffle=True, generator=1).state_dict()
    with pytest.raises(ValueError, match=r"length is 23 in the state but 24 here"):
        DataLoader(Indexed(24), batch_size=4, shuffle=True, generator=1).load_state_dict(state)
    sequential = DataLoader(Indexed(), batch_size=4, sampler=SequentialSampler(Indexed()))
    with pytest.raises(ValueError, match=r"inner_sampler is 'RandomSampler' in the state"):
        sequential.load_state_dict(state)
    with pytest.raises(TypeError, match="must be a dict"):
        sequential.load_state_dict([1, 2])  # type: ignore[arg-type]


class Counting(IterableDataset[int]):
    """Yields ``0, 1, ...`` up to ``stop``, keeping its position; no state_dict."""

    def __init__(self, stop: int) -> None:
        self.stop = stop
        self.position = 0

    def __iter__(self) -> Iterator[int]:
        while self.position < self.stop:
            self.position += 1
            yield self.position - 1
        self.position = 0  # the next epoch starts again


class StatefulCounting(Counting):
    """Counting whose state is its position."""

    def state_dict(self) -> dict[str, int]:
        return {"position": self.position}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.position = state["position"]


@pytest.mark.parametrize("stateful", [True, False], ids=["dataset-state", "fast-forward"])
@pytest.mark.parametrize("k", [0, 2, 5])
def test_iterable_dataset_resumes_in_process(stateful: bool, k: int) -> None:
    """An IterableDataset resumes through its own state_dict, or by fast-forward without one."""
    kind = StatefulCounting if stateful else Counting
    expected = _epochs(DataLoader(kind(10), batch_size=2), 2)
    loader = DataLoader(kind(10), batch_size=2)
    iterator = iter(loader)
    got = [next(iterator).tolist() for _ in range(k)]
    state = json.loads(json.dumps(loader.state_dict()))
    assert state["mode"] == ("dataset" if stateful else "fast_forward")
    fresh = DataLoader(kind(10), batch_size=2)
    fresh.load_state_dict(state)
    got += [batch.tolist() for batch in fresh]
    got += [batch.tolist() for batch in fresh] if k < 5 else []
    assert got == _flatten(expected)[: len(got)]
    assert len(got) == 10 if k < 5 else len(got) == 5


def test_iterable_state_from_another_num_workers_raises() -> None:
    """An IterableDataset's batches depend on the workers, so num_workers must match."""
    state = DataLoader(Counting(10), batch_size=2).state_dict()
    other = DataLoader(Counting(10), batch_size=2, num_workers=1)
    with pytest.raises(ValueError, match="num_workers is 0 in the state but 1 here"):
        other.load_state_dict(state)


def test_iterable_worker_states_must_fit_the_loader() -> None:
    """Each mismatch of a per-worker state raises ValueError saying what differs.

    A per-worker state needs the same num_workers, a dataset with load_state_dict, and the
    shape state_dict() gives; each mismatch raises ValueError saying what differs.
    """
    two = DataLoader(StatefulCounting(10), batch_size=2, num_workers=2)
    state = json.loads(json.dumps(two.state_dict()))
    assert (state["mode"], state["sampler_state"]) == ("worker_states", None)
    one = DataLoader(StatefulCounting(10), batch_size=2, num_workers=1)
    with pytest.raises(ValueError, match=r"num_workers is 2 in the state but 1 here \(an Iter"):
        one.load_state_dict(state)
    state["sampler_state"] = {"workers": [None], "next_worker": 0, "exhausted": []}
    with pytest.raises(ValueError, match=r"one dataset state per worker \(2\)"):
        DataLoader(StatefulCounting(10), batch_size=2, num_workers=2).load_state_dict(state)
    state["sampler_state"]["workers"] = [{"position": 2}, None]
    with pytest.raises(ValueError, match="Counting has no state_dict\\(\\)/load_state_dict"):
        DataLoader(Counting(10), batch_size=2, num_workers=2).load_state_dict(state)
    without_workers = DataLoader(Counting(10), batch_size=2, num_workers=2).state_dict()
    assert without_workers["mode"] == "fast_forward"


def test_sampler_set_epoch_keeps_a_loaded_offset_for_the_same_epoch() -> None:
    """RandomSampler.set_epoch(e) after loading a state of epoch e keeps its offset."""
    sampler = RandomSampler(Indexed(), generator=8)
    iterator = iter(sampler)
    head = [next(iterator) for _ in range(5)]
    state = sampler.state_dict()
    fresh = RandomSampler(Indexed(), generator=8)
    fresh.load_state_dict(state)
    fresh.set_epoch(0)
    assert head + list(fresh) == list(RandomSampler(Indexed(), generator=8))
    fresh.load_state_dict(state)
    fresh.set_epoch(1)
    assert list(fresh) == list(iter_epoch(RandomSampler(Indexed(), generator=8), 1))


def iter_epoch(sampler: RandomSampler, epoch: int) -> Iterator[int]:
    """Return the indices of one epoch of ``sampler``."""
    sampler.set_epoch(epoch)
    return iter(sampler)


@pytest.mark.parametrize("name", ["shuffle-int-seed", "distributed", "custom-batch-sampler-state"])
@pytest.mark.parametrize("opened", [False, True], ids=["loaded", "loaded-and-iter"])
def test_saving_again_right_after_loading_keeps_the_position(name: str, opened: bool) -> None:
    """A state saved right after loading (before any batch, even after iter()) resumes alike."""
    make = LOADERS[name]
    expected = _flatten(_epochs(make(), 2))
    first = make()
    iterator = iter(first)
    head = [np.asarray(next(iterator)).tolist() for _ in range(3)]
    second = make()
    second.load_state_dict(json.loads(json.dumps(first.state_dict())))
    if opened:
        iter(second)
    third = make()
    third.load_state_dict(json.loads(json.dumps(second.state_dict())))
    rest = _flatten(_epochs(third, 2))
    assert (head + rest)[: len(expected)] == expected


def _shuffled() -> DataLoader:
    return DataLoader(Indexed(), batch_size=4, shuffle=True, generator=np.random.default_rng(7))


def _mid_epoch_state() -> dict[str, Any]:
    loader = _shuffled()
    iterator = iter(loader)
    next(iterator)
    next(iterator)
    return loader.state_dict()


def _mutated(state: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``state`` with the field at ``path`` (``"a.b"``: key b of field a) set."""
    copied = json.loads(json.dumps(state))
    *parents, key = path.split(".")
    target = copied
    for parent in parents:
        target = target[parent]
    target[key] = value
    return copied


def _rest(loader: DataLoader) -> list[list[Any]]:
    """The rest of the loaded epoch, then one more epoch."""
    return [batch.tolist() for batch in loader] + [batch.tolist() for batch in loader]


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("mode", "bogus", r"one of \['offset'\]"),
        ("mode", "replay", r"one of \['offset'\]"),
        ("epoch", -1, "an int >= 0"),
        ("epoch", "1", "an int >= 0"),
        ("batches", -3, "an int >= 0 and <= 6"),
        ("batches", 10**9, "an int >= 0 and <= 6"),
        ("batches", 2.0, "an int >= 0"),
        ("batches", True, "an int >= 0"),
        ("base_seed", "x", "an int >= 0"),
        ("base_seed", -5, "an int >= 0"),
        ("sample_seed", "x", "an int >= 0"),
        ("sample_seed", 1 << 64, "an int >= 0"),
        ("generator", {}, r"\{'numpy': state\}"),
        ("generator", {"numpy": {"bit_generator": "PCG64"}}, "a state of this loader's gen"),
        ("generator", {"numpy": "x"}, "bit_generator.state dict"),
        ("generator", None, r"\{'numpy': state\}"),
        ("sampler_state", None, "the sampler's state dict"),
        ("sampler_state", 5, "the sampler's state dict"),
        ("sampler_state.offset", -8, r"must be 8 \(batches 2 x 4"),
        ("sampler_state.offset", 10**9, "must be 8"),
        ("sampler_state.seed", "s", "an int >= 0"),
        ("sampler_state.epoch", -2, "an int >= 0"),
        ("sampler_state.generator_state", {}, "state this loader's sampler accepts"),
    ],
)
def test_each_bad_field_raises_a_value_error_naming_it_and_changes_nothing(
    field: str, value: Any, expected: str
) -> None:
    """A field of the wrong type, out of range or not agreeing with the loader is refused.

    The ValueError names the field, the value and what was expected, and the loader is left as
    it was: the unmodified state still loads and resumes exactly afterwards.
    """
    state = _mid_epoch_state()
    bad = _mutated(state, field, value)
    key = field.rsplit(".", maxsplit=1)[-1]
    loader = _shuffled()
    with pytest.raises(ValueError, match=key) as caught:
        loader.load_state_dict(bad)
    assert re.search(expected, str(caught.value)), str(caught.value)
    assert repr(value)[:30] in str(caught.value)
    reference = _shuffled()
    reference.load_state_dict(state)
    loader.load_state_dict(state)
    assert _rest(loader) == _rest(reference)


@pytest.mark.parametrize("loader", ["shuffled", "distributed"])
def test_an_empty_sampler_state_says_which_key_is_missing_and_what_was_given(loader: str) -> None:
    """sampler_state={} names the missing key and shows the dict given, not "got None"."""
    make = _shuffled if loader == "shuffled" else LOADERS["distributed"]
    source = make()
    next(iter(source))
    state = source.state_dict()
    state["sampler_state"] = {}
    with pytest.raises(ValueError, match=r"sampler_state is missing 'epoch', got \{\}") as caught:
        make().load_state_dict(state)
    assert "None" not in str(caught.value)


def test_a_value_error_leaves_the_loader_generator_as_it_was() -> None:
    """A state whose generator loads but whose sampler_state is refused restores nothing."""
    state = _mid_epoch_state()
    state["sampler_state"]["length"] = N + 1
    loader, fresh = _shuffled(), _shuffled()
    with pytest.raises(ValueError, match="sampler_state"):
        loader.load_state_dict(state)
    assert _rest(loader) == _rest(fresh)


_FREE = {"base_seed", "sample_seed", "epoch", "sampler_state.seed", "sampler_state.epoch"}
"""Fields whose other valid values change only seeds or counters, not a batch of this test."""

_PATHS = [
    *(key for key in _mid_epoch_state() if key != "sampler_state"),
    "sampler_state",
    *(f"sampler_state.{key}" for key in _mid_epoch_state()["sampler_state"]),
    "generator.numpy",
    "generator.numpy.state",
]

_ANY_VALUE = hst.one_of(
    hst.none(),
    hst.booleans(),
    hst.integers(min_value=-(2**70), max_value=2**70),
    hst.integers(min_value=-3, max_value=30),
    hst.floats(allow_nan=True),
    hst.text(max_size=8),
    hst.sampled_from(["offset", "replay", "dataset", "worker_states", "fast_forward", "map"]),
    hst.lists(hst.integers(-2, 5), max_size=3),
    hst.dictionaries(hst.text(max_size=4), hst.integers(-2, 5), max_size=2),
)


@hypothesis.settings(max_examples=150, deadline=None, derandomize=True)
@hypothesis.given(path=hst.sampled_from(_PATHS), value=_ANY_VALUE)
def test_a_mutated_state_is_refused_naming_its_field_or_resumes_exactly(
    path: str, value: Any
) -> None:
    """Any field of a valid state set to any value: a named error, or the original resume.

    Any one field of a valid state set to any value: a ValueError or TypeError that names
    the field, never another exception; or, when accepted, exactly the original resume.
    """
    state = _mid_epoch_state()
    bad = _mutated(state, path, value)
    loader = _shuffled()
    try:
        loader.load_state_dict(bad)
    except (ValueError, TypeError) as err:
        message: str | None = str(err)
    else:
        message = None
    if message is not None:
        assert path.split(".", maxsplit=1)[0] in message, (path, value, message)
        return
    if path in _FREE:
        return
    reference = _shuffled()
    reference.load_state_dict(state)
    assert _rest(loader) == _rest(reference), (path, value)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("next_worker", 2),
        ("next_worker", -1),
        ("next_worker", True),
        ("exhausted", [0, 1]),
        ("exhausted", [5]),
        ("exhausted", [0, 0]),
        ("exhausted", ["0"]),
    ],
)
def test_iterable_worker_state_positions_must_name_real_workers(key: str, value: Any) -> None:
    """next_worker and exhausted must be worker ids of this loader (fewer than all exhausted)."""
    state = DataLoader(StatefulCounting(10), batch_size=2, num_workers=2).state_dict()
    state["sampler_state"] = {"workers": [{"position": 2}, None], "next_worker": 1, "exhausted": []}
    state["batches"] = 1
    state["sampler_state"][key] = value
    loader = DataLoader(StatefulCounting(10), batch_size=2, num_workers=2)
    with pytest.raises(
        ValueError, match=rf"sampler_state's {key} must .*got {re.escape(repr(value))}"
    ):
        loader.load_state_dict(state)
