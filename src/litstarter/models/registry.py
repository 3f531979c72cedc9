"""Backbones by name: a registered one (``backbone: small_cnn``) or your own class (``backbone: my_pkg.MyNet``).

The backbone contract, the one seam that fine-tuning, freezing and export rely on:

* it is built as ``factory(in_channels=C, **backbone_kwargs)`` (plus ``weights=...`` if the factory takes it: a
  name from the ``weight_names`` it was registered with, or a weights file);
* ``backbone(x)`` maps a normalised float batch ``(B, C, H, W)`` to pooled features ``(B, num_features)``;
* ``backbone.num_features`` (an int) is their width, so a head is sized without a dry run.

A family of many models behind one factory is registered under a prefix: ``backbone: timm/<name>`` is any of
timm's models (``models/timm_backbones.py``).

Your own ``nn.Module`` meeting it, in a module Python can import, is named by its class path in the config; the
checkpoint records that string and rebuilds it in a fresh process. Importing a module runs its code, so a loader of
files takes a class from outside this package only with ``--trust_model``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

from torch import nn

from litstarter._engine.trust import import_class
from litstarter.errors import UsageError

BackboneFactory = Callable[..., nn.Module]

_REGISTRY: dict[str, BackboneFactory] = {}
_WEIGHT_NAMES: dict[str, Callable[[], list[str]]] = {}
#: ``prefix`` -> (the factory of ``prefix/<name>`` given ``<name>``, its weights names).
_PREFIXES: dict[str, tuple[Callable[[str], BackboneFactory], list[str]]] = {}


class BackboneError(UsageError):
    """``model.backbone`` names no registered backbone and no importable ``nn.Module`` class (exit 2, one line)."""


def register_backbone(name: str, weight_names: Callable[[], list[str]] | None = None):
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


def register_backbone_prefix(prefix: str, factory_of: Callable[[str], BackboneFactory], weight_names: list[str]):
    """Register a family whose members are named ``<prefix>/<name>`` (``timm/resnet18``).

    Args:
        prefix: The part before the ``/``.
        factory_of: Returns the backbone factory for ``<name>``.
        weight_names: The names its factories' ``weights`` argument accepts besides a file.
    """
    if prefix in _PREFIXES:
        raise ValueError(f"backbone prefix {prefix!r} is already registered")
    _PREFIXES[prefix] = (factory_of, list(weight_names))


def _prefixed(name: str) -> tuple[Callable[[str], BackboneFactory], list[str], str] | None:
    """``(factory_of, weight_names, <name>)`` when ``name`` is ``<registered prefix>/<name>``, else ``None``."""
    prefix, sep, rest = name.partition("/")
    if not sep or prefix not in _PREFIXES:
        return None
    return (*_PREFIXES[prefix], rest)


def list_backbones() -> list[str]:
    """The registered backbone names, sorted."""
    return sorted(_REGISTRY)


def is_class_path(name: str) -> bool:
    """Whether ``name`` is a class path (``package.module.Class``) rather than a registered name."""
    return name not in _REGISTRY and _prefixed(name) is None and "." in name.strip(".")


def _factory(name: str, trust_model: bool = True) -> BackboneFactory:
    """The registered factory, a prefixed family's factory, or the class a class path names."""
    prefixed = _prefixed(name)
    if prefixed is not None:
        return prefixed[0](prefixed[2])
    if is_class_path(name):
        try:
            return import_class(name, nn.Module, trust_model, "model.backbone", kind="nn.Module")
        except UsageError as err:  # not the refusal of an untrusted class: that is no usage mistake
            raise BackboneError(f"{err}. Registered names: {list_backbones()}") from None
    if name not in _REGISTRY:
        raise BackboneError(
            f"model.backbone: unknown backbone {name!r}; expected one of {list_backbones()},"
            f" {''.join(p + '/<name>, ' for p in sorted(_PREFIXES))}or the class path of your own nn.Module"
            " (package.module.Class)"
        )
    return _REGISTRY[name]


def list_weights(name: str) -> list[str]:
    """The pretrained weights names backbone ``name`` accepts (``[]`` if none)."""
    prefixed = _prefixed(name)
    if prefixed is not None:
        return list(prefixed[1])
    _factory(name)
    return list(_WEIGHT_NAMES[name]()) if name in _WEIGHT_NAMES else []


def is_weights_path(weights: str, names: list[str]) -> bool:
    """Whether ``weights`` means a file rather than one of ``names``: an existing file, or anything that looks like
    a path (a folder separator or a file extension)."""
    if weights in names:
        return False
    return Path(weights).expanduser().is_file() or "/" in weights or "\\" in weights or bool(Path(weights).suffix)


def check_weights(name: str, weights: str | None) -> None:
    """Check ``weights`` for backbone ``name`` without loading anything (a file is only read when loaded).

    Raises:
        UsageError: The backbone takes no weights, or ``weights`` is neither a file nor one of its names (listed).
    """
    if weights is None:
        return
    if "weights" not in inspect.signature(_factory(name)).parameters:
        raise UsageError(
            f"backbone {name!r} has no pretrained weights (weights={weights!r}); use null, or start from one of"
            " our checkpoints with model.init_from"
        )
    names = list_weights(name)
    if not is_weights_path(weights, names) and weights not in names:
        raise UsageError(
            f"unknown weights {weights!r} for backbone {name!r}; expected one of {names}, a path to a weights file,"
            " or null (random init)"
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
        name: A name from :func:`list_backbones`, or ``package.module.Class``.
        in_channels: Channels of the input images.
        weights: ``None`` (random init), a name from :func:`list_weights`, or a path to a weights file.
        image_size: Input ``(height, width)`` for factories that take it (``small_cnn`` sizes its stem by it).
        trust_model: Allow a class from outside this package (loaders of files pass the user's ``--trust_model``).
        **kwargs: Extra keyword arguments for that backbone's factory.

    Raises:
        UsageError: An unknown name, weights that do not fit it, or a module without an int ``num_features``.
        UntrustedCodeError: For a class outside this package without ``trust_model``.
    """
    factory = _factory(name, trust_model)
    check_weights(name, weights)
    if weights is not None:
        kwargs["weights"] = weights
    params = inspect.signature(factory).parameters
    if image_size is not None and "image_size" in params:
        kwargs["image_size"] = tuple(image_size)
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(kwargs) - set(params))
        if unknown:
            takes = ", ".join(sorted(set(params) - {"in_channels", "image_size", "weights"})) or "none"
            raise UsageError(f"model.backbone_kwargs: {name} takes no {', '.join(unknown)} (it takes: {takes})")
    backbone = factory(in_channels=in_channels, **kwargs)
    if not isinstance(getattr(backbone, "num_features", None), int):
        raise BackboneError(
            f"model.backbone {name!r} has no int num_features (the width of its (B, num_features) output); the "
            "backbone contract is in litstarter.models.registry"
        )
    return backbone
