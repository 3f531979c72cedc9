"""Target kinds: what each image is labelled with, from a layout's listing to the batch a task trains on.

A layout lists every source file with its ``target`` as plain JSON (a class index, label names, numbers); the kind
of those targets (:class:`~.base.TargetKind`, one module here each) decides how a split stacks them into the array
the cache stores and the dataset serves, how splits and cv folds are stratified, how a labels CSV writes one, and
what ``inspect`` counts. A new kind is a new module defining ``KIND``: nothing else lists them.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from pathlib import Path

from .base import TargetKind

__all__ = ["TargetKind", "kind_names", "target_kind"]


@functools.cache
def _kinds() -> dict[str, TargetKind]:
    """Every ``KIND`` of this package's modules, by name."""
    found = {}
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        kind = getattr(importlib.import_module(f"{__name__}.{info.name}"), "KIND", None)
        if kind is not None:
            found[kind.name] = kind
    return found


def kind_names() -> list[str]:
    """The target kinds the engine stores, splits and counts."""
    return sorted(_kinds())


def target_kind(name: str) -> TargetKind:
    """The kind named ``name``.

    Raises:
        KeyError: no such kind (the message lists them).
    """
    kinds = _kinds()
    if name not in kinds:
        raise KeyError(f"target kind {name!r} is none of the engine's ({', '.join(sorted(kinds))})")
    return kinds[name]
