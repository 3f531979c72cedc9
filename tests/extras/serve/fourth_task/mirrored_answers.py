"""The mirrored task's answers: one sigmoid, mirrored at 0.5 (NumPy only, for ``infer`` and ``serve``)."""

from __future__ import annotations

import numpy as np

from litstarter.tasks.answers import TaskAnswers, sigmoid


class MirroredAnswers(TaskAnswers):
    """``{"mirrored": bool, "probability": p}`` per image."""

    name = "mirrored"
    output_kind = "logit; sigmoid >= 0.5: mirrored"
    output_name = "probability"
    ranks_classes = False
    min_outputs = 1
    agreement_name = "decision_agreement"
    score_name = "accuracy"
    metric_name = "acc"

    def outputs(self, logits: np.ndarray) -> np.ndarray:
        """The probability of being mirrored, ``(B, 1)``."""
        return sigmoid(logits)

    def answer(self, p: np.ndarray, k: int) -> tuple[list[tuple[str, float]], None]:
        """``[("mirrored", p)]``."""
        return [("mirrored", float(p[0]))], None

    def json_answer(self, p: np.ndarray, k: int) -> dict:
        """Whether the image is mirrored, and how likely."""
        return {"mirrored": bool(p[0] >= 0.5), "probability": float(p[0])}

    def csv_columns(self, k: int) -> list[str]:
        """``mirrored, probability``."""
        return ["mirrored", "probability"]

    def csv_cells(self, p: np.ndarray, k: int) -> list[str]:
        """``yes``/``no`` and the probability."""
        return [self.predicted(p), f"{float(p[0]):.6f}"]

    def predicted(self, p: np.ndarray) -> str:
        """``yes`` or ``no``."""
        return "yes" if p[0] >= 0.5 else "no"

    def agreement(self, outputs: np.ndarray, reference: np.ndarray) -> float:
        """The share of images with the same decision."""
        return float(((outputs[:, 0] >= 0) == (reference[:, 0] >= 0)).mean())

    def scored(self, outputs: np.ndarray, targets: np.ndarray) -> float:
        """Accuracy at 0.5 against ``(N, 1)`` targets."""
        truth = np.asarray(targets).reshape(-1)[: len(outputs)] >= 0.5
        return float(((outputs[:, 0] >= 0.5) == truth).mean())


ANSWERS = MirroredAnswers
