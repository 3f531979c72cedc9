"""The classes a config may name in a class-typed key, as JSON schema: one slot per base class, holding every
``class_path`` jsonargparse resolves to a known subclass and, for each, the ``init_args`` its signature takes."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable

from .arguments import class_arguments
from .discovery import import_paths
from .types import ANY_CLASS, object_of, union_of

#: The keys of a class given by class path; any other key (an argument) only changes the class given before.
CLASS_KEYS = ["class_path", "init_args", "dict_kwargs"]
#: ``dict_kwargs`` of a class without ``**kwargs``: none (``false`` would say so too, but its error names no key).
NO_KWARGS = {"type": "object", "maxProperties": 0}
#: What a schema says about a value without checking it.
ANNOTATIONS = ("description", "default")


def path_of(cls: type) -> str:
    """Where ``cls`` is defined: ``module.QualifiedName``."""
    return f"{cls.__module__}.{cls.__qualname__}"


def suffix(skip: int) -> str:
    """What tells apart the definitions of a class given whole and given with its first ``skip`` arguments left out."""
    return f":{skip}" if skip else ""


def takes_kwargs(cls: type) -> bool:
    """Whether ``cls`` takes ``**kwargs`` (jsonargparse then accepts ``dict_kwargs`` beside ``init_args``)."""
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


class Slots:
    """The definitions of a schema's class-typed values, built on demand from a pool of known classes.

    Args:
        pool: The classes a config may name, in the order an editor lists them.
    """

    def __init__(self, pool: list[type]) -> None:
        self.pool = pool
        self.definitions: dict[str, dict] = {}
        self.unreadable: list[str] = []  #: classes jsonargparse could not read the signature of, and why
        # A bare name or a path inside a known package must be a known class; a path elsewhere is the user's own.
        # The packages in the pool's order, not sorted: a renamed package keeps its place, and the schema its text.
        roots = dict.fromkeys(cls.__module__.split(".")[0] for cls in pool)
        self.known = rf"^(?:[A-Za-z_]\w*|(?:{'|'.join(map(re.escape, roots))})\..*)$"

    def ref(self, key: str, build: Callable[[], dict]) -> dict:
        """A ``$ref`` to definition ``key``, built by ``build`` the first time (a placeholder holds its place while
        it is built: a class may take an argument of its own kind)."""
        if key not in self.definitions:
            self.definitions[key] = {}
            self.definitions[key] = build()
        return {"$ref": f"#/definitions/{key}"}

    def slot(self, bases: tuple[type, ...], skip: int) -> dict:
        """A ``$ref`` to a value naming a subclass of ``bases``, its first ``skip`` arguments supplied by the caller."""
        key = f"{'factory' if skip else 'subclass'}:{'+'.join(map(path_of, bases))}"
        return self.ref(key, lambda: self.build_slot(bases, skip))

    def fields(self, cls: type) -> dict:
        """A ``$ref`` to the mapping of the dataclass ``cls``'s fields."""
        return self.init_args(cls, 0)

    def candidates(self, bases: tuple[type, ...]) -> list[type]:
        """The known subclasses of ``bases``, the bases themselves and abstract classes aside."""
        try:
            return [c for c in self.pool if issubclass(c, bases) and c not in bases and not inspect.isabstract(c)]
        except TypeError:  # a base issubclass refuses (a protocol that is not runtime-checkable)
            return []

    def build_slot(self, bases: tuple[type, ...], skip: int) -> dict:
        """A class by class path: as text, or a mapping of ``class_path``, ``init_args`` (checked against that
        class's signature) and ``dict_kwargs``; or, without ``class_path``, arguments that change the class a
        config before gave (any known subclass's)."""
        classes = self.candidates(bases)
        if not classes:
            return ANY_CLASS
        names = self.names(classes)
        class_path = {"type": "string", "if": {"pattern": self.known}, "then": {"enum": sum(names.values(), [])}}
        delta = self.ref(f"delta:{'+'.join(map(path_of, bases))}{suffix(skip)}", lambda: self.delta(classes, skip))
        given_or_changed = {
            "if": {"required": ["class_path"]},
            "then": {"propertyNames": {"enum": CLASS_KEYS}},
            "else": {"properties": {"init_args": delta}},
        }
        kinds = " or ".join(base.__name__ for base in bases)
        return {
            "description": f"A {kinds}: a class_path (a subclass), and its init_args",
            "type": ["object", "string"],
            "if": {"type": "string"},
            "then": class_path,
            "properties": {
                "class_path": class_path,
                "init_args": {"type": "object"},
                "dict_kwargs": {"type": "object"},
                **self.resolved(delta)["properties"],
            },
            "additionalProperties": False,
            "allOf": [given_or_changed, *(self.when_named(cls, names[cls], skip) for cls in classes)],
        }

    def when_named(self, cls: type, names: list[str], skip: int) -> dict:
        """Where ``class_path`` is one of ``names``: ``init_args`` are ``cls``'s, and ``dict_kwargs`` only if it
        takes ``**kwargs``."""
        return {
            "if": {"required": ["class_path"], "properties": {"class_path": {"enum": names}}},
            "then": {
                "properties": {
                    "init_args": self.init_args(cls, skip),
                    "dict_kwargs": {"type": "object"} if takes_kwargs(cls) else NO_KWARGS,
                }
            },
        }

    def resolved(self, ref: dict) -> dict:
        """The definition one of our ``$ref`` points to."""
        return self.definitions[ref["$ref"].rsplit("/", 1)[1]]

    def names(self, classes: list[type]) -> dict[type, list[str]]:
        """Every ``class_path`` each of ``classes`` goes by: its import paths, and its bare name where no other
        has it. (jsonargparse resolves a bare name among the subclasses imported by then: the module of one that
        no config before names may not be, and the CLI then refuses what the schema let through.)"""
        counts: dict[str, int] = {}
        for cls in classes:
            counts[cls.__name__] = counts.get(cls.__name__, 0) + 1
        return {cls: import_paths(cls) + ([cls.__name__] if counts[cls.__name__] == 1 else []) for cls in classes}

    def init_args(self, cls: type, skip: int) -> dict:
        """A ``$ref`` to the ``init_args`` of ``cls`` (its first ``skip`` arguments left out): each argument with
        its type and doc, and no other."""
        return self.ref(f"{path_of(cls)}{suffix(skip)}", lambda: self.build_init_args(cls, skip))

    def build_init_args(self, cls: type, skip: int) -> dict:
        """The schema of ``cls``'s ``init_args`` (any mapping, noted in :attr:`unreadable`, where jsonargparse
        cannot read its signature)."""
        try:
            arguments = class_arguments(cls, skip)
        except (TypeError, ValueError) as err:
            self.unreadable.append(f"{path_of(cls)}: {err}")
            return {"type": "object"}
        schema = object_of(arguments, self)
        doc = (inspect.getdoc(cls) or "").split("\n\n", 1)[0].replace("\n", " ")
        return {"description": doc, **schema} if doc else schema

    def delta(self, classes: list[type], skip: int) -> dict:
        """The arguments of any of ``classes``, each checked against every class that takes it: what a config that
        names no class may change."""
        keys: dict[str, dict[str, dict]] = {}  # name -> what its value may be -> the first class's ref to it
        for cls in classes:
            ref = self.init_args(cls, skip)
            for name, schema in self.resolved(ref).get("properties", {}).items():
                checks = json.dumps({k: v for k, v in schema.items() if k not in ANNOTATIONS}, sort_keys=True)
                keys.setdefault(name, {}).setdefault(checks, {"$ref": f"{ref['$ref']}/properties/{name}"})
        properties = {name: union_of(list(refs.values())) for name, refs in keys.items()}
        return {"type": "object", "properties": properties, "additionalProperties": False}
