"""TF2-layout summaries: tensor histograms, images and audio, converted to the classic values.

TensorFlow 2's ``tf.summary`` ops, and TensorBoard's ``data_compat`` when it upgrades classic
values, store these kinds as a ``tensor`` whose metadata names the plugin (layouts checked in
the ``tensorboard`` package's ``plugins/*/summary_v2.py`` and ``data_compat.py``):

- ``histograms``: a float tensor of shape ``[k, 3]``, one row ``(left edge, right edge, count)``
  per bucket.
- ``images``: a string tensor ``[width, height, png_1, png_2, ...]``, width and height as
  decimal ASCII.
- ``audio``: a string tensor of shape ``[k, 2]``, one row ``(encoded wav, label)`` per clip;
  TensorBoard's ``dataclass_compat`` projects it to the clips alone, shape ``[k]``, which is
  read too.

Each function returns the classic values (:class:`HistogramEvent`, :class:`ImageEvent`,
:class:`AudioEvent`), or ``None`` when the tensor does not have the layout, in which case the
reader keeps it as a plain tensor.
"""

from __future__ import annotations

import io
import struct
import wave
from typing import Any

import numpy as np

from stoker.tensorboard._png import png_channels
from stoker.tensorboard._proto import WAV_CONTENT_TYPE
from stoker.tensorboard._read.values import AudioEvent, HistogramEvent, ImageEvent

__all__ = ["audio_from_tensor", "histogram_from_tensor", "images_from_tensor"]

_FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")


def histogram_from_tensor(
    step: int, wall_time: float, dtype: str, value: np.ndarray[Any, Any]
) -> HistogramEvent | None:
    """Turn a ``[k, 3]`` bucket tensor into a :class:`HistogramEvent` with estimated moments.

    ``bucket_limit`` is the right edges, ``bucket`` the counts, ``min`` the first left edge,
    ``max`` the last right edge and ``num`` the sum of the counts. The tensor does not keep the
    sum and the sum of squares; they are estimated from bucket centres and ``stats_estimated``
    is set. With no buckets every statistic is ``0.0``.
    """
    if dtype not in _FLOAT_DTYPES or value.ndim != 2 or value.shape[1] != 3:
        return None
    rows = value.astype(np.float64)
    lefts, rights, counts = rows[:, 0], rows[:, 1], rows[:, 2]
    if rows.shape[0] == 0:
        low = high = 0.0
    else:
        low, high = float(lefts[0]), float(rights[-1])
    centres = (lefts + rights) / 2
    return HistogramEvent(
        step,
        wall_time,
        min=low,
        max=high,
        num=float(counts.sum()),
        sum=float((counts * centres).sum()),
        sum_squares=float((counts * centres * centres).sum()),
        bucket_limit=np.ascontiguousarray(rights),
        bucket=np.ascontiguousarray(counts),
        stats_estimated=True,
    )


def images_from_tensor(
    step: int, wall_time: float, dtype: str, value: np.ndarray[Any, Any]
) -> list[ImageEvent] | None:
    """Turn a ``[width, height, png...]`` string tensor into one :class:`ImageEvent` per image.

    ``colorspace`` is read from each PNG's header (the tensor does not record it), 0 for other
    formats.
    """
    if dtype != "string" or value.ndim != 1 or value.shape[0] < 2:
        return None
    try:
        width, height = int(value[0]), int(value[1])
    except ValueError:
        return None
    if width < 0 or height < 0:
        return None
    return [
        ImageEvent(step, wall_time, width, height, png_channels(encoded), bytes(encoded))
        for encoded in value[2:]
    ]


def _wav_header(encoded: bytes) -> tuple[float, int, int]:
    """Sample rate, channels and frames of a WAV clip; zeros when it is not readable WAV."""
    try:
        with wave.open(io.BytesIO(encoded)) as clip:
            return float(clip.getframerate()), clip.getnchannels(), clip.getnframes()
    except (wave.Error, EOFError, ValueError, RuntimeError, struct.error):
        # ``wave`` raises RuntimeError or struct.error on some truncated chunks.
        return 0.0, 0, 0


def audio_from_tensor(
    step: int, wall_time: float, dtype: str, value: np.ndarray[Any, Any]
) -> list[AudioEvent] | None:
    """Turn a ``[k, 2]`` string tensor of ``(wav, label)`` into one :class:`AudioEvent` per clip.

    A ``[k]`` tensor of clips alone is read the same way. Sample rate, channels and frames come
    from each clip's WAV header (zeros, and an empty ``content_type``, when it is not WAV).
    Labels are not kept.
    """
    if dtype != "string" or value.ndim not in (1, 2) or (value.ndim == 2 and value.shape[1] != 2):
        return None
    clips = []
    for encoded in value if value.ndim == 1 else value[:, 0]:
        data = bytes(encoded)
        rate, channels, frames = _wav_header(data)
        content_type = WAV_CONTENT_TYPE if channels else ""
        clips.append(AudioEvent(step, wall_time, rate, channels, frames, content_type, data))
    return clips
