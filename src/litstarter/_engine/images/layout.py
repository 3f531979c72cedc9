"""What is in an image folder: its layout, its classes, and every split's files (nothing is decoded here).

Accepted layouts (class names are the sorted folder names of train):

* ``root/<class>/<image>``: split by ``val_fraction`` and ``test_fraction``, per class (stratified), seeded;
* ``root/{train,val,test}/<class>/<image>``: the splits as given;
* ``root/{train,test}/...``: val is carved out of train by ``val_fraction`` (stratified, seeded);
* ``root/{train,val}/...``: no test split; ``test`` evaluates val and says so;
* ``root/train/...`` alone: val carved out of train, no test split;
* a labels file, ``data.labels`` (see :mod:`litstarter._engine.images.labels_csv`).

Split folders may also be named ``training``, ``valid``, ``validation``, ``dev``, ``testing``, in any case.
Every split must hold exactly train's classes. Images may sit in sub-folders of a class folder; hidden files
and folders and files without an image extension are ignored; links follow :mod:`litstarter._engine.images.listing`.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from ..errors import BadInputError, UsageError
from .label_set_listing import label_sets_listing
from .label_sets import FORM_NAMES, multi_hot
from .labels_csv import LabelRow, found_rows, read_labels_file
from .listing import Found, Walker, shown
from .preprocess import IMAGE_EXTENSIONS, is_image_file
from .splits import (
    SPLIT_NAMES,
    Listing,
    SourceFile,
    canonical_split,
    carve,
    carved_origin,
    source_file,
)

__all__ = ["Layout", "SourceFile", "detect_layout", "expected_layout", "list_sources"]


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
        kind: ``classes`` (``root/<class>``), ``splits`` (split folders) or ``labels`` (a labels CSV).
        class_names: Sorted class names (train's).
        split_dirs: ``{split: folder name as found}`` for the ``splits`` kind.
        labels: The labels CSV for the ``labels`` kind.
        rows: The labels CSV's rows for the ``labels`` kind.
        form: The labels CSV's form: ``label`` (one class per image), or multi-label ``labels`` / ``columns``
            (:mod:`litstarter._engine.images.label_sets`); ``class_names`` is then the label vocabulary.
    """

    kind: Literal["classes", "splits", "labels"]
    class_names: list[str]
    split_dirs: dict[str, str] = field(default_factory=dict)
    labels: Path | None = None
    rows: tuple[LabelRow, ...] = ()
    form: str = "label"

    @property
    def multilabel(self) -> bool:
        """Whether each image has a set of labels (a multi-label labels file)."""
        return self.form != "label"

    def targets(self, paths: list[str], vocabulary: list[str] | None = None, root: Path | None = None) -> np.ndarray:
        """``(N, K)`` float32 multi-hot targets of a multi-label file's ``paths`` (as listed, relative to ``root``
        where they lie under it), over ``vocabulary`` (default ``class_names``)."""
        by_path = {row.path: row.labels for row in self.rows}
        top = os.fspath(root).rstrip(os.sep) + os.sep if root is not None else None
        by_path |= {r.path[len(top) :]: r.labels for r in self.rows if top and r.path.startswith(top)}  # absolute
        return multi_hot([by_path[p] for p in paths], vocabulary or self.class_names)

    def describe(self, root: Path) -> str:
        """E.g. ``root/{train,test}/<class>/<image>``."""
        if self.kind == "classes":
            return f"{root}/<class>/<image>"
        if self.kind == "splits":
            names = ",".join(self.split_dirs[s] for s in SPLIT_NAMES if s in self.split_dirs)
            return f"{root}/{{{names}}}/<class>/<image>"
        has_split = any(row.split for row in self.rows)
        absolute = sum(os.path.isabs(row.path) for row in self.rows)
        where = f"paths under {root}" + (f", {absolute} absolute" if absolute else "")
        if self.multilabel:
            empty = sum(not row.labels for row in self.rows)
            form = f"multi-label, {FORM_NAMES[self.form]}{', split' if has_split else ''}"
            counts = f"{len(self.class_names)} labels, {empty} image(s) with none"
            return f"labels file {self.labels} ({form}; {counts}; {where})"
        return f"labels file {self.labels} (path,label{',split' if has_split else ''}; {where})"


def _visible_dirs(folder: Path) -> list[Path]:
    return sorted((p for p in folder.iterdir() if not p.name.startswith(".") and p.is_dir()), key=lambda p: p.name)


def _class_names(folders: list[Path]) -> list[str]:
    """The folders' names as class names; a name that isn't valid UTF-8 can't be one (class names go into
    checkpoints, metrics and exported models as text)."""
    odd = [shown(d) for d in folders if shown(d.name) != d.name]
    if odd:
        raise BadInputError(
            f"class folder name(s) that aren't valid UTF-8: {', '.join(odd)}; rename them (class names are written"
            " into checkpoints, metrics and exported models as text). File names may be anything."
        )
    return [d.name for d in folders]


def detect_layout(
    root: str | os.PathLike, labels: str | os.PathLike | None = None, labels_absolute_paths: bool = False
) -> Layout:
    """The :class:`Layout` of ``root`` from its folder names (or the labels file): cheap, no file listing.

    ``labels_absolute_paths`` lets the labels file name absolute paths (see
    :mod:`litstarter._engine.images.labels_csv`); a relative path must stay inside ``root`` either way.

    Raises:
        UsageError: ``root`` (or the labels file) does not exist.
        BadInputError: ``root`` has no class folders, or split folders are mixed with others, doubled or lack train.
    """
    root = Path(root)
    if not root.is_dir():
        what = "is not a folder" if root.exists() else "does not exist"
        raise UsageError(f"data.root '{root}' {what}; {expected_layout(root)}")
    if labels is not None:
        csv_path = root / labels
        rows, form = read_labels_file(csv_path, root, allow_absolute=labels_absolute_paths)
        train = [row for row in rows if row.split in (None, "train")]
        names = {n for row in train for n in row.labels} if form != "label" else {row.label for row in train}
        return Layout("labels", sorted(names), labels=csv_path, rows=tuple(rows), form=form)
    dirs = _visible_dirs(root)
    if not dirs:
        raise BadInputError(f"data.root '{root}' has no class folders; {expected_layout(root)}")
    splits = {d.name: canonical_split(d.name) for d in dirs}
    if not any(splits.values()):
        return Layout("classes", _class_names(dirs))
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
    classes = _visible_dirs(root / split_dirs["train"])
    if not classes:
        raise BadInputError(f"'{root / split_dirs['train']}' has no class folders; {expected_layout(root)}")
    return Layout("splits", _class_names(classes), split_dirs)


def _list_classes(folder: Path, layout: Layout, walker: Walker, train: Path) -> tuple[dict[int, list[Found]], list]:
    """``{label: files}`` of one folder of class folders, and its empty class folders; a class set unlike
    train's is an error naming the classes."""
    present = {d.name for d in _visible_dirs(folder)}
    missing, extra = sorted(set(layout.class_names) - present), sorted(present - set(layout.class_names))
    if (missing or extra) and folder == train:
        raise BadInputError(
            f"the class folders of '{folder}' changed while the run started: {sorted(present)} now,"
            f" {layout.class_names} before; restart the run"
        )
    if missing or extra:
        what = [f"lacks class folder(s) {missing}"] if missing else []
        what += [f"has class folder(s) {extra} that '{train}' lacks"] if extra else []
        raise BadInputError(
            f"'{folder}' {' and '.join(what)}: every split needs exactly the training classes {layout.class_names}"
        )
    by_class, empty = {}, []
    for label, name in enumerate(layout.class_names):
        by_class[label] = walker.files(folder / name, keep=is_image_file)
        if not by_class[label]:
            empty.append(str(folder / name))
    return by_class, empty


def _flatten(root: Path, by_class: dict[int, list[Found]]) -> list[SourceFile]:
    return [source_file(root, f, label) for label, files in sorted(by_class.items()) for f in files]


def _folder_listing(root: Path, layout: Layout, val_fraction: float, test_fraction: float, seed: int) -> Listing:
    walker = Walker(root)
    if layout.kind == "classes":
        by_class, empty = _list_classes(root, layout, walker, root)
        _raise_empty(empty)
        parts = carve(by_class, layout.class_names, val_fraction, test_fraction, seed, f"'{root}'")
        sources = {split: [source_file(root, f, label) for f, label in files] for split, files in parts.items()}
        origins = {"train": "the rest of each class"}
        origins["val"] = carved_origin("each class", "val_fraction", val_fraction, seed)
        if "test" in sources:
            origins["test"] = carved_origin("each class", "test_fraction", test_fraction, seed)
        return Listing(layout.describe(root), sources, origins, walker.report())

    train_dir = root / layout.split_dirs["train"]
    by_split, empty = {}, []
    for split in SPLIT_NAMES:
        if split in layout.split_dirs:
            by_split[split], split_empty = _list_classes(root / layout.split_dirs[split], layout, walker, train_dir)
            empty += split_empty
    _raise_empty(empty)
    sources = {split: _flatten(root, by_class) for split, by_class in by_split.items()}
    origins = {split: f"{layout.split_dirs[split]}/" for split in by_split}
    if "val" not in by_split:
        train = layout.split_dirs["train"]
        parts = carve(by_split["train"], layout.class_names, val_fraction, 0.0, seed, f"'{train_dir}'")
        sources["train"] = [source_file(root, f, label) for f, label in parts["train"]]
        sources["val"] = [source_file(root, f, label) for f, label in parts["val"]]
        origins["train"] = f"{train}/ less val"
        origins["val"] = carved_origin(f"{train}/", "val_fraction", val_fraction, seed)
    return Listing(layout.describe(root), _in_order(sources), origins, walker.report())


def _in_order(sources: dict[str, list[SourceFile]]) -> dict[str, list[SourceFile]]:
    return {split: sources[split] for split in SPLIT_NAMES if split in sources}


def _raise_empty(empty: list[str]) -> None:
    if empty:
        listed = "\n  ".join(shown(e) for e in empty)
        raise BadInputError(
            f"{len(empty)} class folder(s) hold no image files ({', '.join(sorted(IMAGE_EXTENSIONS))}):\n  {listed}\n"
            "A class is never dropped silently: add images or remove the folder."
        )


def _labels_listing(root: Path, layout: Layout, val_fraction: float, test_fraction: float, seed: int) -> Listing:
    walker = Walker(root)
    index = {name: i for i, name in enumerate(layout.class_names)}
    by_split: dict[str, dict[int, list[Found]]] = defaultdict(lambda: defaultdict(list))
    for row, found in found_rows(walker, root, layout.labels, layout.rows):
        by_split[row.split or "train"][index[row.label]].extend(found)
    csv_name = layout.labels.name
    if not any(row.split for row in layout.rows):
        parts = carve(by_split["train"], layout.class_names, val_fraction, test_fraction, seed, csv_name)
        sources = {split: [source_file(root, f, label) for f, label in files] for split, files in parts.items()}
        origins = {"train": f"{csv_name}, the rest of each class"}
        origins["val"] = carved_origin(csv_name, "val_fraction", val_fraction, seed)
        if "test" in sources:
            origins["test"] = carved_origin(csv_name, "test_fraction", test_fraction, seed)
        return Listing(layout.describe(root), sources, origins, walker.report())
    sources = {split: _flatten(root, by_class) for split, by_class in by_split.items()}
    origins = {split: f"{csv_name} split={split}" for split in sources}
    if "val" not in sources:
        parts = carve(by_split["train"], layout.class_names, val_fraction, 0.0, seed, csv_name)
        sources["train"] = [source_file(root, f, label) for f, label in parts["train"]]
        sources["val"] = [source_file(root, f, label) for f, label in parts["val"]]
        origins["train"] = f"{csv_name} split=train less val"
        origins["val"] = carved_origin(f"{csv_name} split=train", "val_fraction", val_fraction, seed)
    return Listing(layout.describe(root), _in_order(sources), origins, walker.report())


def list_sources(
    root: str | os.PathLike, layout: Layout, val_fraction: float, test_fraction: float, seed: int
) -> Listing:
    """Every split's files (each split in a fixed order: by class, then path) and where each split came from.

    ``test_fraction`` applies to ``root/<class>`` and to a labels file without a ``split`` column only;
    ``val_fraction`` to every source that has no val split of its own.

    Raises:
        BadInputError: a class folder is empty (all of them are named), a split's classes differ from train's,
            or a class has too few images to give every split at least one (the class is named).
    """
    root = Path(root)
    if layout.kind == "labels" and layout.multilabel:
        return label_sets_listing(root, layout, val_fraction, test_fraction, seed)
    if layout.kind == "labels":
        return _labels_listing(root, layout, val_fraction, test_fraction, seed)
    return _folder_listing(root, layout, val_fraction, test_fraction, seed)
