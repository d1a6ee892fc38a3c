"""Event and Summary bytes spliced from parts, for the hot paths of the writer and the reader.

Building a message dict and encoding it costs microseconds; ``add_scalar`` cannot afford that.
These helpers write the same bytes the codec would (checked by the tests) by joining
precomputed field keys, taken from the declarations in ``messages``, with the variable parts:

* :func:`event_bytes` wraps an encoded ``Summary`` in an ``Event`` with wall time and step;
* :func:`summary_of` wraps encoded ``Summary.Value`` messages (:func:`summary_value`, the one
  place builders encode a value) in a ``Summary``;
* :func:`file_version_event` is the first record of every event file;
* :func:`set_time_and_step` rewrites the time and step of an encoded ``Event``;
* :func:`scalar_prefix` is the constant part of a scalar event, by tag. Every ``add_scalar``
  writer (stoker's, torch's, tensorboardX's) lays an old-style scalar event out as::

      key(wall_time) <f64> [key(step) <varint>] key(summary) <n> key(value) <n>
      key(tag) <n> <tag> key(simple_value) <f32>

  so everything between the step and the float depends only on the tag. The writer caches
  that prefix per tag; the reader recognises it (:func:`scalar_prefix_tag`) and reads step,
  wall time and value with ``struct``, building no message.
"""

from __future__ import annotations

from typing import Any

from stoker.tensorboard._proto.messages import EVENT, SUMMARY, SUMMARY_VALUE
from stoker.tensorboard._proto.wire import (
    DOUBLE,
    I64,
    LEN,
    VARINT,
    WireError,
    decode_varint,
    encode_varint,
    iter_fields,
    key,
    to_signed64,
)

__all__ = [
    "FILE_VERSION",
    "STEP_KEY",
    "WALL_TIME_KEY",
    "event_bytes",
    "file_version_event",
    "scalar_prefix",
    "scalar_prefix_tag",
    "set_time_and_step",
    "summary_of",
    "summary_value",
]

FILE_VERSION = "brain.Event:2"
"""``Event.file_version`` of the first record of every event file."""
WALL_TIME_KEY = EVENT.key("wall_time")
"""Key of ``Event.wall_time``: the first bytes of every event stoker writes."""
STEP_KEY = EVENT.key("step")
"""Key of ``Event.step``, which follows the wall time when the step is not 0."""
_WALL_TIME = EVENT.number("wall_time")
_STEP = EVENT.number("step")
_SUMMARY_KEY = EVENT.key("summary")
_FILE_VERSION_KEY = EVENT.key("file_version")
_VALUE_KEY = SUMMARY.key("value")
_TAG_KEY = SUMMARY_VALUE.key("tag")
_SIMPLE_VALUE_KEY = SUMMARY_VALUE.key("simple_value")
_PACK_DOUBLE = DOUBLE.pack


def summary_value(tag: str, body: dict[str, Any]) -> bytes:
    """Encode one ``Summary.Value`` with ``tag`` and the other fields in ``body``."""
    return SUMMARY_VALUE.encode({"tag": tag, **body})


def summary_of(*values: bytes) -> bytes:
    """Wrap encoded ``Summary.Value`` messages in a ``Summary``."""
    return b"".join(_VALUE_KEY + encode_varint(len(value)) + value for value in values)


def event_bytes(summary: bytes, step: int | None, wall_time: float) -> bytes:
    """Encode an ``Event`` holding ``summary`` (already encoded); a step of 0 is left out."""
    step_part = STEP_KEY + encode_varint(step) if step else b""
    return b"".join(
        (
            WALL_TIME_KEY,
            _PACK_DOUBLE(wall_time),
            step_part,
            _SUMMARY_KEY,
            encode_varint(len(summary)),
            summary,
        )
    )


def file_version_event(wall_time: float) -> bytes:
    """Encode the ``Event`` that starts every event file."""
    version = FILE_VERSION.encode()
    return b"".join(
        (
            WALL_TIME_KEY,
            _PACK_DOUBLE(wall_time),
            _FILE_VERSION_KEY,
            encode_varint(len(version)),
            version,
        )
    )


def set_time_and_step(event: bytes, wall_time: float, step: int | None) -> bytes:
    """Rewrite the wall time and (when given) the step of an encoded ``Event``; keep the rest.

    Raises:
        WireError: If ``event`` is not a valid message.
    """
    head = [WALL_TIME_KEY, _PACK_DOUBLE(wall_time)]
    rest: list[bytes] = []
    for number, wire_type, value in iter_fields(event):
        if number == _WALL_TIME and wire_type == I64:
            continue
        if number == _STEP and wire_type == VARINT:
            if step is None:
                step = to_signed64(value)
            continue
        rest.append(key(number, wire_type))
        if wire_type == VARINT:
            rest.append(encode_varint(value))
        elif wire_type == LEN:
            rest.append(encode_varint(len(value)))
            rest.append(bytes(value))
        else:
            rest.append(value)
    if step:
        head.append(STEP_KEY + encode_varint(step))
    return b"".join(head + rest)


def scalar_prefix(tag: str) -> bytes:
    """Return the bytes of a scalar event between its step and its float value.

    They are the ``summary`` field up to the float: a ``Summary`` with one ``Summary.Value``
    holding ``tag`` and a ``simple_value`` whose four bytes follow.
    """
    raw = tag.encode("utf-8")
    value = _TAG_KEY + encode_varint(len(raw)) + raw + _SIMPLE_VALUE_KEY
    value_len = len(value) + 4
    summary_len = len(_VALUE_KEY) + len(encode_varint(value_len)) + value_len
    return _SUMMARY_KEY + encode_varint(summary_len) + _VALUE_KEY + encode_varint(value_len) + value


def scalar_prefix_tag(prefix: bytes) -> str | None:
    """Return the tag of a scalar prefix exactly as :func:`scalar_prefix` writes it, else None."""
    pos = 0
    length = 0
    try:
        for field_key in (_SUMMARY_KEY, _VALUE_KEY, _TAG_KEY):
            if not prefix.startswith(field_key, pos):
                return None
            length, pos = decode_varint(prefix, pos + len(field_key))
        tag = prefix[pos : pos + length].decode("utf-8")
    except (WireError, UnicodeDecodeError):
        return None
    return tag if tag and scalar_prefix(tag) == prefix else None
