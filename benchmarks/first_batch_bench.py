"""A fresh loader in a fresh process: the first batch and a short epoch, start-up included.

``python benchmarks/first_batch_bench.py [--repeats 7] [--loaders stoker,torch,spdl]`` starts
one Python process per measurement (the loaders alternate within each repeat, their order
rotating) and reports, per workload and loader, the medians of:

* ``process``: from the parent's ``Popen`` to the child's exit (interpreter start, imports,
  dataset, loader, one short epoch, shutdown): what a user waits for in a notebook cell or an
  evaluation script;
* ``import``: the loader's library imported (from the child's first line of ``main``);
* ``first batch``: from creating the loader to holding its first batch (workers' start-up
  included), the figure torch users notice on every fresh run;
* ``epoch``: the whole short epoch from creating the loader, and its samples/s.

Workloads (the loaders' defaults: no ``prefetch_factor``, no ``split_first_batch``):

* ``image``: 3x224x224 uint8 samples and an int label, batch 64 (9.6 MB), 2 workers, 10 batches;
* ``small``: 16 float32 values and an int label, batch 256, 2 workers, 40 batches (a validation
  set's worth).

Every loader is driven as ``benchmarks/loader_bench.py`` drives it (the same datasets and
construction, imported from there): torch's and stoker's ``DataLoader`` with ``num_workers=2``;
SPDL with ``spdl.pipeline.iterate_in_subprocess`` per worker, read round robin, with a
``SharedMemorySegmentPool`` arena for batches over 4 MiB (its fastest documented way).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from typing import Any

CHILD_STARTED = time.time()  # first thing: the child's interpreter has started

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import loader_bench  # noqa: E402 - the datasets and loader construction are shared

WORKLOADS = {"image": (64 * 10, 2), "small": (256 * 40, 2)}
"""workload -> (samples in the short epoch, workers)."""
LOADERS = ("stoker", "stoker.torch", "torch", "spdl")


def child(loader: str, workload: str) -> dict[str, Any]:
    """Build the dataset and loader, take one short epoch, and return the timestamps."""
    n, workers = WORKLOADS[workload]
    loader_bench._import(loader)
    imported = time.time()
    ds = loader_bench._make_dataset(loader, workload, n)
    started = time.perf_counter()
    make, _ = loader_bench._build(loader, workload, n, workers, ds)
    first = None
    samples = 0
    for batch in make():
        samples += loader_bench._count(batch)
        if first is None:
            first = time.perf_counter() - started
        del batch
    epoch = time.perf_counter() - started
    return {
        "import": imported - CHILD_STARTED,
        "first": first,
        "epoch": epoch,
        "samples": samples,
        "child_started": CHILD_STARTED,
    }


def _measure(loader: str, workload: str) -> dict[str, Any]:
    command = [sys.executable, os.path.abspath(__file__), "--child", loader, workload]
    env = {**os.environ, **loader_bench.SINGLE_THREADED}
    begun = time.time()
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=300, check=False, env=env
    )
    ended = time.time()
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": tail[:120]}
    result: dict[str, Any] = json.loads(lines[-1])
    result["process"] = ended - begun
    result["interpreter"] = result.pop("child_started") - begun
    expected = WORKLOADS[workload][0]
    if result["samples"] != expected:
        return {"error": f"{result['samples']} samples, expected {expected}"}
    return result


def main(argv: list[str] | None = None) -> None:
    """Run the measurements and print one table per workload."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--loaders", default=",".join(LOADERS))
    parser.add_argument("--child", nargs=2, metavar=("LOADER", "WORKLOAD"))
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    loaders = [name for name in args.loaders.split(",") if name]
    unknown = [name for name in loaders if name not in LOADERS]
    if unknown or not loaders:
        parser.error(f"--loaders {args.loaders!r}: give some of {', '.join(LOADERS)}")
    if args.repeats < 1:
        parser.error(f"--repeats {args.repeats}: give 1 or more")
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for repeat in range(args.repeats):
        order = loaders[repeat % len(loaders) :] + loaders[: repeat % len(loaders)]
        for workload in WORKLOADS:
            for loader in order:
                results.setdefault((workload, loader), []).append(_measure(loader, workload))
        print(f"repeat {repeat + 1}/{args.repeats} done", file=sys.stderr, flush=True)
    for workload in WORKLOADS:
        _print_table(workload, loaders, results, args.repeats)


def _print_table(
    workload: str, loaders: list[str], results: dict[tuple[str, str], list[dict[str, Any]]], n: int
) -> None:
    n_samples, workers = WORKLOADS[workload]
    print(f"\n{workload}: {n_samples} samples, {workers} workers, medians of {n}")
    print(
        "| loader | process (s) | import (s) | first batch (ms) | x torch | worst first (ms) "
        "| epoch (ms) | samples/s | x torch | x SPDL |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")

    def good(loader: str) -> list[dict[str, Any]]:
        return [r for r in results.get((workload, loader), []) if "error" not in r]

    def med(loader: str, key: str) -> float:
        return statistics.median(r[key] for r in good(loader)) if good(loader) else float("nan")

    def ratio(value: float, peer: float) -> str:
        """``value / peer``, or a dash where the peer was not run or failed."""
        return "-" if math.isnan(peer) else f"{value / peer:.2f}"

    for loader in loaders:
        runs = good(loader)
        if not runs:
            error = results[(workload, loader)][0].get("error", "?")
            print(f"| {loader} | n/a: {error} ||||||||")
            continue
        rate = n_samples / med(loader, "epoch")
        print(
            f"| {loader} | {med(loader, 'process'):.2f} | {med(loader, 'import'):.2f} "
            f"| {med(loader, 'first') * 1e3:.0f} "
            f"| {ratio(med(loader, 'first'), med('torch', 'first'))} "
            f"| {max(r['first'] for r in runs) * 1e3:.0f} "
            f"| {med(loader, 'epoch') * 1e3:.0f} | {rate:,.0f} "
            f"| {ratio(rate, n_samples / med('torch', 'epoch'))} "
            f"| {ratio(rate, n_samples / med('spdl', 'epoch'))} |"
        )


if __name__ == "__main__":
    main()
