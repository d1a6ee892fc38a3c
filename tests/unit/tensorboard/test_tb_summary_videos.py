"""Video payloads: torch's frame grid and scaling, encoded as a GIF that decodes to those frames."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
from PIL import Image

from stoker.tensorboard._summary.videos import video_frames, video_to_gif

torch = pytest.importorskip("torch")
tb_utils = pytest.importorskip("torch.utils.tensorboard._utils")


def _torch_frames(videos: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """What torch's video() hands to moviepy: _prepare_video, then its scale, clip and cast."""
    grid = tb_utils._prepare_video(videos.copy())
    scale = 1 if grid.dtype == np.uint8 else 255
    return (grid.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def _decoded_frames(gif: bytes) -> list[np.ndarray[Any, Any]]:
    image = Image.open(io.BytesIO(gif))
    frames = []
    for index in range(image.n_frames):
        image.seek(index)
        frames.append(np.asarray(image.convert("RGB")))
    return frames


def _palette_video(shape: tuple[int, int, int, int], colors: int, seed: int = 0) -> Any:
    """(N, T, 3, H, W) uint8 videos drawn from ``colors`` random colours."""
    rng = np.random.default_rng(seed)
    palette = rng.integers(0, 256, (colors, 3), dtype=np.uint8)
    return palette[rng.integers(0, colors, shape)].transpose(0, 1, 4, 2, 3)


@pytest.mark.parametrize("count", [1, 2, 3, 5, 6, 8, 16])
@pytest.mark.parametrize(("channels", "dtype"), [(3, np.float32), (1, np.float64), (3, np.uint8)])
def test_frames_match_torch_grid(count: int, channels: int, dtype: Any) -> None:
    """Batches of every size are padded and tiled into torch's grid with torch's pixel values."""
    rng = np.random.default_rng(count)
    if dtype == np.uint8:
        videos = rng.integers(0, 256, (count, 3, channels, 5, 7)).astype(np.uint8)
    else:
        videos = (rng.random((count, 3, channels, 5, 7)) * 1.2 - 0.1).astype(dtype)
    np.testing.assert_array_equal(video_frames(videos), _torch_frames(videos))


def test_gif_stores_frames_with_few_colours_exactly() -> None:
    """Frames of at most 256 colours decode to exactly the grid frames, one GIF frame each."""
    videos = _palette_video((3, 5, 8, 9), colors=200)
    payload = video_to_gif(videos, fps=4)
    expected = _torch_frames(videos)
    decoded = _decoded_frames(payload.encoded)
    assert len(decoded) == expected.shape[0]
    for frame, want in zip(decoded, expected, strict=True):
        np.testing.assert_array_equal(frame, want)
    assert (payload.height, payload.width, payload.channels) == (8, 36, 3)


@pytest.mark.parametrize(("fps", "duration"), [(4, 250), (10, 100), (2.5, 400)])
def test_gif_timing_and_looping(fps: float, duration: int) -> None:
    """Each frame lasts 1000 / fps ms and the animation loops forever."""
    image = Image.open(io.BytesIO(video_to_gif(_palette_video((1, 3, 4, 4), 5), fps=fps).encoded))
    assert image.info["loop"] == 0
    assert image.info["duration"] == duration


def test_gif_of_many_colours_is_close() -> None:
    """Frames with more than 256 colours are quantized with a small error on smooth content."""
    ramp = np.linspace(0, 1, 48, dtype=np.float32)
    frame = np.stack([np.add.outer(ramp, ramp) / 2, np.add.outer(ramp, 1 - ramp) / 2])
    frame = np.concatenate([frame, np.outer(ramp, ramp)[None]])
    videos = np.stack([frame * (0.5 + step / 4) for step in range(3)])[None]
    expected = video_frames(videos)
    assert len(np.unique(expected[0].reshape(-1, 3), axis=0)) > 256
    decoded = _decoded_frames(video_to_gif(videos).encoded)
    assert len(decoded) == 3
    for got, want in zip(decoded, expected, strict=True):
        assert np.abs(got.astype(int) - want).mean() < 6


def test_gray_and_alpha_videos() -> None:
    """One-channel video is stored as exact gray frames; an alpha channel is dropped."""
    rng = np.random.default_rng(3)
    gray = rng.integers(0, 256, (2, 3, 1, 6, 6)).astype(np.uint8)
    payload = video_to_gif(gray)
    assert payload.channels == 1
    for frame, want in zip(_decoded_frames(payload.encoded), video_frames(gray), strict=True):
        np.testing.assert_array_equal(frame[:, :, 0], want[:, :, 0])
    rgba = np.concatenate(
        [_palette_video((1, 2, 5, 5), 20), np.zeros((1, 2, 1, 5, 5), np.uint8)], 2
    )
    payload = video_to_gif(rgba)
    assert payload.channels == 4
    for frame, want in zip(_decoded_frames(payload.encoded), video_frames(rgba), strict=True):
        np.testing.assert_array_equal(frame, want[:, :, :3])


def test_torch_tensor_input() -> None:
    """A torch tensor gives the same frames as its NumPy copy."""
    tensor = torch.rand(2, 3, 3, 4, 5, generator=torch.Generator().manual_seed(0))
    np.testing.assert_array_equal(video_frames(tensor), _torch_frames(tensor.numpy()))


@pytest.mark.parametrize(
    ("array", "fps", "error", "match"),
    [
        (np.zeros((2, 3, 4, 4)), 4, ValueError, "5 dimensions"),
        (np.zeros((1, 0, 3, 4, 4)), 4, ValueError, "empty"),
        (np.zeros((1, 2, 5, 4, 4)), 4, ValueError, "1 to 4 channels"),
        (np.full((1, 2, 3, 4, 4), np.nan), 4, ValueError, "NaN"),
        (np.zeros((1, 2, 3, 4, 4)), 0, ValueError, "fps"),
        (np.zeros((1, 2, 3, 4, 4)), float("nan"), ValueError, "fps"),
        (np.zeros((1, 2, 3, 4, 4)), "4", TypeError, "fps"),
        (np.zeros((1, 2, 3, 4, 4)), True, TypeError, "fps"),
    ],
)
def test_bad_input_raises(array: Any, fps: Any, error: type[Exception], match: str) -> None:
    """Wrong shapes, NaN and bad frame rates raise errors naming the argument."""
    with pytest.raises(error, match=match):
        video_to_gif(array, fps=fps)
