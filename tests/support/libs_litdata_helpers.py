"""The litdata tests' dataset, written by ``litdata.optimize`` in a process of its own.

Run as ``python libs_litdata_helpers.py OUT_DIR N``, it writes :func:`sample` of ``0..N-1`` into
``OUT_DIR`` in chunks of 7, with litdata's version check off. A separate process, because
``optimize`` leaves the calling process in a state where forked loader workers start seconds
late (torch's as much as stoker's).
"""

from __future__ import annotations

import os
import sys

import numpy as np


def sample(index: int) -> dict[str, object]:
    """Sample ``index``: its id and a small vector filled with it."""
    return {"index": index, "x": np.full(3, index, dtype=np.float32)}


def main(out_dir: str, count: str) -> None:
    """Optimize ``sample(0..count-1)`` into ``out_dir`` (see the module docstring)."""
    os.environ["LITDATA_DISABLE_VERSION_CHECK"] = "1"  # before litdata reads it
    import litdata

    litdata.optimize(
        fn=sample,
        inputs=list(range(int(count))),
        output_dir=out_dir,
        chunk_size=7,
        num_workers=1,
        verbose=False,
    )


if __name__ == "__main__":
    main(*sys.argv[1:])
