"""Model graphs as ``GraphDef`` dicts: torch modules through ``torch.jit.trace``, and ONNX files.

Both torch and onnx are optional and imported only when a graph is requested (torch through
``stoker._torch.trace_module``, the one place that imports it). Node naming follows
what TensorBoard's graph dashboard groups on: ``/``-separated scopes, with each module shown as
``Type[attribute]`` under the traced model's class name, inputs under ``input/`` and outputs as
``output/output.<i>``.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Iterator
from typing import Any

from stoker import _torch

__all__ = ["onnx_graph_def", "torch_graph"]

_PRODUCER = 22
_GETATTR = "prim::GetAttr"
_CLASS_TYPE = "ClassType"


def _shape_attr(sizes: Any) -> dict[str, Any]:
    dims = [{"size": int(size) if size is not None else -1} for size in sizes]
    return {"list": {"shape": [{"dim": dims}]}}


def _value_sizes(value: Any) -> list[int] | None:
    try:
        if value.isCompleteTensor():
            return list(value.type().sizes())
    except RuntimeError:
        return None
    return None


def _node(name: str, op: str, inputs: list[str], sizes: Any, attributes: str) -> dict[str, Any]:
    attr: dict[str, Any] = {"attr": {"s": attributes.encode("utf-8")}}
    if sizes is not None:
        attr["_output_shapes"] = _shape_attr(sizes)
    return {"name": name, "op": op, "input": inputs, "attr": attr}


@contextlib.contextmanager
def _eval_mode(model: Any) -> Iterator[None]:
    training = getattr(model, "training", None)
    if training is None or not hasattr(model, "train"):
        yield
        return
    model.train(False)
    try:
        yield
    finally:
        model.train(training)


def _module_name(module: Any) -> str:
    name = getattr(module, "_name", None) or getattr(module, "original_name", None)
    return str(name or type(module).__name__)


def _attributes(node: Any) -> str:
    values = {}
    for key in node.attributeNames():
        kind = node.kindOf(key)
        values[key] = getattr(node, kind)(key)
    return str(values).replace("'", " ")


def torch_graph(
    model: Any, args: Any, verbose: bool = False, use_strict_trace: bool = True
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Trace a torch module and describe it as ``(GraphDef, RunMetadata)`` dicts.

    Args:
        model: A ``torch.nn.Module`` (or a scripted function).
        args: The example input(s) for ``torch.jit.trace``.
        verbose: Log the traced graph at INFO level.
        use_strict_trace: Passed to ``torch.jit.trace`` as ``strict``.

    Returns:
        The graph and the run metadata, as message dicts.

    Raises:
        ImportError: If torch is not installed.
        TypeError: If ``model`` is not a module.
    """
    if args is not None and not isinstance(args, (tuple, list)):
        args = (args,)
    with _eval_mode(model):
        trace, graph = _torch.trace_module(model, args, strict=use_strict_trace)
    if verbose:
        logging.getLogger(__name__).info("traced graph:\n%s", graph)
    aliases = {name: f"{_module_name(module)}[{name.split('.')[-1]}]"
               for name, module in trace.named_modules(prefix="__module")}  # fmt: skip
    root = _module_name(trace)

    def scope_of(raw: str) -> str:
        parts = [aliases.get(part, part.split(".")[-1]) for part in raw.split("/") if part]
        return "/".join([root, *parts]) if parts else root

    names: dict[str, str] = {}
    getattr_scope: dict[str, str] = {}
    nodes: list[dict[str, Any]] = []
    for value in graph.inputs():
        if value.type().kind() == _CLASS_TYPE or not value.uses():
            continue
        name = f"input/{value.debugName()}"
        names[value.debugName()] = name
        nodes.append(_node(name, "IO Node", [], _value_sizes(value), ""))
    for node in graph.nodes():
        kind = node.kind()
        if kind == _GETATTR:
            parent = node.input().node()
            attr_name = node.s("name")
            key = node.output().debugName()
            if parent.kind() == _GETATTR:
                parent_scope = getattr_scope[parent.output().debugName()]
                getattr_scope[key] = f"{parent_scope}.{attr_name}"
            else:
                getattr_scope[key] = f"__module.{attr_name}"
            if node.output().type().kind() == _CLASS_TYPE:
                continue
            raw_scope = getattr_scope[key].rsplit(".", 1)[0]
        else:
            raw_scope = node.scopeName()
        scope = scope_of(raw_scope)
        inputs = [names[v.debugName()] for v in node.inputs() if v.debugName() in names]
        attributes = _attributes(node)
        for output in node.outputs():
            name = f"{scope}/{output.debugName()}"
            names[output.debugName()] = name
            nodes.append(_node(name, kind, inputs, _value_sizes(output), attributes))
    for index, value in enumerate(graph.outputs(), start=1):
        source = names.get(value.debugName())
        nodes.append(
            _node(
                f"output/output.{index}",
                "IO Node",
                [source] if source else [],
                _value_sizes(value),
                "",
            )
        )
    graph_def = {"node": nodes, "versions": {"producer": _PRODUCER}}
    run_metadata = {"step_stats": {"dev_stats": [{"device": "/device:CPU:0"}]}}
    return graph_def, run_metadata


def onnx_graph_def(path: str) -> dict[str, Any]:
    """Read an ONNX model file and describe its graph as a ``GraphDef`` dict.

    Raises:
        ImportError: If the ``onnx`` package is not installed.
    """
    try:
        import onnx  # noqa: PLC0415 - optional dependency, imported on use
    except ImportError as err:
        raise ImportError(
            "add_onnx_graph needs the onnx package: pip install onnx (or stoker[onnx])"
        ) from err
    graph = onnx.load(path).graph
    nodes: list[dict[str, Any]] = []
    for value in itertools.chain(graph.input, graph.output):
        tensor_type = value.type.tensor_type
        dims = [{"size": dim.dim_value} for dim in tensor_type.shape.dim]
        nodes.append(
            {
                "name": value.name,
                "op": "Variable",
                "attr": {
                    "dtype": {"type": tensor_type.elem_type},
                    "shape": {"shape": {"dim": dims}},
                },
            }
        )
    for node in graph.node:
        parameters = ", ".join(
            " = ".join(str(field[1]) for field in attribute.ListFields())
            for attribute in node.attribute
        )
        nodes.append(
            {
                "name": node.output[0],
                "op": node.op_type,
                "input": list(node.input),
                "attr": {"parameters": {"s": parameters.encode("utf-8")}},
            }
        )
    return {"node": nodes, "versions": {"producer": _PRODUCER}}
