"""Summary builders for media: images, images with boxes, figures, videos and audio.

Pixel conversion, PNG/GIF/WAV encoding and box drawing live in ``_image``, ``_video`` and
``_audio`` (which validate shapes, dtypes, dataformats and NaN); this module wraps their payloads
in ``Summary.Image``/``Summary.Audio`` values the way torch's writer does.
"""

from __future__ import annotations

from typing import Any

from stoker.tensorboard._audio import audio_summary_payload
from stoker.tensorboard._image import (
    ImagePayload,
    figure_to_hwc,
    image_summary_payload,
    to_hwc_uint8,
)
from stoker.tensorboard._summary import check_tag, summary_of, value_bytes
from stoker.tensorboard._video import video_to_gif


def _image_summary(tag: str, payload: ImagePayload) -> bytes:
    image = {
        "height": payload.height,
        "width": payload.width,
        "colorspace": payload.channels,
        "encoded_image_string": payload.encoded,
    }
    return summary_of(value_bytes(tag, {"image": image}))


def image(tag: str, img_tensor: Any, dataformats: str = "CHW") -> bytes:
    """Build an image ``Summary`` (PNG) from an array in ``dataformats`` layout."""
    check_tag(tag)
    return _image_summary(tag, image_summary_payload(img_tensor, dataformats))


def image_with_boxes(  # noqa: PLR0917 - mirrors torch's positional signature
    tag: str,
    img_tensor: Any,
    box_tensor: Any,
    rescale: float = 1,
    dataformats: str = "CHW",
    labels: Any = None,
) -> bytes:
    """Build an image ``Summary`` with boxes ``[x1, y1, x2, y2]`` (and labels) drawn on it."""
    check_tag(tag)
    if isinstance(labels, str):
        labels = [labels]
    if labels is not None:
        labels = [str(label) for label in labels]
    payload = image_summary_payload(
        img_tensor, dataformats, boxes=box_tensor, labels=labels, rescale=rescale
    )
    return _image_summary(tag, payload)


def figure(tag: str, figure: Any, close: bool = True) -> bytes:
    """Render a matplotlib figure (or a list of them, as a grid) into an image ``Summary``."""
    check_tag(tag)
    pixels = figure_to_hwc(figure, close=close)
    fmt = "NHWC" if pixels.ndim == 4 else "HWC"
    return _image_summary(tag, image_summary_payload(to_hwc_uint8(pixels, fmt), "HWC"))


def video(tag: str, vid_tensor: Any, fps: Any = 4) -> bytes:
    """Build an animated-GIF image ``Summary`` from an ``(N, T, C, H, W)`` array."""
    check_tag(tag)
    return _image_summary(tag, video_to_gif(vid_tensor, fps))


def audio(tag: str, snd_tensor: Any, sample_rate: Any = 44100) -> bytes:
    """Build a WAV audio ``Summary`` from mono samples in [-1, 1]."""
    check_tag(tag)
    payload = audio_summary_payload(snd_tensor, sample_rate)
    value = {
        "sample_rate": payload.sample_rate,
        "num_channels": payload.num_channels,
        "length_frames": payload.length_frames,
        "encoded_audio_string": payload.encoded,
        "content_type": payload.content_type,
    }
    return summary_of(value_bytes(tag, {"audio": value}))
