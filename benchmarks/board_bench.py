"""TensorBoard's own web page served by ``stoker board`` and by TensorBoard: whole server processes.

Run: ``.venv/bin/python benchmarks/board_bench.py [--runs 1000] [--points 10000] [--only
sweep,images,s3] [--limit 900] [--json PATH]``

Each server is started as a command in a fresh process tree (its own session) and timed from
``Popen`` until TensorBoard's HTTP API has answered with every run's data in full; the tree is
then stopped (SIGTERM to its group and to every member, SIGKILL after 15 s), on every path.
That time includes this client's parsing of the answers' JSON (the same JSON from every server:
on the sweep about 3.5 s of it); the table's ``answered`` column is the time less that parsing.
Servers, each with ``--samples_per_plugin scalars=N,images=M`` (N the points of one tag of one
run, M the images of one run: TensorBoard keeps 1,000 scalars and 10 images of each series by
default, and these flags make it keep all):

* ``stoker board``: ``python -m stoker.cli board LOGDIR --host 127.0.0.1 --port P --
  --samples_per_plugin ...`` (flags after ``--`` go to TensorBoard's web server): stoker's
  reader behind a gRPC data provider, TensorBoard's web server started with
  ``--grpc_data_provider`` (rows say "not available" while ``stoker.board`` does not import);
* TensorBoard's Rust data server: ``python -m tensorboard.main --logdir LOGDIR --load_fast=true``
  (local directories only: TensorBoard's Rust server reads no ``s3://``);
* TensorBoard's Python loader: the same with ``--load_fast=false`` (what TensorBoard's default
  ``--load_fast=auto`` falls back to for ``s3://``) and ``--max_reload_threads`` one per core
  (runs reloaded in parallel: 100 runs x 2,000 points loaded in 12-14 s instead of 16 s on 2
  cores; no change on S3).

Scenarios (``--only``):

* ``sweep``: logdir_bench's sweep (``--runs`` runs of ``--points`` scalars over four tags and
  three histograms each, written by stoker's SummaryWriter and cached by logdir_bench). Loaded
  when ``/data/plugin/scalars/scalars?run=R&tag=loss`` has returned every run's full series
  (runs are asked for once ``/data/plugin/scalars/tags`` lists them; a short answer is asked
  again). Then a page refresh, the median of ``--refreshes``: the requests TensorBoard's default
  dashboard (Time Series) makes when the page is reloaded, one after another:
  ``/data/environment``, ``/data/runs``, ``/data/plugins_listing``,
  ``/data/plugin/timeseries/tags``, and one ``POST /data/plugin/timeseries/timeSeries`` per
  scalar card (``requests=[{"plugin": "scalars", "tag": T}]``, every run's series of tag T),
  each answer checked to hold every run's every point. The histogram cards' per-run requests
  are not made. With ``--gzip`` the card POSTs ask for gzip as a browser does (every browser
  sends ``Accept-Encoding: gzip``; TensorBoard gzips its JSON then, at level 3, and stoker's
  page server at level 1 on every core), and the client's inflating counts as its parsing.
* ``sampled``: the same sweep with TensorBoard's default sampling of 1,000 points a scalar
  series (what the page shows without ``--samples_per_plugin``); loaded when every run's
  ``loss`` has been served, 1,000 points each; then the Time Series page's refresh, as above,
  each card's every run holding 1,000 points.
* ``images``: ``--image-runs`` runs of ``--images`` 256x256 RGB images each (one tag, one
  image a step, through stoker's ``SummaryWriter.add_image``) and 1,000 scalars. Loaded when
  every run's ``/data/plugin/images/images?run=R&tag=samples&sample=0`` lists every image and
  every image's PNG bytes have come from ``/data/plugin/images/individualImage``.
* ``s3``: a local S3 server (moto's server mode on 127.0.0.1, as the tests start it) holding a
  sweep of ``--s3-runs`` runs of ``--points`` scalars; stoker board and TensorBoard's Python
  loader on ``s3://bucket/sweep``, loaded as in ``sweep``. Both find the endpoint in the
  environment: ``S3_ENDPOINT`` (TensorBoard's S3 file system without TensorFlow) and
  ``AWS_ENDPOINT_URL`` (botocore, under s3fs), with dummy credentials.

* ``provider``: the data servers alone on the sweep, asked over gRPC by TensorBoard's own
  client code (``GrpcDataProvider``) from this process, with no web server in between:
  ``stoker board --data-server-only`` and TensorBoard's Rust data server binary
  (``--samples-per-plugin scalars=all --reload once``). Loaded when one ``ReadScalars`` of
  ``loss`` over every run returns every point; then a page refresh's questions, the median of
  ``--refreshes``: ``ListPlugins``, ``ListRuns``, ``ListScalars`` of the scalars plugin, and one
  ``ReadScalars`` per tag over every run downsampled to 1,000 points (what the Time Series
  page's scalar cards ask through the web server, with TensorBoard's default sampling). This is
  the data server's share of a refresh: TensorBoard's web server then turns every point into
  JSON, the same work whichever server answered.

Peak RSS is the largest sum of RSS over the server and all its descendants (the Rust server,
stoker's data provider), sampled from ``/proc`` every 50 ms, loading and refreshes included.
A sum of RSS counts a page shared by several processes of the tree (a forked reader's pages it
shares with its parent, shared libraries) once per process; peak PSS, the largest sum of
``Pss`` from ``/proc/PID/smaps_rollup`` (each shared page divided among the processes mapping
it), counts it once: the memory the tree takes from the machine.
A server that has not loaded within ``--limit`` seconds is reported as "> limit". Requests are
made one at a time (a browser makes up to six at once), each on a new connection, from this
process, which shares the cores with the server. The tables give each server's seconds, the
Rust server's and the Python loader's seconds divided by them (above 1: faster than that peer),
and the peak RSS; ``--json`` saves every row with its command.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gzip
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import logdir_bench  # the sweep, its cache and the HTTP helpers are shared
from loader_bench import pss  # a process's PSS, as loader_bench's copy-on-write rows read it

TAG = "loss"
IMAGE_TAG = "samples"
IMAGE_SIDE = 256
IMAGE_SCALARS = 1000
PNG = b"\x89PNG\r\n\x1a\n"
SCENARIOS = ("sweep", "sampled", "images", "s3", "provider")
DEFAULT_SAMPLES = 1000  # scalar points a series TensorBoard keeps without --samples_per_plugin
_PAGE = os.sysconf("SC_PAGE_SIZE")
_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}
STOKER = "stoker board"
RUST = "TensorBoard Rust data server"
PYTHON = "TensorBoard Python loader"


class Unfinished(Exception):
    """The server did not serve everything within the limit."""


class ServerExited(Exception):
    """The server's command ended before it served everything."""


def _board_available() -> bool:
    try:
        return importlib.util.find_spec("stoker.board") is not None
    except ModuleNotFoundError:
        return False


def per_tag_counts(points: int) -> dict[str, int]:
    """Points of each tag in one run of the sweep (its writer deals the steps round robin)."""
    return {tag: len(range(index, points, len(logdir_bench.TAGS)))
            for index, tag in enumerate(logdir_bench.TAGS)}  # fmt: skip


# --- the process tree ---------------------------------------------------------------------


def _proc_table() -> dict[int, tuple[int, int, int, int]]:
    """PID -> (ppid, session, start time, RSS bytes) of every process in /proc."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        # After the command name: state, ppid, pgrp, session, ... starttime (19), ..., rss (21).
        table[int(entry.name)] = (int(fields[1]), int(fields[3]), int(fields[19]),
                                  int(fields[21]) * _PAGE)  # fmt: skip
    return table


def _tree(root: int, table: dict[int, tuple[int, int, int, int]]) -> set[int]:
    """The root, its descendants, and whatever else is left of its session."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found = {pid for pid, (_, session, _, _) in table.items() if session == root}
    todo = [root, *found]
    while todo:
        pid = todo.pop()
        for child in children.get(pid, ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    if root in table:
        found.add(root)
    return found


class TreeWatch:
    """Samples the RSS and PSS of a process tree every ``interval`` seconds from a thread."""

    def __init__(self, root: int, interval: float = 0.05) -> None:
        """Start sampling the tree rooted at process ``root``."""
        self.root = root
        self.peak = 0
        self.peak_pss = 0
        self.seen: dict[int, int] = {}  # pid -> start time, every member ever sampled
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, args=(interval,), daemon=True)
        self._thread.start()

    def _sample(self, interval: float) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(interval)

    def sample(self) -> set[int]:
        """One sample: the tree's members now."""
        table = _proc_table()
        members = _tree(self.root, table)
        self.peak = max(self.peak, sum(table[pid][3] for pid in members))
        self.peak_pss = max(self.peak_pss, sum(pss(pid) for pid in members))
        for pid in members:
            self.seen.setdefault(pid, table[pid][2])
        return members

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()
        self._thread.join()

    def alive(self) -> list[int]:
        """Members ever sampled that still run (the same process: same start time)."""
        table = _proc_table()
        return [pid for pid, start in self.seen.items()
                if pid in table and table[pid][2] == start]  # fmt: skip


class Server:
    """A command started in a session of its own, its tree watched, killed on every path."""

    def __init__(self, command: list[str], env: dict[str, str], log: Path) -> None:
        """Start ``command`` with ``env``, its output to ``log``, and watch its tree."""
        self.log = log
        self.started = time.perf_counter()
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        self.watch = TreeWatch(self.process.pid)

    def check(self) -> None:
        """Raise if the command has ended."""
        if self.process.poll() is not None:
            tail = self.log.read_text(errors="replace")[-2000:]
            raise ServerExited(f"exited with {self.process.returncode}: {tail.strip()}")

    def stop(self) -> None:
        """SIGTERM to the group and to every member; SIGKILL to whatever is left after 15 s."""
        self.watch.sample()
        self.watch.stop()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        for pid in self.watch.alive():  # members in sessions of their own too
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while self.watch.alive() and time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=0.05)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        for pid in self.watch.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.process.wait(timeout=30)


@contextlib.contextmanager
def serving(command: list[str], env: dict[str, str], log: Path) -> Iterator[Server]:
    """Start a server; stop its whole tree on leaving, however the block ends."""
    server = Server(command, env, log)
    try:
        yield server
    finally:
        server.stop()


# --- HTTP -----------------------------------------------------------------------------------


class Parsing:
    """Seconds this client spent parsing answers' JSON (a browser parses too, faster)."""

    seconds = 0.0


def _get(url: str) -> Any:
    """JSON from a GET; None for an error status (a run not loaded yet)."""
    try:
        data = _get_bytes(url)
    except urllib.error.HTTPError:
        return None
    start = time.perf_counter()
    answer = json.loads(data)
    Parsing.seconds += time.perf_counter() - start
    return answer


def _get_bytes(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as response:
        data: bytes = response.read()
        return data


class Browser:
    """Whether the refresh's POSTs ask for gzip, as a browser does (``--gzip``)."""

    gzip = False


def _post_bytes(url: str, fields: dict[str, str]) -> tuple[bytes, bool]:
    """A form POST, as the page sends it; the answer's bytes, and whether they are gzipped."""
    headers = {"X-XSRF-Protected": "1"}
    if Browser.gzip:
        headers["Accept-Encoding"] = "gzip"
    request = urllib.request.Request(
        url, data=urllib.parse.urlencode(fields).encode(), headers=headers, method="POST"
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        data: bytes = response.read()
        return data, response.headers.get("Content-Encoding") == "gzip"


def _poll(server: Server, deadline: float, step: Callable[[], bool]) -> None:
    """Call ``step`` until it says done; raise if the server ends or the deadline passes."""
    while True:
        server.check()
        try:
            if step():
                return
        except (ConnectionError, urllib.error.URLError):
            pass  # not listening yet
        if time.perf_counter() > deadline:
            raise Unfinished
        time.sleep(0.1)


def await_scalars(server: Server, base: str, runs: list[str], count: int, deadline: float) -> None:
    """Until every run's full series of ``TAG`` has been served."""
    served: dict[str, int] = {}

    def step() -> bool:
        tags = _get(f"{base}/data/plugin/scalars/tags")
        if not isinstance(tags, dict):
            return False
        for run in runs:
            if served.get(run, 0) < count and TAG in tags.get(run, {}):
                query = urllib.parse.urlencode({"run": run, "tag": TAG})
                points = _get(f"{base}/data/plugin/scalars/scalars?{query}")
                served[run] = len(points) if isinstance(points, list) else 0
                if served[run] > count:
                    raise SystemExit(f"{run} served {served[run]} points of {TAG}, {count} written")
        return all(served.get(run, 0) == count for run in runs)

    _poll(server, deadline, step)


def await_images(server: Server, base: str, runs: list[str], count: int, deadline: float) -> None:
    """Until every run's image list is full and every image's PNG bytes have been fetched."""
    done: set[str] = set()

    def step() -> bool:
        tags = _get(f"{base}/data/plugin/images/tags")
        if not isinstance(tags, dict):
            return False
        for run in runs:
            if run in done or IMAGE_TAG not in tags.get(run, {}):
                continue
            query = urllib.parse.urlencode({"run": run, "tag": IMAGE_TAG, "sample": 0})
            listed = _get(f"{base}/data/plugin/images/images?{query}")
            if not isinstance(listed, list) or len(listed) < count:
                continue
            if len(listed) > count:
                raise SystemExit(f"{run} lists {len(listed)} images, {count} written")
            for image in listed:
                data = _get_bytes(f"{base}/data/plugin/images/individualImage?{image['query']}")
                if not data.startswith(PNG):
                    raise SystemExit(f"{run}: image {image['step']} is not a PNG: {data[:16]!r}")
            done.add(run)
        return len(done) == len(runs)

    _poll(server, deadline, step)


def refresh(base: str, runs: list[str], counts: dict[str, int]) -> tuple[float, float]:
    """Seconds for the Time Series page's requests on a reload, every answer checked.

    Also the seconds until every answer's last byte had arrived: the refresh less the time
    this process took to parse the answers' JSON (a browser parses too, faster).
    """
    start = time.perf_counter()
    for route in ("environment", "runs", "plugins_listing", "plugin/timeseries/tags"):
        if _get(f"{base}/data/{route}") is None:
            raise SystemExit(f"/data/{route} failed")
    parsing = 0.0
    for tag, count in counts.items():
        request = json.dumps([{"plugin": "scalars", "tag": tag}])
        data, zipped = _post_bytes(
            f"{base}/data/plugin/timeseries/timeSeries", {"requests": request}
        )
        parse_start = time.perf_counter()
        if Browser.gzip and not zipped:
            raise SystemExit(f"timeSeries {tag}: asked for gzip, answered without it")
        answer = json.loads(gzip.decompress(data) if zipped else data)
        parsing += time.perf_counter() - parse_start
        series = answer[0].get("runToSeries") or {}
        short = [run for run in runs if len(series.get(run, ())) != count]
        if short:
            raise SystemExit(f"timeSeries {tag}: {len(short)} runs short, e.g. {short[0]}")
    took = time.perf_counter() - start
    return took, took - parsing


# --- the servers ----------------------------------------------------------------------------


def commands(logdir: str, port: int, samples: str, s3: bool) -> dict[str, list[str] | None]:
    """Each server's command (None: not available here)."""
    where = ["--host", "127.0.0.1", "--port", str(port)]
    keep = ["--samples_per_plugin", samples]
    tensorboard = [sys.executable, "-m", "tensorboard.main", "--logdir", logdir, *where, *keep]
    board = [sys.executable, "-m", "stoker.cli", "board", logdir, *where, "--", *keep]
    return {
        STOKER: board if _board_available() else None,
        RUST: None if s3 else [*tensorboard, "--load_fast=true"],
        PYTHON: [*tensorboard, "--load_fast=false", f"--max_reload_threads={os.cpu_count() or 1}"],
    }


class Scenario(NamedTuple):
    """One log dir and what every server must serve from it."""

    title: str
    logdir: str
    samples: str  # --samples_per_plugin
    env: dict[str, str]
    # (server, base URL, deadline): until loaded; the JSON it parsed is timed in Parsing
    wait: Callable[[Server, str, float], None]
    # (base URL) -> seconds of one refresh, and until its answers had arrived
    after: Callable[[str], tuple[float, float]] | None = None
    s3: bool = False


def measure(
    name: str, command: list[str] | None, scenario: Scenario, args: argparse.Namespace, port: int
) -> dict[str, Any]:
    """Start one server, time it until loaded, then the refreshes; its tree killed after."""
    if command is None:
        return {"server": name, "status": "not available"}
    result: dict[str, Any] = {"server": name, "command": command}
    with tempfile.TemporaryDirectory(prefix="board-bench-") as logs:
        log = Path(logs) / "server.log"
        with serving(command, scenario.env, log) as server:
            base = f"http://127.0.0.1:{port}"
            Parsing.seconds = 0.0
            try:
                scenario.wait(server, base, server.started + args.limit)
            except Unfinished:
                result.update(
                    status=f"> {args.limit:.0f} s",
                    rss_mib=server.watch.peak / 2**20,
                    pss_mib=server.watch.peak_pss / 2**20,
                )
                return result
            except ServerExited as err:
                result.update(
                    status=f"failed: {err}",
                    rss_mib=server.watch.peak / 2**20,
                    pss_mib=server.watch.peak_pss / 2**20,
                )
                return result
            seconds = time.perf_counter() - server.started
            result.update(status="ok", seconds=seconds, answered_s=seconds - Parsing.seconds)
            if scenario.after is not None:
                times = [scenario.after(base) for _ in range(args.refreshes)]
                result["refresh_s"] = statistics.median(took for took, _ in times)
                result["refresh_served_s"] = statistics.median(served for _, served in times)
                result["refreshes"] = times  # each (whole, answered), the first view first
            server.watch.sample()
            result["rss_mib"] = server.watch.peak / 2**20
            result["pss_mib"] = server.watch.peak_pss / 2**20
    return result


def servers(scenario: Scenario, args: argparse.Namespace) -> dict[str, Any]:
    """Every server on one log dir, one after another, each on a port of its own."""
    results = []
    for name in (STOKER, RUST, PYTHON):
        if name not in args.servers:
            continue
        port = logdir_bench._free_port()
        command = commands(scenario.logdir, port, scenario.samples, scenario.s3)[name]
        if command is None and name == RUST:
            continue  # TensorBoard's Rust server reads no S3
        print(f"  {name} ...", flush=True)
        results.append(measure(name, command, scenario, args, port))
    report(scenario.title, results)
    return {"title": scenario.title, "logdir": scenario.logdir, "results": results}


def report(title: str, results: list[dict[str, Any]]) -> None:
    """A table: seconds to data, ratios, peak RSS, refresh."""
    by_name = {row["server"]: row for row in results}

    def ratio(row: dict[str, Any], peer: str, key: str) -> str:
        other = by_name.get(peer, {})
        if key not in row or key not in other:
            return "-"
        return f"{other[key] / row[key]:.2f}x"

    print(title)
    header = f"{'server':<32}{'seconds':>10}{'vs Rust':>10}{'vs Python':>11}{'answered':>10}"
    header += f"{'vs Rust':>10}{'peak RSS MiB':>14}{'peak PSS MiB':>14}"
    refreshes = any("refresh_s" in row for row in results)
    if refreshes:
        header += f"{'refresh s':>11}{'vs Rust':>10}{'vs Python':>11}{'served s':>10}"
    print(header)
    for row in results:
        if "seconds" not in row and not row["status"].startswith(">"):
            print(f"{row['server']:<32}{row['status'][-300:]}")
            continue
        seconds = f"{row['seconds']:.1f}" if "seconds" in row else row["status"]
        rss = f"{row['rss_mib']:.0f}" if "rss_mib" in row else "-"
        line = f"{row['server']:<32}{seconds:>10}{ratio(row, RUST, 'seconds'):>10}"
        pss = f"{row['pss_mib']:.0f}" if "pss_mib" in row else "-"
        answered = f"{row['answered_s']:.1f}" if "answered_s" in row else "-"
        line += f"{ratio(row, PYTHON, 'seconds'):>11}{answered:>10}"
        line += f"{ratio(row, RUST, 'answered_s'):>10}{rss:>14}{pss:>14}"
        if refreshes:
            fresh = f"{row['refresh_s']:.2f}" if "refresh_s" in row else "-"
            line += f"{fresh:>11}{ratio(row, RUST, 'refresh_s'):>10}"
            line += f"{ratio(row, PYTHON, 'refresh_s'):>11}"
            served = f"{row['refresh_served_s']:.2f}" if "refresh_served_s" in row else "-"
            line += f"{served:>10}"
        print(line)
    for row in results:
        if len(row.get("refreshes", ())) > 1:
            each = ", ".join(f"{took:.2f}/{served:.2f}" for took, served in row["refreshes"])
            print(f"  {row['server']}: each refresh, whole/served s: {each}")
    print(
        "(vs X: X's seconds / this row's; above 1 is faster than X. answered: the seconds less"
        " those this client spent parsing the answers' JSON)\n",
        flush=True,
    )


# --- the scenarios --------------------------------------------------------------------------


def _sweep(runs: int, points: int) -> Path:
    root = logdir_bench._cache() / f"logdir-{runs}x{points}"
    started = time.perf_counter()
    logdir_bench._write(root, runs, points)
    print(f"log dir {root} ready in {time.perf_counter() - started:.1f} s", flush=True)
    return root


def _run_names(runs: int) -> list[str]:
    return [f"run{index:04d}" for index in range(runs)]


def sweep(args: argparse.Namespace) -> dict[str, Any]:
    """Every run's series of one tag, then the page's refresh."""
    root = _sweep(args.runs, args.points)
    runs = _run_names(args.runs)
    counts = per_tag_counts(args.points)
    count = counts[TAG]
    scenario = Scenario(
        f"sweep: {args.runs} runs x {args.points} scalars, every run's {TAG!r} ({count} points)"
        f" served; refresh = the Time Series page's reload ({len(counts)} scalar cards)",
        str(root),
        f"scalars={max(counts.values())}",
        dict(os.environ),
        lambda server, base, deadline: await_scalars(server, base, runs, count, deadline),
        lambda base: refresh(base, runs, counts),
    )
    return servers(scenario, args)


def sampled(args: argparse.Namespace) -> dict[str, Any]:
    """The sweep as TensorBoard samples it by default (1,000 points a series), then refreshes."""
    root = _sweep(args.runs, args.points)
    runs = _run_names(args.runs)
    counts = {
        tag: min(count, DEFAULT_SAMPLES) for tag, count in per_tag_counts(args.points).items()
    }
    scenario = Scenario(
        f"sampled: the sweep at TensorBoard's default sampling ({DEFAULT_SAMPLES} points a "
        f"series), every run's {TAG!r} served; refresh = the Time Series page's reload "
        f"({len(counts)} scalar cards)",
        str(root),
        f"scalars={DEFAULT_SAMPLES}",  # what TensorBoard keeps without the flag
        dict(os.environ),
        lambda server, base, deadline: await_scalars(server, base, runs, counts[TAG], deadline),
        lambda base: refresh(base, runs, counts),
    )
    return servers(scenario, args)


def _picture(rng: Any, step: int) -> Any:
    """A 256x256 RGB uint8 image: gradients, a moving disc, some noise (PNG of about 100 KB)."""
    import numpy as np

    y, x = np.mgrid[0:IMAGE_SIDE, 0:IMAGE_SIDE]
    disc = (x - 8 * step) ** 2 + (y - 128) ** 2 < 40**2
    image = np.stack([x, y, (x + y + 16 * step) // 2], axis=-1).astype(np.int16)
    image[disc] = (230, 60, 40)
    image += rng.integers(-6, 7, size=image.shape, dtype=np.int16)
    return np.clip(image, 0, 255).astype(np.uint8)


def write_images(root: Path, runs: int, images: int) -> None:
    """The image log dir, once; a finished marker makes an interrupted write start over."""
    import numpy as np

    from stoker.tensorboard import SummaryWriter

    done = root / "COMPLETE"
    if done.exists():
        return
    rng = np.random.default_rng(1)
    tags = logdir_bench.TAGS
    for index in range(runs):
        with SummaryWriter(str(root / f"run{index:04d}"), max_queue=4096) as writer:
            for step in range(images):
                writer.add_image(IMAGE_TAG, _picture(rng, step), step, dataformats="HWC")
            for step, value in enumerate(rng.normal(size=IMAGE_SCALARS).tolist()):
                writer.add_scalar(tags[step % len(tags)], value, step // len(tags))
    done.write_text(f"{runs} runs x {images} images\n")


def images(args: argparse.Namespace) -> dict[str, Any]:
    """Every run's image list and every image's bytes."""
    root = logdir_bench._cache() / f"images-{args.image_runs}x{args.images}"
    started = time.perf_counter()
    write_images(root, args.image_runs, args.images)
    print(f"log dir {root} ready in {time.perf_counter() - started:.1f} s", flush=True)
    runs = _run_names(args.image_runs)
    scalars = max(per_tag_counts(IMAGE_SCALARS).values())
    scenario = Scenario(
        f"images: {args.image_runs} runs x {args.images} images of {IMAGE_SIDE}x{IMAGE_SIDE}"
        f" (+{IMAGE_SCALARS} scalars), every image list and image served",
        str(root),
        f"scalars={scalars},images={args.images}",
        dict(os.environ),
        lambda server, base, deadline: await_images(server, base, runs, args.images, deadline),
    )
    return servers(scenario, args)


@contextlib.contextmanager
def moto_server(logs: Path) -> Iterator[str]:
    """Moto's S3 server on 127.0.0.1 (as the tests start it); its tree killed after."""
    port = logdir_bench._free_port()
    command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    with serving(command, {**os.environ, **_CREDENTIALS}, logs / "moto.log") as server:
        url = f"http://127.0.0.1:{port}"

        def up() -> bool:
            with urllib.request.urlopen(f"{url}/moto-api/", timeout=1):
                return True

        _poll(server, time.perf_counter() + 30, up)
        yield url


def upload(root: Path, endpoint: str, bucket: str, prefix: str) -> int:
    """Copy every file of the log dir into the bucket under ``prefix``; the bytes uploaded."""
    import boto3  # type: ignore[import-untyped]  # no stubs installed

    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        region_name=_CREDENTIALS["AWS_DEFAULT_REGION"],
    )
    client.create_bucket(Bucket=bucket)
    total = 0
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name != "COMPLETE":
            key = f"{prefix}/{path.relative_to(root).as_posix()}"
            client.upload_file(str(path), bucket, key)
            total += path.stat().st_size
    return total


def s3(args: argparse.Namespace) -> dict[str, Any]:
    """The sweep's scalars from a local S3 server."""
    if importlib.util.find_spec("moto") is None or importlib.util.find_spec("boto3") is None:
        print("s3: moto and boto3 are needed (pip install -e '.[test]')\n")
        return {"title": "s3", "results": []}
    root = _sweep(args.s3_runs, args.points)
    runs = _run_names(args.s3_runs)
    counts = per_tag_counts(args.points)
    count = counts[TAG]
    logs = tempfile.TemporaryDirectory(prefix="board-bench-s3-")
    with logs, moto_server(Path(logs.name)) as endpoint:
        started = time.perf_counter()
        size = upload(root, endpoint, "bench", "sweep")
        print(f"uploaded {size / 2**20:.0f} MiB to {endpoint} in"
              f" {time.perf_counter() - started:.1f} s", flush=True)  # fmt: skip
        scenario = Scenario(
            f"s3: {args.s3_runs} runs x {args.points} scalars on a local S3 server (moto),"
            f" every run's {TAG!r} ({count} points) served",
            "s3://bench/sweep",
            f"scalars={max(counts.values())}",
            # S3_ENDPOINT: TensorBoard's S3 file system; AWS_ENDPOINT_URL: botocore (s3fs).
            {**os.environ, **_CREDENTIALS, "S3_ENDPOINT": endpoint, "AWS_ENDPOINT_URL": endpoint},
            lambda server, base, deadline: await_scalars(server, base, runs, count, deadline),
            s3=True,
        )
        return servers(scenario, args)


def _wait_for_port(server: Server, port_file: Path, deadline: float) -> int:
    while not (port_file.exists() and port_file.read_text().strip().isdigit()):
        server.check()
        if time.perf_counter() > deadline:
            raise Unfinished
        time.sleep(0.05)
    return int(port_file.read_text())


def _data_server_address(server: Server, name: str, port_file: Path, deadline: float) -> str:
    """The address a data server listens on, once it says (stoker prints a flag line)."""
    if name == RUST:
        return f"127.0.0.1:{_wait_for_port(server, port_file, deadline)}"
    while True:
        server.check()
        text = server.log.read_text() if server.log.exists() else ""
        for line in text.splitlines():
            if line.startswith("--grpc_data_provider="):
                return line.split("=", 1)[1]
        if time.perf_counter() > deadline:
            raise Unfinished
        time.sleep(0.05)


def _provider_questions(client: Any, runs: list[str], counts: dict[str, int]) -> None:
    """A refresh's questions to the data server; every run's every tag must be answered."""
    from tensorboard import context

    ctx = context.RequestContext()
    client.list_plugins(ctx, experiment_id="")
    client.list_runs(ctx, experiment_id="")
    client.list_scalars(ctx, experiment_id="", plugin_name="scalars")
    for tag, count in counts.items():
        read = client.read_scalars(ctx, experiment_id="", plugin_name="scalars", downsample=1000,
                                   run_tag_filter=_tag_filter(tag))  # fmt: skip
        short = [run for run in runs if len(read.get(run, {}).get(tag, [])) != min(count, 1000)]
        if short:
            raise SystemExit(f"ReadScalars {tag}: {len(short)} runs short, e.g. {short[0]}")


def _loaded(client: Any, runs: list[str], counts: dict[str, int]) -> bool:
    """Whether one ReadScalars of TAG over every run returns every point."""
    import grpc
    from tensorboard import context

    try:
        read = client.read_scalars(context.RequestContext(), experiment_id="",
                                   plugin_name="scalars", downsample=1 << 30,
                                   run_tag_filter=_tag_filter(TAG))  # fmt: skip
    except grpc.RpcError:
        return False
    return all(len(read.get(run, {}).get(TAG, [])) == counts[TAG] for run in runs)


def _tag_filter(tag: str) -> Any:
    from tensorboard.data import provider

    return provider.RunTagFilter(tags=[tag])


def provider_scenario(args: argparse.Namespace) -> dict[str, Any]:
    """The data servers alone on the sweep, asked over gRPC (see the module docstring)."""
    import grpc
    from tensorboard.data import grpc_provider
    from tensorboard_data_server import server_binary

    root = _sweep(args.runs, args.points)
    runs = _run_names(args.runs)
    counts = per_tag_counts(args.points)
    title = (
        f"provider: the data servers alone on {args.runs} runs x {args.points} scalars over "
        f"gRPC; loaded = one ReadScalars of {TAG!r} over every run in full; refresh = "
        "ListPlugins, ListRuns, ListScalars and one ReadScalars per tag (1,000 points)"
    )
    results = []
    with tempfile.TemporaryDirectory() as scratch:
        port_file = Path(scratch) / "port"
        commands_of = {
            STOKER: [sys.executable, "-m", "stoker.cli", "board", str(root), "--data-server-only",
                     "--reload-interval", "0"] if _board_available() else None,
            RUST: [server_binary(), "--logdir", str(root), "--host", "127.0.0.1", "--port", "0",
                   "--port-file", str(port_file), "--reload", "once",
                   "--samples-per-plugin", "scalars=all"],
        }  # fmt: skip
        for name, command in commands_of.items():
            print(f"  {name} ...", flush=True)
            if command is None:
                results.append({"server": name, "status": "not available"})
                continue
            port_file.unlink(missing_ok=True)
            row: dict[str, Any] = {"server": name, "command": command}
            log = Path(scratch) / f"{name.split()[0]}.log"
            with serving(command, dict(os.environ), log) as server:
                deadline = server.started + args.limit
                try:
                    address = _data_server_address(server, name, port_file, deadline)
                    channel = grpc.insecure_channel(
                        address, options=[("grpc.max_receive_message_length", 1 << 30)]
                    )
                    stub = grpc_provider.make_stub(channel)
                    client = grpc_provider.GrpcDataProvider(address, stub)
                    _poll(server, deadline, functools.partial(_loaded, client, runs, counts))
                    row.update(status="ok", seconds=time.perf_counter() - server.started)
                    times = []
                    for _ in range(args.refreshes):
                        start = time.perf_counter()
                        _provider_questions(client, runs, counts)
                        times.append(time.perf_counter() - start)
                    row["refresh_s"] = statistics.median(times)
                except Unfinished:
                    row["status"] = f"> {args.limit:.0f} s"
                except ServerExited as exited:
                    row["status"] = f"failed: {exited}"
                server.watch.sample()
                row["rss_mib"] = server.watch.peak / 2**20
                row["pss_mib"] = server.watch.peak_pss / 2**20
            results.append(row)
    report(title, results)
    return {"title": title, "results": results}


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(f"stopped by signal {signum}")  # unwinds: every server's tree is stopped


def main() -> None:
    """Run the chosen scenarios, each server in turn, and print (and save) the tables."""
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs of the sweep")
    parser.add_argument("--points", type=int, default=10_000, help="scalars per run")
    parser.add_argument("--image-runs", type=int, default=100)
    parser.add_argument("--images", type=int, default=20, help="images per run")
    parser.add_argument("--s3-runs", type=int, default=100)
    parser.add_argument("--refreshes", type=int, default=3, help="page refreshes (median)")
    parser.add_argument("--limit", type=float, default=900.0, help="seconds per server at most")
    parser.add_argument("--only", default=",".join(SCENARIOS), help="comma-separated scenarios")
    parser.add_argument("--json", type=Path, help="save the results here")
    parser.add_argument("--gzip", action="store_true", help="refreshes ask for gzip")
    parser.add_argument(
        "--servers", default="stoker,rust,python", help="comma-separated: stoker, rust, python"
    )
    args = parser.parse_args()
    names = {"stoker": STOKER, "rust": RUST, "python": PYTHON}
    picked = [name for name in args.servers.split(",") if name]
    if not picked or set(picked) - set(names):
        parser.error(f"--servers takes stoker, rust, python, got {args.servers!r}")
    args.servers = sorted({names[name] for name in picked})  # a list: saved with --json
    Browser.gzip = args.gzip
    chosen = [name for name in args.only.split(",") if name]
    unknown = set(chosen) - set(SCENARIOS)
    if unknown:
        parser.error(f"--only takes {', '.join(SCENARIOS)}, got {', '.join(sorted(unknown))}")
    if importlib.util.find_spec("tensorboard") is None:
        raise SystemExit("TensorBoard is needed: pip install -e '.[tensorboard]'")
    if not _board_available():
        print("stoker.board does not import here: its rows say 'not available'\n")
    scenarios = {"sweep": sweep, "sampled": sampled, "images": images, "s3": s3,
                 "provider": provider_scenario}  # fmt: skip
    results = {name: scenarios[name](args) for name in SCENARIOS if name in chosen}
    if args.json is not None:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)},
                                         "scenarios": results}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
