"""The resume modes, one class per kind of loader state: picked per plan, saved, checked.

Each loader kind saves in one mode and accepts a fixed list of modes; a state a loader saved
passes its own mode's check, and the progress records beside the counters (replica states,
delivery marks) say what the modes save from them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from data_elastic_helpers import Shards

from stoker.data import DataLoader, Dataset, DistributedSampler, IterableDataset
from stoker.data._resume.iterable import WorkerStatesMode
from stoker.data._resume.progress import DeliveryMarks, EpochProgress, ReplicaStates, SavePoint
from stoker.data._resume.tracker import modes_for

N = 20


class Indexed(Dataset[int]):
    """Sample ``i`` is ``i``."""

    def __len__(self) -> int:
        return N

    def __getitem__(self, index: int) -> int:
        return index


class Counting(IterableDataset[int]):
    """Yields ``0 .. N-1`` split over the workers; no state_dict."""

    def __iter__(self) -> Iterator[int]:
        return iter(range(N))


class StatefulCounting(IterableDataset[int]):
    """Yields ``0 .. N-1`` and saves its position."""

    def __init__(self) -> None:
        self.position = 0

    def __iter__(self) -> Iterator[int]:
        while self.position < N:
            self.position += 1
            yield self.position - 1
        self.position = 0

    def state_dict(self) -> dict[str, int]:
        return {"position": self.position}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.position = state["position"]


def _fixed_batches() -> list[list[int]]:
    return [[i, i + 1] for i in range(0, N, 2)]


CASES: dict[str, tuple[Callable[[], DataLoader], str, str, list[str]]] = {
    "shuffled": (
        lambda: DataLoader(Indexed(), batch_size=2, shuffle=True, generator=3),
        "OffsetMode",
        "offset",
        ["offset"],
    ),
    "distributed": (
        lambda: DataLoader(
            Indexed(), batch_size=2, sampler=DistributedSampler(Indexed(), num_replicas=2, rank=1)
        ),
        "DistributedMode",
        "offset",
        ["offset", "merged"],
    ),
    "custom batch sampler": (
        lambda: DataLoader(Indexed(), batch_sampler=_fixed_batches()),
        "ReplayMode",
        "replay",
        ["replay"],
    ),
    "iterable without state": (
        lambda: DataLoader(Counting(), batch_size=2),
        "FastForwardMode",
        "fast_forward",
        ["fast_forward"],
    ),
    "iterable with state": (
        lambda: DataLoader(StatefulCounting(), batch_size=2),
        "DatasetMode",
        "dataset",
        ["dataset"],
    ),
    "iterable with state, workers": (
        lambda: DataLoader(StatefulCounting(), batch_size=2, num_workers=2, worker_type="thread"),
        "WorkerStatesMode",
        "worker_states",
        ["worker_states", "fast_forward"],
    ),
    "sharded": (
        lambda: DataLoader(Shards([4, 6, 5], 0, 1), batch_size=2),
        "DatasetMode",
        "dataset",
        ["dataset", "merged"],
    ),
    "sharded, workers": (
        lambda: DataLoader(
            Shards([4, 6, 5], 0, 1), batch_size=2, num_workers=2, worker_type="thread"
        ),
        "WorkerStatesMode",
        "worker_states",
        ["worker_states", "fast_forward", "merged"],
    ),
}


def _mid_epoch(loader: DataLoader, batches: int = 2) -> dict[str, Any]:
    iterator = iter(loader)
    for _ in range(batches):
        next(iterator)
    state = loader.state_dict()
    del iterator
    return state


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_loader_kind_saves_in_its_mode_and_accepts_only_its_modes(name: str) -> None:
    make, saves, saved_name, accepted = CASES[name]
    loader = make()
    modes = modes_for(loader._plan())
    assert type(modes.saves).__name__ == saves
    assert list(modes.loads) == accepted
    state = _mid_epoch(loader)
    assert state["mode"] == saved_name
    # the state a loader saved passes its own mode's check, and loads into a twin loader
    modes.loads[state["mode"]].check(loader._plan(), state, state["batches"])
    make().load_state_dict(state)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_state_in_a_mode_the_loader_does_not_accept_names_the_accepted_ones(name: str) -> None:
    make, _, _, accepted = CASES[name]
    state = _mid_epoch(make())
    foreign = next(m for m in ["replay", "offset", "dataset"] if m not in accepted)
    state["mode"] = foreign
    with pytest.raises(ValueError, match=r"state's mode must be one of") as caught:
        make().load_state_dict(state)
    assert repr(accepted) in str(caught.value)
    assert repr(foreign) in str(caught.value)


@pytest.mark.parametrize("mode", [["offset"], {"offset": 1}, None, 3])
def test_a_mode_that_is_not_a_name_is_refused_as_such(mode: Any) -> None:
    make = CASES["shuffled"][0]
    state = _mid_epoch(make())
    state["mode"] = mode
    with pytest.raises(ValueError, match=r"state's mode must be one of \['offset'\]"):
        make().load_state_dict(state)


def test_delivery_marks_keep_the_delivered_prefix_and_the_batches_ahead_of_it() -> None:
    marks = DeliveryMarks()
    for item in (1, 3, 0, 4):
        marks.deliver(item)
    assert (marks.mark, marks.ahead) == (2, {3, 4})
    marks.deliver(2)
    assert (marks.mark, marks.ahead) == (5, set())
    progress = EpochProgress(index=0, yielded=9, resumed=4)
    assert progress.items_delivered() == (5, [])  # in order: what this iteration yielded
    progress.marks = DeliveryMarks(mark=1, ahead={5, 3})
    assert progress.items_delivered() == (1, [3, 5])


def test_replica_states_are_complete_only_when_every_reporting_worker_has_one() -> None:
    replicas = ReplicaStates(states={0: {"p": 1}})
    assert replicas.complete(3) == [{"p": 1}, None, None]  # workers 1 and 2 not reported yet
    replicas.states[1] = None  # worker 1 reported a batch without a state
    assert replicas.complete(3) is None
    replicas = ReplicaStates(states={0: {"p": 1}}, failed=True)
    assert replicas.complete(3) is None


def test_worker_states_are_saved_as_a_fast_forward_when_one_is_missing() -> None:
    loader = DataLoader(StatefulCounting(), batch_size=2, num_workers=2, worker_type="thread")
    plan = loader._plan()
    progress = EpochProgress(index=0, yielded=3, started=True)
    progress.replicas = ReplicaStates(states={0: {"position": 4}, 1: None}, last_worker=0)
    state = WorkerStatesMode().save(plan, {"batches": 3}, SavePoint(progress, True, False))
    assert (state["mode"], state["sampler_state"]) == ("fast_forward", None)
    progress.replicas.states[1] = {"position": 2}
    state = WorkerStatesMode().save(plan, {"batches": 3}, SavePoint(progress, True, False))
    assert state["mode"] == "worker_states"
    assert state["sampler_state"] == {
        "workers": [{"position": 4}, {"position": 2}],
        "next_worker": 1,
        "exhausted": [],
    }
