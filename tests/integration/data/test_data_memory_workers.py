"""Workers' private memory in loader.stats(), and the one DatasetCopyWarning when copies grow."""

from __future__ import annotations

import gc
import os
import re
import time
import warnings
from typing import Any

import numpy as np
import pytest
from data_compact_helpers import Rows

import stoker.data as sd
from stoker.data import _memory

pytestmark = pytest.mark.slow

KEYS = (
    "worker_uss_start",
    "worker_uss",
    "worker_uss_growth",
    "worker_uss_growth_total",
    "worker_batch_memory",
)


def _records(n: int) -> list[dict[str, Any]]:
    return [{"id": i, "label": i % 7, "score": i / 4, "name": f"n{i}"} for i in range(n)]


def _epochs(
    data: Any, seconds: float, batch_size: int = 512, prefetch_factor: int = 2
) -> tuple[sd.DataLoader[Any], list[Any]]:
    """Read ``data`` with 2 persistent fork workers for ``seconds``; return loader and warnings.

    Read ``data`` with 2 persistent fork workers, epoch after epoch, for at least ``seconds``
    (memory is read at most once a second); return the loader and the warnings.
    """
    loader = sd.DataLoader(
        data if isinstance(data, _Images) else Rows(data),
        batch_size=batch_size,
        num_workers=2,
        prefetch_factor=prefetch_factor,
        multiprocessing_context="fork",
        persistent_workers=True,
    )
    deadline = time.monotonic() + seconds
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        while time.monotonic() < deadline:
            for batch in loader:
                del batch
    return loader, caught


def test_stats_report_each_process_workers_private_memory() -> None:
    """Process workers: USS at the first batch, now, and the growth (now minus start), by id."""
    loader, _ = _epochs(list(range(20_000)), 0.01)
    stats = loader.stats()
    loader.close()
    assert set(stats["worker_uss_start"]) == {0, 1}
    for worker_id in (0, 1):
        start, now = stats["worker_uss_start"][worker_id], stats["worker_uss"][worker_id]
        assert 0 < start <= 2**30
        assert stats["worker_uss_growth"][worker_id] == now - start
    assert stats["worker_uss_growth_total"] == sum(stats["worker_uss_growth"].values())


def test_the_first_batch_waits_on_no_memory_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first batch reaches the caller before any worker's memory is read.

    The first batch reaches the caller before any worker's memory is read; the reading for
    each worker's first batch is taken at the next batch (or when stats are asked for).
    """
    reads: list[int] = []
    real = _memory.private_bytes
    monkeypatch.setattr(_memory, "private_bytes", lambda pid: reads.append(pid) or real(pid))
    loader = sd.DataLoader(list(range(40)), batch_size=4, num_workers=2)
    batches = iter(loader)
    next(batches)
    assert reads == []
    next(batches)
    assert len(reads) == 1  # worker 0's first reading, one batch later
    rest = list(batches)
    assert len(rest) == 8
    stats = loader.stats()
    assert set(stats["worker_uss_start"]) == {0, 1}
    assert all(size is not None and size > 0 for size in stats["worker_uss_start"].values())


@pytest.mark.parametrize(
    "kwargs", [{"num_workers": 0}, {"num_workers": 2, "worker_type": "thread"}]
)
def test_stats_without_process_workers_report_nothing(kwargs: dict[str, Any]) -> None:
    """In-process loading and thread workers have no worker process to measure."""
    loader = sd.DataLoader(list(range(100)), batch_size=10, **kwargs)
    assert len(list(loader)) == 10
    stats = loader.stats()
    assert [stats[key] for key in KEYS] == [{}, {}, {}, None, {}]


def test_one_warning_names_the_cause_and_the_fixes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fork workers reading a plain list of dicts past a lowered threshold give one warning.

    Fork workers reading a plain list of dicts grow past a lowered threshold: one warning,
    from the loop's line, naming copy-on-write, the containers and thread workers.
    """
    monkeypatch.setenv(_memory.WARN_ENV, "8")
    loader, caught = _epochs(_records(200_000), 2.5)
    loader.close()
    copies = [w for w in caught if issubclass(w.category, sd.DatasetCopyWarning)]
    assert len(copies) == 1, [str(w.message) for w in caught]
    text = str(copies[0].message)
    for words in (
        "copy-on-write",
        "reference count",
        "stoker.data.compact",
        "RecordSequence",
        "worker_type='thread'",
        "STOKER_DATA_COPY_WARN_MIB=0",
    ):
        assert words in text
    assert copies[0].filename == __file__
    assert issubclass(sd.DatasetCopyWarning, UserWarning)
    assert loader.stats()["worker_uss_growth_total"] > 8 * 2**20


def test_containers_do_not_warn(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same records in a RecordSequence stay under the same threshold: no warning."""
    monkeypatch.setenv(_memory.WARN_ENV, "8")
    loader, caught = _epochs(sd.RecordSequence(_records(200_000)), 2.5)
    loader.close()
    # only the copy warning counts: the record is process-wide, and a ResourceWarning the
    # collector raises for something an earlier test leaked may land in it
    assert [w for w in caught if issubclass(w.category, sd.DatasetCopyWarning)] == []
    assert loader.stats()["worker_uss_growth_total"] < 8 * 2**20


def test_without_proc_figures_are_none_and_it_never_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where /proc cannot be read, every figure is None and no warning comes."""
    monkeypatch.setenv(_memory.WARN_ENV, "1")
    monkeypatch.setattr(_memory, "private_bytes", lambda pid: None)
    loader, caught = _epochs(_records(50_000), 1.5)
    loader.close()
    assert [w for w in caught if issubclass(w.category, sd.DatasetCopyWarning)] == []
    stats = loader.stats()
    assert stats["worker_uss_start"] == {0: None, 1: None}
    assert stats["worker_uss_growth_total"] is None


def test_bad_threshold_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A threshold that is not a number of MiB raises ValueError naming the variable."""
    monkeypatch.setenv(_memory.WARN_ENV, "lots")
    loader = sd.DataLoader(list(range(10)), num_workers=1, multiprocessing_context="fork")
    with pytest.raises(ValueError, match="STOKER_DATA_COPY_WARN_MIB must be an int, got 'lots'"):
        list(loader)


class _Images:
    """Sample i: a fresh float32 array of ``rows`` x 1024 and, with ``records``, a sum of labels.

    Sample i: a fresh float32 array of ``rows`` x 1024 (1 MiB at 256 rows) and, with
    ``records``, the sum of the labels of the 256 records from 256i on, which the worker reads
    (so it copies their pages).
    """

    def __init__(
        self, n: int, records: list[dict[str, Any]] | None = None, rows: int = 256
    ) -> None:
        self.n = n
        self.records = records
        self.rows = rows

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> Any:
        image = np.full((self.rows, 1024), index, dtype=np.float32)
        if self.records is None:
            return image
        start = index * 256 % len(self.records)
        return image, sum(record["label"] for record in self.records[start : start + 256])


def _large_epochs(data: Any, seconds: float) -> tuple[sd.DataLoader[Any], list[Any]]:
    """Batches of 16 samples through slabs, 2 fork workers 4 batches ahead, for ``seconds``."""
    return _epochs(data, seconds, batch_size=16, prefetch_factor=4)


def test_batch_slabs_are_not_counted_as_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Large batches 4 ahead grow the workers' USS past the threshold without a warning.

    Large batches 4 ahead: the workers' USS grows by their slabs (private to them where the
    main process holds none of their pages) and kept heap, past the threshold, with nothing
    copied; the loader reports that batch memory and does not warn.
    """
    monkeypatch.setenv(_memory.WARN_ENV, "24")
    loader, caught = _large_epochs(_Images(512), 2.5)
    stats = loader.stats()
    loader.close()
    assert [w for w in caught if issubclass(w.category, sd.DatasetCopyWarning)] == []
    assert stats["worker_uss_growth_total"] > 24 * 2**20  # it would have warned
    for worker_id in (0, 1):
        serving = stats["worker_batch_memory"][worker_id]
        assert 5 * 16 * 2**20 <= serving <= 12 * 16 * 2**20  # 16 MiB slabs: 4 ahead, 2 more
        assert stats["worker_uss_growth"][worker_id] <= serving


def test_copies_next_to_large_batches_still_warn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Copies beyond the batch memory of 4 MiB slab batches give the one warning, with the amount.

    Batches of 4 MiB in slabs with samples that read a plain list of 300,000 dicts: the
    copies grow beyond the batch memory and the one warning comes, saying how much that was.
    """
    monkeypatch.setenv(_memory.WARN_ENV, "24")
    loader, caught = _large_epochs(_Images(4096, _records(300_000), rows=64), 3.0)
    loader.close()
    copies = [w for w in caught if issubclass(w.category, sd.DatasetCopyWarning)]
    assert len(copies) == 1, [str(w.message) for w in caught]
    assert re.search(r"worker 0 \+[\d,]+ MiB, batch memory [\d,]+ MiB", str(copies[0].message))


class _OwnMemory:
    """Sample i: the worker's private bytes right after a full collection in it."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index: int) -> np.ndarray:
        gc.collect()
        return np.array([_memory.private_bytes(os.getpid()) or 0])


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_a_full_collection_in_a_worker_copies_none_of_the_main_process_objects(
    context: str,
) -> None:
    """A full collection in a worker copies none of the main process's objects.

    The main process holds a million gc-tracked lists the workers never read; a full
    collection in a fork worker would write the header of each (about 70 MiB of copied
    pages) unless the objects it started with are frozen.
    """
    held = [[i] for i in range(1_000_000)]
    loader = sd.DataLoader(
        _OwnMemory(), batch_size=1, num_workers=2, multiprocessing_context=context
    )
    private = [int(batch[0][0]) for batch in loader]
    del held
    assert len(private) == 4
    assert max(private) < 30 * 2**20, [f"{size / 2**20:.0f} MiB" for size in private]
