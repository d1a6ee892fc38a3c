"""litdata's ``StreamingDataset`` through ``stoker.torch.data``, side by side with torch's loader.

``StreamingDataset.__iter__`` sets up a pass and returns the dataset itself, so a loader that
called ``iter()`` on it again would restart it, and its ``state_dict()`` needs arguments only
litdata's own loader passes. A small dataset is written with ``litdata.optimize`` (in a process
of its own) into a temporary folder and read back without workers and with two: every sample
exactly once, the epoch ends, and the order is torch's. No network: litdata's version check
stays off and its cache lives in the temporary folder.
"""

from __future__ import annotations

import importlib
import itertools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from data_workers_helpers import SUPPORT
from libs_loaders import SETTINGS, make_loader, torch_setting

pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)

N = 30
BATCH = 4
OPTIMIZE = str(Path(SUPPORT) / "libs_litdata_helpers.py")


@pytest.fixture(scope="module")
def optimized(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, str]]:
    """litdata, imported offline, and a folder holding ``sample(0..N-1)`` in chunks of 7."""
    root = tmp_path_factory.mktemp("litdata")
    out = str(root / "optimized")
    done = subprocess.run(
        [sys.executable, OPTIMIZE, out, str(N)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LITDATA_DISABLE_VERSION_CHECK", "1")
        patch.setenv("LITDATA_CACHE_DIR", str(root / "cache"))
        yield importlib.import_module("litdata"), out


def _epochs(door: str, setting: str, optimized: tuple[Any, str], epochs: int) -> list[list[Any]]:
    """The batches of ``epochs`` epochs, each ``(ids, x)`` as lists, at most twice an epoch's.

    The batches of ``epochs`` epochs, each ``(ids, x)`` as lists; at most twice the batches
    an epoch has, so that a loader restarting the dataset cannot run forever.
    """
    litdata, folder = optimized
    loader = make_loader(door, setting, litdata.StreamingDataset(folder), batch_size=BATCH)
    cap = 2 * -(-N // BATCH)
    out = []
    for _ in range(epochs):
        batches = itertools.islice(loader, cap)
        out.append([(b["index"].tolist(), np.asarray(b["x"]).tolist()) for b in batches])
    return out


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_streaming_dataset_epochs_end_with_every_sample_once_in_torchs_order(
    setting: str, optimized: tuple[Any, str]
) -> None:
    """Two epochs through the torch door give every sample once, in torch's DataLoader's order.

    Two epochs through the torch door: each ends after every sample once (the features
    match the ids), in the order torch's DataLoader gives with as many workers.
    """
    ours = _epochs("stoker.torch.data", setting, optimized, epochs=2)
    for epoch in ours:
        ids = [i for batch_ids, _ in epoch for i in batch_ids]
        assert sorted(ids) == list(range(N))
        assert all(x == [[i] * 3 for i in batch_ids] for batch_ids, x in epoch)
    assert ours == _epochs("torch", torch_setting(setting), optimized, epochs=2)


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_a_mid_epoch_state_resumes_the_streaming_dataset_by_fast_forward(
    setting: str, optimized: tuple[Any, str]
) -> None:
    """A StreamingDataset's state resumes by fast-forward; the loader never calls its state_dict().

    StreamingDataset's ``state_dict()`` takes litdata's loader's arguments, so the loader
    never calls it (no warning with each batch): its state after 3 batches resumes by
    fast-forward in a new loader, which gives the rest of the epoch.
    """
    litdata, folder = optimized
    whole = _epochs("stoker.torch.data", setting, optimized, epochs=1)[0]
    loader = make_loader(
        "stoker.torch.data", setting, litdata.StreamingDataset(folder), batch_size=BATCH
    )
    iterator = iter(loader)
    for _ in range(3):
        next(iterator)
    state = loader.state_dict()
    del iterator
    assert (state["mode"], state["batches"]) == ("fast_forward", 3)
    resumed = make_loader(
        "stoker.torch.data", setting, litdata.StreamingDataset(folder), batch_size=BATCH
    )
    resumed.load_state_dict(state)
    rest = itertools.islice(resumed, len(whole))  # capped, as in _epochs
    assert [(b["index"].tolist(), np.asarray(b["x"]).tolist()) for b in rest] == whole[3:]
