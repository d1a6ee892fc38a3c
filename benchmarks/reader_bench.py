"""Side-by-side speed of reading scalars back: stoker's Reader vs TensorBoard vs tbparse.

Run: ``.venv/bin/python benchmarks/reader_bench.py [--points 100000] [--tags 1] [--repeats 5]``

One event file with ``--points`` scalars (spread over ``--tags`` tags) is written by stoker's
SummaryWriter; torch's writer produces the same bytes for ``add_scalar``. Each reader then loads
every point of every tag into memory, from a cold Python object (a new reader each time):

* stoker: ``Reader(dir)`` then ``scalars(tag)`` for every tag (NumPy columns);
* tensorboard EventAccumulator: ``size_guidance`` 0 for every kind so that it keeps every point
  (its default samples scalars down to 10,000), ``Reload()`` then ``Scalars(tag)``;
* tensorboard LegacyEventFileLoader: only parses the protobuf events, for reference;
* tbparse (when installed): ``SummaryReader(dir).scalars``, a pandas DataFrame.

Before timing, every reader's values are checked to be equal. The readers take turns and the
median of the repeats is reported, with the speedup over EventAccumulator.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

ReadAll = Callable[[str, list[str]], list[np.ndarray[Any, Any]]]


def _stoker(logdir: str, tags: list[str]) -> list[np.ndarray[Any, Any]]:
    from stoker.tensorboard import Reader

    reader = Reader(logdir)
    return [reader.scalars(tag).value for tag in tags]


def _accumulator(logdir: str, tags: list[str]) -> list[np.ndarray[Any, Any]]:
    from tensorboard.backend.event_processing import event_accumulator as ea

    accumulator = ea.EventAccumulator(
        logdir, size_guidance=dict.fromkeys(ea.DEFAULT_SIZE_GUIDANCE, 0)
    )
    accumulator.Reload()
    return [np.array([event.value for event in accumulator.Scalars(tag)]) for tag in tags]


def _loader(logdir: str, tags: list[str]) -> list[np.ndarray[Any, Any]]:
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    values: dict[str, list[float]] = {tag: [] for tag in tags}
    for path in sorted(glob.glob(os.path.join(logdir, "*tfevents*"))):
        for event in LegacyEventFileLoader(path).Load():
            for value in event.summary.value:
                values[value.tag].append(value.simple_value)
    return [np.array(values[tag]) for tag in tags]


def _tbparse(logdir: str, tags: list[str]) -> list[np.ndarray[Any, Any]]:
    from tbparse import SummaryReader

    frame = SummaryReader(logdir).scalars
    return [frame[frame.tag == tag].value.to_numpy(dtype=np.float64) for tag in tags]


def _readers() -> dict[str, ReadAll]:
    readers: dict[str, ReadAll] = {"stoker Reader": _stoker}
    try:
        import tensorboard  # noqa: F401

        readers["tensorboard EventAccumulator"] = _accumulator
        readers["tensorboard LegacyEventFileLoader (parse)"] = _loader
    except ImportError:
        print("tensorboard is not installed: skipping its readers")
    try:
        import tbparse  # noqa: F401

        readers["tbparse SummaryReader"] = _tbparse
    except ImportError:
        print("tbparse is not installed (pip install tbparse): skipping it")
    return readers


def _write(logdir: str, points: int, tags: list[str]) -> None:
    from stoker.tensorboard import SummaryWriter

    values = np.random.default_rng(0).normal(size=points)
    with SummaryWriter(logdir, max_queue=4096) as writer:
        for step, value in enumerate(values.tolist()):
            writer.add_scalar(tags[step % len(tags)], value, step)


def main() -> None:
    """Write one event file and time every available reader on it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--tags", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    tags = ["loss"] if args.tags == 1 else [f"metric/{i}" for i in range(args.tags)]
    readers = _readers()
    with tempfile.TemporaryDirectory() as logdir:
        _write(logdir, args.points, tags)
        size = sum(os.path.getsize(p) for p in glob.glob(os.path.join(logdir, "*tfevents*")))
        reference = _stoker(logdir, tags)
        for name, read in readers.items():
            got = read(logdir, tags)
            if any(
                not np.array_equal(a, b.astype(a.dtype))
                for a, b in zip(reference, got, strict=True)
            ):
                raise SystemExit(f"{name} read different values than stoker")
        times: dict[str, list[float]] = {name: [] for name in readers}
        for _ in range(args.repeats):
            for name, read in readers.items():
                start = time.perf_counter()
                read(logdir, tags)
                times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(values) for name, values in times.items()}
    baseline = medians.get("tensorboard EventAccumulator")
    print(
        f"{args.points} scalars in {len(tags)} tag(s), one file of {size / 1e6:.1f} MB, "
        f"median of {args.repeats} runs"
    )
    print(f"{'reader':<44}{'seconds':>10}{'points/s':>14}{'vs EventAccumulator':>22}")
    for name, seconds in medians.items():
        ratio = f"{baseline / seconds:.1f}x" if baseline else "-"
        print(f"{name:<44}{seconds:>10.3f}{args.points / seconds:>14,.0f}{ratio:>22}")


if __name__ == "__main__":
    main()
