"""StringSequence and BytesSequence: random access, slicing, iteration, errors, equality, pickle."""

from __future__ import annotations

import pickle
from typing import Any

import hypothesis
import hypothesis.strategies as hst
import numpy as np
import pytest

from stoker.data import BytesSequence, StringSequence

TEXTS = ["héllo", "", "wörld", "\ud800 lone surrogate", "日本語", "a" * 1000]


@hypothesis.settings(max_examples=200, deadline=None, derandomize=True)
@hypothesis.given(hst.lists(hst.text()), hst.data())
def test_strings_round_trip(items: list[str], data: Any) -> None:
    """Every item, by positive and negative index, by iteration and by slice, is the original."""
    seq = StringSequence(items)
    assert len(seq) == len(items)
    assert list(seq) == items
    for i in range(len(items)):
        assert seq[i] == items[i]
        assert seq[i - len(items)] == items[i]
    start = data.draw(hst.integers(-len(items) - 2, len(items) + 2))
    stop = data.draw(hst.integers(-len(items) - 2, len(items) + 2))
    step = data.draw(hst.sampled_from([1, 2, 3, -1, -2]))
    part = seq[start:stop:step]
    assert type(part) is StringSequence
    assert list(part) == items[start:stop:step]
    assert part == StringSequence(items[start:stop:step])


@hypothesis.settings(max_examples=100, deadline=None, derandomize=True)
@hypothesis.given(hst.lists(hst.binary()))
def test_bytes_round_trip(items: list[bytes]) -> None:
    """Bytes come back as equal bytes objects, in order and by index."""
    seq = BytesSequence(items)
    assert list(seq) == items
    assert [seq[i] for i in range(len(items))] == items
    assert all(type(item) is bytes for item in seq)
    assert list(seq[::-1]) == items[::-1]


def test_drop_in_sequence_methods() -> None:
    """in, index, count, reversed and numpy integer indices work as on a list."""
    seq = StringSequence([*TEXTS, "wörld"])
    assert "wörld" in seq
    assert "absent" not in seq
    assert seq.index("wörld") == 2
    assert seq.count("wörld") == 2
    assert list(reversed(seq)) == list(reversed([*TEXTS, "wörld"]))
    assert seq[np.int64(4)] == "日本語"
    assert seq.take([5, -7, 0]) == StringSequence(["a" * 1000, "héllo", "héllo"])


def test_buffers_are_one_array_each() -> None:
    """``data`` is the UTF-8 of every item back to back; offsets are len + 1 int64 positions."""
    seq = StringSequence(["ab", "", "é"])
    assert seq.data.tobytes() == "abé".encode()
    assert seq.offsets.tolist() == [0, 2, 2, 4]
    assert seq.offsets.dtype == np.int64
    assert not seq.data.flags.writeable
    assert seq.nbytes == seq.data.nbytes + seq.offsets.nbytes
    again = StringSequence.from_arrays(seq.data, seq.offsets)
    assert again == seq


@pytest.mark.parametrize(
    ("offsets", "match"),
    [
        ([1, 2, 4], r"offsets\[0\]=1"),
        ([0, 3, 2, 4], r"offsets\[2\]=2"),
        ([0, 2, 5], r"offsets\[2\]=5"),
        ([], "non-empty"),
    ],
)
def test_from_arrays_rejects_bad_offsets(offsets: list[int], match: str) -> None:
    """Offsets that do not rise from 0 to len(data) raise ValueError naming the bad one."""
    with pytest.raises(ValueError, match=match):
        StringSequence.from_arrays(np.zeros(4, np.uint8), np.array(offsets, np.int64))


def test_from_arrays_rejects_a_data_array_of_another_dtype() -> None:
    """Only a one-dimensional uint8 array is a byte buffer."""
    with pytest.raises(ValueError, match="uint8 array, got shape \\(4,\\) and dtype int32"):
        StringSequence.from_arrays(np.zeros(4, np.int32), np.array([0, 4]))


def test_bad_items_name_the_first_one() -> None:
    """A str container refuses bytes and the reverse, naming the index and the type."""
    with pytest.raises(TypeError, match=r"got b'b' \(bytes\) at index 1; .*BytesSequence"):
        StringSequence(["a", b"b", 3])
    with pytest.raises(TypeError, match=r"got 'x' \(str\) at index 2; .*StringSequence"):
        BytesSequence([b"a", bytearray(b"b"), "x"])


@pytest.mark.parametrize("index", [6, -7, 10**20])
def test_index_out_of_range(index: int) -> None:
    """An index out of range raises IndexError naming it and the valid range."""
    with pytest.raises(IndexError, match=rf"in \[-6, 6\) for 6 strings, got {index}"):
        StringSequence(TEXTS)[index]


@pytest.mark.parametrize("index", ["1", 1.5, None, [1]])
def test_index_of_another_type(index: Any) -> None:
    """A non-integer index raises TypeError naming the value and its type."""
    with pytest.raises(TypeError, match="indices must be integers or slices, got"):
        BytesSequence([b"a", b"b"])[index]


def test_take_checks_its_indices() -> None:
    """``take`` refuses an index out of range and float positions."""
    seq = StringSequence(TEXTS)
    with pytest.raises(IndexError, match="got 9"):
        seq.take([0, 9])
    with pytest.raises(TypeError, match="must be ints, got an array of float64"):
        seq.take(np.array([0.5]))


def test_equality_is_by_type_and_content() -> None:
    """Equal items in the same container type compare equal; a list or other type does not."""
    assert StringSequence(["a", "b"]) == StringSequence(["a", "b"])
    assert StringSequence(["a", "b"]) != StringSequence(["ab", ""])
    assert StringSequence(["a"]) != ["a"]
    assert StringSequence(["a"]) != BytesSequence([b"a"])


def test_plain_pickle_carries_the_bytes() -> None:
    """pickle.dumps writes the buffers themselves, so the pickle outlives every process."""
    seq = StringSequence(TEXTS * 100)
    blob = pickle.dumps(seq)
    assert len(blob) > seq.data.nbytes
    again = pickle.loads(blob)
    assert again == seq
    assert list(again) == TEXTS * 100


def test_repr_shows_the_public_path_and_size() -> None:
    """The repr names stoker.data, the first items and the size."""
    text = repr(StringSequence(["a", "b", "c", "d"]))
    assert text.startswith("stoker.data.StringSequence(['a', 'b', 'c', ...]; 4 strings in ")
