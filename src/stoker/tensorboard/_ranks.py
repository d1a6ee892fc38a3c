"""Rank-aware writing for distributed training: one writer on rank 0, or one sub-run per rank.

Several processes may write under one log dir without colliding: event file names carry the
host, pid and a per-process counter and are created exclusively (``_rotate``),
``projector_config.pbtxt`` is appended to, and ``add_hparams`` claims a fresh sub-run. What
they cannot avoid alone is duplication: with DDP every rank computes the same loss, and
TensorBoard would plot it once per rank. :func:`rank_writer` picks the policy:

- ``"rank0"``: rank 0 gets a real :class:`SummaryWriter`; every other rank gets a
  :class:`NullWriter`, which has the same methods and writes nothing.
- ``"per_rank"``: every rank writes its own sub-run ``<log_dir>/rank_<r>``, which TensorBoard
  shows as one run per rank.

The rank comes from the ``rank`` argument; else from ``torch.distributed`` when the program has
already imported it and initialized the process group (torch is never imported here); else from
the ``RANK`` environment variable that ``torchrun``, ``mpirun`` wrappers and SLURM scripts set;
else it is 0. ``world_size`` is found the same way (``WORLD_SIZE``) and only checks the rank.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any

from stoker._checks import resolve_world
from stoker.tensorboard._remote import join
from stoker.tensorboard._writer import SummaryWriter

__all__ = ["NullWriter", "rank_writer", "resolve_rank"]

_POLICIES = ("rank0", "per_rank")


def resolve_rank(rank: int | None = None, world_size: int | None = None) -> tuple[int, int | None]:
    """Return ``(rank, world_size)`` of this process.

    Each comes from its argument, else from an initialized ``torch.distributed`` process group
    (only if the program already imported torch), else from the ``RANK`` / ``WORLD_SIZE``
    environment variables (``stoker._checks.resolve_world``); a writer then assumes rank 0 and
    leaves the world size None (unknown).

    Raises:
        TypeError: If an argument is not an int.
        ValueError: If a value is negative, the world size is < 1, an environment variable is
            not an int, or the rank is not below the world size.
    """
    rank, world_size = resolve_world(rank, world_size)
    return (0 if rank is None else rank), world_size


def _no_op(method: Callable[..., Any]) -> Callable[..., None]:
    signature = inspect.signature(method)

    @functools.wraps(method)
    def no_op(*args: Any, **kwargs: Any) -> None:
        signature.bind(*args, **kwargs)  # the same TypeError as the real method on a bad call

    no_op.__doc__ = f"Do nothing: this process does not write; see SummaryWriter.{method.__name__}."
    return no_op


def _writing_methods_disabled(cls: type[SummaryWriter]) -> type[SummaryWriter]:
    """Replace every public method of SummaryWriter but ``get_logdir`` with a no-op."""
    for name, member in inspect.getmembers(SummaryWriter, inspect.isfunction):
        if not name.startswith("_") and name != "get_logdir":
            setattr(cls, name, _no_op(member))
    return cls


@_writing_methods_disabled
class NullWriter(SummaryWriter):
    """A :class:`SummaryWriter` that writes nothing; what non-zero ranks get from ``rank0``.

    Every ``add_*`` method, ``flush`` and ``close`` accepts the arguments of the real method
    (a call that does not fit its signature raises the same ``TypeError``) and returns None
    without validating values or touching the file system.

    Args:
        log_dir: Returned by :meth:`get_logdir`; nothing is created there.
        args: Ignored; accepted so that any ``SummaryWriter`` call can be forwarded.
        kwargs: Ignored, likewise.
    """

    def __init__(self, log_dir: Any = None, *args: Any, **kwargs: Any) -> None:
        """Remember ``log_dir``; open nothing."""
        self.log_dir = "" if log_dir is None else os.fspath(log_dir)
        self.purge_step = None
        self.max_queue = 10
        self.flush_secs = 120
        self.filename_suffix = ""
        self.file_writer = None
        self.all_writers = None


def rank_writer(
    log_dir: str | os.PathLike[str],
    *,
    policy: str = "rank0",
    rank: int | None = None,
    world_size: int | None = None,
    **writer_kwargs: Any,
) -> SummaryWriter:
    """Return the writer this process should log with in a multi-process job.

    Args:
        log_dir: The run directory (or URL) shared by every process. Required: the default
            ``runs/<time>_<host>`` would differ between processes.
        policy: ``"rank0"``: a real writer on rank 0 and a :class:`NullWriter` elsewhere.
            ``"per_rank"``: every rank writes ``<log_dir>/rank_<r>``.
        rank: This process's rank; default from ``torch.distributed``, ``$RANK``, or 0.
        world_size: Number of processes; default from ``torch.distributed`` or
            ``$WORLD_SIZE``; used only to check ``rank``.
        writer_kwargs: Passed on to :class:`SummaryWriter` (``flush_secs``, ``max_file_secs``,
            ``storage_options``...).

    Returns:
        A :class:`SummaryWriter` (a :class:`NullWriter` on non-zero ranks with ``"rank0"``).

    Raises:
        TypeError: If ``log_dir`` is missing or ``rank`` / ``world_size`` is not an int.
        ValueError: If ``policy`` is unknown or the rank is out of range.

    Example:
        >>> writer = rank_writer("runs/exp1", policy="per_rank")  # doctest: +SKIP
        >>> writer.add_scalar("loss", loss.item(), step)  # rank 3 writes runs/exp1/rank_3
    """
    if not isinstance(log_dir, (str, os.PathLike)) or not os.fspath(log_dir):
        raise TypeError(
            f"log_dir must be a non-empty path or URL shared by all ranks, got {log_dir!r}; "
            "pass e.g. 'runs/exp1' (each process would pick a different default)"
        )
    if policy not in _POLICIES:
        raise ValueError(
            f"policy must be one of {', '.join(map(repr, _POLICIES))}, got {policy!r}; use "
            "'rank0' to log once, 'per_rank' for one sub-run per process"
        )
    this_rank, _ = resolve_rank(rank, world_size)
    base = os.fspath(log_dir)
    if policy == "per_rank":
        return SummaryWriter(join(base, f"rank_{this_rank}"), **writer_kwargs)
    if this_rank == 0:
        return SummaryWriter(base, **writer_kwargs)
    return NullWriter(base, **writer_kwargs)
