"""Event files for tests: write them through SummaryWriter or raw, read them back with stoker.

The ``check_*`` functions are Reader test bodies about files removed while a log dir is read,
run by the unit tests with ``workers=1`` and by the integration tests with worker processes.
"""

from __future__ import annotations

import re
import shutil
import warnings
from pathlib import Path
from typing import Any

import pytest

from stoker.tensorboard import CorruptRecordWarning, Reader, SummaryWriter, read_events
from stoker.tensorboard._proto import EVENT, file_version_event, frame_many

Calls = list[tuple[str, tuple[Any, ...], dict[str, Any]]]


def write_calls(path: Path, calls: Calls) -> Path:
    """Make SummaryWriter calls ``(method, args, kwargs)`` on a writer of ``path``; return it."""
    with SummaryWriter(str(path)) as writer:
        for name, args, kwargs in calls:
            getattr(writer, name)(*args, **kwargs)
    return path


def write_raw_events(path: Path, events: list[dict[str, Any]]) -> Path:
    """Frame ``Event`` dicts, after a file_version event, into one event file under ``path``."""
    path.mkdir(parents=True, exist_ok=True)
    payloads = [file_version_event(1.0)] + [EVENT.encode(event) for event in events]
    (path / "events.out.tfevents.0.test").write_bytes(frame_many(payloads))
    return path


def file_events(path: Path) -> list[dict[str, Any]]:
    """Decode every event of one file with stoker's own reader (``read_events``)."""
    return [event.message for event in read_events(path)]


def scalar_steps(path: Path, tag: str = "x") -> list[int]:
    """Return the steps of the simple-value scalars tagged ``tag`` in one file."""
    steps = []
    for event in file_events(path):
        for value in event.get("summary", {}).get("value", []):
            if value["tag"] == tag:
                steps.append(event.get("step", 0))
    return steps


def only_file(logdir: Path) -> Path:
    """Return the single event file directly in ``logdir``."""
    (path,) = logdir.glob("events.out.tfevents.*")
    return path


def event_names(logdir: Path) -> list[str]:
    """Names of the event files directly in ``logdir``, sorted."""
    return sorted(p.name for p in logdir.iterdir() if "tfevents" in p.name)


def runs_of_two_files(root: Path) -> None:
    """Three runs; ``b`` has two event files (two writers), ``loss`` 0 in the first, 1 after."""
    for name in ("a", "b", "c"):
        with SummaryWriter(str(root / name)) as writer:
            writer.add_scalar("loss", 0.0, 0)
    with SummaryWriter(str(root / "b"), filename_suffix=".second") as writer:
        writer.add_scalar("loss", 1.0, 1)


def remove_after_listing(monkeypatch: pytest.MonkeyPatch, remove: Any) -> None:
    """Make the reader's next listing of the log dir call ``remove()`` once it is done."""
    from stoker.tensorboard._read import reader as module

    original = module.find_event_files
    pending = [remove]

    def listing(*args: Any) -> dict[str, list[str]]:
        found = original(*args)
        while pending:
            pending.pop()()
        return found

    monkeypatch.setattr(module, "find_event_files", listing)


def check_removed_after_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int, what: str
) -> None:
    """An event file or run removed between listing and reading is one warning per file.

    An event file (``what="file"``), or a whole run (``"run"``), removed between the listing
    and the read (in this process or while workers read) is one warning per file; every other
    run and file is read, and a run with no file left is not a run. It was an EventFileError,
    no run returned.
    """
    from stoker.tensorboard._read import parallel

    monkeypatch.setattr(parallel.threading, "active_count", lambda: 1)
    runs_of_two_files(tmp_path)
    (gone, kept) = sorted((tmp_path / "b").iterdir(), key=lambda path: "second" in path.name)
    removed = [gone] if what == "file" else sorted((tmp_path / "b").iterdir())
    remove_after_listing(
        monkeypatch, gone.unlink if what == "file" else lambda: shutil.rmtree(tmp_path / "b")
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reader = Reader(tmp_path, workers=workers)
    assert [str(item.message) for item in caught] == [
        f"{str(path)!r}: skipped, it was removed after the log dir was listed" for path in removed
    ]
    assert all(item.category is CorruptRecordWarning for item in caught)
    assert reader.runs == (["a", "b", "c"] if what == "file" else ["a", "c"])
    for run in reader.runs:
        expected = [1.0] if run == "b" else [0.0]
        assert reader.scalars("loss", run).value.tolist() == expected
    assert str(gone) not in reader.positions()
    assert (str(kept) in reader.positions()) == (what == "file")


def check_removed_while_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    """A file removed after its first piece was read keeps that piece's points, with a warning.

    A file removed after its first piece was read keeps that piece's points, says so in a
    warning naming the offset reached, and the other runs are read; a later reload goes on.
    """
    from stoker.tensorboard._read import files, parallel
    from stoker.tensorboard._read.run import RunData

    monkeypatch.setattr(parallel.threading, "active_count", lambda: 1)
    for name in ("a", "b"):
        with SummaryWriter(str(tmp_path / name)) as writer:
            for step in range(40):
                writer.add_scalar("loss", float(step), step)
    (victim,) = (tmp_path / "a").iterdir()
    monkeypatch.setattr(files, "READ_PIECE_BYTES", 256)  # pieces of a few records
    original = RunData._ingest

    def ingest(self: RunData, path: str, block: Any) -> None:
        original(self, path, block)
        if path == str(victim) and victim.exists():
            victim.unlink()  # after the first piece

    monkeypatch.setattr(RunData, "_ingest", ingest)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reader = Reader(tmp_path, workers=workers)
    (warning,) = caught
    found = re.fullmatch(
        re.escape(f"{str(victim)!r}: removed; what was read of it (up to offset ")
        + r"(\d+)"
        + re.escape(") is kept, and no more is read"),
        str(warning.message),
    )
    assert found is not None, warning.message
    kept = reader.scalars("loss", "a").step.tolist()
    assert kept == list(range(len(kept)))
    assert 0 < len(kept) < 40
    assert reader.scalars("loss", "b").step.tolist() == list(range(40))
    with SummaryWriter(str(tmp_path / "b")) as writer:
        writer.add_scalar("loss", 99.0, 99)
    assert reader.reload() == 2  # the new file's version record and its point
    assert reader.scalars("loss", "a").step.tolist() == kept
