"""Multi-label classification's answers: a sigmoid per label, and the labels at or above their thresholds."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from litstarter.tasks.answers import TaskAnswers, sigmoid


class MultilabelAnswers(TaskAnswers):
    """A set of labels per image: each label's sigmoid, predicted at or above its threshold (tuned on val)."""

    name = "multilabel"
    output_kind = "logits; apply a sigmoid per label for probabilities, predict those >= thresholds"
    agreement_name = "label_set_agreement"
    score_name = "map_macro"

    def agreement(self, outputs: np.ndarray, reference: np.ndarray) -> float:
        """The share of images whose predicted label set (at the thresholds) is the same."""
        thresholds = np.asarray(self.thresholds)
        same = (self.probabilities(outputs) >= thresholds) == (self.probabilities(reference) >= thresholds)
        return float(same.all(axis=1).mean())

    def score(self, logits: np.ndarray, targets: np.ndarray) -> float:
        """Mean average precision over the labels with a positive in ``(N, K)`` 0/1 ``targets`` (as the task's
        ``map_macro``: a label without one is left out)."""
        from sklearn.metrics import average_precision_score

        targets = np.asarray(targets)[: len(logits)] > 0
        present = targets.any(axis=0)
        if not present.any():
            return 0.0
        probabilities = self.probabilities(logits)[:, present]
        return float(average_precision_score(targets[:, present], probabilities, average="macro"))

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
