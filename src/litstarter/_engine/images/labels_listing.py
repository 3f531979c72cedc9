"""The files a labels CSV names (:mod:`.labels_csv`), each with its row's target: a class index, a label set, its
numbers, or its mask."""

from __future__ import annotations

from pathlib import Path

from litstarter.errors import BadInputError

from .labels_csv import LabelRow, found_rows
from .listing import Walker, shown
from .mask_folders import mask_target
from .splits import SourceFile, source_file


def list_labels_file(
    root: Path, csv_path: Path, rows: tuple[LabelRow, ...], names: list[str], form: str, walker: Walker
) -> dict[str | None, list[SourceFile]]:
    """Every named file with its target, in row order: ``{None: files}`` without a ``split`` column (to be split by
    the fractions), else ``{split: files}``. A one-label file's target is its class's index in ``names``."""
    index = {name: i for i, name in enumerate(names)}
    split_given = any(row.split for row in rows)
    listed: dict[str | None, list[SourceFile]] = {}
    for row, found in found_rows(walker, root, csv_path, rows):
        target = index[row.label] if form == "label" else row.target
        if form == "masks":
            target = _mask_of(root, csv_path, row, walker)
        split = (row.split or "train") if split_given else None
        listed.setdefault(split, []).extend(source_file(root, f, target) for f in found)
    return listed


def _mask_of(root: Path, csv_path: Path, row: LabelRow, walker: Walker) -> list:
    """The mask a row names, as its image's target.

    Raises:
        BadInputError: the mask cannot be read (missing, a folder, a dangling link), naming the row.
    """
    found = Walker(walker.top).named(root / row.mask)  # its own walker: a mask is not an image of the listing
    if not found or found[0].problem:
        problem = found[0].problem if found else "listed twice"
        raise BadInputError(f"data.labels '{csv_path}' {row.describe()}: mask '{shown(row.mask)}': {problem}")
    return mask_target(root, found[0])
