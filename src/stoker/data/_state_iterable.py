"""How an IterableDataset's position is saved and checked: its own state(s) or a fast-forward.

An iterable dataset has no indices to recompute, so the loader state records where its
replicas are:

* ``"dataset"`` (``num_workers=0``): the dataset's ``state_dict()``, taken at save time;
* ``"worker_states"`` (workers, and the dataset defines ``state_dict()`` and
  ``load_state_dict()``): each worker's replica state as of its last batch handed to the user,
  the worker that is next in the round-robin, and the workers already exhausted (recorded by
  the worker iterator in :class:`~stoker.data._state.EpochProgress`);
* ``"fast_forward"`` (anything else): nothing; the delivered batches are loaded again and dropped.

See docs/design/resume.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stoker.data._loader import DataLoader
    from stoker.data._state import EpochProgress

__all__ = ["check_worker_states", "save_iterable"]


def _has_state_methods(dataset: Any) -> bool:
    return callable(getattr(dataset, "state_dict", None)) and callable(
        getattr(dataset, "load_state_dict", None)
    )


def save_iterable(
    loader: DataLoader[Any],
    state: dict[str, Any],
    progress: EpochProgress | None,
    finished: bool,
) -> dict[str, Any]:
    """Fill in how an IterableDataset resumes: its own state(s), or a fast-forward."""
    dataset = loader.dataset
    workers = loader.num_workers
    if workers == 0 and callable(getattr(dataset, "state_dict", None)):
        state["mode"] = "dataset"
        state["sampler_state"] = None if finished else dataset.state_dict()
        return state
    if workers and _has_state_methods(dataset):
        if progress is None or finished or state["batches"] == 0:  # the epoch starts afresh
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


def check_worker_states(loader: DataLoader[Any], saved: Any) -> None:
    """Check a ``"worker_states"`` resume point against ``loader`` before it is used."""
    if not _has_state_methods(loader.dataset):
        raise ValueError(
            f"state holds per-worker dataset states but {type(loader.dataset).__name__} has no "
            "state_dict()/load_state_dict(); load it into a loader over the same dataset class"
        )
    workers = saved.get("workers") if isinstance(saved, dict) else None
    if (
        not isinstance(workers, list)
        or len(workers) != loader.num_workers
        or not isinstance(saved.get("next_worker"), int)
        or not isinstance(saved.get("exhausted"), list)
    ):
        raise ValueError(
            f"state's sampler_state must hold one dataset state per worker "
            f"({loader.num_workers}), a next_worker and an exhausted list, got {saved!r}; "
            "pass the dict returned by DataLoader.state_dict()"
        )
