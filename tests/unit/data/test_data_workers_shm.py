"""Shared-memory segments: create, map and unlink, a full /dev/shm, and the orphan sweep."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from typing import Any

import pytest

from stoker.data._workers import shm as _shm
from stoker.data._workers.shm import (
    SharedMemoryFullError,
    create_segment,
    map_segment,
    segment_name,
    shm_free_bytes,
    sweep_orphans,
    unlink_segments,
)

pytestmark = pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs /dev/shm")


def _names(tmp_dir: str) -> list[str]:
    return sorted(os.listdir(tmp_dir))


def test_segment_is_mapped_then_unlinked(tmp_path: Any) -> None:
    """The main side's map unlinks the name; both mappings still share the memory."""
    directory = str(tmp_path)
    name = segment_name(1, 2, 3)
    worker_side = create_segment(name, 1 << 16, directory)
    assert _names(directory) == [name]
    main_side = map_segment(name, 1 << 16, directory)
    assert _names(directory) == []
    worker_side[:5] = b"hello"
    assert main_side[:5] == b"hello"


def test_slab_larger_than_free_space_is_a_clear_error() -> None:
    """Asking for more than /dev/shm has free raises SharedMemoryFullError naming the fix."""
    too_big = shm_free_bytes() + (1 << 30)
    name = segment_name(os.getpid(), os.getpid(), 999_999)
    with pytest.raises(SharedMemoryFullError, match=r"--shm-size") as caught:
        create_segment(name, too_big)
    assert str(too_big) in str(caught.value)
    assert not os.path.exists(os.path.join("/dev/shm", name))


def test_fallocate_enospc_becomes_a_clear_error(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC while reserving pages (a race with another process) also raises the clear error."""

    def full(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_shm.os, "posix_fallocate", full)
    with pytest.raises(SharedMemoryFullError, match="must fit"):
        create_segment("stoker-data-1-2-3", 4096, str(tmp_path))
    assert _names(str(tmp_path)) == []


def test_sweep_removes_only_names_of_ended_processes(tmp_path: Any) -> None:
    """Names whose main and worker pids are both gone are swept; live ones stay."""
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    dead_pid = int(ended.stdout)
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
