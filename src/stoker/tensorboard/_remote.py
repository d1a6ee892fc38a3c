"""URL log directories through fsspec: tell URLs from paths, and list and open remote files.

A log dir given as ``"<protocol>://..."`` (``s3://bucket/run``, ``gs://...``, ``memory://...``,
any protocol fsspec knows) is remote; ``file://`` URLs and plain paths are local. fsspec is
optional and imported only when a URL is used; a missing fsspec (or a missing protocol package
such as s3fs) raises an ``ImportError`` that says what to install.

Writers stage files locally and upload each closed one (``_destination.RemoteDestination``).
Readers use :func:`stat` to check a URL, :func:`find_runs` / :func:`list_event_files` to find
the event files of a URL log dir and :func:`open_binary` to read one; uploaded event files
never change after they appear, so a reader that has read a remote file to its end is done
with it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, BinaryIO, cast

from stoker.tensorboard._names import is_event_file

__all__ = [
    "check_storage_options",
    "filesystem",
    "find_runs",
    "is_url",
    "join",
    "list_event_files",
    "local_path",
    "open_binary",
    "stat",
]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_INSTALL_HINT = "pip install 'stoker[fsspec]'"
# Packages that provide fsspec's common cloud protocols, for the install hint.
_PROTOCOL_PACKAGES = {
    "s3": "s3fs",
    "s3a": "s3fs",
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "az": "adlfs",
    "abfs": "adlfs",
    "abfss": "adlfs",
    "hf": "huggingface_hub",
    "http": "aiohttp",  # fsspec's HTTPFileSystem is built on aiohttp (fsspec's http extra)
    "https": "aiohttp",
}


def is_url(path: Any) -> bool:
    """Tell whether a log dir is a URL, read and written through fsspec, rather than a path.

    ``"<protocol>://..."`` (``s3://bucket/run``, ``gs://...``, ``memory://...``) is a URL;
    plain paths, ``os.PathLike`` objects and ``file://`` URLs are local.

    Example:
        >>> is_url("s3://bucket/run"), is_url("runs/exp1"), is_url("file:///tmp/run")
        (True, False, False)
    """
    return isinstance(path, str) and bool(_URL.match(path)) and not path.startswith("file://")


def local_path(path: str) -> str:
    """Return ``path`` with a leading ``file://`` removed."""
    return path[len("file://") :] if path.startswith("file://") else path


def _import_fsspec(url: str) -> Any:
    try:
        import fsspec  # noqa: PLC0415 - optional dependency, needed only for URL log dirs
    except ImportError as err:
        if err.name not in (None, "fsspec"):
            raise ImportError(
                f"log dir {url!r} needs fsspec, whose import failed: {err}; reinstall it with "
                f"{_INSTALL_HINT}"
            ) from err
        raise ImportError(
            f"log dir {url!r} is a URL, which needs fsspec; install it with {_INSTALL_HINT}"
            " (and s3fs for s3://, gcsfs for gs://, aiohttp for http://)"
        ) from err
    return fsspec


def check_storage_options(storage_options: object) -> None:
    """Raise TypeError unless ``storage_options`` is a mapping of fsspec options or None."""
    if storage_options is not None and not isinstance(storage_options, Mapping):
        raise TypeError(
            f"storage_options must be a dict of fsspec filesystem options or None, got "
            f"{storage_options!r}; pass e.g. {{'endpoint_url': 'http://127.0.0.1:9000'}}"
        )


def filesystem(url: str, storage_options: Mapping[str, Any] | None = None) -> tuple[Any, str]:
    """Return the fsspec filesystem of ``url`` and the path inside it (no trailing slash).

    Args:
        url: A URL such as ``"s3://bucket/run"``.
        storage_options: Keyword arguments for the filesystem, e.g.
            ``{"endpoint_url": "http://127.0.0.1:9000"}`` for s3fs.

    Raises:
        ImportError: If fsspec or the protocol's package is missing, with what to install.
        TypeError: If ``storage_options`` is not a mapping.
    """
    check_storage_options(storage_options)
    fsspec = _import_fsspec(url)
    try:
        fs, path = fsspec.core.url_to_fs(url, **dict(storage_options or {}))
    except ImportError as err:
        protocol = url.split("://", 1)[0].lower()
        package = _PROTOCOL_PACKAGES.get(protocol)
        if package is None:  # fsspec's own message, and the import it failed, name it
            cause = f" ({err.__cause__})" if err.__cause__ is not None else ""
            raise ImportError(
                f"log dir {url!r} needs a package that fsspec's {protocol}:// filesystem "
                f"imports: {err}{cause}; install that package with pip"
            ) from err
        raise ImportError(
            f"log dir {url!r} needs {package}; install it with pip install {package} "
            f"(fsspec itself comes with {_INSTALL_HINT})"
        ) from err
    return fs, str(path).rstrip("/")


def _url_of(fs: Any, path: str) -> str:
    return str(fs.unstrip_protocol(path))


def stat(url: str, storage_options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Return fsspec's ``info`` of ``url``: a file or a directory (prefix) in its store.

    Unlike fsspec's ``exists``, which answers False for any error, this lets a store's own
    errors (no credentials, an unreachable server) through.

    Raises:
        FileNotFoundError: If ``url`` names nothing.
        ImportError: If fsspec or the protocol's package is missing.
    """
    fs, path = filesystem(url, storage_options)
    fs.invalidate_cache(path)
    return dict(fs.info(path))


def find_runs(url: str, storage_options: Mapping[str, Any] | None = None) -> dict[str, list[str]]:
    """Map each run (directory holding event files) under ``url`` to its event files.

    Args:
        url: A URL log dir, or the URL of one event file.
        storage_options: Keyword arguments for the fsspec filesystem.

    Returns:
        Run name (its path relative to ``url`` with "/" separators, ``"."`` for ``url``
        itself) to the full URLs of its event files, sorted by name, which is the order
        TensorBoard reads them in. Runs are sorted by name.
    """
    fs, root = filesystem(url, storage_options)
    fs.invalidate_cache(root)
    if fs.isfile(root):
        return {".": [_url_of(fs, root)]}
    runs: dict[str, list[str]] = {}
    for path in sorted(str(p) for p in fs.find(root)):
        if not is_event_file(path):
            continue
        directory = path.rsplit("/", 1)[0]
        run = "." if directory == root else directory[len(root) + 1 :]
        runs.setdefault(run, []).append(_url_of(fs, path))
    return {run: runs[run] for run in sorted(runs)}


def list_event_files(url: str, storage_options: Mapping[str, Any] | None = None) -> list[str]:
    """Return the full URLs of every event file under ``url`` (or ``[url]`` for a file).

    They are sorted by run, then by name within a run (TensorBoard's reading order).
    """
    return [file for files in find_runs(url, storage_options).values() for file in files]


def open_binary(url: str, storage_options: Mapping[str, Any] | None = None) -> BinaryIO:
    """Open a remote file for reading bytes; use it as a context manager.

    The stream supports ``seek`` (``os.SEEK_END`` included), ``tell`` and ``read``, so a reader
    can resume from a saved offset.
    """
    fs, path = filesystem(url, storage_options)
    return cast(BinaryIO, fs.open(path, "rb"))


def join(base: str, name: str) -> str:
    """Join a sub-run name to a log dir, with "/" for URLs and ``os.path.join`` for paths."""
    if is_url(base):
        return f"{base.rstrip('/')}/{name}"
    return os.path.join(base, name)
