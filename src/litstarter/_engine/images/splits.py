"""Train/val/test splits of listed image files: the listed file, the sizes a carve gives, the line that reports
them. How a split is stratified is the targets' kind's (``litstarter._engine.targets``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

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
        target: What the image is labelled with, as its layout listed it, in plain JSON (a class index, a tuple of
            label names, a tuple of numbers): its kind (``litstarter._engine.targets``) stacks a split's targets.
        size: Size in bytes when listed (of the link itself for a file that can't be read).
        mtime_ns: Modification time (ns) when listed.
        ctime_ns: Status-change time (ns) when listed: unlike the mtime it cannot be set back (``cp -p``).
        inode: Inode number when listed: a file replaced by a rename (``rsync -a``) gets a new one.
    """

    path: str
    target: object
    size: int
    mtime_ns: int
    ctime_ns: int = 0
    inode: int = 0


def source_file(root: Path, found: Found, target: object) -> SourceFile:
    """A :class:`SourceFile` relative to ``root`` (a file named by an absolute path outside ``root`` keeps it:
    ``root / path`` is then that path, whatever links ``root`` goes through)."""
    path, top = os.fspath(found.path), os.fspath(root).rstrip(os.sep) + os.sep
    if path.startswith(top):
        rel = path[len(top) :]  # a prefix cut is ~10x cheaper than relpath
    else:
        rel = path if os.path.isabs(path) else os.path.relpath(path, root)
    return SourceFile(rel.replace(os.sep, "/"), target, found.size, found.mtime_ns, found.ctime_ns, found.inode)


def split_counts(n: int, val_fraction: float, test_fraction: float) -> tuple[int, int, int]:
    """``(train, val, test)`` sizes for one class of ``n`` images; every non-zero fraction gets >= 1 image."""
    n_val = max(1, round(n * val_fraction)) if val_fraction > 0 else 0
    n_test = max(1, round(n * test_fraction)) if test_fraction > 0 else 0
    return n - n_val - n_test, n_val, n_test


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
