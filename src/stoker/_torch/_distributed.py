"""``torch.distributed``: the rank and world size of an initialised group, never importing it."""

from __future__ import annotations

import sys

__all__ = ["process_group"]


def process_group() -> tuple[int, int] | None:
    """``(rank, world_size)`` of an initialised ``torch.distributed`` group, else None.

    Only a program that already imported ``torch.distributed`` can have a group, so this never
    imports it.
    """
    dist = sys.modules.get("torch.distributed")
    if dist is None:
        return None
    if not getattr(dist, "is_available", lambda: False)() or not dist.is_initialized():
        return None
    return int(dist.get_rank()), int(dist.get_world_size())
