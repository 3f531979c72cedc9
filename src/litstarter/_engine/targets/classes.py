"""One class per image (``class``): class folders, or a labels CSV's ``label`` column."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from litstarter.errors import BadInputError

from ..images.splits import SourceFile, split_counts
from .base import TargetKind


class ClassTargets(TargetKind):
    """A class index per image, stored ``(N,)`` int64; splits are carved class by class."""

    name = "class"
    rest = "the rest of each class"
    single_class = True

    def stack(self, targets: Sequence, names: Sequence[str]) -> np.ndarray:
        """``(N,)`` int64 class indices."""
        return np.array(targets, dtype=np.int64).reshape(len(targets))

    def carve(
        self,
        files: list[SourceFile],
        names: list[str],
        val_fraction: float,
        test_fraction: float,
        seed: int,
        where: str,
    ) -> dict[str, list[SourceFile]]:
        """Each class split by the fractions, permuted by a generator seeded from ``(seed, class index)``: a class's
        split does not change when another class gains files. Each split holds the classes in order, each sorted by
        path.

        Raises:
            BadInputError: a class has too few images to give every split at least one (every such class named).
        """
        by_class: dict[int, list[SourceFile]] = defaultdict(list)
        for f in files:
            by_class[f.target].append(f)
        return carve_groups(by_class, [f"class '{n}'" for n in names], val_fraction, test_fraction, seed, where)

    def order(self, files: list[SourceFile]) -> list[SourceFile]:
        """Class by class, each class's files as listed (a folder's walk, a labels file's rows)."""
        return sorted(files, key=lambda f: f.target)

    def strata(self, stored: np.ndarray) -> np.ndarray:
        """One column per class index (up to the largest present)."""
        return (stored[:, None] == np.arange(int(stored.max(initial=-1)) + 1)[None, :]).astype(np.int64)

    def text(self, row, names: Sequence[str]) -> str:
        """The class's name."""
        return names[int(row)]

    def valid(self, target, k: int) -> bool:
        """An int in ``0..k-1``."""
        return isinstance(target, int) and not isinstance(target, bool) and 0 <= target < k

    def empty(self, stored: np.ndarray, names: Sequence[str]) -> list[str]:
        """The classes without an image."""
        present = set(np.unique(stored).tolist())
        return [n for i, n in enumerate(names) if i not in present]

    def class_counts(self, stored: np.ndarray, k: int) -> np.ndarray:
        """Images per class."""
        return np.bincount(stored, minlength=k)


def carve_groups(
    groups: dict[int, list[SourceFile]],
    group_names: list[str],
    val_fraction: float,
    test_fraction: float,
    seed: int,
    where: str,
    unit: str = "class",
) -> dict[str, list[SourceFile]]:
    """Split each group (a class, a band of values) by the fractions, seeded per group by ``(seed, group index)``.

    Raises:
        BadInputError: a group has too few images to give every split at least one (every such group named).
    """
    out: dict[str, list[SourceFile]] = {"train": [], "val": []} | ({"test": []} if test_fraction else {})
    too_few = []
    for index, files in sorted(groups.items()):
        n_train, n_val, n_test = split_counts(len(files), val_fraction, test_fraction)
        if n_train < 1:
            too_few.append(f"{group_names[index]} has {len(files)} image(s)")
            continue
        files = sorted(files, key=lambda f: os.fsencode(f.path))  # a folder and a labels file carve alike
        order = np.random.default_rng([seed, index]).permutation(len(files))
        chosen = [files[i] for i in order]
        cuts = {"val": chosen[:n_val], "test": chosen[n_val : n_val + n_test], "train": chosen[n_val + n_test :]}
        for split, part in cuts.items():
            if split in out:
                out[split].extend(sorted(part, key=lambda f: os.fsencode(f.path)))
    if too_few:
        need = 1 + (val_fraction > 0) + (test_fraction > 0)
        raise BadInputError(
            f"too few images to split {where}: " + "; ".join(too_few) + f". With data.val_fraction={val_fraction}"
            f" and data.test_fraction={test_fraction} every {unit} needs at least {need} (one per split)."
        )
    return out


KIND = ClassTargets()
