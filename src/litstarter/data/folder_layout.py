"""What is in an image folder and how it splits: layout detection, file listing, stratified seeded split.

Two layouts are accepted (class names are the sorted folder names):

* ``root/<class>/<image>``: split by fractions, per class (stratified), seeded;
* ``root/{train,val,test}/<class>/<image>``: the splits as given; ``test`` is optional.

Images may sit in sub-folders of a class folder. Hidden files and folders (``.DS_Store``, ``.ipynb_checkpoints``)
and files without an image extension are ignored. Nothing here decodes an image; that is the cache's job.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from litstarter.preprocess import IMAGE_EXTENSIONS, is_image_file

Layout = Literal["classes", "splits"]
SPLIT_NAMES = ("train", "val", "test")


def expected_layout(root: Path) -> str:
    """The accepted layouts, spelled out for ``root`` (used in every layout error)."""
    return (
        "expected one of these layouts:\n"
        f"  {root}/<class>/<image>                  split here by data.val_fraction and data.test_fraction\n"
        f"  {root}/{{train,val,test}}/<class>/<image>  splits as given (test is optional)"
    )


@dataclass(frozen=True)
class SourceFile:
    """One image file as listed (not yet decoded).

    Args:
        path: Path relative to the data root, with ``/`` separators.
        label: Class index.
        size: Size in bytes when listed.
        mtime_ns: Modification time (ns) when listed.
    """

    path: str
    label: int
    size: int
    mtime_ns: int


def _visible_dirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def detect_layout(root: str | os.PathLike) -> tuple[Layout, list[str]]:
    """``(layout, class_names)`` from the folder names alone (cheap: no file listing).

    Raises:
        FileNotFoundError: ``root`` does not exist or is not a folder.
        ValueError: ``root`` has no class folders, or a split layout is incomplete or mixed with classes.
    """
    root = Path(root)
    if not root.is_dir():
        what = "is not a folder" if root.exists() else "does not exist"
        raise FileNotFoundError(f"data.root '{root}' {what}; {expected_layout(root)}")
    dirs = _visible_dirs(root)
    if not dirs:
        raise ValueError(f"data.root '{root}' has no class folders; {expected_layout(root)}")
    names = {d.name for d in dirs}
    if not names & set(SPLIT_NAMES):
        return "classes", [d.name for d in dirs]
    if not names <= set(SPLIT_NAMES) or not {"train", "val"} <= names:
        raise ValueError(
            f"data.root '{root}' has the folders {sorted(names)}: a split layout needs 'train' and 'val' (and"
            f" optionally 'test') and nothing else beside them; {expected_layout(root)}"
        )
    classes = _visible_dirs(root / "train")
    if not classes:
        raise ValueError(f"'{root / 'train'}' has no class folders; {expected_layout(root)}")
    return "splits", [d.name for d in classes]


def list_images(folder: Path) -> list[Path]:
    """Image files under ``folder`` (recursively, sorted), skipping hidden files and folders."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        found.extend(Path(dirpath) / f for f in sorted(filenames) if is_image_file(f))
    return found


def _source(root: Path, path: Path, label: int) -> SourceFile:
    stat = path.stat()
    return SourceFile(path.relative_to(root).as_posix(), label, stat.st_size, stat.st_mtime_ns)


def _list_classes(root: Path, folder: Path, class_names: list[str], required: bool) -> dict[str, list[Path]]:
    """``{class: files}`` of one folder of class folders; empty class folders are collected as errors."""
    present = {d.name for d in _visible_dirs(folder)}
    unknown = sorted(present - set(class_names))
    if unknown:
        raise ValueError(
            f"'{folder}' has class folders {unknown} that '{root / 'train'}' lacks; every class needs training"
            f" images. Known classes: {class_names}"
        )
    files, empty = {}, []
    for name in class_names:
        if name not in present:
            if required:
                raise ValueError(f"class folder '{folder / name}' is missing; {expected_layout(root)}")
            continue
        files[name] = list_images(folder / name)
        if not files[name]:
            empty.append(str(folder / name))
    if empty:
        listed = "\n  ".join(empty)
        raise ValueError(
            f"{len(empty)} class folder(s) hold no image files ({', '.join(sorted(IMAGE_EXTENSIONS))}):\n  {listed}\n"
            "A class is never dropped silently: add images or remove the folder."
        )
    return files


def split_counts(n: int, val_fraction: float, test_fraction: float) -> tuple[int, int, int]:
    """``(train, val, test)`` sizes for one class of ``n`` images; every non-zero fraction gets >= 1 image."""
    n_val = max(1, round(n * val_fraction)) if val_fraction > 0 else 0
    n_test = max(1, round(n * test_fraction)) if test_fraction > 0 else 0
    return n - n_val - n_test, n_val, n_test


def list_sources(
    root: str | os.PathLike,
    layout: Layout,
    class_names: list[str],
    val_fraction: float,
    test_fraction: float,
    seed: int,
) -> dict[str, list[SourceFile]]:
    """``{split: files}`` for every split present, each split in a fixed order (by class, then path).

    For the ``classes`` layout each class is permuted by a generator seeded from ``(seed, class index)`` and
    cut by the fractions, so a class's split does not change when another class gains files.

    Raises:
        ValueError: a class folder is empty (all of them are named), or a class has too few images to give
            every split at least one (the class is named).
    """
    root = Path(root)
    if layout == "splits":
        sources = {}
        for split in SPLIT_NAMES:
            if not (root / split).is_dir():
                continue
            by_class = _list_classes(root, root / split, class_names, required=split == "train")
            sources[split] = [
                _source(root, path, class_names.index(name)) for name, paths in by_class.items() for path in paths
            ]
        return sources

    by_class = _list_classes(root, root, class_names, required=True)
    sources = {"train": [], "val": [], "test": []}
    too_few = []
    for label, name in enumerate(class_names):
        paths = by_class[name]
        n_train, n_val, n_test = split_counts(len(paths), val_fraction, test_fraction)
        if n_train < 1:
            too_few.append(f"class '{name}' ({root / name}) has {len(paths)} image(s)")
            continue
        order = np.random.default_rng([seed, label]).permutation(len(paths))
        chosen = [paths[i] for i in order]
        cuts = {"val": chosen[:n_val], "test": chosen[n_val : n_val + n_test], "train": chosen[n_val + n_test :]}
        for split, split_paths in cuts.items():
            sources[split].extend(_source(root, p, label) for p in sorted(split_paths))
    if too_few:
        need = 1 + (val_fraction > 0) + (test_fraction > 0)
        raise ValueError(
            "too few images to split: " + "; ".join(too_few) + f". With data.val_fraction={val_fraction} and"
            f" data.test_fraction={test_fraction} every class needs at least {need} (one per split)."
        )
    if test_fraction == 0:
        del sources["test"]
    return sources
