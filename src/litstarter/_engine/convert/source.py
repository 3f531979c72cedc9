"""A labelled folder read for ``litstarter convert`` as ``fit`` reads it: its layout found
(:func:`..images.layout.detect_layout`, told whether the folder is read for boxes or masks), its images listed with
their splits and targets by the layout's own listing, bad boxes or shapes refused (or left out, counted) as
``data.on_bad_box`` says.

Each image's target stays as its layout lists it: boxes ``[[x1, y1, x2, y2, class], ...]`` in its pixels as shown
(after its EXIF orientation); a drawn mask's shapes (LabelMe, CVAT, COCO polygons); a mask file's path (index or
palette PNGs). :class:`MaskDecoder` gives either kind of mask as ``(H, W)`` class indices as the image is shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from litstarter.errors import BadInputError

from ..images.box_listing import list_boxes
from ..images.drawn_masks import drawn_indices, is_drawn
from ..images.label_formats import expecting
from ..images.labels_listing import list_labels_file
from ..images.layout import Layout, detect_layout
from ..images.listing import Walker, shown
from ..images.mask_classes import mask_classes
from ..images.mask_files import ORIENTATION, MaskOptions, mask_indices
from ..images.mask_folders import list_mask_folders, mask_files
from ..images.splits import SPLIT_NAMES, SourceFile
from ..targets import target_kind

#: EXIF's orientation tag.
ORIENTATION_TAG = 0x0112


@dataclass(frozen=True)
class Item:
    """One image as read: its file, its path under ``data.root`` as listed (for messages), its split (``None``: the
    fractions split it at fit time) and its target as its layout lists it."""

    image: Path
    name: str
    split: str | None
    target: object


@dataclass
class Source:
    """What a folder holds, read once.

    Args:
        form: The format read (``voc``, ``coco``, ``labelme``, ``masks`` for index or palette PNGs, ...).
        targets: ``boxes`` or ``mask``.
        names: The class names, in index order.
        ids: The format's own class ids in index order (COCO's category ids), where it has them; else ``None``.
        items: Every image, by split (train, val, test, then unsplit), each in path order.
        note: What was left out on the way (bad boxes under ``data.on_bad_box: skip``), ``""`` when nothing.
        masks: Decodes a mask target, for a source of masks.
    """

    form: str
    targets: str
    names: list[str]
    ids: list | None = None
    items: list[Item] = field(default_factory=list)
    note: str = ""
    masks: MaskDecoder | None = None

    def describe(self) -> str:
        """What was read, in a phrase: ``voc boxes (30 images, 52 boxes, 3 classes: bar, dot, ring)``."""
        if self.targets == "boxes":
            counted = f", {sum(len(item.target) for item in self.items)} boxes"
            what = "boxes CSV boxes" if self.form == "boxes" else f"{self.form} boxes"
        elif self.form == "masks":
            counted, what = "", "index PNG masks"
        else:
            counted = f", {sum(len(item.target['shapes']) for item in self.items)} shapes"
            what = f"{self.form} shapes"
        classes = f"{len(self.names)} classes: {', '.join(self.names)}"
        return f"{what} ({len(self.items)} images{counted}, {classes})"


@dataclass(frozen=True)
class MaskDecoder:
    """Mask targets as ``(H, W)`` uint8 class indices as the image is shown (after its EXIF orientation).

    Args:
        root: ``data.root``, which mask files' paths are under.
        options: The classes, the ignore index, the palette, binary masks (:class:`..images.mask_files.MaskOptions`).
    """

    root: Path
    options: MaskOptions

    def shown(self, item: Item) -> np.ndarray:
        """``item``'s mask, drawn or decoded, checked as the cache build checks it.

        Raises:
            BadInputError: the mask cannot be read, is not its image's size, or holds an index that is no class
                (nor the ignore index), naming the file.
        """
        target = item.target
        if is_drawn(target):
            try:
                return drawn_indices(target, self.options.ignore_index)
            except ValueError as err:
                raise BadInputError(f"the shapes of '{target['annotation'][0]}' for '{item.name}': {err}") from None
        mask = shown(target[0])
        try:
            indices = mask_indices(self.root / target[0], self.options)
        except Exception as err:  # noqa: BLE001 - any decode failure is this mask's, named
            raise BadInputError(f"mask '{mask}': {err}") from None
        size, orientation = stored_size(item)
        if (indices.shape[1], indices.shape[0]) != size:
            raise BadInputError(
                f"mask '{mask}' is {indices.shape[1]}x{indices.shape[0]} but its image '{item.name}' is"
                f" {size[0]}x{size[1]}; a mask has its image's size"
            )
        k, ignore = self.options.num_classes, self.options.ignore_index
        wrong = (indices >= k) & (indices != ignore)
        if wrong.any():
            raise BadInputError(
                f"mask '{mask}' holds index {int(indices[wrong].max())}, but there are {k} classes (0-{k - 1};"
                f" {ignore} is ignored)"
            )
        if orientation in ORIENTATION:
            indices = np.asarray(Image.fromarray(indices).transpose(ORIENTATION[orientation]))
        return indices


def stored_size(item: Item) -> tuple[tuple[int, int], int]:
    """The image file's ``(width, height)`` as stored (before its EXIF orientation) and that orientation (1: none).

    Raises:
        BadInputError: the image cannot be opened.
    """
    try:
        with Image.open(item.image) as image:
            return image.size, int(image.getexif().get(ORIENTATION_TAG, 1))
    except Exception as err:  # noqa: BLE001 - an unreadable image is named, whatever the reason
        raise BadInputError(f"image '{item.name}' cannot be read: {err}") from None


def read_source(
    root: Path, labels: str | None, box_format: str | None, targets: str, on_bad_box: str, ignore_index: int
) -> Source:
    """Everything ``root`` holds for ``targets`` (``boxes`` or ``mask``), as ``fit`` reads it.

    Raises:
        UsageError: ``box_format`` names no format; ``ignore_index`` is a class's index.
        BadInputError: ``root`` holds nothing of ``targets`` (the line says what it reads and what is there);
            what a format's reader refuses; bad boxes or shapes under ``on_bad_box: error``.
    """
    task = f"litstarter convert --targets {'masks' if targets == 'mask' else targets}"
    with expecting(targets, task):
        layout = detect_layout(root, labels, box_format=box_format)
    walker = Walker(root)
    if layout.kind in ("boxes", "polygons") and (layout.kind == "boxes") == (targets == "boxes"):
        listed, note = list_boxes(root, layout.annotated, walker, on_bad_box, f"'{layout.labels}'")
        form = layout.form if layout.kind == "boxes" else layout.annotated.format
        source = Source(form, targets, layout.annotated.names, layout.annotated.ids, note=note)
        if targets == "mask":
            source.masks = MaskDecoder(root, configured(root, source.names, {"ignore_index": ignore_index}))
    elif layout.kind == "masks" or (layout.kind == "labels" and layout.form == "masks"):
        listed = mask_listing(root, layout, walker)
        names, options = mask_options(root, layout, ignore_index)
        source = Source("masks", targets, names, masks=MaskDecoder(root, options))
    else:
        where = f"data.labels '{layout.labels}'" if layout.labels else f"data.root '{root}'"
        raise BadInputError(f"{where} holds {layout.target_kind} targets ({layout.form}), not {task.split()[-1]}")
    source.items = [item for split in (*SPLIT_NAMES, None) for item in _items(root, listed.get(split, []), split)]
    source.note = "; ".join(filter(None, [source.note, walker.report()]))
    return source


def mask_listing(root: Path, layout: Layout, walker: Walker) -> dict[str | None, list[SourceFile]]:
    """The images of a layout of mask files (folders, or an ``image,mask`` CSV), each with its mask."""
    if layout.kind == "masks":
        return list_mask_folders(root, layout.split_dirs, walker)
    return list_labels_file(root, layout.labels, layout.rows, layout.class_names, layout.form, walker)


def mask_options(root: Path, layout: Layout, ignore_index: int) -> tuple[list[str], MaskOptions]:
    """The classes of mask files and how to decode them, as ``fit`` decides them: ``classes.txt``, else
    ``palette.json``, binary masks or the largest index (:mod:`..images.mask_classes`).

    Raises:
        UsageError: ``ignore_index`` is a class's index.
    """
    names, settings = layout.class_names, {"ignore_index": ignore_index, "binary": None}
    if not names:

        def paths() -> list[Path]:
            if layout.kind == "masks":
                return mask_files(root, layout.split_dirs)
            return [root / row.mask for row in layout.rows]

        names, settings = mask_classes(root, paths, settings)
    return names, configured(root, names, settings)


def configured(root: Path, names: list[str], settings: dict) -> MaskOptions:
    """How masks of ``names`` decode under ``settings`` (``ignore_index``, ``binary``), the palette of ``root``.

    Raises:
        UsageError: ``ignore_index`` is a class's index.
    """
    return target_kind("mask").configured(root, names, settings).options


def _items(root: Path, files: list[SourceFile], split: str | None) -> list[Item]:
    """``files`` of ``split`` as items, in path order."""
    ordered = sorted(files, key=lambda f: f.path.encode("utf-8", "surrogateescape"))
    return [Item(root / f.path, shown(f.path), split, f.target) for f in ordered]
