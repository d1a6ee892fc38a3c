"""Scalar summaries: the ``add_scalar`` fast path, and scalar tensors for ``new_style``.

:class:`ScalarEventEncoder` is why ``add_scalar`` is many times faster than torch's: it caches
each tag's constant bytes (``_proto``'s :func:`scalar_prefix`) and splices in the value, step
and wall time; no message dict is built per call.
"""

from __future__ import annotations

from stoker.tensorboard._proto import (
    DOUBLE,
    DT_DOUBLE,
    DT_FLOAT,
    FLOAT,
    PLUGIN_SCALARS,
    STEP_KEY,
    SUMMARY_METADATA,
    WALL_TIME_KEY,
    encode_varint,
    pack_float32,
    scalar_prefix,
    summary_of,
    summary_value,
)
from stoker.tensorboard._summary.inputs import check_tag

__all__ = ["ScalarEventEncoder", "scalar"]

_SCALARS_METADATA = SUMMARY_METADATA.encode({"plugin_data": {"plugin_name": PLUGIN_SCALARS}})
_PACK_DOUBLE = DOUBLE.pack
_PACK_FLOAT = FLOAT.pack
_MAX_CACHED_TAGS = 100_000


class ScalarEventEncoder:
    """Encodes old-style scalar events, with each tag's constant bytes cached."""

    def __init__(self) -> None:
        """Start with an empty tag cache."""
        self._prefixes: dict[str, bytes] = {}

    def prefix(self, tag: str) -> bytes:
        """Return the bytes between the step and the float value for ``tag`` (checked, cached).

        Raises:
            TypeError: If ``tag`` is not a str.
            ValueError: If it is empty.
        """
        cached = self._prefixes.get(tag)
        if cached is None:
            cached = scalar_prefix(check_tag(tag))
            if len(self._prefixes) < _MAX_CACHED_TAGS:
                self._prefixes[tag] = cached
        return cached

    def encode(self, tag: str, value: float, step: int | None, wall_time: float) -> bytes:
        """Encode an ``Event`` with a ``simple_value`` scalar; a step of 0 is left out."""
        prefix = self._prefixes.get(tag) or self.prefix(tag)
        try:
            packed = _PACK_FLOAT(value)
        except OverflowError:
            packed = pack_float32(value)
        if not step:
            return WALL_TIME_KEY + _PACK_DOUBLE(wall_time) + prefix + packed
        return (
            WALL_TIME_KEY
            + _PACK_DOUBLE(wall_time)
            + STEP_KEY
            + encode_varint(step)
            + prefix
            + packed
        )


def scalar(
    tag: str, value: float, new_style: bool = False, double_precision: bool = False
) -> bytes:
    """Build a scalar ``Summary`` (``simple_value``, or a scalar tensor when ``new_style``)."""
    check_tag(tag)
    if not new_style:
        return summary_of(summary_value(tag, {"simple_value": value}))
    tensor = (
        {"dtype": DT_DOUBLE, "double_val": [value]}
        if double_precision
        else {"dtype": DT_FLOAT, "float_val": [value]}
    )
    return summary_of(summary_value(tag, {"metadata": _SCALARS_METADATA, "tensor": tensor}))
