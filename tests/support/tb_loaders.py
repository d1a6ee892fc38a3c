"""TensorBoard's own loaders, set up for tests: keep every point, read one run."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def accumulate(path: Path | str) -> Any:
    """Load one run (a directory or event file) with TensorBoard's EventAccumulator.

    Every kind keeps all of its points (size guidance 0), so counts can be compared exactly.
    """
    from tensorboard.backend.event_processing import event_accumulator as ea

    guidance = dict.fromkeys(ea.DEFAULT_SIZE_GUIDANCE, 0)
    accumulator = ea.EventAccumulator(str(path), size_guidance=guidance)
    accumulator.Reload()
    return accumulator


def tb_events(path: Path | str) -> list[Any]:
    """Every event of one file, read by TensorBoard's own loader."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    return list(EventFileLoader(str(path)).Load())


def tb_scalars(logdir: Path | str, tag: str) -> list[tuple[int, float]]:
    """(step, value) of a scalar tag in a run, loaded by TensorBoard's EventAccumulator."""
    return [(event.step, event.value) for event in accumulate(logdir).Scalars(tag)]
