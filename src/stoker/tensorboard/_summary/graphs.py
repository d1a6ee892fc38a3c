"""Model graphs as ``GraphDef`` dicts: torch modules through ``torch.jit.trace``, and ONNX files.

Both torch and onnx are optional and imported only when a graph is requested (torch through
``stoker._torch.trace_module``, the one place that imports it). A torch module's GraphDef is
the one torch's writer (``torch.utils.tensorboard._pytorch_graph.graph``) makes, node for node:
inputs under ``input/``, outputs as ``output/output.<i>``, then each operation's outputs named
by ``/``-separated scopes that TensorBoard's graph dashboard groups on, each module shown as
``Type[attribute]`` under the traced model's name (a parameter as
``M/Sequential[net]/Linear[0]/bias/bias``, reading its module). torch's naming has quirks
(a submodule value no node makes is named in the scope of the last operation reading it);
they are kept, so that TensorBoard shows the same graph for both writers.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from stoker import _torch

__all__ = ["onnx_graph_def", "torch_graph"]

_PRODUCER = 22
_GETATTR = "prim::GetAttr"
_CLASS_TYPE = "ClassType"


def _node(name: str, op: str, inputs: list[str], sizes: Any, attributes: str) -> dict[str, Any]:
    attr: dict[str, Any] = {"attr": {"s": attributes.encode("utf-8")}}
    if sizes is not None:
        dims = [{"size": int(size)} for size in sizes]
        attr["_output_shapes"] = {"list": {"shape": [{"dim": dims}]}}
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
    """A module's name as torch shows it: a traced module's ``_name``, else ``original_name``."""
    if _torch.is_traced_module(module):
        return str(module._name)
    return str(getattr(module, "original_name", "Module"))


def _attributes(node: Any) -> str:
    values = {key: getattr(node, node.kindOf(key))(key) for key in node.attributeNames()}
    return str(values).replace("'", " ")


def _io_sizes(value: Any) -> Any:
    """A graph input's or output's sizes (``[1]`` when it has none, as for a constant model)."""
    try:
        return value.type().sizes()
    except RuntimeError:
        return [1]


def _op_sizes(value: Any) -> Any:
    """An operation output's sizes, or None when its tensor type is not complete."""
    return value.type().sizes() if value.isCompleteTensor() else None


@dataclass
class _Entry:
    """One node of the GraphDef being built: its name, op, input value names, sizes, attributes."""

    name: str
    op: str
    inputs: list[str]
    sizes: Any
    attributes: str = ""


@dataclass
class _Op:
    """One traced operation: its kind, input and output value names, sizes and raw scope."""

    kind: str
    inputs: list[str]
    outputs: list[tuple[str, Any]]
    attributes: str
    scope: str


def _operations(graph: Any) -> list[_Op]:
    """The graph's operations with their raw scopes (``__module.a/__module.a.b``).

    ``prim::GetAttr`` of a parameter or buffer is an operation scoped by the chain of attribute
    names that reaches it; ``GetAttr`` of a submodule is none (its scope says it).
    """
    operations = []
    getattr_scope: dict[str, str] = {}
    for node in graph.nodes():
        kind = node.kind()
        scope = node.scopeName()
        if kind == _GETATTR:
            key = node.output().debugName()
            parent = node.input().node()
            if parent.kind() == _GETATTR:
                parent_scope = getattr_scope[parent.output().debugName()]
                last = parent_scope.split("/")[-1]
                getattr_scope[key] = f"{parent_scope}/{last}.{node.s('name')}"
            else:
                getattr_scope[key] = f"__module.{node.s('name')}"
            if node.output().type().kind() == _CLASS_TYPE:
                continue
            scope = getattr_scope[key]
        operations.append(
            _Op(
                kind,
                [value.debugName() for value in node.inputs()],
                [(value.debugName(), _op_sizes(value)) for value in node.outputs()],
                _attributes(node),
                scope,
            )
        )
    return operations


def _graph_nodes(trace: Any, graph: Any) -> list[dict[str, Any]]:
    """The GraphDef nodes torch's writer makes for a traced graph, in its order and naming.

    Graph inputs (``input/<name>``, those used and not the module itself), then graph outputs
    (``output/output.<i>``), then every operation's outputs, named ``<scope>/<value name>`` with
    modules shown as ``Type[attribute]`` under the traced model's name. An input refers to the
    node that makes the value; a value no node makes (a submodule) is named in the scope of the
    last operation that reads it, as torch names it.
    """
    entries: dict[str, _Entry] = {}
    for value in graph.inputs():
        if value.uses() and value.type().kind() != _CLASS_TYPE:
            name = value.debugName()
            entries[name] = _Entry(f"input/{name}", "IO Node", [], _io_sizes(value))
    for index, value in enumerate(graph.outputs(), start=1):
        entries[f"output.{index}"] = _Entry(
            f"output/output.{index}", "IO Node", [value.debugName()], _io_sizes(value)
        )
    modules = getattr(trace, "named_modules", None)  # None for a scripted function
    aliases = {
        name: f"{_module_name(module)}[{name.split('.')[-1]}]"
        for name, module in (modules(prefix="__module") if modules else [])
    }
    root = _module_name(trace)
    operations = _operations(graph)
    for operation in operations:
        parts = [aliases.get(part, part.split(".")[-1]) for part in operation.scope.split("/")]
        operation.scope = "/".join([root, *parts]) if any(parts) else root
        for name, sizes in operation.outputs:
            entries[name] = _Entry(
                f"{operation.scope}/{name}",
                operation.kind,
                operation.inputs,
                sizes,
                operation.attributes,
            )
    scoped = {name: f"{op.scope}/{name}" for op in operations for name in op.inputs}
    scoped.update({key: entry.name for key, entry in entries.items()})
    return [
        _node(
            entry.name,
            entry.op,
            [scoped[name] for name in entry.inputs],
            entry.sizes,
            entry.attributes,
        )
        for entry in entries.values()
    ]


def torch_graph(
    model: Any, args: Any, verbose: bool = False, use_strict_trace: bool = True
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Trace a torch module and describe it as ``(GraphDef, RunMetadata)`` dicts.

    The GraphDef is the one torch's ``add_graph`` writes for the same module and input: the
    same nodes in the same order, with the same names (module scopes included), ops, inputs and
    attributes. A scripted function, which torch's writer rejects, is drawn without scopes.

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
    graph_def = {"node": _graph_nodes(trace, graph), "versions": {"producer": _PRODUCER}}
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
