"""``data.labels``: a CSV of ``path,label[,split]`` rows instead of class folders.

* ``path`` is relative to ``data.root`` (so is the CSV's own path); ``label`` is a class name (``3`` is a name
  like any other); ``split`` takes the split folder names and aliases (``train``, ``val``/``valid``/...,
  ``test``/``testing``), in any case. Without a ``split`` column the splits come from the fractions.
* A duplicate path is an error; so is a split whose classes differ from train's. A row whose file is missing
  is a bad file like an unreadable image: all of them are reported together, under ``data.on_bad_file``.
"""

from __future__ import annotations

import csv
import posixpath
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ..errors import BadInputError, UsageError
from .splits import SPLIT_ALIASES, SPLIT_NAMES, canonical_split


@dataclass(frozen=True)
class LabelRow:
    """One row of a labels file.

    Args:
        path: The file, relative to ``data.root``, normalised (``./a//b.png`` -> ``a/b.png``).
        label: The class name.
        split: ``train``/``val``/``test``, or ``None`` without a ``split`` column.
        line: The row's line number in the CSV (the header is line 1).
    """

    path: str
    label: str
    split: str | None
    line: int


def _open_rows(csv_path: Path) -> tuple[list[str], list[dict]]:
    if not csv_path.is_file():
        raise UsageError(f"data.labels '{csv_path}' does not exist (it is read relative to data.root)")
    try:
        with open(csv_path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            columns = [c.strip().lower() for c in reader.fieldnames or []]
            reader.fieldnames = columns
            return columns, list(reader)
    except (UnicodeDecodeError, csv.Error) as err:
        raise BadInputError(f"data.labels '{csv_path}' is not a readable UTF-8 CSV: {err}") from err


def _row(csv_path: Path, raw: dict, line: int, has_split: bool) -> LabelRow:
    path, label = (raw.get("path") or "").strip(), (raw.get("label") or "").strip()
    if not path or not label:
        raise BadInputError(f"data.labels '{csv_path}' line {line}: 'path' and 'label' must both be set, got {raw}")
    split = None
    if has_split:
        value = (raw.get("split") or "").strip()
        split = canonical_split(value)
        if split is None:
            raise BadInputError(
                f"data.labels '{csv_path}' line {line}: split {value!r} is not one of {sorted(SPLIT_ALIASES)}"
                " (any case)"
            )
    return LabelRow(posixpath.normpath(path), label, split, line)


def _check_splits(csv_path: Path, rows: list[LabelRow]) -> None:
    classes: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        classes[row.split].add(row.label)
    if "train" not in classes:
        raise BadInputError(f"data.labels '{csv_path}' has no train rows (split column values: {sorted(classes)})")
    train = classes["train"]
    for split in SPLIT_NAMES[1:]:
        if split in classes and classes[split] != train:
            missing, extra = sorted(train - classes[split]), sorted(classes[split] - train)
            what = [f"lacks class(es) {missing}"] if missing else []
            what += [f"has class(es) {extra} that train lacks"] if extra else []
            raise BadInputError(
                f"data.labels '{csv_path}': split {split} {' and '.join(what)}; every split needs exactly the"
                f" training classes {sorted(train)}"
            )


def read_labels(csv_path: str | Path) -> list[LabelRow]:
    """The rows of a labels CSV, checked (columns, split names, duplicates, every split's classes).

    Raises:
        UsageError: the CSV does not exist.
        BadInputError: a column is missing, a cell is empty, a split name is unknown, a path is listed twice,
            or a split's classes differ from train's.
    """
    csv_path = Path(csv_path)
    columns, raw_rows = _open_rows(csv_path)
    if not {"path", "label"} <= set(columns):
        raise BadInputError(
            f"data.labels '{csv_path}' has the columns {columns}; expected a header with path,label and optionally"
            " split"
        )
    has_split = "split" in columns
    rows = [_row(csv_path, raw, line, has_split) for line, raw in enumerate(raw_rows, start=2)]
    if not rows:
        raise BadInputError(f"data.labels '{csv_path}' has a header but no rows")
    lines: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        lines[row.path].append(row.line)
    duplicates = {path: at for path, at in lines.items() if len(at) > 1}
    if duplicates:
        listed = "; ".join(f"{path} (lines {', '.join(map(str, at))})" for path, at in list(duplicates.items())[:10])
        more = f" and {len(duplicates) - 10} more" if len(duplicates) > 10 else ""
        raise BadInputError(f"data.labels '{csv_path}' lists {len(duplicates)} path(s) twice: {listed}{more}")
    if has_split:
        _check_splits(csv_path, rows)
    return rows
