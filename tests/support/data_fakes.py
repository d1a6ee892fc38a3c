"""Small datasets for the one-process tests of the fetch path, the worker loop and the loader.

:class:`Squares` is the loader tests' dataset; the ``check_*`` function is a loader test body
run with thread workers by the unit tests and with process workers by the integration tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from stoker.data import DataLoader, Dataset, IterableDataset, Sampler, get_worker_info


class Numbers(Dataset[int]):
    """Sample i is 10 * i; index ``bad`` raises ValueError."""

    def __init__(self, n: int, bad: int = -1) -> None:
        self.n = n
        self.bad = bad

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        if index == self.bad:
            raise ValueError(f"bad index {index}")
        return 10 * index


class Counting(IterableDataset[int]):
    """Yields 0..n-1 and counts how often iteration started."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.started = 0

    def __iter__(self) -> Iterator[int]:
        self.started += 1
        return iter(range(self.n))


class Restarting(Sampler[Any]):
    """An iterator that is its own iterable: ``iter()`` restarts it and is counted.

    An iterator that is its own iterable: ``iter()`` restarts it at ``items[0]`` and is
    counted in ``iter_calls`` (litdata's StreamingDataset is written so). Usable as a sampler,
    a batch sampler or an iterable of samples.
    """

    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.iter_calls = 0
        self._position = 0

    def __iter__(self) -> Restarting:
        self.iter_calls += 1
        self._position = 0
        return self

    def __next__(self) -> Any:
        if self._position >= len(self.items):
            raise StopIteration
        self._position += 1
        return self.items[self._position - 1]

    def __len__(self) -> int:
        return len(self.items)


class Squares(Dataset[Any]):
    """Sample i is (i * i as a float vector of width 2, i); records get_worker_info()."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.infos: list[Any] = []

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[np.ndarray[Any, Any], int]:
        if not 0 <= index < self.n:
            raise IndexError(index)
        self.infos.append(get_worker_info())
        return np.full(2, index * index, dtype=np.float32), index


def check_torchs_default_collate_through_stokers_collation(worker_type: str) -> None:
    """collate_fn=torch's default_collate gives torch's tensors, made by stoker's collation.

    collate_fn=torch's default_collate: tensors of torch's dtypes, equal to torch's own
    collation, made by stoker's collation (the function torch's map would call is not run);
    torch's default_convert without batching; a torch map a user extended is honoured. Skips
    without torch.
    """
    torch = pytest.importorskip("torch")
    import torch.utils.data as torch_data
    from torch.utils.data._utils import collate as torch_collate

    loader = DataLoader(
        Squares(6),
        batch_size=3,
        collate_fn=torch_data.default_collate,
        num_workers=2,
        worker_type=worker_type,
    )
    batches = list(loader)
    expected = [torch_data.default_collate([Squares(6)[i] for i in (0, 1, 2)])]
    assert isinstance(batches[0][0], torch.Tensor)
    assert batches[0][0].dtype == expected[0][0].dtype == torch.float32
    assert torch.equal(batches[0][0], expected[0][0])
    assert torch.equal(batches[0][1], expected[0][1])
    (first, label), *_ = DataLoader(
        Squares(2), batch_size=None, collate_fn=torch_data.default_convert
    )
    assert isinstance(first, torch.Tensor)
    assert label == 0

    class Marked(float):
        """A float torch's collate map is told about."""

    extended = {**torch_collate.default_collate_fn_map, Marked: lambda batch, **_: "marked"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch_collate, "default_collate_fn_map", extended)
        (batch,) = DataLoader([Marked(1.0)], collate_fn=torch_data.default_collate)
    assert batch == "marked"
