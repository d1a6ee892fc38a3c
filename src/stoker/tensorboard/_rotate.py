"""Rotation: when a writer closes its event file and starts the next one.

Rotation (see :class:`Rotation`) closes the current file once it holds ``max_bytes`` or has been
open ``max_secs`` seconds, provided it holds at least one event besides its ``file_version``
record; the next file is created when the next event arrives, so an idle writer makes no empty
files and each file's ``<time>`` is when its first event was written (the names are
:mod:`stoker.tensorboard._names`'s). The writer thread checks the limits after each batch it
writes, so a file can exceed ``max_bytes`` by one batch. A URL log dir rotates by default, so
that events reach the store: ``_destination.FileOptions.rotation`` fills in the defaults of
the destination's kind.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_REMOTE_FILE_BYTES",
    "DEFAULT_REMOTE_FILE_SECS",
    "Rotation",
]

DEFAULT_REMOTE_FILE_BYTES = 32 << 20
"""Default ``max_file_bytes`` of a URL log dir: 32 MiB."""
DEFAULT_REMOTE_FILE_SECS = 120.0
"""Default ``max_file_secs`` of a URL log dir: 120 s, torch's default ``flush_secs``."""


def _limit(value: Any, name: str, default: float | None, example: str) -> float | None:
    """Validate one limit: None means the default, 0 or inf means no limit."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number or None, got {value!r}; pass e.g. {example}")
    if math.isnan(value) or value < 0:
        raise ValueError(
            f"{name} must be >= 0 (0 turns rotation by it off), got {value!r}; pass e.g. {example}"
        )
    if value == 0 or math.isinf(value):
        return None
    return float(value)


@dataclass(frozen=True)
class Rotation:
    """When to close an event file and start the next one; ``None`` limits never trigger.

    Attributes:
        max_bytes: Size in bytes at which a file is rotated.
        max_secs: Seconds after its creation at which a file is rotated.
    """

    max_bytes: float | None = None
    max_secs: float | None = None

    @classmethod
    def from_options(cls, max_file_bytes: Any, max_file_secs: Any, *, remote: bool) -> Rotation:
        """Validate the writer's options and fill in the defaults of a local or URL log dir.

        ``None`` means the default: no rotation for a local log dir, and
        :data:`DEFAULT_REMOTE_FILE_BYTES` / :data:`DEFAULT_REMOTE_FILE_SECS` for a URL log dir;
        ``0`` (or ``math.inf``) turns a limit off.
        """
        return cls(
            _limit(
                max_file_bytes,
                "max_file_bytes",
                DEFAULT_REMOTE_FILE_BYTES if remote else None,
                "64 << 20",
            ),
            _limit(
                max_file_secs, "max_file_secs", DEFAULT_REMOTE_FILE_SECS if remote else None, "300"
            ),
        )

    def due(self, size: int, age: float) -> bool:
        """Tell whether a file of ``size`` bytes, open for ``age`` seconds, must be rotated."""
        return (self.max_bytes is not None and size >= self.max_bytes) or (
            self.max_secs is not None and age >= self.max_secs
        )

    def seconds_left(self, age: float) -> float | None:
        """Seconds until a file open for ``age`` seconds is due by time, or None."""
        if self.max_secs is None:
            return None
        return max(0.0, self.max_secs - age)
