"""Wire primitives: varints, zigzag and vectorised varint packing round-trip exactly."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from stoker.tensorboard._proto import wire


@given(st.integers(min_value=-(2**63), max_value=2**64 - 1))
def test_varint_round_trip(value: int) -> None:
    """Every int64/uint64 survives varint encoding (negatives as their 64-bit complement)."""
    decoded, end = wire.decode_varint(wire.encode_varint(value), 0)
    assert decoded == value % 2**64
    assert end == len(wire.encode_varint(value))


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_zigzag_round_trip(value: int) -> None:
    """Zigzag maps signed to unsigned and back, small magnitudes to small numbers."""
    assert wire.unzigzag(wire.zigzag(value)) == value
    assert wire.zigzag(value) == (2 * value if value >= 0 else -2 * value - 1)


@given(st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=50))
def test_vectorised_varints_match_scalar_encoding(values: list[int]) -> None:
    """pack_varints gives the same bytes as encoding each value on its own."""
    expected = b"".join(wire.encode_varint(v) for v in values)
    assert wire.pack_varints(np.array(values, dtype=np.int64)) == expected
    assert wire.unpack_varints(expected) == [v % 2**64 for v in values]
