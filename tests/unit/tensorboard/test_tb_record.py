"""TFRecord framing: the published golden vector, round trips and damaged records."""

from __future__ import annotations

import io
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.tensorboard import _record
from stoker.tensorboard._event_file import file_version_event

# The file_version record used as a test vector by TensorBoard's Rust data server (tf_record.rs).
_GOLDEN_PAYLOAD = b"\x09\x00\x00\x80\x38\x99\xd6\xd7\x41\x1a\x0dbrain.Event:2"


def test_file_version_record_matches_the_golden_vector() -> None:
    """The 24-byte file_version event frames with length CRC 0x224b7fa3 and data CRC 0xab364b12."""
    (wall_time,) = struct.unpack("<d", _GOLDEN_PAYLOAD[1:9])
    payload = file_version_event(wall_time)
    assert payload == _GOLDEN_PAYLOAD
    framed = _record.frame(payload)
    length, length_crc = struct.unpack("<QI", framed[:12])
    (data_crc,) = struct.unpack("<I", framed[-4:])
    assert (length, length_crc, data_crc) == (24, 0x224B7FA3, 0xAB364B12)


def test_masked_crc_matches_tensorboard() -> None:
    """The masked CRC32C equals TensorBoard's own implementation for a few inputs."""
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    for data in (b"", b"a", b"brain.Event:2" * 7, bytes(range(256))):
        assert _record.masked_crc32c(data) == masked_crc32c(data)


@given(st.lists(st.binary(max_size=300), max_size=8))
def test_frame_many_reads_back_record_by_record(payloads: list[bytes]) -> None:
    """Records framed in one buffer read back in order, each equal to its payload."""
    buffer = _record.frame_many(payloads)
    assert buffer == b"".join(_record.frame(p) for p in payloads)
    assert list(_record.iter_records(io.BytesIO(buffer))) == payloads


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda b: b[:5], "truncated record header"),
        (lambda b: b[:-1], "truncated record"),
        (lambda b: b[:8] + bytes([b[8] ^ 1]) + b[9:], "length checksum"),
        (lambda b: b[:14] + bytes([b[14] ^ 1]) + b[15:], "data checksum"),
    ],
)
def test_damaged_records_raise_record_error(damage: object, message: str) -> None:
    """A truncated record or a flipped bit raises RecordError naming the problem."""
    framed = _record.frame(b"payload bytes")
    assert callable(damage)
    with pytest.raises(_record.RecordError, match=message):
        _record.read_record(io.BytesIO(damage(framed)))


def test_empty_stream_ends_cleanly() -> None:
    """A stream with no bytes left yields no record and no error."""
    assert _record.read_record(io.BytesIO(b"")) is None
