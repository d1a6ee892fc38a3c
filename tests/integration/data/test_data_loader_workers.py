"""DataLoader with process workers where test_data_loader.py uses thread workers.

torch's default_collate as ``collate_fn``, run in two worker processes: torch's tensors, made
by stoker's collation.
"""

from __future__ import annotations

import pytest
from data_fakes import check_torchs_default_collate_through_stokers_collation


@pytest.mark.parametrize("worker_type", ["process"])
def test_torchs_default_collate_gives_torchs_batches_through_stokers_collation(
    worker_type: str,
) -> None:
    """collate_fn=torch's default_collate gives torch's tensors, made by stoker's collation."""
    check_torchs_default_collate_through_stokers_collation(worker_type)
