"""webdataset pipelines over tar shards, read through each loader; also one rank's entry point.

Run as ``python libs_webdataset_helpers.py SHARD...`` with ``RANK`` and ``WORLD_SIZE`` set (as a
launcher sets them for one rank), it reads the shards through every loader and setting and
writes ``{"door-setting": [keys]}`` as JSON: what that rank saw (``null`` for a door missing
from this tree).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import webdataset as wds
from libs_loaders import SETTINGS, TORCH_SETTINGS, make_loader

SHARDS = 8
PER_SHARD = 5


def write_shards(root: str) -> list[str]:
    """Write :data:`SHARDS` tar shards of :data:`PER_SHARD` samples each; return their paths.

    Sample ``i`` has the key ``s{i:03d}``, the class ``i`` and a text.
    """
    urls = []
    for shard in range(SHARDS):
        path = os.path.join(root, f"shard-{shard:02d}.tar")
        with wds.TarWriter(path) as writer:
            for offset in range(PER_SHARD):
                index = shard * PER_SHARD + offset
                writer.write({"__key__": f"s{index:03d}", "cls": index, "txt": f"sample {index}"})
        urls.append(path)
    return urls


def all_keys() -> list[str]:
    """Every key the shards hold, in order."""
    return [f"s{index:03d}" for index in range(SHARDS * PER_SHARD)]


def pipeline(urls: list[str]) -> Any:
    """Shards split by node (rank), then by worker, read as ``(key, class)`` pairs."""
    return wds.DataPipeline(
        wds.SimpleShardList(urls),
        wds.split_by_node,
        wds.split_by_worker,
        wds.tarfile_to_samples(),
        wds.decode(),
        wds.to_tuple("__key__", "cls"),
    )


def read_keys(door: str, setting: str, urls: list[str]) -> list[str]:
    """The keys a loader of ``door`` with ``setting`` reads, in order; checks each class."""
    keys = []
    for batch_keys, classes in make_loader(door, setting, pipeline(urls), batch_size=3):
        assert [f"s{int(c):03d}" for c in classes] == list(batch_keys), (batch_keys, classes)
        keys.extend(batch_keys)
    return keys


def main(urls: list[str]) -> None:
    """One rank: every door and setting, as JSON on stdout."""
    out: dict[str, Any] = {}
    runs = [("torch", s) for s in TORCH_SETTINGS]
    runs += [(door, s) for door in ("stoker.data", "stoker.torch.data") for s in SETTINGS]
    for door, setting in runs:
        try:
            out[f"{door}-{setting}"] = read_keys(door, setting, urls)
        except ModuleNotFoundError:
            out[f"{door}-{setting}"] = None
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
