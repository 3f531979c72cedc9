"""What is in a data root, walked once: detect its layout, list every file with its target, split, (then cache).

Accepted layouts (class names are the sorted folder names of train):

* ``root/<class>/<image>``: split by ``val_fraction`` and ``test_fraction``, per class (stratified), seeded;
* ``root/{train,val,test}/<class>/<image>``: the splits as given;
* ``root/{train,test}/...``: val is carved out of train by ``val_fraction`` (stratified, seeded);
* ``root/{train,val}/...``: no test split; ``test`` evaluates val and says so;
* ``root/train/...`` alone: val carved out of train, no test split;
* a labels file, ``data.labels`` (see :mod:`litstarter._engine.images.labels_csv`): one class, a label set or
  numbers per image, or ``image,mask`` pairs;
* ``root/images/`` beside ``root/masks/`` (or both inside each split folder): a mask per image
  (:mod:`.mask_folders`), class names from ``root/classes.txt``;
* boxes: COCO json, YOLO's ``data.yaml``, a ``path,x1,y1,x2,y2,label`` CSV, Pascal VOC XML, the TensorFlow CSV,
  LabelMe, CVAT for images or a Label Studio export (:mod:`.label_formats`, :mod:`.box_listing`): a folder is read
  by what it holds, whatever the task; a task that trains on boxes, given a folder without any, is refused naming the
  formats it reads and what the folder holds (never as class folders);
* polygons, for a task that trains on masks: LabelMe, CVAT for images or COCO shapes (polygons, rectangles, RLE)
  drawn into a mask per image (:mod:`.polygon_formats`); such a task, given a folder holding neither shapes nor mask
  files, is refused naming what segmentation reads and what the folder holds.

Split folders may also be named ``training``, ``valid``, ``validation``, ``dev``, ``testing``, in any case. Each
layout is one module that lists files with their targets (:mod:`.class_folders`, :mod:`.mask_folders`,
:mod:`.box_listing`, :mod:`.labels_listing`); the split by the fractions is the targets' kind's
(:mod:`litstarter._engine.targets`), whatever the layout.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from litstarter.errors import BadInputError, UsageError

from ..targets import TargetKind, target_kind
from .box_files import Annotated
from .box_listing import list_boxes, read_annotations
from .class_folders import class_names_of, list_class_folders, visible_dirs
from .label_formats import BOX_FORMAT_NAMES, expected, no_boxes
from .label_sets import FORM_NAMES
from .labels_csv import LabelRow, read_labels_file
from .labels_listing import list_labels_file
from .listing import Walker
from .mask_files import read_class_names
from .mask_folders import is_mask_pair, list_mask_folders
from .polygon_formats import read_drawings, refuse_unless_masks
from .splits import SPLIT_NAMES, Listing, SourceFile, canonical_split, carved_origin

__all__ = ["Layout", "SourceFile", "detect_layout", "expected_layout", "list_sources"]

#: A labels file's form -> the kind of its targets.
FORM_KINDS = {"label": "class", "labels": "label_set", "columns": "label_set", "values": "value", "masks": "mask"}
FORM_KINDS |= dict.fromkeys(BOX_FORMAT_NAMES, "boxes") | {"polygons": "mask"}


def expected_layout(root: Path) -> str:
    """The accepted layouts, spelled out for ``root`` (used in every layout error)."""
    return (
        "expected one of these layouts:\n"
        f"  {root}/<class>/<image>                  split here by data.val_fraction and data.test_fraction\n"
        f"  {root}/{{train,val,test}}/<class>/<image>  splits as given; without val, val is carved from train by"
        " data.val_fraction; without test, test-after-fit tests on val\n"
        "  (split folders may also be named training, valid, validation, dev, testing), or a labels file:"
        " data.labels: <file.csv> with columns path,label[,split]"
    )


@dataclass(frozen=True)
class Layout:
    """The layout of a data root, found from folder names (or the labels file) alone.

    Args:
        kind: ``classes`` (``root/<class>``), ``splits`` (split folders), ``labels`` (a labels CSV), ``masks``
            (``images/`` and ``masks/``, at the root or in split folders), ``boxes`` (COCO, YOLO, a boxes CSV) or
            ``polygons`` (LabelMe, CVAT, COCO shapes drawn into masks, for a task of masks: :mod:`.polygon_formats`).
        class_names: Sorted class names (train's): the classes, the label vocabulary, the target columns; a mask
            layout's from ``classes.txt`` (``[]`` without one: the masks number them).
        split_dirs: ``{split: folder name as found}`` for the ``splits`` kind.
        labels: The labels CSV for the ``labels`` kind.
        rows: The labels CSV's rows for the ``labels`` kind.
        form: The labels CSV's form: ``label`` (one class per image), multi-label ``labels`` / ``columns``
            (:mod:`litstarter._engine.images.label_sets`), or ``values`` (:mod:`.label_values`); a mask layout's
            ``masks``; a box layout's format (:data:`.label_formats.BOX_FORMAT_NAMES`: ``coco``, ``yolo``,
            ``boxes`` for the boxes CSV, ``voc``, ...).
        annotated: A box layout's annotations, parsed once (:mod:`.box_files`); a polygon layout's drawn masks
            (:class:`.polygon_files.Drawings`).
    """

    kind: Literal["classes", "splits", "labels", "masks", "boxes", "polygons"]
    class_names: list[str]
    split_dirs: dict[str, str] = field(default_factory=dict)
    labels: Path | None = None
    rows: tuple[LabelRow, ...] = ()
    form: str = "label"
    annotated: Annotated | None = None

    @property
    def target_kind(self) -> str:
        """What each image is labelled with (:mod:`litstarter._engine.targets`): ``class``, ``label_set``, ``value``."""
        return FORM_KINDS[self.form]

    def describe(self, root: Path) -> str:
        """E.g. ``root/{train,test}/<class>/<image>``."""
        if self.kind == "classes":
            return f"{root}/<class>/<image>"
        if self.kind == "splits":
            names = ",".join(self.split_dirs[s] for s in SPLIT_NAMES if s in self.split_dirs)
            return f"{root}/{{{names}}}/<class>/<image>"
        if self.kind == "masks":
            names = ",".join(self.split_dirs[s] for s in SPLIT_NAMES if s in self.split_dirs)
            return f"{root}/{{{names}}}/{{images,masks}}/<image>" if names else f"{root}/{{images,masks}}/<image>"
        if self.kind == "polygons":  # LabelMe, CVAT, COCO shapes drawn into masks (polygon_formats.py)
            return self.annotated.describe(self.labels)
        if self.kind == "boxes":
            images = self.annotated.images
            boxes, empty = sum(len(b) for _, _, b in images), sum(not b for _, _, b in images)
            counted = f"; {self.annotated.counts()}" if self.annotated.counted else ""
            return (
                f"{self.form} boxes {self.labels} ({len(images)} images, {boxes} boxes, {empty} image(s)"
                f" without{counted})"
            )
        has_split = any(row.split for row in self.rows)
        absolute = sum(os.path.isabs(row.path) for row in self.rows)
        where = f"paths under {root}" + (f", {absolute} absolute" if absolute else "")
        split = ",split" if has_split else ""
        if self.form in FORM_NAMES:
            empty = sum(not row.labels for row in self.rows)
            form = f"multi-label, {FORM_NAMES[self.form]}{', split' if has_split else ''}"
            counts = f"{len(self.class_names)} labels, {empty} image(s) with none"
            return f"labels file {self.labels} ({form}; {counts}; {where})"
        if self.form == "values":
            return f"labels file {self.labels} (path,{','.join(self.class_names)}{split}: numbers; {where})"
        if self.form == "masks":
            return f"labels file {self.labels} (image,mask{split}; {where})"
        return f"labels file {self.labels} (path,label{split}; {where})"


def detect_layout(
    root: str | os.PathLike,
    labels: str | os.PathLike | None = None,
    labels_absolute_paths: bool = False,
    box_format: str | None = None,
) -> Layout:
    """The :class:`Layout` of ``root`` from its folder names (or the labels file): cheap, no file listing.

    ``labels_absolute_paths`` lets the labels file name absolute paths (see
    :mod:`litstarter._engine.images.labels_csv`); a relative path must stay inside ``root`` either way.
    ``box_format`` (``data.box_format``) reads that box format alone (:mod:`.label_formats`).

    Raises:
        UsageError: ``root`` (or the labels file) does not exist.
        BadInputError: ``root`` has no class folders, or split folders are mixed with others, doubled or lack train;
            the task trains on boxes (:func:`.label_formats.expecting`) and ``root`` holds none it reads.
    """
    root = Path(root)
    if not root.is_dir():
        what = "is not a folder" if root.exists() else "does not exist"
        raise UsageError(f"data.root '{root}' {what}; {expected_layout(root)}")
    labels = str(labels) if labels is not None else None
    wanted = expected()
    if wanted is not None and wanted.targets == "mask":  # a task of masks: shapes drawn, mask files, or one line
        drawn = read_drawings(root, labels, box_format)
        if drawn is not None:
            return Layout("polygons", drawn[0].names, labels=drawn[1], form="polygons", annotated=drawn[0])
        refuse_unless_masks(root, labels, wanted.task)
    boxes = read_annotations(root, labels, box_format)
    if boxes is not None:
        annotated, form, path = boxes
        return Layout("boxes", annotated.names, labels=path, form=form, annotated=annotated)
    if wanted is not None and wanted.targets == "boxes":
        raise BadInputError(no_boxes(root, labels, wanted.task))
    if labels is not None:
        csv_path = root / labels
        rows, form, columns = read_labels_file(csv_path, root, allow_absolute=labels_absolute_paths)
        names = _table_names(rows, form, columns, root)
        return Layout("labels", names, labels=csv_path, rows=tuple(rows), form=form)
    dirs = visible_dirs(root)
    if not dirs:
        raise BadInputError(f"data.root '{root}' has no class folders; {expected_layout(root)}")
    if is_mask_pair(root):
        return Layout("masks", read_class_names(root) or [], form="masks")
    splits = {d.name: canonical_split(d.name) for d in dirs}
    if not any(splits.values()):
        return Layout("classes", class_names_of(dirs))
    others = sorted(name for name, split in splits.items() if split is None)
    if others:
        raise BadInputError(
            f"data.root '{root}' mixes split folders {sorted(n for n, s in splits.items() if s)} with other folders"
            f" {others}; split folders must stand alone; {expected_layout(root)}"
        )
    split_dirs: dict[str, str] = {}
    for name, split in splits.items():
        if split in split_dirs:
            raise BadInputError(f"data.root '{root}' has two {split} folders: '{split_dirs[split]}' and '{name}'")
        split_dirs[split] = name
    if "train" not in split_dirs:
        raise BadInputError(
            f"data.root '{root}' has the split folders {sorted(splits)} but no train folder (train/ or training/);"
            f" {expected_layout(root)}"
        )
    if all(is_mask_pair(root / d) for d in split_dirs.values()):
        return Layout("masks", read_class_names(root) or [], split_dirs, form="masks")
    classes = visible_dirs(root / split_dirs["train"])
    if not classes:
        raise BadInputError(f"'{root / split_dirs['train']}' has no class folders; {expected_layout(root)}")
    return Layout("splits", class_names_of(classes), split_dirs)


def _table_names(rows: list[LabelRow], form: str, columns: list[str], root: Path) -> list[str]:
    """A labels file's names: train's classes or labels (sorted), its target columns (as written), or the mask
    classes of ``root/classes.txt`` (``[]`` without one: the masks number them)."""
    if form == "values":
        return columns
    if form == "masks":
        return read_class_names(root) or []
    train = [row for row in rows if row.split in (None, "train")]
    return sorted({n for row in train for n in row.labels} if form != "label" else {row.label for row in train})


def list_sources(
    root: str | os.PathLike,
    layout: Layout,
    val_fraction: float,
    test_fraction: float,
    seed: int,
    kind: TargetKind | None = None,
) -> Listing:
    """Every split's files with their targets (classes in order; each split in a fixed order) and where each split
    came from.

    ``test_fraction`` applies to ``root/<class>`` and to a labels file without a ``split`` column only;
    ``val_fraction`` to every source that has no val split of its own. ``kind``: the targets' kind as configured for
    the data (a mask's classes and ignore index); ``None``: the layout's, as it is.

    Raises:
        BadInputError: a class folder is empty (all of them are named), a split's classes differ from train's,
            or a class has too few images to give every split at least one (the class is named).
    """
    root, walker = Path(root), Walker(Path(root))
    notes = ""
    if layout.kind in ("boxes", "polygons"):
        on_bad_box = getattr(kind, "on_bad_box", "error")
        listed, notes = list_boxes(root, layout.annotated, walker, on_bad_box, f"'{layout.labels}'")
        name = layout.form if layout.form != "boxes" else layout.labels.name  # coco, yolo, boxes.csv
        name = layout.annotated.format if layout.kind == "polygons" else name  # labelme, cvat, coco
        given = {split: f"{name} split={split}" for split in listed if split}
        carving = Carving(f"{name}, ", name, name, name)
    elif layout.kind == "labels":
        listed = list_labels_file(root, layout.labels, layout.rows, layout.class_names, layout.form, walker)
        name = layout.labels.name
        given = {split: f"{name} split={split}" for split in listed if split}
        carving = Carving(f"{name}, ", name, name, name)
    elif layout.kind == "masks":
        listed = list_mask_folders(root, layout.split_dirs, walker)
        given = {split: f"{layout.split_dirs[split]}/" for split in listed if split}
        train = layout.split_dirs.get("train", "")
        carving = Carving("", "images/", f"'{root}'", f"'{root / train}'")
    else:
        listed = list_class_folders(root, layout.class_names, layout.split_dirs, walker)
        given = {split: f"{layout.split_dirs[split]}/" for split in listed if split}
        train = layout.split_dirs.get("train", "")
        carving = Carving("", "each class", f"'{root}'", f"'{root / train}'")
    kind = kind or target_kind(layout.target_kind)
    sources, origins = split_sources(
        listed, given, kind, layout.class_names, (val_fraction, test_fraction), seed, carving
    )
    return Listing(layout.describe(root), sources, origins, "; ".join(filter(None, [walker.report(), notes])))


@dataclass(frozen=True)
class Carving:
    """How a layout names what the fractions carve, in the layout line and the too-few-images error.

    Args:
        prefix: Before the kind's word for what train keeps (``labels.csv, the rest of each class``).
        source: What val and test are carved from (``each class``, ``labels.csv``).
        where: What is split, in the error (``'root'``, ``labels.csv``).
        train_where: What val is carved from when train is given, in the error.
    """

    prefix: str
    source: str
    where: str
    train_where: str


def split_sources(
    listed: dict[str | None, list[SourceFile]],
    given: dict[str, str],
    kind: TargetKind,
    names: list[str],
    fractions: tuple[float, float],
    seed: int,
    carving: Carving,
) -> tuple[dict[str, list[SourceFile]], dict[str, str]]:
    """``({split: files}, {split: origin})``: files listed without a split (``None``) carved by the fractions, given
    splits kept (val carved from train when there is none), each split in its kind's order."""
    val_fraction, test_fraction = fractions
    if None in listed:
        sources = kind.carve(listed[None], names, val_fraction, test_fraction, seed, carving.where)
        origins = {"train": carving.prefix + kind.rest}
        origins["val"] = carved_origin(carving.source, "val_fraction", val_fraction, seed, kind.how)
        if "test" in sources:
            origins["test"] = carved_origin(carving.source, "test_fraction", test_fraction, seed, kind.how)
        return {s: sources[s] for s in SPLIT_NAMES if s in sources}, origins
    sources, origins = {split: kind.order(files) for split, files in listed.items()}, dict(given)
    if "val" not in sources:
        parts = kind.carve(sources["train"], names, val_fraction, 0.0, seed, carving.train_where)
        sources["train"], sources["val"] = parts["train"], parts["val"]
        origins["train"] = f"{given['train']} less val"
        origins["val"] = carved_origin(given["train"], "val_fraction", val_fraction, seed, kind.how)
    return {s: sources[s] for s in SPLIT_NAMES if s in sources}, origins
