"""stoker.tensorboard in a fresh interpreter: what importing it loads, and its tracebacks.

Each test runs a program in a new Python process: importing stoker.tensorboard and writing an
event loads no heavy package, and a reader error prints under its public name.
"""

from __future__ import annotations

from tb_subprocess import python_stdout


def test_import_loads_no_torch_tensorflow_tensorboard_or_protobuf() -> None:
    """Importing stoker.tensorboard and writing an event pulls in none of the heavy packages."""
    code = (
        "import sys, tempfile\n"
        "import stoker.tensorboard as t\n"
        "w = t.SummaryWriter(tempfile.mkdtemp()); w.add_scalar('x', 1.0, 1); w.close()\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'tensorflow', 'tensorboard', 'google')]\n"
        "print(bad)\n"
    )
    assert python_stdout(code) == "[]"


def test_tracebacks_name_the_public_error_type() -> None:
    """An error raised by the reader prints as stoker.tensorboard.EventFileError."""
    code = (
        "import stoker.tensorboard as t\n"
        "try:\n"
        "    t.Reader('/no/such/dir')\n"
        "except t.EventFileError as err:\n"
        "    import traceback; print(traceback.format_exception_only(type(err), err)[0])\n"
    )
    assert python_stdout(code).startswith("stoker.tensorboard.EventFileError: path must be")
