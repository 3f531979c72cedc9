"""``litstarter schema [--out PATH] [--config FILE ...]``: write the JSON schema of ``litstarter fit``'s config files,
what editors complete and check configs with.

Run it in a project's folder (or this repository's): it writes ``configs/schema.json``, which every config under
``configs/`` points editors at on its first line (``# yaml-language-server: $schema=schema.json``). The schema holds
each key with its type and its doc (what ``--help`` shows), and for each class-typed key the classes a config may
name there, each with its own ``init_args``. It is built from the CLI's own parser and these classes: the library's
(its modules walked), the project's own (each package under ``./src`` walked, ``./src`` on the path as its Makefile
puts it), and every class a config under ``./configs`` names by ``class_path``. Run it again after a signature
changes: nothing checks that the file is current, it is what the code gives when it is written.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
import warnings
from pathlib import Path

import lightning as L
from jsonargparse import ArgumentParser
from lightning.pytorch.cli import LightningCLI

from litstarter import __version__
from litstarter._engine.atomic_io import atomic_write, unwritable_reason
from litstarter._engine.config_schema import sources
from litstarter._engine.config_schema.discovery import classes_in
from litstarter._engine.config_schema.document import config_schema, dumps
from litstarter.cli import FIT_CLASSES, LitStarterCLI
from litstarter.errors import UsageError

PACKAGE = __name__.split(".")[0]
#: Where the schema goes, under the folder it runs in.
DEFAULT_OUT = Path("configs") / "schema.json"
#: The library's packages and modules a config names classes from, walked (a module added later is found).
OWN_MODULES = (f"{PACKAGE}.tasks", f"{PACKAGE}.data", f"{PACKAGE}.callbacks", f"{PACKAGE}.optim")
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
#: The distributions whose signatures the schema holds, with their versions in the file under :data:`VERSIONS`.
DISTRIBUTIONS = ("lightning", "torch", "torchvision", "jsonargparse")
VERSIONS = "x-generated-with"
#: What a definition's key starts with when it is no class's ``init_args`` (see ``_engine/config_schema/classes.py``).
NOT_A_CLASS = ("subclass:", "factory:", "delta:")


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


def build(own: list[type] = (), named: list[type] = ()) -> tuple[dict, list[str]]:
    """The schema, and the classes whose ``init_args`` it leaves unchecked (jsonargparse cannot read them).

    Args:
        own: A project's own classes (its packages'), listed first.
        named: Classes the configs name, where no walked module holds them.
    """
    parser = fit_parser()
    walked = [
        *(cls for name in OWN_MODULES for cls in classes_in(name, walk=True)),
        *(cls for name in LIBRARIES for cls in classes_in(name)),
    ]
    pool = list(dict.fromkeys([*own, *walked, *named]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated aliases among the libraries' exports say so when read
        schema, unreadable = config_schema(parser, pool, f"{PACKAGE} fit config")
    versions = {PACKAGE: __version__, **{name: importlib.metadata.version(name) for name in DISTRIBUTIONS}}
    versions["python"] = ".".join(map(str, sys.version_info[:2]))
    note = (
        f"Written by `{PACKAGE} schema` from the code's signatures (the library's, the project's src/ and what its"
        " configs name); do not edit: run it again after a signature changes."
    )
    head = {key: schema.pop(key) for key in ("$schema", "title")}
    return {**head, "$comment": note, VERSIONS: versions, **schema}, unreadable


def classes_of(schema: dict) -> list[str]:
    """The classes whose ``init_args`` the schema checks, by dotted path."""
    keys = (key.split(":")[0] for key in schema.get("definitions", {}) if not key.startswith(NOT_A_CLASS))
    return list(dict.fromkeys(keys))


def shown(path: Path) -> str:
    """``path`` as the user reads it: relative to the folder they are in when it is under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def check_out(out: Path, default: bool) -> None:
    """Refuse, in one line and before the schema is built, a file that cannot be written."""
    if default and not out.parent.is_dir():
        raise UsageError(
            f"no {out.parent}/ folder here: run {PACKAGE} schema in a project's folder, or name the file (--out PATH)"
        )
    if out.is_dir():
        raise UsageError(f"--out: '{out}' is a folder: name the file to write (e.g. {out / 'schema.json'})")
    probed, reason = unwritable_reason(out.parent)
    if reason is not None:
        raise UsageError(f"--out: cannot write '{out}': {probed} is not writable ({reason})")


def main(argv: list[str] | None = None) -> int:
    """Write the schema; a file that cannot be written or a config that does not parse is one line."""
    description = (
        f"Write the JSON schema of {PACKAGE} fit's config files (what editors complete and check them with): the"
        f" library's classes, the packages under ./src and the classes the configs name."
    )
    parser = argparse.ArgumentParser(prog=f"{PACKAGE} schema", description=description)
    parser.add_argument("--out", type=Path, metavar="PATH", help=f"the file to write (default: {DEFAULT_OUT})")
    parser.add_argument(
        "--config",
        type=Path,
        nargs="+",
        action="extend",
        metavar="FILE",
        help="the configs whose class_path values the schema must hold (default: every YAML under configs/)",
    )
    args = parser.parse_args(argv)
    out = args.out or DEFAULT_OUT
    check_out(out, default=args.out is None)
    configs = sources.read_configs(args.config or sorted(Path("configs").rglob("*.yaml")))
    packages = sources.source_packages(Path("src"), skip={PACKAGE})
    with sources.importable(Path("src")):
        own = sources.own_classes(packages)
        named = sources.named_classes(configs)
        schema, unreadable = build(own, named)
    for line in unreadable:
        print(f"init_args unchecked: {line}", file=sys.stderr)
    atomic_write(out, lambda tmp: tmp.write_text(dumps(schema)))
    library_roots = {name.split(".")[0] for name in (*OWN_MODULES, *LIBRARIES)}
    roots = [*packages, *(c.__module__.split(".")[0] for c in named)]
    roots = list(dict.fromkeys(r for r in roots if r not in library_roots))
    classes = classes_of(schema)
    theirs = [c for c in classes if c.split(".")[0] in roots]
    whose = f", {len(theirs)} of them the project's own ({', '.join(roots)})" if roots else ""
    print(f"{PACKAGE} schema: wrote {shown(out)}: {len(classes)} classes{whose}")
    return 0
