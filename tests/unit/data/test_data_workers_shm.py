"""Shared-memory segments: create, map and unlink, a full /dev/shm, names, read-only maps."""

from __future__ import annotations

import errno
import os
from typing import Any

import pytest

from stoker.data._workers import shm as _shm
from stoker.data._workers.shm import (
    SharedMemoryFullError,
    create_segment,
    map_read_only,
    map_segment,
    next_serial,
    segment_name,
    segment_pids,
    shm_free_bytes,
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


@pytest.mark.parametrize(
    "name",
    [
        "",
        "unrelated-file",
        "stoker-data-1-2",
        "stoker-data-1-2-x",
        "stoker-data-1-2-3/../x",
        "../stoker-data-1-2-3",
        "stoker-data-1-2-3\n",
        "stoker-data--1-2-3",
    ],
)
def test_segment_pids_reject_what_segment_name_does_not_make(name: str) -> None:
    """Only names of the form segment_name makes have pids; paths and other files do not."""
    assert segment_pids(name) is None
    assert segment_pids(segment_name(12, 345, 6789)) == (12, 345)


def test_serials_never_repeat_in_a_process() -> None:
    """Slabs and shared buffers draw their serials from one count."""
    first = next_serial()
    assert next_serial() > first


@pytest.mark.parametrize("name", ["../../etc/passwd", "stoker-data-1-1-1/x", "passwd"])
def test_map_read_only_refuses_other_paths(name: str) -> None:
    """A name that is not a segment's is a ValueError, before any file is opened."""
    with pytest.raises(ValueError, match=r"segment name must be stoker-data-<pid>-<pid>-<serial>"):
        map_read_only(name, 64)


def test_map_read_only_refuses_a_short_file_a_fifo_and_a_symlink(tmp_path: Any) -> None:
    """A truncated segment, a FIFO and a symlink under a segment's name raise RuntimeError at once.

    A truncated segment, a FIFO and a symlink under a segment's name raise RuntimeError at
    once (no bus error, no wait, no link followed).
    """
    directory = str(tmp_path)
    short, fifo, link = (segment_name(1, 1, n) for n in (1, 2, 3))
    with open(os.path.join(directory, short), "wb") as file:
        file.write(b"x" * 10)
    os.mkfifo(os.path.join(directory, fifo))
    os.symlink(os.path.join(directory, short), os.path.join(directory, link))
    with pytest.raises(RuntimeError, match="must hold at least 64 bytes, got 10"):
        map_read_only(short, 64, directory)
    with pytest.raises(RuntimeError, match="not a plain file"):
        map_read_only(fifo, 64, directory)
    with pytest.raises(RuntimeError, match="must be a shared-memory file"):
        map_read_only(link, 10, directory)
    with pytest.raises(FileNotFoundError):
        map_read_only(segment_name(1, 1, 4), 64, directory)
    mapping, _ = map_read_only(short, 10, directory)
    assert mapping[:] == b"x" * 10
