"""A throwaway package of classes the schema tests discover: ``toyparts.parts`` with a base ``Part`` (re-exported by
the package), ``Wheel`` (``**kwargs`` passed on to ``Part``) and ``Gear``."""

from __future__ import annotations

import importlib
import textwrap
from pathlib import Path

PART = '''
class Part:
    """A part.

    Args:
        size: How big.
    """

    def __init__(self, size: int = 1) -> None:
        self.size = size
'''
WHEEL = '''
from toyparts.parts.base import Part


class Wheel(Part):
    """A round part.

    Args:
        spokes: How many spokes.
        kwargs: Part's arguments.
    """

    def __init__(self, spokes: int = 8, **kwargs) -> None:
        super().__init__(**kwargs)
'''
GEAR = '''
from toyparts.parts.base import Part


class Gear(Part):
    """A toothed part.

    Args:
        teeth: How many teeth.
    """

    def __init__(self, teeth: int = 12) -> None:
        super().__init__()
'''


FILES = {
    "toyparts/__init__.py": "",
    "toyparts/parts/__init__.py": "from toyparts.parts.base import Part\n",
    "toyparts/parts/base.py": PART,
    "toyparts/parts/wheel.py": WHEEL,
}


def write(root: Path, files: dict[str, str]) -> None:
    """Write ``files`` (path under ``root``: text) and let the import system see them."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    importlib.invalidate_caches()
