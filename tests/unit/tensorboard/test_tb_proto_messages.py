"""The message declarations, byte for byte against TensorBoard's protobuf classes."""

from __future__ import annotations

from typing import Any

import pytest

from stoker.tensorboard._proto import REGISTRY

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _proto_classes() -> dict[str, Any]:
    from google.protobuf import struct_pb2
    from tensorboard.compat.proto import (
        attr_value_pb2,
        config_pb2,
        event_pb2,
        graph_pb2,
        histogram_pb2,
        node_def_pb2,
        step_stats_pb2,
        summary_pb2,
        tensor_pb2,
        tensor_shape_pb2,
        versions_pb2,
    )
    from tensorboard.plugins.custom_scalar import layout_pb2
    from tensorboard.plugins.hparams import api_pb2
    from tensorboard.plugins.hparams import plugin_data_pb2 as hparams_pb2
    from tensorboard.plugins.mesh import plugin_data_pb2 as mesh_pb2
    from tensorboard.plugins.pr_curve import plugin_data_pb2 as pr_pb2
    from tensorboard.plugins.text import plugin_data_pb2 as text_pb2

    return {
        "Event": event_pb2.Event,
        "SessionLog": event_pb2.SessionLog,
        "LogMessage": event_pb2.LogMessage,
        "TaggedRunMetadata": event_pb2.TaggedRunMetadata,
        "Summary": summary_pb2.Summary,
        "Summary.Value": summary_pb2.Summary.Value,
        "Summary.Image": summary_pb2.Summary.Image,
        "Summary.Audio": summary_pb2.Summary.Audio,
        "SummaryMetadata": summary_pb2.SummaryMetadata,
        "HistogramProto": histogram_pb2.HistogramProto,
        "TensorProto": tensor_pb2.TensorProto,
        "TensorShapeProto": tensor_shape_pb2.TensorShapeProto,
        "GraphDef": graph_pb2.GraphDef,
        "NodeDef": node_def_pb2.NodeDef,
        "AttrValue": attr_value_pb2.AttrValue,
        "VersionDef": versions_pb2.VersionDef,
        "RunMetadata": config_pb2.RunMetadata,
        "StepStats": step_stats_pb2.StepStats,
        "TextPluginData": text_pb2.TextPluginData,
        "PrCurvePluginData": pr_pb2.PrCurvePluginData,
        "Layout": layout_pb2.Layout,
        "MeshPluginData": mesh_pb2.MeshPluginData,
        "HParamsPluginData": hparams_pb2.HParamsPluginData,
        "Experiment": api_pb2.Experiment,
        "SessionStartInfo": hparams_pb2.SessionStartInfo,
        "SessionEndInfo": hparams_pb2.SessionEndInfo,
        "Value": struct_pb2.Value,
        "ListValue": struct_pb2.ListValue,
    }


_SHAPE = {"dim": [{"size": 2}, {"size": 3, "name": "cols"}]}


_CASES: list[tuple[str, dict[str, Any]]] = [
    ("Event", {"wall_time": 1.25, "file_version": "brain.Event:2"}),
    ("Event", {"wall_time": 3.5, "step": -7, "session_log": {"status": 1, "msg": "restart"}}),
    ("Event", {"step": 2**40, "summary": {"value": [{"tag": "x", "simple_value": 0.0}]}}),
    ("Event", {"wall_time": 1.0, "graph_def": b"\x0a\x00"}),
    ("Event", {"log_message": {"level": 30, "message": "careful"}}),
    ("Event", {"tagged_run_metadata": {"tag": "step1", "run_metadata": b"\x01\x02"}}),
    ("SessionLog", {"status": 3, "checkpoint_path": "/tmp/ckpt"}),
    (
        "Summary",
        {
            "value": [
                {"tag": "a", "simple_value": -1.5},
                {
                    "tag": "img",
                    "image": {
                        "height": 4,
                        "width": 5,
                        "colorspace": 3,
                        "encoded_image_string": b"\x89PNG",
                    },
                },
                {
                    "tag": "snd",
                    "audio": {
                        "sample_rate": 8000.0,
                        "num_channels": 1,
                        "length_frames": 12,
                        "encoded_audio_string": b"RIFF",
                        "content_type": "audio/wav",
                    },
                },
                {
                    "tag": "t",
                    "metadata": {
                        "plugin_data": {"plugin_name": "text", "content": b"\x08\x01"},
                        "display_name": "shown",
                        "summary_description": "about",
                        "data_class": 2,
                    },
                    "tensor": {"dtype": 7, "string_val": [b"hi", b""], "tensor_shape": _SHAPE},
                },
            ]
        },
    ),
    (
        "HistogramProto",
        {
            "min": -1.0,
            "max": 2.0,
            "num": 3.0,
            "sum": 1.0,
            "sum_squares": 6.0,
            "bucket_limit": [0.0, 1.0, 2.0],
            "bucket": [1.0, 0.0, 2.0],
        },
    ),
    ("TensorProto", {"dtype": 1, "tensor_shape": _SHAPE, "float_val": [1.0, -2.5, 3.25]}),
    ("TensorProto", {"dtype": 2, "double_val": [1e300, -0.0]}),
    ("TensorProto", {"dtype": 3, "int_val": [0, -1, 2**31 - 1, -(2**31)]}),
    ("TensorProto", {"dtype": 9, "int64_val": [2**63 - 1, -(2**63), 5]}),
    ("TensorProto", {"dtype": 22, "uint32_val": [2**32 - 1, 0, 300]}),
    ("TensorProto", {"dtype": 23, "uint64_val": [2**64 - 1, 1]}),
    ("TensorProto", {"dtype": 10, "bool_val": [True, False, True]}),
    ("TensorProto", {"dtype": 19, "half_val": [0x3C00, 0xFFFF]}),
    ("TensorProto", {"dtype": 8, "scomplex_val": [1.0, 2.0]}),
    ("TensorProto", {"dtype": 18, "dcomplex_val": [1.0, 2.0]}),
    ("TensorProto", {"dtype": 4, "tensor_content": b"\x00\x01\x02", "version_number": 1}),
    ("TensorShapeProto", {"unknown_rank": True}),
    (
        "GraphDef",
        {
            "node": [
                {
                    "name": "a/b",
                    "op": "aten::relu",
                    "input": ["in", "w"],
                    "device": "/cpu:0",
                    "attr": {"attr": {"s": b"{}"}},
                },
                {
                    "name": "c",
                    "op": "IO Node",
                    "attr": {"_output_shapes": {"list": {"shape": [_SHAPE], "i": [1, -2]}}},
                },
            ],
            "versions": {"producer": 22, "bad_consumers": [1, 2]},
        },
    ),
    ("AttrValue", {"f": 0.0}),
    ("AttrValue", {"i": -3}),
    ("AttrValue", {"b": False}),
    ("AttrValue", {"type": 1}),
    ("AttrValue", {"tensor": {"dtype": 1, "float_val": [1.0]}}),
    ("RunMetadata", {"step_stats": {"dev_stats": [{"device": "/device:CPU:0"}]}}),
    ("TextPluginData", {"version": 0}),
    ("PrCurvePluginData", {"version": 0, "num_thresholds": 127}),
    (
        "Layout",
        {
            "category": [
                {
                    "title": "cat",
                    "closed": True,
                    "chart": [
                        {"title": "m", "multiline": {"tag": ["a", "b.*"]}},
                        {
                            "title": "g",
                            "margin": {"series": [{"value": "v", "lower": "l", "upper": "u"}]},
                        },
                    ],
                }
            ]
        },
    ),
    (
        "MeshPluginData",
        {
            "version": 0,
            "name": "mesh",
            "content_type": 2,
            "json_config": "{}",
            "shape": [1, 4, 3],
            "components": 14,
        },
    ),
    (
        "HParamsPluginData",
        {
            "version": 0,
            "experiment": {
                "hparam_infos": [
                    {
                        "name": "lr",
                        "type": 3,
                        "domain_discrete": {"values": [{"number_value": 0.1}]},
                    },
                    {"name": "opt", "type": 1, "display_name": "optimizer"},
                ],
                "metric_infos": [{"name": {"tag": "acc", "group": "g"}, "dataset_type": 2}],
                "time_created_secs": 5.0,
                "name": "exp",
            },
        },
    ),
    ("HParamsPluginData", {"session_start_info": {"hparams": {"lr": {"number_value": 0.5}}}}),
    ("HParamsPluginData", {"session_end_info": {"status": 1, "end_time_secs": 2.0}}),
    ("Value", {"bool_value": False}),
    ("Value", {"null_value": 0}),
    ("Value", {"struct_value": {"fields": {"k": {"string_value": "v"}}}}),
    ("ListValue", {"values": [{"number_value": 1.0}, {"list_value": {"values": []}}]}),
]


def _build(cls: Any, fields: dict[str, Any]) -> Any:
    """Build a protobuf object of class ``cls`` from a message dict, field by field."""
    message = cls()
    _fill(message, fields)
    return message


def _fill(message: Any, fields: dict[str, Any]) -> None:
    descriptor = message.DESCRIPTOR
    for name, value in fields.items():
        field = descriptor.fields_by_name[name]
        target = getattr(message, name)
        sub = field.message_type
        if sub is not None and sub.GetOptions().map_entry:
            value_field = sub.fields_by_name["value"]
            for key, item in value.items():
                if value_field.message_type is not None:
                    _fill(target[key], item)
                else:
                    target[key] = item
        elif sub is not None and isinstance(value, list):
            for item in value:
                _fill(target.add(), item)
        elif sub is not None:
            target.SetInParent()
            _fill(target, value)
        elif isinstance(value, list):
            target.extend(value)
        else:
            setattr(message, name, value)


@pytest.mark.parametrize(
    ("name", "fields"), _CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(_CASES)]
)
def test_encoding_matches_protobuf_bytes(name: str, fields: dict[str, Any]) -> None:
    """Each message kind encodes to exactly the bytes protobuf produces for the same content."""
    reference = _build(_proto_classes()[name], fields).SerializeToString()
    assert REGISTRY[name].encode(fields) == reference


@pytest.mark.parametrize(
    ("name", "fields"), _CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(_CASES)]
)
def test_decoding_protobuf_bytes_gives_the_fields_back(name: str, fields: dict[str, Any]) -> None:
    """Decoding protobuf's bytes and re-encoding the result reproduces the bytes exactly."""
    reference = _build(_proto_classes()[name], fields).SerializeToString()
    decoded = REGISTRY[name].decode(reference)
    assert REGISTRY[name].encode(decoded) == reference
