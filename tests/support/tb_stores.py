"""fsspec stores for tests: in-memory filesystems, no AWS credentials, a local S3 server.

fsspec stores for tests: in-memory filesystems that count or fail uploads, emptied per test;
an environment without AWS credentials; a real S3-compatible server (moto's) on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import fsspec
import pytest
from fsspec.implementations import memory

from stoker.tensorboard import _remote


class CountingMemoryFS(memory.MemoryFileSystem):  # type: ignore[misc]
    """An in-memory filesystem of its own (``countmem://``) that records every upload."""

    protocol = ("countmem",)
    store: ClassVar[dict[str, Any]] = {}
    pseudo_dirs: ClassVar[list[str]] = [""]
    puts: ClassVar[list[str]] = []

    def put_file(self, lpath: str, rpath: str, *args: Any, **kwargs: Any) -> Any:
        """Store the file, then record the upload (a test that sees the record sees the file)."""
        result = super().put_file(lpath, rpath, *args, **kwargs)
        type(self).puts.append(rpath)
        return result


class FailingMemoryFS(memory.MemoryFileSystem):  # type: ignore[misc]
    """A filesystem (``failmem://``) whose uploads always fail."""

    protocol = ("failmem",)
    store: ClassVar[dict[str, Any]] = {}
    pseudo_dirs: ClassVar[list[str]] = [""]

    def put_file(self, lpath: str, rpath: str, *args: Any, **kwargs: Any) -> Any:
        """Fail like a store that is down."""
        raise ConnectionError(f"store unreachable for {rpath}")


def fresh_stores() -> Iterator[None]:
    """Register the test filesystems and empty every store before and after a test.

    Use it from an autouse fixture: ``yield from fresh_stores()``.
    """
    fsspec.register_implementation("countmem", CountingMemoryFS, clobber=True)
    fsspec.register_implementation("failmem", FailingMemoryFS, clobber=True)
    for cls in (memory.MemoryFileSystem, CountingMemoryFS, FailingMemoryFS):
        cls.store.clear()
        cls.pseudo_dirs[:] = [""]
    CountingMemoryFS.puts.clear()
    yield
    for cls in (memory.MemoryFileSystem, CountingMemoryFS, FailingMemoryFS):
        cls.store.clear()


def remote_files(url: str) -> list[str]:
    """Paths of every file under a URL, sorted."""
    fs, root = _remote.filesystem(url)
    return sorted(str(path) for path in fs.find(root))


def download(url: str, dest: Path) -> Path:
    """Copy every file under ``url`` into ``dest``, keeping relative paths."""
    fs, root = _remote.filesystem(url)
    for path in fs.find(root):
        target = dest / str(path)[len(root) + 1 :]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(fs.cat_file(path))
    return dest


def without_aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """An environment where botocore finds no credentials and asks no metadata server.

    s3fs caches its filesystems by their arguments, credentials found included: the cache is
    cleared after, so that later tests with credentials get a filesystem of their own. Use it
    from a fixture: ``yield from without_aws_credentials(monkeypatch, tmp_path)``.
    """
    import s3fs

    for name in list(os.environ):
        if name.startswith("AWS_") and name != "AWS_CA_BUNDLE":
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    s3fs.S3FileSystem.clear_instance_cache()
    yield
    s3fs.S3FileSystem.clear_instance_cache()


S3_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@contextlib.contextmanager
def moto_server(log: Path) -> Iterator[str]:
    """Start moto's S3 server on a free port of 127.0.0.1 and yield its URL once it answers.

    Start moto's S3 server on a free port of 127.0.0.1; yield its URL once it answers
    (within 30 s); stop and reap it on every way out. Its output goes to ``log``.
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, **S3_CREDENTIALS},
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if server.poll() is not None:
                pytest.fail(f"moto server exited with {server.returncode}: {log.read_text()}")
            try:
                with urllib.request.urlopen(f"{url}/moto-api/", timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"moto server did not answer within 30 s: {log.read_text()}")
                time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)
