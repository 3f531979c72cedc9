"""Numbers per image (``value``): a labels CSV whose target columns hold numbers (``path,age`` or ``path,x,y``)."""

from __future__ import annotations

import math
import os
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from litstarter.errors import UsageError

from ..images.splits import SourceFile
from .base import TargetKind
from .classes import carve_groups

#: Splits and folds are stratified on at most this many bands of the first target's values (equal counts).
MAX_BANDS = 10


class ValueTargets(TargetKind):
    """One number per target column, stored ``(N, K)`` float32; splits are stratified on bands of the first target."""

    name = "value"
    noun = "target"
    how = "stratified by value bands of the first target"
    rest = "the rest of each value band"
    fewest = 1
    strata_are_classes = False

    def stack(self, targets: Sequence, names: Sequence[str]) -> np.ndarray:
        """``(N, K)`` float32 values."""
        return np.array(targets, dtype=np.float32).reshape(len(targets), len(names))

    def carve(
        self,
        files: list[SourceFile],
        names: list[str],
        val_fraction: float,
        test_fraction: float,
        seed: int,
        where: str,
    ) -> dict[str, list[SourceFile]]:
        """Each band of the first target's values (equal counts, as many as give each split about one image per
        band, at most :data:`MAX_BANDS`) split by the fractions, seeded: val and test span the whole range."""
        files = sorted(files, key=lambda f: os.fsencode(f.path))  # ties in value: by path, as every carve
        smallest = min(f for f in (val_fraction, test_fraction) if f > 0)
        count = max(1, min(MAX_BANDS, round(len(files) * smallest)))
        bands = value_bands(np.array([f.target[0] for f in files], dtype=np.float64), count)
        by_band: dict[int, list[SourceFile]] = defaultdict(list)
        for f, band in zip(files, bands, strict=True):
            by_band[int(band)].append(f)
        labels = [f"value band {b + 1} of {count}" for b in range(count)]
        return carve_groups(by_band, labels, val_fraction, test_fraction, seed, where, unit="value band")

    def strata(self, stored: np.ndarray) -> np.ndarray:
        """One column per band of the first target (about 20 images a band, at most :data:`MAX_BANDS`)."""
        count = max(1, min(MAX_BANDS, len(stored) // 20))
        bands = value_bands(stored.reshape(len(stored), -1)[:, 0].astype(np.float64), count)
        return (bands[:, None] == np.arange(count)[None, :]).astype(np.int64)

    def strata_names(self, names: Sequence[str], stored: np.ndarray) -> list[str]:
        """Each band as the first target's range, e.g. ``age 20-34``."""
        first = stored.reshape(len(stored), -1)[:, 0].astype(np.float64)
        bands = self.strata(stored).argmax(axis=1)
        ranges = [first[bands == b] for b in range(self.strata(stored).shape[1])]
        return [
            f"{names[0]} {r.min():.4g}-{r.max():.4g}" if len(r) else f"{names[0]} band {b + 1}"
            for b, r in enumerate(ranges)
        ]

    def text(self, row, names: Sequence[str]) -> str:
        """The values ``;``-joined, each to a float32's full precision."""
        return ";".join(self.cells(row, names))

    def column(self, names: Sequence[str]) -> list[str]:
        """One column per target, named as it."""
        return list(names)

    def cells(self, row, names: Sequence[str]) -> list[str]:
        """Each target's value."""
        return [f"{float(v):.9g}" for v in np.asarray(row).reshape(len(names))]

    def valid(self, target, k: int) -> bool:
        """A list of ``k`` finite numbers."""
        return (
            isinstance(target, list)
            and len(target) == k
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in target)
        )

    def class_counts(self, stored: np.ndarray, k: int) -> np.ndarray:
        """Values have no classes to count.

        Raises:
            UsageError: always (class weights and class-balancing samplers are for classes).
        """
        raise UsageError("the data's targets are values (regression): there are no classes to count or balance")

    def summary(self, by_split: dict[str, np.ndarray], names: Sequence[str]) -> dict:
        """``{"values": {split: {target: {"min", "median", "mean", "max", "std"}}}}``."""
        out = {}
        for split, stored in by_split.items():
            values = stored.reshape(len(stored), len(names)).astype(np.float64)
            out[split] = {name: _spread(column) for name, column in zip(names, values.T, strict=True)}
        return {"values": out}

    def summary_lines(self, summary: dict) -> list[str]:
        """``values (train): age 2..90 (median 40, mean 41.2, std 17)``, a line per split."""
        lines = []
        for split, targets in summary["values"].items():
            shown = [
                f"{name} {s['min']:.4g}..{s['max']:.4g} (median {s['median']:.4g}, mean {s['mean']:.4g},"
                f" std {s['std']:.3g})"
                if s
                else f"{name} -"
                for name, s in targets.items()
            ]
            lines.append(f"values ({split}): " + ", ".join(shown))
        return lines


def _spread(column: np.ndarray) -> dict:
    """The min, median, mean, max and std of one target's values (``{}`` for none)."""
    if len(column) == 0:
        return {}
    return {
        "min": float(column.min()),
        "median": float(np.median(column)),
        "mean": float(column.mean()),
        "max": float(column.max()),
        "std": float(column.std()),
    }


def value_bands(values: np.ndarray, count: int) -> np.ndarray:
    """``(N,)`` band of each value, ``0..count-1``, by rank (ties by position): equal counts, low values first."""
    order = np.argsort(values, kind="stable")
    bands = np.empty(len(values), dtype=np.int64)
    bands[order] = np.arange(len(values)) * count // max(len(values), 1)
    return bands


KIND = ValueTargets()
