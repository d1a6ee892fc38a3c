"""fsspec helpers: URLs told from paths, install hints, and listing and opening remote files."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fsspec")
from tb_stores import fresh_stores, remote_files

import stoker.tensorboard as stb
from stoker.tensorboard import _remote

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(autouse=True)
def clean_stores() -> Iterator[None]:
    """Every test starts and ends with empty in-memory stores."""
    yield from fresh_stores()


def test_missing_fsspec_raises_an_import_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without fsspec, a URL log dir says to install stoker[fsspec] and s3fs."""
    monkeypatch.setitem(sys.modules, "fsspec", None)
    with pytest.raises(ImportError, match=r"pip install 'stoker\[fsspec\]'.*s3fs"):
        stb.SummaryWriter("s3://bucket/run")


def test_missing_protocol_package_is_named() -> None:
    """A URL whose fsspec backend is not installed names the package to install."""
    try:
        import gcsfs  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("gcsfs is installed")
    with pytest.raises(ImportError, match="pip install gcsfs"):
        stb.SummaryWriter("gs://bucket/run")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"storage_options": ["anon"]}, TypeError, "storage_options must be a dict"),
        ({"staging_dir": 5}, TypeError, "staging_dir must be a directory path"),
    ],
)
def test_bad_remote_options_raise(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    """Wrongly typed storage options or staging dir for a URL raise a TypeError naming them."""
    with pytest.raises(error, match=match):
        stb.SummaryWriter("memory://bucket/run", **kwargs)
    assert remote_files("memory://bucket") == []


def test_reader_helpers_list_and_open_remote_event_files(tmp_path: Path) -> None:
    """find_runs, list_event_files, open_binary and stat see what the writer uploaded."""
    url = "memory://bucket/logs"
    for run in ("a", "b/c"):
        with stb.SummaryWriter(f"{url}/{run}", max_file_bytes=300) as writer:
            for step in range(20):
                writer.add_scalar("x", step, step)
                writer.flush()
    fs, _ = _remote.filesystem(url)
    fs.pipe_file("/bucket/logs/a/notes.txt", b"not an event file")
    runs = _remote.find_runs(url)
    assert list(runs) == ["a", "b/c"]
    assert all(len(files) > 2 for files in runs.values())
    assert all(
        file.startswith("memory://") and "tfevents" in file for f in runs.values() for file in f
    )
    files = _remote.list_event_files(url)
    assert files == [file for run_files in runs.values() for file in run_files]
    assert _remote.list_event_files(files[0]) == [files[0]]
    assert _remote.stat(url)["type"] == "directory"
    assert _remote.stat(files[0])["type"] == "file"
    with pytest.raises(FileNotFoundError):
        _remote.stat(f"{url}/missing")
    with _remote.open_binary(files[1]) as stream:
        stream.seek(0, os.SEEK_END)
        size = stream.tell()
        stream.seek(8)
        tail = stream.read()
    assert tail == fs.cat_file(files[1])[8:]
    assert size == len(fs.cat_file(files[1]))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("s3://bucket/run", True),
        ("memory://x", True),
        ("gs://b", True),
        ("file:///tmp/run", False),
        ("runs/exp1", False),
        ("C:\\runs\\exp", False),
        (Path("s3:/x"), False),
    ],
)
def test_is_url_tells_remote_log_dirs_from_paths(value: Any, expected: bool) -> None:
    """Only scheme://... strings other than file:// are URL log dirs."""
    assert _remote.is_url(value) is expected


def test_is_url_is_public_and_its_example_holds() -> None:
    """stoker.tensorboard.is_url is the helper the CLI uses; its docstring example is true."""
    import doctest

    assert stb.is_url is _remote.is_url
    finder = doctest.DocTestFinder()
    (test,) = finder.find(stb.is_url, "is_url", globs={"is_url": stb.is_url})
    result = doctest.DocTestRunner().run(test)
    assert (result.attempted, result.failed) == (1, 0)


def _hide_backend(monkeypatch: pytest.MonkeyPatch, protocol: str, module: str) -> None:
    """Make fsspec's ``protocol`` filesystem fail to import, as without ``module`` installed."""
    registry = importlib.import_module("fsspec.registry")  # fsspec.registry is a mapping

    monkeypatch.delitem(registry._registry, protocol, raising=False)
    for name in list(sys.modules):
        if name == module or name.startswith(f"{module}."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    implementation = registry.known_implementations[protocol]["class"].rsplit(".", 1)[0]
    monkeypatch.delitem(sys.modules, implementation, raising=False)


@pytest.mark.parametrize(
    ("url", "module", "hint"),
    [
        ("http://127.0.0.1:1/run", "aiohttp", "install it with pip install aiohttp (fsspec"),
        ("https://example.invalid/run", "aiohttp", "install it with pip install aiohttp (fsspec"),
        ("webdav://example.invalid/run", "webdav4", "Install webdav4 to access WebDAV"),
    ],
)
def test_a_missing_backend_hint_is_a_real_command(
    monkeypatch: pytest.MonkeyPatch, url: str, module: str, hint: str
) -> None:
    """http:// names aiohttp in a pip command that runs; an unknown protocol gets fsspec's hint.

    http:// names aiohttp, the package fsspec's HTTPFileSystem needs, in a pip command that
    runs (it said "pip install the fsspec package for http://"); a protocol with no known
    package passes on fsspec's own hint, which names it.
    """
    _hide_backend(monkeypatch, url.split("://", 1)[0], module)
    with pytest.raises(ImportError) as raised:
        _remote.filesystem(url)
    message = str(raised.value)
    assert hint in message
    assert url in message
    assert "pip install the" not in message
