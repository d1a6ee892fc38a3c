"""``pin_memory=True``: copying each batch's torch tensors into page-locked memory.

Pinning needs torch (already imported by the user: stoker never imports it) and an accelerator,
both asked through :mod:`stoker._torch`; otherwise :func:`pin_plan` warns that it has no effect
and returns None. A batch is pinned after it is yielded by the worker or in-process path,
leaf by leaf: torch tensors (and any object with a ``pin_memory()`` method) are pinned, mappings,
namedtuples, lists and tuples are rebuilt around them, NumPy arrays and everything else pass
unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from stoker import _torch
from stoker._checks import torch_first
from stoker._warn import warn_at_caller

__all__ = ["pin_plan"]


def _pin_tree(data: Any) -> Any:
    if _torch.is_tensor(data):
        return _torch.pin(data)
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, Mapping):
        pinned = {key: _pin_tree(value) for key, value in data.items()}
        try:
            return type(data)(pinned)  # type: ignore[call-arg]
        except TypeError:
            return pinned
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_pin_tree(value) for value in data))
    if isinstance(data, Sequence) and isinstance(data, (list, tuple)):
        return type(data)(_pin_tree(value) for value in data)
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data


def pin_plan(pin_memory: bool, pin_memory_device: str) -> Callable[[Any], Any] | None:
    """Return the function that pins a batch, or None when pinning is off or impossible.

    A non-empty ``pin_memory_device`` warns that it is ignored, as in torch, where the current
    accelerator is always used; pinning without torch or without an accelerator warns that it
    has no effect.
    """
    if not pin_memory:
        return None
    if pin_memory_device:
        warn_at_caller(
            torch_first(
                "pin_memory_device is deprecated, the current accelerator will be used as the "
                f"device,ignore pin_memory_device='{pin_memory_device}'.",
                "pinned memory always targets the current accelerator; drop the argument",
            ),
        )
    if _torch.loaded() is None or not _torch.accelerator_available():
        reason = (
            "torch is not imported" if _torch.loaded() is None else "no accelerator is available"
        )
        warn_at_caller(
            torch_first(
                "'pin_memory' argument is set as true but no accelerator is found, then device "
                "pinned memory won't be used.",
                f"pin_memory=True has no effect because {reason}; batches are returned "
                "unpinned. Pass pin_memory=False to silence this warning",
            ),
        )
        return None
    return _pin_tree
