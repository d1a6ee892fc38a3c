"""TaskPipe: task messages written without a feeder thread, never blocking, always in order."""

from __future__ import annotations

import multiprocessing
import time

from stoker.data._workers.taskpipe import TaskPipe


def _pipe() -> tuple[multiprocessing.connection.Connection, TaskPipe]:
    reader, writer = multiprocessing.Pipe(duplex=False)
    return reader, TaskPipe(writer)


def test_sending_more_than_the_pipe_holds_never_blocks_and_keeps_order() -> None:
    """Messages beyond the capacity wait locally; answers let them out, in order."""
    reader, pipe = _pipe()
    message = b"x" * 4096
    count = pipe.capacity // 4096 * 3
    started = time.monotonic()
    for number in range(count):
        pipe.send(number.to_bytes(4, "big") + message)
    assert time.monotonic() - started < 2.0
    assert pipe.busy
    received = []
    while len(received) < count:
        assert reader.poll(5)
        received.append(int.from_bytes(reader.recv_bytes()[:4], "big"))
        pipe.acknowledge()
    assert received == list(range(count))
    assert not pipe.busy
    pipe.close()
    reader.close()


def test_an_oversized_message_goes_through_a_helper_and_later_ones_wait() -> None:
    """A message larger than the pipe is written by a helper; the next one follows it."""
    reader, pipe = _pipe()
    big = b"B" * (pipe.capacity * 2)
    pipe.send(big)
    pipe.send(b"after")
    assert pipe.busy
    assert reader.poll(5)
    assert reader.recv_bytes() == big
    assert not reader.poll(0.05)  # "after" waits for the big message's answer
    pipe.acknowledge()
    deadline = time.monotonic() + 5
    while pipe.busy and time.monotonic() < deadline:
        pipe.flush()  # the pool does this on every wait
        time.sleep(0.01)
    assert reader.poll(5)
    assert reader.recv_bytes() == b"after"
    pipe.close()
    reader.close()


def test_unanswered_setup_does_not_count_and_stop_is_refused_when_full() -> None:
    """The setup message needs no answer; STOP is only written when it fits at once."""
    reader, pipe = _pipe()
    pipe.send(b"setup", answered=False)
    assert reader.recv_bytes() == b"setup"
    filler = b"f" * (pipe.capacity - 64)
    pipe.send(filler)
    assert not pipe.try_send_now(b"S" * 128)
    assert reader.recv_bytes() == filler
    pipe.acknowledge()
    # A message near the capacity is written by a helper thread, which may still be finishing
    # after the reader has its bytes: STOP is refused while the pipe is busy, so wait for that.
    deadline = time.monotonic() + 5
    while pipe.busy and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pipe.try_send_now(b"STOP")
    assert reader.recv_bytes() == b"STOP"
    pipe.close()
    assert reader.poll(5)
    reader.close()


def test_a_closed_worker_end_marks_the_pipe_broken_instead_of_raising() -> None:
    """Writing to a pipe whose reader is closed never raises: the pipe says it is broken.

    The pool reports such a worker as dead (with its exit and held indices); a bare
    BrokenPipeError escaping from a send would lose that report.
    """
    reader, pipe = _pipe()
    reader.close()
    pipe.send(b"task")
    assert pipe.broken
    pipe.send(b"another")  # later sends are dropped too, and nothing waits
    assert not pipe.busy
    assert not pipe.try_send_now(b"stop")
    pipe.close()
