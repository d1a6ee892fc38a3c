"""Text summaries: a string tensor for TensorBoard's text plugin, tagged as torch tags it."""

from __future__ import annotations

from stoker.tensorboard._proto import (
    DT_STRING,
    PLUGIN_TEXT,
    SUMMARY_METADATA,
    TEXT_PLUGIN_DATA,
    TEXT_TAG_SUFFIX,
    summary_of,
    summary_value,
)
from stoker.tensorboard._summary.inputs import check_tag

__all__ = ["text"]

_TEXT_METADATA = SUMMARY_METADATA.encode(
    {
        "plugin_data": {
            "plugin_name": PLUGIN_TEXT,
            "content": TEXT_PLUGIN_DATA.encode({"version": 0}),
        }
    }
)


def text(tag: str, text_string: str) -> bytes:
    """Build a text-plugin ``Summary``; the tag gets the ``/text_summary`` suffix torch uses."""
    check_tag(tag)
    if not isinstance(text_string, str):
        raise TypeError(f"text_string must be a str, got {text_string!r}")
    tensor = {
        "dtype": DT_STRING,
        "string_val": [text_string.encode("utf-8")],
        "tensor_shape": {"dim": [{"size": 1}]},
    }
    return summary_of(
        summary_value(tag + TEXT_TAG_SUFFIX, {"metadata": _TEXT_METADATA, "tensor": tensor})
    )
