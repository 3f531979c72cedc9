"""A small VGG-style CNN: fast on a CPU, good enough to beat a kernel SVM on 8x8 digits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from litstarter.errors import UsageError
from litstarter.models.registry import register_backbone

#: Images with a side above this many pixels get a downsampling stem and per-image standardisation (``"auto"``);
#: the 8x8 digits keep the full-resolution path on their raw pixels.
STEM_ABOVE = 16
#: Added to each channel's variance before :func:`standardize_per_image` divides by its square root (the input is
#: already in dataset standard deviations): a flat channel, spread under about 1% of that, stays near zero.
STANDARDIZE_EPS = 1e-4


def conv_bn_relu(in_channels: int, out_channels: int, stride: int = 1) -> nn.Sequential:
    """3x3 convolution, batch norm, ReLU. The conv has no bias because BN adds one."""
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=stride, padding=1, bias=False),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(inplace=True),
    )


def stem_factor(image_size: Sequence[int] | None) -> int:
    """The stem's downsampling for ``stem="auto"``: 1 up to 16 px, 2 below 64 px, 4 from 64 px (the shorter side).
    Like ResNet's stem, it brings images to where 3x3 stages see shapes, at a fraction of the cost: 32 and 64 px
    both reach the first stage at 16 px. Small images (the 8x8 digits) keep the full-resolution path."""
    if image_size is None:
        return 1
    side = min(int(s) for s in image_size)
    return 1 if side <= STEM_ABOVE else 2 if side < 64 else 4


def standardize_per_image(x: torch.Tensor) -> torch.Tensor:
    """Each image's channels at zero mean and unit variance over its own pixels, ``(B, C, H, W)`` float in and out:
    exposure, contrast and colour cast are gone, and with them any class cue that lies only in them."""
    mean = x.mean(dim=(2, 3), keepdim=True)
    var = (x - mean).square().mean(dim=(2, 3), keepdim=True)
    return (x - mean) * torch.rsqrt(var + STANDARDIZE_EPS)


def make_stem(in_channels: int, width: int, factor: int) -> nn.Sequential:
    """The first conv-BN-ReLU, strided for ``factor`` 2 and 4, then 2x2 max pooling for 4 (the same weight shapes
    for every factor; it follows ``image_size``, which checkpoints and exports record)."""
    if factor not in (1, 2, 4):
        raise UsageError(f"small_cnn stem must be 1, 2, 4 or 'auto'; got {factor!r}")
    layers = conv_bn_relu(in_channels, width, stride=1 if factor == 1 else 2)
    if factor == 4:
        layers.append(nn.MaxPool2d(2, ceil_mode=True))
    return layers


class CatAvgMaxPool(nn.Module):
    """Global average and global max pooling side by side, ``(B, C, H, W)`` -> ``(B, 2C, 1, 1)``: the average says
    how much of the image holds a pattern, the max whether any place does (a small object in a large image)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Concatenate the two poolings along the channels."""
        return torch.cat([x.mean(dim=(2, 3), keepdim=True), x.amax(dim=(2, 3), keepdim=True)], dim=1)


def make_pool(pool: str) -> tuple[nn.Module, int]:
    """The global pooling named ``pool`` (timm's names) and how many features it gives per channel."""
    pools = {
        "avg": (nn.AdaptiveAvgPool2d(1), 1),
        "max": (nn.AdaptiveMaxPool2d(1), 1),
        "catavgmax": (CatAvgMaxPool(), 2),
    }
    if pool not in pools:
        raise UsageError(f"small_cnn global_pool must be 'avg', 'max' or 'catavgmax'; got {pool!r}")
    return pools[pool]


class SmallCNN(nn.Module):
    """Stages of two conv-BN-ReLU layers, each but the last followed by 2x2 max pooling, then global pooling (the
    feature width does not depend on the input size). The first layer is the stem (:func:`make_stem`).

    Args:
        in_channels: Channels of the input images (1 for grayscale, 3 for RGB).
        widths: Output channels of each stage.
        stem: Downsampling of the first layer: 1 (none), 2, 4.
        standardize: Standardise each image per channel first (:func:`standardize_per_image`); ``"both"``: feed the
            raw channels and the standardised ones side by side.
        global_pool: The global pooling: ``"avg"``, ``"max"`` or ``"catavgmax"`` (both, twice the features).
    """

    def __init__(
        self,
        in_channels: int = 3,
        widths: tuple[int, ...] = (32, 64, 128),
        stem: int = 1,
        standardize: bool | Literal["both"] = False,
        global_pool: Literal["avg", "max", "catavgmax"] = "avg",
    ) -> None:
        super().__init__()
        self.standardize = standardize
        stages = []
        prev = in_channels * (2 if standardize == "both" else 1)
        self.stem_factor = stem
        for i, width in enumerate(widths):
            entry = make_stem(prev, width, stem) if i == 0 else conv_bn_relu(prev, width)
            layers = [entry, conv_bn_relu(width, width)]
            if i < len(widths) - 1:
                layers.append(nn.MaxPool2d(2, ceil_mode=True))
            stages.append(nn.Sequential(*layers))
            prev = width
        # A ModuleList of stages, not one Sequential: activation checkpointing works per stage.
        self.stages = nn.ModuleList(stages)
        self.pool, per_channel = make_pool(global_pool)
        self.num_features = prev * per_channel
        self.grad_checkpointing = False
        self.reset_parameters()

    def set_grad_checkpointing(self, enable: bool = True) -> None:
        """Recompute each stage's activations in backward instead of storing them (timm's method name): about one
        stage's activation memory for one more forward pass; gradients unchanged. Dropout draws the same mask again
        (the RNG state is restored); batch norm's running statistics get a second update per step and drift
        slightly from a run without it.

        Args:
            enable: Turn checkpointing on or off.
        """
        self.grad_checkpointing = enable

    def reset_parameters(self) -> None:
        """Kaiming (He) init for convs under ReLU; BN starts as the identity."""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def _standardized(self, x: torch.Tensor) -> torch.Tensor:
        if self.standardize == "both":
            return torch.cat([x, standardize_per_image(x)], dim=1)
        return standardize_per_image(x) if self.standardize else x

    def _run(self, module: nn.Module, x: torch.Tensor) -> torch.Tensor:
        if self.grad_checkpointing and self.training and torch.is_grad_enabled():
            # use_reentrant=False: the supported variant; works with inputs that don't require grad
            return checkpoint(module, x, use_reentrant=False)
        return module(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map ``(B, C, H, W)`` float images to ``(B, num_features)`` pooled features."""
        x = self._standardized(x)
        for stage in self.stages:
            x = self._run(stage, x)
        return self.pool(x).flatten(1)  # (B, F)

    @property
    def stage_channels(self) -> list[int]:
        """The width of each stage's features (:meth:`forward_stages`): what a segmentation decoder is sized by."""
        return [stage[1][0].out_channels for stage in self.stages]

    def forward_stages(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Map ``(B, C, H, W)`` float images to each stage's features before its pooling, finest first: the skips
        of a segmentation decoder (``models/segmenter.py``)."""
        x, features = self._standardized(x), []
        for stage in self.stages:
            pool = stage[-1] if isinstance(stage[-1], nn.MaxPool2d) else None
            x = self._run(stage[:-1] if pool is not None else stage, x)
            features.append(x)  # (B, width, H / stride, W / stride)
            if pool is not None:
                x = pool(x)
        return features


@register_backbone("small_cnn")
def small_cnn(
    in_channels: int = 3,
    widths: tuple[int, ...] = (32, 64, 128),
    stem: int | Literal["auto"] = "auto",
    image_size: Sequence[int] | None = None,
    standardize: bool | Literal["auto", "both"] = "auto",
    global_pool: Literal["avg", "max", "catavgmax"] = "avg",
) -> SmallCNN:
    """The template's default backbone (about 0.3 M parameters with the default widths).

    Args:
        in_channels: Channels of the input images.
        widths: Output channels of each stage.
        stem: Downsampling of the first layer, 1, 2 or 4; ``"auto"`` picks it from ``image_size``
            (:func:`stem_factor`: 1 up to 16 px, 2 below 64 px, 4 from 64 px).
        image_size: Input ``(height, width)``; passed by :func:`~litstarter.models.registry.create_backbone`.
        standardize: Standardise each image per channel first (:func:`standardize_per_image`): shapes and relative
            colours, whatever each photo's exposure and white balance. ``"both"``: the raw and the standardised
            channels side by side, for the network to use either (a photo's colour or exposure may be the class).
            ``"auto"``: ``"both"`` above 16 px (photos), off for the 8x8 digits.
        global_pool: The global pooling after the last stage (timm's argument and names): ``"avg"``; ``"max"``, or
            ``"catavgmax"`` (both side by side, twice the features), for small objects in a larger image, where an
            average dilutes them.
    """
    factor = stem_factor(image_size) if stem == "auto" else int(stem)
    if standardize == "auto":
        photo = image_size is not None and min(int(s) for s in image_size) > STEM_ABOVE
        standardize = "both" if photo else False
    standardize = standardize if standardize == "both" else bool(standardize)
    return SmallCNN(
        in_channels=in_channels, widths=widths, stem=factor, standardize=standardize, global_pool=global_pool
    )
