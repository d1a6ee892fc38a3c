"""torch's datapipes through stoker.torch.data: shuffled, seeded and sharded as torch's loader does.

A datapipe that shuffles and then shards (``shuffle().sharding_filter()``) is what torch's own
test_dataloader.py runs through its loader: every worker must shuffle alike (one seed per epoch,
shared) and keep its own shard, or samples repeat and go missing. Each test runs the same graph
through torch's DataLoader and the door, seeded alike, and compares the batches.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.utils.data as torch_data
from torch.utils.data.datapipes.iter import IterableWrapper

import stoker.torch.data as door

pytestmark = [
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:`shuffle=True` was set:UserWarning"),
]
SAMPLES = 40


def _shuffled_shards() -> Any:
    return IterableWrapper(range(SAMPLES)).shuffle(buffer_size=16).sharding_filter()


def _epochs(loader_class: Any, seeds: list[int], **kwargs: Any) -> list[list[int]]:
    """One epoch per seed, ``torch.manual_seed(seed)`` before each, of one loader."""
    loader = loader_class(_shuffled_shards(), batch_size=4, shuffle=True, **kwargs)
    epochs = []
    for seed in seeds:
        torch.manual_seed(seed)
        epochs.append([int(value) for batch in loader for value in batch])
    return epochs


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({}, id="in-process"),
        pytest.param({"num_workers": 2}, id="workers"),
        pytest.param({"num_workers": 2, "persistent_workers": True}, id="persistent"),
    ],
)
def test_a_shuffled_sharded_datapipe_gives_torchs_batches_each_epoch(
    kwargs: dict[str, Any],
) -> None:
    """With shuffle=True, epochs are seeded permutations whose batches equal torch's loader's.

    With shuffle=True, each epoch is a permutation of the samples (every worker shuffles
    alike and keeps its shard), the same seed gives the same epoch, and the batches equal torch's
    loader's for the same seeds, persistent workers reseeded every epoch included.
    """
    seeds = [123, 123, 321]
    ours = _epochs(door.DataLoader, seeds, **kwargs)
    theirs = _epochs(torch_data.DataLoader, seeds, **kwargs)
    assert ours == theirs
    assert all(sorted(epoch) == list(range(SAMPLES)) for epoch in ours)
    assert ours[0] == ours[1]
    assert ours[0] != ours[2]


@pytest.mark.parametrize("shuffle", [False, None])
def test_shuffle_false_or_unset_leaves_the_datapipe_as_torch_does(shuffle: bool | None) -> None:
    """shuffle=False switches the graph's shuffler off; unset leaves it on; both as in torch.

    shuffle=False switches the graph's shuffler off (each worker's shard in order: worker 0
    the even samples, worker 1 the odd ones, a batch of 4 from each in turn); unset leaves it
    as built (on). Both as torch's loader gives them, each sample once.
    """

    def run(loader_class: Any) -> list[int]:
        torch.manual_seed(7)
        loader = loader_class(_shuffled_shards(), batch_size=4, shuffle=shuffle, num_workers=2)
        return [int(value) for batch in loader for value in batch]

    ours = run(door.DataLoader)
    assert ours == run(torch_data.DataLoader)
    assert sorted(ours) == list(range(SAMPLES))
    assert (ours[:8] == [0, 2, 4, 6, 1, 3, 5, 7]) == (shuffle is False)


def test_the_loader_keeps_the_datapipe_in_torchs_serialization_wrapper() -> None:
    """As torch's loader does, ``loader.dataset`` is the datapipe inside torch's wrapper.

    As torch's loader does, ``loader.dataset`` is the datapipe inside torch's wrapper, which
    is an IterDataPipe too (and pickles lambdas with dill when plain pickle fails).
    """
    datapipe = _shuffled_shards()
    ours = door.DataLoader(datapipe, shuffle=True).dataset
    theirs = torch_data.DataLoader(datapipe, shuffle=True).dataset
    assert type(ours) is type(theirs)
    assert isinstance(ours, torch_data.IterDataPipe)
    assert ours._datapipe is datapipe
