"""Resume with workers, in fresh processes, and per-sample randomness independent of workers."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from data_resume_helpers import (
    RECIPES,
    WORKER_TYPES,
    Augmented,
    CountingShards,
    Stream,
    loader_kwargs,
    slow_after_four,
    slow_multiples_of_five,
    take,
)
from data_workers_helpers import SUPPORT

from stoker.data import DataLoader, get_worker_info

HELPER = str(Path(SUPPORT) / "data_resume_helpers.py")
EPOCHS = 2


def _child(*args: object) -> list[Any]:
    """Run the helper script in a fresh interpreter and return the batches it printed."""
    done = subprocess.run(
        [sys.executable, HELPER, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    batches: list[Any] = json.loads(done.stdout)
    return batches


@pytest.mark.parametrize(
    ("recipe", "save_with", "load_with"),
    [
        ("shuffle", (2, "process", 0), (0, "process", 0)),
        ("shuffle", (0, "process", 0), (2, WORKER_TYPES[-1], 1)),
        ("torch-shuffle", (2, WORKER_TYPES[-1], 0), (0, "process", 0)),
        ("weighted", (2, "process", 1), (2, "process", 0)),
        ("distributed", (0, "process", 0), (2, "process", 1)),
        ("custom-batch-sampler", (2, "process", 0), (2, WORKER_TYPES[-1], 0)),
    ],
)
def test_state_resumes_in_a_fresh_process(
    tmp_path: Path, recipe: str, save_with: tuple[int, str, int], load_with: tuple[int, str, int]
) -> None:
    """Saved after k batches in one process and loaded in another, the rest equals one run.

    The samples carry sample_rng draws, so this also checks that augmentation survives a resume
    and a change of num_workers (and of worker kind).
    """
    if recipe == "torch-shuffle":
        pytest.importorskip("torch")
    expected = _child(recipe, 0, "process", 0, "-", "-", -1, EPOCHS)
    per_epoch = len(expected) // EPOCHS
    state = tmp_path / "state.json"
    k = per_epoch // 2 + 1
    head = _child(recipe, *save_with, "-", state, k, 0)
    assert json.loads(state.read_text())["batches"] == k
    tail = _child(recipe, *load_with, state, "-", len(expected) - k, 0)
    assert head + tail == expected


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
@pytest.mark.parametrize("persistent", [False, True], ids=["fresh", "persistent"])
@pytest.mark.parametrize("recipe", ["shuffle", "weighted", "distributed"])
def test_resume_with_workers_equals_uninterrupted(
    recipe: str, persistent: bool, worker_type: str
) -> None:
    """Two workers: save mid-epoch and at an epoch's end; a fresh loader with 2 workers resumes."""
    make = RECIPES[recipe]
    expected = take(make(loader_kwargs(0, "process", False)), -1, EPOCHS)
    per_epoch = len(expected) // EPOCHS
    for k in (3, per_epoch):
        first = make(loader_kwargs(2, worker_type, persistent))
        head = take(first, k, 0)
        state = json.loads(json.dumps(first.state_dict()))
        first.close()
        second = make(loader_kwargs(2, worker_type, persistent))
        second.load_state_dict(state)
        tail = take(second, len(expected) - k, 0)
        second.close()
        assert head + tail == expected, f"saved after {k} batches"


def _as_lightning(
    loader: DataLoader, epochs: range, stop_after: int = -1
) -> tuple[list[Any], dict[str, Any] | None]:
    """The batches of ``epochs`` in the order of Lightning's fit loop, and the state at a stop.

    The batches of ``epochs`` in the order of Lightning's fit loop, which creates the first
    epoch's iterator (a fit's first, or a resumed one) before ``sampler.set_epoch(e)`` and later
    ones after it; up to ``stop_after`` batches, and the loader's state right after the last
    of them (None when it did not stop).
    """
    out: list[Any] = []
    for epoch in epochs:
        if epoch == epochs[0]:
            iterator = iter(loader)
            loader.sampler.set_epoch(epoch)  # type: ignore[union-attr]
        else:
            loader.sampler.set_epoch(epoch)  # type: ignore[union-attr]
            iterator = iter(loader)
        for batch in iterator:
            out.append(np.asarray(batch).tolist())
            if len(out) == stop_after:
                state = json.loads(json.dumps(loader.state_dict()))
                iterator.close()
                return out, state
    return out, None


def _set_first(loader: DataLoader, epochs: range) -> list[Any]:
    """The batches of ``epochs`` in the usual order: ``sampler.set_epoch(e)``, then iterate."""
    out: list[Any] = []
    for epoch in epochs:
        loader.sampler.set_epoch(epoch)  # type: ignore[union-attr]
        out.extend(np.asarray(batch).tolist() for batch in loader)
    return out


def _kwargs(kind: str) -> dict[str, Any]:
    """No workers ("main"), or two of ``kind``."""
    return loader_kwargs(0, "process", False) if kind == "main" else loader_kwargs(2, kind, False)


@pytest.mark.parametrize("kind", ["main", *WORKER_TYPES])
@pytest.mark.parametrize("recipe", ["shuffle", "weighted", "distributed"])
def test_set_epoch_after_iter_keeps_the_epoch_and_resumes_mid_epoch(recipe: str, kind: str) -> None:
    """``set_epoch(e)`` after ``iter(loader)``, as Lightning calls it, is a no-op; states resume.

    Lightning calls ``set_epoch(e)`` after ``iter(loader)``, when workers may have begun the
    epoch: that is a no-op, so the run equals the usual set-then-iterate one, and a state saved
    after 5 batches loads into a fresh loader (not refused for an offset of 0) whose batches
    are the rest of that run, in its order.
    """
    make = RECIPES[recipe]
    expected = _set_first(make(_kwargs("main")), range(EPOCHS))
    per_epoch = len(expected) // EPOCHS
    assert expected[:per_epoch] != expected[per_epoch:]
    whole, _ = _as_lightning(make(_kwargs(kind)), range(EPOCHS))
    assert whole == expected
    head, state = _as_lightning(make(_kwargs(kind)), range(EPOCHS), stop_after=5)
    assert state is not None
    assert (state["epoch"], state["batches"]) == (0, 5)
    resumed = make(_kwargs(kind))
    resumed.load_state_dict(state)
    tail, _ = _as_lightning(resumed, range(EPOCHS))
    assert head + tail == expected


@pytest.mark.parametrize("kind", ["main", *WORKER_TYPES])
@pytest.mark.parametrize("recipe", ["shuffle", "weighted"])
def test_set_epoch_after_a_prefetched_epoch_leaves_the_next_epoch_next(
    recipe: str, kind: str
) -> None:
    """After a resumed epoch and its ``set_epoch``, the end-of-epoch state describes the next epoch.

    The rest of a resumed epoch (3 batches: two workers draw them all from the sampler at
    ``iter()``), then ``set_epoch`` of it: the state at the epoch's end (Lightning's end-of-epoch
    checkpoint) describes the next epoch, which a fresh loader then gives (a stoker sampler's
    epochs advance by themselves; a DistributedSampler's wait for ``set_epoch``, as torch's).
    """
    make = RECIPES[recipe]
    expected = _set_first(make(_kwargs("main")), range(EPOCHS))
    head, state = _as_lightning(make(_kwargs(kind)), range(EPOCHS), stop_after=5)
    resumed = make(_kwargs(kind))
    resumed.load_state_dict(state)
    rest, _ = _as_lightning(resumed, range(1))
    at_end = json.loads(json.dumps(resumed.state_dict()))
    assert (at_end["epoch"], at_end["batches"], at_end["sampler_state"]["epoch"]) == (1, 0, 1)
    again = make(_kwargs(kind))
    again.load_state_dict(at_end)
    later, _ = _as_lightning(again, range(1, EPOCHS))
    assert head + rest + later == expected


@pytest.mark.parametrize("kind", ["main", *WORKER_TYPES])
def test_set_epoch_of_another_epoch_applies_from_the_next_iter(kind: str) -> None:
    """``set_epoch(5)`` during epoch 0 leaves epoch 0 alone; the next epoch is epoch 5.

    ``set_epoch(5)`` while epoch 0 is being iterated leaves epoch 0's order and its saved place
    alone (torch's DistributedSampler rule: it affects the next ``iter()``); the next epoch is
    epoch 5, the order a fresh loader gives after ``set_epoch(5)``.
    """
    make = RECIPES["shuffle"]
    reference = make(_kwargs("main"))
    epoch_0 = _set_first(reference, range(1))
    epoch_5 = _set_first(reference, range(5, 6))
    loader = make(_kwargs(kind))
    iterator = iter(loader)
    head = [np.asarray(next(iterator)).tolist() for _ in range(3)]
    loader.sampler.set_epoch(5)  # type: ignore[union-attr]
    state = loader.state_dict()
    assert (state["sampler_state"]["epoch"], state["sampler_state"]["offset"]) == (0, 12)
    rest = [np.asarray(batch).tolist() for batch in iterator]
    assert head + rest == epoch_0
    indices = [[sample[0] for sample in batch] for batch in take(loader, -1, 1)]
    assert indices == [[sample[0] for sample in batch] for batch in epoch_5]


@pytest.mark.filterwarnings("ignore:This DataLoader will create 4 worker:UserWarning")
@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_sample_rng_batches_are_identical_for_any_number_of_workers(worker_type: str) -> None:
    """Augmented batches (sample_rng) are bit-identical for num_workers 0, 1, 2 and 4."""
    runs = {}
    for workers in (0, 1, 2, 4):
        for persistent in {False, workers > 0}:
            kwargs = loader_kwargs(workers, worker_type, persistent)
            loader = DataLoader(Augmented(), batch_size=4, shuffle=True, generator=21, **kwargs)
            runs[workers, persistent] = take(loader, -1, 3)
            loader.close()
    reference = runs[0, False]
    assert all(run == reference for run in runs.values())
    noise = [sample[1] for epoch_batch in reference for sample in epoch_batch]
    assert len(set(noise)) > 0.9 * len(noise), "draws differ between samples and epochs"


def test_sample_rng_differs_between_epochs_and_seeds() -> None:
    """The same index gets a new draw each epoch and under another generator seed."""

    def draws(seed: int) -> list[dict[int, int]]:
        loader = DataLoader(Augmented(), batch_size=5, generator=seed)
        return [dict(batch) for batch in take(loader, -1, 2)]

    first = draws(1)
    assert first == draws(1)
    assert first != draws(2)
    per_epoch = len(first) // 2
    assert first[:per_epoch] != first[per_epoch:]


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_out_of_order_resume_guarantee(worker_type: str) -> None:
    """in_order=False: the resumed run yields exactly the sampler's batches from position k on.

    Batches delivered out of order before the save may be repeated and as many skipped (at most
    prefetch_factor * num_workers); the count is exact, so no epoch is lost or repeated.
    """
    dataset = Augmented(delay=slow_multiples_of_five)
    ordered = take(DataLoader(dataset, batch_size=2, shuffle=True, generator=9), -1, 1)
    k = 6
    kwargs = loader_kwargs(2, worker_type, False)
    first = DataLoader(dataset, batch_size=2, shuffle=True, generator=9, in_order=False, **kwargs)
    head = take(first, k, 0)
    state = first.state_dict()
    first.close()
    second = DataLoader(dataset, batch_size=2, shuffle=True, generator=9)
    second.load_state_dict(state)
    tail = take(second, -1, 1)
    assert tail == ordered[k:]
    window = 2 * 2
    key = [tuple(map(tuple, batch)) for batch in head]
    missed = {tuple(map(tuple, b)) for b in ordered[:k]} - set(key)
    assert len(missed) <= window
    assert len(head) + len(tail) == len(ordered)


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_iterable_dataset_with_workers_resumes_by_fast_forward(worker_type: str) -> None:
    """An IterableDataset with 2 workers resumes by loading and dropping the delivered batches."""
    kwargs = loader_kwargs(2, worker_type, False)
    expected = take(DataLoader(Stream(40), batch_size=3, **kwargs), -1, 1)
    assert sorted(x for batch in expected for x in batch) == list(range(40))
    first = DataLoader(Stream(40), batch_size=3, **kwargs)
    head = take(first, 5, 0)
    state = first.state_dict()
    first.close()
    assert state["mode"] == "fast_forward"
    second = DataLoader(Stream(40), batch_size=3, **kwargs)
    second.load_state_dict(state)
    assert head + take(second, -1, 1) == expected


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_saving_does_not_wait_for_busy_workers(
    worker_type: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """state_dict() answers at once while every worker is busy: it asks the workers nothing.

    Asserted directly: no message goes to the workers and none is awaited during the call
    (counted on the live iterator's pool). The time bound stays below one slow sample (0.3 s),
    so waiting for a worker fails it too, without failing when the machine is merely loaded.
    """
    kwargs = loader_kwargs(2, worker_type, False)
    loader = DataLoader(Augmented(delay=slow_after_four), batch_size=2, generator=1, **kwargs)
    iterator: Any = iter(loader)
    next(iterator)
    time.sleep(0.05)  # the workers are now loading the slow batches
    pool = iterator._pool
    calls = {"send": 0, "receive": 0}

    def counting(name: str, real: Any) -> Any:
        def counted(*args: Any) -> Any:
            calls[name] += 1
            return real(*args)

        return counted

    for name in calls:
        monkeypatch.setattr(pool, name, counting(name, getattr(pool, name)))
    started = time.perf_counter()
    state = loader.state_dict()
    elapsed = time.perf_counter() - started
    asked = dict(calls)
    iterator.close()
    assert state["batches"] == 1
    assert asked == {"send": 0, "receive": 0}
    assert elapsed < 0.3, f"state_dict() took {elapsed:.3f} s"


def _resume_in_process(make: Any, k: int, state: dict[str, Any] | None = None) -> Any:
    """Take k batches from ``make()`` (after loading ``state``); return them and the new state."""
    loader = make()
    if state is not None:
        loader.load_state_dict(state)
    head = take(loader, k, 0)
    saved = json.loads(json.dumps(loader.state_dict()))
    loader.close()
    return head, saved


ITERABLE_STATE_CASES = [
    ("process", 1, 0),  # only worker 0 delivered: worker 1 starts afresh, and is next
    ("process", 4, 1),  # worker 1's shard has ended: it must be skipped, not restarted
    ("process", 7, 0),  # the epoch's last batch, before StopIteration: the next epoch follows
    (WORKER_TYPES[-1], 4, 0),
    (WORKER_TYPES[-1], 7, 1),
]


@pytest.mark.parametrize(("worker_type", "k", "persistent"), ITERABLE_STATE_CASES)
def test_iterable_dataset_resumes_from_worker_states_in_a_fresh_process(
    tmp_path: Path, worker_type: str, k: int, persistent: int
) -> None:
    """2 workers, each replica with its own state_dict: a fresh process resumes exactly.

    The dataset's shards have different lengths (worker 1 runs out after 2 batches), so the
    resumed round-robin must start at the right worker and leave the finished one alone.
    """
    make = RECIPES["iterable-state"]
    expected = take(make(loader_kwargs(2, "thread", False)), -1, EPOCHS)
    per_epoch = len(expected) // EPOCHS
    assert [batch[0] // 100 for batch in expected[:per_epoch]] == [0, 1, 0, 1, 0, 0, 0]
    state_file = tmp_path / "state.json"
    head = _child("iterable-state", 2, worker_type, persistent, "-", state_file, k, 0)
    state = json.loads(state_file.read_text())
    assert state["mode"] == "worker_states"
    if k == per_epoch:
        assert (state["epoch"], state["batches"], state["sampler_state"]) == (1, 0, None)
    else:
        resume = state["sampler_state"]
        assert resume["next_worker"] == {1: 1, 4: 0}[k]
        assert resume["exhausted"] == ([1] if k >= 4 else [])
    tail = _child(
        "iterable-state", 2, worker_type, persistent, state_file, "-", len(expected) - k, 0
    )
    assert head + tail == expected


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_iterable_resume_from_worker_states_can_be_saved_again(worker_type: str) -> None:
    """A resumed loader saves a state that resumes again; no sample is loaded twice."""
    log: list[int] = []
    kwargs = loader_kwargs(2, worker_type, False)
    expected = take(DataLoader(CountingShards(), batch_size=3, **kwargs), -1, 1)

    def make() -> DataLoader:
        return DataLoader(CountingShards(log=log), batch_size=3, **kwargs)

    first, state = _resume_in_process(make, 2)
    second, state = _resume_in_process(make, 1, state)
    assert state["sampler_state"]["workers"] == [{"position": 6}, {"position": 3}]
    log.clear()
    third, _ = _resume_in_process(make, len(expected) - 3, state)
    assert first + second + third == expected
    if worker_type == "thread":  # the shared log shows what the workers produced
        assert sorted(log) == sorted(x for batch in third for x in batch)


def test_iterable_worker_states_reach_spawned_workers() -> None:
    """With spawn (the setup is pickled once for all workers), each worker gets its own state."""
    kwargs = {**loader_kwargs(2, "process", False), "multiprocessing_context": "spawn"}
    expected = take(
        DataLoader(CountingShards(), batch_size=3, **loader_kwargs(2, "thread", False)), -1, 1
    )

    def make() -> DataLoader:
        return DataLoader(CountingShards(), batch_size=3, **kwargs)

    head, state = _resume_in_process(make, 3)
    assert state["sampler_state"]["workers"] == [{"position": 6}, {"position": 3}]
    tail, _ = _resume_in_process(make, len(expected) - 3, state)
    assert head + tail == expected


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_iterable_out_of_order_resume_loses_and_repeats_nothing(worker_type: str) -> None:
    """in_order=False: per-worker states make the resumed run yield exactly the undelivered batches.

    in_order=False: per-worker states make the resumed run yield exactly the undelivered
    batches, each worker's in its own order (arrival order between workers).
    """
    kwargs = {**loader_kwargs(2, worker_type, False), "in_order": False}

    def make() -> DataLoader:
        return DataLoader(CountingShards((12, 12)), batch_size=3, **kwargs)

    head, state = _resume_in_process(make, 3)
    tail, _ = _resume_in_process(make, 8 - 3, state)
    samples = [x for batch in head + tail for x in batch]
    assert sorted(samples) == [*range(12), *range(100, 112)]
    for worker in (0, 1):
        mine = [x for x in samples if x // 100 == worker]
        assert mine == sorted(mine)


class BrokenState(CountingShards):
    """CountingShards whose state_dict() fails in worker 1."""

    def state_dict(self) -> dict[str, int]:
        info = get_worker_info()
        if info is not None and info.id == 1:
            raise OSError("no state here")
        return super().state_dict()


class BrokenLoad(CountingShards):
    """CountingShards whose load_state_dict() fails."""

    def load_state_dict(self, state: dict[str, int]) -> None:
        raise KeyError(f"cannot restore {state}")


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_iterable_worker_state_failures(worker_type: str) -> None:
    """A failing state_dict() falls back to fast-forward; a failing load_state_dict() re-raises.

    A failing state_dict() warns and falls back to fast-forward (still exact); a failing
    load_state_dict() re-raises in the main process with its type and worker id.
    """
    kwargs = loader_kwargs(2, worker_type, False)
    expected = take(DataLoader(CountingShards(), batch_size=3, **kwargs), -1, 1)
    broken = DataLoader(BrokenState(), batch_size=3, **kwargs)
    with pytest.warns(RuntimeWarning, match="state_dict\\(\\) failed in worker 1"):
        head = take(broken, 3, 0)
    state = broken.state_dict()
    broken.close()
    assert state["mode"] == "fast_forward"
    resumed = DataLoader(BrokenState(), batch_size=3, **kwargs)
    resumed.load_state_dict(state)
    with pytest.warns(RuntimeWarning, match="state_dict\\(\\) failed"):
        assert head + take(resumed, len(expected) - 3, 0) == expected
    resumed.close()

    good = DataLoader(CountingShards(), batch_size=3, **kwargs)
    take(good, 3, 0)
    state = good.state_dict()
    good.close()
    failing = DataLoader(BrokenLoad(), batch_size=3, **kwargs)
    failing.load_state_dict(state)
    with pytest.raises(KeyError, match="cannot restore") as caught:
        next(iter(failing))
    assert "load_state_dict" in str(caught.value)
    assert caught.value.worker_id in (0, 1)  # type: ignore[attr-defined]
    failing.close()
