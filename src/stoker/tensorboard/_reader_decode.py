"""Decoding for the reader: Event and Summary walking, a scalar fast path, TensorProto to NumPy.

Field numbers are those of ``_messages`` (from TensorBoard's ``event.proto``, ``summary.proto``
and ``tensor.proto``). Events are walked with ``_wire.iter_fields`` and only the parts a reader
needs are decoded: payloads that are expensive to decode (tensors, images, audio) are kept as
bytes until asked for. Malformed bytes raise ``_wire.WireError``.

The fast path, :class:`ScalarFastPath`, recognises the layout every ``add_scalar`` writer
produces (stoker's, torch's, tensorboardX's)::

    09 <wall_time f64> [10 <step varint>] 2a <n> 0a <n> 0a <n> <tag> 15 <simple_value f32>

The bytes between the step and the float depend only on the tag, so they are looked up in a
dict; a hit yields ``(tag, step, wall_time, value)`` with no message object built.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

import numpy as np

from stoker.tensorboard import _messages as pb
from stoker.tensorboard import _wire

_DOUBLE_AT = struct.Struct("<d").unpack_from
_FLOAT_AT = struct.Struct("<f").unpack_from
_MAX_CACHED_PREFIXES = 65536

# TensorProto dtype -> (dtype name, NumPy dtype of tensor_content) per tensorflow's types.proto.
TENSOR_DTYPES: dict[int, tuple[str, str]] = {
    pb.DT_FLOAT: ("float32", "<f4"),
    pb.DT_DOUBLE: ("float64", "<f8"),
    pb.DT_INT32: ("int32", "<i4"),
    pb.DT_UINT8: ("uint8", "u1"),
    pb.DT_INT16: ("int16", "<i2"),
    pb.DT_INT8: ("int8", "i1"),
    pb.DT_STRING: ("string", "O"),
    pb.DT_COMPLEX64: ("complex64", "<c8"),
    pb.DT_INT64: ("int64", "<i8"),
    pb.DT_BOOL: ("bool", "?"),
    pb.DT_BFLOAT16: ("bfloat16", "<u2"),
    pb.DT_UINT16: ("uint16", "<u2"),
    pb.DT_COMPLEX128: ("complex128", "<c16"),
    pb.DT_HALF: ("float16", "<f2"),
    pb.DT_UINT32: ("uint32", "<u4"),
    pb.DT_UINT64: ("uint64", "<u8"),
}
# Value fields of TensorProto: number -> (wire kind, NumPy dtype when packed fixed-width).
_FIXED_VALUE_FIELDS = {5: "<f4", 6: "<f8", 9: "<f4", 12: "<f8"}
_VARINT_VALUE_FIELDS = frozenset({7, 10, 11, 13, 16, 17})
_STRING_FIELD = 8


class ParsedEvent(NamedTuple):
    """The top level of one ``Event``: times and which ``what`` field it carries.

    Attributes:
        wall_time: Seconds since the epoch.
        step: The global step.
        what: Field number of the ``what`` oneof present (3 file_version, 5 summary,
            7 session_log, ...), or 0 when none.
        payload: That field's value (bytes for messages and strings).
    """

    wall_time: float
    step: int
    what: int
    payload: bytes


class SummaryValue(NamedTuple):
    """One ``Summary.Value`` with its payload left encoded.

    Attributes:
        tag: The tag (``node_name`` when the tag is empty, as TensorBoard does for tensors).
        plugin_name: ``metadata.plugin_data.plugin_name`` or ``""`` when absent.
        plugin_content: ``metadata.plugin_data.content`` or ``b""``.
        has_metadata: Whether the value carried metadata.
        kind: Field number of the ``value`` oneof (2 simple_value, 4 image, 5 histo, 6 audio,
            8 tensor) or 0 when none.
        payload: The float for ``simple_value``, else the encoded sub-message.
    """

    tag: str
    plugin_name: str
    plugin_content: bytes
    has_metadata: bool
    kind: int
    payload: Any


def parse_event(data: bytes) -> ParsedEvent:
    """Decode the top level of an encoded ``Event``.

    Raises:
        stoker.tensorboard._wire.WireError: If the bytes are malformed.
    """
    wall_time = 0.0
    step = 0
    what = 0
    payload = b""
    for number, wire_type, raw in _wire.iter_fields(data):
        if number == 1 and wire_type == _wire.I64:
            wall_time = _DOUBLE_AT(raw)[0]
        elif number == 2 and wire_type == _wire.VARINT:
            step = _wire.to_signed64(raw)
        elif 3 <= number <= 9 and wire_type == _wire.LEN:
            what = number
            payload = bytes(raw)
        elif number <= 9:
            raise _wire.WireError(f"Event field {number} has unexpected wire type {wire_type}")
    return ParsedEvent(wall_time, step, what, payload)


def _string(raw: Any, name: str) -> str:
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError as err:
        raise _wire.WireError(f"{name} is not valid UTF-8") from err


def _plugin_data(metadata: Any) -> tuple[str, bytes]:
    name = ""
    content = b""
    for number, wire_type, raw in _wire.iter_fields(metadata):
        if number == 1 and wire_type == _wire.LEN:
            for sub, sub_type, value in _wire.iter_fields(raw):
                if sub == 1 and sub_type == _wire.LEN:
                    name = _string(value, "plugin_name")
                elif sub == 2 and sub_type == _wire.LEN:
                    content = bytes(value)
    return name, content


def parse_summary(data: bytes) -> list[SummaryValue]:
    """Split an encoded ``Summary`` into its values, decoding only tags and plugin metadata.

    Raises:
        stoker.tensorboard._wire.WireError: If the bytes are malformed.
    """
    values: list[SummaryValue] = []
    for number, wire_type, raw_value in _wire.iter_fields(data):
        if number != 1 or wire_type != _wire.LEN:
            continue
        tag = ""
        node_name = ""
        plugin = ("", b"")
        has_metadata = False
        kind = 0
        payload: Any = None
        for field, field_type, raw in _wire.iter_fields(raw_value):
            if field == 1 and field_type == _wire.LEN:
                tag = _string(raw, "tag")
            elif field == 7 and field_type == _wire.LEN:
                node_name = _string(raw, "node_name")
            elif field == 9 and field_type == _wire.LEN:
                plugin = _plugin_data(raw)
                has_metadata = True
            elif field == 2 and field_type == _wire.I32:
                kind, payload = 2, _FLOAT_AT(raw)[0]
            elif field in (4, 5, 6, 8) and field_type == _wire.LEN:
                kind, payload = field, bytes(raw)
        values.append(
            SummaryValue(tag or node_name, plugin[0], plugin[1], has_metadata, kind, payload)
        )
    return values


class ScalarFastPath:
    """Recognises single ``simple_value`` scalar events without building message objects."""

    def __init__(self) -> None:
        """Start with an empty cache of tag prefixes."""
        self._prefixes: dict[bytes, str | None] = {}

    def _learn(self, prefix: bytes) -> str | None:
        """Check that ``prefix`` is ``2a n 0a n 0a n tag 15`` with consistent lengths."""
        try:
            if prefix[0] != 0x2A or prefix[-1] != 0x15:
                return None
            summary_len, pos = _wire.decode_varint(prefix, 1)
            if pos + summary_len != len(prefix) + 4 or prefix[pos] != 0x0A:
                return None
            value_len, pos = _wire.decode_varint(prefix, pos + 1)
            if pos + value_len != len(prefix) + 4 or prefix[pos] != 0x0A:
                return None
            tag_len, pos = _wire.decode_varint(prefix, pos + 1)
            if pos + tag_len != len(prefix) - 1 or tag_len == 0:
                return None
            return prefix[pos : pos + tag_len].decode("utf-8")
        except (IndexError, _wire.WireError, UnicodeDecodeError):
            return None

    def match(self, data: bytes) -> tuple[str, int, float, float] | None:
        """Return ``(tag, step, wall_time, value)`` for a plain scalar event, else ``None``."""
        size = len(data)
        if size < 20 or data[0] != 0x09:
            return None
        pos = 9
        step = 0
        if data[9] == 0x10:
            shift = 0
            pos = 10
            while True:
                byte = data[pos]
                pos += 1
                step |= (byte & 0x7F) << shift
                if byte < 0x80:
                    break
                shift += 7
                if shift > 63 or pos >= size:
                    return None
            step &= 0xFFFFFFFFFFFFFFFF
            if step >= 1 << 63:
                step -= 1 << 64
        prefix = data[pos : size - 4]
        prefixes = self._prefixes
        if prefix in prefixes:
            tag = prefixes[prefix]
        else:
            tag = self._learn(prefix) if prefix else None
            if len(prefixes) < _MAX_CACHED_PREFIXES:
                prefixes[prefix] = tag
        if tag is None:
            return None
        return tag, step, _DOUBLE_AT(data, 1)[0], _FLOAT_AT(data, size - 4)[0]


def _fill(values: np.ndarray[Any, Any], count: int, name: str) -> np.ndarray[Any, Any]:
    """Broadcast repeated values to ``count`` elements the way TensorFlow does (repeat the last)."""
    if values.size == count:
        return values
    if values.size > count:
        raise _wire.WireError(f"tensor holds {values.size} {name} values for {count} elements")
    if values.size == 0:
        return np.zeros(count, dtype=values.dtype)
    return np.concatenate([values, np.full(count - values.size, values[-1], dtype=values.dtype)])


def decode_tensor(data: bytes) -> tuple[str, np.ndarray[Any, Any]]:
    """Decode an encoded ``TensorProto`` into its dtype name and a NumPy array.

    ``half`` becomes ``float16``; ``bfloat16`` (which NumPy lacks) becomes ``float32`` holding
    the same values exactly; strings become an object array of ``bytes``.

    Raises:
        stoker.tensorboard._wire.WireError: If the bytes are malformed or inconsistent.
    """
    dtype_code = 0
    shape: list[int] = []
    content: bytes | None = None
    fixed: dict[int, list[bytes]] = {}
    varints: dict[int, list[int]] = {}
    strings: list[bytes] = []
    for number, wire_type, raw in _wire.iter_fields(data):
        if number == 1 and wire_type == _wire.VARINT:
            dtype_code = _wire.to_signed64(raw)
        elif number == 2 and wire_type == _wire.LEN:
            for dim_field, dim_type, dim in _wire.iter_fields(raw):
                if dim_field == 2 and dim_type == _wire.LEN:
                    size = 0
                    for sub, sub_type, value in _wire.iter_fields(dim):
                        if sub == 1 and sub_type == _wire.VARINT:
                            size = _wire.to_signed64(value)
                    shape.append(size)
        elif number == 4 and wire_type == _wire.LEN:
            content = bytes(raw)
        elif number in _FIXED_VALUE_FIELDS and wire_type in (_wire.LEN, _wire.I32, _wire.I64):
            fixed.setdefault(number, []).append(bytes(raw))
        elif number in _VARINT_VALUE_FIELDS and wire_type == _wire.LEN:
            varints.setdefault(number, []).extend(_wire.unpack_varints(raw))
        elif number in _VARINT_VALUE_FIELDS and wire_type == _wire.VARINT:
            varints.setdefault(number, []).append(raw)
        elif number == _STRING_FIELD and wire_type == _wire.LEN:
            strings.append(bytes(raw))
    if dtype_code not in TENSOR_DTYPES:
        raise _wire.WireError(f"unsupported tensor dtype code {dtype_code}")
    if any(size < 0 for size in shape):
        raise _wire.WireError(f"tensor shape {shape} has a negative dimension")
    name, content_dtype = TENSOR_DTYPES[dtype_code]
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if count > 1 << 31:
        raise _wire.WireError(f"tensor shape {shape} is too large")
    if dtype_code == pb.DT_STRING:
        array: np.ndarray[Any, Any] = np.empty(len(strings), dtype=object)
        array[:] = strings
        flat = _fill(array, count, "string")
    elif content is not None:
        item = np.dtype(content_dtype).itemsize
        if len(content) != count * item:
            raise _wire.WireError(
                f"tensor_content has {len(content)} bytes for shape {shape} of {name}"
            )
        flat = np.frombuffer(content, dtype=content_dtype)
    else:
        flat = _repeated_values(dtype_code, content_dtype, fixed, varints, count)
    if dtype_code == pb.DT_BFLOAT16:
        flat = (flat.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return name, flat.reshape(shape)


def _repeated_values(
    dtype_code: int,
    content_dtype: str,
    fixed: dict[int, list[bytes]],
    varints: dict[int, list[int]],
    count: int,
) -> np.ndarray[Any, Any]:
    """Collect the ``*_val`` field matching the dtype and broadcast it to ``count`` elements."""
    fixed_field = {pb.DT_FLOAT: 5, pb.DT_DOUBLE: 6, pb.DT_COMPLEX64: 9, pb.DT_COMPLEX128: 12}
    if dtype_code in fixed_field:
        number = fixed_field[dtype_code]
        raw = b"".join(fixed.get(number, []))
        width = np.dtype(_FIXED_VALUE_FIELDS[number]).itemsize
        if len(raw) % width:
            raise _wire.WireError("packed fixed-width tensor values have a partial element")
        values = np.frombuffer(raw, dtype=_FIXED_VALUE_FIELDS[number])
        if dtype_code in (pb.DT_COMPLEX64, pb.DT_COMPLEX128):
            if values.size % 2:
                raise _wire.WireError("complex tensor values need an even number of floats")
            values = values.view(content_dtype)
        return _fill(values, count, "float")
    varint_field = {
        pb.DT_INT64: 10,
        pb.DT_BOOL: 11,
        pb.DT_HALF: 13,
        pb.DT_BFLOAT16: 13,
        pb.DT_UINT32: 16,
        pb.DT_UINT64: 17,
    }.get(dtype_code, 7)
    raw_ints = varints.get(varint_field, [])
    unsigned = np.array(raw_ints, dtype=np.uint64)
    if dtype_code == pb.DT_BOOL:
        values = unsigned != 0
    elif dtype_code in (pb.DT_HALF, pb.DT_BFLOAT16):
        values = (unsigned & np.uint64(0xFFFF)).astype(np.uint16)
        if dtype_code == pb.DT_HALF:
            values = values.view(np.float16)
    elif dtype_code == pb.DT_UINT64:
        values = unsigned
    else:
        # int32-like fields store sign-extended 64-bit varints; truncate like protobuf does.
        wide = unsigned.view(np.int64)
        if dtype_code != pb.DT_INT64:
            wide = (wide & np.int64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
            if dtype_code == pb.DT_UINT32:
                wide = wide.view(np.uint32)
        values = wide.astype(content_dtype)
    return _fill(values, count, "integer")
