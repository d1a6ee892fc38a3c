"""Large log directories: every scalar of many runs read by stoker and its peers, as processes.

Run: ``.venv/bin/python benchmarks/logdir_bench.py [--runs 1000] [--points 10000] [--repeats 1]``

A log directory of ``--runs`` runs is written once by stoker's SummaryWriter and cached under
``~/.cache/stoker-bench`` (or ``$STOKER_BENCH_CACHE``): each run has ``--points`` scalars over
four tags and a few histograms, the shape of a hyperparameter sweep. Each reader then loads every
scalar point of every run, each in a fresh process, timed from process start to the last value:

* stoker: ``Reader(root)``, then ``scalars(tag, run)`` for every run and tag (NumPy columns);
* TensorBoard's EventMultiplexer, keeping every point (``size_guidance`` 0 for every kind),
  ``AddRunsFromDirectory`` then ``Reload``, then ``Scalars(run, tag)``;
* tbparse: ``SummaryReader(root, extra_columns={"dir_name"}).scalars`` (one DataFrame);
* TensorBoard's Rust data server, through TensorBoard itself (``--load_fast=true``,
  ``--samples_per_plugin scalars=1000000000`` so nothing is sampled away; ``0`` would keep no
  point there): from starting the server until its HTTP API has returned every run's every tag
  in full.

Each reader's point count is checked against the number written before its time counts.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

TAGS = ("loss", "accuracy", "lr", "grad_norm")
# The Rust data server keeps no point for scalars=0 (the Python loaders read 0 as "keep all"),
# so "every point" is asked for as a sample size larger than any run.
_KEEP_ALL = 1_000_000_000

_STOKER = """
import sys
from stoker.tensorboard import Reader
reader = Reader(sys.argv[1])
total = 0
for run in reader.runs:
    for tag in reader.tags(run)["scalars"]:
        total += len(reader.scalars(tag, run).value)
print(total)
"""

_MULTIPLEXER = """
import sys
from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.backend.event_processing import event_multiplexer as em
mux = em.EventMultiplexer(size_guidance=dict.fromkeys(ea.DEFAULT_SIZE_GUIDANCE, 0))
mux.AddRunsFromDirectory(sys.argv[1])
mux.Reload()
total = 0
for run, tags in mux.Runs().items():
    for tag in tags["scalars"]:
        total += len(mux.Scalars(run, tag))
print(total)
"""

_TBPARSE = """
import sys
from tbparse import SummaryReader
print(len(SummaryReader(sys.argv[1], extra_columns={"dir_name"}).scalars))
"""


def _cache() -> Path:
    root = os.environ.get("STOKER_BENCH_CACHE") or os.path.expanduser("~/.cache/stoker-bench")
    return Path(root)


def _write(root: Path, runs: int, points: int) -> None:
    """Write the sweep once; a finished marker makes an interrupted write start over."""
    import numpy as np

    from stoker.tensorboard import SummaryWriter

    done = root / "COMPLETE"
    if done.exists():
        return
    rng = np.random.default_rng(0)
    for index in range(runs):
        values = rng.normal(size=points).tolist()
        with SummaryWriter(str(root / f"run{index:04d}"), max_queue=4096) as writer:
            for step, value in enumerate(values):
                writer.add_scalar(TAGS[step % len(TAGS)], value, step // len(TAGS))
            for step in range(3):
                writer.add_histogram("weights", rng.normal(size=1000), step)
    done.write_text(f"{runs} runs x {points} scalars\n")


def _timed(script: str, root: Path) -> tuple[float, int]:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", script, str(root)], capture_output=True, text=True, check=True
    )
    return time.perf_counter() - start, int(done.stdout.split()[-1])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())


def _rust_server(root: Path, per_tag: int, expected: int, limit: float) -> tuple[float, int]:
    """Seconds from starting TensorBoard (Rust data server) until every point was served."""
    port = _free_port()
    command = [sys.executable, "-m", "tensorboard.main", "--logdir", str(root), "--port",
               str(port), "--host", "127.0.0.1", "--load_fast=true",
               "--samples_per_plugin", f"scalars={_KEEP_ALL}"]  # fmt: skip
    start = time.perf_counter()
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    served: dict[tuple[str, str], int] = {}
    try:
        while time.perf_counter() - start < limit:
            try:
                tags = _get(f"{base}/data/plugin/scalars/tags")
            except OSError:
                time.sleep(0.2)
                continue
            assert isinstance(tags, dict)
            for run, run_tags in tags.items():
                for tag in run_tags:
                    if served.get((run, tag), 0) < per_tag:  # not loaded in full yet
                        query = urllib.parse.urlencode({"run": run, "tag": tag})
                        points = _get(f"{base}/data/plugin/scalars/scalars?{query}")
                        assert isinstance(points, list)
                        served[(run, tag)] = len(points)
            if sum(served.values()) >= expected:
                break
            time.sleep(0.2)
        return time.perf_counter() - start, sum(served.values())
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    """Write (or reuse) the sweep and time every reader on it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--limit", type=float, default=1800.0, help="seconds per reader at most")
    args = parser.parse_args()
    root = _cache() / f"logdir-{args.runs}x{args.points}"
    started = time.perf_counter()
    _write(root, args.runs, args.points)
    print(f"log dir {root} ready in {time.perf_counter() - started:.1f} s")
    expected = args.runs * args.points
    readers: dict[str, object] = {"stoker Reader": _STOKER}
    if importlib.util.find_spec("tensorboard") is not None:
        readers["TensorBoard EventMultiplexer"] = _MULTIPLEXER
        readers["TensorBoard Rust data server (HTTP)"] = "rust"
    if importlib.util.find_spec("tbparse") is not None:
        readers["tbparse SummaryReader"] = _TBPARSE
    times: dict[str, list[float]] = {name: [] for name in readers}
    for _ in range(args.repeats):
        for name, script in readers.items():
            if script == "rust":
                seconds, count = _rust_server(root, args.points // len(TAGS), expected, args.limit)
            else:
                seconds, count = _timed(str(script), root)
            if count != expected:
                raise SystemExit(f"{name} read {count} points, {expected} were written")
            times[name].append(seconds)
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(f"{args.runs} runs x {args.points} scalars ({expected:,} points), whole processes")
    print(f"{'reader':<40}{'seconds':>10}{'points/s':>14}{'stoker is':>12}")
    for name, seconds in medians.items():
        ratio = medians["stoker Reader"]
        print(f"{name:<40}{seconds:>10.1f}{expected / seconds:>14,.0f}{seconds / ratio:>11.1f}x")


if __name__ == "__main__":
    main()
