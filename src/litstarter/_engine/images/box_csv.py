"""A boxes CSV: ``path,x1,y1,x2,y2,label[,split]``, a row per box, in the file's pixels (as shown).

* An image's rows may be together or not; ``./a.png`` and ``a.png`` are one image. A row whose ``x1,y1,x2,y2`` and
  ``label`` are all empty is an image without boxes (a negative).
* Every cell is checked before any image is opened, and each bad one named by its line and column: an empty
  ``path``; an empty ``label`` beside coordinates (or coordinates missing beside a label); a coordinate that is not
  a finite number (``nan``, ``inf``, ``3 px``); an unknown ``split``, or one image given two splits. Every
  ``path`` must stay inside ``data.root`` (:func:`.confine.confine`).
* A header that is almost this one (a typo, ``y_2``; ``class`` for ``label``; ``image`` for ``path``) is refused
  naming the columns it lacks and the ones it has instead, not read as another kind of labels file.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from litstarter.errors import BadInputError

from .box_files import Annotated, checked
from .confine import confine
from .label_formats import Found, LabelFormat
from .listing import shown
from .splits import SPLIT_ALIASES, canonical_split

#: A boxes CSV's columns, in order.
BOX_COLUMNS = ("path", "x1", "y1", "x2", "y2", "label")
COORDINATES = ("x1", "y1", "x2", "y2")
#: What a boxes CSV's ``label`` column is often called instead.
LABEL_ALIASES = {"class", "category", "class_name", "category_name", "cls", "name"}
#: Bad cells named in full in one refusal; the rest are counted.
NAMED = 5


def box_header(path: Path) -> list[str] | None:
    """A CSV's header, stripped and lower-cased, when it is a boxes CSV's (it holds ``path,x1,y1,x2,y2,label``);
    ``None`` when it is another kind of labels file's (or the file cannot be read: the labels reader says why).

    Raises:
        BadInputError: the header is almost a boxes CSV's (see the module's docstring), naming what differs.
    """
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            written = [c.strip() for c in next(csv.reader(f), [])]
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    columns = [c.lower() for c in written]
    present = [c for c in BOX_COLUMNS if c in columns]
    if len(present) == len(BOX_COLUMNS):
        return columns
    labelled = "label" in columns or bool(LABEL_ALIASES & set(columns))
    if len(present) >= 4 and labelled and any(c in columns for c in COORDINATES):
        missing = [c for c in BOX_COLUMNS if c not in columns]
        unknown = [w for w, c in zip(written, columns, strict=True) if c not in (*BOX_COLUMNS, "split")]
        raise BadInputError(
            f"data.labels '{path}' has the header {','.join(written)}: it lacks {missing} and has {unknown} instead;"
            " a boxes CSV's header is path,x1,y1,x2,y2,label[,split] (line 1)"
        )
    return None


def read_box_csv(path: Path, root: Path) -> Annotated:
    """A boxes CSV's images with their boxes; class names: the labels, sorted.

    Raises:
        BadInputError: a column given twice, a bad cell (see the module's docstring; the first few named with
            their line and column), a path outside ``root``.
    """
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        columns = [c.strip().lower() for c in next(reader, [])]
        raw = [(reader.line_num, dict(zip(columns, (c.strip() for c in row), strict=False))) for row in reader if row]
    repeated = sorted({c for c in columns if columns.count(c) > 1})
    if repeated:
        raise BadInputError(f"data.labels '{path}' has the column(s) {repeated} more than once in its header (line 1)")
    if not raw:
        raise BadInputError(f"data.labels '{path}' has a header but no rows")
    rows, problems = [], []
    for line, row in raw:
        parsed = _parse(row, line, problems)
        if parsed is not None:
            rows.append(parsed)
    if problems:
        more = f"; and {len(problems) - NAMED} more" if len(problems) > NAMED else ""
        raise BadInputError(
            f"data.labels '{path}': {len(problems)} bad cell(s): {'; '.join(problems[:NAMED])}{more} (a row per box;"
            " a row whose x1,y1,x2,y2 and label are all empty is an image without boxes)"
        )
    names = confine(f"data.labels '{path}'", root, [(f"line {line}", name) for line, name, *_ in rows])
    names_sorted = sorted({label for *_, label in rows if label})
    by_image: dict[str, tuple[str | None, int, list]] = {}
    for (line, _, split, box, label), name in zip(rows, names, strict=True):
        first_split, first_line, boxes = by_image.setdefault(name, (split, line, []))
        if split != first_split:
            raise BadInputError(
                f"data.labels '{path}' line {line} column split: '{shown(name)}' is in split {split}, but line"
                f" {first_line} puts it in {first_split}; an image is in one split"
            )
        if label:
            boxes.append([*box, names_sorted.index(label)])
    result = Annotated(names_sorted)
    for name, (split, _, boxes) in by_image.items():
        result.images.append((root / name, split, checked(root / name, boxes, names_sorted, result, root)))
    return result


def _parse(row: dict, line: int, problems: list[str]) -> tuple | None:
    """``(line, path, split, [x1, y1, x2, y2], label)`` of one row, or ``None`` with its bad cells in
    ``problems`` as ``line N column C: why``."""
    at = f"line {line} column"
    before = len(problems)
    name, label = row.get("path", ""), row.get("label", "")
    if not name:
        problems.append(f"{at} path: empty")
    split = None
    if row.get("split"):
        split = canonical_split(row["split"])
        if split is None:
            problems.append(f"{at} split: {row['split']!r} is not one of {sorted(SPLIT_ALIASES)} (any case)")
    cells = [row.get(c, "") for c in COORDINATES]
    box = []
    if label or any(cells):
        if not label:
            problems.append(f"{at} label: empty beside a box (a box needs its class)")
        for column, cell in zip(COORDINATES, cells, strict=True):
            value = _finite(cell)
            if value is None:
                problems.append(f"{at} {column}: {cell!r} is not a finite number" if cell else f"{at} {column}: empty")
            box.append(value)
    return (line, name, split, box, label) if len(problems) == before else None


def _finite(cell: str) -> float | None:
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


class BoxCsv(LabelFormat):
    """The boxes CSV, named by ``data.labels``."""

    name = "boxes"
    title = "a boxes CSV"
    reads = "data.labels: <file>.csv with path,x1,y1,x2,y2,label[,split], a row per box"

    def claims(self, path: Path) -> bool:
        """A file (not ``.json``) with a boxes CSV's header (one almost so is refused: :func:`box_header`)."""
        return path.suffix.lower() != ".json" and box_header(path) is not None

    def read(self, root: Path, found: Found) -> Annotated:
        """:func:`read_box_csv`."""
        return read_box_csv(found.path, root)


FORMAT = BoxCsv()
