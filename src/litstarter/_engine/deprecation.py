"""Deprecated names of a public module: each keeps working for one minor release, with a ``FutureWarning``.

A public module that renames (or makes private) a name that a release exposed keeps the old name through a PEP 562
``__getattr__`` built here, and lists when it goes::

    __getattr__ = deprecated_names(__name__, {"OLD": Deprecated("NEW", removed_in="0.3.0")})

``FutureWarning``, not ``DeprecationWarning``: Python shows it by default, in a project's code as in ``__main__``.
Every deprecation is recorded in :data:`DEPRECATED`, so a test fails once the library's version reaches a name's
``removed_in``: the name is then deleted with its entry, never kept by oversight.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Deprecated:
    """What an old name of a module became.

    Attributes:
        new: the name in the same module that holds the object now (a leading underscore: it is private).
        removed_in: the release that deletes the old name, the next minor one (``"0.3.0"`` for a 0.2.0 deprecation).
        instead: what a project does instead when ``new`` is private (default: keep its own copy).
    """

    new: str
    removed_in: str
    instead: str = "keep a copy of what you need in your project"

    def message(self, module: str, old: str) -> str:
        """The warning's text: the old name, the new one, the release it goes in, and where it is listed."""
        now = f"{module}.{self.new}"
        advice = f"use {now}" if not self.new.startswith("_") else f"it is the private {now} now: {self.instead}"
        return (
            f"{module}.{old} is deprecated and will be removed in {self.removed_in}; {advice} "
            "(see CHANGELOG.md, Deprecated)"
        )


#: Every deprecation, by module then old name, as each module declared it on import.
DEPRECATED: dict[str, dict[str, Deprecated]] = {}
_warned: set[tuple[str, str]] = set()


def deprecated_names(module: str, names: dict[str, Deprecated]) -> Callable[[str], object]:
    """A module's ``__getattr__`` (PEP 562) that answers its old names, warning once per name.

    Args:
        module: the module's ``__name__``.
        names: each old name and what it became.

    Returns:
        The function to assign to the module's ``__getattr__``: an old name returns the object the new name holds
        (after a ``FutureWarning``, the first time that name is asked for); any other name raises the usual
        ``AttributeError``.
    """
    DEPRECATED[module] = dict(names)

    def __getattr__(name: str) -> object:
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        if (module, name) not in _warned:
            _warned.add((module, name))
            warnings.warn(names[name].message(module, name), FutureWarning, stacklevel=2)
        return getattr(sys.modules[module], names[name].new)

    return __getattr__
