"""Reading event files: truncated tails wait, corrupt records warn and resync, positions resume."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from stoker.tensorboard import CorruptRecordWarning, EventFileError, EventFileReader, FilePosition
from stoker.tensorboard._proto import frame, frame_many, masked_crc32c
from stoker.tensorboard._read.files import scan_records

PAYLOADS = [b"first", b"", b"x" * 300, bytes(range(256)), b"last one"]


def _offsets(payloads: list[bytes]) -> list[int]:
    offsets, pos = [], 0
    for data in payloads:
        offsets.append(pos)
        pos += 16 + len(data)
    return offsets


def test_scan_returns_every_record_with_its_offset() -> None:
    """Intact framing yields each payload, at the offset where its header starts."""
    buffer = frame_many(PAYLOADS)
    result = scan_records(buffer)
    assert result.records == list(zip(_offsets(PAYLOADS), PAYLOADS, strict=True))
    assert result.end == len(buffer)
    assert not result.skipping


@pytest.mark.parametrize("cut", [1, 5, 11, 12, 13, 20, 42])
def test_truncated_tail_is_left_for_the_next_scan(cut: int) -> None:
    """A partial last record (header or body) is not returned, not warned about, and kept."""
    whole = frame_many(PAYLOADS[:2])
    tail = frame(b"a record still being written")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = scan_records(whole + tail[:cut])
    assert [data for _, data in result.records] == PAYLOADS[:2]
    assert result.end == len(whole)


@pytest.mark.parametrize(
    ("where", "name"),
    [(4, "length"), (8, "length checksum"), (12 + 2, "data"), (-2, "data checksum")],
)
def test_corrupt_record_is_skipped_with_one_warning(where: int, name: str) -> None:
    """Damage to any part of a record drops that record only; the scan resyncs to the next."""
    records = [frame(data) for data in PAYLOADS]
    damaged = bytearray(records[2])
    damaged[where] ^= 0x40
    buffer = b"".join([*records[:2], bytes(damaged), *records[3:]])
    with pytest.warns(CorruptRecordWarning, match="offset") as caught:
        result = scan_records(buffer)
    assert len(caught) == 1, name
    assert [data for _, data in result.records] == PAYLOADS[:2] + PAYLOADS[3:]
    assert result.records[2][0] == _offsets(PAYLOADS)[3]


def test_garbage_between_records_is_one_corrupt_stretch() -> None:
    """Bytes that are no record at all warn once, however long, and the next record is found."""
    buffer = frame(b"before") + bytes(range(7, 250)) * 3 + frame(b"after")
    with pytest.warns(CorruptRecordWarning) as caught:
        result = scan_records(buffer)
    assert len(caught) == 1
    assert [data for _, data in result.records] == [b"before", b"after"]


def test_scan_never_reads_an_absurd_length_as_a_tail() -> None:
    """A header with a valid length checksum but a length over 2 GiB counts as corruption."""
    length = (1 << 40).to_bytes(8, "little")
    bogus = length + masked_crc32c(length).to_bytes(4, "little")
    with pytest.warns(CorruptRecordWarning, match="too large"):
        result = scan_records(bogus + frame(b"real"))
    assert [data for _, data in result.records] == [b"real"]


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as stream:
        stream.write(data)


def test_file_reader_follows_a_growing_file(tmp_path: Path) -> None:
    """Each read returns only what was completed since the last one, byte by byte growth too."""
    path = tmp_path / "events.out.tfevents.1"
    path.write_bytes(b"")
    reader = EventFileReader(path)
    assert reader.read_records() == []
    seen: list[bytes] = []
    for data in frame_many(PAYLOADS[:3]):
        _append(path, bytes([data]))
        seen.extend(payload for _, payload in reader.read_records())
    assert seen == PAYLOADS[:3]
    assert reader.position == FilePosition(str(path), path.stat().st_size, False)
    assert reader.pending_bytes == 0


def test_small_pieces_still_return_every_record(tmp_path: Path) -> None:
    """max_bytes smaller than a record reads that record whole; each call makes progress."""
    path = tmp_path / "events.out.tfevents.5"
    path.write_bytes(frame_many(PAYLOADS))
    reader = EventFileReader(path)
    calls = []
    while reader.pending_bytes or not calls:
        calls.append([data for _, data in reader.read_records(max_bytes=1)])
    assert all(calls)
    assert [data for call in calls for data in call] == PAYLOADS
    assert len(calls) > 1
    with pytest.raises(ValueError, match="max_bytes must be"):
        reader.read_records(max_bytes=0)


def test_saved_position_resumes_in_a_new_reader(tmp_path: Path) -> None:
    """A FilePosition saved from one reader makes a new reader return only the later records."""
    path = tmp_path / "events.out.tfevents.2"
    path.write_bytes(frame_many(PAYLOADS[:2]) + frame(PAYLOADS[2])[:10])
    first = EventFileReader(path)
    assert [data for _, data in first.read_records()] == PAYLOADS[:2]
    assert first.pending_bytes == 10
    saved = first.position
    _append(path, frame(PAYLOADS[2])[10:] + frame(PAYLOADS[3]))
    resumed = EventFileReader(*saved)
    records = resumed.read_records()
    assert [data for _, data in records] == PAYLOADS[2:4]
    assert [offset for offset, _ in records] == _offsets(PAYLOADS)[2:4]


def test_corrupt_stretch_at_the_end_is_reported_once_across_polls(tmp_path: Path) -> None:
    """Garbage at the end warns once; records appended after it are found on a later poll."""
    path = tmp_path / "events.out.tfevents.3"
    path.write_bytes(frame(b"one") + b"\xff" * 40)
    reader = EventFileReader(path)
    with pytest.warns(CorruptRecordWarning):
        assert [data for _, data in reader.read_records()] == [b"one"]
    assert reader.position.skipping
    _append(path, b"\xee" * 5 + frame(b"two"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [data for _, data in reader.read_records()] == [b"two"]
    assert not reader.position.skipping


def test_file_shorter_than_the_saved_position_raises(tmp_path: Path) -> None:
    """A file replaced by a shorter one is an EventFileError naming the position."""
    path = tmp_path / "events.out.tfevents.4"
    path.write_bytes(frame(b"abc"))
    with pytest.raises(EventFileError, match="shorter than the saved position 100"):
        EventFileReader(path, 100).read_records()


def test_missing_file_raises_event_file_error(tmp_path: Path) -> None:
    """Reading a file that does not exist raises EventFileError with the path."""
    with pytest.raises(EventFileError, match="missing"):
        EventFileReader(tmp_path / "missing").read_records()


@pytest.mark.parametrize("offset", [-1, 1.5, True, "0"])
def test_bad_offset_is_rejected(offset: object) -> None:
    """Only a non-negative int is a valid starting offset."""
    with pytest.raises(ValueError, match="offset must be an int"):
        EventFileReader("x", offset)  # type: ignore[arg-type]
