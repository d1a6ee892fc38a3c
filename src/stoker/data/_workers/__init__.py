"""The worker side of the loader: what the rest of ``stoker.data`` may use of it, in one place.

The package holds the protocol (:mod:`.protocol`: setup, tasks, commands, replies, statuses),
the one worker loop (:mod:`.loop`), a worker's identity and seeds (:mod:`.info`), the process
host and pool (:mod:`.process`), the thread host and pool (:mod:`.threads`), the pool interface
and its factory (:mod:`.pool`), the task pipe (:mod:`.taskpipe`), the parent watchdog
(:mod:`.watchdog`), shared-memory slabs and segments (:mod:`.slabs`, :mod:`.shm`), the compact
containers' shared buffers (:mod:`.shared_arrays`) and every time limit (:mod:`.timeouts`).
Modules outside the package import from here only; docs/design/data_loader.md tours it.
"""

from stoker.data._workers.info import WorkerInfo, get_worker_info
from stoker.data._workers.pool import WorkerPool, make_pool
from stoker.data._workers.protocol import (
    BATCH,
    EXHAUSTED,
    FAILED,
    NO_STATE,
    RESET,
    RESET_DONE,
    EpochSetup,
    Meta,
    Reply,
    Reset,
    Status,
    Task,
    WorkerSetup,
)
from stoker.data._workers.shared_arrays import SharedArrays, register_shared
from stoker.data._workers.shm import SharedMemoryFullError
from stoker.data._workers.timeouts import CHECK_INTERVAL

__all__ = [
    "BATCH",
    "CHECK_INTERVAL",
    "EXHAUSTED",
    "FAILED",
    "NO_STATE",
    "RESET",
    "RESET_DONE",
    "EpochSetup",
    "Meta",
    "Reply",
    "Reset",
    "SharedArrays",
    "SharedMemoryFullError",
    "Status",
    "Task",
    "WorkerInfo",
    "WorkerPool",
    "WorkerSetup",
    "get_worker_info",
    "make_pool",
    "register_shared",
]
