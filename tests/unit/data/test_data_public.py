"""stoker.data's public names show their public path: in reprs, tracebacks and pickles."""

from __future__ import annotations

import pickle
import traceback

import numpy as np

import stoker.data
from stoker.data import DataLoader, SharedMemoryFullError, TensorDataset


def test_every_public_class_and_function_names_stoker_data() -> None:
    """Each name in __all__ that has a module says stoker.data, and so do a class's methods."""
    wrong = [
        name
        for name in stoker.data.__all__
        if callable(getattr(stoker.data, name))
        and getattr(stoker.data, name).__module__ != "stoker.data"
    ]
    assert wrong == []
    assert repr(DataLoader) == "<class 'stoker.data.DataLoader'>"
    assert DataLoader.__iter__.__module__ == "stoker.data"
    assert DataLoader.__iter__.__qualname__ == "DataLoader.__iter__"


def test_tracebacks_and_pickles_use_the_public_path() -> None:
    """A public exception prints as stoker.data.X; a pickled dataset refers to stoker.data."""
    line = traceback.format_exception_only(SharedMemoryFullError("full"))[-1]
    assert line == "stoker.data.SharedMemoryFullError: full\n"
    data = pickle.dumps(TensorDataset(np.arange(4)))
    assert b"stoker.data" in data
    assert b"_dataset" not in data
    assert isinstance(pickle.loads(data), TensorDataset)


def test_shared_memory_full_error_is_public_and_documented() -> None:
    """SharedMemoryFullError is exported, is a RuntimeError, and says when it comes and the fix."""
    assert "SharedMemoryFullError" in stoker.data.__all__
    assert issubclass(SharedMemoryFullError, RuntimeError)
    doc = SharedMemoryFullError.__doc__ or ""
    assert "/dev/shm" in doc
    assert "--shm-size" in doc
    assert 'worker_type="thread"' in doc
