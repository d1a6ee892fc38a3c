"""Log directories holding every kind of data TensorBoard shows, written by one SummaryWriter class.

``write_corpus(logdir, writer_class)`` makes the same calls through stoker's
``stoker.tensorboard.SummaryWriter`` or torch's ``torch.utils.tensorboard.SummaryWriter`` (both
take torch's signatures), so one corpus is written twice, once per writer. The runs:

- ``train``: scalars (plain, ``new_style``, double precision), histograms (``add_histogram``,
  ``add_histogram_raw``), images (one, a batch, boxes), audio, text (markdown, a table), PR
  curves, meshes, a graph, the custom-scalars layout, an embedding;
- ``train/losses_x``, ``train/losses_y``: the sub-runs of ``add_scalars("losses", ...)``;
- ``eval``: scalars (one that diverged: NaN, infinities, beyond float32), an image, text;
- ``a/b``: a nested run, scalars and histograms;
- ``hp``, ``hp/lr_0.1``...: one sub-run per ``add_hparams`` call (experiment, session start and
  end, metrics).

Every tag has fewer points than the Python loader keeps per plugin (scalars 1000, images 10,
audio 10, histograms 500, PR curves 100, other tensors 10), so its reservoir drops nothing,
and each point has a fixed step and, where the method takes ``walltime=``, a fixed wall time
(``add_hparams``, ``add_graph``, ``add_custom_scalars``, ``add_embedding`` and each file's
first event carry the time of writing). The written pixels and samples are module constants, for
tests that check what a server sends back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

WALL = 1_700_000_000.0  # the wall time of step 0; step s is written at WALL + s

_RNG = np.random.default_rng(20240601)

# Pixels written as they are (uint8, HWC): a PNG served back decodes to exactly these.
PICTURE = _RNG.integers(0, 256, (3, 12, 16, 3), dtype=np.uint8)  # one image per step
BATCH = _RNG.integers(0, 256, (2, 3, 8, 10, 3), dtype=np.uint8)  # 3 per step, in one grid
EVAL_PICTURE = _RNG.integers(0, 256, (10, 14, 1), dtype=np.uint8)
BOX_IMAGE = _RNG.integers(0, 256, (3, 24, 32), dtype=np.uint8)
BOXES = np.array([[2, 2, 20, 15], [5, 1, 9, 9]])
# A loss that diverged: NaN, both infinities, a value beyond float32 and one below its range.
DIVERGED = [0.5, float("nan"), float("inf"), float("-inf"), 1e300, 1e-50, -0.0, 3.0]
SAMPLE_RATE = 8000
TONE = np.sin(np.linspace(0, 40 * np.pi, 800, endpoint=False))[None, :] * 0.5
HISTOGRAM_VALUES = _RNG.normal(size=(4, 300))
PR_LABELS = _RNG.integers(0, 2, (3, 60))
PR_PREDICTIONS = _RNG.random((3, 60))
VERTICES = np.array([[[1, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]]], dtype=np.float32)
COLORS = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 0, 255]]], dtype=np.uint8)
FACES = np.array([[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]], dtype=np.int32)
EMBEDDING = _RNG.normal(size=(6, 4)).astype(np.float32)
EMBEDDING_IMAGES = _RNG.random((6, 3, 8, 8)).astype(np.float32)
TEXTS = ["**bold** and `code`", "a | b\n--|--\n1 | 2", "ünïcode <script>x</script>"]
HPARAMS = [
    ({"lr": 0.1, "batch": 32, "optimizer": "adam", "fused": True}, 0.8),
    ({"lr": 0.01, "batch": 64, "optimizer": "sgd", "fused": False}, 0.85),
    ({"lr": 0.001, "batch": 32, "optimizer": "adam", "fused": False}, 0.9),
]
LAYOUT = {
    "Losses": {
        "all losses": ["Multiline", ["loss", r"losses"]],
        "band": ["Margin", ["band/mid", "band/low", "band/high"]],
    },
    "Rates": {"lr": ["Multiline", [r"lr.*"]]},
}

# Plugins the corpus writes data for, as /data/plugins_listing names them.
PLUGINS = (
    "scalars",
    "custom_scalars",
    "images",
    "audio",
    "graphs",
    "distributions",
    "histograms",
    "text",
    "pr_curves",
    "projector",
    "hparams",
    "mesh",
    "timeseries",
)


def write_corpus(logdir: Path, writer_class: Any) -> Path:
    """Write every run of the corpus under ``logdir`` with ``writer_class``; return ``logdir``."""
    _train(logdir / "train", writer_class)
    _eval(logdir / "eval", writer_class)
    _nested(logdir / "a" / "b", writer_class)
    _hparams(logdir / "hp", writer_class)
    return logdir


def write_stoker_corpus(logdir: Path) -> Path:
    """The corpus written by ``stoker.tensorboard.SummaryWriter``."""
    import stoker.tensorboard as stb

    return write_corpus(logdir, stb.SummaryWriter)


def write_torch_corpus(logdir: Path) -> Path:
    """The corpus written by ``torch.utils.tensorboard.SummaryWriter``."""
    from torch.utils.tensorboard import SummaryWriter

    return write_corpus(logdir, SummaryWriter)


def _train(run: Path, writer_class: Any) -> None:
    with writer_class(str(run)) as w:
        for step in range(60):
            wall = WALL + step
            w.add_scalar("loss", 1.0 / (step + 1), step, walltime=wall)
            w.add_scalar("lr", 0.1 * 0.95**step, step, walltime=wall, new_style=True)
            w.add_scalar("band/mid", float(step), step, walltime=wall)
            w.add_scalar("band/low", step - 1.5, step, walltime=wall)
            w.add_scalar("band/high", step + 1.5, step, walltime=wall)
        for step in range(20):
            w.add_scalar(
                "lr_double", 1 / 3 + step, step, walltime=WALL + step, new_style=True,
                double_precision=True,
            )  # fmt: skip
            w.add_scalars(
                "losses", {"x": step * 0.5, "y": -step * 0.25}, step, walltime=WALL + step
            )
        for step, values in enumerate(HISTOGRAM_VALUES):
            w.add_histogram("weights", values + step, step * 10, walltime=WALL + step * 10)
            w.add_histogram("weights_fd", values, step * 10, walltime=WALL + step * 10, bins="fd")
        for step in range(2):
            counts, limits = np.histogram(HISTOGRAM_VALUES[step], bins=8)
            w.add_histogram_raw(
                "raw",
                min=float(HISTOGRAM_VALUES[step].min()),
                max=float(HISTOGRAM_VALUES[step].max()),
                num=HISTOGRAM_VALUES.shape[1],
                sum=float(HISTOGRAM_VALUES[step].sum()),
                sum_squares=float(HISTOGRAM_VALUES[step].dot(HISTOGRAM_VALUES[step])),
                bucket_limits=limits[1:].tolist(),
                bucket_counts=counts.tolist(),
                global_step=step,
                walltime=WALL + step,
            )
        for step, pixels in enumerate(PICTURE):
            w.add_image("picture", pixels, step, walltime=WALL + step, dataformats="HWC")
        for step, batch in enumerate(BATCH):
            w.add_images("batch", batch, step * 5, walltime=WALL + step * 5, dataformats="NHWC")
        w.add_image_with_boxes(
            "boxes", BOX_IMAGE, BOXES, 1, walltime=WALL + 1, labels=["first", "second"]
        )
        for step in range(2):
            w.add_audio(
                "tone", TONE * (step + 1) / 2, step, sample_rate=SAMPLE_RATE, walltime=WALL + step
            )
        for step, text in enumerate(TEXTS):
            w.add_text("notes", text, step, walltime=WALL + step)
        w.add_text("plain", "one line", 0, walltime=WALL)
        for step in range(3):
            w.add_pr_curve("pr", PR_LABELS[step], PR_PREDICTIONS[step], step, walltime=WALL + step)
        w.add_pr_curve(
            "pr_small", PR_LABELS[0], PR_PREDICTIONS[0], 0, num_thresholds=7, walltime=WALL
        )
        w.add_mesh("shape", VERTICES, colors=COLORS, faces=FACES, global_step=0, walltime=WALL)
        w.add_mesh(
            "shape", VERTICES * 2, colors=COLORS, faces=FACES, global_step=1, walltime=WALL + 1,
            config_dict={"camera": {"cls": "PerspectiveCamera", "fov": 75}},
        )  # fmt: skip
        w.add_mesh("points", VERTICES, global_step=3, walltime=WALL + 3)
        w.add_custom_scalars(LAYOUT)
        w.add_graph(_small_module(), _module_input())
        w.add_embedding(
            EMBEDDING, metadata=list("abcdef"), label_img=_embedding_images(), tag="points"
        )


def _eval(run: Path, writer_class: Any) -> None:
    with writer_class(str(run)) as w:
        for step in range(0, 60, 6):
            w.add_scalar("loss", 2.0 / (step + 1), step, walltime=WALL + step + 0.5)
        for step, value in enumerate(DIVERGED):
            w.add_scalar("diverged", value, step, walltime=WALL + step)
        w.add_image("picture", EVAL_PICTURE, 4, walltime=WALL + 4, dataformats="HWC")
        w.add_text("notes", "evaluation *only*", 4, walltime=WALL + 4)


def _nested(run: Path, writer_class: Any) -> None:
    with writer_class(str(run)) as w:
        for step in range(7):
            w.add_scalar("loss", 3.0 - step * 0.25, step * 3, walltime=WALL + step * 3)
            w.add_scalar("depth/inner", float(step**2), step * 3, walltime=WALL + step * 3)
        w.add_histogram("weights", HISTOGRAM_VALUES[0] * 2, 5, walltime=WALL + 5)


def _hparams(root: Path, writer_class: Any) -> None:
    with writer_class(str(root)) as w:
        for number, (hparams, accuracy) in enumerate(HPARAMS):
            w.add_hparams(
                hparams,
                {"hparam/accuracy": accuracy, "hparam/loss": 1 - accuracy},
                hparam_domain_discrete={"optimizer": ["adam", "sgd", "rmsprop"]},
                run_name=f"lr_{hparams['lr']}",
                global_step=number,
            )


def _small_module() -> Any:
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))


def _module_input() -> Any:
    import torch

    return torch.zeros(1, 4)


def _embedding_images() -> Any:
    import torch

    return torch.from_numpy(EMBEDDING_IMAGES)
