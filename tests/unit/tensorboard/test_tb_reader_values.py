"""Reader values by kind: checked against EventAccumulator and against what was written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tb_loaders import accumulate

from stoker.tensorboard import SummaryWriter
from stoker.tensorboard import _messages as pb
from stoker.tensorboard._event_file import file_version_event
from stoker.tensorboard._reader import Reader
from stoker.tensorboard._reader_records import EventFileError
from stoker.tensorboard._record import frame_many

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


def _write(path: Path, calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> Path:
    with SummaryWriter(str(path)) as writer:
        for name, args, kwargs in calls:
            getattr(writer, name)(*args, **kwargs)
    return path


def test_scalars_equal_event_accumulator_and_nothing_is_sampled(tmp_path: Path) -> None:
    """12,000 points of two tags come back whole, equal to EventAccumulator's with no limit."""
    rng = np.random.default_rng(0)
    values = rng.normal(size=12_000)
    with SummaryWriter(str(tmp_path)) as writer:
        for step, value in enumerate(values):
            writer.add_scalar("loss", value, step * 3)
            if step % 7 == 0:
                writer.add_scalar("lr/group 0", -value, step, walltime=1000.0 + step)
    reader = Reader(tmp_path)
    accumulator = accumulate(tmp_path)
    for tag in ("loss", "lr/group 0"):
        series = reader.scalars(tag)
        expected = accumulator.Scalars(tag)
        assert series.step.dtype == np.int64
        assert series.value.dtype == np.float64
        assert series.step.tolist() == [e.step for e in expected]
        assert series.wall_time.tolist() == [e.wall_time for e in expected]
        assert series.value.tolist() == [e.value for e in expected]
    assert len(reader.scalars("loss").step) == 12_000
    assert np.array_equal(reader.scalars("loss").value, values.astype(np.float32))


@pytest.mark.parametrize("precise", [False, True])
def test_tensor_style_scalars_are_unified_with_simple_values(tmp_path: Path, precise: bool) -> None:
    """new_style scalars read as scalars, with float64 kept exact when written as double."""
    value = 1.0 / 3.0
    calls = [
        ("add_scalar", ("acc", 0.25, 1), {}),
        (
            "add_scalar",
            ("acc", value, 2),
            {"new_style": True, "double_precision": precise},
        ),
    ]
    reader = Reader(_write(tmp_path, calls))
    series = reader.scalars("acc")
    expected = value if precise else float(np.float32(value))
    assert series.step.tolist() == [1, 2]
    assert series.value.tolist() == [0.25, expected]
    assert reader.tags()["tensors"] == []


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
        np.linspace(-1, 1, 5),
        np.array([[1.5, -2.25]], dtype=np.float16),
        np.array([-128, 0, 127], dtype=np.int8),
        np.array([-300, 7], dtype=np.int16),
        np.array([[-(2**31), 2**31 - 1]], dtype=np.int32),
        np.array([-(2**63), 2**63 - 1], dtype=np.int64),
        np.array([0, 255], dtype=np.uint8),
        np.array([65535, 1], dtype=np.uint16),
        np.array([True, False, True]),
        np.array([1 + 2j, -3.5j], dtype=np.complex64),
        np.array([[1 - 1j]], dtype=np.complex128),
        np.array(4.5, dtype=np.float32),
    ],
    ids=lambda a: f"{a.dtype}{list(a.shape)}",
)
def test_tensors_match_written_arrays_and_tensorboard(tmp_path: Path, array: Any) -> None:
    """Tensors decode with their dtype and shape, equal to the input and to make_ndarray."""
    from tensorboard.util import tensor_util

    reader = Reader(_write(tmp_path, [("add_tensor", ("t", array, 5), {})]))
    (event,) = reader.tensors("t")
    assert event.step == 5
    assert event.value.dtype == array.dtype
    assert event.value.shape == array.shape
    assert np.array_equal(event.value, array)
    (expected,) = accumulate(tmp_path).Tensors("t")
    assert np.array_equal(event.value, tensor_util.make_ndarray(expected.tensor_proto))


def test_bfloat16_tensor_from_torch_reads_as_exact_float32(tmp_path: Path) -> None:
    """A torch bfloat16 tensor comes back as float32 with the same values, dtype 'bfloat16'."""
    torch = pytest.importorskip("torch")
    tensor = torch.tensor([[1.5, -3.0, 1e10]], dtype=torch.bfloat16)
    reader = Reader(_write(tmp_path, [("add_tensor", ("b", tensor, 1), {})]))
    (event,) = reader.tensors("b")
    assert event.dtype == "bfloat16"
    assert event.value.dtype == np.float32
    assert event.value.tolist() == tensor.float().tolist()


def _write_raw_events(path: Path, events: list[dict[str, Any]]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    payloads = [file_version_event(1.0)] + [pb.EVENT.encode(event) for event in events]
    (path / "events.out.tfevents.0.test").write_bytes(frame_many(payloads))
    return path


@pytest.mark.parametrize(
    ("proto", "expected"),
    [
        (
            {
                "dtype": pb.DT_FLOAT,
                "tensor_shape": {"dim": [{"size": 2}, {"size": 2}]},
                "tensor_content": np.arange(4, dtype="<f4").tobytes(),
            },
            np.arange(4, dtype=np.float32).reshape(2, 2),
        ),
        (
            {
                "dtype": pb.DT_HALF,
                "tensor_shape": {"dim": [{"size": 3}]},
                "tensor_content": np.array([1, 2, 3], dtype="<f2").tobytes(),
            },
            np.array([1, 2, 3], dtype=np.float16),
        ),
        (
            {"dtype": pb.DT_INT32, "tensor_shape": {"dim": [{"size": 4}]}, "int_val": [7]},
            np.full(4, 7, dtype=np.int32),
        ),
        (
            {"dtype": pb.DT_DOUBLE, "tensor_shape": {"dim": [{"size": 3}]}, "double_val": [1, 2]},
            np.array([1.0, 2.0, 2.0]),
        ),
        (
            {
                "dtype": pb.DT_UINT32,
                "tensor_shape": {"dim": [{"size": 1}]},
                "uint32_val": [2**32 - 3],
            },
            np.array([2**32 - 3], dtype=np.uint32),
        ),
        (
            {
                "dtype": pb.DT_BFLOAT16,
                "tensor_shape": {"dim": [{"size": 2}]},
                "tensor_content": np.array([0x3FC0, 0xC040], dtype="<u2").tobytes(),
            },
            np.array([1.5, -3.0], dtype=np.float32),
        ),
        (
            {
                "dtype": pb.DT_STRING,
                "tensor_shape": {"dim": [{"size": 2}, {"size": 1}]},
                "string_val": [b"a", b"\xff"],
            },
            np.array([[b"a"], [b"\xff"]], dtype=object),
        ),
    ],
    ids=["tensor_content", "half_content", "int_fill", "double_pad", "uint32", "bf16", "str"],
)
def test_tensor_encodings_from_other_writers(
    tmp_path: Path, proto: dict[str, Any], expected: Any
) -> None:
    """tensor_content bytes and short repeated fields (padded with the last value) decode."""
    summary = {"value": [{"tag": "t", "tensor": proto}]}
    reader = Reader(_write_raw_events(tmp_path, [{"step": 3, "summary": summary}]))
    (event,) = reader.tensors("t")
    assert event.value.dtype == expected.dtype
    assert np.array_equal(event.value, expected)


def test_malformed_tensor_raises_event_file_error_on_access(tmp_path: Path) -> None:
    """A tensor whose content does not fill its shape raises EventFileError when decoded."""
    proto = {"dtype": pb.DT_FLOAT, "tensor_shape": {"dim": [{"size": 9}]}, "tensor_content": b"x"}
    reader = Reader(
        _write_raw_events(tmp_path, [{"summary": {"value": [{"tag": "t", "tensor": proto}]}}])
    )
    with pytest.raises(EventFileError, match="malformed"):
        reader.tensors("t")


def test_histograms_equal_eventaccumulate(tmp_path: Path) -> None:
    """Histogram statistics and buckets equal EventAccumulator's for computed and raw ones."""
    rng = np.random.default_rng(1)
    calls = [("add_histogram", ("w", rng.normal(size=500), step), {}) for step in range(3)]
    calls.append(("add_histogram_raw", ("r", 0, 3, 6, 9, 17, [1, 2, 3], [1, 2, 3], 4), {}))
    reader = Reader(_write(tmp_path, calls))
    accumulator = accumulate(tmp_path)
    for tag in ("w", "r"):
        got = reader.histograms(tag)
        expected = accumulator.Histograms(tag)
        assert [h.step for h in got] == [e.step for e in expected]
        for mine, theirs in zip(got, expected, strict=True):
            value = theirs.histogram_value
            assert (mine.min, mine.max, mine.num, mine.sum, mine.sum_squares) == (
                value.min, value.max, value.num, value.sum, value.sum_squares,
            )  # fmt: skip
            assert mine.bucket_limit.tolist() == list(value.bucket_limit)
            assert mine.bucket.tolist() == list(value.bucket)


def test_images_decode_on_demand_to_the_written_pixels(tmp_path: Path) -> None:
    """Images keep the writer's PNG bytes (as EventAccumulator sees them) and decode to HWC.

    Like torch's writer, stoker's stores a one-channel image as RGB.
    """
    rng = np.random.default_rng(2)
    rgb = rng.integers(0, 256, size=(6, 5, 3), dtype=np.uint8)
    grey = rng.integers(0, 256, size=(4, 7, 1), dtype=np.uint8)
    calls = [
        ("add_image", ("rgb", rgb, 1), {"dataformats": "HWC"}),
        ("add_image", ("grey", grey, 2), {"dataformats": "HWC"}),
    ]
    reader = Reader(_write(tmp_path, calls))
    accumulator = accumulate(tmp_path)
    for tag, pixels in (("rgb", rgb), ("grey", np.repeat(grey, 3, axis=2))):
        (image,) = reader.images(tag)
        (expected,) = accumulator.Images(tag)
        assert image.encoded == expected.encoded_image_string
        assert (image.width, image.height) == (expected.width, expected.height)
        decoded = image.to_numpy()
        assert decoded.shape[2] == image.colorspace
        assert np.array_equal(decoded, pixels)


def test_undecodable_image_raises_event_file_error(tmp_path: Path) -> None:
    """An image whose bytes are not an image raises EventFileError from to_numpy."""
    value = {"tag": "i", "image": {"height": 1, "width": 1, "encoded_image_string": b"nope"}}
    reader = Reader(_write_raw_events(tmp_path, [{"summary": {"value": [value]}}]))
    with pytest.raises(EventFileError, match="cannot be decoded"):
        reader.images("i")[0].to_numpy()


def test_audio_decodes_to_the_written_samples(tmp_path: Path) -> None:
    """Audio keeps its metadata and decodes to float samples within 16-bit quantisation."""
    samples = np.sin(np.linspace(0, 20, 800)).astype(np.float32) * 0.5
    reader = Reader(_write(tmp_path, [("add_audio", ("a", samples, 3), {"sample_rate": 8000})]))
    (clip,) = reader.audio("a")
    (expected,) = accumulate(tmp_path).Audio("a")
    assert (clip.sample_rate, clip.length_frames, clip.content_type) == (
        expected.sample_rate, expected.length_frames, expected.content_type,
    )  # fmt: skip
    decoded = clip.to_numpy()
    assert decoded.shape == (800, 1)
    assert np.abs(decoded[:, 0] - samples).max() < 1e-4


def test_text_and_hparams(tmp_path: Path) -> None:
    """Text reads by its tag with or without /text_summary; hparams read back typed."""
    calls = [
        ("add_text", ("notes", "héllo **world**", 1), {}),
        ("add_text", ("notes", "second", 2), {}),
        (
            "add_hparams",
            ({"lr": 0.01, "opt": "adam", "bn": True}, {"metric/acc": 0.75}),
            {"hparam_domain_discrete": {"opt": ["adam", "sgd"]}, "same_run": True},
        ),
    ]
    reader = Reader(_write(tmp_path, calls))
    assert [t.text for t in reader.text("notes")] == ["héllo **world**", "second"]
    assert reader.text("notes/text_summary")[1].step == 2
    (params,) = reader.hparams().values()
    assert params.hparams == {"lr": 0.01, "opt": "adam", "bn": True}
    assert params.metrics == ["metric/acc"]
    assert params.domains == {"opt": ["adam", "sgd"]}
    assert reader.scalars("metric/acc").value.tolist() == [0.75]
