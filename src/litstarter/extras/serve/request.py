"""One ``POST /predict`` request, checked and decoded on its own, before anything reaches a batch.

Every way a request can be wrong ends here as a :class:`RequestError`: a 4xx status and one line saying what
was wrong and what was expected. A bad request therefore fails only itself, never the batch it would have
joined. Torch-free (numpy + Pillow): serving an ONNX model never imports torch.

| what is wrong | status |
| --- | --- |
| ``Content-Type`` is neither ``image/*`` nor ``application/json`` | 415 |
| the body is empty, not JSON (too deeply nested, a too long number), has no ``"image"``, or not base64 | 400 |
| the bytes are not an image Pillow can read, or a truncated one | 400 |
| the body is over ``--max_bytes``, or the image over ``--max_pixels`` (a decompression bomb) | 413 |

:class:`Body` reads the body with its limit, and reads a refused one to its end so that the client sees the
answer rather than a reset connection.
"""

from __future__ import annotations

import binascii
import io
import json
import sys
from collections.abc import Awaitable, Callable

import numpy as np
from PIL import Image, UnidentifiedImageError
from starlette.concurrency import run_in_threadpool

from litstarter._engine.images.preprocess import ImageTooLarge
from litstarter.extras.deploy.contract import ModelContract

JSON_TYPE = "application/json"
#: A refused body is read to its end (so the client gets the answer) if at most this much of it is left...
DISCARD_LIMIT = 8 * 1024 * 1024
#: ... and it arrives within this many seconds; otherwise the connection is closed after the answer.
DISCARD_SECONDS = 5.0
#: ASCII whitespace, dropped from base64 before it is checked.
NO_WHITESPACE = str.maketrans("", "", " \t\n\r\v\f")
EXPECTED_BODY = 'send image bytes as Content-Type: image/*, or {"image": "<base64>"} as Content-Type: application/json'


class RequestError(Exception):
    """A request we refuse: its HTTP status and a one-line reason for the client.

    Args:
        status: The 4xx status code.
        message: One line naming what was wrong and what was expected.
    """

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def media_type(content_type: str | None) -> str:
    """``"image/PNG; q=1"`` -> ``"image/png"``; ``""`` when there is none."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def check_content_type(content_type: str | None) -> str:
    """The request's media type if we take it: ``image/*`` or ``application/json``.

    Raises:
        RequestError: 415 for anything else, a missing header included.
    """
    kind = media_type(content_type)
    if kind.startswith("image/") or kind == JSON_TYPE:
        return kind
    raise RequestError(415, f"Content-Type {content_type or '(none)'!r} is not accepted: {EXPECTED_BODY}")


def image_bytes(kind: str, body: bytes) -> bytes:
    """The encoded image in a body: the body itself for ``image/*``, the base64 ``"image"`` field for JSON.

    A ``data:image/...;base64,`` prefix (what browsers produce) is accepted, and so are spaces and line breaks
    in the base64 (MIME base64, what the ``base64`` command writes, breaks lines at 76 characters).

    Raises:
        RequestError: 400 for an empty body, invalid JSON, a missing ``"image"`` string or invalid base64.
    """
    if not body:
        raise RequestError(400, f"the body is empty: {EXPECTED_BODY}")
    if kind != JSON_TYPE:
        return body
    try:
        payload = json.loads(body, strict=False)  # line breaks inside the string: curl -d "$(base64 < file)"
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RequestError(400, f"the body is not valid JSON ({err}): {EXPECTED_BODY}") from None
    except RecursionError:
        raise RequestError(400, f"the JSON body is nested too deeply to read: {EXPECTED_BODY}") from None
    except ValueError as err:  # Python refuses integers of over sys.get_int_max_str_digits() digits
        digits = f"holds a number of over {sys.get_int_max_str_digits()} digits"
        reason = digits if "digits" in str(err) else "is unreadable"
        raise RequestError(400, f"the JSON body {reason}: {EXPECTED_BODY}") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("image"), str):
        raise RequestError(400, f'the JSON body has no "image" string: {EXPECTED_BODY}')
    text = payload["image"]
    if text.startswith("data:") and "," in text:
        text = text.split(",", 1)[1]
    try:
        data = decode_base64(text, whitespace=True)
    except (binascii.Error, ValueError) as err:
        raise RequestError(400, f'"image" is not valid base64 ({err})') from None
    if not data:
        raise RequestError(400, f'"image" is empty: {EXPECTED_BODY}')
    return data


def decode_base64(text: str, whitespace: bool = False) -> bytes:
    """Strict base64 (the alphabet only, padding only at the end and correct), checked in C; ``whitespace``: ASCII
    whitespace is dropped first, only where the text has any.

    ``base64.b64decode(validate=True)`` checks the alphabet with a regular expression: 25 of the 60 us a 2 KB JSON
    body took. ``binascii``'s ``strict_mode`` refuses all it refuses, and misplaced padding too.

    Raises:
        binascii.Error: Not valid base64.
        ValueError: Not ASCII.
    """
    try:
        return binascii.a2b_base64(text, strict_mode=True)
    except (binascii.Error, ValueError):
        if not whitespace:
            raise
    return binascii.a2b_base64(text.translate(NO_WHITESPACE), strict_mode=True)


#: Images up to this many pixels are decoded on the event loop (a 64 px JPEG takes about 0.1 ms): handing each to a
#: thread cost more than decoding it, with 32 threads contending for the GIL. Larger ones go to a thread.
INLINE_PIXELS = 256 * 256


async def decode_request_image(data: bytes, contract: ModelContract, max_pixels: int) -> np.ndarray:
    """:func:`decode_image` on the event loop for an image of at most :data:`INLINE_PIXELS` (its header read
    once, here), in a thread for a larger one."""
    try:
        image = Image.open(io.BytesIO(data))  # the header only
    except Exception:  # noqa: BLE001 - not an image: decode_image gives the request its error at once
        return decode_image(data, contract, max_pixels)
    if image.width * image.height <= INLINE_PIXELS:
        return decode_image(image, contract, max_pixels)
    return await run_in_threadpool(decode_image, image, contract, max_pixels)


def decode_image(data: bytes | Image.Image, contract: ModelContract, max_pixels: int) -> np.ndarray:
    """Decode, resize and crop exactly as ``litstarter infer`` does a file: ``(C, H, W)`` uint8. ``data`` is the
    file's bytes, or the image opened from them (its header read, nothing decoded).

    Raises:
        RequestError: 413 for an image over ``max_pixels``; 400 for bytes that are not a readable image.
    """
    try:
        return contract.load_image(data if isinstance(data, Image.Image) else io.BytesIO(data), max_pixels=max_pixels)
    except (ImageTooLarge, Image.DecompressionBombError) as err:
        raise RequestError(413, f"the image is too large: {err} (--max_pixels)") from None
    except UnidentifiedImageError:
        raise RequestError(400, f"the {len(data)} bytes are not an image format Pillow can read") from None
    except Exception as err:  # noqa: BLE001 - any decode failure (truncated, corrupt) is this request's own fault
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise RequestError(400, f"the image cannot be decoded: {reason}") from None


class Body:
    """A request body read through its ASGI ``receive``, so that a refused one can still be read to its end.

    Args:
        receive: The request's ASGI ``receive`` (``starlette.requests.Request.receive``).

    Answering before the client has sent its whole body and then closing makes the kernel reset the connection,
    and the client may never see the answer. So a refused body is read and dropped (up to :data:`DISCARD_LIMIT`)
    before the answer goes out.
    """

    def __init__(self, receive: Callable[[], Awaitable[dict]]) -> None:
        self._receive = receive
        self.ended = False

    async def _chunks(self):
        while not self.ended:
            message = await self._receive()
            if message["type"] == "http.disconnect":
                raise RequestError(400, "the client disconnected before the body ended")
            self.ended = not message.get("more_body", False)
            yield message.get("body", b"")

    async def read(self, max_bytes: int) -> bytes:
        """The whole body, refused (413) as soon as it is known to be over ``max_bytes``."""
        chunks, size = [], 0
        async for chunk in self._chunks():
            size += len(chunk)
            if size > max_bytes:
                raise RequestError(413, f"the body is over the limit of {max_bytes} bytes (--max_bytes)")
            chunks.append(chunk)
        return b"".join(chunks)

    async def discard(self, limit: int) -> bool:
        """Read and drop the rest of the body, up to ``limit`` bytes; whether it ended."""
        size = 0
        try:
            async for chunk in self._chunks():
                size += len(chunk)
                if size > limit:
                    return False
        except RequestError:
            return False
        return True
