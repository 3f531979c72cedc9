"""Which mask files are stored in a lossy format: a JPEG (or a lossy WebP, or a JPEG-compressed TIFF) changes pixel
values along every edge it compresses, so a class index would become another (or an index no class has). Such
masks are refused in one line naming them, before any is decoded or anything is cached.

A JPEG is known by its name (``.jpg``, ``.jpeg``, ...); a ``.webp`` or ``.tif`` by its header (either may be
lossless); a lossy file under another name (a JPEG saved as ``.png``) by :func:`.mask_files.mask_indices`, when
it is decoded.
"""

from __future__ import annotations

import struct
from pathlib import Path

from PIL import Image

from litstarter.errors import BadInputError

from .listing import shown

#: Mask extensions that are always lossy (JPEG); a ``.webp`` or ``.tif`` is read to tell (:func:`lossy_format`).
LOSSY_SUFFIXES = frozenset({".jpg", ".jpeg", ".jpe", ".jfif"})
#: Mask extensions whose compression may be lossy or not: their header says.
MAYBE_LOSSY_SUFFIXES = frozenset({".webp", ".tif", ".tiff"})
#: Lossy masks named in full in one refusal.
NAMED_LOSSY = 3
#: Why a lossy mask is refused, and what to do.
LOSSY_WHY = (
    "lossy compression changes pixel values along every edge, so class indices would change; save masks as PNG (or"
    " another lossless format)"
)


def lossy_format(path: Path) -> str | None:
    """``JPEG``, ``lossy WebP`` or ``JPEG-compressed TIFF`` when the file at ``path`` holds one (by its bytes, not
    its name), else ``None`` (unreadable files too: the decode names them)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return None
    if head.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "lossy WebP" if _webp_is_lossy(head) else None
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        try:
            with Image.open(path) as image:
                compression = str(image.info.get("compression", ""))
        except Exception:  # noqa: BLE001 - unreadable: the decode reports it
            return None
        return "JPEG-compressed TIFF" if "jpeg" in compression else None
    return None


def _webp_is_lossy(head: bytes) -> bool:
    """Whether a WebP's image data (its first frame's, if animated) is ``VP8`` (lossy) rather than ``VP8L``."""
    offset = 12
    while offset + 8 <= len(head):
        fourcc, size = head[offset : offset + 4], struct.unpack("<I", head[offset + 4 : offset + 8])[0]
        if fourcc in (b"VP8 ", b"VP8L"):
            return fourcc == b"VP8 "
        if fourcc == b"ANMF":  # a frame: its image chunk follows the frame's 16-byte header
            return head[offset + 24 : offset + 28] == b"VP8 "
        offset += 8 + size + (size & 1)
    return False


def lossy_reason(path: Path) -> str | None:
    """The lossy format of the mask file at ``path`` (``JPEG``, ...), or ``None``: a JPEG is known by its name, a
    ``.webp`` or ``.tif`` by its bytes (a lossy file of another name by :func:`.mask_files.mask_indices`, when
    decoded)."""
    suffix = path.suffix.lower()
    return "JPEG" if suffix in LOSSY_SUFFIXES else lossy_format(path) if suffix in MAYBE_LOSSY_SUFFIXES else None


def refuse_lossy(paths: list[Path], root: Path) -> None:
    """Refuse, in one line, masks stored in a lossy format (the first few named, the rest counted), before any mask
    is decoded or anything is cached.

    Raises:
        BadInputError: a mask is a JPEG, a lossy WebP or a JPEG-compressed TIFF.
    """
    lossy = [(path, found) for path in paths if (found := lossy_reason(path))]
    if not lossy:
        return
    names = [shown(path.relative_to(root)) if path.is_relative_to(root) else shown(path) for path, _ in lossy]
    also = ", ".join(f"'{name}'" for name in names[1:NAMED_LOSSY])
    also += f" and {len(names) - NAMED_LOSSY} more" if len(names) > NAMED_LOSSY else ""
    also = f" (so are {also})" if also else ""
    raise BadInputError(f"mask '{names[0]}' is a {lossy[0][1]}{also}: {LOSSY_WHY}")
