"""Every time limit of the worker side, in seconds: how long each wait lasts before it looks again.

The loader never waits without a deadline (DESIGN.md, "never hang"): the main process's wait for
replies wakes every :data:`CHECK_INTERVAL` to check its own ``timeout=`` and the workers'
liveness, a process worker's task wait and its watchdog wake every
:data:`PARENT_CHECK_INTERVAL` to check that the main process lives, and shutting a pool down
takes at most :data:`STOP_GRACE` + :data:`KILL_GRACE` (+ :data:`KILL_GRACE` again when SIGTERM
is ignored). The numbers live here, once, so a change is made in one place and the design
documents can name them.
"""

from __future__ import annotations

__all__ = [
    "CHECK_INTERVAL",
    "DEAD_JOIN",
    "HELPER_RECHECK",
    "KILL_GRACE",
    "PARENT_CHECK_INTERVAL",
    "STOP_GRACE",
]

CHECK_INTERVAL = 1.0
"""Longest single wait of the main process for replies before its deadline is checked again."""

PARENT_CHECK_INTERVAL = 0.25
"""Seconds between two checks, in a process worker, that the main process still lives."""

STOP_GRACE = 1.0
"""Seconds a pool's shutdown lets workers (processes or threads) stop on their own."""

KILL_GRACE = 1.0
"""Seconds a process pool waits after SIGTERM (and again after SIGKILL) for workers to exit."""

DEAD_JOIN = 1.0
"""Seconds the main process waits to reap a worker process it found dead."""

HELPER_RECHECK = 0.01
"""How soon the main process looks again while a helper thread writes a large task message."""
