"""What the demo shows: a progress line, the TensorBoard summaries of a run, a closing table."""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import signal
import subprocess
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
    "serve_tensorboard",
]

_PR_SET_PDEATHSIG = 1  # prctl option, from <linux/prctl.h>
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
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
        f"view them: tensorboard --logdir {result.logdir} --host 127.0.0.1\n"
    )
    out.flush()


class _Stopped(Exception):
    """SIGTERM or SIGHUP arrived while TensorBoard was serving."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stopped(signum: int, frame: object) -> None:
    raise _Stopped(signum)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask Linux to send SIGTERM to this process when its parent dies (even by SIGKILL)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """End TensorBoard and everything it started (its data server) through their group."""
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # a data server outliving its parent


def serve_tensorboard(logdir: str, port: int) -> int:
    """Serve ``logdir`` with TensorBoard on 127.0.0.1 until interrupted; return an exit code.

    TensorBoard runs in a process group of its own, which is ended on every way out: Ctrl-C
    (exit status 0), SIGTERM or SIGHUP (128 + the signal's number, as a shell reports it), an
    exception, or TensorBoard exiting by itself. On Linux it is also told to end if this
    process is killed outright.
    """
    if importlib.util.find_spec("tensorboard") is None:
        sys.stderr.write(
            "stoker demo: --tensorboard needs the tensorboard package; "
            "install it with `pip install 'stoker[tensorboard]'`\n"
        )
        return 2
    command = [sys.executable, "-m", "tensorboard.main", "--logdir", logdir]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    sys.stdout.write(f"TensorBoard at http://127.0.0.1:{port}/ (Ctrl-C stops it)\n")
    sys.stdout.flush()
    previous = {sig: signal.signal(sig, _raise_stopped) for sig in _STOP_SIGNALS}
    process: subprocess.Popen[bytes] | None = None
    try:
        process = subprocess.Popen(
            command,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,  # noqa: PLW1509 - prctl only, before exec
        )
        return process.wait()
    except KeyboardInterrupt:
        return 0
    except _Stopped as stopped:
        return 128 + stopped.signum
    finally:
        for sig in _STOP_SIGNALS:  # a second signal must not cut the clean-up short
            signal.signal(sig, signal.SIG_IGN)
        if process is not None:
            _stop_group(process)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
