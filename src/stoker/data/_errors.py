"""Carries an exception raised in a worker to the main process and raises it there again.

A worker cannot send its exception object as it is: the object may not pickle, and its traceback
never does. :class:`WorkerFailure` captures what the main process needs instead (the exception's
type by import path, its message, the worker's id and pid, the dataset index being fetched and
the formatted worker traceback) as plain picklable values. :meth:`WorkerFailure.reraise` builds
an exception of the original type in the main process whose message starts with the original
message and goes on with torch's words for it ("Caught ValueError in DataLoader worker
process 0."), where it happened and the worker traceback. When the original type
cannot be imported or built from one message argument, a :class:`RuntimeError` with the same
text is raised instead.

The fetch path marks an exception with the dataset index it was fetching through
:func:`mark_index`; in the main process (``num_workers=0``) the original exception propagates
untouched apart from that mark and, on Python 3.11+, a note naming the index.

It also holds the exceptions of two kinds at once: the type stoker's rules call for, and the one
torch raises. Where torch raises, say, ``AssertionError`` for a bad argument or ``RuntimeError``
for a bad value found while iterating, stoker raises an exception that is both that and the
proper kind (``ValueError``, ``TypeError``), so code written against either keeps catching it.
Each class names its two kinds; stoker.data's modules raise these instead of defining their own.
"""

from __future__ import annotations

import importlib
import os
import pickle
import traceback
from dataclasses import dataclass, field
from typing import Any, NoReturn

__all__ = [
    "TypeAssertionError",
    "TypeAttributeError",
    "TypeNotImplementedError",
    "TypePicklingError",
    "TypeValueError",
    "ValueAssertionError",
    "ValueIndexError",
    "ValueRuntimeError",
    "WorkerFailure",
    "index_of",
    "mark_index",
    "short_repr",
]

_INDEX_ATTR = "_stoker_dataset_index"
_MAX_REPR = 200


class TypeValueError(TypeError, ValueError):
    """A wrong type where torch raises ValueError."""


class TypeAssertionError(TypeError, AssertionError):
    """A wrong type where torch raises AssertionError."""


class TypeAttributeError(TypeError, AttributeError):
    """An object that cannot be pickled (a local function).

    Raised where torch re-raises pickle's AttributeError.
    """


class TypePicklingError(TypeError, pickle.PicklingError):
    """An object that cannot be pickled (a lambda), where torch re-raises pickle's error."""


class TypeNotImplementedError(TypeError, NotImplementedError):
    """Something that cannot be done to an object (pickling an iterator).

    Raised where torch raises NotImplementedError.
    """


class ValueAssertionError(ValueError, AssertionError):
    """A bad value where torch raises AssertionError."""


class ValueIndexError(ValueError, IndexError):
    """A bad value where torch raises IndexError."""


class ValueRuntimeError(ValueError, RuntimeError):
    """A bad value (or state) where torch raises RuntimeError."""


def short_repr(value: object, limit: int = _MAX_REPR) -> str:
    """Return ``repr(value)`` cut to ``limit`` characters with an ellipsis when longer."""
    try:
        text = repr(value)
    except Exception:  # a broken __repr__ must not hide the error being reported
        text = f"<{type(value).__name__} object>"
    if len(text) <= limit:
        return text
    return text[: limit - 5] + " ...]"


def mark_index(err: BaseException, index: object) -> None:
    """Record on ``err`` the dataset index whose fetch raised it (first mark wins).

    The mark is an attribute on the exception object; exceptions that refuse attributes are left
    unmarked. On Python 3.11+ a note naming the index is added too, so a traceback printed in the
    process that fetched shows it.
    """
    if hasattr(err, _INDEX_ATTR):
        return
    try:
        setattr(err, _INDEX_ATTR, index)
    except (AttributeError, TypeError):
        return
    add_note = getattr(err, "add_note", None)
    if add_note is not None:
        add_note(f"(raised while fetching dataset index {short_repr(index)})")


def index_of(err: BaseException) -> object:
    """Return the dataset index recorded by :func:`mark_index`, or None."""
    return getattr(err, _INDEX_ATTR, None)


class _KeyErrorText(str):
    """A message whose repr is itself, so a re-raised KeyError prints its lines readably."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self)


def _type_path(exc_type: type[BaseException]) -> tuple[str, str]:
    return exc_type.__module__, exc_type.__qualname__


def _resolve_type(module: str, qualname: str) -> type[BaseException] | None:
    if module == "__mp_main__":  # a spawn worker's name for the main script
        module = "__main__"
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    if isinstance(obj, type) and issubclass(obj, BaseException):
        return obj
    return None


@dataclass(frozen=True)
class WorkerFailure:
    """A picklable record of an exception raised in a DataLoader worker.

    Attributes:
        type_module: the module of the exception's class.
        type_qualname: the qualified name of the exception's class.
        message: ``str()`` of the original exception (``repr`` of the key for a KeyError).
        worker_id: the id of the worker that raised (0 to num_workers - 1).
        pid: the worker's process id.
        where: what the worker was doing, e.g. "while fetching dataset index 7".
        dataset_index: the dataset index being fetched, when known.
        worker_traceback: the formatted traceback, as printed in the worker.
    """

    type_module: str
    type_qualname: str
    message: str
    worker_id: int
    pid: int
    where: str
    dataset_index: object = None
    worker_traceback: str = field(default="", repr=False)

    @classmethod
    def capture(
        cls, err: BaseException, worker_id: int, *, where: str, batch_index: object = None
    ) -> WorkerFailure:
        """Record ``err``, raised in worker ``worker_id``, for sending to the main process.

        Args:
            err: the exception caught in the worker.
            worker_id: the worker's id.
            where: a phrase saying what the worker was doing, e.g. "in worker_init_fn".
            batch_index: the index (or list of indices) of the task being fetched, if any.

        Returns:
            The record; every field is a plain picklable value.
        """
        module, qualname = _type_path(type(err))
        try:
            message = repr(err.args[0]) if isinstance(err, KeyError) and err.args else str(err)
        except Exception:  # a broken __str__ must not take the worker down
            message = f"<{qualname} whose message cannot be printed>"
        index = index_of(err)
        place = where
        if index is not None:
            place += f" while fetching dataset index {short_repr(index)}"
            if batch_index is not None and batch_index is not index:
                place += f" (batch indices {short_repr(batch_index)})"
        elif batch_index is not None:
            place += f" while fetching batch indices {short_repr(batch_index)}"
        text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
        try:
            pickle.dumps(index)
        except Exception:  # an unpicklable index travels as its repr instead
            index = short_repr(index)
        return cls(module, qualname, message, worker_id, os.getpid(), place.strip(), index, text)

    def describe(self) -> str:
        """Return the full text used as the re-raised exception's message."""
        name = self.type_qualname.rpartition(".")[2]
        return (
            f"{self.message}\n\n"
            f"Caught {name} in DataLoader worker process {self.worker_id}. "
            f"{self.type_qualname} raised in DataLoader worker {self.worker_id} "
            f"(pid {self.pid}) {self.where}.\n"
            f"Original traceback in the worker:\n{self.worker_traceback}"
        )

    def build(self) -> BaseException:
        """Return an exception of the original type (or RuntimeError) carrying the record.

        The exception has the attributes ``worker_id``, ``dataset_index`` and
        ``worker_traceback`` when its type accepts attributes.
        """
        text = self.describe()
        exc_type = _resolve_type(self.type_module, self.type_qualname)
        exc: BaseException
        try:
            if exc_type is None:
                raise TypeError("unknown exception type")
            exc = exc_type(_KeyErrorText(text) if issubclass(exc_type, KeyError) else text)
        except Exception:  # any failure to rebuild the original type falls back to RuntimeError
            exc = RuntimeError(
                f"{self.type_module}.{self.type_qualname} (not rebuilt in the main process): "
                + text
            )
        for name, value in (
            ("worker_id", self.worker_id),
            ("dataset_index", self.dataset_index),
            ("worker_traceback", self.worker_traceback),
        ):
            try:
                setattr(exc, name, value)
            except (AttributeError, TypeError):
                break
        return exc

    def reraise(self) -> NoReturn:
        """Raise the rebuilt exception in the calling (main) process."""
        raise self.build()
