"""Single-label classification's answers: a softmax over the logits, the top ``k`` classes."""

from __future__ import annotations

import numpy as np

from litstarter.tasks.answers import TaskAnswers, softmax


class ClassificationAnswers(TaskAnswers):
    """One class per image: probabilities are the softmax; an answer is the ``k`` likeliest classes."""

    name = "single_label"
    output_kind = "logits; apply softmax for probabilities"
    agreement_name = "top1_agreement"
    score_name = "accuracy"
    metric_name = "acc"

    def agreement(self, outputs: np.ndarray, reference: np.ndarray) -> float:
        """The share of images with the same top-1 class."""
        return float((outputs.argmax(1) == reference.argmax(1)).mean())

    def scored(self, outputs: np.ndarray, targets: np.ndarray) -> float:
        """Accuracy against ``(N,)`` class indices."""
        return float((outputs.argmax(1) == targets[: len(outputs)]).mean())

    def predicted(self, p: np.ndarray) -> str:
        """The likeliest class's name."""
        return self.class_names[int(np.argmax(p))]

    def contract_fields(self) -> dict:
        """Nothing: a contract without ``task`` is single-label."""
        return {}

    def outputs(self, logits: np.ndarray) -> np.ndarray:
        """Probabilities: the row-wise softmax, float64."""
        return softmax(logits)

    def answer(self, p: np.ndarray, k: int) -> tuple[list[tuple[str, float]], None]:
        """The top ``k`` ``(class, probability)`` pairs, best first (ties in class order)."""
        return [(self.class_names[i], float(p[i])) for i in np.argsort(-p, kind="stable")[:k]], None

    def json_answer(self, p: np.ndarray, k: int) -> dict:
        """``{"predictions": [{"class", "index", "prob"}, ...]}``, the top ``k``, best first."""
        order = np.argsort(-p, kind="stable")[:k]
        return {"predictions": [{"class": self.class_names[i], "index": int(i), "prob": float(p[i])} for i in order]}


ANSWERS = ClassificationAnswers
