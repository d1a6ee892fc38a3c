"""The loader's plan: an iteration works from the settings of the moment it started."""

from __future__ import annotations

import dataclasses

import pytest

from stoker.data import DataLoader


def test_an_iterator_keeps_its_plan_and_the_next_one_sees_new_settings() -> None:
    """Changing collate_fn mid-epoch leaves the running iterator alone; the next one uses it."""
    loader = DataLoader(range(6), batch_size=2, collate_fn=list)
    iterator = iter(loader)
    assert next(iterator) == [0, 1]
    loader.collate_fn = tuple
    assert next(iterator) == [2, 3]
    assert next(iter(loader)) == (0, 1)


def test_the_plan_is_frozen_and_says_what_the_loader_decided() -> None:
    """The plan cannot be changed and records the derived settings (batching, prefetch)."""
    plan = DataLoader(range(6), batch_size=2)._plan()
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.num_workers = 2  # type: ignore[misc]
    assert (plan.auto_collation, plan.iterable, plan.prefetch_factor) == (True, False, 0)
    with_workers = DataLoader(range(6), batch_size=None, num_workers=1)._plan()
    assert (with_workers.auto_collation, with_workers.prefetch_factor) == (False, 2)
    assert with_workers.prefetch_auto
    given = DataLoader(range(6), num_workers=1, prefetch_factor=2)._plan()
    assert (given.prefetch_factor, given.prefetch_auto) == (2, False)
    changed = DataLoader(range(6), num_workers=1)
    changed.prefetch_factor = 3
    assert (changed._plan().prefetch_factor, changed._plan().prefetch_auto) == (3, False)
