"""Type hints as JSON schema, as jsonargparse reads the values: plain types, unions flattened, classes to a slot."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, Optional, Union

import pytest

from litstarter._engine.config_schema.types import ANY_CLASS, schema_of, union_of


class Colour(enum.Enum):
    RED = 1
    BLUE = 2


class Net:
    pass


class Recorder:
    """Stands in for the slots: records which classes were asked for."""

    def __init__(self) -> None:
        self.asked: list[tuple] = []

    def slot(self, bases: tuple[type, ...], skip: int) -> dict:
        self.asked.append((bases, skip))
        return {"$ref": f"#/definitions/{'+'.join(b.__name__ for b in bases)}:{skip}"}

    def fields(self, cls: type) -> dict:
        return {"$ref": f"#/definitions/{cls.__name__}"}


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        (int, {"type": "integer"}),
        (bool, {"type": "boolean"}),
        (Optional[float], {"type": ["number", "null"]}),  # noqa: UP045  (the typing form LightningCLI's hints use)
        (Union[bool, int], {"type": ["boolean", "integer"]}),  # noqa: UP007
        (int | float | None, {"type": ["integer", "number", "null"]}),
        (Literal["a", "b"] | None, {"enum": ["a", "b", None]}),
        (Literal["auto"] | int, {"anyOf": [{"enum": ["auto"]}, {"type": "integer"}]}),
        (Colour, {"enum": ["RED", "BLUE"]}),
        (Path | str, {"type": "string"}),
        (tuple[int, int], {"type": "array", "items": [{"type": "integer"}] * 2, "minItems": 2, "maxItems": 2}),
        (tuple[float, ...], {"type": "array", "items": {"type": "number"}}),
        (list[str] | None, {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (dict | None, {"type": ["object", "null"]}),
        (Any, {}),
        (int | Any, {}),
        (Callable[[int], int], ANY_CLASS),
        (type[Net], {"type": "string"}),
    ],
    ids=str,
)
def test_plain_hints(hint, expected: dict) -> None:
    assert schema_of(hint, Recorder()) == expected


def test_a_class_is_a_slot_of_its_subclasses_and_a_factory_skips_what_the_caller_supplies() -> None:
    slots = Recorder()
    assert schema_of(Net | None, slots) == {"anyOf": [{"$ref": "#/definitions/Net:0"}, {"type": "null"}]}
    schema_of(Callable[[Iterable], Net], slots)
    schema_of(Sequence[Net], slots)
    assert slots.asked == [((Net,), 0), ((Net,), 1), ((Net,), 0)]


def test_a_union_keeps_each_alternative_once() -> None:
    assert union_of([{"type": "integer"}, {"anyOf": [{"type": "string"}, {"type": "integer"}]}]) == {
        "type": ["integer", "string"]
    }
