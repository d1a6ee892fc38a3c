"""Elastic resume with real gloo process groups: saved on 4 ranks, merged, resumed on others.

Each scenario is one spawn of 4 rank processes (tests/support/data_elastic_helpers.py): they
join a gloo group on 127.0.0.1, take batches of epoch 0 with 2 workers each, save, gather the
states through the group and merge them; then, for each later phase, the ranks of its world
join a new group, load the merged state and go on. The checks here: every sample of the epoch
exactly once over all phases (plus exactly the padding DistributedSampler's rule adds), and the
epoch after the resumed one equal to a fresh run's on the new world.
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from data_elastic_helpers import SCENARIOS, check_exactly_once
from data_workers_helpers import SUPPORT

HELPER = str(Path(SUPPORT) / "data_elastic_helpers.py")


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _run(name: str, tmp_path: Path) -> list[dict[str, Any]]:
    """Run the scenario's 4 rank processes (bounded in time); return rank 0's records."""
    pytest.importorskip("torch.distributed")
    phases = SCENARIOS[name]["phases"]
    ports = ",".join(str(port) for port in _free_ports(len(phases)))
    out = tmp_path / "records.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [SUPPORT, env.get("PYTHONPATH")]))
    for variable in ("RANK", "WORLD_SIZE"):  # the process group gives rank and world size
        env.pop(variable, None)
    processes = [
        subprocess.Popen(
            [sys.executable, HELPER, name, str(rank), ports, str(out)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(phases[0][0])
    ]
    deadline = time.monotonic() + 120
    while any(process.poll() is None for process in processes):
        failed = any(process.returncode for process in processes)
        if failed or time.monotonic() > deadline:  # the others would wait for it: stop them
            for process in processes:
                process.kill()
            break
        time.sleep(0.05)
    errors = []
    for process in processes:
        _, stderr = process.communicate()
        if process.returncode:
            errors.append(stderr)
    assert not errors, "\n".join(errors)
    records: list[dict[str, Any]] = json.loads(out.read_text())
    return records


def _flat(record: dict[str, Any]) -> list[int]:
    return [x for rank in record["samples"] for x in rank]


def _check_next_epoch(record: dict[str, Any], *, ordered: bool = True) -> None:
    """After the resumed epoch, every rank's next epoch is a fresh run's on that world.

    Out of order (``ordered`` False) batches come as they are ready: the same samples, in
    another order.
    """
    for resumed, fresh in record["next"]:
        assert resumed == fresh if ordered else sorted(resumed) == sorted(fresh)
    shares = [resumed for resumed, _ in record["next"]]
    assert len({len(share) for share in shares}) == 1, "every rank gets as many samples"


def _padding(length: int, world: int) -> int:
    return math.ceil(length / world) * world - length


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_shuffled_epoch_saved_on_4_ranks_resumes_on_2_3_and_1(tmp_path: Path) -> None:
    """4 ranks x 2 workers take 2, 3, 2, 1 batches; 2, 3 and 1 ranks each finish the epoch."""
    records = _run("shuffled", tmp_path)
    length = 29
    first = records[0]
    assert [len(s) for s in first["samples"]] == [4, 6, 4, 2]
    # torch's padding of epoch 0 on 4 ranks: positions 29..31 belong to ranks 1, 2 and 3;
    # rank 1 took 6 of its 8 positions, so none of them; nothing of the padding was taken
    for record in records[1:]:
        world = record["world"]
        remainder = length - len(_flat(first))
        check_exactly_once(
            [_flat(first), _flat(record)],
            list(range(length)),
            extras=_padding(remainder, world),
        )
        shares = [len(s) for s in record["samples"]]
        assert len(set(shares)) == 1, "every new rank gets as many samples"
        assert shares[0] == math.ceil(remainder / world)
        _check_next_epoch(record)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_out_of_order_drop_last_resumes_4_to_3_to_2(tmp_path: Path) -> None:
    """in_order=False (batches overtake slow ones) and drop_last: 4 -> 3 -> 2 ranks, no repeat."""
    records = _run("unordered-drop-last", tmp_path)
    length = 31
    universe = list(range(length))
    phases = [_flat(record) for record in records]
    # drop_last cuts the epoch to 28 on 4 ranks (3 dropped). Out of order, a rank's 2 batches
    # may include its short last one (7 samples: 2 + 2 + 2 + 1), so 12 to 16 are taken; each
    # later world cuts what is left to a multiple of itself, dropping the rest
    first, second, third = (len(p) for p in phases)
    assert 12 <= first <= 16
    left = 28 - first
    dropped = 3 + left % 3
    left -= left % 3 + second
    dropped += left % 2
    assert third == left - left % 2
    check_exactly_once(phases, universe, extras=0, dropped=dropped)
    _check_next_epoch(records[-1], ordered=False)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_chain_resumes_twice_4_to_2_to_3_with_padding(tmp_path: Path) -> None:
    """A length dividing by none of 4, 2, 3: 4 -> 2 -> 3 ranks, padding only where torch pads."""
    records = _run("chain", tmp_path)
    length = 23
    phases = [_flat(record) for record in records]
    assert [len(p) for p in phases] == [12, 9, 3]
    # phase 1: 4 x 3 of the 24 positions (position 23 is padding and was not taken);
    # phase 2: 11 left, padded to 12 over 2 ranks (rank 1's last is a repeat of the
    # remainder's first, rank 0's), 6 + 3 taken, so 2 are left; phase 3 pads them to 3 over
    # 3 ranks: one repeat in all
    check_exactly_once(phases, list(range(length)), extras=1)
    _check_next_epoch(records[-1])


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_sharded_iterable_resumes_on_3_ranks_with_1_worker_each(tmp_path: Path) -> None:
    """A ShardedIterableDataset: 4 ranks x 2 workers take 2 batches each; 3 ranks finish it."""
    records = _run("sharded", tmp_path)
    lengths = SCENARIOS["sharded"]["spec"]["shards"]
    universe = [s * 100 + j for s, n in enumerate(lengths) for j in range(n)]
    phases = [_flat(record) for record in records]
    assert len(phases[0]) == 4 * 2 * 2
    check_exactly_once(phases, universe, extras=0)
    for resumed, fresh in records[-1]["next"]:
        assert sorted(resumed) == sorted(fresh)
