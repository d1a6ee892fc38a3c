"""torch in stoker's workers: seeding, and torch's ``get_worker_info()`` answered per worker.

The import hook lives here: a worker that starts before torch is imported leaves a finder on
``sys.meta_path`` that installs the answer the moment ``import torch`` has finished.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

__all__ = ["enter_thread_worker", "leave_thread_worker", "seed_worker", "set_worker_info"]


def seed_worker(seed: int) -> None:
    """Seed torch in a worker (``manual_seed``) and limit it to one intra-op thread, as torch does.

    Does nothing when torch is not imported in this process.
    """
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "manual_seed"):
        torch.set_num_threads(1)
        torch.manual_seed(seed)


# torch's get_worker_info() in stoker's workers.
#
# torch's ``get_worker_info()`` returns one global of torch's worker module, which torch's worker
# loop sets. A stoker process worker sets that global the same way. Thread workers share one
# process, so while any runs, the global holds a ``WorkerInfo`` whose fields are looked up per
# thread: each worker thread gets its own answer; any other thread the answer that was there
# before, or a clear error when that was None. A worker that starts before torch is imported
# leaves a finder on ``sys.meta_path`` that, the moment ``import torch`` has finished (before any
# code can ask), sets the answer and seeds torch as a process worker's start would have; then
# the finder goes.

_WORKER_MODULE = "torch.utils.data._utils.worker"
_TOP = "torch"
_lock = threading.RLock()
_process_fields: tuple[int, int, int, Any] | None = None  # this process worker's, until set
_thread_fields: dict[int, tuple[Any, ...]] = {}  # thread ident -> its WorkerInfo fields
_thread_answers: dict[int, Any] = {}  # thread ident -> its torch WorkerInfo, once built
_answer_before: Any = None
_per_thread_type: type | None = None


def _worker_module() -> Any:
    """Torch's worker module once it has been executed, else None (never imports)."""
    module = sys.modules.get(_WORKER_MODULE)
    return module if hasattr(module, "WorkerInfo") else None


def set_worker_info(worker_id: int, num_workers: int, seed: int, dataset: Any) -> None:
    """Make torch's ``get_worker_info()`` answer for this process, as torch's worker loop does.

    For a process worker: torch's own ``WorkerInfo`` with the worker's id, number of workers,
    seed and dataset replica becomes the process-wide answer, now if torch is imported, else
    the moment it is (torch is then also seeded as :func:`seed_worker` would have done at the
    worker's start).
    """
    global _process_fields
    with _lock:
        _process_fields = (worker_id, num_workers, seed, dataset)
        module = _worker_module()
        if module is None:
            _watch_import()
        else:
            _answer_now(module)


def enter_thread_worker(
    worker_id: int, num_workers: int, seed: int, dataset: Any, worker_method: str
) -> None:
    """Make torch's ``get_worker_info()`` answer for the calling worker thread.

    Now if torch is imported, else the moment it is. Every thread that enters must
    :func:`leave_thread_worker`; the last to leave puts back the answer that was there.
    """
    fields = (worker_id, num_workers, seed, dataset, None, worker_method)
    with _lock:
        ident = threading.get_ident()
        _thread_fields[ident] = fields
        _thread_answers.pop(ident, None)
        module = _worker_module()
        if module is None:
            _watch_import()
        else:
            _answer_now(module)


def leave_thread_worker() -> None:
    """Undo :func:`enter_thread_worker` for the calling thread (nothing if it did not enter)."""
    global _answer_before
    with _lock:
        ident = threading.get_ident()
        if _thread_fields.pop(ident, None) is None:
            return
        _thread_answers.pop(ident, None)
        if _thread_fields:
            return
        module = _worker_module()
        if module is None:
            if _process_fields is None:
                _unwatch_import()  # no answer is waiting for torch any more
        elif type(module._worker_info) is _per_thread_type:
            module._worker_info = _answer_before
        _answer_before = None


def _answer_now(module: Any) -> None:
    """Install the answers registered so far into torch's (executed) worker module."""
    global _process_fields, _answer_before
    with _lock:
        if _process_fields is not None:
            worker_id, num_workers, seed, dataset = _process_fields
            module._worker_info = module.WorkerInfo(
                id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset
            )
            _process_fields = None
        for ident, fields in _thread_fields.items():
            if ident not in _thread_answers:
                _thread_answers[ident] = module.WorkerInfo(*fields)
        if _thread_fields and type(module._worker_info) is not _per_thread_type:
            _answer_before = module._worker_info
            module._worker_info = _per_thread(module.WorkerInfo)


def _not_a_worker_thread_error() -> RuntimeError:
    """The error torch's answer raises in a thread that is no worker while thread workers run."""
    name = threading.current_thread().name
    return RuntimeError(
        f"torch.utils.data.get_worker_info() was read in thread {name!r}, which is not a "
        "DataLoader worker, while stoker thread workers run in this process: torch keeps one "
        "answer per process, so stoker answers it per worker thread and has no answer (None) "
        'for this thread; use process workers (worker_type="process") for the loader whose '
        "dataset asks torch, or read get_worker_info() only in the dataset's code"
    )


def _current_answer() -> Any:
    answer = _thread_answers.get(threading.get_ident())
    if answer is not None:
        return answer
    if _answer_before is not None:
        return _answer_before
    raise _not_a_worker_thread_error()


def _per_thread(base: type) -> Any:
    """A ``base`` (torch's ``WorkerInfo``) instance whose fields answer for the calling thread."""
    global _per_thread_type
    if _per_thread_type is None or _per_thread_type.__bases__ != (base,):
        fields = tuple(field.name for field in dataclasses.fields(base))
        names = frozenset(fields)

        class PerThreadWorkerInfo(base):  # type: ignore[misc]
            """torch's ``WorkerInfo`` while stoker thread workers run: each thread's own answer.

            False (as None would be) and raising on its fields in a thread that is no worker.
            """

            __slots__ = ()

            def __getattribute__(self, name: str) -> Any:
                if name in names:
                    return getattr(_current_answer(), name)
                return object.__getattribute__(self, name)

            def __bool__(self) -> bool:
                mine = threading.get_ident() in _thread_answers
                return mine or _answer_before is not None

            def __repr__(self) -> str:
                if self:
                    return repr(_current_answer())
                return "WorkerInfo(<none: this thread is not a stoker worker thread>)"

            def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
                answer = _current_answer()
                return base, tuple(getattr(answer, name) for name in fields)

        PerThreadWorkerInfo.__qualname__ = PerThreadWorkerInfo.__name__
        _per_thread_type = PerThreadWorkerInfo
    return object.__new__(_per_thread_type)


class _AnswerOnImport(importlib.abc.MetaPathFinder):
    """Finds torch through the other finders, to answer once ``import torch`` has finished."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _TOP:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = None if finder is self or find is None else find(fullname, path, target)
            if isinstance(spec, importlib.machinery.ModuleSpec):
                if isinstance(spec.loader, importlib.abc.Loader):
                    spec.loader = _AnswerAfterExec(spec.loader)
                return spec
        return None


class _AnswerAfterExec(importlib.abc.Loader):
    """Runs torch with its own loader, then seeds it and installs the answers."""

    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        if module.__spec__ is not None:  # leave no trace: the module keeps its own loader
            module.__spec__.loader = self.loader
        module.__loader__ = self.loader
        self.loader.exec_module(module)
        with _lock:
            _unwatch_import()
            worker_module = _worker_module()
            if _process_fields is not None:
                seed_worker(_process_fields[2])
            if worker_module is not None:
                _answer_now(worker_module)


_finder = _AnswerOnImport()


def _watch_import() -> None:
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def _unwatch_import() -> None:
    with contextlib.suppress(ValueError):
        sys.meta_path.remove(_finder)
