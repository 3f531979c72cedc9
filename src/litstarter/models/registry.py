"""Backbones by name: a registered one (``backbone: small_cnn``) or your own class (``backbone: my_pkg.MyNet``).

The backbone contract, the one seam that fine-tuning, freezing and export rely on:

* ``backbone(x)`` maps a float image batch ``(B, C, H, W)`` (already normalised) to pooled features
  ``(B, num_features)``;
* ``backbone.num_features`` (an int) is the width of those features, so a head can be sized without a dry run;
* it is built as ``factory(in_channels=C, **backbone_kwargs)`` (plus ``weights=...`` if the factory takes it).

Your own backbone, with no edit to this package: write an ``nn.Module`` subclass meeting the contract in a
module of your own that Python can import (your installed project, or a folder on ``PYTHONPATH``), and name its
class path in the config: ``model.backbone: my_pkg.backbones.TinyNet``, its arguments in ``model.backbone_kwargs``.
The checkpoint records that class path (a string), so it rebuilds the network in a fresh process. Loading never
calls anything but an ``nn.Module`` subclass; and since importing a module runs its code, a checkpoint whose
backbone lives outside this package loads in ``export``, ``infer`` and ``serve`` only with ``--trust_model``.
A factory that takes a ``weights`` argument loads pretrained weights: a name from the ``weight_names`` it was
registered with, or a path to a weights file.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

from torch import nn

from litstarter._engine.errors import UsageError
from litstarter._engine.trust import import_class

BackboneFactory = Callable[..., nn.Module]

_REGISTRY: dict[str, BackboneFactory] = {}
_WEIGHT_NAMES: dict[str, Callable[[], list[str]]] = {}


def register_backbone(
    name: str, weight_names: Callable[[], list[str]] | None = None
) -> Callable[[BackboneFactory], BackboneFactory]:
    """Decorator that registers a backbone factory under ``name``.

    Args:
        name: The name configs use to select the backbone.
        weight_names: Returns the names of the pretrained weights the factory's ``weights`` argument accepts.
    """

    def decorator(factory: BackboneFactory) -> BackboneFactory:
        if name in _REGISTRY:
            raise ValueError(f"backbone {name!r} is already registered")
        _REGISTRY[name] = factory
        if weight_names is not None:
            _WEIGHT_NAMES[name] = weight_names
        return factory

    return decorator


class BackboneError(UsageError, ValueError):
    """``model.backbone`` names no registered backbone and no importable ``nn.Module`` class (exit 2, one line)."""


def is_class_path(name: str) -> bool:
    """Whether ``name`` is a class path (``package.module.Class``) rather than a registered name."""
    return name not in _REGISTRY and "." in name.strip(".")


def _factory(name: str, trust_model: bool = True) -> BackboneFactory:
    """The registered factory, or the class a class path names."""
    if is_class_path(name):
        try:
            return import_class(name, nn.Module, trust_model, "model.backbone", kind="nn.Module")
        except UsageError as err:  # not the refusal of an untrusted class: that is no usage mistake
            raise BackboneError(f"{err}. Registered names: {list_backbones()}") from None
    _check_name(name)
    return _REGISTRY[name]


def list_weights(name: str) -> list[str]:
    """The pretrained weights names backbone ``name`` accepts (``[]`` if none)."""
    if is_class_path(name):
        return []
    _check_name(name)
    return list(_WEIGHT_NAMES[name]()) if name in _WEIGHT_NAMES else []


def takes_weights(name: str) -> bool:
    """Whether backbone ``name``'s factory accepts a ``weights`` argument (a name or a file)."""
    return "weights" in inspect.signature(_factory(name)).parameters


def is_weights_path(weights: str, names: list[str]) -> bool:
    """Whether ``weights`` means a file rather than one of ``names``: an existing file, or anything that looks like
    a path (a folder separator or a file extension)."""
    if weights in names:
        return False
    return Path(weights).expanduser().is_file() or "/" in weights or "\\" in weights or bool(Path(weights).suffix)


def check_weights(name: str, weights: str | None) -> None:
    """Check ``weights`` for backbone ``name`` without loading anything (a file is only checked when loaded).

    Raises:
        ValueError: If the backbone takes no weights, or ``weights`` is neither a file path nor one of its names;
            the message lists the valid names.
    """
    if weights is None:
        return
    if not takes_weights(name):
        raise UsageError(
            f"backbone {name!r} has no pretrained weights (weights={weights!r}); use null, or start from one of"
            " our checkpoints with model.init_from"
        )
    names = list_weights(name)
    if weights not in names and not is_weights_path(weights, names):
        raise UsageError(
            f"unknown weights {weights!r} for backbone {name!r}; expected one of {names}, a path to a weights file,"
            " or null (random init)"
        )


def list_backbones() -> list[str]:
    """Return the registered backbone names, sorted."""
    return sorted(_REGISTRY)


def _check_name(name: str) -> None:
    if name not in _REGISTRY:
        raise BackboneError(
            f"model.backbone: unknown backbone {name!r}; expected one of {list_backbones()} or the class path of "
            "your own nn.Module (package.module.Class)"
        )


def create_backbone(
    name: str,
    in_channels: int = 3,
    weights: str | None = None,
    image_size: tuple[int, int] | None = None,
    trust_model: bool = True,
    **kwargs,
) -> nn.Module:
    """Build a backbone: a registered one, or the ``nn.Module`` class a class path names.

    Args:
        name: A name from :func:`list_backbones`, or ``package.module.Class`` (see the module docstring).
        in_channels: Channels of the input images.
        weights: ``None`` (random init), a name from :func:`list_weights`, or a path to a weights file.
        image_size: Input ``(height, width)``, passed on to factories that take an ``image_size`` argument
            (``small_cnn`` sizes its stem by it); ignored by the others.
        trust_model: Allow a class from outside this package; loaders of files pass ``False`` unless the user
            said ``--trust_model``.
        **kwargs: Extra keyword arguments for that backbone's factory.

    Raises:
        ValueError: If ``name`` is neither registered nor an importable ``nn.Module`` class, ``weights`` does not
            fit it, or the module built lacks an int ``num_features``; the message lists the valid names.
        UntrustedCodeError: For a class outside this package without ``trust_model``.
    """
    factory = _factory(name, trust_model)
    check_weights(name, weights)
    if weights is not None:
        kwargs["weights"] = weights
    if image_size is not None and "image_size" in inspect.signature(factory).parameters:
        kwargs["image_size"] = tuple(image_size)
    backbone = factory(in_channels=in_channels, **kwargs)
    if not isinstance(getattr(backbone, "num_features", None), int):
        raise BackboneError(
            f"model.backbone {name!r} has no int num_features (the width of its (B, num_features) output); the "
            "backbone contract is in litstarter.models.registry"
        )
    return backbone
