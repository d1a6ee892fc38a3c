"""The task book of a worker iterator, and the shares of a split first batch, without workers."""

from __future__ import annotations

import random

import pytest

from stoker.data._task_book import SplitBatch, TaskBook


def test_a_task_is_held_by_its_worker_until_popped() -> None:
    book = TaskBook(3)
    book.add(0, 1, [0, 1])
    book.add(1, 2, [2, 3])
    assert 0 in book
    assert 1 in book
    assert 2 not in book
    assert (len(book), book.outstanding) == (2, 2)
    assert [book.load(w) for w in range(3)] == [0, 1, 1]
    assert book.holder(1) == 2
    assert book.held_by(1) == [(0, [0, 1])]
    assert book.pop(0) == (1, [0, 1])
    assert 0 not in book
    assert not book.holds_any(1)
    assert book.holds_any(2)
    assert book.pop(1) == (2, [2, 3])
    assert not book
    with pytest.raises(KeyError):
        book.pop(1)


def test_a_task_cannot_be_sent_twice() -> None:
    book = TaskBook(2)
    book.add(4, 0, [8])
    with pytest.raises(ValueError, match="task 4 is already out, at worker 0"):
        book.add(4, 1, [8])
    assert book.load(1) == 0


def test_a_split_batch_counts_once_in_the_window_and_reports_as_batch_0() -> None:
    book = TaskBook(3)
    for task_id, worker_id, share in SplitBatch.shares(list(range(7)), 2, 3):
        book.add(task_id, worker_id, share)
    book.add(1, 0, [7, 8])
    assert len(book) == 4
    assert book.outstanding == 2  # batch 0 in three shares, and batch 1
    assert [book.load(w) for w in range(3)] == [2, 1, 1]
    assert book.held_by(0) == [(0, [2, 3]), (1, [7, 8])]  # share -1 of [0, 1], [2, 3], [4, 5, 6]
    assert book.held_by(0, answered={1}) == [(0, [2, 3])]
    book.pop(-1)
    book.pop(-2)
    assert (len(book), book.outstanding) == (2, 2)


def test_the_window_invariant_holds_through_random_traffic() -> None:
    rng = random.Random(5)
    book, workers = TaskBook(4), 4
    out: dict[int, int] = {}
    next_id = 0
    for _ in range(2_000):
        if out and rng.random() < 0.5:
            task_id = rng.choice(list(out))
            assert book.pop(task_id)[0] == out.pop(task_id)
        else:
            worker_id = rng.randrange(workers)
            book.add(next_id, worker_id, [next_id])
            out[next_id] = worker_id
            next_id += 1
        assert book.outstanding == len(book) == len(out)
        assert [book.load(w) for w in range(workers)] == [
            sum(1 for owner in out.values() if owner == w) for w in range(workers)
        ]


@pytest.mark.parametrize(("size", "workers"), [(2, 2), (7, 3), (64, 2), (3, 8), (100, 7)])
def test_the_shares_cover_the_batch_once_in_order(size: int, workers: int) -> None:
    for first in range(workers):
        shares = list(SplitBatch.shares(list(range(size)), first, workers))
        assert [task_id for task_id, _, _ in shares] == [0, -1, -2, -3, -4, -5, -6][: len(shares)]
        assert len(shares) == min(size, workers)
        assert [i for _, _, piece in shares for i in piece] == list(range(size))
        assert all(piece for _, _, piece in shares)
        assert [w for _, w, _ in shares] == [(first + k) % workers for k in range(len(shares))]
        lengths = [len(piece) for _, _, piece in shares]
        assert max(lengths) - min(lengths) <= 1


def test_the_shares_join_in_order_whatever_order_they_arrive() -> None:
    split = SplitBatch()
    assert not split.holds_window
    assert 0 not in split
    split.expect([0, -1, -2])
    assert split.holds_window
    assert -2 in split
    assert split.join(-2, ("ok", "c", None)) is None
    assert split.join(0, ("ok", "a", None)) is None
    assert split.join(-1, ("ok", "b", None)) == [
        ("ok", "a", None),
        ("ok", "b", None),
        ("ok", "c", None),
    ]
    assert 0 not in split  # forgotten once joined
    assert split.holds_window  # until the batch is delivered
    assert split.release_window() is True
    assert split.release_window() is False
