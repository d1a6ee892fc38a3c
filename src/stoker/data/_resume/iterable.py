"""How an IterableDataset's position is saved and checked: its own state(s) or a fast-forward.

An iterable dataset has no indices to recompute, so the loader state records where its
replicas are:

* ``"dataset"`` (``num_workers=0``, and the dataset is
  :class:`~stoker.data._samplers.stateful.Stateful`, see
  :func:`~stoker.data._samplers.stateful.is_stateful`):
  the dataset's ``state_dict()``, taken at save time;
* ``"worker_states"`` (workers, and the dataset is ``Stateful``): each worker's replica state
  as of its last batch handed to the user, the worker that is next in the round-robin, and the
  workers already exhausted (recorded by the worker iterator in
  :class:`~stoker.data._resume.progress.EpochProgress`);
* ``"fast_forward"`` (anything else): nothing; the delivered batches are loaded again and dropped.

See docs/design/resume.md.
"""

from __future__ import annotations

from typing import Any

from stoker.data._plan import LoaderPlan
from stoker.data._resume.progress import EpochProgress
from stoker.data._samplers.stateful import is_stateful
from stoker.data._sharded import SHARDED_FORMAT, ShardedIterableDataset

__all__ = ["check_worker_states", "merged_resume", "save_iterable", "sharded_fields"]


def save_iterable(
    plan: LoaderPlan,
    state: dict[str, Any],
    progress: EpochProgress | None,
    finished: bool,
) -> dict[str, Any]:
    """Fill in how an IterableDataset resumes: its own state(s), or a fast-forward."""
    dataset = plan.dataset
    workers = plan.num_workers
    if isinstance(dataset, ShardedIterableDataset):  # for merge_states: whose shards these are
        state.update(sharded_fields(dataset, merged=False))
    stateful = is_stateful(dataset)
    if workers == 0 and stateful:
        state["mode"] = "dataset"
        state["sampler_state"] = None if finished else dataset.state_dict()
        return state
    if workers and stateful:
        fresh = state["batches"] == 0 and (progress is None or progress.resume is None)
        if progress is None or finished or fresh:  # the epoch starts afresh
            state["mode"], state["sampler_state"] = "worker_states", None
            return state
        saved = [progress.worker_states.get(w) for w in range(workers)]
        complete = not progress.states_failed and all(
            s is not None for w, s in enumerate(saved) if w in progress.worker_states
        )
        if complete:
            last = progress.last_worker
            state["mode"] = "worker_states"
            state["sampler_state"] = {
                "workers": saved,
                "next_worker": 0 if last is None else (last + 1) % workers,
                "exhausted": sorted(progress.exhausted),
            }
            return state
    # No usable per-worker state: the delivered batches are loaded again and dropped.
    state["mode"] = "fast_forward"
    state["sampler_state"] = None
    return state


def sharded_fields(dataset: ShardedIterableDataset[Any], *, merged: bool) -> dict[str, Any]:
    """The fields a loader state over ``dataset`` holds: whose shards its positions are.

    A merged state holds no rank or world size (it loads on any).
    """
    fields = {"shard_format": SHARDED_FORMAT, "shards": len(dataset.shards)}
    if not merged:
        fields.update(rank=dataset.rank, world_size=dataset.world_size)
    return fields


def check_worker_states(plan: LoaderPlan, saved: Any) -> None:
    """Check a ``"worker_states"`` resume point against ``plan`` before it is used."""
    if not is_stateful(plan.dataset):
        raise ValueError(
            f"state holds per-worker dataset states but {type(plan.dataset).__name__} has no "
            "state_dict()/load_state_dict() (or a state_dict() that needs arguments); load it "
            "into a loader over the same dataset class"
        )
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
