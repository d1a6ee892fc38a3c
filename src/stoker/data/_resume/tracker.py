"""Resumable iteration: the resume tracker that opens epochs, saves them and loads them back.

Every loader iterator takes its indices from :meth:`ResumeTracker.open_epoch` and counts the
batches it hands to the user in the :class:`~stoker.data._resume.progress.EpochProgress` it
gets back; workers never take part (for map-style datasets saving costs them nothing). A state
(:meth:`ResumeTracker.save`) records *where the user is*: the loader epoch, the batches of it
delivered, the epoch's base seed and the sample seed, the loader generator's state, and how to
put the index sampler back:

* ``"offset"``: a stoker sampler (or a :class:`~stoker.data.BatchSampler` over one, the
  default) that resumes at an offset (:class:`~stoker.data._samplers.stateful.OffsetStateful`):
  its own state with the offset lowered to the indices actually delivered, so the next epoch starts
  there without replaying anything, whatever the number of workers;
* ``"replay"``: any other sampler, a stoker sampler subclass that overrides ``__iter__``
  included: its ``state_dict()`` as the epoch began (when it is
  :class:`~stoker.data._samplers.stateful.Stateful`), then the delivered batches are drawn again
  from the sampler and skipped (no data loaded);
* IterableDataset (:mod:`stoker.data._resume.iterable`): ``"dataset"``, the dataset's own
  ``state_dict()`` (``num_workers=0``); ``"worker_states"``, one state per worker replica; or
  ``"fast_forward"``: the delivered batches are loaded again and dropped.

:meth:`ResumeTracker.load` checks a state against the loader's plan and applies it: the next
:meth:`ResumeTracker.open_epoch` resumes from it. See docs/design/resume.md for the format and
the guarantees.
"""

from __future__ import annotations

import collections
import copy
import itertools
from collections.abc import Iterator
from typing import Any

from stoker._checks import check_int
from stoker.data._errors import short_repr
from stoker.data._generator import GeneratorState, restore_generator, save_generator
from stoker.data._plan import LoaderPlan
from stoker.data._resume.iterable import (
    check_worker_states,
    merged_resume,
    save_iterable,
    sharded_fields,
)
from stoker.data._resume.progress import EpochProgress
from stoker.data._sample_rng import keyed
from stoker.data._samplers.base import BatchSampler, EpochSampler
from stoker.data._samplers.distributed import DistributedSampler
from stoker.data._samplers.epochs import same_value
from stoker.data._samplers.positions import PositionSet
from stoker.data._samplers.stateful import OffsetStateful, Stateful, is_stateful
from stoker.data._sharded import ShardedIterableDataset

__all__ = ["LOADER_STATE_FORMAT", "LOADER_STATE_VERSION", "ResumeTracker", "check_header"]

LOADER_STATE_VERSION = 1
LOADER_STATE_FORMAT = "stoker.data.DataLoader"
_FINISHED = 1 << 62  # an offset past any epoch's end: the state describes the next epoch
_SEED_MAX = (1 << 64) - 1
_FIX = "pass the dict returned by DataLoader.state_dict(), unchanged"
_ONE_RANK = (
    " (a state of one rank resumes on the same rank and world size only: merge every rank's "
    "loader state with stoker.data.merge_states() and load the merged state on any world size)"
)


def _offset_target(index_sampler: Any) -> tuple[OffsetStateful, int] | None:
    """Return ``(sampler, indices per batch)`` when the epoch can resume at an offset."""
    inner, per_batch = index_sampler, 1
    if type(index_sampler) is BatchSampler:
        inner, per_batch = index_sampler.sampler, index_sampler.batch_size
    # stoker's samplers match by class first: a protocol check alone costs ~15 us an epoch
    kinds = (EpochSampler, DistributedSampler, OffsetStateful)
    if isinstance(inner, kinds) and inner.resumes_at_offset:
        return inner, per_batch
    return None


def _replay_source(index_sampler: Any) -> Stateful | None:
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


def _describe(plan: LoaderPlan) -> dict[str, Any]:
    """The fields a state must match to be loaded into the loader of ``plan``."""
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


def check_header(state: Any) -> None:
    """Raise unless ``state`` is a dict with a DataLoader state's format and version."""
    if not isinstance(state, dict):
        raise TypeError(
            f"state must be a dict returned by DataLoader.state_dict(), got {state!r} of type "
            f"{type(state).__name__}"
        )
    for key in ("format", "version"):
        _require(state, key, "state")
    if not same_value(state["format"], LOADER_STATE_FORMAT):
        raise ValueError(
            f"state must be a DataLoader state (format {LOADER_STATE_FORMAT!r}), got format "
            f"{state['format']!r}; pass the dict returned by DataLoader.state_dict()"
        )
    if not same_value(state["version"], LOADER_STATE_VERSION):
        raise ValueError(
            f"state version must be {LOADER_STATE_VERSION}, got {state['version']!r}; it was "
            "saved by an incompatible version of stoker"
        )


def _require(container: dict[str, Any], key: str, where: str) -> Any:
    """Return ``container[key]``; a missing key is a ValueError showing what was given."""
    if key not in container:
        raise ValueError(f"{where} is missing {key!r}, got {short_repr(container)}; {_FIX}")
    return container[key]


def _check_fits(plan: LoaderPlan, state: Any) -> None:
    """Raise unless ``state`` is a DataLoader state of this version that fits ``plan``."""
    check_header(state)
    missing = [k for k in ("epoch", "batches", "mode", "sampler_state") if k not in state]
    if missing:
        raise ValueError(
            f"state is missing {missing}, got {short_repr(state)}; pass a dict from "
            "DataLoader.state_dict()"
        )
    expected_fields = _describe(plan)
    if isinstance(plan.dataset, ShardedIterableDataset):
        expected_fields.update(sharded_fields(plan.dataset, merged=state["mode"] == "merged"))
    for key, expected in expected_fields.items():
        if key == "num_workers" and state["mode"] == "merged":
            continue  # a merged ShardedIterableDataset state deals its shards to any workers
        if not same_value(_require(state, key, "state"), expected):
            why = {
                "num_workers": " (an IterableDataset's batches depend on how many workers shard "
                "it, so it resumes only with the same num_workers)",
                "rank": _ONE_RANK,
                "world_size": _ONE_RANK,
            }.get(key, "")
            raise ValueError(
                f"state does not fit this loader: {key} is {state[key]!r} in the state but "
                f"{expected!r} here{why}; load it into a loader built like the one that saved it"
            )
    _check_values(plan, state)


def _bad(key: str, value: Any, expected: str) -> ValueError:
    return ValueError(f"state's {key} must be {expected}, got {value!r}; {_FIX}")


def _int_field(
    value: Any, key: str, *, maximum: int | None = None, allow_none: bool = False
) -> int | None:
    """Return a state field that must be an int in ``[0, maximum]`` (or None when allowed)."""
    none = " or None" if allow_none else ""
    upper = "" if maximum is None else f" and <= {maximum}"
    expected = f"an int >= 0{upper}{none}"
    try:
        number: int | None = check_int(value, key, minimum=0, allow_none=allow_none)
    except (TypeError, ValueError) as err:
        raise _bad(key, value, expected) from err
    if number is not None and maximum is not None and number > maximum:
        raise _bad(key, value, expected)
    return number


def _modes(plan: LoaderPlan) -> tuple[str, ...]:
    """The modes a state saved by the loader of ``plan`` can have (see the module docstring)."""
    if not plan.iterable:
        target = _offset_target(plan.index_sampler)
        if target is None:
            return ("replay",)
        return ("offset", "merged") if isinstance(target[0], DistributedSampler) else ("offset",)
    if not is_stateful(plan.dataset):
        return ("fast_forward",)
    merged = ("merged",) if isinstance(plan.dataset, ShardedIterableDataset) else ()
    return ("worker_states", "fast_forward", *merged) if plan.num_workers else ("dataset", *merged)


def _check_values(plan: LoaderPlan, state: dict[str, Any]) -> None:
    """Raise a ValueError naming the first field of ``state`` whose value cannot be right."""
    _int_field(state["epoch"], "epoch")
    index_sampler = plan.index_sampler
    total = None
    if not plan.iterable and hasattr(index_sampler, "__len__"):
        total = len(index_sampler)
    batches = _int_field(state["batches"], "batches", maximum=total)
    for key in ("base_seed", "sample_seed"):
        _int_field(state.get(key), key, maximum=_SEED_MAX, allow_none=True)
    mode, modes = state["mode"], _modes(plan)
    if mode not in modes:
        why = ""
        if plan.iterable and not is_stateful(plan.dataset):
            why = (
                f" ({type(plan.dataset).__name__} has no state_dict()/load_state_dict(), or a "
                "state_dict() that needs arguments)"
            )
        raise _bad("mode", mode, f"one of {list(modes)} for this loader{why}")
    saved = state["sampler_state"]
    if mode == "offset":
        if not isinstance(saved, dict):
            raise _bad("sampler_state", saved, "the sampler's state dict in mode 'offset'")
        where = "state's sampler_state"
        _int_field(_require(saved, "epoch", where), "sampler_state's epoch")
        seed = _require(saved, "seed", where)
        _int_field(seed, "sampler_state's seed", maximum=_SEED_MAX, allow_none=True)
        target = _offset_target(index_sampler)
        per_batch = 1 if target is None else target[1]
        offset = _require(saved, "offset", where)
        wanted = (batches or 0) * per_batch
        if target is not None and isinstance(target[0], DistributedSampler):
            # its position is its own (a prefix, ranges, a share): the sampler checks it
            pass
        elif offset != wanted or isinstance(offset, bool):
            raise _bad(
                "sampler_state's offset",
                offset,
                f"{wanted} (batches {batches} x {per_batch} indices per batch)",
            )
    elif mode == "merged" and (not isinstance(saved, dict) or "merged" not in saved):
        missing = " (it is missing 'merged')" if isinstance(saved, dict) else ""
        raise _bad(
            "sampler_state",
            saved,
            f"a state from stoker.data.merge_states() in mode 'merged'{missing}",
        )
    elif mode == "fast_forward" and saved is not None:
        raise _bad("sampler_state", saved, "None in mode 'fast_forward'")
    if mode == "merged" and batches != 0:
        raise _bad("batches", batches, "0 in a merged state (stoker.data.merge_states writes 0)")
    current = save_generator(plan.seed_source)._asdict()
    kinds = [kind for kind, value in current.items() if value is not None]
    generator = _require(state, "generator", "state")
    shape = f"{{{kinds[0]!r}: state}}" if kinds else "None"
    if kinds and (not isinstance(generator, dict) or list(generator) != kinds):
        missing = f" (it is missing {kinds[0]!r})" if isinstance(generator, dict) else ""
        raise _bad("generator", generator, f"{shape} for this loader's generator{missing}")
    if not kinds and generator is not None:
        raise _bad("generator", generator, f"{shape}: this loader has no generator state")
    if kinds:
        gap = _missing_key(generator[kinds[0]], current[kinds[0]])
        if gap is not None:
            raise _bad(
                "generator", generator, f"a state of this loader's generator (missing {gap!r})"
            )


def _missing_key(saved: Any, current: Any) -> str | None:
    """The first key of ``current`` (a generator's state, nested dicts) ``saved`` lacks."""
    if not isinstance(current, dict) or not isinstance(saved, dict):
        return None
    for key, value in current.items():
        if key not in saved:
            return str(key)
        inner = _missing_key(saved[key], value)
        if inner is not None:
            return inner
    return None


def _generator_state(saved: Any) -> GeneratorState:
    """Read the ``"generator"`` field: ``{"numpy": state}``, ``{"torch": text}`` or null."""
    if saved is None:
        return GeneratorState()
    try:
        found = GeneratorState(**saved)
    except TypeError as err:
        raise _bad("generator", saved, "null or hold one generator kind's state") from err
    if found.numpy is not None and not isinstance(found.numpy, dict):
        raise _bad("generator", saved, "{'numpy': a bit_generator.state dict}")
    if found.torch is not None and not isinstance(found.torch, str):
        raise _bad("generator", saved, "{'torch': base64 text}")
    return found


def _restore(plan: LoaderPlan, saved: GeneratorState, field: Any) -> None:
    """Put the loader's generator back; any failure is the ``generator`` field's fault."""
    try:
        restore_generator(plan.seed_source, saved, "this loader")
    except (TypeError, ValueError, KeyError, IndexError, OverflowError, StopIteration) as err:
        why = f"it is missing {err}" if isinstance(err, KeyError) else repr(err)
        raise ValueError(
            f"state's generator must be a state of this loader's generator "
            f"({type(plan.seed_source).__name__}), got {short_repr(field, 400)} ({why}); {_FIX}"
        ) from err


def _load_sampler_state(plan: LoaderPlan, mode: str, saved: Any) -> None:
    """Load the saved sampler (or dataset) state; its refusal names the ``sampler_state`` field."""
    index_sampler = plan.index_sampler
    load: Any = None
    if mode == "merged" and plan.iterable:
        load = plan.dataset.load_state_dict if not plan.num_workers else plan.dataset.check_state
    elif mode in ("offset", "merged"):
        target = _offset_target(index_sampler)
        if target is None:  # pragma: no cover - _describe already matched the sampler kinds
            raise ValueError(f"state mode {mode!r} needs a stoker sampler")
        load = target[0].load_state_dict
    elif mode == "replay" and saved is not None:
        source = _replay_source(index_sampler)
        if source is None:
            raise ValueError(
                f"state holds a sampler state but {type(index_sampler).__name__} has no "
                "load_state_dict(); load it into a loader with the same sampler"
            )
        load = source.load_state_dict
    elif mode == "dataset" and saved is not None:
        load = plan.dataset.load_state_dict
    elif mode == "worker_states" and saved is not None:
        check_worker_states(plan, saved)
    if load is None:
        return
    try:
        load(saved)
    except (TypeError, ValueError, KeyError, IndexError, StopIteration) as err:
        raise ValueError(
            f"state's sampler_state must be a state this loader's sampler accepts, got "
            f"{short_repr(saved, 300)}: {err}; {_FIX}"
        ) from err


def _items_in_stream(index_sampler: Any, stream: int) -> int:
    """How many items a loader draws from a stream of ``stream`` indices (batched or not)."""
    if type(index_sampler) is not BatchSampler:
        return stream
    if index_sampler.drop_last:
        return stream // index_sampler.batch_size
    return -(-stream // index_sampler.batch_size)


def _distributed_done(index_sampler: Any, progress: EpochProgress) -> bool:
    """Whether a DistributedSampler's iteration (a resumed share: shorter) was all delivered."""
    target = _offset_target(index_sampler)
    if target is None or not isinstance(target[0], DistributedSampler) or not progress.started:
        return False
    stream = target[0].stream_length
    if stream is None:
        return False
    mark, ahead = progress.items_delivered()
    return mark + len(ahead) >= _items_in_stream(index_sampler, stream)


def _save_distributed(
    state: dict[str, Any],
    sampler: DistributedSampler[Any],
    per_batch: int,
    progress: EpochProgress | None,
    *,
    begun: bool,
    finished: bool,
) -> dict[str, Any]:
    """Fill in a DistributedSampler's position: the indices of its list actually delivered.

    Out of order, the delivered batches need not be a prefix of the stream: they are saved as
    ranges (``PositionSet``) of the rank's list, so a resume skips exactly them.
    """
    state["mode"] = "offset"
    if progress is None or finished or not begun:
        state["sampler_state"] = sampler.resume_state(_FINISHED if finished else None)
        state["batches"] = 0
        return state
    mark, ahead = progress.items_delivered()
    spans = [(0, mark * per_batch)] + [(i * per_batch, (i + 1) * per_batch) for i in ahead]
    state["sampler_state"] = sampler.resume_state(mark * per_batch, PositionSet.of_spans(spans))
    return state


def _merged_as_rank_state(plan: LoaderPlan, merged: dict[str, Any]) -> dict[str, Any]:
    """A loaded merged state as this rank's own state, as it saves before its first batch.

    It must merge again with the states its peers save after theirs (``merge_states`` takes
    one state per rank): a DistributedSampler's is this rank's position in the merged epoch
    (its share, offset 0); a ShardedIterableDataset's holds the merged shard positions.
    """
    state = copy.deepcopy(merged)
    if plan.iterable:
        dataset: ShardedIterableDataset[Any] = plan.dataset  # mode "merged" is checked for it
        state.update(sharded_fields(dataset, merged=False))
        state.update(
            num_workers=plan.num_workers, mode="worker_states" if plan.num_workers else "dataset"
        )
        if plan.num_workers:
            state["sampler_state"] = merged_resume(plan, state["sampler_state"])
        return state
    target = _offset_target(plan.index_sampler)
    if target is None:  # pragma: no cover - mode "merged" is checked for a DistributedSampler
        raise RuntimeError("a merged state needs a DistributedSampler")
    state.update(mode="offset", sampler_state=target[0].resume_state(None))
    return state


class ResumeTracker:
    """Owned by one DataLoader: the current epoch's progress, and saving and loading it."""

    def __init__(self) -> None:
        """Start before the first epoch, with nothing loaded."""
        self.current: EpochProgress | None = None
        self.sample_seed: int | None = None
        self.base_seed: int | None = None
        self.restored_base_seed: int | None = None
        self._next_index = 0
        self._pending: dict[str, Any] | None = None

    def open_epoch(self, plan: LoaderPlan, workers: bool) -> tuple[EpochProgress, Iterator[Any]]:
        """Begin an epoch: return its progress and the index stream every iterator consumes.

        Args:
            plan: the plan whose index sampler the stream draws from.
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
            if mode == "merged" and plan.iterable and plan.num_workers:
                progress.resume_from(merged_resume(plan, pending["sampler_state"]))
        progress.resumed = progress.yielded
        self._next_index = progress.index + 1
        index_sampler = plan.index_sampler
        if _offset_target(index_sampler) is None:
            source = _replay_source(index_sampler)
            # A stoker sampler describes its epoch when saving (resume_state), so nothing is
            # taken now: a state_dict() here would fix the epoch's randomness early and draw
            # from the global generator before the base seed, out of torch's order.
            if source is not None and not isinstance(source, EpochSampler):
                progress.snapshot = source.state_dict()
        self.current = progress
        items = iter(index_sampler)
        wrap = workers and not plan.iterable
        progress.stream = self._stream(progress, items, replay, wrap)
        return progress, progress.stream

    @staticmethod
    def _stream(
        progress: EpochProgress, items: Iterator[Any], replay: int, wrap: bool
    ) -> Iterator[Any]:
        # next() alone: iter() again would restart a sampler whose __iter__ returns itself
        if replay:
            progress.started = True
            # the itertools docs' consume(): drop ``replay`` items without keeping them
            collections.deque(map(next, itertools.repeat(items, replay)), maxlen=0)
        while True:
            try:
                item = next(items)
            except StopIteration:
                # Drawn to its end: an empty epoch (a rank's empty part of a split epoch) has
                # begun too, so a save after prefetching it describes the next epoch, not this
                # one afresh.
                progress.started = True
                return
            progress.started = True
            yield keyed(item, progress.key) if wrap and progress.key is not None else item

    def note_base_seed(self, progress: EpochProgress, base_seed: int) -> None:
        """Record the iterator's base seed; the first one becomes the sample seed."""
        self.base_seed = base_seed
        if self.sample_seed is None:
            self.sample_seed = base_seed
        progress.key = (self.sample_seed, progress.index)

    def save(self, plan: LoaderPlan) -> dict[str, Any]:
        """Return the loader's state (see :meth:`stoker.data.DataLoader.state_dict`)."""
        if self._pending is not None:  # loaded, not iterated yet: the loaded state still holds
            if self._pending["mode"] == "merged":
                return _merged_as_rank_state(plan, self._pending)
            return copy.deepcopy(self._pending)
        progress = self.current
        state: dict[str, Any] = {"format": LOADER_STATE_FORMAT, "version": LOADER_STATE_VERSION}
        state.update(_describe(plan))
        index_sampler = plan.index_sampler
        total = (
            len(index_sampler) if hasattr(index_sampler, "__len__") and not plan.iterable else None
        )
        finished = progress is not None and (
            progress.finished
            or (total is not None and progress.started and progress.yielded >= total)
            or (plan.iterable and len(progress.exhausted) == plan.num_workers > 0)
            or _distributed_done(index_sampler, progress)
        )
        begun = progress is not None and (progress.started or progress.yielded > 0) and not finished
        if progress is None:
            epoch, batches, base_seed = self._next_index, 0, None
        elif finished:
            # the next epoch starts afresh; persistent workers would keep their base seed
            epoch, batches = progress.index + 1, 0
            base_seed = self.base_seed if plan.persistent_workers else None
        else:
            epoch, batches, base_seed = progress.index, progress.yielded, self.base_seed
        generator = save_generator(plan.seed_source)
        state.update(
            epoch=epoch,
            batches=batches,
            base_seed=base_seed,
            sample_seed=self.sample_seed,
            generator=(
                {kind: value for kind, value in generator._asdict().items() if value is not None}
                or None
            ),
        )
        if plan.iterable:
            return save_iterable(plan, state, progress, finished)
        target = _offset_target(index_sampler)
        if target is not None and isinstance(target[0], DistributedSampler):
            return _save_distributed(
                state, target[0], target[1], progress, begun=begun, finished=finished
            )
        if target is not None:
            sampler, per_batch = target
            consumed = None if not begun else batches * per_batch
            if finished:
                consumed = _FINISHED
            state["mode"] = "offset"
            state["sampler_state"] = sampler.resume_state(consumed)
            state["batches"] = batches if begun else 0
            return state
        state["mode"] = "replay"
        if progress is not None and finished and progress.stream is not None:
            # All batches were delivered but the sampler may not have seen its end yet (a
            # generator that updates its state after its last item): let it finish first.
            next(progress.stream, None)
        source = _replay_source(index_sampler)
        if isinstance(source, EpochSampler):
            # the epoch from its start, or the next one; never fixes (draws) randomness early
            during = progress is not None and not finished and progress.started
            state["sampler_state"] = source.resume_state(0 if during else None)
        elif progress is None or finished:
            state["sampler_state"] = None if source is None else source.state_dict()
        else:
            state["sampler_state"] = progress.snapshot
        return state

    def load(self, plan: LoaderPlan, state: Any) -> None:
        """Check ``state`` against ``plan`` and apply it (see ``DataLoader.load_state_dict``).

        Every field is checked (its type, its range, its agreement with this loader) before
        anything is applied; a field that does not fit raises a ValueError naming it, and
        leaves the loader as it was.

        Raises:
            TypeError: when ``state`` is not a dict.
            ValueError: when a field does not fit the loader.
        """
        _check_fits(plan, state)
        wanted = _generator_state(state.get("generator"))
        before = save_generator(plan.seed_source)
        _restore(plan, wanted, state.get("generator"))
        try:
            _load_sampler_state(plan, state["mode"], state["sampler_state"])
        except ValueError:
            restore_generator(plan.seed_source, before, "this loader")  # leave it as it was
            raise
        self._pending = state
        self._next_index = int(state["epoch"])
        self.sample_seed = state.get("sample_seed")
        self.current = None
