"""Custom-scalars layout summaries: torch's nested-dict layout as the plugin's ``Layout``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stoker.tensorboard._proto import (
    DT_STRING,
    LAYOUT,
    PLUGIN_CUSTOM_SCALARS,
    SUMMARY_METADATA,
    summary_of,
    summary_value,
)
from stoker.tensorboard._summary.inputs import check_tag

__all__ = ["custom_scalars"]

CUSTOM_SCALARS_TAG = "custom_scalars__config__"
_CUSTOM_SCALARS_METADATA = SUMMARY_METADATA.encode(
    {"plugin_data": {"plugin_name": PLUGIN_CUSTOM_SCALARS}}
)


def custom_scalars(layout: Mapping[str, Mapping[str, Sequence[Any]]]) -> bytes:
    """Build the custom-scalars ``Layout`` summary from torch's nested-dict layout."""
    if not isinstance(layout, Mapping):
        raise TypeError(f"layout must be a dict, got {layout!r}")
    categories = []
    for title, charts in layout.items():
        check_tag(title, "layout category")
        if not isinstance(charts, Mapping):
            raise TypeError(f"layout[{title!r}] must be a dict of charts, got {charts!r}")
        entries = []
        for chart_title, spec in charts.items():
            if not isinstance(spec, (list, tuple)) or len(spec) != 2:
                raise ValueError(
                    f"layout[{title!r}][{chart_title!r}] must be ['Multiline' or 'Margin', tags], "
                    f"got {spec!r}"
                )
            kind, tags = spec
            tags = list(tags)
            for item in tags:
                check_tag(item, "layout tag")
            if kind == "Margin":
                if len(tags) != 3:
                    raise ValueError(
                        f"a Margin chart needs exactly 3 tags (value, lower, upper), got {tags!r}"
                    )
                chart = {
                    "title": chart_title,
                    "margin": {
                        "series": [dict(zip(("value", "lower", "upper"), tags, strict=True))]
                    },
                }
            else:
                chart = {"title": chart_title, "multiline": {"tag": tags}}
            entries.append(chart)
        categories.append({"title": title, "chart": entries})
    tensor = {
        "dtype": DT_STRING,
        "string_val": [LAYOUT.encode({"category": categories})],
        "tensor_shape": {},
    }
    return summary_of(
        summary_value(CUSTOM_SCALARS_TAG, {"metadata": _CUSTOM_SCALARS_METADATA, "tensor": tensor})
    )
