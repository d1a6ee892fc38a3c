"""accelerate and Hugging Face's Trainer on stoker's engine, with torch's batches.

accelerate rebuilds every loader it prepares on torch's DataLoader; under
``stoker.torch.data.patch_accelerate()`` it rebuilds them on stoker's. Each check compares with
accelerate over torch's own loader for the same dataset, seed and workers: in this process with
``Accelerator(cpu=True)`` (prepare, ``skip_first_batches``, ``save_state``/``load_state``, a
small ``Trainer``), and in two rank processes over gloo (each rank's shard, every sample once).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from data_workers_helpers import SUPPORT
from libs_accelerate_helpers import (
    BATCH,
    CASES,
    EPOCHS,
    RANK_RUNS,
    N,
    accelerator,
    build,
    engine,
    epochs,
    ids,
    patched,
    run,
)
from libs_loaders import SETTINGS, torch_setting
from tb_subprocess import reaped

pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)

STOKER = "stoker.torch.data"
STOKER_BASE = "stoker.torch.data.DataLoader"
RANKS = str(Path(SUPPORT) / "libs_accelerate_helpers.py")
PER_EPOCH = N // BATCH


@pytest.fixture(autouse=True, scope="module")
def accelerate_state() -> Iterator[None]:
    """Accelerate's process-wide state, reset when the module is done (other tests start clean)."""
    pytest.importorskip("accelerate")
    from accelerate.state import AcceleratorState, GradientState

    environ = dict(os.environ)
    yield
    AcceleratorState._reset_state(reset_partial_state=True)
    GradientState._reset_state()
    os.environ.clear()
    os.environ.update(environ)


_TORCH_RUNS: dict[tuple[str, str], dict[str, Any]] = {}


def _torch_run(case: str, setting: str) -> dict[str, Any]:
    """Accelerate over torch's loader (the reference), made once per case and setting."""
    key = (case, torch_setting(setting))
    if key not in _TORCH_RUNS:
        _TORCH_RUNS[key] = run("torch", *key)
    return _TORCH_RUNS[key]


PREPARE_RUNS = [
    pytest.param(case, setting, id=f"{case}-{setting}") for case in CASES for setting in SETTINGS
]


@pytest.mark.parametrize(("case", "setting"), PREPARE_RUNS)
def test_prepared_loader_runs_stokers_engine_with_torchs_batches(case: str, setting: str) -> None:
    """Accelerator.prepare under the patch wraps stoker's loader; batches equal those over torch's.

    Accelerator.prepare under the patch: accelerate's wrapper (the one it puts around
    torch's loader) around stoker's loader, with the original's worker_type, whose workers
    served every batch; the batches of two epochs equal accelerate's over torch's loader,
    though torch's global generator is drawn from after preparing and between epochs.
    """
    ours, theirs = run(STOKER, case, setting), _torch_run(case, setting)
    assert ours["epochs"] == theirs["epochs"]
    assert ours["wrapper"] == theirs["wrapper"]
    assert theirs["base"] == "torch.utils.data.dataloader.DataLoader"
    assert ours["base"] == STOKER_BASE
    num_workers, worker_type = SETTINGS[setting]
    assert ours["worker_type"] == (worker_type or "process")
    # stoker's workers loaded every batch of both epochs (none with num_workers=0)
    assert ours["served"] == (EPOCHS * PER_EPOCH if num_workers else 0)


def test_the_patch_is_explicit_scoped_and_put_back() -> None:
    """Only inside ``with patch_accelerate()`` does accelerate rebuild a stoker loader on stoker's.

    Without the patch accelerate rebuilds a stoker loader on torch's DataLoader (the silent
    loss the patch exists for); inside ``with patch_accelerate()`` it rebuilds it on stoker's
    (a nested patch leaves it in place), and after the block accelerate is as it was.
    """
    import accelerate.data_loader as accelerate_loader
    import torch

    from stoker.torch.data import DataLoader, patch_accelerate

    adapter = accelerate_loader.DataLoaderAdapter
    before = (dict(vars(adapter)), dict(accelerate_loader._PYTORCH_DATALOADER_KWARGS))
    plain = accelerator().prepare(build(STOKER, "map", "0"))
    assert type(plain.base_dataloader) is torch.utils.data.DataLoader
    with patch_accelerate() as entered:
        assert entered is None
        with patch_accelerate():
            pass
        assert accelerate_loader.DataLoader is DataLoader
        prepared = accelerator().prepare(build(STOKER, "map", "0"))
        assert type(prepared.base_dataloader) is DataLoader
        assert isinstance(prepared, DataLoader)  # accelerate's wrapper answers as its base
    assert accelerate_loader.DataLoader is torch.utils.data.DataLoader
    assert (dict(vars(adapter)), dict(accelerate_loader._PYTORCH_DATALOADER_KWARGS)) == before


SKIP_RUNS = [
    pytest.param(case, setting, id=f"{case}-{setting}")
    for case in CASES
    for setting in ("2-process", "2-thread")
]


def _skipped(door: str, case: str, setting: str) -> tuple[Any, list[list[list[int]]]]:
    """One epoch, then ``skip_first_batches`` of the prepared and unprepared loaders for two more.

    One epoch of the prepared loader, then accelerate's ``skip_first_batches`` of it (2
    batches; the function Trainer calls) for the next two epochs, and of the unprepared loader.
    """
    import accelerate

    with patched(door):
        original = build(door, case, setting)
        prepared = accelerator(CASES[case]).prepare(original)
        epochs(prepared, 1)
        skipped = accelerate.skip_first_batches(prepared, num_batches=2)
        out = epochs(skipped, 2)
        bare = accelerate.skip_first_batches(original, num_batches=2)
        out.append(ids(bare))
    return (skipped, bare), out


@pytest.mark.parametrize(("case", "setting"), SKIP_RUNS)
def test_skip_first_batches_runs_stokers_engine_with_torchs_batches(
    case: str, setting: str
) -> None:
    """skip_first_batches builds stoker's loaders whose batches equal those over torch's.

    skip_first_batches of a prepared loader and of a plain one build stoker's loaders (with
    the original's worker_type), whose batches equal skip_first_batches over torch's.
    """
    from stoker.torch.data import DataLoader

    (skipped, bare), ours = _skipped(STOKER, case, setting)
    _, theirs = _skipped("torch", case, torch_setting(setting))
    assert ours == theirs
    assert engine(skipped)["base"] == STOKER_BASE
    assert engine(skipped)["worker_type"] == SETTINGS[setting][1]
    bare_base = vars(bare).get("base_dataloader", bare)  # SkipDataLoader for an iterable
    assert type(bare_base) is DataLoader
    assert bare_base.worker_type == SETTINGS[setting][1]
    assert engine(skipped)["served"] > 0


STOPS = [(0, 2), (1, 5), (1, PER_EPOCH)]
"""``(epoch, batches)`` where the state is saved: early, mid-epoch later, at an epoch's end."""
RESUME_RUNS = [
    pytest.param(case, epoch, batches, id=f"{case}-epoch{epoch}-after{batches}")
    for case in ("map", "dispatch")
    for epoch, batches in STOPS
]


@pytest.mark.parametrize(("case", "epoch", "batches"), RESUME_RUNS)
def test_save_state_and_load_state_resume_where_the_run_stood(
    case: str, epoch: int, batches: int, tmp_path: Path
) -> None:
    """``save_state`` then ``load_state`` resumes the loader exactly as the saving run went on.

    With use_stateful_dataloader=True (no torchdata needed) ``save_state`` after ``batches``
    batches of ``epoch`` and ``load_state`` into a fresh Accelerator and loader: the loader
    yields the rest of that epoch (nothing when saved at its end), then the next epochs,
    exactly as the run that saved went on; saved again before a batch, the state resumes the
    same way; the saved state is stoker's.
    """
    with patched(STOKER):
        first = accelerator(CASES[case], use_stateful_dataloader=True)
        prepared = first.prepare(build(STOKER, case, "2-process"))
        seen: list[list[list[int]]] = []
        for number in range(3):
            seen.append([])
            for batch in prepared:
                seen[-1].extend(ids([batch]))
                if (number, len(seen[-1])) == (epoch, batches):
                    first.save_state(str(tmp_path))
        assert prepared.state_dict()["format"] == "stoker.data.DataLoader"
        expected = ([seen[epoch][batches:]] if batches < PER_EPOCH else []) + seen[epoch + 1 :]

        for folder in (tmp_path, tmp_path / "again"):
            again = accelerator(CASES[case], use_stateful_dataloader=True)
            resumed = again.prepare(build(STOKER, case, "2-process"))
            again.load_state(str(folder))
            again.save_state(str(tmp_path / "again"))  # before a batch: the loaded state
            assert [ids(resumed) for _ in expected] == expected
            assert engine(resumed)["base"] == STOKER_BASE


@pytest.mark.parametrize("case", ["map", "dispatch"])
def test_load_state_then_skip_first_batches_matches_torchs(case: str, tmp_path: Path) -> None:
    """Accelerate's resume without loader state gives the same over stoker's loader as over torch's.

    Accelerate's resume without loader state (load_state, then skip_first_batches of the
    batches done) gives over stoker's loader what it gives over torch's.
    """

    def resumed(door: str, folder: Path) -> list[list[int]]:
        setting = "2-process"
        with patched(door):
            first = accelerator(CASES[case])
            prepared = first.prepare(build(door, case, setting))
            epochs(prepared, 1)
            for done, _ in enumerate(prepared, start=1):
                if done == 3:
                    first.save_state(str(folder))
            second = accelerator(CASES[case])
            fresh = second.prepare(build(door, case, setting))
            second.load_state(str(folder))
            skipped = second.skip_first_batches(fresh, num_batches=3)
            assert (door == STOKER) == (engine(skipped)["base"] == STOKER_BASE)
            return ids(skipped)

    assert resumed(STOKER, tmp_path / "stoker") == resumed("torch", tmp_path / "torch")


@pytest.fixture(scope="module")
def transformers_trainer() -> Any:
    """transformers, offline (nothing is downloaded: the model is built here)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    return pytest.importorskip("transformers")


def _train(transformers: Any, door: str, out: Path, **options: Any) -> tuple[list[float], Any]:
    """Train a tiny model with dropout; return the step losses and Trainer's train loader.

    Train a tiny model with dropout for a few steps; return the step losses and the train
    loader Trainer prepared.
    """
    import torch
    from libs_accelerate_helpers import Ids

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = torch.nn.Linear(2, 1)
            self.dropout = torch.nn.Dropout(0.5)

        def forward(self, x: torch.Tensor, labels: torch.Tensor) -> dict[str, torch.Tensor]:
            prediction = self.layer(self.dropout(x)).squeeze(-1)
            return {"loss": torch.nn.functional.mse_loss(prediction, labels)}

    class Pairs(Ids):
        def __getitem__(self, index: int) -> dict[str, Any]:
            x, i = super().__getitem__(index)
            return {"x": x / N, "labels": torch.tensor(float(i % 3))}

    class KeepLoader(transformers.TrainerCallback):
        loader: Any = None

        def on_train_begin(self, *args: Any, train_dataloader: Any = None, **kwargs: Any) -> None:
            self.loader = train_dataloader

    torch.manual_seed(0)
    model = Tiny()
    arguments = transformers.TrainingArguments(
        output_dir=str(out),
        max_steps=6,
        per_device_train_batch_size=4,
        dataloader_num_workers=2,
        use_cpu=True,
        report_to=[],
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
        seed=0,
        **options,
    )
    keep = KeepLoader()
    trainer = transformers.Trainer(
        model=model, args=arguments, train_dataset=Pairs(), callbacks=[keep]
    )
    with patched(door):
        trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    return losses, keep.loader


def test_trainer_trains_on_stokers_engine_with_torchs_losses(
    transformers_trainer: Any, tmp_path: Path
) -> None:
    """Trainer, unchanged, under the patch runs on stoker's engine; the step losses equal torch's.

    Trainer, unchanged, under the patch: its train loader runs on stoker's engine (its two
    worker processes served the batches) and the step losses (dropout included) equal those
    of the same run over torch's loader.
    """
    ours, loader = _train(transformers_trainer, STOKER, tmp_path / "stoker")
    theirs, torch_loader = _train(transformers_trainer, "torch", tmp_path / "torch")
    assert len(ours) == 6
    assert ours == theirs
    assert engine(loader)["base"] == STOKER_BASE
    assert engine(loader)["served"] >= 6
    assert engine(torch_loader)["base"] == "torch.utils.data.dataloader.DataLoader"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Every run of RANK_RUNS in two rank processes (accelerate over gloo; bounded waits)."""
    out = tmp_path_factory.mktemp("ranks")
    env = dict(os.environ, WORLD_SIZE="2", LOCAL_WORLD_SIZE="2", OMP_NUM_THREADS="1")
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [SUPPORT, env.get("PYTHONPATH")]))
    errors = []
    with reaped() as processes:  # a timeout leaves no rank running and no pipe open
        for rank in (0, 1):
            processes.append(
                subprocess.Popen(
                    [sys.executable, RANKS, str(out)],
                    env=dict(env, RANK=str(rank), LOCAL_RANK=str(rank)),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        deadline = time.monotonic() + 90  # both ranks together, within pytest's 120 s
        for process in processes:
            try:
                _, stderr = process.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pytest.fail("the rank processes did not finish within 90 s")
            if process.returncode != 0:
                errors.append(stderr[-4000:])
    assert not errors, "\n".join(errors)
    return [json.loads((out / f"rank{rank}.json").read_text()) for rank in (0, 1)]


STOKER_RANK_RUNS = [
    pytest.param(case, setting, id=f"{case}-{setting}")
    for door, case, setting in RANK_RUNS
    if door == STOKER
]


@pytest.mark.parametrize(("case", "setting"), STOKER_RANK_RUNS)
def test_two_ranks_get_torchs_shards_on_stokers_engine(
    case: str, setting: str, ranks: list[dict[str, Any]]
) -> None:
    """Over two processes each rank's batches equal accelerate's over torch's loader.

    Over two processes each rank's batches equal accelerate's over torch's loader on that
    rank, the ranks together see every sample once per epoch, and stoker's loader served the
    batches (with dispatch_batches only process 0 reads it).
    """
    ours = [rank[f"{STOKER}/{case}/{setting}"] for rank in ranks]
    theirs = [rank[f"torch/{case}/{torch_setting(setting)}"] for rank in ranks]
    assert [rank["epochs"] for rank in ours] == [rank["epochs"] for rank in theirs]
    for epoch in range(EPOCHS):
        samples = [i for rank in ours for batch in rank["epochs"][epoch] for i in batch]
        assert sorted(samples) == list(range(N))
    assert [rank["base"] for rank in ours] == [STOKER_BASE] * 2
    assert [rank["worker_type"] for rank in ours] == [SETTINGS[setting][1]] * 2
    served = [rank["served"] for rank in ours]
    per_rank = EPOCHS * PER_EPOCH // 2
    assert served == ([2 * per_rank, 0] if case == "dispatch" else [per_rank] * 2)


def test_two_ranks_refuse_a_dispatched_loaders_state(ranks: list[dict[str, Any]]) -> None:
    """With dispatch_batches over two processes ``state_dict()`` raises.

    With dispatch_batches over two processes ``state_dict()`` raises (such a state would
    resume off by a batch), naming the number of processes and the way out.
    """
    for rank in ranks:
        error = rank[f"{STOKER}/dispatch/2-process"]["state_error"]
        assert error is not None
        assert "needs one process, got num_processes=2" in error
        assert "dispatch_batches=False" in error


def test_patch_needs_accelerate(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without accelerate installed, patch_accelerate raises ImportError saying what to install."""
    from stoker.torch.data import patch_accelerate

    monkeypatch.setitem(sys.modules, "accelerate.data_loader", None)
    with pytest.raises(ImportError, match=r"patch_accelerate needs accelerate: .*pip install"):
        patch_accelerate()


def test_patch_refuses_an_accelerate_without_the_parts_it_replaces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An accelerate lacking what the patch replaces gets a RuntimeError and is left unchanged.

    An accelerate whose data_loader lacks what the patch replaces gets a RuntimeError naming
    the parts and the version, and is left unchanged.
    """
    import accelerate.data_loader as accelerate_loader

    from stoker.torch.data import patch_accelerate

    monkeypatch.delattr(accelerate_loader, "_PYTORCH_DATALOADER_KWARGS")
    loader = accelerate_loader.DataLoader
    with pytest.raises(RuntimeError, match=r"must define DataLoaderAdapter .* got accelerate 1\."):
        patch_accelerate()
    assert accelerate_loader.DataLoader is loader
