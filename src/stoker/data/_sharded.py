"""ShardedIterableDataset: an IterableDataset of shards whose state resumes on any world size.

The dataset is a list of shards (files, URLs, row groups: anything ``read_shard`` can open);
each (rank, worker) pair reads the shards ``index, index + count, ...`` of
:func:`~stoker.data.get_shard_info`, one after another, each from an offset. Its state is one
offset per shard and the shards done, so it does not depend on how many ranks or workers read
it: :func:`stoker.data.merge_states` combines the ranks' loader states shard by shard, and a
loader of any world size and ``num_workers`` deals the shards out again, each resuming at its
offset. See docs/design/resume.md for what can be re-sharded this way and what cannot.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from stoker._checks import resolve_world
from stoker.data._dataset import IterableDataset
from stoker.data._samplers.distributed import WORLD_HINT, check_rank
from stoker.data._workers import get_worker_info

__all__ = [
    "MAX_SHARDS",
    "SHARDED_FORMAT",
    "ShardInfo",
    "ShardedIterableDataset",
    "dealt_shards",
    "get_shard_info",
    "merge_shard_states",
]

T_co = TypeVar("T_co", covariant=True)

SHARDED_FORMAT = "stoker.data.ShardedIterableDataset"
MAX_SHARDS = 1 << 24
"""The most shards merge_states takes (it lists the shards dealt to a rank that ended its
part): a state claiming more is refused before the shards are counted."""
_FIX = "pass a state from DataLoader.state_dict() or stoker.data.merge_states(), unchanged"


_KEYS = ("format", "shards", "offsets", "done")
_OWNER_KEYS = ("rank", "world_size", "num_workers")


def _read(state: Any, shards: int) -> tuple[dict[int, int], set[int]]:
    """Return a state's ``(offsets, done)``, refusing a malformed one with a ValueError."""
    if not isinstance(state, dict):
        raise ValueError(f"state must be a {SHARDED_FORMAT} state, got {state!r}; {_FIX}")
    merged = state.get("merged")
    needed = (*_KEYS, *(() if merged is True else _OWNER_KEYS))
    missing = [key for key in needed if key not in state]
    if missing:
        raise ValueError(
            f"state is missing {missing} (a {SHARDED_FORMAT} state holds {list(needed)}), got "
            f"{state!r}; {_FIX}"
        )
    if state["format"] != SHARDED_FORMAT or merged not in (None, True):
        raise ValueError(f"state must be a {SHARDED_FORMAT} state, got {state!r}; {_FIX}")
    if type(state["shards"]) is not int or state["shards"] != shards:
        raise ValueError(
            f"state does not fit this dataset: shards is {state['shards']!r} in the state but "
            f"{shards} here; load it into a dataset of the same shards"
        )
    for key in () if merged else _OWNER_KEYS:
        value = state[key]
        if type(value) is not int or value < (0 if key == "rank" else 1):
            raise ValueError(
                f"state's {key} must be an int >= {0 if key == 'rank' else 1}, got {value!r}; "
                f"{_FIX}"
            )
    pairs, done = state["offsets"], state["done"]
    valid = bool(
        isinstance(pairs, list)
        and isinstance(done, list)
        and all(
            isinstance(p, list)
            and len(p) == 2
            and all(type(x) is int and x >= 0 for x in p)
            and p[0] < shards
            for p in pairs
        )
        and all(type(n) is int and 0 <= n < shards for n in done)
    )
    if not valid:
        raise ValueError(
            f"state's offsets must be [[shard, offset], ...] and done a list of shard numbers "
            f"below {shards}, got offsets={pairs!r}, done={done!r}; {_FIX}"
        )
    checked: list[list[int]] = pairs
    return {pair[0]: pair[1] for pair in checked}, set(done)


def dealt_shards(shards: int, world: int, rank: int, num_workers: int) -> list[int]:
    """The shards one rank's workers read: shard ``n`` goes to pair ``n % count``."""
    workers = max(1, num_workers)  # without workers, the main process is the one reader
    count = world * workers
    return [n for n in range(shards) if (n % count) // workers == rank]


def merge_shard_states(states: Sequence[Any], shards: int) -> dict[str, Any]:
    """Combine replica states shard by shard: the largest offset of each, the union of done.

    Offsets only grow within an epoch, and a shard is read by one replica at a time, so the
    largest offset is the latest; a shard done anywhere is done.
    """
    offsets: dict[int, int] = {}
    done: set[int] = set()
    for state in states:
        found, finished = _read(state, shards)
        done |= finished
        for number, offset in found.items():
            offsets[number] = max(offset, offsets.get(number, 0))
    return {
        "format": SHARDED_FORMAT,
        "shards": shards,
        "merged": True,
        "offsets": [[n, o] for n, o in sorted(offsets.items()) if n not in done],
        "done": sorted(done),
    }


class ShardedIterableDataset(IterableDataset[T_co]):
    """An IterableDataset of shards, read by (rank, worker), resumable on any world size.

    Subclasses pass the list of shards to ``__init__`` and implement :meth:`read_shard`. Each
    (rank, worker) pair reads the shards dealt to it by :func:`~stoker.data.get_shard_info`
    (shard ``n`` goes to the pair whose ``index`` is ``n % count``), in order, each from its
    offset. ``state_dict()`` is every shard's offset and the shards done; with the loader's
    ``state_dict()`` on every rank and :func:`stoker.data.merge_states`, a run resumes on any
    number of ranks and workers with every remaining sample exactly once.

    Args:
        shards: the shards, in order; each is handed to :meth:`read_shard`.
        rank: this process's rank, or None (as :func:`~stoker.data.get_shard_info` finds it,
            resolved now, in the main process, so spawned workers agree).
        world_size: the number of ranks, or None (likewise).
    """

    def __init__(
        self, shards: Sequence[Any], rank: int | None = None, world_size: int | None = None
    ) -> None:
        info = get_shard_info(rank, world_size)
        self.shards = list(shards)
        self.rank = info.rank
        self.world_size = info.world_size
        self._offsets: dict[int, int] = {}
        self._done: set[int] = set()
        self._num_workers = 1
        self._loaded: tuple[dict[int, int], set[int]] | None = None

    def read_shard(self, shard: Any, start: int) -> Iterator[T_co]:
        """Yield the samples of ``shard`` from its ``start``-th one (0 for the first).

        Args:
            shard: one of the shards given to ``__init__``.
            start: how many of its samples were read before (skip them).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement read_shard")

    def __iter__(self) -> Iterator[T_co]:
        """Read this (rank, worker) pair's shards from their offsets.

        A fresh pass unless a state was loaded.
        """
        info = get_shard_info(self.rank, self.world_size)
        loaded, self._loaded = self._loaded, None
        offsets, done = loaded if loaded is not None else ({}, set())
        self._offsets, self._done, self._num_workers = offsets, done, info.num_workers
        for number in range(info.index, len(self.shards), info.count):
            if number in done:
                continue
            start = offsets.get(number, 0)
            for sample in self.read_shard(self.shards[number], start):
                start += 1
                offsets[number] = start  # the position after this sample, before yielding it
                yield sample
            done.add(number)
            offsets.pop(number, None)

    def state_dict(self) -> dict[str, Any]:
        """Return every shard's offset known here, the shards done, and who read them."""
        return {
            "format": SHARDED_FORMAT,
            "shards": len(self.shards),
            "rank": self.rank,
            "world_size": self.world_size,
            "num_workers": self._num_workers,
            "offsets": [[n, o] for n, o in sorted(self._offsets.items())],
            "done": sorted(self._done),
        }

    def check_state(self, state: Any) -> None:
        """Raise a ValueError unless ``state`` loads here (see :meth:`load_state_dict`)."""
        _read(state, len(self.shards))
        if state.get("merged"):
            return
        for key in ("rank", "world_size"):
            if state[key] != getattr(self, key):
                raise ValueError(
                    f"state does not fit this dataset: {key} is {state[key]!r} in the state "
                    f"but {getattr(self, key)!r} here; a state of one rank resumes on the same "
                    "rank and world size only: merge every rank's loader state with "
                    "stoker.data.merge_states() and load the merged state on any world size"
                )

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume from a state: the next ``iter()`` reads each shard from its offset.

        A merged state (:func:`stoker.data.merge_states`) loads on any rank, world size and
        number of workers; one rank's state only where it was saved.

        Raises:
            ValueError: when the state is malformed, of other shards, or of another rank.
        """
        self.check_state(state)
        self._loaded = _read(state, len(self.shards))


@dataclass(frozen=True)
class ShardInfo:
    """Which share of an IterableDataset the calling (rank, worker) pair should yield.

    Attributes:
        index: this shard's number, ``rank * num_workers + worker_id``.
        count: the number of shards, ``world_size * num_workers``.
        rank: the process's rank.
        world_size: the number of ranks.
        worker_id: the loader worker's id (0 outside a worker).
        num_workers: the loader's number of workers (1 outside a worker).
    """

    index: int
    count: int
    rank: int
    world_size: int
    worker_id: int
    num_workers: int


def get_shard_info(rank: int | None = None, world_size: int | None = None) -> ShardInfo:
    """Return the calling (rank, worker) pair's shard, for ``IterableDataset.__iter__``.

    Yield every ``count``-th sample starting at ``index`` (e.g.
    ``itertools.islice(source, shard.index, None, shard.count)``) and, over all ranks and
    workers, every sample is yielded exactly once. ``rank``/``world_size`` default as in
    :class:`DistributedSampler`: an initialised ``torch.distributed`` process group (seen in
    worker processes only when they were forked), else the ``RANK``/``WORLD_SIZE`` environment
    variables (inherited by every worker), else a single process. Capture them in the main
    process (e.g. in the dataset's ``__init__``) and pass them here when the workers cannot
    see either.

    Args:
        rank: this process's rank, or None.
        world_size: the number of ranks, or None.

    Returns:
        The :class:`ShardInfo`.

    Raises:
        ValueError: when rank is outside ``[0, world_size)``.
    """
    found_rank, found_size = resolve_world(rank, world_size, hint=WORLD_HINT, check_order=False)
    world = 1 if found_size is None else found_size
    rank = 0 if found_rank is None else found_rank
    check_rank(rank, world)
    info = get_worker_info()
    worker_id, num_workers = (0, 1) if info is None else (info.id, info.num_workers)
    return ShardInfo(
        index=rank * num_workers + worker_id,
        count=world * num_workers,
        rank=rank,
        world_size=world,
        worker_id=worker_id,
        num_workers=num_workers,
    )
