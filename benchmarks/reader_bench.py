"""Side-by-side speed of reading scalars back: stoker's Reader vs TensorBoard vs tbparse.

Run: ``.venv/bin/python benchmarks/reader_bench.py [--points 100000] [--tags 1] [--repeats 5]``;
``--export`` times whole-process CSV exports instead (stoker logs export, EventAccumulator + csv,
tbparse + pandas), after checking that all three export the same points.

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


# Export to CSV as a user runs it: a whole process from start to file, each tool its documented
# way. EventAccumulator keeps every point (size_guidance 0) and csv.writer writes the rows;
# tbparse reads with its defaults (every point, long format) and pandas writes with to_csv.
_EXPORTERS = {
    "stoker logs export": ["-m", "stoker.cli", "logs", "export", "{logdir}", "--csv", "{out}"],
    "EventAccumulator + csv": [
        "-c",
        "import csv, sys\n"
        "from tensorboard.backend.event_processing import event_accumulator as ea\n"
        "acc = ea.EventAccumulator(sys.argv[1], size_guidance=dict.fromkeys("
        "ea.DEFAULT_SIZE_GUIDANCE, 0))\n"
        "acc.Reload()\n"
        "with open(sys.argv[2], 'w', newline='') as f:\n"
        "    w = csv.writer(f)\n"
        "    w.writerow(['tag', 'step', 'wall_time', 'value'])\n"
        "    for tag in acc.Tags()['scalars']:\n"
        "        w.writerows((tag, e.step, e.wall_time, e.value) for e in acc.Scalars(tag))\n",
        "{logdir}",
        "{out}",
    ],
    "tbparse + pandas to_csv": [
        "-c",
        "import sys\nfrom tbparse import SummaryReader\n"
        "SummaryReader(sys.argv[1]).scalars.to_csv(sys.argv[2], index=False)\n",
        "{logdir}",
        "{out}",
    ],
}


def _rows(path: str) -> set[tuple[str, int, float]]:
    """(tag, step, value) of every row of an exported CSV, whatever its columns."""
    import csv

    with open(path, newline="") as stream:
        reader = csv.DictReader(stream)
        return {(row["tag"], int(row["step"]), float(row["value"])) for row in reader}


def _export(args: argparse.Namespace, tags: list[str]) -> None:
    """Time whole-process CSV exports of ``--points`` scalars, each tool its fastest way."""
    import importlib.util
    import subprocess
    import sys

    needs = {"EventAccumulator + csv": "tensorboard", "tbparse + pandas to_csv": "tbparse"}
    names = [
        name
        for name in _EXPORTERS
        if name not in needs or importlib.util.find_spec(needs[name]) is not None
    ]
    with tempfile.TemporaryDirectory() as work:
        logdir = os.path.join(work, "logs")
        _write(logdir, args.points, tags)
        runs: dict[str, list[float]] = {name: [] for name in names}
        outputs = {name: os.path.join(work, f"{index}.csv") for index, name in enumerate(names)}

        def run(name: str) -> float:
            command = [sys.executable] + [
                part.format(logdir=logdir, out=outputs[name]) for part in _EXPORTERS[name]
            ]
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            return time.perf_counter() - start

        for name in names:  # a first run each, checked: every tool exports the same points
            run(name)
        expected = _rows(outputs[names[0]])
        if len(expected) != args.points:
            raise SystemExit(f"stoker exported {len(expected)} rows, not {args.points}")
        for name in names[1:]:
            if _rows(outputs[name]) != expected:
                raise SystemExit(f"{name} exported other rows than stoker")
        for _ in range(args.repeats):
            for name in names:
                runs[name].append(run(name))
    medians = {name: statistics.median(values) for name, values in runs.items()}
    fastest_peer = min((t for n, t in medians.items() if not n.startswith("stoker")), default=0)
    print(f"CSV export of {args.points} scalars, whole processes, median of {args.repeats}")
    print(f"{'exporter':<28}{'seconds':>10}{'vs fastest peer':>18}")
    for name, seconds in medians.items():
        ratio = f"{fastest_peer / seconds:.1f}x" if fastest_peer else "-"
        print(f"{name:<28}{seconds:>10.2f}{ratio:>18}")


def main() -> None:
    """Write one event file and time every available reader on it (or export it, --export)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--tags", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--export", action="store_true", help="time whole-process CSV exports instead"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.export:
        tags = ["loss"] if args.tags == 1 else [f"metric/{i}" for i in range(args.tags)]
        _export(args, tags)
        return
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
