"""Keep a worker's freed heap for its next batch (glibc's malloc thresholds).

A worker builds one batch's samples, copies them into the batch, frees them, then builds the
next batch's. With glibc's defaults the freed memory goes back to the kernel: the top of the
heap is trimmed once it exceeds the trim threshold, and blocks above the mmap threshold get a
mapping of their own that ``free`` unmaps. The next batch's samples then land on pages the
kernel must map and zero again: on batches of large samples (the JPEG workload of
``benchmarks/loader_bench.py``) a cost in page faults and system CPU, measured in
docs/design/shared_memory.md, that a plain loop which happens to hold one batch's samples
while it builds the next does not pay.

:func:`keep_heap` tunes malloc so that about one batch of freed memory stays in the heap:

* ``M_MMAP_THRESHOLD`` = 32 MiB, the ceiling glibc's own adaptive threshold rises to, so a
  sample's blocks come from the heap and are reused instead of mapped and unmapped each time;
* ``M_TOP_PAD`` = the batch's bytes (at most :data:`MAX_KEEP`): trimming leaves that much free
  memory at the top of the heap (and of each thread's arena), and growing it reserves as much
  address space ahead;
* ``M_TRIM_THRESHOLD`` = twice that, so the heap is trimmed only when it holds more than two
  batches of free memory.

So a worker's resident memory stays about one batch above what it had, instead of dropping
and rising each batch. Process workers call it when their slabs grow (in the worker, for its
own malloc); thread workers, which share the main process, call it there once they collate a
batch of 2 MiB of arrays or more. Setting ``STOKER_DATA_KEEP_HEAP=0`` turns it off. Outside
glibc (musl, macOS, Windows) it does nothing.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable

__all__ = ["ENV", "MAX_KEEP", "MMAP_THRESHOLD", "enabled", "keep_heap", "kept"]

MAX_KEEP = 128 << 20
"""The most free heap kept for the next batch (bytes); it also bounds how much a worker's USS
can stay above its first batch's reading on this account (the copy warning starts at 256 MiB)."""

MMAP_THRESHOLD = 32 << 20
"""Blocks from this size get their own mapping, as glibc's adaptive threshold at its ceiling."""

ENV = "STOKER_DATA_KEEP_HEAP"
"""The environment variable that turns the tuning off when set to ``0``."""

_M_TRIM_THRESHOLD = -1  # glibc's malloc.h
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3

_kept = 0


def _find_mallopt() -> Callable[[int, int], int] | None:
    """Look up glibc's ``mallopt`` (None where malloc is not glibc's)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return None
        function = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError, ValueError):
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_int)
    function.restype = ctypes.c_int
    mallopt: Callable[[int, int], int] = function
    return mallopt


_FOUND = _find_mallopt()
"""Looked up once, where this module is imported: a forked worker finds it resolved (the
lookup in a fresh worker cost 0.5 ms of its first batch)."""


def _mallopt() -> Callable[[int, int], int] | None:
    """Return glibc's ``mallopt``, or None where malloc is not glibc's."""
    if not sys.platform.startswith("linux"):
        return None
    return _FOUND


def enabled() -> bool:
    """Tell whether the tuning is on in this environment (``STOKER_DATA_KEEP_HEAP`` is not 0)."""
    return os.environ.get(ENV, "1").strip() != "0"


def keep_heap(batch_bytes: int) -> int:
    """Keep about ``batch_bytes`` of freed heap for the next batch (see the module's text).

    Only ever raises what is kept (a call with less than before changes nothing).

    Returns:
        The bytes now kept in this process: 0 where it is off or not glibc.
    """
    global _kept
    keep = min(max(int(batch_bytes), 0), MAX_KEEP)
    if keep <= _kept or not enabled():
        return _kept
    mallopt = _mallopt()
    if mallopt is None:
        return _kept
    if not mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD):
        return _kept
    mallopt(_M_TOP_PAD, keep)
    mallopt(_M_TRIM_THRESHOLD, 2 * keep)
    _kept = keep
    return _kept


def kept() -> int:
    """Return the bytes of freed heap this process keeps for its next batch (0: glibc's own)."""
    return _kept
