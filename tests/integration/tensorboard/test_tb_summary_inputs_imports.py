"""The summary media modules in a fresh interpreter: importing them loads no heavy package.

A new Python process imports the image, video, audio and embedding modules and reports which
of torch, matplotlib, tensorboard and protobuf it loaded: none.
"""

from __future__ import annotations

from tb_subprocess import python_stdout


def test_media_modules_do_not_import_heavy_packages() -> None:
    """Importing the media modules loads none of torch, matplotlib, tensorboard, protobuf."""
    code = (
        "import sys\n"
        "import stoker.tensorboard._summary.images, stoker.tensorboard._summary.videos\n"
        "import stoker.tensorboard._summary.wav, stoker.tensorboard._summary.embedding\n"
        "heavy = {'torch', 'matplotlib', 'tensorboard', 'google.protobuf'} & set(sys.modules)\n"
        "print(sorted(heavy))\n"
    )
    assert python_stdout(code) == "[]"
