"""Protobuf message codec: declarative field lists that encode dicts to bytes and back.

Each message is a :class:`MessageType`: a name and a tuple of :class:`Field` entries. A message
value is a plain ``dict`` keyed by field name:

* scalars are Python numbers, ``str`` or ``bytes``; enums are ``int``;
* repeated fields are sequences (NumPy arrays are accepted for numeric ones);
* sub-messages are dicts, or ``bytes`` that are already encoded (spliced in unchanged);
* map fields are dicts.

Encoding follows proto3 as the reference implementation does: fields in number order, scalars
equal to their default are skipped unless they belong to a ``oneof``, repeated numbers are packed.
Decoding accepts packed and unpacked repeated numbers, skips unknown fields and returns only the
fields present on the wire. The definitions themselves live in ``messages``.

Code that splices bytes by hand (the writer's fast paths, the reader's field walks) asks a
declaration for a field's number (:meth:`MessageType.number`) or its key bytes
(:meth:`MessageType.key`) instead of writing them out, so the numbers exist only in ``messages``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stoker.tensorboard._proto.wire import (
    DOUBLE,
    I32,
    I64,
    LEN,
    UINT32,
    UINT64,
    VARINT,
    WireError,
    encode_varint,
    iter_fields,
    key,
    pack_float32,
    pack_varints,
    to_signed32,
    to_signed64,
    unpack_varints_array,
    unzigzag,
    zigzag,
)

__all__ = [
    "FIXED_DTYPES",
    "MAX_DEPTH",
    "REGISTRY",
    "VARINT_KINDS",
    "Field",
    "MessageType",
    "f",
    "m",
]

VARINT_KINDS = frozenset({"int32", "int64", "uint32", "uint64", "bool", "enum", "sint32", "sint64"})
"""Field kinds written as varints (wire type 0)."""
FIXED_DTYPES = {"double": "<f8", "float": "<f4", "fixed64": "<u8", "fixed32": "<u4"}
"""Fixed-width field kinds and the little-endian NumPy dtype of their values."""
_INT_RANGES = {
    "int32": (-(1 << 31), (1 << 31) - 1),
    "enum": (-(1 << 31), (1 << 31) - 1),
    "sint32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
    "sint64": (-(1 << 63), (1 << 63) - 1),
    "uint32": (0, (1 << 32) - 1),
    "uint64": (0, (1 << 64) - 1),
}
"""The values each integer kind holds; the encoder refuses others instead of wrapping them."""
_WIRE_TYPE = {
    **dict.fromkeys(VARINT_KINDS, VARINT),
    "double": I64,
    "fixed64": I64,
    "float": I32,
    "fixed32": I32,
    "string": LEN,
    "bytes": LEN,
    "message": LEN,
}


@dataclass(frozen=True)
class Field:
    """One field of a message.

    Attributes:
        number: The field number on the wire.
        name: The key used in message dicts.
        kind: A protobuf scalar type name, or ``"message"``.
        repeated: Whether the field holds a sequence.
        message: For ``kind == "message"``, the name of the sub-message type.
        oneof: Name of the ``oneof`` group; such fields are written whenever present.
        map_key: For map fields, the key's kind (the entry message is built automatically).
    """

    number: int
    name: str
    kind: str
    repeated: bool = False
    message: str | None = None
    oneof: str | None = None
    map_key: str | None = None


REGISTRY: dict[str, MessageType] = {}
"""Every declared message type, by name; sub-message fields refer to their type by that name."""
MAX_DEPTH = 100
"""Deepest nesting of messages decoding accepts (protobuf's own default recursion limit)."""


class MessageType:
    """A message definition that can encode dicts to bytes and decode bytes to dicts."""

    def __init__(self, name: str, fields: Sequence[Field]) -> None:
        """Define and register a message type.

        Args:
            name: The registry name, e.g. ``"Summary.Value"``.
            fields: The fields, in any order.
        """
        self.name = name
        self.fields = tuple(sorted(fields, key=lambda f: f.number))
        self.by_number = {f.number: f for f in self.fields}
        self.by_name = {f.name: f for f in self.fields}
        self._keys = {f.number: key(f.number, _field_wire_type(f)) for f in self.fields}
        self._packed_keys = {f.number: key(f.number, LEN) for f in self.fields}
        REGISTRY[name] = self
        for field in self.fields:
            if field.map_key is not None:
                MessageType(
                    _entry_name(name, field),
                    [
                        Field(1, "key", field.map_key),
                        Field(2, "value", field.kind, message=field.message),
                    ],
                )

    def __repr__(self) -> str:
        """Show the message name."""
        return f"MessageType({self.name!r})"

    def number(self, name: str) -> int:
        """Return the field number of the field called ``name``.

        Raises:
            KeyError: If the message has no such field.
        """
        return self.by_name[name].number

    def key(self, name: str) -> bytes:
        """Return the key bytes that start the field ``name`` on the wire (unpacked form).

        Raises:
            KeyError: If the message has no such field.
        """
        return self._keys[self.by_name[name].number]

    def encode(self, values: Mapping[str, Any]) -> bytes:
        """Encode a message dict.

        Args:
            values: Field name to value; unknown names raise.

        Returns:
            The encoded message.

        Raises:
            TypeError: If a key is not a field of this message or a value has the wrong type.
            ValueError: If an integer does not fit its field's type (``Value out of range``,
                as protobuf says), instead of wrapping around.
        """
        for name in values:
            if name not in self.by_name:
                raise TypeError(
                    f"{self.name} has no field {name!r}; known fields: {sorted(self.by_name)}"
                )
        parts: list[bytes] = []
        for field in self.fields:
            value = values.get(field.name)
            if value is None:
                continue
            if field.map_key is not None:
                entry = REGISTRY[_entry_name(self.name, field)]
                for map_key, map_value in value.items():
                    payload = entry.encode({"key": map_key, "value": map_value})
                    parts.append(self._keys[field.number])
                    parts.append(encode_varint(len(payload)))
                    parts.append(payload)
            elif field.repeated:
                self._encode_repeated(field, value, parts)
            elif field.oneof is not None or not _is_default(field.kind, value):
                parts.append(self._keys[field.number])
                parts.append(_encode_single(field, value))
        return b"".join(parts)

    def _encode_repeated(self, field: Field, value: Any, parts: list[bytes]) -> None:
        if len(value) == 0:
            return
        kind = field.kind
        if kind in FIXED_DTYPES:
            payload = np.asarray(value, dtype=FIXED_DTYPES[kind]).tobytes()
        elif kind in VARINT_KINDS:
            unsigned = kind in ("uint32", "uint64")
            if isinstance(value, np.ndarray):
                array = value
            else:
                dtype = np.bool_ if kind == "bool" else np.uint64 if unsigned else np.int64
                try:
                    array = np.array(value, dtype=dtype)
                except OverflowError as err:
                    raise _out_of_range(field, value) from err
            if kind != "bool" and array.size and array.dtype.kind in "iu":
                low, high = _INT_RANGES[kind]
                if int(array.min()) < low or int(array.max()) > high:
                    raise _out_of_range(field, value)
            if kind.startswith("sint"):
                wide = array.astype(np.int64)
                array = ((wide << 1) ^ (wide >> 63)).view(np.uint64)
            elif unsigned:
                array = array.astype(np.uint64)
            elif kind != "bool":
                array = array.astype(np.int64)
            payload = pack_varints(array)
        else:
            for item in value:
                parts.append(self._keys[field.number])
                parts.append(_encode_single(field, item))
            return
        parts.append(self._packed_keys[field.number])
        parts.append(encode_varint(len(payload)))
        parts.append(payload)

    def decode(self, data: bytes | memoryview) -> dict[str, Any]:
        """Decode bytes into a message dict holding the fields present on the wire.

        Args:
            data: The encoded message.

        Returns:
            Field name to value; repeated fields are lists and map fields are dicts.

        Raises:
            WireError: If the bytes are malformed, or nest messages deeper than
                :data:`MAX_DEPTH`.
        """
        return self._decode(data, 0)

    def _decode(self, data: bytes | memoryview, depth: int) -> dict[str, Any]:
        if depth > MAX_DEPTH:
            raise WireError(f"{self.name} is nested more than {MAX_DEPTH} messages deep")
        out: dict[str, Any] = {}
        for number, wire_type, raw in iter_fields(data):
            field = self.by_number.get(number)
            if field is None:
                continue
            if field.map_key is not None:
                if wire_type != LEN:
                    raise WireError(f"map field {field.name} has wire type {wire_type}, not {LEN}")
                entry = REGISTRY[_entry_name(self.name, field)]._decode(raw, depth + 1)
                default_key: Any = "" if field.map_key == "string" else 0
                out.setdefault(field.name, {})[entry.get("key", default_key)] = entry.get("value")
            elif field.repeated:
                items = out.setdefault(field.name, [])
                if wire_type == LEN and field.kind in FIXED_DTYPES:
                    items.extend(_unpack_fixed(field, raw))
                elif wire_type == LEN and field.kind in VARINT_KINDS:
                    items.extend(_convert_varints(field.kind, unpack_varints_array(raw)))
                else:
                    items.append(_decode_single(field, wire_type, raw, depth))
            else:
                out[field.name] = _decode_single(field, wire_type, raw, depth)
        return out


def _entry_name(message: str, field: Field) -> str:
    return f"{message}.{field.name}Entry"


def _field_wire_type(field: Field) -> int:
    if field.map_key is not None:
        return LEN
    return _WIRE_TYPE[field.kind]


def _is_default(kind: str, value: Any) -> bool:
    if kind in ("string", "bytes"):
        return len(value) == 0
    if kind == "message":
        return False
    if kind in ("double", "float"):
        return bool(value == 0 and math.copysign(1.0, value) > 0)
    return bool(value == 0)


def _out_of_range(field: Field, value: Any) -> ValueError:
    """Protobuf's error for an integer its field cannot hold, with the field's range."""
    low, high = _INT_RANGES[field.kind]
    return ValueError(
        f"Value out of range: {value!r}; field {field.name} is {field.kind} and holds integers "
        f"in [{low}, {high}]"
    )


def _encode_single(field: Field, value: Any) -> bytes:
    kind = field.kind
    if kind in VARINT_KINDS:
        number = int(value)
        if kind != "bool":
            low, high = _INT_RANGES[kind]
            if not low <= number <= high:
                raise _out_of_range(field, value)
        if kind.startswith("sint"):
            number = zigzag(number)
        return encode_varint(number)
    if kind == "double":
        return DOUBLE.pack(float(value))
    if kind == "float":
        return pack_float32(float(value))
    if kind == "fixed64":
        return UINT64.pack(int(value))
    if kind == "fixed32":
        return UINT32.pack(int(value))
    if kind == "string":
        if not isinstance(value, str):
            raise TypeError(f"field {field.name} must be str, got {value!r}")
        payload = value.encode("utf-8")
    elif kind == "bytes":
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise TypeError(f"field {field.name} must be bytes, got {value!r}")
        payload = bytes(value)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        payload = bytes(value)
    else:
        payload = REGISTRY[str(field.message)].encode(value)
    return encode_varint(len(payload)) + payload


def _convert_varint(kind: str, value: int) -> Any:
    if kind == "bool":
        return value != 0
    if kind in ("int64", "enum"):
        return to_signed64(value)
    if kind == "int32":
        return to_signed32(value)
    if kind.startswith("sint"):
        return unzigzag(value)
    return value


def _convert_varints(kind: str, values: np.ndarray[Any, np.dtype[np.uint64]]) -> list[Any]:
    """:func:`_convert_varint` over a whole packed field at once."""
    if kind == "bool":
        converted: list[Any] = (values != 0).tolist()
    elif kind in ("int64", "enum"):
        converted = values.view(np.int64).tolist()
    elif kind == "int32":
        converted = (values & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32).tolist()
    elif kind.startswith("sint"):
        half = (values >> np.uint64(1)).view(np.int64)
        converted = (half ^ -(values & np.uint64(1)).view(np.int64)).tolist()
    else:
        converted = values.tolist()
    return converted


def _unpack_fixed(field: Field, raw: memoryview) -> list[Any]:
    dtype = np.dtype(FIXED_DTYPES[field.kind])
    if len(raw) % dtype.itemsize:
        raise WireError(
            f"packed field {field.name} has {len(raw)} bytes, not a multiple of {dtype.itemsize}"
        )
    values: list[Any] = np.frombuffer(raw, dtype=dtype).tolist()
    return values


def _decode_single(field: Field, wire_type: int, raw: Any, depth: int) -> Any:
    kind = field.kind
    expected = _WIRE_TYPE[kind]
    if wire_type != expected:
        raise WireError(
            f"field {field.name} has wire type {wire_type}, expected {expected} for {kind}"
        )
    if kind in VARINT_KINDS:
        return _convert_varint(kind, raw)
    if kind in FIXED_DTYPES:
        return np.frombuffer(raw, dtype=FIXED_DTYPES[kind])[0].item()
    if kind == "string":
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError as err:
            raise WireError(f"field {field.name} is not valid UTF-8") from err
    if kind == "bytes":
        return bytes(raw)
    return REGISTRY[str(field.message)]._decode(raw, depth + 1)


def f(number: int, name: str, kind: str, **options: Any) -> Field:
    """Shorthand for a scalar :class:`Field`."""
    return Field(number, name, kind, **options)


def m(number: int, name: str, message: str, **options: Any) -> Field:
    """Shorthand for a sub-message :class:`Field` of type ``message``."""
    return Field(number, name, "message", message=message, **options)
