"""The multi-label task's arithmetic: per-label thresholds tuned for F1, and ``pos_weight: auto``."""

from __future__ import annotations

import torch

__all__ = ["positive_weights", "tune_thresholds"]

#: The threshold a label keeps when its F1 cannot be tuned (no positives in the validation split).
_FALLBACK_THRESHOLD = 0.5


def tune_thresholds(probs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """One threshold per label, maximising that label's F1 on ``(probs, targets)`` (a label is predicted at or
    above its threshold). Every distinct probability is a candidate cut; the threshold is the midpoint between the
    chosen cut and the next lower probability, so the F1 reached here is the F1 at the threshold. A label with no
    positive (or whose best F1 is 0) keeps 0.5 (:data:`_FALLBACK_THRESHOLD`). Ties keep the highest threshold.

    Args:
        probs: ``(N, K)`` sigmoid probabilities.
        targets: ``(N, K)`` 0/1 targets.
    """
    probs, targets = probs.double().cpu(), (targets > 0.5).double().cpu()
    out = torch.full((probs.shape[1],), _FALLBACK_THRESHOLD, dtype=torch.float64)
    for k in range(probs.shape[1]):
        p, order = probs[:, k].sort(descending=True)
        t = targets[order, k]
        positives = t.sum()
        if len(p) == 0 or positives == 0:
            continue
        tp = t.cumsum(0)
        predicted = torch.arange(1, len(p) + 1, dtype=torch.float64)
        f1 = 2 * tp / (predicted + positives)  # 2TP / (2TP + FP + FN)
        last_of_tie = torch.ones(len(p), dtype=torch.bool)
        last_of_tie[:-1] = p[:-1] != p[1:]  # a cut between equal probabilities is not a threshold
        f1 = torch.where(last_of_tie, f1, torch.zeros_like(f1))
        best = int(f1.argmax())
        if f1[best] <= 0:
            continue
        below = p[best + 1] if best + 1 < len(p) else p[best] / 2
        out[k] = (p[best] + below) / 2
    return out.float()


def positive_weights(positives, total: int) -> torch.Tensor:
    """``pos_weight: auto``: negatives / positives per label of the train split (1 for a balanced label; a label
    with no positive gets the weight of one).

    Args:
        positives: Train images with each label, ``(K,)``.
        total: Train images.
    """
    positives = torch.as_tensor(positives, dtype=torch.float64)
    return ((total - positives) / positives.clamp(min=1)).clamp(min=1e-3).float()
