"""stoker.cmp.diff: the exact report text, in go-cmp's layout, for each kind of value."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, NamedTuple

import numpy as np
import pytest

from stoker.cmp import diff
from stoker.cmp._elide import Tally


def report(*rows: str) -> str:
    """Join report rows into the text diff returns (a newline after every row)."""
    return "".join(row + "\n" for row in rows)


@dataclasses.dataclass
class Job:
    name: str
    retries: int
    tags: list[str]


class Span(NamedTuple):
    start: int
    stop: int


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


def test_hello_strings_exact() -> None:
    """The report the hello command prints: type label, removed and added line, tab indent."""
    assert diff("Hello World", "Hello Go") == '  str(\n- \t"Hello World",\n+ \t"Hello Go",\n  )\n'


@pytest.mark.parametrize(
    ("x", "y", "label", "old", "new"),
    [
        (1, 2, "int", "1", "2"),
        (1.5, 2.25, "float", "1.5", "2.25"),
        (1 + 2j, 1 - 2j, "complex", "(1+2j)", "(1-2j)"),
        (True, False, "bool", "True", "False"),
        (b"ab", b"a'b", "bytes", 'b"ab"', 'b"a\'b"'),
        ('say "a"', "say 'b'", "str", "'say \"a\"'", "\"say 'b'\""),
        (Level.LOW, Level.HIGH, "Level", "Level.LOW", "Level.HIGH"),
        (None, 0, "object", "None", "int(0)"),
        (1, 1.0, "object", "int(1)", "float(1.0)"),
    ],
)
def test_scalar_root_is_labelled_by_type(x: Any, y: Any, label: str, old: str, new: str) -> None:
    """A scalar root shows its type name (``object`` when the types differ, then typed values)."""
    assert diff(x, y) == report(f"  {label}(", f"- \t{old},", f"+ \t{new},", "  )")


def test_dataclass_fields_are_aligned_and_nested() -> None:
    """A dataclass shows every field by name, values aligned, a nested list with its own diff."""
    got = diff(Job("build", 1, ["a", "b"]), Job("build", 2, ["a", "c", "b"]))
    assert got == report(
        "  Job{",
        '  \tname:    "build",',
        "- \tretries: 1,",
        "+ \tretries: 2,",
        "  \ttags: [",
        '  \t\t"a",',
        '+ \t\t"c",',
        '  \t\t"b",',
        "  \t],",
        "  }",
    )


def test_namedtuple_is_a_struct() -> None:
    """A namedtuple is shown like a struct, with its field names."""
    assert diff(Span(0, 4), Span(0, 5)) == report(
        "  Span{", "  \tstart: 0,", "- \tstop:  4,", "+ \tstop:  5,", "  }"
    )


def test_dict_by_sorted_key() -> None:
    """Dict entries are keyed by their literal, sorted; removed, changed and added entries."""
    got = diff({"b": 2, "a": 1, "c": 3}, {"a": 1, "b": 20, "d": 4})
    assert got == report(
        "  dict{",
        '  \t"a": 1,',
        '- \t"b": 2,',
        '+ \t"b": 20,',
        '- \t"c": 3,',
        '+ \t"d": 4,',
        "  }",
    )


def test_one_inserted_element_is_one_added_line() -> None:
    """Aligning by LCS shows an insertion in a long list as a single '+' line with context."""
    old = list(range(20))
    new = [*old[:10], 99, *old[10:]]
    assert diff(old, new) == report(
        "  list[",
        "  \t... // 8 identical elements",
        "  \t8,",
        "  \t9,",
        "+ \t99,",
        "  \t10,",
        "  \t11,",
        "  \t... // 8 identical elements",
        "  ]",
    )


def test_single_equal_element_is_shown_not_elided() -> None:
    """Eliding exactly one equal element would save nothing, so it is shown."""
    assert diff([1, 2, 3, 4], [1, 2, 3, 5]) == report(
        "  list[", "  \t1,", "  \t2,", "  \t3,", "- \t4,", "+ \t5,", "  ]"
    )


def test_tuple_and_nested_list() -> None:
    """Tuples use parentheses; an inner list with a change is shown nested, the equal one folded."""
    got = diff(([1, 2, 3], [4, 5, 6]), ([1, 2, 3], [4, 0, 6]))
    assert got == report(
        "  tuple(",
        "  \t[1, 2, 3],",
        "  \t[",
        "  \t\t4,",
        "- \t\t5,",
        "+ \t\t0,",
        "  \t\t6,",
        "  \t],",
        "  )",
    )


def test_single_element_containers_are_shown_whole() -> None:
    """A container whose only child differs is shown as one removed and one added value."""
    assert diff({"k": [1]}, {"k": [2]}) == report(
        "  dict{", '- \t"k": [1],', '+ \t"k": [2],', "  }"
    )


def test_set_membership() -> None:
    """A set shows shared, removed and added elements in sorted order."""
    assert diff({1, 2, 3}, {2, 3, 4}) == report(
        "  set{", "- \t1,", "  \t2,", "  \t3,", "+ \t4,", "  }"
    )


def test_frozenset_label() -> None:
    """A frozenset root is labelled frozenset."""
    assert diff(frozenset({1}), frozenset({2})) == report("  frozenset{", "- \t1,", "+ \t2,", "  }")


def test_multiline_string_is_diffed_by_line() -> None:
    """Multi-line strings show raw lines between triple quotes, long equal runs elided."""
    old = "a\nb\nc\nd\ne\nf\ng\nh\n"
    new = "a\nb\nc\nD\ne\nf\ng\nh\n"
    assert diff(old, new) == report(
        "  str(",
        '  \t"""',
        "  \ta",
        "  \tb",
        "  \tc",
        "- \td",
        "+ \tD",
        "  \te",
        "  \tf",
        "  \t... // 2 identical lines",
        '  \t"""',
        "  )",
    )


def test_multiline_string_in_a_field() -> None:
    """A multi-line string inside a dict is shown as a parenthesized triple-quoted block."""
    got = diff({"text": "a\nb\nc\n"}, {"text": "a\nB\nc\n"})
    assert got == report(
        "  dict{",
        '  \t"text": (',
        '  \t\t"""',
        "  \t\ta",
        "- \t\tb",
        "+ \t\tB",
        "  \t\tc",
        '  \t\t"""',
        "  \t),",
        "  }",
    )


def test_ambiguous_lines_fall_back_to_quoted_join() -> None:
    r"""Lines differing only in whitespace are quoted in '\n'.join([...]), the last one kept."""
    assert diff("one\ntwo\n", "one\ntwo \n") == report(
        '  str("\\n".join([',
        '  \t"one",',
        '- \t"two",',
        '+ \t"two ",',
        '  \t"",',
        "  ]))",
    )


def test_removed_entry_holding_a_long_list_is_batched() -> None:
    """A removed value too wide for one line is laid out over several, many values a line."""
    got = diff({"x": list(range(30))}, {})
    rows = got.splitlines()
    assert rows[0] == "  dict{"
    assert rows[1] == '- \t"x": ['
    assert rows[2].startswith("- \t\t0, 1, 2,")
    assert all(len(row) <= 2 + 2 + 80 for row in rows)
    assert rows[-2] == "- \t],"
    assert rows[-1] == "  }"


def test_array_elements_with_indices() -> None:
    """Arrays show dtype and shape first, then each differing element at its index."""
    got = diff(np.arange(6).reshape(2, 3), np.array([[0, 1, 2], [3, 9, 5]]))
    assert got == report(
        "  ndarray{",
        "  \tdtype:  int64,",
        "  \tshape:  (2, 3),",
        "- \t[1, 1]: 4,",
        "+ \t[1, 1]: 9,",
        "  \t... // 5 identical elements",
        "  }",
    )


def test_array_dtype_mismatch_shows_data() -> None:
    """Arrays of different dtype differ as wholes: dtype lines, then both data lines."""
    got = diff(np.arange(3), np.arange(3.0))
    assert got == report(
        "  ndarray{",
        "- \tdtype: int64,",
        "+ \tdtype: float64,",
        "  \tshape: (3,),",
        "- \tdata:  array([0, 1, 2], dtype=int64),",
        "+ \tdata:  array([0.0, 1.0, 2.0], dtype=float64),",
        "  }",
    )


def test_long_array_diff_is_elided_with_counts() -> None:
    """Past 16 differing elements the rest are counted, not listed."""
    got = diff(np.zeros(100), np.arange(100.0) + 1.0).splitlines()
    assert got[3:5] == ["- \t[0]:   0.0,", "+ \t[0]:   1.0,"]
    assert sum(row.startswith("- \t[") for row in got) == 16
    assert got[-2] == "  \t... // 84 modified elements"


def test_cycle_is_printed_finitely() -> None:
    """A value that contains itself prints as [...] where it loops back."""
    x: list[Any] = [1]
    x.append(x)
    y: list[Any] = [2]
    y.append(y)
    assert diff(x, y) == report("  list[", "- \t1,", "+ \t2,", "  \t[1, [...]],", "  ]")


def test_same_looking_objects_get_their_ids() -> None:
    """Objects that differ yet print alike are told apart by their ids."""

    class Thing:
        def __repr__(self) -> str:
            return "Thing()"

    a, b = Thing(), Thing()
    assert diff([a], [b]) == report(
        "  list[", f"- \tThing() @{id(a):#x},", f"+ \tThing() @{id(b):#x},", "  ]"
    )


def test_type_mismatch_inside_dict_is_typed() -> None:
    """Values of different types in the same place carry their type names."""
    assert diff({"a": np.int64(1), "b": 2}, {"a": 1, "b": 2}) == report(
        "  dict{", '- \t"a": int64(1),', '+ \t"a": int(1),', '  \t"b": 2,', "  }"
    )


def test_many_differences_are_capped() -> None:
    """Past 16 differing elements in a list the remainder is summarized in one comment."""
    old = list(range(0, 80, 2))
    new = [v + 1 if i % 2 == 0 else v for i, v in enumerate(old)]
    rows = diff(old, new).splitlines()
    assert sum(row.startswith("- ") for row in rows) == 16
    assert rows[-2] == "  \t... // 5 identical and 4 modified elements"


def test_long_strings_are_diffed_piece_by_piece() -> None:
    """Long one-line strings show changed pieces with nearby context, the rest counted."""
    old = "x" * 600 + "a"
    new = "x" * 600 + "b"
    piece = '"' + "x" * 64 + '"'
    assert diff(old, new) == report(
        '  str("".join([',
        "  \t... // 472 identical characters",
        f"  \t{piece},",
        f"  \t{piece},",
        '- \t"a",',
        '+ \t"b",',
        "  ]))",
    )


def test_long_bytes_in_a_field_are_diffed_piece_by_piece() -> None:
    """Long text bytes get the same treatment, as b"".join of byte literals, counted in bytes."""
    old = {"blob": b"." * 300 + b"tail"}
    new = {"blob": b"." * 300 + b"TAIL"}
    rows = diff(old, new).splitlines()
    assert rows[1] == '  \t"blob": b"".join(['
    assert rows[2] == "  \t\t... // 172 identical bytes"
    assert rows[-4:] == ['- \t\tb"tail",', '+ \t\tb"TAIL",', "  \t]),", "  }"]


class Money:
    """An object compared by its own __eq__ and shown by its repr."""

    def __init__(self, cents: int) -> None:
        self.cents = cents

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Money) and other.cents == self.cents

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Money({self.cents})"


def test_other_objects_use_their_repr() -> None:
    """Objects without structure known to cmp are compared with == and shown by repr."""
    assert diff(Money(5), Money(6)) == report("  Money(", "- \tMoney(5),", "+ \tMoney(6),", "  )")


def test_array_nested_in_a_dataclass() -> None:
    """An array field shows its own dtype, shape and differing elements, one level deeper."""

    @dataclasses.dataclass
    class Layer:
        weight: Any
        bias: float

    got = diff(Layer(np.ones(3), 0.5), Layer(np.array([1.0, 2.0, 1.0]), 0.5))
    assert got == report(
        "  Layer{",
        "  \tweight: ndarray{",
        "  \t\tdtype: float64,",
        "  \t\tshape: (3,),",
        "- \t\t[1]:   1.0,",
        "+ \t\t[1]:   2.0,",
        "  \t\t... // 2 identical elements",
        "  \t},",
        "  \tbias: 0.5,",
        "  }",
    )


def test_zero_dimensional_array_index() -> None:
    """A 0-d array's only element is shown at index [()]."""
    assert diff(np.array(1), np.array(2)).splitlines()[3:5] == ["- \t[()]:  1,", "+ \t[()]:  2,"]


@pytest.mark.parametrize(
    ("tally", "text"),
    [
        (Tally("field", identical=1), "1 identical field"),
        (Tally("field", identical=3), "3 identical fields"),
        (Tally("entry", ignored=2), "2 ignored entries"),
        (Tally("element", identical=1, modified=1), "1 identical and 1 modified elements"),
        (
            Tally("line", ignored=1, identical=2, removed=3, inserted=4),
            "1 ignored, 2 identical, 3 removed, and 4 inserted lines",
        ),
    ],
)
def test_elision_comment_grammar(tally: Tally, text: str) -> None:
    """Elision comments list counts in a fixed order, with 'and', commas and plurals."""
    assert str(tally) == text


def test_removed_multiline_string_is_fenced() -> None:
    """A removed string of four or more lines is shown as fenced raw lines, every line marked."""
    assert diff({"a": "l1\nl2\nl3\nl4\n"}, {}) == report(
        "  dict{",
        '- \t"a": (',
        '- \t\t"""',
        "- \t\tl1",
        "- \t\tl2",
        "- \t\tl3",
        "- \t\tl4",
        '- \t\t"""',
        "- \t),",
        "  }",
    )
