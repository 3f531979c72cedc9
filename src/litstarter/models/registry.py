"""A name -> factory registry for backbones, so a config can say ``backbone: small_cnn``.

Every backbone built here follows one contract (the seam that fine-tuning, freezing and export rely on):

* ``backbone(x)`` maps a float image batch ``(B, C, H, W)`` to pooled features ``(B, num_features)``;
* ``backbone.num_features`` is the width of those features, so a head can be sized without a dry run.
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

BackboneFactory = Callable[..., nn.Module]

_REGISTRY: dict[str, BackboneFactory] = {}


def register_backbone(name: str) -> Callable[[BackboneFactory], BackboneFactory]:
    """Decorator that registers a backbone factory under ``name``.

    Args:
        name: The name configs use to select the backbone.
    """

    def decorator(factory: BackboneFactory) -> BackboneFactory:
        if name in _REGISTRY:
            raise ValueError(f"backbone {name!r} is already registered")
        _REGISTRY[name] = factory
        return factory

    return decorator


def list_backbones() -> list[str]:
    """Return the registered backbone names, sorted."""
    return sorted(_REGISTRY)


def create_backbone(name: str, in_channels: int = 3, **kwargs) -> nn.Module:
    """Build a registered backbone.

    Args:
        name: A name from :func:`list_backbones`.
        in_channels: Channels of the input images.
        **kwargs: Extra keyword arguments for that backbone's factory.

    Raises:
        ValueError: If ``name`` is not registered; the message lists the valid names.
    """
    if name not in _REGISTRY:
        raise ValueError(f"unknown backbone {name!r}; expected one of {list_backbones()}")
    return _REGISTRY[name](in_channels=in_channels, **kwargs)
