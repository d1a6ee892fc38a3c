"""Compact containers in real workers: no copies, shared memory, exact reads, no segment left.

Compact containers in real workers: no copy in forked workers, shared memory for spawned ones,
both loaders (stoker's and torch's) read them exactly, and no segment is left when a process dies.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import time
from multiprocessing.reduction import ForkingPickler
from typing import Any

import pytest
import torch.utils.data as td
from data_compact_helpers import (
    KillAt,
    ReadAll,
    Rows,
    as_list,
    echo_lists,
    names_of,
    numbered_texts,
    owned_names,
    put_temporaries,
    read_when_told,
)
from data_workers_helpers import SUPPORT

import stoker.data as sd
from stoker.data._workers.shm import process_alive

pytestmark = pytest.mark.slow

N = 300_000


def _texts(n: int = N) -> list[str]:
    return [f"record number {i} of the copy-on-write test" for i in range(n)]


def _records(n: int) -> list[dict[str, Any]]:
    return [{"id": i, "label": i % 7, "score": i / 4, "name": f"n{i}"} for i in range(n)]


def _growth(items: Any, method: str) -> list[int]:
    """USS growth of each of 2 workers while it reads every item of ``items``."""
    loader = sd.DataLoader(
        ReadAll(items, length=2), batch_size=None, num_workers=2, multiprocessing_context=method
    )
    rows = list(loader)
    assert [count for _, _, count in rows] == [len(items)] * 2
    return [after - before for before, after, _ in rows]


def test_forked_workers_do_not_copy_a_container_but_copy_a_list() -> None:
    """Reading strings in a fork worker copies a list's pages but almost none of a StringSequence's.

    Reading every str of a list copies most of its pages into a fork worker; reading the same
    strings from a StringSequence copies almost nothing.
    """
    texts = _texts()
    seq = sd.StringSequence(texts)
    list_bytes = sum(sys.getsizeof(text) for text in texts)
    for grown in _growth(texts, "fork"):
        assert grown > 0.5 * list_bytes
    for grown in _growth(seq, "fork"):
        assert grown < 0.1 * seq.nbytes, (grown, seq.nbytes)


def test_spawn_workers_map_the_container_without_a_copy() -> None:
    """A container's pickle names its segment; spawn workers share it; the name goes with it.

    A multiprocessing pickle names a segment (not the bytes); a spawn worker reading every
    item adds little private memory; the name goes when the container is freed.
    """
    seq = sd.StringSequence(_texts())
    blob = ForkingPickler.dumps(seq)
    assert len(blob) < 4096 < seq.nbytes
    assert pickle.loads(blob) == seq  # reading it takes the pickle's ticket
    for grown in _growth(seq, "spawn"):
        assert grown < 0.1 * seq.nbytes, (grown, seq.nbytes)
    assert len(owned_names(os.getpid())) == 1
    del seq
    gc.collect()
    assert names_of(os.getpid()) == []


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
@pytest.mark.parametrize("loader_class", [sd.DataLoader, td.DataLoader], ids=["stoker", "torch"])
def test_loaders_read_every_record_exactly(method: str, loader_class: Any) -> None:
    """Stoker's and torch's loaders read a RecordSequence and a StringSequence exactly.

    Stoker's and torch's loaders, with each start method, read a RecordSequence and a
    StringSequence: every sample once, equal to the original.
    """
    records = _records(2000)
    data = sd.RecordSequence(records)
    loader = loader_class(
        Rows(data), batch_size=None, shuffle=True, num_workers=2, multiprocessing_context=method
    )
    got = sorted(loader, key=lambda record: int(record["id"]))
    assert got == records
    texts = _texts(500)
    loader = loader_class(
        Rows(sd.compact(texts)), batch_size=None, num_workers=2, multiprocessing_context=method
    )
    assert list(loader) == texts
    del data, loader
    gc.collect()
    assert names_of(os.getpid()) == []


def test_no_segment_left_after_a_worker_is_killed() -> None:
    """A spawn worker SIGKILLed while reading a container: the loader raises, no segment is left.

    A spawn worker SIGKILLed while reading a container: the loader raises, no worker segment
    is left, and the container's own name goes with the container.
    """
    seq = sd.StringSequence(_texts(5000))
    loader = sd.DataLoader(
        KillAt(seq, at=1234), batch_size=100, num_workers=2, multiprocessing_context="spawn"
    )
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(loader)
    assert names_of(os.getpid()) == owned_names(os.getpid())
    del seq, loader
    gc.collect()
    assert names_of(os.getpid()) == []


_MAIN_SCRIPT = """
import os, sys, time
sys.path.insert(0, {support!r})
import stoker.data as sd
from data_compact_helpers import Rows
if __name__ == "__main__":
    seq = sd.StringSequence([f"item {{i}}" for i in range(10000)])
    loader = sd.DataLoader(Rows(seq, pause=60), batch_size=None, num_workers=2,
                           multiprocessing_context="spawn")
    iterator = iter(loader)
    time.sleep(3)
    print(os.getpid(), flush=True)
    time.sleep(120)
"""


def test_no_segment_left_when_the_main_process_is_killed() -> None:
    """Main process SIGKILLed while spawn workers hold its container: the workers unlink its names.

    Main process SIGKILLed while its spawn workers hold its container: the workers find it
    gone and unlink its names, so none is left after a few seconds.
    """
    script = _MAIN_SCRIPT.format(support=SUPPORT)
    with subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True
    ) as main:
        assert main.stdout is not None
        pid = int(main.stdout.readline())
        assert owned_names(pid)
        os.kill(pid, signal.SIGKILL)
        main.wait(timeout=10)
    deadline = time.monotonic() + 15
    while names_of(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert names_of(pid) == []


METHODS = ["fork", "spawn"]


@pytest.mark.parametrize("method", METHODS)
def test_temporaries_put_on_a_queue_are_read(method: str) -> None:
    """Containers put on a queue with no reference kept reach the reader whole; no name is left.

    Containers put on a multiprocessing queue with no reference kept (pickled later, by the
    queue's feeder thread) reach the reader whole, each time; no name is left afterwards.
    """
    context = multiprocessing.get_context(method)
    inbox, outbox = context.Queue(), context.Queue()
    reader = context.Process(target=echo_lists, args=(inbox, outbox, 3))
    reader.start()
    for number in range(3):
        inbox.put(sd.compact(numbered_texts(1000, f"round {number}")))
        gc.collect()
        assert outbox.get(timeout=60) == numbered_texts(1000, f"round {number}")
    reader.join(30)
    assert reader.exitcode == 0
    assert names_of(os.getpid()) == []


@pytest.mark.parametrize("method", METHODS)
def test_a_queue_is_read_after_its_writer_exited(method: str) -> None:
    """Temporaries a child put before exiting are read whole by the parent; no name is left.

    A child puts temporaries and exits; the parent reads them afterwards, all whole, and no
    name of the child's is left.
    """
    context = multiprocessing.get_context(method)
    outbox = context.Queue()
    writer = context.Process(target=put_temporaries, args=(outbox, 3))
    writer.start()
    writer.join(60)
    assert writer.exitcode == 0
    for number in range(3):
        assert list(outbox.get(timeout=30)) == numbered_texts(1000, f"temporary {number}")
    gc.collect()
    assert names_of(os.getpid()) == []
    assert names_of(writer.pid) == []


@pytest.mark.parametrize("method", METHODS)
def test_pool_apply_async_with_a_temporary(method: str) -> None:
    """Three Pool.apply_async calls of containers before any result: the worker reads each whole.

    Pool.apply_async(f, (compact(texts),)) three times before any result is taken: the pool's
    worker reads each container whole, though the pool drops each task once it sent the next.
    """
    with multiprocessing.get_context(method).Pool(1) as pool:
        tasks = [numbered_texts(1000, f"task {number}") for number in range(3)]
        results = [pool.apply_async(as_list, (sd.compact(texts),)) for texts in tasks]
        gc.collect()
        assert [result.get(timeout=30) for result in results] == tasks
        pool.close()
        pool.join()
    gc.collect()
    assert names_of(os.getpid()) == []


@pytest.mark.parametrize("method", METHODS)
def test_receiver_reads_after_the_sender_freed_the_container(method: str) -> None:
    """A container freed by its sender after pickling into a pipe still reaches the receiver whole.

    The sender pickles a container into a pipe, frees it and collects garbage (its own name
    is gone); the receiver, told only then to read, still gets every item.
    """
    context = multiprocessing.get_context(method)
    receiving, sending = context.Pipe(duplex=False)
    go, outbox = context.Event(), context.Queue()
    reader = context.Process(target=read_when_told, args=(receiving, go, outbox))
    reader.start()
    texts = numbered_texts(1000, "freed")
    seq = sd.compact(texts)
    sending.send(seq)
    primary = owned_names(os.getpid())
    del seq
    gc.collect()
    assert len(primary) == 2  # the container's own name and the pickle's ticket
    assert len(owned_names(os.getpid())) == 1  # the container's name went with it
    go.set()
    assert outbox.get(timeout=60) == texts
    reader.join(30)
    assert names_of(os.getpid()) == []


_SENDER_SCRIPT = """
import os, sys, time
sys.path.insert(0, {support!r})
import multiprocessing
import stoker.data as sd
from data_compact_helpers import numbered_texts, read_after_parent_dies
if __name__ == "__main__":
    context = multiprocessing.get_context({method!r})
    inbox = context.Queue()
    reader = context.Process(target=read_after_parent_dies, args=(inbox, ["kept", "temporary"]))
    reader.start()
    kept = sd.compact(numbered_texts(1000, "kept"))
    inbox.put(kept)
    inbox.put(sd.compact(numbered_texts(1000, "temporary")))
    inbox.close()
    inbox.join_thread()  # both pickles are made and in the pipe
    print(os.getpid(), reader.pid, flush=True)
    time.sleep(120)
"""


def _wait_gone(pid: int) -> None:
    deadline = time.monotonic() + 30
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not process_alive(pid)


@pytest.mark.parametrize("method", METHODS)
def test_no_segment_left_after_the_sender_is_killed(method: str) -> None:
    """A sender SIGKILLed with containers held and in flight: its child reads both; no name is left.

    The sender is SIGKILLed holding one container and with another in flight; its child reads
    both afterwards, whole, and once every process has ended no name of theirs is left.
    """
    script = _SENDER_SCRIPT.format(support=SUPPORT, method=method)
    with subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True
    ) as sender:
        assert sender.stdout is not None
        pid, reader = map(int, sender.stdout.readline().split())
        assert owned_names(pid)
        os.kill(pid, signal.SIGKILL)
        sender.wait(timeout=10)
        assert sender.stdout.readline().strip() == "ok"
    _wait_gone(reader)
    assert names_of(pid) == []
    assert names_of(reader) == []


_RECEIVER_SCRIPT = """
import os, signal, sys
sys.path.insert(0, {support!r})
import multiprocessing
import stoker.data as sd
from data_compact_helpers import numbered_texts, read_one_then_hang
if __name__ == "__main__":
    context = multiprocessing.get_context({method!r})
    inbox, outbox = context.Queue(), context.Queue()
    reader = context.Process(target=read_one_then_hang, args=(inbox, outbox))
    reader.start()
    inbox.put(sd.compact(numbered_texts(1000, "read")))
    got = outbox.get(timeout=60)
    inbox.put(sd.compact(numbered_texts(1000, "never read")))
    inbox.close()
    inbox.join_thread()  # the second pickle is made, and will never be read
    os.kill(reader.pid, signal.SIGKILL)
    reader.join(10)
    print(os.getpid(), reader.pid, got == numbered_texts(1000, "read"), flush=True)
"""


@pytest.mark.parametrize("method", METHODS)
def test_no_segment_left_after_the_receiver_is_killed(method: str) -> None:
    """A receiver SIGKILLed with a container unread: after the sender exits no name is left.

    The receiver is SIGKILLed after reading one container, with another unread in its queue;
    the sender then exits, and no name of either is left.
    """
    script = _RECEIVER_SCRIPT.format(support=SUPPORT, method=method)
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        stdout=subprocess.PIPE,
        text=True,
        timeout=100,
    )
    pid, reader, read = done.stdout.split()
    assert (done.returncode, read) == (0, "True")
    assert names_of(int(pid)) == []
    assert names_of(int(reader)) == []
