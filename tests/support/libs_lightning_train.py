"""A tiny Lightning training run that records the sample ids its training steps see.

In-process runs call :func:`fit`, or :func:`fit_interrupted` for a run stopped in the middle of
an epoch and resumed from Lightning's checkpoint (``Trainer.fit(ckpt_path=...)``). Run as
``python libs_lightning_train.py OUT_DIR``, it trains with ``strategy="ddp", devices=2`` on the
CPU over gloo, once per loader run: Lightning starts the second rank by running this script
again (as it does for any script), and each rank writes ``OUT_DIR/rank{R}.json``:
``{"door-setting": [ids its training steps saw]}`` (``null`` for a door missing from this tree).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import warnings
from typing import Any

import lightning.pytorch as pl
import numpy as np
import torch
from libs_loaders import SETTINGS, TORCH_SETTINGS, make_loader

N = 24
"""Samples in the dataset; sample i is (features filled with i, i)."""


class Ids(torch.utils.data.Dataset[Any]):
    """Sample i: (a float32 NumPy vector filled with i, the int i)."""

    def __len__(self) -> int:
        return N

    def __getitem__(self, index: int) -> tuple[np.ndarray[Any, Any], int]:
        return np.full(3, index, dtype=np.float32), index


class Recorder(pl.LightningModule):
    """A linear model; ``seen`` collects the ids of every batch its training steps get."""

    def __init__(self, door: str, setting: str) -> None:
        super().__init__()
        self.door = door
        self.setting = setting
        self.layer = torch.nn.Linear(3, 1)
        self.seen: list[int] = []

    def train_dataloader(self) -> Any:
        return make_loader(
            self.door,
            self.setting,
            Ids(),
            batch_size=4,
            shuffle=True,
            generator=torch.Generator().manual_seed(11),
        )

    def training_step(self, batch: Any, batch_index: int) -> Any:
        features, ids = (torch.as_tensor(np.asarray(part)) for part in batch)
        self.seen.extend(int(i) for i in ids)
        return self.layer(features).pow(2).mean()

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.01)


class Interrupted(Exception):
    """Ends a run as a crash would (raised by :class:`SaveAndStop`)."""


class SaveAndStop(pl.Callback):
    """After ``steps`` training steps, save Lightning's checkpoint at ``path``, then crash.

    The checkpoint is the one ``ModelCheckpoint(every_n_train_steps=...)`` would write at that
    step; its fit loop state holds the loader's ``state_dict()`` (``"combined_loader"``).
    """

    def __init__(self, path: str, steps: int) -> None:
        self.path = path
        self.steps = steps

    def on_train_batch_end(self, trainer: pl.Trainer, *args: Any) -> None:
        if trainer.global_step == self.steps:
            trainer.save_checkpoint(self.path)
            raise Interrupted(f"stopped after {self.steps} steps")


def fit(
    door: str,
    setting: str,
    *,
    max_epochs: int = 1,
    ckpt_path: str | None = None,
    callbacks: tuple[pl.Callback, ...] = (),
    **trainer_args: Any,
) -> tuple[int, list[int]]:
    """Train ``max_epochs`` with a loader of ``door``; return the rank and the ids seen.

    Train ``max_epochs`` with a loader of ``door`` (from ``ckpt_path`` when given); return
    (global rank, the ids seen, in order).
    """
    model = Recorder(door, setting)
    trainer = pl.Trainer(
        accelerator="cpu",
        max_epochs=max_epochs,
        enable_progress_bar=False,
        enable_model_summary=False,
        logger=False,
        enable_checkpointing=False,
        callbacks=list(callbacks),
        **trainer_args,
    )
    with warnings.catch_warnings():
        # Lightning's advice (more workers, a sampler for an iterable, ...) is no failure here
        warnings.filterwarnings("ignore", module="lightning")
        with contextlib.suppress(Interrupted):  # SaveAndStop's crash, after its checkpoint
            trainer.fit(model, ckpt_path=ckpt_path)
    return trainer.global_rank, model.seen


def fit_interrupted(
    door: str, setting: str, path: str, steps: int, max_epochs: int
) -> tuple[list[int], list[int]]:
    """Train, crash with a checkpoint, resume; return the ids seen before and after.

    Train ``max_epochs``, crash after ``steps`` steps with a checkpoint at ``path``, and
    resume from it in a new trainer and model; return the ids seen before and after.
    """
    _, before = fit(
        door, setting, max_epochs=max_epochs, callbacks=(SaveAndStop(path, steps),), devices=1
    )
    _, after = fit(door, setting, max_epochs=max_epochs, ckpt_path=path, devices=1)
    return before, after


def main(out_dir: str) -> None:
    """Every DDP run of both ranks (see the module docstring)."""
    seen: dict[str, Any] = {}
    runs = [("torch", s) for s in TORCH_SETTINGS]
    runs += [("stoker.torch.data", s) for s in SETTINGS]
    for door, setting in runs:
        try:
            _, seen[f"{door}-{setting}"] = fit(door, setting, strategy="ddp", devices=2)
        except ModuleNotFoundError:
            seen[f"{door}-{setting}"] = None
    rank = int(os.environ.get("LOCAL_RANK", "0"))  # Lightning sets it in both ranks
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w", encoding="utf-8") as handle:
        json.dump(seen, handle)


if __name__ == "__main__":
    main(sys.argv[1])
