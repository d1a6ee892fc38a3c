"""Purge events: how a run restarted from a checkpoint tells TensorBoard to hide orphaned points.

``SummaryWriter(purge_step=S)`` starts its first file with these events. TensorBoard's Python
loaders drop points with ``step >= S`` read before a ``SessionLog`` START at step ``S``, but the
plugin loader (``--load_fast=false``) ignores the first START of a run. Torch writes one; a
second one at the same step makes both loaders purge (the Rust loader drops re-written steps by
itself).
"""

from __future__ import annotations

from stoker.tensorboard._proto import EVENT, FILE_VERSION, SESSION_START

__all__ = ["purge_events"]


def purge_events(step: int, wall_time: float) -> list[bytes]:
    """Return the encoded events that purge points at or after ``step``: torch's, then one more."""
    version = EVENT.encode({"wall_time": wall_time, "step": step, "file_version": FILE_VERSION})
    start = EVENT.encode(
        {"wall_time": wall_time, "step": step, "session_log": {"status": SESSION_START}}
    )
    return [version, start, start]
