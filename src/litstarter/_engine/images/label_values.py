"""Numeric rows of a labels file: ``path,<target>,<target>,...[,split]``, one number per target (regression).

A labels file without a ``label`` or ``labels`` column names its targets in its other columns (every column but
``path`` and ``split``, as written). When every cell of those columns is ``0`` or ``1`` and there are several, they
are labels (one 0/1 column per label: :mod:`.label_sets`); otherwise every cell must be a number, and each image's
numbers are its targets: ``path,age`` holds one per image, ``path,x,y`` two. A cell that is empty, ``nan`` or
not a number is refused, naming the row and the column: every image needs every target.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from ..errors import BadInputError


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
        values.append(value)
    return tuple(values)
