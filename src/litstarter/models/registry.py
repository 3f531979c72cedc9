"""A name -> factory registry for backbones, so a config can say ``backbone: small_cnn``.

Every backbone built here follows one contract (the seam that fine-tuning, freezing and export rely on):

* ``backbone(x)`` maps a float image batch ``(B, C, H, W)`` to pooled features ``(B, num_features)``;
* ``backbone.num_features`` is the width of those features, so a head can be sized without a dry run.

A factory that takes a ``weights`` argument loads pretrained weights: a name from the ``weight_names`` it was
registered with, or a path to a weights file.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path

from torch import nn

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


def list_weights(name: str) -> list[str]:
    """The pretrained weights names backbone ``name`` accepts (``[]`` if none)."""
    _check_name(name)
    return list(_WEIGHT_NAMES[name]()) if name in _WEIGHT_NAMES else []


def takes_weights(name: str) -> bool:
    """Whether backbone ``name``'s factory accepts a ``weights`` argument (a name or a file)."""
    _check_name(name)
    return "weights" in inspect.signature(_REGISTRY[name]).parameters


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
        raise ValueError(
            f"backbone {name!r} has no pretrained weights (weights={weights!r}); use null, or start from one of"
            " our checkpoints with model.init_from"
        )
    names = list_weights(name)
    if weights not in names and not is_weights_path(weights, names):
        raise ValueError(
            f"unknown weights {weights!r} for backbone {name!r}; expected one of {names}, a path to a weights file,"
            " or null (random init)"
        )


def list_backbones() -> list[str]:
    """Return the registered backbone names, sorted."""
    return sorted(_REGISTRY)


def _check_name(name: str) -> None:
    if name not in _REGISTRY:
        raise ValueError(f"unknown backbone {name!r}; expected one of {list_backbones()}")


def create_backbone(
    name: str,
    in_channels: int = 3,
    weights: str | None = None,
    image_size: tuple[int, int] | None = None,
    **kwargs,
) -> nn.Module:
    """Build a registered backbone.

    Args:
        name: A name from :func:`list_backbones`.
        in_channels: Channels of the input images.
        weights: ``None`` (random init), a name from :func:`list_weights`, or a path to a weights file.
        image_size: Input ``(height, width)``, passed on to factories that take an ``image_size`` argument
            (``small_cnn`` sizes its stem by it); ignored by the others.
        **kwargs: Extra keyword arguments for that backbone's factory.

    Raises:
        ValueError: If ``name`` is not registered or ``weights`` does not fit it; the message lists the valid
            names.
    """
    _check_name(name)
    check_weights(name, weights)
    if weights is not None:
        kwargs["weights"] = weights
    factory = _REGISTRY[name]
    if image_size is not None and "image_size" in inspect.signature(factory).parameters:
        kwargs["image_size"] = tuple(image_size)
    return factory(in_channels=in_channels, **kwargs)
