"""Side-by-side loader benchmark: stoker.data, stoker.torch.data, torch.utils.data, SPDL, Grain.

Every measurement runs in a fresh child process (so time to first batch includes starting the
workers, and peak RSS is that child's own high-water mark), the loaders alternate within each
repeat (their order rotates from repeat to repeat), and each cell is the median of the repeats.
The clock starts after the library is imported and the dataset built, when the loader is
created; samples/s counts every sample over the whole run, first batch included (time to first
batch is its own column). SPDL and Grain are driven as their documentation shows: ``spdl.dataloader.
get_pytorch_dataloader`` (map-style) and ``spdl.pipeline.iterate_in_subprocess`` per shard
(iterable); ``grain.MapDataset.source(...).batch(...)`` with ``mp_prefetch`` for workers.

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

Usage::

    python benchmarks/loader_bench.py            # full run (a few minutes on 2 cores)
    python benchmarks/loader_bench.py --quick    # short run
    python benchmarks/loader_bench.py --rss      # stoker main-process RSS over 10 epochs
    python benchmarks/loader_bench.py --transport  # pipe vs slab by batch size
    python benchmarks/loader_bench.py --only cow [--quick]  # copy-on-write: PSS of the tree

This file is not a test module (pytest collects ``test_*.py`` only).
"""

from __future__ import annotations

import argparse
import json
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
        self.n = n
        self.table = np.random.default_rng(0).standard_normal((n, 16), dtype=np.float32)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[Any, int]:
        return self.table[index], index


class ImageData:
    """Sample i: one of 8 preloaded 3x224x224 uint8 images and the int label i."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.images = np.random.default_rng(0).integers(0, 255, (8, 3, 224, 224), dtype=np.uint8)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[Any, int]:
        return self.images[index % 8], index


class CpuData:
    """Sample i: about 0.5 ms of NumPy work (matrix products seeded by i)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> tuple[Any, int]:
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
        from spdl.dataloader import get_pytorch_dataloader

        if workers == 0:
            raise NotImplementedError("spdl's PyTorch-style loader needs num_workers >= 1")
        sl = get_pytorch_dataloader(ds, batch_size=batch, num_workers=workers)
        return (lambda: sl), epochs
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
    args = parser.parse_args(argv)
    if args.child:
        loader, workload, n, workers = args.child
        if workload == "cow":
            print(json.dumps(cow_child(loader, int(n), int(workers))))
            return
        if loader.startswith("memcpy"):
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


class _Blob:
    def __init__(self, n: int, nbytes: int) -> None:
        self.n = n
        self.x = np.ones(nbytes, dtype=np.uint8)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> Any:
        return self.x


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
        self.texts = texts
        self.records = records

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, index: int) -> tuple[str, dict[str, Any]]:
        return self.texts[index], self.records[index]


class CowOrder:
    """One fixed shuffled order of ``range(n)`` as a sampler, handed out in chunks of ints."""

    def __init__(self, n: int, seed: int = 0) -> None:
        self.perm = np.random.default_rng(seed).permutation(n)

    def __len__(self) -> int:
        return len(self.perm)

    def __iter__(self) -> Iterator[int]:
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


def _pss(pid: int) -> int:
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
    base = _pss(os.getpid())
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
            samples.append((time.time(), sum(_pss(pid) for pid in _tree(child.pid))))
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
