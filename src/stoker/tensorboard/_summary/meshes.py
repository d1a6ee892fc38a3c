"""Mesh summaries: vertices, faces and colours for the mesh plugin, one value per component."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from stoker.tensorboard._proto import (
    DT_FLOAT,
    MESH_COLOR,
    MESH_FACE,
    MESH_PLUGIN_DATA,
    MESH_VERTEX,
    PLUGIN_MESH,
    summary_of,
    summary_value,
)
from stoker.tensorboard._summary.inputs import as_numpy, check_tag

__all__ = ["mesh"]

_MESH_NAMES = {MESH_VERTEX: "VERTEX", MESH_FACE: "FACE", MESH_COLOR: "COLOR"}


def mesh(
    tag: str,
    vertices: Any,
    colors: Any = None,
    faces: Any = None,
    config_dict: Mapping[str, Any] | None = None,
) -> bytes:
    """Build the mesh-plugin ``Summary``: one value per component, all sharing a bitmask."""
    check_tag(tag)
    json_config = "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)
    parts = [(vertices, MESH_VERTEX, "vertices"), (faces, MESH_FACE, "faces"),
             (colors, MESH_COLOR, "colors")]  # fmt: skip
    present = [(as_numpy(v, name), kind, name) for v, kind, name in parts if v is not None]
    if not present or present[0][2] != "vertices":
        raise ValueError("vertices must be given, as an array of shape (B, N, 3)")
    components = 0
    for _, kind, _ in present:
        components |= 1 << kind
    values = []
    for array, kind, name in present:
        if array.ndim != 3 or array.shape[2] != 3 or array.size == 0:
            raise ValueError(f"{name} must have shape (B, N, 3), got {array.shape}")
        if array.dtype.kind not in "biuf":
            raise TypeError(f"{name} must be numeric, got dtype {array.dtype}")
        content = MESH_PLUGIN_DATA.encode(
            {
                "version": 0,
                "name": tag,
                "content_type": kind,
                "components": components,
                "shape": list(array.shape),
                "json_config": json_config,
            }
        )
        tensor = {
            "dtype": DT_FLOAT,
            "float_val": np.asarray(array, dtype=np.float32).reshape(-1),
            "tensor_shape": {"dim": [{"size": int(size)} for size in array.shape]},
        }
        metadata = {"plugin_data": {"plugin_name": PLUGIN_MESH, "content": content}}
        values.append(
            summary_value(f"{tag}_{_MESH_NAMES[kind]}", {"metadata": metadata, "tensor": tensor})
        )
    return summary_of(*values)
