"""The deployable network: normalisation + backbone + head, as one plain ``nn.Module`` (a linear head here; a
segmentation decoder in :mod:`.segmenter`; :mod:`.build` rebuilds either from a checkpoint's architecture)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import torch
from torch import nn

from litstarter._engine.errors import BadInputError, UsageError
from litstarter.models.registry import create_backbone

#: The task hyper-parameters that fix the network's shape (recorded so ``weights.pt`` can load). ``image_size`` is
#: one of them: ``small_cnn``'s stem downsamples by a factor chosen from it.
ARCHITECTURE_KEYS = ("backbone", "backbone_kwargs", "num_classes", "in_channels", "dropout", "image_size")
#: A segmentation task's architecture key (``null`` picks the widths): its network is a ``Segmenter``.
DECODER_KEY = "decoder_channels"
#: A detection task's: its network is a ``Detector`` (with its thresholds and its pyramid's width).
DETECTION_KEYS = ("detector", "score_threshold", "nms_iou", "max_detections", "fpn_channels")


def architecture_of(hparams: Mapping) -> dict:
    """The :data:`ARCHITECTURE_KEYS` of a checkpoint's ``hyper_parameters`` (and a task's own shape keys where they
    hold them: :data:`DECODER_KEY`, :data:`DETECTION_KEYS`): what :func:`litstarter.models.build.build_network`
    takes."""
    architecture = {k: hparams.get(k) for k in ARCHITECTURE_KEYS}
    architecture |= {k: hparams[k] for k in (DECODER_KEY, *DETECTION_KEYS) if k in hparams}
    return architecture


class ImageNetwork(nn.Module):
    """Images as they come off the cache, 0..255 in any dtype, to logits (no softmax). Normalisation lives inside
    the network as buffers: every checkpoint and export carries the preprocessing training used, and batches travel
    to the device as uint8, a quarter of the bytes of float32. Subclasses add the backbone and the head.

    Args:
        mean: Per-channel mean on the 0..1 scale.
        std: Per-channel standard deviation on the 0..1 scale.
    """

    #: The files this network cannot be saved as (``model.pt2``: why, in one line); none for most networks.
    export_refuses: ClassVar[dict[str, str]] = {}
    #: Whether exports trace one image and loop over a batch's images (a network whose output per image depends
    #: on the data, as a detector's NMS does); otherwise they capture the whole batch.
    export_per_image: ClassVar[bool] = False

    def __init__(self, mean: Sequence[float], std: Sequence[float]) -> None:
        super().__init__()
        if len(mean) != len(std):
            raise ValueError(f"mean has {len(mean)} channels but std has {len(std)}")
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1) * 255.0)
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1) * 255.0)

    def set_memory_options(self, gradient_checkpointing: bool = False, channels_last: bool = False) -> None:
        """Recompute the backbone's activations in backward (it must have ``set_grad_checkpointing``), and/or keep
        the weights in NHWC layout."""
        if gradient_checkpointing:
            if not hasattr(self.backbone, "set_grad_checkpointing"):
                name = type(self.backbone).__name__
                raise UsageError(
                    f"model.gradient_checkpointing=true but backbone {name} has no set_grad_checkpointing()"
                )
            self.backbone.set_grad_checkpointing(True)
        if channels_last:
            self.to(memory_format=torch.channels_last)

    def set_normalization(self, mean: Sequence[float], std: Sequence[float]) -> None:
        """Overwrite the normalisation buffers (0..1 scale), e.g. with statistics of new data."""
        self.mean.copy_(torch.as_tensor(mean, dtype=torch.float32).view(1, -1, 1, 1) * 255.0)
        self.std.copy_(torch.as_tensor(std, dtype=torch.float32).view(1, -1, 1, 1) * 255.0)

    def normalization(self) -> tuple[list[float], list[float]]:
        """Per-channel ``(mean, std)`` on the 0..1 scale, as :meth:`set_normalization` takes them."""
        return (self.mean.flatten() / 255.0).tolist(), (self.std.flatten() / 255.0).tolist()

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, C, H, W)`` 0..255 -> zero-mean, unit-variance float32."""
        return (x.float() - self.mean) / self.std


class Classifier(ImageNetwork):
    """An :class:`ImageNetwork` whose backbone's pooled features feed a linear head: ``(B, num_classes)`` logits.

    Args:
        backbone: A module mapping ``(B, C, H, W)`` floats to ``(B, backbone.num_features)``.
        num_classes: Number of output logits.
        mean: Per-channel mean on the 0..1 scale.
        std: Per-channel standard deviation on the 0..1 scale.
        dropout: Dropout before the head.
    """

    def __init__(
        self,
        backbone: nn.Module,
        num_classes: int,
        mean: Sequence[float],
        std: Sequence[float],
        dropout: float = 0.0,
    ) -> None:
        super().__init__(mean, std)
        self.backbone = backbone
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(backbone.num_features, num_classes)
        # Small head init: the first logits are near zero, so the first loss is about log(num_classes).
        nn.init.normal_(self.head.weight, std=0.01)
        nn.init.zeros_(self.head.bias)

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        """Images ``(B, C, H, W)`` -> pooled features ``(B, F)``."""
        return self.backbone(self.normalize(x))

    def forward_head(self, features: torch.Tensor) -> torch.Tensor:
        """Features ``(B, F)`` -> logits ``(B, num_classes)``."""
        return self.head(self.dropout(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Images ``(B, C, H, W)`` in 0..255 -> logits ``(B, num_classes)``."""
        return self.forward_head(self.forward_features(x))


def build_classifier(architecture: Mapping, trust_model: bool = True) -> Classifier:
    """An untrained :class:`Classifier` shaped as ``architecture`` says (the :data:`ARCHITECTURE_KEYS`), its
    normalisation placeholders until weights load."""
    missing = [k for k in ("backbone", "num_classes", "in_channels") if k not in architecture]
    if missing:
        raise BadInputError(f"architecture is missing {missing}; got keys {sorted(architecture)}")
    a, channels = architecture, int(architecture["in_channels"])
    kwargs = a.get("backbone_kwargs") or {}
    backbone = create_backbone(a["backbone"], channels, None, a.get("image_size"), trust_model, **kwargs)
    return Classifier(
        backbone, int(a["num_classes"]), [0.5] * channels, [0.25] * channels, float(a.get("dropout") or 0)
    )
