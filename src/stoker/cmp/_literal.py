"""Spell scalar values as Python literals, preferring double quotes as go-cmp's reports do."""

from __future__ import annotations

import enum
from typing import Any

__all__ = ["BRACKETS", "quote", "scalar_text", "type_label"]

#: The brackets of the built-in containers, which need no type name.
BRACKETS: dict[type, tuple[str, str]] = {
    list: ("[", "]"),
    tuple: ("(", ")"),
    dict: ("{", "}"),
    set: ("{", "}"),
}


def quote(text: str | bytes) -> str:
    r"""Return ``text`` as a Python literal, in double quotes unless that needs more escapes.

    >>> print(quote("Hello"), quote('say "hi"'), quote(b"\x00a"))
    "Hello" 'say "hi"' b"\x00a"
    """
    spelled = repr(text)
    quote_char = '"' if isinstance(text, str) else 34
    if quote_char not in text:
        start = spelled.index("'") if "'" in spelled[:2] else -1
        if start >= 0:
            return spelled[:start] + '"' + spelled[start + 1 : -1] + '"'
    return spelled


def type_label(cls: type) -> str:
    """Return the short name a report uses for ``cls`` (``int``, ``Point``, ``Outer.Inner``)."""
    return cls.__qualname__ if "<locals>" not in cls.__qualname__ else cls.__name__


def scalar_text(value: Any) -> str:
    r"""Return the one-line spelling of a scalar: ``None``, ``1.5``, ``"s"``, ``Color.RED``.

    Objects without a literal form are spelled by their ``repr``; a ``repr`` that raises is shown
    as ``<Type: repr raised Error>`` so that a broken ``__repr__`` cannot hide a difference.

    >>> print(scalar_text(None), scalar_text(2.5), scalar_text("a\nb"))
    None 2.5 "a\nb"
    """
    if isinstance(value, str | bytes | bytearray):
        if isinstance(value, bytearray):
            return f"bytearray({quote(bytes(value))})"
        return quote(value)
    if isinstance(value, enum.Enum) and value.name is not None:
        return f"{type_label(type(value))}.{value.name}"
    try:
        return repr(value)
    except Exception as err:  # a broken __repr__ must not hide the difference being reported
        return f"<{type_label(type(value))}: repr raised {type(err).__name__}>"
