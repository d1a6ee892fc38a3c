"""``s3://`` log dirs served by the board answer as the same files on local disk do.

``s3://`` log dirs served by the board: read through the reader's remote support from a real
S3-compatible server (moto's, on 127.0.0.1), answering as the same files on local disk do.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import board_corpus
import grpc
import pytest
from tb_stores import S3_CREDENTIALS, moto_server
from tensorboard import context
from tensorboard.data import grpc_provider

from stoker.board import DataServer

s3fs = pytest.importorskip("s3fs")

pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
]
KINDS = {
    "scalars": "scalars",
    "text": "tensors",
    "histograms": "tensors",
    "images": "blob_sequences",
    "audio": "blob_sequences",
    "hparams": "tensors",
}


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Moto's S3 server on 127.0.0.1 for this module."""
    with moto_server(tmp_path_factory.mktemp("moto") / "server.log") as url:
        yield url


@pytest.fixture(autouse=True)
def _own_filesystems() -> Iterator[None]:
    """No s3fs instance (which remembers its endpoint) outlives a test of this module."""
    s3fs.S3FileSystem.clear_instance_cache()
    yield
    s3fs.S3FileSystem.clear_instance_cache()


def _upload(endpoint: str, local: Path, bucket: str) -> None:
    fs = s3fs.S3FileSystem(endpoint_url=endpoint, key="testing", secret="testing")
    fs.mkdir(bucket)
    for path in sorted(local.rglob("*")):
        if path.is_file():
            fs.put_file(str(path), f"{bucket}/logs/{path.relative_to(local).as_posix()}")


def _answers(address: str) -> dict[str, Any]:
    ctx = context.RequestContext()
    client = grpc_provider.GrpcDataProvider(
        address, grpc_provider.make_stub(grpc.insecure_channel(address))
    )
    out: dict[str, Any] = {
        "runs": sorted(r.run_name for r in client.list_runs(ctx, experiment_id=""))
    }
    for plugin, kind in KINDS.items():
        read = getattr(client, f"read_{kind}")
        answer = read(ctx, experiment_id="", plugin_name=plugin, downsample=1000)
        if kind == "scalars":  # repr: NaN (the corpus's diverged loss) equals itself
            answer = {run: {tag: [(d.step, d.wall_time, repr(d.value)) for d in data]
                            for tag, data in tags.items()}
                      for run, tags in answer.items()}  # fmt: skip
        if kind == "tensors":
            answer = {run: {tag: [(d.step, d.numpy.tolist()) for d in data]
                            for tag, data in tags.items()}
                      for run, tags in answer.items()}  # fmt: skip
        if kind == "blob_sequences":
            answer = {run: {tag: [[client.read_blob(ctx, blob_key=ref.blob_key) for ref in d.values]
                                  for d in data] for tag, data in tags.items()}
                      for run, tags in answer.items()}  # fmt: skip
        out[plugin] = answer
    return out


def test_an_s3_log_dir_is_served_as_its_local_copy(
    endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The corpus uploaded to a bucket gives what the same files on disk give.

    The corpus uploaded to a bucket: runs, scalars, tensors, and every image and audio blob
    (read back from S3 on demand) are what the same files on disk give.
    """
    local = board_corpus.write_stoker_corpus(tmp_path / "logs")
    for key, value in S3_CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    _upload(endpoint, local, "board")
    with DataServer(local, reload_interval=0) as server:
        expected = _answers(server.address)
    with DataServer("s3://board/logs", reload_interval=0) as server:
        found = _answers(server.address)
    assert found["runs"] == expected["runs"] != []
    assert found == expected
    assert found["images"]["train"]["picture"][0][2][:8] == b"\x89PNG\r\n\x1a\n"


def test_new_runs_in_the_bucket_appear_at_the_next_reload(
    endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run uploaded while the board serves the bucket is listed after the next reload."""
    import time

    import stoker.tensorboard as stb

    for key, value in S3_CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    with stb.SummaryWriter(tmp_path / "first") as writer:
        writer.add_scalar("loss", 1.0, 0)
    _upload(endpoint, tmp_path, "grow")
    ctx = context.RequestContext()
    with DataServer("s3://grow/logs", reload_interval=0.2) as server:
        client = grpc_provider.GrpcDataProvider(
            server.address, grpc_provider.make_stub(grpc.insecure_channel(server.address))
        )
        assert [r.run_name for r in client.list_runs(ctx, experiment_id="")] == ["first"]
        fs = s3fs.S3FileSystem(endpoint_url=endpoint, key="testing", secret="testing")
        with stb.SummaryWriter(tmp_path / "second") as writer:
            writer.add_scalar("loss", 2.0, 0)
        (path,) = (tmp_path / "second").glob("events.*")
        fs.put_file(str(path), f"grow/logs/second/{path.name}")
        deadline = time.monotonic() + 30
        while len(client.list_runs(ctx, experiment_id="")) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        runs = sorted(r.run_name for r in client.list_runs(ctx, experiment_id=""))
    assert runs == ["first", "second"]
