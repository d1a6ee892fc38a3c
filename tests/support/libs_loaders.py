"""The loaders the library tests compare: torch's own and stoker's doors, by worker setting.

A *door* names a DataLoader class: ``"torch"`` (``torch.utils.data``, the reference),
``"stoker.data"`` (NumPy-first) and ``"stoker.torch.data"`` (the torch door). A *setting* is
``(num_workers, worker_type)``: no workers, two processes, two threads (stoker only: torch has no
thread workers). :data:`RUNS` lists the stoker runs, each checked against torch's run with the
same number of workers.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

DOORS = {
    "torch": "torch.utils.data",
    "stoker.data": "stoker.data",
    "stoker.torch.data": "stoker.torch.data",
}
SETTINGS = {"0": (0, None), "2-process": (2, "process"), "2-thread": (2, "thread")}


def _runs() -> list[Any]:
    runs = []
    for door in ("stoker.data", "stoker.torch.data"):
        runs.extend(pytest.param(door, setting, id=f"{door}-{setting}") for setting in SETTINGS)
    return runs


RUNS = _runs()
"""``(door, setting)`` pytest params: every stoker door with every setting."""

TORCH_SETTINGS = ["0", "2-process"]
"""The settings torch's own loader has."""


def loader_class(door: str) -> Any:
    """The DataLoader class behind ``door``."""
    return importlib.import_module(DOORS[door]).DataLoader


def make_loader(door: str, setting: str, dataset: Any, **kwargs: Any) -> Any:
    """A DataLoader of ``door`` over ``dataset`` with the workers of ``setting``."""
    num_workers, worker_type = SETTINGS[setting]
    if worker_type is not None and door != "torch":
        kwargs["worker_type"] = worker_type
    if num_workers:
        kwargs.setdefault("timeout", 60)
    return loader_class(door)(dataset, num_workers=num_workers, **kwargs)


def torch_setting(setting: str) -> str:
    """Torch's setting with the same number of workers (threads compare with processes)."""
    return "2-process" if SETTINGS[setting][0] else "0"
