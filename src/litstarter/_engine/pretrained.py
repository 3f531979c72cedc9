"""Pretrained backbone weights: from torch's hub folder (downloaded there once) or from a file, and loaded into a
backbone whose stem may take another number of channels than the RGB weights.

The stem rule (pretrained, ``C`` channels instead of 3): 1 channel sums the RGB filters, so a grey image gives the
response the RGB network gives it replicated into R=G=B; ``C`` channels repeat the RGB filters cyclically and scale
them by 3/C (timm's rule), which keeps the response for an input whose channels are alike.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import torch
from torch import nn

from litstarter.errors import BadInputError, UsageError

from .checkpoints import load_torch_file, state_dict_differences

log = logging.getLogger(__name__)

RGB = 3


class WeightsUnavailableError(UsageError, RuntimeError):
    """Pretrained weights that are neither in torch's hub folder nor downloadable (offline): exit 2, one sentence."""


def download_state_dict(url: str, what: str) -> dict[str, torch.Tensor]:
    """The state_dict at ``url``: from ``torch.hub.get_dir()/checkpoints/``, or downloaded there first.

    Args:
        url: Where the weights file is published; its last path part is the file name the hub looks for.
        what: The weights in words, for the message (``"the resnet18 weights 'DEFAULT'"``).

    Raises:
        WeightsUnavailableError: The file is not there and cannot be downloaded (offline); the message says which
            file to put where, and how to point the setting at a local file instead.
    """
    try:
        # The hub looks in its checkpoints folder first and only downloads what is not there.
        return torch.hub.load_state_dict_from_url(url, map_location="cpu", check_hash=True, weights_only=True)
    except OSError as err:  # URLError, socket timeouts, DNS failures are all OSErrors
        file_name = os.path.basename(url.split("?")[0])
        folder = Path(torch.hub.get_dir()) / "checkpoints"
        raise WeightsUnavailableError(
            f"cannot get {what}: the download of {url} failed ({err}). Offline? The file\n  {file_name}\nis looked"
            f" for in\n  {folder}/\n(torch.hub.get_dir()/checkpoints; set TORCH_HOME to move it). Copy the file there"
            f" from a machine that is online, or point the weights setting at a local file instead, e.g."
            f"  model.weights: /path/to/{file_name}"
        ) from err


def read_state_dict_file(path: str | os.PathLike, layout: str) -> dict[str, torch.Tensor]:
    """A flat state_dict from ``path``, loaded with ``torch.load(..., weights_only=True)``.

    Args:
        path: The file.
        layout: Whose layout the file should have, for the message (``"resnet18 weights in torchvision's layout"``).

    Raises:
        BadInputError: The file is a training checkpoint (pointed at ``model.init_from``) or not a state_dict.
    """
    state = load_torch_file(path)
    if isinstance(state, dict) and "state_dict" in state:
        raise BadInputError(
            f"weights file {path} is a training checkpoint (it has a 'state_dict' entry), not {layout}; start from"
            " it with model.init_from instead"
        )
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise BadInputError(
            f"weights file {path} is not a state_dict (a dict of tensors); found {type(state).__name__}"
        )
    return state


def adapt_stem_weight(weight: torch.Tensor, in_channels: int) -> torch.Tensor:
    """Pretrained RGB stem filters ``(O, 3, kh, kw)`` -> ``(O, in_channels, kh, kw)`` by the rule above."""
    if in_channels == weight.shape[1]:
        return weight
    if in_channels == 1:
        return weight.sum(dim=1, keepdim=True)
    repeat = torch.arange(in_channels) % weight.shape[1]
    return weight[:, repeat] * (weight.shape[1] / in_channels)


def load_pretrained(
    model: nn.Module, state: dict[str, torch.Tensor], stem: str, dropped: str, source: str, name: str
) -> None:
    """Load ``state`` into ``model``: the tensors of the ``dropped`` layer go, the stem is adapted to the model's
    channels, and every other tensor must fit exactly.

    Args:
        model: The backbone.
        state: Its pretrained weights, in the layout of the original network.
        stem: Module path of the first convolution (the one that sees the image).
        dropped: Module path of the layer the backbone replaced (the ImageNet classifier).
        source: Where the weights came from, for the messages.
        name: The architecture, for the messages.

    Raises:
        BadInputError: A stem that cannot be adapted, or keys and shapes that do not fit (named).
    """
    state = {k: v for k, v in state.items() if not k.startswith(dropped + ".")}
    stem_key = stem + ".weight"
    in_channels = model.get_submodule(stem).in_channels
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
            "%s: adapted the pretrained 3-channel stem %s to %d channel(s) by %s", name, stem_key, in_channels, rule
        )
        state[stem_key] = adapt_stem_weight(state[stem_key], in_channels)
    missing, unexpected, mismatched = state_dict_differences(model, state)
    if missing or unexpected or mismatched:
        raise BadInputError(
            f"{source} does not fit {name}: missing {missing[:5]} ({len(missing)} in all), unexpected"
            f" {unexpected[:5]} ({len(unexpected)} in all), shape mismatch {mismatched[:5]}. Is it a state_dict of"
            " another architecture?"
        )
    model.load_state_dict(state)
