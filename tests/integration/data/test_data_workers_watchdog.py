"""A process worker busy in a long fetch ends, with its segment names, once the main one is gone."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from data_workers_helpers import SUPPORT, wait_all_gone

from stoker.data._workers.shm import segment_name, unlink_segments
from stoker.data._workers.watchdog import PARENT_GONE_EXIT, start_watchdog

pytestmark = [
    pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs /dev/shm"),
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]


# Batches 0 and 1 are large (8 samples of 32 KiB: they travel in slabs) and come at once;
# every later sample sleeps 60 s. The main process never reads a reply, so each worker holds
# the unmapped slab of its first batch while it sleeps in the fetch of its second one.
_MAIN_SCRIPT = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {here!r})
    from data_workers_helpers import SlowTailDataset
    from stoker.data import DataLoader

    if __name__ == "__main__":
        loader = DataLoader(SlowTailDataset(64, fast=16, delay=60.0), batch_size=8,
                            num_workers=2, multiprocessing_context={method!r})
        iterator = iter(loader)
        print(" ".join(str(pid) for pid in iterator.worker_pids), flush=True)
        time.sleep(120)
    """
)


def _segments(main_pid: int, worker_pid: int) -> list[str]:
    prefix = f"stoker-data-{main_pid}-{worker_pid}-"
    return [name for name in os.listdir("/dev/shm") if name.startswith(prefix)]


def _wait(condition: Callable[[], bool], within: float) -> bool:
    deadline = time.monotonic() + within
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


@pytest.mark.parametrize("start_method", ["fork", "spawn", "forkserver"])
def test_worker_stuck_in_getitem_ends_when_the_main_process_is_killed(
    start_method: str, tmp_path: Path
) -> None:
    """SIGKILL on the main process: workers end within 5 s and their names are gone within 10 s.

    SIGKILL on the main process while both workers sleep in dataset[i] holding unmapped
    slabs: no worker lives after 5 s and none of their segment names is left after 10 s.
    """
    script = tmp_path / "main.py"
    script.write_text(_MAIN_SCRIPT.format(here=SUPPORT, method=start_method))
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    workers: list[int] = []
    try:
        assert proc.stdout is not None
        workers = [int(pid) for pid in proc.stdout.readline().split()]
        assert len(workers) == 2, proc.stderr.read() if proc.stderr else "no pids"
        held = _wait(lambda: all(_segments(proc.pid, w) for w in workers), within=20)
        assert held, "each worker should hold a slab the main process never mapped"
        time.sleep(0.3)  # both are now asleep in the fetch of their second batch
        assert wait_all_gone(workers, within=0) == workers
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert wait_all_gone(workers, within=5) == []
        assert _wait(lambda: not any(_segments(proc.pid, w) for w in workers), within=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for pid in wait_all_gone(workers, within=0):  # never leak a worker or its names
            os.kill(pid, signal.SIGKILL)
        wait_all_gone(workers, within=5)
        for pid in workers:
            unlink_segments(proc.pid, pid)
        if proc.stdout is not None:
            proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()


def _orphan(directory: str) -> None:
    """Child: create a segment name of its own, start a watchdog told a wrong parent, sleep."""
    main_pid = os.getppid()
    Path(directory, segment_name(main_pid, os.getpid(), 1)).write_bytes(b"slab")
    start_watchdog(main_pid, parent_pid=-1, interval=0.05, directory=directory)
    time.sleep(30)


def test_the_watchdog_unlinks_the_names_and_exits_with_its_code(tmp_path: Path) -> None:
    """A watchdog finding its parent changed unlinks the worker's names and exits the worker.

    A watchdog that finds its parent changed unlinks the worker's names and calls
    os._exit(PARENT_GONE_EXIT) while the worker's main thread is still sleeping.
    """
    context = multiprocessing.get_context("fork")
    child = context.Process(target=_orphan, args=(str(tmp_path),), daemon=True)
    child.start()
    try:
        child.join(timeout=10)
        assert child.exitcode == PARENT_GONE_EXIT
        assert list(tmp_path.iterdir()) == []
    finally:
        if child.is_alive():
            child.kill()
            child.join(timeout=5)


def _create_after_stop(directory: str) -> None:
    """Child: stop naming, then try to create a segment from another thread; report."""
    from stoker.data._workers.shm import create_segment, stop_naming

    stop_naming()
    thread = threading.Thread(
        target=create_segment, args=("stoker-data-1-2-3", 4096, directory), daemon=True
    )
    thread.start()
    thread.join(0.5)
    os._exit(0 if thread.is_alive() and not os.listdir(directory) else 1)


def test_after_stop_naming_no_thread_creates_a_segment(tmp_path: Path) -> None:
    """Once the watchdog stops naming, a slab being created waits and no name appears.

    The watchdog's first step: once naming is stopped, a slab the worker's main thread
    starts to create waits (the process ends first) and no name appears.
    """
    context = multiprocessing.get_context("fork")
    child = context.Process(target=_create_after_stop, args=(str(tmp_path),), daemon=True)
    child.start()
    child.join(timeout=10)
    assert child.exitcode == 0
    assert list(tmp_path.iterdir()) == []
