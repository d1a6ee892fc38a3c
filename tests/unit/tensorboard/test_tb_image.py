"""Image payloads match torch.utils.tensorboard pixel for pixel, and bad input fails clearly."""

from __future__ import annotations

import io
import subprocess
import sys
import zlib
from typing import Any

import numpy as np
import pytest
from PIL import Image

from stoker.tensorboard._image import (
    as_numpy,
    draw_boxes,
    encode_png,
    figure_to_hwc,
    image_summary_payload,
    make_grid,
    to_hwc_uint8,
)

torch = pytest.importorskip("torch")
tb_summary = pytest.importorskip("torch.utils.tensorboard.summary")
tb_utils = pytest.importorskip("torch.utils.tensorboard._utils")


def _decode(png: bytes) -> np.ndarray[Any, Any]:
    return np.asarray(Image.open(io.BytesIO(png)))


def _sample(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray[Any, Any]:
    """Values in and out of range, so that scaling, clipping and truncation all matter."""
    rng = np.random.default_rng(seed)
    if dtype == "uint8":
        return rng.integers(0, 256, shape).astype(np.uint8)
    if dtype == "int64":
        return rng.integers(-2, 3, shape)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    return (rng.random(shape) * 1.4 - 0.2).astype(dtype)


IMAGE_CASES = [
    ((3, 20, 30), "CHW", "float32"),
    ((20, 30, 3), "HWC", "float64"),
    ((20, 30), "HW", "float32"),
    ((30, 20), "WH", "float16"),
    ((1, 20, 30), "CHW", "float32"),
    ((20, 30, 1), "HWC", "uint8"),
    ((4, 20, 30), "CHW", "float32"),
    ((20, 30, 2), "HWC", "float32"),
    ((30, 3, 20), "WCH", "float64"),
    ((3, 20, 30), "chw", "uint8"),
    ((3, 20, 30), "CHW", "int64"),
    ((3, 9, 11), "CHW", "bool"),
    ((5, 3, 8, 9), "NCHW", "float32"),
    ((11, 8, 9, 1), "NHWC", "float32"),
    ((8, 8, 3, 7), "NHCW", "uint8"),
    ((17, 1, 4, 5), "NCHW", "float64"),
    ((1, 3, 6, 6), "NCHW", "float32"),
]


@pytest.mark.parametrize(("shape", "dataformats", "dtype"), IMAGE_CASES)
def test_payload_matches_torch_image_summary(
    shape: tuple[int, ...], dataformats: str, dtype: str
) -> None:
    """The PNG decodes to torch's pixels and the size fields equal torch's Summary.Image."""
    array = _sample(shape, dtype)
    expected = tb_summary.image("t", array, dataformats=dataformats).value[0].image
    payload = image_summary_payload(array, dataformats)
    np.testing.assert_array_equal(_decode(payload.encoded), _decode(expected.encoded_image_string))
    assert (payload.height, payload.width, payload.channels) == (
        expected.height,
        expected.width,
        expected.colorspace,
    )


@pytest.mark.parametrize(("shape", "dataformats", "dtype"), IMAGE_CASES)
def test_to_hwc_uint8_matches_torch_scaling(
    shape: tuple[int, ...], dataformats: str, dtype: str
) -> None:
    """to_hwc_uint8 equals torch's convert_to_HWC followed by its scale, clip and cast."""
    array = _sample(shape, dtype, seed=1)
    hwc = tb_utils.convert_to_HWC(array, dataformats)
    scale = 1 if hwc.dtype == np.uint8 else 255
    expected = (hwc.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)
    result = to_hwc_uint8(array, dataformats)
    assert result.dtype == np.uint8
    assert result.flags.c_contiguous
    np.testing.assert_array_equal(result, expected)


def test_rounding_edges_match_torch() -> None:
    """Values whose float32 product lands next to an integer truncate exactly as torch's do."""
    steps = np.arange(256) / 255
    edges = np.concatenate([steps, np.nextafter(steps, 0), steps + 0.7 / 255])
    array = np.concatenate([edges, [-np.inf, np.inf, 1e300, -1e300]])
    array = np.resize(array, (3, 4, 193))
    with np.errstate(over="ignore"):  # torch's own cast of 1e300 to float32 overflows
        expected = tb_summary.image("t", array, dataformats="CHW").value[0].image
    np.testing.assert_array_equal(
        to_hwc_uint8(array, "CHW"), _decode(expected.encoded_image_string)
    )


def test_torch_tensors_and_lists_are_accepted() -> None:
    """Torch tensors (with grad, bfloat16) and nested lists give the same pixels as NumPy."""
    base = torch.rand(3, 6, 7, generator=torch.Generator().manual_seed(0), requires_grad=True)
    expected = tb_summary.image("t", base.detach().numpy(), dataformats="CHW").value[0].image
    np.testing.assert_array_equal(to_hwc_uint8(base, "CHW"), _decode(expected.encoded_image_string))
    np.testing.assert_array_equal(
        to_hwc_uint8(base.detach().numpy().tolist(), "CHW"), to_hwc_uint8(base, "CHW")
    )
    half = base.detach().to(torch.bfloat16)
    torch_half = tb_summary.image("t", half, dataformats="CHW").value[0].image
    np.testing.assert_array_equal(
        to_hwc_uint8(half, "CHW"), _decode(torch_half.encoded_image_string)
    )


def test_result_is_a_new_array() -> None:
    """A uint8 HWC input is copied, so later changes to it do not reach the logged image."""
    array = np.zeros((4, 5, 3), dtype=np.uint8)
    result = to_hwc_uint8(array, "HWC")
    array[:] = 9
    assert not result.any()


@pytest.mark.parametrize(
    ("count", "channels", "ncols", "dtype"),
    [(1, 3, 8, "float32"), (5, 1, 2, "uint8"), (9, 3, 3, "float64"), (10, 3, 4, "int32")],
)
def test_make_grid_matches_torch(count: int, channels: int, ncols: int, dtype: str) -> None:
    """make_grid tiles row by row like torch's helper and keeps the dtype."""
    images = _sample((count, channels, 4, 6), dtype)
    expected = tb_utils.make_grid(images, ncols=ncols)
    result = make_grid(images, ncols=ncols)
    assert result.dtype == expected.dtype
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("level", [None, 0, 1, 9])
def test_encode_png_round_trips(channels: int, level: int | None) -> None:
    """encode_png writes a valid PNG (CRCs checked by Pillow) that decodes to the input."""
    image = _sample((13, 17, channels), "uint8")
    png = encode_png(image, level)
    Image.open(io.BytesIO(png)).verify()
    decoded = _decode(png)
    np.testing.assert_array_equal(decoded.reshape(image.shape), image)


def test_encode_png_accepts_two_dimensional_gray() -> None:
    """An (H, W) array is encoded as an 8-bit grayscale PNG."""
    image = _sample((7, 9), "uint8")
    decoded = Image.open(io.BytesIO(encode_png(image)))
    assert decoded.mode == "L"
    np.testing.assert_array_equal(np.asarray(decoded), image)


def test_encode_png_stores_noise_and_compresses_smooth_images() -> None:
    """Noise is stored (no zlib work wasted), while a smooth image still compresses well."""
    noise = _sample((256, 256, 3), "uint8")
    ramp = np.linspace(0, 255, 256).astype(np.uint8)
    smooth = np.stack(np.broadcast_arrays(ramp[:, None], ramp[None, :], ramp[:, None]), axis=2)
    noise_png, smooth_png = encode_png(noise), encode_png(smooth)
    idat = noise_png[noise_png.index(b"IDAT") + 4 :]
    assert idat[1] & 0xC0 == 0  # zlib header: FLEVEL 0, the fastest (stored) setting
    assert len(noise_png) > noise.nbytes
    assert len(smooth_png) < smooth.nbytes // 20
    assert len(zlib.compress(smooth.tobytes(), 6)) > len(smooth_png) // 2
    np.testing.assert_array_equal(_decode(smooth_png), smooth)


BOX_CASES = [
    (np.array([[2, 3, 20, 15]]), None, 1),
    (np.array([[2.5, 3.25, 20.75, 15.5], [10, 1, 38, 28]], dtype=np.float32), ["cat", "dog"], 1),
    (np.array([[0, 0, 39, 29], [5, 5, 9, 9]], dtype=np.float64), ["one", ""], 0.5),
    (np.array([[1, 12, 30, 25]], dtype=np.int64), ["label"], 2),
    (np.zeros((0, 4)), None, 1),
]


@pytest.mark.parametrize(("boxes", "labels", "rescale"), BOX_CASES)
def test_boxes_match_torch_rendering(
    boxes: np.ndarray[Any, Any], labels: list[str] | None, rescale: float
) -> None:
    """Boxes, labels and rescaling render the same pixels as torch's image_boxes."""
    image = _sample((3, 30, 40), "float32")
    expected = (
        tb_summary.image_boxes("t", image, boxes, rescale=rescale, dataformats="CHW", labels=labels)
        .value[0]
        .image
    )
    payload = image_summary_payload(image, "CHW", boxes=boxes, labels=labels, rescale=rescale)
    np.testing.assert_array_equal(_decode(payload.encoded), _decode(expected.encoded_image_string))
    assert (payload.height, payload.width, payload.channels) == (
        expected.height,
        expected.width,
        expected.colorspace,
    )
    drawn = draw_boxes(to_hwc_uint8(image, "CHW"), boxes, labels, rescale=rescale)
    np.testing.assert_array_equal(drawn, _decode(expected.encoded_image_string))


def test_boxes_on_rgba_image_match_torch() -> None:
    """Drawing on a four-channel image keeps the alpha channel as torch does."""
    image = _sample((30, 40, 4), "uint8")
    boxes = np.array([[3, 4, 25, 20]])
    expected = tb_summary.image_boxes("t", image, boxes, dataformats="HWC", labels=["x"])
    np.testing.assert_array_equal(
        draw_boxes(image, boxes, ["x"]), _decode(expected.value[0].image.encoded_image_string)
    )


def test_draw_boxes_does_not_modify_its_input() -> None:
    """draw_boxes returns a new array and leaves the image it was given untouched."""
    image = np.zeros((20, 20, 3), dtype=np.uint8)
    drawn = draw_boxes(image, [[2, 2, 15, 15]], ["a"])
    assert drawn.any()
    assert not image.any()


def test_figure_to_hwc_matches_torch() -> None:
    """A figure and a list of figures render to torch's pixels, transposed to HWC."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    figures = []
    for index in range(2):
        fig = Figure(figsize=(2, 1.5), dpi=50)
        fig.add_subplot().plot([0, 1, 2], [index, 2, 1])
        figures.append(fig)
    expected_one = tb_utils.figure_to_image(figures[0], close=False).transpose(1, 2, 0)
    np.testing.assert_array_equal(figure_to_hwc(figures[0], close=False), expected_one)
    expected_list = tb_utils.figure_to_image(figures, close=False).transpose(0, 2, 3, 1)
    result = figure_to_hwc(figures, close=False)
    assert result.shape == (2, 75, 100, 3)
    np.testing.assert_array_equal(result, expected_list)


def test_figure_to_hwc_closes_pyplot_figures() -> None:
    """close=True closes a pyplot figure after rendering; close=False keeps it open."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kept, closed = plt.figure(figsize=(1, 1)), plt.figure(figsize=(1, 1))
    figure_to_hwc(kept, close=False)
    figure_to_hwc(closed)
    assert plt.fignum_exists(kept.number)
    assert not plt.fignum_exists(closed.number)
    plt.close(kept)


def test_figure_to_hwc_without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing matplotlib raises ImportError that says how to install it."""
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        figure_to_hwc(object())


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: to_hwc_uint8(np.zeros((3, 4, 4)), "CHWN"), ValueError, "4 dimensions"),
        (lambda: to_hwc_uint8(np.zeros((3, 4, 4)), "CHH"), ValueError, "ordering"),
        (lambda: to_hwc_uint8(np.zeros((3, 4, 4)), "XYZ"), ValueError, "ordering"),
        (lambda: to_hwc_uint8(np.zeros((3, 4, 4)), "C"), ValueError, "ordering"),
        (lambda: to_hwc_uint8(np.zeros((3, 4, 4)), 3), TypeError, "dataformats"),
        (lambda: to_hwc_uint8(np.zeros((3, 0, 4)), "CHW"), ValueError, "empty"),
        (lambda: to_hwc_uint8(np.zeros((5, 4, 4)), "CHW"), ValueError, "1 to 4 channels"),
        (lambda: to_hwc_uint8(np.zeros((2, 4, 4, 4)), "NCHW"), ValueError, "1 or 3 channels"),
        (lambda: to_hwc_uint8(np.full((3, 2, 2), np.nan), "CHW"), ValueError, "NaN"),
        (lambda: to_hwc_uint8("cat.png", "CHW"), TypeError, "img_tensor"),
        (lambda: to_hwc_uint8([[1, 2], [3]], "HW"), TypeError, "rectangular"),
        (lambda: to_hwc_uint8(np.zeros((2, 2), complex), "HW"), TypeError, "dtype"),
        (lambda: make_grid(np.zeros((2, 3, 4, 4)), ncols=0), ValueError, "ncols"),
        (lambda: make_grid(np.zeros((2, 4, 4)), ncols=2), ValueError, "images_nchw"),
        (lambda: encode_png(np.zeros((4, 4, 3))), TypeError, "uint8"),
        (lambda: encode_png(np.zeros((4, 4, 5), np.uint8)), ValueError, "C in 1..4"),
        (lambda: encode_png(np.zeros((4, 4, 3), np.uint8), 10), ValueError, "level"),
        (lambda: draw_boxes(np.zeros((4, 4, 3), np.uint8), [1, 2, 3, 4]), ValueError, r"\(N, 4\)"),
        (
            lambda: draw_boxes(np.zeros((4, 4, 3), np.uint8), [[0, 0, 2, np.nan]]),
            ValueError,
            "finite",
        ),
        (
            lambda: draw_boxes(np.zeros((4, 4, 3), np.uint8), [[0, 0, 2, 2]], ["a", "b"]),
            ValueError,
            "one entry per box",
        ),
        (
            lambda: draw_boxes(np.zeros((4, 4, 3), np.uint8), [[0, 0, 2, 2]], rescale=0.1),
            ValueError,
            "rescale",
        ),
        (
            lambda: draw_boxes(np.zeros((4, 4, 3), np.uint8), [[0, 0, 2, 2]], rescale="2"),
            TypeError,
            "rescale",
        ),
        (lambda: as_numpy(torch.zeros(2, device="meta"), "x"), ValueError, "meta"),
    ],
)
def test_bad_input_raises_clear_errors(call: Any, error: type[Exception], match: str) -> None:
    """Each invalid argument raises the documented exception naming the problem."""
    with pytest.raises(error, match=match):
        call()


def test_figure_errors() -> None:
    """figure_to_hwc rejects non-figures, empty lists and figures of different sizes."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    with pytest.raises(TypeError, match="Figure"):
        figure_to_hwc(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="non-empty"):
        figure_to_hwc([])
    with pytest.raises(ValueError, match="one size"):
        figure_to_hwc([Figure(figsize=(1, 1)), Figure(figsize=(2, 1))], close=False)


def test_media_modules_do_not_import_heavy_packages() -> None:
    """Importing the media modules loads none of torch, matplotlib, tensorboard, protobuf."""
    code = (
        "import sys\n"
        "import stoker.tensorboard._image, stoker.tensorboard._video\n"
        "import stoker.tensorboard._audio, stoker.tensorboard._embedding\n"
        "heavy = {'torch', 'matplotlib', 'tensorboard', 'google.protobuf'} & set(sys.modules)\n"
        "print(sorted(heavy))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"
