"""One writer's event files: naming, the first record, flushing, a bounded queue, failed writes."""

from __future__ import annotations

import os
import re
import socket
import time
from pathlib import Path

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
    """Without flush() or a full queue, the writer thread still writes within ~1 s."""
    writer = stb.SummaryWriter(tmp_path, max_queue=1000, flush_secs=120)
    writer.add_scalar("x", 1.0, 1)
    deadline = time.monotonic() + 5
    while not scalar_steps(only_file(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.05)
    waited = 5 - (deadline - time.monotonic())
    assert scalar_steps(only_file(tmp_path)) == [1]
    assert waited < 2.5
    writer.close()


def test_queue_is_bounded_when_the_disk_is_slow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a slow disk, callers wait instead of queueing without limit; nothing is lost."""
    from stoker.tensorboard import _event_file

    real_write = _event_file._write_all

    def slow_write(fd: int, data: bytes) -> None:
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
    with pytest.raises(RuntimeError, match="failed"):
        writer.flush()
    assert time.monotonic() - started < 5
    with pytest.raises(RuntimeError, match="Bad file descriptor"):
        writer.close()
    writer.close()
