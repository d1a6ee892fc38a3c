"""add_graph and add_onnx_graph: the GraphDef TensorBoard loads equals the one torch's produces."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import stoker.tensorboard as stb


def _tiny_onnx_model(path: Path) -> None:
    """Save a two-node ONNX model (Add then Relu with an attribute-bearing Gemm) to ``path``."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 3])
    nodes = [
        helper.make_node("Add", ["x", "y"], ["sum"]),
        helper.make_node("LeakyRelu", ["sum"], ["out"], alpha=0.25),
    ]
    graph = helper.make_graph(nodes, "tiny", [x, y], [out])
    onnx.save(helper.make_model(graph), str(path))


def _graph_of(logdir: Path) -> object:
    """Load the run's GraphDef with TensorBoard's own accumulator."""
    from tensorboard.backend.event_processing import event_accumulator

    acc = event_accumulator.EventAccumulator(str(logdir))
    acc.Reload()
    return acc.Graph()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_onnx_graph_matches_torch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Nodes, ops, inputs, shapes, dtypes and attributes equal torch's for the same model."""
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    model = tmp_path / "tiny.onnx"
    _tiny_onnx_model(model)
    with stb.SummaryWriter(tmp_path / "stoker") as writer:
        writer.add_onnx_graph(str(model))
    assert capsys.readouterr().out == ""  # library code prints nothing
    with TorchWriter(str(tmp_path / "torch")) as writer:
        writer.add_onnx_graph(str(model))
    ours, theirs = _graph_of(tmp_path / "stoker"), _graph_of(tmp_path / "torch")
    assert [n.name for n in ours.node] == ["x", "y", "out", "sum", "out"]  # type: ignore[attr-defined]
    assert ours == theirs
    leaky = ours.node[-1]  # type: ignore[attr-defined]
    assert leaky.op == "LeakyRelu"
    assert b"0.25" in leaky.attr["parameters"].s


def test_onnx_graph_missing_file_raises(tmp_path: Path) -> None:
    """A path that does not exist raises instead of writing an empty graph."""
    with stb.SummaryWriter(tmp_path) as writer, pytest.raises((FileNotFoundError, OSError)):
        writer.add_onnx_graph(str(tmp_path / "missing.onnx"))


# add_graph traces with torch.jit, which torch 2.13 deprecates (its own writer warns the same way)
_JIT_DEPRECATED = pytest.mark.filterwarnings(
    r"ignore:`torch\.jit\.\w+` is deprecated:DeprecationWarning"
)


def _torch_models() -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """Modules and example inputs: ``name -> (make the module, make its input)``."""
    import torch
    from torch import nn

    class Nested(nn.Module):
        """Nested Sequentials: parameters three module scopes deep."""

        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(
                nn.Linear(4, 3), nn.ReLU(), nn.Sequential(nn.Linear(3, 3), nn.Tanh())
            )

        def forward(self, x: Any) -> Any:
            return self.net(x)

    class Blocks(nn.Module):
        """A ModuleList used in a loop with residual adds, a buffer and a dropout."""

        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(3, 3) for _ in range(3)])
            self.drop = nn.Dropout(0.5)
            self.register_buffer("shift", torch.ones(3))

        def forward(self, x: Any) -> Any:
            for block in self.blocks:
                x = x + self.drop(block(x))
            return x - self.shift

    class TwoInputs(nn.Module):
        """Two inputs, two outputs, a convolution with batch norm and a concatenation."""

        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(1, 2, 3, padding=1)
            self.norm = nn.BatchNorm2d(2)
            self.head = nn.Linear(2 * 4 * 4 + 5, 2)

        def forward(self, image: Any, extra: Any) -> Any:
            features = torch.relu(self.norm(self.conv(image))).flatten(1)
            joined = torch.cat([features, extra], dim=1)
            return self.head(joined), joined.sum()

    class Shared(nn.Module):
        """One layer applied twice, an unused input, and a Python scalar in the arithmetic."""

        def __init__(self) -> None:
            super().__init__()
            self.layer = nn.Linear(3, 3)

        def forward(self, x: Any, unused: Any) -> Any:
            return self.layer(self.layer(x) * 0.5)

    return {
        "nested": (Nested, lambda: torch.zeros(2, 4)),
        "shared": (Shared, lambda: (torch.zeros(2, 3), torch.zeros(1))),
        "module-list": (Blocks, lambda: torch.zeros(2, 3)),
        "two-inputs": (TwoInputs, lambda: (torch.zeros(2, 1, 4, 4), torch.ones(2, 5))),
        "sequential": (
            lambda: nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)),
            lambda: torch.zeros(1, 4),
        ),
    }


@_JIT_DEPRECATED
@pytest.mark.parametrize("name", ["nested", "shared", "module-list", "two-inputs", "sequential"])
def test_add_graph_writes_the_graph_def_torch_makes(name: str, tmp_path: Path) -> None:
    """The GraphDef TensorBoard loads equals torch's for the same module, in full.

    Node names (module scopes such as ``Nested/Sequential[net]/Linear[0]/bias/bias``), ops,
    inputs, attributes, shapes and their order; the run metadata is torch's too.
    """
    import torch
    from tensorboard.backend.event_processing import event_accumulator
    from torch.utils.tensorboard._pytorch_graph import graph

    make_model, make_input = _torch_models()[name]
    torch.manual_seed(0)
    model, example = make_model(), make_input()
    theirs, their_metadata = graph(model, example if isinstance(example, tuple) else (example,))
    with stb.SummaryWriter(tmp_path) as writer:
        writer.add_graph(model, example)
    accumulator = event_accumulator.EventAccumulator(str(tmp_path))
    accumulator.Reload()
    ours = accumulator.Graph()
    assert [(n.name, n.op, list(n.input)) for n in ours.node] == [
        (n.name, n.op, list(n.input)) for n in theirs.node
    ]
    assert ours == theirs
    assert accumulator.RunMetadata("step1") == their_metadata


@_JIT_DEPRECATED
def test_add_graph_keeps_module_scopes_on_parameters(tmp_path: Path) -> None:
    """A parameter node sits in its module's scope and reads the module it belongs to."""
    from tensorboard.backend.event_processing import event_accumulator

    make_model, make_input = _torch_models()["nested"]
    with stb.SummaryWriter(tmp_path) as writer:
        writer.add_graph(make_model(), make_input())
    accumulator = event_accumulator.EventAccumulator(str(tmp_path))
    accumulator.Reload()
    scope = "Nested/Sequential[net]/Linear[0]/"
    (bias,) = [
        n
        for n in accumulator.Graph().node
        if re.fullmatch(rf"{re.escape(scope)}bias/bias(\.\d+)?", n.name)
    ]
    assert bias.op == "prim::GetAttr"
    (module,) = bias.input
    assert module.startswith(scope)


@_JIT_DEPRECATED
def test_add_graph_draws_a_scripted_function_torch_rejects(tmp_path: Path) -> None:
    """A scripted function, which torch's writer cannot draw, gets its graph without scopes."""
    import torch
    from tensorboard.backend.event_processing import event_accumulator

    @torch.jit.script
    def scale_and_add(x, y):  # unannotated arguments are Tensors to TorchScript
        return x * 2 + y

    with stb.SummaryWriter(tmp_path) as writer:
        writer.add_graph(scale_and_add, (torch.zeros(2), torch.ones(2)))
    accumulator = event_accumulator.EventAccumulator(str(tmp_path))
    accumulator.Reload()
    nodes = [(node.name, node.op, list(node.input)) for node in accumulator.Graph().node]
    inputs = [name for name, op, _ in nodes[:2] if name.startswith("input/") and op == "IO Node"]
    assert len(inputs) == 2
    assert nodes[2][:2] == ("output/output.1", "IO Node")
    mul = next(node for node in nodes if node[1] == "aten::mul")
    assert inputs[0] in mul[2]
    assert {op for _, op, _ in nodes[3:]} >= {"aten::mul", "aten::add"}
    assert all(name.startswith("Module/") for name, _, _ in nodes[3:])
