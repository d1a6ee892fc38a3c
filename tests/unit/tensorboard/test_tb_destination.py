"""URL log dirs on fsspec's in-memory filesystem: staging, rotation, single uploads, the store."""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("fsspec")
from tb_loaders import tb_events, tb_scalars
from tb_stores import CountingMemoryFS, download, fresh_stores, remote_files

import stoker.tensorboard as stb
from stoker.tensorboard import _destination, _remote

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

NAME = re.compile(r"events\.out\.tfevents\.(\d{10})\.[^.]+\.(\d+)\.(\d+)")


@pytest.fixture(autouse=True)
def clean_stores() -> Iterator[None]:
    """Every test starts and ends with empty in-memory stores."""
    yield from fresh_stores()


def test_url_log_dir_uploads_closed_files_that_tensorboard_reads(tmp_path: Path) -> None:
    """Events written to memory:// arrive in the store and TensorBoard reads them back."""
    stage = tmp_path / "stage"
    with stb.SummaryWriter("memory://bucket/run", staging_dir=stage) as writer:
        assert writer.get_logdir() == "memory://bucket/run"
        for step in range(50):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
        writer.add_text("note", "hello", 3)
        (staged,) = stage.iterdir()
        assert remote_files("memory://bucket/run") == []
    assert list(stage.iterdir()) == []
    (name,) = remote_files("memory://bucket/run")
    assert NAME.fullmatch(name.rsplit("/", 1)[1])
    local = download("memory://bucket/run", tmp_path / "copy")
    points = tb_scalars(local, "loss")
    assert [step for step, _ in points] == list(range(50))
    np.testing.assert_allclose([v for _, v in points], [1.0 / (s + 1) for s in range(50)])
    assert not staged.exists()


@pytest.mark.parametrize("where", ["memory", "local"])
def test_rotation_by_size_keeps_every_point_once_in_name_order(where: str, tmp_path: Path) -> None:
    """Rotated files each start with file_version, and name order is write order."""
    url = "memory://bucket/rot" if where == "memory" else str(tmp_path / "rot")
    with stb.SummaryWriter(url, max_file_bytes=1024) as writer:
        for step in range(400):
            writer.add_scalar("x", float(step), step)
            if step % 20 == 19:
                writer.flush()
    local = download(url, tmp_path / "copy") if where == "memory" else Path(url)
    names = sorted(path.name for path in local.iterdir())
    assert len(names) >= 5
    steps: list[int] = []
    stamps = []
    for name in names:
        events = tb_events(local / name)
        assert events[0].file_version == "brain.Event:2"
        assert all(not event.file_version for event in events[1:])
        steps += [event.step for event in events if event.HasField("summary")]
        match = NAME.fullmatch(name)
        assert match
        stamps.append(int(match.group(1)))
    assert steps == list(range(400))
    assert stamps == sorted(set(stamps))
    assert [step for step, _ in tb_scalars(local, "x")] == list(range(400))


def test_flush_uploads_nothing_and_each_closed_file_is_uploaded_once(tmp_path: Path) -> None:
    """flush() never uploads a growing file; rotation and close() upload each file once."""
    writer = stb.SummaryWriter(
        "countmem://b/run", max_file_bytes=0, max_file_secs=0, staging_dir=tmp_path
    )
    (stage,) = tmp_path.iterdir()
    sizes = []
    for step in range(30):
        writer.add_scalar("x", step, step)
        writer.flush()
        sizes.append(sum(p.stat().st_size for p in stage.iterdir()))
    assert CountingMemoryFS.puts == []
    assert sizes == sorted(sizes)
    assert sizes[0] < sizes[-1]
    writer.close()
    assert len(CountingMemoryFS.puts) == 1

    CountingMemoryFS.puts.clear()
    with stb.SummaryWriter("countmem://b/rotated", max_file_bytes=400) as writer:
        for step in range(200):
            writer.add_scalar("x", step, step)
            writer.flush()
            for _ in range(3):
                writer.flush()
    files = remote_files("countmem://b/rotated")
    assert len(files) > 5
    assert sorted(CountingMemoryFS.puts) == files
    assert len(set(CountingMemoryFS.puts)) == len(CountingMemoryFS.puts)


def test_time_rotation_publishes_events_of_an_open_idle_writer(tmp_path: Path) -> None:
    """With max_file_secs, events reach the store before close(), and idling adds no files."""
    writer = stb.SummaryWriter("countmem://b/idle", max_file_secs=0.3, staging_dir=tmp_path)
    try:
        writer.add_scalar("x", 7.0, 1)
        deadline = time.monotonic() + 10
        while not CountingMemoryFS.puts and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(CountingMemoryFS.puts) == 1
        local = download("countmem://b/idle", tmp_path / "copy")
        assert tb_scalars(local, "x") == [(1, 7.0)]
        time.sleep(0.8)
        assert len(CountingMemoryFS.puts) == 1
        writer.add_scalar("x", 8.0, 2)
    finally:
        writer.close()
    assert len(CountingMemoryFS.puts) == 2
    local = download("countmem://b/idle", tmp_path / "copy2")
    assert tb_scalars(local, "x") == [(1, 7.0), (2, 8.0)]


def test_failed_upload_keeps_the_file_and_close_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the store refuses stays staged, and close() raises naming it."""
    monkeypatch.setattr(_destination, "_BACKOFF", 0.0)
    writer = stb.SummaryWriter("failmem://b/run", staging_dir=tmp_path)
    writer.add_scalar("x", 1.0, 1)
    with pytest.raises(RuntimeError, match="could not upload 1 event file") as info:
        writer.close()
    assert isinstance(info.value.__cause__, ConnectionError)
    (stage,) = tmp_path.iterdir()
    (kept,) = stage.iterdir()
    assert kept.name in str(info.value)
    assert [e.step for e in tb_events(kept) if e.HasField("summary")] == [1]


def test_local_log_dirs_use_no_staging(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Paths and file:// URLs write straight into the directory, with no temp dir."""

    def no_temp(*args: Any, **kwargs: Any) -> str:
        raise AssertionError("a local log dir must not be staged")

    monkeypatch.setattr(tempfile, "mkdtemp", no_temp)
    for logdir in (str(tmp_path / "plain"), f"file://{tmp_path / 'url'}"):
        with stb.SummaryWriter(logdir) as writer:
            writer.add_scalar("x", 1.0, 1)
            writer.flush()
            (path,) = Path(_remote.local_path(logdir)).iterdir()
            assert [e.step for e in tb_events(path) if e.HasField("summary")] == [1]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"max_file_bytes": -1}, ValueError, "max_file_bytes must be >= 0"),
        ({"max_file_bytes": "1M"}, TypeError, "max_file_bytes must be a number"),
        ({"max_file_secs": float("nan")}, ValueError, "max_file_secs must be >= 0"),
        ({"max_file_secs": True}, TypeError, "max_file_secs must be a number"),
        ({"storage_options": {"anon": True}}, ValueError, "storage_options must be None"),
    ],
)
def test_bad_options_raise_before_anything_is_written(
    tmp_path: Path, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    """Invalid rotation or storage options on a local dir raise and create no file."""
    with pytest.raises(error, match=match):
        stb.SummaryWriter(tmp_path / "run", **kwargs)
    assert not (tmp_path / "run").exists()


def test_subruns_and_projector_files_go_to_the_store(tmp_path: Path) -> None:
    """add_scalars and add_hparams sub-runs and add_embedding files all land in the store."""
    url = "memory://bucket/exp"
    for tag in ("first", "second"):
        with stb.SummaryWriter(url, staging_dir=tmp_path) as writer:
            writer.add_scalars("m", {"a": 1.0, "b": 2.0}, 0)
            writer.add_hparams({"lr": 0.1}, {"acc": 0.5})
            writer.add_embedding(np.eye(3), metadata=["p", "q", "r"], tag=tag)
    assert list(tmp_path.iterdir()) == []
    local = download(url, tmp_path / "copy")
    config = (local / "projector_config.pbtxt").read_text()
    assert config.count("embeddings {") == 2
    assert config.index('"first:00000"') < config.index('"second:00000"')
    for tag in ("first", "second"):
        assert (local / "00000" / tag / "tensors.tsv").read_text() == (
            "1.0\t0.0\t0.0\n0.0\t1.0\t0.0\n0.0\t0.0\t1.0\n"
        )
    assert tb_scalars(local / "m_a", "m") == [(0, 1.0), (0, 1.0)]
    hparam_runs = [
        p for p in local.iterdir() if p.is_dir() and p.name[0].isdigit() and "." in p.name
    ]
    assert len(hparam_runs) == 2
    for run in hparam_runs:
        assert tb_scalars(run, "acc") == [(0, 0.5)]
