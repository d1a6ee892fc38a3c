"""Value types the reader hands back: scalar columns, tensors, histograms, media, text, hparams.

Every type carries ``step`` and ``wall_time``. Media keep their encoded bytes and decode only
when asked (:meth:`ImageEvent.to_numpy`, :meth:`AudioEvent.to_numpy`), so listing a log full of
images stays cheap.
"""

from __future__ import annotations

import io
import struct
import warnings
import wave
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from stoker.tensorboard._read.errors import EventFileError

__all__ = [
    "MAX_PIXEL_BYTES_PER_BYTE",
    "AudioEvent",
    "Event",
    "HParams",
    "HistogramEvent",
    "ImageEvent",
    "ScalarSeries",
    "TensorEvent",
    "TextEvent",
]

MAX_PIXEL_BYTES_PER_BYTE = 4096
"""Most decoded bytes an image may claim per encoded byte (zlib tops out near 1032, GIF's LZW
near 2730); a header claiming more is not decoded, so a small image cannot take gigabytes."""
_SMALL_IMAGE_BYTES = 1 << 20


class Event(NamedTuple):
    """One event as read from a file, for :func:`read_events`.

    Attributes:
        run: The run (directory relative to the root read, ``"."`` for the root itself).
        path: The event file.
        offset: Byte offset of the record in the file.
        wall_time: Seconds since the epoch.
        step: The global step.
        message: The whole ``Event`` decoded to a dict (see ``_proto.messages``): keys are the
            fields present, e.g. ``"file_version"``, ``"summary"``, ``"session_log"``.
    """

    run: str
    path: str
    offset: int
    wall_time: float
    step: int
    message: dict[str, Any]


class ScalarSeries(NamedTuple):
    """All points of one scalar tag, as NumPy columns of equal length, in file order.

    Attributes:
        step: ``int64`` steps.
        wall_time: ``float64`` seconds since the epoch.
        value: ``float64`` values (``simple_value`` float32 values widen exactly).
    """

    step: np.ndarray[Any, np.dtype[np.int64]]
    wall_time: np.ndarray[Any, np.dtype[np.float64]]
    value: np.ndarray[Any, np.dtype[np.float64]]


@dataclass(frozen=True)
class TensorEvent:
    """A tensor value.

    Attributes:
        step: The global step.
        wall_time: Seconds since the epoch.
        value: The tensor; ``bfloat16`` comes back as ``float32`` holding the same values.
        dtype: TensorFlow's name of the stored dtype (``"float32"``, ``"bfloat16"``, ...).
        plugin_name: The plugin the tag belongs to (``"tensor"``, ``"pr_curves"``, ...).
    """

    step: int
    wall_time: float
    value: np.ndarray[Any, Any]
    dtype: str
    plugin_name: str = ""


@dataclass(frozen=True)
class HistogramEvent:
    """A histogram: statistics and buckets, each bucket given by its right edge.

    Attributes:
        step: The global step.
        wall_time: Seconds since the epoch.
        min: Smallest value.
        max: Largest value.
        num: Number of values.
        sum: Sum of the values.
        sum_squares: Sum of their squares.
        bucket_limit: Right edge of every bucket.
        bucket: Count in every bucket.
        stats_estimated: ``True`` when ``sum`` and ``sum_squares`` were not recorded but
            estimated from bucket centres (TF2-style histograms, which keep only buckets).
    """

    step: int
    wall_time: float
    min: float
    max: float
    num: float
    sum: float
    sum_squares: float
    bucket_limit: np.ndarray[Any, np.dtype[np.float64]]
    bucket: np.ndarray[Any, np.dtype[np.float64]]
    stats_estimated: bool = False


@dataclass(frozen=True)
class ImageEvent:
    """An encoded image (PNG, or GIF for videos); decode it with :meth:`to_numpy`.

    Attributes:
        step: The global step.
        wall_time: Seconds since the epoch.
        width: Width in pixels, as recorded.
        height: Height in pixels, as recorded.
        colorspace: Channels as recorded (1 grey, 3 RGB, 4 RGBA).
        encoded: The encoded image bytes.
    """

    step: int
    wall_time: float
    width: int
    height: int
    colorspace: int
    encoded: bytes = field(repr=False)

    def to_numpy(self) -> np.ndarray[Any, np.dtype[np.uint8]]:
        """Decode the image with Pillow into an ``(H, W, C)`` ``uint8`` array (first frame).

        The size in the image's header is checked against its encoded bytes before Pillow
        allocates anything (see :data:`MAX_PIXEL_BYTES_PER_BYTE`), and Pillow's decompression
        bomb warning is an error here.

        Raises:
            EventFileError: If Pillow cannot decode the bytes, or the header claims more pixels
                than the bytes can hold.
        """
        from PIL import Image  # noqa: PLC0415 - decoded on demand only

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", Image.DecompressionBombWarning)
                with Image.open(io.BytesIO(self.encoded)) as opened:
                    width, height = opened.size
                    claimed = width * height * len(opened.getbands())
                    if claimed > MAX_PIXEL_BYTES_PER_BYTE * len(self.encoded) + _SMALL_IMAGE_BYTES:
                        raise EventFileError(
                            f"image at step {self.step} claims {width}x{height} pixels, more "
                            f"than its {len(self.encoded)} encoded bytes can hold"
                        )
                    opened.load()
                    image = opened
                    if image.mode not in ("L", "RGB", "RGBA"):
                        image = image.convert("RGBA" if "A" in image.getbands() else "RGB")
                    pixels = np.asarray(image, dtype=np.uint8)
        except EventFileError:
            raise
        except Exception as err:  # Pillow raises many exception types on corrupt input
            raise EventFileError(f"image at step {self.step} cannot be decoded: {err}") from err
        return pixels[:, :, None] if pixels.ndim == 2 else pixels


@dataclass(frozen=True)
class AudioEvent:
    """An encoded audio clip (WAV); decode it with :meth:`to_numpy`.

    Attributes:
        step: The global step.
        wall_time: Seconds since the epoch.
        sample_rate: Frames per second.
        num_channels: Channels.
        length_frames: Frames, as recorded.
        content_type: MIME type, ``"audio/wav"`` for what writers produce.
        encoded: The encoded audio bytes.
    """

    step: int
    wall_time: float
    sample_rate: float
    num_channels: int
    length_frames: int
    content_type: str
    encoded: bytes = field(repr=False)

    def to_numpy(self) -> np.ndarray[Any, np.dtype[np.float32]]:
        """Decode 8/16/32-bit PCM WAV into ``float32`` samples in [-1, 1], shape ``(frames, ch)``.

        Raises:
            EventFileError: If the bytes are not PCM WAV.
        """
        try:
            with wave.open(io.BytesIO(self.encoded)) as clip:
                channels = clip.getnchannels()
                width = clip.getsampwidth()
                frames = clip.readframes(clip.getnframes())
        except (wave.Error, EOFError, ValueError, RuntimeError, struct.error) as err:
            # ``wave`` raises RuntimeError or struct.error on some truncated chunks.
            raise EventFileError(f"audio at step {self.step} cannot be decoded: {err}") from err
        if channels < 1:
            raise EventFileError(f"audio at step {self.step} has {channels} channels")
        frames = frames[: len(frames) - len(frames) % (width * channels)] if width else b""
        samples: np.ndarray[Any, Any]
        if width == 1:
            samples = (np.frombuffer(frames, dtype=np.uint8).astype(np.float32) - 128) / 128
        elif width in (2, 4):
            ints = np.frombuffer(frames, dtype="<i2" if width == 2 else "<i4")
            samples = ints.astype(np.float32) / float(1 << (8 * width - 1))
        else:
            raise EventFileError(f"audio at step {self.step} has {width}-byte samples")
        usable = samples.size - samples.size % channels
        return np.asarray(samples[:usable].reshape(-1, channels), dtype=np.float32)


@dataclass(frozen=True)
class TextEvent:
    """A text-plugin value.

    Attributes:
        step: The global step.
        wall_time: Seconds since the epoch.
        text: The first string (the whole value for ``add_text``).
        value: Every string, with the tensor's shape.
    """

    step: int
    wall_time: float
    text: str
    value: np.ndarray[Any, Any] = field(repr=False)


@dataclass(frozen=True)
class HParams:
    """The hyperparameters of one run, as written by ``add_hparams``.

    Attributes:
        hparams: Name to value (``float``, ``str`` or ``bool``).
        metrics: Metric tags listed in the experiment summary.
        domains: Name to the discrete values a hyperparameter may take, where recorded.
    """

    hparams: dict[str, Any]
    metrics: list[str]
    domains: dict[str, list[Any]]
