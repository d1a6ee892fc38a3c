"""Process-wide hooks: nothing lost at exit or after SIGKILL's flush interval, fork-safe files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from tb_events import only_file, scalar_steps
from tb_subprocess import python_run, wait_status

import stoker.tensorboard as stb

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


_EXIT_SCRIPT = """
import sys
from stoker.tensorboard import SummaryWriter
writer = SummaryWriter(sys.argv[1], max_queue=100000)
for step in range(3000):
    writer.add_scalar("x", float(step), step)
if sys.argv[2] == "raise":
    raise RuntimeError("crash on purpose")
"""


@pytest.mark.parametrize("how", ["normal", "raise"])
def test_exit_without_close_loses_nothing(tmp_path: Path, how: str) -> None:
    """A normal exit or an uncaught exception without close() still writes every event."""
    result = python_run(_EXIT_SCRIPT, str(tmp_path), how)
    assert result.returncode == (1 if how == "raise" else 0), result.stderr
    assert scalar_steps(only_file(tmp_path)) == list(range(3000))


_EXIT_AFTER_FAILURE = """
import os, shutil, sys
from stoker.tensorboard import SummaryWriter
writer = SummaryWriter(sys.argv[1])
# No idle wake-up between the removal and the add below: the add is accepted, and lost at exit.
writer.file_writer.event_writer._state.flush_interval = 3600.0
writer.add_scalar("x", 1.0, 1)
writer.flush()
if sys.argv[2] == "full":
    full = os.open("/dev/full", os.O_WRONLY)
    os.dup2(full, writer.file_writer.event_writer._state.fd)
else:
    shutil.rmtree(sys.argv[1])
writer.add_scalar("x", 2.0, 2)
"""


@pytest.mark.parametrize(
    ("how", "error"), [("full", "No space left on device"), ("removed", "removed")]
)
def test_failed_write_never_reported_warns_on_stderr_at_exit(
    tmp_path: Path, how: str, error: str
) -> None:
    """A program that exits without another call after a failed write still hears of it."""
    logdir = tmp_path / "run"
    result = python_run(_EXIT_AFTER_FAILURE, str(logdir), how)
    assert "RuntimeWarning" in result.stderr, result.stderr
    assert error in result.stderr
    assert "1 event(s) were not written" in result.stderr
    assert "Traceback" not in result.stderr


_KILL_SCRIPT = """
import sys, time
from stoker.tensorboard import SummaryWriter
writer = SummaryWriter(sys.argv[1], max_queue=100000)
for step in range(100):
    writer.add_scalar("x", float(step), step)
time.sleep(5)
print("ready", flush=True)
time.sleep(60)
"""


def test_sigkill_loses_at_most_the_last_second(tmp_path: Path) -> None:
    """Events added well over a flush interval (1 s) before SIGKILL are in the file.

    The child waits 5 s, not just over the interval, so a writer thread woken late on a loaded
    machine still writes in time; a writer that waits for flush_secs (120 s), a full queue or
    exit (which SIGKILL skips) still leaves the file without them.
    """
    process = subprocess.Popen(
        [sys.executable, "-c", _KILL_SCRIPT, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
    finally:
        process.kill()
        process.wait(timeout=10)
        if process.stdout:
            process.stdout.close()
    assert scalar_steps(only_file(tmp_path)) == list(range(100))


def _wait_child(pid: int, timeout: float = 20.0) -> int:
    status = wait_status(pid, timeout)
    if status is not None:
        return os.waitstatus_to_exitcode(status)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError(f"forked child {pid} hung")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_writes_its_own_file_and_never_deadlocks(tmp_path: Path) -> None:
    """Children forked while another thread logs write their own files; the parent's is intact."""
    writer = stb.SummaryWriter(tmp_path, max_queue=50)
    stop = threading.Event()

    def hammer() -> None:
        step = 0
        while not stop.is_set():
            writer.add_scalar("x", 1.0, step)
            step += 1

    thread = threading.Thread(target=hammer)
    thread.start()
    children = []
    try:
        for child in range(4):
            time.sleep(0.02)
            pid = os.fork()
            if pid == 0:  # pragma: no cover - runs in the child
                code = 1
                try:
                    for step in range(10):
                        writer.add_scalar(f"child{child}", float(step), step)
                    writer.close()
                    code = 0
                finally:
                    os._exit(code)
            children.append(pid)
        codes = [_wait_child(pid) for pid in children]
    finally:
        stop.set()
        thread.join(10)
    writer.close()
    assert codes == [0, 0, 0, 0]
    files = {int(p.name.split(".")[5]): p for p in tmp_path.glob("events.out.tfevents.*")}
    assert sorted(files) == sorted([os.getpid(), *children])
    for index, pid in enumerate(children):
        assert scalar_steps(files[pid], f"child{index}") == list(range(10))
        assert scalar_steps(files[pid], "x") == []
    parent_steps = scalar_steps(files[os.getpid()])
    assert parent_steps == list(range(len(parent_steps)))
    assert len(parent_steps) > 0
