"""Reader over log directories read by forked worker processes, as a read here reads them.

Runs read by two workers give the points, positions and warnings a read in this process gives;
an event file or run removed after the listing, or a file removed while it is read, is a
warning while workers read too.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stoker.tensorboard import CorruptRecordWarning, Reader, SummaryWriter

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


def test_runs_read_by_worker_processes_equal_runs_read_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Six runs read by two forked workers give what a read in this process gives.

    Six runs read by two forked workers give the same points, positions and warnings (a
    damaged record in one run, raised again here) as runs read in this process, and both
    readers go on reading what is appended afterwards alike.
    """
    from stoker.tensorboard._read import parallel
    from stoker.tensorboard._read.run import RunData

    rng = np.random.default_rng(2)
    for index in range(6):
        with SummaryWriter(str(tmp_path / f"run{index}")) as writer:
            for step in range(400):
                writer.add_scalar("loss", rng.normal(), step)
                writer.add_scalar("lr", 1 / (step + 1), step)
            writer.add_histogram("w", rng.normal(size=50), 0)
            writer.add_text("note", f"run {index}", 0)
    damaged = sorted((tmp_path / "run3").iterdir())[0]
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    original = RunData.load

    def load(self: RunData) -> int:
        self.loaded_by = os.getpid()  # type: ignore[attr-defined]
        return original(self)

    monkeypatch.setattr(RunData, "load", load)
    # Threads other tests left behind would make the reader refuse to fork (tested below).
    monkeypatch.setattr(parallel.threading, "active_count", lambda: 1)

    def read(workers: int) -> tuple[Reader, list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reader = Reader(tmp_path, workers=workers)
        return reader, [str(item.message) for item in caught]

    here, here_warnings = read(1)
    there, there_warnings = read(2)
    assert there_warnings == here_warnings
    assert len(here_warnings) == 1
    assert "corrupt record" in here_warnings[0]
    pids = {run.loaded_by for run in there._runs.values()}  # type: ignore[attr-defined]
    assert pids  # which worker took which runs varies
    assert os.getpid() not in pids

    def points(reader: Reader) -> list[Any]:
        out: list[Any] = [reader.positions()]
        for run in reader.runs:
            for tag in ("loss", "lr"):
                out.append([column.tolist() for column in reader.scalars(tag, run)])
            out.append([(h.step, h.bucket.tolist()) for h in reader.histograms("w", run)])
            out.append([t.text for t in reader.text("note", run)])
        return out

    assert points(there) == points(here)
    for index in (0, 5):
        with SummaryWriter(str(tmp_path / f"run{index}")) as writer:
            writer.add_scalar("loss", 7.0, 1000)
    assert here.reload() == there.reload() > 0
    assert points(there) == points(here)


def _runs_of_two_files(root: Path) -> None:
    """Three runs; ``b`` has two event files (two writers), ``loss`` 0 in the first, 1 after."""
    for name in ("a", "b", "c"):
        with SummaryWriter(str(root / name)) as writer:
            writer.add_scalar("loss", 0.0, 0)
    with SummaryWriter(str(root / "b"), filename_suffix=".second") as writer:
        writer.add_scalar("loss", 1.0, 1)


def _remove_after_listing(monkeypatch: pytest.MonkeyPatch, remove: Any) -> None:
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


@pytest.mark.parametrize("workers", [2])
@pytest.mark.parametrize("what", ["file", "run"])
def test_a_file_or_run_removed_after_listing_is_a_warning_and_the_rest_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int, what: str
) -> None:
    """An event file or run removed between listing and reading is one warning per file.

    An event file, or a whole run, removed between the listing and the read (in this
    process or while workers read) is one warning per file; every other run and file is read,
    and a run with no file left is not a run. It was an EventFileError, no run returned.
    """
    import shutil

    from stoker.tensorboard._read import parallel

    monkeypatch.setattr(parallel.threading, "active_count", lambda: 1)
    _runs_of_two_files(tmp_path)
    (gone, kept) = sorted((tmp_path / "b").iterdir(), key=lambda path: "second" in path.name)
    removed = [gone] if what == "file" else sorted((tmp_path / "b").iterdir())
    _remove_after_listing(
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


@pytest.mark.parametrize("workers", [2])
def test_a_file_removed_while_it_is_read_keeps_what_was_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
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
