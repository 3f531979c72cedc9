"""``make update-deps`` proposes a cap that admits the newest release, of the same kind (major or minor)."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from scripts.raise_caps import cap_of, proposals, requirements

pytest.importorskip("tomllib", reason="make update-deps reads pyproject.toml with tomllib (Python >= 3.11)")

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
#: The dependencies that tests/test_compat.py lists private internals of.
PRIVATE_INTERNALS = [
    "jsonargparse",
    "uvicorn",
    "litdata",
]


def test_every_dependency_has_a_floor_and_a_cap_and_torch_is_never_pinned() -> None:
    text = PYPROJECT.read_text(encoding="utf-8")
    for req in requirements(text):
        operators = {s.operator for s in Requirement(req).specifier}
        assert operators == {">=", "<"} or req == "ruff==0.17.6", f"{req}: expected a floor (>=) and a cap (<)"
    torch = next(r for r in requirements(text) if Requirement(r).name == "torch")
    assert "==" not in torch, "torch takes a range, never an exact pin"


def test_the_dependencies_reached_through_private_internals_are_capped_below_the_next_minor() -> None:
    text = PYPROJECT.read_text(encoding="utf-8")
    for name in PRIVATE_INTERNALS:
        req = next(r for r in requirements(text) if Requirement(r).name == name)
        floor = next(Version(s.version) for s in Requirement(req).specifier if s.operator == ">=")
        assert cap_of(req) == Version(f"{floor.major}.{floor.minor + 1}"), f"{req}: cap below the next minor"


def test_a_cap_is_raised_to_admit_the_newest_release_and_keeps_its_kind() -> None:
    text = """[project]
name = "x"
dependencies = ["torch>=2.14.1,<3", "jsonargparse[signatures]>=4.53,<4.54", "numpy>=2,<3", "ruff==0.17.6"]
[project.optional-dependencies]
serve = ["x[deploy]", "uvicorn[standard]>=0.55,<0.56"]
"""
    newest = {"torch": "3.1.0", "jsonargparse": "4.55.2", "numpy": "2.9", "ruff": "0.20", "uvicorn": "0.55.3"}
    found = proposals(text, lambda name: Version(newest[name]))
    assert found == [
        ("torch>=2.14.1,<3", "torch>=2.14.1,<4"),
        ("jsonargparse[signatures]>=4.53,<4.54", "jsonargparse[signatures]>=4.53,<4.56"),
    ]
    assert proposals(text, lambda name: None) == []  # pip could not tell: nothing proposed
