"""``stoker board`` in headless Chromium: every TensorBoard dashboard shows the corpus's data.

``stoker board`` in headless Chromium: every dashboard of TensorBoard's page shows the
corpus's runs and tags, its pictures, sounds, tables and graphs, when stoker's data server feeds
it.

One ``stoker board`` process (a real ``python -m stoker.cli board``) serves stoker's corpus for
the whole module, and one Chromium opens each dashboard afresh. A check reads the page as a
person would (text in order, shadow roots and frames included, images with their decoded size,
audio with its length), polled until it holds or a deadline passes; each dashboard leaves a
screenshot, ``board_<dashboard>.png``, in the test artifacts folder. Collapsed tag groups of the
Polymer dashboards are opened first, as a click on each would.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import board_corpus
import chromium
import pytest
import tb_server

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

ARTIFACTS = Path(os.environ.get("STOKER_TEST_ARTIFACTS", "test-artifacts"))
READY_TIMEOUT = 60.0
WINDOW = (1400, 1800)  # tall enough for most of a dashboard's cards in one screenshot

# Every collapsed tag group of the Polymer dashboards opened, as clicking its header does.
OPEN_GROUPS = """(() => {
  const open = (root) => {
    for (const element of root.querySelectorAll("*")) {
      if (element.tagName === "TF-CATEGORY-PAGINATED-VIEW" && !element.opened) {
        element.opened = true;
      }
      if (element.shadowRoot) open(element.shadowRoot);
    }
  };
  open(document);
})()"""

RUNS = [
    "train", "train/losses_x", "train/losses_y", "eval", "a/b",
    "hp", "hp/lr_0.1", "hp/lr_0.01", "hp/lr_0.001",
]  # fmt: skip
SCALAR_TAGS = [
    "loss", "lr", "lr_double", "band/mid", "band/low", "band/high", "losses", "depth/inner",
    "hparam/accuracy", "hparam/loss",
]  # fmt: skip

# The series each scalar chart draws, as (tag, runs); a chart draws each twice, raw and smoothed.
SCALAR_SERIES = [
    ("band/high", 1), ("band/low", 1), ("band/mid", 1), ("depth/inner", 1), ("diverged", 1),
    ("hparam/accuracy", 3), ("hparam/loss", 3), ("loss", 3), ("losses", 2), ("lr", 1),
    ("lr_double", 1),
]  # fmt: skip
# The custom-scalars layout's charts match 5 (all losses), 1 (band) and 2 (lr) series.
CUSTOM_SERIES = 5 + 1 + 2

# Dashboards whose page never stops changing, so that no two screenshots agree: the projector's
# 3-D view keeps moving.
MOVING = {"projector"}

Snapshot = dict[str, Any]


def _follows(text: list[str], *items: str) -> bool:
    """Whether ``items`` appear one right after another somewhere in ``text``."""
    width = len(items)
    return any(tuple(text[i : i + width]) == items for i in range(len(text) - width + 1))


def _lacking_sequences(text: list[str], sequences: list[tuple[str, ...]]) -> list[str]:
    return [" ".join(seq) for seq in sequences if not _follows(text, *seq)]


def _lacking_runs(text: list[str]) -> list[str]:
    """The corpus's runs that the page's run selector does not list."""
    return [f"run {run}" for run in RUNS if run not in text]


def _scalars(snap: Snapshot) -> list[str]:
    # A card per tag: titled "tag: TAG" when one run holds the tag, by the tag alone (after its
    # group's name, the same) when several do (loss, losses).
    text = snap["text"]
    cards = [
        tag for tag in SCALAR_TAGS if not (_follows(text, "tag:", tag) or _follows(text, tag, tag))
    ]
    return (
        _lacking_runs(text)
        + [f"card {tag}" for tag in cards]
        + _lacking_lines(snap, 2 * sum(n for _, n in SCALAR_SERIES))
    )


def _lacking_lines(snap: Snapshot, count: int) -> list[str]:
    """A complaint unless the page's charts have drawn ``count`` lines (SVG paths with points)."""
    drawn = [length for length in snap["lines"] if length > 0]
    return [] if len(drawn) == count else [f"{count} lines drawn, found {len(drawn)}"]


def _histograms(snap: Snapshot) -> list[str]:
    # a card shows its tag, then its run
    cards = [("raw", "train"), ("weights", "a/b"), ("weights", "train"), ("weights_fd", "train")]
    return _lacking_runs(snap["text"]) + _lacking_sequences(snap["text"], cards)


def _images(snap: Snapshot) -> list[str]:
    text = snap["text"]
    cards = [("batch", "train"), ("boxes", "train"), ("picture", "train"), ("picture", "eval")]
    lacking = _lacking_runs(text) + _lacking_sequences(text, cards)
    # each image decoded at the width it was written with (a batch as one grid, side by side)
    widths = sorted(image["width"] for image in snap["images"] if "individualImage" in image["src"])
    expected = sorted([
        board_corpus.PICTURE.shape[2],
        board_corpus.EVAL_PICTURE.shape[1],
        board_corpus.BOX_IMAGE.shape[2],
        board_corpus.BATCH.shape[1] * board_corpus.BATCH.shape[3],
    ])  # fmt: skip
    if widths != expected:
        lacking.append(f"images decoded at widths {expected}, found {widths}")
    return lacking


def _audio(snap: Snapshot) -> list[str]:
    lacking = _lacking_runs(snap["text"]) + _lacking_sequences(snap["text"], [("tone", "train")])
    seconds = board_corpus.TONE.shape[1] / board_corpus.SAMPLE_RATE
    clips = [clip for clip in snap["audio"] if "individualAudio" in clip["src"]]
    loaded = [clip for clip in clips if clip["readyState"] >= 1]  # HAVE_METADATA or more
    if len(loaded) != 1 or abs(loaded[0]["duration"] - seconds) > 1e-3:
        lacking.append(f"one audio clip of {seconds} s loaded, found {clips}")
    return lacking


def _text(snap: Snapshot) -> list[str]:
    text = snap["text"]
    lacking = _lacking_runs(text)
    lacking += _lacking_sequences(text, [
        ("eval", "tag:", "notes/text_summary"), ("train", "tag:", "notes/text_summary"),
        ("train", "tag:", "plain/text_summary"),
        ("evaluation", "only"), ("bold", "and", "code"), ("a", "b", "1", "2"),
        ("one line",), (board_corpus.TEXTS[2],),  # markup in a text shown as text
    ])  # fmt: skip
    return lacking


def _pr_curves(snap: Snapshot) -> list[str]:
    # a card per tag, each with its curve's run at one of its steps (which step the slider
    # starts at varies from load to load, so it is not checked)
    text = snap["text"]
    lacking = _lacking_runs(text) + _lacking_sequences(text, [("tag:", "pr"), ("tag:", "pr_small")])
    if text.count("train is at") != 2:
        lacking.append(f"'train is at' once per card, found {text.count('train is at')}")
    return lacking + _lacking_lines(snap, 2)


def _custom_scalars(snap: Snapshot) -> list[str]:
    # the layout's categories and charts, and each chart's matching series as "tag (run)"
    return _lacking_runs(snap["text"]) + _lacking_sequences(snap["text"], [
        ("Losses",), ("all losses",), ("Rates",), ("Matches (5)",),
        ("loss (train)",), ("loss (eval)",), ("loss (a/b)",),
        ("losses (train/losses_x)",), ("losses (train/losses_y)",),
        ("band/mid (train)",), ("lr (train)",), ("lr_double (train)",),
    ]) + _lacking_lines(snap, 2 * CUSTOM_SERIES)  # fmt: skip


def _hparams(snap: Snapshot) -> list[str]:
    # The table view: a header of hyperparameters and metrics, then one row per session with
    # its values in that order.
    text = snap["text"]
    header = ("Trial ID", "Show Metrics", "batch", "fused", "lr", "optimizer")
    header += ("hparam/accuracy", "hparam/loss")
    rows = [
        (f"hp/lr_{h['lr']}", f"{h['batch']:#.5g}", str(h["fused"]).lower(), f"{h['lr']:#.5g}",
         h["optimizer"], f"{accuracy:#.5g}", f"{1 - accuracy:#.5g}")
        for h, accuracy in board_corpus.HPARAMS
    ]  # fmt: skip
    return _lacking_sequences(text, [header, *rows, ("Number of matching session groups: 3",)])


def _mesh(snap: Snapshot) -> list[str]:
    text = snap["text"]
    lacking = _lacking_runs(text) + _lacking_sequences(
        text, [("points", "step", "3"), ("shape", "step", "1")]
    )
    if len(snap["canvases"]) < 2:
        lacking.append(f"a canvas per mesh, found {snap['canvases']}")
    return lacking


def _graphs(snap: Snapshot) -> list[str]:
    # the op graph of the corpus's module: its input, the Sequential and its output, as nodes
    return [
        f"graph node {node}"
        for node in ("input", "Sequential", "output")
        if node not in snap["text"]
    ]


def _projector(snap: Snapshot) -> list[str]:
    return _lacking_sequences(snap["text"], [("1 tensor found",), ("6x4",)])


def _timeseries(snap: Snapshot) -> list[str]:
    # The Angular run list, sorted; every tag group of scalars, images and histograms with its
    # card count where it holds more than one.
    text = snap["text"]
    lacking = [f"run {run}" for run in sorted(RUNS) if run not in text]
    groups = [
        "band", "batch", "boxes", "depth", "hparam", "loss", "losses", "lr", "lr_double",
        "picture", "raw", "weights", "weights_fd",
    ]  # fmt: skip
    lacking += [f"group {group}" for group in groups if group not in text]
    counts = [("band", "3 cards"), ("hparam", "2 cards"), ("picture", "2 cards")]
    counts += [("weights", "2 cards"), ("batch", "batch", "train", "Step 5")]
    lacking += _lacking_sequences(text, counts)
    # The open group's scalar cards, each with its data table: run train at its last step (59)
    # with the value written there; and the image card's picture, decoded.
    for suffix, value in (("/high", "60.5"), ("/low", "57.5"), ("/mid", "59")):
        row = _row_after(text, ("band", suffix), "Relative", 4)
        if row[:1] != ["train"] or row[2:] != [value, "59"]:
            lacking.append(f"band{suffix}'s data table: train at step 59 = {value}, found {row}")
    batch = board_corpus.BATCH.shape[1] * board_corpus.BATCH.shape[3]
    if [image["width"] for image in snap["images"] if "imageData" in image["src"]] != [batch]:
        lacking.append(f"the batch card's picture {batch} wide, found {snap['images']}")
    return lacking


def _row_after(text: list[str], heading: tuple[str, ...], marker: str, width: int) -> list[str]:
    """The ``width`` items after the first ``marker`` following ``heading`` in ``text``."""
    for start in range(len(text) - len(heading) + 1):
        if tuple(text[start : start + len(heading)]) == heading:
            rest = text[start + len(heading) :]
            return rest[rest.index(marker) + 1 :][:width] if marker in rest else []
    return []


CHECKS: dict[str, Callable[[Snapshot], list[str]]] = {
    "timeseries": _timeseries,
    "scalars": _scalars,
    "histograms": _histograms,
    "distributions": _histograms,
    "images": _images,
    "audio": _audio,
    "text": _text,
    "hparams": _hparams,
    "pr_curves": _pr_curves,
    "custom_scalars": _custom_scalars,
    "mesh": _mesh,
    "graphs": _graphs,
    "projector": _projector,
}


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Run ``stoker board`` on stoker's corpus as a real process and yield the page's URL.

    ``stoker board`` on stoker's corpus, as a real process; yield the page's URL once it
    prints it; stop it (SIGTERM, then SIGKILL) and reap it on every path.
    """
    logdir = board_corpus.write_stoker_corpus(tmp_path_factory.mktemp("board") / "logs")
    command = [
        sys.executable, "-m", "stoker.cli", "board", str(logdir),
        "--port", str(tb_server.free_port()),
    ]  # fmt: skip
    with tempfile.TemporaryFile() as stderr:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr)
        try:
            yield _page_url(process, stderr)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
            assert process.stdout is not None
            process.stdout.close()


def _page_url(process: subprocess.Popen[bytes], stderr: Any) -> str:
    """Read ``stoker board``'s stdout until its line ``TensorBoard at URL``; return the URL."""
    assert process.stdout is not None
    deadline = time.monotonic() + READY_TIMEOUT
    buffered = b""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 0.25)
        if ready:
            chunk = os.read(process.stdout.fileno(), 4096)
            buffered += chunk
            for line in buffered.decode(errors="replace").splitlines():
                if line.startswith("TensorBoard at "):
                    return line.split()[2].rstrip("/")
            if chunk:
                continue
        if process.poll() is not None:
            break
    stderr.seek(0)
    tail = stderr.read().decode(errors="replace")[-2000:]
    raise RuntimeError(
        f"stoker board printed no 'TensorBoard at' line (status {process.poll()}): "
        f"{buffered!r} {tail}"
    )


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[chromium.Page]:
    """One headless Chromium for every dashboard."""
    width, height = WINDOW
    with chromium.Page(
        tmp_path_factory.mktemp("chromium") / "profile", width=width, height=height
    ) as tab:
        yield tab


@pytest.mark.parametrize("dashboard", list(CHECKS))
def test_board_dashboard_shows_the_corpus(dashboard: str, board: str, page: chromium.Page) -> None:
    """The dashboard, opened afresh on ``stoker board``, shows the corpus's runs, tags and data.

    The dashboard, opened afresh on ``stoker board``, shows the corpus's runs, its tags and
    what each holds (see each check); a screenshot is kept.
    """
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / f"board_{dashboard}.png"
    screenshot.unlink(missing_ok=True)
    check = CHECKS[dashboard]
    page.load(f"{board}/#{dashboard}")
    snap, _ = page.until(f"({OPEN_GROUPS}, {chromium.SNAPSHOT})", lambda snap: not check(snap))
    moving = dashboard in MOVING
    settled = page.screenshot(screenshot, settle=1.0 if moving else chromium.SETTLE_TIMEOUT)
    assert check(snap) == [], f"{dashboard}: the page shows {snap['text']}"
    assert screenshot.read_bytes().startswith(b"\x89PNG")
    if not moving:
        assert settled, f"{dashboard}: the page kept changing; {screenshot} is its last look"
