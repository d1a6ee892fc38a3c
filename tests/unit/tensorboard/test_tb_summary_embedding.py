"""Projector files: byte-identical to torch's add_embedding, sprites pixel-identical."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

import stoker.tensorboard as stb
from stoker.tensorboard._summary.embedding import embedding_subdir, write_embedding

torch = pytest.importorskip("torch")
tb_writer = pytest.importorskip("torch.utils.tensorboard")


def _calls() -> list[dict[str, Any]]:
    generator = torch.Generator().manual_seed(0)
    return [
        {
            "mat": torch.randn(10, 3, generator=generator),
            "metadata": list("abcdefghij"),
            "label_img": torch.rand(10, 3, 5, 7, generator=generator),
            "tag": "x/y%z\\é\"'\n\x01\x7f",
        },
        {
            "mat": torch.randn(4, 3, generator=generator),
            "metadata": [["a", 1], ["b", 2.5], ["c", None], ["d", 4]],
            "metadata_header": ["name", "value"],
            "global_step": 7,
        },
        {
            "mat": torch.randn(5, 2, generator=generator).double(),
            "label_img": torch.rand(5, 1, 6, 6, generator=generator) * 1.2 - 0.1,
            "global_step": 123456,
        },
        {
            "mat": np.arange(12, dtype=np.int64).reshape(4, 3),
            "metadata": [1, 2, 3, 4],
            "tag": "ints",
            "global_step": 3,
        },
        {"mat": np.random.default_rng(0).random((16, 4)).astype(np.float32), "tag": "np"},
    ]


def _files(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.name.startswith("events.out")
    }


def _pixels(png: bytes) -> np.ndarray[Any, Any]:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def test_files_match_torch_add_embedding(tmp_path: Path) -> None:
    """Every file torch writes exists with the same bytes (sprites: the same pixels)."""
    torch_dir, our_dir = tmp_path / "torch", tmp_path / "ours"
    writer = tb_writer.SummaryWriter(str(torch_dir))
    for call in _calls():
        writer.add_embedding(**call)
    writer.close()
    our_dir.mkdir()
    for call in _calls():
        write_embedding(our_dir, **call)
    expected, ours = _files(torch_dir), _files(our_dir)
    assert sorted(ours) == sorted(expected)
    assert sum(name.endswith("sprite.png") for name in ours) == 2
    for name, content in expected.items():
        if name.endswith(".png"):
            np.testing.assert_array_equal(_pixels(ours[name]), _pixels(content))
        else:
            assert ours[name] == content, name


def test_config_parses_with_protobuf_text_format(tmp_path: Path) -> None:
    """The projector plugin's parser reads back every escaped string and sprite size."""
    pytest.importorskip("tensorboard")
    from google.protobuf import text_format
    from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig

    tag = "a\tb\"c\\d'é\x02"
    write_embedding(tmp_path, np.ones((2, 2)), ["p", "q"], np.zeros((2, 3, 4, 9)), tag=tag)
    config = text_format.Parse((tmp_path / "projector_config.pbtxt").read_text(), ProjectorConfig())
    (info,) = config.embeddings
    assert info.tensor_name == f"{tag}:00000"
    assert info.tensor_path == f"{embedding_subdir(tag)}/tensors.tsv"
    assert info.metadata_path == f"{embedding_subdir(tag)}/metadata.tsv"
    assert list(info.sprite.single_image_dim) == [9, 4]
    assert (tmp_path / embedding_subdir(tag) / "tensors.tsv").is_file()


def test_config_is_appended_and_earlier_entries_survive(tmp_path: Path) -> None:
    """Each call appends one block; text already in the config file is kept."""
    config = tmp_path / "projector_config.pbtxt"
    config.write_text('embeddings {\n  tensor_name: "old"\n}\n')
    write_embedding(tmp_path, np.ones((2, 2)), tag="a")
    write_embedding(tmp_path, np.ones((2, 2)), tag="b", global_step=1)
    text = config.read_text()
    assert text.startswith('embeddings {\n  tensor_name: "old"\n}\n')
    assert text.count("embeddings {") == 3
    assert text.index('"a:00000"') < text.index('"b:00001"')


def test_uint8_label_images_are_not_rescaled(tmp_path: Path) -> None:
    """uint8 label images keep their values in the sprite (torch would saturate them)."""
    images = np.random.default_rng(0).integers(0, 256, (4, 3, 3, 3)).astype(np.uint8)
    write_embedding(tmp_path, np.ones((4, 2)), label_img=images)
    sprite = _pixels((tmp_path / "00000" / "default" / "sprite.png").read_bytes())
    assert sprite.shape == (6, 6, 3)
    np.testing.assert_array_equal(sprite[:3, 3:], images[1].transpose(1, 2, 0))
    np.testing.assert_array_equal(sprite[3:, :3], images[2].transpose(1, 2, 0))


def test_tall_label_images_get_a_tall_sprite(tmp_path: Path) -> None:
    """Images taller than wide (where torch fails) fit: the canvas grows to hold the grid."""
    images = np.ones((3, 1, 8, 2), dtype=np.float32)
    write_embedding(tmp_path, np.ones((3, 2)), label_img=images)
    sprite = _pixels((tmp_path / "00000" / "default" / "sprite.png").read_bytes())
    assert sprite.shape == (16, 4, 3)
    assert (sprite[:, :, 0] == 255).sum() == 3 * 8 * 2


def test_existing_directory_warns_and_a_file_in_the_way_raises(tmp_path: Path) -> None:
    """Reusing step and tag warns; a file where the directory belongs raises."""
    write_embedding(tmp_path, np.ones((2, 2)))
    with pytest.warns(UserWarning, match="already exists"):
        write_embedding(tmp_path, np.zeros((2, 2)))
    assert (tmp_path / "00000" / "default" / "tensors.tsv").read_text() == "0.0\t0.0\n" * 2
    (tmp_path / "00001").mkdir()
    (tmp_path / "00001" / "default").write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file"):
        write_embedding(tmp_path, np.ones((2, 2)), global_step=1)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"mat": np.ones(3)}, ValueError, "2-D"),
        ({"mat": np.ones((0, 3))}, ValueError, "2-D"),
        ({"mat": np.array([[1.0, np.nan]])}, ValueError, "finite"),
        ({"mat": np.ones((2, 2)), "metadata": ["a"]}, ValueError, "one entry per row"),
        ({"mat": np.ones((2, 2)), "metadata": "ab"}, TypeError, "metadata"),
        (
            {"mat": np.ones((2, 2)), "metadata": [["a", 1], ["b"]], "metadata_header": ["n", "v"]},
            ValueError,
            r"metadata\[1\]",
        ),
        ({"mat": np.ones((2, 2)), "label_img": np.ones((3, 3, 2, 2))}, ValueError, "one image"),
        ({"mat": np.ones((2, 2)), "label_img": np.ones((2, 4, 2, 2))}, ValueError, "C in"),
        ({"mat": np.ones((2, 2)), "label_img": np.full((2, 1, 2, 2), np.nan)}, ValueError, "NaN"),
        ({"mat": np.ones((2, 2)), "tag": 5}, TypeError, "tag"),
        ({"mat": np.ones((2, 2)), "global_step": 1.5}, TypeError, "global_step"),
        ({"mat": [["a", "b"]]}, TypeError, "mat"),
    ],
)
def test_bad_input_raises_before_writing(
    tmp_path: Path, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    """Invalid arguments raise an error naming them and leave the log dir untouched."""
    with pytest.raises(error, match=match):
        write_embedding(tmp_path, **kwargs)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("metadata", "text"),
    [
        (torch.tensor([4, 5, 6]), "4\n5\n6\n"),
        (np.array(["x", "y", "z"]), "x\ny\nz\n"),
        (("a", 2, 3.5), "a\n2\n3.5\n"),
    ],
)
def test_metadata_arrays_are_written_as_plain_values(
    tmp_path: Path, metadata: Any, text: str
) -> None:
    """Tensors, NumPy arrays and tuples of labels are written one value per line."""
    write_embedding(tmp_path, np.ones((3, 2)), metadata=metadata)
    assert (tmp_path / "00000" / "default" / "metadata.tsv").read_text() == text


def test_projector_config_of_two_writers_keeps_both_blocks(tmp_path: Path) -> None:
    """Two writers adding embeddings to one log dir both keep their config entries."""
    first, second = stb.SummaryWriter(tmp_path), stb.SummaryWriter(tmp_path)
    first.add_embedding(np.eye(2), tag="a")
    second.add_embedding(np.eye(2), tag="b")
    first.add_embedding(np.eye(2), tag="c", global_step=1)
    first.close()
    second.close()
    config = (tmp_path / "projector_config.pbtxt").read_text()
    assert re.findall(r'tensor_name: "(\w):(\d+)"', config) == [
        ("a", "00000"),
        ("b", "00000"),
        ("c", "00001"),
    ]
