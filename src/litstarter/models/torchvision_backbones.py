"""torchvision's ImageNet families as registered backbones: classifier stripped, stem adapted to any channel count.

Each backbone *is* the torchvision model (same module names, so torchvision weights files load as they are)
with its last linear layer replaced by ``nn.Identity``: ``backbone(x)`` returns the pooled features
``(B, num_features)`` and our :class:`~litstarter.models.Classifier` adds the head. What stays of torchvision's
classifier before that layer stays in the backbone (MobileNetV3's 1024/1280-wide hidden layer, EfficientNet's
dropout, ConvNeXt's final LayerNorm), because pretrained weights exist for it.

``weights`` takes ``None`` (random init), a torchvision weights name (``IMAGENET1K_V1``, ``DEFAULT``, ...;
downloaded into ``torch.hub.get_dir()/checkpoints/`` on first use) or a path to a state_dict file in
torchvision's layout (the classifier's last layer may be in it; it is dropped).

Input channels other than 3 adapt the first convolution (the *stem*), with a log line saying so: pretrained, its
RGB filters are summed (1 channel) or repeated and scaled (``_engine/pretrained.py`` has the rule); random, a new
stem for C channels is drawn at the scale of the one it replaces.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch
import torchvision
from torch import nn

from litstarter._engine.pretrained import RGB, download_state_dict, load_pretrained, read_state_dict_file
from litstarter.models.registry import is_weights_path, register_backbone

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Family:
    """Where a torchvision architecture keeps its stem and its last (ImageNet) layer.

    Args:
        stem: Module path of the first ``nn.Conv2d`` (the one that sees the image).
        last_layer: Module path of the final ``nn.Linear``, replaced by ``nn.Identity``.
    """

    stem: str
    last_layer: str


FAMILIES: dict[str, Family] = {
    "resnet18": Family(stem="conv1", last_layer="fc"),
    "resnet34": Family(stem="conv1", last_layer="fc"),
    "resnet50": Family(stem="conv1", last_layer="fc"),
    "mobilenet_v3_small": Family(stem="features.0.0", last_layer="classifier.3"),
    "mobilenet_v3_large": Family(stem="features.0.0", last_layer="classifier.3"),
    "efficientnet_b0": Family(stem="features.0.0", last_layer="classifier.1"),
    "convnext_tiny": Family(stem="features.0.0", last_layer="classifier.2"),
}


def weight_names(arch: str) -> list[str]:
    """torchvision's weights names for ``arch``, e.g. ``['IMAGENET1K_V1', 'DEFAULT']``."""
    return list(torchvision.models.get_model_weights(arch).__members__)


def _replace(model: nn.Module, path: str, module: nn.Module) -> None:
    parent_path, _, name = path.rpartition(".")
    parent = model.get_submodule(parent_path) if parent_path else model
    setattr(parent, name, module)


def _conv_like(conv: nn.Conv2d, in_channels: int) -> nn.Conv2d:
    """A ``Conv2d`` like ``conv`` but with ``in_channels`` inputs."""
    return nn.Conv2d(
        in_channels,
        conv.out_channels,
        kernel_size=conv.kernel_size,
        stride=conv.stride,
        padding=conv.padding,
        dilation=conv.dilation,
        groups=conv.groups,
        bias=conv.bias is not None,
        padding_mode=conv.padding_mode,
    )


def torchvision_backbone(arch: str, in_channels: int = RGB, weights: str | None = None) -> nn.Module:
    """Build torchvision's ``arch`` as a backbone: pooled features out, ``num_features`` set.

    Args:
        arch: A key of :data:`FAMILIES`.
        in_channels: Channels of the input images; anything but 3 adapts the stem (see the module doc).
        weights: ``None``, a weights name from :func:`weight_names`, or a path to a state_dict file.
    """
    model = torchvision.models.get_model(arch, weights=None)
    family = FAMILIES[arch]
    last = model.get_submodule(family.last_layer)
    model.num_features = last.in_features
    _replace(model, family.last_layer, nn.Identity())
    stem = model.get_submodule(family.stem)
    if in_channels != stem.in_channels:
        new_stem = _conv_like(stem, in_channels)
        with torch.no_grad():  # random init at the scale of torchvision's own init for this stem
            new_stem.weight.normal_(0.0, stem.weight.std().item())
        _replace(model, family.stem, new_stem)
        if weights is None:
            log.debug("%s: new random stem %s for %d input channel(s)", arch, family.stem, in_channels)
    if weights is not None:
        if is_weights_path(weights, weight_names(arch)):
            state = read_state_dict_file(weights, f"{arch} weights in torchvision's layout")
            source = f"weights file {weights}"
        else:
            url = torchvision.models.get_model_weights(arch)[weights].url
            state, source = (
                download_state_dict(url, f"the {arch} weights {weights!r}"),
                f"torchvision weights {arch} {weights}",
            )
        load_pretrained(model, state, family.stem, family.last_layer, source, arch)
        log.info("%s: loaded %s", arch, source)
    return model


def _register(arch: str) -> None:
    def factory(in_channels: int = RGB, weights: str | None = None) -> nn.Module:
        return torchvision_backbone(arch, in_channels=in_channels, weights=weights)

    factory.__doc__ = f"torchvision's {arch}, classifier stripped (see :func:`torchvision_backbone`)."
    register_backbone(arch, weight_names=lambda: weight_names(arch))(factory)


for _arch in FAMILIES:
    _register(_arch)
