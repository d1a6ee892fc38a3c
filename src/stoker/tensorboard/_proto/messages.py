"""Declarations of every message stoker writes or reads: TensorBoard's core and plugin messages.

Field numbers come from TensorBoard's published ``.proto`` files: ``tensorboard/compat/proto/``
``event``, ``summary``, ``tensor``, ``tensor_shape``, ``histogram``, ``types``, ``graph``,
``node_def``, ``attr_value``, ``versions``, ``config`` and ``step_stats``;
``google/protobuf/struct.proto``; and the plugins' ``plugin_data.proto``, ``layout.proto``
(custom scalars) and ``api.proto`` (hparams). The codec that encodes and decodes them is
``codec``; this module is the only place in stoker where a field number is written.

Besides the messages it holds the enum values stoker uses, the one TensorProto dtype table
(:data:`DATA_TYPES`, for the writer's and the reader's conversions between NumPy and
``TensorProto``), and the plugin names and tag conventions that writer and reader share.
"""

from __future__ import annotations

from typing import NamedTuple

from stoker.tensorboard._proto.codec import MessageType
from stoker.tensorboard._proto.codec import f as _f
from stoker.tensorboard._proto.codec import m as _m

__all__ = [
    "ATTR_LIST",
    "ATTR_VALUE",
    "CATEGORY",
    "CHART",
    "DATA_TYPES",
    "DATA_TYPE_BY_CODE",
    "DATA_TYPE_BY_NAME",
    "DEVICE_STEP_STATS",
    "DT_BFLOAT16",
    "DT_BOOL",
    "DT_COMPLEX64",
    "DT_COMPLEX128",
    "DT_DOUBLE",
    "DT_FLOAT",
    "DT_HALF",
    "DT_INT8",
    "DT_INT16",
    "DT_INT32",
    "DT_INT64",
    "DT_STRING",
    "DT_UINT8",
    "DT_UINT16",
    "DT_UINT32",
    "DT_UINT64",
    "EVENT",
    "EXPERIMENT",
    "GRAPH_DEF",
    "HISTOGRAM",
    "HPARAMS_PLUGIN_DATA",
    "HPARAMS_STATUS_SUCCESS",
    "HPARAMS_TYPE_BOOL",
    "HPARAMS_TYPE_FLOAT64",
    "HPARAMS_TYPE_STRING",
    "HPARAM_INFO",
    "LAYOUT",
    "LIST_VALUE",
    "LOG_MESSAGE",
    "MARGIN_CHART",
    "MARGIN_SERIES",
    "MESH_COLOR",
    "MESH_FACE",
    "MESH_PLUGIN_DATA",
    "MESH_VERTEX",
    "METRIC_INFO",
    "METRIC_NAME",
    "MULTILINE_CHART",
    "NODE_DEF",
    "NODE_EXEC_STATS",
    "PLUGIN_AUDIO",
    "PLUGIN_CUSTOM_SCALARS",
    "PLUGIN_DATA",
    "PLUGIN_HISTOGRAMS",
    "PLUGIN_HPARAMS",
    "PLUGIN_IMAGES",
    "PLUGIN_MESH",
    "PLUGIN_PR_CURVES",
    "PLUGIN_SCALARS",
    "PLUGIN_TENSOR",
    "PLUGIN_TEXT",
    "PR_CURVE_PLUGIN_DATA",
    "RUN_METADATA",
    "SESSION_END_INFO",
    "SESSION_LOG",
    "SESSION_START",
    "SESSION_START_INFO",
    "STEP_STATS",
    "STRUCT",
    "SUMMARY",
    "SUMMARY_AUDIO",
    "SUMMARY_IMAGE",
    "SUMMARY_METADATA",
    "SUMMARY_VALUE",
    "TAGGED_RUN_METADATA",
    "TENSOR",
    "TENSOR_SHAPE",
    "TENSOR_SHAPE_DIM",
    "TEXT_PLUGIN_DATA",
    "TEXT_TAG_SUFFIX",
    "VALUE",
    "VERSION_DEF",
    "WAV_CONTENT_TYPE",
    "DataType",
]

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


# --- graph.proto, node_def.proto, attr_value.proto, versions.proto, config.proto --------------
ATTR_LIST = MessageType(
    "AttrValue.ListValue",
    [
        _f(2, "s", "bytes", repeated=True),
        _f(3, "i", "int64", repeated=True),
        _f(4, "f", "float", repeated=True),
        _f(5, "b", "bool", repeated=True),
        _f(6, "type", "enum", repeated=True),
        _m(7, "shape", "TensorShapeProto", repeated=True),
        _m(8, "tensor", "TensorProto", repeated=True),
    ],
)
ATTR_VALUE = MessageType(
    "AttrValue",
    [
        _m(1, "list", "AttrValue.ListValue", oneof="value"),
        _f(2, "s", "bytes", oneof="value"),
        _f(3, "i", "int64", oneof="value"),
        _f(4, "f", "float", oneof="value"),
        _f(5, "b", "bool", oneof="value"),
        _f(6, "type", "enum", oneof="value"),
        _m(7, "shape", "TensorShapeProto", oneof="value"),
        _m(8, "tensor", "TensorProto", oneof="value"),
        _f(9, "placeholder", "string", oneof="value"),
    ],
)
NODE_DEF = MessageType(
    "NodeDef",
    [
        _f(1, "name", "string"),
        _f(2, "op", "string"),
        _f(3, "input", "string", repeated=True),
        _f(4, "device", "string"),
        _m(5, "attr", "AttrValue", map_key="string"),
    ],
)
VERSION_DEF = MessageType(
    "VersionDef",
    [
        _f(1, "producer", "int32"),
        _f(2, "min_consumer", "int32"),
        _f(3, "bad_consumers", "int32", repeated=True),
    ],
)
GRAPH_DEF = MessageType(
    "GraphDef",
    [
        _m(1, "node", "NodeDef", repeated=True),
        _f(3, "version", "int32"),
        _m(4, "versions", "VersionDef"),
    ],
)
NODE_EXEC_STATS = MessageType(
    "NodeExecStats",
    [
        _f(1, "node_name", "string"),
        _f(2, "all_start_micros", "int64"),
        _f(3, "op_start_rel_micros", "int64"),
        _f(4, "op_end_rel_micros", "int64"),
        _f(5, "all_end_rel_micros", "int64"),
        _f(8, "timeline_label", "string"),
    ],
)
DEVICE_STEP_STATS = MessageType(
    "DeviceStepStats",
    [_f(1, "device", "string"), _m(2, "node_stats", "NodeExecStats", repeated=True)],
)
STEP_STATS = MessageType("StepStats", [_m(1, "dev_stats", "DeviceStepStats", repeated=True)])
RUN_METADATA = MessageType(
    "RunMetadata",
    [_m(1, "step_stats", "StepStats"), _m(3, "partition_graphs", "GraphDef", repeated=True)],
)

# --- plugin messages --------------------------------------------------------------------------
TEXT_PLUGIN_DATA = MessageType("TextPluginData", [_f(1, "version", "int32")])
PR_CURVE_PLUGIN_DATA = MessageType(
    "PrCurvePluginData", [_f(1, "version", "int32"), _f(2, "num_thresholds", "uint32")]
)
MULTILINE_CHART = MessageType("MultilineChartContent", [_f(1, "tag", "string", repeated=True)])
MARGIN_SERIES = MessageType(
    "MarginChartContent.Series",
    [_f(1, "value", "string"), _f(2, "lower", "string"), _f(3, "upper", "string")],
)
MARGIN_CHART = MessageType(
    "MarginChartContent", [_m(1, "series", "MarginChartContent.Series", repeated=True)]
)
CHART = MessageType(
    "Chart",
    [
        _f(1, "title", "string"),
        _m(2, "multiline", "MultilineChartContent", oneof="content"),
        _m(3, "margin", "MarginChartContent", oneof="content"),
    ],
)
CATEGORY = MessageType(
    "Category",
    [_f(1, "title", "string"), _m(2, "chart", "Chart", repeated=True), _f(3, "closed", "bool")],
)
LAYOUT = MessageType(
    "Layout", [_f(1, "version", "int32"), _m(2, "category", "Category", repeated=True)]
)
MESH_PLUGIN_DATA = MessageType(
    "MeshPluginData",
    [
        _f(1, "version", "int32"),
        _f(2, "name", "string"),
        _f(3, "content_type", "enum"),
        _f(5, "json_config", "string"),
        _f(6, "shape", "int32", repeated=True),
        _f(7, "components", "uint32"),
    ],
)
HPARAM_INFO = MessageType(
    "HParamInfo",
    [
        _f(1, "name", "string"),
        _f(2, "display_name", "string"),
        _f(3, "description", "string"),
        _f(4, "type", "enum"),
        _m(5, "domain_discrete", "ListValue", oneof="domain"),
        _f(7, "differs", "bool"),
    ],
)
METRIC_NAME = MessageType("MetricName", [_f(1, "group", "string"), _f(2, "tag", "string")])
METRIC_INFO = MessageType(
    "MetricInfo",
    [
        _m(1, "name", "MetricName"),
        _f(3, "display_name", "string"),
        _f(4, "description", "string"),
        _f(5, "dataset_type", "enum"),
    ],
)
EXPERIMENT = MessageType(
    "Experiment",
    [
        _f(1, "description", "string"),
        _f(2, "user", "string"),
        _f(3, "time_created_secs", "double"),
        _m(4, "hparam_infos", "HParamInfo", repeated=True),
        _m(5, "metric_infos", "MetricInfo", repeated=True),
        _f(6, "name", "string"),
    ],
)
SESSION_START_INFO = MessageType(
    "SessionStartInfo",
    [
        _m(1, "hparams", "Value", map_key="string"),
        _f(2, "model_uri", "string"),
        _f(3, "monitor_url", "string"),
        _f(4, "group_name", "string"),
        _f(5, "start_time_secs", "double"),
    ],
)
SESSION_END_INFO = MessageType(
    "SessionEndInfo", [_f(1, "status", "enum"), _f(2, "end_time_secs", "double")]
)
HPARAMS_PLUGIN_DATA = MessageType(
    "HParamsPluginData",
    [
        _f(1, "version", "int32"),
        _m(2, "experiment", "Experiment", oneof="data"),
        _m(3, "session_start_info", "SessionStartInfo", oneof="data"),
        _m(4, "session_end_info", "SessionEndInfo", oneof="data"),
    ],
)

# --- enum values ------------------------------------------------------------------------------
# types.proto DataType
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
"""``SessionLog.status`` START: a (re)started job; readers purge later steps before it."""
HPARAMS_TYPE_STRING = 1
HPARAMS_TYPE_BOOL = 2
HPARAMS_TYPE_FLOAT64 = 3
HPARAMS_STATUS_SUCCESS = 1
MESH_VERTEX = 1
MESH_FACE = 2
MESH_COLOR = 3


# --- the TensorProto dtype table ------------------------------------------------------------------
class DataType(NamedTuple):
    """One ``DataType`` of ``TensorProto``, as writer and reader convert it.

    Attributes:
        code: The enum value of ``types.proto``.
        name: TensorFlow's name; the NumPy dtype name too, but for ``"bfloat16"`` (which NumPy
            lacks) and ``"string"``.
        content: The NumPy dtype of the raw little-endian ``tensor_content`` bytes.
        field: The repeated ``TensorProto`` field holding the values when there is no content
            (see TensorBoard's ``tensor_util.make_ndarray``).
    """

    code: int
    name: str
    content: str
    field: str


DATA_TYPES = (
    DataType(DT_FLOAT, "float32", "<f4", "float_val"),
    DataType(DT_DOUBLE, "float64", "<f8", "double_val"),
    DataType(DT_INT32, "int32", "<i4", "int_val"),
    DataType(DT_UINT8, "uint8", "u1", "int_val"),
    DataType(DT_INT16, "int16", "<i2", "int_val"),
    DataType(DT_INT8, "int8", "i1", "int_val"),
    DataType(DT_STRING, "string", "O", "string_val"),
    DataType(DT_COMPLEX64, "complex64", "<c8", "scomplex_val"),
    DataType(DT_INT64, "int64", "<i8", "int64_val"),
    DataType(DT_BOOL, "bool", "?", "bool_val"),
    DataType(DT_BFLOAT16, "bfloat16", "<u2", "half_val"),
    DataType(DT_UINT16, "uint16", "<u2", "int_val"),
    DataType(DT_COMPLEX128, "complex128", "<c16", "dcomplex_val"),
    DataType(DT_HALF, "float16", "<f2", "half_val"),
    DataType(DT_UINT32, "uint32", "<u4", "uint32_val"),
    DataType(DT_UINT64, "uint64", "<u8", "uint64_val"),
)
"""Every dtype stoker writes or reads (TensorBoard's ``types.proto`` codes)."""
DATA_TYPE_BY_CODE = {entry.code: entry for entry in DATA_TYPES}
DATA_TYPE_BY_NAME = {entry.name: entry for entry in DATA_TYPES}

# --- plugin names and tag conventions -------------------------------------------------------------
# ``SummaryMetadata.plugin_data.plugin_name`` of the dashboards stoker writes for or reads.
PLUGIN_SCALARS = "scalars"
PLUGIN_TENSOR = "tensor"
PLUGIN_TEXT = "text"
PLUGIN_HPARAMS = "hparams"
PLUGIN_PR_CURVES = "pr_curves"
PLUGIN_CUSTOM_SCALARS = "custom_scalars"
PLUGIN_MESH = "mesh"
PLUGIN_HISTOGRAMS = "histograms"
PLUGIN_IMAGES = "images"
PLUGIN_AUDIO = "audio"
TEXT_TAG_SUFFIX = "/text_summary"
"""Appended to ``add_text``'s tag, as torch does; the reader accepts the tag without it."""
WAV_CONTENT_TYPE = "audio/wav"
"""``Summary.Audio.content_type`` of the WAV clips writers produce."""
