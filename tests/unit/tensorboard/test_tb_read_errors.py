"""The reader's error contract, fuzzed with corrupted, truncated and random files.

Whatever the bytes, the reader returns (warning with ``CorruptRecordWarning`` about damage) or
raises ``EventFileError``, never anything else, and every example finishes within a deadline.
Records whose bytes were left intact are always recovered, and reading a file as it grows in
random chunks finds the same records as reading it whole.
"""

from __future__ import annotations

import functools
import tempfile
import warnings
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stoker.tensorboard import (
    CorruptRecordWarning,
    EventFileError,
    EventFileReader,
    Reader,
    SummaryWriter,
)
from stoker.tensorboard._proto import frame_many
from stoker.tensorboard._read.files import scan_records

FUZZ = settings(max_examples=60, deadline=timedelta(seconds=5))


@functools.lru_cache(maxsize=1)
def _sample_file() -> bytes:
    """An event file holding one value of every kind the reader types."""
    with tempfile.TemporaryDirectory() as directory:
        with SummaryWriter(directory) as writer:
            for step in range(4):
                writer.add_scalar("loss", 1.0 / (step + 1), step)
            writer.add_scalar("acc", 0.5, 4, new_style=True)
            writer.add_text("note", "hello", 1)
            writer.add_tensor("t", np.arange(6, dtype=np.int16).reshape(2, 3), 2)
            writer.add_histogram("h", np.linspace(-1, 1, 20), 3)
            writer.add_image("img", np.full((2, 2, 3), 9, dtype=np.uint8), 3, dataformats="HWC")
            writer.add_audio("snd", np.zeros(40, dtype=np.float32), 3, sample_rate=800)
            writer.add_hparams({"lr": 0.1}, {"final": 1.0}, same_run=True)
        (path,) = Path(directory).iterdir()
        return path.read_bytes()


def _exercise(data: bytes) -> None:
    """Read ``data`` as a log directory and touch every value; only EventFileError may escape."""
    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / "events.out.tfevents.0.fuzz").write_bytes(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CorruptRecordWarning)
            try:
                reader = Reader(directory)
                tags = reader.tags()
                for tag in tags["scalars"]:
                    reader.scalars(tag)
                for tag in tags["tensors"]:
                    reader.tensors(tag)
                for tag in tags["histograms"]:
                    reader.histograms(tag)
                for tag in tags["text"]:
                    reader.text(tag)
                for tag in tags["images"]:
                    for image in reader.images(tag):
                        image.to_numpy()
                for tag in tags["audio"]:
                    for clip in reader.audio(tag):
                        clip.to_numpy()
                reader.hparams()
                reader.scalar_table()
            except EventFileError:
                pass


def _record_spans(data: bytes) -> list[tuple[int, int, bytes]]:
    result = scan_records(data)
    return [(offset, offset + 16 + len(payload), payload) for offset, payload in result.records]


def _quiet_scan(data: bytes) -> list[tuple[int, bytes]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CorruptRecordWarning)
        return scan_records(data).records


flips = st.lists(
    st.tuples(st.floats(0, 1, exclude_max=True), st.integers(1, 255)), min_size=1, max_size=6
)


def _apply(data: bytes, changes: list[tuple[float, int]]) -> tuple[bytes, set[int]]:
    damaged = bytearray(data)
    where = set()
    for fraction, mask in changes:
        index = int(fraction * len(data))
        damaged[index] ^= mask
        where.add(index)
    return bytes(damaged), where


@FUZZ
@given(changes=flips)
def test_flipped_bytes_lose_only_the_records_they_touch(changes: list[tuple[float, int]]) -> None:
    """Every record without a flipped byte is recovered; nothing else is invented."""
    original = _sample_file()
    damaged, where = _apply(original, changes)
    spans = _record_spans(original)
    recovered = _quiet_scan(damaged)
    intact = [(start, payload) for start, end, payload in spans
              if not any(start <= index < end for index in where)]  # fmt: skip
    assert set(intact) <= set(recovered)
    assert {payload for _, payload in recovered} <= {payload for _, _, payload in spans}
    _exercise(damaged)


@FUZZ
@given(cut=st.floats(0, 1), changes=st.one_of(st.just([]), flips))
def test_truncated_files_keep_every_whole_record(
    cut: float, changes: list[tuple[float, int]]
) -> None:
    """A file cut anywhere yields the records wholly before the cut (when not otherwise damaged)."""
    original = _sample_file()
    damaged, _ = _apply(original, changes)
    size = int(cut * len(original))
    recovered = _quiet_scan(damaged[:size])
    if not changes:
        expected = [(start, payload) for start, end, payload in _record_spans(original)
                    if end <= size]  # fmt: skip
        assert recovered == expected
    _exercise(damaged[:size])


@FUZZ
@given(
    changes=st.one_of(st.just([]), flips),
    garbage=st.binary(min_size=1, max_size=64),
    at=st.floats(0, 1),
    chunks=st.lists(st.integers(1, 4000), min_size=1, max_size=12),
    piece=st.one_of(st.none(), st.integers(1, 400)),
)
def test_growing_file_reads_the_same_records_as_a_whole_one(
    changes: list[tuple[float, int]],
    garbage: bytes,
    at: float,
    chunks: list[int],
    piece: int | None,
) -> None:
    """Polling a file that grows in random chunks finds exactly the records of one full read.

    Polling a file that grows in random chunks, reading at most ``piece`` bytes a call until
    no progress, finds exactly the records of one full read.
    """
    original, _ = _apply(_sample_file(), changes)
    index = int(at * len(original))
    data = original[:index] + garbage + original[index:]
    expected = _quiet_scan(data)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "events.out.tfevents.1.grow"
        path.write_bytes(b"")
        reader = EventFileReader(path)
        got: list[Any] = []
        written = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CorruptRecordWarning)
            for size in [*chunks, len(data)]:
                chunk = data[written : written + size]
                written += len(chunk)
                with path.open("ab") as stream:
                    stream.write(chunk)
                while True:
                    before = reader.position
                    got.extend(reader.read_records(max_bytes=piece))
                    if reader.position == before:
                        break
    assert got == expected
    _exercise(data)


@FUZZ
@given(data=st.binary(max_size=3000))
def test_random_bytes_never_raise_anything_but_event_file_error(data: bytes) -> None:
    """Arbitrary bytes are read (or rejected with EventFileError) without crashing or hanging."""
    _exercise(data)


@settings(max_examples=150, deadline=timedelta(seconds=5))
@given(
    record=st.integers(0, 100),
    changes=flips,
    cut=st.one_of(st.none(), st.floats(0, 1)),
    extra=st.lists(st.binary(max_size=80), max_size=3),
)
def test_damaged_payloads_with_valid_checksums_only_raise_event_file_error(
    record: int, changes: list[tuple[float, int]], cut: float | None, extra: list[bytes]
) -> None:
    """Payloads damaged before framing (so every checksum holds) never crash the decoding."""
    payloads = [payload for _, payload in scan_records(_sample_file()).records]
    index = record % len(payloads)
    damaged, _ = _apply(payloads[index], changes)
    if cut is not None:
        damaged = damaged[: int(cut * len(damaged))]
    payloads[index] = damaged
    _exercise(frame_many(payloads + extra))
