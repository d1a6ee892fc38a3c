"""stoker.cmp reports for binary bytes: go-cmp's hex dump rows with an ASCII comment column."""

from __future__ import annotations

import pytest

from stoker.cmp import diff
from stoker.cmp._binary import is_binary


def report(*rows: str) -> str:
    """Join report rows into the text diff returns."""
    return "".join(row + "\n" for row in rows)


@pytest.mark.parametrize(
    ("x", "y", "binary"),
    [
        (b"hello world", b"hello there", False),
        ("naïve café".encode(), "naïve cafe".encode(), False),
        (b"line\n\ttab", b"line\r\n", False),
        (b"\x00\x01\x02", b"\x00\x01\x03", True),
        ("café".encode("latin-1") * 3, b"cafe", True),
        (b"a" * 19 + b"\x00", b"", False),  # 19 of 20 printable: over 90%
        (b"a" * 9 + b"\x00", b"", True),  # 9 of 10 printable: not over 90%
    ],
)
def test_is_binary_uses_the_mostly_text_threshold(x: bytes, y: bytes, binary: bool) -> None:
    """Bytes are binary unless more than 90% of their UTF-8 characters are printable or space."""
    assert is_binary(x, y) is binary


def test_short_binary_root_is_a_hex_dump() -> None:
    """Swapped bytes are one removed and one added row, each with its ASCII comment."""
    assert diff(b"\x01\x02\x03", b"\x03\x02\x01") == report(
        "  bytes{",
        "- \t0x01, 0x02, 0x03, // -|...|",
        "+ \t0x03, 0x02, 0x01, // +|...|",
        "  }",
    )


def test_nested_bytearray_aligns_comments() -> None:
    """Rows under a key keep the type name and align their comments to the widest row."""
    got = diff({"k": bytearray(b"\x00\x01")}, {"k": bytearray(b"\x00\x02\x03")})
    assert got == report(
        "  dict{",
        '  \t"k": bytearray{',
        "  \t\t0x00,       //  |.|",
        "- \t\t0x01,       // -|.|",
        "+ \t\t0x02, 0x03, // +|..|",
        "  \t},",
        "  }",
    )


def test_long_binary_keeps_two_rows_of_context_and_elides_the_rest() -> None:
    """Long equal stretches keep 32 bytes next to a change and count the others."""
    old = bytes(range(200))
    new = old[:100] + b"\xff\xfe" + old[103:]
    rows = diff(old, new).splitlines()
    assert rows[0] == "  bytes{"
    assert rows[1] == "  \t... // 68 identical bytes"
    assert rows[2].startswith("  \t0x44, 0x45, ")
    assert rows[2].endswith(", 0x53, //  |DEFGHIJKLMNOPQRS|")
    assert rows[3].endswith("0x62, 0x63, //  |TUVWXYZ[\\]^_`abc|")
    assert rows[4].startswith("- \t0x64, 0x65, 0x66, ")
    assert rows[4].endswith(" // -|def|")
    assert rows[5].startswith("+ \t0xff, 0xfe, ")
    assert rows[5].endswith(" // +|..|")
    assert rows[7].endswith("0x85, 0x86, //  |wxyz{|}~........|")
    assert rows[8:] == ["  \t... // 65 identical bytes", "  }"]
    columns = {row.index("//") for row in rows[2:8]}
    assert len(columns) == 1, "the comments of consecutive rows line up"


def test_equal_gap_of_four_bytes_joins_two_changes() -> None:
    """Changes at most four equal bytes apart form one removed and one added row."""
    old = b"\x00\x01\x02\x03\x04\x05"
    new = b"\x09\x01\x02\x03\x04\x08"
    assert diff(old, new) == report(
        "  bytes{",
        "- \t0x00, 0x01, 0x02, 0x03, 0x04, 0x05, // -|......|",
        "+ \t0x09, 0x01, 0x02, 0x03, 0x04, 0x08, // +|......|",
        "  }",
    )


def test_printable_bytes_keep_their_literal_layout() -> None:
    """Bytes that are mostly text are still shown as b"..." literals."""
    assert diff(b"hello world", b"hello there") == report(
        "  bytes(", '- \tb"hello world",', '+ \tb"hello there",', "  )"
    )


def test_binary_elements_of_a_list_are_hex_dumps() -> None:
    """A differing binary element of a list is shown as a hex dump in place."""
    got = diff([b"\x00", b"\x10\x11"], [b"\x00", b"\x10\x7e"])
    assert got == report(
        "  list[",
        '  \tb"\\x00",',
        "  \tbytes{",
        "  \t\t0x10, //  |.|",
        "- \t\t0x11, // -|.|",
        "+ \t\t0x7e, // +|~|",
        "  \t},",
        "  ]",
    )
