"""Multi-label classification's answers: a sigmoid per label, and the labels at or above their thresholds."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from litstarter.tasks.answers import TaskAnswers, sigmoid


class MultilabelAnswers(TaskAnswers):
    """A set of labels per image: each label's sigmoid, predicted at or above its threshold (tuned on val)."""

    name = "multilabel"
    output_kind = "logits; apply a sigmoid per label for probabilities, predict those >= thresholds"
    state_keys = ("thresholds",)
    agreement_name = "label_set_agreement"
    score_name = "map_macro"
    metric_name = "map_macro"

    def agreement(self, outputs: np.ndarray, reference: np.ndarray) -> float:
        """The share of images whose predicted label set (at the thresholds) is the same."""
        thresholds = np.asarray(self.thresholds)
        same = (self.outputs(outputs) >= thresholds) == (self.outputs(reference) >= thresholds)
        return float(same.all(axis=1).mean())

    def scored(self, outputs: np.ndarray, targets: np.ndarray) -> float:
        """Mean average precision of the ``(N, K)`` probabilities over the labels with a positive in the 0/1
        ``targets`` (as the task's ``map_macro``: a label without one is left out)."""
        from sklearn.metrics import average_precision_score

        targets = np.asarray(targets)[: len(outputs)] > 0
        present = targets.any(axis=0)
        if not present.any():
            return 0.0
        return float(average_precision_score(targets[:, present], outputs[:, present], average="macro"))

    def predicted(self, p: np.ndarray) -> str:
        """The labels at or above their thresholds, ``;``-joined."""
        return ";".join(self.answer(p, len(p))[1])

    @property
    def thresholds(self) -> list[float]:
        """The threshold per label, in label order."""
        return self.state["thresholds"]

    @classmethod
    def state_from(cls, hparams: Mapping, num_classes: int) -> dict:
        """The thresholds the checkpoint stores (``label_thresholds``: tuned on validation, or the
        ``model.thresholds`` its fit was given); 0.5 each where it has none."""
        return {"thresholds": list((hparams.get("answers") or {}).get("thresholds") or [0.5] * num_classes)}

    def outputs(self, logits: np.ndarray) -> np.ndarray:
        """Probabilities: the element-wise sigmoid, float64."""
        return sigmoid(logits)

    def answer(self, p: np.ndarray, k: int) -> tuple[list[tuple[str, float]], list[str]]:
        """Every label's pair in label order, and the labels at or above their thresholds (``k`` is not used)."""
        chosen = [n for n, pi, t in zip(self.class_names, p, self.thresholds, strict=True) if pi >= t]
        return [(n, float(pi)) for n, pi in zip(self.class_names, p, strict=True)], chosen

    def json_answer(self, p: np.ndarray, k: int) -> dict:
        """``{"labels": [...], "probabilities": {label: p}}``."""
        pairs, labels = self.answer(p, k)
        return {"labels": labels, "probabilities": dict(pairs)}

    def csv_columns(self, k: int) -> list[str]:
        """``labels`` (``;``-joined), then ``prob_<label>`` for every label."""
        return ["labels", *(f"prob_{n}" for n in self.class_names)]

    def csv_cells(self, p: np.ndarray, k: int) -> list[str]:
        """The predicted labels, then every label's probability."""
        pairs, labels = self.answer(p, k)
        return [";".join(labels), *(f"{value:.6f}" for _, value in pairs)]


ANSWERS = MultilabelAnswers
