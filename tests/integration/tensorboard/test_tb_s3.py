"""s3:// log dirs against a real S3-compatible server (moto's server mode on 127.0.0.1).

The bucket is versioned, so a file uploaded twice would show two versions: every key having
exactly one version proves that growing files are never re-uploaded on flush.
"""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tb_loaders import tb_scalars
from tb_stores import S3_CREDENTIALS, moto_server
from tb_subprocess import reaped

import stoker.tensorboard as stb
from stoker.tensorboard import _remote
from stoker.tensorboard._proto import EVENT, scan

s3fs = pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

CREDENTIALS = S3_CREDENTIALS
_buckets = itertools.count()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Moto's S3 server on 127.0.0.1 for this module's tests."""
    with moto_server(tmp_path_factory.mktemp("moto") / "server.log") as url:
        yield url


@pytest.fixture
def bucket(endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new versioned bucket, with dummy credentials in the environment."""
    for key, value in CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    name = f"tb-{os.getpid()}-{next(_buckets)}"
    fs = checker(endpoint)
    fs.mkdir(name)
    fs.make_bucket_versioned(name)
    return name


def checker(endpoint: str) -> Any:
    """A version-aware S3 filesystem of its own, for looking at what was uploaded."""
    return s3fs.S3FileSystem(
        endpoint_url=endpoint,
        version_aware=True,
        skip_instance_cache=True,
        key=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        secret=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    )


def download(fs: Any, root: str, dest: Path) -> Path:
    """Copy every object under ``root`` into ``dest``, keeping relative paths."""
    fs.invalidate_cache()
    for path in fs.find(root):
        target = dest / path[len(root) + 1 :]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(fs.cat_file(path))
    return dest


def run_child(code: str, env: dict[str, str]) -> None:
    """Run Python code in a fresh interpreter (bounded) and fail with its stderr if it fails."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **CREDENTIALS, **env},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr


def test_rotated_files_are_uploaded_once_and_tensorboard_reads_them(
    endpoint: str, bucket: str, tmp_path: Path
) -> None:
    """Flushes upload nothing; each rotated file is one S3 object with one version."""
    url = f"s3://{bucket}/run"
    stage = tmp_path / "stage"
    fs = checker(endpoint)
    writer = stb.SummaryWriter(
        url, storage_options={"endpoint_url": endpoint}, max_file_bytes=2048, staging_dir=stage
    )
    for step in range(300):
        writer.add_scalar("loss", step / 10, step)
        if step % 10 == 9:
            writer.flush()
    writer.add_scalar("loss", 30.0, 300)
    writer.flush()
    assert writer.file_writer is not None
    growing = Path(writer.file_writer.event_writer.path)
    assert growing.parent.parent == stage
    # The upload thread's first put makes its own S3 client; on a loaded machine that and moto's
    # reply can take seconds. Poll for the rotated files (30 s at most), flushing all the while,
    # at least ten times: nothing is added, so the growing file stays open and no flush may
    # upload it.
    deadline = time.monotonic() + 30
    for flushes in itertools.count(1):
        writer.flush()
        fs.invalidate_cache()
        uploaded_before_close = {p.rsplit("/", 1)[1] for p in fs.find(f"{bucket}/run")}
        if (uploaded_before_close and flushes >= 10) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert uploaded_before_close
    assert growing.name not in uploaded_before_close
    writer.close()
    assert list(stage.iterdir()) == []
    fs.invalidate_cache()
    keys = fs.find(f"{bucket}/run")
    assert len(keys) >= 5
    assert [len(fs.object_version_info(key)) for key in keys] == [1] * len(keys)
    local = download(fs, f"{bucket}/run", tmp_path / "copy")
    points = tb_scalars(local, "loss")
    assert [step for step, _ in points] == list(range(301))
    assert points[-2][1] == pytest.approx(29.9)
    assert f"{bucket}/run/{growing.name}" in keys


def test_reader_helpers_read_the_uploaded_s3_run(endpoint: str, bucket: str) -> None:
    """find_runs and open_binary list and read the same s3:// URLs the writer wrote."""
    options = {"endpoint_url": endpoint}
    for run in ("a", "b"):
        with stb.SummaryWriter(
            f"s3://{bucket}/logs/{run}", storage_options=options, max_file_bytes=300
        ) as writer:
            for step in range(30):
                writer.add_scalar("x", step, step)
                writer.flush()
    runs = _remote.find_runs(f"s3://{bucket}/logs", options)
    assert list(runs) == ["a", "b"]
    for files in runs.values():
        assert len(files) > 2
        steps = []
        for file in files:
            assert file.startswith(f"s3://{bucket}/logs/")
            with _remote.open_binary(file, options) as stream:
                events = [EVENT.decode(data) for _, data in scan(stream.read()).records]
            assert events[0]["file_version"] == "brain.Event:2"
            steps += [event.get("step", 0) for event in events if "summary" in event]
        assert steps == list(range(30))


def test_reader_reads_the_s3_log_dir_like_a_local_one(
    endpoint: str, bucket: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Reader on an s3:// URL finds the runs and reads every point, as on a local copy."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    url = f"s3://{bucket}/reader"
    for run in ("a", "b/c"):
        with stb.SummaryWriter(f"{url}/{run}", max_file_bytes=400) as writer:
            for step in range(40):
                writer.add_scalar("loss", 1.0 / (step + 1), step)
    reader = stb.Reader(url)
    assert sorted(reader.runs) == ["a", "b/c"]
    for run in ("a", "b/c"):
        series = reader.scalars("loss", run=run)
        assert list(series.step) == list(range(40))
        np.testing.assert_allclose(series.value, [1.0 / (s + 1) for s in range(40)], rtol=1e-6)
    local = download(checker(endpoint), f"{bucket}/reader", tmp_path / "copy")
    local_series = stb.Reader(str(local)).scalars("loss", run="a")
    np.testing.assert_array_equal(local_series.value, reader.scalars("loss", run="a").value)
    with pytest.raises(stb.EventFileError, match="does not exist"):
        stb.Reader(f"s3://{bucket}/no-such-run")
    listing = subprocess.run(
        [sys.executable, "-m", "stoker.cli", "logs", "ls", url],
        capture_output=True, text=True, timeout=60, check=False, env=dict(os.environ),
    )  # fmt: skip
    assert listing.returncode == 0, listing.stderr
    assert [line.split()[0] for line in listing.stdout.splitlines()[1:]] == ["a", "b/c"]


def test_process_exiting_without_close_uploads_its_last_file(
    endpoint: str, bucket: str, tmp_path: Path
) -> None:
    """A program that never calls close() still uploads at exit, even via a host name.

    The endpoint is given by AWS_ENDPOINT_URL_S3 with "localhost", so uploading at exit needs
    a DNS lookup in a thread pool, which Python shuts down before atexit handlers run.
    """
    code = f"""
        import stoker.tensorboard as tb
        writer = tb.SummaryWriter("s3://{bucket}/exit", staging_dir={str(tmp_path)!r})
        for step in range(5):
            writer.add_scalar("x", float(step), step)
    """
    run_child(code, {"AWS_ENDPOINT_URL_S3": endpoint.replace("127.0.0.1", "localhost")})
    fs = checker(endpoint)
    local = download(fs, f"{bucket}/exit", tmp_path / "copy")
    assert tb_scalars(local, "x") == [(step, float(step)) for step in range(5)]
    assert list(tmp_path.glob("stoker-tb-*")) == []


def test_ranks_and_a_forked_child_write_one_s3_experiment(
    endpoint: str, bucket: str, tmp_path: Path
) -> None:
    """Two RANK processes (per_rank) and a forked child each land all their points in S3."""
    code = f"""
        import os
        import stoker.tensorboard as tb
        writer = tb.rank_writer("s3://{bucket}/exp", policy="per_rank", max_file_bytes=500)
        rank = int(os.environ["RANK"])
        for step in range(40):
            writer.add_scalar("x", rank * 100.0 + step, step)
        if rank == 1:
            pid = os.fork()
            if pid == 0:
                for step in range(40, 60):
                    writer.add_scalar("x", rank * 100.0 + step, step)
                writer.close()
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            assert status == 0, status
        writer.close()
    """
    env = {"AWS_ENDPOINT_URL_S3": endpoint, "WORLD_SIZE": "2"}
    with reaped() as procs:
        for rank in range(2):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", textwrap.dedent(code)],
                    env={**os.environ, **CREDENTIALS, **env, "RANK": str(rank)},
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        for proc in procs:
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
    fs = checker(endpoint)
    local = download(fs, f"{bucket}/exp", tmp_path / "copy")
    assert sorted(p.name for p in local.iterdir()) == ["rank_0", "rank_1"]
    assert tb_scalars(local / "rank_0", "x") == [(s, float(s)) for s in range(40)]
    rank1 = sorted(tb_scalars(local / "rank_1", "x"))
    assert rank1 == [(s, 100.0 + s) for s in range(60)]
    pids = {name.split(".")[5] for name in os.listdir(local / "rank_1")}
    assert len(pids) == 2


def test_projector_files_and_hparams_subruns_land_in_s3(
    endpoint: str, bucket: str, tmp_path: Path
) -> None:
    """add_embedding writes its files and config entries, and add_hparams its sub-run, to S3."""
    options = {"endpoint_url": endpoint}
    for tag in ("first", "second"):
        with stb.SummaryWriter(f"s3://{bucket}/emb", storage_options=options) as writer:
            writer.add_embedding([[1.0, 2.0], [3.0, 4.0]], metadata=["a", "b"], tag=tag)
            writer.add_hparams({"tag": tag}, {"score": 1.0})
    local = download(checker(endpoint), f"{bucket}/emb", tmp_path / "copy")
    projector_pb2 = pytest.importorskip("tensorboard.plugins.projector.projector_config_pb2")
    text_format = pytest.importorskip("google.protobuf.text_format")
    config = text_format.Parse(
        (local / "projector_config.pbtxt").read_text(), projector_pb2.ProjectorConfig()
    )
    assert [e.tensor_name for e in config.embeddings] == ["first:00000", "second:00000"]
    for embedding in config.embeddings:
        assert (local / embedding.tensor_path).read_text() == "1.0\t2.0\n3.0\t4.0\n"
        assert (local / embedding.metadata_path).read_text() == "a\nb\n"
    subruns = [p for p in local.iterdir() if p.is_dir() and not p.name.isdigit()]
    assert len(subruns) == 2
    assert all(tb_scalars(run, "score") == [(0, 1.0)] for run in subruns)
