"""An example backbone of your own, outside the package: named in a config by its class path.

    python -m litstarter fit --config configs/default.yaml --model.backbone tests.examples.my_backbones.TinyNet

(``python -m`` puts the current folder on the import path; the ``litstarter`` script needs ``PYTHONPATH=.``.)

The contract it meets is in ``litstarter.models.registry``: ``in_channels`` in, ``(B, num_features)`` out.
"""

from __future__ import annotations

import torch
from torch import nn


class TinyNet(nn.Module):
    """One convolution and a global average pool: ``(B, C, H, W)`` floats -> ``(B, width)``.

    Args:
        in_channels: Channels of the input images (the model passes ``data.channels``).
        width: Output channels of the convolution, and so ``num_features``.
    """

    def __init__(self, in_channels: int = 3, width: int = 8) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(in_channels, width, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.num_features = width  # the contract: the width of the pooled features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x).flatten(1)  # (B, width)


class NoFeatures(nn.Module):
    """Breaks the contract (no ``num_features``): refused by name."""

    def __init__(self, in_channels: int = 3) -> None:
        super().__init__()


def build_anything(**kwargs) -> None:
    """Not an ``nn.Module`` class: a config naming it is refused before anything calls it."""
    raise SystemExit("a plain function was called")
