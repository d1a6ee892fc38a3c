"""Reader over log directories: runs, purge, reload and positions, torch files, DataFrames."""

from __future__ import annotations

import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tb_events import check_removed_after_listing, check_removed_while_read, runs_of_two_files
from tb_loaders import accumulate

from stoker.tensorboard import (
    CorruptRecordWarning,
    EventFileError,
    EventFileReader,
    Reader,
    SummaryWriter,
    read_events,
)
from stoker.tensorboard._proto import frame_many
from stoker.tensorboard._proto import messages as pb

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


@pytest.mark.parametrize("purge", [True, False])
@pytest.mark.parametrize("writer", ["stoker", "torch"])
def test_purge_step_drops_orphaned_points_like_tensorboard(
    tmp_path: Path, purge: bool, writer: str
) -> None:
    """A restart with purge_step=5 hides earlier points with step >= 5, as EventAccumulator does.

    Files are renamed so that the restarted writer's file sorts last, as it does when the
    restart happens in a later second.
    """
    if writer == "torch":
        cls: Any = pytest.importorskip("torch.utils.tensorboard").SummaryWriter
    else:
        cls = SummaryWriter
    first = cls(str(tmp_path / "tmp1"))
    for step in range(10):
        first.add_scalar("x", step, step)
        first.add_text("t", f"old {step}", step)
    first.close()
    second = cls(str(tmp_path / "tmp2"), purge_step=5)
    for step in range(5, 8):
        second.add_scalar("x", 100 + step, step)
    second.close()
    for index, folder in enumerate(("tmp1", "tmp2")):
        (path,) = (tmp_path / folder).iterdir()
        path.rename(tmp_path / f"events.out.tfevents.{index}.test")
        (tmp_path / folder).rmdir()
    reader = Reader(tmp_path, purge=purge)
    series = reader.scalars("x")
    if purge:
        expected = accumulate(tmp_path).Scalars("x")
        assert series.step.tolist() == [e.step for e in expected]
        assert series.value.tolist() == [e.value for e in expected]
        assert series.step.tolist() == [0, 1, 2, 3, 4, 5, 6, 7]
        assert [t.step for t in reader.text("t")] == [0, 1, 2, 3, 4]
    else:
        assert len(series.step) == 13
        assert len(reader.text("t")) == 10


def test_runs_are_found_recursively_and_tags_resolve_by_run(tmp_path: Path) -> None:
    """Nested run directories become runs; a tag in several runs needs run=."""
    for run, offset in (("a", 0.0), ("b/seed1", 10.0), ("b/seed2", 20.0)):
        with SummaryWriter(str(tmp_path / run)) as writer:
            writer.add_scalar("loss", offset, 1)
            writer.add_scalar(f"only_{run.replace('/', '_')}", 1.0, 1)
    with SummaryWriter(str(tmp_path / "c")) as writer:
        writer.add_scalars("m", {"train": 1.0, "val": 2.0}, 3)
    reader = Reader(tmp_path)
    assert reader.runs == ["a", "b/seed1", "b/seed2", "c", "c/m_train", "c/m_val"]
    assert reader.scalars("loss", run="b/seed2").value.tolist() == [20.0]
    assert reader.scalars("only_b_seed1").value.tolist() == [1.0]
    assert reader.scalars("m", run="c/m_val").value.tolist() == [2.0]
    with pytest.raises(EventFileError, match="several runs"):
        reader.scalars("loss")
    with pytest.raises(EventFileError, match="scalars tags there"):
        reader.scalars("missing")
    with pytest.raises(EventFileError, match="run must be one of"):
        reader.scalars("loss", run="nope")
    assert Reader(tmp_path / "a").runs == ["."]
    (single,) = (tmp_path / "b" / "seed1").iterdir()
    assert Reader(single).scalars("loss").value.tolist() == [10.0]


def test_reload_reads_appended_points_and_positions_resume(tmp_path: Path) -> None:
    """reload() adds what a live writer flushed; a reader resumed from positions sees only that."""
    writer = SummaryWriter(str(tmp_path))
    try:
        writer.add_scalar("x", 1.0, 1)
        writer.flush()
        reader = Reader(tmp_path)
        saved = reader.positions()
        assert reader.scalars("x").step.tolist() == [1]
        writer.add_scalar("x", 2.0, 2)
        writer.add_scalar("y", 3.0, 2)
        writer.flush()
        assert reader.reload() == 2
        assert reader.scalars("x").step.tolist() == [1, 2]
        resumed = Reader(tmp_path, positions=saved)
        assert resumed.scalars("x").step.tolist() == [2]
        assert resumed.tags()["scalars"] == ["x", "y"]
        as_offsets = {os.path.relpath(path): pos.offset for path, pos in saved.items()}
        assert Reader(tmp_path, positions=as_offsets).scalars("x").step.tolist() == [2]
    finally:
        writer.close()


def test_torch_writer_files_read_the_same_as_stokers(tmp_path: Path) -> None:
    """Files written by torch's SummaryWriter read back with the same values as stoker's."""
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    rng = np.random.default_rng(3)
    values = rng.normal(size=50)
    hist = rng.normal(size=100)
    writers = {"torch": torch_tb.SummaryWriter, "stoker": SummaryWriter}
    for name, cls in writers.items():
        writer = cls(str(tmp_path / name))
        for step, value in enumerate(values):
            writer.add_scalar("s", float(value), step)
        writer.add_scalar("n", 0.5, 1, new_style=True)
        writer.add_histogram("h", hist, 2)
        writer.add_text("t", "words", 3)
        writer.close()
    reader = Reader(tmp_path)
    for tag in ("s", "n"):
        ours, theirs = (reader.scalars(tag, run=run) for run in ("stoker", "torch"))
        assert ours.step.tolist() == theirs.step.tolist()
        assert ours.value.tolist() == theirs.value.tolist()
    torch_scalars = accumulate(tmp_path / "torch").Scalars("s")
    assert reader.scalars("s", run="torch").value.tolist() == [e.value for e in torch_scalars]
    ours_h, theirs_h = (reader.histograms("h", run=run)[0] for run in ("stoker", "torch"))
    assert ours_h.bucket.tolist() == theirs_h.bucket.tolist()
    assert reader.text("t", run="torch")[0].text == "words"


def test_read_events_walks_raw_events_in_order(tmp_path: Path) -> None:
    """read_events yields the file_version event first, then the events with their fields."""
    with SummaryWriter(str(tmp_path)) as writer:
        writer.add_scalar("x", 2.0, 7)
    events = list(read_events(tmp_path))
    assert events[0].message["file_version"] == "brain.Event:2"
    assert events[0].offset == 0
    assert events[-1].step == 7
    assert events[-1].message["summary"]["value"][0]["simple_value"] == 2.0
    assert {event.run for event in events} == {"."}


def test_valid_frame_around_a_malformed_event_warns_and_skips(tmp_path: Path) -> None:
    """A record whose checksums hold but whose payload is no Event is skipped with a warning."""
    good = pb.EVENT.encode({"step": 2, "summary": {"value": [{"tag": "x", "simple_value": 1.0}]}})
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "events.out.tfevents.9").write_bytes(frame_many([b"\x2a\x05ab", good]))
    with pytest.warns(CorruptRecordWarning, match="malformed event"):
        reader = Reader(tmp_path)
    assert reader.scalars("x").step.tolist() == [2]
    with pytest.warns(CorruptRecordWarning, match="malformed event"):
        assert [event.step for event in read_events(tmp_path)] == [2]


def test_dataframe_matches_the_scalar_table(tmp_path: Path) -> None:
    """to_dataframe has one row per point with the scalar_table columns."""
    pytest.importorskip("pandas")
    with SummaryWriter(str(tmp_path)) as writer:
        for step in range(5):
            writer.add_scalar("a", step * 2, step)
            writer.add_scalar("b", -step, step)
    reader = Reader(tmp_path)
    frame = reader.to_dataframe()
    table = reader.scalar_table()
    assert list(frame.columns) == ["run", "tag", "step", "wall_time", "value"]
    assert len(frame) == 10
    for name, column in table.items():
        assert frame[name].tolist() == column.tolist()
    assert frame[frame.tag == "b"].value.tolist() == [0.0, -1.0, -2.0, -3.0, -4.0]


def test_dataframe_without_pandas_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without pandas, to_dataframe raises ImportError naming pandas and the NumPy fallback."""
    with SummaryWriter(str(tmp_path)) as writer:
        writer.add_scalar("x", 1.0, 1)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        Reader(tmp_path).to_dataframe()


def test_missing_path_raises_event_file_error(tmp_path: Path) -> None:
    """A path that does not exist raises EventFileError naming it; a wrong type raises TypeError."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(EventFileError, match="does not exist"):
            Reader(tmp_path / "nope")
        with pytest.raises(TypeError, match="path must be"):
            Reader(3)  # type: ignore[arg-type]
        with pytest.raises(EventFileError, match="does not exist"):
            read_events(tmp_path / "nope")


def test_a_process_with_other_threads_reads_its_runs_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While another thread runs, workers=2 forks nothing and reads every run in this process.

    While another thread runs, workers=2 forks nothing: a fork would copy that thread's
    locks in whatever state they are; every run is read in this process.
    """
    import threading

    from stoker.tensorboard._read.run import RunData

    for index in range(4):
        with SummaryWriter(str(tmp_path / f"run{index}")) as writer:
            writer.add_scalar("loss", float(index), 0)
    original = RunData.load
    pids: list[int] = []

    def load(self: RunData) -> int:
        pids.append(os.getpid())
        return original(self)

    monkeypatch.setattr(RunData, "load", load)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        reader = Reader(tmp_path, workers=2)
    finally:
        stop.set()
        thread.join()
    assert pids == [os.getpid()] * 4
    assert [reader.scalars("loss", run).value.tolist() for run in reader.runs] == [
        [0.0],
        [1.0],
        [2.0],
        [3.0],
    ]


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_bad_worker_counts_are_refused(tmp_path: Path, workers: Any) -> None:
    """``workers`` must be an int >= 1 or None; the error names the value."""
    with SummaryWriter(str(tmp_path)) as writer:
        writer.add_scalar("loss", 1.0, 0)
    with pytest.raises(ValueError, match=f"workers must be an int >= 1 or None.*{workers!r}"):
        Reader(tmp_path, workers=workers)


def test_worker_count_follows_the_usable_cpus_where_affinity_is_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without os.sched_getaffinity (macOS), a large log dir gets one worker per CPU.

    Without os.sched_getaffinity (macOS), a large log dir gets one worker per CPU; a small
    one, or a single run, is read in-process.
    """
    from stoker.tensorboard._read import parallel
    from stoker.tensorboard._read.run import RunData

    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    monkeypatch.setattr(parallel.threading, "active_count", lambda: 1)
    runs = [RunData(f"run{index}") for index in range(5)]
    monkeypatch.setattr(parallel, "pending_bytes", lambda runs: parallel.PARALLEL_MIN_BYTES)
    assert parallel.worker_count(None, runs) == 3
    assert parallel.worker_count(None, runs[:1]) == 1
    assert parallel.worker_count(2, runs) == 2
    monkeypatch.setattr(parallel, "pending_bytes", lambda runs: parallel.PARALLEL_MIN_BYTES - 1)
    assert parallel.worker_count(None, runs) == 1


def _set_progress(file: Path, progress: Any) -> None:
    from stoker.tensorboard import EventFileReader

    EventFileReader(file).progress = progress


@pytest.mark.parametrize("progress", [3, "bar", [print]])
@pytest.mark.parametrize(
    "give",
    [
        lambda file, progress: Reader(file.parent, progress=progress),
        lambda file, progress: EventFileReader(file, progress=progress),
        _set_progress,
    ],
    ids=["Reader", "EventFileReader", "EventFileReader.progress"],
)
def test_a_progress_that_is_not_callable_is_refused(
    tmp_path: Path, progress: Any, give: Any
) -> None:
    """``progress`` must be a callable or None: a TypeError names the value, before any read."""
    with SummaryWriter(str(tmp_path)) as writer:
        writer.add_scalar("loss", 1.0, 0)
    (file,) = tmp_path.iterdir()
    expected = "progress must be a callable progress(path, bytes read, file size) or None"
    with pytest.raises(TypeError, match=re.escape(f"{expected}, got {progress!r}")):
        give(file, progress)


# with two worker processes: tests/integration/tensorboard/test_tb_read_reader_workers.py
@pytest.mark.parametrize("workers", [1])
@pytest.mark.parametrize("what", ["file", "run"])
def test_a_file_or_run_removed_after_listing_is_a_warning_and_the_rest_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int, what: str
) -> None:
    """An event file or run removed between listing and reading is one warning per file."""
    check_removed_after_listing(tmp_path, monkeypatch, workers, what)


# with two worker processes: tests/integration/tensorboard/test_tb_read_reader_workers.py
@pytest.mark.parametrize("workers", [1])
def test_a_file_removed_while_it_is_read_keeps_what_was_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """A file removed after its first piece was read keeps that piece's points, with a warning."""
    check_removed_while_read(tmp_path, monkeypatch, workers)


def test_read_events_skips_a_file_removed_after_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """read_events warns about a file removed after the listing and walks the others."""
    from stoker.tensorboard._read import reader as module

    runs_of_two_files(tmp_path)
    gone = min((tmp_path / "b").iterdir())
    original = module.find_event_files

    def listing(*args: Any) -> dict[str, list[str]]:
        found = original(*args)
        gone.unlink()
        return found

    monkeypatch.setattr(module, "find_event_files", listing)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        events = list(read_events(tmp_path))
    assert [str(item.message) for item in caught] == [
        f"{str(gone)!r}: skipped, it was removed after the log dir was listed"
    ]
    assert sorted({event.path for event in events}) == sorted(
        str(path) for path in tmp_path.glob("*/*tfevents*")
    )
