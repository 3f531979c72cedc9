"""``data.labels``: a CSV of ``path,label[,split]`` rows instead of class folders.

* ``path`` is relative to ``data.root`` (so is the CSV's own path) and must stay inside it once normalised
  (``a/../b.png`` is ``b.png``; ``../x.png``, ``/etc/passwd`` and a name with a NUL byte are refused, every such
  row named, before any file is opened: :func:`.confine.confine`, every reader's). A link inside ``data.root`` may
  lead elsewhere, as folder links do.
  Absolute paths are allowed only when asked for (``allow_absolute``: a CSV listing files across disks).
* ``label`` is a class name (``3`` is a name like any other); ``split`` takes the split folder names and aliases
  (``train``, ``val``/``valid``/..., ``test``/``testing``), in any case. Without a ``split`` column the splits
  come from the fractions.
* A path listed twice is an error naming both rows and their labels (so is one file under two names, found when
  the files are listed: see :func:`same_file_error`); so is a split whose classes differ from train's. A row
  whose file is missing is a bad file like an unreadable image: all of them are reported together, under
  ``data.on_bad_file``.
* A ``labels`` column (``;``-separated sets) or one 0/1 column per label makes the file multi-label: see
  :mod:`litstarter._engine.images.label_sets`. Numeric columns (``path,age``) make it a regression's: see
  :mod:`litstarter._engine.images.label_values`. Every other rule here holds for them too.
"""

from __future__ import annotations

import csv
import posixpath
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from litstarter.errors import BadInputError, UsageError

from .confine import confine
from .label_sets import NOT_LABELS, check_vocabulary, column_labels, csv_form, split_cell, warn_unmarked
from .label_values import holds_values, row_values
from .listing import Found, Walker, shown
from .splits import SPLIT_ALIASES, SPLIT_NAMES, canonical_split

#: The option that lets a labels file name absolute paths (the refusal names it).
ABSOLUTE_OPTION = "data.labels_absolute_paths"
#: Rows named in full in one message; the rest are counted.
NAMED_ROWS = 10


@dataclass(frozen=True)
class LabelRow:
    """One row of a labels file.

    Args:
        path: The file, relative to ``data.root``, normalised (``./a//b.png`` -> ``a/b.png``); absolute only
            when the reader was told to allow it.
        label: The class name.
        split: ``train``/``val``/``test``, or ``None`` without a ``split`` column.
        line: The row's line number in the CSV (the header is line 1).
        written: The path as the row spells it (``""``: as ``path``).
        labels: A multi-label row's sorted label names (``()``: none); ``None`` in a one-label file.
        values: A numeric row's numbers, one per target column (:mod:`.label_values`); ``None`` otherwise.
        mask: An ``image,mask`` row's mask, relative to ``data.root`` and normalised; ``None`` otherwise.
    """

    path: str
    label: str
    split: str | None
    line: int
    written: str = ""
    labels: tuple[str, ...] | None = None
    values: tuple[float, ...] | None = None
    mask: str | None = None

    @property
    def target(self) -> object:
        """What the row labels its file with: its label set, its numbers, or its class name."""
        return self.labels if self.labels is not None else self.values if self.values is not None else self.label

    def describe(self) -> str:
        """``line 3 './a.png' (label cat, split train)``: the row as written."""
        split = f", split {self.split}" if self.split else ""
        what = f"label {self.label}" if self.labels is None else f"labels {';'.join(self.labels) or '(none)'}"
        what = what if self.values is None else f"values {', '.join(f'{v:g}' for v in self.values)}"
        what = what if self.mask is None else f"mask {shown(self.mask)}"
        return f"line {self.line} '{shown(self.written or self.path)}' ({what}{split})"


def _open_rows(csv_path: Path) -> tuple[list[str], list[dict], list[str]]:
    """The lower-cased header, the rows keyed by it, and the header as written (label names in the column form)."""
    if not csv_path.is_file():
        raise UsageError(f"data.labels '{csv_path}' does not exist (it is read relative to data.root)")
    try:
        with open(csv_path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            written = [c.strip() for c in reader.fieldnames or []]
            columns = [c.lower() for c in written]
            reader.fieldnames = columns
            return columns, list(reader), written
    except (UnicodeDecodeError, csv.Error) as err:
        raise BadInputError(f"data.labels '{csv_path}' is not a readable UTF-8 CSV: {err}") from err


def _row(csv_path: Path, raw: dict, line: int, has_split: bool, form: str = "label", headers=None) -> LabelRow:
    path, label = (raw.get("path") or "").strip(), (raw.get("label") or "").strip()
    labels = values = mask = None
    if form == "masks":
        path, mask = (raw.get("image") or "").strip(), (raw.get("mask") or "").strip()
        if not path or not mask:
            raise BadInputError(f"data.labels '{csv_path}' line {line}: 'image' and 'mask' must both be set, got {raw}")
        mask = posixpath.normpath(mask)
    elif form == "values":
        values = row_values(csv_path, line, raw, headers)
        label = ""
        if not path:
            raise BadInputError(f"data.labels '{csv_path}' line {line}: 'path' is empty, got {raw}")
    elif form != "label":
        labels = split_cell(csv_path, line, raw.get("labels") or "") if form == "labels" else None
        labels = column_labels(csv_path, line, raw, headers) if labels is None else labels
        label = ";".join(labels)
        if not path:
            raise BadInputError(f"data.labels '{csv_path}' line {line}: 'path' is empty, got {raw}")
    elif not path or not label:
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
    return LabelRow(posixpath.normpath(path), label, split, line, path, labels, values, mask)


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


def _more(items: list, shown_count: int = NAMED_ROWS) -> str:
    return f" and {len(items) - shown_count} more" if len(items) > shown_count else ""


def _check_inside(csv_path: Path, root: Path, rows: list[LabelRow], allow_absolute: bool) -> None:
    """Refuse, all together, the rows whose path (or mask) leaves the root; before any file is opened."""
    entries = [(f"line {row.line}", row.written or row.path) for row in rows]
    entries += [(f"line {row.line} mask", row.mask) for row in rows if row.mask is not None]
    confine(f"data.labels '{csv_path}'", root, entries, allow_absolute=allow_absolute, absolute_option=ABSOLUTE_OPTION)


def _check_duplicates(csv_path: Path, rows: list[LabelRow]) -> None:
    """Refuse a path listed twice (``a.png``, ``./a.png``, ``sub/../a.png``), naming every row and label."""
    by_path: dict[str, list[LabelRow]] = defaultdict(list)
    for row in rows:
        by_path[row.path].append(row)
    duplicates = [at for at in by_path.values() if len(at) > 1]
    if duplicates:
        listed = "; ".join(" and ".join(row.describe() for row in at) for at in duplicates[:NAMED_ROWS])
        raise BadInputError(
            f"data.labels '{csv_path}' lists {len(duplicates)} path(s) twice (spellings are normalised:"
            f" ./a.png and sub/../a.png are a.png): {listed}{_more(duplicates)}; list each file once, with one label"
        )


def same_file_error(csv_path: Path, pairs: list[tuple[LabelRow, LabelRow]]) -> BadInputError:
    """The error for rows whose different paths are one file (a link to another listed file, an absolute and a
    relative path, a hard link): every pair named with its labels."""
    listed = "; ".join(f"{a.describe()} and {b.describe()}" for a, b in pairs[:NAMED_ROWS])
    return BadInputError(
        f"data.labels '{csv_path}' names {len(pairs)} file(s) twice under different paths (a link, a hard link or"
        f" an absolute path to a listed file): {listed}{_more(pairs)}; list each file once, with one label"
    )


def found_rows(
    walker: Walker, root: Path, csv_path: Path, rows: list[LabelRow]
) -> Iterator[tuple[LabelRow, list[Found]]]:
    """Each row with the file it names (``[]`` for a file an earlier row named under another path). Once every row
    is walked, rows naming one file twice raise :func:`same_file_error`: which label would that file have?"""
    first_row: dict[Path, LabelRow] = {}
    twice: list[tuple[LabelRow, LabelRow]] = []
    for row in rows:
        found = walker.named(root / row.path)
        if found:
            first_row.setdefault(found[0].path, row)
        else:  # the file another row named, under another path (a link, an absolute path)
            twice.append((first_row[walker.duplicates[-1][1]], row))
        yield row, found
    if twice:
        raise same_file_error(csv_path, twice)


def read_labels_file(
    csv_path: str | Path, root: str | Path | None = None, allow_absolute: bool = False
) -> tuple[list[LabelRow], str, list[str]]:
    """The rows of a labels CSV, checked (columns, split names, paths inside the root, duplicates, every split's
    classes; a multi-label file's val and test rows may only name labels train has), its form and its target
    columns. Nothing but the CSV is opened.

    Args:
        csv_path: The CSV.
        root: ``data.root``, that the paths are relative to (for the messages); ``None``: the CSV's folder.
        allow_absolute: Accept absolute paths (files on other disks); relative ones must still stay inside.

    Returns:
        ``(rows, form, columns)``: the form is ``label``, the multi-label ``labels`` / ``columns``
        (:func:`~litstarter._engine.images.label_sets.csv_form`) or ``values`` (numeric target columns:
        :mod:`.label_values`); ``columns`` are the target columns as written (every column but ``path`` and
        ``split``).

    Raises:
        UsageError: the CSV does not exist.
        BadInputError: a column is missing, a cell is empty, a split name is unknown, a path leaves the root,
            a path is listed twice, or a split's classes differ from train's.
    """
    csv_path = Path(csv_path)
    columns, raw_rows, written = _open_rows(csv_path)
    repeated = sorted({w for c, w in zip(columns, written, strict=True) if columns.count(c) > 1})
    if repeated:  # csv.DictReader keeps the last of a repeated column: a label's other column would be lost
        raise BadInputError(
            f"data.labels '{csv_path}' has the column(s) {repeated} more than once in its header (line 1);"
            " name each column once"
        )
    form = "masks" if {"image", "mask"} <= set(columns) else csv_form(columns)
    if form != "masks" and ("path" not in columns or (form == "label" and "label" not in columns)):
        raise BadInputError(
            f"data.labels '{csv_path}' has the columns {columns}; expected a header with path,label and optionally"
            " split (or path,labels with ';'-separated labels, path and one 0/1 column per label, path and numeric"
            " target columns, or image,mask; boxes: path,x1,y1,x2,y2,label or the TensorFlow CSV's"
            " filename,width,height,class,xmin,ymin,xmax,ymax)"
        )
    has_split = "split" in columns
    headers = {c: w for c, w in zip(columns, written, strict=True) if c not in NOT_LABELS and form != "masks"}
    if form == "columns" and holds_values(raw_rows, headers):
        form = "values"
    rows = [_row(csv_path, raw, line, has_split, form, headers) for line, raw in enumerate(raw_rows, start=2)]
    if not rows:
        raise BadInputError(f"data.labels '{csv_path}' has a header but no rows")
    _check_inside(csv_path, Path(root) if root is not None else csv_path.parent, rows, allow_absolute)
    _check_duplicates(csv_path, rows)
    if form in ("labels", "columns"):
        check_vocabulary(csv_path, rows)
        if form == "columns":
            warn_unmarked(csv_path, rows, list(headers.values()))
    elif has_split:
        _check_splits(csv_path, rows)
    return rows, form, list(headers.values())
