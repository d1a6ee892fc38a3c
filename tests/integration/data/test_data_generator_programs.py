"""stoker.data._generator in fresh interpreters: torch left unimported, the global seed honoured.

Each test runs a program in a new Python process: importing stoker.data and drawing a global
seed without torch leave torch unimported, and a program seeded globally (NumPy's or torch's
seed) sees the same draws on every run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def _run_ok(code: str) -> None:
    """Run ``code`` in a fresh interpreter and assert that it succeeded."""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr


def test_importing_stoker_data_does_not_import_torch() -> None:
    """``import stoker.data`` and use of the samplers and collate leave torch unimported."""
    code = (
        "import sys, stoker.data as d\n"
        "s = d.RandomSampler(range(5), generator=1); list(s)\n"
        "d.default_collate([{'a': 1}, {'a': 2}])\n"
        "d.random_split(range(4), [0.5, 0.5])\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    _run_ok(code)


def _run_seeded_program(kind: str, seed: int, workers: int) -> dict[str, Any]:
    """Run tests/support/data_global_seed_program.py in a fresh interpreter; its JSON output."""
    program = Path(__file__).resolve().parents[2] / "support" / "data_global_seed_program.py"
    result = subprocess.run(
        [sys.executable, str(program), kind, str(seed), str(workers)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    seen: dict[str, Any] = json.loads(result.stdout)
    return seen


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_a_globally_seeded_program_gets_the_same_draws_on_every_run(
    kind: str, workers: int
) -> None:
    """generator=None honours the global seed of NumPy or of torch.

    generator=None honours the global seed: np.random.seed(s) in a NumPy program (torch
    never imported), torch.manual_seed(s) in a torch program. Two fresh runs with one seed see
    the same batches, worker seeds, sampler orders and splits; another seed sees others.
    """
    first = _run_seeded_program(kind, 5, workers)
    assert first["torch_imported"] is (kind == "torch")
    assert _run_seeded_program(kind, 5, workers) == first
    other = _run_seeded_program(kind, 6, workers)
    for key in ("batches", "subset", "weighted", "split"):
        assert other[key] != first[key], key
    if workers:
        seeds = {seed for _, worker_seeds in first["batches"] for seed in worker_seeds}
        assert len(seeds) == 2  # base seed + worker id, drawn from the global generator


def test_draw_global_seed_draws_from_numpy_legacy_without_torch() -> None:
    """Without torch, the global draw is one np.random.randint from the legacy generator."""
    code = (
        "import sys, numpy as np\n"
        "from stoker.data._generator import draw_global_seed\n"
        "np.random.seed(3); a = draw_global_seed()\n"
        "np.random.seed(3); b = int(np.random.randint(0, 2**63, dtype=np.int64))\n"
        "assert a == b and 'torch' not in sys.modules, (a, b)\n"
    )
    _run_ok(code)
