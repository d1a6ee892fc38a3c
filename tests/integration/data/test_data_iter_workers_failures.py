"""Failures in workers: exceptions, deaths by signal or exit, timeouts; all bounded.

Exceptions and timeouts are checked with process workers (each start method where it matters)
and thread workers alike: the same type, worker id, dataset index and worker traceback. Deaths
by signal or exit, pickling and importing apply to processes only (a thread cannot be killed
from outside and shares the main process's objects); the unit tests cover a thread that ends on
its own.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from data_workers_helpers import (
    ALL_KINDS,
    WORKER_KINDS,
    DyingDataset,
    FailingDataset,
    GatedDataset,
    RangeDataset,
    SlowDataset,
    WorkerWatch,
    failing_init,
    kind_kwargs,
    wait_all_gone,
    wait_for_marker,
)

from stoker.data import DataLoader

# Python 3.12+ warns when fork() runs in a process that has threads (torch, queue feeders);
# the fork start method is tested on purpose here.
pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_worker_exception_keeps_type_worker_index_and_traceback(kind: str) -> None:
    """A dataset error re-raises in order with its type, worker id, index and worker traceback."""
    loader = DataLoader(FailingDataset(8, bad=5), batch_size=2, num_workers=2, **kind_kwargs(kind))
    iterator = iter(loader)
    assert np.asarray(next(iterator)[1]).tolist() == [0, 1]
    assert np.asarray(next(iterator)[1]).tolist() == [2, 3]
    with pytest.raises(ValueError, match="sample 5 is broken") as caught:
        next(iterator)
    err: Any = caught.value
    assert err.worker_id == 0  # the third batch went to worker 0 (round-robin)
    assert err.dataset_index == 5
    assert "DataLoader worker 0" in str(err)
    assert "dataset index 5" in str(err)
    assert "__getitem__" in err.worker_traceback
    assert "raise ValueError" in str(err)
    # The iterator goes on after the failed batch, and the loader can be iterated again.
    assert np.asarray(next(iterator)[1]).tolist() == [6, 7]
    with pytest.raises(StopIteration):
        next(iterator)
    with pytest.raises(ValueError, match="sample 5"):
        list(loader)


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_key_error_is_rebuilt_with_readable_message(kind: str) -> None:
    """A KeyError keeps its type and prints its lines, not one quoted string."""
    dataset = FailingDataset(4, bad=1, kind="key")
    loader = DataLoader(dataset, batch_size=None, num_workers=1, **kind_kwargs(kind))
    with pytest.raises(KeyError) as caught:
        list(loader)
    text = str(caught.value)
    assert "missing-1" in text
    assert "\n" in text
    assert "\\n" not in text


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_unrebuildable_exception_falls_back_to_runtime_error(kind: str) -> None:
    """An exception type that needs more than a message comes back as RuntimeError."""
    dataset = FailingDataset(4, bad=2, kind="twoargs")
    loader = DataLoader(dataset, batch_size=None, num_workers=1, **kind_kwargs(kind))
    with pytest.raises(RuntimeError, match="NeedsTwoArgs") as caught:
        list(loader)
    assert "cannot rebuild" in str(caught.value)


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_worker_init_fn_failure_is_reported(kind: str) -> None:
    """An exception in worker_init_fn re-raises with its type and says where it happened."""
    loader = DataLoader(
        RangeDataset(4), num_workers=1, worker_init_fn=failing_init, **kind_kwargs(kind)
    )
    with pytest.raises(OSError, match="cannot open its shard") as caught:
        next(iter(loader))
    assert "in worker_init_fn" in str(caught.value)


def test_unpicklable_batch_is_reported() -> None:
    """A batch that cannot be pickled back raises in the main process instead of hanging."""
    loader = DataLoader(RangeDataset(2), num_workers=1, collate_fn=lambda batch: lambda: batch)
    with pytest.raises(Exception, match="while sending the batch"):
        next(iter(loader))


class _KillOnce(DyingDataset):
    """Dies at index ``bad`` the first time only (a marker file remembers)."""

    def __init__(self, n: int, bad: int, how: str, marker: Path) -> None:
        super().__init__(n, bad, how)
        self.marker = str(marker)

    def __getitem__(self, index: int) -> Any:
        if index == self.bad and not os.path.exists(self.marker):
            Path(self.marker).touch()
            return super().__getitem__(index)
        return RangeDataset.__getitem__(self, index)


@pytest.mark.parametrize(
    ("how", "expected"),
    [("sigkill", "signal SIGKILL"), ("exit", "exit code 3"), ("segfault", "signal SIGSEGV")],
)
def test_dead_worker_raises_quickly_with_pid_and_cause(
    how: str, expected: str, tmp_path: Path
) -> None:
    """A worker that dies raises RuntimeError within 5 s naming pid, cause and held indices."""
    loader = DataLoader(
        _KillOnce(8, bad=5, how=how, marker=tmp_path / "died"),
        batch_size=2,
        num_workers=2,
        multiprocessing_context="fork",
    )
    iterator = iter(loader)
    pids = iterator.worker_pids
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="exited unexpectedly") as caught:
        list(iterator)
    assert time.monotonic() - start < 5
    text = str(caught.value)
    assert expected in text
    assert f"pid {pids[0]}" in text
    assert "[4, 5]" in text
    assert not wait_all_gone(pids, within=5)
    assert iterator.closed
    assert [int(x) for _, labels in loader for x in labels] == list(range(8))


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_worker_killed_from_outside_is_noticed(start_method: str) -> None:
    """os.kill(worker, SIGKILL) during a long fetch raises RuntimeError within 5 s."""
    loader = DataLoader(
        SlowDataset(4, slow=0, delay=30), num_workers=1, multiprocessing_context=start_method
    )
    iterator = iter(loader)
    pid = iterator.worker_pids[0]
    threading.Timer(0.3, os.kill, (pid, signal.SIGKILL)).start()
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=rf"pid {pid}\) was killed by signal SIGKILL"):
        next(iterator)
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_timeout_raises_naming_the_timeout(kind: str, tmp_path: Path) -> None:
    """A batch slower than timeout raises RuntimeError on time; closing ends the workers.

    A batch slower than timeout raises RuntimeError naming the timeout, on time; closing
    ends the workers (a thread once its slow fetch returns: threads cannot be stopped).

    The slow fetch waits for a marker (30 s at most) created only after the raise, so the
    batch cannot arrive first however late the main thread wakes at its deadline; the upper
    bound can then be a loose 5 s, and a timeout that never fires still fails it.
    """
    release = tmp_path / "release"
    watch = WorkerWatch(kind)
    dataset = GatedDataset(4, gate=0, marker=release)
    loader = DataLoader(dataset, num_workers=1, timeout=0.4, **kind_kwargs(kind))
    try:
        with iter(loader) as iterator:
            workers = watch.started()
            assert len(workers) == 1
            start = time.monotonic()
            with pytest.raises(RuntimeError, match=r"timed out after 0\.4 seconds") as caught:
                next(iterator)
            assert 0.35 < time.monotonic() - start < 5
            release.touch()  # the fetch may end now; closing must still end the worker
            assert "timeout=0.4" in str(caught.value)
    finally:
        release.touch()  # also when an assertion failed: no worker waits out the cap
    assert not watch.alive_after(workers, within=5)


def test_unpicklable_dataset_with_spawn_says_what_to_do() -> None:
    """With spawn, an unpicklable collate_fn warns and raises a TypeError explaining the fix.

    With spawn, an unpicklable collate_fn warns torch's pickle-error warning and raises a
    TypeError (also pickle's AttributeError, as torch raises) explaining the fix, at iter().
    """
    loader = DataLoader(
        RangeDataset(2), num_workers=1, multiprocessing_context="spawn", collate_fn=lambda b: b
    )
    with (
        pytest.warns(
            UserWarning, match="Got pickle error when attempting to start a worker"
        ) as warned,
        pytest.raises(TypeError, match=r"must be picklable .* 'spawn' start method") as caught,
    ):
        iter(loader)
    assert isinstance(caught.value, AttributeError)
    pickle_warnings = [w for w in warned if "Got pickle error" in str(w.message)]
    assert [w.filename for w in pickle_warnings] == [__file__]  # the line that called iter()


def test_unpicklable_index_raises_instead_of_hanging() -> None:
    """A sampler item that cannot be pickled raises TypeError in the main process at once."""

    class Anything(RangeDataset):
        def __getitem__(self, index: Any) -> Any:
            return 0

    loader = DataLoader(Anything(2), sampler=[lambda: 0], batch_size=None, num_workers=1)
    with pytest.raises(TypeError, match="must be picklable to reach a worker process"):
        list(loader)


def test_spawn_worker_that_cannot_load_the_dataset_is_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A spawned worker that cannot import the dataset's module exits; the loader says so."""
    module = types.ModuleType("stoker_test_only_in_main")

    class OnlyHere(RangeDataset):
        pass

    OnlyHere.__module__ = module.__name__
    OnlyHere.__qualname__ = "OnlyHere"
    module.OnlyHere = OnlyHere  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    loader = DataLoader(OnlyHere(4), num_workers=1, multiprocessing_context="spawn")
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"exited with exit code 1.*failed to start"):
        list(loader)
    assert time.monotonic() - start < 10


class _EndsItsWorker(RangeDataset):
    """Ends the worker process that fetches index ``bad``, the way ``how`` says.

    With ``markers`` (a folder), the fetches are ordered by files in it, each wait capped at
    30 s: index ``bad`` creates ``on-bad`` and then waits for ``end-now`` before ending its
    worker; index 0 waits for ``on-bad`` first.
    """

    def __init__(self, n: int, bad: int, how: str, markers: Path | None = None) -> None:
        super().__init__(n)
        self.bad = bad
        self.how = how
        self.markers = None if markers is None else str(markers)

    def __getitem__(self, index: int) -> Any:
        if index == 0 and self.markers is not None:
            wait_for_marker(os.path.join(self.markers, "on-bad"))
        if index == self.bad:
            if self.markers is not None:
                Path(self.markers, "on-bad").touch()
                wait_for_marker(os.path.join(self.markers, "end-now"))
            if self.how == "sys.exit":
                sys.exit(4)
            if self.how == "KeyboardInterrupt":
                raise KeyboardInterrupt
            if self.how == "os._exit":
                os._exit(3)
            os.kill(os.getpid(), signal.SIGKILL)
        return super().__getitem__(index)


_ENDINGS = [
    ("sys.exit", "exit code 4"),
    ("KeyboardInterrupt", "exit code 1"),
    ("os._exit", "exit code 3"),
    ("SIGKILL", "signal SIGKILL"),
]


@pytest.mark.parametrize(("how", "expected"), _ENDINGS)
def test_a_dying_worker_is_always_reported_as_dead_and_closes_the_iterator(
    how: str, expected: str
) -> None:
    """Over 40 fresh loaders, a worker ending at index 5 always raises the dead-worker error.

    The main process may notice the death by writing the next task into the worker's closed
    pipe: that must still read as the worker's death (its pid, how it ended, the indices it
    held), never a bare BrokenPipeError, and the iterator ends closed: the next next()
    raises StopIteration, never a batch.
    """
    for _ in range(40):
        loader = DataLoader(
            _EndsItsWorker(10, bad=5, how=how),
            batch_size=2,
            num_workers=2,
            multiprocessing_context="fork",
        )
        iterator = iter(loader)
        pid = iterator.worker_pids[0]
        with pytest.raises(RuntimeError, match="exited unexpectedly") as caught:
            for _batch in iterator:
                pass
        text = str(caught.value)
        assert f"worker 0 (pid {pid})" in text
        assert expected in text
        assert "[4, 5]" in text
        assert iterator.closed
        with pytest.raises(StopIteration):
            next(iterator)


@pytest.mark.parametrize(("how", "expected"), _ENDINGS)
def test_a_task_written_to_a_dead_worker_reports_that_death(
    how: str, expected: str, tmp_path: Path
) -> None:
    """A task written into a dead worker's closed pipe is reported as that worker's death.

    Made deterministic by marker files, not sleeps: worker 1 answers index 1 and starts on
    index 3 before worker 0 may finish index 0, so batch 1 is received no later than batch 0;
    worker 1 ends only once batch 0 is delivered, and the consumer waits until it is gone, so
    the next next() delivers the buffered batch 1 and writes task 5 into worker 1's closed pipe
    without waiting first. Batches buffered before the death come in order; then the
    dead-worker error, then the end.
    """
    loader = DataLoader(
        _EndsItsWorker(10, bad=3, how=how, markers=tmp_path),
        batch_size=1,
        num_workers=2,
        multiprocessing_context="fork",
    )
    iterator = iter(loader)
    pid = iterator.worker_pids[1]
    got = [int(next(iterator)[1][0])]
    (tmp_path / "end-now").touch()
    assert not wait_all_gone([pid], within=10)
    with pytest.raises(RuntimeError, match="exited unexpectedly") as caught:
        got.extend(int(labels[0]) for _, labels in iterator)
    assert got in ([0, 1], [0, 1, 2])  # batch 2 (worker 0) may come before the report
    text = str(caught.value)
    assert f"worker 1 (pid {pid}) {'was killed' if how == 'SIGKILL' else 'exited'}" in text
    assert expected in text
    assert "indices [3]" in text
    assert "indices [5]" in text
    assert iterator.closed
    with pytest.raises(StopIteration):
        next(iterator)
