"""The throwaway package the schema tests discover (tests/unit/_engine/config_schema/toyparts.py), on the path."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit._engine.config_schema.toyparts import FILES, write


@pytest.fixture
def toyparts(tmp_path: Path, monkeypatch) -> Iterator[Path]:
    """The folder holding ``toyparts`` (on ``sys.path``; its modules forgotten afterwards). Add a module with
    :func:`~tests.unit._engine.config_schema.toyparts.write`."""
    write(tmp_path, FILES)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m == "toyparts" or m.startswith("toyparts.")]:
        del sys.modules[name]
