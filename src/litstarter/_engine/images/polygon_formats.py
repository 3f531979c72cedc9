"""The annotation formats a task of masks reads besides mask files, behind the label formats' one interface
(:class:`.label_formats.LabelFormat`): LabelMe JSON, CVAT for images 1.1 XML and COCO json, each found where its box
reader finds it and read by its own module into :class:`.polygon_files.Drawings` (a drawn mask per image).

Where a task trains on masks (the CLI says so: :func:`.label_formats.expecting`), a folder is read by what it holds:

* the polygon formats first (:func:`read_drawings`; two in one folder are refused, naming both and
  ``data.box_format``, which picks one);
* else mask files (``images/`` beside ``masks/``, or both in each split folder; an ``image,mask`` labels CSV);
* else it is refused in one line naming the layouts and formats segmentation reads and what the folder holds
  (:func:`no_masks`), never read as another task's layout (class folders, boxes).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from litstarter.errors import BadInputError, UsageError

from .class_folders import visible_dirs
from .label_formats import BOX_FORMAT_NAMES, Found, LabelFormat, box_formats, holds
from .listing import shown
from .mask_folders import is_mask_pair
from .polygon_files import Drawings
from .splits import canonical_split

#: The polygon formats' modules, in the order messages list them.
POLYGON_FORMATS = ("labelme_polygons", "cvat_polygons", "coco_polygons")
#: The mask-file layouts, as messages name them.
MASK_FILES = (
    "index or palette PNGs (images/ beside masks/, or {train,val,test}/{images,masks}/, or data.labels: <file>.csv"
    " with image,mask columns)"
)


def polygon_formats() -> list[LabelFormat]:
    """Every polygon format, in :data:`POLYGON_FORMATS`' order."""
    return [importlib.import_module(f"{__package__}.{module}").FORMAT for module in POLYGON_FORMATS]


def find_polygons(root: Path, labels: str | None, chosen: str | None = None) -> Found | None:
    """The polygon format ``root`` holds, or the file ``labels`` names is; ``None`` when none.

    Args:
        root: ``data.root``.
        labels: ``data.labels``: the file decides (``None``: the folder does).
        chosen: ``data.box_format``: only this format is looked for (one that is no polygon format: none is).

    Raises:
        UsageError: ``chosen`` names no format.
        BadInputError: two polygon formats in the folder and none chosen.
    """
    formats = polygon_formats()
    if chosen is not None:
        if chosen not in BOX_FORMAT_NAMES:
            raise UsageError(f"data.box_format must be one of {list(BOX_FORMAT_NAMES)} or null (any), got {chosen!r}")
        formats = [f for f in formats if f.name == chosen]
    if labels is not None:
        path = root / labels
        fmt = next((f for f in formats if path.is_file() and f.claims(path)), None)
        return Found(fmt, path, shown(labels), ((path, None),)) if fmt else None
    found = [f for f in (fmt.detect(root) for fmt in formats) if f is not None]
    if len(found) > 1:
        both = " and ".join(f"{f.format.title} ({f.what})" for f in found)
        choices = " or ".join(f"data.box_format: {f.format.name}" for f in found)
        raise BadInputError(f"data.root '{root}' holds shapes in {len(found)} formats: {both}; choose one: {choices}")
    return found[0] if found else None


def read_drawings(root: Path, labels: str | None, chosen: str | None = None) -> tuple[Drawings, Path] | None:
    """The drawn masks of the polygon format ``root`` holds (or ``labels`` is) and what the layout line names;
    ``None`` when none (:func:`find_polygons`).

    Raises:
        BadInputError: as :func:`find_polygons`, or what the format's reader refuses.
    """
    found = find_polygons(root, labels, chosen)
    return None if found is None else (found.format.read(root, found), found.path)


def holds_mask_files(root: Path) -> bool:
    """Whether ``root`` is a mask-file layout: ``images/`` beside ``masks/``, or both in every split folder."""
    if is_mask_pair(root):
        return True
    dirs = visible_dirs(root)
    splits = [d for d in dirs if canonical_split(d.name)]
    return bool(splits) and len(splits) == len(dirs) and all(is_mask_pair(d) for d in splits)


def refuse_unless_masks(root: Path, labels: str | None, task: str) -> None:
    """Refuse ``root`` for ``task`` (which trains on masks) unless it holds mask files or ``labels`` names a file
    (a labels CSV: its reader decides), in one line (:func:`no_masks`).

    Raises:
        BadInputError: ``root`` holds no layout of masks.
    """
    if labels is None and not holds_mask_files(root):
        raise BadInputError(no_masks(root, task))


def no_masks(root: Path, task: str) -> str:
    """The refusal of a folder holding no masks, for ``task``: what it reads, what the folder holds, and the box
    formats found there (boxes are no masks)."""
    reads = "; ".join(f"{f.title} ({f.shapes}; {f.reads})" for f in polygon_formats())
    boxes = [(f, found) for f in box_formats() if (found := f.detect(root)) is not None]
    found = "; ".join(f"{f.title} ({found.what})" for f, found in boxes)
    detection = f". It holds boxes, {found}, which are no masks (configs/task/detection.yaml trains on them)"
    detection = detection if boxes else ""
    return (
        f"data.root '{root}' holds none of the layouts {task} reads; found there: {holds(root)}{detection}. It reads"
        f" {MASK_FILES}; {reads} (docs/segmentation.md)"
    )
