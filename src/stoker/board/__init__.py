"""TensorBoard's own web page, served from stoker's reader.

TensorBoard's web server takes its data from any gRPC server that implements its
``TensorBoardDataProvider`` service (``tensorboard --grpc_data_provider=HOST:PORT``).
:class:`DataServer` is such a server, backed by the reader of :mod:`stoker.tensorboard`: a log
dir (local or an fsspec URL such as ``s3://bucket/prefix``) is read once with the reader's
parallel workers, then followed as it grows; scalars are NumPy columns, images and audio stay
in their files until the page asks for them. :class:`PageServer` serves TensorBoard's page in
front of TensorBoard's web server, answering the scalar routes from the data server's columns.
``stoker board LOGDIR`` starts all three.

Needs the ``tensorboard`` extra (``pip install 'stoker[tensorboard]'``), which brings the
generated service modules and ``grpcio``; :mod:`stoker.tensorboard` itself needs neither.
"""

import importlib.util

for _needed in ("tensorboard", "grpc"):
    if importlib.util.find_spec(_needed) is None:
        raise ImportError(
            f"stoker.board needs the {_needed} package, which is not installed; install it "
            "with `pip install 'stoker[tensorboard]'`"
        )

from stoker._public import fixup_module_metadata  # noqa: E402 - after the check above
from stoker.board._page import PageServer  # noqa: E402 - after the check above
from stoker.board._server import DataServer  # noqa: E402 - after the check above

__all__ = ["DataServer", "PageServer"]

fixup_module_metadata(__name__, globals())
