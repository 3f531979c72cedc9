"""Multi-label classification: several labels per image (``configs/task/multilabel.yaml``).

* Loss: ``BCEWithLogitsLoss`` on ``(B, K)`` logits against ``(B, K)`` 0/1 targets; ``pos_weight: auto`` weighs each
  label's positives by negatives / positives of the train split; ``label_smoothing`` moves the targets towards 0.5.
* Thresholds: after every validation one threshold per label is tuned on the validation split for that label's F1
  (``litstarter.thresholds.tune_thresholds``; a label with no positive there keeps 0.5), so the best
  checkpoint carries the thresholds tuned for its weights (buffer ``label_thresholds``). ``model.thresholds`` (one
  number or one per label) overrides them, at fit and at test.
* Metrics (torchmetrics' multilabel functions, on the whole stage's probabilities): ``map_macro`` (mean average
  precision) and ``ap/<label>``, ``auroc_macro``, ``f1_macro`` and ``f1_micro`` at the thresholds, ``subset_acc``
  (exact match) and ``hamming`` (label-wise error). AP and AUROC are undefined for a label without positives in
  the split: the macro averages leave it out. ``test`` adds the same at 0.5 (``*_at_0.5``) and the per-label counts
  ``tp/fp/fn/tn/<label>`` (metrics.json). ``val/select`` is ``map_macro`` with ties broken by the lower loss.

``litstarter new --task multilabel`` copies this file into a project as its ``task.py``; from then on the copy is
the project's to edit (its loss, its steps, its metrics), and it imports public names of ``litstarter`` only
(``docs/api.md``), which change only with the library's major version.
"""

from __future__ import annotations

from typing import Literal

import torch
from lightning.pytorch.utilities import rank_zero_info
from torch import nn
from torchmetrics import CatMetric, MetricCollection
from torchmetrics.classification import MultilabelF1Score
from torchmetrics.functional.classification import (
    multilabel_auroc,
    multilabel_average_precision,
    multilabel_exact_match,
    multilabel_f1_score,
    multilabel_hamming_distance,
    multilabel_stat_scores,
)

from litstarter.errors import UsageError
from litstarter.metrics import selection_score
from litstarter.tasks import ImageTask
from litstarter.thresholds import positive_weights, tune_thresholds


class MultilabelClassifier(ImageTask):
    """Multi-label image classification: a sigmoid per label, binary cross-entropy, a tuned threshold per label.

    Takes :class:`~litstarter.tasks.ImageTask`'s arguments too (``--help`` lists them).

    Args:
        label_smoothing: Moves every 0/1 target towards 0.5 by this fraction, in [0, 1).
        pos_weight: The positive weight per label of the binary cross-entropy: ``auto`` (negatives / positives of
            the train split, saved in checkpoints), one number per label, or ``null``.
        thresholds: The probability at or above which a label is predicted, one number for every label or one per
            label; ``null``: tuned on the validation split at each validation (the checkpoints keep them).
        kwargs: The shared arguments of :class:`~litstarter.tasks.ImageTask`.
    """

    task_name = "multilabel"
    target_kind = "label_set"
    task_config = "configs/task/multilabel.yaml"

    def __init__(
        self,
        label_smoothing: float = 0.0,
        pos_weight: Literal["auto"] | list[float] | None = None,
        thresholds: float | list[float] | None = None,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        k = self.hparams.num_classes
        self.given_thresholds = thresholds  # not a saved hyper-parameter: see unsaved_arguments
        if not 0 <= label_smoothing < 1:
            raise UsageError(f"model.label_smoothing must be in [0, 1), got {label_smoothing}")
        if isinstance(pos_weight, str) and pos_weight != "auto":
            raise UsageError(f"model.pos_weight must be 'auto', {k} positive numbers or null, got {pos_weight!r}")
        if isinstance(pos_weight, (list, tuple)) and (len(pos_weight) != k or min(pos_weight) <= 0):
            raise UsageError(f"model.pos_weight must be {k} positive numbers (one per label), got {pos_weight}")
        weight = None if pos_weight is None else torch.ones(k)
        if isinstance(pos_weight, (list, tuple)):
            weight = torch.tensor(pos_weight, dtype=torch.float32)
        self.criterion = nn.BCEWithLogitsLoss(pos_weight=weight)  # its pos_weight is a buffer: checkpoints carry it
        start = _as_thresholds(thresholds, k) if thresholds is not None else torch.full((k,), 0.5)  # checks them
        self.register_buffer("label_thresholds", start)  # tuned at each validation, saved in checkpoints
        self.train_metrics = MetricCollection({"f1_macro": MultilabelF1Score(k, average="macro")}, prefix="train/")
        self.val_probs, self.val_targets = CatMetric(), CatMetric()  # the whole stage's probabilities
        self.test_probs, self.test_targets = CatMetric(), CatMetric()

    @classmethod
    def unsaved_arguments(cls) -> tuple[str, ...]:
        """``thresholds`` is an evaluation choice; the checkpoint keeps the thresholds in use as a buffer."""
        return ("thresholds",)

    def setup(self, stage: str) -> None:
        """The shared setup, then ``pos_weight: auto`` from the train split's label counts."""
        super().setup(stage)
        datamodule = self.trainer.datamodule
        if stage == "fit" and datamodule is not None and self.hparams.get("pos_weight") == "auto":
            weights = positive_weights(datamodule.class_counts(), len(datamodule.train_set))
            self.criterion.pos_weight.copy_(weights)
            rank_zero_info(f"model.pos_weight: auto -> {dict(zip(self.class_names, weights.tolist(), strict=True))}")

    def thresholds(self) -> torch.Tensor:
        """The thresholds in use: ``model.thresholds`` if given, else the tuned ones (the checkpoint's)."""
        given = self.given_thresholds
        tuned = self.label_thresholds
        return tuned if given is None else _as_thresholds(given, len(tuned)).to(tuned.device)

    def answers_state(self) -> dict:
        """The thresholds in the checkpoint's buffer (tuned on validation, or those the fit was given)."""
        return {"thresholds": [float(t) for t in self.label_thresholds.tolist()]}

    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Binary cross-entropy of ``(B, K)`` logits against ``(B, K)`` targets in [0, 1] (``pos_weight`` applied)."""
        return self.criterion(logits, targets)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """Binary cross-entropy on one batch (targets smoothed towards 0.5 by ``label_smoothing``)."""
        images, targets = batch
        logits = self(images)
        smoothing = self.hparams.get("label_smoothing", 0.0)
        loss = self.loss(logits, targets * (1 - smoothing) + 0.5 * smoothing)
        self.train_metrics.update((logits.detach().sigmoid() >= 0.5).int(), targets.int())
        self.log_train_loss(loss)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        """Keep the batch's probabilities and targets for the epoch's metrics and thresholds."""
        images, targets = batch
        logits = self(images)
        self.val_loss.update(self.loss(logits, targets).detach(), weight=len(targets))
        self.val_probs.update(logits.float().sigmoid())
        self.val_targets.update(targets.float())

    def on_validation_epoch_end(self) -> None:
        """Tune the thresholds (unless given, and not in the sanity check), then log the val metrics at them."""
        loss = self.val_loss.compute()
        self.val_loss.reset()
        probs, targets = _take(self.val_probs), _take(self.val_targets)
        if self.given_thresholds is None and not self.trainer.sanity_checking:
            self.label_thresholds.copy_(tune_thresholds(probs, targets).to(self.label_thresholds.device))
        scalars = multilabel_scores(probs, targets, self.thresholds(), self.class_names, "val")
        self.log("val/loss", loss, prog_bar=True)
        self.log_dict({k: v for k, v in scalars.items() if k in ("val/map_macro", "val/f1_macro")}, prog_bar=True)
        self.log_dict({k: v for k, v in scalars.items() if k not in ("val/map_macro", "val/f1_macro")})
        self.log("val/select", selection_score(scalars["val/map_macro"], loss))

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        """Keep the batch's probabilities and targets; the loss is logged per epoch."""
        images, targets = batch
        logits = self(images)
        self.log("test/loss", self.loss(logits, targets), on_step=False, on_epoch=True, sync_dist=True)
        self.test_probs.update(logits.float().sigmoid())
        self.test_targets.update(targets.float())

    def on_test_epoch_end(self) -> None:
        """The test metrics at the thresholds, at 0.5 (``*_at_0.5``), and the per-label counts."""
        probs, targets = _take(self.test_probs), _take(self.test_targets)
        thresholds = self.thresholds()
        scalars = multilabel_scores(probs, targets, thresholds, self.class_names, "test", counts=True)
        at_half = multilabel_scores(probs, targets, torch.full_like(thresholds, 0.5), self.class_names, "test")
        scalars |= {f"{k}_at_0.5": at_half[k] for k in THRESHOLDED}
        scalars |= {f"test/threshold/{_tag(n)}": t for n, t in zip(self.class_names, thresholds, strict=True)}
        self.log_dict(scalars)
        missing = [n for n, p in zip(self.class_names, targets.sum(0).tolist(), strict=True) if p == 0]
        if missing:
            rank_zero_info(f"test: labels {missing} have no positive image: map_macro and auroc_macro leave them out")

    def predict_step(self, batch, batch_idx: int) -> torch.Tensor:
        """Label probabilities ``(B, K)`` (sigmoid; a label is predicted at or above :meth:`thresholds`)."""
        images = batch[0] if isinstance(batch, (tuple, list)) else batch
        return self(images).sigmoid()


#: The test keys that depend on the thresholds (repeated at 0.5).
THRESHOLDED = ("test/f1_macro", "test/f1_micro", "test/subset_acc", "test/hamming")


def multilabel_scores(
    probs: torch.Tensor,
    targets: torch.Tensor,
    thresholds: torch.Tensor,
    names: list[str],
    stage: str,
    counts: bool = False,
) -> dict[str, torch.Tensor]:
    """The stage's metrics on all its ``(N, K)`` probabilities and 0/1 targets, at per-label ``thresholds``.

    torchmetrics' F1, Hamming and exact match take one float threshold, so the probabilities are binarised here
    (``probs >= thresholds``) and passed as 0/1 predictions. AP and AUROC are computed per label; their macro
    averages leave out the labels without a positive in ``targets`` (undefined there).
    """
    k, target = len(names), targets.int()
    if len(probs) == 0:
        return {f"{stage}/{key}": torch.tensor(0.0) for key in ("map_macro", "f1_macro")}
    preds = (probs >= thresholds.to(probs.device)).int()
    present = target.sum(0) > 0
    ap = multilabel_average_precision(probs, target, k, average=None, thresholds=None)
    auroc = multilabel_auroc(probs, target, k, average=None, thresholds=None)
    out = {
        "map_macro": ap[present].mean() if present.any() else torch.tensor(0.0),
        "auroc_macro": auroc[present].mean() if present.any() else torch.tensor(0.0),
        "f1_macro": multilabel_f1_score(preds, target, k, average="macro", zero_division=0),
        "f1_micro": multilabel_f1_score(preds, target, k, average="micro", zero_division=0),
        "subset_acc": multilabel_exact_match(preds, target, k),
        "hamming": multilabel_hamming_distance(preds, target, k, average="micro"),
    }
    out |= {f"ap/{_tag(n)}": ap[i] for i, n in enumerate(names) if present[i]}
    if counts:  # (K, 5): tp, fp, tn, fn, support
        stats = multilabel_stat_scores(preds, target, k, average=None)
        for i, n in enumerate(names):
            out |= {
                f"{what}/{_tag(n)}": stats[i, j].float() for j, what in ((0, "tp"), (1, "fp"), (3, "fn"), (2, "tn"))
            }
    return {f"{stage}/{key}": value.float() for key, value in out.items()}


def _take(metric: CatMetric) -> torch.Tensor:
    """The concatenated values (synchronised across processes), then reset; empty when nothing was added."""
    value = metric.compute() if metric.update_count else torch.zeros(0)
    metric.reset()
    return value


def _tag(name: str) -> str:
    return str(name).replace("/", "_")


def _as_thresholds(given: float | list[float], k: int) -> torch.Tensor:
    values = [given] * k if isinstance(given, (int, float)) else list(given)
    if len(values) != k or not all(0 <= v <= 1 for v in values):
        raise UsageError(f"model.thresholds must be one number or {k} numbers (one per label) in [0, 1], got {given}")
    return torch.tensor(values, dtype=torch.float32)
