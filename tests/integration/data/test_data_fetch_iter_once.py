"""An IterableDataset's iterator gets ``iter()`` once per epoch per replica, then ``next()`` only.

Through both doors, without workers and with thread and process workers, batched and not, and
in an epoch resumed from a state: a dataset whose ``__iter__`` restarts it and returns itself
(litdata's ``StreamingDataset`` is written so) yields each sample of the epoch once, and the
epoch ends.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from data_workers_helpers import (
    ArgumentStateStream,
    RestartingStream,
    StatefulRestartingStream,
    kind_kwargs,
)

import stoker.data as stoker_data
import stoker.torch.data as door

pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)
MODULES = [pytest.param(stoker_data, id="stoker.data"), pytest.param(door, id="stoker.torch.data")]
KINDS = ["main", "thread", "process"]
SAMPLES = 12


def _workers(kind: str) -> dict[str, Any]:
    """DataLoader arguments: no workers ("main"), or two of ``kind``."""
    return {} if kind == "main" else {"num_workers": 2, **kind_kwargs(kind)}


def _rows(batches: list[Any], batch_size: int | None) -> list[tuple[int, int, int]]:
    """The ``(value, worker, calls)`` samples of ``batches``."""
    if batch_size is None:
        return [(int(v), int(w), int(c)) for v, w, c in batches]
    columns = [[np.asarray(part).tolist() for part in batch] for batch in batches]
    return [row for batch in columns for row in zip(*batch, strict=True)]


def _drain(iterator: Any, batch_size: int | None, cap: int) -> tuple[list[Any], bool]:
    """The samples of up to ``cap`` batches, and whether the iterator ended within them.

    The samples of up to ``cap`` batches, and whether the iterator ended within them (a
    restarting bug repeats its first batch forever).
    """
    batches = list(itertools.islice(iterator, cap))
    return _rows(batches, batch_size), next(iterator, None) is None


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("batch_size", [3, None])
def test_each_epoch_calls_iter_once_per_replica(
    module: Any, kind: str, batch_size: int | None
) -> None:
    """Two epochs each yield every sample once, from one ``__iter__`` call per replica.

    Two epochs each yield every sample once and end; every sample of an epoch comes from
    the replica's one ``__iter__`` call of that epoch (a worker's copy is fresh each epoch, the
    main process's dataset counts its epochs).
    """
    dataset = RestartingStream(SAMPLES)
    loader = module.DataLoader(dataset, batch_size=batch_size, **_workers(kind))
    for epoch in range(2):
        with iter(loader) as iterator:
            samples, ended = _drain(iterator, batch_size, cap=SAMPLES + 2)
        assert ended
        assert sorted(value for value, _, _ in samples) == list(range(SAMPLES))
        calls = epoch + 1 if kind == "main" else 1
        assert {(c, w) for _, w, c in samples} == (
            {(calls, -1)} if kind == "main" else {(calls, 0), (calls, 1)}
        )
    assert dataset.iter_calls == (2 if kind == "main" else 0)


@pytest.mark.parametrize("module", MODULES)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "make",
    [RestartingStream, StatefulRestartingStream, ArgumentStateStream],
    ids=["fast_forward", "own_state", "state_with_arguments"],
)
def test_a_resumed_epoch_calls_iter_once_per_replica(module: Any, kind: str, make: Any) -> None:
    """A state saved mid-epoch resumes the other samples, each once, from one ``__iter__`` call.

    A state saved after 3 of the epoch's 6 batches, loaded into a new loader, gives the other
    samples, each once, from one ``__iter__`` call per replica, and the epoch ends; the
    dataset's own state (``worker_states``/``dataset``) and a fast-forward alike. A
    ``state_dict()`` that needs arguments (litdata's) is never called: a fast-forward, and no
    warning of a failing ``state_dict()`` with each batch.
    """
    stateful = make is StatefulRestartingStream
    before = module.DataLoader(make(SAMPLES), batch_size=2, **_workers(kind))
    with iter(before) as iterator:
        first = _rows(list(itertools.islice(iterator, 3)), 2)
        state = before.state_dict()
    assert state["mode"] == (
        ("dataset" if kind == "main" else "worker_states") if stateful else "fast_forward"
    )
    after = module.DataLoader(make(SAMPLES), batch_size=2, **_workers(kind))
    after.load_state_dict(state)
    with iter(after) as iterator:
        rest, ended = _drain(iterator, 2, cap=SAMPLES)
    assert ended
    assert sorted(value for value, _, _ in first + rest) == list(range(SAMPLES))
    assert {c for _, _, c in rest} == {1}
