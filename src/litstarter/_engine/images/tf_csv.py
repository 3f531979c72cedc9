"""The TensorFlow Object Detection CSV: ``filename,width,height,class,xmin,ymin,xmax,ymax``, a row per box, as
Roboflow exports it (``train/_annotations.csv`` beside the images) and the TensorFlow tutorials' ``xml_to_csv``
wrote it (``train_labels.csv``).

* Found as a CSV with that header in ``data.root`` or one of its folders (one level down), or named by
  ``data.labels``. Its split: an optional ``split`` column, else the CSV's folder (``train/``, ``valid/``) or its
  name (``train_labels.csv``), else the image's folders, else the fractions. Two CSVs of one split are refused.
* ``filename`` is relative to the CSV's folder (found there, else under ``data.root``, ``images/``, or the split's
  folder in either) and goes through :func:`.confine.confine` first. ``width`` and ``height`` are checked against
  the image (another size: not its image). ``xmin ymin xmax ymax`` are pixel edges.
* Classes: the ``class`` names, sorted. A row whose ``class`` and corners are all empty is an image without boxes.
* Every cell is checked before any image is opened, each bad one named by its line and column, whatever
  ``data.on_bad_box`` says (as the boxes CSV's); a header almost this one is named as such.
"""

from __future__ import annotations

import csv
import os
import posixpath
import re
from pathlib import Path

from litstarter.errors import BadInputError

from .annotation_files import files_in, number, relative, split_of, subfolders
from .box_files import Annotated, Drawn, numbered
from .confine import confine, outside_root
from .label_formats import Found, LabelFormat
from .listing import shown
from .splits import SPLIT_ALIASES, canonical_split

#: The header's columns (any order, any case).
TF_COLUMNS = ("filename", "width", "height", "class", "xmin", "ymin", "xmax", "ymax")
CORNERS = ("xmin", "ymin", "xmax", "ymax")
#: Bad cells named in full in one refusal; the rest are counted.
NAMED = 5


def tf_header(path: Path) -> list[str] | None:
    """A CSV's header, stripped and lower-cased, when it holds the TensorFlow CSV's columns; ``None`` otherwise.

    Raises:
        BadInputError: the header holds six or seven of them, naming what it lacks.
    """
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            written = [c.strip() for c in next(csv.reader(f), [])]
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    columns = [c.lower() for c in written]
    present = [c for c in TF_COLUMNS if c in columns]
    if len(present) == len(TF_COLUMNS):
        return columns
    if len(present) >= 6:
        missing = [c for c in TF_COLUMNS if c not in columns]
        unknown = [w for w, c in zip(written, columns, strict=True) if c not in (*TF_COLUMNS, "split")]
        raise BadInputError(
            f"'{path}' has the header {','.join(written)}: it lacks {missing} and has {unknown} instead; the"
            " TensorFlow CSV's header is filename,width,height,class,xmin,ymin,xmax,ymax (line 1)"
        )
    return None


class TensorFlowCsv(LabelFormat):
    """The TensorFlow Object Detection CSV (see the module's docstring)."""

    name = "tf_csv"
    title = "the TensorFlow CSV"
    reads = "<split>/_annotations.csv or data.labels: <file>.csv with filename,width,height,class,xmin,ymin,xmax,ymax"

    def detect(self, root: Path) -> Found | None:
        """The CSVs with its header in ``root`` and the folders in it."""
        csvs = [p for folder in (root, *subfolders(root)) for p in files_in(folder, ".csv") if tf_header(p)]
        if not csvs:
            return None
        files = tuple((p, _split(relative(p, root))) for p in csvs)
        named = csvs[0] if len(csvs) == 1 else Path(os.path.commonpath([p.parent for p in csvs]))
        return Found(self, named, ", ".join(relative(p, root) for p in csvs), files)

    def claims(self, path: Path) -> bool:
        """A file (not ``.json``) with its header."""
        return path.suffix.lower() != ".json" and tf_header(path) is not None

    def read(self, root: Path, found: Found) -> Annotated:
        """Every CSV of ``found``; an image in two CSVs or two splits refused."""
        splits: dict[str | None, Path] = {}
        for path, split in found.files:
            if split in splits:
                raise BadInputError(
                    f"'{path}' and '{splits[split]}' are both TensorFlow CSVs of split {split}: name the one to read"
                    " with data.labels"
                )
            splits[split] = path
        drawn: dict[Path, Drawn] = {}
        result = Annotated([])
        for path, split in found.files:
            _read_csv(path, root, split or _split(relative(path, root)), drawn, result)
        return numbered(list(drawn.values()), result, root)


def _split(name: str) -> str | None:
    """A CSV's split: its folders', else its name's (``train_labels.csv``: train)."""
    tokens = re.split(r"[_\-. ]+", Path(name).stem)
    return split_of(name) or next((canonical_split(t) for t in tokens if canonical_split(t)), None)


def _read_csv(path: Path, root: Path, split: str | None, drawn: dict[Path, Drawn], result: Annotated) -> None:
    """One CSV's rows into ``drawn`` (by image), every cell checked first, then every ``filename`` confined; a
    missing image is a bad annotation (``result``).

    Raises:
        BadInputError: bad cells (the first few named), a ``filename`` outside ``root``, an image in two splits.
    """
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.reader(f)
        columns = [c.strip().lower() for c in next(reader, [])]
        raw = [(reader.line_num, dict(zip(columns, (c.strip() for c in row), strict=False))) for row in reader if row]
    rows, problems = [], []
    for line, row in raw:
        parsed = _parse(row, line, problems)
        if parsed is not None:
            rows.append(parsed)
    if problems:
        more = f"; and {len(problems) - NAMED} more" if len(problems) > NAMED else ""
        raise BadInputError(
            f"'{path}': {len(problems)} bad cell(s): {'; '.join(problems[:NAMED])}{more} (a row per box:"
            " filename,width,height,class,xmin,ymin,xmax,ymax)"
        )
    base, where = relative(path.parent, root), relative(path, root)
    names = confine(f"'{path}'", root, [(f"line {row[0]}", row[1]) for row in rows], base=base)
    missing = set()
    for (line, written, size, row_split, box, label), name in zip(rows, names, strict=True):
        image = _image(root, name, written, row_split or split)
        if image is None:
            if written not in missing:
                missing.add(written)
                result.problems.append(
                    f"{where} line {line}: filename '{shown(written)}' is not found beside the CSV, under"
                    " data.root, images/ or the split's folder"
                )
            continue
        given = row_split or split or split_of(relative(image, root))
        entry = drawn.setdefault(image, Drawn(image, given, stated=size, where=where, stated_at=f"{where} line {line}"))
        if entry.split != given:
            raise BadInputError(
                f"'{path}' line {line}: '{shown(written)}' is in split {given}, but {entry.stated_at} puts it in"
                f" {entry.split}; an image is in one split"
            )
        if label:
            entry.add(box, label, f"line {line}")


def _parse(row: dict, line: int, problems: list[str]) -> tuple | None:
    """``(line, filename, (width, height), split, box, class)`` of one row, or ``None`` with its bad cells in
    ``problems``."""
    at, before = f"line {line} column", len(problems)
    name, label = row.get("filename", ""), row.get("class", "")
    if not name:
        problems.append(f"{at} filename: empty")
    size = tuple(number(row.get(c, "")) for c in ("width", "height"))
    for column, value in zip(("width", "height"), size, strict=True):
        if value is None:
            problems.append(f"{at} {column}: {row.get(column, '')!r} is not a number")
    split = None
    if row.get("split"):
        split = canonical_split(row["split"])
        if split is None:
            problems.append(f"{at} split: {row['split']!r} is not one of {sorted(SPLIT_ALIASES)} (any case)")
    cells = [row.get(c, "") for c in CORNERS]
    box = tuple(number(cell) for cell in cells)
    if label or any(cells):
        if not label:
            problems.append(f"{at} class: empty beside a box (a box needs its class)")
        for column, cell, value in zip(CORNERS, cells, box, strict=True):
            if value is None:
                problems.append(f"{at} {column}: {cell!r} is not a finite number" if cell else f"{at} {column}: empty")
    return (line, name, size, split, box, label) if len(problems) == before else None


def _image(root: Path, name: str, written: str, split: str | None) -> Path | None:
    """The image a row names: ``name`` (confined, relative to the CSV's folder), else ``written`` under
    ``root``, ``images/`` or the split's folder in either."""
    if (root / name).is_file():
        return root / name
    if outside_root(written) is not None:
        return None
    folders = ["", "images", *((split, posixpath.join("images", split)) if split else ())]
    return next((root / f / written for f in folders if (root / f / written).is_file()), None)


FORMAT = TensorFlowCsv()
