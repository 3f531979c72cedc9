"""``torch.compile`` of a classifier's backbone, and checkpoint keys that do not depend on it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import torch

from litstarter.models.classifier import Classifier
from litstarter.models.transfer import COMPILED_PREFIX


def compile_backbone(net: Classifier, compile_args: bool | dict) -> None:
    """Replace ``net.backbone`` by its ``torch.compile`` (``compile_args``: ``True`` or ``torch.compile`` keyword
    arguments); nothing if falsy or already compiled."""
    if compile_args and not hasattr(net.backbone, "_orig_mod"):
        kwargs = compile_args if isinstance(compile_args, dict) else {}
        net.backbone = torch.compile(net.backbone, **kwargs)


def uncompile_backbone(net: Classifier) -> None:
    """Put the plain backbone back (the same parameters)."""
    if hasattr(net.backbone, "_orig_mod"):
        net.backbone = net.backbone._orig_mod


def uncompiled_keys(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``state`` with the compiler's ``_orig_mod.`` prefix removed from every key."""
    return {k.replace(COMPILED_PREFIX, ""): v for k, v in state.items()}


def match_keys(state: Mapping[str, torch.Tensor], own_keys: Iterable[str]) -> dict[str, torch.Tensor]:
    """``state`` keyed as ``own_keys`` are (compiled or not), whichever way ``state`` was saved."""
    own = {k.replace(COMPILED_PREFIX, ""): k for k in own_keys}
    return {own.get(key, key): v for key, v in uncompiled_keys(state).items()}
