"""SummaryWriter methods for plugin data: text, PR curves, layouts, meshes, graphs, embeddings.

They live in a base class of :class:`stoker.tensorboard.SummaryWriter`, which supplies
``_add_summary`` (queue an encoded ``Summary``) and ``_get_file_writer``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stoker.tensorboard import _summary, _summary_plugins
from stoker.tensorboard._destination import RemoteDestination
from stoker.tensorboard._file_writer import FileWriter, check_step


class PluginMethods:
    """The plugin-data half of SummaryWriter's torch-compatible methods."""

    def _add_summary(self, summary: bytes, global_step: Any, walltime: Any) -> None:
        raise NotImplementedError  # pragma: no cover - provided by SummaryWriter

    def _get_file_writer(self) -> FileWriter:
        raise NotImplementedError  # pragma: no cover - provided by SummaryWriter

    def add_text(
        self, tag: str, text_string: str, global_step: Any = None, walltime: Any = None
    ) -> None:
        """Add a text (Markdown) entry."""
        self._add_summary(_summary_plugins.text(tag, text_string), global_step, walltime)

    def add_onnx_graph(self, prototxt: str) -> None:
        """Add the graph of an ONNX model file (needs the ``onnx`` package)."""
        from stoker.tensorboard._graph import onnx_graph_def  # noqa: PLC0415 - optional part, loaded on use

        self._get_file_writer().add_onnx_graph(onnx_graph_def(prototxt))

    def add_graph(
        self,
        model: Any,
        input_to_model: Any = None,
        verbose: bool = False,
        use_strict_trace: bool = True,
    ) -> None:
        """Add the graph of a torch module, traced with ``torch.jit.trace`` (needs torch)."""
        from stoker.tensorboard._graph import torch_graph  # noqa: PLC0415 - optional part, loaded on use

        self._get_file_writer().add_graph(
            torch_graph(model, input_to_model, verbose, use_strict_trace)
        )

    def add_embedding(  # noqa: PLR0917 - torch's positional signature
        self,
        mat: Any,
        metadata: Sequence[Any] | None = None,
        label_img: Any = None,
        global_step: int | None = None,
        tag: str = "default",
        metadata_header: Sequence[str] | None = None,
    ) -> None:
        """Add an embedding for the projector: tensors, metadata and a sprite of label images."""
        from stoker.tensorboard._embedding import write_embedding  # noqa: PLC0415 - optional part, loaded on use

        _summary.check_tag(tag)
        event_writer = self._get_file_writer().event_writer
        destination = event_writer.destination
        write_embedding(
            event_writer.get_logdir(),
            mat,
            metadata,
            label_img,
            metadata_header,
            tag,
            0 if global_step is None else check_step(global_step),
            store=destination if isinstance(destination, RemoteDestination) else None,
        )

    def add_pr_curve(  # noqa: PLR0917 - torch's positional signature
        self,
        tag: str,
        labels: Any,
        predictions: Any,
        global_step: Any = None,
        num_thresholds: int = 127,
        weights: Any = None,
        walltime: Any = None,
    ) -> None:
        """Add a precision-recall curve computed from binary labels and predictions."""
        summary = _summary_plugins.pr_curve(tag, labels, predictions, num_thresholds, weights)
        self._add_summary(summary, global_step, walltime)

    def add_pr_curve_raw(  # noqa: PLR0917 - torch's positional signature
        self,
        tag: str,
        true_positive_counts: Any,
        false_positive_counts: Any,
        true_negative_counts: Any,
        false_negative_counts: Any,
        precision: Any,
        recall: Any,
        global_step: Any = None,
        num_thresholds: int = 127,
        weights: Any = None,
        walltime: Any = None,
    ) -> None:
        """Add a precision-recall curve from precomputed counts; ``weights`` is unused."""
        curves = (true_positive_counts, false_positive_counts, true_negative_counts,
                  false_negative_counts, precision, recall)  # fmt: skip
        summary = _summary_plugins.pr_curve_raw(tag, curves, num_thresholds)
        self._add_summary(summary, global_step, walltime)

    def add_custom_scalars_multilinechart(
        self, tags: list[str], category: str = "default", title: str = "untitled"
    ) -> None:
        """Add a custom-scalars chart plotting ``tags`` together."""
        self.add_custom_scalars({category: {title: ["Multiline", tags]}})

    def add_custom_scalars_marginchart(
        self, tags: list[str], category: str = "default", title: str = "untitled"
    ) -> None:
        """Add a custom-scalars margin chart from three tags: value, lower, upper."""
        if len(tags) != 3:
            raise ValueError(
                f"tags must have exactly 3 entries (value, lower, upper), got {tags!r}"
            )
        self.add_custom_scalars({category: {title: ["Margin", tags]}})

    def add_custom_scalars(self, layout: Mapping[str, Mapping[str, Sequence[Any]]]) -> None:
        """Set the custom-scalars layout: ``{category: {chart: ['Multiline'|'Margin', tags]}}``."""
        self._add_summary(_summary_plugins.custom_scalars(layout), None, None)

    def add_mesh(  # noqa: PLR0917 - torch's positional signature
        self,
        tag: str,
        vertices: Any,
        colors: Any = None,
        faces: Any = None,
        config_dict: dict[str, Any] | None = None,
        global_step: Any = None,
        walltime: Any = None,
    ) -> None:
        """Add a mesh or point cloud: vertices, optional colors and faces, each ``(B, N, 3)``."""
        summary = _summary_plugins.mesh(tag, vertices, colors, faces, config_dict)
        self._add_summary(summary, global_step, walltime)
