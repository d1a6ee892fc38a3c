"""merge_states and loading a merged state on another world size (in one process, ranks given)."""

from __future__ import annotations

import collections
import json
import math
import random
import time
from collections.abc import Callable
from typing import Any

import pytest
from data_elastic_helpers import (
    Shards,
    check_exactly_once,
    check_once_but_padding,
    rank_loader,
    take,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from stoker.data import DataLoader, DistributedSampler, merge_states


def _spec(**changes: Any) -> dict[str, Any]:
    return {"length": 29, "batch_size": 2, "workers": 0, **changes}


def _phase(spec: dict[str, Any], world: int, counts: list[int | None], state: Any = None):
    """Each rank of ``world`` loads ``state`` (if any) and takes its count; samples, states."""
    samples, states = [], []
    for rank in range(world):
        loader = rank_loader(spec, world, rank)
        if state is not None:
            loader.load_state_dict(state)
        got, saved = take(loader, counts[rank])
        samples.append(got)
        states.append(saved)
    return samples, states


def _flat(samples: list[list[int]]) -> list[int]:
    return [x for rank in samples for x in rank]


def test_merged_state_of_4_ranks_resumes_on_2_with_every_sample_once() -> None:
    """4 ranks take 2, 3, 2, 1 batches; 2 ranks finish: 29 samples, one padding repeat."""
    spec = _spec()
    first, states = _phase(spec, 4, [2, 3, 2, 1])
    merged = merge_states(states)
    assert json.loads(json.dumps(merged)) == merged
    assert merged["sampler_state"]["merged"]["consumed"]["watermark"] <= 16
    second, _ = _phase(spec, 2, [None, None], merged)
    remainder = 29 - len(_flat(first))
    assert [len(s) for s in second] == [math.ceil(remainder / 2)] * 2
    check_exactly_once([_flat(first), _flat(second)], list(range(29)), extras=1)


def test_merged_state_on_the_same_world_resumes_as_an_uninterrupted_run() -> None:
    """Each rank a prefix and the same world: each rank goes on at its offset, same batches."""
    spec = _spec()
    first, states = _phase(spec, 4, [1, 3, 2, 0])
    second, _ = _phase(spec, 4, [None] * 4, merge_states(states))
    whole, _ = _phase(spec, 4, [None] * 4)
    assert [a + b for a, b in zip(first, second, strict=True)] == whole


def test_a_merged_epoch_nobody_began_is_a_fresh_runs_on_the_new_world() -> None:
    """Nothing consumed: 5 ranks read the epoch as a fresh 5-rank run does.

    Nothing consumed (every rank saved before its first batch): 5 ranks read the epoch as
    a fresh 5-rank run does (30 samples), not a split of the 28 positions 4 ranks had.
    """
    spec = _spec(length=30, drop_last=True)
    states = []
    for rank in range(4):
        states.append(rank_loader(spec, 4, rank).state_dict())
    merged = merge_states(states)
    resumed, _ = _phase(spec, 5, [None] * 5, merged)
    fresh, _ = _phase(spec, 5, [None] * 5)
    assert resumed == fresh
    assert len(_flat(resumed)) == 30


def test_next_epoch_after_an_elastic_resume_is_a_fresh_runs() -> None:
    """After finishing the resumed epoch on 3 ranks, epoch 1 equals a fresh 3-rank run's."""
    spec = _spec(drop_last=True)
    _, states = _phase(spec, 4, [2, 2, 2, 2])
    merged = merge_states(states)
    for rank in range(3):
        loader = rank_loader(spec, 3, rank)
        loader.load_state_dict(merged)
        take(loader, None)
        resumed, _ = take(loader, None, epoch=1)
        fresh, _ = take(rank_loader(spec, 3, rank), None, epoch=1)
        assert resumed == fresh


def test_out_of_order_delivery_is_saved_exactly() -> None:
    """in_order=False with thread workers: the state holds what was delivered, not a count."""
    spec = _spec(workers=2, in_order=False, length=31, worker_type="thread")
    first, states = _phase(spec, 2, [3, 3])
    second, _ = _phase(_spec(length=31), 3, [None] * 3, merge_states(states))
    remainder = 31 - len(_flat(first))
    extras = math.ceil(remainder / 3) * 3 - remainder
    check_exactly_once([_flat(first), _flat(second)], list(range(31)), extras=extras)


def test_a_ranks_state_resumes_out_of_order_delivery_on_its_own_rank() -> None:
    """Unmerged, one rank's out-of-order state resumes on that rank, skipping exactly those."""
    spec = _spec(workers=2, in_order=False, length=40, worker_type="thread")
    got, state = take(rank_loader(spec, 2, 1), 4)
    rest, _ = take_loaded(spec, 2, 1, state)
    whole, _ = take(rank_loader(_spec(length=40), 2, 1), None)
    assert sorted(got + rest) == sorted(whole)
    assert len(got + rest) == len(whole)


def take_loaded(spec: dict[str, Any], world: int, rank: int, state: Any) -> Any:
    """A fresh loader of ``rank`` that loads ``state`` and finishes the epoch."""
    loader = rank_loader(dict(spec, workers=0, in_order=True), world, rank)
    loader.load_state_dict(state)
    return take(loader, None)


@settings(max_examples=25, deadline=None)
@given(
    length=st.integers(1, 30),
    first=st.integers(1, 5),
    second=st.integers(1, 5),
    drop_last=st.booleans(),
    data=st.data(),
)
def test_loader_states_merge_and_resume_exactly_once(
    length: int, first: int, second: int, drop_last: bool, data: st.DataObject
) -> None:
    """Random worlds, prefixes and drop_last: nothing is lost but cuts, and only padding repeats.

    Random worlds, prefixes per rank and drop_last: through real loaders, nothing is lost
    (but drop_last's cuts) and only padding repeats.
    """
    spec = _spec(length=length, drop_last=drop_last, shuffle=data.draw(st.booleans()))
    per_rank = len(DistributedSampler(range(length), first, 0, drop_last=drop_last))
    batches = -(-per_rank // 2)  # a rank that takes them all has ended the epoch: not here
    counts = [data.draw(st.integers(0, max(0, batches - 1))) for _ in range(first)]
    samples_1, states = _phase(spec, first, counts)
    samples_2, _ = _phase(spec, second, [None] * second, merge_states(states))
    delivered = _flat(samples_1) + _flat(samples_2)
    assert set(delivered) <= set(range(length))
    if drop_last:
        assert len(delivered) == len(set(delivered)), "drop_last never repeats"
        assert length - len(delivered) < first + second, "each world cuts less than a row"
    else:
        assert set(delivered) == set(range(length)), "every sample delivered"
        assert len(delivered) - length < first + second, "each world pads less than a row"


_CHAIN_CASES = 300
_CHAIN_BLOCKS = 6


def _chain_case(seed: int) -> dict[str, Any]:
    """One random N -> M -> K (...) chain: the loader and, per phase, world and counts.

    A count is the batches a rank takes before saving: ``None`` finishes the epoch (the last
    phase), ``"unopened"`` saves at once after loading (no ``iter()``), 0 opens the epoch
    and takes none (workers prefetch), and counts past the rank's list end its part early.
    """
    rng = random.Random(seed)
    in_order = rng.random() < 0.75
    spec = _spec(
        length=rng.randint(1, 30),
        batch_size=rng.randint(1, 3),
        drop_last=rng.random() < 0.5,
        batch_drop_last=rng.random() < 0.2,
        shuffle=rng.random() < 0.7,
        in_order=in_order,
        workers=0 if in_order else 2,
        worker_type="thread",
        delay=0.001,
    )
    worlds = [rng.randint(1, 5) for _ in range(rng.randint(2, 4))]
    choices: list[Any] = ["unopened", 0, 1, 2, 3, 5, 100]
    counts = [[rng.choice(choices) for _ in range(world)] for world in worlds[:-1]]
    return {"spec": spec, "worlds": worlds, "counts": [*counts, [None] * worlds[-1]]}


def _run_chain(case: dict[str, Any]) -> None:
    """Run the chain, merging each phase's states into the next phase's; check every epoch."""
    spec, state = case["spec"], None
    epoch = 0
    by_epoch: dict[int, list[list[int]]] = collections.defaultdict(list)
    worlds: dict[int, list[int]] = collections.defaultdict(list)
    for world, counts in zip(case["worlds"], case["counts"], strict=True):
        states, delivered = [], []
        for rank, count in enumerate(counts):
            loader = rank_loader(spec, world, rank)
            if state is not None:
                loader.load_state_dict(state)
            if count == "unopened":  # the loop sets the epoch, then saves at once
                loader.sampler.set_epoch(epoch)
                got, saved = [], json.loads(json.dumps(loader.state_dict()))
            else:
                got, saved = take(loader, count, epoch)
            delivered += got
            states.append(saved)
        by_epoch[epoch].append(delivered)
        worlds[epoch].append(world)
        if counts[0] is not None:
            state = merge_states(states)
            epoch = state["epoch"]  # the epoch the training loop goes on with
    cut = spec["batch_size"] if spec["batch_drop_last"] else 0
    for number, phases in by_epoch.items():
        check_once_but_padding(phases, spec["length"], worlds[number], spec["drop_last"], cut)


@pytest.mark.parametrize("block", range(_CHAIN_BLOCKS))
def test_random_chains_of_worlds_deliver_every_sample_once(block: int) -> None:
    """300 seeded N -> M -> K chains through real loaders: states merge, every sample comes once.

    300 seeded N -> M -> K chains through real loaders (saves before any batch, after
    prefetch only, mid-list and past a rank's list; the sampler's and the loader's drop_last
    both ways; in_order False with thread workers): every rank's state after a resume merges
    with its peers', and each epoch delivers every sample once over its phases, but
    DistributedSampler's padding (or cuts, and the loader's cut of each part's last batch).
    """
    size = _CHAIN_CASES // _CHAIN_BLOCKS
    for seed in range(block * size, (block + 1) * size):
        case = _chain_case(seed)
        try:
            _run_chain(case)
        except (AssertionError, ValueError) as err:
            raise AssertionError(f"chain {seed} {case}: {err}") from err


def test_a_split_part_counts_consumed_padding_positions_out_of_its_length() -> None:
    """After ranks 2 and 3 of 4 deliver their padded lists, the one rank resuming reads 16 samples.

    Ranks 2 and 3 of 4 deliver their lists, padding positions 30 and 31 included: the one
    rank resuming reads the 16 samples left (not 14), and a save after 14 of them is not the
    epoch's end.
    """
    spec = _spec(length=30, batch_size=1)
    first, states = _phase(spec, 4, [0, 0, None, None])
    loader = rank_loader(spec, 1, 0)
    loader.load_state_dict(merge_states(states))
    second, state = take(loader, 14)
    assert state["epoch"] == 0, "14 of 16 samples delivered: the epoch goes on"
    third, _ = _phase(spec, 1, [None], merge_states([state]))
    check_exactly_once([_flat(first), second, _flat(third)], list(range(30)), extras=2)


def test_ranks_whose_split_part_is_empty_end_the_epoch_when_prefetched() -> None:
    """drop_last cuts the one sample left for 3 ranks; a save then merges into the next epoch.

    drop_last cuts the one sample left for 3 ranks: each rank's part is empty, and a save
    after its workers drew it (no batch taken) merges into the next epoch, not the whole
    epoch again.
    """
    spec = _spec(length=10, batch_size=1, drop_last=True)
    first, states = _phase(spec, 2, [None, 4])
    merged = merge_states(states)
    empty, saved = _phase(dict(spec, workers=2, worker_type="thread"), 3, [0, 0, 0], merged)
    assert [state["epoch"] for state in saved] == [1, 1, 1]
    after = merge_states(saved)
    assert after["epoch"] == 1
    check_exactly_once([_flat(first), _flat(empty)], list(range(10)), extras=0, dropped=1)


def test_states_saved_after_the_epoch_resume_at_the_next_one() -> None:
    """Every rank ended the epoch: the merged state starts the next epoch on any world."""
    spec = _spec()
    _, states = _phase(spec, 4, [None] * 4)
    merged = merge_states(states)
    assert merged["epoch"] == 1
    assert merged["sampler_state"]["merged"]["consumed"] == {"watermark": 0, "ranges": []}
    for rank in range(3):
        loader = rank_loader(spec, 3, rank)
        loader.load_state_dict(merged)
        assert take(loader, None, epoch=1)[0] == take(rank_loader(spec, 3, rank), None, 1)[0]


def test_a_rank_that_ended_its_part_early_counts_all_of_it() -> None:
    """Unequal counts: a rank that delivered its whole list merges with ranks still in the epoch.

    Unequal counts: a rank that delivered its whole list (next epoch in its state) merges
    with ranks still in the epoch, its list all consumed.
    """
    spec = _spec(length=12)
    first, states = _phase(spec, 2, [3, 1])  # rank 0's list is 6 long: 3 batches end it
    assert states[0]["epoch"] == 1
    assert states[1]["epoch"] == 0
    second, _ = _phase(spec, 3, [None] * 3, merge_states(states))
    # 12 - 6 - 2 = 4 left, padded to 6 over 3 ranks
    check_exactly_once([_flat(first), _flat(second)], list(range(12)), extras=2)


def test_merging_refuses_states_of_different_epochs() -> None:
    """Two epochs apart (or mid-epoch in another one): a clear error naming both."""
    spec = _spec()
    _, states = _phase(spec, 2, [1, 1])
    later = rank_loader(spec, 2, 1)
    take(later, None)
    take(later, None, epoch=1)
    _, states[1] = take(later, 1, epoch=2)
    with pytest.raises(ValueError, match="epoch is 0 in one state but 2 in rank 1's"):
        merge_states(states)


def test_merging_names_a_missing_or_duplicate_rank() -> None:
    """Every rank exactly once: a missing or repeated rank is named."""
    _, states = _phase(_spec(), 3, [1, 1, 1])
    with pytest.raises(ValueError, match=r"rank\(s\) \[1\] missing"):
        merge_states([states[0], states[2]])
    with pytest.raises(ValueError, match="rank 2 appears twice"):
        merge_states([states[0], states[1], states[2], states[2]])


def test_merging_refuses_states_of_another_seed_or_length() -> None:
    """States that do not belong together name the field that differs."""
    _, states = _phase(_spec(), 2, [1, 1])
    _, others = _phase(_spec(seed=8), 2, [1, 1])
    with pytest.raises(ValueError, match="sampler_state's seed is 7 in rank 0's state but 8"):
        merge_states([states[0], others[1]])
    _, longer = _phase(_spec(length=30), 2, [1, 1])
    with pytest.raises(ValueError, match="length is 29 in state 0's state but 30"):
        merge_states([states[0], longer[1]])


def test_a_merged_state_of_another_length_does_not_load() -> None:
    """A merged state loads only into a loader over a dataset of the same length."""
    _, states = _phase(_spec(), 2, [1, 1])
    loader = rank_loader(_spec(length=30), 3, 0)
    with pytest.raises(ValueError, match="length is 29 in the state but 30 here"):
        loader.load_state_dict(merge_states(states))


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("total", [16, 24, 31, 33, 10**12])
def test_a_merged_state_with_an_edited_total_is_refused(world: int, total: int) -> None:
    """A merged state claiming a total other than 32 positions for 4 ranks of 30 is refused.

    4 ranks of 30 samples have 32 positions; a merged state claiming another total (which
    lost or repeated samples) is refused, naming the field, its value and the right one.
    """
    _, states = _phase(_spec(length=30), 4, [1, 1, 1, 1])
    merged = merge_states(states)
    assert merged["sampler_state"]["merged"]["total"] == 32
    merged["sampler_state"]["merged"]["total"] = total
    with pytest.raises(ValueError, match=rf"merged's total must be 32, .* got {total}"):
        rank_loader(_spec(length=30), world, 0).load_state_dict(merged)


def _resharded_state(drop_last: bool) -> dict[str, Any]:
    """A merged state of a split epoch: 4 ranks -> 3 ranks (one batch each) -> merged."""
    spec = _spec(length=30, drop_last=drop_last)
    _, states = _phase(spec, 4, [1, 1, 1, 1])
    _, states = _phase(spec, 3, [1, 1, 1], merge_states(states))
    return merge_states(states)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"total": 24}, "merged's total must be 28, the positions of an epoch of 30 samples on 4"),
        ({"total": 30}, "merged's total must be 28"),
        ({"ranks": 3}, "merged's total must be 30, .* on 3 rank"),
        ({"ranks": 0}, "ranks .* must be an int >= 1, got 0"),
        ({"ranks": "4"}, "ranks .* must be an int >= 1, got '4'"),
        ({"resharded": 1}, "resharded must be a bool, got 1"),
        ({"consumed": {"watermark": 29, "ranges": []}}, r"must lie in range\(28\)"),
        ({"consumed": {"watermark": -3, "ranges": []}}, "merged's consumed must be"),
        ({"extra": 1}, "merged must be the dict .* got \\['consumed', 'extra'"),
    ],
)
def test_every_field_of_a_resharded_merged_state_is_checked(
    edit: dict[str, Any], message: str
) -> None:
    """A merged state of a split epoch records the world that began it; all its fields are checked.

    A merged state of a split epoch records the world that began it, so its total is
    checked exactly (with drop_last, 24 or 30 are totals of other worlds and would cut or add
    samples), and every other field of ``merged`` is checked too.
    """
    merged = _resharded_state(drop_last=True)
    assert merged["sampler_state"]["merged"]["ranks"] == 4
    assert merged["sampler_state"]["merged"]["resharded"] is True
    merged["sampler_state"]["merged"].update(edit)
    with pytest.raises(ValueError, match=message):
        rank_loader(_spec(length=30, drop_last=True), 2, 1).load_state_dict(merged)


def _set_merged_none(state: dict[str, Any]) -> None:
    state["sampler_state"]["merged"] = None


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda state: state.update(batches=2), "batches must be 0 in a merged state .*got 2"),
        (_set_merged_none, "merged must be the dict .* got None"),
    ],
)
def test_a_merged_states_batches_and_merged_field_are_checked(
    edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    """merge_states writes batches 0 (more would end the epoch early) and a merged dict."""
    _, states = _phase(_spec(length=30), 4, [1, 1, 1, 1])
    merged = merge_states(states)
    edit(merged)
    with pytest.raises(ValueError, match=message):
        rank_loader(_spec(length=30), 3, 0).load_state_dict(merged)


@pytest.mark.parametrize("key", ["offset", "share", "num_replicas"])
def test_a_merged_sampler_state_holds_only_what_merge_states_writes(key: str) -> None:
    """A merged sampler state with a rank's key added, or a key missing, is refused.

    A rank's key added to a merged sampler state (it would be ignored) is refused, and so
    is a key missing from it.
    """
    _, states = _phase(_spec(length=30), 4, [1, 1, 1, 1])
    merged = merge_states(states)
    edited = json.loads(json.dumps(merged))
    edited["sampler_state"][key] = states[0]["sampler_state"][key]
    with pytest.raises(ValueError, match=f"holds \\['{key}'\\]"):
        rank_loader(_spec(length=30), 3, 0).load_state_dict(edited)
    del merged["sampler_state"]["draws"]
    with pytest.raises(ValueError, match="is missing \\['draws'\\]"):
        rank_loader(_spec(length=30), 3, 0).load_state_dict(merged)


def test_one_ranks_state_on_another_world_says_to_merge() -> None:
    """An unmerged state keeps refusing another num_replicas, and now says what to do."""
    _, states = _phase(_spec(), 4, [1, 1, 1, 1])
    loader = rank_loader(_spec(), 2, 0)
    with pytest.raises(
        ValueError, match=r"num_replicas is 4 in the state but 2 here.*merge_states"
    ):
        loader.load_state_dict(states[0])


def test_merge_needs_distributed_or_sharded_states() -> None:
    """Other samplers' states, merged states and non-lists are refused with the reason."""
    plain = DataLoader(list(range(10)), batch_size=2)
    next(iter(plain))
    with pytest.raises(ValueError, match="with a DistributedSampler"):
        merge_states([plain.state_dict()])
    _, states = _phase(_spec(), 2, [1, 1])
    merged = merge_states(states)
    with pytest.raises(ValueError, match="mode 'offset'"):
        merge_states([merged])
    with pytest.raises(TypeError, match=r"list of DataLoader\.state_dict"):
        merge_states(states[0])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="empty list"):
        merge_states([])


@pytest.mark.parametrize("old_keys", [("share", "delivered", "draws"), ("share", "delivered")])
def test_rank_states_of_the_previous_formats_merge(old_keys: tuple[str, ...]) -> None:
    """Rank states of older formats merge as the current ones do, exactly once.

    Rank states saved before elastic resume (no share and delivered: a plain prefix) and
    before torch orders (no draws: keyed) merge as the current ones do, exactly once.
    """
    spec = _spec(shuffle=False)  # the order of states without draws: keyed, shuffle or not
    first, states = _phase(spec, 4, [2, 3, 2, 1])
    old = json.loads(json.dumps(states))
    for state in old:
        for key in old_keys:
            del state["sampler_state"][key]
    merged = merge_states(old)
    assert merged["sampler_state"]["merged"] == merge_states(states)["sampler_state"]["merged"]
    second, _ = _phase(spec, 3, [None] * 3, merged)
    remainder = 29 - len(_flat(first))
    extras = math.ceil(remainder / 3) * 3 - remainder
    check_exactly_once([_flat(first), _flat(second)], list(range(29)), extras=extras)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("share", "state 2's sampler_state is missing 'share' .*holds 'delivered'"),
        ("delivered", "state 2's sampler_state is missing 'delivered' .*holds 'share'"),
        ("offset", r"state 2's sampler_state is missing \['offset'\]"),
        ("rank", r"state 2's sampler_state is missing \['rank'\]"),
        ("num_replicas", r"state 2's sampler_state is missing \['num_replicas'\]"),
        ("finished", r"state 2's sampler_state is missing \['finished'\]"),
    ],
)
def test_a_rank_state_missing_a_field_is_named_with_its_index(key: str, message: str) -> None:
    """A missing field is a ValueError naming it and the state's index, not a KeyError.

    A field no format leaves out (or one of share and delivered alone) is refused with a
    ValueError naming it and the state's index in the list, not a KeyError.
    """
    _, states = _phase(_spec(), 3, [1, 1, 1])
    del states[2]["sampler_state"][key]
    with pytest.raises(ValueError, match=message):
        merge_states(states)


def _set_everywhere(states: list[dict[str, Any]], changes: dict[str, Any]) -> None:
    """Set ``"a.b"`` fields (key b of field a) in every state."""
    for state in states:
        for path, value in changes.items():
            *parents, key = path.split(".")
            target = state
            for parent in parents:
                target = target[parent]
            target[key] = value


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        (
            {"sampler_state.num_replicas": 10**9},
            r"rank\(s\) \[3, 4, .*, 12, ...\] missing \(got 3 state\(s\) of a world of "
            r"1000000000, their num_replicas\)",
        ),
        (
            {"length": 10**12, "sampler_state.length": 10**12},
            "state 0 length must be an int from 0 to 4294967296, got 1000000000000",
        ),
        (
            {"sampler_state.offset": 10**12},
            r"state 0's sampler_state offset and delivered must lie in range\(10\)",
        ),
        (
            {"sampler_state.delivered": [[20, 10**12]]},
            r"state 0's sampler_state offset and delivered must lie in range\(10\)",
        ),
    ],
)
def test_huge_counts_in_the_states_are_refused_at_once(
    changes: dict[str, Any], message: str
) -> None:
    """Huge claimed worlds, datasets or positions are a ValueError at once, not a MemoryError.

    A world of 10**9 ranks, a dataset of 10**12 samples or a position past the rank's
    list, claimed by every rank's state, is a ValueError naming the field at once (well under
    a second of CPU), not a MemoryError after seconds of allocation.
    """
    _, states = _phase(_spec(), 3, [1, 1, 1])
    _set_everywhere(states, changes)
    started = time.thread_time()
    with pytest.raises(ValueError, match=message):
        merge_states(states)
    assert time.thread_time() - started < 1.0


def test_a_sharded_world_of_a_billion_ranks_is_refused_at_once() -> None:
    """ShardedIterableDataset states claiming a huge world or shard count are refused at once.

    ShardedIterableDataset states claiming a huge world or shard count are refused at once,
    naming the field, without counting ranks or shards.
    """
    states = [take(DataLoader(Shards([3, 3], rank, 2), batch_size=1), 1)[1] for rank in range(2)]
    started = time.thread_time()
    huge = json.loads(json.dumps(states))
    _set_everywhere(huge, {"world_size": 10**9})
    with pytest.raises(ValueError, match="of a world of 1000000000, their world_size"):
        merge_states(huge)
    huge = json.loads(json.dumps(states))
    _set_everywhere(huge, {"shards": 10**12})
    with pytest.raises(ValueError, match="state 0 shards must be an int from 0 to 16777216"):
        merge_states(huge)
    assert time.thread_time() - started < 1.0


def test_merge_does_not_change_its_input() -> None:
    """The states given to merge_states are left as they were."""
    _, states = _phase(_spec(), 2, [1, 1])
    copies = json.loads(json.dumps(states))
    merge_states(states)
    assert states == copies


@pytest.mark.parametrize("workers", [0, 2])
def test_sharded_rank_saving_before_its_first_batch_merges_again(workers: int) -> None:
    """2 -> 3 -> 2 ranks of a ShardedIterableDataset, saving right after a load: samples come once.

    2 -> 3 -> 2 ranks of a ShardedIterableDataset: rank 0 of 3 saves right after loading
    the merged state; its state merges with its peers' and every sample comes once.
    """
    lengths = [4, 2, 5, 3, 1, 6, 2]
    universe = [s * 100 + j for s, n in enumerate(lengths) for j in range(n)]

    def loader(rank: int, world: int) -> DataLoader:
        return DataLoader(
            Shards(lengths, rank, world), batch_size=2, num_workers=workers, worker_type="thread"
        )

    phases: list[list[int]] = [[], [], []]
    states = []
    for rank in range(2):
        got, saved = take(loader(rank, 2), 2)
        phases[0] += got
        states.append(saved)
    merged, states = merge_states(states), []
    for rank in range(3):
        resumed = loader(rank, 3)
        resumed.load_state_dict(merged)
        if rank == 0:
            states.append(json.loads(json.dumps(resumed.state_dict())))
            continue
        got, saved = take(resumed, 1)
        phases[1] += got
        states.append(saved)
    merged = merge_states(states)
    for rank in range(2):
        resumed = loader(rank, 2)
        resumed.load_state_dict(merged)
        phases[2] += take(resumed, None)[0]
    check_exactly_once(phases, universe, extras=0)


def test_sharded_state_of_one_rank_refuses_another_world() -> None:
    """One rank's ShardedIterableDataset state on another world size says to merge."""
    loader = DataLoader(Shards([3, 3], 0, 2), batch_size=1)
    _, state = take(loader, 1)
    other = DataLoader(Shards([3, 3], 0, 3), batch_size=1)
    with pytest.raises(ValueError, match=r"world_size is 2 in the state but 3 here.*merge_states"):
        other.load_state_dict(state)


def test_ranks_from_the_environment_merge_and_resume(monkeypatch: pytest.MonkeyPatch) -> None:
    """RANK/WORLD_SIZE as launchers set them (no arguments, no process group) work the same."""
    spec = _spec()
    states, first = [], []
    for rank in range(2):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        got, state = take(rank_loader(spec, None, None), 2)
        first += got
        states.append(state)
    merged = merge_states(states)
    second = []
    for rank in range(3):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "3")
        loader = rank_loader(spec, None, None)
        loader.load_state_dict(merged)
        second += take(loader, None)[0]
    check_exactly_once([first, second], list(range(29)), extras=0)  # 21 left: 7 for each of 3
