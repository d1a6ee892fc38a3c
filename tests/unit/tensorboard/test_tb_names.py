"""Event file names: unique across writers, sorted in write order, recognised by name."""

from __future__ import annotations

import itertools
import os
import re
import socket
import time
from pathlib import Path

import pytest
from tb_events import event_names

import stoker.tensorboard as stb
from stoker.tensorboard import _names

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

NAME = re.compile(r"events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.(\d+)")


def test_two_writers_in_one_second_get_different_counters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writers opened in the same second by one process differ in the counter part only."""
    monkeypatch.setattr(_names.time, "time", lambda: 1_700_000_000.5)
    writers = [stb.SummaryWriter(tmp_path) for _ in range(3)]
    for writer in writers:
        writer.close()
    matches = [NAME.fullmatch(name) for name in event_names(tmp_path)]
    assert all(matches)
    fields = [m.groups() for m in matches if m]
    assert {(t, h, p) for t, h, p, _ in fields} == {
        ("1700000000", socket.gethostname(), str(os.getpid()))
    }
    assert len({counter for *_, counter in fields}) == 3


def test_a_taken_name_is_skipped_not_appended_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If another writer already has the chosen name, the next counter value is used."""
    monkeypatch.setattr(_names.time, "time", lambda: 1_700_000_000.0)
    monkeypatch.setattr(_names, "_file_counter", itertools.count(5))
    taken = tmp_path / f"events.out.tfevents.1700000000.{socket.gethostname()}.{os.getpid()}.5"
    taken.write_bytes(b"someone else's")
    with stb.SummaryWriter(tmp_path) as writer:
        writer.add_scalar("x", 1.0, 1)
    assert taken.read_bytes() == b"someone else's"
    assert event_names(tmp_path) == sorted([taken.name, taken.name[:-1] + "6"])


def test_reopened_file_sorts_after_the_previous_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """close() then a new event in the same second gives a file whose name sorts later."""
    monkeypatch.setattr(_names.time, "time", lambda: 1_700_000_000.0)
    monkeypatch.setattr(_names, "_file_counter", itertools.count(9))
    writer = stb.SummaryWriter(tmp_path)
    writer.add_scalar("x", 1.0, 1)
    writer.close()
    writer.add_scalar("x", 2.0, 2)
    writer.close()
    first, second = event_names(tmp_path)
    assert first.endswith(".9")
    assert second.endswith(".10")
    assert second.split(".")[3] == "1700000001"


def test_default_hparams_runs_never_share_a_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two add_hparams calls at the same instant get two sub-runs (name, name-1)."""
    monkeypatch.setattr(time, "time", lambda: 1_700_000_000.25)
    with stb.SummaryWriter(tmp_path) as writer:
        writer.add_hparams({"lr": 0.1}, {"acc": 0.5})
        writer.add_hparams({"lr": 0.2}, {"acc": 0.7})
    subruns = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert subruns == ["1700000000.25", "1700000000.25-1"]
    assert all(len(event_names(tmp_path / name)) == 1 for name in subruns)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("events.out.tfevents.1700000000.host.1.0", True),
        ("run/events.out.tfevents.1.host.1.0.v2", True),
        ("s3://bucket/run/events.out.tfevents.1.h.2.3", True),
        ("s3://bucket/run/my.tfevents.file/", True),
        ("events.out.tfevents.1.host.profile-empty", False),
        ("run/events.out.tfevents.1.h.1.0.profile-empty", False),
        ("projector_config.pbtxt", False),
        ("tfevents/metadata.tsv", False),
    ],
)
def test_event_files_are_recognised_by_name(path: str, expected: bool) -> None:
    """A name containing tfevents is an event file, but for the profiler's .profile-empty."""
    assert _names.is_event_file(path) is expected
