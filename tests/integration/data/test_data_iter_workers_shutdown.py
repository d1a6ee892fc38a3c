"""No worker outlives its iterator: break, del, errors, close, interrupts, exit, a killed parent.

In-process paths run with process and thread workers; the paths where the main process itself
exits or is killed apply to processes only (threads end with their process).
"""

from __future__ import annotations

import _thread
import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from data_workers_helpers import (
    SUPPORT,
    WORKER_KINDS,
    GatedDataset,
    RangeDataset,
    SteadyDataset,
    WorkerWatch,
    kind_kwargs,
    wait_all_gone,
)

from stoker.data import DataLoader

# Python 3.12+ warns when fork() runs in a process that has threads (torch, queue feeders);
# the fork start method is tested on purpose here.
pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_breaking_out_of_a_loop_stops_the_workers(kind: str) -> None:
    """`for batch in loader: break` leaves no worker alive within 5 s."""
    watch = WorkerWatch(kind)
    workers: list[Any] = []
    for _ in DataLoader(SteadyDataset(100, 0.01), num_workers=2, **kind_kwargs(kind)):
        workers = watch.started()
        break
    assert len(workers) == 2
    assert not watch.alive_after(workers, within=5)


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_deleting_the_iterator_stops_the_workers(kind: str) -> None:
    """`del iterator` leaves no worker alive within 5 s."""
    watch = WorkerWatch(kind)
    iterator = iter(DataLoader(SteadyDataset(100, 0.01), num_workers=2, **kind_kwargs(kind)))
    next(iterator)
    workers = watch.started()
    assert len(workers) == 2
    del iterator
    assert not watch.alive_after(workers, within=5)


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_an_exception_in_the_training_loop_stops_the_workers(kind: str) -> None:
    """An exception raised in the loop body ends the workers once it leaves the loop."""
    watch = WorkerWatch(kind)
    workers: list[Any] = []

    def train() -> None:
        nonlocal workers
        for _ in DataLoader(SteadyDataset(100, 0.01), num_workers=2, **kind_kwargs(kind)):
            workers = watch.started()
            raise ArithmeticError("loss is nan")

    with pytest.raises(ArithmeticError, match="loss is nan"):
        train()
    assert len(workers) == 2
    assert not watch.alive_after(workers, within=5)


@pytest.mark.parametrize("kind", WORKER_KINDS)
@pytest.mark.parametrize("how", ["close", "with"])
def test_close_and_context_manager_stop_the_workers(how: str, kind: str) -> None:
    """close() and leaving a `with` block stop workers; a closed iterator is exhausted."""
    watch = WorkerWatch(kind)
    loader = DataLoader(SteadyDataset(100, 0.01), num_workers=2, **kind_kwargs(kind))
    iterator = iter(loader)
    workers = watch.started()
    assert len(workers) == 2
    if how == "close":
        next(iterator)
        iterator.close()
    else:
        with iterator:
            next(iterator)
    assert not watch.alive_after(workers, within=5)
    assert list(iterator) == []


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_workers_stop_at_the_end_of_an_epoch(kind: str) -> None:
    """Without persistent_workers, exhausting the iterator stops its workers."""
    watch = WorkerWatch(kind)
    iterator = iter(DataLoader(RangeDataset(4), num_workers=2, **kind_kwargs(kind)))
    workers = watch.started()
    assert len(workers) == 2
    assert len(list(iterator)) == 4
    assert not watch.alive_after(workers, within=5)


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_closing_the_loader_stops_persistent_workers(kind: str) -> None:
    """DataLoader.close() (and its `with` block) stops persistent workers."""
    watch = WorkerWatch(kind)
    kwargs = kind_kwargs(kind)
    with DataLoader(RangeDataset(4), num_workers=2, persistent_workers=True, **kwargs) as loader:
        iterator = iter(loader)
        assert len(list(iterator)) == 4
        workers = watch.started()
        assert len(workers) == 2  # still alive after the epoch
    assert not watch.alive_after(workers, within=5)


SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    sys.path.insert(0, {here!r})
    from data_workers_helpers import SteadyDataset
    from stoker.data import DataLoader

    if __name__ == "__main__":
        mode, method = sys.argv[1], sys.argv[2]
        loader = DataLoader(SteadyDataset(100000, 0.02), num_workers=2,
                            multiprocessing_context=method,
                            persistent_workers=mode == "exit-persistent")
        ITERATOR = iter(loader)
        next(ITERATOR)
        print(json.dumps(ITERATOR.worker_pids), flush=True)
        if mode in ("exit", "exit-persistent"):
            sys.exit(0)
        if mode == "os-exit":
            os._exit(0)
        if mode == "raise":
            raise RuntimeError("training step failed")
        for _ in ITERATOR:
            pass
    """
)


@pytest.mark.parametrize(
    ("mode", "method"),
    [
        ("exit", "fork"),
        ("exit", "spawn"),
        ("exit-persistent", "forkserver"),
        ("raise", "fork"),
        ("interrupt", "fork"),
        ("interrupt", "spawn"),
        ("sigkill", "fork"),
        ("sigkill", "forkserver"),
        ("os-exit", "fork"),
    ],
)
def test_no_worker_survives_its_main_process(mode: str, method: str, tmp_path: Path) -> None:
    """Exit, an uncaught error, Ctrl-C (SIGINT to the group), a killed main: workers end in 5 s."""
    script = tmp_path / "main.py"
    script.write_text(SCRIPT.format(here=SUPPORT))
    # `with` closes the pipes and reaps the child; a child still running is killed first, so
    # a timeout stays this test's failure instead of a ResourceWarning in a later one.
    with subprocess.Popen(
        [sys.executable, str(script), mode, method],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            ready, _, _ = select.select([proc.stdout], [], [], 60)
            assert ready, "the child script printed no worker pids within 60 s"
            assert proc.stdout is not None
            pids = json.loads(proc.stdout.readline())
            assert len(pids) == 2
            if mode == "interrupt":
                os.killpg(proc.pid, signal.SIGINT)
            elif mode == "sigkill":
                os.kill(proc.pid, signal.SIGKILL)
            _, stderr = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert not wait_all_gone(pids, within=5)
    if mode == "interrupt":
        assert "KeyboardInterrupt" in stderr
    elif mode == "raise":
        assert "training step failed" in stderr
    elif mode in ("exit", "exit-persistent", "os-exit"):
        assert proc.returncode == 0, stderr


@pytest.mark.parametrize("kind", WORKER_KINDS)
def test_ctrl_c_while_waiting_closes_the_iterator(kind: str, tmp_path: Path) -> None:
    """KeyboardInterrupt while waiting for a batch propagates and stops the workers at once.

    KeyboardInterrupt while waiting for a batch propagates and stops the workers at once
    (a thread once its current fetch returns).

    Every fetch waits for a marker (30 s at most) that is created only after the interrupt, so
    no batch can arrive first however late the timer thread runs; the main thread sees the
    interrupt at its next wake-up, within a CHECK_INTERVAL.
    """
    release = tmp_path / "release"
    watch = WorkerWatch(kind)
    dataset = GatedDataset(10, gate=None, marker=release)
    iterator = iter(DataLoader(dataset, num_workers=2, **kind_kwargs(kind)))
    workers = watch.started()
    assert len(workers) == 2
    timer = threading.Timer(1.0, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            next(iterator)
    finally:
        timer.cancel()
        release.touch()
    assert iterator.closed
    assert not watch.alive_after(workers, within=5)


def _reaped(pids: list[int], within: float) -> bool:
    """Wait up to ``within`` s until no process of ``pids`` exists, zombies included.

    Wait up to ``within`` s until no process of ``pids`` exists, zombies included (a
    zombie still answers ``kill(pid, 0)``: only a join by the main process removes it).
    """
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        left = []
        for pid in pids:
            try:
                os.kill(pid, 0)
                left.append(pid)
            except ProcessLookupError:
                pass
        if not left:
            return True
        time.sleep(0.02)
    return False


def _hold_exit(worker_id: int) -> None:
    """worker_init_fn: a non-daemon thread keeps the worker's interpreter from exiting for 30 s.

    worker_init_fn: a non-daemon thread keeps the worker's interpreter from exiting for
    30 s after its work is done (Python joins such threads at exit).
    """
    threading.Thread(target=time.sleep, args=(30,), daemon=False).start()


def _fork_holder(worker_id: int) -> None:
    """worker_init_fn: a process forked by the worker holds its pipes for 3 s."""
    if os.fork() == 0:
        time.sleep(3)
        os._exit(0)


def test_the_end_of_an_epoch_waits_for_no_worker_stuck_in_its_exit() -> None:
    """Exhausting the iterator returns once the workers closed their pipes, not after they exit.

    Exhausting the iterator returns once the workers have closed their pipes, not after
    their processes exit: a worker whose interpreter cannot exit (a non-daemon thread) is
    SIGTERMed in the background after the stop grace, and joined (no zombie left).
    """
    from stoker.data._workers.timeouts import STOP_GRACE

    loader = DataLoader(RangeDataset(8, 4), batch_size=2, num_workers=2, worker_init_fn=_hold_exit)
    iterator = iter(loader)
    pids = list(iterator.worker_pids)
    assert len([next(iterator) for _ in range(4)]) == 4
    started = time.monotonic()
    assert list(iterator) == []
    assert time.monotonic() - started < STOP_GRACE / 2  # a waited stop takes the grace
    assert _reaped(pids, within=STOP_GRACE + 10)
    assert [w.exitcode for w in iterator._workers] == [-signal.SIGTERM] * 2


def test_a_process_forked_by_a_worker_does_not_hold_up_the_end_of_an_epoch() -> None:
    """A worker's exit ends the wait even if a process it forked holds its result pipe open.

    A process a worker forked holds the worker's result pipe open after the worker is
    gone: the worker's own exit ends the wait, well before that process's.
    """
    loader = DataLoader(
        RangeDataset(8, 4), batch_size=2, num_workers=2, worker_init_fn=_fork_holder
    )
    iterator = iter(loader)
    pids = list(iterator.worker_pids)
    assert len(list(iterator)) == 4
    started = time.monotonic()
    assert list(iterator) == []
    assert time.monotonic() - started < 0.5
    assert _reaped(pids, within=10)


def test_the_end_of_an_epoch_leaves_no_segment_name() -> None:
    """Large batches through slabs: when the epoch's loop ends, every worker has unlinked its names.

    Large batches through slabs: by the time the epoch's loop ends, every worker has
    unlinked its segment names (it does before it closes its pipe).
    """
    loader = DataLoader(RangeDataset(16, 4096), batch_size=8, num_workers=2)
    assert len(list(loader)) == 2
    assert loader.stats()["bytes_in_slabs"] > 0
    assert [n for n in os.listdir("/dev/shm") if n.startswith(f"stoker-data-{os.getpid()}-")] == []


def test_nothing_keeps_the_dataset_alive_after_an_epoch() -> None:
    """Workers stopped in the background hold no reference to the dataset.

    The workers stopped at the end of an epoch in the background hold no reference to the
    dataset: once the loader is dropped, the dataset is freed.
    """
    import gc
    import weakref

    dataset = RangeDataset(8, 4)
    alive = weakref.ref(dataset)
    loader = DataLoader(dataset, batch_size=2, num_workers=2)
    assert len(list(loader)) == 4
    del dataset, loader
    deadline = time.monotonic() + 10
    while alive() is not None and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.05)
    assert alive() is None


def test_ctrl_c_while_the_epoch_ends_still_joins_the_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """KeyboardInterrupt at an epoch's end reaches the caller; the workers are still joined.

    KeyboardInterrupt while the end of an epoch waits for the workers' pipes reaches the
    caller, and the workers are still joined, in the background (no zombie left).
    """
    from stoker.data._workers.process import ProcessPool

    def interrupted(self: Any, grace: float) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(ProcessPool, "_all_hung_up", interrupted)
    iterator = iter(DataLoader(RangeDataset(8, 4), batch_size=2, num_workers=2))
    pids = list(iterator.worker_pids)
    assert len([next(iterator) for _ in range(4)]) == 4
    with pytest.raises(KeyboardInterrupt):
        next(iterator)
    assert _reaped(pids, within=10)
