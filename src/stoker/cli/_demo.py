"""``stoker demo``: train a small NumPy model on drawn shapes through both ends of stoker.

The data side: a dataset drawn from the seed (see :mod:`stoker.cli._shapes`), a ``random_split``
into training and validation, and ``DataLoader`` with worker processes, shuffling and a random
shift and brightness change per sample. The observation side: scalars, weight histograms, image
grids, a PR curve per class, a text report, hparams with the final metrics and an embedding of the
hidden layer, all written with :class:`stoker.tensorboard.SummaryWriter`.

Every random choice is drawn from ``--seed``: the per-sample augmentation from
``(seed, epoch, index)``, so the numbers do not depend on the number of workers.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import numpy.typing as npt

from stoker.cli import _board, _demo_report
from stoker.cli._demo_report import DemoResult
from stoker.cli._mlp import MLP, softmax_cross_entropy
from stoker.cli._shapes import CLASSES, SIZE, draw_shapes
from stoker.data import DataLoader, Dataset, Subset, random_split, sample_rng
from stoker.tensorboard import SummaryWriter

__all__ = ["DemoResult", "ShapesDataset", "main", "run_demo"]

HIDDEN = 128


class ShapesDataset(Dataset[tuple[npt.NDArray[np.float32], int]]):
    """Drawn shape images; with ``augment``, each sample is shifted and brightened at random.

    The augmentation comes from :func:`stoker.data.sample_rng`, keyed by the loader's seed, its
    epoch and the sample's index, so it is the same whichever worker (or how many) loads the
    sample, and it changes from epoch to epoch with no ``set_epoch`` call.
    """

    def __init__(
        self, images: npt.NDArray[np.float32], labels: npt.NDArray[np.int64], *, augment: bool
    ) -> None:
        self.images = images
        self.labels = labels
        self.augment = augment

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[npt.NDArray[np.float32], int]:
        image = self.images[index]
        if self.augment:
            rng = sample_rng(index)
            dy, dx = rng.integers(-2, 3, size=2)
            image = np.roll(image, (int(dy), int(dx)), axis=(0, 1))
            image = np.clip(image * rng.uniform(0.8, 1.2), 0.0, 1.0)
        return image.reshape(-1).astype(np.float32), int(self.labels[index])


def _evaluate(
    model: MLP, loader: DataLoader
) -> tuple[float, float, npt.NDArray[np.float32], npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """Return loss, accuracy, probabilities, labels and hidden activations over ``loader``."""
    probs, labels, hidden = [], [], []
    for x, y in loader:
        h, logits = model.forward(np.asarray(x, dtype=np.float32))
        _, p = softmax_cross_entropy(logits, np.asarray(y))
        probs.append(p)
        labels.append(np.asarray(y))
        hidden.append(h)
    all_probs = np.concatenate(probs)
    all_labels = np.concatenate(labels).astype(np.int64)
    picked = all_probs[np.arange(len(all_labels)), all_labels]
    loss = float(-np.log(np.maximum(picked, 1e-12)).mean())
    accuracy = float((all_probs.argmax(axis=1) == all_labels).mean())
    return loss, accuracy, all_probs, all_labels, np.concatenate(hidden)


def run_demo(
    *,
    epochs: int = 8,
    batch_size: int = 64,
    workers: int = 2,
    logdir: str | None = None,
    seed: int = 0,
    samples: int = 4000,
    lr: float = 0.05,
    progress: bool = True,
) -> DemoResult:
    """Train the demo model and log it to ``logdir``; return the final metrics.

    Args:
        epochs: Passes over the training split.
        batch_size: Samples per training batch.
        workers: Loader worker processes (0 loads in this process).
        logdir: Run directory; default ``runs/demo/<date-time>`` so runs sit side by side.
        seed: Seed of the data, the split, the shuffling, the augmentation and the weights.
        samples: Images drawn; 80% train, 20% validate.
        lr: Peak learning rate of the cosine schedule.
        progress: Draw a progress bar when stderr is a terminal.

    Raises:
        ValueError: If a count is not positive or ``workers`` is negative.
    """
    for name, value in (("epochs", epochs), ("batch_size", batch_size), ("samples", samples)):
        if value <= 0:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if workers < 0:
        raise ValueError(f"workers must be a non-negative int, got {workers!r}")
    if logdir is None:
        logdir = os.path.join("runs", "demo", time.strftime("%Y%m%d-%H%M%S"))
    started = time.perf_counter()
    images, labels = draw_shapes(samples, seed=seed)
    plain = ShapesDataset(images, labels, augment=False)
    train_split, val = random_split(plain, [0.8, 0.2], generator=seed)
    train_set = ShapesDataset(images, labels, augment=True)
    train = Subset(train_set, list(train_split.indices))
    train_loader = DataLoader(
        train, batch_size=batch_size, shuffle=True, num_workers=workers, generator=seed
    )
    val_loader = DataLoader(val, batch_size=256, num_workers=0)
    model = MLP(SIZE * SIZE, HIDDEN, len(CLASSES), seed=seed)
    hparams = {"lr": lr, "batch_size": batch_size, "hidden": HIDDEN, "workers": workers}
    bar = _demo_report.Progress(total=epochs * len(train_loader), enabled=progress)
    rows: list[tuple[int, float, float, float, float]] = []
    step = 0
    with SummaryWriter(logdir) as writer:
        _demo_report.log_samples(writer, images[:64], labels[:64])
        seen_total, load_time = 0, 0.0
        for epoch in range(epochs):
            rate = lr * 0.5 * (1.0 + np.cos(np.pi * epoch / epochs))
            losses, correct, seen = [], 0, 0
            tick = time.perf_counter()
            for x, y in train_loader:
                batch_x, batch_y = np.asarray(x, dtype=np.float32), np.asarray(y, dtype=np.int64)
                loss, probs = model.train_step(batch_x, batch_y, float(rate))
                losses.append(loss)
                correct += int((probs.argmax(axis=1) == batch_y).sum())
                seen += len(batch_y)
                step += 1
                writer.add_scalar("train/loss", loss, step)
                bar.update(epoch, loss, seen_total + seen, time.perf_counter() - started)
            elapsed = time.perf_counter() - tick
            load_time += elapsed
            seen_total += seen
            val_loss, val_acc, val_probs, val_labels, _ = _evaluate(model, val_loader)
            train_loss, train_acc = float(np.mean(losses)), correct / seen
            writer.add_scalar("train/accuracy", train_acc, epoch)
            writer.add_scalar("val/loss", val_loss, epoch)
            writer.add_scalar("val/accuracy", val_acc, epoch)
            writer.add_scalar("lr", rate, epoch)
            writer.add_scalar("samples_per_second", seen / elapsed, epoch)
            for name, param in model.params.items():
                writer.add_histogram(f"weights/{name}", param, epoch)
            rows.append((epoch, train_loss, train_acc, val_loss, val_acc))
        bar.close()
        val_loss, val_acc, val_probs, val_labels, hidden = _evaluate(model, val_loader)
        val_images = images[np.asarray(val.indices)]
        _demo_report.log_results(
            writer,
            _demo_report.Evaluation(val_images, val_labels, val_probs, hidden),
            epochs=epochs,
            rows=rows,
            hparams=hparams,
        )
    result = DemoResult(
        logdir=logdir,
        epochs=epochs,
        train_loss=rows[-1][1],
        train_accuracy=rows[-1][2],
        val_loss=val_loss,
        val_accuracy=val_acc,
        samples_per_second=seen_total / load_time,
        seconds=time.perf_counter() - started,
    )
    _demo_report.print_summary(rows, result)
    return result


def main(args: argparse.Namespace) -> int:
    """Run the demo from parsed arguments.

    With ``--tensorboard``, serve its logs afterwards as ``stoker board`` does (TensorBoard on
    stoker's data server, on 127.0.0.1).
    """
    result = run_demo(
        epochs=args.epochs,
        batch_size=args.batch_size,
        workers=args.workers,
        logdir=args.logdir,
        seed=args.seed,
        samples=args.samples,
        lr=args.lr,
        progress=not args.no_progress,
    )
    if args.tensorboard:
        return _board.serve(result.logdir, port=args.port, command="stoker demo")
    return 0
