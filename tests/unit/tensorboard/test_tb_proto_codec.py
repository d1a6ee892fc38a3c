"""The codec: decoding what is on the wire, packing, and clear errors for bad dicts and bytes."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.tensorboard._proto import WireError, wire
from stoker.tensorboard._proto import messages as pb


def test_decoding_reads_values_and_skips_unknown_fields() -> None:
    """Decoded dicts hold typed values, and unknown fields in the input are ignored."""
    data = pb.EVENT.encode({"wall_time": 2.5, "step": -3, "file_version": "v"})
    unknown = wire.key(99, wire.LEN) + b"\x02ab" + wire.key(98, wire.VARINT) + b"\x05"
    assert pb.EVENT.decode(data + unknown) == {"wall_time": 2.5, "step": -3, "file_version": "v"}


def test_unpacked_repeated_numbers_are_accepted() -> None:
    """Repeated numbers written one field each (proto2 style) decode like packed ones."""
    data = b"".join(wire.key(7, wire.VARINT) + wire.encode_varint(v) for v in (1, 2, 300))
    assert pb.TENSOR.decode(data)["int_val"] == [1, 2, 300]


def test_numpy_arrays_encode_like_lists() -> None:
    """Repeated numeric fields accept NumPy arrays and give the same bytes as lists."""
    values = np.array([-5, 0, 7, 2**20], dtype=np.int32)
    as_list = pb.TENSOR.encode({"int_val": values.tolist(), "float_val": [0.5, 1.5]})
    as_array = pb.TENSOR.encode({"int_val": values, "float_val": np.array([0.5, 1.5])})
    assert as_array == as_list


def test_unknown_field_name_is_a_type_error() -> None:
    """A misspelt field name raises TypeError that names the message and the field."""
    with pytest.raises(TypeError, match="Event has no field 'stepp'"):
        pb.EVENT.encode({"stepp": 1})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x08", "truncated varint"),
        (b"\x0a\x05ab", "past the end"),
        (b"\x09\x00\x00", "past the end"),
        (b"\x0b", "unsupported wire type"),
        (b"\x00\x01", "field number 0"),
        (b"\x08" + b"\xff" * 11, "longer than ten bytes"),
    ],
)
def test_malformed_bytes_raise_wire_error(data: bytes, message: str) -> None:
    """Truncated or invalid input raises WireError (a ValueError) with the reason."""
    with pytest.raises(WireError, match=message):
        pb.EVENT.decode(data)


@given(st.floats(allow_nan=False, width=32), st.floats(allow_nan=False))
def test_fixed_width_fields_round_trip(single: float, double: float) -> None:
    """Float and double fields keep their exact bit patterns through encode and decode."""
    decoded = pb.SUMMARY_AUDIO.decode(pb.SUMMARY_AUDIO.encode({"sample_rate": single}))
    assert struct.pack("<f", decoded.get("sample_rate", 0.0)) == struct.pack("<f", single)
    event = pb.EVENT.decode(pb.EVENT.encode({"wall_time": double}))
    assert struct.pack("<d", event.get("wall_time", 0.0)) == struct.pack("<d", double)


def test_fields_give_their_number_and_key_by_name() -> None:
    """number() and key() answer from the declaration, the key as the codec writes it."""
    assert pb.EVENT.number("summary") == 5
    assert pb.EVENT.key("wall_time") == wire.key(1, wire.I64)
    assert pb.SUMMARY_VALUE.key("simple_value") == wire.key(2, wire.I32)
    assert pb.EVENT.encode({"step": 7}).startswith(pb.EVENT.key("step"))
    with pytest.raises(KeyError):
        pb.EVENT.number("stepp")


@pytest.mark.parametrize(
    ("kind", "data", "message"),
    [
        (pb.HISTOGRAM, wire.key(6, wire.LEN) + b"\x07" + bytes(7), "not a multiple of 8"),
        (pb.STRUCT, wire.key(1, wire.VARINT) + b"\x01", "map field fields"),
    ],
    ids=["partial-packed-double", "map-as-varint"],
)
def test_malformed_sub_structures_raise_wire_error(
    kind: pb.MessageType, data: bytes, message: str
) -> None:
    """Packed doubles of a partial width and map entries that are no messages raise WireError."""
    with pytest.raises(WireError, match=message):
        kind.decode(data)


def test_nesting_deeper_than_the_limit_raises_wire_error() -> None:
    """Messages nested past MAX_DEPTH raise WireError instead of exhausting the stack."""
    value = b""
    for _ in range(2000):  # ListValue{values: [Value{list_value: ...}]}, innermost first
        inner = wire.key(6, wire.LEN) + wire.encode_varint(len(value)) + value
        value = wire.key(1, wire.LEN) + wire.encode_varint(len(inner)) + inner
    with pytest.raises(WireError, match="nested more than 100"):
        pb.LIST_VALUE.decode(value)


@pytest.mark.parametrize(
    ("message", "values"),
    [
        (pb.EVENT, {"step": 2**63}),
        (pb.EVENT, {"step": -(2**63) - 1}),
        (pb.TENSOR, {"dtype": 2**31}),
        (pb.TENSOR, {"int_val": [2**31]}),
        (pb.TENSOR, {"int64_val": [2**64]}),
        (pb.TENSOR, {"uint32_val": [-1]}),
        (pb.TENSOR, {"uint64_val": [2**64]}),
        (pb.TENSOR_SHAPE_DIM, {"size": 2**63}),
    ],
)
def test_integers_outside_their_field_type_raise_instead_of_wrapping(
    message: pb.MessageType, values: dict[str, object]
) -> None:
    """An int that does not fit its field's type raises ValueError as protobuf does."""
    with pytest.raises(ValueError, match="Value out of range"):
        message.encode(values)
