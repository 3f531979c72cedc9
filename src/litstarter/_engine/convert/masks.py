"""Index PNG masks as ``litstarter convert`` writes them: ``<split>/images/<name>`` beside
``<split>/masks/<stem>.png`` (``images/`` beside ``masks/`` at the top for images the source gives no split), and
``classes.txt``, the layout :mod:`..images.mask_folders` reads back.

Each mask is a mode ``L`` PNG of class indices, its image's size as the file stores it: a mask is given its image's
EXIF orientation when read, so one drawn on the image as shown is turned back here. Ignored pixels keep the ignore
index (``data.ignore_index``, 255 by default).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from ..images.mask_files import ORIENTATION
from .output import copy_image
from .plan import Plan
from .source import Source, stored_size

#: EXIF orientation -> the transpose that undoes :data:`..images.mask_files.ORIENTATION`'s.
UNDO = {
    orientation: {
        Image.Transpose.ROTATE_90: Image.Transpose.ROTATE_270,
        Image.Transpose.ROTATE_270: Image.Transpose.ROTATE_90,
    }.get(turn, turn)
    for orientation, turn in ORIENTATION.items()
}


def write_masks(out: Path, source: Source, plan: Plan) -> str:
    """The index-PNG layout of ``source`` (masks) under ``out``; what was written, in a phrase."""
    for split, items in plan.splits.items():
        folder = out / split if split else out
        (folder / "masks").mkdir(parents=True, exist_ok=True)
        for item in items:
            mask = source.masks.shown(item)
            _, orientation = stored_size(item)
            if orientation in UNDO:
                mask = np.asarray(Image.fromarray(mask).transpose(UNDO[orientation]))
            copy_image(item, folder / "images")
            pixels = Image.fromarray(np.ascontiguousarray(mask, dtype=np.uint8))  # (H, W) uint8: mode L
            pixels.save(folder / "masks" / f"{item.image.stem}.png")
    (out / "classes.txt").write_text("".join(f"{n}\n" for n in source.names), encoding="utf-8")
    folders = plan.folders()
    return f"{folders}/{{images,masks}}/, classes.txt" if folders else "{images,masks}/, classes.txt"
