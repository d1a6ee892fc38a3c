"""keep_heap: the malloc settings it makes, when it makes them, and where it does nothing."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from stoker.data._workers import heap


class _Mallopt:
    """Stands for glibc's mallopt: records (param, value) and answers ``result``."""

    def __init__(self, result: int = 1) -> None:
        self.calls: list[tuple[int, int]] = []
        self.result = result

    def __call__(self, param: int, value: int) -> int:
        self.calls.append((param, value))
        return self.result


@pytest.fixture
def mallopt(monkeypatch: pytest.MonkeyPatch) -> _Mallopt:
    fake = _Mallopt()
    monkeypatch.setattr(heap, "_kept", 0)
    monkeypatch.setattr(heap, "_mallopt", lambda: fake)
    monkeypatch.delenv(heap.ENV, raising=False)
    return fake


def test_sets_the_mmap_threshold_top_pad_and_trim_threshold(mallopt: _Mallopt) -> None:
    assert heap.keep_heap(40 << 20) == 40 << 20
    assert mallopt.calls == [(-3, 32 << 20), (-2, 40 << 20), (-1, 80 << 20)]
    assert heap.kept() == 40 << 20


def test_only_ever_raises(mallopt: _Mallopt) -> None:
    heap.keep_heap(40 << 20)
    assert heap.keep_heap(10 << 20) == 40 << 20
    assert heap.keep_heap(40 << 20) == 40 << 20
    assert len(mallopt.calls) == 3
    assert heap.keep_heap(50 << 20) == 50 << 20
    assert mallopt.calls[-2:] == [(-2, 50 << 20), (-1, 100 << 20)]


def test_keeps_at_most_max_keep(mallopt: _Mallopt) -> None:
    assert heap.keep_heap(10 << 30) == heap.MAX_KEEP
    assert mallopt.calls[-1] == (-1, 2 * heap.MAX_KEEP)


@pytest.mark.parametrize("size", [0, -5])
def test_nothing_to_keep_changes_nothing(mallopt: _Mallopt, size: int) -> None:
    assert heap.keep_heap(size) == 0
    assert mallopt.calls == []


def test_turned_off_by_the_environment(mallopt: _Mallopt, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(heap.ENV, "0")
    assert not heap.enabled()
    assert heap.keep_heap(40 << 20) == 0
    assert mallopt.calls == []


def test_a_refused_setting_keeps_nothing(mallopt: _Mallopt) -> None:
    mallopt.result = 0
    assert heap.keep_heap(40 << 20) == 0
    assert mallopt.calls == [(-3, 32 << 20)]
    assert heap.kept() == 0


def test_without_glibc_it_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "_kept", 0)
    monkeypatch.setattr(heap.sys, "platform", "darwin")
    assert heap._mallopt() is None
    assert heap.keep_heap(40 << 20) == 0


def _glibc() -> bool:
    try:
        return sys.platform.startswith("linux") and bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError):
        return False


@pytest.mark.skipif(not _glibc(), reason="malloc here is not glibc's")
def test_finds_glibc_mallopt_here() -> None:
    """On a glibc Linux the real function is found and callable."""
    found: Any = heap._mallopt()
    assert found is not None
    assert callable(found)
