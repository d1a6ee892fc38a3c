"""Audio payloads: WAV bytes and Summary.Audio fields identical to torch's add_audio."""

from __future__ import annotations

import io
import wave
from typing import Any

import numpy as np
import pytest

from stoker.tensorboard._summary.wav import audio_summary_payload, encode_wav

torch = pytest.importorskip("torch")
tb_summary = pytest.importorskip("torch.utils.tensorboard.summary")


def _samples(shape: tuple[int, ...], dtype: str = "float32", seed: int = 0) -> Any:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, shape).astype(dtype)


CASES = [
    (_samples((1000,)), 44100),
    (_samples((1, 777), "float64"), 16000),
    (_samples((513, 1)), 8000),
    (_samples((1, 1, 64)), 22050.4),
    (np.array([-1.0, -0.5, 0.0, 0.5, 1.0]), 44100),
    (np.array([1, 0, -1, 0], dtype=np.int64), 100),
]


@pytest.mark.parametrize(("samples", "sample_rate"), CASES)
def test_payload_matches_torch_audio(samples: Any, sample_rate: float) -> None:
    """The WAV bytes and every Summary.Audio field equal torch's for the same samples."""
    expected = tb_summary.audio("t", samples, sample_rate=sample_rate).value[0].audio
    payload = audio_summary_payload(samples, sample_rate)
    assert payload.encoded == expected.encoded_audio_string
    assert payload.sample_rate == pytest.approx(expected.sample_rate)
    assert payload.num_channels == expected.num_channels
    assert payload.length_frames == expected.length_frames
    assert payload.content_type == expected.content_type
    assert encode_wav(samples, sample_rate) == expected.encoded_audio_string


def test_torch_tensor_matches_torch() -> None:
    """A torch tensor (with grad) is encoded exactly as torch encodes it."""
    tensor = torch.rand(1, 300, generator=torch.Generator().manual_seed(0), requires_grad=True)
    expected = tb_summary.audio("t", tensor.detach() * 2 - 1).value[0].audio
    assert encode_wav(tensor * 2 - 1) == expected.encoded_audio_string


def test_out_of_range_samples_are_clipped_with_a_warning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Samples beyond [-1, 1] are clipped (with a warning) to torch's bytes."""
    samples = np.array([-3.0, -1.0, 0.25, 1.5, 2.0])
    expected = tb_summary.audio("t", samples).value[0].audio.encoded_audio_string
    capsys.readouterr()  # torch prints its own warning
    with pytest.warns(UserWarning, match="clipped"):
        assert encode_wav(samples) == expected


def test_wav_reads_back_with_the_wave_module() -> None:
    """The header describes mono 16-bit PCM at the rate, and the frames are the scaled samples."""
    samples = np.array([0.0, 0.5, -0.5, 1.0, -1.0], dtype=np.float32)
    with wave.open(io.BytesIO(encode_wav(samples, 8000)), "rb") as reader:
        assert (reader.getnchannels(), reader.getsampwidth(), reader.getframerate()) == (1, 2, 8000)
        frames = np.frombuffer(reader.readframes(reader.getnframes()), dtype="<i2")
    np.testing.assert_array_equal(frames, [0, 16383, -16383, 32767, -32767])


def test_float16_full_scale_does_not_wrap() -> None:
    """float16 samples of +-1.0 become +-32767 (torch's float16 arithmetic would wrap)."""
    samples = np.array([1.0, -1.0, 0.5], dtype=np.float16)
    with wave.open(io.BytesIO(encode_wav(samples)), "rb") as reader:
        frames = np.frombuffer(reader.readframes(3), dtype="<i2")
    np.testing.assert_array_equal(frames, [32767, -32767, 16383])


@pytest.mark.parametrize(
    ("samples", "sample_rate", "error", "match"),
    [
        (np.zeros((2, 10)), 44100, ValueError, "one-dimensional"),
        (np.zeros((0,)), 44100, ValueError, "empty"),
        (np.array([0.0, np.nan]), 44100, ValueError, "NaN"),
        (np.zeros(4), 0, ValueError, "sample_rate"),
        (np.zeros(4), -8000, ValueError, "sample_rate"),
        (np.zeros(4), float("inf"), ValueError, "sample_rate"),
        (np.zeros(4), 0.2, ValueError, "sample_rate"),
        (np.zeros(4), "44100", TypeError, "sample_rate"),
        (np.zeros(4), True, TypeError, "sample_rate"),
        ("noise.wav", 44100, TypeError, "snd_tensor"),
    ],
)
def test_bad_input_raises(
    samples: Any, sample_rate: Any, error: type[Exception], match: str
) -> None:
    """Several channels, empty or NaN samples and bad rates raise errors naming the argument."""
    with pytest.raises(error, match=match):
        audio_summary_payload(samples, sample_rate)
