"""Questions about torch objects, answered from ``sys.modules`` (never importing torch).

Is this a tensor, a generator, a torch ``IterableDataset``, a traced module, exactly torch's
``BatchSampler``; is a ``collate_fn`` torch's own; is an accelerator there. Each asks the
imported torch's classes (``isinstance``, never a module name) and answers "no" when the
program has not imported torch. :func:`require` is the rest of the package's way to torch.
"""

from __future__ import annotations

import sys
from types import ModuleType

import numpy as np

__all__ = [
    "accelerator_available",
    "batch_collation",
    "is_batch_sampler",
    "is_generator",
    "is_iterable_dataset",
    "is_tensor",
    "is_traced_module",
    "loaded",
    "require",
]


def loaded() -> ModuleType | None:
    """Return the ``torch`` module if the program has imported it, else None (never imports)."""
    return sys.modules.get("torch")


def require() -> ModuleType:
    torch = sys.modules.get("torch")
    if torch is None:  # a torch object exists only once torch is imported
        raise RuntimeError("torch is not imported; this call needs a torch object")
    return torch


def is_tensor(value: object) -> bool:
    """Tell whether ``value`` is a ``torch.Tensor`` (False whenever torch is not imported)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def is_generator(value: object) -> bool:
    """Tell whether ``value`` is a ``torch.Generator`` (False whenever torch is not imported)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Generator)


def is_iterable_dataset(value: object) -> bool:
    """Tell whether ``value`` is a ``torch.utils.data.IterableDataset`` (torch's own class)."""
    data = sys.modules.get("torch.utils.data")
    iterable = getattr(data, "IterableDataset", None)
    return iterable is not None and isinstance(value, iterable)


def is_traced_module(value: object) -> bool:
    """Tell whether ``value`` is a ``torch.jit.TracedModule`` (made by :func:`trace_module`)."""
    jit = sys.modules.get("torch.jit")
    traced = getattr(jit, "TracedModule", None)
    return traced is not None and isinstance(value, traced)


# -- torch's own batching, recognised so that stoker's engine can stand in for it -----------
_TORCH_COLLATE_MAP_KEYS = 7  # Tensor, ndarray, NumPy scalars, float, int, str, bytes


def batch_collation(collate_fn: object) -> str | None:
    """Tell whether ``collate_fn`` is torch's ``default_collate`` or ``default_convert``.

    Returns ``"collate"`` or ``"convert"`` for those (``"collate"`` only while torch's
    ``default_collate_fn_map`` is as torch made it: a map a user extended must be honoured by
    torch's own function), else None. Never imports torch.
    """
    collate = sys.modules.get("torch.utils.data._utils.collate")
    if collate is None or collate_fn is None:
        return None
    if collate_fn is getattr(collate, "default_convert", None):
        return "convert"
    if collate_fn is not getattr(collate, "default_collate", None):
        return None
    fn_map = getattr(collate, "default_collate_fn_map", {})
    expected = {
        require().Tensor: collate.collate_tensor_fn,
        np.ndarray: collate.collate_numpy_array_fn,
        (np.bool_, np.number, np.object_): collate.collate_numpy_scalar_fn,
        float: collate.collate_float_fn,
        int: collate.collate_int_fn,
        str: collate.collate_str_fn,
        bytes: collate.collate_str_fn,
    }
    pristine = len(fn_map) == _TORCH_COLLATE_MAP_KEYS and all(
        fn_map.get(key) is value for key, value in expected.items()
    )
    return "collate" if pristine else None


def is_batch_sampler(value: object) -> bool:
    """Tell whether ``value`` is exactly a ``torch.utils.data.BatchSampler`` (not a subclass)."""
    sampler = sys.modules.get("torch.utils.data.sampler")
    return sampler is not None and type(value) is getattr(sampler, "BatchSampler", None)


def accelerator_available() -> bool:
    """Tell whether torch is imported and reports an accelerator that pinned memory can target."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "is_available"):
        return bool(accelerator.is_available())
    cuda = getattr(torch, "cuda", None)
    return bool(cuda is not None and cuda.is_available())
