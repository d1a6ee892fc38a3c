"""Sharding across ranks: DistributedSampler and IterableDataset by (rank, worker), real processes.

Each rank is a separate Python process: with torch.distributed (gloo backend, TCP rendezvous on
127.0.0.1) and, without torch, with RANK/WORLD_SIZE environment variables as launchers set them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from data_workers_helpers import SUPPORT
from tb_subprocess import reaped

HELPER = str(Path(SUPPORT) / "data_gloo_helpers.py")
N = 29
STREAM = 37
EPOCHS = 3


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _run_ranks(mode: str, world: int, tmp_path: Path) -> list[dict[str, Any]]:
    """Start ``world`` rank processes, wait for all (bounded), return their JSON results."""
    port = _free_port()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [SUPPORT, env.get("PYTHONPATH")]))
    errors = []
    with reaped() as processes:  # a timeout leaves no rank running and no pipe open
        for rank in range(world):
            rank_env = dict(env, RANK=str(rank), WORLD_SIZE=str(world))
            if mode == "torch":  # the process group, not the environment, must provide the rank
                rank_env.pop("RANK")
                rank_env.pop("WORLD_SIZE")
            out = tmp_path / f"rank{rank}.json"
            command = [sys.executable, HELPER, mode, str(rank), str(world), str(port), str(out)]
            processes.append(
                subprocess.Popen(
                    command, env=rank_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
                )
            )
        for process in processes:
            try:
                _, stderr = process.communicate(timeout=90)
            except subprocess.TimeoutExpired:
                pytest.fail("a rank process did not finish within 90 s")
            if process.returncode != 0:
                errors.append(stderr)
    assert not errors, "\n".join(errors)
    return [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(world)]


def _check_epochs(results: list[dict[str, Any]], world: int) -> None:
    """Every epoch: ranks interleave into one permutation of the dataset plus its padding."""
    per_rank = -(-N // world)
    padding = per_rank * world - N
    orders = []
    for epoch in range(EPOCHS):
        shares = [result["epochs"][epoch] for result in results]
        assert all(len(share) == per_rank for share in shares)
        padded = [shares[i % world][i // world] for i in range(per_rank * world)]
        assert sorted(padded[:N]) == list(range(N)), "each index exactly once"
        assert padded[N:] == padded[:padding], "padding repeats the order's start"
        orders.append(padded[:N])
    assert len({tuple(order) for order in orders}) == EPOCHS, "set_epoch changes the order"


def _check_stream(results: list[dict[str, Any]]) -> None:
    samples = [x for result in results for x in result["stream"]]
    assert sorted(samples) == list(range(STREAM)), "each stream sample exactly once"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_gloo_ranks_shard_dataset_exactly_once(tmp_path: Path) -> None:
    """torch.distributed (gloo): ranks take rank/world size from the group; shards cover once."""
    pytest.importorskip("torch.distributed")
    world = 2
    results = _run_ranks("torch", world, tmp_path)
    assert [r["rank"] for r in results] == list(range(world))
    assert all(r["world"] == world for r in results)
    _check_epochs(results, world)
    _check_stream(results)
    gathered = [r["gathered_epoch0"] for r in results]
    assert gathered[0] == gathered[1] == [r["epochs"][0] for r in results]


def test_env_ranks_shard_dataset_exactly_once_without_torch(tmp_path: Path) -> None:
    """RANK/WORLD_SIZE only (torch never imported): the same coverage over 3 ranks."""
    world = 3
    results = _run_ranks("env", world, tmp_path)
    assert not any(r["torch_imported"] for r in results)
    assert [r["rank"] for r in results] == list(range(world))
    _check_epochs(results, world)
    _check_stream(results)
    # every rank computed the same epoch orders: the same as a single process computes (with
    # the NumPy order of a program without torch, which this test process has imported)
    from stoker.data import DistributedSampler

    for epoch in range(EPOCHS):
        sampler = DistributedSampler(list(range(N)), num_replicas=world, rank=2, seed=5)
        sampler.load_state_dict({**sampler.state_dict(), "draws": "keyed", "epoch": epoch})
        assert results[2]["epochs"][epoch] == list(sampler)
