"""stoker.data: the torch.utils.data API, NumPy-first and torch-free.

Datasets, samplers, collation and a :class:`DataLoader` with worker processes or threads. Code
written for ``torch.utils.data`` runs after changing only the import. Compact containers
(:func:`compact`, :class:`StringSequence`, :class:`BytesSequence`, :class:`RecordSequence`) hold
millions of records in a few NumPy buffers that workers share without copying.
"""

from stoker._public import fixup_module_metadata
from stoker.data._collate import collate, default_collate, default_collate_fn_map, default_convert
from stoker.data._containers.compact import BytesSequence, StringSequence
from stoker.data._containers.records import RecordSequence, compact
from stoker.data._dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
)
from stoker.data._loader import DataLoader
from stoker.data._memory import DatasetCopyWarning
from stoker.data._resume.merge import merge_states
from stoker.data._sample_rng import sample_rng
from stoker.data._samplers.base import BatchSampler, Sampler, SequentialSampler
from stoker.data._samplers.distributed import DistributedSampler
from stoker.data._samplers.shuffled import RandomSampler, SubsetRandomSampler, WeightedRandomSampler
from stoker.data._sharded import ShardedIterableDataset, ShardInfo, get_shard_info
from stoker.data._split import random_split
from stoker.data._workers import SharedMemoryFullError, WorkerInfo, get_worker_info

__all__ = [
    "BatchSampler",
    "BytesSequence",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DatasetCopyWarning",
    "DistributedSampler",
    "IterableDataset",
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
    "collate",
    "compact",
    "default_collate",
    "default_collate_fn_map",
    "default_convert",
    "get_shard_info",
    "get_worker_info",
    "merge_states",
    "random_split",
    "sample_rng",
]

fixup_module_metadata(__name__, globals())
