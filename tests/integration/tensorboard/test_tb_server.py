"""A real TensorBoard server reads stoker's event files: scalars, images and purge_step.

The server runs on 127.0.0.1 on a free port with ``--load_fast=true`` (the Rust data server) and
``--load_fast=false`` (the Python plugin loader). Every wait is bounded and the server is always
terminated.
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import tb_server

import stoker.tensorboard as stb

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def _write_logs(logdir: Path, image: np.ndarray) -> None:
    with stb.SummaryWriter(logdir / "main") as writer:
        for step in range(20):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
        writer.add_image("picture", image, 3, dataformats="HWC")
    with stb.SummaryWriter(logdir / "purged") as writer:
        for step in range(100):
            writer.add_scalar("x", float(step), step)
    time.sleep(1.05)  # the restarted writer's file sorts after the first one
    with stb.SummaryWriter(logdir / "purged", purge_step=50) as writer:
        for step in range(50, 60):
            writer.add_scalar("x", step + 0.5, step)


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """Event files for two runs, written once for both server modes."""
    logdir = tmp_path_factory.mktemp("tb_logs")
    image = np.random.default_rng(1).integers(0, 256, (24, 32, 3), dtype=np.uint8)
    _write_logs(logdir, image)
    return logdir, image


@pytest.fixture(params=[True, False], ids=["load_fast", "python_loader"])
def server(request: pytest.FixtureRequest, logs: tuple[Path, np.ndarray]) -> Iterator[str]:
    """Start TensorBoard on the log directory; yield its base URL; always stop it."""
    logdir, _ = logs
    with tb_server.serve(logdir, load_fast=request.param) as base:
        yield base


def test_server_reads_scalars_and_the_image(server: str, logs: tuple[Path, np.ndarray]) -> None:
    """The scalars and images HTTP APIs return the values and the pixels that were written."""
    from PIL import Image

    _, image = logs
    points = tb_server.poll(
        lambda: tb_server.get_json(server, "/data/plugin/scalars/scalars", run="main", tag="loss"),
        lambda r: len(r) == 20,
    )
    assert [(p[1], p[2]) for p in points] == [
        (step, pytest.approx(1.0 / (step + 1), rel=1e-6)) for step in range(20)
    ]
    entries = tb_server.poll(
        lambda: tb_server.get_json(server, "/data/plugin/images/images", run="main", tag="picture"),
        lambda r: len(r) == 1,
    )
    assert [entry["step"] for entry in entries] == [3]
    png = tb_server.get(server, "/data/plugin/images/individualImage?" + entries[0]["query"])
    with Image.open(io.BytesIO(png)) as decoded:
        assert decoded.size == (32, 24)
        assert np.array_equal(np.asarray(decoded.convert("RGB")), image)


def test_server_honours_purge_step(server: str) -> None:
    """After a restart with purge_step=50, the server shows 60 points, each step once."""
    points = tb_server.poll(
        lambda: tb_server.get_json(server, "/data/plugin/scalars/scalars", run="purged", tag="x"),
        lambda r: [p[1] for p in r] == list(range(60)),
    )
    assert [p[1] for p in points] == list(range(60))
    assert [p[2] for p in points] == [float(s) for s in range(50)] + [
        s + 0.5 for s in range(50, 60)
    ]
