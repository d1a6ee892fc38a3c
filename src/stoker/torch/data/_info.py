"""``get_worker_info`` for torch programs: stoker's workers answer, and so do torch's."""

from __future__ import annotations

from typing import Any

import torch.utils.data as torch_data

import stoker.data as stoker_data

__all__ = ["get_worker_info"]


def get_worker_info() -> Any:
    """Return the current worker's information, or None outside a DataLoader worker.

    In a worker of a stoker loader (process or thread) it is stoker's
    :class:`stoker.data.WorkerInfo` (``id``, ``num_workers``, ``seed``, ``dataset``, and
    ``rng`` in thread workers); in a worker of torch's own DataLoader it is torch's.

    Returns:
        The worker's information, or None in the main process.
    """
    info = stoker_data.get_worker_info()
    return info if info is not None else torch_data.get_worker_info()
