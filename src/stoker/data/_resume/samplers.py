"""The resume modes of map-style loaders: how an index sampler's place is saved and put back.

* :class:`OffsetMode` (``"offset"``): a stoker sampler (or a :class:`~stoker.data.BatchSampler`
  over one, the default) that resumes at an offset
  (:class:`~stoker.data._samplers.stateful.OffsetStateful`): its own state with the offset
  lowered to the indices actually delivered, so the next epoch starts there without replaying
  anything, whatever the number of workers;
* :class:`DistributedMode` (``"offset"`` too): a :class:`~stoker.data.DistributedSampler`,
  whose position is the part of its rank's list delivered (ranges, out of order), and
  :class:`MergedDistributedMode` (``"merged"``), the state ``merge_states`` makes of every
  rank's, which loads on any world size;
* :class:`ReplayMode` (``"replay"``): any other sampler, a stoker sampler subclass that
  overrides ``__iter__`` included: its ``state_dict()`` as the epoch began (when it is
  :class:`~stoker.data._samplers.stateful.Stateful`), then the delivered batches are drawn
  again from the sampler and skipped (no data loaded).

See docs/design/resume.md.
"""

from __future__ import annotations

import copy
from typing import Any

from stoker.data._plan import LoaderPlan
from stoker.data._resume.mode import (
    FINISHED,
    SEED_MAX,
    BaseMode,
    apply_state,
    bad,
    int_field,
    require,
)
from stoker.data._resume.progress import EpochProgress, SavePoint
from stoker.data._samplers.base import BatchSampler, EpochSampler
from stoker.data._samplers.distributed import DistributedSampler
from stoker.data._samplers.positions import PositionSet
from stoker.data._samplers.stateful import OffsetStateful, Stateful, is_stateful

__all__ = [
    "DistributedMode",
    "MergedDistributedMode",
    "OffsetMode",
    "ReplayMode",
    "check_merged",
    "describe",
    "offset_target",
    "replay_source",
]


def describe(plan: LoaderPlan) -> dict[str, Any]:
    """The fields every state saved by the loader of ``plan`` holds, and must match to load."""
    index_sampler = plan.index_sampler
    inner = getattr(index_sampler, "sampler", None) if type(index_sampler) is BatchSampler else None
    fields: dict[str, Any] = {
        "dataset": "iterable" if plan.iterable else "map",
        "sampler": type(index_sampler).__name__,
        "inner_sampler": None if inner is None else type(inner).__name__,
        "batch_size": plan.batch_size,
        "drop_last": plan.drop_last,
    }
    if plan.iterable:
        fields["num_workers"] = plan.num_workers
    else:
        fields["length"] = len(plan.dataset)
    return fields


def offset_target(index_sampler: Any) -> tuple[OffsetStateful, int] | None:
    """Return ``(sampler, indices per batch)`` when the epoch can resume at an offset."""
    inner, per_batch = index_sampler, 1
    if type(index_sampler) is BatchSampler:
        inner, per_batch = index_sampler.sampler, index_sampler.batch_size
    # stoker's samplers match by class first: a protocol check alone costs ~15 us an epoch
    kinds = (EpochSampler, DistributedSampler, OffsetStateful)
    if isinstance(inner, kinds) and inner.resumes_at_offset:
        return inner, per_batch
    return None


def _all_yielded(plan: LoaderPlan, progress: EpochProgress) -> bool:
    """Whether a sized index sampler's every batch of the epoch was handed over."""
    index_sampler = plan.index_sampler
    if not hasattr(index_sampler, "__len__"):
        return False
    return progress.started and progress.yielded >= len(index_sampler)


class _SamplerMode(BaseMode):
    """A map-style mode: the loader's description is what a state must match."""

    def fields(self, plan: LoaderPlan) -> dict[str, Any]:
        """The loader's description (see :func:`describe`)."""
        return describe(plan)

    def ended(self, plan: LoaderPlan, progress: EpochProgress) -> bool:
        """Over once every batch of a sized sampler was handed over."""
        return _all_yielded(plan, progress)


class OffsetMode(_SamplerMode):
    """``"offset"``: a stoker sampler resumed at the indices delivered."""

    name = "offset"

    def __init__(self, sampler: OffsetStateful, per_batch: int) -> None:
        """Save and load ``sampler``, of which each batch takes ``per_batch`` indices."""
        self.sampler = sampler
        self.per_batch = per_batch

    def save(self, plan: LoaderPlan, state: dict[str, Any], point: SavePoint) -> dict[str, Any]:
        """The sampler's state at the offset of the delivered batches (past the end: next)."""
        batches = state["batches"]
        consumed = None if not point.begun else batches * self.per_batch
        if point.finished:
            consumed = FINISHED
        state["mode"] = self.name
        state["sampler_state"] = self.sampler.resume_state(consumed)
        state["batches"] = batches if point.begun else 0
        return state

    def check(self, plan: LoaderPlan, state: dict[str, Any], batches: int) -> None:
        """The sampler state's epoch and seed, and an offset that is ``batches`` batches."""
        saved = self._check_sampler_state(state)
        offset = require(saved, "offset", "state's sampler_state")
        wanted = batches * self.per_batch
        if offset != wanted or isinstance(offset, bool):
            raise bad(
                "sampler_state's offset",
                offset,
                f"{wanted} (batches {batches} x {self.per_batch} indices per batch)",
            )

    @staticmethod
    def _check_sampler_state(state: dict[str, Any]) -> dict[str, Any]:
        saved = state["sampler_state"]
        if not isinstance(saved, dict):
            raise bad("sampler_state", saved, "the sampler's state dict in mode 'offset'")
        where = "state's sampler_state"
        int_field(require(saved, "epoch", where), "sampler_state's epoch")
        seed = require(saved, "seed", where)
        int_field(seed, "sampler_state's seed", maximum=SEED_MAX, allow_none=True)
        return saved

    def load(self, plan: LoaderPlan, saved: Any) -> None:
        """The sampler loads its state."""
        apply_state(self.sampler.load_state_dict, saved)


class DistributedMode(OffsetMode):
    """``"offset"`` for a DistributedSampler: the ranges of its rank's list delivered.

    Out of order, the delivered batches need not be a prefix of the stream: they are saved as
    ranges (``PositionSet``) of the rank's list, so a resume skips exactly them.
    """

    sampler: DistributedSampler[Any]

    def save(self, plan: LoaderPlan, state: dict[str, Any], point: SavePoint) -> dict[str, Any]:
        """The sampler's position: the items of its list delivered, as ranges."""
        state["mode"] = OffsetMode.name
        progress = point.progress
        if progress is None or point.finished or not point.begun:
            end = FINISHED if point.finished else None
            state["sampler_state"] = self.sampler.resume_state(end)
            state["batches"] = 0
            return state
        per_batch = self.per_batch
        mark, ahead = progress.items_delivered()
        spans = [(0, mark * per_batch)] + [(i * per_batch, (i + 1) * per_batch) for i in ahead]
        state["sampler_state"] = self.sampler.resume_state(
            mark * per_batch, PositionSet.of_spans(spans)
        )
        return state

    def check(self, plan: LoaderPlan, state: dict[str, Any], batches: int) -> None:
        """The sampler state's epoch, seed and offset.

        Its position is its own (a prefix, ranges, a share): the sampler checks it as it loads.
        """
        saved = self._check_sampler_state(state)
        require(saved, "offset", "state's sampler_state")

    def ended(self, plan: LoaderPlan, progress: EpochProgress) -> bool:
        """Over once every batch was handed over, or the whole of a resumed (shorter) share."""
        if _all_yielded(plan, progress):
            return True
        stream = self.sampler.stream_length
        if stream is None or not progress.started:
            return False
        mark, ahead = progress.items_delivered()
        return mark + len(ahead) >= _items_in_stream(plan.index_sampler, stream)


class MergedDistributedMode(DistributedMode):
    """``"merged"``: every rank's DistributedSampler state in one, loaded on any world size.

    Loaded, it saves as this rank's own state before its first batch
    (:meth:`save_loaded`); iterated, as :class:`DistributedMode` does.
    """

    name = "merged"

    def check(self, plan: LoaderPlan, state: dict[str, Any], batches: int) -> None:
        """A ``merge_states`` state: a dict with ``"merged"``, and 0 batches."""
        check_merged(state, batches)

    def save_loaded(self, plan: LoaderPlan, pending: dict[str, Any]) -> dict[str, Any]:
        """This rank's position in the merged epoch: its share, offset 0.

        It must merge again with the states its peers save after their first batches
        (``merge_states`` takes one state per rank).
        """
        state = copy.deepcopy(pending)
        state.update(mode=OffsetMode.name, sampler_state=self.sampler.resume_state(None))
        return state


def check_merged(state: dict[str, Any], batches: int) -> None:
    """Raise unless ``state`` holds a merged ``sampler_state`` at 0 batches."""
    saved = state["sampler_state"]
    if not isinstance(saved, dict) or "merged" not in saved:
        missing = " (it is missing 'merged')" if isinstance(saved, dict) else ""
        raise bad(
            "sampler_state",
            saved,
            f"a state from stoker.data.merge_states() in mode 'merged'{missing}",
        )
    if batches != 0:
        raise bad("batches", batches, "0 in a merged state (stoker.data.merge_states writes 0)")


def _items_in_stream(index_sampler: Any, stream: int) -> int:
    """How many items a loader draws from a stream of ``stream`` indices (batched or not)."""
    if type(index_sampler) is not BatchSampler:
        return stream
    if index_sampler.drop_last:
        return stream // index_sampler.batch_size
    return -(-stream // index_sampler.batch_size)


def replay_source(index_sampler: Any) -> Stateful | None:
    """Return what a replayed epoch saves and restores: the index sampler, or None.

    A :class:`~stoker.data.BatchSampler` with its own state methods stands for its inner
    sampler, whose state they pass through.
    """
    source = index_sampler
    if (
        isinstance(source, BatchSampler)
        and type(source).state_dict is BatchSampler.state_dict
        and type(source).load_state_dict is BatchSampler.load_state_dict
    ):
        source = source.sampler
    return source if is_stateful(source) else None


class ReplayMode(_SamplerMode):
    """``"replay"``: the sampler's state as the epoch began; the delivered batches drawn again."""

    name = "replay"

    def begin(self, plan: LoaderPlan, progress: EpochProgress) -> None:
        """Take a custom sampler's ``state_dict()`` as the epoch opens.

        A stoker sampler describes its epoch when saving (``resume_state``), so nothing is
        taken now: a ``state_dict()`` here would fix the epoch's randomness early and draw
        from the global generator before the base seed, out of torch's order.
        """
        source = replay_source(plan.index_sampler)
        if source is not None and not isinstance(source, EpochSampler):
            progress.snapshot = source.state_dict()

    def resume(self, plan: LoaderPlan, progress: EpochProgress, pending: dict[str, Any]) -> int:
        """Draw the delivered batches again (and drop them)."""
        return progress.yielded

    def save(self, plan: LoaderPlan, state: dict[str, Any], point: SavePoint) -> dict[str, Any]:
        """The sampler's state as the epoch began (or as the next one begins)."""
        state["mode"] = self.name
        progress, finished = point.progress, point.finished
        if progress is not None and finished and progress.stream is not None:
            # All batches were delivered but the sampler may not have seen its end yet (a
            # generator that updates its state after its last item): let it finish first.
            next(progress.stream, None)
        source = replay_source(plan.index_sampler)
        if isinstance(source, EpochSampler):
            # the epoch from its start, or the next one; never fixes (draws) randomness early
            during = progress is not None and not finished and progress.started
            state["sampler_state"] = source.resume_state(0 if during else None)
        elif progress is None or finished:
            state["sampler_state"] = None if source is None else source.state_dict()
        else:
            state["sampler_state"] = progress.snapshot
        return state

    def load(self, plan: LoaderPlan, saved: Any) -> None:
        """The sampler loads the state it had as the epoch began (if it saved one)."""
        if saved is None:
            return
        source = replay_source(plan.index_sampler)
        if source is None:
            raise ValueError(
                f"state holds a sampler state but {type(plan.index_sampler).__name__} has no "
                "load_state_dict(); load it into a loader with the same sampler"
            )
        apply_state(source.load_state_dict, saved)
