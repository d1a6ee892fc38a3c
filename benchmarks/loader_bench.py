"""Side-by-side loader benchmark: stoker.data, stoker.torch.data, torch.utils.data, SPDL, Grain.

Every measurement runs in a fresh child process (so time to first batch includes starting the
workers, and peak RSS is that child's own high-water mark), the loaders alternate within each
repeat (their order rotates from repeat to repeat), and each cell is the median of the repeats.
The clock starts after the library is imported and the dataset built, when the loader is
created; samples/s counts every sample over the whole run, first batch included (time to first
batch is its own column). SPDL and Grain are driven their fastest documented way: SPDL with
``spdl.pipeline.iterate_in_subprocess`` per worker, each subprocess building its own batches
(every ``workers``-th batch of a map-style dataset, or its shard of the iterable), read round
robin, with a ``SharedMemorySegmentPool`` arena when a batch exceeds 4 MiB (not
``spdl.dataloader.get_pytorch_dataloader``, which pickles every result through an executor and is
far slower on small batches); Grain with ``grain.MapDataset.source(...).batch(...)`` and
``mp_prefetch`` for workers.

Workloads (from the issue):

* ``small``: 16 float32 values and an int label per sample, batch 256;
* ``image``: a 3x224x224 uint8 array and an int label per sample, batch 64;
* ``cpu``: about 0.5 ms of NumPy work per sample, batch 32;
* ``iterable``: an IterableDataset of ``small`` samples sharded by worker, batch 256;
* ``persistent``: ``small`` with persistent workers over 3 epochs;
* ``cow`` (``--only cow``, its own table): 3,000,000 (str, small dict) records, about 1.1 GB as
  plain lists, read once in a shuffled order with 4 workers; the total PSS of the process tree
  (``/proc/PID/smaps_rollup``, sampled during the epoch) against the ``num_workers=0`` run's,
  for plain lists and for stoker's compact containers (see :func:`cow_main`);
* ``memcpy``: the reference for ``image``: copying each batch's bytes once with NumPy, into one
  destination (cache-resident) and into six rotating ones (``memcpy-6buf``, the working set of
  two workers' slabs; a loader must not overwrite the batch the training loop holds).

* ``jpeg`` (``--only jpeg``, its own table): 2,000 generated 500x375 JPEGs, decode, random-resized
  crop to 224, flip, normalise to float32 CHW, batch 64, against the plain two-process loop (the
  limit), with CPU over the process tree, peak RSS, first batch and a check of the data (see
  :func:`jpeg_child`; SPDL there runs ``iterate_in_subprocess`` per worker with an arena).

Usage::

    python benchmarks/loader_bench.py            # full run (a few minutes on 2 cores)
    python benchmarks/loader_bench.py --quick    # short run
    python benchmarks/loader_bench.py --only jpeg  # the JPEG-folder table (a few minutes)
    python benchmarks/loader_bench.py --rss      # stoker main-process RSS over 10 epochs
    python benchmarks/loader_bench.py --transport  # pipe vs slab by batch size
    python benchmarks/loader_bench.py --copy-split  # image batches: where a batch's time goes
    python benchmarks/loader_bench.py --state-tracking  # per-batch cost, DistributedSampler
    python benchmarks/loader_bench.py --only cow [--quick]  # copy-on-write: PSS of the tree

This file is not a test module (pytest collects ``test_*.py`` only).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

LOADERS = ("stoker", "stoker.torch", "torch", "spdl", "grain")
"""``stoker`` is stoker.data (NumPy batches), ``stoker.torch`` the torch door (torch's batches)."""
MEMCPY = ("memcpy", "memcpy-6buf")
"""References for ``image``: one cache-resident destination, and six rotating ones."""
SAMPLE_BYTES = {"small": 16 * 4 + 8, "image": 3 * 224 * 224 + 8, "cpu": 64 * 8 + 8}
SAMPLE_BYTES["iterable"] = SAMPLE_BYTES["small"]
SAMPLE_BYTES["persistent"] = SAMPLE_BYTES["small"]
SINGLE_THREADED = dict.fromkeys(("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"), "1")
"""BLAS stays on one thread in every child, so that workers, not BLAS, use the cores."""
BATCH = {"small": 256, "image": 64, "cpu": 32, "iterable": 256, "persistent": 256}


# -- datasets (module level: picklable for spawn-based peers) ------------------------------------
class SmallData:
    """Sample i: a view of 16 float32 values and the int label i."""

    def __init__(self, n: int) -> None:
        """Make ``n`` samples over one seeded table of random values."""
        self.n = n
        self.table = np.random.default_rng(0).standard_normal((n, 16), dtype=np.float32)

    def __len__(self) -> int:
        """Number of samples."""
        return self.n

    def __getitem__(self, index: int) -> tuple[Any, int]:
        """Sample ``index``: its row of the table and the label ``index``."""
        return self.table[index], index


class ImageData:
    """Sample i: one of 8 preloaded 3x224x224 uint8 images and the int label i."""

    def __init__(self, n: int) -> None:
        """Make ``n`` samples over 8 seeded random images."""
        self.n = n
        self.images = np.random.default_rng(0).integers(0, 255, (8, 3, 224, 224), dtype=np.uint8)

    def __len__(self) -> int:
        """Number of samples."""
        return self.n

    def __getitem__(self, index: int) -> tuple[Any, int]:
        """Sample ``index``: image ``index % 8`` and the label ``index``."""
        return self.images[index % 8], index


class CpuData:
    """Sample i: about 0.5 ms of NumPy work (matrix products seeded by i)."""

    def __init__(self, n: int) -> None:
        """Make ``n`` samples."""
        self.n = n

    def __len__(self) -> int:
        """Number of samples."""
        return self.n

    def __getitem__(self, index: int) -> tuple[Any, int]:
        """Sample ``index``: the result's first row (work seeded by ``index``) and the label."""
        rng = np.random.default_rng(index)
        x = rng.standard_normal((64, 64))
        for _ in range(30):
            x = np.tanh(x @ x.T / 64.0)
        return x[0].copy(), index


def _stream_items(n: int, worker: int, workers: int) -> Iterator[tuple[Any, int]]:
    table = np.random.default_rng(0).standard_normal((1024, 16), dtype=np.float32)
    for index in range(worker, n, workers):
        yield table[index % 1024], index


def _make_stream(base: type, info_fn: Callable[[], Any]) -> Any:
    class Stream(base):  # type: ignore[misc, valid-type]
        def __init__(self, n: int) -> None:
            self.n = n

        def __iter__(self) -> Iterator[tuple[Any, int]]:
            info = info_fn()
            worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
            return _stream_items(self.n, worker, workers)

    return Stream


def _spdl_stream(n: int, worker: int, workers: int, batch: int) -> Iterator[Any]:
    items: list[Any] = []
    for item in _stream_items(n, worker, workers):
        items.append(item)
        if len(items) == batch:
            yield np.stack([x for x, _ in items]), np.array([y for _, y in items])
            items = []
    if items:
        yield np.stack([x for x, _ in items]), np.array([y for _, y in items])


def _spdl_map(workload: str, n: int, worker: int, workers: int, batch: int) -> Iterator[Any]:
    """One SPDL subprocess's share of a map-style epoch: batches worker, worker + workers, ...

    Dealt like torch's and stoker's workers deal batches, so that reading the sources round
    robin gives the epoch's batches in order.
    """
    dataset = _dataset(workload, n)
    for start in range(worker * batch, n, workers * batch):
        items = [dataset[index] for index in range(start, min(n, start + batch))]
        yield np.stack([x for x, _ in items]), np.array([y for _, y in items])


def _round_robin(iterables: list[Any]) -> Iterator[Any]:
    iterators = [iter(it) for it in iterables]
    while iterators:
        for iterator in list(iterators):
            try:
                yield next(iterator)
            except StopIteration:
                iterators.remove(iterator)


def _dataset(workload: str, n: int) -> Any:
    if workload in ("small", "persistent"):
        return SmallData(n)
    if workload == "image":
        return ImageData(n)
    return CpuData(n)


# -- one measurement, in a child process ---------------------------------------------------------
def _make_dataset(loader: str, workload: str, n: int) -> Any:
    if workload != "iterable":
        return _dataset(workload, n)
    if loader == "stoker":
        import stoker.data as sd

        return _make_stream(sd.IterableDataset, sd.get_worker_info)(n)
    if loader == "torch":
        import torch.utils.data as td

        return _make_stream(td.IterableDataset, td.get_worker_info)(n)
    if loader == "stoker.torch":
        import stoker.torch.data as door

        return _make_stream(door.IterableDataset, door.get_worker_info)(n)
    return None


def _build(
    loader: str, workload: str, n: int, workers: int, ds: Any
) -> tuple[Callable[[], Any], int]:
    """Return (make an iterable over one epoch, epochs) for this loader and workload."""
    batch = BATCH[workload]
    persistent = workload == "persistent"
    epochs = 3 if persistent else 1
    if loader == "stoker":
        import stoker.data as sd

        dl = sd.DataLoader(
            ds, batch_size=batch, num_workers=workers, persistent_workers=persistent and workers > 0
        )
        return (lambda: dl), epochs
    if loader == "stoker.torch":
        import stoker.torch.data as door

        doorl = door.DataLoader(
            ds, batch_size=batch, num_workers=workers, persistent_workers=persistent and workers > 0
        )
        return (lambda: doorl), epochs
    if loader == "torch":
        import torch.utils.data as td

        tl = td.DataLoader(
            ds, batch_size=batch, num_workers=workers, persistent_workers=persistent and workers > 0
        )
        return (lambda: tl), epochs
    if loader == "spdl":
        if workload == "iterable":
            from functools import partial

            from spdl.pipeline import iterate_in_subprocess

            if workers == 0:
                # Without a subprocess there is no SPDL code left to measure, only the batching
                # generator this benchmark feeds it; report n/a rather than a number of our own.
                raise NotImplementedError("spdl's iterate_in_subprocess needs num_workers >= 1")
            sources = [
                iterate_in_subprocess(partial(_spdl_stream, n, w, workers, batch))
                for w in range(workers)
            ]
            return (lambda: _round_robin(sources)), epochs
        from functools import partial

        from spdl.pipeline import SharedMemorySegmentPool, iterate_in_subprocess

        if workers == 0:
            raise NotImplementedError("spdl's iterate_in_subprocess needs num_workers >= 1")
        sample = _dataset(workload, 1)[0][0]
        # Large batches travel through a shared-memory arena, as SPDL documents for them: one
        # per subprocess (a pool's reclaim count is one producer's).
        unit = batch * (sample.nbytes + 8) + (1 << 20)

        def arena() -> dict[str, Any]:
            return {"arena": SharedMemorySegmentPool(unit, 4)} if unit > 1 << 22 else {}

        sources = [
            iterate_in_subprocess(
                partial(_spdl_map, workload, n, w, workers, batch), buffer_size=2, **arena()
            )
            for w in range(workers)
        ]
        return (lambda: _round_robin(sources)), epochs
    if loader == "grain":
        if workload == "iterable":
            raise NotImplementedError("grain has no IterableDataset source with workers")
        import grain

        dataset = grain.MapDataset.source(ds).batch(batch)
        if workers == 0:
            return (lambda: dataset), epochs
        options = grain.multiprocessing.MultiprocessingOptions(num_workers=workers)
        return (lambda: dataset.to_iter_dataset().mp_prefetch(options)), epochs
    raise ValueError(loader)


def _count(batch: Any) -> int:
    first = batch[0] if isinstance(batch, (list, tuple)) else batch
    return len(first)


def _import(loader: str) -> None:
    """Import the loader's library before the clock starts (imports are not loading)."""
    modules = {
        "stoker": ["stoker.data"],
        "stoker.torch": ["stoker.torch.data"],
        "torch": ["torch.utils.data"],
        "spdl": ["spdl.dataloader", "spdl.pipeline"],
        "grain": ["grain"],
    }[loader]
    for module in modules:
        __import__(module)


def child(loader: str, workload: str, n: int, workers: int) -> dict[str, Any]:
    """Run one measurement and return its numbers (the clock starts at loader creation)."""
    _import(loader)
    ds = _make_dataset(loader, workload, n)
    started = time.perf_counter()
    make, epochs = _build(loader, workload, n, workers, ds)
    samples = 0
    first = None
    first_samples = 0
    for _ in range(epochs):
        for batch in make():
            samples += _count(batch)
            if first is None:
                first = time.perf_counter() - started
                first_samples = samples
            del batch
    elapsed = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    # over the whole run, first batch included: a loader that works ahead before its first
    # batch (thread pools, large prefetch) gets no credit for work done before the clock's
    # "steady state" would start
    del first_samples
    return {"samples": samples, "seconds": elapsed, "ttfb": first, "rss": rss}


def memcpy_reference(n: int, buffers: int = 1) -> dict[str, Any]:
    """Copy each image batch's bytes once (64 images into a batch buffer): the upper bound.

    With ``buffers=1`` the one destination stays in the CPU cache; a loader cannot do that,
    since the training loop still holds the previous batch while the next one is written, so
    ``buffers=6`` (the slabs two stoker workers cycle through) is the like-for-like reference.
    """
    data = ImageData(n)
    outs = [np.empty((64, 3, 224, 224), np.uint8) for _ in range(buffers)]
    started = time.perf_counter()
    samples = 0
    for number, start in enumerate(range(0, n, 64)):
        out = outs[number % buffers]
        for row in range(64):
            out[row] = data.images[(start + row) % 8]
        samples += 64
    elapsed = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {"samples": samples, "seconds": elapsed, "ttfb": 0.0, "rss": rss}


def _run_child(args: list[str], timeout: float) -> dict[str, Any] | None:
    command = [sys.executable, __file__, "--child", *args]
    env = {**os.environ, **SINGLE_THREADED}
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, check=False, env=env
        )
    except subprocess.TimeoutExpired:
        return {"error": "timeout"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            result: dict[str, Any] = json.loads(line)
            return result
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"error": tail[:120]}


def _cells(quick: bool) -> list[tuple[str, int, int]]:
    scale = 1 if quick else 4
    sizes = {
        "small": 256 * 100 * scale,
        "image": 64 * 25 * scale,
        "cpu": 32 * 10 * scale,
        "iterable": 256 * 100 * scale,
        "persistent": 256 * 40 * scale,
    }
    cells = []
    for workload in ("small", "image", "cpu", "iterable", "persistent"):
        counts = (0, 2, 4) if workload == "cpu" else (0, 2)
        if workload == "persistent":
            counts = (2,)
        cells.extend((workload, workers, sizes[workload]) for workers in counts)
    return cells


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--loaders", default=",".join(LOADERS))
    parser.add_argument("--only", default="", help="comma-separated workloads to run")
    parser.add_argument("--child", nargs=4, metavar=("LOADER", "WORKLOAD", "N", "WORKERS"))
    parser.add_argument("--rss", action="store_true", help="stoker RSS over 10 epochs")
    parser.add_argument("--transport", action="store_true", help="pipe vs slab by size")
    parser.add_argument(
        "--copy-split",
        action="store_true",
        help="image batches with 2 workers: the worker's copy, the handoff, the first touch",
    )
    parser.add_argument(
        "--state-tracking",
        action="store_true",
        help="time per batch of stoker with a DistributedSampler, in and out of order",
    )
    args = parser.parse_args(argv)
    if args.child:
        loader, workload, n, workers = args.child
        if workload == "jpeg":
            print(json.dumps(jpeg_child(loader, int(n), int(workers))))
        elif workload == "cow":
            print(json.dumps(cow_child(loader, int(n), int(workers))))
        elif workload == "split":
            print(json.dumps(split_child(loader, int(n), int(workers))))
        elif loader.startswith("memcpy"):
            buffers = int(loader.removeprefix("memcpy").strip("-").removesuffix("buf") or 1)
            print(json.dumps(memcpy_reference(int(n), buffers)))
        else:
            print(json.dumps(child(loader, workload, int(n), int(workers))))
        return
    if args.rss:
        rss_over_epochs()
        return
    if args.transport:
        transport_sweep()
        return
    if args.copy_split:
        copy_split(args.repeats)
        return
    if args.state_tracking:
        state_tracking(args.repeats)
        return
    if "jpeg" in args.only.split(","):
        jpeg_main(args.repeats)
        if args.only == "jpeg":
            return
    if args.only == "cow":
        cow_main(args.quick, args.repeats)
        return
    loaders = [name for name in args.loaders.split(",") if name]
    cells = _cells(args.quick)
    if args.only:
        cells = [cell for cell in cells if cell[0] in args.only.split(",")]
    results: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for repeat in range(args.repeats):
        order = loaders[repeat % len(loaders) :] + loaders[: repeat % len(loaders)]
        for workload, workers, n in cells:
            for loader in order:
                result = _run_child([loader, workload, str(n), str(workers)], timeout=300)
                results.setdefault((workload, loader, workers), []).append(result or {})
            if workload == "image" and workers == 0:
                for name in MEMCPY:
                    result = _run_child([name, workload, str(n), "0"], timeout=120)
                    results.setdefault((workload, name, 0), []).append(result or {})
        print(f"repeat {repeat + 1}/{args.repeats} done", file=sys.stderr, flush=True)
    _print_table(results, cells, loaders)


def _print_table(
    results: dict[tuple[str, str, int], list[dict[str, Any]]],
    cells: list[tuple[str, int, int]],
    loaders: list[str],
) -> None:
    header = (
        "| workload | workers | loader | samples/s | MB/s | first batch (ms) | peak RSS (MB) "
        "| x torch (samples/s) | x torch (first batch) |"
    )
    print(header)
    print("|" + "---|" * 9)
    for workload, workers, _ in cells:
        names = [*loaders, *MEMCPY] if workload == "image" and workers == 0 else loaders
        torch_runs = [r for r in results.get((workload, "torch", workers), []) if "error" not in r]
        torch_rate = (
            _median([{"r": r["samples"] / r["seconds"]} for r in torch_runs], "r")
            if torch_runs
            else None
        )
        torch_ttfb = _median(torch_runs, "ttfb") if torch_runs else None
        for loader in names:
            runs = results.get((workload, loader, 0 if loader in MEMCPY else workers), [])
            good = [r for r in runs if "error" not in r]
            if not good:
                why = runs[0].get("error", "not run") if runs else "not run"
                print(f"| {workload} | {workers} | {loader} | n/a ({why}) | | | | | |")
                continue
            rate = statistics.median(r["samples"] / r["seconds"] for r in good)
            ttfb = _median(good, "ttfb")
            rss = _median(good, "rss") / 2**20
            mbps = rate * SAMPLE_BYTES.get(workload, 0) / 1e6
            ratio = f"{rate / torch_rate:.2f}" if torch_rate else ""
            ttfb_ratio = f"{ttfb / torch_ttfb:.2f}" if torch_ttfb and loader not in MEMCPY else ""
            print(
                f"| {workload} | {workers} | {loader} | {rate:,.0f} | {mbps:,.1f} | "
                f"{ttfb * 1e3:.1f} | {rss:.0f} | {ratio} | {ttfb_ratio} |"
            )


def rss_over_epochs(epochs: int = 10) -> None:
    """Print stoker's main-process RSS after each of ``epochs`` epochs (persistent workers)."""
    import stoker.data as sd

    for workload in ("small", "image"):
        loader = sd.DataLoader(
            _dataset(workload, BATCH[workload] * 100),
            batch_size=BATCH[workload],
            num_workers=2,
            persistent_workers=True,
        )
        sizes = []
        for _ in range(epochs):
            for batch in loader:
                del batch
            with open("/proc/self/statm", encoding="ascii") as statm:
                sizes.append(int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE"))
        loader.close()
        growth = (sizes[-1] - sizes[0]) / sizes[0] * 100
        mib = ", ".join(f"{size / 2**20:.0f}" for size in sizes)
        print(f"{workload}: RSS MiB per epoch [{mib}]; epoch 10 vs 1: {growth:+.1f}%")


def state_tracking(repeats: int) -> None:
    """Time per batch with a DistributedSampler (rank 1 of 4): what resume bookkeeping costs.

    Small batches (8 ``small`` samples) make the per-batch work of the loader show; run it
    with two source trees (``PYTHONPATH=...``) to compare them. Also the time of one
    ``state_dict()`` in the middle of the epoch.
    """
    import stoker.data as sd

    n = 8 * 20_000 * 4
    data = SmallData(n)
    print("| workers | in_order | us per batch | state_dict() us |")
    print("|---|---|---|---|")
    for workers, in_order in ((0, True), (2, True), (2, False)):
        per_batch, saves = [], []
        for _ in range(repeats):
            sampler = sd.DistributedSampler(data, num_replicas=4, rank=1, seed=0)
            loader = sd.DataLoader(
                data,
                batch_size=8,
                sampler=sampler,
                num_workers=workers,
                in_order=in_order,
                worker_type="thread",
            )
            iterator = iter(loader)
            next(iterator)  # workers started: time the steady state
            started = time.perf_counter()
            count = 0
            for count, _ in enumerate(iterator, start=1):
                if count == 10_000:
                    save_started = time.perf_counter()
                    loader.state_dict()
                    saves.append(time.perf_counter() - save_started)
            per_batch.append((time.perf_counter() - started) / count)
        print(
            f"| {workers} | {in_order} | {statistics.median(per_batch) * 1e6:.2f} | "
            f"{statistics.median(saves) * 1e6:.0f} |"
        )


def transport_sweep() -> None:
    """Print batches/s for pipe-only and slab-only transport by batch size (2 fork workers)."""
    import stoker.data as sd
    from stoker.data._workers import slabs

    for kib in (4, 16, 32, 64, 256, 1024, 4096):
        rates = {}
        for mode, threshold in (("pipe", 1 << 62), ("slab", 0)):
            slabs.SLAB_THRESHOLD = threshold
            count = 400
            best = 0.0
            for _ in range(3):
                ds = _Blob(count * 64, kib * 1024 // 64)
                loader = sd.DataLoader(ds, batch_size=64, num_workers=2)
                iterator = iter(loader)
                next(iterator)
                started = time.perf_counter()
                seen = sum(1 for _ in iterator)
                best = max(best, seen / (time.perf_counter() - started))
            rates[mode] = best
        print(
            f"{kib:5d} KiB batch: pipe {rates['pipe']:8,.0f}/s  slab {rates['slab']:8,.0f}/s  "
            f"slab/pipe {rates['slab'] / rates['pipe']:.2f}"
        )


def _parallel_copy(n: int, processes: int) -> float:
    """Samples/s of ``processes`` fork processes each copying ``n`` image samples at once."""
    reader, writer = os.pipe()
    pids = []
    for _ in range(processes):
        pid = os.fork()
        if pid == 0:
            result = memcpy_reference(n, buffers=6)
            os.write(writer, f"{result['samples'] / result['seconds']}\n".encode())
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    os.close(writer)
    with os.fdopen(reader) as lines:
        return sum(float(line) for line in lines)


def split_child(mode: str, n: int, workers: int) -> dict[str, Any]:
    """One stoker run of ``image`` batches; ``mode`` "touch" reads one byte per page of each.

    Returns per batch: wall time, the main process's CPU (unpickling, mapping the views,
    dropping the pages of freed slabs, and in "touch" mode its first touch of the pages,
    also timed alone), its wait, the workers' busy time (fetching and stacking into a slab, and
    sending the reply) and their CPU, and the minor page faults on both sides.
    """
    import stoker.data as sd

    loader = sd.DataLoader(ImageData(n), batch_size=64, num_workers=workers)
    iterator = iter(loader)
    next(iterator)  # start-up is the first-batch benchmark's business
    before = loader.stats()
    started = time.perf_counter()
    cpu = time.thread_time()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    touch = 0.0
    batches = 0
    for images, _ in iterator:
        if mode == "touch":
            began = time.perf_counter()
            int(images.reshape(-1)[::4096].sum())
            touch += time.perf_counter() - began
        batches += 1
        del images
    wall = time.perf_counter() - started
    cpu = time.thread_time() - cpu
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    stats = loader.stats()
    del iterator, loader
    _reap_children()  # the epoch's end does not wait for the workers' exit: their CPU then counts
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = batches + 1  # the workers' CPU and page faults include their start-up

    def since_first(key: str) -> float:
        value, first = stats[key], before[key]
        if isinstance(value, dict):
            return sum(value.values()) - sum(first.values())
        return float(value - first)

    return {
        "samples": batches * 64,
        "seconds": wall,
        "wall_ms": wall / batches * 1e3,
        "main_cpu_ms": cpu / batches * 1e3,
        "touch_ms": touch / batches * 1e3,
        "wait_ms": since_first("main_wait_seconds") / batches * 1e3,
        "worker_busy_ms": since_first("worker_busy_seconds") / batches * 1e3,
        "worker_cpu_ms": (children.ru_utime + children.ru_stime) / total * 1e3,
        "main_faults": faults / batches,
        "worker_faults": children.ru_minflt / total,
    }


def copy_split(repeats: int, n: int = 64 * 400) -> None:
    """Print where an image batch's time goes with 2 workers, against the copy limits.

    The limits: one process copying each batch's bytes into six rotating buffers (the
    ``memcpy-6buf`` row of the main table) and two such processes at once (what the two cores
    can copy). stoker runs without and with a consumer that touches every page of each batch
    (as a training step reads its batch), each in a fresh child, medians of ``repeats``.
    """
    runs: dict[str, list[dict[str, Any]]] = {}
    for _ in range(repeats):
        for mode in ("none", "touch"):
            result = _run_child([mode, "split", str(n), "2"], timeout=300)
            runs.setdefault(mode, []).append(result or {})
    copies = [memcpy_reference(n, buffers=6) for _ in range(repeats)]
    one = statistics.median(copy["samples"] / copy["seconds"] for copy in copies)
    two = statistics.median(_parallel_copy(n, 2) for _ in range(repeats))
    print(f"copy limits: one process {one:,.0f} samples/s, two at once {two:,.0f} samples/s")
    print(
        "| consumer | samples/s | x one-process copy | x two-process copy | wall ms/batch "
        "| main CPU ms/batch | of which first touch | main wait | worker busy ms/batch "
        "| worker CPU ms/batch | page faults/batch: main, workers |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for mode, label in (("none", "counts the batch"), ("touch", "reads every page")):
        good = [run for run in runs[mode] if "error" not in run and run]
        if not good:
            print(f"| {label} | failed: {runs[mode][0].get('error', 'no result')} |")
            continue
        rate = statistics.median(run["samples"] / run["seconds"] for run in good)

        def cell(key: str, runs: list[dict[str, Any]] = good) -> str:
            return f"{_median(runs, key):.2f}"

        print(
            f"| {label} | {rate:,.0f} | {rate / one:.2f} | {rate / two:.2f} | {cell('wall_ms')} "
            f"| {cell('main_cpu_ms')} | {cell('touch_ms')} | {cell('wait_ms')} "
            f"| {cell('worker_busy_ms')} | {cell('worker_cpu_ms')} "
            f"| {_median(good, 'main_faults'):.0f}, {_median(good, 'worker_faults'):.0f} |"
        )


class _Blob:
    def __init__(self, n: int, nbytes: int) -> None:
        self.n = n
        self.x = np.ones(nbytes, dtype=np.uint8)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> Any:
        return self.x


# -- the JPEG-folder workload (``--only jpeg``) -----------------------------------------------
JPEG_COUNT = 2000
JPEG_SIZE = (500, 375)
JPEG_BATCH = 64
JPEG_CROP = 224
JPEG_SEED = 15
"""The per-sample key: ``stoker.data.sample_rng(index, seed=JPEG_SEED, epoch=0)`` for every
loader, so every loader draws the same crops and flips and the batches can be compared."""
JPEG_CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".cache", "jpeg-500x375")
JPEG_RUNS = (
    ("plain", 2),
    ("plain-thread", 2),
    ("stoker", 0),
    ("stoker", 2),
    ("stoker-whole", 2),
    ("stoker-thread", 2),
    ("stoker.torch", 2),
    ("torch", 2),
    ("spdl", 2),
    ("grain", 2),
)
"""``(loader, workers)`` of the JPEG table; ``plain`` is the loop with no loader (the limit),
``plain-thread`` the same loop in two threads of one process (the limit for thread workers:
the dataset's own Python holds the GIL, and two threads take turns for it).
stoker's loaders run with ``split_first_batch=True`` but ``stoker-whole``, which loads its first
batch in one piece as torch does."""
_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
_SCALE = (1.0 / (255.0 * _STD)).reshape(3, 1, 1)
_SHIFT = (_MEAN / _STD).reshape(3, 1, 1)


def _jpeg_path(root: str, index: int) -> str:
    return os.path.join(root, f"{index:05d}.jpg")


def _draw_jpeg(index: int) -> Any:
    """Image ``index``: smooth colour noise, a dozen shapes, fine grain (deterministic)."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(index)
    width, height = JPEG_SIZE
    coarse = rng.integers(0, 256, (height // 8, width // 8, 3), dtype=np.uint8)
    image = Image.fromarray(coarse).resize(JPEG_SIZE, Image.Resampling.BICUBIC)
    draw = ImageDraw.Draw(image)
    for _ in range(12):
        x0, x1 = sorted(rng.integers(0, width, 2).tolist())
        y0, y1 = sorted(rng.integers(0, height, 2).tolist())
        colour = tuple(rng.integers(0, 256, 3).tolist())
        shape = draw.ellipse if rng.random() < 0.5 else draw.rectangle
        shape((x0, y0, x1, y1), fill=colour)
    grain = rng.integers(-24, 25, (height, width, 3), dtype=np.int16)
    pixels = np.clip(np.asarray(image, dtype=np.int16) + grain, 0, 255).astype(np.uint8)
    return Image.fromarray(pixels)


def jpeg_folder(root: str = JPEG_CACHE, count: int = JPEG_COUNT) -> str:
    """Return ``root`` holding ``count`` generated JPEGs (made once, then reused)."""
    stamp = os.path.join(root, f"complete-{count}")
    if os.path.exists(stamp):
        return root
    os.makedirs(root, exist_ok=True)
    for index in range(count):
        path = _jpeg_path(root, index)
        if not os.path.exists(path):
            partial = f"{path}.{os.getpid()}.tmp"
            _draw_jpeg(index).save(partial, format="JPEG", quality=90)
            os.replace(partial, path)
    with open(stamp, "w", encoding="ascii") as done:
        done.write(f"{count} images of {JPEG_SIZE[0]}x{JPEG_SIZE[1]}\n")
    return root


def _crop_box(rng: np.random.Generator, width: int, height: int) -> tuple[int, int, int, int]:
    """A random-resized crop's box: area 8-100%, aspect ratio 3/4-4/3 (torchvision's rule)."""
    area = width * height
    log_low, log_high = np.log(3 / 4), np.log(4 / 3)
    for _ in range(10):
        target = area * rng.uniform(0.08, 1.0)
        ratio = float(np.exp(rng.uniform(log_low, log_high)))
        w = round((target * ratio) ** 0.5)
        h = round((target / ratio) ** 0.5)
        if 0 < w <= width and 0 < h <= height:
            top = int(rng.integers(0, height - h + 1))
            left = int(rng.integers(0, width - w + 1))
            return left, top, left + w, top + h
    side = min(width, height)  # the fallback: a centred square
    left, top = (width - side) // 2, (height - side) // 2
    return left, top, left + side, top + side


def jpeg_sample(root: str, index: int) -> tuple[Any, int]:
    """Decode JPEG ``index``, random-resized crop to 224, flip, normalise to float32 CHW.

    The result is C-contiguous, as torchvision's ``ToTensor`` and ``Normalize`` give it, so a
    batch stacked with ``np.stack`` (the plain loop) has the layout every loader delivers.
    """
    from PIL import Image

    import stoker.data as sd

    rng = sd.sample_rng(int(index), seed=JPEG_SEED, epoch=0)
    with Image.open(_jpeg_path(root, index)) as image:
        image.load()
        box = _crop_box(rng, image.width, image.height)
        crop = image.resize((JPEG_CROP, JPEG_CROP), Image.Resampling.BILINEAR, box=box)
    if rng.random() < 0.5:
        crop = crop.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    pixels = np.ascontiguousarray(np.asarray(crop).transpose(2, 0, 1))  # CHW, as ToTensor
    out = np.multiply(pixels, _SCALE, dtype=np.float32)
    out -= _SHIFT
    return out, int(index)


class JpegFolder:
    """Map-style dataset over the generated JPEGs: sample i is ``jpeg_sample(root, i)``."""

    def __init__(self, root: str, n: int) -> None:
        """Serve ``n`` samples from the JPEGs generated under ``root``."""
        self.root = root
        self.n = n

    def __len__(self) -> int:
        """Number of samples."""
        return self.n

    def __getitem__(self, index: int) -> tuple[Any, int]:
        """Sample ``index``: ``jpeg_sample(root, index)``."""
        return jpeg_sample(self.root, index)


def _jpeg_batches(root: str, n: int, worker: int, workers: int) -> Iterator[tuple[Any, Any]]:
    """Batches ``worker``, ``worker + workers``, ... of the epoch, stacked with NumPy."""
    for start in range(worker * JPEG_BATCH, n, workers * JPEG_BATCH):
        samples = [jpeg_sample(root, i) for i in range(start, min(start + JPEG_BATCH, n))]
        yield np.stack([x for x, _ in samples]), np.array([y for _, y in samples])


def _plain_share(root: str, n: int, worker: int, workers: int) -> tuple[list[int], str | None]:
    """One share of the plain loop: its batches' labels, and worker 0's first batch's check."""
    labels: list[int] = []
    check = None
    for images, batch_labels in _jpeg_batches(root, n, worker, workers):
        if check is None and worker == 0:
            check = _batch_check(images, batch_labels)
        labels.extend(batch_labels.tolist())
    return labels, check


def _plain_worker(root: str, n: int, worker: int, workers: int, conn: Any) -> None:
    """The plain loop's process: its share of the batches, nothing sent but a summary."""
    conn.send(_plain_share(root, n, worker, workers))
    conn.close()


def _batch_check(images: Any, labels: Any) -> str:
    """A digest of one batch (images' float32 bytes and labels) to compare across loaders."""
    import zlib

    images = np.ascontiguousarray(np.asarray(images), dtype=np.float32)
    labels = np.ascontiguousarray(np.asarray(labels), dtype=np.int64)
    return f"{zlib.crc32(images.data):08x}-{zlib.crc32(labels.data):08x}-{images.shape}"


def _as_numpy(value: Any) -> Any:
    return value.numpy() if hasattr(value, "numpy") else value


def _jpeg_iterable(loader: str, root: str, n: int, workers: int) -> tuple[Any, Callable[[], None]]:
    """Return (an iterable over one epoch of batches, a function that releases the loader)."""
    ds = JpegFolder(root, n)
    if loader in ("stoker", "stoker-thread", "stoker-whole"):
        import stoker.data as sd

        dl = sd.DataLoader(
            ds,
            batch_size=JPEG_BATCH,
            num_workers=workers,
            worker_type="thread" if loader == "stoker-thread" else "process",
            split_first_batch=loader != "stoker-whole",
        )
        return dl, lambda: None
    if loader == "stoker.torch":
        import stoker.torch.data as door

        doorl = door.DataLoader(
            ds, batch_size=JPEG_BATCH, num_workers=workers, split_first_batch=True
        )
        return doorl, lambda: None
    if loader == "torch":
        import torch.utils.data as td

        return td.DataLoader(ds, batch_size=JPEG_BATCH, num_workers=workers), lambda: None
    if loader == "spdl":
        from functools import partial

        from spdl.pipeline import SharedMemorySegmentPool, iterate_in_subprocess

        unit = JPEG_BATCH * (3 * JPEG_CROP * JPEG_CROP * 4 + 8) + (1 << 20)
        sources = [
            iterate_in_subprocess(
                partial(_jpeg_batches, root, n, w, workers),
                buffer_size=2,
                arena=SharedMemorySegmentPool(unit, 4),
            )
            for w in range(workers)
        ]
        return _round_robin(sources), sources.clear
    if loader == "grain":
        import grain

        dataset = grain.MapDataset.source(ds).batch(JPEG_BATCH)
        options = grain.multiprocessing.MultiprocessingOptions(num_workers=workers)
        return dataset.to_iter_dataset().mp_prefetch(options), lambda: None
    raise ValueError(f"loader must be one of {[name for name, _ in JPEG_RUNS]}, got {loader!r}")


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _reap_children(timeout: float = 20.0) -> bool:
    """Join every child process (their CPU time then counts); say whether all ended."""
    import gc
    import multiprocessing
    from multiprocessing import resource_tracker

    gc.collect()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for process in multiprocessing.active_children():
            process.join(timeout=0.1)
        live = _live_children()
        if not live:
            return True
        tracker = resource_tracker._resource_tracker
        if live == [tracker._pid]:  # started by SPDL's and Grain's shared memory: stop it
            tracker._stop()
            continue
        for pid in live:  # children started without multiprocessing's registry
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.05)
    return False


def _live_children() -> list[int]:
    found = []
    for task in os.listdir("/proc/self/task"):
        path = f"/proc/self/task/{task}/children"
        with contextlib.suppress(FileNotFoundError), open(path, encoding="ascii") as children:
            found.extend(int(pid) for pid in children.read().split())  # unless the thread ended
    return found


def _plain_run(root: str, n: int, workers: int) -> tuple[list[int], str | None, float]:
    """Run the plain loop in ``workers`` fork processes; return labels, check, first result."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    pipes = []
    for worker in range(workers):
        reader, writer = context.Pipe(duplex=False)
        process = context.Process(target=_plain_worker, args=(root, n, worker, workers, writer))
        process.start()
        writer.close()
        pipes.append((reader, process))
    labels: list[int] = []
    check = None
    for reader, process in pipes:
        worker_labels, worker_check = reader.recv()
        labels.extend(worker_labels)
        check = check or worker_check
        process.join()
    return labels, check, float("nan")


def _plain_threads_run(root: str, n: int, workers: int) -> tuple[list[int], str | None, float]:
    """Run the plain loop in ``workers`` threads of this process; return labels, check, nan."""
    import threading

    results: list[tuple[list[int], str | None]] = [([], None)] * workers

    def run(worker: int) -> None:
        results[worker] = _plain_share(root, n, worker, workers)

    threads = [threading.Thread(target=run, args=(worker,)) for worker in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [label for labels, _ in results for label in labels], results[0][1], float("nan")


def jpeg_child(loader: str, n: int, workers: int) -> dict[str, Any]:
    """One JPEG measurement: rate, CPU over the process tree, peak RSS, first batch, check."""
    root = jpeg_folder(count=n)
    _import(loader if loader in ("torch", "stoker.torch", "spdl", "grain") else "stoker")
    __import__("PIL.Image")
    cpu_start = _cpu_seconds()
    started = time.perf_counter()
    check_seconds = 0.0
    if loader in ("plain", "plain-thread"):
        run = _plain_run if loader == "plain" else _plain_threads_run
        labels, check, ttfb = run(root, n, workers)
        elapsed = time.perf_counter() - started
        release: Callable[[], None] = lambda: None  # noqa: E731 - nothing to release
    else:
        iterable, release = _jpeg_iterable(loader, root, n, workers)
        labels = []
        check = None
        ttfb = float("nan")
        touched = 0.0
        for batch in iterable:
            images, batch_labels = _as_numpy(batch[0]), _as_numpy(batch[1])
            if check is None:
                ttfb = time.perf_counter() - started
                check_started = time.perf_counter()
                check = _batch_check(images, batch_labels)
                check_seconds = time.perf_counter() - check_started
            # the training step reads the batch: one float per 4 KiB page, so each loader's
            # pages are resident in this process as they would be
            touched += float(images.reshape(-1)[::1024].sum())
            labels.extend(np.asarray(batch_labels).tolist())
            del batch, images, batch_labels
        elapsed = time.perf_counter() - started
        del iterable
    release()
    all_reaped = _reap_children()
    cpu = _cpu_seconds() - cpu_start - check_seconds
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    exact = sorted(labels) == list(range(n))
    return {
        "samples": len(labels),
        "seconds": elapsed - check_seconds,
        "ttfb": ttfb,
        "cpu_per_1k": cpu / len(labels) * 1000 if all_reaped and labels else None,
        "rss": rss,
        "check": check,
        "exactly_once": exact,
    }


def jpeg_main(repeats: int, n: int = JPEG_COUNT) -> None:
    """Run the JPEG table: every loader in its own child, turns rotating, medians printed."""
    jpeg_folder(count=n)
    results: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for repeat in range(repeats):
        shift = repeat % len(JPEG_RUNS)
        for loader, workers in JPEG_RUNS[shift:] + JPEG_RUNS[:shift]:
            result = _run_child([loader, "jpeg", str(n), str(workers)], timeout=300) or {}
            results.setdefault((loader, workers), []).append(result)
        print(f"repeat {repeat + 1}/{repeats} done", file=sys.stderr, flush=True)
    _print_jpeg_table(results, n)


def _print_jpeg_table(results: dict[tuple[str, int], list[dict[str, Any]]], n: int) -> None:
    def good(key: tuple[str, int]) -> list[dict[str, Any]]:
        return [r for r in results.get(key, []) if "error" not in r]

    def rate(runs: list[dict[str, Any]]) -> float:
        return statistics.median(r["samples"] / r["seconds"] for r in runs)

    def cpu(runs: list[dict[str, Any]]) -> float | None:
        values = [r["cpu_per_1k"] for r in runs if r["cpu_per_1k"] is not None]
        return statistics.median(values) if values else None

    plain, torch_runs = good(("plain", 2)), good(("torch", 2))
    plain_rate = rate(plain) if plain else None
    plain_cpu = cpu(plain) if plain else None
    torch_rate = rate(torch_runs) if torch_runs else None
    torch_ttfb = _median(torch_runs, "ttfb") if torch_runs else None
    reference = plain[0]["check"] if plain else None
    print(
        "| loader | workers | samples/s | x plain loop | x torch | CPU s / 1k samples "
        "| CPU x plain loop | peak RSS (MB) | first batch (ms) | first batch x torch "
        "| first batch equal, every sample once |"
    )
    print("|" + "---|" * 11)
    for loader, workers in JPEG_RUNS:
        runs = good((loader, workers))
        if not runs:
            every = results.get((loader, workers), [])
            why = every[0].get("error", "not run") if every else "not run"
            print(f"| {loader} | {workers} | n/a ({why}) |" + " |" * 8)
            continue
        samples_s = rate(runs)
        cpu_1k = cpu(runs)
        ttfb = _median(runs, "ttfb")
        same = all(r["check"] == reference and r["exactly_once"] for r in runs)
        cells = [
            loader,
            str(workers),
            f"{samples_s:,.0f}",
            f"{samples_s / plain_rate:.2f}" if plain_rate else "",
            f"{samples_s / torch_rate:.2f}" if torch_rate else "",
            f"{cpu_1k:.3f}" if cpu_1k is not None else "n/a",
            f"{cpu_1k / plain_cpu:.3f}" if cpu_1k is not None and plain_cpu else "",
            f"{_median(runs, 'rss') / 2**20:.0f}",
            "" if math.isnan(ttfb) else f"{ttfb * 1e3:.0f}",
            "" if math.isnan(ttfb) or not torch_ttfb else f"{ttfb / torch_ttfb:.2f}",
            "yes" if same else "NO",
        ]
        print("| " + " | ".join(cells) + " |")
    print(
        f"\n{n} JPEGs of {JPEG_SIZE[0]}x{JPEG_SIZE[1]}, batch {JPEG_BATCH}; medians of "
        f"{len(next(iter(results.values())))} runs each",
        file=sys.stderr,
    )


# -- copy-on-write: millions of Python records read by process workers ---------------------------
COW_BATCH = 256
COW_WORKERS = 4
COW_CONFIGS = (
    "nw0",  # stoker.data, num_workers=0, plain lists: the base PSS
    "nw0-compact",  # the same records in stoker's containers, num_workers=0
    "torch",  # torch.utils.data, 4 fork workers, plain lists
    "stoker",  # stoker.data, 4 fork worker processes, plain lists
    "stoker-freeze",  # the same after gc.freeze() (the generic measure)
    "stoker-threads",  # stoker.data, 4 worker threads, plain lists
    "stoker-compact",  # stoker.data, 4 fork workers, compact containers
    "torch-compact",  # torch.utils.data, 4 fork workers, compact containers
    "spdl",  # SPDL: iterate_in_subprocess per worker (fork), plain lists
    "grain",  # Grain: MapDataset.source(...).batch(...).mp_prefetch, plain lists
)
_COW_LANGS = ("en", "de", "fr", "ja", "pt")


def cow_records(n: int) -> tuple[list[str], list[dict[str, Any]]]:
    """Return ``n`` texts and ``n`` small dicts, about 370 bytes of Python objects a record."""
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]
    texts = [f"{words[i % 9]} {words[i * 7 % 9]} {words[i * 5 % 9]} record {i}" for i in range(n)]
    records = [
        {"id": i, "label": i % 1000, "score": i * 0.001, "lang": _COW_LANGS[i % 5]}
        for i in range(n)
    ]
    return texts, records


class CowData:
    """Sample i: ``(texts[i], records[i])``, from plain lists or stoker's containers."""

    def __init__(self, texts: Any, records: Any) -> None:
        """Pair ``texts`` with ``records``, index by index."""
        self.texts = texts
        self.records = records

    def __len__(self) -> int:
        """Number of samples: the number of texts."""
        return len(self.texts)

    def __getitem__(self, index: int) -> tuple[str, dict[str, Any]]:
        """Sample ``index``: ``(texts[index], records[index])``."""
        return self.texts[index], self.records[index]


class CowOrder:
    """One fixed shuffled order of ``range(n)`` as a sampler, handed out in chunks of ints."""

    def __init__(self, n: int, seed: int = 0) -> None:
        """Draw the order: a permutation of ``range(n)`` seeded by ``seed``."""
        self.perm = np.random.default_rng(seed).permutation(n)

    def __len__(self) -> int:
        """Number of indices."""
        return len(self.perm)

    def __iter__(self) -> Iterator[int]:
        """Yield the order's indices as ints, converted 65536 at a time."""
        for start in range(0, len(self.perm), 65536):
            yield from self.perm[start : start + 65536].tolist()


class _CowPermuted:
    """Grain's data source: sample i is ``ds[perm[i]]`` (Grain then reads it in order)."""

    def __init__(self, ds: CowData, perm: Any) -> None:
        self.ds = ds
        self.perm = perm

    def __len__(self) -> int:
        return len(self.perm)

    def __getitem__(self, index: int) -> Any:
        return self.ds[int(self.perm[index])]


def _cow_collate(items: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], dict[str, Any]]:
    """What default_collate makes of a batch, for the peers that take a function."""
    records = [record for _, record in items]
    columns = {key: np.array([r[key] for r in records]) for key in ("id", "label", "score")}
    return [text for text, _ in items], {**columns, "lang": [r["lang"] for r in records]}


def _spdl_cow_shard(ds: CowData, perm: Any, worker: int, workers: int) -> Iterator[Any]:
    batches = range(worker * COW_BATCH, len(perm), workers * COW_BATCH)
    for start in batches:
        yield _cow_collate([ds[i] for i in perm[start : start + COW_BATCH].tolist()])


def _cow_loader(config: str, ds: CowData, order: CowOrder) -> Iterator[Any]:
    """One epoch of ``config`` over ``ds`` in ``order`` (batches of COW_BATCH)."""
    workers = 0 if config.startswith("nw0") else COW_WORKERS
    if config.startswith("torch"):
        import torch.utils.data as td

        tl = td.DataLoader(ds, batch_size=COW_BATCH, sampler=order, num_workers=workers)
        return iter(tl)
    if config.startswith(("stoker", "nw0")):
        import stoker.data as sd

        kind = "thread" if config == "stoker-threads" else "process"
        dl = sd.DataLoader(
            ds, batch_size=COW_BATCH, sampler=order, num_workers=workers, worker_type=kind
        )
        return iter(dl)
    if config == "spdl":
        from functools import partial

        from spdl.pipeline import iterate_in_subprocess

        sources = [
            iterate_in_subprocess(
                partial(_spdl_cow_shard, ds, order.perm, w, workers), mp_context="fork"
            )
            for w in range(workers)
        ]
        return _round_robin(sources)
    if config == "grain":
        import grain

        source = grain.MapDataset.source(_CowPermuted(ds, order.perm)).batch(COW_BATCH)
        options = grain.multiprocessing.MultiprocessingOptions(num_workers=workers)
        return iter(source.to_iter_dataset().mp_prefetch(options))
    raise ValueError(config)


def pss(pid: int) -> int:
    """PSS of one process in bytes (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
            for line in rollup:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def _tree(root: int) -> list[int]:
    """``root`` and every process below it."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    ppid = int(stat.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(parents.get(pid, []))
    return found


def _cow_ids(batch: Any) -> tuple[Any, list[str]]:
    texts, records = batch
    texts = texts.tolist() if hasattr(texts, "tolist") else list(texts)
    return np.asarray(records["id"]), [str(text) for text in texts]


def cow_child(config: str, n: int, workers: int) -> dict[str, Any]:
    """Build the records, run one epoch of ``config``, and return its figures and checks."""
    del workers  # fixed by the config (COW_WORKERS, or 0 for nw0)
    import gc

    if config.startswith(("stoker", "nw0")):
        import stoker.data  # noqa: F401 - imported before the clock, as every library
    if config.startswith("torch"):
        import torch.utils.data  # noqa: F401
    texts, records = cow_records(n)
    if config.endswith("compact"):
        import stoker.data as sd

        ds = CowData(sd.compact(texts), sd.compact(records))
        del texts, records
    else:
        ds = CowData(texts, records)
    gc.collect()
    if config == "stoker-freeze":
        gc.freeze()
    order = CowOrder(n)
    expected = [ds[i] for i in order.perm[:COW_BATCH].tolist()]
    base = pss(os.getpid())
    began = time.time()
    started = time.perf_counter()
    seen = np.zeros(n, dtype=np.int64)
    first_ok = None
    samples = 0
    for batch in _cow_loader(config, ds, order):
        ids, batch_texts = _cow_ids(batch)
        if first_ok is None:
            first_ok = ids.tolist() == [r["id"] for _, r in expected] and batch_texts == [
                t for t, _ in expected
            ]
        np.add.at(seen, ids, 1)
        samples += len(ids)
    seconds = time.perf_counter() - started
    return {
        "samples": samples,
        "seconds": seconds,
        "began": began,
        "ended": time.time(),
        "base_pss": base,
        "exactly_once": bool((seen == 1).all()),
        "first_batch_equal": bool(first_ok),
    }


def _cow_run(config: str, n: int, timeout: float) -> dict[str, Any]:
    """Run ``config`` in a child, sampling the PSS of its process tree every 0.2 s."""
    command = [sys.executable, __file__, "--child", config, "cow", str(n), str(COW_WORKERS)]
    env = {**os.environ, **SINGLE_THREADED}
    samples: list[tuple[float, int]] = []
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as child:
        deadline = time.monotonic() + timeout
        while child.poll() is None and time.monotonic() < deadline:
            samples.append((time.time(), sum(pss(pid) for pid in _tree(child.pid))))
            time.sleep(0.2)
        if child.poll() is None:
            child.kill()
            return {"error": "timeout"}
        out, err = child.communicate()
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            result: dict[str, Any] = json.loads(line)
            window = [pss for at, pss in samples if result["began"] <= at <= result["ended"]]
            result["peak_pss"] = max(window or [result["base_pss"]])
            return result
    return {"error": ((err.strip().splitlines() or ["no output"])[-1])[:120]}


def _cow_available(config: str) -> bool:
    module = {"spdl": "spdl.pipeline", "grain": "grain"}.get(config)
    if module is None:
        return True
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def cow_main(quick: bool, repeats: int) -> None:
    """Print the copy-on-write table: samples/s and PSS growth per loader (one run at a time).

    Growth is the peak PSS of the process tree during the epoch minus the PSS of the main
    process before the loader was made; ``x nw0`` divides it by the plain-list ``nw0`` run's
    PSS (the goal: at most 0.10). Every run checks that each sample came exactly once and that
    the first batch equals ``dataset[i]`` for the first indices of the order.
    """
    n = 300_000 if quick else 3_000_000
    configs = [c for c in COW_CONFIGS if _cow_available(c)]
    runs: dict[str, list[dict[str, Any]]] = {}
    for repeat in range(1 if quick else repeats):
        for config in configs:
            runs.setdefault(config, []).append(_cow_run(config, n, timeout=900))
        print(f"repeat {repeat + 1} done", file=sys.stderr, flush=True)
    good = {c: [r for r in rs if "error" not in r] for c, rs in runs.items()}
    base_runs = good.get("nw0") or []
    base = statistics.median(r["base_pss"] for r in base_runs) if base_runs else None
    torch_runs = good.get("torch") or []
    torch_rate = (
        statistics.median(r["samples"] / r["seconds"] for r in torch_runs) if torch_runs else None
    )
    print(f"{n:,} records, batch {COW_BATCH}, {COW_WORKERS} workers, shuffled, one epoch")
    print(
        "| loader | samples/s | x torch | PSS before (MB) | peak PSS (MB) | growth (MB) "
        "| growth / nw0 PSS | every sample once | first batch equal |"
    )
    print("|" + "---|" * 9)
    for config in configs:
        if not good[config]:
            print(f"| {config} | n/a ({runs[config][0].get('error')}) | | | | | | | |")
            continue
        rs = good[config]
        rate = statistics.median(r["samples"] / r["seconds"] for r in rs)
        before = statistics.median(r["base_pss"] for r in rs)
        peak = statistics.median(r["peak_pss"] for r in rs)
        growth = max(0.0, peak - before)
        ratio = f"{growth / base:.3f}" if base else ""
        versus = f"{rate / torch_rate:.2f}" if torch_rate else ""
        once = all(r["exactly_once"] for r in rs)
        first = all(r["first_batch_equal"] for r in rs)
        print(
            f"| {config} | {rate:,.0f} | {versus} | {before / 1e6:,.0f} | {peak / 1e6:,.0f} | "
            f"{growth / 1e6:,.0f} | {ratio} | {'yes' if once else 'NO'} | "
            f"{'yes' if first else 'NO'} |"
        )


if __name__ == "__main__":
    main()
