"""PyTorch Lightning training with stoker's loaders: every sample exactly once, as with torch's.

``training_step`` records the ids it sees. On one CPU device, and under ``strategy="ddp",
devices=2`` over gloo, where Lightning gives a torch DataLoader (and so the torch door's) a
DistributedSampler: each rank then sees its own half, in the order torch's loader gives it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from data_workers_helpers import SUPPORT
from libs_loaders import (
    RUNS,
    SETTINGS,
    TORCH_SETTINGS,
    loader_class,
    torch_setting,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)

TRAIN = str(Path(SUPPORT) / "libs_lightning_train.py")


@pytest.fixture(scope="module")
def lightning_fit() -> Any:
    """The in-process training run (imports Lightning once for the module)."""
    from libs_lightning_train import fit

    return fit


@pytest.mark.parametrize(("door", "setting"), RUNS)
def test_training_steps_see_every_sample_once(door: str, setting: str, lightning_fit: Any) -> None:
    """One epoch on the CPU: the ids training_step sees are every sample once.

    The torch door's order is torch's loader's order for the same seed and workers.
    """
    from libs_lightning_train import N

    loader_class(door)
    _, seen = lightning_fit(door, setting)
    assert sorted(seen) == list(range(N))
    if door == "stoker.torch.data":
        assert seen == lightning_fit("torch", torch_setting(setting))[1]


@pytest.mark.parametrize("steps", [3, 8], ids=["epoch0", "epoch1"])
@pytest.mark.parametrize(("door", "setting"), RUNS)
def test_a_mid_epoch_checkpoint_resumes_exactly(
    door: str, setting: str, steps: int, tmp_path: Path, lightning_fit: Any
) -> None:
    """A run resumed from Lightning's checkpoint sees the rest of the uninterrupted run's ids.

    Two epochs of 6 steps, crashed after ``steps`` with Lightning's checkpoint (which holds
    the loader's state), then ``Trainer.fit(ckpt_path=...)``: the resumed run's steps see the
    rest of the uninterrupted run's ids, in its order. Lightning calls the sampler's
    ``set_epoch`` after creating the iterator, once workers have begun the epoch.
    """
    import torch
    from libs_lightning_train import fit_interrupted

    loader_class(door)
    _, expected = lightning_fit(door, setting, max_epochs=2)
    path = str(tmp_path / "mid.ckpt")
    before, after = fit_interrupted(door, setting, path, steps, max_epochs=2)
    fit_state = torch.load(path, weights_only=False)["loops"]["fit_loop"]["state_dict"]
    saved = fit_state["combined_loader"]  # the loader's state_dict(), as Lightning keeps it
    assert [state["batches"] for state in saved] == [steps % 6]
    assert before == expected[: steps * 4]
    assert before + after == expected


@pytest.fixture(scope="module")
def ddp_ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """What each rank's training steps saw in every DDP run (one launch for the module)."""
    out = tmp_path_factory.mktemp("ddp")
    done = subprocess.run(
        [sys.executable, TRAIN, str(out)], check=False, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return [json.loads((out / f"rank{rank}.json").read_text()) for rank in (0, 1)]


DDP_RUNS = [pytest.param("torch", setting, id=f"torch-{setting}") for setting in TORCH_SETTINGS]
DDP_RUNS += [
    pytest.param("stoker.torch.data", setting, id=f"stoker.torch.data-{setting}")
    for setting in SETTINGS
]


@pytest.mark.parametrize(("door", "setting"), DDP_RUNS)
def test_ddp_ranks_see_their_own_halves(
    door: str, setting: str, ddp_ranks: list[dict[str, Any]]
) -> None:
    """Under DDP with two ranks: each sees half the samples, together every sample once.

    torch's own loader runs too (the harness's check); the torch door's ranks see what torch's
    loader gives each rank.
    """
    from libs_lightning_train import N

    loader_class(door)
    seen = [rank[f"{door}-{setting}"] for rank in ddp_ranks]
    assert [len(ids) for ids in seen] == [N // 2, N // 2], seen
    assert sorted(seen[0] + seen[1]) == list(range(N))
    assert seen == [rank[f"torch-{torch_setting(setting)}"] for rank in ddp_ranks]
