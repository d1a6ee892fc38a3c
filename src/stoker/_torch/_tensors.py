"""Tensor work stoker delegates to torch: NumPy views, stacking, slabs, pinning, tracing.

Every call needs a tensor, which exists only once torch is imported (:func:`require`);
:func:`trace_module` alone imports torch itself, as ``add_graph`` must.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from stoker._torch._detect import is_tensor, require

__all__ = [
    "as_tensor",
    "bfloat16_bits",
    "copy_into",
    "from_numpy",
    "index_tensor",
    "is_strided",
    "pin",
    "slab_dtype",
    "stack",
    "stack_into",
    "tensor_to_numpy",
    "trace_module",
]


def is_strided(tensor: Any) -> bool:
    """Tell whether a tensor has the ordinary dense (strided) layout."""
    return bool(tensor.layout is require().strided)


def tensor_to_numpy(tensor: Any, name: str) -> np.ndarray[Any, Any]:
    """Return a tensor's values as a NumPy array: detached, on the CPU, ``bfloat16`` as ``float32``.

    Args:
        tensor: a ``torch.Tensor``.
        name: the argument's name, for the error message.

    Returns:
        A NumPy array sharing memory with a CPU tensor where torch allows it.

    Raises:
        ValueError: if the tensor is on the meta device (it holds no data).
    """
    torch = require()
    value = tensor.detach()
    if value.device.type == "meta":
        raise ValueError(
            f"{name} must hold data, got a tensor on the meta device; "
            "materialize it (for example with .to('cpu')) before logging"
        )
    value = value.cpu()
    if value.dtype == torch.bfloat16:
        value = value.float()
    return np.asarray(value.numpy())


def bfloat16_bits(value: object) -> np.ndarray[Any, Any] | None:
    """Return the raw bits of a ``bfloat16`` tensor as ``uint16``; None for anything else."""
    if not is_tensor(value):
        return None
    torch = require()
    tensor: Any = value
    if tensor.dtype != torch.bfloat16:
        return None
    bits = tensor.detach().cpu().contiguous().view(torch.int16).numpy()
    return np.asarray(bits).view(np.uint16)


def trace_module(model: Any, args: Any, *, strict: bool) -> tuple[Any, Any]:
    """Trace ``model`` with ``torch.jit.trace`` and inline its graph, for ``add_graph``.

    This is the one call that imports torch itself: a graph can only be traced with it.

    Args:
        model: A ``torch.nn.Module`` (or a scripted function).
        args: The example input(s), a tuple or list.
        strict: Passed to ``torch.jit.trace``.

    Returns:
        ``(trace, graph)``: the traced module and its graph with every call inlined.

    Raises:
        ImportError: If torch is not installed.
        TypeError: If ``model`` is not callable.
    """
    try:
        import torch  # noqa: PLC0415 - optional dependency, imported only to trace a graph
    except ImportError as err:
        raise ImportError("add_graph needs torch: pip install torch") from err
    if not callable(model):
        raise TypeError(f"model must be a torch.nn.Module, got {model!r}")
    trace = torch.jit.trace(model, args, strict=strict)  # type: ignore[no-untyped-call]
    graph = trace.graph
    torch._C._jit_pass_inline(graph)
    return trace, graph


def stack(tensors: Sequence[Any]) -> Any:
    """``torch.stack`` the tensors of a batch along a new first dimension."""
    return require().stack(list(tensors), 0)


def index_tensor(tensor: Any, indices: Sequence[int]) -> Any:
    """Gather the rows ``indices`` of a tensor in one call."""
    torch = require()
    return tensor[torch.as_tensor(indices, dtype=torch.int64)]


def as_tensor(value: Any) -> Any:
    """``torch.as_tensor`` of a NumPy array or scalar: an array's memory is shared, not copied.

    An array mapped from a shared-memory slab stays there.

    A writable ``ndarray`` goes through ``torch.from_numpy``: the same tensor (dtype, shape,
    strides, memory, errors) for a third of the call's cost (1.6 us against 4.9), which the
    door pays on every leaf of every batch. A read-only one keeps ``as_tensor``, which warns
    that the tensor will be writable, as torch's own conversion does.
    """
    torch = require()
    if type(value) is np.ndarray and value.flags.writeable:
        return torch.from_numpy(value)
    return torch.as_tensor(value)


def slab_dtype(value: object) -> np.dtype[Any] | None:
    """The NumPy dtype a plain CPU tensor's bytes can live under in shared memory, else None.

    Only an exact ``torch.Tensor`` (subclasses keep their own pickling): on the CPU, strided,
    without autograd history to keep, no lazy conjugate or negative bit, of a dtype NumPy has
    (not ``bfloat16``). Such a tensor is its bytes, so a worker can stack or copy it into a
    slab and the main process rebuild it with ``torch.from_numpy`` on the slab, no copy.
    """
    torch = sys.modules.get("torch")
    if torch is None or type(value) is not getattr(torch, "Tensor", None):
        return None
    tensor: Any = value
    if (
        tensor.device.type != "cpu"
        or tensor.layout is not torch.strided
        or tensor.requires_grad
        or tensor.is_conj()
        or tensor.is_neg()
    ):
        return None
    known = _SLAB_DTYPES.get(tensor.dtype)
    if known is None and tensor.dtype not in _SLAB_DTYPES:
        try:
            known = np.dtype(torch.empty(0, dtype=tensor.dtype).numpy().dtype)
        except TypeError:  # bfloat16 and other dtypes without a NumPy twin
            known = None
        _SLAB_DTYPES[tensor.dtype] = known
    return known


_SLAB_DTYPES: dict[Any, np.dtype[Any] | None] = {}
"""torch dtype to NumPy dtype (None: none), filled as dtypes are met."""


def from_numpy(array: np.ndarray[Any, Any]) -> Any:
    """``torch.from_numpy``: a tensor on the array's memory (no copy)."""
    return require().from_numpy(array)


def stack_into(tensors: Sequence[Any], out: np.ndarray[Any, Any]) -> Any:
    """``torch.stack`` the tensors into ``out``; return the tensor on ``out``'s memory.

    ``out`` is a NumPy array of the stacked shape and dtype.
    """
    torch = require()
    result = torch.from_numpy(out)
    torch.stack(list(tensors), 0, out=result)
    return result


def copy_into(tensor: Any, out: np.ndarray[Any, Any]) -> None:
    """Copy a tensor's values into ``out`` (a NumPy array of its shape and dtype)."""
    require().from_numpy(out).copy_(tensor)


def pin(tensor: Any) -> Any:
    """Return a pinned copy of a tensor (or a NumPy array, turned into a tensor first)."""
    torch = require()
    if isinstance(tensor, np.ndarray):
        tensor = torch.from_numpy(tensor)
    return tensor.pin_memory()
