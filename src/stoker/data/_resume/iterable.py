"""The resume modes of IterableDatasets: their own state(s), a fast-forward, merged shards.

An iterable dataset has no indices to recompute, so the loader state records where its
replicas are:

* :class:`DatasetMode` (``"dataset"``: ``num_workers=0``, and the dataset is
  :class:`~stoker.data._samplers.stateful.Stateful`, see
  :func:`~stoker.data._samplers.stateful.is_stateful`): the dataset's ``state_dict()``, taken
  at save time;
* :class:`WorkerStatesMode` (``"worker_states"``: workers, and the dataset is ``Stateful``):
  each worker's replica state as of its last batch handed to the user, the worker that is next
  in the round-robin, and the workers already exhausted (recorded by the worker iterator in
  :class:`~stoker.data._resume.progress.ReplicaStates`);
* :class:`FastForwardMode` (``"fast_forward"``: anything else, or a worker's state missing):
  nothing; the delivered batches are loaded again and dropped;
* :class:`MergedShardsMode` (``"merged"``): a :class:`~stoker.data.ShardedIterableDataset`'s
  shard positions of every rank in one, from ``merge_states``; it loads on any world size and
  number of workers.

See docs/design/resume.md.
"""

from __future__ import annotations

import copy
from typing import Any

from stoker.data._plan import LoaderPlan
from stoker.data._resume.mode import BaseMode, apply_state, bad
from stoker.data._resume.progress import EpochProgress, SavePoint
from stoker.data._resume.samplers import check_merged, describe
from stoker.data._sharded import SHARDED_FORMAT, ShardedIterableDataset

__all__ = [
    "DatasetMode",
    "FastForwardMode",
    "MergedShardsMode",
    "WorkerStatesMode",
    "merged_resume",
    "sharded_fields",
]


class _IterableMode(BaseMode):
    """An iterable mode: a ShardedIterableDataset's states also say whose shards they hold."""

    def fields(self, plan: LoaderPlan) -> dict[str, Any]:
        """The loader's description, and for sharded datasets the rank's shards."""
        fields = describe(plan)
        self._shards(plan, fields)
        return fields

    def ended(self, plan: LoaderPlan, progress: EpochProgress) -> bool:
        """Over once every worker's replica ended and its batches were handed over."""
        return len(progress.replicas.exhausted) == plan.num_workers > 0

    @staticmethod
    def _shards(plan: LoaderPlan, state: dict[str, Any]) -> None:
        """Add whose shards these are, for ``merge_states`` (sharded datasets)."""
        if isinstance(plan.dataset, ShardedIterableDataset):
            state.update(sharded_fields(plan.dataset, merged=False))


class FastForwardMode(_IterableMode):
    """``"fast_forward"``: no state; the delivered batches are loaded again and dropped."""

    name = "fast_forward"

    def save(self, plan: LoaderPlan, state: dict[str, Any], point: SavePoint) -> dict[str, Any]:
        """Nothing but the batch count."""
        self._shards(plan, state)
        state["mode"], state["sampler_state"] = self.name, None
        return state

    def check(self, plan: LoaderPlan, state: dict[str, Any], batches: int) -> None:
        """No sampler state."""
        if state["sampler_state"] is not None:
            raise bad("sampler_state", state["sampler_state"], "None in mode 'fast_forward'")

    def resume(self, plan: LoaderPlan, progress: EpochProgress, pending: dict[str, Any]) -> int:
        """The iterator loads the delivered batches again and drops them."""
        progress.skip = progress.yielded
        return 0


class DatasetMode(_IterableMode):
    """``"dataset"``: the dataset's own ``state_dict()`` (no workers)."""

    name = "dataset"

    def save(self, plan: LoaderPlan, state: dict[str, Any], point: SavePoint) -> dict[str, Any]:
        """The dataset's state now (None once the epoch is over: the next starts afresh)."""
        self._shards(plan, state)
        state["mode"] = self.name
        state["sampler_state"] = None if point.finished else plan.dataset.state_dict()
        return state

    def load(self, plan: LoaderPlan, saved: Any) -> None:
        """The dataset loads its state."""
        if saved is not None:
            apply_state(plan.dataset.load_state_dict, saved)


class WorkerStatesMode(_IterableMode):
    """``"worker_states"``: each worker replica's state, the next worker, the exhausted ones.

    Saved as ``"fast_forward"`` when a worker's state is missing (its ``state_dict()``
    failed, or returned None).
    """

    name = "worker_states"

    def save(self, plan: LoaderPlan, state: dict[str, Any], point: SavePoint) -> dict[str, Any]:
        """Every worker's state as of its last batch handed over."""
        self._shards(plan, state)
        progress = point.progress
        fresh = state["batches"] == 0 and (progress is None or progress.replicas.resume is None)
        if progress is None or point.finished or fresh:  # the epoch starts afresh
            state["mode"], state["sampler_state"] = self.name, None
            return state
        replicas = progress.replicas
        saved = replicas.complete(plan.num_workers)
        if saved is None:
            return FastForwardMode().save(plan, state, point)
        last = replicas.last_worker
        state["mode"] = self.name
        state["sampler_state"] = {
            "workers": saved,
            "next_worker": 0 if last is None else (last + 1) % plan.num_workers,
            "exhausted": sorted(replicas.exhausted),
        }
        return state

    def check(self, plan: LoaderPlan, state: dict[str, Any], batches: int) -> None:
        """The per-worker resume point, if any (the workers load it as they start)."""
        if state["sampler_state"] is not None:
            _check_worker_states(plan, state["sampler_state"])

    def resume(self, plan: LoaderPlan, progress: EpochProgress, pending: dict[str, Any]) -> int:
        """The replicas start from their saved states."""
        if pending["sampler_state"] is not None:
            progress.replicas.resume_from(pending["sampler_state"])
        return 0


class MergedShardsMode(_IterableMode):
    """``"merged"``: every rank's ShardedIterableDataset positions in one.

    Once loaded, the loader saves as it would have (:attr:`after`).
    """

    name = "merged"

    def __init__(self, after: DatasetMode | WorkerStatesMode) -> None:
        """Load merged states; save as ``after`` does."""
        self.after = after

    def fields(self, plan: LoaderPlan) -> dict[str, Any]:
        """The loader's description less ``num_workers`` (merged shards go to any), the shards'."""
        fields = describe(plan)
        fields.pop("num_workers", None)
        fields.update(sharded_fields(plan.dataset, merged=True))
        return fields

    def check(self, plan: LoaderPlan, state: dict[str, Any], batches: int) -> None:
        """A ``merge_states`` state: a dict with ``"merged"``, and 0 batches."""
        check_merged(state, batches)

    def load(self, plan: LoaderPlan, saved: Any) -> None:
        """The dataset loads it (no workers) or checks it (each worker replica loads it)."""
        dataset: ShardedIterableDataset[Any] = plan.dataset
        apply_state(dataset.check_state if plan.num_workers else dataset.load_state_dict, saved)

    def resume(self, plan: LoaderPlan, progress: EpochProgress, pending: dict[str, Any]) -> int:
        """With workers, every replica starts from the whole merged state."""
        if plan.num_workers:
            progress.replicas.resume_from(merged_resume(plan, pending["sampler_state"]))
        return 0

    def save(self, plan: LoaderPlan, state: dict[str, Any], point: SavePoint) -> dict[str, Any]:
        """As the rank's own mode saves."""
        return self.after.save(plan, state, point)

    def save_loaded(self, plan: LoaderPlan, pending: dict[str, Any]) -> dict[str, Any]:
        """The loaded merged state as this rank's own state, as it saves before its first batch.

        It must merge again with the states its peers save after theirs (``merge_states``
        takes one state per rank): it holds the merged shard positions.
        """
        state = copy.deepcopy(pending)
        state.update(sharded_fields(plan.dataset, merged=False))
        state.update(num_workers=plan.num_workers, mode=self.after.name)
        if plan.num_workers:
            state["sampler_state"] = merged_resume(plan, state["sampler_state"])
        return state


def sharded_fields(dataset: ShardedIterableDataset[Any], *, merged: bool) -> dict[str, Any]:
    """The fields a loader state over ``dataset`` holds: whose shards its positions are.

    A merged state holds no rank or world size (it loads on any).
    """
    fields = {"shard_format": SHARDED_FORMAT, "shards": len(dataset.shards)}
    if not merged:
        fields.update(rank=dataset.rank, world_size=dataset.world_size)
    return fields


def _check_worker_states(plan: LoaderPlan, saved: Any) -> None:
    """Check a ``"worker_states"`` resume point against ``plan`` before it is used.

    (The mode is accepted only for a dataset with ``state_dict()``: see ``modes_for``.)
    """
    missing = (
        [k for k in ("workers", "next_worker", "exhausted") if k not in saved]
        if isinstance(saved, dict)
        else []
    )
    if missing:
        raise ValueError(
            f"state's sampler_state is missing {missing} (it holds one dataset state per worker "
            f"({plan.num_workers}), a next_worker and an exhausted list), got {saved!r}; pass the "
            "dict returned by DataLoader.state_dict()"
        )
    workers = saved.get("workers") if isinstance(saved, dict) else None
    if (
        not isinstance(workers, list)
        or len(workers) != plan.num_workers
        or not isinstance(saved.get("next_worker"), int)
        or not isinstance(saved.get("exhausted"), list)
    ):
        raise ValueError(
            f"state's sampler_state must hold one dataset state per worker "
            f"({plan.num_workers}), a next_worker and an exhausted list, got {saved!r}; "
            "pass the dict returned by DataLoader.state_dict()"
        )
    workers_range = f"range({plan.num_workers})"
    next_worker = saved["next_worker"]
    if isinstance(next_worker, bool) or not 0 <= next_worker < plan.num_workers:
        raise ValueError(
            f"state's sampler_state's next_worker must be a worker id in {workers_range}, got "
            f"{next_worker!r}; pass the dict returned by DataLoader.state_dict()"
        )
    exhausted = saved["exhausted"]
    if (
        not all(type(w) is int and 0 <= w < plan.num_workers for w in exhausted)
        or len(set(exhausted)) != len(exhausted)
        or len(exhausted) >= plan.num_workers
    ):
        raise ValueError(
            f"state's sampler_state's exhausted must list distinct worker ids in "
            f"{workers_range}, fewer than all of them (a state after every replica ended starts "
            f"the next epoch), got {exhausted!r}; pass the dict returned by "
            "DataLoader.state_dict()"
        )
    if isinstance(plan.dataset, ShardedIterableDataset):
        for replica in workers:
            if replica is not None:
                plan.dataset.check_state(replica)


def merged_resume(plan: LoaderPlan, saved: dict[str, Any]) -> dict[str, Any]:
    """The per-worker resume point of a merged state: every worker starts from all of it."""
    return {"workers": [saved] * plan.num_workers, "next_worker": 0, "exhausted": []}
