"""SharedArrays: a pickle is a ticket read once, and only the owner unlinks the name.

SharedArrays: a multiprocessing pickle is a ticket for one segment, read once whatever the
sender does; the owner alone unlinks its name; a changed pickle is a clear error. Across
processes (a forked child, an owner exiting): test_data_workers_shared_arrays_processes.py.
"""

from __future__ import annotations

import gc
import os
import pickle
import threading
from multiprocessing.reduction import ForkingPickler
from typing import Any

import numpy as np
import pytest
from data_compact_helpers import names_of, owned_names

from stoker.data import RecordSequence, StringSequence
from stoker.data._workers.shared_arrays import (
    SharedArrays,
    serves_every_process,
    tickets_dropped_on_error,
)
from stoker.data._workers.shm import SHM_DIR, segment_name


def _arrays() -> list[np.ndarray]:
    return [np.arange(100_000, dtype=np.int64), np.linspace(0, 1, 7), np.array([True, False])]


def test_multiprocessing_pickle_is_a_ticket_for_one_segment_mapped_read_only() -> None:
    """Pickling moves the arrays into one owned segment with a ticket; unpickling maps it.

    The first ForkingPickler pickle moves the arrays into one owned segment and makes a
    ticket (a second name for it); unpickling maps it read-only with equal arrays and takes the
    ticket; a pickle of the received copy makes a new ticket for the same segment.
    """
    arrays = _arrays()
    shared = SharedArrays(arrays)
    blob = ForkingPickler.dumps(shared)
    assert len(blob) < 1024 < shared.nbytes
    assert len(owned_names(os.getpid())) == 2
    attached = pickle.loads(blob)
    owned = owned_names(os.getpid())
    assert len(owned) == 1
    for got, want in zip(attached.arrays, arrays, strict=True):
        assert got.dtype == want.dtype
        assert np.array_equal(got, want)
        assert not got.flags.writeable
    again = pickle.loads(ForkingPickler.dumps(attached))
    assert all(np.array_equal(a, b) for a, b in zip(again.arrays, arrays, strict=True))
    assert owned_names(os.getpid()) == owned
    del shared, attached, again
    gc.collect()
    assert owned_names(os.getpid()) == []


def test_owner_keeps_equal_data_after_sharing() -> None:
    """After its arrays move into shared memory, the owner's container reads the same items."""
    records = [{"a": i, "s": str(i)} for i in range(1000)]
    seq = RecordSequence(records)
    assert pickle.loads(ForkingPickler.dumps(seq)) == seq
    assert list(seq) == records
    assert len(owned_names(os.getpid())) == 2  # the numeric columns and the str column
    del seq
    gc.collect()
    assert owned_names(os.getpid()) == []


def test_a_pickle_is_read_once_after_the_container_is_freed() -> None:
    """Freeing the container removes its own name but not the pickle's ticket.

    Freeing the container removes its own name but not the pickle's ticket: the pickle is
    still read whole, once; a second read, with the container gone, is a clear error.
    """
    texts = [f"item {i}" for i in range(1000)]
    seq = StringSequence(texts)
    blob = ForkingPickler.dumps(seq)
    del seq
    gc.collect()
    assert len(owned_names(os.getpid())) == 1  # the ticket
    got = pickle.loads(blob)
    assert list(got) == texts
    assert names_of(os.getpid()) == []
    with pytest.raises(RuntimeError, match=r"must exist to read this pickle.*pickle\.dumps"):
        pickle.loads(blob)
    again = pickle.loads(ForkingPickler.dumps(got))  # sent on: copied into a segment of its own
    assert list(again) == texts
    del got, again
    gc.collect()
    assert names_of(os.getpid()) == []


def test_a_pickle_read_again_maps_the_live_container() -> None:
    """One pickle read by several processes serves all while the sender holds the container.

    One pickle read by several processes (the pool's setup) serves all while the sender
    holds the container: the first read takes the ticket, the others map the owned name.
    """
    seq = StringSequence(["a", "b", "c"])
    blob = ForkingPickler.dumps(seq)
    assert [list(pickle.loads(blob)) for _ in range(3)] == [["a", "b", "c"]] * 3
    assert len(owned_names(os.getpid())) == 1
    del seq
    gc.collect()
    assert owned_names(os.getpid()) == []


def test_a_pickle_given_up_half_way_leaves_no_ticket() -> None:
    """tickets_dropped_on_error unlinks the tickets of a pickle that failed after them."""
    seq = StringSequence(["a"])
    with pytest.raises(TypeError, match="pickle"), tickets_dropped_on_error():
        ForkingPickler.dumps([seq, threading.Lock(), seq.take([0])])
    assert len(owned_names(os.getpid())) == 1  # seq's own name; its ticket went
    del seq
    gc.collect()
    assert owned_names(os.getpid()) == []


def test_compact_containers_serve_every_process() -> None:
    """The pool may pickle a setup holding containers once for all its workers."""
    assert serves_every_process(StringSequence)
    assert serves_every_process(RecordSequence)
    assert serves_every_process(SharedArrays)
    assert not serves_every_process(list)


# -- a changed pickle ------------------------------------------------------------------------


def _handle(shared: SharedArrays) -> Any:
    """The handle one multiprocessing pickle of ``shared`` carries (with its own ticket)."""
    return shared.ticket()


def _no_names_left() -> None:
    gc.collect()
    assert names_of(os.getpid()) == []


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("name", "../../etc/passwd", "handle name must be a segment name"),
        ("name", "stoker-data-1-1-1/../../x", "handle name must be a segment name"),
        ("ticket", "/etc/passwd", "handle ticket must be a segment name"),
        ("ticket", None, "handle ticket must be a segment name"),
        ("size", -1, "handle size must be an int of at least 64"),
        ("size", "big", "handle size must be an int"),
        ("token", b"short", "handle token must be 16 bytes"),
        ("layout", ((64, "<i8", 10**9),), "layout entry must be"),
        ("layout", ((0, "<i8", 1),), "layout entry must be"),
        ("layout", ((64, "|O", 1),), "layout entry must be"),
        ("layout", ((64, "no dtype", 1),), "layout entry must be"),
        ("layout", ((64,),), "layout entry must be"),
    ],
)
def test_a_changed_handle_is_a_value_error(field: str, value: Any, match: str) -> None:
    """A bad handle raises ValueError naming the field and leaves the ticket in place.

    A handle with a name that is not a segment's, a bad size or token, or a layout outside
    the segment raises ValueError naming the field, and leaves the ticket in place.
    """
    shared = SharedArrays(_arrays())
    handle = _handle(shared)
    with pytest.raises(ValueError, match=match):
        SharedArrays.attach(handle._replace(**{field: value}))
    assert os.path.exists(os.path.join(SHM_DIR, handle.ticket))
    SharedArrays.attach(handle)  # takes the ticket
    del shared
    _no_names_left()


def test_a_handle_naming_another_segment_is_refused() -> None:
    """A handle renamed to another process's segment raises RuntimeError and unlinks nothing.

    A handle whose names were changed to another process's segment (of the right size)
    raises RuntimeError and unlinks nothing.
    """
    shared = SharedArrays(_arrays())
    handle = _handle(shared)
    other = SharedArrays(_arrays())
    theirs = _handle(other)
    with pytest.raises(RuntimeError, match="must be the one this pickle was made for"):
        SharedArrays.attach(handle._replace(name=theirs.name, ticket=theirs.ticket))
    assert os.path.exists(os.path.join(SHM_DIR, theirs.ticket))
    assert os.path.exists(os.path.join(SHM_DIR, theirs.name))
    SharedArrays.attach(handle)
    SharedArrays.attach(theirs)
    del other, shared
    _no_names_left()


def test_a_truncated_segment_is_refused() -> None:
    """A segment cut shorter than the layout raises RuntimeError before any array is read."""
    shared = SharedArrays(_arrays())
    handle = _handle(shared)
    os.truncate(os.path.join(SHM_DIR, handle.ticket), 100)  # the same file as the owned name
    with pytest.raises(RuntimeError, match=rf"must hold at least {handle.size} bytes, got 100"):
        SharedArrays.attach(handle)
    os.unlink(os.path.join(SHM_DIR, handle.ticket))
    del shared
    _no_names_left()


def test_a_missing_name_in_a_live_process_is_refused() -> None:
    """Names that parse but do not exist: the error says what is gone and how to send again."""
    shared = SharedArrays(_arrays())
    handle = _handle(shared)
    pid = os.getpid()
    gone = handle._replace(name=segment_name(pid, pid, 10**12), ticket="")
    with pytest.raises(RuntimeError, match=r"segment 'stoker-data-\d+-\d+-1000000000000' must"):
        SharedArrays.attach(gone)
    SharedArrays.attach(handle)
    del shared
    _no_names_left()
