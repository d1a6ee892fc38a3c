"""Declarative definitions of TensorBoard's core messages: Event, Summary, tensors, histograms.

Field numbers come from TensorBoard's published ``.proto`` files (``tensorboard/compat/proto/``
``event``, ``summary``, ``tensor``, ``tensor_shape``, ``histogram``) and
``google/protobuf/struct.proto``; the codec is in ``_codec``. Graph, run-metadata and plugin
messages are in ``_messages_plugins``.
"""

from __future__ import annotations

from stoker.tensorboard._codec import REGISTRY, Field, MessageType
from stoker.tensorboard._codec import f as _f
from stoker.tensorboard._codec import m as _m

__all__ = ["REGISTRY", "Field", "MessageType"]

# --- google/protobuf/struct.proto -------------------------------------------------------------
STRUCT = MessageType("Struct", [_m(1, "fields", "Value", map_key="string")])
VALUE = MessageType(
    "Value",
    [
        _f(1, "null_value", "enum", oneof="kind"),
        _f(2, "number_value", "double", oneof="kind"),
        _f(3, "string_value", "string", oneof="kind"),
        _f(4, "bool_value", "bool", oneof="kind"),
        _m(5, "struct_value", "Struct", oneof="kind"),
        _m(6, "list_value", "ListValue", oneof="kind"),
    ],
)
LIST_VALUE = MessageType("ListValue", [_m(1, "values", "Value", repeated=True)])

# --- tensor_shape.proto, tensor.proto, histogram.proto ----------------------------------------
TENSOR_SHAPE_DIM = MessageType(
    "TensorShapeProto.Dim", [_f(1, "size", "int64"), _f(2, "name", "string")]
)
TENSOR_SHAPE = MessageType(
    "TensorShapeProto",
    [_m(2, "dim", "TensorShapeProto.Dim", repeated=True), _f(3, "unknown_rank", "bool")],
)
TENSOR = MessageType(
    "TensorProto",
    [
        _f(1, "dtype", "enum"),
        _m(2, "tensor_shape", "TensorShapeProto"),
        _f(3, "version_number", "int32"),
        _f(4, "tensor_content", "bytes"),
        _f(5, "float_val", "float", repeated=True),
        _f(6, "double_val", "double", repeated=True),
        _f(7, "int_val", "int32", repeated=True),
        _f(8, "string_val", "bytes", repeated=True),
        _f(9, "scomplex_val", "float", repeated=True),
        _f(10, "int64_val", "int64", repeated=True),
        _f(11, "bool_val", "bool", repeated=True),
        _f(12, "dcomplex_val", "double", repeated=True),
        _f(13, "half_val", "int32", repeated=True),
        _f(16, "uint32_val", "uint32", repeated=True),
        _f(17, "uint64_val", "uint64", repeated=True),
    ],
)
HISTOGRAM = MessageType(
    "HistogramProto",
    [
        _f(1, "min", "double"),
        _f(2, "max", "double"),
        _f(3, "num", "double"),
        _f(4, "sum", "double"),
        _f(5, "sum_squares", "double"),
        _f(6, "bucket_limit", "double", repeated=True),
        _f(7, "bucket", "double", repeated=True),
    ],
)

# --- summary.proto ----------------------------------------------------------------------------
PLUGIN_DATA = MessageType(
    "SummaryMetadata.PluginData", [_f(1, "plugin_name", "string"), _f(2, "content", "bytes")]
)
SUMMARY_METADATA = MessageType(
    "SummaryMetadata",
    [
        _m(1, "plugin_data", "SummaryMetadata.PluginData"),
        _f(2, "display_name", "string"),
        _f(3, "summary_description", "string"),
        _f(4, "data_class", "enum"),
    ],
)
SUMMARY_IMAGE = MessageType(
    "Summary.Image",
    [
        _f(1, "height", "int32"),
        _f(2, "width", "int32"),
        _f(3, "colorspace", "int32"),
        _f(4, "encoded_image_string", "bytes"),
    ],
)
SUMMARY_AUDIO = MessageType(
    "Summary.Audio",
    [
        _f(1, "sample_rate", "float"),
        _f(2, "num_channels", "int64"),
        _f(3, "length_frames", "int64"),
        _f(4, "encoded_audio_string", "bytes"),
        _f(5, "content_type", "string"),
    ],
)
SUMMARY_VALUE = MessageType(
    "Summary.Value",
    [
        _f(7, "node_name", "string"),
        _f(1, "tag", "string"),
        _m(9, "metadata", "SummaryMetadata"),
        _f(2, "simple_value", "float", oneof="value"),
        _f(3, "obsolete_old_style_histogram", "bytes", oneof="value"),
        _m(4, "image", "Summary.Image", oneof="value"),
        _m(5, "histo", "HistogramProto", oneof="value"),
        _m(6, "audio", "Summary.Audio", oneof="value"),
        _m(8, "tensor", "TensorProto", oneof="value"),
    ],
)
SUMMARY = MessageType("Summary", [_m(1, "value", "Summary.Value", repeated=True)])

# --- event.proto ------------------------------------------------------------------------------
LOG_MESSAGE = MessageType("LogMessage", [_f(1, "level", "enum"), _f(2, "message", "string")])
SESSION_LOG = MessageType(
    "SessionLog",
    [_f(1, "status", "enum"), _f(2, "checkpoint_path", "string"), _f(3, "msg", "string")],
)
TAGGED_RUN_METADATA = MessageType(
    "TaggedRunMetadata", [_f(1, "tag", "string"), _f(2, "run_metadata", "bytes")]
)
EVENT = MessageType(
    "Event",
    [
        _f(1, "wall_time", "double"),
        _f(2, "step", "int64"),
        _f(3, "file_version", "string", oneof="what"),
        _f(4, "graph_def", "bytes", oneof="what"),
        _m(5, "summary", "Summary", oneof="what"),
        _m(6, "log_message", "LogMessage", oneof="what"),
        _m(7, "session_log", "SessionLog", oneof="what"),
        _m(8, "tagged_run_metadata", "TaggedRunMetadata", oneof="what"),
        _f(9, "meta_graph_def", "bytes", oneof="what"),
    ],
)

# --- enum values used by the writer -----------------------------------------------------------
DT_FLOAT = 1
DT_DOUBLE = 2
DT_INT32 = 3
DT_UINT8 = 4
DT_INT16 = 5
DT_INT8 = 6
DT_STRING = 7
DT_COMPLEX64 = 8
DT_INT64 = 9
DT_BOOL = 10
DT_BFLOAT16 = 14
DT_UINT16 = 17
DT_COMPLEX128 = 18
DT_HALF = 19
DT_UINT32 = 22
DT_UINT64 = 23

SESSION_START = 1
HPARAMS_TYPE_STRING = 1
HPARAMS_TYPE_BOOL = 2
HPARAMS_TYPE_FLOAT64 = 3
HPARAMS_STATUS_SUCCESS = 1
MESH_VERTEX = 1
MESH_FACE = 2
MESH_COLOR = 3
