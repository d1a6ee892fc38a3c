"""Process workers keep one batch of freed heap for the next: their samples stop faulting.

A sample is a fresh 600 KB array (as a decoded, normalised image is); the dataset counts the
page faults its own allocation and fill take (``ru_minflt``) and returns that count as the
label. With glibc's defaults each sample faults in all of its ~147 pages again, batch after
batch; with the worker's heap kept, the samples after the first batches reuse pages.
"""

from __future__ import annotations

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


class _FreshImages:
    def __len__(self) -> int:
        return 64 * 12

    def __getitem__(self, index: int) -> tuple[Any, int]:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        image = np.empty((3, 224, 224), dtype=np.float32)
        image.fill(index)
        return image, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def _faults_after_warm_up(monkeypatch: pytest.MonkeyPatch, keep: str) -> float:
    monkeypatch.setenv(heap.ENV, keep)
    loader = sd.DataLoader(
        _FreshImages(), batch_size=64, num_workers=2, multiprocessing_context="fork"
    )
    faults = [batch[1].copy() for batch in loader]
    assert all(int(images[7, 0, 0, 0]) == 64 * i + 7 for i, (images, _) in enumerate(loader))
    return float(np.mean(np.concatenate(faults[4:])))


def test_kept_heap_stops_the_faults(monkeypatch: pytest.MonkeyPatch) -> None:
    kept = _faults_after_warm_up(monkeypatch, "1")
    default = _faults_after_warm_up(monkeypatch, "0")
    assert kept < 5, kept
    assert default > 50, default  # what it saves: glibc's defaults fault the pages again


def test_the_main_process_malloc_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_kept", 0)
    _faults_after_warm_up(monkeypatch, "1")
    assert heap.kept() == 0
