"""`stoker demo`: it learns, it is reproducible, and TensorBoard reads everything it logs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tb_loaders import accumulate

from stoker.cli._demo import ShapesDataset, run_demo
from stoker.cli._shapes import CLASSES, draw_shapes

TINY = {"epochs": 2, "samples": 400, "batch_size": 64, "progress": False}


def test_demo_logs_every_kind_tensorboard_reads(tmp_path: Path) -> None:
    """A tiny demo run writes scalars, histograms, images, PR curves, text, hparams, embedding."""
    result = run_demo(workers=2, logdir=str(tmp_path), **TINY)  # type: ignore[arg-type]
    acc = accumulate(tmp_path)
    tags = acc.Tags()  # type: ignore[attr-defined]
    steps_per_epoch = -(-320 // 64)
    train_loss = acc.Scalars("train/loss")  # type: ignore[attr-defined]
    assert [e.step for e in train_loss] == list(range(1, 2 * steps_per_epoch + 1))
    for tag in ("train/accuracy", "val/loss", "val/accuracy", "lr", "samples_per_second"):
        assert [e.step for e in acc.Scalars(tag)] == [0, 1], tag  # type: ignore[attr-defined]
    assert acc.Scalars("val/accuracy")[-1].value == pytest.approx(result.val_accuracy)  # type: ignore[attr-defined]
    assert set(tags["histograms"]) == {"weights/w1", "weights/b1", "weights/w2", "weights/b2"}
    assert "samples" in tags["images"]
    image = acc.Images("samples")[0]  # type: ignore[attr-defined]
    assert image.encoded_image_string.startswith(b"\x89PNG")
    assert {f"pr/{name}" for name in CLASSES} <= set(tags["tensors"])
    assert "report/text_summary" in tags["tensors"]
    hparams = accumulate(tmp_path / "hparams")
    assert set(hparams.Tags()["scalars"]) == {"hparam/val_accuracy", "hparam/val_loss"}  # type: ignore[attr-defined]
    projector = (tmp_path / "projector_config.pbtxt").read_text()
    assert 'tensor_name: "hidden:00002"' in projector
    embedding = tmp_path / "00002" / "hidden"
    rows = (embedding / "tensors.tsv").read_text().splitlines()
    assert len(rows) == 80
    assert len(rows[0].split("\t")) == 128
    assert (embedding / "sprite.png").read_bytes().startswith(b"\x89PNG")
    assert (embedding / "metadata.tsv").read_text().splitlines()[0] in CLASSES


def test_demo_learns_into_a_new_run_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The validation accuracy is far above chance (1/8), logged to runs/demo/<date-time>."""
    monkeypatch.chdir(tmp_path)
    result = run_demo(workers=0, epochs=4, samples=2000, progress=False)
    assert result.val_accuracy > 0.6
    runs = list((tmp_path / "runs" / "demo").iterdir())
    assert [str(run.relative_to(tmp_path)) for run in runs] == [result.logdir]


def test_same_seed_same_numbers_whatever_the_workers(tmp_path: Path) -> None:
    """The command prints the same table for the same seed with 0 and 2 workers."""
    tables = []
    for workers in (0, 2):
        out = subprocess.run(
            [sys.executable, "-m", "stoker.cli", "demo", "--epochs", "2", "--samples", "400",
             "--workers", str(workers), "--seed", "3", "--logdir", str(tmp_path / str(workers))],
            capture_output=True, text=True, timeout=120, check=True,
        ).stdout  # fmt: skip
        tables.append([line for line in out.splitlines() if line.strip()[:1].isdigit()])
    assert len(tables[0]) == 2
    assert tables[0] == tables[1]


def test_different_seeds_give_different_data() -> None:
    """The seed changes the drawn images; the same seed draws the same ones."""
    a, labels_a = draw_shapes(16, seed=1)
    b, _ = draw_shapes(16, seed=1)
    c, _ = draw_shapes(16, seed=2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert list(labels_a[: len(CLASSES)]) == list(range(len(CLASSES)))


def test_augmentation_depends_on_epoch_and_index_only() -> None:
    """A sample's augmentation is fixed by (seed, epoch, index), and changes with the epoch."""
    from stoker.data import DataLoader

    images, labels = draw_shapes(8, seed=0)
    dataset = ShapesDataset(images, labels, augment=True)

    def epochs(workers: int) -> list[np.ndarray]:
        loader = DataLoader(dataset, batch_size=8, num_workers=workers, generator=0)
        return [next(iter(loader))[0] for _ in range(2)]

    first, again = epochs(0), epochs(2)
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert not np.array_equal(first[0][5], first[1][5])
    plain = ShapesDataset(images, labels, augment=False)
    assert not np.array_equal(first[0][5], plain[5][0])


@pytest.mark.parametrize(
    ("option", "value"), [("epochs", 0), ("batch_size", 0), ("samples", -1), ("workers", -1)]
)
def test_bad_settings_raise_value_error(option: str, value: int) -> None:
    """A count that cannot work is refused with a message naming it."""
    with pytest.raises(ValueError, match=option):
        run_demo(**{option: value, "progress": False})  # type: ignore[arg-type]


def test_demo_logs_read_back_with_stokers_reader(tmp_path: Path) -> None:
    """Stoker's Reader finds the demo's runs and reads the same values TensorBoard does."""
    from stoker.tensorboard import Reader

    result = run_demo(workers=0, logdir=str(tmp_path), **TINY)  # type: ignore[arg-type]
    reader = Reader(str(tmp_path))
    assert sorted(reader.runs) == [".", "hparams"]
    acc = accumulate(tmp_path)
    for tag in ("train/loss", "val/accuracy", "lr"):
        series = reader.scalars(tag, run=".")
        expected = acc.Scalars(tag)  # type: ignore[attr-defined]
        assert list(series.step) == [e.step for e in expected]
        np.testing.assert_allclose(series.value, [e.value for e in expected], rtol=1e-6)
    assert reader.scalars("val/accuracy", run=".").value[-1] == pytest.approx(result.val_accuracy)
    assert len(reader.histograms("weights/w1", run=".")) == 2
    (samples,) = reader.images("samples", run=".")
    assert samples.to_numpy().ndim == 3
    report = reader.text("report", run=".")
    assert report[0].text.startswith("| epoch |")
    hparams = reader.hparams()
    assert hparams["hparams"].hparams["batch_size"] == 64
    assert set(hparams["hparams"].metrics) == {"hparam/val_accuracy", "hparam/val_loss"}
