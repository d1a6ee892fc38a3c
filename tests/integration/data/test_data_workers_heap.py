"""Process workers keep one batch of freed heap for the next: their samples stop faulting.

A sample is a fresh 600 KB array (as a decoded, normalised image is); the dataset counts the
page faults its own allocation and fill take (its thread's ``ru_minflt``) and returns that
count as the label. With glibc's defaults each sample faults in all of its ~147 pages again,
batch after batch; with the worker's heap kept, the samples after the first batches reuse
pages.
"""

from __future__ import annotations

import multiprocessing
import resource
from typing import Any

import numpy as np
import pytest

import stoker.data as sd
from stoker.data._workers import heap

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(heap._mallopt() is None, reason="malloc here is not glibc's"),
]


# this thread's faults only: with thread workers the process's count would take in the other
# threads' faults that land while this sample is made (more of them on a loaded machine)
_WHO = getattr(resource, "RUSAGE_THREAD", resource.RUSAGE_SELF)


class _FreshImages:
    def __len__(self) -> int:
        return 64 * 12

    def __getitem__(self, index: int) -> tuple[Any, int]:
        before = resource.getrusage(_WHO).ru_minflt
        image = np.empty((3, 224, 224), dtype=np.float32)
        image.fill(index)
        return image, resource.getrusage(_WHO).ru_minflt - before


def _faults_after_warm_up(
    monkeypatch: pytest.MonkeyPatch, keep: str, worker_type: str = "process"
) -> float:
    monkeypatch.setenv(heap.ENV, keep)
    # spawn: each worker starts with glibc's malloc as a program does (a forked worker would
    # inherit whatever thresholds this long-lived test process's own allocations moved it to)
    loader = sd.DataLoader(
        _FreshImages(),
        batch_size=64,
        num_workers=2,
        multiprocessing_context="spawn" if worker_type == "process" else None,
        worker_type=worker_type,
    )
    faults = [batch[1].copy() for batch in loader]
    assert all(int(images[7, 0, 0, 0]) == 64 * i + 7 for i, (images, _) in enumerate(loader))
    return float(np.mean(np.concatenate(faults[4:])))


def _threads_in_a_child(keep: str, conn: Any) -> None:
    """Measure thread workers in a fresh process (spawned: malloc as a program starts it)."""
    monkeypatch = pytest.MonkeyPatch()
    heap._kept = 0
    try:
        conn.send((_faults_after_warm_up(monkeypatch, keep, "thread"), heap.kept()))
    finally:
        monkeypatch.undo()
        conn.close()


def test_kept_heap_stops_the_faults(monkeypatch: pytest.MonkeyPatch) -> None:
    kept = _faults_after_warm_up(monkeypatch, "1")
    default = _faults_after_warm_up(monkeypatch, "0")
    assert kept < 5, kept
    assert default > 50, default  # what it saves: glibc's defaults fault the pages again


def test_the_main_process_malloc_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_kept", 0)
    _faults_after_warm_up(monkeypatch, "1")
    assert heap.kept() == 0  # the workers tuned theirs, not this process's


def test_thread_workers_keep_the_heap_of_their_process() -> None:
    """Thread workers collating 38 MB batches tune their process's malloc unless told not to.

    Thread workers collating 38 MB batches tune the process they run in (the faults stay
    gone); with STOKER_DATA_KEEP_HEAP=0 the process's malloc is left alone. (Whether glibc's
    defaults fault here depends on the allocation pattern: this dataset's do not in threads,
    the JPEG pipeline's do, 148 faults a sample; see benchmarks/loader_bench.py --only jpeg.)
    """
    context = multiprocessing.get_context("spawn")
    results = {}
    for keep in ("1", "0"):
        reader, writer = context.Pipe(duplex=False)
        child = context.Process(target=_threads_in_a_child, args=(keep, writer))
        child.start()
        writer.close()
        results[keep] = reader.recv()
        child.join(60)
        assert child.exitcode == 0
    (kept_faults, kept_bytes), (_, default_bytes) = results["1"], results["0"]
    assert kept_faults < 5, kept_faults
    assert kept_bytes == 64 * (3 * 224 * 224 * 4 + 8)  # the images and the int64 labels
    assert default_bytes == 0
