"""Global positions of a DistributedSampler epoch: position sets, shares and splits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stoker.data._samplers.positions import (
    PositionSet,
    Share,
    epoch_total,
    plain_offsets,
    share_positions,
    split_remainder,
    world_of,
)


@given(st.lists(st.integers(0, 60), max_size=40))
def test_position_set_holds_exactly_the_positions_given(positions: list[int]) -> None:
    """of_positions, mask, len and the JSON form agree with Python's set of the same ints."""
    found = PositionSet.of_positions(positions)
    assert set(np.flatnonzero(found.mask(61)).tolist()) == set(positions)
    assert len(found) == len(set(positions))
    assert PositionSet.from_json(found.to_json(), "x") == found


@given(st.lists(st.integers(0, 40)), st.lists(st.integers(0, 40)))
def test_union_is_the_set_union(a: list[int], b: list[int]) -> None:
    """union() of two sets equals the set built from both lists (normalised, so ==)."""
    union = PositionSet.of_positions(a).union(PositionSet.of_positions(b))
    assert union == PositionSet.of_positions(a + b)


def test_a_prefix_is_a_watermark_alone() -> None:
    """Consecutive positions from 0 are one watermark: the in-order case is O(1) in size."""
    assert PositionSet.of_positions(range(1000)).to_json() == {"watermark": 1000, "ranges": []}
    assert PositionSet.of_spans([(0, 4), (4, 9), (12, 14)]).to_json() == {
        "watermark": 9,
        "ranges": [[12, 14]],
    }


@pytest.mark.parametrize(
    "bad",
    [
        None,
        {"watermark": -1, "ranges": []},
        {"watermark": 3, "ranges": [[2, 5]]},
        {"watermark": 0, "ranges": [[4, 4]]},
        {"watermark": 0, "ranges": [[5, 8], [1, 2]]},
        {"watermark": 0, "ranges": [[1, 2, 3]]},
        {"watermark": True, "ranges": []},
    ],
)
def test_from_json_refuses_malformed_sets(bad: object) -> None:
    """A malformed set raises a ValueError naming the field and the expected form."""
    with pytest.raises(ValueError, match="state's consumed must be"):
        PositionSet.from_json(bad, "state's consumed")


def test_share_refuses_consumed_positions_past_its_total() -> None:
    """A share's consumed set must lie inside its epoch."""
    with pytest.raises(ValueError, match=r"must lie in range\(10\)"):
        Share.from_json(
            {"total": 10, "consumed": {"watermark": 11, "ranges": []}},
            "share",
            length=10,
            drop_last=False,
        )


@pytest.mark.parametrize(
    ("saved", "length", "drop_last", "message"),
    [
        ({"total": 16, "ranks": 4}, 30, False, "total must be 32, the positions of an epoch of 30"),
        ({"total": 28, "ranks": 8}, 30, True, "total must be 24, the positions"),
        ({"total": 10**12, "ranks": 4}, 30, False, "total must be 32, "),
        ({"total": 16}, 30, False, "total must be the positions of an epoch of 30 samples on some"),
        ({"total": 10}, 30, True, "total .* on some number of ranks .*got 10"),
        ({"total": 32, "ranks": 0}, 30, False, "ranks .* must be an int >= 1, got 0"),
        ({"total": 32, "ranks": True}, 30, False, "ranks .* must be an int >= 1, got True"),
        ({"total": -1, "ranks": 4}, 30, False, "total must be an int >= 0, got -1"),
    ],
)
def test_share_total_must_be_the_epochs_of_its_world(
    saved: dict[str, int], length: int, drop_last: bool, message: str
) -> None:
    """A share's total must be torch's total_size of the world that began the epoch.

    A share's total is torch's total_size of the world that began the epoch: any other
    value (or a total no world gives, in a share saved without its world) is refused.
    """
    value = {**saved, "consumed": {"watermark": 0, "ranges": []}}
    with pytest.raises(ValueError, match=f"share's {message}"):
        Share.from_json(value, "share", length=length, drop_last=drop_last)


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("length", [0, 1, 7, 30])
def test_a_share_without_its_world_takes_one_that_gives_its_total(
    length: int, drop_last: bool
) -> None:
    """world_of finds, for every total some world gives, a world giving it (and None else)."""
    totals = {epoch_total(length, world, drop_last) for world in range(1, 3 * length + 5)}
    for total in range(3 * length + 3):
        world = world_of(total, length, drop_last)
        if total in totals:
            assert world is not None
            assert epoch_total(length, world, drop_last) == total
        else:
            assert world is None


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("world", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("length", [0, 1, 3, 10, 29, 32])
def test_epoch_total_is_torchs_total_size(length: int, world: int, drop_last: bool) -> None:
    """epoch_total equals torch's DistributedSampler.total_size."""
    torch_data = pytest.importorskip("torch.utils.data")
    theirs = torch_data.DistributedSampler(
        range(length), num_replicas=world, rank=0, drop_last=drop_last
    )
    assert epoch_total(length, world, drop_last) == theirs.total_size


def test_split_of_an_empty_consumed_set_is_the_plain_split() -> None:
    """With nothing consumed, the split share of each rank is its plain share (no drop_last)."""
    for length, world in [(29, 4), (10, 3), (8, 8), (3, 5)]:
        total = epoch_total(length, world, False)
        share = Share(total, PositionSet())
        for rank in range(world):
            split = share_positions(share, length, total, world, rank, drop_last=False)
            plain = share_positions(None, length, total, world, rank, drop_last=False)
            # the plain share reads padding positions >= length; the split one their originals
            assert (split == plain % length).all()


def test_drop_last_split_returns_the_cut_positions() -> None:
    """With drop_last the remainder's tail that does not divide by the world is dropped."""
    share = Share(10, PositionSet(3))
    split, dropped = split_remainder(share, 10, 3, drop_last=True)
    assert split.tolist() == [3, 4, 5, 6, 7, 8]
    assert dropped.tolist() == [9]


def test_plain_offsets_recognises_each_ranks_prefix() -> None:
    """A union of rank prefixes gives each rank's offset; anything else gives None."""
    total, world = 12, 4
    taken = [
        positions[:k]
        for positions, k in zip(
            (share_positions(None, 12, total, world, r, drop_last=False) for r in range(world)),
            [3, 1, 0, 2],
            strict=True,
        )
    ]
    consumed = PositionSet.of_positions(np.concatenate(taken))
    assert plain_offsets(consumed, total, world) == [3, 1, 0, 2]
    assert plain_offsets(PositionSet.of_positions([4]), total, world) is None  # rank 0's 2nd
    assert plain_offsets(consumed, total, 5) is None


@settings(max_examples=150, deadline=None)
@given(
    length=st.integers(0, 40),
    worlds=st.lists(st.integers(1, 6), min_size=2, max_size=4),
    drop_last=st.booleans(),
    data=st.data(),
)
def test_exactly_once_over_any_chain_of_worlds(
    length: int, worlds: list[int], drop_last: bool, data: st.DataObject
) -> None:
    """N -> M -> K ...: the phases deliver every position once, but for padding and drop_last.

    Each phase's ranks take any subset of their list (out of order too); the consumed set is
    their union (plus a drop_last cut), the next world splits the rest. At the end the last
    world takes all of its lists: nothing is lost, a sample repeats only where a padding
    entry delivered it, and with drop_last nothing repeats.
    """
    total = epoch_total(length, worlds[0], drop_last)
    end = min(length, total)
    consumed = PositionSet()
    share: Share | None = None
    delivered: list[int] = []
    padding: list[int] = []  # samples delivered through a padding entry
    for number, world in enumerate(worlds):
        last = number == len(worlds) - 1
        remainder = 0
        if share is not None:
            _, dropped = split_remainder(share, length, world, drop_last)
            consumed = consumed.union(PositionSet.of_positions(dropped))
            remainder = end - int(share.consumed.mask(end).sum())
        for rank in range(world):
            positions = share_positions(share, length, total, world, rank, drop_last=drop_last)
            if last:
                chosen = list(range(positions.size))
            else:
                chosen = data.draw(
                    st.lists(
                        st.integers(0, max(0, positions.size - 1)),
                        max_size=positions.size,
                        unique=True,
                    )
                )
                chosen = [c for c in chosen if c < positions.size]
            picked = positions[chosen]
            if share is not None and not drop_last:  # split index >= remainder: padding
                padding.extend(
                    p
                    for c, p in zip(chosen, picked.tolist(), strict=True)
                    if rank + world * c >= remainder
                )
            consumed = consumed.union(PositionSet.of_positions(picked))
            if share is None:  # plain shares read padding positions, repeats of the start
                padding.extend((picked[picked >= length] % max(length, 1)).tolist())
                picked = picked % max(length, 1)
            delivered.extend(picked.tolist())
        share = Share(total, consumed)
    counts = np.bincount(np.asarray(delivered, dtype=np.int64), minlength=max(length, 1))
    if drop_last:
        assert counts.max(initial=0) <= 1, "drop_last never repeats a sample"
        assert counts[end:].sum() == 0, "the first world's cut stays dropped"
    else:
        assert (counts[:length] >= 1).all(), "every sample delivered"
        explained = np.bincount(np.asarray(padding, dtype=np.int64), minlength=counts.size)
        assert (counts - 1 <= explained).all(), "a sample repeats only through padding"
        assert len(padding) <= sum(worlds), "each world pads by less than one row of ranks"
