"""The JSON schema of a LightningCLI parser's config files, for editors (a ``# yaml-language-server: $schema=`` line)
and for tests: every key the parser takes, nested by its dots, with its type and doc; each class-typed key checked
against the classes a config may name (:mod:`.classes`). Nothing is required: a config file may be a delta that
composes on others (``--config a.yaml --config b.yaml``). Draft-07: what VS Code's YAML extension and PyCharm read.
"""

from __future__ import annotations

import json

from jsonargparse import ArgumentParser

from .arguments import parser_arguments
from .classes import ANNOTATIONS, Slots
from .types import object_of, union_of

DRAFT = "http://json-schema.org/draft-07/schema#"


def config_schema(parser: ArgumentParser, pool: list[type], title: str) -> tuple[dict, list[str]]:
    """The schema of ``parser``'s config files, and the classes of ``pool`` whose signature jsonargparse could not
    read (their ``init_args`` are left unchecked).

    Args:
        parser: The parser whose config files the schema describes (a subcommand's).
        pool: The classes a class-typed key may name (each key takes the subclasses of its type among them).
        title: The schema's title, shown by editors.
    """
    slots = Slots(pool)
    root = object_of(parser_arguments(parser), slots)
    add_appends(root)
    body = {"$schema": DRAFT, "title": title, **root}
    return {**body, "definitions": slots.definitions}, slots.unreadable  # in the order met: a rename keeps the text


def add_appends(root: dict) -> None:
    """Beside each list key of the parser's own groups (``trainer.callbacks``), ``<key>+``: jsonargparse appends its
    value (one item or a list) to the list the configs before gave."""
    groups = [root, *(p for p in root["properties"].values() if "properties" in p)]
    for group in groups:
        properties = group["properties"]
        for name, schema in list(properties.items()):
            items = list_items(schema)
            if items:
                checks = {k: v for k, v in schema.items() if k not in ANNOTATIONS}
                doc = f"Appended to {name} (one item or a list): {schema.get('description', '')}".rstrip(": ")
                properties[f"{name}+"] = {**union_of([checks, *items]), "description": doc}


def list_items(schema: dict) -> list[dict]:
    """What an item of each list ``schema`` accepts may be (at its top, or in one of its ``anyOf``)."""
    found = [schema["items"]] if isinstance(schema.get("items"), dict) else []
    return found + [item for part in schema.get("anyOf", []) for item in list_items(part)]


def dumps(schema: dict) -> str:
    """The schema as the file holds it: indented JSON, one key a line, so that a change reads as a diff."""
    return json.dumps(schema, indent=1, ensure_ascii=False) + "\n"
