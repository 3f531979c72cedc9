"""Which classes a config may name: a walked package's classes, one added later included, and every import path."""

from __future__ import annotations

from pathlib import Path

from litstarter._engine.config_schema.discovery import classes_in, import_paths
from tests.unit._engine.config_schema.toyparts import GEAR, write


def test_a_walked_package_gives_its_modules_classes_and_one_added_later(toyparts: Path) -> None:
    assert [c.__name__ for c in classes_in("toyparts.parts", walk=True)] == ["Part", "Wheel"]
    write(toyparts, {"toyparts/parts/gear.py": GEAR})
    assert [c.__name__ for c in classes_in("toyparts.parts", walk=True)] == ["Part", "Gear", "Wheel"]


def test_a_module_that_needs_a_missing_package_is_left_out_saying_so(toyparts: Path, capsys) -> None:
    write(toyparts, {"toyparts/parts/extra.py": "import not_installed_anywhere\n"})
    assert [c.__name__ for c in classes_in("toyparts.parts", walk=True)] == ["Part", "Wheel"]
    assert "toyparts.parts.extra left out: it needs not_installed_anywhere" in capsys.readouterr().err


def test_every_public_path_a_class_imports_by(toyparts: Path) -> None:
    part, wheel = classes_in("toyparts.parts", walk=True)
    assert import_paths(part) == ["toyparts.parts.Part", "toyparts.parts.base.Part"]
    assert import_paths(wheel) == ["toyparts.parts.wheel.Wheel"]
