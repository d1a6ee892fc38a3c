"""Declarative definitions of graph, run-metadata and plugin messages TensorBoard reads.

Field numbers come from ``graph.proto``, ``node_def.proto``, ``attr_value.proto``,
``versions.proto``, ``config.proto``/``step_stats.proto`` and the plugins' ``plugin_data.proto``,
``layout.proto`` (custom scalars) and ``api.proto`` (hparams).
"""

from __future__ import annotations

from stoker.tensorboard import _messages  # noqa: F401 - registers the core types referred to here
from stoker.tensorboard._codec import MessageType
from stoker.tensorboard._codec import f as _f
from stoker.tensorboard._codec import m as _m

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
