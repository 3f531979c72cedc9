"""Multi-label classification's answers: a sigmoid per label, and the labels at or above their thresholds."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from litstarter.tasks.answers import TaskAnswers, sigmoid


class MultilabelAnswers(TaskAnswers):
    """A set of labels per image: each label's sigmoid, predicted at or above its threshold (tuned on val)."""

    name = "multilabel"
    output_kind = "logits; apply a sigmoid per label for probabilities, predict those >= thresholds"

    def problem(self) -> str | None:
        """Thresholds are needed, one per label."""
        if self.thresholds is None or len(self.thresholds) != len(self.class_names):
            return f"thresholds need one value per class name for task multilabel, got {self.thresholds}"
        return None

    @classmethod
    def thresholds_from(cls, hparams: Mapping, num_classes: int) -> list[float]:
        """Those the checkpoint stores (``label_thresholds``: tuned on validation, or the ``model.thresholds`` its
        fit was given), put in ``hparams`` by the checkpoint reader; 0.5 each where it has none."""
        return [float(t) for t in hparams.get("label_thresholds") or [0.5] * num_classes]

    def contract_fields(self) -> dict:
        """``task`` and ``thresholds``."""
        return {"task": self.name, "thresholds": list(self.thresholds)}

    def probabilities(self, logits: np.ndarray) -> np.ndarray:
        """Element-wise sigmoid, float64."""
        return sigmoid(logits)

    def answer(self, p: np.ndarray, k: int) -> tuple[list[tuple[str, float]], list[str]]:
        """Every label's pair in label order, and the labels at or above their thresholds (``k`` is not used)."""
        chosen = [n for n, pi, t in zip(self.class_names, p, self.thresholds, strict=True) if pi >= t]
        return [(n, float(pi)) for n, pi in zip(self.class_names, p, strict=True)], chosen

    def json_answer(self, p: np.ndarray, k: int) -> dict:
        """``{"labels": [...], "probabilities": {label: p}}``."""
        pairs, labels = self.answer(p, k)
        return {"labels": labels, "probabilities": dict(pairs)}

    def csv_label_names(self) -> list[str]:
        """A ``prob_<label>`` column for every label."""
        return list(self.class_names)


ANSWERS = MultilabelAnswers
