"""The detection network: normalisation + the backbone's stages through a feature pyramid + torchvision's detector.

The detector is one of torchvision's (``fcos``, ``retinanet``, ``faster_rcnn``, and ``ssdlite`` for speed: SSD with
SSDlite's separable head) on a feature pyramid over the backbone's stages (:mod:`.stages`: ``small_cnn``,
``timm/<name>``, torchvision's ResNets, MobileNets, EfficientNets and ConvNeXts), at the images' own size
(torchvision's transform resizes nothing: its sizes are set to ``image_size``, its normalisation to none, ours being
inside the network as for every network here). Its parameter names under ``backbone.`` are a classifier's, so a
classification checkpoint of ours starts it (``model.init_from``).

Training, ``net(images, targets)`` returns torchvision's losses; otherwise ``net(images)`` returns one tensor
``(B, max_detections, 6)``: ``x1, y1, x2, y2, score, class`` per detection, best first, padded with rows of score 0
and class -1. One tensor, so exports, ``infer`` and ``serve`` read it as they read any network's output.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence

import torch
from torch import nn
from torchvision.ops import FeaturePyramidNetwork
from torchvision.ops.feature_pyramid_network import LastLevelMaxPool

from litstarter.errors import UsageError
from litstarter.models.network import UNRECORDED, ImageNetwork
from litstarter.models.registry import create_backbone
from litstarter.models.stages import read_stages, stage_channels

#: The detectors a task may name (``model.detector``).
DETECTORS = ("fcos", "retinanet", "faster_rcnn", "ssdlite")
#: The detectors whose class 0 is the background (ours shift by one).
WITH_BACKGROUND = ("faster_rcnn", "ssdlite")
#: A detector's architecture key: a network with it is a :class:`Detector`.
DETECTOR_KEY = "detector"


class StagesPyramid(nn.Module):
    """A feature pyramid over the backbone's last ``levels`` stages, plus one max-pooled level: what torchvision's
    detectors take (an ``OrderedDict`` of maps, all ``out_channels`` wide).

    Args:
        backbone: A module whose stages :func:`~.stages.read_stages` reads.
        out_channels: The pyramid's width.
        levels: How many of the backbone's coarsest stages feed it.
    """

    def __init__(self, backbone: nn.Module, out_channels: int = 64, levels: int = 3) -> None:
        super().__init__()
        self.backbone = backbone
        self.levels = min(levels, len(stage_channels(backbone)))
        widths = stage_channels(backbone)[-self.levels :]
        self.fpn = FeaturePyramidNetwork(widths, out_channels, extra_blocks=LastLevelMaxPool())
        self.out_channels = out_channels

    def forward(self, x: torch.Tensor) -> OrderedDict[str, torch.Tensor]:
        """Normalised images -> ``{"0": finest, ..., "pool": coarsest}`` maps."""
        features = read_stages(self.backbone, x)[-self.levels :]
        return self.fpn(OrderedDict((str(i), f) for i, f in enumerate(features)))


def _anchor_generator(levels: int, smallest: int):
    from torchvision.models.detection.anchor_utils import AnchorGenerator

    sizes = tuple((smallest * 2**i,) for i in range(levels))
    return AnchorGenerator(sizes, ((1.0,),) * levels)


def _torchvision_detector(name: str, body: StagesPyramid, num_classes: int, size: Sequence[int], options: Mapping):
    """torchvision's detector ``name`` on ``body``, at ``size``, with our thresholds; anchors from 8 px up."""
    from torchvision.models.detection import FCOS, FasterRCNN, RetinaNet

    levels = body.levels + 1  # the pyramid's maps and its pooled one
    common = {
        "min_size": min(size),
        "max_size": max(size),
        "image_mean": [0.0] * options["channels"],
        "image_std": [1.0] * options["channels"],
    }
    thresholds = {"score_thresh": options["score"], "nms_thresh": options["nms"], "detections_per_img": options["max"]}
    if name == "fcos":
        from torchvision.models.detection.fcos import FCOSHead

        head = FCOSHead(body.out_channels, 1, num_classes, num_convs=options["head_convs"])
        anchors = _anchor_generator(levels, 8)
        return FCOS(body, num_classes, anchor_generator=anchors, head=head, **thresholds, **common)
    if name == "retinanet":
        return RetinaNet(body, num_classes, anchor_generator=_anchor_generator(levels, 8), **thresholds, **common)
    if name == "ssdlite":
        return _ssdlite(body, num_classes, size, options)
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    from torchvision.ops import MultiScaleRoIAlign

    anchors = AnchorGenerator(tuple((8 * 2**i,) for i in range(levels)), ((0.5, 1.0, 2.0),) * levels)
    pooler = MultiScaleRoIAlign([str(i) for i in range(body.levels)], output_size=7, sampling_ratio=2)
    box = {f"box_{key}": value for key, value in thresholds.items()}  # Faster R-CNN's second stage's names
    return FasterRCNN(body, num_classes + 1, rpn_anchor_generator=anchors, box_roi_pool=pooler, **box, **common)


def _ssdlite(body: StagesPyramid, num_classes: int, size: Sequence[int], options: Mapping):
    """torchvision's SSD with SSDlite's depthwise-separable head on every level of ``body``'s pyramid; default
    boxes from 15% to 90% of the image, at aspect ratios 2 and 3 (SSDlite's)."""
    from functools import partial

    from torchvision.models.detection.anchor_utils import DefaultBoxGenerator
    from torchvision.models.detection.ssd import SSD
    from torchvision.models.detection.ssdlite import SSDLiteHead

    levels = body.levels + 1
    anchors = DefaultBoxGenerator([[2, 3]] * levels, min_ratio=0.15, max_ratio=0.9)
    norm = partial(nn.BatchNorm2d, eps=0.001, momentum=0.03)
    head = SSDLiteHead([body.out_channels] * levels, anchors.num_anchors_per_location(), num_classes + 1, norm)
    return SSD(
        body,
        anchors,
        tuple(size),
        num_classes + 1,
        [0.0] * options["channels"],
        [1.0] * options["channels"],
        head,
        score_thresh=options["score"],
        nms_thresh=options["nms"],
        detections_per_img=options["max"],
    )


class Detector(ImageNetwork):
    """Images ``(B, C, H, W)`` in 0..255 to detections ``(B, max_detections, 6)`` (or, training, losses).

    Args:
        detector: torchvision's detector, built on a :class:`StagesPyramid` (its ``backbone.body``).
        num_classes: Object classes (Faster R-CNN's background class aside).
        mean: Per-channel mean on the 0..1 scale.
        std: Per-channel standard deviation on the 0..1 scale.
        max_detections: Rows of the output per image.
        background: Whether the detector's class 0 is the background (Faster R-CNN, SSDlite): classes shift by one.
    """

    # torch.export and the dynamo-based ONNX exporter stop at torchvision's NMS, whose output's size depends on the
    # data; tracing one image keeps it, and the exports loop over a batch's images.
    export_refuses = {"pt2": "torch.export cannot capture torchvision's NMS (its output's size depends on the data)"}
    export_per_image = True

    def __init__(self, detector: nn.Module, num_classes: int, mean, std, max_detections: int, background: bool):
        super().__init__(mean, std)
        self.detector = detector
        self.backbone = detector.backbone.backbone  # what freezing, the backbone's learning rate and init_from take
        self.num_classes, self.max_detections, self.background = num_classes, max_detections, background

    def forward(self, x: torch.Tensor, targets: list[dict] | None = None):
        """``(B, C, H, W)`` 0..255 -> ``(B, max_detections, 6)``; with ``targets`` while training, the losses."""
        images = list(self.normalize(x).unbind(0))
        if self.training and targets is not None:
            if self.background:
                targets = [{"boxes": t["boxes"], "labels": t["labels"] + 1} for t in targets]
            return self.detector(images, targets)
        return self.padded(self.detector(images))

    def padded(self, detections: list[dict[str, torch.Tensor]]) -> torch.Tensor:
        """torchvision's list of ``{"boxes", "scores", "labels"}`` as one ``(B, max_detections, 6)`` tensor."""
        rows = []
        for found in detections:
            labels = found["labels"].float() - (1 if self.background else 0)
            table = torch.cat([found["boxes"], found["scores"][:, None], labels[:, None]], dim=1)[: self.max_detections]
            padding = table.new_zeros((self.max_detections - table.shape[0], 6))
            padding[:, 5] = -1
            rows.append(torch.cat([table, padding]))
        return torch.stack(rows)


def build_detector(architecture: Mapping, trust_model: bool = True) -> Detector:
    """An untrained :class:`Detector` shaped as ``architecture`` says (``detector``, ``score_threshold``,
    ``nms_iou``, ``max_detections``, ``fpn_channels``, ``fpn_levels``, ``head_convs`` beside the shared keys); a key
    it lacks (a checkpoint from before the key) takes the shape :data:`~.network.UNRECORDED` gives.

    Raises:
        UsageError: an unknown detector, or a backbone that gives no stages.
    """
    a, channels = architecture, int(architecture["in_channels"])
    name = str(a.get(DETECTOR_KEY) or "fcos")
    if name not in DETECTORS:
        raise UsageError(f"model.detector must be one of {list(DETECTORS)}, got {name!r}")
    kwargs = a.get("backbone_kwargs") or {}
    backbone = create_backbone(a["backbone"], channels, None, a.get("image_size"), trust_model, **kwargs)
    levels, convs = (UNRECORDED[k] if a.get(k) is None else int(a[k]) for k in ("fpn_levels", "head_convs"))
    if levels < 1:
        raise UsageError(f"model.fpn_levels must be >= 1, got {levels}")
    body = StagesPyramid(backbone, int(a.get("fpn_channels") or 64), levels)
    if convs != 4 and name != "fcos":
        raise UsageError(f"model.head_convs sets FCOS's head; {name}'s is its own: leave it at 4")
    if convs < 1:
        raise UsageError(f"model.head_convs must be >= 1, got {convs}")
    options = {
        "head_convs": convs,
        "channels": channels,
        "score": float(a.get("score_threshold", 0.05)),
        "nms": float(a.get("nms_iou", 0.5)),
        "max": int(a.get("max_detections", 100)),
    }
    classes = int(a["num_classes"])
    detector = _torchvision_detector(name, body, classes, tuple(a["image_size"]), options)
    background = name in WITH_BACKGROUND
    return Detector(detector, classes, [0.5] * channels, [0.25] * channels, options["max"], background)
