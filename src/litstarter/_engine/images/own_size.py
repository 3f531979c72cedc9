"""Images kept at their own size (``data.tiles``): each decoded at scale 1 (or resized down so its longer side is
``max_side``), placed at the top left of the cache's stored size (the largest image's, and at least a window) and
padded with 0 (a mask with its ignore index), with the size it really has recorded as its extent.

The cache's arrays stay ``(N, C, H, W)``: one stored size, as for every cache, so its checks, hashes and memory maps
are unchanged; a folder of one image size (the usual case for tiles: satellite scenes, microscopy, inspection
cameras) stores no padding at all. ``<split>``'s entry in the manifest lists each image's ``extents`` ``[h, w]``
(covered by the manifest's digest), where training draws its crops.
"""

from __future__ import annotations

import functools
import os
from collections import Counter
from collections.abc import Callable, Iterable

import numpy as np

from ..tiles import own_size
from .box_files import shown_size
from .channels import read_headers


def read_own_sizes(paths: Iterable[str | os.PathLike], max_side: int) -> tuple[Counter, list[tuple[int, int]]]:
    """Each file's PIL mode (counted) and ``(height, width)`` kept, from headers only (unreadable files are the cache
    build's to report)."""
    modes, sizes = read_headers(paths, oriented=True)
    return modes, [own_size(w, h, max_side) for w, h in sizes]


def stored_size(sizes: list[tuple[int, int]], window: tuple[int, int]) -> tuple[int, int]:
    """The cache's ``(H, W)``: the largest height and width kept, and at least the window."""
    return (max([h for h, _ in sizes] + [window[0]]), max([w for _, w in sizes] + [window[1]]))


def decode_own_size(
    item: tuple,
    channels: int,
    size: tuple[int, int],
    interpolation: str,
    kind,
    decode: Callable,
    max_side: int,
    pad_value: int | None,
) -> tuple:
    """``decode``'s ``(image, reason, facts, target)`` of ``item`` at its own size, padded to ``size`` (``facts`` then
    hold its ``extent``, ``[h, w]``; a mask padded with ``pad_value``, boxes, ``pad_value`` ``None``, as they are);
    a bad file as ``decode`` reports it."""
    shown = shown_size(item[0])
    if shown is None:  # not an image: decode names why
        return decode(item, channels, size, interpolation, kind)
    own = own_size(*shown, max_side)
    own = (min(own[0], size[0]), min(own[1], size[1]))  # the stored size was read from the same headers
    image, reason, facts, target = decode(item, channels, own, interpolation, kind)
    if image is None:
        return image, reason, facts, target
    out = np.zeros((image.shape[0], *size), dtype=np.uint8)
    out[:, : own[0], : own[1]] = image
    if pad_value is not None:  # a mask: its padding is ignored
        mask = np.full(size, pad_value, dtype=np.uint8)
        mask[: own[0], : own[1]] = target
        target = mask
    return out, None, {**facts, "extent": [int(own[0]), int(own[1])]}, target


def own_size_decoder(params: dict, kind, decode: Callable) -> Callable | None:
    """``decode`` at each image's own size where the cache's ``params`` say so (their ``tiles``), else ``None``."""
    tiles = params.get("tiles")
    if not tiles:
        return None
    pad = int(kind.options.ignore_index) if kind.storage == "pixels" else None  # boxes: nothing to pad
    return functools.partial(decode_own_size, decode=decode, max_side=int(tiles["max_side"]), pad_value=pad)
