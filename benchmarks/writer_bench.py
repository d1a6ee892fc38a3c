"""Side-by-side speed of SummaryWriter: stoker vs torch.utils.tensorboard vs tensorboardX.

Run: ``.venv/bin/python benchmarks/writer_bench.py [--repeats 5]``

Each measurement opens a fresh writer in a temporary directory, makes N calls and then calls
``flush()``, so that the time covers getting the events into the file. The writers take turns
(stoker, torch, tensorboardX, stoker, ...) and the median of the repeats is reported as calls per
second, with the ratio to torch.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

WriterFactory = Callable[[str], Any]


def _writers() -> dict[str, WriterFactory]:
    from stoker.tensorboard import SummaryWriter as StokerWriter

    found: dict[str, WriterFactory] = {"stoker": StokerWriter}
    try:
        from torch.utils.tensorboard import SummaryWriter as TorchWriter

        found["torch"] = TorchWriter
    except ImportError:
        pass
    try:
        from tensorboardX import SummaryWriter as XWriter

        found["tensorboardX"] = XWriter
    except ImportError:
        pass
    return found


def _bench_scalar(writer: Any, count: int) -> None:
    for step in range(count):
        writer.add_scalar("loss", step * 0.001, step)


_IMAGE = np.random.default_rng(0).random((3, 256, 256), dtype=np.float64).astype(np.float32)
_VALUES = np.random.default_rng(1).normal(size=10_000)


def _bench_image(writer: Any, count: int) -> None:
    for step in range(count):
        writer.add_image("image", _IMAGE, step)


def _bench_histogram(writer: Any, count: int) -> None:
    for step in range(count):
        writer.add_histogram("weights", _VALUES, step)


CASES: dict[str, tuple[Callable[[Any, int], None], int]] = {
    "add_scalar": (_bench_scalar, 20_000),
    "add_image 3x256x256 float": (_bench_image, 40),
    "add_histogram 10k values": (_bench_histogram, 200),
}


def measure(factory: WriterFactory, bench: Callable[[Any, int], None], count: int) -> float:
    """Return calls per second for ``count`` calls plus the final flush."""
    with tempfile.TemporaryDirectory() as logdir:
        writer = factory(logdir)
        bench(writer, 3)  # warm caches and lazy imports outside the timing
        writer.flush()
        start = time.perf_counter()
        bench(writer, count)
        writer.flush()
        elapsed = time.perf_counter() - start
        writer.close()
    return count / elapsed


def main() -> None:
    """Measure every case for every installed writer and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per writer (median taken)")
    args = parser.parse_args()
    writers = _writers()
    print(f"repeats={max(3, args.repeats)} (median); calls/s including the final flush()")
    print()
    print("| method | " + " | ".join(f"{name} calls/s" for name in writers) + " | stoker / torch |")
    print("|---" * (len(writers) + 2) + "|")
    for case, (bench, count) in CASES.items():
        samples: dict[str, list[float]] = {name: [] for name in writers}
        for _ in range(max(3, args.repeats)):
            for name, factory in writers.items():
                samples[name].append(measure(factory, bench, count))
        medians = {name: statistics.median(values) for name, values in samples.items()}
        ratio = medians["stoker"] / medians["torch"] if "torch" in medians else float("nan")
        cells = " | ".join(f"{medians[name]:,.0f}" for name in writers)
        print(f"| {case} | {cells} | {ratio:.1f}x |", flush=True)


if __name__ == "__main__":
    main()
