"""Scalar summaries: the cached add_scalar encoder writes the codec's bytes; new_style tensors."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.tensorboard._proto import EVENT, SUMMARY
from stoker.tensorboard._summary.scalars import ScalarEventEncoder, scalar


@given(
    st.text(min_size=1, max_size=50),
    st.floats(width=32, allow_nan=False),
    st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
    st.floats(min_value=1.0, allow_nan=False),
)
def test_encoder_writes_the_codecs_scalar_event(
    tag: str, value: float, step: int | None, wall_time: float
) -> None:
    """Each call (cached tag or not) equals EVENT.encode of the same scalar event."""
    encoder = ScalarEventEncoder()
    summary = {"value": [{"tag": tag, "simple_value": value}]}
    expected = EVENT.encode({"wall_time": wall_time, "step": step, "summary": summary})
    assert encoder.encode(tag, value, step, wall_time) == expected
    assert encoder.encode(tag, value, step, wall_time) == expected


def test_values_beyond_float32_become_infinities() -> None:
    """A float too large for float32 is stored as an infinity of its sign, as protobuf does."""
    data = ScalarEventEncoder().encode("x", -1e300, 1, 0.0)
    value = EVENT.decode(data)["summary"]["value"][0]["simple_value"]
    assert value == -math.inf


@pytest.mark.parametrize(("tag", "error"), [(3, TypeError), ("", ValueError)])
def test_bad_tags_raise_before_anything_is_cached(tag: object, error: type[Exception]) -> None:
    """A tag that is not a non-empty str raises the tag error."""
    encoder = ScalarEventEncoder()
    with pytest.raises(error, match="tag must be"):
        encoder.encode(tag, 1.0, 1, 0.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("double_precision", [False, True])
def test_new_style_scalars_are_scalar_tensors(double_precision: bool) -> None:
    """new_style writes a rank-0 tensor of the scalars plugin, float64 when asked."""
    (value,) = SUMMARY.decode(scalar("acc", 0.25, True, double_precision))["value"]
    assert value["metadata"]["plugin_data"]["plugin_name"] == "scalars"
    field = "double_val" if double_precision else "float_val"
    assert value["tensor"][field] == [0.25]
