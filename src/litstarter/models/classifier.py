"""The classification network: :class:`~.network.ImageNetwork`'s normalisation + a backbone + a linear head, as
one plain ``nn.Module`` (a segmentation decoder in :mod:`.segmenter`, a detector in :mod:`.detector`; :mod:`.build`
rebuilds any of them from a checkpoint's architecture)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import nn

from litstarter.errors import BadInputError
from litstarter.models.network import ImageNetwork
from litstarter.models.registry import create_backbone


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
