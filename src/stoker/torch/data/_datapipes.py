"""torch's datapipes in the door's DataLoader: wrapped, shuffled, seeded and sharded as torch does.

torch's DataLoader treats ``IterDataPipe`` and ``MapDataPipe`` datasets in four ways, and the
door does the same through stoker's dataset adapter (:class:`DataPipes`):

* the loader keeps the datapipe inside torch's serialization wrapper, which pickles the graph
  with ``dill`` when plain pickle fails (lambdas), so it reaches spawn and forkserver workers;
* for an ``IterDataPipe``, ``shuffle`` switches the graph's shufflers on or off
  (``graph_settings.apply_shuffle_settings``) instead of being refused; as in torch, this acts on
  the datapipe as given (the shuffler torch offers to add when there is none is not kept);
* each epoch of an ``IterDataPipe`` draws one seed from the loader's generator, shared by every
  copy (``apply_random_seed``), so that all workers shuffle alike and their shards do not overlap;
* every copy keeps its shard: ``apply_sharding`` over ``num_workers * world_size`` copies in a
  worker, over ``world_size`` without workers.

Each epoch's setup (:class:`DataPipeEpoch`) travels to the workers with their setup, and each
later epoch's seed with the engine's reset, so persistent workers reseed every epoch as torch's
do.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
import torch.distributed as dist
import torch.utils.data as torch_data
from torch.utils.data import graph_settings
from torch.utils.data.datapipes.datapipe import (
    _IterDataPipeSerializationWrapper,
    _MapDataPipeSerializationWrapper,
)

__all__ = ["DataPipeEpoch", "DataPipes"]


def _distributed_settings() -> tuple[int, int]:
    """``(world_size, rank)`` of an initialised process group, else ``(1, 0)``, as torch asks."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size(), dist.get_rank()
    return 1, 0


class DataPipeEpoch(NamedTuple):
    """Makes a copy of a datapipe ready for an epoch: its shuffle seed and its shard.

    Attributes:
        seeded: the datapipe is an ``IterDataPipe``: each epoch draws a shared seed.
        world_size: the distributed world size when the iteration started.
        rank: this process's rank then.
    """

    seeded: bool
    world_size: int
    rank: int

    def prepare(self, dataset: Any, shared_seed: int | None, copy_id: int, copies: int) -> Any:
        """Seed and shard ``dataset`` as torch's loader does; return it.

        Seed the graph's random datapipes with ``shared_seed`` (an ``IterDataPipe``), then
        give copy ``copy_id`` of ``copies`` its shard.
        """
        if self.seeded and shared_seed is not None:
            shared_rng = torch.Generator()
            shared_rng.manual_seed(shared_seed)
            dataset = graph_settings.apply_random_seed(dataset, shared_rng)
        graph_settings.apply_sharding(
            dataset, copies * self.world_size, copy_id * self.world_size + self.rank
        )
        return dataset


class DataPipes:
    """The door's dataset adapter: torch's datapipes as torch's DataLoader takes them."""

    def adopt(self, dataset: Any, shuffle: bool | None) -> tuple[Any, bool | None]:
        """Wrap a datapipe for pickling; other datasets are kept as they are.

        An ``IterDataPipe``'s shuffle setting goes to its graph (``shuffle`` is then used up).
        """
        if isinstance(dataset, torch_data.IterDataPipe):
            graph_settings.apply_shuffle_settings(dataset, shuffle=shuffle)
            return _IterDataPipeSerializationWrapper(dataset), None  # type: ignore[no-untyped-call]
        if isinstance(dataset, torch_data.MapDataPipe):
            return _MapDataPipeSerializationWrapper(dataset), shuffle  # type: ignore[no-untyped-call]
        return dataset, shuffle

    def epoch_setup(self, dataset: Any) -> DataPipeEpoch | None:
        """The epoch setup of a (wrapped) datapipe, with the distributed settings of now."""
        if not isinstance(dataset, (torch_data.IterDataPipe, torch_data.MapDataPipe)):
            return None
        world_size, rank = _distributed_settings()
        return DataPipeEpoch(isinstance(dataset, torch_data.IterDataPipe), world_size, rank)
