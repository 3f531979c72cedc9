"""``make schema``: configs/schema.json, the JSON schema of ``litstarter fit``'s config files, for editors.

VS Code and PyCharm read it (docs/make_it_yours.md, "Completion in your editor") to complete and check
every YAML under configs/: each key with its type and its doc (the class's ``Args:``, as ``--help`` shows them), and
for each class-typed key the classes a config may name there, each with its own ``init_args``. It is built from the
CLI's own parser, and the classes from the modules below: the project's packages are walked, so that a task module
added to tasks/ is in the schema after ``make schema``. tests/test_config_schema.py fails when the file is stale.

    python scripts/config_schema.py            # write configs/schema.json
    python scripts/config_schema.py --check    # exit 1 if it differs from what the code gives
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
import warnings
from pathlib import Path

import lightning as L
from jsonargparse import ArgumentParser
from lightning.pytorch.cli import LightningCLI

from litstarter._engine.config_schema.discovery import classes_in
from litstarter._engine.config_schema.document import config_schema, dumps
from litstarter.cli import FIT_CLASSES, LitStarterCLI

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "configs" / "schema.json"
PACKAGE = LitStarterCLI.__module__.split(".")[0]
#: The project's packages and modules a config names classes from, walked (a module added later is found).
PROJECT = (f"{PACKAGE}.tasks", f"{PACKAGE}.data", f"{PACKAGE}.callbacks", f"{PACKAGE}.optim")
#: The libraries' public modules a config names classes from (what each exports).
LIBRARIES = (
    "lightning.pytorch.callbacks",
    "lightning.pytorch.loggers",
    "lightning.pytorch.strategies",
    "lightning.pytorch.accelerators",
    "lightning.pytorch.profilers",
    "lightning.pytorch.plugins",
    "lightning.pytorch.plugins.environments",
    "torch.optim",
    "torch.optim.lr_scheduler",
    "torchvision.transforms.v2",
)
#: The distributions whose signatures the schema holds besides ours: a schema written with other versions of them (or
#: another Python) is compared on the project's part only (a new torch release must not fail the check).
LIBRARY_DISTRIBUTIONS = ("lightning", "torch", "torchvision", "jsonargparse")
VERSIONS = "x-generated-with"


class _Built(Exception):
    """Carries the parser out of LightningCLI's constructor, before anything is parsed."""


class _ParserOnly(LitStarterCLI):
    """The CLI up to its parser: it stops before parsing."""

    def parse_arguments(self, parser: ArgumentParser, args: object) -> None:
        """Stop here, handing the parser on."""
        raise _Built(parser)


def fit_parser() -> ArgumentParser:
    """The parser ``litstarter fit`` reads its config with: the CLI's (``--trainer``, ``--model``, ``--data``, what
    cli.py adds), plus ``Trainer.fit``'s own arguments, as LightningCLI builds its ``fit`` subcommand."""
    try:
        _ParserOnly(**FIT_CLASSES, run=False, args=[])
    except _Built as built:
        parser = built.args[0]
    parser.add_method_arguments(L.Trainer, "fit", skip=set(LightningCLI.subcommands()["fit"]))
    return parser


def build() -> tuple[dict, list[str]]:
    """The schema, and the classes whose ``init_args`` it leaves unchecked (jsonargparse cannot read them)."""
    parser = fit_parser()
    pool = [cls for name in PROJECT for cls in classes_in(name, walk=True)]
    pool += [cls for name in LIBRARIES for cls in classes_in(name) if cls not in pool]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated aliases among the libraries' exports say so when read
        schema, unreadable = config_schema(parser, pool, f"{PACKAGE} fit config")
    versions = {name: importlib.metadata.version(name) for name in LIBRARY_DISTRIBUTIONS}
    versions["python"] = ".".join(map(str, sys.version_info[:2]))
    note = "Written by `make schema` (scripts/config_schema.py) from the code's signatures; do not edit."
    head = {key: schema.pop(key) for key in ("$schema", "title")}
    return {**head, "$comment": note, VERSIONS: versions, **schema}, unreadable


def project_part(schema: dict) -> dict:
    """What the project's own code decides: its classes' definitions and the top-level keys but ``trainer``."""
    prefixes = (f"{PACKAGE}.", f"subclass:{PACKAGE}.", f"factory:{PACKAGE}.", f"delta:{PACKAGE}.")
    definitions = {k: v for k, v in schema.get("definitions", {}).items() if k.startswith(prefixes)}
    properties = {k: v for k, v in schema.get("properties", {}).items() if not k.startswith("trainer")}
    return {"properties": properties, "definitions": definitions}


def stale(committed: dict, generated: dict) -> bool:
    """Whether ``committed`` differs from ``generated``: wholly when both were written with the same libraries,
    else in the project's part."""
    if committed.get(VERSIONS) == generated.get(VERSIONS):
        return committed != generated
    return project_part(committed) != project_part(generated)


def main(argv: list[str] | None = None) -> int:
    """Write configs/schema.json (``--check``: only say whether it is stale, exit 1 if so)."""
    parser = argparse.ArgumentParser(prog="make schema", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="Exit 1 if configs/schema.json is stale; write nothing.")
    args = parser.parse_args(argv)
    schema, unreadable = build()
    for line in unreadable:
        print(f"init_args unchecked: {line}", file=sys.stderr)
    if args.check:
        committed = json.loads(SCHEMA.read_text()) if SCHEMA.exists() else {}
        if stale(committed, schema):
            print(f"{SCHEMA.relative_to(REPO)} is stale: run `make schema`", file=sys.stderr)
            return 1
        return 0
    SCHEMA.write_text(dumps(schema))
    size, classes = SCHEMA.stat().st_size / 1e3, len(schema["definitions"])
    print(f"wrote {SCHEMA.relative_to(REPO)} ({size:.0f} kB, {classes} definitions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
