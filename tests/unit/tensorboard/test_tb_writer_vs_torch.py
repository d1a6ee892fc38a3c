"""Every SummaryWriter method against torch's: TensorBoard's loaders must decode the same content.

Each case makes the same calls on ``torch.utils.tensorboard.SummaryWriter`` and on stoker's, in two
temporary directories. Both directories are read back with TensorBoard's own ``EventFileLoader``
and normalised (wall times dropped, images and audio decoded to samples, plugin data parsed);
the two results must be equal. The accumulators used by the dashboards must list the same tags.
"""

from __future__ import annotations

import io
import os
import sys
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import stoker.tensorboard as stb

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]

torch = pytest.importorskip("torch")


def _decode_png(data: bytes) -> tuple[str, bytes]:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return image.mode, np.asarray(image.convert("RGBA")).tobytes()


def _decode_wav(data: bytes) -> tuple[int, int, int, bytes]:
    with wave.open(io.BytesIO(data)) as wav:
        return wav.getnchannels(), wav.getsampwidth(), wav.getframerate(), wav.readframes(-1)


def _decode_blob(item: bytes) -> Any:
    """Decode PNG and WAV blobs (the loader turns images and audio into blob tensors)."""
    if item.startswith(b"\x89PNG"):
        return _decode_png(item)
    if item.startswith(b"RIFF"):
        return _decode_wav(item)
    return item


def _plugin(metadata: Any) -> tuple[Any, ...]:
    from google.protobuf import json_format
    from tensorboard.plugins.hparams import plugin_data_pb2

    name = metadata.plugin_data.plugin_name
    content: Any = metadata.plugin_data.content
    if name == "hparams":
        parsed = plugin_data_pb2.HParamsPluginData.FromString(content)
        content = json_format.MessageToDict(parsed)
    return name, content, metadata.display_name, metadata.summary_description


def _value(value: Any) -> tuple[Any, ...]:
    from google.protobuf import json_format
    from tensorboard.util import tensor_util

    kind = value.WhichOneof("value")
    if kind == "simple_value":
        return kind, value.simple_value
    if kind == "tensor":
        array = tensor_util.make_ndarray(value.tensor)
        if array.dtype.kind not in "OSU":
            return kind, value.tensor.dtype, array.shape, array.tobytes()
        items = [_decode_blob(item) for item in array.reshape(-1).tolist()]
        return kind, value.tensor.dtype, array.shape, items
    if kind == "histo":
        return kind, json_format.MessageToDict(value.histo)
    if kind == "image":
        image = value.image
        pixels = _decode_png(image.encoded_image_string)
        return kind, image.height, image.width, image.colorspace, pixels
    if kind == "audio":
        audio = value.audio
        samples = _decode_wav(audio.encoded_audio_string)
        return kind, audio.sample_rate, audio.num_channels, audio.length_frames, samples
    return (kind,)


def load(logdir: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Read every event file under ``logdir`` with TensorBoard's loader, normalised per run."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    runs: dict[str, list[tuple[Any, ...]]] = {}
    for root, _, files in os.walk(logdir):
        for name in sorted(f for f in files if "tfevents" in f):
            rows = runs.setdefault(os.path.relpath(root, logdir), [])
            for event in EventFileLoader(os.path.join(root, name)).Load():
                what = event.WhichOneof("what")
                if what == "summary":
                    for value in event.summary.value:
                        meta = _plugin(value.metadata) if value.HasField("metadata") else None
                        rows.append((event.step, value.tag, meta, _value(value)))
                elif what == "session_log":
                    rows.append((event.step, what, event.session_log.status))
                else:
                    rows.append((event.step, what))
    return runs


Call = Callable[[Any], None]


def _write_both(tmp_path: Path, call: Call, **kwargs: Any) -> tuple[Path, Path]:
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    torch_dir, stoker_dir = tmp_path / "torch", tmp_path / "stoker"
    with TorchWriter(str(torch_dir), **kwargs) as writer:
        call(writer)
    with stb.SummaryWriter(str(stoker_dir), **kwargs) as writer:
        call(writer)
    return torch_dir, stoker_dir


_RNG = np.random.default_rng(0)
_IMAGE_CHW = _RNG.random((3, 20, 30))
_IMAGE_HWC_U8 = _RNG.integers(0, 256, (16, 12, 3), dtype=np.uint8)
_BATCH = _RNG.random((5, 3, 8, 6)).astype(np.float32)
_VALUES = _RNG.normal(size=1000) * 3
_LABELS = _RNG.integers(0, 2, 200)
_PREDICTIONS = _RNG.random(200)
_VERTICES = np.array([[[1, 1, 1], [-1, -1, 1], [1, -1, -1], [-1, 1, -1]]], dtype=np.float32)
_COLORS = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 0, 255]]], dtype=np.int32)
_FACES = np.array([[[0, 2, 3], [0, 3, 1], [0, 1, 2], [1, 3, 2]]], dtype=np.int32)


def _scalars(w: Any) -> None:
    for step in range(5):
        w.add_scalar("loss", 1.0 / (step + 1), step)
    w.add_scalar("int", 3, 7, walltime=5.0)
    w.add_scalar("np", np.float32(2.5), np.int64(8))
    w.add_scalar("torch", torch.tensor(0.25), torch.tensor(9))
    w.add_scalar("big", 1e39, 1)
    w.add_scalar("neg_step", 1.0, -3)
    w.add_scalar("nan", float("nan"), 1)
    w.add_scalar("new", 0.5, 2, new_style=True)
    w.add_scalar("double", 0.1, 3, new_style=True, double_precision=True)
    w.add_scalar("no_step", 4.0)


def _scalars_group(w: Any) -> None:
    w.add_scalars("run/a", {"x": 1.0, "y": 2}, 1)
    w.add_scalars("run/a", {"x": 3.0, "y": 4}, 2)


def _tensors(w: Any) -> None:
    for dtype in (torch.float32, torch.float64, torch.int8, torch.int16, torch.int32):
        w.add_tensor(f"t_{dtype}", (torch.arange(6) - 2).reshape(2, 3).to(dtype), 1)
    w.add_tensor("t_int64", torch.tensor([2**40, -5]), 2)
    w.add_tensor("t_bool", torch.tensor([True, False]), 3)
    w.add_tensor("t_scalar", torch.tensor(5.5), 4)


def _histograms(w: Any) -> None:
    w.add_histogram("tf", _VALUES, 1)
    w.add_histogram("ints", np.arange(100), 2)
    w.add_histogram("auto", _VALUES, 3, bins="auto")
    w.add_histogram("fd", _VALUES, 4, bins="fd")
    w.add_histogram("count", _VALUES, 5, bins=7)
    w.add_histogram("edges", _VALUES, 6, bins=np.linspace(-10, 10, 21))
    w.add_histogram("max_bins", _VALUES, 7, max_bins=20)
    w.add_histogram("torch", torch.tensor(_VALUES), 8)
    w.add_histogram("one", np.array([2.0]), 9)
    counts, limits = np.histogram(_VALUES, bins=10)
    w.add_histogram_raw(
        "raw",
        min=_VALUES.min(),
        max=_VALUES.max(),
        num=len(_VALUES),
        sum=_VALUES.sum(),
        sum_squares=_VALUES.dot(_VALUES),
        bucket_limits=limits[1:].tolist(),
        bucket_counts=counts.tolist(),
        global_step=10,
    )


def _images(w: Any) -> None:
    w.add_image("chw", _IMAGE_CHW, 1)
    w.add_image("hwc_u8", _IMAGE_HWC_U8, 2, dataformats="HWC")
    w.add_image("hw", _IMAGE_CHW[0], 3, dataformats="HW")
    w.add_image("gray", _IMAGE_CHW[:1], 4)
    w.add_image("torch", torch.tensor(_IMAGE_CHW, dtype=torch.float32), 5)
    w.add_images("batch", _BATCH, 6)
    w.add_images("batch_nhwc", _BATCH.transpose(0, 2, 3, 1), 7, dataformats="NHWC")


def _boxes(w: Any) -> None:
    boxes = np.array([[2, 2, 20, 15], [5, 1, 9, 9]])
    w.add_image_with_boxes("plain", _IMAGE_CHW, boxes, 1)
    w.add_image_with_boxes("labels", _IMAGE_CHW, boxes, 2, labels=["a", "bb"])
    w.add_image_with_boxes("rescaled", _IMAGE_CHW, boxes, 3, rescale=2)


def _figures(w: Any) -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    def fig() -> Any:
        figure = plt.figure(figsize=(2, 1.5), dpi=50)
        plt.plot([0, 1, 2], [1, 0, 1])
        return figure

    w.add_figure("one", fig(), 1)
    w.add_figure("two", [fig(), fig()], 2)


def _audio(w: Any) -> None:
    t = np.linspace(0, 1, 800, endpoint=False)
    w.add_audio("sine", np.sin(2 * np.pi * 5 * t)[None, :], 1, sample_rate=800)
    w.add_audio("torch", torch.tensor(np.cos(t)), 2, sample_rate=8000)


def _text(w: Any) -> None:
    w.add_text("note", "**bold** and ünïcode", 1)
    w.add_text("empty", "", 2)


def _pr_curves(w: Any) -> None:
    w.add_pr_curve("pr", _LABELS, _PREDICTIONS, 1)
    w.add_pr_curve("pr_small", _LABELS, _PREDICTIONS, 2, num_thresholds=10)
    w.add_pr_curve("pr_weights", _LABELS, _PREDICTIONS, 3, weights=np.full(200, 0.5))
    curve = np.stack(
        [
            np.arange(5, 0, -1),
            np.ones(5),
            np.zeros(5),
            np.arange(5),
            np.linspace(1, 0, 5),
            np.linspace(0, 1, 5),
        ]
    )
    w.add_pr_curve_raw("pr_raw", *curve, global_step=4, num_thresholds=5)


def _custom_scalars(w: Any) -> None:
    w.add_custom_scalars(
        {
            "Taiwan": {"twse": ["Multiline", ["twse/0050", "twse/2330"]]},
            "USA": {
                "dow": ["Margin", ["dow/aaa", "dow/bbb", "dow/ccc"]],
                "nasdaq": ["Margin", ["nasdaq/aaa", "nasdaq/bbb", "nasdaq/ccc"]],
            },
        }
    )
    w.add_custom_scalars_multilinechart(["a", "b"], category="c", title="t")
    w.add_custom_scalars_marginchart(["v", "lo", "hi"])


def _meshes(w: Any) -> None:
    w.add_mesh("full", _VERTICES, colors=_COLORS, faces=_FACES, global_step=1)
    w.add_mesh("points", _VERTICES, config_dict={"camera": {"fov": 75}}, global_step=2)


def _hparams(w: Any) -> None:
    w.add_hparams(
        {"lr": 0.1, "batch": 32, "optimizer": "adam", "skip": None},
        {"hparam/accuracy": 0.9, "hparam/loss": 0.2},
        hparam_domain_discrete={"optimizer": ["adam", "sgd"], "batch": [16, 32]},
        run_name="trial",
        global_step=3,
    )


_CASES: dict[str, Call] = {
    "scalars": _scalars,
    "add_scalars": _scalars_group,
    "tensors": _tensors,
    "histograms": _histograms,
    "images": _images,
    "image_with_boxes": _boxes,
    "figures": _figures,
    "audio": _audio,
    "text": _text,
    "pr_curves": _pr_curves,
    "custom_scalars": _custom_scalars,
    "meshes": _meshes,
    "hparams": _hparams,
}


@pytest.mark.parametrize("call", list(_CASES.values()), ids=list(_CASES))
def test_loaders_decode_the_same_content_as_torch(tmp_path: Path, call: Call) -> None:
    """TensorBoard's loader reads the same runs, steps, tags, metadata and values as torch's."""
    torch_dir, stoker_dir = _write_both(tmp_path, call)
    expected = load(torch_dir)
    actual = load(stoker_dir)
    assert sorted(actual) == sorted(expected)
    for run, rows in expected.items():
        assert len(actual[run]) == len(rows), run
        for mine, theirs in zip(actual[run], rows, strict=True):
            assert mine == theirs


@pytest.mark.parametrize("call", [_scalars, _histograms, _images, _pr_curves, _hparams])
def test_accumulators_list_the_same_tags_as_torch(tmp_path: Path, call: Call) -> None:
    """The legacy and the plugin EventAccumulator see the same tags and counts as for torch."""
    from tensorboard.backend.event_processing import event_accumulator as legacy
    from tensorboard.backend.event_processing import plugin_event_accumulator as plugin

    torch_dir, stoker_dir = _write_both(tmp_path, call)
    seen = []
    for logdir in (torch_dir, stoker_dir):
        old = legacy.EventAccumulator(str(logdir), size_guidance={"scalars": 0, "images": 0})
        new = plugin.EventAccumulator(str(logdir), size_guidance={"tensors": 0})
        old.Reload()
        new.Reload()
        counts = {tag: len(old.Scalars(tag)) for tag in old.Tags()["scalars"]}
        seen.append(
            (
                old.Tags(),
                counts,
                new.Tags(),
                new.PluginTagToContent("hparams") if "hparams" in new.ActivePlugins() else {},
            )
        )
    assert seen[1] == seen[0]


def test_purge_step_writes_torchs_events_and_a_second_start(tmp_path: Path) -> None:
    """With purge_step: torch's file_version and START at that step, plus a second START.

    With purge_step: file_version and SessionLog START at that step as torch writes them,
    plus a second START so that the plugin loader, which skips a run's first START, purges too.
    """
    torch_dir, stoker_dir = _write_both(tmp_path, lambda w: w.add_scalar("x", 1.0, 5), purge_step=5)
    theirs = load(torch_dir)["."]
    mine = load(stoker_dir)["."]
    assert theirs[:3] == [(0, "file_version"), (5, "file_version"), (5, "session_log", 1)]
    assert mine == [*theirs[:3], (5, "session_log", 1), *theirs[3:]]


def test_tensor_dtypes_torch_writes_wrongly_read_back_exactly(tmp_path: Path) -> None:
    """uint8, float16 and bfloat16 tensors decode to their values (torch's writer garbles them)."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.util import tensor_util

    values = {
        "u8": torch.tensor([0, 7, 255], dtype=torch.uint8),
        "f16": torch.tensor([1.5, -2.25, 65504.0], dtype=torch.float16),
        "bf16": torch.tensor([1.5, -2.25, 3.0e38], dtype=torch.bfloat16),
        "np_f16": np.array([[0.5, 1.0]], dtype=np.float16),
        "np_u16": np.array([1, 65535], dtype=np.uint16),
        "np_u32": np.array([1, 2**32 - 1], dtype=np.uint32),
        "np_u64": np.array([1, 2**63 - 1], dtype=np.uint64),
        "np_c64": np.array([1 + 2j, -3j], dtype=np.complex64),
        "np_c128": np.array([1 + 2j], dtype=np.complex128),
        "np_str": np.array(["a", "bc"]),
    }
    with stb.SummaryWriter(str(tmp_path)) as writer:
        for tag, value in values.items():
            writer.add_tensor(tag, value, 1)
    (path,) = tmp_path.glob("events.out.tfevents.*")
    decoded: dict[str, Any] = {}
    for event in EventFileLoader(str(path)).Load():
        for value in event.summary.value:
            if value.tensor.dtype == 14:
                # TensorBoard without TensorFlow has no bfloat16 NumPy type; read the raw bits
                # from half_val as TensorFlow's make_ndarray does.
                bits = np.array(value.tensor.half_val, dtype=np.uint16)
                decoded[value.tag] = bits
            else:
                decoded[value.tag] = tensor_util.make_ndarray(value.tensor)
    for tag, value in values.items():
        expected = value.float().numpy() if isinstance(value, torch.Tensor) else value
        got = decoded[tag]
        if tag == "bf16":
            got = torch.tensor(got.astype(np.int16)).view(torch.bfloat16).float().numpy()
        if tag == "np_str":
            got = got.astype(str)
        assert got.shape == expected.shape
        assert got.tolist() == expected.tolist()


def test_add_embedding_writes_the_projector_files_like_torch(tmp_path: Path) -> None:
    """add_embedding writes tensors.tsv, metadata.tsv, sprite.png and a projector config."""
    mat = _RNG.normal(size=(6, 3)).astype(np.float32)
    images = _RNG.random((6, 3, 4, 4)).astype(np.float32)

    def call(w: Any) -> None:
        w.add_embedding(mat, metadata=list("abcdef"), label_img=torch.tensor(images), tag="emb")

    torch_dir, stoker_dir = _write_both(tmp_path, call)
    for name in ("tensors.tsv", "metadata.tsv"):
        (theirs,) = torch_dir.glob(f"*/*/{name}")
        (mine,) = stoker_dir.glob(f"*/*/{name}")
        assert mine.relative_to(stoker_dir) == theirs.relative_to(torch_dir)
        assert np.array_equal(
            np.loadtxt(mine, dtype=str, ndmin=2), np.loadtxt(theirs, dtype=str, ndmin=2)
        )
    (sprite,) = stoker_dir.glob("*/*/sprite.png")
    from PIL import Image

    with Image.open(sprite) as image:
        assert image.size == (12, 12)
    config = (stoker_dir / "projector_config.pbtxt").read_text()
    assert 'tensor_name: "emb:00000"' in config or "emb" in config


def test_add_onnx_graph_without_onnx_names_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the onnx package, add_onnx_graph raises ImportError saying what to install."""
    monkeypatch.setitem(sys.modules, "onnx", None)  # makes `import onnx` fail as if absent
    with (
        stb.SummaryWriter(str(tmp_path)) as writer,
        pytest.raises(ImportError, match="pip install onnx"),
    ):
        writer.add_onnx_graph(str(tmp_path / "model.onnx"))


def test_add_video_writes_an_animated_gif_of_torchs_grid_size(tmp_path: Path) -> None:
    """add_video writes a GIF with one frame per time step, tiled like torch's _prepare_video."""
    from PIL import Image
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
    from torch.utils.tensorboard._utils import _prepare_video

    video = _RNG.random((3, 4, 3, 8, 6)).astype(np.float32)
    with stb.SummaryWriter(str(tmp_path)) as writer:
        writer.add_video("clip", video, 2, fps=5)
    (path,) = tmp_path.glob("events.out.tfevents.*")
    images = [
        (event.step, value.image)
        for event in LegacyEventFileLoader(str(path)).Load()
        for value in event.summary.value
    ]
    frames, height, width, channels = _prepare_video(video).shape
    assert [(step, i.height, i.width, i.colorspace) for step, i in images] == [
        (2, height, width, channels)
    ]
    with Image.open(io.BytesIO(images[0][1].encoded_image_string)) as gif:
        assert gif.format == "GIF"
        assert gif.n_frames == frames
        assert gif.size == (width, height)
