"""Object detection: boxes and their classes (``configs/task/detection.yaml``; the ``detection`` extra).

* Network: torchvision's FCOS (or RetinaNet, Faster R-CNN: ``model.detector``) on a feature pyramid over the
  backbone's stages (``models/detector.py``); its losses are torchvision's. The encoder is the backbone a classifier
  has, so ``model.init_from`` a classification checkpoint starts it.
* Detections: scored at least ``model.score_threshold``, non-maximum suppression at ``model.nms_iou``, at most
  ``model.max_detections`` per image; the checkpoint records the three (and ``model.json`` after it).
* Metrics: torchmetrics' ``MeanAveragePrecision`` with the ``faster_coco_eval`` backend: ``map`` (COCO's, IoU
  0.5:0.95), ``map50``, ``map75``, ``map_small``/``_medium``/``_large`` and ``ap/<class>``; ``val/select`` is
  ``map``. A few validation images are drawn with their predicted (red) and true (green) boxes to TensorBoard.
* The data gives each image's boxes (``target_kind: boxes``): ``{"boxes": (m, 4) xyxy, "labels": (m,)}``.

``litstarter new --task detection`` copies this file into a project as its ``task.py``; from then on the copy is
the project's to edit (its loss, its steps, its metrics), and it imports public names of ``litstarter`` only
(``docs/api.md``), which change only with the library's major version.
"""

from __future__ import annotations

from typing import Literal

import torch
from lightning.pytorch.loggers import TensorBoardLogger

from litstarter.errors import UsageError
from litstarter.plots import box_overlays
from litstarter.tasks import ImageTask

Detectors = Literal["fcos", "retinanet", "faster_rcnn", "ssdlite"]
#: torchmetrics' names of COCO's figures -> ours.
COCO_FIGURES = {
    "map": "map",
    "map_50": "map50",
    "map_75": "map75",
    "map_small": "map_small",
    "map_medium": "map_medium",
    "map_large": "map_large",
    "mar_100": "mar100",
}


class ObjectDetector(ImageTask):
    """Object detection with one of torchvision's detectors, scored by COCO's mean average precision.

    Takes :class:`~litstarter.tasks.ImageTask`'s arguments too (``--help`` lists them); ``num_classes`` and
    ``class_names`` are the objects' classes (linked from the data; no background class). ``dropout`` is unused.

    Args:
        detector: torchvision's ``fcos`` (anchor-free, the default), ``retinanet``, ``faster_rcnn`` or ``ssdlite``
            (SSD with a separable head: the fastest).
        score_threshold: Detections scored below this are dropped.
        nms_iou: Non-maximum suppression drops a box overlapping a better one of its class by more than this IoU.
        max_detections: The most detections kept per image (the exported graph's rows per image).
        fpn_channels: The feature pyramid's width.
        fpn_levels: How many of the backbone's coarsest stages feed the pyramid (a max-pooled level is added above):
            ``small_cnn``'s three start at stride 4; 2 starts at stride 8 (faster, coarser; docs/detection.md).
        head_convs: FCOS's 3x3 convolutions per branch (classification, box), run on every level of the pyramid
            (torchvision's 4); 2 is faster, better on some sets and worse on others (docs/detection.md). RetinaNet's,
            Faster R-CNN's and SSDlite's heads are their own: only 4 is accepted for them.
        overlays: Validation images drawn with their boxes to TensorBoard after each validation (0: none).
        kwargs: The shared arguments of :class:`~litstarter.tasks.ImageTask`.
    """

    task_name = "detection"
    target_kind = "boxes"
    task_config = "configs/task/detection.yaml"

    def __init__(
        self,
        detector: Detectors = "fcos",
        score_threshold: float = 0.05,
        nms_iou: float = 0.5,
        max_detections: int = 100,
        fpn_channels: int = 64,
        fpn_levels: int = 3,
        head_convs: int = 4,
        overlays: int = 4,
        **kwargs,
    ) -> None:
        if not 0 <= score_threshold < 1 or not 0 < nms_iou <= 1:
            raise UsageError(
                f"model.score_threshold must be in [0, 1) and model.nms_iou in (0, 1], got {score_threshold}, {nms_iou}"
            )
        if max_detections < 1 or fpn_channels < 1 or fpn_levels < 1 or overlays < 0:
            raise UsageError(
                f"model.max_detections, model.fpn_channels and model.fpn_levels must be >= 1, model.overlays >= 0;"
                f" got {max_detections}, {fpn_channels}, {fpn_levels}, {overlays}"
            )
        super().__init__(**kwargs)
        self.val_map, self.test_map = detection_metric(), detection_metric()
        self.shown: tuple | None = None  # the overlays' images, predictions and targets

    def answers_state(self) -> dict:
        """The thresholds the exported graph applies, which ``model.json`` records."""
        h = self.hparams
        return {"score_threshold": h.score_threshold, "nms_iou": h.nms_iou, "max_detections": h.max_detections}

    def loss(self, losses: dict[str, torch.Tensor]) -> torch.Tensor:
        """The detector's own losses (torchvision's: classification, box regression, and FCOS's centerness or
        Faster R-CNN's objectness and proposals), summed with equal weights."""
        return sum(losses.values())

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:
        """:meth:`loss` on one batch; each of torchvision's losses logged as ``train/<loss>``."""
        images, targets = batch  # (B, C, H, W) uint8, [{"boxes": (m, 4), "labels": (m,)}, ...]
        losses = self.net(self._layout(images), targets)  # in training mode the detector returns its losses
        loss = self.loss(losses)
        self.log_dict({f"train/{k}": v.detach() for k, v in losses.items()}, on_step=True, on_epoch=False)
        self.log_train_loss(loss)
        return loss

    def _layout(self, images: torch.Tensor) -> torch.Tensor:
        if self.hparams.get("channels_last"):
            return images.contiguous(memory_format=torch.channels_last)
        return images

    def validation_step(self, batch, batch_idx: int) -> None:
        """Accumulate the val mAP; keep the first batch for the overlays."""
        images, targets = batch
        predictions = as_predictions(self(images))
        self.val_map.update(predictions, targets)
        if batch_idx == 0 and self.hparams.get("overlays", 0):
            n = self.hparams.overlays
            shown = [[d["boxes"].cpu() for d in found[:n]] for found in (predictions, targets)]
            self.shown = (images[:n].cpu(), *shown)

    def on_validation_epoch_end(self) -> None:
        """Log the val mAP figures and ``val/select`` (the mAP); draw the overlays."""
        scalars = self._epoch_metrics(self.val_map, "val")
        self.log("val/map", scalars.pop("val/map"), prog_bar=True)
        self.log("val/map50", scalars.pop("val/map50"), prog_bar=True)
        self.log_dict(scalars)
        self.log("val/select", self.trainer.callback_metrics["val/map"])
        self._draw_overlays()

    def test_step(self, batch, batch_idx: int) -> None:
        """Accumulate the test mAP."""
        images, targets = batch
        self.test_map.update(as_predictions(self(images)), targets)

    def on_test_epoch_end(self) -> None:
        """Log the test mAP figures."""
        self.log_dict(self._epoch_metrics(self.test_map, "test"))

    def _epoch_metrics(self, metric, stage: str) -> dict[str, torch.Tensor]:
        """COCO's figures of the stage (synchronised by torchmetrics), named ``<stage>/map``, ``map50``, ..., then
        reset. A class without a box in the split has no AP, nor a size without a box (-1 from COCO): left out."""
        values = metric.compute()
        metric.reset()
        out = {f"{stage}/{ours}": values[theirs].float() for theirs, ours in COCO_FIGURES.items()}
        out = {k: v for k, v in out.items() if v >= 0 or k.endswith(("/map", "/map50"))}  # -1: no box of that size
        classes = values.get("classes", torch.zeros(0)).reshape(-1).tolist()
        for index, ap in zip(classes, values.get("map_per_class", torch.zeros(0)).reshape(-1), strict=False):
            if ap >= 0 and int(index) < len(self.class_names):
                out[f"{stage}/ap/{str(self.class_names[int(index)]).replace('/', '_')}"] = ap.float()
        return out

    def _draw_overlays(self) -> None:
        """The kept validation images with their predicted and true boxes, to each TensorBoard logger."""
        if self.shown is None or self.trainer.sanity_checking or not self.trainer.is_global_zero:
            return
        grid = box_overlays(*self.shown)
        for logger in self.loggers:
            if isinstance(logger, TensorBoardLogger):
                logger.experiment.add_image("val/boxes", grid, self.global_step)
        self.shown = None

    def predict_step(self, batch, batch_idx: int) -> torch.Tensor:
        """Detections ``(B, max_detections, 6)``: ``x1, y1, x2, y2, score, class``, padded with score 0."""
        images = batch[0] if isinstance(batch, (tuple, list)) else batch
        return self(images)


def detection_metric():
    """torchmetrics' COCO mAP on ``xyxy`` boxes, per class too, by faster-coco-eval (the ``detection`` extra).

    Raises:
        UsageError: faster-coco-eval is not installed.
    """
    from torchmetrics.detection import MeanAveragePrecision

    try:
        return MeanAveragePrecision(box_format="xyxy", iou_type="bbox", class_metrics=True, backend="faster_coco_eval")
    except ModuleNotFoundError:
        raise UsageError("the detection task's mAP needs faster-coco-eval: pip install -e '.[detection]'") from None


def as_predictions(detections: torch.Tensor) -> list[dict[str, torch.Tensor]]:
    """``(B, D, 6)`` padded detections as torchmetrics' ``[{"boxes", "scores", "labels"}]`` (padding rows out)."""
    out = []
    for rows in detections.float():
        kept = rows[rows[:, 5] >= 0]
        out.append({"boxes": kept[:, :4], "scores": kept[:, 4], "labels": kept[:, 5].long()})
    return out
