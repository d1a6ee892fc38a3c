"""SharedArrays: multiprocessing pickles a segment name, the owner alone unlinks it."""

from __future__ import annotations

import gc
import os
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
from data_compact_helpers import owned_names

from stoker.data import RecordSequence, StringSequence
from stoker.data._workers.shared_arrays import SharedArrays, serves_every_process


def test_multiprocessing_pickle_names_one_segment_and_maps_it_read_only() -> None:
    """The first ForkingPickler pickle moves the arrays into one owned segment; unpickling maps
    it read-only with equal arrays; pickling again sends the same name."""
    arrays = [np.arange(100_000, dtype=np.int64), np.linspace(0, 1, 7), np.array([True, False])]
    shared = SharedArrays(arrays)
    blob = ForkingPickler.dumps(shared)
    assert len(blob) < 1024 < shared.nbytes
    names = owned_names(os.getpid())
    assert len(names) == 1
    attached = pickle.loads(blob)
    for got, want in zip(attached.arrays, arrays, strict=True):
        assert got.dtype == want.dtype
        assert np.array_equal(got, want)
        assert not got.flags.writeable
    assert len(ForkingPickler.dumps(attached)) == len(blob)
    assert owned_names(os.getpid()) == names
    del shared, attached
    gc.collect()
    assert owned_names(os.getpid()) == []


def test_owner_keeps_equal_data_after_sharing() -> None:
    """After its arrays move into shared memory, the owner's container reads the same items."""
    records = [{"a": i, "s": str(i)} for i in range(1000)]
    seq = RecordSequence(records)
    ForkingPickler.dumps(seq)
    assert list(seq) == records
    assert len(owned_names(os.getpid())) == 2  # the numeric columns and the str column
    del seq
    gc.collect()
    assert owned_names(os.getpid()) == []


def test_a_forked_child_freeing_its_copy_leaves_the_name() -> None:
    """Only the owner process unlinks: a forked child that frees the container leaves it."""
    seq = StringSequence(["x"] * 100)
    ForkingPickler.dumps(seq)
    pid = os.fork()
    if pid == 0:
        del seq
        gc.collect()
        os._exit(0)
    os.waitpid(pid, 0)
    assert len(owned_names(os.getpid())) == 1
    del seq
    gc.collect()
    assert owned_names(os.getpid()) == []


def test_compact_containers_serve_every_process() -> None:
    """The pool may pickle a setup holding containers once for all its workers."""
    assert serves_every_process(StringSequence)
    assert serves_every_process(RecordSequence)
    assert serves_every_process(SharedArrays)
    assert not serves_every_process(list)
