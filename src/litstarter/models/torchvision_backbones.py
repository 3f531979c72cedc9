"""torchvision's ImageNet families as registered backbones: classifier stripped, stem adapted to any channel count.

Each backbone *is* the torchvision model (same module names, so torchvision weights files load as they are)
with its last linear layer replaced by ``nn.Identity``: ``backbone(x)`` returns the pooled features
``(B, num_features)`` and our :class:`~litstarter.models.Classifier` adds the head. What stays of torchvision's
classifier before that layer stays in the backbone (MobileNetV3's 1024/1280-wide hidden layer, EfficientNet's
dropout, ConvNeXt's final LayerNorm), because pretrained weights exist for it.

``weights`` takes ``None`` (random init), a torchvision weights name (``IMAGENET1K_V1``, ``DEFAULT``, ...;
downloaded into ``torch.hub.get_dir()/checkpoints/`` on first use) or a path to a state_dict file in
torchvision's layout (the classifier's last layer may be in it; it is dropped).

Input channels other than 3 adapt the first convolution (the *stem*), with a log line saying so:

* pretrained, 1 channel: the RGB filters are summed, so a grayscale image gives the response the RGB network
  gives that image replicated into R=G=B;
* pretrained, C channels: the RGB filters are repeated cyclically over the C channels and scaled by 3/C
  (timm's rule), which keeps the response for an input whose channels are alike;
* random init: a new stem for C channels, drawn at the scale of the one it replaces.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import torch
import torchvision
from torch import nn

from litstarter._engine.checkpoints import load_torch_file, state_dict_differences
from litstarter._engine.errors import BadInputError, UsageError
from litstarter.models.registry import is_weights_path, register_backbone

log = logging.getLogger(__name__)

# torchvision expects 3-channel (RGB) input; its pretrained stems have 3 input channels.
RGB = 3


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


def weights_file_name(arch: str, name: str) -> str:
    """The file torchvision downloads for weights ``name`` of ``arch`` (e.g. ``resnet18-f37072fd.pth``)."""
    return os.path.basename(urlparse(torchvision.models.get_model_weights(arch)[name].url).path)


def adapt_stem_weight(weight: torch.Tensor, in_channels: int) -> torch.Tensor:
    """Pretrained RGB stem filters ``(O, 3, kh, kw)`` -> ``(O, in_channels, kh, kw)`` by the rule in the module doc."""
    if in_channels == weight.shape[1]:
        return weight
    if in_channels == 1:
        return weight.sum(dim=1, keepdim=True)
    repeat = torch.arange(in_channels) % weight.shape[1]
    return weight[:, repeat] * (weight.shape[1] / in_channels)


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


class WeightsUnavailableError(UsageError, RuntimeError):
    """Pretrained weights that are neither in torch's hub folder nor downloadable (offline): exit 2, one sentence."""


def download_weights(arch: str, name: str) -> dict[str, torch.Tensor]:
    """torchvision's weights ``name`` for ``arch``: from ``torch.hub.get_dir()/checkpoints/`` or downloaded there.

    Raises:
        WeightsUnavailableError: (a RuntimeError) If the file is not there and cannot be downloaded (offline); the
            message says which file
            torchvision looks for, where to put it, and how to use a local file instead.
    """
    url = torchvision.models.get_model_weights(arch)[name].url
    try:
        # The hub looks in its checkpoints folder first and only downloads what is not there.
        return torch.hub.load_state_dict_from_url(url, map_location="cpu", check_hash=True, weights_only=True)
    except OSError as err:  # URLError, socket timeouts, DNS failures are all OSErrors
        file_name = weights_file_name(arch, name)
        folder = Path(torch.hub.get_dir()) / "checkpoints"
        raise WeightsUnavailableError(
            f"cannot get the {arch} weights {name!r}: the download of {url} failed ({err}). Offline? torchvision"
            f" looks for the file\n  {file_name}\nin\n  {folder}/\n(torch.hub.get_dir()/checkpoints; set TORCH_HOME"
            f" to move it). Copy the file there from a machine that is online, or point the weights setting at a"
            f" local file instead, e.g.  model.weights: /path/to/{file_name}"
        ) from err


def read_weights_file(path: str | os.PathLike, arch: str) -> dict[str, torch.Tensor]:
    """A state_dict in torchvision's layout from ``path``, loaded with ``torch.load(..., weights_only=True)``.

    Raises:
        FileNotFoundError: If ``path`` does not exist.
        ValueError: If the file is not a flat state_dict (a Lightning checkpoint is pointed at ``init_from``).
    """

    state = load_torch_file(path)
    if isinstance(state, dict) and "state_dict" in state:
        raise BadInputError(
            f"weights file {path} is a training checkpoint (it has a 'state_dict' entry), not {arch} weights in"
            " torchvision's layout; start from it with model.init_from instead"
        )
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise BadInputError(
            f"weights file {path} is not a state_dict (a dict of tensors); found {type(state).__name__}"
        )
    return state


def load_torchvision_state(model: nn.Module, arch: str, state: dict[str, torch.Tensor], source: str) -> None:
    """Load torchvision-layout ``state`` into the stripped ``model``: the last layer's tensors are dropped, the stem
    is adapted to the model's channels. Every other tensor must fit exactly.

    Raises:
        ValueError: If keys are missing or unexpected, or shapes differ; the message names them and ``source``.
    """
    family = FAMILIES[arch]
    state = {k: v for k, v in state.items() if not k.startswith(family.last_layer + ".")}
    stem_key = family.stem + ".weight"
    in_channels = model.get_submodule(family.stem).in_channels
    if stem_key in state and state[stem_key].shape[1] != in_channels:
        if state[stem_key].shape[1] != RGB:
            raise BadInputError(
                f"{source}: stem {stem_key} has {state[stem_key].shape[1]} input channels; expected {RGB} (to adapt)"
                f" or {in_channels}"
            )
        rule = (
            "summing the RGB filters" if in_channels == 1 else f"repeating the RGB filters, scaled by 3/{in_channels}"
        )
        log.info(
            "%s: adapted the pretrained 3-channel stem %s to %d channel(s) by %s", arch, stem_key, in_channels, rule
        )
        state[stem_key] = adapt_stem_weight(state[stem_key], in_channels)

    missing, unexpected, mismatched = state_dict_differences(model, state)
    if missing or unexpected or mismatched:
        raise BadInputError(
            f"{source} does not fit {arch}: missing {missing[:5]} ({len(missing)} in all),"
            f" unexpected {unexpected[:5]} ({len(unexpected)} in all), shape mismatch"
            f" {mismatched[:5]}. Is it a state_dict of another architecture?"
        )
    model.load_state_dict(state)


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
            state, source = read_weights_file(weights, arch), f"weights file {weights}"
        else:
            state, source = download_weights(arch, weights), f"torchvision weights {arch} {weights}"
        load_torchvision_state(model, arch, state, source)
        log.info("%s: loaded %s", arch, source)
    return model


def _register(arch: str) -> None:
    def factory(in_channels: int = RGB, weights: str | None = None) -> nn.Module:
        return torchvision_backbone(arch, in_channels=in_channels, weights=weights)

    factory.__doc__ = f"torchvision's {arch}, classifier stripped (see :func:`torchvision_backbone`)."
    register_backbone(arch, weight_names=lambda: weight_names(arch))(factory)


for _arch in FAMILIES:
    _register(_arch)
