"""A parser's config schema: its keys nested by their dots, no other key, nothing required, ``<list key>+``."""

from __future__ import annotations

from pathlib import Path

from jsonargparse import ArgumentParser
from jsonschema import Draft7Validator
from jsonschema.exceptions import best_match

from litstarter._engine.config_schema.discovery import classes_in
from litstarter._engine.config_schema.document import config_schema


def test_a_parsers_keys_nest_and_a_list_key_takes_appends(toyparts: Path) -> None:
    pool = classes_in("toyparts.parts", walk=True)
    parser = ArgumentParser()
    parser.add_argument("--seed", type=int, default=0, help="The seed.")
    parser.add_argument("--run.parts", type=list[pool[0]] | None, default=None, help="The parts.")
    schema, unreadable = config_schema(parser, pool, "toy config")
    Draft7Validator.check_schema(schema)
    assert unreadable == [] and schema["title"] == "toy config"
    assert schema["properties"]["seed"] == {"type": "integer", "description": "The seed.", "default": 0}
    assert set(schema["properties"]["run"]["properties"]) == {"parts", "parts+"}
    validator = Draft7Validator(schema)
    wheel = {"class_path": "Wheel", "init_args": {"spokes": 3}}
    for valid in ({}, {"run": {}}, {"seed": 1, "run": {"parts": [wheel]}}, {"run": {"parts+": wheel}}):
        assert best_match(validator.iter_errors(valid)) is None, valid
    for invalid, path in (({"sed": 1}, "$"), ({"run": {"part": []}}, "$.run"), ({"seed": "one"}, "$.seed")):
        assert best_match(validator.iter_errors(invalid)).json_path == path, invalid
