"""A backbone's stages, finest first: what a segmentation decoder and a detector's feature pyramid are built on.

A backbone gives them by ``forward_stages(x)`` and ``stage_channels`` (``small_cnn``, ``timm/<name>``); torchvision's
ResNets by their stem (stride 2) and ``layer1``..``layer4`` (strides 4 to 32), read here; torchvision's MobileNets,
EfficientNets and ConvNeXts (a ``features`` sequence) by the last block at each resolution, found once by one small
forward pass.
"""

from __future__ import annotations

import torch
from torch import nn

from litstarter.errors import UsageError

#: The modules that make a torchvision ResNet readable by stage.
RESNET = ("conv1", "bn1", "maxpool", "layer1", "layer4")


def _is_resnet(backbone: nn.Module) -> bool:
    return all(hasattr(backbone, name) for name in RESNET)


def _is_sequence(backbone: nn.Module) -> bool:
    return isinstance(getattr(backbone, "features", None), nn.Sequential)


@torch.no_grad()
def _stage_ends(backbone: nn.Module) -> tuple[list[int], list[int]]:
    """The indices in ``backbone.features`` after which the resolution halves (and the last), and their widths: one
    forward pass of a 64 x 64 image in eval mode (so no running statistic moves), kept on the backbone."""
    if not hasattr(backbone, "stage_ends"):
        first = next(m for m in backbone.features.modules() if isinstance(m, nn.Conv2d))
        was_training = backbone.training
        x, sizes, widths = torch.zeros(1, first.in_channels, 64, 64), [], []
        backbone.eval()
        for block in backbone.features:
            x = block(x)
            sizes.append(x.shape[-1])
            widths.append(x.shape[1])
        backbone.train(was_training)
        ends = [i for i in range(len(sizes)) if i == len(sizes) - 1 or sizes[i + 1] < sizes[i]]
        backbone.stage_ends = (ends, [widths[i] for i in ends])
    return backbone.stage_ends


def stage_channels(backbone: nn.Module) -> list[int]:
    """The width of each stage, finest first.

    Raises:
        UsageError: the backbone gives no stages.
    """
    if hasattr(backbone, "forward_stages"):
        return list(backbone.stage_channels)
    if _is_resnet(backbone):
        widths = [backbone.conv1.out_channels]
        for name in ("layer1", "layer2", "layer3", "layer4"):
            last = getattr(backbone, name)[-1]
            widths.append((last.bn3 if hasattr(last, "bn3") else last.bn2).num_features)
        return widths
    if _is_sequence(backbone):
        return _stage_ends(backbone)[1]
    raise UsageError(
        f"model.backbone {type(backbone).__name__} gives no stages (forward_stages, stage_channels): a segmentation"
        " decoder or a detector's feature pyramid needs them; small_cnn, timm/<name> and torchvision's"
        " ResNets, MobileNets, EfficientNets and ConvNeXts have them"
    )


def read_stages(backbone: nn.Module, x: torch.Tensor) -> list[torch.Tensor]:
    """Each stage's features of normalised images ``x``, finest first."""
    if hasattr(backbone, "forward_stages"):
        return backbone.forward_stages(x)
    if _is_sequence(backbone):
        ends, features = _stage_ends(backbone)[0], []
        for i, block in enumerate(backbone.features[: ends[-1] + 1]):
            x = block(x)
            if i in ends:
                features.append(x)
        return features
    stem = backbone.relu(backbone.bn1(backbone.conv1(x)))
    features, x = [stem], backbone.maxpool(stem)
    for name in ("layer1", "layer2", "layer3", "layer4"):
        x = getattr(backbone, name)(x)
        features.append(x)
    return features
