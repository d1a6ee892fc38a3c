"""Tests for worker-error records: capture in a worker, pickling, rebuilding the original type."""

from __future__ import annotations

import pickle
import sys
import types
from typing import Any

import pytest

from stoker.data._errors import WorkerFailure, mark_index


class LocalError(Exception):
    """Only reachable through a test module, which a worker may not import."""


def test_worker_failure_rebuilds_the_original_type_and_pickles() -> None:
    """The record pickles, rebuilds the same type with the text, and keeps its attributes."""
    try:
        raise IndexError("index 7 is out of range")
    except IndexError as err:
        mark_index(err, 7)
        failure = WorkerFailure.capture(err, 3, where="", batch_index=[6, 7])
    copy = pickle.loads(pickle.dumps(failure))
    exc: Any = copy.build()
    assert type(exc) is IndexError
    assert str(exc).startswith("index 7 is out of range")
    assert "DataLoader worker 3" in str(exc)
    assert "while fetching dataset index 7 (batch indices [6, 7])" in str(exc)
    assert (exc.worker_id, exc.dataset_index) == (3, 7)
    assert "raise IndexError" in exc.worker_traceback


def test_worker_failure_falls_back_to_runtime_error() -> None:
    """A type that cannot be found again in the main process becomes a RuntimeError."""
    failure = WorkerFailure("no.such.module", "Gone", "went away", 0, 1, "in worker_init_fn")
    with pytest.raises(RuntimeError, match=r"no\.such\.module\.Gone .*went away"):
        failure.reraise()


def test_mark_index_keeps_the_first_mark() -> None:
    """An outer fetch does not overwrite the index an inner fetch recorded."""
    err = ValueError("x")
    mark_index(err, 1)
    mark_index(err, 2)
    assert getattr(err, "_stoker_dataset_index", None) == 1


def test_worker_failure_finds_types_of_a_spawned_main_script(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A type from a spawn worker's __mp_main__ is looked up in the main process's __main__."""
    main = types.ModuleType("__main__")
    main.LocalError = LocalError  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "__main__", main)
    failure = WorkerFailure("__mp_main__", "LocalError", "boom", 1, 2, "")
    with pytest.raises(LocalError, match="boom"):
        failure.reraise()
