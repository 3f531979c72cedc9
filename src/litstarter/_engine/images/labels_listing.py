"""The files a labels CSV names (:mod:`.labels_csv`), each with its row's target: a class index, a label set, or
its numbers."""

from __future__ import annotations

from pathlib import Path

from .labels_csv import LabelRow, found_rows
from .listing import Walker
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
        split = (row.split or "train") if split_given else None
        listed.setdefault(split, []).extend(source_file(root, f, target) for f in found)
    return listed
