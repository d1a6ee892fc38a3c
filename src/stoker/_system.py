"""Facts about this machine and how its processes ended, asked in one place."""

from __future__ import annotations

import os
import signal

__all__ = ["describe_exit", "usable_cpu_count"]


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


def describe_exit(exitcode: int | None) -> str:
    """Say how a process ended, from :attr:`multiprocessing.Process.exitcode`."""
    if exitcode is None:
        return "closed its result pipe but has not exited yet"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"was killed by signal {name} (exit code {exitcode})"
    return f"exited with exit code {exitcode}"
