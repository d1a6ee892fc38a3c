"""Elastic resume through the torch door: stoker.torch.data's loader and DistributedSampler."""

from __future__ import annotations

import pytest

import stoker.data as stoker_data

torch = pytest.importorskip("torch")
door = pytest.importorskip("stoker.torch.data")


def _loader(world: int, rank: int) -> object:
    data = door.TensorDataset(torch.arange(21))
    sampler = door.DistributedSampler(data, num_replicas=world, rank=rank, seed=1)
    return door.DataLoader(data, batch_size=2, sampler=sampler)


def test_door_states_merge_and_resume_on_another_world() -> None:
    """3 door ranks take 2 batches; merged, 2 door ranks finish: every sample once but padding."""
    seen, states = [], []
    for rank in range(3):
        loader = _loader(3, rank)
        batches = iter(loader)
        for _ in range(2):
            (batch,) = next(batches)
            assert isinstance(batch, torch.Tensor)
            seen += batch.tolist()
        states.append(loader.state_dict())
    merged = door.merge_states(states)
    for rank in range(2):
        loader = _loader(2, rank)
        loader.load_state_dict(merged)
        seen += [x for (batch,) in loader for x in batch.tolist()]
    assert sorted(set(seen)) == list(range(21))
    assert len(seen) == 22, "9 left after 12 taken, padded to 10 over 2 ranks"
    assert door.merge_states is stoker_data.merge_states, "one merge for both doors"
