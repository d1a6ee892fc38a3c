"""Tests for stoker.morestrings."""

from __future__ import annotations

import doctest

import pytest
import regex
from hypothesis import given
from hypothesis import strategies as st

import stoker.morestrings
from stoker.morestrings import graphemes, reverse_graphemes, reverse_runes


def test_reverse_runes_hello_go() -> None:
    """The tutorial's example reverses to the greeting."""
    assert reverse_runes("!oG ,olleH") == "Hello, Go!"


@pytest.mark.parametrize(
    ("given_text", "expected"),
    [
        ("", ""),
        ("a", "a"),
        ("Hello, 世界", "界世 ,olleH"),
        ("e\u0301", "\u0301e"),  # by code point the accent moves in front
    ],
)
def test_reverse_runes_reverses_code_points(given_text: str, expected: str) -> None:
    """reverse_runes reverses code points, splitting combining sequences like Go's ReverseRunes."""
    assert reverse_runes(given_text) == expected


@pytest.mark.parametrize(
    ("given_text", "expected"),
    [
        ("e\u0301x", "xe\u0301"),  # combining acute accent stays on its letter
        ("\U0001f1ef\U0001f1f5\U0001f1eb\U0001f1f7", "\U0001f1eb\U0001f1f7\U0001f1ef\U0001f1f5"),
        # a family emoji joined with zero-width joiners is one cluster
        (
            "a\U0001f468\u200d\U0001f469\u200d\U0001f467b",
            "b\U0001f468\u200d\U0001f469\u200d\U0001f467a",
        ),
        ("\U0001f44d\U0001f3fd!", "!\U0001f44d\U0001f3fd"),  # skin-tone modifier stays attached
        (
            "\u1100\u1161\u11a8\u1102\u1161",
            "\u1102\u1161\u1100\u1161\u11a8",
        ),  # Hangul jamo syllables
        ("\r\n.", ".\r\n"),  # CR LF is one cluster
    ],
)
def test_reverse_graphemes_keeps_clusters(given_text: str, expected: str) -> None:
    """reverse_graphemes keeps accents, flags, ZWJ sequences, modifiers and syllables intact."""
    assert reverse_graphemes(given_text) == expected


@pytest.mark.parametrize("func", [reverse_runes, reverse_graphemes, graphemes])
@pytest.mark.parametrize("bad", [b"bytes", 42, None, ["a"]])
def test_non_str_raises_type_error_naming_type(func: object, bad: object) -> None:
    """A non-str argument raises TypeError that names the type received."""
    assert callable(func)
    with pytest.raises(TypeError, match=rf"s must be str, got {type(bad).__name__}"):
        func(bad)


def _is_plain_base(c: str) -> bool:
    """True for a code point that starts a cluster and never joins the cluster before it."""
    cp = ord(c)
    return not (
        0x1F1E6 <= cp <= 0x1F1FF  # regional indicators pair up
        or 0x1F3FB <= cp <= 0x1F3FF  # skin-tone modifiers extend the emoji before them
        or 0x1100 <= cp <= 0x11FF  # Hangul jamo join into syllables
        or 0xA960 <= cp <= 0xA97F
        or 0xD7B0 <= cp <= 0xD7FF
    )


_BASES = st.characters(categories=["L", "N", "P", "S", "Zs"]).filter(_is_plain_base)
_MARKS = st.lists(st.characters(categories=["Mn"]), max_size=3).map("".join)
_FLAGS = st.tuples(st.integers(0x1F1E6, 0x1F1FF), st.integers(0x1F1E6, 0x1F1FF)).map(
    lambda pair: chr(pair[0]) + chr(pair[1])
)
_SPECIAL = st.sampled_from(
    [
        "\r\n",
        "\U0001f468\u200d\U0001f469\u200d\U0001f467",  # ZWJ family
        "\U0001f44d\U0001f3fd",  # thumbs up, medium skin tone
        "\u1100\u1161\u11a8",  # Hangul syllable from jamo L V T
        "\uac00",  # precomposed Hangul syllable
    ]
)
# One complete extended grapheme cluster: a base with combining marks, a flag, or a special case.
_CLUSTER = st.one_of(st.tuples(_BASES, _MARKS).map("".join), _FLAGS, _SPECIAL)
_CLUSTERS = st.lists(_CLUSTER, max_size=12)


@given(st.text())
def test_reverse_runes_twice_is_identity(s: str) -> None:
    """Reversing by code point twice gives back the input."""
    assert reverse_runes(reverse_runes(s)) == s


@given(st.text())
def test_reverse_runes_preserves_length(s: str) -> None:
    """Reversing by code point keeps the number of code points."""
    assert len(reverse_runes(s)) == len(s)


@given(st.text())
def test_reverse_graphemes_preserves_length_and_code_points(s: str) -> None:
    """Reversing by grapheme cluster keeps every code point, for any text at all."""
    result = reverse_graphemes(s)
    assert len(result) == len(s)
    assert sorted(result) == sorted(s)


@given(st.text())
def test_reverse_graphemes_is_the_clusters_reversed(s: str) -> None:
    """For any text, the result is the input's clusters joined in reverse order."""
    assert reverse_graphemes(s) == "".join(regex.findall(r"\X", s)[::-1])


@given(_CLUSTERS)
def test_reverse_graphemes_twice_is_identity(clusters: list[str]) -> None:
    """Reversing text made of complete clusters twice gives back the input."""
    s = "".join(clusters)
    assert reverse_graphemes(reverse_graphemes(s)) == s


@given(_CLUSTERS)
def test_reverse_graphemes_resegments_to_reversed_clusters(clusters: list[str]) -> None:
    """Segmenting the result again gives the input's clusters in reverse order."""
    s = "".join(clusters)
    assert regex.findall(r"\X", s) == clusters  # the strategy builds real clusters
    assert regex.findall(r"\X", reverse_graphemes(s)) == clusters[::-1]


@pytest.mark.parametrize(
    ("given_text", "expected_clusters"),
    [
        ("\u0301a", ["a\u0301"]),  # a leading lone mark attaches to the letter once reversed
        ("\U0001f1e6\U0001f1e7\U0001f1e8", ["\U0001f1e8\U0001f1e6", "\U0001f1e7"]),
    ],
)
def test_reverse_graphemes_seams_follow_unicode(
    given_text: str, expected_clusters: list[str]
) -> None:
    """Where a cluster cannot start, reversed pieces join as Unicode segments the new text."""
    assert regex.findall(r"\X", reverse_graphemes(given_text)) == expected_clusters


def test_graphemes_join_back_to_input() -> None:
    """``graphemes`` splits without losing or adding code points."""
    s = "ne\u0301e \U0001f1ef\U0001f1f5"
    assert "".join(graphemes(s)) == s
    assert graphemes(s) == ["n", "e\u0301", "e", " ", "\U0001f1ef\U0001f1f5"]


def test_docstring_examples() -> None:
    """The examples in the module's docstrings run and give what they show."""
    result = doctest.testmod(stoker.morestrings)
    assert result.attempted > 0
    assert result.failed == 0
