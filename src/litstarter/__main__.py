"""``litstarter`` / ``python -m litstarter``: the entry point.

``litstarter``, ``litstarter --help`` and a mistyped subcommand answer without importing torch or Lightning. The
extras' subcommands come from each extra's ``__init__.py`` (constants only, see ``extras/__init__.py``), so a
new extra leaves nothing here to edit; one is listed only when the packages it needs are installed
(``importlib.util.find_spec``, which imports nothing), and otherwise says which extra to install. ``fit``,
``validate``, ``test`` and ``predict`` go to LightningCLI (``cli.py``).
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from typing import NamedTuple

from litstarter import extras
from litstarter._engine.errors import run_reporting
from litstarter.errors import USAGE, UsageError

# LightningCLI's subcommands (``LightningCLI.subcommands()``; a test keeps the two equal), with our help lines.
LIGHTNING_COMMANDS: dict[str, str] = {
    "fit": "train a model (then test its best checkpoint unless --test_after_fit false)",
    "validate": "run one evaluation epoch on the validation split",
    "test": "run one evaluation epoch on the test split",
    "predict": "run inference on the predict split",
}
# The library's own subcommands beyond Lightning's: module (whose ``main(argv) -> exit code`` runs it) and help.
LIBRARY_COMMANDS: dict[str, tuple[str, str]] = {
    "new": ("litstarter.new", "write a new project for one task: litstarter new <dir> --task <task>"),
    "schema": ("litstarter.schema", "write configs/schema.json, what editors complete and check configs with"),
    "update": ("litstarter.update", "bring a project litstarter new wrote the template changes of this release"),
    "convert": ("litstarter.convert", "write a labelled image folder as COCO json, YOLO txt or index PNG masks"),
}
USAGE_LINE = "usage: litstarter <subcommand> [options]   (litstarter <subcommand> --help for its options)"


class Command(NamedTuple):
    """An extra's subcommand: ``main(argv) -> exit code`` of ``litstarter.extras.<extra>.<module>``."""

    extra: str
    module: str
    help: str
    needs: tuple[str, ...]


def extra_commands() -> dict[str, Command]:
    """Every extra's subcommands, by name, from the extras' folders (their ``__init__`` holds constants only)."""
    commands = {}
    for info in pkgutil.iter_modules(extras.__path__):
        extra = importlib.import_module(f"{extras.__name__}.{info.name}")
        needs = getattr(extra, "NEEDS", {})
        for name, (module, text) in getattr(extra, "COMMANDS", {}).items():
            commands[name] = Command(info.name, module, text, tuple(needs.get(name, ())))
    return dict(sorted(commands.items()))


def is_installed(package: str) -> bool:
    """Whether ``package`` can be imported, found without importing it."""
    try:
        return importlib.util.find_spec(package) is not None
    except ValueError:  # imported already, by a loader that left no spec behind
        return True


def missing_packages(command: Command) -> list[str]:
    """The packages ``command`` needs that are not installed."""
    return [package for package in command.needs if not is_installed(package)]


def top_level_help() -> str:
    """The top-level help: the installed subcommands, then the extras whose packages are missing."""
    commands = extra_commands()
    ready = {name: c.help for name, c in commands.items() if not missing_packages(c)}
    rows = [
        *LIGHTNING_COMMANDS.items(),
        *((name, text) for name, (_, text) in LIBRARY_COMMANDS.items()),
        *ready.items(),
    ]
    width = max(len(name) for name, _ in rows) + 2
    lines = [USAGE_LINE, "", "subcommands:", *(f"  {name.ljust(width)}{text}" for name, text in rows)]
    absent = sorted({c.extra for name, c in commands.items() if name not in ready})
    if absent:
        lines += ["", f"not installed: {', '.join(absent)} (pip install -e '.[{','.join(absent)}]')"]
    return "\n".join([*lines, "", "Start with: litstarter fit --config configs/default.yaml"])


def run_extra(name: str, command: Command, argv: list[str]) -> int:
    """Run an extra's subcommand, or say in one line which extra its missing packages come with."""
    missing = missing_packages(command)
    if missing:
        raise UsageError(
            f"{name} needs {', '.join(missing)}, which the [{command.extra}] extra installs: pip install -e"
            f" '.[{command.extra}]'"
        )
    return importlib.import_module(f"{extras.__name__}.{command.extra}.{command.module}").main(argv)


def unknown_subcommand(word: str, known: list[str]) -> int:
    """Say that ``word`` is no subcommand (with the nearest one, if any), in one line; return the usage exit code."""
    import difflib

    close = difflib.get_close_matches(word, known, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    print(USAGE_LINE, file=sys.stderr)
    print(f"litstarter: error: unknown subcommand '{word}'{hint} (choose from {', '.join(known)})", file=sys.stderr)
    return USAGE


def main(argv: list[str] | None = None) -> int:
    """Answer help and typos statically, run an extra's subcommand, or hand over to LightningCLI."""
    from_sys_argv = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(top_level_help())
        return 0 if argv else USAGE
    if argv[0] in LIBRARY_COMMANDS:
        module = LIBRARY_COMMANDS[argv[0]][0]
        return run_reporting(argv[0], lambda: importlib.import_module(module).main(argv[1:]))
    commands = extra_commands()
    if argv[0] in commands:
        return run_reporting(argv[0], lambda: run_extra(argv[0], commands[argv[0]], argv[1:]))
    if argv[0] not in LIGHTNING_COMMANDS and not argv[0].startswith("-"):
        return unknown_subcommand(argv[0], [*LIGHTNING_COMMANDS, *LIBRARY_COMMANDS, *commands])

    from litstarter.cli import main as cli_main

    def run_cli() -> int:
        cli_main(None if from_sys_argv else argv)  # None: LightningCLI reads sys.argv itself
        return 0

    return run_reporting(argv[0] if not argv[0].startswith("-") else "fit", run_cli)


if __name__ == "__main__":
    sys.exit(main())
