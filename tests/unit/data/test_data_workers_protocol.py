"""The worker protocol: messages survive pickling as the same types, statuses and commands."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from stoker.data._workers.protocol import (
    BATCH,
    NO_STATE,
    RESET,
    STOP,
    Command,
    Meta,
    Reply,
    Reset,
    Status,
    Task,
)


@pytest.mark.parametrize(
    "message",
    [
        Task(3, [1, 2], (4, 5)),
        Task(0, 7),
        Reply(1, BATCH, [10, 20], Meta(0.5, True, {"position": 2}, None, (3,))),
        Reply(2, Status.EXHAUSTED, None, Meta(0.1, False, None)),
        Reply(-1, Status.RESET_DONE, None, Meta()),
        STOP,
        RESET,
        Reset(2**62 + 5),
    ],
    ids=[
        "task",
        "task-no-slabs",
        "reply",
        "reply-state-none",
        "reply-no-state",
        "stop",
        "reset",
        "reset-seeded",
    ],
)
def test_messages_pickle_to_equal_messages_of_the_same_type(message: Any) -> None:
    """A message crossing a pipe arrives equal, with its type; enum members stay singletons."""
    copy = pickle.loads(pickle.dumps(message))
    assert copy == message
    assert type(copy) is type(message)
    if isinstance(message, Reply):
        assert copy.status is message.status
        assert type(copy.meta) is Meta
        assert (copy.meta.worker_state is NO_STATE) == (message.meta.worker_state is NO_STATE)
    if isinstance(message, Command):
        assert copy is message


def test_statuses_are_distinct_and_a_default_meta_reports_nothing() -> None:
    """Five statuses (ENDED included); a default Meta has no state, error or retired slab."""
    assert len({status.value for status in Status}) == len(Status) == 5
    assert Status.ENDED in Status
    assert Meta() == Meta(0.0, False, NO_STATE, None, ())
    assert Task(1, [0]).released == ()
