"""Shared-memory slabs with real worker processes: correctness, reuse, leaks, signals, start-up."""

from __future__ import annotations

import gc
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import numpy as np
import pytest
from data_workers_helpers import SUPPORT, RangeDataset, wait_all_gone

from stoker.data import DataLoader, SharedMemoryFullError
from stoker.data._workers import shm as shm_module
from stoker.data._workers import slabs as slabs_module

pytestmark = [
    pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs /dev/shm"),
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]

WIDE = 4096  # float64 values per sample: 32 KiB, so a batch of 8 travels in a slab


def _segments(main_pid: int, worker_pid: int | None = None) -> list[str]:
    prefix = f"stoker-data-{main_pid}-" + ("" if worker_pid is None else f"{worker_pid}-")
    return [name for name in os.listdir("/dev/shm") if name.startswith(prefix)]


def _wait_no_segments(main_pid: int, worker_pid: int | None = None, within: float = 10) -> list:
    deadline = time.monotonic() + within
    left = _segments(main_pid, worker_pid)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _segments(main_pid, worker_pid)
    return left


def _expected(n: int, batch_size: int) -> list[list[Any]]:
    return [
        [np.asarray(p).tolist() for p in b] for b in DataLoader(RangeDataset(n, WIDE), batch_size)
    ]


@pytest.mark.parametrize("start_method", ["fork", "spawn", "forkserver"])
def test_large_batches_come_through_slabs_equal_to_in_process(start_method: str) -> None:
    """Large batches equal num_workers=0's, arrive as views on slabs, and nothing is left behind."""
    loader = DataLoader(
        RangeDataset(40, WIDE), batch_size=8, num_workers=2, multiprocessing_context=start_method
    )
    got = [[np.asarray(p).tolist() for p in batch] for batch in loader]
    assert got == _expected(40, 8)
    stats = loader.stats()
    assert stats["bytes_in_slabs"] >= 4 * 8 * WIDE * 8  # later batches used slabs
    assert stats["batches_served"] == 5
    assert _segments(os.getpid()) == []


def test_kept_batches_stay_intact_and_slabs_come_back_when_freed() -> None:
    """Holding every batch grows the pool without overwriting; freeing them returns the slabs."""
    loader = DataLoader(
        RangeDataset(96, WIDE), batch_size=8, num_workers=2, persistent_workers=True
    )
    kept = list(loader)
    assert [float(b[0][0, 0]) for b in kept] == [8.0 * i for i in range(12)]
    for i, (values, labels) in enumerate(kept):
        assert np.all(values == np.arange(8 * i, 8 * i + 8)[:, None])
        assert labels.tolist() == list(range(8 * i, 8 * i + 8))
    held = loader.stats()["slabs_in_use"]
    assert held >= 10
    del kept, values, labels
    gc.collect()
    assert loader.stats()["slabs_in_use"] == 0
    again = list(loader)  # the freed slabs are reused for the next epoch
    assert [float(b[0][0, 0]) for b in again] == [8.0 * i for i in range(12)]
    loader.close()


LARGE = 80  # samples of WIDE: a 2.6 MB batch, in slabs of DROP_PAGES_FROM bytes or more


def _resident_shared() -> int:
    """This process's resident shared-memory pages (RssShmem), in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssShmem:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no RssShmem in /proc/self/status")


def _read_pages(values: np.ndarray) -> int:
    """Read one float64 of every 4 KiB page of ``values``; return the page faults it took."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    float(values.reshape(-1)[::512].sum())
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def test_reading_the_next_batch_in_a_cycling_slab_faults_in_no_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A steady pipeline of 2.6 MB batches reads each batch without a page fault.

    A steady pipeline of 2.6 MB batches: the slabs it cycles through stay mapped in the main
    process, so reading a batch takes no page fault (dropping the pages at each release cost
    about 40 faults a batch here, 16 pages each). The pipeline counts as fast whatever this
    machine's pace: no slab is dropped at its release.
    """
    monkeypatch.setattr(slabs_module, "DROP_SHARE", 0.0)
    loader = DataLoader(
        RangeDataset(LARGE * 40, WIDE), batch_size=LARGE, num_workers=1, prefetch_factor=2
    )
    faults = []
    for number, (values, labels) in enumerate(loader):
        assert float(values[-1, -1]) == float(labels[-1]) == LARGE * number + LARGE - 1
        if number >= 10:  # the pool has its slabs
            faults.append(_read_pages(values))
        del values, labels
    assert sorted(faults)[len(faults) // 2] <= 4, faults


def test_slabs_left_idle_leave_the_main_process_resident_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Slabs grown for 12 held batches leave the main process within 2 x IDLE_BATCHES once freed.

    Holding 12 batches grows the pool and the main process's resident shared pages; once
    they are freed, the slabs the worker no longer fills leave them within 2 x IDLE_BATCHES
    batches, while the batches read meanwhile stay correct (none dropped at its release).
    """
    from stoker.data._workers.process import _REAPER

    monkeypatch.setattr(slabs_module, "DROP_SHARE", 0.0)
    # an earlier test's epoch ended without waiting: its slabs leave this process meanwhile
    assert _REAPER.wait_idle(10)
    loader = DataLoader(
        RangeDataset(LARGE * 60, WIDE), batch_size=LARGE, num_workers=1, prefetch_factor=2
    )
    iterator = iter(loader)
    start = _resident_shared()
    held = [next(iterator) for _ in range(12)]
    for values, _ in held:
        _read_pages(values)
    holding = _resident_shared()
    batch = LARGE * WIDE * 8
    assert holding - start >= 10 * batch
    del held, values
    gc.collect()
    for number in range(12, 12 + 2 * slabs_module.IDLE_BATCHES + 4):
        values, labels = next(iterator)
        _read_pages(values)
        assert float(values[0, 0]) == float(labels[0]) == LARGE * number
        del values, labels
    after = _resident_shared()
    assert after <= holding - 6 * batch, (start, holding, after)
    del iterator
    loader.close()


def test_a_full_dev_shm_is_a_clear_error_before_the_first_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With /dev/shm reported full, the first large batch raises SharedMemoryFullError, no crash."""
    monkeypatch.setattr(shm_module, "shm_free_bytes", lambda directory="/dev/shm": 4096)
    loader = DataLoader(
        RangeDataset(16, WIDE), batch_size=8, num_workers=1, multiprocessing_context="fork"
    )
    with pytest.raises(SharedMemoryFullError, match=r"enlarge /dev/shm") as caught:
        next(iter(loader))
    assert "DataLoader worker 0" in str(caught.value)


def test_killed_worker_leaves_no_segment() -> None:
    """SIGKILL on a worker holding fresh slabs: its segment names are gone within 10 s."""
    loader = DataLoader(RangeDataset(200, WIDE), batch_size=8, num_workers=2, prefetch_factor=4)
    iterator = iter(loader)
    next(iterator)
    victim = iterator.worker_pids[0]  # type: ignore[attr-defined]
    time.sleep(0.5)  # let the workers fill the prefetch window with new slabs
    os.kill(victim, signal.SIGKILL)
    with pytest.raises(RuntimeError, match="killed by signal SIGKILL"):
        for _ in iterator:
            pass
    assert _wait_no_segments(os.getpid(), victim) == []
    assert _wait_no_segments(os.getpid()) == []


_MAIN_SCRIPT = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {here!r})
    from data_workers_helpers import RangeDataset
    from stoker.data import DataLoader

    loader = DataLoader(RangeDataset(400, {wide}), batch_size=8, num_workers=2,
                        prefetch_factor=4, multiprocessing_context={method!r})
    iterator = iter(loader)
    batch = next(iterator)
    print(" ".join(str(pid) for pid in iterator.worker_pids), flush=True)
    time.sleep(60)
    """
)


@pytest.mark.parametrize("start_method", ["fork", "forkserver"])
def test_main_process_killed_leaves_no_segment_and_no_worker(start_method: str) -> None:
    """SIGKILL on the main process while workers hold unmapped slabs: all names go within 10 s."""
    script = _MAIN_SCRIPT.format(here=SUPPORT, wide=WIDE, method=start_method)
    with subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        workers = _kill_when_slabs_are_out(proc)
    assert wait_all_gone(workers, within=10) == []
    assert _wait_no_segments(proc.pid) == []


def _kill_when_slabs_are_out(proc: subprocess.Popen[str]) -> list[int]:
    """Wait until the child's workers hold unmapped slabs, SIGKILL it; return the worker pids."""
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        workers = [int(pid) for pid in line.split()]
        assert len(workers) == 2, proc.stderr.read() if proc.stderr else line
        deadline = time.monotonic() + 10
        while not _segments(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _segments(proc.pid), "the workers should hold slabs the main process never mapped"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    return workers


@pytest.mark.parametrize("payload_bytes", [0, 3 << 20])
def test_spawn_pickles_the_dataset_once(
    monkeypatch: pytest.MonkeyPatch, payload_bytes: int
) -> None:
    """With spawn, the dataset is pickled once for all workers, also when larger than a pipe."""
    calls: list[int] = []

    def counting_getstate(self: RangeDataset) -> dict[str, Any]:
        calls.append(1)
        return dict(self.__dict__)

    monkeypatch.setattr(RangeDataset, "__getstate__", counting_getstate, raising=False)
    dataset = RangeDataset(12)
    dataset.blob = b"x" * payload_bytes  # type: ignore[attr-defined]
    loader = DataLoader(dataset, batch_size=4, num_workers=2, multiprocessing_context="spawn")
    assert [b[1].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    assert len(calls) == 1


@pytest.mark.parametrize("module", ["stoker.data", "stoker.torch.data"])
@pytest.mark.parametrize("start_method", ["spawn", "forkserver"])
def test_datasets_holding_tensors_or_locks_reach_every_worker(
    start_method: str, module: str
) -> None:
    """A dataset holding a tensor, Value or Lock works with spawn and forkserver workers.

    A dataset holding a torch tensor, or a multiprocessing Value and Lock of the loader's
    context, starts two spawn or forkserver workers (each gets its own pickle, as torch's do):
    every sample arrives once, and the workers' increments reach the shared Value.
    """
    import importlib
    import multiprocessing

    import torch
    from torch_door_helpers import Counted, TensorHolder

    loader_class = importlib.import_module(module).DataLoader
    context = multiprocessing.get_context(start_method)
    rows = [
        row
        for batch in loader_class(
            TensorHolder(12), batch_size=3, num_workers=2, multiprocessing_context=context
        )
        for row in torch.as_tensor(batch).tolist()
    ]
    assert rows == TensorHolder(12).rows.tolist()
    counted = Counted(context, 12)
    loader = loader_class(counted, batch_size=3, num_workers=2, multiprocessing_context=context)
    assert [i for batch in loader for i in np.asarray(batch).tolist()] == list(range(12))
    assert counted.count.value == 12


def test_the_setup_is_pickled_once_unless_it_holds_per_process_objects() -> None:
    """One setup pickle serves all workers, unless a tensor, Lock, Value or connection is in it.

    The fast start pickles one setup for all workers; a tensor, a Lock, a Value or a
    connection in it makes each worker get its own pickle instead (None here).
    """
    import multiprocessing

    import torch

    from stoker.data._workers.process import ProcessPool
    from stoker.data._workers.protocol import WorkerSetup

    def setup(dataset: Any) -> WorkerSetup:
        return WorkerSetup(dataset, False, True, list, False, 0, 0, 2, None)

    context = multiprocessing.get_context("spawn")
    pickle_once = ProcessPool._pickle_once
    assert isinstance(pickle_once(None, context, setup(list(range(5)))), bytes)  # type: ignore[arg-type]
    reader, writer = context.Pipe()
    for per_process in (torch.zeros(3), context.Lock(), context.Value("i"), reader):
        assert pickle_once(None, context, setup([per_process])) is None  # type: ignore[arg-type]
    reader.close()
    writer.close()


def _pool_setups(workers: int) -> list[Any]:
    from stoker.data._workers.protocol import WorkerSetup

    return [
        WorkerSetup(list(range(100, 120)), False, True, list, False, 0, w, workers, None)
        for w in range(workers)
    ]


def _replies(pool: Any, wanted: int) -> dict[int, Any]:
    got: dict[int, Any] = {}
    deadline = time.monotonic() + 30
    while len(got) < wanted and time.monotonic() < deadline:
        replies, dead = pool.receive(0.5)
        assert dead == []
        got.update((reply.task_id, (worker_id, reply.payload)) for worker_id, reply in replies)
    return got


@pytest.mark.parametrize("kind", ["fork", "spawn", "thread"])
def test_tasks_sent_before_the_workers_start_are_answered_once_they_start(kind: str) -> None:
    """The worker iterator sends an epoch's first window before it starts the workers.

    The worker iterator sends an epoch's first window before it starts the workers: what
    waits in a pipe (behind the pickled setup, with spawn) or a thread's queue is answered.
    """
    import multiprocessing

    from stoker.data._workers.pool import make_pool
    from stoker.data._workers.protocol import Task

    context = None if kind == "thread" else multiprocessing.get_context(kind)
    pool = make_pool(context, _pool_setups(2), "thread" if kind == "thread" else "process")
    try:
        for task_id in range(4):
            pool.send(task_id % 2, Task(task_id, [2 * task_id, 2 * task_id + 1]))
        pool.start()
        got = _replies(pool, 4)
    finally:
        pool.shutdown()
    assert got == {t: (t % 2, [100 + 2 * t, 101 + 2 * t]) for t in range(4)}


@pytest.mark.parametrize("kind", ["fork", "spawn", "thread"])
def test_a_pool_never_started_shuts_down_without_leaking_a_descriptor(kind: str) -> None:
    """A sampler failing at the first window: the unstarted pool closes its pipes, joins nothing.

    A sampler failing while the first window is sent leaves a pool that never started:
    its shutdown closes every pipe it made and joins nothing.
    """
    import multiprocessing

    from stoker.data._workers.pool import make_pool
    from stoker.data._workers.protocol import Task

    context = None if kind == "thread" else multiprocessing.get_context(kind)
    before = len(os.listdir("/proc/self/fd"))
    pool = make_pool(context, _pool_setups(3), "thread" if kind == "thread" else "process")
    pool.send(0, Task(0, [0]))
    pool.shutdown()
    pool.shutdown()
    assert len(os.listdir("/proc/self/fd")) == before
    assert pool.workers == [] if kind != "thread" else all(not t.is_alive() for t in pool.workers)


def _pipe_ends(pid: int) -> dict[int, set[str]]:
    """Pipe inode -> the access modes ("r", "w") in which process ``pid`` holds it."""
    ends: dict[int, set[str]] = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                flags = int(next(line for line in info if line.startswith("flags:")).split()[1], 8)
        except (FileNotFoundError, StopIteration):
            continue
        if target.startswith("pipe:["):
            mode = "w" if flags & os.O_ACCMODE == os.O_WRONLY else "r"
            ends.setdefault(int(target[6:-1]), set()).add(mode)
    return ends


def test_a_forked_worker_holds_no_other_worker_task_pipe_nor_result_pipe_writer() -> None:
    """Each forked worker holds only its own task pipe's reading end and result pipe's writing end.

    Every task pipe exists before the first fork; each forked worker closes the copies it
    got, so it holds the reading end of its own task pipe and the writing end of its result
    pipe, and nothing else of any pool pipe: the main process closing a task pipe reads as end
    of file in its worker, and no worker keeps another's half-written reply from ending.
    """
    import multiprocessing

    from stoker.data._workers.pool import make_pool
    from stoker.data._workers.protocol import Task

    pool: Any = make_pool(multiprocessing.get_context("fork"), _pool_setups(3), "process")
    try:
        for worker_id in range(3):
            pool.send(worker_id, Task(worker_id, [worker_id]))
        pool.start()
        assert len(_replies(pool, 3)) == 3  # every worker is past its start
        task_pipes = [os.fstat(pipe.fileno()).st_ino for pipe in pool.task_pipes]
        result_pipes = [os.fstat(conn.fileno()).st_ino for conn in pool.result_conns]
        for worker_id, pid in enumerate(pool.pids):
            ends = _pipe_ends(pid)
            assert ends.get(task_pipes[worker_id]) == {"r"}
            for other in range(3):
                if other != worker_id:
                    assert task_pipes[other] not in ends, (worker_id, other)
                    assert result_pipes[other] not in ends, (worker_id, other)
            assert ends.get(result_pipes[worker_id]) == {"w"}
    finally:
        pool.shutdown()


def test_importing_stoker_data_imports_what_the_first_fork_needs() -> None:
    """Multiprocessing's fork module is imported with ``stoker.data``, not at a first fork."""
    code = "import sys, stoker.data; print('multiprocessing.popen_fork' in sys.modules)"
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "True"
