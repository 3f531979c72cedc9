"""Multi-label rows of a labels file, and the stratified split of label sets.

Two forms of ``data.labels`` carry several labels per image (the plain ``path,label[,split]`` form carries one):

* ``path,labels[,split]``: the ``labels`` cell holds the image's labels separated by ``;``
  (:data:`SEPARATOR`), e.g. ``cat;dog``; an empty cell is an image with none of the labels. Python's ``csv``
  rules read the cell first, so a quoted ``"cat;dog"`` is still two labels: a label name cannot hold ``;``.
* ``path,<label>,<label>,...[,split]``: one column per label (its header is the label's name, as written), each
  cell ``0`` or ``1``; a row of zeros is an image with none of them.

The vocabulary is the sorted set of labels train has (every label in the file when the splits are carved). A
val or test row naming a label train lacks is refused, naming the row; a label column no train row marks (every
cell 0) is no label of the fit, said in one line. Splits from the fractions use the greedy
iterative stratification of Sechidis et al. (2011): the rarest label's images are placed first, each into the
split that lacks the most of that label, so every label is spread by the fractions as far as the sets allow.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from litstarter.errors import BadInputError

log = logging.getLogger("litstarter")

#: Separates the labels in the ``labels`` cell.
SEPARATOR = ";"
#: The columns that are never labels in the one-column-per-label form.
NOT_LABELS = ("path", "split")
#: How each form is named in the data line.
FORM_NAMES = {"labels": "path,labels: ';'-separated label sets", "columns": "path + one 0/1 column per label"}


def csv_form(columns: Sequence[str]) -> str:
    """``label`` (one class per row), ``labels`` (``;``-separated sets) or ``columns`` (one 0/1 column per label),
    from the lower-cased header."""
    if "label" in columns:
        return "label"
    if "labels" in columns:
        return "labels"
    return "columns" if "path" in columns and set(columns) - set(NOT_LABELS) else "label"


def split_cell(csv_path: Path, line: int, cell: str) -> tuple[str, ...]:
    """The sorted label names of a ``labels`` cell (``""``: none); a name left empty between separators is refused."""
    if not cell.strip():
        return ()
    names = [name.strip() for name in cell.split(SEPARATOR)]
    if "" in names:
        raise BadInputError(
            f"data.labels '{csv_path}' line {line}: labels {cell!r} has an empty name between '{SEPARATOR}'"
            f" separators; write the names separated by a single '{SEPARATOR}'"
        )
    return tuple(sorted(set(names)))


def column_labels(csv_path: Path, line: int, raw: dict, headers: dict[str, str]) -> tuple[str, ...]:
    """The label names whose 0/1 column is ``1`` in one row of the column form (``headers``: lower -> as written)."""
    names = []
    for key, name in headers.items():
        value = (raw.get(key) or "").strip()
        if value not in ("0", "1"):
            raise BadInputError(
                f"data.labels '{csv_path}' line {line}: column '{name}' is {value!r}; in the one-column-per-label"
                " form (path and label-name columns) every label cell is 0 or 1 (one label per row: a 'label'"
                " column; several: a 'labels' column of ';'-separated names)"
            )
        if value == "1":
            names.append(name)
    return tuple(sorted(names))


def check_vocabulary(csv_path: Path, rows: Sequence) -> None:
    """Refuse a val or test row naming a label that no train row has (the first such row named)."""
    train = {name for row in rows if row.split in (None, "train") for name in row.labels}
    if not any(row.split in (None, "train") for row in rows):
        raise BadInputError(f"data.labels '{csv_path}' has no train rows")
    for row in rows:
        unknown = sorted(set(row.labels) - train)
        if unknown:
            raise BadInputError(
                f"data.labels '{csv_path}' {row.describe()}: label(s) {unknown} are not in the train split's"
                f" vocabulary {sorted(train)}; every label must have train images"
            )


def warn_unmarked(csv_path: Path, rows: Sequence, columns: Sequence[str]) -> None:
    """One line naming the label columns (the one-column-per-label form) that no train row marks 1: they are no
    label of the fit (the vocabulary is train's), so nothing would learn or score them. A column marked in val or
    test rows alone is refused by :func:`check_vocabulary` first."""
    train = {name for row in rows if row.split in (None, "train") for name in row.labels}
    unmarked = [c for c in columns if c not in train]
    if unmarked:
        log.warning(
            "data.labels '%s': label column(s) %s mark no train image (every cell 0): not labels of this fit, nothing"
            " can learn them; give them images, or drop the columns",
            csv_path,
            unmarked,
        )


def multi_hot(label_sets: Sequence[Sequence[str]], vocabulary: Sequence[str]) -> np.ndarray:
    """``(N, K)`` float32 targets: 1 where the image has the label."""
    index = {name: i for i, name in enumerate(vocabulary)}
    out = np.zeros((len(label_sets), len(vocabulary)), dtype=np.float32)
    for row, names in enumerate(label_sets):
        out[row, [index[n] for n in names if n in index]] = 1.0
    return out


def stratify(targets: np.ndarray, fractions: dict[str, float], seed: int) -> list[str]:
    """The split of each image, greedy iterative stratification (Sechidis et al., 2011), seeded.

    Args:
        targets: ``(N, K)`` 0/1 label sets, in a fixed order (sorted by path).
        fractions: ``{split: fraction}`` summing to 1 (train's is the rest).
        seed: Breaks ties between splits, and orders each label's images.
    """
    rng = np.random.default_rng([seed, 7])
    names = list(fractions)
    share = np.array([fractions[s] for s in names])
    positives = (targets > 0).astype(np.float64)
    want_label = share[:, None] * positives.sum(axis=0)[None, :]  # (S, K): positives each split still wants
    want_total = share * len(targets)
    chosen = np.full(len(targets), -1)
    left = targets > 0
    while left.any():
        counts = left.sum(axis=0)
        label = int(np.argmin(np.where(counts > 0, counts, np.iinfo(np.int64).max)))  # the rarest label left
        for item in rng.permutation(np.flatnonzero(left[:, label])):
            split = _most_wanting(want_label[:, label], want_total, rng)
            chosen[item] = split
            want_label[split] -= positives[item]
            want_total[split] -= 1
            left[item] = False
    for item in rng.permutation(np.flatnonzero(chosen < 0)):  # images with no label: by size alone
        split = _most_wanting(want_total, want_total, rng)
        chosen[item] = split
        want_total[split] -= 1
    return [names[i] for i in chosen]


def _most_wanting(first: np.ndarray, second: np.ndarray, rng: np.random.Generator) -> int:
    """The split that wants the most by ``first``, then by ``second``, then at random."""
    best = np.flatnonzero(first == first.max())
    if len(best) > 1:
        best = best[second[best] == second[best].max()]
    return int(best[0] if len(best) == 1 else rng.choice(best))


def carve_sets(
    items: list, targets: np.ndarray, val_fraction: float, test_fraction: float, seed: int, where: str
) -> dict[str, list]:
    """``{split: items}`` of listed files with their ``(N, K)`` targets, stratified by :func:`stratify`.

    Raises:
        BadInputError: a split would be empty (too few images for the fractions).
    """
    order = sorted(range(len(items)), key=lambda i: os.fsencode(items[i].path))
    fractions = {"train": 1 - val_fraction - test_fraction, "val": val_fraction}
    if test_fraction:
        fractions["test"] = test_fraction
    splits = stratify(targets[order], fractions, seed)
    out: dict[str, list] = {split: [] for split in fractions}
    for i, split in zip(order, splits, strict=True):
        out[split].append(items[i])
    empty = [split for split, part in out.items() if not part]
    if empty:
        raise BadInputError(
            f"too few images to split {where}: {len(items)} image(s) leave split(s) {empty} empty with"
            f" data.val_fraction={val_fraction} and data.test_fraction={test_fraction}"
        )
    return out
