"""timm's models as backbones: ``model.backbone: timm/<name>`` (``timm/resnet18``, ``timm/convnext_nano.in12k``).

Built as ``timm.create_model(name, num_classes=0, in_chans=<data.channels>, **backbone_kwargs)`` (so
``drop_path_rate``, ``drop_rate`` and the rest pass through) and wrapped in :class:`TimmBackbone`, which meets the
backbone contract of :mod:`litstarter.models.registry`. timm is the optional extra ``[timm]``, imported only when a
``timm/`` name is built: a core install trains without it.

``weights`` follows timm's own mechanism: ``pretrained`` takes the weights of the model's pretrained tag (from the
Hugging Face hub cache, or downloaded there once), a file goes through ``pretrained_cfg_overlay=dict(file=...)``.
Either way timm drops the ImageNet classifier and adapts the stem to another channel count.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import socket
from pathlib import Path
from urllib.parse import urlparse

import torch
from torch import nn

from litstarter._engine.pretrained import WeightsUnavailableError
from litstarter.errors import BadInputError, UsageError
from litstarter.models.registry import BackboneError, register_backbone_prefix
from litstarter.models.timm_data_config import PREFIX
from litstarter.models.timm_data_config import data_config as resolve_data_config

log = logging.getLogger(__name__)

#: ``model.weights`` value that asks for the pretrained tag's weights.
PRETRAINED = "pretrained"
INSTALL = "pip install 'litstarter[timm]'"
#: Seconds to wait for the weights' host before calling the machine offline (huggingface_hub retries ~47 s).
PROBE_TIMEOUT_S = 2.0


def _timm(name: str):
    """The ``timm`` module, or one line saying how to install it."""
    try:
        import timm
    except ImportError:
        raise UsageError(f"model.backbone {PREFIX}/{name} needs timm, which is not installed: {INSTALL}") from None
    return timm


class TimmBackbone(nn.Module):
    """A timm model with its classifier removed: images ``(B, C, H, W)`` -> pooled features ``(B, num_features)``.

    Args:
        model: A timm model built with ``num_classes=0``.
        num_features: The width of its output (measured by :func:`timm_backbone`).
        data_config: Its pretrained preprocessing: ``mean``, ``std`` (one per input channel), ``input_size``
            ``[h, w]``, ``interpolation``, ``crop_pct``.
        name: ``timm/<name>``, for messages.
    """

    def __init__(self, model: nn.Module, num_features: int, data_config: dict, name: str) -> None:
        super().__init__()
        self.model = model
        self.num_features = num_features
        self.data_config = data_config
        self.name = name

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, C, H, W)`` normalised floats -> ``(B, num_features)``."""
        return self.model(x)

    def set_grad_checkpointing(self, enable: bool = True) -> None:
        """timm's activation checkpointing (recompute each block's activations in backward)."""
        self.model.set_grad_checkpointing(enable)

    @property
    def stage_channels(self) -> list[int]:
        """The width of each stage's features (timm's ``feature_info``): a segmentation decoder is sized by it."""
        return [int(info["num_chs"]) for info in self.model.feature_info]

    def forward_stages(self, x: torch.Tensor) -> list[torch.Tensor]:
        """Each stage's features, finest first (timm's ``forward_intermediates``): the skips of a segmentation
        decoder. The same modules as :meth:`forward`, so a classification checkpoint's weights fit."""
        return self.model.forward_intermediates(x, intermediates_only=True)

    def layer_decay_groups(self, layer_decay: float, exclude_norm_and_bias: bool) -> list[dict]:
        """timm's ``param_groups_layer_decay``, first layer first: each group named ``backbone_layer_<NN>`` (plus
        ``_no_decay``) with its ``lr_scale``, ``layer_decay ** (layers above it)``, counting the head that replaces
        timm's classifier as the top layer (scale 1, not here); decayed groups leave ``weight_decay`` to the
        optimiser.

        Raises:
            UsageError: The model has no ``group_matcher`` (no layer order to decay along).
        """
        if not hasattr(self.model, "group_matcher"):
            raise UsageError(f"model.layer_decay needs a backbone with a group_matcher; {self.name} has none")
        from timm.models import group_parameters
        from timm.optim import param_groups_layer_decay

        groups = param_groups_layer_decay(
            self.model, weight_decay=0.0, weight_decay_exclude_1d=exclude_norm_and_bias, layer_decay=layer_decay
        )
        layer_of = group_parameters(self.model, self.model.group_matcher(coarse=False), reverse=True)  # name -> layer
        name_of = {id(p): n for n, p in self.model.named_parameters()}
        top = max(layer_of.values())
        for group in groups:
            exempt = exclude_norm_and_bias and all(p.ndim <= 1 for p in group["params"])
            if not exempt:
                group.pop("weight_decay")  # the optimiser's, as for every other group
            group["layer"] = layer_of.get(name_of[id(group["params"][0])], top)
            group["name"] = f"backbone_layer_{group['layer']:02d}" + ("_no_decay" if exempt else "")
            group["lr_scale"] *= layer_decay  # our head is the layer above timm's top one
        return sorted(groups, key=lambda g: (g["layer"], g["name"]))

    def resolve_normalization(self, mean: list[float], std: list[float], image_size, pretrained: bool):
        """The ``(mean, std)`` to normalise with: the pretrained config's when the weights are pretrained, the
        data's otherwise. Logs one line naming each place where the two disagree, and which wins and why."""
        cfg, ours = self.data_config, (mean, std)
        theirs = (cfg["mean"], cfg["std"])
        differ = []
        if not all(
            math.isclose(a, b, abs_tol=1e-3)
            for x, y in zip(ours, theirs, strict=True)
            for a, b in zip(x, y, strict=True)
        ):
            won = "the pretrained config's (pretrained weights expect it)" if pretrained else "the data's (random init)"
            differ.append(
                f"the data's mean/std {_short(mean)} / {_short(std)} differ from the pretrained config's"
                f" {_short(cfg['mean'])} / {_short(cfg['std'])}: {won} wins"
            )
        size = list(cfg["input_size"][-2:])  # (channels, height, width)
        if image_size is not None and list(image_size) != size:
            why = "pretrained features work best near it" if pretrained else "random init has no preferred size"
            differ.append(
                f"data.image_size {list(image_size)} differs from the pretrained config's input size {size}:"
                f" data.image_size wins (the data module stores images at it; {why})"
            )
        if differ:
            log.info("%s: %s", self.name, "; ".join(differ))
        return theirs if pretrained else ours


def _short(values) -> list[float]:
    return [round(float(v), 4) for v in values]


def _env_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def _unreachable(host: str) -> str | None:
    """Why ``host`` cannot be reached within :data:`PROBE_TIMEOUT_S` (``None``: it answered)."""
    try:
        socket.create_connection((host, 443), timeout=PROBE_TIMEOUT_S).close()
    except OSError as err:
        return f"{host} is unreachable ({type(err).__name__}: {err})"
    return None


def _cached_weights(cfg) -> str | None:
    """A local copy of the pretrained tag's weights file, in the Hugging Face or torch hub cache."""
    if cfg.hf_hub_id:
        from huggingface_hub import try_to_load_from_cache

        repo, _, revision = cfg.hf_hub_id.partition("@")
        for file_name in [cfg.hf_hub_filename] if cfg.hf_hub_filename else ["model.safetensors", "pytorch_model.bin"]:
            # HF_HUB_CACHE read now, not when huggingface_hub was imported: a run may set it per process
            found = try_to_load_from_cache(repo, file_name, os.environ.get("HF_HUB_CACHE"), revision=revision or None)
            if isinstance(found, str):
                return found
    if cfg.url:
        path = Path(torch.hub.get_dir()) / "checkpoints" / os.path.basename(urlparse(cfg.url).path)
        return str(path) if path.is_file() else None
    return None


def _weights_kwargs(timm, name: str, weights: str | None) -> dict:
    """``create_model``'s weights arguments for ``model.weights``; a pretrained request that cannot be met (no
    such weights, offline and not cached) fails here, in one line, before timm would wait on the network."""
    if weights is None:
        return {}
    if weights != PRETRAINED:
        path = Path(weights).expanduser()
        if not path.is_file():
            raise UsageError(
                f"model.weights: {weights} is not a file (a state_dict of {PREFIX}/{name}, or '{PRETRAINED}')"
            )
        return {"pretrained": True, "pretrained_cfg_overlay": {"file": str(path)}}
    cfg = timm.models.get_pretrained_cfg(name)
    if cfg is None or not (cfg.hf_hub_id or cfg.url):
        raise UsageError(
            f"model.weights: timm has no pretrained weights for {name!r}; use null (random init) or a weights file"
        )
    cached = _cached_weights(cfg)
    if cached:  # straight from the cache: no request that could stall
        return {"pretrained": True, "pretrained_cfg_overlay": {"file": cached}}
    if cfg.hf_hub_id:
        from huggingface_hub import constants

        source, host = f"the Hugging Face hub ({cfg.hf_hub_id})", urlparse(constants.ENDPOINT).hostname
    else:
        source, host = cfg.url, urlparse(cfg.url).hostname
    reason = "HF_HUB_OFFLINE is set" if _env_offline() else _unreachable(host)
    if reason:
        raise WeightsUnavailableError(
            f"model.weights: pretrained: the weights of {PREFIX}/{name} are not in the local cache and {reason}, so"
            f" they cannot be downloaded from {source}; run once online, or set model.weights to a local file"
        )
    return {"pretrained": True}


def _create(timm, name: str, in_channels: int, weights: str | None, kwargs: dict) -> nn.Module:
    """``timm.create_model`` with the classifier removed; a weights file or download that fails is one line."""
    weight_kwargs = _weights_kwargs(timm, name, weights)
    try:
        return timm.create_model(name, num_classes=0, in_chans=in_channels, **weight_kwargs, **kwargs)
    except TypeError as err:  # an argument the model's constructor does not take
        raise UsageError(f"model.backbone_kwargs for {PREFIX}/{name}: {err}") from None
    except (OSError, RuntimeError, KeyError) as err:
        if not weight_kwargs:
            raise
        first = str(err).strip().splitlines()[0][:300] if str(err).strip() else type(err).__name__
        raise BadInputError(f"model.weights {weights!r} do not load into {PREFIX}/{name}: {first}") from None


def _features_at(model: nn.Module, in_channels: int, size: tuple[int, int]) -> torch.Tensor:
    """The output of one dummy image of ``size`` (eval mode, no gradients)."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            return model(torch.zeros(1, in_channels, *size))
    finally:
        model.train(was_training)


def _smallest_size(model: nn.Module, in_channels: int) -> int | None:
    """The smallest square input the model takes, among multiples of its total stride (``None``: none up to 8x)."""
    reduction = int((getattr(model, "feature_info", None) or [{}])[-1].get("reduction", 32))
    for side in range(reduction, 9 * reduction, reduction):
        try:
            _features_at(model, in_channels, (side, side))
            return side
        except (RuntimeError, ValueError, AssertionError):
            continue
    return None


def _measure_features(model: nn.Module, name: str, in_channels: int, size: tuple[int, int]) -> int:
    """The feature width, checked by a dummy forward at ``size``; a size the model cannot take is one line."""
    try:
        out = _features_at(model, in_channels, size)
    except (RuntimeError, ValueError, AssertionError) as err:
        smallest = _smallest_size(model, in_channels)
        at_least = f"an input of at least {smallest}x{smallest}" if smallest else "another input size"
        first = str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__
        raise BackboneError(
            f"model.backbone {PREFIX}/{name} needs {at_least}; data.image_size is {list(size)} ({first})"
        ) from None
    if out.ndim != 2:
        raise BackboneError(
            f"model.backbone {PREFIX}/{name} outputs shape {list(out.shape)}, not pooled (B, features);"
            " leave model.backbone_kwargs.global_pool unset"
        )
    reported = getattr(model, "head_hidden_size", None) or model.num_features
    if out.shape[1] != reported:
        log.warning(
            "%s/%s reports %d features but outputs %d; using %d", PREFIX, name, reported, out.shape[1], out.shape[1]
        )
    return int(out.shape[1])


def timm_backbone(
    name: str,
    in_channels: int = 3,
    weights: str | None = None,
    image_size: tuple[int, int] | None = None,
    **kwargs,
) -> TimmBackbone:
    """Build timm's model ``name`` as a backbone, checked once by a dummy forward at ``image_size``.

    Args:
        name: A timm model name, with or without a pretrained tag (``convnext_nano.in12k``).
        in_channels: Image channels (timm adapts a pretrained stem itself).
        weights: ``None`` (random init), ``pretrained``, or a path to a state_dict file of this model.
        image_size: ``(height, width)`` the model will see; ``None``: the pretrained config's input size.
        **kwargs: Passed to ``timm.create_model`` (``drop_path_rate``, ``drop_rate``, ...).

    Raises:
        UsageError: timm missing, weights that cannot be had, or an input size the model cannot take.
    """
    timm = _timm(name)
    model = _create(timm, name, in_channels, weights, kwargs)
    data_config = resolve_data_config(model, in_channels)
    size = tuple(image_size) if image_size is not None else tuple(data_config["input_size"])
    num_features = _measure_features(model, name, in_channels, size)
    if weights is not None:
        log.info("%s/%s: loaded %s weights (classifier dropped)", PREFIX, name, weights)
    return TimmBackbone(model, num_features, data_config, f"{PREFIX}/{name}")


def factory_of(name: str):
    """The factory of ``timm/<name>``: refuses a missing timm or an unknown model in one line."""
    timm = _timm(name)
    if not timm.is_model(name):
        close = timm.list_models(f"*{name.split('.')[0][:8]}*")[:5]
        raise BackboneError(f"model.backbone: timm has no model {name!r}" + (f"; close: {close}" if close else ""))
    return functools.partial(timm_backbone, name)


register_backbone_prefix(PREFIX, factory_of, weight_names=[PRETRAINED])
