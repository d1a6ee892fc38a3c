"""One writer's event files: naming, the first record, flushing, a bounded queue, failed writes.

A full disk is the real thing: the event file's descriptor is replaced (``dup2``) by one of
``/dev/full``, whose writes fail with ``ENOSPC`` in the kernel, so the writer meets the error a
full file system gives, with no patched function and no root-only mount.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tb_events import file_events, only_file, scalar_steps

import stoker.tensorboard as stb

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_file_name_and_first_record(tmp_path: Path) -> None:
    """Files are named like TensorBoard's writer names them and start with brain.Event:2."""
    before = int(time.time())
    with stb.SummaryWriter(tmp_path, filename_suffix=".v2") as first:
        second = stb.SummaryWriter(tmp_path, filename_suffix=".v2")
        second.close()
        assert first.get_logdir() == str(tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    pattern = re.compile(
        rf"events\.out\.tfevents\.(\d{{10}})\.{re.escape(socket.gethostname())}\."
        rf"{os.getpid()}\.(\d+)\.v2"
    )
    matches = [pattern.fullmatch(name) for name in names]
    assert all(matches), names
    assert len({m.group(2) for m in matches if m}) == 2
    assert all(before <= int(m.group(1)) <= time.time() for m in matches if m)
    first_event = file_events(tmp_path / names[0])[0]
    assert first_event["file_version"] == "brain.Event:2"
    assert first_event["wall_time"] >= before


def test_flush_returns_once_everything_is_in_the_file(tmp_path: Path) -> None:
    """After flush() every queued event is readable, without closing the writer."""
    writer = stb.SummaryWriter(tmp_path, max_queue=1000)
    for step in range(5000):
        writer.add_scalar("x", float(step), step)
    writer.flush()
    assert scalar_steps(only_file(tmp_path)) == list(range(5000))
    writer.close()


def test_events_reach_the_file_within_about_a_second(tmp_path: Path) -> None:
    """Without flush() or a full queue, the writer thread still writes on its ~1 s timer.

    The bound is 10 s, not ~1 s, so a writer thread woken late on a loaded machine passes;
    waiting for flush_secs (120 s) or a full queue (1000 events) still fails.
    """
    writer = stb.SummaryWriter(tmp_path, max_queue=1000, flush_secs=120)
    try:
        writer.add_scalar("x", 1.0, 1)
        started = time.monotonic()
        deadline = started + 30
        while not scalar_steps(only_file(tmp_path)) and time.monotonic() < deadline:
            time.sleep(0.05)
        waited = time.monotonic() - started
        assert scalar_steps(only_file(tmp_path)) == [1]
        assert waited < 10
    finally:
        writer.close()


def test_queue_is_bounded_when_the_disk_is_slow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a slow disk, callers wait instead of queueing without limit; nothing is lost.

    The writer thread's first write waits (10 s at most) until the caller has queued all but
    one event of a backlog, so the queue surely grows past the lower bound however little of
    a core the caller gets; the upper bound (one backlog) is what add()'s drain wait enforces.
    """
    from stoker.tensorboard import _event_file

    real_write = _event_file._write_all
    held = False

    def slow_write(fd: int, data: bytes) -> None:
        nonlocal held
        if not held and threading.current_thread() is not threading.main_thread():
            held = True  # the writer thread's first batch; the file's header is written by open()
            state = _state(writer)
            deadline = time.monotonic() + 10
            while len(state.pending) < state.backlog_events - 1 and time.monotonic() < deadline:
                time.sleep(0.001)
        time.sleep(0.005)
        real_write(fd, data)

    monkeypatch.setattr(_event_file, "_write_all", slow_write)
    writer = stb.SummaryWriter(tmp_path, max_queue=2)
    state = writer.file_writer.event_writer._state if writer.file_writer else None
    assert state is not None
    longest = 0
    for step in range(3000):
        writer.add_scalar("x", 1.0, step)
        longest = max(longest, len(state.pending))
    writer.close()
    assert 256 <= longest <= 2 * 256
    assert scalar_steps(only_file(tmp_path)) == list(range(3000))


def test_writer_thread_failure_surfaces_instead_of_hanging(tmp_path: Path) -> None:
    """If writing fails (here: the file descriptor is gone), flush() raises RuntimeError fast."""
    writer = stb.FileWriter(tmp_path)
    state = writer.event_writer._state
    assert state.fd is not None
    os.close(state.fd)
    writer.add_event({"step": 1, "file_version": "x"})
    started = time.monotonic()
    with pytest.raises(OSError, match="failed") as raised:
        writer.flush()
    assert raised.value.errno == errno.EBADF
    assert time.monotonic() - started < 5
    with pytest.raises(OSError, match="Bad file descriptor"):
        writer.close()
    writer.close()


def _state(writer: stb.SummaryWriter) -> Any:
    assert writer.file_writer is not None
    return writer.file_writer.event_writer._state


def _wait_for_failure(writer: stb.SummaryWriter) -> None:
    """Wait until the writer thread has met the failure (its next check, within ~1 s)."""
    deadline = time.monotonic() + 30
    while _state(writer).error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _state(writer).error is not None


def _fill_disk(writer: stb.SummaryWriter) -> None:
    """Point the writer's open event file at /dev/full: every later write fails with ENOSPC."""
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        os.dup2(full, _state(writer).fd)
    finally:
        os.close(full)


_NEXT_CALLS: dict[str, Callable[[stb.SummaryWriter], None]] = {
    "flush": lambda writer: writer.flush(),
    "close": lambda writer: writer.close(),
    "add_scalar": lambda writer: writer.add_scalar("x", 3.0, 3),
    "add_text": lambda writer: writer.add_text("t", "x", 3),
}


@pytest.mark.parametrize("call", list(_NEXT_CALLS))
def test_removed_log_dir_raises_file_not_found_at_the_next_call(tmp_path: Path, call: str) -> None:
    """Deleting the log dir of an open writer is FileNotFoundError at the next call, as in torch.

    The open file still takes writes once it has no name, so without a check every later point
    would vanish; flush() finds out at once, add_* once the thread has checked (<= ~1 s).
    The thread's idle wake-up is put off for the test (max_queue=1 wakes it at each add
    instead), so that the add right after the removal is the one the thread finds lost.
    """
    logdir = tmp_path / "run"
    writer = stb.SummaryWriter(logdir, max_queue=1)
    _state(writer).flush_interval = 3600.0  # the flush below makes the thread take it up
    writer.add_scalar("x", 1.0, 1)
    writer.flush()
    shutil.rmtree(logdir)
    if call.startswith("add"):
        writer.add_scalar("x", 2.0, 2)  # accepted: nothing has been written since the removal
        _wait_for_failure(writer)
    with pytest.raises(FileNotFoundError, match="removed while the writer had it open") as raised:
        _NEXT_CALLS[call](writer)
    assert f"log directory {str(logdir)!r} was removed" in str(raised.value)
    assert ("1 event(s) were not written" in str(raised.value)) == call.startswith("add")
    for later in ("add_scalar", "flush"):
        if call != "close":
            with pytest.raises(FileNotFoundError):
                _NEXT_CALLS[later](writer)
    with contextlib.suppress(FileNotFoundError):
        writer.close()
    assert not logdir.exists() or call == "close"


@pytest.mark.parametrize("removed", ["log dir", "event file"])
def test_a_removal_is_found_while_idle_so_the_first_add_after_it_raises(
    tmp_path: Path, removed: str
) -> None:
    """A log dir or file removed while idle makes the first add_scalar raise FileNotFoundError.

    With nothing added since, the thread's idle wake-up (every flush_interval) finds the log
    dir or the file gone, and the first add_scalar raises FileNotFoundError naming what went;
    it used to be accepted, and only the add after the thread's next write raised.
    """
    logdir = tmp_path / "run"
    writer = stb.SummaryWriter(logdir)
    writer.add_scalar("x", 1.0, 1)
    writer.flush()
    if removed == "log dir":
        shutil.rmtree(logdir)
    else:
        os.remove(_state(writer).path)
    _wait_for_failure(writer)
    with pytest.raises(FileNotFoundError, match="removed while the writer had it open") as raised:
        writer.add_scalar("x", 2.0, 2)
    named = f"log directory {str(logdir)!r}" if removed == "log dir" else "event file"
    assert f"{named} was removed" in str(raised.value)
    assert "were not written" not in str(raised.value)
    with contextlib.suppress(FileNotFoundError):
        writer.close()


def test_a_log_dir_removed_while_the_thread_looks_is_named_as_the_log_dir(tmp_path: Path) -> None:
    """The thread may find the file gone in the middle of ``rm -rf``, before its directory goes.

    The error names what is gone when it reaches the caller: here the log dir, though the
    thread noticed while the directory was still there.
    """
    logdir = tmp_path / "run"
    writer = stb.SummaryWriter(logdir)
    writer.add_scalar("x", 1.0, 1)
    writer.flush()
    os.remove(_state(writer).path)  # rm -rf's first step: the files, then the directory
    _wait_for_failure(writer)
    logdir.rmdir()
    with pytest.raises(FileNotFoundError) as raised:
        writer.add_scalar("x", 2.0, 2)
    assert f"log directory {str(logdir)!r} was removed while the writer had it open" in str(
        raised.value
    )
    with contextlib.suppress(FileNotFoundError):
        writer.close()


def test_full_disk_makes_the_next_add_raise_enospc(tmp_path: Path) -> None:
    """Once a write has failed with ENOSPC, the very next add_* raises it, and so does every call.

    The old writer kept accepting points until its backlog (max_queue * 256) was full.
    """
    writer = stb.SummaryWriter(tmp_path)
    writer.add_scalar("x", 1.0, 1)
    writer.flush()
    _fill_disk(writer)
    writer.add_scalar("x", 2.0, 2)
    _wait_for_failure(writer)
    with pytest.raises(OSError, match="disk is full") as raised:
        writer.add_scalar("x", 3.0, 3)
    assert raised.value.errno == errno.ENOSPC
    assert raised.value.filename == _state(writer).path
    for call in ("add_scalar", "add_text", "flush", "close"):
        with pytest.raises(OSError, match="No space left on device"):
            _NEXT_CALLS[call](writer)
    assert scalar_steps(only_file(tmp_path)) == [1]


def test_full_disk_stops_a_tight_loop_of_adds_with_enospc(tmp_path: Path) -> None:
    """A loop that never pauses is stopped by ENOSPC too, within two backlogs of adds.

    The thread's first write fails, so it takes one batch (at most a backlog) before the error
    is known; meanwhile the loop can queue at most one more backlog before it waits for the
    drain, and that wait raises. How many it accepts depends on when the thread gets a core
    (about ten on an idle machine, ~3,800 on a loaded one), never more than the bound.
    """
    writer = stb.SummaryWriter(tmp_path)
    backlog = _state(writer).backlog_events
    try:
        _fill_disk(writer)
        accepted = 0
        error: OSError | None = None
        for step in range(100_000):
            try:
                writer.add_scalar("x", 1.0, step)
            except OSError as err:
                error = err
                break
            accepted += 1
        assert error is not None
        assert error.errno == errno.ENOSPC
        assert accepted <= 2 * backlog
        lost = re.search(r"(\d+) event\(s\) were not written", str(error))
        assert lost is not None
        assert int(lost.group(1)) >= accepted  # every accepted event is counted as lost
    finally:
        with pytest.raises(OSError, match="No space left on device"):
            writer.close()


def test_full_disk_after_the_last_add_raises_at_flush(tmp_path: Path) -> None:
    """A write that fails after the last add_* (the thread writes later) surfaces at flush()."""
    writer = stb.SummaryWriter(tmp_path)
    _fill_disk(writer)
    writer.add_scalar("x", 1.0, 1)
    _wait_for_failure(writer)
    with pytest.raises(OSError, match="disk is full") as raised:
        writer.flush()
    assert raised.value.errno == errno.ENOSPC
    with pytest.raises(OSError, match="disk is full"):
        writer.close()
    writer.close()  # closed now: a second close() has nothing left to report


def test_fsync_error_at_close_is_a_failed_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error that only fsync reports (EIO from a network disk) is raised, not swallowed."""
    writer = stb.SummaryWriter(tmp_path)
    writer.add_scalar("x", 1.0, 1)
    writer.flush()

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="Input/output error") as raised:
        writer.close()
    assert raised.value.errno == errno.EIO
