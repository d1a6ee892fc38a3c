"""Reading many runs on several cores: each run is read whole by one worker process.

A log directory of a sweep holds hundreds of runs; reading one is Python work over its files
(see ``run.py``), so the runs are dealt to forked worker processes and each worker sends back
its runs' columns as it finishes them (the same :class:`RunData` objects, pickled: NumPy and
``array`` columns travel as their bytes). The parent keeps no more than the columns it returns
plus the runs in flight. Warnings a worker raises (damaged records) are raised again in the
parent, in the order of the runs; an error (an unreadable file) is raised in the parent too.

Workers are forked: the parent's modules and the runs' state are there without pickling or
importing anything again. A process with other threads running may hold locks a fork would
copy in their held state, so such a process reads its runs itself, one after the other.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import warnings
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

from stoker._system import usable_cpu_count
from stoker.tensorboard._read.run import RunData
from stoker.tensorboard._remote import is_url

__all__ = ["PARALLEL_MIN_BYTES", "load_runs", "pending_bytes", "worker_count"]

PARALLEL_MIN_BYTES = 32 << 20
"""Bytes to read, over at least two runs, from which runs are read by worker processes.

Below it a worker's start (a fork, a few milliseconds) and the columns' trip back cost more
than the second core saves.
"""
_MAX_WORKERS = 8
_RUNS_PER_TASK = 4

Caught = list[tuple[type[Warning], str]]


def worker_count(workers: int | None, runs: list[RunData]) -> int:
    """How many processes read ``runs``: ``workers``, or for ``None`` one per core (at most
    eight) when they hold :data:`PARALLEL_MIN_BYTES` or more, else 1."""
    forkable = "fork" in multiprocessing.get_all_start_methods()
    if len(runs) < 2 or threading.active_count() > 1 or not forkable:
        return 1
    if any(is_url(path) for run in runs for path in run.files):
        return 1  # a store's client (fsspec) may hold threads and sockets: not forked
    if workers is not None:
        return min(workers, len(runs))
    if pending_bytes(runs) < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(usable_cpu_count() or 1, _MAX_WORKERS, len(runs)))


def pending_bytes(runs: list[RunData]) -> int:
    """Bytes of the runs' local files after where they were left (0 for a file gone)."""
    total = 0
    for run in runs:
        for path, reader in run.files.items():
            try:
                total += max(0, os.stat(path).st_size - reader.position.offset)
            except OSError:
                continue
    return total


def _load(runs: list[RunData]) -> list[tuple[RunData, int, Caught]]:
    """Read runs in a worker; return each with its record count and the warnings it raised."""
    out = []
    for run in runs:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            count = run.load()
        out.append((run, count, [(item.category, str(item.message)) for item in caught]))
    return out


def load_runs(runs: list[RunData], workers: int) -> Iterator[tuple[RunData, int]]:
    """Read every run, in ``workers`` processes; yield each loaded run and its record count
    in the order given, re-raising its warnings first."""
    if workers <= 1:
        for run in runs:
            yield run, run.load()
        return
    tasks = [runs[i : i + _RUNS_PER_TASK] for i in range(0, len(runs), _RUNS_PER_TASK)]
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for done in pool.map(_load, tasks):
            for run, count, caught in done:
                for category, message in caught:
                    warnings.warn(message, category, stacklevel=4)
                yield run, count
