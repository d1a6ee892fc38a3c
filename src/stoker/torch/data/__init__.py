"""stoker.torch.data: ``torch.utils.data`` for torch programs, with stoker's loader behind it.

Every public name of ``torch.utils.data`` (torch 2.13) is here. :class:`DataLoader` and the
random, sequential and distributed samplers are stoker's and torch's at once (subclasses of
both: ``isinstance`` checks against torch's classes hold); the datasets, ``Sampler``,
``BatchSampler``, ``random_split``, ``default_collate``, ``default_convert`` and the datapipe
names are torch's own objects. Batches are torch's (tensors), and ``generator=None`` draws from
torch's global generator exactly as torch does, so a program seeded with ``torch.manual_seed``
gets the batches, worker seeds and random stream it gets from torch. stoker's additions:
thread workers (``worker_type="thread"``), ``state_dict()`` / ``load_state_dict()``,
``stats()``, :func:`sample_rng`, :func:`get_shard_info`, :class:`SharedMemoryFullError`,
:func:`merge_states` and :class:`ShardedIterableDataset` (elastic resume), the compact
containers (:func:`compact`, :class:`StringSequence`, :class:`BytesSequence`,
:class:`RecordSequence`), :class:`DatasetCopyWarning`, and :func:`patch_accelerate` (an
explicit patch that makes accelerate, and so Hugging Face's ``Trainer``, build its loaders on
stoker's engine).

A NumPy or JAX program imports :mod:`stoker.data` instead: the same loader, NumPy batches, and
no torch.
"""

import contextlib

from torch.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataChunk,
    Dataset,
    DFIterDataPipe,
    IterableDataset,
    IterDataPipe,
    MapDataPipe,
    Sampler,
    StackDataset,
    Subset,
    TensorDataset,
    argument_validation,
    default_collate,
    default_convert,
    functional_datapipe,
    guaranteed_datapipes_determinism,
    non_deterministic,
    random_split,
    runtime_validation,
    runtime_validation_disabled,
)

from stoker._public import fixup_module_metadata
from stoker.data import (
    BytesSequence,
    DatasetCopyWarning,
    RecordSequence,
    ShardedIterableDataset,
    ShardInfo,
    SharedMemoryFullError,
    StringSequence,
    WorkerInfo,
    compact,
    get_shard_info,
    merge_states,
    sample_rng,
)
from stoker.torch.data._info import get_worker_info
from stoker.torch.data._loader import DataLoader
from stoker.torch.data._samplers import (
    DistributedSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


def patch_accelerate() -> contextlib.AbstractContextManager[None]:
    """Make accelerate build its loaders on stoker's engine (an explicit, reversible patch).

    See :func:`stoker.torch.data._accelerate.patch_accelerate`, which this calls; that module is
    imported only here, when the patch is asked for.
    """
    from stoker.torch.data._accelerate import patch_accelerate as patch  # noqa: PLC0415

    return patch()


__all__ = [
    "BatchSampler",
    "BytesSequence",
    "ChainDataset",
    "ConcatDataset",
    "DFIterDataPipe",
    "DataChunk",
    "DataLoader",
    "Dataset",
    "DatasetCopyWarning",
    "DistributedSampler",
    "IterDataPipe",
    "IterableDataset",
    "MapDataPipe",
    "RandomSampler",
    "RecordSequence",
    "Sampler",
    "SequentialSampler",
    "ShardInfo",
    "ShardedIterableDataset",
    "SharedMemoryFullError",
    "StackDataset",
    "StringSequence",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "argument_validation",
    "compact",
    "default_collate",
    "default_convert",
    "functional_datapipe",
    "get_shard_info",
    "get_worker_info",
    "guaranteed_datapipes_determinism",
    "merge_states",
    "non_deterministic",
    "patch_accelerate",
    "random_split",
    "runtime_validation",
    "runtime_validation_disabled",
    "sample_rng",
]

fixup_module_metadata(__name__, globals())
