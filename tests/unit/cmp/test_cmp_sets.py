"""stoker.cmp sets under options that change element equality: matching, report and cost."""

from __future__ import annotations

from typing import Any

import pytest

from stoker.cmp import (
    Option,
    approx,
    comparer,
    diff,
    equal,
    ignore,
    nan_equal,
    transformer,
)


def report(*rows: str) -> str:
    """Join report rows into the text diff returns."""
    return "".join(row + "\n" for row in rows)


def _lower(a: str, b: str) -> bool:
    return a.lower() == b.lower()


OPTION_CASES: list[tuple[Any, Any, Option]] = [
    ({1.0, 2.0}, {1.0 + 1e-12, 2.0}, approx()),
    (frozenset({0.5, 3.0}), frozenset({0.51, 3.0}), approx(abs=0.05)),
    ({float("nan"), 1.0}, {float("nan"), 1.0}, nan_equal()),
    ({"A", "b"}, {"a", "B"}, comparer(str, _lower)),
    ({"Ab", "c"}, {"aB", "C"}, transformer(str, str.lower)),
    ({1, 2.5}, {1, 3.5}, ignore(float)),
    ({1, 2.5}, {1}, ignore(float)),
    ({(1, "a"), (2, "b")}, {(1, "x"), (2, "y")}, ignore("[*][1]")),
    ({"k": {0.1 + 0.2}}, {"k": {0.3}}, approx()),
]


@pytest.mark.parametrize(("x", "y", "option"), OPTION_CASES)
def test_set_elements_honour_options(x: Any, y: Any, option: Option) -> None:
    """Options reach set elements: the sets differ without the option and are equal with it."""
    assert not equal(x, y)
    assert diff(x, y) != ""
    assert equal(x, y, option)
    assert diff(x, y, option) == ""


def test_unmatched_elements_are_removed_and_added_lines() -> None:
    """Elements left without a match are '-'/'+' lines; matched ones are shown once, sorted."""
    got = diff({1.0, 2.0, 5.0}, {1.0 + 1e-12, 2.0, 7.0}, approx())
    assert got == report("  set{", "  \t1.0,", "  \t2.0,", "- \t5.0,", "+ \t7.0,", "  }")


def test_matching_is_one_to_one() -> None:
    """Two elements close to one element are not both matched to it."""
    x, y = {1.0, 1.0 + 1e-12}, {1.0}
    assert not equal(x, y, approx())
    assert diff(x, y, approx()) == report("  set{", "  \t1.0,", "- \t1.000000000001,", "  }")


def test_nan_elements_report_without_nan_equal_matching() -> None:
    """Without nan_equal two distinct NaN objects stay unmatched under another option."""
    x, y = {float("nan")}, {float("nan")}
    assert diff(x, y, approx()) == report("  set{", "- \tnan,", "+ \tnan,", "  }")
    assert diff(x, y, approx(), nan_equal()) == ""


def test_ignore_predicate_sees_set_element_path() -> None:
    """A set element is at the path '[*]' below its set for ignore predicates."""
    seen: list[str] = []

    def record(path: str) -> bool:
        seen.append(path)
        return False

    assert not equal({"s": {1}}, {"s": {2}}, ignore(record))
    assert '["s"][*]' in seen


def test_identical_elements_match_by_hash_first() -> None:
    """Identical elements cost one comparison each (hash first), not n*m comparisons."""
    calls: list[int] = []

    def counting(a: int, b: int) -> bool:
        calls.append(a)
        return a == b

    values = set(range(40))
    assert equal(values, set(values), comparer(int, counting))
    assert len(calls) == len(values)


def test_comparer_can_make_hash_equal_elements_differ() -> None:
    """Under a comparer, elements equal by hash still go through the comparer."""
    never = comparer(int, lambda a, b: False)
    assert equal({1}, {1})
    assert not equal({1}, {1}, never)
    assert diff({1}, {1}, never) == report("  set{", "- \t1,", "+ \t1,", "  }")
