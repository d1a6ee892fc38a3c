"""Hand-spliced Event bytes are exactly what the codec encodes from the same message dict."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.tensorboard._proto import (
    EVENT,
    FILE_VERSION,
    SUMMARY,
    event_bytes,
    file_version_event,
    scalar_prefix,
    scalar_prefix_tag,
    set_time_and_step,
    summary_of,
    summary_value,
)

steps = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))
# The fast paths always write the wall time; the codec leaves +0.0 out as a proto3 default.
times = st.floats(allow_nan=False).filter(lambda t: t != 0 or math.copysign(1.0, t) < 0)
tags = st.text(min_size=1, max_size=300)


@given(steps, times)
def test_event_bytes_equal_the_codec(step: int | None, wall_time: float) -> None:
    """An Event around an encoded Summary: wall time always, the step unless it is 0 or None."""
    summary = summary_of(summary_value("loss", {"simple_value": 0.5}))
    expected = EVENT.encode({"wall_time": wall_time, "step": step, "summary": summary})
    assert event_bytes(summary, step, wall_time) == expected


@given(st.lists(tags, max_size=4))
def test_summary_of_equals_the_codec(names: list[str]) -> None:
    """Summary values joined by summary_of equal the encoded Summary holding them."""
    values = [summary_value(tag, {"simple_value": 1.0}) for tag in names]
    fields = [{"tag": tag, "simple_value": 1.0} for tag in names]
    assert summary_of(*values) == SUMMARY.encode({"value": fields})


@given(times)
def test_file_version_event_equals_the_codec(wall_time: float) -> None:
    """The first record of every file is Event{wall_time, file_version}."""
    expected = EVENT.encode({"wall_time": wall_time, "file_version": FILE_VERSION})
    assert file_version_event(wall_time) == expected


@given(tags, steps, times)
def test_scalar_prefix_rebuilds_a_scalar_event(tag: str, step: int | None, wall: float) -> None:
    """Time, step, prefix and four value bytes make the codec's scalar event; the tag reads back."""
    expected = EVENT.encode(
        {
            "wall_time": wall,
            "step": step,
            "summary": {"value": [{"tag": tag, "simple_value": 0.0}]},
        }
    )
    head = event_bytes(b"", step, wall)[: -len(EVENT.key("summary")) - 1]
    assert head + scalar_prefix(tag) + b"\x00\x00\x00\x00" == expected
    assert scalar_prefix_tag(scalar_prefix(tag)) == tag


@pytest.mark.parametrize(
    "prefix",
    [
        b"",
        b"\x2a",
        scalar_prefix("loss")[:-1],
        scalar_prefix("loss") + b"x",
        b"\x2a\x08\x0a\x06\x0a\x04\xff\xfe\xfd\xfc\x15",
    ],
    ids=["empty", "key-only", "short", "long", "not-utf8"],
)
def test_other_bytes_are_no_scalar_prefix(prefix: bytes) -> None:
    """Anything scalar_prefix would not write for some tag is not taken for a scalar prefix."""
    assert scalar_prefix_tag(prefix) is None


@given(steps, times, st.integers(-(2**63), 2**63 - 1))
def test_set_time_and_step_rewrites_only_time_and_step(
    step: int | None, wall_time: float, old_step: int
) -> None:
    """The wall time is replaced, the step replaced when given (kept otherwise), the rest kept."""
    event = EVENT.encode({"wall_time": 1.0, "step": old_step, "file_version": "x"})
    kept = old_step if step is None else step
    expected = EVENT.encode({"wall_time": wall_time, "step": kept, "file_version": "x"})
    assert set_time_and_step(event, wall_time, step) == expected
