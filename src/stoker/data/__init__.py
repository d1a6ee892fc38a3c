"""stoker.data: the torch.utils.data API, NumPy-first and torch-free.

Datasets, samplers, collation and a :class:`DataLoader` with worker processes. Code written for
``torch.utils.data`` runs after changing only the import.
"""

from stoker.data._collate import collate, default_collate, default_collate_fn_map, default_convert
from stoker.data._dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from stoker.data._distributed import DistributedSampler
from stoker.data._loader import DataLoader
from stoker.data._sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from stoker.data._worker import WorkerInfo, get_worker_info

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "WorkerInfo",
    "collate",
    "default_collate",
    "default_collate_fn_map",
    "default_convert",
    "get_worker_info",
    "random_split",
]
