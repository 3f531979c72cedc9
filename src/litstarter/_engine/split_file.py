"""``data.split_file``: ``index,split`` rows giving an array data set's split (a cross-validation fold's)."""

from __future__ import annotations

import csv

import numpy as np

from litstarter.errors import BadInputError


def read_split_file(path: str, n: int) -> dict[str, np.ndarray]:
    """``data.split_file``'s rows as ``{split: indices}`` (train and val required, test optional).

    Raises:
        BadInputError: the file is missing or a row is not ``<0..n-1>,<train|val|test>``.
    """
    try:
        with open(path, newline="") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as err:
        raise BadInputError(f"data.split_file '{path}': {err.strerror}") from None
    found: dict[str, list[int]] = {}
    for line, row in enumerate(rows, start=2):
        index, split = (row.get("index") or "").strip(), (row.get("split") or "").strip()
        if not index.isdigit() or int(index) >= n or split not in ("train", "val", "test"):
            raise BadInputError(
                f"data.split_file '{path}' line {line}: expected index,split with an index in 0..{n - 1} and a split"
                f" train, val or test, got {index!r},{split!r}"
            )
        found.setdefault(split, []).append(int(index))
    if not {"train", "val"} <= set(found):
        raise BadInputError(f"data.split_file '{path}' needs train and val rows; it has {sorted(found) or 'none'}")
    return {split: np.array(found[split], dtype=np.int64) for split in ("train", "val", "test") if split in found}
