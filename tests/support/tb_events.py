"""Event files for tests: write them through SummaryWriter or raw, read them back with stoker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from stoker.tensorboard import SummaryWriter, read_events
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
