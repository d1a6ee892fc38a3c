"""The blob routes of TensorBoard's HTTP API, answered from the log dir's files.

TensorBoard's web server answers an image or audio clip (``images/individualImage``,
``audio/individualAudio``, the Time Series page's ``timeseries/imageData``) by asking its data
provider for the blob, which reaches stoker's data server over gRPC and comes back in chunks:
about 5 ms an image on a 2-core machine, most of the time to fill an image dashboard. The page
server answers them itself from the same provider (the blob read again from its event file,
never held), with the content type TensorBoard gives them: an image's from its bytes, by
TensorBoard's own ``tensorboard.util.img_mime_type_detector`` (TensorBoard runs in the same
Python environment; a TensorBoard without that module, before 2.20, types images its older way
and answers the image routes itself); an audio clip's the one the request names, which must be
one TensorBoard allows.

:func:`blob_answer` returns None for every request TensorBoard answers differently (a missing
argument, a content type it refuses, a key that names no blob): those go to TensorBoard's web
server, which answers its own errors.
"""

from __future__ import annotations

from collections.abc import Callable

from stoker.board._provider import Provider, RequestError

__all__ = ["BLOB_ROUTES", "blob_answer"]

BLOB_ROUTES = ("images/individualImage", "audio/individualAudio", "timeseries/imageData")
"""The routes answered here, after ``/data/plugin/``."""

# The content types TensorBoard's audio route serves a clip as.
_AUDIO_TYPES = frozenset({"audio/wav", "application/octet-stream"})


def _image_typer() -> Callable[[bytes], str] | None:
    """TensorBoard's function from an image's bytes to its content type; None without it."""
    try:
        from tensorboard.util import img_mime_type_detector  # noqa: PLC0415 - optional
    except ImportError:
        return None
    typer: Callable[[bytes], str] = img_mime_type_detector.from_bytes
    return typer


_image_type = _image_typer()


def blob_answer(provider: Provider, route: str, args: dict[str, str]) -> tuple[bytes, str] | None:
    """The bytes and content type of a blob route's answer; None for TensorBoard to answer.

    ``args`` holds each query argument's first value.
    """
    if route == "audio/individualAudio":
        key, kind = args.get("blob_key"), args.get("content_type")
        if kind not in _AUDIO_TYPES:
            return None
    elif _image_type is None:
        return None
    else:
        key = args.get("imageId" if route == "timeseries/imageData" else "blob_key")
        kind = None
    if not key:
        return None
    try:
        data = provider.blob_bytes(key)
    except RequestError:
        return None
    if kind is not None:
        return data, kind
    return None if _image_type is None else (data, _image_type(data))
