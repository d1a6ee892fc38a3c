r"""Unicode string helpers: reversing text by code point or by user-perceived character.

Python's ``str`` is a sequence of code points, the unit Go calls a rune, so reversing by code
point is slicing. What a reader sees as one character can be several code points, though: an
accent that combines with the letter before it, a flag made of two regional indicators, an emoji
joined with zero-width joiners. :func:`reverse_graphemes` keeps those together by reversing
extended grapheme clusters as Unicode Standard Annex #29 defines them, found with the ``regex``
package's ``\X``.
"""

from __future__ import annotations

import regex

__all__ = ["graphemes", "reverse_graphemes", "reverse_runes"]

_GRAPHEME = regex.compile(r"\X")


def _check_str(s: object, name: str = "s") -> str:
    if not isinstance(s, str):
        raise TypeError(
            f"{name} must be str, got {type(s).__name__} ({s!r}); "
            "decode bytes first, e.g. data.decode('utf-8')"
        )
    return s


def reverse_runes(s: str) -> str:
    """Return ``s`` with its code points (Go's runes) in reverse order.

    Args:
        s: The text to reverse.

    Returns:
        The reversed text. Combining marks end up before the letter they followed; use
        :func:`reverse_graphemes` to keep them attached.

    Raises:
        TypeError: If ``s`` is not a ``str``.

    Examples:
        >>> reverse_runes("!oG ,olleH")
        'Hello, Go!'
        >>> reverse_runes("Hello, 世界")
        '界世 ,olleH'
    """
    return _check_str(s)[::-1]


def graphemes(s: str) -> list[str]:
    r"""Split ``s`` into extended grapheme clusters (Unicode UAX #29).

    Args:
        s: The text to split.

    Returns:
        The clusters in order; ``"".join(graphemes(s)) == s``.

    Raises:
        TypeError: If ``s`` is not a ``str``.

    Examples:
        >>> [len(cluster) for cluster in graphemes("e\u0301a")]  # e + combining acute, then a
        [2, 1]
    """
    clusters: list[str] = _GRAPHEME.findall(_check_str(s))
    return clusters


def reverse_graphemes(s: str) -> str:
    r"""Return ``s`` with its extended grapheme clusters in reverse order.

    Accented letters written with combining marks, regional-indicator flags, emoji ZWJ sequences,
    skin-tone modifiers and Hangul syllables built from jamo stay intact.

    The result is the input's clusters in reverse order. Segmenting the result again gives those
    clusters back for text made of complete clusters; at a seam where a cluster cannot start
    (a combining mark at the very start of ``s``, an odd count of regional indicators) the
    reversed pieces may join into one cluster, exactly as Unicode segments the new text.

    Args:
        s: The text to reverse.

    Returns:
        The reversed text.

    Raises:
        TypeError: If ``s`` is not a ``str``.

    Examples:
        >>> reverse_graphemes("ne\u0301e") == "e" + "e\u0301" + "n"
        True
        >>> reverse_graphemes("\U0001F1EF\U0001F1F5!")  # the flag of Japan stays one flag
        '!🇯🇵'
    """
    return "".join(reversed(graphemes(s)))
