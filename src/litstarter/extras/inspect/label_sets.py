"""``inspect`` on multi-label data: the loss weight that each label's balance calls for (the figures themselves are
the label-set kind's summary, :mod:`litstarter._engine.targets.label_sets`)."""

from __future__ import annotations

#: Above this negatives-per-positive ratio of a label in train, ``model.pos_weight: auto`` is suggested.
POS_WEIGHT_LIMIT = 10.0


def pos_weight_suggestion(stats: dict, pos_weight: object) -> dict | None:
    """``model.pos_weight: auto`` when a label's train negatives outnumber its positives by more than
    :data:`POS_WEIGHT_LIMIT` and no ``pos_weight`` is set."""
    skewed = {n: r for n, r in stats["negatives_per_positive"].items() if r is not None and r > POS_WEIGHT_LIMIT}
    if not skewed or pos_weight is not None:
        return None
    listed = ", ".join(f"{n} {r}:1" for n, r in skewed.items())
    return {"option": "model.pos_weight", "value": "auto", "why": f"negatives per positive in train: {listed}"}
