"""TF2-style tensor histograms, images and audio read back as classic values.

Files are built with the ``tensorboard`` package's own protos and helpers (``histogram_pb``,
``data_compat.migrate_value``, the plugins' metadata), since its ``summary_v2`` image and audio
ops need TensorFlow; its ``plugin_event_accumulator`` cross-checks what was written.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from stoker.tensorboard import Reader, SummaryWriter
from stoker.tensorboard._proto import frame_many

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


def _write_events(path: Path, events: list[Any]) -> Path:
    """Frame TensorBoard ``Event`` protos into one event file under ``path``."""
    from tensorboard.compat.proto import event_pb2

    path.mkdir(parents=True, exist_ok=True)
    head = event_pb2.Event(wall_time=1.0, file_version="brain.Event:2")
    payloads = [event.SerializeToString() for event in [head, *events]]
    (path / "events.out.tfevents.0.v2").write_bytes(frame_many(payloads))
    return path


def _event(step: int, summary: Any) -> Any:
    from tensorboard.compat.proto import event_pb2

    return event_pb2.Event(wall_time=100.0 + step, step=step, summary=summary)


def _plugin_tensors(path: Path, tag: str) -> list[Any]:
    """The tensors TensorBoard's plugin accumulator (which reads v2 data) holds for ``tag``."""
    from tensorboard.backend.event_processing import plugin_event_accumulator as pea
    from tensorboard.util import tensor_util

    accumulator = pea.EventAccumulator(str(path), size_guidance={pea.TENSORS: 0})
    accumulator.Reload()
    return [tensor_util.make_ndarray(e.tensor_proto) for e in accumulator.Tensors(tag)]


def _string_summary(tag: str, plugin: str, rows: Any) -> Any:
    """A v2 summary of a string tensor with the metadata TensorBoard's plugin writes."""
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.plugins.audio import metadata as audio_metadata
    from tensorboard.plugins.image import metadata as image_metadata
    from tensorboard.util import tensor_util

    if plugin == "images":
        metadata = image_metadata.create_summary_metadata(tag, "")
    else:
        wav = audio_metadata.Encoding.Value("WAV")
        metadata = audio_metadata.create_summary_metadata(tag, "", encoding=wav)
    tensor = tensor_util.make_tensor_proto(np.array(rows, dtype=object))
    value = summary_pb2.Summary.Value(tag=tag, metadata=metadata, tensor=tensor)
    return summary_pb2.Summary(value=[value])


def _png(pixels: np.ndarray[Any, Any]) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels.squeeze(-1) if pixels.shape[-1] == 1 else pixels).save(out, "PNG")
    return out.getvalue()


def _wav(samples: np.ndarray[Any, Any], rate: int) -> bytes:
    import wave

    out = io.BytesIO()
    with wave.open(out, "wb") as clip:
        clip.setnchannels(samples.shape[1])
        clip.setsampwidth(2)
        clip.setframerate(rate)
        clip.writeframes((samples * 32767).astype("<i2").tobytes())
    return out.getvalue()


def test_v2_histograms_come_back_as_histogram_events(tmp_path: Path) -> None:
    """``histogram_pb`` tensors become HistogramEvents: right edges, counts, min/max, num."""
    from tensorboard.plugins.histogram.summary_v2 import histogram_pb

    rng = np.random.default_rng(3)
    data = [rng.normal(loc=step, size=200 + step) for step in range(3)]
    events = [
        _event(step, histogram_pb("w", values, buckets=12)) for step, values in enumerate(data)
    ]
    path = _write_events(tmp_path, events)
    reader = Reader(path)
    assert "w" in reader.tags()["histograms"]
    assert "w" not in reader.tags()["tensors"]
    got = reader.histograms("w")
    stored = _plugin_tensors(path, "w")
    assert [h.step for h in got] == [0, 1, 2]
    for mine, rows, values in zip(got, stored, data, strict=True):
        assert rows.shape == (12, 3)
        assert mine.bucket_limit.tolist() == rows[:, 1].tolist()
        assert mine.bucket.tolist() == rows[:, 2].tolist()
        assert mine.num == values.size
        assert mine.min == pytest.approx(values.min(), abs=1e-12)
        assert mine.max == pytest.approx(values.max(), abs=1e-12)
        assert mine.stats_estimated
        width = (values.max() - values.min()) / 12
        assert abs(mine.sum - values.sum()) <= values.size * width / 2
        assert mine.sum_squares > 0


def test_v2_histogram_of_one_repeated_value_estimates_exact_moments(tmp_path: Path) -> None:
    """All-equal data gives zero-width buckets whose centres are the value: exact moments."""
    from tensorboard.plugins.histogram.summary_v2 import histogram_pb

    path = _write_events(tmp_path, [_event(5, histogram_pb("c", np.full(7, 2.5), buckets=4))])
    (hist,) = Reader(path).histograms("c")
    assert (hist.min, hist.max, hist.num) == (2.5, 2.5, 7.0)
    assert (hist.sum, hist.sum_squares) == (7 * 2.5, 7 * 2.5**2)


def test_classic_values_upgraded_by_data_compat_read_the_same(tmp_path: Path) -> None:
    """Classic histo/image/audio and their ``data_compat`` v2 forms give the same values."""
    from tensorboard import data_compat
    from tensorboard.backend.event_processing import event_file_loader
    from tensorboard.compat.proto import summary_pb2

    rng = np.random.default_rng(4)
    classic = tmp_path / "classic"
    with SummaryWriter(str(classic)) as writer:
        writer.add_histogram("h", rng.normal(size=300), 1)
        writer.add_image("i", rng.integers(0, 255, size=(3, 5, 4), dtype=np.uint8), 2)
        writer.add_audio("a", rng.uniform(-1, 1, size=120).astype(np.float32), 3, 8000)
    upgraded = []
    for path in sorted(classic.iterdir()):
        for event in event_file_loader.LegacyEventFileLoader(str(path)).Load():
            if event.HasField("summary"):
                values = [data_compat.migrate_value(value) for value in event.summary.value]
                event.summary.CopyFrom(summary_pb2.Summary(value=values))
                upgraded.append(event)
    assert {value.tensor.dtype for e in upgraded for value in e.summary.value} != {0}
    old, new = Reader(classic), Reader(_write_events(tmp_path / "v2", upgraded))
    for kind in ("histograms", "images", "audio"):
        assert new.tags()[kind] == old.tags()[kind]
    assert new.tags()["tensors"] == []
    (was,) = old.histograms("h")
    (now,) = new.histograms("h")
    assert (now.step, now.num) == (was.step, was.num)
    assert (now.min, now.max) == (np.float32(was.min), np.float32(was.max))
    nonempty = np.flatnonzero(was.bucket)
    inner = slice(nonempty[0], nonempty[-1] + 1)
    assert now.bucket.tolist() == was.bucket[inner].tolist()
    inner_edges = was.bucket_limit[nonempty[0] : nonempty[-1]].astype(np.float32)
    assert now.bucket_limit[:-1].tolist() == inner_edges.tolist()
    for image_was, image_now in zip(old.images("i"), new.images("i"), strict=True):
        fields = ("step", "width", "height", "colorspace", "encoded")
        assert [getattr(image_now, f) for f in fields] == [getattr(image_was, f) for f in fields]
    for clip_was, clip_now in zip(old.audio("a"), new.audio("a"), strict=True):
        fields = ("step", "sample_rate", "num_channels", "length_frames", "content_type")
        assert [getattr(clip_now, f) for f in fields] == [getattr(clip_was, f) for f in fields]
        assert np.array_equal(clip_now.to_numpy(), clip_was.to_numpy())


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_v2_images_give_one_image_event_per_picture(tmp_path: Path, channels: int) -> None:
    """A ``[w, h, png, png]`` tensor yields two ImageEvents decoding to the pictures."""
    rng = np.random.default_rng(channels)
    pictures = [rng.integers(0, 255, size=(4, 6, channels), dtype=np.uint8) for _ in range(2)]
    rows = [b"6", b"4", *[_png(picture) for picture in pictures]]
    path = _write_events(tmp_path, [_event(9, _string_summary("pics", "images", rows))])
    reader = Reader(path)
    assert reader.tags()["images"] == ["pics"]
    assert len(_plugin_tensors(path, "pics")[0]) == 4
    got = reader.images("pics")
    assert len(got) == 2
    for image, picture in zip(got, pictures, strict=True):
        assert (image.step, image.width, image.height, image.colorspace) == (9, 6, 4, channels)
        assert np.array_equal(image.to_numpy(), picture)


@pytest.mark.parametrize("labelled", [True, False])
def test_v2_audio_gives_one_audio_event_per_clip(tmp_path: Path, labelled: bool) -> None:
    """A ``[k, 2]`` (wav, label) tensor, or its ``[k]`` projection, yields k AudioEvents.

    A ``[k, 2]`` (wav, label) tensor, or TensorBoard's ``[k]`` projection of it, yields k
    AudioEvents with the WAV header's facts.
    """
    rng = np.random.default_rng(7)
    clips = [rng.uniform(-1, 1, size=(50 + 10 * i, 2)).astype(np.float32) for i in range(3)]
    rows: list[Any] = [[_wav(clip, 16000), f"clip {i}".encode()] for i, clip in enumerate(clips)]
    if not labelled:
        rows = [row[0] for row in rows]
    path = _write_events(tmp_path, [_event(4, _string_summary("snd", "audio", rows))])
    reader = Reader(path)
    assert reader.tags()["audio"] == ["snd"]
    assert _plugin_tensors(path, "snd")[0].tolist() == [_wav(clip, 16000) for clip in clips]
    got = reader.audio("snd")
    assert [(c.sample_rate, c.num_channels, c.length_frames) for c in got] == [
        (16000.0, 2, len(clip)) for clip in clips
    ]
    assert all(c.content_type == "audio/wav" and c.step == 4 for c in got)
    for clip_event, clip in zip(got, clips, strict=True):
        assert np.allclose(clip_event.to_numpy(), clip, atol=3 / 32768)


@pytest.mark.parametrize(
    ("plugin", "rows"),
    [
        ("histograms", np.zeros((4,), dtype=np.float64)),
        ("histograms", np.zeros((2, 2), dtype=np.float64)),
        ("images", np.array([b"x", b"4", b"png"], dtype=object)),
        ("images", np.array([b"8"], dtype=object)),
        ("audio", np.array([[[b"wav"]]], dtype=object)),
        ("audio", np.array([[b"wav", b"label", b"x"]], dtype=object)),
        ("audio", np.zeros((2, 2), dtype=np.float32)),
    ],
)
def test_plugin_tensor_of_another_layout_stays_a_tensor(
    tmp_path: Path, plugin: str, rows: np.ndarray[Any, Any]
) -> None:
    """A tensor that lacks its plugin's layout is not converted: tensors() still returns it."""
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.util import tensor_util

    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=plugin)
    )
    value = summary_pb2.Summary.Value(
        tag="odd", metadata=metadata, tensor=tensor_util.make_tensor_proto(rows)
    )
    reader = Reader(_write_events(tmp_path, [_event(1, summary_pb2.Summary(value=[value]))]))
    assert reader.tags()[plugin] == []
    (tensor,) = reader.tensors("odd")
    assert tensor.plugin_name == plugin
    assert tensor.value.shape == rows.shape


@settings(max_examples=60, deadline=None)
@given(
    plugin=st.sampled_from(["histograms", "images", "audio"]),
    shape=st.lists(st.integers(0, 3), max_size=3),
    strings=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_plugin_tensor_is_converted_or_kept(
    tmp_path_factory: pytest.TempPathFactory,
    plugin: str,
    shape: list[int],
    strings: bool,
    seed: int,
) -> None:
    """Random tensors under the three plugins never make the reader raise.

    Random tensors under the three plugins never make the reader raise: each tag ends up
    either under its plugin's kind or under tensors, never both.
    """
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.util import tensor_util

    rng = np.random.default_rng(seed)
    size = int(np.prod(shape)) if shape else 1
    if strings:
        pool = [b"3", b"-1", b"x", _png(np.zeros((1, 1, 3), np.uint8)), b"RIFF"]
        rows = np.array([pool[i] for i in rng.integers(0, len(pool), size)], dtype=object)
    else:
        rows = rng.normal(size=size)
    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=plugin)
    )
    tensor = tensor_util.make_tensor_proto(rows.reshape(shape))
    value = summary_pb2.Summary.Value(tag="t", metadata=metadata, tensor=tensor)
    path = tmp_path_factory.mktemp("fuzz")
    reader = Reader(_write_events(path, [_event(2, summary_pb2.Summary(value=[value]))]))
    tags = reader.tags()
    assert (tags[plugin], tags["tensors"]) in ((["t"], []), ([], ["t"]))
    points = reader.tensors("t") if tags["tensors"] else getattr(reader, plugin)("t")
    assert all(point.step == 2 for point in points)


def test_malformed_plugin_tensor_is_kept_and_reported_when_asked(tmp_path: Path) -> None:
    """A histograms-plugin tensor whose bytes do not fit its shape stays a tensor.

    A histograms-plugin tensor whose bytes do not fit its shape loads without a warning,
    stays a tensor, and tensors() raises EventFileError naming it.
    """
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.util import tensor_util

    from stoker.tensorboard import EventFileError

    tensor = tensor_util.make_tensor_proto(np.zeros((2, 3)))
    tensor.tensor_content = tensor.tensor_content[:-8]
    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="histograms")
    )
    value = summary_pb2.Summary.Value(tag="bad", metadata=metadata, tensor=tensor)
    reader = Reader(_write_events(tmp_path, [_event(1, summary_pb2.Summary(value=[value]))]))
    assert reader.tags()["histograms"] == []
    with pytest.raises(EventFileError, match="bad"):
        reader.tensors("bad")
