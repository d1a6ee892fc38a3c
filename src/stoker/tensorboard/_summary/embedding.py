r"""Write the projector files of ``add_embedding``: tensors, metadata, sprite and config entry.

The layout is torch 2.13's (``writer.add_embedding`` and ``_embedding.py``), which the
TensorBoard projector plugin reads:

- ``<logdir>/<step:05>/<tag with %, / and \ percent-encoded>/tensors.tsv``: one row per point,
  each value as Python's ``str`` of the element, tab-separated.
- ``metadata.tsv`` next to it: one label per line, or a header row and tab-joined columns.
- ``sprite.png``: the label images tiled ceil(sqrt(N)) per row on a square canvas,
  float pixels scaled by 255 in float64, clipped and truncated.
- ``<logdir>/projector_config.pbtxt``: one ``embeddings { ... }`` block in protobuf text format
  per call. torch rewrites the whole file from the blocks its writer has collected; appending
  gives the same file for one writer and keeps the blocks of earlier writers in the same log dir.
  Each block is appended with one ``write`` on a file opened with ``O_APPEND``, so writers in
  several processes add their blocks without overwriting each other's.

A URL log dir passes a *store* (``_destination.RemoteDestination``) that writes the files to
the object store instead; it appends to the config by reading and rewriting it, so two
processes adding embeddings to one URL run at the same instant can lose an entry (give each
rank its own run with ``rank_writer``).

Everything is validated before the first file is written, so a bad call leaves no partial
embedding behind.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from stoker import _torch
from stoker.tensorboard._png import encode_png
from stoker.tensorboard._summary.inputs import as_numpy
from stoker.tensorboard._summary.pixels import tile_into

__all__ = ["EmbeddingStore", "embedding_subdir", "projector_block", "write_embedding"]

_CONFIG_NAME = "projector_config.pbtxt"
# Protobuf text format escapes (as_utf8): C escapes for these, octal for other ASCII controls.
_TEXT_ESCAPES = {i: f"\\{i:03o}" for i in [*range(32), 127]} | {
    ord("\t"): "\\t",
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    ord('"'): '\\"',
    ord("'"): "\\'",
    ord("\\"): "\\\\",
}


class EmbeddingStore(Protocol):
    """Where the projector files go; paths are relative to the log dir, with "/" separators."""

    def is_dir(self, relpath: str) -> bool:
        """Tell whether ``relpath`` is a directory."""

    def is_file(self, relpath: str) -> bool:
        """Tell whether ``relpath`` is a file."""

    def describe(self, relpath: str) -> str:
        """The full path or URL of ``relpath``, for messages."""

    def write_bytes(self, relpath: str, data: bytes) -> None:
        """Write (or replace) a file, creating its directories."""

    def append_bytes(self, relpath: str, data: bytes) -> None:
        """Append to a file, creating it if missing."""


class _LocalStore:
    """The projector files of a local log dir."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _path(self, relpath: str) -> Path:
        return self.root.joinpath(*relpath.split("/"))

    def is_dir(self, relpath: str) -> bool:
        return self._path(relpath).is_dir()

    def is_file(self, relpath: str) -> bool:
        return self._path(relpath).exists() and not self._path(relpath).is_dir()

    def describe(self, relpath: str) -> str:
        return str(self._path(relpath))

    def write_bytes(self, relpath: str, data: bytes) -> None:
        path = self._path(relpath)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def append_bytes(self, relpath: str, data: bytes) -> None:
        path = self._path(relpath)
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(path, flags, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)


def _quote(text: str) -> str:
    return '"' + text.translate(_TEXT_ESCAPES) + '"'


def _step_text(global_step: Any) -> str:
    if global_step is None:
        return "00000"
    if isinstance(global_step, bool) or not isinstance(global_step, (int, np.integer)):
        raise TypeError(f"global_step must be an int or None, got {global_step!r}")
    return str(int(global_step)).zfill(5)


def embedding_subdir(tag: str, global_step: Any = None) -> str:
    r"""The embedding's directory relative to the log dir, with "/" separators.

    Args:
        tag: Embedding name; ``%``, ``/`` and ``\`` are percent-encoded.
        global_step: Step (None means 0), zero-padded to five digits.

    Returns:
        For example ``"00007/default"``.
    """
    if not isinstance(tag, str):
        raise TypeError(f"tag must be a str, got {tag!r}")
    encoded = tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")
    return f"{_step_text(global_step)}/{encoded}"


def projector_block(
    tag: str,
    global_step: Any = None,
    *,
    has_metadata: bool = False,
    sprite_size: tuple[int, int] | None = None,
) -> str:
    """One ``embeddings { ... }`` entry of projector_config.pbtxt, as protobuf prints it.

    Args:
        tag: Embedding name.
        global_step: Step (None means 0).
        has_metadata: Whether metadata.tsv was written.
        sprite_size: (width, height) of one label image when sprite.png was written.

    Returns:
        The text block, ending with a newline.
    """
    subdir = embedding_subdir(tag, global_step)
    lines = ["embeddings {", f"  tensor_name: {_quote(f'{tag}:{_step_text(global_step)}')}"]
    if has_metadata:
        lines.append(f"  metadata_path: {_quote(subdir + '/metadata.tsv')}")
    if sprite_size is not None:
        lines += [
            "  sprite {",
            f"    image_path: {_quote(subdir + '/sprite.png')}",
            f"    single_image_dim: {sprite_size[0]}",
            f"    single_image_dim: {sprite_size[1]}",
            "  }",
        ]
    lines += [f"  tensor_path: {_quote(subdir + '/tensors.tsv')}", "}", ""]
    return "\n".join(lines)


def _metadata_text(metadata: Any, header: Sequence[Any] | None, count: int) -> str:
    if isinstance(metadata, np.ndarray):
        metadata = metadata.tolist()
    elif _torch.is_tensor(metadata):
        metadata = as_numpy(metadata, "metadata").tolist()
    if isinstance(metadata, (str, bytes)) or not isinstance(metadata, Sequence):
        raise TypeError(f"metadata must be a list with one entry per row, got {metadata!r}")
    if len(metadata) != count:
        raise ValueError(
            f"metadata must have one entry per row of mat ({count}), got {len(metadata)}"
        )
    if not header:
        return "".join(f"{label}\n" for label in metadata)
    rows = []
    for index, row in enumerate(metadata):
        if isinstance(row, str) or not isinstance(row, Sequence) or len(row) != len(header):
            raise ValueError(
                f"metadata[{index}] must be a list of {len(header)} values to match "
                f"metadata_header, got {row!r}"
            )
        rows.append(row)
    return "".join("\t".join(str(value) for value in row) + "\n" for row in [header, *rows])


def _sprite(label_img: Any, count: int) -> tuple[bytes, tuple[int, int]]:
    """sprite.png's bytes and (width, height) of one image."""
    images = as_numpy(label_img, "label_img")
    if images.ndim != 4 or images.shape[1] not in (1, 3) or 0 in images.shape[1:]:
        raise ValueError(
            f"label_img must have shape (N, C, H, W) with C in (1, 3), got shape {images.shape}"
        )
    if images.shape[0] != count:
        raise ValueError(
            f"label_img must have one image per row of mat ({count}), got {images.shape[0]}"
        )
    _, _, height, width = images.shape
    side = math.isqrt(count)
    cols = side if side * side == count else side + 1
    rows = -(-count // cols)
    # The square canvas is as wide as the grid and tall enough for it (torch assumes H <= W).
    canvas_height = max(cols * width, rows * height)
    canvas = np.zeros((canvas_height, cols * width, 3), dtype=np.uint8)
    grid = canvas[: rows * height].reshape(rows, height, cols, width, 3)
    if images.dtype == np.uint8:
        pixels: npt.NDArray[Any] = images
    else:
        with np.errstate(over="ignore"):
            pixels = np.multiply(images, 255.0, dtype=np.float64)
        if np.isnan(np.min(pixels)):
            raise ValueError("label_img must not contain NaN")
        np.clip(pixels, 0, 255, out=pixels)
    tile_into(grid, pixels.transpose(0, 2, 3, 1))
    return encode_png(canvas, level=6), (width, height)


def write_embedding(  # noqa: PLR0917 - positional order agreed with SummaryWriter.add_embedding
    logdir: str | os.PathLike[str],
    mat: Any,
    metadata: Any = None,
    label_img: Any = None,
    metadata_header: Sequence[Any] | None = None,
    tag: str = "default",
    global_step: Any = None,
    *,
    store: EmbeddingStore | None = None,
) -> None:
    """Write one embedding for TensorBoard's projector, as ``add_embedding`` does.

    Args:
        logdir: The run's log directory.
        mat: (N, D) matrix, one row per point.
        metadata: N labels (any values, written with ``str``), or with ``metadata_header`` N
            lists of column values.
        label_img: (N, C, H, W) images (C in 1, 3) for the sprite; floats in [0, 1], or
            ``uint8`` in [0, 255] (torch would scale ``uint8`` by 255 too, saturating it).
        metadata_header: Column names for multi-column metadata.
        tag: Embedding name.
        global_step: Step (None means 0).
        store: Where to write the files; default the local directory ``logdir``.

    Raises:
        TypeError: If an argument has the wrong type.
        ValueError: If ``mat`` is not a finite non-empty 2-D matrix, or ``metadata`` /
            ``label_img`` do not have one entry per row.
        NotADirectoryError: If the embedding's directory exists as a file.

    Warns:
        UserWarning: When the embedding's directory already exists (its files are replaced).
    """
    subdir = embedding_subdir(tag, global_step)
    matrix = as_numpy(mat, "mat")
    if matrix.ndim != 2 or 0 in matrix.shape:
        raise ValueError(
            f"mat must be a non-empty 2-D matrix (N points, D features), got shape "
            f"{matrix.shape}; reshape it with .reshape(N, -1)"
        )
    if matrix.dtype.kind == "f" and not np.isfinite(matrix).all():
        raise ValueError("mat must contain only finite values, got NaN or inf")
    count = matrix.shape[0]
    metadata_text = None if metadata is None else _metadata_text(metadata, metadata_header, count)
    sprite = None if label_img is None else _sprite(label_img, count)
    tensors_text = "".join("\t".join(map(str, row)) + "\n" for row in matrix.tolist())

    files = store if store is not None else _LocalStore(logdir)
    if files.is_dir(subdir):
        warnings.warn(
            f"embedding directory {files.describe(subdir)!r} already exists and is overwritten; "
            "pass a different global_step or tag to keep both",
            stacklevel=2,
        )
    elif files.is_file(subdir):
        raise NotADirectoryError(
            f"{files.describe(subdir)!r} exists but is a file; remove it or change tag"
        )
    if metadata_text is not None:
        files.write_bytes(f"{subdir}/metadata.tsv", metadata_text.encode("utf-8"))
    if sprite is not None:
        files.write_bytes(f"{subdir}/sprite.png", sprite[0])
    files.write_bytes(f"{subdir}/tensors.tsv", tensors_text.encode("utf-8"))
    block = projector_block(
        tag,
        global_step,
        has_metadata=metadata_text is not None,
        sprite_size=None if sprite is None else sprite[1],
    )
    files.append_bytes(_CONFIG_NAME, block.encode("utf-8"))
