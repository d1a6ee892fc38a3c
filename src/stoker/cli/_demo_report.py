"""What the demo shows: a progress line, the TensorBoard summaries of a run, a closing table."""

from __future__ import annotations

import shlex
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from stoker.cli._shapes import CLASSES, SIZE

if TYPE_CHECKING:
    from stoker.tensorboard import SummaryWriter

__all__ = [
    "DemoResult",
    "Progress",
    "log_results",
    "log_samples",
    "print_summary",
]

_EMBEDDED = 512  # validation samples shown in the projector
_WIDTHS = (5, 10, 9, 8, 7)


@dataclass
class DemoResult:
    """What a demo run reached: final metrics and where the logs are."""

    logdir: str
    epochs: int
    train_loss: float
    train_accuracy: float
    val_loss: float
    val_accuracy: float
    samples_per_second: float
    seconds: float


class Progress:
    """A one-line progress bar on stderr with samples/s and the last loss.

    A terminal gets the line redrawn in place; anything else gets no output, so logs stay clean.
    """

    def __init__(self, total: int, *, enabled: bool = True, width: int = 28) -> None:
        self.total = max(total, 1)
        self.enabled = enabled and sys.stderr.isatty()
        self.width = width
        self.done = 0
        self._last_draw = 0.0

    def update(self, epoch: int, loss: float, samples: int, elapsed: float) -> None:
        """Count one step and redraw at most ten times a second."""
        self.done += 1
        now = time.monotonic()
        if not self.enabled or (now - self._last_draw < 0.1 and self.done < self.total):
            return
        self._last_draw = now
        filled = int(self.width * self.done / self.total)
        bar = "█" * filled + "·" * (self.width - filled)
        rate = samples / elapsed if elapsed > 0 else 0.0
        sys.stderr.write(
            f"\repoch {epoch + 1} |{bar}| {self.done}/{self.total}  "
            f"{rate:8.0f} samples/s  loss {loss:.4f}"
        )
        sys.stderr.flush()

    def close(self) -> None:
        """End the progress line."""
        if self.enabled:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _nchw(images: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Return 28x28 images as (N, 1, 28, 28) for add_images."""
    return images.reshape(-1, 1, SIZE, SIZE)


def log_samples(
    writer: SummaryWriter, images: npt.NDArray[np.float32], labels: npt.NDArray[np.int64]
) -> None:
    """Log a grid of training samples and the class names."""
    writer.add_images("samples", _nchw(images), 0)
    names = ", ".join(f"{i}: {name}" for i, name in enumerate(CLASSES))
    writer.add_text("dataset", f"{len(CLASSES)} classes of drawn shapes ({names}).", 0)
    del labels


@dataclass
class Evaluation:
    """The validation set's images and labels with the model's probabilities and hidden layer."""

    images: npt.NDArray[np.float32]
    labels: npt.NDArray[np.int64]
    probs: npt.NDArray[np.float32]
    hidden: npt.NDArray[np.float32]


def log_results(
    writer: SummaryWriter,
    evaluation: Evaluation,
    *,
    epochs: int,
    rows: list[tuple[int, float, float, float, float]],
    hparams: dict[str, Any],
) -> None:
    """Log mistakes, a PR curve per class, a text report, hparams and the hidden embedding."""
    images, labels = evaluation.images, evaluation.labels
    probs, hidden = evaluation.probs, evaluation.hidden
    predicted = probs.argmax(axis=1)
    wrong = np.flatnonzero(predicted != labels)
    if len(wrong):
        writer.add_images("mistakes", _nchw(images[wrong[:64]]), epochs)
    for index, name in enumerate(CLASSES):
        writer.add_pr_curve(f"pr/{name}", labels == index, probs[:, index], epochs)
    table = ["| epoch | train loss | train acc | val loss | val acc |", "|---|---|---|---|---|"]
    table += [
        f"| {e + 1} | {tl:.4f} | {ta:.3f} | {vl:.4f} | {va:.3f} |" for e, tl, ta, vl, va in rows
    ]
    writer.add_text("report", "\n".join(table), epochs)
    last = rows[-1]
    writer.add_hparams(
        hparams,
        {"hparam/val_accuracy": last[4], "hparam/val_loss": last[3]},
        run_name="hparams",
    )
    shown = slice(0, min(_EMBEDDED, len(labels)))
    writer.add_embedding(
        hidden[shown],
        metadata=[CLASSES[int(label)] for label in labels[shown]],
        label_img=_nchw(images[shown]),
        global_step=epochs,
        tag="hidden",
    )


def print_summary(rows: list[tuple[int, float, float, float, float]], result: DemoResult) -> None:
    """Print the per-epoch table, the final figures and how to open TensorBoard."""
    out = sys.stdout
    out.write(
        f"{'epoch':>5}  {'train loss':>10}  {'train acc':>9}  {'val loss':>8}  {'val acc':>7}\n"
    )
    for epoch, train_loss, train_acc, val_loss, val_acc in rows:
        out.write(
            f"{epoch + 1:>5}  {train_loss:>10.4f}  {train_acc:>9.3f}  {val_loss:>8.4f}  "
            f"{val_acc:>7.3f}\n"
        )
    out.write(
        f"validation accuracy {result.val_accuracy:.3f} after {result.epochs} epochs, "
        f"{result.samples_per_second:,.0f} samples/s, {result.seconds:.1f} s in all\n"
        f"logs: {result.logdir}\n"
        f"view them: stoker board {shlex.quote(result.logdir)}\n"
    )
    out.flush()
