"""Batch slabs, exercised in one process: the writer (worker side) and reader (main side)."""

from __future__ import annotations

import gc
import os
import time
from typing import Any

import numpy as np
import pytest

from stoker.data._collate import default_collate
from stoker.data._workers import shm as _shm
from stoker.data._workers.protocol import BATCH, FAILED, Meta, Reply
from stoker.data._workers.slabs import (
    DROP_SHARE,
    IDLE_BATCHES,
    REFAULT_SECONDS_PER_BYTE,
    SlabReader,
    SlabWriter,
)

pytestmark = pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs /dev/shm")


def _image_batch(seed: int, n: int = 8) -> Any:
    rng = np.random.default_rng(seed)
    return [
        (rng.integers(0, 255, (3, 32, 32), dtype=np.uint8), {"label": i, "name": f"s{i}"})
        for i in range(n)
    ]


class _Pair:
    """A writer and a reader wired back to back, as a worker and the main process would be."""

    def __init__(self, directory: str, threshold: int = 1024) -> None:
        self.writer = SlabWriter(os.getpid(), threshold=threshold, directory=directory)
        self.reader = SlabReader()
        self.directory = directory

    def send(self, samples: list[Any], collate: Any = None) -> Any:
        self.writer.release(self.reader.take_released())
        batch = (collate or self.writer.collate)(samples)
        data = self.writer.encode(Reply(0, BATCH, batch, Meta(busy=0.0)))
        return self.reader.decode(bytes(data))


@pytest.fixture
def pair(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> _Pair:
    """A writer/reader pair whose segments live in a temporary directory.

    A writer/reader pair whose segments live in a temporary directory (once an earlier
    test's workers, stopped in the background, have left this process's memory alone).
    """
    from stoker.data._workers.process import _REAPER

    assert _REAPER.wait_idle(10)
    directory = str(tmp_path)
    real_map = _shm.map_segment
    monkeypatch.setattr(
        "stoker.data._workers.slabs.map_segment",
        lambda name, size: real_map(name, size, directory),
    )
    return _Pair(directory)


def test_large_batch_arrives_as_views_on_a_slab(pair: _Pair) -> None:
    """A large batch equals default_collate's result and its arrays are views, not copies."""
    samples = _image_batch(1)
    expected = default_collate(samples)
    pair.send(samples)  # the first large batch sizes the slabs
    task, status, batch, meta = pair.send(samples)
    assert (task, status) == (0, BATCH)
    np.testing.assert_array_equal(batch[0], expected[0])
    np.testing.assert_array_equal(batch[1]["label"], expected[1]["label"])
    assert batch[1]["name"] == expected[1]["name"]
    assert not batch[0].flags.owndata
    assert batch[0].base is not None
    assert pair.reader.bytes_in_slabs >= 2 * expected[0].nbytes
    assert meta.retired == ()


def test_slab_is_released_when_the_batch_dies_and_reused(pair: _Pair) -> None:
    """Freeing a batch returns its slab; the next batch reuses it instead of a new segment."""
    pair.send(_image_batch(1))
    gc.collect()
    first = pair.send(_image_batch(2))
    slabs_before = set(pair.writer.slabs)
    assert len(pair.reader.in_use) == 1
    del first
    gc.collect()
    assert pair.reader.in_use == set()
    again = pair.send(_image_batch(3))
    assert set(pair.writer.slabs) == slabs_before
    np.testing.assert_array_equal(again[2][0], default_collate(_image_batch(3))[0])


def test_pool_grows_while_batches_are_kept_and_data_stays_intact(pair: _Pair) -> None:
    """Kept batches hold their slabs: new batches get new slabs and never overwrite old ones."""
    kept = [pair.send(_image_batch(seed)) for seed in range(5)]
    assert len(pair.writer.slabs) >= 4
    for seed, reply in enumerate(kept):
        np.testing.assert_array_equal(reply[2][0], default_collate(_image_batch(seed))[0])
    assert len(pair.reader.in_use) >= 4


def _resident_bytes() -> int:
    """This process's resident pages of mapped files and shared memory (the slabs' kind)."""
    total = 0
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(("RssFile:", "RssShmem:")):
                total += int(line.split()[1]) * 1024
    return total


def test_a_freed_slab_leaves_the_main_process_rss_once_idle(
    pair: _Pair, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A freed large slab keeps its pages while reused and gives them up once left idle.

    A freed large slab keeps its pages in the reader while the writer fills it again; one
    left out of IDLE_BATCHES batches gives them up; the data stays right throughout. (The
    pipeline counts as fast whatever this machine's pace: no slab is dropped at its release.)
    """
    monkeypatch.setattr("stoker.data._workers.slabs.DROP_SHARE", 0.0)
    rng = np.random.default_rng(7)
    samples = [rng.integers(0, 255, 1 << 20, dtype=np.uint8) for _ in range(8)]  # 8 MiB
    expected = int(np.stack(samples).sum())
    pair.send(samples)  # sizes the slabs
    gc.collect()
    first, second = pair.send(samples), pair.send(samples)  # two slabs
    assert int(first[2].sum()) == int(second[2].sum()) == expected  # every page read
    touched = _resident_bytes()
    del first, second
    gc.collect()
    assert touched - _resident_bytes() < 1 << 20  # freed, not idle yet
    reverse = np.stack(samples[::-1])
    for _ in range(IDLE_BATCHES + 1):  # the slab freed last cycles, the other sits out
        again = pair.send(samples[::-1])
        assert np.array_equal(again[2], reverse)
        del again
        gc.collect()
    assert touched - _resident_bytes() >= 6 << 20


def test_a_slow_pipeline_drops_a_freed_slab_at_once(pair: _Pair) -> None:
    """Batches 0.1 s apart: an 8 MiB slab's pages leave the reader's RSS when the batch is freed.

    Batches 0.1 s apart: mapping an 8 MiB slab's pages back costs under DROP_SHARE of that,
    so its pages leave the reader's RSS when the batch is freed; the data stays right.
    """
    rng = np.random.default_rng(8)
    samples = [rng.integers(0, 255, 1 << 20, dtype=np.uint8) for _ in range(8)]  # 8 MiB
    assert (8 << 20) * REFAULT_SECONDS_PER_BYTE < DROP_SHARE * 0.1
    pair.send(samples)  # sizes the slabs
    gc.collect()
    for _ in range(3):
        time.sleep(0.1)
        batch = pair.send(samples)
        assert int(batch[2].sum()) == int(np.stack(samples).sum())  # every page read
        touched = _resident_bytes()
        del batch
        gc.collect()
        assert touched - _resident_bytes() >= 6 << 20


def test_a_share_of_a_split_batch_sizes_slabs_for_the_whole_batch(pair: _Pair) -> None:
    """A 4-of-8 share sets the slab size for 8 but travels in a segment of its own size.

    A 4-of-8 share sets the slab size for 8, so full batches fit their slabs, but travels in
    a segment of its own size (not allocated and zeroed for 8), retired once it comes back.
    """
    rng = np.random.default_rng(5)
    samples = [(rng.integers(0, 255, 20000, dtype=np.uint8), i) for i in range(8)]
    pair.writer.expect_share(4, 8)
    data = pair.writer.encode(Reply(0, BATCH, samples[:4], Meta(busy=0.0)))
    share = pair.reader.decode(bytes(data))[2]
    np.testing.assert_array_equal(share[3][0], samples[3][0])
    assert not share[3][0].flags.owndata
    assert pair.writer.slab_size >= 8 * samples[0][0].nbytes
    (share_slab,) = pair.writer.slabs.values()
    assert 4 * samples[0][0].nbytes <= share_slab.size < pair.writer.slab_size
    del share
    gc.collect()
    batch = pair.send(samples)[2]
    np.testing.assert_array_equal(batch[0], default_collate(samples)[0])
    assert not batch[0].flags.owndata  # it fitted: no overflow sent inline
    assert [slab.size for slab in pair.writer.slabs.values()] == [pair.writer.slab_size]


def test_a_share_of_more_than_64_samples_is_sized_for_all_of_them(pair: _Pair) -> None:
    """The size estimate counts a long share's samples beyond the first 64 like those.

    The size estimate counts a long share's samples beyond the first 64 like those: a
    100-of-200 share fits its segment, and the next full batch fits the slab size it set.
    """
    samples = [(np.full(2000, i % 256, dtype=np.uint8), i) for i in range(200)]
    pair.writer.expect_share(100, 200)
    data = pair.writer.encode(Reply(0, BATCH, samples[:100], Meta(busy=0.0)))
    share = pair.reader.decode(bytes(data))[2]
    assert all(not sample.flags.owndata for sample, _ in share)  # every one in the segment
    assert pair.writer.slab_size >= 200 * 2000
    del share
    gc.collect()
    batch = pair.send(samples)[2]
    assert not batch[0].flags.owndata
    np.testing.assert_array_equal(batch[0], default_collate(samples)[0])


def test_custom_collate_arrays_are_copied_into_the_slab(pair: _Pair) -> None:
    """A user collate_fn's arrays still travel through the slab (one copy in the worker)."""

    def collate(samples: list[Any]) -> dict[str, Any]:
        return {"x": np.stack([s[0] for s in samples]).astype(np.float32), "n": len(samples)}

    pair.send(_image_batch(0), collate)
    reply = pair.send(_image_batch(4), collate)
    assert reply[2]["n"] == 8
    np.testing.assert_array_equal(reply[2]["x"], collate(_image_batch(4))["x"])
    assert not reply[2]["x"].flags.owndata


def test_a_workers_first_large_batch_is_stacked_straight_into_its_slab(pair: _Pair) -> None:
    """The first large batch is collated into slab memory, not copied there from private memory.

    The first large batch is collated into slab memory (sized from its first sample), not
    into private memory first and then copied: one slab, the collated array a view on it, and
    the batch equal to default_collate's.
    """
    samples = _image_batch(2)
    collated = pair.writer.collate(samples)
    assert pair.writer.large
    assert len(pair.writer.slabs) == 1
    slab = next(iter(pair.writer.slabs.values()))
    assert np.shares_memory(collated[0], slab.array)
    data = pair.writer.encode(Reply(0, BATCH, collated, Meta(busy=0.0)))
    batch = pair.reader.decode(bytes(data))[2]
    np.testing.assert_array_equal(batch[0], default_collate(samples)[0])
    assert not batch[0].flags.owndata


def test_small_batches_go_inline(pair: _Pair) -> None:
    """A batch under the threshold is pickled through the pipe: no slab is created."""
    reply = pair.send([np.arange(3), np.arange(3)])
    np.testing.assert_array_equal(reply[2], [[0, 1, 2], [0, 1, 2]])
    assert reply[2].flags.owndata
    assert pair.writer.slabs == {}


def test_growing_batches_retire_small_slabs(pair: _Pair) -> None:
    """When batches outgrow the slabs, returned small slabs are retired on both sides."""
    pair.send(_image_batch(0, n=8))
    gc.collect()
    pair.send(_image_batch(1, n=32))  # overflows: arrays go inline, slab size grows
    gc.collect()
    for seed in range(3):
        reply = pair.send(_image_batch(seed, n=32))
        np.testing.assert_array_equal(reply[2][0], default_collate(_image_batch(seed, n=32))[0])
        del reply
        gc.collect()
    sizes = {slab.size for slab in pair.writer.slabs.values()}
    assert sizes == {pair.writer.slab_size}


def test_failure_replies_free_the_slab(pair: _Pair) -> None:
    """A batch collated into a slab but answered FAILED gives the slab back to the pool."""
    pair.send(_image_batch(0))
    gc.collect()
    pair.writer.release(pair.reader.take_released())
    pair.writer.collate(_image_batch(1))  # placed in a slab, then the fetch "fails"
    pair.writer.encode(Reply(0, FAILED, None, Meta()))
    assert sorted(pair.writer.free) == sorted(pair.writer.slabs)


@pytest.mark.parametrize("collated_by", ["default_collate", "a custom collate_fn"])
def test_plain_cpu_tensors_travel_in_the_slab_and_arrive_as_tensors_on_it(
    pair: _Pair, collated_by: str
) -> None:
    """Tensor samples are stacked into the slab and come back as tensors on its memory.

    Tensor samples are stacked into the slab (or a custom collate_fn's tensors copied into
    it) and come back as tensors on the slab's memory (torch.from_numpy, no copy), equal to
    torch.stack's; a tensor that needs its own pickling (requires_grad) is left to torch.
    """
    torch = pytest.importorskip("torch")
    samples = [(torch.full((3, 32, 32), float(i)), i) for i in range(8)]
    collate = (
        None if collated_by == "default_collate" else (lambda s: [torch.stack([x for x, _ in s])])
    )
    pair.send(samples, collate)  # the first large batch sizes the slabs
    _, _, batch, _ = pair.send(samples, collate)
    images = batch[0]
    assert type(images) is torch.Tensor
    assert torch.equal(images, torch.stack([x for x, _ in samples]))
    assert images.numpy().base is not None  # a view on the slab, not memory of its own
    assert pair.reader.bytes_in_slabs >= 2 * images.numel() * 4
    leaf = torch.ones(8, 3, 32, 32, requires_grad=True)
    _, _, kept, _ = pair.send(samples, lambda s: [leaf])
    assert kept[0].requires_grad
