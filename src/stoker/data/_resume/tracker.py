"""Resumable iteration: the resume tracker that opens epochs, saves them and loads them back.

Every loader iterator takes its indices from :meth:`ResumeTracker.open_epoch` and counts the
batches it hands to the user in the :class:`~stoker.data._resume.progress.EpochProgress` it
gets back; workers never take part (for map-style datasets saving costs them nothing). A state
(:meth:`ResumeTracker.save`) records *where the user is*: the loader epoch, the batches of it
delivered, the epoch's base seed and the sample seed, the loader generator's state, and, in
its ``"mode"`` and ``"sampler_state"``, how to put the index sampler (or the IterableDataset)
back. Each mode is a class (:mod:`stoker.data._resume.mode`): :func:`modes_for` picks, for a
loader plan, the one its loader saves in and the ones it accepts, and the tracker delegates
to them; it checks and writes only what every state holds.

:meth:`ResumeTracker.load` checks a state against the loader's plan and applies it: the next
:meth:`ResumeTracker.open_epoch` resumes from it. See docs/design/resume.md for the format and
the guarantees.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from stoker.data._errors import short_repr
from stoker.data._generator import GeneratorState, restore_generator, save_generator
from stoker.data._plan import LoaderPlan
from stoker.data._resume.iterable import (
    DatasetMode,
    FastForwardMode,
    MergedShardsMode,
    WorkerStatesMode,
)
from stoker.data._resume.mode import FIX, SEED_MAX, ResumeMode, bad, int_field, require
from stoker.data._resume.progress import EpochProgress, SavePoint
from stoker.data._resume.samplers import (
    DistributedMode,
    MergedDistributedMode,
    OffsetMode,
    ReplayMode,
    describe,
    offset_target,
)
from stoker.data._sample_rng import keyed
from stoker.data._samplers.distributed import DistributedSampler
from stoker.data._samplers.epochs import same_value
from stoker.data._samplers.stateful import is_stateful
from stoker.data._sharded import ShardedIterableDataset

__all__ = [
    "LOADER_STATE_FORMAT",
    "LOADER_STATE_VERSION",
    "Modes",
    "ResumeTracker",
    "check_header",
    "modes_for",
]

LOADER_STATE_VERSION = 1
LOADER_STATE_FORMAT = "stoker.data.DataLoader"
_ONE_RANK = (
    " (a state of one rank resumes on the same rank and world size only: merge every rank's "
    "loader state with stoker.data.merge_states() and load the merged state on any world size)"
)


@dataclass(frozen=True)
class Modes:
    """The resume modes of one loader plan.

    Attributes:
        saves: the mode its states are saved in.
        loads: the modes of the states it accepts, by name (in the order errors list them).
    """

    saves: ResumeMode
    loads: dict[str, ResumeMode]


def modes_for(plan: LoaderPlan) -> Modes:
    """Pick the resume modes of the loader of ``plan`` (see the module docstrings)."""
    if not plan.iterable:
        target = offset_target(plan.index_sampler)
        if target is None:
            return _only(ReplayMode())
        sampler, per_batch = target
        if isinstance(sampler, DistributedSampler):
            distributed = DistributedMode(sampler, per_batch)
            merged = MergedDistributedMode(sampler, per_batch)
            return Modes(distributed, {distributed.name: distributed, merged.name: merged})
        return _only(OffsetMode(sampler, per_batch))
    if not is_stateful(plan.dataset):
        return _only(FastForwardMode())
    own: DatasetMode | WorkerStatesMode
    own = WorkerStatesMode() if plan.num_workers else DatasetMode()
    loads: dict[str, ResumeMode] = {own.name: own}
    if plan.num_workers:
        loads[FastForwardMode.name] = FastForwardMode()
    if isinstance(plan.dataset, ShardedIterableDataset):
        loads[MergedShardsMode.name] = MergedShardsMode(own)
    return Modes(own, loads)


def _only(mode: ResumeMode) -> Modes:
    return Modes(mode, {mode.name: mode})


def check_header(state: Any) -> None:
    """Raise unless ``state`` is a dict with a DataLoader state's format and version."""
    if not isinstance(state, dict):
        raise TypeError(
            f"state must be a dict returned by DataLoader.state_dict(), got {state!r} of type "
            f"{type(state).__name__}"
        )
    for key in ("format", "version"):
        require(state, key, "state")
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


def _check_fits(plan: LoaderPlan, modes: Modes, state: Any) -> ResumeMode:
    """Raise unless ``state`` is a DataLoader state of this version that fits ``plan``.

    Returns:
        the mode ``state`` is in.
    """
    check_header(state)
    missing = [k for k in ("epoch", "batches", "mode", "sampler_state") if k not in state]
    if missing:
        raise ValueError(
            f"state is missing {missing}, got {short_repr(state)}; pass a dict from "
            "DataLoader.state_dict()"
        )
    mode = _mode_named(modes, state["mode"])
    # an unknown mode is refused below, once the fields every state holds are checked
    for key, expected in (mode or modes.saves).fields(plan).items():
        if not same_value(require(state, key, "state"), expected):
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
    int_field(state["epoch"], "epoch")
    index_sampler = plan.index_sampler
    total = None
    if not plan.iterable and hasattr(index_sampler, "__len__"):
        total = len(index_sampler)
    batches = int_field(state["batches"], "batches", maximum=total)
    for key in ("base_seed", "sample_seed"):
        int_field(state.get(key), key, maximum=SEED_MAX, allow_none=True)
    if mode is None:
        why = ""
        if plan.iterable and not is_stateful(plan.dataset):
            why = (
                f" ({type(plan.dataset).__name__} has no state_dict()/load_state_dict(), or a "
                "state_dict() that needs arguments)"
            )
        raise bad("mode", state["mode"], f"one of {list(modes.loads)} for this loader{why}")
    mode.check(plan, state, batches or 0)
    _check_generator(plan, state)
    return mode


def _mode_named(modes: Modes, name: Any) -> ResumeMode | None:
    """The accepted mode called ``name``, or None (any other value, unhashable ones too)."""
    try:
        return modes.loads.get(name)
    except TypeError:
        return None


def _check_generator(plan: LoaderPlan, state: dict[str, Any]) -> None:
    """Raise unless the state's ``generator`` holds a state of this loader's generator."""
    current = save_generator(plan.seed_source)._asdict()
    kinds = [kind for kind, value in current.items() if value is not None]
    generator = require(state, "generator", "state")
    shape = f"{{{kinds[0]!r}: state}}" if kinds else "None"
    if kinds and (not isinstance(generator, dict) or list(generator) != kinds):
        missing = f" (it is missing {kinds[0]!r})" if isinstance(generator, dict) else ""
        raise bad("generator", generator, f"{shape} for this loader's generator{missing}")
    if not kinds and generator is not None:
        raise bad("generator", generator, f"{shape}: this loader has no generator state")
    if kinds:
        gap = _missing_key(generator[kinds[0]], current[kinds[0]])
        if gap is not None:
            raise bad(
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
        raise bad("generator", saved, "null or hold one generator kind's state") from err
    if found.numpy is not None and not isinstance(found.numpy, dict):
        raise bad("generator", saved, "{'numpy': a bit_generator.state dict}")
    if found.torch is not None and not isinstance(found.torch, str):
        raise bad("generator", saved, "{'torch': base64 text}")
    return found


def _restore(plan: LoaderPlan, saved: GeneratorState, field: Any) -> None:
    """Put the loader's generator back; any failure is the ``generator`` field's fault."""
    try:
        restore_generator(plan.seed_source, saved, "this loader")
    except (TypeError, ValueError, KeyError, IndexError, OverflowError, StopIteration) as err:
        why = f"it is missing {err}" if isinstance(err, KeyError) else repr(err)
        raise ValueError(
            f"state's generator must be a state of this loader's generator "
            f"({type(plan.seed_source).__name__}), got {short_repr(field, 400)} ({why}); {FIX}"
        ) from err


class ResumeTracker:
    """Owned by one DataLoader: the current epoch's progress, and saving and loading it."""

    def __init__(self) -> None:
        """Start before the first epoch, with nothing loaded."""
        self.current: EpochProgress | None = None
        self.sample_seed: int | None = None
        self.base_seed: int | None = None
        self.restored_base_seed: int | None = None
        self._next_index = 0
        self._pending: tuple[ResumeMode, dict[str, Any]] | None = None  # loaded, not opened

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
            loaded, state = pending
            progress.index = int(state["epoch"])
            progress.yielded = int(state["batches"])
            self.restored_base_seed = state.get("base_seed")
            replay = loaded.resume(plan, progress, state)
        progress.resumed = progress.yielded
        self._next_index = progress.index + 1
        modes_for(plan).saves.begin(plan, progress)
        self.current = progress
        items = iter(plan.index_sampler)
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
            loaded, loaded_state = self._pending
            return loaded.save_loaded(plan, loaded_state)
        mode = modes_for(plan).saves
        progress = self.current
        state: dict[str, Any] = {"format": LOADER_STATE_FORMAT, "version": LOADER_STATE_VERSION}
        state.update(describe(plan))
        finished = progress is not None and (progress.finished or mode.ended(plan, progress))
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
        return mode.save(plan, state, SavePoint(progress, begun, finished))

    def load(self, plan: LoaderPlan, state: Any) -> None:
        """Check ``state`` against ``plan`` and apply it (see ``DataLoader.load_state_dict``).

        Every field is checked (its type, its range, its agreement with this loader) before
        anything is applied; a field that does not fit raises a ValueError naming it, and
        leaves the loader as it was.

        Raises:
            TypeError: when ``state`` is not a dict.
            ValueError: when a field does not fit the loader.
        """
        mode = _check_fits(plan, modes_for(plan), state)
        wanted = _generator_state(state.get("generator"))
        before = save_generator(plan.seed_source)
        _restore(plan, wanted, state.get("generator"))
        try:
            mode.load(plan, state["sampler_state"])
        except ValueError:
            restore_generator(plan.seed_source, before, "this loader")  # leave it as it was
            raise
        self._pending = (mode, state)
        self._next_index = int(state["epoch"])
        self.sample_seed = state.get("sample_seed")
        self.current = None
