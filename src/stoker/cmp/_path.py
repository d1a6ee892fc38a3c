"""Paths from the root to a nested value: steps, their spelling, and the patterns ``ignore`` takes.

A path is a tuple of :class:`Step`. A field of a dataclass or namedtuple is spelled ``.name``, an
index of a list or tuple ``[3]`` (the index in the first value, or in the second for an element
only the second has), and a dict key ``["key"]`` (the key as a Python literal). The root is the
empty path ``""``. A set element has no index or key: its step is spelled ``[*]``. A pattern uses
the same spelling and may put ``*`` in place of a name, index or key: ``[*].id`` matches the
``id`` field of every element of a top-level list.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from stoker.cmp._literal import quote

__all__ = ["WILDCARD", "Step", "format_path", "matches", "parse_pattern"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\*")


class _Wildcard:
    """The ``*`` of a pattern: matches any one field name, index or key."""

    def __repr__(self) -> str:
        return "*"


WILDCARD: Any = _Wildcard()


@dataclass(frozen=True)
class Step:
    """One step of a path: a field (``is_field``) or an index or key."""

    value: Any
    is_field: bool = False

    def __str__(self) -> str:
        if self.is_field:
            return f".{self.value}"
        if isinstance(self.value, str | bytes):
            return f"[{quote(self.value)}]"
        return f"[{self.value!r}]"


def format_path(path: tuple[Step, ...]) -> str:
    """Return the spelling of ``path``: ``""`` for the root, else ``.a[0]["k"]`` and so on.

    >>> format_path((Step("items", True), Step(0), Step("k")))
    '.items[0]["k"]'
    """
    return "".join(str(step) for step in path)


def parse_pattern(pattern: str) -> tuple[Step, ...]:
    """Parse a path pattern such as ``.a[0]["k"]``, ``a.b`` or ``[*].id`` into steps.

    Raises:
        ValueError: if ``pattern`` is empty or not made of ``.name`` and ``[literal]`` steps.

    >>> parse_pattern('a[*]["k"]')
    (Step(value='a', is_field=True), Step(value=*, is_field=False), Step(value='k', is_field=False))
    """
    if not pattern:
        raise ValueError(
            "ignore path must not be empty, got ''; name a field ('.x'), index ('[0]') or key"
        )
    steps: list[Step] = []
    pos = 0
    while pos < len(pattern):
        char = pattern[pos]
        if char == "[":
            step, pos = _parse_bracket(pattern, pos)
            steps.append(step)
            continue
        start = pos + 1 if char == "." else pos
        if char != "." and pos != 0:
            raise _malformed(pattern, pos)
        match = _IDENT.match(pattern, start)
        if match is None:
            raise _malformed(pattern, start)
        name = match.group()
        steps.append(Step(WILDCARD if name == "*" else name, True))
        pos = match.end()
    return tuple(steps)


def _parse_bracket(pattern: str, pos: int) -> tuple[Step, int]:
    """Parse the ``[literal]`` step that starts at ``pos``; return it and the position after it."""
    close = pattern.find("]", pos)
    while close >= 0:
        inner = pattern[pos + 1 : close].strip()
        if inner == "*":
            return Step(WILDCARD), close + 1
        try:
            return Step(ast.literal_eval(inner)), close + 1
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            close = pattern.find("]", close + 1)
    raise _malformed(pattern, pos)


def _malformed(pattern: str, pos: int) -> ValueError:
    """Return the error for a pattern that cannot be read at ``pos``."""
    return ValueError(
        f"ignore path must be steps like '.name', '[0]', '[\"key\"]' or '[*]', got {pattern!r} "
        f"(cannot read it at position {pos}); write keys as Python literals"
    )


def _same(want: Any, have: Any) -> bool:
    """Return whether pattern value ``want`` names path value ``have``."""
    if want is WILDCARD:
        return True
    if type(want) is not type(have):
        return False
    try:
        return bool(want == have)
    except Exception:  # an odd key whose __eq__ raises simply does not match
        return False


def matches(pattern: tuple[Step, ...], path: tuple[Step, ...]) -> bool:
    """Return whether ``path`` is the one ``pattern`` names.

    >>> matches(parse_pattern("[*].id"), (Step(3), Step("id", True)))
    True
    """
    if len(pattern) != len(path):
        return False
    return all(
        want.is_field == have.is_field and _same(want.value, have.value)
        for want, have in zip(pattern, path, strict=True)
    )
