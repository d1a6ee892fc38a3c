"""Reading event files: truncated tails wait, corrupt records warn and resync, positions resume.

Also what a hostile or broken log dir does to discovery and reading: FIFOs and other special
files named like event files, directories that cannot be listed, a text file passed as the
log dir, stores that cannot be used, lengths that claim more than the file holds, and long
stretches of zeros. A directory that cannot be listed is simulated by patching ``os.scandir``
(the tests run as root, who can list anything), which is what ``os.walk`` calls.
"""

from __future__ import annotations

import contextlib
import os
import struct
import threading
import time
import tracemalloc
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tb_stores import without_aws_credentials

from stoker.tensorboard import (
    CorruptRecordWarning,
    EventFileError,
    EventFileReader,
    FilePosition,
    Reader,
    read_events,
)
from stoker.tensorboard._proto import file_version_event, frame, frame_many, masked_crc32c
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


def _header(length: int) -> bytes:
    """A header claiming ``length`` bytes, with a length checksum that holds."""
    packed = struct.pack("<Q", length)
    return packed + struct.pack("<I", masked_crc32c(packed))


def _read_all(path: Path) -> tuple[list[bytes], list[str]]:
    """Every payload of ``path`` read in 16 MiB pieces, and the warnings issued."""
    reader = EventFileReader(path)
    payloads: list[bytes] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        while True:
            before = reader.position
            payloads += [data for _, data in reader.read_records(max_bytes=16 << 20)]
            if reader.position == before or reader.pending_bytes == 0:
                break
    return payloads, [str(w.message) for w in caught]


def test_64_mib_of_zeros_is_skipped_in_seconds(tmp_path: Path) -> None:
    """Resync runs at memory speed: 64 MiB of zeros between two records takes well under 5 s.

    The byte-by-byte resync ran at about 2.8 MiB/s, 23 s for this file. The bound is on this
    thread's CPU time, so time spent waiting for a core on a loaded machine does not count.
    """
    path = tmp_path / "events.out.tfevents.zeros"
    path.write_bytes(frame(b"before") + bytes(64 << 20) + frame(b"after"))
    started = time.thread_time()
    payloads, caught = _read_all(path)
    assert time.thread_time() - started < 5
    assert payloads == [b"before", b"after"]
    assert len(caught) == 1
    assert "corrupt record at offset 22" in caught[0]


@pytest.mark.parametrize("claim", [1 << 20, 500 << 20, (1 << 31) - 1])
def test_length_past_the_end_of_the_file_is_corruption_when_records_follow(
    tmp_path: Path, claim: int
) -> None:
    """A header claiming more than the file holds hides nothing: the records after it are read.

    A writer appends records in order, so an intact record after an unfinished one means the
    header lies; it is warned about and skipped.
    """
    path = tmp_path / "events.out.tfevents.claim"
    path.write_bytes(frame(b"one") + _header(claim) + b"\x00" * 1000 + frame(b"two"))
    payloads, caught = _read_all(path)
    assert payloads == [b"one", b"two"]
    assert len(caught) == 1
    assert f"record length {claim} runs past the end of the file" in caught[0]


def test_length_past_the_end_with_nothing_after_it_is_a_tail_to_wait_for(tmp_path: Path) -> None:
    """A record whose end is not written yet is left for the next poll, without a warning."""
    path = tmp_path / "events.out.tfevents.tail"
    record = frame(b"x" * 5000)
    path.write_bytes(frame(b"one") + record[:3000])
    reader = EventFileReader(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [data for _, data in reader.read_records()] == [b"one"]
    assert reader.pending_bytes == 3000
    with path.open("ab") as stream:
        stream.write(record[3000:])
    assert [data for _, data in reader.read_records()] == [b"x" * 5000]


def test_a_huge_claimed_length_is_checked_without_loading_the_file(tmp_path: Path) -> None:
    """Memory stays bounded by the largest valid record, whatever lengths headers claim.

    One header claims 64 MiB that the file holds (its data checksum fails), another claims
    more than the file holds; neither makes the reader hold the claimed bytes (the old reader
    doubled its read until the record fitted: the whole file).
    """
    path = tmp_path / "events.out.tfevents.big"
    filler = bytes(range(256)) * (70 << 12)  # 70 MiB, no plausible header in it
    with path.open("wb") as stream:
        stream.write(frame(b"one"))
        stream.write(_header(64 << 20))
        stream.write(filler)
        stream.write(frame(b"two"))
        stream.write(_header(1 << 30))
        stream.write(filler[: 8 << 20])
        stream.write(frame(b"three"))
    tracemalloc.start()
    try:
        payloads, caught = _read_all(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert payloads == [b"one", b"two", b"three"]
    assert len(caught) == 2
    assert "data checksum mismatch" in caught[0]
    assert "runs past the end of the file" in caught[1]
    assert peak < 40 << 20


def test_a_valid_record_larger_than_a_window_is_read_whole(tmp_path: Path) -> None:
    """A genuine 20 MiB record (larger than the 16 MiB window) is checked in pieces and returned."""
    path = tmp_path / "events.out.tfevents.large"
    large = bytes(range(251)) * ((20 << 20) // 251)
    path.write_bytes(frame(b"one") + frame(large) + frame(b"two"))
    payloads, caught = _read_all(path)
    assert caught == []
    assert payloads == [b"one", large, b"two"]


def _unblock(fifo: Path) -> None:
    """Release a reader blocked in open() on ``fifo`` (the old reader), by opening its write end."""
    with contextlib.suppress(OSError):  # ENXIO: nobody was blocked, nothing to release
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def _within(seconds: float, call: Any) -> Any:
    """Run ``call()`` in a thread; fail if it has not returned within ``seconds``."""
    result: dict[str, Any] = {}

    def target() -> None:
        try:
            result["value"] = call()
        except BaseException as err:  # re-raised in the test's thread
            result["error"] = err

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    if "error" in result:
        raise result["error"]
    return result["value"]


def test_fifo_named_like_an_event_file_is_skipped_with_a_warning(tmp_path: Path) -> None:
    """A FIFO whose name has tfevents is reported and skipped: opening it would block forever."""
    (tmp_path / "events.out.tfevents.1.real").write_bytes(frame_many([file_version_event(1.0)]))
    fifo = tmp_path / "events.out.tfevents.2.fifo"
    os.mkfifo(fifo)
    try:
        with pytest.warns(CorruptRecordWarning, match=r"tfevents\.2\.fifo': skipped, it is a FIFO"):
            reader = _within(10, lambda: Reader(tmp_path))
        assert reader.runs == ["."]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            reader.reload()  # reported once, not at every reload
        with pytest.warns(CorruptRecordWarning, match="FIFO"):
            events = _within(10, lambda: list(read_events(tmp_path)))
        assert len(events) == 1
    finally:
        _unblock(fifo)


def test_special_files_never_block_a_read(tmp_path: Path) -> None:
    """Reading a FIFO given by name fails at once (O_NONBLOCK, then fstat) instead of blocking."""
    fifo = tmp_path / "events.out.tfevents.fifo"
    os.mkfifo(fifo)
    try:
        with pytest.raises(EventFileError, match="is a FIFO, not a regular file"):
            _within(10, EventFileReader(fifo).read_records)
        with pytest.raises(EventFileError, match="a FIFO; event files are regular files"):
            _within(10, lambda: Reader(fifo))
        with pytest.raises(EventFileError, match="a character device"):
            Reader("/dev/null")
    finally:
        _unblock(fifo)


def test_dangling_link_named_like_an_event_file_is_skipped(tmp_path: Path) -> None:
    """A symlink to nothing is reported and skipped; the other files of the run are read."""
    (tmp_path / "events.out.tfevents.1.real").write_bytes(frame_many([file_version_event(1.0)]))
    (tmp_path / "events.out.tfevents.2.link").symlink_to(tmp_path / "gone")
    with pytest.warns(CorruptRecordWarning, match="cannot be read"):
        reader = Reader(tmp_path)
    assert reader.runs == ["."]


@pytest.fixture
def unlistable(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """Directories that os.scandir refuses to list, as for a user without the read permission.

    Directories (by absolute path) that os.scandir refuses to list, as for a user without
    the read permission (the tests run as root, who can list everything).
    """
    refused: set[str] = set()
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if os.path.abspath(os.fspath(path)) in refused:
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return refused


def test_unreadable_log_dir_is_an_error_not_an_empty_log(
    tmp_path: Path, unlistable: set[str]
) -> None:
    """A root that cannot be listed raises EventFileError naming it and the permission error."""
    (tmp_path / "events.out.tfevents.1").write_bytes(frame_many([file_version_event(1.0)]))
    unlistable.add(str(tmp_path))
    with pytest.raises(EventFileError, match=r"cannot list log directory .*Permission denied"):
        Reader(tmp_path)


def test_unreadable_run_below_the_root_is_skipped_with_a_warning(
    tmp_path: Path, unlistable: set[str]
) -> None:
    """A sub-directory that cannot be listed is reported; the readable runs are read."""
    for run in ("ok", "locked"):
        (tmp_path / run).mkdir()
        (tmp_path / run / "events.out.tfevents.1").write_bytes(
            frame_many([file_version_event(1.0)])
        )
    unlistable.add(str(tmp_path / "locked"))
    with pytest.warns(CorruptRecordWarning, match="locked': cannot list this directory"):
        reader = Reader(tmp_path)
    assert reader.runs == ["ok"]


@pytest.mark.parametrize("content", [b"just some notes\n", b"", b"short"])
def test_text_file_given_as_the_log_dir_is_an_error(tmp_path: Path, content: bytes) -> None:
    """A file without tfevents in its name that does not start with a header is not a log."""
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(EventFileError, match="a file that is not an event file"):
        Reader(path)
    renamed = tmp_path / "run.events"
    renamed.write_bytes(frame_many([file_version_event(1.0)]))
    assert Reader(renamed).runs == ["."]  # any name, when it starts like an event file


@pytest.fixture
def no_aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """An environment where botocore finds no credentials (see tb_stores)."""
    yield from without_aws_credentials(monkeypatch, tmp_path)


@pytest.mark.usefixtures("no_aws_credentials")
@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("gs://bucket/run", "needs gcsfs; install it with pip install gcsfs"),
        ("nosuchproto://bucket/run", "fsspec knows no nosuchproto:// protocol"),
        ("s3://bucket/run", "NoCredentialsError.*configure them"),
        ("memory://stoker-missing/run", "does not exist or cannot be reached"),
    ],
)
def test_store_that_cannot_be_used_raises_event_file_error(url: str, message: str) -> None:
    """A missing backend, an unknown protocol or missing credentials is one EventFileError."""
    with pytest.raises(EventFileError, match=message) as raised:
        Reader(url)
    assert url in str(raised.value)
    assert raised.value.__cause__ is not None or "gcsfs" in message


def test_a_web_server_index_page_is_not_taken_for_an_event_file(tmp_path: Path) -> None:
    """Over http:// a directory is its HTML index page: an error, not an empty log."""
    import http.server

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "events.out.tfevents.1").write_bytes(frame_many([file_version_event(1.0)]))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(tmp_path), **kwargs)

        def log_message(self, *args: Any) -> None:
            """Keep the test's output clean."""

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/run/"
        with pytest.raises(EventFileError, match="pass an event file's URL"):
            Reader(url)
    finally:
        server.shutdown()
        server.server_close()


def test_paths_in_warnings_are_escaped(tmp_path: Path) -> None:
    """A run directory named with escape sequences appears in warnings as repr writes it."""
    run = tmp_path / "run\x1b]0;pwned\x07"
    run.mkdir()
    (run / "events.out.tfevents.1").write_bytes(frame(b"not an event") + b"\xff" * 40)
    with pytest.warns(CorruptRecordWarning) as caught:
        Reader(tmp_path)
    assert len(caught) == 2  # a malformed event, then a corrupt stretch
    for warning in caught:
        assert "\x1b" not in str(warning.message)
        assert "\\x1b]0;pwned\\x07" in str(warning.message)
