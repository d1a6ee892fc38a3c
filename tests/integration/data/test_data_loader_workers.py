"""DataLoader with process workers where test_data_loader.py uses thread workers.

torch's default_collate as ``collate_fn``, run in two worker processes: torch's tensors, made
by stoker's collation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from stoker.data import DataLoader, Dataset, get_worker_info


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


@pytest.mark.parametrize("worker_type", ["process"])
def test_torchs_default_collate_gives_torchs_batches_through_stokers_collation(
    worker_type: str,
) -> None:
    """collate_fn=torch's default_collate gives torch's tensors, made by stoker's collation.

    collate_fn=torch's default_collate: tensors of torch's dtypes, equal to torch's own
    collation, made by stoker's collation (the function torch's map would call is not run);
    torch's default_convert without batching; a torch map a user extended is honoured.
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
