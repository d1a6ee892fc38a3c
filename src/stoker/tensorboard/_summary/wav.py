"""Audio summaries: a mono waveform as a WAV ``Summary.Audio``.

Follows torch 2.13's ``summary.audio``: the samples are squeezed to one dimension, clipped to
[-1, 1] when any exceeds it (with a warning), multiplied by 32767 in the samples' own dtype
(float16 is first widened to float32, where torch would wrap a full-scale 1.0 to -32768) and
truncated to little-endian 16-bit PCM in a 44-byte RIFF/WAVE header, byte for byte what
Python's ``wave`` module writes for torch.
"""

from __future__ import annotations

import math
import struct
import warnings
from typing import Any, NamedTuple

import numpy as np

from stoker.tensorboard._proto import WAV_CONTENT_TYPE, summary_of, summary_value
from stoker.tensorboard._summary.inputs import as_numpy, check_tag

__all__ = ["AudioPayload", "audio", "audio_summary_payload", "encode_wav"]

_INT16_MAX = 32767


class AudioPayload(NamedTuple):
    """What ``Summary.Audio`` needs.

    Attributes:
        encoded: The WAV file's bytes.
        sample_rate: Samples per second, as given.
        num_channels: Always 1 (mono).
        length_frames: Number of samples.
        content_type: ``"audio/wav"``.
    """

    encoded: bytes
    sample_rate: float
    num_channels: int
    length_frames: int
    content_type: str


def _pcm16(samples: Any) -> np.ndarray[Any, np.dtype[np.int16]]:
    """Validate and convert samples to little-endian int16 as torch does."""
    wave = as_numpy(samples, "snd_tensor").squeeze()
    if wave.ndim != 1:
        raise ValueError(
            f"snd_tensor must be one-dimensional after squeezing (shape (L,) or (1, L)), got "
            f"shape {as_numpy(samples, 'snd_tensor').shape}; log one channel at a time"
        )
    if wave.size == 0:
        raise ValueError("snd_tensor must not be empty, got 0 samples")
    peak = np.abs(wave).max()
    if np.isnan(peak):
        raise ValueError(
            "snd_tensor must not contain NaN; replace NaN values (for example with "
            "np.nan_to_num) before logging"
        )
    if peak > 1:
        warnings.warn(
            f"snd_tensor amplitude {peak} is outside [-1, 1]; values were clipped",
            stacklevel=3,
        )
        wave = wave.clip(-1, 1)
    if wave.dtype == np.float16:
        # float16 cannot hold 32767 exactly (1.0 would wrap to -32768); torch keeps float16.
        wave = wave.astype(np.float32)
    return np.asarray(wave * _INT16_MAX).astype("<i2")


def _frame_rate(sample_rate: Any) -> int:
    """The WAV header's integer rate (rounded as ``wave`` does), validating ``sample_rate``."""
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, (int, float, np.number)):
        raise TypeError(f"sample_rate must be a number, got {sample_rate!r}")
    if not (math.isfinite(sample_rate) and sample_rate > 0):
        raise ValueError(f"sample_rate must be a positive finite number, got {sample_rate!r}")
    rate = round(float(sample_rate))
    if not 0 < rate < 1 << 31:
        raise ValueError(
            f"sample_rate must round to a rate from 1 to 2**31 - 1 Hz, got {sample_rate!r}"
        )
    return rate


def _wav(pcm: np.ndarray[Any, np.dtype[np.int16]], rate: int) -> bytes:
    data = pcm.tobytes()
    header = struct.pack(
        "<4sI4s4sIHHIIHH4sI",
        b"RIFF",
        36 + len(data),
        b"WAVE",
        b"fmt ",
        16,  # size of the PCM format block
        1,  # PCM
        1,  # channels
        rate,
        rate * 2,  # bytes per second
        2,  # bytes per frame
        16,  # bits per sample
        b"data",
        len(data),
    )
    return header + data


def encode_wav(samples: Any, sample_rate: float = 44100) -> bytes:
    """Encode mono samples in [-1, 1] as a 16-bit PCM WAV file, as ``add_audio`` does.

    Args:
        samples: Shape (L,) or anything that squeezes to it, such as (1, L).
        sample_rate: Samples per second (rounded to an integer in the header).

    Returns:
        The WAV file's bytes.

    Raises:
        TypeError: If the inputs have the wrong type.
        ValueError: If the samples are not one channel, are empty or hold NaN, or the rate is
            not positive.

    Warns:
        UserWarning: When samples outside [-1, 1] are clipped.
    """
    rate = _frame_rate(sample_rate)
    return _wav(_pcm16(samples), rate)


def audio_summary_payload(samples: Any, sample_rate: float = 44100) -> AudioPayload:
    """Build the fields of ``Summary.Audio`` for ``add_audio``.

    Args:
        samples: See :func:`encode_wav`.
        sample_rate: Samples per second.

    Returns:
        ``AudioPayload(encoded, sample_rate, num_channels, length_frames, content_type)``.
    """
    rate = _frame_rate(sample_rate)
    pcm = _pcm16(samples)
    return AudioPayload(_wav(pcm, rate), float(sample_rate), 1, int(pcm.shape[0]), WAV_CONTENT_TYPE)


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
    return summary_of(summary_value(tag, {"audio": value}))
