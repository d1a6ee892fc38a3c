"""Datasets and comparisons for the torch door's tests, importable by spawn and forkserver workers.

:func:`assert_same_batch` compares a batch from ``stoker.torch.data`` with torch's for the same
samples: the same container types all the way down, and tensors equal in dtype, shape and
values. The datasets return the sample kinds torch programs use: ``(tensor, int)`` as in
pytorch/examples' mnist, NumPy arrays (``np.load``, ``np.asarray(image)``), dicts with strings,
namedtuples, NumPy scalars, Python floats and bools. Each records the worker's seeds, so that
the tests compare them with torch's too.
"""

from __future__ import annotations

import collections
import random
from typing import Any

import numpy as np
import torch
import torch.utils.data as torch_data

Point = collections.namedtuple("Point", ["x", "y"])

SAMPLE_KINDS = ["tensor_int", "numpy", "dict", "namedtuple", "scalars", "nested"]


def _seeds() -> list[float]:
    """One draw from each generator a worker seeds: random, NumPy's legacy global, torch."""
    return [random.random(), float(np.random.rand()), float(torch.rand(()))]


class Samples(torch_data.Dataset[Any]):
    """``length`` samples of one kind (see :data:`SAMPLE_KINDS`)."""

    def __init__(self, kind: str, length: int = 10, size: int = 3) -> None:
        self.kind = kind
        self.length = length
        self.size = size

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Any:
        kind = self.kind
        if kind == "tensor_int":
            return torch.full((1, self.size, self.size), float(index)), index % 10
        if kind == "numpy":
            image = np.arange(self.size * self.size, dtype=np.uint8).reshape(self.size, -1)
            return image + index, np.float32(index) / 2
        if kind == "dict":
            return {"x": np.full(self.size, index, np.int16), "name": f"s{index}", "ok": True}
        if kind == "namedtuple":
            return Point(torch.tensor([index, -index]), float(index))
        if kind == "scalars":
            return np.int32(index), np.float64(index) / 3, np.bool_(index % 2), index * 1.5
        return [{"a": (index, [np.float16(index)])}, b"raw", _seeds()]


def assert_same_batch(ours: Any, theirs: Any, where: str = "batch") -> None:
    """Assert that two batches have the same structure, types, dtypes, shapes and values."""
    assert type(ours) is type(theirs), f"{where}: {type(ours)} != {type(theirs)}"
    if isinstance(theirs, torch.Tensor):
        assert ours.dtype == theirs.dtype, f"{where}: dtype {ours.dtype} != {theirs.dtype}"
        assert ours.shape == theirs.shape, f"{where}: shape {ours.shape} != {theirs.shape}"
        assert torch.equal(ours, theirs), f"{where}: {ours} != {theirs}"
    elif isinstance(theirs, dict):
        assert list(ours) == list(theirs), f"{where}: keys"
        for key in theirs:
            assert_same_batch(ours[key], theirs[key], f"{where}[{key!r}]")
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs), f"{where}: length"
        for position, (mine, other) in enumerate(zip(ours, theirs, strict=True)):
            assert_same_batch(mine, other, f"{where}[{position}]")
    else:
        assert ours == theirs, f"{where}: {ours!r} != {theirs!r}"


class SeedRecorder(torch_data.Dataset[Any]):
    """Sample ``i`` is ``i``, the worker seed and the worker's draws (unless ``draws=False``).

    Sample ``i`` is ``(i, worker seed, random, NumPy and torch draws in the worker)``; the
    draws are left out with ``draws=False`` (thread workers share the process's generators).
    """

    def __init__(self, length: int = 12, draws: bool = True) -> None:
        self.length = length
        self.draws = draws

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Any:
        info = torch_data.get_worker_info()
        if info is None:
            from stoker.data import get_worker_info

            info = get_worker_info()
        seed = -1 if info is None else info.seed
        return (index, seed, _seeds()) if self.draws else (index, seed)


def batches_as_lists(loader: Any) -> list[Any]:
    """Every batch of one epoch, tensors as nested lists (comparable across loaders)."""
    return [_plain(batch) for batch in loader]


def _plain(batch: Any) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.tolist()
    if isinstance(batch, dict):
        return {key: _plain(value) for key, value in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [_plain(value) for value in batch]
    return batch


class TensorHolder(torch_data.Dataset[Any]):
    """A dataset holding a tensor: sample ``i`` is row ``i`` of it (2 floats)."""

    def __init__(self, length: int = 12) -> None:
        self.rows = torch.arange(2 * length, dtype=torch.float32).reshape(length, 2)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> Any:
        return self.rows[index]


class Counted(torch_data.Dataset[int]):
    """Counts its fetches in a multiprocessing Value, under a Lock, both of the loader's context."""

    def __init__(self, context: Any, length: int = 12) -> None:
        self.length = length
        self.count = context.Value("i", 0)
        self.lock = context.Lock()

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> int:
        with self.lock:
            self.count.value += 1
        return index


class Troubled(torch_data.Dataset[int]):
    """Index 2 raises ValueError, exits the process (``exit``) or sleeps 30 s (``sleep``)."""

    def __init__(self, trouble: str) -> None:
        self.trouble = trouble

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> int:
        if index == 2:
            if self.trouble == "raise":
                raise ValueError("index 2 is bad")
            if self.trouble == "exit":
                import os

                os._exit(3)
            import time

            time.sleep(30)
        return index
