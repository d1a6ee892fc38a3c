"""The door's samplers: stoker's samplers that are torch's samplers too.

Each class here derives from the stoker sampler first (its iteration, its epochs drawn exactly
as torch draws them, its ``state_dict()`` and offset resume, its fast batching) and from torch's
class of the same name second, so ``isinstance(sampler, torch.utils.data.RandomSampler)`` holds:
trainers that ask whether ``loader.sampler`` shuffles (PyTorch Lightning, before it injects a
``DistributedSampler``) get torch's answer. None of torch's methods runs: stoker's come first in
the method order and torch's ``__init__`` is not called.
"""

from __future__ import annotations

from typing import TypeVar

import torch.utils.data as torch_data

import stoker.data as stoker_data

__all__ = [
    "DistributedSampler",
    "RandomSampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]

T_co = TypeVar("T_co", covariant=True)


class RandomSampler(stoker_data.RandomSampler, torch_data.RandomSampler):
    """stoker's :class:`stoker.data.RandomSampler`, and a ``torch.utils.data.RandomSampler``.

    With ``generator=None`` each epoch draws one seed from torch's global generator and
    permutes with a generator seeded by it, exactly as torch's does.
    """


class SequentialSampler(stoker_data.SequentialSampler, torch_data.SequentialSampler):
    """stoker's :class:`stoker.data.SequentialSampler`, and torch's ``SequentialSampler``."""


class SubsetRandomSampler(stoker_data.SubsetRandomSampler, torch_data.SubsetRandomSampler):
    """stoker's :class:`stoker.data.SubsetRandomSampler`, and torch's ``SubsetRandomSampler``.

    With ``generator=None`` each epoch permutes with torch's global generator, as torch's does.
    """


# weights is a NumPy array here, a tensor in torch's class: mypy sees the two definitions clash
class WeightedRandomSampler(  # type: ignore[misc]
    stoker_data.WeightedRandomSampler, torch_data.WeightedRandomSampler
):
    """stoker's :class:`stoker.data.WeightedRandomSampler`, and torch's.

    ``weights`` is a float64 NumPy array (torch's holds a float64 tensor); the draws are
    ``torch.multinomial``'s, from torch's global generator when ``generator=None``.
    """


class DistributedSampler(stoker_data.DistributedSampler[T_co], torch_data.DistributedSampler[T_co]):
    """stoker's :class:`stoker.data.DistributedSampler`, and torch's ``DistributedSampler``."""
