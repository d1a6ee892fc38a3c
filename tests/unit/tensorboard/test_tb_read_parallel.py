"""Runs read by forked worker processes: a killed worker, a worker's error, cleanup."""

from __future__ import annotations

import ast
import multiprocessing
import multiprocessing.connection
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from stoker.tensorboard import EventFileError, Reader, SummaryWriter
from stoker.tensorboard._read import parallel
from stoker.tensorboard._read.run import RunData

RUNS = 6


@pytest.fixture
def logdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Six runs of a few scalars each, in a process the reader may fork (threads other tests
    left behind would make it read in-process; that is tested in test_tb_read_reader.py)."""
    for index in range(RUNS):
        with SummaryWriter(str(tmp_path / f"run{index}")) as writer:
            for step in range(50):
                writer.add_scalar("loss", float(index * 100 + step), step)
    monkeypatch.setattr(parallel.threading, "active_count", lambda: 1)
    return tmp_path


def _in_workers(monkeypatch: pytest.MonkeyPatch, action: Callable[[RunData, str], None]) -> None:
    """Make RunData.load call ``action(run, "before")`` and ``action(run, "after")`` around
    the read, in worker processes only (the fork copies the patch)."""
    parent = os.getpid()
    original = RunData.load

    def load(self: RunData) -> int:
        if os.getpid() != parent:
            action(self, "before")
        count = original(self)
        if os.getpid() != parent:
            action(self, "after")
        return count

    monkeypatch.setattr(RunData, "load", load)


def _held(message: str) -> list[str]:
    found = re.search(r"held runs (\[[^\]]*\])", message)
    assert found is not None, message
    held: list[str] = ast.literal_eval(found.group(1))
    return held


@pytest.mark.parametrize("moment", ["before", "after"])
@pytest.mark.parametrize("victim", ["run0", "run4"])
def test_a_worker_killed_raises_naming_its_signal_and_the_runs_it_held(
    logdir: Path, monkeypatch: pytest.MonkeyPatch, moment: str, victim: str
) -> None:
    """A worker SIGKILLed before or after reading a run (its first one, or one dealt after it
    sent others back) raises EventFileError naming the worker, SIGKILL and the runs it held,
    the victim first and no run it had sent back; no worker is left running."""

    def kill(run: RunData, now: str) -> None:
        if run.name == victim and now == moment:
            os.kill(os.getpid(), signal.SIGKILL)

    _in_workers(monkeypatch, kill)
    with pytest.raises(EventFileError) as raised:
        Reader(logdir, workers=2)
    message = str(raised.value)
    found = re.match(r"reader worker [01] \(pid (\d+)\) was killed by signal SIGKILL", message)
    assert found is not None, message
    assert int(found.group(1)) != os.getpid()
    held = _held(message)
    assert held[0] == victim
    assert all(int(name[3:]) > int(victim[3:]) for name in held[1:])  # dealt in order
    assert "workers=1" in message  # the way out
    assert multiprocessing.active_children() == []


def test_a_worker_killed_holding_nothing_loses_nothing(
    logdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker SIGKILLed once every run it held came back (the other may still be reading)
    costs no run: the read goes on and every run is returned."""
    original = parallel._Pool._take
    killed: list[int] = []

    def take(self: parallel._Pool, worker: parallel._Worker, reply: object) -> None:
        original(self, worker, reply)  # type: ignore[arg-type]
        if not killed and not worker.held:  # all dealt, and all of this worker's back
            pid = worker.process.pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            assert multiprocessing.connection.wait([worker.process.sentinel], 30)
            killed.append(pid)

    monkeypatch.setattr(parallel._Pool, "_take", take)
    reader = Reader(logdir, workers=2)
    assert killed
    assert reader.runs == [f"run{index}" for index in range(RUNS)]
    assert [reader.scalars("loss", run).value[0] for run in reader.runs] == [
        index * 100.0 for index in range(RUNS)
    ]
    assert multiprocessing.active_children() == []


class _Odd(Exception):
    """An exception that pickles but does not unpickle (its __init__ takes two arguments)."""

    def __init__(self, first: str, second: str) -> None:
        super().__init__(f"{first} {second}")


@pytest.mark.parametrize(
    ("error", "raised", "text"),
    [
        (EventFileError("cannot read event file 'x'"), EventFileError, "cannot read event file"),
        (_Odd("odd", "one"), RuntimeError, r"test_tb_read_parallel._Odd: odd one"),
    ],
    ids=["event-file-error", "not-unpicklable"],
)
def test_a_workers_error_is_raised_here_with_its_traceback(
    logdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    raised: type[Exception],
    text: str,
) -> None:
    """An error raised while a worker reads a run is raised by the reader, as itself (or a
    RuntimeError naming it when it cannot be rebuilt here), chained to the worker's traceback;
    no worker is left running."""

    def fail(run: RunData, now: str) -> None:
        if run.name == "run3" and now == "before":
            raise error

    _in_workers(monkeypatch, fail)
    with pytest.raises(raised, match=text) as caught:
        Reader(logdir, workers=2)
    cause = caught.value.__cause__
    assert isinstance(cause, parallel.WorkerTraceback)
    assert "Traceback (most recent call last)" in str(cause)
    assert "in fail" in str(cause)
    assert multiprocessing.active_children() == []
