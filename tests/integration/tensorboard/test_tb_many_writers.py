"""Many processes writing under one log dir: nothing collides and every point arrives once.

Children run real multiprocessing processes (fork and spawn) and subprocesses with ``RANK``
set, and the files are checked with TensorBoard's own loaders.
"""

from __future__ import annotations

import collections
import multiprocessing
import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tb_loaders import tb_scalars
from tb_subprocess import reaped

import stoker.tensorboard as stb

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

NAME = re.compile(r"events\.out\.tfevents\.(\d{10})\.(.+)\.(\d+)\.(\d+)")
PROCESSES = 3
POINTS = 100

# Run by exec() in each child, so that spawned children need not import this test module.
SHARED_DIR_CHILD = """
import numpy as np
import stoker.tensorboard as tb

barrier.wait(30)
writers = [tb.SummaryWriter(log_dir), tb.SummaryWriter(log_dir)]
for index, writer in enumerate(writers):
    for i in range(points):
        step = rank * 1000 + index * 100 + i
        writer.add_scalar("loss", step * 0.5, step)
writers[0].add_hparams({"rank": rank}, {"final": float(rank)})
writers[1].add_embedding(np.full((2, 2), rank), metadata=["a", "b"], tag=f"r{rank}")
for writer in writers:
    writer.close()
"""


def tb_file_scalars(path: Path) -> list[tuple[str, int, float]]:
    """(tag, step, value) of every scalar in one file, by TensorBoard's loader.

    The loader migrates ``simple_value`` scalars to scalar tensors, as TensorBoard serves them.
    """
    loader = pytest.importorskip("tensorboard.backend.event_processing.event_file_loader")
    tensor_util = pytest.importorskip("tensorboard.util.tensor_util")
    points = []
    for event in loader.EventFileLoader(str(path)).Load():
        for value in event.summary.value:
            if value.metadata.plugin_data.plugin_name == "scalars":
                number = float(tensor_util.make_ndarray(value.tensor))
                points.append((value.tag, event.step, number))
    return points


def join_all(processes: list[Any]) -> None:
    """Join processes with a deadline; fail (after killing stragglers) if any failed."""
    for process in processes:
        process.join(60)
    for process in processes:
        if process.is_alive():
            process.kill()
            process.join(10)
    assert [p.exitcode for p in processes] == [0] * len(processes)


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_processes_sharing_a_log_dir_lose_nothing(start_method: str, tmp_path: Path) -> None:
    """Three processes with two writers each: unique files and nothing lost.

    Three processes with two writers each, started together: unique files, no lost point,
    one hparams sub-run per call and one projector entry per embedding.
    """
    context = multiprocessing.get_context(start_method)
    barrier = context.Barrier(PROCESSES)
    processes = [
        context.Process(
            target=exec,
            args=(
                SHARED_DIR_CHILD,
                {"log_dir": str(tmp_path), "rank": rank, "points": POINTS, "barrier": barrier},
            ),
        )
        for rank in range(PROCESSES)
    ]
    for process in processes:
        process.start()
    join_all(processes)

    files = sorted(p for p in tmp_path.iterdir() if "tfevents" in p.name)
    assert len(files) == 2 * PROCESSES
    fields = [NAME.fullmatch(f.name) for f in files]
    assert all(fields)
    pids = collections.Counter(m.group(3) for m in fields if m)
    assert sorted(pids.values()) == [2] * PROCESSES
    assert {int(pid) for pid in pids} == {p.pid for p in processes}

    points = collections.Counter(point for file in files for point in tb_file_scalars(file))
    expected = collections.Counter(
        ("loss", step, step * 0.5)
        for rank in range(PROCESSES)
        for index in range(2)
        for step in range(rank * 1000 + index * 100, rank * 1000 + index * 100 + POINTS)
    )
    assert points == expected

    hparam_runs = [p for p in tmp_path.iterdir() if p.is_dir() and re.match(r"\d+\.\d+", p.name)]
    assert len(hparam_runs) == PROCESSES
    finals = sorted(value for run in hparam_runs for _, value in tb_scalars(run, "final"))
    assert finals == [float(rank) for rank in range(PROCESSES)]

    projector_pb2 = pytest.importorskip("tensorboard.plugins.projector.projector_config_pb2")
    text_format = pytest.importorskip("google.protobuf.text_format")
    config = text_format.Parse(
        (tmp_path / "projector_config.pbtxt").read_text(), projector_pb2.ProjectorConfig()
    )
    names = sorted(embedding.tensor_name for embedding in config.embeddings)
    assert names == [f"r{rank}:00000" for rank in range(PROCESSES)]
    for embedding in config.embeddings:
        rank = embedding.tensor_name[1]
        assert (tmp_path / embedding.tensor_path).read_text() == f"{rank}\t{rank}\n" * 2


UNCLOSED_CHILD = """
import stoker.tensorboard as tb

writer = tb.SummaryWriter(log_dir)
for step in range(points):
    writer.add_scalar("x", float(step), step)
"""


@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_child_that_never_closes_its_writer_loses_nothing(
    start_method: str, tmp_path: Path
) -> None:
    """A multiprocessing child whose writer is still referenced when it ends keeps every point.

    A multiprocessing child whose writer is still referenced when it ends keeps every point
    (a forked child leaves through os._exit, skipping atexit).
    """
    context = multiprocessing.get_context(start_method)
    child = context.Process(
        target=exec, args=(UNCLOSED_CHILD, {"log_dir": str(tmp_path), "points": POINTS})
    )
    child.start()
    join_all([child])
    (file,) = tmp_path.iterdir()
    assert [step for _, step, _ in tb_file_scalars(file)] == list(range(POINTS))


def _log_from_forked_child(writer: stb.SummaryWriter, child: int) -> None:
    for step in range(POINTS):
        writer.add_scalar(f"child{child}", float(step), step)
    writer.close()


def test_forked_children_of_an_open_writer_write_their_own_files(tmp_path: Path) -> None:
    """Children forked while the parent's writer is open reuse the writer object safely."""
    writer = stb.SummaryWriter(tmp_path)
    writer.add_scalar("parent", 0.0, 0)
    writer.flush()
    context = multiprocessing.get_context("fork")
    children = [
        context.Process(target=_log_from_forked_child, args=(writer, child)) for child in range(2)
    ]
    for child in children:
        child.start()
    for step in range(1, POINTS):
        writer.add_scalar("parent", float(step), step)
    join_all(children)
    writer.close()

    files = sorted(p for p in tmp_path.iterdir() if "tfevents" in p.name)
    assert len(files) == 3
    by_tag: dict[str, list[int]] = collections.defaultdict(list)
    for file in files:
        for tag, step, _ in tb_file_scalars(file):
            by_tag[tag].append(step)
    assert {tag: sorted(steps) for tag, steps in by_tag.items()} == {
        tag: list(range(POINTS)) for tag in ("parent", "child0", "child1")
    }


RANK_CHILD = """
import os
import stoker.tensorboard as tb

rank = int(os.environ["RANK"])
with tb.rank_writer({log_dir!r}, policy={policy!r}) as writer:
    for step in range({points}):
        writer.add_scalar("x", rank * 1000.0 + step, step)
"""


@pytest.mark.parametrize("policy", ["rank0", "per_rank"])
def test_rank_writer_in_subprocesses_with_rank_env(policy: str, tmp_path: Path) -> None:
    """Processes told their rank by RANK/WORLD_SIZE log once (rank0) or once per rank."""
    code = textwrap.dedent(RANK_CHILD).format(log_dir=str(tmp_path), policy=policy, points=POINTS)
    with reaped() as procs:
        for rank in range(PROCESSES):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", code],
                    env={**os.environ, "RANK": str(rank), "WORLD_SIZE": str(PROCESSES)},
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        for proc in procs:
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
    if policy == "rank0":
        (file,) = tmp_path.iterdir()
        assert tb_scalars(tmp_path, "x") == [(step, float(step)) for step in range(POINTS)]
        assert NAME.fullmatch(file.name)
    else:
        assert sorted(p.name for p in tmp_path.iterdir()) == [f"rank_{r}" for r in range(3)]
        for rank in range(PROCESSES):
            assert tb_scalars(tmp_path / f"rank_{rank}", "x") == [
                (step, rank * 1000.0 + step) for step in range(POINTS)
            ]


TORCH_CHILD = """
import sys
import torch.distributed as dist
import stoker.tensorboard as tb

rank = int(sys.argv[1])
dist.init_process_group("gloo", init_method=sys.argv[2], rank=rank, world_size=2)
try:
    with tb.rank_writer(sys.argv[3], policy="per_rank") as writer:
        writer.add_scalar("x", float(rank), 0)
    dist.barrier()
finally:
    dist.destroy_process_group()
"""


def test_rank_writer_takes_the_rank_from_an_initialized_process_group(tmp_path: Path) -> None:
    """With torch.distributed initialized, its rank wins over contradicting RANK variables."""
    pytest.importorskip("torch.distributed")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    init = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "RANK": "7", "WORLD_SIZE": "9"}
    with reaped() as procs:
        for rank in range(2):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", TORCH_CHILD, str(rank), init, str(tmp_path)],
                    env=env,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        for proc in procs:
            _, err = proc.communicate(timeout=90)
            assert proc.returncode == 0, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank_0", "rank_1"]
    for rank in range(2):
        assert tb_scalars(tmp_path / f"rank_{rank}", "x") == [(0, float(rank))]
