"""Tensor decoding: every dtype and encoding writers use, and malformed tensors raising clearly."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tb_events import write_calls, write_raw_events
from tb_loaders import accumulate

from stoker.tensorboard import CorruptRecordWarning, EventFileError, Reader, SummaryWriter
from stoker.tensorboard._proto import (
    event_bytes,
    frame_many,
    scan_blocks,
    summary_of,
    summary_value,
)
from stoker.tensorboard._proto import messages as pb
from stoker.tensorboard._read.decode import ScalarFastPath

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]


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

    reader = Reader(write_calls(tmp_path, [("add_tensor", ("t", array, 5), {})]))
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
    reader = Reader(write_calls(tmp_path, [("add_tensor", ("b", tensor, 1), {})]))
    (event,) = reader.tensors("b")
    assert event.dtype == "bfloat16"
    assert event.value.dtype == np.float32
    assert event.value.tolist() == tensor.float().tolist()


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
    reader = Reader(write_raw_events(tmp_path, [{"step": 3, "summary": summary}]))
    (event,) = reader.tensors("t")
    assert event.value.dtype == expected.dtype
    assert np.array_equal(event.value, expected)


def test_malformed_tensor_raises_event_file_error_on_access(tmp_path: Path) -> None:
    """A tensor whose content does not fill its shape raises EventFileError when decoded."""
    proto = {"dtype": pb.DT_FLOAT, "tensor_shape": {"dim": [{"size": 9}]}, "tensor_content": b"x"}
    reader = Reader(
        write_raw_events(tmp_path, [{"summary": {"value": [{"tag": "t", "tensor": proto}]}}])
    )
    with pytest.raises(EventFileError, match="malformed"):
        reader.tensors("t")


@pytest.mark.parametrize(
    ("dims", "match"),
    [
        ([2**40, 2**40], "too large"),
        ([2**62, 2**62, 0], "1 float values for 0 elements"),
        ([1] * 70, "cannot be represented"),
        ([-1], "negative dimension"),
    ],
    ids=["product-overflows-int64", "huge-but-empty", "too-many-dimensions", "negative"],
)
def test_impossible_shapes_raise_event_file_error_not_a_crash(
    tmp_path: Path, dims: list[int], match: str
) -> None:
    """Shapes NumPy cannot hold are reported as EventFileError, for tensors and scalar tensors."""
    shape = {"dim": [{"size": size} for size in dims]}
    tensor = {"dtype": pb.DT_FLOAT, "tensor_shape": shape, "float_val": [1.0]}
    scalars_plugin = {"plugin_data": {"plugin_name": "scalars"}}
    values = [
        {"tag": "t", "tensor": tensor},
        {"tag": "s", "metadata": scalars_plugin, "tensor": tensor},
    ]
    path = write_raw_events(tmp_path, [{"step": 1, "summary": {"value": values}}])
    with pytest.warns(CorruptRecordWarning, match="malformed event"):
        reader = Reader(path)  # the scalar tensor is decoded while reading: skipped with a warning
    with pytest.raises(EventFileError, match=match):
        reader.tensors("t")


_ONE_VALUE = {
    "float": {"dtype": pb.DT_FLOAT, "float_val": [1.0]},
    "double": {"dtype": pb.DT_DOUBLE, "double_val": [1.0]},
    "int64": {"dtype": pb.DT_INT64, "int64_val": [7]},
    "complex128": {"dtype": pb.DT_COMPLEX128, "dcomplex_val": [1.0, 2.0]},
    "string": {"dtype": pb.DT_STRING, "string_val": [b"x"]},
    "no-values": {"dtype": pb.DT_DOUBLE},
}


@pytest.mark.parametrize("count", [2**31 - 1, 2**31, 10**6])
@pytest.mark.parametrize("values", list(_ONE_VALUE), ids=list(_ONE_VALUE))
def test_a_tiny_tensor_cannot_broadcast_into_gigabytes(
    tmp_path: Path, values: str, count: int
) -> None:
    """A record of a few dozen bytes claiming 2**31 elements from one value is malformed.

    Broadcasting it (TensorFlow's rule) would take 8-32 GiB: it is refused before anything is
    allocated, as a corrupt event while reading (scalar tensors) and as EventFileError when the
    tensor is asked for.
    """
    import tracemalloc

    tensor = {"tensor_shape": {"dim": [{"size": count}]}, **_ONE_VALUE[values]}
    scalars_plugin = {"plugin_data": {"plugin_name": "scalars"}}
    path = write_raw_events(
        tmp_path,
        [
            {"step": 1, "summary": {"value": [{"tag": "t", "tensor": tensor}]}},
            {
                "step": 1,
                "summary": {"value": [{"tag": "s", "metadata": scalars_plugin, "tensor": tensor}]},
            },
            {"step": 2, "summary": {"value": [{"tag": "x", "simple_value": 1.0}]}},
        ],
    )
    tracemalloc.start()
    try:
        with pytest.warns(CorruptRecordWarning, match="malformed event"):
            reader = Reader(path)
        with pytest.raises(EventFileError, match=r"too large|broadcasting makes at most"):
            reader.tensors("t")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20
    assert reader.scalars("x").step.tolist() == [2]


def test_broadcasting_up_to_the_limit_still_repeats_the_last_value(tmp_path: Path) -> None:
    """A few values padding a shape of up to MAX_BROADCAST_ELEMENTS decode as TensorFlow's do."""
    from stoker.tensorboard._read.decode import MAX_BROADCAST_ELEMENTS

    tensor = {
        "dtype": pb.DT_INT32,
        "tensor_shape": {"dim": [{"size": MAX_BROADCAST_ELEMENTS}]},
        "int_val": [1, 5],
    }
    reader = Reader(
        write_raw_events(tmp_path, [{"summary": {"value": [{"tag": "t", "tensor": tensor}]}}])
    )
    (event,) = reader.tensors("t")
    assert event.value.tolist() == [1] + [5] * (MAX_BROADCAST_ELEMENTS - 1)


def test_a_string_tensor_without_values_is_empty_strings(tmp_path: Path) -> None:
    """A string tensor of shape [3] with no ``string_val`` decodes to three empty strings.

    A string tensor of shape [3] with no ``string_val`` decodes to three empty strings,
    whether it is a plain tensor or the text plugin's (which once crashed the reader with an
    AttributeError on integer zeros, found by the fuzz test).
    """
    tensor = {"dtype": pb.DT_STRING, "tensor_shape": {"dim": [{"size": 3}]}}
    text = {"plugin_data": {"plugin_name": "text"}}
    values = [{"tag": "t", "tensor": tensor}, {"tag": "x", "metadata": text, "tensor": tensor}]
    reader = Reader(write_raw_events(tmp_path, [{"summary": {"value": values}}]))
    (event,) = reader.tensors("t")
    assert event.value.tolist() == [b"", b"", b""]
    (text_event,) = reader.text("x")
    assert text_event.value.tolist() == ["", "", ""]


_TAGS = st.lists(
    st.text(st.characters(codec="utf-8"), min_size=0, max_size=12), min_size=1, max_size=4
)


@given(
    _TAGS,
    st.integers(-(2**63), 2**63 - 300),
    st.integers(1, 200),
    st.lists(st.tuples(st.integers(0, 10**4), st.binary(max_size=40)), max_size=6),
    st.floats(width=32),
)
def test_block_decoding_of_scalars_equals_event_by_event(
    tags: list[str], first_step: int, steps: int, others: list[tuple[int, bytes]], value: float
) -> None:
    """Scalar events decoded a block at a time equal what the event-by-event fast path gives.

    Plain scalar events decoded a block at a time (per length, NumPy) give exactly what the
    event-by-event fast path gives, for every record: tags of any text (empty included),
    steps of every varint width (negative, zero, near 2**63), any float32, and other events
    and stray bytes between them.
    """
    events = [
        event_bytes(
            summary_of(summary_value(tag, {"simple_value": value})),
            first_step + step,
            1.7e9 + step / 8,
        )
        for step in range(steps)
        for tag in tags
    ]
    for at, raw in others:
        events.insert(at % (len(events) + 1), raw)
    fast = ScalarFastPath()
    for block in scan_blocks(frame_many(events)).blocks:
        hits = fast.match_block(block)
        for row in range(len(block)):
            expected = ScalarFastPath().match(block.data(row))
            assert bool(hits.hit[row]) is (expected is not None)
            if expected is not None:
                got = (
                    hits.tags[hits.tag[row]],
                    int(hits.step[row]),
                    struct.pack("<d", hits.wall_time[row]),
                    struct.pack("<d", hits.value[row]),
                )
                tag, step, wall_time, scalar = expected
                assert got == (tag, step, struct.pack("<d", wall_time), struct.pack("<d", scalar))


def test_the_scalar_fast_path_remembers_no_image_and_still_reads_a_long_tag(tmp_path: Path) -> None:
    """Every event reaches the fast path; an image's bytes must not stay in its tag cache."""
    long_tag = "t" * 600  # its prefix is over the cached length: decoded each time
    with SummaryWriter(str(tmp_path)) as writer:
        for step in range(12):
            pixels = np.random.default_rng(step).integers(0, 255, (3, 48, 48), dtype=np.uint8)
            writer.add_image("picture", pixels, step)
            writer.add_scalar("loss", step / 2, step)
            writer.add_scalar(long_tag, step * 3.0, step)
    (path,) = tmp_path.glob("events.out.tfevents.*")
    fast = ScalarFastPath()
    found = []
    for block in scan_blocks(path.read_bytes()).blocks:
        hits = fast.match_block(block)
        found += [(hits.tags[hits.tag[row]], int(hits.step[row]), float(hits.value[row]))
                  for row in range(len(block)) if hits.hit[row]]  # fmt: skip
    assert sorted(found) == sorted(
        [("loss", step, step / 2) for step in range(12)]
        + [(long_tag, step, step * 3.0) for step in range(12)]
    )
    remembered = list(fast._prefixes)
    assert remembered, "the short scalar tag's prefix is remembered"
    assert max(map(len, remembered)) <= 512  # no image record (about 7 KB each) among them
