"""End to end: the demo's logs in a real TensorBoard, opened in headless Chromium."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import chromium
import pytest
import tb_server

from stoker.cli._demo import run_demo

ARTIFACTS = Path(os.environ.get("STOKER_TEST_ARTIFACTS", "test-artifacts"))
CHROMIUM_FLAGS = [*chromium.FLAGS, "--virtual-time-budget=20000", "--window-size=1400,1000"]


def _browse(url: str, profile: Path, *extra: str) -> str:
    """Load ``url`` in headless Chromium and return what it printed on stdout."""
    command = [chromium.binary(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra, url]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _visible_text(dom: str) -> list[str]:
    """Return the text nodes of a dumped DOM, scripts and styles left out."""
    dom = re.sub(r"<(script|style)\b.*?</\1>", "", dom, flags=re.DOTALL)
    return [part.strip() for part in re.split(r"<[^>]+>", dom) if part.strip()]


@pytest.mark.slow
def test_tensorboard_in_chromium_shows_the_demo_runs_and_tags(tmp_path: Path) -> None:
    """TensorBoard's page lists the demo's runs and tag groups; a screenshot is kept."""
    logdir = tmp_path / "logs"
    run_demo(epochs=1, samples=400, workers=0, logdir=str(logdir / "demo"), progress=False)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / "tensorboard_demo_scalars.png"
    screenshot.unlink(missing_ok=True)
    with tb_server.serve(logdir, load_fast=False) as base:
        runs = tb_server.poll(
            lambda: tb_server.get_json(base, "/data/runs"), lambda r: "demo/hparams" in r
        )
        assert sorted(runs) == ["demo", "demo/hparams"]
        text = _visible_text(_browse(f"{base}/#timeseries", tmp_path / "p1", "--dump-dom"))
        _browse(f"{base}/#scalars", tmp_path / "p2", f"--screenshot={screenshot.resolve()}")
    assert "demo" in text
    assert "demo/hparams" in text
    for group in ("train", "val", "weights", "lr", "samples_per_second", "hparam"):
        assert group in text, f"tag group {group!r} missing from TensorBoard's page"
    # groups show their card counts: two scalars each under train/ and val/, four histograms
    cards = {text[i - 1]: item for i, item in enumerate(text) if item.endswith(" cards")}
    assert cards.get("train") == "2 cards"
    assert cards.get("val") == "2 cards"
    assert cards.get("weights") == "4 cards"
    assert screenshot.read_bytes().startswith(b"\x89PNG")
    assert screenshot.stat().st_size > 10_000  # a rendered page, not a blank one
