"""Runs read by forked worker processes: a killed worker, a worker's error, cleanup."""

from __future__ import annotations

import ast
import io
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
    """Six runs of a few scalars each, in a process the reader may fork.

    Six runs of a few scalars each, in a process the reader may fork (threads other tests
    left behind would make it read in-process; that is tested in test_tb_read_reader.py).
    """
    for index in range(RUNS):
        with SummaryWriter(str(tmp_path / f"run{index}")) as writer:
            for step in range(50):
                writer.add_scalar("loss", float(index * 100 + step), step)
    monkeypatch.setattr(parallel.threading, "active_count", lambda: 1)
    return tmp_path


def _reader_children() -> list[multiprocessing.process.BaseProcess]:
    """This process's live reader workers (a loader worker an earlier test left is not ours)."""
    return [p for p in multiprocessing.active_children() if p.name.startswith("stoker-reader-")]


def _in_workers(monkeypatch: pytest.MonkeyPatch, action: Callable[[RunData, str], None]) -> None:
    """Make RunData.load call ``action`` before and after the read, in worker processes only.

    Make RunData.load call ``action(run, "before")`` and ``action(run, "after")`` around
    the read, in worker processes only (the fork copies the patch).
    """
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
    """A worker SIGKILLed while holding runs raises EventFileError naming it and its runs.

    A worker SIGKILLed before or after reading a run (its first one, or one dealt after it
    sent others back) raises EventFileError naming the worker, SIGKILL and the runs it held,
    the victim first and no run it had sent back; no worker is left running.
    """

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
    assert _reader_children() == []


def test_a_worker_killed_holding_nothing_loses_nothing(
    logdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker SIGKILLed once every run it held came back costs no run.

    A worker SIGKILLed once every run it held came back (the other may still be reading)
    costs no run: the read goes on and every run is returned.
    """
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
    assert _reader_children() == []


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
    """An error raised while a worker reads a run is raised by the reader, as itself.

    An error raised while a worker reads a run is raised by the reader, as itself (or a
    RuntimeError naming it when it cannot be rebuilt here), chained to the worker's traceback;
    no worker is left running.
    """

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
    assert _reader_children() == []


class _Recorder:
    """A progress callback that no pickle can carry: it holds an open text file.

    A progress callback that no pickle can carry: it holds an open text file, as the CLI's
    holds sys.stderr (and a lambda would do too).
    """

    def __init__(self, stream: io.TextIOWrapper) -> None:
        self.stream = stream
        self.calls: list[tuple[int, str, int, int]] = []

    def __call__(self, path: str, done: int, total: int) -> None:
        self.calls.append((os.getpid(), path, done, total))


def test_any_progress_callable_is_called_here_as_if_read_here(
    logdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A progress callable that cannot be pickled works with workers.

    A progress callable that cannot be pickled works with workers: each call a worker makes
    is made in this process, the same calls as a read in this process makes; a later reload
    read here calls it too (workers' runs get it back). It was a TypeError or PicklingError.
    """
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(parallel, "usable_cpu_count", lambda: 2)
    with (tmp_path / "notes.txt").open("w") as stream:
        here, there = _Recorder(stream), _Recorder(stream)
        Reader(logdir, progress=here, workers=1)
        reader = Reader(logdir, progress=there)  # workers=None: two, as for a large log dir
        assert sorted(there.calls) == sorted(here.calls)
        files = sorted(str(path) for path in logdir.glob("run*/*tfevents*"))
        assert sorted(call[1] for call in there.calls) == files  # one window each
        assert all(call[0] == os.getpid() and call[2] == call[3] > 0 for call in there.calls)
        monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 1 << 40)  # the reload: read here
        with SummaryWriter(str(logdir / "run2")) as writer:
            writer.add_scalar("loss", 9.0, 99)
        there.calls.clear()
        assert reader.reload() > 0
        (new,) = {str(path) for path in (logdir / "run2").iterdir()} - set(files)
        size = os.path.getsize(new)
        assert there.calls == [(os.getpid(), new, size, size)]  # the one file with news


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("error", [RuntimeError("progress bar broke"), BrokenPipeError(32, "x")])
def test_an_error_raised_by_progress_ends_the_read_with_that_error(
    logdir: Path, workers: int, error: Exception
) -> None:
    """An error the progress callable raises is raised by the reader; no worker is left running.

    An error the progress callable raises (an OSError too: no worker died) is raised by the
    reader, in this process or while workers read, and no worker is left running.
    """

    def progress(path: str, done: int, total: int) -> None:
        raise error

    with pytest.raises(type(error)) as raised:
        Reader(logdir, progress=progress, workers=workers)
    assert raised.value is error
    assert _reader_children() == []
