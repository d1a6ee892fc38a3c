"""`stoker logs plot` run as a command: charts checked as rendered pictures, and its errors.

Each test runs ``python -m stoker.cli logs plot`` in a fresh interpreter and reads the PNG or
SVG it wrote, its status and its stderr.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from stoker.tensorboard import SummaryWriter

RUN_COLOURS = {"a": (0x1F, 0x77, 0xB4), "b": (0xFF, 0x7F, 0x0E)}  # matplotlib's first two


def _stoker(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stoker.cli", *argv], capture_output=True, text=True, check=False
    )


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    """Two runs with a loss tag; run b also has an accuracy tag."""
    for run, scale in (("a", 1.0), ("b", 2.0)):
        with SummaryWriter(str(tmp_path / run)) as writer:
            for step in range(50):
                writer.add_scalar("loss", scale / (step + 1), step)
                if run == "b":
                    writer.add_scalar("acc", step / 50, step)
    return tmp_path


def test_plot_writes_a_png_with_one_colour_per_run(logdir: Path, tmp_path: Path) -> None:
    """Two tags give two charts; each run's line is drawn in its own colour, and not blank."""
    output = tmp_path / "out.png"
    done = _stoker("logs", "plot", str(logdir), "loss", "acc", "-o", str(output))
    assert done.returncode == 0, done.stderr
    assert "wrote 2 chart(s) of 2 run(s)" in done.stdout
    image = np.asarray(Image.open(output).convert("RGB")).astype(np.int64)
    assert image.shape[1] > image.shape[0] > 200  # two charts side by side
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 20  # not blank
    for run, colour in RUN_COLOURS.items():
        close = (np.abs(image - np.array(colour)).sum(axis=2) < 30).sum()
        assert close > 200, f"run {run}'s colour is barely drawn ({close} pixels)"
    # Only run b has acc: the right half holds b's colour but not a's line.
    right = image[:, image.shape[1] // 2 :]
    a_pixels = (np.abs(right - np.array(RUN_COLOURS["a"])).sum(axis=2) < 30).sum()
    b_pixels = (np.abs(right - np.array(RUN_COLOURS["b"])).sum(axis=2) < 30).sum()
    assert b_pixels > 10 * max(a_pixels, 1)


def test_plot_writes_svg_and_honours_options(logdir: Path, tmp_path: Path) -> None:
    """SVG output, a log axis, relative time and one chosen run all work together."""
    output = tmp_path / "out.svg"
    done = _stoker(
        "logs", "plot", str(logdir), "loss", "-o", str(output), "--log-y", "--x", "relative",
        "--run", "a", "--smoothing", "0",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = output.read_text()
    assert text.startswith("<?xml")
    assert "<svg" in text
    assert "of 1 run(s)" in done.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nope"], "no run has the scalar tag 'nope'"),
        (["loss", "--smoothing", "1.5"], "argument --smoothing: must be a number in [0, 1)"),
        (["loss", "--run", "zzz"], "no run named 'zzz'"),
    ],
)
def test_plot_errors_exit_2_with_one_line(
    logdir: Path, tmp_path: Path, argv: list[str], message: str
) -> None:
    """A tag, run or option that cannot be drawn is one line on stderr and exit status 2."""
    done = _stoker("logs", "plot", str(logdir), *argv, "-o", str(tmp_path / "x.png"))
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_plot_rejects_an_unknown_format(logdir: Path, tmp_path: Path) -> None:
    """The output's suffix must be one matplotlib writes here."""
    done = _stoker("logs", "plot", str(logdir), "loss", "-o", str(tmp_path / "x.gif"))
    assert done.returncode == 2
    assert ".png, .svg, .pdf" in done.stderr


def test_plot_without_matplotlib_names_the_extra(logdir: Path, tmp_path: Path) -> None:
    """With matplotlib hidden, the error says which extra to install."""
    probe = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "from stoker.cli import main\n"
        f"sys.exit(main(['logs', 'plot', {str(logdir)!r}, 'loss', '-o', 'x.png']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert done.returncode == 2
    assert "pip install 'stoker[matplotlib]'" in done.stderr


def test_run_names_and_tags_with_dollars_are_drawn_as_they_are(tmp_path: Path) -> None:
    r"""A run directory named like mathtext is drawn literally, not parsed.

    A run directory named like mathtext ("$\frac$") is drawn literally, not parsed (which
    failed the whole plot).
    """
    tag = r"loss$\sqrt$"
    with SummaryWriter(str(tmp_path / r"run$\frac$")) as writer:
        for step in range(5):
            writer.add_scalar(tag, float(step), step)
    done = _stoker("logs", "plot", str(tmp_path), tag, "-o", str(tmp_path / "x.png"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "x.png").stat().st_size > 0


@pytest.mark.parametrize("axis", ["wall", "relative"])
def test_points_whose_wall_time_is_not_a_date_are_left_out_of_time_axes(
    tmp_path: Path, axis: str
) -> None:
    """On a time axis, points whose wall time is not a date are skipped with one warning.

    On a time axis, points with wall time 1e300, nan, inf or -1e20 are skipped with one
    warning naming the run and tag, and the others are drawn (--x wall raised OverflowError).
    """
    with SummaryWriter(str(tmp_path / "a")) as writer:
        for step in range(40):
            wall = (1e300, float("nan"), float("inf"), -1e20)[step % 4] if step % 5 == 0 else None
            writer.add_scalar("loss", 1.0 / (step + 1), step, walltime=wall)
    output = tmp_path / "x.png"
    done = _stoker("logs", "plot", str(tmp_path), "loss", "--x", axis, "-o", str(output))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("stoker logs: warning: run 'a' tag 'loss': 8 point(s)")
    assert line.endswith("skipping them")
    image = np.asarray(Image.open(output).convert("RGB")).astype(np.int64)
    drawn = (np.abs(image - np.array(RUN_COLOURS["a"])).sum(axis=2) < 30).sum()
    assert drawn > 200, f"the dated points are barely drawn ({drawn} pixels)"
