"""The wire codec and message definitions, byte for byte against TensorBoard's protobuf classes."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.tensorboard import _messages as pb
from stoker.tensorboard import (
    _messages_plugins,  # noqa: F401 - registers the plugin messages
    _wire,
)

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
    assert pb.REGISTRY[name].encode(fields) == reference


@pytest.mark.parametrize(
    ("name", "fields"), _CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(_CASES)]
)
def test_decoding_protobuf_bytes_gives_the_fields_back(name: str, fields: dict[str, Any]) -> None:
    """Decoding protobuf's bytes and re-encoding the result reproduces the bytes exactly."""
    reference = _build(_proto_classes()[name], fields).SerializeToString()
    decoded = pb.REGISTRY[name].decode(reference)
    assert pb.REGISTRY[name].encode(decoded) == reference


def test_decoding_reads_values_and_skips_unknown_fields() -> None:
    """Decoded dicts hold typed values, and unknown fields in the input are ignored."""
    data = pb.EVENT.encode({"wall_time": 2.5, "step": -3, "file_version": "v"})
    unknown = _wire.key(99, _wire.LEN) + b"\x02ab" + _wire.key(98, _wire.VARINT) + b"\x05"
    assert pb.EVENT.decode(data + unknown) == {"wall_time": 2.5, "step": -3, "file_version": "v"}


def test_unpacked_repeated_numbers_are_accepted() -> None:
    """Repeated numbers written one field each (proto2 style) decode like packed ones."""
    data = b"".join(_wire.key(7, _wire.VARINT) + _wire.encode_varint(v) for v in (1, 2, 300))
    assert pb.TENSOR.decode(data)["int_val"] == [1, 2, 300]


def test_numpy_arrays_encode_like_lists() -> None:
    """Repeated numeric fields accept NumPy arrays and give the same bytes as lists."""
    values = np.array([-5, 0, 7, 2**20], dtype=np.int32)
    as_list = pb.TENSOR.encode({"int_val": values.tolist(), "float_val": [0.5, 1.5]})
    as_array = pb.TENSOR.encode({"int_val": values, "float_val": np.array([0.5, 1.5])})
    assert as_array == as_list


def test_unknown_field_name_is_a_type_error() -> None:
    """A misspelt field name raises TypeError that names the message and the field."""
    with pytest.raises(TypeError, match="Event has no field 'stepp'"):
        pb.EVENT.encode({"stepp": 1})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x08", "truncated varint"),
        (b"\x0a\x05ab", "past the end"),
        (b"\x09\x00\x00", "past the end"),
        (b"\x0b", "unsupported wire type"),
        (b"\x00\x01", "field number 0"),
        (b"\x08" + b"\xff" * 11, "longer than ten bytes"),
    ],
)
def test_malformed_bytes_raise_wire_error(data: bytes, message: str) -> None:
    """Truncated or invalid input raises WireError (a ValueError) with the reason."""
    with pytest.raises(_wire.WireError, match=message):
        pb.EVENT.decode(data)


@given(st.integers(min_value=-(2**63), max_value=2**64 - 1))
def test_varint_round_trip(value: int) -> None:
    """Every int64/uint64 survives varint encoding (negatives as their 64-bit complement)."""
    decoded, end = _wire.decode_varint(_wire.encode_varint(value), 0)
    assert decoded == value % 2**64
    assert end == len(_wire.encode_varint(value))


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_zigzag_round_trip(value: int) -> None:
    """Zigzag maps signed to unsigned and back, small magnitudes to small numbers."""
    assert _wire.unzigzag(_wire.zigzag(value)) == value
    assert _wire.zigzag(value) == (2 * value if value >= 0 else -2 * value - 1)


@given(st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=50))
def test_vectorised_varints_match_scalar_encoding(values: list[int]) -> None:
    """pack_varints gives the same bytes as encoding each value on its own."""
    expected = b"".join(_wire.encode_varint(v) for v in values)
    assert _wire.pack_varints(np.array(values, dtype=np.int64)) == expected
    assert _wire.unpack_varints(expected) == [v % 2**64 for v in values]


@given(st.floats(allow_nan=False, width=32), st.floats(allow_nan=False))
def test_fixed_width_fields_round_trip(single: float, double: float) -> None:
    """float and double fields keep their exact bit patterns through encode and decode."""
    decoded = pb.SUMMARY_AUDIO.decode(pb.SUMMARY_AUDIO.encode({"sample_rate": single}))
    assert struct.pack("<f", decoded.get("sample_rate", 0.0)) == struct.pack("<f", single)
    event = pb.EVENT.decode(pb.EVENT.encode({"wall_time": double}))
    assert struct.pack("<d", event.get("wall_time", 0.0)) == struct.pack("<d", double)
