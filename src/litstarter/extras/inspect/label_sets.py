"""``inspect`` on multi-label data: labels per image, images with none, common pairs, and each label's balance."""

from __future__ import annotations

from collections import Counter
from itertools import combinations

import numpy as np

#: Above this negatives-per-positive ratio of a label in train, ``model.pos_weight: auto`` is suggested.
POS_WEIGHT_LIMIT = 10.0
#: Label pairs listed (the most common first).
TOP_PAIRS = 10


def label_set_stats(names: list[str], targets: dict[str, np.ndarray]) -> dict:
    """The label-set figures of every split's ``(N, K)`` targets (``train`` for the balance).

    * ``cardinality``: labels per image over every split: ``min``, ``mean``, ``max``;
    * ``no_label``: images with none of the labels, per split and in all;
    * ``pairs``: the most common label pairs appearing together on one image, ``[[a, b, count]]``;
    * ``negatives_per_positive``: per label, train images without it per image with it (``None``: no positive).
    """
    every = np.concatenate(list(targets.values())) if targets else np.zeros((0, len(names)))
    per_image = every.sum(axis=1)
    pairs: Counter = Counter()
    for row in every:
        pairs.update(combinations([names[i] for i in np.flatnonzero(row)], 2))
    train = targets.get("train", every)
    positives = train.sum(axis=0)
    ratio = {n: (round(float((len(train) - p) / p), 2) if p else None) for n, p in zip(names, positives, strict=True)}
    no_label = {split: int((t.sum(axis=1) == 0).sum()) for split, t in targets.items()}
    return {
        "cardinality": {
            "min": int(per_image.min()) if len(every) else 0,
            "mean": round(float(per_image.mean()), 3) if len(every) else 0.0,
            "max": int(per_image.max()) if len(every) else 0,
        },
        "no_label": {**no_label, "all": sum(no_label.values())},
        "pairs": [[a, b, n] for (a, b), n in pairs.most_common(TOP_PAIRS)],
        "negatives_per_positive": ratio,
    }


def pos_weight_suggestion(stats: dict, pos_weight: object) -> dict | None:
    """``model.pos_weight: auto`` when a label's train negatives outnumber its positives by more than
    :data:`POS_WEIGHT_LIMIT` and no ``pos_weight`` is set."""
    skewed = {n: r for n, r in stats["negatives_per_positive"].items() if r is not None and r > POS_WEIGHT_LIMIT}
    if not skewed or pos_weight is not None:
        return None
    listed = ", ".join(f"{n} {r}:1" for n, r in skewed.items())
    return {"option": "model.pos_weight", "value": "auto", "why": f"negatives per positive in train: {listed}"}


def render_label_sets(stats: dict) -> list[str]:
    """The figures' lines for the terminal."""
    c, none = stats["cardinality"], stats["no_label"]
    lines = [
        f"labels per image: min {c['min']}, mean {c['mean']}, max {c['max']}",
        f"images with no label: {none['all']} (" + ", ".join(f"{s} {n}" for s, n in none.items() if s != "all") + ")",
        "most common label pairs: " + (", ".join(f"{a}+{b} {n}" for a, b, n in stats["pairs"]) or "none"),
        "negatives per positive (train): "
        + ", ".join(f"{n} {'-' if r is None else r}" for n, r in stats["negatives_per_positive"].items()),
    ]
    return lines
