"""The writers' file options: one frozen object, checked when made, building the destination."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest

from stoker.tensorboard import SummaryWriter
from stoker.tensorboard._destination import FileOptions, LocalDestination
from stoker.tensorboard._rotate import DEFAULT_REMOTE_FILE_BYTES, DEFAULT_REMOTE_FILE_SECS


@pytest.mark.parametrize(
    ("options", "error", "text"),
    [
        ({"max_file_bytes": "big"}, TypeError, "max_file_bytes must be a number or None"),
        ({"max_file_bytes": -1}, ValueError, "max_file_bytes must be >= 0"),
        ({"max_file_secs": math.nan}, ValueError, "max_file_secs must be >= 0"),
        ({"storage_options": ["a"]}, TypeError, "storage_options must be a dict"),
        ({"staging_dir": 5}, TypeError, "staging_dir must be a directory path"),
    ],
)
def test_a_bad_option_is_refused_when_the_writer_is_made(
    tmp_path: Path, options: dict[str, Any], error: type[Exception], text: str
) -> None:
    with pytest.raises(error, match=text):
        FileOptions(**options)
    with pytest.raises(error, match=text):
        SummaryWriter(str(tmp_path / "run"), **options)
    assert not (tmp_path / "run").exists()  # refused before any file was made


def test_the_options_are_frozen_and_travel_as_the_writers_keywords() -> None:
    options = FileOptions(max_file_bytes=1 << 20, staging_dir="/scratch")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_file_bytes = 2  # type: ignore[misc]
    assert options.keywords() == {
        "max_file_bytes": 1 << 20,
        "max_file_secs": None,
        "storage_options": None,
        "staging_dir": "/scratch",
    }
    assert FileOptions(**options.keywords()) == options


def test_the_rotation_defaults_follow_the_destinations_kind(tmp_path: Path) -> None:
    options = FileOptions()
    local = options.destination(str(tmp_path))
    assert isinstance(local, LocalDestination)
    assert not local.remote
    rotation = options.rotation(local)
    assert (rotation.max_bytes, rotation.max_secs) == (None, None)

    class _Remote:
        remote = True

    remote = options.rotation(_Remote())  # type: ignore[arg-type]
    assert (remote.max_bytes, remote.max_secs) == (
        DEFAULT_REMOTE_FILE_BYTES,
        DEFAULT_REMOTE_FILE_SECS,
    )
    assert FileOptions(max_file_bytes=0).rotation(_Remote()).max_bytes is None  # type: ignore[arg-type]


def test_a_local_log_dir_refuses_storage_options(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="storage_options must be None for a local log dir"):
        FileOptions(storage_options={"anon": True}).destination(str(tmp_path))


def test_hparams_sub_runs_are_claimed_through_the_destination(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as writer:
        writer.add_hparams({"lr": 0.1}, {"loss": 1.0})
        writer.add_hparams({"lr": 0.2}, {"loss": 2.0}, run_name="named")
    subruns = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert "named" in subruns
    assert len(subruns) == 2
