"""The blob routes of TensorBoard's HTTP API, answered from the log dir's files.

TensorBoard's web server answers an image or audio clip (``images/individualImage``,
``audio/individualAudio``, the Time Series page's ``timeseries/imageData``) by asking its data
provider for the blob, which reaches stoker's data server over gRPC and comes back in chunks:
about 5 ms an image on a 2-core machine, most of the time to fill an image dashboard. The page
server answers them itself from the same provider (the blob read again from its event file,
never held), with the content type TensorBoard gives them: an image's from its leading bytes,
as TensorBoard's ``img_mime_type_detector`` tells it with Pillow (BMP, GIF, JPEG and PNG by
name, anything else ``application/octet-stream``); an audio clip's the one the request names,
which must be one TensorBoard allows.

:func:`blob_answer` returns None for every request TensorBoard answers differently (a missing
argument, a content type it refuses, a key that names no blob): those go to TensorBoard's web
server, which answers its own errors.
"""

from __future__ import annotations

import io

from PIL import Image

from stoker.board._provider import Provider, RequestError

__all__ = ["BLOB_ROUTES", "blob_answer", "image_type"]

BLOB_ROUTES = ("images/individualImage", "audio/individualAudio", "timeseries/imageData")
"""The routes answered here, after ``/data/plugin/``."""

# The image formats TensorBoard names (Pillow's format, lower case), and its default.
_IMAGE_TYPES = {"bmp": "image/bmp", "gif": "image/gif", "jpeg": "image/jpeg", "png": "image/png"}
_UNKNOWN_TYPE = "application/octet-stream"
# The content types TensorBoard's audio route serves a clip as.
_AUDIO_TYPES = frozenset({"audio/wav", _UNKNOWN_TYPE})


def image_type(data: bytes) -> str:
    """The content type TensorBoard serves an image's bytes with."""
    try:
        with Image.open(io.BytesIO(data)) as image:  # reads the header only
            name = (image.format or "").lower()
    except Exception:  # anything Pillow cannot open has TensorBoard's default type
        return _UNKNOWN_TYPE
    return _IMAGE_TYPES.get("jpeg" if name == "jpg" else name, _UNKNOWN_TYPE)


def blob_answer(provider: Provider, route: str, args: dict[str, str]) -> tuple[bytes, str] | None:
    """The bytes and content type of a blob route's answer; None for TensorBoard to answer.

    ``args`` holds each query argument's first value.
    """
    if route == "audio/individualAudio":
        key, kind = args.get("blob_key"), args.get("content_type")
        if kind not in _AUDIO_TYPES:
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
    return data, kind or image_type(data)
