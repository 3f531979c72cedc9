"""A type hint as JSON schema, the way jsonargparse reads the value: a class becomes a ``$ref`` to the classes a
config may name in its place (:mod:`.classes`), anything it cannot check accepts anything."""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import math
import numbers
import os
import types
import typing
from datetime import timedelta
from pathlib import PurePath
from typing import Any, Protocol

from .arguments import Argument

#: What YAML writes for each plain type (a subclass of one, such as jsonargparse's ``PositiveInt``, is that type).
PLAIN = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (type(None), "null"))
#: Types given as text: paths, durations (``00:30:00``), import paths of types.
TEXT = (PurePath, os.PathLike, timedelta, type)
ARRAYS = (
    list,
    set,
    frozenset,
    collections.abc.Iterable,
    collections.abc.Collection,
    collections.abc.Sequence,
    collections.abc.MutableSequence,
    collections.abc.Set,
    collections.abc.MutableSet,
)
ARRAY = {"type": "array"}
MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)
UNIONS = (typing.Union, types.UnionType)
#: A class-typed value no known class fits: a class path (as text, dotted, or with its init_args), unchecked.
ANY_CLASS = {"type": ["object", "string"], "pattern": r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$"}


class Slots(Protocol):
    """Where a class-typed value's schema comes from (:class:`.classes.Slots`)."""

    def slot(self, bases: tuple[type, ...], skip: int) -> dict:
        """A ``$ref`` to the schema of a subclass of ``bases``, its first ``skip`` arguments supplied."""

    def fields(self, cls: type) -> dict:
        """A ``$ref`` to the schema of the mapping that gives the dataclass ``cls``'s fields."""


def schema_of(hint: Any, slots: Slots) -> dict:
    """The JSON schema of the values jsonargparse accepts for ``hint`` (``{}``: any value)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return schema_of(args[0], slots)
    if origin in UNIONS:
        return union_of([schema_of(arg, slots) for arg in args])
    if origin is typing.Literal:
        return union_of([{"enum": [arg.name if isinstance(arg, enum.Enum) else arg]} for arg in args])
    if origin is type:
        return {"type": "string"}  # an import path
    if origin is collections.abc.Callable:
        return callable_of(args, slots)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": schema_of(args[0], slots)}
        items = [schema_of(arg, slots) for arg in args]
        return {"type": "array", "items": items, "minItems": len(items), "maxItems": len(items)} if args else ARRAY
    if origin in ARRAYS:
        return {"type": "array", "items": schema_of(args[0], slots)} if args else ARRAY
    if origin in MAPPINGS:
        values = schema_of(args[1], slots) if len(args) == 2 else {}
        return {"type": "object", "additionalProperties": values} if values else {"type": "object"}
    if hint is Any or origin is not None or not isinstance(hint, type):
        return {}  # Any (a class from Python 3.11), a TypeVar, an unresolved name, jsonargparse's Untyped: unchecked
    return class_schema(hint, slots)


def class_schema(cls: type, slots: Slots) -> dict:
    """The schema of a value of the class ``cls``: a plain value, a mapping of a dataclass's fields, an enum's member
    name, or (any other class) a subclass given by class path."""
    if issubclass(cls, enum.Enum):
        return {"enum": list(cls.__members__)}
    for plain, name in PLAIN:
        if issubclass(cls, plain):
            return {"type": name}
    if cls in (numbers.Number, numbers.Real):
        return {"type": "number"}
    if issubclass(cls, TEXT):
        return {"type": "string"}
    if cls in ARRAYS or cls is tuple:  # exactly: a class that only iterates (a Tensor) is still a class
        return ARRAY
    if cls in MAPPINGS:
        return {"type": "object"}
    if cls is object:
        return {}
    if dataclasses.is_dataclass(cls):
        return slots.fields(cls)
    return slots.slot((cls,), 0)


def callable_of(args: tuple, slots: Slots) -> dict:
    """``Callable[[A, ...], R]``: where ``R`` is a class, a class path of a subclass whose first arguments the caller
    supplies (``OptimizerCallable``); otherwise an import path (or a callable class's path with its init_args)."""
    if not args:
        return ANY_CLASS
    params, returns = args
    classes = tuple(
        arg
        for arg in (typing.get_args(returns) if typing.get_origin(returns) in UNIONS else (returns,))
        if isinstance(arg, type) and arg is not Any and not any(issubclass(arg, plain) for plain, _ in PLAIN)
    )
    if not classes:
        return ANY_CLASS
    return slots.slot(classes, len(params) if isinstance(params, list) else 0)


def union_of(schemas: list[dict]) -> dict:
    """One schema accepting what any of ``schemas`` accepts, as flat as JSON schema allows (a list of ``type``s, one
    ``enum``), so that an editor's message names the types."""
    if any(schema == {} for schema in schemas):
        return {}
    unique: list[dict] = []
    for schema in schemas:
        for part in schema.get("anyOf", [schema]):
            if part not in unique:
                unique.append(part)
    if all(set(s) == {"type"} for s in unique):
        names = [name for s in unique for name in ([s["type"]] if isinstance(s["type"], str) else s["type"])]
        names = list(dict.fromkeys(names))
        return {"type": names[0] if len(names) == 1 else names}
    if all(set(s) == {"enum"} or s == {"type": "null"} for s in unique):
        return {"enum": list(dict.fromkeys(v for s in unique for v in s.get("enum", [None])))}
    return unique[0] if len(unique) == 1 else {"anyOf": unique}


def object_of(arguments: list[Argument], slots: Slots) -> dict:
    """A mapping of ``arguments`` (dotted keys nest), each with its doc as ``description`` and a plain default as
    ``default``; no other key is allowed, and none is required (a config may be a delta on others)."""
    root = {"type": "object", "properties": {}, "additionalProperties": False}
    for argument in arguments:
        *groups, name = argument.key.split(".")
        node = root
        for group in groups:
            empty = {"type": "object", "properties": {}, "additionalProperties": False}
            node = node["properties"].setdefault(group, empty)
        node["properties"][name] = described(schema_of(argument.hint, slots), argument)
    return root


def described(schema: dict, argument: Argument) -> dict:
    """``schema`` with ``argument``'s doc, and its default where JSON writes it as it is (editors insert it)."""
    out = dict(schema)
    if argument.doc:
        out["description"] = argument.doc
    if plain(argument.default) and not argument.required:
        out["default"] = list(argument.default) if isinstance(argument.default, tuple) else argument.default
    return out


def plain(value: Any) -> bool:
    """Whether ``value`` is a JSON number, string, boolean, null, or a list of them (a NaN is not)."""
    if isinstance(value, (list, tuple)):
        return all(plain(v) and not isinstance(v, (list, tuple)) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or type(value) in (bool, int, str)
