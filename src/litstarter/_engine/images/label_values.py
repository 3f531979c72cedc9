"""Numeric rows of a labels file: ``path,<target>,<target>,...[,split]``, one number per target (regression).

A labels file without a ``label`` or ``labels`` column names its targets in its other columns (every column but
``path`` and ``split``, as written). When every cell of those columns is ``0`` or ``1`` and there are several, they
are labels (one 0/1 column per label: :mod:`.label_sets`); otherwise every cell must be a number, and each image's
numbers are its targets: ``path,age`` holds one per image, ``path,x,y`` two. A cell that is empty, ``nan`` or
not a number is refused, naming the row and the column: every image needs every target; so is one beyond
float32's range (``3.9e39``), the targets' storage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from litstarter.errors import BadInputError

#: The largest magnitude a target may have: targets are stored, and trained on, as float32.
FLOAT32_MAX = float(np.finfo(np.float32).max)


def holds_values(raw_rows: Sequence[dict], headers: dict[str, str]) -> bool:
    """Whether the target columns ``headers`` (lower -> as written) hold numbers rather than 0/1 label flags: a
    single column always does; several do unless every cell is ``0`` or ``1``."""
    if len(headers) == 1:
        return True
    return any((raw.get(key) or "").strip() not in ("0", "1") for raw in raw_rows for key in headers)


def row_values(csv_path: Path, line: int, raw: dict, headers: dict[str, str]) -> tuple[float, ...]:
    """The numbers of one row, in column order.

    Raises:
        BadInputError: a cell is empty, ``nan``/``inf``, or not a number (the row and the column named).
    """
    values = []
    for key, name in headers.items():
        cell = (raw.get(key) or "").strip()
        try:
            value = float(cell)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value):
            what = "empty" if not cell else repr(cell)
            raise BadInputError(
                f"data.labels '{csv_path}' line {line}: column '{name}' is {what}; every cell of the target columns"
                f" ({', '.join(headers.values())}) is a number: 0 or 1 with one column per label (multi-label), any"
                " finite number for regression targets; fill the cell or drop the row"
            )
        if abs(value) > FLOAT32_MAX:  # stored as float32: it would be inf, and so would the loss
            raise BadInputError(
                f"data.labels '{csv_path}' line {line}: column '{name}' is {cell!r}, beyond the float32 range the"
                f" targets are stored in (at most {FLOAT32_MAX:.4g} in magnitude); rescale the column (other units,"
                " or its logarithm)"
            )
        values.append(value)
    return tuple(values)


def first_non_flag(csv_path: Path, rows: Sequence, columns: Sequence[str]) -> str | None:
    """Why a labels file of several target columns was read as numbers rather than one 0/1 column per label, for a
    task that trains on labels: its first cell that is neither 0 nor 1, as one line; ``None`` when there is none to
    name (one column, or 0 and 1 spelled otherwise, ``1.0``).

    Args:
        csv_path: The labels file, named in the line.
        rows: Its rows (:class:`~.labels_csv.LabelRow`, each with its ``values`` in column order).
        columns: Its target columns, as written.
    """
    if len(columns) < 2:
        return None
    for row in rows:
        for name, value in zip(columns, row.values or (), strict=False):
            if value not in (0.0, 1.0):
                return (
                    f"data.labels '{csv_path}' line {row.line}: column '{name}' is {value:g}, where a multi-label"
                    " file's label columns hold 0 or 1 (one column per label); this cell makes the whole file"
                    " regression targets: write 0 or 1 there"
                )
    return None
