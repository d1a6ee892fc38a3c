"""The reader's stores: one kind per root, picked once, and each kind's answers."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from stoker.tensorboard import EventFileError, SummaryWriter
from stoker.tensorboard._read.files import EventFileReader
from stoker.tensorboard._read.stores import LocalStore, RemoteStore, store_of


@pytest.mark.parametrize(
    ("root", "kind"),
    [
        ("runs/exp", LocalStore),
        ("/abs/runs", LocalStore),
        ("file:///tmp/runs", LocalStore),
        ("s3://bucket/sweep", RemoteStore),
        ("memory://logs", RemoteStore),
        ("gs://b/r/events.out.tfevents.1", RemoteStore),
    ],
)
def test_a_root_gets_the_store_of_its_kind(root: str, kind: type) -> None:
    assert type(store_of(root)) is kind


def test_only_local_files_may_be_read_by_forked_readers() -> None:
    assert store_of("runs").forkable
    assert not store_of("s3://bucket/sweep").forkable


def test_a_local_error_stays_the_systems_and_a_stores_is_explained() -> None:
    err = OSError(5, "Input/output error")
    assert store_of("runs").error("runs/x", err) is None
    wrapped = store_of("s3://bucket/x").error("s3://bucket/x", PermissionError("denied"))
    assert isinstance(wrapped, EventFileError)
    assert "s3://bucket/x" in str(wrapped)
    assert "access was denied" in str(wrapped)


def test_a_missing_root_says_so_and_a_url_says_it_may_be_unreachable(tmp_path: Path) -> None:
    with pytest.raises(EventFileError, match="which does not exist; check the spelling"):
        store_of(str(tmp_path / "nope")).check_root(str(tmp_path / "nope"))
    with pytest.raises(EventFileError, match="does not exist or cannot be reached"):
        store_of("memory://nothing/here").check_root("memory://nothing/here")


def test_a_reader_keeps_its_store_through_a_pickle(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as writer:
        writer.add_scalar("loss", 1.0, 0)
    path = str(next(tmp_path.glob("events.out.tfevents.*")))
    reader = EventFileReader(path)
    records = reader.read_records()
    again = pickle.loads(pickle.dumps(EventFileReader(path)))
    assert again.read_records() == records
    assert len(records) >= 2  # the file version and the scalar
