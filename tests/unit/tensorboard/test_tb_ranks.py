"""Rank-aware writing: rank resolution, rank_writer's policies and NullWriter."""

from __future__ import annotations

import inspect
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tb_events import event_names

import stoker.tensorboard as stb
from stoker.tensorboard import _ranks

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(autouse=True)
def no_rank_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Start every test without RANK / WORLD_SIZE and without torch.distributed."""
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delitem(sys.modules, "torch.distributed", raising=False)


def fake_dist(rank: int, world_size: int, *, initialized: bool = True) -> types.ModuleType:
    """A stand-in for an imported torch.distributed with a process group."""
    module = types.ModuleType("torch.distributed")
    module.is_available = lambda: True  # type: ignore[attr-defined]
    module.is_initialized = lambda: initialized  # type: ignore[attr-defined]
    module.get_rank = lambda: rank  # type: ignore[attr-defined]
    module.get_world_size = lambda: world_size  # type: ignore[attr-defined]
    return module


@pytest.mark.parametrize(
    ("argument", "dist", "env", "expected"),
    [
        ((None, None), None, {}, (0, None)),
        ((None, None), None, {"RANK": "2", "WORLD_SIZE": "4"}, (2, 4)),
        ((None, None), (3, 8), {"RANK": "2", "WORLD_SIZE": "4"}, (3, 8)),
        ((1, None), (3, 8), {"RANK": "2"}, (1, 8)),
        ((1, 2), (3, 8), {}, (1, 2)),
        ((None, 5), None, {"RANK": "4"}, (4, 5)),
    ],
)
def test_rank_comes_from_argument_then_torch_then_environment(
    monkeypatch: pytest.MonkeyPatch,
    argument: tuple[int | None, int | None],
    dist: tuple[int, int] | None,
    env: dict[str, str],
    expected: tuple[int, int | None],
) -> None:
    """resolve_rank: argument, else an initialized torch.distributed, else RANK, else 0."""
    if dist is not None:
        monkeypatch.setitem(sys.modules, "torch.distributed", fake_dist(*dist))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert _ranks.resolve_rank(*argument) == expected


def test_uninitialized_torch_distributed_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """An imported but uninitialized torch.distributed is skipped in favour of RANK."""
    monkeypatch.setitem(sys.modules, "torch.distributed", fake_dist(5, 6, initialized=False))
    monkeypatch.setenv("RANK", "1")
    assert _ranks.resolve_rank() == (1, None)


@pytest.mark.parametrize(
    ("argument", "env", "error", "match"),
    [
        ((2, 2), {}, ValueError, "rank must be below world_size"),
        ((-1, None), {}, ValueError, "rank must be >= 0"),
        ((True, None), {}, TypeError, "rank must be an int"),
        ((0, 0), {}, ValueError, "world_size must be >= 1"),
        ((None, None), {"RANK": "one"}, ValueError, "environment variable RANK must be an int"),
        ((None, None), {"RANK": "3", "WORLD_SIZE": "2"}, ValueError, "below world_size"),
    ],
)
def test_bad_ranks_raise(
    monkeypatch: pytest.MonkeyPatch,
    argument: tuple[Any, Any],
    env: dict[str, str],
    error: type[Exception],
    match: str,
) -> None:
    """Out-of-range or malformed ranks raise an error naming the value and its source."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(error, match=match):
        _ranks.resolve_rank(*argument)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"log_dir": None}, TypeError, "log_dir must be a non-empty path"),
        ({"log_dir": ""}, TypeError, "log_dir must be a non-empty path"),
        ({"policy": "all"}, ValueError, "policy must be one of 'rank0', 'per_rank'"),
    ],
)
def test_rank_writer_rejects_bad_arguments(
    tmp_path: Path, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    """A missing log dir or an unknown policy raises before anything is created."""
    arguments: dict[str, Any] = {"log_dir": tmp_path / "run", **kwargs}
    with pytest.raises(error, match=match):
        stb.rank_writer(arguments.pop("log_dir"), **arguments)
    assert not (tmp_path / "run").exists()


def test_rank0_policy_writes_on_rank_zero_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rank0: rank 0 gets a real writer, rank 1 (from RANK) a NullWriter that writes nothing."""
    with stb.rank_writer(tmp_path / "run", rank=0, flush_secs=5) as writer:
        assert type(writer) is stb.SummaryWriter
        assert writer.flush_secs == 5
        writer.add_scalar("x", 1.0, 1)
    assert len(event_names(tmp_path / "run")) == 1
    monkeypatch.setenv("RANK", "1")
    with stb.rank_writer(tmp_path / "other") as writer:
        assert isinstance(writer, stb.NullWriter)
        assert writer.get_logdir() == str(tmp_path / "other")
        writer.add_scalar("x", 1.0, 1)
        writer.add_image("img", np.zeros((3, 2, 2)), 1)
        writer.add_hparams({"lr": 0.1}, {"acc": 1.0})
        writer.add_embedding(np.eye(2))
        writer.flush()
    assert not (tmp_path / "other").exists()


def test_null_writer_overrides_every_writing_method_with_its_signature(tmp_path: Path) -> None:
    """Each public SummaryWriter method but get_logdir is a no-op with the same signature."""
    writer = stb.NullWriter(tmp_path / "never")
    public = [
        name
        for name, _ in inspect.getmembers(stb.SummaryWriter, inspect.isfunction)
        if not name.startswith("_")
    ]
    assert len(public) >= 20
    for name in public:
        mine, theirs = getattr(stb.NullWriter, name), getattr(stb.SummaryWriter, name)
        assert inspect.signature(mine) == inspect.signature(theirs), name
        assert (mine is theirs) == (name == "get_logdir"), name
    with pytest.raises(TypeError, match="tag"):
        writer.add_scalar(scalar_value=1.0)
    writer.add_scalar("x", "not even a number")
    writer.close()
    assert not (tmp_path / "never").exists()


def test_per_rank_policy_writes_one_subrun_per_rank(tmp_path: Path) -> None:
    """per_rank: each rank writes log_dir/rank_<r>, including rank 0."""
    for rank in (0, 2):
        with stb.rank_writer(tmp_path, policy="per_rank", rank=rank, world_size=3) as writer:
            assert writer.get_logdir() == str(tmp_path / f"rank_{rank}")
            writer.add_scalar("x", float(rank), 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank_0", "rank_2"]
    assert all(len(event_names(tmp_path / f"rank_{r}")) == 1 for r in (0, 2))


def test_per_rank_policy_joins_urls_with_slashes() -> None:
    """A URL log dir gets its rank sub-run with a "/" whatever the OS separator."""
    pytest.importorskip("fsspec")
    writer = stb.rank_writer("memory://bucket/exp/", policy="per_rank", rank=1)
    try:
        assert writer.get_logdir() == "memory://bucket/exp/rank_1"
    finally:
        writer.close()
