"""Report two differing binary byte strings as a hex dump, the layout go-cmp uses for such data.

Bytes that are mostly text keep the quoted layout of :mod:`stoker.cmp._chars`. Bytes that are
not (at most 90% of the characters of both values, read as UTF-8, are printable or white space;
the test go-cmp's report applies) are shown as rows of at most :data:`ROW` hexadecimal bytes,
each row followed by a comment holding its mark and its bytes as ASCII between bars, non-ASCII
and control bytes as dots::

    -   0x01, 0x02, 0x03, // -|...|
    +   0x03, 0x02, 0x01, // +|...|

Changed stretches are shown as removed rows then added rows; an equal stretch of at most
:data:`BRIDGE` bytes between two changes joins them; equal stretches keep :data:`KEEP` bytes next
to a change and elide the rest with a count.
"""

from __future__ import annotations

import math

from stoker.cmp._chars import elide_stretches, stretches
from stoker.cmp._text import Block, Line, Rec, Wrap

__all__ = ["BRIDGE", "KEEP", "ROW", "hex_text", "is_binary"]

#: Bytes per row.
ROW = 16
#: Equal bytes kept on each side of a change (two rows).
KEEP = 2 * ROW
#: Longest equal stretch merged into the changes around it.
BRIDGE = ROW // 4

_REPLACEMENT = "\ufffd"


def is_binary(x: bytes | bytearray, y: bytes | bytearray) -> bool:
    r"""Return whether ``x`` and ``y`` together are not mostly text.

    >>> is_binary(b"hello", b"world"), is_binary(b"\x00\x01", b"\x02")
    (False, True)
    """
    chars = bytes(x + y).decode("utf-8", errors="replace")
    valid = sum(1 for c in chars if (c.isprintable() or c.isspace()) and c != _REPLACEMENT)
    return not valid > math.floor(0.9 * len(chars))


def _ascii(data: bytes | bytearray) -> str:
    """Return ``data`` as ASCII, printable bytes as themselves and others as dots."""
    return "".join(chr(b) if 0x20 <= b <= 0x7E else "." for b in data)


def _rows(data: bytes | bytearray, mark: str) -> list[Rec]:
    """Return ``data`` cut into rows of :data:`ROW` bytes marked ``mark``."""
    recs = []
    for start in range(0, len(data), ROW):
        row = data[start : start + ROW]
        text = ", ".join(f"0x{b:02x}" for b in row)
        recs.append(Rec(Line(text), mark, comment=f"{mark}|{_ascii(row)}|"))
    return recs


def hex_text(x: bytes | bytearray, y: bytes | bytearray, label: str) -> Wrap:
    r"""Return the report node of two different binary byte strings, as ``label{`` rows ``}``.

    >>> from stoker.cmp._text import render
    >>> text = render(hex_text(b"\x01\x02\x03", b"\x03\x02\x01", "bytes"))
    >>> print(text.expandtabs(4), end="")
      bytes{
    -   0x01, 0x02, 0x03, // -|...|
    +   0x03, 0x02, 0x01, // +|...|
      }
    """
    recs = elide_stretches(
        x,
        y,
        stretches(x, y, BRIDGE),
        render=_rows,
        chunk=ROW,
        keep=KEEP,
        noun="byte",
        absorb_into_head=False,
    )
    return Wrap(f"{label}{{", Block(recs), "}")
