"""RecordSequence (flat dicts by column) and compact(): round trips, errors, slicing, pickle."""

from __future__ import annotations

import math
import pickle
from typing import Any

import hypothesis
import hypothesis.strategies as hst
import numpy as np
import pytest

from stoker.data import BytesSequence, RecordSequence, StringSequence, compact

RECORDS = [
    {"id": 1, "name": "a", "score": 0.5, "ok": True, "raw": b"x"},
    {"id": -(2**63), "name": "ßé", "score": -1e300, "ok": False, "raw": b""},
    {"id": 2**63 - 1, "name": "", "score": math.inf, "ok": True, "raw": b"\x00\xff"},
]

_RECORD = hst.fixed_dictionaries(
    {
        "i": hst.integers(-(2**63), 2**63 - 1),
        "f": hst.floats(allow_nan=False),
        "s": hst.text(),
        "b": hst.binary(),
        "t": hst.booleans(),
    }
)


@hypothesis.settings(max_examples=150, deadline=None, derandomize=True)
@hypothesis.given(hst.lists(_RECORD), hst.data())
def test_records_round_trip(records: list[dict[str, Any]], data: Any) -> None:
    """Each record comes back as an equal new dict of Python values, by index and by slice."""
    seq = RecordSequence(records)
    assert len(seq) == len(records)
    assert list(seq) == records
    for i, record in enumerate(records):
        got = seq[i]
        assert got == record
        assert seq[i - len(records)] == record
        assert got is not seq[i]
        kinds = {key: type(value) for key, value in got.items()}
        assert kinds == {"i": int, "f": float, "s": str, "b": bytes, "t": bool}
    step = data.draw(hst.sampled_from([1, 2, -1, -3]))
    assert list(seq[1::step]) == records[1::step]
    assert seq[::step] == RecordSequence(records[::step])


def test_columns_are_numpy_arrays_and_compact_strings() -> None:
    """Numeric keys become bool, int64 and float64 arrays; str and bytes keys compact sequences."""
    seq = RecordSequence(RECORDS)
    assert seq.keys == ("id", "name", "score", "ok", "raw")
    assert seq.column("id").dtype == np.int64
    assert seq.column("score").dtype == np.float64
    assert seq.column("ok").dtype == np.bool_
    assert seq.column("name") == StringSequence(["a", "ßé", ""])
    assert seq.column("raw") == BytesSequence([b"x", b"", b"\x00\xff"])
    assert seq.nbytes == 3 * (8 + 8 + 1) + seq.column("name").nbytes + seq.column("raw").nbytes
    with pytest.raises(KeyError, match="no key 'nope'; its keys are"):
        seq.column("nope")


def test_nan_and_numpy_scalars_are_kept() -> None:
    """NaN stays NaN; NumPy scalars are stored and come back as Python values."""
    seq = RecordSequence([{"x": np.float32(0.5), "n": np.int16(3)}, {"x": math.nan, "n": 4}])
    assert seq[0] == {"x": 0.5, "n": 3}
    assert math.isnan(seq[1]["x"])


def test_keys_in_another_order_are_the_same_keys() -> None:
    """A record with the same keys in another order is accepted and equal on access."""
    seq = RecordSequence([{"a": 1, "b": "x"}, {"b": "y", "a": 2}])
    assert seq[1] == {"a": 2, "b": "y"}


@pytest.mark.parametrize(
    ("records", "error", "match"),
    [
        (
            [{"a": 1}, {"a": 1, "b": 2}],
            ValueError,
            r"keys of record 0 \['a'\], got \['a', 'b'\] in record 1",
        ),
        ([{"a": 1}, {"b": 1}], ValueError, r"got \['b'\] in record 1"),
        ([{"a": 1}, {"a": 1.5}], TypeError, r"got 1.5 \(float\) for key 'a' in record 1 after 1"),
        ([{"a": True}, {"a": 2}], TypeError, r"got 2 \(int\) for key 'a' in record 1"),
        ([{"a": 1}, {"a": None}], TypeError, r"got None \(NoneType\) for key 'a' in record 1"),
        ([{"a": [1]}], TypeError, r"got \[1\] \(list\) for key 'a' in record 0; flatten"),
        (
            [{"a": 2**63}],
            ValueError,
            r"fit in int64, got 9223372036854775808 for key 'a' in record 0",
        ),
        ([{"a": 1}, (1,)], TypeError, r"records must be dicts, got \(1,\) \(tuple\) at index 1"),
    ],
)
def test_bad_records_name_the_first_bad_one(records: list[Any], error: type, match: str) -> None:
    """Each kind of bad input raises its error naming the record, the key and the value."""
    with pytest.raises(error, match=match):
        RecordSequence(records)


def test_empty_records_and_records_without_keys() -> None:
    """No records, and records with no keys, keep their length and check the index."""
    assert len(RecordSequence([])) == 0
    seq = RecordSequence([{}, {}])
    assert list(seq) == [{}, {}]
    with pytest.raises(IndexError, match="got 2"):
        seq[2]


def test_plain_pickle_round_trip() -> None:
    """A plain pickle carries the columns and comes back equal."""
    seq = RecordSequence(RECORDS)
    again = pickle.loads(pickle.dumps(seq))
    assert again == seq
    assert list(again) == RECORDS


def test_compact_picks_the_container() -> None:
    """compact() turns each kind of list into its container, and keeps compact ones as they are."""
    strings = compact(["a", "b"])
    assert strings == StringSequence(["a", "b"])
    assert compact([b"a"]) == BytesSequence([b"a"])
    assert compact(({"k": 1},)) == RecordSequence([{"k": 1}])
    ints = compact([1, 2, 3])
    assert ints.dtype == np.int64
    assert ints.tolist() == [1, 2, 3]
    assert compact([0.5]).dtype == np.float64
    assert compact([True]).dtype == np.bool_
    assert compact(strings) is strings
    array = np.arange(3)
    assert compact(array) is array


@pytest.mark.parametrize(
    ("items", "error", "match"),
    [
        ([1, "a"], TypeError, r"one kind, got 'a' \(str\) at index 1 after 1 \(int\)"),
        ([None], TypeError, r"cannot hold element 0: None \(NoneType\)"),
        ([{"a": 1}, 3], TypeError, r"got 3 \(int\) at index 1 after \{'a': 1\} \(dict\)"),
        ([], ValueError, "empty sequence"),
        ("abc", TypeError, r"needs a sequence .* got 'abc' \(str\)"),
        ({"a": 1}, TypeError, r"needs a sequence"),
        ([2**64], ValueError, r"fit in int64, got 18446744073709551616 at index 0"),
    ],
)
def test_compact_rejects_what_it_cannot_hold(items: Any, error: type, match: str) -> None:
    """compact() raises a clear error naming the first element it cannot hold."""
    with pytest.raises(error, match=match):
        compact(items)
