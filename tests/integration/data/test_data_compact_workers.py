"""Compact containers in real workers: no copy in forked workers, shared memory for spawned ones,
both loaders (stoker's and torch's) read them exactly, and no segment is left when a process dies.
"""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import time
from multiprocessing.reduction import ForkingPickler
from typing import Any

import pytest
import torch.utils.data as td
from data_compact_helpers import KillAt, ReadAll, Rows, names_of, owned_names
from data_workers_helpers import SUPPORT

import stoker.data as sd

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
    """Reading every str of a list copies most of its pages into a fork worker; reading the same
    strings from a StringSequence copies almost nothing."""
    texts = _texts()
    seq = sd.StringSequence(texts)
    list_bytes = sum(sys.getsizeof(text) for text in texts)
    for grown in _growth(texts, "fork"):
        assert grown > 0.5 * list_bytes
    for grown in _growth(seq, "fork"):
        assert grown < 0.1 * seq.nbytes, (grown, seq.nbytes)


def test_spawn_workers_map_the_container_without_a_copy() -> None:
    """A multiprocessing pickle names a segment (not the bytes); a spawn worker reading every
    item adds little private memory; the name goes when the container is freed."""
    seq = sd.StringSequence(_texts())
    assert len(ForkingPickler.dumps(seq)) < 4096 < seq.nbytes
    for grown in _growth(seq, "spawn"):
        assert grown < 0.1 * seq.nbytes, (grown, seq.nbytes)
    assert len(owned_names(os.getpid())) == 1
    del seq
    gc.collect()
    assert names_of(os.getpid()) == []


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
@pytest.mark.parametrize("loader_class", [sd.DataLoader, td.DataLoader], ids=["stoker", "torch"])
def test_loaders_read_every_record_exactly(method: str, loader_class: Any) -> None:
    """stoker's and torch's loaders, with each start method, read a RecordSequence and a
    StringSequence: every sample once, equal to the original."""
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
    """A spawn worker SIGKILLed while reading a container: the loader raises, no worker segment
    is left, and the container's own name goes with the container."""
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
    """Main process SIGKILLed while its spawn workers hold its container: the workers find it
    gone and unlink its names, so none is left after a few seconds."""
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
