"""The resume contracts: what a sampler offers so that a loader can save and restore its place.

Two protocols, checked with ``isinstance`` (they are runtime-checkable), never by looking for
a method with ``getattr``:

* :class:`Stateful`, the contract of torchdata.nodes' ``Stateful``: ``state_dict()`` returns a
  JSON-serialisable value and ``load_state_dict(state)`` makes the next ``iter()`` continue
  from it. A custom sampler (or an IterableDataset) that has both is resumed from its own
  state; one that lacks either, or whose ``state_dict()`` needs arguments (litdata's
  ``StreamingDataset.state_dict(num_samples_yielded, num_workers, batch_size)`` is its own
  loader's contract), is treated as having no state (:func:`is_stateful`).
* :class:`OffsetStateful`, stoker's own samplers: besides ``Stateful``, a state for any number
  of indices of the current epoch delivered (``resume_state(consumed)``), which lets a
  prefetching loader save exactly where the user is without replaying anything. It applies
  only while ``resumes_at_offset`` holds: a subclass that overrides ``__iter__`` yields other
  indices than the ones the sampler counts, so the loader resumes it by replay instead (see
  docs/design/resume.md).
"""

from __future__ import annotations

from typing import Any, Protocol, TypeGuard, runtime_checkable

from stoker._checks import callable_without_arguments

__all__ = ["OffsetStateful", "Stateful", "is_stateful"]


@runtime_checkable
class Stateful(Protocol):
    """An object whose position can be saved and restored (torchdata.nodes' contract)."""

    def state_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable state of the current position."""

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state from :meth:`state_dict`; the next ``iter()`` continues from it."""


@runtime_checkable
class OffsetStateful(Stateful, Protocol):
    """A sampler whose state can describe any position within its current epoch."""

    @property
    def resumes_at_offset(self) -> bool:
        """Whether the indices a loader gets are the ones :meth:`resume_state` counts."""

    def resume_state(self, consumed: int | None) -> dict[str, Any]:
        """Return the state as if only ``consumed`` indices of the current epoch were taken.

        ``None`` (the epoch has not begun) or a count at or past the epoch's end describes the
        start of the next epoch.
        """


def is_stateful(value: Any) -> TypeGuard[Stateful]:
    """Whether ``value`` keeps the :class:`Stateful` contract.

    That is: both methods, and a ``state_dict()`` that can be called without arguments.
    """
    return isinstance(value, Stateful) and callable_without_arguments(value.state_dict)
