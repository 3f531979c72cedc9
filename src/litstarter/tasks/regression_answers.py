"""Image regression's answers: the graph's standardised outputs, de-standardised into the targets' values."""

from __future__ import annotations

import numpy as np

from litstarter.tasks.answers import TaskAnswers

#: An exported model agrees with eager on an image when every value is within this many target standard
#: deviations of eager's (the fp32 tolerances on the outputs themselves are checked beside it).
AGREEMENT_STDS = 1e-3


class RegressionAnswers(TaskAnswers):
    """One number per target: ``value = output * target_std + target_mean``."""

    name = "regression"
    output_kind = "standardised values; value = output * target_std + target_mean, per target (class_names)"
    output_name = "values"
    ranks_classes = False
    state_keys = ("target_mean", "target_std")
    min_outputs = 1
    agreement_name = "value_agreement"
    score_name = "r2"
    metric_name = "r2"
    output_prefix = "value_"

    def outputs(self, logits: np.ndarray) -> np.ndarray:
        """The values, ``(B, K)`` float64 in the targets' units."""
        mean, std = np.asarray(self.state["target_mean"]), np.asarray(self.state["target_std"])
        return logits.astype(np.float64) * std + mean

    def answer(self, p: np.ndarray, k: int) -> tuple[list[tuple[str, float]], None]:
        """Every target's ``(name, value)``, in target order (``k`` is not used)."""
        return [(n, float(v)) for n, v in zip(self.class_names, p, strict=True)], None

    def json_answer(self, p: np.ndarray, k: int) -> dict:
        """``{"value": v}`` for one target; ``{"values": {target: v}}`` for several."""
        pairs, _ = self.answer(p, k)
        return {"value": pairs[0][1]} if len(pairs) == 1 else {"values": dict(pairs)}

    def csv_columns(self, k: int) -> list[str]:
        """One column per target, named as it."""
        return list(self.class_names)

    def csv_cells(self, p: np.ndarray, k: int) -> list[str]:
        """Every target's value, to 9 significant digits (an FP32's full precision)."""
        return [f"{float(v):.9g}" for v in p]

    def agreement(self, outputs: np.ndarray, reference: np.ndarray) -> float:
        """The share of images whose every standardised output is within :data:`AGREEMENT_STDS` of eager's."""
        return float((np.abs(outputs - reference) <= AGREEMENT_STDS).all(axis=1).mean())

    def predicted(self, p: np.ndarray) -> str:
        """The values, ``;``-joined."""
        return ";".join(f"{float(v):.9g}" for v in p)

    def scored(self, outputs: np.ndarray, targets: np.ndarray) -> float:
        """R² of the values against ``(N, K)`` targets, averaged over the targets (as the task's ``r2``)."""
        values = outputs
        truth = np.asarray(targets, dtype=np.float64)[: len(values)].reshape(values.shape)
        residual = ((truth - values) ** 2).sum(axis=0)
        total = ((truth - truth.mean(axis=0)) ** 2).sum(axis=0)
        return float(np.mean(1.0 - residual / np.where(total > 0, total, 1.0)))


ANSWERS = RegressionAnswers
