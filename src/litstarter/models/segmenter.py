"""The segmentation network: normalisation + the backbone's stages + a U-Net decoder, logits at every pixel.

Any backbone that gives its stages' features serves as the encoder: ``forward_stages(x)`` returns them finest first
and ``stage_channels`` their widths (``small_cnn`` does, at the resolutions before each stage's pooling; a
``timm/<name>`` backbone by timm's ``forward_intermediates``), and torchvision's ResNets give theirs (the stem, then
``layer1``..``layer4``). The decoder goes from the coarsest up:
upsample to the next finer stage, concatenate it (the skip), two conv-BN-ReLU; the head is a 1x1 convolution,
upsampled to the input size. Its parameter names under ``backbone.`` are a classifier's, so a classification
checkpoint of ours initialises the encoder (``model.init_from``).

``backbone: smp/<arch>/<encoder>`` (the ``smp`` extra) is a whole model of segmentation-models-pytorch instead
(``smp/unet/resnet18``, ``smp/fpn/resnet34``, ``smp/deeplabv3plus/resnet18``, ``smp/segformer/mit_b0``), randomly
initialised, its encoder the ``backbone`` that fine-tuning freezes and scales.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from litstarter.errors import UsageError
from litstarter.models.network import DECODER_KEY, ImageNetwork
from litstarter.models.registry import create_backbone
from litstarter.models.small_cnn import conv_bn_relu
from litstarter.models.stages import read_stages, stage_channels


class UNetDecoder(nn.Module):
    """From the coarsest stage up: upsample to the next finer stage, concatenate it, two conv-BN-ReLU.

    Args:
        stage_channels: The encoder's stage widths, finest first.
        widths: One width per step up (``len(stage_channels) - 1`` of them), coarsest step first.
    """

    def __init__(self, stage_channels: Sequence[int], widths: Sequence[int]) -> None:
        super().__init__()
        skips = list(stage_channels[:-1])[::-1]  # finer stages, coarsest of them first
        if len(widths) != len(skips):
            raise UsageError(
                f"model.decoder_channels has {len(widths)} widths but the backbone has {len(stage_channels)} stages:"
                f" give {len(skips)} (one per step up), or null"
            )
        blocks, previous = [], stage_channels[-1]
        for skip, width in zip(skips, widths, strict=True):
            blocks.append(nn.Sequential(conv_bn_relu(previous + skip, width), conv_bn_relu(width, width)))
            previous = width
        self.blocks = nn.ModuleList(blocks)
        self.out_channels = previous

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        """The stages' features, finest first -> ``(B, out_channels, h, w)`` at the finest stage's resolution."""
        x = features[-1]
        for block, skip in zip(self.blocks, features[:-1][::-1], strict=True):
            x = F.interpolate(x, size=skip.shape[-2:], mode="bilinear", align_corners=False)
            x = block(torch.cat([x, skip], dim=1))
        return x


class Segmenter(ImageNetwork):
    """Images ``(B, C, H, W)`` in 0..255 to per-pixel logits ``(B, num_classes, H, W)``.

    Args:
        backbone: A module with ``forward_stages`` (stages' features, finest first) and ``stage_channels``.
        num_classes: Classes per pixel.
        mean: Per-channel mean on the 0..1 scale.
        std: Per-channel standard deviation on the 0..1 scale.
        decoder_channels: The decoder's width per step up; ``None``: the encoder's own finer widths, reversed.
        dropout: Dropout (per channel) before the head.
    """

    def __init__(
        self,
        backbone: nn.Module,
        num_classes: int,
        mean: Sequence[float],
        std: Sequence[float],
        decoder_channels: Sequence[int] | None = None,
        dropout: float = 0.0,
    ) -> None:
        super().__init__(mean, std)
        stages = stage_channels(backbone)
        self.backbone = backbone
        self.decoder = UNetDecoder(stages, decoder_channels or stages[:-1][::-1])
        self.dropout = nn.Dropout2d(dropout)
        self.head = nn.Conv2d(self.decoder.out_channels, num_classes, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Images ``(B, C, H, W)`` in 0..255 -> logits ``(B, num_classes, H, W)``."""
        features = read_stages(self.backbone, self.normalize(x))
        logits = self.head(self.dropout(self.decoder(features)))  # (B, K, h, w) at the finest stage
        return F.interpolate(logits, size=x.shape[-2:], mode="bilinear", align_corners=False)


#: ``backbone: smp/<arch>/<encoder>``: a segmentation-models-pytorch model (the ``smp`` extra).
SMP_PREFIX = "smp/"


def build_segmenter(architecture: Mapping, trust_model: bool = True) -> ImageNetwork:
    """An untrained :class:`Segmenter` shaped as ``architecture`` says (its normalisation placeholders until weights
    load).

    Raises:
        UsageError: the backbone gives no stages (:func:`stage_style`).
    """
    a, channels = architecture, int(architecture["in_channels"])
    if str(a["backbone"]).startswith(SMP_PREFIX):
        from litstarter.models.smp_models import build_smp_segmenter  # imports smp: the [smp] extra

        return build_smp_segmenter(a)
    kwargs = a.get("backbone_kwargs") or {}
    backbone = create_backbone(a["backbone"], channels, None, a.get("image_size"), trust_model, **kwargs)
    decoder = a.get(DECODER_KEY)
    return Segmenter(
        backbone, int(a["num_classes"]), [0.5] * channels, [0.25] * channels, decoder, float(a.get("dropout") or 0)
    )
