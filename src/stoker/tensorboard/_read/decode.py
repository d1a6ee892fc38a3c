"""Decoding for the reader: Event and Summary walking, a scalar fast path, TensorProto to NumPy.

Events are walked field by field (``_proto``'s ``iter_fields``) and only the parts a reader
needs are decoded: payloads that are expensive to decode (tensors, images, audio) are kept as
bytes until asked for. Field numbers are never written here: each is looked up once, by name,
in the declarations of ``_proto`` (``EVENT.number("step")``), and the parsed values name their
fields (``ParsedEvent.what == "summary"``). Malformed bytes raise ``WireError`` and nothing else.

Sizes come from untrusted bytes, so each is checked, with Python ints, before anything is
allocated: a shape's element count against 2**31 and against the bytes present. Values given
once for many elements are broadcast as TensorFlow does (the last value repeats), but only up
to :data:`MAX_BROADCAST_ELEMENTS` elements, or as many as the tensor has bytes when that is
more: a tiny record claiming ``[2**31]`` float elements from one value would otherwise take
8 GiB. A larger claim is malformed (``WireError``).

The fast path, :class:`ScalarFastPath`, recognises the layout every ``add_scalar`` writer
produces (see ``_proto.events``): the bytes between the step and the float depend only on the
tag, so they are looked up in a dict, and a hit yields ``(tag, step, wall_time, value)`` with no
message object built.
"""

from __future__ import annotations

import math
import struct
from typing import Any, NamedTuple

import numpy as np

from stoker.tensorboard._proto import (
    DATA_TYPE_BY_CODE,
    DT_BFLOAT16,
    DT_BOOL,
    DT_COMPLEX64,
    DT_COMPLEX128,
    DT_HALF,
    DT_INT64,
    DT_STRING,
    DT_UINT32,
    DT_UINT64,
    EVENT,
    FIXED_DTYPES,
    I32,
    I64,
    LEN,
    PLUGIN_DATA,
    STEP_KEY,
    SUMMARY,
    SUMMARY_METADATA,
    SUMMARY_VALUE,
    TENSOR,
    TENSOR_SHAPE,
    TENSOR_SHAPE_DIM,
    VARINT,
    VARINT_KINDS,
    WALL_TIME_KEY,
    RecordBlock,
    WireError,
    iter_fields,
    scalar_prefix_tag,
    to_signed64,
    unpack_varints_array,
)

__all__ = [
    "MAX_BROADCAST_ELEMENTS",
    "ParsedEvent",
    "ScalarFastPath",
    "ScalarHits",
    "SummaryValue",
    "decode_tensor",
    "parse_event",
    "parse_summary",
]

_DOUBLE_AT = struct.Struct("<d").unpack_from
_FLOAT_AT = struct.Struct("<f").unpack_from
_MAX_CACHED_PREFIXES = 65536
_MAX_CACHED_PREFIX_BYTES = 512
"""The longest run of bytes between step and value the scalar fast path remembers.

Every event reaches the fast path, and for one that is not a plain scalar (an image, a
histogram) those bytes are most of the record: remembered, they kept every image of a log dir
in memory (241 MB of a 241 MB image log dir). A scalar's are its tag and a few bytes of
framing; a longer tag is decoded each time, not remembered.
"""
_MAX_ELEMENTS = 1 << 31
MAX_BROADCAST_ELEMENTS = 1 << 10
"""Most elements a tensor may broadcast from fewer values, unless it has more bytes than that.

An explicit encoding needs at least a byte per element (packed bools), so a tensor of ``n``
bytes may claim ``max(1024, n)`` elements: decoding never takes more than a small multiple of
the bytes read.
"""

# Event
_WALL_TIME = EVENT.number("wall_time")
_STEP = EVENT.number("step")
_WHAT = {f.number: f.name for f in EVENT.fields if f.oneof == "what"}
# Summary, Summary.Value, SummaryMetadata
_VALUE = SUMMARY.number("value")
_TAG = SUMMARY_VALUE.number("tag")
_NODE_NAME = SUMMARY_VALUE.number("node_name")
_METADATA = SUMMARY_VALUE.number("metadata")
_SIMPLE_VALUE = SUMMARY_VALUE.number("simple_value")
_ENCODED_VALUES = {
    f.number: f.name for f in SUMMARY_VALUE.fields if f.oneof == "value" and f.kind == "message"
}
_PLUGIN_DATA = SUMMARY_METADATA.number("plugin_data")
_PLUGIN_NAME = PLUGIN_DATA.number("plugin_name")
_PLUGIN_CONTENT = PLUGIN_DATA.number("content")
# TensorProto
_DTYPE = TENSOR.number("dtype")
_TENSOR_SHAPE = TENSOR.number("tensor_shape")
_TENSOR_CONTENT = TENSOR.number("tensor_content")
_STRING_VAL = TENSOR.number("string_val")
_DIM = TENSOR_SHAPE.number("dim")
_DIM_SIZE = TENSOR_SHAPE_DIM.number("size")
_FIXED_VALUE_FIELDS = {
    f.number: FIXED_DTYPES[f.kind] for f in TENSOR.fields if f.repeated and f.kind in FIXED_DTYPES
}
_VARINT_VALUE_FIELDS = frozenset(
    f.number for f in TENSOR.fields if f.repeated and f.kind in VARINT_KINDS
)
# A scalar event starts with the wall time's key and double, then maybe the step's key (both
# keys are one byte: fields 1 and 2).
_WALL_TIME_BYTE = WALL_TIME_KEY[0]
_WALL_TIME_AT = len(WALL_TIME_KEY)
_STEP_BYTE = STEP_KEY[0]
_STEP_AT = _WALL_TIME_AT + 8


class ParsedEvent(NamedTuple):
    """The top level of one ``Event``: times and which ``what`` field it carries.

    Attributes:
        wall_time: Seconds since the epoch.
        step: The global step.
        what: Name of the ``what`` oneof field present (``"file_version"``, ``"summary"``,
            ``"session_log"``, ...), or ``""`` when none.
        payload: That field's value (bytes for messages and strings).
    """

    wall_time: float
    step: int
    what: str
    payload: bytes


class SummaryValue(NamedTuple):
    """One ``Summary.Value`` with its payload left encoded.

    Attributes:
        tag: The tag (``node_name`` when the tag is empty, as TensorBoard does for tensors).
        plugin_name: ``metadata.plugin_data.plugin_name`` or ``""`` when absent.
        plugin_content: ``metadata.plugin_data.content`` or ``b""``.
        has_metadata: Whether the value carried metadata.
        metadata: The encoded ``SummaryMetadata`` (``b""`` when absent).
        kind: Name of the ``value`` oneof field present (``"simple_value"``, ``"image"``,
            ``"histo"``, ``"audio"``, ``"tensor"``), or ``""`` when none.
        payload: The float for ``simple_value``, else the encoded sub-message.
    """

    tag: str
    plugin_name: str
    plugin_content: bytes
    has_metadata: bool
    kind: str
    payload: Any
    metadata: bytes = b""


def parse_event(data: bytes) -> ParsedEvent:
    """Decode the top level of an encoded ``Event``.

    Raises:
        WireError: If the bytes are malformed.
    """
    wall_time = 0.0
    step = 0
    what = ""
    payload = b""
    for number, wire_type, raw in iter_fields(data):
        if number == _WALL_TIME and wire_type == I64:
            wall_time = _DOUBLE_AT(raw)[0]
        elif number == _STEP and wire_type == VARINT:
            step = to_signed64(raw)
        elif number in _WHAT and wire_type == LEN:
            what = _WHAT[number]
            payload = bytes(raw)
        elif number in EVENT.by_number:
            raise WireError(f"Event field {number} has unexpected wire type {wire_type}")
    return ParsedEvent(wall_time, step, what, payload)


def _string(raw: Any, name: str) -> str:
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError as err:
        raise WireError(f"{name} is not valid UTF-8") from err


def _plugin_data(metadata: Any) -> tuple[str, bytes]:
    name = ""
    content = b""
    for number, wire_type, raw in iter_fields(metadata):
        if number == _PLUGIN_DATA and wire_type == LEN:
            for sub, sub_type, value in iter_fields(raw):
                if sub == _PLUGIN_NAME and sub_type == LEN:
                    name = _string(value, "plugin_name")
                elif sub == _PLUGIN_CONTENT and sub_type == LEN:
                    content = bytes(value)
    return name, content


def parse_summary(data: bytes) -> list[SummaryValue]:
    """Split an encoded ``Summary`` into its values, decoding only tags and plugin metadata.

    Raises:
        WireError: If the bytes are malformed.
    """
    values: list[SummaryValue] = []
    for number, wire_type, raw_value in iter_fields(data):
        if number != _VALUE or wire_type != LEN:
            continue
        tag = ""
        node_name = ""
        plugin = ("", b"")
        has_metadata = False
        metadata = b""
        kind = ""
        payload: Any = None
        for field, field_type, raw in iter_fields(raw_value):
            if field == _TAG and field_type == LEN:
                tag = _string(raw, "tag")
            elif field == _NODE_NAME and field_type == LEN:
                node_name = _string(raw, "node_name")
            elif field == _METADATA and field_type == LEN:
                plugin = _plugin_data(raw)
                has_metadata = True
                metadata = bytes(raw)
            elif field == _SIMPLE_VALUE and field_type == I32:
                kind, payload = "simple_value", _FLOAT_AT(raw)[0]
            elif field in _ENCODED_VALUES and field_type == LEN:
                kind, payload = _ENCODED_VALUES[field], bytes(raw)
        values.append(
            SummaryValue(
                tag or node_name, plugin[0], plugin[1], has_metadata, kind, payload, metadata
            )
        )
    return values


class ScalarHits(NamedTuple):
    """The plain scalar events of a :class:`RecordBlock`, decoded as columns.

    Every array has one entry per record of the block; only entries where ``hit`` is set hold
    values (the other records are other events, decoded one by one).

    Attributes:
        hit: Whether the record is a plain scalar event.
        tag: The index of its tag in ``tags``.
        tags: The tags met in the block.
        step: The steps.
        wall_time: The wall times.
        value: The values (float32 on disk).
    """

    hit: np.ndarray[tuple[int], np.dtype[np.bool_]]
    tag: np.ndarray[tuple[int], np.dtype[np.intp]]
    tags: list[str]
    step: np.ndarray[tuple[int], np.dtype[np.int64]]
    wall_time: np.ndarray[tuple[int], np.dtype[np.float64]]
    value: np.ndarray[tuple[int], np.dtype[np.float64]]


_BLOCK_ROWS = 16384  # records decoded at once: the gathered bytes stay a few MiB
_VARINT_BYTES = 10


class ScalarFastPath:
    """Recognises single ``simple_value`` scalar events without building message objects."""

    def __init__(self) -> None:
        """Start with an empty cache of tag prefixes."""
        self._prefixes: dict[bytes, str | None] = {}

    def match(self, data: bytes) -> tuple[str, int, float, float] | None:
        """Return ``(tag, step, wall_time, value)`` for a plain scalar event, else ``None``."""
        size = len(data)
        if size < 20 or data[0] != _WALL_TIME_BYTE:
            return None
        pos = _STEP_AT
        step = 0
        if data[pos] == _STEP_BYTE:
            shift = 0
            pos += 1
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
        tag = self._tag(data[pos : size - 4])
        if tag is None:
            return None
        return tag, step, _DOUBLE_AT(data, _WALL_TIME_AT)[0], _FLOAT_AT(data, size - 4)[0]

    def _tag(self, prefix: bytes) -> str | None:
        prefixes = self._prefixes
        if prefix in prefixes:
            return prefixes[prefix]
        tag = scalar_prefix_tag(prefix) if prefix else None
        if len(prefixes) < _MAX_CACHED_PREFIXES and len(prefix) <= _MAX_CACHED_PREFIX_BYTES:
            prefixes[prefix] = tag
        return tag

    def match_block(self, block: RecordBlock) -> ScalarHits:
        """Decode every plain scalar event of ``block`` at once, as :meth:`match` would.

        Records of one length are taken together: their bytes become the rows of a matrix,
        the step's varint width is found per row, and rows with one layout share the bytes
        between step and value, which name the tag (looked up once per distinct run of bytes).
        """
        count = len(block)
        hits = ScalarHits(
            np.zeros(count, dtype=np.bool_),
            np.zeros(count, dtype=np.intp),
            [],
            np.zeros(count, dtype=np.int64),
            np.zeros(count, dtype=np.float64),
            np.zeros(count, dtype=np.float64),
        )
        index: dict[str, int] = {}
        for group in block.groups():
            if group.length < 20:
                continue
            if group.matrix is not None:
                self._match_rows(group.matrix, group.rows, hits, index)
                continue
            for row in group.rows.tolist():
                hit = self.match(block.data(row))
                if hit is not None:
                    hits.hit[row] = True
                    hits.tag[row] = index.setdefault(hit[0], len(index))
                    hits.step[row], hits.wall_time[row], hits.value[row] = hit[1:]
        hits.tags[:] = list(index)
        return hits

    def _match_rows(
        self,
        matrix: np.ndarray[tuple[int, int], np.dtype[np.uint8]],
        rows: np.ndarray[tuple[int], np.dtype[np.intp]],
        hits: ScalarHits,
        index: dict[str, int],
    ) -> None:
        """Fill ``hits`` at ``rows`` from records of one length (the rows of ``matrix``)."""
        length = matrix.shape[1]
        has_step = matrix[:, _STEP_AT] == _STEP_BYTE
        ends = matrix[:, _STEP_AT + 1 : min(length, _STEP_AT + 1 + _VARINT_BYTES)] < 0x80
        width = np.argmax(ends, axis=1) + 1
        prefix_at = np.where(has_step, _STEP_AT + 1 + width, _STEP_AT)
        usable = (
            (matrix[:, 0] == _WALL_TIME_BYTE)
            & (~has_step | ends.any(axis=1))
            & (prefix_at < length - 4)
        )
        for start in np.unique(prefix_at[usable]).tolist():
            selected = np.flatnonzero(usable & (prefix_at == start))
            part = matrix[selected]
            tag_ids = self._tag_ids(part[:, start : length - 4], index)
            keep = tag_ids >= 0
            if not keep.any():
                continue
            part = part[keep]
            where = rows[selected[keep]]
            step = np.zeros(len(part), dtype=np.uint64)
            for byte in range(start - _STEP_AT - 1):  # the varint's bytes, low group first
                group = part[:, _STEP_AT + 1 + byte].astype(np.uint64) & np.uint64(0x7F)
                step |= group << np.uint64(7 * byte)
            hits.hit[where] = True
            hits.tag[where] = tag_ids[keep]
            hits.step[where] = step.view(np.int64)
            hits.wall_time[where] = (
                np.ascontiguousarray(part[:, _WALL_TIME_AT:_STEP_AT]).view("<f8").reshape(-1)
            )
            hits.value[where] = np.ascontiguousarray(part[:, length - 4 :]).view("<f4").reshape(-1)

    def _tag_ids(
        self, prefixes: np.ndarray[tuple[int, int], np.dtype[np.uint8]], index: dict[str, int]
    ) -> np.ndarray[tuple[int], np.dtype[np.intp]]:
        """Each row's tag index in ``index`` (added to it), or -1 where it is no scalar's."""

        def tag_id(prefix: bytes) -> int:
            tag = self._tag(prefix)
            return -1 if tag is None else index.setdefault(tag, len(index))

        if (prefixes == prefixes[0]).all():  # one tag: the usual case for one length
            return np.full(len(prefixes), tag_id(prefixes[0].tobytes()), dtype=np.intp)
        keys = np.ascontiguousarray(prefixes).view(np.dtype((np.void, prefixes.shape[1])))
        distinct, which = np.unique(keys.reshape(-1), return_inverse=True)
        ids = np.array([tag_id(key.tobytes()) for key in distinct], dtype=np.intp)
        return ids[which.reshape(-1)]


def _fill(values: np.ndarray[Any, Any], count: int, name: str, limit: int) -> np.ndarray[Any, Any]:
    """Broadcast repeated values to ``count`` elements the way TensorFlow does (repeat the last).

    ``limit`` is the most elements a broadcast may make (see :data:`MAX_BROADCAST_ELEMENTS`).
    """
    if values.size == count:
        return values
    if values.size > count:
        raise WireError(f"tensor holds {values.size} {name} values for {count} elements")
    if count > limit:
        raise WireError(
            f"tensor claims {count} elements from {values.size} {name} values; broadcasting "
            f"makes at most {limit} elements for a tensor of this size"
        )
    if values.size == 0 and values.dtype == object:  # strings: empty ones, as TensorFlow gives
        empty = np.empty(count, dtype=object)
        empty[:] = b""
        return empty
    if values.size == 0:
        return np.zeros(count, dtype=values.dtype)
    return np.concatenate([values, np.full(count - values.size, values[-1], dtype=values.dtype)])


def _shape(raw: Any) -> list[int]:
    """The dimension sizes of an encoded ``TensorShapeProto``."""
    shape = []
    for dim_field, dim_type, dim in iter_fields(raw):
        if dim_field == _DIM and dim_type == LEN:
            size = 0
            for sub, sub_type, value in iter_fields(dim):
                if sub == _DIM_SIZE and sub_type == VARINT:
                    size = to_signed64(value)
            shape.append(size)
    return shape


def decode_tensor(data: bytes) -> tuple[str, np.ndarray[Any, Any]]:
    """Decode an encoded ``TensorProto`` into its dtype name and a NumPy array.

    ``half`` becomes ``float16``; ``bfloat16`` (which NumPy lacks) becomes ``float32`` holding
    the same values exactly; strings become an object array of ``bytes``.

    Raises:
        WireError: If the bytes are malformed or inconsistent (a shape with a negative
            dimension or more than 2**31 elements, values that do not fill it, or fewer values
            than elements beyond what broadcasting may make).
    """
    dtype_code = 0
    shape: list[int] = []
    content: bytes | None = None
    fixed: dict[int, list[bytes]] = {}
    varints: dict[int, list[np.ndarray[Any, np.dtype[np.uint64]]]] = {}
    strings: list[bytes] = []
    for number, wire_type, raw in iter_fields(data):
        if number == _DTYPE and wire_type == VARINT:
            dtype_code = to_signed64(raw)
        elif number == _TENSOR_SHAPE and wire_type == LEN:
            shape.extend(_shape(raw))
        elif number == _TENSOR_CONTENT and wire_type == LEN:
            content = bytes(raw)
        elif number in _FIXED_VALUE_FIELDS and wire_type in (LEN, I32, I64):
            fixed.setdefault(number, []).append(bytes(raw))
        elif number in _VARINT_VALUE_FIELDS and wire_type == LEN:
            varints.setdefault(number, []).append(unpack_varints_array(raw))
        elif number in _VARINT_VALUE_FIELDS and wire_type == VARINT:
            varints.setdefault(number, []).append(np.array([raw], dtype=np.uint64))
        elif number == _STRING_VAL and wire_type == LEN:
            strings.append(bytes(raw))
    entry = DATA_TYPE_BY_CODE.get(dtype_code)
    if entry is None:
        raise WireError(f"unsupported tensor dtype code {dtype_code}")
    if any(size < 0 for size in shape):
        raise WireError(f"tensor shape {shape} has a negative dimension")
    count = math.prod(shape)
    if count > _MAX_ELEMENTS:
        raise WireError(f"tensor shape {shape} is too large")
    limit = max(MAX_BROADCAST_ELEMENTS, len(data))
    if dtype_code == DT_STRING:
        array: np.ndarray[Any, Any] = np.empty(len(strings), dtype=object)
        array[:] = strings
        flat = _fill(array, count, "string", limit)
    elif content is not None:
        item = np.dtype(entry.content).itemsize
        if len(content) != count * item:
            raise WireError(
                f"tensor_content has {len(content)} bytes for shape {shape} of {entry.name}"
            )
        flat = np.frombuffer(content, dtype=entry.content)
    else:
        flat = _repeated_values(dtype_code, fixed, varints, count, limit)
    if dtype_code == DT_BFLOAT16:
        flat = (flat.astype(np.uint32) << np.uint32(16)).view(np.float32)
    try:
        return entry.name, flat.reshape(shape)
    except ValueError as err:  # more dimensions than NumPy supports
        raise WireError(f"tensor shape {shape} cannot be represented: {err}") from err


def _repeated_values(
    dtype_code: int,
    fixed: dict[int, list[bytes]],
    varints: dict[int, list[np.ndarray[Any, np.dtype[np.uint64]]]],
    count: int,
    limit: int,
) -> np.ndarray[Any, Any]:
    """Collect the ``*_val`` field of the dtype and broadcast it to ``count`` elements."""
    entry = DATA_TYPE_BY_CODE[dtype_code]
    number = TENSOR.number(entry.field)
    if number in _FIXED_VALUE_FIELDS:
        raw = b"".join(fixed.get(number, []))
        width = np.dtype(_FIXED_VALUE_FIELDS[number]).itemsize
        if len(raw) % width:
            raise WireError("packed fixed-width tensor values have a partial element")
        values = np.frombuffer(raw, dtype=_FIXED_VALUE_FIELDS[number])
        if dtype_code in (DT_COMPLEX64, DT_COMPLEX128):
            if values.size % 2:
                raise WireError("complex tensor values need an even number of floats")
            values = values.view(entry.content)
        return _fill(values, count, "float", limit)
    parts = varints.get(number, [])
    unsigned = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
    if dtype_code == DT_BOOL:
        values = unsigned != 0
    elif dtype_code in (DT_HALF, DT_BFLOAT16):
        values = (unsigned & np.uint64(0xFFFF)).astype(np.uint16)
        if dtype_code == DT_HALF:
            values = values.view(np.float16)
    elif dtype_code == DT_UINT64:
        values = unsigned
    else:
        # int32-like fields store sign-extended 64-bit varints; truncate like protobuf does.
        wide = unsigned.view(np.int64)
        if dtype_code != DT_INT64:
            wide = (wide & np.int64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
            if dtype_code == DT_UINT32:
                wide = wide.view(np.uint32)
        values = wide.astype(entry.content)
    return _fill(values, count, "integer", limit)
