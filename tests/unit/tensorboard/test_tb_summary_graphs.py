"""add_onnx_graph: the GraphDef TensorBoard loads equals the one torch's writer produces."""

from __future__ import annotations

from pathlib import Path

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
