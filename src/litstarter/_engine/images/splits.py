"""Train/val/test splits of listed image files: the stratified seeded carve, and the line that reports them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import BadInputError
from .listing import Found

SPLIT_NAMES = ("train", "val", "test")
#: Folder names (and ``split`` column values) accepted for each split, matched case-insensitively.
SPLIT_ALIASES = {
    "train": "train",
    "training": "train",
    "val": "val",
    "valid": "val",
    "validation": "val",
    "dev": "val",
    "test": "test",
    "testing": "test",
}


def canonical_split(name: str) -> str | None:
    """``train``/``val``/``test`` for a split name or alias (any case), else ``None``."""
    return SPLIT_ALIASES.get(name.strip().lower())


@dataclass(frozen=True)
class SourceFile:
    """One image file as listed (not yet decoded).

    Args:
        path: Path relative to the data root, with ``/`` separators (names that aren't valid UTF-8 keep their
            surrogate escapes; see :func:`litstarter._engine.images.listing.shown`).
        label: Class index.
        size: Size in bytes when listed (of the link itself for a file that can't be read).
        mtime_ns: Modification time (ns) when listed.
        ctime_ns: Status-change time (ns) when listed: unlike the mtime it cannot be set back (``cp -p``).
        inode: Inode number when listed: a file replaced by a rename (``rsync -a``) gets a new one.
    """

    path: str
    label: int
    size: int
    mtime_ns: int
    ctime_ns: int = 0
    inode: int = 0


def source_file(root: Path, found: Found, label: int) -> SourceFile:
    """A :class:`SourceFile` relative to ``root`` (a file named by an absolute path outside ``root`` keeps it:
    ``root / path`` is then that path, whatever links ``root`` goes through)."""
    path, top = os.fspath(found.path), os.fspath(root).rstrip(os.sep) + os.sep
    if path.startswith(top):
        rel = path[len(top) :]  # a prefix cut is ~10x cheaper than relpath
    else:
        rel = path if os.path.isabs(path) else os.path.relpath(path, root)
    return SourceFile(rel.replace(os.sep, "/"), label, found.size, found.mtime_ns, found.ctime_ns, found.inode)


def split_counts(n: int, val_fraction: float, test_fraction: float) -> tuple[int, int, int]:
    """``(train, val, test)`` sizes for one class of ``n`` images; every non-zero fraction gets >= 1 image."""
    n_val = max(1, round(n * val_fraction)) if val_fraction > 0 else 0
    n_test = max(1, round(n * test_fraction)) if test_fraction > 0 else 0
    return n - n_val - n_test, n_val, n_test


def carve(
    by_class: dict[int, list[Found]], names: list[str], val_fraction: float, test_fraction: float, seed: int, where: str
) -> dict[str, list[tuple[Found, int]]]:
    """Split each class by the fractions: ``{split: [(file, label)]}``, stratified and seeded per class.

    Each class is permuted by a generator seeded from ``(seed, class index)``, so a class's split does not
    change when another class gains files. ``test`` is present only when ``test_fraction > 0``.

    Raises:
        BadInputError: a class has too few images to give every split at least one (every such class named).
    """
    out: dict[str, list[tuple[Found, int]]] = {"train": [], "val": []} | ({"test": []} if test_fraction else {})
    too_few = []
    for label, files in sorted(by_class.items()):
        n_train, n_val, n_test = split_counts(len(files), val_fraction, test_fraction)
        if n_train < 1:
            too_few.append(f"class '{names[label]}' has {len(files)} image(s)")
            continue
        files = sorted(files, key=lambda f: os.fsencode(f.path))  # a folder and a labels file carve alike
        order = np.random.default_rng([seed, label]).permutation(len(files))
        chosen = [files[i] for i in order]
        cuts = {"val": chosen[:n_val], "test": chosen[n_val : n_val + n_test], "train": chosen[n_val + n_test :]}
        for split, part in cuts.items():
            if split in out:
                out[split].extend((f, label) for f in sorted(part, key=lambda f: os.fsencode(f.path)))
    if too_few:
        need = 1 + (val_fraction > 0) + (test_fraction > 0)
        raise BadInputError(
            f"too few images to split {where}: " + "; ".join(too_few) + f". With data.val_fraction={val_fraction}"
            f" and data.test_fraction={test_fraction} every class needs at least {need} (one per split)."
        )
    return out


@dataclass
class Listing:
    """Every split's files and where each split came from.

    Args:
        layout: The layout found, e.g. ``root/{train,test}/<class>/<image>``.
        sources: ``{split: files}`` in a fixed order (by class, then path).
        origins: ``{split: where it came from}``, e.g. ``"train/"`` or ``"carved from train/ (val_fraction 0.1, ...)"``.
        notes: What the listing left out and why (links not followed, second names of one file).
    """

    layout: str
    sources: dict[str, list[SourceFile]]
    origins: dict[str, str]
    notes: str = ""

    @property
    def test_split(self) -> str:
        """The split that ``test`` evaluates: ``test``, or ``val`` when there is no test split."""
        return "test" if "test" in self.sources else "val"

    def summary(self, counts: dict[str, int] | None = None) -> str:
        """The one line every fit prints: layout, splits, where each came from, images per split."""
        counts = counts or {split: len(files) for split, files in self.sources.items()}
        parts = [f"{split} {counts[split]} ({self.origins[split]})" for split in SPLIT_NAMES if split in counts]
        line = f"data: layout {self.layout}; " + ", ".join(parts)
        if self.test_split == "val":
            line += "; no test split: test-after-fit tests on val (not a held-out score)"
        return line


def carved_origin(source: str, fraction_key: str, fraction: float, seed: int, how: str = "stratified") -> str:
    """How a carved split is described in the layout line."""
    return f"carved from {source} by data.{fraction_key}={fraction}, {how}, seed {seed}"


#: How a multi-label carve is described (see :func:`litstarter._engine.images.label_sets.stratify`).
BY_LABEL_SETS = "stratified by label (iterative stratification)"
