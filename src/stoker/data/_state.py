"""Resumable iteration: the loader's epoch progress, and its small, versioned, JSON state.

Every loader iterator takes its indices from :meth:`ResumeTracker.open_epoch` and counts the
batches it hands to the user in the :class:`EpochProgress` it gets back; workers never take
part (for map-style datasets saving costs them nothing). A state records *where the user is*:
the loader epoch, the batches of it delivered, the epoch's base seed and the sample seed, the
loader generator's state, and how to put the index sampler back:

* ``"offset"``: a stoker sampler (or a :class:`~stoker.data.BatchSampler` over one, the
  default): its own state with the offset lowered to the indices actually delivered, so the
  next epoch starts there without replaying anything, whatever the number of workers;
* ``"replay"``: any other sampler: its ``state_dict()`` as the epoch began (when it has one),
  then the delivered batches are drawn again from the sampler and skipped (no data loaded);
* IterableDataset (:mod:`stoker.data._state_iterable`): ``"dataset"``, the dataset's own
  ``state_dict()`` (``num_workers=0``); ``"worker_states"``, one state per worker replica; or
  ``"fast_forward"``: the delivered batches are loaded again and dropped.

See docs/design/resume.md for the format and the guarantees.
"""

from __future__ import annotations

import base64
import copy
import itertools
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from stoker.data._distributed import DistributedSampler
from stoker.data._generator import is_torch_generator
from stoker.data._sample_rng import keyed
from stoker.data._sampler import BatchSampler, _StatefulSampler
from stoker.data._state_iterable import check_worker_states, save_iterable

if TYPE_CHECKING:
    from stoker.data._loader import DataLoader

__all__ = ["LOADER_STATE_VERSION", "EpochProgress", "ResumeTracker", "load_state", "save_state"]

LOADER_STATE_VERSION = 1
_FORMAT = "stoker.data.DataLoader"


@dataclass
class EpochProgress:
    """One loader epoch as the user sees it.

    Attributes:
        index: the loader's epoch number (0 for the first ``iter(loader)``).
        yielded: batches of this epoch handed to the user (skipped ones included).
        started: whether the index sampler has begun the epoch (its first item was taken).
        finished: whether the iterator reported the end of the epoch.
        snapshot: a custom sampler's ``state_dict()`` taken as the epoch opened.
        skip: batches an iterable-dataset iterator still has to load and drop.
        key: ``(sample seed, epoch)`` for :func:`~stoker.data.sample_rng`.
        stream: the index stream of this epoch.
        worker_states: an IterableDataset's state per worker id, as of that worker's last
            batch handed to the user (or its end, once all its batches were handed over).
        last_worker: the worker whose batch was handed to the user last.
        exhausted: workers whose replica ended and whose batches were all handed over.
        states_failed: a worker's ``state_dict()`` failed, so ``worker_states`` is incomplete.
        resume: the per-worker resume point loaded from a state (``"worker_states"`` mode):
            ``{"workers": [state or None, ...], "next_worker": id, "exhausted": [ids]}``.
    """

    index: int
    yielded: int = 0
    started: bool = False
    finished: bool = False
    snapshot: Any = None
    skip: int = 0
    key: tuple[int, int] | None = None
    stream: Iterator[Any] | None = None
    worker_states: dict[int, Any] = field(default_factory=dict)
    last_worker: int | None = None
    exhausted: set[int] = field(default_factory=set)
    states_failed: bool = False
    resume: dict[str, Any] | None = None

    def resume_from(self, saved: dict[str, Any]) -> None:
        """Take a saved per-worker resume point as this epoch's starting position."""
        workers = list(saved["workers"])
        self.resume = saved
        self.worker_states = {w: state for w, state in enumerate(workers) if state is not None}
        self.exhausted = set(saved["exhausted"])
        self.last_worker = (int(saved["next_worker"]) - 1) % len(workers)


def _offset_target(index_sampler: Any) -> tuple[Any, int] | None:
    """Return ``(stoker sampler, indices per batch)`` when the epoch can resume at an offset."""
    inner, per_batch = index_sampler, 1
    if type(index_sampler) is BatchSampler:
        inner, per_batch = index_sampler.sampler, index_sampler.batch_size
    if isinstance(inner, _StatefulSampler) and type(inner).__iter__ is _StatefulSampler.__iter__:
        return inner, per_batch
    if (
        isinstance(inner, DistributedSampler)
        and type(inner).__iter__ is DistributedSampler.__iter__
    ):
        return inner, per_batch
    return None


def _sampler_state(sampler: Any) -> Any:
    """Return ``sampler.state_dict()``, or None when it has none (or cannot give one)."""
    method = getattr(sampler, "state_dict", None)
    if not callable(method):
        return None
    try:
        return method()
    except TypeError:  # e.g. a BatchSampler over a sampler without state
        return None


class ResumeTracker:
    """Owned by one DataLoader: the current epoch's progress and a loaded state to apply."""

    def __init__(self) -> None:
        self.current: EpochProgress | None = None
        self.sample_seed: int | None = None
        self.base_seed: int | None = None
        self.restored_base_seed: int | None = None
        self._next_index = 0
        self._pending: dict[str, Any] | None = None

    def open_epoch(
        self, loader: DataLoader[Any], workers: bool
    ) -> tuple[EpochProgress, Iterator[Any]]:
        """Begin an epoch: return its progress and the index stream every iterator consumes.

        Args:
            loader: the loader whose index sampler the stream draws from.
            workers: wrap the items with the sample key (workers load them elsewhere).
        """
        pending, self._pending = self._pending, None
        progress = EpochProgress(index=self._next_index)
        self.restored_base_seed = None
        replay = 0
        if pending is not None:
            progress.index = int(pending["epoch"])
            progress.yielded = int(pending["batches"])
            self.restored_base_seed = pending.get("base_seed")
            mode = pending["mode"]
            if mode in ("replay", "fast_forward"):
                replay = progress.yielded
            if mode == "fast_forward":
                progress.skip, replay = replay, 0
            if mode == "worker_states" and pending["sampler_state"] is not None:
                progress.resume_from(pending["sampler_state"])
        self._next_index = progress.index + 1
        index_sampler = loader._index_sampler
        progress.snapshot = None if _offset_target(index_sampler) else _sampler_state(index_sampler)
        self.current = progress
        items = iter(index_sampler)
        wrap = workers and not loader._iterable_kind
        progress.stream = self._stream(progress, items, replay, wrap)
        return progress, progress.stream

    @staticmethod
    def _stream(
        progress: EpochProgress, items: Iterator[Any], replay: int, wrap: bool
    ) -> Iterator[Any]:
        if replay:
            progress.started = True
            for _ in itertools.islice(items, replay):
                pass
        for item in items:
            progress.started = True
            yield keyed(item, progress.key) if wrap and progress.key is not None else item

    def note_base_seed(self, progress: EpochProgress, base_seed: int) -> None:
        """Record the iterator's base seed; the first one becomes the sample seed."""
        self.base_seed = base_seed
        if self.sample_seed is None:
            self.sample_seed = base_seed
        progress.key = (self.sample_seed, progress.index)

    def load(self, state: dict[str, Any]) -> None:
        """Apply a checked state: the next :meth:`open_epoch` resumes from it."""
        self._pending = state
        self._next_index = int(state["epoch"])
        self.sample_seed = state.get("sample_seed")
        self.current = None


def _encode_generator(generator: Any) -> Any:
    if isinstance(generator, np.random.Generator):
        return {"numpy": generator.bit_generator.state}
    if is_torch_generator(generator):
        raw = generator.get_state().numpy().tobytes()
        return {"torch": base64.b64encode(raw).decode("ascii")}
    return None


def _decode_generator(generator: Any, saved: Any) -> None:
    if saved is None:
        return
    if "numpy" in saved and isinstance(generator, np.random.Generator):
        generator.bit_generator.state = saved["numpy"]
    elif "torch" in saved and is_torch_generator(generator):
        torch = sys.modules["torch"]
        raw = np.frombuffer(base64.b64decode(saved["torch"]), dtype=np.uint8).copy()
        generator.set_state(torch.from_numpy(raw))
    else:
        kind = next(iter(saved))
        raise ValueError(
            f"state does not fit this loader: its generator state is a {kind} generator's but "
            f"this loader's generator is {generator!r}; pass the same kind of generator"
        )


def _describe(loader: DataLoader[Any]) -> dict[str, Any]:
    """The fields a state must match to be loaded into ``loader``."""
    index_sampler = loader._index_sampler
    inner = getattr(index_sampler, "sampler", None) if type(index_sampler) is BatchSampler else None
    fields: dict[str, Any] = {
        "dataset": "iterable" if loader._iterable_kind else "map",
        "sampler": type(index_sampler).__name__,
        "inner_sampler": None if inner is None else type(inner).__name__,
        "batch_size": loader.batch_size,
        "drop_last": loader.drop_last,
    }
    if loader._iterable_kind:
        fields["num_workers"] = loader.num_workers
    else:
        fields["length"] = len(loader.dataset)
    return fields


def save_state(loader: DataLoader[Any]) -> dict[str, Any]:
    """Return ``loader``'s state (see :meth:`stoker.data.DataLoader.state_dict`)."""
    tracker: ResumeTracker = loader._resume
    if tracker._pending is not None:  # loaded, not iterated yet: the loaded state still holds
        return copy.deepcopy(tracker._pending)
    progress = tracker.current
    state: dict[str, Any] = {"format": _FORMAT, "version": LOADER_STATE_VERSION}
    state.update(_describe(loader))
    index_sampler = loader._index_sampler
    total = (
        len(index_sampler)
        if hasattr(index_sampler, "__len__") and not loader._iterable_kind
        else None
    )
    finished = progress is not None and (
        progress.finished
        or (total is not None and progress.started and progress.yielded >= total)
        or (loader._iterable_kind and len(progress.exhausted) == loader.num_workers > 0)
    )
    begun = progress is not None and (progress.started or progress.yielded > 0) and not finished
    if progress is None:
        epoch, batches, base_seed = tracker._next_index, 0, None
    elif finished:
        # the next epoch starts afresh; persistent workers would keep their base seed
        epoch, batches = progress.index + 1, 0
        base_seed = tracker.base_seed if loader.persistent_workers else None
    else:
        epoch, batches, base_seed = progress.index, progress.yielded, tracker.base_seed
    state.update(
        epoch=epoch,
        batches=batches,
        base_seed=base_seed,
        sample_seed=tracker.sample_seed,
        generator=_encode_generator(loader._seed_source),
    )
    target = _offset_target(index_sampler)
    if loader._iterable_kind:
        return save_iterable(loader, state, progress, finished)
    if target is not None:
        sampler, per_batch = target
        consumed = None if not begun else batches * per_batch
        if finished:
            consumed = 1 << 62
        state["mode"] = "offset"
        state["sampler_state"] = sampler._resume_state(consumed)
        state["batches"] = batches if begun else 0
        return state
    state["mode"] = "replay"
    if progress is not None and finished and progress.stream is not None:
        # All batches were delivered but the sampler may not have seen its end yet (a
        # generator that updates its state after its last item): let it finish first.
        next(progress.stream, None)
    if progress is None or finished:
        state["sampler_state"] = _sampler_state(index_sampler)
    else:
        state["sampler_state"] = progress.snapshot
    return state


def load_state(loader: DataLoader[Any], state: Any) -> None:
    """Check ``state`` against ``loader`` and apply it (see ``DataLoader.load_state_dict``)."""
    if not isinstance(state, dict):
        raise TypeError(
            f"state must be a dict returned by DataLoader.state_dict(), got {state!r} of type "
            f"{type(state).__name__}"
        )
    if state.get("format") != _FORMAT:
        raise ValueError(
            f"state must be a DataLoader state (format {_FORMAT!r}), got format "
            f"{state.get('format')!r}; pass the dict returned by DataLoader.state_dict()"
        )
    if state.get("version") != LOADER_STATE_VERSION:
        raise ValueError(
            f"state version must be {LOADER_STATE_VERSION}, got {state.get('version')!r}; it was "
            "saved by an incompatible version of stoker"
        )
    for key, expected in _describe(loader).items():
        if key not in state or state[key] != expected:
            why = (
                " (an IterableDataset's batches depend on how many workers shard it, so it "
                "resumes only with the same num_workers)"
                if key == "num_workers"
                else ""
            )
            raise ValueError(
                f"state does not fit this loader: {key} is {state.get(key)!r} in the state but "
                f"{expected!r} here{why}; load it into a loader built like the one that saved it"
            )
    missing = [k for k in ("epoch", "batches", "mode", "sampler_state") if k not in state]
    if missing:
        raise ValueError(f"state is missing {missing}; pass a dict from DataLoader.state_dict()")
    _decode_generator(loader._seed_source, state.get("generator"))
    index_sampler = loader._index_sampler
    mode = state["mode"]
    saved = state["sampler_state"]
    if mode == "offset":
        target = _offset_target(index_sampler)
        if target is None:  # pragma: no cover - _describe already matched the sampler kinds
            raise ValueError("state mode 'offset' needs a stoker sampler")
        target[0].load_state_dict(saved)
    elif mode == "replay" and saved is not None:
        method = getattr(index_sampler, "load_state_dict", None)
        if not callable(method):
            raise ValueError(
                f"state holds a sampler state but {type(index_sampler).__name__} has no "
                "load_state_dict(); load it into a loader with the same sampler"
            )
        method(saved)
    elif mode == "dataset" and saved is not None:
        loader.dataset.load_state_dict(saved)
    elif mode == "worker_states" and saved is not None:
        check_worker_states(loader, saved)
    loader._resume.load(state)
