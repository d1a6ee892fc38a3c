"""The builders behind ``SummaryWriter.add_*``: one module per kind of summary.

Each builder validates its input (``inputs``: tags, the one ``as_numpy``, one-element scalars)
and returns what the writer queues: the encoded bytes of one ``Summary`` (modules ``scalars``,
``tensors``, ``histograms``, ``images``, ``figures``, ``videos``, ``wav``, ``texts``,
``hyperparameters``, ``pr_curves``, ``layouts`` for custom scalars, ``meshes``), the events of
``purge_step`` (``purge``), a ``GraphDef`` (``graphs``), or the projector files of an embedding
(``embedding``). Media share ``pixels`` (torch's scaling and layout) and ``boxes``; messages
come from ``_proto``. Modules are named in the plural so that no builder function (``image``)
hides the module it comes from (``images``).

``SummaryWriter`` imports the builders from this facade, never from the modules inside.
"""

from stoker.tensorboard._summary.embedding import write_embedding
from stoker.tensorboard._summary.figures import figure
from stoker.tensorboard._summary.graphs import onnx_graph_def, torch_graph
from stoker.tensorboard._summary.histograms import histogram, histogram_raw
from stoker.tensorboard._summary.hyperparameters import hparams
from stoker.tensorboard._summary.images import image, image_with_boxes
from stoker.tensorboard._summary.inputs import (
    STEP_MAX,
    STEP_MIN,
    check_step,
    check_tag,
    check_walltime,
    scalar_to_float,
)
from stoker.tensorboard._summary.layouts import custom_scalars
from stoker.tensorboard._summary.meshes import mesh
from stoker.tensorboard._summary.pr_curves import pr_curve, pr_curve_raw
from stoker.tensorboard._summary.purge import purge_events
from stoker.tensorboard._summary.scalars import ScalarEventEncoder, scalar
from stoker.tensorboard._summary.tensors import tensor
from stoker.tensorboard._summary.texts import text
from stoker.tensorboard._summary.videos import video
from stoker.tensorboard._summary.wav import audio

__all__ = [
    "STEP_MAX",
    "STEP_MIN",
    "ScalarEventEncoder",
    "audio",
    "check_step",
    "check_tag",
    "check_walltime",
    "custom_scalars",
    "figure",
    "histogram",
    "histogram_raw",
    "hparams",
    "image",
    "image_with_boxes",
    "mesh",
    "onnx_graph_def",
    "pr_curve",
    "pr_curve_raw",
    "purge_events",
    "scalar",
    "scalar_to_float",
    "tensor",
    "text",
    "torch_graph",
    "video",
    "write_embedding",
]
