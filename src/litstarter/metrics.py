"""The classification metrics logged at each stage, and how their values become loggable scalars."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torchmetrics import Metric, MetricCollection
from torchmetrics.classification import (
    MulticlassAccuracy,
    MulticlassAUROC,
    MulticlassCalibrationError,
    MulticlassConfusionMatrix,
    MulticlassF1Score,
    MulticlassPrecision,
    MulticlassRecall,
)

from litstarter._engine.deprecation import Deprecated, deprecated_names

__all__ = ["classification_metrics", "scalar_metrics", "selection_score", "split_confusion_matrix"]

# Exact AUROC: it keeps every (N, K) probability (4 * N * K bytes, gathered across processes at compute).
# The binned variant (an int here) has constant memory, but under `deterministic: true` torchmetrics counts
# its bins with an (N*K*bins) x (K*bins*4) comparison: minutes per batch. Bin only with deterministic off.
_AUROC_THRESHOLDS = None
# Key of the (K, K) confusion matrix in a stage's collection; split off before logging scalars.
_CONFUSION_MATRIX = "confusion_matrix"
#: The most val/loss can add to ``val/select``: under one image's step of macro-F1 on validation splits up to
#: about 10,000 images, so it only orders epochs whose macro-F1 ties.
_TIE_BREAK = 1e-4


def selection_score(f1_macro: torch.Tensor, loss: torch.Tensor) -> torch.Tensor:
    """``val/select``, what the checkpoint and early stopping follow: macro-F1 (every class weighs the same, so a
    rare class is not drowned by common ones), ties broken by the lower loss (a small validation split ties, and
    its F1 saturates at 1.0 early: the loss keeps telling the epochs apart).

    Args:
        f1_macro: The epoch's macro-F1, in 0..1.
        loss: The epoch's mean validation loss (>= 0).
    """
    return f1_macro + _TIE_BREAK / (1.0 + loss)


def classification_metrics(num_classes: int, stage: str) -> MetricCollection:
    """The metric set of one stage, with keys prefixed ``<stage>/``. Update it with probabilities ``(B, K)``.

    * ``train``: ``acc``, ``f1_macro`` (kept cheap: updated every step).
    * ``val``: also macro precision and recall, per-class recall (``recall/<class>``), one-vs-rest macro AUROC
      and the confusion matrix (no micro averages: for one label per image each equals ``acc``).
    * ``test``: all of ``val`` plus the expected calibration error ``ece`` (15 equal-width bins, L1).

    Args:
        num_classes: Number of classes.
        stage: ``"train"``, ``"val"`` or ``"test"``.
    """
    if stage not in ("train", "val", "test"):
        raise ValueError(f"stage must be 'train', 'val' or 'test', got {stage!r}")
    k = num_classes
    metrics: dict[str, Metric] = {
        "acc": MulticlassAccuracy(k, average="micro"),
        "f1_macro": MulticlassF1Score(k, average="macro"),
    }
    if stage in ("val", "test"):
        metrics |= {
            "precision_macro": MulticlassPrecision(k, average="macro"),
            "recall_macro": MulticlassRecall(k, average="macro"),
            "recall": MulticlassRecall(k, average=None),  # (K,): one value per class
            "auroc_macro": MulticlassAUROC(k, average="macro", thresholds=_AUROC_THRESHOLDS),
            _CONFUSION_MATRIX: MulticlassConfusionMatrix(k),
        }
    if stage == "test":
        metrics["ece"] = MulticlassCalibrationError(k, n_bins=15, norm="l1")
    return MetricCollection(metrics, prefix=f"{stage}/")


def split_confusion_matrix(values: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], torch.Tensor | None]:
    """Take the ``(K, K)`` confusion matrix (rows: true class) out of a computed collection."""
    values = dict(values)
    key = next((k for k in values if k.endswith("/" + _CONFUSION_MATRIX) or k == _CONFUSION_MATRIX), None)
    return values, (values.pop(key) if key is not None else None)


def scalar_metrics(values: dict[str, torch.Tensor], class_names: Sequence[str]) -> dict[str, torch.Tensor]:
    """Per-class vectors ``(K,)`` as one scalar per class: ``{"val/recall": [0.9, 1.0]}`` with ``["cat", "dog"]``
    becomes ``{"val/recall/cat": 0.9, "val/recall/dog": 1.0}``; scalars pass through.

    Args:
        values: A computed :class:`MetricCollection` (the confusion matrix already split off).
        class_names: Names in label order; a ``/`` inside a name becomes ``_`` (it would nest the tag).
    """
    out: dict[str, torch.Tensor] = {}
    for key, value in values.items():
        if value.ndim == 0:
            out[key] = value
        elif value.ndim == 1 and len(value) == len(class_names):
            for name, v in zip(class_names, value, strict=True):
                out[f"{key}/{str(name).replace('/', '_')}"] = v
        else:
            raise ValueError(
                f"metric {key!r} has shape {tuple(value.shape)}; expected a scalar or one value per class "
                f"({len(class_names)})"
            )
    return out


#: Names 0.1.0 exposed, private since 0.2.0 (only this module uses them).
__getattr__ = deprecated_names(
    __name__,
    {
        "AUROC_THRESHOLDS": Deprecated("_AUROC_THRESHOLDS", removed_in="0.3.0"),
        "CONFUSION_MATRIX": Deprecated("_CONFUSION_MATRIX", removed_in="0.3.0"),
        "TIE_BREAK": Deprecated("_TIE_BREAK", removed_in="0.3.0"),
    },
)
