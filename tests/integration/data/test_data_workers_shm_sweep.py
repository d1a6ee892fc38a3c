"""Shared-memory segments' orphan sweep against a process that really ended.

The pid of a child that ran and exited names segments whose processes are gone: the sweep
removes those, and keeps the names of live processes and other files.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from stoker.data._workers.shm import segment_name, sweep_orphans, unlink_segments

pytestmark = pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs /dev/shm")


def _names(tmp_dir: str) -> list[str]:
    return sorted(os.listdir(tmp_dir))


def _ended_pid() -> int:
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return int(ended.stdout)


def test_sweep_removes_only_names_of_ended_processes(tmp_path: Any) -> None:
    """Names whose main and worker pids are both gone are swept; live ones stay."""
    dead_pid = _ended_pid()
    directory = str(tmp_path)
    dead = segment_name(dead_pid, dead_pid, 1)
    live = segment_name(os.getpid(), dead_pid, 1)
    other = "unrelated-file"
    for name in (dead, live, other):
        with open(os.path.join(directory, name), "wb"):
            pass
    assert sweep_orphans(directory) == 1
    assert _names(directory) == sorted([live, other])
    assert unlink_segments(os.getpid(), directory=directory) == 1
    assert _names(directory) == [other]


def test_sweep_counts_the_exiting_process_as_ended(tmp_path: Any) -> None:
    """sweep_orphans(gone=pid) removes pid's names paired with ended processes, not live ones.

    sweep_orphans(gone=pid) removes the names of pid paired with an ended process, and
    keeps those paired with a live one.
    """
    directory = str(tmp_path)
    me, dead = os.getpid(), _ended_pid()
    mine = segment_name(me, me, 1)
    with_dead = segment_name(dead, me, 2)
    with_live = segment_name(os.getppid(), me, 3)
    for name in (mine, with_dead, with_live):
        with open(os.path.join(directory, name), "wb"):
            pass
    assert sweep_orphans(directory) == 0
    assert sweep_orphans(directory, gone=me) == 2
    assert _names(directory) == [with_live]


def test_a_loader_starting_its_workers_sweeps_the_names_of_ended_processes() -> None:
    """The sweep runs when process workers start (after the forks), in the real directory."""
    from stoker.data import DataLoader
    from stoker.data._workers.shm import SHM_DIR

    dead_pid = _ended_pid()
    orphan = os.path.join(SHM_DIR, segment_name(dead_pid, dead_pid, 1))
    with open(orphan, "wb"):
        pass
    try:
        batches = DataLoader(list(range(4)), batch_size=2, num_workers=1)
        assert [batch.tolist() for batch in batches] == [[0, 1], [2, 3]]
        assert not os.path.exists(orphan)
    finally:
        if os.path.exists(orphan):
            os.unlink(orphan)
