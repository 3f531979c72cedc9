"""Which classes a config may name, and every path each one imports by (what ``class_path`` accepts)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
from types import ModuleType


def public(name: str) -> bool:
    """Whether no part of a dotted name is private (``torchvision.transforms.v2._geometry`` is)."""
    return not any(part.startswith("_") for part in name.split("."))


def classes_in(module_name: str, walk: bool = False) -> list[type]:
    """The public classes ``module_name`` offers, in name order: every class it defines or re-exports; with
    ``walk``, also those defined in each of its submodules (so that a module added later is found).

    A submodule that needs a package that is not installed (an extra's) is left out, with a line on stderr.
    """
    module = importlib.import_module(module_name)
    found = _public_classes(module, defined_here=False)
    for info in pkgutil.walk_packages(getattr(module, "__path__", []) if walk else [], f"{module_name}."):
        try:
            submodule = importlib.import_module(info.name)
        except ModuleNotFoundError as err:
            if err.name and err.name.split(".")[0] == module_name.split(".")[0]:
                raise
            print(f"{info.name} left out: it needs {err.name}, which is not installed", file=sys.stderr)
            continue
        found += [cls for cls in _public_classes(submodule, defined_here=True) if cls not in found]
    return found


def _public_classes(module: ModuleType, defined_here: bool) -> list[type]:
    """The classes of ``module`` under public names: only those it defines, with ``defined_here``; else those of its
    own package (``torch.optim.lr_scheduler`` imports ``collections.Counter``, which is no scheduler)."""
    package = module.__name__.split(".")[0]

    def offered(cls: type) -> bool:
        return cls.__module__ == module.__name__ if defined_here else cls.__module__.split(".")[0] == package

    return [
        value
        for name, value in sorted(vars(module).items())
        if inspect.isclass(value) and public(name) and offered(value)
    ]


def import_paths(cls: type) -> list[str]:
    """Every public dotted path ``cls`` imports by, shortest first: its module's, and each enclosing package's
    that re-exports it (``lightning.pytorch.callbacks.ModelCheckpoint``)."""
    parts = cls.__module__.split(".")
    found = []
    for end in range(1, len(parts) + 1):
        module = sys.modules.get(".".join(parts[:end]))
        path = f"{'.'.join(parts[:end])}.{cls.__qualname__}"
        if module is not None and getattr(module, cls.__qualname__, None) is cls and public(path):
            found.append(path)
    return sorted(found, key=lambda path: (len(path.split(".")), path))
