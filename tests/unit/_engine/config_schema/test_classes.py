"""A class-typed value: any class path jsonargparse resolves to a known subclass, its init_args checked against that
class's signature (a base's arguments too, where ``**kwargs`` pass them on), arguments alone as a delta."""

from __future__ import annotations

from pathlib import Path

import pytest
from jsonschema import Draft7Validator
from jsonschema.exceptions import best_match

from litstarter._engine.config_schema.classes import Slots
from litstarter._engine.config_schema.discovery import classes_in
from tests.unit._engine.config_schema.toyparts import GEAR, write


@pytest.fixture
def part(toyparts: Path) -> tuple[Draft7Validator, Slots]:
    """A validator of a value that names a ``Part``, from a pool of ``Wheel`` and ``Gear``."""
    write(toyparts, {"toyparts/parts/gear.py": GEAR})
    pool = classes_in("toyparts.parts", walk=True)
    slots = Slots(pool)
    ref = slots.slot((pool[0],), 0)
    return Draft7Validator({**ref, "definitions": slots.definitions}), slots


@pytest.mark.parametrize(
    "value",
    [
        {"class_path": "toyparts.parts.wheel.Wheel", "init_args": {"spokes": 3, "size": 2}},
        {"class_path": "Wheel", "dict_kwargs": {"rim": "steel"}},
        "Gear",
        {"class_path": "elsewhere.MyPart", "init_args": {"anything": 1}},
        {"spokes": 3},
        {"init_args": {"teeth": 10}},
    ],
    ids=["full-path", "short-name-dict-kwargs", "short-name-as-text", "your-own", "delta", "delta-init-args"],
)
def test_what_jsonargparse_takes_validates(part, value) -> None:
    validator, _ = part
    assert best_match(validator.iter_errors(value)) is None


@pytest.mark.parametrize(
    ("value", "path", "named"),
    [
        ({"class_path": "Wheel", "init_args": {"spoke": 3}}, "$.init_args", "'spoke' was unexpected"),
        ({"class_path": "Wheel", "init_args": {"spokes": "many"}}, "$.init_args.spokes", "'many'"),
        ({"class_path": "toyparts.parts.nope.Nope"}, "$.class_path", "is not one of"),
        ({"class_path": "toyparts.parts.base.Part"}, "$.class_path", "is not one of"),  # the base: no subclass
        ({"class_path": "toyparts.parts.gear.Gear", "dict_kwargs": {"x": 1}}, "$.dict_kwargs", "expected to be empty"),
        ({"spoke": 3}, "$", "'spoke' was unexpected"),
    ],
    ids=["typo", "type", "unknown", "base", "no-kwargs", "delta-typo"],
)
def test_a_mistake_is_refused_naming_its_key(part, value: dict, path: str, named: str) -> None:
    validator, _ = part
    error = best_match(validator.iter_errors(value))
    assert error is not None and (error.json_path, named in error.message) == (path, True), error


def test_each_argument_is_described_by_its_class_s_docstring_a_base_s_through_kwargs(part) -> None:
    _, slots = part
    wheel = slots.definitions["toyparts.parts.wheel.Wheel"]
    assert wheel["description"] == "A round part."
    assert wheel["properties"]["spokes"] == {"type": "integer", "description": "How many spokes.", "default": 8}
    assert wheel["properties"]["size"]["description"] == "How big."
    assert wheel["additionalProperties"] is False
