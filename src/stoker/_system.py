"""Facts about the machine this process runs on, asked in one place."""

from __future__ import annotations

import os

__all__ = ["usable_cpu_count"]


def usable_cpu_count() -> int | None:
    """Return how many CPUs this process may run on (its affinity), or None when unknown.

    Affinity is Linux's (``os.sched_getaffinity``); elsewhere it is the machine's CPU count.
    """
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        try:
            return len(affinity(0))
        except OSError:
            pass
    return os.cpu_count()
