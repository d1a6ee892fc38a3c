"""webdataset through stoker's loaders, side by side with torch's: every sample exactly once.

Shards are tar files written here. ``split_by_worker`` shards by torch's ``get_worker_info()``
(which stoker's workers answer); ``split_by_node`` by ``RANK``/``WORLD_SIZE``, two ranks being two
processes with their own environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from data_workers_helpers import SUPPORT
from libs_loaders import RUNS, loader_class, torch_setting
from libs_webdataset_helpers import all_keys, read_keys, write_shards

pytestmark = [
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
    # webdataset 1.0.2 never closes a shard's file (tariterators.tar_file_expander), with any loader
    pytest.mark.filterwarnings(
        r"ignore:Exception ignored in. <_io.FileIO name='.*shard-\d+\.tar'"
        ":pytest.PytestUnraisableExceptionWarning"
    ),
]

HELPER = str(Path(SUPPORT) / "libs_webdataset_helpers.py")


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The tar shards, written once for the module."""
    return write_shards(str(tmp_path_factory.mktemp("shards")))


@pytest.fixture(scope="module")
def torch_keys(shards: list[str]) -> dict[str, list[str]]:
    """What torch's own loader reads, by setting (one rank)."""
    return {setting: read_keys("torch", setting, shards) for setting in ("0", "2-process")}


@pytest.mark.parametrize(("door", "setting"), RUNS)
def test_split_by_worker_reads_every_sample_once_as_torch_does(
    door: str, setting: str, shards: list[str], torch_keys: dict[str, list[str]]
) -> None:
    """Each worker reads its own shards: every key once, in torch's order for the same workers."""
    loader_class(door)
    keys = read_keys(door, setting, shards)
    assert sorted(keys) == all_keys()
    assert keys == torch_keys[torch_setting(setting)]


@pytest.fixture(scope="module")
def ranks(shards: list[str]) -> list[dict[str, Any]]:
    """What each of two ranks (processes with RANK=0 and 1, WORLD_SIZE=2) reads, by run."""
    running = []
    for rank in (0, 1):
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": "2"}
        running.append(
            subprocess.Popen(
                [sys.executable, HELPER, *shards],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    results = []
    for process in running:
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, err
        results.append(json.loads(out))
    return results


@pytest.mark.parametrize(("door", "setting"), RUNS)
def test_split_by_node_gives_each_rank_its_half_as_torch_does(
    door: str, setting: str, ranks: list[dict[str, Any]]
) -> None:
    """Two ranks, each with its workers, read disjoint halves that together hold every key once.

    Each rank reads what torch's loader with the same number of workers reads on that rank.
    """
    loader_class(door)
    seen = [rank[f"{door}-{setting}"] for rank in ranks]
    assert all(len(keys) == len(all_keys()) // 2 for keys in seen), seen
    assert sorted(seen[0] + seen[1]) == all_keys()
    assert seen == [rank[f"torch-{torch_setting(setting)}"] for rank in ranks]
