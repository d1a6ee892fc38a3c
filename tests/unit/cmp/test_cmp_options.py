"""stoker.cmp options: approx, nan_equal, ignore, sort_sequences, comparer, transformer."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest

from stoker.cmp import (
    Option,
    approx,
    comparer,
    diff,
    equal,
    ignore,
    nan_equal,
    sort_sequences,
    transformer,
)

NAN = float("nan")


@dataclasses.dataclass
class Run:
    name: str
    loss: float
    step: int
    meta: dict[str, Any] = dataclasses.field(default_factory=dict)


def report(*rows: str) -> str:
    """Join report rows into the text diff returns."""
    return "".join(row + "\n" for row in rows)


# approx ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "y", "option", "expected"),
    [
        (1.0, 1.0 + 1e-12, approx(), True),
        (1.0, 1.001, approx(), False),
        (1.0, 1.001, approx(rel=1e-2), True),
        (0.0, 1e-9, approx(), False),
        (0.0, 1e-9, approx(abs=1e-6), True),
        (1e6, 1e6 + 1, approx(rel=1e-5), True),
        (math.inf, math.inf, approx(abs=1.0), True),
        (math.inf, 1e308, approx(rel=1.0), False),
        (NAN, NAN, approx(abs=1.0), False),
        (1 + 1j, 1 + 1.0000001j, approx(rel=1e-6), True),
        (1, 2, approx(abs=5.0), False),
        (np.float32(1.0), np.float32(1.0001), approx(rel=1e-3), True),
        ([1.0, {"k": 2.0}], [1.0 + 1e-11, {"k": 2.0 - 1e-11}], approx(), True),
    ],
)
def test_approx_tolerances(x: Any, y: Any, option: Option, expected: bool) -> None:
    """``approx`` allows max(rel * max(|x|, |y|), abs).

    It skips ints and NaN, and reaches nested floats.
    """
    assert equal(x, y, option) is expected
    assert (diff(x, y, option) == "") is expected


def test_approx_on_arrays() -> None:
    """``approx`` compares float arrays element-wise; the report lists elements out of tolerance."""
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([1.0 + 1e-12, 2.5, 3.0])
    assert not equal(x, y)
    assert equal(x, y, approx(abs=0.6))
    assert diff(x, y, approx(rel=1e-9)) == report(
        "  ndarray{",
        "  \tdtype: float64,",
        "  \tshape: (3,),",
        "- \t[1]:   2.0,",
        "+ \t[1]:   2.5,",
        "  \t... // 2 identical elements",
        "  }",
    )


def test_approx_equal_context_shows_the_shorter_value() -> None:
    """An element equal within tolerance is shown once, in its shorter spelling."""
    got = diff([1.0 + 1e-12, 5.0], [1.0, 6.0], approx())
    assert got == report("  list[", "  \t1.0,", "- \t5.0,", "+ \t6.0,", "  ]")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"rel": -1.0}, ValueError, "approx rel must be finite and >= 0, got -1.0"),
        ({"abs": math.inf}, ValueError, "approx abs must be finite and >= 0, got inf"),
        ({"rel": "0.1"}, TypeError, "approx rel must be a real number, got '0.1'"),
        ({"abs": True}, TypeError, "approx abs must be a real number, got True"),
        ({"rel": 0.0, "abs": 0.0}, ValueError, "approx needs a tolerance"),
    ],
)
def test_approx_rejects_bad_tolerances(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    """A negative, infinite, non-numeric or all-zero tolerance is refused, naming the value."""
    with pytest.raises(error, match=match):
        approx(**kwargs)


# nan_equal ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "y", "expected"),
    [
        (NAN, NAN, True),
        (NAN, 1.0, False),
        (complex(NAN, 0), complex(NAN, 0), True),
        ([NAN, 1.0], [NAN, 1.0], True),
        (np.array([NAN, 1.0]), np.array([NAN, 1.0]), True),
        (np.array([NAN, 1.0]), np.array([1.0, NAN]), False),
        (np.float32(NAN), np.float32(NAN), True),
    ],
)
def test_nan_equal(x: Any, y: Any, expected: bool) -> None:
    """nan_equal makes NaN equal NaN in floats, complex numbers, lists and arrays, nothing more."""
    assert not equal(x, y)
    assert equal(x, y, nan_equal()) is expected


def test_nan_equal_combines_with_approx() -> None:
    """nan_equal and approx together: NaNs match and other values match within tolerance."""
    assert equal([NAN, 1.0], [NAN, 1.0 + 1e-12], nan_equal(), approx())
    assert not equal([NAN, 1.0], [NAN, 1.0 + 1e-12], nan_equal())


# ignore ------------------------------------------------------------------------------------


def test_ignore_field_path_counts_it_in_the_report() -> None:
    """An ignored field makes no difference and is counted as ignored next to the real one."""
    x, y = Run("a", 0.5, 10), Run("b", 0.7, 10)
    assert equal(x, y, ignore(".loss", ".name"))
    assert diff(x, y, ignore(".loss")) == report(
        "  Run{",
        '- \tname: "a",',
        '+ \tname: "b",',
        "  \t... // 1 ignored and 2 identical fields",
        "  }",
    )


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ('[*]["id"]', True),
        ('[1]["id"]', False),
        ('[0]["id"]', False),
        ("[*].*", False),
    ],
)
def test_ignore_wildcards(where: str, expected: bool) -> None:
    """'*' stands for any one index, key or field; other steps must match exactly."""
    x = [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]
    y = [{"id": 7, "v": "a"}, {"id": 8, "v": "b"}]
    assert equal(x, y, ignore(where)) is expected


def test_ignore_removed_entries_and_elements() -> None:
    """Entries or elements present on one side only are ignored when their path matches."""
    assert equal({"a": 1, "tmp": 2}, {"a": 1}, ignore('["tmp"]'))
    assert equal([1, 2, 3], [1, 2], ignore("[2]"))
    assert not equal([1, 2, 3], [1, 2], ignore("[0]"))


def test_ignore_by_type_and_predicate() -> None:
    """A type ignores its instances anywhere; a predicate receives the spelled path."""
    seen: list[str] = []

    def under_meta(path: str) -> bool:
        seen.append(path)
        return path.startswith(".meta")

    x = Run("a", 0.5, 1, {"host": "h1"})
    y = Run("a", 0.6, 1, {"host": "h2"})
    assert equal(x, y, ignore(float, under_meta))
    assert ".meta" in seen
    seen.clear()
    assert not equal([{"id": 1}], [{"id": 2}], ignore(under_meta))
    assert seen == ["", "[0]", '[0]["id"]']
    assert not equal(x, y, ignore(float))


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((), TypeError, "ignore needs at least one"),
        ((3,), TypeError, "ignore arguments must be path strings, types or callables, got 3"),
        (("",), ValueError, "ignore path must not be empty"),
        (("a..b",), ValueError, "got 'a..b'"),
        (("[unclosed",), ValueError, r"got '\[unclosed'"),
        (("[name]",), ValueError, r"got '\[name\]'"),
        (("a b",), ValueError, "got 'a b'"),
    ],
)
def test_ignore_rejects_malformed_arguments(
    args: tuple[Any, ...], error: type[Exception], match: str
) -> None:
    """A missing, mistyped or unreadable path is refused with the value in the message."""
    with pytest.raises(error, match=match):
        ignore(*args)


# sort_sequences ----------------------------------------------------------------------------


def test_sort_sequences_ignores_order() -> None:
    """Lists and tuples are sorted before comparing; real differences still show, sorted."""
    assert equal([3, 1, 2], [1, 2, 3], sort_sequences())
    assert equal((2, 1), (1, 2), sort_sequences())
    assert not equal([3, 1, 2], [1, 2, 4], sort_sequences())
    assert diff([3, 1, 2], [4, 2, 1], sort_sequences()) == report(
        "  list[", "  \t1,", "  \t2,", "- \t3,", "+ \t4,", "  ]"
    )


def test_sort_sequences_with_key_and_unorderable_elements() -> None:
    """A key orders unorderable elements; without one the failure is a clear TypeError."""
    x = [{"n": 2}, {"n": 1}]
    y = [{"n": 1}, {"n": 2}]
    assert equal(x, y, sort_sequences(key=lambda d: d["n"]))
    with pytest.raises(TypeError, match="sort_sequences must order the elements of the list"):
        equal(x, y, sort_sequences())


def test_sort_sequences_rejects_non_callable_key() -> None:
    """A key that is not callable is refused at construction."""
    with pytest.raises(TypeError, match="sort_sequences key must be a callable or None, got 'n'"):
        sort_sequences(key="n")  # type: ignore[arg-type]


# comparer ----------------------------------------------------------------------------------


def test_comparer_replaces_the_builtin_rule() -> None:
    """A comparer decides for its type, here case-insensitive strings nested in a dict."""
    fold = comparer(str, lambda a, b: a.casefold() == b.casefold())
    assert equal({"k": ["Ab"]}, {"k": ["aB"]}, fold)
    assert diff({"k": ["Ab", "c"]}, {"k": ["aB", "d"]}, fold) == report(
        "  dict{",
        '  \t"k": [',
        '  \t\t"Ab",',
        '- \t\t"c",',
        '+ \t\t"d",',
        "  \t],",
        "  }",
    )


def test_most_specific_comparer_wins() -> None:
    """With comparers for a base and a subclass, the subclass's one decides."""

    class Base:
        pass

    class Child(Base):
        pass

    options = (comparer(Base, lambda a, b: False), comparer(Child, lambda a, b: True))
    assert equal(Child(), Child(), *options)
    assert not equal(Base(), Base(), *options)


def test_comparer_must_return_bool() -> None:
    """A comparer returning a non-bool is an error naming the comparer and the path."""
    with pytest.raises(TypeError, match=r"comparer λ must return a bool, got 1 .* path '\[0\]'"):
        equal([1], [2], comparer(int, lambda a, b: 1))  # type: ignore[arg-type, return-value]


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (
            (3, lambda a, b: True),
            "comparer type must be a type or a non-empty tuple of types, got 3",
        ),
        (((), lambda a, b: True), r"got \(\)"),
        ((int, "eq"), "comparer fn must be callable, got 'eq'"),
    ],
)
def test_comparer_rejects_bad_arguments(args: tuple[Any, Any], match: str) -> None:
    """A non-type, an empty tuple of types, or a non-callable is refused with the value named."""
    with pytest.raises(TypeError, match=match):
        comparer(*args)


# transformer -------------------------------------------------------------------------------


def test_transformer_compares_results_and_shows_inverse() -> None:
    """A transformer compares fn(x) with fn(y); the report wraps them in Inverse(name, ...)."""
    words = transformer(str, lambda s: sorted(s.split()), name="words")
    assert equal("b a", "a b", words)
    assert diff("b a", "a c", words) == report(
        "  str(Inverse(words, list[",
        '  \t"a",',
        '- \t"b",',
        '+ \t"c",',
        "  ]))",
    )


def test_transformer_is_not_reapplied_to_its_own_output() -> None:
    """A transformer whose result has its own type still terminates (applied once per path)."""
    split = transformer(str, str.split)
    assert equal("a b", "a  b", split)
    assert not equal("a b", "a c", split)


def test_transformer_rejects_bad_arguments() -> None:
    """Non-callable functions and non-string names are refused."""
    with pytest.raises(TypeError, match="transformer fn must be callable, got 5"):
        transformer(str, 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="transformer name must be a str or None, got 7"):
        transformer(str, str.upper, name=7)  # type: ignore[arg-type]


# combinations ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ((approx(), approx(rel=1e-3)), "approx may be given once"),
        ((sort_sequences(), sort_sequences(key=str)), "sort_sequences may be given once"),
        (
            (comparer(str, lambda a, b: True), transformer(str, str.upper)),
            "type str may have one comparer or transformer",
        ),
        (
            (comparer((int, str), lambda a, b: True), comparer(str, lambda a, b: True)),
            "type str may have one comparer or transformer",
        ),
    ],
)
def test_contradictory_options_raise(options: tuple[Option, ...], match: str) -> None:
    """Options that contradict each other are refused by equal and diff alike."""
    with pytest.raises(ValueError, match=match):
        equal(1, 1, *options)
    with pytest.raises(ValueError, match=match):
        diff(1, 1, *options)


def test_non_option_argument_raises() -> None:
    """Passing a bare value where an option belongs (a common slip: a tolerance) is a TypeError."""
    with pytest.raises(TypeError, match="options must be made by approx"):
        equal(1.0, 1.0, 1e-6)  # type: ignore[arg-type]


def test_duplicate_nan_equal_is_harmless() -> None:
    """Giving nan_equal twice is not a contradiction."""
    assert equal(NAN, NAN, nan_equal(), nan_equal())


def test_option_reprs_name_their_settings() -> None:
    """Each option's repr says what it is, for error messages and debugging."""
    assert repr(approx(rel=0.5)) == "approx(rel=0.5, abs=0.0)"
    assert repr(nan_equal()) == "nan_equal()"
    assert repr(ignore(".a", int)) == "ignore('.a', int)"
    assert repr(comparer(int, max)) == "comparer((int), max)"
