"""The shared argument checks: check_int's answers and errors, and torch_first's joins."""

from __future__ import annotations

import numpy as np
import pytest

from stoker._checks import check_int, torch_first


@pytest.mark.parametrize("value", [0, 7, np.int64(7), np.uint8(3)])
def test_check_int_returns_a_plain_int(value: object) -> None:
    result = check_int(value, "count")
    assert type(result) is int
    assert result == int(value)  # type: ignore[call-overload]


@pytest.mark.parametrize("value", [True, np.bool_(False), 1.0, "3", None, [1]])
def test_check_int_names_the_bad_value_and_its_type(value: object) -> None:
    with pytest.raises(TypeError, match=r"count must be an int, got .* of type"):
        check_int(value, "count")


def test_check_int_allows_none_only_when_asked() -> None:
    assert check_int(None, "count", allow_none=True) is None
    with pytest.raises(TypeError, match=r"count must be an int or None, got 1.5 of type float"):
        check_int(1.5, "count", allow_none=True)


def test_check_int_below_the_minimum_says_torch_text_first_then_the_source_and_hint() -> None:
    with pytest.raises(ValueError, match=r"\$N") as caught:
        check_int(-1, "n", minimum=0, source="$N", hint="use 0", torch_text="n is bad.")
    assert str(caught.value) == "n is bad. (stoker: n must be >= 0, got -1 from $N; use 0)"


@pytest.mark.parametrize(
    ("torch_text", "expected"),
    [
        ("torch says so.", "torch says so. (stoker: ours)"),
        ("really?  ", "really? (stoker: ours)"),
        ("a clause", "a clause: ours"),
        ("a clause; ", "a clause; ours"),
        ("a list:", "a list: ours"),
        ("", "ours"),
        ("   ", "ours"),
    ],
)
def test_torch_first_puts_torch_text_first(torch_text: str, expected: str) -> None:
    assert torch_first(torch_text, "ours") == expected
