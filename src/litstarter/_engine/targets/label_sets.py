"""A set of labels per image (``label_set``): a multi-label labels CSV (:mod:`..images.label_sets`)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from itertools import combinations

import numpy as np

from ..images.label_sets import SEPARATOR, carve_sets, multi_hot
from ..images.splits import SourceFile
from .base import TargetKind

#: Label pairs ``inspect`` lists (the most common first).
TOP_PAIRS = 10


class LabelSetTargets(TargetKind):
    """The label names of each image, stored ``(N, K)`` float32 multi-hot; splits by iterative stratification."""

    name = "label_set"
    noun = "label"
    how = "stratified by label (iterative stratification)"
    #: A label only val or test rows carry is refused when the CSV is read: here the fractions carved it away.
    empty_hint = "; lower data.val_fraction and data.test_fraction, or give those labels more images"

    def stack(self, targets: Sequence, names: Sequence[str]) -> np.ndarray:
        """``(N, K)`` float32: 1 where the image has the label."""
        return multi_hot(list(targets), names)

    def carve(
        self,
        files: list[SourceFile],
        names: list[str],
        val_fraction: float,
        test_fraction: float,
        seed: int,
        where: str,
    ) -> dict[str, list[SourceFile]]:
        """Iterative stratification of the label sets (:func:`..images.label_sets.stratify`), each split sorted by
        path."""
        parts = carve_sets(
            files, self.stack([f.target for f in files], names), val_fraction, test_fraction, seed, where
        )
        return {split: sorted(part, key=lambda f: os.fsencode(f.path)) for split, part in parts.items()}

    def strata(self, stored: np.ndarray) -> np.ndarray:
        """The label sets themselves."""
        return (stored > 0).astype(np.int64)

    def text(self, row, names: Sequence[str]) -> str:
        """The labels ``;``-joined (``""``: none)."""
        return SEPARATOR.join(n for n, on in zip(names, row, strict=True) if on > 0)

    def column(self, names: Sequence[str]) -> list[str]:
        """``labels``."""
        return ["labels"]

    def valid(self, target, k: int) -> bool:
        """A list of at most ``k`` label names."""
        return isinstance(target, list) and len(target) <= k and all(isinstance(n, str) for n in target)

    def empty(self, stored: np.ndarray, names: Sequence[str]) -> list[str]:
        """The labels no image has."""
        return [n for n, count in zip(names, self.class_counts(stored, len(names)), strict=True) if count == 0]

    def class_counts(self, stored: np.ndarray, k: int) -> np.ndarray:
        """Images with each label."""
        return stored.reshape(len(stored), k).sum(axis=0).astype(np.int64)

    def summary(self, by_split: dict[str, np.ndarray], names: Sequence[str]) -> dict:
        """``{"label_sets": ...}``: the label-set figures of every split (``train`` for the balance).

        * ``cardinality``: labels per image over every split: ``min``, ``mean``, ``max``;
        * ``no_label``: images with none of the labels, per split and in all;
        * ``pairs``: the most common label pairs appearing together on one image, ``[[a, b, count]]``;
        * ``negatives_per_positive``: per label, train images without it per image with it (``None``: no positive).
        """
        every = np.concatenate(list(by_split.values())) if by_split else np.zeros((0, len(names)))
        per_image = every.sum(axis=1)
        pairs: Counter = Counter()
        for row in every:
            pairs.update(combinations([names[i] for i in np.flatnonzero(row)], 2))
        train = by_split.get("train", every)
        positives = train.sum(axis=0)
        ratio = {
            n: (round(float((len(train) - p) / p), 2) if p else None) for n, p in zip(names, positives, strict=True)
        }
        no_label = {split: int((t.sum(axis=1) == 0).sum()) for split, t in by_split.items()}
        stats = {
            "cardinality": {
                "min": int(per_image.min()) if len(every) else 0,
                "mean": round(float(per_image.mean()), 3) if len(every) else 0.0,
                "max": int(per_image.max()) if len(every) else 0,
            },
            "no_label": {**no_label, "all": sum(no_label.values())},
            "pairs": [[a, b, n] for (a, b), n in pairs.most_common(TOP_PAIRS)],
            "negatives_per_positive": ratio,
        }
        return {"label_sets": stats}

    def summary_lines(self, summary: dict) -> list[str]:
        """The label-set figures' lines."""
        stats = summary["label_sets"]
        c, none = stats["cardinality"], stats["no_label"]
        return [
            f"labels per image: min {c['min']}, mean {c['mean']}, max {c['max']}",
            f"images with no label: {none['all']} ("
            + ", ".join(f"{s} {n}" for s, n in none.items() if s != "all")
            + ")",
            "most common label pairs: " + (", ".join(f"{a}+{b} {n}" for a, b, n in stats["pairs"]) or "none"),
            "negatives per positive (train): "
            + ", ".join(f"{n} {'-' if r is None else r}" for n, r in stats["negatives_per_positive"].items()),
        ]


KIND = LabelSetTargets()
